//! What every device tensor of an engine shares: the pool of events and the
//! free stream ([`EventPool`]), and the count of driver calls it keeps
//! ([`DriverCalls`]).

use std::cell::RefCell;
use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaEvent, DriverError};

use crate::streams::Stream;

/// What every device tensor of an engine shares for its accesses and its
/// free: events no buffer uses, for the next (an event is made once and
/// recorded many times), and the free stream, which carries the frees and
/// the waits they need and nothing else, so that a free waiting for a
/// buffer's readers holds up no lane and no copy.
pub(crate) struct EventPool {
    pub(crate) ctx: Arc<CudaContext>,
    free_on: Stream,
    /// Whether the device allocates in stream order (else frees are
    /// synchronous, after the device is idle).
    stream_ordered: bool,
    free: RefCell<Vec<CudaEvent>>,
    pub(crate) calls: std::cell::Cell<DriverCalls>,
}

/// The driver calls the engine makes, by kind: what its ops cost on the
/// host side of the device (cudarc's own checks around each call, such as
/// its `cuCtxGetCurrent`, are not counted). [`CudaEngine::driver_calls`](crate::CudaEngine::driver_calls).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DriverCalls {
    /// Kernel launches, cuBLAS calls and device-to-device copies.
    pub enqueued: u64,
    /// `cuEventRecord`s that order accesses.
    pub event_records: u64,
    /// `cuStreamWaitEvent`s.
    pub event_waits: u64,
    /// `cuEventCreate`s (events are pooled: this stops growing).
    pub events_created: u64,
    /// Stream-ordered allocations.
    pub allocs: u64,
    /// Frees.
    pub frees: u64,
    /// Host copies (each chunk of a staged one).
    pub host_copies: u64,
    /// Host waits: stream and event synchronizations.
    pub syncs: u64,
}

impl DriverCalls {
    /// Every call counted.
    pub fn total(&self) -> u64 {
        self.enqueued
            + self.event_records
            + self.event_waits
            + self.events_created
            + self.allocs
            + self.frees
            + self.host_copies
            + self.syncs
    }

    /// The calls made since `earlier` was read.
    pub fn since(&self, earlier: &DriverCalls) -> DriverCalls {
        DriverCalls {
            enqueued: self.enqueued - earlier.enqueued,
            event_records: self.event_records - earlier.event_records,
            event_waits: self.event_waits - earlier.event_waits,
            events_created: self.events_created - earlier.events_created,
            allocs: self.allocs - earlier.allocs,
            frees: self.frees - earlier.frees,
            host_copies: self.host_copies - earlier.host_copies,
            syncs: self.syncs - earlier.syncs,
        }
    }
}

impl EventPool {
    pub(crate) fn new(ctx: Arc<CudaContext>, stream_ordered: bool) -> Result<Self, DriverError> {
        Ok(EventPool {
            free_on: Stream::new(&ctx)?,
            ctx,
            stream_ordered,
            free: RefCell::new(Vec::new()),
            calls: std::cell::Cell::new(DriverCalls::default()),
        })
    }

    pub(crate) fn free_stream(&self) -> &Stream {
        &self.free_on
    }

    pub(crate) fn stream_ordered(&self) -> bool {
        self.stream_ordered
    }

    /// A spare event, or a new one (no timing: the cheapest kind).
    pub(crate) fn take(&self) -> Result<CudaEvent, DriverError> {
        if let Some(event) = self.free.borrow_mut().pop() {
            return Ok(event);
        }
        self.count(|c| c.events_created += 1);
        self.ctx.new_event(None)
    }

    pub(crate) fn give(&self, events: impl Iterator<Item = CudaEvent>) {
        self.free.borrow_mut().extend(events);
    }

    /// Counts a driver call.
    pub(crate) fn count(&self, call: impl FnOnce(&mut DriverCalls)) {
        let mut calls = self.calls.get();
        call(&mut calls);
        self.calls.set(calls);
    }
}
