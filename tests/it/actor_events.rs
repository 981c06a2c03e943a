//! Events order ops across lanes and actors without blocking an actor, and
//! carry failures to every dependent.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use weft::{
    actor::{ActorBuilder, EventState, FailureCause},
    Op, TicketError,
};
use weft_tests::{wait, wait_ok, Hold};

fn actor(name: &str) -> weft::actor::Actor<()> {
    ActorBuilder::new(name)
        .spawn(|| Ok::<_, String>(()))
        .expect("spawn")
}

#[test]
fn parked_lane_does_not_block_its_actor() {
    let consumer = actor("weft-test-consumer");
    let producer = actor("weft-test-producer");
    let plane = producer.lane().expect("lane");
    let waiting = consumer.lane().expect("lane");
    let free = consumer.lane().expect("lane");

    let hold = Hold::on(&plane);
    let produced = Arc::new(AtomicBool::new(false));
    let p = produced.clone();
    let first = plane
        .submit(Op::new(move |_: &mut ()| p.store(true, Ordering::SeqCst)).label("produce"))
        .expect("open");
    let event = first.event();
    assert_eq!(event.state(), EventState::Pending);
    assert_eq!(event.label(), "produce");
    let seen = produced.clone();
    let second = waiting
        .submit(Op::new(move |_: &mut ()| seen.load(Ordering::SeqCst)).after([event.clone()]))
        .expect("open");
    // Another lane of the consumer runs while `second` waits for the event.
    assert_eq!(wait_ok(free.run(|_| 3).expect("open")), 3);
    assert!(!second.is_ready());
    wait_ok(hold.release());
    assert!(wait_ok(second), "the dependent saw the producer's effect");
    assert_eq!(event.state(), EventState::Done);
    wait_ok(first);
}

#[test]
fn same_actor_cross_lane_ordering() {
    let a = ActorBuilder::new("weft-test-xlane")
        .spawn(|| Ok::<_, String>(Vec::<u32>::new()))
        .expect("spawn");
    let one = a.lane().expect("lane");
    let two = a.lane().expect("lane");
    let hold = Hold::on(&one);
    let x = one.run(|log: &mut Vec<u32>| log.push(1)).expect("open");
    // Without the event this op would run first: lane `two` is free.
    let y = two
        .submit(Op::new(|log: &mut Vec<u32>| log.push(2)).after([x.event()]))
        .expect("open");
    wait_ok(hold.release());
    wait_ok(y);
    let log = wait_ok(one.run(|log: &mut Vec<u32>| log.clone()).expect("open"));
    assert_eq!(log, [1, 2]);
}

#[test]
fn failure_propagates_with_the_original_cause() {
    let a = actor("weft-test-fail-a");
    let b = actor("weft-test-fail-b");
    let la = a.lane().expect("lane");
    let lb = b.lane().expect("lane");
    let ran = Arc::new(AtomicBool::new(false));
    let x = la
        .submit(Op::fallible(|_: &mut ()| Err::<u32, _>("singular matrix")).label("factorize"))
        .expect("open");
    let r = ran.clone();
    let y = lb
        .submit(
            Op::new(move |_: &mut ()| r.store(true, Ordering::SeqCst))
                .after([x.event()])
                .label("solve"),
        )
        .expect("open");
    let z = la
        .submit(Op::new(|_: &mut ()| ()).after([y.event()]).label("report"))
        .expect("open");
    let x_event = x.event();
    assert_eq!(wait(x).unwrap_err().op_error(), Some(&"singular matrix"));
    for err in [wait(y).unwrap_err(), wait(z).unwrap_err()] {
        let first = err.dependency().expect("a dependency failure").clone();
        assert_eq!(first.op, "factorize");
        assert_eq!(first.cause, FailureCause::Error("singular matrix".into()));
        assert_eq!(
            err.to_string(),
            "an op it depends on failed: op `factorize` failed: singular matrix"
        );
    }
    assert!(
        !ran.load(Ordering::SeqCst),
        "a dependent of a failed op does not run"
    );
    assert!(matches!(x_event.state(), EventState::Failed(f) if f.op == "factorize"));
}

