//! One instance of every op of the vocabulary, with inputs it accepts: the
//! rows of the coverage table (op × backend × element type) and a quick
//! way to run the whole vocabulary on an engine.

use super::{
    ArgOp, BinaryOp, CmpOp, Distribution, EinsumSpec, Linalg, MatOp, Meta, ReduceOp, Scalar,
    ScatterMode, SliceAxis, TensorOp, UnaryOp,
};
use crate::tensor::DType;

/// Every op, for element type `dtype` where the op names one, with the
/// types and shapes of inputs it accepts (inputs of `dtype`; a select's
/// mask `bool`), and scalar arguments of `dtype`'s kind (whole for the
/// integers). [`TensorOp::infer`] may still refuse the element type
/// (maximum of complex tensors): that is the vocabulary's answer, not a
/// backend's.
pub fn samples(dtype: DType) -> Vec<(TensorOp, Vec<Meta>)> {
    let (value, step, distribution) = match dtype {
        DType::I32 | DType::I64 => (
            Scalar::Int(3),
            2.0,
            Distribution::Integers { low: -5, high: 5 },
        ),
        DType::Bool => (Scalar::Bool(true), 1.0, Distribution::Bits),
        _ => (Scalar::Real(1.5), 0.5, Distribution::Normal),
    };
    let mut ops: Vec<TensorOp> = Vec::new();
    ops.extend(BinaryOp::ALL.map(TensorOp::Binary));
    ops.extend(UnaryOp::ALL.map(TensorOp::Unary));
    ops.push(TensorOp::Matmul);
    ops.push(TensorOp::Gemm {
        alpha: Scalar::Real(2.0),
        beta: Scalar::Real(-1.0),
        a: MatOp::H,
        b: MatOp::NONE,
    });
    ops.push(TensorOp::Axpby {
        alpha: Scalar::Real(2.0),
        beta: Scalar::Real(0.5),
    });
    ops.extend(Linalg::ALL.map(TensorOp::Linalg));
    ops.push(TensorOp::Einsum(
        EinsumSpec::parse("ij,jk->ik").expect("a valid specification"),
    ));
    ops.extend(ReduceOp::ALL.map(|op| TensorOp::Reduce {
        op,
        axes: vec![1],
        keep_dims: false,
    }));
    ops.extend([ArgOp::Max, ArgOp::Min].map(|op| TensorOp::ArgReduce {
        op,
        axis: 1,
        keep_dims: false,
    }));
    ops.extend([
        TensorOp::Reshape(vec![3, 2]),
        TensorOp::Permute(vec![1, 0]),
        TensorOp::Full {
            dtype,
            shape: vec![2, 3],
            value,
        },
        TensorOp::Eye {
            dtype,
            rows: 2,
            cols: 3,
        },
        TensorOp::Arange {
            dtype,
            start: 1.0,
            step,
            len: 4,
        },
        TensorOp::Random {
            dtype,
            shape: vec![2, 3],
            distribution,
            seed: 7,
        },
    ]);
    ops.extend(CmpOp::ALL.map(TensorOp::Compare));
    ops.extend([
        TensorOp::Select,
        TensorOp::Clamp { lo: -0.5, hi: 0.5 },
        TensorOp::ClampBetween,
        TensorOp::BinaryScalar {
            op: BinaryOp::Mul,
            value: Scalar::Real(2.0),
            scalar_first: true,
        },
        TensorOp::Cast(DType::C64),
        TensorOp::Slice(vec![
            SliceAxis {
                start: 1,
                stop: 2,
                step: 1,
            },
            SliceAxis {
                start: 0,
                stop: 3,
                step: 2,
            },
        ]),
        TensorOp::Reverse(vec![1]),
        TensorOp::BroadcastTo(vec![4, 2, 3]),
        TensorOp::BroadcastInDim {
            shape: vec![3, 4, 2],
            dims: vec![2, 0],
        },
        TensorOp::Concatenate { axis: 0, inputs: 2 },
        TensorOp::Pad {
            widths: vec![(1, 0), (0, 2)],
            value: Scalar::Real(0.0),
        },
        TensorOp::Diagonal { axes: [0, 1] },
        TensorOp::DiagEmbed { axes: [1, 2] },
        TensorOp::Triangle { k: 0, upper: true },
        TensorOp::Dot { conjugate: false },
        TensorOp::Dot { conjugate: true },
        TensorOp::Gather { axis: 1 },
        TensorOp::Scatter {
            axis: 1,
            mode: ScatterMode::Set,
        },
        TensorOp::Scatter {
            axis: 1,
            mode: ScatterMode::Add,
        },
        TensorOp::DynamicSlice { sizes: vec![1, 2] },
        TensorOp::DynamicUpdateSlice,
        TensorOp::Compress { len: 6 },
    ]);
    ops.into_iter()
        .map(|op| {
            let inputs = inputs(&op, dtype);
            (op, inputs)
        })
        .collect()
}

