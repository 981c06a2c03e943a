//! The CPU engine: a domain's pinned rayon pool, its resident store and
//! buffer pool, and the CPU kernels the vocabulary runs on (dispatched in
//! `exec`).
//!
//! [`CpuEngine`] is a CPU domain's engine: a rayon pool whose workers are
//! pinned to the domain's CPUs, with the actor thread itself as worker 0,
//! the domain's resident [`Store`] of tensors, its buffer pool and the
//! kernels (products and decompositions through faer, or, feature `blas`,
//! the system's OpenBLAS: `blas` holds the crate's only `unsafe`).
#![deny(unsafe_code)]
#![warn(missing_docs, missing_debug_implementations)]

#[macro_use]
extern crate weft_core;

#[cfg(feature = "blas")]
#[allow(unsafe_code)] // CBLAS calls, each argued.
pub mod blas;
mod buffer;
mod cache;
mod create;
mod einsum;
mod elementwise;
mod exec;
mod fused;
mod gemm;
mod index;
mod lease;
mod linalg;
mod parallel;
mod permute;
mod pool;
mod program;
mod reduce;
mod store;
mod structural;
mod unary;

use buffer::copy_into;
pub use buffer::BufferPool;
pub use exec::HostRun;
pub use lease::Leases;
pub use parallel::PARALLEL_THRESHOLD;
pub use store::Store;

use cache::Cache;
use einsum::EinsumPlan;
use gemm::Compute;
use pool::PinnedPool;
use program::ProgramPlan;

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use weft_topology::{AffinityError, CpuSet};

use weft_core::ops::{Meta, TensorOp};
use weft_core::Program;
use weft_core::{BufferStats, EngineMemory, ExecError, Place, TensorEngine, TensorId};
use weft_core::{DType, Tensor, TensorError};
use weft_core::{Data, Element};

/// How the threads of a CPU domain are pinned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Pinning {
    /// Worker `i` runs on the domain's `i`-th CPU (wrapping around when
    /// there are more workers than CPUs). The actor thread is worker 0.
    ///
    /// On Linux the pool first leases the CPUs it pins onto, so that weft
    /// pools of other processes (and other runtimes of this one) avoid
    /// them: the domain's CPUs that another pool holds go last in the
    /// order above. See [`Leases`] and [`CpuEngineConfig::lease_dir`].
    #[default]
    PerCore,
    /// Every thread may run on any CPU of the domain.
    Domain,
    /// Threads are not pinned.
    None,
}

/// Who computes a CPU domain's matrix products (matmul, einsum's
/// contractions, and those inside programs); everything else runs on
/// weft's own kernels either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum CpuProvider {
    /// faer, pure Rust (the default).
    #[default]
    Faer,
    /// The system's CBLAS (OpenBLAS, linked at build time; feature
    /// `blas`). OpenBLAS is set to one thread for the whole process and
    /// runs inside the domain's pool tasks: a product of at least 2^20
    /// multiply-adds is split into blocks of rows or columns, one per pool
    /// thread (a smaller one is one call on one thread), so its threads are
    /// the domain's, pinned as they are. f32, f64, c32 and c64 products;
    /// an operand BLAS cannot read (a stride it has no form for) goes to
    /// faer.
    #[cfg(feature = "blas")]
    Blas,
}

impl fmt::Display for CpuProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CpuProvider::Faer => "faer",
            #[cfg(feature = "blas")]
            CpuProvider::Blas => "blas",
        })
    }
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
    /// Compiled programs the engine keeps, least recently used out first
    /// ([`PROGRAM_CACHE_CAPACITY`] by default; at least one is kept).
    pub program_cache: usize,
    /// einsum plans the engine keeps, by subscripts, shapes and type
    /// ([`EINSUM_CACHE_CAPACITY`] by default; at least one is kept).
    pub einsum_cache: usize,
    /// Who computes the matrix products ([`CpuProvider::Faer`] by default).
    pub provider: CpuProvider,
    /// Stack size of the pool's worker threads (the calling thread keeps
    /// its own), if not rayon's default.
    pub stack_size: Option<usize>,
    /// A pool the caller built, to run the engine's kernels on instead of
    /// a pool of its own: no thread is started or pinned, and `threads`,
    /// `pinning` and `stack_size` are not used. The engine's thread should
    /// be one of its workers, so that [`CpuEngine::install`] runs in
    /// place; from any other thread each install hands its work over.
    pub pool: Option<Arc<rayon::ThreadPool>>,
    /// The directory of the CPU leases taken under [`Pinning::PerCore`]
    /// (see [`Leases`]). It is created (mode 0700) if missing, and used
    /// only if it is a directory of this user that others cannot write
    /// to; otherwise the engine pins without leases and reports
    /// [`Leases::Unavailable`]. Pools that should avoid each other must
    /// use the same directory; tests use one of their own so that they
    /// neither see nor disturb real runs.
    ///
    /// # Default
    ///
    /// `None`: `weft-<uid>` in `/dev/shm`, or in the temporary directory
    /// where there is no `/dev/shm`.
    pub lease_dir: Option<PathBuf>,
}

