//! Reductions, argmax and argmin, structural ops, accumulating products and clamps of every element type.

use super::*;

#[test]
fn reductions_of_integers_and_bool() {
    let big = i64::from(i32::MAX);
    let a = Tensor::from_vec(vec![i32::MAX, i32::MAX, -3, 4, 0, -9], &[2, 3]).unwrap();
    let reduce = |op, t: &Tensor, axes: &[usize]| {
        run(
            &TensorOp::Reduce {
                op,
                axes: axes.to_vec(),
                keep_dims: false,
            },
            &[t],
        )
        .unwrap()
    };
    // Sum and prod of i32 are i64: no overflow at i32's width.
    let s = reduce(ReduceOp::Sum, &a, &[1]);
    assert_eq!(
        (s.dtype(), values::<i64>(&s)),
        (DType::I64, vec![2 * big - 3, -5])
    );
    let p = reduce(ReduceOp::Prod, &a, &[0]);
    assert_eq!(values::<i64>(&p), [4 * big, 0, 27]);
    let m = reduce(ReduceOp::Mean, &a, &[0, 1]);
    assert_eq!(
        (m.dtype(), values::<f64>(&m)),
        (DType::F64, vec![(2 * big - 8) as f64 / 6.0])
    );
    let mx = reduce(ReduceOp::Max, &a, &[1]);
    assert_eq!(
        (mx.dtype(), values::<i32>(&mx)),
        (DType::I32, vec![i32::MAX, 4])
    );
    assert_eq!(values::<i32>(&reduce(ReduceOp::Min, &a, &[0])), [4, 0, -9]);
    // Prod of i64 wraps.
    let w = Tensor::from_vec(vec![1i64 << 40, 1 << 40], &[2]).unwrap();
    assert_eq!(values::<i64>(&reduce(ReduceOp::Prod, &w, &[0])), [0]);
    // Bool: sum counts, mean is the fraction, max is any.
    let t = Tensor::from_vec(vec![true, false, true, true, false, false], &[2, 3]).unwrap();
    assert_eq!(values::<i64>(&reduce(ReduceOp::Sum, &t, &[1])), [2, 1]);
    assert_eq!(values::<f64>(&reduce(ReduceOp::Mean, &t, &[0, 1])), [0.5]);
    assert_eq!(
        values::<bool>(&reduce(ReduceOp::Max, &t, &[0])),
        [true, false, true]
    );
    // Any and all of every type; over no element, false and true.
    assert_eq!(
        values::<bool>(&reduce(ReduceOp::Any, &a, &[1])),
        [true, true]
    );
    assert_eq!(
        values::<bool>(&reduce(ReduceOp::All, &a, &[1])),
        [true, false]
    );
    assert_eq!(
        values::<bool>(&reduce(ReduceOp::All, &t, &[0])),
        [true, false, false]
    );
    let f = Tensor::from_vec(vec![0.0f64, -0.0, f64::NAN, 0.0], &[2, 2]).unwrap();
    assert_eq!(
        values::<bool>(&reduce(ReduceOp::Any, &f, &[1])),
        [false, true]
    );
    let z = Tensor::from_vec(vec![c64::new(0.0, 0.0), c64::new(0.0, 1.0)], &[2]).unwrap();
    assert_eq!(values::<bool>(&reduce(ReduceOp::Any, &z, &[0])), [true]);
    assert_eq!(values::<bool>(&reduce(ReduceOp::All, &z, &[0])), [false]);
    let e = Tensor::from_vec(Vec::<i32>::new(), &[0, 2]).unwrap();
    assert_eq!(
        values::<bool>(&reduce(ReduceOp::Any, &e, &[0])),
        [false, false]
    );
    assert_eq!(
        values::<bool>(&reduce(ReduceOp::All, &e, &[0])),
        [true, true]
    );
    // Large: the parallel path agrees with a plain loop.
    let n = 1 << 17;
    let v: Vec<i64> = integers(n, 5, -1000, 1000);
    let l = Tensor::from_vec(v.clone(), &[n]).unwrap();
    assert_eq!(
        values::<i64>(&reduce(ReduceOp::Sum, &l, &[0])),
        [v.iter().sum::<i64>()]
    );
    assert_eq!(
        values::<i64>(&reduce(ReduceOp::Max, &l, &[0])),
        [*v.iter().max().unwrap()]
    );
}

