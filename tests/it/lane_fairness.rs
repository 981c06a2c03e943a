//! Lanes of one actor are served round-robin, `OPS_PER_TURN` ops a turn: a
//! flooded lane does not starve another.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use weft::actor::{ActorBuilder, OPS_PER_TURN};
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
    // The rest of the held op's turn, then one turn of the flood, which was
    // runnable before the probe's lane.
    let bound = 2 * OPS_PER_TURN - 1;
    assert!(
        flood_ops_before <= bound,
        "{flood_ops_before} flood ops ran before the other lane's op (bound {bound})"
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
    // Round-robin: a turn of each lane in turn, `OPS_PER_TURN` ops long.
    // The first run is the rest of the held op's turn and one more turn of
    // its lane (runnable before the other one's); at the end, where one
    // lane runs out first, its last run and the other's are shorter.
    let runs: Vec<usize> = log.chunk_by(|x, y| x == y).map(<[u8]>::len).collect();
    assert!(runs[0] < 2 * OPS_PER_TURN, "runs of one lane: {runs:?}");
    assert!(
        runs[1..].iter().all(|&run| run <= OPS_PER_TURN),
        "runs of one lane: {runs:?}"
    );
    assert!(
        runs[1..runs.len() - 2]
            .iter()
            .all(|&run| run == OPS_PER_TURN),
        "runs of one lane: {runs:?}"
    );
}
