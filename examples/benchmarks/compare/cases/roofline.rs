//! Case `roofline`: what weft's CPU kernels achieve against the machine's
//! peak, beside their baselines' figures on the same threads.
//!
//! The peaks, measured first on the domain's threads:
//! - arithmetic: a tight loop of fused multiply-adds on the widest vector
//!   unit the CPU reports (AVX-512, else AVX2 with FMA, else plain
//!   multiply and add), 16 independent accumulators per thread so that the
//!   FMA units never wait on a result, all threads at once; a multiply-add
//!   counts as 2 flops. f64's and f32's peaks are measured apart; complex
//!   products are counted in real flops (8 per complex multiply-add), so
//!   their peak is their real type's.
//! - memory: a copy loop (`memcpy` in chunks on every thread, 64 MiB into
//!   a buffer written before), bytes read plus bytes written: the
//!   `bandwidth` case's own limit.
//!
//! Rows: GEMM of f32, f64 and c64 at n = 64 … 2048 (weft's `lane.matmul`
//! against faer called directly; with the `blas` feature a second weft row
//! on the BLAS provider against OpenBLAS called directly with its own
//! threads), batched small products (an einsum `bij,bjk->bik`), and the
//! `bandwidth` case's add, sum and transpose against the copy peak. numpy's
//! figures for the same GEMMs come from `scripts/compare.sh`.

use std::time::{Duration, Instant};
use weft::ops::LinalgOps;

use rayon::prelude::*;
use weft::{c64, tensor::Field, Lane, Tensor};
use weft_examples::{random, BoxError};

use crate::case::{Case, Domain, Run};
use crate::report::{Row, Side, Unit};
use crate::timing::interleaved;

pub(super) const CASE: Case = Case {
    name: "roofline",
    title: "roofline: achieved against the machine's peak",
    run: Run::InDomain(run),
};

const SIZES: [usize; 6] = [64, 128, 256, 512, 1024, 2048];

fn run(domain: &Domain<'_>, rows: &mut Vec<Row>) -> Result<(), BoxError> {
    let Domain {
        direct_pool,
        threads,
        ..
    } = *domain;
    let peaks = Peaks::measure(direct_pool);
    for (id, what, how, value) in [
        (
            "roofline-peak-f64",
            "peak: f64 multiply-adds",
            peaks.how,
            peaks.f64,
        ),
        (
            "roofline-peak-f32",
            "peak: f32 multiply-adds",
            peaks.how,
            peaks.f32,
        ),
    ] {
        rows.push(Row::new(
            CASE.name,
            id,
            format!("{what}, {threads} threads"),
            Unit::GflopsPerSecond,
            Side::new(how, value),
        ));
    }
    let mut memory = Vec::new();
    super::bandwidth::measure(domain, &mut memory)?;
    // Every memory row's baseline is the copy loop: the memory peak.
    let copy = memory.first().and_then(Row::baseline_value).unwrap_or(0.0);
    rows.push(Row::new(
        CASE.name,
        "roofline-peak-copy",
        format!("peak: memory copy, {threads} threads"),
        Unit::GigabytesPerSecond,
        Side::new("copy loop (read + write)", copy),
    ));
    gemm_rows::<f32>(domain, peaks.f32, rows)?;
    gemm_rows::<f64>(domain, peaks.f64, rows)?;
    gemm_rows::<c64>(domain, peaks.f64, rows)?;
    batched_rows::<f64>(domain, [64, 64], peaks.f64, rows)?;
    batched_rows::<c64>(domain, [256, 16], peaks.f64, rows)?;
    for row in memory {
        rows.push(row.in_case(CASE.name).of_peak(copy));
    }
    Ok(())
}

/// `len` values of type `T` (both parts random for a complex type).
fn values<T: Field>(len: usize, seed: u64) -> Vec<T> {
    random(len, seed)
        .into_iter()
        .zip(random(len, seed + 1000))
        .map(|(re, im)| T::from_parts(re, im))
        .collect()
}

