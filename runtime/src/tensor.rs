//! Tensor handles and the tensor ops of a lane.
//!
//! A [`TensorHandle`] names a tensor resident in one CPU domain's store. It
//! is returned when the op that produces the tensor is submitted, before
//! the op runs, so a whole pipeline is submitted without waiting; each op
//! is ordered after the events of the ops that produce its inputs.
//!
//! # Lifetimes
//!
//! Every queued op holds clones of the handles it reads and writes until it
//! is run or cancelled. The last clone of a handle sends the tensor's id to
//! its domain's free queue, which the domain drains at the start of its
//! next tensor op. So a tensor is freed only after every op that names it
//! has finished with it, and never while one is still queued.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use weft_actors::{
    release_queue, ActorClosed, Event, Flow, Op, Released, Releaser, SubmitError, Ticket,
};
use weft_engines::elementwise::CmpOp;
use weft_engines::structural::SliceAxis;
use weft_engines::{
    BinaryOp, CpuEngine, DType, DeviceError, Distribution, EinsumSpec, EngineMemory, ExecError,
    Linalg, Meta, NotResident, Place, ReduceOp, Scalar, Tensor, TensorEngine, TensorError,
    TensorId, TensorOp, UnaryOp, Unsupported,
};

use crate::lane::Lane;

/// A small op's inputs, inline.
type Inputs<T> = smallvec::SmallVec<[T; 3]>;
/// A small op's outputs, inline.
type Outputs<T> = smallvec::SmallVec<[T; 1]>;

/// Identifies one runtime, so that a handle of another runtime is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RuntimeId(pub(crate) u64);

