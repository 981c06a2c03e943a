//! The op vocabulary, backend-neutral: what an op is, what it produces,
//! and the rules it is checked by before any engine runs it. Being values,
//! ops can be checked, logged, traced, and replayed. No kernel code here:
//! each backend matches [`TensorOp`] exhaustively in its own module.

mod create;
mod einsum;
mod elementwise;
mod index;
mod kernel;
mod linalg;
mod matmul;
mod reduce;
mod samples;
mod structural;
mod unary;

pub use crate::layout::broadcast_shapes;
pub use crate::tensor::Scalar;
pub use create::Distribution;
pub use einsum::Contraction;
pub use einsum::{is_label, Spec as EinsumSpec};
pub use elementwise::check_integer_operands;
pub use elementwise::{check_binary_meta, check_compare, check_select, BinaryOp, CmpOp};
pub use index::{check_starts, check_window, gather_meta, scatter_meta, ScatterMode};
pub use index::{clamped_starts, mask_positions, positions, split_at_axis, window_axes};
pub use kernel::KernelOp;
pub use linalg::Linalg;
pub use matmul::{matmul_shape, MatOp};
pub use reduce::{arg_meta, reduce_meta, ArgOp, ReduceOp};
pub use samples::samples;
pub use structural::{
    broadcast_in_dim_meta, broadcast_to_meta, check_axes, concat_meta, permute_meta, reshape_meta,
    slice_meta, SliceAxis,
};
pub use structural::{
    broadcast_in_dim_view, broadcast_view, diag_embed_view, diagonal_view, permute_view,
    reverse_view, slice_view,
};
pub use unary::UnaryOp;

use crate::tensor::{element_count, DType, Tensor, TensorError};
use einsum::Spec;

/// The element type and shape of a tensor, known before it exists.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Meta {
    /// Element type.
    pub dtype: DType,
    /// Shape.
    pub shape: Vec<usize>,
}

