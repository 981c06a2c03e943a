//! The indexing vocabulary: gather and scatter along an axis with an
//! integer index tensor, dynamic slices with start offsets from a tensor,
//! and the compression of a tensor by a `bool` mask, as shape rules.
//!
//! Indices are checked on the actor, before any element is written: one
//! outside `-extent..extent` is a [`TensorError::Index`] naming it, its
//! place in the index tensor and the extent (a negative index counts from
//! the end, as NumPy's). Dynamic slices clamp their starts instead, as
//! XLA does: that is their definition.

use super::Meta;
use crate::layout::unravel;
use crate::tensor::{DType, Tensor, TensorError};

/// What a scatter does with the elements it reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScatterMode {
    /// Writes the update: of duplicate indices, the last in the index
    /// tensor's row-major order wins.
    Set,
    /// Adds the update: duplicate indices all add (numbers only).
    Add,
}

/// Refuses an index tensor that is not of an integer type.
fn check_indices(op: &'static str, indices: &Meta) -> Result<(), TensorError> {
    if indices.dtype.is_integer() {
        return Ok(());
    }
    Err(TensorError::Unsupported {
        op: if op == "gather" {
            "gather indices"
        } else {
            "scatter indices"
        },
        dtype: indices.dtype,
    })
}

/// The axis `axis` of a rank-`rank` tensor, checked.
fn check_axis(op: &'static str, axis: usize, rank: usize) -> Result<(), TensorError> {
    if axis < rank {
        Ok(())
    } else {
        Err(TensorError::Axis {
            op,
            axis,
            rank,
            reason: "out of range",
        })
    }
}

/// The shape of `gather(x, indices, axis)`: `x`'s axes before `axis`, the
/// index tensor's, then `x`'s after `axis` (NumPy's `take`).
///
/// # Errors
///
/// [`TensorError::Axis`], [`TensorError::Unsupported`] for indices that
/// are not integers.
pub fn gather_meta(x: &Meta, indices: &Meta, axis: usize) -> Result<Vec<usize>, TensorError> {
    check_axis("gather", axis, x.shape.len())?;
    check_indices("gather", indices)?;
    let mut shape = x.shape[..axis].to_vec();
    shape.extend_from_slice(&indices.shape);
    shape.extend_from_slice(&x.shape[axis + 1..]);
    Ok(shape)
}

/// Checks `scatter(x, indices, updates, axis)`: `updates` of the shape
/// `gather(x, indices, axis)` would have, and of `x`'s type.
///
/// # Errors
///
/// As [`gather_meta`]; [`TensorError::MixedDTypes`],
/// [`TensorError::Slice`] for updates of another shape,
/// [`TensorError::Unsupported`] for an add into `bool`.
pub fn scatter_meta(
    x: &Meta,
    indices: &Meta,
    updates: &Meta,
    axis: usize,
    mode: ScatterMode,
) -> Result<(), TensorError> {
    check_axis("scatter", axis, x.shape.len())?;
    check_indices("scatter", indices)?;
    if updates.dtype != x.dtype {
        return Err(TensorError::MixedDTypes {
            op: "scatter",
            lhs: x.dtype,
            rhs: updates.dtype,
        });
    }
    if mode == ScatterMode::Add && x.dtype == DType::Bool {
        return Err(TensorError::Unsupported {
            op: "scatter_add",
            dtype: x.dtype,
        });
    }
    let want = gather_meta(x, indices, axis)?;
    if updates.shape != want {
        return Err(TensorError::Slice {
            op: "scatter",
            shape: x.shape.clone(),
            reason: format!(
                "updates of shape {:?} for indices of shape {:?} along axis {axis}, which need {want:?}",
                updates.shape, indices.shape
            ),
        });
    }
    Ok(())
}

/// Checks the start offsets of a dynamic slice or update of a rank-`rank`
/// tensor: a 1-D integer tensor of one start per axis.
///
/// # Errors
///
/// [`TensorError::Slice`] naming what is wrong.
pub fn check_starts(op: &'static str, shape: &[usize], starts: &Meta) -> Result<(), TensorError> {
    if !starts.dtype.is_integer() || starts.shape != [shape.len()] {
        return Err(TensorError::Slice {
            op,
            shape: shape.to_vec(),
            reason: format!(
                "the starts must be a 1-D integer tensor of {} elements, got {}{:?}",
                shape.len(),
                starts.dtype,
                starts.shape
            ),
        });
    }
    Ok(())
}

