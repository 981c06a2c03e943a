//! Events: completion signals that order ops across lanes and actors, and
//! the [`Failure`] that ops ordered after a failed one see.
//!
//! Every submitted op's completion is an event ([`Ticket::event`]). An op
//! submitted with [`Op::after`] waits for its events without blocking its
//! actor: the lane whose head op waits is parked, and the event's completion
//! sends a wake message to that actor's mailbox.
//!
//! # Protocol
//!
//! Registration ([`EventSource::subscribe`]) and completion take the same
//! lock, so exactly one of two things happens: the dependent is stored
//! before completion and completion wakes it exactly once, or the event is
//! already complete and `subscribe` refuses and returns the final state.
//! No wake is lost and none is doubled. Ops can only wait for events of ops
//! submitted before them, so events form no cycle and every wait ends.
//!
//! [`Ticket::event`]: crate::Ticket::event
//! [`Op::after`]: crate::Op::after

use std::fmt;
use std::sync::Arc;

/// The state of an [`Event`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventState {
    /// The op has not finished.
    Pending,
    /// The op finished with a value.
    Done,
    /// The op finished without a value; ops ordered after it do not run.
    Failed(Arc<Failure>),
}

/// The failure of one op, as its dependents see it: which op and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The label of the op that failed first.
    pub op: &'static str,
    /// What happened to it.
    pub cause: FailureCause,
}

/// What happened to a failed op.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FailureCause {
    /// It returned an error, shown here.
    Error(String),
    /// It panicked with this message.
    Panicked(String),
    /// It was cancelled by shutdown.
    Cancelled,
    /// Its actor died.
    ActorLost,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = self.op;
        match &self.cause {
            FailureCause::Error(e) => write!(f, "op `{op}` failed: {e}"),
            FailureCause::Panicked(m) => write!(f, "op `{op}` panicked: {m}"),
            FailureCause::Cancelled => write!(f, "op `{op}` was cancelled by shutdown"),
            FailureCause::ActorLost => write!(f, "op `{op}` was lost with its actor"),
        }
    }
}

impl std::error::Error for Failure {}

/// Something that wakes a dependent when an event completes. Actors
/// implement it by sending a wake message for lane `token` to their mailbox.
pub(crate) trait Wake: Send + Sync {
    fn wake(&self, token: u64);
}

/// One registered wait: who to wake and with which token.
pub(crate) struct Dependent {
    pub(crate) waker: Arc<dyn Wake>,
    pub(crate) token: u64,
}

impl Dependent {
    pub(crate) fn wake(self) {
        self.waker.wake(self.token);
    }
}

/// What an event reads: the slot of an op.
pub(crate) trait EventSource: Send + Sync {
    fn state(&self) -> EventState;
    /// Registers `dependent`, or returns the final state if complete.
    fn subscribe(&self, dependent: Dependent) -> Option<EventState>;
    fn label(&self) -> &'static str;
}

/// The completion of one submitted op, as a value other ops can be ordered
/// after ([`Op::after`](crate::Op::after)). Cheap to clone.
#[derive(Clone)]
pub struct Event {
    source: Arc<dyn EventSource>,
}

impl Event {
    pub(crate) fn new(source: Arc<dyn EventSource>) -> Event {
        Event { source }
    }

    /// The current state.
    pub fn state(&self) -> EventState {
        self.source.state()
    }

    /// Whether the op has finished, with a value or not.
    pub fn is_finished(&self) -> bool {
        self.state() != EventState::Pending
    }

    /// The label of the op this event belongs to.
    pub fn label(&self) -> &'static str {
        self.source.label()
    }

    pub(crate) fn subscribe(&self, dependent: Dependent) -> Option<EventState> {
        self.source.subscribe(dependent)
    }
}

impl fmt::Debug for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Event")
            .field("op", &self.label())
            .field("state", &self.state())
            .finish()
    }
}
