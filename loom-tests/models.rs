//! Loom models of the public protocols of `weft-actors`. Build and run with
//! `RUSTFLAGS="--cfg weft_loom" LOOM_MAX_PREEMPTIONS=2 cargo test --release
//! -p weft-loom-tests` (see `docs/loom.md`); without the flag this file is empty.
//!
//! Each model starts a real actor (its thread is a loom thread, its mailbox
//! and lanes the loom-built channel of the sync shim) and checks one race.
#![cfg(weft_loom)]

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;

use loom::thread;
use weft_actors::{Actor, ActorBuilder, Op, TicketError, WaitTimeoutError};

fn actor<E: Send + 'static>(name: &str, engine: E) -> Actor<E> {
    ActorBuilder::new(name)
        .spawn(move || Ok::<_, String>(engine))
        .expect("spawn")
}

/// Names a release queue's drains took, shared by whoever drains.
type Freed = Arc<std::sync::Mutex<Vec<u64>>>;

/// An actor whose housekeeping drains `released` into `freed`.
fn draining_actor(
    name: &str,
    released: Arc<weft_actors::Released<u64>>,
    freed: &Freed,
) -> Actor<()> {
    let seen = freed.clone();
    ActorBuilder::new(name)
        .spawn_with(
            || Ok::<_, String>(()),
            move |_: &mut (), _| {
                released.drain(|name| seen.lock().unwrap().push(name));
                None
            },
        )
        .expect("spawn")
}

/// The names freed, in order.
fn sorted(freed: &Freed) -> Vec<u64> {
    let mut names = freed.lock().unwrap().clone();
    names.sort_unstable();
    names
}

/// A value that counts its drops.
struct Counted(Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, SeqCst);
    }
}

/// Ticket: completion races with a waiting thread.
#[test]
fn ticket_complete_vs_wait() {
    loom::model(|| {
        let a = actor("loom-wait", 0u32);
        let lane = a.lane().expect("lane");
        let t = lane.run(|n: &mut u32| *n + 1).expect("open");
        assert_eq!(t.wait().expect("value"), 1);
        a.shutdown().expect("joined");
    });
}

/// Ticket: completion races with the ticket being dropped; the value is
/// dropped exactly once either way.
#[test]
fn ticket_complete_vs_drop() {
    loom::model(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let a = actor("loom-drop", ());
        let lane = a.lane().expect("lane");
        let d = drops.clone();
        let t = lane.run(move |_| Counted(d)).expect("open");
        drop(t);
        let report = a.shutdown().expect("joined");
        assert_eq!(report.completed, 1);
        assert_eq!(drops.load(SeqCst), 1);
    });
}

/// Ticket: completion races with a timed wait running out; either the value
/// or the ticket comes back, and the ticket then yields the value.
#[test]
fn ticket_complete_vs_timeout() {
    loom::model(|| {
        let a = actor("loom-timeout", ());
        let lane = a.lane().expect("lane");
        let t = lane.run(|_| 7u8).expect("open");
        let value = match t.wait_timeout(std::time::Duration::from_millis(1)) {
            Ok(v) => v,
            Err(WaitTimeoutError::Timeout(t)) => t.wait().expect("value"),
            Err(WaitTimeoutError::Failed(e)) => panic!("{e}"),
        };
        assert_eq!(value, 7);
        a.shutdown().expect("joined");
    });
}

/// Mailbox and intake: a submission races with `shutdown`: it is refused,
/// or accepted and then run (drain). Nothing is lost or left hanging.
#[test]
fn submit_vs_shutdown_drain() {
    loom::model(|| {
        let a = actor("loom-drain", 0u32);
        let lane = a.lane().expect("lane");
        let submitter = thread::spawn(move || match lane.run(|n: &mut u32| *n + 1) {
            Ok(t) => Some(t.wait()),
            Err(e) => {
                assert!(e.is_closed());
                None
            }
        });
        let report = a.shutdown().expect("joined");
        match submitter.join().expect("submitter") {
            Some(result) => {
                assert_eq!(result.expect("drain runs accepted ops"), 1);
                assert_eq!(report.completed, 1);
            }
            None => assert_eq!(report.completed, 0),
        }
    });
}

