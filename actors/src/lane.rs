//! Lanes: ordered, bounded streams of ops from application code to one actor.
//!
//! # Protocol: telling the actor a lane has work
//!
//! Each lane is a bounded channel plus a counter, `pending`: ops queued and
//! counted but not yet accounted for by the actor. Every change to it is a
//! read-modify-write, so its modification order alone decides who acts.
//!
//! - Submitter: queue the op, then `pending.fetch_add(1)`; the one whose add
//!   found 0 sends `Ready(lane)` to the actor's mailbox.
//! - Actor: it serves a lane from a local budget of ops it knows are queued.
//!   When the budget runs out it subtracts the ops it took since the last
//!   look (`fetch_sub`) and reads what is left: that is the new budget. If
//!   nothing is left the lane goes idle; the next add finds 0 and sends
//!   `Ready`.
//!
//! Why it holds: an op is counted only after it is queued, so the budget
//! never exceeds the ops in the queue and `try_recv` within the budget never
//! comes back empty. Each transition of `pending` from 0 is paired with the
//! actor's return to 0 before it, so exactly one `Ready` is sent per idle
//! period and it always finds the lane idle: no wake-up is lost and none is
//! doubled. In a steady stream the actor touches the shared counter once
//! per budget, not once per op.
//!
//! Dropping the last handle sets `closed` and sends `Closed(lane)`; the actor
//! forgets the lane once it is closed and nothing is counted in `pending`.

use std::fmt;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::actor::{Message, Shared};
use crate::context::{current_actor, ActorId};
use crate::op::{Op, OpBody, Task, TaskCell};
use crate::stats::{Counters, QUEUE_WAIT_SAMPLING};
use crate::sync::channel::{self, Receiver, Sender, TrySendError};
use crate::sync::{AtomicBool, AtomicU64, CachePadded, Ordering};
use crate::ticket::Ticket;

/// A queued op and, for sampled ops, when it was submitted. Dropping an
/// envelope whose op was neither run nor cancelled (its actor died)
/// resolves the op's ticket with `ActorLost`.
pub(crate) struct Envelope<E> {
    pub(crate) task: Arc<dyn Task<E>>,
    pub(crate) submitted_at: Option<Instant>,
}

impl<E> Drop for Envelope<E> {
    fn drop(&mut self) {
        self.task.abandon();
    }
}

/// The part of a lane both sides see.
pub(crate) struct LaneShared {
    pub(crate) id: u64,
    /// Added to by every submit: on a line of its own.
    pub(crate) pending: CachePadded<AtomicU64>,
    pub(crate) closed: AtomicBool,
    pub(crate) counters: Counters,
}

/// The actor's side of a lane.
pub(crate) struct LaneCore<E> {
    pub(crate) shared: Arc<LaneShared>,
    pub(crate) rx: Receiver<Envelope<E>>,
    /// An op taken from the queue whose events have not all fired yet.
    pub(crate) head: Option<Envelope<E>>,
    /// Ops known to be queued and not yet taken.
    budget: u64,
    /// Ops taken since the counter was last read.
    taken: u64,
}

/// An ordered stream of ops into one actor. Ops of one lane run in the order
/// they were submitted; lanes of an actor are served round-robin. Clones
/// share the same stream.
///
/// `submit` waits while the lane is full, `try_submit` returns
/// [`TrySubmitError::Full`], `submit_timeout` waits at most a given time.
/// Each hands the op back when it is refused.
pub struct Lane<E> {
    inner: Arc<LaneHandle<E>>,
}

struct LaneHandle<E> {
    tx: Sender<Envelope<E>>,
    lane: Arc<LaneShared>,
    actor: Arc<Shared<E>>,
}

impl<E> Clone for Lane<E> {
    fn clone(&self) -> Self {
        Lane {
            inner: self.inner.clone(),
        }
    }
}

impl<E> fmt::Debug for Lane<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lane")
            .field("actor", &self.inner.actor.name)
            .field("lane", &self.inner.lane.id)
            .finish()
    }
}

/// `submit` refused an op; the op is handed back.
pub enum SubmitError<T> {
    /// The actor is shut down (or its thread died).
    Closed(T),
    /// The lane is full and the caller works for an actor, which must never
    /// block on another queue.
    WouldDeadlock(T),
}

