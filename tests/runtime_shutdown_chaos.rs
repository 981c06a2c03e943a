//! Shutdown chaos: `shutdown()`, `shutdown_now()`, both at once, and the
//! drop of the last runtime handle, each while 16 threads submit closures
//! and tensor ops, wait, drop tickets and drop handles. Afterwards every
//! ticket is resolved (its value, or `Cancelled` where the mode cancels),
//! every later submission gets a typed error, and the process has as many
//! OS threads as before the runtime started. Alone in its binary (one test)
//! so that no other test's threads are counted.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};
use weft::ops::{CreateOps, ElementwiseOps};

use weft::{
    actor::FailureCause,
    error::{SubmitTimeoutError, TrySubmitError},
    runtime::{Pipeline, RuntimeReport},
    CpuEngine, DType, Op, OpError, Runtime, RuntimeError, Tensor, Ticket, TicketError,
};
use weft_tests::{domains_builder, eventually, thread_count, wait, watchdog};

const THREADS: usize = 16;
/// Short lanes: some submitters are blocked on a full lane when intake stops.
const LANE_CAPACITY: usize = 32;
/// Steps all threads together take before the stop is called.
const WARM_UP: usize = 40_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// `shutdown()`: every accepted op runs.
    Drain,
    /// `shutdown_now()`: queued ops are cancelled.
    Now,
    /// Both at once from two threads.
    Both,
    /// The last `Runtime` handle is dropped: drains, on whichever thread
    /// lets go last (often an application thread inside a transfer).
    Drop,
}

fn runtime() -> Runtime {
    let builder = domains_builder(2);
    builder
        .threads_per_domain(2)
        .lane_capacity(LANE_CAPACITY)
        .build()
        .expect("runtime")
}

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// A ticket kept to be checked, with the value it must have if it ran.
enum Kept {
    Value(Ticket<u64>, u64),
    Tensor(Ticket<Tensor, OpError>, Tensor),
}

#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    steps: usize,
    kept: usize,
    ran: usize,
    cancelled: usize,
}

impl Tally {
    fn add(&mut self, other: Tally) {
        self.steps += other.steps;
        self.kept += other.kept;
        self.ran += other.ran;
        self.cancelled += other.cancelled;
    }
}

/// Checks one kept ticket: its value, or a cancellation where `stop` may
/// cancel. Returns whether it ran.
fn resolve(kept: Kept, stop: Stop) -> bool {
    let cancel_ok = matches!(stop, Stop::Now | Stop::Both);
    let check_err = |e: &dyn std::fmt::Debug, cancelled: bool| {
        assert!(cancelled && cancel_ok, "{stop:?}: unexpected {e:?}");
        false
    };
    match kept {
        Kept::Value(t, want) => match wait(t) {
            Ok(v) => {
                assert_eq!(v, want);
                true
            }
            Err(e) => check_err(&e, cancelled(&e)),
        },
        Kept::Tensor(t, want) => match wait(t) {
            Ok(v) => {
                assert_eq!(v, want);
                true
            }
            Err(e) => check_err(&e, cancelled(&e)),
        },
    }
}

/// Cancelled itself, or did not run because an op it waited for was.
fn cancelled<E>(e: &TicketError<E>) -> bool {
    e.is_cancelled()
        || e.dependency()
            .is_some_and(|f| f.cause == FailureCause::Cancelled)
}

fn vector(values: Vec<f64>) -> Tensor {
    let n = values.len();
    Tensor::from_vec(values, &[n]).expect("fits")
}

