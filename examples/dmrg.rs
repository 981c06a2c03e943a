//! Two-site DMRG for the spin-½ Heisenberg chain, `H = Σ Sᵢ·Sᵢ₊₁` with
//! open ends: the ground-state energy, sweep by sweep.
//!
//! `cargo run --release -p weft-examples --example dmrg -- [L] [χ] [sweeps] [--eager]`
//!
//! The algorithm as a tensor-network author writes it: an MPO of bond 5,
//! environments grown site by site, Lanczos on the two-site tensor (as
//! TeNPy runs it: no reorthogonalization, stopped when the energy settles)
//! and a truncated SVD to split it. Each piece that runs on the domain is
//! a [`Function`], so `lane.call` traces it once per shape into a program
//! and runs it as one message; `--eager` runs the same code op by op.
//! At L = 16 the energy is checked against exact diagonalization.

use std::time::Instant;

use weft::ops::{Function, Truncation};
use weft::prelude::*;
use weft::program::eagerly;
use weft::OpError;
use weft_examples::BoxError;

/// The ground-state energy of the 16-site chain, by exact diagonalization.
const EXACT_16: f64 = -6.911_737_145_574_63;
/// Lanczos: at most this many Krylov vectors per two-site update …
const KRYLOV: usize = 20;
/// … and stop once an iteration moves the energy by less than this.
const SETTLED: f64 = 1e-13;

/// The two-site effective Hamiltonian applied to `θ[a, s, t, c]`:
/// `L[a, m, a'] W[m, n, s, s'] W[n, k, t, t'] R[c, k, c'] θ[a', s', t', c']`.
fn apply_h<O: Ops>(
    o: &O,
    [l, w, r]: [&O::Tensor; 3],
    theta: &O::Tensor,
) -> Result<O::Tensor, OpError> {
    let x = o.einsum("amy,ytuz->amtuz", &[l, theta])?;
    let x = o.einsum("amtuz,mnst->asnuz", &[&x, w])?;
    let x = o.einsum("asnuz,nkru->asrkz", &[&x, w])?;
    o.einsum("asrkz,ckz->asrc", &[&x, r])
}

/// One Lanczos step: from `v` (and `v_prev`, `β`) to the next Krylov vector,
/// with `α = ⟨v|H|v⟩` and `β' = ‖w‖` as rank-0 outputs.
#[derive(Clone, PartialEq, Eq, Hash)]
struct Lanczos;

impl Function for Lanczos {
    fn call<O: Ops>(&self, o: &O, inputs: &[O::Tensor]) -> Result<Vec<O::Tensor>, OpError> {
        let [l, w, r, v, v_prev, beta] = inputs else {
            unreachable!()
        };
        let hv = apply_h(o, [l, w, r], v)?;
        let alpha = o.sum_all(&o.mul(v, &hv)?)?;
        let rest = o.sub(&o.sub(&hv, &o.mul(&alpha, v)?)?, &o.mul(beta, v_prev)?)?;
        let beta = o.norm(&rest)?;
        Ok(vec![o.div(&rest, &beta)?, alpha, beta])
    }
}

/// `Σⱼ cⱼ vⱼ`: the Krylov vectors, then their coefficients as scalars.
#[derive(Clone, PartialEq, Eq, Hash)]
struct Combine;

impl Function for Combine {
    fn call<O: Ops>(&self, o: &O, inputs: &[O::Tensor]) -> Result<Vec<O::Tensor>, OpError> {
        let (vs, cs) = inputs.split_at(inputs.len() / 2);
        let mut sum = o.mul(&cs[0], &vs[0])?;
        for (v, c) in vs.iter().zip(cs).skip(1) {
            sum = o.add(&sum, &o.mul(c, v)?)?;
        }
        Ok(vec![o.div(&sum, &o.norm(&sum)?)?])
    }
}

/// The two-site tensor of neighbours `a`, `b`, normalized.
#[derive(Clone, PartialEq, Eq, Hash)]
struct Theta;

