//! The lane ops between ranks, and the runtime's view of its rank.

use std::sync::Arc;

use parking_lot::Mutex;
use weft_actors::{Event, EventState, Flow, Op, OpBody, Promise, Ticket};
use weft_core::{DType, Data, Element, Meta, Tensor, TensorEngine};
use weft_cpu::CpuEngine;
use weft_mpi::{
    check_message, check_peer, Collective, Done, Finished, MpiEngine, MpiError, Reduction,
};

use super::actor::MpiActor;
use crate::domain::DomainTable;
use crate::error::OpError;
use crate::handle::TensorHandle;
use crate::lane::Lane;
use crate::runtime::Runtime;

/// Tensors of at least this many bytes are sent from and received into
/// buffers of the domain's pool, which a send gives back: fresh pages of a
/// large buffer cost more than the extra op on the domain.
const POOLED_BYTES: usize = 64 << 10;

fn meta_bytes(meta: &Meta) -> usize {
    weft_core::element_count(&meta.shape)
        .unwrap_or(0)
        .saturating_mul(meta.dtype.size())
}

/// Where an MPI op's result goes: the MPI actor fills it, *mpi in* empties it.
type Slot = Arc<Mutex<Option<Tensor>>>;

/// Where the buffer MPI read from goes, for *mpi return*.
type Spent = Arc<Mutex<Option<Data>>>;

/// The promise of an MPI op while it is on its way to MPI: if the op never
/// reaches MPI (its input failed, or a shutdown cancelled it), the promise
/// fails saying why instead of reporting a lost actor.
struct Owed<T: Send + 'static = ()> {
    promise: Option<Promise<T, OpError>>,
    op: &'static str,
    after: Vec<Event>,
}

impl<T: Send + 'static> Owed<T> {
    /// A promise for `op`, owed until MPI completes it, and its ticket;
    /// `after` says why it failed if it never reaches MPI.
    fn new(op: &'static str, after: Vec<Event>) -> (Owed<T>, Ticket<T, OpError>) {
        let (promise, ticket) = Promise::new(op);
        let owed = Owed {
            promise: Some(promise),
            op,
            after,
        };
        (owed, ticket)
    }

    /// The completion MPI calls: `keep` turns what MPI finished into the
    /// promise's value.
    fn done_with(
        mut self,
        keep: impl FnOnce(Finished) -> Result<T, OpError> + Send + 'static,
    ) -> Done {
        let promise = self.promise.take().expect("owed once");
        Box::new(
            move |outcome| match outcome.map_err(OpError::Mpi).and_then(keep) {
                Ok(value) => promise.keep(value),
                Err(e) => promise.fail(e),
            },
        )
    }
}

impl Owed {
    /// The completion MPI calls: fills `slot` and `spent` and keeps the
    /// promise.
    fn done(self, slot: Slot, spent: Spent) -> Done {
        self.done_with(move |finished| {
            *slot.lock() = finished.tensor;
            *spent.lock() = finished.spent;
            Ok(())
        })
    }
}

impl<T: Send + 'static> Drop for Owed<T> {
    fn drop(&mut self) {
        let Some(promise) = self.promise.take() else {
            return;
        };
        let failed = self
            .after
            .iter()
            .map(Event::state)
            .find(|s| matches!(s, EventState::Failed(_)));
        promise.fail(OpError::Mpi(match failed {
            Some(EventState::Failed(failure)) => MpiError::InputFailed {
                op: self.op,
                reason: failure.to_string(),
            },
            _ => MpiError::Cancelled { op: self.op },
        }));
    }
}

impl Runtime {
    /// This process's rank in the MPI job (0 when the runtime runs no MPI
    /// actor, [`crate::Builder::mpi`]).
    pub fn rank(&self) -> usize {
        self.table().mpi().map_or(0, |m| m.rank)
    }