#[test]
fn argmax_and_argmin_take_the_first_extremum_and_the_first_nan() {
    let arg = |op, t: &Tensor, axis, keep_dims| {
        run(
            &TensorOp::ArgReduce {
                op,
                axis,
                keep_dims,
            },
            &[t],
        )
    };
    // Plain loop over an axis of a [3, 4, 5] tensor, for every axis.
    let shape = [3usize, 4, 5];
    let v: Vec<i64> = integers(60, 3, -4, 4);
    let t = Tensor::from_vec(v.clone(), &shape).unwrap();
    for axis in 0..3 {
        for op in [ArgOp::Max, ArgOp::Min] {
            let got = arg(op, &t, axis, false).unwrap();
            let mut out_shape = shape.to_vec();
            out_shape.remove(axis);
            assert_eq!((got.dtype(), got.shape()), (DType::I64, &out_shape[..]));
            let strides = [20, 5, 1];
            let got = values::<i64>(&got);
            assert_eq!(got.len(), 60 / shape[axis]);
            for (k, g) in got.iter().enumerate() {
                // Output k's coordinates on the kept axes, in order.
                let kept: Vec<usize> = (0..3).filter(|&a| a != axis).collect();
                let (c0, c1) = (k / shape[kept[1]], k % shape[kept[1]]);
                let base = c0 * strides[kept[0]] + c1 * strides[kept[1]];
                let along: Vec<i64> = (0..shape[axis])
                    .map(|j| v[base + j * strides[axis]])
                    .collect();
                let best = match op {
                    ArgOp::Max => *along.iter().max().unwrap(),
                    ArgOp::Min => *along.iter().min().unwrap(),
                };
                let first = along.iter().position(|&x| x == best).unwrap() as i64;
                assert_eq!(*g, first, "{op:?} axis {axis} output {k}: {along:?}");
            }
        }
    }
    let f = Tensor::from_vec(vec![1.0f32, 3.0, f32::NAN, 3.0, f32::NAN, -1.0], &[2, 3]).unwrap();
    assert_eq!(
        values::<i64>(&arg(ArgOp::Max, &f, 1, false).unwrap()),
        [2, 1]
    );
    assert_eq!(
        values::<i64>(&arg(ArgOp::Min, &f, 1, false).unwrap()),
        [2, 1]
    );
    assert_eq!(
        values::<i64>(&arg(ArgOp::Max, &f, 0, false).unwrap()),
        [1, 1, 0]
    );
    let kept = arg(ArgOp::Max, &f, 1, true).unwrap();
    assert_eq!(kept.shape(), &[2, 1]);
    let b = Tensor::from_vec(vec![false, true, true], &[3]).unwrap();
    assert_eq!(values::<i64>(&arg(ArgOp::Max, &b, 0, false).unwrap()), [1]);
    // Refusals.
    let err = arg(ArgOp::Max, &f, 2, false).unwrap_err();
    assert_eq!(
        err.to_string(),
        "argmax: axis 2 of a rank-2 tensor is out of range"
    );
    let e = Tensor::from_vec(Vec::<f64>::new(), &[2, 0]).unwrap();
    let err = arg(ArgOp::Min, &e, 1, false).unwrap_err();
    assert_eq!(
        err.to_string(),
        "argmin over no elements (shape [2, 0]) is undefined"
    );
    let z = Tensor::from_vec(vec![c64::new(1.0, 0.0)], &[1]).unwrap();
    let err = arg(ArgOp::Max, &z, 0, false).unwrap_err();
    assert_eq!(err.to_string(), "argmax is not defined for c64 tensors");
}