/// Checks the sizes of a dynamic slice: one per axis, each at most the
/// axis's extent.
///
/// # Errors
///
/// [`TensorError::Slice`] naming the axis.
pub fn check_window(op: &'static str, shape: &[usize], sizes: &[usize]) -> Result<(), TensorError> {
    if sizes.len() != shape.len() {
        return Err(TensorError::Slice {
            op,
            shape: shape.to_vec(),
            reason: format!("{} sizes for a rank-{} tensor", sizes.len(), shape.len()),
        });
    }
    if let Some(axis) = (0..shape.len()).find(|&a| sizes[a] > shape[a]) {
        return Err(TensorError::Slice {
            op,
            shape: shape.to_vec(),
            reason: format!(
                "size {} along axis {axis} is larger than its extent {}",
                sizes[axis], shape[axis]
            ),
        });
    }
    Ok(())
}

/// XLA's clamp of a dynamic slice's start: into `0..=extent - size`, so
/// the window always fits.
pub(crate) fn clamp_start(start: i64, extent: usize, size: usize) -> usize {
    let last = (extent - size) as i64;
    start.clamp(0, last) as usize
}

/// The indices (an integer tensor read on the host) as positions along an
/// axis of `extent`, negative ones counted from the end: what both
/// engines check before any element is written.
///
/// # Errors
///
/// [`TensorError::Index`] for the first index outside `-extent..extent`.
pub fn positions(
    op: &'static str,
    indices: &Tensor,
    axis: usize,
    extent: usize,
) -> Result<Vec<usize>, TensorError> {
    let wide = indices.data().integers().ok_or(TensorError::Unsupported {
        op: "indices",
        dtype: indices.dtype(),
    })?;
    let n = extent as i128;
    wide.iter()
        .enumerate()
        .map(|(at, &i)| {
            let wide = i128::from(i);
            let p = if wide < 0 { wide + n } else { wide };
            if (0..n).contains(&p) {
                Ok(p as usize)
            } else {
                Err(TensorError::Index {
                    op,
                    index: i,
                    position: unravel(at, indices.shape()),
                    axis,
                    extent,
                })
            }
        })
        .collect()
}

/// `(outer, extent, inner)`: the elements before, along and after `axis`.
pub fn split_at_axis(shape: &[usize], axis: usize) -> (usize, usize, usize) {
    let outer = shape[..axis].iter().product();
    let inner = shape[axis + 1..].iter().product();
    (outer, shape[axis], inner)
}

/// The start offsets (an integer tensor read on the host), clamped so
/// that a window of `sizes` fits.
///
/// # Errors
///
/// [`TensorError::Unsupported`] for starts that are not integers.
pub fn clamped_starts(
    starts: &Tensor,
    shape: &[usize],
    sizes: &[usize],
) -> Result<Vec<usize>, TensorError> {
    let wide = starts.data().integers().ok_or(TensorError::Unsupported {
        op: "starts",
        dtype: starts.dtype(),
    })?;
    Ok((0..shape.len())
        .map(|a| clamp_start(wide[a], shape[a], sizes[a]))
        .collect())
}

/// The row-major positions of a `bool` mask's `true` elements, which must
/// number `len`.
///
/// # Errors
///
/// [`TensorError::MaskCount`] when they do not; the mask's type error.
pub fn mask_positions(mask: &Tensor, len: usize) -> Result<Vec<usize>, TensorError> {
    let flags = mask.as_slice::<bool>()?;
    let at: Vec<usize> = (0..flags.len()).filter(|&i| flags[i]).collect();
    if at.len() != len {
        return Err(TensorError::MaskCount {
            expected: len,
            got: at.len(),
        });
    }
    Ok(at)
}

/// The slice of a window of `sizes` at `starts` (clamped already).
pub fn window_axes(starts: &[usize], sizes: &[usize]) -> Vec<super::SliceAxis> {
    starts
        .iter()
        .zip(sizes)
        .map(|(&start, &size)| super::SliceAxis {
            start,
            stop: start + size,
            step: 1,
        })
        .collect()
}
