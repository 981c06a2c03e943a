//! Actors: the builder, the user's handle, and starting and joining the
//! actor thread. The state the actor shares with its lanes is in
//! `shared.rs`, the loop the thread runs in `scheduler.rs`.

use std::error::Error;
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::context::{current_actor, mark_current_thread_for, ActorId};
use crate::fault::{drop_isolated, take_message};
use crate::housekeeping::{Housekeeping, Nudge};
use crate::lane::Lane;
use crate::scheduler::Core;
use crate::shared::{Message, Shared};
use crate::shutdown::{ShutdownError, ShutdownMode, ShutdownReport, Stuck};
use crate::stats::ActorStats;
use crate::sync::channel::{self, RecvTimeoutError};
use crate::sync::{thread, AtomicUsize, Mutex, Ordering};
use crate::trace::Trace;

/// Configures and starts an actor.
#[derive(Debug, Clone)]
pub struct ActorBuilder {
    name: String,
    lane_capacity: usize,
    idle_spin: Duration,
    wait_spin: Duration,
    stack_size: Option<usize>,
    trace: Option<Trace>,
    /// Where the actor's loop runs, if not on a thread of its own.
    host: Option<Host>,
    /// How long `spawn` waits for a host to begin the actor's job.
    host_timeout: Duration,
}

/// Default number of ops one lane holds before `submit` waits.
pub const DEFAULT_LANE_CAPACITY: usize = 1024;

/// The largest lane capacity. A lane's queue grows in small blocks as ops
/// arrive, so the capacity costs nothing until it is used; past this many
/// queued ops (hundreds of gigabytes of them) a bound bounds nothing.
pub const MAX_LANE_CAPACITY: usize = u32::MAX as usize;
/// Default time an idle actor spins before it parks.
pub const DEFAULT_IDLE_SPIN: Duration = Duration::from_micros(50);
/// Default time `Ticket::wait` spins before it parks.
pub const DEFAULT_WAIT_SPIN: Duration = Duration::from_micros(20);
/// Default time `spawn` waits for a host to begin an actor's job
/// ([`ActorBuilder::host_timeout`]).
pub const DEFAULT_HOST_TIMEOUT: Duration = Duration::from_secs(10);

/// An actor could not be started.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SpawnError {
    /// A lane capacity of zero would make every `try_submit` fail.
    #[error("lane capacity must be at least 1, got 0")]
    ZeroLaneCapacity,
    /// A lane capacity above [`MAX_LANE_CAPACITY`].
    #[error("lane capacity {capacity} is above the largest, {MAX_LANE_CAPACITY}")]
    LaneCapacity {
        /// The capacity asked for.
        capacity: usize,
    },
    /// The name holds a NUL byte, which no thread name may.
    #[error("actor name {name:?} contains a NUL byte")]
    NulInName {
        /// The name given.
        name: String,
    },
    /// The OS refused the thread.
    #[error("cannot start actor thread `{name}`: {source}")]
    Thread {
        /// The thread name.
        name: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The engine factory returned an error.
    #[error("the engine of actor `{name}` failed to start: {source}")]
    Factory {
        /// The thread name.
        name: String,
        /// The factory's error.
        source: Box<dyn Error + Send + Sync>,
    },
    /// The host of [`ActorBuilder::host`] refused the actor's job, or the
    /// job was run where it would have waited for itself.
    #[error("the host of actor `{name}` did not take its job: {source}")]
    Launch {
        /// The actor's name.
        name: String,
        /// Why.
        source: Box<dyn Error + Send + Sync>,
    },
    /// The host of [`ActorBuilder::host`] took the actor's job but did not
    /// begin it within [`ActorBuilder::host_timeout`]: the job does nothing
    /// if it is run later.
    #[error(
        "the host of actor `{name}` did not begin its job within {timeout:?} \
         (a host must run the job it takes; see ActorBuilder::host_timeout)"
    )]
    HostTimedOut {
        /// The actor's name.
        name: String,
        /// How long the spawn waited.
        timeout: Duration,
    },
    /// The engine factory panicked.
    #[error("the engine factory of actor `{name}` panicked: {message}")]
    FactoryPanicked {
        /// The thread name.
        name: String,
        /// The panic message.
        message: String,
    },
}

