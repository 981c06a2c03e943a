//! Ops of a lane that create tensors from nothing: constants, identities, ranges, random data.

use super::vocabulary::Apply;
use weft_core::{DType, Distribution, Scalar, TensorOp};

use crate::error::OpError;

/// Ops that create tensors from nothing: constants, identities, ranges, random data.
///
/// Provided for every [`Apply`]: a [`crate::Lane`] runs them, a
/// [`weft_core::Recorder`] records them.
pub trait CreateOps: Apply {
    /// A tensor of `shape` with every element `value`.
    ///
    /// # Errors
    ///
    /// As [`Apply::apply`]: a complex value for a real type.
    fn full(&self, dtype: DType, shape: &[usize], value: Scalar) -> Result<Self::Tensor, OpError> {
        let shape = shape.to_vec();
        self.apply(
            TensorOp::Full {
                dtype,
                shape,
                value,
            },
            &[],
        )
    }

    /// A tensor of zeros.
    ///
    /// # Errors
    ///
    /// As [`Apply::apply`].
    fn zeros(&self, dtype: DType, shape: &[usize]) -> Result<Self::Tensor, OpError> {
        self.full(dtype, shape, Scalar::Real(0.0))
    }

    /// A tensor of ones.
    ///
    /// # Errors
    ///
    /// As [`Apply::apply`].
    fn ones(&self, dtype: DType, shape: &[usize]) -> Result<Self::Tensor, OpError> {
        self.full(dtype, shape, Scalar::Real(1.0))
    }

    /// The `rows × cols` identity.
    ///
    /// # Errors
    ///
    /// As [`Apply::apply`].
    fn eye(&self, dtype: DType, rows: usize, cols: usize) -> Result<Self::Tensor, OpError> {
        self.apply(TensorOp::Eye { dtype, rows, cols }, &[])
    }

    /// `start + step * i` for `i` in `0..len` (real types).
    ///
    /// # Errors
    ///
    /// As [`Apply::apply`]: a complex type.
    fn arange(
        &self,
        dtype: DType,
        start: f64,
        step: f64,
        len: usize,
    ) -> Result<Self::Tensor, OpError> {
        self.apply(
            TensorOp::Arange {
                dtype,
                start,
                step,
                len,
            },
            &[],
        )
    }

    /// A seeded random tensor: the same seed gives the same data on any
    /// domain.
    ///
    /// # Errors
    ///
    /// As [`Apply::apply`].
    fn random(
        &self,
        dtype: DType,
        shape: &[usize],
        distribution: Distribution,
        seed: u64,
    ) -> Result<Self::Tensor, OpError> {
        let shape = shape.to_vec();
        self.apply(
            TensorOp::Random {
                dtype,
                shape,
                distribution,
                seed,
            },
            &[],
        )
    }
}

impl<T: Apply + ?Sized> CreateOps for T {}
