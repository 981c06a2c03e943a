//! Case 4, `reentry`: an op that re-enters its engine from a pool worker: a
//! 64×64 GEMM that, inside, forks with `rayon::join` and on the other side
//! calls back into the engine for a 4 KiB add. Against the mutex engine
//! entered again from a pool worker: strict (the nested entry waits for the
//! lock) and with the seeds' serial inline fallback.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use weft::ops::ElementwiseOps;

use parking_lot::Mutex;
use weft::{
    ops::{BinaryOp, TensorOp},
    OpError, TicketError,
};
use weft_examples::BoxError;

use super::small::{SmallInputs, APP_THREADS};
use crate::case::{Case, Domain, Run};
use crate::mutex::{SharedEngine, WorkerEntry, ENTRY_TIMEOUT, NESTED_TIMEOUT};
use crate::report::{Outcome, Row, Side, Unit};
use crate::timing::{interleaved, micros, on_threads, per_second};

pub(super) const CASE: Case = Case {
    name: "reentry",
    title: "4. an op that re-enters the engine from a pool worker",
    run: Run::InDomain(run),
};

/// Counts ops' outcomes from many threads.
#[derive(Default)]
struct Tally {
    completed: AtomicU64,
    failed: AtomicU64,
    why: Mutex<Vec<String>>,
}

impl Tally {
    fn done(&self) {
        self.completed.fetch_add(1, Ordering::Relaxed);
    }

    fn fail(&self, why: impl std::fmt::Display) {
        self.failed.fetch_add(1, Ordering::Relaxed);
        let why = why.to_string();
        let mut seen = self.why.lock();
        if !seen.contains(&why) {
            seen.push(why);
        }
    }

    fn outcome(&self, fallbacks: u64, why: Option<String>) -> Outcome {
        Outcome {
            completed: self.completed.load(Ordering::Relaxed),
            failed: self.failed.load(Ordering::Relaxed),
            fallbacks,
            why: why.unwrap_or_else(|| self.why.lock().join("; ")),
        }
    }
}

