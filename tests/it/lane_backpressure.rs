//! Bounded lanes: `try_submit` reports `Full`, `submit` waits,
//! `submit_timeout` times out; refused ops come back; nothing is lost.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use weft::{
    actor::ActorBuilder,
    error::{SubmitTimeoutError, TrySubmitError},
    Op,
};
use weft_tests::{eventually, wait_ok, Hold};

const CAPACITY: usize = 4;

#[test]
fn full_lane_refuses_waits_and_loses_nothing() {
    let actor = ActorBuilder::new("weft-test-backpressure")
        .lane_capacity(CAPACITY)
        .spawn(|| Ok::<_, String>(Vec::<u32>::new()))
        .expect("spawn");
    let lane = actor.lane().expect("lane");
    let hold = Hold::on(&lane);

    let mut tickets = Vec::new();
    for i in 0..CAPACITY as u32 {
        tickets.push(
            lane.try_submit(Op::new(move |log: &mut Vec<u32>| log.push(i)))
                .expect("room"),
        );
    }
    // Full: the op comes back and can be submitted again later.
    let refused = match lane.try_submit(Op::new(|log: &mut Vec<u32>| log.push(100))) {
        Err(e @ TrySubmitError::Full(_)) => {
            assert!(e.is_full());
            assert_eq!(e.to_string(), "the lane is full");
            e.into_inner()
        }
        other => panic!("expected Full, got {other:?}"),
    };
    let timed_out = match lane.submit_timeout(
        Op::new(|log: &mut Vec<u32>| log.push(101)),
        Duration::from_millis(20),
    ) {
        Err(e @ SubmitTimeoutError::Timeout(_)) => {
            assert!(e.is_timeout());
            e.into_inner()
        }
        other => panic!("expected Timeout, got {other:?}"),
    };

    // A blocking submit waits until the actor makes room.
    let returned = Arc::new(AtomicBool::new(false));
    let blocked = {
        let lane = lane.clone();
        let returned = returned.clone();
        thread::spawn(move || {
            let t = lane
                .submit(Op::new(|log: &mut Vec<u32>| log.push(102)))
                .expect("accepted once there is room");
            returned.store(true, Ordering::SeqCst);
            t
        })
    };
    thread::sleep(Duration::from_millis(50));
    assert!(
        !returned.load(Ordering::SeqCst),
        "submit returned while the lane was full"
    );
    wait_ok(hold.release());
    eventually("the blocked submit returns", || {
        returned.load(Ordering::SeqCst)
    });
    wait_ok(blocked.join().expect("submitter"));
    tickets.push(lane.submit(refused).expect("resubmitted"));
    tickets.push(lane.submit(timed_out).expect("resubmitted"));
    for t in tickets {
        wait_ok(t);
    }
    let log = wait_ok(lane.run(|log: &mut Vec<u32>| log.clone()).expect("open"));
    assert_eq!(log, [0, 1, 2, 3, 102, 100, 101]);
}

#[test]
fn zero_capacity_is_refused() {
    let err = ActorBuilder::new("weft-test-zero")
        .lane_capacity(0)
        .spawn(|| Ok::<_, String>(()))
        .unwrap_err();
    assert!(
        matches!(err, weft::error::SpawnError::ZeroLaneCapacity),
        "{err}"
    );
    assert!(err.to_string().contains("got 0"));
}

#[test]
fn submit_from_an_actor_to_a_full_lane_would_deadlock() {
    let actor = ActorBuilder::new("weft-test-self-full")
        .lane_capacity(1)
        .spawn(|| Ok::<_, String>(()))
        .expect("spawn");
    let lane = actor.lane().expect("lane");
    let inner = lane.clone();
    let outcome = lane
        .run(move |_| {
            // The lane has room for one: the first is queued behind us, the
            // second would block the actor on its own queue.
            let first = inner.submit(Op::new(|_: &mut ()| 1)).map(drop).is_ok();
            let second = inner.submit(Op::new(|_: &mut ()| 2));
            let timed = inner.submit_timeout(Op::new(|_: &mut ()| 3), Duration::from_secs(5));
            (
                first,
                matches!(second, Err(weft::error::SubmitError::WouldDeadlock(_))),
                matches!(timed, Err(SubmitTimeoutError::WouldDeadlock(_))),
            )
        })
        .expect("open");
    assert_eq!(wait_ok(outcome), (true, true, true));
}

#[test]
fn a_huge_capacity_costs_nothing_until_used_and_still_bounds() {
    // A lane's queue grows as ops arrive: 2 000 lanes of capacity 2^30
    // open as fast as any (a queue of that size allocated up front would
    // need 40 GiB per lane).
    let actor = ActorBuilder::new("weft-test-huge-capacity")
        .lane_capacity(1 << 30)
        .spawn(|| Ok::<_, String>(0u64))
        .expect("spawn");
    let lanes: Vec<_> = (0..2_000).map(|_| actor.lane().expect("lane")).collect();
    let tickets: Vec<_> = lanes
        .iter()
        .map(|l| l.run(|n: &mut u64| *n += 1).expect("open"))
        .collect();
    tickets.into_iter().for_each(wait_ok);
    assert_eq!(
        wait_ok(lanes[0].run(|n: &mut u64| *n).expect("open")),
        2_000
    );
    drop(lanes);
    // The bound still holds at any size: a capacity of 3 takes 3 behind a
    // running op, then refuses.
    let small = ActorBuilder::new("weft-test-small-capacity")
        .lane_capacity(3)
        .spawn(|| Ok::<_, String>(()))
        .expect("spawn");
    let lane = small.lane().expect("lane");
    let hold = Hold::on(&lane);
    let queued: Vec<_> = (0..3)
        .map(|_| lane.try_submit(Op::new(|_: &mut ()| ())).expect("room"))
        .collect();
    assert!(lane
        .try_submit(Op::new(|_: &mut ()| ()))
        .is_err_and(|e| e.is_full()));
    wait_ok(hold.release());
    queued.into_iter().for_each(wait_ok);
    assert!(lane.try_submit(Op::new(|_: &mut ()| ())).is_ok());
}
