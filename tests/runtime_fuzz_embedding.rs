//! A randomized fuzzer over the embedding surface: seeded sequences that
//! build runtimes under every overlap policy (`Refuse`, `Share`, `Allow`)
//! on overlapping layouts, on the fuzzer's threads (`host`: a launcher that
//! starts a thread, keeps the job, drops it, runs it in place, refuses it,
//! or asks for the global runtime) and on two rayon pools shared between
//! runtimes (`host_pool`); that ask for and shut down the process's runtime
//! (`global`, `shutdown_global`); that shut runtimes down every way, with
//! ops stuck in them (`shutdown_timeout`), or drop their handles; that
//! spawn jobs on domains' pools; and that do several of these at once from
//! several threads.
//!
//! After every step: nothing hangs (a watchdog ends the process naming the
//! seed and the step), no runtime whose shutdown had not begun was handed
//! out closed, the ledger (`live_runtimes`) holds exactly the runtimes
//! alive (each with its domains' CPUs), and the fuzzer's own thread is
//! unmarked. At the end of each sequence, once everything is shut down: no
//! runtime is left in the ledger, no thread that hosted an actor nor any
//! worker of the pools is still marked, every job spawned on a domain's
//! pool ran, a job a host kept returns at once when run late, no actor
//! died, and weft's threads are back to none.
//!
//! The default run (the test suite's) is 8 sequences of 40 steps;
//! `WEFT_FUZZ=<seconds>` runs new seeds for that long. A failure prints its
//! seed and its steps.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use rayon::ThreadPool;
use weft::{
    actor::{current_actor, ActorId, ActorJob},
    error::{ShutdownError, SpawnError},
    runtime::{live_runtimes, Overlap, RuntimeId},
    topology::CpuSet,
    BuildError, Runtime,
};
use weft_tests::{fuzz_seeds, thread_count, threads_named, Rng};

/// How long one step may take before the process is ended as hung.
const STEP_LIMIT: Duration = Duration::from_secs(30);
/// How long a host may keep a job before the build gives up on it.
const HOST_TIMEOUT: Duration = Duration::from_millis(40);

/// Ends the process when a step outlives [`STEP_LIMIT`]: a hang is a
/// failure with its seed and step named, not a stuck test binary.
struct Watchdog {
    step: Arc<Mutex<Option<(Instant, String)>>>,
}

impl Watchdog {
    fn start() -> Watchdog {
        let step: Arc<Mutex<Option<(Instant, String)>>> = Arc::default();
        let watched = step.clone();
        thread::Builder::new()
            .name("fuzz-watchdog".into())
            .spawn(move || loop {
                thread::sleep(Duration::from_millis(100));
                if let Some((since, what)) = &*watched.lock().unwrap() {
                    if since.elapsed() > STEP_LIMIT {
                        eprintln!("fuzz: hung for {STEP_LIMIT:?} in {what}");
                        std::process::exit(124);
                    }
                }
            })
            .expect("the watchdog's thread");
        Watchdog { step }
    }

    fn enter(&self, what: String) {
        *self.step.lock().unwrap() = Some((Instant::now(), what));
    }

    fn leave(&self) {
        *self.step.lock().unwrap() = None;
    }
}

type Failure = String;

fn check(ok: bool, what: impl FnOnce() -> String) -> Result<(), Failure> {
    if ok {
        Ok(())
    } else {
        Err(what())
    }
}

/// What every thread of a sequence records, so that a closed runtime can
/// be told from one handed out closed.
#[derive(Default)]
struct Shared {
    /// Runtimes whose shutdown some thread asked for (recorded before
    /// asking).
    closing: Mutex<HashSet<RuntimeId>>,
    /// Runtimes that came from `global()`, or a runtime's build inside a
    /// launcher: the process may hold them without the fuzzer.
    global: Mutex<HashSet<RuntimeId>>,
    /// Whether a `shutdown_global` may be running (it closes whichever
    /// runtime is global when it runs).
    global_closing: Mutex<bool>,
    /// Runtimes with an op stuck in them: their ops wait behind it.
    busy: Mutex<HashSet<RuntimeId>>,
    /// Jobs spawned on domains' pools, and those that ran.
    spawned: AtomicUsize,
    ran: Arc<AtomicUsize>,
}

impl Shared {
    fn shutting(&self, rt: &Runtime) {
        self.closing.lock().unwrap().insert(rt.id());
    }

