//! Soak: a long run of small tensor ops with their handles dropped as they
//! go, over two domains with transfers between them. Afterwards each
//! domain's resident tensors are back to their floor, nothing is queued,
//! and the process's peak RSS stayed under a stated bound. 100 000 ops
//! always run (well under a second); `WEFT_SOAK=1` runs 1 000 000. One
//! test, alone in its binary, so that the peak RSS is its own.

use std::collections::VecDeque;
use std::time::{Duration, Instant};
use weft::ops::{ElementwiseOps, ReduceOps};

use weft::{ops::BinaryOp, OpError, Runtime, Scalar, Tensor, Ticket};
use weft_tests::{domains_builder, status_bytes, wait_ok, watchdog};

/// Peak RSS may grow at most this much over the RSS of the process just
/// before the soak starts (runtime built, floor tensors resident). The
/// in-flight work is bounded by the lanes' capacity and holds a few MiB at
/// most (2 MiB measured); the rest of the bound is allocator slack.
const PEAK_RSS_GROWTH: u64 = 32 << 20;
/// The most bytes a domain's buffer pool may hold, then or ever: the soak's
/// tensors are small and few are alive at once, so the pool stays far
/// below its cap.
const POOL_BOUND: usize = 1 << 20;

const ELEMENTS: usize = 16;

fn target_ops() -> usize {
    if std::env::var_os("WEFT_SOAK").is_some_and(|v| v != "0") {
        1_000_000
    } else {
        100_000
    }
}

fn runtime() -> Runtime {
    let builder = domains_builder(2);
    builder.build().expect("runtime")
}

/// What "back to the floor" means, in one place: resident tensors as they
/// were, nothing queued, buffer pools bounded, peak RSS bounded.
struct Floor {
    /// Per domain: resident tensors and their bytes that stay for the run.
    resident: Vec<(usize, usize)>,
    /// RSS just before the soak.
    rss: u64,
}

impl Floor {
    fn measure(lanes: &[weft::Lane]) -> Floor {
        Floor {
            resident: lanes
                .iter()
                .map(|l| wait_ok(l.resident().expect("open")))
                .collect(),
            rss: status_bytes("VmRSS"),
        }
    }

    /// Asserts every domain is back to its floor; returns the peak RSS.
    fn assert_reached(&self, rt: &Runtime, lanes: &[weft::Lane]) -> u64 {
        for (d, lane) in lanes.iter().enumerate() {
            let now = wait_ok(lane.resident().expect("open"));
            assert_eq!(
                now, self.resident[d],
                "domain {d}: resident (tensors, bytes)"
            );
        }
        for (d, lane) in lanes.iter().enumerate() {
            let pool = wait_ok(lane.memory().expect("open")).buffers;
            assert!(
                pool.pooled_bytes <= POOL_BOUND && pool.peak_bytes <= POOL_BOUND,
                "domain {d}: buffer pool past {POOL_BOUND} bytes: {pool:?}"
            );
            // Most outputs reuse a freed buffer: the pool works.
            assert!(pool.hits > 10 * pool.misses, "domain {d}: {pool:?}");
        }
        for actor in rt.stats().actors {
            assert_eq!(actor.ops.queued, 0, "{actor}");
            assert_eq!((actor.ops.failed, actor.ops.panicked), (0, 0), "{actor}");
        }
        let peak = status_bytes("VmHWM");
        assert!(
            peak <= self.rss + PEAK_RSS_GROWTH,
            "peak RSS {} MiB over a start of {} MiB: more than {} MiB growth",
            peak >> 20,
            self.rss >> 20,
            PEAK_RSS_GROWTH >> 20
        );
        peak
    }
}

#[test]
fn soak_small_ops_return_to_the_floor() {
    let _watchdog = watchdog("soak", Duration::from_secs(900));
    let rt = runtime();
    let lanes: Vec<weft::Lane> = (0..2).map(|d| rt.lane(d).expect("lane")).collect();
    let ones: Vec<weft::TensorHandle> = lanes
        .iter()
        .map(|l| {
            l.upload(Tensor::from_vec(vec![1.0f64; ELEMENTS], &[ELEMENTS]).unwrap())
                .expect("upload")
        })
        .collect();
    let floor = Floor::measure(&lanes);
    let start = Instant::now();
    let target = target_ops();
    let mut ops = 0usize;
    let mut pending: VecDeque<(Ticket<Tensor, OpError>, f64)> = VecDeque::new();
    let mut checked = 0usize;
    let mut i = 0u64;
    while ops < target {
        let d = (i % 2) as usize;
        let lane = &lanes[d];
        let base = (i % 97) as f64;
        let x = lane
            .upload(Tensor::from_vec(vec![base; ELEMENTS], &[ELEMENTS]).unwrap())
            .expect("upload");
        let y = lane.add(&x, &ones[d]).expect("add");
        let z = lane
            .binary_scalar(BinaryOp::Mul, &y, Scalar::Real(2.0))
            .expect("mul");
        ops += 3;
        if i.is_multiple_of(32) {
            // Now and then the result moves and is checked on the other side.
            let other = &lanes[1 - d];
            let moved = lane.transfer(&z, 1 - d).expect("transfer");
            let s = other.sum_all(&moved).expect("sum");
            pending.push_back((other.download(&s).expect("download"), base));
            ops += 4;
        } else {
            drop(lane.sum_all(&z).expect("sum"));
            ops += 1;
        }
        // x, y, z dropped here, most before their ops have run.
        while pending.len() > 16 {
            let (t, base) = pending.pop_front().expect("pending");
            let got = wait_ok(t);
            assert_eq!(
                got.as_slice::<f64>().unwrap(),
                &[2.0 * (base + 1.0) * ELEMENTS as f64]
            );
            checked += 1;
        }
        i += 1;
    }
    for (t, base) in pending {
        let got = wait_ok(t);
        assert_eq!(
            got.as_slice::<f64>().unwrap(),
            &[2.0 * (base + 1.0) * ELEMENTS as f64]
        );
        checked += 1;
    }
    let took = start.elapsed();
    let peak = floor.assert_reached(&rt, &lanes);
    eprintln!(
        "soak: {ops} ops ({checked} results checked) in {took:.2?}; resident back to {:?}; \
         RSS {} MiB at start, peak {} MiB (bound {} MiB)",
        floor.resident,
        floor.rss >> 20,
        peak >> 20,
        (floor.rss + PEAK_RSS_GROWTH) >> 20
    );
    drop(ones);
    rt.shutdown().expect("joined");
}
