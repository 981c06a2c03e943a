//! The CUDA engine: one device's primary context, a stream and a cuBLAS
//! handle per lane, the device's resident tensors, and pinned staging for
//! host copies. Built on its actor thread (the context is made current
//! there, once, by the factory) and never shared: no lock guards any of it.
//!
//! Ordering on the device:
//! - each lane's ops run in order on the lane's stream;
//! - a tensor written on one stream and read on another is ordered by
//!   weft's own access table (`access.rs`; cudarc's per-buffer events are
//!   off for the engine's context): the reading stream waits on the device
//!   for the write, a write for every read on other streams, and the actor
//!   never blocks. A write records one event, when it is enqueued; a read
//!   records none until a later write or free must follow it;
//! - a tensor is allocated in the order of the stream that writes it first
//!   (the lane's, or the upload stream's). One whose every access was on
//!   one stream is freed in that stream's order, with no event and no
//!   wait; any other on the engine's free stream, which carries frees and
//!   the waits they need and nothing else: the free waits for the last
//!   write and for every stream's reads, and no lane or copy stream is held
//!   up by it. So a chain of ops on one lane costs, per op, its launch, its
//!   output's allocation and event, and an input's free;
//! - an op completes for the actor once it is enqueued. Only a copy to the
//!   host ([`TensorEngine::download`]) waits, and only for that copy, on the
//!   engine's device-to-host stream (which first waits, on the device, for
//!   the op that wrote the tensor). Copies to the device go on a
//!   host-to-device stream, so a lane that only moves tensors makes no
//!   stream.
//!
//! Memory: device buffers come from the device's default pool in stream
//! order; the engine sets the pool's release threshold to the device's
//! memory at start, so freed memory stays in the pool for reuse instead of
//! going back to the OS at every synchronization, and returns it on a
//! trim ([`TensorEngine::trim`], which an idle device's actor runs).
//! `memory()` reports the pool (bytes held beyond live tensors, its peak,
//! its threshold). Host staging is write-combined for uploads, plain
//! pinned memory for downloads (the host reads it).
//!
//! Kernels: GEMM through cuBLAS (`cublasGemmStridedBatchedEx`, all four
//! element types); the decompositions through cuSOLVER (`linalg.rs`);
//! everything else through the engine's own kernels,
//! compiled by NVRTC at first use ([`compile_kernels`]): to a cubin for the
//! device's architecture where NVRTC targets it, else to PTX the driver
//! compiles. Ops that are several steps on the CPU are the same steps
//! here (`gemm` and `axpby`, `dot`, `clamp_between`; `pad` and
//! `diag_embed` are a fill and a strided copy); a random tensor is made by
//! the host's generator and uploaded, so a seed gives the same values in
//! every place.
//!
//! Teardown (`Drop`): the context is synchronized first, then the tensors
//! are freed, the cuBLAS handles destroyed, the modules unloaded and the
//! staging released; failures go to stderr, never a panic on the actor.
//!
//! Layered as cudarc is: `launch` (kernel launches, cuBLAS calls) and
//! `memory` (device allocations, pinned staging, host copies) own every
//! `unsafe`, each block argued; `streams` keeps the lanes' streams and
//! cuBLAS handles, `exec` the op methods, and this file the engine and its
//! [`TensorEngine`] impl, whose dispatch matches every op.

#![deny(unsafe_code)]
#![warn(missing_docs, missing_debug_implementations)]

#[macro_use]
extern crate weft_core;

mod access;
#[cfg(test)]
mod coverage;
#[allow(unsafe_code)] // The product call and a handle's rebinding, each argued.
mod cublas;
#[allow(unsafe_code)] // The decompositions' calls, each argued.
mod cusolver;
mod exec;
mod index;
mod kernels;
mod lanes;
#[allow(unsafe_code)] // Kernel launches, each argued.
mod launch;
mod linalg;
#[allow(unsafe_code)] // Device and pinned memory, host copies, each argued.
mod memory;
#[allow(unsafe_code)] // NVRTC's architecture query and compile, each argued.
mod nvrtc;
mod streams;

pub use cublas::cublas_present;
pub use cusolver::cusolver_present;
pub use kernels::{
    compile as compile_kernels, compile_cubin as compile_kernels_cubin, kernel_names,
};
pub use launch::driver_present;
pub use nvrtc::{nvrtc_architectures, nvrtc_present};

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;
use std::rc::Rc;
use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaEvent, CudaSlice, DriverError};

use access::Tracker;
use exec::{Exec, Value};
use index::HostIndex;
use kernels::Kernels;
use lanes::{LaneStream, SpareBlas};
use launch::Launcher;
use memory::{
    host_bytes_mut, keep_freed_memory, pool_stats, Copies, DevicePool, PoolAttr, PoolAttributes,
};
use streams::Stream;
use weft_core::layout::View;
use weft_core::ops::{
    broadcast_in_dim_view, broadcast_view, diagonal_view, permute_view, reverse_view, slice_view,
    BinaryOp, Linalg, TensorOp,
};
use weft_core::{DType, Data, Tensor, TensorError};
use weft_core::{
    DeviceError, EngineMemory, ExecError, NotResident, Place, TensorEngine, TensorId, Unsupported,
};
use weft_cpu::HostRun;