    /// A runtime just handed out answers: one handed out closed is a
    /// failure, unless (`racing`, in a burst) another thread may have
    /// asked for its shutdown since it was handed out.
    fn answers(&self, rt: &Runtime, how: &str, racing: bool) -> Result<(), Failure> {
        let busy = self.busy.lock().unwrap().contains(&rt.id());
        let closed = match rt.lane(0) {
            Ok(lane) => match lane.run(|_| 6 * 7) {
                // Open; its op waits behind the stuck one.
                Ok(_) if busy => return Ok(()),
                Ok(ticket) => match ticket.wait_timeout(STEP_LIMIT / 2) {
                    Ok(v) => return check(v == 42, || format!("{how}: an op gave {v}")),
                    Err(e) => e.to_string(),
                },
                Err(e) => e.to_string(),
            },
            Err(e) => e.to_string(),
        };
        // While a `shutdown_global` runs beside it, any runtime may be
        // closed by it: a concurrent `global()` may have shared it.
        let asked = racing
            && (self.closing.lock().unwrap().contains(&rt.id())
                || *self.global_closing.lock().unwrap());
        check(asked, || {
            format!(
                "{how}: {} was handed out closed, no shutdown asked for: {closed}",
                rt.id()
            )
        })
    }
}

/// How a runtime of a build step is hosted.
#[derive(Debug, Clone, Copy)]
enum Hosting {
    Own,
    /// Launched on a thread of the fuzzer's.
    Thread,
    /// Kept by the host, never run before the build gives up.
    Keep,
    Drop,
    Inline,
    Refuse,
    /// The launcher asks for the global runtime, then starts a thread.
    Global,
    Pool(usize),
}

struct World {
    rng: Rng,
    shared: Arc<Shared>,
    pools: Arc<[Arc<ThreadPool>; 2]>,
    cpus: Vec<usize>,
    held: Vec<Runtime>,
    /// Releases of ops stuck in a runtime, by runtime.
    stuck: HashMap<RuntimeId, Vec<mpsc::Sender<()>>>,
    /// Runtimes a shutdown reported joined.
    joined: HashSet<RuntimeId>,
    /// Threads that ran an actor's job: each returns its mark afterwards.
    hosts: Arc<Mutex<Vec<JoinHandle<Option<ActorId>>>>>,
    kept: Arc<Mutex<Vec<ActorJob>>>,
    counts: Counts,
}

#[derive(Default, Debug)]
struct Counts {
    builds: usize,
    refused: usize,
    shared: usize,
    hosted: usize,
    host_errors: usize,
    pool_refusals: usize,
    globals: usize,
    shutdowns: usize,
    timed_out: usize,
    bursts: usize,
    spawned: usize,
}

impl Counts {
    fn add(&mut self, other: &Counts) {
        self.builds += other.builds;
        self.refused += other.refused;
        self.shared += other.shared;
        self.hosted += other.hosted;
        self.host_errors += other.host_errors;
        self.pool_refusals += other.pool_refusals;
        self.globals += other.globals;
        self.shutdowns += other.shutdowns;
        self.timed_out += other.timed_out;
        self.bursts += other.bursts;
        self.spawned += other.spawned;
    }
}

/// The CPUs of a runtime's domains.
fn cpus_of(rt: &Runtime) -> CpuSet {
    (rt.domains().iter()).fold(CpuSet::default(), |all, d| all.union(d.cpus()))
}

impl World {
    fn new(seed: u64, pools: Arc<[Arc<ThreadPool>; 2]>, cpus: Vec<usize>) -> World {
        World {
            rng: Rng(seed),
            shared: Arc::default(),
            pools,
            cpus,
            held: Vec::new(),
            stuck: HashMap::new(),
            joined: HashSet::new(),
            hosts: Arc::default(),
            kept: Arc::default(),
            counts: Counts::default(),
        }
    }

    /// A layout: one domain or two over every allowed CPU, or one CPU;
    /// its name, and its CPUs.
    fn layout(&mut self) -> (weft::Builder, String, CpuSet) {
        let n = self.cpus.len();
        let all: CpuSet = self.cpus.iter().copied().collect();
        match self.rng.below(3) {
            0 if n >= 2 => (Runtime::builder().split(2), "split(2)".into(), all),
            1 => {
                let cpu = self.cpus[self.rng.below(n)];
                (
                    Runtime::builder().cpulists(&cpu.to_string()),
                    format!("cpu {cpu}"),
                    CpuSet::single(cpu),
                )
            }
            _ => (Runtime::builder().split(1), "split(1)".into(), all),
        }
    }