/// Real flops of one multiply-add of `T`.
fn flops_per_multiply_add<T: Field>() -> f64 {
    if T::DTYPE.is_complex() {
        8.0
    } else {
        2.0
    }
}

/// Runs `runs` products on the lane, in order, and waits for the last.
fn products(lane: &Lane, runs: usize, product: impl Fn() -> weft::TensorHandle) {
    let mut last = product();
    for _ in 1..runs {
        last = product();
    }
    lane.sync(&last).expect("submitted").wait().expect("ran");
}

/// Whether `got` is the baseline's `want` to a relative `1e-4` of the
/// whole's norm (f32 products of length 2048 round that far).
fn check<T: Field>(got: &[T], want: &[T], what: &str) -> Result<(), BoxError> {
    super::close(got, want, 1e-4).map_err(|e| {
        format!("roofline {what}: weft's result differs from the baseline's: {e}").into()
    })
}

fn gemm_rows<T: Field>(
    domain: &Domain<'_>,
    peak: f64,
    rows: &mut Vec<Row>,
) -> Result<(), BoxError> {
    let Domain {
        settings,
        lane,
        direct_pool,
        threads,
        ..
    } = *domain;
    let dtype = T::DTYPE;
    for n in SIZES {
        // Small products run many to a timed run, so each run is long
        // enough to time: about 2^27 multiply-adds.
        let runs = ((1usize << 27) / (n * n * n)).clamp(1, 256);
        let (a, b) = (values::<T>(n * n, 1), values::<T>(n * n, 2));
        let (ha, hb) = (
            lane.upload(Tensor::from_vec(a.clone(), &[n, n])?)?,
            lane.upload(Tensor::from_vec(b.clone(), &[n, n])?)?,
        );
        let mut c = vec![T::ZERO; n * n];
        let flops = flops_per_multiply_add::<T>() * (n * n * n * runs) as f64;
        let gflops = |d: Duration| flops / d.as_secs_f64() / 1e9;
        let reps = settings.reps(if n >= 1024 { 3 } else { 7 });
        let matmul = || lane.matmul(&ha, &hb).expect("submitted");
        let [weft, direct] = interleaved(
            reps,
            [&mut || products(lane, runs, matmul), &mut || {
                for _ in 0..runs {
                    faer_direct(direct_pool, &mut c, &a, &b, n, threads);
                }
            }],
        );
        let got = lane.download(&matmul())?.wait()?.into_vec::<T>()?;
        check(&got, &c, &format!("{dtype} gemm n = {n}"))?;
        rows.push(
            Row::new(
                CASE.name,
                format!("roofline-gemm-{dtype}-{n}"),
                format!("{dtype} GEMM n = {n}"),
                Unit::GflopsPerSecond,
                Side::new("lane.matmul (faer)", gflops(weft)),
            )
            .against(Side::new(
                format!("faer direct, {threads} threads"),
                gflops(direct),
            ))
            .of_peak(peak),
        );
        #[cfg(feature = "blas")]
        {
            let [weft, direct] = interleaved(
                reps,
                [
                    &mut || {
                        super::set_provider(lane, weft::engine::CpuProvider::Blas);
                        products(lane, runs, matmul);
                        super::set_provider(lane, weft::engine::CpuProvider::Faer);
                    },
                    &mut || {
                        weft_examples::openblas::with_threads(threads, || {
                            for _ in 0..runs {
                                weft_examples::openblas::gemm(&mut c, &a, &b, n);
                            }
                        });
                    },
                ],
            );
            super::set_provider(lane, weft::engine::CpuProvider::Blas);
            let got = lane.download(&matmul())?.wait()?.into_vec::<T>()?;
            super::set_provider(lane, weft::engine::CpuProvider::Faer);
            check(&got, &c, &format!("{dtype} gemm n = {n}, BLAS"))?;
            rows.push(
                Row::new(
                    CASE.name,
                    format!("roofline-gemm-blas-{dtype}-{n}"),
                    format!("{dtype} GEMM n = {n}, BLAS provider"),
                    Unit::GflopsPerSecond,
                    Side::new("lane.matmul (OpenBLAS in the pool)", gflops(weft)),
                )
                .against(Side::new(
                    format!("OpenBLAS direct, its own {threads} threads"),
                    gflops(direct),
                ))
                .of_peak(peak),
            );
        }
    }
    Ok(())
}

