//! The rules of the structural ops.

use super::{Derivation, Pullback};
use crate::ops::{ReduceOp, Scalar, SliceAxis, TensorOp};
use crate::program::Value;

impl Derivation<'_> {
    /// The contributions of a step of the structural ops to its arguments,
    /// dispatched here by [`Derivation::pullback`].
    pub(super) fn structural(
        &mut self,
        op: &TensorOp,
        args: &[Value],
        out: Value,
        g: Value,
        need: &[bool],
    ) -> Pullback {
        let shape = |d: &Self, i: usize| d.meta(args[i]).shape;
        let _dtype = self.meta(out).dtype;
        Ok(match op {
            TensorOp::Reshape(_) => {
                vec![Some(self.op(TensorOp::Reshape(shape(self, 0)), &[g])?)]
            }
            TensorOp::Permute(perm) => {
                let mut inverse = vec![0; perm.len()];
                for (i, &p) in perm.iter().enumerate() {
                    inverse[p] = i;
                }
                vec![Some(self.op(TensorOp::Permute(inverse), &[g])?)]
            }
            TensorOp::BroadcastTo(_) => vec![Some(self.unbroadcast(g, &shape(self, 0))?)],
            TensorOp::BroadcastInDim { dims, .. } => {
                // Sum over the axes not mapped and those repeated from 1.
                let from = shape(self, 0);
                let out_shape = self.meta(g).shape;
                let axes: Vec<usize> = (0..out_shape.len())
                    .filter(|k| match dims.iter().position(|d| d == k) {
                        None => true,
                        Some(i) => from[i] == 1 && out_shape[*k] != 1,
                    })
                    .collect();
                let summed = self.op(
                    TensorOp::Reduce {
                        op: ReduceOp::Sum,
                        axes: axes.clone(),
                        keep_dims: true,
                    },
                    &[g],
                )?;
                // The mapped axes, in the input's order.
                let mut order: Vec<usize> = (0..dims.len()).collect();
                order.sort_by_key(|&i| dims[i]);
                let mut perm = vec![0; dims.len()];
                for (pos, &i) in order.iter().enumerate() {
                    perm[i] = pos;
                }
                let kept: Vec<usize> = {
                    let mut sorted = dims.clone();
                    sorted.sort_unstable();
                    sorted
                        .iter()
                        .map(|&d| if axes.contains(&d) { 1 } else { out_shape[d] })
                        .collect()
                };
                let squeezed = self.op(TensorOp::Reshape(kept), &[summed])?;
                let placed = self.op(TensorOp::Permute(perm), &[squeezed])?;
                vec![Some(self.op(TensorOp::Reshape(from), &[placed])?)]
            }
            TensorOp::Reverse(axes) => vec![Some(self.op(TensorOp::Reverse(axes.clone()), &[g])?)],
            TensorOp::Slice(axes) => vec![Some(self.unslice(axes, g, &shape(self, 0))?)],
            TensorOp::Pad { widths, .. } => {
                let from = shape(self, 0);
                let axes = widths
                    .iter()
                    .zip(&from)
                    .map(|(&(before, _), &n)| SliceAxis {
                        start: before,
                        stop: before + n,
                        step: 1,
                    })
                    .collect();
                vec![Some(self.op(TensorOp::Slice(axes), &[g])?)]
            }
            TensorOp::Concatenate { axis, .. } => {
                let full = self.meta(g).shape;
                let mut at = 0;
                let mut parts = Vec::with_capacity(args.len());
                for (i, &needed) in need.iter().enumerate() {
                    let n = shape(self, i)[*axis];
                    let axes = (0..full.len())
                        .map(|k| {
                            if k == *axis {
                                SliceAxis {
                                    start: at,
                                    stop: at + n,
                                    step: 1,
                                }
                            } else {
                                SliceAxis::ALL
                            }
                        })
                        .collect();
                    at += n;
                    parts.push(
                        needed
                            .then(|| self.op(TensorOp::Slice(axes), &[g]))
                            .transpose()?,
                    );
                }
                parts
            }
            TensorOp::Triangle { k, upper } => vec![Some(self.op(
                TensorOp::Triangle {
                    k: *k,
                    upper: *upper,
                },
                &[g],
            )?)],
            TensorOp::DiagEmbed { axes } => {
                vec![Some(self.op(TensorOp::Diagonal { axes: *axes }, &[g])?)]
            }
            TensorOp::Diagonal { axes } => {
                // The diagonal put back, zeros elsewhere, padded to the
                // input's extents where they differ.
                let from = shape(self, 0);
                let e = self.op(TensorOp::DiagEmbed { axes: *axes }, &[g])?;
                let got = self.meta(e).shape;
                let d = if got == from {
                    e
                } else {
                    let widths = from.iter().zip(&got).map(|(&n, &k)| (0, n - k)).collect();
                    self.op(
                        TensorOp::Pad {
                            widths,
                            value: Scalar::Real(0.0),
                        },
                        &[e],
                    )?
                };
                vec![Some(d)]
            }
            _ => unreachable!("pullback dispatches only the structural ops here"),
        })
    }
}