    fn step(&mut self, watchdog: &Watchdog, at: &str) -> Result<String, Failure> {
        let what = match self.rng.below(100) {
            0..=29 => self.build()?,
            30..=39 => self.global()?,
            40..=44 => self.shutdown_global()?,
            45..=59 => self.shutdown()?,
            60..=64 => self.drop_one()?,
            65..=74 => self.op()?,
            75..=82 => self.stick()?,
            83..=86 => {
                self.release_all();
                "release stuck ops".into()
            }
            _ => self.burst(watchdog, at)?,
        };
        self.invariants()
            .map_err(|f| format!("after `{what}`: {f}"))?;
        Ok(what)
    }

    fn build(&mut self) -> Result<String, Failure> {
        let (builder, layout, wanted) = self.layout();
        let policy = [Overlap::Refuse, Overlap::Share, Overlap::Allow][self.rng.below(3)];
        let hosting = match self.rng.below(20) {
            0..=7 => Hosting::Own,
            8..=10 => Hosting::Thread,
            11 => Hosting::Keep,
            12 => Hosting::Drop,
            13 => Hosting::Inline,
            14 => Hosting::Refuse,
            15 => Hosting::Global,
            n => Hosting::Pool(n % 2),
        };
        let what = format!("build {layout} {policy:?} {hosting:?}");
        let mut builder = builder.overlap(policy).host_timeout(HOST_TIMEOUT);
        if self.rng.chance(50) {
            builder = builder.threads_per_domain(1 + self.rng.below(2));
        }
        builder = self.host(builder, hosting);
        let live_before = live_runtimes();
        let overlapping: Vec<_> = (live_before.iter())
            .filter(|l| !l.cpus.is_disjoint(&wanted))
            .collect();
        self.counts.builds += 1;
        let built = builder.build();
        match built {
            Ok(rt) => {
                let existing = overlapping.iter().find(|l| l.runtime == rt.id());
                if let Some(l) = existing {
                    check(policy == Overlap::Share && !l.closing, || {
                        format!("{what}: handed out {} ({l:?})", rt.id())
                    })?;
                    self.counts.shared += 1;
                } else {
                    check(policy != Overlap::Refuse || overlapping.is_empty(), || {
                        format!("{what}: built over {overlapping:?}")
                    })?;
                    check(
                        policy != Overlap::Share || overlapping.iter().all(|l| l.closing),
                        || format!("{what}: built beside live {overlapping:?}"),
                    )?;
                    check(
                        matches!(
                            hosting,
                            Hosting::Own | Hosting::Thread | Hosting::Global | Hosting::Pool(_)
                        ),
                        || format!("{what}: a host that did not run its job built {}", rt.id()),
                    )?;
                    if !matches!(hosting, Hosting::Own) {
                        self.counts.hosted += 1;
                    }
                }
                self.shared.answers(&rt, &what, false)?;
                self.held.push(rt);
            }
            Err(BuildError::Overlap { .. }) => {
                check(policy == Overlap::Refuse && !overlapping.is_empty(), || {
                    format!("{what}: refused with nothing overlapping")
                })?;
                self.counts.refused += 1;
            }
            Err(BuildError::Actor { source, .. }) => {
                let expected = match hosting {
                    Hosting::Keep => matches!(source, SpawnError::HostTimedOut { .. }),
                    Hosting::Drop | Hosting::Inline | Hosting::Refuse => {
                        !matches!(source, SpawnError::HostTimedOut { .. })
                    }
                    // A pool whose workers are all busy with other
                    // runtimes' ops is a timeout too.
                    Hosting::Pool(_) => matches!(source, SpawnError::HostTimedOut { .. }),
                    _ => false,
                };
                check(expected, || format!("{what}: {source}"))?;
                self.counts.host_errors += 1;
            }
            Err(BuildError::HostPool { .. }) if matches!(hosting, Hosting::Pool(_)) => {
                self.counts.pool_refusals += 1;
            }
            Err(other) => return Err(format!("{what}: {other}")),
        }
        Ok(what)
    }

