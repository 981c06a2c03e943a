//! Tickets: the one-shot reply to a submitted op, and the slot it reads.
//!
//! # Protocol
//!
//! A [`Slot`] lives inside its op's allocation (one allocation per op, see
//! `op.rs`) and is shared by the queued op, which resolves it, at most one
//! [`Ticket`], and any number of event subscribers (lanes of actors waiting
//! for this op).
//!
//! Invariants, all under `Slot::state`'s mutex:
//! 1. `resolved` goes from false to true once. The queued op resolves it by
//!    running or by a cancel; if the op's envelope is dropped unresolved (its
//!    actor died), the envelope's `Drop` resolves it with `ActorLost` — so no
//!    ticket hangs. A second resolution is ignored.
//! 2. The outcome is stored only if the ticket is still alive; if the ticket
//!    was dropped first (`ticket_gone`), the resolving side drops the value
//!    itself. Either way it is dropped exactly once.
//! 3. The ticket takes the outcome at most once (`wait*` consume the ticket;
//!    `poll` takes it on `Ready`).
//! 4. Every subscriber and the ticket's waiter registered before resolution
//!    is woken exactly once, after the lock is released; a registration after
//!    resolution is refused and the caller sees the resolved state instead.
//!
//! Memory ordering: `done` mirrors `resolved` for the lock-free spin phase of
//! `wait`. It is stored with `Release` inside the critical section after the
//! outcome, and read with `Acquire`; a reader that sees `true` then takes the
//! lock anyway to move the outcome out, so the mutex alone orders the data.

use std::convert::Infallible;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use crate::context::{current_actor, ActorId};
use crate::event::{Dependent, Event, EventSource, EventState, Failure, FailureCause};
use crate::fault::{drop_isolated, isolate};
use crate::sync::{spin_until, AtomicBool, Condvar, Mutex, Ordering, Spinner};

/// Why an op did not produce its value.
///
/// `E` is the op's own error type: [`Infallible`] for ops submitted with
/// [`Op::new`](crate::Op::new), the closure's error type for
/// [`Op::fallible`](crate::Op::fallible).
#[derive(thiserror::Error)]
#[non_exhaustive]
pub enum TicketError<E = Infallible> {
    /// The op ran and returned this error.
    #[error("op failed: {0}")]
    Op(E),
    /// The op panicked; the message is the panic's payload.
    #[error("op panicked: {0}")]
    Panicked(String),
    /// The op was never run: its actor shut down with `shutdown_now`.
    #[error("op was cancelled by shutdown")]
    Cancelled,
    /// The op's actor thread died before the op finished.
    #[error("the actor thread died before the op finished")]
    ActorLost,
    /// The caller works for an actor and would have blocked on an unfinished
    /// op: that could wait forever for work queued behind itself.
    #[error("waiting here would deadlock: the caller runs on an actor")]
    WouldDeadlock,
    /// An op this op was ordered after failed; this op did not run.
    #[error("an op it depends on failed: {0}")]
    DependencyFailed(Arc<Failure>),
}

impl<E> TicketError<E> {
    /// The op's own error, if that is what this is.
    pub fn op_error(&self) -> Option<&E> {
        match self {
            TicketError::Op(e) => Some(e),
            _ => None,
        }
    }

    /// Whether the op panicked.
    pub fn is_panic(&self) -> bool {
        matches!(self, TicketError::Panicked(_))
    }

    /// Whether the op was cancelled by shutdown.
    pub fn is_cancelled(&self) -> bool {
        matches!(self, TicketError::Cancelled)
    }

    /// Whether the actor died under the op.
    pub fn is_actor_lost(&self) -> bool {
        matches!(self, TicketError::ActorLost)
    }

    /// Whether the wait was refused because it would deadlock.
    pub fn is_would_deadlock(&self) -> bool {
        matches!(self, TicketError::WouldDeadlock)
    }

    /// The failure of a dependency, if that is what this is.
    pub fn dependency(&self) -> Option<&Arc<Failure>> {
        match self {
            TicketError::DependencyFailed(f) => Some(f),
            _ => None,
        }
    }
}

