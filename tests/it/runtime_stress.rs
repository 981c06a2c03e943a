//! Stress: 16 application threads, each with lanes into every domain,
//! drive mixed closures and tensor ops (transfers between domains
//! included); every ticket resolves, every result equals a value computed
//! here, every op ran exactly once, and every temporary tensor is freed.
//!
//! 100 000 ops by default (under a second in release on two cores);
//! `WEFT_STRESS=heavy` drives 1 000 000, `WEFT_STRESS=<n>` drives `n`.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use weft::ops::{CreateOps, ElementwiseOps, LinalgOps, ReduceOps};

use weft::{
    error::TrySubmitError, ops::BinaryOp, CpuEngine, DType, Op, OpError, Runtime, Scalar, Tensor,
    Ticket,
};
use weft_tests::{domains_builder, wait_ok, watchdog};

const THREADS: usize = 16;
/// Lanes each thread opens into each domain.
const LANES_PER_DOMAIN: usize = 2;
/// Results a thread leaves unchecked before it waits for the oldest.
const WINDOW: usize = 48;

/// Lanes are short, so submitters also meet full lanes and wait.
const LANE_CAPACITY: usize = 16;

fn target_ops() -> usize {
    match std::env::var("WEFT_STRESS") {
        Ok(v) if v == "heavy" => 1_000_000,
        Ok(v) => v.parse().unwrap_or(100_000),
        Err(_) => 100_000,
    }
}

/// Up to three real domains, pinned, two threads each; on a one-CPU
/// machine two unpinned domains over a made-up layout.
fn runtime() -> Runtime {
    let builder = domains_builder(3);
    builder
        .threads_per_domain(2)
        .lane_capacity(LANE_CAPACITY)
        .build()
        .expect("runtime")
}

/// xorshift64*: the same sequence on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// A result still to be checked, with the value it must have.
enum Check {
    Value(Ticket<u64>, u64),
    Tensor(Ticket<Tensor, OpError>, Vec<f64>),
    Sum(Ticket<f64, OpError>, f64),
}

impl Check {
    fn verify(self) {
        match self {
            Check::Value(t, want) => assert_eq!(wait_ok(t), want),
            Check::Tensor(t, want) => {
                let got = wait_ok(t);
                assert_eq!(got.as_slice::<f64>().expect("f64"), &want[..]);
            }
            Check::Sum(t, want) => assert_eq!(wait_ok(t), want),
        }
    }
}

/// Small integers as f64: every sum and product below is exact.
fn values(rng: &mut Rng, n: usize) -> Vec<f64> {
    (0..n).map(|_| (rng.below(21) as f64) - 10.0).collect()
}

fn matmul_ref(a: &[f64], b: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
    let mut c = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            c[i * n + j] = (0..k).map(|p| a[i * k + p] * b[p * n + j]).sum();
        }
    }
    c
}

