//! Writing into a given tensor (`apply_into`, `gemm_into`, `axpby_into`,
//! `dot_general_into`): the result is what the fresh op computes, the
//! given tensor's buffer is reused only when its handle was the last one,
//! and a value someone still reads is never changed.

use weft::ops::{CreateOps, ElementwiseOps, LinalgOps};
use weft::{
    c64,
    error::TensorError,
    ops::{BinaryOp, DotGeneral, MatOp, TensorOp},
    DType, Lane, OpError, Scalar, Tensor, TensorHandle,
};
use weft_tests::{wait, wait_ok, Hold};

fn runtime(domains: usize) -> weft::Runtime {
    weft::Runtime::builder().split(domains).build().unwrap()
}

/// Where the tensor's elements live (read on the actor).
fn address(lane: &Lane, h: &TensorHandle) -> usize {
    wait_ok(
        lane.with(&[h], |_, t| match t[0].dtype() {
            DType::F64 => t[0].as_slice::<f64>().unwrap().as_ptr() as usize,
            _ => t[0].as_slice::<c64>().unwrap().as_ptr() as usize,
        })
        .unwrap(),
    )
}

fn f64s(lane: &Lane, h: &TensorHandle) -> Vec<f64> {
    wait_ok(lane.download(h).unwrap())
        .as_slice::<f64>()
        .unwrap()
        .to_vec()
}

fn c64s(lane: &Lane, h: &TensorHandle) -> Vec<c64> {
    wait_ok(lane.download(h).unwrap())
        .as_slice::<c64>()
        .unwrap()
        .to_vec()
}

const N: usize = 1024;

fn ramp(lane: &Lane, scale: f64) -> TensorHandle {
    let v = (0..N).map(|i| i as f64 * scale).collect();
    lane.upload(Tensor::from_vec(v, &[N]).unwrap()).unwrap()
}

fn add() -> TensorOp {
    TensorOp::Binary(BinaryOp::Add)
}

#[test]
fn the_last_handle_gives_its_buffer_to_the_result() {
    let rt = runtime(1);
    let lane = rt.lane(0).unwrap();
    let (a, b) = (ramp(&lane, 1.0), ramp(&lane, 0.5));
    let out = lane.zeros(DType::F64, &[N]).unwrap();
    let before = address(&lane, &out);
    let sum = lane.apply_into(add(), &[&a, &b], out).unwrap();
    assert_eq!(
        address(&lane, &sum),
        before,
        "the donated buffer holds the sum"
    );
    let want: Vec<f64> = (0..N).map(|i| i as f64 * 1.5).collect();
    assert_eq!(f64s(&lane, &sum), want);
    // The old name is gone: one tensor each for a, b and the sum.
    drop((a, b));
    assert_eq!(wait_ok(lane.resident().unwrap()).0, 1);
}

#[test]
fn a_kept_clone_keeps_its_value_and_the_result_is_fresh() {
    let rt = runtime(1);
    let lane = rt.lane(0).unwrap();
    let (a, b) = (ramp(&lane, 1.0), ramp(&lane, 2.0));
    let out = ramp(&lane, -1.0);
    let kept = out.clone();
    let before = address(&lane, &kept);
    let sum = lane.apply_into(add(), &[&a, &b], out).unwrap();
    assert_ne!(address(&lane, &sum), before);
    assert_eq!(
        f64s(&lane, &kept),
        (0..N).map(|i| -(i as f64)).collect::<Vec<_>>()
    );
    assert_eq!(
        f64s(&lane, &sum),
        (0..N).map(|i| i as f64 * 3.0).collect::<Vec<_>>()
    );
}

#[test]
fn a_reader_submitted_before_sees_the_old_value_and_the_buffer_is_still_reused() {
    let rt = runtime(1);
    let lane = rt.lane(0).unwrap();
    let (a, b) = (ramp(&lane, 1.0), ramp(&lane, 1.0));
    let out = ramp(&lane, 3.0);
    let before = address(&lane, &out);
    // Read before, on the same lane: it runs first, and its clone of `out`
    // is gone by the time the write runs.
    let doubled = lane
        .binary_scalar(BinaryOp::Mul, &out, Scalar::Real(2.0))
        .unwrap();
    let sum = lane.apply_into(add(), &[&a, &b], out).unwrap();
    assert_eq!(
        f64s(&lane, &doubled),
        (0..N).map(|i| i as f64 * 6.0).collect::<Vec<_>>()
    );
    assert_eq!(address(&lane, &sum), before);
}