    /// The builder hosted as `hosting` says.
    fn host(&self, builder: weft::Builder, hosting: Hosting) -> weft::Builder {
        let hosts = self.hosts.clone();
        let kept = self.kept.clone();
        let shared = self.shared.clone();
        let on_thread = move |hosts: &Mutex<Vec<JoinHandle<Option<ActorId>>>>, job: ActorJob| {
            let thread = thread::Builder::new()
                .name("app-host".into())
                .spawn(move || {
                    job.run();
                    current_actor()
                })?;
            hosts.lock().unwrap().push(thread);
            Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
        };
        match hosting {
            Hosting::Own => builder,
            Hosting::Thread => builder.host(move |_, job| on_thread(&hosts, job)),
            Hosting::Keep => builder.host(move |_, job| {
                kept.lock().unwrap().push(job);
                Ok(())
            }),
            Hosting::Drop => builder.host(|_, job| {
                drop(job);
                Ok(())
            }),
            Hosting::Inline => builder.host(|_, job| {
                job.run();
                Ok(())
            }),
            Hosting::Refuse => builder.host(|_, _| Err("no thread to spare".into())),
            Hosting::Global => builder.host(move |_, job| {
                match Runtime::global() {
                    Ok(rt) => {
                        shared.global.lock().unwrap().insert(rt.id());
                    }
                    Err(BuildError::SharesOwnBuild { .. }) => {}
                    // Anything else is told through the job not running.
                    Err(other) => return Err(format!("global() in a launcher: {other}").into()),
                }
                on_thread(&hosts, job)
            }),
            Hosting::Pool(i) => builder.host_pool(self.pools[i].clone()),
        }
    }

    fn global(&mut self) -> Result<String, Failure> {
        self.counts.globals += 1;
        let rt = Runtime::global().map_err(|e| format!("global(): {e}"))?;
        self.shared.global.lock().unwrap().insert(rt.id());
        self.shared.answers(&rt, "global()", false)?;
        let what = format!("global() = {}", rt.id());
        if self.rng.chance(50) {
            self.held.push(rt);
        }
        Ok(what)
    }

    /// Before a `shutdown_global`: it joins every op of the runtime it
    /// shuts down, which may be one of the fuzzer's (shared), and may
    /// close any runtime ever global.
    fn global_may_close(&mut self) {
        self.release_all();
        *self.shared.global_closing.lock().unwrap() = true;
        let global = self.shared.global.lock().unwrap().clone();
        let mut closing = self.shared.closing.lock().unwrap();
        closing.extend(global.iter().copied());
    }

    fn shutdown_global(&mut self) -> Result<String, Failure> {
        self.global_may_close();
        self.counts.shutdowns += 1;
        match Runtime::shutdown_global() {
            Ok(Some(report)) => {
                check(report.actors.iter().all(|a| a.died.is_none()), || {
                    format!("shutdown_global: an actor died: {report}")
                })?;
                // Whichever runtime was global is joined: those the fuzzer
                // holds among them are marked when a later shutdown says.
            }
            Ok(None) => {}
            Err(e) => return Err(format!("shutdown_global: {e}")),
        }
        // What it closed is joined: a runtime closed from now on was
        // handed out closed.
        *self.shared.global_closing.lock().unwrap() = false;
        Ok("shutdown_global".into())
    }

    fn pick_held(&mut self) -> Option<usize> {
        (!self.held.is_empty()).then(|| self.rng.below(self.held.len()))
    }

    fn shutdown(&mut self) -> Result<String, Failure> {
        let Some(i) = self.pick_held() else {
            return Ok("shutdown: nothing held".into());
        };
        let rt = self.held[i].clone();
        let id = rt.id();
        self.shared.shutting(&rt);
        self.counts.shutdowns += 1;
        let has_stuck = self.stuck.get(&id).is_some_and(|s| !s.is_empty());
        let how = if has_stuck || self.rng.chance(30) {
            // The only shutdown that returns with an op stuck.
            let result = rt.shutdown_timeout(Duration::from_millis(self.rng.below(20) as u64));
            match result {
                Ok(report) => self.joined_ok(id, &report)?,
                Err(ShutdownError::TimedOut { .. }) => self.counts.timed_out += 1,
                Err(e) => return Err(format!("shutdown_timeout of {id}: {e}")),
            }
            "shutdown_timeout"
        } else {
            let now = self.rng.chance(50);
            let result = if now {
                rt.shutdown_now()
            } else {
                rt.shutdown()
            };
            let report = result.map_err(|e| format!("shutdown of {id}: {e}"))?;
            self.joined_ok(id, &report)?;
            if now {
                "shutdown_now"
            } else {
                "shutdown"
            }
        };
        if self.rng.chance(50) {
            self.forget(i);
        }
        Ok(format!("{how} {id}"))
    }

