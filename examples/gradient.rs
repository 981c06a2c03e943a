//! Gradients of tensor-network programs: fitting an MPS to a target state
//! by gradient descent, and the cost of a gradient against its forward.
//!
//! Part 1 records the fidelity loss `1 - ⟨ψ|φ⟩² / (⟨ψ|ψ⟩⟨φ|φ⟩)` of an
//! 8-site MPS ψ of bond 4 against a random target φ of bond 2 as a
//! program, derives its gradient once (`Program::gradient`) and descends
//! with Adam: each step is one message for the loss and all eight
//! gradients, then the moments and the sites updated in their own buffers
//! (`axpby_into`). The fit ends within 1e-6 of the target's fidelity, or
//! the example fails.
//!
//! Part 2 times the norm `⟨ψ|ψ⟩` of a 32-site MPS (bond 4 and 16) as a
//! program and its gradient program (forward replayed, then the backward
//! einsums), both run on one lane, and prints their medians and ratio.
//!
//! `cargo run --release -p weft-examples --example gradient`

use std::time::{Duration, Instant};
use weft::prelude::*;
use weft::{program::Value, OpError};
use weft_examples::{random, BoxError};

/// Physical dimension.
const PHYS: usize = 2;

/// The shapes of an open MPS of `sites` sites and bond `bond`.
fn shapes(sites: usize, bond: usize) -> Vec<Vec<usize>> {
    (0..sites)
        .map(|k| {
            let left = if k == 0 { 1 } else { bond };
            let right = if k + 1 == sites { 1 } else { bond };
            vec![left, PHYS, right]
        })
        .collect()
}

/// `⟨a|b⟩` of two real MPS, as a rank-0 value: the environment swept left
/// to right, one einsum per site.
fn overlap(p: &Recorder, a: &[Value], b: &[Value]) -> Result<Value, OpError> {
    let mut env = p.ones(DType::F64, &[1, 1])?;
    for (&x, &y) in a.iter().zip(b) {
        env = p.einsum("ab,asc,bsd->cd", &[&env, &x, &y])?;
    }
    p.reshape(&env, &[])
}

fn upload_mps(
    lane: &Lane,
    shapes: &[Vec<usize>],
    seed: u64,
) -> Result<Vec<TensorHandle>, BoxError> {
    shapes
        .iter()
        .enumerate()
        .map(|(k, s)| {
            let n = s.iter().product();
            Ok(lane.upload(Tensor::from_vec(random(n, seed + k as u64), s)?)?)
        })
        .collect()
}

fn scalar(lane: &Lane, h: &TensorHandle) -> Result<f64, BoxError> {
    Ok(lane.download(h)?.wait()?.as_slice::<f64>()?[0])
}

