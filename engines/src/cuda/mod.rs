//! The CUDA engine: one device's primary context, a stream and a cuBLAS
//! handle per lane, the device's resident tensors, and pinned staging for
//! host copies. Built on its actor thread (the context is made current
//! there, once, by the factory) and never shared: no lock guards any of it.
//!
//! Ordering on the device:
//! - each lane's ops run in order on the lane's stream;
//! - a tensor written on one stream and read on another is ordered by the
//!   CUDA events cudarc records on every device buffer: the reading stream
//!   waits on the device, the actor never blocks. Kernels take their
//!   outputs as `&mut` buffers, so that what is recorded is a write;
//! - an op completes for the actor once it is enqueued. Only a copy to the
//!   host ([`TensorEngine::download`]) waits, and only for that copy, on the
//!   engine's device-to-host stream (which first waits, on the device, for
//!   the op that wrote the tensor). Copies to the device go on a
//!   host-to-device stream, so a lane that only moves tensors makes no
//!   stream.
//!
//! Kernels: GEMM through cuBLAS (`cublasGemmStridedBatchedEx`, all four
//! element types); everything else through this module's own kernels,
//! compiled by NVRTC at first use ([`kernels`]).

pub mod kernels;

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use cudarc::cublas::CudaBlas;
use cudarc::driver::{
    CudaContext, CudaEvent, CudaSlice, CudaStream, DevicePtr, DevicePtrMut, DeviceRepr,
    DriverError, PinnedHostSlice, PushKernelArg,
};

use crate::buffer::BufferStats;
use crate::einsum::Contraction;
use crate::engine::{DeviceError, EngineMemory, ExecError, Place, TensorEngine, Unsupported};
use crate::op::TensorOp;
use crate::reduce::ReduceOp;
use crate::store::{NotResident, TensorId};
use crate::structural::{self, View};
use crate::tensor::{element_count, DType, Data, Tensor, TensorError};
use crate::Scalar;
use kernels::{Dims, Kernel, KernelError, Kernels};

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
    buf: CudaSlice<u8>,
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
        self.shape.iter().product()
    }

    /// Whether it has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of its elements.
    pub fn bytes(&self) -> usize {
        self.len() * self.dtype.size()
    }

    /// The device buffer (at least one byte).
    pub fn buffer(&self) -> &CudaSlice<u8> {
        &self.buf
    }
}

impl fmt::Debug for DeviceTensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DeviceTensor({}{:?})", self.dtype, self.shape)
    }
}

/// One lane's stream and the cuBLAS handle bound to it.
struct LaneStream {
    stream: Arc<CudaStream>,
    /// Bound to `stream` on the lane's first product.
    blas: Option<CudaBlas>,
}

/// A cuBLAS handle of a retired lane, still bound to that lane's stream.
/// Destroying a handle synchronizes the whole device, so handles are kept
/// and rebound instead: the next lane that needs one takes it.
struct SpareBlas {
    blas: CudaBlas,
    stream: Arc<CudaStream>,
}

/// The engine's host copies: a stream each way (a copy waits on the
/// device for the op that wrote its source, through the buffer's event),
/// and two pinned host buffers, each with the event of the last copy that
/// used it. Shared by every lane: copies go through the actor thread one
/// at a time anyway, and a lane that only moves tensors (a transfer's)
/// never makes a stream of its own.
struct Copies {
    h2d: Arc<CudaStream>,
    d2h: Arc<CudaStream>,
    buffers: Vec<(PinnedHostSlice<u8>, CudaEvent)>,
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

/// Whether the CUDA driver library can be loaded. Every other call into
/// CUDA is made only after this returned true (cudarc panics otherwise).
pub fn driver_present() -> bool {
    // SAFETY: only tries to load the shared library by name; no driver
    // entry point is called.
    unsafe { cudarc::driver::sys::is_culib_present() }
}

/// Whether cuBLAS can be loaded.
pub fn cublas_present() -> bool {
    // SAFETY: as `driver_present`, for the cuBLAS library.
    unsafe { cudarc::cublas::sys::is_culib_present() }
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
        Ok(CudaEngine {
            info,
            ctx,
            lanes: HashMap::new(),
            spare_blas: Vec::new(),
            store: HashMap::new(),
            bytes: 0,
            kernels: Kernels::default(),
            copies: None,
            _not_send: std::marker::PhantomData,
        })
    }

