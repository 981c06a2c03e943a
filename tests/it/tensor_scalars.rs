//! Host values out of resident tensors: `item` and `items` read what the
//! ops computed in one op, refuse at the call what cannot be a scalar of
//! the asked type, and lose nothing; the truncated SVD reads its values to
//! choose its rank, in one round trip.

use weft::ops::{CreateOps, ElementwiseOps, LinalgOps, ReduceOps};
use weft::{
    c64, error::TensorError, ops::Truncation, DType, OpError, Runtime, Tensor, TicketError,
};
use weft_tests::{wait, wait_ok};

/// Ops submitted on every lane of the runtime so far.
fn submitted(rt: &Runtime) -> u64 {
    (rt.stats().actors.iter())
        .flat_map(|a| &a.lanes)
        .map(|l| l.ops.submitted)
        .sum()
}

#[test]
fn item_and_items_read_the_computed_scalars_in_one_op() {
    let rt = Runtime::builder().split(1).build().expect("runtime");
    let lane = rt.lane(0).expect("lane");
    let x = lane
        .upload(Tensor::from_vec(vec![3.0f64, 4.0], &[2]).unwrap())
        .unwrap();
    let squared = lane.dot(&x, &x).unwrap();
    let total = lane.sum_all(&x).unwrap();
    let one_by_one = lane
        .upload(Tensor::from_vec(vec![-1.5f64], &[1, 1]).unwrap())
        .unwrap();
    assert_eq!(wait_ok(lane.item::<f64>(&squared).unwrap()), 25.0);
    assert_eq!(wait_ok(lane.item::<f64>(&one_by_one).unwrap()), -1.5);
    let before = submitted(&rt);
    let ticket = lane.items::<f64>(&[&total, &squared, &one_by_one]).unwrap();
    assert_eq!(submitted(&rt) - before, 1, "three scalars, one op");
    assert_eq!(wait_ok(ticket), [7.0, 25.0, -1.5]);
    let flag = lane.upload(Tensor::scalar(true)).unwrap();
    assert!(wait_ok(lane.item::<bool>(&flag).unwrap()));
    assert_eq!(wait_ok(lane.items::<f64>(&[]).unwrap()), Vec::<f64>::new());
    rt.shutdown().expect("shutdown");
}

#[test]
fn what_is_not_a_scalar_of_the_type_is_refused_at_the_call_and_loses_nothing() {
    let rt = Runtime::builder().split(1).build().expect("runtime");
    let other = weft_tests::unpinned_pair().build().expect("runtime");
    let lane = rt.lane(0).expect("lane");
    let v = lane.ones(DType::F64, &[2, 3]).unwrap();
    let s = lane.upload(Tensor::scalar(2.0f32)).unwrap();
    let empty = lane.zeros(DType::F64, &[0]).unwrap();
    let before = submitted(&rt);
    let err = lane.item::<f64>(&v).unwrap_err();
    assert!(
        matches!(
            &err,
            OpError::Tensor(TensorError::NotOneElement { elements: 6, .. })
        ),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "item: a tensor of shape [2, 3] holds 6 elements, not one"
    );
    let err = lane.item::<f64>(&empty).unwrap_err();
    assert!(err.to_string().contains("holds 0 elements"), "{err}");
    let err = lane.items::<f64>(&[&s]).unwrap_err();
    assert!(
        matches!(
            err,
            OpError::Tensor(TensorError::DType {
                expected: DType::F64,
                got: DType::F32
            })
        ),
        "{err:?}"
    );
    let far = other
        .lane(1)
        .unwrap()
        .upload(Tensor::scalar(1.0f64))
        .unwrap();
    let err = lane.item::<f64>(&far).unwrap_err();
    assert!(matches!(err, OpError::ForeignHandle { .. }), "{err:?}");
    let near = other.lane(1).unwrap();
    let err = near.item::<f64>(&other.lane(0).unwrap().upload(Tensor::scalar(1.0)).unwrap());
    assert!(matches!(err, Err(OpError::WrongDomain { .. })), "{err:?}");
    assert_eq!(submitted(&rt), before, "nothing submitted");
    // Nothing lost: the tensors are there and read.
    assert_eq!(wait_ok(lane.item::<f32>(&s).unwrap()), 2.0);
    assert_eq!(wait_ok(lane.download(&v).unwrap()).len(), 6);
    other.shutdown().expect("shutdown");
    rt.shutdown().expect("shutdown");
}

#[test]
fn an_item_of_a_failed_op_fails_its_ticket() {
    let rt = Runtime::builder().split(1).build().expect("runtime");
    let lane = rt.lane(0).expect("lane");
    let x = lane.upload(Tensor::scalar(1.0f64)).unwrap();
    let good = lane.upload(Tensor::scalar(2.0f64)).unwrap();
    let id = x.id();
    wait_ok(
        lane.run(move |e| e.store_mut().remove(id).is_some())
            .unwrap(),
    );
    let bad = lane.add(&x, &x).expect("submitted");
    let err = wait(lane.items::<f64>(&[&good, &bad]).unwrap()).unwrap_err();
    assert!(matches!(err, TicketError::DependencyFailed(_)), "{err:?}");
    assert_eq!(wait_ok(lane.item::<f64>(&good).unwrap()), 2.0);
    rt.shutdown().expect("shutdown");
}

/// `u · diag(s) · vh` of downloaded f64 factors, row-major `[m, n]`.
fn rebuilt(u: &Tensor, s: &Tensor, vh: &Tensor) -> Vec<f64> {
    let (m, r, n) = (u.shape()[0], s.len(), vh.shape()[1]);
    let (u, s, vh) = (
        u.as_slice::<f64>().unwrap(),
        s.as_slice::<f64>().unwrap(),
        vh.as_slice::<f64>().unwrap(),
    );
    let mut a = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            a[i * n + j] = (0..r).map(|k| u[i * r + k] * s[k] * vh[k * n + j]).sum();
        }
    }
    a
}

