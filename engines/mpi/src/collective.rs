//! The collectives: what each computes, the reductions MPI runs them
//! with, and the signature every rank's call must agree on.

use std::fmt;

use weft_core::{element_count, DType};

use crate::wire::dtype_code;
use crate::{MpiError, MpiOp};

/// A reduction over the ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reduction {
    /// The sum (integers wrap, as MPI's do).
    Sum,
    /// The product.
    Prod,
    /// The largest (for `Bool`: any).
    Max,
    /// The smallest (for `Bool`: all).
    Min,
}

impl fmt::Display for Reduction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Reduction::Sum => "sum",
            Reduction::Prod => "prod",
            Reduction::Max => "max",
            Reduction::Min => "min",
        })
    }
}

/// A collective operation over every rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Collective {
    /// Every rank gets the reduction of every rank's tensor.
    Allreduce(Reduction),
    /// Every rank gets `root`'s tensor (the others give one of its type
    /// and shape).
    Broadcast {
        /// The rank whose tensor is sent.
        root: usize,
    },
    /// Every rank gets every rank's tensor, stacked along a new first
    /// axis in rank order.
    Allgather,
    /// The reduction, split along the first axis into one block per rank;
    /// each rank gets its own block.
    ReduceScatter(Reduction),
    /// Every rank waits for every other.
    Barrier,
}

impl Collective {
    /// Its name in errors.
    pub fn name(self) -> &'static str {
        match self {
            Collective::Allreduce(_) => "allreduce",
            Collective::Broadcast { .. } => "broadcast",
            Collective::Allgather => "allgather",
            Collective::ReduceScatter(_) => "reduce_scatter",
            Collective::Barrier => "barrier",
        }
    }

    /// The type and shape of its result on `ranks` ranks for an input of
    /// `dtype` and `shape` (none for a barrier), or why it cannot run.
    ///
    /// # Errors
    ///
    /// [`MpiError::Unsupported`], [`MpiError::Indivisible`],
    /// [`MpiError::NoSuchRank`] (a broadcast's root), [`MpiError::TooLarge`].
    pub fn output(
        self,
        dtype: DType,
        shape: &[usize],
        ranks: usize,
    ) -> Result<Option<Vec<usize>>, MpiError> {
        let op = self.name();
        let n = element_count(shape).ok_or(MpiError::TooLarge {
            op,
            count: usize::MAX,
        })?;
        let out = match self {
            Collective::Barrier => return Ok(None),
            Collective::Allreduce(r) | Collective::ReduceScatter(r) => {
                mpi_op(op, r, dtype)?;
                if let Collective::ReduceScatter(_) = self {
                    match shape.first() {
                        Some(&lead) if ranks > 0 && lead % ranks == 0 => {
                            let mut out = shape.to_vec();
                            out[0] = lead / ranks;
                            out
                        }
                        _ => {
                            return Err(MpiError::Indivisible {
                                shape: shape.to_vec(),
                                ranks,
                            })
                        }
                    }
                } else {
                    shape.to_vec()
                }
            }
            Collective::Broadcast { root } => {
                if root >= ranks {
                    return Err(MpiError::NoSuchRank { rank: root, ranks });
                }
                shape.to_vec()
            }
            Collective::Allgather => {
                let total = n.checked_mul(ranks).ok_or(MpiError::TooLarge {
                    op,
                    count: usize::MAX,
                })?;
                if i32::try_from(total).is_err() {
                    return Err(MpiError::TooLarge { op, count: total });
                }
                std::iter::once(ranks)
                    .chain(shape.iter().copied())
                    .collect()
            }
        };
        if i32::try_from(n).is_err() {
            return Err(MpiError::TooLarge { op, count: n });
        }
        Ok(Some(out))
    }

    /// The words that every rank's call must agree on, one per thing a
    /// call can disagree on, in the order [`disagreement`] names them: the
    /// collective, its argument (reduction or root), the element type (0
    /// for none) and a hash of the shape (0 for none).
    pub(crate) fn signature(self, input: Option<(DType, &[usize])>) -> [u64; SIGNATURE_WORDS] {
        let (kind, arg) = match self {
            Collective::Allreduce(r) => (1, r as u64),
            Collective::Broadcast { root } => (2, root as u64),
            Collective::Allgather => (3, 0),
            Collective::ReduceScatter(r) => (4, r as u64),
            Collective::Barrier => (5, 0),
        };
        let Some((dtype, shape)) = input else {
            return [kind, arg, 0, 0];
        };
        // FNV-1a over the rank and extents: the same in every process of
        // the job, and never 0 (which stands for no tensor) but by chance.
        let shape_hash = std::iter::once(shape.len())
            .chain(shape.iter().copied())
            .flat_map(|w| (w as u64).to_le_bytes())
            .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
            });
        [kind, arg, dtype_code(dtype) + 1, shape_hash]
    }
}

