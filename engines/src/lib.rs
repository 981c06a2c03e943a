//! Engines: the single-owner state an actor runs ops against.
//!
//! An engine is plain state with methods that take `&mut self`; it knows
//! nothing about threads or channels. It is built by a factory on its actor
//! thread and never leaves it.
//!
//! - [`ops`]: the backend-neutral vocabulary — [`TensorOp`], [`Meta`], the
//!   shape rules every op is checked by before it runs
//!   ([`TensorOp::infer`]), einsum parsing and contraction planning.
//! - `layout`: strides, NumPy broadcasting and strided views, the one
//!   place both backends learn shapes from.
//! - [`TensorEngine`]: what every engine offers the runtime (`engine.rs`,
//!   with the places, ids and errors the backends share).
//! - [`CpuEngine`]: a CPU domain's engine, a rayon pool whose workers are
//!   pinned to the domain's CPUs, with the actor thread itself as worker 0,
//!   the domain's resident [`Store`] of tensors, its buffer pool and the
//!   CPU kernels (products and decompositions through faer).
//! - `cuda::CudaEngine` (feature `cuda`): a CUDA device's engine.
//! - `mpi::MpiEngine` (feature `mpi`): a rank's MPI, owned by the MPI
//!   actor: the `mpi::Exchange` of messages and collectives over MPI's
//!   `Transport` (the exchange alone is also built under `--cfg
//!   weft_loom`, for the models of its request table).
//! - [`Tensor`]: dense, row-major host tensors of `f32`, `f64`, [`c32`],
//!   [`c64`].
//!
//! Each backend matches [`TensorOp`] exhaustively, so a new op is a compile
//! error in every engine until it says what it does there.
#![deny(unsafe_code)]
#![warn(missing_docs, missing_debug_implementations)]

#[macro_use]
mod dispatch;
mod autodiff;
#[cfg(test)]
mod coverage;
mod cpu;
#[cfg(feature = "cuda")]
pub mod cuda;
mod engine;
mod layout;
#[cfg(any(feature = "mpi", weft_loom))]
pub mod mpi;
pub mod ops;
mod program;
mod tensor;

// The engines.
pub use cpu::{
    BufferPool, CpuEngine, CpuEngineConfig, CpuProvider, DomainInfo, EngineError, Pinning, Store,
    DEFAULT_BUFFER_CAP, EINSUM_CACHE_CAPACITY, PARALLEL_THRESHOLD, PROGRAM_CACHE_CAPACITY,
};
// The BLAS provider's calls (feature `blas`).
#[cfg(feature = "blas")]
pub use cpu::blas;
// What the backends share.
pub use engine::{
    BufferStats, CacheStats, DeviceError, EngineMemory, ExecError, NotResident, Place,
    TensorEngine, TensorId, Unsupported,
};
// The vocabulary (the rest of it, the shape rules, is in `ops`).
pub use ops::{
    ArgOp, BinaryOp, CmpOp, Distribution, EinsumSpec, Linalg, MatOp, Meta, ReduceOp, Scalar,
    ScatterMode, SliceAxis, TensorOp, UnaryOp,
};
// Programs: computations recorded once, run as one message.
pub use autodiff::{GradError, DEGENERACY};
pub use program::{Program, RecordError, Recorder, Step, Value};
// Host tensors.
pub use tensor::{c32, c64, element_count, DType, Data, Element, Field, Tensor, TensorError};