    fn joined_ok(
        &mut self,
        id: RuntimeId,
        report: &weft::runtime::RuntimeReport,
    ) -> Result<(), Failure> {
        check(report.actors.iter().all(|a| a.died.is_none()), || {
            format!("{id}: an actor died: {report}")
        })?;
        self.joined.insert(id);
        Ok(())
    }

    fn drop_one(&mut self) -> Result<String, Failure> {
        let Some(i) = self.pick_held() else {
            return Ok("drop: nothing held".into());
        };
        let id = self.held[i].id();
        self.forget(i);
        Ok(format!("drop a handle of {id}"))
    }

    /// Drops held handle `i`. A last handle's drop joins the runtime's
    /// ops: the stuck ones are released first (a drop, like `shutdown`,
    /// waits for a running op; `shutdown_timeout` is the way out).
    fn forget(&mut self, i: usize) {
        let rt = self.held.swap_remove(i);
        if !self.held.iter().any(|h| h.id() == rt.id()) {
            self.release(rt.id());
            self.shared.shutting(&rt);
        }
    }

    fn op(&mut self) -> Result<String, Failure> {
        let Some(i) = self.pick_held() else {
            return Ok("op: nothing held".into());
        };
        let rt = self.held[i].clone();
        let Ok(lane) = rt.lane(0) else {
            return check(self.closed_on_purpose(&rt), || {
                format!("op: {} closed with no shutdown asked for", rt.id())
            })
            .map(|()| "op: closed".into());
        };
        let spawn = self.rng.chance(50);
        if spawn {
            self.counts.spawned += 1;
        }
        let shared = self.shared.clone();
        let ticket = lane.run(move |engine| {
            if spawn {
                // A job that outlives its op: run before the engine goes.
                shared.spawned.fetch_add(1, Ordering::SeqCst);
                let ran = shared.ran.clone();
                engine.pool().spawn(move || {
                    ran.fetch_add(1, Ordering::SeqCst);
                });
            }
            1
        });
        let busy = self.shared.busy.lock().unwrap().contains(&rt.id());
        let outcome = match ticket {
            // Behind a stuck op: it runs once that one is released.
            Ok(_) if busy => Ok(()),
            Ok(t) => t
                .wait_timeout(STEP_LIMIT / 2)
                .map(drop)
                .map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        if let Err(e) = outcome {
            check(self.closed_on_purpose(&rt), || {
                format!("op on {}: {e}", rt.id())
            })?;
        }
        Ok(format!(
            "op on {}{}",
            rt.id(),
            if spawn { " spawning a job" } else { "" }
        ))
    }

    /// Whether a held runtime that is closed was shut down by a step: its
    /// own shutdown, or a `shutdown_global` while it was the global one.
    fn closed_on_purpose(&self, rt: &Runtime) -> bool {
        self.shared.closing.lock().unwrap().contains(&rt.id())
            || self.shared.global.lock().unwrap().contains(&rt.id())
    }

    /// An op that waits until released, in a runtime the fuzzer holds.
    fn stick(&mut self) -> Result<String, Failure> {
        let Some(i) = self.pick_held() else {
            return Ok("stick: nothing held".into());
        };
        let rt = self.held[i].clone();
        let (release, wait) = mpsc::channel::<()>();
        let Ok(lane) = rt.lane(0) else {
            return Ok(format!("stick: {} closed", rt.id()));
        };
        match lane.run(move |_| wait.recv().is_ok()) {
            Ok(_ticket) => {
                self.stuck.entry(rt.id()).or_default().push(release);
                self.shared.busy.lock().unwrap().insert(rt.id());
                Ok(format!("stick an op in {}", rt.id()))
            }
            Err(_) => Ok(format!("stick: {} closed", rt.id())),
        }
    }

    fn release(&mut self, id: RuntimeId) {
        self.shared.busy.lock().unwrap().remove(&id);
        for release in self.stuck.remove(&id).unwrap_or_default() {
            let _ = release.send(());
        }
    }

    fn release_all(&mut self) {
        let ids: Vec<_> = self.stuck.keys().copied().collect();
        for id in ids {
            self.release(id);
        }
    }

    /// Several threads at once: global(), sharing builds, allowed builds,
    /// builds on a shared pool, shutdown_global, each with an op.
    fn burst(&mut self, watchdog: &Watchdog, at: &str) -> Result<String, Failure> {
        self.counts.bursts += 1;
        let actions: Vec<usize> = (0..2 + self.rng.below(3))
            .map(|_| self.rng.below(5))
            .collect();
        if actions.contains(&4) {
            self.global_may_close();
        }
        watchdog.enter(format!("{at}: burst {actions:?}"));
        let handles: Vec<_> = actions
            .iter()
            .map(|&action| {
                let shared = self.shared.clone();
                let pools = self.pools.clone();
                thread::spawn(move || -> Result<(), Failure> {
                    match action {
                        0 => {
                            let rt = Runtime::global().map_err(|e| format!("global(): {e}"))?;
                            shared.global.lock().unwrap().insert(rt.id());
                            shared.answers(&rt, "global() in a burst", true)
                        }
                        1 => {
                            let rt = Runtime::builder()
                                .split(1)
                                .overlap(Overlap::Share)
                                .build()
                                .map_err(|e| format!("sharing build: {e}"))?;
                            shared.answers(&rt, "a sharing build in a burst", true)
                        }
                        2 => {
                            let rt = Runtime::builder()
                                .split(1)
                                .build()
                                .map_err(|e| format!("allowed build: {e}"))?;
                            shared.answers(&rt, "an allowed build in a burst", true)?;
                            shared.shutting(&rt);
                            rt.shutdown().map(drop).map_err(|e| e.to_string())
                        }
                        3 => match Runtime::builder()
                            .split(1)
                            .host_pool(pools[1].clone())
                            .host_timeout(HOST_TIMEOUT)
                            .build()
                        {
                            Ok(rt) => {
                                shared.answers(&rt, "a pool's build in a burst", true)?;
                                shared.shutting(&rt);
                                rt.shutdown().map(drop).map_err(|e| e.to_string())
                            }
                            Err(BuildError::HostPool { .. } | BuildError::Actor { .. }) => Ok(()),
                            Err(e) => Err(format!("a pool's build: {e}")),
                        },
                        _ => Runtime::shutdown_global()
                            .map(drop)
                            .map_err(|e| format!("shutdown_global: {e}")),
                    }
                })
            })
            .collect();
        for handle in handles {
            handle
                .join()
                .map_err(|_| "a burst thread panicked".to_owned())??;
        }
        *self.shared.global_closing.lock().unwrap() = false;
        Ok(format!("burst {actions:?}"))
    }

    /// After every step.
    fn invariants(&self) -> Result<(), Failure> {
        check(current_actor().is_none(), || {
            "the fuzzer's thread is marked".into()
        })?;
        let live = live_runtimes();
        let live_ids: HashSet<_> = live.iter().map(|l| l.runtime).collect();
        for rt in &self.held {
            if self.joined.contains(&rt.id()) {
                continue;
            }
            let Some(entry) = live.iter().find(|l| l.runtime == rt.id()) else {
                // Joined by a shutdown_global (it was the global one).
                check(
                    self.shared.global.lock().unwrap().contains(&rt.id()),
                    || format!("{} is held, not joined, and not in the ledger", rt.id()),
                )?;
                continue;
            };
            check(entry.cpus == cpus_of(rt), || {
                format!("{} claims {} but runs {}", rt.id(), entry.cpus, cpus_of(rt))
            })?;
        }
        let held: HashSet<_> = self.held.iter().map(Runtime::id).collect();
        let global = self.shared.global.lock().unwrap();
        for id in &live_ids {
            check(held.contains(id) || global.contains(id), || {
                format!(
                    "{id} is in the ledger, but neither held nor the process's runtime: {live:?}"
                )
            })?;
        }
        Ok(())
    }

    /// Shuts everything down and checks what is left.
    fn finish(&mut self) -> Result<(), Failure> {
        self.release_all();
        for rt in std::mem::take(&mut self.held) {
            let report = rt
                .shutdown()
                .map_err(|e| format!("final shutdown of {}: {e}", rt.id()))?;
            check(report.actors.iter().all(|a| a.died.is_none()), || {
                format!("{}: an actor died: {report}", rt.id())
            })?;
        }
        Runtime::shutdown_global().map_err(|e| format!("final shutdown_global: {e}"))?;
        let live = live_runtimes();
        check(live.is_empty(), || {
            format!("runtimes left in the ledger: {live:?}")
        })?;
        // A job kept past the build returns at once, doing nothing.
        for job in std::mem::take(&mut *self.kept.lock().unwrap()) {
            thread::spawn(move || job.run())
                .join()
                .map_err(|_| "a late job panicked".to_owned())?;
        }
        for host in std::mem::take(&mut *self.hosts.lock().unwrap()) {
            let mark = host
                .join()
                .map_err(|_| "a host thread panicked".to_owned())?;
            check(mark.is_none(), || {
                format!("a host's thread stayed marked {mark:?}")
            })?;
        }
        for pool in self.pools.iter() {
            let marks = pool.broadcast(|_| current_actor());
            check(marks.iter().all(Option::is_none), || {
                format!("a pool's workers stayed marked: {marks:?}")
            })?;
        }
        // Every op has run or been cancelled: the count of jobs is final.
        let spawned = self.shared.spawned.load(Ordering::SeqCst);
        // A job spawned on a caller's pool runs there in its own time.
        let deadline = Instant::now() + STEP_LIMIT / 2;
        while self.shared.ran.load(Ordering::SeqCst) < spawned && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(1));
        }
        let ran = self.shared.ran.load(Ordering::SeqCst);
        check(ran == spawned, || {
            format!("{spawned} jobs spawned on domains' pools, {ran} ran")
        })?;
        let deadline = Instant::now() + STEP_LIMIT / 2;
        while threads_named("weft") > 0 && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(1));
        }
        let left = threads_named("weft");
        check(left == 0, || format!("{left} of weft's threads are left"))
    }
}

