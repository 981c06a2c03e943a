//! Helpers shared by the integration tests: bounded waits, drop counters,
//! a way to hold an actor busy, thread counts, a tiny executor, fake sysfs.
#![allow(missing_docs)]

use std::fs;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, Receiver, Sender};
use weft::{actor::Lane, error::WaitTimeoutError, Ticket, TicketError};

/// Every wait in the tests is bounded by this; a hang fails the test.
pub const LIMIT: Duration = Duration::from_secs(20);

/// Waits for a ticket, failing the test instead of hanging.
pub fn wait<T, E>(ticket: Ticket<T, E>) -> Result<T, TicketError<E>> {
    match ticket.wait_timeout(LIMIT) {
        Ok(v) => Ok(v),
        Err(WaitTimeoutError::Failed(e)) => Err(e),
        Err(WaitTimeoutError::Timeout(t)) => {
            panic!("op `{}` did not finish in {LIMIT:?}", t.label())
        }
    }
}

/// Waits for a ticket that must succeed.
pub fn wait_ok<T, E: std::fmt::Debug>(ticket: Ticket<T, E>) -> T {
    match wait(ticket) {
        Ok(v) => v,
        Err(e) => panic!("op failed: {e:?}"),
    }
}

/// Polls `cond` until it holds, failing the test after [`LIMIT`].
pub fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < LIMIT, "timed out waiting until {what}");
        thread::sleep(Duration::from_millis(1));
    }
}

/// A value that counts its drops.
#[derive(Debug)]
pub struct Counted {
    pub value: u64,
    drops: Arc<AtomicUsize>,
}

impl Counted {
    pub fn new(value: u64, drops: &Arc<AtomicUsize>) -> Counted {
        Counted {
            value,
            drops: drops.clone(),
        }
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

/// Keeps an actor busy in an op until released, so ops queue behind it.
#[derive(Debug)]
pub struct Hold {
    release: Sender<()>,
    started: Receiver<()>,
    pub ticket: Option<Ticket<()>>,
}

impl Hold {
    /// Submits the holding op on `lane` and waits until it runs.
    pub fn on<E: 'static>(lane: &Lane<E>) -> Hold {
        let (release, wait_release) = bounded::<()>(1);
        let (tell_started, started) = bounded::<()>(1);
        let ticket = lane
            .run(move |_| {
                let _ = tell_started.send(());
                let _ = wait_release.recv_timeout(LIMIT);
            })
            .expect("actor open");
        let hold = Hold {
            release,
            started,
            ticket: Some(ticket),
        };
        hold.started
            .recv_timeout(LIMIT)
            .expect("holding op started");
        hold
    }

    /// Lets the actor go on; returns the holding op's ticket.
    pub fn release(mut self) -> Ticket<()> {
        let _ = self.release.send(());
        self.ticket.take().expect("released once")
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        let _ = self.release.send(());
    }
}

/// Ends the process if a test is still running after its limit: the
/// backstop for waits a test cannot bound itself (a `submit` blocked on a
/// full lane, a `join`). Dropping it disarms it.
#[derive(Debug)]
pub struct Watchdog {
    disarm: Option<Sender<()>>,
    thread: Option<thread::JoinHandle<()>>,
}

/// Arms a [`Watchdog`] for `what` that fires after `limit`.
pub fn watchdog(what: &'static str, limit: Duration) -> Watchdog {
    let (disarm, disarmed) = bounded::<()>(1);
    let thread = thread::Builder::new()
        .name("weft-test-watchdog".into())
        .spawn(move || {
            if let Err(crossbeam_channel::RecvTimeoutError::Timeout) = disarmed.recv_timeout(limit)
            {
                eprintln!("{what}: still running after {limit:?}: something hangs");
                std::process::exit(124);
            }
        })
        .expect("watchdog thread");
    Watchdog {
        disarm: Some(disarm),
        thread: Some(thread),
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        drop(self.disarm.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The marker in the message of every panic the tests inject on purpose
/// (see [`quiet_panics`]).
pub const INJECTED: &str = "injected by a test:";

/// A value whose drop panics.
#[derive(Debug)]
pub struct PanicOnDrop;

impl Drop for PanicOnDrop {
    fn drop(&mut self) {
        panic!("{INJECTED} a Drop that panics");
    }
}

/// An error whose `Display` panics.
#[derive(Debug)]
pub struct BadDisplay;

impl std::fmt::Display for BadDisplay {
    fn fmt(&self, _: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        panic!("{INJECTED} a Display that panics");
    }
}

/// Keeps the panics a test injects on purpose (their message contains
/// `marker`, or a marker another test of the process gave) out of the
/// output; any other panic is reported as usual. The hook is the process's,
/// so the markers of every test that shares it are kept together.
pub fn quiet_panics(marker: &'static str) {
    static MARKERS: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());
    static ONCE: std::sync::Once = std::sync::Once::new();
    let markers = || MARKERS.lock().unwrap_or_else(PoisonError::into_inner);
    {
        let mut markers = markers();
        if !markers.contains(&marker) {
            markers.push(marker);
        }
    }
    ONCE.call_once(|| {
        let report = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let payload = info.payload();
            let message = payload
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| payload.downcast_ref::<&str>().copied());
            let injected = message.is_some_and(|m| markers().iter().any(|k| m.contains(k)));
            if !injected {
                report(info);
            }
        }));
    });
}

