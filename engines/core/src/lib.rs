//! The backend-neutral core of weft's engines: what every engine shares and
//! none owns.
//!
//! An engine is plain state with methods that take `&mut self`; it knows
//! nothing about threads or channels. It is built by a factory on its actor
//! thread and never leaves it. The engines themselves are crates over this
//! one (`weft-cpu`, `weft-cuda`); the MPI exchange (`weft-mpi`) uses its
//! host tensors. Nothing here depends on a backend.
//!
//! - [`Tensor`]: dense, row-major host tensors of the seven element types
//!   ([`DType`]), and [`TensorError`], every refusal of the vocabulary.
//! - [`ops`]: the vocabulary — [`TensorOp`], [`Meta`], the shape rules
//!   every op is checked by before it runs ([`TensorOp::infer`]), einsum
//!   parsing and contraction planning, and the strided views both
//!   backends build kernels from.
//! - [`layout`]: strides, NumPy broadcasting and strided views, the one
//!   place the backends learn shapes from.
//! - the dispatch macros (`for_dtype!`, `with_data!`, `map_data2!`, …): the
//!   one place that matches a tensor's elements by type.
//! - [`TensorEngine`]: what every engine offers the runtime, with the
//!   places, ids and errors the backends share.
//! - [`Program`], [`Recorder`]: computations recorded once and run as one
//!   message, and their reverse-mode gradients ([`Program::gradient`]).
//! - [`backend`]: what an engine's implementation needs beyond those (the
//!   stepwise run of a program any engine has).
//!
//! Each backend matches [`TensorOp`] exhaustively, so a new op is a compile
//! error in every engine until it says what it does there.
#![forbid(unsafe_code)]
#![warn(missing_docs, missing_debug_implementations)]

#[macro_use]
mod dispatch;
mod autodiff;
mod engine;
pub mod layout;
pub mod ops;
mod program;
mod tensor;

// What the backends share.
pub use engine::{
    BufferStats, CacheStats, DeviceError, EngineMemory, ExecError, NotResident, Place,
    TensorEngine, TensorId, Unsupported,
};
// The vocabulary (the rest of it, the shape rules, is in `ops`).
pub use ops::{
    ArgOp, BinaryOp, CmpOp, Distribution, EinsumSpec, KernelOp, Linalg, MatOp, Meta, ReduceOp,
    Scalar, ScatterMode, SliceAxis, TensorOp, UnaryOp,
};
// Programs: computations recorded once, run as one message.
pub use autodiff::{GradError, DEGENERACY};
pub use program::{Program, RecordError, Recorder, Step, Value};
// Host tensors.
pub use tensor::{c32, c64, element_count, DType, Data, Element, Field, Tensor, TensorError};

/// What an engine's implementation needs beyond the vocabulary and the
/// [`TensorEngine`] trait.
pub mod backend {
    pub use crate::engine::{execute_then_free, run_stepwise};
    pub use crate::program::last_uses;
}