/// Host copies of at least this many bytes go through the engine's pinned
/// staging, in chunks of [`STAGING_CHUNK`] alternating between two buffers
/// (one fills while the other is on the bus); smaller ones go directly.
pub const STAGING_THRESHOLD: usize = 1 << 20;

/// Bytes per pinned staging buffer.
pub const STAGING_CHUNK: usize = 8 << 20;

/// What a CUDA engine is built for.
#[derive(Debug, Clone)]
pub struct CudaEngineConfig {
    /// The device's ordinal.
    pub ordinal: usize,
}

/// Facts of the device, read once at start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CudaInfo {
    /// The device's ordinal.
    pub ordinal: usize,
    /// Its name.
    pub name: String,
    /// Its memory, in bytes.
    pub total_memory: usize,
    /// Compute capability (major, minor).
    pub compute_capability: (i32, i32),
}

/// A tensor in device memory. Empty tensors hold a one-byte buffer.
pub struct DeviceTensor {
    dtype: DType,
    shape: Vec<usize>,
    /// Allocated on the stream of its first write; freed where its
    /// accesses allow (see its `Drop`, in `memory.rs`).
    buf: std::mem::ManuallyDrop<CudaSlice<u8>>,
    /// Which accesses on which streams later ones must follow (`access`).
    access: RefCell<Tracker<Stream, CudaEvent>>,
    events: Rc<EventPool>,
}

impl DeviceTensor {
    /// The element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// The shape.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// Elements.
    pub fn len(&self) -> usize {
        weft_core::element_count(&self.shape).unwrap_or(usize::MAX)
    }

    /// Whether it has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of its elements.
    pub fn bytes(&self) -> usize {
        self.len() * self.dtype.size()
    }

    /// The device buffer (at least one byte). The engine orders its own
    /// accesses to it across streams; work enqueued on it from outside the
    /// engine must be ordered by its caller (after the device is
    /// synchronized, say).
    pub fn buffer(&self) -> &CudaSlice<u8> {
        &self.buf
    }
}

/// What every device tensor of an engine shares for its accesses and its
/// free: events no buffer uses, for the next (an event is made once and
/// recorded many times), and the free stream, which carries the frees and
/// the waits they need and nothing else, so that a free waiting for a
/// buffer's readers holds up no lane and no copy.
pub(crate) struct EventPool {
    ctx: Arc<CudaContext>,
    free_on: Stream,
    /// Whether the device allocates in stream order (else frees are
    /// synchronous, after the device is idle).
    stream_ordered: bool,
    free: RefCell<Vec<CudaEvent>>,
    calls: std::cell::Cell<DriverCalls>,
}

/// The driver calls the engine makes, by kind: what its ops cost on the
/// host side of the device (cudarc's own checks around each call, such as
/// its `cuCtxGetCurrent`, are not counted). [`CudaEngine::driver_calls`].
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
    fn new(ctx: Arc<CudaContext>, stream_ordered: bool) -> Result<Self, DriverError> {
        Ok(EventPool {
            free_on: Stream::new(&ctx)?,
            ctx,
            stream_ordered,
            free: RefCell::new(Vec::new()),
            calls: std::cell::Cell::new(DriverCalls::default()),
        })
    }

    fn free_stream(&self) -> &Stream {
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

impl fmt::Debug for DeviceTensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DeviceTensor({}{:?})", self.dtype, self.shape)
    }
}

/// A CUDA device's engine. Not `Send`: it is built on its actor thread and
/// stays there.
pub struct CudaEngine {
    info: CudaInfo,
    ctx: Arc<CudaContext>,
    lanes: HashMap<u64, LaneStream>,
    spare_blas: Vec<SpareBlas>,
    store: HashMap<TensorId, DeviceTensor>,
    bytes: usize,
    kernels: Kernels,
    copies: Option<Copies>,
    /// The device's memory pool, which keeps freed memory for reuse.
    pool: Option<DevicePool>,
    events: Rc<EventPool>,
    /// Keeps the engine on the thread that built it.
    _not_send: std::marker::PhantomData<*const ()>,
}

impl fmt::Debug for CudaEngine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CudaEngine")
            .field("info", &self.info)
            .field("lanes", &self.lanes.len())
            .field("tensors", &self.store.len())
            .finish_non_exhaustive()
    }
}

fn device_error(device: usize, call: &'static str, e: impl fmt::Display) -> DeviceError {
    let message = e.to_string();
    DeviceError {
        device,
        call,
        out_of_memory: message.contains("OUT_OF_MEMORY") || message.contains("ALLOC_FAILED"),
        message,
    }
}