/// `try_submit` refused an op; the op is handed back.
pub enum TrySubmitError<T> {
    /// The lane is full.
    Full(T),
    /// The actor is shut down (or its thread died).
    Closed(T),
}

/// `submit_timeout` refused an op; the op is handed back.
pub enum SubmitTimeoutError<T> {
    /// The lane stayed full for the whole timeout.
    Timeout(T),
    /// The actor is shut down (or its thread died).
    Closed(T),
    /// The lane is full and the caller works for an actor.
    WouldDeadlock(T),
}

/// The ticket of an op with body `B` on engine `E`.
pub type TicketFor<B, E> = Ticket<<B as OpBody<E>>::Output, <B as OpBody<E>>::Error>;

enum Refused {
    Closed,
    Full,
    Timeout,
    WouldDeadlock,
}

enum Wait {
    Block,
    Never,
    Until(Instant),
}

impl<E: 'static> Lane<E> {
    pub(crate) fn open(actor: &Arc<Shared<E>>) -> Option<Lane<E>> {
        let entry = actor.enter()?;
        let (tx, rx) = channel::bounded(actor.lane_capacity);
        let lane = Arc::new(LaneShared {
            id: actor.next_lane_id(),
            pending: CachePadded(AtomicU64::new(0)),
            closed: AtomicBool::new(false),
            counters: Counters::default(),
        });
        actor.register_lane(&lane);
        let core = LaneCore {
            shared: lane.clone(),
            rx,
            head: None,
            budget: 0,
            taken: 0,
        };
        actor.mailbox.send(Message::Open(core)).ok()?;
        drop(entry);
        Some(Lane {
            inner: Arc::new(LaneHandle {
                tx,
                lane,
                actor: actor.clone(),
            }),
        })
    }

    /// The actor this lane feeds.
    pub fn actor(&self) -> ActorId {
        self.inner.actor.id
    }

    /// The lane's id within its actor.
    pub fn id(&self) -> u64 {
        self.inner.lane.id
    }

    /// Ops accepted on this lane and not yet finished.
    pub fn queued(&self) -> u64 {
        self.inner.lane.counters.snapshot().queued
    }

    /// Submits `op`, waiting while the lane is full.
    ///
    /// # Errors
    ///
    /// [`SubmitError::Closed`] if the actor is shut down;
    /// [`SubmitError::WouldDeadlock`] if the lane is full and the caller
    /// works for an actor (actors never block on a queue).
    pub fn submit<B: OpBody<E>>(&self, op: Op<B>) -> Result<TicketFor<B, E>, SubmitError<Op<B>>> {
        self.push(op, Wait::Block).map_err(|(op, why)| match why {
            Refused::WouldDeadlock => SubmitError::WouldDeadlock(op),
            _ => SubmitError::Closed(op),
        })
    }

    /// Submits `op` if the lane has room now.
    ///
    /// # Errors
    ///
    /// [`TrySubmitError::Full`] or [`TrySubmitError::Closed`].
    pub fn try_submit<B: OpBody<E>>(
        &self,
        op: Op<B>,
    ) -> Result<TicketFor<B, E>, TrySubmitError<Op<B>>> {
        self.push(op, Wait::Never).map_err(|(op, why)| match why {
            Refused::Closed => TrySubmitError::Closed(op),
            _ => TrySubmitError::Full(op),
        })
    }

    /// Submits `op`, waiting at most `timeout` for room (a timeout too long
    /// to add to the clock, such as `Duration::MAX`, waits as `submit` does).
    ///
    /// # Errors
    ///
    /// [`SubmitTimeoutError::Timeout`], [`SubmitTimeoutError::Closed`], or
    /// [`SubmitTimeoutError::WouldDeadlock`] as for [`Lane::submit`].
    pub fn submit_timeout<B: OpBody<E>>(
        &self,
        op: Op<B>,
        timeout: Duration,
    ) -> Result<TicketFor<B, E>, SubmitTimeoutError<Op<B>>> {
        // A timeout too long to add to the clock waits as `submit` does.
        let wait = Instant::now()
            .checked_add(timeout)
            .map_or(Wait::Block, Wait::Until);
        self.push(op, wait).map_err(|(op, why)| match why {
            Refused::Closed => SubmitTimeoutError::Closed(op),
            Refused::WouldDeadlock => SubmitTimeoutError::WouldDeadlock(op),
            _ => SubmitTimeoutError::Timeout(op),
        })
    }

    /// Runs `f` on the actor with exclusive access to its engine; shorthand
    /// for `submit(Op::new(f))`.
    ///
    /// # Errors
    ///
    /// As [`Lane::submit`].
    pub fn run<F, T>(&self, f: F) -> Result<Ticket<T>, SubmitError<Op<crate::Call<F>>>>
    where
        F: FnOnce(&mut E) -> T + Send + 'static,
        T: Send + 'static,
    {
        self.submit(Op::new(f))
    }

    /// Runs a fallible `f` on the actor; its `Err` becomes
    /// [`TicketError::Op`](crate::TicketError::Op). Shorthand for
    /// `submit(Op::fallible(f))`.
    ///
    /// # Errors
    ///
    /// As [`Lane::submit`].
    pub fn try_run<F, T, Er>(
        &self,
        f: F,
    ) -> Result<Ticket<T, Er>, SubmitError<Op<crate::TryCall<F>>>>
    where
        F: FnOnce(&mut E) -> Result<T, Er> + Send + 'static,
        T: Send + 'static,
        Er: fmt::Display + Send + 'static,
    {
        self.submit(Op::fallible(f))
    }

    fn push<B: OpBody<E>>(
        &self,
        op: Op<B>,
        wait: Wait,
    ) -> Result<TicketFor<B, E>, (Op<B>, Refused)> {
        let handle = &*self.inner;
        let Some(entry) = handle.actor.enter() else {
            return Err((op, Refused::Closed));
        };
        let cell = TaskCell::new(op, handle.actor.id, handle.actor.wait_spin);
        let ticket = Ticket::new(cell.clone());
        let sampled = handle
            .lane
            .counters
            .submitted
            .load(Relaxed)
            .is_multiple_of(QUEUE_WAIT_SAMPLING)
            || handle.actor.timeline.is_some();
        let envelope = Envelope {
            task: cell.clone(),
            submitted_at: sampled.then(Instant::now),
        };
        let sent = match handle.tx.try_send(envelope) {
            Ok(()) => Ok(()),
            Err(TrySendError::Disconnected(e)) => Err((e, Refused::Closed)),
            Err(TrySendError::Full(e)) => handle.push_full(e, wait),
        };
        match sent {
            Ok(()) => {
                handle.lane.counters.submitted.fetch_add(1, Relaxed);
                handle.notify();
                drop(entry);
                Ok(ticket)
            }
            Err((envelope, why)) => {
                drop(entry);
                let op = cell.take_op();
                // Nobody waits for an op that was never queued.
                drop(ticket);
                drop(envelope);
                Err((op, why))
            }
        }
    }
}

