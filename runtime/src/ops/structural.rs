//! Structural ops: shapes, axes, slices, joins, pads, diagonals, triangles.

use super::vocabulary::Apply;
use weft_core::{Scalar, TensorOp};

use crate::error::OpError;
use weft_core::SliceAxis;

/// Structural ops: shapes, axes, slices, joins, pads, diagonals, triangles.
///
/// Provided for every [`Apply`]: a [`crate::Lane`] runs them, a
/// [`weft_core::Recorder`] records them.
pub trait StructuralOps: Apply {
    /// `x` with shape `shape`; see [`Apply::apply`].
    ///
    /// # Errors
    ///
    /// As [`Apply::apply`]: a shape with another element count.
    fn reshape(&self, x: &Self::Tensor, shape: &[usize]) -> Result<Self::Tensor, OpError> {
        self.apply(TensorOp::Reshape(shape.to_vec()), &[x])
    }

    /// `x` with axes reordered: output axis `i` is input axis `perm[i]`.
    ///
    /// # Errors
    ///
    /// As [`Apply::apply`]: not a permutation of the axes.
    fn permute(&self, x: &Self::Tensor, perm: &[usize]) -> Result<Self::Tensor, OpError> {
        self.apply(TensorOp::Permute(perm.to_vec()), &[x])
    }

    /// `x` with its last two axes swapped.
    ///
    /// # Errors
    ///
    /// As [`Apply::apply`]: fewer than two axes.
    fn transpose(&self, x: &Self::Tensor) -> Result<Self::Tensor, OpError> {
        let rank = self.shape(x)?.len();
        let mut perm: Vec<usize> = (0..rank).collect();
        if rank >= 2 {
            perm.swap(rank - 2, rank - 1);
        } else {
            perm = vec![0, 1]; // refused by the check, naming the rank
        }
        self.permute(x, &perm)
    }

    /// `x[start..stop:step, …]`, one range per axis.
    ///
    /// # Errors
    ///
    /// As [`Apply::apply`]: a range per axis, steps of at least 1, starts
    /// within the extents.
    fn slice(&self, x: &Self::Tensor, axes: &[SliceAxis]) -> Result<Self::Tensor, OpError> {
        self.apply(TensorOp::Slice(axes.to_vec()), &[x])
    }

    /// `x` reversed along `axes`.
    ///
    /// # Errors
    ///
    /// As [`Apply::apply`].
    fn reverse(&self, x: &Self::Tensor, axes: &[usize]) -> Result<Self::Tensor, OpError> {
        self.apply(TensorOp::Reverse(axes.to_vec()), &[x])
    }

    /// `x` repeated along broadcast axes to `shape`.
    ///
    /// # Errors
    ///
    /// As [`Apply::apply`].
    fn broadcast_to(&self, x: &Self::Tensor, shape: &[usize]) -> Result<Self::Tensor, OpError> {
        self.apply(TensorOp::BroadcastTo(shape.to_vec()), &[x])
    }

    /// `x`'s axis `i` as axis `dims[i]` of a tensor of `shape` (of the
    /// same extent, or from extent 1), the other axes repeated
    /// (StableHLO's `broadcast_in_dim`; `dims` need not be sorted).
    ///
    /// # Errors
    ///
    /// As [`Apply::apply`]: a dimension out of range or given twice, an
    /// extent that does not fit.
    fn broadcast_in_dim(
        &self,
        x: &Self::Tensor,
        shape: &[usize],
        dims: &[usize],
    ) -> Result<Self::Tensor, OpError> {
        let op = TensorOp::BroadcastInDim {
            shape: shape.to_vec(),
            dims: dims.to_vec(),
        };
        self.apply(op, &[x])
    }

    /// The tensors joined along `axis`.
    ///
    /// # Errors
    ///
    /// As [`Apply::apply`].
    fn concatenate(&self, xs: &[&Self::Tensor], axis: usize) -> Result<Self::Tensor, OpError> {
        self.apply(
            TensorOp::Concatenate {
                axis,
                inputs: xs.len(),
            },
            xs,
        )
    }

    /// `x` padded with `value`, `(before, after)` per axis.
    ///
    /// # Errors
    ///
    /// As [`Apply::apply`].
    fn pad(
        &self,
        x: &Self::Tensor,
        widths: &[(usize, usize)],
        value: Scalar,
    ) -> Result<Self::Tensor, OpError> {
        self.apply(
            TensorOp::Pad {
                widths: widths.to_vec(),
                value,
            },
            &[x],
        )
    }

    /// The main diagonals of the last two axes: `[…, m, n]` →
    /// `[…, min(m, n)]`.
    ///
    /// # Errors
    ///
    /// As [`Apply::apply`]: `x` of rank below 2.
    fn diagonal(&self, x: &Self::Tensor) -> Result<Self::Tensor, OpError> {
        let r = self.shape(x)?.len().max(2);
        self.diagonal_axes(x, r - 2, r - 1)
    }

    /// The diagonals of axes `axis1` and `axis2` (NumPy's `diagonal`):
    /// the two axes removed, the diagonal last.
    ///
    /// # Errors
    ///
    /// As [`Apply::apply`]: `x` of rank below 2, an axis out of range, the
    /// same axis twice.
    fn diagonal_axes(
        &self,
        x: &Self::Tensor,
        axis1: usize,
        axis2: usize,
    ) -> Result<Self::Tensor, OpError> {
        self.apply(
            TensorOp::Diagonal {
                axes: [axis1, axis2],
            },
            &[x],
        )
    }

    /// Matrices with the last axis of `x` on their diagonals: `[…, n]` →
    /// `[…, n, n]`.
    ///
    /// # Errors
    ///
    /// As [`Apply::apply`]: a rank-0 `x`.
    fn diag_embed(&self, x: &Self::Tensor) -> Result<Self::Tensor, OpError> {
        let r = self.shape(x)?.len().max(1);
        self.diag_embed_axes(x, r - 1, r)
    }

    /// The last axis of `x` on the diagonals of output axes `dim1` and
    /// `dim2`, zeros elsewhere (PyTorch's `diag_embed`): the output has one
    /// more axis than `x`, and its other axes are `x`'s leading ones.
    ///
    /// # Errors
    ///
    /// As [`Apply::apply`]: a rank-0 `x`, an axis past the output's rank,
    /// the same axis twice.
    fn diag_embed_axes(
        &self,
        x: &Self::Tensor,
        dim1: usize,
        dim2: usize,
    ) -> Result<Self::Tensor, OpError> {
        self.apply(TensorOp::DiagEmbed { axes: [dim1, dim2] }, &[x])
    }

    /// The lower triangle (`j ≤ i + k`) of the last two axes.
    ///
    /// # Errors
    ///
    /// As [`Apply::apply`].
    fn tril(&self, x: &Self::Tensor, k: isize) -> Result<Self::Tensor, OpError> {
        self.apply(TensorOp::Triangle { k, upper: false }, &[x])
    }

    /// The upper triangle (`j ≥ i + k`) of the last two axes.
    ///
    /// # Errors
    ///
    /// As [`Apply::apply`].
    fn triu(&self, x: &Self::Tensor, k: isize) -> Result<Self::Tensor, OpError> {
        self.apply(TensorOp::Triangle { k, upper: true }, &[x])
    }
}

impl<T: Apply + ?Sized> StructuralOps for T {}