impl CudaEngine {
    /// Binds device `config.ordinal`'s primary context to the calling
    /// thread (the actor's) and reads the device's facts. Streams and cuBLAS
    /// handles are made per lane, on a lane's first op.
    ///
    /// # Errors
    ///
    /// [`DeviceError`] when the driver library, cuBLAS or the device is
    /// missing, or the context cannot be made.
    pub fn new(config: CudaEngineConfig) -> Result<CudaEngine, DeviceError> {
        let device = config.ordinal;
        let missing = |call, what: &str| DeviceError {
            device,
            call,
            message: format!("{what} cannot be loaded"),
            out_of_memory: false,
        };
        if !driver_present() {
            return Err(missing("loading libcuda", "the CUDA driver library"));
        }
        if !cublas_present() {
            return Err(missing("loading libcublas", "cuBLAS"));
        }
        let err = |call| move |e: DriverError| device_error(device, call, e);
        let ctx = CudaContext::new(device).map_err(err("cuDevicePrimaryCtxRetain"))?;
        let info = CudaInfo {
            ordinal: device,
            name: ctx.name().map_err(err("cuDeviceGetName"))?,
            total_memory: ctx.total_mem().map_err(err("cuDeviceTotalMem"))?,
            compute_capability: ctx
                .compute_capability()
                .map_err(err("cuDeviceGetAttribute"))?,
        };
        // Before any buffer exists: the engine orders accesses itself.
        memory::order_accesses_here(&ctx);
        let mut pool = DevicePool::of(&ctx);
        let events =
            Rc::new(EventPool::new(ctx.clone(), pool.is_some()).map_err(err("cuStreamCreate"))?);
        if let Some(pool) = &mut pool {
            keep_freed_memory(pool, info.total_memory).map_err(err("cuMemPoolSetAttribute"))?;
        }
        Ok(CudaEngine {
            info,
            ctx,
            lanes: HashMap::new(),
            spare_blas: Vec::new(),
            store: HashMap::new(),
            bytes: 0,
            kernels: Kernels::default(),
            copies: None,
            pool,
            events,
            _not_send: std::marker::PhantomData,
        })
    }

    /// The device's facts.
    pub fn info(&self) -> &CudaInfo {
        &self.info
    }

    /// The driver calls the engine has made so far, by kind: read before
    /// and after some ops to see what each costs.
    pub fn driver_calls(&self) -> DriverCalls {
        self.events.calls.get()
    }

    /// The device's context (current on this thread).
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The resident tensor `id`.
    ///
    /// # Errors
    ///
    /// [`NotResident`].
    pub fn get(&self, id: TensorId) -> Result<&DeviceTensor, NotResident> {
        self.store.get(&id).ok_or(NotResident(id))
    }

    /// Refuses what an integer op cannot compute before anything is
    /// launched, as the CPU does: a zero divisor of `floor_div` or `rem`
    /// ([`TensorError::DivisionByZero`], naming its index), a negative
    /// exponent of `pow`. A divisor (exponent) tensor is read back to the
    /// host for this: one synchronous copy of that operand, for these
    /// three ops of integer tensors only.
    fn check_integer_operands(
        &mut self,
        op: &TensorOp,
        inputs: &[TensorId],
        lane: u64,
    ) -> Result<(), ExecError> {
        let (b, divisor) = match (op, inputs) {
            (TensorOp::Binary(b), [_, rhs]) => (*b, Err(*rhs)),
            (
                TensorOp::BinaryScalar {
                    op: b,
                    value,
                    scalar_first,
                },
                [x],
            ) => (*b, if *scalar_first { Err(*x) } else { Ok(*value) }),
            _ => return Ok(()),
        };
        let x = self.store.get(&inputs[0]).ok_or(NotResident(inputs[0]))?;
        if !x.dtype.is_integer() || !matches!(b, BinaryOp::FloorDiv | BinaryOp::Rem | BinaryOp::Pow)
        {
            return Ok(());
        }
        let dtype = x.dtype;
        let host = match divisor {
            Ok(value) => TensorOp::Full {
                dtype,
                shape: Vec::new(),
                value,
            }
            .run(&[], 1)?
            .remove(0),
            Err(id) => TensorEngine::download(self, id, lane)?,
        };
        Ok(weft_core::ops::check_integer_operands(b, &host)?)
    }

    /// Reads an indexing op's index operand back to the host (one
    /// synchronous copy of it) and checks it there as the CPU does:
    /// indices against the axis, starts clamped, a mask's count.
    fn host_index(
        &mut self,
        op: &TensorOp,
        inputs: &[TensorId],
        lane: u64,
    ) -> Result<HostIndex, ExecError> {
        let read = |engine: &mut Self, at: usize| -> Result<Tensor, ExecError> {
            let id = *inputs.get(at).ok_or_else(|| TensorError::Arity {
                op: op.name(),
                expected: at + 1,
                got: inputs.len(),
            })?;
            TensorEngine::download(engine, id, lane)
        };
        let shape = |engine: &Self, at: usize| -> Result<Vec<usize>, ExecError> {
            let id = inputs[at];
            Ok(engine.store.get(&id).ok_or(NotResident(id))?.shape.clone())
        };
        Ok(match op {
            TensorOp::Gather { axis } | TensorOp::Scatter { axis, .. } => {
                let extent = shape(self, 0)?[*axis];
                let name = op.name();
                let at = weft_core::ops::positions(name, &read(self, 1)?, *axis, extent)?;
                match op {
                    TensorOp::Gather { .. } => HostIndex::Positions(at),
                    _ => HostIndex::Targets(kernels::Targets::group(&at)),
                }
            }
            TensorOp::Compress { len } => {
                HostIndex::Positions(weft_core::ops::mask_positions(&read(self, 1)?, *len)?)
            }
            TensorOp::DynamicSlice { sizes } => {
                let x = shape(self, 0)?;
                HostIndex::Starts(weft_core::ops::clamped_starts(&read(self, 1)?, &x, sizes)?)
            }
            TensorOp::DynamicUpdateSlice => {
                let (x, update) = (shape(self, 0)?, shape(self, 1)?);
                HostIndex::Starts(weft_core::ops::clamped_starts(
                    &read(self, 2)?,
                    &x,
                    &update,
                )?)
            }
            _ => HostIndex::None,
        })
    }