/// Intake, with a submitter that keeps its lane until after the shutdown
/// (so its handle's drop orders nothing before the actor finishes): its op
/// is refused, or accepted and run by the drain.
#[test]
fn submit_vs_shutdown_with_the_lane_kept() {
    loom::model(|| {
        let a = actor("loom-kept", 0u32);
        let lane = a.lane().expect("lane");
        let (tx, rx) = loom::sync::mpsc::channel();
        let submitter = thread::spawn(move || {
            let accepted = match lane.run(|n: &mut u32| *n + 1) {
                Ok(t) => Some(t),
                Err(e) => {
                    assert!(e.is_closed());
                    None
                }
            };
            // Kept until the shutdown has returned.
            let _ = rx.recv();
            accepted.map(|t| t.wait())
        });
        let report = a.shutdown().expect("joined");
        tx.send(()).expect("submitter waits");
        match submitter.join().expect("submitter") {
            Some(result) => {
                assert_eq!(result.expect("drain runs accepted ops"), 1);
                assert_eq!(report.completed, 1);
            }
            None => assert_eq!(report.completed, 0),
        }
    });
}

/// Intake with `shutdown_now`: an accepted op runs or is cancelled.
#[test]
fn submit_vs_shutdown_now() {
    loom::model(|| {
        let a = actor("loom-now", ());
        let lane = a.lane().expect("lane");
        let submitter = thread::spawn(move || lane.run(|_| 1u8).ok().map(|t| t.wait()));
        let report = a.shutdown_now().expect("joined");
        match submitter.join().expect("submitter") {
            Some(Ok(1)) => assert_eq!(report.completed, 1),
            Some(Err(TicketError::Cancelled)) => assert_eq!(report.cancelled, 1),
            None => assert_eq!(report.completed + report.cancelled, 0),
            Some(other) => panic!("unexpected {other:?}"),
        }
    });
}

/// Lane wake-up and actor idling: the actor goes idle between two round
/// trips while the next submission arrives; no wake-up is lost.
#[test]
fn actor_idle_vs_new_submission() {
    loom::model(|| {
        let a = actor("loom-idle", 0u32);
        let lane = a.lane().expect("lane");
        for expected in 1..=2 {
            let t = lane
                .run(|n: &mut u32| {
                    *n += 1;
                    *n
                })
                .expect("open");
            assert_eq!(t.wait().expect("value"), expected);
        }
        drop(lane);
        a.shutdown().expect("joined");
    });
}

/// Events: the producer's completion races with the consumer lane parking
/// on its event; the consumer is woken exactly when the producer is done.
#[test]
fn event_completion_vs_registration() {
    loom::model(|| {
        let producer = actor("loom-producer", 0u32);
        let consumer = actor("loom-consumer", ());
        let p = producer.lane().expect("lane");
        let c = consumer.lane().expect("lane");
        let made = p
            .run(|n: &mut u32| {
                *n = 5;
                *n
            })
            .expect("open");
        let after = c
            .submit(Op::new(|_: &mut ()| 1u32).after([made.event()]))
            .expect("open");
        // Read `after` first: once it is ready, `made` must be finished.
        assert!(!after.is_ready() || made.event().is_finished());
        assert_eq!(after.wait().expect("ran after"), 1);
        assert_eq!(made.wait().expect("value"), 5);
        consumer.shutdown().expect("joined");
        producer.shutdown().expect("joined");
    });
}