impl ActorBuilder {
    /// A builder for an actor whose thread is called `name`.
    pub fn new(name: impl Into<String>) -> Self {
        ActorBuilder {
            name: name.into(),
            lane_capacity: DEFAULT_LANE_CAPACITY,
            idle_spin: DEFAULT_IDLE_SPIN,
            wait_spin: DEFAULT_WAIT_SPIN,
            stack_size: None,
            trace: None,
            host: None,
            host_timeout: DEFAULT_HOST_TIMEOUT,
        }
    }

    /// Ops one lane holds before `submit` waits (1 to [`MAX_LANE_CAPACITY`]).
    pub fn lane_capacity(mut self, capacity: usize) -> Self {
        self.lane_capacity = capacity;
        self
    }

    /// How long the idle actor spins on its mailbox before it parks. Zero
    /// parks at once (least CPU, slowest wake-up).
    pub fn idle_spin(mut self, spin: Duration) -> Self {
        self.idle_spin = spin;
        self
    }

    /// How long `Ticket::wait` spins before it parks.
    pub fn wait_spin(mut self, spin: Duration) -> Self {
        self.wait_spin = spin;
        self
    }

    /// Records every op of the actor in `trace` (see [`Trace`]).
    pub fn trace(mut self, trace: &Trace) -> Self {
        self.trace = Some(trace.clone());
        self
    }

    /// The actor thread's stack size (not used with [`ActorBuilder::host`]).
    pub fn stack_size(mut self, bytes: usize) -> Self {
        self.stack_size = Some(bytes);
        self
    }

    /// Runs the actor on a thread the caller owns instead of one of its
    /// own: `spawn` hands the actor's whole life (building its engine,
    /// its loop, dropping its engine) to `launch` as an [`ActorJob`], and
    /// `launch` gives it to another thread, which calls [`ActorJob::run`]:
    /// a thread of the caller's rayon pool (`pool.spawn(|| job.run())`),
    /// or one it spawned and pinned. That thread is the actor's until the
    /// actor shuts down; a shutdown waits for the job to return. The rule
    /// stays: one thread owns the engine.
    ///
    /// `spawn` waits for the engine to be built, so `launch` must not run
    /// the job itself: a job run on the thread that is spawning it is
    /// refused ([`SpawnError::Launch`]) instead of waiting for itself.
    ///
    /// ```
    /// use weft_actors::ActorBuilder;
    ///
    /// let actor = ActorBuilder::new("hosted")
    ///     .host(|job| {
    ///         // A thread the application starts and names (and may pin).
    ///         std::thread::Builder::new()
    ///             .name("app-worker".into())
    ///             .spawn(move || job.run())?;
    ///         Ok(())
    ///     })
    ///     .spawn(|| Ok::<_, std::io::Error>(0u64))?;
    /// let here = actor.lane()?.run(|_| std::thread::current().name().map(str::to_owned))?;
    /// assert_eq!(here.wait()?.as_deref(), Some("app-worker"));
    /// actor.shutdown()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn host<F>(mut self, launch: F) -> Self
    where
        F: Fn(ActorJob) -> Result<(), Box<dyn Error + Send + Sync>> + Send + Sync + 'static,
    {
        self.host = Some(Host(Arc::new(launch)));
        self
    }

    /// How long `spawn` waits for a host ([`ActorBuilder::host`]) to begin
    /// the job it took (default [`DEFAULT_HOST_TIMEOUT`], 10 s;
    /// `Duration::MAX`: for ever). Past it, `spawn` fails with
    /// [`SpawnError::HostTimedOut`] and the job, if it is run later,
    /// returns at once. Only the start is timed: once begun, the engine is
    /// built in its own time.
    pub fn host_timeout(mut self, timeout: Duration) -> Self {
        self.host_timeout = timeout;
        self
    }

    /// Starts the actor thread, builds the engine there with `factory`, and
    /// returns once the engine is built.
    ///
    /// The engine never leaves the actor thread: it need not be `Send`, and
    /// it is dropped on that thread at shutdown.
    ///
    /// # Errors
    ///
    /// [`SpawnError`] if the capacity is zero, the name holds a NUL byte,
    /// the thread cannot start, or the factory fails or panics.
    pub fn spawn<E, F, Er>(self, factory: F) -> Result<Actor<E>, SpawnError>
    where
        E: 'static,
        F: FnOnce() -> Result<E, Er> + Send + 'static,
        Er: Into<Box<dyn Error + Send + Sync>>,
    {
        self.spawn_with(factory, |_: &mut E, _| None)
    }

