//! Runtime calls from inside ops and factories, and from other threads
//! during a shutdown, never wait on each other: no lock of the runtime is
//! held across a join or a user's code. Each scenario that used to
//! deadlock has a bound: it fails (after `LIMIT`) instead of hanging.

use std::thread;
use std::time::Duration;

use crossbeam_channel::bounded;
use weft::{error::ShutdownError, CpuEngine, Runtime, RuntimeError};
use weft_tests::{unpinned_pair, wait_ok, LIMIT};

fn runtime() -> Runtime {
    unpinned_pair().build().expect("runtime")
}

/// Runs `f` on a thread and returns its result, or fails the test when it
/// does not return within `LIMIT` (the thread is left behind).
fn bounded_call<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = bounded(1);
    thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(LIMIT)
        .unwrap_or_else(|_| panic!("{what} did not return within {LIMIT:?}"))
}

/// Runs `call` inside an op on domain 0 while another thread shuts the
/// runtime down (the op waits until the shutdown has begun and reached
/// the join of this very actor); returns the shutdown's result and the
/// op's value. Both must come back within `LIMIT`.
fn during_shutdown<T: Send + 'static>(
    call: impl FnOnce(&Runtime) -> T + Send + 'static,
) -> (Result<weft::runtime::RuntimeReport, ShutdownError>, T) {
    let rt = runtime();
    let lane = rt.lane(0).unwrap();
    let (go_tx, go) = bounded::<()>(1);
    let inside = rt.clone();
    let op = lane
        .run(move |_: &mut CpuEngine| {
            go.recv_timeout(LIMIT).expect("the shutdown begins");
            thread::sleep(Duration::from_millis(50));
            call(&inside)
        })
        .unwrap();
    let stopper = rt.clone();
    let report = bounded_call("shutdown", move || {
        go_tx.send(()).unwrap();
        stopper.shutdown()
    });
    (report, wait_ok(op))
}

#[test]
fn an_op_reads_stats_while_another_thread_shuts_down() {
    let (report, actors) = during_shutdown(|rt| rt.stats().actors.len());
    assert!(report.is_ok(), "{report:?}");
    assert_eq!(actors, 2);
}

#[test]
fn an_op_that_shuts_down_during_a_shutdown_is_refused() {
    let (report, inner) = during_shutdown(|rt| rt.shutdown().map(|_| ()));
    assert!(report.is_ok(), "{report:?}");
    assert!(matches!(inner, Err(ShutdownError::WouldDeadlock { .. })));
}

#[test]
fn an_op_that_spawns_an_actor_during_a_shutdown_is_refused() {
    let (report, spawned) =
        during_shutdown(|rt| rt.spawn_actor(1, || Ok::<_, String>(0u8)).map(|_| ()));
    assert!(report.is_ok(), "{report:?}");
    assert!(matches!(spawned, Err(RuntimeError::Closed(_))));
}

#[test]
fn a_factory_reads_the_runtimes_stats() {
    let rt = runtime();
    let inside = rt.clone();
    let spawner = rt.clone();
    let actor = bounded_call("spawn_actor", move || {
        spawner.spawn_actor(0, move || Ok::<_, String>(inside.stats().actors.len()))
    })
    .expect("the actor starts");
    let lane = actor.lane().unwrap();
    assert_eq!(
        wait_ok(lane.submit(weft::Op::new(|n: &mut usize| *n)).unwrap()),
        2
    );
    rt.shutdown().unwrap();
}

#[test]
fn stats_do_not_wait_for_a_slow_factory() {
    let rt = runtime();
    let (stats_done, done) = bounded::<()>(1);
    let spawner = rt.clone();
    let spawn = thread::spawn(move || {
        // The factory returns once stats were read elsewhere, or gives up.
        spawner.spawn_actor(0, move || Ok::<_, String>(done.recv_timeout(LIMIT).is_ok()))
    });
    thread::sleep(Duration::from_millis(50));
    let reader = rt.clone();
    let count = bounded_call("stats", move || reader.stats().actors.len());
    stats_done.send(()).unwrap();
    let actor = spawn.join().unwrap().expect("the actor starts");
    let lane = actor.lane().unwrap();
    let saw = wait_ok(lane.submit(weft::Op::new(|saw: &mut bool| *saw)).unwrap());
    assert!(saw, "the factory waited out its limit: stats blocked on it");
    assert!(count >= 2);
    rt.shutdown().unwrap();
}

#[test]
fn a_spawn_that_ends_after_a_shutdown_began_is_refused_and_stopped() {
    let rt = runtime();
    let (release_tx, release) = bounded::<()>(1);
    let spawner = rt.clone();
    let spawn = thread::spawn(move || {
        spawner.spawn_actor(0, move || {
            let _ = release.recv_timeout(LIMIT);
            Ok::<_, String>(())
        })
    });
    thread::sleep(Duration::from_millis(50));
    let stopper = rt.clone();
    let report = bounded_call("shutdown", move || stopper.shutdown()).expect("shutdown");
    release_tx.send(()).unwrap();
    assert!(matches!(
        spawn.join().unwrap(),
        Err(RuntimeError::Closed(_))
    ));
    // The shutdown's report lists the domains only: the late actor was
    // never added, and was stopped by its own spawn.
    assert_eq!(report.actors.len(), 2);
}

