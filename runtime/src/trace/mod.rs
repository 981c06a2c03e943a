//! A trace as data to draw or write: every actor's ops with their times in
//! microseconds from the trace's epoch. A live [`Trace`] gives one
//! ([`TraceView::from_trace`]), and so does the Chrome trace-event JSON
//! weft writes ([`TraceView::from_chrome_json`]); the JSON writer and the
//! picture (`svg.rs`) both work from it, so a file read back draws what the
//! live trace would have. The records themselves are kept by the actors
//! (`weft_actors::Trace`); this module only reads them.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io;
use std::path::Path;
use std::time::Instant;

use serde_json::Value;

mod svg;

pub use svg::utc_date;
// The recording, as the actors keep it.
pub use weft_actors::{ActorTimeline, Flow, Outcome, Record, Trace};

/// A trace laid out as data: its actors in the order they joined it.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceView {
    /// One entry per actor.
    pub actors: Vec<ActorView>,
}

/// One actor's part of a [`TraceView`].
#[derive(Debug, Clone, PartialEq)]
pub struct ActorView {
    /// The actor's thread name.
    pub name: String,
    /// Its ops, oldest first.
    pub ops: Vec<OpView>,
    /// Records its ring buffer let go before the trace was taken.
    pub dropped: u64,
}

/// One op of a [`TraceView`]; times in microseconds.
#[derive(Debug, Clone, PartialEq)]
pub struct OpView {
    /// The lane it came on (its id within the actor).
    pub lane: u64,
    /// The op's label.
    pub label: String,
    /// When the actor took it up, from the trace's epoch.
    pub start_us: f64,
    /// How long it ran.
    pub run_us: f64,
    /// How long it waited between its submission and its start.
    pub queued_us: f64,
    /// How it ended.
    pub outcome: Outcome,
    /// The flow it starts or ends, if any.
    pub flow: Option<Flow>,
}

impl OpView {
    /// When it was submitted.
    pub fn submitted_us(&self) -> f64 {
        self.start_us - self.queued_us
    }

    /// When it ended.
    pub fn end_us(&self) -> f64 {
        self.start_us + self.run_us
    }
}

/// Why a trace's JSON could not be read back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ViewError {
    /// Not JSON at all.
    #[error("the trace is not JSON: {0}")]
    Json(String),
    /// JSON, but neither an array of events nor an object with a
    /// `traceEvents` array.
    #[error("the trace has no traceEvents array")]
    NoEvents,
    /// An event weft would not have written.
    #[error("trace event {index}: {what}")]
    Event {
        /// Its place in the event array.
        index: usize,
        /// What is wrong with it.
        what: String,
    },
}

