//! Case 7, `chain`: a chain of small dependent ops, against the mutex engine
//! and against the kernel called inline.

use weft::ops::ElementwiseOps;
use weft::{
    ops::{BinaryOp, TensorOp},
    Tensor,
};
use weft_examples::{random, BoxError};

use crate::case::{Case, Domain, Run};
use crate::mutex::{Kernels, SharedEngine, WorkerEntry, ENTRY_TIMEOUT};
use crate::report::{Row, Side, Unit};
use crate::timing::{interleaved, micros};

pub(super) const CASE: Case = Case {
    name: "chain",
    title: "7. chain of small ops",
    run: Run::InDomain(run),
};

fn run(domain: &Domain<'_>, rows: &mut Vec<Row>) -> Result<(), BoxError> {
    let Domain {
        settings,
        lane,
        threads,
        ..
    } = *domain;
    const LINKS: u64 = 1_000;
    let x = Tensor::from_vec(random(64, 5), &[64])?;
    let small = lane.upload(x.clone())?;
    let add = TensorOp::Binary(BinaryOp::Add);
    let shared = SharedEngine::new(threads, WorkerEntry::Wait)?;
    let [weft, mutex, direct] = interleaved(
        settings.reps(11),
        [
            &mut || {
                let mut h = small.clone();
                for _ in 0..LINKS {
                    h = lane.add(&h, &small).expect("submitted");
                }
                lane.with(&[&h], |_, _| ())
                    .expect("submitted")
                    .wait()
                    .expect("ran");
            },
            &mut || {
                let mut t = x.clone();
                for _ in 0..LINKS {
                    t = shared
                        .enter(ENTRY_TIMEOUT, |k| k.execute(&add, &[&t, &x]))
                        .expect("entered")
                        .expect("valid op")
                        .pop()
                        .expect("one output");
                }
                std::hint::black_box(t);
            },
            &mut || {
                std::hint::black_box(inline_adds(&x, LINKS));
            },
        ],
    );
    let what = format!("{LINKS} dependent adds, 64 f64");
    let weft_side = || Side::new("lane.add ×N, wait the last", micros(weft, LINKS));
    rows.push(
        Row::new(
            CASE.name,
            "chain-mutex",
            what.clone(),
            Unit::MicrosPerOp,
            weft_side(),
        )
        .against(Side::new(
            "mutex + guard, pool.install each",
            micros(mutex, LINKS),
        )),
    );
    rows.push(
        Row::new(
            CASE.name,
            "chain-direct",
            what,
            Unit::MicrosPerOp,
            weft_side(),
        )
        .against(Side::new(
            "kernel called inline (no sharing)",
            micros(direct, LINKS),
        )),
    );
    Ok(())
}

/// `x + x + … + x` (`links` adds) with the kernel called inline: the
/// baseline of this case and of `chain_program`.
pub(super) fn inline_adds(x: &Tensor, links: u64) -> Tensor {
    let (kernels, add) = (Kernels { threads: 1 }, TensorOp::Binary(BinaryOp::Add));
    let mut t = x.clone();
    for _ in 0..links {
        t = kernels
            .execute(&add, &[&t, x])
            .expect("valid op")
            .pop()
            .expect("one output");
    }
    t
}