/// One application thread: random steps until a submission is refused
/// because the runtime shut down; then every kept ticket is resolved.
fn worker(
    seed: u64,
    lanes: [weft::Lane; 2],
    hosted: weft::actor::Lane<u64>,
    stop: Stop,
    steps: &AtomicUsize,
) -> Tally {
    let mut rng = Rng(seed * 0x9E37_79B9 + 1);
    let mut kept: VecDeque<Kept> = VecDeque::new();
    let mut tally = Tally::default();
    loop {
        tally.steps += 1;
        steps.fetch_add(1, Ordering::Relaxed);
        assert!(tally.steps < 10_000_000, "intake never stopped");
        let d = rng.below(2);
        let (lane, other) = (&lanes[d], &lanes[1 - d]);
        let x = rng.below(1000) as u64;
        // `Err(())` when a submission is refused: the runtime is shut down.
        let step: Result<(), ()> = match rng.below(9) {
            0 => lane
                .run(move |_| x + 1)
                .map(|t| kept.push_back(Kept::Value(t, x + 1)))
                .map_err(|e| assert!(e.is_closed(), "{e}")),
            1 => lane
                .run(move |_| x)
                .map(drop)
                .map_err(|e| assert!(e.is_closed(), "{e}")),
            2 => (|| -> Result<(), OpError> {
                let a = lane.upload(vector(vec![x as f64; 3]))?;
                let b = lane.add(&a, &a)?;
                kept.push_back(Kept::Tensor(
                    lane.download(&b)?,
                    vector(vec![2.0 * x as f64; 3]),
                ));
                Ok(())
            })()
            .map_err(|e| assert!(matches!(e, OpError::Closed(_)), "{e}")),
            3 => (|| -> Result<(), OpError> {
                // Handles dropped as soon as they exist.
                let a = lane.ones(DType::F64, &[4])?;
                drop(lane.mul(&a, &a)?);
                Ok(())
            })()
            .map_err(|e| assert!(matches!(e, OpError::Closed(_)), "{e}")),
            4 => (|| -> Result<(), OpError> {
                let a = lane.upload(vector(vec![x as f64, 1.0]))?;
                let moved = lane.transfer(&a, 1 - d)?;
                let sq = other.mul(&moved, &moved)?;
                kept.push_back(Kept::Tensor(
                    other.download(&sq)?,
                    vector(vec![(x * x) as f64, 1.0]),
                ));
                Ok(())
            })()
            .map_err(|e| assert!(matches!(e, OpError::Closed(_)), "{e}")),
            5 => {
                // Waits while the stop may be under way.
                if let Some(k) = kept.pop_front() {
                    tally.kept += 1;
                    if resolve(k, stop) {
                        tally.ran += 1;
                    } else {
                        tally.cancelled += 1;
                    }
                }
                Ok(())
            }
            6 => hosted
                .run(move |n: &mut u64| {
                    *n += 1;
                    x * 2
                })
                .map(|t| kept.push_back(Kept::Value(t, x * 2)))
                .map_err(|e| assert!(e.is_closed(), "{e}")),
            7 => (|| -> Result<(), ()> {
                let first = lane.run(move |_| x).map_err(|e| assert!(e.is_closed()))?;
                let second = other
                    .submit(Op::new(move |_: &mut CpuEngine| x + 2).after([first.event()]))
                    .map_err(|e| assert!(e.is_closed()))?;
                kept.push_back(Kept::Value(first, x));
                kept.push_back(Kept::Value(second, x + 2));
                Ok(())
            })(),
            _ => hosted
                .run(move |_| x)
                .map(drop)
                .map_err(|e| assert!(e.is_closed(), "{e}")),
        };
        if step.is_err() {
            break;
        }
    }
    for k in kept {
        tally.kept += 1;
        if resolve(k, stop) {
            tally.ran += 1;
        } else {
            tally.cancelled += 1;
        }
    }
    tally
}

/// Every way in after the stop is refused with a typed error.
fn assert_refused(lanes: &[weft::Lane], hosted: &weft::actor::Lane<u64>, rt: Option<&Runtime>) {
    for lane in lanes {
        assert!(lane.run(|_| ()).unwrap_err().is_closed());
        assert!(matches!(
            lane.try_submit(Op::new(|_: &mut CpuEngine| ())),
            Err(TrySubmitError::Closed(_))
        ));
        assert!(matches!(
            lane.submit_timeout(Op::new(|_: &mut CpuEngine| ()), Duration::from_secs(1)),
            Err(SubmitTimeoutError::Closed(_))
        ));
        let err = lane.upload(vector(vec![1.0])).unwrap_err();
        assert!(matches!(err, OpError::Closed(_)), "{err}");
        assert!(err.to_string().contains("is shut down"), "{err}");
        assert!(matches!(lane.resident(), Err(OpError::Closed(_))));
    }
    assert!(hosted.run(|_| ()).unwrap_err().is_closed());
    if let Some(rt) = rt {
        for d in 0..2 {
            assert!(matches!(rt.lane(d), Err(RuntimeError::Closed(_))));
        }
        assert!(matches!(rt.spawn(0, |_| ()), Err(RuntimeError::Closed(_))));
        assert!(matches!(
            rt.spawn_actor(1, || Ok::<_, String>(())),
            Err(RuntimeError::Closed(_))
        ));
        let pipeline = Pipeline::new(rt, "ones", 0, |l, _| l.ones(DType::F64, &[1]));
        assert!(matches!(pipeline.run(1), Err(RuntimeError::Closed(_))));
    }
}

