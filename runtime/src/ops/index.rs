//! Indexing ops of a lane: gather and scatter along an axis, dynamic
//! slices, compression by a mask.

use weft_core::{ScatterMode, TensorEngine, TensorOp};

use crate::error::OpError;
use crate::handle::TensorHandle;
use crate::lane::Lane;

impl<E: TensorEngine> Lane<E> {
    /// `x` taken along `axis` at the integer tensor `indices` (NumPy's
    /// `take`; a negative index counts from the end).
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`]; an index out of range fails the op on the actor
    /// with `TensorError::Index`, naming it and the extent.
    pub fn gather(
        &self,
        x: &TensorHandle,
        indices: &TensorHandle,
        axis: usize,
    ) -> Result<TensorHandle, OpError> {
        self.apply(TensorOp::Gather { axis }, &[x, indices])
    }

    /// `x` with its slices along `axis` at `indices` set to `updates`
    /// (shaped as [`Lane::gather`] of the same indices would be); of
    /// duplicate indices the last wins.
    ///
    /// # Errors
    ///
    /// As [`Lane::gather`].
    pub fn scatter(
        &self,
        x: &TensorHandle,
        indices: &TensorHandle,
        updates: &TensorHandle,
        axis: usize,
    ) -> Result<TensorHandle, OpError> {
        self.scatter_mode(x, indices, updates, axis, ScatterMode::Set)
    }

    /// As [`Lane::scatter`], adding the updates (duplicate indices all
    /// add).
    ///
    /// # Errors
    ///
    /// As [`Lane::gather`]; `bool` tensors have no add.
    pub fn scatter_add(
        &self,
        x: &TensorHandle,
        indices: &TensorHandle,
        updates: &TensorHandle,
        axis: usize,
    ) -> Result<TensorHandle, OpError> {
        self.scatter_mode(x, indices, updates, axis, ScatterMode::Add)
    }

    fn scatter_mode(
        &self,
        x: &TensorHandle,
        indices: &TensorHandle,
        updates: &TensorHandle,
        axis: usize,
        mode: ScatterMode,
    ) -> Result<TensorHandle, OpError> {
        self.apply(TensorOp::Scatter { axis, mode }, &[x, indices, updates])
    }

    /// The window of `sizes` of `x` at the offsets in `starts` (a 1-D
    /// integer tensor, one per axis), each clamped as XLA's so that the
    /// window fits.
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`]: a size past its axis, starts of another shape.
    pub fn dynamic_slice(
        &self,
        x: &TensorHandle,
        starts: &TensorHandle,
        sizes: &[usize],
    ) -> Result<TensorHandle, OpError> {
        let sizes = sizes.to_vec();
        self.apply(TensorOp::DynamicSlice { sizes }, &[x, starts])
    }

    /// `x` with `update` written at the offsets in `starts`, clamped as
    /// [`Lane::dynamic_slice`]'s.
    ///
    /// # Errors
    ///
    /// As [`Lane::dynamic_slice`].
    pub fn dynamic_update_slice(
        &self,
        x: &TensorHandle,
        update: &TensorHandle,
        starts: &TensorHandle,
    ) -> Result<TensorHandle, OpError> {
        self.apply(TensorOp::DynamicUpdateSlice, &[x, update, starts])
    }

    /// The `len` elements of `x` where `mask` (a `bool` tensor of `x`'s
    /// shape) is `true`, as a 1-D tensor: `len` is the caller's, since a
    /// handle's shape is known when it is made (download the mask's `sum`
    /// to learn it).
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`]; a mask with another count fails the op on the
    /// actor with `TensorError::MaskCount`.
    pub fn compress(
        &self,
        x: &TensorHandle,
        mask: &TensorHandle,
        len: usize,
    ) -> Result<TensorHandle, OpError> {
        self.apply(TensorOp::Compress { len }, &[x, mask])
    }
}