    /// The ops with several outputs: the decompositions QR, SVD and eigh.
    fn decompose(
        &mut self,
        op: &TensorOp,
        inputs: &[TensorId],
        outputs: &[(TensorId, DType, &[usize])],
        lane: u64,
    ) -> Result<(), ExecError> {
        let a = *inputs.first().ok_or(TensorError::Arity {
            op: op.name(),
            expected: 1,
            got: 0,
        })?;
        let (dtype, empty) = {
            let t = self.store.get(&a).ok_or(NotResident(a))?;
            (t.dtype, t.is_empty())
        };
        let which = match op {
            TensorOp::Linalg(which @ (Linalg::Qr | Linalg::Svd | Linalg::Eigh))
                if missing(op, dtype).is_none() =>
            {
                *which
            }
            _ => {
                let reason = missing(op, dtype).unwrap_or("ops with several outputs");
                return Err(self.unsupported(op.name(), dtype, Some(reason)));
            }
        };
        if empty {
            // No element in, none out: every output is empty.
            let stream = self.lane(lane)?.stream.clone();
            for &(id, out_dtype, shape) in outputs {
                let t = memory::alloc(&stream, &self.events, self.info.ordinal, out_dtype, shape)?;
                self.insert(id, t);
            }
            return Ok(());
        }
        self.solver(lane)?;
        let made = self.with_exec(lane, |mut x, store| {
            let a = store.get(&a).ok_or(NotResident(a))?;
            match which {
                Linalg::Eigh => x.eigh(a),
                Linalg::Qr => x.qr(a),
                _ => x.svd(a),
            }
        })?;
        match made {
            Err(linalg::Failed(why)) => Err(self.host_error(op, inputs, lane, why)),
            Ok(tensors) => {
                for (&(id, out_dtype, shape), t) in outputs.iter().zip(tensors) {
                    debug_assert_eq!((t.dtype, &t.shape[..]), (out_dtype, shape));
                    self.insert(id, t);
                }
                Ok(())
            }
        }
    }

    /// Runs `f` with the op methods on lane `lane`'s stream (which
    /// exists: the caller made it) and the resident tensors, borrowed
    /// apart.
    fn with_exec<R>(
        &mut self,
        lane: u64,
        f: impl for<'a> FnOnce(Exec<'a>, &'a HashMap<TensorId, DeviceTensor>) -> R,
    ) -> R {
        let CudaEngine {
            info,
            ctx,
            lanes,
            store,
            kernels,
            events,
            ..
        } = self;
        let lane = &lanes[&lane];
        let x = Exec {
            launch: Launcher {
                device: info.ordinal,
                arch: info.compute_capability,
                ctx,
                stream: &lane.stream,
                events,
                kernels,
            },
            blas: lane.blas.as_ref(),
            solver: lane.solver.as_ref(),
        };
        f(x, store)
    }

    /// The error of an op the device found failed (`why`): the CPU's own,
    /// from the op rerun on host copies of its inputs, so that both places
    /// name the same entry or reason; `why` itself if the host's run
    /// succeeds where the device's did not (a matrix at the edge of
    /// positive definiteness, say).
    fn host_error(
        &mut self,
        op: &TensorOp,
        inputs: &[TensorId],
        lane: u64,
        why: String,
    ) -> ExecError {
        let mut host = Vec::with_capacity(inputs.len());
        for &id in inputs {
            match TensorEngine::download(self, id, lane) {
                Ok(t) => host.push(t),
                Err(e) => return e,
            }
        }
        let refs: Vec<&Tensor> = host.iter().collect();
        match op.run(&refs, 1) {
            Err(e) => e.into(),
            Ok(_) => TensorError::Factorization {
                op: op.name(),
                reason: why,
            }
            .into(),
        }
    }

    /// Reports an error a drop recorded since the last call (a free that
    /// failed, say): it surfaces on the next op instead of being lost.
    fn deferred_error(&self) -> Result<(), DeviceError> {
        self.ctx
            .check_err()
            .map_err(|e| device_error(self.info.ordinal, "an earlier release", e))
    }

