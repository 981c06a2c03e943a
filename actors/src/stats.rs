//! Per-actor and per-lane counters, and their snapshots.
//!
//! Counters are plain std atomics even under loom: they are reports, not a
//! protocol anything waits on. Counters the actor alone writes are bumped
//! with a load and a store instead of a read-modify-write.

use std::fmt;
use std::sync::atomic::{
    AtomicBool, AtomicU64,
    Ordering::{Acquire, Relaxed, Release},
};
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

/// Buckets of the latency histograms: bucket `i` counts times in
/// `[2^i, 2^(i+1))` ns (bucket 0 also holds 0 ns; the last, everything
/// from about 2 seconds up).
pub const HISTOGRAM_BUCKETS: usize = 32;

/// Sum, count, maximum and log-2 histogram of sampled durations; written
/// by the actor only.
#[derive(Debug, Default)]
struct Sampler {
    samples: AtomicU64,
    total_ns: AtomicU64,
    max_ns: AtomicU64,
    buckets: [AtomicU64; HISTOGRAM_BUCKETS],
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
        let bucket = (u64::BITS - ns.leading_zeros()).saturating_sub(1) as usize;
        bump(&self.buckets[bucket.min(HISTOGRAM_BUCKETS - 1)]);
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
            histogram: std::array::from_fn(|i| self.buckets[i].load(Relaxed)),
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
    /// The label of the op that runs, written before `running` (so a
    /// reader that sees a lane there reads its op's label or a later one).
    /// Not a modelled lock: it guards one word and is never held across
    /// anything that waits.
    pub(crate) label: parking_lot::Mutex<&'static str>,
    /// The loop has ended: the actor thread drops its engine.
    pub(crate) ending: AtomicBool,
    pub(crate) busy_ns: AtomicU64,
}

impl ActorGauges {
    /// The lane whose op runs.
    pub(crate) fn running(&self) -> Option<u64> {
        self.running.load(Acquire).checked_sub(1)
    }

    /// Marks `label`'s op of `lane` as running.
    pub(crate) fn start(&self, lane: u64, label: &'static str) {
        *self.label.lock() = label;
        self.running.store(lane + 1, Release);
    }

    pub(crate) fn add_busy(&self, busy: Duration) {
        let ns = u64::try_from(busy.as_nanos()).unwrap_or(u64::MAX);
        self.busy_ns
            .store(self.busy_ns.load(Relaxed).saturating_add(ns), Relaxed);
    }
}

/// A time measured on sampled ops: one in every 16 submitted on each lane
/// is clocked, so that the others pay for no clock reads (every op, while
/// the actor is traced).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SampledTime {
    /// Ops measured.
    pub samples: u64,
    /// Mean over the measured ops.
    pub mean: Duration,
    /// Longest measured.
    pub max: Duration,
    /// Measured ops by magnitude: entry `i` counts times in `[2^i, 2^(i+1))`
    /// nanoseconds (see [`HISTOGRAM_BUCKETS`]).
    pub histogram: [u64; HISTOGRAM_BUCKETS],
}

impl SampledTime {
    /// An upper bound of the `q` quantile (`0 ≤ q ≤ 1`) within a factor of
    /// two: the top of the histogram bucket that holds it, capped by the
    /// maximum. Zero when nothing was measured.
    pub fn quantile(&self, q: f64) -> Duration {
        let total: u64 = self.histogram.iter().sum();
        if total == 0 {
            return Duration::ZERO;
        }
        let rank = ((q.clamp(0.0, 1.0) * total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, &count) in self.histogram.iter().enumerate() {
            seen += count;
            if seen >= rank {
                let top = Duration::from_nanos((1u64 << (i + 1)) - 1);
                return top.min(self.max);
            }
        }
        self.max
    }
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
    /// That op's label.
    pub running_op: Option<&'static str>,
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
        queued: u64,
        gauges: &ActorGauges,
        lanes: Vec<(u64, &Counters)>,
    ) -> ActorStats {
        let mut ops = counters.snapshot();
        let done = ops.completed + ops.failed + ops.panicked + ops.cancelled + ops.lost;
        (ops.queued, ops.submitted) = (queued, done + queued);
        let running = gauges.running();
        ActorStats {
            actor,
            name: name.to_owned(),
            running,
            running_op: running.map(|_| *gauges.label.lock()),
            busy: Duration::from_nanos(gauges.busy_ns.load(Relaxed)),
            ops,
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

impl ActorStats {
    /// The header of the table [`ActorStats`]'s `Display` writes rows of.
    pub const TABLE_HEADER: &'static str = "actor / lane            submitted  completed   failed panicked cancelled   lost   queue p50    p99     run p50    p99";
}

/// One row of the stats table.
fn row(f: &mut fmt::Formatter<'_>, name: &str, o: &OpCounts) -> fmt::Result {
    let q = |t: &SampledTime, p: f64| format!("{:.1?}", t.quantile(p));
    writeln!(
        f,
        "{name:<22} {:>10} {:>10} {:>8} {:>8} {:>9} {:>6} {:>11} {:>6} {:>11} {:>6}",
        o.submitted,
        o.completed,
        o.failed,
        o.panicked,
        o.cancelled,
        o.lost,
        q(&o.queue_wait, 0.5),
        q(&o.queue_wait, 0.99),
        q(&o.run_time, 0.5),
        q(&o.run_time, 0.99),
    )
}

/// Rows of a table (see [`ActorStats::TABLE_HEADER`]): the actor, then
/// each open lane; quantiles are upper bounds within a factor of two.
impl fmt::Display for ActorStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let running = match self.running {
            Some(lane) => format!(
                ", running `{}` of lane {lane}",
                self.running_op.unwrap_or("op")
            ),
            None => String::new(),
        };
        row(f, &self.name, &self.ops)?;
        writeln!(f, "  ({}, busy {:.1?}{running})", self.actor, self.busy)?;
        for lane in &self.lanes {
            row(f, &format!("  lane {}", lane.lane), &lane.ops)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_quantiles_bound_the_samples() {
        let sampler = Sampler::default();
        for ns in [
            0, 100, 150, 1_000, 1_100, 5_000, 5_000, 5_000, 9_000, 2_000_000,
        ] {
            sampler.add(Duration::from_nanos(ns));
        }
        let t = sampler.snapshot();
        assert_eq!((t.samples, t.max), (10, Duration::from_micros(2000)));
        assert_eq!(t.histogram.iter().sum::<u64>(), 10);
        // The median (5th of 10) is 1 100 ns, in bucket [1024, 2048).
        assert_eq!(t.quantile(0.5), Duration::from_nanos(2047));
        assert_eq!(t.quantile(0.9), Duration::from_nanos(16_383));
        assert_eq!(t.quantile(1.0), Duration::from_micros(2000));
        assert_eq!(SampledTime::default().quantile(0.5), Duration::ZERO);
    }
}