/// Runs seed `seed` for `steps` steps: the steps it took, its counts and,
/// if it failed, why.
fn run(
    seed: u64,
    steps: usize,
    pools: &Arc<[Arc<ThreadPool>; 2]>,
    cpus: &[usize],
    watchdog: &Watchdog,
) -> (Vec<String>, Counts, Option<Failure>) {
    let mut world = World::new(seed, pools.clone(), cpus.to_vec());
    let mut log = Vec::new();
    for step in 0..steps {
        let at = format!("seed {seed:#x} step {step}");
        watchdog.enter(at.clone());
        let outcome = world.step(watchdog, &at);
        watchdog.leave();
        match outcome {
            Ok(what) => log.push(what),
            Err(failure) => {
                let _ = world.finish();
                return (log, world.counts, Some(failure));
            }
        }
    }
    watchdog.enter(format!("seed {seed:#x}: the final shutdown"));
    let failure = world.finish().err();
    watchdog.leave();
    (log, world.counts, failure)
}

#[test]
fn fuzz_the_embedding_surface() {
    let watchdog = Watchdog::start();
    let cpus: Vec<usize> = weft_topology::process_allowed_cpus()
        .expect("the allowed CPUs")
        .iter()
        .collect();
    let pools: Arc<[Arc<ThreadPool>; 2]> = Arc::new([3, 4].map(|n| {
        Arc::new(
            rayon::ThreadPoolBuilder::new()
                .num_threads(n)
                .thread_name(move |i| format!("app-pool{n}-{i}"))
                .build()
                .expect("a pool"),
        )
    }));
    let threads = thread_count();
    let start = Instant::now();
    let (mut sequences, mut steps, mut counts) = (0u64, 0usize, Counts::default());
    for seed in fuzz_seeds(0xE3BE, 8) {
        let (log, seen, failure) = run(seed, 40, &pools, &cpus, &watchdog);
        steps += log.len();
        counts.add(&seen);
        sequences += 1;
        if let Some(failure) = failure {
            panic!(
                "seed {seed:#x} failed after {} steps: {failure}\nsteps:\n  {}",
                log.len(),
                log.join("\n  ")
            );
        }
    }
    println!(
        "fuzz: {sequences} sequences, {steps} steps in {:.1?}: {counts:?}",
        start.elapsed()
    );
    weft_tests::eventually("the thread count returns", || thread_count() <= threads);
}
