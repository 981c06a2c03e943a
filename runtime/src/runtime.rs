//! `Runtime`: the actors of a runtime's domains, the lanes into them, and their shutdown.

// The runtime's face: what builds one, what it is built with, what it
// reports, and the application-side helpers on top of its lanes.
pub use crate::builder::{Builder, RAYON_THREADS_ENV, THREADS_ENV, TRACE_ENV};
pub use crate::config::{Overlap, DEFAULT_IDLE_TRIM, DEFAULT_THREAD_NAMES};
pub use crate::domain::{Affinity, DomainThreads};
pub use crate::handle::RuntimeId;
pub use crate::ledger::{live_runtimes, LiveRuntime, Overlapping};
pub use crate::pipeline::{Pipeline, PipelineRun};
#[cfg(not(weft_loom))]
pub use crate::scope::Scope;

use std::error::Error;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use weft_actors::{Actor, ActorClosed, ActorStats, ShutdownError, ShutdownReport, Trace};
use weft_cpu::{CpuEngine, Pinning};
use weft_topology::{pin_current_thread, CpuDomain, CpuSet, Topology};

use crate::config::Config;
use crate::domain::{DomainTable, Hosted, Stop};
use crate::error::{OpError, RuntimeError};
use crate::lane::Lane;
use crate::ledger::{self, Claim};
use crate::trace::TraceView;

/// The weft runtime: one actor per CPU domain, each owning a [`CpuEngine`]
/// whose pool is pinned to the domain. Cheap to clone; the actors shut down
/// (draining their lanes) when the last clone is dropped.
///
/// ```
/// let rt = weft::Runtime::builder().split(1).build()?;
/// let lane = rt.lane(0)?;
/// let cpus = lane.run(|engine| engine.domain().cpus.len())?.wait()?;
/// assert!(cpus >= 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Runtime {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    id: RuntimeId,
    topology: Topology,
    /// Lanes hold it weakly, to reach other domains for transfers.
    table: Arc<DomainTable>,
    /// Held only to read or change the list, never across a join or a
    /// user's code (a factory, an op): shutdown, stats and spawns from any
    /// thread, ops included, cannot wait on each other through it.
    hosted: Mutex<HostedActors>,
    config: Config,
    app_threads: AtomicUsize,
    /// The CPUs of every domain, as claimed in the process's ledger.
    cpus: CpuSet,
    /// What the domains' threads are and where they run.
    threads: Vec<DomainThreads>,
    /// The claim on `cpus`: released by a shutdown that joins every
    /// actor, else when this is dropped. Declared after `table`, so that
    /// the domains' threads are joined first.
    claim: Mutex<Option<Claim>>,
    /// Set once the trace file holds every op (a shutdown that stopped
    /// every actor wrote it): the drop does not write it again.
    trace_written: AtomicBool,
}

/// The actors users host with [`Runtime::spawn_actor`].
#[derive(Default)]
struct HostedActors {
    actors: Vec<Arc<dyn Hosted>>,
    /// Names handed out (a spawn whose factory fails uses one up).
    named: usize,
    /// Set by the first shutdown: no actor is added after it.
    closed: bool,
}

/// What every actor of a runtime did, from its shutdown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeReport {
    /// One report per actor: CPU domains in order, then CUDA devices, then
    /// hosted actors.
    pub actors: Vec<ShutdownReport>,
}

impl fmt::Display for RuntimeReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for report in &self.actors {
            writeln!(f, "{report}")?;
        }
        Ok(())
    }
}

/// A snapshot of every actor of a runtime.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeStats {
    /// CPU domains in order, then CUDA devices, then hosted actors.
    pub actors: Vec<ActorStats>,
    /// The live runtimes of the process whose CPUs overlap this one's.
    pub overlaps: Vec<Overlapping>,
}

/// A table: one row per actor and per open lane, with op counts and the
/// queue-wait and run-time quantiles.
impl fmt::Display for RuntimeStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", ActorStats::TABLE_HEADER)?;
        for actor in &self.actors {
            write!(f, "{actor}")?;
        }
        for overlap in &self.overlaps {
            writeln!(f, "overlap: {overlap}")?;
        }
        Ok(())
    }
}

