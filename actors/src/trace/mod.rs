//! A timeline of what ran where: per actor and lane, each op's submission,
//! start and end, and flows between ops of different actors (transfers).
//! This module keeps the records; the runtime (`weft::TraceView`) turns a
//! [`Trace`] into data with times, Chrome trace-event JSON or a picture.
//!
//! Off by default, and then free: an actor without a [`Trace`] checks one
//! `Option` per op. On, every op is clocked at submission, start and end,
//! and one [`Record`] goes into its actor's ring buffer, which keeps the
//! newest `capacity` records and counts the ones it let go. The buffer's
//! lock is taken by its actor once per op and by a reader only when the
//! trace is read, so the actor never waits on it in practice; it is
//! diagnostics, not part of any protocol.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;

/// Records kept per actor by default.
pub const DEFAULT_TRACE_CAPACITY: usize = 1 << 16;

/// One end of a flow: an arrow from the op that starts it to the op that
/// ends it, across actors (a transfer's copy out and copy in).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// The op starts flow `id`.
    Out(u64),
    /// The op ends flow `id`.
    In(u64),
}

impl Flow {
    /// A flow id unique in this process.
    pub fn next_id() -> u64 {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        NEXT.fetch_add(1, Relaxed)
    }
}

/// How a traced op ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// It ran and returned a value.
    Completed,
    /// It ran and returned its own error.
    Failed,
    /// It panicked.
    Panicked,
    /// It did not run: an op it was ordered after failed.
    DependencyFailed,
    /// It did not run: cancelled by `shutdown_now`.
    Cancelled,
}

impl Outcome {
    /// Every outcome, in the order a legend lists them.
    pub const ALL: [Outcome; 5] = [
        Outcome::Completed,
        Outcome::Failed,
        Outcome::Panicked,
        Outcome::DependencyFailed,
        Outcome::Cancelled,
    ];

    /// How a trace names it (`args.outcome` in the JSON).
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Completed => "completed",
            Outcome::Failed => "failed",
            Outcome::Panicked => "panicked",
            Outcome::DependencyFailed => "dependency failed",
            Outcome::Cancelled => "cancelled",
        }
    }

    /// The outcome a trace names `name`.
    pub fn from_name(name: &str) -> Option<Outcome> {
        Outcome::ALL.into_iter().find(|o| o.name() == name)
    }
}

/// One op on the timeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// The lane it came on (its id within the actor).
    pub lane: u64,
    /// The op's label.
    pub label: &'static str,
    /// When it was submitted.
    pub submitted: Instant,
    /// When the actor took it up.
    pub started: Instant,
    /// When it finished.
    pub ended: Instant,
    /// How it ended.
    pub outcome: Outcome,
    /// The flow it starts or ends, if any.
    pub flow: Option<Flow>,
}

/// The timeline of one actor: a ring buffer of its newest records.
#[derive(Debug)]
pub(crate) struct Timeline {
    name: String,
    capacity: usize,
    records: Mutex<VecDeque<Record>>,
    dropped: AtomicU64,
}

impl Timeline {
    pub(crate) fn record(&self, record: Record) {
        let mut records = self.records.lock();
        if records.len() == self.capacity {
            records.pop_front();
            self.dropped.fetch_add(1, Relaxed);
        }
        records.push_back(record);
    }
}

/// A timeline shared by the actors that were built with it
/// ([`ActorBuilder::trace`](crate::ActorBuilder::trace)). Cheap to clone.
#[derive(Debug, Clone)]
pub struct Trace {
    inner: Arc<TraceInner>,
}

#[derive(Debug)]
struct TraceInner {
    epoch: Instant,
    capacity: usize,
    actors: Mutex<Vec<Arc<Timeline>>>,
}

/// A copy of one actor's part of a [`Trace`].
#[derive(Debug, Clone)]
pub struct ActorTimeline {
    /// The actor's thread name.
    pub name: String,
    /// Its newest records, oldest first.
    pub records: Vec<Record>,
    /// Records let go because the ring buffer was full.
    pub dropped: u64,
}

impl Trace {
    /// A trace keeping the newest `capacity` records per actor (at least 1).
    pub fn new(capacity: usize) -> Trace {
        Trace {
            inner: Arc::new(TraceInner {
                epoch: Instant::now(),
                capacity: capacity.max(1),
                actors: Mutex::new(Vec::new()),
            }),
        }
    }

    /// When the trace began: the origin its times are read from.
    pub fn epoch(&self) -> Instant {
        self.inner.epoch
    }

    /// Adds an actor's timeline.
    pub(crate) fn timeline(&self, name: &str) -> Arc<Timeline> {
        let timeline = Arc::new(Timeline {
            name: name.to_owned(),
            capacity: self.inner.capacity,
            records: Mutex::new(VecDeque::new()),
            dropped: AtomicU64::new(0),
        });
        self.inner.actors.lock().push(timeline.clone());
        timeline
    }

    /// A copy of every actor's records so far, in the order the actors
    /// joined the trace.
    pub fn snapshot(&self) -> Vec<ActorTimeline> {
        let actors = self.inner.actors.lock().clone();
        actors
            .iter()
            .map(|t| ActorTimeline {
                name: t.name.clone(),
                records: t.records.lock().iter().cloned().collect(),
                dropped: t.dropped.load(Relaxed),
            })
            .collect()
    }
}

impl Default for Trace {
    fn default() -> Self {
        Trace::new(DEFAULT_TRACE_CAPACITY)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ring_keeps_the_newest_and_counts_the_rest() {
        let trace = Trace::new(3);
        let t = trace.timeline("a \"quoted\" actor");
        let now = Instant::now();
        for lane in 0..5 {
            t.record(Record {
                lane,
                label: "op",
                submitted: now,
                started: now,
                ended: now,
                outcome: Outcome::Completed,
                flow: None,
            });
        }
        let snap = trace.snapshot();
        assert_eq!(snap[0].dropped, 2);
        assert_eq!(
            snap[0].records.iter().map(|r| r.lane).collect::<Vec<_>>(),
            [2, 3, 4]
        );
        assert_eq!(snap[0].name, "a \"quoted\" actor");
    }
}