/// `c = a @ b` of `n × n` matrices through faer, called directly in `pool`.
fn faer_direct<T: Field>(
    pool: &rayon::ThreadPool,
    c: &mut [T],
    a: &[T],
    b: &[T],
    n: usize,
    threads: usize,
) {
    pool.install(|| {
        faer::linalg::matmul::matmul(
            faer::MatMut::from_row_major_slice_mut(c, n, n),
            faer::Accum::Replace,
            faer::MatRef::from_row_major_slice(a, n, n),
            faer::MatRef::from_row_major_slice(b, n, n),
            T::ONE,
            faer::Par::rayon(threads),
        );
    });
}

/// `bij,bjk->bik` of `batch` products of `n × n` through `lane.einsum`,
/// against faer per product with rayon over the batch.
fn batched_rows<T: Field>(
    domain: &Domain<'_>,
    [batch, n]: [usize; 2],
    peak: f64,
    rows: &mut Vec<Row>,
) -> Result<(), BoxError> {
    let Domain {
        settings,
        lane,
        direct_pool,
        ..
    } = *domain;
    let dtype = T::DTYPE;
    let m = n * n;
    let (a, b) = (values::<T>(batch * m, 3), values::<T>(batch * m, 4));
    let (ha, hb) = (
        lane.upload(Tensor::from_vec(a.clone(), &[batch, n, n])?)?,
        lane.upload(Tensor::from_vec(b.clone(), &[batch, n, n])?)?,
    );
    let mut c = vec![T::ZERO; batch * m];
    let runs = ((1usize << 27) / (batch * m * n)).clamp(1, 256);
    let flops = flops_per_multiply_add::<T>() * (batch * m * n * runs) as f64;
    let gflops = |d: Duration| flops / d.as_secs_f64() / 1e9;
    let einsum = || lane.einsum("bij,bjk->bik", &[&ha, &hb]).expect("submitted");
    let [weft, direct] = interleaved(
        settings.reps(11),
        [&mut || products(lane, runs, einsum), &mut || {
            for _ in 0..runs {
                direct_pool.install(|| {
                    c.par_chunks_mut(m).enumerate().for_each(|(i, c)| {
                        faer::linalg::matmul::matmul(
                            faer::MatMut::from_row_major_slice_mut(c, n, n),
                            faer::Accum::Replace,
                            faer::MatRef::from_row_major_slice(&a[i * m..(i + 1) * m], n, n),
                            faer::MatRef::from_row_major_slice(&b[i * m..(i + 1) * m], n, n),
                            T::ONE,
                            faer::Par::Seq,
                        );
                    });
                });
            }
        }],
    );
    let got = lane.download(&einsum())?.wait()?.into_vec::<T>()?;
    check(&got, &c, &format!("{dtype} batched {batch}×{n}³"))?;
    rows.push(
        Row::new(
            CASE.name,
            format!("roofline-batched-{dtype}-{batch}x{n}"),
            format!("{dtype} bij,bjk->bik, {batch} × {n}×{n}"),
            Unit::GflopsPerSecond,
            Side::new("lane.einsum", gflops(weft)),
        )
        .against(Side::new(
            "faer per batch, rayon over batches",
            gflops(direct),
        ))
        .of_peak(peak),
    );
    Ok(())
}

/// The machine's arithmetic peaks on the domain's threads, GFLOP/s.
struct Peaks {
    f64: f64,
    f32: f64,
    /// How they were measured.
    how: &'static str,
}

