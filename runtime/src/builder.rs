//! `Builder`: how a runtime is configured and started.
//!
//! Also the two entry points that make one, [`Runtime::new`] and
//! [`Runtime::builder`]: they live beside the builder, so that the
//! runtime's own file does not depend on how it is built.

use std::path::PathBuf;
use std::time::Duration;

use weft_actors::Trace;
use weft_cpu::{CpuProvider, Pinning};
use weft_topology::{CpuSet, Topology, TopologyBuilder};

use crate::config::{Config, Hosting};
use crate::domain::DomainTable;
use crate::error::BuildError;
use crate::handle::RuntimeId;
use crate::hosting;
use crate::ledger;
use crate::runtime::{claimed_cpus, Runtime};

// What a model (`--cfg weft_loom`) does without: caller-hosted actors, the
// ledger of CPUs, the process's runtime.
#[cfg(not(weft_loom))]
use {
    crate::config::Overlap,
    crate::ledger::Claimed,
    crate::runtime::RuntimeReport,
    parking_lot::Mutex,
    std::error::Error,
    std::sync::Arc,
    weft_actors::{ActorJob, ShutdownError},
};

/// The environment variable that turns tracing on: the path of the Chrome
/// trace-event JSON file to write (see [`Builder::trace`]).
pub const TRACE_ENV: &str = "WEFT_TRACE";

/// The environment variable that sets the threads per domain where
/// [`Builder::threads_per_domain`] does not: a positive integer.
pub const THREADS_ENV: &str = "WEFT_THREADS";

/// rayon's thread-count variable, honoured after [`THREADS_ENV`] with
/// rayon's meaning of its values (0 or a value that is not a number:
/// no setting).
pub const RAYON_THREADS_ENV: &str = "RAYON_NUM_THREADS";

/// Configures a [`Runtime`].
#[derive(Debug, Clone)]
pub struct Builder {
    topology: TopologyBuilder,
    prebuilt: Option<Topology>,
    config: Config,
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            topology: Topology::builder(),
            prebuilt: None,
            config: Config::default(),
        }
    }
}

impl Builder {
    /// One CPU domain per set, in order, instead of discovery.
    pub fn domains(mut self, sets: impl IntoIterator<Item = CpuSet>) -> Self {
        self.topology = self.topology.domains(sets);
        self
    }

    /// Domains from a layout string such as `"0-3;4-7"`.
    pub fn cpulists(mut self, layout: &str) -> Self {
        self.topology = self.topology.cpulists(layout);
        self
    }

    /// Splits the allowed CPUs into `n` domains (multi-domain runs on a
    /// small machine).
    pub fn split(mut self, n: usize) -> Self {
        self.topology = self.topology.split(n);
        self
    }

    /// Uses a topology built elsewhere.
    pub fn topology(mut self, topology: Topology) -> Self {
        self.prebuilt = Some(topology);
        self
    }

    /// Reads NUMA information under `root` instead of `/sys`.
    pub fn sysfs_root(mut self, root: impl Into<PathBuf>) -> Self {
        self.topology = self.topology.sysfs_root(root);
        self
    }

    /// `n` domains for a model (`--cfg weft_loom` only), whatever the
    /// machine: domain `i` is named as CPU `i`, which nothing pins to, and
    /// `WEFT_CPU_DOMAINS` is not read.
    #[cfg(weft_loom)]
    pub fn model_domains(mut self, n: usize) -> Self {
        self.topology = Topology::builder()
            .allowed((0..n).collect())
            .split(n)
            .ignore_env();
        self.prebuilt = None;
        self
    }

    /// Threads per domain, the actor thread included. Where this is not
    /// called, the first of these that is set decides: `WEFT_THREADS` (a
    /// positive integer; anything else fails the build with
    /// [`BuildError::Env`]), `RAYON_NUM_THREADS` (as rayon reads it: 0 or
    /// a value that is not a number is no setting), else the domain's CPU
    /// count. Either variable counts threads per domain, not in all.
    #[cfg(not(weft_loom))]
    pub fn threads_per_domain(mut self, threads: usize) -> Self {
        self.config.threads_per_domain = Some(threads);
        self
    }

