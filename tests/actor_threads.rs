//! No thread is left behind: after shutdown (drain, immediate, or drop) the
//! process has as many threads as before the runtime started. Alone in its
//! binary, so no other test's threads are counted.

use weft::Runtime;
use weft_tests::{eventually, thread_count, wait_ok};

fn busy_runtime() -> Runtime {
    let rt = Runtime::builder()
        .split(1)
        .threads_per_domain(3)
        .build()
        .expect("runtime");
    let handles: Vec<_> = (0..4)
        .map(|_| {
            rt.spawn(0, |lane| {
                for _ in 0..200 {
                    drop(
                        lane.run(|engine| engine.install(|| rayon::join(|| 1, || 2)))
                            .expect("open"),
                    );
                }
                wait_ok(lane.run(|_| ()).expect("open"));
            })
            .expect("spawned")
        })
        .collect();
    for h in handles {
        h.join().expect("app thread");
    }
    rt
}

#[test]
fn no_thread_left_behind() {
    let before = thread_count();
    let rt = busy_runtime();
    assert!(
        thread_count() >= before + 3,
        "actor and two pool workers run"
    );
    rt.shutdown().expect("joined");
    eventually("threads exit after shutdown", || thread_count() == before);

    let rt = busy_runtime();
    rt.shutdown_now().expect("joined");
    eventually("threads exit after shutdown_now", || {
        thread_count() == before
    });

    drop(busy_runtime());
    eventually("threads exit after drop", || thread_count() == before);
}