impl TraceView {
    /// `trace`'s records so far as data, with times from its epoch.
    ///
    /// ```
    /// let rt = weft::Runtime::builder()
    ///     .split(1)
    ///     .trace(std::env::temp_dir().join("weft-doc-view.json"))
    ///     .build()?;
    /// rt.lane(0)?.run(|_| ())?.wait()?;
    /// let view = weft::trace::TraceView::from_trace(rt.trace().expect("traced"));
    /// assert_eq!(view.actors[0].ops.len(), 1);
    /// # drop(rt);
    /// # std::fs::remove_file(std::env::temp_dir().join("weft-doc-view.json"))?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_trace(trace: &Trace) -> TraceView {
        let epoch = trace.epoch();
        let micros = |t: Instant| t.saturating_duration_since(epoch).as_nanos() as f64 / 1e3;
        TraceView {
            actors: trace
                .snapshot()
                .into_iter()
                .map(|actor| ActorView {
                    name: actor.name,
                    dropped: actor.dropped,
                    ops: actor
                        .records
                        .iter()
                        .map(|r| OpView {
                            lane: r.lane,
                            label: r.label.to_owned(),
                            start_us: micros(r.started),
                            run_us: micros(r.ended) - micros(r.started),
                            queued_us: micros(r.started) - micros(r.submitted),
                            outcome: r.outcome,
                            flow: r.flow,
                        })
                        .collect(),
                })
                .collect(),
        }
    }

    /// Writes the view to `path`, in the form its extension names
    /// ([`TraceFormat::of`]): a timeline picture for `.svg`
    /// ([`TraceView::to_svg`]) or `.html` ([`TraceView::to_html`]), Chrome
    /// trace-event JSON ([`TraceView::to_chrome_json`]) otherwise.
    ///
    /// # Errors
    ///
    /// The file system's.
    pub fn write(&self, path: impl AsRef<Path>) -> io::Result<()> {
        let path = path.as_ref();
        let text = match TraceFormat::of(path) {
            TraceFormat::Svg => self.to_svg(),
            TraceFormat::Html => self.to_html(),
            TraceFormat::Json => self.to_chrome_json(),
        };
        std::fs::write(path, text)
    }

    /// Every op, with the index of its actor.
    pub fn ops(&self) -> impl Iterator<Item = (usize, &OpView)> {
        self.actors
            .iter()
            .enumerate()
            .flat_map(|(a, actor)| actor.ops.iter().map(move |op| (a, op)))
    }

    /// The lanes of actor `actor` that ran ops, in order.
    pub fn lanes(&self, actor: usize) -> Vec<u64> {
        let mut lanes: Vec<u64> = self.actors[actor].ops.iter().map(|o| o.lane).collect();
        lanes.sort_unstable();
        lanes.dedup();
        lanes
    }

    /// The earliest submission and the latest end, or `None` without ops.
    pub fn span_us(&self) -> Option<(f64, f64)> {
        self.ops().map(|(_, o)| o).fold(None, |span, o| {
            let (from, to) = span.unwrap_or((o.submitted_us(), o.end_us()));
            Some((from.min(o.submitted_us()), to.max(o.end_us())))
        })
    }

    /// The trace as Chrome trace-event JSON: one process per actor, one
    /// thread per lane, one complete event (`"ph": "X"`) per op with its
    /// queue time and outcome in `args`, and flow events (`"s"`/`"f"`) for
    /// flows, each at the start of its op. (Not the sending op's end: the
    /// receiving op may start between the sender resolving its ticket and
    /// recording its end, which would draw the arrow backwards in time.)
    pub fn to_chrome_json(&self) -> String {
        let mut events: Vec<String> = Vec::new();
        for (pid, actor) in self.actors.iter().enumerate() {
            events.push(format!(
                r#"{{"ph":"M","name":"process_name","pid":{pid},"tid":0,"args":{{"name":{},"dropped":{}}}}}"#,
                quote(&actor.name),
                actor.dropped
            ));
            events.push(format!(
                r#"{{"ph":"M","name":"process_sort_index","pid":{pid},"tid":0,"args":{{"sort_index":{pid}}}}}"#
            ));
            for lane in self.lanes(pid) {
                events.push(format!(
                    r#"{{"ph":"M","name":"thread_name","pid":{pid},"tid":{lane},"args":{{"name":"lane {lane}"}}}}"#
                ));
            }
            for op in &actor.ops {
                let (ts, dur, queued) = (op.start_us, op.run_us, op.queued_us);
                events.push(format!(
                    r#"{{"ph":"X","cat":"op","name":{},"pid":{pid},"tid":{},"ts":{ts:.3},"dur":{dur:.3},"args":{{"queued_us":{queued:.3},"outcome":"{}"}}}}"#,
                    quote(&op.label),
                    op.lane,
                    op.outcome.name()
                ));
                if let Some(flow) = op.flow {
                    let (ph, id, bind) = match flow {
                        Flow::Out(id) => ("s", id, ""),
                        Flow::In(id) => ("f", id, r#","bp":"e""#),
                    };
                    events.push(format!(
                        r#"{{"ph":"{ph}","cat":"transfer","name":"transfer","id":{id},"pid":{pid},"tid":{},"ts":{ts:.3}{bind}}}"#,
                        op.lane
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

    /// Reads back the JSON [`TraceView::to_chrome_json`] writes (what a
    /// traced runtime leaves in its `.json` file). Events of other kinds
    /// are skipped; an op or flow event missing a field weft writes is an
    /// error naming the event.
    ///
    /// # Errors
    ///
    /// [`ViewError`]: not JSON, no events, or an event weft would not have
    /// written (a missing field, an unknown outcome, a flow with no op
    /// starting where it does).
    pub fn from_chrome_json(text: &str) -> Result<TraceView, ViewError> {
        let json: Value = serde_json::from_str(text).map_err(|e| ViewError::Json(e.to_string()))?;
        let events = match &json {
            Value::Array(events) => events,
            Value::Object(o) => o
                .get("traceEvents")
                .and_then(Value::as_array)
                .ok_or(ViewError::NoEvents)?,
            _ => return Err(ViewError::NoEvents),
        };
        let mut actors: Vec<(u64, ActorView)> = Vec::new();
        let mut index_of: HashMap<u64, usize> = HashMap::new();
        let mut actor = |pid: u64, actors: &mut Vec<(u64, ActorView)>| {
            *index_of.entry(pid).or_insert_with(|| {
                actors.push((
                    pid,
                    ActorView {
                        name: format!("actor {pid}"),
                        ops: Vec::new(),
                        dropped: 0,
                    },
                ));
                actors.len() - 1
            })
        };
        let mut flows = Vec::new();
        for (index, event) in events.iter().enumerate() {
            let bad = |what: &str| ViewError::Event {
                index,
                what: what.to_owned(),
            };
            let number = |field: &str| {
                event[field]
                    .as_f64()
                    .ok_or_else(|| bad(&format!("no number {field:?}")))
            };
            let whole = |field: &str| {
                event[field]
                    .as_u64()
                    .ok_or_else(|| bad(&format!("no whole number {field:?}")))
            };
            match event["ph"].as_str() {
                Some("M") if event["name"] == "process_name" => {
                    let a = actor(whole("pid")?, &mut actors);
                    if let Some(name) = event["args"]["name"].as_str() {
                        actors[a].1.name = name.to_owned();
                    }
                    actors[a].1.dropped = event["args"]["dropped"].as_u64().unwrap_or(0);
                }
                Some("X") => {
                    let a = actor(whole("pid")?, &mut actors);
                    let outcome = match event["args"]["outcome"].as_str() {
                        None => Outcome::Completed,
                        Some(name) => Outcome::from_name(name)
                            .ok_or_else(|| bad(&format!("unknown outcome {name:?}")))?,
                    };
                    let run_us = number("dur")?;
                    let queued_us = event["args"]["queued_us"].as_f64().unwrap_or(0.0);
                    if run_us < 0.0 || queued_us < 0.0 {
                        return Err(bad("a negative duration"));
                    }
                    actors[a].1.ops.push(OpView {
                        lane: whole("tid")?,
                        label: event["name"].as_str().unwrap_or("").to_owned(),
                        start_us: number("ts")?,
                        run_us,
                        queued_us,
                        outcome,
                        flow: None,
                    });
                }
                Some(ph @ ("s" | "f")) => {
                    let id = whole("id")?;
                    let flow = if ph == "s" {
                        Flow::Out(id)
                    } else {
                        Flow::In(id)
                    };
                    let a = actor(whole("pid")?, &mut actors);
                    flows.push((index, a, whole("tid")?, number("ts")?, flow));
                }
                _ => {}
            }
        }
        // A flow event sits at the start of its op, on its lane.
        for (index, a, lane, ts, flow) in flows {
            let op = actors[a]
                .1
                .ops
                .iter_mut()
                .find(|o| o.lane == lane && o.flow.is_none() && (o.start_us - ts).abs() < 5e-4)
                .ok_or_else(|| ViewError::Event {
                    index,
                    what: format!("no op of lane {lane} starts at the flow's {ts} µs"),
                })?;
            op.flow = Some(flow);
        }
        actors.sort_by_key(|(pid, _)| *pid);
        Ok(TraceView {
            actors: actors.into_iter().map(|(_, a)| a).collect(),
        })
    }
}

/// What a trace file holds, by its extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceFormat {
    /// Chrome trace-event JSON (Perfetto, `chrome://tracing`): any
    /// extension but the two below.
    Json,
    /// A timeline picture as SVG (`.svg`).
    Svg,
    /// The same picture in a self-contained HTML page (`.html`, `.htm`).
    Html,
}

impl TraceFormat {
    /// The format `path`'s extension names (case aside).
    pub fn of(path: &Path) -> TraceFormat {
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        match ext.as_deref() {
            Some("svg") => TraceFormat::Svg,
            Some("html" | "htm") => TraceFormat::Html,
            _ => TraceFormat::Json,
        }
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

    fn op(lane: u64, start_us: f64, outcome: Outcome, flow: Option<Flow>) -> OpView {
        OpView {
            lane,
            label: "an \"op\"".to_owned(),
            start_us,
            run_us: 2.5,
            queued_us: 1.25,
            outcome,
            flow,
        }
    }

    fn sample() -> TraceView {
        TraceView {
            actors: vec![
                ActorView {
                    name: "weft-cpu0 \"quoted\"".to_owned(),
                    ops: vec![
                        op(0, 10.0, Outcome::Completed, None),
                        op(1, 12.5, Outcome::Completed, Some(Flow::Out(7))),
                    ],
                    dropped: 3,
                },
                ActorView {
                    name: "weft-cpu1".to_owned(),
                    ops: vec![
                        op(2, 20.0, Outcome::DependencyFailed, Some(Flow::In(7))),
                        op(0, 30.0, Outcome::Cancelled, None),
                    ],
                    dropped: 0,
                },
            ],
        }
    }

    #[test]
    fn json_reads_back_as_the_view_it_came_from() {
        let view = sample();
        let json = view.to_chrome_json();
        assert!(json.contains(r#""name":"weft-cpu0 \"quoted\"""#), "{json}");
        assert_eq!(json.matches(r#""ph":"X""#).count(), 4);
        let back = TraceView::from_chrome_json(&json).expect("weft's own JSON");
        assert_eq!(back, view);
        assert_eq!(view.span_us(), Some((8.75, 32.5)));
        assert_eq!(view.lanes(0), [0, 1]);
    }

    #[test]
    fn formats_follow_the_extension() {
        assert_eq!(TraceFormat::of(Path::new("t.SVG")), TraceFormat::Svg);
        assert_eq!(TraceFormat::of(Path::new("t.htm")), TraceFormat::Html);
        assert_eq!(TraceFormat::of(Path::new("t.json")), TraceFormat::Json);
        assert_eq!(TraceFormat::of(Path::new("trace")), TraceFormat::Json);
    }

    #[test]
    fn a_bad_trace_is_an_error_naming_the_event() {
        assert!(matches!(
            TraceView::from_chrome_json("{"),
            Err(ViewError::Json(_))
        ));
        assert_eq!(
            TraceView::from_chrome_json(r#"{"events":[]}"#),
            Err(ViewError::NoEvents)
        );
        let unknown =
            r#"[{"ph":"X","pid":0,"tid":0,"ts":1,"dur":1,"args":{"outcome":"exploded"}}]"#;
        assert_eq!(
            TraceView::from_chrome_json(unknown)
                .unwrap_err()
                .to_string(),
            "trace event 0: unknown outcome \"exploded\""
        );
        let orphan = r#"[{"ph":"X","pid":0,"tid":0,"ts":1,"dur":1},
                         {"ph":"s","id":1,"pid":0,"tid":0,"ts":2}]"#;
        assert!(matches!(
            TraceView::from_chrome_json(orphan),
            Err(ViewError::Event { index: 1, .. })
        ));
        let no_ts = r#"[{"ph":"X","pid":0,"tid":0,"dur":1}]"#;
        assert_eq!(
            TraceView::from_chrome_json(no_ts).unwrap_err().to_string(),
            "trace event 0: no number \"ts\""
        );
    }
}