/// An op of the tensor vocabulary that reads resident tensors and produces
/// new ones (one, except for the decompositions).
///
/// Not `#[non_exhaustive]`, on purpose: every backend (its own crate)
/// matches the vocabulary exhaustively, so a new op is a compile error in
/// each engine until it says what it does there.
#[derive(Debug, Clone, PartialEq)]
pub enum TensorOp {
    /// Elementwise `a op b` with broadcasting.
    Binary(BinaryOp),
    /// Elementwise `f(a)`.
    Unary(UnaryOp),
    /// `a @ b`, batched, batch axes broadcast.
    Matmul,
    /// `alpha · op(a) @ op(b) + beta · c` (BLAS's `gemm`, batched as
    /// matmul): `c` has the product's shape and is not read when `beta`
    /// is 0 (its NaNs do not reach the result). Inputs: `a`, `b`, `c`.
    Gemm {
        /// The product's scale.
        alpha: Scalar,
        /// `c`'s scale.
        beta: Scalar,
        /// How `a` is read.
        a: MatOp,
        /// How `b` is read.
        b: MatOp,
    },
    /// `alpha · x + beta · y`, broadcast (floats and complexes); `y` is
    /// not read when `beta` is 0 (its NaNs do not reach the result), as
    /// [`TensorOp::Gemm`]'s `c`.
    Axpby {
        /// `x`'s scale.
        alpha: Scalar,
        /// `y`'s scale.
        beta: Scalar,
    },
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
    /// The `i64` index of the largest or smallest element along `axis`
    /// (the first one on ties; the first NaN if there is one, as NumPy).
    ArgReduce {
        /// `argmax` or `argmin`.
        op: ArgOp,
        /// The axis searched.
        axis: usize,
        /// Whether the axis stays, with extent 1.
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
    /// `start + step * i` for `i` in `0..len`, 1-D, real floats and
    /// integers (for integers, `start` and `step` whole and every value in
    /// the type's range).
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
    /// `a op b`, as a `bool` tensor.
    Compare(CmpOp),
    /// Where the first input (a `bool` mask) is `true` the second, else
    /// the third.
    Select,
    /// Every element limited to `[lo, hi]` (real floats and integers; of
    /// integers, to the whole numbers inside the bounds).
    Clamp {
        /// Lower bound.
        lo: f64,
        /// Upper bound.
        hi: f64,
    },
    /// Every element of the first input limited to between the second's
    /// and the third's, all three broadcast (NumPy's `clip` with tensor
    /// bounds): `minimum(maximum(x, lo), hi)`, so a NaN anywhere gives NaN
    /// and where `lo > hi` the result is `hi`. Real floats and integers.
    ClampBetween,
    /// `a op value` (or `value op a` if `scalar_first`), broadcast.
    BinaryScalar {
        /// The op.
        op: BinaryOp,
        /// The scalar operand.
        value: Scalar,
        /// Whether the scalar is the left operand.
        scalar_first: bool,
    },
    /// The elements converted to another type, as Rust's `as` converts
    /// (see [`Element::from_scalar`](crate::Element::from_scalar)).
    Cast(DType),
    /// `a[start..stop:step, …]`, one range per axis.
    Slice(Vec<SliceAxis>),
    /// The order along these axes reversed.
    Reverse(Vec<usize>),
    /// Repeated along broadcast axes to this shape.
    BroadcastTo(Vec<usize>),
    /// The input's axis `i` as output axis `dims[i]` of `shape` (of the
    /// same extent, or from extent 1), the other axes repeated
    /// (StableHLO's `broadcast_in_dim`).
    BroadcastInDim {
        /// The output's shape.
        shape: Vec<usize>,
        /// The output axis of each input axis.
        dims: Vec<usize>,
    },
    /// The inputs (this many) joined along `axis`.
    Concatenate {
        /// The axis.
        axis: usize,
        /// Number of inputs.
        inputs: usize,
    },
    /// Padded with `value`, `(before, after)` per axis.
    Pad {
        /// Widths per axis.
        widths: Vec<(usize, usize)>,
        /// The fill value.
        value: Scalar,
    },
    /// The diagonals of a pair of axes (`a[…, i, …, i, …]`), as NumPy's
    /// `diagonal`: the two axes removed, the diagonal (of extent the
    /// smaller of theirs) last.
    Diagonal {
        /// The two axes, distinct.
        axes: [usize; 2],
    },
    /// The last axis put on the diagonals of a pair of output axes, zeros
    /// elsewhere, as PyTorch's `diag_embed`: the output has one more axis,
    /// the pair of the last one's extent, and its other axes are the
    /// input's leading ones, in order.
    DiagEmbed {
        /// The two output axes, distinct.
        axes: [usize; 2],
    },
    /// The lower (`j ≤ i + k`) or upper (`j ≥ i + k`) triangle of the last
    /// two axes.
    Triangle {
        /// The diagonal offset.
        k: isize,
        /// Upper rather than lower.
        upper: bool,
    },
    /// A kernel of one's own (a cubecl kernel on a CUDA device), which
    /// only the engine it was written for runs.
    Kernel(KernelOp),
    /// The inner product of two vectors (`conjugate`: of the first one's
    /// conjugate, `vdot`), as a rank-0 tensor.
    Dot {
        /// Whether the first vector is conjugated.
        conjugate: bool,
    },
    /// `x` taken along `axis` at an integer index tensor (NumPy's
    /// `take`): the output has `x`'s axes before `axis`, the indices',
    /// then `x`'s after it. Inputs: `x`, indices.
    Gather {
        /// The axis indexed.
        axis: usize,
    },
    /// `x` with the slices along `axis` at the indices set to, or
    /// increased by, the updates (shaped as the gather of the same indices
    /// would be). Inputs: `x`, indices, updates.
    Scatter {
        /// The axis indexed.
        axis: usize,
        /// Set or add.
        mode: ScatterMode,
    },
    /// The window of `sizes` at start offsets read from a 1-D integer
    /// tensor, each clamped (as XLA's) so that the window fits. Inputs:
    /// `x`, starts.
    DynamicSlice {
        /// The window's extent per axis.
        sizes: Vec<usize>,
    },
    /// `x` with `update` written at start offsets read from a 1-D integer
    /// tensor, clamped as [`TensorOp::DynamicSlice`]'s. Inputs: `x`,
    /// update, starts.
    DynamicUpdateSlice,
    /// The elements of `x` where `mask` (a `bool` tensor of `x`'s shape)
    /// is `true`, in row-major order, as a 1-D tensor of `len` elements:
    /// the count is the caller's (a `sum` of the mask), checked on the
    /// actor, since a handle's shape is known when it is made.
    Compress {
        /// The number of `true` elements of the mask.
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
            TensorOp::Kernel(k) => k.name,
            TensorOp::Gemm { .. } => "gemm",
            TensorOp::Axpby { .. } => "axpby",
            TensorOp::Linalg(op) => op.name(),
            TensorOp::Einsum(_) => "einsum",
            TensorOp::Reduce { op, .. } => op.name(),
            TensorOp::ArgReduce { op, .. } => op.name(),
            TensorOp::Reshape(_) => "reshape",
            TensorOp::Permute(_) => "permute",
            TensorOp::Full { .. } => "full",
            TensorOp::Eye { .. } => "eye",
            TensorOp::Arange { .. } => "arange",
            TensorOp::Random { .. } => "random",
            TensorOp::Compare(op) => op.name(),
            TensorOp::Select => "select",
            TensorOp::Clamp { .. } => "clamp",
            TensorOp::ClampBetween => "clamp_between",
            TensorOp::BinaryScalar { op, .. } => op.name(),
            TensorOp::Cast(_) => "cast",
            TensorOp::Slice(_) => "slice",
            TensorOp::Reverse(_) => "reverse",
            TensorOp::BroadcastTo(_) => "broadcast_to",
            TensorOp::BroadcastInDim { .. } => "broadcast_in_dim",
            TensorOp::Concatenate { .. } => "concatenate",
            TensorOp::Pad { .. } => "pad",
            TensorOp::Diagonal { .. } => "diagonal",
            TensorOp::DiagEmbed { .. } => "diag_embed",
            TensorOp::Triangle { upper: false, .. } => "tril",
            TensorOp::Triangle { upper: true, .. } => "triu",
            TensorOp::Gather { .. } => "gather",
            TensorOp::Scatter {
                mode: ScatterMode::Set,
                ..
            } => "scatter",
            TensorOp::Scatter {
                mode: ScatterMode::Add,
                ..
            } => "scatter_add",
            TensorOp::DynamicSlice { .. } => "dynamic_slice",
            TensorOp::DynamicUpdateSlice => "dynamic_update_slice",
            TensorOp::Compress { .. } => "compress",
            TensorOp::Dot { conjugate: false } => "dot",
            TensorOp::Dot { conjugate: true } => "vdot",
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
            | TensorOp::ArgReduce { .. }
            | TensorOp::Reshape(_)
            | TensorOp::Permute(_)
            | TensorOp::Clamp { .. }
            | TensorOp::BinaryScalar { .. }
            | TensorOp::Cast(_)
            | TensorOp::Slice(_)
            | TensorOp::Reverse(_)
            | TensorOp::BroadcastTo(_)
            | TensorOp::BroadcastInDim { .. }
            | TensorOp::Pad { .. }
            | TensorOp::Diagonal { .. }
            | TensorOp::DiagEmbed { .. }
            | TensorOp::Triangle { .. } => 1,
            TensorOp::Binary(_)
            | TensorOp::Axpby { .. }
            | TensorOp::Matmul
            | TensorOp::Compare(_)
            | TensorOp::Gather { .. }
            | TensorOp::DynamicSlice { .. }
            | TensorOp::Compress { .. }
            | TensorOp::Dot { .. } => 2,
            TensorOp::Select
            | TensorOp::ClampBetween
            | TensorOp::Scatter { .. }
            | TensorOp::DynamicUpdateSlice
            | TensorOp::Gemm { .. } => 3,
            TensorOp::Concatenate { inputs, .. } => *inputs,
            TensorOp::Linalg(op) => op.arity(),
            TensorOp::Einsum(spec) => spec.arity(),
            TensorOp::Kernel(k) => k.inputs,
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
        // Products and decompositions compute in a field (faer's).
        if matches!(
            self,
            TensorOp::Matmul
                | TensorOp::Gemm { .. }
                | TensorOp::Axpby { .. }
                | TensorOp::Einsum(_)
                | TensorOp::Linalg(_)
                | TensorOp::Dot { .. }
        ) {
            if let Some(m) = inputs.iter().find(|m| !m.dtype.is_field()) {
                return Err(TensorError::Unsupported {
                    op: self.name(),
                    dtype: m.dtype,
                });
            }
        }
        let outputs = match self {
            TensorOp::Linalg(op) => op.infer(inputs)?,
            TensorOp::Kernel(k) => k.infer(inputs)?,
            _ => vec![self.infer_one(inputs)?],
        };
        // A shape whose bytes overflow can never be allocated: refuse it
        // here, before a kernel's allocation panics on the actor.
        for meta in &outputs {
            if byte_size(meta.dtype, &meta.shape).is_none() {
                return Err(TensorError::TooLarge {
                    shape: meta.shape.clone(),
                });
            }
        }
        Ok(outputs)
    }

    fn infer_one(&self, inputs: &[Meta]) -> Result<Meta, TensorError> {
        match self {
            TensorOp::Linalg(_) => unreachable!("decompositions have their own infer"),
            TensorOp::Kernel(_) => unreachable!("kernels have their own infer"),
            TensorOp::Einsum(spec) => spec.infer(inputs),
            TensorOp::Binary(op) => {
                let (a, b) = (&inputs[0], &inputs[1]);
                let shape = check_binary_meta(*op, a.dtype, &a.shape, b.dtype, &b.shape)?;
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
                    shape: matmul_shape(&a.shape, &b.shape)?,
                })
            }
            TensorOp::Gemm { alpha, beta, a, b } => {
                let (x, y, c) = (&inputs[0], &inputs[1], &inputs[2]);
                for m in [y, c] {
                    if m.dtype != x.dtype {
                        return Err(TensorError::MixedDTypes {
                            op: "gemm",
                            lhs: x.dtype,
                            rhs: m.dtype,
                        });
                    }
                }
                alpha.check("gemm", "alpha", x.dtype)?;
                beta.check("gemm", "beta", x.dtype)?;
                let shape = matmul_shape(&a.shape(&x.shape), &b.shape(&y.shape))?;
                if c.shape != shape {
                    return Err(TensorError::MatmulShapes {
                        lhs: c.shape.clone(),
                        rhs: shape,
                        reason: "the accumulated tensor must have the product's shape",
                    });
                }
                Ok(c.clone())
            }
            TensorOp::Axpby { alpha, beta } => {
                let (x, y) = (&inputs[0], &inputs[1]);
                alpha.check("axpby", "alpha", x.dtype)?;
                beta.check("axpby", "beta", x.dtype)?;
                if x.dtype != y.dtype {
                    return Err(TensorError::MixedDTypes {
                        op: "axpby",
                        lhs: x.dtype,
                        rhs: y.dtype,
                    });
                }
                Ok(Meta {
                    dtype: x.dtype,
                    shape: broadcast_shapes("axpby", &x.shape, &y.shape)?,
                })
            }
            TensorOp::Reduce {
                op,
                axes,
                keep_dims,
            } => {
                let a = &inputs[0];
                let (dtype, shape) = reduce_meta(*op, a.dtype, &a.shape, axes, *keep_dims)?;
                Ok(Meta { dtype, shape })
            }
            TensorOp::ArgReduce {
                op,
                axis,
                keep_dims,
            } => {
                let a = &inputs[0];
                Ok(Meta {
                    dtype: DType::I64,
                    shape: arg_meta(*op, a.dtype, &a.shape, *axis, *keep_dims)?,
                })
            }
            TensorOp::Reshape(to) => Ok(Meta {
                dtype: inputs[0].dtype,
                shape: reshape_meta(&inputs[0].shape, to)?,
            }),
            TensorOp::Permute(perm) => Ok(Meta {
                dtype: inputs[0].dtype,
                shape: permute_meta(&inputs[0].shape, perm)?,
            }),
            TensorOp::Full {
                dtype,
                shape,
                value,
            } => {
                // Refuse a complex value for a real type here, not on the actor.
                value.check("full", "value", *dtype)?;
                created(*dtype, shape.clone())
            }
            TensorOp::Eye { dtype, rows, cols } => created(*dtype, vec![*rows, *cols]),
            TensorOp::Arange {
                dtype,
                start,
                step,
                len,
            } => {
                if !dtype.is_float() && !dtype.is_integer() {
                    return Err(TensorError::Unsupported {
                        op: "arange",
                        dtype: *dtype,
                    });
                }
                // `start + step·i` of a non-finite argument is NaN or inf
                // for every element: say so instead of computing it.
                for (argument, value) in [("start", *start), ("step", *step)] {
                    if !value.is_finite() {
                        return Err(TensorError::Argument {
                            op: "arange",
                            argument,
                            value: value.to_string(),
                            must: "finite",
                        });
                    }
                }
                if dtype.is_integer() {
                    integer_range(*dtype, *start, *step, *len)?;
                }
                created(*dtype, vec![*len])
            }
            TensorOp::Random {
                dtype,
                shape,
                distribution,
                ..
            } => {
                distribution.check(*dtype)?;
                created(*dtype, shape.clone())
            }
            TensorOp::Compare(op) => {
                let (a, b) = (&inputs[0], &inputs[1]);
                let shape = check_compare(*op, a.dtype, &a.shape, b.dtype, &b.shape)?;
                Ok(Meta {
                    dtype: DType::Bool,
                    shape,
                })
            }
            TensorOp::Select => {
                let (m, a, b) = (&inputs[0], &inputs[1], &inputs[2]);
                let shape = check_select(m.dtype, &m.shape, a.dtype, &a.shape, b.dtype, &b.shape)?;
                Ok(Meta {
                    dtype: a.dtype,
                    shape,
                })
            }
            TensorOp::Clamp { lo, hi } => {
                let a = &inputs[0];
                if !a.dtype.is_float() && !a.dtype.is_integer() {
                    return Err(TensorError::Unsupported {
                        op: "clamp",
                        dtype: a.dtype,
                    });
                }
                for (argument, value) in [("lo", *lo), ("hi", *hi)] {
                    if value.is_nan() {
                        return Err(TensorError::Argument {
                            op: "clamp",
                            argument,
                            value: value.to_string(),
                            must: "a number (infinite bounds are fine)",
                        });
                    }
                }
                Ok(a.clone())
            }
            TensorOp::ClampBetween => {
                let x = &inputs[0];
                if !x.dtype.is_float() && !x.dtype.is_integer() {
                    return Err(TensorError::Unsupported {
                        op: "clamp_between",
                        dtype: x.dtype,
                    });
                }
                if let Some(bound) = inputs[1..].iter().find(|m| m.dtype != x.dtype) {
                    return Err(TensorError::MixedDTypes {
                        op: "clamp_between",
                        lhs: x.dtype,
                        rhs: bound.dtype,
                    });
                }
                let shape = broadcast_shapes("clamp_between", &x.shape, &inputs[1].shape)?;
                Ok(Meta {
                    dtype: x.dtype,
                    shape: broadcast_shapes("clamp_between", &shape, &inputs[2].shape)?,
                })
            }
            TensorOp::BinaryScalar { op, value, .. } => {
                let a = &inputs[0];
                if !op.supports(a.dtype) {
                    return Err(TensorError::Unsupported {
                        op: op.name(),
                        dtype: a.dtype,
                    });
                }
                value.check(op.name(), "scalar", a.dtype)?;
                Ok(a.clone())
            }
            TensorOp::Cast(dtype) => Ok(Meta {
                dtype: *dtype,
                shape: inputs[0].shape.clone(),
            }),
            TensorOp::Slice(axes) => Ok(Meta {
                dtype: inputs[0].dtype,
                shape: slice_meta(&inputs[0].shape, axes)?,
            }),
            TensorOp::Reverse(axes) => {
                check_axes("reverse", inputs[0].shape.len(), axes)?;
                Ok(inputs[0].clone())
            }
            TensorOp::BroadcastTo(shape) => Ok(Meta {
                dtype: inputs[0].dtype,
                shape: broadcast_to_meta(&inputs[0].shape, shape)?,
            }),
            TensorOp::BroadcastInDim { shape, dims } => {
                broadcast_in_dim_meta(&inputs[0].shape, shape, dims)?;
                Ok(Meta {
                    dtype: inputs[0].dtype,
                    shape: shape.clone(),
                })
            }
            TensorOp::Concatenate { axis, .. } => {
                if inputs.is_empty() {
                    return Err(TensorError::Concat {
                        reason: "no input: it needs at least one tensor, got 0".into(),
                    });
                }
                for m in &inputs[1..] {
                    if m.dtype != inputs[0].dtype {
                        return Err(TensorError::MixedDTypes {
                            op: "concatenate",
                            lhs: inputs[0].dtype,
                            rhs: m.dtype,
                        });
                    }
                }
                let shapes: Vec<&[usize]> = inputs.iter().map(|m| &m.shape[..]).collect();
                Ok(Meta {
                    dtype: inputs[0].dtype,
                    shape: concat_meta(&shapes, *axis)?,
                })
            }
            TensorOp::Pad { widths, value } => {
                let a = &inputs[0];
                value.check("pad", "value", a.dtype)?;
                if widths.len() != a.shape.len() {
                    return Err(TensorError::Slice {
                        op: "pad",
                        shape: a.shape.clone(),
                        reason: format!(
                            "{} pad widths for a rank-{} tensor",
                            widths.len(),
                            a.shape.len()
                        ),
                    });
                }
                let shape = a
                    .shape
                    .iter()
                    .zip(widths)
                    .map(|(&n, &(b, e))| n.checked_add(b)?.checked_add(e))
                    .collect::<Option<Vec<usize>>>()
                    .ok_or_else(|| TensorError::TooLarge {
                        shape: a
                            .shape
                            .iter()
                            .zip(widths)
                            .map(|(&n, &(b, e))| n.saturating_add(b).saturating_add(e))
                            .collect(),
                    })?;
                created(a.dtype, shape)
            }
            TensorOp::Triangle { .. } => {
                let a = &inputs[0];
                if a.shape.len() < 2 {
                    return Err(TensorError::NotMatrix {
                        op: self.name(),
                        shape: a.shape.clone(),
                    });
                }
                Ok(a.clone())
            }
            TensorOp::Diagonal { axes } => Ok(Meta {
                dtype: inputs[0].dtype,
                shape: diagonal_view(&inputs[0].shape, *axes)?.shape,
            }),
            TensorOp::DiagEmbed { axes } => {
                created(inputs[0].dtype, diag_embed_view(&inputs[0].shape, *axes)?.0)
            }
            TensorOp::Gather { axis } => Ok(Meta {
                dtype: inputs[0].dtype,
                shape: gather_meta(&inputs[0], &inputs[1], *axis)?,
            }),
            TensorOp::Scatter { axis, mode } => {
                scatter_meta(&inputs[0], &inputs[1], &inputs[2], *axis, *mode)?;
                Ok(inputs[0].clone())
            }
            TensorOp::DynamicSlice { sizes } => {
                let x = &inputs[0];
                check_window("dynamic_slice", &x.shape, sizes)?;
                check_starts("dynamic_slice", &x.shape, &inputs[1])?;
                Ok(Meta {
                    dtype: x.dtype,
                    shape: sizes.clone(),
                })
            }
            TensorOp::DynamicUpdateSlice => {
                let (x, update) = (&inputs[0], &inputs[1]);
                if update.dtype != x.dtype {
                    return Err(TensorError::MixedDTypes {
                        op: "dynamic_update_slice",
                        lhs: x.dtype,
                        rhs: update.dtype,
                    });
                }
                check_window("dynamic_update_slice", &x.shape, &update.shape)?;
                check_starts("dynamic_update_slice", &x.shape, &inputs[2])?;
                Ok(x.clone())
            }
            TensorOp::Compress { len } => {
                let (x, mask) = (&inputs[0], &inputs[1]);
                if mask.dtype != DType::Bool {
                    return Err(TensorError::DType {
                        expected: DType::Bool,
                        got: mask.dtype,
                    });
                }
                if mask.shape != x.shape {
                    return Err(TensorError::Slice {
                        op: "compress",
                        shape: x.shape.clone(),
                        reason: format!("a mask of shape {:?}", mask.shape),
                    });
                }
                let n = element_count(&x.shape).unwrap_or(usize::MAX);
                if *len > n {
                    return Err(TensorError::Slice {
                        op: "compress",
                        shape: x.shape.clone(),
                        reason: format!("{len} elements asked of {n}"),
                    });
                }
                Ok(Meta {
                    dtype: x.dtype,
                    shape: vec![*len],
                })
            }
            TensorOp::Dot { .. } => {
                let (a, b) = (&inputs[0], &inputs[1]);
                if a.dtype != b.dtype {
                    return Err(TensorError::MixedDTypes {
                        op: self.name(),
                        lhs: a.dtype,
                        rhs: b.dtype,
                    });
                }
                if a.shape.len() != 1 || a.shape != b.shape {
                    return Err(TensorError::MatmulShapes {
                        lhs: a.shape.clone(),
                        rhs: b.shape.clone(),
                        reason: "dot needs two vectors of one length",
                    });
                }
                Ok(Meta {
                    dtype: a.dtype,
                    shape: Vec::new(),
                })
            }
        }
    }
}

