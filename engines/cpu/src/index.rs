//! Indexing kernels: gather and scatter along an axis, dynamic slices and
//! updates, compression by a mask. Every index is checked before any
//! element is written.

use super::elementwise::Integer;
use weft_core::layout::unravel;
use weft_core::ops::{
    clamped_starts, mask_positions, positions, split_at_axis as split, window_axes, Meta,
    ScatterMode, TensorOp,
};
use weft_core::{element_count, Data, Element, Field, Tensor, TensorError};

/// `x` taken along `axis` at `indices`.
///
/// # Errors
///
/// As [`weft_core::ops::gather_meta`]; [`TensorError::Index`].
pub(super) fn gather(x: &Tensor, indices: &Tensor, axis: usize) -> Result<Tensor, TensorError> {
    let shape = weft_core::ops::gather_meta(&Meta::of(x), &Meta::of(indices), axis)?;
    let (outer, extent, inner) = split(x.shape(), axis);
    let at = positions("gather", indices, axis, extent)?;
    fn take<T: Copy>(v: &[T], at: &[usize], outer: usize, extent: usize, inner: usize) -> Vec<T> {
        let mut out = Vec::with_capacity(outer * at.len() * inner);
        for o in 0..outer {
            for &p in at {
                let start = (o * extent + p) * inner;
                out.extend_from_slice(&v[start..start + inner]);
            }
        }
        out
    }
    let data = map_data!(x.data(), |v| take(v, &at, outer, extent, inner));
    Tensor::from_data(data, &shape)
}

/// `x` with the slices along `axis` at `indices` set to, or increased by,
/// `updates`.
///
/// # Errors
///
/// As [`weft_core::ops::scatter_meta`]; [`TensorError::Index`].
pub(super) fn scatter(
    x: &Tensor,
    indices: &Tensor,
    updates: &Tensor,
    axis: usize,
    mode: ScatterMode,
) -> Result<Tensor, TensorError> {
    weft_core::ops::scatter_meta(
        &Meta::of(x),
        &Meta::of(indices),
        &Meta::of(updates),
        axis,
        mode,
    )?;
    let (outer, extent, inner) = split(x.shape(), axis);
    let at = positions("scatter", indices, axis, extent)?;
    /// Each update slice into its place, in the indices' order, combined
    /// by `f` with what is there.
    fn put<T: Copy>(
        out: &mut [T],
        updates: &[T],
        at: &[usize],
        [outer, extent, inner]: [usize; 3],
        f: impl Fn(T, T) -> T,
    ) {
        let m = at.len();
        for o in 0..outer {
            for (j, &p) in at.iter().enumerate() {
                let dst = (o * extent + p) * inner;
                let src = (o * m + j) * inner;
                for k in 0..inner {
                    out[dst + k] = f(out[dst + k], updates[src + k]);
                }
            }
        }
    }
    let dims = [outer, extent, inner];
    let mut out = x.data().clone();
    fn field<T: Field>(mode: ScatterMode) -> fn(T, T) -> T {
        match mode {
            ScatterMode::Set => |_, u| u,
            ScatterMode::Add => |a, u| a + u,
        }
    }
    fn integer<T: Integer>(mode: ScatterMode) -> fn(T, T) -> T {
        match mode {
            ScatterMode::Set => |_, u| u,
            ScatterMode::Add => |a, u| a.wrapping_add(u),
        }
    }
    match (&mut out, updates.data()) {
        (Data::F32(o), Data::F32(u)) => put(o, u, &at, dims, field(mode)),
        (Data::F64(o), Data::F64(u)) => put(o, u, &at, dims, field(mode)),
        (Data::C32(o), Data::C32(u)) => put(o, u, &at, dims, field(mode)),
        (Data::C64(o), Data::C64(u)) => put(o, u, &at, dims, field(mode)),
        (Data::I32(o), Data::I32(u)) => put(o, u, &at, dims, integer(mode)),
        (Data::I64(o), Data::I64(u)) => put(o, u, &at, dims, integer(mode)),
        // Checked: an add into bool is refused.
        (Data::Bool(o), Data::Bool(u)) => put(o, u, &at, dims, |_, u| u),
        _ => {
            return Err(TensorError::MixedDTypes {
                op: "scatter",
                lhs: x.dtype(),
                rhs: updates.dtype(),
            })
        }
    }
    Tensor::from_data(out, x.shape())
}

/// The window of `sizes` at the clamped starts.
///
/// # Errors
///
/// As [`weft_core::ops::check_window`] and [`weft_core::ops::check_starts`].
pub(super) fn dynamic_slice(
    x: &Tensor,
    at: &Tensor,
    sizes: &[usize],
) -> Result<Tensor, TensorError> {
    let op = TensorOp::DynamicSlice {
        sizes: sizes.to_vec(),
    };
    op.infer(&[Meta::of(x), Meta::of(at)])?;
    let first = clamped_starts(at, x.shape(), sizes)?;
    super::structural::slice(x, &window_axes(&first, sizes))
}

/// `x` with `update` written at the clamped starts.
///
/// # Errors
///
/// As [`TensorOp::infer`] of [`TensorOp::DynamicUpdateSlice`].
pub(super) fn dynamic_update_slice(
    x: &Tensor,
    update: &Tensor,
    at: &Tensor,
) -> Result<Tensor, TensorError> {
    TensorOp::DynamicUpdateSlice.infer(&[Meta::of(x), Meta::of(update), Meta::of(at)])?;
    let (shape, window) = (x.shape(), update.shape());
    let first = clamped_starts(at, shape, window)?;
    let rank = shape.len();
    let mut strides = vec![1usize; rank];
    for a in (0..rank.saturating_sub(1)).rev() {
        strides[a] = strides[a + 1] * shape[a + 1];
    }
    let n = element_count(window).unwrap_or(0);
    fn write<T: Copy>(out: &mut [T], update: &[T], offsets: &[usize]) {
        for (&o, &u) in offsets.iter().zip(update) {
            out[o] = u;
        }
    }
    // The destination of each update element, in its row-major order.
    let offsets: Vec<usize> = (0..n)
        .map(|k| {
            unravel(k, window)
                .iter()
                .enumerate()
                .map(|(a, &i)| (first[a] + i) * strides[a])
                .sum()
        })
        .collect();
    let mut out = x.data().clone();
    with_data2!(&mut out, update.data(), |o, u| write(o, u, &offsets), else unreachable!("checked: one type"));
    Tensor::from_data(out, shape)
}

/// The elements of `x` where `mask` is `true`, `len` of them.
///
/// # Errors
///
/// As [`TensorOp::infer`] of [`TensorOp::Compress`];
/// [`TensorError::MaskCount`] when the mask has another count.
pub(super) fn compress(x: &Tensor, mask: &Tensor, len: usize) -> Result<Tensor, TensorError> {
    TensorOp::Compress { len }.infer(&[Meta::of(x), Meta::of(mask)])?;
    let at = mask_positions(mask, len)?;
    fn keep<T: Element>(v: &[T], at: &[usize]) -> Vec<T> {
        at.iter().map(|&p| v[p]).collect()
    }
    Tensor::from_data(map_data!(x.data(), |v| keep(v, &at)), &[len])
}
