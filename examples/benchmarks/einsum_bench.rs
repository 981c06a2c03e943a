//! The tensor4all einsum benchmark through weft: each of its 14 instances
//! (`data/einsum_instances.json`) contracted along its published paths
//! (`opt_flops`, `opt_size`) three ways, and once along weft's own greedy
//! path:
//!
//! - `steps`: one binary `lane.einsum` per step of the path, as a user
//!   would write the loop (the peers' script, `scripts/einsum_peers.py`,
//!   times numpy, PyTorch and JAX doing the same steps);
//! - `one`: the whole network as one einsum along the path
//!   (`lane.einsum_along`);
//! - `greedy`: the whole network as one `lane.einsum`, weft planning it
//!   (the cost of its path is printed against the published one's, both
//!   as opt_einsum counts FLOPs).
//!
//! The operands are filled with the same values the peers' script makes
//! (`fill` below), scaled so that every contraction stays near 1; each
//! result's sum is printed, for the script to check against numpy's.
//!
//! `cargo run --release -p weft-examples --example einsum_bench -- [--only NAME]
//! [--reps N] [--threads N] [--skip-large] [--json PATH]`
//!
//! `--threads` sets the domain's threads (default: all its CPUs);
//! `--skip-large` leaves out instances whose largest intermediate passes
//! 2^25 elements (gm_queen5_5_3's are 2^27: 1 GiB each).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use weft::ops::LinalgOps;

use serde_json::{json, Value};
use weft::ops::EinsumSpec;
use weft::{Lane, Runtime, Tensor, TensorHandle};
use weft_examples::BoxError;

const DATA: &str = include_str!("data/einsum_instances.json");

/// One instance of the benchmark.
struct Instance {
    name: String,
    subscripts: String,
    labels: Vec<Vec<char>>,
    output: Vec<char>,
    shapes: Vec<Vec<usize>>,
    paths: Vec<Published>,
}

/// One published path of an instance.
struct Published {
    strategy: String,
    path: Vec<(usize, usize)>,
    log10_flops: f64,
    log2_size: f64,
}

fn instances() -> Result<Vec<Instance>, BoxError> {
    let data: Value = serde_json::from_str(DATA)?;
    let mut all = Vec::new();
    for i in data["instances"].as_array().ok_or("no instances")? {
        let subscripts = i["subscripts"].as_str().ok_or("no subscripts")?.to_owned();
        let (lhs, rhs) = subscripts.split_once("->").ok_or("no output")?;
        let labels = lhs.split(',').map(|t| t.chars().collect()).collect();
        let shapes = serde_json::from_value(i["shapes"].clone())?;
        let mut paths = Vec::new();
        for (strategy, p) in i["paths"].as_object().ok_or("no paths")? {
            let pairs: Vec<[usize; 2]> = serde_json::from_value(p["path"].clone())?;
            paths.push(Published {
                strategy: strategy.clone(),
                path: pairs.into_iter().map(|[a, b]| (a, b)).collect(),
                log10_flops: p["log10_flops"].as_f64().unwrap_or(f64::NAN),
                log2_size: p["log2_size"].as_f64().unwrap_or(f64::NAN),
            });
        }
        paths.sort_by(|a, b| b.strategy.cmp(&a.strategy));
        all.push(Instance {
            name: i["name"].as_str().ok_or("no name")?.to_owned(),
            output: rhs.chars().collect(),
            subscripts,
            labels,
            shapes,
            paths,
        });
    }
    Ok(all)
}

/// Operand `t`'s values, as the peers' script makes them: element `k` is
/// `(1 + 0.5·sin(0.7·k + 1.3·t + 0.1))` times the operand's scale, the
/// product over its summed labels of `extent^(-1/holders)` (so that each
/// summed label, over all its operands, sums about `extent` products of
/// size `1/extent`).
fn fill(inst: &Instance) -> Vec<Vec<f64>> {
    let mut holders: BTreeMap<char, usize> = BTreeMap::new();
    let mut extent: BTreeMap<char, usize> = BTreeMap::new();
    for (labels, shape) in inst.labels.iter().zip(&inst.shapes) {
        for (&c, &e) in labels.iter().zip(shape) {
            *holders.entry(c).or_default() += 1;
            extent.insert(c, e);
        }
    }
    inst.labels
        .iter()
        .zip(&inst.shapes)
        .enumerate()
        .map(|(t, (labels, shape))| {
            let scale: f64 = labels
                .iter()
                .filter(|c| !inst.output.contains(c))
                .map(|c| (extent[c] as f64).powf(-1.0 / holders[c] as f64))
                .product();
            let n: usize = shape.iter().product();
            (0..n)
                .map(|k| scale * (1.0 + 0.5 * (0.7 * k as f64 + 1.3 * t as f64 + 0.1).sin()))
                .collect()
        })
        .collect()
}

/// The binary steps of `path`: each step's subscripts, keeping the labels
/// the output or a remaining term needs, in the order they appear in the
/// two terms (the script builds the same strings).
fn steps(inst: &Instance, path: &[(usize, usize)]) -> Vec<(usize, usize, String)> {
    let mut terms = inst.labels.clone();
    let mut out = Vec::with_capacity(path.len());
    for (k, &(i, j)) in path.iter().enumerate() {
        let (i, j) = (i.min(j), i.max(j));
        let b = terms.remove(j);
        let a = terms.remove(i);
        let last = k + 1 == path.len();
        let mut keep: Vec<char> = Vec::new();
        if last {
            keep = inst.output.clone();
        } else {
            for &c in a.iter().chain(&b) {
                let needed = inst.output.contains(&c) || terms.iter().any(|t| t.contains(&c));
                if needed && !keep.contains(&c) {
                    keep.push(c);
                }
            }
        }
        let spec = format!(
            "{},{}->{}",
            a.iter().collect::<String>(),
            b.iter().collect::<String>(),
            keep.iter().collect::<String>()
        );
        out.push((i, j, spec));
        terms.push(keep);
    }
    out
}

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