    /// How domain threads are pinned (default [`Pinning::PerCore`]).
    #[cfg(not(weft_loom))]
    pub fn pinning(mut self, pinning: Pinning) -> Self {
        self.config.pinning = pinning;
        self
    }

    /// The directory of the CPU leases by which per-core domains of
    /// different processes avoid each other's CPUs
    /// ([`weft_cpu::CpuEngineConfig::lease_dir`]); [`Runtime::threads`]
    /// reports what each domain found
    /// ([`DomainThreads::leases`](crate::runtime::DomainThreads::leases)).
    /// Runtimes avoid each other only if they use the same directory.
    ///
    /// # Default
    ///
    /// `weft-<uid>` in `/dev/shm`, or in the temporary directory where
    /// there is no `/dev/shm`.
    #[cfg(not(weft_loom))]
    pub fn lease_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.config.lease_dir = Some(dir.into());
        self
    }

    /// Ops one lane holds before `submit` waits (default 1024, at most
    /// [`crate::actor::MAX_LANE_CAPACITY`]). A lane's queue grows as ops arrive:
    /// the capacity costs nothing until it is used.
    pub fn lane_capacity(mut self, capacity: usize) -> Self {
        self.config.lane_capacity = capacity;
        self
    }

    /// How long an idle actor spins before parking (default 50 µs).
    pub fn idle_spin(mut self, spin: Duration) -> Self {
        self.config.idle_spin = spin;
        self
    }

    /// How long `Ticket::wait` spins before parking (default 20 µs).
    pub fn wait_spin(mut self, spin: Duration) -> Self {
        self.config.wait_spin = spin;
        self
    }

    /// Bytes of freed tensor buffers each CPU domain keeps for reuse
    /// (default 256 MiB; 0 turns the pool off). See [`weft_cpu::BufferPool`].
    pub fn buffer_cap(mut self, bytes: usize) -> Self {
        self.config.buffer_cap = bytes;
        self
    }

    /// Compiled programs each CPU domain keeps (default
    /// [`PROGRAM_CACHE_CAPACITY`](crate::engine::PROGRAM_CACHE_CAPACITY),
    /// 128; at least one is kept), least recently used out first. A run of
    /// a program the cache no longer holds compiles it again; `lane.memory()`
    /// counts hits, misses and evictions.
    pub fn program_cache(mut self, programs: usize) -> Self {
        self.config.plan_caches.0 = programs;
        self
    }

    /// einsum plans each CPU domain keeps, by subscripts, operand shapes
    /// and element type (default
    /// [`EINSUM_CACHE_CAPACITY`](crate::engine::EINSUM_CACHE_CAPACITY),
    /// 512; at least one is kept), least recently used out first.
    pub fn einsum_cache(mut self, plans: usize) -> Self {
        self.config.plan_caches.1 = plans;
        self
    }

    /// Traced functions the runtime keeps (default
    /// [`FUNCTION_CACHE_CAPACITY`](crate::engine::FUNCTION_CACHE_CAPACITY),
    /// 256; 0 keeps none, so every call traces), least recently used out
    /// first: the programs [`Lane::call`](crate::Lane::call) traced, one
    /// per function value and input types and shapes, shared by all the
    /// runtime's lanes. `lane.memory()`'s `functions` counts them. Each
    /// traced program is also a plan in a domain's program cache
    /// ([`Builder::program_cache`]) once it has run there.
    pub fn function_cache(mut self, programs: usize) -> Self {
        self.config.function_cache = programs;
        self
    }

    /// Who computes the CPU domains' matrix products: faer (the default)
    /// or, built with the `blas` feature, the system's OpenBLAS
    /// (`CpuProvider::Blas`, single-threaded inside each domain's pool
    /// tasks; see [`CpuProvider`]). The rest of the vocabulary runs on
    /// weft's own kernels either way.
    pub fn cpu_provider(mut self, provider: CpuProvider) -> Self {
        self.config.provider = provider;
        self
    }

    /// How long a domain has nothing to do before it lets its buffer pool
    /// go (default [`crate::runtime::DEFAULT_IDLE_TRIM`], 1 s; `Duration::MAX`:
    /// never). Freed tensors themselves are released at once, idle or not;
    /// [`crate::Lane::trim`] lets a pool go on demand.
    pub fn idle_trim(mut self, after: Duration) -> Self {
        self.config.idle_trim = after;
        self
    }

    /// Records a timeline of every op (per actor and lane: queue and run
    /// times; transfers as flows between actors) and writes it to `path`
    /// when the runtime shuts down or is dropped: as Chrome trace-event
    /// JSON (open it in Perfetto or `chrome://tracing`), or, for a path
    /// ending in `.svg` or `.html`, as a timeline picture one can open
    /// without a network ([`TraceView::to_svg`](crate::trace::TraceView::to_svg),
    /// [`TraceFormat`](crate::trace::TraceFormat)). Without this call, the
    /// `WEFT_TRACE` environment variable, if set, names the file. Off, it
    /// costs nothing; on, each actor keeps its newest records in a ring
    /// buffer ([`Builder::trace_capacity`]).
    ///
    /// ```
    /// let path = std::env::temp_dir().join("weft-doc-trace.json");
    /// let rt = weft::Runtime::builder().split(1).trace(&path).build()?;
    /// rt.lane(0)?.run(|_| ())?.wait()?;
    /// rt.shutdown()?; // writes the file
    /// let json = std::fs::read_to_string(&path)?;
    /// assert!(json.contains(r#""name":"weft-cpu-0""#));
    /// # std::fs::remove_file(&path)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[cfg(not(weft_loom))]
    pub fn trace(mut self, path: impl Into<PathBuf>) -> Self {
        self.config.trace_path = Some(path.into());
        self
    }

    /// Stack size in bytes of every thread the runtime starts: actors and
    /// pool workers alike (default: the platform's; deep recursive kernels
    /// may want 16 MiB). [`Runtime::threads`] reports it.
    #[cfg(not(weft_loom))]
    pub fn stack_size(mut self, bytes: usize) -> Self {
        self.config.stack_size = Some(bytes);
        self
    }

    /// What every thread name of the runtime begins with (default
    /// `weft`): the actors are `{prefix}-cpu-{i}` and `{prefix}-cuda-{i}`,
    /// the pool workers `{prefix}-cpu-{i}-w{k}`, hosted actors
    /// `{prefix}-cpu-{i}-actor-{n}` and application threads
    /// `{prefix}-app-{n}`, as `top -H`, debuggers, reports and traces show
    /// them. Linux shows the first 15 bytes of a name.
    ///
    /// ```
    /// let rt = weft::Runtime::builder().split(1).thread_names("solver").build()?;
    /// assert_eq!(rt.threads()[0].names[0], "solver-cpu-0");
    /// assert_eq!(rt.actor(0)?.name(), "solver-cpu-0");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn thread_names(mut self, prefix: impl Into<String>) -> Self {
        self.config.name = prefix.into();
        self
    }

    /// What the build does when its CPUs overlap those of a live runtime
    /// of this process (default [`Overlap::Allow`], reported; see
    /// [`Overlap`] for why).
    ///
    /// ```
    /// use weft::{BuildError, Runtime, runtime::Overlap};
    ///
    /// let first = Runtime::builder().split(1).build()?;
    /// let beside = Runtime::builder().split(1).build()?;
    /// assert_eq!(beside.overlaps()[0].runtime, first.id());
    /// let shared = Runtime::builder().split(1).overlap(Overlap::Share).build()?;
    /// assert_eq!(shared.id(), first.id());
    /// let refused = Runtime::builder().split(1).overlap(Overlap::Refuse).build();
    /// assert!(matches!(refused, Err(BuildError::Overlap { runtime, .. }) if runtime == first.id()));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[cfg(not(weft_loom))]
    pub fn overlap(mut self, policy: Overlap) -> Self {
        self.config.overlap = policy;
        self
    }

    /// Runs each CPU domain's actor on a thread the application owns:
    /// `launch(domain, job)` hands the job to one of its threads, which
    /// calls [`ActorJob::run`] and is the domain's actor (pool worker 0)
    /// until the runtime shuts down (see [`weft_actors::ActorBuilder::host`]). For
    /// applications that start and pin their threads themselves. The
    /// domain's other `threads_per_domain - 1` pool workers are still
    /// weft's: with one thread per domain, weft starts none. The actor's
    /// thread is pinned as [`Builder::pinning`] says; [`Pinning::None`]
    /// leaves the application's mask alone.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    ///
    /// let threads = Arc::new(Mutex::new(Vec::new()));
    /// let started = threads.clone();
    /// let rt = weft::Runtime::builder()
    ///     .split(1)
    ///     .threads_per_domain(1)
    ///     .host(move |domain, job| {
    ///         let thread = std::thread::Builder::new()
    ///             .name(format!("app-domain-{domain}"))
    ///             .spawn(move || job.run())?;
    ///         started.lock().unwrap().push(thread);
    ///         Ok(())
    ///     })
    ///     .build()?;
    /// assert_eq!(rt.threads()[0].names, ["app-domain-0"]);
    /// rt.shutdown()?; // the job returns, and the thread may be joined
    /// for thread in threads.lock().unwrap().drain(..) {
    ///     thread.join().unwrap();
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[cfg(not(weft_loom))]
    pub fn host<F>(mut self, launch: F) -> Self
    where
        F: Fn(usize, ActorJob) -> Result<(), Box<dyn Error + Send + Sync>> + Send + Sync + 'static,
    {
        self.config.host = Some(Hosting::Threads(Arc::new(launch)));
        self
    }

    /// Runs every CPU domain on a rayon pool the application built: each
    /// domain's actor is a job on one of its workers for as long as the
    /// runtime runs, and the domain's kernels run on the pool
    /// ([`CpuEngine::install`](weft_cpu::CpuEngine::install) from the
    /// actor runs in place). weft starts, pins and reads back no thread:
    /// the pool's threads are the application's, as it pinned them
    /// ([`Affinity::Caller`](crate::runtime::Affinity::Caller)). The pool gives up
    /// one worker per domain to the actors, so it needs more workers than
    /// domains for other work to go on (fewer free workers than domains:
    /// [`BuildError::HostPool`]), and the build waits for a worker to take
    /// each job ([`Builder::host_timeout`]). The count is the process's: a
    /// pool lent to several runtimes has as many fewer workers free as
    /// actors of theirs hold. While the runtime runs, every worker of the
    /// pool is the domain's, as weft's own workers are: a blocking wait on
    /// an unfinished op from one of them (from an op's parallel loop, or
    /// from the application's own tasks on the pool) is refused with
    /// `WouldDeadlock` instead of holding a worker the domain's kernels
    /// may need; the application waits from another thread, or chains
    /// with `then`. `threads_per_domain`, `pinning` and `stack_size` do not
    /// apply to it.
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// let pool = Arc::new(rayon::ThreadPoolBuilder::new().num_threads(2).build()?);
    /// let rt = weft::Runtime::builder().split(1).host_pool(pool.clone()).build()?;
    /// let lane = rt.lane(0)?;
    /// let here = lane.run(|engine| engine.install(rayon::current_num_threads))?;
    /// assert_eq!(here.wait()?, 2);
    /// # rt.shutdown()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[cfg(not(weft_loom))]
    pub fn host_pool(mut self, pool: Arc<rayon::ThreadPool>) -> Self {
        self.config.host = Some(Hosting::Pool(pool));
        self
    }

    /// How long the build waits for a host ([`Builder::host`],
    /// [`Builder::host_pool`]) to begin each domain's job (default
    /// [`weft_actors::DEFAULT_HOST_TIMEOUT`], 10 s; `Duration::MAX`: for
    /// ever). A host that keeps a job to run later, or a pool whose
    /// workers stay busy, fails the build with [`BuildError::Actor`]
    /// ([`weft_actors::SpawnError::HostTimedOut`]) instead of holding it;
    /// a job run after that returns at once.
    #[cfg(not(weft_loom))]
    pub fn host_timeout(mut self, timeout: Duration) -> Self {
        self.config.host_timeout = timeout;
        self
    }

    /// Records kept per actor while tracing (default 65 536).
    #[cfg(not(weft_loom))]
    pub fn trace_capacity(mut self, records: usize) -> Self {
        self.config.trace_capacity = records;
        self
    }

    /// Discovers or validates the layout and starts one actor per domain.
    ///
    /// # Errors
    ///
    /// [`BuildError::Topology`] for a bad layout, [`BuildError::ZeroThreads`]
    /// [`BuildError::ZeroLaneCapacity`] and [`BuildError::LaneCapacity`] for bad settings,
    /// [`BuildError::Env`] for a bad `WEFT_THREADS`, [`BuildError::HostPool`]
    /// for a caller's pool with too few workers,
    /// [`BuildError::Overlap`] for CPUs a live runtime runs (see
    /// [`Builder::overlap`]), [`BuildError::Actor`] when a domain's actor
    /// cannot start (for example when the kernel narrows a pin).
    pub fn build(self) -> Result<Runtime, BuildError> {
        let mut config = self.config;
        #[cfg(weft_loom)]
        model_settings(&mut config)?;
        if config.threads_per_domain.is_none() {
            config.threads_per_domain = threads_from_env()?;
        }
        if config.trace_path.is_none() {
            config.trace_path = std::env::var_os(TRACE_ENV)
                .filter(|p| !p.is_empty())
                .map(PathBuf::from);
        }
        if config.trace_path.is_some() {
            config.trace = Some(Trace::new(config.trace_capacity));
        }
        if config.threads_per_domain == Some(0) {
            return Err(BuildError::ZeroThreads);
        }
        if config.lane_capacity == 0 {
            return Err(BuildError::ZeroLaneCapacity);
        }
        if config.lane_capacity > weft_actors::MAX_LANE_CAPACITY {
            return Err(BuildError::LaneCapacity {
                capacity: config.lane_capacity,
            });
        }
        // Kept to lay the domains out again over this rank's part of the
        // CPUs, when ranks of its node were given the same ones.
        #[cfg(feature = "mpi")]
        let relayout = (config.mpi && self.prebuilt.is_none()).then(|| self.topology.clone());
        let topology = match self.prebuilt {
            Some(topology) => topology,
            None => self.topology.build()?,
        };
        // Each actor takes a worker of a caller's pool for good: with fewer
        // free workers than domains, a domain's job would never start.
        let seats = match &config.host {
            Some(Hosting::Pool(pool)) => hosting::reserve(pool, topology.domains().len())?,
            _ => Vec::new(),
        };
        let id = RuntimeId::next();
        let cpus = claimed_cpus(&topology);
        #[cfg(not(weft_loom))]
        let claim = match ledger::claim(id, &cpus, config.overlap)? {
            Claimed::New(claim) => Some(claim),
            Claimed::Shared(shared) => {
                let inner = shared
                    .downcast::<crate::runtime::Inner>()
                    .expect("the ledger holds only runtimes");
                let runtime = Runtime::from_inner(inner);
                // Sharing gives the live runtime as it is: one without MPI
                // cannot stand in for a build that asked for it.
                #[cfg(feature = "mpi")]
                if config.mpi && runtime.table().mpi().is_none() {
                    return Err(BuildError::Mpi(weft_mpi::MpiError::Unavailable {
                        reason: format!(
                            "the live runtime this build would share (Overlap::Share) runs \
                             no MPI: build that one with .mpi(), or this one with another \
                             Overlap (it overlaps {}, on CPUs {cpus})",
                            runtime.id()
                        ),
                    }));
                }
                return Ok(runtime);
            }
        };
        // A model's runtime claims no CPUs: it pins nothing, and the models
        // of a test binary run side by side.
        #[cfg(weft_loom)]
        let claim = None;
        // MPI starts before the domains: how many ranks of this node were
        // given the same CPUs decides which of them this rank's domains
        // take. (The claim above stays on all of them.)
        #[cfg(feature = "mpi")]
        let (topology, mpi) = start_mpi(&config, topology, relayout)?;
        // A failed start drops the claim: the CPUs are free again.
        let table = {
            let _building = ledger::building(id);
            DomainTable::start(
                &topology,
                &config,
                id,
                seats,
                #[cfg(feature = "mpi")]
                mpi,
            )?
        };
        let runtime = Runtime::from_parts(id, topology, table, config, (cpus, claim));
        #[cfg(feature = "tracing")]
        for overlap in runtime.overlaps() {
            tracing::warn!(
                runtime = %id,
                %overlap,
                "a weft runtime was built on CPUs another live runtime of this process runs \
                 (Overlap::Allow): their threads share those cores"
            );
        }
        Ok(runtime)
    }
}

