//! The CPU's dispatch of the vocabulary: which kernel runs each
//! [`TensorOp`] (one exhaustive `match`), and whether it runs inline on the
//! calling thread or over the domain's pool.

use super::einsum::EinsumPlan;
use super::gemm::Compute;
use super::parallel::PARALLEL_THRESHOLD;
use super::pool::Workers;
use super::{buffer, create, einsum, elementwise, gemm, index, linalg, reduce, structural, unary};
use weft_core::ops::{BinaryOp, EinsumSpec, Meta, TensorOp, UnaryOp};
use weft_core::{element_count, DType, Tensor, TensorError};

/// Runs `op` on `inputs`, already checked against it (`outputs` are what
/// [`TensorOp::infer`] gave): inline for small work, over `pool` (as
/// `compute` says) above [`PARALLEL_THRESHOLD`]. An einsum runs
/// `plan` when given (the engine's cached plan for these operands), else
/// plans itself.
///
/// # Errors
///
/// [`TensorError::TooLarge`] for an output the allocator cannot provide,
/// and the failures only the run can find (a factorization that fails).
pub(super) fn run(
    pool: &Workers,
    compute: Compute,
    op: &TensorOp,
    inputs: &[&Tensor],
    outputs: &[(DType, &[usize])],
    plan: Option<&EinsumPlan>,
) -> Result<Vec<Tensor>, TensorError> {
    if let Some(empty) = empty(outputs.iter().copied()) {
        return empty;
    }
    buffer::check_allocatable(outputs)?;
    if work(op, inputs, outputs) >= PARALLEL_THRESHOLD {
        pool.install(|| kernel(op, inputs, compute, plan))
    } else {
        kernel(op, inputs, compute.serial(), plan)
    }
}

/// An op run on host tensors with the CPU engine's kernels, without an
/// engine: the reference every engine is checked against.
pub trait HostRun {
    /// Runs the op on `inputs` on the calling thread (`threads > 1`:
    /// spread over the current rayon pool, of that many threads), products
    /// through faer.
    ///
    /// # Errors
    ///
    /// As [`TensorOp::infer`], and the failures only the run can find (a
    /// factorization that fails).
    fn run(&self, inputs: &[&Tensor], threads: usize) -> Result<Vec<Tensor>, TensorError>;
}

impl HostRun for TensorOp {
    fn run(&self, inputs: &[&Tensor], threads: usize) -> Result<Vec<Tensor>, TensorError> {
        let metas: Vec<Meta> = inputs.iter().map(|t| Meta::of(t)).collect();
        let outputs = self.infer(&metas)?;
        if let Some(empty) = empty(outputs.iter().map(|m| (m.dtype, &m.shape[..]))) {
            return empty;
        }
        kernel(self, inputs, Compute::faer(threads), None)
    }
}