impl RuntimeId {
    pub(crate) fn next() -> RuntimeId {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        RuntimeId(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

/// What every lane into one domain shares for tensor work.
#[derive(Debug)]
pub(crate) struct DomainTensors {
    pub(crate) runtime: RuntimeId,
    pub(crate) place: Place,
    next_id: Arc<AtomicU64>,
    frees: Releaser<TensorId>,
    freed: Released<TensorId>,
}

impl DomainTensors {
    /// `next_id` is shared by all domains of a runtime: ids are unique in it.
    pub(crate) fn new(runtime: RuntimeId, place: Place, next_id: Arc<AtomicU64>) -> Self {
        let (frees, freed) = release_queue();
        DomainTensors {
            runtime,
            place,
            next_id,
            frees,
            freed,
        }
    }

    /// Frees the tensors whose last handle is gone. Runs on the actor.
    fn release_freed<E: TensorEngine>(&self, engine: &mut E) {
        self.freed.drain(|id| {
            engine.free(id);
        });
    }
}

/// The name of the actor of `place` (as the runtime starts it).
fn actor_name(place: Place) -> String {
    match place {
        Place::Cpu(i) => format!("weft-cpu-{i}"),
        Place::Cuda(i) => format!("weft-cuda-{i}"),
    }
}

/// What a domain (or device) holds in memory (see [`Lane::memory`]).
pub type DomainMemory = EngineMemory;

/// A tensor op refused at the call site, or failed on the actor.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum OpError {
    /// Shapes, element types or arguments that do not fit the op.
    #[error(transparent)]
    Tensor(#[from] TensorError),
    /// A handle of another runtime.
    #[error("{op}: the handle belongs to runtime {handle:?}, this lane to runtime {lane:?}")]
    ForeignHandle {
        /// The op.
        op: &'static str,
        /// The handle's runtime.
        handle: RuntimeId,
        /// The lane's runtime.
        lane: RuntimeId,
    },
    /// A handle of another domain or device, used without a transfer.
    #[error("{op}: the tensor lives in {handle}, this lane feeds {lane}")]
    WrongDomain {
        /// The op.
        op: &'static str,
        /// Where the handle's tensor lives.
        handle: Place,
        /// What the lane feeds.
        lane: Place,
    },
    /// The tensor is not resident (it was removed behind its handle's back).
    #[error(transparent)]
    NotResident(#[from] NotResident),
    /// There is no CPU domain with this index.
    #[error("no CPU domain {domain}: this runtime has {count}")]
    NoSuchDomain {
        /// The index asked for.
        domain: usize,
        /// How many domains there are.
        count: usize,
    },
    /// This runtime runs no CUDA device with this ordinal.
    #[error("no CUDA device {device} in this runtime (it runs {running:?})")]
    NoSuchDevice {
        /// The ordinal asked for.
        device: usize,
        /// The devices it runs.
        running: Vec<usize>,
    },
    /// The engine does not implement the op for this element type: no
    /// silent fallback to another engine.
    #[error(transparent)]
    Unsupported(#[from] Unsupported),
    /// A device call failed; the device's other tensors are intact.
    #[error(transparent)]
    Device(#[from] DeviceError),
    /// The domain's actor is shut down.
    #[error(transparent)]
    Closed(#[from] ActorClosed),
    /// The lane is full and the caller runs on an actor, which must not block.
    #[error("the lane is full and the caller runs on an actor, which must not block")]
    WouldDeadlock,
}

impl From<ExecError> for OpError {
    fn from(error: ExecError) -> Self {
        match error {
            ExecError::NotResident(e) => OpError::NotResident(e),
            ExecError::Tensor(e) => OpError::Tensor(e),
            ExecError::Unsupported(e) => OpError::Unsupported(e),
            ExecError::Device(e) => OpError::Device(e),
        }
    }
}

/// A name for a tensor resident in one CPU domain. Cheap to clone; the
/// tensor is freed when the last clone is dropped (see the module docs).
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
    frees: Releaser<TensorId>,
}

impl Drop for HandleInner {
    fn drop(&mut self) {
        // The domain is gone if this fails; its store went with it.
        self.frees.release(self.id);
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

    /// The index of the CPU domain (or CUDA device) the tensor lives in.
    pub fn domain(&self) -> usize {
        self.inner.place.index()
    }

    /// Where the tensor lives.
    pub fn place(&self) -> Place {
        self.inner.place
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

impl<E: TensorEngine> Lane<E> {
    fn check(&self, op: &'static str, handle: &TensorHandle) -> Result<(), OpError> {
        let tensors = self.tensors();
        if handle.inner.runtime != tensors.runtime {
            return Err(OpError::ForeignHandle {
                op,
                handle: handle.inner.runtime,
                lane: tensors.runtime,
            });
        }
        if handle.inner.place != tensors.place {
            return Err(OpError::WrongDomain {
                op,
                handle: handle.inner.place,
                lane: tensors.place,
            });
        }
        Ok(())
    }

    /// Submits `op` on `inputs`: checked here (types, shapes, handles), run
    /// on the actor once the inputs' producers are done.
    ///
    /// # Errors
    ///
    /// [`OpError::Tensor`] naming the bad shape or type (or an op with more
    /// than one output: use [`Lane::apply_many`]); the handle errors of
    /// [`Lane::download`].
    pub fn apply(&self, op: TensorOp, inputs: &[&TensorHandle]) -> Result<TensorHandle, OpError> {
        let outputs = self.check_op(&op, inputs)?;
        if outputs.len() != 1 {
            return Err(TensorError::Outputs {
                op: op.name(),
                outputs: outputs.len(),
            }
            .into());
        }
        let mut handles = self.submit_tensor_op(op, inputs, outputs)?;
        Ok(handles.pop().expect("one output"))
    }

    /// Like [`Lane::apply`], for ops with several outputs (the
    /// decompositions); all outputs share the op's completion event.
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`].
    pub fn apply_many(
        &self,
        op: TensorOp,
        inputs: &[&TensorHandle],
    ) -> Result<Vec<TensorHandle>, OpError> {
        let outputs = self.check_op(&op, inputs)?;
        self.submit_tensor_op(op, inputs, outputs)
    }

    fn check_op(&self, op: &TensorOp, inputs: &[&TensorHandle]) -> Result<Vec<Meta>, OpError> {
        for input in inputs {
            self.check(op.name(), input)?;
        }
        let metas: Vec<Meta> = inputs
            .iter()
            .map(|h| Meta {
                dtype: h.dtype(),
                shape: h.shape().to_vec(),
            })
            .collect();
        Ok(op.infer(&metas)?)
    }

    fn submit_tensor_op(
        &self,
        op: TensorOp,
        inputs: &[&TensorHandle],
        outputs: Vec<Meta>,
    ) -> Result<Vec<TensorHandle>, OpError> {
        let label = op.name();
        let lane = self.actor_lane().id();
        self.produce(label, inputs, None, outputs, move |engine, ids, outs| {
            let outputs: Outputs<(TensorId, DType, &[usize])> =
                outs.iter().map(|o| (o.id, o.dtype, &o.shape[..])).collect();
            Ok(engine.execute_into(&op, ids, &outputs, lane)?)
        })
    }

    /// Submits an op that produces tensors described by `outputs` from
    /// `inputs` (already checked), after `inputs`' producers and `after`;
    /// `compute` runs on the actor with the inputs' ids (resident by then)
    /// and the outputs' descriptions, and makes the outputs resident.
    ///
    /// The op's closure holds the handles inline (no allocation of its own
    /// for up to three inputs and one output): with the op's one
    /// allocation, it is all a small op costs the submitting thread.
    fn produce<F>(
        &self,
        label: &'static str,
        inputs: &[&TensorHandle],
        after: Option<(Event, Flow)>,
        outputs: Vec<Meta>,
        compute: F,
    ) -> Result<Vec<TensorHandle>, OpError>
    where
        F: FnOnce(&mut E, &[TensorId], &[Arc<HandleInner>]) -> Result<(), OpError> + Send + 'static,
    {
        let tensors = self.tensors().clone();
        let outs: Outputs<Arc<HandleInner>> = outputs
            .into_iter()
            .map(|meta| {
                Arc::new(HandleInner {
                    runtime: tensors.runtime,
                    place: tensors.place,
                    id: TensorId(tensors.next_id.fetch_add(1, Ordering::Relaxed)),
                    dtype: meta.dtype,
                    shape: meta.shape,
                    ready: OnceLock::new(),
                    frees: tensors.frees.clone(),
                })
            })
            .collect();
        let held: Inputs<TensorHandle> = inputs.iter().map(|&h| h.clone()).collect();
        let (after, flow) = after.unzip();
        let events: Inputs<Event> = held.iter().map(TensorHandle::ready).chain(after).collect();
        let keep = outs.clone();
        let body = move |engine: &mut E| -> Result<(), OpError> {
            tensors.release_freed(engine);
            let ids: Inputs<TensorId> = held.iter().map(TensorHandle::id).collect();
            // `held` and `keep` are dropped with this closure, after the op.
            compute(engine, &ids, &keep)
        };
        let mut op = Op::fallible(body).label(label).after(events);
        if let Some(flow) = flow {
            op = op.flow(flow);
        }
        let ticket = self.submit_op(op)?;
        let event = ticket.event();
        Ok(outs
            .into_iter()
            .map(|out| {
                out.ready
                    .set(event.clone())
                    .unwrap_or_else(|_| unreachable!("set once, here"));
                TensorHandle { inner: out }
            })
            .collect())
    }

    fn submit_op<B>(&self, op: Op<B>) -> Result<weft_actors::TicketFor<B, E>, OpError>
    where
        B: weft_actors::OpBody<E>,
    {
        self.actor_lane().submit(op).map_err(|e| match e {
            SubmitError::Closed(_) => OpError::Closed(ActorClosed {
                actor: actor_name(self.tensors().place),
            }),
            SubmitError::WouldDeadlock(_) => OpError::WouldDeadlock,
        })
    }

    /// Makes `tensor` resident in this lane's domain.
    ///
    /// # Errors
    ///
    /// [`OpError::Closed`] after shutdown.
    pub fn upload(&self, tensor: Tensor) -> Result<TensorHandle, OpError> {
        let out = vec![Meta::of(&tensor)];
        let lane = self.actor_lane().id();
        let mut handles = self.produce("upload", &[], None, out, move |engine, _, outs| {
            Ok(engine.upload(outs[0].id, tensor, lane)?)
        })?;
        Ok(handles.pop().expect("one output"))
    }

    /// A copy of the tensor, back on the host. The ticket fails with
    /// `DependencyFailed` if the op that produced the tensor failed.
    ///
    /// # Errors
    ///
    /// [`OpError::ForeignHandle`], [`OpError::WrongDomain`], [`OpError::Closed`],
    /// [`OpError::WouldDeadlock`].
    pub fn download(&self, handle: &TensorHandle) -> Result<Ticket<Tensor, OpError>, OpError> {
        self.check("download", handle)?;
        let tensors = self.tensors().clone();
        let held = handle.clone();
        let lane = self.actor_lane().id();
        let body = move |engine: &mut E| -> Result<Tensor, OpError> {
            tensors.release_freed(engine);
            Ok(engine.download(held.id(), lane)?)
        };
        self.submit_op(Op::fallible(body).label("download").after([handle.ready()]))
    }

    /// `lhs op rhs`, elementwise with NumPy broadcasting; see [`Lane::apply`].
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`].
    pub fn binary(
        &self,
        op: BinaryOp,
        lhs: &TensorHandle,
        rhs: &TensorHandle,
    ) -> Result<TensorHandle, OpError> {
        self.apply(TensorOp::Binary(op), &[lhs, rhs])
    }

    /// `op(x)` elementwise; see [`Lane::apply`].
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`].
    pub fn unary(&self, op: UnaryOp, x: &TensorHandle) -> Result<TensorHandle, OpError> {
        self.apply(TensorOp::Unary(op), &[x])
    }

    /// `lhs + rhs`, broadcast; see [`Lane::binary`].
    ///
    /// # Errors
    ///
    /// As [`Lane::binary`].
    pub fn add(&self, lhs: &TensorHandle, rhs: &TensorHandle) -> Result<TensorHandle, OpError> {
        self.binary(BinaryOp::Add, lhs, rhs)
    }

    /// `lhs - rhs`, broadcast; see [`Lane::binary`].
    ///
    /// # Errors
    ///
    /// As [`Lane::binary`].
    pub fn sub(&self, lhs: &TensorHandle, rhs: &TensorHandle) -> Result<TensorHandle, OpError> {
        self.binary(BinaryOp::Sub, lhs, rhs)
    }

    /// `lhs * rhs` elementwise, broadcast; see [`Lane::binary`].
    ///
    /// # Errors
    ///
    /// As [`Lane::binary`].
    pub fn mul(&self, lhs: &TensorHandle, rhs: &TensorHandle) -> Result<TensorHandle, OpError> {
        self.binary(BinaryOp::Mul, lhs, rhs)
    }

    /// `lhs / rhs` elementwise, broadcast; see [`Lane::binary`].
    ///
    /// # Errors
    ///
    /// As [`Lane::binary`].
    pub fn div(&self, lhs: &TensorHandle, rhs: &TensorHandle) -> Result<TensorHandle, OpError> {
        self.binary(BinaryOp::Div, lhs, rhs)
    }

    /// `lhs @ rhs` (batched, batch axes broadcast) through faer over the
    /// domain's pool; see [`Lane::apply`].
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`].
    pub fn matmul(&self, lhs: &TensorHandle, rhs: &TensorHandle) -> Result<TensorHandle, OpError> {
        self.apply(TensorOp::Matmul, &[lhs, rhs])
    }

    /// Moves a copy of `handle`'s tensor to `to` (a CPU domain by index,
    /// or a [`Place`]: `Place::Cuda(0)`) and returns its handle there. The
    /// source's op hands a host copy over, the destination's op takes it
    /// in; neither actor waits for the other: the destination's op is
    /// ordered after the source's by an event. Between CPU domains of
    /// different NUMA nodes the destination makes the copy it keeps, so its
    /// pages are first touched on its node; between domains of one node it
    /// keeps the source's copy. To and from a CUDA device the copy goes
    /// through the device engine's pinned staging; between two devices, through
    /// the host.
    ///
    /// # Errors
    ///
    /// [`OpError::NoSuchDomain`], [`OpError::NoSuchDevice`], and the handle
    /// errors of [`Lane::download`].
    pub fn transfer(
        &self,
        handle: &TensorHandle,
        to: impl Into<Place>,
    ) -> Result<TensorHandle, OpError> {
        let to = to.into();
        self.check("transfer", handle)?;
        if to == self.tensors().place {
            return Ok(handle.clone());
        }
        let closed = || {
            OpError::Closed(ActorClosed {
                actor: actor_name(to),
            })
        };
        let runtime = self.runtime().upgrade().ok_or_else(closed)?;
        // The destination first: a place that cannot be had costs nothing.
        let dest = match to {
            Place::Cpu(d) => Dest::Cpu(runtime.lane(d).map_err(|e| lane_error(e, closed))?),
            #[cfg(feature = "cuda")]
            Place::Cuda(d) => Dest::Cuda(runtime.cuda_lane(d).map_err(|e| lane_error(e, closed))?),
            #[cfg(not(feature = "cuda"))]
            Place::Cuda(device) => {
                return Err(OpError::NoSuchDevice {
                    device,
                    running: Vec::new(),
                })
            }
        };
        let node = |p: Place| match p {
            Place::Cpu(d) => runtime.domains().get(d).and_then(|d| d.numa_node()),
            Place::Cuda(_) => None,
        };
        let same_node = node(self.tensors().place).is_some_and(|n| Some(n) == node(to));
        let handoff = Arc::new(parking_lot::Mutex::new(None::<Tensor>));
        let flow = Flow::next_id();
        let (tensors, held, put) = (self.tensors().clone(), handle.clone(), handoff.clone());
        let lane = self.actor_lane().id();
        let out = self.submit_op(
            Op::fallible(move |engine: &mut E| -> Result<(), OpError> {
                tensors.release_freed(engine);
                *put.lock() = Some(engine.download(held.id(), lane)?);
                Ok(())
            })
            .label("transfer out")
            .after([handle.ready()])
            .flow(Flow::Out(flow)),
        )?;
        let meta = Meta {
            dtype: handle.dtype(),
            shape: handle.shape().to_vec(),
        };
        let take_in = TakeIn {
            meta,
            after: out.event(),
            flow,
            handoff,
            // Copy on the destination's thread: first touch places the
            // pages on its node.
            copy: !same_node && matches!(to, Place::Cpu(_)),
        };
        match dest {
            Dest::Cpu(lane) => take_in.submit(&lane),
            #[cfg(feature = "cuda")]
            Dest::Cuda(lane) => take_in.submit(&lane),
        }
    }

    /// A reduction of `x` over `axes`; see [`Lane::apply`].
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`]: an axis out of range or given twice, max/min of
    /// complex or empty tensors.
    pub fn reduce(
        &self,
        op: ReduceOp,
        x: &TensorHandle,
        axes: &[usize],
        keep_dims: bool,
    ) -> Result<TensorHandle, OpError> {
        let axes = axes.to_vec();
        self.apply(
            TensorOp::Reduce {
                op,
                axes,
                keep_dims,
            },
            &[x],
        )
    }

    /// The sum of all elements of `x`, as a rank-0 tensor.
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`].
    pub fn sum_all(&self, x: &TensorHandle) -> Result<TensorHandle, OpError> {
        let axes: Vec<usize> = (0..x.shape().len()).collect();
        self.reduce(ReduceOp::Sum, x, &axes, false)
    }

    /// `x` with shape `shape`; see [`Lane::apply`].
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`]: a shape with another element count.
    pub fn reshape(&self, x: &TensorHandle, shape: &[usize]) -> Result<TensorHandle, OpError> {
        self.apply(TensorOp::Reshape(shape.to_vec()), &[x])
    }

    /// `x` with axes reordered: output axis `i` is input axis `perm[i]`.
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`]: not a permutation of the axes.
    pub fn permute(&self, x: &TensorHandle, perm: &[usize]) -> Result<TensorHandle, OpError> {
        self.apply(TensorOp::Permute(perm.to_vec()), &[x])
    }

    /// `x` with its last two axes swapped.
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`]: fewer than two axes.
    pub fn transpose(&self, x: &TensorHandle) -> Result<TensorHandle, OpError> {
        let rank = x.shape().len();
        let mut perm: Vec<usize> = (0..rank).collect();
        if rank >= 2 {
            perm.swap(rank - 2, rank - 1);
        } else {
            perm = vec![0, 1]; // refused by the check, naming the rank
        }
        self.permute(x, &perm)
    }

    /// A tensor of `shape` with every element `value`.
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`]: a complex value for a real type.
    pub fn full(
        &self,
        dtype: DType,
        shape: &[usize],
        value: Scalar,
    ) -> Result<TensorHandle, OpError> {
        let shape = shape.to_vec();
        self.apply(
            TensorOp::Full {
                dtype,
                shape,
                value,
            },
            &[],
        )
    }

    /// A tensor of zeros.
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`].
    pub fn zeros(&self, dtype: DType, shape: &[usize]) -> Result<TensorHandle, OpError> {
        self.full(dtype, shape, Scalar::Real(0.0))
    }

    /// A tensor of ones.
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`].
    pub fn ones(&self, dtype: DType, shape: &[usize]) -> Result<TensorHandle, OpError> {
        self.full(dtype, shape, Scalar::Real(1.0))
    }

    /// The `rows × cols` identity.
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`].
    pub fn eye(&self, dtype: DType, rows: usize, cols: usize) -> Result<TensorHandle, OpError> {
        self.apply(TensorOp::Eye { dtype, rows, cols }, &[])
    }

    /// `start + step * i` for `i` in `0..len` (real types).
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`]: a complex type.
    pub fn arange(
        &self,
        dtype: DType,
        start: f64,
        step: f64,
        len: usize,
    ) -> Result<TensorHandle, OpError> {
        self.apply(
            TensorOp::Arange {
                dtype,
                start,
                step,
                len,
            },
            &[],
        )
    }

    /// A seeded random tensor: the same seed gives the same data on any
    /// domain.
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`].
    pub fn random(
        &self,
        dtype: DType,
        shape: &[usize],
        distribution: Distribution,
        seed: u64,
    ) -> Result<TensorHandle, OpError> {
        let shape = shape.to_vec();
        self.apply(
            TensorOp::Random {
                dtype,
                shape,
                distribution,
                seed,
            },
            &[],
        )
    }

    /// `einsum` with NumPy subscripts (`"ij,jk->ik"`, traces and repeated
    /// labels included), lowered to permutations and batched GEMM with a
    /// greedy contraction order. The spec is parsed and checked against the
    /// operands here, at the call site.
    ///
    /// # Errors
    ///
    /// [`OpError::Tensor`] with [`TensorError::Einsum`] naming the problem;
    /// as [`Lane::apply`].
    pub fn einsum(&self, spec: &str, inputs: &[&TensorHandle]) -> Result<TensorHandle, OpError> {
        self.apply(TensorOp::Einsum(EinsumSpec::parse(spec)?), inputs)
    }

    /// `lhs op rhs` as a 0/1 mask of the real type; see [`Lane::apply`].
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`]: orderings of complex tensors are undefined.
    pub fn compare(
        &self,
        op: CmpOp,
        lhs: &TensorHandle,
        rhs: &TensorHandle,
    ) -> Result<TensorHandle, OpError> {
        self.apply(TensorOp::Compare(op), &[lhs, rhs])
    }

    /// Where `mask` is nonzero `a`, else `b`, all three broadcast.
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`].
    pub fn select(
        &self,
        mask: &TensorHandle,
        a: &TensorHandle,
        b: &TensorHandle,
    ) -> Result<TensorHandle, OpError> {
        self.apply(TensorOp::Select, &[mask, a, b])
    }

    /// Every element limited to `[lo, hi]` (real types).
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`].
    pub fn clamp(&self, x: &TensorHandle, lo: f64, hi: f64) -> Result<TensorHandle, OpError> {
        self.apply(TensorOp::Clamp { lo, hi }, &[x])
    }

