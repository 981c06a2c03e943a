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

// The modules in layers; each file's code uses only layers below it:
//
//   builder, scope, pipeline   entry points: make a runtime, app threads, pipelines
//   mpi/ops.rs                 (feature mpi) the lane ops between ranks, and a runtime's rank
//   runtime                    `Runtime`: lanes into its domains, hosted actors, shutdown
//   transfer, ops/, tape       the vocabulary (traits over `Apply`, for lanes and recorders),
//                              a lane's own ops, `Lane::call`; transfers use ops
//   lane                       `Lane`: the type, and opening one into a domain
//   domain                     the table of domains: started, looked up, stopped
//   mpi/actor.rs               (feature mpi) the rank's MPI actor, one entry of that table
//   ledger                     the process's claims on CPUs, between runtimes
//   config, error, functions   what actors start with; every error type; the runtime's
//                              cache of traced functions
//   trace/                     a trace as data, as JSON and as a picture
//   handle                     tensor handles, `RuntimeId`, a domain's shared tensor state
//
// The public surface is the root's names below and one module per concept;
// every name is in one module (the root and the prelude repeat the few a
// first program needs). `error`, `mpi`, `ops`, `runtime` and `trace` are
// files of this crate that also gather their concept's names, as a face
// does: `runtime.rs` re-exports the builder, pipelines and scopes above it,
// `error.rs` the pipeline's error. A re-export is not a use; no file's code
// uses a file above it. The other modules are gathered here.
mod builder;
mod config;
mod domain;
pub mod error;
mod functions;
mod handle;
mod hosting;
mod lane;
mod ledger;
#[cfg(feature = "mpi")]
pub mod mpi;
pub mod ops;
mod pipeline;
pub mod runtime;
#[cfg(not(weft_loom))]
mod scope;
mod tape;
pub mod trace;
mod transfer;

// What a first program names.
pub use error::{BuildError, OpError, RuntimeError};
pub use handle::TensorHandle;
pub use lane::Lane;
pub use runtime::{Builder, Runtime};
pub use weft_actors::{Event, Op, Ticket, TicketError};
pub use weft_core::{c32, c64, DType, Place, Program, Recorder, Scalar, Tensor, TensorEngine};
pub use weft_cpu::CpuEngine;

/// Host tensors, their element types, and the handles of resident ones.
pub mod tensor {
    pub use crate::handle::TensorHandle;
    pub use weft_core::{
        c32, c64, DType, Data, Element, Field, Meta, Place, Scalar, Tensor, TensorId,
    };
}

/// Programs: computations recorded once and run as one op, their
/// gradients, and the eager tape.
pub mod program {
    pub use crate::ops::call::eagerly;
    pub use crate::tape::Tape;
    pub use weft_core::{Program, Recorder, Step, Value, DEGENERACY};
}

/// The generic machinery under every lane: actors, their lanes, ops,
/// tickets, events and shutdown, for ops that run closures and for hosting
/// engines of one's own; and their counters.
pub mod actor {
    pub use weft_actors::{
        current_actor, Actor, ActorBuilder, ActorId, ActorJob, ActorStats, Call, Event, EventState,
        Failure, FailureCause, Housekeeping, Lane, LaneStats, Nudge, Op, OpBody, OpCounts, Promise,
        SampledTime, ShutdownMode, ShutdownReport, Stuck, StuckAt, Ticket, TicketFor, TryCall,
        MAX_LANE_CAPACITY, OPS_PER_TURN,
    };
}

/// Engines: the CPU engine a [`Lane`] drives, the trait any engine meets,
/// and what they report.
pub mod engine {
    pub use crate::functions::FUNCTION_CACHE_CAPACITY;
    pub use weft_core::{BufferStats, CacheStats, EngineMemory, TensorEngine};
    pub use weft_cpu::{
        CpuEngine, CpuProvider, DomainInfo, Leases, Pinning, EINSUM_CACHE_CAPACITY,
        PROGRAM_CACHE_CAPACITY, SWAP_MIN_BYTES,
    };
}

/// CPU sets, domains and how they are found; huge pages for a large
/// buffer of the caller's; the machine's CUDA devices (feature `cuda`).
pub mod topology {
    pub use weft_topology::{
        advise_huge_pages, current_cpu, pin_current_thread, process_allowed_cpus, CpuDomain,
        CpuSet, LayoutSource, Share, Topology, DOMAINS_ENV,
    };
    #[cfg(all(feature = "cuda", target_os = "linux"))]
    pub use weft_topology::{cuda_devices, CudaDevice};
}

/// CUDA devices (feature `cuda`): the engine a `Lane<CudaEngine>` drives,
/// and the machine's devices.
#[cfg(feature = "cuda")]
pub mod cuda {
    pub use weft_cuda::{
        cube_source, cubecl, kernel_op, CubeArgs, CubeError, CubeKernel, CubeSource, CudaEngine,
        CudaEngineConfig, CudaInfo, DeviceTensor, DriverCalls, Signature, CUBE_DIM, CUBE_MIN_ARCH,
    };
    #[cfg(target_os = "linux")]
    pub use weft_topology::{cuda_devices, CudaDevice};
}

/// The names most programs use, to import at once: `use weft::prelude::*;`.
pub mod prelude {
    #[cfg(feature = "cuda")]
    pub use crate::ops::CubeOps;
    pub use crate::ops::{
        Apply, CreateOps, ElementwiseOps, Function, HostRun, IndexOps, LinalgOps, Ops, ReduceOps,
        StructuralOps,
    };
    pub use crate::{
        Builder, DType, Lane, Op, Place, Program, Recorder, Runtime, Scalar, Tensor, TensorEngine,
        TensorHandle, Ticket,
    };
    pub use weft_core::{c32, c64, Element, Field};
}

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
