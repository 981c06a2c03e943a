//! Everything that touches a user's value runs under the op's isolation:
//! dropping a cancelled op's closure, a panic payload whose `Drop` panics,
//! an error whose `Display` panics, a value whose `Drop` panics after its
//! ticket went. None of them may kill the actor: the op behind each one
//! still runs. And the ticket rules hold for `poll` as for `wait`.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use weft::{
    actor::{ActorBuilder, FailureCause},
    Op, TicketError,
};
use weft_tests::{block_on, quiet_panics, wait, wait_ok, BadDisplay, PanicOnDrop, LIMIT};

const MARKER: &str = weft_tests::INJECTED;

fn actor() -> weft::actor::Actor<u64> {
    ActorBuilder::new("isolation")
        .spawn(|| Ok::<_, String>(0u64))
        .expect("actor")
}

/// The actor still serves its lanes: an op submitted now runs.
fn alive(actor: &weft::actor::Actor<u64>) {
    let lane = actor.lane().expect("lane");
    let ticket = lane
        .submit(Op::new(|n: &mut u64| {
            *n += 1;
            "alive"
        }))
        .expect("submit");
    match ticket.wait_timeout(LIMIT) {
        Ok(v) => assert_eq!(v, "alive"),
        Err(e) => panic!("the actor no longer runs ops: {e}"),
    }
}

#[test]
fn a_cancelled_ops_closure_drops_under_isolation() {
    quiet_panics(MARKER);
    let actor = actor();
    let lane = actor.lane().unwrap();
    let first = lane
        .submit(Op::fallible(|_: &mut u64| {
            Err::<(), _>("first fails".to_owned())
        }))
        .unwrap();
    let guard = PanicOnDrop;
    let cancelled = lane
        .submit(
            Op::new(move |_: &mut u64| {
                let _keep = &guard;
            })
            .after([first.event()]),
        )
        .unwrap();
    let behind = lane.submit(Op::new(|_: &mut u64| 7)).unwrap();
    assert!(matches!(
        wait(cancelled),
        Err(TicketError::DependencyFailed(_))
    ));
    assert_eq!(wait_ok(behind), 7);
    alive(&actor);
    let report = actor.shutdown().unwrap();
    assert_eq!((report.lost, &report.died), (0, &None), "{report:?}");
}

#[test]
fn shutdown_now_drops_queued_closures_under_isolation() {
    quiet_panics(MARKER);
    let actor = actor();
    let lane = actor.lane().unwrap();
    let (tx, rx) = crossbeam_channel::bounded::<()>(0);
    let (started_tx, started) = crossbeam_channel::bounded::<()>(1);
    let blocker = lane
        .submit(Op::new(move |_: &mut u64| {
            let _ = started_tx.send(());
            let _ = rx.recv_timeout(LIMIT);
        }))
        .unwrap();
    started.recv_timeout(LIMIT).expect("the blocker runs");
    let queued: Vec<_> = (0..4)
        .map(|_| {
            let guard = PanicOnDrop;
            lane.submit(Op::new(move |_: &mut u64| {
                let _keep = &guard;
            }))
            .unwrap()
        })
        .collect();
    let stopper = std::thread::spawn(move || actor.shutdown_now());
    // Let shutdown_now mark the queue before the blocker returns.
    std::thread::sleep(std::time::Duration::from_millis(50));
    drop(tx);
    let report = stopper.join().unwrap().expect("shutdown_now");
    assert_eq!((report.lost, &report.died), (0, &None), "{report:?}");
    assert!(wait(blocker).is_ok());
    for t in queued {
        assert!(matches!(wait(t), Err(TicketError::Cancelled)));
    }
}

#[test]
fn a_panic_payload_whose_drop_panics_is_contained() {
    quiet_panics(MARKER);
    let actor = actor();
    let lane = actor.lane().unwrap();
    let panicked = lane
        .submit(Op::new(|_: &mut u64| std::panic::panic_any(PanicOnDrop)))
        .unwrap();
    match wait(panicked) {
        Err(TicketError::Panicked(message)) => assert!(message.contains("panic payload")),
        other => panic!("expected Panicked, got {other:?}"),
    }
    alive(&actor);
}

#[test]
fn an_error_whose_display_panics_is_contained() {
    quiet_panics(MARKER);
    let actor = actor();
    let lane = actor.lane().unwrap();
    let failed = lane
        .submit(Op::fallible(|_: &mut u64| Err::<(), _>(BadDisplay)))
        .unwrap();
    let dependent = lane
        .submit(Op::new(|_: &mut u64| ()).after([failed.event()]))
        .unwrap();
    assert!(matches!(wait(failed), Err(TicketError::Op(BadDisplay))));
    match wait(dependent) {
        Err(TicketError::DependencyFailed(first)) => match &first.cause {
            FailureCause::Error(text) => assert!(text.contains("Display panicked"), "{text}"),
            other => panic!("expected the op's error, got {other:?}"),
        },
        other => panic!("expected DependencyFailed, got {other:?}"),
    }
    alive(&actor);
}

