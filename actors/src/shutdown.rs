//! Shutdown modes, reports and errors. The decision to finish is made by the
//! actor loop (`scheduler.rs`) with the intake gate (`gate.rs`).

use std::fmt;
use std::time::Duration;

/// How an actor shuts down.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ShutdownMode {
    /// Stop intake, then run everything already queued.
    Drain,
    /// Stop intake, let the running op finish, cancel everything queued.
    Now,
}

/// What an actor did over its life, returned when it has shut down.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShutdownReport {
    /// The actor's thread name.
    pub actor: String,
    /// Ops that ran and returned a value.
    pub completed: u64,
    /// Ops that returned an error or did not run because a dependency failed.
    pub failed: u64,
    /// Ops that panicked.
    pub panicked: u64,
    /// Ops cancelled by `shutdown_now`.
    pub cancelled: u64,
    /// Ops lost when the actor thread died.
    pub lost: u64,
    /// The reason the actor thread died, if it did.
    pub died: Option<String>,
}

impl fmt::Display for ShutdownReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} completed, {} failed, {} panicked, {} cancelled, {} lost",
            self.actor, self.completed, self.failed, self.panicked, self.cancelled, self.lost
        )?;
        if let Some(why) = &self.died {
            write!(f, "; the actor thread died: {why}")?;
        }
        Ok(())
    }
}

/// A shutdown that could not be completed from where it was asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ShutdownError {
    /// The caller works for an actor: joining an actor from there could
    /// wait forever. The shutdown has begun; the actor thread finishes on
    /// its own.
    #[error("shutdown of `{actor}` begun, but it cannot be joined from an actor thread")]
    WouldDeadlock {
        /// The actor being shut down.
        actor: String,
    },
    /// A shutdown with a deadline ([`crate::Actor::shutdown_timeout`])
    /// found actors still working when it passed. Their shutdown goes on:
    /// each finishes on its own once what it is doing returns, and a later
    /// shutdown call joins it and gives its report.
    #[error("shutdown timed out after {timeout:?}: {}", list(stuck))]
    TimedOut {
        /// The time given.
        timeout: Duration,
        /// The actors not finished, and what each was doing.
        stuck: Vec<Stuck>,
    },
}

fn list(stuck: &[Stuck]) -> String {
    let each: Vec<String> = stuck.iter().map(Stuck::to_string).collect();
    each.join("; ")
}

/// An actor that had not finished when a shutdown's deadline passed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stuck {
    /// The actor's thread name.
    pub actor: String,
    /// What it was doing.
    pub doing: StuckAt,
}

/// What an actor that missed a shutdown's deadline was doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StuckAt {
    /// Running an op, which a shutdown lets finish.
    Op {
        /// The op's lane.
        lane: u64,
        /// The op's label.
        label: &'static str,
    },
    /// Dropping its engine, which waits for work the engine still runs
    /// (jobs spawned on a CPU domain's pool, for instance).
    Engine,
    /// Between ops: finishing, cancelling or dropping what queued ops
    /// captured.
    Finishing,
}

impl fmt::Display for Stuck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let actor = &self.actor;
        match self.doing {
            StuckAt::Op { lane, label } => {
                write!(f, "`{actor}` still runs op `{label}` of lane {lane}")
            }
            StuckAt::Engine => write!(
                f,
                "`{actor}` still drops its engine (waiting for work it started, such as pool jobs)"
            ),
            StuckAt::Finishing => write!(f, "`{actor}` is still finishing its queued ops"),
        }
    }
}
