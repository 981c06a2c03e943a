//! Tensor handles: names of resident tensors, and the per-domain state that makes them.
//!
//! A [`TensorHandle`] names a tensor resident in one domain's store (a CPU
//! domain or a CUDA device). It is returned when the op that produces the
//! tensor is submitted, before the op runs, so a whole pipeline is
//! submitted without waiting; each op is ordered after the events of the
//! ops that produce its inputs.
//!
//! # Lifetimes
//!
//! Every queued op holds clones of the handles it reads and writes until it
//! is run or cancelled. The last clone of a handle sends the tensor's id to
//! its domain's free queue and nudges the domain's actor (batched: one
//! nudge per batch of releases, `weft_actors::Releaser`), which drains the
//! queue between ops, at once if it is idle; every tensor op drains it too
//! before it runs (they are all submitted through `Lane::submit_op`, in
//! `ops/mod.rs`), so what an op sees of the domain's memory is current. So
//! a tensor is freed promptly after every op that names it has finished
//! with it, and never while one is still queued. The clones a finished op
//! held go back through the domain's [`Spent`] bin: the next submit into
//! the domain drops them (or the actor, when nobody submits for a while
//! and before it idles); memory reports drop them all first.
//!
//! The same queue carries host buffers another domain gives back (a
//! transfer's swap, [`Release::Buffer`]) into the engine's buffer pool.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use weft_actors::{Actor, Event, Released, Releaser};
use weft_core::{DType, Data, Meta, Place, TensorEngine, TensorId};

use crate::functions::Functions;

/// What a domain's free queue carries to its actor.
#[derive(Debug)]
pub(crate) enum Release {
    /// A tensor whose last handle is gone: freed.
    Tensor(TensorId),
    /// A host buffer another domain is done with: kept in the engine's
    /// pool ([`TensorEngine::keep_buffer`]).
    Buffer(Data),
}

impl Release {
    /// Frees or keeps what was released, on the actor.
    pub(crate) fn apply<E: TensorEngine>(self, engine: &mut E) {
        match self {
            Release::Tensor(id) => {
                engine.free(id);
            }
            Release::Buffer(data) => engine.keep_buffer(data),
        }
    }
}

/// Identifies one runtime, so that a handle of another runtime is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RuntimeId(pub(crate) u64);

impl std::fmt::Display for RuntimeId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "runtime {}", self.0)
    }
}