    /// A lane into the rank's MPI actor, to run MPI code of one's own on
    /// the thread that owns MPI (every MPI call of the process must come
    /// from it): `lane.run(|_| { let world =
    /// mpi::topology::SimpleCommunicator::world(); … })`. A blocking call
    /// there holds up weft's own requests for as long as it blocks.
    ///
    /// # Errors
    ///
    /// [`OpError::Mpi`] when the runtime runs no MPI actor,
    /// [`OpError::Closed`] after shutdown.
    pub fn mpi_lane(&self) -> Result<weft_actors::Lane<MpiEngine>, OpError> {
        let mpi = self.table().mpi().ok_or_else(no_mpi)?;
        Ok(mpi.actor.lane()?)
    }

    /// The job's ranks (1 when the runtime runs no MPI actor).
    pub fn ranks(&self) -> usize {
        self.table().mpi().map_or(1, |m| m.ranks)
    }

    /// A barrier over every rank: the ticket resolves once every rank's
    /// barrier has been reached. Never blocks the caller or an actor.
    ///
    /// # Errors
    ///
    /// [`OpError::Mpi`] ([`MpiError::Unavailable`]) when the runtime runs
    /// no MPI actor; [`OpError::Closed`] after shutdown.
    pub fn barrier(&self) -> Result<Ticket<(), OpError>, OpError> {
        let mpi = self.table().mpi().ok_or_else(no_mpi)?;
        let posted = post(mpi, "barrier", None, move |engine, _, done| {
            engine.collective(Collective::Barrier, None, None, done)
        })?;
        Ok(posted.ticket)
    }

    /// The reduction of every rank's `values`, straight into a host vector
    /// (same type and length on every rank; ranks that disagree all fail
    /// with [`MpiError::Disagree`]): the dot products of a distributed
    /// Lanczos step, a norm, a convergence flag. No tensor is made,
    /// uploaded or downloaded, and no domain takes part: the values go to
    /// the MPI actor with the call and come back in the ticket, two hops
    /// where [`Lane::allreduce`] of a resident tensor and its download take
    /// four or more. It takes its place among the rank's collectives in
    /// call order, as every collective does.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use weft::mpi::Reduction;
    /// let rt = weft::Runtime::builder().mpi().build()?;
    /// let local = [1.5f64, 2.0]; // this rank's part of two dot products
    /// let global = rt.allreduce_values(&local, Reduction::Sum)?.wait()?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// [`MpiError::Unsupported`] (max or min of complex values, sum or
    /// product of `bool`), [`MpiError::TooLarge`], [`OpError::Mpi`]
    /// ([`MpiError::Unavailable`]) when the runtime runs no MPI actor,
    /// [`OpError::Closed`] after shutdown.
    pub fn allreduce_values<T: Element>(
        &self,
        values: &[T],
        reduction: Reduction,
    ) -> Result<Ticket<Vec<T>, OpError>, OpError> {
        self.host_collective(Collective::Allreduce(reduction), values)
    }

    /// `root`'s `values`, on every rank, straight into a host vector; the
    /// other ranks pass as many values of the same type (not read). As
    /// [`Runtime::allreduce_values`], with no tensor and no domain.
    ///
    /// # Errors
    ///
    /// [`MpiError::NoSuchRank`], as [`Runtime::allreduce_values`].
    pub fn broadcast_values<T: Element>(
        &self,
        values: &[T],
        root: usize,
    ) -> Result<Ticket<Vec<T>, OpError>, OpError> {
        self.host_collective(Collective::Broadcast { root }, values)
    }

    /// A collective over host values: checked here, posted by the MPI
    /// actor's op at once (its input is ready), its result the ticket's.
    fn host_collective<T: Element>(
        &self,
        what: Collective,
        values: &[T],
    ) -> Result<Ticket<Vec<T>, OpError>, OpError> {
        let mpi = self.table().mpi().ok_or_else(no_mpi)?;
        let shape = [values.len()];
        what.output(T::DTYPE, &shape, mpi.ranks)?;
        check_message(what.name(), T::DTYPE, &shape)?;
        let input = Tensor::from_vec(values.to_vec(), &shape)?;
        let (owed, ticket) = Owed::new(what.name(), Vec::new());
        let body = Op::new(move |engine: &mut MpiEngine| {
            engine.progress();
            let done = owed.done_with(move |finished| match finished.tensor {
                Some(tensor) => Ok(tensor.into_vec::<T>()?),
                None => Err(OpError::Mpi(MpiError::Cancelled { op: what.name() })),
            });
            engine.collective(what, Some(input), None, done);
        })
        .label(what.name());
        submit(mpi, body)?;
        Ok(ticket)
    }
}

