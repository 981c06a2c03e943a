//! A rank's MPI, owned by one actor.
//!
//! `MpiEngine` (feature `mpi`) is built on the MPI actor's thread and never leaves it:
//! that thread initialises MPI (`MPI_THREAD_SERIALIZED`), makes every MPI
//! call of the process's weft and finalises MPI once, when the engine is
//! dropped. Its methods only *post* nonblocking requests and return;
//! `MpiEngine::progress` (run by every op of the actor and by its
//! housekeeping while requests are outstanding) tests them and calls each
//! request's [`Done`] when it completes. No call waits on the network.
//!
//! # Messages
//!
//! A tensor sent to a rank under tag `t` (at most [`MAX_TAG`]) is two MPI
//! messages on the engine's own communicator (a duplicate of the world's):
//! a header of fixed size on tag `2t` (a magic word, the element type, the
//! axes and their extents) and the elements' bytes on tag `2t + 1`. The
//! receiver posts both receives at once, the data one sized for the shape
//! it expects; MPI's order of messages between two ranks on one tag pairs
//! the k-th header with the k-th data message. When both are in, the
//! header is compared with what was expected: a different type or shape
//! fails the receive with [`MpiError::Mismatch`] naming both (a larger
//! message is truncated by MPI and still consumed, so the next receive on
//! the tag is not shifted), never a tensor of the wrong size.
//!
//! # Collectives
//!
//! Collectives run one at a time, in the order the actor takes them, so
//! every rank posts them to MPI in the same order. Each is preceded by a
//! signature exchange, a maximum over `[s, !s]` of the words `s` of the
//! collective's kind, its reduction or root, its element type and a hash
//! of its shape: the maxima are `s` and `!s` on every rank only if every
//! rank gave the same `s`, and otherwise give, for each word, the least
//! and the greatest value the ranks gave. Ranks that disagree all fail
//! that collective with [`MpiError::Disagree`], naming what differs,
//! instead of reducing mismatched buffers.
//!
//! A collective is queued when it is asked for, its input still to come
//! ([`Exchange::collective_when`]): its turn waits for the input. A rank
//! whose input fails, or whose engine shuts down first, *withdraws*: it
//! gives the signature [`u64::MAX`] in every word, which no collective has,
//! so the maxima show it on every rank. The withdrawing rank fails the
//! collective with [`MpiError::InputFailed`], the others with
//! [`MpiError::Withdrawn`], and none posts its data phase: no rank waits
//! for a part that will not come, and the next collective pairs up.
//!
//! # Failure
//!
//! The communicator is set to `MPI_ERRORS_RETURN`: a failed call fails its
//! request's op with [`MpiError::Call`], and the engine carries on. A peer
//! that never sends leaves the receive outstanding until shutdown cancels
//! it. A rank that dies is not survivable under Open MPI's `mpirun`, which
//! ends the whole job when one of its processes exits abnormally.
//!
//! # Shutdown
//!
//! Dropping the engine progresses what is outstanding for up to
//! [`SHUTDOWN_GRACE`], then cancels the receives nothing matched,
//! withdraws each queued collective whose input is still not there (on
//! its turn, in order; one whose input came is contributed), progresses
//! for a second grace period, and fails what is left with
//! [`MpiError::Cancelled`]. The actor that owns the engine drains its
//! queue whatever the shutdown, so that every collective it was given is
//! queued here, contributed or withdrawn. MPI is finalised once
//! every request has completed; if one never does (a send to a rank that
//! is gone), MPI is left initialised and its buffers leaked rather than
//! freed under it, and the engine says so on stderr.
//!
//! # The exchange and its transport
//!
//! The request table, the message and collective protocols above and the
//! shutdown are the [`Exchange`], generic over a [`Transport`] that only
//! posts, tests and cancels nonblocking requests; `MpiEngine` is the
//! exchange over `MpiSession`, MPI itself (the only `unsafe` code, in
//! its own module, feature `mpi`). The exchange alone builds without MPI:
//! the loom models of `loom-tests/exchange.rs` run it against a fake
//! network, completion, cancellation and shutdown in every order.
#![deny(unsafe_code)]
#![warn(missing_docs, missing_debug_implementations)]

mod collective;
mod error;
mod exchange;
#[cfg(feature = "mpi")]
#[allow(unsafe_code)] // The MPI calls, each argued.
mod ffi;
mod transport;
mod wire;

use std::time::Duration;