impl RuntimeId {
    pub(crate) fn next() -> RuntimeId {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        RuntimeId(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

/// What every lane into one domain shares for tensor work: where handles
/// come from and where their last clones send the tensors to free.
#[derive(Debug)]
pub(crate) struct DomainTensors {
    runtime: RuntimeId,
    place: Place,
    /// The runtime's thread names begin with it ([`crate::Builder::thread_names`]).
    prefix: Arc<str>,
    next_id: Arc<AtomicU64>,
    /// Shared by every handle of the domain: one reference count each.
    frees: Arc<Releaser<Release>>,
    freed: Arc<Released<Release>>,
    spent: Spent,
    /// The runtime's traced functions, shared by all its domains.
    functions: Arc<Functions>,
}

/// The handles of one finished op: those it read, those it wrote.
type Finished = (
    smallvec::SmallVec<[TensorHandle; 3]>,
    smallvec::SmallVec<[TensorHandle; 1]>,
);

/// Handles that ops on the actor have finished with, on their way back
/// to be dropped on a submitting thread.
///
/// A handle, its tensor's record and the event of the op that produced it
/// are allocated by the thread that submitted that op. Dropped on the
/// actor, the last of them would be freed there, and the C allocator
/// frees a block into the arena of the thread that allocated it, under
/// that arena's lock, while the submitter allocates the next op's from it:
/// profiles of a chain of small ops showed the actor blocked on that lock
/// and switched out. So an op hands its handles to this bin; each submit
/// into the domain drops a few ([`Spent::drop_some`]) on the submitter's
/// thread, and the actor drops whatever is left before it idles, so a
/// released tensor is still freed without waiting for another op.
///
/// An op reaches it through the domain's state the op holds anyway, and
/// every handle shares one `Arc` of the release queue: a reference count
/// that both threads write costs a cache-line transfer whenever the other
/// one wrote it last, and per op such counts add up.
#[derive(Debug, Clone)]
pub(crate) struct Spent {
    tx: crossbeam_channel::Sender<Finished>,
    rx: crossbeam_channel::Receiver<Finished>,
}

/// Spent ops' handles each submit drops: more than the one op it adds.
const DROPPED_PER_SUBMIT: usize = 8;

/// Spent ops' handles the bin holds before the actor drops some itself.
const BACKLOG: usize = 16;

impl Spent {
    pub(crate) fn new() -> Spent {
        let (tx, rx) = crossbeam_channel::unbounded();
        Spent { tx, rx }
    }

    /// Keeps an op's handles for a submitter to drop. Called on the
    /// actor: when no submitter has come back for a while (the bin holds
    /// more than [`BACKLOG`] ops' handles: the actor works through a
    /// backlog while nobody submits, so nobody allocates either), it drops
    /// a few itself, so that tensors are freed as the backlog runs.
    pub(crate) fn give(&self, finished: Finished) {
        // The bin lives as long as any sender: a failed send cannot happen,
        // and would only drop the handles here.
        let _ = self.tx.send(finished);
        if self.rx.len() > BACKLOG {
            self.drop_some();
        }
    }

    /// Drops a few spent handles (on the calling thread).
    pub(crate) fn drop_some(&self) {
        for _ in 0..DROPPED_PER_SUBMIT {
            if self.rx.try_recv().is_err() {
                break;
            }
        }
    }

    /// Drops every spent handle.
    pub(crate) fn drop_all(&self) {
        while self.rx.try_recv().is_ok() {}
    }
}

impl DomainTensors {
    /// What the lanes into `place` share: `next_id` is shared by all
    /// domains of a runtime (ids are unique in it); `freed` is the free
    /// queue that `actor`'s housekeeping drains, and releases nudge it.
    pub(crate) fn start<E: 'static>(
        runtime: RuntimeId,
        (place, prefix): (Place, &Arc<str>),
        (next_id, functions): (&Arc<AtomicU64>, &Arc<Functions>),
        (frees, freed, spent): (Releaser<Release>, Arc<Released<Release>>, Spent),
        actor: &Actor<E>,
    ) -> Arc<Self> {
        Arc::new(DomainTensors {
            runtime,
            place,
            prefix: prefix.clone(),
            next_id: next_id.clone(),
            frees: Arc::new(frees.nudging(actor.nudge())),
            freed,
            spent,
            functions: functions.clone(),
        })
    }

    /// The runtime's cache of traced functions.
    pub(crate) fn functions(&self) -> &Arc<Functions> {
        &self.functions
    }

    /// The domain's free queue, for another domain to give buffers back
    /// into ([`Release::Buffer`]).
    pub(crate) fn frees(&self) -> &Arc<Releaser<Release>> {
        &self.frees
    }

    /// The domain's bin of spent handles.
    pub(crate) fn spent(&self) -> &Spent {
        &self.spent
    }

    /// The runtime the domain belongs to.
    pub(crate) fn runtime(&self) -> RuntimeId {
        self.runtime
    }

    /// The domain.
    pub(crate) fn place(&self) -> Place {
        self.place
    }

    /// The name of the actor of `place` in this domain's runtime.
    pub(crate) fn actor_name(&self, place: Place) -> String {
        actor_name(&self.prefix, place)
    }

    /// A handle for a tensor that an op about to be submitted produces: a
    /// fresh id in this domain. Its [`TensorHandle::ready`] event is set by
    /// [`TensorHandle::set_ready`] once the op is submitted, before the
    /// handle is handed out.
    pub(crate) fn new_handle(&self, meta: Meta) -> TensorHandle {
        TensorHandle {
            inner: Arc::new(HandleInner {
                runtime: self.runtime,
                place: self.place,
                id: TensorId(self.next_id.fetch_add(1, Ordering::Relaxed)),
                dtype: meta.dtype,
                shape: meta.shape,
                ready: OnceLock::new(),
                frees: self.frees.clone(),
            }),
        }
    }

    /// Frees the tensors whose last handle is gone. Runs on the actor.
    pub(crate) fn release_freed<E: TensorEngine>(&self, engine: &mut E) {
        self.freed.drain_in_op(|release| release.apply(engine));
    }
}

/// A name for a tensor resident in one CPU domain or CUDA device. Cheap to
/// clone; the tensor is freed when the last clone is dropped (see the
/// module docs).
#[derive(Clone)]
pub struct TensorHandle {
    inner: Arc<HandleInner>,
}

struct HandleInner {
    runtime: RuntimeId,
    place: Place,
    id: TensorId,
    dtype: DType,
    shape: Vec<usize>,
    /// The producing op's completion; set right after its submission,
    /// before the handle is returned.
    ready: OnceLock<Event>,
    frees: Arc<Releaser<Release>>,
}

impl Drop for HandleInner {
    fn drop(&mut self) {
        // The domain is gone if this fails; its store went with it.
        self.frees.release(Release::Tensor(self.id));
    }
}

impl TensorHandle {
    /// The element type.
    pub fn dtype(&self) -> DType {
        self.inner.dtype
    }

    /// The shape.
    pub fn shape(&self) -> &[usize] {
        &self.inner.shape
    }

    /// The element type and shape, as the shape rules take them.
    pub(crate) fn meta(&self) -> Meta {
        Meta {
            dtype: self.dtype(),
            shape: self.shape().to_vec(),
        }
    }

    /// The index of the CPU domain (or CUDA device) the tensor lives in.
    pub fn domain(&self) -> usize {
        self.inner.place.index()
    }

    /// Where the tensor lives.
    pub fn place(&self) -> Place {
        self.inner.place
    }

    /// The runtime the tensor belongs to.
    pub(crate) fn runtime(&self) -> RuntimeId {
        self.inner.runtime
    }

    /// The tensor's id in its domain's store.
    pub fn id(&self) -> TensorId {
        self.inner.id
    }

    /// The completion of the op that produces the tensor.
    pub fn ready(&self) -> Event {
        self.inner
            .ready
            .get()
            .expect("a handle is returned only once its op is submitted")
            .clone()
    }

    /// Whether this is the last clone of the handle but for `held` more
    /// that the caller holds itself: then nothing else can read the tensor
    /// through it, now or later (nobody else has one to clone).
    pub(crate) fn is_last(&self, held: usize) -> bool {
        Arc::strong_count(&self.inner) == 1 + held
    }

    /// Sets the producing op's completion, once, right after the op is
    /// submitted (see [`DomainTensors::new_handle`]).
    pub(crate) fn set_ready(&self, event: Event) {
        self.inner
            .ready
            .set(event)
            .unwrap_or_else(|_| unreachable!("set once, by the op's submission"));
    }
}

impl fmt::Debug for TensorHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "TensorHandle({:?} {}{:?} in {})",
            self.inner.id, self.inner.dtype, self.inner.shape, self.inner.place
        )
    }
}

/// The thread name of the actor of `place`, as the runtime starts it.
pub(crate) fn actor_name(prefix: &str, place: Place) -> String {
    match place {
        Place::Cpu(i) => format!("{prefix}-cpu-{i}"),
        Place::Cuda(i) => format!("{prefix}-cuda-{i}"),
    }
}
