//! Case 5, `gemm`: f64 GEMM through a lane against faer called directly
//! with the same threads; with the `blas` feature, a second weft row on
//! the BLAS provider against the same baseline.

use weft::ops::LinalgOps;
use weft::Tensor;
use weft_examples::{faer_gemm, random, BoxError};

use crate::case::{Case, Domain, Run};
use crate::report::{Row, Side, Unit};
use crate::timing::{interleaved, millis};

pub(super) const CASE: Case = Case {
    name: "gemm",
    title: "5. f64 GEMM",
    run: Run::InDomain(run),
};

fn run(domain: &Domain<'_>, rows: &mut Vec<Row>) -> Result<(), BoxError> {
    let Domain {
        settings,
        lane,
        direct_pool,
        threads,
        ..
    } = *domain;
    for n in [512usize, 1024, 2048] {
        let a = Tensor::from_vec(random(n * n, 1), &[n, n])?;
        let b = Tensor::from_vec(random(n * n, 2), &[n, n])?;
        let (ha, hb) = (lane.upload(a.clone())?, lane.upload(b.clone())?);
        let [weft, direct] = interleaved(
            settings.reps(if n >= 2048 { 3 } else { 7 }),
            [
                &mut || {
                    let c = lane.matmul(&ha, &hb).expect("submitted");
                    lane.with(&[&c], |_, _| ())
                        .expect("submitted")
                        .wait()
                        .expect("ran");
                },
                &mut || {
                    std::hint::black_box(faer_gemm(direct_pool, &a, &b, threads));
                },
            ],
        );
        rows.push(
            Row::new(
                CASE.name,
                format!("gemm-{n}"),
                format!("f64 GEMM n = {n}"),
                Unit::Millis,
                Side::new("lane.matmul", millis(weft)),
            )
            .against(Side::new(
                format!("faer direct, {threads} threads"),
                millis(direct),
            )),
        );
        #[cfg(feature = "blas")]
        {
            let [blas, direct] = interleaved(
                settings.reps(if n >= 2048 { 3 } else { 7 }),
                [
                    &mut || {
                        super::set_provider(lane, weft::engine::CpuProvider::Blas);
                        let c = lane.matmul(&ha, &hb).expect("submitted");
                        lane.sync(&c).expect("submitted").wait().expect("ran");
                        super::set_provider(lane, weft::engine::CpuProvider::Faer);
                    },
                    &mut || {
                        std::hint::black_box(faer_gemm(direct_pool, &a, &b, threads));
                    },
                ],
            );
            rows.push(
                Row::new(
                    CASE.name,
                    format!("gemm-blas-{n}"),
                    format!("f64 GEMM n = {n}, BLAS provider"),
                    Unit::Millis,
                    Side::new("lane.matmul (OpenBLAS)", millis(blas)),
                )
                .against(Side::new(
                    format!("faer direct, {threads} threads"),
                    millis(direct),
                )),
            );
        }
    }
    Ok(())
}
