//! The main job: a tensor pipeline across this machine's CPU domains.
//!
//! `cargo run --release -p weft-examples --example pipeline`
//!
//! Batches of random matrices stream through four stages on alternating
//! domains — generate → contract (einsum) → factorize (SVD) → reduce — with
//! a bound on batches in flight. Each item's result, the nuclear norm of
//! `Σ_b X_b X_bᵀ`, equals `Σ |X|²` (the matrix is positive semi-definite),
//! which a second, independent chain of ops checks.

use weft::ops::{CreateOps, ElementwiseOps, LinalgOps, ReduceOps};
use weft::{ops::Distribution, runtime::Pipeline, DType, Runtime};

const ITEMS: usize = 200;
const BATCH: usize = 8;
const N: usize = 48;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut rt = Runtime::new()?;
    if rt.domains().len() == 1 && rt.topology().allowed().len() >= 2 {
        // One NUMA node: split its CPUs so the stages run on two domains.
        rt.shutdown()?;
        rt = Runtime::builder().split(2).build()?;
    }
    println!("{}", rt.topology());
    let domains = rt.domains().len();
    let on = |stage: usize| stage % domains;

    let pipeline = Pipeline::new(&rt, "generate", on(0), |lane, i| {
        lane.random(DType::F64, &[BATCH, N, N], Distribution::Normal, i as u64)
    })
    .stage("contract", on(1), |lane, x| {
        lane.einsum("bij,bkj->ik", &[x, x])
    })
    .stage("factorize", on(2), |lane, gram| Ok(lane.svd(gram)?.1))
    .stage("reduce", on(3), |lane, s| lane.sum_all(s))
    .in_flight(16);
    for (name, domain) in pipeline.layout() {
        println!("stage {name:<10} on CPU domain {domain}");
    }

    let run = pipeline.run(ITEMS)?;
    let seconds = run.elapsed.as_secs_f64();
    println!(
        "{ITEMS} items of {BATCH}×{N}×{N} in {:.2} s: {:.1} items/s (at most {} in flight)",
        seconds,
        ITEMS as f64 / seconds,
        run.peak_in_flight
    );

    // The check: Σ |X|² for every item, by another chain of ops.
    let lane = rt.lane(on(0))?;
    let mut worst: f64 = 0.0;
    for (i, out) in run.outputs.into_iter().enumerate() {
        let nuclear = out?.as_slice::<f64>()?[0];
        let x = lane.random(DType::F64, &[BATCH, N, N], Distribution::Normal, i as u64)?;
        let squares = lane.sum_all(&lane.mul(&x, &x)?)?;
        let expected = lane.download(&squares)?.wait()?.as_slice::<f64>()?[0];
        worst = worst.max((nuclear - expected).abs() / expected);
    }
    assert!(worst < 1e-10, "relative error {worst:e}");
    println!("checked: nuclear norm = Σ|X|² for every item (worst relative error {worst:.1e})");
    println!("{}", rt.stats());
    print!("{}", rt.shutdown()?);
    Ok(())
}
