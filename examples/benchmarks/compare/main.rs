//! The comparison harness: weft against the designs it replaces, each pair
//! run in this one process on this machine, printed as a table of medians
//! and ratios.
//!
//! `cargo run --release -p weft-examples --example compare [-- --quick] [--only CASE] [--json PATH] [--plot DIR]`
//!
//! | case | weft | baseline |
//! | --- | --- | --- |
//! | `round-trip` | empty op, submit + wait | crossbeam ping-pong between two threads |
//! | `pipelined` | empty ops, submit N, wait the last | crossbeam, N messages, one ack |
//! | `contention` | 1, 2, 4, 8 threads, each with its own lane, small ops | the same kernels behind a mutex with a re-entry guard |
//! | `reentry` | an op that calls into its engine from a pool worker | the mutex engine entered again from a pool worker |
//! | `gemm` | f64 GEMM n = 512, 1024, 2048 | faer called directly, same threads |
//! | `add` | c = a + b, 64 MiB f64 | a rayon loop, same threads |
//! | `transfers`, `transfers-2` | a 32 MiB download; a transfer between two domains | a copy loop on the same threads; a clone on the caller's thread |
//! | `permutations` | the strided-rs suite's 12 permutation patterns (`data/permutation_patterns.json`) | a copy loop of the same bytes, same threads |
//! | `einsum` | `bij,bjk->bik`, 64 batches of 64×64 f64 | faer per batch, rayon over batches |
//! | `einsum_kinds` | `ij,ij->ij` of 2048² f64; `i,j->ij` of 4096 | `lane.mul`; an outer-product loop, same threads |
//! | `chain` | 1 000 dependent adds of 64 elements | the mutex engine; the kernel called directly |
//! | `pipeline` | 3 stages over 2 domains (`Pipeline`) | its slowest stage alone |
//!
//! Every figure is the median of several repetitions, weft's and the
//! baseline's taken in turn so that a change in the machine's load hits
//! both alike. Every ratio is weft's speed over the baseline's: above 1
//! weft is faster.
//!
//! The mutex baseline (`mutex.rs`) is written the way the seeds share an
//! engine: a rayon pool with the domain's threads running weft's own kernels
//! (faer for GEMM), a `parking_lot::Mutex` around it, a thread-local guard
//! that refuses a nested entry on the same thread, and the caller entering
//! with `pool.install`. Its entries wait for the lock with `try_lock_for`, so
//! a would-be deadlock is reported, not hung on. In `reentry` it runs twice:
//! strict (a nested entry from a pool worker waits for the lock) and with
//! the seeds' fallback (a nested entry from a rayon worker runs inline on a
//! fresh serial engine, outside the shared one).
//!
//! Options: `--quick` runs fewer repetitions; `--only CASE` runs one case;
//! `--json PATH` writes the same figures as JSON (which
//! `scripts/numpy_compare.py` reads); `--plot DIR` draws them as SVG charts
//! (`plot.rs`), `--from PATH` draws a saved JSON instead of running, and
//! `--numpy PATH` adds numpy's figures (`numpy_compare.py --json PATH`) to
//! the GEMM chart; `--pinning per-core|domain|none`,
//! `--idle-spin-us N` and `--wait-spin-us N` change weft's settings (the raw
//! channel baselines spin as long), to see what each costs or buys.
//!
//! The files: this one runs the cases; `settings.rs` reads the command
//! line; `timing.rs` times runs in turn; `mutex.rs` is the mutex baseline;
//! `cases/` holds one file per case (`case.rs` says what a case is);
//! `report.rs` prints the table and writes the JSON; `plot.rs` draws it.

mod case;
mod cases;
mod mutex;
mod plot;
mod report;
mod settings;
mod timing;

use std::time::Instant;

use weft_examples::BoxError;

use crate::case::{Domain, Run};
use crate::cases::CASES;
use crate::report::{cpu_model, load_average, print_table, to_json, Machine};
use crate::settings::Settings;

fn main() -> Result<(), BoxError> {
    let names = CASES.map(|c| c.name);
    let settings = Settings::parse(&names)?;
    if let (Some(from), Some(dir)) = (&settings.from, &settings.plot) {
        let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(from)?)?;
        return draw(&settings, &report, dir);
    }
    let started = Instant::now();
    let load = load_average();
    let mut rows = Vec::new();

    let rt = settings.runtime(1)?;
    let threads = rt.domains()[0].cpus().len();
    println!(
        "{}; {threads} thread(s) in the domain; CPU: {}; 1-minute load average at start: {}\n",
        rt.topology(),
        cpu_model(),
        load.map_or_else(|| "unknown".to_string(), |l| format!("{l:.2}"))
    );
    let machine = Machine {
        cpu: cpu_model(),
        allowed_cpus: rt.topology().allowed().len(),
        threads,
        topology: rt.topology().to_string(),
        load_average: load,
    };
    let lane = rt.lane(0)?;
    let direct_pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()?;
    let domain = Domain {
        settings: &settings,
        rt: &rt,
        lane: &lane,
        threads,
        direct_pool: &direct_pool,
    };
    let wanted = || CASES.iter().filter(|c| settings.wants(c.name));
    for case in wanted() {
        if let Run::InDomain(run) = case.run {
            run(&domain, &mut rows)?;
        }
    }
    drop(lane);
    rt.shutdown()?;
    for case in wanted() {
        if let Run::OwnRuntime(run) = case.run {
            run(&settings, &mut rows)?;
        }
    }

    let titles = CASES.map(|c| (c.name, c.title));
    print_table(&rows, &titles);
    println!(
        "\n{} rows in {:.1} s; load average at the end: {}; ratio = weft's speed / the baseline's (above 1: weft is faster)",
        rows.len(),
        started.elapsed().as_secs_f64(),
        load_average().map_or_else(|| "unknown".to_string(), |l| format!("{l:.2}"))
    );
    let json = to_json(&settings, &machine, &rows);
    if let Some(path) = &settings.json {
        std::fs::write(path, serde_json::to_string_pretty(&json)? + "\n")?;
        println!("wrote {}", path.display());
    }
    if let Some(dir) = &settings.plot {
        draw(&settings, &json, dir)?;
    }
    Ok(())
}

/// Draws the charts of `report` (the JSON of a run) into `dir`.
fn draw(
    settings: &Settings,
    report: &serde_json::Value,
    dir: &std::path::Path,
) -> Result<(), BoxError> {
    let numpy = match &settings.numpy {
        Some(path) => Some(serde_json::from_str(&std::fs::read_to_string(path)?)?),
        None => None,
    };
    let written = plot::plot(report, numpy.as_ref(), dir)?;
    if written.is_empty() {
        println!("no rows to draw in {}", dir.display());
    }
    for path in written {
        println!("wrote {}", path.display());
    }
    Ok(())
}
