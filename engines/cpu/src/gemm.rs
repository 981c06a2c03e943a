//! Matrix products: 2-D and batched, batch axes broadcast, each product
//! through the domain's provider (faer, or a system BLAS with the `blas`
//! feature). One loop ([`batched`]) decides for matmul and einsum alike how
//! a batch spreads over the pool.

use faer::{Accum, MatMut, MatRef, Par};

use super::parallel::{real_multiply_adds, BATCH_TASK, PARALLEL_BATCH, SMALL_PRODUCT};
use super::{buffer, CpuProvider};
use weft_core::ops::matmul_shape;
use weft_core::{element_count, Element, Field, Tensor, TensorError};

/// How a kernel computes: the threads of the current rayon pool it may
/// spread over (the caller installs the domain's pool; 1: the calling
/// thread alone) and who computes its products.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Compute {
    pub(crate) threads: usize,
    pub(crate) provider: CpuProvider,
}

impl Compute {
    /// `threads` threads with faer's products.
    pub(crate) fn faer(threads: usize) -> Compute {
        Compute {
            threads,
            provider: CpuProvider::Faer,
        }
    }

    /// The same provider on the calling thread alone.
    pub(crate) fn serial(self) -> Compute {
        Compute { threads: 1, ..self }
    }

    /// Whether the kernel may spread over the pool.
    pub(crate) fn parallel(self) -> bool {
        self.threads > 1
    }
}

/// `lhs @ rhs`, batch axes broadcast.
///
/// # Errors
///
/// [`TensorError::MixedDTypes`] and the errors of [`matmul_shape`].
pub(super) fn matmul(lhs: &Tensor, rhs: &Tensor, compute: Compute) -> Result<Tensor, TensorError> {
    matmul_as(lhs, lhs.shape(), rhs, rhs.shape(), compute)
}

/// `alpha · op(a) @ op(b) + beta · c` of `inputs = [a, b, c]`: the
/// operands read as `ops` say (a transpose is a permuting copy, a
/// conjugate a map), `c` not read when `beta` is 0.
///
/// # Errors
///
/// As [`TensorOp::infer`](crate::TensorOp::infer) of a gemm.
pub(super) fn accumulate(
    inputs: &[&Tensor],
    ops: [weft_core::ops::MatOp; 2],
    [alpha, beta]: [weft_core::ops::Scalar; 2],
    compute: Compute,
) -> Result<Tensor, TensorError> {
    use super::{elementwise, structural, unary};
    use weft_core::ops::{BinaryOp, UnaryOp};
    let parallel = compute.parallel();
    let read = |t: &Tensor, op: weft_core::ops::MatOp| -> Result<Option<Tensor>, TensorError> {
        let mut out: Option<Tensor> = None;
        if op.transpose && t.shape().len() >= 2 {
            let r = t.shape().len();
            let mut perm: Vec<usize> = (0..r).collect();
            perm.swap(r - 2, r - 1);
            out = Some(structural::permute(t, &perm, parallel)?);
        }
        if op.conjugate && t.dtype().is_complex() {
            out = Some(unary::apply(
                UnaryOp::Conj,
                out.as_ref().unwrap_or(t),
                parallel,
            )?);
        }
        Ok(out)
    };
    let (a, b) = (read(inputs[0], ops[0])?, read(inputs[1], ops[1])?);
    let product = matmul(
        a.as_ref().unwrap_or(inputs[0]),
        b.as_ref().unwrap_or(inputs[1]),
        compute,
    )?;
    let scale = |x, s| elementwise::with_scalar(BinaryOp::Mul, x, s, false, parallel);
    let scaled = if alpha.parts() == (1.0, 0.0) {
        product
    } else {
        scale(&product, alpha)?
    };
    if beta.is_zero() {
        return Ok(scaled);
    }
    elementwise::binary(BinaryOp::Add, &scaled, &scale(inputs[2], beta)?, parallel)
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
    compute: Compute,
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
    };
    let data = for_field!(lhs.dtype(), |T| T::wrap(typed::<T>(
        lhs, rhs, &operands, compute
    )), else return Err(TensorError::Unsupported {
        op: "matmul",
        dtype: lhs.dtype(),
    }));
    Tensor::from_parts(out, data)
}

