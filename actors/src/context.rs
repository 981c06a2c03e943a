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

/// The actor the current thread works for: its own actor thread, a worker
/// of that actor's pool marked with [`mark_current_thread`], or a worker of
/// a pool lent to it ([`lend_workers`]).
pub fn current_actor() -> Option<ActorId> {
    let marked = CURRENT.with(Cell::get);
    #[cfg(not(weft_loom))]
    let marked = marked.or_else(lent::actor_of_current_thread);
    marked
}

/// Marks the current thread as working for actor `id` for the rest of its
/// life. Engines call this from the start handler of their pool's workers,
/// so that a worker that blocks on its own actor gets `WouldDeadlock`.
pub fn mark_current_thread(id: ActorId) {
    CURRENT.with(|c| c.set(Some(id)));
}

/// Marks the current thread as working for actor `id` until the guard is
/// dropped, which restores what it was marked as before: an actor run on a
/// caller's thread ([`ActorJob`](crate::ActorJob)) leaves the thread as it
/// found it.
pub(crate) fn mark_current_thread_for(id: ActorId) -> Marked {
    let previous = CURRENT.with(|c| c.replace(Some(id)));
    Marked { previous }
}

/// Restores the current thread's mark when dropped
/// ([`mark_current_thread_for`]).
pub(crate) struct Marked {
    previous: Option<ActorId>,
}

impl Drop for Marked {
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(self.previous));
    }
}

#[cfg(not(weft_loom))]
pub use lent::{lend_workers, LentWorkers};

/// Pools an application lent to an actor: their workers are the actor's
/// while it runs, though their threads are the application's and carry no
/// mark of their own (weft cannot run code on a caller's worker before its
/// tasks, and a task stolen from an op's parallel loop runs on whichever
/// worker took it). Without loom: a model runs no caller's pool.
#[cfg(not(weft_loom))]
mod lent {
    use parking_lot::RwLock;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::ActorId;

    /// Whether the current thread is a worker of one lent pool.
    type IsWorker = Box<dyn Fn() -> bool + Send + Sync>;

    /// Every lent pool, by the key its guard removes it with.
    /// Read by every unmarked thread that waits while a pool is lent.
    static LENT: RwLock<Vec<(u64, ActorId, IsWorker)>> = RwLock::new(Vec::new());
    /// How many pools are lent: no thread looks at the list while none is.
    static COUNT: AtomicUsize = AtomicUsize::new(0);

    /// Marks the workers of a pool the application lent to actor `id`
    /// (`is_worker` tells, on any thread, whether it is one of them) as
    /// working for it until the guard is dropped: a blocking wait on one of
    /// them is refused as on the actor's own workers. A worker of pools
    /// lent to several actors works for the first still lent. `is_worker`
    /// runs under the list's read lock, on every thread that asks which actor it
    /// works for: a quick look at the thread (such as rayon's
    /// `ThreadPool::current_thread_index`), never a call into weft.
    pub fn lend_workers(
        id: ActorId,
        is_worker: impl Fn() -> bool + Send + Sync + 'static,
    ) -> LentWorkers {
        static KEYS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let key = KEYS.fetch_add(1, Ordering::Relaxed);
        let mut lent = LENT.write();
        lent.push((key, id, Box::new(is_worker)));
        COUNT.store(lent.len(), Ordering::Release);
        LentWorkers { key }
    }

    /// A pool's workers lent to an actor ([`lend_workers`]); dropping it
    /// gives them back.
    #[derive(Debug)]
    pub struct LentWorkers {
        key: u64,
    }

    impl Drop for LentWorkers {
        fn drop(&mut self) {
            let mut lent = LENT.write();
            lent.retain(|(key, ..)| *key != self.key);
            COUNT.store(lent.len(), Ordering::Release);
        }
    }

    /// The actor a pool that the current thread works in is lent to.
    pub(super) fn actor_of_current_thread() -> Option<ActorId> {
        if COUNT.load(Ordering::Acquire) == 0 {
            return None;
        }
        let lent = LENT.read();
        lent.iter()
            .find(|(_, _, is_worker)| is_worker())
            .map(|(_, id, _)| *id)
    }
}
