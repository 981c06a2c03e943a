//! A DMRG-style sweep over a matrix-product state, eagerly and as programs.
//!
//! Each bond update of the sweep contracts two neighbouring sites into one
//! two-site tensor, applies a two-site gate, splits the result again by an
//! SVD truncated to the bond dimension, and renormalizes: two einsums, a
//! reshape, an SVD, slices, a norm, a diagonal product. Eagerly that is 15
//! ops submitted one by one per bond; as a program it is one message per
//! bond, compiled once on the actor (every bond has the same shapes) and
//! replayed from the engine's plan cache.
//!
//! `cargo run --release -p weft-examples --example sweep`

use std::time::{Duration, Instant};
use weft::ops::{Apply, ElementwiseOps, LinalgOps, ReduceOps, StructuralOps};
use weft::OpError;

use weft::{
    ops::{SliceAxis, TensorOp, UnaryOp},
    DType, Program, Runtime, Tensor, TensorHandle,
};
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
    let update = bond_update()?;
    println!("{update}\n");

    let upload_all = || -> Result<Vec<TensorHandle>, BoxError> {
        Ok(sites
            .iter()
            .map(|t| lane.upload(t.clone()))
            .collect::<Result<_, _>>()?)
    };
    let mut eager_mps = upload_all()?;
    let mut program_mps = upload_all()?;
    let mut times = [Duration::ZERO; 2];
    for sweep in 0..=SWEEPS {
        let start = Instant::now();
        for i in 0..SITES - 1 {
            let (a, b) = eager_step(&lane, &eager_mps[i], &eager_mps[i + 1], &g)?;
            eager_mps[i] = a;
            eager_mps[i + 1] = b;
        }
        lane.sync(&eager_mps[SITES - 1])?.wait()?;
        let eager = start.elapsed();
        let start = Instant::now();
        for i in 0..SITES - 1 {
            let mut out = lane.run_program(&update, &[&program_mps[i], &program_mps[i + 1], &g])?;
            program_mps[i + 1] = out.pop().expect("two outputs");
            program_mps[i] = out.pop().expect("two outputs");
        }
        lane.sync(&program_mps[SITES - 1])?.wait()?;
        let programs = start.elapsed();
        // The first sweep compiles the plan and warms the pools: not timed.
        if sweep > 0 {
            times[0] += eager;
            times[1] += programs;
        }
    }

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
        "  eager ({} ops per bond):     {:8.1} µs per bond update",
        update.steps().len(),
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

/// One bond update, recorded once: `(a, b, gate) -> (a', b')`.
fn bond_update() -> Result<Program, BoxError> {
    let two = BOND * PHYS;
    Ok(Program::record(|p| -> Result<(), OpError> {
        let a = p.input(DType::F64, &[BOND, PHYS, BOND]);
        let b = p.input(DType::F64, &[BOND, PHYS, BOND]);
        let g = p.input(DType::F64, &[PHYS, PHYS, PHYS, PHYS]);
        let theta = p.einsum("apb,bqc->apqc", &[&a, &b])?;
        let theta = p.einsum("apqc,pqrs->arsc", &[&theta, &g])?;
        let m = p.reshape(&theta, &[two, two])?;
        let usv = p.apply_many(TensorOp::Linalg(weft::ops::Linalg::Svd), &[&m])?;
        let u = p.apply(
            TensorOp::Slice(vec![SliceAxis::ALL, first(BOND)]),
            &[&usv[0]],
        )?;
        let s = p.apply(TensorOp::Slice(vec![first(BOND)]), &[&usv[1]])?;
        let vh = p.apply(
            TensorOp::Slice(vec![first(BOND), SliceAxis::ALL]),
            &[&usv[2]],
        )?;
        let squares = p.mul(&s, &s)?;
        let norm = p.sum(&squares, &[0])?;
        let norm = p.unary(UnaryOp::Sqrt, &norm)?;
        let s = p.binary(weft::ops::BinaryOp::Div, &s, &norm)?;
        let sv = p.apply(TensorOp::DiagEmbed { axes: [0, 1] }, &[&s])?;
        let sv = p.matmul(&sv, &vh)?;
        let a = p.reshape(&u, &[BOND, PHYS, BOND])?;
        let b = p.reshape(&sv, &[BOND, PHYS, BOND])?;
        p.output(a)?;
        Ok(p.output(b)?)
    })?
    .labelled("bond-update"))
}

/// The same bond update, one lane op at a time.
fn eager_step(
    lane: &weft::Lane,
    a: &TensorHandle,
    b: &TensorHandle,
    g: &TensorHandle,
) -> Result<(TensorHandle, TensorHandle), BoxError> {
    let two = BOND * PHYS;
    let theta = lane.einsum("apb,bqc->apqc", &[a, b])?;
    let theta = lane.einsum("apqc,pqrs->arsc", &[&theta, g])?;
    let m = lane.reshape(&theta, &[two, two])?;
    let (u, s, vh) = lane.svd(&m)?;
    let u = lane.slice(&u, &[SliceAxis::ALL, first(BOND)])?;
    let s = lane.slice(&s, &[first(BOND)])?;
    let vh = lane.slice(&vh, &[first(BOND), SliceAxis::ALL])?;
    let norm = lane.unary(UnaryOp::Sqrt, &lane.sum_all(&lane.mul(&s, &s)?)?)?;
    let s = lane.div(&s, &norm)?;
    let sv = lane.matmul(&lane.diag_embed(&s)?, &vh)?;
    Ok((
        lane.reshape(&u, &[BOND, PHYS, BOND])?,
        lane.reshape(&sv, &[BOND, PHYS, BOND])?,
    ))
}