/// Lane scheduling: two lanes of one actor, the second ordered after the
/// first by an event; the parked lane is woken and order holds.
#[test]
fn lane_parking_and_wakeup() {
    loom::model(|| {
        let a = actor("loom-park", Vec::<u8>::new());
        let one = a.lane().expect("lane");
        let two = a.lane().expect("lane");
        let x = one.run(|log: &mut Vec<u8>| log.push(1)).expect("open");
        let y = two
            .submit(
                Op::new(|log: &mut Vec<u8>| {
                    log.push(2);
                    log.clone()
                })
                .after([x.event()]),
            )
            .expect("open");
        assert_eq!(y.wait().expect("ran"), [1, 2]);
        drop(x);
        a.shutdown().expect("joined");
    });
}

/// Lane lifecycle: the only handle of a lane is dropped right after its
/// submit, racing with the actor filing the new lane; the op still runs.
#[test]
fn lane_dropped_after_submit() {
    loom::model(|| {
        let a = actor("loom-dropped", ());
        let t = a.lane().expect("lane").run(|_| 3u8).expect("open");
        assert_eq!(t.wait().expect("ran"), 3);
        a.shutdown().expect("joined");
    });
}

/// Deferred release (the protocol behind tensor handles): a handle dropped
/// on another thread races with a queued op that reads the resource
/// through its own clone. The op always finds the resource; once every
/// handle is gone, the next op's drain releases it.
#[test]
fn handle_release_vs_queued_reader() {
    use std::collections::HashMap;
    use weft_actors::{release_queue, Released, Releaser};

    struct Handle {
        id: u64,
        releaser: Releaser<u64>,
    }
    impl Drop for Handle {
        fn drop(&mut self) {
            self.releaser.release(self.id);
        }
    }
    type Engine = (HashMap<u64, u64>, Released<u64>);
    fn drain(engine: &mut Engine) {
        let (store, released) = engine;
        released.drain(|id| {
            store.remove(&id);
        });
    }

    loom::model(|| {
        let (releaser, released) = release_queue();
        let a = actor("loom-release", (HashMap::from([(1u64, 10u64)]), released));
        let lane = a.lane().expect("lane");
        let handle = Arc::new(Handle { id: 1, releaser });
        let held = handle.clone();
        let read = lane
            .run(move |engine: &mut Engine| {
                drain(engine);
                let value = engine.0.get(&held.id).copied();
                drop(held);
                value
            })
            .expect("open");
        let dropper = thread::spawn(move || drop(handle));
        assert_eq!(read.wait().expect("ran"), Some(10));
        dropper.join().expect("joined");
        let left = lane
            .run(|engine: &mut Engine| {
                drain(engine);
                engine.0.len()
            })
            .expect("open");
        assert_eq!(left.wait().expect("ran"), 0);
        a.shutdown().expect("joined");
    });
}

/// Release queue: two handles released at once on other threads, nudging
/// the actor (one nudge per batch) while its housekeeping may be draining.
/// Every name is drained by the housekeeping alone (no op runs) before
/// the actor finishes.
#[test]
fn release_wakes_an_idle_actor() {
    use weft_actors::release_queue;

    loom::model(|| {
        let (releaser, released) = release_queue::<u64>();
        let freed = Freed::default();
        let a = draining_actor("loom-nudge", Arc::new(released), &freed);
        let releaser = releaser.nudging(a.nudge());
        let other = releaser.clone();
        let t = thread::spawn(move || assert!(other.release(1)));
        assert!(releaser.release(2));
        t.join().expect("joined");
        a.shutdown().expect("joined");
        assert_eq!(sorted(&freed), [1, 2]);
    });
}

/// Release queue: names released on two threads at once are all taken by
/// the one drain after them (a nudge asks for one drain per batch, so one
/// drain must take the whole batch).
#[test]
fn one_drain_takes_every_name_released_before_it() {
    use weft_actors::release_queue;

    loom::model(|| {
        let (releaser, released) = release_queue::<u64>();
        let other = releaser.clone();
        let t = thread::spawn(move || assert!(other.release(1)));
        assert!(releaser.release(2));
        t.join().expect("joined");
        let mut names = Vec::new();
        released.drain(|name| names.push(name));
        names.sort_unstable();
        assert_eq!(names, [1, 2]);
    });
}