impl<E> LaneHandle<E> {
    /// The lane was full: wait as `wait` says, unless the caller works for
    /// an actor, which must never block on a queue.
    #[cold]
    fn push_full(&self, envelope: Envelope<E>, wait: Wait) -> Result<(), (Envelope<E>, Refused)> {
        match wait {
            Wait::Never => Err((envelope, Refused::Full)),
            _ if current_actor().is_some() => Err((envelope, Refused::WouldDeadlock)),
            Wait::Block => self.tx.send(envelope).map_err(|e| (e.0, Refused::Closed)),
            Wait::Until(deadline) => {
                let left = deadline.saturating_duration_since(Instant::now());
                self.tx.send_timeout(envelope, left).map_err(|e| match e {
                    channel::SendTimeoutError::Timeout(e) => (e, Refused::Timeout),
                    channel::SendTimeoutError::Disconnected(e) => (e, Refused::Closed),
                })
            }
        }
    }

    /// The submitter's half of the wake-up protocol (module docs).
    fn notify(&self) {
        if self.lane.pending.fetch_add(1, Ordering::AcqRel) == 0 {
            let _ = self.actor.mailbox.send(Message::Ready(self.lane.id));
        }
    }
}

impl<E> Drop for LaneHandle<E> {
    fn drop(&mut self) {
        self.lane.closed.store(true, Ordering::Release);
        let _ = self.actor.mailbox.send(Message::Closed(self.lane.id));
    }
}