fn fit(lane: &Lane) -> Result<(), BoxError> {
    let (sites, bond, target_bond) = (8, 4, 2);
    let ours = shapes(sites, bond);
    let theirs = shapes(sites, target_bond);
    let loss = Program::record(|p| -> Result<(), OpError> {
        let psi: Vec<Value> = ours.iter().map(|s| p.input(DType::F64, s)).collect();
        let phi: Vec<Value> = theirs.iter().map(|s| p.input(DType::F64, s)).collect();
        let o = overlap(p, &psi, &phi)?;
        let nn = overlap(p, &psi, &psi)?;
        let tt = overlap(p, &phi, &phi)?;
        let o2 = p.mul(&o, &o)?;
        let d = p.mul(&nn, &tt)?;
        let f = p.div(&o2, &d)?;
        let l = p.sub(&p.ones(DType::F64, &[])?, &f)?;
        Ok(p.output(l)?)
    })?
    .labelled("fidelity loss");
    let grad = loss.gradient(0, &(0..sites).collect::<Vec<_>>())?;
    println!(
        "fit: {} forward steps, {} in the gradient program",
        loss.steps().len(),
        grad.steps().len()
    );
    let mut psi = upload_mps(lane, &ours, 1)?;
    let phi = upload_mps(lane, &theirs, 100)?;
    // Adam's moments, per site.
    let zeros = |s: &Vec<usize>| lane.zeros(DType::F64, s);
    let mut m: Vec<TensorHandle> = ours.iter().map(zeros).collect::<Result<_, _>>()?;
    let mut v: Vec<TensorHandle> = ours.iter().map(zeros).collect::<Result<_, _>>()?;
    let (rate, b1, b2, eps): (f64, f64, f64, f64) = (0.02, 0.9, 0.999, 1e-12);
    let mut last = f64::NAN;
    for step in 1..=1000 {
        let inputs: Vec<&TensorHandle> = psi.iter().chain(&phi).collect();
        let mut out = lane.run_program(&grad, &inputs)?;
        let grads = out.split_off(1);
        last = scalar(lane, &out[0])?;
        if step % 100 == 1 || last < 1e-6 {
            println!("  step {step:>4}: loss {last:.3e}");
        }
        if last < 1e-6 {
            break;
        }
        let t = step as f64;
        let scaled = rate * (1.0 - b2.powf(t)).sqrt() / (1.0 - b1.powf(t));
        let mut next = (Vec::new(), Vec::new(), Vec::new());
        for (((x, g), mk), vk) in psi.into_iter().zip(&grads).zip(m).zip(v) {
            // m ← b1·m + (1 - b1)·g, v ← b2·v + (1 - b2)·g², in place;
            // ψ ← ψ - scaled·m / (√v + ε), in ψ's buffer.
            let mk = lane.axpby_into(Scalar::Real(1.0 - b1), g, Scalar::Real(b1), mk)?;
            let g2 = lane.mul(g, g)?;
            let vk = lane.axpby_into(Scalar::Real(1.0 - b2), &g2, Scalar::Real(b2), vk)?;
            let root = lane.unary(weft::ops::UnaryOp::Sqrt, &vk)?;
            let root = lane.binary_scalar(weft::ops::BinaryOp::Add, &root, Scalar::Real(eps))?;
            let delta = lane.div(&mk, &root)?;
            next.0
                .push(lane.axpby_into(Scalar::Real(-scaled), &delta, Scalar::Real(1.0), x)?);
            next.1.push(mk);
            next.2.push(vk);
        }
        (psi, m, v) = next;
    }
    if last.is_nan() || last >= 1e-6 {
        return Err(format!("the fit stopped at a loss of {last:e}").into());
    }
    Ok(())
}

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

fn time_norm(lane: &Lane, bond: usize) -> Result<(), BoxError> {
    let sites = 32;
    let ours = shapes(sites, bond);
    let norm = Program::record(|p| -> Result<(), OpError> {
        let psi: Vec<Value> = ours.iter().map(|s| p.input(DType::F64, s)).collect();
        let n = overlap(p, &psi, &psi)?;
        Ok(p.output(n)?)
    })?
    .labelled(format!("norm {bond}"));
    let grad = norm.gradient(0, &(0..sites).collect::<Vec<_>>())?;
    let psi = upload_mps(lane, &ours, 7)?;
    let inputs: Vec<&TensorHandle> = psi.iter().collect();
    let run = |p: &Program| -> Result<Duration, BoxError> {
        let start = Instant::now();
        let out = lane.run_program(p, &inputs)?;
        for h in &out {
            lane.sync(h)?.wait()?;
        }
        Ok(start.elapsed())
    };
    let reps = if bond > 8 { 30 } else { 200 };
    let mut forward = Vec::new();
    let mut backward = Vec::new();
    for _ in 0..3 {
        run(&norm)?;
        run(&grad)?;
    }
    for _ in 0..reps {
        forward.push(run(&norm)?);
        backward.push(run(&grad)?);
    }
    let (f, b) = (median(forward), median(backward));
    println!(
        "32-site MPS norm, bond {bond:>2}: forward {:>8.1} µs ({} steps), gradient {:>8.1} µs ({} steps): ratio {:.2}x",
        f.as_secs_f64() * 1e6,
        norm.steps().len(),
        b.as_secs_f64() * 1e6,
        grad.steps().len(),
        b.as_secs_f64() / f.as_secs_f64()
    );
    Ok(())
}

fn main() -> Result<(), BoxError> {
    let rt = Runtime::builder().split(1).build()?;
    let lane = rt.lane(0)?;
    fit(&lane)?;
    for bond in [4, 16] {
        time_norm(&lane, bond)?;
    }
    Ok(())
}