/// The words of a signature.
pub(crate) const SIGNATURE_WORDS: usize = 4;

/// What a rank that withdraws from a collective gives in place of its
/// signature: a kind no collective has, and the greatest, so that every
/// rank's maximum shows it.
pub(crate) const WITHDRAWN: [u64; SIGNATURE_WORDS] = [u64::MAX; SIGNATURE_WORDS];

/// What the ranks disagree on, from this rank's signature `mine` and the
/// maxima over the ranks of each word (`max`) and of each word's
/// complement (`max_not`, whose complement is the minimum): `None` when
/// every rank gave `mine`. Names the first word that differs, with the
/// least and the greatest value the ranks gave for it (for two ranks,
/// both calls).
pub(crate) fn disagreement(
    mine: &[u64; SIGNATURE_WORDS],
    max: &[u64],
    max_not: &[u64],
) -> Option<String> {
    let word = (0..SIGNATURE_WORDS).find(|&i| max[i] != mine[i] || max_not[i] != !mine[i])?;
    // A reduction's collectives (codes 1 and 4) have a reduction for an
    // argument; a broadcast, a root.
    let reduces = matches!(mine[0], 1 | 4);
    let what = match word {
        0 => "the collective",
        1 if reduces => "the reduction",
        1 => "the root",
        2 => "the element type",
        _ => return Some("the shape".into()),
    };
    let label = |code: u64| -> String {
        let nth = |i: u64| usize::try_from(i).unwrap_or(usize::MAX);
        let named = match word {
            0 => KINDS
                .get(nth(code.wrapping_sub(1)))
                .map(|k| (*k).to_string()),
            1 if reduces => REDUCTIONS.get(nth(code)).map(Reduction::to_string),
            1 => Some(code.to_string()),
            _ if code == 0 => Some("no tensor".into()),
            _ => DType::ALL.get(nth(code - 1)).map(DType::to_string),
        };
        named.unwrap_or_else(|| format!("code {code}"))
    };
    let (lo, hi) = (!max_not[word], max[word]);
    Some(format!(
        "{what} (from {} to {} over the ranks)",
        label(lo),
        label(hi)
    ))
}

/// The collectives' names by their signature's code, less 1.
const KINDS: [&str; 5] = [
    "allreduce",
    "broadcast",
    "allgather",
    "reduce_scatter",
    "barrier",
];

/// The reductions by their signature's code.
const REDUCTIONS: [Reduction; 4] = [
    Reduction::Sum,
    Reduction::Prod,
    Reduction::Max,
    Reduction::Min,
];

