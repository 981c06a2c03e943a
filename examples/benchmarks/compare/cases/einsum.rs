//! Case `einsum_batch`: a batched einsum, `bij,bjk->bik`, through a lane against
//! faer per batch with rayon over the batches.

use rayon::prelude::*;
use weft::ops::LinalgOps;
use weft::Tensor;
use weft_examples::{random, BoxError};

use crate::case::{Case, Domain, Run};
use crate::report::{Row, Side, Unit};
use crate::timing::{interleaved, millis};

pub(super) const CASE: Case = Case {
    name: "einsum_batch",
    title: "batched einsum",
    run: Run::InDomain(run),
};

/// The einsum the numpy script runs too.
const EINSUM: &str = "bij,bjk->bik";
const EINSUM_BATCH: usize = 64;
const EINSUM_N: usize = 64;

fn run(domain: &Domain<'_>, rows: &mut Vec<Row>) -> Result<(), BoxError> {
    let Domain {
        settings,
        lane,
        direct_pool,
        ..
    } = *domain;
    let (bt, n) = (EINSUM_BATCH, EINSUM_N);
    let a = random(bt * n * n, 21);
    let b = random(bt * n * n, 22);
    let (ha, hb) = (
        lane.upload(Tensor::from_vec(a.clone(), &[bt, n, n])?)?,
        lane.upload(Tensor::from_vec(b.clone(), &[bt, n, n])?)?,
    );
    let [weft, direct] = interleaved(
        settings.reps(15),
        [
            &mut || {
                let c = lane.einsum(EINSUM, &[&ha, &hb]).expect("submitted");
                lane.with(&[&c], |_, _| ())
                    .expect("submitted")
                    .wait()
                    .expect("ran");
            },
            &mut || {
                let mut c = vec![0.0; bt * n * n];
                let m = n * n;
                direct_pool.install(|| {
                    c.par_chunks_mut(m).enumerate().for_each(|(i, c)| {
                        faer::linalg::matmul::matmul(
                            faer::MatMut::from_row_major_slice_mut(c, n, n),
                            faer::Accum::Replace,
                            faer::MatRef::from_row_major_slice(&a[i * m..(i + 1) * m], n, n),
                            faer::MatRef::from_row_major_slice(&b[i * m..(i + 1) * m], n, n),
                            1.0,
                            faer::Par::Seq,
                        );
                    });
                });
                std::hint::black_box(c);
            },
        ],
    );
    rows.push(
        Row::new(
            CASE.name,
            "einsum_batch",
            format!("einsum {EINSUM}, {bt}×{n}×{n} f64"),
            Unit::Millis,
            Side::new("lane.einsum", millis(weft)),
        )
        .against(Side::new(
            "faer per batch, rayon over batches",
            millis(direct),
        )),
    );
    Ok(())
}