impl<E: fmt::Debug> fmt::Debug for TicketError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TicketError::Op(e) => f.debug_tuple("Op").field(e).finish(),
            TicketError::Panicked(m) => f.debug_tuple("Panicked").field(m).finish(),
            TicketError::Cancelled => f.write_str("Cancelled"),
            TicketError::ActorLost => f.write_str("ActorLost"),
            TicketError::WouldDeadlock => f.write_str("WouldDeadlock"),
            TicketError::DependencyFailed(x) => f.debug_tuple("DependencyFailed").field(x).finish(),
        }
    }
}

impl<E: fmt::Display> TicketError<E> {
    /// What the dependents of op `op` see when it ends with this error.
    #[cold]
    fn failure(&self, op: &'static str) -> Arc<Failure> {
        let cause = match self {
            // The error's `Display` is a user's code, run on the actor.
            TicketError::Op(e) => FailureCause::Error(
                isolate(|| e.to_string())
                    .unwrap_or_else(|m| format!("an error whose Display panicked: {m}")),
            ),
            TicketError::Panicked(m) => FailureCause::Panicked(m.clone()),
            TicketError::Cancelled => FailureCause::Cancelled,
            TicketError::ActorLost | TicketError::WouldDeadlock => FailureCause::ActorLost,
            TicketError::DependencyFailed(first) => return first.clone(),
        };
        Arc::new(Failure { op, cause })
    }
}

type Outcome<T, E> = Result<T, TicketError<E>>;

struct State<T, E> {
    outcome: Option<Outcome<T, E>>,
    failure: Option<Arc<Failure>>,
    resolved: bool,
    ticket_gone: bool,
    waker: Option<Waker>,
    dependents: Vec<Dependent>,
}

/// The shared reply slot of one op.
pub(crate) struct Slot<T, E> {
    done: AtomicBool,
    state: Mutex<State<T, E>>,
    ready: Condvar,
    actor: ActorId,
    label: &'static str,
    spin: Duration,
}

impl<T, E> Slot<T, E> {
    pub(crate) fn new(actor: ActorId, label: &'static str, spin: Duration) -> Self {
        Slot {
            done: AtomicBool::new(false),
            state: Mutex::new(State {
                outcome: None,
                failure: None,
                resolved: false,
                ticket_gone: false,
                waker: None,
                dependents: Vec::new(),
            }),
            ready: Condvar::new(),
            actor,
            label,
            spin,
        }
    }

    pub(crate) fn event_state(&self) -> EventState {
        if !self.done.load(Ordering::Acquire) {
            return EventState::Pending;
        }
        let state = self.state.lock();
        match &state.failure {
            Some(f) => EventState::Failed(f.clone()),
            None => EventState::Done,
        }
    }

    pub(crate) fn subscribe(&self, dependent: Dependent) -> Option<EventState> {
        let mut state = self.state.lock();
        if state.resolved {
            return Some(match &state.failure {
                Some(f) => EventState::Failed(f.clone()),
                None => EventState::Done,
            });
        }
        state.dependents.push(dependent);
        None
    }

    pub(crate) fn label(&self) -> &'static str {
        self.label
    }

    pub(crate) fn is_resolved(&self) -> bool {
        self.done.load(Ordering::Acquire)
    }
}

/// The allocation a ticket points into: an op's cell, seen through its slot.
pub(crate) trait SlotCell<T, E>: EventSource {
    fn slot(&self) -> &Slot<T, E>;
}

