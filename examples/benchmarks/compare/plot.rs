//! The report as pictures (`--plot DIR`): SVG charts drawn from the same
//! JSON `--json` writes, so a saved run can be drawn again (`--from PATH`).
//!
//! - `ratios.svg`: every row's ratio (weft's speed over its baseline's) as
//!   a bar from the 1.0 line, on a log scale;
//! - `gemm.svg`: f64 GEMM GFLOP/s against n for weft, faer called directly,
//!   the BLAS provider and OpenBLAS called directly (with `--features
//!   blas`), and numpy (with `--numpy PATH`, what `scripts/numpy_compare.py
//!   --json PATH` writes), under the measured peak;
//! - `roofline.svg`: the roofline of the `roofline` case, GFLOP/s against
//!   arithmetic intensity, the f64 and f32 roofs and weft's products on
//!   them;
//! - `mps.svg`: the cost per contraction of the MPS chain against the bond
//!   dimension, eager lane ops, a program and faer called directly.
//!
//! Each chart has its axes' units, and the machine, the date and the
//! command in its caption. A chart whose rows the run lacks (`--only`) is
//! not drawn.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use plotters::coord::ranged1d::{SegmentValue, ValueFormatter};
use plotters::prelude::*;
use serde_json::Value;
use weft_examples::BoxError;

const WIDTH: u32 = 960;
const HEIGHT: u32 = 600;
/// Room under each chart for its caption.
const CAPTION: u32 = 44;
const FONT: &str = "sans-serif";

/// The series' colours, in order.
const COLOURS: [RGBColor; 6] = [
    RGBColor(0x4e, 0x79, 0xa7),
    RGBColor(0xf2, 0x8e, 0x2b),
    RGBColor(0x59, 0xa1, 0x4f),
    RGBColor(0xe1, 0x57, 0x59),
    RGBColor(0xb0, 0x7a, 0xa1),
    RGBColor(0x76, 0xb7, 0xb2),
];

/// Draws every chart the figures allow into `dir`; the paths written.
pub(crate) fn plot(
    report: &Value,
    numpy: Option<&Value>,
    dir: &Path,
) -> Result<Vec<PathBuf>, BoxError> {
    std::fs::create_dir_all(dir)?;
    let figures = Figures::new(report, numpy);
    let mut written = Vec::new();
    for (name, chart) in [
        ("ratios.svg", ratios as Chart),
        ("gemm.svg", gemm),
        ("roofline.svg", roofline),
        ("mps.svg", mps),
    ] {
        let path = dir.join(name);
        if chart(&figures, &path)? {
            written.push(path);
        }
    }
    Ok(written)
}

/// Draws one chart to a path; false if the figures have nothing for it.
type Chart = fn(&Figures<'_>, &Path) -> Result<bool, BoxError>;

/// The report's rows by id, and what the caption says.
struct Figures<'a> {
    rows: Vec<&'a Value>,
    by_id: BTreeMap<&'a str, &'a Value>,
    numpy: BTreeMap<String, f64>,
    caption: String,
}

