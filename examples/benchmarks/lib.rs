//! Helpers shared by the benchmarks (`benchmarks/`): timing, printing of
//! rows, inputs, and the direct baselines more than one of them runs.

use std::time::{Duration, Instant};

/// The error type of the benchmarks' `main`s and cases.
pub type BoxError = Box<dyn std::error::Error>;

/// Runs `round` `rounds` times (after one warm-up) and returns the median
/// time per item, where one round handles `items` items.
pub fn median_per_item(rounds: usize, items: u64, mut round: impl FnMut()) -> Duration {
    round();
    let mut times: Vec<Duration> = (0..rounds)
        .map(|_| {
            let start = Instant::now();
            round();
            start.elapsed() / u32::try_from(items).expect("items per round fit in u32")
        })
        .collect();
    times.sort();
    times[times.len() / 2]
}

/// Prints one comparison row: weft's figure, the baseline's, and the ratio.
pub fn print_row(name: &str, weft: Duration, baseline: Duration, baseline_name: &str) {
    println!(
        "{name:<34} weft {:>9.3} µs   {baseline_name:<28} {:>9.3} µs   ratio {:>5.2}x",
        weft.as_secs_f64() * 1e6,
        baseline.as_secs_f64() * 1e6,
        weft.as_secs_f64() / baseline.as_secs_f64()
    );
}

/// Operations per second for a per-item time.
pub fn per_second(per_item: Duration) -> f64 {
    1.0 / per_item.as_secs_f64()
}

/// `n` pseudo-random values in `[-0.5, 0.5)` (xorshift), the same for the
/// same `seed`: benchmark inputs without a dependency.
pub fn random(n: usize, seed: u64) -> Vec<f64> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 11) as f64 / (1u64 << 53) as f64 - 0.5
        })
        .collect()
}

/// `n` zeros, written, in huge pages where the kernel grants them: the
/// destination of a copy-loop baseline, as fast a buffer as the engine's
/// own large outputs (which ask for huge pages too).
pub fn written_buffer(n: usize) -> Vec<f64> {
    let mut buffer = Vec::with_capacity(n);
    weft::topology::advise_huge_pages(buffer.spare_capacity_mut());
    buffer.resize(n, 0.0);
    buffer
}

/// Elements one thread copies at a time in [`copy_loop`].
const COPY_CHUNK: usize = 1 << 15;

/// Copies `src` into `dst` (of the same length) in chunks spread over
/// `pool`'s threads: the copy loop the memory-bound cases measure weft
/// against, the same bytes on the same threads.
pub fn copy_loop<T: Copy + Send + Sync>(pool: &rayon::ThreadPool, dst: &mut [T], src: &[T]) {
    use rayon::prelude::*;
    pool.install(|| {
        dst.par_chunks_mut(COPY_CHUNK)
            .zip(src.par_chunks(COPY_CHUNK))
            .for_each(|(dst, src)| dst.copy_from_slice(src));
    });
    std::hint::black_box(dst);
}

/// Spins on `try_recv` for up to `spin`, then blocks, as weft's waits do:
/// the raw-channel baselines wait the same way weft's tickets do.
pub fn recv_spin<T>(rx: &crossbeam_channel::Receiver<T>, spin: Duration) -> Option<T> {
    let start = Instant::now();
    let mut spins = 0u32;
    loop {
        match rx.try_recv() {
            Ok(v) => return Some(v),
            Err(crossbeam_channel::TryRecvError::Disconnected) => return None,
            Err(crossbeam_channel::TryRecvError::Empty) => {}
        }
        std::hint::spin_loop();
        spins += 1;
        if spins.is_multiple_of(64) && start.elapsed() > spin {
            return rx.recv().ok();
        }
    }
}

/// `a @ b` of two `n × n` f64 matrices through faer, called directly in
/// `pool` with `threads` threads: the GEMM baseline.
pub fn faer_gemm(
    pool: &rayon::ThreadPool,
    a: &weft::Tensor,
    b: &weft::Tensor,
    threads: usize,
) -> Vec<f64> {
    let n = a.shape()[0];
    let mut c = vec![0.0; n * n];
    pool.install(|| {
        faer::linalg::matmul::matmul(
            faer::MatMut::from_row_major_slice_mut(&mut c, n, n),
            faer::Accum::Replace,
            a.as_mat::<f64>().expect("2-D"),
            b.as_mat::<f64>().expect("2-D"),
            1.0,
            faer::Par::rayon(threads),
        )
    });
    c
}

/// OpenBLAS called directly, on its own threads: the baseline the BLAS
/// provider is measured against (feature `blas`; weft's provider runs
/// OpenBLAS single-threaded inside the domain's pool instead).
#[cfg(feature = "blas")]
pub mod openblas {
    use weft::tensor::Field;
    use weft_cpu::blas;

    /// Runs `f` with OpenBLAS on `threads` threads of its own, then sets it
    /// back to the one thread weft's provider runs it on.
    pub fn with_threads<R>(threads: usize, f: impl FnOnce() -> R) -> R {
        blas::set_threads(threads);
        let out = f();
        blas::set_threads(1);
        out
    }

    /// `c = a @ b` of row-major `n × n` matrices, one CBLAS call.
    pub fn gemm<T: Field>(c: &mut [T], a: &[T], b: &[T], n: usize) {
        blas::gemm(
            faer::MatMut::from_row_major_slice_mut(c, n, n),
            faer::MatRef::from_row_major_slice(a, n, n),
            faer::MatRef::from_row_major_slice(b, n, n),
        );
    }
}

/// A tensor as JSON for the cross-check scripts: its type, shape and
/// values as text (`{:?}`: every digit, `NaN`/`inf` where they arise;
/// complexes as `re+imj`), so that Python reads back exactly what weft holds.
pub fn encode(t: &weft::Tensor) -> serde_json::Value {
    let data: Vec<String> = match t.dtype() {
        weft::DType::F32 => t
            .as_slice::<f32>()
            .unwrap()
            .iter()
            .map(|x| format!("{x:?}"))
            .collect(),
        weft::DType::F64 => t
            .as_slice::<f64>()
            .unwrap()
            .iter()
            .map(|x| format!("{x:?}"))
            .collect(),
        weft::DType::I32 => t
            .as_slice::<i32>()
            .unwrap()
            .iter()
            .map(|x| x.to_string())
            .collect(),
        weft::DType::I64 => t
            .as_slice::<i64>()
            .unwrap()
            .iter()
            .map(|x| x.to_string())
            .collect(),
        weft::DType::Bool => t
            .as_slice::<bool>()
            .unwrap()
            .iter()
            .map(|x| x.to_string())
            .collect(),
        weft::DType::C32 => t
            .as_slice::<weft::c32>()
            .unwrap()
            .iter()
            .map(|z| format!("{:?}{:+?}j", z.re, z.im))
            .collect(),
        weft::DType::C64 => t
            .as_slice::<weft::c64>()
            .unwrap()
            .iter()
            .map(|z| format!("{:?}{:+?}j", z.re, z.im))
            .collect(),
    };
    serde_json::json!({ "dtype": t.dtype().to_string(), "shape": t.shape(), "data": data })
}