    /// The device's facts.
    pub fn info(&self) -> &CudaInfo {
        &self.info
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

    /// How many lanes hold a stream now (a lane's stream goes when the
    /// lane's last handle does).
    pub fn lane_streams(&self) -> usize {
        self.lanes.len()
    }

    /// Lane `lane`'s stream, made (with its cuBLAS handle) on first use.
    ///
    /// # Errors
    ///
    /// [`DeviceError`] when the stream or handle cannot be made.
    pub fn stream(&mut self, lane: u64) -> Result<&Arc<CudaStream>, DeviceError> {
        Ok(&self.lane(lane)?.stream)
    }

    fn lane(&mut self, lane: u64) -> Result<&mut LaneStream, DeviceError> {
        let device = self.info.ordinal;
        if !self.lanes.contains_key(&lane) {
            let stream = self
                .ctx
                .new_stream()
                .map_err(|e| device_error(device, "cuStreamCreate", e))?;
            self.lanes.insert(lane, LaneStream { stream, blas: None });
        }
        Ok(self.lanes.get_mut(&lane).expect("made above"))
    }

    /// Gives lane `lane` a cuBLAS handle bound to its stream, if it has
    /// none: a retired lane's, or a new one.
    fn blas(&mut self, lane: u64) -> Result<(), DeviceError> {
        let device = self.info.ordinal;
        let spare = self.spare_blas.pop();
        let lane = self.lane(lane)?;
        if lane.blas.is_some() {
            if let Some(spare) = spare {
                self.spare_blas.push(spare);
            }
            return Ok(());
        }
        let blas = match spare {
            Some(SpareBlas { mut blas, stream }) => {
                // The handle's workspace may still be in use by the old
                // lane's last product: the new stream waits for all of the
                // old one's work, on the device.
                lane.stream
                    .join(&stream)
                    .map_err(|e| device_error(device, "cuStreamWaitEvent", e))?;
                // SAFETY: after the join above, nothing the handle enqueues
                // on the new stream can overlap what it enqueued on the old
                // one, and the old lane is gone, so the handle is used by
                // one stream at a time, as cuBLAS requires.
                unsafe { blas.set_stream(lane.stream.clone()) }
                    .map_err(|e| device_error(device, "cublasSetStream", format!("{e:?}")))?;
                blas
            }
            None => CudaBlas::new(lane.stream.clone())
                .map_err(|e| device_error(device, "cublasCreate", e))?,
        };
        lane.blas = Some(blas);
        Ok(())
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

/// What one op needs of the engine: the lane's stream and handle, the
/// kernels, the device's facts. Borrowed apart from the store, so the
/// inputs can be read while it runs.
struct Exec<'a> {
    device: usize,
    arch: (i32, i32),
    ctx: &'a Arc<CudaContext>,
    lane: &'a LaneStream,
    kernels: &'a mut Kernels,
}

impl Exec<'_> {
    fn err(&self, call: &'static str) -> impl Fn(DriverError) -> DeviceError + '_ {
        move |e| device_error(self.device, call, e)
    }

    /// The kernels walk at most [`kernels::MAX_RANK`] axes.
    fn too_many_axes(&self, op: &'static str, dtype: DType) -> ExecError {
        ExecError::Unsupported(Unsupported {
            place: Place::Cuda(self.device),
            op,
            dtype,
            reason: Some("more than 8 axes"),
        })
    }

    /// Device memory for a `dtype` tensor of `shape` on the lane's stream,
    /// uninitialized.
    fn alloc(&self, dtype: DType, shape: &[usize]) -> Result<DeviceTensor, ExecError> {
        alloc_on(&self.lane.stream, self.device, dtype, shape)
    }

    fn function(
        &mut self,
        dtype: DType,
        kernel: Kernel,
    ) -> Result<cudarc::driver::CudaFunction, ExecError> {
        self.kernels
            .get(self.ctx, self.arch, dtype, kernel)
            .map_err(|e| {
                let (call, message) = match e {
                    KernelError::NoNvrtc => {
                        ("loading libnvrtc", "NVRTC cannot be loaded".to_owned())
                    }
                    KernelError::Compile(log) => ("nvrtcCompileProgram", log),
                    KernelError::Load(m) => ("cuModuleLoadData", m),
                };
                ExecError::Device(DeviceError {
                    device: self.device,
                    call,
                    message,
                    out_of_memory: false,
                })
            })
    }

    /// Copies `view` of `src` into a new contiguous tensor.
    fn gather(&mut self, src: &DeviceTensor, view: &View) -> Result<DeviceTensor, ExecError> {
        let mut out = self.alloc(src.dtype, &view.shape)?;
        let dims =
            Dims::gather(view).ok_or_else(|| self.too_many_axes("strided copy", src.dtype))?;
        self.copy(&mut out, src, dims)?;
        Ok(out)
    }

    /// `dst[walk₁] = src[walk₀]` over `dims`.
    fn copy(
        &mut self,
        dst: &mut DeviceTensor,
        src: &DeviceTensor,
        dims: Dims,
    ) -> Result<(), ExecError> {
        if dims.len() == 0 {
            return Ok(());
        }
        let f = self.function(src.dtype, Kernel::StridedCopy)?;
        let stream = &self.lane.stream;
        let mut launch = stream.launch_builder(&f);
        launch.arg(&mut dst.buf).arg(&src.buf).arg(&dims);
        // SAFETY: `strided_copy` takes (T*, const T*, Dims). Both buffers
        // hold `dtype` elements, and every offset the walk reaches lies
        // inside its buffer: `dims` comes from a view checked against the
        // source's shape and the destination's row-major layout.
        unsafe { launch.launch(kernels::elementwise(dims.len())) }
            .map_err(self.err("cuLaunchKernel strided_copy"))?;
        Ok(())
    }

    fn binary(
        &mut self,
        op: crate::BinaryOp,
        a: &DeviceTensor,
        b: &DeviceTensor,
        shape: &[usize],
    ) -> Result<DeviceTensor, ExecError> {
        let mut out = self.alloc(a.dtype, shape)?;
        let sa = structural::broadcast_view(&a.shape, shape)?;
        let sb = structural::broadcast_view(&b.shape, shape)?;
        let dims = Dims::new(shape, &[(&sa.strides, 0), (&sb.strides, 0)])
            .ok_or_else(|| self.too_many_axes(op.name(), a.dtype))?;
        if dims.len() > 0 {
            let f = self.function(a.dtype, Kernel::Binary)?;
            let code = binary_code(op);
            let mut launch = self.lane.stream.launch_builder(&f);
            launch
                .arg(&mut out.buf)
                .arg(&a.buf)
                .arg(&b.buf)
                .arg(&code)
                .arg(&dims);
            // SAFETY: `binary` takes (T*, const T*, const T*, int, Dims);
            // the output has `dims.n` elements and the broadcast strides
            // keep each input's offsets inside its shape.
            unsafe { launch.launch(kernels::elementwise(dims.len())) }
                .map_err(self.err("cuLaunchKernel binary"))?;
        }
        Ok(out)
    }

    fn binary_scalar(
        &mut self,
        op: crate::BinaryOp,
        a: &DeviceTensor,
        value: Scalar,
        scalar_first: bool,
    ) -> Result<DeviceTensor, ExecError> {
        let mut out = self.alloc(a.dtype, &a.shape)?;
        let n = a.len() as i64;
        if n > 0 {
            let (re, im) = scalar_parts(value);
            let f = self.function(a.dtype, Kernel::BinaryScalar)?;
            let (code, first) = (binary_code(op), i32::from(scalar_first));
            let mut launch = self.lane.stream.launch_builder(&f);
            launch
                .arg(&mut out.buf)
                .arg(&a.buf)
                .arg(&re)
                .arg(&im)
                .arg(&code)
                .arg(&first)
                .arg(&n);
            // SAFETY: `binary_scalar` takes (T*, const T*, double, double,
            // int, int, long long) and touches `n` elements of each buffer,
            // both of `n` elements.
            unsafe { launch.launch(kernels::elementwise(a.len())) }
                .map_err(self.err("cuLaunchKernel binary_scalar"))?;
        }
        Ok(out)
    }

    fn unary(
        &mut self,
        op: crate::UnaryOp,
        a: &DeviceTensor,
        out_dtype: DType,
    ) -> Result<DeviceTensor, ExecError> {
        let mut out = self.alloc(out_dtype, &a.shape)?;
        let n = a.len() as i64;
        if n > 0 {
            let magnitude = out_dtype != a.dtype;
            let f = self.function(
                a.dtype,
                if magnitude {
                    Kernel::Magnitude
                } else {
                    Kernel::Unary
                },
            )?;
            let code = unary_code(op);
            let mut launch = self.lane.stream.launch_builder(&f);
            launch.arg(&mut out.buf).arg(&a.buf);
            if !magnitude {
                launch.arg(&code);
            }
            launch.arg(&n);
            // SAFETY: `unary` takes (T*, const T*, int, long long) and
            // `magnitude` (R*, const T*, long long); the output holds `n`
            // elements of its type, the input `n` of its own.
            unsafe { launch.launch(kernels::elementwise(a.len())) }
                .map_err(self.err("cuLaunchKernel unary"))?;
        }
        Ok(out)
    }

    /// `op` over `axes`: the reduced axes are moved last (one gather when
    /// they are not already), then one block reduces each row.
    fn reduce(
        &mut self,
        op: ReduceOp,
        a: &DeviceTensor,
        axes: &[usize],
        out_dtype: DType,
        out_shape: &[usize],
    ) -> Result<DeviceTensor, ExecError> {
        let rank = a.shape.len();
        let kept: Vec<usize> = (0..rank).filter(|i| !axes.contains(i)).collect();
        let perm: Vec<usize> = kept.iter().copied().chain(axes.iter().copied()).collect();
        let moved;
        let src = if perm.iter().enumerate().all(|(i, &p)| i == p) {
            a
        } else {
            moved = self.gather(a, &structural::permute_view(&a.shape, &perm)?)?;
            &moved
        };
        let rows: usize = kept.iter().map(|&i| a.shape[i]).product();
        let len: usize = axes.iter().map(|&i| a.shape[i]).product();
        let mut out = self.alloc(out_dtype, out_shape)?;
        if rows == 0 {
            return Ok(out);
        }
        let parts = reduce_parts(rows, len);
        let (code, count) = (reduce_code(op), len as f64);
        if op == ReduceOp::Norm {
            if parts == 1 {
                self.rows_kernel(Kernel::Norm, &mut out, src, [rows, len, 1], (0i32, 1i32))?;
            } else {
                // Sums of squares per part, then their sums and roots (on
                // the real type's kernels).
                let mut partial = self.alloc(out_dtype, &[rows * parts])?;
                let (sums, of_sums) = ([rows, len, parts], [rows, parts, 1]);
                self.rows_kernel(Kernel::Norm, &mut partial, src, sums, (0i32, 0i32))?;
                self.rows_kernel(Kernel::Norm, &mut out, &partial, of_sums, (1i32, 1i32))?;
            }
        } else if parts == 1 {
            self.rows_kernel(Kernel::Reduce, &mut out, src, [rows, len, 1], (code, count))?;
        } else {
            // Partials per part (a mean's are sums), then one per row.
            let first = if op == ReduceOp::Mean {
                reduce_code(ReduceOp::Sum)
            } else {
                code
            };
            let mut partial = self.alloc(a.dtype, &[rows * parts])?;
            self.rows_kernel(
                Kernel::Reduce,
                &mut partial,
                src,
                [rows, len, parts],
                (first, count),
            )?;
            self.rows_kernel(
                Kernel::Reduce,
                &mut out,
                &partial,
                [rows, parts, 1],
                (code, count),
            )?;
        }
        Ok(out)
    }

    /// Launches a row kernel over `rows` rows of `len` contiguous elements
    /// of `src`, each cut into `parts`: block `b` takes part `b % parts` of
    /// row `b / parts` into `out[b]`. `reduce` gets (op code, the count a
    /// mean divides by); `norm` gets (whether `src` holds sums of squares
    /// already, whether to take the root).
    fn rows_kernel<X: DeviceRepr, Y: DeviceRepr>(
        &mut self,
        kernel: Kernel,
        out: &mut DeviceTensor,
        src: &DeviceTensor,
        [rows, len, parts]: [usize; 3],
        (x, y): (X, Y),
    ) -> Result<(), ExecError> {
        let f = self.function(src.dtype, kernel)?;
        let (r, l, p) = (rows as i64, len as i64, parts as i64);
        let mut launch = self.lane.stream.launch_builder(&f);
        launch
            .arg(&mut out.buf)
            .arg(&src.buf)
            .arg(&r)
            .arg(&l)
            .arg(&p)
            .arg(&x)
            .arg(&y);
        // SAFETY: `reduce` takes (T*, const T*, long long, long long, long
        // long, int, double) and `norm` (R*, const T*, long long, long
        // long, long long, int, int), which the callers' (x, y) match. The
        // source holds `rows·len` contiguous elements and the output
        // `rows·parts` of its type (T for `reduce`, R for `norm`).
        unsafe { launch.launch(kernels::rows(rows * parts)) }
            .map_err(self.err("cuLaunchKernel (row reduction)"))?;
        Ok(())
    }

    fn fill(
        &mut self,
        dtype: DType,
        shape: &[usize],
        value: Scalar,
    ) -> Result<DeviceTensor, ExecError> {
        let mut out = self.alloc(dtype, shape)?;
        let n = out.len() as i64;
        if n > 0 {
            let (re, im) = scalar_parts(value);
            let f = self.function(dtype, Kernel::Fill)?;
            let mut launch = self.lane.stream.launch_builder(&f);
            launch.arg(&mut out.buf).arg(&re).arg(&im).arg(&n);
            // SAFETY: `fill` takes (T*, double, double, long long) and
            // writes the `n` elements the buffer holds.
            unsafe { launch.launch(kernels::elementwise(n as usize)) }
                .map_err(self.err("cuLaunchKernel fill"))?;
        }
        Ok(out)
    }

    fn arange(
        &mut self,
        dtype: DType,
        start: f64,
        step: f64,
        len: usize,
    ) -> Result<DeviceTensor, ExecError> {
        let mut out = self.alloc(dtype, &[len])?;
        if len > 0 {
            let n = len as i64;
            let f = self.function(dtype, Kernel::Arange)?;
            let mut launch = self.lane.stream.launch_builder(&f);
            launch.arg(&mut out.buf).arg(&start).arg(&step).arg(&n);
            // SAFETY: `arange` takes (T*, double, double, long long) and
            // writes the `len` elements the buffer holds.
            unsafe { launch.launch(kernels::elementwise(len)) }
                .map_err(self.err("cuLaunchKernel arange"))?;
        }
        Ok(out)
    }

    fn eye(&mut self, dtype: DType, rows: usize, cols: usize) -> Result<DeviceTensor, ExecError> {
        let mut out = self.alloc(dtype, &[rows, cols])?;
        if rows * cols > 0 {
            let (r, c) = (rows as i64, cols as i64);
            let f = self.function(dtype, Kernel::Eye)?;
            let mut launch = self.lane.stream.launch_builder(&f);
            launch.arg(&mut out.buf).arg(&r).arg(&c);
            // SAFETY: `eye` takes (T*, long long, long long) and writes
            // the `rows·cols` elements the buffer holds.
            unsafe { launch.launch(kernels::elementwise(rows * cols)) }
                .map_err(self.err("cuLaunchKernel eye"))?;
        }
        Ok(out)
    }

    /// A copy of `src` (a reshape, or an einsum that only reorders nothing).
    fn duplicate(
        &mut self,
        src: &DeviceTensor,
        shape: &[usize],
    ) -> Result<DeviceTensor, ExecError> {
        let mut out = self.alloc(src.dtype, shape)?;
        self.lane
            .stream
            .memcpy_dtod(&src.buf, &mut out.buf)
            .map_err(self.err("cuMemcpyDtoDAsync"))?;
        Ok(out)
    }

    /// `[nb, m, k] @ [nb, k, n]` with per-batch strides (0 broadcasts one
    /// matrix to every batch), row-major, through one strided batched GEMM:
    /// row-major `C = A·B` is column-major `Cᵀ = Bᵀ·Aᵀ`, so cuBLAS gets the
    /// operands swapped and no transposes.
    fn gemm(
        &mut self,
        a: &DeviceTensor,
        a_stride: usize,
        b: &DeviceTensor,
        b_stride: usize,
        [nb, m, k, n]: [usize; 4],
        out_shape: &[usize],
    ) -> Result<DeviceTensor, ExecError> {
        use cudarc::cublas::sys::{
            cublasComputeType_t, cublasGemmAlgo_t, cublasOperation_t, cudaDataType,
        };
        let dtype = a.dtype;
        let mut out = self.alloc(dtype, out_shape)?;
        if nb * m * n == 0 {
            return Ok(out);
        }
        if k == 0 {
            let zero = self.fill(dtype, out_shape, Scalar::Real(0.0))?;
            return Ok(zero);
        }
        let too_big = |x: usize| i32::try_from(x).is_err();
        if [nb, m, k, n].into_iter().any(too_big) {
            return Err(TensorError::TooLarge {
                shape: out_shape.to_vec(),
            }
            .into());
        }
        let (data_type, compute) = match dtype {
            DType::F32 => (
                cudaDataType::CUDA_R_32F,
                cublasComputeType_t::CUBLAS_COMPUTE_32F,
            ),
            DType::F64 => (
                cudaDataType::CUDA_R_64F,
                cublasComputeType_t::CUBLAS_COMPUTE_64F,
            ),
            DType::C32 => (
                cudaDataType::CUDA_C_32F,
                cublasComputeType_t::CUBLAS_COMPUTE_32F,
            ),
            DType::C64 => (
                cudaDataType::CUDA_C_64F,
                cublasComputeType_t::CUBLAS_COMPUTE_64F,
            ),
        };
        // alpha = 1, beta = 0 in the compute type (complex: re, im).
        let (one32, zero32) = ([1.0f32, 0.0], [0.0f32, 0.0]);
        let (one64, zero64) = ([1.0f64, 0.0], [0.0f64, 0.0]);
        let (alpha, beta): (*const std::ffi::c_void, *const std::ffi::c_void) = match dtype {
            DType::F32 | DType::C32 => (one32.as_ptr().cast(), zero32.as_ptr().cast()),
            DType::F64 | DType::C64 => (one64.as_ptr().cast(), zero64.as_ptr().cast()),
        };
        let stream = &self.lane.stream;
        let (pa, _ra) = a.buf.device_ptr(stream);
        let (pb, _rb) = b.buf.device_ptr(stream);
        let (pc, _rc) = out.buf.device_ptr_mut(stream);
        let [nb, m, k, n] = [nb, m, k, n].map(|x| x as i32);
        // SAFETY: the handle is bound to this lane's stream (made together
        // in `CudaEngine::lane`); A' = B is n×k column-major with ld n,
        // B' = A is k×m with ld k, C is n×m with ld n, each batch `stride`
        // elements on (a stride of 0 re-reads one matrix), and every
        // buffer holds the elements those shapes reach: `a` nb·m·k (or
        // m·k with stride 0), `b` nb·k·n (or k·n), `out` nb·m·n. alpha and
        // beta point to host scalars of the compute type that outlive the
        // call, which reads them before returning (host pointer mode).
        unsafe {
            cudarc::cublas::result::gemm_strided_batched_ex(
                *self
                    .lane
                    .blas
                    .as_ref()
                    .expect("made before a product runs")
                    .handle(),
                cublasOperation_t::CUBLAS_OP_N,
                cublasOperation_t::CUBLAS_OP_N,
                n,
                m,
                k,
                alpha,
                pb as *const _,
                data_type,
                n,
                b_stride as i64,
                pa as *const _,
                data_type,
                k,
                a_stride as i64,
                beta,
                pc as *mut _,
                data_type,
                n,
                (m as i64) * (n as i64),
                nb,
                compute,
                cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
            )
        }
        .map_err(|e| device_error(self.device, "cublasGemmStridedBatchedEx", format!("{e:?}")))?;
        drop((_ra, _rb, _rc));
        Ok(out)
    }

    /// `a @ b` with the batch axes broadcast: a side whose batch is all
    /// ones is read with stride 0; any other broadcast is made real first.
    fn matmul(
        &mut self,
        a: &DeviceTensor,
        b: &DeviceTensor,
        out_shape: &[usize],
    ) -> Result<DeviceTensor, ExecError> {
        let r = out_shape.len();
        let batch = &out_shape[..r - 2];
        let nb: usize = batch.iter().product();
        let (m, k, n) = (
            a.shape[a.shape.len() - 2],
            a.shape[a.shape.len() - 1],
            b.shape[b.shape.len() - 1],
        );
        let (a_full, sa) = self.batch_operand(a, batch, m, k)?;
        let (b_full, sb) = self.batch_operand(b, batch, k, n)?;
        let (a, b) = (a_full.as_ref().unwrap_or(a), b_full.as_ref().unwrap_or(b));
        self.gemm(a, sa, b, sb, [nb, m, k, n], out_shape)
    }

    /// A `[…, rows, cols]` operand as a strided batch over `batch`: read as
    /// it is (one matrix per batch, or stride 0 when its batch is all
    /// ones), or broadcast into a new tensor first. Returns that tensor,
    /// if made, and the batch stride.
    fn batch_operand(
        &mut self,
        t: &DeviceTensor,
        batch: &[usize],
        rows: usize,
        cols: usize,
    ) -> Result<(Option<DeviceTensor>, usize), ExecError> {
        let own: usize = t.shape[..t.shape.len() - 2].iter().product();
        if own == batch.iter().product::<usize>() {
            Ok((None, rows * cols))
        } else if own == 1 {
            Ok((None, 0))
        } else {
            let full: Vec<usize> = batch.iter().copied().chain([rows, cols]).collect();
            let view = structural::broadcast_view(&t.shape, &full)?;
            Ok((Some(self.gather(t, &view)?), rows * cols))
        }
    }

    /// Joins `inputs` along `axis`: each is copied into its band of the output.
    fn concatenate(
        &mut self,
        inputs: &[&DeviceTensor],
        axis: usize,
        out_shape: &[usize],
    ) -> Result<DeviceTensor, ExecError> {
        let mut out = self.alloc(inputs[0].dtype, out_shape)?;
        let out_strides = structural::row_major(out_shape);
        let mut at = 0isize;
        for t in inputs {
            let own = structural::row_major(&t.shape);
            let dims = Dims::new(
                &t.shape,
                &[(&own, 0), (&out_strides, at * out_strides[axis])],
            )
            .ok_or_else(|| self.too_many_axes("concatenate", t.dtype))?;
            self.copy(&mut out, t, dims)?;
            at += t.shape[axis] as isize;
        }
        Ok(out)
    }
}

/// Device memory for a `dtype` tensor of `shape`, uninitialized, allocated
/// in `stream`'s order.
fn alloc_on(
    stream: &Arc<CudaStream>,
    device: usize,
    dtype: DType,
    shape: &[usize],
) -> Result<DeviceTensor, ExecError> {
    let bytes = element_count(shape)
        .and_then(|n| n.checked_mul(dtype.size()))
        .ok_or_else(|| TensorError::TooLarge {
            shape: shape.to_vec(),
        })?;
    // SAFETY: the buffer is uninitialized; every caller writes all `bytes`
    // of it (a kernel over every element, a copy of the whole tensor) on
    // this stream before anything reads it, and every read, on this stream
    // or (through the write's event) on another, is ordered after it.
    let buf = unsafe { stream.alloc::<u8>(bytes.max(1)) }
        .map_err(|e| device_error(device, "cuMemAllocAsync", e))?;
    Ok(DeviceTensor {
        dtype,
        shape: shape.to_vec(),
        buf,
    })
}

/// A value of an einsum on the device: a resident input, or an intermediate.
enum Value<'a> {
    Resident(&'a DeviceTensor),
    Owned(DeviceTensor),
}

impl Value<'_> {
    fn tensor(&self) -> &DeviceTensor {
        match self {
            Value::Resident(t) => t,
            Value::Owned(t) => t,
        }
    }
}

impl<'a> Contraction for Exec<'a> {
    type Value = Value<'a>;
    type Error = ExecError;