pub use collective::{Collective, Reduction};
pub use error::MpiError;
#[cfg(feature = "mpi")]
pub use exchange::MpiEngine;
pub use exchange::{Awaited, Exchange, Input};
#[cfg(feature = "mpi")]
pub use ffi::{Posted as MpiRequest, Session as MpiSession};
pub use transport::{Buf, Grace, MpiOp, Request, Transport};

use weft_core::{DType, Data, Tensor};

/// The largest message tag weft takes (each tag is two of MPI's, and MPI
/// guarantees tags up to 32767).
pub const MAX_TAG: u32 = 16_383;

/// The most axes a tensor sent between ranks may have.
pub const MAX_AXES: usize = 32;

/// How long a dropped engine waits for its outstanding requests before it
/// cancels them.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// The environment variables by which a launcher (Open MPI's `mpirun`,
/// Hydra, Slurm's PMI/PMIx) tells a process it is one of a job's ranks.
pub const LAUNCHER_ENV: [&str; 5] = [
    "OMPI_COMM_WORLD_SIZE",
    "PMI_SIZE",
    "PMI_RANK",
    "PMIX_RANK",
    "SLURM_PROCID",
];

/// What a completed operation gives back.
#[derive(Debug, Default)]
pub struct Finished {
    /// The received or computed tensor (none for a send or a barrier).
    pub tensor: Option<Tensor>,
    /// The buffer MPI read from, done with (a send's, a reduction's
    /// input): for the pool it came from.
    pub spent: Option<Data>,
}

/// Called once with an operation's outcome, or its error.
pub type Done = Box<dyn FnOnce(Result<Finished, MpiError>) + Send>;

/// Tells whether this process was started by an MPI launcher.
///
/// # Errors
///
/// [`MpiError::Unavailable`] naming the variables looked for.
pub fn launched() -> Result<(), MpiError> {
    if LAUNCHER_ENV.iter().any(|v| std::env::var_os(v).is_some()) {
        return Ok(());
    }
    Err(MpiError::Unavailable {
        reason: format!(
            "this process was not started by an MPI launcher (none of {} is set); \
             run it under `mpirun -n <ranks>`",
            LAUNCHER_ENV.join(", ")
        ),
    })
}

/// Checks that one message carries a tensor of `dtype` and `shape` (for
/// `op`, the name its errors give); its element count. A receive checks
/// this before its buffer is taken, so that a shape no message can carry
/// is an error, not an allocation the machine cannot make.
///
/// # Errors
///
/// [`MpiError::TooManyAxes`]; [`MpiError::TooLarge`] for more bytes than
/// one MPI call carries.
pub fn check_message(op: &'static str, dtype: DType, shape: &[usize]) -> Result<usize, MpiError> {
    if shape.len() > MAX_AXES {
        return Err(MpiError::TooManyAxes {
            op,
            axes: shape.len(),
        });
    }
    let n = weft_core::element_count(shape).ok_or(MpiError::TooLarge {
        op,
        count: usize::MAX,
    })?;
    let bytes = n.saturating_mul(dtype.size());
    if i32::try_from(bytes).is_err() {
        return Err(MpiError::TooLarge { op, count: bytes });
    }
    Ok(n)
}

/// Checks a peer rank of a job of `ranks` and a message tag.
///
/// # Errors
///
/// [`MpiError::NoSuchRank`], [`MpiError::Tag`].
pub fn check_peer(rank: usize, tag: u32, ranks: usize) -> Result<(), MpiError> {
    if rank >= ranks {
        return Err(MpiError::NoSuchRank { rank, ranks });
    }
    if tag > MAX_TAG {
        return Err(MpiError::Tag { tag });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(feature = "mpi")]
    fn outside_a_launcher_the_engine_says_how_to_run() {
        if LAUNCHER_ENV.iter().any(|v| std::env::var_os(v).is_some()) {
            println!("skipped: this test runs outside an MPI launcher");
            return;
        }
        let e = MpiEngine::start().unwrap_err();
        assert!(e.to_string().contains("mpirun"), "{e}");
    }

    #[test]
    fn peers_and_tags_are_checked() {
        assert_eq!(
            check_peer(2, 0, 2),
            Err(MpiError::NoSuchRank { rank: 2, ranks: 2 })
        );
        assert_eq!(
            check_peer(1, MAX_TAG + 1, 2),
            Err(MpiError::Tag { tag: MAX_TAG + 1 })
        );
        assert!(check_peer(1, MAX_TAG, 2).is_ok());
    }
}