/// The default byte cap of a domain's buffer pool: 256 MiB.
pub const DEFAULT_BUFFER_CAP: usize = 256 << 20;

/// Compiled programs a CPU engine keeps by default (least recently used
/// out first); see [`CpuEngineConfig::program_cache`].
pub const PROGRAM_CACHE_CAPACITY: usize = 128;
/// einsum plans a CPU engine keeps by default, by subscripts, shapes and
/// type; see [`CpuEngineConfig::einsum_cache`].
pub const EINSUM_CACHE_CAPACITY: usize = 512;

/// Transfers of this many bytes or more swap buffers between the two
/// domains' pools ([`TensorEngine::take_transfer`]). A smaller buffer the
/// allocator serves from memory it has mapped already, and sending it
/// back would cost the sender a message for nothing. Under
/// `--cfg weft_loom` it is the smallest pooled buffer, so that models
/// swap small tensors.
#[cfg(not(weft_loom))]
pub const SWAP_MIN_BYTES: usize = 256 << 10;
/// Transfers of this many bytes or more swap buffers (the loom build's
/// value: see the other build's).
#[cfg(weft_loom)]
pub const SWAP_MIN_BYTES: usize = 64;

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
            program_cache: PROGRAM_CACHE_CAPACITY,
            einsum_cache: EINSUM_CACHE_CAPACITY,
            provider: CpuProvider::Faer,
            stack_size: None,
            pool: None,
            lease_dir: None,
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
            .field("program_cache", &self.program_cache)
            .field("einsum_cache", &self.einsum_cache)
            .field("provider", &self.provider)
            .field("stack_size", &self.stack_size)
            .field("pool", &self.pool.as_ref().map(|p| p.current_num_threads()))
            .field("lease_dir", &self.lease_dir)
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
    /// Who computes its matrix products.
    pub provider: CpuProvider,
}

