//! A panicking op is an error value; the actor and its engine live on.

use weft::{actor::ActorBuilder, error::SpawnError};
use weft_tests::{wait, wait_ok};

#[test]
fn panic_is_isolated_and_engine_survives() {
    let actor = ActorBuilder::new("weft-test-panic")
        .spawn(|| Ok::<_, String>(vec![1u32, 2, 3]))
        .expect("spawn");
    let lane = actor.lane().expect("lane");
    let err = wait(lane.run(|v: &mut Vec<u32>| v[10]).expect("open")).unwrap_err();
    assert!(err.is_panic());
    assert!(err.to_string().contains("index out of bounds"), "{err}");
    let err = wait(
        lane.run(|_: &mut Vec<u32>| std::panic::panic_any(17u8))
            .expect("open"),
    )
    .unwrap_err();
    // A payload that is not a string says what it is (issue 12, item 12).
    assert_eq!(err.to_string(), "op panicked: panic payload of type u8: 17");
    assert_eq!(
        wait_ok(
            lane.run(|v: &mut Vec<u32>| v.iter().sum::<u32>())
                .expect("open")
        ),
        6
    );
    let stats = actor.stats();
    assert_eq!((stats.ops.panicked, stats.ops.completed), (2, 1));
    assert_eq!(stats.lanes.len(), 1);
    assert_eq!(stats.lanes[0].ops.panicked, 2);
    let report = actor.shutdown().expect("joined");
    assert_eq!(
        (report.panicked, report.completed, report.died),
        (2, 1, None)
    );
}

#[test]
fn failing_factory_is_a_typed_error() {
    let err = ActorBuilder::new("weft-test-factory")
        .spawn(|| Err::<(), _>("no device 3"))
        .unwrap_err();
    assert!(matches!(err, SpawnError::Factory { .. }), "{err}");
    assert_eq!(
        err.to_string(),
        "the engine of actor `weft-test-factory` failed to start: no device 3"
    );
    let err = ActorBuilder::new("weft-test-factory-panic")
        .spawn(|| -> Result<(), String> { panic!("driver exploded") })
        .unwrap_err();
    assert!(matches!(err, SpawnError::FactoryPanicked { .. }), "{err}");
    assert!(err.to_string().contains("driver exploded"));
}

#[test]
fn engine_is_built_and_dropped_on_the_actor_thread() {
    use std::rc::Rc;
    struct NotSend {
        _rc: Rc<()>,
        built_on: std::thread::ThreadId,
        dropped_on: std::sync::Arc<std::sync::Mutex<Option<std::thread::ThreadId>>>,
    }
    impl Drop for NotSend {
        fn drop(&mut self) {
            *self.dropped_on.lock().unwrap() = Some(std::thread::current().id());
        }
    }
    let dropped_on = std::sync::Arc::new(std::sync::Mutex::new(None));
    let d = dropped_on.clone();
    let actor = ActorBuilder::new("weft-test-notsend")
        .spawn(move || {
            Ok::<_, String>(NotSend {
                _rc: Rc::new(()),
                built_on: std::thread::current().id(),
                dropped_on: d,
            })
        })
        .expect("spawn");
    let lane = actor.lane().expect("lane");
    let (built, running) = wait_ok(
        lane.run(|e: &mut NotSend| (e.built_on, std::thread::current().id()))
            .expect("open"),
    );
    assert_eq!(built, running);
    actor.shutdown().expect("joined");
    assert_eq!(*dropped_on.lock().unwrap(), Some(built));
}
