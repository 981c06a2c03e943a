//! The edges of embedding: a caller's pool whose workers wait on their own
//! domain, pools shared between runtimes, hosts that keep or misuse an
//! actor's job, threads given back after hosting an actor, and the
//! process's runtime once its shutdown has begun.
//!
//! Tests here use the process's global runtime and refuse overlaps to see
//! the ledger, so they run one at a time (`serial`); a watchdog ends the
//! binary where a hang would otherwise hold it for ever.

use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread;
use std::time::Duration;

use rayon::prelude::*;
use weft::{
    actor::{current_actor, ActorJob},
    error::{ShutdownError, SpawnError},
    runtime::Overlap,
    BuildError, Runtime,
};
use weft_tests::{eventually, wait_ok, watchdog};

/// Holds the other tests of this binary off.
fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// How long any test here may take before the binary is ended.
const LIMIT: Duration = Duration::from_secs(60);

/// The runtime answers: an op runs on its first domain.
fn answers(rt: &Runtime) -> bool {
    let lane = rt.lane(0).expect("a lane");
    wait_ok(lane.run(|_| 6 * 7).expect("submit")) == 42
}

/// A pool of `n` workers of the application's.
fn pool(n: usize) -> Arc<rayon::ThreadPool> {
    Arc::new(
        rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .thread_name(|i| format!("app-pool-{i}"))
            .build()
            .expect("a pool"),
    )
}

/// Whether this process may run on at least two CPUs; says why a test
/// skips when it may not.
fn two_cpus(test: &str) -> bool {
    let cpus = weft_topology::process_allowed_cpus().map_or(0, |c| c.len());
    if cpus < 2 {
        println!("{test}: skipped: needs two allowed CPUs, this process has {cpus}");
    }
    cpus >= 2
}

#[test]
fn an_op_whose_items_wait_on_their_own_domain_on_a_callers_pool_is_refused() {
    let _serial = serial();
    let _watchdog = watchdog("waits on a caller's pool", LIMIT);
    let pool = pool(3);
    let rt = Runtime::builder()
        .split(1)
        .host_pool(pool.clone())
        .build()
        .unwrap();
    let lane = rt.lane(0).unwrap();
    let inner = lane.clone();
    // Each item submits an op to the same domain and waits for it: the
    // domain's actor runs this op, so none of them could ever return.
    let op = lane
        .run(move |engine| {
            engine.install(|| {
                (0..64)
                    .into_par_iter()
                    .map(|i| {
                        // Slow enough that the pool's other workers steal.
                        thread::sleep(Duration::from_millis(1));
                        let on_actor = current_actor().is_some();
                        let ticket = inner.run(move |_| i).expect("submit");
                        (on_actor, ticket.wait().map_err(|e| e.is_would_deadlock()))
                    })
                    .collect::<Vec<_>>()
            })
        })
        .unwrap();
    let items = op
        .wait_timeout(Duration::from_secs(30))
        .expect("the op returns: no item waits for ever");
    assert!(
        items.iter().all(|(on, _)| *on),
        "every worker is the domain's"
    );
    assert!(
        items.iter().all(|(_, waited)| *waited == Err(true)),
        "{items:?}"
    );

    // Outside any op too: while the runtime runs, the pool is the domain's.
    let actor = rt.actor(0).unwrap().id();
    assert_eq!(pool.install(current_actor), Some(actor));
    let (release, stuck) = mpsc::channel::<()>();
    let pending = lane.run(move |_| stuck.recv().is_ok()).unwrap();
    let refused = pool.install(|| pending.wait().map_err(|e| e.is_would_deadlock()));
    assert_eq!(refused, Err(true));
    release.send(()).unwrap();
    rt.shutdown().unwrap();
    // Given back: no worker of the pool is marked any more.
    assert!(pool
        .broadcast(|_| current_actor())
        .iter()
        .all(Option::is_none));
}

