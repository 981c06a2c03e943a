//! The transfer protocol: a tensor moved between domains as two ops, one on each actor.
//!
//! A transfer is submitted by the source lane as two ops and waits for
//! neither:
//!
//! 1. the destination is resolved first, so that a place the runtime does
//!    not run is refused before anything is submitted;
//! 2. *transfer out*, on the source actor after the tensor's producer: it
//!    downloads a host copy into a hand-off slot shared by the two ops;
//! 3. *transfer in*, on the destination actor, ordered after *transfer out*
//!    by that op's event (so the slot is full when it runs): it takes the
//!    copy and makes it resident under a new handle of the destination;
//! 4. the swap: *transfer in* may give a host buffer back to the source's
//!    pool ([`TensorEngine::take_transfer`]), through the source domain's
//!    free queue (`Release::Buffer`), which the source's actor drains
//!    before its next op and in its housekeeping, as it drains released
//!    tensors. Without it the source's copy of every transfer would be
//!    fresh memory: its pool gives buffers and never gets them back.
//!
//! Neither actor blocks on the other; the two ops are one flow in a trace.
//! A failure of either half fails the destination handle's event, and so
//! the ops that read it.

use std::sync::Arc;

use parking_lot::Mutex;
use weft_actors::{ActorClosed, Event, Flow, Releaser};
use weft_core::{Meta, Place, Tensor, TensorEngine};

use crate::domain::DomainTable;
use crate::error::OpError;
use crate::handle::{Release, TensorHandle};
use crate::lane::Lane;

/// The slot the source's op fills and the destination's op empties.
type Handoff = Arc<Mutex<Option<Tensor>>>;

impl<E: TensorEngine> Lane<E> {
    /// Moves a copy of `handle`'s tensor to `to` (a CPU domain by index,
    /// or a [`Place`]: `Place::Cuda(0)`) and returns its handle there. The
    /// source's op hands a host copy over, the destination's op takes it
    /// in; neither actor waits for the other: the destination's op is
    /// ordered after the source's by an event. Between CPU domains of
    /// different NUMA nodes the destination makes the copy it keeps, so its
    /// pages are first touched on its node, and gives the source's copy
    /// back to the source's buffer pool; between domains of one node it
    /// keeps the source's copy and gives a buffer of its own pool back. So
    /// a stream of large transfers (from 256 KiB,
    /// [`SWAP_MIN_BYTES`](crate::engine::SWAP_MIN_BYTES)) copies into
    /// memory already faulted in, not fresh pages. To and from a CUDA device the copy goes
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
        if to == self.place() {
            return Ok(handle.clone());
        }
        let closed = || {
            OpError::Closed(ActorClosed {
                actor: self.tensors().actor_name(to),
            })
        };
        let table = self.table().ok_or_else(closed)?;
        // The destination first: a place that cannot be had costs nothing.
        let lanes = self.transfer_lanes();
        let moved = match to {
            Place::Cpu(d) => self.transfer_to(handle, &lanes.cpu(d, &table)?, &table),
            #[cfg(feature = "cuda")]
            Place::Cuda(d) => self.transfer_to(handle, &lanes.cuda(d, &table)?, &table),
            #[cfg(not(feature = "cuda"))]
            Place::Cuda(device) => Err(crate::error::PlaceError::NoSuchDevice {
                device,
                running: Vec::new(),
            }
            .into()),
        }?;
        crate::tape::note_transfer(handle, &moved);
        Ok(moved)
    }

    /// Submits both halves of a transfer of `handle` into `dest`'s domain.
    fn transfer_to<D: TensorEngine>(
        &self,
        handle: &TensorHandle,
        dest: &Lane<D>,
        table: &DomainTable,
    ) -> Result<TensorHandle, OpError> {
        let node = |p: Place| table.numa_node(p);
        let same_node = node(self.place()).is_some_and(|n| Some(n) == node(dest.place()));
        let handoff = Handoff::default();
        let flow = Flow::next_id();
        let (held, put) = (handle.clone(), handoff.clone());
        let lane = self.actor_lane().id();
        let out = self.submit_op(
            "transfer out",
            [handle.ready()],
            Some(Flow::Out(flow)),
            move |engine: &mut E, _| -> Result<(), OpError> {
                *put.lock() = Some(engine.download(held.id(), lane)?);
                Ok(())
            },
        )?;
        // Copy on the destination's thread: first touch places the pages on
        // its node.
        let copy = !same_node && matches!(dest.place(), Place::Cpu(_));
        // Only a CPU domain keeps host buffers: a device's is let go on the
        // destination, not sent to the device's actor to be dropped there.
        let back = matches!(self.place(), Place::Cpu(_)).then(|| self.tensors().frees().clone());
        dest.take_in(handle.meta(), out.event(), flow, (handoff, back), copy)
    }

    /// The destination's half: after `after` (the source's half), takes the
    /// tensor out of `handoff` and makes it resident here, copying it first
    /// if `copy`; a buffer the engine gives back goes to `back`, the
    /// source's free queue, if there is one.
    fn take_in(
        &self,
        meta: Meta,
        after: Event,
        flow: u64,
        (handoff, back): (Handoff, Option<Arc<Releaser<Release>>>),
        copy: bool,
    ) -> Result<TensorHandle, OpError> {
        let lane = self.actor_lane().id();
        let mut handles = self.produce(
            "transfer in",
            &[],
            Some((after, Flow::In(flow))),
            vec![meta],
            move |engine, _, outs| {
                let sent = handoff
                    .lock()
                    .take()
                    .expect("the transfer-out op ran before this one");
                let buffer = engine.take_transfer(outs[0].id(), sent, copy, lane)?;
                if let (Some(buffer), Some(back)) = (buffer, back) {
                    // Dropped here if the source is gone.
                    back.release(Release::Buffer(buffer));
                }
                Ok(())
            },
        )?;
        Ok(handles.pop().expect("one output"))
    }
}
