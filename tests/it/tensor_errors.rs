//! The catalog of bad tensor input: every case is refused at the call site
//! with the right error kind and a message naming the bad value, and the
//! resident tensors are untouched afterwards.

use weft::ops::{CreateOps, ElementwiseOps, LinalgOps, ReduceOps, StructuralOps};
use weft::{
    c64,
    error::TensorError,
    ops::{BinaryOp, CmpOp, Linalg, ReduceOp, SliceAxis, TensorOp},
    DType, OpError, Runtime, Scalar, Tensor,
};
use weft_tests::wait_ok;

type Case<'a> = (
    &'static str,
    Box<dyn Fn() -> Result<weft::TensorHandle, OpError> + 'a>,
    fn(&OpError) -> bool,
    &'static str,
);

#[test]
fn bad_input_catalog() {
    let rt = Runtime::builder().split(1).build().expect("runtime");
    let other = Runtime::builder().split(1).build().expect("runtime");
    let lane = rt.lane(0).expect("lane");
    let a0 = Tensor::from_vec((0..6).map(f64::from).collect::<Vec<_>>(), &[2, 3]).unwrap();
    let a = lane.upload(a0.clone()).unwrap();
    let b = lane
        .upload(Tensor::from_vec(vec![1.0f64; 12], &[3, 4]).unwrap())
        .unwrap();
    let f = lane
        .upload(Tensor::from_vec(vec![1.0f32; 6], &[2, 3]).unwrap())
        .unwrap();
    let z = lane
        .upload(Tensor::from_vec(vec![c64::new(1.0, 1.0); 2], &[2]).unwrap())
        .unwrap();
    let v = lane
        .upload(Tensor::from_vec(vec![1.0f64; 3], &[3]).unwrap())
        .unwrap();
    let foreign = other.lane(0).unwrap().upload(a0.clone()).unwrap();
    let (resident, bytes) = wait_ok(lane.resident().unwrap());

    use TensorError as T;
    let cases: Vec<Case> = vec![
        (
            "broadcast mismatch",
            Box::new(|| lane.add(&a, &b)),
            |e| matches!(e, OpError::Tensor(T::Broadcast { .. })),
            "[2, 3] and [3, 4]",
        ),
        (
            "mixed dtypes",
            Box::new(|| lane.mul(&a, &f)),
            |e| matches!(e, OpError::Tensor(T::MixedDTypes { .. })),
            "f64 and f32",
        ),
        (
            "matmul inner extents",
            Box::new(|| lane.matmul(&a, &a)),
            |e| matches!(e, OpError::Tensor(T::MatmulShapes { .. })),
            "[2, 3] and [2, 3]",
        ),
        (
            "matmul of a vector",
            Box::new(|| lane.matmul(&v, &b)),
            |e| matches!(e, OpError::Tensor(T::MatmulShapes { .. })),
            "at least 2 axes",
        ),
        (
            "maximum of complex",
            Box::new(|| lane.binary(BinaryOp::Maximum, &z, &z)),
            |e| matches!(e, OpError::Tensor(T::Unsupported { .. })),
            "c64",
        ),
        (
            "ordering complex",
            Box::new(|| lane.compare(CmpOp::Lt, &z, &z)),
            |e| matches!(e, OpError::Tensor(T::Unsupported { .. })),
            "lt",
        ),
        (
            "clamp complex",
            Box::new(|| lane.clamp(&z, 0.0, 1.0)),
            |e| matches!(e, OpError::Tensor(T::Unsupported { .. })),
            "clamp",
        ),
        (
            "complex scalar for a real tensor",
            Box::new(|| lane.binary_scalar(BinaryOp::Add, &a, Scalar::Complex(c64::new(0.0, 1.0)))),
            |e| {
                matches!(
                    e,
                    OpError::Tensor(T::Argument {
                        op: "add",
                        argument: "scalar",
                        ..
                    })
                )
            },
            "scalar is 0+1i, which must be real",
        ),
        (
            "reduce axis out of range",
            Box::new(|| lane.reduce(ReduceOp::Sum, &a, &[2], false)),
            |e| matches!(e, OpError::Tensor(T::Axis { axis: 2, .. })),
            "axis 2",
        ),
        (
            "reduce axis twice",
            Box::new(|| lane.reduce(ReduceOp::Sum, &a, &[1, 1], false)),
            |e| matches!(e, OpError::Tensor(T::Axis { .. })),
            "twice",
        ),
        (
            "max over nothing",
            Box::new(|| {
                let e = lane.zeros(DType::F64, &[0, 2])?;
                lane.reduce(ReduceOp::Max, &e, &[0], false)
            }),
            |e| matches!(e, OpError::Tensor(T::EmptyReduction { .. })),
            "no elements",
        ),
        (
            "reshape count",
            Box::new(|| lane.reshape(&a, &[4, 2])),
            |e| matches!(e, OpError::Tensor(T::Reshape { .. })),
            "[4, 2]",
        ),
        (
            "bad permutation",
            Box::new(|| lane.permute(&a, &[0, 0])),
            |e| matches!(e, OpError::Tensor(T::Permutation { .. })),
            "[0, 0]",
        ),
        (
            "transpose of a vector",
            Box::new(|| lane.transpose(&v)),
            |e| matches!(e, OpError::Tensor(T::Permutation { .. })),
            "1 axes",
        ),
        (
            "slice step zero",
            Box::new(|| {
                lane.slice(
                    &v,
                    &[SliceAxis {
                        start: 0,
                        stop: 3,
                        step: 0,
                    }],
                )
            }),
            |e| matches!(e, OpError::Tensor(T::Slice { .. })),
            "step 0",
        ),
        (
            "slice start past end",
            Box::new(|| {
                lane.slice(
                    &v,
                    &[SliceAxis {
                        start: 4,
                        stop: 5,
                        step: 1,
                    }],
                )
            }),
            |e| matches!(e, OpError::Tensor(T::Slice { .. })),
            "start 4",
        ),
        (
            "slice rank",
            Box::new(|| lane.slice(&a, &[SliceAxis::ALL])),
            |e| matches!(e, OpError::Tensor(T::Slice { .. })),
            "rank-2",
        ),
        (
            "concatenate shapes",
            Box::new(|| lane.concatenate(&[&a, &b], 0)),
            |e| matches!(e, OpError::Tensor(T::Concat { .. })),
            "[3, 4]",
        ),
        (
            "pad rank",
            Box::new(|| lane.pad(&a, &[(1, 1)], Scalar::Real(0.0))),
            |e| matches!(e, OpError::Tensor(T::Slice { .. })),
            "pad",
        ),
        (
            "broadcast_to smaller",
            Box::new(|| lane.broadcast_to(&a, &[3])),
            |e| matches!(e, OpError::Tensor(T::Broadcast { .. })),
            "broadcast_to",
        ),
        (
            "diagonal of a vector",
            Box::new(|| lane.diagonal(&v)),
            |e| matches!(e, OpError::Tensor(T::NotMatrix { .. })),
            "[3]",
        ),
        (
            "eigh of non-square",
            Box::new(|| lane.eigh(&a).map(|(w, _)| w)),
            |e| matches!(e, OpError::Tensor(T::NotSquare { .. })),
            "[2, 3]",
        ),
        (
            "solve rows",
            Box::new(|| {
                let s = lane.eye(DType::F64, 2, 2)?;
                lane.solve(&s, &v)
            }),
            |e| matches!(e, OpError::Tensor(T::MatmulShapes { .. })),
            "solve",
        ),
        (
            "dot of different lengths",
            Box::new(|| lane.dot(&v, &z)),
            |e| matches!(e, OpError::Tensor(T::MixedDTypes { .. })),
            "dot",
        ),
        (
            "einsum bad label",
            Box::new(|| lane.einsum("i!->i", &[&v])),
            |e| matches!(e, OpError::Tensor(T::Einsum { .. })),
            "`!` is not a label",
        ),
        (
            "einsum extents",
            Box::new(|| lane.einsum("ij,jk->ik", &[&a, &a])),
            |e| matches!(e, OpError::Tensor(T::Einsum { .. })),
            "extents 3 and 2",
        ),
        (
            "einsum operand count",
            Box::new(|| lane.einsum("ij,jk->ik", &[&a])),
            |e| matches!(e, OpError::Tensor(T::Arity { .. })),
            "2 input(s)",
        ),
        (
            "einsum unknown output label",
            Box::new(|| lane.einsum("ij->k", &[&a])),
            |e| matches!(e, OpError::Tensor(T::Einsum { .. })),
            "`k`",
        ),
        (
            "too many outputs for apply",
            Box::new(|| lane.apply(TensorOp::Linalg(Linalg::Svd), &[&a])),
            |e| matches!(e, OpError::Tensor(T::Outputs { .. })),
            "apply_many",
        ),
        (
            "arange of complex",
            Box::new(|| lane.arange(DType::C32, 0.0, 1.0, 3)),
            |e| matches!(e, OpError::Tensor(T::Unsupported { .. })),
            "c32",
        ),
        (
            "arange from an infinite start",
            Box::new(|| lane.arange(DType::F64, f64::INFINITY, 0.0, 3)),
            |e| {
                matches!(
                    e,
                    OpError::Tensor(T::Argument {
                        argument: "start",
                        ..
                    })
                )
            },
            "start is inf",
        ),
        (
            "arange by a NaN step",
            Box::new(|| lane.arange(DType::F32, 0.0, f64::NAN, 3)),
            |e| {
                matches!(
                    e,
                    OpError::Tensor(T::Argument {
                        argument: "step",
                        ..
                    })
                )
            },
            "step is NaN",
        ),
        (
            "clamp to a NaN bound",
            Box::new(|| lane.clamp(&a, f64::NAN, 1.0)),
            |e| matches!(e, OpError::Tensor(T::Argument { argument: "lo", .. })),
            "lo is NaN",
        ),
        (
            "shape too large",
            Box::new(|| lane.zeros(DType::F64, &[usize::MAX, 2])),
            |e| matches!(e, OpError::Tensor(T::TooLarge { .. })),
            "memory",
        ),
        (
            "foreign handle",
            Box::new(|| lane.add(&a, &foreign)),
            |e| matches!(e, OpError::ForeignHandle { .. }),
            "runtime",
        ),
        (
            "transfer to no domain",
            Box::new(|| lane.transfer(&a, 3)),
            |e| matches!(e, OpError::NoSuchDomain { domain: 3, .. }),
            "domain 3",
        ),
    ];
    assert!(cases.len() >= 30, "{} cases", cases.len());
    for (name, call, kind, needle) in &cases {
        let err = match call() {
            Ok(h) => panic!("{name}: accepted, produced {h:?}"),
            Err(e) => e,
        };
        assert!(kind(&err), "{name}: wrong kind {err:?}");
        assert!(
            err.to_string().contains(needle),
            "{name}: `{err}` does not name `{needle}`"
        );
    }
    // Nothing resident was lost or changed (the two tensors the cases made
    // on the way — zeros and eye — are freed with their handles).
    assert_eq!(wait_ok(lane.download(&a).unwrap()), a0);
    assert_eq!(wait_ok(lane.resident().unwrap()), (resident, bytes));
    eprintln!("{} bad inputs refused", cases.len());
}