impl<'a> Figures<'a> {
    fn new(report: &'a Value, numpy: Option<&Value>) -> Figures<'a> {
        let rows: Vec<&Value> = report["rows"]
            .as_array()
            .map_or_else(Vec::new, |r| r.iter().collect());
        let by_id = rows
            .iter()
            .filter_map(|r| Some((r["id"].as_str()?, *r)))
            .collect();
        let numpy = numpy
            .and_then(|n| n["rows"].as_array())
            .into_iter()
            .flatten()
            .filter_map(|r| Some((r["id"].as_str()?.to_owned(), r["gflops"].as_f64()?)))
            .collect();
        let machine = &report["machine"];
        let caption = format!(
            "{}, {} thread(s) per domain; {}; {}",
            machine["cpu"].as_str().unwrap_or("unknown CPU"),
            machine["threads_per_domain"].as_u64().unwrap_or(0),
            report["date"].as_str().unwrap_or("undated"),
            report["command"].as_str().unwrap_or("")
        );
        Figures {
            rows,
            by_id,
            numpy,
            caption,
        }
    }

    /// A row's side's figure (`side`: "weft" or "baseline").
    fn value(&self, id: &str, side: &str) -> Option<f64> {
        self.by_id.get(id)?[side]["value"]
            .as_f64()
            .filter(|v| v.is_finite() && *v > 0.0)
    }
}

/// A chart's drawing area, white, with the caption under it; the area
/// above the caption is the chart's.
fn canvas<'p>(
    path: &'p Path,
    size: (u32, u32),
    caption: &str,
) -> Result<DrawingArea<SVGBackend<'p>, plotters::coord::Shift>, BoxError> {
    let root = SVGBackend::new(path, size).into_drawing_area();
    root.fill(&WHITE)?;
    let (chart, under) = root.split_vertically(size.1 - CAPTION);
    under.draw(&Text::new(
        caption.to_owned(),
        (12, 14),
        (FONT, 12).into_font().color(&RGBColor(0x55, 0x55, 0x55)),
    ))?;
    Ok(chart)
}

/// An axis label: no more decimals than the value needs (0.05, 0.1, 2, 100).
fn tick(v: &f64) -> String {
    let decimals = if *v >= 1.0 || *v <= 0.0 {
        0
    } else {
        (-v.log10().floor()) as usize
    };
    format!("{v:.decimals$}")
}

fn series_style(i: usize) -> ShapeStyle {
    COLOURS[i % COLOURS.len()].stroke_width(2)
}

/// A line with its points, labelled in the legend.
fn line<X, Y>(
    chart: &mut ChartContext<'_, SVGBackend<'_>, Cartesian2d<X, Y>>,
    points: Vec<(X::ValueType, Y::ValueType)>,
    label: &str,
    i: usize,
) -> Result<(), BoxError>
where
    X: Ranged,
    Y: Ranged,
    X::ValueType: Clone + 'static,
    Y::ValueType: Clone + 'static,
{
    let style = series_style(i);
    chart
        .draw_series(LineSeries::new(points.clone(), style))?
        .label(label)
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
    chart.draw_series(
        points
            .into_iter()
            .map(|p| Circle::new(p, 3, style.filled())),
    )?;
    Ok(())
}

/// The grid and axes of a chart of two numeric axes, labelled.
fn mesh<'a, X, Y>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>,
    x: &str,
    y: &str,
) -> Result<(), BoxError>
where
    X: Ranged<ValueType = f64> + ValueFormatter<f64>,
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    chart
        .configure_mesh()
        .x_desc(x)
        .y_desc(y)
        .x_label_formatter(&tick)
        .y_label_formatter(&tick)
        .label_style((FONT, 12))
        .draw()?;
    Ok(())
}

fn legend<'a, X: Ranged, Y: Ranged>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>,
    position: SeriesLabelPosition,
) -> Result<(), BoxError> {
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK.mix(0.4))
        .label_font((FONT, 13))
        .draw()?;
    Ok(())
}