impl Function for Theta {
    fn call<O: Ops>(&self, o: &O, inputs: &[O::Tensor]) -> Result<Vec<O::Tensor>, OpError> {
        let theta = o.einsum("asb,btc->astc", &[&inputs[0], &inputs[1]])?;
        Ok(vec![o.div(&theta, &o.norm(&theta)?)?])
    }
}

/// After the SVD `θ ≈ U S Vᴴ`: the two new sites (the centre moved right,
/// or left) and the environment grown over the site left behind.
#[derive(Clone, PartialEq, Eq, Hash)]
struct Split {
    rightwards: bool,
}

impl Function for Split {
    fn call<O: Ops>(&self, o: &O, inputs: &[O::Tensor]) -> Result<Vec<O::Tensor>, OpError> {
        let [u, s, vh, env, w] = inputs else {
            unreachable!()
        };
        let (m, k, n) = (o.shape(u)?[0], o.shape(s)?[0], o.shape(vh)?[1]);
        let s = o.div(s, &o.norm(s)?)?;
        let (a, b) = if self.rightwards {
            let svh = o.mul(&o.reshape(&s, &[k, 1])?, vh)?;
            (
                o.reshape(u, &[m / 2, 2, k])?,
                o.reshape(&svh, &[k, 2, n / 2])?,
            )
        } else {
            let us = o.mul(u, &s)?;
            (
                o.reshape(&us, &[m / 2, 2, k])?,
                o.reshape(vh, &[k, 2, n / 2])?,
            )
        };
        let env = if self.rightwards {
            grow_left(o, env, &a, w)?
        } else {
            grow_right(o, env, &b, w)?
        };
        Ok(vec![a, b, env])
    }
}

/// The left environment one site on: `L'[b, n, b'] = L[a, m, a'] A[a, s, b] W[m, n, s, t] A[a', t, b']`.
fn grow_left<O: Ops>(
    o: &O,
    l: &O::Tensor,
    a: &O::Tensor,
    w: &O::Tensor,
) -> Result<O::Tensor, OpError> {
    let x = o.einsum("xmy,xsb->bmsy", &[l, a])?;
    let x = o.einsum("bmsy,mnst->bnty", &[&x, w])?;
    o.einsum("bnty,ytc->bnc", &[&x, a])
}

/// The right environment one site on: `R'[a, m, a'] = B[a, s, b] W[m, n, s, t] B[a', t, b'] R[b, n, b']`.
fn grow_right<O: Ops>(
    o: &O,
    r: &O::Tensor,
    b: &O::Tensor,
    w: &O::Tensor,
) -> Result<O::Tensor, OpError> {
    let x = o.einsum("asb,bny->asny", &[b, r])?;
    let x = o.einsum("asny,mnst->amty", &[&x, w])?;
    o.einsum("amty,cty->amc", &[&x, b])
}

/// The environment of one side grown over one site, as one message.
#[derive(Clone, PartialEq, Eq, Hash)]
struct Grow {
    rightwards: bool,
}

impl Function for Grow {
    fn call<O: Ops>(&self, o: &O, inputs: &[O::Tensor]) -> Result<Vec<O::Tensor>, OpError> {
        let [env, site, w] = inputs else {
            unreachable!()
        };
        Ok(vec![if self.rightwards {
            grow_left(o, env, site, w)?
        } else {
            grow_right(o, env, site, w)?
        }])
    }
}

/// The Heisenberg MPO `W[m, n, s, t]`: `I, S⁺, S⁻, Sᶻ` down the first column,
/// `½S⁻, ½S⁺, Sᶻ, I` along the last row.
fn heisenberg_mpo() -> Result<Tensor, BoxError> {
    let (id, sp, sm, sz) = (
        [1.0, 0.0, 0.0, 1.0],
        [0.0, 1.0, 0.0, 0.0],
        [0.0, 0.0, 1.0, 0.0],
        [0.5, 0.0, 0.0, -0.5],
    );
    let half = |op: [f64; 4]| op.map(|x| 0.5 * x);
    let entries = [
        ((0, 0), id),
        ((1, 0), sp),
        ((2, 0), sm),
        ((3, 0), sz),
        ((4, 1), half(sm)),
        ((4, 2), half(sp)),
        ((4, 3), sz),
        ((4, 4), id),
    ];
    let mut w = vec![0.0; 5 * 5 * 4];
    for ((m, n), op) in entries {
        w[(m * 5 + n) * 4..][..4].copy_from_slice(&op);
    }
    Ok(Tensor::from_vec(w, &[5, 5, 2, 2])?)
}

