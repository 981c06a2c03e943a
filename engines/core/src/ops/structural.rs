//! The structural vocabulary: reshapes, permutations, slices, reversals,
//! broadcasts, diagonals and joins, as shape rules and as the strided
//! views both backends copy out.

use crate::layout::{broadcast_shapes, extent, row_major, View};
use crate::tensor::{element_count, TensorError};

/// Checks a reshape of `shape` to `to`.
///
/// # Errors
///
/// [`TensorError::Reshape`] if the element counts differ.
pub fn reshape_meta(shape: &[usize], to: &[usize]) -> Result<Vec<usize>, TensorError> {
    match (element_count(shape), element_count(to)) {
        (Some(a), Some(b)) if a == b => Ok(to.to_vec()),
        _ => Err(TensorError::Reshape {
            from: shape.to_vec(),
            to: to.to_vec(),
        }),
    }
}

/// Checks a permutation of the axes of `shape`: `perm[i]` is the input axis
/// that becomes output axis `i`.
///
/// # Errors
///
/// [`TensorError::Permutation`] unless `perm` is a permutation of the axes.
pub fn permute_meta(shape: &[usize], perm: &[usize]) -> Result<Vec<usize>, TensorError> {
    let mut seen = vec![false; shape.len()];
    let ok = perm.len() == shape.len()
        && perm
            .iter()
            .all(|&p| p < shape.len() && !std::mem::replace(&mut seen[p], true));
    if !ok {
        return Err(TensorError::Permutation {
            perm: perm.to_vec(),
            rank: shape.len(),
        });
    }
    Ok(perm.iter().map(|&p| shape[p]).collect())
}

/// The view that the CPU engine's `permute` copies out.
pub fn permute_view(shape: &[usize], perm: &[usize]) -> Result<View, TensorError> {
    let out = permute_meta(shape, perm)?;
    let own = row_major(shape);
    // Output axis i walks input axis perm[i].
    Ok(View {
        shape: out,
        strides: perm.iter().map(|&p| own[p]).collect(),
        base: 0,
    })
}

/// One axis of a slice: `start..stop` by `step` (`step ≥ 1`), clamped to the
/// axis like Python's slices of non-negative bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SliceAxis {
    /// First index.
    pub start: usize,
    /// One past the last index (clamped to the extent).
    pub stop: usize,
    /// Distance between taken indices, at least 1.
    pub step: usize,
}

impl SliceAxis {
    /// The whole axis.
    pub const ALL: SliceAxis = SliceAxis {
        start: 0,
        stop: usize::MAX,
        step: 1,
    };
}

/// The view a slice of `axes` takes of a row-major tensor of `shape`.
pub fn slice_view(shape: &[usize], axes: &[SliceAxis]) -> Result<View, TensorError> {
    if axes.len() != shape.len() {
        return Err(TensorError::Slice {
            op: "slice",
            shape: shape.to_vec(),
            reason: format!(
                "{} axis ranges for a rank-{} tensor",
                axes.len(),
                shape.len()
            ),
        });
    }
    let strides = row_major(shape);
    let mut v = View {
        shape: Vec::new(),
        strides: Vec::new(),
        base: 0,
    };
    for (i, (a, &n)) in axes.iter().zip(shape).enumerate() {
        if a.step == 0 {
            return Err(TensorError::Slice {
                op: "slice",
                shape: shape.to_vec(),
                reason: format!("axis {i}: step 0"),
            });
        }
        if a.start > n {
            return Err(TensorError::Slice {
                op: "slice",
                shape: shape.to_vec(),
                reason: format!("axis {i}: start {} is past the extent {n}", a.start),
            });
        }
        let stop = a.stop.min(n).max(a.start);
        v.shape.push((stop - a.start).div_ceil(a.step));
        // Saturating: a step past the extent takes one element, whose
        // stride is never walked; a start past `isize` is one of a shape
        // with no element.
        v.strides.push(strides[i].saturating_mul(extent(a.step)));
        v.base = v
            .base
            .saturating_add(strides[i].saturating_mul(extent(a.start)));
    }
    Ok(v)
}

