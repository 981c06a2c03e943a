//! The runtime's table of domains: each CPU domain and CUDA device, its actor and its tensors.
//!
//! A [`Domain`] is the same over every engine: the actor that owns the
//! engine and what the lanes into it share. The table holds the CPU domains
//! and, with the `cuda` feature, the CUDA devices; it is where they are
//! started and where a [`Place`] is looked up, so the rest of the runtime
//! does not say which engines exist.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use weft_actors::{
    current_actor, mark_current_thread, release_queue, Actor, ActorStats, Housekeeping, Released,
    Releaser, ShutdownError, ShutdownReport,
};
use weft_core::{Place, TensorEngine};
use weft_cpu::{CpuEngine, CpuEngineConfig, Leases, Pinning};
use weft_topology::{CpuDomain, CpuSet, Share, Topology};

use crate::config::{Config, Hosting};
use crate::error::{BuildError, PlaceError};
use crate::functions::Functions;
use crate::handle::{actor_name, DomainTensors, Release, RuntimeId, Spent};
use crate::hosting::Seat;
#[cfg(feature = "cuda")]
use weft_cuda::{CudaEngine, CudaEngineConfig};

/// The two sides of a domain's free queue, and its bin of spent handles
/// (see [`housekeeping`]).
type Freed = (Releaser<Release>, Arc<Released<Release>>, Spent);

/// One domain the runtime runs: the actor that owns its engine, and what
/// the lanes into it share for tensor work.
pub(crate) struct Domain<E> {
    actor: Actor<E>,
    tensors: Arc<DomainTensors>,
    /// The NUMA node of a CPU domain, if known (none for a device).
    numa_node: Option<usize>,
    /// What a CPU domain's engine found its threads to be (none for a
    /// device).
    readback: Option<Readback>,
}

/// What a CPU domain's engine found its threads to be, on its own thread.
#[derive(Debug, Clone, Default)]
struct Readback {
    /// The actor thread's name.
    name: String,
    /// Threads in the engine's pool.
    threads: usize,
    /// The CPUs each pool thread read back, by worker (none on a
    /// caller's pool, or where the platform cannot read them).
    cpus: Vec<CpuSet>,
    /// What leasing the pool's CPUs found.
    leases: Leases,
}

impl<E> Domain<E> {
    fn new(actor: Actor<E>, tensors: Arc<DomainTensors>, numa_node: Option<usize>) -> Self {
        Domain {
            actor,
            tensors,
            numa_node,
            readback: None,
        }
    }

    /// The actor that owns the domain's engine.
    pub(crate) fn actor(&self) -> &Actor<E> {
        &self.actor
    }

    /// What the lanes into the domain share.
    pub(crate) fn tensors(&self) -> &Arc<DomainTensors> {
        &self.tensors
    }
}

/// Every domain of a runtime, in the order reports list them: the MPI
/// actor if there is one, CPU domains by index, then CUDA devices in the
/// order asked for.
pub(crate) struct DomainTable {
    /// The rank's MPI actor (feature `mpi`). First, so that it stops (and
    /// is dropped) before the domains: its shutdown cancels the receives
    /// nothing matched, which fails the domains' ops waiting on them,
    /// instead of leaving the domains to wait for a message that will
    /// never come.
    #[cfg(feature = "mpi")]
    mpi: Option<crate::mpi::MpiActor>,
    cpu: Vec<Domain<CpuEngine>>,
    #[cfg(feature = "cuda")]
    cuda: Vec<Domain<CudaEngine>>,
}