    fn insert(&mut self, id: TensorId, tensor: DeviceTensor) {
        self.bytes += tensor.bytes();
        if let Some(old) = self.store.insert(id, tensor) {
            self.bytes -= old.bytes();
        }
    }

    fn unsupported(
        &self,
        op: &'static str,
        dtype: DType,
        reason: Option<&'static str>,
    ) -> ExecError {
        ExecError::Unsupported(Unsupported {
            place: Place::Cuda(self.info.ordinal),
            op,
            dtype,
            reason,
        })
    }
}

/// Which input's element type the kernels of `op` are of, the one
/// [`missing`] is asked about: the first, but for a select's (its mask is
/// `bool` whatever its sources are).
pub fn data_input(op: &TensorOp) -> usize {
    usize::from(matches!(op, TensorOp::Select))
}

/// Why the CUDA engine cannot run `op` on `dtype` tensors (its inputs'
/// type, or the type it creates), if it cannot: the reason its
/// [`Unsupported`] errors give, and the CUDA column of the coverage table.
/// There is no silent fallback: transfer the tensors to a CPU domain.
pub fn missing(op: &TensorOp, dtype: DType) -> Option<&'static str> {
    // Products are of floats and complexes here (as on the CPU); integer
    // and bool tensors have every other op the device has.
    let exact = !dtype.is_field();
    match op {
        TensorOp::Linalg(_) if exact => Some("decompositions are of float and complex matrices"),
        TensorOp::Linalg(_) => None,
        TensorOp::Matmul
        | TensorOp::Gemm { .. }
        | TensorOp::Axpby { .. }
        | TensorOp::Dot { .. }
        | TensorOp::Einsum(_)
            if exact =>
        {
            Some("no integer or bool kernel yet")
        }
        TensorOp::Binary(op) | TensorOp::BinaryScalar { op, .. } => {
            exec::binary_code(*op).is_none().then_some("no kernel yet")
        }
        TensorOp::Unary(op) => exec::unary_code(*op).is_none().then_some("no kernel yet"),
        TensorOp::Reduce { op, .. } => exec::reduce_code(*op).is_none().then_some("no kernel yet"),
        TensorOp::Full { .. }
        | TensorOp::Arange { .. }
        | TensorOp::Eye { .. }
        | TensorOp::Reshape(_)
        | TensorOp::Permute(_)
        | TensorOp::Slice(_)
        | TensorOp::Reverse(_)
        | TensorOp::BroadcastTo(_)
        | TensorOp::BroadcastInDim { .. }
        | TensorOp::Diagonal { .. }
        | TensorOp::DiagEmbed { .. }
        | TensorOp::Concatenate { .. }
        | TensorOp::Pad { .. }
        | TensorOp::Gather { .. }
        | TensorOp::Scatter { .. }
        | TensorOp::DynamicSlice { .. }
        | TensorOp::DynamicUpdateSlice
        | TensorOp::Compress { .. }
        | TensorOp::ClampBetween
        | TensorOp::Compare(_)
        | TensorOp::Select
        | TensorOp::Clamp { .. }
        | TensorOp::Cast(_)
        | TensorOp::Triangle { .. }
        | TensorOp::Matmul
        | TensorOp::Gemm { .. }
        | TensorOp::Axpby { .. }
        | TensorOp::Dot { .. }
        | TensorOp::Random { .. }
        | TensorOp::ArgReduce { .. }
        | TensorOp::Einsum(_) => None,
    }
}

impl TensorEngine for CudaEngine {
    const RETIRES_LANES: bool = true;

    fn place(&self) -> Place {
        Place::Cuda(self.info.ordinal)
    }