#[test]
fn structural_ops_move_every_type() {
    let t = Tensor::from_vec(vec![true, false, true, true, false, false], &[2, 3]).unwrap();
    let i = Tensor::from_vec(vec![1i64, 2, 3, 4, 5, 6], &[2, 3]).unwrap();
    let pad = TensorOp::Pad {
        widths: vec![(0, 1), (1, 0)],
        value: Scalar::Bool(true),
    };
    let p = run(&pad, &[&t]).unwrap();
    assert_eq!(p.shape(), &[3, 4]);
    assert_eq!(
        values::<bool>(&p),
        [true, true, false, true, true, true, false, false, true, true, true, true]
    );
    let d = run(&TensorOp::Diagonal { axes: [0, 1] }, &[&i]).unwrap();
    assert_eq!(values::<i64>(&d), [1, 5]);
    let tri = run(&TensorOp::Triangle { k: 0, upper: true }, &[&i]).unwrap();
    assert_eq!(values::<i64>(&tri), [1, 2, 3, 0, 5, 6]);
    let c = run(&TensorOp::Concatenate { axis: 1, inputs: 2 }, &[&t, &t]).unwrap();
    assert_eq!(c.shape(), &[2, 6]);
    let bt = run(&TensorOp::BroadcastTo(vec![2, 2, 3]), &[&i]).unwrap();
    assert_eq!(values::<i64>(&bt)[6..], [1, 2, 3, 4, 5, 6]);
    let r = run(&TensorOp::Reverse(vec![1]), &[&i]).unwrap();
    assert_eq!(values::<i64>(&r), [3, 2, 1, 6, 5, 4]);
}

#[test]
fn accumulating_products_and_axpby_against_plain_loops() {
    use weft::{c32, ops::MatOp};
    // a [2, 3, 4] read transposed or as its adjoint, b [2, 3, 5], c [2, 4, 5].
    let value =
        |i: usize, seed: f32| c32::new((i as f32 * 0.37 + seed).sin(), (i as f32 * 0.11).cos());
    let av: Vec<c32> = (0..24).map(|i| value(i, 0.1)).collect();
    let bv: Vec<c32> = (0..30).map(|i| value(i, 0.7)).collect();
    let cv: Vec<c32> = (0..40).map(|i| value(i, 1.3)).collect();
    let a = Tensor::from_vec(av.clone(), &[2, 3, 4]).unwrap();
    let b = Tensor::from_vec(bv.clone(), &[2, 3, 5]).unwrap();
    let c = Tensor::from_vec(cv.clone(), &[2, 4, 5]).unwrap();
    let (alpha, beta) = (c32::new(0.5, -2.0), c32::new(-1.5, 0.25));
    for a_op in [MatOp::T, MatOp::H] {
        let op = TensorOp::Gemm {
            alpha: Scalar::Complex(c64::new(0.5, -2.0)),
            beta: Scalar::Complex(c64::new(-1.5, 0.25)),
            a: a_op,
            b: MatOp::NONE,
        };
        let got = values::<c32>(&run(&op, &[&a, &b, &c]).unwrap());
        for n in 0..2 {
            for i in 0..4 {
                for j in 0..5 {
                    let mut sum = c32::new(0.0, 0.0);
                    for k in 0..3 {
                        let x = av[n * 12 + k * 4 + i];
                        let x = if a_op.conjugate { x.conj() } else { x };
                        sum += x * bv[n * 15 + k * 5 + j];
                    }
                    let want = alpha * sum + beta * cv[n * 20 + i * 5 + j];
                    let g = got[n * 20 + i * 5 + j];
                    assert!(
                        (g - want).norm() < 1e-5,
                        "{a_op:?} [{n}, {i}, {j}]: {g} vs {want}"
                    );
                }
            }
        }
    }
    // beta = 0 does not read c: its NaNs do not reach the result.
    let x = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
    let nan = Tensor::from_vec(vec![f64::NAN; 4], &[2, 2]).unwrap();
    let op = TensorOp::Gemm {
        alpha: Scalar::Real(1.0),
        beta: Scalar::Real(0.0),
        a: MatOp::NONE,
        b: MatOp::T,
    };
    assert_eq!(
        values::<f64>(&run(&op, &[&x, &x, &nan]).unwrap()),
        [5.0, 11.0, 11.0, 25.0]
    );
    let wrong = Tensor::from_vec(vec![0.0f64; 2], &[1, 2]).unwrap();
    let err = run(&op, &[&x, &x, &wrong]).unwrap_err();
    assert!(matches!(err, TensorError::MatmulShapes { .. }), "{err}");
    // axpby, broadcast.
    let y = Tensor::from_vec(vec![10.0f64, 20.0], &[2]).unwrap();
    let op = TensorOp::Axpby {
        alpha: Scalar::Real(2.0),
        beta: Scalar::Real(-0.5),
    };
    assert_eq!(
        values::<f64>(&run(&op, &[&x, &y]).unwrap()),
        [-3.0, -6.0, 1.0, -2.0]
    );
    let i = Tensor::from_vec(vec![1i64, 2], &[2]).unwrap();
    assert!(matches!(
        run(&op, &[&i, &i]),
        Err(TensorError::Unsupported { .. })
    ));
}

