//! `Lane`: an ordered stream of ops into one actor (a CPU domain or a CUDA device).
//!
//! The type and how one is opened live here; its tensor ops are in
//! `ops/` and its transfers in `transfer.rs`.

use std::fmt;
use std::ops::Deref;
use std::sync::{Arc, Weak};

use weft_actors::{ActorClosed, Op};
use weft_core::{Place, TensorEngine};
use weft_cpu::CpuEngine;

use crate::domain::{Domain, DomainTable};
use crate::handle::DomainTensors;

/// An ordered, bounded stream of ops into one actor: a CPU domain's
/// (`Lane`, the default) or, with the `cuda` feature, a CUDA device's
/// (`Lane<CudaEngine>`, from `Runtime::cuda_lane`). The tensor ops
/// are the same on both; on a CUDA device each lane is its own stream.
///
/// It is the generic actor lane ([`weft_actors::Lane`], reached through
/// `Deref`: `run`, `try_run`, `submit`, `try_submit`, `submit_timeout`) plus
/// the tensor ops of the domain: moving tensors (`upload`, `download`,
/// `transfer`), running programs, and the vocabulary of named ops (`add`,
/// `matmul`, `einsum`, …: the traits of [`crate::ops::Ops`], in
/// `weft::prelude`), which a [`crate::Recorder`] records by the same names.
/// Clones share the same stream.
///
/// ```
/// use weft::prelude::*;
///
/// let rt = Runtime::builder().split(2).build()?;
/// let (a, b) = (rt.lane(0)?, rt.lane(1)?);
/// // Submitted without waiting: each call returns a handle at once.
/// let x = a.upload(Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], &[2, 2])?)?;
/// let y = a.matmul(&x, &a.eye(DType::F64, 2, 2)?)?;
/// let z = a.transfer(&y, 1)?; // to domain 1, ordered after `y` by its event
/// let total = b.sum_all(&b.mul(&z, &z)?)?;
/// assert_eq!(b.download(&total)?.wait()?.as_slice::<f64>()?, [30.0]);
/// // A bad shape fails at the call site, naming both shapes.
/// let bad = a.upload(Tensor::from_vec(vec![1.0f64; 3], &[3])?)?;
/// assert!(a.matmul(&x, &bad).unwrap_err().to_string().contains("[2, 2]"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Lane<E: TensorEngine = CpuEngine> {
    lane: weft_actors::Lane<E>,
    tensors: Arc<DomainTensors>,
    /// The runtime's domains, for transfers; a lane does not keep the
    /// runtime alive.
    table: Weak<DomainTable>,
    /// Only for engines that keep per-lane state.
    retire: Option<Arc<Retire<E>>>,
    /// The lanes this lane's transfers feed, shared by its clones.
    transfers: Arc<TransferLanes>,
}

/// One lane into each destination of a lane's transfers, opened by the
/// first transfer there and reused by the next: opening a lane costs its
/// queue's allocation and the actor's bookkeeping, and the halves a lane
/// sends one destination are in order anyway.
#[derive(Default)]
pub(crate) struct TransferLanes {
    cpu: parking_lot::Mutex<Vec<(usize, Lane<CpuEngine>)>>,
    #[cfg(feature = "cuda")]
    cuda: parking_lot::Mutex<Vec<(usize, Lane<crate::cuda::CudaEngine>)>>,
}

impl TransferLanes {
    /// The lane into CPU domain `domain`.
    pub(crate) fn cpu(
        &self,
        domain: usize,
        table: &Arc<DomainTable>,
    ) -> Result<Lane<CpuEngine>, crate::OpError> {
        Self::get(&self.cpu, domain, || {
            Ok(Lane::open(table.cpu(domain)?, table)?)
        })
    }