/// The shapes of one matmul.
struct Operands<'a> {
    lhs_shape: &'a [usize],
    rhs_shape: &'a [usize],
    out: &'a [usize],
}

fn typed<T: Field>(lhs: &Tensor, rhs: &Tensor, x: &Operands<'_>, compute: Compute) -> Vec<T> {
    let (a, b) = (
        lhs.as_slice::<T>().expect("checked dtype"),
        rhs.as_slice::<T>().expect("checked dtype"),
    );
    let (ls, rs, out) = (x.lhs_shape, x.rhs_shape, x.out);
    let (m, k, n) = (ls[ls.len() - 2], ls[ls.len() - 1], rs[rs.len() - 1]);
    let batch_shape = &out[..out.len() - 2];
    let batches: usize = batch_shape.iter().product();
    let strides = [
        batch_strides(ls, batch_shape, m * k),
        batch_strides(rs, batch_shape, k * n),
    ];
    batched([batches, m, k, n], compute, |batch| {
        let [oa, ob] = batch_offsets(batch, batch_shape, &strides);
        (
            MatRef::from_row_major_slice(&a[oa..oa + m * k], m, k),
            MatRef::from_row_major_slice(&b[ob..ob + k * n], k, n),
        )
    })
}

/// The element strides of each batch axis of `batch_shape` in an operand
/// of `shape` whose matrices hold `matrix` elements: 0 where the operand
/// broadcasts the axis (extent 1, or missing in front).
fn batch_strides(shape: &[usize], batch_shape: &[usize], matrix: usize) -> Vec<usize> {
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
}

/// The offsets of product `batch`'s matrices in the two operands.
fn batch_offsets(batch: usize, batch_shape: &[usize], strides: &[Vec<usize>; 2]) -> [usize; 2] {
    let (mut offsets, mut rest) = ([0, 0], batch);
    for axis in (0..batch_shape.len()).rev() {
        let i = rest % batch_shape[axis];
        rest /= batch_shape[axis];
        offsets[0] += i * strides[0][axis];
        offsets[1] += i * strides[1][axis];
    }
    offsets
}

/// `c ← alpha · op(a) @ op(b) + beta · c` in `c`'s own buffer: `c` has the
/// product's shape (the batch axes of `a` and `b` broadcast to it) and is
/// not read when `beta` is 0. Each product is one faer call that reads a
/// transposed operand as a transposed view and a conjugated one through
/// its conjugation flag, so nothing is copied; faer computes it whatever
/// the domain's provider.
///
/// # Errors
///
/// As [`TensorOp::infer`](crate::TensorOp::infer) of a gemm (the caller
/// has checked the operands against it).
pub(super) fn accumulate_in_place(
    c: Tensor,
    a: &Tensor,
    b: &Tensor,
    ops: [weft_core::ops::MatOp; 2],
    [alpha, beta]: [weft_core::ops::Scalar; 2],
    compute: Compute,
) -> Result<Tensor, TensorError> {
    let refused = TensorError::Unsupported {
        op: "gemm",
        dtype: c.dtype(),
    };
    let (shape, mut data) = c.into_parts();
    let out = shape.clone();
    with_field!(&mut data, |dst| typed_in_place(
        dst,
        [a, b],
        ops,
        [alpha, beta],
        &out,
        compute
    )?, else return Err(refused));
    Tensor::from_parts(shape, data)
}

