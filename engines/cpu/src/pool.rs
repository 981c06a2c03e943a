//! The domain's pinned pool: rayon workers pinned as the configuration
//! says, with the building thread (the actor) as worker 0, every pin read
//! back from the thread itself, and a drop that returns only once every
//! worker has left its loop, its jobs done (a joined actor leaves no thread
//! behind).

#[cfg(not(weft_loom))]
use std::any::Any;
#[cfg(not(weft_loom))]
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Condvar, Mutex};
use weft_topology::CpuSet;
#[cfg(not(weft_loom))]
use weft_topology::{current_thread_cpus, pin_current_thread, AffinityError};

#[cfg(not(weft_loom))]
use super::lease::Lease;
#[cfg(not(weft_loom))]
use super::Pinning;
use super::{CpuEngineConfig, EngineError, Leases};

/// What runs a domain's parallel kernels: its rayon pool.
#[cfg(not(weft_loom))]
pub(super) type Workers = rayon::ThreadPool;

/// Under `--cfg weft_loom` a domain has no pool: its one thread is the
/// actor's (a loom thread), and [`Workers::install`] runs in place. Loom
/// cannot model rayon's threads, and the engine's kernels are serial at
/// one thread (`Compute::parallel` is false), so nothing else changes.
#[cfg(weft_loom)]
#[derive(Debug)]
pub(super) struct Workers;

#[cfg(weft_loom)]
impl Workers {
    /// Runs `op` on the calling thread.
    pub(super) fn install<R: Send>(&self, op: impl FnOnce() -> R + Send) -> R {
        op()
    }

    /// One: the actor's thread.
    pub(super) fn current_num_threads(&self) -> usize {
        1
    }
}

/// A rayon pool whose threads are pinned and read back.
pub(super) struct PinnedPool {
    /// Panics of jobs spawned on the pool (`pool().spawn`), which rayon
    /// would otherwise answer by aborting the process.
    pub(super) panics: Arc<PoolPanics>,
    pub(super) rayon: Arc<Workers>,
    /// The CPUs each thread reported at build time, by worker index.
    pub(super) worker_cpus: Vec<CpuSet>,
    /// What leasing the workers' CPUs found.
    pub(super) leases: Leases,
    /// The CPUs this pool holds against other pools, released with it.
    #[cfg(not(weft_loom))]
    _held: Vec<Lease>,
    /// Declared after `rayon`: dropped after it, it waits for the workers.
    _exits: ExitWait,
}

/// Counts pool workers that have not exited yet, so that dropping the engine
/// returns only once its threads are on their way out.
#[derive(Default)]
struct Exits {
    running: Mutex<usize>,
    changed: Condvar,
}

impl Drop for PinnedPool {
    fn drop(&mut self) {
        // Before the workers are told to go: a one-thread pool's queued
        // jobs run on the actor, which drops its engine here.
        self.run_spawned_jobs();
    }
}

/// Waits for the pool's workers when dropped.
struct ExitWait(Arc<Exits>);

impl Drop for ExitWait {
    fn drop(&mut self) {
        self.0.wait();
    }
}

impl PinnedPool {
    /// See [`CpuEngine::run_spawned_jobs`](super::CpuEngine::run_spawned_jobs).
    pub(super) fn run_spawned_jobs(&self) {
        #[cfg(not(weft_loom))]
        if self.rayon.current_num_threads() == 1 {
            // `None` off the pool's threads; `Idle` once nothing is queued.
            while let Some(rayon::Yield::Executed) = self.rayon.yield_now() {}
        }
    }

