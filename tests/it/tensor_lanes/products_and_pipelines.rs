//! dot_general, pipelines whose items fail or cross domains, transfers from one lane, sync, and each CPU provider's products.

use super::*;
use weft::ops::{CreateOps, ElementwiseOps, LinalgOps, ReduceOps, StructuralOps};
use weft::OpError;

#[test]
fn dot_general_is_batched_matmul_and_more() {
    let rt = one_domain();
    let lane = rt.lane(0).expect("lane");
    let a = lane
        .random(
            weft::DType::F64,
            &[2, 3, 4],
            weft::ops::Distribution::Normal,
            1,
        )
        .unwrap();
    let b = lane
        .random(
            weft::DType::F64,
            &[2, 4, 5],
            weft::ops::Distribution::Normal,
            2,
        )
        .unwrap();
    let via_dg = lane.dot_general(&a, &b, &[(0, 0)], &[(2, 1)]).unwrap();
    let via_mm = lane.matmul(&a, &b).unwrap();
    assert_eq!(via_dg.shape(), [2, 3, 5]);
    close(
        wait_ok(lane.download(&via_dg).unwrap())
            .as_slice::<f64>()
            .unwrap(),
        wait_ok(lane.download(&via_mm).unwrap())
            .as_slice::<f64>()
            .unwrap(),
    );
    // Contract two axes at once, no batch: [2,3,4] x [4,2] over (0,1),(2,0).
    let c = lane
        .random(
            weft::DType::F64,
            &[4, 2],
            weft::ops::Distribution::Normal,
            3,
        )
        .unwrap();
    let d = lane.dot_general(&a, &c, &[], &[(0, 1), (2, 0)]).unwrap();
    assert_eq!(d.shape(), [3]);
    let err = lane.dot_general(&a, &b, &[(0, 0)], &[(0, 1)]).unwrap_err();
    assert!(
        matches!(err, OpError::Tensor(TensorError::Axis { .. })),
        "{err}"
    );
    // Extents that differ are named in the caller's axes, not the labels
    // of the einsum it lowers to.
    let err = lane.dot_general(&a, &b, &[], &[(1, 1)]).unwrap_err();
    assert!(
        matches!(err, OpError::Tensor(TensorError::DotGeneral { .. })),
        "{err}"
    );
    let text = err.to_string();
    assert!(text.contains("contracting axes 1 of lhs"), "{text}");
    assert!(!text.contains("label"), "{text}");
}

#[test]
fn pipeline_items_refused_at_the_call_site_are_named_and_the_rest_kept() {
    use weft::runtime::Pipeline;
    let rt = weft_tests::unpinned_pair().build().expect("runtime");
    // Item 3 is made with three elements: the stage's reshape refuses it.
    let pipeline = Pipeline::new(&rt, "make", 0, |lane, i| {
        let n = if i == 3 { 3 } else { 4 };
        lane.full(weft::DType::F64, &[n], weft::Scalar::Real(i as f64))
    })
    .stage("square", 1, |lane, x| lane.reshape(x, &[2, 2]))
    .stage("sum", 1, |lane, x| lane.sum_all(x))
    .in_flight(2);
    let run = pipeline.run(6).expect("ran");
    assert_eq!(run.outputs.len(), 6);
    for (i, out) in run.outputs.into_iter().enumerate() {
        if i == 3 {
            let err = out.unwrap_err();
            assert_eq!((err.item, err.stage.as_deref()), (3, Some("square")));
            let text = err.to_string();
            assert!(text.starts_with("item 3, stage `square`: "), "{text}");
            assert!(text.contains("[3]") && text.contains("[2, 2]"), "{text}");
        } else {
            let v = out.expect("ran").as_slice::<f64>().unwrap()[0];
            assert_eq!(v, 4.0 * i as f64, "item {i}");
        }
    }
}

#[test]
fn a_pipeline_of_more_items_than_memory_holds_runs_them_as_they_come() {
    use weft::runtime::Pipeline;
    let rt = weft_tests::unpinned_pair().build().expect("runtime");
    // The source stops the run by panicking at item 3: the run got that
    // far, with nothing set aside for the items it never reached.
    for items in [1usize << 40, usize::MAX / 64] {
        let pipeline = Pipeline::new(&rt, "make", 0, |lane, i| {
            if i == 3 {
                std::panic::panic_any("enough items");
            }
            lane.full(weft::DType::F64, &[2], weft::Scalar::Real(i as f64))
        });
        let stopped =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| pipeline.run(items)))
                .expect_err("the source stops the run");
        assert_eq!(
            stopped.downcast_ref::<&str>(),
            Some(&"enough items"),
            "{items} items"
        );
    }
}