/// A model's settings (`--cfg weft_loom`, see the crate's docs): one
/// unpinned thread per domain, the actor's, and no trace. The environment
/// variables that would ask for more threads or a trace are refused, not
/// ignored.
#[cfg(weft_loom)]
fn model_settings(config: &mut Config) -> Result<(), BuildError> {
    for var in [THREADS_ENV, TRACE_ENV] {
        if let Some(value) = std::env::var_os(var) {
            return Err(BuildError::Env {
                var,
                value: value.to_string_lossy().into_owned(),
                expected: "unset under --cfg weft_loom (a model runs one unpinned, \
                           untraced thread per domain)",
            });
        }
    }
    config.threads_per_domain = Some(1);
    config.pinning = Pinning::None;
    Ok(())
}

/// The threads per domain the environment sets, if any
/// ([`Builder::threads_per_domain`]).
fn threads_from_env() -> Result<Option<usize>, BuildError> {
    if let Some(value) = std::env::var_os(THREADS_ENV) {
        let value = value.to_string_lossy().into_owned();
        return match value.trim().parse::<usize>() {
            Ok(n) if n > 0 => Ok(Some(n)),
            _ => Err(BuildError::Env {
                var: THREADS_ENV,
                value,
                expected: "a positive number of threads per domain",
            }),
        };
    }
    let rayon = std::env::var(RAYON_THREADS_ENV).ok();
    Ok(rayon
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n > 0))
}

