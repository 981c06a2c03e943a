//! Events: completion signals that order ops across lanes and actors.
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

use crate::ticket::Failure;

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
