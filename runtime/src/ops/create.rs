//! Ops of a lane that create tensors from nothing: constants, identities, ranges, random data.

use weft_core::{DType, Distribution, Scalar, TensorEngine, TensorOp};

use crate::error::OpError;
use crate::handle::TensorHandle;
use crate::lane::Lane;

impl<E: TensorEngine> Lane<E> {
    /// A tensor of `shape` with every element `value`.
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`]: a complex value for a real type.
    pub fn full(
        &self,
        dtype: DType,
        shape: &[usize],
        value: Scalar,
    ) -> Result<TensorHandle, OpError> {
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
    /// As [`Lane::apply`].
    pub fn zeros(&self, dtype: DType, shape: &[usize]) -> Result<TensorHandle, OpError> {
        self.full(dtype, shape, Scalar::Real(0.0))
    }

    /// A tensor of ones.
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`].
    pub fn ones(&self, dtype: DType, shape: &[usize]) -> Result<TensorHandle, OpError> {
        self.full(dtype, shape, Scalar::Real(1.0))
    }

    /// The `rows × cols` identity.
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`].
    pub fn eye(&self, dtype: DType, rows: usize, cols: usize) -> Result<TensorHandle, OpError> {
        self.apply(TensorOp::Eye { dtype, rows, cols }, &[])
    }

    /// `start + step * i` for `i` in `0..len` (real types).
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`]: a complex type.
    pub fn arange(
        &self,
        dtype: DType,
        start: f64,
        step: f64,
        len: usize,
    ) -> Result<TensorHandle, OpError> {
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
    /// As [`Lane::apply`].
    pub fn random(
        &self,
        dtype: DType,
        shape: &[usize],
        distribution: Distribution,
        seed: u64,
    ) -> Result<TensorHandle, OpError> {
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
