//! `Runtime`: one actor per CPU domain, and the application-side entry points.

use std::error::Error;
use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::Mutex;
use weft_actors::{
    current_actor, mark_current_thread, Actor, ActorBuilder, ActorClosed, ActorStats,
    ShutdownError, ShutdownReport, Trace, DEFAULT_IDLE_SPIN, DEFAULT_LANE_CAPACITY,
    DEFAULT_TRACE_CAPACITY, DEFAULT_WAIT_SPIN,
};
#[cfg(feature = "cuda")]
use weft_engines::cuda::{CudaEngine, CudaEngineConfig};
use weft_engines::{CpuEngine, CpuEngineConfig, Pinning, Place, DEFAULT_BUFFER_CAP};
use weft_topology::{pin_current_thread, CpuDomain, CpuSet, Topology, TopologyBuilder};

use crate::error::{BuildError, RuntimeError};
use crate::lane::Lane;
use crate::scope::Scope;
use crate::tensor::{DomainTensors, RuntimeId};

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

struct Inner {
    id: RuntimeId,
    topology: Topology,
    domains: Vec<Actor<CpuEngine>>,
    tensors: Vec<Arc<DomainTensors>>,
    /// One actor per CUDA device asked for, with its ordinal.
    #[cfg(feature = "cuda")]
    cuda: Vec<(usize, Actor<CudaEngine>, Arc<DomainTensors>)>,
    hosted: Mutex<Vec<Box<dyn Hosted>>>,
    config: Config,
    app_threads: AtomicUsize,
}

#[derive(Debug, Clone)]
struct Config {
    threads_per_domain: Option<usize>,
    pinning: Pinning,
    lane_capacity: usize,
    idle_spin: Duration,
    wait_spin: Duration,
    buffer_cap: usize,
    /// Where the trace goes, and the trace, once built.
    trace_path: Option<PathBuf>,
    trace_capacity: usize,
    trace: Option<Trace>,
    /// The CUDA devices to run: none, every one, or these ordinals.
    #[cfg(feature = "cuda")]
    cuda: Option<Option<Vec<usize>>>,
}

/// The environment variable that turns tracing on: the path of the Chrome
/// trace-event JSON file to write (see [`Builder::trace`]).
pub const TRACE_ENV: &str = "WEFT_TRACE";

/// An actor of any engine type, as the runtime manages it.
trait Hosted: Send + Sync {
    fn stop(&self, now: bool) -> Result<ShutdownReport, ShutdownError>;
    fn stats(&self) -> ActorStats;
}

impl<E: 'static> Hosted for Actor<E> {
    fn stop(&self, now: bool) -> Result<ShutdownReport, ShutdownError> {
        if now {
            self.shutdown_now()
        } else {
            self.shutdown()
        }
    }

    fn stats(&self) -> ActorStats {
        Actor::stats(self)
    }
}

/// Configures a [`Runtime`].
#[derive(Debug, Clone)]
pub struct Builder {
    topology: TopologyBuilder,
    prebuilt: Option<Topology>,
    config: Config,
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            topology: Topology::builder(),
            prebuilt: None,
            config: Config {
                threads_per_domain: None,
                pinning: Pinning::PerCore,
                lane_capacity: DEFAULT_LANE_CAPACITY,
                idle_spin: DEFAULT_IDLE_SPIN,
                wait_spin: DEFAULT_WAIT_SPIN,
                buffer_cap: DEFAULT_BUFFER_CAP,
                trace_path: None,
                trace_capacity: DEFAULT_TRACE_CAPACITY,
                trace: None,
                #[cfg(feature = "cuda")]
                cuda: None,
            },
        }
    }
}

impl Builder {
    /// One CPU domain per set, in order, instead of discovery.
    pub fn domains(mut self, sets: impl IntoIterator<Item = CpuSet>) -> Self {
        self.topology = self.topology.domains(sets);
        self
    }

    /// Domains from a layout string such as `"0-3;4-7"`.
    pub fn cpulists(mut self, layout: &str) -> Self {
        self.topology = self.topology.cpulists(layout);
        self
    }

    /// Splits the allowed CPUs into `n` domains (multi-domain runs on a
    /// small machine).
    pub fn split(mut self, n: usize) -> Self {
        self.topology = self.topology.split(n);
        self
    }

    /// Uses a topology built elsewhere.
    pub fn topology(mut self, topology: Topology) -> Self {
        self.prebuilt = Some(topology);
        self
    }

