//! A trace as a picture one can open without a network: one SVG (or an
//! HTML page holding it) with a row per lane grouped by actor, each op a
//! bar coloured by its outcome with its queue time as a thin bar before it,
//! transfers as arrows between the ops they join, and a time axis.
//!
//! The markup is plain and classed so that a program can check it: each
//! actor is a `<g class="actor">`, each lane a `<g class="lane">` with
//! `data-actor` and `data-lane`, each op a `<rect class="op {outcome}">`
//! with a `<title>` (a viewer's tooltip), each queue time a
//! `<rect class="queue">`, and each transfer a `<line class="flow">`.

use std::collections::HashMap;
use std::fmt::Write as _;

use weft_actors::{Flow, Outcome};

use super::TraceView;

/// The picture's width, px.
const WIDTH: f64 = 1200.0;
/// Room on the left for the actor and lane names.
const GUTTER: f64 = 210.0;
const RIGHT: f64 = 24.0;
/// Where the time axis sits, and where the rows start.
const AXIS_Y: f64 = 70.0;
const ROWS_Y: f64 = 80.0;
/// An actor's name row, a lane's row, and the gap after an actor.
const ACTOR_ROW: f64 = 20.0;
const LANE_ROW: f64 = 18.0;
const ACTOR_GAP: f64 = 6.0;
/// The narrowest bar drawn, so that a short op stays visible.
const MIN_BAR: f64 = 1.0;

/// The fill of each outcome's bars (and its CSS class).
fn colour(outcome: Outcome) -> (&'static str, &'static str) {
    match outcome {
        Outcome::Completed => ("completed", "#4e79a7"),
        Outcome::Failed => ("failed", "#f28e2b"),
        Outcome::Panicked => ("panicked", "#e15759"),
        Outcome::DependencyFailed => ("dependency-failed", "#b07aa1"),
        Outcome::Cancelled => ("cancelled", "#9d9d9d"),
    }
}

