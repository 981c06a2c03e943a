//! Tensor ops through lanes: handles returned at submission, ordering by
//! events, checks at the call site, failures carried to dependents, and
//! tensors freed when their handles are gone.

use weft::ops::{CreateOps, ElementwiseOps, LinalgOps, ReduceOps, StructuralOps};
use weft::{
    actor::FailureCause, c64, error::TensorError, DType, OpError, Place, Runtime, Tensor,
    TicketError,
};
use weft_tests::{wait, wait_ok, Hold};

fn one_domain() -> Runtime {
    Runtime::builder().split(1).build().expect("runtime")
}

fn matrix(rows: usize, cols: usize, seed: f64) -> Tensor {
    let values = (0..rows * cols)
        .map(|i| ((i as f64) * 0.3 + seed).sin())
        .collect();
    Tensor::from_vec::<f64>(values, &[rows, cols]).expect("fits")
}

/// Reference: the triple loop.
fn matmul_ref(a: &Tensor, b: &Tensor) -> Vec<f64> {
    let (m, k, n) = (a.shape()[0], a.shape()[1], b.shape()[1]);
    let (va, vb) = (a.as_slice::<f64>().unwrap(), b.as_slice::<f64>().unwrap());
    let mut c = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            c[i * n + j] = (0..k).map(|p| va[i * k + p] * vb[p * n + j]).sum();
        }
    }
    c
}

fn close(got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() <= 1e-12 * (1.0 + w.abs()), "{g} vs {w}");
    }
}

#[test]
fn smoke_pipeline_submitted_without_waiting() {
    let rt = one_domain();
    let lane = rt.lane(0).expect("lane");
    let (a, b, bias) = (matrix(6, 4, 0.1), matrix(4, 5, 0.7), matrix(1, 5, 2.0));
    let ha = lane.upload(a.clone()).expect("upload");
    let hb = lane.upload(b.clone()).expect("upload");
    let hbias = lane.upload(bias.clone()).expect("upload");
    let prod = lane.matmul(&ha, &hb).expect("matmul");
    assert_eq!(prod.shape(), [6, 5]);
    let out = lane.add(&prod, &hbias).expect("add");
    let got = wait_ok(lane.download(&out).expect("download"));
    let bias = bias.as_slice::<f64>().unwrap();
    let want: Vec<f64> = matmul_ref(&a, &b)
        .iter()
        .enumerate()
        .map(|(i, x)| x + bias[i % 5])
        .collect();
    close(got.as_slice::<f64>().unwrap(), &want);
}

#[test]
fn consumer_on_another_lane_waits_for_its_producer() {
    let rt = one_domain();
    let producer = rt.lane(0).expect("lane");
    let consumer = rt.lane(0).expect("lane");
    let hold = Hold::on(&producer);
    let x = producer.upload(matrix(3, 3, 0.0)).expect("upload");
    let y = producer.mul(&x, &x).expect("mul");
    // The consumer lane is free, but its op is ordered after `y`.
    let z = consumer.add(&y, &x).expect("add");
    let ticket = consumer.download(&z).expect("download");
    assert!(!ticket.is_ready());
    wait_ok(hold.release());
    let got = wait_ok(ticket);
    let xs = matrix(3, 3, 0.0);
    let want: Vec<f64> = xs
        .as_slice::<f64>()
        .unwrap()
        .iter()
        .map(|v| v * v + v)
        .collect();
    close(got.as_slice::<f64>().unwrap(), &want);
}

#[test]
fn complex_matmul() {
    let rt = one_domain();
    let lane = rt.lane(0).expect("lane");
    let a = Tensor::from_vec(vec![c64::new(1.0, 1.0), c64::new(0.0, 2.0)], &[1, 2]).unwrap();
    let b = Tensor::from_vec(vec![c64::new(2.0, 0.0), c64::new(0.0, -1.0)], &[2, 1]).unwrap();
    let (ha, hb) = (lane.upload(a).unwrap(), lane.upload(b).unwrap());
    let got = wait_ok(lane.download(&lane.matmul(&ha, &hb).unwrap()).unwrap());
    // (1+i)*2 + (2i)(-i) = 2+2i + 2
    assert_eq!(got.as_slice::<c64>().unwrap(), &[c64::new(4.0, 2.0)]);
}

