//! Every error type of weft: those of building a runtime, of its calls and
//! of a lane's tensor ops (defined here), and those of the parts below
//! them (tickets, submissions, tensors, programs, engines, topology).

use std::fmt;

// Every error of weft, in one place: those of the crates below, as they
// reach a user.
pub use crate::pipeline::ItemError;
pub use crate::trace::ViewError;
pub use weft_actors::{
    ActorClosed, ShutdownError, SpawnError, SubmitError, SubmitTimeoutError, TicketError,
    TrySubmitError, TryWaitError, WaitTimeoutError,
};
pub use weft_core::{
    DeviceError, ExecError, GradError, NotResident, RecordError, TensorError, Unsupported,
};
pub use weft_cpu::EngineError;
#[cfg(feature = "mpi")]
pub use weft_mpi::MpiError;
#[cfg(all(feature = "cuda", target_os = "linux"))]
pub use weft_topology::CudaUnavailable;
pub use weft_topology::{AffinityError, CpuListError, TopologyError};

use weft_core::{Meta, Place};
use weft_topology::CpuSet;

use crate::handle::RuntimeId;

/// A runtime could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// MPI was asked for and cannot be had (feature `mpi`).
    #[cfg(feature = "mpi")]
    #[error(transparent)]
    Mpi(#[from] weft_mpi::MpiError),
    /// CUDA devices were asked for and cannot be had: no driver library,
    /// no device, or not the one asked for.
    #[cfg(feature = "cuda")]
    #[error(transparent)]
    Cuda(#[from] weft_topology::CudaUnavailable),
    /// The CPU domain layout is unusable or the machine could not be read.
    #[error(transparent)]
    Topology(#[from] TopologyError),
    /// Zero threads per domain were asked for.
    #[error("threads per domain must be at least 1, got 0")]
    ZeroThreads,
    /// A lane capacity of zero was asked for.
    #[error("lane capacity must be at least 1, got 0")]
    ZeroLaneCapacity,
    /// A lane capacity above [`crate::actor::MAX_LANE_CAPACITY`] was asked for.
    #[error(
        "lane capacity {capacity} is above the largest, {}",
        weft_actors::MAX_LANE_CAPACITY
    )]
    LaneCapacity {
        /// The capacity asked for.
        capacity: usize,
    },
    /// The layout's CPUs overlap those of a live runtime of the process
    /// and the builder refuses overlaps ([`crate::runtime::Overlap::Refuse`]).
    #[error(
        "CPUs {cpus} are already run by weft {runtime} (on CPUs {runtime_cpus}): share it \
         (`Runtime::global()` or `Overlap::Share`), build on other CPUs, or allow the \
         overlap (`Overlap::Allow`)"
    )]
    Overlap {
        /// The CPUs both would run on.
        cpus: CpuSet,
        /// The live runtime that runs them.
        runtime: RuntimeId,
        /// All of its CPUs.
        runtime_cpus: CpuSet,
    },
    /// A build that would share ([`crate::runtime::Overlap::Share`], as
    /// [`crate::Runtime::global`] does) a runtime that this very thread is
    /// building: from a host's launcher ([`crate::Builder::host`]), which
    /// the build waits for. Sharing it would wait for itself.
    #[error(
        "CPUs {cpus} belong to weft {runtime}, which this thread is building (its host's \
         launcher runs here) and which cannot be shared before its build returns: call \
         `Runtime::global()` after the build, or build this runtime on other CPUs or with \
         `Overlap::Allow`"
    )]
    SharesOwnBuild {
        /// The runtime being built.
        runtime: RuntimeId,
        /// The CPUs both would run on.
        cpus: CpuSet,
    },
    /// The pool of [`crate::Builder::host_pool`] has fewer workers free
    /// than there are domains, each of whose actors needs one for good.
    #[error(
        "a caller's pool with {workers} free worker(s) cannot host {domains} CPU domain(s): \
         each domain's actor takes a worker for as long as the runtime runs \
         ({held} of its workers already run actors of live runtimes)"
    )]
    HostPool {
        /// The CPU domains to host.
        domains: usize,
        /// The pool's free workers: less the building thread if it is
        /// one, and less those the actors of live runtimes hold.
        workers: usize,
        /// The pool's workers that actors of live runtimes hold.
        held: usize,
    },
    /// An environment variable that sets a default holds a value that
    /// cannot be used.
    #[error("environment variable {var}={value:?}: {expected}")]
    Env {
        /// The variable.
        var: &'static str,
        /// Its value.
        value: String,
        /// What it must hold.
        expected: &'static str,
    },
    /// The actor of a domain could not start (for example, pinning failed).
    #[error("starting the actor of CPU domain {domain}: {source}")]
    Actor {
        /// The domain's index.
        domain: usize,
        /// Why.
        source: SpawnError,
    },
}

