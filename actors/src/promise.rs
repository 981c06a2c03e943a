//! Promises: a ticket whose outcome code gives, not an op.
//!
//! Some work an actor starts finishes later, outside any op: a network
//! request it progresses in its loop, a device event it polls. A
//! [`Promise`] is the giving side of a [`Ticket`] for such work, with the
//! same slot, so the ticket waits, polls and `.await`s as any other, and its
//! [`Ticket::event`] orders ops after the work ([`Op::after`]) without
//! blocking an actor.
//!
//! # Protocol
//!
//! The promise and the ticket share one [`Slot`] (see `ticket.rs`, whose
//! invariants hold unchanged): the promise resolves it once, by
//! [`Promise::keep`], [`Promise::fail`] or [`Promise::cancel`], each of which
//! consumes it. A promise dropped unresolved resolves the slot with
//! [`TicketError::ActorLost`], so no ticket and no event waits for a promise
//! that nobody can keep.
//!
//! [`Op::after`]: crate::Op::after

use std::fmt;
use std::sync::Arc;

use crate::actor::DEFAULT_WAIT_SPIN;
use crate::context::{current_actor, ActorId};
use crate::event::{Dependent, EventSource, EventState};
use crate::ticket::{Slot, SlotCell, Ticket, TicketError};

/// The giving side of a [`Ticket`]: code that is not an op resolves it.
///
/// ```
/// use weft_actors::Promise;
///
/// let (promise, ticket) = Promise::<u32, String>::new("answer");
/// let event = ticket.event();
/// std::thread::spawn(move || promise.keep(42));
/// assert_eq!(ticket.wait().unwrap(), 42);
/// assert!(event.is_finished());
/// ```
pub struct Promise<T, E = std::convert::Infallible>
where
    T: Send + 'static,
    E: fmt::Display + Send + 'static,
{
    /// `None` once resolved.
    cell: Option<Arc<Cell<T, E>>>,
}

struct Cell<T, E> {
    slot: Slot<T, E>,
}

impl<T, E> EventSource for Cell<T, E>
where
    T: Send + 'static,
    E: Send + 'static,
{
    fn state(&self) -> EventState {
        self.slot.event_state()
    }

    fn subscribe(&self, dependent: Dependent) -> Option<EventState> {
        self.slot.subscribe(dependent)
    }

    fn label(&self) -> &'static str {
        self.slot.label()
    }
}

impl<T, E> SlotCell<T, E> for Cell<T, E>
where
    T: Send + 'static,
    E: Send + 'static,
{
    fn slot(&self) -> &Slot<T, E> {
        &self.slot
    }
}

impl<T, E> Promise<T, E>
where
    T: Send + 'static,
    E: fmt::Display + Send + 'static,
{
    /// A promise and its ticket. The actor the calling thread works for
    /// ([`ActorId::NONE`] outside actors) is the one [`Ticket::actor`]
    /// names; `label` names the work in errors and in the failures of ops
    /// ordered after it.
    pub fn new(label: &'static str) -> (Promise<T, E>, Ticket<T, E>) {
        let actor = current_actor().unwrap_or(ActorId::NONE);
        let cell = Arc::new(Cell {
            slot: Slot::new(actor, label, DEFAULT_WAIT_SPIN),
        });
        let ticket = Ticket::new(cell.clone());
        (Promise { cell: Some(cell) }, ticket)
    }

    /// The work is done: the ticket gets `value`, and ops ordered after
    /// its event run.
    pub fn keep(self, value: T) {
        self.resolve(Ok(value));
    }

    /// The work failed: the ticket gets [`TicketError::Op`], and ops
    /// ordered after its event fail with this error's message.
    pub fn fail(self, error: E) {
        self.resolve(Err(TicketError::Op(error)));
    }

    /// The work was abandoned by a shutdown: the ticket gets
    /// [`TicketError::Cancelled`].
    pub fn cancel(self) {
        self.resolve(Err(TicketError::Cancelled));
    }

    /// The label the promise was made with.
    pub fn label(&self) -> &'static str {
        self.cell.as_ref().map_or("", |c| c.slot.label())
    }

    fn resolve(mut self, outcome: Result<T, TicketError<E>>) {
        if let Some(cell) = self.cell.take() {
            cell.slot.resolve(outcome);
        }
    }
}

impl<T, E> Drop for Promise<T, E>
where
    T: Send + 'static,
    E: fmt::Display + Send + 'static,
{
    fn drop(&mut self) {
        if let Some(cell) = self.cell.take() {
            cell.slot.resolve(Err(TicketError::ActorLost));
        }
    }
}

impl<T, E> fmt::Debug for Promise<T, E>
where
    T: Send + 'static,
    E: fmt::Display + Send + 'static,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Promise")
            .field("label", &self.label())
            .finish()
    }
}

#[cfg(all(test, not(weft_loom)))]
mod tests {
    use super::*;
    use crate::EventState;

    #[test]
    fn a_kept_promise_answers_its_ticket_and_event() {
        let (promise, ticket) = Promise::<Vec<u8>, String>::new("work");
        let event = ticket.event();
        assert_eq!(event.state(), EventState::Pending);
        assert!(!ticket.is_ready());
        promise.keep(vec![1, 2]);
        assert_eq!(event.state(), EventState::Done);
        assert_eq!(ticket.wait().unwrap(), [1, 2]);
    }

    #[test]
    fn a_failed_promise_fails_its_dependents_with_its_message() {
        let (promise, ticket) = Promise::<(), String>::new("recv");
        let event = ticket.event();
        promise.fail("shape [3] where [2] was expected".into());
        let EventState::Failed(failure) = event.state() else {
            panic!("not failed");
        };
        assert_eq!(failure.op, "recv");
        assert!(failure.to_string().contains("shape [3]"), "{failure}");
        assert!(matches!(ticket.wait(), Err(TicketError::Op(m)) if m.contains("[2]")));
    }

    #[test]
    fn a_dropped_promise_is_lost_and_a_cancelled_one_cancelled() {
        let (promise, ticket) = Promise::<(), String>::new("send");
        drop(promise);
        assert!(ticket.wait().unwrap_err().is_actor_lost());
        let (promise, ticket) = Promise::<(), String>::new("send");
        promise.cancel();
        assert!(ticket.wait().unwrap_err().is_cancelled());
    }

    #[test]
    fn keeping_after_the_ticket_is_gone_drops_the_value_once() {
        let value = Arc::new(());
        let (promise, ticket) = Promise::<Arc<()>, String>::new("work");
        let event = ticket.event();
        drop(ticket);
        promise.keep(value.clone());
        assert_eq!(Arc::strong_count(&value), 1);
        assert_eq!(event.state(), EventState::Done);
    }
}
