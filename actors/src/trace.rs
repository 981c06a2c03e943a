//! A timeline of what ran where: per actor and lane, each op's queue time
//! and run time, and flows between ops of different actors (transfers),
//! written as Chrome trace-event JSON (Perfetto, `chrome://tracing`).
//!
//! Off by default, and then free: an actor without a [`Trace`] checks one
//! `Option` per op. On, every op is clocked at submission, start and end,
//! and one [`Record`] goes into its actor's ring buffer, which keeps the
//! newest `capacity` records and counts the ones it let go. The buffer's
//! lock is taken by its actor once per op and by a reader only when the
//! trace is written, so the actor never waits on it in practice; it is
//! diagnostics, not part of any protocol.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::io;
use std::path::Path;
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
    fn name(self) -> &'static str {
        match self {
            Outcome::Completed => "completed",
            Outcome::Failed => "failed",
            Outcome::Panicked => "panicked",
            Outcome::DependencyFailed => "dependency failed",
            Outcome::Cancelled => "cancelled",
        }
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

    /// The trace as Chrome trace-event JSON: one process per actor, one
    /// thread per lane, one complete event (`"ph": "X"`) per op with its
    /// queue time in `args`, and flow events (`"s"`/`"f"`) for flows.
    pub fn to_chrome_json(&self) -> String {
        let micros =
            |t: Instant| t.saturating_duration_since(self.inner.epoch).as_nanos() as f64 / 1e3;
        let mut events: Vec<String> = Vec::new();
        for (pid, actor) in self.snapshot().iter().enumerate() {
            events.push(format!(
                r#"{{"ph":"M","name":"process_name","pid":{pid},"tid":0,"args":{{"name":{}}}}}"#,
                quote(&actor.name)
            ));
            events.push(format!(
                r#"{{"ph":"M","name":"process_sort_index","pid":{pid},"tid":0,"args":{{"sort_index":{pid}}}}}"#
            ));
            let mut lanes: Vec<u64> = actor.records.iter().map(|r| r.lane).collect();
            lanes.sort_unstable();
            lanes.dedup();
            for lane in lanes {
                events.push(format!(
                    r#"{{"ph":"M","name":"thread_name","pid":{pid},"tid":{lane},"args":{{"name":"lane {lane}"}}}}"#
                ));
            }
            for r in &actor.records {
                let (ts, dur) = (micros(r.started), micros(r.ended) - micros(r.started));
                let queued = micros(r.started) - micros(r.submitted);
                events.push(format!(
                    r#"{{"ph":"X","cat":"op","name":{},"pid":{pid},"tid":{},"ts":{ts:.3},"dur":{dur:.3},"args":{{"queued_us":{queued:.3},"outcome":"{}"}}}}"#,
                    quote(r.label),
                    r.lane,
                    r.outcome.name()
                ));
                if let Some(flow) = r.flow {
                    // A flow starts at the start of its first op and ends
                    // at the start of the op that receives it. (Not at the
                    // first op's end: the receiving op may start between
                    // the sender resolving its ticket and recording its
                    // end, which would draw the arrow backwards in time.)
                    let (ph, id, at, bind) = match flow {
                        Flow::Out(id) => ("s", id, ts, ""),
                        Flow::In(id) => ("f", id, ts, r#","bp":"e""#),
                    };
                    events.push(format!(
                        r#"{{"ph":"{ph}","cat":"transfer","name":"transfer","id":{id},"pid":{pid},"tid":{},"ts":{at:.3}{bind}}}"#,
                        r.lane
                    ));
                }
            }
        }
        let mut json = String::from("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
        for (i, event) in events.iter().enumerate() {
            let sep = if i + 1 < events.len() { ",\n" } else { "\n" };
            let _ = write!(json, "{event}{sep}");
        }
        json.push_str("]}\n");
        json
    }

    /// Writes [`Trace::to_chrome_json`] to `path`.
    ///
    /// # Errors
    ///
    /// The file system's.
    pub fn write(&self, path: impl AsRef<Path>) -> io::Result<()> {
        std::fs::write(path, self.to_chrome_json())
    }
}

impl Default for Trace {
    fn default() -> Self {
        Trace::new(DEFAULT_TRACE_CAPACITY)
    }
}

/// `s` as a JSON string literal.
fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
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
        let json = trace.to_chrome_json();
        assert!(json.contains(r#""name":"a \"quoted\" actor""#), "{json}");
        assert_eq!(json.matches(r#""ph":"X""#).count(), 3);
    }
}
