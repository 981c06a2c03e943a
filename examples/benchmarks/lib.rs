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
    use std::any::TypeId;
    use std::ffi::{c_int, c_void};

    use weft::{c64, Element};

    const ROW_MAJOR: c_int = 101;
    const NO_TRANS: c_int = 111;

    extern "C" {
        fn cblas_sgemm(
            order: c_int,
            trans_a: c_int,
            trans_b: c_int,
            m: c_int,
            n: c_int,
            k: c_int,
            alpha: f32,
            a: *const f32,
            lda: c_int,
            b: *const f32,
            ldb: c_int,
            beta: f32,
            c: *mut f32,
            ldc: c_int,
        );
        fn cblas_dgemm(
            order: c_int,
            trans_a: c_int,
            trans_b: c_int,
            m: c_int,
            n: c_int,
            k: c_int,
            alpha: f64,
            a: *const f64,
            lda: c_int,
            b: *const f64,
            ldb: c_int,
            beta: f64,
            c: *mut f64,
            ldc: c_int,
        );
        fn cblas_zgemm(
            order: c_int,
            trans_a: c_int,
            trans_b: c_int,
            m: c_int,
            n: c_int,
            k: c_int,
            alpha: *const c_void,
            a: *const c_void,
            lda: c_int,
            b: *const c_void,
            ldb: c_int,
            beta: *const c_void,
            c: *mut c_void,
            ldc: c_int,
        );
        fn openblas_set_num_threads(threads: c_int);
    }

    /// Runs `f` with OpenBLAS on `threads` threads of its own, then sets it
    /// back to the one thread weft's provider runs it on.
    pub fn with_threads<R>(threads: usize, f: impl FnOnce() -> R) -> R {
        let threads = c_int::try_from(threads).expect("threads fit in an int");
        // SAFETY: sets OpenBLAS's thread count, a plain int; no product
        // runs in this process meanwhile (the harness runs one side at a
        // time).
        unsafe { openblas_set_num_threads(threads) };
        let out = f();
        // SAFETY: as above.
        unsafe { openblas_set_num_threads(1) };
        out
    }

    /// `c = a @ b` of row-major `n × n` matrices of f32, f64 or c64.
    ///
    /// # Panics
    ///
    /// For another element type, slices shorter than `n × n`, or an `n`
    /// above `int`'s range.
    pub fn gemm<T: Element>(c: &mut [T], a: &[T], b: &[T], n: usize) {
        assert!(a.len() >= n * n && b.len() >= n * n && c.len() >= n * n);
        let n = c_int::try_from(n).expect("n fits in an int");
        let (a, b, c) = (a.as_ptr(), b.as_ptr(), c.as_mut_ptr());
        let ty = TypeId::of::<T>();
        // SAFETY: `T` is the type each arm casts to (compared by TypeId;
        // c64 is a `repr(C)` pair of f64, CBLAS's layout); each slice
        // holds `n × n` elements (asserted), read row-major with leading
        // dimension `n`; `c` is borrowed exclusively, so it overlaps
        // neither input.
        unsafe {
            if ty == TypeId::of::<f32>() {
                cblas_sgemm(
                    ROW_MAJOR,
                    NO_TRANS,
                    NO_TRANS,
                    n,
                    n,
                    n,
                    1.0,
                    a.cast(),
                    n,
                    b.cast(),
                    n,
                    0.0,
                    c.cast(),
                    n,
                );
            } else if ty == TypeId::of::<f64>() {
                cblas_dgemm(
                    ROW_MAJOR,
                    NO_TRANS,
                    NO_TRANS,
                    n,
                    n,
                    n,
                    1.0,
                    a.cast(),
                    n,
                    b.cast(),
                    n,
                    0.0,
                    c.cast(),
                    n,
                );
            } else if ty == TypeId::of::<c64>() {
                let (one, zero) = (c64::new(1.0, 0.0), c64::new(0.0, 0.0));
                cblas_zgemm(
                    ROW_MAJOR,
                    NO_TRANS,
                    NO_TRANS,
                    n,
                    n,
                    n,
                    (&raw const one).cast(),
                    a.cast(),
                    n,
                    b.cast(),
                    n,
                    (&raw const zero).cast(),
                    c.cast(),
                    n,
                );
            } else {
                panic!("openblas::gemm: no CBLAS call for {}", T::DTYPE);
            }
        }
    }
}