fn typed_in_place<T: Field>(
    c: &mut [T],
    [a, b]: [&Tensor; 2],
    ops: [weft_core::ops::MatOp; 2],
    [alpha, beta]: [weft_core::ops::Scalar; 2],
    out: &[usize],
    compute: Compute,
) -> Result<(), TensorError> {
    let (av, bv) = (a.as_slice::<T>()?, b.as_slice::<T>()?);
    let (alpha, beta) = (T::from_scalar(alpha), T::from_scalar(beta));
    let (ash, bsh) = (a.shape(), b.shape());
    // The operands' stored matrices, before op() reads them.
    let (am, ak) = (ash[ash.len() - 2], ash[ash.len() - 1]);
    let (bk, bn) = (bsh[bsh.len() - 2], bsh[bsh.len() - 1]);
    let (m, n) = (out[out.len() - 2], out[out.len() - 1]);
    let k = if ops[0].transpose { am } else { ak };
    let batch_shape = &out[..out.len() - 2];
    let strides = [
        batch_strides(ash, batch_shape, am * ak),
        batch_strides(bsh, batch_shape, bk * bn),
    ];
    let conj = |op: weft_core::ops::MatOp| {
        if op.conjugate {
            faer::Conj::Yes
        } else {
            faer::Conj::No
        }
    };
    let each = if real_multiply_adds::<T>(m, k, n) < SMALL_PRODUCT {
        compute.serial()
    } else {
        compute
    };
    let par = if each.parallel() {
        Par::rayon(each.threads)
    } else {
        Par::Seq
    };
    if m * n == 0 {
        return Ok(());
    }
    for (batch, dst) in c.chunks_mut(m * n).enumerate() {
        // β = 0 does not read c: its NaNs do not survive, as BLAS's.
        let accum = if beta == T::ZERO {
            Accum::Replace
        } else {
            if beta != T::ONE {
                for x in dst.iter_mut() {
                    *x *= beta;
                }
            }
            Accum::Add
        };
        if k == 0 {
            if accum == Accum::Replace {
                dst.fill(T::ZERO);
            }
            continue;
        }
        let [oa, ob] = batch_offsets(batch, batch_shape, &strides);
        let mut x = MatRef::from_row_major_slice(&av[oa..oa + am * ak], am, ak);
        let mut y = MatRef::from_row_major_slice(&bv[ob..ob + bk * bn], bk, bn);
        if ops[0].transpose {
            x = x.transpose();
        }
        if ops[1].transpose {
            y = y.transpose();
        }
        faer::linalg::matmul::matmul_with_conj(
            MatMut::from_row_major_slice_mut(dst, m, n),
            accum,
            x,
            conj(ops[0]),
            y,
            conj(ops[1]),
            alpha,
            par,
        );
    }
    Ok(())
}

/// The `nb` products `[m, k] @ [k, n]` whose operands `operands(i)` reads,
/// into a fresh row-major `[nb, m, n]`. When the batch gives every thread
/// a product (or the products are small) and is worth waking threads for
/// ([`PARALLEL_BATCH`](super::parallel::PARALLEL_BATCH)), the batch is spread over the pool in tasks of at
/// least [`BATCH_TASK`](super::parallel::BATCH_TASK) multiply-adds, each product on one thread; else
/// the products run one after another, each over the pool when it is
/// large.
pub(super) fn batched<'a, T: Field>(
    [nb, m, k, n]: [usize; 4],
    compute: Compute,
    operands: impl Fn(usize) -> (MatRef<'a, T>, MatRef<'a, T>) + Sync,
) -> Vec<T> {
    // With an inner extent, every element is written: no fill needed;
    // without one the product is zeros.
    let mut c = if k == 0 {
        buffer::filled(nb * m * n, T::ZERO)
    } else {
        buffer::overwritten(nb * m * n)
    };
    if m * n == 0 || k == 0 {
        return c;
    }
    let one = |batch: usize, dst: &mut [T], compute: Compute| {
        let (a, b) = operands(batch);
        product(MatMut::from_row_major_slice_mut(dst, m, n), a, b, compute);
    };
    let small = m.saturating_mul(k).saturating_mul(n) < SMALL_PRODUCT;
    let real = real_multiply_adds::<T>(m, k, n);
    let spread = real.saturating_mul(nb) >= PARALLEL_BATCH;
    // Products per task: a task is at least BATCH_TASK multiply-adds.
    let per_task = BATCH_TASK.div_ceil(real).min(nb);
    if compute.parallel() && spread && per_task < nb && (small || nb >= compute.threads) {
        use rayon::prelude::*;
        c.par_chunks_mut(m * n * per_task)
            .enumerate()
            .for_each(|(task, dst)| {
                for (i, dst) in dst.chunks_mut(m * n).enumerate() {
                    one(task * per_task + i, dst, compute.serial());
                }
            });
    } else {
        let each = if small { compute.serial() } else { compute };
        for (batch, dst) in c.chunks_mut(m * n).enumerate() {
            one(batch, dst, each);
        }
    }
    c
}

