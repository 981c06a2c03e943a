//! Indexing: gather and scatter along every axis, dynamic slices with
//! XLA's clamping, compression by a mask, each against a plain loop
//! written here, and every bad index a typed error naming it.

use weft::ops::{CreateOps, ElementwiseOps, IndexOps, ReduceOps, StructuralOps};
use weft::{
    error::TensorError,
    ops::{HostRun, ScatterMode, TensorOp},
    DType, Tensor,
};
use weft_tests::{wait, wait_ok};

const SHAPE: [usize; 3] = [3, 4, 5];

fn x() -> Tensor {
    Tensor::from_vec((0..60).map(|i| i as f64 * 0.5 - 7.0).collect(), &SHAPE).unwrap()
}

fn run(op: TensorOp, inputs: &[&Tensor]) -> Result<Tensor, TensorError> {
    op.run(inputs, 1).map(|mut v| v.remove(0))
}

fn f64s(t: &Tensor) -> Vec<f64> {
    t.as_slice::<f64>().unwrap().to_vec()
}

/// Element `[i, j, k]` of a row-major `[3, 4, 5]` tensor.
fn at(v: &[f64], [i, j, k]: [usize; 3]) -> f64 {
    v[(i * 4 + j) * 5 + k]
}

#[test]
fn gather_takes_along_every_axis_with_negative_indices_from_the_end() {
    let x = x();
    let xv = f64s(&x);
    for axis in 0..3 {
        let n = SHAPE[axis] as i64;
        let raw = [0, n - 1, -1, 1, -n, 0];
        let indices = Tensor::from_vec(raw.to_vec(), &[2, 3]).unwrap();
        let got = run(TensorOp::Gather { axis }, &[&x, &indices]).unwrap();
        let mut shape = SHAPE[..axis].to_vec();
        shape.extend([2, 3]);
        shape.extend(&SHAPE[axis + 1..]);
        assert_eq!(got.shape(), &shape[..]);
        // The plain loop: every output index, its source index.
        let g = f64s(&got);
        let mut o = 0;
        let (outer, inner): (usize, usize) = (
            SHAPE[..axis].iter().product(),
            SHAPE[axis + 1..].iter().product(),
        );
        for a in 0..outer {
            for &r in &raw {
                let p = if r < 0 { r + n } else { r } as usize;
                for b in 0..inner {
                    // Rebuild [i, j, k] from (a, p, b).
                    let flat = (a * SHAPE[axis] + p) * inner + b;
                    let idx = [flat / 20, (flat / 5) % 4, flat % 5];
                    assert_eq!(g[o], at(&xv, idx), "axis {axis} output {o}");
                    o += 1;
                }
            }
        }
        assert_eq!(o, g.len());
    }
    // i32 indices, a rank-0 index (the axis goes), integer data.
    let ints = Tensor::from_vec((0..12i32).collect(), &[3, 4]).unwrap();
    let one = Tensor::scalar(2i32);
    let row = run(TensorOp::Gather { axis: 0 }, &[&ints, &one]).unwrap();
    assert_eq!(
        (row.shape(), row.as_slice::<i32>().unwrap()),
        (&[4][..], &[8, 9, 10, 11][..])
    );
}

