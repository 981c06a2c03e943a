//! The comparison harness: weft against the designs it replaces, each pair
//! run in this one process on this machine, printed as a table of medians
//! and ratios.
//!
//! `cargo run --release -p weft-examples --example compare [-- --quick] [--only CASE] [--json PATH]`
//!
//! | case | weft | baseline |
//! | --- | --- | --- |
//! | `round-trip` | empty op, submit + wait | crossbeam ping-pong between two threads |
//! | `pipelined` | empty ops, submit N, wait the last | crossbeam, N messages, one ack |
//! | `contention` | 1, 2, 4, 8 threads, each with its own lane, small ops | the same kernels behind a mutex with a re-entry guard |
//! | `reentry` | an op that calls into its engine from a pool worker | the mutex engine entered again from a pool worker |
//! | `gemm` | f64 GEMM n = 512, 1024, 2048 | faer called directly, same threads |
//! | `add` | c = a + b, 64 MiB f64 | a rayon loop, same threads |
//! | `einsum` | `bij,bjk->bik`, 64 batches of 64×64 f64 | faer per batch, rayon over batches |
//! | `chain` | 1 000 dependent adds of 64 elements | the mutex engine; the kernel called directly |
//! | `pipeline` | 3 stages over 2 domains (`Pipeline`) | its slowest stage alone |
//!
//! Every figure is the median of several repetitions, weft's and the
//! baseline's taken in turn so that a change in the machine's load hits
//! both alike. Every ratio is weft's speed over the baseline's: above 1
//! weft is faster.
//!
//! The mutex baseline is written here the way the seeds share an engine: a
//! rayon pool with the domain's threads running weft's own kernels (faer
//! for GEMM), a `parking_lot::Mutex` around it, a thread-local guard that
//! refuses a nested entry on the same thread, and the caller entering with
//! `pool.install`. Its entries wait for the lock with `try_lock_for`, so a
//! would-be deadlock is reported, not hung on. In `reentry` it runs twice:
//! strict (a nested entry from a pool worker waits for the lock) and with
//! the seeds' fallback (a nested entry from a rayon worker runs inline on a
//! fresh serial engine, outside the shared one).
//!
//! Options: `--quick` runs fewer repetitions; `--only CASE` runs one case;
//! `--json PATH` writes the same figures as JSON (which
//! `scripts/numpy_compare.py` reads); `--pinning per-core|domain|none`,
//! `--idle-spin-us N` and `--wait-spin-us N` change weft's settings (the raw
//! channel baselines spin as long), to see what each costs or buys.

use std::cell::RefCell;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Barrier;
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::bounded;
use parking_lot::Mutex;
use rayon::prelude::*;
use weft::{
    BinaryOp, DType, Distribution, Lane, Meta, OpError, Pinning, Runtime, Tensor, TensorError,
    TensorHandle, TensorOp, TicketError,
};
use weft_engines::elementwise::PARALLEL_THRESHOLD;
use weft_examples::{faer_gemm, random, recv_spin};

type BoxError = Box<dyn std::error::Error>;

const CASES: [&str; 9] = [
    "round-trip",
    "pipelined",
    "contention",
    "reentry",
    "gemm",
    "add",
    "einsum",
    "chain",
    "pipeline",
];

/// weft's default spins: an idle actor spins this long before parking…
const IDLE_SPIN: Duration = Duration::from_micros(50);
/// …and a waiting caller this long; the raw baselines spin alike.
const WAIT_SPIN: Duration = Duration::from_micros(20);
/// How long an application thread waits to enter the mutex engine: long
/// enough never to give up on a live holder, short enough never to hang.
const ENTRY_TIMEOUT: Duration = Duration::from_secs(5);
/// How long an entry from inside an op waits for the engine lock. The
/// holder is the very caller whose op is waiting, so any wait ends only
/// at the bound: a short one keeps the harness quick (and flatters the
/// baseline, whose failures would cost more with a longer bound).
const NESTED_TIMEOUT: Duration = Duration::from_millis(10);