    fn execute_into(
        &mut self,
        op: &TensorOp,
        inputs: &[TensorId],
        outputs: &[(TensorId, DType, &[usize])],
        lane: u64,
    ) -> Result<(), ExecError> {
        self.deferred_error()?;
        let place = self.place();
        let (out_id, out_dtype, out_shape) = match outputs {
            [one] => *one,
            _ => return self.decompose(op, inputs, outputs, lane),
        };
        // Before the empty-output answer below: an index out of range is
        // an error even when nothing would be written.
        let host_index = self.host_index(op, inputs, lane)?;
        if out_shape.contains(&0) {
            // No element: the shape alone is the answer, whatever the op
            // (the vocabulary inferred it), and no kernel walks extents
            // that a shape with no element may take to any size.
            for id in inputs {
                self.store.get(id).ok_or(NotResident(*id))?;
            }
            let lane = self.lane(lane)?.stream.clone();
            let empty =
                memory::alloc(&lane, &self.events, self.info.ordinal, out_dtype, out_shape)?;
            self.insert(out_id, empty);
            return Ok(());
        }
        if let TensorOp::Random { .. } = op {
            // The host's generator, so the same seed gives the same data
            // in every place; then one upload.
            let TensorOp::Random {
                dtype,
                shape,
                distribution,
                seed,
            } = op
            else {
                unreachable!("matched above")
            };
            let made = Tensor::random(*dtype, shape, *distribution, *seed)?;
            let out = self.copy_in(&made)?;
            self.insert(out_id, out);
            return Ok(());
        }
        self.check_integer_operands(op, inputs, lane)?;
        if matches!(
            op,
            TensorOp::Matmul | TensorOp::Einsum(_) | TensorOp::Gemm { .. }
        ) {
            self.blas(lane)?;
        } else if let TensorOp::Linalg(Linalg::Cholesky | Linalg::Solve) = op {
            self.solver(lane)?;
        } else {
            self.lane(lane)?;
        }
        // A decomposition the device found failed: rerun on the host for
        // the CPU's own error (below).
        let mut failed: Option<linalg::Failed> = None;
        let result = self.with_exec(lane, |mut x, store| -> Result<DeviceTensor, ExecError> {
            let mut resident: smallvec::SmallVec<[&DeviceTensor; 4]> = smallvec::SmallVec::new();
            for id in inputs {
                resident.push(store.get(id).ok_or(NotResident(*id))?);
            }
            let input_dtype = resident.get(data_input(op)).map_or(out_dtype, |t| t.dtype);
            let unsupported = |reason| {
                ExecError::Unsupported(Unsupported {
                    place,
                    op: op.name(),
                    dtype: input_dtype,
                    reason,
                })
            };
            if let Some(reason) = missing(op, input_dtype) {
                return Err(unsupported(Some(reason)));
            }
            let gather =
                |x: &mut Exec<'_>, view: Result<View, TensorError>| x.gather(resident[0], &view?);
            // Every op of the vocabulary, each with what it does here.
            Ok(match op {
                TensorOp::Binary(b) => x.binary(*b, resident[0], resident[1], out_shape)?,
                TensorOp::BinaryScalar {
                    op: b,
                    value,
                    scalar_first,
                } => x.binary_scalar(*b, resident[0], *value, *scalar_first)?,
                TensorOp::Unary(u) => x.unary(*u, resident[0], out_dtype)?,
                TensorOp::Reduce { op: r, axes, .. } => {
                    x.reduce(*r, resident[0], axes, out_dtype, out_shape)?
                }
                TensorOp::Full {
                    dtype,
                    shape,
                    value,
                } => x.fill(*dtype, shape, *value)?,
                TensorOp::Arange {
                    dtype,
                    start,
                    step,
                    len,
                } => x.arange(*dtype, *start, *step, *len)?,
                TensorOp::Eye { dtype, rows, cols } => x.eye(*dtype, *rows, *cols)?,
                TensorOp::Reshape(_) => x.duplicate(resident[0], out_shape)?,
                TensorOp::Permute(perm) => gather(&mut x, permute_view(&resident[0].shape, perm))?,
                TensorOp::Slice(axes) => gather(&mut x, slice_view(&resident[0].shape, axes))?,
                TensorOp::Reverse(axes) => gather(&mut x, reverse_view(&resident[0].shape, axes))?,
                TensorOp::BroadcastTo(shape) => {
                    gather(&mut x, broadcast_view(&resident[0].shape, shape))?
                }
                TensorOp::BroadcastInDim { shape, dims } => gather(
                    &mut x,
                    broadcast_in_dim_view(&resident[0].shape, shape, dims),
                )?,
                TensorOp::Diagonal { axes } => {
                    gather(&mut x, diagonal_view(&resident[0].shape, *axes))?
                }
                TensorOp::Concatenate { axis, .. } => x.concatenate(&resident, *axis, out_shape)?,
                TensorOp::Matmul => x.matmul(resident[0], resident[1], out_shape)?,
                TensorOp::Einsum(spec) => {
                    let values = resident.iter().map(|&t| Value::Resident(t)).collect();
                    match spec.contract(&mut x, values)? {
                        Value::Owned(t) => t,
                        Value::Resident(t) => x.duplicate(t, out_shape)?,
                    }
                }
                TensorOp::Pad { widths, value } => x.pad(resident[0], widths, *value, out_shape)?,
                TensorOp::DiagEmbed { axes } => x.diag_embed(resident[0], *axes)?,
                TensorOp::Gemm { alpha, beta, a, b } => x.gemm_accumulate(
                    [resident[0], resident[1], resident[2]],
                    [*a, *b],
                    [*alpha, *beta],
                    out_shape,
                )?,
                TensorOp::Axpby { alpha, beta } => {
                    x.axpby([resident[0], resident[1]], [*alpha, *beta], out_shape)?
                }
                TensorOp::ClampBetween => {
                    x.clamp_between([resident[0], resident[1], resident[2]], out_shape)?
                }
                TensorOp::Dot { conjugate } => x.dot(resident[0], resident[1], *conjugate)?,
                TensorOp::Random { .. } => unreachable!("made on the host, above"),
                TensorOp::Compare(c) => x.compare(*c, resident[0], resident[1], out_shape)?,
                TensorOp::Select => x.select([resident[0], resident[1], resident[2]], out_shape)?,
                TensorOp::Clamp { lo, hi } if input_dtype.is_integer() => {
                    x.clamp_integers(resident[0], *lo, *hi)?
                }
                TensorOp::Clamp { lo, hi } => x.map(
                    resident[0],
                    out_dtype,
                    launch::MapArgs::Clamp { lo: *lo, hi: *hi },
                )?,
                TensorOp::Triangle { k, upper } => x.triangle(resident[0], *k, *upper)?,
                TensorOp::Cast(to) => x.cast(resident[0], *to)?,
                TensorOp::ArgReduce { op: a, axis, .. } => {
                    x.arg_reduce(*a, resident[0], *axis, out_shape)?
                }
                TensorOp::Gather { axis } => {
                    x.take(resident[0], host_index.positions(), Some(*axis), out_shape)?
                }
                TensorOp::Compress { .. } => {
                    x.take(resident[0], host_index.positions(), None, out_shape)?
                }
                TensorOp::Scatter { axis, mode } => {
                    x.scatter(resident[0], resident[2], host_index.targets(), *axis, *mode)?
                }
                TensorOp::DynamicSlice { sizes } => {
                    x.window(resident[0], host_index.starts(), sizes)?
                }
                TensorOp::DynamicUpdateSlice => {
                    x.update_window(resident[0], resident[1], host_index.starts())?
                }
                TensorOp::Linalg(Linalg::Cholesky) => match x.cholesky(resident[0])? {
                    Ok(l) => l,
                    Err(why) => {
                        failed = Some(why);
                        x.alloc(out_dtype, out_shape)?
                    }
                },
                TensorOp::Linalg(Linalg::Solve) => match x.solve(resident[0], resident[1])? {
                    Ok(solution) => solution,
                    Err(why) => {
                        failed = Some(why);
                        x.alloc(out_dtype, out_shape)?
                    }
                },
                // Several outputs: `decompose`, above.
                TensorOp::Linalg(Linalg::Qr | Linalg::Svd | Linalg::Eigh) => {
                    return Err(unsupported(missing(op, input_dtype)))
                }
            })
        })?;
        if let Some(linalg::Failed(why)) = failed {
            drop(result);
            return Err(self.host_error(op, inputs, lane, why));
        }
        debug_assert_eq!((result.dtype, &result.shape[..]), (out_dtype, out_shape));
        self.insert(out_id, result);
        Ok(())
    }

