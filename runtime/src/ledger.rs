//! The process's ledger of the CPUs weft runtimes run on.
//!
//! Inside a runtime each CPU belongs to one domain with one owner thread.
//! Between runtimes of one process nothing else stops two full sets of
//! threads from being pinned onto the same cores, so every build claims its
//! domains' CPUs here first, and a build whose CPUs overlap a live
//! runtime's is refused, shares that runtime, or is allowed and reported,
//! as its [`Overlap`] says. A claim lasts until the runtime's threads are
//! joined: at a shutdown that joins them all, or when its last handle is
//! dropped.

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
        let other = ledger.iter().find(|e| !e.cpus.is_disjoint(cpus));
        match (policy, other) {
            (Overlap::Allow, _) | (_, None) => break,
            (Overlap::Refuse, Some(other)) => {
                return Err(BuildError::Overlap {
                    cpus: other.cpus.intersection(cpus),
                    runtime: other.id,
                    runtime_cpus: other.cpus.clone(),
                })
            }
            (Overlap::Share, Some(other)) => {
                if let Some(inner) = other.runtime.as_ref().and_then(Weak::upgrade) {
                    return Ok(Claimed::Shared(inner));
                }
                // Still being built, or its last handle is gone and its
                // threads are being joined: its claim is attached or
                // released soon, and then there is something to share or
                // the CPUs are free.
                CHANGED.wait(&mut ledger);
            }
        }
    }
    ledger.push(Entry {
        id,
        cpus: cpus.clone(),
        runtime: None,
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

impl Drop for Claim {
    fn drop(&mut self) {
        LEDGER.lock().retain(|e| e.id != self.id);
        CHANGED.notify_all();
    }
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