#[test]
fn a_value_whose_drop_panics_after_its_ticket_went_is_contained() {
    quiet_panics(MARKER);
    let actor = actor();
    let lane = actor.lane().unwrap();
    for _ in 0..4 {
        drop(lane.submit(Op::new(|_: &mut u64| PanicOnDrop)).unwrap());
    }
    alive(&actor);
}

#[test]
fn panic_payloads_that_are_not_strings_say_what_they_are() {
    quiet_panics(MARKER);
    let actor = actor();
    let lane = actor.lane().unwrap();
    type Panics = Box<dyn FnOnce() + Send>;
    let cases: Vec<(Panics, &str)> = vec![
        (Box::new(|| std::panic::panic_any(42i32)), "i32: 42"),
        (Box::new(|| std::panic::panic_any(2.5f64)), "f64: 2.5"),
        (
            Box::new(|| {
                let e: Box<dyn std::error::Error + Send + Sync> = "a boxed error".into();
                std::panic::panic_any(e)
            }),
            "a boxed error",
        ),
        (
            Box::new(|| std::panic::panic_any(vec![1u8])),
            "a type other than",
        ),
    ];
    for (f, expected) in cases {
        let ticket = lane.submit(Op::new(move |_: &mut u64| f())).unwrap();
        match wait(ticket) {
            Err(TicketError::Panicked(m)) => assert!(m.contains(expected), "{m:?}: {expected}"),
            other => panic!("expected Panicked, got {other:?}"),
        }
    }
    alive(&actor);
}

#[test]
fn a_ticket_that_returned_by_poll_still_answers() {
    let actor = actor();
    let lane = actor.lane().unwrap();
    let mut ticket = lane.submit(Op::new(|_: &mut u64| 5).label("five")).unwrap();
    let mut cx = Context::from_waker(Waker::noop());
    let value = loop {
        if let Poll::Ready(v) = pin!(&mut ticket).poll(&mut cx) {
            break v;
        }
        std::thread::yield_now();
    };
    assert_eq!(value.unwrap(), 5);
    assert!(ticket.is_ready());
    assert_eq!(ticket.label(), "five");
    assert_eq!(ticket.actor(), actor.id());
    let after = lane
        .submit(Op::new(|_: &mut u64| "after").after([ticket.event()]))
        .unwrap();
    assert_eq!(wait_ok(after), "after");
    drop(ticket);
}

#[test]
fn polling_inside_an_op_refuses_as_waiting_does() {
    let actor = actor();
    let lane = actor.lane().unwrap();
    let inner = actor.lane().unwrap();
    let outer = lane
        .submit(Op::new(move |_: &mut u64| {
            // A ticket of this actor, queued behind the running op: a
            // blocking poll loop here could never see it finish.
            let queued = inner.submit(Op::new(|_: &mut u64| 1)).unwrap();
            block_on(queued)
        }))
        .unwrap();
    match outer.wait_timeout(LIMIT) {
        Ok(result) => assert!(
            matches!(result, Err(TicketError::WouldDeadlock)),
            "{result:?}"
        ),
        Err(e) => panic!("the op polling its own actor's ticket did not return: {e}"),
    }
    alive(&actor);
    let report = actor.shutdown().unwrap();
    assert_eq!((report.lost, report.died), (0, None));
}

#[test]
fn a_panicking_job_spawned_on_a_domains_pool_is_counted_not_fatal() {
    quiet_panics(MARKER);
    let rt = weft::Runtime::builder()
        .split(1)
        .threads_per_domain(2)
        .pinning(weft::engine::Pinning::None)
        .build()
        .unwrap();
    let lane = rt.lane(0).unwrap();
    let spawned = lane
        .run(|engine: &mut weft::CpuEngine| {
            engine
                .pool()
                .spawn(|| panic!("{MARKER} a spawned job panics"));
        })
        .unwrap();
    wait_ok(spawned);
    let mut seen = (0, None);
    for _ in 0..2000 {
        seen = wait_ok(
            lane.run(|engine: &mut weft::CpuEngine| engine.pool_panics())
                .unwrap(),
        );
        if seen.0 > 0 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert_eq!(seen.0, 1, "the panic was not recorded");
    assert!(seen.1.unwrap().contains("a spawned job panics"));
    // The domain still computes, over the pool too.
    let sum = lane
        .run(|engine: &mut weft::CpuEngine| engine.install(|| rayon::join(|| 1, || 2)))
        .unwrap();
    assert_eq!(wait_ok(sum), (1, 2));
    rt.shutdown().unwrap();
}
