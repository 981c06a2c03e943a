//! Timing: repetitions taken in turn, threads released together, and
//! durations turned into the figures the rows report.

use std::sync::Barrier;
use std::thread;
use std::time::{Duration, Instant};

/// Runs each of `runs` once to warm up, then `reps` rounds of all of them in
/// turn, so that a change in the machine's load hits each alike; the median
/// wall time of each.
pub(crate) fn interleaved<const N: usize>(
    reps: usize,
    mut runs: [&mut dyn FnMut(); N],
) -> [Duration; N] {
    for run in runs.iter_mut() {
        run();
    }
    let mut times: [Vec<Duration>; N] = std::array::from_fn(|_| Vec::with_capacity(reps));
    for _ in 0..reps.max(1) {
        for (run, times) in runs.iter_mut().zip(&mut times) {
            let start = Instant::now();
            run();
            times.push(start.elapsed());
        }
    }
    times.map(median)
}

/// The median of `times` (the upper one of an even count); not empty.
pub(crate) fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

/// Microseconds per item of a run of `items`.
pub(crate) fn micros(d: Duration, items: u64) -> f64 {
    d.as_secs_f64() * 1e6 / items as f64
}

/// Milliseconds.
pub(crate) fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Items per second of a run of `items`.
pub(crate) fn per_second(d: Duration, items: u64) -> f64 {
    items as f64 / d.as_secs_f64()
}

/// Runs `per_thread` on `threads` scoped threads released together.
pub(crate) fn on_threads(threads: usize, per_thread: &(impl Fn() + Sync)) {
    let go = Barrier::new(threads);
    thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                go.wait();
                per_thread();
            });
        }
    });
}
