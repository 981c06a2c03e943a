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
#![forbid(unsafe_code)]
#![warn(missing_docs, missing_debug_implementations)]

mod error;
mod lane;
mod pipeline;
mod runtime;
mod scope;
mod tensor;

pub use error::{BuildError, RuntimeError};
pub use lane::Lane;
pub use pipeline::{Pipeline, PipelineRun};
pub use runtime::{Builder, Runtime, RuntimeReport, RuntimeStats, TRACE_ENV};
pub use scope::Scope;
pub use tensor::{DomainMemory, OpError, RuntimeId, TensorHandle};

pub use weft_actors::Lane as ActorLane;
pub use weft_actors::{
    current_actor, Actor, ActorBuilder, ActorClosed, ActorId, ActorStats, ActorTimeline, Call,
    Event, EventState, Failure, FailureCause, Flow, LaneStats, Op, OpBody, OpCounts, Outcome,
    Record, SampledTime, ShutdownError, ShutdownMode, ShutdownReport, SpawnError, SubmitError,
    SubmitTimeoutError, Ticket, TicketError, TicketFor, Trace, TryCall, TrySubmitError,
    TryWaitError, WaitTimeoutError,
};
pub use weft_engines::elementwise::CmpOp;
pub use weft_engines::structural::SliceAxis;
pub use weft_engines::{
    c32, c64, BinaryOp, BufferStats, CpuEngine, DType, Data, DeviceError, Distribution, DomainInfo,
    Element, EngineError, EngineMemory, ExecError, Linalg, Meta, NotResident, Pinning, Place,
    ReduceOp, Scalar, Tensor, TensorEngine, TensorError, TensorId, TensorOp, UnaryOp,
};
pub use weft_topology::{
    AffinityError, CpuDomain, CpuListError, CpuSet, LayoutSource, Topology, TopologyError,
    DOMAINS_ENV,
};

#[cfg(all(feature = "cuda", target_os = "linux"))]
pub use weft_topology::{cuda_devices, CudaDevice, CudaUnavailable};

/// The CUDA engine (feature `cuda`): what a `Lane<CudaEngine>` drives.
#[cfg(feature = "cuda")]
pub use weft_engines::cuda::{CudaEngine, CudaEngineConfig, CudaInfo, DeviceTensor};

/// The README's examples, compiled and run as doctests.
#[doc = include_str!("../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