/// The first value and step of an integer `arange`, checked: both whole
/// numbers and every value `start + step·i`, `i < len`, in `dtype`'s range.
///
/// # Errors
///
/// [`TensorError::Argument`] naming the argument or the value that does
/// not fit.
pub fn integer_range(
    dtype: DType,
    start: f64,
    step: f64,
    len: usize,
) -> Result<(i64, i64), TensorError> {
    let whole = |argument: &'static str, value: f64| {
        Scalar::Real(value)
            .check("arange", argument, dtype)
            .map(|()| value as i64)
    };
    let (first, by) = (whole("start", start)?, whole("step", step)?);
    let last = i128::from(by)
        .checked_mul(len.saturating_sub(1) as i128)
        .and_then(|span| span.checked_add(i128::from(first)));
    let (lo, hi) = match dtype {
        DType::I32 => (i128::from(i32::MIN), i128::from(i32::MAX)),
        _ => (i128::from(i64::MIN), i128::from(i64::MAX)),
    };
    if len > 0 && !last.is_some_and(|last| (lo..=hi).contains(&last)) {
        return Err(TensorError::Argument {
            op: "arange",
            argument: "start + step·(len - 1)",
            value: last.map_or("beyond i128".to_owned(), |last| last.to_string()),
            must: "in the integer type's range",
        });
    }
    Ok((first, by))
}

/// The bytes of a tensor of this type and shape, if they fit in `isize`
/// (the most any allocation can hold).
pub fn byte_size(dtype: DType, shape: &[usize]) -> Option<usize> {
    element_count(shape)?
        .checked_mul(dtype.size())
        .filter(|&bytes| isize::try_from(bytes).is_ok())
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