/// Starts the rank's MPI actor if `config` asks for one, and lays the
/// domains out over this rank's part of its CPUs when other ranks of its
/// node were given the same ones (no binding of the launcher's kept them
/// apart): `relayout` is the layout asked for, `None` for a topology
/// given whole ([`Builder::topology`]), which is kept. A layout that does
/// not fit in the part (a split into more domains than it has CPUs) is
/// kept whole too.
#[cfg(feature = "mpi")]
fn start_mpi(
    config: &Config,
    topology: Topology,
    relayout: Option<TopologyBuilder>,
) -> Result<(Topology, Option<crate::mpi::MpiActor>), BuildError> {
    if !config.mpi {
        return Ok((topology, None));
    }
    let actor = crate::mpi::MpiActor::start(config, topology.allowed())?;
    let topology = match (relayout, actor.share) {
        (Some(layout), (part, parts)) if parts > 1 => {
            layout.share(part, parts).build().unwrap_or(topology)
        }
        _ => topology,
    };
    Ok((topology, Some(actor)))
}

/// Ranks over MPI (feature `mpi`).
#[cfg(feature = "mpi")]
impl Builder {
    /// Also starts this rank's MPI actor: it initialises MPI on its own
    /// thread and makes every MPI call of the runtime
    /// ([`crate::Runtime::rank`], [`crate::Lane::send`], [`crate::Lane::recv`],
    /// the collectives). Every rank of the job builds its runtime with it
    /// (the start is collective). It stops before the domains at
    /// shutdown (receives nothing matched are cancelled, and the ops
    /// waiting for them fail), and MPI is finalised once, when it does.
    ///
    /// [`Builder::build`] fails with [`BuildError::Mpi`] when the process
    /// was not started by an MPI launcher (`mpirun`), MPI is already
    /// running or was finalised in this process, or the build would share
    /// ([`crate::runtime::Overlap::Share`]) a live runtime that runs no MPI.
    pub fn mpi(mut self) -> Self {
        self.config.mpi = true;
        self
    }
}

