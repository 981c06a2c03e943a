//! The tensor vocabulary: the ops a [`Lane`] names ([`TensorOp`] and the
//! enums of its arms), einsum specs, and the CPU's kernels run on host
//! tensors ([`HostRun`]). The named ops themselves (`add`, `matmul`,
//! `einsum`, `svd`, …) are provided methods of the traits gathered in
//! [`Ops`], written once for a lane, which runs them, and a recorder,
//! which records them; [`Function`] and [`Lane::call`] trace code written
//! with them into programs.

// This file owns the path every op of a lane takes: the handle checks, the
// shape rules run at the call site, the output handles returned before the
// op runs, and `Lane::submit_op`, which every op of the tensor API goes
// through and which frees the domain's released tensors before the op
// runs. vocabulary.rs holds `Apply` (one op, for lanes and recorders); the
// theme files (create, elementwise, index, linalg, reduce, structural)
// each say which `TensorOp` a named method is; the others are a lane's own
// ops (programs and calls, scalars, the truncated SVD).

pub(crate) mod call;
mod create;
#[cfg(feature = "cuda")]
mod cube;
mod elementwise;
mod index;
mod linalg;
mod program;
mod reduce;
mod scalars;
mod structural;
mod truncation;
mod vocabulary;

pub use call::Function;
pub use create::CreateOps;
#[cfg(feature = "cuda")]
pub use cube::CubeOps;
pub use elementwise::ElementwiseOps;
pub use index::IndexOps;
pub use linalg::{DotGeneral, LinalgOps};
pub use reduce::ReduceOps;
pub use structural::StructuralOps;
pub use truncation::{TruncatedSvd, Truncation};
pub use vocabulary::{Apply, Ops};
// The vocabulary the ops name, and the CPU's kernels run on host tensors.
pub use weft_core::{
    ArgOp, BinaryOp, CmpOp, Distribution, EinsumSpec, KernelOp, Linalg, MatOp, ReduceOp,
    ScatterMode, SliceAxis, TensorOp, UnaryOp,
};
pub use weft_cpu::HostRun;

use std::fmt;

use weft_actors::{ActorClosed, Event, Flow, Op, SubmitError, Ticket};
use weft_core::{DType, EngineMemory, Meta, Place, Tensor, TensorEngine, TensorError, TensorId};
use weft_cpu::CpuEngine;

use crate::error::OpError;
use crate::handle::{DomainTensors, TensorHandle};
use crate::lane::Lane;

/// A small op's inputs, inline.
type Inputs<T> = smallvec::SmallVec<[T; 3]>;
/// A small op's outputs, inline.
type Outputs<T> = smallvec::SmallVec<[T; 1]>;