    /// Builds the pool on the calling thread, which becomes worker 0.
    ///
    /// # Errors
    ///
    /// [`EngineError`]: zero threads, a pin the kernel refused or narrowed,
    /// or a pool rayon could not build.
    #[cfg(not(weft_loom))]
    pub(super) fn build(config: &CpuEngineConfig) -> Result<PinnedPool, EngineError> {
        if let Some(pool) = &config.pool {
            // The caller's pool, its threads pinned (or not) as the caller
            // chose: nothing here is started, pinned or read back.
            return Ok(PinnedPool {
                panics: Arc::default(),
                rayon: pool.clone(),
                worker_cpus: Vec::new(),
                leases: Leases::NotTaken,
                _held: Vec::new(),
                _exits: ExitWait(Arc::default()),
            });
        }
        if config.threads == 0 {
            return Err(EngineError::ZeroThreads);
        }
        let domain = config.index;
        let (cpus, held, leases) = per_core_cpus(config);
        let assigned: Vec<Option<CpuSet>> = (0..config.threads)
            .map(|worker| match config.pinning {
                Pinning::PerCore if !cpus.is_empty() => {
                    Some(CpuSet::single(cpus[worker % cpus.len()]))
                }
                Pinning::Domain | Pinning::PerCore => Some(config.cpus.clone()),
                Pinning::None => None,
            })
            .collect();
        if let Some(set) = &assigned[0] {
            pin(set).map_err(|source| EngineError::Pinning {
                domain,
                worker: 0,
                source,
            })?;
        }
        let pin_errors: Arc<Mutex<Vec<(usize, AffinityError)>>> = Arc::default();
        let panics = Arc::new(PoolPanics::default());
        let exits = Arc::new(Exits::default());
        *exits.running.lock() = config.threads - 1;
        let start = {
            let assigned = assigned.clone();
            let pin_errors = pin_errors.clone();
            let hook = config.on_worker_start.clone();
            move |worker: usize| {
                if let Some(hook) = &hook {
                    hook(worker);
                }
                if let Some(set) = &assigned[worker] {
                    if let Err(e) = pin(set) {
                        pin_errors.lock().push((worker, e));
                    }
                }
            }
        };
        let exit = {
            let exits = exits.clone();
            move |_worker: usize| {
                *exits.running.lock() -= 1;
                exits.changed.notify_all();
            }
        };
        let name = config.name.clone();
        let mut builder = rayon::ThreadPoolBuilder::new();
        if let Some(bytes) = config.stack_size {
            builder = builder.stack_size(bytes);
        }
        let pool = builder
            .num_threads(config.threads)
            .use_current_thread()
            .thread_name(move |i| format!("{name}-w{i}"))
            .start_handler(start)
            .exit_handler(exit)
            .panic_handler({
                let panics = panics.clone();
                move |payload| panics.record(payload)
            })
            .build()
            .map_err(|source| EngineError::Pool { domain, source })?;
        let mut built = PinnedPool {
            panics,
            rayon: Arc::new(pool),
            worker_cpus: Vec::new(),
            leases,
            _held: held,
            _exits: ExitWait(exits),
        };
        // Every worker reports its mask from its own thread; the start
        // handlers have run by the time a worker takes a broadcast job.
        let readback = built.rayon.broadcast(|_| current_thread_cpus());
        if let Some((worker, source)) = pin_errors.lock().pop() {
            return Err(EngineError::Pinning {
                domain,
                worker,
                source,
            });
        }
        for (worker, result) in readback.into_iter().enumerate() {
            let actual = match result {
                Ok(actual) => actual,
                Err(AffinityError::Unsupported) => continue,
                Err(source) => {
                    return Err(EngineError::Pinning {
                        domain,
                        worker,
                        source,
                    })
                }
            };
            if let Some(expected) = &assigned[worker] {
                if &actual != expected {
                    return Err(EngineError::PinMismatch {
                        domain,
                        worker,
                        expected: expected.clone(),
                        actual,
                    });
                }
            }
            built.worker_cpus.push(actual);
        }
        Ok(built)
    }
}

/// Under loom: no pool, nothing started or pinned (see [`Workers`]); the
/// configuration's threads, pinning and pool are not used.
#[cfg(weft_loom)]
impl PinnedPool {
    pub(super) fn build(_config: &CpuEngineConfig) -> Result<PinnedPool, EngineError> {
        Ok(PinnedPool {
            panics: Arc::default(),
            rayon: Arc::new(Workers),
            worker_cpus: Vec::new(),
            leases: Leases::NotTaken,
            _exits: ExitWait(Arc::default()),
        })
    }
}

/// The CPUs per-core workers take, in order (worker `i` on the `i`-th,
/// wrapping around): under [`Pinning::PerCore`] on Linux, the CPUs the
/// pool leased first, then those other pools hold; else the domain's.
#[cfg(not(weft_loom))]
fn per_core_cpus(config: &CpuEngineConfig) -> (Vec<usize>, Vec<Lease>, Leases) {
    let cpus: Vec<usize> = config.cpus.iter().collect();
    #[cfg(target_os = "linux")]
    if config.pinning == Pinning::PerCore && !cpus.is_empty() {
        return crate::lease::take(&cpus, config.threads, config.lease_dir.as_deref());
    }
    (cpus, Vec::new(), Leases::NotTaken)
}

/// Pins the calling thread; where the platform cannot pin, runs unpinned
/// (discovery there gives one domain, so nothing is lost but locality).
#[cfg(not(weft_loom))]
fn pin(cpus: &CpuSet) -> Result<(), AffinityError> {
    match pin_current_thread(cpus) {
        Ok(_) | Err(AffinityError::Unsupported) => Ok(()),
        Err(e) => Err(e),
    }
}

impl Exits {
    /// Waits until every worker has left its loop, so that a joined actor
    /// leaves no pool thread behind. A worker leaves once its job is done:
    /// a job spawned on the pool that outlives its op keeps the engine's
    /// drop (and the actor's shutdown) waiting for it, and a shutdown with
    /// a deadline names it (`Runtime::shutdown_timeout`).
    fn wait(&self) {
        let mut running = self.running.lock();
        while *running > 0 {
            self.changed.wait(&mut running);
        }
    }
}

/// The panics of jobs spawned on a domain's pool: counted, the last one's
/// message kept, the worker and the actor alive.
#[derive(Debug, Default)]
pub(super) struct PoolPanics {
    count: AtomicU64,
    last: Mutex<Option<String>>,
}

impl PoolPanics {
    #[cfg(not(weft_loom))]
    fn record(&self, payload: Box<dyn Any + Send>) {
        let message = if let Some(s) = payload.downcast_ref::<&str>() {
            (*s).to_owned()
        } else if let Some(s) = payload.downcast_ref::<String>() {
            s.clone()
        } else {
            "a panic payload that is not a string".to_owned()
        };
        // The payload is the user's value: a panic in its drop would take
        // the worker (and, in rayon, the process) down with it.
        if let Err(inner) = catch_unwind(AssertUnwindSafe(move || drop(payload))) {
            std::mem::forget(inner);
        }
        *self.last.lock() = Some(message);
        self.count.fetch_add(1, Ordering::Relaxed);
    }

    /// How many spawned jobs panicked, and the last one's message.
    pub(super) fn snapshot(&self) -> (u64, Option<String>) {
        (self.count.load(Ordering::Relaxed), self.last.lock().clone())
    }
}