/// The CUDA devices to run (feature `cuda`).
#[cfg(feature = "cuda")]
impl Builder {
    /// Also runs every CUDA device of the machine, each as an actor whose
    /// engine owns the device ([`Runtime::cuda_lane`]); the actor's thread
    /// is pinned to the CPU domain nearest the device.
    ///
    /// [`Builder::build`] fails with [`BuildError::Cuda`] when there is no
    /// driver library or no device.
    pub fn cuda(mut self) -> Self {
        self.config.cuda = Some(None);
        self
    }

    /// Runs the CUDA devices with these ordinals (see [`Builder::cuda`]);
    /// [`Builder::build`] fails with [`BuildError::Cuda`] naming one that
    /// the machine does not have.
    pub fn cuda_devices(mut self, ordinals: impl IntoIterator<Item = usize>) -> Self {
        self.config.cuda = Some(Some(ordinals.into_iter().collect()));
        self
    }
}

impl Runtime {
    /// Discovers this machine's CPU domains (or reads `WEFT_CPU_DOMAINS`)
    /// and starts one actor per domain with default settings.
    ///
    /// # Errors
    ///
    /// As [`Builder::build`].
    pub fn new() -> Result<Runtime, BuildError> {
        Builder::default().build()
    }

    /// A builder for explicit domains and settings.
    pub fn builder() -> Builder {
        Builder::default()
    }

