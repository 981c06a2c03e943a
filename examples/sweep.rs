//! A DMRG-style sweep over a matrix-product state, one code path run
//! eagerly and as programs.
//!
//! Each bond update of the sweep contracts two neighbouring sites into one
//! two-site tensor, applies a two-site gate, splits the result again by an
//! SVD truncated to the bond dimension, and renormalizes: two einsums, a
//! reshape, an SVD, slices, a norm, a diagonal product. The update is one
//! [`Function`]: `lane.call` traces it once into a program (every bond has
//! the same shapes) and runs it as one message per bond; inside
//! [`eagerly`] the same call submits its 15 ops one by one.
//!
//! `cargo run --release -p weft-examples --example sweep`

use std::time::{Duration, Instant};

use weft::ops::{Function, SliceAxis};
use weft::prelude::*;
use weft::program::eagerly;
use weft::OpError;
use weft_examples::{random, BoxError};

/// Sites of the chain.
const SITES: usize = 16;
/// The bond dimension every bond is truncated to.
const BOND: usize = 8;
/// The physical dimension.
const PHYS: usize = 2;
/// Sweeps timed, each way.
const SWEEPS: usize = 20;

fn main() -> Result<(), BoxError> {
    let rt = Runtime::builder().split(1).build()?;
    let lane = rt.lane(0)?;
    println!("{}", rt.topology());

    // A random real MPS (every bond BOND, the ends too) and a gate close
    // to the identity, `exp(-iτh)`-like for a small step.
    let site = |k: usize| {
        Tensor::from_vec(
            random(BOND * PHYS * BOND, 100 + k as u64),
            &[BOND, PHYS, BOND],
        )
    };
    let sites: Vec<Tensor> = (0..SITES).map(site).collect::<Result<_, _>>()?;
    let gate = {
        let noise = random(PHYS.pow(4), 7);
        let n = PHYS * PHYS;
        let values: Vec<f64> = (0..n * n)
            .map(|i| f64::from(u8::from(i / n == i % n)) + 0.05 * noise[i])
            .collect();
        Tensor::from_vec(values, &[PHYS, PHYS, PHYS, PHYS])?
    };
    let g = lane.upload(gate)?;

    let upload_all = || -> Result<Vec<TensorHandle>, BoxError> {
        Ok(sites
            .iter()
            .map(|t| lane.upload(t.clone()))
            .collect::<Result<_, _>>()?)
    };
    // One sweep, whichever way `lane.call` runs the update.
    let sweep = |mps: &mut Vec<TensorHandle>| -> Result<Duration, BoxError> {
        let start = Instant::now();
        for i in 0..SITES - 1 {
            let mut out = lane.call(&BondUpdate, &[&mps[i], &mps[i + 1], &g], &[])?;
            mps[i + 1] = out.pop().expect("two outputs");
            mps[i] = out.pop().expect("two outputs");
        }
        lane.sync(&mps[SITES - 1])?.wait()?;
        Ok(start.elapsed())
    };
    let mut eager_mps = upload_all()?;
    let mut program_mps = upload_all()?;
    let mut times = [Duration::ZERO; 2];
    for round in 0..=SWEEPS {
        let eager = eagerly(|| sweep(&mut eager_mps))?;
        let programs = sweep(&mut program_mps)?;
        // The first sweep traces and compiles the program and warms the
        // pools: not timed.
        if round > 0 {
            times[0] += eager;
            times[1] += programs;
        }
    }
    let steps = Program::record(|p| -> Result<(), OpError> {
        let site = || p.input(DType::F64, &[BOND, PHYS, BOND]);
        let inputs = [site(), site(), p.input(DType::F64, &[PHYS; 4])];
        for out in BondUpdate.call(p, &inputs)? {
            p.output(out)?;
        }
        Ok(())
    })?
    .steps()
    .len();

    // Both ways ran the same kernels in the same order: the same MPS.
    let mut worst = 0.0f64;
    for (e, p) in eager_mps.iter().zip(&program_mps) {
        let (e, p) = (lane.download(e)?.wait()?, lane.download(p)?.wait()?);
        for (x, y) in e.as_slice::<f64>()?.iter().zip(p.as_slice::<f64>()?) {
            worst = worst.max((x - y).abs());
        }
    }
    let per_bond = |t: Duration| t.as_secs_f64() * 1e6 / (SWEEPS * (SITES - 1)) as f64;
    println!(
        "{SWEEPS} sweeps of {} bond updates, {SITES} sites, bond {BOND}, f64:",
        SITES - 1
    );
    println!(
        "  eager ({steps} ops per bond):     {:8.1} µs per bond update",
        per_bond(times[0])
    );
    println!(
        "  programs (one per bond):     {:8.1} µs per bond update   ({:.2}× the eager speed)",
        per_bond(times[1]),
        times[0].as_secs_f64() / times[1].as_secs_f64()
    );
    println!("  largest difference between the two MPS: {worst:.1e}");
    let memory = lane.memory()?.wait()?;
    println!(
        "  program plans: {} cached, {} hits, {} misses; einsum plans: {} hits, {} misses",
        memory.programs.entries,
        memory.programs.hits,
        memory.programs.misses,
        memory.einsums.hits,
        memory.einsums.misses
    );
    if worst != 0.0 {
        return Err(format!("the eager and program sweeps differ by {worst:e}").into());
    }
    rt.shutdown()?;
    Ok(())
}

/// The slice of the first `n` indices of an axis.
fn first(n: usize) -> SliceAxis {
    SliceAxis {
        start: 0,
        stop: n,
        step: 1,
    }
}

/// One bond update: `(a, b, gate) -> (a', b')`, in either mode.
#[derive(Clone, PartialEq, Eq, Hash)]
struct BondUpdate;

impl Function for BondUpdate {
    fn call<O: Ops>(&self, o: &O, inputs: &[O::Tensor]) -> Result<Vec<O::Tensor>, OpError> {
        let [a, b, g] = inputs else {
            unreachable!("three inputs")
        };
        let two = BOND * PHYS;
        let theta = o.einsum("apb,bqc->apqc", &[a, b])?;
        let theta = o.einsum("apqc,pqrs->arsc", &[&theta, g])?;
        let m = o.reshape(&theta, &[two, two])?;
        let (u, s, vh) = o.svd(&m)?;
        let u = o.slice(&u, &[SliceAxis::ALL, first(BOND)])?;
        let s = o.slice(&s, &[first(BOND)])?;
        let vh = o.slice(&vh, &[first(BOND), SliceAxis::ALL])?;
        let s = o.div(&s, &o.norm(&s)?)?;
        let sv = o.matmul(&o.diag_embed(&s)?, &vh)?;
        Ok(vec![
            o.reshape(&u, &[BOND, PHYS, BOND])?,
            o.reshape(&sv, &[BOND, PHYS, BOND])?,
        ])
    }
}
