//! The catalog's rows of tensors: host side, shapes, element types, axes and slices, integers and bool, einsum, handles.

use super::*;
use weft::ops::{CreateOps, ElementwiseOps, LinalgOps, ReduceOps, StructuralOps};

/// The rows of tensors: host side.
pub(super) fn host(fx: &Fx) -> Vec<Row<'_>> {
    let Fx { keep0, .. } = fx;
    use Refusal as R;
    use TensorError as T;
    vec![
        row(
            "elements that do not fit the shape",
            "got 5",
            |r| {
                matches!(
                    r,
                    R::Tensor(T::ElementCount {
                        expected: 6,
                        got: 5,
                        ..
                    })
                )
            },
            move || {
                Tensor::from_vec(vec![1.0f64; 5], &[2, 3])?;
                Ok(())
            },
        ),
        row(
            "host shape too large",
            "18446744073709551615",
            |r| matches!(r, R::Tensor(T::TooLarge { .. })),
            move || {
                Tensor::from_vec(Vec::<f32>::new(), &[usize::MAX, 2])?;
                Ok(())
            },
        ),
        row(
            "elements read as the wrong dtype",
            "expected a f32 tensor, got f64",
            |r| {
                matches!(
                    r,
                    R::Tensor(T::DType {
                        expected: DType::F32,
                        got: DType::F64
                    })
                )
            },
            move || {
                keep0.as_slice::<f32>()?;
                Ok(())
            },
        ),
    ]
}

/// The rows of tensors: shapes.
pub(super) fn shapes(fx: &Fx) -> Vec<Row<'_>> {
    let Fx {
        lane,
        keep,
        vec3,
        vec2,
        ..
    } = fx;
    use Refusal as R;
    use TensorError as T;
    vec![
        row(
            "reshape to another element count",
            "[7]",
            |r| matches!(r, R::Op(OpError::Tensor(T::Reshape { .. }))),
            move || {
                lane.reshape(keep, &[7])?;
                Ok(())
            },
        ),
        row(
            "shapes that do not broadcast",
            "[2, 3] and [2]",
            |r| matches!(r, R::Op(OpError::Tensor(T::Broadcast { .. }))),
            move || {
                lane.add(keep, vec2)?;
                Ok(())
            },
        ),
        row(
            "broadcast_to fewer axes",
            "[2, 3] and []",
            |r| matches!(r, R::Op(OpError::Tensor(T::Broadcast { .. }))),
            move || {
                lane.broadcast_to(keep, &[])?;
                Ok(())
            },
        ),
        row(
            "concatenate of nothing",
            "got 0",
            |r| matches!(r, R::Op(OpError::Tensor(T::Concat { .. }))),
            move || {
                lane.concatenate(&[], 0)?;
                Ok(())
            },
        ),
        row(
            "permutation of the wrong length",
            "[] is not a permutation",
            |r| matches!(r, R::Op(OpError::Tensor(T::Permutation { rank: 2, .. }))),
            move || {
                lane.permute(keep, &[])?;
                Ok(())
            },
        ),
        row(
            "dot of vectors of different lengths",
            "[3] and [2]",
            |r| matches!(r, R::Op(OpError::Tensor(T::MatmulShapes { .. }))),
            move || {
                lane.dot(vec3, vec2)?;
                Ok(())
            },
        ),
        row(
            "factorization of a vector",
            "[3]",
            |r| matches!(r, R::Op(OpError::Tensor(T::NotMatrix { op: "svd", .. }))),
            move || {
                lane.svd(vec3)?;
                Ok(())
            },
        ),
        row(
            "cholesky of a non-square matrix",
            "[2, 3]",
            |r| {
                matches!(
                    r,
                    R::Op(OpError::Tensor(T::NotSquare { op: "cholesky", .. }))
                )
            },
            move || {
                lane.cholesky(keep)?;
                Ok(())
            },
        ),
        row(
            "op given the wrong number of inputs",
            "got 1",
            |r| {
                matches!(
                    r,
                    R::Op(OpError::Tensor(T::Arity {
                        op: "matmul",
                        expected: 2,
                        got: 1
                    }))
                )
            },
            move || {
                lane.apply(TensorOp::Matmul, &[keep])?;
                Ok(())
            },
        ),
        row(
            "output whose bytes overflow",
            "4611686018427387904",
            |r| matches!(r, R::Op(OpError::Tensor(T::TooLarge { .. }))),
            move || {
                lane.zeros(DType::F64, &[1 << 62])?;
                Ok(())
            },
        ),
        row(
            "output the allocator cannot provide",
            "[1099511627778, 3]",
            |r| matches!(r, R::Ticket(TicketError::DependencyFailed(f)) if f.op == "pad"),
            move || {
                // Refused on the actor, as a typed error, instead of aborting.
                let padded = lane.pad(keep, &[(1 << 40, 0), (0, 0)], Scalar::Real(0.0))?;
                wait(lane.download(&padded)?)?;
                Ok(())
            },
        ),
    ]
}

