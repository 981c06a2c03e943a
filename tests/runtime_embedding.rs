//! weft inside a larger program: the process's ledger of CPUs between
//! runtimes (refused, shared, allowed overlaps), the process's global
//! runtime, thread counts from the environment, the report of each
//! domain's threads, and stack sizes.
//!
//! Every test here builds runtimes whose CPUs overlap on purpose, and some
//! set environment variables, so they run one at a time (`serial`).

use std::sync::{Barrier, Mutex, MutexGuard};
use std::thread;
use weft::ops::{CreateOps, ElementwiseOps, LinalgOps, ReduceOps};

use weft::{
    engine::{Leases, Pinning},
    runtime::{Affinity, Overlap, RAYON_THREADS_ENV, THREADS_ENV},
    topology::CpuSet,
    BuildError, Runtime,
};
use weft_tests::{own_threads, status_bytes, threads_named, wait_ok};

/// The threads a check here counts: weft's (default names), the
/// application's (named `app-`), and the test's own.
const NAMES: &[&str] = &[weft::runtime::DEFAULT_THREAD_NAMES, "app-"];

/// Holds the other tests of this binary off.
fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The process's allowed CPUs.
fn allowed() -> CpuSet {
    weft_topology::process_allowed_cpus().expect("the allowed CPUs")
}

/// A one-domain runtime on every allowed CPU, refusing overlaps.
fn whole() -> Runtime {
    refusing().build().expect("a runtime")
}

/// A one-domain layout on every allowed CPU that refuses overlaps.
fn refusing() -> weft::Builder {
    Runtime::builder().split(1).overlap(Overlap::Refuse)
}

/// The runtime answers: an op runs on its first domain.
fn answers(rt: &Runtime) -> bool {
    let lane = rt.lane(0).expect("a lane");
    wait_ok(lane.run(|_| 6 * 7).expect("submit")) == 42
}

#[test]
fn an_overlapping_build_is_refused_naming_the_cpus_and_the_runtime() {
    let _serial = serial();
    let first = whole();
    let err = refusing().build().unwrap_err();
    let BuildError::Overlap {
        cpus,
        runtime,
        runtime_cpus,
    } = &err
    else {
        panic!("expected an overlap, got {err}");
    };
    assert_eq!(*runtime, first.id());
    assert_eq!(cpus, &allowed());
    assert_eq!(runtime_cpus, &allowed());
    let text = err.to_string();
    assert!(
        text.contains(&allowed().to_string()) && text.contains(&first.id().to_string()),
        "{text}"
    );
    assert!(text.contains("Overlap::Allow"), "{text}");
    // The refusal cost the live runtime nothing.
    assert!(answers(&first));

    // A shutdown that joins every thread frees the CPUs, though the
    // handle lives on.
    first.shutdown().expect("shutdown");
    let second = whole();
    assert!(answers(&second));
    // So does dropping the last handle.
    drop(second);
    assert!(answers(&whole()));
}

#[test]
fn a_shared_build_returns_the_live_runtime() {
    let _serial = serial();
    let first = whole();
    // Its own layout and settings are not used: it is the same runtime.
    let shared = Runtime::builder()
        .cpulists(&allowed().first().unwrap().to_string())
        .threads_per_domain(1)
        .overlap(Overlap::Share)
        .build()
        .expect("shared");
    assert_eq!(shared.id(), first.id());
    assert_eq!(shared.domains(), first.domains());
    // Tensors of one handle are tensors of the other.
    let t = shared
        .lane(0)
        .unwrap()
        .upload(weft::Tensor::from_vec(vec![1.0f64, 2.0], &[2]).unwrap())
        .unwrap();
    let back = wait_ok(first.lane(0).unwrap().download(&t).unwrap());
    assert_eq!(back.as_slice::<f64>().unwrap(), &[1.0, 2.0]);
    assert!(first.overlaps().is_empty(), "sharing is not an overlap");
    drop((first, t));
    // The shared handle keeps the runtime: a refusing build still sees it.
    assert!(matches!(
        refusing().build(),
        Err(BuildError::Overlap { runtime, .. }) if runtime == shared.id()
    ));
    drop(shared);
    // With nothing to share, a sharing build builds.
    let fresh = Runtime::builder()
        .split(1)
        .overlap(Overlap::Share)
        .build()
        .unwrap();
    assert!(answers(&fresh));
}

