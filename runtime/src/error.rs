//! Errors of building and using a runtime.

use weft_actors::{ActorClosed, SpawnError};
use weft_topology::TopologyError;

/// A runtime could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
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
    #[error("no CUDA device {device} in this runtime (it runs {running:?})")]
    NoSuchDevice {
        /// The ordinal asked for.
        device: usize,
        /// The devices it runs.
        running: Vec<usize>,
    },
    /// There is no CPU domain with this index.
    #[error("no CPU domain {domain}: this runtime has {count} (0..{count})")]
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
    Op(#[from] crate::tensor::OpError),
}