fn main() -> Result<(), BoxError> {
    let settings = Settings::parse()?;
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

    if settings.wants("round-trip") {
        round_trip(&settings, &lane, &mut rows);
    }
    if settings.wants("pipelined") {
        pipelined(&settings, &lane, &mut rows);
    }
    if settings.wants("contention") {
        contention(&settings, &rt, threads, &mut rows)?;
    }
    if settings.wants("reentry") {
        reentry(&settings, &rt, threads, &mut rows)?;
    }
    if settings.wants("gemm") {
        gemm(&settings, &lane, &direct_pool, threads, &mut rows)?;
    }
    if settings.wants("add") {
        add(&settings, &lane, &direct_pool, &mut rows)?;
    }
    if settings.wants("einsum") {
        einsum(&settings, &lane, &direct_pool, &mut rows)?;
    }
    if settings.wants("chain") {
        chain(&settings, &lane, threads, &mut rows)?;
    }
    drop(lane);
    rt.shutdown()?;
    if settings.wants("pipeline") {
        pipeline(&settings, &mut rows)?;
    }

    print_table(&rows);
    println!(
        "\n{} rows in {:.1} s; load average at the end: {}; ratio = weft's speed / the baseline's (above 1: weft is faster)",
        rows.len(),
        started.elapsed().as_secs_f64(),
        load_average().map_or_else(|| "unknown".to_string(), |l| format!("{l:.2}"))
    );
    if let Some(path) = &settings.json {
        std::fs::write(path, to_json(&settings, &machine, &rows))?;
        println!("wrote {}", path.display());
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Settings, timing, rows.

struct Settings {
    quick: bool,
    only: Option<String>,
    json: Option<PathBuf>,
    /// weft's pinning (default per core); the baselines' threads are not pinned.
    pinning: Pinning,
    /// The actor's idle spin and the caller's wait spin, weft's and the raw
    /// baselines' alike.
    idle_spin: Duration,
    wait_spin: Duration,
    args: Vec<String>,
}

impl Settings {
    fn parse() -> Result<Settings, BoxError> {
        let args: Vec<String> = std::env::args().skip(1).collect();
        let mut settings = Settings {
            quick: false,
            only: None,
            json: None,
            pinning: Pinning::PerCore,
            idle_spin: IDLE_SPIN,
            wait_spin: WAIT_SPIN,
            args: args.clone(),
        };
        let mut it = args.into_iter();
        while let Some(arg) = it.next() {
            match arg.as_str() {
                "--quick" => settings.quick = true,
                "--only" => {
                    let name = it.next().ok_or("--only needs a case name")?;
                    if !CASES.contains(&name.as_str()) {
                        return Err(
                            format!("no case {name:?}; the cases: {}", CASES.join(", ")).into()
                        );
                    }
                    settings.only = Some(name);
                }
                "--json" => settings.json = Some(it.next().ok_or("--json needs a path")?.into()),
                "--pinning" => {
                    settings.pinning = match it.next().as_deref() {
                        Some("per-core") => Pinning::PerCore,
                        Some("domain") => Pinning::Domain,
                        Some("none") => Pinning::None,
                        _ => return Err("--pinning needs per-core, domain or none".into()),
                    }
                }
                "--idle-spin-us" | "--wait-spin-us" => {
                    let us: u64 = it
                        .next()
                        .and_then(|v| v.parse().ok())
                        .ok_or_else(|| format!("{arg} needs a number of microseconds"))?;
                    if arg == "--idle-spin-us" {
                        settings.idle_spin = Duration::from_micros(us);
                    } else {
                        settings.wait_spin = Duration::from_micros(us);
                    }
                }
                "-h" | "--help" => {
                    println!(
                        "compare [--quick] [--only CASE] [--json PATH] [--pinning per-core|domain|none] \
                         [--idle-spin-us N] [--wait-spin-us N]\ncases: {}",
                        CASES.join(", ")
                    );
                    std::process::exit(0);
                }
                other => return Err(format!("unknown argument {other:?} (try --help)").into()),
            }
        }
        Ok(settings)
    }

    /// A runtime of `domains` domains as these settings say.
    fn runtime(&self, domains: usize) -> Result<Runtime, weft::BuildError> {
        Runtime::builder()
            .split(domains)
            .pinning(self.pinning)
            .idle_spin(self.idle_spin)
            .wait_spin(self.wait_spin)
            .build()
    }

    fn wants(&self, case: &str) -> bool {
        self.only.as_deref().is_none_or(|o| o == case)
    }

    /// Repetitions: `full`, or a third of it (at least 3) with `--quick`.
    fn reps(&self, full: usize) -> usize {
        if self.quick {
            (full / 3).max(3)
        } else {
            full
        }
    }

    /// Items per repetition: `full`, or a quarter of it with `--quick`.
    fn count(&self, full: u64) -> u64 {
        if self.quick {
            (full / 4).max(1)
        } else {
            full
        }
    }
}

/// Runs each of `runs` once to warm up, then `reps` rounds of all of them in
/// turn, so that a change in the machine's load hits each alike; the median
/// wall time of each.
fn interleaved<const N: usize>(reps: usize, mut runs: [&mut dyn FnMut(); N]) -> [Duration; N] {
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
    times.map(|mut t| {
        t.sort();
        t[t.len() / 2]
    })
}

fn micros(d: Duration, items: u64) -> f64 {
    d.as_secs_f64() * 1e6 / items as f64
}

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn per_second(d: Duration, items: u64) -> f64 {
    items as f64 / d.as_secs_f64()
}

/// What happened to each op of a run where ops may fail.
#[derive(Default, Clone)]
struct Outcome {
    completed: u64,
    failed: u64,
    /// Completed, but not on the engine asked for (the seeds' serial
    /// inline engine for entries from a pool worker).
    fallbacks: u64,
    /// Why the failures failed.
    why: String,
}

struct Side {
    name: String,
    value: f64,
    outcome: Option<Outcome>,
}

impl Side {
    fn new(name: impl Into<String>, value: f64) -> Side {
        Side {
            name: name.into(),
            value,
            outcome: None,
        }
    }

    fn with_outcome(mut self, outcome: Outcome) -> Side {
        self.outcome = Some(outcome);
        self
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Unit {
    /// Microseconds per op (lower is better).
    MicrosPerOp,
    /// Milliseconds (lower is better).
    Millis,
    /// Operations per second (higher is better).
    OpsPerSecond,
    /// Pipeline items per second (higher is better).
    ItemsPerSecond,
}

impl Unit {
    fn name(self) -> &'static str {
        match self {
            Unit::MicrosPerOp => "µs/op",
            Unit::Millis => "ms",
            Unit::OpsPerSecond => "ops/s",
            Unit::ItemsPerSecond => "items/s",
        }
    }

    fn higher_is_better(self) -> bool {
        matches!(self, Unit::OpsPerSecond | Unit::ItemsPerSecond)
    }

    fn format(self, value: f64) -> String {
        match self {
            Unit::MicrosPerOp => format!("{value:.3}"),
            Unit::Millis => format!("{value:.2}"),
            Unit::OpsPerSecond | Unit::ItemsPerSecond => {
                if value >= 1e6 {
                    format!("{:.2} M", value / 1e6)
                } else if value >= 1e4 {
                    format!("{:.1} k", value / 1e3)
                } else {
                    format!("{value:.1}")
                }
            }
        }
    }
}

struct Row {
    case: &'static str,
    id: String,
    what: String,
    unit: Unit,
    weft: Side,
    baseline: Option<Side>,
}

impl Row {
    fn new(
        case: &'static str,
        id: impl Into<String>,
        what: impl Into<String>,
        unit: Unit,
        weft: Side,
    ) -> Row {
        Row {
            case,
            id: id.into(),
            what: what.into(),
            unit,
            weft,
            baseline: None,
        }
    }

    fn against(mut self, baseline: Side) -> Row {
        self.baseline = Some(baseline);
        self
    }

    /// weft's speed over the baseline's; none where either did nothing.
    fn speed_ratio(&self) -> Option<f64> {
        let b = self.baseline.as_ref()?.value;
        let w = self.weft.value;
        let ratio = if self.unit.higher_is_better() {
            w / b
        } else {
            b / w
        };
        (w > 0.0 && b > 0.0 && ratio.is_finite()).then_some(ratio)
    }
}

// ---------------------------------------------------------------------------
// 1, 2: empty ops against raw crossbeam-channel.

fn round_trip(settings: &Settings, lane: &Lane, rows: &mut Vec<Row>) {
    let trips = settings.count(20_000);
    let (idle, wait) = (settings.idle_spin, settings.wait_spin);
    let (to_server, server_rx) = bounded::<u64>(1);
    let (server_tx, from_server) = bounded::<u64>(1);
    let server = thread::spawn(move || {
        while let Some(v) = recv_spin(&server_rx, idle) {
            if server_tx.send(v).is_err() {
                return;
            }
        }
    });
    let [weft, raw] = interleaved(
        settings.reps(11),
        [
            &mut || {
                for _ in 0..trips {
                    lane.run(|_| ()).expect("open").wait().expect("ran");
                }
            },
            &mut || {
                for i in 0..trips {
                    to_server.send(i).expect("server alive");
                    recv_spin(&from_server, wait).expect("server alive");
                }
            },
        ],
    );
    drop(to_server);
    server.join().expect("server ran");
    rows.push(
        Row::new(
            "round-trip",
            "round-trip",
            "empty op, submit + wait",
            Unit::MicrosPerOp,
            Side::new("lane.run + wait", micros(weft, trips)),
        )
        .against(Side::new(
            "crossbeam bounded(1) ping-pong",
            micros(raw, trips),
        )),
    );
}

enum Message {
    Run(Box<dyn FnOnce() + Send>),
    Ack,
}

fn pipelined(settings: &Settings, lane: &Lane, rows: &mut Vec<Row>) {
    let ops = settings.count(200_000);
    let (idle, wait) = (settings.idle_spin, settings.wait_spin);

    // Bare integers: the channel alone.
    let (to_raw, raw_rx) = bounded::<u64>(1024);
    let (raw_ack, raw_acked) = bounded::<()>(1);
    let raw_server = thread::spawn(move || {
        while let Some(v) = recv_spin(&raw_rx, idle) {
            if v == u64::MAX && raw_ack.send(()).is_err() {
                return;
            }
        }
    });
    // Boxed closures: the channel plus one allocation per op, as an op has.
    let (to_boxed, boxed_rx) = bounded::<Message>(1024);
    let (boxed_ack, boxed_acked) = bounded::<()>(1);
    let boxed_server = thread::spawn(move || {
        while let Some(m) = recv_spin(&boxed_rx, idle) {
            match m {
                Message::Run(f) => f(),
                Message::Ack => {
                    if boxed_ack.send(()).is_err() {
                        return;
                    }
                }
            }
        }
    });
    let [weft, raw, boxed] = interleaved(
        settings.reps(11),
        [
            &mut || {
                let mut last = None;
                for _ in 0..ops {
                    last = Some(lane.run(|_| ()).expect("open"));
                }
                last.expect("one op at least").wait().expect("ran");
            },
            &mut || {
                for i in 1..ops {
                    to_raw.send(i).expect("server alive");
                }
                to_raw.send(u64::MAX).expect("server alive");
                recv_spin(&raw_acked, wait).expect("server alive");
            },
            &mut || {
                for _ in 1..ops {
                    let f: Box<dyn FnOnce() + Send> = Box::new(|| ());
                    to_boxed.send(Message::Run(f)).expect("server alive");
                }
                to_boxed.send(Message::Ack).expect("server alive");
                recv_spin(&boxed_acked, wait).expect("server alive");
            },
        ],
    );
    drop((to_raw, to_boxed));
    raw_server.join().expect("server ran");
    boxed_server.join().expect("server ran");

    let what = format!("{ops} empty ops, wait the last");
    let weft_side = || Side::new("lane.run ×N, wait last", micros(weft, ops));
    rows.push(
        Row::new(
            "pipelined",
            "pipelined",
            what.clone(),
            Unit::MicrosPerOp,
            weft_side(),
        )
        .against(Side::new("crossbeam bounded(1024), u64", micros(raw, ops))),
    );
    rows.push(
        Row::new(
            "pipelined",
            "pipelined-boxed",
            what,
            Unit::MicrosPerOp,
            weft_side(),
        )
        .against(Side::new(
            "crossbeam bounded(1024), boxed closure",
            micros(boxed, ops),
        )),
    );
}

// ---------------------------------------------------------------------------
// The baseline for 3, 4 and 7: one engine shared behind a mutex, the way
// the seeds share theirs. The kernels are weft's own (`TensorOp::run`, faer
// for GEMM) with the rule weft's CPU engine uses for when an op spreads over
// the pool, so only the way callers reach the engine differs.

/// An engine's kernels, run on the current rayon pool with `threads`.
struct Kernels {
    threads: usize,
}

impl Kernels {
    fn execute(&self, op: &TensorOp, inputs: &[&Tensor]) -> Result<Vec<Tensor>, TensorError> {
        let metas: Vec<Meta> = inputs.iter().map(|t| Meta::of(t)).collect();
        let outputs = op.infer(&metas)?;
        // The same work estimate as `CpuEngine::execute_inferred`.
        let elements: usize = outputs
            .iter()
            .map(|m| m.shape.iter().product::<usize>())
            .sum();
        let work = match op {
            TensorOp::Matmul => {
                elements.saturating_mul(inputs[0].shape().last().copied().unwrap_or(1))
            }
            TensorOp::Linalg(_) | TensorOp::Einsum(_) => usize::MAX,
            TensorOp::Reduce { .. } => inputs[0].len(),
            _ => elements,
        };
        let threads = if work >= PARALLEL_THRESHOLD {
            self.threads
        } else {
            1
        };
        op.run(inputs, threads)
    }
}

/// A rayon pool with the domain's threads, and the kernels that run on it.
struct PoolEngine {
    pool: rayon::ThreadPool,
    kernels: Kernels,
}

/// What an entry from a rayon worker does.
#[derive(Clone, Copy, PartialEq)]
enum WorkerEntry {
    /// Waits for the engine lock like any caller (bounded by the timeout).
    Wait,
    /// Runs inline on a fresh serial engine instead, as the seeds do for
    /// entries from a rayon worker: it completes, but outside the shared
    /// engine (its pool, its caches, its buffers).
    SerialInline,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum EntryError {
    /// The thread-local guard refused a nested entry on this thread.
    Reentered,
    /// The lock stayed held for the whole bound: waiting on would deadlock.
    WouldDeadlock,
}

thread_local! {
    /// The shared engines this thread has entered and not left.
    static ENTERED: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
}

/// One entry's mark in `ENTERED`, removed when the entry ends.
struct EntryGuard(u64);

impl EntryGuard {
    fn enter(engine: u64) -> Result<EntryGuard, EntryError> {
        ENTERED.with(|entered| {
            let mut entered = entered.borrow_mut();
            if entered.contains(&engine) {
                return Err(EntryError::Reentered);
            }
            entered.push(engine);
            Ok(EntryGuard(engine))
        })
    }
}

impl Drop for EntryGuard {
    fn drop(&mut self) {
        ENTERED.with(|entered| {
            let mut entered = entered.borrow_mut();
            if let Some(at) = entered.iter().rposition(|&e| e == self.0) {
                entered.remove(at);
            }
        });
    }
}

/// The engine behind a `parking_lot::Mutex`, entered through a thread-local
/// re-entry guard, the caller running its work with `pool.install`.
struct SharedEngine {
    id: u64,
    engine: Mutex<PoolEngine>,
    worker_entry: WorkerEntry,
    refused: AtomicU64,
    timed_out: AtomicU64,
    fallbacks: AtomicU64,
}

impl SharedEngine {
    fn new(threads: usize, worker_entry: WorkerEntry) -> Result<SharedEngine, BoxError> {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("mutex-engine-w{i}"))
            .build()?;
        Ok(SharedEngine {
            id: NEXT.fetch_add(1, Ordering::Relaxed),
            engine: Mutex::new(PoolEngine {
                pool,
                kernels: Kernels { threads },
            }),
            worker_entry,
            refused: AtomicU64::new(0),
            timed_out: AtomicU64::new(0),
            fallbacks: AtomicU64::new(0),
        })
    }

    /// Runs `f` with the engine: guard, lock (waiting at most `timeout`),
    /// then `pool.install`.
    fn enter<R: Send>(
        &self,
        timeout: Duration,
        f: impl FnOnce(&Kernels) -> R + Send,
    ) -> Result<R, EntryError> {
        let _entered = EntryGuard::enter(self.id).inspect_err(|_| {
            self.refused.fetch_add(1, Ordering::Relaxed);
        })?;
        if self.worker_entry == WorkerEntry::SerialInline && rayon::current_thread_index().is_some()
        {
            self.fallbacks.fetch_add(1, Ordering::Relaxed);
            return Ok(f(&Kernels { threads: 1 }));
        }
        let Some(engine) = self.engine.try_lock_for(timeout) else {
            self.timed_out.fetch_add(1, Ordering::Relaxed);
            return Err(EntryError::WouldDeadlock);
        };
        let engine: &PoolEngine = &engine;
        Ok(engine.pool.install(|| f(&engine.kernels)))
    }

    fn reset_counts(&self) {
        self.refused.store(0, Ordering::Relaxed);
        self.timed_out.store(0, Ordering::Relaxed);
        self.fallbacks.store(0, Ordering::Relaxed);
    }

    fn why(&self) -> String {
        let (refused, timed_out) = (
            self.refused.load(Ordering::Relaxed),
            self.timed_out.load(Ordering::Relaxed),
        );
        let mut why = Vec::new();
        if refused > 0 {
            why.push(format!("{refused} guard refusals"));
        }
        if timed_out > 0 {
            why.push(format!("{timed_out} lock timeouts (would deadlock)"));
        }
        why.join(", ")
    }
}

// ---------------------------------------------------------------------------
// 3: application threads submitting small ops to one domain.

const APP_THREADS: [usize; 4] = [1, 2, 4, 8];
const WINDOW: u64 = 8;

/// Small-op inputs: 4 KiB f64 add operands and 64×64 GEMM operands.
struct SmallInputs {
    add: [Tensor; 2],
    gemm: [Tensor; 2],
}

impl SmallInputs {
    fn new() -> Result<SmallInputs, TensorError> {
        Ok(SmallInputs {
            add: [
                Tensor::from_vec(random(512, 11), &[512])?,
                Tensor::from_vec(random(512, 12), &[512])?,
            ],
            gemm: [
                Tensor::from_vec(random(64 * 64, 13), &[64, 64])?,
                Tensor::from_vec(random(64 * 64, 14), &[64, 64])?,
            ],
        })
    }
}

/// Runs `per_thread` on `threads` scoped threads released together.
fn on_threads(threads: usize, per_thread: &(impl Fn() + Sync)) {
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

fn contention(
    settings: &Settings,
    rt: &Runtime,
    threads: usize,
    rows: &mut Vec<Row>,
) -> Result<(), BoxError> {
    /// One kind of small op: its operands on the host and resident.
    struct Kind<'a> {
        key: &'static str,
        label: &'static str,
        op: TensorOp,
        tensors: &'a [Tensor; 2],
        handles: &'a [TensorHandle; 2],
        total: u64,
    }
    let inputs = SmallInputs::new()?;
    let lane = rt.lane(0)?;
    let resident = |t: &[Tensor; 2]| -> Result<[TensorHandle; 2], OpError> {
        Ok([lane.upload(t[0].clone())?, lane.upload(t[1].clone())?])
    };
    let (add_h, gemm_h) = (resident(&inputs.add)?, resident(&inputs.gemm)?);
    let shared = SharedEngine::new(threads, WorkerEntry::Wait)?;
    let kinds = [
        Kind {
            key: "add",
            label: "4 KiB f64 add",
            op: TensorOp::Binary(BinaryOp::Add),
            tensors: &inputs.add,
            handles: &add_h,
            total: 8_000,
        },
        Kind {
            key: "gemm",
            label: "64×64 f64 GEMM",
            op: TensorOp::Matmul,
            tensors: &inputs.gemm,
            handles: &gemm_h,
            total: 2_000,
        },
    ];
    for kind in kinds {
        let Kind {
            op,
            tensors,
            handles,
            ..
        } = &kind;
        let total = settings.count(kind.total);
        for app in APP_THREADS {
            let each = total / app as u64;
            let ops = each * app as u64;
            let wait_each = || {
                let lane = rt.lane(0).expect("domain 0");
                for _ in 0..each {
                    let c = lane
                        .apply(op.clone(), &[&handles[0], &handles[1]])
                        .expect("submitted");
                    lane.with(&[&c], |_, _| ())
                        .expect("submitted")
                        .wait()
                        .expect("ran");
                }
            };
            let windowed = || {
                let lane = rt.lane(0).expect("domain 0");
                let mut left = each;
                while left > 0 {
                    let batch = left.min(WINDOW);
                    let mut last = None;
                    for _ in 0..batch {
                        last = Some(
                            lane.apply(op.clone(), &[&handles[0], &handles[1]])
                                .expect("submitted"),
                        );
                    }
                    left -= batch;
                    let last = last.expect("one op at least");
                    lane.with(&[&last], |_, _| ())
                        .expect("submitted")
                        .wait()
                        .expect("ran");
                }
            };
            shared.reset_counts();
            let failed = AtomicU64::new(0);
            let mutex = || {
                for _ in 0..each {
                    match shared.enter(ENTRY_TIMEOUT, |k| {
                        k.execute(op, &[&tensors[0], &tensors[1]])
                    }) {
                        Ok(result) => drop(result.expect("valid op")),
                        Err(_) => {
                            failed.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            };
            let [wait_each, windowed, mutex] = interleaved(
                settings.reps(9),
                [
                    &mut || on_threads(app, &wait_each),
                    &mut || on_threads(app, &windowed),
                    &mut || on_threads(app, &mutex),
                ],
            );
            let mutex_side = || {
                let side = Side::new("mutex + guard, pool.install", per_second(mutex, ops));
                match failed.load(Ordering::Relaxed) {
                    0 => side,
                    failed => side.with_outcome(Outcome {
                        completed: 0,
                        failed,
                        fallbacks: 0,
                        why: shared.why(),
                    }),
                }
            };
            let what = format!("{}, {app} thread(s)", kind.label);
            rows.push(
                Row::new(
                    "contention",
                    format!("contention-{}-t{app}-wait", kind.key),
                    what.clone(),
                    Unit::OpsPerSecond,
                    Side::new("lane per thread, wait each", per_second(wait_each, ops)),
                )
                .against(mutex_side()),
            );
            rows.push(
                Row::new(
                    "contention",
                    format!("contention-{}-t{app}-window", kind.key),
                    what,
                    Unit::OpsPerSecond,
                    Side::new(
                        format!("lane per thread, window {WINDOW}"),
                        per_second(windowed, ops),
                    ),
                )
                .against(mutex_side()),
            );
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// 4: an op that re-enters its engine from a pool worker: a 64×64 GEMM that,
// inside, forks with `rayon::join` and on the other side calls back into
// the engine for a 4 KiB add.

/// Counts ops' outcomes from many threads.
#[derive(Default)]
struct Tally {
    completed: AtomicU64,
    failed: AtomicU64,
    why: Mutex<Vec<String>>,
}

impl Tally {
    fn done(&self) {
        self.completed.fetch_add(1, Ordering::Relaxed);
    }

    fn fail(&self, why: impl std::fmt::Display) {
        self.failed.fetch_add(1, Ordering::Relaxed);
        let why = why.to_string();
        let mut seen = self.why.lock();
        if !seen.contains(&why) {
            seen.push(why);
        }
    }

    fn outcome(&self, fallbacks: u64, why: Option<String>) -> Outcome {
        Outcome {
            completed: self.completed.load(Ordering::Relaxed),
            failed: self.failed.load(Ordering::Relaxed),
            fallbacks,
            why: why.unwrap_or_else(|| self.why.lock().join("; ")),
        }
    }
}

fn reentry(
    settings: &Settings,
    rt: &Runtime,
    threads: usize,
    rows: &mut Vec<Row>,
) -> Result<(), BoxError> {
    let inputs = SmallInputs::new()?;
    let lane = rt.lane(0)?;
    let [a, b] = [
        lane.upload(inputs.gemm[0].clone())?,
        lane.upload(inputs.gemm[1].clone())?,
    ];
    let [x, y] = [
        lane.upload(inputs.add[0].clone())?,
        lane.upload(inputs.add[1].clone())?,
    ];
    let strict = SharedEngine::new(threads, WorkerEntry::Wait)?;
    let fallback = SharedEngine::new(threads, WorkerEntry::SerialInline)?;
    let (gemm, add) = (TensorOp::Matmul, TensorOp::Binary(BinaryOp::Add));
    // Ops that complete run many times; those that fail only at the
    // baseline's timeout run a few.
    let total = settings.count(800);
    let total_failing = if settings.quick { 16 } else { 48 };
    let reps = settings.reps(7);

    for app in APP_THREADS {
        let each = total / app as u64;
        let ops = each * app as u64;
        let each_failing = total_failing / app as u64;
        let ops_failing = each_failing * app as u64;

        // weft (a): the other side uses the engine handed to the op.
        let inline = Tally::default();
        let weft_inline = || {
            let lane = rt.lane(0).expect("domain 0");
            for _ in 0..each {
                let ticket = lane
                    .with(&[&a, &b, &x, &y], |engine, t| {
                        engine.install(|| {
                            rayon::join(
                                || engine.execute(&TensorOp::Matmul, &t[..2]),
                                || engine.execute(&TensorOp::Binary(BinaryOp::Add), &t[2..]),
                            )
                        })
                    })
                    .expect("submitted");
                match ticket.wait() {
                    Ok((Ok(_), Ok(_))) => inline.done(),
                    Ok((Err(e), _) | (_, Err(e))) => inline.fail(e),
                    Err(e) => inline.fail(e),
                }
            }
        };

        // weft (b): the other side submits the add as a follow-up op on the
        // caller's lane, which the caller then waits for.
        let follow = Tally::default();
        let weft_follow = || {
            let lane = rt.lane(0).expect("domain 0");
            for _ in 0..each {
                let (next, x, y) = (lane.clone(), x.clone(), y.clone());
                let ticket = lane
                    .with(&[&a, &b], move |engine, t| {
                        engine.install(|| {
                            rayon::join(
                                || engine.execute(&TensorOp::Matmul, t),
                                move || next.add(&x, &y),
                            )
                        })
                    })
                    .expect("submitted");
                match ticket.wait() {
                    Ok((Ok(_), Ok(h))) => {
                        match lane.with(&[&h], |_, _| ()).expect("submitted").wait() {
                            Ok(()) => follow.done(),
                            Err(e) => follow.fail(e),
                        }
                    }
                    Ok((Err(e), _)) => follow.fail(e),
                    Ok((_, Err(e))) => follow.fail(e),
                    Err(e) => follow.fail(e),
                }
            }
        };

        // The mutex engine: the other side enters the engine again.
        let mutex_run = |shared: &SharedEngine, each: u64, tally: &Tally| {
            for _ in 0..each {
                let out = shared.enter(ENTRY_TIMEOUT, |k| {
                    rayon::join(
                        || k.execute(&gemm, &[&inputs.gemm[0], &inputs.gemm[1]]),
                        || {
                            shared.enter(NESTED_TIMEOUT, |k| {
                                k.execute(&add, &[&inputs.add[0], &inputs.add[1]])
                            })
                        },
                    )
                });
                match out {
                    Ok((Ok(_), Ok(Ok(_)))) => tally.done(),
                    Ok((Err(e), _) | (_, Ok(Err(e)))) => tally.fail(e),
                    Ok((_, Err(e))) | Err(e) => tally.fail(format!("{e:?}")),
                }
            }
        };
        fallback.reset_counts();
        let fallback_tally = Tally::default();
        let mutex_fallback = || mutex_run(&fallback, each, &fallback_tally);

        let [weft_inline, weft_follow, mutex_fallback] = interleaved(
            reps,
            [
                &mut || on_threads(app, &weft_inline),
                &mut || on_threads(app, &weft_follow),
                &mut || on_threads(app, &mutex_fallback),
            ],
        );

        // weft (c): the other side submits and waits, which from a pool
        // worker of the same actor could never end: refused at once. Against
        // the mutex engine whose nested entry waits for the lock.
        let waits = Tally::default();
        let weft_wait = || {
            let lane = rt.lane(0).expect("domain 0");
            for _ in 0..each_failing {
                let (next, x, y) = (lane.clone(), x.clone(), y.clone());
                let ticket = lane
                    .with(&[&a, &b], move |engine, t| {
                        engine.install(|| {
                            rayon::join(
                                || engine.execute(&TensorOp::Matmul, t),
                                move || -> Result<(), TicketError<OpError>> {
                                    let h = next.add(&x, &y).map_err(TicketError::Op)?;
                                    next.with(&[&h], |_, _| ()).map_err(TicketError::Op)?.wait()
                                },
                            )
                        })
                    })
                    .expect("submitted");
                match ticket.wait() {
                    Ok((Ok(_), Ok(()))) => waits.done(),
                    Ok((Err(e), _)) => waits.fail(e),
                    Ok((_, Err(e))) if e.is_would_deadlock() => waits.fail("WouldDeadlock at once"),
                    Ok((_, Err(e))) => waits.fail(e),
                    Err(e) => waits.fail(e),
                }
            }
        };
        strict.reset_counts();
        let strict_tally = Tally::default();
        let mutex_strict = || mutex_run(&strict, each_failing, &strict_tally);
        let start = Instant::now();
        on_threads(app, &weft_wait);
        let weft_wait = start.elapsed();
        let start = Instant::now();
        on_threads(app, &mutex_strict);
        let mutex_strict = start.elapsed();

        let fallback_side = || {
            Side::new(
                "mutex + guard, serial inline fallback",
                per_second(mutex_fallback, ops),
            )
            .with_outcome(fallback_tally.outcome(fallback.fallbacks.load(Ordering::Relaxed), None))
        };
        let what = format!("GEMM ∥ nested add, {app} thread(s)");
        rows.push(
            Row::new(
                "reentry",
                format!("reentry-t{app}-engine"),
                what.clone(),
                Unit::OpsPerSecond,
                Side::new("nested via the op's engine", per_second(weft_inline, ops))
                    .with_outcome(inline.outcome(0, None)),
            )
            .against(fallback_side()),
        );
        rows.push(
            Row::new(
                "reentry",
                format!("reentry-t{app}-follow-up"),
                what,
                Unit::OpsPerSecond,
                Side::new("nested as a follow-up op", per_second(weft_follow, ops))
                    .with_outcome(follow.outcome(0, None)),
            )
            .against(fallback_side()),
        );
        // Time from submission to the op's outcome, per op and thread.
        let per_outcome = |d: Duration| micros(d, ops_failing.max(1)) * app as f64;
        rows.push(
            Row::new(
                "reentry",
                format!("reentry-t{app}-nested-wait"),
                format!("GEMM ∥ nested add + wait, {app} thread(s)"),
                Unit::MicrosPerOp,
                Side::new("nested submit + wait", per_outcome(weft_wait))
                    .with_outcome(waits.outcome(0, None)),
            )
            .against(
                Side::new(
                    "mutex + guard, nested entry waits",
                    per_outcome(mutex_strict),
                )
                .with_outcome(strict_tally.outcome(0, Some(strict.why()))),
            ),
        );
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// 5, 6, einsum: large ops against the same work done directly.

fn gemm(
    settings: &Settings,
    lane: &Lane,
    direct_pool: &rayon::ThreadPool,
    threads: usize,
    rows: &mut Vec<Row>,
) -> Result<(), BoxError> {
    for n in [512usize, 1024, 2048] {
        let a = Tensor::from_vec(random(n * n, 1), &[n, n])?;
        let b = Tensor::from_vec(random(n * n, 2), &[n, n])?;
        let (ha, hb) = (lane.upload(a.clone())?, lane.upload(b.clone())?);
        let [weft, direct] = interleaved(
            settings.reps(if n >= 2048 { 3 } else { 7 }),
            [
                &mut || {
                    let c = lane.matmul(&ha, &hb).expect("submitted");
                    lane.with(&[&c], |_, _| ())
                        .expect("submitted")
                        .wait()
                        .expect("ran");
                },
                &mut || {
                    std::hint::black_box(faer_gemm(direct_pool, &a, &b, threads));
                },
            ],
        );
        rows.push(
            Row::new(
                "gemm",
                format!("gemm-{n}"),
                format!("f64 GEMM n = {n}"),
                Unit::Millis,
                Side::new("lane.matmul", millis(weft)),
            )
            .against(Side::new(
                format!("faer direct, {threads} threads"),
                millis(direct),
            )),
        );
    }
    Ok(())
}

fn add(
    settings: &Settings,
    lane: &Lane,
    direct_pool: &rayon::ThreadPool,
    rows: &mut Vec<Row>,
) -> Result<(), BoxError> {
    let n = 64 * 1024 * 1024 / 8;
    let (x, y) = (random(n, 3), random(n, 4));
    let (hx, hy) = (
        lane.upload(Tensor::from_vec(x.clone(), &[n])?)?,
        lane.upload(Tensor::from_vec(y.clone(), &[n])?)?,
    );
    let [weft, direct] = interleaved(
        settings.reps(7),
        [
            &mut || {
                let c = lane.add(&hx, &hy).expect("submitted");
                lane.with(&[&c], |_, _| ())
                    .expect("submitted")
                    .wait()
                    .expect("ran");
            },
            &mut || {
                let c: Vec<f64> =
                    direct_pool.install(|| x.par_iter().zip(&y).map(|(a, b)| a + b).collect());
                std::hint::black_box(c);
            },
        ],
    );
    rows.push(
        Row::new(
            "add",
            "add-64MiB",
            "c = a + b, 64 MiB f64 each",
            Unit::Millis,
            Side::new("lane.add", millis(weft)),
        )
        .against(Side::new(
            "rayon par_iter collect, same threads",
            millis(direct),
        )),
    );
    Ok(())
}

/// The einsum the numpy script runs too.
const EINSUM: &str = "bij,bjk->bik";
const EINSUM_BATCH: usize = 64;
const EINSUM_N: usize = 64;

fn einsum(
    settings: &Settings,
    lane: &Lane,
    direct_pool: &rayon::ThreadPool,
    rows: &mut Vec<Row>,
) -> Result<(), BoxError> {
    let (bt, n) = (EINSUM_BATCH, EINSUM_N);
    let a = random(bt * n * n, 21);
    let b = random(bt * n * n, 22);
    let (ha, hb) = (
        lane.upload(Tensor::from_vec(a.clone(), &[bt, n, n])?)?,
        lane.upload(Tensor::from_vec(b.clone(), &[bt, n, n])?)?,
    );
    let [weft, direct] = interleaved(
        settings.reps(15),
        [
            &mut || {
                let c = lane.einsum(EINSUM, &[&ha, &hb]).expect("submitted");
                lane.with(&[&c], |_, _| ())
                    .expect("submitted")
                    .wait()
                    .expect("ran");
            },
            &mut || {
                let mut c = vec![0.0; bt * n * n];
                let m = n * n;
                direct_pool.install(|| {
                    c.par_chunks_mut(m).enumerate().for_each(|(i, c)| {
                        faer::linalg::matmul::matmul(
                            faer::MatMut::from_row_major_slice_mut(c, n, n),
                            faer::Accum::Replace,
                            faer::MatRef::from_row_major_slice(&a[i * m..(i + 1) * m], n, n),
                            faer::MatRef::from_row_major_slice(&b[i * m..(i + 1) * m], n, n),
                            1.0,
                            faer::Par::Seq,
                        );
                    });
                });
                std::hint::black_box(c);
            },
        ],
    );
    rows.push(
        Row::new(
            "einsum",
            "einsum-batched",
            format!("einsum {EINSUM}, {bt}×{n}×{n} f64"),
            Unit::Millis,
            Side::new("lane.einsum", millis(weft)),
        )
        .against(Side::new(
            "faer per batch, rayon over batches",
            millis(direct),
        )),
    );
    Ok(())
}

// ---------------------------------------------------------------------------
// 7: a chain of small dependent ops.

fn chain(
    settings: &Settings,
    lane: &Lane,
    threads: usize,
    rows: &mut Vec<Row>,
) -> Result<(), BoxError> {
    const LINKS: u64 = 1_000;
    let x = Tensor::from_vec(random(64, 5), &[64])?;
    let small = lane.upload(x.clone())?;
    let add = TensorOp::Binary(BinaryOp::Add);
    let shared = SharedEngine::new(threads, WorkerEntry::Wait)?;
    let kernels = Kernels { threads: 1 };
    let [weft, mutex, direct] = interleaved(
        settings.reps(11),
        [
            &mut || {
                let mut h = small.clone();
                for _ in 0..LINKS {
                    h = lane.add(&h, &small).expect("submitted");
                }
                lane.with(&[&h], |_, _| ())
                    .expect("submitted")
                    .wait()
                    .expect("ran");
            },
            &mut || {
                let mut t = x.clone();
                for _ in 0..LINKS {
                    t = shared
                        .enter(ENTRY_TIMEOUT, |k| k.execute(&add, &[&t, &x]))
                        .expect("entered")
                        .expect("valid op")
                        .pop()
                        .expect("one output");
                }
                std::hint::black_box(t);
            },
            &mut || {
                let mut t = x.clone();
                for _ in 0..LINKS {
                    t = kernels
                        .execute(&add, &[&t, &x])
                        .expect("valid op")
                        .pop()
                        .expect("one output");
                }
                std::hint::black_box(t);
            },
        ],
    );
    let what = format!("{LINKS} dependent adds, 64 f64");
    let weft_side = || Side::new("lane.add ×N, wait the last", micros(weft, LINKS));
    rows.push(
        Row::new(
            "chain",
            "chain-mutex",
            what.clone(),
            Unit::MicrosPerOp,
            weft_side(),
        )
        .against(Side::new(
            "mutex + guard, pool.install each",
            micros(mutex, LINKS),
        )),
    );
    rows.push(
        Row::new(
            "chain",
            "chain-direct",
            what,
            Unit::MicrosPerOp,
            weft_side(),
        )
        .against(Side::new(
            "kernel called inline (no sharing)",
            micros(direct, LINKS),
        )),
    );
    Ok(())
}

// ---------------------------------------------------------------------------
// 8: a 3-stage pipeline across domains against its slowest stage alone.

const PIPE_BATCH: usize = 16;
const PIPE_N: usize = 96;

fn pipeline(settings: &Settings, rows: &mut Vec<Row>) -> Result<(), BoxError> {
    use weft::Pipeline;
    // Two domains, as the pipeline example splits one NUMA node; one on a
    // single CPU, where the stages share it.
    let rt = settings.runtime(2).or_else(|_| settings.runtime(1))?;
    let domains = rt.domains().len();
    let on = |stage: usize| stage % domains;
    let items = settings.count(160) as usize;
    let in_flight = 8;

    let generate = |lane: &Lane, i: usize| {
        lane.random(
            DType::F64,
            &[PIPE_BATCH, PIPE_N, PIPE_N],
            Distribution::Uniform,
            i as u64,
        )
    };
    let contract = |lane: &Lane, x: &TensorHandle| lane.einsum("bij,bkj->ik", &[x, x]);
    let reduce = |lane: &Lane, g: &TensorHandle| lane.sum_all(&lane.mul(g, g)?);
    let pipe = Pipeline::new(&rt, "generate", on(0), generate)
        .stage("contract", on(1), contract)
        .stage("reduce", on(2), reduce)
        .in_flight(in_flight);

    // Each stage alone on its domain, fed one resident input: its ops for
    // every item submitted on one lane, the last one waited for.
    let x = rt.lane(on(1))?.random(
        DType::F64,
        &[PIPE_BATCH, PIPE_N, PIPE_N],
        Distribution::Uniform,
        7,
    )?;
    let g = rt
        .lane(on(2))?
        .random(DType::F64, &[PIPE_N, PIPE_N], Distribution::Uniform, 8)?;
    let alone = |domain: usize, stage: &dyn Fn(&Lane, usize) -> Result<TensorHandle, OpError>| {
        let lane = rt.lane(domain).expect("a domain of this runtime");
        let mut last = None;
        for i in 0..items {
            last = Some(stage(&lane, i).expect("submitted"));
        }
        let last = last.expect("one item at least");
        lane.with(&[&last], |_, _| ())
            .expect("submitted")
            .wait()
            .expect("ran");
    };
    let [whole, gen_alone, contract_alone, reduce_alone] = interleaved(
        settings.reps(5),
        [
            &mut || {
                let run = pipe.run(items).expect("ran");
                assert!(run.outputs.iter().all(Result::is_ok));
            },
            &mut || alone(on(0), &|lane, i| generate(lane, i)),
            &mut || alone(on(1), &|lane, _| contract(lane, &x)),
            &mut || alone(on(2), &|lane, _| reduce(lane, &g)),
        ],
    );
    let stages = [
        ("generate", on(0), gen_alone),
        ("contract", on(1), contract_alone),
        ("reduce", on(2), reduce_alone),
    ];
    for (name, domain, time) in stages {
        rows.push(Row::new(
            "pipeline",
            format!("pipeline-stage-{name}"),
            format!("stage {name} alone (domain {domain})"),
            Unit::ItemsPerSecond,
            Side::new(
                format!("{name} ops, wait the last"),
                per_second(time, items as u64),
            ),
        ));
    }
    let (slowest, domain, time) = stages
        .into_iter()
        .max_by_key(|s| s.2)
        .expect("three stages");
    rows.push(
        Row::new(
            "pipeline",
            "pipeline",
            format!("{items} items, 3 stages on {domains} domain(s), {in_flight} in flight"),
            Unit::ItemsPerSecond,
            Side::new("Pipeline::run", per_second(whole, items as u64)),
        )
        .against(Side::new(
            format!("slowest stage alone: {slowest} (domain {domain})"),
            per_second(time, items as u64),
        )),
    );
    rt.shutdown()?;
    Ok(())
}

// ---------------------------------------------------------------------------
// Output.

fn print_table(rows: &[Row]) {
    let titles = [
        ("round-trip", "1. empty op round trip"),
        ("pipelined", "2. pipelined empty ops"),
        (
            "contention",
            "3. application threads, small ops, one domain",
        ),
        (
            "reentry",
            "4. an op that re-enters the engine from a pool worker",
        ),
        ("gemm", "5. f64 GEMM"),
        ("add", "6. c = a + b, 64 MiB"),
        ("einsum", "einsum"),
        ("chain", "7. chain of small ops"),
        ("pipeline", "8. 3-stage pipeline across domains"),
    ];
    for (case, title) in titles {
        let mut case_rows = rows.iter().filter(|r| r.case == case).peekable();
        let Some(first) = case_rows.peek() else {
            continue;
        };
        println!("\n== {title} ({}) ==", first.unit.name());
        println!(
            "{:<46} {:<30} {:>10}   {:<42} {:>10}   {:>6}",
            "case", "weft", "", "baseline", "", "ratio"
        );
        for row in case_rows {
            let (base_name, base_value) = match &row.baseline {
                Some(b) => (b.name.clone(), row.unit.format(b.value)),
                None => (String::new(), String::new()),
            };
            let ratio = row
                .speed_ratio()
                .map_or_else(|| "—".to_string(), |r| format!("{r:.2}"));
            println!(
                "{:<46} {:<30} {:>10}   {:<42} {:>10}   {:>6}",
                row.what,
                row.weft.name,
                row.unit.format(row.weft.value),
                base_name,
                base_value,
                ratio
            );
            let outcomes = [Some(&row.weft), row.baseline.as_ref()];
            if outcomes.iter().flatten().any(|s| s.outcome.is_some()) {
                let describe = |side: Option<&Side>| {
                    side.and_then(|s| s.outcome.as_ref())
                        .map_or_else(String::new, |o| {
                            let mut text = format!("{} done, {} failed", o.completed, o.failed);
                            if o.fallbacks > 0 {
                                let _ = write!(text, ", {} fallbacks", o.fallbacks);
                            }
                            if !o.why.is_empty() {
                                let _ = write!(text, " ({})", o.why);
                            }
                            text
                        })
                };
                println!(
                    "{:<46}   weft: {}\n{:<46}   baseline: {}",
                    "",
                    describe(Some(&row.weft)),
                    "",
                    describe(row.baseline.as_ref())
                );
            }
        }
    }
}

struct Machine {
    cpu: String,
    allowed_cpus: usize,
    threads: usize,
    topology: String,
    load_average: Option<f64>,
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".to_string())
}

/// The 1-minute load average, to tell a quiet machine from a busy one.
fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

fn json_string(s: &str) -> String {
    serde_json::to_string(s).expect("a string serializes")
}

fn json_number(x: f64) -> String {
    if x.is_finite() {
        format!("{x}")
    } else {
        "null".to_string()
    }
}

fn json_side(side: &Side) -> String {
    let mut out = format!(
        "{{\"name\": {}, \"value\": {}",
        json_string(&side.name),
        json_number(side.value)
    );
    if let Some(o) = &side.outcome {
        let _ = write!(
            out,
            ", \"completed\": {}, \"failed\": {}, \"fallbacks\": {}, \"why\": {}",
            o.completed,
            o.failed,
            o.fallbacks,
            json_string(&o.why)
        );
    }
    out.push('}');
    out
}

fn to_json(settings: &Settings, machine: &Machine, rows: &[Row]) -> String {
    let mut command = String::from("cargo run --release -p weft-examples --example compare");
    if !settings.args.is_empty() {
        let _ = write!(command, " -- {}", settings.args.join(" "));
    }
    let mut out = String::from("{\n");
    let _ = writeln!(out, "  \"command\": {},", json_string(&command));
    let _ = writeln!(out, "  \"quick\": {},", settings.quick);
    let _ = writeln!(
        out,
        "  \"weft\": {{\"pinning\": {}, \"idle_spin_us\": {}, \"wait_spin_us\": {}}},",
        json_string(&format!("{:?}", settings.pinning)),
        settings.idle_spin.as_micros(),
        settings.wait_spin.as_micros()
    );
    let _ = writeln!(
        out,
        "  \"machine\": {{\"cpu\": {}, \"allowed_cpus\": {}, \"threads_per_domain\": {}, \"topology\": {}, \"load_average_1m_at_start\": {}, \"load_average_1m_at_end\": {}}},",
        json_string(&machine.cpu),
        machine.allowed_cpus,
        machine.threads,
        json_string(&machine.topology),
        machine.load_average.map_or_else(|| "null".to_string(), json_number),
        load_average().map_or_else(|| "null".to_string(), json_number)
    );
    out.push_str("  \"ratio\": \"weft speed / baseline speed (above 1: weft is faster)\",\n");
    out.push_str("  \"rows\": [\n");
    for (i, row) in rows.iter().enumerate() {
        let _ = write!(
            out,
            "    {{\"case\": {}, \"id\": {}, \"what\": {}, \"unit\": {}, \"higher_is_better\": {}, \"weft\": {}, \"baseline\": {}, \"ratio\": {}}}",
            json_string(row.case),
            json_string(&row.id),
            json_string(&row.what),
            json_string(row.unit.name()),
            row.unit.higher_is_better(),
            json_side(&row.weft),
            row.baseline.as_ref().map_or_else(|| "null".to_string(), json_side),
            row.speed_ratio().map_or_else(|| "null".to_string(), json_number)
        );
        out.push_str(if i + 1 < rows.len() { ",\n" } else { "\n" });
    }
    out.push_str("  ]\n}\n");
    out
}