/// Inputs `op` accepts: every op has an arm here, so a new op does not
/// compile until it has a sample.
fn inputs(op: &TensorOp, dtype: DType) -> Vec<Meta> {
    let meta = |shape: &[usize]| Meta {
        dtype,
        shape: shape.to_vec(),
    };
    let index = |shape: &[usize]| Meta {
        dtype: DType::I64,
        shape: shape.to_vec(),
    };
    let matrix = meta(&[2, 3]);
    match op {
        TensorOp::Full { .. }
        | TensorOp::Eye { .. }
        | TensorOp::Arange { .. }
        | TensorOp::Random { .. } => Vec::new(),
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
        | TensorOp::Triangle { .. } => vec![matrix],
        TensorOp::Binary(_) | TensorOp::Compare(_) | TensorOp::Axpby { .. } => {
            vec![matrix.clone(), matrix]
        }
        // Bounds per column and one for all.
        TensorOp::ClampBetween => vec![matrix, meta(&[3]), meta(&[])],
        // aᴴ [3, 2] @ b [2, 3] + c [3, 3].
        TensorOp::Gemm { .. } => vec![matrix.clone(), matrix, meta(&[3, 3])],
        TensorOp::Concatenate { inputs, .. } => vec![matrix; *inputs],
        // Not among the samples (its body is an engine's), but it has an
        // arm: its inputs are of one type.
        TensorOp::Kernel(k) => vec![matrix; k.inputs],
        TensorOp::Select => vec![
            Meta {
                dtype: DType::Bool,
                shape: vec![2, 3],
            },
            matrix.clone(),
            matrix,
        ],
        TensorOp::Matmul | TensorOp::Einsum(_) => vec![matrix, meta(&[3, 2])],
        TensorOp::Linalg(Linalg::Solve) => vec![meta(&[3, 3]), meta(&[3])],
        TensorOp::Linalg(_) => vec![meta(&[3, 3])],
        TensorOp::Dot { .. } => vec![meta(&[4]), meta(&[4])],
        // Indices and starts are i64, whatever the data's type.
        TensorOp::Gather { .. } => vec![matrix, index(&[2])],
        TensorOp::Scatter { .. } => vec![matrix, index(&[2]), meta(&[2, 2])],
        TensorOp::DynamicSlice { .. } => vec![matrix, index(&[2])],
        TensorOp::DynamicUpdateSlice => vec![matrix, meta(&[1, 2]), index(&[2])],
        TensorOp::Compress { .. } => vec![
            matrix,
            Meta {
                dtype: DType::Bool,
                shape: vec![2, 3],
            },
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_sample_names_a_distinct_op_with_inputs_of_its_arity() {
        for dtype in DType::ALL {
            let all = samples(dtype);
            let mut seen = std::collections::HashSet::new();
            for (op, inputs) in &all {
                assert_eq!(inputs.len(), op.arity(), "{}", op.name());
                assert!(seen.insert(format!("{op:?}")), "{op:?} twice");
            }
        }
    }
}
