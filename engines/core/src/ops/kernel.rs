//! Kernels of one's own in the vocabulary: an op whose body is not weft's
//! but an engine's (a cubecl kernel on a CUDA device), so that it is
//! recorded, checked and run like any other op.

use std::any::{Any, TypeId};
use std::fmt;
use std::sync::Arc;

use super::Meta;
use crate::tensor::TensorError;

/// A kernel of one's own: its name, how many tensors it reads, the
/// tensors it makes, its scalars, and what runs it, which only the engine
/// of its place knows how to use (the CUDA engine's launch of a cubecl
/// kernel). Every other engine refuses it as `Unsupported`. It has no
/// derivative.
#[derive(Clone)]
pub struct KernelOp {
    /// The kernel's name, in errors and traces.
    pub name: &'static str,
    /// How many tensors it reads.
    pub inputs: usize,
    /// The tensors it makes.
    pub outputs: Vec<Meta>,
    /// Its scalars.
    pub scalars: Vec<f64>,
    /// What runs it: the engine that can downcasts it.
    pub run: Arc<dyn Any + Send + Sync>,
}

impl KernelOp {
    /// The kernel's outputs, after checking its inputs: their count, and
    /// one element type for every operand.
    ///
    /// # Errors
    ///
    /// [`TensorError::Arity`] for another count of inputs;
    /// [`TensorError::MixedDTypes`] when an input's or output's type is not
    /// the first operand's.
    pub fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>, TensorError> {
        if inputs.len() != self.inputs {
            return Err(TensorError::Arity {
                op: self.name,
                expected: self.inputs,
                got: inputs.len(),
            });
        }
        let mut every = inputs.iter().chain(&self.outputs);
        if let Some(first) = every.next() {
            if let Some(other) = every.find(|m| m.dtype != first.dtype) {
                return Err(TensorError::MixedDTypes {
                    op: self.name,
                    lhs: first.dtype,
                    rhs: other.dtype,
                });
            }
        }
        Ok(self.outputs.clone())
    }

    /// The type of what runs it.
    fn runner(&self) -> TypeId {
        (*self.run).type_id()
    }
}

/// Two kernel ops are the same op when their names, counts, outputs,
/// scalars (bit for bit) and runners' types are.
impl PartialEq for KernelOp {
    fn eq(&self, other: &Self) -> bool {
        let bits = |s: &[f64]| s.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        self.name == other.name
            && self.inputs == other.inputs
            && self.outputs == other.outputs
            && bits(&self.scalars) == bits(&other.scalars)
            && self.runner() == other.runner()
    }
}

impl fmt::Debug for KernelOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KernelOp")
            .field("name", &self.name)
            .field("inputs", &self.inputs)
            .field("outputs", &self.outputs)
            .field("scalars", &self.scalars)
            .finish_non_exhaustive()
    }
}
