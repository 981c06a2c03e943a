//! Writes a timeline of a small tensor pipeline across domains.
//!
//! `cargo run --release -p weft-examples --example trace [-- PATH]`
//!
//! Every op of every actor is recorded (queue time and run time, per lane;
//! transfers as arrows between actors) and written when the runtime shuts
//! down: as Chrome trace-event JSON, or as a timeline picture for a PATH
//! ending in `.svg` or `.html`. Any program gets the same with
//! `WEFT_TRACE=PATH`, without changing its code.

use std::path::PathBuf;
use weft::ops::{CreateOps, LinalgOps, ReduceOps};

use weft::{ops::Distribution, runtime::Pipeline, trace::TraceFormat, DType, Runtime};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).map_or_else(
        || std::env::temp_dir().join("weft-trace.json"),
        PathBuf::from,
    );
    let mut builder = Runtime::builder().trace(&path);
    if Runtime::new()?.domains().len() == 1 {
        builder = builder.split(2);
    }
    let rt = builder.build()?;
    let domains = rt.domains().len();
    println!("{}", rt.topology());

    let pipeline = Pipeline::new(&rt, "generate", 0, |lane, i| {
        lane.random(DType::F64, &[4, 32, 32], Distribution::Normal, i as u64)
    })
    .stage("contract", 1 % domains, |lane, x| {
        lane.einsum("bij,bkj->ik", &[x, x])
    })
    .stage("factorize", 0, |lane, gram| Ok(lane.svd(gram)?.1))
    .stage("reduce", 1 % domains, |lane, s| lane.sum_all(s))
    .in_flight(8);
    let run = pipeline.run(40)?;
    for out in &run.outputs {
        out.as_ref().map_err(|e| e.to_string())?;
    }
    println!("{} items in {:.1?}", run.outputs.len(), run.elapsed);
    println!("{}", rt.stats());

    rt.shutdown()?; // writes the file, every op recorded by then
    let records: usize = rt
        .trace()
        .expect("traced")
        .snapshot()
        .iter()
        .map(|a| a.records.len())
        .sum();
    let open = match TraceFormat::of(&path) {
        TraceFormat::Json => "at https://ui.perfetto.dev (Open trace file) or in chrome://tracing",
        TraceFormat::Svg | TraceFormat::Html => "in any browser, offline",
    };
    println!("wrote {records} ops to {}\nopen it {open}", path.display());
    Ok(())
}