#[test]
fn clamp_keeps_nan_as_numpy_does() {
    let rt = Runtime::builder().split(1).build().expect("runtime");
    let lane = rt.lane(0).expect("lane");
    for dtype in [DType::F32, DType::F64] {
        let x64 = lane
            .upload(Tensor::from_vec(vec![f64::NAN, -5.0, 0.25, 5.0], &[4]).unwrap())
            .unwrap();
        let x = lane.cast(&x64, dtype).unwrap();
        let c = wait_ok(
            lane.download(
                &lane
                    .cast(&lane.clamp(&x, -1.0, 1.0).unwrap(), DType::F64)
                    .unwrap(),
            )
            .unwrap(),
        );
        let v = c.as_slice::<f64>().unwrap();
        assert!(v[0].is_nan(), "{dtype}: {v:?}");
        assert_eq!(&v[1..], &[-1.0, 0.25, 1.0], "{dtype}");
    }
    // Infinite bounds are bounds.
    let x = lane
        .upload(Tensor::from_vec(vec![-3.0f64, 3.0], &[2]).unwrap())
        .unwrap();
    let c = wait_ok(
        lane.download(&lane.clamp(&x, f64::NEG_INFINITY, 1.0).unwrap())
            .unwrap(),
    );
    assert_eq!(c.as_slice::<f64>().unwrap(), &[-3.0, 1.0]);
}

