//! The report: rows of figures, the table they print as, and the JSON
//! they are written as (`--json PATH`, read by `scripts/numpy_compare.py`).

use std::fmt::Write as _;

use serde_json::{json, Value};

use crate::settings::Settings;

/// What happened to each op of a run where ops may fail.
#[derive(Default, Clone)]
pub(crate) struct Outcome {
    pub(crate) completed: u64,
    pub(crate) failed: u64,
    /// Completed, but not on the engine asked for (the seeds' serial
    /// inline engine for entries from a pool worker).
    pub(crate) fallbacks: u64,
    /// Why the failures failed.
    pub(crate) why: String,
}

/// One side of a row: what ran, its figure, and what happened to its ops.
pub(crate) struct Side {
    name: String,
    value: f64,
    outcome: Option<Outcome>,
}

impl Side {
    pub(crate) fn new(name: impl Into<String>, value: f64) -> Side {
        Side {
            name: name.into(),
            value,
            outcome: None,
        }
    }

    pub(crate) fn with_outcome(mut self, outcome: Outcome) -> Side {
        self.outcome = Some(outcome);
        self
    }
}

/// What a row's figures measure.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Unit {
    /// Microseconds per op (lower is better).
    MicrosPerOp,
    /// Milliseconds (lower is better).
    Millis,
    /// Operations per second (higher is better).
    OpsPerSecond,
    /// Pipeline items per second (higher is better).
    ItemsPerSecond,
    /// Bytes moved to and from memory, GB/s (higher is better).
    GigabytesPerSecond,
    /// Floating-point operations per second, GFLOP/s (higher is better).
    GflopsPerSecond,
}

impl Unit {
    fn name(self) -> &'static str {
        match self {
            Unit::MicrosPerOp => "µs/op",
            Unit::Millis => "ms",
            Unit::OpsPerSecond => "ops/s",
            Unit::ItemsPerSecond => "items/s",
            Unit::GigabytesPerSecond => "GB/s",
            Unit::GflopsPerSecond => "GFLOP/s",
        }
    }

    fn higher_is_better(self) -> bool {
        matches!(
            self,
            Unit::OpsPerSecond
                | Unit::ItemsPerSecond
                | Unit::GigabytesPerSecond
                | Unit::GflopsPerSecond
        )
    }

    fn format(self, value: f64) -> String {
        match self {
            Unit::MicrosPerOp => format!("{value:.3}"),
            Unit::Millis | Unit::GigabytesPerSecond => format!("{value:.2}"),
            Unit::GflopsPerSecond => format!("{value:.1}"),
            Unit::OpsPerSecond | Unit::ItemsPerSecond => {
                if value >= 1e6 {
                    format!("{:.2} M", value / 1e6)
                } else if value >= 1e4 {
                    format!("{:.1} k", value / 1e3)
                } else {
                    format!("{value:.1}")
                }
            }
        }
    }
}

/// One line of the report: weft's figure and, where there is one, the
/// baseline's.
pub(crate) struct Row {
    case: &'static str,
    id: String,
    what: String,
    unit: Unit,
    weft: Side,
    baseline: Option<Side>,
    /// The machine's peak for this row's kind of work, in its unit.
    peak: Option<f64>,
}

impl Row {
    pub(crate) fn new(
        case: &'static str,
        id: impl Into<String>,
        what: impl Into<String>,
        unit: Unit,
        weft: Side,
    ) -> Row {
        Row {
            case,
            id: id.into(),
            what: what.into(),
            unit,
            weft,
            baseline: None,
            peak: None,
        }
    }

    /// The machine's peak for this row's work (a higher-is-better unit),
    /// so the report gives each side's fraction of it.
    pub(crate) fn of_peak(mut self, peak: f64) -> Row {
        self.peak = Some(peak);
        self
    }

    /// The row, in case `case` (a case that reports another's rows), its
    /// id prefixed with the case's name so that ids stay unique.
    pub(crate) fn in_case(mut self, case: &'static str) -> Row {
        self.case = case;
        self.id = format!("{case}-{}", self.id);
        self
    }

    /// The baseline's figure, where the row has a baseline.
    pub(crate) fn baseline_value(&self) -> Option<f64> {
        self.baseline.as_ref().map(|b| b.value)
    }

    /// Each side's fraction of the peak, where the row has one.
    fn fractions(&self) -> Option<(f64, Option<f64>)> {
        let peak = self.peak.filter(|p| *p > 0.0)?;
        Some((
            self.weft.value / peak,
            self.baseline.as_ref().map(|b| b.value / peak),
        ))
    }

    pub(crate) fn against(mut self, baseline: Side) -> Row {
        self.baseline = Some(baseline);
        self
    }

    /// weft's speed over the baseline's; none where either did nothing.
    fn speed_ratio(&self) -> Option<f64> {
        let b = self.baseline.as_ref()?.value;
        let w = self.weft.value;
        let ratio = if self.unit.higher_is_better() {
            w / b
        } else {
            b / w
        };
        (w > 0.0 && b > 0.0 && ratio.is_finite()).then_some(ratio)
    }
}

