//! Lanes keep submission order: one lane fed by many threads (mpsc), many
//! lanes fed by one thread each (spsc), clones of one lane.

use std::thread;

use weft::actor::ActorBuilder;
use weft_tests::wait_ok;

const THREADS: usize = 8;
const PER_THREAD: usize = 2_000;

#[test]
fn smoke() {
    let actor = ActorBuilder::new("weft-test-smoke")
        .spawn(|| Ok::<_, String>(0u64))
        .expect("spawn");
    let lane = actor.lane().expect("lane");
    let t = lane.run(|n: &mut u64| {
        *n += 41;
        *n + 1
    });
    assert_eq!(wait_ok(t.expect("open")), 42);
    assert_eq!(lane.actor(), actor.id());
}

#[test]
fn mpsc_one_lane_many_threads_keeps_each_threads_order() {
    let actor = ActorBuilder::new("weft-test-mpsc")
        .lane_capacity(64)
        .spawn(|| Ok::<_, String>(Vec::<(usize, usize)>::new()))
        .expect("spawn");
    let lane = actor.lane().expect("lane");
    thread::scope(|s| {
        for t in 0..THREADS {
            let lane = lane.clone();
            s.spawn(move || {
                for i in 0..PER_THREAD {
                    drop(
                        lane.run(move |log: &mut Vec<_>| log.push((t, i)))
                            .expect("open"),
                    );
                }
            });
        }
    });
    let log = wait_ok(
        lane.run(|log: &mut Vec<_>| std::mem::take(log))
            .expect("open"),
    );
    assert_eq!(log.len(), THREADS * PER_THREAD);
    let mut next = [0usize; THREADS];
    for (t, i) in log {
        assert_eq!(i, next[t], "thread {t} out of order");
        next[t] += 1;
    }
}

#[test]
fn spsc_many_lanes_each_in_order() {
    let actor = ActorBuilder::new("weft-test-spsc")
        .lane_capacity(16)
        .spawn(|| Ok::<_, String>(vec![Vec::<usize>::new(); THREADS]))
        .expect("spawn");
    thread::scope(|s| {
        for t in 0..THREADS {
            let lane = actor.lane().expect("lane");
            s.spawn(move || {
                let mut last = None;
                for i in 0..PER_THREAD {
                    last = Some(
                        lane.run(move |logs: &mut Vec<Vec<usize>>| logs[t].push(i))
                            .expect("open"),
                    );
                }
                wait_ok(last.expect("submitted"));
            });
        }
    });
    let lane = actor.lane().expect("lane");
    let logs = wait_ok(
        lane.run(|logs: &mut Vec<Vec<usize>>| logs.clone())
            .expect("open"),
    );
    for (t, log) in logs.iter().enumerate() {
        assert_eq!(log, &(0..PER_THREAD).collect::<Vec<_>>(), "lane {t}");
    }
}

#[test]
fn tickets_of_one_lane_finish_in_order() {
    let actor = ActorBuilder::new("weft-test-order")
        .spawn(|| Ok::<_, String>(0u64))
        .expect("spawn");
    let lane = actor.lane().expect("lane");
    let tickets: Vec<_> = (0..1000u64)
        .map(|i| {
            lane.run(move |n: &mut u64| {
                assert_eq!(*n, i);
                *n += 1;
                i
            })
            .expect("open")
        })
        .collect();
    for (i, t) in tickets.into_iter().enumerate() {
        assert_eq!(wait_ok(t), i as u64);
    }
}

#[test]
fn disconnect_lane_dropped_right_after_submit_still_runs() {
    let actor = ActorBuilder::new("weft-test-dropped-lane")
        .spawn(|| Ok::<_, String>(0u64))
        .expect("spawn");
    // Each lane's only handle is dropped before the actor has even seen the
    // lane; its op must still run.
    let tickets: Vec<_> = (0..2_000u64)
        .map(|i| {
            actor
                .lane()
                .expect("lane")
                .run(move |n: &mut u64| {
                    *n += 1;
                    i
                })
                .expect("open")
        })
        .collect();
    for (i, t) in tickets.into_iter().enumerate() {
        assert_eq!(wait_ok(t), i as u64);
    }
    weft_tests::eventually("closed lanes are forgotten", || {
        actor.stats().lanes.is_empty()
    });
}