    fn upload(&mut self, id: TensorId, tensor: Tensor, _lane: u64) -> Result<(), ExecError> {
        self.deferred_error()?;
        let out = self.copy_in(&tensor)?;
        self.insert(id, out);
        Ok(())
    }

    fn download(&mut self, id: TensorId, _lane: u64) -> Result<Tensor, ExecError> {
        self.deferred_error()?;
        let t = self.store.remove(&id).ok_or(NotResident(id))?;
        // `bool` arrives as bytes, read as nonzero: no byte the device
        // holds can make an invalid `bool` on the host.
        let (mut data, mut bytes) = match t.dtype {
            DType::Bool => (None, vec![0u8; t.len()]),
            dtype => (Some(Data::zeros(dtype, t.len())), Vec::new()),
        };
        let copied = match &mut data {
            Some(data) => self.copy_out(&t, host_bytes_mut(data)),
            None => self.copy_out(&t, &mut bytes),
        };
        self.store.insert(id, t);
        copied?;
        let data = data.unwrap_or_else(|| Data::Bool(bytes.iter().map(|&b| b != 0).collect()));
        let shape = self.store[&id].shape.clone();
        Ok(Tensor::from_parts(shape, data)?)
    }

    fn free(&mut self, id: TensorId) -> bool {
        match self.store.remove(&id) {
            Some(t) => {
                self.bytes -= t.bytes();
                true
            }
            None => false,
        }
    }

    fn sync(&mut self, id: TensorId) -> Result<(), ExecError> {
        let tensor = self.store.get(&id).ok_or(NotResident(id))?;
        tensor
            .wait_written()
            .map_err(|e| device_error(self.info.ordinal, "cuEventSynchronize", e))?;
        Ok(())
    }

    fn retire_lane(&mut self, lane: u64) {
        self.retire(lane);
    }

    /// The device pool's counters are the engine's buffer pool: what it
    /// holds beyond live allocations, its high-water mark, its threshold.
    fn memory(&self) -> EngineMemory {
        EngineMemory {
            tensors: self.store.len(),
            tensor_bytes: self.bytes,
            buffers: self
                .pool
                .as_ref()
                .and_then(|pool| pool_stats(pool).ok())
                .unwrap_or_default(),
            ..EngineMemory::default()
        }
    }

    /// Returns the device pool's unused memory to the OS.
    fn trim(&mut self) -> usize {
        let Some(pool) = &mut self.pool else {
            return 0;
        };
        let before = pool.get(PoolAttr::Reserved).unwrap_or(0);
        if pool.trim_to(0).is_err() {
            return 0;
        }
        let after = pool.get(PoolAttr::Reserved).unwrap_or(before);
        usize::try_from(before.saturating_sub(after)).unwrap_or(usize::MAX)
    }
}

