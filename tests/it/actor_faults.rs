//! Fault injection: ops that panic on every k-th submission, return an
//! error on others and sleep on some, over many lanes in flight. The actor
//! survives; exactly the faulty ops and their dependents fail, with the
//! original cause; every other result is correct; state and resident
//! tensors that no failed op wrote are intact.

use std::collections::BTreeMap;
use std::thread;
use std::time::Duration;
use weft::ops::{CreateOps, ElementwiseOps, LinalgOps};

use weft::{
    actor::FailureCause, CpuEngine, DType, Op, OpError, Runtime, Tensor, Ticket, TicketError,
};
use weft_tests::{quiet_panics, wait, wait_ok, watchdog};

/// What the fault plan does to op number `seq`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    Panic,
    Error,
    Sleep,
    Run,
}

fn fate(seq: u64) -> Fate {
    if seq % 7 == 3 {
        Fate::Panic
    } else if seq % 5 == 1 {
        Fate::Error
    } else if seq.is_multiple_of(11) {
        Fate::Sleep
    } else {
        Fate::Run
    }
}

/// A test engine: a log of the ops that ran, per lane, and data that no op
/// may change.
struct Faulty {
    log: BTreeMap<usize, Vec<u64>>,
    constant: Vec<u64>,
}

impl Faulty {
    /// Op `seq` of lane `lane`, as the plan says.
    fn op(&mut self, lane: usize, seq: u64) -> Result<u64, String> {
        // Every op reads the constant data; a faulty one fails after that.
        let base: u64 = self.constant.iter().sum();
        match fate(seq) {
            Fate::Panic => panic!("injected panic in op {seq}"),
            Fate::Error => return Err(format!("injected error in op {seq}")),
            Fate::Sleep => thread::sleep(Duration::from_micros(300)),
            Fate::Run => {}
        }
        self.log.entry(lane).or_default().push(seq);
        Ok(base + seq)
    }
}

const LANES: usize = 8;
const OPS_PER_LANE: u64 = 250;

/// The failure a dependent of op `seq` must report.
fn check_cause(seq: u64, cause: &FailureCause) {
    match (fate(seq), cause) {
        (Fate::Panic, FailureCause::Panicked(m)) => {
            assert_eq!(m, &format!("injected panic in op {seq}"));
        }
        (Fate::Error, FailureCause::Error(m)) => {
            assert_eq!(m, &format!("injected error in op {seq}"));
        }
        (f, c) => panic!("op {seq} ({f:?}): dependent saw {c:?}"),
    }
}