#[test]
fn clamp_between_tensor_bounds_broadcasts_all_three() {
    // x [2, 3], lo per column [3], hi one for all [] — and of integers.
    let x = Tensor::from_vec(vec![-4.0f64, 0.5, 9.0, f64::NAN, 2.0, -1.0], &[2, 3]).unwrap();
    let lo = Tensor::from_vec(vec![-1.0f64, 1.0, 3.0], &[3]).unwrap();
    let hi = Tensor::scalar(2.5f64);
    let got = run(&TensorOp::ClampBetween, &[&x, &lo, &hi]).unwrap();
    let (xv, lv) = (values::<f64>(&x), values::<f64>(&lo));
    let want: Vec<f64> = (0..6)
        .map(|i| {
            let (v, l) = (xv[i], lv[i % 3]);
            // NaN stays NaN; lo > hi gives hi (column 2: lo 3 > hi 2.5).
            if v.is_nan() {
                v
            } else {
                v.max(l).min(2.5)
            }
        })
        .collect();
    let g = values::<f64>(&got);
    assert_eq!(got.shape(), [2, 3]);
    for (a, b) in g.iter().zip(&want) {
        assert!(a == b || (a.is_nan() && b.is_nan()), "{g:?} vs {want:?}");
    }
    assert_eq!(g[2], 2.5, "hi wins where lo > hi");
    let xi = Tensor::from_vec(vec![-7i32, 0, 7, 3], &[4, 1]).unwrap();
    let loi = Tensor::from_vec(vec![-2i32, 1], &[1, 2]).unwrap();
    let hii = Tensor::from_vec(vec![5i32, 2], &[2]).unwrap();
    let gi = run(&TensorOp::ClampBetween, &[&xi, &loi, &hii]).unwrap();
    assert_eq!(gi.shape(), [4, 2]);
    let mut wanti = Vec::new();
    for x in [-7, 0, 7, 3] {
        for (l, h) in [(-2, 5), (1, 2)] {
            wanti.push(i32::max(x, l).min(h));
        }
    }
    assert_eq!(values::<i32>(&gi), wanti);
    let err = run(&TensorOp::ClampBetween, &[&xi, &lo, &hi]).unwrap_err();
    assert_eq!(
        err,
        TensorError::MixedDTypes {
            op: "clamp_between",
            lhs: DType::I32,
            rhs: DType::F64
        }
    );
    let flags = Tensor::from_vec(vec![true], &[1]).unwrap();
    let err = run(&TensorOp::ClampBetween, &[&flags, &flags, &flags]).unwrap_err();
    assert!(err.to_string().contains("clamp_between"), "{err}");
}