/// Release queue drained from an op too: a release on another thread
/// races an op that drains without re-arming the nudge, then a second
/// release follows; every name is still freed (by the op or by the
/// housekeeping a nudge asked for) before the actor finishes.
#[test]
fn an_op_drain_keeps_the_nudge() {
    use weft_actors::release_queue;

    loom::model(|| {
        let (releaser, released) = release_queue::<u64>();
        let released = Arc::new(released);
        let freed = Freed::default();
        let a = draining_actor("loom-op-drain", released.clone(), &freed);
        let releaser = releaser.nudging(a.nudge());
        let other = releaser.clone();
        let t = thread::spawn(move || assert!(other.release(1)));
        let (seen, in_op) = (freed.clone(), released.clone());
        let op = a
            .lane()
            .expect("lane")
            .run(move |_: &mut ()| in_op.drain_in_op(|name| seen.lock().unwrap().push(name)))
            .expect("open");
        op.wait().expect("ran");
        assert!(releaser.release(2));
        t.join().expect("joined");
        a.shutdown().expect("joined");
        assert_eq!(sorted(&freed), [1, 2]);
    });
}

/// Lane bound: a lane of capacity 1 is full while a second submitter
/// arrives on another thread; the actor taking the first op frees the slot
/// and wakes the waiting submitter (no wake-up lost), and order holds.
#[test]
fn submit_waits_for_room() {
    loom::model(|| {
        let a = ActorBuilder::new("loom-room")
            .lane_capacity(1)
            .spawn(|| Ok::<_, String>(Vec::<u32>::new()))
            .expect("spawn");
        let lane = a.lane().expect("lane");
        let first = lane.run(|v: &mut Vec<u32>| v.push(1)).expect("open");
        let other = lane.clone();
        let t = thread::spawn(move || {
            other
                .run(|v: &mut Vec<u32>| {
                    v.push(2);
                    v.clone()
                })
                .expect("open")
                .wait()
                .expect("ran")
        });
        first.wait().expect("ran");
        assert_eq!(t.join().expect("joined"), [1, 2]);
        a.shutdown().expect("joined");
    });
}

/// Promise: a thread keeps it while an actor's op, ordered after its
/// event, is submitted; the op runs once, after the value is given.
#[test]
fn promise_kept_vs_dependent_op() {
    loom::model(|| {
        let a = actor("loom-promise", ());
        let lane = a.lane().expect("lane");
        let (promise, ticket) = weft_actors::Promise::<u32, String>::new("work");
        let event = ticket.event();
        let keeper = thread::spawn(move || promise.keep(3));
        let seen = event.clone();
        let after = lane
            .submit(Op::new(move |_: &mut ()| seen.is_finished()).after([event]))
            .expect("open");
        assert!(after.wait().expect("ran after the promise"));
        assert_eq!(ticket.wait().expect("kept"), 3);
        keeper.join().expect("keeper");
        a.shutdown().expect("joined");
    });
}

/// Promise: dropped unkept on another thread while an op waits on its
/// event; the op fails instead of waiting for ever, and so does the ticket.
#[test]
fn promise_dropped_vs_dependent_op() {
    loom::model(|| {
        let a = actor("loom-promise-drop", ());
        let lane = a.lane().expect("lane");
        let (promise, ticket) = weft_actors::Promise::<u32, String>::new("work");
        let dropper = thread::spawn(move || drop(promise));
        let after = lane
            .submit(Op::new(|_: &mut ()| ()).after([ticket.event()]))
            .expect("open");
        assert!(matches!(
            after.wait(),
            Err(TicketError::DependencyFailed(_))
        ));
        assert!(ticket.wait().unwrap_err().is_actor_lost());
        dropper.join().expect("dropper");
        a.shutdown().expect("joined");
    });
}
