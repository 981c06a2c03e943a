//! Scoped application threads with lanes, for closures that borrow.

use std::fmt;
use std::thread::ScopedJoinHandle;

use crate::error::RuntimeError;
use crate::{Lane, Runtime};

/// Spawns application threads that may borrow from the enclosing stack;
/// see [`Runtime::scope`].
pub struct Scope<'scope, 'env: 'scope> {
    inner: &'scope std::thread::Scope<'scope, 'env>,
    rt: Runtime,
}

impl<'scope, 'env> Scope<'scope, 'env> {
    pub(crate) fn new(inner: &'scope std::thread::Scope<'scope, 'env>, rt: Runtime) -> Self {
        Scope { inner, rt }
    }

    /// Runs `f` on a new named application thread with its own lane into
    /// CPU domain `domain`; the thread is joined when the scope ends.
    ///
    /// # Errors
    ///
    /// As [`Runtime::lane`], or [`RuntimeError::Thread`].
    pub fn spawn<F, T>(
        &self,
        domain: usize,
        f: F,
    ) -> Result<ScopedJoinHandle<'scope, T>, RuntimeError>
    where
        F: FnOnce(Lane) -> T + Send + 'scope,
        T: Send + 'scope,
    {
        let lane = self.rt.lane(domain)?;
        std::thread::Builder::new()
            .name(self.rt.app_thread_name())
            .spawn_scoped(self.inner, move || f(lane))
            .map_err(RuntimeError::Thread)
    }
}

impl fmt::Debug for Scope<'_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scope").finish_non_exhaustive()
    }
}
