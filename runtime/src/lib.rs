//! weft: an actor-based lane executor for tensor work.
//!
//! Each CPU domain (by default a NUMA node's allowed CPUs) is an actor: one
//! thread that owns the domain's engine exclusively. Application code talks
//! to it only through ordered [`Lane`]s: it submits ops and gets
//! [`Ticket`]s back. There is no lock around an engine, no re-entry guard,
//! and no wait that can hang: a blocking wait from inside an actor returns
//! [`TicketError::WouldDeadlock`] at once.
//!
//! ```
//! use weft::Runtime;
//!
//! let rt = Runtime::new()?;
//! println!("{}", rt.topology());
//! let lane = rt.lane(0)?;
//! let ticket = lane.run(|engine| engine.install(|| (1..=100u64).sum::<u64>()))?;
//! assert_eq!(ticket.wait()?, 5050);
//! rt.shutdown()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Built with `RUSTFLAGS="--cfg weft_loom"`, the crate is a model for loom:
//! `Builder::model_domains` gives domains whose actors are loom threads
//! owning serial CPU engines, so an application's own test can model-check
//! its code against the shipping lanes, tickets, events and shutdowns.
//! What loom cannot run (pinning, thread counts, pools, hosts, traces, the
//! process's runtime, CUDA, MPI) is absent in that build. `docs/loom.md`
//! ("Model-checking your own code") has the commands.
#![forbid(unsafe_code)]
#![warn(missing_docs, missing_debug_implementations)]
// A model build (`--cfg weft_loom`) leaves out what loom cannot run (the
// hosts, the ledger's sharing, application threads, the process's
// runtime); the code behind them stays compiled but unused there. The
// normal build still finds dead code.
#![cfg_attr(weft_loom, allow(dead_code))]

#[cfg(all(weft_loom, any(feature = "cuda", feature = "mpi")))]
compile_error!(
    "weft under --cfg weft_loom models CPU domains only: build the model without the \
     `cuda` and `mpi` features (loom cannot model a device or the network)"
);

// The modules in layers; each uses only layers below it:
//
//   builder, scope, pipeline   entry points: make a runtime, app threads, pipelines
//   runtime                    `Runtime`: lanes into its domains, hosted actors, shutdown
//   transfer, ops/             a lane's tensor ops (`impl Lane` blocks); transfers use ops
//   lane                       `Lane`: the type, and opening one into a domain
//   domain                     the table of domains: started, looked up, stopped
//   ledger                     the process's claims on CPUs, between runtimes
//   config, error              what actors start with; every error type
//   trace_view                 a trace as data, as JSON and as a picture
//   handle                     tensor handles, `RuntimeId`, a domain's shared tensor state
mod builder;
mod config;
mod domain;
mod error;
mod handle;
mod lane;
mod ledger;
#[cfg(feature = "mpi")]
mod mpi;
mod ops;
mod pipeline;
mod runtime;
#[cfg(not(weft_loom))]
mod scope;
mod tape;
mod trace_view;
mod transfer;

// The public surface, by group. Everything else is crate-private; the
// engines' kernels are reached only through the vocabulary (`TensorOp`
// and the named ops of `Lane`), never by name.

// The runtime: building one, running it, its errors and reports, and the
// application-side helpers on top of lanes.
pub use builder::{Builder, RAYON_THREADS_ENV, THREADS_ENV, TRACE_ENV};
pub use config::Overlap;
pub use config::{DEFAULT_IDLE_TRIM, DEFAULT_THREAD_NAMES};
pub use domain::{Affinity, DomainThreads};
pub use error::{BuildError, RuntimeError};
pub use ledger::Overlapping;
pub use pipeline::{ItemError, Pipeline, PipelineRun};
pub use runtime::{Runtime, RuntimeReport, RuntimeStats};
#[cfg(not(weft_loom))]
pub use scope::Scope;
pub use tape::Tape;