    /// `x op value`, the scalar broadcast; see [`Lane::apply`].
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`]: a complex value for a real tensor.
    pub fn binary_scalar(
        &self,
        op: BinaryOp,
        x: &TensorHandle,
        value: Scalar,
    ) -> Result<TensorHandle, OpError> {
        self.apply(
            TensorOp::BinaryScalar {
                op,
                value,
                scalar_first: false,
            },
            &[x],
        )
    }

    /// `x ** exponent` elementwise, broadcast.
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`].
    pub fn pow(&self, x: &TensorHandle, exponent: &TensorHandle) -> Result<TensorHandle, OpError> {
        self.binary(BinaryOp::Pow, x, exponent)
    }

    /// The elements converted to `dtype`.
    ///
    /// # Errors
    ///
    /// The handle errors of [`Lane::download`].
    pub fn cast(&self, x: &TensorHandle, dtype: DType) -> Result<TensorHandle, OpError> {
        self.apply(TensorOp::Cast(dtype), &[x])
    }

    /// `x[start..stop:step, …]`, one range per axis.
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`]: a range per axis, steps of at least 1, starts
    /// within the extents.
    pub fn slice(&self, x: &TensorHandle, axes: &[SliceAxis]) -> Result<TensorHandle, OpError> {
        self.apply(TensorOp::Slice(axes.to_vec()), &[x])
    }

    /// `x` reversed along `axes`.
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`].
    pub fn reverse(&self, x: &TensorHandle, axes: &[usize]) -> Result<TensorHandle, OpError> {
        self.apply(TensorOp::Reverse(axes.to_vec()), &[x])
    }

    /// `x` repeated along broadcast axes to `shape`.
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`].
    pub fn broadcast_to(&self, x: &TensorHandle, shape: &[usize]) -> Result<TensorHandle, OpError> {
        self.apply(TensorOp::BroadcastTo(shape.to_vec()), &[x])
    }

    /// The tensors joined along `axis`.
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`].
    pub fn concatenate(&self, xs: &[&TensorHandle], axis: usize) -> Result<TensorHandle, OpError> {
        self.apply(
            TensorOp::Concatenate {
                axis,
                inputs: xs.len(),
            },
            xs,
        )
    }

    /// `x` padded with `value`, `(before, after)` per axis.
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`].
    pub fn pad(
        &self,
        x: &TensorHandle,
        widths: &[(usize, usize)],
        value: Scalar,
    ) -> Result<TensorHandle, OpError> {
        self.apply(
            TensorOp::Pad {
                widths: widths.to_vec(),
                value,
            },
            &[x],
        )
    }

    /// The main diagonals of the last two axes.
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`].
    pub fn diagonal(&self, x: &TensorHandle) -> Result<TensorHandle, OpError> {
        self.apply(TensorOp::Diagonal, &[x])
    }

    /// Matrices with the last axis of `x` on their diagonals.
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`].
    pub fn diag_embed(&self, x: &TensorHandle) -> Result<TensorHandle, OpError> {
        self.apply(TensorOp::DiagEmbed, &[x])
    }

    /// The lower triangle (`j ≤ i + k`) of the last two axes.
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`].
    pub fn tril(&self, x: &TensorHandle, k: isize) -> Result<TensorHandle, OpError> {
        self.apply(TensorOp::Triangle { k, upper: false }, &[x])
    }

    /// The upper triangle (`j ≥ i + k`) of the last two axes.
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`].
    pub fn triu(&self, x: &TensorHandle, k: isize) -> Result<TensorHandle, OpError> {
        self.apply(TensorOp::Triangle { k, upper: true }, &[x])
    }

    /// `Σ a_i b_i` of two vectors, as a rank-0 tensor.
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`].
    pub fn dot(&self, a: &TensorHandle, b: &TensorHandle) -> Result<TensorHandle, OpError> {
        self.apply(TensorOp::Dot { conjugate: false }, &[a, b])
    }

    /// `Σ conj(a_i) b_i` of two vectors, as a rank-0 tensor.
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`].
    pub fn vdot(&self, a: &TensorHandle, b: &TensorHandle) -> Result<TensorHandle, OpError> {
        self.apply(TensorOp::Dot { conjugate: true }, &[a, b])
    }

    /// XLA's `dot_general`: contracts `lhs` and `rhs` over the paired
    /// `contract` axes, with the paired `batch` axes kept in front; the
    /// result is `[batch…, lhs free…, rhs free…]`. Lowered to [`Lane::einsum`].
    ///
    /// # Errors
    ///
    /// [`OpError::Tensor`] for axes out of range or used twice (as
    /// [`TensorError::Axis`]) and for paired extents that differ.
    pub fn dot_general(
        &self,
        lhs: &TensorHandle,
        rhs: &TensorHandle,
        batch: &[(usize, usize)],
        contract: &[(usize, usize)],
    ) -> Result<TensorHandle, OpError> {
        let labels: Vec<char> = ('a'..='z').chain('A'..='Z').collect();
        let (rl, rr) = (lhs.shape().len(), rhs.shape().len());
        if rl + rr > labels.len() {
            return Err(TensorError::Einsum {
                spec: "dot_general".into(),
                reason: format!("{} axes in all: at most {}", rl + rr, labels.len()),
            }
            .into());
        }
        let (l_axes, r_axes): (Vec<usize>, Vec<usize>) =
            batch.iter().chain(contract).copied().unzip();
        weft_engines::structural::check_axes("dot_general", rl, &l_axes)?;
        weft_engines::structural::check_axes("dot_general", rr, &r_axes)?;
        let l: Vec<char> = labels[..rl].to_vec();
        let mut r: Vec<char> = labels[rl..rl + rr].to_vec();
        for &(i, j) in batch.iter().chain(contract) {
            r[j] = l[i];
        }
        let mut out: Vec<char> = batch.iter().map(|&(i, _)| l[i]).collect();
        out.extend((0..rl).filter(|i| !l_axes.contains(i)).map(|i| l[i]));
        out.extend((0..rr).filter(|j| !r_axes.contains(j)).map(|j| r[j]));
        let spec = format!(
            "{},{}->{}",
            l.iter().collect::<String>(),
            r.iter().collect::<String>(),
            out.iter().collect::<String>()
        );
        self.einsum(&spec, &[lhs, rhs])
    }

    /// `A = Q R`, thin; returns `(Q, R)`.
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`]: `a` not 2-D.
    pub fn qr(&self, a: &TensorHandle) -> Result<(TensorHandle, TensorHandle), OpError> {
        let mut out = self
            .apply_many(TensorOp::Linalg(Linalg::Qr), &[a])?
            .into_iter();
        Ok((out.next().expect("Q"), out.next().expect("R")))
    }

    /// `A = U diag(S) Vᴴ`, thin; returns `(U, S, Vᴴ)` with `S` real.
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`]: `a` not 2-D. A failure to converge fails the op.
    pub fn svd(
        &self,
        a: &TensorHandle,
    ) -> Result<(TensorHandle, TensorHandle, TensorHandle), OpError> {
        let mut out = self
            .apply_many(TensorOp::Linalg(Linalg::Svd), &[a])?
            .into_iter();
        Ok((
            out.next().expect("U"),
            out.next().expect("S"),
            out.next().expect("Vh"),
        ))
    }

    /// Eigenvalues (real, ascending) and eigenvectors of Hermitian `a`
    /// (its lower triangle is read); returns `(W, V)`.
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`]: `a` not square.
    pub fn eigh(&self, a: &TensorHandle) -> Result<(TensorHandle, TensorHandle), OpError> {
        let mut out = self
            .apply_many(TensorOp::Linalg(Linalg::Eigh), &[a])?
            .into_iter();
        Ok((out.next().expect("W"), out.next().expect("V")))
    }

    /// `L` with `A = L Lᴴ`. A matrix that is not positive definite fails the
    /// op (and its dependents), not the call.
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`]: `a` not square.
    pub fn cholesky(&self, a: &TensorHandle) -> Result<TensorHandle, OpError> {
        self.apply(TensorOp::Linalg(Linalg::Cholesky), &[a])
    }

    /// `X` with `A X = B`. A singular `A` fails the op, not the call.
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`]: `a` not square, `b` of another type or row count.
    pub fn solve(&self, a: &TensorHandle, b: &TensorHandle) -> Result<TensorHandle, OpError> {
        self.apply(TensorOp::Linalg(Linalg::Solve), &[a, b])
    }

    /// What this lane's domain (or device) holds in memory: its resident
    /// tensors and its buffer pool, after freeing the tensors whose handles
    /// are all gone.
    ///
    /// # Errors
    ///
    /// [`OpError::Closed`] after shutdown.
    pub fn memory(&self) -> Result<Ticket<DomainMemory>, OpError> {
        let tensors = self.tensors().clone();
        self.submit_op(Op::new(move |engine: &mut E| {
            tensors.release_freed(engine);
            engine.memory()
        }))
    }

    /// The number of tensors resident in this lane's domain (or device)
    /// and their bytes, after freeing those whose handles are all gone.
    ///
    /// # Errors
    ///
    /// [`OpError::Closed`] after shutdown.
    pub fn resident(&self) -> Result<Ticket<(usize, usize)>, OpError> {
        let tensors = self.tensors().clone();
        self.submit_op(Op::new(move |engine: &mut E| {
            tensors.release_freed(engine);
            let memory = engine.memory();
            (memory.tensors, memory.tensor_bytes)
        }))
    }
}

