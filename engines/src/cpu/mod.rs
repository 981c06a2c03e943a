//! The CPU engine: a domain's pinned rayon pool, its resident store and
//! buffer pool, and the CPU kernels the vocabulary runs on (dispatched in
//! `exec`).

mod buffer;
mod create;
mod einsum;
mod elementwise;
mod exec;
mod gemm;
mod linalg;
mod reduce;
mod store;
mod structural;
mod unary;

pub use buffer::BufferPool;
pub use exec::PARALLEL_THRESHOLD;
pub use store::Store;

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use weft_topology::{current_thread_cpus, pin_current_thread, AffinityError, CpuSet};

use crate::engine::{BufferStats, EngineMemory, ExecError, Place, TensorEngine, TensorId};
use crate::ops::{Meta, TensorOp};
use crate::tensor::{DType, Tensor, TensorError};

/// How the threads of a CPU domain are pinned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Pinning {
    /// Worker `i` runs on the domain's `i`-th CPU (wrapping around when
    /// there are more workers than CPUs). The actor thread is worker 0.
    #[default]
    PerCore,
    /// Every thread may run on any CPU of the domain.
    Domain,
    /// Threads are not pinned.
    None,
}

/// What a CPU engine is built from.
#[derive(Clone)]
pub struct CpuEngineConfig {
    /// The domain's index in its topology.
    pub index: usize,
    /// The domain's CPUs.
    pub cpus: CpuSet,
    /// Threads in the pool, the calling (actor) thread included; at least 1.
    pub threads: usize,
    /// How threads are pinned.
    pub pinning: Pinning,
    /// Prefix of the pool's thread names (`{prefix}-w{i}`).
    pub name: String,
    /// Runs first on every worker thread the pool starts (not on the calling
    /// thread); the runtime marks the worker as working for its actor here.
    pub on_worker_start: Option<Arc<dyn Fn(usize) + Send + Sync>>,
    /// Bytes of freed buffers the engine keeps for reuse (0: none); see
    /// [`BufferPool`]. [`DEFAULT_BUFFER_CAP`] by default.
    pub buffer_cap: usize,
}

/// The default byte cap of a domain's buffer pool: 256 MiB.
pub const DEFAULT_BUFFER_CAP: usize = 256 << 20;

impl CpuEngineConfig {
    /// A configuration for domain `index` on `cpus` with `threads` threads,
    /// pinned per core, named `weft-cpu-{index}`, with the default buffer cap.
    pub fn new(index: usize, cpus: CpuSet, threads: usize) -> CpuEngineConfig {
        CpuEngineConfig {
            index,
            cpus,
            threads,
            pinning: Pinning::PerCore,
            name: format!("weft-cpu-{index}"),
            on_worker_start: None,
            buffer_cap: DEFAULT_BUFFER_CAP,
        }
    }
}

impl fmt::Debug for CpuEngineConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CpuEngineConfig")
            .field("index", &self.index)
            .field("cpus", &self.cpus)
            .field("threads", &self.threads)
            .field("pinning", &self.pinning)
            .field("name", &self.name)
            .field("buffer_cap", &self.buffer_cap)
            .finish_non_exhaustive()
    }
}

/// The facts of a CPU domain, as its engine sees them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DomainInfo {
    /// The domain's index in its topology.
    pub index: usize,
    /// The domain's CPUs.
    pub cpus: CpuSet,
    /// Threads in the domain's pool, the actor thread included.
    pub threads: usize,
    /// How they are pinned.
    pub pinning: Pinning,
}

/// A CPU engine could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// Zero threads were asked for.
    #[error("a CPU domain needs at least one thread, got 0")]
    ZeroThreads,
    /// A thread could not be pinned (or the kernel narrowed its mask).
    #[error("pinning thread {worker} of CPU domain {domain}: {source}")]
    Pinning {
        /// The domain's index.
        domain: usize,
        /// The worker's index in the pool (0 is the actor thread).
        worker: usize,
        /// What went wrong.
        source: AffinityError,
    },
    /// Read-back found a worker on CPUs other than those it was given.
    #[error("thread {worker} of CPU domain {domain} runs on CPUs {actual}, expected {expected}")]
    PinMismatch {
        /// The domain's index.
        domain: usize,
        /// The worker's index.
        worker: usize,
        /// What it was pinned to.
        expected: CpuSet,
        /// What it reads back.
        actual: CpuSet,
    },
    /// rayon could not build the pool.
    #[error("building the pool of CPU domain {domain}: {source}")]
    Pool {
        /// The domain's index.
        domain: usize,
        /// rayon's error.
        source: rayon::ThreadPoolBuildError,
    },
}

