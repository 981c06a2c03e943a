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
//!   host ([`TensorEngine::download`](weft_core::TensorEngine::download)) waits, and only for that copy, on the
//!   engine's device-to-host stream (which first waits, on the device, for
//!   the op that wrote the tensor). Copies to the device go on a
//!   host-to-device stream, so a lane that only moves tensors makes no
//!   stream.
//!
//! Memory: device buffers come from the device's default pool in stream
//! order; the engine sets the pool's release threshold to the device's
//! memory at start, so freed memory stays in the pool for reuse instead of
//! going back to the OS at every synchronization, and returns it on a
//! trim ([`TensorEngine::trim`](weft_core::TensorEngine::trim), which an idle device's actor runs).
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
//! Layered as cudarc is: one file per library owns every `unsafe`, each
//! block argued — `launch` (kernel launches), `nvrtc`, `cublas`,
//! `cusolver` and `memory` (device allocations, pinned staging, host
//! copies); `streams` and `lanes` keep the streams and each lane's library
//! handles, `exec`, `index` and `linalg` the op methods, `kernels` the
//! kernels' arguments and their source (`cu/`, one file per op family,
//! switching on the codes `codes` makes from the vocabulary's enums),
//! `dispatch` the [`TensorEngine`](weft_core::TensorEngine) impl, whose
//! dispatch matches every op, and this file the engine and its types.

#![deny(unsafe_code)]
#![warn(missing_docs, missing_debug_implementations)]

#[macro_use]
extern crate weft_core;

mod access;
mod codes;
#[cfg(test)]
mod coverage;
mod cube;
#[allow(unsafe_code)] // The product call and a handle's rebinding, each argued.
mod cublas;
#[allow(unsafe_code)] // The decompositions' calls, each argued.
mod cusolver;
mod dispatch;
mod events;
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
mod teardown;

pub use cube::{
    cube_kernels, cube_source, cube_source_cached, cubecl, empty_array, kernel_op, CubeArgs,
    CubeError, CubeKernel, CubeSource, InfoLayout, MakeSource, ScalarType, Signature, CUBE_DIM,
    CUBE_MIN_ARCH, MAX_CUBE_DIM,
};
pub use cublas::cublas_present;
pub use cusolver::cusolver_present;
pub use dispatch::{data_input, missing};
pub use events::DriverCalls;
use events::EventPool;
pub use kernels::{
    compile as compile_kernels, compile_cube, compile_cube_cubin,
    compile_cubin as compile_kernels_cubin, kernel_names,
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
use kernels::Kernels;
use lanes::{LaneStream, SpareBlas};
use memory::{keep_freed_memory, Copies, DevicePool};
use streams::Stream;
use weft_core::DType;
use weft_core::{DeviceError, NotResident, TensorId};

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
}
