//! A Lanczos iteration over an operator split across MPI ranks, the loop
//! a distributed eigensolver runs: each rank holds a block of rows of a
//! symmetric `H` and the matching slice of the Lanczos vector; every step
//! gathers the vector, multiplies by its rows, and allreduces two dot
//! products (`α = v·Hv` and `|w|²`) into host values. The same loop on raw
//! rsmpi (blocking `all_gather_into` and `all_reduce_into`, plain loops for
//! the arithmetic) runs on the MPI actor's thread beside it; both give the
//! same tridiagonal matrix, and its lowest eigenvalue is printed from each.
//!
//! ```text
//! cargo build --release -p weft-examples --features mpi --example lanczos_mpi
//! mpirun -n 2 target/release/examples/lanczos_mpi     # as root: --allow-run-as-root
//! ```
//!
//! Prints the time per Lanczos step of each (the slowest rank's, median of
//! [`RUNS`]) and their ratio; fails if the two lowest Ritz values differ
//! by more than 1e-9.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use mpi::collective::SystemOperation;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use weft::prelude::*;
use weft::{mpi::Reduction, Runtime, Tensor};
use weft_examples::BoxError;

/// The operator's dimension (every rank count that divides it runs).
const N: usize = 256;
/// Lanczos steps per run.
const STEPS: usize = 40;
/// Timed runs of each loop (the median is printed).
const RUNS: usize = 5;

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("lanczos_mpi: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `H[i, j]`, symmetric, the same on every rank: a chain's hopping plus
/// small random couplings.
fn h(i: usize, j: usize) -> f64 {
    let (a, b) = (i.min(j), i.max(j));
    let x = ((a * 7_919 + b * 104_729) as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let noise = ((x >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 0.01;
    match b - a {
        1 => -1.0 + noise,
        _ => noise,
    }
}

/// This rank's rows of `H`, row-major, `rows × N`.
fn rows(rank: usize, m: usize) -> Vec<f64> {
    (rank * m..(rank + 1) * m)
        .flat_map(|i| (0..N).map(move |j| h(i, j)))
        .collect()
}

/// The start vector's slice: every component 1/√N.
fn start(m: usize) -> Vec<f64> {
    vec![1.0 / (N as f64).sqrt(); m]
}

/// The tridiagonal matrix of a run: its diagonal (α) and off-diagonal (β).
type Tridiagonal = (Vec<f64>, Vec<f64>);

fn run() -> Result<bool, BoxError> {
    let rt = Runtime::builder().split(1).mpi().build()?;
    let (rank, ranks) = (rt.rank(), rt.ranks());
    if !N.is_multiple_of(ranks) {
        if rank == 0 {
            eprintln!("lanczos_mpi: {ranks} ranks do not divide the dimension {N}");
        }
        rt.shutdown()?;
        return Ok(false);
    }
    let m = N / ranks;
    let lane = rt.lane(0)?;
    let hr = lane.upload(Tensor::from_vec(rows(rank, m), &[m, N])?)?;
    let weft_run = || -> Result<(Duration, Tridiagonal), BoxError> {
        rt.barrier()?.wait()?;
        let t = Instant::now();
        let mut v = lane.upload(Tensor::from_vec(start(m), &[m])?)?;
        let mut prev: Option<weft::TensorHandle> = None;
        let (mut alphas, mut betas) = (Vec::new(), Vec::new());
        let mut beta = 0.0;
        for _ in 0..STEPS {
            let full = lane.reshape(&lane.allgather(&v)?, &[N])?;
            let mut w = lane.einsum("ij,j->i", &[&hr, &full])?;
            let local = lane
                .item::<f64>(&lane.einsum("i,i->", &[&v, &w])?)?
                .wait()?;
            let alpha = rt.allreduce_values(&[local], Reduction::Sum)?.wait()?[0];
            w = lane.sub(&w, &lane.scale(&v, alpha)?)?;
            if let Some(p) = &prev {
                w = lane.sub(&w, &lane.scale(p, beta)?)?;
            }
            let local = lane
                .item::<f64>(&lane.einsum("i,i->", &[&w, &w])?)?
                .wait()?;
            beta = rt.allreduce_values(&[local], Reduction::Sum)?.wait()?[0].sqrt();
            alphas.push(alpha);
            betas.push(beta);
            prev = Some(std::mem::replace(&mut v, lane.scale(&w, 1.0 / beta)?));
        }
        Ok((t.elapsed(), (alphas, betas)))
    };
    let mpi = rt.mpi_lane()?;
    let raw_run = || -> Result<(Duration, Tridiagonal), BoxError> {
        let ticket = mpi.run(move |_| {
            let world = SimpleCommunicator::world();
            let hr = rows(world.rank() as usize, m);
            world.barrier();
            let t = Instant::now();
            let mut v = start(m);
            let mut prev = vec![0.0; m];
            let mut full = vec![0.0; N];
            let (mut alphas, mut betas) = (Vec::new(), Vec::new());
            let mut beta = 0.0;
            let mut global = 0.0;
            for _ in 0..STEPS {
                world.all_gather_into(&v[..], &mut full[..]);
                let mut w: Vec<f64> = (0..m)
                    .map(|i| (0..N).map(|j| hr[i * N + j] * full[j]).sum())
                    .collect();
                let local: f64 = v.iter().zip(&w).map(|(a, b)| a * b).sum();
                world.all_reduce_into(&local, &mut global, SystemOperation::sum());
                let alpha = global;
                for i in 0..m {
                    w[i] -= alpha * v[i] + beta * prev[i];
                }
                let local: f64 = w.iter().map(|x| x * x).sum();
                world.all_reduce_into(&local, &mut global, SystemOperation::sum());
                beta = global.sqrt();
                alphas.push(alpha);
                betas.push(beta);
                prev = std::mem::replace(&mut v, w.iter().map(|x| x / beta).collect());
            }
            (t.elapsed(), (alphas, betas))
        })?;
        Ok(ticket.wait()?)
    };
    let (weft_time, weft_t) = median(&rt, weft_run)?;
    let (raw_time, raw_t) = median(&rt, raw_run)?;
    let (weft_low, raw_low) = (lowest(&weft_t), lowest(&raw_t));
    let agree = (weft_low - raw_low).abs() <= 1e-9 * raw_low.abs().max(1.0);
    if rank == 0 {
        let per = |t: Duration| t.as_secs_f64() * 1e6 / STEPS as f64;
        println!(
            "Lanczos, H of {N}x{N} over {ranks} rank(s), {STEPS} steps: \
             weft {:.1} µs per step, raw rsmpi {:.1} µs per step ({:.2}x)",
            per(weft_time),
            per(raw_time),
            weft_time.as_secs_f64() / raw_time.as_secs_f64()
        );
        println!(
            "lowest Ritz value: weft {weft_low:.12}, raw {raw_low:.12} ({})",
            if agree { "agree" } else { "DIFFER" }
        );
    }
    rt.shutdown()?;
    Ok(agree)
}

/// The median of [`RUNS`] runs of `f` (after one warm-up), each the
/// slowest rank's time, with the last run's tridiagonal matrix.
fn median(
    rt: &Runtime,
    mut f: impl FnMut() -> Result<(Duration, Tridiagonal), BoxError>,
) -> Result<(Duration, Tridiagonal), BoxError> {
    f()?;
    let mut times = Vec::with_capacity(RUNS);
    let mut last = None;
    for _ in 0..RUNS {
        let (t, tri) = f()?;
        let slowest = rt
            .allreduce_values(&[t.as_secs_f64()], Reduction::Max)?
            .wait()?[0];
        times.push(Duration::from_secs_f64(slowest));
        last = Some(tri);
    }
    times.sort();
    Ok((times[RUNS / 2], last.expect("RUNS > 0")))
}

/// The lowest eigenvalue of the symmetric tridiagonal matrix (α on the
/// diagonal, β beside it), by bisection on its Sturm sequence.
fn lowest((alphas, betas): &Tridiagonal) -> f64 {
    let n = alphas.len();
    // How many eigenvalues lie below `x`.
    let below = |x: f64| {
        let (mut count, mut d) = (0, 1.0);
        for i in 0..n {
            let b2 = if i == 0 {
                0.0
            } else {
                betas[i - 1] * betas[i - 1]
            };
            d = alphas[i] - x - if d == 0.0 { b2 / 1e-300 } else { b2 / d };
            if d < 0.0 {
                count += 1;
            }
        }
        count
    };
    let bound = (0..n)
        .map(|i| alphas[i].abs() + 2.0 * betas.get(i).map_or(0.0, |b| b.abs()))
        .fold(0.0, f64::max)
        + 1.0;
    let (mut lo, mut hi) = (-bound, bound);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if below(mid) >= 1 {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    0.5 * (lo + hi)
}
