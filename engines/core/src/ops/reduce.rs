//! The reduction vocabulary: which reductions there are and the type and
//! shape of their results.

use crate::tensor::{DType, TensorError};

/// A reduction. Of integers and `bool`, `sum` and `prod` are `i64`
/// (wrapping, as NumPy's) and `mean` is `f64`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// Sum.
    Sum,
    /// Product.
    Prod,
    /// Largest element (types that are not complex; undefined on empty
    /// input; NaN if any element is).
    Max,
    /// Smallest element (as `Max`).
    Min,
    /// Arithmetic mean (NaN on empty input).
    Mean,
    /// Euclidean norm, `sqrt(sum |x|^2)`; real for complex input (floats
    /// and complexes).
    Norm,
    /// Whether any element is nonzero (`true`), as a `bool`; `false` on
    /// empty input.
    Any,
    /// Whether every element is nonzero (`true`), as a `bool`; `true` on
    /// empty input.
    All,
}

impl ReduceOp {
    /// Every reduction, for tests and tables.
    pub const ALL: [ReduceOp; 8] = [
        ReduceOp::Sum,
        ReduceOp::Prod,
        ReduceOp::Max,
        ReduceOp::Min,
        ReduceOp::Mean,
        ReduceOp::Norm,
        ReduceOp::Any,
        ReduceOp::All,
    ];

    /// The op's name in errors and traces.
    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Prod => "prod",
            ReduceOp::Max => "max",
            ReduceOp::Min => "min",
            ReduceOp::Mean => "mean",
            ReduceOp::Norm => "norm",
            ReduceOp::Any => "any",
            ReduceOp::All => "all",
        }
    }

    /// The element type of the reduction of a `dtype` tensor, if defined.
    pub fn output_dtype(self, dtype: DType) -> Option<DType> {
        let exact = dtype.is_integer() || dtype == DType::Bool;
        match self {
            ReduceOp::Any | ReduceOp::All => Some(DType::Bool),
            ReduceOp::Sum | ReduceOp::Prod if exact => Some(DType::I64),
            ReduceOp::Mean if exact => Some(DType::F64),
            ReduceOp::Sum | ReduceOp::Prod | ReduceOp::Mean => Some(dtype),
            ReduceOp::Max | ReduceOp::Min => (!dtype.is_complex()).then_some(dtype),
            ReduceOp::Norm => dtype.is_field().then(|| dtype.real()),
        }
    }
}

/// A reduction to the position of an extremum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ArgOp {
    /// The index of the largest element.
    Max,
    /// The index of the smallest element.
    Min,
}

impl ArgOp {
    /// The op's name in errors and traces.
    pub fn name(self) -> &'static str {
        match self {
            ArgOp::Max => "argmax",
            ArgOp::Min => "argmin",
        }
    }
}

/// Checks an `argmax`/`argmin` of a `dtype` tensor of `shape` along
/// `axis`; returns the shape of its `i64` result (the axis removed, or
/// kept as extent 1).
///
/// # Errors
///
/// [`TensorError::Axis`] for an axis out of range;
/// [`TensorError::Unsupported`] for complex tensors;
/// [`TensorError::EmptyReduction`] along an axis of extent 0.
pub fn arg_meta(
    op: ArgOp,
    dtype: DType,
    shape: &[usize],
    axis: usize,
    keep_dims: bool,
) -> Result<Vec<usize>, TensorError> {
    if axis >= shape.len() {
        return Err(TensorError::Axis {
            op: op.name(),
            axis,
            rank: shape.len(),
            reason: "out of range",
        });
    }
    if dtype.is_complex() {
        return Err(TensorError::Unsupported {
            op: op.name(),
            dtype,
        });
    }
    if shape[axis] == 0 {
        return Err(TensorError::EmptyReduction {
            op: op.name(),
            shape: shape.to_vec(),
        });
    }
    let mut out = shape.to_vec();
    if keep_dims {
        out[axis] = 1;
    } else {
        out.remove(axis);
    }
    Ok(out)
}

/// Checks a reduction of a `dtype` tensor of `shape` over `axes`; returns
/// the result's type and shape.
///
/// # Errors
///
/// [`TensorError::Axis`] for an axis out of range or given twice;
/// [`TensorError::Unsupported`] where [`ReduceOp::output_dtype`] has no
/// type;
/// [`TensorError::EmptyReduction`] for max/min over no elements.
pub fn reduce_meta(
    op: ReduceOp,
    dtype: DType,
    shape: &[usize],
    axes: &[usize],
    keep_dims: bool,
) -> Result<(DType, Vec<usize>), TensorError> {
    let rank = shape.len();
    let mut seen = vec![false; rank];
    for &axis in axes {
        if axis >= rank {
            return Err(TensorError::Axis {
                op: op.name(),
                axis,
                rank,
                reason: "out of range",
            });
        }
        if std::mem::replace(&mut seen[axis], true) {
            return Err(TensorError::Axis {
                op: op.name(),
                axis,
                rank,
                reason: "given twice",
            });
        }
    }
    let out_dtype = op.output_dtype(dtype).ok_or(TensorError::Unsupported {
        op: op.name(),
        dtype,
    })?;
    if matches!(op, ReduceOp::Max | ReduceOp::Min) && axes.iter().any(|&a| shape[a] == 0) {
        return Err(TensorError::EmptyReduction {
            op: op.name(),
            shape: shape.to_vec(),
        });
    }
    let out_shape = (0..rank)
        .filter_map(|i| match (seen[i], keep_dims) {
            (false, _) => Some(shape[i]),
            (true, true) => Some(1),
            (true, false) => None,
        })
        .collect();
    Ok((out_dtype, out_shape))
}