impl DomainTable {
    /// Starts one actor per CPU domain of `topology`, then one per CUDA
    /// device `config` asks for. Tensor ids are unique in the runtime.
    /// `seats`: one per CPU domain on a caller's pool
    /// ([`crate::Builder::host_pool`]), none otherwise.
    pub(crate) fn start(
        topology: &Topology,
        config: &Config,
        runtime: RuntimeId,
        seats: Vec<Seat>,
        #[cfg(feature = "mpi")] mpi: Option<crate::mpi::MpiActor>,
    ) -> Result<DomainTable, BuildError> {
        let next_id = Arc::new(AtomicU64::new(0));
        let functions = Arc::new(Functions::new(config.function_cache));
        let prefix: Arc<str> = config.name.as_str().into();
        let mut seats = seats.into_iter();
        let cpu = topology
            .domains()
            .iter()
            .map(|domain| {
                let place = Place::Cpu(domain.index());
                let (freed, mut housekeeping) = housekeeping(config.idle_trim);
                // The jobs a one-thread pool would leave queued, run first.
                let housekeeping = move |engine: &mut CpuEngine, idle| {
                    engine.run_spawned_jobs();
                    housekeeping.tidy(engine, idle)
                };
                let (actor, readback) = start_cpu(domain, config, seats.next(), housekeeping)?;
                let tensors = DomainTensors::start(
                    runtime,
                    (place, &prefix),
                    (&next_id, &functions),
                    freed,
                    &actor,
                );
                Ok(Domain {
                    readback: Some(readback),
                    ..Domain::new(actor, tensors, domain.numa_node())
                })
            })
            .collect::<Result<_, BuildError>>()?;
        Ok(DomainTable {
            cpu,
            #[cfg(feature = "cuda")]
            cuda: Self::start_cuda(topology, config)?
                .into_iter()
                .map(|(ordinal, freed, actor)| {
                    let place = Place::Cuda(ordinal);
                    let tensors = DomainTensors::start(
                        runtime,
                        (place, &prefix),
                        (&next_id, &functions),
                        freed,
                        &actor,
                    );
                    Domain::new(actor, tensors, None)
                })
                .collect(),
            #[cfg(feature = "mpi")]
            mpi,
        })
    }

    /// CPU domain `index`.
    pub(crate) fn cpu(&self, index: usize) -> Result<&Domain<CpuEngine>, PlaceError> {
        self.cpu.get(index).ok_or(PlaceError::NoSuchDomain {
            domain: index,
            count: self.cpu.len(),
        })
    }

    /// The rank's MPI actor, if the runtime runs one.
    #[cfg(feature = "mpi")]
    pub(crate) fn mpi(&self) -> Option<&crate::mpi::MpiActor> {
        self.mpi.as_ref()
    }

    /// The NUMA node of `place`, if it is a CPU domain whose node is known.
    pub(crate) fn numa_node(&self, place: Place) -> Option<usize> {
        match place {
            Place::Cpu(index) => self.cpu.get(index)?.numa_node,
            Place::Cuda(_) => None,
        }
    }

    /// What each CPU domain's threads are, as `config` started them.
    pub(crate) fn threads(&self, topology: &Topology, config: &Config) -> Vec<DomainThreads> {
        (self.cpu.iter())
            .zip(topology.domains())
            .map(|(domain, layout)| {
                let readback = domain.readback.clone().unwrap_or_default();
                let on_pool = matches!(config.host, Some(Hosting::Pool(_)));
                let names = match on_pool {
                    // The caller's pool: only the actor's thread is known.
                    true => vec![readback.name.clone()],
                    false => std::iter::once(readback.name.clone())
                        .chain(
                            (1..readback.threads).map(|w| format!("{}-w{w}", domain.actor.name())),
                        )
                        .collect(),
                };
                let affinity = match config.pinning {
                    _ if on_pool => Affinity::Caller,
                    Pinning::None => Affinity::Unpinned,
                    _ if readback.cpus.len() == readback.threads => {
                        Affinity::Verified(readback.cpus)
                    }
                    _ => Affinity::Declared,
                };
                DomainThreads {
                    domain: layout.index(),
                    cpus: layout.cpus().clone(),
                    pinning: config.pinning,
                    threads: readback.threads,
                    names,
                    affinity,
                    leases: readback.leases,
                    share: topology.share().cloned(),
                    stack_size: config.stack_size,
                    hosted: config.host.is_some(),
                }
            })
            .collect()
    }

    /// Every actor of the table, in its order (the order a shutdown stops
    /// them).
    pub(crate) fn actors(&self) -> impl Iterator<Item = &dyn Hosted> {
        let actors = self.cpu.iter().map(|d| &d.actor as &dyn Hosted);
        #[cfg(feature = "cuda")]
        let actors = actors.chain(self.cuda.iter().map(|d| &d.actor as &dyn Hosted));
        // The MPI actor first (see the field).
        #[cfg(feature = "mpi")]
        let actors = (self.mpi.iter().map(|m| m as &dyn Hosted)).chain(actors);
        actors
    }
}

/// An actor of any engine type, as the runtime stops it and reads its
/// counters: a domain's, or a hosted engine's ([`crate::Runtime::spawn_actor`]).
pub(crate) trait Hosted: Send + Sync {
    fn stop(&self, how: Stop) -> Result<ShutdownReport, ShutdownError>;
    fn stats(&self) -> ActorStats;
}