fn no_mpi() -> OpError {
    OpError::Mpi(MpiError::Unavailable {
        reason: "this runtime runs no MPI actor (build it with `Builder::mpi`)".into(),
    })
}

/// Submits the MPI actor's op, after `input`'s *mpi out* (or *mpi
/// buffer*) if there is one: `call` gets the engine, what the input's slot
/// holds, and the completion.
fn post<F>(
    mpi: &MpiActor,
    op: &'static str,
    input: Option<(Event, Slot)>,
    call: F,
) -> Result<Posted, OpError>
where
    F: FnOnce(&mut MpiEngine, Option<Tensor>, Done) + Send + 'static,
{
    let (after, taken) = input.unzip();
    post_op(
        mpi,
        op,
        (after.into_iter().collect(), true),
        move |engine, done| call(engine, taken.and_then(|t| t.lock().take()), done),
    )
}

/// A collective's input as the MPI engine asks for it: pending until the
/// *mpi out* (and the pooled result buffer, if any) is done; failed with
/// the input's failure. A buffer that failed is only not used.
fn awaited(input: (Event, Slot), buffer: Option<(Event, Slot)>) -> weft_mpi::Awaited {
    Box::new(move || {
        let buffer_done = buffer.as_ref().map_or(EventState::Done, |b| b.0.state());
        match (input.0.state(), buffer_done) {
            (EventState::Failed(failure), _) => weft_mpi::Input::Failed(failure.to_string()),
            (EventState::Pending, _) | (_, EventState::Pending) => weft_mpi::Input::Pending,
            _ => weft_mpi::Input::Ready(
                input.1.lock().take(),
                (buffer.as_ref())
                    .and_then(|b| b.1.lock().take())
                    .map(|t| t.into_parts().1),
            ),
        }
    })
}

/// Submits the MPI actor's op; it runs after `after` if `wait`, else at
/// once (`after` then only says why it failed, were it dropped unrun):
/// `call` gets the engine and the completion.
fn post_op<F>(
    mpi: &MpiActor,
    op: &'static str,
    (after, wait): (Vec<Event>, bool),
    call: F,
) -> Result<Posted, OpError>
where
    F: FnOnce(&mut MpiEngine, Done) + Send + 'static,
{
    let (owed, ticket) = Owed::new(op, after.clone());
    let slot = Slot::default();
    let spent = Spent::default();
    let (fill, give) = (slot.clone(), spent.clone());
    let flow = Flow::next_id();
    let body = Op::new(move |engine: &mut MpiEngine| {
        engine.progress();
        call(engine, owed.done(fill, give));
    })
    .label(op)
    .flow(Flow::Out(flow));
    let body = if wait { body.after(after) } else { body };
    submit(mpi, body)?;
    Ok(Posted {
        ticket,
        slot,
        spent,
        flow,
    })
}

/// Submits an op to the MPI actor. Its own ticket is not kept: the
/// promise the op holds is its result.
fn submit<B: OpBody<MpiEngine>>(mpi: &MpiActor, body: Op<B>) -> Result<(), OpError> {
    let ticket_of_op = mpi.lane.submit(body).map_err(|e| match e {
        weft_actors::SubmitError::Closed(_) => OpError::Closed(weft_actors::ActorClosed {
            actor: mpi.actor.name().to_owned(),
        }),
        weft_actors::SubmitError::WouldDeadlock(_) => OpError::WouldDeadlock,
    })?;
    drop(ticket_of_op);
    Ok(())
}

/// An MPI op on its way: the promise's ticket, where its result and its
/// spent buffer will be, and the trace flow to its *mpi in*.
struct Posted {
    ticket: Ticket<(), OpError>,
    slot: Slot,
    spent: Spent,
    flow: u64,
}

