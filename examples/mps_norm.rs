//! The norm `⟨ψ|ψ⟩` of a random complex MPS, one code path run compiled and
//! eagerly: the environment swept site by site, two contractions per site.
//!
//! `cargo run --release -p weft-examples --example mps_norm -- [sites] [bond]`
//!
//! `Norm` is a [`Function`]: `lane.call` traces it on the first call (per
//! site shapes) and runs all its contractions as one message after that;
//! inside [`eagerly`] the same call submits each op on its own. Both give
//! the same bits; the example prints the time per contraction of each.

use std::time::Instant;

use weft::ops::{Distribution, Function};
use weft::prelude::*;
use weft::program::eagerly;
use weft::OpError;
use weft_examples::BoxError;

/// `⟨ψ|ψ⟩` of the MPS whose sites are the inputs (`[l, 2, r]` each, the
/// ends of bond 1), as a rank-0 `c64`.
#[derive(Clone, PartialEq, Eq, Hash)]
struct Norm;

impl Function for Norm {
    fn call<O: Ops>(&self, o: &O, sites: &[O::Tensor]) -> Result<Vec<O::Tensor>, OpError> {
        let mut env = o.ones(DType::C64, &[1, 1])?;
        for a in sites {
            let t = o.einsum("ab,bsd->asd", &[&env, a])?;
            env = o.einsum("asc*,asd->cd", &[a, &t])?; // the bra read conjugated
        }
        Ok(vec![o.reshape(&env, &[])?])
    }
}

fn main() -> Result<(), BoxError> {
    let numbers: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let (sites, bond) = (
        numbers.first().copied().unwrap_or(32),
        numbers.get(1).copied().unwrap_or(8),
    );
    let rt = Runtime::builder().split(1).threads_per_domain(1).build()?;
    let lane = rt.lane(0)?;
    let mps = (0..sites)
        .map(|k| {
            let l = if k == 0 { 1 } else { bond };
            let r = if k == sites - 1 { 1 } else { bond };
            let a = lane.random(DType::C64, &[l, 2, r], Distribution::Normal, k as u64)?;
            lane.div(
                &a,
                &lane.full(DType::C64, &[], Scalar::Real((4.0 * bond as f64).sqrt()))?,
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    let sites_in: Vec<&TensorHandle> = mps.iter().collect();

    const RUNS: usize = 200;
    let mut results = Vec::new();
    for (mode, eager) in [("compiled", false), ("eager", true)] {
        let run = || -> Result<(c64, f64), BoxError> {
            let norm = lane.call(&Norm, &sites_in, &[])?.remove(0);
            let value = lane.item::<c64>(&norm)?.wait()?; // first call traces; untimed
            let start = Instant::now();
            for _ in 0..RUNS {
                lane.call(&Norm, &sites_in, &[])?;
            }
            lane.item::<c64>(&lane.call(&Norm, &sites_in, &[])?.remove(0))?
                .wait()?;
            let per = start.elapsed().as_secs_f64() * 1e6 / ((RUNS + 1) * 2 * sites) as f64;
            Ok((value, per))
        };
        let (value, per) = if eager { eagerly(run)? } else { run()? };
        println!(
            "{mode:>8}: ⟨ψ|ψ⟩ = {:.15}{:+.1e}i   {per:.2} µs per contraction",
            value.re, value.im
        );
        results.push((value, per));
    }
    let ((compiled, fast), (eager, slow)) = (results[0], results[1]);
    println!(
        "{sites} sites, bond {bond}, c64: the compiled sweep at {:.1}× the eager speed",
        slow / fast
    );
    if compiled.re.to_bits() != eager.re.to_bits() || compiled.im.to_bits() != eager.im.to_bits() {
        return Err(format!("compiled {compiled} and eager {eager} differ").into());
    }
    rt.shutdown()?;
    Ok(())
}