    /// Reads NUMA information under `root` instead of `/sys`.
    pub fn sysfs_root(mut self, root: impl Into<PathBuf>) -> Self {
        self.topology = self.topology.sysfs_root(root);
        self
    }

    /// Threads per domain, the actor thread included (default: the domain's
    /// CPU count).
    pub fn threads_per_domain(mut self, threads: usize) -> Self {
        self.config.threads_per_domain = Some(threads);
        self
    }

    /// How domain threads are pinned (default [`Pinning::PerCore`]).
    pub fn pinning(mut self, pinning: Pinning) -> Self {
        self.config.pinning = pinning;
        self
    }

    /// Ops one lane holds before `submit` waits (default 1024).
    pub fn lane_capacity(mut self, capacity: usize) -> Self {
        self.config.lane_capacity = capacity;
        self
    }

    /// How long an idle actor spins before parking (default 50 µs).
    pub fn idle_spin(mut self, spin: Duration) -> Self {
        self.config.idle_spin = spin;
        self
    }

    /// How long `Ticket::wait` spins before parking (default 20 µs).
    pub fn wait_spin(mut self, spin: Duration) -> Self {
        self.config.wait_spin = spin;
        self
    }

    /// Bytes of freed tensor buffers each CPU domain keeps for reuse
    /// (default 256 MiB; 0 turns the pool off). See [`weft_engines::BufferPool`].
    pub fn buffer_cap(mut self, bytes: usize) -> Self {
        self.config.buffer_cap = bytes;
        self
    }

    /// Records a timeline of every op (per actor and lane: queue and run
    /// times; transfers as flows between actors) and writes it to `path` as
    /// Chrome trace-event JSON when the runtime shuts down or is dropped
    /// (open it in Perfetto or `chrome://tracing`). Without this call, the
    /// `WEFT_TRACE` environment variable, if set, names the file. Off, it
    /// costs nothing; on, each actor keeps its newest records in a ring
    /// buffer ([`Builder::trace_capacity`]).
    ///
    /// ```
    /// let path = std::env::temp_dir().join("weft-doc-trace.json");
    /// let rt = weft::Runtime::builder().split(1).trace(&path).build()?;
    /// rt.lane(0)?.run(|_| ())?.wait()?;
    /// rt.shutdown()?; // writes the file
    /// let json = std::fs::read_to_string(&path)?;
    /// assert!(json.contains(r#""name":"weft-cpu-0""#));
    /// # std::fs::remove_file(&path)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn trace(mut self, path: impl Into<PathBuf>) -> Self {
        self.config.trace_path = Some(path.into());
        self
    }

    /// Records kept per actor while tracing (default 65 536).
    pub fn trace_capacity(mut self, records: usize) -> Self {
        self.config.trace_capacity = records;
        self
    }

    /// Also runs every CUDA device of the machine, each as an actor whose
    /// engine owns the device ([`Runtime::cuda_lane`]); the actor's thread
    /// is pinned to the CPU domain nearest the device.
    ///
    /// [`Builder::build`] fails with [`BuildError::Cuda`] when there is no
    /// driver library or no device.
    #[cfg(feature = "cuda")]
    pub fn cuda(mut self) -> Self {
        self.config.cuda = Some(None);
        self
    }

    /// Runs the CUDA devices with these ordinals (see [`Builder::cuda`]);
    /// [`Builder::build`] fails with [`BuildError::Cuda`] naming one that
    /// the machine does not have.
    #[cfg(feature = "cuda")]
    pub fn cuda_devices(mut self, ordinals: impl IntoIterator<Item = usize>) -> Self {
        self.config.cuda = Some(Some(ordinals.into_iter().collect()));
        self
    }

    /// Discovers or validates the layout and starts one actor per domain.
    ///
    /// # Errors
    ///
    /// [`BuildError::Topology`] for a bad layout, [`BuildError::ZeroThreads`]
    /// and [`BuildError::ZeroLaneCapacity`] for bad settings,
    /// [`BuildError::Actor`] when a domain's actor cannot start (for example
    /// when the kernel narrows a pin).
    pub fn build(self) -> Result<Runtime, BuildError> {
        let mut config = self.config;
        if config.trace_path.is_none() {
            config.trace_path = std::env::var_os(TRACE_ENV)
                .filter(|p| !p.is_empty())
                .map(PathBuf::from);
        }
        if config.trace_path.is_some() {
            config.trace = Some(Trace::new(config.trace_capacity));
        }
        if config.threads_per_domain == Some(0) {
            return Err(BuildError::ZeroThreads);
        }
        if config.lane_capacity == 0 {
            return Err(BuildError::ZeroLaneCapacity);
        }
        let topology = match self.prebuilt {
            Some(topology) => topology,
            None => self.topology.build()?,
        };
        let domains = topology
            .domains()
            .iter()
            .map(|domain| start_domain(domain, &config))
            .collect::<Result<Vec<_>, _>>()?;
        let id = RuntimeId::next();
        let next_id = Arc::new(AtomicU64::new(0));
        let tensors = (0..domains.len())
            .map(|d| Arc::new(DomainTensors::new(id, Place::Cpu(d), next_id.clone())))
            .collect();
        #[cfg(feature = "cuda")]
        let cuda = start_cuda(&topology, &config)?
            .into_iter()
            .map(|(ordinal, actor)| {
                let tensors = DomainTensors::new(id, Place::Cuda(ordinal), next_id.clone());
                (ordinal, actor, Arc::new(tensors))
            })
            .collect();
        Ok(Runtime {
            inner: Arc::new(Inner {
                id,
                topology,
                domains,
                tensors,
                #[cfg(feature = "cuda")]
                cuda,
                hosted: Mutex::new(Vec::new()),
                config,
                app_threads: AtomicUsize::new(0),
            }),
        })
    }
}