impl<E: TensorEngine> Lane<E> {
    /// Refuses a handle of another runtime or another place.
    pub(crate) fn check(&self, op: &'static str, handle: &TensorHandle) -> Result<(), OpError> {
        let tensors = self.tensors();
        if handle.runtime() != tensors.runtime() {
            return Err(OpError::ForeignHandle {
                op,
                handle: handle.runtime(),
                lane: tensors.runtime(),
            });
        }
        if handle.place() != tensors.place() {
            return Err(OpError::WrongDomain {
                op,
                handle: handle.place(),
                lane: tensors.place(),
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

    /// Like [`Lane::apply`], writing the result into `out`'s memory when it
    /// can: `out` (of the result's type and shape) is given up, and the
    /// returned handle names the result. This is the `out=` form of every
    /// one-output op; [`Lane::gemm_into`] and [`Lane::axpby_into`] are the
    /// accumulating forms, which read the tensor they write into.
    ///
    /// # The rule
    ///
    /// Whether the memory is reused is decided on the actor when the op
    /// runs, and never changes a value anyone reads: it is reused only if
    /// `out` is then the last handle of its tensor (the op's own aside),
    /// so no queued op still reads the old value and none can be
    /// submitted. A clone kept elsewhere, or an op still queued that reads
    /// the tensor, keeps the old value as it was, and the result gets
    /// fresh memory. On the CPU a reused buffer holds the result (one the
    /// op also reads as an input goes back to the pool instead, at once);
    /// on a CUDA device `out`'s memory is freed for the result's
    /// allocation. A clone of `out` among `inputs` is such a kept clone
    /// until the caller drops it: reuse then depends on when the op runs.
    ///
    /// ```
    /// use weft::{ops::{BinaryOp, TensorOp}, prelude::*};
    /// let rt = weft::Runtime::builder().split(1).build()?;
    /// let lane = rt.lane(0)?;
    /// let a = lane.arange(DType::F64, 0.0, 1.0, 256)?;
    /// let out = lane.zeros(DType::F64, &[256])?;
    /// let sum = lane.apply_into(TensorOp::Binary(BinaryOp::Add), &[&a, &a], out)?;
    /// assert_eq!(lane.download(&sum)?.wait()?.as_slice::<f64>()?[3], 6.0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Lane::apply`], and [`TensorError::Into`] when `out` is not of
    /// the result's type and shape; `out` is dropped either way.
    pub fn apply_into(
        &self,
        op: TensorOp,
        inputs: &[&TensorHandle],
        out: TensorHandle,
    ) -> Result<TensorHandle, OpError> {
        let held = inputs.iter().map(|&h| h.clone()).collect();
        self.donate(op, held, out)
    }

    /// [`Lane::apply_into`] of inputs the caller hands over: the
    /// accumulating forms pass `out` among them, the op's own clone.
    pub(crate) fn donate(
        &self,
        op: TensorOp,
        inputs: Inputs<TensorHandle>,
        out: TensorHandle,
    ) -> Result<TensorHandle, OpError> {
        self.check(op.name(), &out)?;
        let outputs = {
            let refs: Inputs<&TensorHandle> = inputs.iter().collect();
            self.check_op(&op, &refs)?
        };
        match &outputs[..] {
            [meta] if *meta == out.meta() => {}
            [meta] => {
                return Err(TensorError::Into {
                    op: op.name(),
                    dtype: meta.dtype,
                    shape: meta.shape.clone(),
                    into_dtype: out.dtype(),
                    into_shape: out.shape().to_vec(),
                }
                .into())
            }
            _ => {
                return Err(TensorError::Outputs {
                    op: op.name(),
                    outputs: outputs.len(),
                }
                .into())
            }
        }
        if crate::tape::taping() {
            let refs: Inputs<&TensorHandle> = inputs.iter().collect();
            let result = self.submit_donation(op.clone(), inputs.clone(), out)?;
            crate::tape::note_op(&op, &refs, std::slice::from_ref(&result));
            return Ok(result);
        }
        self.submit_donation(op, inputs, out)
    }

    fn submit_donation(
        &self,
        op: TensorOp,
        inputs: Inputs<TensorHandle>,
        out: TensorHandle,
    ) -> Result<TensorHandle, OpError> {
        let outputs = vec![out.meta()];
        let label = op.name();
        let lane = self.actor_lane().id();
        // The op's own clones of `out`: one per input it is.
        let held = inputs.iter().filter(|h| h.id() == out.id()).count();
        let spent = self.tensors().spent().clone();
        let mut handles =
            self.produce_owned(label, inputs, None, outputs, move |engine, ids, outs| {
                let result = [(outs[0].id(), outs[0].dtype(), outs[0].shape())];
                // Clones of finished ops wait in the spent bin: dropped, they
                // may leave `out` the last one.
                let last = out.is_last(held) || {
                    spent.drop_all();
                    out.is_last(held)
                };
                let done = if last {
                    engine.execute_donating(&op, ids, &result, out.id(), lane)
                } else {
                    engine.execute_into(&op, ids, &result, lane)
                };
                // Dropped on a submitting thread, as the op's other handles.
                spent.give((smallvec::smallvec![out], smallvec::SmallVec::new()));
                Ok(done?)
            })?;
        Ok(handles.pop().expect("one output"))
    }

    fn check_op(&self, op: &TensorOp, inputs: &[&TensorHandle]) -> Result<Vec<Meta>, OpError> {
        for input in inputs {
            self.check(op.name(), input)?;
        }
        // A kernel of one's own runs where its engine is: a CUDA device.
        if let (TensorOp::Kernel(k), Place::Cpu(_)) = (op, self.place()) {
            return Err(TensorError::ForeignKernel { kernel: k.name }.into());
        }
        let metas: Vec<Meta> = inputs.iter().map(|h| h.meta()).collect();
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
        let taped = crate::tape::taping().then(|| op.clone());
        let handles = self.produce(label, inputs, None, outputs, move |engine, ids, outs| {
            let outputs: Outputs<(TensorId, DType, &[usize])> = outs
                .iter()
                .map(|o| (o.id(), o.dtype(), o.shape()))
                .collect();
            Ok(engine.execute_into(&op, ids, &outputs, lane)?)
        })?;
        if let Some(op) = taped {
            crate::tape::note_op(&op, inputs, &handles);
        }
        Ok(handles)
    }

    /// Submits an op that produces tensors described by `outputs` from
    /// `inputs` (already checked), after `inputs`' producers and `after`;
    /// `compute` runs on the actor with the inputs' ids (resident by then)
    /// and the outputs' handles, and makes the outputs resident.
    ///
    /// The op's closure holds the handles inline (no allocation of its own
    /// for up to three inputs and one output): with the op's one
    /// allocation, it is all a small op costs the submitting thread.
    pub(crate) fn produce<F>(
        &self,
        label: &'static str,
        inputs: &[&TensorHandle],
        after: Option<(Event, Flow)>,
        outputs: Vec<Meta>,
        compute: F,
    ) -> Result<Vec<TensorHandle>, OpError>
    where
        F: FnOnce(&mut E, &[TensorId], &[TensorHandle]) -> Result<(), OpError> + Send + 'static,
    {
        let held = inputs.iter().map(|&h| h.clone()).collect();
        self.produce_owned(label, held, after, outputs, compute)
    }

    /// [`Lane::produce`] of input handles the caller hands over.
    pub(crate) fn produce_owned<F>(
        &self,
        label: &'static str,
        held: Inputs<TensorHandle>,
        after: Option<(Event, Flow)>,
        outputs: Vec<Meta>,
        compute: F,
    ) -> Result<Vec<TensorHandle>, OpError>
    where
        F: FnOnce(&mut E, &[TensorId], &[TensorHandle]) -> Result<(), OpError> + Send + 'static,
    {
        let tensors = self.tensors();
        let outs: Outputs<TensorHandle> = outputs
            .into_iter()
            .map(|meta| tensors.new_handle(meta))
            .collect();
        let (after, flow) = after.unzip();
        let events: Inputs<Event> = held.iter().map(TensorHandle::ready).chain(after).collect();
        let keep = outs.clone();
        let ticket = self.submit_op(label, events, flow, move |engine: &mut E, tensors| {
            let ids: Inputs<TensorId> = held.iter().map(TensorHandle::id).collect();
            let result = compute(engine, &ids, &keep);
            // Dropped on a submitting thread, not here (see `Spent`); on a
            // panic or a cancel they go with the closure.
            tensors.spent().give((held, keep));
            result
        })?;
        let event = ticket.event();
        for out in &outs {
            out.set_ready(event.clone());
        }
        Ok(outs.into_vec())
    }

    /// Submits `body` as one op of this lane, after `after`. Every op of
    /// the tensor API is submitted here, and nowhere else: on the actor, the
    /// op first frees the domain's tensors whose last handle is gone (see
    /// [`crate::handle`]), so what it sees of the domain's memory is current.
    /// `body` borrows the domain's shared state from the op, which holds
    /// the one reference to it.
    pub(crate) fn submit_op<T, Er, F>(
        &self,
        label: &'static str,
        after: impl IntoIterator<Item = Event>,
        flow: Option<Flow>,
        body: F,
    ) -> Result<Ticket<T, Er>, OpError>
    where
        F: FnOnce(&mut E, &DomainTensors) -> Result<T, Er> + Send + 'static,
        T: Send + 'static,
        Er: fmt::Display + Send + 'static,
    {
        let tensors = self.tensors().clone();
        tensors.spent().drop_some();
        let mut op = Op::fallible(move |engine: &mut E| {
            tensors.release_freed(engine);
            body(engine, &tensors)
        })
        .label(label)
        .after(after);
        if let Some(flow) = flow {
            op = op.flow(flow);
        }
        self.actor_lane().submit(op).map_err(|e| match e {
            SubmitError::Closed(_) => OpError::Closed(ActorClosed {
                actor: self.tensors().actor_name(self.place()),
            }),
            SubmitError::WouldDeadlock(_) => OpError::WouldDeadlock,
        })
    }

    /// Submits an op that reports on (or trims) the domain's memory: on
    /// the actor it first drops the handles of every finished op (the
    /// spent bin), so that no tensor whose handles are all gone is counted.
    fn submit_report<T, F>(&self, label: &'static str, body: F) -> Result<Ticket<T>, OpError>
    where
        F: FnOnce(&mut E) -> Result<T, std::convert::Infallible> + Send + 'static,
        T: Send + 'static,
    {
        self.submit_op(label, [], None, move |engine: &mut E, tensors| {
            tensors.spent().drop_all();
            tensors.release_freed(engine);
            body(engine)
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
            Ok(engine.upload(outs[0].id(), tensor, lane)?)
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
        let held = handle.clone();
        let lane = self.actor_lane().id();
        self.submit_op(
            "download",
            [handle.ready()],
            None,
            move |engine: &mut E, _| Ok(engine.download(held.id(), lane)?),
        )
    }

    /// Waits for the tensor without copying it anywhere: the ticket
    /// resolves once the op that produced it has finished (on a CUDA
    /// device, once its kernels have run, not only been enqueued), and
    /// fails with `DependencyFailed` if that op failed.
    ///
    /// ```
    /// use weft::prelude::*;
    /// let rt = weft::Runtime::builder().split(1).build()?;
    /// let lane = rt.lane(0)?;
    /// let x = lane.eye(weft::DType::F64, 256, 256)?;
    /// let y = lane.matmul(&x, &x)?;
    /// lane.sync(&y)?.wait()?; // y is computed; nothing was downloaded
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Lane::download`].
    pub fn sync(&self, handle: &TensorHandle) -> Result<Ticket<(), OpError>, OpError> {
        self.check("sync", handle)?;
        let held = handle.clone();
        self.submit_op("sync", [handle.ready()], None, move |engine: &mut E, _| {
            Ok(engine.sync(held.id())?)
        })
    }

    /// What this lane's domain (or device) holds in memory: its resident
    /// tensors and its buffer pool, after freeing the tensors whose handles
    /// are all gone.
    ///
    /// # Errors
    ///
    /// [`OpError::Closed`] after shutdown.
    pub fn memory(&self) -> Result<Ticket<EngineMemory>, OpError> {
        let functions = self.tensors().functions().clone();
        self.submit_report("memory", move |engine: &mut E| {
            Ok(EngineMemory {
                functions: functions.stats(),
                ..engine.memory()
            })
        })
    }

    /// The number of tensors resident in this lane's domain (or device)
    /// and their bytes, after freeing those whose handles are all gone.
    ///
    /// # Errors
    ///
    /// [`OpError::Closed`] after shutdown.
    pub fn resident(&self) -> Result<Ticket<(usize, usize)>, OpError> {
        self.submit_report("resident", |engine: &mut E| {
            let memory = engine.memory();
            Ok((memory.tensors, memory.tensor_bytes))
        })
    }

    /// Lets go of the memory this lane's domain keeps for reuse (its
    /// buffer pool; an idle domain does so by itself after
    /// [`crate::Builder::idle_trim`]), after freeing the tensors whose
    /// handles are all gone. The ticket gives the bytes let go.
    ///
    /// # Errors
    ///
    /// [`OpError::Closed`] after shutdown.
    pub fn trim(&self) -> Result<Ticket<usize>, OpError> {
        self.submit_report("trim", |engine: &mut E| Ok(engine.trim()))
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
        let held: Vec<TensorHandle> = inputs.iter().map(|&h| h.clone()).collect();
        let after: Vec<Event> = held.iter().map(TensorHandle::ready).collect();
        self.submit_op("with", after, None, move |engine: &mut CpuEngine, _| {
            let resident = held
                .iter()
                .map(|h| engine.store().get(h.id()))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(f(engine, &resident))
        })
    }
}
