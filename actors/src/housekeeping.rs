//! What an actor does for its engine between ops: the [`Housekeeping`] it
//! runs, and the [`Nudge`] that wakes it to run it. The builder takes the
//! one (`actor.rs`), the loop runs it (`scheduler.rs`), the shared state
//! answers the other (`shared.rs`).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// Work an actor does for its engine that no op asks for: freeing what
/// handles released, letting caches go once idle.
///
/// It runs on the actor thread, between ops, isolated like an op (a panic
/// is contained and the actor carries on): when a [`Nudge`] woke the actor
/// (`idle` is `None`: ops may be waiting), and when the actor has nothing
/// to do and is about to park (`idle` is how long it has had nothing to
/// do). While idle it returns how long the actor may stay parked before it
/// asks again (`None`: until a message comes; `Some(Duration::ZERO)`: not
/// at all, the actor looks at its mailbox and asks again at once, which is
/// how a housekeeping polls; one that polls should give its CPU away now
/// and then, `std::thread::yield_now`, for the threads that share it). Any
/// `FnMut(&mut E, Option<Duration>) -> Option<Duration>` is one.
pub trait Housekeeping<E>: Send + 'static {
    /// Does the work; see the trait.
    fn tidy(&mut self, engine: &mut E, idle: Option<Duration>) -> Option<Duration>;
}

impl<E, F> Housekeeping<E> for F
where
    F: FnMut(&mut E, Option<Duration>) -> Option<Duration> + Send + 'static,
{
    fn tidy(&mut self, engine: &mut E, idle: Option<Duration>) -> Option<Duration> {
        self(engine, idle)
    }
}

/// Wakes an actor to run its [`Housekeeping`] between ops, whether it is
/// busy or parked. Cheap to clone, usable from any thread, never blocks;
/// nudging an actor that has stopped does nothing.
#[derive(Clone)]
pub struct Nudge(pub(crate) Arc<dyn Nudged>);

pub(crate) trait Nudged: Send + Sync {
    fn nudge(&self);
}

impl Nudge {
    /// Asks the actor to run its housekeeping at its next turn.
    pub fn nudge(&self) {
        self.0.nudge();
    }
}

impl fmt::Debug for Nudge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Nudge")
    }
}
