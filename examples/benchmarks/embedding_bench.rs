//! Two libraries in one process, each running the same tensor work at the
//! same time: sharing one runtime (`Runtime::global`, a lane each) against
//! each building its own over the same CPUs (`Overlap::Allow`, the
//! default: two full sets of pinned threads on the same cores, which the
//! ledger reports). Then one library on the application's rayon pool
//! (`Builder::host_pool`) against weft's own threads.
//!
//! `cargo run --release -p weft-examples --example embedding_bench`

use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};
use weft::ops::LinalgOps;

use weft::{Runtime, Tensor, TensorHandle};
use weft_examples::{print_row, random, BoxError};

const ROUNDS: usize = 7;
/// Small products in a chain (dispatch-bound, as in MPS sweeps).
const CHAIN: usize = 400;
const SMALL: usize = 48;
/// Larger products (compute-bound, every pool thread busy).
const LARGE_PRODUCTS: usize = 16;
const LARGE: usize = 256;

fn main() -> Result<(), BoxError> {
    let probe = Runtime::builder().split(1).build()?;
    println!(
        "{}; each library: a chain of {CHAIN} {SMALL}×{SMALL} products, then \
         {LARGE_PRODUCTS} {LARGE}×{LARGE} products\n",
        probe.topology()
    );
    let threads = probe.topology().allowed().len();
    drop(probe);

    let alone = median(|| library(&Runtime::global()?, 1))?;
    let shared = median(|| {
        let rt = Runtime::global()?;
        side_by_side(&rt, &rt)
    })?;
    Runtime::shutdown_global()?;
    let overlapped = median(|| {
        let first = Runtime::builder().split(1).build()?;
        let second = Runtime::builder().split(1).build()?;
        side_by_side(&first, &second)
    })?;
    println!("one library alone: {:.1} ms", ms(alone));
    print_row(
        "two libraries, one runtime each",
        overlapped,
        shared,
        "sharing Runtime::global",
    );

    // One library on the application's pool, against weft's own threads.
    let pool = Arc::new(
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()?,
    );
    let hosted = median(|| {
        let rt = Runtime::builder()
            .split(1)
            .host_pool(pool.clone())
            .build()?;
        library(&rt, 1)
    })?;
    let own = median(|| library(&Runtime::builder().split(1).build()?, 1))?;
    print_row(
        "one library on the app's rayon pool",
        hosted,
        own,
        "on weft's own threads",
    );
    Ok(())
}

/// The median over [`ROUNDS`] of `round`'s time, after one warm-up.
fn median(mut round: impl FnMut() -> Result<Duration, BoxError>) -> Result<Duration, BoxError> {
    round()?;
    let mut times = (0..ROUNDS)
        .map(|_| round())
        .collect::<Result<Vec<_>, _>>()?;
    times.sort();
    Ok(times[ROUNDS / 2])
}

/// Two libraries at once, on `a` and `b`: the time until both are done.
fn side_by_side(a: &Runtime, b: &Runtime) -> Result<Duration, BoxError> {
    let start = Barrier::new(3);
    thread::scope(|s| {
        let runs = [(a, 1), (b, 2)].map(|(rt, seed)| {
            let start = &start;
            s.spawn(move || {
                start.wait();
                library(rt, seed).map_err(|e| e.to_string())
            })
        });
        start.wait();
        let began = Instant::now();
        for run in runs {
            run.join().expect("a library's thread")?;
        }
        Ok(began.elapsed())
    })
}

/// One library's work on its own lane into `rt`'s first domain.
fn library(rt: &Runtime, seed: u64) -> Result<Duration, BoxError> {
    let lane = rt.lane(0)?;
    let upload = |n: usize, scale: f64, seed: u64| -> Result<TensorHandle, BoxError> {
        let values = random(n * n, seed).into_iter().map(|v| v * scale).collect();
        Ok(lane.upload(Tensor::from_vec(values, &[n, n])?)?)
    };
    // Scaled so that the chain neither grows nor shrinks much.
    let step = upload(SMALL, 3.4 / (SMALL as f64).sqrt(), seed)?;
    let mut state = upload(SMALL, 1.0, seed + 10)?;
    let big = upload(LARGE, 1.0, seed + 20)?;
    lane.sync(&big)?.wait()?;
    let began = Instant::now();
    for _ in 0..CHAIN {
        state = lane.matmul(&state, &step)?;
    }
    let products = (0..LARGE_PRODUCTS)
        .map(|_| lane.matmul(&big, &big))
        .collect::<Result<Vec<_>, _>>()?;
    lane.sync(&state)?.wait()?;
    for product in &products {
        lane.sync(product)?.wait()?;
    }
    Ok(began.elapsed())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