#[test]
fn hosted_engine_survives_panics_errors_and_sleeps_on_many_lanes() {
    let _watchdog = watchdog("actor_faults", Duration::from_secs(120));
    quiet_panics("injected panic");
    let rt = Runtime::builder().split(1).build().expect("runtime");
    let constant: Vec<u64> = (1..=10).collect();
    let c = constant.clone();
    let actor = rt
        .spawn_actor(0, move || {
            Ok::<_, String>(Faulty {
                log: BTreeMap::new(),
                constant: c,
            })
        })
        .expect("hosted");
    let base: u64 = constant.iter().sum();

    // One thread per lane submits its ops without waiting; each op has a
    // dependent on the next lane, and that dependent one of its own.
    let outcomes = thread::scope(|s| {
        let threads: Vec<_> = (0..LANES)
            .map(|l| {
                let own = actor.lane().expect("lane");
                let next = actor.lane().expect("lane");
                s.spawn(move || {
                    let mut tickets = Vec::new();
                    for i in 0..OPS_PER_LANE {
                        let seq = l as u64 * OPS_PER_LANE + i;
                        let t: Ticket<u64, String> = own
                            .submit(
                                Op::fallible(move |e: &mut Faulty| e.op(l, seq)).label("faulty"),
                            )
                            .expect("open");
                        let dep = (i % 3 == 0).then(|| {
                            let first = next
                                .submit(Op::new(move |_: &mut Faulty| seq).after([t.event()]))
                                .expect("open");
                            let second = own
                                .submit(Op::new(move |_: &mut Faulty| seq).after([first.event()]))
                                .expect("open");
                            (first, second)
                        });
                        tickets.push((seq, t, dep));
                    }
                    tickets
                        .into_iter()
                        .map(|(seq, t, dep)| {
                            let dep = dep.map(|(a, b)| (wait(a), wait(b)));
                            (seq, wait(t), dep)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        threads
            .into_iter()
            .flat_map(|t| t.join().expect("submitter"))
            .collect::<Vec<_>>()
    });

    let (mut panics, mut errors, mut sleeps, mut dependents_failed) = (0u64, 0u64, 0u64, 0u64);
    for (seq, result, dep) in outcomes {
        let failed = match (fate(seq), result) {
            (Fate::Panic, Err(TicketError::Panicked(m))) => {
                assert_eq!(m, format!("injected panic in op {seq}"));
                panics += 1;
                true
            }
            (Fate::Error, Err(TicketError::Op(m))) => {
                assert_eq!(m, format!("injected error in op {seq}"));
                errors += 1;
                true
            }
            (f @ (Fate::Run | Fate::Sleep), Ok(v)) => {
                assert_eq!(v, base + seq);
                sleeps += u64::from(f == Fate::Sleep);
                false
            }
            (f, r) => panic!("op {seq} ({f:?}): {r:?}"),
        };
        if let Some((first, second)) = dep {
            if failed {
                for r in [first, second] {
                    let err = r.expect_err("a dependent of a failed op fails");
                    let first = err.dependency().expect("DependencyFailed");
                    assert_eq!(first.op, "faulty");
                    check_cause(seq, &first.cause);
                    dependents_failed += 1;
                }
            } else {
                assert_eq!((first.expect("ran"), second.expect("ran")), (seq, seq));
            }
        }
    }
    // The engine lived through it all: its state shows exactly the ops
    // that ran, in submission order per lane, and the constant untouched.
    let lane = actor.lane().expect("lane");
    let (log, kept) = wait_ok(
        lane.run(|e: &mut Faulty| (e.log.clone(), e.constant.clone()))
            .expect("open"),
    );
    assert_eq!(kept, constant);
    for l in 0..LANES {
        let want: Vec<u64> = (0..OPS_PER_LANE)
            .map(|i| l as u64 * OPS_PER_LANE + i)
            .filter(|&s| matches!(fate(s), Fate::Run | Fate::Sleep))
            .collect();
        assert_eq!(log.get(&l).cloned().unwrap_or_default(), want, "lane {l}");
    }
    let stats = actor.stats();
    assert_eq!(stats.ops.panicked, panics);
    assert_eq!(stats.ops.failed, errors + dependents_failed);
    let report = rt.shutdown().expect("joined");
    assert!(report.actors.iter().all(|r| r.died.is_none()), "{report}");
    eprintln!(
        "faults (hosted engine): {} ops, {panics} panics, {errors} errors, {sleeps} sleeps, \
         {dependents_failed} dependents failed",
        LANES as u64 * OPS_PER_LANE
    );
}

fn two_domains() -> Runtime {
    weft_tests::unpinned_pair()
        .threads_per_domain(2)
        .build()
        .expect("runtime")
}

fn matrix(rows: usize, cols: usize, seed: f64) -> Tensor {
    let values = (0..rows * cols).map(|i| (i as f64) + seed).collect();
    Tensor::from_vec::<f64>(values, &[rows, cols]).expect("fits")
}

/// What a CPU-domain op of the plan produced.
enum Outcome {
    Closure(u64, Result<u64, TicketError<String>>),
    Read(u64, Result<f64, TicketError<OpError>>),
    Tensor(Result<Tensor, TicketError<OpError>>, Tensor),
    Factorization(Result<Tensor, TicketError<OpError>>),
}

#[test]
fn cpu_domains_keep_resident_tensors_through_faults() {
    let _watchdog = watchdog("actor_faults", Duration::from_secs(120));
    quiet_panics("injected panic");
    let rt = two_domains();
    let lanes: Vec<weft::Lane> = (0..2).map(|d| rt.lane(d).expect("lane")).collect();
    // Resident tensors on both domains that the faulty ops read.
    let originals: Vec<Tensor> = (0..4).map(|i| matrix(3, 3, i as f64 * 10.0)).collect();
    let resident: Vec<Vec<weft::TensorHandle>> = lanes
        .iter()
        .map(|l| {
            originals
                .iter()
                .map(|t| l.upload(t.clone()).expect("upload"))
                .collect()
        })
        .collect();
    // Not positive definite: its factorization fails on the actor.
    let singular: Vec<weft::TensorHandle> = lanes
        .iter()
        .map(|l| l.zeros(DType::F64, &[3, 3]).expect("zeros"))
        .collect();
    let floor: Vec<(usize, usize)> = lanes
        .iter()
        .map(|l| wait_ok(l.resident().expect("open")))
        .collect();

    let outcomes = thread::scope(|s| {
        let threads: Vec<_> = (0..4u64)
            .map(|t| {
                let (resident, singular, originals) = (&resident, &singular, &originals);
                let own: Vec<weft::Lane> = (0..2).map(|d| rt.lane(d).expect("lane")).collect();
                s.spawn(move || {
                    let mut out = Vec::new();
                    for i in 0..120u64 {
                        let seq = t * 1000 + i;
                        let d = (seq % 2) as usize;
                        let lane = &own[d];
                        let r = ((i / 4) % 4) as usize;
                        match i % 4 {
                            0 => {
                                // A closure that fails inside the domain's pool.
                                let t = lane
                                    .try_run(move |e: &mut CpuEngine| {
                                        e.install(|| {
                                            rayon::join(
                                                || seq,
                                                || match fate(seq) {
                                                    Fate::Panic => {
                                                        panic!("injected panic in op {seq}")
                                                    }
                                                    Fate::Error => {
                                                        Err(format!("injected error in op {seq}"))
                                                    }
                                                    Fate::Sleep => {
                                                        thread::sleep(Duration::from_micros(300));
                                                        Ok(seq)
                                                    }
                                                    Fate::Run => Ok(seq),
                                                },
                                            )
                                        })
                                        .1
                                    })
                                    .expect("open");
                                out.push(Outcome::Closure(seq, wait(t)));
                            }
                            1 => {
                                // Reads a resident tensor, then maybe fails.
                                let t = lane
                                    .with(&[&resident[d][r]], move |_, t| {
                                        let sum: f64 =
                                            t[0].as_slice::<f64>().expect("f64").iter().sum();
                                        match fate(seq) {
                                            Fate::Panic => panic!("injected panic in op {seq}"),
                                            Fate::Sleep => {
                                                thread::sleep(Duration::from_micros(300))
                                            }
                                            _ => {}
                                        }
                                        sum
                                    })
                                    .expect("open");
                                out.push(Outcome::Read(seq, wait(t)));
                            }
                            2 => {
                                // A failing factorization, its dependents on
                                // both domains, and a transfer of the failure.
                                let l = lane.cholesky(&singular[d]).expect("submitted");
                                let sum = lane.add(&l, &resident[d][r]).expect("submitted");
                                let moved = lane.transfer(&sum, 1 - d).expect("submitted");
                                let there = &own[1 - d];
                                let after = there.mul(&moved, &moved).expect("submitted");
                                out.push(Outcome::Factorization(wait(
                                    there.download(&after).expect("open"),
                                )));
                            }
                            _ => {
                                // A healthy op between the faults.
                                let h = lane
                                    .add(&resident[d][r], &resident[d][(r + 1) % 4])
                                    .expect("submitted");
                                let want = weft::Tensor::from_vec(
                                    originals[r]
                                        .as_slice::<f64>()
                                        .unwrap()
                                        .iter()
                                        .zip(originals[(r + 1) % 4].as_slice::<f64>().unwrap())
                                        .map(|(a, b)| a + b)
                                        .collect::<Vec<_>>(),
                                    &[3, 3],
                                )
                                .unwrap();
                                out.push(Outcome::Tensor(
                                    wait(lane.download(&h).expect("open")),
                                    want,
                                ));
                            }
                        }
                    }
                    out
                })
            })
            .collect();
        threads
            .into_iter()
            .flat_map(|t| t.join().expect("thread"))
            .collect::<Vec<_>>()
    });

    let (mut panics, mut errors, mut sleeps, mut factorizations) = (0u64, 0u64, 0u64, 0u64);
    for outcome in outcomes {
        match outcome {
            Outcome::Closure(seq, r) => match (fate(seq), r) {
                (Fate::Panic, Err(TicketError::Panicked(m))) => {
                    assert_eq!(m, format!("injected panic in op {seq}"));
                    panics += 1;
                }
                (Fate::Error, Err(TicketError::Op(m))) => {
                    assert_eq!(m, format!("injected error in op {seq}"));
                    errors += 1;
                }
                (f @ (Fate::Run | Fate::Sleep), Ok(v)) => {
                    assert_eq!(v, seq);
                    sleeps += u64::from(f == Fate::Sleep);
                }
                (f, r) => panic!("closure {seq} ({f:?}): {r:?}"),
            },
            Outcome::Read(seq, r) => match (fate(seq), r) {
                (Fate::Panic, Err(TicketError::Panicked(m))) => {
                    assert_eq!(m, format!("injected panic in op {seq}"));
                    panics += 1;
                }
                (f, Ok(sum)) if f != Fate::Panic => {
                    let r = ((seq % 1000 / 4) % 4) as usize;
                    let want: f64 = originals[r].as_slice::<f64>().unwrap().iter().sum();
                    assert_eq!(sum, want);
                    sleeps += u64::from(f == Fate::Sleep);
                }
                (f, r) => panic!("read {seq} ({f:?}): {r:?}"),
            },
            Outcome::Tensor(r, want) => assert_eq!(r.expect("healthy op"), want),
            Outcome::Factorization(r) => {
                let err = r.expect_err("depends on a failed factorization");
                let first = err.dependency().expect("DependencyFailed");
                assert_eq!(first.op, "cholesky");
                assert!(
                    matches!(&first.cause, FailureCause::Error(m) if m.contains("cholesky failed")),
                    "{first}"
                );
                factorizations += 1;
            }
        }
    }
    // Resident tensors are intact and nothing else stayed resident.
    for (d, lane) in lanes.iter().enumerate() {
        for (h, want) in resident[d].iter().zip(&originals) {
            assert_eq!(&wait_ok(lane.download(h).expect("open")), want);
        }
        assert_eq!(wait_ok(lane.resident().expect("open")), floor[d]);
    }
    let stats = rt.stats();
    let panicked: u64 = stats.actors.iter().map(|a| a.ops.panicked).sum();
    assert_eq!(panicked, panics);
    let report = rt.shutdown().expect("joined");
    assert!(report.actors.iter().all(|r| r.died.is_none()), "{report}");
    eprintln!(
        "faults (CPU domains): 480 op chains, {panics} panics, {errors} errors, {sleeps} sleeps, \
         {factorizations} failed factorizations with dependents and transfers"
    );
}
