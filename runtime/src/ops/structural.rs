//! Structural ops of a lane: shapes, axes, slices, joins, pads, diagonals, triangles.

use weft_core::{Scalar, TensorEngine, TensorOp};

use crate::error::OpError;
use crate::handle::TensorHandle;
use crate::lane::Lane;
use weft_core::SliceAxis;

impl<E: TensorEngine> Lane<E> {
    /// `x` with shape `shape`; see [`Lane::apply`].
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`]: a shape with another element count.
    pub fn reshape(&self, x: &TensorHandle, shape: &[usize]) -> Result<TensorHandle, OpError> {
        self.apply(TensorOp::Reshape(shape.to_vec()), &[x])
    }

    /// `x` with axes reordered: output axis `i` is input axis `perm[i]`.
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`]: not a permutation of the axes.
    pub fn permute(&self, x: &TensorHandle, perm: &[usize]) -> Result<TensorHandle, OpError> {
        self.apply(TensorOp::Permute(perm.to_vec()), &[x])
    }

    /// `x` with its last two axes swapped.
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`]: fewer than two axes.
    pub fn transpose(&self, x: &TensorHandle) -> Result<TensorHandle, OpError> {
        let rank = x.shape().len();
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
    /// As [`Lane::apply`]: a range per axis, steps of at least 1, starts
    /// within the extents.
    pub fn slice(&self, x: &TensorHandle, axes: &[SliceAxis]) -> Result<TensorHandle, OpError> {
        self.apply(TensorOp::Slice(axes.to_vec()), &[x])
    }

    /// `x` reversed along `axes`.
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`].
    pub fn reverse(&self, x: &TensorHandle, axes: &[usize]) -> Result<TensorHandle, OpError> {
        self.apply(TensorOp::Reverse(axes.to_vec()), &[x])
    }

    /// `x` repeated along broadcast axes to `shape`.
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`].
    pub fn broadcast_to(&self, x: &TensorHandle, shape: &[usize]) -> Result<TensorHandle, OpError> {
        self.apply(TensorOp::BroadcastTo(shape.to_vec()), &[x])
    }

    /// `x`'s axis `i` as axis `dims[i]` of a tensor of `shape` (of the
    /// same extent, or from extent 1), the other axes repeated
    /// (StableHLO's `broadcast_in_dim`; `dims` need not be sorted).
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`]: a dimension out of range or given twice, an
    /// extent that does not fit.
    pub fn broadcast_in_dim(
        &self,
        x: &TensorHandle,
        shape: &[usize],
        dims: &[usize],
    ) -> Result<TensorHandle, OpError> {
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
    /// As [`Lane::apply`].
    pub fn concatenate(&self, xs: &[&TensorHandle], axis: usize) -> Result<TensorHandle, OpError> {
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
    /// As [`Lane::apply`].
    pub fn pad(
        &self,
        x: &TensorHandle,
        widths: &[(usize, usize)],
        value: Scalar,
    ) -> Result<TensorHandle, OpError> {
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
    /// As [`Lane::apply`]: `x` of rank below 2.
    pub fn diagonal(&self, x: &TensorHandle) -> Result<TensorHandle, OpError> {
        let r = x.shape().len().max(2);
        self.diagonal_axes(x, r - 2, r - 1)
    }

    /// The diagonals of axes `axis1` and `axis2` (NumPy's `diagonal`):
    /// the two axes removed, the diagonal last.
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`]: `x` of rank below 2, an axis out of range, the
    /// same axis twice.
    pub fn diagonal_axes(
        &self,
        x: &TensorHandle,
        axis1: usize,
        axis2: usize,
    ) -> Result<TensorHandle, OpError> {
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
    /// As [`Lane::apply`]: a rank-0 `x`.
    pub fn diag_embed(&self, x: &TensorHandle) -> Result<TensorHandle, OpError> {
        let r = x.shape().len().max(1);
        self.diag_embed_axes(x, r - 1, r)
    }

    /// The last axis of `x` on the diagonals of output axes `dim1` and
    /// `dim2`, zeros elsewhere (PyTorch's `diag_embed`): the output has one
    /// more axis than `x`, and its other axes are `x`'s leading ones.
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`]: a rank-0 `x`, an axis past the output's rank,
    /// the same axis twice.
    pub fn diag_embed_axes(
        &self,
        x: &TensorHandle,
        dim1: usize,
        dim2: usize,
    ) -> Result<TensorHandle, OpError> {
        self.apply(TensorOp::DiagEmbed { axes: [dim1, dim2] }, &[x])
    }

    /// The lower triangle (`j ≤ i + k`) of the last two axes.
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`].
    pub fn tril(&self, x: &TensorHandle, k: isize) -> Result<TensorHandle, OpError> {
        self.apply(TensorOp::Triangle { k, upper: false }, &[x])
    }

    /// The upper triangle (`j ≥ i + k`) of the last two axes.
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`].
    pub fn triu(&self, x: &TensorHandle, k: isize) -> Result<TensorHandle, OpError> {
        self.apply(TensorOp::Triangle { k, upper: true }, &[x])
    }
}