// `Runtime::new` and `Runtime::builder` are in `builder.rs`; `Runtime::spawn`
// and `Runtime::scope` in `scope.rs`.
impl Runtime {
    /// The runtime that [`crate::Builder::build`] has started.
    pub(crate) fn from_parts(
        id: RuntimeId,
        topology: Topology,
        table: DomainTable,
        config: Config,
        (cpus, claim): (CpuSet, Option<Claim>),
    ) -> Runtime {
        let threads = table.threads(&topology, &config);
        let inner = Arc::new(Inner {
            id,
            topology,
            table: Arc::new(table),
            hosted: Mutex::new(HostedActors::default()),
            config,
            app_threads: AtomicUsize::new(0),
            cpus,
            threads,
            claim: Mutex::new(None),
            trace_written: AtomicBool::new(false),
        });
        if let Some(claim) = claim {
            claim.attach(inner.clone());
            *inner.claim.lock() = Some(claim);
        }
        Runtime { inner }
    }

    /// Another handle to a live runtime (one shared through the ledger).
    pub(crate) fn from_inner(inner: Arc<Inner>) -> Runtime {
        Runtime { inner }
    }

    /// The live runtimes of the process whose CPUs overlap this one's
    /// (built with [`crate::runtime::Overlap::Allow`], by either side).
    pub fn overlaps(&self) -> Vec<Overlapping> {
        ledger::overlaps(self.inner.id, &self.inner.cpus)
    }

    /// Each CPU domain's threads: how many, their names, and whether their
    /// affinity was read back from each thread or only declared.
    pub fn threads(&self) -> &[DomainThreads] {
        &self.inner.threads
    }

    /// The CPU domain layout the runtime runs on.
    pub fn topology(&self) -> &Topology {
        &self.inner.topology
    }

    /// The CPU domains, in index order.
    pub fn domains(&self) -> &[CpuDomain] {
        self.inner.topology.domains()
    }

    /// The actor of CPU domain `domain`.
    ///
    /// # Errors
    ///
    /// [`RuntimeError::NoSuchDomain`] for an index out of range.
    pub fn actor(&self, domain: usize) -> Result<&Actor<CpuEngine>, RuntimeError> {
        Ok(self.inner.table.cpu(domain)?.actor())
    }

    /// Opens a lane into CPU domain `domain`.
    ///
    /// # Errors
    ///
    /// [`RuntimeError::NoSuchDomain`], or [`RuntimeError::Closed`] after
    /// shutdown.
    pub fn lane(&self, domain: usize) -> Result<Lane, RuntimeError> {
        let table = &self.inner.table;
        Ok(Lane::open(table.cpu(domain)?, table)?)
    }

    /// [`Runtime::lane`] for a tensor op's own use: its refusal as an
    /// [`OpError`].
    pub(crate) fn op_lane(&self, domain: usize) -> Result<Lane, OpError> {
        let table = &self.inner.table;
        Ok(Lane::open(table.cpu(domain)?, table)?)
    }

    /// The runtime's domains.
    #[cfg(feature = "mpi")]
    pub(crate) fn table(&self) -> &DomainTable {
        &self.inner.table
    }

    /// Whether a shutdown has begun.
    pub(crate) fn is_closed(&self) -> bool {
        self.inner.hosted.lock().closed
    }

    /// Whether a shutdown has joined every thread (its claim is
    /// released): dropping the last handle then waits for nothing.
    #[cfg(not(weft_loom))]
    pub(crate) fn is_joined(&self) -> bool {
        self.inner.claim.lock().is_none()
    }

    /// This runtime's id; handles of other runtimes are refused.
    pub fn id(&self) -> RuntimeId {
        self.inner.id
    }

    /// The name of the next application thread: `weft-app-N` (with the
    /// default names).
    pub(crate) fn app_thread_name(&self) -> String {
        let n = self.inner.app_threads.fetch_add(1, Ordering::Relaxed);
        format!("{}-app-{n}", self.inner.config.name)
    }

