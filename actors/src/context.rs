//! Which actor, if any, the current thread works for.
//!
//! An actor thread and the workers of its pool carry their actor's id. A
//! thread that carries one must never block on a ticket or a full lane: the
//! op it runs would wait for work queued behind itself (same actor) or for an
//! actor that may be waiting for it (another actor). Such waits return
//! `WouldDeadlock` instead of hanging.

use std::cell::Cell;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::sync::thread_local;

/// Identifies one actor for the life of the process.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ActorId(u64);

impl ActorId {
    /// No actor: what work started outside every actor names (actors'
    /// ids begin at 1).
    pub const NONE: ActorId = ActorId(0);

    pub(crate) fn next() -> ActorId {
        // Plain std atomic: ids are not part of any checked protocol.
        static NEXT: AtomicU64 = AtomicU64::new(1);
        ActorId(NEXT.fetch_add(1, Ordering::Relaxed))
    }

    /// The id as a number.
    pub fn as_u64(self) -> u64 {
        self.0
    }
}

impl fmt::Debug for ActorId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ActorId({})", self.0)
    }
}

impl fmt::Display for ActorId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "actor#{}", self.0)
    }
}

#[cfg(not(weft_loom))]
thread_local! {
    static CURRENT: Cell<Option<ActorId>> = const { Cell::new(None) };
}

#[cfg(weft_loom)]
thread_local! {
    static CURRENT: Cell<Option<ActorId>> = Cell::new(None);
}

/// The actor the current thread works for: its own actor thread, or a worker
/// of that actor's pool marked with [`mark_current_thread`].
pub fn current_actor() -> Option<ActorId> {
    CURRENT.with(Cell::get)
}

/// Marks the current thread as working for actor `id` for the rest of its
/// life. Engines call this from the start handler of their pool's workers,
/// so that a worker that blocks on its own actor gets `WouldDeadlock`.
pub fn mark_current_thread(id: ActorId) {
    CURRENT.with(|c| c.set(Some(id)));
}