/// The rows of tensors: dtypes.
pub(super) fn dtypes(fx: &Fx) -> Vec<Row<'_>> {
    let Fx {
        lane,
        keep,
        f32s,
        zs,
        ..
    } = fx;
    use Refusal as R;
    use TensorError as T;
    vec![
        row(
            "real and complex operands",
            "f64 and c64",
            |r| {
                matches!(
                    r,
                    R::Op(OpError::Tensor(T::MixedDTypes {
                        lhs: DType::F64,
                        rhs: DType::C64,
                        ..
                    }))
                )
            },
            move || {
                lane.add(keep, zs)?;
                Ok(())
            },
        ),
        row(
            "solve with a right-hand side of another dtype",
            "f32",
            |r| {
                matches!(
                    r,
                    R::Op(OpError::Tensor(T::MixedDTypes { op: "solve", .. }))
                )
            },
            move || {
                let a = lane.eye(DType::F64, 2, 2)?;
                let b = lane.ones(DType::F32, &[2, 1])?;
                lane.solve(&a, &b)?;
                Ok(())
            },
        ),
        row(
            "complex fill of a real tensor",
            "0+1i",
            |r| {
                matches!(
                    r,
                    R::Op(OpError::Tensor(T::Argument {
                        op: "full",
                        argument: "value",
                        ..
                    }))
                )
            },
            move || {
                lane.full(DType::F32, &[2], Scalar::Complex(c64::new(0.0, 1.0)))?;
                Ok(())
            },
        ),
        row(
            "complex mask for select",
            "c64",
            |r| {
                matches!(
                    r,
                    R::Op(OpError::Tensor(T::DType {
                        got: DType::C64,
                        ..
                    }))
                )
            },
            move || {
                lane.select(zs, keep, keep)?;
                Ok(())
            },
        ),
        row(
            "cast then mixed",
            "f32 and f64",
            |r| matches!(r, R::Op(OpError::Tensor(T::MixedDTypes { .. }))),
            move || {
                let c = lane.cast(keep, DType::F32)?;
                lane.matmul(&c, &lane.transpose(keep)?)?;
                Ok(())
            },
        ),
        row(
            "concatenate of two dtypes",
            "f64 and f32",
            |r| {
                matches!(
                    r,
                    R::Op(OpError::Tensor(T::MixedDTypes {
                        op: "concatenate",
                        ..
                    }))
                )
            },
            move || {
                lane.concatenate(&[keep, f32s], 0)?;
                Ok(())
            },
        ),
    ]
}

/// The rows of tensors: axes and slices.
pub(super) fn axes(fx: &Fx) -> Vec<Row<'_>> {
    let Fx {
        lane, keep, f32s, ..
    } = fx;
    use Refusal as R;
    use TensorError as T;
    vec![
        row(
            "reverse along a missing axis",
            "axis 5",
            |r| {
                matches!(
                    r,
                    R::Op(OpError::Tensor(T::Axis {
                        axis: 5,
                        rank: 2,
                        ..
                    }))
                )
            },
            move || {
                lane.reverse(keep, &[5])?;
                Ok(())
            },
        ),
        row(
            "concatenate along a missing axis",
            "axis 2",
            |r| matches!(r, R::Op(OpError::Tensor(T::Axis { axis: 2, .. }))),
            move || {
                lane.concatenate(&[keep, keep], 2)?;
                Ok(())
            },
        ),
        row(
            "reduction over a missing axis",
            "axis 3",
            |r| matches!(r, R::Op(OpError::Tensor(T::Axis { axis: 3, .. }))),
            move || {
                lane.reduce(ReduceOp::Max, keep, &[3], true)?;
                Ok(())
            },
        ),
        row(
            "dot_general over a missing axis",
            "axis 4",
            |r| {
                matches!(
                    r,
                    R::Op(OpError::Tensor(T::Axis {
                        op: "dot_general",
                        axis: 4,
                        ..
                    }))
                )
            },
            move || {
                lane.dot_general(keep, keep, &[(4, 0)], &[])?;
                Ok(())
            },
        ),
        row(
            "diagonal of one axis twice",
            "axis 1",
            |r| {
                matches!(
                    r,
                    R::Op(OpError::Tensor(T::Axis {
                        op: "diagonal",
                        axis: 1,
                        ..
                    }))
                )
            },
            move || {
                lane.diagonal_axes(keep, 1, 1)?;
                Ok(())
            },
        ),
        row(
            "clamp_between with bounds of another type",
            "f32",
            |r| {
                matches!(
                    r,
                    R::Op(OpError::Tensor(T::MixedDTypes {
                        op: "clamp_between",
                        ..
                    }))
                )
            },
            move || {
                lane.clamp_between(keep, f32s, keep)?;
                Ok(())
            },
        ),
        row(
            "writing into a tensor of another shape",
            "shape [3]",
            |r| matches!(r, R::Op(OpError::Tensor(T::Into { op: "add", .. }))),
            move || {
                let out = lane.zeros(DType::F64, &[3])?;
                lane.apply_into(
                    TensorOp::Binary(weft::ops::BinaryOp::Add),
                    &[keep, keep],
                    out,
                )?;
                Ok(())
            },
        ),
        row(
            "slice starting past the extent",
            "start 3",
            |r| matches!(r, R::Op(OpError::Tensor(T::Slice { op: "slice", .. }))),
            move || {
                lane.slice(
                    keep,
                    &[
                        SliceAxis {
                            start: 3,
                            stop: 4,
                            step: 1,
                        },
                        SliceAxis::ALL,
                    ],
                )?;
                Ok(())
            },
        ),
        row(
            "slice with ranges for another rank",
            "1 axis ranges for a rank-2",
            |r| matches!(r, R::Op(OpError::Tensor(T::Slice { .. }))),
            move || {
                lane.slice(keep, &[SliceAxis::ALL])?;
                Ok(())
            },
        ),
        row(
            "pad widths for another rank",
            "3 pad widths",
            |r| matches!(r, R::Op(OpError::Tensor(T::Slice { op: "pad", .. }))),
            move || {
                lane.pad(keep, &[(0, 0); 3], Scalar::Real(0.0))?;
                Ok(())
            },
        ),
    ]
}

