//! What a case is — its name, its title and how it runs — and what the
//! cases of one domain run on. The cases themselves are in `cases/`, one
//! file each.

use weft::{Lane, Runtime};
use weft_examples::BoxError;

use crate::report::Row;
use crate::settings::Settings;

/// One comparison: weft and its baseline on the same work.
pub(crate) struct Case {
    /// Its name for `--only`, and the `case` of its rows.
    pub(crate) name: &'static str,
    /// Its heading in the printed table.
    pub(crate) title: &'static str,
    pub(crate) run: Run,
}

/// How a case runs; each pushes its rows.
pub(crate) enum Run {
    /// On the harness's runtime of one domain.
    InDomain(fn(&Domain<'_>, &mut Vec<Row>) -> Result<(), BoxError>),
    /// On a runtime of its own, built once the one-domain runtime is shut
    /// down (both would pin threads to the same CPUs).
    OwnRuntime(fn(&Settings, &mut Vec<Row>) -> Result<(), BoxError>),
}

/// What the cases of one domain share: the settings, the runtime and a lane
/// into its domain, the domain's threads, and a rayon pool of as many threads
/// for the baselines that call faer or rayon directly.
#[derive(Clone, Copy)]
pub(crate) struct Domain<'a> {
    pub(crate) settings: &'a Settings,
    pub(crate) rt: &'a Runtime,
    pub(crate) lane: &'a Lane,
    pub(crate) threads: usize,
    pub(crate) direct_pool: &'a rayon::ThreadPool,
}