impl<T, E: fmt::Display> Slot<T, E> {
    /// Resolves the slot, unless it already is (then `outcome` is dropped).
    /// Returns the failure that dependents see, if any.
    pub(crate) fn resolve(&self, outcome: Outcome<T, E>) -> Option<Arc<Failure>> {
        // Only the actor thread resolves a queued op (the drop of a refused
        // op's envelope resolves nothing anyone waits for), so this check
        // spares the common `abandon` after a run its lock and allocation.
        if self.done.load(Ordering::Acquire) {
            drop_isolated(outcome);
            return None;
        }
        let failure = outcome.as_ref().err().map(|e| e.failure(self.label));
        let (discard, waker, dependents) = {
            let mut state = self.state.lock();
            if state.resolved {
                drop(state);
                drop_isolated(outcome);
                return None;
            }
            state.resolved = true;
            state.failure = failure.clone();
            let discard = if state.ticket_gone {
                Some(outcome)
            } else {
                state.outcome = Some(outcome);
                None
            };
            self.done.store(true, Ordering::Release);
            (
                discard,
                state.waker.take(),
                std::mem::take(&mut state.dependents),
            )
        };
        self.ready.notify_all();
        if let Some(waker) = waker {
            waker.wake();
        }
        for dependent in dependents {
            dependent.wake();
        }
        if let Some(value) = discard {
            drop_isolated(value);
        }
        failure
    }
}

/// The reply to one submitted op: wait for it, poll it, or `.await` it.
///
/// Dropping a ticket is fine: the op still runs and its value is dropped
/// (on the actor, isolated, if the op finishes later; on the dropping
/// thread, as a `JoinHandle`'s would be, if it finished already).
/// Blocking waits (and polls) from a thread that works for an actor return
/// [`TicketError::WouldDeadlock`] unless the op already finished. After
/// `.await` returned, the ticket still answers [`Ticket::is_ready`],
/// [`Ticket::label`], [`Ticket::actor`] and [`Ticket::event`]; taking the
/// outcome again (polling, or any wait) panics.
#[must_use = "a ticket carries the op's result or error; drop it explicitly to ignore them"]
pub struct Ticket<T, E = Infallible> {
    /// `None` once the outcome was taken.
    cell: Option<Arc<dyn SlotCell<T, E>>>,
    /// The cell of a ticket whose `poll` returned `Ready`: the ticket still
    /// answers `is_ready`, `label`, `actor` and `event`.
    finished: Option<Arc<dyn SlotCell<T, E>>>,
}

/// A timed wait ran out; the ticket is handed back.
pub enum WaitTimeoutError<T, E = Infallible> {
    /// The op did not finish in time.
    Timeout(Ticket<T, E>),
    /// The op finished without a value, or the wait would deadlock.
    Failed(TicketError<E>),
}

/// A non-blocking wait found the op unfinished; the ticket is handed back.
pub enum TryWaitError<T, E = Infallible> {
    /// The op has not finished.
    Pending(Ticket<T, E>),
    /// The op finished without a value.
    Failed(TicketError<E>),
}

enum Taken<T, E> {
    Outcome(Outcome<T, E>),
    NotYet,
}

impl<T, E> Ticket<T, E> {
    pub(crate) fn new(cell: Arc<dyn SlotCell<T, E>>) -> Self {
        Ticket {
            cell: Some(cell),
            finished: None,
        }
    }

    /// The op's cell, whether or not `poll` has taken the outcome.
    fn any_cell(&self) -> &Arc<dyn SlotCell<T, E>> {
        self.cell.as_ref().or(self.finished.as_ref()).expect(TAKEN)
    }

    fn slot(&self) -> &Slot<T, E> {
        self.any_cell().slot()
    }

    /// The actor that runs the op.
    pub fn actor(&self) -> ActorId {
        self.slot().actor
    }

