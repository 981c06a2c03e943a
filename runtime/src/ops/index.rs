//! Indexing ops: gather and scatter along an axis, dynamic
//! slices, compression by a mask.

use super::vocabulary::Apply;
use weft_core::{ScatterMode, TensorOp};

use crate::error::OpError;

/// Indexed reads and writes: gathers, scatters, dynamic slices, compress.
///
/// Provided for every [`Apply`]: a [`crate::Lane`] runs them, a
/// [`weft_core::Recorder`] records them.
pub trait IndexOps: Apply {
    /// `x` taken along `axis` at the integer tensor `indices` (NumPy's
    /// `take`; a negative index counts from the end).
    ///
    /// # Errors
    ///
    /// As [`Apply::apply`]; an index out of range fails the op on the actor
    /// with `TensorError::Index`, naming it and the extent.
    fn gather(
        &self,
        x: &Self::Tensor,
        indices: &Self::Tensor,
        axis: usize,
    ) -> Result<Self::Tensor, OpError> {
        self.apply(TensorOp::Gather { axis }, &[x, indices])
    }

    /// `x` with its slices along `axis` at `indices` set to `updates`
    /// (shaped as [`IndexOps::gather`] of the same indices would be); of
    /// duplicate indices the last wins.
    ///
    /// # Errors
    ///
    /// As [`IndexOps::gather`].
    fn scatter(
        &self,
        x: &Self::Tensor,
        indices: &Self::Tensor,
        updates: &Self::Tensor,
        axis: usize,
    ) -> Result<Self::Tensor, OpError> {
        self.scatter_mode(x, indices, updates, axis, ScatterMode::Set)
    }

    /// As [`IndexOps::scatter`], adding the updates (duplicate indices all
    /// add).
    ///
    /// # Errors
    ///
    /// As [`IndexOps::gather`]; `bool` tensors have no add.
    fn scatter_add(
        &self,
        x: &Self::Tensor,
        indices: &Self::Tensor,
        updates: &Self::Tensor,
        axis: usize,
    ) -> Result<Self::Tensor, OpError> {
        self.scatter_mode(x, indices, updates, axis, ScatterMode::Add)
    }

    /// As [`IndexOps::scatter`], combining each update with the element
    /// it lands on as `mode` says.
    ///
    /// # Errors
    ///
    /// As [`IndexOps::scatter`] and [`IndexOps::scatter_add`].
    fn scatter_mode(
        &self,
        x: &Self::Tensor,
        indices: &Self::Tensor,
        updates: &Self::Tensor,
        axis: usize,
        mode: ScatterMode,
    ) -> Result<Self::Tensor, OpError> {
        self.apply(TensorOp::Scatter { axis, mode }, &[x, indices, updates])
    }

    /// The window of `sizes` of `x` at the offsets in `starts` (a 1-D
    /// integer tensor, one per axis), each clamped as XLA's so that the
    /// window fits.
    ///
    /// # Errors
    ///
    /// As [`Apply::apply`]: a size past its axis, starts of another shape.
    fn dynamic_slice(
        &self,
        x: &Self::Tensor,
        starts: &Self::Tensor,
        sizes: &[usize],
    ) -> Result<Self::Tensor, OpError> {
        let sizes = sizes.to_vec();
        self.apply(TensorOp::DynamicSlice { sizes }, &[x, starts])
    }

    /// `x` with `update` written at the offsets in `starts`, clamped as
    /// [`IndexOps::dynamic_slice`]'s.
    ///
    /// # Errors
    ///
    /// As [`IndexOps::dynamic_slice`].
    fn dynamic_update_slice(
        &self,
        x: &Self::Tensor,
        update: &Self::Tensor,
        starts: &Self::Tensor,
    ) -> Result<Self::Tensor, OpError> {
        self.apply(TensorOp::DynamicUpdateSlice, &[x, update, starts])
    }

    /// The `len` elements of `x` where `mask` (a `bool` tensor of `x`'s
    /// shape) is `true`, as a 1-D tensor: `len` is the caller's, since a
    /// handle's shape is known when it is made (download the mask's `sum`
    /// to learn it).
    ///
    /// # Errors
    ///
    /// As [`Apply::apply`]; a mask with another count fails the op on the
    /// actor with `TensorError::MaskCount`.
    fn compress(
        &self,
        x: &Self::Tensor,
        mask: &Self::Tensor,
        len: usize,
    ) -> Result<Self::Tensor, OpError> {
        self.apply(TensorOp::Compress { len }, &[x, mask])
    }
}

impl<T: Apply + ?Sized> IndexOps for T {}
