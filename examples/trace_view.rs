//! Turns a weft trace (the Chrome trace-event JSON a traced runtime
//! writes) into a timeline you can open without a network: one SVG, or an
//! HTML page holding it, with a row per lane grouped by actor, ops as bars
//! coloured by outcome after their queue time, transfers as arrows, and a
//! time axis.
//!
//! `cargo run --release -p weft-examples --example trace_view -- TRACE.json OUT.svg|OUT.html`
//!
//! A runtime can also write the picture itself: `Builder::trace` (or
//! `WEFT_TRACE`) with a path ending in `.svg` or `.html`.

use std::path::PathBuf;
use std::process::ExitCode;

use weft::trace::{TraceFormat, TraceView};

fn main() -> ExitCode {
    let args: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    let [input, output] = args.as_slice() else {
        eprintln!("usage: trace_view TRACE.json OUT.svg|OUT.html");
        return ExitCode::from(2);
    };
    match run(input, output) {
        Ok(summary) => {
            println!("{summary}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("trace_view: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(input: &PathBuf, output: &PathBuf) -> Result<String, String> {
    let text =
        std::fs::read_to_string(input).map_err(|e| format!("reading {}: {e}", input.display()))?;
    let view =
        TraceView::from_chrome_json(&text).map_err(|e| format!("{}: {e}", input.display()))?;
    let picture = match TraceFormat::of(output) {
        TraceFormat::Svg => view.to_svg(),
        TraceFormat::Html => view.to_html(),
        TraceFormat::Json => {
            return Err(format!(
                "{}: the picture's name must end in .svg or .html",
                output.display()
            ))
        }
    };
    std::fs::write(output, picture).map_err(|e| format!("writing {}: {e}", output.display()))?;
    Ok(format!(
        "{} ops of {} actors drawn in {}",
        view.ops().count(),
        view.actors.len(),
        output.display()
    ))
}