#[test]
fn panic_cancel_and_loss_propagate() {
    let a = actor("weft-test-prop-a");
    let b = actor("weft-test-prop-b");
    let la = a.lane().expect("lane");
    let lb = b.lane().expect("lane");

    let p = la
        .submit(Op::new(|_: &mut ()| panic!("bad index 9")).label("gather"))
        .expect("open");
    let after_panic = lb
        .submit(Op::new(|_: &mut ()| ()).after([p.event()]))
        .expect("open");
    let err = wait(after_panic).unwrap_err();
    let first = err.dependency().expect("dependency");
    assert_eq!(
        (first.op, &first.cause),
        ("gather", &FailureCause::Panicked("bad index 9".into()))
    );
    drop(p);

    // Cancelled by an immediate shutdown of its actor.
    let hold = Hold::on(&la);
    let c = la
        .submit(Op::new(|_: &mut ()| ()).label("queued"))
        .expect("open");
    let after_cancel = lb
        .submit(Op::new(|_: &mut ()| ()).after([c.event()]))
        .expect("open");
    let stopper = {
        let a = a.clone();
        std::thread::spawn(move || a.shutdown_now().expect("joined"))
    };
    weft_tests::eventually("shutdown begins", || !a.is_open());
    drop(hold);
    stopper.join().expect("stopper");
    match wait(c) {
        // The release may let `queued` run before the shutdown message lands.
        Ok(()) => assert!(wait(after_cancel).is_ok()),
        Err(e) => {
            assert!(e.is_cancelled());
            let first = wait(after_cancel).unwrap_err();
            assert_eq!(
                first.dependency().expect("dependency").cause,
                FailureCause::Cancelled
            );
        }
    }

    // Lost with a dying actor.
    let d = actor("weft-test-prop-d");
    let ld = d.lane().expect("lane");
    let killer = ld.run(|_| weft_actors::fault::kill_actor()).expect("open");
    let lost = ld
        .submit(Op::new(|_: &mut ()| ()).label("doomed"))
        .expect("open");
    let after_loss = lb
        .submit(Op::new(|_: &mut ()| ()).after([lost.event()]))
        .expect("open");
    assert!(wait(killer).unwrap_err().is_actor_lost());
    assert!(wait(lost).unwrap_err().is_actor_lost());
    let err = wait(after_loss).unwrap_err();
    assert_eq!(
        err.dependency().expect("dependency").cause,
        FailureCause::ActorLost
    );
    assert!(d.shutdown().expect("joined").died.is_some());
    // The other actors live on.
    assert_eq!(wait_ok(lb.run(|_| 1).expect("open")), 1);
}

#[test]
fn many_dependents_on_one_event() {
    let a = actor("weft-test-fan-a");
    let b = actor("weft-test-fan-b");
    let la = a.lane().expect("lane");
    let hold = Hold::on(&la);
    let root = la.run(|_| ()).expect("open");
    let lanes: Vec<_> = (0..8)
        .map(|i| if i % 2 == 0 { a.lane() } else { b.lane() }.expect("lane"))
        .collect();
    let dependents: Vec<_> = lanes
        .iter()
        .map(|l| {
            l.submit(Op::new(|_: &mut ()| 1u32).after([root.event()]))
                .expect("open")
        })
        .collect();
    assert!(dependents.iter().all(|t| !t.is_ready()));
    wait_ok(hold.release());
    let total: u32 = dependents.into_iter().map(wait_ok).sum();
    assert_eq!(total, 8);
    wait_ok(root);
}

#[test]
fn waiting_op_is_cancelled_by_shutdown_now() {
    let a = actor("weft-test-parked-a");
    let b = actor("weft-test-parked-b");
    let la = a.lane().expect("lane");
    let lb = b.lane().expect("lane");
    let hold = Hold::on(&la);
    let root = la.run(|_| ()).expect("open");
    let parked = lb
        .submit(Op::new(|_: &mut ()| ()).after([root.event()]))
        .expect("open");
    let report = b.shutdown_now().expect("joined while a lane is parked");
    assert_eq!(report.cancelled, 1);
    assert!(matches!(wait(parked), Err(TicketError::Cancelled)));
    wait_ok(hold.release());
    wait_ok(root);
}