/// A byte count from `/proc/self/status`, such as `VmRSS` or `VmHWM`.
pub fn status_bytes(field: &str) -> u64 {
    let status = fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().strip_suffix("kB")?.trim().parse::<u64>().ok())
        .map_or_else(|| panic!("no {field} in /proc/self/status"), |kb| kb * 1024)
}

/// Number of OS threads of this process.
pub fn thread_count() -> usize {
    fs::read_dir("/proc/self/task").map_or(0, |d| d.count())
}

/// The threads of this process whose names begin with `prefix` (Linux: the
/// first 15 bytes of a name), so that a count is not disturbed by the
/// test harness's own threads coming and going.
pub fn threads_named(prefix: &str) -> usize {
    let Ok(tasks) = fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .flatten()
        .filter(|t| fs::read_to_string(t.path().join("comm")).is_ok_and(|n| n.starts_with(prefix)))
        .count()
}

/// The threads of this process that belong to the calling test: those
/// named like the calling thread (the test's own, and any unnamed thread it
/// or a library it calls starts, which inherit its name) and those whose
/// names begin with one of `prefixes`. Unlike [`thread_count`], the harness
/// starting or retiring other tests' threads does not change it.
///
/// Read until three reads in a row, 10 ms apart, agree (two seconds at
/// most): a thread that has just been joined can stay listed a moment, as
/// the kernel wakes its joiner before the thread has left `/proc`, so a
/// count taken right after a join, or right after the test before this
/// one, may hold it.
pub fn own_threads(prefixes: &[&str]) -> usize {
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut last = listed_threads(prefixes);
    let mut agreeing = 0;
    while agreeing < 3 && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(10));
        let now = listed_threads(prefixes);
        if now == last {
            agreeing += 1;
        } else {
            (last, agreeing) = (now, 0);
        }
    }
    last
}

/// One read of [`own_threads`]'s count.
fn listed_threads(prefixes: &[&str]) -> usize {
    let name = |path: &std::path::Path| fs::read_to_string(path.join("comm")).unwrap_or_default();
    let me = name(std::path::Path::new("/proc/thread-self"));
    let Ok(tasks) = fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .flatten()
        .map(|t| name(&t.path()))
        .filter(|n| *n == me || prefixes.iter().any(|p| n.starts_with(p)))
        .count()
}

struct ThreadWaker(Thread);

impl Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