/// Tensor communication between ranks (feature `mpi`), from a CPU
/// domain's lane (a CUDA tensor goes through the host: transfer it to a
/// CPU domain first). Every call returns at once; the ops run in the order
/// of their events, as every lane op.
///
/// What the MPI actor receives becomes resident through a lane of its own
/// into the same domain, so a receive still waiting for its message holds
/// up only the ops that read its tensor: not the rest of this lane (a rank
/// may post its receives before its sends, as MPI codes do), and not the
/// receives posted after it (they complete in the order their messages
/// come).
impl Lane {
    /// The runtime's domains, while it lives.
    fn live_table(&self) -> Result<Arc<DomainTable>, OpError> {
        self.table().ok_or_else(|| {
            OpError::Closed(weft_actors::ActorClosed {
                actor: self.tensors().actor_name(self.place()),
            })
        })
    }

    fn mpi_actor<T>(
        &self,
        with: impl FnOnce(&MpiActor) -> Result<T, OpError>,
    ) -> Result<T, OpError> {
        let table = self.live_table()?;
        let mpi = table.mpi().ok_or_else(no_mpi)?;
        with(mpi)
    }

    /// *mpi out*: `handle`'s tensor into a slot, after its producer. When
    /// `handle` is the last one by then (nobody else has one: nothing can
    /// read the tensor any more), the tensor itself moves out of the
    /// store, with no copy; else a host copy goes, in a buffer of the
    /// domain's pool (no fresh pages when the pool has one of its size).
    /// Either buffer returns to the pool once MPI is done with it
    /// ([`Lane::give_back`]).
    fn mpi_out(&self, op: &'static str, handle: TensorHandle) -> Result<(Event, Slot), OpError> {
        self.check(op, &handle)?;
        let slot = Slot::default();
        let ready = handle.ready();
        let (held, put) = (handle, slot.clone());
        let bin = self.tensors().spent().clone();
        let out = self.submit_op(
            "mpi out",
            [ready],
            None,
            move |engine: &mut CpuEngine, _| -> Result<(), OpError> {
                // Clones of finished ops wait in the spent bin: dropped,
                // they may leave `held` the last one.
                let last = held.is_last(0) || {
                    bin.drop_all();
                    held.is_last(0)
                };
                *put.lock() = Some(if last {
                    engine.take_resident(held.id())?
                } else {
                    engine.pooled_copy(held.id())?
                });
                Ok(())
            },
        )?;
        Ok((out.event(), slot))
    }

    /// A new lane into this lane's domain. An *mpi in* waits for its
    /// message at the head of its lane, so each receive gets a lane of its
    /// own: on a shared one, a receive whose message came would wait for
    /// an earlier one's.
    fn side_lane(&self) -> Result<Lane, OpError> {
        let table = self.live_table()?;
        Ok(Lane::open(table.cpu(self.domain())?, &table)?)
    }

    /// *mpi in*: after `ticket`, on `side` (see [`Lane::side_lane`]), what
    /// MPI filled `slot` with becomes resident as a tensor of `meta`.
    fn mpi_in(side: &Lane, posted: &Posted, meta: Meta) -> Result<TensorHandle, OpError> {
        let lane = side.actor_lane().id();
        let slot = posted.slot.clone();
        let mut handles = side.produce(
            "mpi in",
            &[],
            Some((posted.ticket.event(), Flow::In(posted.flow))),
            vec![meta],
            move |engine, _, outs| {
                let tensor = slot
                    .lock()
                    .take()
                    .ok_or(MpiError::Cancelled { op: "mpi in" })?;
                Ok(engine.upload(outs[0].id(), tensor, lane)?)
            },
        )?;
        Ok(handles.pop().expect("one output"))
    }

