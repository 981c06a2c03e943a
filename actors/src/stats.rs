//! Per-actor and per-lane counters, and their snapshots.
//!
//! Counters are plain std atomics even under loom: they are reports, not a
//! protocol anything waits on. Counters the actor alone writes are bumped
//! with a load and a store instead of a read-modify-write.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use crate::context::ActorId;
use crate::op::RunOutcome;
use crate::sync::CachePadded;

/// Sample the queue wait of one op in this many per lane.
pub(crate) const QUEUE_WAIT_SAMPLING: u64 = 16;

/// Op counters. `submitted` is written by submitters, everything else by the
/// actor alone; the two sides sit on separate cache lines.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) submitted: CachePadded<AtomicU64>,
    done: CachePadded<DoneCounters>,
}

#[derive(Debug, Default)]
struct DoneCounters {
    completed: AtomicU64,
    failed: AtomicU64,
    panicked: AtomicU64,
    cancelled: AtomicU64,
    lost: AtomicU64,
    queue_wait: Sampler,
    run_time: Sampler,
}

/// Sum, count and maximum of sampled durations; written by the actor only.
#[derive(Debug, Default)]
struct Sampler {
    samples: AtomicU64,
    total_ns: AtomicU64,
    max_ns: AtomicU64,
}

impl Sampler {
    fn add(&self, time: Duration) {
        let ns = u64::try_from(time.as_nanos()).unwrap_or(u64::MAX);
        bump(&self.samples);
        self.total_ns
            .store(self.total_ns.load(Relaxed).saturating_add(ns), Relaxed);
        if ns > self.max_ns.load(Relaxed) {
            self.max_ns.store(ns, Relaxed);
        }
    }

    fn snapshot(&self) -> SampledTime {
        let samples = self.samples.load(Relaxed);
        SampledTime {
            samples,
            mean: Duration::from_nanos(
                self.total_ns
                    .load(Relaxed)
                    .checked_div(samples)
                    .unwrap_or(0),
            ),
            max: Duration::from_nanos(self.max_ns.load(Relaxed)),
        }
    }
}

/// Adds one to a counter only the actor thread writes.
fn bump(counter: &AtomicU64) {
    counter.store(counter.load(Relaxed) + 1, Relaxed);
}

/// How an op left its lane, for counting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Finish {
    Ran(RunOutcome),
    DependencyFailed,
    Cancelled,
    Lost,
}

impl Counters {
    pub(crate) fn finish(&self, how: Finish) {
        let d = &*self.done;
        bump(match how {
            Finish::Ran(RunOutcome::Completed) => &d.completed,
            Finish::Ran(RunOutcome::Failed) | Finish::DependencyFailed => &d.failed,
            Finish::Ran(RunOutcome::Panicked) => &d.panicked,
            Finish::Cancelled => &d.cancelled,
            Finish::Lost => &d.lost,
        });
    }

    /// Records a sampled op: how long it queued and how long it ran.
    pub(crate) fn sample(&self, queued: Duration, ran: Duration) {
        self.done.queue_wait.add(queued);
        self.done.run_time.add(ran);
    }

    pub(crate) fn snapshot(&self) -> OpCounts {
        let d = &*self.done;
        let submitted = self.submitted.load(Relaxed);
        let completed = d.completed.load(Relaxed);
        let failed = d.failed.load(Relaxed);
        let panicked = d.panicked.load(Relaxed);
        let cancelled = d.cancelled.load(Relaxed);
        let lost = d.lost.load(Relaxed);
        let done = completed + failed + panicked + cancelled + lost;
        OpCounts {
            submitted,
            queued: submitted.saturating_sub(done),
            completed,
            failed,
            panicked,
            cancelled,
            lost,
            queue_wait: d.queue_wait.snapshot(),
            run_time: d.run_time.snapshot(),
        }
    }
}

/// The actor-wide gauges next to its counters.
#[derive(Debug, Default)]
pub(crate) struct ActorGauges {
    /// The lane whose op runs, plus one; 0 when none runs.
    pub(crate) running: AtomicU64,
    pub(crate) busy_ns: AtomicU64,
}