fn actor_builder(name: String, config: &Config) -> ActorBuilder {
    let builder = ActorBuilder::new(name)
        .lane_capacity(config.lane_capacity)
        .idle_spin(config.idle_spin)
        .wait_spin(config.wait_spin);
    match &config.trace {
        Some(trace) => builder.trace(trace),
        None => builder,
    }
}

fn start_domain(domain: &CpuDomain, config: &Config) -> Result<Actor<CpuEngine>, BuildError> {
    let name = format!("weft-cpu-{}", domain.index());
    let engine_config = CpuEngineConfig {
        pinning: config.pinning,
        buffer_cap: config.buffer_cap,
        ..CpuEngineConfig::new(
            domain.index(),
            domain.cpus().clone(),
            config
                .threads_per_domain
                .unwrap_or_else(|| domain.cpus().len()),
        )
    };
    actor_builder(name, config)
        .spawn(move || {
            let actor = current_actor().expect("an engine factory runs on its actor thread");
            CpuEngine::new(CpuEngineConfig {
                on_worker_start: Some(Arc::new(move |_| mark_current_thread(actor))),
                ..engine_config
            })
        })
        .map_err(|source| BuildError::Actor {
            domain: domain.index(),
            source,
        })
}

/// Starts the CUDA devices the configuration asks for.
#[cfg(feature = "cuda")]
fn start_cuda(
    topology: &Topology,
    config: &Config,
) -> Result<Vec<(usize, Actor<CudaEngine>)>, BuildError> {
    use weft_topology::CudaUnavailable;
    let Some(wanted) = &config.cuda else {
        return Ok(Vec::new());
    };
    let devices = weft_topology::cuda_devices()?;
    if devices.is_empty() {
        return Err(CudaUnavailable::NoDevice.into());
    }
    let chosen: Vec<&weft_topology::CudaDevice> = match wanted {
        None => devices.iter().collect(),
        Some(ordinals) => ordinals
            .iter()
            .map(|&o| {
                devices
                    .iter()
                    .find(|d| d.ordinal == o)
                    .ok_or(CudaUnavailable::NoSuchDevice {
                        ordinal: o,
                        count: devices.len(),
                    })
            })
            .collect::<Result<_, _>>()?,
    };
    chosen
        .into_iter()
        .map(|device| {
            let ordinal = device.ordinal;
            let pin = match config.pinning {
                Pinning::None => None,
                _ => device
                    .nearest_domain(topology)
                    .map(|d| topology.domains()[d].cpus().clone()),
            };
            let actor = actor_builder(format!("weft-cuda-{ordinal}"), config)
                .spawn(
                    move || -> Result<CudaEngine, Box<dyn Error + Send + Sync>> {
                        if let Some(cpus) = &pin {
                            pin_current_thread(cpus)?;
                        }
                        Ok(CudaEngine::new(CudaEngineConfig { ordinal })?)
                    },
                )
                .map_err(|source| BuildError::Actor {
                    domain: ordinal,
                    source,
                })?;
            Ok((ordinal, actor))
        })
        .collect()
}

