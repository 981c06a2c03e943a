//! Linear algebra through faer: QR, thin SVD, Hermitian eigendecomposition,
//! Cholesky, and linear solves.

use faer::linalg::solvers::Solve;
use faer::{Mat, MatRef, Side};

use weft_core::ops::{Linalg, Meta};
use weft_core::{Data, Element, Field, Tensor, TensorError};

/// Runs a decomposition or solve through faer.
///
/// # Errors
///
/// As [`Linalg::infer`]; [`TensorError::Factorization`] when the matrix
/// does not admit it (not positive definite, singular, no convergence).
pub(super) fn run(op: Linalg, inputs: &[&Tensor]) -> Result<Vec<Tensor>, TensorError> {
    let metas: Vec<Meta> = inputs.iter().map(|t| Meta::of(t)).collect();
    op.infer(&metas)?;
    for_field!(inputs[0].dtype(), |T| typed::<T>(op, inputs), else Err(TensorError::Unsupported {
        op: op.name(),
        dtype: inputs[0].dtype(),
    }))
}

/// The real parts of a diagonal's entries, as the real type's data.
fn real_data<T: Field>(values: Vec<T>) -> Data {
    <T::Re as Element>::wrap(values.into_iter().map(T::re).collect())
}

fn failed(op: Linalg, reason: impl std::fmt::Debug) -> TensorError {
    TensorError::Factorization {
        op: op.name(),
        reason: format!("{reason:?}"),
    }
}

/// Refuses a NaN or infinite entry: no decomposition of one means
/// anything, and some would return NaNs without saying so.
fn check_finite<T: Field>(op: Linalg, inputs: &[&Tensor]) -> Result<(), TensorError> {
    for (k, t) in inputs.iter().enumerate() {
        let values = t.as_slice::<T>()?;
        if let Some((i, v)) = values.iter().enumerate().find(|(_, v)| {
            let (re, im) = v.to_parts();
            !(re.is_finite() && im.is_finite())
        }) {
            let (re, im) = v.to_parts();
            let value = if T::DTYPE.is_complex() {
                format!("{re}{im:+}i")
            } else {
                re.to_string()
            };
            let at = match t.shape() {
                [_, cols] => format!("[{}, {}]", i / cols.max(&1), i % cols.max(&1)),
                _ => format!("[{i}]"),
            };
            return Err(TensorError::Factorization {
                op: op.name(),
                reason: format!("input {k} holds {value} at {at}: entries must be finite"),
            });
        }
    }
    Ok(())
}

/// The exponent `e` of the power of two that brings the largest entry near
/// 1, when it is far from it: the eigenvalues of `a / 2^e` are those of `a`
/// over `2^e`, and an eigensolver's intermediate squares overflow or
/// underflow long before the matrix itself does (LAPACK scales the same
/// way).
fn scale_of<T: Field>(values: &[T]) -> Option<f64> {
    let largest = values
        .iter()
        .map(|v| {
            let (re, im) = v.to_parts();
            re.abs().max(im.abs())
        })
        .fold(0.0f64, f64::max);
    // Clamped so that both `2^e` and `2^-e` are finite (entries below
    // 2^-1000 are subnormal anyway).
    let exponent = largest.log2().floor().clamp(-1000.0, 1000.0);
    (largest > 0.0 && exponent.abs() > 256.0).then_some(exponent)
}

