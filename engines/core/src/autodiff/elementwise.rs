//! The rules of the elementwise ops.

use super::{conj_scalar, fit, Derivation, Pullback};
use crate::ops::{BinaryOp, CmpOp, Scalar, TensorOp, UnaryOp};
use crate::program::Value;
use crate::tensor::c64;

impl Derivation<'_> {
    /// The contributions of a step of the elementwise ops to its arguments,
    /// dispatched here by [`Derivation::pullback`].
    pub(super) fn elementwise(
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
            TensorOp::Binary(b) => {
                let (a, bb) = (args[0], args[1]);
                let (da, db) = match b {
                    BinaryOp::Add => (Some(g), Some(g)),
                    BinaryOp::Sub => (Some(g), Some(self.un(UnaryOp::Neg, g)?)),
                    BinaryOp::Mul => (
                        need[0].then(|| self.times_conj(g, bb)).transpose()?,
                        need[1].then(|| self.times_conj(g, a)).transpose()?,
                    ),
                    BinaryOp::Div => {
                        let da = self.conj(bb)?;
                        let da = self.bin(BinaryOp::Div, g, da)?;
                        let db = if need[1] {
                            // -(g / conj(b)) · conj(out)
                            let q = self.times_conj(da, out)?;
                            Some(self.un(UnaryOp::Neg, q)?)
                        } else {
                            None
                        };
                        (Some(da), db)
                    }
                    BinaryOp::Pow => {
                        let da = if need[0] {
                            // b · a^(b - 1)
                            let b1 = self.scalar(BinaryOp::Sub, bb, Scalar::Real(1.0))?;
                            let p = self.bin(BinaryOp::Pow, a, b1)?;
                            let d = self.bin(BinaryOp::Mul, bb, p)?;
                            Some(self.times_conj(g, d)?)
                        } else {
                            None
                        };
                        let db = if need[1] {
                            let l = self.un(UnaryOp::Log, a)?;
                            let d = self.bin(BinaryOp::Mul, out, l)?;
                            Some(self.times_conj(g, d)?)
                        } else {
                            None
                        };
                        (da, db)
                    }
                    BinaryOp::Maximum | BinaryOp::Minimum => {
                        let won = if *b == BinaryOp::Maximum {
                            CmpOp::Gt
                        } else {
                            CmpOp::Lt
                        };
                        let w = self.op(TensorOp::Compare(won), &[a, bb])?;
                        let tie = self.op(TensorOp::Compare(CmpOp::Eq), &[a, bb])?;
                        let w = self.mask(w, dtype)?;
                        let tie = self.mask(tie, dtype)?;
                        let half = self.scalar(BinaryOp::Mul, tie, Scalar::Real(0.5))?;
                        let wa = self.bin(BinaryOp::Add, w, half)?;
                        let wb = self.scalar_first(BinaryOp::Sub, Scalar::Real(1.0), wa)?;
                        (
                            Some(self.bin(BinaryOp::Mul, g, wa)?),
                            Some(self.bin(BinaryOp::Mul, g, wb)?),
                        )
                    }
                    BinaryOp::FloorDiv => (None, None),
                    BinaryOp::Rem => {
                        let db = if need[1] {
                            let q = self.bin(BinaryOp::FloorDiv, a, bb)?;
                            let q = self.bin(BinaryOp::Mul, g, q)?;
                            Some(self.un(UnaryOp::Neg, q)?)
                        } else {
                            None
                        };
                        (Some(g), db)
                    }
                    BinaryOp::And | BinaryOp::Or | BinaryOp::Xor => (None, None),
                };
                let da = da
                    .map(|v| self.unbroadcast(v, &shape(self, 0)))
                    .transpose()?;
                let db = db
                    .map(|v| self.unbroadcast(v, &shape(self, 1)))
                    .transpose()?;
                vec![da, db]
            }
            TensorOp::BinaryScalar {
                op: b,
                value,
                scalar_first,
            } => {
                let x = args[0];
                let conj = conj_scalar(*value);
                let d = match (b, scalar_first) {
                    (BinaryOp::Add, _) | (BinaryOp::Sub, false) => Some(g),
                    (BinaryOp::Sub, true) => Some(self.un(UnaryOp::Neg, g)?),
                    (BinaryOp::Mul, _) => Some(self.scalar(BinaryOp::Mul, g, conj)?),
                    (BinaryOp::Div, false) => Some(self.scalar(BinaryOp::Div, g, conj)?),
                    (BinaryOp::Div, true) => {
                        // d(s/x) = -s/x² = -out/x
                        let q = self.bin(BinaryOp::Div, out, x)?;
                        let q = self.times_conj(g, q)?;
                        Some(self.un(UnaryOp::Neg, q)?)
                    }
                    (BinaryOp::Pow, false) => {
                        // s · x^(s - 1)
                        let (re, im) = value.parts();
                        let less = Scalar::Complex(c64::new(re - 1.0, im));
                        let p = self.op(
                            TensorOp::BinaryScalar {
                                op: BinaryOp::Pow,
                                value: fit(less, dtype),
                                scalar_first: false,
                            },
                            &[x],
                        )?;
                        let d = self.scalar(BinaryOp::Mul, p, *value)?;
                        Some(self.times_conj(g, d)?)
                    }
                    (BinaryOp::Pow, true) => {
                        // out · ln s
                        let (re, im) = value.parts();
                        let ln = c64::new(re, im).ln();
                        let d = self.scalar(BinaryOp::Mul, out, fit(Scalar::Complex(ln), dtype))?;
                        Some(self.times_conj(g, d)?)
                    }
                    (BinaryOp::Maximum | BinaryOp::Minimum, _) => {
                        // Where x is the result (ties: half).
                        let s = self.full(dtype, Vec::new(), *value)?;
                        let eq = self.op(TensorOp::Compare(CmpOp::Eq), &[x, out])?;
                        let tie = self.op(TensorOp::Compare(CmpOp::Eq), &[x, s])?;
                        let eq = self.mask(eq, dtype)?;
                        let tie = self.mask(tie, dtype)?;
                        let half = self.scalar(BinaryOp::Mul, tie, Scalar::Real(0.5))?;
                        let w = self.bin(BinaryOp::Sub, eq, half)?;
                        Some(self.bin(BinaryOp::Mul, g, w)?)
                    }
                    (BinaryOp::FloorDiv, _) => None,
                    (BinaryOp::Rem, false) => Some(g),
                    (BinaryOp::Rem, true) => {
                        let s = self.full(dtype, Vec::new(), *value)?;
                        let q = self.bin(BinaryOp::FloorDiv, s, x)?;
                        let q = self.bin(BinaryOp::Mul, g, q)?;
                        Some(self.un(UnaryOp::Neg, q)?)
                    }
                    (BinaryOp::And | BinaryOp::Or | BinaryOp::Xor, _) => None,
                };
                vec![d]
            }
            TensorOp::Unary(u) => {
                let x = args[0];
                let d = match u {
                    UnaryOp::Neg => Some(self.un(UnaryOp::Neg, g)?),
                    UnaryOp::Conj => Some(self.conj(g)?),
                    UnaryOp::Exp => Some(self.times_conj(g, out)?),
                    UnaryOp::Expm1 => {
                        let d = self.scalar(BinaryOp::Add, out, Scalar::Real(1.0))?;
                        Some(self.times_conj(g, d)?)
                    }
                    UnaryOp::Log => {
                        let c = self.conj(x)?;
                        Some(self.bin(BinaryOp::Div, g, c)?)
                    }
                    UnaryOp::Log1p => {
                        let d = self.scalar(BinaryOp::Add, x, Scalar::Real(1.0))?;
                        let c = self.conj(d)?;
                        Some(self.bin(BinaryOp::Div, g, c)?)
                    }
                    UnaryOp::Sqrt => {
                        let d = self.scalar(BinaryOp::Mul, out, Scalar::Real(2.0))?;
                        let c = self.conj(d)?;
                        Some(self.bin(BinaryOp::Div, g, c)?)
                    }
                    UnaryOp::Rsqrt => {
                        // -out / (2x)
                        let q = self.bin(BinaryOp::Div, out, x)?;
                        let d = self.scalar(BinaryOp::Mul, q, Scalar::Real(-0.5))?;
                        Some(self.times_conj(g, d)?)
                    }
                    UnaryOp::Sin => {
                        let d = self.un(UnaryOp::Cos, x)?;
                        Some(self.times_conj(g, d)?)
                    }
                    UnaryOp::Cos => {
                        let s = self.un(UnaryOp::Sin, x)?;
                        let d = self.un(UnaryOp::Neg, s)?;
                        Some(self.times_conj(g, d)?)
                    }
                    UnaryOp::Tanh => {
                        let sq = self.bin(BinaryOp::Mul, out, out)?;
                        let d = self.scalar_first(BinaryOp::Sub, Scalar::Real(1.0), sq)?;
                        Some(self.times_conj(g, d)?)
                    }
                    UnaryOp::Abs if !self.meta(x).dtype.is_complex() => {
                        let s = self.un(UnaryOp::Sign, x)?;
                        Some(self.bin(BinaryOp::Mul, g, s)?)
                    }
                    UnaryOp::Abs => {
                        // z̄ = ḡ z/|z|, 0 at 0 (the real `sign`'s choice).
                        let complex = self.meta(x).dtype;
                        let zero = self.full(dtype, Vec::new(), Scalar::Real(0.0))?;
                        let at_zero = self.op(TensorOp::Compare(CmpOp::Eq), &[out, zero])?;
                        let size = self.op(TensorOp::Cast(complex), &[out])?;
                        let phase = self.bin(BinaryOp::Div, x, size)?;
                        let zero = self.full(complex, Vec::new(), Scalar::Real(0.0))?;
                        let phase = self.op(TensorOp::Select, &[at_zero, zero, phase])?;
                        let gc = self.op(TensorOp::Cast(complex), &[g])?;
                        Some(self.bin(BinaryOp::Mul, gc, phase)?)
                    }
                    UnaryOp::Sign | UnaryOp::Not => None,
                };
                vec![d]
            }
            TensorOp::Cast(to) => {
                let from = self.meta(args[0]).dtype;
                if !to.is_field() {
                    vec![None]
                } else {
                    vec![Some(self.op(TensorOp::Cast(from), &[g])?)]
                }
            }
            TensorOp::Select => {
                let (m, a, b) = (args[0], args[1], args[2]);
                let z = self.full(dtype, Vec::new(), Scalar::Real(0.0))?;
                let da = if need[1] {
                    let v = self.op(TensorOp::Select, &[m, g, z])?;
                    Some(self.unbroadcast(v, &self.meta(a).shape)?)
                } else {
                    None
                };
                let db = if need[2] {
                    let v = self.op(TensorOp::Select, &[m, z, g])?;
                    Some(self.unbroadcast(v, &self.meta(b).shape)?)
                } else {
                    None
                };
                vec![None, da, db]
            }
            TensorOp::Clamp { .. } | TensorOp::ClampBetween => {
                let x = args[0];
                let moved = self.op(TensorOp::Compare(CmpOp::Ne), &[x, out])?;
                let kept = self.op(TensorOp::Compare(CmpOp::Eq), &[x, out])?;
                let m = self.mask(kept, dtype)?;
                let d = self.bin(BinaryOp::Mul, g, m)?;
                let mut pulled = vec![Some(self.unbroadcast(d, &shape(self, 0))?)];
                if args.len() == 3 {
                    // The bound the result took where it is not `x`: `hi`
                    // where it equals `hi` (also where `lo > hi`), else `lo`.
                    let moved = self.mask(moved, dtype)?;
                    let at_hi = self.op(TensorOp::Compare(CmpOp::Eq), &[out, args[2]])?;
                    let at_hi = self.mask(at_hi, dtype)?;
                    let to_hi = self.bin(BinaryOp::Mul, moved, at_hi)?;
                    let to_lo = self.bin(BinaryOp::Sub, moved, to_hi)?;
                    for (k, to) in [(1, to_lo), (2, to_hi)] {
                        pulled.push(if need[k] {
                            let d = self.bin(BinaryOp::Mul, g, to)?;
                            Some(self.unbroadcast(d, &shape(self, k))?)
                        } else {
                            None
                        });
                    }
                }
                pulled
            }
            _ => unreachable!("pullback dispatches only the elementwise ops here"),
        })
    }
}
