//! The reduction vocabulary: which reductions there are and the type and
//! shape of their results.

use crate::tensor::{DType, TensorError};

/// A reduction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// Sum.
    Sum,
    /// Product.
    Prod,
    /// Largest element (real types; undefined on empty input).
    Max,
    /// Smallest element (real types; undefined on empty input).
    Min,
    /// Arithmetic mean (NaN on empty input).
    Mean,
    /// Euclidean norm, `sqrt(sum |x|^2)`; real for complex input.
    Norm,
}

impl ReduceOp {
    /// Every reduction, for tests and tables.
    pub const ALL: [ReduceOp; 6] = [
        ReduceOp::Sum,
        ReduceOp::Prod,
        ReduceOp::Max,
        ReduceOp::Min,
        ReduceOp::Mean,
        ReduceOp::Norm,
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
        }
    }
}

/// Checks a reduction of a `dtype` tensor of `shape` over `axes`; returns
/// the result's type and shape.
///
/// # Errors
///
/// [`TensorError::Axis`] for an axis out of range or given twice;
/// [`TensorError::Unsupported`] for max/min of complex tensors;
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
    if matches!(op, ReduceOp::Max | ReduceOp::Min) {
        if dtype.is_complex() {
            return Err(TensorError::Unsupported {
                op: op.name(),
                dtype,
            });
        }
        if axes.iter().any(|&a| shape[a] == 0) {
            return Err(TensorError::EmptyReduction {
                op: op.name(),
                shape: shape.to_vec(),
            });
        }
    }
    let out_dtype = match (op, dtype) {
        (ReduceOp::Norm, DType::C32) => DType::F32,
        (ReduceOp::Norm, DType::C64) => DType::F64,
        (_, d) => d,
    };
    let out_shape = (0..rank)
        .filter_map(|i| match (seen[i], keep_dims) {
            (false, _) => Some(shape[i]),
            (true, true) => Some(1),
            (true, false) => None,
        })
        .collect();
    Ok((out_dtype, out_shape))
}