/// The lowest eigenpair of the Lanczos tridiagonal matrix.
fn lowest(alphas: &[f64], betas: &[f64]) -> (f64, Vec<f64>) {
    let n = alphas.len();
    let t = faer::Mat::from_fn(n, n, |i, j| match i.abs_diff(j) {
        0 => alphas[i],
        1 => betas[i.min(j)],
        _ => 0.0,
    });
    let eig = t
        .self_adjoint_eigen(faer::Side::Lower)
        .expect("a small symmetric matrix");
    (
        eig.S().column_vector()[0],
        eig.U().col(0).iter().copied().collect(),
    )
}

/// The lowest eigenvector of the effective Hamiltonian from `θ`, and its energy.
fn ground_state(
    lane: &Lane,
    env: [&TensorHandle; 3],
    theta: &TensorHandle,
) -> Result<(TensorHandle, f64, usize), BoxError> {
    let [l, w, r] = env;
    let (mut vs, mut alphas, mut betas) = (vec![theta.clone()], Vec::new(), Vec::new());
    let mut energy = f64::INFINITY;
    loop {
        let j = vs.len() - 1;
        let (v_prev, beta) = if j == 0 {
            (&vs[0], 0.0)
        } else {
            (&vs[j - 1], betas[j - 1])
        };
        let mut out = lane.call(&Lanczos, &[l, w, r, &vs[j], v_prev], &[Scalar::Real(beta)])?;
        let [alpha, beta] = lane.items::<f64>(&[&out[1], &out[2]])?.wait()?[..] else {
            unreachable!()
        };
        alphas.push(alpha);
        let (e, coefficients) = lowest(&alphas, &betas);
        let settled = (energy - e).abs() < SETTLED || beta < 1e-12 || vs.len() == KRYLOV;
        energy = e;
        if settled {
            let mut inputs: Vec<&TensorHandle> = vs.iter().collect();
            inputs.truncate(coefficients.len());
            let cs: Vec<Scalar> = coefficients.iter().map(|&c| Scalar::Real(c)).collect();
            return Ok((
                lane.call(&Combine, &inputs, &cs)?.remove(0),
                energy,
                alphas.len(),
            ));
        }
        betas.push(beta);
        vs.push(out.swap_remove(0));
    }
}

fn main() -> Result<(), BoxError> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let eager = args.iter().any(|a| a == "--eager");
    let numbers: Vec<usize> = args.iter().filter_map(|a| a.parse().ok()).collect();
    let (sites, chi, sweeps) = (
        numbers.first().copied().unwrap_or(16),
        numbers.get(1).copied().unwrap_or(64),
        numbers.get(2).copied().unwrap_or(6),
    );
    if sites < 2 || chi == 0 || sweeps == 0 {
        return Err(format!("a chain of at least 2 sites, a bond of at least 1 and at least one sweep, not {sites} {chi} {sweeps}").into());
    }
    let rt = Runtime::builder().split(1).threads_per_domain(1).build()?; // one thread, as the peers
    let lane = rt.lane(0)?;
    println!(
        "{}",
        if eager {
            "eager: every op its own message"
        } else {
            "compiled: each function traced once per shape, one message per call"
        }
    );
    let run = || dmrg(&lane, sites, chi, sweeps);
    let energy = if eager { eagerly(run)? } else { run()? };
    if sites == 16 {
        let error = (energy - EXACT_16).abs();
        println!("exact diagonalization: {EXACT_16:.12}, |ΔE| = {error:.1e}");
        if chi >= 64 && sweeps >= 4 && error > 1e-8 {
            return Err(format!("the energy is {error:e} from the exact one").into());
        }
    }
    rt.shutdown()?;
    Ok(())
}