#[test]
fn bad_input_is_refused_at_the_call_site_and_loses_nothing() {
    let rt = one_domain();
    let lane = rt.lane(0).expect("lane");
    let a = lane.upload(matrix(2, 3, 0.0)).unwrap();
    let b = lane.upload(matrix(4, 2, 0.0)).unwrap();
    let f32s = lane
        .upload(Tensor::from_vec(vec![1.0f32; 6], &[2, 3]).unwrap())
        .unwrap();
    let err = lane.add(&a, &b).unwrap_err();
    assert_eq!(
        err.to_string(),
        "add: shapes [2, 3] and [4, 2] do not broadcast (axis 0 from the right: 3 vs 2)"
    );
    let err = lane.matmul(&a, &a).unwrap_err();
    assert!(
        matches!(err, OpError::Tensor(TensorError::MatmulShapes { .. })),
        "{err}"
    );
    assert!(err.to_string().contains("[2, 3] and [2, 3]"), "{err}");
    let err = lane.mul(&a, &f32s).unwrap_err();
    assert_eq!(
        err.to_string(),
        "mul: operands have different element types f64 and f32"
    );

    let other = one_domain();
    let foreign = other.lane(0).unwrap().upload(matrix(2, 3, 0.0)).unwrap();
    let err = lane.add(&a, &foreign).unwrap_err();
    assert!(
        matches!(err, OpError::ForeignHandle { op: "add", .. }),
        "{err}"
    );

    // Nothing resident was lost.
    let got = wait_ok(lane.download(&a).unwrap());
    assert_eq!(got, matrix(2, 3, 0.0));
}

/// Two domains on any machine: a layout over two CPU ids, unpinned.
fn two_domains_unpinned() -> Runtime {
    weft_tests::unpinned_pair().build().expect("runtime")
}

