//! Linear algebra through faer: QR, thin SVD, Hermitian eigendecomposition,
//! Cholesky, and linear solves.

use faer::linalg::solvers::Solve;
use faer::{Mat, MatRef, Side};

use crate::ops::{Linalg, Meta};
use crate::tensor::{Data, Element, Tensor, TensorError};

/// Runs a decomposition or solve through faer.
///
/// # Errors
///
/// As [`Linalg::infer`]; [`TensorError::Factorization`] when the matrix
/// does not admit it (not positive definite, singular, no convergence).
pub(super) fn run(op: Linalg, inputs: &[&Tensor]) -> Result<Vec<Tensor>, TensorError> {
    let metas: Vec<Meta> = inputs.iter().map(|t| Meta::of(t)).collect();
    op.infer(&metas)?;
    for_dtype!(inputs[0].dtype(), |T| typed::<T>(op, inputs))
}

/// The real parts of a diagonal's entries, as the real type's data.
fn real_data<T: Element>(values: Vec<T>) -> Data {
    <T::Re as Element>::wrap(values.into_iter().map(T::re).collect())
}

fn failed(op: Linalg, reason: impl std::fmt::Debug) -> TensorError {
    TensorError::Factorization {
        op: op.name(),
        reason: format!("{reason:?}"),
    }
}

fn typed<T: Element>(op: Linalg, inputs: &[&Tensor]) -> Result<Vec<Tensor>, TensorError> {
    let a = inputs[0].as_mat::<T>()?;
    Ok(match op {
        Linalg::Qr => {
            let qr = a.qr();
            vec![
                Tensor::from_mat(qr.compute_thin_Q().as_ref()),
                Tensor::from_mat(qr.thin_R()),
            ]
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
            let eig = a
                .self_adjoint_eigen(Side::Lower)
                .map_err(|e| failed(op, e))?;
            let w: Vec<T> = eig.S().column_vector().iter().copied().collect();
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
                return Err(TensorError::Factorization {
                    op: op.name(),
                    reason: "the matrix is singular".to_owned(),
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
    use crate::tensor::{c64, DType};

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
}