    /// As [`ActorBuilder::spawn`], and the actor runs `housekeeping` for
    /// its engine between ops (see [`Housekeeping`]; [`Actor::nudge`]
    /// wakes it for that).
    ///
    /// # Errors
    ///
    /// As [`ActorBuilder::spawn`].
    pub fn spawn_with<E, F, Er, H>(
        self,
        factory: F,
        housekeeping: H,
    ) -> Result<Actor<E>, SpawnError>
    where
        E: 'static,
        F: FnOnce() -> Result<E, Er> + Send + 'static,
        Er: Into<Box<dyn Error + Send + Sync>>,
        H: Housekeeping<E>,
    {
        if self.lane_capacity == 0 {
            return Err(SpawnError::ZeroLaneCapacity);
        }
        if self.lane_capacity > MAX_LANE_CAPACITY {
            return Err(SpawnError::LaneCapacity {
                capacity: self.lane_capacity,
            });
        }
        if self.name.contains('\0') {
            // `thread::Builder::spawn` would panic on it.
            return Err(SpawnError::NulInName { name: self.name });
        }
        let (mailbox, inbox) = channel::unbounded();
        let shared = Arc::new(Shared::new(
            self.name.clone(),
            mailbox,
            self.lane_capacity,
            self.wait_spin,
            self.trace.as_ref().map(|t| t.timeline(&self.name)),
        ));
        let (started_tx, started_rx) = channel::bounded::<Result<(), SpawnError>>(1);
        let thread_shared = shared.clone();
        let idle_spin = self.idle_spin;
        let name = self.name.clone();
        // Held by the thread until its very end, engine dropped: a
        // shutdown with a deadline waits for it to disconnect.
        let (exit_tx, exited) = channel::bounded::<()>(1);
        let body = move || {
            let _exit = exit_tx;
            // A caller's thread is given back unmarked when the actor ends.
            let _mark = mark_current_thread_for(thread_shared.id);
            #[cfg(feature = "tracing")]
            let _span =
                tracing::info_span!("weft_actor", name = %name, id = %thread_shared.id).entered();
            let engine = match catch_unwind(AssertUnwindSafe(factory)) {
                Ok(Ok(engine)) => engine,
                Ok(Err(error)) => {
                    let _ = started_tx.send(Err(SpawnError::Factory {
                        name,
                        source: error.into(),
                    }));
                    return;
                }
                Err(payload) => {
                    let _ = started_tx.send(Err(SpawnError::FactoryPanicked {
                        name,
                        message: take_message(payload),
                    }));
                    return;
                }
            };
            let _ = started_tx.send(Ok(()));
            drop(started_tx);
            Core::new(
                engine,
                Box::new(housekeeping),
                thread_shared,
                inbox,
                idle_spin,
            )
            .run();
        };
        let running = match &self.host {
            None => {
                let mut builder = thread::Builder::new().name(self.name.clone());
                if let Some(bytes) = self.stack_size {
                    builder = builder.stack_size(bytes);
                }
                let thread = builder.spawn(body).map_err(|source| SpawnError::Thread {
                    name: self.name.clone(),
                    source,
                })?;
                Running::Thread(thread)
            }
            Some(host) => host.launch(&self.name, shared.id, Box::new(body))?,
        };
        let started = match &running {
            Running::Hosted { start, .. } if cfg!(not(weft_loom)) => {
                match started_rx.recv_timeout(self.host_timeout) {
                    // The host kept the job without running it: the job is
                    // abandoned before it can begin, or it has just begun.
                    Err(RecvTimeoutError::Timeout) if start.abandon() => {
                        return Err(SpawnError::HostTimedOut {
                            name: self.name,
                            timeout: self.host_timeout,
                        });
                    }
                    Err(RecvTimeoutError::Timeout) => started_rx.recv().ok(),
                    started => started.ok(),
                }
            }
            _ => started_rx.recv().ok(),
        };
        match started {
            Some(Ok(())) => Ok(Actor {
                owner: Arc::new(Owner {
                    shared,
                    thread: Mutex::new(Some(running)),
                    report: Mutex::new(None),
                    exited,
                }),
            }),
            Some(Err(error)) => {
                let _ = running.finish();
                Err(error)
            }
            None => match running.finish() {
                Err(Ended::Refused(source)) => Err(SpawnError::Launch {
                    name: self.name,
                    source,
                }),
                died => Err(SpawnError::FactoryPanicked {
                    name: self.name,
                    message: died.err().map_or_else(
                        || "the actor thread ended before its engine was built".to_owned(),
                        Ended::message,
                    ),
                }),
            },
        }
    }
}