#[test]
fn a_pool_lent_to_two_runtimes_counts_the_workers_the_first_holds() {
    let _serial = serial();
    let _watchdog = watchdog("a pool lent twice", LIMIT);
    let pool = pool(2);
    let first = Runtime::builder()
        .split(1)
        .host_pool(pool.clone())
        .build()
        .unwrap();
    // Built from one of the pool's workers, the other holds the first
    // runtime's actor: nothing is free.
    match pool.install(|| Runtime::builder().split(1).host_pool(pool.clone()).build()) {
        Err(BuildError::HostPool {
            domains: 1,
            workers: 0,
            held: 1,
        }) => {}
        other => panic!("expected HostPool, got {other:?}"),
    }
    if two_cpus("a_pool_lent_to_two_runtimes") {
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
                    held: 1
                }
            ),
            "{err}"
        );
        assert!(err
            .to_string()
            .contains("1 of its workers already run actors"));
    }
    // One worker is free: a second one-domain runtime is hosted beside.
    let second = Runtime::builder()
        .split(1)
        .host_pool(pool.clone())
        .build()
        .unwrap();
    assert!(answers(&first) && answers(&second));
    // The seats are given back as each runtime's actor ends, before its
    // shutdown returns.
    first.shutdown().unwrap();
    second.shutdown().unwrap();
    let again = pool.install(|| Runtime::builder().split(1).host_pool(pool.clone()).build());
    assert!(again.is_ok_and(|rt| answers(&rt)));
}

#[test]
fn a_host_that_keeps_the_job_fails_the_build_in_time() {
    let _serial = serial();
    let _watchdog = watchdog("a kept job", LIMIT);
    let kept = Arc::new(Mutex::new(Vec::<ActorJob>::new()));
    let keep = kept.clone();
    let err = Runtime::builder()
        .split(1)
        .overlap(Overlap::Refuse)
        .host_timeout(Duration::from_millis(100))
        .host(move |_, job| {
            keep.lock().unwrap().push(job);
            Ok(())
        })
        .build()
        .unwrap_err();
    let text = err.to_string();
    assert!(
        matches!(
            &err,
            BuildError::Actor {
                domain: 0,
                source: SpawnError::HostTimedOut { .. }
            }
        ),
        "{text}"
    );
    assert!(
        text.contains("did not begin its job within 100ms"),
        "{text}"
    );
    // Its CPUs are free, and the job run late does nothing and returns.
    let rt = Runtime::builder()
        .split(1)
        .overlap(Overlap::Refuse)
        .build()
        .unwrap();
    let job = kept.lock().unwrap().pop().expect("the kept job");
    thread::spawn(move || job.run()).join().unwrap();
    assert!(answers(&rt));
    assert!(rt.overlaps().is_empty());
}

#[test]
fn a_thread_that_ran_an_actor_is_given_back_unmarked() {
    let _serial = serial();
    let _watchdog = watchdog("a thread given back", LIMIT);
    let (done_tx, done) = mpsc::channel();
    let rt = Runtime::builder()
        .split(1)
        .threads_per_domain(1)
        .host(move |_, job| {
            let done = done_tx.clone();
            thread::Builder::new()
                .name("app-host".into())
                .spawn(move || {
                    job.run();
                    // The same thread, after the actor has shut down: it
                    // waits on another runtime's op and shuts it down.
                    let other = Runtime::builder().split(1).build().unwrap();
                    let value = other.lane(0).unwrap().run(|_| 7).unwrap().wait();
                    let _ = done.send((current_actor(), value.is_ok(), other.shutdown().is_ok()));
                })?;
            Ok(())
        })
        .build()
        .unwrap();
    assert!(answers(&rt));
    rt.shutdown().unwrap();
    let (marked, waited, shut) = done.recv().unwrap();
    assert_eq!(marked, None);
    assert!(waited && shut);
}

