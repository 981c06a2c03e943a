//! The harness's settings: its command line and the runtime it builds.

use std::path::PathBuf;
use std::time::Duration;

use weft::{engine::Pinning, Runtime};
use weft_examples::BoxError;

/// weft's default spins: an idle actor spins this long before parking…
const IDLE_SPIN: Duration = Duration::from_micros(50);
/// …and a waiting caller this long; the raw baselines spin alike.
const WAIT_SPIN: Duration = Duration::from_micros(20);

/// What the command line asked for.
pub(crate) struct Settings {
    pub(crate) quick: bool,
    only: Option<String>,
    pub(crate) json: Option<PathBuf>,
    /// Where the charts go (`--plot DIR`).
    pub(crate) plot: Option<PathBuf>,
    /// A saved run to draw instead of running (`--from PATH`).
    pub(crate) from: Option<PathBuf>,
    /// numpy's figures for the charts (`--numpy PATH`).
    pub(crate) numpy: Option<PathBuf>,
    /// weft's pinning (default per core); the baselines' threads are not pinned.
    pub(crate) pinning: Pinning,
    /// The actor's idle spin and the caller's wait spin, weft's and the raw
    /// baselines' alike.
    pub(crate) idle_spin: Duration,
    pub(crate) wait_spin: Duration,
    pub(crate) args: Vec<String>,
}

impl Settings {
    /// Reads the command line; `cases` are the names `--only` accepts.
    pub(crate) fn parse(cases: &[&str]) -> Result<Settings, BoxError> {
        let args: Vec<String> = std::env::args().skip(1).collect();
        let mut settings = Settings {
            quick: false,
            only: None,
            json: None,
            plot: None,
            from: None,
            numpy: None,
            pinning: Pinning::PerCore,
            idle_spin: IDLE_SPIN,
            wait_spin: WAIT_SPIN,
            args: args.clone(),
        };
        let mut it = args.into_iter();
        while let Some(arg) = it.next() {
            match arg.as_str() {
                "--quick" => settings.quick = true,
                "--only" => {
                    let name = it.next().ok_or("--only needs a case name")?;
                    if !cases.contains(&name.as_str()) {
                        return Err(
                            format!("no case {name:?}; the cases: {}", cases.join(", ")).into()
                        );
                    }
                    settings.only = Some(name);
                }
                "--json" => settings.json = Some(it.next().ok_or("--json needs a path")?.into()),
                "--plot" => settings.plot = Some(it.next().ok_or("--plot needs a folder")?.into()),
                "--from" => settings.from = Some(it.next().ok_or("--from needs a path")?.into()),
                "--numpy" => settings.numpy = Some(it.next().ok_or("--numpy needs a path")?.into()),
                "--pinning" => {
                    settings.pinning = match it.next().as_deref() {
                        Some("per-core") => Pinning::PerCore,
                        Some("domain") => Pinning::Domain,
                        Some("none") => Pinning::None,
                        _ => return Err("--pinning needs per-core, domain or none".into()),
                    }
                }
                "--idle-spin-us" | "--wait-spin-us" => {
                    let us: u64 = it
                        .next()
                        .and_then(|v| v.parse().ok())
                        .ok_or_else(|| format!("{arg} needs a number of microseconds"))?;
                    if arg == "--idle-spin-us" {
                        settings.idle_spin = Duration::from_micros(us);
                    } else {
                        settings.wait_spin = Duration::from_micros(us);
                    }
                }
                "-h" | "--help" => {
                    println!(
                        "compare [--quick] [--only CASE] [--json PATH] [--plot DIR [--from PATH] [--numpy PATH]] \
                         [--pinning per-core|domain|none] [--idle-spin-us N] [--wait-spin-us N]\ncases: {}",
                        cases.join(", ")
                    );
                    std::process::exit(0);
                }
                other => return Err(format!("unknown argument {other:?} (try --help)").into()),
            }
        }
        if settings.from.is_some() && settings.plot.is_none() {
            return Err("--from draws a saved run: it needs --plot DIR".into());
        }
        Ok(settings)
    }

    /// A runtime of `domains` domains as these settings say.
    pub(crate) fn runtime(&self, domains: usize) -> Result<Runtime, weft::BuildError> {
        Runtime::builder()
            .split(domains)
            .pinning(self.pinning)
            .idle_spin(self.idle_spin)
            .wait_spin(self.wait_spin)
            .build()
    }

    pub(crate) fn wants(&self, case: &str) -> bool {
        self.only.as_deref().is_none_or(|o| o == case)
    }

    /// Repetitions: `full`, or a third of it (at least 3) with `--quick`.
    pub(crate) fn reps(&self, full: usize) -> usize {
        if self.quick {
            (full / 3).max(3)
        } else {
            full
        }
    }

    /// Items per repetition: `full`, or a quarter of it with `--quick`.
    pub(crate) fn count(&self, full: u64) -> u64 {
        if self.quick {
            (full / 4).max(1)
        } else {
            full
        }
    }
}
