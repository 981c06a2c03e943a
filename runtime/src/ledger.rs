//! The process's ledger of the CPUs weft runtimes run on.
//!
//! Inside a runtime each CPU belongs to one domain with one owner thread.
//! Between runtimes of one process nothing else stops two full sets of
//! threads from being pinned onto the same cores, so every build claims its
//! domains' CPUs here first, and a build whose CPUs overlap a live
//! runtime's is refused, shares that runtime, or is allowed and reported,
//! as its [`Overlap`] says. A claim lasts until the runtime's threads are
//! joined: at a shutdown that joins them all, or when its last handle is
//! dropped. A runtime whose shutdown has begun (or whose last handle is
//! gone) keeps its claim until then but is never shared: a build that
//! would share it builds beside it instead.

use std::any::Any;
use std::fmt;
use std::sync::{Arc, Weak};

use parking_lot::{Condvar, Mutex};
use weft_topology::CpuSet;

use crate::config::Overlap;
use crate::error::BuildError;
use crate::handle::RuntimeId;

/// A live runtime whose CPUs overlap another's: reported by both.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overlapping {
    /// The other runtime.
    pub runtime: RuntimeId,
    /// The CPUs both run on.
    pub cpus: CpuSet,
}

impl fmt::Display for Overlapping {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CPUs {} shared with {}", self.cpus, self.runtime)
    }
}

/// One claim: a runtime's CPUs, and the runtime once it is built.
struct Entry {
    id: RuntimeId,
    cpus: CpuSet,
    /// `None` while the runtime is being built.
    runtime: Option<Weak<dyn Any + Send + Sync>>,
    /// Set once its shutdown has begun: its threads still run its CPUs,
    /// but it takes no more work.
    closing: bool,
}

/// Every live claim of the process, in the order they were made.
static LEDGER: Mutex<Vec<Entry>> = Mutex::new(Vec::new());
/// Signalled when a claim is attached to its runtime or released, for
/// builds that wait to share a runtime still being built or torn down.
static CHANGED: Condvar = Condvar::new();

/// What a claim gave the build.
pub(crate) enum Claimed {
    /// The CPUs are claimed for a new runtime.
    New(Claim),
    /// An overlapping runtime to share ([`Overlap::Share`]): the shared
    /// state of the one attached ([`Claim::attach`]), which the ledger
    /// keeps without knowing its type.
    Shared(Arc<dyn Any + Send + Sync>),
}

/// A runtime's claim on its CPUs; dropping it releases them.
#[derive(Debug)]
pub(crate) struct Claim {
    id: RuntimeId,
}

/// Claims `cpus` for runtime `id` under `policy`.
///
/// # Errors
///
/// [`BuildError::Overlap`] when `policy` is [`Overlap::Refuse`] and a live
/// runtime runs some of `cpus`.
pub(crate) fn claim(id: RuntimeId, cpus: &CpuSet, policy: Overlap) -> Result<Claimed, BuildError> {
    let mut ledger = LEDGER.lock();
    loop {
        let mut overlapping = ledger.iter().filter(|e| !e.cpus.is_disjoint(cpus));
        match policy {
            Overlap::Allow => break,
            Overlap::Refuse => match overlapping.next() {
                None => break,
                Some(other) => {
                    return Err(BuildError::Overlap {
                        cpus: other.cpus.intersection(cpus),
                        runtime: other.id,
                        runtime_cpus: other.cpus.clone(),
                    })
                }
            },
            Overlap::Share => {
                let mut being_built = false;
                for other in overlapping.filter(|e| !e.closing) {
                    match &other.runtime {
                        // Its last handle may be gone, its threads being
                        // joined: closing, though not marked yet.
                        Some(runtime) => match runtime.upgrade() {
                            Some(inner) => return Ok(Claimed::Shared(inner)),
                            None => continue,
                        },
                        None if BUILDING.get() == Some(other.id) => {
                            return Err(BuildError::SharesOwnBuild {
                                runtime: other.id,
                                cpus: other.cpus.intersection(cpus),
                            })
                        }
                        None => being_built = true,
                    }
                }
                if !being_built {
                    // Nothing live overlaps (closing runtimes, if any, are
                    // built beside and reported as overlaps).
                    break;
                }
                // Still being built by another thread: its claim is
                // attached or released soon, and then there is something
                // to share or the CPUs are free.
                CHANGED.wait(&mut ledger);
            }
        }
    }
    ledger.push(Entry {
        id,
        cpus: cpus.clone(),
        runtime: None,
        closing: false,
    });
    Ok(Claimed::New(Claim { id }))
}

impl Claim {
    /// Records the built runtime, so that later builds may share it.
    pub(crate) fn attach(&self, runtime: Arc<dyn Any + Send + Sync>) {
        let mut ledger = LEDGER.lock();
        if let Some(entry) = ledger.iter_mut().find(|e| e.id == self.id) {
            entry.runtime = Some(Arc::downgrade(&runtime));
        }
        CHANGED.notify_all();
    }
}

/// Runtime `id` has begun to shut down (or its last handle is gone): it
/// is not shared any more.
pub(crate) fn closing(id: RuntimeId) {
    let mut ledger = LEDGER.lock();
    if let Some(entry) = ledger.iter_mut().find(|e| e.id == id) {
        entry.closing = true;
    }
    CHANGED.notify_all();
}

std::thread_local! {
    /// The runtime this thread is building, if any: a build that would
    /// share it from here (a host's launcher calling
    /// [`crate::Runtime::global`]) would wait for itself.
    static BUILDING: std::cell::Cell<Option<RuntimeId>> = const { std::cell::Cell::new(None) };
}

/// Marks the current thread as building runtime `id` until the guard is
/// dropped.
pub(crate) fn building(id: RuntimeId) -> Building {
    Building {
        previous: BUILDING.replace(Some(id)),
    }
}

/// Restores what the current thread was building ([`building`]).
pub(crate) struct Building {
    previous: Option<RuntimeId>,
}

impl Drop for Building {
    fn drop(&mut self) {
        BUILDING.set(self.previous);
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        LEDGER.lock().retain(|e| e.id != self.id);
        CHANGED.notify_all();
    }
}

/// A runtime of the process whose threads are not all joined yet, as the
/// ledger holds it ([`live_runtimes`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveRuntime {
    /// The runtime.
    pub runtime: RuntimeId,
    /// Its CPU domains' CPUs.
    pub cpus: CpuSet,
    /// Whether its shutdown has begun (or its last handle is gone): it
    /// takes no more work and is not shared.
    pub closing: bool,
}

/// Every runtime of the process whose threads are not all joined yet
/// (being built, running, or shutting down), in the order they were
/// built: what the process's CPUs are claimed by. A runtime leaves the
/// list when a shutdown joins all its threads, its last handle is
/// dropped, or its build fails.
pub fn live_runtimes() -> Vec<LiveRuntime> {
    (LEDGER.lock().iter())
        .map(|e| LiveRuntime {
            runtime: e.id,
            cpus: e.cpus.clone(),
            closing: e.closing,
        })
        .collect()
}

/// The live runtimes other than `id` whose CPUs overlap `cpus`.
pub(crate) fn overlaps(id: RuntimeId, cpus: &CpuSet) -> Vec<Overlapping> {
    LEDGER
        .lock()
        .iter()
        .filter(|e| e.id != id && !e.cpus.is_disjoint(cpus))
        .map(|e| Overlapping {
            runtime: e.id,
            cpus: e.cpus.intersection(cpus),
        })
        .collect()
}
