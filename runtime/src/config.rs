//! The settings a runtime starts its actors with, as `Builder` collects them.

use std::error::Error;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use weft_actors::{
    ActorBuilder, ActorJob, Trace, DEFAULT_HOST_TIMEOUT, DEFAULT_IDLE_SPIN, DEFAULT_LANE_CAPACITY,
    DEFAULT_TRACE_CAPACITY, DEFAULT_WAIT_SPIN,
};
use weft_cpu::{
    CpuProvider, Pinning, DEFAULT_BUFFER_CAP, EINSUM_CACHE_CAPACITY, PROGRAM_CACHE_CAPACITY,
};

/// What a runtime's thread names begin with unless
/// [`crate::Builder::thread_names`] says otherwise.
pub const DEFAULT_THREAD_NAMES: &str = "weft";

/// Default time a domain is idle before it lets its buffer pool go.
pub const DEFAULT_IDLE_TRIM: Duration = Duration::from_secs(1);

/// A caller's launcher of CPU domains' actors: the domain, and its job.
pub(crate) type Launch =
    dyn Fn(usize, ActorJob) -> Result<(), Box<dyn Error + Send + Sync>> + Send + Sync;

/// Whose threads the CPU domains' actors run on ([`crate::Builder::host`],
/// [`crate::Builder::host_pool`]).
#[derive(Clone)]
pub(crate) enum Hosting {
    /// Threads the caller's launcher hands each job to.
    Threads(Arc<Launch>),
    /// A pool of the caller's: each actor is a job on it, and its
    /// kernels run on it.
    Pool(Arc<rayon::ThreadPool>),
}

impl fmt::Debug for Hosting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Hosting::Threads(_) => f.write_str("Threads"),
            Hosting::Pool(pool) => write!(f, "Pool({} threads)", pool.current_num_threads()),
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Config {
    pub(crate) threads_per_domain: Option<usize>,
    pub(crate) pinning: Pinning,
    pub(crate) lane_capacity: usize,
    pub(crate) idle_spin: Duration,
    pub(crate) wait_spin: Duration,
    pub(crate) buffer_cap: usize,
    /// Plans each CPU domain keeps: compiled programs, einsums.
    pub(crate) plan_caches: (usize, usize),
    /// Traced functions the runtime keeps.
    pub(crate) function_cache: usize,
    pub(crate) provider: CpuProvider,
    /// How long a domain is idle before it lets its buffer pool go.
    pub(crate) idle_trim: Duration,
    /// Where the trace goes, and the trace, once built.
    pub(crate) trace_path: Option<PathBuf>,
    pub(crate) trace_capacity: usize,
    pub(crate) trace: Option<Trace>,
    /// Stack size of every actor and pool thread, if not the platform's.
    pub(crate) stack_size: Option<usize>,
    /// What a build does when its CPUs overlap a live runtime's.
    pub(crate) overlap: Overlap,
    /// Where per-core domains lease their CPUs, if not the default.
    pub(crate) lease_dir: Option<PathBuf>,
    /// Whose threads the CPU domains' actors run on, if not their own.
    pub(crate) host: Option<Hosting>,
    /// How long a build waits for a host to begin a domain's job.
    pub(crate) host_timeout: Duration,
    /// What every thread name of the runtime begins with.
    pub(crate) name: String,
    /// The CUDA devices to run: none, every one, or these ordinals.
    #[cfg(feature = "cuda")]
    pub(crate) cuda: Option<Option<Vec<usize>>>,
    /// Whether to start the rank's MPI actor.
    #[cfg(feature = "mpi")]
    pub(crate) mpi: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            threads_per_domain: None,
            pinning: Pinning::PerCore,
            lane_capacity: DEFAULT_LANE_CAPACITY,
            idle_spin: DEFAULT_IDLE_SPIN,
            wait_spin: DEFAULT_WAIT_SPIN,
            buffer_cap: DEFAULT_BUFFER_CAP,
            plan_caches: (PROGRAM_CACHE_CAPACITY, EINSUM_CACHE_CAPACITY),
            function_cache: crate::functions::FUNCTION_CACHE_CAPACITY,
            provider: CpuProvider::Faer,
            idle_trim: DEFAULT_IDLE_TRIM,
            trace_path: None,
            trace_capacity: DEFAULT_TRACE_CAPACITY,
            trace: None,
            stack_size: None,
            overlap: Overlap::default(),
            lease_dir: None,
            host: None,
            host_timeout: DEFAULT_HOST_TIMEOUT,
            name: DEFAULT_THREAD_NAMES.to_owned(),
            #[cfg(feature = "cuda")]
            cuda: None,
            #[cfg(feature = "mpi")]
            mpi: false,
        }
    }
}

impl Config {
    /// Threads for a domain of `cpus` CPUs: as set, else one per CPU.
    pub(crate) fn threads_for(&self, cpus: usize) -> usize {
        self.threads_per_domain.unwrap_or(cpus)
    }

    /// A builder for an actor of the runtime named `name`: every actor the
    /// runtime starts (domains, devices, hosted engines) gets these settings.
    pub(crate) fn actor(&self, name: String) -> ActorBuilder {
        let mut builder = ActorBuilder::new(name)
            .lane_capacity(self.lane_capacity)
            .idle_spin(self.idle_spin)
            .wait_spin(self.wait_spin)
            .host_timeout(self.host_timeout);
        if let Some(bytes) = self.stack_size {
            builder = builder.stack_size(bytes);
        }
        match &self.trace {
            Some(trace) => builder.trace(trace),
            None => builder,
        }
    }
}

/// What a build does when its CPUs overlap those of a live runtime of the
/// process ([`crate::Builder::overlap`]).
///
/// The default, [`Overlap::Allow`], builds what was asked for and makes
/// the overlap visible instead of failing on it: both runtimes list it in
/// [`Runtime::overlaps`](crate::Runtime::overlaps) and
/// [`RuntimeStats`](crate::runtime::RuntimeStats) (whose table prints it),
/// and with the `tracing` feature the build emits a warning naming the
/// CPUs and the other runtime. Why not refuse by default: a test suite
/// whose tests each call `Runtime::new()` runs them on parallel threads,
/// and every test but the first would fail for a reason that is not its
/// own, while two runtimes on one core are slower, never wrong. Why not
/// share by default: sharing ignores the second builder's layout and
/// settings and ties its shutdown to another's (a test that shuts its
/// runtime down would close its neighbours'). A library that must not
/// oversubscribe builds with [`Overlap::Refuse`]; one that wants a runtime
/// without knowing whether its application has one calls
/// [`Runtime::global`](crate::Runtime::global), which shares by construction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Overlap {
    /// The build fails with [`BuildError::Overlap`](crate::BuildError::Overlap), naming the CPUs and
    /// the runtime that runs them.
    Refuse,
    /// The build returns a handle to the live runtime whose CPUs overlap
    /// (the first one claimed that is not shutting down): its actors,
    /// layout and settings, not the builder's. Without one it builds a new
    /// runtime.
    Share,
    /// The build goes ahead; both runtimes report the overlap in
    /// [`crate::runtime::RuntimeStats::overlaps`] and [`Runtime::overlaps`](crate::Runtime::overlaps).
    #[default]
    Allow,
}