impl ActorGauges {
    pub(crate) fn add_busy(&self, busy: Duration) {
        let ns = u64::try_from(busy.as_nanos()).unwrap_or(u64::MAX);
        self.busy_ns
            .store(self.busy_ns.load(Relaxed).saturating_add(ns), Relaxed);
    }
}

/// A time measured on sampled ops: one in every 16 submitted on each lane
/// is clocked, so that the others pay for no clock reads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SampledTime {
    /// Ops measured.
    pub samples: u64,
    /// Mean over the measured ops.
    pub mean: Duration,
    /// Longest measured.
    pub max: Duration,
}

/// Op counts of a lane or an actor.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OpCounts {
    /// Ops accepted by `submit`.
    pub submitted: u64,
    /// Ops accepted and not yet finished.
    pub queued: u64,
    /// Ops that ran and returned a value.
    pub completed: u64,
    /// Ops that returned an error, or did not run because a dependency failed.
    pub failed: u64,
    /// Ops that panicked.
    pub panicked: u64,
    /// Ops cancelled by shutdown.
    pub cancelled: u64,
    /// Ops lost with their actor thread.
    pub lost: u64,
    /// Sampled queue wait: from submission to the start of the run.
    pub queue_wait: SampledTime,
    /// Sampled run time of the op's body.
    pub run_time: SampledTime,
}

/// A snapshot of one lane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaneStats {
    /// The lane's id within its actor.
    pub lane: u64,
    /// Its op counts.
    pub ops: OpCounts,
}

/// A snapshot of one actor and its live lanes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActorStats {
    /// The actor.
    pub actor: ActorId,
    /// Its thread name.
    pub name: String,
    /// The lane whose op was running when the snapshot was taken.
    pub running: Option<u64>,
    /// Time the actor spent out of its idle wait (running ops, and the
    /// scheduling around them).
    pub busy: Duration,
    /// Op counts over the actor's life, all lanes together.
    pub ops: OpCounts,
    /// Lanes still open.
    pub lanes: Vec<LaneStats>,
}

impl ActorStats {
    pub(crate) fn collect(
        actor: ActorId,
        name: &str,
        counters: &Counters,
        gauges: &ActorGauges,
        lanes: Vec<(u64, &Counters)>,
    ) -> ActorStats {
        ActorStats {
            actor,
            name: name.to_owned(),
            running: gauges.running.load(Relaxed).checked_sub(1),
            busy: Duration::from_nanos(gauges.busy_ns.load(Relaxed)),
            ops: counters.snapshot(),
            lanes: lanes
                .into_iter()
                .map(|(lane, c)| LaneStats {
                    lane,
                    ops: c.snapshot(),
                })
                .collect(),
        }
    }
}

impl fmt::Display for ActorStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let o = &self.ops;
        writeln!(
            f,
            "{} ({}): {} queued, {} completed, {} failed, {} panicked, {} cancelled, {} lost; \
             busy {:?}; run mean {:?}; queue wait mean {:?} max {:?}{}",
            self.name,
            self.actor,
            o.queued,
            o.completed,
            o.failed,
            o.panicked,
            o.cancelled,
            o.lost,
            self.busy,
            o.run_time.mean,
            o.queue_wait.mean,
            o.queue_wait.max,
            match self.running {
                Some(lane) => format!("; running lane {lane}"),
                None => String::new(),
            },
        )?;
        for lane in &self.lanes {
            let o = &lane.ops;
            writeln!(
                f,
                "  lane {:>4}: {:>8} queued {:>10} completed {:>6} failed {:>6} panicked \
                 {:>6} cancelled; run mean {:?}, wait mean {:?}",
                lane.lane,
                o.queued,
                o.completed,
                o.failed,
                o.panicked,
                o.cancelled,
                o.run_time.mean,
                o.queue_wait.mean
            )?;
        }
        Ok(())
    }
}
