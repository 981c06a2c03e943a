//! Case 3, `contention`: application threads, each with its own lane,
//! submitting small ops to one domain, against the same kernels behind the
//! mutex.

use std::sync::atomic::{AtomicU64, Ordering};

use weft::{
    ops::{BinaryOp, TensorOp},
    OpError, Tensor, TensorHandle,
};
use weft_examples::BoxError;

use super::small::{SmallInputs, APP_THREADS};
use crate::case::{Case, Domain, Run};
use crate::mutex::{SharedEngine, WorkerEntry, ENTRY_TIMEOUT};
use crate::report::{Outcome, Row, Side, Unit};
use crate::timing::{interleaved, on_threads, per_second};

pub(super) const CASE: Case = Case {
    name: "contention",
    title: "3. application threads, small ops, one domain",
    run: Run::InDomain(run),
};

/// Ops in flight per thread in the windowed run.
const WINDOW: u64 = 8;

fn run(domain: &Domain<'_>, rows: &mut Vec<Row>) -> Result<(), BoxError> {
    let Domain {
        settings,
        rt,
        threads,
        ..
    } = *domain;
    /// One kind of small op: its operands on the host and resident.
    struct Kind<'a> {
        key: &'static str,
        label: &'static str,
        op: TensorOp,
        tensors: &'a [Tensor; 2],
        handles: &'a [TensorHandle; 2],
        total: u64,
    }
    let inputs = SmallInputs::new()?;
    let lane = rt.lane(0)?;
    let resident = |t: &[Tensor; 2]| -> Result<[TensorHandle; 2], OpError> {
        Ok([lane.upload(t[0].clone())?, lane.upload(t[1].clone())?])
    };
    let (add_h, gemm_h) = (resident(&inputs.add)?, resident(&inputs.gemm)?);
    let shared = SharedEngine::new(threads, WorkerEntry::Wait)?;
    let kinds = [
        Kind {
            key: "add",
            label: "4 KiB f64 add",
            op: TensorOp::Binary(BinaryOp::Add),
            tensors: &inputs.add,
            handles: &add_h,
            total: 8_000,
        },
        Kind {
            key: "gemm",
            label: "64×64 f64 GEMM",
            op: TensorOp::Matmul,
            tensors: &inputs.gemm,
            handles: &gemm_h,
            total: 2_000,
        },
    ];
    for kind in kinds {
        let Kind {
            op,
            tensors,
            handles,
            ..
        } = &kind;
        let total = settings.count(kind.total);
        for app in APP_THREADS {
            let each = total / app as u64;
            let ops = each * app as u64;
            let wait_each_run = || {
                let lane = rt.lane(0).expect("domain 0");
                for _ in 0..each {
                    let c = lane
                        .apply(op.clone(), &[&handles[0], &handles[1]])
                        .expect("submitted");
                    lane.with(&[&c], |_, _| ())
                        .expect("submitted")
                        .wait()
                        .expect("ran");
                }
            };
            let windowed = || {
                let lane = rt.lane(0).expect("domain 0");
                let mut left = each;
                while left > 0 {
                    let batch = left.min(WINDOW);
                    let mut last = None;
                    for _ in 0..batch {
                        last = Some(
                            lane.apply(op.clone(), &[&handles[0], &handles[1]])
                                .expect("submitted"),
                        );
                    }
                    left -= batch;
                    let last = last.expect("one op at least");
                    lane.with(&[&last], |_, _| ())
                        .expect("submitted")
                        .wait()
                        .expect("ran");
                }
            };
            shared.reset_counts();
            let failed = AtomicU64::new(0);
            let mutex = || {
                for _ in 0..each {
                    match shared.enter(ENTRY_TIMEOUT, |k| {
                        k.execute(op, &[&tensors[0], &tensors[1]])
                    }) {
                        Ok(result) => drop(result.expect("valid op")),
                        Err(_) => {
                            failed.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            };
            let [wait_each, windowed, mutex] = interleaved(
                settings.reps(9),
                [
                    &mut || on_threads(app, &wait_each_run),
                    &mut || on_threads(app, &windowed),
                    &mut || on_threads(app, &mutex),
                ],
            );
            let mutex_side = || {
                let side = Side::new("mutex + guard, pool.install", per_second(mutex, ops));
                match failed.load(Ordering::Relaxed) {
                    0 => side,
                    failed => side.with_outcome(Outcome {
                        completed: 0,
                        failed,
                        fallbacks: 0,
                        why: shared.why(),
                    }),
                }
            };
            let what = format!("{}, {app} thread(s)", kind.label);
            rows.push(
                Row::new(
                    CASE.name,
                    format!("contention-{}-t{app}-wait", kind.key),
                    what.clone(),
                    Unit::OpsPerSecond,
                    Side::new("lane per thread, wait each", per_second(wait_each, ops)),
                )
                .against(mutex_side()),
            );
            rows.push(
                Row::new(
                    CASE.name,
                    format!("contention-{}-t{app}-window", kind.key),
                    what,
                    Unit::OpsPerSecond,
                    Side::new(
                        format!("lane per thread, window {WINDOW}"),
                        per_second(windowed, ops),
                    ),
                )
                .against(mutex_side()),
            );
            // One thread, waiting each op, on the actor's own CPU: the
            // spinners see it and take turns instead of spinning.
            if app == 1 && kind.key == "add" {
                if let Some(pinned) = on_the_actors_cpu(&lane, settings.reps(9), &wait_each_run)? {
                    rows.push(
                        Row::new(
                            CASE.name,
                            "contention-add-t1-wait-same-cpu",
                            format!("{}, 1 thread on the actor's CPU", kind.label),
                            Unit::OpsPerSecond,
                            Side::new("lane, wait each, same CPU", per_second(pinned, ops)),
                        )
                        .against(Side::new(
                            "lane, wait each, CPU of its own",
                            per_second(wait_each, ops),
                        )),
                    );
                }
            }
        }
    }
    Ok(())
}

/// The median time of `run` with the calling thread pinned onto the CPU
/// the actor of `lane` runs on (`None` where the platform cannot say).
fn on_the_actors_cpu(
    lane: &weft::Lane,
    reps: usize,
    run: &dyn Fn(),
) -> Result<Option<std::time::Duration>, BoxError> {
    let Some(cpu) = lane.run(|_| weft::topology::current_cpu())?.wait()? else {
        return Ok(None);
    };
    let allowed = weft::topology::process_allowed_cpus()?;
    weft::topology::pin_current_thread(&weft::topology::CpuSet::single(cpu))?;
    let [pinned] = interleaved(reps, [&mut || run()]);
    weft::topology::pin_current_thread(&allowed)?;
    Ok(Some(pinned))
}