/// A runtime reference that does not keep the runtime alive: lanes hold
/// one to reach other domains (for transfers).
#[derive(Clone)]
pub(crate) struct WeakRuntime(std::sync::Weak<Inner>);

impl WeakRuntime {
    pub(crate) fn upgrade(&self) -> Option<Runtime> {
        self.0.upgrade().map(|inner| Runtime { inner })
    }
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
}

/// A table: one row per actor and per open lane, with op counts and the
/// queue-wait and run-time quantiles.
impl fmt::Display for RuntimeStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", ActorStats::TABLE_HEADER)?;
        for actor in &self.actors {
            write!(f, "{actor}")?;
        }
        Ok(())
    }
}

impl Runtime {
    /// Discovers this machine's CPU domains (or reads `WEFT_CPU_DOMAINS`)
    /// and starts one actor per domain with default settings.
    ///
    /// # Errors
    ///
    /// As [`Builder::build`].
    pub fn new() -> Result<Runtime, BuildError> {
        Builder::default().build()
    }

    /// A builder for explicit domains and settings.
    pub fn builder() -> Builder {
        Builder::default()
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
        self.inner
            .domains
            .get(domain)
            .ok_or(RuntimeError::NoSuchDomain {
                domain,
                count: self.inner.domains.len(),
            })
    }

    /// Opens a lane into CPU domain `domain`.
    ///
    /// # Errors
    ///
    /// [`RuntimeError::NoSuchDomain`], or [`RuntimeError::Closed`] after
    /// shutdown.
    pub fn lane(&self, domain: usize) -> Result<Lane, RuntimeError> {
        let lane = self.actor(domain)?.lane()?;
        Ok(Lane::new(
            lane,
            self.inner.tensors[domain].clone(),
            WeakRuntime(Arc::downgrade(&self.inner)),
        ))
    }

    /// Opens a lane into CUDA device `device` (a new stream on it): the
    /// same tensor ops as a CPU lane, run by the device's engine.
    ///
    /// # Errors
    ///
    /// [`RuntimeError::NoSuchDevice`] for a device the runtime does not
    /// run (see [`Builder::cuda`]), or [`RuntimeError::Closed`] after
    /// shutdown.
    #[cfg(feature = "cuda")]
    pub fn cuda_lane(&self, device: usize) -> Result<Lane<CudaEngine>, RuntimeError> {
        let (_, actor, tensors) = self
            .inner
            .cuda
            .iter()
            .find(|(o, ..)| *o == device)
            .ok_or_else(|| RuntimeError::NoSuchDevice {
                device,
                running: self.cuda_ordinals(),
            })?;
        Ok(Lane::new(
            actor.lane()?,
            tensors.clone(),
            WeakRuntime(Arc::downgrade(&self.inner)),
        ))
    }

    /// The ordinals of the CUDA devices this runtime runs.
    #[cfg(feature = "cuda")]
    pub fn cuda_ordinals(&self) -> Vec<usize> {
        self.inner.cuda.iter().map(|(o, ..)| *o).collect()
    }

    /// This runtime's id; handles of other runtimes are refused.
    pub fn id(&self) -> RuntimeId {
        self.inner.id
    }

    /// Runs `f` on a new named application thread (`weft-app-N`) with its
    /// own lane into `domain`.
    ///
    /// # Errors
    ///
    /// As [`Runtime::lane`], or [`RuntimeError::Thread`].
    pub fn spawn<F, T>(&self, domain: usize, f: F) -> Result<JoinHandle<T>, RuntimeError>
    where
        F: FnOnce(Lane) -> T + Send + 'static,
        T: Send + 'static,
    {
        let lane = self.lane(domain)?;
        std::thread::Builder::new()
            .name(self.app_thread_name())
            .spawn(move || f(lane))
            .map_err(RuntimeError::Thread)
    }

    /// Runs `f` with a [`Scope`] whose threads may borrow from the caller;
    /// all of them are joined before `scope` returns.
    ///
    /// ```
    /// let rt = weft::Runtime::builder().split(1).build()?;
    /// let inputs = vec![1u64, 2, 3];
    /// let total: u64 = rt.scope(|s| {
    ///     let handles: Vec<_> = inputs
    ///         .iter()
    ///         .map(|&x| s.spawn(0, move |lane| lane.run(move |_| x * 10).unwrap().wait().unwrap()).unwrap())
    ///         .collect();
    ///     handles.into_iter().map(|h| h.join().unwrap()).sum()
    /// });
    /// assert_eq!(total, 60);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn scope<'env, F, R>(&self, f: F) -> R
    where
        F: for<'scope> FnOnce(&Scope<'scope, 'env>) -> R,
    {
        std::thread::scope(|s| f(&Scope::new(s, self.clone())))
    }