/// One application thread: `quota` ops or a few more, over `lanes[domain]`.
/// Returns the number of ops it submitted.
fn drive(seed: u64, lanes: &[Vec<weft::Lane>], quota: usize) -> usize {
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut pending: VecDeque<Check> = VecDeque::new();
    let domains = lanes.len();
    let mut ops = 0;
    while ops < quota {
        let d = rng.below(domains);
        let lane = &lanes[d][rng.below(LANES_PER_DOMAIN)];
        let x = rng.next() % 1_000_000;
        match rng.below(9) {
            0 => {
                let t = lane.run(move |_| x * 3 + 1).expect("open");
                pending.push_back(Check::Value(t, x * 3 + 1));
                ops += 1;
            }
            8 => {
                // A full lane hands the op back whole; submit it again.
                let op = Op::new(move |_: &mut CpuEngine| x ^ 0xFF).label("try");
                let t = match lane.try_submit(op) {
                    Ok(t) => t,
                    Err(TrySubmitError::Full(op)) => lane.submit(op).expect("open"),
                    Err(e) => panic!("{e}"),
                };
                pending.push_back(Check::Value(t, x ^ 0xFF));
                ops += 1;
            }
            1 => {
                // Parallel work inside the domain's pool.
                let t = lane
                    .run(move |e: &mut CpuEngine| {
                        let (a, b) = e.install(|| rayon::join(|| x, || x + 1));
                        a + b
                    })
                    .expect("open");
                pending.push_back(Check::Value(t, 2 * x + 1));
                ops += 1;
            }
            2 => {
                // Ordered across domains by an event, nobody blocking.
                let other = &lanes[(d + 1) % domains][rng.below(LANES_PER_DOMAIN)];
                let first = lane.run(move |_| x).expect("open");
                let second = other
                    .submit(Op::new(move |_: &mut CpuEngine| x + 5).after([first.event()]))
                    .expect("open");
                pending.push_back(Check::Value(first, x));
                pending.push_back(Check::Value(second, x + 5));
                ops += 2;
            }
            3 => {
                // upload → scale → add → sum: 3 Σv.
                let n = 1 + rng.below(16);
                let v = values(&mut rng, n);
                let want = 3.0 * v.iter().sum::<f64>();
                let a = lane.upload(Tensor::from_vec(v, &[n]).unwrap()).unwrap();
                let b = lane
                    .binary_scalar(BinaryOp::Mul, &a, Scalar::Real(2.0))
                    .unwrap();
                let c = lane.add(&b, &a).unwrap();
                let s = lane.sum_all(&c).unwrap();
                pending.push_back(Check::Tensor(lane.download(&s).unwrap(), vec![want]));
                ops += 5;
            }
            4 => {
                // There and back: square on the other domain.
                let to = (d + 1) % domains;
                let there = &lanes[to][rng.below(LANES_PER_DOMAIN)];
                let n = 1 + rng.below(12);
                let v = values(&mut rng, n);
                let want: Vec<f64> = v.iter().map(|x| x * x).collect();
                let a = lane.upload(Tensor::from_vec(v, &[n]).unwrap()).unwrap();
                let moved = lane.transfer(&a, to).unwrap();
                let sq = there.mul(&moved, &moved).unwrap();
                let back = there.transfer(&sq, d).unwrap();
                assert_eq!(back.domain(), d);
                pending.push_back(Check::Tensor(lane.download(&back).unwrap(), want));
                ops += 7;
            }
            5 => {
                let (m, k, n) = (1 + rng.below(4), 1 + rng.below(4), 1 + rng.below(4));
                let (av, bv) = (values(&mut rng, m * k), values(&mut rng, k * n));
                let want = matmul_ref(&av, &bv, m, k, n);
                let a = lane.upload(Tensor::from_vec(av, &[m, k]).unwrap()).unwrap();
                let b = lane.upload(Tensor::from_vec(bv, &[k, n]).unwrap()).unwrap();
                let c = lane.matmul(&a, &b).unwrap();
                pending.push_back(Check::Tensor(lane.download(&c).unwrap(), want));
                ops += 4;
            }
            6 => {
                // The escape hatch reads a resident tensor on the actor.
                let n = 1 + rng.below(8);
                let v = values(&mut rng, n);
                let want = v.iter().sum::<f64>();
                let a = lane.upload(Tensor::from_vec(v, &[n]).unwrap()).unwrap();
                let t = lane
                    .with(&[&a], |_, t| {
                        t[0].as_slice::<f64>().expect("f64").iter().sum::<f64>()
                    })
                    .unwrap();
                pending.push_back(Check::Sum(t, want));
                ops += 2;
            }
            _ => {
                // Churn: handles dropped at once, nothing waited for; the
                // resident check at the end proves they were freed.
                let a = lane.ones(DType::F64, &[1 + rng.below(8)]).unwrap();
                let b = lane.add(&a, &a).unwrap();
                drop((a, b));
                ops += 2;
            }
        }
        while pending.len() > WINDOW {
            pending.pop_front().expect("pending").verify();
        }
    }
    for check in pending {
        check.verify();
    }
    ops
}

#[test]
fn stress_mixed_ops_over_domains() {
    let _watchdog = watchdog("stress", Duration::from_secs(600));
    let start = Instant::now();
    let rt = runtime();
    let domains = rt.domains().len();
    assert!(domains >= 2, "{}", rt.topology());
    let quota = target_ops().div_ceil(THREADS);
    let total = AtomicUsize::new(0);
    rt.scope(|s| {
        let threads: Vec<_> = (0..THREADS)
            .map(|i| {
                let total = &total;
                let lanes: Vec<Vec<weft::Lane>> = (0..domains)
                    .map(|d| {
                        (0..LANES_PER_DOMAIN)
                            .map(|_| rt.lane(d).expect("lane"))
                            .collect()
                    })
                    .collect();
                s.spawn(0, move |_| {
                    total.fetch_add(drive(i as u64, &lanes, quota), Ordering::Relaxed);
                })
                .expect("thread")
            })
            .collect();
        for t in threads {
            t.join().expect("application thread");
        }
    });
    let total = total.into_inner();
    assert!(total >= target_ops(), "{total} ops");

    // Every temporary is freed: all handles are gone.
    let mut resident_calls = 0;
    for d in 0..domains {
        let lane = rt.lane(d).expect("lane");
        assert_eq!(wait_ok(lane.resident().unwrap()), (0, 0), "domain {d}");
        resident_calls += 1;
    }
    // Every op ran exactly once, none failed, nothing is left queued.
    let stats = rt.stats();
    let completed: u64 = stats.actors.iter().map(|a| a.ops.completed).sum();
    assert_eq!(completed as usize, total + resident_calls, "{stats}");
    for actor in &stats.actors {
        assert_eq!(
            (actor.ops.failed, actor.ops.panicked, actor.ops.queued),
            (0, 0, 0),
            "{actor}"
        );
    }
    let report = rt.shutdown().expect("joined");
    for actor in &report.actors {
        assert_eq!((actor.cancelled, actor.lost, &actor.died), (0, 0, &None));
    }
    eprintln!(
        "stress: {total} ops from {THREADS} threads over {domains} domains \
         ({} lanes) in {:.2?}",
        THREADS * domains * LANES_PER_DOMAIN,
        start.elapsed()
    );
}
