//! Tensor ops as values: what an op is, what it produces, how the engine
//! runs it. Being values, ops can be checked before they run, logged,
//! traced, and replayed.

use crate::create::{self, Distribution, Scalar};
use crate::einsum::Spec;
use crate::elementwise::{self, BinaryOp};
use crate::gemm;
use crate::linalg::Linalg;
use crate::reduce::{self, ReduceOp};
use crate::structural;
use crate::tensor::{element_count, DType, Tensor, TensorError};
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
/// new ones (one, except for the decompositions).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum TensorOp {
    /// Elementwise `a op b` with broadcasting.
    Binary(BinaryOp),
    /// Elementwise `f(a)`.
    Unary(UnaryOp),
    /// `a @ b`, batched, batch axes broadcast.
    Matmul,
    /// A decomposition or solve through faer.
    Linalg(Linalg),
    /// `einsum` over the operands, as the parsed specification says.
    Einsum(Spec),
    /// A reduction over `axes`, keeping them as extent 1 if `keep_dims`.
    Reduce {
        /// The reduction.
        op: ReduceOp,
        /// The axes reduced.
        axes: Vec<usize>,
        /// Whether reduced axes stay, with extent 1.
        keep_dims: bool,
    },
    /// The same elements in a new shape.
    Reshape(Vec<usize>),
    /// The axes reordered: output axis `i` is input axis `perm[i]`.
    Permute(Vec<usize>),
    /// A tensor with every element `value`.
    Full {
        /// Element type.
        dtype: DType,
        /// Shape.
        shape: Vec<usize>,
        /// The value.
        value: Scalar,
    },
    /// The `rows × cols` identity.
    Eye {
        /// Element type.
        dtype: DType,
        /// Rows.
        rows: usize,
        /// Columns.
        cols: usize,
    },
    /// `start + step * i` for `i` in `0..len`, 1-D, real types.
    Arange {
        /// Element type.
        dtype: DType,
        /// First value.
        start: f64,
        /// Increment.
        step: f64,
        /// Number of elements.
        len: usize,
    },
    /// A seeded random tensor: the same seed gives the same data anywhere.
    Random {
        /// Element type.
        dtype: DType,
        /// Shape.
        shape: Vec<usize>,
        /// Distribution.
        distribution: Distribution,
        /// Seed.
        seed: u64,
    },
}

