//! Tensor ops through a lane against the same work done directly, in one
//! process: GEMM against faer, a large add against a plain rayon loop, and
//! the per-op cost of a chain of small ops.
//!
//! `cargo run --release -p weft-examples --example tensor_bench`

use std::time::{Duration, Instant};
use weft::ops::{ElementwiseOps, LinalgOps};

#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use rayon::prelude::*;
use weft::{Runtime, Tensor};
use weft_examples::{faer_gemm, random};

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

fn time(reps: usize, mut f: impl FnMut()) -> Duration {
    f();
    median(
        (0..reps)
            .map(|_| {
                let start = Instant::now();
                f();
                start.elapsed()
            })
            .collect(),
    )
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let rt = Runtime::builder().split(1).build()?;
    let threads = rt.domains()[0].cpus().len();
    println!("{}; {threads} thread(s) per domain\n", rt.topology());
    let lane = rt.lane(0)?;
    let direct_pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()?;
    // `--only gemm|add|chain` runs one part (for profiling).
    let only = std::env::args().skip_while(|a| a != "--only").nth(1);
    let wants = |name: &str| only.as_deref().is_none_or(|o| o == name);

    for n in [512, 1024, 2048].into_iter().filter(|_| wants("gemm")) {
        let a = Tensor::from_vec(random(n * n, 1), &[n, n])?;
        let b = Tensor::from_vec(random(n * n, 2), &[n, n])?;
        let (ha, hb) = (lane.upload(a.clone())?, lane.upload(b.clone())?);
        let reps = if n >= 2048 { 3 } else { 7 };
        let weft = time(reps, || {
            let c = lane.matmul(&ha, &hb).expect("submitted");
            lane.with(&[&c], |_, _| ())
                .expect("submitted")
                .wait()
                .expect("ran");
        });
        let direct = time(reps, || {
            std::hint::black_box(faer_gemm(&direct_pool, &a, &b, threads));
        });
        let gflops = |d: Duration| 2.0 * (n as f64).powi(3) / d.as_secs_f64() / 1e9;
        println!(
            "f64 GEMM n={n:<5} weft {:>8.2} ms ({:>5.1} GFLOP/s)   faer direct {:>8.2} ms ({:>5.1} GFLOP/s)   weft/direct speed {:.3}",
            weft.as_secs_f64() * 1e3,
            gflops(weft),
            direct.as_secs_f64() * 1e3,
            gflops(direct),
            direct.as_secs_f64() / weft.as_secs_f64()
        );
    }

    if wants("add") {
        add(&lane, &direct_pool)?;
        // The same with the buffer pool off: every output is fresh memory.
        // A second runtime on the same CPUs, measured while the first
        // idles: the overlap is on purpose.
        let no_pool = Runtime::builder().split(1).buffer_cap(0).build()?;
        print!("buffer pool off: ");
        add(&no_pool.lane(0)?, &direct_pool)?;
        let memory = lane.memory()?.wait()?;
        println!("buffer pool (on): {:?}", memory.buffers);
    }
    if wants("chain") {
        chain(&lane)?;
    }
    Ok(())
}

fn add(
    lane: &weft::Lane,
    direct_pool: &rayon::ThreadPool,
) -> Result<(), Box<dyn std::error::Error>> {
    let n = 64 * 1024 * 1024 / 8;
    let (x, y) = (random(n, 3), random(n, 4));
    let (hx, hy) = (
        lane.upload(Tensor::from_vec(x.clone(), &[n])?)?,
        lane.upload(Tensor::from_vec(y.clone(), &[n])?)?,
    );
    let weft = time(7, || {
        let c = lane.add(&hx, &hy).expect("submitted");
        lane.with(&[&c], |_, _| ())
            .expect("submitted")
            .wait()
            .expect("ran");
    });
    let direct = time(7, || {
        let c: Vec<f64> =
            direct_pool.install(|| x.par_iter().zip(&y).map(|(a, b)| a + b).collect());
        std::hint::black_box(c);
    });
    println!(
        "c = a + b, 64 MiB f64   weft {:>8.2} ms   rayon loop {:>8.2} ms   weft/direct speed {:.3}",
        weft.as_secs_f64() * 1e3,
        direct.as_secs_f64() * 1e3,
        direct.as_secs_f64() / weft.as_secs_f64()
    );
    Ok(())
}

fn chain(lane: &weft::Lane) -> Result<(), Box<dyn std::error::Error>> {
    let small = lane.upload(Tensor::from_vec(random(64, 5), &[64])?)?;
    let mut submits = Vec::new();
    let chain = time(21, || {
        let start = Instant::now();
        let mut h = small.clone();
        for _ in 0..1000 {
            h = lane.add(&h, &small).expect("submitted");
        }
        submits.push(start.elapsed());
        lane.with(&[&h], |_, _| ())
            .expect("submitted")
            .wait()
            .expect("ran");
    });
    println!(
        "chain of 1000 small ops (64 f64): {:.3} µs per op (submitted, waited once); submitting alone {:.3} µs per op",
        chain.as_secs_f64() * 1e6 / 1000.0,
        median(submits).as_secs_f64() * 1e6 / 1000.0
    );
    Ok(())
}
