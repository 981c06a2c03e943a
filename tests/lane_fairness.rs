//! Lanes of one actor are served round-robin: a flooded lane does not
//! starve another.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use weft::ActorBuilder;
use weft_tests::{wait_ok, Hold};

const FLOOD: usize = 10_000;

#[test]
fn fairness_flooded_lane_delays_another_by_a_few_ops() {
    let actor = ActorBuilder::new("weft-test-fair")
        .lane_capacity(FLOOD + 16)
        .spawn(|| Ok::<_, String>(()))
        .expect("spawn");
    let flood = actor.lane().expect("lane");
    let other = actor.lane().expect("lane");
    let ran = Arc::new(AtomicUsize::new(0));

    // Queue the whole flood behind a held op, then one op on the other lane.
    let hold = Hold::on(&flood);
    let mut last = None;
    for _ in 0..FLOOD {
        let ran = ran.clone();
        last = Some(
            flood
                .try_run(move |_| {
                    ran.fetch_add(1, Ordering::SeqCst);
                    Ok::<_, String>(())
                })
                .expect("room for the flood"),
        );
    }
    let seen = ran.clone();
    let probe = other
        .run(move |_| seen.load(Ordering::SeqCst))
        .expect("open");
    wait_ok(hold.release());
    let flood_ops_before = wait_ok(probe);
    assert!(
        flood_ops_before <= 4,
        "{flood_ops_before} flood ops ran before the other lane's op"
    );
    wait_ok(last.expect("flooded"));
    assert_eq!(ran.load(Ordering::SeqCst), FLOOD);
}

#[test]
fn fairness_interleaves_busy_lanes() {
    let actor = ActorBuilder::new("weft-test-interleave")
        .lane_capacity(1024)
        .spawn(|| Ok::<_, String>(Vec::<u8>::new()))
        .expect("spawn");
    let a = actor.lane().expect("lane");
    let b = actor.lane().expect("lane");
    let hold = Hold::on(&a);
    for _ in 0..500 {
        drop(a.run(|log: &mut Vec<u8>| log.push(b'a')).expect("open"));
        drop(b.run(|log: &mut Vec<u8>| log.push(b'b')).expect("open"));
    }
    wait_ok(hold.release());
    let log = wait_ok(
        a.run(|log: &mut Vec<u8>| std::mem::take(log))
            .expect("open"),
    );
    assert_eq!(log.len(), 1000);
    // Round-robin: neither lane runs twice in a row except at the ends.
    let longest_run = log
        .chunk_by(|x, y| x == y)
        .map(<[u8]>::len)
        .max()
        .unwrap_or(0);
    assert!(longest_run <= 2, "longest run of one lane: {longest_run}");
}