#[test]
fn a_whole_network_is_one_einsum_with_or_without_its_path() {
    let rt = Runtime::builder().split(1).build().expect("runtime");
    let lane = rt.lane(0).expect("lane");
    // 100 copies of one vector, elementwise: past NumPy's 64 operands.
    let x = lane
        .upload(Tensor::from_vec(vec![1.0f64, 2.0, 0.5], &[3]).unwrap())
        .unwrap();
    let all: Vec<&weft::TensorHandle> = vec![&x; 100];
    let spec = format!("{}->a", vec!["a"; 100].join(","));
    let got = wait_ok(lane.download(&lane.einsum(&spec, &all).unwrap()).unwrap());
    let want: Vec<f64> = [1.0f64, 2.0, 0.5].iter().map(|v| v.powi(100)).collect();
    assert_eq!(got.as_slice::<f64>().unwrap(), &want[..]);

    // A chain of 300 2×2 matrices, labelled with CJK ideographs (labels
    // past the 52 letters), against the product taken in order here.
    let n = 300;
    let label = |i: usize| char::from_u32(0x4E00 + i as u32).unwrap();
    let matrix = |i: usize| {
        let t = i as f64 * 0.37;
        vec![t.cos(), t.sin(), -t.sin() * 0.5, t.cos()]
    };
    let mut want = vec![1.0, 0.0, 0.0, 1.0];
    for i in 0..n {
        let m = matrix(i);
        want = vec![
            want[0] * m[0] + want[1] * m[2],
            want[0] * m[1] + want[1] * m[3],
            want[2] * m[0] + want[3] * m[2],
            want[2] * m[1] + want[3] * m[3],
        ];
    }
    let handles: Vec<weft::TensorHandle> = (0..n)
        .map(|i| {
            lane.upload(Tensor::from_vec(matrix(i), &[2, 2]).unwrap())
                .unwrap()
        })
        .collect();
    let operands: Vec<&weft::TensorHandle> = handles.iter().collect();
    let terms: Vec<String> = (0..n)
        .map(|i| format!("{}{}", label(i), label(i + 1)))
        .collect();
    let spec = format!("{}->{}{}", terms.join(","), label(0), label(n));
    // Greedy, and along a path from the right end (each step the last
    // two terms).
    let right: Vec<(usize, usize)> = (0..n - 1).map(|k| (n - 2 - k, n - 1 - k)).collect();
    for result in [
        lane.einsum(&spec, &operands).unwrap(),
        lane.einsum_along(&spec, &operands, &right).unwrap(),
    ] {
        let got = wait_ok(lane.download(&result).unwrap());
        for (g, w) in got.as_slice::<f64>().unwrap().iter().zip(&want) {
            assert!((g - w).abs() <= 1e-9 * (1.0 + w.abs()), "{g} vs {w}");
        }
    }
    // A path that does not fit is refused at the call, by its step.
    let mut bad = right.clone();
    bad[5] = (0, n);
    match lane.einsum_along(&spec, &operands, &bad) {
        Err(OpError::Tensor(TensorError::Einsum { reason, .. })) => {
            assert!(reason.contains("path step 5"), "{reason}")
        }
        other => panic!("expected an einsum error, got {other:?}"),
    }
}