/// A runtime call was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RuntimeError {
    /// This runtime runs no CUDA device with this ordinal.
    #[error(fmt = no_such_device)]
    NoSuchDevice {
        /// The ordinal asked for.
        device: usize,
        /// The devices it runs.
        running: Vec<usize>,
    },
    /// There is no CPU domain with this index.
    #[error(fmt = no_such_domain)]
    NoSuchDomain {
        /// The index asked for.
        domain: usize,
        /// How many domains there are.
        count: usize,
    },
    /// The domain's actor is shut down.
    #[error(transparent)]
    Closed(#[from] ActorClosed),
    /// An application thread or actor could not start.
    #[error(transparent)]
    Spawn(#[from] SpawnError),
    /// The OS refused an application thread.
    #[error("cannot start application thread: {0}")]
    Thread(std::io::Error),
    /// A tensor op was refused.
    #[error(transparent)]
    Op(#[from] OpError),
}

impl From<weft_core::GradError> for OpError {
    fn from(e: weft_core::GradError) -> OpError {
        OpError::Gradient(Box::new(e))
    }
}

/// A tensor op refused at the call site, or failed on the actor.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum OpError {
    /// Shapes, element types or arguments that do not fit the op.
    #[error(transparent)]
    Tensor(#[from] TensorError),
    /// A gradient could not be derived (see [`weft_core::GradError`]).
    #[error(transparent)]
    Gradient(Box<weft_core::GradError>),
    /// A step being recorded into a program does not fit its inputs, or
    /// reads a value of another recording: named by its step's number.
    #[error(transparent)]
    Record(Box<RecordError>),
    /// A tape cannot give the gradient asked for.
    #[error("gradient on a tape: {reason}")]
    Tape {
        /// Why.
        reason: String,
    },
    /// A handle of another runtime.
    #[error("{op}: the handle belongs to runtime {handle:?}, this lane to runtime {lane:?}")]
    ForeignHandle {
        /// The op.
        op: &'static str,
        /// The handle's runtime.
        handle: RuntimeId,
        /// The lane's runtime.
        lane: RuntimeId,
    },
    /// A handle of another domain or device, used without a transfer.
    #[error("{op}: the tensor lives in {handle}, this lane feeds {lane}")]
    WrongDomain {
        /// The op.
        op: &'static str,
        /// Where the handle's tensor lives.
        handle: Place,
        /// What the lane feeds.
        lane: Place,
    },
    /// The tensor is not resident (it was removed behind its handle's back).
    #[error(transparent)]
    NotResident(#[from] NotResident),
    /// There is no CPU domain with this index (a transfer's destination):
    /// the same error, in the same words, as [`RuntimeError::NoSuchDomain`].
    #[error(fmt = no_such_domain)]
    NoSuchDomain {
        /// The index asked for.
        domain: usize,
        /// How many domains there are.
        count: usize,
    },
    /// This runtime runs no CUDA device with this ordinal (a transfer's
    /// destination): as [`RuntimeError::NoSuchDevice`].
    #[error(fmt = no_such_device)]
    NoSuchDevice {
        /// The ordinal asked for.
        device: usize,
        /// The devices it runs.
        running: Vec<usize>,
    },
    /// The engine does not implement the op for this element type: no
    /// silent fallback to another engine.
    #[error(transparent)]
    Unsupported(#[from] Unsupported),
    /// A device call failed; the device's other tensors are intact.
    #[error(transparent)]
    Device(#[from] DeviceError),
    /// The domain's actor is shut down.
    #[error(transparent)]
    Closed(#[from] ActorClosed),
    /// A cubecl kernel that cannot be launched ([`crate::ops::CubeOps::launch`]),
    /// named: another element type, an expansion that panicked, source
    /// cubecl cannot make.
    #[cfg(feature = "cuda")]
    #[error(transparent)]
    Cube(#[from] weft_cuda::CubeError),
    /// An operation between ranks failed (feature `mpi`).
    #[cfg(feature = "mpi")]
    #[error(transparent)]
    Mpi(#[from] weft_mpi::MpiError),
    /// The lane is full and the caller runs on an actor, which must not block.
    #[error("the lane is full and the caller runs on an actor, which must not block")]
    WouldDeadlock,
    /// A program was given another number of inputs than it has
    /// placeholders.
    #[error("{program}: takes {expected} inputs, given {got}")]
    ProgramArity {
        /// The program's trace label.
        program: &'static str,
        /// Its placeholders.
        expected: usize,
        /// Inputs given.
        got: usize,
    },
    /// A program's input is not of its placeholder's type and shape.
    #[error(
        "{program}: input {index} is {} {:?}, its placeholder {} {:?}",
        got.dtype, got.shape, expected.dtype, expected.shape
    )]
    ProgramInput {
        /// The program's trace label.
        program: &'static str,
        /// The input's position.
        index: usize,
        /// The placeholder's type and shape.
        expected: Box<Meta>,
        /// The input's.
        got: Box<Meta>,
    },
    /// A step of a program failed on the actor: the program's outputs
    /// fail with this, its inputs are untouched.
    #[error("{program}, step {step} ({op}): {source}")]
    Program {
        /// The program's trace label.
        program: &'static str,
        /// The step's number.
        step: usize,
        /// The step's op.
        op: &'static str,
        /// Why it failed.
        source: Box<OpError>,
    },
}

impl From<RecordError> for OpError {
    fn from(e: RecordError) -> Self {
        OpError::Record(Box::new(e))
    }
}

impl From<ExecError> for OpError {
    fn from(error: ExecError) -> Self {
        match error {
            ExecError::NotResident(e) => OpError::NotResident(e),
            ExecError::Tensor(e) => OpError::Tensor(e),
            ExecError::Unsupported(e) => OpError::Unsupported(e),
            ExecError::Device(e) => OpError::Device(e),
            ExecError::InProgram {
                program,
                step,
                op,
                source,
            } => OpError::Program {
                program,
                step,
                op,
                source: Box::new(OpError::from(*source)),
            },
        }
    }
}

/// A place this runtime does not run, as the domain table finds it. The
/// runtime's calls report it as [`RuntimeError`], a lane's transfers as
/// [`OpError`]: both have the variant, with these fields and one wording,
/// because callers match on both.
#[derive(Debug)]
pub(crate) enum PlaceError {
    NoSuchDomain { domain: usize, count: usize },
    NoSuchDevice { device: usize, running: Vec<usize> },
}

impl From<PlaceError> for RuntimeError {
    fn from(error: PlaceError) -> Self {
        match error {
            PlaceError::NoSuchDomain { domain, count } => {
                RuntimeError::NoSuchDomain { domain, count }
            }
            PlaceError::NoSuchDevice { device, running } => {
                RuntimeError::NoSuchDevice { device, running }
            }
        }
    }
}

impl From<PlaceError> for OpError {
    fn from(error: PlaceError) -> Self {
        match error {
            PlaceError::NoSuchDomain { domain, count } => OpError::NoSuchDomain { domain, count },
            PlaceError::NoSuchDevice { device, running } => {
                OpError::NoSuchDevice { device, running }
            }
        }
    }
}

fn no_such_domain(domain: &usize, count: &usize, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    write!(
        f,
        "no CPU domain {domain}: this runtime has {count} (0..{count})"
    )
}

fn no_such_device(device: &usize, running: &[usize], f: &mut fmt::Formatter<'_>) -> fmt::Result {
    write!(
        f,
        "no CUDA device {device} in this runtime (it runs {running:?})"
    )
}
