//! A lane's queue: what both sides of a lane see, and the protocol that
//! tells the actor a lane has work.
//!
//! # Protocol
//!
//! Each lane is a channel, bounded by its [`Room`], plus a counter, `pending`: ops queued and
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
use crate::sync::{AtomicBool, AtomicU64, AtomicUsize, CachePadded, Condvar, Mutex, Ordering};

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
    /// The lane's bound.
    pub(crate) room: Room,
    pub(crate) closed: AtomicBool,
    pub(crate) counters: Counters,
}

/// A lane's bound: the ops in its queue, at most `capacity`. The queue
/// itself is unbounded and grows in small blocks as ops arrive, so a lane
/// costs what it holds, not what it could hold; this count is what makes
/// it bounded.
///
/// A submitter takes a slot before it queues its op ([`Room::try_take`]);
/// the actor gives it back when it takes the op out ([`Room::give_back`]).
/// A submitter that finds no slot waits on `freed` ([`Room::wait`]),
/// checking again under `lock`; the actor, when its give-back found the
/// lane full, takes `lock` before it notifies. So a waiter either sees the
/// freed slot when it checks, or is already waiting when the notification
/// comes (the actor cannot take `lock` between the check and the wait): no
/// wake-up is lost. The loom model `submit_waits_for_room` checks it.
pub(crate) struct Room {
    held: CachePadded<AtomicUsize>,
    capacity: usize,
    lock: Mutex<()>,
    freed: Condvar,
}

impl Room {
    fn new(capacity: usize) -> Self {
        Room {
            held: CachePadded(AtomicUsize::new(0)),
            capacity,
            lock: Mutex::new(()),
            freed: Condvar::new(),
        }
    }

    /// Takes a slot if there is one.
    pub(crate) fn try_take(&self) -> bool {
        let mut held = self.held.load(Ordering::Relaxed);
        while held < self.capacity {
            match self.held.compare_exchange_weak(
                held,
                held + 1,
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(now) => held = now,
            }
        }
        false
    }

    /// Gives a slot back; wakes the submitters waiting for one if the
    /// lane was full.
    pub(crate) fn give_back(&self) {
        if self.held.fetch_sub(1, Ordering::AcqRel) == self.capacity {
            drop(self.lock.lock());
            self.freed.notify_all();
        }
    }

    /// Waits for a slot until `deadline` (`None`: for as long as it
    /// takes); whether one was taken.
    pub(crate) fn wait(&self, deadline: Option<Instant>) -> bool {
        let mut guard = self.lock.lock();
        loop {
            if self.try_take() {
                return true;
            }
            match deadline {
                None => guard = self.freed.wait(guard),
                Some(deadline) => {
                    let (again, timed_out) = self.freed.wait_until(guard, deadline);
                    if timed_out {
                        return self.try_take();
                    }
                    guard = again;
                }
            }
        }
    }
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
    pub(crate) fn new(id: u64, capacity: usize) -> Self {
        LaneShared {
            id,
            pending: CachePadded(AtomicU64::new(0)),
            room: Room::new(capacity),
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
            .take()
            .unwrap_or_else(|| unreachable!("the budget never exceeds the queued ops"));
        self.budget -= 1;
        self.taken += 1;
        Some(envelope)
    }

    /// Takes the next op out of the queue, and gives its slot back.
    pub(crate) fn take(&self) -> Option<Envelope<E>> {
        let envelope = self.rx.try_recv().ok()?;
        self.shared.room.give_back();
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