    /// Hosts a user's own engine as an actor on CPU domain `domain`: its
    /// thread is pinned to the domain (unless pinning is off) and `factory`
    /// builds the engine there. It gets the same lanes and tickets, and the
    /// runtime shuts it down with the rest.
    ///
    /// # Errors
    ///
    /// [`RuntimeError::NoSuchDomain`], [`RuntimeError::Closed`] once the
    /// runtime is shut down, or [`RuntimeError::Spawn`] when the thread, the
    /// pin or the factory fails.
    pub fn spawn_actor<E, F, Er>(&self, domain: usize, factory: F) -> Result<Actor<E>, RuntimeError>
    where
        E: 'static,
        F: FnOnce() -> Result<E, Er> + Send + 'static,
        Er: Into<Box<dyn Error + Send + Sync>>,
    {
        let owner = self.actor(domain)?;
        let cpus = self.domains()[domain].cpus().clone();
        let closed = || {
            RuntimeError::Closed(ActorClosed {
                actor: owner.name().to_owned(),
            })
        };
        let name = {
            let mut hosted = self.inner.hosted.lock();
            if hosted.closed || !owner.is_open() {
                return Err(closed());
            }
            hosted.named += 1;
            let prefix = &self.inner.config.name;
            format!("{prefix}-cpu-{domain}-actor-{}", hosted.named - 1)
        };
        // The factory runs with no lock held: it may call back into the
        // runtime (stats, another spawn) or take its time.
        let pin = (self.inner.config.pinning != Pinning::None).then_some(cpus);
        let actor = self.inner.config.actor(name).spawn(move || {
            if let Some(cpus) = &pin {
                pin_current_thread(cpus)
                    .map_err(|e| -> Box<dyn Error + Send + Sync> { e.into() })?;
            }
            factory().map_err(Into::into)
        })?;
        let mut hosted = self.inner.hosted.lock();
        if hosted.closed {
            // A shutdown began while the factory ran: this actor is not in
            // its list, so it is stopped here and never handed out.
            drop(hosted);
            let _ = actor.shutdown();
            return Err(closed());
        }
        hosted.actors.push(Arc::new(actor.clone()));
        Ok(actor)
    }

    /// A snapshot of every actor's counters.
    pub fn stats(&self) -> RuntimeStats {
        let hosted = self.inner.hosted.lock().actors.clone();
        let actors = (self.inner.table.actors())
            .chain(hosted.iter().map(|h| &**h))
            .map(Hosted::stats)
            .collect();
        RuntimeStats {
            actors,
            overlaps: self.overlaps(),
        }
    }

    /// Stops intake everywhere, runs every queued op, joins every actor
    /// thread (pool workers included).
    ///
    /// # Errors
    ///
    /// [`ShutdownError::WouldDeadlock`] when called from an actor thread.
    pub fn shutdown(&self) -> Result<RuntimeReport, ShutdownError> {
        self.stop(Stop::Drain)
    }

    /// Stops intake everywhere, cancels every queued op after the running
    /// ones finish, joins every actor thread.
    ///
    /// # Errors
    ///
    /// As [`Runtime::shutdown`].
    pub fn shutdown_now(&self) -> Result<RuntimeReport, ShutdownError> {
        self.stop(Stop::Now)
    }

    /// As [`Runtime::shutdown_now`], waiting at most `timeout` in all: the
    /// way out of an op that never returns, or of a job spawned on a
    /// domain's pool that outlives its op (an engine is dropped only once
    /// its pool's jobs are done).
    ///
    /// ```
    /// use std::time::Duration;
    /// use weft::{actor::StuckAt, error::ShutdownError};
    ///
    /// let rt = weft::Runtime::builder().split(1).build()?;
    /// let (release, wait) = std::sync::mpsc::channel::<()>();
    /// let (started, running) = std::sync::mpsc::channel::<()>();
    /// let op = weft::Op::new(move |_: &mut weft::CpuEngine| {
    ///     started.send(()).unwrap();
    ///     wait.recv()
    /// });
    /// let stuck = rt.lane(0)?.submit(op.label("stuck"))?;
    /// running.recv()?;
    /// match rt.shutdown_timeout(Duration::from_millis(20)) {
    ///     Err(ShutdownError::TimedOut { stuck, .. }) => {
    ///         assert!(matches!(stuck[0].doing, StuckAt::Op { label: "stuck", .. }));
    ///     }
    ///     other => panic!("{other:?}"),
    /// }
    /// release.send(())?;
    /// assert!(rt.shutdown().is_ok()); // joins what was stuck
    /// # drop(stuck);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`ShutdownError::TimedOut`] naming each actor still working when
    /// the time ran out, and what it was doing (the running op's lane and
    /// label, or dropping its engine). Their shutdown goes on; a later
    /// shutdown call joins them. As [`Runtime::shutdown`] from an actor
    /// thread.
    pub fn shutdown_timeout(&self, timeout: Duration) -> Result<RuntimeReport, ShutdownError> {
        let Some(deadline) = Instant::now().checked_add(timeout) else {
            return self.shutdown_now();
        };
        // Every actor's shutdown begins before any is waited for.
        let _ = self.stop_each(|| Stop::Within(Duration::ZERO));
        let mut stuck = Vec::new();
        let mut reports = Vec::new();
        for result in
            self.stop_each(|| Stop::Within(deadline.saturating_duration_since(Instant::now())))
        {
            match result {
                Ok(report) => reports.push(report),
                Err(ShutdownError::TimedOut { stuck: more, .. }) => stuck.extend(more),
                Err(other) => return Err(other),
            }
        }
        // With an actor stuck, the drop writes the trace again (its op
        // may end by then).
        self.inner.write_trace(stuck.is_empty());
        if stuck.is_empty() {
            self.inner.release_claim();
            Ok(RuntimeReport { actors: reports })
        } else {
            Err(ShutdownError::TimedOut { timeout, stuck })
        }
    }