    /// The op's label.
    pub fn label(&self) -> &'static str {
        self.slot().label
    }

    /// Whether the op has finished (with a value or an error).
    pub fn is_ready(&self) -> bool {
        self.slot().done.load(Ordering::Acquire)
    }

    /// Waits for the op and returns its value.
    ///
    /// # Errors
    ///
    /// The op's error, [`TicketError::Panicked`], [`TicketError::Cancelled`],
    /// [`TicketError::ActorLost`], [`TicketError::DependencyFailed`], or
    /// [`TicketError::WouldDeadlock`] if the caller works for an actor and
    /// the op has not finished.
    pub fn wait(mut self) -> Result<T, TicketError<E>> {
        if let Taken::Outcome(outcome) = self.spin_take() {
            return outcome;
        }
        if current_actor().is_some() {
            return Err(TicketError::WouldDeadlock);
        }
        let cell = self.cell.take().expect(TAKEN);
        let slot = cell.slot();
        let mut state = slot.state.lock();
        while !state.resolved {
            state = slot.ready.wait(state);
        }
        take_outcome(&mut state)
    }

    /// Waits at most `timeout` for the op. A timeout too long to add to
    /// the clock (`Duration::MAX`) waits as [`Ticket::wait`] does.
    ///
    /// # Errors
    ///
    /// [`WaitTimeoutError::Timeout`] with the ticket if the op is still
    /// running; [`WaitTimeoutError::Failed`] as for [`Ticket::wait`].
    pub fn wait_timeout(self, timeout: Duration) -> Result<T, WaitTimeoutError<T, E>> {
        match Instant::now().checked_add(timeout) {
            Some(deadline) => self.wait_deadline(deadline),
            None => self.wait().map_err(WaitTimeoutError::Failed),
        }
    }

    /// Waits until `deadline` for the op; see [`Ticket::wait_timeout`].
    ///
    /// # Errors
    ///
    /// As [`Ticket::wait_timeout`].
    pub fn wait_deadline(mut self, deadline: Instant) -> Result<T, WaitTimeoutError<T, E>> {
        if let Taken::Outcome(outcome) = self.spin_take() {
            return outcome.map_err(WaitTimeoutError::Failed);
        }
        if current_actor().is_some() {
            return Err(WaitTimeoutError::Failed(TicketError::WouldDeadlock));
        }
        let cell = self.cell.take().expect(TAKEN);
        let slot = cell.slot();
        let mut state = slot.state.lock();
        loop {
            if state.resolved {
                return take_outcome(&mut state).map_err(WaitTimeoutError::Failed);
            }
            let timed_out;
            (state, timed_out) = slot.ready.wait_until(state, deadline);
            if timed_out && !state.resolved {
                drop(state);
                self.cell = Some(cell);
                return Err(WaitTimeoutError::Timeout(self));
            }
        }
    }

    /// Returns the op's value if it has finished, without blocking.
    ///
    /// # Errors
    ///
    /// [`TryWaitError::Pending`] with the ticket if it has not finished;
    /// [`TryWaitError::Failed`] as for [`Ticket::wait`] (never
    /// `WouldDeadlock`: this call does not block).
    pub fn try_wait(mut self) -> Result<T, TryWaitError<T, E>> {
        match self.take() {
            Taken::Outcome(outcome) => outcome.map_err(TryWaitError::Failed),
            Taken::NotYet => Err(TryWaitError::Pending(self)),
        }
    }

    /// An [`Event`] that fires when this op finishes; ops on other lanes or
    /// actors can be ordered after it with [`Op::after`](crate::Op::after).
    pub fn event(&self) -> Event {
        let cell: Arc<dyn EventSource> = self.any_cell().clone();
        Event::new(cell)
    }

    /// Spins briefly (not on an actor thread, where it could only delay the
    /// op it waits for), then takes the outcome if it is there.
    fn spin_take(&mut self) -> Taken<T, E> {
        let slot = self.slot();
        if current_actor().is_none() && !slot.done.load(Ordering::Acquire) {
            spin_until(Instant::now(), slot.spin, Spinner::Waiter, || {
                slot.done.load(Ordering::Acquire)
            });
        }
        self.take()
    }

    fn take(&mut self) -> Taken<T, E> {
        if !self.slot().done.load(Ordering::Acquire) {
            return Taken::NotYet;
        }
        let cell = self.cell.take().expect(TAKEN);
        let mut state = cell.slot().state.lock();
        Taken::Outcome(take_outcome(&mut state))
    }
}

const TAKEN: &str = "a ticket is not used after it returned its value";