#[test]
fn a_queued_reader_on_another_lane_keeps_the_old_value() {
    // The reader also waits for a tensor of domain 1, held busy: it is
    // still queued, holding its clone, when the write runs on domain 0.
    let rt = runtime(2);
    let (lane, other) = (rt.lane(0).unwrap(), rt.lane(1).unwrap());
    let reader_lane = rt.lane(0).unwrap();
    let (a, b) = (ramp(&lane, 1.0), ramp(&lane, 1.0));
    let out = ramp(&lane, 5.0);
    let before = address(&lane, &out);
    let far = ramp(&other, 1.0);
    wait_ok(other.sync(&far).unwrap());
    let hold = Hold::on(&other);
    let near = other.transfer(&far, 0).unwrap();
    let reader = reader_lane.binary(BinaryOp::Sub, &out, &near).unwrap();
    let sum = lane.apply_into(add(), &[&a, &b], out).unwrap();
    wait_ok(lane.sync(&sum).unwrap());
    assert_ne!(
        address(&lane, &sum),
        before,
        "the reader still held the old value"
    );
    wait_ok(hold.release());
    assert_eq!(
        f64s(&lane, &reader),
        (0..N).map(|i| i as f64 * 4.0).collect::<Vec<_>>()
    );
    assert_eq!(
        f64s(&lane, &sum),
        (0..N).map(|i| i as f64 * 2.0).collect::<Vec<_>>()
    );
}

#[test]
fn a_tensor_of_another_type_or_shape_is_refused_naming_both() {
    let rt = runtime(2);
    let lane = rt.lane(0).unwrap();
    let (a, b) = (ramp(&lane, 1.0), ramp(&lane, 1.0));
    let short = lane.zeros(DType::F64, &[N - 1]).unwrap();
    let err = lane.apply_into(add(), &[&a, &b], short).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "add into a f64 tensor of shape [{}]: its result is f64 of shape [{N}]",
            N - 1
        )
    );
    let single = lane.zeros(DType::F32, &[N]).unwrap();
    let err = lane.apply_into(add(), &[&a, &b], single).unwrap_err();
    assert!(
        matches!(
            err,
            OpError::Tensor(TensorError::Into {
                into_dtype: DType::F32,
                dtype: DType::F64,
                ..
            })
        ),
        "{err}"
    );
    let elsewhere = rt.lane(1).unwrap().zeros(DType::F64, &[N]).unwrap();
    let err = lane.apply_into(add(), &[&a, &b], elsewhere).unwrap_err();
    assert!(matches!(err, OpError::WrongDomain { .. }), "{err}");
    let qr = lane.zeros(DType::F64, &[3, 3]).unwrap();
    let err = lane
        .apply_into(TensorOp::Linalg(weft::ops::Linalg::Qr), &[&qr], qr.clone())
        .unwrap_err();
    assert!(
        matches!(err, OpError::Tensor(TensorError::Outputs { .. })),
        "{err}"
    );
}

#[test]
fn an_op_that_fails_on_the_actor_leaves_the_other_tensors_intact() {
    let rt = runtime(1);
    let lane = rt.lane(0).unwrap();
    let x = lane
        .upload(Tensor::from_vec(vec![7i64, 8, 9], &[3]).unwrap())
        .unwrap();
    let zero = lane
        .upload(Tensor::from_vec(vec![1i64, 0, 2], &[3]).unwrap())
        .unwrap();
    let out = lane.zeros(DType::I64, &[3]).unwrap();
    let q = lane
        .apply_into(TensorOp::Binary(BinaryOp::FloorDiv), &[&x, &zero], out)
        .unwrap();
    let err = wait(lane.download(&q).unwrap()).unwrap_err();
    assert!(err.to_string().contains("division by zero"), "{err}");
    let x_back = wait_ok(lane.download(&x).unwrap());
    assert_eq!(x_back.as_slice::<i64>().unwrap(), [7, 8, 9]);
    // The actor lives on.
    let ok = lane.binary(BinaryOp::Add, &x, &zero).unwrap();
    let back = wait_ok(lane.download(&ok).unwrap());
    assert_eq!(back.as_slice::<i64>().unwrap(), [8, 8, 11]);
}