    fn shape(value: &Self::Value) -> &[usize] {
        &value.tensor().shape
    }

    fn view(&mut self, value: Value<'a>, view: &View) -> Result<Value<'a>, ExecError> {
        Ok(Value::Owned(self.gather(value.tensor(), view)?))
    }

    fn sum(&mut self, value: Value<'a>, axes: &[usize]) -> Result<Value<'a>, ExecError> {
        let t = value.tensor();
        let shape: Vec<usize> = (0..t.shape.len())
            .filter(|i| !axes.contains(i))
            .map(|i| t.shape[i])
            .collect();
        Ok(Value::Owned(self.reduce(
            ReduceOp::Sum,
            t,
            axes,
            t.dtype,
            &shape,
        )?))
    }

    fn permute(&mut self, value: Value<'a>, perm: &[usize]) -> Result<Value<'a>, ExecError> {
        let t = value.tensor();
        Ok(Value::Owned(
            self.gather(t, &structural::permute_view(&t.shape, perm)?)?,
        ))
    }

    fn batched_matmul(
        &mut self,
        a: &Value<'a>,
        b: &Value<'a>,
        [nb, m, k, n]: [usize; 4],
        out: Vec<usize>,
    ) -> Result<Value<'a>, ExecError> {
        Ok(Value::Owned(self.gemm(
            a.tensor(),
            m * k,
            b.tensor(),
            k * n,
            [nb, m, k, n],
            &out,
        )?))
    }
}

fn scalar_parts(value: Scalar) -> (f64, f64) {
    match value {
        Scalar::Real(x) => (x, 0.0),
        Scalar::Complex(z) => (z.re, z.im),
    }
}

/// The source's binary op codes.
fn binary_code(op: crate::BinaryOp) -> i32 {
    use crate::BinaryOp as B;
    match op {
        B::Add => 0,
        B::Sub => 1,
        B::Mul => 2,
        B::Div => 3,
        B::Maximum => 4,
        B::Minimum => 5,
        B::Pow => 6,
    }
}

/// The source's unary op codes.
fn unary_code(op: crate::UnaryOp) -> i32 {
    use crate::UnaryOp as U;
    match op {
        U::Neg => 0,
        U::Abs => 1,
        U::Sign => 2,
        U::Conj => 3,
        U::Exp => 4,
        U::Log => 5,
        U::Expm1 => 6,
        U::Log1p => 7,
        U::Sqrt => 8,
        U::Rsqrt => 9,
        U::Sin => 10,
        U::Cos => 11,
        U::Tanh => 12,
    }
}

/// Elements each block of a split reduction takes at least.
const REDUCE_PART: usize = 1 << 14;

/// Parts each row of a reduction is cut into: enough blocks to fill the
/// device when there are few long rows (a full reduction is one row), one
/// part when the rows alone are many or short.
fn reduce_parts(rows: usize, len: usize) -> usize {
    if rows >= 512 || len < 4 * REDUCE_PART {
        1
    } else {
        (len / REDUCE_PART).min(1024usize.div_ceil(rows)).max(1)
    }
}

/// The source's reduction op codes (norm has its own kernel).
fn reduce_code(op: ReduceOp) -> i32 {
    match op {
        ReduceOp::Sum | ReduceOp::Norm => 0,
        ReduceOp::Prod => 1,
        ReduceOp::Max => 2,
        ReduceOp::Min => 3,
        ReduceOp::Mean => 4,
    }
}

/// The bytes of a host tensor's elements.
fn host_bytes(data: &Data) -> &[u8] {
    fn bytes<T>(values: &[T]) -> &[u8] {
        // SAFETY: `T` is f32, f64, c32 or c64: plain data with no padding
        // and no invalid bit patterns, so its elements may be read as
        // `size_of_val(values)` initialized bytes for the borrow's life.
        unsafe { std::slice::from_raw_parts(values.as_ptr().cast(), std::mem::size_of_val(values)) }
    }
    match data {
        Data::F32(v) => bytes(v),
        Data::F64(v) => bytes(v),
        Data::C32(v) => bytes(v),
        Data::C64(v) => bytes(v),
    }
}

/// The bytes of a host buffer to be filled.
fn host_bytes_mut(data: &mut Data) -> &mut [u8] {
    fn bytes<T>(values: &mut [T]) -> &mut [u8] {
        // SAFETY: as in `host_bytes`; and any bytes written make valid
        // elements of these types, so the slice may be written through.
        unsafe {
            std::slice::from_raw_parts_mut(
                values.as_mut_ptr().cast(),
                std::mem::size_of_val(values),
            )
        }
    }
    match data {
        Data::F32(v) => bytes(v),
        Data::F64(v) => bytes(v),
        Data::C32(v) => bytes(v),
        Data::C64(v) => bytes(v),
    }
}

impl Copies {
    fn new(ctx: &Arc<CudaContext>) -> Result<Copies, DriverError> {
        let (h2d, d2h) = (ctx.new_stream()?, ctx.new_stream()?);
        let mut buffers = Vec::with_capacity(2);
        for _ in 0..2 {
            // SAFETY: the pinned buffer is uninitialized host memory; it is
            // only ever written (a chunk copied in, or a copy from the
            // device) before the bytes written are read.
            let pinned = unsafe { ctx.alloc_pinned::<u8>(STAGING_CHUNK) }?;
            buffers.push((pinned, ctx.new_event(None)?));
        }
        Ok(Copies { h2d, d2h, buffers })
    }
}

impl CudaEngine {
    fn copies(&mut self) -> Result<&mut Copies, DeviceError> {
        if self.copies.is_none() {
            let copies = Copies::new(&self.ctx)
                .map_err(|e| device_error(self.info.ordinal, "cuMemHostAlloc", e))?;
            self.copies = Some(copies);
        }
        Ok(self.copies.as_mut().expect("made above"))
    }

    /// A new device tensor holding `tensor`'s elements, copied on the
    /// host-to-device stream; large copies alternate between the two
    /// pinned buffers so that filling one overlaps the bus transfer of the
    /// other. Returns once the copy is enqueued (and the host data read).
    fn copy_in(&mut self, tensor: &Tensor) -> Result<DeviceTensor, ExecError> {
        let device = self.info.ordinal;
        let err = |call| move |e: DriverError| device_error(device, call, e);
        let copies = self.copies()?;
        let stream = copies.h2d.clone();
        let mut out = alloc_on(&stream, device, tensor.dtype(), tensor.shape())?;
        let (src, dst) = (host_bytes(tensor.data()), &mut out.buf);
        if src.len() < STAGING_THRESHOLD {
            stream
                .memcpy_htod(src, &mut dst.slice_mut(..src.len()))
                .map_err(err("cuMemcpyHtoDAsync"))?;
            return Ok(out);
        }
        for (i, piece) in src.chunks(STAGING_CHUNK).enumerate() {
            let (pinned, done) = &mut copies.buffers[i % 2];
            // The copy that last read this buffer must be over.
            done.synchronize().map_err(err("cuEventSynchronize"))?;
            let host = pinned.as_mut_slice().map_err(err("cuMemHostAlloc"))?;
            host[..piece.len()].copy_from_slice(piece);
            let at = i * STAGING_CHUNK;
            let mut part = dst.slice_mut(at..at + piece.len());
            let (ptr, _record) = part.device_ptr_mut(&stream);
            // SAFETY: `host[..len]` is pinned memory that stays untouched
            // until `done` (recorded right after on the same stream) has
            // completed: the next use of this buffer waits on it above.
            // `ptr` addresses `len` bytes of the destination.
            unsafe {
                cudarc::driver::result::memcpy_htod_async(
                    ptr,
                    &host[..piece.len()],
                    stream.cu_stream(),
                )
            }
            .map_err(err("cuMemcpyHtoDAsync"))?;
            done.record(&stream).map_err(err("cuEventRecord"))?;
        }
        Ok(out)
    }

    /// Copies `src` into `dst` on the device-to-host stream, after the op
    /// that wrote `src` (a wait on the device), and waits for the copy:
    /// the host waits for that tensor alone, not for any lane's other work.
    fn copy_out(&mut self, src: &CudaSlice<u8>, dst: &mut [u8]) -> Result<(), DeviceError> {
        let device = self.info.ordinal;
        let err = |call| move |e: DriverError| device_error(device, call, e);
        let copies = self.copies()?;
        let stream = copies.d2h.clone();
        if dst.len() < STAGING_THRESHOLD {
            stream
                .memcpy_dtoh(&src.slice(..dst.len()), dst)
                .map_err(err("cuMemcpyDtoHAsync"))?;
            return stream.synchronize().map_err(err("cuStreamSynchronize"));
        }
        let chunks = dst.len().div_ceil(STAGING_CHUNK);
        let total = dst.len();
        let range = |i: usize| i * STAGING_CHUNK..((i + 1) * STAGING_CHUNK).min(total);
        for i in 0..=chunks {
            if i < chunks {
                let r = range(i);
                let (pinned, done) = &mut copies.buffers[i % 2];
                // Its last use (an upload's copy, on the other stream) is over.
                done.synchronize().map_err(err("cuEventSynchronize"))?;
                let host = pinned.as_mut_slice().map_err(err("cuMemHostAlloc"))?;
                let part = src.slice(r.clone());
                let (ptr, _record) = part.device_ptr(&stream);
                // SAFETY: `host[..len]` is pinned memory no one reads until
                // `done` has completed (waited on below before the copy
                // out of it); `ptr` addresses `len` bytes of the source.
                unsafe {
                    cudarc::driver::result::memcpy_dtoh_async(
                        &mut host[..r.len()],
                        ptr,
                        stream.cu_stream(),
                    )
                }
                .map_err(err("cuMemcpyDtoHAsync"))?;
                done.record(&stream).map_err(err("cuEventRecord"))?;
            }
            if i > 0 {
                let r = range(i - 1);
                let (pinned, done) = &mut copies.buffers[(i - 1) % 2];
                done.synchronize().map_err(err("cuEventSynchronize"))?;
                let host = pinned.as_mut_slice().map_err(err("cuMemHostAlloc"))?;
                dst[r.clone()].copy_from_slice(&host[..r.len()]);
            }
        }
        Ok(())
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
            _ => {
                let dtype = outputs.first().map_or(DType::F64, |o| o.1);
                return Err(self.unsupported(op.name(), dtype, Some("ops with several outputs")));
            }
        };
        if matches!(op, TensorOp::Matmul | TensorOp::Einsum(_)) {
            self.blas(lane)?;
        } else {
            self.lane(lane)?;
        }
        let CudaEngine {
            info,
            ctx,
            lanes,
            store,
            kernels,
            ..
        } = self;
        let result = {
            let mut x = Exec {
                device: info.ordinal,
                arch: info.compute_capability,
                ctx,
                lane: &lanes[&lane],
                kernels,
            };
            let mut resident: smallvec::SmallVec<[&DeviceTensor; 4]> = smallvec::SmallVec::new();
            for id in inputs {
                resident.push(store.get(id).ok_or(NotResident(*id))?);
            }
            let input_dtype = resident.first().map_or(out_dtype, |t| t.dtype);
            let unsupported = |reason| {
                ExecError::Unsupported(Unsupported {
                    place,
                    op: op.name(),
                    dtype: input_dtype,
                    reason,
                })
            };
            let gather =
                |x: &mut Exec<'_>, view: Result<View, TensorError>| x.gather(resident[0], &view?);
            let result = match op {
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
                TensorOp::Permute(perm) => {
                    gather(&mut x, structural::permute_view(&resident[0].shape, perm))?
                }
                TensorOp::Slice(axes) => {
                    gather(&mut x, structural::slice_view(&resident[0].shape, axes))?
                }
                TensorOp::Reverse(axes) => {
                    gather(&mut x, structural::reverse_view(&resident[0].shape, axes))?
                }
                TensorOp::BroadcastTo(shape) => gather(
                    &mut x,
                    structural::broadcast_view(&resident[0].shape, shape),
                )?,
                TensorOp::Diagonal => {
                    gather(&mut x, structural::diagonal_view(&resident[0].shape))?
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
                TensorOp::Linalg(_) => return Err(unsupported(Some("no cuSOLVER path yet"))),
                _ => return Err(unsupported(None)),
            };
            result
        };
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
        let mut data = Scalar::Real(0.0).to_data(t.dtype, t.len())?;
        let copied = self.copy_out(&t.buf, host_bytes_mut(&mut data));
        self.store.insert(id, t);
        copied?;
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

    fn retire_lane(&mut self, lane: u64) {
        // Buffers allocated on the stream keep it alive (cudarc holds it by
        // `Arc`) until they are freed; destroying it returns at once, with
        // its work finishing on the device. The cuBLAS handle is kept for
        // the next lane (destroying one would wait for the whole device).
        if let Some(LaneStream {
            stream,
            blas: Some(blas),
        }) = self.lanes.remove(&lane)
        {
            self.spare_blas.push(SpareBlas { blas, stream });
        }
    }

    fn memory(&self) -> EngineMemory {
        EngineMemory {
            tensors: self.store.len(),
            tensor_bytes: self.bytes,
            buffers: BufferStats::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_rows_are_split_to_fill_the_device() {
        // Short rows, or many rows: one part each.
        assert_eq!(reduce_parts(1, 1000), 1);
        assert_eq!(reduce_parts(4096, 1 << 20), 1);
        // One long row (a full reduction): up to 1024 blocks of at least
        // REDUCE_PART elements.
        assert_eq!(reduce_parts(1, 1 << 20), (1 << 20) / REDUCE_PART);
        assert_eq!(reduce_parts(1, 1 << 30), 1024);
        assert_eq!(reduce_parts(8, 1 << 30), 128);
        for (rows, len) in [(1, 4 * REDUCE_PART), (3, 200_000), (511, 1 << 24)] {
            let parts = reduce_parts(rows, len);
            assert!(parts >= 1 && rows * parts <= 1 << 16, "{rows} {len}");
            assert!(len.div_ceil(parts) >= REDUCE_PART / 2, "{rows} {len}");
        }
    }
}