#[test]
fn pipeline_stages_may_hand_on_a_tensor_of_another_domain() {
    use weft::runtime::Pipeline;
    let rt = weft_tests::unpinned_pair().build().expect("runtime");
    // The first stage runs on domain 0 but hands on a tensor of domain 1;
    // the second runs on domain 0 again; the last hands on domain 1's.
    let pipeline = Pipeline::new(&rt, "make", 0, |lane, i| {
        lane.full(weft::DType::F64, &[2], weft::Scalar::Real(i as f64))
    })
    .stage("away", 0, |lane, x| lane.transfer(x, 1))
    .stage("double", 0, |lane, x| lane.add(x, x))
    .stage("away again", 0, |lane, x| lane.transfer(x, 1));
    let run = pipeline.run(4).expect("ran");
    for (i, out) in run.outputs.into_iter().enumerate() {
        let t = out.unwrap_or_else(|e| panic!("item {i}: {e}"));
        assert_eq!(t.as_slice::<f64>().unwrap(), &[2.0 * i as f64; 2]);
    }
}

#[test]
fn transfers_from_one_lane_reuse_one_lane_into_the_destination() {
    let rt = weft_tests::unpinned_pair().build().expect("runtime");
    let lane = rt.lane(0).unwrap();
    let x = lane.ones(DType::F64, &[8]).unwrap();
    let moved: Vec<_> = (0..50).map(|_| lane.transfer(&x, 1).unwrap()).collect();
    for m in &moved {
        assert_eq!(wait_ok(rt.lane(1).unwrap().download(m).unwrap()).len(), 8);
    }
    // Domain 1 got the 50 halves "transfer in" on one lane, still open.
    let stats = rt.stats();
    let dest = &stats.actors[1];
    let busiest = dest
        .lanes
        .iter()
        .map(|l| l.ops.submitted)
        .max()
        .unwrap_or(0);
    assert!(busiest >= 50, "{:?}", dest.lanes);
}

#[test]
fn sync_waits_for_a_tensor_without_downloading_it() {
    let rt = Runtime::builder().split(2).build().expect("runtime");
    let lane = rt.lane(0).expect("lane");
    let x = lane.upload(matrix(64, 64, 0.25)).unwrap();
    let hold = Hold::on(&lane);
    let y = lane.matmul(&x, &x).unwrap();
    let synced = lane.sync(&y).unwrap();
    assert!(!synced.is_ready(), "the producer is held");
    wait_ok(hold.release());
    wait_ok(synced);
    // Nothing moved: y is still the only copy, and right.
    assert_eq!(wait_ok(lane.resident().unwrap()).0, 2);
    let got = wait_ok(lane.download(&y).unwrap());
    let want = matmul_ref(&matrix(64, 64, 0.25), &matrix(64, 64, 0.25));
    for (g, w) in got.as_slice::<f64>().unwrap().iter().zip(&want) {
        assert!((g - w).abs() <= 1e-12 * w.abs().max(1.0));
    }
    // A failed producer fails the sync, naming it.
    let not_spd = lane
        .upload(Tensor::from_vec(vec![-1.0f64, 0.0, 0.0, 1.0], &[2, 2]).unwrap())
        .unwrap();
    let failed = lane.cholesky(&not_spd).unwrap();
    match wait(lane.sync(&failed).unwrap()) {
        Err(TicketError::DependencyFailed(first)) => assert_eq!(first.op, "cholesky"),
        other => panic!("{other:?}"),
    }
    // Another domain's tensor is refused at the call site.
    let there = rt.lane(1).unwrap().zeros(DType::F64, &[2]).unwrap();
    assert!(matches!(
        lane.sync(&there),
        Err(OpError::WrongDomain { .. })
    ));
}

