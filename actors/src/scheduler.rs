//! The actor loop: lane scheduling, parking on events, idling, and the
//! decision to finish.
//!
//! # Where a lane lives
//!
//! The loop owns every lane's receiving side (`LaneCore`) and keeps it in
//! exactly one place, which is its state:
//! - `runnable`: a queue served round-robin, up to [`OPS_PER_TURN`] ops
//!   per turn, so a lane with thousands of queued ops delays an op of a
//!   lane that has just become runnable by at most the rest of the turn in
//!   progress and one turn of each lane ahead of it (the test
//!   `lane_fairness` checks the bound). A turn of several ops takes the
//!   mailbox and the round-robin queue once for all of them; it ends early
//!   when a message comes, so a shutdown or another lane's wake-up waits
//!   for one op at most;
//! - `parked`: its head op waits for an event; the event's completion sends
//!   `Wake(lane)` and the lane goes back to `runnable`;
//! - `idle`: it has no op the actor knows of (`queue.rs`); a `Ready(lane)`
//!   brings it back. An idle lane whose handles are all gone is forgotten.
//!
//! # Housekeeping
//!
//! The engine's [`crate::Housekeeping`] runs between ops: after a `Tidy`
//! message (a [`crate::Nudge`]), before the next turn, and when the
//! loop has nothing to do and is about to park, where it may ask to be run
//! again after a while (the loop then parks with that timeout). A `Tidy`
//! taken while finishing is still answered before the loop ends.
//!
//! # Finishing
//!
//! After `Shutdown`, the loop finishes when the intake gate is closed and
//! empty (`gate.rs`), the mailbox has been drained after that, and no lane is
//! runnable or parked. In `Now` mode every op it takes is cancelled instead
//! of run, parked heads included. Ops that are still queued when the loop
//! ends without a shutdown (the thread is dying) are dropped by `Core::drop`,
//! which resolves their tickets with `ActorLost`.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::event::{Dependent, EventState};
use crate::fault::isolate;
use crate::housekeeping::Housekeeping;
use crate::op::{Cancel, Deps, RunOutcome};
use crate::queue::{Envelope, LaneCore};
use crate::shared::{Message, Shared};
use crate::shutdown::ShutdownMode;
use crate::stats::Finish;
use crate::sync::channel::{Receiver, RecvTimeoutError, TryRecvError};
use crate::sync::{cpus::ActorCpu, spin_until, thread, Spinner};
use crate::trace::{Outcome, Record};

/// The most ops of one lane the actor serves in a row before it turns to
/// the next runnable lane and its mailbox (see the module docs).
pub const OPS_PER_TURN: usize = 4;

pub(crate) struct Core<E: 'static> {
    engine: E,
    housekeeping: Box<dyn Housekeeping<E>>,
    /// A `Tidy` came: run the housekeeping before the next op.
    tidy_due: bool,
    shared: Arc<Shared<E>>,
    inbox: Receiver<Message<E>>,
    runnable: VecDeque<LaneCore<E>>,
    /// The lane whose op is running: kept in `self`, not on the stack, so
    /// that if the op kills the thread, `Core::drop` still drains it.
    running: Option<LaneCore<E>>,
    parked: HashMap<u64, LaneCore<E>>,
    idle: HashMap<u64, LaneCore<E>>,
    closing: Option<ShutdownMode>,
    idle_spin: Duration,
    busy_since: Instant,
    /// Where this actor runs, for spinners on its CPU.
    cpu: ActorCpu,
}