// Actors, lanes and tickets: the generic machinery under every lane, for
// ops that run closures and for hosting engines of one's own.
pub use lane::Lane;
pub use weft_actors::Lane as ActorLane;
pub use weft_actors::{
    current_actor, Actor, ActorBuilder, ActorClosed, ActorId, ActorJob, Call, Event, EventState,
    Failure, FailureCause, Housekeeping, Nudge, Op, OpBody, Promise, ShutdownError, ShutdownMode,
    ShutdownReport, SpawnError, Stuck, StuckAt, SubmitError, SubmitTimeoutError, Ticket,
    TicketError, TicketFor, TryCall, TrySubmitError, TryWaitError, WaitTimeoutError,
    MAX_LANE_CAPACITY, OPS_PER_TURN,
};
// Their counters and timelines, and the timeline as data and as a picture.
pub use trace_view::{utc_date, ActorView, OpView, TraceFormat, TraceView, ViewError};
pub use weft_actors::{
    ActorStats, ActorTimeline, Flow, LaneStats, OpCounts, Outcome, Record, SampledTime, Trace,
};

// Tensors and the op vocabulary: handles and their errors, host tensors,
// element types, the ops a lane names, and where a tensor lives.
pub use error::OpError;
pub use handle::{RuntimeId, TensorHandle};
pub use ops::{DomainMemory, DotGeneral};
pub use weft_core::ops::MAX_EINSUM_OPERANDS;
pub use weft_core::{
    c32, c64, ArgOp, BinaryOp, CmpOp, DType, Data, Distribution, EinsumSpec, Element, Field,
    Linalg, MatOp, Meta, NotResident, Place, ReduceOp, Scalar, ScatterMode, SliceAxis, Tensor,
    TensorError, TensorId, TensorOp, UnaryOp,
};
// Programs: a computation recorded once and run as one op.
pub use weft_core::{GradError, Program, RecordError, Recorder, Step, Value, DEGENERACY};

// Engines: the CPU engine a `Lane` drives, the trait any engine meets, and
// what they report.
pub use weft_core::{BufferStats, CacheStats, DeviceError, EngineMemory, ExecError, TensorEngine};
pub use weft_cpu::{
    CpuEngine, CpuProvider, DomainInfo, EngineError, HostRun, Pinning, EINSUM_CACHE_CAPACITY,
    PROGRAM_CACHE_CAPACITY,
};

// Topology: CPU sets, domains and how they are found.
pub use weft_topology::{
    current_cpu, pin_current_thread, process_allowed_cpus, AffinityError, CpuDomain, CpuListError,
    CpuSet, LayoutSource, Topology, TopologyError, DOMAINS_ENV,
};

// CUDA (feature `cuda`): the devices of the machine, and the engine a
// `Lane<CudaEngine>` drives.
// MPI (feature `mpi`): ranks of a job, and their collectives.
#[cfg(feature = "cuda")]
pub use weft_cuda::{CudaEngine, CudaEngineConfig, CudaInfo, DeviceTensor, DriverCalls};
#[cfg(feature = "mpi")]
pub use weft_mpi::{
    Collective, MpiEngine, MpiError, Reduction, LAUNCHER_ENV, MAX_AXES as MPI_MAX_AXES,
    MAX_TAG as MPI_MAX_TAG,
};
#[cfg(all(feature = "cuda", target_os = "linux"))]
pub use weft_topology::{cuda_devices, CudaDevice, CudaUnavailable};

/// The README's examples, compiled and run as doctests.
#[doc = include_str!("../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

/// The examples of the pages under `docs/` that have Rust code blocks,
/// compiled and run as doctests (those marked `ignore` need a feature's
/// system: a GPU, an MPI job).
#[cfg(doctest)]
pub mod docs_pages {
    /// `docs/guide/programs.md`.
    #[doc = include_str!("../../docs/guide/programs.md")]
    pub struct Programs;

    /// `docs/cuda.md`.
    #[doc = include_str!("../../docs/cuda.md")]
    pub struct Cuda;

    /// `docs/mpi.md`.
    #[doc = include_str!("../../docs/mpi.md")]
    pub struct Mpi;
}