impl Lane<CpuEngine> {
    /// Runs `f` on the actor with read access to the resident `inputs`
    /// (after their producers), returning what it computes: the escape
    /// hatch for work the vocabulary does not name.
    ///
    /// # Errors
    ///
    /// The handle errors of [`Lane::download`].
    pub fn with<R, F>(&self, inputs: &[&TensorHandle], f: F) -> Result<Ticket<R, OpError>, OpError>
    where
        F: FnOnce(&CpuEngine, &[&Tensor]) -> R + Send + 'static,
        R: Send + 'static,
    {
        for input in inputs {
            self.check("with", input)?;
        }
        let tensors = self.tensors().clone();
        let held: Vec<TensorHandle> = inputs.iter().map(|&h| h.clone()).collect();
        let after: Vec<Event> = held.iter().map(TensorHandle::ready).collect();
        let body = move |engine: &mut CpuEngine| -> Result<R, OpError> {
            tensors.release_freed(engine);
            let resident = held
                .iter()
                .map(|h| engine.store().get(h.id()))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(f(engine, &resident))
        };
        self.submit_op(Op::fallible(body).label("with").after(after))
    }
}

/// A transfer's destination lane.
enum Dest {
    Cpu(Lane),
    #[cfg(feature = "cuda")]
    Cuda(Lane<weft_engines::cuda::CudaEngine>),
}

