//! Engines: the single-owner state an actor runs ops against.
//!
//! An engine is plain state with methods that take `&mut self`; it knows
//! nothing about threads or channels. It is built by a factory on its actor
//! thread and never leaves it.
//!
//! - [`CpuEngine`]: a CPU domain's engine, a rayon pool whose workers are
//!   pinned to the domain's CPUs, with the actor thread itself as worker 0,
//!   and the domain's resident [`Store`] of tensors.
//! - [`Tensor`]: dense, row-major tensors of `f32`, `f64`, [`c32`], [`c64`].
//! - [`TensorOp`]: the op vocabulary as values, checked before they run
//!   ([`TensorOp::infer`]) and run by [`CpuEngine::execute`]: elementwise
//!   ops with NumPy broadcasting ([`elementwise`], [`unary`]) and matrix
//!   products through faer ([`gemm`]).
#![deny(unsafe_code)]
#![warn(missing_docs, missing_debug_implementations)]

pub mod buffer;
mod cpu;
pub mod create;
#[cfg(feature = "cuda")]
#[allow(unsafe_code)] // CUDA FFI: each block argued where it stands.
pub mod cuda;
pub mod einsum;
pub mod elementwise;
mod engine;
pub mod gemm;
pub mod linalg;
mod op;
pub mod reduce;
mod store;
pub mod structural;
mod tensor;
pub mod unary;

pub use buffer::{BufferPool, BufferStats};
pub use cpu::{CpuEngine, CpuEngineConfig, DomainInfo, EngineError, Pinning, DEFAULT_BUFFER_CAP};
pub use create::{Distribution, Scalar};
pub use einsum::Spec as EinsumSpec;
pub use elementwise::BinaryOp;
pub use engine::{DeviceError, EngineMemory, ExecError, Place, TensorEngine, Unsupported};
pub use linalg::Linalg;
pub use op::{Meta, TensorOp};
pub use reduce::ReduceOp;
pub use store::{NotResident, Store, TensorId};
pub use tensor::{c32, c64, element_count, DType, Data, Element, Tensor, TensorError};
pub use unary::UnaryOp;