fn run(domain: &Domain<'_>, rows: &mut Vec<Row>) -> Result<(), BoxError> {
    let Domain {
        settings,
        rt,
        threads,
        ..
    } = *domain;
    let inputs = SmallInputs::new()?;
    let lane = rt.lane(0)?;
    let [a, b] = [
        lane.upload(inputs.gemm[0].clone())?,
        lane.upload(inputs.gemm[1].clone())?,
    ];
    let [x, y] = [
        lane.upload(inputs.add[0].clone())?,
        lane.upload(inputs.add[1].clone())?,
    ];
    let strict = SharedEngine::new(threads, WorkerEntry::Wait)?;
    let fallback = SharedEngine::new(threads, WorkerEntry::SerialInline)?;
    let (gemm, add) = (TensorOp::Matmul, TensorOp::Binary(BinaryOp::Add));
    // Ops that complete run many times; those that fail only at the
    // baseline's timeout run a few.
    let total = settings.count(800);
    let total_failing = if settings.quick { 16 } else { 48 };
    let reps = settings.reps(7);

    for app in APP_THREADS {
        let each = total / app as u64;
        let ops = each * app as u64;
        let each_failing = total_failing / app as u64;
        let ops_failing = each_failing * app as u64;

        // weft (a): the other side uses the engine handed to the op.
        let inline = Tally::default();
        let weft_inline = || {
            let lane = rt.lane(0).expect("domain 0");
            for _ in 0..each {
                let ticket = lane
                    .with(&[&a, &b, &x, &y], |engine, t| {
                        engine.install(|| {
                            rayon::join(
                                || engine.execute(&TensorOp::Matmul, &t[..2]),
                                || engine.execute(&TensorOp::Binary(BinaryOp::Add), &t[2..]),
                            )
                        })
                    })
                    .expect("submitted");
                match ticket.wait() {
                    Ok((Ok(_), Ok(_))) => inline.done(),
                    Ok((Err(e), _) | (_, Err(e))) => inline.fail(e),
                    Err(e) => inline.fail(e),
                }
            }
        };

        // weft (b): the other side submits the add as a follow-up op on the
        // caller's lane, which the caller then waits for.
        let follow = Tally::default();
        let weft_follow = || {
            let lane = rt.lane(0).expect("domain 0");
            for _ in 0..each {
                let (next, x, y) = (lane.clone(), x.clone(), y.clone());
                let ticket = lane
                    .with(&[&a, &b], move |engine, t| {
                        engine.install(|| {
                            rayon::join(
                                || engine.execute(&TensorOp::Matmul, t),
                                move || next.add(&x, &y),
                            )
                        })
                    })
                    .expect("submitted");
                match ticket.wait() {
                    Ok((Ok(_), Ok(h))) => {
                        match lane.with(&[&h], |_, _| ()).expect("submitted").wait() {
                            Ok(()) => follow.done(),
                            Err(e) => follow.fail(e),
                        }
                    }
                    Ok((Err(e), _)) => follow.fail(e),
                    Ok((_, Err(e))) => follow.fail(e),
                    Err(e) => follow.fail(e),
                }
            }
        };

        // The mutex engine: the other side enters the engine again.
        let mutex_run = |shared: &SharedEngine, each: u64, tally: &Tally| {
            for _ in 0..each {
                let out = shared.enter(ENTRY_TIMEOUT, |k| {
                    rayon::join(
                        || k.execute(&gemm, &[&inputs.gemm[0], &inputs.gemm[1]]),
                        || {
                            shared.enter(NESTED_TIMEOUT, |k| {
                                k.execute(&add, &[&inputs.add[0], &inputs.add[1]])
                            })
                        },
                    )
                });
                match out {
                    Ok((Ok(_), Ok(Ok(_)))) => tally.done(),
                    Ok((Err(e), _) | (_, Ok(Err(e)))) => tally.fail(e),
                    Ok((_, Err(e))) | Err(e) => tally.fail(format!("{e:?}")),
                }
            }
        };
        fallback.reset_counts();
        let fallback_tally = Tally::default();
        let mutex_fallback = || mutex_run(&fallback, each, &fallback_tally);

        let [weft_inline, weft_follow, mutex_fallback] = interleaved(
            reps,
            [
                &mut || on_threads(app, &weft_inline),
                &mut || on_threads(app, &weft_follow),
                &mut || on_threads(app, &mutex_fallback),
            ],
        );

        // weft (c): the other side submits and waits, which from a pool
        // worker of the same actor could never end: refused at once. Against
        // the mutex engine whose nested entry waits for the lock.
        let waits = Tally::default();
        let weft_wait = || {
            let lane = rt.lane(0).expect("domain 0");
            for _ in 0..each_failing {
                let (next, x, y) = (lane.clone(), x.clone(), y.clone());
                let ticket = lane
                    .with(&[&a, &b], move |engine, t| {
                        engine.install(|| {
                            rayon::join(
                                || engine.execute(&TensorOp::Matmul, t),
                                move || -> Result<(), TicketError<OpError>> {
                                    let h = next.add(&x, &y).map_err(TicketError::Op)?;
                                    next.with(&[&h], |_, _| ()).map_err(TicketError::Op)?.wait()
                                },
                            )
                        })
                    })
                    .expect("submitted");
                match ticket.wait() {
                    Ok((Ok(_), Ok(()))) => waits.done(),
                    Ok((Err(e), _)) => waits.fail(e),
                    Ok((_, Err(e))) if e.is_would_deadlock() => waits.fail("WouldDeadlock at once"),
                    Ok((_, Err(e))) => waits.fail(e),
                    Err(e) => waits.fail(e),
                }
            }
        };
        strict.reset_counts();
        let strict_tally = Tally::default();
        let mutex_strict = || mutex_run(&strict, each_failing, &strict_tally);
        let start = Instant::now();
        on_threads(app, &weft_wait);
        let weft_wait = start.elapsed();
        let start = Instant::now();
        on_threads(app, &mutex_strict);
        let mutex_strict = start.elapsed();

        let fallback_side = || {
            Side::new(
                "mutex + guard, serial inline fallback",
                per_second(mutex_fallback, ops),
            )
            .with_outcome(fallback_tally.outcome(fallback.fallbacks.load(Ordering::Relaxed), None))
        };
        let what = format!("GEMM ∥ nested add, {app} thread(s)");
        rows.push(
            Row::new(
                CASE.name,
                format!("reentry-t{app}-engine"),
                what.clone(),
                Unit::OpsPerSecond,
                Side::new("nested via the op's engine", per_second(weft_inline, ops))
                    .with_outcome(inline.outcome(0, None)),
            )
            .against(fallback_side()),
        );
        rows.push(
            Row::new(
                CASE.name,
                format!("reentry-t{app}-follow-up"),
                what,
                Unit::OpsPerSecond,
                Side::new("nested as a follow-up op", per_second(weft_follow, ops))
                    .with_outcome(follow.outcome(0, None)),
            )
            .against(fallback_side()),
        );
        // Time from submission to the op's outcome, per op and thread.
        let per_outcome = |d: Duration| micros(d, ops_failing.max(1)) * app as f64;
        rows.push(
            Row::new(
                CASE.name,
                format!("reentry-t{app}-nested-wait"),
                format!("GEMM ∥ nested add + wait, {app} thread(s)"),
                Unit::MicrosPerOp,
                Side::new("nested submit + wait", per_outcome(weft_wait))
                    .with_outcome(waits.outcome(0, None)),
            )
            .against(
                Side::new(
                    "mutex + guard, nested entry waits",
                    per_outcome(mutex_strict),
                )
                .with_outcome(strict_tally.outcome(0, Some(strict.why()))),
            ),
        );
    }
    Ok(())
}