/// MPI's reduction for `r` over `dtype`, or why there is none.
pub(crate) fn mpi_op(op: &'static str, r: Reduction, dtype: DType) -> Result<MpiOp, MpiError> {
    let unsupported = MpiError::Unsupported {
        op,
        reduction: r,
        dtype,
    };
    Ok(match (r, dtype) {
        (Reduction::Max | Reduction::Min, d) if d.is_complex() => return Err(unsupported),
        (Reduction::Sum | Reduction::Prod, DType::Bool) => return Err(unsupported),
        (Reduction::Max, DType::Bool) => MpiOp::Or,
        (Reduction::Min, DType::Bool) => MpiOp::And,
        (Reduction::Sum, _) => MpiOp::Sum,
        (Reduction::Prod, _) => MpiOp::Prod,
        (Reduction::Max, _) => MpiOp::Max,
        (Reduction::Min, _) => MpiOp::Min,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collectives_know_their_results_and_refuse_what_is_undefined() {
        let out = |c: Collective, d, s: &[usize]| c.output(d, s, 4);
        let sum = Collective::Allreduce(Reduction::Sum);
        assert_eq!(out(sum, DType::F64, &[2, 3]).unwrap(), Some(vec![2, 3]));
        assert_eq!(
            out(Collective::Allgather, DType::I32, &[3]).unwrap(),
            Some(vec![4, 3])
        );
        let rs = Collective::ReduceScatter(Reduction::Max);
        assert_eq!(out(rs, DType::F32, &[8, 2]).unwrap(), Some(vec![2, 2]));
        let e = out(rs, DType::F32, &[6, 2]).unwrap_err();
        assert!(
            e.to_string().contains("[6, 2]") && e.to_string().contains('4'),
            "{e}"
        );
        let e = out(Collective::Allreduce(Reduction::Max), DType::C64, &[2]).unwrap_err();
        assert!(
            e.to_string().contains("max") && e.to_string().contains("c64"),
            "{e}"
        );
        assert!(out(sum, DType::Bool, &[2]).is_err());
        assert!(out(Collective::Allreduce(Reduction::Min), DType::Bool, &[2]).is_ok());
        let e = out(Collective::Broadcast { root: 4 }, DType::F64, &[1]).unwrap_err();
        assert_eq!(e, MpiError::NoSuchRank { rank: 4, ranks: 4 });
        assert_eq!(out(Collective::Barrier, DType::F64, &[]).unwrap(), None);
    }

    #[test]
    fn signatures_differ_when_any_argument_differs() {
        let sig = |c: Collective, s: &[usize]| c.signature(Some((DType::F64, s)));
        let sum = Collective::Allreduce(Reduction::Sum);
        assert_eq!(sig(sum, &[2, 3]), sig(sum, &[2, 3]));
        assert_ne!(sig(sum, &[2, 3]), sig(sum, &[3, 2]));
        assert_ne!(
            sig(sum, &[2]),
            sig(Collective::Allreduce(Reduction::Max), &[2])
        );
        assert_ne!(sig(sum, &[2]), sig(Collective::Allgather, &[2]));
        assert_ne!(
            sum.signature(Some((DType::F32, &[2]))),
            sum.signature(Some((DType::F64, &[2])))
        );
    }

    /// The maxima an allreduce of `[s, !s]` gives over the ranks' `sigs`.
    fn exchanged(sigs: &[[u64; SIGNATURE_WORDS]]) -> (Vec<u64>, Vec<u64>) {
        let max = |f: &dyn Fn(u64) -> u64| -> Vec<u64> {
            (0..SIGNATURE_WORDS)
                .map(|i| sigs.iter().map(|s| f(s[i])).max().unwrap())
                .collect()
        };
        (max(&|w| w), max(&|w| !w))
    }

    #[test]
    fn a_disagreement_names_what_differs_and_the_calls() {
        let f64s = |c: Collective, s: &[usize]| c.signature(Some((DType::F64, s)));
        let sum = f64s(Collective::Allreduce(Reduction::Sum), &[2]);
        let named = |sigs: &[[u64; SIGNATURE_WORDS]]| {
            let (max, max_not) = exchanged(sigs);
            disagreement(&sigs[0], &max, &max_not)
        };
        assert_eq!(named(&[sum, sum, sum]), None);
        let max = f64s(Collective::Allreduce(Reduction::Max), &[2]);
        assert_eq!(
            named(&[sum, max]).unwrap(),
            "the reduction (from sum to max over the ranks)"
        );
        let f32s = Collective::Allreduce(Reduction::Sum).signature(Some((DType::F32, &[2])));
        assert_eq!(
            named(&[sum, f32s, sum]).unwrap(),
            "the element type (from f32 to f64 over the ranks)"
        );
        assert_eq!(
            named(&[sum, f64s(Collective::Allreduce(Reduction::Sum), &[3])]).unwrap(),
            "the shape"
        );
        let barrier = Collective::Barrier.signature(None);
        assert_eq!(
            named(&[barrier, sum]).unwrap(),
            "the collective (from allreduce to barrier over the ranks)"
        );
        let root = |r| f64s(Collective::Broadcast { root: r }, &[2]);
        assert_eq!(
            named(&[root(1), root(0), root(3)]).unwrap(),
            "the root (from 0 to 3 over the ranks)"
        );
    }
}