/// `alpha · op(a) @ op(b) + beta · c`, batch by batch, each element a loop.
#[allow(clippy::too_many_arguments)]
fn gemm_reference(
    a: &[c64],
    a_dims: [usize; 3],
    a_op: MatOp,
    b: &[c64],
    b_dims: [usize; 3],
    b_op: MatOp,
    c: &[c64],
    [alpha, beta]: [c64; 2],
) -> Vec<c64> {
    let read = |v: &[c64], [nb, r, k]: [usize; 3], op: MatOp, batch: usize, i: usize, j: usize| {
        let batch = if nb == 1 { 0 } else { batch };
        let x = if op.transpose {
            v[batch * r * k + j * k + i]
        } else {
            v[batch * r * k + i * k + j]
        };
        if op.conjugate {
            x.conj()
        } else {
            x
        }
    };
    let (m, k) = if a_op.transpose {
        (a_dims[2], a_dims[1])
    } else {
        (a_dims[1], a_dims[2])
    };
    let n = if b_op.transpose { b_dims[1] } else { b_dims[2] };
    let batches = a_dims[0].max(b_dims[0]);
    let mut out = Vec::new();
    for t in 0..batches {
        for i in 0..m {
            for j in 0..n {
                let mut s = c64::new(0.0, 0.0);
                for p in 0..k {
                    s += read(a, a_dims, a_op, t, i, p) * read(b, b_dims, b_op, t, p, j);
                }
                let old = c[(t * m + i) * n + j];
                out.push(
                    alpha * s
                        + if beta == c64::new(0.0, 0.0) {
                            beta
                        } else {
                            beta * old
                        },
                );
            }
        }
    }
    out
}

fn values(seed: u64, len: usize) -> Vec<c64> {
    (0..len)
        .map(|i| {
            let x = (i as u64 * 2654435761 + seed * 97) % 1000;
            c64::new(
                x as f64 / 250.0 - 2.0,
                ((x * 7) % 1000) as f64 / 500.0 - 1.0,
            )
        })
        .collect()
}

#[test]
fn gemm_into_accumulates_in_place_for_every_transpose_and_conjugation() {
    let rt = runtime(1);
    let lane = rt.lane(0).unwrap();
    let (m, k, n) = (5, 4, 6);
    let ops = [
        MatOp::NONE,
        MatOp::T,
        MatOp::H,
        MatOp {
            transpose: false,
            conjugate: true,
        },
    ];
    let (alpha, beta) = (c64::new(0.5, -1.0), c64::new(2.0, 0.25));
    for a_op in ops {
        for b_op in ops {
            // a batched (3), b broadcast (1): c is [3, m, n].
            let a_dims = if a_op.transpose { [3, k, m] } else { [3, m, k] };
            let b_dims = if b_op.transpose { [1, n, k] } else { [1, k, n] };
            let (av, bv, cv) = (values(1, 3 * m * k), values(2, k * n), values(3, 3 * m * n));
            let up = |v: &Vec<c64>, d: [usize; 3]| {
                lane.upload(Tensor::from_vec(v.clone(), &d).unwrap())
                    .unwrap()
            };
            let (a, b, c) = (up(&av, a_dims), up(&bv, b_dims), up(&cv, [3, m, n]));
            let before = address(&lane, &c);
            let fresh = lane
                .gemm(
                    Scalar::Complex(alpha),
                    &a,
                    a_op,
                    &b,
                    b_op,
                    Scalar::Complex(beta),
                    &c,
                )
                .unwrap();
            let fresh = c64s(&lane, &fresh);
            let r = lane
                .gemm_into(
                    Scalar::Complex(alpha),
                    &a,
                    a_op,
                    &b,
                    b_op,
                    Scalar::Complex(beta),
                    c,
                )
                .unwrap();
            assert_eq!(
                address(&lane, &r),
                before,
                "{a_op:?} {b_op:?}: in c's buffer"
            );
            let got = c64s(&lane, &r);
            let want = gemm_reference(&av, a_dims, a_op, &bv, b_dims, b_op, &cv, [alpha, beta]);
            for ((g, w), f) in got.iter().zip(&want).zip(&fresh) {
                assert!((g - w).norm() < 1e-12, "{a_op:?} {b_op:?}: {g} vs {w}");
                assert!(
                    (g - f).norm() < 1e-12,
                    "{a_op:?} {b_op:?}: {g} vs fresh {f}"
                );
            }
        }
    }
}