impl<E: 'static> Core<E> {
    pub(crate) fn new(
        engine: E,
        housekeeping: Box<dyn Housekeeping<E>>,
        shared: Arc<Shared<E>>,
        inbox: Receiver<Message<E>>,
        idle_spin: Duration,
    ) -> Self {
        Core {
            engine,
            housekeeping,
            tidy_due: false,
            shared,
            inbox,
            runnable: VecDeque::new(),
            running: None,
            parked: HashMap::new(),
            idle: HashMap::new(),
            closing: None,
            idle_spin,
            busy_since: Instant::now(),
            cpu: ActorCpu::default(),
        }
    }

    pub(crate) fn run(mut self) {
        loop {
            self.drain_inbox();
            if self.tidy_due {
                self.tidy(None);
            }
            if let Some(lane) = self.runnable.pop_front() {
                self.step(lane);
                continue;
            }
            if self.finished() {
                // A nudge taken is answered, even the last one.
                if self.tidy_due {
                    self.tidy(None);
                }
                return;
            }
            // `finished` drains the inbox, which may have made lanes runnable.
            if self.runnable.is_empty() {
                self.idle_wait();
            }
        }
    }

    fn drain_inbox(&mut self) {
        while let Ok(message) = self.inbox.try_recv() {
            self.handle(message);
        }
    }

    fn handle(&mut self, message: Message<E>) {
        match message {
            Message::Open(lane) => self.file_idle(lane),
            Message::Ready(id) => {
                if let Some(lane) = self.idle.remove(&id) {
                    self.runnable.push_back(lane);
                }
            }
            Message::Wake(id) => {
                if let Some(lane) = self.parked.remove(&id) {
                    self.runnable.push_back(lane);
                }
            }
            Message::Closed(id) => {
                // A busy lane is forgotten when it next goes idle.
                if let Some(lane) = self.idle.remove(&id) {
                    self.file_idle(lane);
                }
            }
            Message::Shutdown(mode) => {
                self.closing = self.closing.max(Some(mode));
                if mode == ShutdownMode::Now {
                    self.runnable
                        .extend(self.parked.drain().map(|(_, lane)| lane));
                }
            }
            Message::Poke => {}
            Message::Tidy => self.tidy_due = true,
        }
    }

    /// Serves `lane` one turn: takes up to [`OPS_PER_TURN`] of its ops and
    /// runs or cancels each, stopping early when its head op must wait for
    /// an event (the lane is parked), it has none (it goes idle), or a
    /// message waits in the mailbox (a shutdown, another lane's wake-up).
    fn step(&mut self, mut lane: LaneCore<E>) {
        for served in 0..OPS_PER_TURN {
            if served > 0 && !self.inbox.is_empty() {
                break;
            }
            let Some(envelope) = lane.next() else {
                self.file_idle(lane);
                return;
            };
            if self.closing == Some(ShutdownMode::Now) {
                self.count(&lane, Finish::Cancelled);
                self.trace(lane.shared.id, &envelope, None, Outcome::Cancelled);
                envelope.task.cancel(Cancel::Shutdown);
                continue;
            }
            match self.dependencies(&envelope, lane.shared.id) {
                Deps::Pending => {
                    lane.head = Some(envelope);
                    self.parked.insert(lane.shared.id, lane);
                    return;
                }
                Deps::Failed(first) => {
                    self.count(&lane, Finish::DependencyFailed);
                    self.trace(lane.shared.id, &envelope, None, Outcome::DependencyFailed);
                    envelope.task.cancel(Cancel::Dependency(first));
                }
                Deps::Ready => {
                    self.running = Some(lane);
                    self.execute(envelope);
                    lane = self.running.take().expect("the running lane is put back");
                }
            }
        }
        self.runnable.push_back(lane);
    }

    /// Files a lane with no known op as idle, or forgets it once finished.
    fn file_idle(&mut self, lane: LaneCore<E>) {
        if !lane.is_finished() {
            self.idle.insert(lane.shared.id, lane);
        }
    }

    /// Checks the head op's events; subscribes the lane to the first one
    /// still pending (one subscription at a time, so at most one `Wake` per
    /// lane is ever in flight).
    fn dependencies(&self, envelope: &Envelope<E>, lane: u64) -> Deps {
        envelope.task.check_after(&mut |events| {
            for event in events {
                let state = match event.state() {
                    EventState::Pending => {
                        let dependent = Dependent {
                            waker: self.shared.clone(),
                            token: lane,
                        };
                        match event.subscribe(dependent) {
                            None => return Deps::Pending,
                            Some(state) => state,
                        }
                    }
                    state => state,
                };
                if let EventState::Failed(first) = state {
                    return Deps::Failed(first);
                }
            }
            Deps::Ready
        })
    }

    fn execute(&mut self, envelope: Envelope<E>) {
        let lane = &self.running.as_ref().expect("a lane is running").shared;
        let actor = &self.shared;
        // Sampled ops are clocked (queue wait and run time); others are not.
        let clock = envelope.submitted_at.map(|at| (at, Instant::now()));
        actor.gauges.start(lane.id, envelope.task.trace_info().0);
        #[cfg(feature = "tracing")]
        let _span =
            tracing::trace_span!("weft_op", op = envelope.task.trace_info().0, lane = lane.id)
                .entered();
        let mut ran = RunOutcome::Completed;
        envelope.task.run(&mut self.engine, &mut |outcome| {
            actor.gauges.running.store(0, Relaxed);
            if let Some((submitted, started)) = clock {
                let (queued, run_time) = (started - submitted, started.elapsed());
                lane.counters.sample(queued, run_time);
                actor.counters.sample(queued, run_time);
            }
            lane.counters.finish(Finish::Ran(outcome));
            actor.counters.finish(Finish::Ran(outcome));
            ran = outcome;
        });
        if self.shared.timeline.is_some() {
            let outcome = match ran {
                RunOutcome::Completed => Outcome::Completed,
                RunOutcome::Failed => Outcome::Failed,
                RunOutcome::Panicked => Outcome::Panicked,
            };
            let lane = self.running.as_ref().expect("a lane is running").shared.id;
            self.trace(lane, &envelope, clock.map(|(_, started)| started), outcome);
        }
        drop(envelope);
    }

    /// Records an op on the actor's timeline, if it has one; an op that did
    /// not run (no `started`) is a zero-length slice at the present.
    fn trace(&self, lane: u64, envelope: &Envelope<E>, started: Option<Instant>, outcome: Outcome) {
        let Some(timeline) = &self.shared.timeline else {
            return;
        };
        let ended = Instant::now();
        let (label, flow) = envelope.task.trace_info();
        timeline.record(Record {
            lane,
            label,
            submitted: envelope.submitted_at.unwrap_or(ended),
            started: started.unwrap_or(ended),
            ended,
            outcome,
            flow,
        });
    }

    fn count(&self, lane: &LaneCore<E>, how: Finish) {
        lane.shared.counters.finish(how);
        self.shared.counters.finish(how);
    }

    fn finished(&mut self) -> bool {
        if self.closing.is_none() || !self.shared.gate.quiescent_or_arm() {
            return false;
        }
        // The gate is closed and empty: every accepted op's wake-up is in
        // the inbox now (gate.rs), so one more drain sees all of them.
        self.drain_inbox();
        self.runnable.is_empty() && self.parked.is_empty()
    }

    /// Waits for a message with nothing to do: spins a little, then parks,
    /// running the housekeeping before it parks and again whenever the
    /// time it asked for has passed.
    fn idle_wait(&mut self) {
        let idle_since = Instant::now();
        self.shared.gauges.add_busy(idle_since - self.busy_since);
        let mut message = self.spin_for_message(idle_since);
        while message.is_none() {
            match self.tidy(Some(idle_since.elapsed())) {
                None => {
                    message = self.inbox.recv().ok();
                    break;
                }
                // At once: a look, not a wait. A wait of zero still sleeps
                // (4 µs on an idle core here, and a timer's slack of up to
                // 50 µs on one another thread wants), and a housekeeping
                // that polls (MPI's requests) would poll at that pace. (A
                // model keeps the wait, which yields to its other threads.)
                Some(Duration::ZERO) if cfg!(not(weft_loom)) => match self.inbox.try_recv() {
                    Ok(m) => message = Some(m),
                    Err(TryRecvError::Empty) => {}
                    Err(TryRecvError::Disconnected) => break,
                },
                Some(after) => match self.inbox.recv_timeout(after) {
                    Ok(m) => message = Some(m),
                    Err(RecvTimeoutError::Timeout) => {}
                    Err(RecvTimeoutError::Disconnected) => break,
                },
            }
        }
        self.busy_since = Instant::now();
        if let Some(message) = message {
            self.handle(message);
        }
    }

    /// Runs the housekeeping, isolated: a panic there is contained, and the
    /// next turn runs it again.
    fn tidy(&mut self, idle: Option<Duration>) -> Option<Duration> {
        self.tidy_due = false;
        let Core {
            engine,
            housekeeping,
            ..
        } = self;
        isolate(|| housekeeping.tidy(engine, idle)).unwrap_or(None)
    }

    fn spin_for_message(&mut self, since: Instant) -> Option<Message<E>> {
        let mut message = None;
        self.cpu.update();
        spin_until(since, self.idle_spin, Spinner::Actor, || {
            message = self.inbox.try_recv().ok();
            message.is_some()
        });
        message
    }

    /// Drops every op still queued anywhere; each resolves `ActorLost`.
    fn drop_all_queued(&mut self) {
        let lanes: Vec<LaneCore<E>> = self
            .running
            .take()
            .into_iter()
            .chain(self.runnable.drain(..))
            .chain(self.parked.drain().map(|(_, l)| l))
            .chain(self.idle.drain().map(|(_, l)| l))
            .collect();
        for mut lane in lanes {
            if let Some(head) = lane.head.take() {
                self.count(&lane, Finish::Lost);
                drop(head);
            }
            while let Some(envelope) = lane.take() {
                self.count(&lane, Finish::Lost);
                drop(envelope);
            }
            self.idle.insert(lane.shared.id, lane);
        }
        while let Ok(message) = self.inbox.try_recv() {
            if let Message::Open(lane) = message {
                self.idle.insert(lane.shared.id, lane);
            }
        }
    }
}

impl<E: 'static> Drop for Core<E> {
    /// After a normal finish nothing is left. When the thread is dying,
    /// close intake and keep dropping queued ops until no submitter is
    /// inside the gate, so that none is left in a queue nobody reads.
    fn drop(&mut self) {
        let gauges = &self.shared.gauges;
        if gauges.running.swap(0, Relaxed) != 0 {
            // The op that was running when the thread died.
            self.shared.counters.finish(Finish::Lost);
        }
        self.shared.gate.close();
        loop {
            self.drop_all_queued();
            if self.shared.gate.is_quiescent() {
                self.drop_all_queued();
                break;
            }
            thread::yield_now();
        }
        // The engine is dropped next, with the fields.
        self.shared.gauges.ending.store(true, Relaxed);
    }
}