/// Every ratio as a bar from 1.0, right where weft is faster.
fn ratios(figures: &Figures<'_>, path: &Path) -> Result<bool, BoxError> {
    let bars: Vec<(String, f64)> = figures
        .rows
        .iter()
        .filter_map(|r| {
            let ratio = r["ratio"].as_f64().filter(|v| v.is_finite() && *v > 0.0)?;
            // Rows of one case may share their `what` and differ in their
            // baseline: name it.
            let mut what = format!(
                "{}: {} ({} vs {})",
                r["case"].as_str()?,
                r["what"].as_str()?,
                r["weft"]["name"].as_str()?,
                r["baseline"]["name"].as_str()?
            );
            if what.chars().count() > 110 {
                what = what.chars().take(109).collect::<String>() + "…";
            }
            Some((what, ratio))
        })
        .collect();
    if bars.is_empty() {
        return Ok(false);
    }
    let n = bars.len();
    let (lo, hi) = bars.iter().fold((1.0f64, 1.0f64), |(lo, hi), (_, r)| {
        (lo.min(*r), hi.max(*r))
    });
    let (lo, hi) = (lo / 1.5, hi * 1.5);
    let height = 110 + 17 * n as u32 + CAPTION;
    let area = canvas(path, (WIDTH + 560, height), &figures.caption)?;
    let mut chart = ChartBuilder::on(&area)
        .caption(
            "weft against each baseline: speed ratio (above 1: weft is faster)",
            (FONT, 18),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(760)
        .build_cartesian_2d((lo..hi).log_scale(), (0..n).into_segmented())?;
    let label = |v: &SegmentValue<usize>| match v {
        SegmentValue::CenterOf(i) if *i < n => bars[n - 1 - *i].0.clone(),
        _ => String::new(),
    };
    chart
        .configure_mesh()
        .y_labels(n)
        .y_label_formatter(&label)
        .x_desc("weft's speed / the baseline's (log scale)")
        .x_label_formatter(&tick)
        .label_style((FONT, 12))
        .disable_y_mesh()
        .draw()?;
    chart.draw_series(bars.iter().enumerate().map(|(i, (_, r))| {
        let row = n - 1 - i;
        let colour = if *r >= 1.0 { COLOURS[2] } else { COLOURS[1] };
        let mut bar = Rectangle::new(
            [
                (1.0, SegmentValue::Exact(row)),
                (*r, SegmentValue::Exact(row + 1)),
            ],
            colour.filled(),
        );
        bar.set_margin(3, 3, 0, 0);
        bar
    }))?;
    chart.draw_series(LineSeries::new(
        [(1.0, SegmentValue::Exact(0)), (1.0, SegmentValue::Exact(n))],
        BLACK.stroke_width(1),
    ))?;
    area.present()?;
    Ok(true)
}

/// The f64 GEMM rows: from the roofline case where it ran (GFLOP/s), else
/// from the gemm case (milliseconds at n = 512 … 2048).
fn gemm(figures: &Figures<'_>, path: &Path) -> Result<bool, BoxError> {
    let sizes = [64u32, 128, 256, 512, 1024, 2048];
    let gflops = |n: u32, ms: f64| 2.0 * f64::from(n).powi(3) / (ms * 1e-3) / 1e9;
    let mut series: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    let mut add = |label: String, points: Vec<(f64, f64)>| {
        if !points.is_empty() {
            series.push((label, points));
        }
    };
    let pick = |id: &dyn Fn(u32) -> String, side: &str, ms: bool| -> Vec<(f64, f64)> {
        sizes
            .iter()
            .filter_map(|&n| {
                let v = figures.value(&id(n), side)?;
                Some((f64::from(n), if ms { gflops(n, v) } else { v }))
            })
            .collect()
    };
    let roofline = |n: u32| format!("roofline-gemm-f64-{n}");
    let blas = |n: u32| format!("roofline-gemm-blas-f64-{n}");
    let plain = |n: u32| format!("gemm-{n}");
    let (weft, faer) = if figures.value(&roofline(512), "weft").is_some() {
        (
            pick(&roofline, "weft", false),
            pick(&roofline, "baseline", false),
        )
    } else {
        (pick(&plain, "weft", true), pick(&plain, "baseline", true))
    };
    add("weft lane.matmul (faer)".to_owned(), weft);
    add("faer called directly".to_owned(), faer);
    add(
        "weft lane.matmul (BLAS provider)".to_owned(),
        pick(&blas, "weft", false),
    );
    add(
        "OpenBLAS called directly".to_owned(),
        pick(&blas, "baseline", false),
    );
    add(
        "numpy a @ b".to_owned(),
        sizes
            .iter()
            .filter_map(|&n| Some((f64::from(n), *figures.numpy.get(&roofline(n))?)))
            .collect(),
    );
    if series.is_empty() {
        return Ok(false);
    }
    let peak = figures.value("roofline-peak-f64", "weft");
    let top = series
        .iter()
        .flat_map(|(_, p)| p.iter().map(|(_, y)| *y))
        .chain(peak)
        .fold(0.0f64, f64::max)
        * 1.15;
    let area = canvas(path, (WIDTH, HEIGHT), &figures.caption)?;
    let mut chart = ChartBuilder::on(&area)
        .caption("f64 GEMM (n × n times n × n)", (FONT, 18))
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(64)
        .build_cartesian_2d((48f64..2800f64).log_scale().base(2.0), 0f64..top)?;
    mesh(&mut chart, "n (log scale)", "GFLOP/s")?;
    for (i, (label, points)) in series.into_iter().enumerate() {
        line(&mut chart, points, &label, i)?;
    }
    if let Some(peak) = peak {
        let style = BLACK.mix(0.6).stroke_width(1);
        chart
            .draw_series(DashedLineSeries::new(
                [(48.0, peak), (2800.0, peak)],
                6,
                4,
                style,
            ))?
            .label(format!("peak: f64 multiply-adds, {peak:.0} GFLOP/s"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
    }
    legend(&mut chart, SeriesLabelPosition::LowerRight)?;
    area.present()?;
    Ok(true)
}

/// The roofline: GFLOP/s against flops per byte moved (each operand read
/// once and the result written once), the f64 and f32 roofs (the memory
/// copy's bandwidth times the intensity, capped by the multiply-add peak),
/// and weft's GEMMs and batched products.
fn roofline(figures: &Figures<'_>, path: &Path) -> Result<bool, BoxError> {
    let (Some(bandwidth), Some(peak64)) = (
        figures.value("roofline-peak-copy", "weft"),
        figures.value("roofline-peak-f64", "weft"),
    ) else {
        return Ok(false);
    };
    let peak32 = figures
        .value("roofline-peak-f32", "weft")
        .unwrap_or(2.0 * peak64);
    // Bytes of an element, and flops of a multiply-add.
    let kinds = [("f64", 8.0, 2.0), ("f32", 4.0, 2.0), ("c64", 16.0, 8.0)];
    // (label, intensity, GFLOP/s) per kind.
    let mut points: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for (dtype, bytes, flops) in kinds {
        let mut kind = Vec::new();
        for row in &figures.rows {
            let id = row["id"].as_str().unwrap_or("");
            let Some(n) = id
                .strip_prefix(&format!("roofline-gemm-{dtype}-"))
                .and_then(|n| n.parse::<f64>().ok())
            else {
                continue;
            };
            if let Some(v) = figures.value(id, "weft") {
                kind.push((flops * n / (3.0 * bytes), v));
            }
        }
        if !kind.is_empty() {
            points.push((format!("weft {dtype} GEMM, n = 64 … 2048"), kind));
        }
    }
    let batched: Vec<(f64, f64)> = figures
        .rows
        .iter()
        .filter_map(|row| {
            let id = row["id"].as_str()?;
            let rest = id.strip_prefix("roofline-batched-")?;
            let (dtype, shape) = rest.split_once('-')?;
            let (_, n) = shape.split_once('x')?;
            let (_, bytes, flops) = kinds.iter().find(|k| k.0 == dtype)?;
            Some((
                flops * n.parse::<f64>().ok()? / (3.0 * bytes),
                figures.value(id, "weft")?,
            ))
        })
        .collect();
    if !batched.is_empty() {
        points.push(("weft batched bij,bjk->bik".to_owned(), batched));
    }
    let (x0, x1) = (0.05f64, 1000f64);
    let top = peak32.max(peak64) * 2.0;
    let area = canvas(path, (WIDTH, HEIGHT), &figures.caption)?;
    let mut chart = ChartBuilder::on(&area)
        .caption(
            "roofline: weft's CPU kernels against the machine's peaks",
            (FONT, 18),
        )
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(64)
        .build_cartesian_2d((x0..x1).log_scale(), (0.5f64..top).log_scale())?;
    mesh(
        &mut chart,
        "arithmetic intensity, flop / byte (log scale)",
        "GFLOP/s (log scale)",
    )?;
    for (label, peak, dash) in [("f64", peak64, false), ("f32", peak32, true)] {
        let ridge = peak / bandwidth;
        let roof = vec![(x0, bandwidth * x0), (ridge, peak), (x1, peak)];
        let style = BLACK.mix(if dash { 0.45 } else { 0.8 }).stroke_width(2);
        let text = format!("{label} roof: {bandwidth:.1} GB/s copy, {peak:.0} GFLOP/s peak");
        if dash {
            chart
                .draw_series(DashedLineSeries::new(roof, 8, 5, style))?
                .label(text)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
        } else {
            chart
                .draw_series(LineSeries::new(roof, style))?
                .label(text)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
        }
    }
    for (i, (label, pts)) in points.into_iter().enumerate() {
        let style = COLOURS[i % COLOURS.len()].filled();
        chart
            .draw_series(pts.into_iter().map(|p| Circle::new(p, 4, style)))?
            .label(label)
            .legend(move |(x, y)| Circle::new((x + 10, y), 4, style));
    }
    legend(&mut chart, SeriesLabelPosition::LowerRight)?;
    area.present()?;
    Ok(true)
}

/// The MPS chain's cost per contraction against the bond dimension.
fn mps(figures: &Figures<'_>, path: &Path) -> Result<bool, BoxError> {
    let bonds = || (1..=10).map(|k| 1u32 << k);
    let pick = |case: &str, side: &str| -> Vec<(f64, f64)> {
        bonds()
            .filter_map(|b| {
                Some((
                    f64::from(b),
                    figures.value(&format!("{case}-bond{b}"), side)?,
                ))
            })
            .collect()
    };
    let mut series: Vec<(String, Vec<(f64, f64)>)> = vec![
        (
            "eager: one lane op per contraction".to_owned(),
            pick("mps_eager", "weft"),
        ),
        (
            "program: lane.run_program".to_owned(),
            pick("mps_program", "weft"),
        ),
        (
            "program on the actor (no message)".to_owned(),
            pick("mps_program-engine", "weft"),
        ),
        (
            "faer called directly".to_owned(),
            pick("mps_program", "baseline"),
        ),
    ];
    if series[3].1.is_empty() {
        series[3].1 = pick("mps_eager", "baseline");
    }
    series.retain(|(_, p)| !p.is_empty());
    if series.is_empty() {
        return Ok(false);
    }
    let what = figures
        .by_id
        .iter()
        .find(|(id, _)| id.starts_with("mps_"))
        .and_then(|(_, r)| r["what"].as_str())
        .and_then(|w| w.split_once(", bond").map(|(sites, _)| sites.to_owned()))
        .unwrap_or_default();
    let all = || series.iter().flat_map(|(_, p)| p.iter().copied());
    let (xs, ys): (Vec<f64>, Vec<f64>) = all().unzip();
    let (x0, x1) = (
        xs.iter().copied().fold(f64::MAX, f64::min) / 1.4,
        xs.iter().copied().fold(0.0, f64::max) * 1.4,
    );
    let (y0, y1) = (
        ys.iter().copied().fold(f64::MAX, f64::min) / 2.0,
        ys.iter().copied().fold(0.0, f64::max) * 2.0,
    );
    let area = canvas(path, (WIDTH, HEIGHT), &figures.caption)?;
    let mut chart = ChartBuilder::on(&area)
        .caption(
            format!("MPS chain ({what}): cost per contraction"),
            (FONT, 18),
        )
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(64)
        .build_cartesian_2d((x0..x1).log_scale().base(2.0), (y0..y1).log_scale())?;
    mesh(
        &mut chart,
        "bond dimension (log scale)",
        "µs per contraction (log scale)",
    )?;
    for (i, (label, points)) in series.into_iter().enumerate() {
        line(&mut chart, points, &label, i)?;
    }
    legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
    area.present()?;
    Ok(true)
}