    /// The lane into CUDA device `device`.
    #[cfg(feature = "cuda")]
    pub(crate) fn cuda(
        &self,
        device: usize,
        table: &Arc<DomainTable>,
    ) -> Result<Lane<crate::cuda::CudaEngine>, crate::OpError> {
        Self::get(&self.cuda, device, || {
            Ok(Lane::open(table.cuda(device)?, table)?)
        })
    }

    fn get<D: TensorEngine>(
        lanes: &parking_lot::Mutex<Vec<(usize, Lane<D>)>>,
        index: usize,
        open: impl FnOnce() -> Result<Lane<D>, crate::OpError>,
    ) -> Result<Lane<D>, crate::OpError> {
        let cached = |lanes: &[(usize, Lane<D>)]| {
            let found = lanes.iter().find(|(i, _)| *i == index);
            found.map(|(_, lane)| lane.clone())
        };
        if let Some(lane) = cached(&lanes.lock()) {
            return Ok(lane);
        }
        // Opened, and a raced one dropped (retiring its lane), with the
        // lock released: neither waits on anything while it is held.
        let lane = open()?;
        let mut held = lanes.lock();
        if let Some(first) = cached(&held) {
            drop(held);
            drop(lane);
            return Ok(first);
        }
        held.push((index, lane.clone()));
        Ok(lane)
    }
}

/// Dropped with a lane's last clone: tells the engine, in order after the
/// lane's last op, that the lane is gone ([`TensorEngine::retire_lane`]).
struct Retire<E: TensorEngine>(weft_actors::Lane<E>);

impl<E: TensorEngine> Drop for Retire<E> {
    fn drop(&mut self) {
        let lane = self.0.id();
        // Never waits: if the lane is full or the actor is shut down, the
        // engine keeps the lane's state until it is dropped itself.
        let _ = self.0.try_submit(
            Op::new(move |engine: &mut E| engine.retire_lane(lane)).label("retire lane"),
        );
    }
}

impl<E: TensorEngine> Clone for Lane<E> {
    fn clone(&self) -> Self {
        Lane {
            lane: self.lane.clone(),
            tensors: self.tensors.clone(),
            table: self.table.clone(),
            retire: self.retire.clone(),
            transfers: self.transfers.clone(),
        }
    }
}

impl<E: TensorEngine> Lane<E> {
    /// Opens a new lane into `domain`, one of `table`'s.
    pub(crate) fn open(
        domain: &Domain<E>,
        table: &Arc<DomainTable>,
    ) -> Result<Lane<E>, ActorClosed> {
        let lane = domain.actor().lane()?;
        Ok(Lane {
            retire: E::RETIRES_LANES.then(|| Arc::new(Retire(lane.clone()))),
            lane,
            tensors: domain.tensors().clone(),
            table: Arc::downgrade(table),
            transfers: Arc::default(),
        })
    }

    /// The runtime's domains, while the runtime lives.
    pub(crate) fn table(&self) -> Option<Arc<DomainTable>> {
        self.table.upgrade()
    }

    /// The index of the CPU domain (or CUDA device) this lane feeds.
    pub fn domain(&self) -> usize {
        self.tensors.place().index()
    }

    /// What this lane feeds: a CPU domain or a CUDA device.
    pub fn place(&self) -> Place {
        self.tensors.place()
    }

    /// The generic actor lane underneath.
    pub fn actor_lane(&self) -> &weft_actors::Lane<E> {
        &self.lane
    }

    pub(crate) fn tensors(&self) -> &Arc<DomainTensors> {
        &self.tensors
    }

    pub(crate) fn transfer_lanes(&self) -> &TransferLanes {
        &self.transfers
    }
}

impl<E: TensorEngine> Deref for Lane<E> {
    type Target = weft_actors::Lane<E>;

    fn deref(&self) -> &Self::Target {
        &self.lane
    }
}

impl<E: TensorEngine> fmt::Debug for Lane<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lane")
            .field("place", &self.tensors.place())
            .field("lane", &self.lane.id())
            .finish()
    }
}