fn round(stop: Stop, threads_before: usize) -> (Tally, Duration) {
    let mut rt = Some(runtime());
    let r = rt.as_ref().expect("runtime");
    let hosted = r.spawn_actor(1, || Ok::<_, String>(0u64)).expect("hosted");
    let all_lanes: Vec<[weft::Lane; 2]> = (0..THREADS)
        .map(|_| [r.lane(0).expect("lane"), r.lane(1).expect("lane")])
        .collect();
    let hosted_lanes: Vec<_> = (0..THREADS).map(|_| hosted.lane().expect("lane")).collect();
    let check_lanes = [r.lane(0).expect("lane"), r.lane(1).expect("lane")];
    let check_hosted = hosted.lane().expect("lane");
    // Only the runtime keeps the hosted actor now.
    drop(hosted);
    assert!(thread_count() > threads_before);
    let steps = AtomicUsize::new(0);
    let mut took = Duration::ZERO;
    let mut tally = Tally::default();
    let mut reports: Vec<RuntimeReport> = Vec::new();
    thread::scope(|s| {
        let workers: Vec<_> = all_lanes
            .into_iter()
            .zip(hosted_lanes)
            .enumerate()
            .map(|(i, (lanes, hosted))| {
                let steps = &steps;
                s.spawn(move || worker(i as u64 + 1, lanes, hosted, stop, steps))
            })
            .collect();
        eventually("the threads are busy", || {
            steps.load(Ordering::Relaxed) > WARM_UP
        });
        let start = Instant::now();
        match stop {
            Stop::Drain => reports.push(rt.as_ref().unwrap().shutdown().expect("joined")),
            Stop::Now => reports.push(rt.as_ref().unwrap().shutdown_now().expect("joined")),
            Stop::Both => {
                let other = rt.clone().unwrap();
                let drain = s.spawn(move || other.shutdown().expect("joined"));
                reports.push(rt.as_ref().unwrap().shutdown_now().expect("joined"));
                reports.push(drain.join().expect("drain"));
            }
            Stop::Drop => drop(rt.take()),
        }
        took = start.elapsed();
        for w in workers {
            tally.add(w.join().expect("worker"));
        }
    });
    assert_refused(&check_lanes, &check_hosted, rt.as_ref());
    if let Some(rt) = &rt {
        // Both callers and a later call see the same reports.
        let again = rt.shutdown().expect("joined");
        for report in &reports {
            assert_eq!(report, &again);
        }
        assert!(again.actors.iter().all(|a| a.died.is_none() && a.lost == 0));
        if stop == Stop::Drain {
            assert!(again.actors.iter().all(|a| a.cancelled == 0));
        }
    }
    drop((check_lanes, check_hosted, rt));
    eventually("every runtime thread has exited", || {
        thread_count() == threads_before
    });
    (tally, took)
}

#[test]
fn shutdown_chaos_resolves_every_ticket_and_leaves_no_thread() {
    let _watchdog = watchdog("runtime_shutdown_chaos", Duration::from_secs(240));
    let before = thread_count();
    for stop in [Stop::Drain, Stop::Now, Stop::Both, Stop::Drop] {
        let (tally, took) = round(stop, before);
        assert!(tally.kept > 0 && tally.ran > 0, "{stop:?}: {tally:?}");
        if matches!(stop, Stop::Drain | Stop::Drop) {
            assert_eq!(tally.cancelled, 0, "{stop:?}");
        }
        eprintln!(
            "shutdown chaos {stop:?}: {} steps, {} tickets checked ({} ran, {} cancelled), \
             stop took {took:.2?}; threads {before} before, {} after",
            tally.steps,
            tally.kept,
            tally.ran,
            tally.cancelled,
            thread_count()
        );
    }
}