impl Peaks {
    fn measure(pool: &rayon::ThreadPool) -> Peaks {
        // About 0.1 s of multiply-adds per thread at a few GFLOP/s per
        // lane; the best of 5 runs (a peak, not a typical figure).
        const ITERS: u64 = 20_000_000;
        let best = |loop_: fma::Loop| {
            (0..5)
                .map(|_| {
                    let start = Instant::now();
                    let flops: u64 = pool.broadcast(|_| loop_(ITERS)).into_iter().sum();
                    flops as f64 / start.elapsed().as_secs_f64() / 1e9
                })
                .fold(0.0, f64::max)
        };
        let (how, f64_loop, f32_loop) = fma::loops();
        Peaks {
            f64: best(f64_loop),
            f32: best(f32_loop),
            how,
        }
    }
}

/// The multiply-add loops: each does `iters` rounds of 16 independent
/// chains `x = x·a + b` and returns the flops it did.
mod fma {
    pub(super) type Loop = fn(u64) -> u64;

    /// The widest loops this CPU runs, and their name.
    #[cfg(target_arch = "x86_64")]
    pub(super) fn loops() -> (&'static str, Loop, Loop) {
        if is_x86_feature_detected!("avx512f") {
            ("FMA loop, AVX-512, 16 chains", avx512_f64, avx512_f32)
        } else if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
            ("FMA loop, AVX2, 16 chains", avx2_f64, avx2_f32)
        } else {
            ("multiply + add loop, no FMA", plain::<f64>, plain::<f32>)
        }
    }

    #[cfg(not(target_arch = "x86_64"))]
    pub(super) fn loops() -> (&'static str, Loop, Loop) {
        ("multiply + add loop", plain::<f64>, plain::<f32>)
    }

    /// Without vector FMA: plain multiplies and adds (which the compiler
    /// may vectorise to the baseline ISA).
    fn plain<T>(iters: u64) -> u64
    where
        T: Copy + std::ops::Mul<Output = T> + std::ops::Add<Output = T> + From<f32>,
    {
        let (a, b) = (T::from(0.999_999), T::from(1e-7));
        let mut acc = [T::from(1.0); 16];
        for _ in 0..iters {
            for x in &mut acc {
                *x = *x * a + b;
            }
        }
        std::hint::black_box(acc);
        iters * 16 * 2
    }

    /// A vector loop, `lanes` wide, on the `features` it names; `$name`
    /// checks them at run time before it enters.
    macro_rules! vector_loop {
        ($name:ident, $inner:ident, $features:literal, $lanes:expr, $set:ident, $fma:ident) => {
            #[cfg(target_arch = "x86_64")]
            fn $name(iters: u64) -> u64 {
                #[target_feature(enable = $features)]
                fn $inner(iters: u64) -> u64 {
                    use std::arch::x86_64::*;
                    let (a, b) = ($set(0.999_999), $set(1e-7));
                    let mut acc = [$set(1.0); 16];
                    for _ in 0..iters {
                        for x in &mut acc {
                            *x = $fma(*x, a, b);
                        }
                    }
                    std::hint::black_box(acc);
                    iters * 16 * $lanes * 2
                }
                assert!($features.split(',').all(|f| match f {
                    "avx512f" => is_x86_feature_detected!("avx512f"),
                    "avx2" => is_x86_feature_detected!("avx2"),
                    "fma" => is_x86_feature_detected!("fma"),
                    _ => false,
                }));
                // SAFETY: the CPU has every feature `$inner` is compiled
                // for: checked just above.
                unsafe { $inner(iters) }
            }
        };
    }

    vector_loop!(
        avx512_f64,
        fma512d,
        "avx512f",
        8,
        _mm512_set1_pd,
        _mm512_fmadd_pd
    );
    vector_loop!(
        avx512_f32,
        fma512s,
        "avx512f",
        16,
        _mm512_set1_ps,
        _mm512_fmadd_ps
    );
    vector_loop!(
        avx2_f64,
        fma256d,
        "avx2,fma",
        4,
        _mm256_set1_pd,
        _mm256_fmadd_pd
    );
    vector_loop!(
        avx2_f32,
        fma256s,
        "avx2,fma",
        8,
        _mm256_set1_ps,
        _mm256_fmadd_ps
    );
}