#[test]
fn a_truncated_svd_keeps_the_rank_its_values_ask_for() {
    let rt = Runtime::builder().split(1).build().expect("runtime");
    let lane = rt.lane(0).expect("lane");
    // Rank 3: an [8, 3] by [3, 6] product.
    let values = |n: usize, seed: u64| -> Vec<f64> {
        let mut rng = weft_tests::Rng(seed);
        (0..n)
            .map(|_| rng.below(1000) as f64 / 500.0 - 1.0)
            .collect()
    };
    let b = lane
        .upload(Tensor::from_vec(values(24, 1), &[8, 3]).unwrap())
        .unwrap();
    let c = lane
        .upload(Tensor::from_vec(values(18, 2), &[3, 6]).unwrap())
        .unwrap();
    let a = lane.matmul(&b, &c).unwrap();
    let whole = wait_ok(lane.download(&a).unwrap());
    let cut = Truncation {
        max_rank: 6,
        cutoff: 1e-20,
    };
    let t = lane.svd_truncated(&a, cut).expect("truncated");
    assert_eq!(t.rank, 3);
    assert_eq!(
        (t.u.shape(), t.s.shape(), t.vh.shape()),
        (&[8, 3][..], &[3][..], &[3, 6][..])
    );
    assert!(t.discarded < 1e-20, "{}", t.discarded);
    let [u, s, vh] = [&t.u, &t.s, &t.vh].map(|h| wait_ok(lane.download(h).unwrap()));
    for (got, want) in rebuilt(&u, &s, &vh)
        .iter()
        .zip(whole.as_slice::<f64>().unwrap())
    {
        assert!((got - want).abs() < 1e-12, "{got} vs {want}");
    }
    // Bounded by max_rank: the weight dropped is the third value's.
    let (_, all, _) = lane.svd(&a).unwrap();
    let all = wait_ok(lane.download(&all).unwrap())
        .into_vec::<f64>()
        .unwrap();
    let total: f64 = all.iter().map(|v| v * v).sum();
    let two = lane
        .svd_truncated(&a, Truncation::rank(2))
        .expect("truncated");
    assert_eq!((two.rank, two.u.shape()), (2, &[8, 2][..]));
    let want = (all[2] * all[2] + all[3..].iter().map(|v| v * v).sum::<f64>()) / total;
    assert!(
        (two.discarded - want).abs() < 1e-15,
        "{} vs {want}",
        two.discarded
    );
    let kept = wait_ok(lane.download(&two.s).unwrap())
        .into_vec::<f64>()
        .unwrap();
    assert_eq!(kept, all[..2]);
    // Complex and f32 operands: the values are real.
    let z = lane
        .upload(Tensor::from_vec(vec![c64::new(1.0, 1.0); 4], &[2, 2]).unwrap())
        .unwrap();
    let tz = lane
        .svd_truncated(
            &z,
            Truncation {
                max_rank: 2,
                cutoff: 1e-20,
            },
        )
        .expect("truncated");
    assert_eq!(
        (tz.rank, tz.s.dtype(), tz.u.dtype()),
        (1, DType::F64, DType::C64)
    );
    let f = lane
        .upload(Tensor::from_vec(vec![1.0f32, 0.0, 0.0, 1e-3], &[2, 2]).unwrap())
        .unwrap();
    let tf = lane
        .svd_truncated(
            &f,
            Truncation {
                max_rank: 2,
                cutoff: 1e-5,
            },
        )
        .expect("truncated");
    assert_eq!((tf.rank, tf.s.dtype()), (1, DType::F32));
    assert!(
        (tf.discarded - 1e-6 / (1.0 + 1e-6)).abs() < 1e-9,
        "{}",
        tf.discarded
    );
    rt.shutdown().expect("shutdown");
}

#[test]
fn a_truncation_out_of_range_is_refused_by_name() {
    let rt = Runtime::builder().split(1).build().expect("runtime");
    let lane = rt.lane(0).expect("lane");
    let a = lane.eye(DType::F64, 3, 3).unwrap();
    for (cut, named) in [
        (
            Truncation {
                max_rank: 0,
                cutoff: 0.0,
            },
            "max_rank is 0",
        ),
        (
            Truncation {
                max_rank: 2,
                cutoff: 1.0,
            },
            "cutoff is 1",
        ),
        (
            Truncation {
                max_rank: 2,
                cutoff: f64::NAN,
            },
            "cutoff is NaN",
        ),
        (
            Truncation {
                max_rank: 2,
                cutoff: -0.5,
            },
            "cutoff is -0.5",
        ),
    ] {
        let err = lane.svd_truncated(&a, cut).unwrap_err();
        assert!(
            matches!(
                &err,
                TicketError::Op(OpError::Tensor(TensorError::Argument { .. }))
            ),
            "{err:?}"
        );
        assert!(err.to_string().contains(named), "{err}");
    }
    let v = lane.ones(DType::F64, &[3]).unwrap();
    assert!(matches!(
        lane.svd_truncated(&v, Truncation::rank(1)),
        Err(TicketError::Op(OpError::Tensor(_)))
    ));
    // The identity keeps all three: the same handles come back, sliced
    // by nothing.
    let t = lane.svd_truncated(&a, Truncation::rank(3)).expect("whole");
    assert_eq!((t.rank, t.discarded), (3, 0.0));
    rt.shutdown().expect("shutdown");
}
