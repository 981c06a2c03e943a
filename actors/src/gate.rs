//! The intake gate: how shutdown stops new work without losing any.
//!
//! # Protocol
//!
//! `state` holds a `CLOSED` bit, a `WAITING` bit and, above them, the number
//! of submitters between [`Gate::enter`] and [`Gate::leave`]. A submitter
//! enters, checks `CLOSED`, queues its op and sends any wake-up, then leaves.
//! Shutdown sets `CLOSED`; from then on every `enter` fails. The actor
//! finishes only once it has seen the gate closed with no one inside and then
//! drained its mailbox and lanes.
//!
//! Why nothing is lost: an op is accepted only by a submitter that entered
//! before the bit was set. Its queueing and wake-up happen before its
//! `leave` (`Release`); the actor's `Acquire` read that sees the count at
//! zero reads a value later in the modification order of `state`, which is
//! only ever changed by read-modify-writes, so it synchronizes with that
//! `leave` and the drain that follows sees the op.
//!
//! No lost wake-up: an actor that finds someone inside sets `WAITING` in the
//! same read-modify-write ([`Gate::quiescent_or_arm`]) and sleeps on its
//! mailbox. The leave that brings the count to zero while `WAITING` is set
//! sees it, clears it and pokes the actor, so the actor never sleeps on a
//! count that already reached zero; and pokes stay bounded by the actor's
//! sleeps, however often a refused submitter knocks.

use crate::sync::{AtomicUsize, Ordering};

const CLOSED: usize = 1;
const WAITING: usize = 2;
const ONE: usize = 4;

#[derive(Debug)]
pub(crate) struct Gate {
    state: AtomicUsize,
}

/// Whether an `enter` got in.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Entered {
    Open,
    Closed,
}

impl Gate {
    pub(crate) fn new() -> Gate {
        Gate {
            state: AtomicUsize::new(0),
        }
    }

    /// Counts the caller in. Even when this returns `Closed` the caller is
    /// counted and must `leave`.
    pub(crate) fn enter(&self) -> Entered {
        if self.state.fetch_add(ONE, Ordering::Acquire) & CLOSED == 0 {
            Entered::Open
        } else {
            Entered::Closed
        }
    }

    /// Counts the caller out; `true` if it was the last one in a closed gate
    /// the actor is waiting on: the caller must poke the actor.
    pub(crate) fn leave(&self) -> bool {
        let last_for_waiter =
            self.state.fetch_sub(ONE, Ordering::Release) == CLOSED | WAITING | ONE;
        if last_for_waiter {
            self.state.fetch_and(!WAITING, Ordering::Relaxed);
        }
        last_for_waiter
    }

    /// Closes the gate; `true` if it was open.
    pub(crate) fn close(&self) -> bool {
        self.state.fetch_or(CLOSED, Ordering::AcqRel) & CLOSED == 0
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.state.load(Ordering::Acquire) & CLOSED != 0
    }

    /// Closed with no one inside: no op can be queued any more.
    pub(crate) fn is_quiescent(&self) -> bool {
        self.state.load(Ordering::Acquire) & !WAITING == CLOSED
    }

    /// The actor's check: `true` if closed with no one inside; otherwise
    /// marks the actor as waiting, so that the last one out pokes it.
    pub(crate) fn quiescent_or_arm(&self) -> bool {
        let armed = self
            .state
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |s| {
                (s & !WAITING != CLOSED).then_some(s | WAITING)
            });
        armed.is_err()
    }
}

#[cfg(all(test, weft_loom))]
mod loom_models {
    use std::sync::Arc;

    use loom::sync::atomic::AtomicBool;
    use loom::thread;

    use super::*;

    /// Once the closer sees the gate quiescent, everything an admitted
    /// submitter did before leaving is visible, and no one is admitted
    /// after the close.
    #[test]
    fn quiescence_sees_every_admitted_submit() {
        loom::model(|| admitted_submits_are_seen(Gate::is_quiescent));
    }

    /// The same with the actor's own check: once `quiescent_or_arm` says
    /// quiescent, everything an admitted submitter did before leaving is
    /// visible (its failed update reads `state` with `Acquire`, as
    /// `is_quiescent` does).
    #[test]
    fn the_arming_check_sees_every_admitted_submit() {
        loom::model(|| admitted_submits_are_seen(Gate::quiescent_or_arm));
    }

    /// One submitter against the closer, which waits until `quiescent`
    /// says so: what an admitted submitter did before leaving is visible.
    fn admitted_submits_are_seen(quiescent: fn(&Gate) -> bool) {
        let gate = Arc::new(Gate::new());
        let queued = Arc::new(AtomicBool::new(false));
        let submitter = {
            let (gate, queued) = (gate.clone(), queued.clone());
            thread::spawn(move || {
                let admitted = gate.enter() == Entered::Open;
                if admitted {
                    // Stands for queueing the op: deliberately Relaxed,
                    // the gate alone must order it.
                    queued.store(true, Ordering::Relaxed);
                }
                let _ = gate.leave();
                admitted
            })
        };
        assert!(gate.close());
        while !quiescent(&gate) {
            thread::yield_now();
        }
        let seen = queued.load(Ordering::Relaxed);
        let admitted = submitter.join().expect("submitter");
        assert_eq!(seen, admitted);
    }

    /// The actor that arms the gate and sleeps is poked by the last one out;
    /// refused submitters after that do not poke again.
    #[test]
    fn last_out_pokes_an_armed_actor() {
        loom::model(|| {
            let gate = Arc::new(Gate::new());
            let poked = Arc::new(loom::sync::atomic::AtomicUsize::new(0));
            let submitter = {
                let (gate, poked) = (gate.clone(), poked.clone());
                thread::spawn(move || {
                    let _ = gate.enter();
                    if gate.leave() {
                        poked.fetch_add(1, Ordering::SeqCst);
                    }
                })
            };
            gate.close();
            let armed = !gate.quiescent_or_arm();
            submitter.join().expect("submitter");
            // Armed while the submitter was inside: it must have poked.
            assert_eq!(poked.load(Ordering::SeqCst), usize::from(armed));
            assert!(gate.quiescent_or_arm());
            assert_eq!(gate.enter(), Entered::Closed);
            assert!(!gate.leave(), "no waiter armed, no poke");
        });
    }
}
