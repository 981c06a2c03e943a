//! Tensor ops as values: what an op is, what it produces, how the engine
//! runs it. Being values, ops can be checked before they run, logged,
//! traced, and replayed.

use crate::elementwise::{self, BinaryOp};
use crate::gemm;
use crate::tensor::{DType, Tensor, TensorError};
use crate::unary::{self, UnaryOp};

/// The element type and shape of a tensor, known before it exists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Meta {
    /// Element type.
    pub dtype: DType,
    /// Shape.
    pub shape: Vec<usize>,
}

/// An op of the tensor vocabulary that reads resident tensors and produces
/// one new tensor.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum TensorOp {
    /// Elementwise `a op b` with broadcasting.
    Binary(BinaryOp),
    /// Elementwise `f(a)`.
    Unary(UnaryOp),
    /// `a @ b`, batched, batch axes broadcast.
    Matmul,
}

impl TensorOp {
    /// The op's name in errors, stats and traces.
    pub fn name(&self) -> &'static str {
        match self {
            TensorOp::Binary(op) => op.name(),
            TensorOp::Unary(op) => op.name(),
            TensorOp::Matmul => "matmul",
        }
    }

    /// Number of input tensors.
    pub fn arity(&self) -> usize {
        match self {
            TensorOp::Unary(_) => 1,
            TensorOp::Binary(_) | TensorOp::Matmul => 2,
        }
    }

    /// The output the op produces from inputs of these types and shapes,
    /// or why it cannot: this is the check made at the call site.
    ///
    /// # Errors
    ///
    /// The [`TensorError`] naming the bad shape, type or argument.
    pub fn infer(&self, inputs: &[Meta]) -> Result<Meta, TensorError> {
        if inputs.len() != self.arity() {
            return Err(TensorError::Arity {
                op: self.name(),
                expected: self.arity(),
                got: inputs.len(),
            });
        }
        match self {
            TensorOp::Binary(op) => {
                let (a, b) = (&inputs[0], &inputs[1]);
                let shape =
                    elementwise::check_binary_meta(*op, a.dtype, &a.shape, b.dtype, &b.shape)?;
                Ok(Meta {
                    dtype: a.dtype,
                    shape,
                })
            }
            TensorOp::Unary(op) => {
                let a = &inputs[0];
                Ok(Meta {
                    dtype: op.output_dtype(a.dtype)?,
                    shape: a.shape.clone(),
                })
            }
            TensorOp::Matmul => {
                let (a, b) = (&inputs[0], &inputs[1]);
                if a.dtype != b.dtype {
                    return Err(TensorError::MixedDTypes {
                        op: "matmul",
                        lhs: a.dtype,
                        rhs: b.dtype,
                    });
                }
                Ok(Meta {
                    dtype: a.dtype,
                    shape: gemm::matmul_shape(&a.shape, &b.shape)?,
                })
            }
        }
    }

    /// Runs the op; `parallel` lets it spread over the current rayon pool
    /// (the engine installs its domain's) and `threads` is that pool's size.
    ///
    /// # Errors
    ///
    /// As [`TensorOp::infer`] (which the caller should have asked first).
    pub fn run(&self, inputs: &[&Tensor], threads: usize) -> Result<Tensor, TensorError> {
        let parallel = threads > 1;
        match self {
            TensorOp::Binary(op) => elementwise::binary(*op, inputs[0], inputs[1], parallel),
            TensorOp::Unary(op) => unary::apply(*op, inputs[0], parallel),
            TensorOp::Matmul => gemm::matmul(inputs[0], inputs[1], threads),
        }
    }
}

impl Meta {
    /// The type and shape of `tensor`.
    pub fn of(tensor: &Tensor) -> Meta {
        Meta {
            dtype: tensor.dtype(),
            shape: tensor.shape().to_vec(),
        }
    }
}
