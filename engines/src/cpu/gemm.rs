//! Matrix products through faer: 2-D and batched, batch axes broadcast.

use faer::{Accum, MatMut, MatRef, Par};

use super::buffer;
use crate::ops::matmul_shape;
use crate::tensor::{element_count, Element, Tensor, TensorError};

/// `lhs @ rhs`, each product through faer with `threads` threads of the
/// current rayon pool (the caller installs the domain's pool); a batch of
/// small products runs one product per thread instead.
///
/// # Errors
///
/// [`TensorError::MixedDTypes`] and the errors of [`matmul_shape`].
pub(super) fn matmul(lhs: &Tensor, rhs: &Tensor, threads: usize) -> Result<Tensor, TensorError> {
    matmul_as(lhs, lhs.shape(), rhs, rhs.shape(), threads)
}

/// [`matmul`] of `lhs` and `rhs` read as tensors of shapes `lhs_shape` and
/// `rhs_shape` (same element counts): a reshape that copies nothing.
///
/// # Errors
///
/// As [`matmul`]; [`TensorError::ElementCount`] for a shape that does not
/// fit its tensor.
pub(super) fn matmul_as(
    lhs: &Tensor,
    lhs_shape: &[usize],
    rhs: &Tensor,
    rhs_shape: &[usize],
    threads: usize,
) -> Result<Tensor, TensorError> {
    if lhs.dtype() != rhs.dtype() {
        return Err(TensorError::MixedDTypes {
            op: "matmul",
            lhs: lhs.dtype(),
            rhs: rhs.dtype(),
        });
    }
    for (t, shape) in [(lhs, lhs_shape), (rhs, rhs_shape)] {
        if element_count(shape) != Some(t.len()) {
            return Err(TensorError::ElementCount {
                shape: shape.to_vec(),
                expected: element_count(shape).unwrap_or(usize::MAX),
                got: t.len(),
            });
        }
    }
    let out = matmul_shape(lhs_shape, rhs_shape)?;
    let operands = Operands {
        lhs_shape,
        rhs_shape,
        out: &out,
        threads,
    };
    let data = for_dtype!(lhs.dtype(), |T| T::wrap(typed::<T>(lhs, rhs, &operands)));
    Tensor::from_parts(out, data)
}

/// The shapes of one matmul and the threads it may use.
struct Operands<'a> {
    lhs_shape: &'a [usize],
    rhs_shape: &'a [usize],
    out: &'a [usize],
    threads: usize,
}

/// Products with fewer multiply-adds than this run on one thread each,
/// the batch spread over the pool, rather than one after another with the
/// whole pool on each (faer's threads cost more than such a product).
const SMALL_PRODUCT: usize = 1 << 18;