    fn stop(&self, how: Stop) -> Result<RuntimeReport, ShutdownError> {
        let results = self.stop_each(|| how);
        self.inner.write_trace(results.iter().all(Result::is_ok));
        let actors = results.into_iter().collect::<Result<_, _>>()?;
        self.inner.release_claim();
        Ok(RuntimeReport { actors })
    }

    /// Stops every actor, each as `how()` says when its turn comes; every
    /// actor is asked even if one call is refused, so a refused call still
    /// begins the shutdown of all of them.
    fn stop_each(&self, how: impl Fn() -> Stop) -> Vec<Result<ShutdownReport, ShutdownError>> {
        // The list is closed and copied under the lock, and the actors are
        // joined after it is released.
        let hosted = {
            let mut hosted = self.inner.hosted.lock();
            hosted.closed = true;
            hosted.actors.clone()
        };
        // Never shared from here on (`Runtime::global`, `Overlap::Share`).
        ledger::closing(self.inner.id);
        (self.inner.table.actors())
            .chain(hosted.iter().map(|h| &**h))
            .map(|a| a.stop(how()))
            .collect()
    }

    /// The runtime's timeline, if it is traced ([`crate::Builder::trace`]);
    /// [`TraceView::from_trace`] reads it as data.
    pub fn trace(&self) -> Option<&Trace> {
        self.inner.config.trace.as_ref()
    }
}

/// The CUDA devices a runtime runs (feature `cuda`, [`crate::Builder::cuda`]).
#[cfg(feature = "cuda")]
impl Runtime {
    /// Opens a lane into CUDA device `device` (a new stream on it): the
    /// same tensor ops as a CPU lane, run by the device's engine.
    ///
    /// # Errors
    ///
    /// [`RuntimeError::NoSuchDevice`] for a device the runtime does not
    /// run (see [`crate::Builder::cuda`]), or [`RuntimeError::Closed`] after
    /// shutdown.
    pub fn cuda_lane(&self, device: usize) -> Result<Lane<crate::cuda::CudaEngine>, RuntimeError> {
        let table = &self.inner.table;
        Ok(Lane::open(table.cuda(device)?, table)?)
    }

    /// The ordinals of the CUDA devices this runtime runs.
    pub fn cuda_ordinals(&self) -> Vec<usize> {
        self.inner.table.cuda_ordinals()
    }
}

impl Inner {
    /// Frees the runtime's CPUs in the ledger: every actor is joined.
    fn release_claim(&self) {
        // Taken out first: the ledger's lock is not taken under this one.
        let claim = self.claim.lock().take();
        drop(claim);
    }

    /// Writes the trace to its file, if the runtime is traced and no
    /// whole trace was written yet; `whole`: it holds every op the runtime
    /// will run. A failure is reported on stderr: it happens at shutdown,
    /// with nobody to return to.
    fn write_trace(&self, whole: bool) {
        let written = if whole {
            self.trace_written.swap(true, Ordering::AcqRel)
        } else {
            self.trace_written.load(Ordering::Acquire)
        };
        if written {
            return;
        }
        if let (Some(trace), Some(path)) = (&self.config.trace, &self.config.trace_path) {
            if let Err(e) = TraceView::from_trace(trace).write(path) {
                eprintln!("weft: writing the trace to {}: {e}", path.display());
            }
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        ledger::closing(self.id);
        if self.config.trace.is_some() {
            // Drain first, so that the trace holds every op.
            for actor in self.table.actors() {
                let _ = actor.stop(Stop::Drain);
            }
            for hosted in &self.hosted.get_mut().actors {
                let _ = hosted.stop(Stop::Drain);
            }
            self.write_trace(true);
        }
    }
}

impl fmt::Debug for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runtime")
            .field("topology", &self.inner.topology)
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

/// Every CPU the domains of `topology` run on.
pub(crate) fn claimed_cpus(topology: &Topology) -> CpuSet {
    (topology.domains().iter()).fold(CpuSet::default(), |all, d| all.union(d.cpus()))
}