/// The kernel of each op, computing as `compute` says (the caller installs
/// the domain's pool when it may spread).
fn kernel(
    op: &TensorOp,
    inputs: &[&Tensor],
    compute: Compute,
    plan: Option<&EinsumPlan>,
) -> Result<Vec<Tensor>, TensorError> {
    let parallel = compute.parallel();
    let one = |t: Result<Tensor, TensorError>| t.map(|t| vec![t]);
    match op {
        TensorOp::Linalg(op) => linalg::run(*op, inputs),
        TensorOp::Kernel(k) => Err(TensorError::ForeignKernel { kernel: k.name }),
        TensorOp::Einsum(spec) => one(match plan {
            Some(plan) => plan.run(inputs, compute),
            None => einsum::run(spec, inputs, compute),
        }),
        TensorOp::Binary(op) => one(elementwise::binary(*op, inputs[0], inputs[1], parallel)),
        TensorOp::Unary(op) => one(unary::apply(*op, inputs[0], parallel)),
        TensorOp::Matmul => one(gemm::matmul(inputs[0], inputs[1], compute)),
        TensorOp::Gemm { alpha, beta, a, b } => {
            one(gemm::accumulate(inputs, [*a, *b], [*alpha, *beta], compute))
        }
        TensorOp::Axpby { alpha, beta } => {
            let scaled = |x, s| elementwise::with_scalar(BinaryOp::Mul, x, s, false, parallel);
            let x = scaled(inputs[0], *alpha)?;
            if beta.is_zero() {
                // β = 0 does not read `y` (its NaNs stay out), as BLAS.
                let shape =
                    weft_core::layout::broadcast_shapes("axpby", x.shape(), inputs[1].shape())?;
                return one(structural::broadcast_to(&x, &shape));
            }
            let y = scaled(inputs[1], *beta)?;
            one(elementwise::binary(BinaryOp::Add, &x, &y, parallel))
        }
        TensorOp::Reduce {
            op,
            axes,
            keep_dims,
        } => one(reduce::reduce(*op, inputs[0], axes, *keep_dims, parallel)),
        TensorOp::ArgReduce {
            op,
            axis,
            keep_dims,
        } => one(reduce::arg(*op, inputs[0], *axis, *keep_dims)),
        TensorOp::Reshape(to) => one(structural::reshape(inputs[0], to)),
        TensorOp::Permute(perm) => one(structural::permute(inputs[0], perm, parallel)),
        TensorOp::Full {
            dtype,
            shape,
            value,
        } => one(create::full(*dtype, shape, *value)),
        TensorOp::Eye { dtype, rows, cols } => one(create::eye(*dtype, *rows, *cols)),
        TensorOp::Arange {
            dtype,
            start,
            step,
            len,
        } => one(create::arange(*dtype, *start, *step, *len)),
        TensorOp::Random {
            dtype,
            shape,
            distribution,
            seed,
        } => one(Tensor::random(*dtype, shape, *distribution, *seed)),
        TensorOp::Compare(op) => one(elementwise::compare(*op, inputs[0], inputs[1], parallel)),
        TensorOp::Select => one(elementwise::select(inputs[0], inputs[1], inputs[2])),
        TensorOp::Clamp { lo, hi } => one(elementwise::clamp(inputs[0], *lo, *hi)),
        TensorOp::ClampBetween => one(elementwise::clamp_between(
            inputs[0], inputs[1], inputs[2], parallel,
        )),
        TensorOp::BinaryScalar {
            op,
            value,
            scalar_first,
        } => one(elementwise::with_scalar(
            *op,
            inputs[0],
            *value,
            *scalar_first,
            parallel,
        )),
        TensorOp::Cast(dtype) => one(Ok(structural::cast(inputs[0], *dtype))),
        TensorOp::Slice(axes) => one(structural::slice(inputs[0], axes)),
        TensorOp::Reverse(axes) => one(structural::reverse(inputs[0], axes)),
        TensorOp::BroadcastTo(shape) => one(structural::broadcast_to(inputs[0], shape)),
        TensorOp::BroadcastInDim { shape, dims } => {
            one(
                weft_core::ops::broadcast_in_dim_view(inputs[0].shape(), shape, dims)
                    .and_then(|v| structural::view(inputs[0], &v)),
            )
        }
        TensorOp::Concatenate { axis, .. } => one(structural::concatenate(inputs, *axis)),
        TensorOp::Pad { widths, value } => one(structural::pad(inputs[0], widths, *value)),
        TensorOp::Diagonal { axes } => one(structural::diagonal(inputs[0], *axes)),
        TensorOp::DiagEmbed { axes } => one(structural::diag_embed(inputs[0], *axes)),
        TensorOp::Triangle { k, upper } => one(structural::triangle(inputs[0], *k, *upper)),
        TensorOp::Gather { axis } => one(index::gather(inputs[0], inputs[1], *axis)),
        TensorOp::Scatter { axis, mode } => one(index::scatter(
            inputs[0], inputs[1], inputs[2], *axis, *mode,
        )),
        TensorOp::DynamicSlice { sizes } => one(index::dynamic_slice(inputs[0], inputs[1], sizes)),
        TensorOp::DynamicUpdateSlice => {
            one(index::dynamic_update_slice(inputs[0], inputs[1], inputs[2]))
        }
        TensorOp::Compress { len } => one(index::compress(inputs[0], inputs[1], *len)),
        TensorOp::Dot { conjugate } => {
            let conj;
            let a = if *conjugate {
                conj = unary::apply(UnaryOp::Conj, inputs[0], false)?;
                &conj
            } else {
                inputs[0]
            };
            one(einsum::run(
                &EinsumSpec::parse("i,i->")?,
                &[a, inputs[1]],
                compute,
            ))
        }
    }
}