#[test]
fn wrong_domain_is_refused() {
    let rt = two_domains_unpinned();
    let h = rt.lane(0).unwrap().upload(matrix(2, 2, 0.0)).unwrap();
    let err = rt.lane(1).unwrap().add(&h, &h).unwrap_err();
    assert_eq!(
        err.to_string(),
        "add: the tensor lives in CPU domain 0, this lane feeds CPU domain 1"
    );
    let err = rt.lane(1).unwrap().download(&h).unwrap_err();
    assert!(
        matches!(
            err,
            OpError::WrongDomain {
                handle: Place::Cpu(0),
                lane: Place::Cpu(1),
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn transfers_to_places_the_runtime_does_not_run_are_refused() {
    let rt = two_domains_unpinned();
    let lane = rt.lane(0).unwrap();
    let h = lane.upload(matrix(2, 2, 0.0)).unwrap();
    let err = lane.transfer(&h, Place::Cuda(0)).unwrap_err();
    assert!(
        matches!(&err, OpError::NoSuchDevice { device: 0, running } if running.is_empty()),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "no CUDA device 0 in this runtime (it runs [])"
    );
    let err = lane.transfer(&h, 5).unwrap_err();
    assert!(
        matches!(
            err,
            OpError::NoSuchDomain {
                domain: 5,
                count: 2
            }
        ),
        "{err:?}"
    );
    // Nothing was lost: the tensor is still there, and a transfer to its
    // own place is the same handle.
    assert_eq!(lane.transfer(&h, Place::Cpu(0)).unwrap().id(), h.id());
    let back = lane.download(&h).unwrap().wait().unwrap();
    assert_eq!(back.as_slice::<f64>().unwrap().len(), 4);
}

#[test]
fn a_failed_op_fails_exactly_its_dependents() {
    let rt = one_domain();
    let lane = rt.lane(0).expect("lane");
    let x = lane.upload(matrix(2, 2, 0.0)).unwrap();
    let y = lane.upload(matrix(2, 2, 1.0)).unwrap();
    // Take `x` out of the store behind its handle's back: the next op that
    // reads it fails on the actor, not at the call site.
    let id = x.id();
    wait_ok(
        lane.run(move |e| e.store_mut().remove(id).is_some())
            .unwrap(),
    );
    let bad = lane.add(&x, &y).expect("submitted: shapes are fine");
    let worse = lane.mul(&bad, &y).expect("submitted");
    let fine = lane.mul(&y, &y).expect("submitted");
    let err = wait(lane.download(&worse).unwrap()).unwrap_err();
    let first = err.dependency().expect("a dependency failure");
    assert_eq!(first.op, "add");
    assert!(
        matches!(&first.cause, FailureCause::Error(m) if m.contains("not resident")),
        "{first}"
    );
    let err = wait(lane.download(&bad).unwrap()).unwrap_err();
    assert!(matches!(err, TicketError::DependencyFailed(_)), "{err:?}");
    // Ops not depending on the failure, and resident inputs, are intact.
    assert!(wait(lane.download(&fine).unwrap()).is_ok());
    assert_eq!(wait_ok(lane.download(&y).unwrap()), matrix(2, 2, 1.0));
}

#[test]
fn dropped_handles_free_their_tensors() {
    let rt = one_domain();
    let lane = rt.lane(0).expect("lane");
    let keep = lane.upload(matrix(4, 4, 0.0)).unwrap();
    let (base, base_bytes) = wait_ok(lane.resident().unwrap());
    assert_eq!((base, base_bytes), (1, 128));
    {
        // Handles dropped before their producers even run.
        let hold = Hold::on(&lane);
        for i in 0..50 {
            let t = lane.upload(matrix(4, 4, i as f64)).unwrap();
            let u = lane.add(&t, &keep).expect("add");
            drop((t, u));
        }
        wait_ok(hold.release());
    }
    // All freed: the temporaries are gone, `keep` is still there.
    assert_eq!(wait_ok(lane.resident().unwrap()), (1, 128));
    assert_eq!(wait_ok(lane.download(&keep).unwrap()), matrix(4, 4, 0.0));
}

#[test]
fn freed_buffers_are_reused_and_memory_stays_bounded() {
    // A long stream of ops whose results are dropped as they go: the
    // domain's buffer pool serves the outputs from the freed inputs, and
    // neither the store nor the pool grows with the length of the stream.
    let cap = 1 << 20;
    let rt = Runtime::builder()
        .split(1)
        .buffer_cap(cap)
        .build()
        .expect("runtime");
    let lane = rt.lane(0).expect("lane");
    let x = lane.upload(matrix(64, 64, 1.0)).unwrap();
    let mut acc = lane.zeros(DType::F64, &[64, 64]).unwrap();
    let mut peak = 0;
    for round in 0..20 {
        for _ in 0..100 {
            let y = lane.mul(&x, &x).unwrap();
            acc = lane.add(&acc, &y).unwrap();
        }
        let memory = wait_ok(lane.memory().unwrap());
        // x, acc, and at most the few temporaries of ops still queued.
        assert!(memory.tensors <= 4, "round {round}: {memory:?}");
        assert!(memory.buffers.pooled_bytes <= cap, "{memory:?}");
        peak = peak.max(memory.buffers.peak_bytes);
    }
    let memory = wait_ok(lane.memory().unwrap());
    let b = memory.buffers;
    assert!(b.hits >= 3000, "most of 4000 outputs reuse a buffer: {b:?}");
    assert!(b.misses <= 100, "{b:?}");
    assert!(peak <= cap);
    // The values are right: acc = 2000 · x².
    let expect: Vec<f64> = matrix(64, 64, 1.0)
        .as_slice::<f64>()
        .unwrap()
        .iter()
        .map(|v| 2000.0 * v * v)
        .collect();
    let got = wait_ok(lane.download(&acc).unwrap());
    for (g, e) in got.as_slice::<f64>().unwrap().iter().zip(&expect) {
        assert!((g - e).abs() <= 1e-9 * e.abs().max(1.0), "{g} vs {e}");
    }
}

#[test]
fn a_zero_buffer_cap_keeps_nothing() {
    let rt = Runtime::builder()
        .split(1)
        .buffer_cap(0)
        .build()
        .expect("runtime");
    let lane = rt.lane(0).expect("lane");
    let x = lane.upload(matrix(32, 32, 0.5)).unwrap();
    for _ in 0..50 {
        drop(lane.add(&x, &x).unwrap());
    }
    let b = wait_ok(lane.memory().unwrap()).buffers;
    assert_eq!(
        (b.cap_bytes, b.hits, b.kept, b.pooled_bytes),
        (0, 0, 0, 0),
        "{b:?}"
    );
    assert!(b.released >= 49, "{b:?}");
}

/// What the engine holds, seen from a closure op: unlike every tensor op,
/// it frees nothing before it looks.
fn engine_view(lane: &weft::Lane) -> (usize, usize) {
    wait_ok(
        lane.run(|engine: &mut weft::CpuEngine| {
            (engine.store().len(), engine.buffer_stats().pooled_bytes)
        })
        .unwrap(),
    )
}

#[test]
fn a_tensor_dropped_on_an_idle_domain_is_freed_without_a_tensor_op() {
    // Larger than the pool's cap: freeing it gives its memory back.
    let rt = Runtime::builder()
        .split(1)
        .buffer_cap(1 << 20)
        .build()
        .expect("runtime");
    let lane = rt.lane(0).expect("lane");
    let big = lane.zeros(DType::F64, &[1024, 1024]).unwrap();
    assert_eq!(wait_ok(lane.resident().unwrap()), (1, 8 << 20));
    drop(big);
    // Only closure ops from here on: the release itself wakes the actor.
    for _ in 0..100 {
        assert_eq!(engine_view(&lane), (0, 0), "freed before the next op");
    }
    // The same on a domain that has been idle for a while.
    let big = lane.zeros(DType::F64, &[1024, 1024]).unwrap();
    assert_eq!(wait_ok(lane.resident().unwrap()).0, 1);
    std::thread::sleep(std::time::Duration::from_millis(30));
    drop(big);
    std::thread::sleep(std::time::Duration::from_millis(30));
    assert_eq!(engine_view(&lane), (0, 0));
}

#[test]
fn an_idle_domain_lets_its_buffer_pool_go() {
    use std::time::{Duration, Instant};
    let rt = Runtime::builder()
        .split(1)
        .idle_trim(Duration::from_millis(100))
        .build()
        .expect("runtime");
    let lane = rt.lane(0).expect("lane");
    let x = lane.zeros(DType::F64, &[256, 256]).unwrap();
    drop(lane.add(&x, &x).unwrap());
    drop(x);
    // A memory report counts no tensor whose handles are all gone, even
    // those the add's spent handles held a moment ago.
    let memory = wait_ok(lane.memory().unwrap());
    assert_eq!(memory.tensors, 0);
    let pooled = memory.buffers.pooled_bytes;
    assert!(pooled >= 2 * (512 << 10), "both buffers kept: {pooled}");
    // Each look is an op, which restarts the idle clock: look seldom.
    let deadline = Instant::now() + weft_tests::LIMIT;
    loop {
        std::thread::sleep(Duration::from_millis(250));
        let (_, pooled) = engine_view(&lane);
        if pooled == 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the pool still holds {pooled} bytes"
        );
    }
    let b = wait_ok(lane.memory().unwrap()).buffers;
    assert!(b.released >= 2, "trimmed buffers count as released: {b:?}");

    // Never, when asked so.
    let rt = Runtime::builder()
        .split(1)
        .idle_trim(Duration::MAX)
        .build()
        .expect("runtime");
    let lane = rt.lane(0).expect("lane");
    drop(lane.zeros(DType::F64, &[256, 256]).unwrap());
    assert!(wait_ok(lane.memory().unwrap()).buffers.pooled_bytes > 0);
    std::thread::sleep(Duration::from_millis(300));
    assert!(engine_view(&lane).1 > 0, "kept with idle_trim(MAX)");
}

#[test]
fn trim_lets_the_pool_go_on_demand() {
    let rt = one_domain();
    let lane = rt.lane(0).expect("lane");
    drop(lane.zeros(DType::F64, &[128, 128]).unwrap());
    let pooled = wait_ok(lane.memory().unwrap()).buffers.pooled_bytes;
    assert!(pooled >= 128 * 128 * 8, "{pooled}");
    assert_eq!(wait_ok(lane.trim().unwrap()), pooled);
    assert_eq!(engine_view(&lane), (0, 0));
    assert_eq!(wait_ok(lane.trim().unwrap()), 0);
}

#[test]
fn ops_after_shutdown_are_refused() {
    let rt = one_domain();
    let lane = rt.lane(0).expect("lane");
    let h = lane.upload(matrix(1, 1, 0.0)).unwrap();
    rt.shutdown().expect("joined");
    let err = lane.add(&h, &h).unwrap_err();
    assert!(matches!(err, OpError::Closed(_)), "{err}");
    assert!(matches!(
        lane.upload(matrix(1, 1, 0.0)),
        Err(OpError::Closed(_))
    ));
}

#[test]
fn unary_ops_and_generic_apply() {
    let rt = one_domain();
    let lane = rt.lane(0).expect("lane");
    let x = matrix(3, 4, 0.5);
    let hx = lane.upload(x.clone()).unwrap();
    let e = lane.unary(weft::ops::UnaryOp::Exp, &hx).unwrap();
    let back = lane.unary(weft::ops::UnaryOp::Log, &e).unwrap();
    let got = wait_ok(lane.download(&back).unwrap());
    close(got.as_slice::<f64>().unwrap(), x.as_slice::<f64>().unwrap());
    let abs = wait_ok(
        lane.download(&lane.unary(weft::ops::UnaryOp::Abs, &hx).unwrap())
            .unwrap(),
    );
    let want: Vec<f64> = x
        .as_slice::<f64>()
        .unwrap()
        .iter()
        .map(|v| v.abs())
        .collect();
    assert_eq!(abs.as_slice::<f64>().unwrap(), &want[..]);

    let err = lane.apply(weft::ops::TensorOp::Matmul, &[&hx]).unwrap_err();
    assert_eq!(err.to_string(), "matmul takes 2 input(s), got 1");
    let z = lane
        .upload(Tensor::from_vec(vec![c64::new(3.0, 4.0)], &[1]).unwrap())
        .unwrap();
    let m = lane.unary(weft::ops::UnaryOp::Abs, &z).unwrap();
    assert_eq!(
        m.dtype(),
        weft::DType::F64,
        "abs of complex is real, known at submission"
    );
    assert_eq!(
        wait_ok(lane.download(&m).unwrap())
            .as_slice::<f64>()
            .unwrap(),
        &[5.0]
    );
}

#[test]
fn creation_reduction_and_structure_through_lanes() {
    use weft::{ops::ReduceOp, DType, Scalar};
    let rt = one_domain();
    let lane = rt.lane(0).expect("lane");
    let r = lane.arange(DType::F64, 0.0, 1.0, 12).unwrap();
    let m = lane.reshape(&r, &[3, 4]).unwrap();
    let t = lane.transpose(&m).unwrap();
    assert_eq!(t.shape(), [4, 3]);
    let rows = lane.reduce(ReduceOp::Sum, &t, &[0], false).unwrap();
    assert_eq!(rows.shape(), [3]);
    assert_eq!(
        wait_ok(lane.download(&rows).unwrap())
            .as_slice::<f64>()
            .unwrap(),
        &[6.0, 22.0, 38.0]
    );
    let total = lane.sum_all(&m).unwrap();
    assert_eq!(total.shape(), [] as [usize; 0]);
    assert_eq!(
        wait_ok(lane.download(&total).unwrap())
            .as_slice::<f64>()
            .unwrap(),
        &[66.0]
    );

    let i = lane.eye(DType::F64, 4, 4).unwrap();
    let same = lane
        .matmul(&t, &lane.eye(DType::F64, 3, 3).unwrap())
        .unwrap();
    assert_eq!(
        wait_ok(lane.download(&same).unwrap()),
        wait_ok(lane.download(&t).unwrap())
    );
    let twos = lane.full(DType::F64, &[4, 4], Scalar::Real(2.0)).unwrap();
    let d = lane.mul(&i, &twos).unwrap();
    let trace = lane.sum_all(&d).unwrap();
    assert_eq!(
        wait_ok(lane.download(&trace).unwrap())
            .as_slice::<f64>()
            .unwrap(),
        &[8.0]
    );

    let err = lane.reduce(ReduceOp::Sum, &m, &[2], false).unwrap_err();
    assert_eq!(
        err.to_string(),
        "sum: axis 2 of a rank-2 tensor is out of range"
    );
    let err = lane.reshape(&m, &[5, 2]).unwrap_err();
    assert!(err.to_string().contains("cannot reshape [3, 4]"), "{err}");
    let err = lane.transpose(&r).unwrap_err();
    assert!(
        matches!(
            err,
            OpError::Tensor(TensorError::Permutation { rank: 1, .. })
        ),
        "{err}"
    );
    let err = lane.arange(DType::C64, 0.0, 1.0, 3).unwrap_err();
    assert_eq!(err.to_string(), "arange is not defined for c64 tensors");
    let err = lane.zeros(DType::F32, &[usize::MAX, 4]).unwrap_err();
    assert!(
        matches!(err, OpError::Tensor(TensorError::TooLarge { .. })),
        "{err}"
    );
}

#[test]
fn same_seed_same_data_on_every_domain() {
    use weft::{ops::Distribution, DType};
    let rt = two_domains_unpinned();
    let draw = |d: usize| {
        let lane = rt.lane(d).unwrap();
        let h = lane
            .random(DType::C64, &[257, 3], Distribution::Normal, 2026)
            .unwrap();
        wait_ok(lane.download(&h).unwrap())
    };
    assert_eq!(draw(0), draw(1));
}

#[test]
fn transfer_between_domains_without_waiting() {
    let rt = two_domains_unpinned();
    let (zero, one) = (rt.lane(0).unwrap(), rt.lane(1).unwrap());
    let hold = Hold::on(&zero);
    let a = zero.upload(matrix(3, 3, 0.2)).unwrap();
    let a2 = zero.mul(&a, &a).unwrap();
    // Submitted while domain 0 is still busy: nobody waits.
    let moved = zero.transfer(&a2, 1).unwrap();
    assert_eq!((moved.domain(), moved.shape()), (1, &[3, 3][..]));
    let b = one.upload(matrix(3, 3, 1.0)).unwrap();
    let c = one.add(&moved, &b).unwrap();
    let back = one.transfer(&c, 0).unwrap();
    let ticket = zero.download(&back).unwrap();
    assert!(!ticket.is_ready());
    wait_ok(hold.release());
    let got = wait_ok(ticket);
    let (av, bv) = (matrix(3, 3, 0.2), matrix(3, 3, 1.0));
    let want: Vec<f64> = av
        .as_slice::<f64>()
        .unwrap()
        .iter()
        .zip(bv.as_slice::<f64>().unwrap())
        .map(|(x, y)| x * x + y)
        .collect();
    close(got.as_slice::<f64>().unwrap(), &want);
    // Using the moved handle on its old domain is refused.
    let err = zero.add(&moved, &a).unwrap_err();
    assert!(
        matches!(
            err,
            OpError::WrongDomain {
                handle: Place::Cpu(1),
                lane: Place::Cpu(0),
                ..
            }
        ),
        "{err}"
    );
    let err = zero.transfer(&a, 9).unwrap_err();
    assert!(
        matches!(
            err,
            OpError::NoSuchDomain {
                domain: 9,
                count: 2
            }
        ),
        "{err}"
    );
}

#[test]
fn with_reads_resident_tensors() {
    let rt = one_domain();
    let lane = rt.lane(0).expect("lane");
    let a = lane.upload(matrix(2, 2, 0.0)).unwrap();
    let b = lane.ones(weft::DType::F64, &[2, 2]).unwrap();
    let dims = wait_ok(
        lane.with(&[&a, &b], |engine, t| {
            (
                t[0].shape().to_vec(),
                t[1].as_slice::<f64>().unwrap().iter().sum::<f64>(),
                engine.store().len(),
            )
        })
        .unwrap(),
    );
    assert_eq!(dims, (vec![2, 2], 4.0, 2));
}

#[test]
fn decompositions_through_a_lane() {
    let rt = one_domain();
    let lane = rt.lane(0).expect("lane");
    let a = lane.upload(matrix(5, 3, 0.4)).unwrap();
    let (q, r) = lane.qr(&a).unwrap();
    assert_eq!((q.shape(), r.shape()), (&[5, 3][..], &[3, 3][..]));
    let qr = lane.matmul(&q, &r).unwrap();
    close(
        wait_ok(lane.download(&qr).unwrap())
            .as_slice::<f64>()
            .unwrap(),
        matrix(5, 3, 0.4).as_slice::<f64>().unwrap(),
    );
    let (u, s, vh) = lane.svd(&a).unwrap();
    assert_eq!(
        (u.shape(), s.shape(), vh.shape()),
        (&[5, 3][..], &[3][..], &[3, 3][..])
    );
    let us = lane.mul(&u, &s).unwrap(); // scale columns: broadcast over rows
    let usv = lane.matmul(&us, &vh).unwrap();
    close(
        wait_ok(lane.download(&usv).unwrap())
            .as_slice::<f64>()
            .unwrap(),
        matrix(5, 3, 0.4).as_slice::<f64>().unwrap(),
    );

    // A failed factorization fails its op and dependents, not the call.
    let bad = lane
        .upload(Tensor::from_vec(vec![1.0, 2.0, 2.0, 1.0], &[2, 2]).unwrap())
        .unwrap();
    let l = lane.cholesky(&bad).expect("submitted");
    let ll = lane.matmul(&l, &l).expect("submitted");
    let err = wait(lane.download(&ll).unwrap()).unwrap_err();
    let first = err.dependency().expect("dependency");
    assert_eq!(first.op, "cholesky");
    let err = lane.eigh(&a).unwrap_err();
    assert_eq!(
        err.to_string(),
        "eigh needs a square matrix, got shape [5, 3]"
    );
    let err = lane
        .apply(weft::ops::TensorOp::Linalg(weft::ops::Linalg::Qr), &[&a])
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "qr has 2 outputs; submit it with apply_many"
    );
}

#[test]
fn einsum_through_a_lane() {
    let rt = one_domain();
    let lane = rt.lane(0).expect("lane");
    let (a, b) = (matrix(3, 4, 0.1), matrix(4, 5, 0.2));
    let (ha, hb) = (
        lane.upload(a.clone()).unwrap(),
        lane.upload(b.clone()).unwrap(),
    );
    let c = lane.einsum("ij,jk->ik", &[&ha, &hb]).unwrap();
    assert_eq!(c.shape(), [3, 5]);
    close(
        wait_ok(lane.download(&c).unwrap())
            .as_slice::<f64>()
            .unwrap(),
        &matmul_ref(&a, &b),
    );
    let tr = lane
        .einsum("ij,ji->", &[&ha, &lane.transpose(&ha).unwrap()])
        .unwrap();
    let want: f64 = a.as_slice::<f64>().unwrap().iter().map(|x| x * x).sum();
    close(
        wait_ok(lane.download(&tr).unwrap())
            .as_slice::<f64>()
            .unwrap(),
        &[want],
    );
    let err = lane.einsum("ij,jk->ik", &[&ha, &ha]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "einsum `ij,jk->ik`: label `j` has extents 4 and 3"
    );
    let err = lane.einsum("ij,jk->ik", &[&ha]).unwrap_err();
    assert_eq!(err.to_string(), "einsum takes 2 input(s), got 1");
}

#[test]
fn pipeline_keeps_order_bounds_flight_and_isolates_failures() {
    use weft::{runtime::Pipeline, DType, Scalar};
    let rt = two_domains_unpinned();
    let pipeline = Pipeline::new(&rt, "make", 0, |lane, i| {
        // Item 3 is not positive definite: its factorization fails.
        let v = if i == 3 { -1.0 } else { (i + 1) as f64 };
        lane.full(DType::F64, &[1, 1], Scalar::Real(v))
    })
    .stage("factor", 1, |lane, x| lane.cholesky(x))
    .stage("square", 0, |lane, l| lane.matmul(l, l))
    .in_flight(3);
    assert_eq!(
        pipeline.layout(),
        [("make", 0), ("factor", 1), ("square", 0)]
    );
    let run = pipeline.run(8).expect("ran");
    assert!(run.peak_in_flight <= 3);
    for (i, out) in run.outputs.into_iter().enumerate() {
        if i == 3 {
            let err = out.unwrap_err();
            assert_eq!(err.dependency().expect("dependency").op, "cholesky");
        } else {
            let v = out.expect("ran").as_slice::<f64>().unwrap()[0];
            assert!((v - (i + 1) as f64).abs() < 1e-12, "item {i}: {v}");
        }
    }
}

#[test]
fn masks_selects_and_structural_ops_through_a_lane() {
    use weft::{
        c64,
        ops::{BinaryOp, CmpOp, SliceAxis},
        DType, Scalar,
    };
    let rt = one_domain();
    let lane = rt.lane(0).expect("lane");
    let get = |h: &weft::TensorHandle| wait_ok(lane.download(h).unwrap());
    let x = lane.arange(DType::F64, -2.0, 1.0, 5).unwrap(); // [-2, -1, 0, 1, 2]
    let zero = lane.zeros(DType::F64, &[]).unwrap();
    let pos = lane.compare(CmpOp::Gt, &x, &zero).unwrap();
    assert_eq!(
        get(&pos).as_slice::<bool>().unwrap(),
        &[false, false, false, true, true]
    );
    let relu = lane.select(&pos, &x, &zero).unwrap();
    assert_eq!(
        get(&relu).as_slice::<f64>().unwrap(),
        &[0.0, 0.0, 0.0, 1.0, 2.0]
    );
    let sq = lane
        .binary_scalar(BinaryOp::Pow, &x, Scalar::Real(2.0))
        .unwrap();
    assert_eq!(
        get(&sq).as_slice::<f64>().unwrap(),
        &[4.0, 1.0, 0.0, 1.0, 4.0]
    );
    let c = lane.clamp(&x, -1.0, 1.0).unwrap();
    assert_eq!(
        get(&c).as_slice::<f64>().unwrap(),
        &[-1.0, -1.0, 0.0, 1.0, 1.0]
    );
    let s = lane
        .slice(
            &x,
            &[SliceAxis {
                start: 1,
                stop: 5,
                step: 2,
            }],
        )
        .unwrap();
    assert_eq!(get(&s).as_slice::<f64>().unwrap(), &[-1.0, 1.0]);
    let r = lane.reverse(&x, &[0]).unwrap();
    assert_eq!(
        get(&r).as_slice::<f64>().unwrap(),
        &[2.0, 1.0, 0.0, -1.0, -2.0]
    );
    let both = lane.concatenate(&[&x, &r], 0).unwrap();
    assert_eq!(both.shape(), [10]);
    let p = lane.pad(&s, &[(1, 1)], Scalar::Real(7.0)).unwrap();
    assert_eq!(get(&p).as_slice::<f64>().unwrap(), &[7.0, -1.0, 1.0, 7.0]);
    let m = lane
        .reshape(&lane.arange(DType::F64, 0.0, 1.0, 9).unwrap(), &[3, 3])
        .unwrap();
    assert_eq!(
        get(&lane.diagonal(&m).unwrap()).as_slice::<f64>().unwrap(),
        &[0.0, 4.0, 8.0]
    );
    let up = lane.triu(&m, 0).unwrap();
    let low = lane.tril(&m, -1).unwrap();
    assert_eq!(get(&lane.add(&up, &low).unwrap()), get(&m));
    let b = lane
        .broadcast_to(&lane.diagonal(&m).unwrap(), &[2, 3])
        .unwrap();
    assert_eq!(b.shape(), [2, 3]);
    let z = lane
        .upload(Tensor::from_vec(vec![c64::new(1.0, 1.0), c64::new(0.0, 2.0)], &[2]).unwrap())
        .unwrap();
    let v = lane.vdot(&z, &z).unwrap();
    assert_eq!(get(&v).as_slice::<c64>().unwrap(), &[c64::new(6.0, 0.0)]);
    let d = lane.dot(&z, &z).unwrap();
    assert_eq!(get(&d).as_slice::<c64>().unwrap(), &[c64::new(-4.0, 2.0)]);
    let zr = lane.cast(&z, DType::F32).unwrap();
    assert_eq!(get(&zr).as_slice::<f32>().unwrap(), &[1.0, 0.0]);
    // Call-site errors.
    assert!(lane.compare(CmpOp::Lt, &z, &z).is_err());
    assert!(lane.clamp(&z, 0.0, 1.0).is_err());
    assert!(lane.concatenate(&[&x, &m], 0).is_err());
    assert!(lane.diagonal(&x).is_err());
    assert!(lane.dot(&x, &s).is_err());
    assert!(lane
        .slice(
            &x,
            &[SliceAxis {
                start: 9,
                stop: 10,
                step: 1
            }]
        )
        .is_err());
    assert!(lane
        .binary_scalar(BinaryOp::Add, &x, Scalar::Complex(c64::new(0.0, 1.0)))
        .is_err());
}

mod products_and_pipelines;
