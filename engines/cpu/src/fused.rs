//! Fused elementwise chains: a run of a program's elementwise steps over
//! one shape (each step's result read only by the next) computed in one
//! pass over memory, block by block, with no intermediate tensor.
//!
//! Each link applies the same function to each element as the step's own
//! kernel does, in the same order, so a fused chain's result is the
//! unfused one's bit for bit.

use rayon::prelude::*;

use super::buffer;
use super::parallel::PARALLEL_THRESHOLD;
use super::unary::Math;
use weft_core::ops::{BinaryOp, Scalar, TensorOp, UnaryOp};
use weft_core::{DType, Element, Field, Tensor, TensorError};

/// Elements a block holds: small enough to stay in L1 across the links.
const BLOCK: usize = 256;
/// Elements one parallel task computes.
const CHUNK: usize = 1 << 13;

/// One link of a chain, applied to the carried value `x`.
#[derive(Debug, Clone, Copy)]
pub(super) enum Link {
    /// `x op y` (or `y op x` when `carried_left` is false), `y` the
    /// chain's operand `operand`.
    Binary {
        op: BinaryOp,
        operand: usize,
        carried_left: bool,
    },
    /// `x op value` (or `value op x`).
    Scalar {
        op: BinaryOp,
        value: Scalar,
        scalar_first: bool,
    },
    /// `f(x)`.
    Unary(UnaryOp),
}

/// A chain: its operands (the chain's first is the value it starts from),
/// its links, and the type and shape of all of them.
#[derive(Debug, Clone)]
pub(super) struct Chain {
    pub(super) links: Vec<Link>,
    pub(super) dtype: DType,
    pub(super) shape: Vec<usize>,
}

/// Whether a binary op can be a link: one every element type has, whose
/// kernel is the plain elementwise function.
fn linkable(op: BinaryOp) -> bool {
    matches!(
        op,
        BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div | BinaryOp::Pow
    )
}

impl Link {
    /// The link `op` is, if it is one, given which of its arguments is the
    /// carried value (`carried`: its position) and the chain operand
    /// number its other argument would get.
    pub(super) fn of(op: &TensorOp, carried: usize, operand: usize) -> Option<Link> {
        match *op {
            TensorOp::Binary(op) if linkable(op) => Some(Link::Binary {
                op,
                operand,
                carried_left: carried == 0,
            }),
            TensorOp::BinaryScalar {
                op,
                value,
                scalar_first,
            } if linkable(op) => Some(Link::Scalar {
                op,
                value,
                scalar_first,
            }),
            // |z| of a complex value is real: not a link.
            TensorOp::Unary(op) if op != UnaryOp::Abs => Some(Link::Unary(op)),
            _ => None,
        }
    }
}

impl Chain {
    /// Runs the chain on `operands` (all of the chain's type and shape;
    /// the first is where it starts), spread over the current pool when
    /// `parallel` and the chain is large.
    ///
    /// # Errors
    ///
    /// [`TensorError::DType`] for an operand of another type (not
    /// expected: the chain was checked when it was recorded).
    pub(super) fn run(&self, operands: &[&Tensor], parallel: bool) -> Result<Tensor, TensorError> {
        let data = for_field!(self.dtype, |T| {
            let operands = slices::<T>(operands)?;
            let mut out = buffer::overwritten(operands[0].len());
            self.typed::<T>(&mut out, &operands, true, parallel);
            T::wrap(out)
        }, else unreachable!("chains are of floats and complexes"));
        Tensor::from_data(data, &self.shape)
    }

    /// Runs the chain in place: in `start`'s buffer, which it starts from
    /// (the caller's dead value, not one of `others`), `others` being the
    /// chain's other operands (1, 2, …). The result is [`Chain::run`]'s,
    /// bit for bit: the same links over the same values in the same order.
    ///
    /// # Errors
    ///
    /// As [`Chain::run`].
    pub(super) fn run_in_place(
        &self,
        start: Tensor,
        others: &[&Tensor],
        parallel: bool,
    ) -> Result<Tensor, TensorError> {
        let data = for_field!(self.dtype, |T| {
            let mut out = start.into_vec::<T>()?;
            // Operand 0 is `out` itself, which no link reads as an operand.
            let mut operands: smallvec::SmallVec<[&[T]; 4]> = smallvec::smallvec![&[][..]];
            operands.extend_from_slice(&slices::<T>(others)?);
            self.typed::<T>(&mut out, &operands, false, parallel);
            T::wrap(out)
        }, else unreachable!("chains are of floats and complexes"));
        Tensor::from_data(data, &self.shape)
    }