/// Shape arithmetic is checked everywhere: with overflow checks on (this
/// suite runs under the `checked` profile too), none of these panics, and
/// without them none gives a wrong shape.
#[test]
fn shape_arithmetic_is_checked_and_empty_shapes_are_never_too_large() {
    use weft::ops::SliceAxis;
    let rt = Runtime::builder().split(1).build().expect("runtime");
    let lane = rt.lane(0).expect("lane");
    let big = 1usize << 62;
    // No element, whatever the other extents and their order.
    for shape in [vec![0, big, 4], vec![big, 4, 0], vec![4, 0, big]] {
        let z = lane.zeros(DType::F64, &shape).unwrap();
        assert_eq!(z.shape(), &shape[..]);
        let t = lane.permute(&z, &[2, 1, 0]).unwrap();
        // Over the huge axis: the sum keeps the zero extent, so no element.
        let huge = shape.iter().position(|&n| n == big).unwrap();
        let s = lane.reduce(ReduceOp::Sum, &z, &[huge], false).unwrap();
        let r = lane.reverse(&z, &[0, 1, 2]).unwrap();
        for h in [&z, &t, &s, &r] {
            assert_eq!(wait_ok(lane.download(h).unwrap()).len(), 0);
        }
    }
    let z = lane.zeros(DType::F64, &[0, 1 << 63]).unwrap();
    match lane.concatenate(&[&z, &z], 1) {
        Err(OpError::Tensor(TensorError::TooLarge { .. })) => {}
        other => panic!("expected TooLarge, got {other:?}"),
    }
    let x = lane.zeros(DType::F64, &[4]).unwrap();
    let one = lane
        .slice(
            &x,
            &[SliceAxis {
                start: 1,
                stop: 4,
                step: 1 << 62,
            }],
        )
        .unwrap();
    assert_eq!(one.shape(), [1]);
    let e = lane.zeros(DType::F64, &[0, 2]).unwrap();
    match lane.pad(&e, &[(usize::MAX, 5), (0, 0)], Scalar::Real(0.0)) {
        Err(OpError::Tensor(TensorError::TooLarge { .. })) => {}
        other => panic!("expected TooLarge, got {other:?}"),
    }
    // Decompositions of a 0×0 matrix: empty factors.
    let m = lane.zeros(DType::F64, &[0, 0]).unwrap();
    let (w, v) = lane.eigh(&m).unwrap();
    assert_eq!((w.shape(), v.shape()), (&[0][..], &[0, 0][..]));
    assert_eq!(wait_ok(lane.download(&v).unwrap()).len(), 0);
}