/// Teardown in the order the device needs: every queued kernel and copy
/// finished, then the tensors freed, the cuBLAS handles destroyed, the
/// modules unloaded and the staging released (its events with it). A
/// failure is reported on stderr, never as a panic on the actor: a drop has
/// nobody to return it to.
/// The steps of an engine's teardown, in the order [`teardown`] takes
/// them; an engine's are driver calls, a test's are notes.
trait Teardown {
    /// Waits for every queued kernel and copy.
    fn synchronize(&mut self) -> Result<(), String>;
    /// Frees the resident tensors.
    fn free_tensors(&mut self);
    /// Destroys the cuBLAS handles and the lanes' streams (cudarc's handle
    /// drop unwraps the destroy's result, so this may panic).
    fn drop_handles(&mut self);
    /// Unloads the kernel modules.
    fn unload_modules(&mut self);
    /// Releases the pinned staging and its events.
    fn release_staging(&mut self);
    /// An error a release recorded earlier without returning it.
    fn recorded_error(&mut self) -> Result<(), String>;
}

/// Tears down in the one safe order: nothing is released while a kernel or
/// copy still uses it (the context is synchronized first), tensors before
/// the streams they are freed on, modules after every launch, staging
/// after its copies. Returns what failed, for stderr: a failure, even a
/// panic in a handle's drop, never stops the later steps.
fn teardown(engine: &mut impl Teardown) -> Vec<String> {
    let mut failures = Vec::new();
    if let Err(e) = engine.synchronize() {
        failures.push(format!("cuCtxSynchronize: {e}"));
    }
    engine.free_tensors();
    if let Err(payload) =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| engine.drop_handles()))
    {
        let text = payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_default();
        failures.push(format!("cublasDestroy panicked: {text}"));
        // A payload's drop is not run here, where it could panic again.
        std::mem::forget(payload);
    }
    engine.unload_modules();
    engine.release_staging();
    if let Err(e) = engine.recorded_error() {
        failures.push(format!("an earlier release: {e}"));
    }
    failures
}

impl Teardown for CudaEngine {
    fn synchronize(&mut self) -> Result<(), String> {
        self.ctx.synchronize().map_err(|e| e.to_string())
    }

    fn free_tensors(&mut self) {
        self.store.clear();
        self.bytes = 0;
    }

    fn drop_handles(&mut self) {
        drop((
            std::mem::take(&mut self.lanes),
            std::mem::take(&mut self.spare_blas),
        ));
    }

    fn unload_modules(&mut self) {
        self.kernels = Kernels::default();
    }

    fn release_staging(&mut self) {
        self.copies = None;
    }

    fn recorded_error(&mut self) -> Result<(), String> {
        self.ctx.check_err().map_err(|e| e.to_string())
    }
}

impl Drop for CudaEngine {
    fn drop(&mut self) {
        let device = self.info.ordinal;
        for failure in teardown(self) {
            eprintln!("weft: dropping the CUDA engine of device {device}: {failure}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{teardown, Teardown};

    /// Notes each step; fails where told.
    #[derive(Default)]
    struct Steps {
        done: Vec<&'static str>,
        sync_fails: bool,
        handles_panic: bool,
        error_left: bool,
    }

    impl Teardown for Steps {
        fn synchronize(&mut self) -> Result<(), String> {
            self.done.push("synchronize");
            if self.sync_fails {
                return Err("CUDA_ERROR_LAUNCH_FAILED".into());
            }
            Ok(())
        }

        fn free_tensors(&mut self) {
            self.done.push("tensors");
        }

        fn drop_handles(&mut self) {
            self.done.push("handles");
            if self.handles_panic {
                panic!("CUBLAS_STATUS_INTERNAL_ERROR");
            }
        }

        fn unload_modules(&mut self) {
            self.done.push("modules");
        }

        fn release_staging(&mut self) {
            self.done.push("staging");
        }

        fn recorded_error(&mut self) -> Result<(), String> {
            self.done.push("errors");
            if self.error_left {
                return Err("CUDA_ERROR_ILLEGAL_ADDRESS".into());
            }
            Ok(())
        }
    }

    const ORDER: [&str; 6] = [
        "synchronize",
        "tensors",
        "handles",
        "modules",
        "staging",
        "errors",
    ];

    #[test]
    fn teardown_synchronizes_first_and_releases_in_order() {
        let mut steps = Steps::default();
        assert!(teardown(&mut steps).is_empty());
        assert_eq!(steps.done, ORDER);
    }

    #[test]
    fn a_failure_or_a_panicking_handle_stops_no_later_step() {
        let mut steps = Steps {
            sync_fails: true,
            handles_panic: true,
            error_left: true,
            ..Steps::default()
        };
        let failures = teardown(&mut steps);
        assert_eq!(steps.done, ORDER, "every step ran");
        assert_eq!(
            failures,
            [
                "cuCtxSynchronize: CUDA_ERROR_LAUNCH_FAILED",
                "cublasDestroy panicked: CUBLAS_STATUS_INTERNAL_ERROR",
                "an earlier release: CUDA_ERROR_ILLEGAL_ADDRESS",
            ]
        );
    }
}