/// Runs a future to completion on the current thread (a minimal executor,
/// enough to drive `Ticket`'s `Future` impl), failing after [`LIMIT`].
pub fn block_on<F: Future>(future: F) -> F::Output {
    let waker = Waker::from(Arc::new(ThreadWaker(thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    let start = Instant::now();
    loop {
        if let Poll::Ready(v) = future.as_mut().poll(&mut cx) {
            return v;
        }
        assert!(
            start.elapsed() < LIMIT,
            "future did not finish in {LIMIT:?}"
        );
        thread::park_timeout(Duration::from_millis(50));
    }
}

/// A fake sysfs tree in a fresh temporary folder, removed on drop.
#[derive(Debug)]
pub struct FakeSysfs {
    pub root: PathBuf,
}

impl FakeSysfs {
    pub fn new(name: &str) -> FakeSysfs {
        static N: AtomicUsize = AtomicUsize::new(0);
        let root = std::env::temp_dir().join(format!(
            "weft-sysfs-{name}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(root.join("devices/system/node")).expect("temp dir");
        FakeSysfs { root }
    }

    /// Adds `nodeN/cpulist`.
    pub fn node(self, id: usize, cpulist: &str) -> Self {
        let dir = self.root.join(format!("devices/system/node/node{id}"));
        fs::create_dir_all(&dir).expect("temp dir");
        fs::write(dir.join("cpulist"), format!("{cpulist}\n")).expect("write");
        self
    }

    /// Writes `devices/system/cpu/online`.
    pub fn online(self, cpulist: &str) -> Self {
        let dir = self.root.join("devices/system/cpu");
        fs::create_dir_all(&dir).expect("temp dir");
        fs::write(dir.join("online"), format!("{cpulist}\n")).expect("write");
        self
    }

    pub fn path(&self) -> &Path {
        &self.root
    }
}

impl Drop for FakeSysfs {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.root);
    }
}

/// A builder of up to `max` CPU domains over the allowed CPUs: a split of
/// them where there are two or more, else two unpinned domains on CPUs
/// 0-1, so that cross-domain tests run on a one-CPU machine too.
pub fn domains_builder(max: usize) -> weft::Builder {
    let allowed = weft_topology::process_allowed_cpus().expect("allowed CPUs");
    if allowed.len() >= 2 {
        weft::Runtime::builder().split(allowed.len().min(max))
    } else {
        unpinned_pair()
    }
}

/// A builder of two unpinned domains over a made-up layout of CPUs 0-1:
/// the same on any machine.
pub fn unpinned_pair() -> weft::Builder {
    let layout = weft::topology::Topology::builder()
        .allowed(weft::topology::CpuSet::range(0..2))
        .split(2)
        .build()
        .expect("layout");
    weft::Runtime::builder()
        .topology(layout)
        .pinning(weft::engine::Pinning::None)
}

/// How one check of a harness-less test ended.
#[derive(Debug)]
pub enum Outcome {
    Passed,
    /// Not run, and why (no GPU, say): never counted as passed.
    Skipped(String),
}

/// One check of a harness-less test.
pub type Check = fn() -> Result<Outcome, String>;

/// `Err(what)` unless `ok`.
pub fn check(ok: bool, what: impl Into<String>) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(what.into())
    }
}

/// Runs `checks`, printing `name: ok`, `name: skipped: <reason>` or
/// `name: FAILED: <what>` for each, then libtest's summary line (so that CI
/// tallies the passes; skipped checks are not among them).
pub fn run_checks(checks: &[(&str, Check)]) -> std::process::ExitCode {
    let (mut passed, mut failed, mut skipped) = (0, 0, 0);
    for &(name, run) in checks {
        match std::panic::catch_unwind(run) {
            Ok(Ok(Outcome::Passed)) => {
                passed += 1;
                println!("{name}: ok");
            }
            Ok(Ok(Outcome::Skipped(reason))) => {
                skipped += 1;
                println!("{name}: skipped: {reason}");
            }
            Ok(Err(what)) => {
                failed += 1;
                println!("{name}: FAILED: {what}");
            }
            Err(_) => {
                failed += 1;
                println!("{name}: FAILED: panicked");
            }
        }
    }
    let verdict = if failed == 0 { "ok" } else { "FAILED" };
    println!("test result: {verdict}. {passed} passed; {failed} failed; {skipped} skipped");
    if failed == 0 {
        std::process::ExitCode::SUCCESS
    } else {
        std::process::ExitCode::FAILURE
    }
}

/// splitmix64, the fuzzers' generator: the sequence of a seed is the same
/// on every run.
#[derive(Debug)]
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 bits.
    pub fn bits(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number below `n` (0 for `n` = 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.bits() % n.max(1) as u64) as usize
    }

    /// True `percent` times in a hundred.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.bits() % 100 < percent
    }

    /// One of `items`, which must not be empty.
    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }
}

/// The seeds a fuzzer runs: `default` sequences from `first`, or, with
/// `WEFT_FUZZ=<seconds>`, new seeds until that long has passed.
pub fn fuzz_seeds(first: u64, default: u64) -> impl Iterator<Item = u64> {
    let budget: Option<u64> = std::env::var("WEFT_FUZZ").ok().and_then(|s| s.parse().ok());
    let start = Instant::now();
    let seeds = std::iter::successors(Some(first), |seed| {
        Some(
            seed.wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407),
        )
    });
    seeds.enumerate().map_while(move |(n, seed)| {
        let more = match budget {
            Some(secs) => start.elapsed() < Duration::from_secs(secs),
            None => (n as u64) < default,
        };
        more.then_some(seed)
    })
}