fn typed<T: Element>(lhs: &Tensor, rhs: &Tensor, x: &Operands<'_>) -> Vec<T> {
    let (a, b) = (
        lhs.as_slice::<T>().expect("checked dtype"),
        rhs.as_slice::<T>().expect("checked dtype"),
    );
    let (ls, rs, out) = (x.lhs_shape, x.rhs_shape, x.out);
    let (m, k, n) = (ls[ls.len() - 2], ls[ls.len() - 1], rs[rs.len() - 1]);
    let batch_shape = &out[..out.len() - 2];
    let batches: usize = batch_shape.iter().product();
    let strides = |shape: &[usize], matrix: usize| {
        // Matrix strides of each batch axis, 0 where it is broadcast.
        let shape = &shape[..shape.len() - 2];
        let lead = batch_shape.len() - shape.len();
        let mut strides = vec![0; batch_shape.len()];
        let mut step = matrix;
        for i in (0..shape.len()).rev() {
            if shape[i] != 1 {
                strides[lead + i] = step;
            }
            step *= shape[i];
        }
        strides
    };
    let (sa, sb) = (strides(ls, m * k), strides(rs, k * n));
    // With an inner extent, every element is written (`Accum::Replace`):
    // no fill needed; without one the product is zeros.
    let mut c = if k == 0 {
        buffer::filled(batches * m * n, T::ZERO)
    } else {
        buffer::overwritten(batches * m * n)
    };
    if m * n == 0 {
        return c;
    }
    let product = |batch: usize, dst: &mut [T], par: Par| {
        let (mut oa, mut ob, mut rest) = (0, 0, batch);
        for axis in (0..batch_shape.len()).rev() {
            let i = rest % batch_shape[axis];
            rest /= batch_shape[axis];
            oa += i * sa[axis];
            ob += i * sb[axis];
        }
        faer::linalg::matmul::matmul(
            MatMut::from_row_major_slice_mut(dst, m, n),
            Accum::Replace,
            MatRef::from_row_major_slice(&a[oa..oa + m * k], m, k),
            MatRef::from_row_major_slice(&b[ob..ob + k * n], k, n),
            T::ONE,
            par,
        );
    };
    let small = m.saturating_mul(k).saturating_mul(n) < SMALL_PRODUCT;
    if x.threads > 1 && batches > 1 && small {
        use rayon::prelude::*;
        c.par_chunks_mut(m * n)
            .enumerate()
            .for_each(|(batch, dst)| product(batch, dst, Par::Seq));
    } else {
        let par = if x.threads > 1 {
            Par::rayon(x.threads)
        } else {
            Par::Seq
        };
        for (batch, dst) in c.chunks_mut(m * n).enumerate() {
            product(batch, dst, par);
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::c32;

    /// Reference: the triple loop, batch by batch, with broadcast batch
    /// axes resolved by index arithmetic of its own.
    fn reference(a: &Tensor, b: &Tensor) -> Vec<f64> {
        let out = matmul_shape(a.shape(), b.shape()).unwrap();
        let (va, vb) = (a.as_slice::<f64>().unwrap(), b.as_slice::<f64>().unwrap());
        let (ra, rb) = (a.shape().len(), b.shape().len());
        let (m, k, n) = (a.shape()[ra - 2], a.shape()[ra - 1], b.shape()[rb - 1]);
        let batch = &out[..out.len() - 2];
        let nb: usize = batch.iter().product();
        let offset = |shape: &[usize], idx: &[usize]| {
            let own = &shape[..shape.len() - 2];
            let lead = idx.len() - own.len();
            own.iter().enumerate().fold(0, |acc, (i, &d)| {
                acc * d + if d == 1 { 0 } else { idx[lead + i] }
            })
        };
        let mut c = Vec::new();
        for t in 0..nb {
            let mut idx = vec![0; batch.len()];
            let mut r = t;
            for ax in (0..batch.len()).rev() {
                idx[ax] = r % batch[ax];
                r /= batch[ax];
            }
            let (oa, ob) = (
                offset(a.shape(), &idx) * m * k,
                offset(b.shape(), &idx) * k * n,
            );
            for i in 0..m {
                for j in 0..n {
                    let mut s = 0.0;
                    for p in 0..k {
                        s += va[oa + i * k + p] * vb[ob + p * n + j];
                    }
                    c.push(s);
                }
            }
        }
        c
    }

    fn tensor(shape: &[usize], seed: f64) -> Tensor {
        let n = shape.iter().product();
        Tensor::from_vec::<f64>(
            (0..n).map(|i| ((i as f64) * 0.71 + seed).cos()).collect(),
            shape,
        )
        .unwrap()
    }

    #[test]
    fn products_match_the_triple_loop() {
        let cases: &[(&[usize], &[usize])] = &[
            (&[1, 1], &[1, 1]),
            (&[3, 4], &[4, 5]),
            (&[5, 0], &[0, 2]),
            (&[0, 3], &[3, 2]),
            (&[2, 3, 4], &[2, 4, 2]),
            (&[2, 3, 4], &[4, 2]),
            (&[3, 1, 2, 3], &[4, 3, 2]),
            (&[70, 65], &[65, 33]),
        ];
        for (sa, sb) in cases {
            let (a, b) = (tensor(sa, 0.3), tensor(sb, 1.1));
            for threads in [1, 2] {
                let got = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap()
                    .install(|| matmul(&a, &b, threads).unwrap());
                let want = reference(&a, &b);
                assert_eq!(got.shape(), &matmul_shape(sa, sb).unwrap()[..]);
                for (g, w) in got.as_slice::<f64>().unwrap().iter().zip(&want) {
                    assert!(
                        (g - w).abs() <= 1e-12 * (1.0 + w.abs()),
                        "{sa:?}@{sb:?}: {g} vs {w}"
                    );
                }
            }
        }
    }

    #[test]
    fn complex_product() {
        let a = Tensor::from_vec(vec![c32::new(0.0, 1.0), c32::new(2.0, 0.0)], &[1, 2]).unwrap();
        let b = Tensor::from_vec(vec![c32::new(0.0, 1.0), c32::new(1.0, 1.0)], &[2, 1]).unwrap();
        let c = matmul(&a, &b, 1).unwrap();
        // i*i + 2*(1+i) = -1 + 2 + 2i
        assert_eq!(c.as_slice::<c32>().unwrap(), &[c32::new(1.0, 2.0)]);
    }

    #[test]
    fn bad_shapes_are_named() {
        let err = matmul_shape(&[2, 3], &[4, 5]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "matmul: shapes [2, 3] and [4, 5] do not multiply (the inner extents differ)"
        );
        let err = matmul_shape(&[3], &[3, 1]).unwrap_err();
        assert!(err.to_string().contains("at least 2 axes"), "{err}");
        let err = matmul_shape(&[2, 1, 3], &[3, 3, 1]).unwrap_err();
        assert!(matches!(err, TensorError::Broadcast { .. }), "{err}");
        let f32s = Tensor::from_vec(vec![1.0f32; 4], &[2, 2]).unwrap();
        let err = matmul(&tensor(&[2, 2], 0.0), &f32s, 1).unwrap_err();
        assert!(matches!(err, TensorError::MixedDTypes { .. }));
    }
}
