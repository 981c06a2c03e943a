//! Case 6, `add`: c = a + b of 64 MiB f64 through a lane against a rayon
//! loop with the same threads.

use rayon::prelude::*;
use weft::ops::ElementwiseOps;
use weft::Tensor;
use weft_examples::{random, BoxError};

use crate::case::{Case, Domain, Run};
use crate::report::{Row, Side, Unit};
use crate::timing::{interleaved, millis};

pub(super) const CASE: Case = Case {
    name: "add",
    title: "6. c = a + b, 64 MiB",
    run: Run::InDomain(run),
};

fn run(domain: &Domain<'_>, rows: &mut Vec<Row>) -> Result<(), BoxError> {
    let Domain {
        settings,
        lane,
        direct_pool,
        ..
    } = *domain;
    let n = 64 * 1024 * 1024 / 8;
    let (x, y) = (random(n, 3), random(n, 4));
    let (hx, hy) = (
        lane.upload(Tensor::from_vec(x.clone(), &[n])?)?,
        lane.upload(Tensor::from_vec(y.clone(), &[n])?)?,
    );
    let [weft, direct] = interleaved(
        settings.reps(7),
        [
            &mut || {
                let c = lane.add(&hx, &hy).expect("submitted");
                lane.with(&[&c], |_, _| ())
                    .expect("submitted")
                    .wait()
                    .expect("ran");
            },
            &mut || {
                let c: Vec<f64> =
                    direct_pool.install(|| x.par_iter().zip(&y).map(|(a, b)| a + b).collect());
                std::hint::black_box(c);
            },
        ],
    );
    rows.push(
        Row::new(
            CASE.name,
            "add-64MiB",
            "c = a + b, 64 MiB f64 each",
            Unit::Millis,
            Side::new("lane.add", millis(weft)),
        )
        .against(Side::new(
            "rayon par_iter collect, same threads",
            millis(direct),
        )),
    );
    Ok(())
}
