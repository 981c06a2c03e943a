//! Helpers shared by the examples: timing and printing of benchmark rows.

use std::time::{Duration, Instant};

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
