//! Reductions: over axes, or over every element.

use super::vocabulary::Apply;
use weft_core::{ArgOp, ReduceOp, TensorOp};

use crate::error::OpError;

/// Reductions: over axes, or over every element.
///
/// Provided for every [`Apply`]: a [`crate::Lane`] runs them, a
/// [`weft_core::Recorder`] records them.
pub trait ReduceOps: Apply {
    /// A reduction of `x` over `axes`; see [`Apply::apply`].
    ///
    /// # Errors
    ///
    /// As [`Apply::apply`]: an axis out of range or given twice, max/min of
    /// complex or empty tensors.
    fn reduce(
        &self,
        op: ReduceOp,
        x: &Self::Tensor,
        axes: &[usize],
        keep_dims: bool,
    ) -> Result<Self::Tensor, OpError> {
        let axes = axes.to_vec();
        self.apply(
            TensorOp::Reduce {
                op,
                axes,
                keep_dims,
            },
            &[x],
        )
    }

    /// The sum of `x` over `axes`, which are dropped.
    ///
    /// # Errors
    ///
    /// As [`ReduceOps::reduce`].
    fn sum(&self, x: &Self::Tensor, axes: &[usize]) -> Result<Self::Tensor, OpError> {
        self.reduce(ReduceOp::Sum, x, axes, false)
    }

    /// The sum of all elements of `x`, as a rank-0 tensor.
    ///
    /// # Errors
    ///
    /// As [`Apply::apply`].
    fn sum_all(&self, x: &Self::Tensor) -> Result<Self::Tensor, OpError> {
        let axes: Vec<usize> = (0..self.shape(x)?.len()).collect();
        self.reduce(ReduceOp::Sum, x, &axes, false)
    }

    /// The 2-norm of all elements of `x` (`√Σ|xᵢ|²`, real for a complex
    /// `x`), as a rank-0 tensor.
    ///
    /// # Errors
    ///
    /// As [`Apply::apply`].
    fn norm(&self, x: &Self::Tensor) -> Result<Self::Tensor, OpError> {
        let axes: Vec<usize> = (0..self.shape(x)?.len()).collect();
        self.reduce(ReduceOp::Norm, x, &axes, false)
    }

    /// Whether any element of `x` is nonzero (`true`), as a rank-0 `bool`.
    ///
    /// # Errors
    ///
    /// As [`Apply::apply`].
    fn any(&self, x: &Self::Tensor) -> Result<Self::Tensor, OpError> {
        let axes: Vec<usize> = (0..self.shape(x)?.len()).collect();
        self.reduce(ReduceOp::Any, x, &axes, false)
    }

    /// Whether every element of `x` is nonzero (`true`), as a rank-0
    /// `bool`.
    ///
    /// # Errors
    ///
    /// As [`Apply::apply`].
    fn all(&self, x: &Self::Tensor) -> Result<Self::Tensor, OpError> {
        let axes: Vec<usize> = (0..self.shape(x)?.len()).collect();
        self.reduce(ReduceOp::All, x, &axes, false)
    }

    /// The `i64` index of the largest element of `x` along `axis` (the
    /// first on ties, the first NaN if any).
    ///
    /// # Errors
    ///
    /// As [`Apply::apply`]: an axis out of range or of extent 0, a complex
    /// tensor.
    fn argmax(&self, x: &Self::Tensor, axis: usize) -> Result<Self::Tensor, OpError> {
        self.apply(
            TensorOp::ArgReduce {
                op: ArgOp::Max,
                axis,
                keep_dims: false,
            },
            &[x],
        )
    }

    /// The `i64` index of the smallest element of `x` along `axis`; see
    /// [`ReduceOps::argmax`].
    ///
    /// # Errors
    ///
    /// As [`ReduceOps::argmax`].
    fn argmin(&self, x: &Self::Tensor, axis: usize) -> Result<Self::Tensor, OpError> {
        self.apply(
            TensorOp::ArgReduce {
                op: ArgOp::Min,
                axis,
                keep_dims: false,
            },
            &[x],
        )
    }
}

impl<T: Apply + ?Sized> ReduceOps for T {}
