//! Case `einsum_kinds`: einsums that sum no label, which are one
//! multiplication per output element, against what a user would write
//! instead: `ij,ij->ij` against `lane.mul` of the same tensors on the same
//! lane, and `i,j->ij` against a plain outer-product loop on the same
//! threads. Each checks its result against its baseline's once.

use rayon::prelude::*;
use weft::ops::{ElementwiseOps, LinalgOps};
use weft::Tensor;
use weft_examples::{random, BoxError};

use super::close;
use crate::case::{Case, Domain, Run};
use crate::report::{Row, Side, Unit};
use crate::timing::{interleaved, millis};

pub(super) const CASE: Case = Case {
    name: "einsum_kinds",
    title: "einsums that sum no label",
    run: Run::InDomain(run),
};

/// The elementwise product's side and the outer product's length: the
/// einsum benchmark's `bin_elementwise_mul_2048x2048` and
/// `bin_outer_product_4096`.
const SIDE: usize = 2048;
const OUTER: usize = 4096;

fn run(domain: &Domain<'_>, rows: &mut Vec<Row>) -> Result<(), BoxError> {
    let Domain {
        settings,
        lane,
        direct_pool,
        ..
    } = *domain;
    let wait = |h: &weft::TensorHandle| {
        lane.with(&[h], |_, _| ())
            .expect("submitted")
            .wait()
            .expect("ran");
    };

    // ij,ij->ij against lane.mul.
    let x = lane.upload(Tensor::from_vec(random(SIDE * SIDE, 31), &[SIDE, SIDE])?)?;
    let y = lane.upload(Tensor::from_vec(random(SIDE * SIDE, 32), &[SIDE, SIDE])?)?;
    let by_einsum = lane.einsum("ij,ij->ij", &[&x, &y])?;
    let by_mul = lane.mul(&x, &y)?;
    let (e, m) = (
        lane.download(&by_einsum)?.wait()?,
        lane.download(&by_mul)?.wait()?,
    );
    close(e.as_slice::<f64>()?, m.as_slice::<f64>()?, 1e-15)?;
    let [einsum, mul] = interleaved(
        settings.reps(15),
        [
            &mut || wait(&lane.einsum("ij,ij->ij", &[&x, &y]).expect("submitted")),
            &mut || wait(&lane.mul(&x, &y).expect("submitted")),
        ],
    );
    rows.push(
        Row::new(
            CASE.name,
            "elementwise",
            format!("einsum ij,ij->ij, {SIDE}×{SIDE} f64"),
            Unit::Millis,
            Side::new("lane.einsum", millis(einsum)),
        )
        .against(Side::new("lane.mul, same lane", millis(mul))),
    );

    // i,j->ij against a loop over output rows on the same threads.
    let (u, v) = (random(OUTER, 33), random(OUTER, 34));
    let hu = lane.upload(Tensor::from_vec(u.clone(), &[OUTER])?)?;
    let hv = lane.upload(Tensor::from_vec(v.clone(), &[OUTER])?)?;
    // The loop writes into one buffer, made (and its pages faulted in) once,
    // as weft's outputs come from its buffer pool.
    let mut out = vec![0.0; OUTER * OUTER];
    let outer_loop = |out: &mut [f64]| {
        direct_pool.install(|| {
            out.par_chunks_mut(OUTER)
                .zip(&u)
                .for_each(|(row, &a)| row.iter_mut().zip(&v).for_each(|(o, &b)| *o = a * b));
        });
        std::hint::black_box(out);
    };
    outer_loop(&mut out);
    let got = lane.einsum("i,j->ij", &[&hu, &hv])?;
    close(lane.download(&got)?.wait()?.as_slice::<f64>()?, &out, 1e-15)?;
    let [einsum, direct] = interleaved(
        settings.reps(15),
        [
            &mut || wait(&lane.einsum("i,j->ij", &[&hu, &hv]).expect("submitted")),
            &mut || outer_loop(&mut out),
        ],
    );
    rows.push(
        Row::new(
            CASE.name,
            "outer",
            format!("einsum i,j->ij, {OUTER} f64 each"),
            Unit::Millis,
            Side::new("lane.einsum", millis(einsum)),
        )
        .against(Side::new("row loop, same threads", millis(direct))),
    );
    Ok(())
}