/// Where a caller's threads take actors' jobs ([`ActorBuilder::host`]).
#[derive(Clone)]
struct Host(Arc<Launch>);

/// A host's launcher.
type Launch = dyn Fn(ActorJob) -> Result<(), Box<dyn Error + Send + Sync>> + Send + Sync;

impl fmt::Debug for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Host")
    }
}

std::thread_local! {
    /// Set while this thread is handing a job to a host: a job run here
    /// would wait for itself.
    static LAUNCHING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

impl Host {
    /// Hands the actor's life, `body`, to the host.
    fn launch(
        &self,
        name: &str,
        actor: ActorId,
        body: Box<dyn FnOnce() + Send>,
    ) -> Result<Running, SpawnError> {
        let (ended_tx, ended) = channel::bounded::<Ended>(1);
        let start = Arc::new(JobStart(AtomicUsize::new(JobStart::WAITING)));
        let job = ActorJob {
            name: name.to_owned(),
            actor,
            body: Some(body),
            ended: ended_tx,
            start: start.clone(),
            held: Vec::new(),
        };
        LAUNCHING.with(|l| l.set(true));
        let launched = catch_unwind(AssertUnwindSafe(|| (self.0)(job)));
        LAUNCHING.with(|l| l.set(false));
        let refused = |source| SpawnError::Launch {
            name: name.to_owned(),
            source,
        };
        match launched {
            Ok(Ok(())) => Ok(Running::Hosted { ended, start }),
            Ok(Err(source)) => Err(refused(source)),
            Err(payload) => Err(refused(
                format!("the host panicked: {}", take_message(payload)).into(),
            )),
        }
    }
}

/// An actor's whole life, for a caller's thread to run
/// ([`ActorBuilder::host`]).
pub struct ActorJob {
    name: String,
    actor: ActorId,
    body: Option<Box<dyn FnOnce() + Send>>,
    ended: channel::Sender<Ended>,
    start: Arc<JobStart>,
    /// What the host lends the actor for its life ([`ActorJob::hold`]).
    held: Vec<Box<dyn std::any::Any + Send>>,
}

/// Whether a hosted job has begun, or the spawn waiting for it has given
/// up: whichever of the two steps first decides.
struct JobStart(AtomicUsize);

impl JobStart {
    const WAITING: usize = 0;
    const BEGUN: usize = 1;
    const ABANDONED: usize = 2;

    /// The job begins, unless it was abandoned.
    fn begin(&self) -> bool {
        self.decide(JobStart::BEGUN)
    }

    /// The spawn gives up on the job, unless it has begun.
    fn abandon(&self) -> bool {
        self.decide(JobStart::ABANDONED)
    }

    fn decide(&self, to: usize) -> bool {
        let from = JobStart::WAITING;
        (self.0)
            .compare_exchange(from, to, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }
}

impl fmt::Debug for ActorJob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ActorJob")
            .field("name", &self.name)
            .finish()
    }
}

impl ActorJob {
    /// The actor's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The actor's id: what its thread is marked as while the job runs
    /// ([`crate::current_actor`]).
    pub fn actor(&self) -> ActorId {
        self.actor
    }

    /// Keeps `value` for as long as the actor runs: it is dropped on the
    /// job's thread once the actor has ended, before a shutdown that waits
    /// for the actor returns (or with the job, if the job never runs). For
    /// what a host lends the actor for its life, such as a mark on the
    /// workers of its pool ([`crate::lend_workers`]).
    pub fn hold(mut self, value: impl Send + 'static) -> Self {
        self.held.push(Box::new(value));
        self
    }