#[test]
fn gemm_into_at_beta_zero_does_not_read_c_and_a_kept_c_stays() {
    let rt = runtime(1);
    let lane = rt.lane(0).unwrap();
    let eye = lane.eye(DType::F64, 16, 16).unwrap();
    let x = lane
        .random(DType::F64, &[16, 16], weft::ops::Distribution::Normal, 3)
        .unwrap();
    let xv = f64s(&lane, &x);
    let nan = lane
        .full(DType::F64, &[16, 16], Scalar::Real(f64::NAN))
        .unwrap();
    let r = lane
        .gemm_into(
            Scalar::Real(2.0),
            &eye,
            MatOp::NONE,
            &x,
            MatOp::NONE,
            Scalar::Real(0.0),
            nan,
        )
        .unwrap();
    assert_eq!(
        f64s(&lane, &r),
        xv.iter().map(|v| 2.0 * v).collect::<Vec<_>>()
    );
    // c kept by the caller: the result is fresh and c unchanged.
    let c = lane.ones(DType::F64, &[16, 16]).unwrap();
    let kept = c.clone();
    let r = lane
        .gemm_into(
            Scalar::Real(1.0),
            &eye,
            MatOp::T,
            &x,
            MatOp::NONE,
            Scalar::Real(-1.0),
            c,
        )
        .unwrap();
    assert_eq!(
        f64s(&lane, &r),
        xv.iter().map(|v| v - 1.0).collect::<Vec<_>>()
    );
    assert!(f64s(&lane, &kept).iter().all(|&v| v == 1.0));
    assert_ne!(address(&lane, &r), address(&lane, &kept));
}

/// One rule for every accumulating op: β = 0 does not read the
/// accumulator, so its NaNs never reach the result (fresh or in place,
/// with `x` broadcast or not).
#[test]
fn axpby_and_dot_general_at_beta_zero_do_not_read_y() {
    let rt = runtime(1);
    let lane = rt.lane(0).unwrap();
    let nan = |shape: &[usize]| {
        lane.full(DType::F64, shape, Scalar::Real(f64::NAN))
            .unwrap()
    };
    let (two, zero) = (Scalar::Real(2.0), Scalar::Real(0.0));
    let row = lane
        .upload(Tensor::from_vec(vec![1.0, 2.0, 3.0], &[1, 3]).unwrap())
        .unwrap();
    let doubled_rows = [2.0, 4.0, 6.0].repeat(2);
    let fresh = lane.axpby(two, &row, zero, &nan(&[2, 3])).unwrap();
    assert_eq!(f64s(&lane, &fresh), doubled_rows);
    let into = lane.axpby_into(two, &row, zero, nan(&[2, 3])).unwrap();
    assert_eq!(f64s(&lane, &into), doubled_rows);
    let same = lane.axpby(two, &row, zero, &nan(&[1, 3])).unwrap();
    assert_eq!(f64s(&lane, &same), [2.0, 4.0, 6.0]);
    // [2, 3] · [3] contracted: [14, 32], doubled.
    let m = lane
        .upload(Tensor::from_vec((1..=6).map(f64::from).collect(), &[2, 3]).unwrap())
        .unwrap();
    let v = lane
        .upload(Tensor::from_vec(vec![1.0, 2.0, 3.0], &[3]).unwrap())
        .unwrap();
    let dims = DotGeneral {
        batch: Vec::new(),
        contract: vec![(1, 0)],
        conj_lhs: false,
        conj_rhs: false,
    };
    let r = lane
        .dot_general_into(two, &m, &v, &dims, zero, nan(&[2]))
        .unwrap();
    assert_eq!(f64s(&lane, &r), [28.0, 64.0]);
}