#[test]
fn a_launcher_that_asks_for_the_global_runtime_is_answered_not_held() {
    let _serial = serial();
    let _watchdog = watchdog("global() from a launcher", LIMIT);
    let (asked_tx, asked) = mpsc::channel();
    let asked_tx = Mutex::new(asked_tx);
    let rt = Runtime::builder()
        .split(1)
        .host(move |_, job| {
            // A library the launcher calls wants the process's runtime,
            // whose CPUs are the ones being built.
            let global = Runtime::global().map(|g| g.id());
            asked_tx.lock().unwrap().send(global).unwrap();
            thread::Builder::new().spawn(move || job.run())?;
            Ok(())
        })
        .build()
        .unwrap();
    match asked.recv().unwrap() {
        Err(BuildError::SharesOwnBuild { runtime, .. }) => assert_eq!(runtime, rt.id()),
        other => panic!("expected SharesOwnBuild, got {other:?}"),
    }
    // Once built, it is the one the process shares.
    assert_eq!(Runtime::global().unwrap().id(), rt.id());
    Runtime::shutdown_global().unwrap();
    assert!(rt.lane(0).is_err());
}

#[test]
fn no_runtime_whose_shutdown_began_is_handed_out() {
    let _serial = serial();
    let _watchdog = watchdog("closed runtimes handed out", LIMIT);
    // A shutdown that timed out, its op still running.
    let global = Runtime::global().unwrap();
    let (release, stuck) = mpsc::channel::<()>();
    let (started_tx, started) = mpsc::channel();
    let op = global
        .lane(0)
        .unwrap()
        .run(move |_| {
            started_tx.send(()).unwrap();
            stuck.recv().is_ok()
        })
        .unwrap();
    started.recv().unwrap();
    assert!(matches!(
        global.shutdown_timeout(Duration::from_millis(20)),
        Err(ShutdownError::TimedOut { .. })
    ));
    // The process holds the only handle left: the next runtime is built
    // without waiting for the stuck op (a drop of that handle would).
    let closed = global.id();
    drop(global);
    let next = Runtime::global().unwrap();
    assert_ne!(next.id(), closed);
    assert!(answers(&next));
    release.send(()).unwrap();
    assert!(wait_ok(op));
    // Still closed once the stuck op returned.
    let again = Runtime::global().unwrap();
    assert_eq!(again.id(), next.id());

    // `shutdown_global` from inside one of its own ops: refused, but the
    // shutdown has begun.
    let inside = next
        .lane(0)
        .unwrap()
        .run(|_| Runtime::shutdown_global().map(|_| ()))
        .unwrap();
    assert!(matches!(
        wait_ok(inside),
        Err(ShutdownError::WouldDeadlock { .. })
    ));
    let third = Runtime::global().unwrap();
    assert_ne!(third.id(), next.id());
    assert!(answers(&third));
    // Joins the process's runtime and the two closed before it.
    Runtime::shutdown_global().unwrap();
    assert!(weft::runtime::live_runtimes().is_empty());

    // An application's runtime while it drains: a sharing build builds
    // beside it instead of sharing it.
    let app = Runtime::builder().split(1).build().unwrap();
    let (release, stuck) = mpsc::channel::<()>();
    let _held = app
        .lane(0)
        .unwrap()
        .run(move |_| stuck.recv().is_ok())
        .unwrap();
    let draining = {
        let app = app.clone();
        thread::spawn(move || app.shutdown().map(|_| ()))
    };
    eventually("the shutdown has begun", || app.lane(0).is_err());
    let shared = Runtime::builder()
        .split(1)
        .overlap(Overlap::Share)
        .build()
        .unwrap();
    assert_ne!(shared.id(), app.id());
    assert!(answers(&shared));
    assert_eq!(shared.overlaps()[0].runtime, app.id());
    release.send(()).unwrap();
    draining.join().unwrap().unwrap();
}