    /// Runs the actor on the calling thread: builds its engine, serves its
    /// lanes and returns once it has shut down and dropped its engine. A
    /// panic of the actor's own machinery is caught and reported to the
    /// shutdown, not passed on to the caller's thread.
    pub fn run(mut self) {
        let Some(body) = self.body.take() else {
            return;
        };
        let held = std::mem::take(&mut self.held);
        if !self.start.begin() {
            // The spawn gave up waiting ([`SpawnError::HostTimedOut`]): the
            // actor was never handed out, and its engine is not built.
            drop_isolated((body, held));
            return;
        }
        if LAUNCHING.with(std::cell::Cell::get) {
            drop_isolated(held);
            let _ = self.ended.send(Ended::Refused(
                "the job was run on the thread that is spawning the actor, which waits for it: \
                 the host must hand it to another thread"
                    .into(),
            ));
            return;
        }
        let ended = match catch_unwind(AssertUnwindSafe(body)) {
            Ok(()) => Ended::Returned,
            Err(payload) => Ended::Panicked(take_message(payload)),
        };
        // Given back before the shutdown waiting for this job returns.
        drop_isolated(held);
        let _ = self.ended.send(ended);
    }
}

/// How an actor's thread is waited for.
enum Running {
    /// A thread of its own, joined.
    Thread(thread::JoinHandle<()>),
    /// A caller's thread: the job says when it has ended.
    Hosted {
        ended: channel::Receiver<Ended>,
        start: Arc<JobStart>,
    },
}

/// How a hosted job ended, when it did not simply return.
enum Ended {
    Returned,
    Panicked(String),
    /// Run where it would have waited for itself.
    Refused(Box<dyn Error + Send + Sync>),
}

impl Ended {
    fn message(self) -> String {
        match self {
            Ended::Returned => "the actor's job returned".to_owned(),
            Ended::Panicked(message) => message,
            Ended::Refused(source) => source.to_string(),
        }
    }
}

impl Running {
    /// Waits for the actor's thread to end: `Ok` if it returned.
    fn finish(self) -> Result<(), Ended> {
        match self {
            Running::Thread(thread) => thread
                .join()
                .map_err(|payload| Ended::Panicked(take_message(payload))),
            Running::Hosted { ended, .. } => match ended.recv() {
                Ok(Ended::Returned) => Ok(()),
                Ok(other) => Err(other),
                Err(_) => Err(Ended::Panicked(
                    "the host dropped the actor's job without running it".to_owned(),
                )),
            },
        }
    }
}

/// A handle to a running actor. Cheap to clone; when the last clone is
/// dropped the actor shuts down as with [`Actor::shutdown`] (from an actor
/// thread it is only begun, and the actor finishes on its own).
pub struct Actor<E> {
    owner: Arc<Owner<E>>,
}

struct Owner<E> {
    shared: Arc<Shared<E>>,
    thread: Mutex<Option<Running>>,
    report: Mutex<Option<ShutdownReport>>,
    /// Disconnects when the actor thread ends (nothing is ever sent).
    exited: channel::Receiver<()>,
}

impl<E> Clone for Actor<E> {
    fn clone(&self) -> Self {
        Actor {
            owner: self.owner.clone(),
        }
    }
}

impl<E> fmt::Debug for Actor<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Actor")
            .field("id", &self.owner.shared.id)
            .field("name", &self.owner.shared.name)
            .finish()
    }
}

/// The actor no longer accepts work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("actor `{actor}` is shut down")]
pub struct ActorClosed {
    /// The actor's thread name.
    pub actor: String,
}