/// How a runtime stops its actors.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Stop {
    /// [`Actor::shutdown`].
    Drain,
    /// [`Actor::shutdown_now`].
    Now,
    /// [`Actor::shutdown_timeout`].
    Within(Duration),
}

impl<E: 'static> Hosted for Actor<E> {
    fn stop(&self, how: Stop) -> Result<ShutdownReport, ShutdownError> {
        match how {
            Stop::Drain => self.shutdown(),
            Stop::Now => self.shutdown_now(),
            Stop::Within(timeout) => self.shutdown_timeout(timeout),
        }
    }

    fn stats(&self) -> ActorStats {
        Actor::stats(self)
    }
}

/// The housekeeping of a domain's actor, and the queue it drains: it frees
/// the tensors whose last handle is gone (at once when a release nudges
/// the actor, busy or idle), and lets the engine's buffer pool go once the
/// domain has had nothing to do for `trim_after`.
fn housekeeping<E: TensorEngine>(trim_after: Duration) -> (Freed, impl Housekeeping<E>) {
    let (frees, freed) = release_queue();
    let freed = Arc::new(freed);
    let drained = freed.clone();
    let spent = Spent::new();
    let bin = spent.clone();
    let tidy = move |engine: &mut E, idle: Option<Duration>| {
        // Handles no submitter came back for: dropped here (their releases
        // land in the free queue drained next), before the actor idles.
        if idle.is_some() {
            bin.drop_all();
        }
        drained.drain(|release: Release| release.apply(engine));
        let idle = idle?;
        if engine.memory().buffers.pooled_bytes == 0 {
            return None;
        }
        match trim_after.checked_sub(idle) {
            Some(left) if !left.is_zero() => Some(left),
            _ => {
                engine.trim();
                None
            }
        }
    };
    ((frees, freed, spent), tidy)
}

/// Starts the actor of a CPU domain; its engine's pool is built on it.
/// Also returns what the engine found its threads to be.
fn start_cpu(
    domain: &CpuDomain,
    config: &Config,
    seat: Option<Seat>,
    housekeeping: impl Housekeeping<CpuEngine>,
) -> Result<(Actor<CpuEngine>, Readback), BuildError> {
    let index = domain.index();
    let name = actor_name(&config.name, Place::Cpu(index));
    let mut engine_config = CpuEngineConfig {
        pinning: config.pinning,
        buffer_cap: config.buffer_cap,
        program_cache: config.plan_caches.0,
        einsum_cache: config.plan_caches.1,
        provider: config.provider,
        stack_size: config.stack_size,
        lease_dir: config.lease_dir.clone(),
        name: name.clone(),
        ..CpuEngineConfig::new(
            index,
            domain.cpus().clone(),
            config.threads_for(domain.cpus().len()),
        )
    };
    #[cfg(weft_loom)]
    let actor_thread_name = name.clone();
    let mut actor = config.actor(name);
    match &config.host {
        None => {}
        Some(Hosting::Threads(launch)) => {
            let launch = launch.clone();
            actor = actor.host(move |job| launch(index, job));
        }
        Some(Hosting::Pool(pool)) => {
            engine_config.pool = Some(pool.clone());
            // Launched once: the seat goes with the job.
            let seat = parking_lot::Mutex::new(seat);
            actor = actor.host(move |job| {
                let seat = seat
                    .lock()
                    .take()
                    .ok_or("no worker of the pool was reserved")?;
                seat.launch(job);
                Ok(())
            });
        }
    }
    let readback = Arc::new(parking_lot::Mutex::new(Readback::default()));
    let read = readback.clone();
    let actor = actor
        .spawn_with(
            move || {
                let actor = current_actor().expect("an engine factory runs on its actor thread");
                let engine = CpuEngine::new(CpuEngineConfig {
                    on_worker_start: Some(Arc::new(move |_| mark_current_thread(actor))),
                    ..engine_config
                })?;
                // A loom thread has no name of its own (every model thread
                // runs on one OS thread): it is the actor's.
                #[cfg(weft_loom)]
                let thread = actor_thread_name.clone();
                #[cfg(not(weft_loom))]
                let thread = std::thread::current().name().unwrap_or("").to_owned();
                *read.lock() = Readback {
                    name: thread,
                    threads: engine.domain().threads,
                    cpus: engine.worker_cpus().to_vec(),
                    leases: engine.leases().clone(),
                };
                Ok::<_, weft_cpu::EngineError>(engine)
            },
            housekeeping,
        )
        .map_err(|source| BuildError::Actor {
            domain: index,
            source,
        })?;
    let readback = std::mem::take(&mut *readback.lock());
    Ok((actor, readback))
}