impl<E> LaneCore<E> {
    /// The actor's half of the wake-up protocol (module docs): the next op
    /// to serve, or `None` if the lane has gone idle.
    pub(crate) fn next(&mut self) -> Option<Envelope<E>> {
        if let Some(head) = self.head.take() {
            return Some(head);
        }
        if self.budget == 0 {
            let taken = std::mem::take(&mut self.taken);
            self.budget = if taken == 0 {
                // Nothing to subtract: a load will do. A stale value can only
                // miss recent adds, and the add that found 0 sends `Ready`.
                self.shared.pending.load(Ordering::Acquire)
            } else {
                self.shared.pending.fetch_sub(taken, Ordering::AcqRel) - taken
            };
            if self.budget == 0 {
                return None;
            }
        }
        let envelope = self
            .rx
            .try_recv()
            .unwrap_or_else(|_| unreachable!("the budget never exceeds the queued ops"));
        self.budget -= 1;
        self.taken += 1;
        Some(envelope)
    }

    /// Whether the lane can be forgotten: every handle is gone and no op is
    /// counted. A closed lane whose ops are counted has a `Ready` on its way.
    /// (`closed` is set after the last handle's last add, and read here with
    /// `Acquire`, so those adds are visible.)
    pub(crate) fn is_finished(&self) -> bool {
        self.shared.closed.load(Ordering::Acquire)
            && self.shared.pending.load(Ordering::Acquire) == 0
    }
}

impl<T> SubmitError<T> {
    /// The op that was refused.
    pub fn into_inner(self) -> T {
        match self {
            SubmitError::Closed(t) | SubmitError::WouldDeadlock(t) => t,
        }
    }

    /// Whether the actor is shut down.
    pub fn is_closed(&self) -> bool {
        matches!(self, SubmitError::Closed(_))
    }
}

impl<T> TrySubmitError<T> {
    /// The op that was refused.
    pub fn into_inner(self) -> T {
        match self {
            TrySubmitError::Full(t) | TrySubmitError::Closed(t) => t,
        }
    }

    /// Whether the lane was full.
    pub fn is_full(&self) -> bool {
        matches!(self, TrySubmitError::Full(_))
    }

    /// Whether the actor is shut down.
    pub fn is_closed(&self) -> bool {
        matches!(self, TrySubmitError::Closed(_))
    }
}

impl<T> SubmitTimeoutError<T> {
    /// The op that was refused.
    pub fn into_inner(self) -> T {
        match self {
            SubmitTimeoutError::Timeout(t)
            | SubmitTimeoutError::Closed(t)
            | SubmitTimeoutError::WouldDeadlock(t) => t,
        }
    }

    /// Whether the lane stayed full for the whole timeout.
    pub fn is_timeout(&self) -> bool {
        matches!(self, SubmitTimeoutError::Timeout(_))
    }
}

macro_rules! payload_error {
    ($ty:ident { $($variant:ident => $text:literal),* $(,)? }) => {
        impl<T> fmt::Debug for $ty<T> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self {
                    $($ty::$variant(_) => f.write_str(concat!(stringify!($variant), "(..)")),)*
                }
            }
        }

        impl<T> fmt::Display for $ty<T> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self {
                    $($ty::$variant(_) => f.write_str($text),)*
                }
            }
        }

        impl<T> std::error::Error for $ty<T> {}
    };
}

payload_error!(SubmitError {
    Closed => "the actor is shut down",
    WouldDeadlock => "the lane is full and the caller runs on an actor, which must not block",
});
payload_error!(TrySubmitError {
    Full => "the lane is full",
    Closed => "the actor is shut down",
});
payload_error!(SubmitTimeoutError {
    Timeout => "the lane stayed full for the whole timeout",
    Closed => "the actor is shut down",
    WouldDeadlock => "the lane is full and the caller runs on an actor, which must not block",
});