/// The rows of tensors: integers and bool.
pub(super) fn integers(fx: &Fx) -> Vec<Row<'_>> {
    let Fx { lane, keep, .. } = fx;
    use Refusal as R;
    use TensorError as T;
    vec![
        row(
            "an integer fill that is not whole",
            "1.5, which must be a whole number in i32's range",
            |r| matches!(r, R::Op(OpError::Tensor(T::Argument { .. }))),
            move || {
                lane.full(DType::I32, &[2], Scalar::Real(1.5))?;
                Ok(())
            },
        ),
        row(
            "a bool fill of 2",
            "2, which must be true, false, 0 or 1",
            |r| matches!(r, R::Op(OpError::Tensor(T::Argument { .. }))),
            move || {
                lane.full(DType::Bool, &[2], Scalar::Int(2))?;
                Ok(())
            },
        ),
        row(
            "an integer range past i32",
            "2147483650",
            |r| matches!(r, R::Op(OpError::Tensor(T::Argument { .. }))),
            move || {
                lane.arange(DType::I32, 2147483640.0, 5.0, 3)?;
                Ok(())
            },
        ),
        row(
            "integer division by zero",
            "element [1] of the divisor [2] is 0",
            |r| matches!(r, R::Ticket(TicketError::DependencyFailed(f)) if f.op == "floor_div"),
            move || {
                // Refused on the actor, before any element is computed.
                let a = lane.upload(Tensor::from_vec(vec![4i64, 5], &[2])?)?;
                let b = lane.upload(Tensor::from_vec(vec![2i64, 0], &[2])?)?;
                wait(lane.download(&lane.floor_div(&a, &b)?)?)?;
                Ok(())
            },
        ),
        row(
            "a negative integer exponent",
            "exponent is -2",
            |r| matches!(r, R::Ticket(TicketError::DependencyFailed(f)) if f.op == "pow"),
            move || {
                let a = lane.upload(Tensor::from_vec(vec![4i32, 5], &[2])?)?;
                let e = lane.upload(Tensor::from_vec(vec![1i32, -2], &[2])?)?;
                wait(lane.download(&lane.pow(&a, &e)?)?)?;
                Ok(())
            },
        ),
        row(
            "div of integers",
            "div is not defined for i64 tensors",
            |r| matches!(r, R::Op(OpError::Tensor(T::Unsupported { op: "div", .. }))),
            move || {
                let a = lane.upload(Tensor::from_vec(vec![4i64, 5], &[2])?)?;
                lane.div(&a, &a)?;
                Ok(())
            },
        ),
        row(
            "a select mask of floats",
            "expected a bool tensor, got f64",
            |r| {
                matches!(
                    r,
                    R::Op(OpError::Tensor(T::DType {
                        expected: DType::Bool,
                        ..
                    }))
                )
            },
            move || {
                lane.select(keep, keep, keep)?;
                Ok(())
            },
        ),
        row(
            "logical and of floats",
            "and is not defined for f64 tensors",
            |r| matches!(r, R::Op(OpError::Tensor(T::Unsupported { op: "and", .. }))),
            move || {
                lane.and(keep, keep)?;
                Ok(())
            },
        ),
        row(
            "argmax along an axis out of range",
            "axis 2 of a rank-2 tensor",
            |r| matches!(r, R::Op(OpError::Tensor(T::Axis { axis: 2, .. }))),
            move || {
                lane.argmax(keep, 2)?;
                Ok(())
            },
        ),
        row(
            "random integers of an empty interval",
            "3..3",
            |r| matches!(r, R::Op(OpError::Tensor(T::Argument { .. }))),
            move || {
                lane.random(
                    DType::I64,
                    &[2],
                    weft::ops::Distribution::Integers { low: 3, high: 3 },
                    1,
                )?;
                Ok(())
            },
        ),
    ]
}