/// `rt.shutdown_timeout` of 50 ms, bounded, which must time out: the
/// error and the actors it names.
fn timed_out(rt: &Runtime) -> (ShutdownError, Vec<weft::actor::Stuck>) {
    let err = bounded_call("shutdown_timeout", {
        let rt = rt.clone();
        move || rt.shutdown_timeout(Duration::from_millis(50))
    })
    .unwrap_err();
    match &err {
        ShutdownError::TimedOut { stuck, .. } => {
            let stuck = stuck.clone();
            (err, stuck)
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn shutdown_timeout_names_the_stuck_domain_and_a_later_shutdown_joins_it() {
    use weft::{actor::StuckAt, Op};
    let rt = unpinned_pair()
        .thread_names("stuck")
        .build()
        .expect("runtime");
    let (release, released) = bounded::<()>(1);
    let lane = rt.lane(1).unwrap();
    let held = lane
        .submit(
            Op::new(move |_: &mut CpuEngine| {
                let _ = released.recv_timeout(LIMIT);
            })
            .label("stuck"),
        )
        .unwrap();
    weft_tests::eventually("the op runs", || rt.stats().actors[1].running.is_some());
    let (err, stuck) = timed_out(&rt);
    // Domain 0 finished; domain 1 is named with its op.
    assert_eq!(stuck.len(), 1, "{err}");
    assert_eq!(stuck[0].actor, "stuck-cpu-1");
    assert!(
        matches!(stuck[0].doing, StuckAt::Op { label: "stuck", .. }),
        "{err}"
    );
    // Stats answer while it is stuck.
    let stats = bounded_call("stats", {
        let rt = rt.clone();
        move || rt.stats()
    });
    assert_eq!(stats.actors[1].running_op, Some("stuck"));
    release.send(()).unwrap();
    let report = bounded_call("shutdown", move || rt.shutdown()).expect("joined");
    assert_eq!(report.actors.len(), 2);
    wait_ok(held);
    drop(lane);
    weft_tests::eventually("every thread is joined", || {
        weft_tests::threads_named("stuck") == 0
    });
}

#[test]
fn a_job_spawned_on_a_one_thread_pool_runs() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    // One thread per domain: the actor is its pool's only worker.
    let rt = unpinned_pair()
        .threads_per_domain(1)
        .build()
        .expect("runtime");
    let lane = rt.lane(0).unwrap();
    let (ran, runs) = bounded::<usize>(1);
    wait_ok(
        lane.run(move |engine: &mut CpuEngine| {
            engine.pool().spawn(move || ran.send(7).unwrap());
        })
        .unwrap(),
    );
    assert_eq!(runs.recv_timeout(LIMIT), Ok(7), "the spawned job ran");
    // Spawned just before the shutdown: run before it returns.
    let count = Arc::new(AtomicUsize::new(0));
    let counted = count.clone();
    wait_ok(
        lane.run(move |engine: &mut CpuEngine| {
            for _ in 0..3 {
                let counted = counted.clone();
                engine.pool().spawn(move || {
                    counted.fetch_add(1, Ordering::SeqCst);
                });
            }
        })
        .unwrap(),
    );
    drop(lane);
    bounded_call("shutdown", move || rt.shutdown()).expect("shut down");
    assert_eq!(count.load(Ordering::SeqCst), 3);
}

#[test]
fn a_pool_job_that_outlives_its_op_is_joined_or_named() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use weft::actor::StuckAt;
    let rt = unpinned_pair()
        .threads_per_domain(2)
        .thread_names("outlive")
        .build()
        .expect("runtime");
    let (release, released) = bounded::<()>(1);
    let done = Arc::new(AtomicBool::new(false));
    let finished = done.clone();
    wait_ok(
        rt.lane(0)
            .unwrap()
            .run(move |engine: &mut CpuEngine| {
                engine.pool().spawn(move || {
                    let _ = released.recv_timeout(LIMIT);
                    finished.store(true, Ordering::SeqCst);
                });
            })
            .unwrap(),
    );
    let (err, stuck) = timed_out(&rt);
    assert_eq!(stuck.len(), 1, "{err}");
    assert_eq!(
        (stuck[0].actor.as_str(), stuck[0].doing),
        ("outlive-cpu-0", StuckAt::Engine)
    );
    assert!(err.to_string().contains("drops its engine"), "{err}");
    release.send(()).unwrap();
    bounded_call("shutdown", move || rt.shutdown()).expect("joined");
    // The job ran to its end before the shutdown returned, and no pool
    // thread is left behind.
    assert!(done.load(Ordering::SeqCst));
    weft_tests::eventually("every thread is joined", || {
        weft_tests::threads_named("outlive") == 0
    });
}
