//! The baseline of `contention`, `reentry` and `chain`: one engine shared
//! behind a mutex, the way the seeds share theirs. The kernels are weft's
//! own (`TensorOp::run`, faer for GEMM) with the rule weft's CPU engine uses
//! for when an op spreads over the pool, so only the way callers reach the
//! engine differs.
//!
//! A rayon pool with the domain's threads, a `parking_lot::Mutex` around it,
//! a thread-local guard that refuses a nested entry on the same thread, and
//! the caller entering with `pool.install`. Entries wait for the lock with
//! `try_lock_for`, so a would-be deadlock is reported, not hung on.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use weft::{
    error::TensorError,
    ops::{HostRun, TensorOp},
    tensor::Meta,
    Tensor,
};
// The one engine-internal name the harness uses: when a kernel spreads over
// the pool.
use weft_cpu::PARALLEL_THRESHOLD;
use weft_examples::BoxError;

/// How long an application thread waits to enter the mutex engine: long
/// enough never to give up on a live holder, short enough never to hang.
pub(crate) const ENTRY_TIMEOUT: Duration = Duration::from_secs(5);
/// How long an entry from inside an op waits for the engine lock. The
/// holder is the very caller whose op is waiting, so any wait ends only
/// at the bound: a short one keeps the harness quick (and flatters the
/// baseline, whose failures would cost more with a longer bound).
pub(crate) const NESTED_TIMEOUT: Duration = Duration::from_millis(10);

/// An engine's kernels, run on the current rayon pool with `threads`.
pub(crate) struct Kernels {
    pub(crate) threads: usize,
}

impl Kernels {
    pub(crate) fn execute(
        &self,
        op: &TensorOp,
        inputs: &[&Tensor],
    ) -> Result<Vec<Tensor>, TensorError> {
        let metas: Vec<Meta> = inputs.iter().map(|t| Meta::of(t)).collect();
        let outputs = op.infer(&metas)?;
        // The same work estimate as `CpuEngine::execute_inferred`.
        let elements: usize = outputs
            .iter()
            .map(|m| m.shape.iter().product::<usize>())
            .sum();
        let work = match op {
            TensorOp::Matmul => {
                elements.saturating_mul(inputs[0].shape().last().copied().unwrap_or(1))
            }
            TensorOp::Linalg(_) | TensorOp::Einsum(_) => usize::MAX,
            TensorOp::Reduce { .. } => inputs[0].len(),
            _ => elements,
        };
        let threads = if work >= PARALLEL_THRESHOLD {
            self.threads
        } else {
            1
        };
        op.run(inputs, threads)
    }
}

/// A rayon pool with the domain's threads, and the kernels that run on it.
struct PoolEngine {
    pool: rayon::ThreadPool,
    kernels: Kernels,
}

/// What an entry from a rayon worker does.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum WorkerEntry {
    /// Waits for the engine lock like any caller (bounded by the timeout).
    Wait,
    /// Runs inline on a fresh serial engine instead, as the seeds do for
    /// entries from a rayon worker: it completes, but outside the shared
    /// engine (its pool, its caches, its buffers).
    SerialInline,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum EntryError {
    /// The thread-local guard refused a nested entry on this thread.
    Reentered,
    /// The lock stayed held for the whole bound: waiting on would deadlock.
    WouldDeadlock,
}

thread_local! {
    /// The shared engines this thread has entered and not left.
    static ENTERED: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
}

/// One entry's mark in `ENTERED`, removed when the entry ends.
struct EntryGuard(u64);

impl EntryGuard {
    fn enter(engine: u64) -> Result<EntryGuard, EntryError> {
        ENTERED.with(|entered| {
            let mut entered = entered.borrow_mut();
            if entered.contains(&engine) {
                return Err(EntryError::Reentered);
            }
            entered.push(engine);
            Ok(EntryGuard(engine))
        })
    }
}

impl Drop for EntryGuard {
    fn drop(&mut self) {
        ENTERED.with(|entered| {
            let mut entered = entered.borrow_mut();
            if let Some(at) = entered.iter().rposition(|&e| e == self.0) {
                entered.remove(at);
            }
        });
    }
}

/// The engine behind a `parking_lot::Mutex`, entered through a thread-local
/// re-entry guard, the caller running its work with `pool.install`.
pub(crate) struct SharedEngine {
    id: u64,
    engine: Mutex<PoolEngine>,
    worker_entry: WorkerEntry,
    refused: AtomicU64,
    timed_out: AtomicU64,
    pub(crate) fallbacks: AtomicU64,
}

impl SharedEngine {
    pub(crate) fn new(threads: usize, worker_entry: WorkerEntry) -> Result<SharedEngine, BoxError> {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("mutex-engine-w{i}"))
            .build()?;
        Ok(SharedEngine {
            id: NEXT.fetch_add(1, Ordering::Relaxed),
            engine: Mutex::new(PoolEngine {
                pool,
                kernels: Kernels { threads },
            }),
            worker_entry,
            refused: AtomicU64::new(0),
            timed_out: AtomicU64::new(0),
            fallbacks: AtomicU64::new(0),
        })
    }

    /// Runs `f` with the engine: guard, lock (waiting at most `timeout`),
    /// then `pool.install`.
    pub(crate) fn enter<R: Send>(
        &self,
        timeout: Duration,
        f: impl FnOnce(&Kernels) -> R + Send,
    ) -> Result<R, EntryError> {
        let _entered = EntryGuard::enter(self.id).inspect_err(|_| {
            self.refused.fetch_add(1, Ordering::Relaxed);
        })?;
        if self.worker_entry == WorkerEntry::SerialInline && rayon::current_thread_index().is_some()
        {
            self.fallbacks.fetch_add(1, Ordering::Relaxed);
            return Ok(f(&Kernels { threads: 1 }));
        }
        let Some(engine) = self.engine.try_lock_for(timeout) else {
            self.timed_out.fetch_add(1, Ordering::Relaxed);
            return Err(EntryError::WouldDeadlock);
        };
        let engine: &PoolEngine = &engine;
        Ok(engine.pool.install(|| f(&engine.kernels)))
    }

    pub(crate) fn reset_counts(&self) {
        self.refused.store(0, Ordering::Relaxed);
        self.timed_out.store(0, Ordering::Relaxed);
        self.fallbacks.store(0, Ordering::Relaxed);
    }

    pub(crate) fn why(&self) -> String {
        let (refused, timed_out) = (
            self.refused.load(Ordering::Relaxed),
            self.timed_out.load(Ordering::Relaxed),
        );
        let mut why = Vec::new();
        if refused > 0 {
            why.push(format!("{refused} guard refusals"));
        }
        if timed_out > 0 {
            why.push(format!("{timed_out} lock timeouts (would deadlock)"));
        }
        why.join(", ")
    }
}
