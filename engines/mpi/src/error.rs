//! [`MpiError`]: what went wrong with an MPI operation, naming it.

use weft_core::DType;

use crate::{Reduction, MAX_AXES, MAX_TAG};

/// What went wrong with an MPI operation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MpiError {
    /// MPI cannot be had here.
    #[error("MPI is not available: {reason}")]
    Unavailable {
        /// Why.
        reason: String,
    },
    /// An MPI call returned an error.
    #[error("{call} failed (MPI error {code}): {message}")]
    Call {
        /// The call.
        call: &'static str,
        /// MPI's error code.
        code: i32,
        /// MPI's words for it.
        message: String,
    },
    /// A rank outside the job.
    #[error("rank {rank} is not one of the job's {ranks} ranks")]
    NoSuchRank {
        /// The rank asked for.
        rank: usize,
        /// How many there are.
        ranks: usize,
    },
    /// A message tag above [`MAX_TAG`].
    #[error("tag {tag} is above the largest weft takes, {MAX_TAG}")]
    Tag {
        /// The tag asked for.
        tag: u32,
    },
    /// More elements (or bytes) than one MPI call carries (a C `int`).
    #[error("{op}: {count} is more than one MPI call carries (at most 2^31 - 1)")]
    TooLarge {
        /// The op.
        op: &'static str,
        /// The count.
        count: usize,
    },
    /// More axes than a message header holds.
    #[error("{op}: a tensor of {axes} axes; weft sends at most {MAX_AXES}")]
    TooManyAxes {
        /// The op.
        op: &'static str,
        /// Its axes.
        axes: usize,
    },
    /// What arrived is not what the receive expected.
    #[error("recv from rank {from}, tag {tag}: expected {expected}, rank {from} sent {found}")]
    Mismatch {
        /// The sending rank.
        from: usize,
        /// The tag.
        tag: u32,
        /// The type and shape the receive gave.
        expected: String,
        /// What the message was.
        found: String,
    },
    /// The ranks did not all call the same collective with the same
    /// arguments.
    #[error(
        "{op} ({this}): the ranks disagree on {differs}; every rank must call the \
         same collectives in the same order, with tensors of one type and shape"
    )]
    Disagree {
        /// The collective.
        op: &'static str,
        /// This rank's call.
        this: String,
        /// What differs: the collective, its reduction or root, the
        /// element type (with the least and greatest the ranks gave) or the
        /// shape.
        differs: String,
    },
    /// A reduction not defined for the element type.
    #[error("{op} with {reduction} is not defined for {dtype} tensors")]
    Unsupported {
        /// The collective.
        op: &'static str,
        /// The reduction.
        reduction: Reduction,
        /// The element type.
        dtype: DType,
    },
    /// A reduce-scatter whose leading extent the ranks do not divide.
    #[error("reduce_scatter: shape {shape:?} does not split into {ranks} equal blocks along its first axis")]
    Indivisible {
        /// The tensor's shape.
        shape: Vec<usize>,
        /// The ranks.
        ranks: usize,
    },
    /// The operation's input never reached MPI.
    #[error("{op}: its input failed: {reason}")]
    InputFailed {
        /// The operation.
        op: &'static str,
        /// Why.
        reason: String,
    },
    /// Another rank withdrew from this collective: its input failed, or
    /// its runtime shut down before the input was ready. Every rank fails
    /// it (the withdrawing one with its own reason), and the collectives
    /// after it are not shifted.
    #[error(
        "{op}: another rank withdrew from it (its input failed, or its runtime shut down \
         before the input was ready)"
    )]
    Withdrawn {
        /// The collective.
        op: &'static str,
    },
    /// The rank's MPI actor shut down before the operation completed.
    #[error("{op} was cancelled: the rank's MPI actor shut down first")]
    Cancelled {
        /// The operation.
        op: &'static str,
    },
}

/// "f64 [2, 3]": a type and shape in errors.
pub(crate) fn describe(dtype: DType, shape: &[usize]) -> String {
    format!("{dtype} {shape:?}")
}