#[test]
fn an_intermediate_too_large_to_allocate_is_refused_and_loses_nothing() {
    let rt = Runtime::builder().split(1).build().expect("runtime");
    let lane = rt.lane(0).expect("lane");
    let n = 1usize << 21;
    let v = lane
        .upload(Tensor::from_vec(vec![1.0f64; n], &[n]).unwrap())
        .unwrap();
    // Along this path the outer product of the first two (2^42 f64, 32 TiB)
    // is made first, though the result is a scalar.
    let spec = "i,j,i,j->";
    match lane.einsum_along(spec, &[&v, &v, &v, &v], &[(0, 1), (0, 1), (0, 1)]) {
        Ok(h) => {
            // The einsum fails on the actor with TooLarge, naming the
            // intermediate; its download says so.
            let error = lane.download(&h).unwrap().wait().unwrap_err().to_string();
            assert!(
                error.contains(&format!(
                    "shape [{n}, {n}] has more elements than fit in memory"
                )),
                "{error}"
            );
        }
        Err(error) => panic!("refused at the call site: {error}"),
    }
    // The domain lives on, its resident tensor intact; the good path runs.
    let good = lane
        .einsum_along(spec, &[&v, &v, &v, &v], &[(0, 2), (0, 1), (0, 1)])
        .unwrap();
    let sum = wait_ok(lane.download(&good).unwrap())
        .into_vec::<f64>()
        .unwrap();
    assert_eq!(sum, [(n * n) as f64]);
}
