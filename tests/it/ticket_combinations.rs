//! Every ticket outcome × when the ticket is waited for (before, during,
//! after the op finishes, by a thread or by `.await`) × a dropped ticket;
//! values are dropped exactly once. Then `WouldDeadlock` in its places.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use crossbeam_channel::bounded;
use weft::{
    actor::{Actor, ActorBuilder},
    error::{TryWaitError, WaitTimeoutError},
    Runtime, Ticket, TicketError,
};
use weft_tests::{block_on, eventually, wait, wait_ok, Counted, LIMIT};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Value,
    Error,
    Panic,
    Cancel,
    Lost,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum When {
    /// A thread waits while the op is still queued.
    Before,
    /// A thread waits while the op runs.
    During,
    /// The op has finished when the wait starts.
    After,
    /// `.await` while the op is queued.
    Await,
    /// The ticket is dropped while the op is queued.
    Dropped,
}

const OUTCOMES: [Outcome; 5] = [
    Outcome::Value,
    Outcome::Error,
    Outcome::Panic,
    Outcome::Cancel,
    Outcome::Lost,
];
const WHENS: [When; 5] = [
    When::Before,
    When::During,
    When::After,
    When::Await,
    When::Dropped,
];

type Result = std::result::Result<Counted, TicketError<String>>;

fn check(outcome: Outcome, result: Result) {
    match (outcome, result) {
        (Outcome::Value, Ok(v)) => assert_eq!(v.value, 7),
        (Outcome::Error, Err(TicketError::Op(e))) => assert_eq!(e, "bad input 3"),
        (Outcome::Panic, Err(e @ TicketError::Panicked(_))) => {
            assert!(e.is_panic());
            assert!(e.to_string().contains("boom 3"), "{e}");
        }
        (Outcome::Cancel, Err(e)) => assert!(e.is_cancelled(), "{e:?}"),
        (Outcome::Lost, Err(e)) => assert!(e.is_actor_lost(), "{e:?}"),
        (outcome, result) => panic!("{outcome:?}: unexpected {result:?}"),
    }
}

/// Runs one combination; returns how many values were made and dropped.
fn combination(outcome: Outcome, when: When) {
    let drops = Arc::new(AtomicUsize::new(0));
    let made = Arc::new(AtomicUsize::new(0));
    let actor: Actor<()> = ActorBuilder::new(format!("weft-test-{outcome:?}-{when:?}"))
        .spawn(|| Ok::<_, String>(()))
        .expect("spawn");
    let lane = actor.lane().expect("lane");
    let (release_tx, release) = bounded::<()>(1);
    let (started_tx, started) = bounded::<()>(1);

    // The first op holds the actor until released; for `During` the op under
    // test is that op itself.
    let gate_actor = actor.clone();
    let gate = move || {
        let _ = started_tx.send(());
        let _ = release.recv_timeout(LIMIT);
        match outcome {
            Outcome::Cancel => {
                // Begins shutdown from inside the actor, deterministically
                // before the op under test is taken.
                assert!(gate_actor.shutdown_now().is_err());
            }
            Outcome::Lost => weft_actors::fault::kill_actor(),
            _ => {}
        }
    };
    let body = {
        let (drops, made) = (drops.clone(), made.clone());
        move || -> std::result::Result<Counted, String> {
            match outcome {
                Outcome::Error => Err(format!("bad input {}", 3)),
                Outcome::Panic => panic!("boom {}", 3),
                _ => {
                    made.fetch_add(1, Ordering::SeqCst);
                    Ok(Counted::new(7, &drops))
                }
            }
        }
    };
    let ticket: Ticket<Counted, String> = if when == When::During
        && matches!(outcome, Outcome::Value | Outcome::Error | Outcome::Panic)
    {
        lane.try_run(move |_| {
            gate();
            body()
        })
        .expect("open")
    } else {
        drop(lane.run(move |_| gate()).expect("open"));
        lane.try_run(move |_| body()).expect("open")
    };
    started.recv_timeout(LIMIT).expect("first op started");

    match when {
        When::Before | When::During => {
            let waiter = thread::spawn(move || wait(ticket));
            thread::sleep(Duration::from_millis(10));
            release_tx.send(()).expect("gate waits");
            check(outcome, waiter.join().expect("waiter"));
        }
        When::Await => {
            let waiter = thread::spawn(move || block_on(ticket));
            thread::sleep(Duration::from_millis(10));
            release_tx.send(()).expect("gate waits");
            check(outcome, waiter.join().expect("waiter"));
        }
        When::After => {
            release_tx.send(()).expect("gate waits");
            eventually("the op finishes", || ticket.is_ready());
            check(outcome, wait(ticket));
        }
        When::Dropped => {
            drop(ticket);
            release_tx.send(()).expect("gate waits");
        }
    }
    let report = actor.shutdown().expect("joined");
    let made = made.load(Ordering::SeqCst);
    assert_eq!(
        made,
        usize::from(outcome == Outcome::Value),
        "{outcome:?} {when:?}"
    );
    assert_eq!(
        drops.load(Ordering::SeqCst),
        made,
        "{outcome:?} {when:?}: dropped once"
    );
    match outcome {
        Outcome::Lost => {
            assert_eq!(
                report.died.as_deref(),
                Some("killed by the fault-injection hook")
            );
            assert_eq!(report.lost, 2, "{report}");
        }
        Outcome::Cancel => assert_eq!(report.cancelled, 1, "{report}"),
        Outcome::Panic => assert_eq!(report.panicked, 1, "{report}"),
        Outcome::Error => assert_eq!(report.failed, 1, "{report}"),
        Outcome::Value => assert_eq!(
            report.completed,
            2 - u64::from(when == When::During),
            "{report}"
        ),
    }
}