/// `c = a @ b` by the provider, over `compute.threads` threads of the
/// current pool.
pub(super) fn product<T: Field>(
    c: MatMut<'_, T>,
    a: MatRef<'_, T>,
    b: MatRef<'_, T>,
    compute: Compute,
) {
    match compute.provider {
        CpuProvider::Faer => {
            let par = if compute.parallel() {
                Par::rayon(compute.threads)
            } else {
                Par::Seq
            };
            faer::linalg::matmul::matmul(c, Accum::Replace, a, b, T::ONE, par);
        }
        #[cfg(feature = "blas")]
        CpuProvider::Blas => super::blas::product(c, a, b, compute.threads),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_core::c32;

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
                    .install(|| matmul(&a, &b, Compute::faer(threads)).unwrap());
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
        let c = matmul(&a, &b, Compute::faer(1)).unwrap();
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
        let err = matmul(&tensor(&[2, 2], 0.0), &f32s, Compute::faer(1)).unwrap_err();
        assert!(matches!(err, TensorError::MixedDTypes { .. }));
    }

    /// The providers this build has.
    fn providers() -> Vec<CpuProvider> {
        vec![
            CpuProvider::Faer,
            #[cfg(feature = "blas")]
            CpuProvider::Blas,
        ]
    }

    /// `len` values of type `T` from a seed, complex parts both set.
    fn values<T: Field>(len: usize, seed: f64) -> Vec<T> {
        (0..len)
            .map(|i| {
                let x = (i as f64) * 0.37 + seed;
                T::from_parts(x.sin(), (0.5 * x).cos())
            })
            .collect()
    }

    /// Whether each element of `got` is `want`'s to `tol` times the
    /// magnitude of the `k` terms that summed to it.
    fn close<T: Field>(got: &[T], want: &[T], k: usize, tol: f64, what: &str) {
        assert_eq!(got.len(), want.len(), "{what}");
        for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
            let ((gr, gi), (wr, wi)) = (g.to_parts(), w.to_parts());
            let err = (gr - wr).hypot(gi - wi);
            assert!(
                err <= tol * (k as f64 + 1.0),
                "{what}: element {i}: {g:?} vs {w:?}"
            );
        }
    }

    /// Runs `f` on a pool of `threads` threads (the split and batched
    /// paths need a pool to spread over).
    fn on_pool<R: Send>(threads: usize, f: impl FnOnce() -> R + Send) -> R {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(f)
    }

    /// `[.., m, k] @ [.., k, n]` with broadcast batches by plain loops, for
    /// any element type: batch `t` of the output reads batch `t / 4` of
    /// `a` (shape `[3, 1, m, k]`) and `t % 4` of `b` (`[4, k, n]`).
    fn broadcast_reference<T: Field>(a: &[T], b: &[T], [m, k, n]: [usize; 3]) -> Vec<T> {
        let mut c = Vec::with_capacity(12 * m * n);
        for t in 0..12 {
            let (a, b) = (&a[(t / 4) * m * k..], &b[(t % 4) * k * n..]);
            for i in 0..m {
                for j in 0..n {
                    let mut s = T::ZERO;
                    for p in 0..k {
                        s += a[i * k + p] * b[p * n + j];
                    }
                    c.push(s);
                }
            }
        }
        c
    }

    fn broadcast_batches_of<T: Field>(tol: f64) {
        const ODD: [usize; 4] = [1, 3, 17, 65];
        for provider in providers() {
            for threads in [1, 2] {
                for m in ODD {
                    for k in ODD {
                        for n in ODD {
                            let (va, vb) =
                                (values::<T>(3 * m * k, 0.2), values::<T>(4 * k * n, 1.3));
                            let a = Tensor::from_vec(va.clone(), &[3, 1, m, k]).unwrap();
                            let b = Tensor::from_vec(vb.clone(), &[4, k, n]).unwrap();
                            let compute = Compute { threads, provider };
                            let got = on_pool(threads, || matmul(&a, &b, compute).unwrap());
                            assert_eq!(got.shape(), &[3, 4, m, n]);
                            close(
                                got.as_slice::<T>().unwrap(),
                                &broadcast_reference(&va, &vb, [m, k, n]),
                                k,
                                tol,
                                &format!("{} {provider} ×{threads} {m}×{k}·{k}×{n}", T::DTYPE),
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn every_provider_matches_the_plain_loops_on_every_dtype_with_broadcast_batches() {
        broadcast_batches_of::<f32>(1e-5);
        broadcast_batches_of::<f64>(1e-13);
        broadcast_batches_of::<c32>(1e-5);
        broadcast_batches_of::<weft_core::c64>(1e-13);
    }

    /// A product too large for one thread, split over the pool (by rows,
    /// or by columns when the result is wide), and strided operands: an
    /// einsum whose transposes are folded into the product as column-major
    /// reads.
    fn large_and_strided_of<T: Field>(tol: f64) {
        for provider in providers() {
            for threads in [1, 2, 3] {
                let compute = Compute { threads, provider };
                for (m, k, n) in [(257, 65, 67), (65, 129, 130), (3, 300, 1)] {
                    let (va, vb) = (values::<T>(m * k, 0.7), values::<T>(k * n, 2.1));
                    let what = format!("{} {provider} ×{threads} {m}×{k}·{k}×{n}", T::DTYPE);
                    // Plain product, on the split path for the first two
                    // (m·k·n is above SMALL_PRODUCT and PARALLEL_BATCH).
                    let got = on_pool(threads, || {
                        let mut c = vec![T::ZERO; m * n];
                        product(
                            MatMut::from_row_major_slice_mut(&mut c, m, n),
                            MatRef::from_row_major_slice(&va, m, k),
                            MatRef::from_row_major_slice(&vb, k, n),
                            compute,
                        );
                        c
                    });
                    let mut want = vec![T::ZERO; m * n];
                    for i in 0..m {
                        for j in 0..n {
                            for p in 0..k {
                                want[i * n + j] += va[i * k + p] * vb[p * n + j];
                            }
                        }
                    }
                    close(&got, &want, k, tol, &what);
                    // `ki,nk->in`-shaped: both operands read transposed.
                    let at = Tensor::from_vec(transpose(&va, m, k), &[k, m]).unwrap();
                    let bt = Tensor::from_vec(transpose(&vb, k, n), &[n, k]).unwrap();
                    let spec = weft_core::ops::EinsumSpec::parse("ki,jk->ij").unwrap();
                    let got = on_pool(threads, || {
                        super::super::einsum::run(&spec, &[&at, &bt], compute).unwrap()
                    });
                    close(
                        got.as_slice::<T>().unwrap(),
                        &want,
                        k,
                        tol,
                        &format!("{what} strided"),
                    );
                }
            }
        }
    }

    fn transpose<T: Copy>(v: &[T], rows: usize, cols: usize) -> Vec<T> {
        (0..cols)
            .flat_map(|j| (0..rows).map(move |i| v[i * cols + j]))
            .collect()
    }

    #[test]
    fn every_provider_splits_large_products_and_reads_strided_operands() {
        large_and_strided_of::<f32>(1e-5);
        large_and_strided_of::<f64>(1e-13);
        large_and_strided_of::<c32>(1e-5);
        large_and_strided_of::<weft_core::c64>(1e-13);
    }
}