/// Counts pool workers that have not exited yet, so that dropping the engine
/// returns only once its threads are on their way out.
#[derive(Default)]
struct Exits {
    running: Mutex<usize>,
    changed: Condvar,
}

/// A CPU domain's engine: a rayon pool pinned to the domain, with the thread
/// that builds it (the actor thread) as worker 0, so [`CpuEngine::install`]
/// from the actor runs in place with no handoff.
pub struct CpuEngine {
    domain: DomainInfo,
    store: Store,
    buffers: BufferPool,
    pool: rayon::ThreadPool,
    worker_cpus: Vec<CpuSet>,
    /// Declared after `pool`: dropped after it, it waits for the workers.
    _exits: ExitWait,
}

/// Waits for the pool's workers when dropped.
struct ExitWait(Arc<Exits>);

impl Drop for ExitWait {
    fn drop(&mut self) {
        self.0.wait();
    }
}

impl fmt::Debug for CpuEngine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CpuEngine")
            .field("domain", &self.domain)
            .field("store", &self.store)
            .field("buffers", &self.buffers.stats())
            .field("worker_cpus", &self.worker_cpus)
            .finish_non_exhaustive()
    }
}

impl CpuEngine {
    /// Builds the engine on the calling thread, which becomes worker 0 of
    /// the pool and must be the thread that owns the engine (the actor).
    /// Every thread is pinned as `config.pinning` says and read back.
    ///
    /// # Errors
    ///
    /// [`EngineError`]: zero threads, a pin the kernel refused or narrowed,
    /// or a pool rayon could not build.
    pub fn new(config: CpuEngineConfig) -> Result<CpuEngine, EngineError> {
        if config.threads == 0 {
            return Err(EngineError::ZeroThreads);
        }
        let domain = config.index;
        let cpus: Vec<usize> = config.cpus.iter().collect();
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
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(config.threads)
            .use_current_thread()
            .thread_name(move |i| format!("{name}-w{i}"))
            .start_handler(start)
            .exit_handler(exit)
            .build()
            .map_err(|source| EngineError::Pool { domain, source })?;
        let mut engine = CpuEngine {
            store: Store::default(),
            buffers: BufferPool::new(config.buffer_cap),
            domain: DomainInfo {
                index: config.index,
                cpus: config.cpus.clone(),
                threads: config.threads,
                pinning: config.pinning,
            },
            pool,
            worker_cpus: Vec::new(),
            _exits: ExitWait(exits),
        };
        // Every worker reports its mask from its own thread; the start
        // handlers have run by the time a worker takes a broadcast job.
        let readback = engine.pool.broadcast(|_| current_thread_cpus());
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
            engine.worker_cpus.push(actual);
        }
        Ok(engine)
    }

    /// The domain this engine runs on.
    pub fn domain(&self) -> &DomainInfo {
        &self.domain
    }

    /// The CPUs each pool thread reported at build time, by worker index
    /// (0 is the actor thread). Empty where the platform cannot tell.
    pub fn worker_cpus(&self) -> &[CpuSet] {
        &self.worker_cpus
    }

    /// The domain's pool, for rayon's `join`, `scope` and parallel iterators.
    pub fn pool(&self) -> &rayon::ThreadPool {
        &self.pool
    }

    /// Runs `op` in the domain's pool. From the actor thread (worker 0) this
    /// runs in place; parallel work inside it spreads over the domain.
    pub fn install<R: Send>(&self, op: impl FnOnce() -> R + Send) -> R {
        self.pool.install(op)
    }

    /// The domain's resident tensors.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The domain's resident tensors, to add or remove.
    pub fn store_mut(&mut self) -> &mut Store {
        &mut self.store
    }

    /// Removes tensor `id` from the store and keeps its buffer for reuse
    /// (within the pool's cap). Returns whether it was resident.
    pub fn free(&mut self, id: TensorId) -> bool {
        match self.store.remove(id) {
            Some(tensor) => {
                self.buffers.give(tensor.into_parts().1);
                true
            }
            None => false,
        }
    }

    /// The counters of the engine's buffer pool.
    pub fn buffer_stats(&self) -> BufferStats {
        self.buffers.stats()
    }

    /// Changes the byte cap of the buffer pool (0 turns it off and lets
    /// every pooled buffer go).
    pub fn set_buffer_cap(&mut self, cap_bytes: usize) {
        self.buffers.set_cap(cap_bytes);
    }

    /// Runs `op` on `inputs`, any tensors (resident ones seen through
    /// [`CpuEngine::store`], or the caller's): checked here, then inline on
    /// the calling thread for small outputs, over the domain's pool above
    /// [`PARALLEL_THRESHOLD`] output elements (and for large products).
    /// Takes `&self`, so code holding the engine shared (a `with` closure,
    /// both sides of a `rayon::join`) can call it; its outputs are fresh
    /// allocations, not drawn from the buffer pool as those of
    /// [`CpuEngine::execute_resident`] are.
    ///
    /// # Errors
    ///
    /// As [`TensorOp::infer`], and failures only the run can find (a
    /// factorization that fails).
    pub fn execute(&self, op: &TensorOp, inputs: &[&Tensor]) -> Result<Vec<Tensor>, TensorError> {
        let metas: Vec<Meta> = inputs.iter().map(|t| Meta::of(t)).collect();
        let outputs = op.infer(&metas)?;
        let shapes: Vec<(DType, &[usize])> =
            outputs.iter().map(|m| (m.dtype, &m.shape[..])).collect();
        exec::run(&self.pool, self.domain.threads, op, inputs, &shapes)
    }

    /// Runs `op` on the resident tensors `inputs`, which the caller has
    /// already checked `op` against: `outputs` are the types and shapes
    /// [`TensorOp::infer`] gave for them. Outputs are drawn from the buffer
    /// pool; storing them is up to the caller.
    ///
    /// # Errors
    ///
    /// [`ExecError::NotResident`] for an input not in the store, and the
    /// failures only the run can find: a factorization that fails, or
    /// [`TensorError::TooLarge`] for an output the allocator cannot provide.
    pub fn execute_resident(
        &mut self,
        op: &TensorOp,
        inputs: &[TensorId],
        outputs: &[(DType, &[usize])],
    ) -> Result<Vec<Tensor>, ExecError> {
        let CpuEngine {
            store,
            buffers,
            pool,
            domain,
            ..
        } = self;
        let mut resident: smallvec::SmallVec<[&Tensor; 4]> = smallvec::SmallVec::new();
        for &id in inputs {
            resident.push(store.get(id)?);
        }
        Ok(buffers.lend(|| exec::run(pool, domain.threads, op, &resident, outputs))?)
    }
}