#[test]
fn bad_indices_are_typed_errors_naming_the_index_and_the_extent() {
    let x = x();
    let indices = Tensor::from_vec(vec![0i64, 3, 1, 4], &[2, 2]).unwrap();
    let err = run(TensorOp::Gather { axis: 1 }, &[&x, &indices]).unwrap_err();
    assert_eq!(
        err,
        TensorError::Index {
            op: "gather",
            index: 4,
            position: vec![1, 1],
            axis: 1,
            extent: 4
        }
    );
    assert_eq!(
        err.to_string(),
        "gather: index 4 (element [1, 1] of the indices) is out of range for axis 1 of extent 4"
    );
    let low = Tensor::from_vec(vec![-6i32], &[1]).unwrap();
    let err = run(TensorOp::Gather { axis: 2 }, &[&x, &low]).unwrap_err();
    assert!(
        matches!(
            err,
            TensorError::Index {
                index: -6,
                extent: 5,
                ..
            }
        ),
        "{err}"
    );
    let floats = Tensor::from_vec(vec![1.0f64], &[1]).unwrap();
    let err = run(TensorOp::Gather { axis: 0 }, &[&x, &floats]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "gather indices is not defined for f64 tensors"
    );
    let err = run(TensorOp::Gather { axis: 3 }, &[&x, &low]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "gather: axis 3 of a rank-3 tensor is out of range"
    );
    // Scatter: updates of the wrong shape, an index out of range.
    let idx = Tensor::from_vec(vec![1i64, 2], &[2]).unwrap();
    let wrong = Tensor::from_vec(vec![0.0f64; 6], &[3, 2]).unwrap();
    let err = run(
        TensorOp::Scatter {
            axis: 1,
            mode: ScatterMode::Set,
        },
        &[&x, &idx, &wrong],
    )
    .unwrap_err();
    assert!(err.to_string().contains("which need [3, 2, 5]"), "{err}");
    let far = Tensor::from_vec(vec![1i64, 9], &[2]).unwrap();
    let updates = Tensor::from_vec(vec![0.0f64; 30], &[3, 2, 5]).unwrap();
    let err = run(
        TensorOp::Scatter {
            axis: 1,
            mode: ScatterMode::Add,
        },
        &[&x, &far, &updates],
    )
    .unwrap_err();
    assert!(
        matches!(
            err,
            TensorError::Index {
                op: "scatter",
                index: 9,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn scatter_sets_with_the_last_duplicate_and_adds_every_one() {
    let x = x();
    let xv = f64s(&x);
    // Along axis 1, index 2 twice and -1 (3) once.
    let raw = [2i64, -1, 2];
    let indices = Tensor::from_vec(raw.to_vec(), &[3]).unwrap();
    let updates: Vec<f64> = (0..45).map(|i| 100.0 + i as f64).collect();
    let u = Tensor::from_vec(updates.clone(), &[3, 3, 5]).unwrap();
    for mode in [ScatterMode::Set, ScatterMode::Add] {
        let got = run(TensorOp::Scatter { axis: 1, mode }, &[&x, &indices, &u]).unwrap();
        let mut want = xv.clone();
        for i in 0..3 {
            for (j, &r) in raw.iter().enumerate() {
                let p = if r < 0 { r + 4 } else { r } as usize;
                for k in 0..5 {
                    let dst = (i * 4 + p) * 5 + k;
                    let src = (i * 3 + j) * 5 + k;
                    match mode {
                        ScatterMode::Set => want[dst] = updates[src],
                        ScatterMode::Add => want[dst] += updates[src],
                    }
                }
            }
        }
        assert_eq!(f64s(&got), want, "{mode:?}");
    }
    // Integers add wrapping; bool has no add.
    let ints = Tensor::from_vec(vec![i32::MAX, 0], &[2]).unwrap();
    let i = Tensor::from_vec(vec![0i64, 0], &[2]).unwrap();
    let one = Tensor::from_vec(vec![1i32, 1], &[2]).unwrap();
    let add = TensorOp::Scatter {
        axis: 0,
        mode: ScatterMode::Add,
    };
    let got = run(add.clone(), &[&ints, &i, &one]).unwrap();
    assert_eq!(got.as_slice::<i32>().unwrap(), &[i32::MIN + 1, 0]);
    let b = Tensor::from_vec(vec![true, false], &[2]).unwrap();
    let err = run(add, &[&b, &i, &b]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "scatter_add is not defined for bool tensors"
    );
}

#[test]
fn dynamic_slices_clamp_their_starts_as_xla_does() {
    let x = x();
    let xv = f64s(&x);
    let sizes = [2usize, 3, 4];
    for starts in [[0i64, 0, 0], [1, 1, 1], [-5, 9, 3], [2, -1, 100]] {
        let s = Tensor::from_vec(starts.to_vec(), &[3]).unwrap();
        let got = run(
            TensorOp::DynamicSlice {
                sizes: sizes.to_vec(),
            },
            &[&x, &s],
        )
        .unwrap();
        assert_eq!(got.shape(), &sizes);
        // XLA: each start clamped to 0..=extent - size.
        let first: Vec<usize> = (0..3)
            .map(|a| starts[a].clamp(0, (SHAPE[a] - sizes[a]) as i64) as usize)
            .collect();
        let mut want = Vec::new();
        for i in 0..2 {
            for j in 0..3 {
                for k in 0..4 {
                    want.push(at(&xv, [first[0] + i, first[1] + j, first[2] + k]));
                }
            }
        }
        assert_eq!(f64s(&got), want, "starts {starts:?}");
        // The update at the same starts writes the same window.
        let update = Tensor::from_vec(vec![-1.0f64; 24], &sizes).unwrap();
        let written = run(TensorOp::DynamicUpdateSlice, &[&x, &update, &s]).unwrap();
        let w = f64s(&written);
        for i in 0..3 {
            for j in 0..4 {
                for k in 0..5 {
                    let inside = (0..3).all(|a| {
                        let c = [i, j, k][a];
                        c >= first[a] && c < first[a] + sizes[a]
                    });
                    let want = if inside { -1.0 } else { at(&xv, [i, j, k]) };
                    assert_eq!(
                        w[(i * 4 + j) * 5 + k],
                        want,
                        "starts {starts:?} at [{i}, {j}, {k}]"
                    );
                }
            }
        }
    }
    let s = Tensor::from_vec(vec![0i32, 0], &[2]).unwrap();
    let err = run(
        TensorOp::DynamicSlice {
            sizes: vec![1, 1, 1],
        },
        &[&x, &s],
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "dynamic_slice of shape [3, 4, 5]: the starts must be a 1-D integer tensor of 3 \
         elements, got i32[2]"
    );
    let s = Tensor::from_vec(vec![0i32; 3], &[3]).unwrap();
    let err = run(
        TensorOp::DynamicSlice {
            sizes: vec![1, 5, 1],
        },
        &[&x, &s],
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "dynamic_slice of shape [3, 4, 5]: size 5 along axis 1 is larger than its extent 4"
    );
}

#[test]
fn compress_keeps_the_masked_elements_and_checks_their_count() {
    let x = x();
    let xv = f64s(&x);
    let flags: Vec<bool> = (0..60).map(|i| i % 7 == 3 || i == 59).collect();
    let mask = Tensor::from_vec(flags.clone(), &SHAPE).unwrap();
    let len = flags.iter().filter(|&&f| f).count();
    let got = run(TensorOp::Compress { len }, &[&x, &mask]).unwrap();
    let want: Vec<f64> = xv
        .iter()
        .zip(&flags)
        .filter(|(_, &f)| f)
        .map(|(&v, _)| v)
        .collect();
    assert_eq!((got.shape(), f64s(&got)), (&[len][..], want));
    let err = run(TensorOp::Compress { len: len + 1 }, &[&x, &mask]).unwrap_err();
    assert_eq!(
        err,
        TensorError::MaskCount {
            expected: len + 1,
            got: len
        }
    );
    let err = run(TensorOp::Compress { len: 1 }, &[&x, &x]).unwrap_err();
    assert_eq!(err.to_string(), "expected a bool tensor, got f64");
}

#[test]
fn a_bad_index_fails_the_op_on_the_actor_and_loses_nothing() {
    let rt = weft::Runtime::builder().split(1).build().expect("runtime");
    let lane = rt.lane(0).expect("lane");
    let x = lane.upload(x()).unwrap();
    let good = lane
        .upload(Tensor::from_vec(vec![2i64, 0], &[2]).unwrap())
        .unwrap();
    let bad = lane
        .upload(Tensor::from_vec(vec![2i64, 7], &[2]).unwrap())
        .unwrap();
    let taken = lane.gather(&x, &bad, 0).unwrap();
    let err = wait(lane.download(&taken).unwrap()).unwrap_err();
    let failure = err.dependency().expect("the gather's failure");
    assert_eq!(failure.op, "gather");
    assert!(
        failure.to_string().contains(
            "index 7 (element [1] of the indices) is out of range for axis 0 of extent 3"
        ),
        "{failure}"
    );
    // The actor goes on; the data is intact.
    let rows = lane.gather(&x, &good, 0).unwrap();
    let rows = wait_ok(lane.download(&rows).unwrap());
    assert_eq!(rows.shape(), &[2, 4, 5]);
    assert_eq!(f64s(&rows)[..2], [13.0, 13.5]);
    // Compression with the count from the mask's sum, as a user does it.
    let zero = lane.zeros(DType::F64, &[]).unwrap();
    let mask = lane.compare(weft::ops::CmpOp::Gt, &x, &zero).unwrap();
    let count = wait_ok(lane.download(&lane.sum_all(&mask).unwrap()).unwrap());
    let len = count.as_slice::<i64>().unwrap()[0] as usize;
    let positive = lane.compress(&x, &mask, len).unwrap();
    let positive = wait_ok(lane.download(&positive).unwrap());
    assert_eq!(len, 45);
    assert!(f64s(&positive).iter().all(|&v| v > 0.0));
    assert_eq!(f64s(&wait_ok(lane.download(&x).unwrap())), f64s(&self::x()));
}

#[test]
fn broadcast_in_dim_maps_each_axis_and_repeats_the_others() {
    let x = Tensor::from_vec((0..6i32).collect(), &[2, 3]).unwrap();
    // x[i, j] lands at out[j, k, i] for every k.
    let got = run(
        TensorOp::BroadcastInDim {
            shape: vec![3, 4, 2],
            dims: vec![2, 0],
        },
        &[&x],
    )
    .unwrap();
    let g = got.as_slice::<i32>().unwrap();
    for j in 0..3 {
        for k in 0..4 {
            for i in 0..2 {
                assert_eq!(g[(j * 4 + k) * 2 + i], (i * 3 + j) as i32);
            }
        }
    }
    // An extent-1 axis broadcasts; a mismatch and a repeated dimension are refused.
    let row = Tensor::from_vec(vec![7.0f64, 8.0], &[1, 2]).unwrap();
    let op = |shape: Vec<usize>, dims: Vec<usize>| TensorOp::BroadcastInDim { shape, dims };
    let b = run(op(vec![2, 3, 2], vec![0, 2]), &[&row]).unwrap();
    assert_eq!(
        f64s(&b),
        [7.0, 8.0, 7.0, 8.0, 7.0, 8.0, 7.0, 8.0, 7.0, 8.0, 7.0, 8.0]
    );
    let err = run(op(vec![2, 3], vec![0, 1]), &[&row]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "broadcast_in_dim of shape [1, 2]: axis 1 of extent 2 cannot become axis 1 of extent 3"
    );
    let err = run(op(vec![2, 2], vec![1, 1]), &[&row]).unwrap_err();
    assert!(err.to_string().contains("given twice"), "{err}");
}

#[test]
fn diagonals_of_every_axis_pair_and_their_embeddings() {
    let x = x();
    let xv = f64s(&x);
    for a1 in 0..3 {
        for a2 in 0..3 {
            if a1 == a2 {
                continue;
            }
            let got = run(TensorOp::Diagonal { axes: [a1, a2] }, &[&x]).unwrap();
            // The plain loop: the remaining axis outer, the diagonal inner.
            let other = 3 - a1 - a2;
            let d = SHAPE[a1].min(SHAPE[a2]);
            assert_eq!(got.shape(), [SHAPE[other], d], "axes {a1}, {a2}");
            let mut want = Vec::new();
            for o in 0..SHAPE[other] {
                for i in 0..d {
                    let mut idx = [0; 3];
                    (idx[other], idx[a1], idx[a2]) = (o, i, i);
                    want.push(at(&xv, idx));
                }
            }
            assert_eq!(f64s(&got), want, "axes {a1}, {a2}");
        }
    }
    // Embedding the rows of a [2, 3] on every pair of the output's 3 axes.
    let v = Tensor::from_vec((1..=6).map(f64::from).collect(), &[2, 3]).unwrap();
    let vv = f64s(&v);
    for d1 in 0..3 {
        for d2 in 0..3 {
            if d1 == d2 {
                continue;
            }
            let got = run(TensorOp::DiagEmbed { axes: [d1, d2] }, &[&v]).unwrap();
            let other = 3 - d1 - d2;
            let mut shape = [3; 3];
            shape[other] = 2;
            assert_eq!(got.shape(), shape, "axes {d1}, {d2}");
            let g = f64s(&got);
            for (flat, &value) in g.iter().enumerate() {
                let idx = [
                    flat / (shape[1] * shape[2]),
                    (flat / shape[2]) % shape[1],
                    flat % shape[2],
                ];
                let want = if idx[d1] == idx[d2] {
                    vv[idx[other] * 3 + idx[d1]]
                } else {
                    0.0
                };
                assert_eq!(value, want, "axes {d1}, {d2} at {idx:?}");
            }
            // The diagonal of the same pair gives the rows back.
            let back = run(TensorOp::Diagonal { axes: [d1, d2] }, &[&got]).unwrap();
            assert_eq!(back, v, "axes {d1}, {d2}");
        }
    }
    let message = |op: TensorOp, t: &Tensor| run(op, &[t]).unwrap_err().to_string();
    assert_eq!(
        message(TensorOp::Diagonal { axes: [1, 1] }, &x),
        "diagonal: axis 1 of a rank-3 tensor is given twice"
    );
    assert_eq!(
        message(TensorOp::DiagEmbed { axes: [0, 3] }, &v),
        "diag_embed: axis 3 of a rank-3 tensor is out of range"
    );
    let line = Tensor::from_vec(vec![1.0f64, 2.0], &[2]).unwrap();
    assert!(message(TensorOp::Diagonal { axes: [0, 1] }, &line).contains("[2]"));
}

#[test]
fn lane_diagonals_default_to_the_last_axes() {
    let rt = weft::Runtime::builder().split(1).build().unwrap();
    let lane = rt.lane(0).unwrap();
    let x = lane.upload(x()).unwrap();
    let last = wait_ok(lane.download(&lane.diagonal(&x).unwrap()).unwrap());
    let named = lane.diagonal_axes(&x, 1, 2).unwrap();
    assert_eq!(last, wait_ok(lane.download(&named).unwrap()));
    let front = lane.diagonal_axes(&x, 0, 2).unwrap();
    assert_eq!(front.shape(), [4, 3]);
    let embedded = lane.diag_embed(&named).unwrap();
    assert_eq!(embedded.shape(), [3, 4, 4]);
    let inner = lane.diag_embed_axes(&named, 0, 2).unwrap();
    assert_eq!(inner.shape(), [4, 3, 4]);
    let back = lane.diagonal_axes(&inner, 0, 2).unwrap();
    assert_eq!(wait_ok(lane.download(&back).unwrap()), last);
    let err = lane.diagonal_axes(&x, 0, 3).unwrap_err();
    assert!(
        err.to_string()
            .contains("axis 3 of a rank-3 tensor is out of range"),
        "{err}"
    );
    let scalar = lane.upload(Tensor::scalar(1.0f64)).unwrap();
    assert!(lane.diag_embed(&scalar).is_err());
    assert!(wait(lane.download(&x).unwrap()).is_ok());
}
