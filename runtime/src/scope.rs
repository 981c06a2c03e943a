//! Application threads with their own lanes: `Runtime::spawn`, `Runtime::scope` and `Scope`.

use std::fmt;
use std::thread::{JoinHandle, ScopedJoinHandle};

use crate::error::RuntimeError;
use crate::lane::Lane;
use crate::runtime::Runtime;

impl Runtime {
    /// Runs `f` on a new named application thread (`weft-app-N`) with its
    /// own lane into `domain`.
    ///
    /// # Errors
    ///
    /// As [`Runtime::lane`], or [`RuntimeError::Thread`].
    pub fn spawn<F, T>(&self, domain: usize, f: F) -> Result<JoinHandle<T>, RuntimeError>
    where
        F: FnOnce(Lane) -> T + Send + 'static,
        T: Send + 'static,
    {
        let lane = self.lane(domain)?;
        std::thread::Builder::new()
            .name(self.app_thread_name())
            .spawn(move || f(lane))
            .map_err(RuntimeError::Thread)
    }

    /// Runs `f` with a [`Scope`] whose threads may borrow from the caller;
    /// all of them are joined before `scope` returns.
    ///
    /// ```
    /// let rt = weft::Runtime::builder().split(1).build()?;
    /// let inputs = vec![1u64, 2, 3];
    /// let total: u64 = rt.scope(|s| {
    ///     let handles: Vec<_> = inputs
    ///         .iter()
    ///         .map(|&x| s.spawn(0, move |lane| lane.run(move |_| x * 10).unwrap().wait().unwrap()).unwrap())
    ///         .collect();
    ///     handles.into_iter().map(|h| h.join().unwrap()).sum()
    /// });
    /// assert_eq!(total, 60);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn scope<'env, F, R>(&self, f: F) -> R
    where
        F: for<'scope> FnOnce(&Scope<'scope, 'env>) -> R,
    {
        std::thread::scope(|s| f(&Scope::new(s, self.clone())))
    }
}

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