#[test]
fn axpby_into_accumulates_a_broadcast_x_and_refuses_a_y_it_would_grow() {
    let rt = runtime(1);
    let lane = rt.lane(0).unwrap();
    let row = lane
        .upload(Tensor::from_vec(vec![1.0, 2.0, 3.0], &[1, 3]).unwrap())
        .unwrap();
    let y = lane
        .upload(Tensor::from_vec((0..12).map(f64::from).collect(), &[4, 3]).unwrap())
        .unwrap();
    let fresh = f64s(
        &lane,
        &lane
            .axpby(Scalar::Real(0.5), &row, Scalar::Real(-2.0), &y)
            .unwrap(),
    );
    let r = lane
        .axpby_into(Scalar::Real(0.5), &row, Scalar::Real(-2.0), y)
        .unwrap();
    let want: Vec<f64> = (0..12)
        .map(|i| 0.5 * [1.0, 2.0, 3.0][i % 3] - 2.0 * i as f64)
        .collect();
    assert_eq!(f64s(&lane, &r), want);
    assert_eq!(f64s(&lane, &r), fresh, "bit for bit the fresh axpby");
    let err = lane
        .axpby_into(Scalar::Real(1.0), &r, Scalar::Real(1.0), row)
        .unwrap_err();
    assert!(
        matches!(err, OpError::Tensor(TensorError::Into { .. })),
        "{err}"
    );
}

#[test]
fn dot_general_into_conjugates_contracts_and_accumulates() {
    let rt = runtime(1);
    let lane = rt.lane(0).unwrap();
    // lhs [2, 3, 4] · rhs [2, 4, 5] over batch (0, 0), contract (2, 1).
    let (lv, rv, cv) = (values(4, 24), values(5, 40), values(6, 30));
    let lhs = lane
        .upload(Tensor::from_vec(lv.clone(), &[2, 3, 4]).unwrap())
        .unwrap();
    let rhs = lane
        .upload(Tensor::from_vec(rv.clone(), &[2, 4, 5]).unwrap())
        .unwrap();
    let c = lane
        .upload(Tensor::from_vec(cv.clone(), &[2, 3, 5]).unwrap())
        .unwrap();
    let dims = DotGeneral {
        batch: vec![(0, 0)],
        contract: vec![(2, 1)],
        conj_lhs: true,
        conj_rhs: false,
    };
    let r = lane
        .dot_general_into(Scalar::Real(2.0), &lhs, &rhs, &dims, Scalar::Real(1.0), c)
        .unwrap();
    let got = c64s(&lane, &r);
    for t in 0..2 {
        for i in 0..3 {
            for j in 0..5 {
                let mut s = c64::new(0.0, 0.0);
                for p in 0..4 {
                    s += lv[(t * 3 + i) * 4 + p].conj() * rv[(t * 4 + p) * 5 + j];
                }
                let at = (t * 3 + i) * 5 + j;
                let want = s * 2.0 + cv[at];
                assert!(
                    (got[at] - want).norm() < 1e-12,
                    "{at}: {} vs {want}",
                    got[at]
                );
            }
        }
    }
    let wrong = lane.zeros(DType::C64, &[2, 5, 3]).unwrap();
    let err = lane
        .dot_general_into(
            Scalar::Real(1.0),
            &lhs,
            &rhs,
            &dims,
            Scalar::Real(0.0),
            wrong,
        )
        .unwrap_err();
    assert!(
        matches!(err, OpError::Tensor(TensorError::Into { .. })),
        "{err}"
    );
}