    /// Sends `handle`'s tensor to rank `to` under `tag` (at most
    /// [`weft_mpi::MAX_TAG`]); the matching [`Lane::recv`] on `to`
    /// names this rank and tag, with the tensor's type and shape. The
    /// ticket resolves once MPI is done with the data.
    ///
    /// The send takes the handle, as the `_into` ops take theirs: given the
    /// last one (`lane.send(h, ..)`), it moves the tensor's own buffer out
    /// of the domain's store to MPI, with no copy; given a clone
    /// (`lane.send(h.clone(), ..)`, the tensor still to be read here), it
    /// sends a copy.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use weft::prelude::*;
    /// let rt = weft::Runtime::builder().mpi().build()?;
    /// let lane = rt.lane(0)?;
    /// let x = lane.upload(weft::Tensor::from_vec(vec![1.0f64; 1 << 20], &[1 << 20])?)?;
    /// let peer = (rt.rank() + 1) % rt.ranks();
    /// lane.send(x.clone(), peer, 1)?; // a copy: `x` is read below
    /// let y = lane.add(&x, &x)?;
    /// lane.send(y, peer, 2)?.wait()?; // `y`'s own buffer goes to MPI
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// [`MpiError::NoSuchRank`], [`MpiError::Tag`],
    /// [`MpiError::TooManyAxes`] (as [`OpError::Mpi`]), the handle errors.
    pub fn send(
        &self,
        handle: TensorHandle,
        to: usize,
        tag: u32,
    ) -> Result<Ticket<(), OpError>, OpError> {
        self.mpi_actor(|mpi| {
            check_peer(to, tag, mpi.ranks)?;
            let meta = handle.meta();
            if meta.shape.len() > weft_mpi::MAX_AXES {
                return Err(MpiError::TooManyAxes {
                    op: "send",
                    axes: meta.shape.len(),
                }
                .into());
            }
            let input = self.mpi_out("send", handle)?;
            let posted = post(
                mpi,
                "send",
                Some(input),
                move |engine, tensor, done| match tensor {
                    Some(t) => engine.send(t, to, tag, done),
                    None => done(Err(MpiError::Cancelled { op: "send" })),
                },
            )?;
            self.give_back(&meta, &posted)?;
            Ok(posted.ticket)
        })
    }

    /// *mpi return*: a large input's buffer goes back to the domain's pool
    /// once MPI is done with it, on a lane only such returns use (nothing
    /// waits on them, so their order costs nothing).
    fn give_back(&self, input: &Meta, posted: &Posted) -> Result<(), OpError> {
        if meta_bytes(input) < POOLED_BYTES {
            return Ok(());
        }
        let table = self.live_table()?;
        let back = self.transfer_lanes().cpu(self.domain(), &table)?;
        let spent = posted.spent.clone();
        drop(back.submit_op(
            "mpi return",
            [posted.ticket.event()],
            None,
            move |engine: &mut CpuEngine, _| -> Result<(), OpError> {
                if let Some(buffer) = spent.lock().take() {
                    engine.give_buffer(buffer);
                }
                Ok(())
            },
        )?);
        Ok(())
    }

    /// *mpi buffer*: for a large result, a buffer of the domain's pool,
    /// taken on the result's own lane `side` before MPI is asked to fill it.
    fn pooled_result(&self, side: &Lane, out: &Meta) -> Result<Option<(Event, Slot)>, OpError> {
        if meta_bytes(out) < POOLED_BYTES {
            return Ok(None);
        }
        let (dtype, n) = (out.dtype, weft_core::element_count(&out.shape).unwrap_or(0));
        let slot = Slot::default();
        let put = slot.clone();
        let taken = side.submit_op(
            "mpi buffer",
            [],
            None,
            move |engine: &mut CpuEngine, _| -> Result<(), OpError> {
                let data = engine.pooled_buffer(dtype, n);
                *put.lock() = Some(Tensor::from_data(data, &[n])?);
                Ok(())
            },
        )?;
        Ok(Some((taken.event(), slot)))
    }

    /// Receives the tensor rank `from` sends under `tag`, of `dtype` and
    /// `shape`, as a tensor of this lane's domain. What arrives is checked
    /// against them: another type or shape fails the handle's producer
    /// with [`MpiError::Mismatch`] naming both.
    ///
    /// # Errors
    ///
    /// As [`Lane::send`], and [`MpiError::TooManyAxes`] or [`MpiError::TooLarge`] for a
    /// shape one message cannot carry (refused before any buffer is taken).
    pub fn recv(
        &self,
        from: usize,
        tag: u32,
        dtype: DType,
        shape: &[usize],
    ) -> Result<TensorHandle, OpError> {
        self.mpi_actor(|mpi| {
            check_peer(from, tag, mpi.ranks)?;
            // Before the buffer is taken: a shape no message carries is
            // refused here, not allocated.
            check_message("recv", dtype, shape)?;
            let meta = Meta {
                dtype,
                shape: shape.to_vec(),
            };
            let side = self.side_lane()?;
            let buffer = self.pooled_result(&side, &meta)?;
            let shape = shape.to_vec();
            let posted = post(mpi, "recv", buffer, move |engine, buffer, done| {
                let buffer = buffer.map(|t| t.into_parts().1);
                engine.recv(from, tag, (dtype, &shape), buffer, done)
            })?;
            Self::mpi_in(&side, &posted, meta)
        })
    }

