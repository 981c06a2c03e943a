//! Layouts: row-major strides, NumPy broadcasting, and strided views with
//! the one offset walk both backends learn shapes from.

use crate::tensor::{element_count, TensorError};

/// The shape `lhs` and `rhs` broadcast to, by NumPy's rules: align on the
/// last axis; each pair of extents is equal or one of them is 1.
///
/// # Errors
///
/// [`TensorError::Broadcast`] naming both shapes and the first axis (from
/// the right) that does not match.
pub fn broadcast_shapes(
    op: &'static str,
    lhs: &[usize],
    rhs: &[usize],
) -> Result<Vec<usize>, TensorError> {
    let rank = lhs.len().max(rhs.len());
    let extent = |shape: &[usize], from_right: usize| {
        shape
            .len()
            .checked_sub(from_right + 1)
            .map_or(1, |i| shape[i])
    };
    let mut out = vec![0; rank];
    for axis in 0..rank {
        let (l, r) = (extent(lhs, axis), extent(rhs, axis));
        out[rank - 1 - axis] = match (l, r) {
            _ if l == r => l,
            (1, r) => r,
            (l, 1) => l,
            _ => {
                return Err(TensorError::Broadcast {
                    op,
                    lhs: lhs.to_vec(),
                    rhs: rhs.to_vec(),
                    axis,
                    l,
                    r,
                })
            }
        };
    }
    if element_count(&out).is_none() {
        return Err(TensorError::TooLarge { shape: out });
    }
    Ok(out)
}

/// Row-major strides of `shape` as seen from an output of shape `out`:
/// 0 on broadcast axes.
pub fn strides_in(shape: &[usize], out: &[usize]) -> Vec<usize> {
    let lead = out.len() - shape.len();
    let mut strides = vec![0; out.len()];
    let mut step = 1usize;
    for i in (0..shape.len()).rev() {
        if shape[i] != 1 {
            strides[lead + i] = step;
        }
        step = step.saturating_mul(shape[i]);
    }
    strides
}

/// A strided view of a tensor: element `index` of the output is input
/// element `base + Σ index[i] · strides[i]`. Slices, reversals, broadcasts
/// and diagonals are all such views. The CPU engine copies one out with
/// `view`; the CUDA engine, with one kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct View {
    /// The view's shape.
    pub shape: Vec<usize>,
    /// Input elements between neighbours along each axis (negative walks back).
    pub strides: Vec<isize>,
    /// The input offset of the view's first element.
    pub base: isize,
}

impl View {
    /// A view of the axes of `shape` picked by `keep`, in order, with the
    /// row-major strides they have in `shape`.
    pub fn axes_of(shape: &[usize], keep: impl Fn(usize) -> bool) -> View {
        let strides = row_major(shape);
        let picked: Vec<usize> = (0..shape.len()).filter(|&i| keep(i)).collect();
        View {
            shape: picked.iter().map(|&i| shape[i]).collect(),
            strides: picked.iter().map(|&i| strides[i]).collect(),
            base: 0,
        }
    }

    /// Calls `f` with the input offset of every element of the view, last
    /// axis fastest: the one odometer every strided walk here uses.
    pub fn for_each_offset(&self, mut f: impl FnMut(usize)) {
        if self.shape.contains(&0) {
            return;
        }
        let mut index = vec![0usize; self.shape.len()];
        let mut offset = self.base;
        loop {
            f(usize::try_from(offset).expect("views stay inside their tensor"));
            let mut axis = self.shape.len();
            loop {
                if axis == 0 {
                    return;
                }
                axis -= 1;
                index[axis] += 1;
                // Wrapping: the step past an axis's end (taken back at
                // once) may leave `isize` when its stride is saturated (a
                // slice's step past its extent); every offset the walk
                // reports is inside the tensor.
                offset = offset.wrapping_add(self.strides[axis]);
                if index[axis] < self.shape[axis] {
                    break;
                }
                offset =
                    offset.wrapping_sub(self.strides[axis].wrapping_mul(extent(self.shape[axis])));
                index[axis] = 0;
            }
        }
    }
}

/// Row-major strides of `shape`. They saturate rather than overflow: only
/// a shape with no element can have strides past `isize` (its element
/// count is bounded by the allocation otherwise), and a walk over no
/// element reads none of them.
pub fn row_major(shape: &[usize]) -> Vec<isize> {
    let mut strides = vec![1isize; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        strides[i] = strides[i + 1].saturating_mul(extent(shape[i + 1]));
    }
    strides
}

/// An extent as a stride factor, saturating (see [`row_major`]).
pub fn extent(n: usize) -> isize {
    isize::try_from(n).unwrap_or(isize::MAX)
}

/// The row-major multi-index of flat position `flat` in `shape`.
pub fn unravel(mut flat: usize, shape: &[usize]) -> Vec<usize> {
    let mut index = vec![0; shape.len()];
    for (i, &n) in shape.iter().enumerate().rev() {
        if n > 0 {
            index[i] = flat % n;
            flat /= n;
        }
    }
    index
}

/// A strided tensor (`shape`, `strides` in elements) read as a batch of
/// matrices `[groups[0], groups[1], groups[2]]` (element counts: batch,
/// rows, columns), without a copy: each group's axes, in order, merge into
/// one stride, and rows or columns are contiguous. Returns the three
/// strides (`None` for a group of extent 1, whose stride never matters),
/// or `None` when the tensor cannot be read so. Axes of extent 1 go in any
/// group.
pub fn matrix_strides(
    shape: &[usize],
    strides: &[isize],
    groups: [usize; 3],
) -> Option<[Option<usize>; 3]> {
    if shape.contains(&0) {
        return None;
    }
    let axes: Vec<(usize, usize)> = shape
        .iter()
        .zip(strides)
        .filter(|(&e, _)| e != 1)
        .map(|(&e, &s)| Some((e, usize::try_from(s).ok()?)))
        .collect::<Option<_>>()?;
    let mut merged: [Option<usize>; 3] = [None; 3];
    let mut rest = &axes[..];
    for (g, &target) in groups.iter().enumerate() {
        let mut product = 1usize;
        let mut taken = 0;
        while product < target {
            let &(extent, _) = rest.get(taken)?;
            product = product.checked_mul(extent)?;
            taken += 1;
        }
        if product != target {
            return None;
        }
        let group = &rest[..taken];
        for pair in group.windows(2) {
            if pair[0].1 != pair[1].1.checked_mul(pair[1].0)? {
                return None;
            }
        }
        merged[g] = group.last().map(|&(_, s)| s);
        rest = &rest[taken..];
    }
    let contiguous = |s: Option<usize>| matches!(s, None | Some(1));
    (contiguous(merged[1]) || contiguous(merged[2])).then_some(merged)
}
