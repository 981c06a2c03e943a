//! The rules of the reductions.

use super::{Derivation, Pullback};
use crate::ops::{BinaryOp, CmpOp, ReduceOp, Scalar, TensorOp};
use crate::program::Value;

impl Derivation<'_> {
    /// The contributions of a step of the reductions to its arguments,
    /// dispatched here by [`Derivation::pullback`].
    pub(super) fn reduce(
        &mut self,
        op: &TensorOp,
        args: &[Value],
        out: Value,
        g: Value,
        _need: &[bool],
    ) -> Pullback {
        let shape = |d: &Self, i: usize| d.meta(args[i]).shape;
        let dtype = self.meta(out).dtype;
        Ok(match op {
            TensorOp::Reduce {
                op: r,
                axes,
                keep_dims: _,
            } => {
                let x = args[0];
                let xs = shape(self, 0);
                let (spread, kept) = self.spread(g, axes, &xs)?;
                let d = match r {
                    ReduceOp::Sum => spread,
                    ReduceOp::Mean => {
                        let n: usize = axes.iter().map(|&a| xs[a]).product();
                        self.scalar(BinaryOp::Div, spread, Scalar::Real(n as f64))?
                    }
                    ReduceOp::Max | ReduceOp::Min => {
                        // Split evenly among the elements equal to the result.
                        let o = self.op(TensorOp::Reshape(kept), &[out])?;
                        let eq = self.op(TensorOp::Compare(CmpOp::Eq), &[x, o])?;
                        let m = self.mask(eq, dtype)?;
                        let count = self.op(
                            TensorOp::Reduce {
                                op: ReduceOp::Sum,
                                axes: axes.clone(),
                                keep_dims: true,
                            },
                            &[m],
                        )?;
                        let share = self.bin(BinaryOp::Div, m, count)?;
                        self.bin(BinaryOp::Mul, spread, share)?
                    }
                    ReduceOp::Norm => {
                        // x / ‖x‖ (NaN where the norm is 0).
                        let o = self.op(TensorOp::Reshape(kept), &[out])?;
                        let o = self.op(TensorOp::Cast(self.meta(x).dtype), &[o])?;
                        let s = self.op(TensorOp::Cast(self.meta(x).dtype), &[spread])?;
                        let q = self.bin(BinaryOp::Div, x, o)?;
                        self.bin(BinaryOp::Mul, s, q)?
                    }
                    ReduceOp::Prod => {
                        // ∂/∂x_i = Π_{j≠i} x_j, zeros handled: with no zero
                        // in the product, P / x_i; with one, P' (the
                        // product of the others) at the zero and 0 elsewhere;
                        // with more, 0 everywhere. P' is the product with
                        // the zeros made ones.
                        let zero = self.full(dtype, Vec::new(), Scalar::Real(0.0))?;
                        let one = self.full(dtype, Vec::new(), Scalar::Real(1.0))?;
                        let is_zero = self.op(TensorOp::Compare(CmpOp::Eq), &[x, zero])?;
                        let z = self.mask(is_zero, dtype)?;
                        let sum = |axes: &Vec<usize>, op| TensorOp::Reduce {
                            op,
                            axes: axes.clone(),
                            keep_dims: true,
                        };
                        let zeros = self.op(sum(axes, ReduceOp::Sum), &[z])?;
                        let nonzero = self.op(TensorOp::Select, &[is_zero, one, x])?;
                        let p = self.op(sum(axes, ReduceOp::Prod), &[nonzero])?;
                        let none = self.op(TensorOp::Compare(CmpOp::Eq), &[zeros, zero])?;
                        let none = self.mask(none, dtype)?;
                        let single = self.op(TensorOp::Compare(CmpOp::Eq), &[zeros, one])?;
                        let single = self.mask(single, dtype)?;
                        let others = self.bin(BinaryOp::Div, p, nonzero)?;
                        let others = self.bin(BinaryOp::Mul, others, none)?;
                        let at_zero = self.bin(BinaryOp::Mul, z, p)?;
                        let at_zero = self.bin(BinaryOp::Mul, at_zero, single)?;
                        let d = self.bin(BinaryOp::Add, others, at_zero)?;
                        self.times_conj(spread, d)?
                    }
                    ReduceOp::Any | ReduceOp::All => return Ok(vec![None]),
                };
                vec![Some(d)]
            }
            _ => unreachable!("pullback dispatches only the reductions here"),
        })
    }
}