impl TensorOp {
    /// The op's name in errors, stats and traces.
    pub fn name(&self) -> &'static str {
        match self {
            TensorOp::Binary(op) => op.name(),
            TensorOp::Unary(op) => op.name(),
            TensorOp::Matmul => "matmul",
            TensorOp::Linalg(op) => op.name(),
            TensorOp::Einsum(_) => "einsum",
            TensorOp::Reduce { op, .. } => op.name(),
            TensorOp::Reshape(_) => "reshape",
            TensorOp::Permute(_) => "permute",
            TensorOp::Full { .. } => "full",
            TensorOp::Eye { .. } => "eye",
            TensorOp::Arange { .. } => "arange",
            TensorOp::Random { .. } => "random",
        }
    }

    /// Number of input tensors.
    pub fn arity(&self) -> usize {
        match self {
            TensorOp::Full { .. }
            | TensorOp::Eye { .. }
            | TensorOp::Arange { .. }
            | TensorOp::Random { .. } => 0,
            TensorOp::Unary(_)
            | TensorOp::Reduce { .. }
            | TensorOp::Reshape(_)
            | TensorOp::Permute(_) => 1,
            TensorOp::Binary(_) | TensorOp::Matmul => 2,
            TensorOp::Linalg(op) => op.arity(),
            TensorOp::Einsum(spec) => spec.arity(),
        }
    }

    /// The outputs the op produces from inputs of these types and shapes,
    /// or why it cannot: this is the check made at the call site.
    ///
    /// # Errors
    ///
    /// The [`TensorError`] naming the bad shape, type or argument.
    pub fn infer(&self, inputs: &[Meta]) -> Result<Vec<Meta>, TensorError> {
        if inputs.len() != self.arity() {
            return Err(TensorError::Arity {
                op: self.name(),
                expected: self.arity(),
                got: inputs.len(),
            });
        }
        if let TensorOp::Linalg(op) = self {
            return op.infer(inputs);
        }
        self.infer_one(inputs).map(|meta| vec![meta])
    }

    fn infer_one(&self, inputs: &[Meta]) -> Result<Meta, TensorError> {
        match self {
            TensorOp::Linalg(_) => unreachable!("decompositions have their own infer"),
            TensorOp::Einsum(spec) => spec.infer(inputs),
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
            TensorOp::Reduce {
                op,
                axes,
                keep_dims,
            } => {
                let a = &inputs[0];
                let (dtype, shape) = reduce::reduce_meta(*op, a.dtype, &a.shape, axes, *keep_dims)?;
                Ok(Meta { dtype, shape })
            }
            TensorOp::Reshape(to) => Ok(Meta {
                dtype: inputs[0].dtype,
                shape: structural::reshape_meta(&inputs[0].shape, to)?,
            }),
            TensorOp::Permute(perm) => Ok(Meta {
                dtype: inputs[0].dtype,
                shape: structural::permute_meta(&inputs[0].shape, perm)?,
            }),
            TensorOp::Full {
                dtype,
                shape,
                value,
            } => {
                // Refuse a complex value for a real type here, not on the actor.
                value.to_data(*dtype, 0)?;
                created(*dtype, shape.clone())
            }
            TensorOp::Eye { dtype, rows, cols } => created(*dtype, vec![*rows, *cols]),
            TensorOp::Arange { dtype, len, .. } => {
                if dtype.is_complex() {
                    return Err(TensorError::Unsupported {
                        op: "arange",
                        dtype: *dtype,
                    });
                }
                created(*dtype, vec![*len])
            }
            TensorOp::Random { dtype, shape, .. } => created(*dtype, shape.clone()),
        }
    }

    /// Runs the op; `parallel` lets it spread over the current rayon pool
    /// (the engine installs its domain's) and `threads` is that pool's size.
    ///
    /// # Errors
    ///
    /// As [`TensorOp::infer`] (which the caller should have asked first).
    pub fn run(&self, inputs: &[&Tensor], threads: usize) -> Result<Vec<Tensor>, TensorError> {
        if let TensorOp::Linalg(op) = self {
            return op.run(inputs);
        }
        self.run_one(inputs, threads).map(|t| vec![t])
    }

    fn run_one(&self, inputs: &[&Tensor], threads: usize) -> Result<Tensor, TensorError> {
        let parallel = threads > 1;
        match self {
            TensorOp::Linalg(_) => unreachable!("decompositions run on their own"),
            TensorOp::Einsum(spec) => spec.run(inputs, threads),
            TensorOp::Binary(op) => elementwise::binary(*op, inputs[0], inputs[1], parallel),
            TensorOp::Unary(op) => unary::apply(*op, inputs[0], parallel),
            TensorOp::Matmul => gemm::matmul(inputs[0], inputs[1], threads),
            TensorOp::Reduce {
                op,
                axes,
                keep_dims,
            } => reduce::reduce(*op, inputs[0], axes, *keep_dims),
            TensorOp::Reshape(to) => structural::reshape(inputs[0], to),
            TensorOp::Permute(perm) => structural::permute(inputs[0], perm),
            TensorOp::Full {
                dtype,
                shape,
                value,
            } => create::full(*dtype, shape, *value),
            TensorOp::Eye { dtype, rows, cols } => create::eye(*dtype, *rows, *cols),
            TensorOp::Arange {
                dtype,
                start,
                step,
                len,
            } => create::arange(*dtype, *start, *step, *len),
            TensorOp::Random {
                dtype,
                shape,
                distribution,
                seed,
            } => create::random(*dtype, shape, *distribution, *seed),
        }
    }
}

/// The meta of a created tensor, refusing shapes too large to exist.
fn created(dtype: DType, shape: Vec<usize>) -> Result<Meta, TensorError> {
    if element_count(&shape).is_none() {
        return Err(TensorError::TooLarge { shape });
    }
    Ok(Meta { dtype, shape })
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