/// Every provider this build has: the builder's choice reaches the
/// domain's engine, and its products (a matmul, an einsum read through
/// a transpose, a program's contraction) match the triple loop.
#[test]
fn each_cpu_provider_computes_the_products_of_its_runtime() {
    let providers = [
        weft::engine::CpuProvider::Faer,
        #[cfg(feature = "blas")]
        weft::engine::CpuProvider::Blas,
    ];
    for provider in providers {
        let rt = Runtime::builder()
            .split(1)
            .cpu_provider(provider)
            .build()
            .expect("runtime");
        let lane = rt.lane(0).expect("lane");
        let told = wait_ok(
            lane.run(|engine: &mut weft::CpuEngine| engine.domain().provider)
                .expect("submitted"),
        );
        assert_eq!(told, provider);
        // Large enough to be split over the pool.
        let (a, b) = (matrix(130, 70, 0.4), matrix(70, 90, 0.9));
        let want = matmul_ref(&a, &b);
        let (ha, hb) = (lane.upload(a).unwrap(), lane.upload(b).unwrap());
        let c = lane.matmul(&ha, &hb).unwrap();
        let bt = lane.transpose(&hb).unwrap();
        let d = lane.einsum("ij,kj->ik", &[&ha, &bt]).unwrap();
        let program = weft::Program::record(|r| -> Result<(), OpError> {
            let (x, y) = (
                r.input(DType::F64, &[130, 70]),
                r.input(DType::F64, &[70, 90]),
            );
            let z = r.einsum("ij,jk->ik", &[&x, &y])?;
            Ok(r.output(z)?)
        })
        .unwrap();
        let e = lane.run_program(&program, &[&ha, &hb]).unwrap().remove(0);
        for (what, h) in [("matmul", &c), ("einsum", &d), ("program", &e)] {
            let got = wait_ok(lane.download(h).unwrap());
            assert_eq!(got.shape(), [130, 90], "{provider} {what}");
            close(got.as_slice::<f64>().unwrap(), &want);
        }
    }
}

/// Sends eight 1 MiB tensors from domain 0 to domain 1 of `rt`, each
/// downloaded there and dropped, and returns the pool requests domain 0
/// served from its pool and those it allocated for.
fn source_pool_across_transfers(rt: &Runtime) -> (u64, u64) {
    let (zero, one) = (rt.lane(0).unwrap(), rt.lane(1).unwrap());
    let n = 1 << 17;
    let values: Vec<f64> = (0..n).map(|i| i as f64).collect();
    let x = zero
        .upload(Tensor::from_vec(values.clone(), &[n]).unwrap())
        .unwrap();
    let before = wait_ok(zero.memory().unwrap()).buffers;
    for round in 0..8 {
        let there = zero.transfer(&x, 1).unwrap();
        let got = wait_ok(one.download(&there).unwrap());
        assert_eq!(got.as_slice::<f64>().unwrap(), values, "round {round}");
    }
    let after = wait_ok(zero.memory().unwrap()).buffers;
    (after.hits - before.hits, after.misses - before.misses)
}

#[test]
fn a_stream_of_transfers_gives_the_source_its_buffers_back() {
    // Domains of one node: the destination keeps the source's copy and
    // gives a buffer of its own pool back. Without that swap every copy
    // the source makes is fresh memory (8 misses, no hit).
    let rt = two_domains_unpinned();
    let (hits, misses) = source_pool_across_transfers(&rt);
    assert!(hits >= 6 && misses <= 2, "hits {hits}, misses {misses}");
    rt.shutdown().unwrap();
}

#[test]
fn a_stream_of_transfers_between_nodes_gives_the_source_its_copies_back() {
    // Two NUMA nodes (a fake sysfs over CPUs 0 and 1): the destination
    // copies into its own pool, and the source's copy goes back to the
    // source's pool.
    let fake = weft_tests::FakeSysfs::new("transfers")
        .node(0, "0")
        .node(1, "1");
    let layout = weft::topology::Topology::builder()
        .sysfs_root(fake.path())
        .allowed(weft::topology::CpuSet::range(0..2))
        .ignore_env()
        .build()
        .expect("layout");
    assert_eq!(layout.domains().len(), 2);
    assert_eq!(layout.domains()[1].numa_node(), Some(1));
    let rt = Runtime::builder()
        .topology(layout)
        .pinning(weft::engine::Pinning::None)
        .build()
        .expect("runtime");
    let (hits, misses) = source_pool_across_transfers(&rt);
    assert!(hits >= 7 && misses <= 1, "hits {hits}, misses {misses}");
    rt.shutdown().unwrap();
}