impl DomainInfo {
    /// How its kernels compute: its threads and its provider.
    fn compute(&self) -> Compute {
        Compute {
            threads: self.threads,
            provider: self.provider,
        }
    }
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

/// A CPU domain's engine: a rayon pool pinned to the domain, with the thread
/// that builds it (the actor thread) as worker 0, so [`CpuEngine::install`]
/// from the actor runs in place with no handoff.
pub struct CpuEngine {
    domain: DomainInfo,
    store: Store,
    buffers: BufferPool,
    pool: PinnedPool,
    programs: Cache<ProgramPlan>,
    einsums: Cache<EinsumPlan>,
}

impl fmt::Debug for CpuEngine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CpuEngine")
            .field("domain", &self.domain)
            .field("store", &self.store)
            .field("buffers", &self.buffers.stats())
            .field("worker_cpus", &self.pool.worker_cpus)
            .field("leases", &self.pool.leases)
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
        let pool = PinnedPool::build(&config)?;
        // On the caller's pool, weft pinned nothing; under loom nothing
        // is pinned.
        let pinning = match config.pool {
            Some(_) => Pinning::None,
            None if cfg!(weft_loom) => Pinning::None,
            None => config.pinning,
        };
        let mut engine = CpuEngine {
            store: Store::default(),
            buffers: BufferPool::new(config.buffer_cap),
            domain: DomainInfo {
                index: config.index,
                cpus: config.cpus,
                threads: pool.rayon.current_num_threads(),
                pinning,
                provider: config.provider,
            },
            pool,
            programs: Cache::new(config.program_cache),
            einsums: Cache::new(config.einsum_cache),
        };
        engine.set_provider(config.provider);
        Ok(engine)
    }

    /// The domain this engine runs on.
    pub fn domain(&self) -> &DomainInfo {
        &self.domain
    }

    /// Makes `provider` compute the products of the ops that run from now
    /// on (the builder's choice is [`CpuEngineConfig::provider`]).
    pub fn set_provider(&mut self, provider: CpuProvider) {
        #[cfg(feature = "blas")]
        if provider == CpuProvider::Blas {
            blas::single_threaded();
        }
        self.domain.provider = provider;
    }

    /// The CPUs each pool thread reported at build time, by worker index
    /// (0 is the actor thread). Empty where the platform cannot tell.
    pub fn worker_cpus(&self) -> &[CpuSet] {
        &self.pool.worker_cpus
    }

    /// What the pool found when it leased its workers' CPUs: the CPUs it
    /// holds and those another pool held, or why it could not lease.
    /// The leases last as long as the engine.
    pub fn leases(&self) -> &Leases {
        &self.pool.leases
    }

    /// The domain's pool, for rayon's `join`, `scope` and parallel
    /// iterators. A job spawned on it (`pool().spawn`) that panics is
    /// counted in [`CpuEngine::pool_panics`]; the worker and the actor live
    /// on (rayon's default would abort the process).
    ///
    /// Absent under `--cfg weft_loom`, where a domain has no pool.
    #[cfg(not(weft_loom))]
    pub fn pool(&self) -> &rayon::ThreadPool {
        &self.pool.rayon
    }

    /// Runs the jobs spawned on the domain's pool that no other thread
    /// would: in a pool of one thread, the actor is the only worker, and
    /// rayon runs queued jobs only on a worker inside its loop, which the
    /// actor enters only for a parallel call. The runtime calls this in
    /// the domain's housekeeping (before the actor parks, and between ops
    /// when it is nudged); the engine's drop calls it too. Nothing for a
    /// pool of more threads (its other workers take the jobs), or one the
    /// actor is no worker of.
    pub fn run_spawned_jobs(&self) {
        self.pool.run_spawned_jobs();
    }

    /// How many jobs spawned on the domain's pool panicked, and the last
    /// one's message. (Panics inside ops, `join` and `scope` fail their op
    /// instead.)
    pub fn pool_panics(&self) -> (u64, Option<String>) {
        self.pool.panics.snapshot()
    }

    /// Runs `op` in the domain's pool. From the actor thread (worker 0) this
    /// runs in place; parallel work inside it spreads over the domain.
    /// Under `--cfg weft_loom` it runs in place, on the actor's loom thread.
    pub fn install<R: Send>(&self, op: impl FnOnce() -> R + Send) -> R {
        self.pool.rayon.install(op)
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

    /// A copy of tensor `id` in a buffer of the engine's pool, for another
    /// thread to read (a send to another rank): no fresh pages when the
    /// pool holds a buffer of its size. Give the buffer back with
    /// [`CpuEngine::give_buffer`] once it is read.
    ///
    /// # Errors
    ///
    /// [`ExecError`] (not resident) if there is no tensor `id`.
    pub fn pooled_copy(&mut self, id: TensorId) -> Result<Tensor, ExecError> {
        let tensor = self.store.get(id)?;
        let data = copy_pooled(&mut self.buffers, &self.pool.rayon, tensor.data());
        Ok(Tensor::from_parts(tensor.shape().to_vec(), data)?)
    }

    /// Takes tensor `id` out of the store, for another thread to read (a
    /// send to another rank, when nothing else can read the tensor any
    /// more): the elements move, nothing is copied.
    ///
    /// # Errors
    ///
    /// [`ExecError::NotResident`] if there is none.
    pub fn take_resident(&mut self, id: TensorId) -> Result<Tensor, ExecError> {
        Ok(self.store.remove(id).ok_or(weft_core::NotResident(id))?)
    }

    /// A buffer of `len` elements of `dtype` from the engine's pool, for
    /// another thread to fill entirely (a receive from another rank): its
    /// values are what the buffer last held.
    pub fn pooled_buffer(&mut self, dtype: DType, len: usize) -> Data {
        let pool = &mut self.buffers;
        for_dtype!(dtype, |T| T::wrap(pool.take_keeping::<T>(len)))
    }

    /// Gives `data` to the engine's pool (within its cap).
    pub fn give_buffer(&mut self, data: Data) {
        self.buffers.give(data);
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
        exec::run(
            &self.pool.rayon,
            self.domain.compute(),
            op,
            inputs,
            &shapes,
            None,
        )
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
            einsums,
            ..
        } = self;
        let mut resident: smallvec::SmallVec<[&Tensor; 4]> = smallvec::SmallVec::new();
        for &id in inputs {
            resident.push(store.get(id)?);
        }
        // An einsum's plan comes from the cache: parsed, ordered and
        // lowered once per subscripts, shapes and type.
        let plan = match op {
            TensorOp::Einsum(spec) => {
                let shapes: smallvec::SmallVec<[&[usize]; 4]> =
                    resident.iter().map(|t| t.shape()).collect();
                let dtype = resident.first().map_or(DType::F64, |t| t.dtype());
                Some(einsums.get_or_make(
                    EinsumPlan::key_hash(spec, &shapes, dtype),
                    |plan| plan.is_for(spec, &shapes, dtype),
                    || EinsumPlan::compile(spec, &shapes, dtype),
                )?)
            }
            _ => None,
        };
        Ok(buffers
            .lend(|| exec::run(&pool.rayon, domain.compute(), op, &resident, outputs, plan))?)
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

    fn execute_donating(
        &mut self,
        op: &TensorOp,
        inputs: &[TensorId],
        outputs: &[(TensorId, DType, &[usize])],
        donated: TensorId,
        lane: u64,
    ) -> Result<(), ExecError> {
        let reads = inputs.iter().filter(|&&id| id == donated).count();
        let accumulates = exec::accumulator(op).is_some_and(|at| inputs[at] == donated);
        if reads > 0 && !(accumulates && reads == 1) {
            return weft_core::backend::execute_then_free(self, op, inputs, outputs, donated, lane);
        }
        let Some(tensor) = self.store.remove(donated) else {
            return self.execute_into(op, inputs, outputs, lane);
        };
        if accumulates {
            let result = {
                let others = inputs
                    .iter()
                    .filter(|&&id| id != donated)
                    .map(|&id| self.store.get(id))
                    .collect::<Result<smallvec::SmallVec<[&Tensor; 2]>, _>>()?;
                let compute = self.domain.compute();
                exec::accumulate_in_place(&self.pool.rayon, compute, op, &others, tensor)?
            };
            self.store.insert(outputs[0].0, result);
            return Ok(());
        }
        // The output's kernel draws its buffer from the pool: this one first.
        self.buffers.donate(tensor.into_parts().1);
        let result = self.execute_into(op, inputs, outputs, lane);
        self.buffers.settle();
        result
    }

    fn run_program(
        &mut self,
        program: &Program,
        inputs: &[TensorId],
        outputs: &[TensorId],
        _lane: u64,
    ) -> Result<(), ExecError> {
        let CpuEngine {
            store,
            buffers,
            pool,
            domain,
            programs,
            ..
        } = self;
        let plan = programs.get_or_make(
            program.fingerprint(),
            |plan| plan.is_for(program),
            || ProgramPlan::compile(program),
        )?;
        let store_ref: &Store = store;
        let made = buffers.lend(|| {
            pool.rayon
                .install(|| plan.execute(program, store_ref, inputs, &pool.rayon, domain.compute()))
        })?;
        for (&id, tensor) in outputs.iter().zip(made) {
            store.insert(id, tensor);
        }
        Ok(())
    }

    fn upload(&mut self, id: TensorId, tensor: Tensor, _lane: u64) -> Result<(), ExecError> {
        self.store.insert(id, tensor);
        Ok(())
    }

    /// A copy in a pooled buffer ([`CpuEngine::pooled_copy`]): its pages
    /// are already faulted in when the pool has one of its size, and
    /// huge when it does not.
    fn download(&mut self, id: TensorId, _lane: u64) -> Result<Tensor, ExecError> {
        self.pooled_copy(id)
    }

    /// Between domains of one node the sent buffer is kept, and a pooled
    /// buffer of its class goes back; between nodes the elements are
    /// copied into a pooled buffer here and the sent one goes back. Only
    /// buffers of [`SWAP_MIN_BYTES`] or more travel back.
    fn take_transfer(
        &mut self,
        id: TensorId,
        sent: Tensor,
        copy: bool,
        _lane: u64,
    ) -> Result<Option<Data>, ExecError> {
        let (shape, data) = sent.into_parts();
        let swap = data.len().saturating_mul(data.dtype().size()) >= SWAP_MIN_BYTES;
        let (kept, back) = match copy {
            true => {
                let copied = copy_pooled(&mut self.buffers, &self.pool.rayon, &data);
                (copied, Some(data))
            }
            false => {
                let spare = match swap {
                    true => self.buffers.spare(data.dtype(), data.len()),
                    false => None,
                };
                (data, spare)
            }
        };
        self.store.insert(id, Tensor::from_parts(shape, kept)?);
        Ok(back.filter(|_| swap))
    }

    fn keep_buffer(&mut self, data: Data) {
        self.buffers.give(data);
    }

    fn free(&mut self, id: TensorId) -> bool {
        CpuEngine::free(self, id)
    }

    fn sync(&mut self, id: TensorId) -> Result<(), ExecError> {
        self.store.get(id)?;
        Ok(())
    }

    fn memory(&self) -> EngineMemory {
        EngineMemory {
            tensors: self.store.len(),
            tensor_bytes: self.store.bytes(),
            buffers: self.buffers.stats(),
            programs: self.programs.stats(),
            einsums: self.einsums.stats(),
            ..EngineMemory::default()
        }
    }
    fn trim(&mut self) -> usize {
        self.buffers.trim()
    }
}

/// A copy of `data` in a buffer of `pool`, made over `threads`.
fn copy_pooled(pool: &mut BufferPool, threads: &pool::Workers, data: &Data) -> Data {
    map_data!(data, |v| {
        let mut copy = pool.take(v.len());
        copy_into(&mut copy, v, threads);
        copy
    })
}