/// Moves the outcome out of a resolved slot for its ticket, which is gone
/// afterwards (every path that takes the outcome consumes the ticket).
fn take_outcome<T, E>(state: &mut State<T, E>) -> Outcome<T, E> {
    debug_assert!(state.resolved);
    state.ticket_gone = true;
    state.waker = None;
    state
        .outcome
        .take()
        .expect("a resolved slot holds its outcome until the ticket takes it")
}

impl<T, E> Drop for Ticket<T, E> {
    fn drop(&mut self) {
        if let Some(cell) = self.cell.take() {
            let value = {
                let mut state = cell.slot().state.lock();
                state.ticket_gone = true;
                state.waker = None;
                state.outcome.take()
            };
            drop(value);
        }
    }
}

impl<T, E> Future for Ticket<T, E> {
    type Output = Result<T, TicketError<E>>;

    /// Polled by a thread that works for an actor (inside an op, through
    /// any executor's `block_on`) before the op finished, it returns
    /// `Ready(Err(WouldDeadlock))` as [`Ticket::wait`] does: that thread
    /// could only block its own actor waiting.
    ///
    /// # Panics
    ///
    /// When polled again after it returned `Ready`, as futures may.
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let cell = self
            .cell
            .clone()
            .expect("a ticket is not polled again after it returned Ready");
        let mut state = cell.slot().state.lock();
        let outcome = if state.resolved {
            take_outcome(&mut state)
        } else if current_actor().is_some() {
            // The outcome, when it comes, is dropped by the slot.
            state.ticket_gone = true;
            state.waker = None;
            Err(TicketError::WouldDeadlock)
        } else {
            match &state.waker {
                Some(w) if w.will_wake(cx.waker()) => {}
                _ => state.waker = Some(cx.waker().clone()),
            }
            return Poll::Pending;
        };
        drop(state);
        self.finished = self.cell.take();
        Poll::Ready(outcome)
    }
}

impl<T, E> fmt::Debug for Ticket<T, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self
            .cell
            .as_deref()
            .or(self.finished.as_deref())
            .map(SlotCell::slot)
        {
            Some(slot) => f
                .debug_struct("Ticket")
                .field("actor", &slot.actor)
                .field("label", &slot.label)
                .field("ready", &slot.done.load(Ordering::Acquire))
                .finish(),
            None => f.write_str("Ticket(taken)"),
        }
    }
}

impl<T, E: fmt::Debug> fmt::Debug for WaitTimeoutError<T, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WaitTimeoutError::Timeout(_) => f.write_str("Timeout(..)"),
            WaitTimeoutError::Failed(e) => f.debug_tuple("Failed").field(e).finish(),
        }
    }
}

impl<T, E: fmt::Display> fmt::Display for WaitTimeoutError<T, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WaitTimeoutError::Timeout(t) => write!(f, "op `{}` did not finish in time", t.label()),
            WaitTimeoutError::Failed(e) => e.fmt(f),
        }
    }
}

impl<T, E: fmt::Debug + fmt::Display> std::error::Error for WaitTimeoutError<T, E> {}

impl<T, E> WaitTimeoutError<T, E> {
    /// Whether the wait ran out of time.
    pub fn is_timeout(&self) -> bool {
        matches!(self, WaitTimeoutError::Timeout(_))
    }

    /// The ticket error, if the op finished without a value.
    pub fn into_failed(self) -> Option<TicketError<E>> {
        match self {
            WaitTimeoutError::Failed(e) => Some(e),
            WaitTimeoutError::Timeout(_) => None,
        }
    }
}

impl<T, E: fmt::Debug> fmt::Debug for TryWaitError<T, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TryWaitError::Pending(_) => f.write_str("Pending(..)"),
            TryWaitError::Failed(e) => f.debug_tuple("Failed").field(e).finish(),
        }
    }
}

impl<T, E: fmt::Display> fmt::Display for TryWaitError<T, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TryWaitError::Pending(t) => write!(f, "op `{}` has not finished", t.label()),
            TryWaitError::Failed(e) => e.fmt(f),
        }
    }
}

impl<T, E: fmt::Debug + fmt::Display> std::error::Error for TryWaitError<T, E> {}
