//! Shutdown: drain completes everything accepted, immediate cancels what is
//! queued, both under concurrent submission; intake stops with typed errors.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;

use weft::{
    actor::ActorBuilder,
    error::{ShutdownError, SubmitError, TrySubmitError},
    Op, TicketError,
};
use weft_tests::{eventually, wait, wait_ok, Hold};

const THREADS: usize = 8;
const PER_THREAD: usize = 3_000;

/// Submits from many threads while `stop` runs; returns every accepted
/// ticket's result and the number of refused submissions.
fn race_shutdown(
    stop: impl FnOnce(&weft::actor::Actor<u64>) -> weft::actor::ShutdownReport,
) -> (
    Vec<Result<u64, TicketError>>,
    usize,
    weft::actor::ShutdownReport,
) {
    let actor = ActorBuilder::new("weft-test-race")
        .lane_capacity(64)
        .spawn(|| Ok::<_, String>(0u64))
        .expect("spawn");
    let started = Arc::new(AtomicUsize::new(0));
    let (results, refused, report) = thread::scope(|s| {
        let submitters: Vec<_> = (0..THREADS)
            .map(|_| {
                let lane = actor.lane().expect("lane");
                let started = started.clone();
                s.spawn(move || {
                    let mut tickets = Vec::new();
                    let mut refused = 0;
                    for _ in 0..PER_THREAD {
                        started.fetch_add(1, Ordering::Relaxed);
                        match lane.run(|n: &mut u64| {
                            *n += 1;
                            *n
                        }) {
                            Ok(t) => tickets.push(t),
                            Err(e) => {
                                assert!(e.is_closed(), "{e}");
                                refused += 1;
                            }
                        }
                    }
                    (tickets.into_iter().map(wait).collect::<Vec<_>>(), refused)
                })
            })
            .collect();
        eventually("submitters are busy", || {
            started.load(Ordering::Relaxed) > THREADS * PER_THREAD / 4
        });
        let report = stop(&actor);
        let mut results = Vec::new();
        let mut refused = 0;
        for s in submitters {
            let (r, n) = s.join().expect("submitter");
            results.extend(r);
            refused += n;
        }
        (results, refused, report)
    });
    assert_eq!(results.len() + refused, THREADS * PER_THREAD);
    (results, refused, report)
}

#[test]
fn drain_completes_every_accepted_op_under_concurrent_submit() {
    let (results, refused, report) = race_shutdown(|a| a.shutdown().expect("joined"));
    let mut values: Vec<u64> = results
        .into_iter()
        .map(|r| r.expect("drain runs every accepted op"))
        .collect();
    values.sort_unstable();
    let expected: Vec<u64> = (1..=values.len() as u64).collect();
    assert_eq!(values, expected, "every op ran exactly once");
    assert_eq!(report.completed as usize, values.len());
    assert_eq!(report.cancelled, 0);
    eprintln!("drain: {} ran, {refused} refused after close", values.len());
}

#[test]
fn now_cancels_queued_ops_under_concurrent_submit() {
    let (results, refused, report) = race_shutdown(|a| a.shutdown_now().expect("joined"));
    let ran = results.iter().filter(|r| r.is_ok()).count();
    let cancelled = results
        .iter()
        .filter(|r| matches!(r, Err(TicketError::Cancelled)))
        .count();
    assert_eq!(
        ran + cancelled,
        results.len(),
        "only values and cancellations"
    );
    assert_eq!(report.completed as usize, ran);
    assert_eq!(report.cancelled as usize, cancelled);
    eprintln!("now: {ran} ran, {cancelled} cancelled, {refused} refused");
}

#[test]
fn disconnect_after_shutdown_refuses_with_the_op_back() {
    let actor = ActorBuilder::new("weft-test-closed")
        .spawn(|| Ok::<_, String>(()))
        .expect("spawn");
    let lane = actor.lane().expect("lane");
    let first = actor.shutdown().expect("joined");
    assert_eq!(actor.shutdown().expect("again"), first, "same report twice");
    assert_eq!(actor.shutdown_now().expect("again"), first);
    assert!(!actor.is_open());

    let flag = Arc::new(AtomicBool::new(false));
    let f = flag.clone();
    let err = lane
        .submit(Op::new(move |_: &mut ()| f.store(true, Ordering::SeqCst)))
        .unwrap_err();
    assert!(matches!(err, SubmitError::Closed(_)));
    assert_eq!(err.to_string(), "the actor is shut down");
    // The op comes back whole: run its body by hand.
    let op = err.into_inner();
    assert!(!flag.load(Ordering::SeqCst));
    drop(op);
    let err = lane.try_submit(Op::new(|_: &mut ()| ())).unwrap_err();
    assert!(matches!(err, TrySubmitError::Closed(_)));
    let err = actor.lane().unwrap_err();
    assert_eq!(err.to_string(), "actor `weft-test-closed` is shut down");
}