    /// The process's runtime, for libraries: the first call builds it from
    /// the environment (as [`Runtime::new`], sharing a live runtime whose
    /// CPUs overlap, [`Overlap::Share`]), and every later call returns a
    /// handle to it, so that crates built on weft share its domains instead
    /// of each starting their own. After it is shut down (by
    /// [`Runtime::shutdown_global`] or through any handle), the next call
    /// builds it anew.
    ///
    /// It is not shut down at exit by itself: statics are not dropped, and
    /// a process that ends stops its threads with it, running no more of
    /// their queued ops. A program that wants them drained, or its trace
    /// written, calls [`Runtime::shutdown_global`] before it returns.
    ///
    /// ```
    /// let a = weft::Runtime::global()?;
    /// let b = weft::Runtime::global()?;
    /// assert_eq!(a.id(), b.id());
    /// # weft::Runtime::shutdown_global()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Builder::build`], when it is built.
    #[cfg(not(weft_loom))]
    pub fn global() -> Result<Runtime, BuildError> {
        let mut global = GLOBAL.lock();
        if let Some(rt) = global.current.as_ref().filter(|rt| !rt.is_closed()) {
            return Ok(rt.clone());
        }
        // A closed runtime is not dropped here: with an op still running
        // (a shutdown that timed out), its last handle's drop would wait
        // for that op. It is kept until a shutdown has joined its threads
        // (nothing is asked of it here: a drain under way stays a drain).
        let closed = global.current.take();
        global.retired.extend(closed);
        global.retired.retain(|rt| !rt.is_joined());
        // Built under the lock: callers racing to the first use wait for
        // one build instead of each starting one.
        let rt = Builder::default().overlap(Overlap::Share).build()?;
        global.current = Some(rt.clone());
        Ok(rt)
    }

