//! The rules of the indexing ops.

use super::{Derivation, Missing, Pullback};
use crate::ops::{CmpOp, Scalar, ScatterMode, TensorOp};
use crate::program::Value;
use crate::tensor::DType;

impl Derivation<'_> {
    /// The contributions of a step of the indexing ops to its arguments,
    /// dispatched here by [`Derivation::pullback`].
    pub(super) fn index(
        &mut self,
        op: &TensorOp,
        args: &[Value],
        out: Value,
        g: Value,
        need: &[bool],
    ) -> Pullback {
        let shape = |d: &Self, i: usize| d.meta(args[i]).shape;
        let dtype = self.meta(out).dtype;
        Ok(match op {
            TensorOp::Gather { axis } => {
                let zeros = self.zeros_like(args[0])?;
                let d = self.op(
                    TensorOp::Scatter {
                        axis: *axis,
                        mode: ScatterMode::Add,
                    },
                    &[zeros, args[1], g],
                )?;
                vec![Some(d), None]
            }
            TensorOp::Scatter { axis, mode } => {
                let (idx, updates) = (args[1], args[2]);
                let dx = match mode {
                    ScatterMode::Add => g,
                    ScatterMode::Set => {
                        let z = self.zeros_like(updates)?;
                        self.op(
                            TensorOp::Scatter {
                                axis: *axis,
                                mode: ScatterMode::Set,
                            },
                            &[g, idx, z],
                        )?
                    }
                };
                let du = if need[2] {
                    let taken = self.op(TensorOp::Gather { axis: *axis }, &[g, idx])?;
                    Some(match mode {
                        ScatterMode::Add => taken,
                        // An update another one overwrote reached nothing.
                        ScatterMode::Set => {
                            let extent = shape(self, 0)[*axis];
                            let won = self.last_writers(idx, extent)?;
                            let shape = self.meta(taken).shape;
                            let rank = self.meta(idx).shape.len();
                            let won = self.op(
                                TensorOp::BroadcastInDim {
                                    shape,
                                    dims: (*axis..*axis + rank).collect(),
                                },
                                &[won],
                            )?;
                            let zeros = self.zeros_like(taken)?;
                            self.op(TensorOp::Select, &[won, taken, zeros])?
                        }
                    })
                } else {
                    None
                };
                vec![Some(dx), None, du]
            }
            TensorOp::DynamicSlice { .. } => {
                let zeros = self.zeros_like(args[0])?;
                let d = self.op(TensorOp::DynamicUpdateSlice, &[zeros, g, args[1]])?;
                vec![Some(d), None]
            }
            TensorOp::DynamicUpdateSlice => {
                let (update, starts) = (args[1], args[2]);
                let dx = if need[0] {
                    let z = self.zeros_like(update)?;
                    Some(self.op(TensorOp::DynamicUpdateSlice, &[g, z, starts])?)
                } else {
                    None
                };
                let du = if need[1] {
                    let sizes = self.meta(update).shape;
                    Some(self.op(TensorOp::DynamicSlice { sizes }, &[g, starts])?)
                } else {
                    None
                };
                vec![dx, du, None]
            }
            TensorOp::Compress { len } => {
                // The flat positions taken (the compress of their numbers),
                // and the cotangent added there.
                let from = shape(self, 0);
                let total: usize = from.iter().product();
                let numbers = self.numbers(from.clone())?;
                let taken = self.op(TensorOp::Compress { len: *len }, &[numbers, args[1]])?;
                let zeros = self.full(dtype, vec![total], Scalar::Real(0.0))?;
                let added = self.op(
                    TensorOp::Scatter {
                        axis: 0,
                        mode: ScatterMode::Add,
                    },
                    &[zeros, taken, g],
                )?;
                vec![Some(self.op(TensorOp::Reshape(from), &[added])?), None]
            }
            _ => unreachable!("pullback dispatches only the indexing ops here"),
        })
    }

    /// The row-major numbers of the elements of `shape` (`i64`, in that
    /// shape).
    fn numbers(&mut self, shape: Vec<usize>) -> Result<Value, Missing> {
        let len = shape.iter().product();
        let numbers = self.op(
            TensorOp::Arange {
                dtype: DType::I64,
                start: 0.0,
                step: 1.0,
                len,
            },
            &[],
        )?;
        self.op(TensorOp::Reshape(shape), &[numbers])
    }

    /// Which entries of the index tensor `idx` (along an axis of `extent`)
    /// write last to their position in a scatter that sets, the last in
    /// row-major order winning: a `bool` tensor of `idx`'s shape. Each
    /// entry's number is set at its position; an entry won if its
    /// position holds its number afterwards.
    fn last_writers(&mut self, idx: Value, extent: usize) -> Result<Value, Missing> {
        let numbers = self.numbers(self.meta(idx).shape)?;
        let unset = self.full(DType::I64, vec![extent], Scalar::Int(-1))?;
        let last = self.op(
            TensorOp::Scatter {
                axis: 0,
                mode: ScatterMode::Set,
            },
            &[unset, idx, numbers],
        )?;
        let at = self.op(TensorOp::Gather { axis: 0 }, &[last, idx])?;
        self.op(TensorOp::Compare(CmpOp::Eq), &[at, numbers])
    }
}