/// Prints `rows` as one table per case, in the order of `cases` (each a
/// case's name and title).
pub(crate) fn print_table(rows: &[Row], cases: &[(&str, &str)]) {
    for &(case, title) in cases {
        let mut case_rows = rows.iter().filter(|r| r.case == case).peekable();
        let Some(first) = case_rows.peek() else {
            continue;
        };
        // A case whose rows measure in different units names each value's.
        let mixed = rows.iter().any(|r| r.case == case && r.unit != first.unit);
        let value = |unit: Unit, v: f64| {
            if mixed {
                format!("{} {}", unit.format(v), unit.name())
            } else {
                unit.format(v)
            }
        };
        let units = if mixed {
            "units as given"
        } else {
            first.unit.name()
        };
        println!("\n== {title} ({units}) ==");
        println!(
            "{:<46} {:<30} {:>10}   {:<42} {:>10}   {:>6}",
            "case", "weft", "", "baseline", "", "ratio"
        );
        for row in case_rows {
            let (base_name, base_value) = match &row.baseline {
                Some(b) => (b.name.clone(), value(row.unit, b.value)),
                None => (String::new(), String::new()),
            };
            let ratio = row
                .speed_ratio()
                .map_or_else(|| "—".to_string(), |r| format!("{r:.2}"));
            let peak = row.fractions().map_or_else(String::new, |(w, b)| {
                let base = b.map_or_else(String::new, |b| format!(" / {:.0} %", b * 100.0));
                format!("   of peak: {:.0} %{base}", w * 100.0)
            });
            println!(
                "{:<46} {:<30} {:>10}   {:<42} {:>10}   {:>6}{peak}",
                row.what,
                row.weft.name,
                value(row.unit, row.weft.value),
                base_name,
                base_value,
                ratio
            );
            let outcomes = [Some(&row.weft), row.baseline.as_ref()];
            if outcomes.iter().flatten().any(|s| s.outcome.is_some()) {
                let describe = |side: Option<&Side>| {
                    side.and_then(|s| s.outcome.as_ref())
                        .map_or_else(String::new, |o| {
                            let mut text = format!("{} done, {} failed", o.completed, o.failed);
                            if o.fallbacks > 0 {
                                let _ = write!(text, ", {} fallbacks", o.fallbacks);
                            }
                            if !o.why.is_empty() {
                                let _ = write!(text, " ({})", o.why);
                            }
                            text
                        })
                };
                println!(
                    "{:<46}   weft: {}\n{:<46}   baseline: {}",
                    "",
                    describe(Some(&row.weft)),
                    "",
                    describe(row.baseline.as_ref())
                );
            }
        }
    }
}

/// The machine the figures were taken on.
pub(crate) struct Machine {
    pub(crate) cpu: String,
    pub(crate) allowed_cpus: usize,
    pub(crate) threads: usize,
    pub(crate) topology: String,
    pub(crate) load_average: Option<f64>,
}

/// The CPU's model name, as `/proc/cpuinfo` gives it.
pub(crate) fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".to_string())
}

/// The 1-minute load average, to tell a quiet machine from a busy one.
pub(crate) fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// The figures as JSON: the command, weft's settings, the machine, and one
/// object per row (`scripts/numpy_compare.py` reads `machine` and `rows`).
pub(crate) fn to_json(settings: &Settings, machine: &Machine, rows: &[Row]) -> Value {
    let mut command = String::from("cargo run --release -p weft-examples --example compare");
    if !settings.args.is_empty() {
        let _ = write!(command, " -- {}", settings.args.join(" "));
    }
    let micros = |d: std::time::Duration| u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
    json!({
        "command": command,
        "date": weft::trace::utc_date(),
        "quick": settings.quick,
        "weft": {
            "pinning": format!("{:?}", settings.pinning),
            "idle_spin_us": micros(settings.idle_spin),
            "wait_spin_us": micros(settings.wait_spin),
        },
        "machine": {
            "cpu": machine.cpu,
            "allowed_cpus": machine.allowed_cpus,
            "threads_per_domain": machine.threads,
            "topology": machine.topology,
            "load_average_1m_at_start": machine.load_average,
            "load_average_1m_at_end": load_average(),
        },
        "ratio": "weft speed / baseline speed (above 1: weft is faster)",
        "rows": rows.iter().map(row_json).collect::<Vec<_>>(),
    })
}

fn row_json(row: &Row) -> Value {
    json!({
        "case": row.case,
        "id": row.id,
        "what": row.what,
        "unit": row.unit.name(),
        "higher_is_better": row.unit.higher_is_better(),
        "weft": side_json(&row.weft),
        "baseline": row.baseline.as_ref().map(side_json),
        "ratio": row.speed_ratio(),
        "peak": row.peak,
        "weft_of_peak": row.fractions().map(|(w, _)| w),
        "baseline_of_peak": row.fractions().and_then(|(_, b)| b),
    })
}

/// A side's name and figure (JSON has no NaN or infinity: those are
/// `null`), and its ops' outcome where it has one.
fn side_json(side: &Side) -> Value {
    let mut value = json!({ "name": side.name, "value": side.value });
    if let Some(o) = &side.outcome {
        value["completed"] = json!(o.completed);
        value["failed"] = json!(o.failed);
        value["fallbacks"] = json!(o.fallbacks);
        value["why"] = json!(o.why);
    }
    value
}