#[test]
fn an_overlap_is_allowed_by_default_and_reported_by_both_runtimes() {
    let _serial = serial();
    let first = whole();
    let beside = Runtime::builder().split(1).build().expect("allowed");
    assert_ne!(beside.id(), first.id());
    let seen_by_first = first.overlaps();
    assert_eq!(seen_by_first.len(), 1);
    assert_eq!(seen_by_first[0].runtime, beside.id());
    assert_eq!(seen_by_first[0].cpus, allowed());
    assert_eq!(beside.overlaps()[0].runtime, first.id());
    let stats = beside.stats();
    assert_eq!(stats.overlaps, beside.overlaps());
    let table = stats.to_string();
    assert!(
        table.contains(&format!(
            "overlap: CPUs {} shared with {}",
            allowed(),
            first.id()
        )),
        "{table}"
    );
    assert!(answers(&first) && answers(&beside));
    drop(beside);
    assert!(first.overlaps().is_empty());
    assert!(first.stats().overlaps.is_empty());
}

#[test]
fn disjoint_layouts_live_side_by_side() {
    let _serial = serial();
    let cpus: Vec<usize> = allowed().iter().collect();
    if cpus.len() < 2 {
        println!(
            "skipped: needs two allowed CPUs, this process has {}",
            cpus.len()
        );
        return;
    }
    let left = Runtime::builder()
        .cpulists(&cpus[0].to_string())
        .build()
        .expect("left");
    let right = Runtime::builder()
        .cpulists(&cpus[1].to_string())
        .build()
        .expect("right, disjoint from left");
    assert!(left.overlaps().is_empty() && right.overlaps().is_empty());
    // A third over both is refused, naming the first it meets.
    let both = format!("{},{}", cpus[0], cpus[1]);
    match Runtime::builder()
        .cpulists(&both)
        .overlap(Overlap::Refuse)
        .build()
    {
        Err(BuildError::Overlap { cpus: shared, .. }) => assert_eq!(shared.len(), 1),
        other => panic!("expected an overlap, got {other:?}"),
    }
    assert!(answers(&left) && answers(&right));
}

