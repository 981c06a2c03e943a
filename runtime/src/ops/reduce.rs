//! Reductions of a lane: over axes, or over every element.

use weft_engines::{ReduceOp, TensorEngine, TensorOp};

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
}