    /// Runs `what` over every rank with `handle`'s tensor; the result is a
    /// tensor of this lane's domain. The input's buffer moves to MPI when
    /// the caller's handle is gone by the time the op runs (a temporary,
    /// say, still being computed), else MPI reads a copy.
    fn collective(&self, what: Collective, handle: &TensorHandle) -> Result<TensorHandle, OpError> {
        self.mpi_actor(|mpi| {
            let meta = handle.meta();
            let shape = what
                .output(meta.dtype, &meta.shape, mpi.ranks)?
                .expect("a collective with a tensor has one");
            let out = Meta {
                dtype: meta.dtype,
                shape,
            };
            let side = self.side_lane()?;
            // A broadcast's result is its input's buffer: nothing to take.
            let buffer = match what {
                Collective::Broadcast { .. } => None,
                _ => self.pooled_result(&side, &out)?,
            };
            let input = self.mpi_out(what.name(), handle.clone())?;
            let after = std::iter::once(input.0.clone())
                .chain(buffer.as_ref().map(|b| b.0.clone()))
                .collect();
            // Queued in the MPI actor's order at once, not after its input:
            // a collective asked for is a promise to the other ranks, kept
            // by a contribution or, if the input fails or a shutdown comes
            // first, by a withdrawal they all see (`weft_mpi::Input`).
            let meta_in = Some((meta.dtype, meta.shape.clone()));
            let awaited = awaited(input, buffer);
            let posted = post_op(mpi, what.name(), (after, false), move |engine, done| {
                engine.collective_when(what, meta_in, awaited, done)
            })?;
            self.give_back(&meta, &posted)?;
            Self::mpi_in(&side, &posted, out)
        })
    }

    /// Every rank gets the reduction of every rank's tensor (same type and
    /// shape on every rank; ranks that disagree all fail with
    /// [`MpiError::Disagree`]).
    ///
    /// # Errors
    ///
    /// [`MpiError::Unsupported`] (max or min of complex tensors, sum or
    /// product of `Bool`), the handle errors.
    pub fn allreduce(
        &self,
        handle: &TensorHandle,
        reduction: Reduction,
    ) -> Result<TensorHandle, OpError> {
        self.collective(Collective::Allreduce(reduction), handle)
    }

    /// Every rank gets `root`'s tensor; the others pass a tensor of its
    /// type and shape (its values are not read).
    ///
    /// # Errors
    ///
    /// [`MpiError::NoSuchRank`], the handle errors.
    pub fn broadcast(&self, handle: &TensorHandle, root: usize) -> Result<TensorHandle, OpError> {
        self.collective(Collective::Broadcast { root }, handle)
    }

    /// Every rank gets every rank's tensor, stacked along a new first axis
    /// in rank order.
    ///
    /// # Errors
    ///
    /// The handle errors; [`MpiError::TooLarge`].
    pub fn allgather(&self, handle: &TensorHandle) -> Result<TensorHandle, OpError> {
        self.collective(Collective::Allgather, handle)
    }

    /// The reduction of every rank's tensor, split along the first axis
    /// into one block per rank: rank `r` gets block `r`.
    ///
    /// # Errors
    ///
    /// [`MpiError::Indivisible`] when the ranks do not divide the first
    /// extent; as [`Lane::allreduce`].
    pub fn reduce_scatter(
        &self,
        handle: &TensorHandle,
        reduction: Reduction,
    ) -> Result<TensorHandle, OpError> {
        self.collective(Collective::ReduceScatter(reduction), handle)
    }
}
