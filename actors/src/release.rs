//! Deferred release: names of resources handed back from any thread, taken
//! by the actor that owns the resources between its ops.
//!
//! An engine's resources (resident tensors) are named by handles held in
//! application code and in queued ops. Dropping the last handle cannot
//! touch the engine — only its actor may — so it sends the name here
//! instead, and the actor drains the queue in its housekeeping
//! ([`crate::Housekeeping`]).
//!
//! # Waking the actor, batched
//!
//! A [`Releaser`] made [`Releaser::nudging`] an actor wakes it, so that a
//! name released while the actor is idle is freed promptly, not at its next
//! op. One nudge serves a batch: `pending` is set by the release that finds
//! it clear, and that release alone nudges; the drain clears it before it
//! takes names. Every access to `pending` is a read-modify-write, so the
//! drain's swap reads a value in the release sequence of the release whose
//! swap found it set, and that release's name (sent before its swap) is
//! visible to the `try_recv` after the drain's swap. So a release either
//! nudges, or its name is taken by a drain that a nudge already asked for.
//! The loom model `release_wakes_an_idle_actor` checks it.
//!
//! An op may drain too ([`Released::drain_in_op`], so that what it sees
//! of the engine is current), without clearing `pending`: a nudge in
//! flight still comes and its drain clears it, so a release meanwhile is
//! taken by that drain, and a stream of releases while ops run sends one
//! nudge, not one per op. The loom model `an_op_drain_keeps_the_nudge`
//! checks it.
//!
//! # Why a resource is never released while an op still uses it
//!
//! Every op that names a resource holds a handle clone until the op has
//! run (its closure is dropped after the run, on the actor), so the last
//! clone, and with it the name's [`Releaser::release`], comes after every
//! such op. The loom model `handle_release_vs_queued_reader` checks the
//! race between a handle dropped on another thread and the op that reads
//! through a clone.

use std::sync::Arc;

use crate::housekeeping::Nudge;
use crate::sync::{channel, AtomicBool, Ordering};

/// The sending side: cheap to clone, usable from any thread.
#[derive(Debug)]
pub struct Releaser<T> {
    names: channel::Sender<T>,
    pending: Arc<AtomicBool>,
    nudge: Option<Nudge>,
}

/// The actor's side: drains what was released.
#[derive(Debug)]
pub struct Released<T> {
    names: channel::Receiver<T>,
    pending: Arc<AtomicBool>,
}

/// A release queue: its sending and draining sides. The sending side wakes
/// nobody until it is made [`Releaser::nudging`] an actor.
pub fn release_queue<T>() -> (Releaser<T>, Released<T>) {
    let (names, taken) = channel::unbounded();
    let pending = Arc::new(AtomicBool::new(false));
    (
        Releaser {
            names,
            pending: pending.clone(),
            nudge: None,
        },
        Released {
            names: taken,
            pending,
        },
    )
}

impl<T> Releaser<T> {
    /// This releaser, and every clone of it, nudges the actor whose
    /// housekeeping drains the queue when a release finds none pending.
    pub fn nudging(self, nudge: Nudge) -> Self {
        Releaser {
            nudge: Some(nudge),
            ..self
        }
    }

    /// Hands `name` back. Returns `false` if the draining side is gone
    /// (the engine, and every resource with it, no longer exists).
    pub fn release(&self, name: T) -> bool {
        if self.names.send(name).is_err() {
            return false;
        }
        if let Some(nudge) = &self.nudge {
            if !self.pending.swap(true, Ordering::AcqRel) {
                nudge.nudge();
            }
        }
        true
    }
}

impl<T> Clone for Releaser<T> {
    fn clone(&self) -> Self {
        Releaser {
            names: self.names.clone(),
            pending: self.pending.clone(),
            nudge: self.nudge.clone(),
        }
    }
}

impl<T> Released<T> {
    /// Calls `f` with every name released so far: the housekeeping's
    /// drain, which a nudge asks for; a release after it nudges again.
    pub fn drain(&self, mut f: impl FnMut(T)) {
        // Before taking names: a release after this swap nudges again.
        self.pending.swap(false, Ordering::AcqRel);
        while let Ok(name) = self.names.try_recv() {
            f(name);
        }
    }

    /// Calls `f` with every name released so far, from an op: leaves the
    /// nudge armed as it is (see the module docs), so that releases
    /// between ops do not each nudge the actor.
    pub fn drain_in_op(&self, mut f: impl FnMut(T)) {
        while let Ok(name) = self.names.try_recv() {
            f(name);
        }
    }
}