impl TraceView {
    /// The timeline as one self-contained SVG document: a few hundred
    /// bytes per op, so a full ring buffer (65 536 ops per actor) draws as
    /// some 20 MB per actor; a smaller `trace_capacity` keeps it light.
    pub fn to_svg(&self) -> String {
        // The span of the finite times (a view built by hand or read back
        // may hold any), halved so that no difference overflows; a time
        // outside it (or none at all) is drawn at the plot's edge.
        let finite = self.ops().flat_map(|(_, o)| [o.submitted_us(), o.end_us()]);
        let (from, to) = finite
            .filter(|t| t.is_finite())
            .fold(None, |span, t| {
                let (from, to) = span.unwrap_or((t, t));
                Some((t.min(from), t.max(to)))
            })
            .unwrap_or((0.0, 1.0));
        let half = (to / 2.0 - from / 2.0).max(5e-4);
        let span = (2.0 * half).min(f64::MAX);
        let plot = WIDTH - GUTTER - RIGHT;
        let x = |t: f64| {
            let at = GUTTER + (t / 2.0 - from / 2.0) / half * plot;
            if at.is_nan() {
                GUTTER
            } else {
                at.clamp(GUTTER, WIDTH - RIGHT)
            }
        };

        // Rows: where each actor's name and each of its lanes go.
        let mut y = ROWS_Y;
        let mut rows: Vec<(f64, Vec<(u64, f64)>)> = Vec::new();
        for a in 0..self.actors.len() {
            let top = y;
            y += ACTOR_ROW;
            let lanes = self
                .lanes(a)
                .into_iter()
                .map(|lane| {
                    let at = y;
                    y += LANE_ROW;
                    (lane, at)
                })
                .collect();
            rows.push((top, lanes));
            y += ACTOR_GAP;
        }
        let rows_end = y;
        let height = rows_end + 56.0;
        let row_of = |actor: usize, lane: u64| {
            rows[actor]
                .1
                .iter()
                .find(|(l, _)| *l == lane)
                .map_or(0.0, |(_, at)| *at)
        };

        let mut svg = String::new();
        let _ = write!(
            svg,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="11">
<style>
.queue {{ fill: #cccccc; }}
.flow {{ stroke: #2e8540; stroke-width: 1.2; }}
.grid {{ stroke: #e4e4e4; stroke-width: 1; }}
.axis {{ stroke: #555555; stroke-width: 1; }}
.band {{ fill: #f5f5f5; }}
.caption, .lane-name, .tick {{ fill: #555555; }}
"#
        );
        for outcome in Outcome::ALL {
            let (class, fill) = colour(outcome);
            let _ = writeln!(svg, ".op.{class} {{ fill: {fill}; }}");
        }
        svg.push_str(
            r##"</style>
<defs><marker id="arrow" viewBox="0 0 8 8" refX="7" refY="4" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L8,4 L0,8 z" fill="#2e8540"/></marker></defs>
<rect width="100%" height="100%" fill="white"/>
"##,
        );

        // Title and caption.
        let ops = self.ops().count();
        let lanes: usize = rows.iter().map(|(_, l)| l.len()).sum();
        let dropped: u64 = self.actors.iter().map(|a| a.dropped).sum();
        let _ = writeln!(
            svg,
            r#"<text x="12" y="24" font-size="15" font-weight="bold">weft trace: {ops} ops on {} actors, {lanes} lanes, over {}</text>"#,
            self.actors.len(),
            duration(span)
        );
        let mut caption = format!("rendered {}", utc_date());
        if let Some(host) = host_name() {
            let _ = write!(caption, " on {}", escape(&host));
        }
        if dropped > 0 {
            let _ = write!(
                caption,
                "; {dropped} older records were let go by the ring buffers"
            );
        }
        let _ = writeln!(
            svg,
            r#"<text class="caption" x="12" y="42">{caption}; bars: run time coloured by outcome, thin grey bars: time queued, arrows: transfers</text>"#
        );

        // Time axis and grid, in time from the first submission.
        let (step, unit, scale) = ticks(span);
        let decimals = decimals(step / scale);
        let _ = writeln!(
            svg,
            r#"<line class="axis" x1="{GUTTER}" y1="{AXIS_Y}" x2="{}" y2="{AXIS_Y}"/>"#,
            WIDTH - RIGHT
        );
        // At most 10 steps fit the span; the bound also keeps a view
        // built by hand with infinite times from looping here.
        for k in 0..=10u32 {
            let t = f64::from(k) * step;
            if !t.is_finite() || t > span * (1.0 + 1e-9) {
                break;
            }
            let at = x(from + t);
            let _ = writeln!(
                svg,
                r#"<line class="grid" x1="{at:.2}" y1="{AXIS_Y}" x2="{at:.2}" y2="{rows_end}"/><text class="tick" x="{at:.2}" y="{}" text-anchor="middle">{:.decimals$} {unit}</text>"#,
                AXIS_Y - 6.0,
                t / scale
            );
        }

        // The rows and their bars.
        for (a, actor) in self.actors.iter().enumerate() {
            let (top, lanes) = &rows[a];
            let _ = writeln!(
                svg,
                r#"<g class="actor" data-actor="{a}" data-name="{}">"#,
                escape(&actor.name)
            );
            let band = ACTOR_ROW + LANE_ROW * lanes.len() as f64;
            let _ = writeln!(
                svg,
                r#"<rect class="band" x="0" y="{top}" width="{WIDTH}" height="{band}"/><text class="actor-name" x="12" y="{}" font-weight="bold">{} ({} ops)</text>"#,
                top + 14.0,
                escape(&actor.name),
                actor.ops.len()
            );
            for &(lane, at) in lanes {
                let _ = writeln!(
                    svg,
                    r#"<g class="lane" data-actor="{a}" data-lane="{lane}"><text class="lane-name" x="{}" y="{}" text-anchor="end">lane {lane}</text>"#,
                    GUTTER - 8.0,
                    at + 13.0
                );
                let on_lane = || actor.ops.iter().filter(|o| o.lane == lane);
                for op in on_lane().filter(|o| o.queued_us > 0.0) {
                    let (x0, x1) = (x(op.submitted_us()), x(op.start_us));
                    let _ = writeln!(
                        svg,
                        r#"<rect class="queue" x="{x0:.2}" y="{}" width="{:.2}" height="4"/>"#,
                        at + 7.0,
                        (x1 - x0).max(0.0)
                    );
                }
                for op in on_lane() {
                    let (class, _) = colour(op.outcome);
                    let (x0, x1) = (x(op.start_us), x(op.end_us()));
                    let _ = writeln!(
                        svg,
                        r#"<rect class="op {class}" x="{x0:.2}" y="{}" width="{:.2}" height="12" data-label="{}"><title>{}: ran {} after {} queued; {}</title></rect>"#,
                        at + 3.0,
                        (x1 - x0).max(MIN_BAR),
                        escape(&op.label),
                        escape(&op.label),
                        duration(op.run_us),
                        duration(op.queued_us),
                        op.outcome.name()
                    );
                }
                svg.push_str("</g>\n");
            }
            svg.push_str("</g>\n");
        }

        // Transfers: from the start of the op that sends to the start of
        // the op that receives (both sides kept by the ring buffers).
        let mut outs: HashMap<u64, (f64, f64)> = HashMap::new();
        let mut ins: Vec<(u64, f64, f64)> = Vec::new();
        for (a, op) in self.ops() {
            let at = (x(op.start_us), row_of(a, op.lane) + LANE_ROW / 2.0);
            match op.flow {
                Some(Flow::Out(id)) => {
                    outs.insert(id, at);
                }
                Some(Flow::In(id)) => ins.push((id, at.0, at.1)),
                None => {}
            }
        }
        svg.push_str("<g class=\"flows\">\n");
        for (id, x1, y1) in ins {
            if let Some(&(x0, y0)) = outs.get(&id) {
                let _ = writeln!(
                    svg,
                    r#"<line class="flow" data-flow="{id}" x1="{x0:.2}" y1="{y0:.2}" x2="{x1:.2}" y2="{y1:.2}" marker-end="url(#arrow)"/>"#
                );
            }
        }
        svg.push_str("</g>\n");

        // The legend.
        let ly = rows_end + 24.0;
        let mut lx = GUTTER;
        svg.push_str("<g class=\"legend\">\n");
        for outcome in Outcome::ALL {
            let (class, _) = colour(outcome);
            let _ = writeln!(
                svg,
                r#"<rect class="op {class}" x="{lx}" y="{}" width="14" height="10"/><text x="{}" y="{ly}">{}</text>"#,
                ly - 9.0,
                lx + 18.0,
                outcome.name()
            );
            lx += 26.0 + 6.5 * outcome.name().len() as f64;
        }
        let _ = writeln!(
            svg,
            r#"<rect class="queue" x="{lx}" y="{}" width="14" height="4"/><text x="{}" y="{ly}">queued</text>"#,
            ly - 6.0,
            lx + 18.0
        );
        lx += 70.0;
        let _ = writeln!(
            svg,
            r#"<line class="flow" x1="{lx}" y1="{}" x2="{}" y2="{}" marker-end="url(#arrow)"/><text x="{}" y="{ly}">transfer</text>"#,
            ly - 4.0,
            lx + 18.0,
            ly - 4.0,
            lx + 24.0
        );
        svg.push_str("</g>\n</svg>\n");
        svg
    }

    /// The timeline in a self-contained HTML page (the SVG inline: no
    /// script, no style sheet or font from elsewhere).
    pub fn to_html(&self) -> String {
        format!(
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>weft trace</title>\n\
             <style>body {{ margin: 16px; font-family: sans-serif; }} .scroll {{ overflow-x: auto; }}</style>\n\
             </head>\n<body>\n<p>Hover over a bar for its op, its run and queue times and its outcome.</p>\n\
             <div class=\"scroll\">\n{}</div>\n</body>\n</html>\n",
            self.to_svg()
        )
    }
}

/// The unit that reads best for `us` microseconds, and its size in µs.
fn unit(us: f64) -> (&'static str, f64) {
    if us >= 1e6 {
        ("s", 1e6)
    } else if us >= 1e3 {
        ("ms", 1e3)
    } else {
        ("µs", 1.0)
    }
}

/// A duration in the unit that reads best.
fn duration(us: f64) -> String {
    if !us.is_finite() {
        return "an unknown time".into();
    }
    let (name, scale) = unit(us);
    let decimals = if scale == 1.0 { 1 } else { 3 };
    format!("{:.decimals$} {name}", us / scale)
}

/// The axis for a span of `span` µs: a tick step of 1, 2 or 5 times a
/// power of ten giving 5 to 10 ticks, and the unit its labels are in.
fn ticks(span: f64) -> (f64, &'static str, f64) {
    let raw = span / 8.0;
    let power = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * power)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * power);
    // Labels in a unit the span holds at least twice.
    let (name, scale) = unit(span / 2.0);
    (step, name, scale)
}

/// Decimals that show a tick step of `step` (in its unit) exactly.
fn decimals(step: f64) -> usize {
    if step >= 1.0 {
        0
    } else {
        (-step.log10().floor()) as usize
    }
}

/// Text safe inside an SVG element or attribute.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if u32::from(c) < 0x20 && c != '\t' && c != '\n' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// Today's date (UTC) as `YYYY-MM-DD`, from the system clock.
pub fn utc_date() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    format!("{y:04}-{m:02}-{d:02}")
}

/// The proleptic Gregorian date `days` days after 1970-01-01 (Howard
/// Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// This machine's name, where the system says it.
fn host_name() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_fit_the_span() {
        assert_eq!(ticks(100.0), (20.0, "µs", 1.0));
        assert_eq!(ticks(3_000.0), (500.0, "ms", 1e3));
        assert_eq!(ticks(7.3e6), (1e6, "s", 1e6));
        assert_eq!(decimals(0.5), 1);
        assert_eq!(decimals(0.02), 2);
        assert_eq!(decimals(20.0), 0);
    }

    #[test]
    fn dates_are_the_calendar_s() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(20_790), (2026, 12, 3));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
    }

    #[test]
    fn an_empty_or_unbounded_view_still_draws() {
        let empty = TraceView { actors: Vec::new() };
        assert!(empty.to_svg().contains("0 ops on 0 actors"));
        let endless = TraceView {
            actors: vec![super::super::ActorView {
                name: "a".to_owned(),
                ops: vec![super::super::OpView {
                    lane: 0,
                    label: "op".to_owned(),
                    start_us: 0.0,
                    run_us: f64::INFINITY,
                    queued_us: 0.0,
                    outcome: Outcome::Completed,
                    flow: None,
                }],
                dropped: 0,
            }],
        };
        assert!(endless.to_svg().contains("class=\"op completed\""));
    }

    #[test]
    fn times_past_every_scale_still_draw_in_the_plot() {
        let op = |start_us: f64, run_us: f64| super::super::OpView {
            lane: 0,
            label: "op".to_owned(),
            start_us,
            run_us,
            queued_us: 0.0,
            outcome: Outcome::Completed,
            flow: None,
        };
        for ops in [
            vec![op(0.0, 1.0), op(1e308, 1e308)],
            vec![op(-1e308, 1.0), op(1e308, 1.0)],
            vec![op(f64::NAN, 1.0), op(0.0, f64::NAN)],
        ] {
            let view = TraceView {
                actors: vec![super::super::ActorView {
                    name: "a".to_owned(),
                    ops,
                    dropped: 0,
                }],
            };
            let svg = view.to_svg();
            for bad in ["inf", "NaN"] {
                assert!(!svg.contains(bad), "{bad} in {svg}");
            }
            // Two bars, and the legend's.
            assert_eq!(svg.matches("class=\"op completed\"").count(), 3, "{svg}");
        }
    }

    #[test]
    fn names_are_escaped() {
        assert_eq!(escape("a<b & \"c\"\u{1}"), "a&lt;b &amp; &quot;c&quot; ");
    }
}
