//! Reductions of a lane: over axes, or over every element.

use weft_core::{ArgOp, ReduceOp, TensorEngine, TensorOp};

use crate::error::OpError;
use crate::handle::TensorHandle;
use crate::lane::Lane;

impl<E: TensorEngine> Lane<E> {
    /// A reduction of `x` over `axes`; see [`Lane::apply`].
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`]: an axis out of range or given twice, max/min of
    /// complex or empty tensors.
    pub fn reduce(
        &self,
        op: ReduceOp,
        x: &TensorHandle,
        axes: &[usize],
        keep_dims: bool,
    ) -> Result<TensorHandle, OpError> {
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

    /// The sum of all elements of `x`, as a rank-0 tensor.
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`].
    pub fn sum_all(&self, x: &TensorHandle) -> Result<TensorHandle, OpError> {
        let axes: Vec<usize> = (0..x.shape().len()).collect();
        self.reduce(ReduceOp::Sum, x, &axes, false)
    }

    /// Whether any element of `x` is nonzero (`true`), as a rank-0 `bool`.
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`].
    pub fn any(&self, x: &TensorHandle) -> Result<TensorHandle, OpError> {
        let axes: Vec<usize> = (0..x.shape().len()).collect();
        self.reduce(ReduceOp::Any, x, &axes, false)
    }

    /// Whether every element of `x` is nonzero (`true`), as a rank-0
    /// `bool`.
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`].
    pub fn all(&self, x: &TensorHandle) -> Result<TensorHandle, OpError> {
        let axes: Vec<usize> = (0..x.shape().len()).collect();
        self.reduce(ReduceOp::All, x, &axes, false)
    }

    /// The `i64` index of the largest element of `x` along `axis` (the
    /// first on ties, the first NaN if any).
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`]: an axis out of range or of extent 0, a complex
    /// tensor.
    pub fn argmax(&self, x: &TensorHandle, axis: usize) -> Result<TensorHandle, OpError> {
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
    /// [`Lane::argmax`].
    ///
    /// # Errors
    ///
    /// As [`Lane::argmax`].
    pub fn argmin(&self, x: &TensorHandle, axis: usize) -> Result<TensorHandle, OpError> {
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