/// The shape of a slice ([`TensorOp::Slice`](crate::TensorOp::Slice)).
///
/// # Errors
///
/// [`TensorError::Slice`] for a rank mismatch, a zero step or a start past
/// the extent.
pub fn slice_meta(shape: &[usize], axes: &[SliceAxis]) -> Result<Vec<usize>, TensorError> {
    Ok(slice_view(shape, axes)?.shape)
}

/// The view that the CPU engine's `reverse` copies out.
pub fn reverse_view(shape: &[usize], axes: &[usize]) -> Result<View, TensorError> {
    check_axes("reverse", shape.len(), axes)?;
    let mut v = View {
        shape: shape.to_vec(),
        strides: row_major(shape),
        base: 0,
    };
    for &a in axes {
        if shape[a] > 0 {
            v.base = v
                .base
                .saturating_add(v.strides[a].saturating_mul(extent(shape[a] - 1)));
        }
        v.strides[a] = -v.strides[a];
    }
    Ok(v)
}

/// Checks a list of distinct axes of a rank-`rank` tensor.
///
/// # Errors
///
/// [`TensorError::Axis`].
pub fn check_axes(op: &'static str, rank: usize, axes: &[usize]) -> Result<(), TensorError> {
    for (i, &a) in axes.iter().enumerate() {
        let reason = if a >= rank {
            "out of range"
        } else if axes[..i].contains(&a) {
            "given twice"
        } else {
            continue;
        };
        return Err(TensorError::Axis {
            op,
            axis: a,
            rank,
            reason,
        });
    }
    Ok(())
}

/// The shape `input` broadcasts to `shape` in, checked.
///
/// # Errors
///
/// [`TensorError::Broadcast`] if it does not broadcast to exactly `shape`.
pub fn broadcast_to_meta(from: &[usize], to: &[usize]) -> Result<Vec<usize>, TensorError> {
    let out = broadcast_shapes("broadcast_to", from, to)?;
    if out != to {
        // Axes counted from the right; one that `to` lacks (the input has
        // more axes than the target) counts as extent 1 and is refused.
        let extent = |s: &[usize], k: usize| s.len().checked_sub(k + 1).map_or(1, |i| s[i]);
        let axis = (0..out.len())
            .find(|&k| k >= to.len() || extent(&out, k) != extent(to, k))
            .unwrap_or(0);
        return Err(TensorError::Broadcast {
            op: "broadcast_to",
            lhs: from.to_vec(),
            rhs: to.to_vec(),
            axis,
            l: extent(from, axis),
            r: extent(to, axis),
        });
    }
    Ok(out)
}

/// The view that the CPU engine's `broadcast_to` copies out: stride 0 on broadcast axes.
pub fn broadcast_view(from: &[usize], shape: &[usize]) -> Result<View, TensorError> {
    broadcast_to_meta(from, shape)?;
    let lead = shape.len() - from.len();
    let own = row_major(from);
    let strides = (0..shape.len())
        .map(|i| {
            if i < lead || from[i - lead] == 1 {
                0
            } else {
                own[i - lead]
            }
        })
        .collect();
    Ok(View {
        shape: shape.to_vec(),
        strides,
        base: 0,
    })
}

/// Checks `broadcast_in_dim` of `from` to `shape`: input axis `i` becomes
/// output axis `dims[i]` (each once), of the same extent or from extent
/// 1; the other output axes repeat.
///
/// # Errors
///
/// [`TensorError::Broadcast`] naming the axes that do not fit.
pub fn broadcast_in_dim_meta(
    from: &[usize],
    shape: &[usize],
    dims: &[usize],
) -> Result<(), TensorError> {
    let bad = |reason: String| TensorError::Slice {
        op: "broadcast_in_dim",
        shape: from.to_vec(),
        reason,
    };
    if dims.len() != from.len() {
        return Err(bad(format!(
            "{} dimensions for a rank-{} tensor",
            dims.len(),
            from.len()
        )));
    }
    let mut seen = vec![false; shape.len()];
    for (i, &d) in dims.iter().enumerate() {
        if d >= shape.len() || std::mem::replace(&mut seen[d], true) {
            return Err(bad(format!(
                "dimension {d} of axis {i} is out of range or given twice for a rank-{} result",
                shape.len()
            )));
        }
        if from[i] != 1 && from[i] != shape[d] {
            return Err(bad(format!(
                "axis {i} of extent {} cannot become axis {d} of extent {}",
                from[i], shape[d]
            )));
        }
    }
    if element_count(shape).is_none() {
        return Err(TensorError::TooLarge {
            shape: shape.to_vec(),
        });
    }
    Ok(())
}