    /// Computes the chain into `out`, block by block: each block first
    /// copied from operand 0 when `copy_start` (else `out` already holds
    /// it), then every link applied to it.
    fn typed<T: Math + Field>(
        &self,
        out: &mut [T],
        operands: &[&[T]],
        copy_start: bool,
        parallel: bool,
    ) {
        let links: smallvec::SmallVec<[Typed<T>; 8]> =
            self.links.iter().map(|&l| Typed::of(l)).collect();
        let run = |start: usize, dst: &mut [T]| {
            for (b, block) in dst.chunks_mut(BLOCK).enumerate() {
                let at = start + b * BLOCK;
                if copy_start {
                    block.copy_from_slice(&operands[0][at..at + block.len()]);
                }
                for link in &links {
                    link.apply(block, operands, at);
                }
            }
        };
        if parallel && out.len() >= PARALLEL_THRESHOLD {
            out.par_chunks_mut(CHUNK)
                .enumerate()
                .for_each(|(c, dst)| run(c * CHUNK, dst));
        } else {
            run(0, out);
        }
    }
}

/// The operands' elements, all of type `T`.
fn slices<'a, T: Field>(
    operands: &[&'a Tensor],
) -> Result<smallvec::SmallVec<[&'a [T]; 4]>, TensorError> {
    operands.iter().map(|t| t.as_slice::<T>()).collect()
}

/// A link with its scalar in the element type.
#[derive(Clone, Copy)]
enum Typed<T> {
    Binary {
        op: BinaryOp,
        operand: usize,
        carried_left: bool,
    },
    Scalar {
        op: BinaryOp,
        value: T,
        scalar_first: bool,
    },
    Unary(UnaryOp),
}

impl<T: Math + Field> Typed<T> {
    fn of(link: Link) -> Typed<T> {
        match link {
            Link::Binary {
                op,
                operand,
                carried_left,
            } => Typed::Binary {
                op,
                operand,
                carried_left,
            },
            Link::Scalar {
                op,
                value,
                scalar_first,
            } => {
                // As the scalar kernel converts it (a full tensor of it).
                let (re, im) = value.parts();
                Typed::Scalar {
                    op,
                    value: T::from_parts(re, im),
                    scalar_first,
                }
            }
            Link::Unary(op) => Typed::Unary(op),
        }
    }

    /// Applies the link to `block`, whose first element is element `at`.
    fn apply(&self, block: &mut [T], operands: &[&[T]], at: usize) {
        match *self {
            Typed::Binary {
                op,
                operand,
                carried_left,
            } => {
                let other = &operands[operand][at..at + block.len()];
                each(op, block, other.iter().copied(), !carried_left);
            }
            Typed::Scalar {
                op,
                value,
                scalar_first,
            } => {
                each(
                    op,
                    block,
                    std::iter::repeat_n(value, block.len()),
                    scalar_first,
                );
            }
            Typed::Unary(op) => {
                for x in block {
                    *x = x.map(op);
                }
            }
        }
    }
}

/// `x = x op y` over the block (`y op x` when `swap`), `y` from `other`.
fn each<T: Field>(op: BinaryOp, block: &mut [T], other: impl Iterator<Item = T>, swap: bool) {
    match op {
        BinaryOp::Add => apply(block, other, swap, |a, b| a + b),
        BinaryOp::Sub => apply(block, other, swap, |a, b| a - b),
        BinaryOp::Mul => apply(block, other, swap, |a, b| a * b),
        BinaryOp::Div => apply(block, other, swap, |a, b| a / b),
        BinaryOp::Pow => apply(block, other, swap, |a: T, b: T| a.pow(b)),
        _ => unreachable!("not a link"),
    }
}

/// One loop per op and order, so each is compiled (and vectorized) alone.
#[inline]
fn apply<T: Copy>(
    block: &mut [T],
    other: impl Iterator<Item = T>,
    swap: bool,
    f: impl Fn(T, T) -> T,
) {
    if swap {
        for (x, y) in block.iter_mut().zip(other) {
            *x = f(y, *x);
        }
    } else {
        for (x, y) in block.iter_mut().zip(other) {
            *x = f(*x, y);
        }
    }
}