/// A CPU domain's threads, as its engine started them
/// ([`crate::Runtime::threads`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DomainThreads {
    /// The domain's index.
    pub domain: usize,
    /// The domain's CPUs.
    pub cpus: CpuSet,
    /// How its threads were pinned.
    pub pinning: Pinning,
    /// Threads in the domain's pool, the actor's included.
    pub threads: usize,
    /// The threads' names, the actor's (pool worker 0) first; on a
    /// caller's pool ([`crate::Builder::host_pool`]), the actor's only.
    pub names: Vec<String>,
    /// Where the threads run, and how that is known.
    pub affinity: Affinity,
    /// Under [`Pinning::PerCore`]: the CPUs the domain leased, and those
    /// it found held by another process's weft domain (or another
    /// runtime's of this process), which its workers avoided while a CPU
    /// of the domain was free; or why it could not lease
    /// ([`Builder::lease_dir`](crate::Builder::lease_dir)).
    pub leases: Leases,
    /// The part of the CPUs it was given that this process took, when
    /// other processes were given the same ones: MPI ranks of one node
    /// that their launcher did not bind apart (feature `mpi`), each laying
    /// its domains out over its own part
    /// ([`TopologyBuilder::share`](weft_topology::TopologyBuilder::share)).
    /// `None` when it took them all.
    pub share: Option<Share>,
    /// The stack size asked for, if any ([`crate::Builder::stack_size`]).
    pub stack_size: Option<usize>,
    /// Whether the actor runs on a caller's thread ([`crate::Builder::host`]
    /// or [`crate::Builder::host_pool`]).
    pub hosted: bool,
}

/// How a domain's threads' affinity is known.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Affinity {
    /// Each thread's mask, by worker, as read back from that thread after
    /// it was pinned; the engine does not start if one differs from its pin.
    Verified(Vec<CpuSet>),
    /// The threads were not pinned ([`Pinning::None`]): they run anywhere
    /// in the process's mask.
    Unpinned,
    /// Pinning was asked for but the platform cannot set or read a
    /// thread's affinity: declared only.
    Declared,
    /// The threads are a caller's pool's ([`crate::Builder::host_pool`]),
    /// pinned (or not) as the caller chose; weft neither pins nor reads
    /// them back.
    Caller,
}

/// The CUDA devices of the table (feature `cuda`).
#[cfg(feature = "cuda")]
impl DomainTable {
    /// CUDA device `ordinal`.
    pub(crate) fn cuda(&self, ordinal: usize) -> Result<&Domain<CudaEngine>, PlaceError> {
        self.cuda
            .iter()
            .find(|d| d.tensors.place() == Place::Cuda(ordinal))
            .ok_or_else(|| PlaceError::NoSuchDevice {
                device: ordinal,
                running: self.cuda_ordinals(),
            })
    }

    /// The ordinals of the CUDA devices.
    pub(crate) fn cuda_ordinals(&self) -> Vec<usize> {
        self.cuda
            .iter()
            .map(|d| d.tensors.place().index())
            .collect()
    }

    /// Starts the CUDA devices the configuration asks for, each as an actor
    /// whose engine is built (its context made current) on the actor thread,
    /// pinned to the CPU domain nearest the device.
    fn start_cuda(
        topology: &Topology,
        config: &Config,
    ) -> Result<Vec<(usize, Freed, Actor<CudaEngine>)>, BuildError> {
        use std::error::Error;
        use weft_topology::{pin_current_thread, CudaUnavailable};
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
                    weft_cpu::Pinning::None => None,
                    _ => device
                        .nearest_domain(topology)
                        .map(|d| topology.domains()[d].cpus().clone()),
                };
                let (freed, housekeeping) = housekeeping(config.idle_trim);
                let actor = config
                    .actor(actor_name(&config.name, Place::Cuda(ordinal)))
                    .spawn_with(
                        move || -> Result<CudaEngine, Box<dyn Error + Send + Sync>> {
                            if let Some(cpus) = &pin {
                                pin_current_thread(cpus)?;
                            }
                            Ok(CudaEngine::new(CudaEngineConfig { ordinal })?)
                        },
                        housekeeping,
                    )
                    .map_err(|source| BuildError::Actor {
                        domain: ordinal,
                        source,
                    })?;
                Ok((ordinal, freed, actor))
            })
            .collect()
    }
}