impl TensorEngine for CpuEngine {
    fn place(&self) -> Place {
        Place::Cpu(self.domain.index)
    }

    fn execute_into(
        &mut self,
        op: &TensorOp,
        inputs: &[TensorId],
        outputs: &[(TensorId, DType, &[usize])],
        _lane: u64,
    ) -> Result<(), ExecError> {
        let shapes: smallvec::SmallVec<[(DType, &[usize]); 2]> = outputs
            .iter()
            .map(|&(_, dtype, shape)| (dtype, shape))
            .collect();
        let results = self.execute_resident(op, inputs, &shapes)?;
        for (&(id, ..), result) in outputs.iter().zip(results) {
            self.store.insert(id, result);
        }
        Ok(())
    }

    fn upload(&mut self, id: TensorId, tensor: Tensor, _lane: u64) -> Result<(), ExecError> {
        self.store.insert(id, tensor);
        Ok(())
    }

    fn download(&mut self, id: TensorId, _lane: u64) -> Result<Tensor, ExecError> {
        Ok(self.store.get(id)?.clone())
    }

    fn free(&mut self, id: TensorId) -> bool {
        CpuEngine::free(self, id)
    }

    fn memory(&self) -> EngineMemory {
        EngineMemory {
            tensors: self.store.len(),
            tensor_bytes: self.store.bytes(),
            buffers: self.buffers.stats(),
        }
    }
}

/// Pins the calling thread; where the platform cannot pin, runs unpinned
/// (discovery there gives one domain, so nothing is lost but locality).
fn pin(cpus: &CpuSet) -> Result<(), AffinityError> {
    match pin_current_thread(cpus) {
        Ok(_) | Err(AffinityError::Unsupported) => Ok(()),
        Err(e) => Err(e),
    }
}

impl Exits {
    /// Waits, at most a few seconds, until every worker has left its loop,
    /// so that a joined actor leaves no pool thread behind.
    fn wait(&self) {
        let mut running = self.running.lock();
        let deadline = Instant::now() + Duration::from_secs(5);
        while *running > 0 {
            if self.changed.wait_until(&mut running, deadline).timed_out() {
                break;
            }
        }
    }
}