/// Sweeps of two-site DMRG from the Néel state; returns the last energy.
fn dmrg(lane: &Lane, sites: usize, chi: usize, sweeps: usize) -> Result<f64, BoxError> {
    let w = lane.upload(heisenberg_mpo()?)?;
    let boundary = |m: usize| -> Result<TensorHandle, BoxError> {
        let mut e = vec![0.0; 5];
        e[m] = 1.0;
        Ok(lane.upload(Tensor::from_vec(e, &[1, 5, 1])?)?)
    };
    let mut mps = (0..sites)
        .map(|i| {
            lane.upload(Tensor::from_vec(
                if i % 2 == 0 {
                    vec![1.0, 0.0]
                } else {
                    vec![0.0, 1.0]
                },
                &[1, 2, 1],
            )?)
        })
        .collect::<Result<Vec<_>, _>>()?;
    // Environments: left of site i in `left[i]`, right of site i in `right[i]`.
    let mut left = vec![boundary(4)?; sites];
    let mut right = vec![boundary(0)?; sites];
    for i in (1..sites).rev() {
        right[i - 1] = lane
            .call(&Grow { rightwards: false }, &[&right[i], &mps[i], &w], &[])?
            .remove(0);
    }
    let truncation = Truncation {
        max_rank: chi,
        cutoff: 1e-14,
    };
    let (mut energy, mut times) = (0.0, Vec::new());
    println!("two-site DMRG, Heisenberg chain of {sites} sites, χ ≤ {chi}");
    for sweep in 1..=sweeps {
        let start = Instant::now();
        let bonds: Vec<(usize, bool)> = (0..sites - 1)
            .map(|i| (i, true))
            .chain((0..sites - 1).rev().map(|i| (i, false)))
            .collect();
        let (mut discarded, mut krylov) = (0.0f64, 0);
        for (i, rightwards) in bonds {
            let theta = lane.call(&Theta, &[&mps[i], &mps[i + 1]], &[])?.remove(0);
            let (ground, e, steps) = ground_state(lane, [&left[i], &w, &right[i + 1]], &theta)?;
            energy = e;
            krylov += steps;
            let shape = ground.shape().to_vec();
            let m = lane.reshape(&ground, &[shape[0] * 2, 2 * shape[3]])?;
            let svd = lane.svd_truncated(&m, truncation)?;
            discarded = discarded.max(svd.discarded);
            let env = if rightwards { &left[i] } else { &right[i + 1] };
            let mut out = lane.call(
                &Split { rightwards },
                &[&svd.u, &svd.s, &svd.vh, env, &w],
                &[],
            )?;
            let grown = out.pop().expect("three outputs");
            mps[i + 1] = out.pop().expect("three outputs");
            mps[i] = out.pop().expect("three outputs");
            if rightwards {
                left[i + 1] = grown
            } else {
                right[i] = grown
            }
        }
        let bond = mps.iter().map(|a| a.shape()[2]).max().unwrap_or(1);
        let ms = start.elapsed().as_secs_f64() * 1e3;
        times.push(ms);
        println!("sweep {sweep}: E = {energy:.12}  bond {bond}, discarded ≤ {discarded:.1e}, {krylov} Lanczos steps, {ms:.1} ms");
    }
    // The first sweeps grow the bonds (and trace): the median of the last half.
    let mut steady = times[times.len() / 2..].to_vec();
    steady.sort_by(f64::total_cmp);
    println!(
        "weft: {:.1} ms per sweep (median of the last half)",
        steady[steady.len() / 2]
    );
    let memory = lane.memory()?.wait()?;
    println!(
        "traced functions: {} kept, {} traces, {} calls from the cache",
        memory.functions.entries, memory.functions.misses, memory.functions.hits
    );
    Ok(energy)
}