fn sum_of(lane: &Lane, h: &TensorHandle) -> Result<f64, BoxError> {
    let t = lane.download(h)?.wait()?;
    Ok(t.as_slice::<f64>()?.iter().sum())
}

/// Runs `f` once, then `reps` times; the median and the last result's sum.
fn timed(
    lane: &Lane,
    reps: usize,
    mut f: impl FnMut() -> Result<TensorHandle, BoxError>,
) -> Result<(Duration, f64), BoxError> {
    let first = f()?;
    let sum = sum_of(lane, &first)?;
    drop(first);
    let mut times = Vec::with_capacity(reps);
    for _ in 0..reps {
        let start = Instant::now();
        let h = f()?;
        lane.sync(&h)?.wait()?;
        times.push(start.elapsed());
    }
    Ok((median(times), sum))
}

fn main() -> Result<(), BoxError> {
    let args: Vec<String> = std::env::args().collect();
    let value = |flag: &str| args.iter().skip_while(|a| *a != flag).nth(1).cloned();
    let only = value("--only");
    let reps: usize = value("--reps").map(|v| v.parse()).transpose()?.unwrap_or(5);
    let skip_large = args.iter().any(|a| a == "--skip-large");
    let mut builder = Runtime::builder().split(1);
    if let Some(t) = value("--threads") {
        builder = builder.threads_per_domain(t.parse()?);
    }
    let rt = builder.build()?;
    let threads = rt.threads()[0].threads;
    println!(
        "{}; {threads} thread(s) in the domain, median of {reps}\n",
        rt.topology()
    );
    let lane = rt.lane(0)?;
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let mut rows = Vec::new();
    println!(
        "{:<44} {:<9} {:>10} {:>10} {:>10} {:>14} {:>14}",
        "instance", "path", "steps ms", "one ms", "greedy ms", "log10 flops", "greedy flops"
    );
    for inst in instances()? {
        if only.as_deref().is_some_and(|o| !inst.name.contains(o)) {
            continue;
        }
        let largest = inst.paths.iter().map(|p| p.log2_size).fold(0.0, f64::max);
        if skip_large && largest > 25.0 {
            println!(
                "{:<44} skipped: intermediates of 2^{largest:.1} elements",
                inst.name
            );
            continue;
        }
        let values = fill(&inst);
        let handles: Vec<TensorHandle> = values
            .into_iter()
            .zip(&inst.shapes)
            .map(|(v, s)| lane.upload(Tensor::from_vec(v, s)?).map_err(BoxError::from))
            .collect::<Result<_, _>>()?;
        let operands: Vec<&TensorHandle> = handles.iter().collect();
        let shapes: Vec<&[usize]> = inst.shapes.iter().map(|s| &s[..]).collect();
        let spec = EinsumSpec::parse(&inst.subscripts)?;
        let greedy_path = spec.greedy_path(&shapes)?;
        let (greedy_flops, _) = spec.path_cost(&shapes, &greedy_path)?;
        // A plan whose intermediate the machine cannot hold is refused
        // (TooLarge, naming it): reported, and the published paths still run.
        let (greedy, greedy_sum) =
            match timed(
                &lane,
                reps,
                || Ok(lane.einsum(&inst.subscripts, &operands)?),
            ) {
                Ok((time, sum)) => (Some(time), Some(sum)),
                Err(e) => {
                    println!("{:<44} greedy: {e}", inst.name);
                    (None, None)
                }
            };
        for Published {
            strategy,
            path,
            log10_flops: log_flops,
            ..
        } in &inst.paths
        {
            let (flops, _) = spec.path_cost(&shapes, path)?;
            let plan = steps(&inst, path);
            let (stepwise, steps_sum) = timed(&lane, reps, || {
                let mut terms: Vec<TensorHandle> = handles.clone();
                for (i, j, s) in &plan {
                    let b = terms.remove(*j);
                    let a = terms.remove(*i);
                    terms.push(lane.einsum(s, &[&a, &b])?);
                }
                terms.pop().ok_or_else(|| "no result".into())
            })?;
            let (one, one_sum) = timed(&lane, reps, || {
                Ok(lane.einsum_along(&inst.subscripts, &operands, path)?)
            })?;
            println!(
                "{:<44} {:<9} {:>10.3} {:>10.3} {:>10.3} {:>14.2} {:>14.2}",
                inst.name,
                strategy,
                ms(stepwise),
                ms(one),
                greedy.map_or(f64::NAN, ms),
                (flops as f64).log10(),
                (greedy_flops as f64).log10(),
            );
            if (log_flops - (flops as f64).log10()).abs() > 0.05 {
                println!("  note: the published path's log10 FLOPs is {log_flops:.2}");
            }
            let sums: Vec<f64> = [Some(steps_sum), Some(one_sum), greedy_sum]
                .into_iter()
                .flatten()
                .collect();
            rows.push(json!({
                "instance": inst.name,
                "strategy": strategy,
                "threads": threads,
                "steps_ms": ms(stepwise),
                "one_ms": ms(one),
                "greedy_ms": greedy.map(ms),
                "log10_flops": (flops as f64).log10(),
                "greedy_log10_flops": (greedy_flops as f64).log10(),
                "sum": steps_sum,
                "sums": sums,
            }));
        }
    }
    if let Some(path) = value("--json") {
        std::fs::write(
            &path,
            serde_json::to_string_pretty(&json!({ "rows": rows }))?,
        )?;
        println!("\nwrote {path}");
    }
    Ok(())
}