    /// Shuts the process's runtime down ([`Runtime::shutdown`]), if it was
    /// built: its report, or `None`.
    ///
    /// # Errors
    ///
    /// As [`Runtime::shutdown`]; the runtime stays the global one.
    #[cfg(not(weft_loom))]
    pub fn shutdown_global() -> Result<Option<RuntimeReport>, ShutdownError> {
        // Cloned, not taken, under the lock: the shutdown (which joins
        // threads) runs without it, and a refused one leaves it in place.
        let (current, retired) = {
            let global = GLOBAL.lock();
            (global.current.clone(), global.retired.clone())
        };
        let report = match &current {
            Some(rt) => Some(rt.shutdown()?),
            None => None,
        };
        // Earlier global runtimes whose shutdown had not finished: joined
        // too, as a shutdown of the process's runtime promises.
        for rt in &retired {
            rt.shutdown()?;
        }
        let mut global = GLOBAL.lock();
        let ours = |rt: &Runtime| retired.iter().chain(&current).any(|r| r.id() == rt.id());
        global.retired.retain(|rt| !ours(rt));
        if global.current.as_ref().is_some_and(ours) {
            global.current = None;
        }
        Ok(report)
    }
}

/// The process's runtime ([`Runtime::global`]), and earlier ones closed
/// while an op of theirs still ran.
#[cfg(not(weft_loom))]
struct Global {
    current: Option<Runtime>,
    /// Dropped once their threads are joined (by a later
    /// [`Runtime::global`] or [`Runtime::shutdown_global`]).
    retired: Vec<Runtime>,
}

/// The process's runtime ([`Runtime::global`]).
#[cfg(not(weft_loom))]
static GLOBAL: Mutex<Global> = Mutex::new(Global {
    current: None,
    retired: Vec::new(),
});