/// The view that `broadcast_in_dim` copies out.
pub fn broadcast_in_dim_view(
    from: &[usize],
    shape: &[usize],
    dims: &[usize],
) -> Result<View, TensorError> {
    broadcast_in_dim_meta(from, shape, dims)?;
    let own = row_major(from);
    let mut strides = vec![0; shape.len()];
    for (i, &d) in dims.iter().enumerate() {
        if from[i] != 1 {
            strides[d] = own[i];
        }
    }
    Ok(View {
        shape: shape.to_vec(),
        strides,
        base: 0,
    })
}

/// The view that `diagonal` copies out: the diagonals of `axes`, the
/// other axes first, in order.
///
/// # Errors
///
/// [`TensorError::NotMatrix`] for fewer than two axes; [`TensorError::Axis`]
/// for an axis out of range or given twice.
pub fn diagonal_view(shape: &[usize], axes: [usize; 2]) -> Result<View, TensorError> {
    if shape.len() < 2 {
        return Err(TensorError::NotMatrix {
            op: "diagonal",
            shape: shape.to_vec(),
        });
    }
    check_axes("diagonal", shape.len(), &axes)?;
    let strides = row_major(shape);
    let mut v = View::axes_of(shape, |i| !axes.contains(&i));
    v.shape.push(shape[axes[0]].min(shape[axes[1]]));
    v.strides
        .push(strides[axes[0]].saturating_add(strides[axes[1]]));
    Ok(v)
}

/// The shape `diag_embed` makes of `shape` with the diagonals on output
/// axes `axes`, and the view of that output which the input fills: its
/// shape the input's, its strides those of the output axes each input
/// axis lands on (the last one's, both of the pair's).
///
/// # Errors
///
/// [`TensorError::NotMatrix`] for a rank-0 input; [`TensorError::Axis`]
/// for an axis past the output's rank or given twice.
pub fn diag_embed_view(
    shape: &[usize],
    axes: [usize; 2],
) -> Result<(Vec<usize>, View), TensorError> {
    let Some((&n, lead)) = shape.split_last() else {
        return Err(TensorError::NotMatrix {
            op: "diag_embed",
            shape: Vec::new(),
        });
    };
    let rank = shape.len() + 1;
    check_axes("diag_embed", rank, &axes)?;
    let mut leading = lead.iter();
    let out: Vec<usize> = (0..rank)
        .map(|i| {
            if axes.contains(&i) {
                n
            } else {
                *leading
                    .next()
                    .expect("one leading axis per other output axis")
            }
        })
        .collect();
    let out_strides = row_major(&out);
    let mut strides: Vec<isize> = (0..rank)
        .filter(|i| !axes.contains(i))
        .map(|i| out_strides[i])
        .collect();
    strides.push(out_strides[axes[0]].saturating_add(out_strides[axes[1]]));
    let view = View {
        shape: shape.to_vec(),
        strides,
        base: 0,
    };
    Ok((out, view))
}

/// The shape of the concatenation of `shapes` along `axis`.
///
/// # Errors
///
/// [`TensorError::Concat`] for no input, ranks that differ, or extents that
/// differ off `axis`; [`TensorError::Axis`] for `axis` out of range.
pub fn concat_meta(shapes: &[&[usize]], axis: usize) -> Result<Vec<usize>, TensorError> {
    let first = shapes.first().ok_or_else(|| TensorError::Concat {
        reason: "no input".into(),
    })?;
    check_axes("concatenate", first.len(), &[axis])?;
    let mut out = first.to_vec();
    for (i, s) in shapes.iter().enumerate().skip(1) {
        if s.len() != first.len() || (0..s.len()).any(|a| a != axis && s[a] != first[a]) {
            return Err(TensorError::Concat {
                reason: format!("input {i} has shape {s:?}, input 0 {first:?}, along axis {axis}"),
            });
        }
        out[axis] = out[axis]
            .checked_add(s[axis])
            .ok_or_else(|| TensorError::TooLarge { shape: out.clone() })?;
    }
    Ok(out)
}