#[test]
fn the_global_runtime_is_built_once_for_every_thread() {
    let _serial = serial();
    let callers = 8;
    let barrier = Barrier::new(callers);
    let ids: Vec<_> = thread::scope(|s| {
        let handles: Vec<_> = (0..callers)
            .map(|_| {
                s.spawn(|| {
                    barrier.wait();
                    let rt = Runtime::global().expect("global");
                    assert!(answers(&rt));
                    rt.id()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(ids.windows(2).all(|w| w[0] == w[1]), "{ids:?}");
    // It holds its CPUs like any runtime.
    assert!(matches!(
        refusing().build(),
        Err(BuildError::Overlap { runtime, .. }) if runtime == ids[0]
    ));
    let report = Runtime::shutdown_global()
        .expect("shutdown")
        .expect("built");
    assert!(!report.actors.is_empty());
    assert!(Runtime::shutdown_global().unwrap().is_none());
    // The next use builds it anew.
    let again = Runtime::global().unwrap();
    assert_ne!(again.id(), ids[0]);
    assert!(answers(&again));
    Runtime::shutdown_global().unwrap();
}

#[test]
fn the_global_runtime_shares_the_applications() {
    let _serial = serial();
    let app = Runtime::builder().split(1).build().unwrap();
    let global = Runtime::global().unwrap();
    assert_eq!(global.id(), app.id());
    drop(global);
    // Shutting the global one down shuts the application's down: they
    // are one runtime.
    Runtime::shutdown_global().unwrap();
    assert!(app.lane(0).is_err());
}

#[test]
fn thread_counts_follow_the_builder_then_the_environment() {
    let _serial = serial();
    let threads = |rt: &Runtime| rt.threads()[0].names.len();
    let build = || Runtime::builder().split(1).build();
    std::env::remove_var(THREADS_ENV);
    std::env::remove_var(RAYON_THREADS_ENV);
    let cpus = allowed().len();
    assert_eq!(threads(&build().unwrap()), cpus);

    std::env::set_var(RAYON_THREADS_ENV, "3");
    assert_eq!(threads(&build().unwrap()), 3);
    // rayon's reading: 0 and a value that is not a number set nothing.
    for value in ["0", "many"] {
        std::env::set_var(RAYON_THREADS_ENV, value);
        assert_eq!(
            threads(&build().unwrap()),
            cpus,
            "{RAYON_THREADS_ENV}={value}"
        );
    }
    std::env::set_var(RAYON_THREADS_ENV, "3");
    std::env::set_var(THREADS_ENV, "2");
    assert_eq!(threads(&build().unwrap()), 2, "WEFT_THREADS comes first");
    let explicit = Runtime::builder()
        .split(1)
        .threads_per_domain(1)
        .build()
        .unwrap();
    assert_eq!(threads(&explicit), 1, "the builder comes before both");
    drop(explicit);

    for value in ["0", "two", ""] {
        std::env::set_var(THREADS_ENV, value);
        let err = build().unwrap_err();
        assert!(
            matches!(&err, BuildError::Env { var, value: v, .. } if *var == THREADS_ENV && v == value),
            "{err}"
        );
        assert!(err.to_string().contains(&format!("{value:?}")), "{err}");
    }
    std::env::remove_var(THREADS_ENV);
    std::env::remove_var(RAYON_THREADS_ENV);
}

#[test]
fn each_domains_threads_are_reported_with_their_names_and_affinity() {
    let _serial = serial();
    // Leases of its own: a weft process running beside the test would
    // otherwise move its workers off the CPUs it holds.
    let leases = std::env::temp_dir().join(format!("weft-leases-report-{}", std::process::id()));
    let rt = Runtime::builder()
        .split(1)
        .threads_per_domain(2)
        .lease_dir(&leases)
        .build()
        .unwrap();
    let report = &rt.threads()[0];
    assert_eq!(report.domain, 0);
    assert_eq!(report.cpus, allowed());
    assert_eq!(report.pinning, Pinning::PerCore);
    assert_eq!(report.names, ["weft-cpu-0", "weft-cpu-0-w1"]);
    // The names are the threads' own.
    let lane = rt.lane(0).unwrap();
    assert_eq!(pool_names(&lane), ["weft-cpu-0", "weft-cpu-0-w1"]);
    // Per core: worker i on the domain's i-th CPU, wrapping around.
    let cpus: Vec<usize> = allowed().iter().collect();
    let expected: Vec<CpuSet> = (0..2)
        .map(|w| CpuSet::single(cpus[w % cpus.len()]))
        .collect();
    assert_eq!(report.affinity, Affinity::Verified(expected));
    // Nothing else holds the test's leases: the domain leased the CPUs
    // its workers run on, and found none held.
    let leased: CpuSet = (0..2.min(cpus.len())).map(|w| cpus[w]).collect();
    assert_eq!(
        report.leases,
        Leases::Taken {
            leased,
            contended: CpuSet::new()
        }
    );
    drop((lane, rt));
    let _ = std::fs::remove_dir_all(&leases);

    let unpinned = Runtime::builder()
        .split(1)
        .pinning(Pinning::None)
        .build()
        .unwrap();
    assert_eq!(unpinned.threads()[0].affinity, Affinity::Unpinned);
    assert_eq!(unpinned.threads()[0].leases, Leases::NotTaken);
}

#[test]
fn thread_names_take_the_builders_prefix() {
    let _serial = serial();
    let rt = Runtime::builder()
        .split(1)
        .threads_per_domain(2)
        .thread_names("solver")
        .build()
        .unwrap();
    assert_eq!(rt.threads()[0].names, ["solver-cpu-0", "solver-cpu-0-w1"]);
    let lane = rt.lane(0).unwrap();
    assert_eq!(pool_names(&lane), ["solver-cpu-0", "solver-cpu-0-w1"]);
    let app = rt
        .spawn(0, |_| thread::current().name().map(str::to_owned))
        .unwrap();
    assert_eq!(app.join().unwrap().as_deref(), Some("solver-app-0"));
    let hosted = rt.spawn_actor(0, || Ok::<_, std::io::Error>(())).unwrap();
    assert_eq!(hosted.name(), "solver-cpu-0-actor-0");
    // An actor shut down is named in the errors of ops sent to it.
    drop(hosted);
    rt.shutdown().unwrap();
    let err = lane.zeros(weft::DType::F64, &[2]).unwrap_err();
    assert!(err.to_string().contains("solver-cpu-0"), "{err}");
}

/// The names of the threads of `lane`'s domain's pool, as each reads its own.
fn pool_names(lane: &weft::Lane) -> Vec<String> {
    let names = lane.run(|engine| {
        engine.install(|| rayon::broadcast(|_| thread::current().name().map(str::to_owned)))
    });
    wait_ok(names.unwrap())
        .into_iter()
        .map(|n| n.expect("a named thread"))
        .collect()
}

/// Recurses `depth` frames of 64 KiB each.
fn deep(depth: usize) -> u64 {
    let frame = std::hint::black_box([depth as u8; 64 << 10]);
    if depth == 0 {
        return u64::from(frame[0]);
    }
    u64::from(frame[depth % frame.len()]) + deep(depth - 1)
}

#[test]
fn the_stack_size_reaches_actors_and_pool_workers() {
    let _serial = serial();
    // 8 MiB of frames: past the 2 MiB default of spawned threads, so
    // this would overflow (and abort the test) on a default stack.
    let depth = 128;
    let rt = Runtime::builder()
        .split(1)
        .threads_per_domain(2)
        .stack_size(32 << 20)
        .build()
        .unwrap();
    assert_eq!(rt.threads()[0].stack_size, Some(32 << 20));
    let lane = rt.lane(0).unwrap();
    let sums = wait_ok(
        lane.run(move |engine| engine.install(|| rayon::broadcast(|_| deep(depth))))
            .unwrap(),
    );
    assert_eq!(sums.len(), 2);
    assert!(sums.iter().all(|&s| s == sums[0]));
}

#[test]
fn creating_and_dropping_shared_handles_returns_threads_and_memory() {
    let _serial = serial();
    let cycle = || {
        let owner = whole();
        for _ in 0..4 {
            let shared = Runtime::builder()
                .split(1)
                .overlap(Overlap::Share)
                .build()
                .unwrap();
            assert_eq!(shared.id(), owner.id());
            assert!(answers(&shared));
        }
        let global = Runtime::global().unwrap();
        assert_eq!(global.id(), owner.id());
        drop((global, owner));
        Runtime::shutdown_global().unwrap();
    };
    // Warm-up: the allocator's and the test harness's first costs.
    for _ in 0..5 {
        cycle();
    }
    // weft's threads only: the harness starts and ends its own meanwhile.
    let threads = threads_named(weft::runtime::DEFAULT_THREAD_NAMES);
    let rss = status_bytes("VmRSS");
    for _ in 0..100 {
        cycle();
    }
    assert_eq!(
        threads_named(weft::runtime::DEFAULT_THREAD_NAMES),
        threads,
        "every runtime's threads are joined"
    );
    let grown = status_bytes("VmRSS").saturating_sub(rss);
    assert!(grown < 16 << 20, "RSS grew {grown} bytes over 100 cycles");
}

/// A little of the vocabulary on `rt`'s first domain, large enough for
/// the kernels to split over the pool: every result, flattened.
fn workload(rt: &Runtime) -> Vec<Vec<f64>> {
    let lane = rt.lane(0).unwrap();
    let n = 192;
    let values = |shift: f64| -> Vec<f64> {
        (0..n * n)
            .map(|i| ((i as f64 * 0.37 + shift).sin() * 10.0).round() / 10.0)
            .collect()
    };
    let a = lane
        .upload(weft::Tensor::from_vec(values(0.0), &[n, n]).unwrap())
        .unwrap();
    let b = lane
        .upload(weft::Tensor::from_vec(values(1.0), &[n, n]).unwrap())
        .unwrap();
    let product = lane.matmul(&a, &b).unwrap();
    let contracted = lane.einsum("ij,jk,kl->il", &[&a, &b, &a]).unwrap();
    let sum = lane.add(&product, &a).unwrap();
    let total = lane.sum_all(&sum).unwrap();
    let (_, r) = lane.qr(&a).unwrap();
    let rows = lane
        .reduce(weft::ops::ReduceOp::Max, &b, &[1], false)
        .unwrap();
    [product, contracted, total, r, rows]
        .iter()
        .map(|h| {
            let t = wait_ok(lane.download(h).unwrap());
            t.as_slice::<f64>().unwrap().to_vec()
        })
        .collect()
}

fn close(got: &[Vec<f64>], want: &[Vec<f64>]) {
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(want) {
        assert_eq!(g.len(), w.len());
        for (x, y) in g.iter().zip(w) {
            assert!((x - y).abs() <= 1e-9 * (1.0 + y.abs()), "{x} vs {y}");
        }
    }
}

#[test]
fn a_callers_rayon_pool_runs_the_vocabulary_with_no_thread_of_weft() {
    let _serial = serial();
    let want = workload(&whole());
    let pool = std::sync::Arc::new(
        rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .thread_name(|i| format!("app-pool-{i}"))
            .build()
            .unwrap(),
    );
    let before = own_threads(NAMES);
    let rt = Runtime::builder()
        .split(1)
        .host_pool(pool.clone())
        .build()
        .unwrap();
    assert_eq!(own_threads(NAMES), before, "weft started no thread");
    let report = &rt.threads()[0];
    assert!(report.hosted);
    assert_eq!(report.threads, 3);
    assert_eq!(report.affinity, Affinity::Caller);
    assert!(
        report.names[0].starts_with("app-pool-"),
        "{:?}",
        report.names
    );
    // The actor is a worker of the pool, and its kernels run there.
    let lane = rt.lane(0).unwrap();
    let seen = wait_ok(
        lane.run(|engine| {
            let name = thread::current().name().map(str::to_owned);
            (name, engine.install(rayon::current_num_threads))
        })
        .unwrap(),
    );
    assert!(seen.0.unwrap().starts_with("app-pool-"));
    assert_eq!(seen.1, 3);
    close(&workload(&rt), &want);
    // The pool goes on with the application's own work meanwhile.
    assert_eq!(pool.install(|| (0..1000u64).sum::<u64>()), 499_500);
    drop(lane);
    rt.shutdown().unwrap();
    // The actor's job has returned: its worker is the pool's again.
    assert_eq!(pool.broadcast(|_| 1).len(), 3);
    assert_eq!(own_threads(NAMES), before);
}

#[test]
fn callers_threads_host_the_actors_and_get_them_back() {
    let _serial = serial();
    let want = workload(&whole());
    let threads = std::sync::Arc::new(Mutex::new(Vec::new()));
    let started = threads.clone();
    let before = own_threads(NAMES);
    let rt = Runtime::builder()
        .split(1)
        .threads_per_domain(1)
        .host(move |domain, job| {
            assert_eq!(job.name(), format!("weft-cpu-{domain}"));
            let thread = thread::Builder::new()
                .name(format!("app-{domain}"))
                .spawn(move || job.run())?;
            started.lock().unwrap().push(thread);
            Ok(())
        })
        .build()
        .unwrap();
    assert_eq!(
        own_threads(NAMES),
        before + 1,
        "only the application's thread"
    );
    assert_eq!(rt.threads()[0].names, ["app-0"]);
    assert!(rt.threads()[0].hosted);
    close(&workload(&rt), &want);
    rt.shutdown().unwrap();
    for thread in threads.lock().unwrap().drain(..) {
        thread.join().expect("the job returned");
    }
    assert_eq!(own_threads(NAMES), before);
}

#[test]
fn a_host_that_does_not_take_the_job_fails_the_build_and_frees_the_cpus() {
    let _serial = serial();
    let refuses = |launch: fn(
        usize,
        weft::actor::ActorJob,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>>,
                   says: &str| {
        let err = Runtime::builder()
            .split(1)
            .host(launch)
            .build()
            .unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, BuildError::Actor { domain: 0, .. }), "{text}");
        assert!(text.contains(says), "{text}");
        // Its claim went with it.
        assert!(answers(&whole()));
    };
    refuses(
        |_, _| Err("no threads to spare".into()),
        "no threads to spare",
    );
    refuses(
        |_, job| {
            job.run();
            Ok(())
        },
        "must hand it to another thread",
    );
    refuses(
        |_, job| {
            drop(job);
            Ok(())
        },
        "dropped the actor's job",
    );
    refuses(|_, _| panic!("host bug"), "host bug");
}

#[test]
fn a_callers_pool_too_small_for_its_domains_is_refused() {
    let _serial = serial();
    let pool = std::sync::Arc::new(
        rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap(),
    );
    let layout = || Runtime::builder().split(1).host_pool(pool.clone());
    // Built from the pool's only worker, the actor's job could never start.
    match pool.install(|| layout().build()) {
        Err(BuildError::HostPool {
            domains: 1,
            workers: 0,
            held: 0,
        }) => {}
        other => panic!("expected HostPool, got {other:?}"),
    }
    // From outside it, the one worker is enough for one domain.
    let rt = layout().build().unwrap();
    assert!(answers(&rt));
    if allowed().len() >= 2 {
        drop(rt);
        let err = Runtime::builder()
            .split(2)
            .host_pool(pool.clone())
            .build()
            .unwrap_err();
        assert!(
            matches!(
                err,
                BuildError::HostPool {
                    domains: 2,
                    workers: 1,
                    held: 0,
                }
            ),
            "{err}"
        );
        assert!(
            err.to_string().contains("1 free worker(s) cannot host 2"),
            "{err}"
        );
    }
}