/// Outputs of which none has an element are their shapes alone: no kernel
/// runs for them, so none walks the extents that a shape with no element
/// may take to any size (`[0, 2^62, 4]`).
fn empty<'a>(
    outputs: impl Iterator<Item = (DType, &'a [usize])> + Clone,
) -> Option<Result<Vec<Tensor>, TensorError>> {
    // The hot path (some output has an element) only looks.
    if !outputs.clone().all(|(_, shape)| shape.contains(&0)) {
        return None;
    }
    Some(
        outputs
            .map(|(dtype, shape)| Tensor::from_data(crate::Data::zeros(dtype, 0), shape))
            .collect(),
    )
}

/// The work of an op, in elements touched, that decides between running
/// inline and over the pool.
fn work(op: &TensorOp, inputs: &[&Tensor], outputs: &[(DType, &[usize])]) -> usize {
    let elements: usize = outputs
        .iter()
        .map(|(_, shape)| element_count(shape).unwrap_or(usize::MAX))
        .fold(0, usize::saturating_add);
    match op {
        TensorOp::Matmul => elements.saturating_mul(inputs[0].shape().last().copied().unwrap_or(1)),
        TensorOp::Gemm { a, .. } => {
            elements.saturating_mul(a.shape(inputs[0].shape()).last().copied().unwrap_or(1))
        }
        TensorOp::Linalg(_) | TensorOp::Einsum(_) => usize::MAX,
        TensorOp::Reduce { .. } => inputs[0].len(),
        _ => elements,
    }
}

/// The input an op accumulates into, when it is donated: `gemm`'s `c`
/// (input 2) and `axpby`'s `y` (input 1). Other ops write a donated
/// tensor's buffer only as a fresh output.
pub(super) fn accumulator(op: &TensorOp) -> Option<usize> {
    match op {
        TensorOp::Gemm { .. } => Some(2),
        TensorOp::Axpby { .. } => Some(1),
        _ => None,
    }
}

/// Runs an op of [`accumulator`] in place: `target` is the accumulated
/// input, moved out of the store, `others` the op's other inputs in
/// order; inline for small work, over `pool` above [`PARALLEL_THRESHOLD`].
///
/// # Errors
///
/// As the op's kernel.
pub(super) fn accumulate_in_place(
    pool: &Workers,
    compute: Compute,
    op: &TensorOp,
    others: &[&Tensor],
    target: Tensor,
) -> Result<Tensor, TensorError> {
    let work = match op {
        TensorOp::Gemm { a, .. } => {
            let k = a.shape(others[0].shape()).last().copied().unwrap_or(1);
            target.len().saturating_mul(k)
        }
        _ => target.len(),
    };
    let run = |compute: Compute| match *op {
        TensorOp::Gemm { alpha, beta, a, b } => {
            gemm::accumulate_in_place(target, others[0], others[1], [a, b], [alpha, beta], compute)
        }
        TensorOp::Axpby { alpha, beta } => {
            elementwise::axpby_in_place(target, others[0], [alpha, beta])
        }
        _ => unreachable!("only the accumulators run in place"),
    };
    if compute.parallel() && work >= PARALLEL_THRESHOLD {
        pool.install(|| run(compute))
    } else {
        run(compute.serial())
    }
}