impl<E: 'static> Actor<E> {
    /// The actor's id.
    pub fn id(&self) -> ActorId {
        self.owner.shared.id
    }

    /// The actor's thread name.
    pub fn name(&self) -> &str {
        &self.owner.shared.name
    }

    /// Opens a new lane into this actor.
    ///
    /// # Errors
    ///
    /// [`ActorClosed`] once shutdown has begun or the actor thread died.
    pub fn lane(&self) -> Result<Lane<E>, ActorClosed> {
        Lane::open(&self.owner.shared).ok_or_else(|| ActorClosed {
            actor: self.owner.shared.name.clone(),
        })
    }

    /// A handle that wakes the actor to run its housekeeping
    /// ([`ActorBuilder::spawn_with`]).
    pub fn nudge(&self) -> Nudge {
        Nudge(self.owner.shared.clone())
    }

    /// Whether the actor still accepts work.
    pub fn is_open(&self) -> bool {
        !self.owner.shared.gate.is_closed()
    }

    /// A snapshot of the actor's counters and open lanes.
    pub fn stats(&self) -> ActorStats {
        self.owner.shared.stats()
    }

    /// Stops intake, runs every op already queued, joins the thread.
    /// Repeated calls return the same report.
    ///
    /// # Errors
    ///
    /// [`ShutdownError::WouldDeadlock`] when called from an actor thread or
    /// pool worker: the shutdown has begun but is not waited for.
    pub fn shutdown(&self) -> Result<ShutdownReport, ShutdownError> {
        self.owner.stop(ShutdownMode::Drain)
    }

    /// Stops intake, lets the running op finish, cancels every queued op
    /// (their tickets get `Cancelled`), joins the thread.
    ///
    /// # Errors
    ///
    /// As [`Actor::shutdown`].
    pub fn shutdown_now(&self) -> Result<ShutdownReport, ShutdownError> {
        self.owner.stop(ShutdownMode::Now)
    }

    /// As [`Actor::shutdown_now`], waiting at most `timeout` for the
    /// running op to finish and the thread to end: the way out of an op
    /// that never returns. `Duration::ZERO` begins the shutdown and only
    /// looks.
    ///
    /// # Errors
    ///
    /// [`ShutdownError::TimedOut`] naming what the actor was doing (the
    /// running op's lane and label, or dropping its engine) when the time
    /// ran out; the shutdown goes on, and a later call joins it. As
    /// [`Actor::shutdown`] from an actor thread.
    pub fn shutdown_timeout(&self, timeout: Duration) -> Result<ShutdownReport, ShutdownError> {
        self.stop_within(ShutdownMode::Now, timeout)
    }

    /// As [`Actor::shutdown`], waiting at most `timeout`: every queued op
    /// still runs, for an actor whose ops are promises to others (the MPI
    /// actor's collectives: a rank that cancelled one would leave the
    /// other ranks waiting for it).
    ///
    /// # Errors
    ///
    /// As [`Actor::shutdown_timeout`].
    pub fn drain_timeout(&self, timeout: Duration) -> Result<ShutdownReport, ShutdownError> {
        self.stop_within(ShutdownMode::Drain, timeout)
    }

    fn stop_within(
        &self,
        mode: ShutdownMode,
        timeout: Duration,
    ) -> Result<ShutdownReport, ShutdownError> {
        let owner = &self.owner;
        owner.begin(mode)?;
        owner
            .wait_until(Instant::now().checked_add(timeout))
            .map_err(|stuck| ShutdownError::TimedOut {
                timeout,
                stuck: vec![stuck],
            })?;
        Ok(owner.join())
    }
}

impl<E> Owner<E> {
    fn stop(&self, mode: ShutdownMode) -> Result<ShutdownReport, ShutdownError> {
        self.begin(mode)?;
        Ok(self.join())
    }

    /// Closes intake and tells the loop how to finish.
    fn begin(&self, mode: ShutdownMode) -> Result<(), ShutdownError> {
        let shared = &self.shared;
        shared.gate.close();
        let _ = shared.mailbox.send(Message::Shutdown(mode));
        if current_actor().is_some() {
            return Err(ShutdownError::WouldDeadlock {
                actor: shared.name.clone(),
            });
        }
        Ok(())
    }

    /// Waits until the thread has ended or `deadline` has passed; then,
    /// what it is doing.
    fn wait_until(&self, deadline: Option<Instant>) -> Result<(), Stuck> {
        let Some(deadline) = deadline else {
            return Ok(());
        };
        let left = deadline.saturating_duration_since(Instant::now());
        match self.exited.recv_timeout(left) {
            Err(RecvTimeoutError::Timeout) => Err(Stuck {
                actor: self.shared.name.clone(),
                doing: self.shared.doing(),
            }),
            // Disconnected: the thread has ended (nothing is ever sent).
            _ => Ok(()),
        }
    }

    /// Joins the thread (once; later calls give the same report).
    fn join(&self) -> ShutdownReport {
        let shared = &self.shared;
        let mut thread = self.thread.lock();
        if let Some(running) = thread.take() {
            let died = running.finish().err().map(Ended::message);
            *self.report.lock() = Some(shared.report(died));
        }
        drop(thread);
        self.report
            .lock()
            .clone()
            .unwrap_or_else(|| shared.report(None))
    }
}

impl<E> Drop for Owner<E> {
    fn drop(&mut self) {
        let _ = self.stop(ShutdownMode::Drain);
    }
}