fn typed<T: Field>(op: Linalg, inputs: &[&Tensor]) -> Result<Vec<Tensor>, TensorError> {
    check_finite::<T>(op, inputs)?;
    let a = inputs[0].as_mat::<T>()?;
    Ok(match op {
        Linalg::Qr => {
            let qr = a.qr();
            let (mut q, mut r) = (qr.compute_thin_Q(), qr.thin_R().to_owned());
            // R's diagonal made real and non-negative: column i of Q times
            // the phase of R_ii, row i of R divided by it.
            for i in 0..r.nrows().min(r.ncols()) {
                let (re, im) = r[(i, i)].to_parts();
                let size = re.hypot(im);
                if size > 0.0 {
                    let phase = T::from_parts(re / size, im / size);
                    let back = T::from_parts(re / size, -im / size);
                    q.col_mut(i).iter_mut().for_each(|x| *x *= phase);
                    r.row_mut(i).iter_mut().for_each(|x| *x *= back);
                    r[(i, i)] = T::from_parts(size, 0.0);
                }
            }
            vec![Tensor::from_mat(q.as_ref()), Tensor::from_mat(r.as_ref())]
        }
        Linalg::Svd => {
            let svd = a.thin_svd().map_err(|e| failed(op, e))?;
            let s: Vec<T> = svd.S().column_vector().iter().copied().collect();
            let k = s.len();
            vec![
                Tensor::from_mat(svd.U()),
                Tensor::from_data(real_data(s), &[k])?,
                Tensor::from_mat(svd.V().adjoint().to_owned().as_ref()),
            ]
        }
        Linalg::Eigh => {
            let scale = scale_of(inputs[0].as_slice::<T>()?);
            let scaled = scale.map(|e| {
                let by = T::from_parts((-e).exp2(), 0.0);
                Mat::from_fn(a.nrows(), a.ncols(), |i, j| a[(i, j)] * by)
            });
            let eig = scaled
                .as_ref()
                .map_or(a, |m| m.as_ref())
                .self_adjoint_eigen(Side::Lower)
                .map_err(|e| failed(op, e))?;
            let back = T::from_parts(scale.unwrap_or(0.0).exp2(), 0.0);
            let w: Vec<T> = eig.S().column_vector().iter().map(|&x| x * back).collect();
            let n = w.len();
            vec![
                Tensor::from_data(real_data(w), &[n])?,
                Tensor::from_mat(eig.U()),
            ]
        }
        Linalg::Cholesky => {
            let llt = a.llt(Side::Lower).map_err(|e| failed(op, e))?;
            vec![Tensor::from_mat(llt.L())]
        }
        Linalg::Solve => {
            let b = inputs[1];
            let n = a.nrows();
            let cols = if b.shape().len() == 1 {
                1
            } else {
                b.shape()[1]
            };
            let bm = MatRef::from_row_major_slice(b.as_slice::<T>()?, n, cols);
            let lu = a.partial_piv_lu();
            let x: Mat<T> = lu.solve(bm);
            // `v - v` is NaN exactly when `v` is NaN or infinite.
            #[allow(clippy::eq_op)]
            let not_finite = |v: &T| {
                let d = *v - *v;
                d != d
            };
            if x.col_iter().any(|c| c.iter().any(not_finite)) {
                // A and B are finite (checked): either a pivot is zero or
                // the solution is too large for the type.
                let u = lu.U();
                let singular = (0..n).any(|i| u[(i, i)] == T::ZERO);
                return Err(TensorError::Factorization {
                    op: op.name(),
                    reason: if singular {
                        "the matrix is singular".to_owned()
                    } else {
                        "the solution overflows the element type".to_owned()
                    },
                });
            }
            let x = Tensor::from_mat(x.as_ref());
            let (_, data) = x.into_parts();
            vec![Tensor::from_data(data, b.shape())?]
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_core::{c64, DType};

    /// Plain-loop helpers, independent of faer.
    fn mat(t: &Tensor) -> (usize, usize, Vec<c64>) {
        let (r, c) = (t.shape()[0], t.shape()[1]);
        let v = match t.data() {
            Data::F64(v) => v.iter().map(|&x| c64::new(x, 0.0)).collect(),
            Data::C64(v) => v.clone(),
            _ => panic!("test uses f64 and c64"),
        };
        (r, c, v)
    }

    fn mul(a: &(usize, usize, Vec<c64>), b: &(usize, usize, Vec<c64>)) -> Vec<c64> {
        let mut out = vec![c64::new(0.0, 0.0); a.0 * b.1];
        for i in 0..a.0 {
            for j in 0..b.1 {
                for k in 0..a.1 {
                    out[i * b.1 + j] += a.2[i * a.1 + k] * b.2[k * b.1 + j];
                }
            }
        }
        out
    }

    fn adjoint(a: &(usize, usize, Vec<c64>)) -> (usize, usize, Vec<c64>) {
        let mut v = vec![c64::new(0.0, 0.0); a.0 * a.1];
        for i in 0..a.0 {
            for j in 0..a.1 {
                v[j * a.0 + i] = a.2[i * a.1 + j].conj();
            }
        }
        (a.1, a.0, v)
    }

    fn diag(d: &Tensor) -> (usize, usize, Vec<c64>) {
        let w: Vec<f64> = d.as_slice::<f64>().unwrap().to_vec();
        let n = w.len();
        let mut v = vec![c64::new(0.0, 0.0); n * n];
        for i in 0..n {
            v[i * n + i] = c64::new(w[i], 0.0);
        }
        (n, n, v)
    }

    fn close(a: &[c64], b: &[c64]) {
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(b) {
            assert!((x - y).norm() <= 1e-10 * (1.0 + y.norm()), "{x} vs {y}");
        }
    }

    fn real(rows: usize, cols: usize, seed: f64) -> Tensor {
        let v = (0..rows * cols)
            .map(|i| ((i as f64) * 1.3 + seed).sin())
            .collect();
        Tensor::from_vec::<f64>(v, &[rows, cols]).unwrap()
    }

    fn complex(rows: usize, cols: usize, seed: f64) -> Tensor {
        let v = (0..rows * cols)
            .map(|i| {
                c64::new(
                    ((i as f64) * 0.7 + seed).sin(),
                    ((i as f64) * 1.1 - seed).cos(),
                )
            })
            .collect();
        Tensor::from_vec::<c64>(v, &[rows, cols]).unwrap()
    }

    /// `A + Aᴴ + n I`: Hermitian positive definite.
    fn spd(a: &Tensor) -> Tensor {
        let m = mat(a);
        let h = adjoint(&m);
        let n = m.0;
        let v: Vec<c64> = (0..n * n)
            .map(|k| {
                m.2[k]
                    + h.2[k]
                    + if k % (n + 1) == 0 {
                        c64::new(2.0 * n as f64, 0.0)
                    } else {
                        c64::new(0.0, 0.0)
                    }
            })
            .collect();
        match a.dtype() {
            DType::F64 => {
                Tensor::from_vec::<f64>(v.iter().map(|z| z.re).collect(), &[n, n]).unwrap()
            }
            _ => Tensor::from_vec::<c64>(v, &[n, n]).unwrap(),
        }
    }

    #[test]
    fn qr_and_svd_reconstruct() {
        for a in [real(5, 3, 0.1), real(3, 5, 0.2), complex(4, 4, 0.3)] {
            let out = run(Linalg::Qr, &[&a]).unwrap();
            let (q, r) = (mat(&out[0]), mat(&out[1]));
            close(&mul(&q, &r), &mat(&a).2);
            let k = q.1;
            let qtq = mul(&adjoint(&q), &q);
            let eye: Vec<c64> = (0..k * k)
                .map(|i| c64::new(f64::from(u8::from(i % (k + 1) == 0)), 0.0))
                .collect();
            close(&qtq, &eye);
            for i in 0..r.0 {
                for j in 0..i.min(r.1) {
                    assert!(r.2[i * r.1 + j].norm() < 1e-12, "R is upper triangular");
                }
                if i < r.1 {
                    let d = r.2[i * r.1 + i];
                    assert!(d.im == 0.0 && d.re >= 0.0, "R's diagonal {d} is real, ≥ 0");
                }
            }
            let out = run(Linalg::Svd, &[&a]).unwrap();
            let s = out[1].as_slice::<f64>().unwrap();
            assert!(s.windows(2).all(|w| w[0] >= w[1]) && s.iter().all(|&x| x >= 0.0));
            let us = mul(&mat(&out[0]), &diag(&out[1]));
            close(
                &mul(&(us.len() / s.len(), s.len(), us), &mat(&out[2])),
                &mat(&a).2,
            );
        }
    }

    #[test]
    fn eigh_cholesky_solve() {
        for a in [spd(&real(4, 4, 0.5)), spd(&complex(3, 3, 0.9))] {
            let out = run(Linalg::Eigh, &[&a]).unwrap();
            let (w, v) = (&out[0], mat(&out[1]));
            assert!(w
                .as_slice::<f64>()
                .unwrap()
                .windows(2)
                .all(|p| p[0] <= p[1]));
            close(&mul(&mat(&a), &v), &mul(&v, &diag(w)));
            let l = mat(&run(Linalg::Cholesky, &[&a]).unwrap()[0]);
            close(&mul(&l, &adjoint(&l)), &mat(&a).2);
            let n = a.shape()[0];
            let b = match a.dtype() {
                DType::F64 => real(n, 2, 3.0),
                _ => complex(n, 2, 3.0),
            };
            let x = &run(Linalg::Solve, &[&a, &b]).unwrap()[0];
            close(&mul(&mat(&a), &mat(x)), &mat(&b).2);
        }
    }

    #[test]
    fn bad_matrices_are_named() {
        let not_spd = Tensor::from_vec(vec![1.0, 2.0, 2.0, 1.0], &[2, 2]).unwrap();
        let err = run(Linalg::Cholesky, &[&not_spd]).unwrap_err();
        assert!(
            matches!(err, TensorError::Factorization { op: "cholesky", .. }),
            "{err}"
        );
        let singular = Tensor::from_vec(vec![1.0, 2.0, 2.0, 4.0], &[2, 2]).unwrap();
        let b = Tensor::from_vec(vec![1.0, 1.0], &[2]).unwrap();
        let err = run(Linalg::Solve, &[&singular, &b]).unwrap_err();
        assert_eq!(err.to_string(), "solve failed: the matrix is singular");
        let meta = |shape: &[usize]| Meta {
            dtype: DType::F64,
            shape: shape.to_vec(),
        };
        let err = Linalg::Eigh.infer(&[meta(&[2, 3])]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "eigh needs a square matrix, got shape [2, 3]"
        );
        let err = Linalg::Qr.infer(&[meta(&[2, 3, 4])]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "qr needs a 2-D tensor, got shape [2, 3, 4]"
        );
        let err = Linalg::Solve
            .infer(&[meta(&[2, 2]), meta(&[3])])
            .unwrap_err();
        assert!(matches!(err, TensorError::MatmulShapes { .. }), "{err}");
    }

    #[test]
    fn non_finite_entries_are_refused_by_every_decomposition() {
        let mut v = vec![1.0f64, 0.0, 0.0, 1.0];
        v[2] = f64::NAN;
        let a = Tensor::from_vec(v, &[2, 2]).unwrap();
        for op in [Linalg::Qr, Linalg::Svd, Linalg::Eigh, Linalg::Cholesky] {
            match run(op, &[&a]) {
                Err(TensorError::Factorization { reason, .. }) => {
                    assert!(reason.contains("NaN at [1, 0]"), "{}: {reason}", op.name())
                }
                other => panic!("{}: expected a typed failure, got {other:?}", op.name()),
            }
        }
        let eye = Tensor::from_vec(vec![1.0f64, 0.0, 0.0, 1.0], &[2, 2]).unwrap();
        let b = Tensor::from_vec(vec![1.0f64, f64::INFINITY], &[2]).unwrap();
        match run(Linalg::Solve, &[&eye, &b]) {
            Err(TensorError::Factorization { reason, .. }) => {
                assert!(reason.contains("input 1 holds inf at [1]"), "{reason}")
            }
            other => panic!("expected a typed failure, got {other:?}"),
        }
        // Finite A and B whose solution does not fit an f64.
        let tiny = Tensor::from_vec(vec![1e-300f64, 0.0, 0.0, 1.0], &[2, 2]).unwrap();
        let big = Tensor::from_vec(vec![1e300f64, 1.0], &[2]).unwrap();
        let err = run(Linalg::Solve, &[&tiny, &big]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "solve failed: the solution overflows the element type"
        );
    }

    #[test]
    fn eigh_of_entries_near_the_largest_double_is_scaled() {
        // diag(1e308, 5e307) rotated: eigenvalues 1e308 and 5e307.
        let (c, s) = (0.6f64, 0.8f64);
        let (l1, l2) = (1e308f64, 5e307f64);
        let a = Tensor::from_vec(
            vec![
                c * c * l1 + s * s * l2,
                c * s * (l1 - l2),
                c * s * (l1 - l2),
                s * s * l1 + c * c * l2,
            ],
            &[2, 2],
        )
        .unwrap();
        let out = run(Linalg::Eigh, &[&a]).unwrap();
        let w = out[0].as_slice::<f64>().unwrap();
        assert!((w[0] / l2 - 1.0).abs() < 1e-12, "{w:?}");
        assert!((w[1] / l1 - 1.0).abs() < 1e-12, "{w:?}");
        let v = out[1].as_slice::<f64>().unwrap();
        // The eigenvector of l1 is (c, s) up to sign, not a unit vector.
        assert!(
            (v[1].abs() - c).abs() < 1e-12 && (v[3].abs() - s).abs() < 1e-12,
            "{v:?}"
        );
    }
}