/// The destination's half of a transfer.
struct TakeIn {
    meta: Meta,
    after: Event,
    flow: u64,
    handoff: Arc<parking_lot::Mutex<Option<Tensor>>>,
    copy: bool,
}

impl TakeIn {
    fn submit<E: TensorEngine>(self, dest: &Lane<E>) -> Result<TensorHandle, OpError> {
        let TakeIn {
            meta,
            after,
            flow,
            handoff,
            copy,
        } = self;
        let lane = dest.actor_lane().id();
        let mut handles = dest.produce(
            "transfer in",
            &[],
            Some((after, Flow::In(flow))),
            vec![meta],
            move |engine, _, outs| {
                let sent = handoff
                    .lock()
                    .take()
                    .expect("the transfer-out op ran before this one");
                let tensor = if copy {
                    // The source's copy is freed here.
                    let (shape, data) = sent.into_parts();
                    Tensor::from_data(data.clone(), &shape)?
                } else {
                    sent
                };
                Ok(engine.upload(outs[0].id, tensor, lane)?)
            },
        )?;
        Ok(handles.pop().expect("one output"))
    }
}

/// A destination lane that cannot be had, as a transfer's error.
fn lane_error(e: crate::RuntimeError, closed: impl Fn() -> OpError) -> OpError {
    match e {
        crate::RuntimeError::NoSuchDomain { domain, count } => {
            OpError::NoSuchDomain { domain, count }
        }
        crate::RuntimeError::NoSuchDevice { device, running } => {
            OpError::NoSuchDevice { device, running }
        }
        _ => closed(),
    }
}
