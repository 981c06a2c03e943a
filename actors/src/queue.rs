//! A lane's queue: what both sides of a lane see, and the protocol that
//! tells the actor a lane has work.
//!
//! # Protocol
//!
//! Each lane is a bounded channel plus a counter, `pending`: ops queued and
//! counted but not yet accounted for by the actor. Every change to it is a
//! read-modify-write, so its modification order alone decides who acts.
//!
//! - Submitter: queue the op, then `pending.fetch_add(1)`
//!   ([`LaneShared::count_queued`]); the one whose add found 0 sends
//!   `Ready(lane)` to the actor's mailbox.
//! - Actor: it serves a lane from a local budget of ops it knows are queued
//!   ([`LaneCore::next`]). When the budget runs out it subtracts the ops it
//!   took since the last look (`fetch_sub`) and reads what is left: that is
//!   the new budget. If nothing is left the lane goes idle; the next add
//!   finds 0 and sends `Ready`.
//!
//! Why it holds: an op is counted only after it is queued, so the budget
//! never exceeds the ops in the queue and `try_recv` within the budget never
//! comes back empty. Each transition of `pending` from 0 is paired with the
//! actor's return to 0 before it, so exactly one `Ready` is sent per idle
//! period and it always finds the lane idle: no wake-up is lost and none is
//! doubled. In a steady stream the actor touches the shared counter once
//! per budget, not once per op.
//!
//! Dropping the last handle sets `closed` ([`LaneShared::close`]) and sends
//! `Closed(lane)`; the actor forgets the lane once it is closed and nothing
//! is counted in `pending` ([`LaneCore::is_finished`]).

use std::sync::Arc;
use std::time::Instant;

use crate::op::Task;
use crate::stats::Counters;
use crate::sync::channel::Receiver;
use crate::sync::{AtomicBool, AtomicU64, CachePadded, Ordering};

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
    pending: CachePadded<AtomicU64>,
    pub(crate) closed: AtomicBool,
    pub(crate) counters: Counters,
}

/// What counting a queued op found, for the submitter.
#[must_use = "a lane that was idle needs a `Ready` message to its actor"]
pub(crate) enum Counted {
    /// The actor had gone idle on this lane: the submitter sends `Ready`.
    WasIdle,
    /// The actor already counts on ops of this lane.
    Known,
}

impl LaneShared {
    pub(crate) fn new(id: u64) -> Self {
        LaneShared {
            id,
            pending: CachePadded(AtomicU64::new(0)),
            closed: AtomicBool::new(false),
            counters: Counters::default(),
        }
    }

    /// The submitter's half of the protocol (module docs): counts one op
    /// that is already queued.
    pub(crate) fn count_queued(&self) -> Counted {
        if self.pending.fetch_add(1, Ordering::AcqRel) == 0 {
            Counted::WasIdle
        } else {
            Counted::Known
        }
    }

    /// Marks the lane's last handle gone, after its last count.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
    }
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

impl<E> LaneCore<E> {
    pub(crate) fn new(shared: Arc<LaneShared>, rx: Receiver<Envelope<E>>) -> Self {
        LaneCore {
            shared,
            rx,
            head: None,
            budget: 0,
            taken: 0,
        }
    }

    /// The actor's half of the protocol (module docs): the next op to
    /// serve, or `None` if the lane has gone idle.
    pub(crate) fn next(&mut self) -> Option<Envelope<E>> {
        if let Some(head) = self.head.take() {
            return Some(head);
        }
        if self.budget == 0 {
            let pending = &self.shared.pending;
            let taken = std::mem::take(&mut self.taken);
            self.budget = if taken == 0 {
                // Nothing to subtract: a load will do. A stale value can only
                // miss recent adds, and the add that found 0 sends `Ready`.
                pending.load(Ordering::Acquire)
            } else {
                pending.fetch_sub(taken, Ordering::AcqRel) - taken
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