#[test]
fn dropping_the_last_handle_drains() {
    let actor = ActorBuilder::new("weft-test-drop")
        .spawn(|| Ok::<_, String>(0u32))
        .expect("spawn");
    let lane = actor.lane().expect("lane");
    let hold = Hold::on(&lane);
    let tickets: Vec<_> = (0..100)
        .map(|_| {
            lane.run(|n: &mut u32| {
                *n += 1;
                *n
            })
            .expect("open")
        })
        .collect();
    let dropper = thread::spawn(move || drop(actor));
    drop(hold);
    dropper.join().expect("drop joins the actor");
    let values: Vec<u32> = tickets.into_iter().map(wait_ok).collect();
    assert_eq!(values, (1..=100).collect::<Vec<_>>());
    assert!(lane.run(|_| ()).unwrap_err().is_closed());
}

#[test]
fn shutdown_from_inside_an_actor_begins_but_does_not_join() {
    let actor = ActorBuilder::new("weft-test-self-stop")
        .spawn(|| Ok::<_, String>(()))
        .expect("spawn");
    let lane = actor.lane().expect("lane");
    let me = actor.clone();
    let result = wait_ok(lane.run(move |_| me.shutdown()).expect("open"));
    assert_eq!(
        result.unwrap_err(),
        ShutdownError::WouldDeadlock {
            actor: "weft-test-self-stop".into()
        }
    );
    assert!(!actor.is_open());
    let report = actor.shutdown().expect("joined from outside");
    assert_eq!(report.completed, 1);
}

#[test]
fn shutdown_timeout_names_the_op_that_does_not_return() {
    use std::time::{Duration, Instant};
    use weft::actor::StuckAt;
    use weft_tests::LIMIT;

    let actor = ActorBuilder::new("weft-test-stuck")
        .spawn(|| Ok::<_, String>(()))
        .expect("spawn");
    let lane = actor.lane().expect("lane");
    let (release, released) = crossbeam_channel::bounded::<()>(1);
    let held = lane
        .submit(
            Op::new(move |_: &mut ()| {
                let _ = released.recv_timeout(LIMIT);
            })
            .label("never returns"),
        )
        .expect("open");
    eventually("the op runs", || actor.stats().running.is_some());
    let queued = lane.run(|_| ()).expect("open");
    let started = Instant::now();
    let err = actor
        .shutdown_timeout(Duration::from_millis(50))
        .unwrap_err();
    assert!(started.elapsed() < LIMIT);
    let ShutdownError::TimedOut { timeout, stuck } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(*timeout, Duration::from_millis(50));
    assert_eq!(stuck.len(), 1);
    assert_eq!(stuck[0].actor, "weft-test-stuck");
    assert_eq!(
        stuck[0].doing,
        StuckAt::Op {
            lane: lane.id(),
            label: "never returns"
        }
    );
    assert!(err.to_string().contains("`never returns` of lane"), "{err}");
    // The actor still answers questions, and a zero deadline only looks.
    let stats = actor.stats();
    assert_eq!(
        (stats.running, stats.running_op),
        (Some(lane.id()), Some("never returns"))
    );
    assert!(matches!(
        actor.shutdown_timeout(Duration::ZERO),
        Err(ShutdownError::TimedOut { .. })
    ));
    release.send(()).expect("the op waits");
    let report = actor.shutdown().expect("joined");
    assert_eq!((report.completed, report.cancelled), (1, 1), "{report}");
    wait_ok(held);
    assert!(matches!(wait(queued), Err(TicketError::Cancelled)));
    // Joined: the same report, at once.
    assert_eq!(
        actor.shutdown_timeout(Duration::ZERO).expect("joined"),
        report
    );
}