    pub(crate) fn app_thread_name(&self) -> String {
        let n = self.inner.app_threads.fetch_add(1, Ordering::Relaxed);
        format!("weft-app-{n}")
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
        let mut hosted = self.inner.hosted.lock();
        // Checked under the lock `stop` holds: an actor added after a
        // shutdown would run until the next one.
        if !owner.is_open() {
            return Err(RuntimeError::Closed(ActorClosed {
                actor: owner.name().to_owned(),
            }));
        }
        let name = format!("weft-cpu-{domain}-actor-{}", hosted.len());
        let pin = (self.inner.config.pinning != Pinning::None).then_some(cpus);
        let actor = actor_builder(name, &self.inner.config).spawn(move || {
            if let Some(cpus) = &pin {
                pin_current_thread(cpus)
                    .map_err(|e| -> Box<dyn Error + Send + Sync> { e.into() })?;
            }
            factory().map_err(Into::into)
        })?;
        hosted.push(Box::new(actor.clone()));
        Ok(actor)
    }

    /// A snapshot of every actor's counters.
    pub fn stats(&self) -> RuntimeStats {
        let mut actors: Vec<ActorStats> = self.inner.domains.iter().map(Actor::stats).collect();
        #[cfg(feature = "cuda")]
        actors.extend(self.inner.cuda.iter().map(|(_, a, _)| a.stats()));
        actors.extend(self.inner.hosted.lock().iter().map(|h| h.stats()));
        RuntimeStats { actors }
    }

    /// Stops intake everywhere, runs every queued op, joins every actor
    /// thread (pool workers included).
    ///
    /// # Errors
    ///
    /// [`ShutdownError::WouldDeadlock`] when called from an actor thread.
    pub fn shutdown(&self) -> Result<RuntimeReport, ShutdownError> {
        self.stop(false)
    }

    /// Stops intake everywhere, cancels every queued op after the running
    /// ones finish, joins every actor thread.
    ///
    /// # Errors
    ///
    /// As [`Runtime::shutdown`].
    pub fn shutdown_now(&self) -> Result<RuntimeReport, ShutdownError> {
        self.stop(true)
    }

    fn stop(&self, now: bool) -> Result<RuntimeReport, ShutdownError> {
        let hosted = self.inner.hosted.lock();
        // Every actor is asked even if one call is refused, so a refused
        // call still begins the shutdown of all of them.
        let results: Vec<_> = self
            .inner
            .actors()
            .chain(hosted.iter().map(|h| &**h))
            .map(|a| a.stop(now))
            .collect();
        let actors = results.into_iter().collect::<Result<Vec<_>, _>>()?;
        drop(hosted);
        self.inner.write_trace();
        Ok(RuntimeReport { actors })
    }

    /// The runtime's timeline, if it is traced ([`Builder::trace`]).
    pub fn trace(&self) -> Option<&Trace> {
        self.inner.config.trace.as_ref()
    }
}

impl Inner {
    /// The CPU domains' actors, then the CUDA devices'.
    fn actors(&self) -> impl Iterator<Item = &dyn Hosted> {
        let cpu = self.domains.iter().map(|a| a as &dyn Hosted);
        #[cfg(feature = "cuda")]
        let cpu = cpu.chain(self.cuda.iter().map(|(_, a, _)| a as &dyn Hosted));
        cpu
    }

    /// Writes the trace to its file, if the runtime is traced. A failure is
    /// reported on stderr: it happens at shutdown, with nobody to return to.
    fn write_trace(&self) {
        if let (Some(trace), Some(path)) = (&self.config.trace, &self.config.trace_path) {
            if let Err(e) = trace.write(path) {
                eprintln!("weft: writing the trace to {}: {e}", path.display());
            }
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        if self.config.trace.is_some() {
            // Drain first, so that the trace holds every op.
            for actor in self.actors() {
                let _ = actor.stop(false);
            }
            for hosted in self.hosted.get_mut().iter() {
                let _ = hosted.stop(false);
            }
            self.write_trace();
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
