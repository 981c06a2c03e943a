//! Deferred release: names of resources handed back from any thread, taken
//! by the actor that owns the resources when it next runs an op.
//!
//! An engine's resources (resident tensors) are named by handles held in
//! application code and in queued ops. Dropping the last handle cannot
//! touch the engine — only its actor may — so it sends the name here
//! instead, and the actor drains the queue before the ops that allocate.
//!
//! Why a resource is never released while an op still uses it: every op
//! that names a resource holds a handle clone until the op has run (its
//! closure is dropped after the run, on the actor), so the last clone, and
//! with it the name's [`Releaser::release`], comes after every such op. The
//! loom model `handle_release_vs_queued_reader` checks the race between a
//! handle dropped on another thread and the op that reads through a clone.

use crate::sync::channel;

/// The sending side: cheap to clone, usable from any thread.
#[derive(Debug)]
pub struct Releaser<T>(channel::Sender<T>);

/// The actor's side: drains what was released.
#[derive(Debug)]
pub struct Released<T>(channel::Receiver<T>);

/// A release queue: its sending and draining sides.
pub fn release_queue<T>() -> (Releaser<T>, Released<T>) {
    let (tx, rx) = channel::unbounded();
    (Releaser(tx), Released(rx))
}

impl<T> Releaser<T> {
    /// Hands `name` back. Returns `false` if the draining side is gone
    /// (the engine, and every resource with it, no longer exists).
    pub fn release(&self, name: T) -> bool {
        self.0.send(name).is_ok()
    }
}

impl<T> Clone for Releaser<T> {
    fn clone(&self) -> Self {
        Releaser(self.0.clone())
    }
}

impl<T> Released<T> {
    /// Calls `f` with every name released so far.
    pub fn drain(&self, mut f: impl FnMut(T)) {
        while let Ok(name) = self.0.try_recv() {
            f(name);
        }
    }
}
