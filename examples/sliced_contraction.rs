//! A contraction sliced over MPI ranks, the way cotengra slices a
//! contraction too big for one machine: `C[i, j] = Σ_s Σ_k A[i, k, s] B[k, j, s]`,
//! where every rank contracts its share of the bond index `s` and an
//! `allreduce` sums the partial results. Checked on rank 0 against the
//! whole contraction done by that rank alone.
//!
//! ```text
//! cargo build --release -p weft-examples --features mpi --example sliced_contraction
//! mpirun -n 2 target/release/examples/sliced_contraction
//! ```
//!
//! (As root, `mpirun` wants `--allow-run-as-root`; with more ranks than
//! cores, `--oversubscribe`.) Prints the time of the sliced contraction
//! (its einsum and the `allreduce`; the slowest rank's, median of
//! [`RUNS`]) beside the time of the whole one on one rank. Each rank's
//! runtime takes the machine's own topology: ranks on one machine share its
//! cores, so the speed-up there is bounded by the cores, not the ranks.

use std::process::ExitCode;
use std::time::Instant;
use weft::ops::{CreateOps, LinalgOps};

use weft::{mpi::Reduction, DType, Lane, Runtime, Tensor, TensorHandle};

/// Extents: `i`, `j` and `k`, and the sliced bond `s`.
const N: usize = 192;
const K: usize = 192;
const S: usize = 48;

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("sliced_contraction: {e}");
            ExitCode::FAILURE
        }
    }
}

/// A value of `A` or `B`, the same on every rank (no data is sent).
fn value(which: u64, a: usize, b: usize, s: usize) -> f64 {
    let x =
        (which * 7_919 + (a * 131 + b * 31 + s * 17) as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (x >> 11) as f64 / (1u64 << 53) as f64 - 0.5
}

/// `A[:, :, slices]` (or `B`'s) as a tensor, the bond axis last.
fn operand(which: u64, slices: &[usize]) -> Result<Tensor, weft::error::TensorError> {
    let (rows, cols) = if which == 0 { (N, K) } else { (K, N) };
    let mut v = Vec::with_capacity(rows * cols * slices.len());
    for a in 0..rows {
        for b in 0..cols {
            v.extend(slices.iter().map(|&s| value(which, a, b, s)));
        }
    }
    Tensor::from_vec(v, &[rows, cols, slices.len()])
}

/// `A` and `B` over `slices`, resident on `lane`.
fn operands(
    lane: &Lane,
    slices: &[usize],
) -> Result<[TensorHandle; 2], Box<dyn std::error::Error>> {
    Ok([
        lane.upload(operand(0, slices)?)?,
        lane.upload(operand(1, slices)?)?,
    ])
}

/// How often each contraction is timed (the median is printed).
const RUNS: usize = 5;

/// The median of `RUNS` runs of `f`, in seconds, and its last result.
fn timed<T>(
    mut f: impl FnMut() -> Result<T, Box<dyn std::error::Error>>,
) -> Result<(f64, T), Box<dyn std::error::Error>> {
    let mut times = Vec::with_capacity(RUNS);
    let mut last = None;
    for _ in 0..RUNS {
        let start = Instant::now();
        last = Some(f()?);
        times.push(start.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    Ok((times[RUNS / 2], last.expect("RUNS > 0")))
}

fn run() -> Result<bool, Box<dyn std::error::Error>> {
    let rt = Runtime::builder().mpi().build()?;
    let (rank, ranks) = (rt.rank(), rt.ranks());
    let lane = rt.lane(0)?;
    // The bond slices of this rank: every `ranks`-th one.
    let mine: Vec<usize> = (rank..S).step_by(ranks).collect();

    let [a, b] = operands(&lane, &mine)?;
    rt.barrier()?.wait()?;
    // Each run: this rank's slices contracted, then summed over the ranks.
    let (elapsed, sliced) = timed(|| {
        let partial = if mine.is_empty() {
            lane.zeros(DType::F64, &[N, N])?
        } else {
            lane.einsum("iks,kjs->ij", &[&a, &b])?
        };
        let total = lane.allreduce(&partial, Reduction::Sum)?;
        Ok(lane.download(&total)?.wait()?)
    })?;
    // The slowest rank's time is the job's.
    let times = lane.upload(Tensor::from_vec(vec![elapsed], &[1])?)?;
    let slowest = lane
        .download(&lane.allreduce(&times, Reduction::Max)?)?
        .wait()?;
    let slowest = slowest.as_slice::<f64>()?[0];

    let mut ok = true;
    if rank == 0 {
        let all: Vec<usize> = (0..S).collect();
        let [a, b] = operands(&lane, &all)?;
        let (alone, whole) = timed(|| {
            Ok(lane
                .download(&lane.einsum("iks,kjs->ij", &[&a, &b])?)?
                .wait()?)
        })?;
        let err = sliced
            .as_slice::<f64>()?
            .iter()
            .zip(whole.as_slice::<f64>()?)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0, f64::max);
        ok = err < 1e-9;
        println!(
            "C[i,j] = Σ_s Σ_k A[i,k,s] B[k,j,s], i,j,k = {N}, s = {S} sliced over {ranks} rank(s)"
        );
        println!(
            "sliced: {:.2} ms (slowest rank, median of {RUNS})   whole, one rank: {:.2} ms   \
             speed-up {:.2}x",
            slowest * 1e3,
            alone * 1e3,
            alone / slowest
        );
        println!(
            "largest difference from the whole contraction: {err:.2e} ({})",
            if ok { "ok" } else { "WRONG" }
        );
    }
    rt.shutdown()?;
    Ok(ok)
}