#[test]
fn drops_every_outcome_at_every_time() {
    for outcome in OUTCOMES {
        for when in WHENS {
            combination(outcome, when);
        }
    }
}

#[test]
fn wait_timeout_hands_the_ticket_back() {
    let actor = ActorBuilder::new("weft-test-timeout")
        .spawn(|| Ok::<_, String>(()))
        .expect("spawn");
    let lane = actor.lane().expect("lane");
    let hold = weft_tests::Hold::on(&lane);
    let ticket = lane.run(|_| 5).expect("open");
    let ticket = match ticket.wait_timeout(Duration::from_millis(5)) {
        Err(e @ WaitTimeoutError::Timeout(_)) => {
            assert!(e.is_timeout());
            match e {
                WaitTimeoutError::Timeout(t) => t,
                WaitTimeoutError::Failed(_) => unreachable!(),
            }
        }
        other => panic!("expected a timeout, got {other:?}"),
    };
    let ticket = match ticket.try_wait() {
        Err(TryWaitError::Pending(t)) => t,
        other => panic!("expected pending, got {other:?}"),
    };
    assert!(!ticket.is_ready());
    wait_ok(hold.release());
    eventually("the op finishes", || ticket.is_ready());
    assert_eq!(ticket.try_wait().expect("finished"), 5);
}

#[test]
fn would_deadlock_on_own_actor_and_other_actors() {
    let actor = ActorBuilder::new("weft-test-reentry")
        .spawn(|| Ok::<_, String>(Vec::<&'static str>::new()))
        .expect("spawn");
    let other = ActorBuilder::new("weft-test-other")
        .spawn(|| Ok::<_, String>(()))
        .expect("spawn");
    let lane = actor.lane().expect("lane");
    let inner = lane.clone();
    let other_lane = other.lane().expect("lane");
    let outcome = lane
        .run(move |log: &mut Vec<&'static str>| {
            log.push("outer");
            // Queued behind us: waiting for it would hang the actor.
            let queued = inner
                .run(|log: &mut Vec<&'static str>| log.push("inner"))
                .expect("open");
            let own = queued.wait();
            let held = weft_tests::Hold::on(&other_lane);
            let theirs = other_lane.run(|_| ()).expect("open").wait();
            let timed = other_lane.run(|_| ()).expect("open").wait_timeout(LIMIT);
            drop(held);
            (
                own.unwrap_err().is_would_deadlock(),
                theirs.unwrap_err().is_would_deadlock(),
                matches!(
                    timed,
                    Err(WaitTimeoutError::Failed(TicketError::WouldDeadlock))
                ),
            )
        })
        .expect("open");
    assert_eq!(wait_ok(outcome), (true, true, true));
    // The op whose wait was refused still ran, after the outer one.
    let log = wait_ok(
        lane.run(|log: &mut Vec<&'static str>| log.clone())
            .expect("open"),
    );
    assert_eq!(log, ["outer", "inner"]);
}

#[test]
fn finished_tickets_can_be_waited_from_an_actor() {
    let actor = ActorBuilder::new("weft-test-finished")
        .spawn(|| Ok::<_, String>(()))
        .expect("spawn");
    let lane = actor.lane().expect("lane");
    let done = lane.run(|_| 11).expect("open");
    eventually("the op finishes", || done.is_ready());
    let got = wait_ok(lane.run(move |_| done.wait()).expect("open"));
    assert_eq!(got.expect("no deadlock on a finished op"), 11);
}

#[test]
fn would_deadlock_from_a_pool_worker() {
    let rt = Runtime::builder()
        .split(1)
        .threads_per_domain(2)
        .build()
        .expect("runtime");
    let lane = rt.lane(0).expect("lane");
    let inner = lane.clone();
    let refused = lane
        .run(move |engine| {
            let queued = inner.run(|_| 1).expect("open");
            // Run the wait on the other worker of the pool, not the actor.
            let (a, b) = engine.pool().join(
                || (),
                move || (weft::actor::current_actor().is_some(), queued.wait()),
            );
            let () = a;
            b
        })
        .expect("open");
    let (marked, result) = wait_ok(refused);
    assert!(marked, "pool workers carry their actor's id");
    assert!(result.unwrap_err().is_would_deadlock());
}
