//! Lanes: ordered, bounded streams of ops from application code to one
//! actor — the [`Lane`] handle, its `submit` family and their errors.
//!
//! How a submit tells the actor that a lane has work, and how the actor
//! takes it, is the lane queue's protocol (`queue.rs`).

use std::fmt;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::context::{current_actor, ActorId};
use crate::op::{Call, Op, OpBody, TaskCell, TryCall};
use crate::queue::{Counted, Envelope, LaneCore, LaneShared};
use crate::shared::{Message, Shared};
use crate::stats::QUEUE_WAIT_SAMPLING;
use crate::sync::channel::{self, Sender};
use crate::ticket::Ticket;

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
        let (tx, rx) = channel::unbounded();
        let lane = Arc::new(LaneShared::new(actor.next_lane_id(), actor.lane_capacity));
        actor.register_lane(&lane);
        let core = LaneCore::new(lane.clone(), rx);
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
    pub fn run<F, T>(&self, f: F) -> Result<Ticket<T>, SubmitError<Op<Call<F>>>>
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
    pub fn try_run<F, T, Er>(&self, f: F) -> Result<Ticket<T, Er>, SubmitError<Op<TryCall<F>>>>
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
        let room = &handle.lane.room;
        let slot = if room.try_take() {
            Ok(())
        } else {
            handle.wait_for_room(wait)
        };
        let sent = match slot {
            Err(why) => Err((envelope, why)),
            Ok(()) => handle.tx.send(envelope).map_err(|e| {
                room.give_back();
                (e.0, Refused::Closed)
            }),
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
    /// The lane was full: wait for room as `wait` says, unless the caller
    /// works for an actor, which must never block on a queue.
    #[cold]
    fn wait_for_room(&self, wait: Wait) -> Result<(), Refused> {
        let deadline = match wait {
            Wait::Never => return Err(Refused::Full),
            _ if current_actor().is_some() => return Err(Refused::WouldDeadlock),
            Wait::Block => None,
            Wait::Until(deadline) => Some(deadline),
        };
        if self.lane.room.wait(deadline) {
            Ok(())
        } else {
            Err(Refused::Timeout)
        }
    }

    /// The submitter's half of the lane queue's protocol (`queue.rs`).
    fn notify(&self) {
        match self.lane.count_queued() {
            Counted::WasIdle => {
                let _ = self.actor.mailbox.send(Message::Ready(self.lane.id));
            }
            Counted::Known => {}
        }
    }
}

impl<E> Drop for LaneHandle<E> {
    fn drop(&mut self) {
        self.lane.close();
        let _ = self.actor.mailbox.send(Message::Closed(self.lane.id));
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
