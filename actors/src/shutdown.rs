//! Shutdown modes, reports and errors. The decision to finish is made by the
//! actor loop (`scheduler.rs`) with the intake gate (`gate.rs`).

use std::fmt;

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
}