/// The rows of tensors: einsum.
pub(super) fn einsum(fx: &Fx) -> Vec<Row<'_>> {
    let Fx { lane, keep, .. } = fx;
    use Refusal as R;
    use TensorError as T;
    vec![
        row(
            "einsum with broadcast axes and no ellipsis in the output",
            "1 axes under `...` but the output has no `...`",
            |r| matches!(r, R::Op(OpError::Tensor(T::Einsum { .. }))),
            move || {
                lane.einsum("...i->i", &[keep])?;
                Ok(())
            },
        ),
        row(
            "einsum output label twice",
            "`i` appears twice",
            |r| matches!(r, R::Op(OpError::Tensor(T::Einsum { .. }))),
            move || {
                lane.einsum("ij->ii", &[keep])?;
                Ok(())
            },
        ),
        row(
            "einsum subscripts for another rank",
            "2 axes",
            |r| matches!(r, R::Op(OpError::Tensor(T::Einsum { .. }))),
            move || {
                lane.einsum("ijk->i", &[keep])?;
                Ok(())
            },
        ),
        row(
            "einsum without operands",
            "got 0",
            |r| matches!(r, R::Op(OpError::Tensor(T::Arity { op: "einsum", .. }))),
            move || {
                lane.einsum("->", &[])?;
                Ok(())
            },
        ),
    ]
}

/// The rows of tensors: handles.
pub(super) fn handles(fx: &Fx) -> Vec<Row<'_>> {
    let Fx {
        lane,
        lane1,
        keep,
        keep_c,
        foreign,
        stale_runtime,
        stale,
        ..
    } = fx;
    use Refusal as R;
    vec![
        row(
            "stale handle: tensor gone from the store",
            "not resident",
            |r| matches!(r, R::Ticket(TicketError::Op(OpError::NotResident(_)))),
            move || {
                let doomed = lane.upload(matrix(1, 2))?;
                let id = doomed.id();
                assert!(wait_ok(
                    lane.run(move |e| e.store_mut().remove(id).is_some())
                        .unwrap()
                ));
                wait(lane.download(&doomed)?)?;
                Ok(())
            },
        ),
        row(
            "stale handle: its runtime was dropped",
            stale_runtime.clone(),
            |r| matches!(r, R::Op(OpError::ForeignHandle { op: "add", .. })),
            move || {
                lane.add(stale, keep)?;
                Ok(())
            },
        ),
        row(
            "foreign handle: another live runtime",
            "with",
            |r| matches!(r, R::Op(OpError::ForeignHandle { op: "with", .. })),
            move || {
                drop(lane.with(&[foreign], |_, _| ())?);
                Ok(())
            },
        ),
        row(
            "wrong-domain handle in an op",
            "lives in CPU domain 1",
            |r| {
                matches!(
                    r,
                    R::Op(OpError::WrongDomain {
                        handle: weft::Place::Cpu(1),
                        lane: weft::Place::Cpu(0),
                        ..
                    })
                )
            },
            move || {
                lane.add(keep_c, keep_c)?;
                Ok(())
            },
        ),
        row(
            "wrong-domain handle to download",
            "download",
            |r| matches!(r, R::Op(OpError::WrongDomain { op: "download", .. })),
            move || {
                drop(lane1.download(keep)?);
                Ok(())
            },
        ),
        row(
            "wrong-domain handle to transfer",
            "transfer",
            |r| matches!(r, R::Op(OpError::WrongDomain { op: "transfer", .. })),
            move || {
                lane1.transfer(keep, 0)?;
                Ok(())
            },
        ),
        row(
            "transfer to no such domain",
            "no CPU domain 4",
            |r| {
                matches!(
                    r,
                    R::Op(OpError::NoSuchDomain {
                        domain: 4,
                        count: 2
                    })
                )
            },
            move || {
                lane.transfer(keep, 4)?;
                Ok(())
            },
        ),
        row(
            "singular system",
            "singular",
            |r| matches!(r, R::Ticket(TicketError::DependencyFailed(f)) if f.op == "solve"),
            move || {
                let a = lane.zeros(DType::F64, &[2, 2])?;
                let x = lane.solve(&a, &a)?;
                wait(lane.download(&x)?)?;
                Ok(())
            },
        ),
    ]
}
