//! One vocabulary, two modes: the named ops (`add`, `einsum`, `svd`,
//! `slice`, …) are provided methods of traits over [`Apply`], which a
//! [`Lane`] implements by running each op and a [`Recorder`] by recording
//! it. Code generic over [`Ops`] runs eagerly on a lane or is recorded into
//! a [`Program`](weft_core::Program) unchanged.
//!
//! ```
//! use weft::prelude::*;
//!
//! /// `x / ‖x‖`, in either mode.
//! fn normalized<O: Ops>(o: &O, x: &O::Tensor) -> Result<O::Tensor, weft::OpError> {
//!     let norm = o.norm(x)?;
//!     o.div(x, &norm)
//! }
//!
//! let rt = weft::Runtime::builder().split(1).build()?;
//! let lane = rt.lane(0)?;
//! let x = lane.upload(Tensor::from_vec(vec![3.0f64, 4.0], &[2])?)?;
//! let eager = normalized(&lane, &x)?;
//! let program = Program::record(|p| -> Result<(), weft::OpError> {
//!     let x = p.input(DType::F64, &[2]);
//!     let y = normalized(p, &x)?;
//!     Ok(p.output(y)?)
//! })?;
//! let recorded = lane.run_program(&program, &[&x])?.remove(0);
//! let (a, b) = (lane.download(&eager)?.wait()?, lane.download(&recorded)?.wait()?);
//! assert_eq!(a.as_slice::<f64>()?, [0.6, 0.8]);
//! assert_eq!(a.as_slice::<f64>()?, b.as_slice::<f64>()?);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

// The traits of the vocabulary are one per family, in the files beside
// this one (`CreateOps` in create.rs, …); each is implemented for every
// `Apply` by a blanket impl and holds only provided methods, so an op is
// written once and both modes get it.

use std::borrow::Cow;
use std::fmt;

use weft_core::{DType, RecordError, Recorder, TensorEngine, TensorError, TensorOp, Value};

use super::{CreateOps, ElementwiseOps, IndexOps, LinalgOps, ReduceOps, StructuralOps};
use crate::error::OpError;
use crate::handle::TensorHandle;
use crate::lane::Lane;

/// What the vocabulary is built on: one op on tensors of a mode, and their
/// types and shapes. [`Lane`] runs ops (its tensors are
/// [`TensorHandle`]s); [`Recorder`] records them into a program (its
/// tensors are [`Value`]s). Both check an op by the same rules
/// ([`TensorOp::infer`]) before it runs or is recorded.
pub trait Apply {
    /// A tensor of this mode.
    type Tensor: Clone + fmt::Debug;

    /// `op` on `inputs`: its one result.
    ///
    /// # Errors
    ///
    /// [`OpError::Tensor`] naming the bad shape or type (or an op with
    /// more than one result), on a lane; [`OpError::Record`] naming the
    /// step, when recording. A lane's own errors: see [`Lane::apply`].
    fn apply(&self, op: TensorOp, inputs: &[&Self::Tensor]) -> Result<Self::Tensor, OpError>;

    /// `op` on `inputs`: all its results (the decompositions have several).
    ///
    /// # Errors
    ///
    /// As [`Apply::apply`].
    fn apply_many(
        &self,
        op: TensorOp,
        inputs: &[&Self::Tensor],
    ) -> Result<Vec<Self::Tensor>, OpError>;

    /// The element type of `x`.
    ///
    /// # Errors
    ///
    /// [`OpError::Record`] for a value of another recording.
    fn dtype(&self, x: &Self::Tensor) -> Result<DType, OpError>;

    /// The shape of `x`.
    ///
    /// # Errors
    ///
    /// [`OpError::Record`] for a value of another recording.
    fn shape<'a>(&'a self, x: &'a Self::Tensor) -> Result<Cow<'a, [usize]>, OpError>;

    /// The error of an op `op` refused before it is applied (a named op
    /// that checks its arguments itself, as `einsum` parses its spec):
    /// [`OpError::Tensor`], or, when recording, [`OpError::Record`] naming
    /// the step it would have been.
    fn refused(&self, op: &'static str, error: TensorError) -> OpError {
        let _ = op;
        error.into()
    }
}

/// The whole vocabulary: every named op, for code that runs in either
/// mode (`fn f<O: Ops>(o: &O, x: &O::Tensor)`). Implemented for every
/// [`Apply`].
pub trait Ops:
    Apply + CreateOps + ElementwiseOps + IndexOps + LinalgOps + ReduceOps + StructuralOps
{
}

impl<T: Apply + ?Sized> Ops for T {}

impl<E: TensorEngine> Apply for Lane<E> {
    type Tensor = TensorHandle;

    fn apply(&self, op: TensorOp, inputs: &[&TensorHandle]) -> Result<TensorHandle, OpError> {
        Lane::apply(self, op, inputs)
    }

    fn apply_many(
        &self,
        op: TensorOp,
        inputs: &[&TensorHandle],
    ) -> Result<Vec<TensorHandle>, OpError> {
        Lane::apply_many(self, op, inputs)
    }

    fn dtype(&self, x: &TensorHandle) -> Result<DType, OpError> {
        Ok(x.dtype())
    }

    fn shape<'a>(&'a self, x: &'a TensorHandle) -> Result<Cow<'a, [usize]>, OpError> {
        Ok(Cow::Borrowed(x.shape()))
    }
}

impl Apply for Recorder {
    type Tensor = Value;

    fn apply(&self, op: TensorOp, inputs: &[&Value]) -> Result<Value, OpError> {
        let args: smallvec::SmallVec<[Value; 4]> = inputs.iter().map(|&&v| v).collect();
        Ok(self.record_op(op, &args)?)
    }

    fn apply_many(&self, op: TensorOp, inputs: &[&Value]) -> Result<Vec<Value>, OpError> {
        let args: smallvec::SmallVec<[Value; 4]> = inputs.iter().map(|&&v| v).collect();
        Ok(self.record_many(op, &args)?)
    }

    fn dtype(&self, x: &Value) -> Result<DType, OpError> {
        Ok(self.meta(*x)?.dtype)
    }

    fn shape<'a>(&'a self, x: &'a Value) -> Result<Cow<'a, [usize]>, OpError> {
        Ok(Cow::Owned(self.meta(*x)?.shape))
    }

    fn refused(&self, op: &'static str, source: TensorError) -> OpError {
        RecordError::Op {
            step: self.next_step(),
            op,
            source,
        }
        .into()
    }
}
