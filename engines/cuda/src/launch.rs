//! Everything that runs device code or binds a library handle: kernel
//! launches, the cuBLAS product, the rebinding of a cuBLAS handle, and the
//! checks that the driver libraries load. This module and `memory` hold
//! every `unsafe` of the CUDA engine.
//!
//! Each launch takes its buffers as [`DeviceTensor`]s and checks, before
//! the launch, what the kernel's signature and walk need of them: the
//! function is the kernel of that name for the operands' element type
//! (fetched here, by [`Kernel`]), the element types match the signature,
//! and every offset a walk reaches lies inside its buffer. A launch that
//! fails a check is refused with a [`DeviceError`] naming it, so the
//! `unsafe` blocks below rest on checks made in this file.

use std::sync::Arc;

use cudarc::cublas::CudaBlas;
use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, DevicePtr, DevicePtrMut, DeviceRepr,
    DriverError, PushKernelArg,
};

use super::access::Kind;
use super::index::Targets;
use super::kernels::{self, Dims, Kernel, KernelError, Kernels};
use super::streams::Stream;
use super::{device_error, DeviceTensor};
use weft_core::DType;
use weft_core::{DeviceError, ExecError};

// SAFETY: `Dims` is `repr(C)` and holds only `i64`s, so it has no padding
// and no pointers; its layout is the source's `struct Dims` field for
// field (all `long long`), which the kernels take by value.
unsafe impl DeviceRepr for Dims {}

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

/// Whether the NVRTC library can be loaded (the kernels compile at run time).
pub fn nvrtc_present() -> bool {
    // SAFETY: as `driver_present`, for the NVRTC library.
    unsafe { cudarc::nvrtc::sys::is_culib_present() }
}

/// The GPU architectures this NVRTC compiles cubins for (`90` is
/// `sm_90`); empty if it cannot say. Callers have checked
/// [`nvrtc_present`].
pub fn nvrtc_architectures() -> Vec<i32> {
    use cudarc::nvrtc::sys;
    let mut count: std::ffi::c_int = 0;
    // SAFETY: NVRTC is loaded (the callers' check); it writes one int.
    if unsafe { sys::nvrtcGetNumSupportedArchs(&mut count) }
        .result()
        .is_err()
        || count <= 0
    {
        return Vec::new();
    }
    let mut archs: Vec<std::ffi::c_int> = vec![0; count as usize];
    // SAFETY: `archs` has room for the `count` ints NVRTC writes.
    if unsafe { sys::nvrtcGetSupportedArchs(archs.as_mut_ptr()) }
        .result()
        .is_err()
    {
        return Vec::new();
    }
    archs
}

/// Compiles `source` with NVRTC to a cubin for `sm_{arch}`: a binary for
/// that architecture, which the driver loads without a JIT (so a newer
/// NVRTC than the driver cannot fail with `UNSUPPORTED_PTX_VERSION`).
/// Callers have checked [`nvrtc_present`]. Errors are NVRTC's log.
pub(super) fn compile_cubin(source: &str, name: &str, arch: i32) -> Result<Vec<u8>, String> {
    use cudarc::nvrtc::{result, sys};
    use std::ffi::CString;
    let text = |bytes: &[std::ffi::c_char]| {
        let bytes: Vec<u8> = bytes
            .iter()
            .map(|&c| c as u8)
            .take_while(|&b| b != 0)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    let src = CString::new(source).map_err(|_| "the kernel source holds a NUL byte".to_owned())?;
    let name = CString::new(name).map_err(|_| "the program name holds a NUL byte".to_owned())?;
    let prog = result::create_program(&src, Some(&name)).map_err(|e| e.to_string())?;
    let option = format!("--gpu-architecture=sm_{arch}");
    // SAFETY: `prog` was created above and is destroyed only at the end of
    // this function; `src` and `name`, which it refers to, outlive it.
    let compiled = unsafe { result::compile_program(prog, &[option]) };
    let cubin = match compiled {
        // SAFETY: as above.
        Err(e) => Err(unsafe { result::get_program_log(prog) }
            .map(|log| text(&log))
            .unwrap_or_else(|_| e.to_string())),
        Ok(()) => {
            let mut size = 0usize;
            // SAFETY: as above; NVRTC writes one `size_t`.
            match unsafe { sys::nvrtcGetCUBINSize(prog, &mut size) }.result() {
                Err(e) => Err(e.to_string()),
                Ok(()) => {
                    let mut bytes: Vec<std::ffi::c_char> = vec![0; size];
                    // SAFETY: as above; `bytes` has room for the `size`
                    // bytes NVRTC writes.
                    unsafe { sys::nvrtcGetCUBIN(prog, bytes.as_mut_ptr()) }
                        .result()
                        .map(|()| bytes.into_iter().map(|c| c as u8).collect())
                        .map_err(|e| e.to_string())
                }
            }
        }
    };
    // SAFETY: created above and not destroyed yet.
    let _ = unsafe { result::destroy_program(prog) };
    cubin
}

/// Moves a retired lane's cuBLAS handle to `stream`: `stream` first waits,
/// on the device, for all of `old`'s work, so nothing the handle enqueues
/// next can overlap what it enqueued before (its workspace may still be in
/// use by the old lane's last product).
pub(super) fn rebind_blas(
    device: usize,
    blas: &mut CudaBlas,
    old: &Arc<CudaStream>,
    stream: &Arc<CudaStream>,
) -> Result<(), DeviceError> {
    stream
        .join(old)
        .map_err(|e| device_error(device, "cuStreamWaitEvent", e))?;
    // SAFETY: after the join above, the handle's work on `old` is ordered
    // before anything it does on `stream`, and the old lane is gone, so the
    // handle is used by one stream at a time, as cuBLAS requires.
    unsafe { blas.set_stream(stream.clone()) }
        .map_err(|e| device_error(device, "cublasSetStream", format!("{e:?}")))
}

/// What one launch needs: the lane's stream, the device's kernels and facts.
pub(super) struct Launcher<'a> {
    pub(super) device: usize,
    pub(super) arch: (i32, i32),
    pub(super) ctx: &'a Arc<CudaContext>,
    pub(super) stream: &'a Stream,
    /// The engine's events and free stream, for outputs.
    pub(super) events: &'a std::rc::Rc<super::EventPool>,
    pub(super) kernels: &'a mut Kernels,
}

impl Launcher<'_> {
    fn err(&self, call: &'static str) -> impl Fn(DriverError) -> ExecError + '_ {
        move |e| device_error(self.device, call, e).into()
    }

    /// Refuses a launch whose operands do not fit its kernel.
    fn require(&self, ok: bool, kernel: &'static str, what: &str) -> Result<(), ExecError> {
        if ok {
            return Ok(());
        }
        Err(self.refused(kernel, what))
    }

    /// A launch refused before it reached the device.
    fn refused(&self, kernel: &'static str, what: &str) -> ExecError {
        ExecError::Device(DeviceError {
            device: self.device,
            call: kernel,
            message: format!("launch refused: {what}"),
            out_of_memory: false,
        })
    }

    /// Orders a launch about to be enqueued on the lane's stream after
    /// the accesses its operands must follow (`access.rs`).
    pub(super) fn order(
        &self,
        reads: &[&DeviceTensor],
        writes: &[&DeviceTensor],
    ) -> Result<(), ExecError> {
        let kinds = reads.iter().map(|t| (t, Kind::Read));
        for (t, kind) in kinds.chain(writes.iter().map(|t| (t, Kind::Write))) {
            t.before(self.stream, kind)
                .map_err(self.err("cuStreamWaitEvent"))?;
        }
        Ok(())
    }

    /// Records the launch just enqueued as an access of its operands.
    pub(super) fn recorded(
        &self,
        reads: &[&DeviceTensor],
        writes: &[&DeviceTensor],
    ) -> Result<(), ExecError> {
        self.events.count(|c| c.enqueued += 1);
        let kinds = reads.iter().map(|t| (t, Kind::Read));
        for (t, kind) in kinds.chain(writes.iter().map(|t| (t, Kind::Write))) {
            t.after(self.stream, kind)
                .map_err(self.err("cuEventRecord"))?;
        }
        Ok(())
    }

    /// Kernel `kernel` of element type `dtype`, compiled on first use.
    fn function(&mut self, dtype: DType, kernel: Kernel) -> Result<CudaFunction, ExecError> {
        self.require(
            Kernel::of(dtype).contains(&kernel),
            kernel.name(),
            "a kernel of this element type",
        )?;
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

    /// `dst[walk₁] = src[walk₀]` over `dims`.
    pub(super) fn strided_copy(
        &mut self,
        dst: &mut DeviceTensor,
        src: &DeviceTensor,
        dims: &Dims,
    ) -> Result<(), ExecError> {
        const NAME: &str = "cuLaunchKernel strided_copy";
        self.require(dst.dtype == src.dtype, NAME, "element types differ")?;
        self.require(
            dims.within(0, src.len()),
            NAME,
            "the walk leaves the source",
        )?;
        self.require(
            dims.within(1, dst.len()),
            NAME,
            "the walk leaves the destination",
        )?;
        if dims.len() == 0 {
            return Ok(());
        }
        self.order(&[src], &[&*dst])?;
        let f = self.function(src.dtype, Kernel::StridedCopy)?;
        let mut launch = self.stream.launch_builder(&f);
        launch.arg(&mut *dst.buf).arg(&*src.buf).arg(dims);
        // SAFETY: `strided_copy` takes (T*, const T*, Dims), and both
        // buffers hold `T` elements (checked); every offset the walk reaches
        // lies inside its buffer (checked).
        unsafe { launch.launch(kernels::elementwise(dims.len())) }.map_err(self.err(NAME))?;
        self.recorded(&[src], &[&*dst])?;
        Ok(())
    }

    /// Positions along an axis (host values, each checked against
    /// `extent`), on the lane's stream as the kernel's `long long` array.
    /// The copy is from pageable memory, which the driver has read when
    /// the call returns; the buffer is freed in the stream's order, after
    /// the kernel that reads it.
    fn positions(
        &self,
        name: &'static str,
        values: impl Iterator<Item = usize>,
    ) -> Result<CudaSlice<i64>, ExecError> {
        let wide: Vec<i64> = values.map(|v| v as i64).collect();
        self.require(!wide.is_empty(), name, "no positions")?;
        // Its free (when it drops, on this stream) counted with it.
        self.events.count(|c| {
            c.allocs += 1;
            c.host_copies += 1;
            c.frees += 1;
        });
        self.stream
            .clone_htod(&wide)
            .map_err(self.err("cuMemcpyHtoDAsync"))
    }

    /// `out[(p·m + k)·post + q] = x[(p·extent + at[k])·post + q]`, for
    /// `[pre, post, extent]` and the `m` positions `at`.
    pub(super) fn take(
        &mut self,
        out: &mut DeviceTensor,
        x: &DeviceTensor,
        at: &[usize],
        [pre, post, extent]: [usize; 3],
    ) -> Result<(), ExecError> {
        const NAME: &str = "cuLaunchKernel take";
        self.require(out.dtype == x.dtype, NAME, "element types differ")?;
        self.require(
            at.iter().all(|&a| a < extent),
            NAME,
            "a position past the axis",
        )?;
        let reach = |n: usize| pre.checked_mul(n).and_then(|r| r.checked_mul(post));
        self.require(
            reach(extent).is_some_and(|n| n <= x.len()),
            NAME,
            "the walk leaves the source",
        )?;
        self.require(
            reach(at.len()) == Some(out.len()),
            NAME,
            "the output is not the positions' size",
        )?;
        let positions = self.positions(NAME, at.iter().copied())?;
        let threads = out.len();
        self.order(&[x], &[&*out])?;
        let f = self.function(x.dtype, Kernel::Take)?;
        let [p, m, q, e] = [pre, at.len(), post, extent].map(|v| v as i64);
        let mut launch = self.stream.launch_builder(&f);
        launch
            .arg(&mut *out.buf)
            .arg(&*x.buf)
            .arg(&positions)
            .arg(&p)
            .arg(&m)
            .arg(&q)
            .arg(&e);
        // SAFETY: `take` takes (T*, const T*, const long long*, long long
        // ×4), as pushed; both tensors hold `T` elements (checked); the
        // output holds `pre·m·post` of them and the source at least
        // `pre·extent·post` (checked), every position is below `extent`
        // (checked before the upload), and `positions` holds all `m`.
        unsafe { launch.launch(kernels::elementwise(threads)) }.map_err(self.err(NAME))?;
        self.recorded(&[x], &[&*out])?;
        Ok(())
    }

    /// Scatters `updates` (`[pre, n, post]`, `n` the index count) into
    /// `out` (`[pre, extent, post]`) in place at `targets`: set or add.
    pub(super) fn put(
        &mut self,
        out: &mut DeviceTensor,
        updates: &DeviceTensor,
        targets: &Targets,
        [pre, post, extent]: [usize; 3],
        add: bool,
    ) -> Result<(), ExecError> {
        const NAME: &str = "cuLaunchKernel put";
        self.require(out.dtype == updates.dtype, NAME, "element types differ")?;
        let (u, n) = (targets.dst.len(), targets.src.len());
        self.require(
            targets.is_sound(extent),
            NAME,
            "targets out of their ranges",
        )?;
        let reach = |n: usize| pre.checked_mul(n).and_then(|r| r.checked_mul(post));
        self.require(
            reach(extent) == Some(out.len()),
            NAME,
            "the output is not the target's shape",
        )?;
        self.require(
            reach(n).is_some_and(|m| m <= updates.len()),
            NAME,
            "the walk leaves the updates",
        )?;
        let threads = reach(u).unwrap_or(0);
        if threads == 0 {
            return Ok(());
        }
        let plan = targets.dst.iter().chain(&targets.start).chain(&targets.src);
        let plan = self.positions(NAME, plan.copied())?;
        self.order(&[updates], &[&*out])?;
        let f = self.function(out.dtype, Kernel::Put)?;
        let [p, u64_, n64, q, e] = [pre, u, n, post, extent].map(|v| v as i64);
        let add = i32::from(add);
        let mut launch = self.stream.launch_builder(&f);
        launch
            .arg(&mut *out.buf)
            .arg(&*updates.buf)
            .arg(&plan)
            .arg(&p)
            .arg(&u64_)
            .arg(&n64)
            .arg(&q)
            .arg(&e)
            .arg(&add);
        // SAFETY: `put` takes (T*, const T*, const long long*, long long
        // ×5, int), as pushed; both tensors hold `T` elements (checked);
        // `plan` holds the `u` targets, `u + 1` offsets and `n` update
        // positions, sound (checked: targets below `extent`, offsets
        // rising from 0 to `n` by at least one, positions below `n`), and
        // every element reached lies inside `out` (`pre·extent·post`) and
        // `updates` (at least `pre·n·post`), both checked. One thread per
        // (p, target, q) writes each element at most once.
        unsafe { launch.launch(kernels::elementwise(threads)) }.map_err(self.err(NAME))?;
        self.recorded(&[updates], &[&*out])?;
        Ok(())
    }

    /// `out[i] = a[walk₀] op b[walk₁]` over `dims`, `out` contiguous.
    pub(super) fn binary(
        &mut self,
        out: &mut DeviceTensor,
        a: &DeviceTensor,
        b: &DeviceTensor,
        op: i32,
        dims: &Dims,
    ) -> Result<(), ExecError> {
        let same = out.dtype == a.dtype && a.dtype == b.dtype;
        self.two_walks(Kernel::Binary, same, out, [a, b], op, dims)
    }

    /// `out[i] = a[walk₀] op b[walk₁]` as a `bool` (one byte) over `dims`.
    pub(super) fn compare(
        &mut self,
        out: &mut DeviceTensor,
        a: &DeviceTensor,
        b: &DeviceTensor,
        op: i32,
        dims: &Dims,
    ) -> Result<(), ExecError> {
        let fits = a.dtype == b.dtype && out.dtype == DType::Bool;
        self.two_walks(Kernel::Compare, fits, out, [a, b], op, dims)
    }

    /// A kernel of signature `(out*, const T* a, const T* b, int op, Dims)`
    /// over `dims`: `binary` (`out` of `T`) or `compare` (`out` of bytes),
    /// its operands' types checked by the caller (`types_fit`).
    fn two_walks(
        &mut self,
        kernel: Kernel,
        types_fit: bool,
        out: &mut DeviceTensor,
        [a, b]: [&DeviceTensor; 2],
        op: i32,
        dims: &Dims,
    ) -> Result<(), ExecError> {
        let name = match kernel {
            Kernel::Compare => "cuLaunchKernel compare",
            _ => "cuLaunchKernel binary",
        };
        self.require(types_fit, name, "the element types do not fit the kernel")?;
        self.require(
            dims.len() == out.len(),
            name,
            "the walk is not the output's length",
        )?;
        self.require(
            dims.within(0, a.len()),
            name,
            "the walk leaves the left operand",
        )?;
        self.require(
            dims.within(1, b.len()),
            name,
            "the walk leaves the right operand",
        )?;
        if dims.len() == 0 {
            return Ok(());
        }
        self.order(&[a, b], &[&*out])?;
        let f = self.function(a.dtype, kernel)?;
        let mut launch = self.stream.launch_builder(&f);
        launch
            .arg(&mut *out.buf)
            .arg(&*a.buf)
            .arg(&*b.buf)
            .arg(&op)
            .arg(dims);
        // SAFETY: `binary` takes (T*, const T*, const T*, int, Dims) and
        // `compare` (unsigned char*, const T*, const T*, int, Dims); the
        // inputs hold `T` elements and the output `dims.n` elements of
        // `T`, or bytes for `compare` (checked by the callers), and each
        // input's walk stays inside it (checked).
        unsafe { launch.launch(kernels::elementwise(dims.len())) }.map_err(self.err(name))?;
        self.recorded(&[a, b], &[&*out])?;
        Ok(())
    }

    /// `out[i] = a[i] op s` (or `s op a[i]`), `s = re + i·im`.
    pub(super) fn binary_scalar(
        &mut self,
        out: &mut DeviceTensor,
        a: &DeviceTensor,
        (re, im): (f64, f64),
        op: i32,
        scalar_first: bool,
    ) -> Result<(), ExecError> {
        const NAME: &str = "cuLaunchKernel binary_scalar";
        self.require(out.dtype == a.dtype, NAME, "element types differ")?;
        self.require(out.len() == a.len(), NAME, "lengths differ")?;
        let n = a.len() as i64;
        if n == 0 {
            return Ok(());
        }
        self.order(&[a], &[&*out])?;
        let f = self.function(a.dtype, Kernel::BinaryScalar)?;
        let first = i32::from(scalar_first);
        let mut launch = self.stream.launch_builder(&f);
        launch
            .arg(&mut *out.buf)
            .arg(&*a.buf)
            .arg(&re)
            .arg(&im)
            .arg(&op)
            .arg(&first)
            .arg(&n);
        // SAFETY: `binary_scalar` takes (T*, const T*, double, double, int,
        // int, long long) and touches `n` elements of each buffer; both hold
        // `n` elements of `T` (checked).
        unsafe { launch.launch(kernels::elementwise(a.len())) }.map_err(self.err(NAME))?;
        self.recorded(&[a], &[&*out])?;
        Ok(())
    }

    /// `out[i] = f(a[i])`; `out` of the real type takes `|a[i]|`.
    pub(super) fn unary(
        &mut self,
        out: &mut DeviceTensor,
        a: &DeviceTensor,
        op: i32,
    ) -> Result<(), ExecError> {
        const NAME: &str = "cuLaunchKernel unary";
        let magnitude = out.dtype != a.dtype;
        self.require(
            out.dtype == a.dtype || out.dtype == a.dtype.real(),
            NAME,
            "the output is not of the input's type or its real type",
        )?;
        self.require(out.len() == a.len(), NAME, "lengths differ")?;
        let n = a.len() as i64;
        if n == 0 {
            return Ok(());
        }
        let kernel = if magnitude {
            Kernel::Magnitude
        } else {
            Kernel::Unary
        };
        self.order(&[a], &[&*out])?;
        let f = self.function(a.dtype, kernel)?;
        let mut launch = self.stream.launch_builder(&f);
        launch.arg(&mut *out.buf).arg(&*a.buf);
        if !magnitude {
            launch.arg(&op);
        }
        launch.arg(&n);
        // SAFETY: `unary` takes (T*, const T*, int, long long) and
        // `magnitude` (R*, const T*, long long), picked by the output's type
        // (checked: T, or R for magnitude); both buffers hold `n` elements.
        unsafe { launch.launch(kernels::elementwise(a.len())) }.map_err(self.err(NAME))?;
        self.recorded(&[a], &[&*out])?;
        Ok(())
    }

    /// `out[i] = mask[walk₀] ? a[walk₁] : b[walk₂]` over `dims`.
    pub(super) fn select(
        &mut self,
        out: &mut DeviceTensor,
        [mask, a, b]: [&DeviceTensor; 3],
        dims: &Dims,
    ) -> Result<(), ExecError> {
        const NAME: &str = "cuLaunchKernel select";
        let same = out.dtype == a.dtype && a.dtype == b.dtype;
        self.require(same, NAME, "element types differ")?;
        self.require(mask.dtype == DType::Bool, NAME, "the mask is not bool")?;
        self.require(
            dims.len() == out.len(),
            NAME,
            "the walk is not the output's length",
        )?;
        for (k, t, what) in [
            (0, mask, "the walk leaves the mask"),
            (1, a, "the walk leaves the first source"),
            (2, b, "the walk leaves the second source"),
        ] {
            self.require(dims.within(k, t.len()), NAME, what)?;
        }
        if dims.len() == 0 {
            return Ok(());
        }
        self.order(&[mask, a, b], &[&*out])?;
        let f = self.function(a.dtype, Kernel::Select)?;
        let mut launch = self.stream.launch_builder(&f);
        launch
            .arg(&mut *out.buf)
            .arg(&*mask.buf)
            .arg(&*a.buf)
            .arg(&*b.buf)
            .arg(dims);
        // SAFETY: `select` takes (T*, const unsigned char*, const T*, const
        // T*, Dims); the output and sources hold `T` elements, the mask
        // bytes, and each walk stays inside its operand (all checked).
        unsafe { launch.launch(kernels::elementwise(dims.len())) }.map_err(self.err(NAME))?;
        self.recorded(&[mask, a, b], &[&*out])?;
        Ok(())
    }

    /// A kernel of one contiguous input and output of `n` elements each:
    /// `clamp` (bounds), `triangle` (the matrices' extents, the offset, the
    /// side) or a conversion (the output of the type converted to).
    pub(super) fn map(
        &mut self,
        out: &mut DeviceTensor,
        a: &DeviceTensor,
        args: MapArgs,
    ) -> Result<(), ExecError> {
        const NAME: &str = "cuLaunchKernel (elementwise map)";
        self.require(out.len() == a.len(), NAME, "lengths differ")?;
        let kernel = match args {
            MapArgs::Clamp { .. } => Kernel::Clamp,
            MapArgs::Triangle { .. } => Kernel::Triangle,
            MapArgs::Cast => Kernel::Cast(out.dtype),
        };
        if !matches!(args, MapArgs::Cast) {
            self.require(out.dtype == a.dtype, NAME, "element types differ")?;
        }
        if let MapArgs::Clamp { .. } = args {
            self.require(a.dtype.is_float(), NAME, "clamp is of real types")?;
        }
        if let MapArgs::Triangle { rows, cols, .. } = args {
            self.require(
                rows.checked_mul(cols)
                    .is_some_and(|m| m > 0 && a.len().is_multiple_of(m)),
                NAME,
                "the matrices do not tile the input",
            )?;
        }
        let n = a.len() as i64;
        if n == 0 {
            return Ok(());
        }
        self.order(&[a], &[&*out])?;
        let f = self.function(a.dtype, kernel)?;
        let mut launch = self.stream.launch_builder(&f);
        launch.arg(&mut *out.buf).arg(&*a.buf);
        let (lo, hi, rows, cols, k, upper);
        match args {
            MapArgs::Clamp { lo: l, hi: h } => {
                (lo, hi) = (l, h);
                launch.arg(&lo).arg(&hi);
            }
            MapArgs::Triangle {
                rows: r,
                cols: c,
                k: offset,
                upper: u,
            } => {
                (rows, cols, k, upper) = (r as i64, c as i64, offset as i64, i32::from(u));
                launch.arg(&rows).arg(&cols).arg(&k).arg(&upper);
            }
            MapArgs::Cast => {}
        }
        launch.arg(&n);
        // SAFETY: `clamp` takes (T*, const T*, double, double, long long),
        // `triangle` (T*, const T*, long long, long long, long long, int,
        // long long) and `cast_<u>` (U*, const T*, long long), as pushed for
        // each; both buffers hold `n` elements, the input of `T` and the
        // output of `T` or, for a conversion, of the type the kernel's name
        // gives (all checked); a triangle's index arithmetic stays inside
        // its matrices, which tile the input (checked).
        unsafe { launch.launch(kernels::elementwise(a.len())) }.map_err(self.err(NAME))?;
        self.recorded(&[a], &[&*out])?;
        Ok(())
    }

    /// A row kernel over `rows` rows of `len` contiguous elements of `src`,
    /// each cut into `parts`: segment `b`, part `b % parts` of row
    /// `b / parts`, goes into `out[b]`, reduced by as many threads as its
    /// length needs (a block packs several short segments). `Reduce` takes
    /// (op code, the count a mean divides by) into `T`; `Norm` takes
    /// (whether `src` holds sums of squares already, whether to take the
    /// root) into `R`.
    pub(super) fn rows(
        &mut self,
        out: &mut DeviceTensor,
        src: &DeviceTensor,
        [rows, len, parts]: [usize; 3],
        args: RowArgs,
    ) -> Result<(), ExecError> {
        const NAME: &str = "cuLaunchKernel (row reduction)";
        let (kernel, out_dtype) = match args {
            RowArgs::Reduce { .. } => (Kernel::Reduce, src.dtype),
            RowArgs::Norm { .. } => (Kernel::Norm, src.dtype.real()),
            RowArgs::Arg { .. } => (Kernel::ArgReduce, DType::I64),
        };
        if let RowArgs::Arg { .. } = args {
            self.require(
                parts == 1 && len >= 1,
                NAME,
                "an argmax takes whole, nonempty rows",
            )?;
        }
        self.require(
            out.dtype == out_dtype,
            NAME,
            "the output's type does not fit the kernel",
        )?;
        let reach = |a: usize, b: usize| a.checked_mul(b);
        self.require(
            reach(rows, len).is_some_and(|n| n <= src.len()),
            NAME,
            "the rows pass the source's end",
        )?;
        self.require(
            reach(rows, parts).is_some_and(|n| n <= out.len()),
            NAME,
            "the partials pass the output's end",
        )?;
        self.require(parts >= 1, NAME, "no part per row")?;
        self.order(&[src], &[&*out])?;
        let f = self.function(src.dtype, kernel)?;
        let (r, l, p) = (rows as i64, len as i64, parts as i64);
        let width = kernels::segment_width(len.div_ceil(parts));
        let mut launch = self.stream.launch_builder(&f);
        launch
            .arg(&mut *out.buf)
            .arg(&*src.buf)
            .arg(&r)
            .arg(&l)
            .arg(&p)
            .arg(&width);
        let (code, count, squared, root, want_max);
        match args {
            RowArgs::Arg { max } => {
                want_max = i32::from(max);
                launch.arg(&want_max);
            }
            RowArgs::Reduce { op, count: c } => {
                (code, count) = (op, c);
                launch.arg(&code).arg(&count);
            }
            RowArgs::Norm {
                squared: s,
                root: t,
            } => {
                (squared, root) = (i32::from(s), i32::from(t));
                launch.arg(&squared).arg(&root);
            }
        }
        // SAFETY: `reduce` takes (T*, const T*, long long, long long, long
        // long, int, int, double), `norm` (R*, const T*, long long, long
        // long, long long, int, int, int) and `arg_reduce` (long long*,
        // const T*, long long, long long, long long, int, int), as pushed
        // for each; the source holds `rows·len` elements of `T` (`len ≥ 1`
        // for `arg_reduce`, which reads the first) and the output
        // `rows·parts` of its type (all checked); `width` divides the
        // block (`kernels::rows` launches REDUCE_THREADS threads), as the
        // kernels' lanes need.
        unsafe { launch.launch(kernels::rows(rows * parts, width)) }.map_err(self.err(NAME))?;
        self.recorded(&[src], &[&*out])?;
        Ok(())
    }

    /// Writes every element of `out`: `Fill` with `re + i·im`, `Arange`
    /// with `start + step·i`, `Eye` with the identity of `out`'s shape.
    pub(super) fn create(&mut self, out: &mut DeviceTensor, what: Create) -> Result<(), ExecError> {
        const NAME: &str = "cuLaunchKernel (creation)";
        let n = out.len() as i64;
        if n == 0 {
            return Ok(());
        }
        let kernel = match what {
            Create::Fill(..) => Kernel::Fill,
            Create::FillInt(_) => Kernel::FillInt,
            Create::Arange(..) => Kernel::Arange,
            Create::ArangeInt(..) => Kernel::ArangeInt,
            Create::Eye => Kernel::Eye,
        };
        self.order(&[], &[&*out])?;
        let f = self.function(out.dtype, kernel)?;
        let mut launch = self.stream.launch_builder(&f);
        launch.arg(&mut *out.buf);
        let (x, y);
        let (first, by);
        let (rows, cols);
        match what {
            Create::Fill(a, b) | Create::Arange(a, b) => {
                (x, y) = (a, b);
                launch.arg(&x).arg(&y).arg(&n);
            }
            Create::FillInt(v) => {
                first = v;
                launch.arg(&first).arg(&n);
            }
            Create::ArangeInt(f, b) => {
                (first, by) = (f, b);
                launch.arg(&first).arg(&by).arg(&n);
            }
            Create::Eye => {
                let [r, c] = out.shape[..] else {
                    return self.require(false, NAME, "an identity of a non-matrix shape");
                };
                (rows, cols) = (r as i64, c as i64);
                launch.arg(&rows).arg(&cols);
            }
        }
        // SAFETY: `fill` and `arange` take (T*, double, double, long long),
        // `fill_int` (T*, long long, long long) and `arange_int` (T*, long
        // long, long long, long long), and write `n` elements; `eye` takes (T*, long long, long long) and
        // writes `rows·cols = n` (the output's shape). The buffer holds `n`
        // elements of `T`, its own type.
        unsafe { launch.launch(kernels::elementwise(n as usize)) }.map_err(self.err(NAME))?;
        self.recorded(&[], &[&*out])?;
        Ok(())
    }

    /// `out = a @ b` over a strided batch: `[nb, m, k] @ [nb, k, n]`, row
    /// major, batches `a_stride` and `b_stride` elements apart (0 re-reads
    /// one matrix), through one `cublasGemmStridedBatchedEx` on `blas`
    /// (bound to this launcher's stream). Row-major `C = A·B` is
    /// column-major `Cᵀ = Bᵀ·Aᵀ`, so cuBLAS gets the operands swapped and
    /// no transposes. Every dimension must be nonzero and fit `i32`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn gemm(
        &self,
        blas: &CudaBlas,
        out: &mut DeviceTensor,
        (a, a_stride): (&DeviceTensor, usize),
        (b, b_stride): (&DeviceTensor, usize),
        [nb, m, k, n]: [usize; 4],
    ) -> Result<(), ExecError> {
        use cudarc::cublas::sys::{
            cublasComputeType_t, cublasGemmAlgo_t, cublasOperation_t, cudaDataType,
        };
        const NAME: &str = "cublasGemmStridedBatchedEx";
        let dtype = a.dtype;
        let same = out.dtype == dtype && b.dtype == dtype;
        self.require(same, NAME, "element types differ")?;
        let dims = [nb, m, k, n];
        let fits = dims.iter().all(|&x| x > 0 && i32::try_from(x).is_ok());
        self.require(fits, NAME, "a dimension is zero or past i32")?;
        // The elements each operand's batch reaches.
        let reach = |stride: usize, rows: usize, cols: usize| {
            (nb - 1)
                .checked_mul(stride)
                .and_then(|x| x.checked_add(rows * cols))
        };
        self.require(
            reach(a_stride, m, k).is_some_and(|r| r <= a.len()),
            NAME,
            "A is too short",
        )?;
        self.require(
            reach(b_stride, k, n).is_some_and(|r| r <= b.len()),
            NAME,
            "B is too short",
        )?;
        self.require(
            reach(m * n, m, n).is_some_and(|r| r <= out.len()),
            NAME,
            "C is too short",
        )?;
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
            other => return Err(self.refused(NAME, &format!("no {other} product"))),
        };
        // alpha = 1, beta = 0 in the compute type (complex: re, im).
        let (one32, zero32) = ([1.0f32, 0.0], [0.0f32, 0.0]);
        let (one64, zero64) = ([1.0f64, 0.0], [0.0f64, 0.0]);
        let (alpha, beta): (*const std::ffi::c_void, *const std::ffi::c_void) = match dtype {
            DType::F32 | DType::C32 => (one32.as_ptr().cast(), zero32.as_ptr().cast()),
            _ => (one64.as_ptr().cast(), zero64.as_ptr().cast()),
        };
        self.order(&[a, b], &[&*out])?;
        let stream = self.stream;
        let (pa, _ra) = a.buf.device_ptr(stream);
        let (pb, _rb) = b.buf.device_ptr(stream);
        let (pc, _rc) = out.buf.device_ptr_mut(stream);
        let [nb, m, k, n] = dims.map(|x| x as i32);
        // SAFETY: the handle is bound to this stream (the engine binds a
        // lane's handle to the lane's stream before its first product); A'
        // = B is n×k column-major with ld n, B' = A is k×m with ld k, C is
        // n×m with ld n, each batch `stride` elements on, and every buffer
        // holds the elements those shapes reach and of the data type given
        // (all checked above). alpha and beta point to host scalars of the
        // compute type that outlive the call, which reads them before
        // returning (host pointer mode).
        unsafe {
            cudarc::cublas::result::gemm_strided_batched_ex(
                *blas.handle(),
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
        .map_err(|e| device_error(self.device, NAME, format!("{e:?}")))?;
        drop((_ra, _rb, _rc));
        self.recorded(&[a, b], &[&*out])
    }
}

/// The arguments of [`Launcher::map`]'s kernels.
#[derive(Debug, Clone, Copy)]
pub(super) enum MapArgs {
    /// Limits to `[lo, hi]`.
    Clamp { lo: f64, hi: f64 },
    /// Keeps the lower (`j - i <= k`) or upper (`j - i >= k`) triangle of
    /// each `rows × cols` matrix.
    Triangle {
        rows: usize,
        cols: usize,
        k: isize,
        upper: bool,
    },
    /// Converts to the output's type.
    Cast,
}

/// The arguments of a row kernel (see [`Launcher::rows`]).
#[derive(Debug, Clone, Copy)]
pub(super) enum RowArgs {
    /// A reduction by the source's op code; a mean divides by `count`.
    Reduce { op: i32, count: f64 },
    /// Sums of `|x|²` (of `x` when `squared`: sums already), rooted if `root`.
    Norm { squared: bool, root: bool },
    /// The `i64` index of each row's largest (`max`) or smallest element.
    Arg { max: bool },
}

/// What a creation kernel writes (see [`Launcher::create`]).
#[derive(Debug, Clone, Copy)]
pub(super) enum Create {
    /// Every element `re + i·im`.
    Fill(f64, f64),
    /// Every element this integer (0 or 1 for `bool`), exactly.
    FillInt(i64),
    /// `start + step·i`.
    Arange(f64, f64),
    /// `first + by·i`, exactly (the values fit the integer type).
    ArangeInt(i64, i64),
    /// The identity.
    Eye,
}

/// Whether the cuSOLVER library can be loaded (decompositions need it).
pub fn cusolver_present() -> bool {
    // SAFETY: as `driver_present`, for the cuSOLVER library.
    unsafe { cudarc::cusolver::sys::is_culib_present() }
}

/// A lane's cuSOLVER dense handle, bound to the lane's stream, and the
/// default options of its 64-bit calls. Made and destroyed here, not by
/// cudarc's `DnHandle`, whose drop unwraps the destroy's result: a failed
/// destroy is reported on stderr, never a panic on the actor.
pub(super) struct Solver {
    device: usize,
    handle: cudarc::cusolver::sys::cusolverDnHandle_t,
    params: cudarc::cusolver::sys::cusolverDnParams_t,
}

impl Solver {
    /// A handle bound to `stream`. The caller checked
    /// [`cusolver_present`] (cudarc panics without the library).
    pub(super) fn new(device: usize, stream: &CudaStream) -> Result<Solver, DeviceError> {
        use cudarc::cusolver::result;
        let err =
            |call| move |e: result::CusolverError| device_error(device, call, format!("{e:?}"));
        let handle = result::dn_create().map_err(err("cusolverDnCreate"))?;
        let mut solver = Solver {
            device,
            handle,
            params: std::ptr::null_mut(),
        };
        // SAFETY: `handle` was just made; the stream outlives the handle
        // (the lane holds both, and drops the handle first).
        unsafe { result::dn_set_stream(handle, stream.cu_stream() as _) }
            .map_err(err("cusolverDnSetStream"))?;
        solver.params = result::dn_create_params().map_err(err("cusolverDnCreateParams"))?;
        Ok(solver)
    }
}

impl Drop for Solver {
    fn drop(&mut self) {
        use cudarc::cusolver::result;
        // SAFETY: both were made by `Solver::new` and are destroyed once,
        // here (a null `params` was never made).
        let destroyed = unsafe {
            let params = if self.params.is_null() {
                Ok(())
            } else {
                result::dn_destroy_params(self.params)
            };
            params.and(result::dn_destroy(self.handle))
        };
        if let Err(e) = destroyed {
            eprintln!(
                "weft: destroying a cuSOLVER handle of device {}: {e:?}",
                self.device
            );
        }
    }
}

/// cuSOLVER's name of a float or complex element type.
fn solver_type(dtype: DType) -> Option<cudarc::cusolver::sys::cudaDataType> {
    use cudarc::cusolver::sys::cudaDataType as T;
    Some(match dtype {
        DType::F32 => T::CUDA_R_32F,
        DType::F64 => T::CUDA_R_64F,
        DType::C32 => T::CUDA_C_32F,
        DType::C64 => T::CUDA_C_64F,
        _ => return None,
    })
}

impl Launcher<'_> {
    /// The bytes of `t`, copied to the host on the lane's stream and waited
    /// for: meant for small tensors (a status, a probe's scalar). The host
    /// has then seen the read complete, so nothing is recorded.
    pub(super) fn read_back(&self, t: &DeviceTensor) -> Result<Vec<u8>, ExecError> {
        self.order(&[t], &[])?;
        let mut host = vec![0u8; t.bytes()];
        if host.is_empty() {
            return Ok(host);
        }
        self.copy_back(&t.buf.slice(..host.len()), &mut host)?;
        Ok(host)
    }

    /// The statuses cuSOLVER wrote to `info` (after the stream has run).
    fn solver_info<const N: usize>(&self, info: &CudaSlice<i32>) -> Result<[i32; N], ExecError> {
        let mut host = [0i32; N];
        self.copy_back(info, &mut host)?;
        Ok(host)
    }

    /// Copies `src` into `dst` on the lane's stream and waits for it.
    fn copy_back<T: DeviceRepr>(
        &self,
        src: &impl DevicePtr<T>,
        dst: &mut [T],
    ) -> Result<(), ExecError> {
        self.events.count(|c| {
            c.host_copies += 1;
            c.syncs += 1;
        });
        self.stream
            .memcpy_dtoh(src, dst)
            .map_err(self.err("cuMemcpyDtoHAsync"))?;
        self.stream
            .synchronize()
            .map_err(self.err("cuStreamSynchronize"))
    }

    /// Device workspace of `bytes` (at least one) on the lane's stream.
    fn workspace(&self, bytes: usize) -> Result<CudaSlice<u8>, ExecError> {
        self.events.count(|c| {
            c.allocs += 1;
            c.frees += 1;
        });
        self.stream
            .alloc_zeros::<u8>(bytes.max(1))
            .map_err(self.err("cuMemAllocAsync"))
    }

    /// The Cholesky factor of the row-major Hermitian `a`, in place: read
    /// as column-major it is `Aᵀ = conj(A)`, whose upper factorization
    /// `conj(A) = UᴴU` leaves `Uᵀ` in the row-major lower triangle, and
    /// `A = Uᵀ conj(U) = L Lᴴ` with `L = Uᵀ`: so `potrf` of the upper
    /// triangle reads the row-major lower triangle (the CPU's) and writes
    /// `L` there. The strict upper triangle is left as it was. Returns
    /// cuSOLVER's `info` (0, or the order of the first minor that is not
    /// positive definite).
    pub(super) fn potrf(&self, solver: &Solver, a: &mut DeviceTensor) -> Result<i32, ExecError> {
        use cudarc::cusolver::sys;
        const NAME: &str = "cusolverDnXpotrf";
        let ty = solver_type(a.dtype).ok_or_else(|| self.refused(NAME, "not a field type"))?;
        let n = match a.shape[..] {
            [r, c] if r == c && r > 0 => r,
            _ => return Err(self.refused(NAME, "not a nonempty square matrix")),
        };
        self.require(a.len() == n * n, NAME, "the buffer is not the matrix")?;
        let n64 = i64::try_from(n).map_err(|_| self.refused(NAME, "too large"))?;
        let uplo = sys::cublasFillMode_t::CUBLAS_FILL_MODE_UPPER;
        let pa = a.buf.device_ptr_mut(self.stream).0;
        let (h, p) = (solver.handle, solver.params);
        // Both closures' safety: the handle is bound to this stream
        // (`Solver::new`), `pa` addresses the n×n matrix of the type given
        // with ld n (checked); the workspaces are as the query asked and
        // `info` one `int` (`solver_run`).
        self.solver_run(
            NAME,
            &[&*a],
            |d, hb| {
                // SAFETY: as argued above (the size query).
                unsafe {
                    sys::cusolverDnXpotrf_bufferSize(
                        h,
                        p,
                        uplo,
                        n64,
                        ty,
                        pa as *const _,
                        n64,
                        ty,
                        d,
                        hb,
                    )
                }
            },
            |work, d, host, hb, info| {
                // SAFETY: as argued above (the call).
                unsafe {
                    sys::cusolverDnXpotrf(
                        h,
                        p,
                        uplo,
                        n64,
                        ty,
                        pa as *mut _,
                        n64,
                        ty,
                        work,
                        d,
                        host,
                        hb,
                        info,
                    )
                }
            },
        )
    }

    /// One cuSOLVER 64-bit call that writes `writes` (ordered on the lane's
    /// stream as writes): `query` asks for its workspace sizes (device,
    /// host), `call` runs it with (device workspace, its bytes, host
    /// workspace, its bytes, the `info` pointer); returns `info`, read back
    /// after the stream has run (the workspaces live until then).
    fn solver_run(
        &self,
        name: &'static str,
        writes: &[&DeviceTensor],
        query: impl FnOnce(&mut usize, &mut usize) -> cudarc::cusolver::sys::cusolverStatus_t,
        call: impl FnOnce(
            *mut std::ffi::c_void,
            usize,
            *mut std::ffi::c_void,
            usize,
            *mut i32,
        ) -> cudarc::cusolver::sys::cusolverStatus_t,
    ) -> Result<i32, ExecError> {
        use cudarc::cusolver::sys::cusolverStatus_t as Status;
        let err = |e: Status| ExecError::from(device_error(self.device, name, format!("{e:?}")));
        self.order(&[], writes)?;
        let (mut on_device, mut on_host) = (0usize, 0usize);
        let status = query(&mut on_device, &mut on_host);
        if status != Status::CUSOLVER_STATUS_SUCCESS {
            return Err(err(status));
        }
        let mut work = self.workspace(on_device)?;
        let mut host = vec![0u8; on_host.max(1)];
        let mut info = self
            .stream
            .alloc_zeros::<i32>(1)
            .map_err(self.err("cuMemAllocAsync"))?;
        let stream = self.stream;
        let (pw, _rw) = work.device_ptr_mut(stream);
        let (pi, _ri) = info.device_ptr_mut(stream);
        self.events.count(|c| c.enqueued += 1);
        let status = call(
            pw as *mut _,
            on_device,
            host.as_mut_ptr().cast(),
            on_host,
            pi as *mut _,
        );
        drop((_rw, _ri));
        if status != Status::CUSOLVER_STATUS_SUCCESS {
            return Err(err(status));
        }
        self.recorded(&[], writes)?;
        let [code] = self.solver_info(&info)?;
        drop((work, host));
        Ok(code)
    }

    /// The eigenvalues (ascending, into `w`, of the real type) and
    /// eigenvectors of the row-major Hermitian `a`, in place: read as
    /// column-major it is `conj(A)`, whose upper triangle is the row-major
    /// lower one (the CPU's); `syevd` leaves the eigenvectors `U` of
    /// `conj(A)` as its columns, so the row-major buffer holds `Uᵀ`, and
    /// `A`'s eigenvectors are `conj(U)`, its adjoint (the caller's step).
    pub(super) fn syevd(
        &self,
        solver: &Solver,
        a: &mut DeviceTensor,
        w: &mut DeviceTensor,
    ) -> Result<i32, ExecError> {
        use cudarc::cusolver::sys;
        const NAME: &str = "cusolverDnXsyevd";
        let ty = solver_type(a.dtype).ok_or_else(|| self.refused(NAME, "not a field type"))?;
        let real = solver_type(a.dtype.real()).ok_or_else(|| self.refused(NAME, "no real type"))?;
        let n = match a.shape[..] {
            [r, c] if r == c && r > 0 => r,
            _ => return Err(self.refused(NAME, "not a nonempty square matrix")),
        };
        self.require(a.len() == n * n, NAME, "the buffer is not the matrix")?;
        self.require(
            w.dtype == a.dtype.real() && w.len() == n,
            NAME,
            "W is not n reals",
        )?;
        let n64 = i64::try_from(n).map_err(|_| self.refused(NAME, "too large"))?;
        let (job, uplo) = (
            sys::cusolverEigMode_t::CUSOLVER_EIG_MODE_VECTOR,
            sys::cublasFillMode_t::CUBLAS_FILL_MODE_UPPER,
        );
        // The pointers alone (cudarc's access guards are no-ops here: the
        // engine orders accesses itself).
        let stream = self.stream;
        let pa = a.buf.device_ptr_mut(stream).0;
        let pw = w.buf.device_ptr_mut(stream).0;
        let (h, p) = (solver.handle, solver.params);
        // Both closures' safety: the handle is bound to this stream, `pa`
        // addresses the n×n matrix of the type given with ld n and `pw` n
        // reals of its real type (checked); the workspaces are as the query
        // asked and `info` one `int` (`solver_run`).
        self.solver_run(
            NAME,
            &[&*a, &*w],
            |d, hb| {
                // SAFETY: as argued above (the size query).
                unsafe {
                    sys::cusolverDnXsyevd_bufferSize(
                        h,
                        p,
                        job,
                        uplo,
                        n64,
                        ty,
                        pa as *const _,
                        n64,
                        real,
                        pw as *const _,
                        ty,
                        d,
                        hb,
                    )
                }
            },
            |work, d, host, hb, info| {
                // SAFETY: as argued above (the call).
                unsafe {
                    sys::cusolverDnXsyevd(
                        h,
                        p,
                        job,
                        uplo,
                        n64,
                        ty,
                        pa as *mut _,
                        n64,
                        real,
                        pw as *mut _,
                        ty,
                        work,
                        d,
                        host,
                        hb,
                        info,
                    )
                }
            },
        )
    }

    /// The thin SVD of the column-major `rows × cols` matrix in `a`
    /// (`rows ≥ cols`, destroyed): `s` its `cols` singular values
    /// (descending, of the real type), `u` the `rows × cols` column-major
    /// left vectors, `vt` the `cols × cols` column-major `Vᴴ`.
    pub(super) fn gesvd(
        &self,
        solver: &Solver,
        a: &mut DeviceTensor,
        [s, u, vt]: [&mut DeviceTensor; 3],
        [rows, cols]: [usize; 2],
    ) -> Result<i32, ExecError> {
        use cudarc::cusolver::sys;
        const NAME: &str = "cusolverDnXgesvd";
        let ty = solver_type(a.dtype).ok_or_else(|| self.refused(NAME, "not a field type"))?;
        let real = solver_type(a.dtype.real()).ok_or_else(|| self.refused(NAME, "no real type"))?;
        self.require(rows >= cols && cols > 0, NAME, "not a nonempty tall matrix")?;
        let size = |r: usize, c: usize| r.checked_mul(c);
        self.require(
            size(rows, cols) == Some(a.len()),
            NAME,
            "A is not rows × cols",
        )?;
        self.require(
            s.dtype == a.dtype.real() && s.len() == cols,
            NAME,
            "S is not cols reals",
        )?;
        self.require(
            u.dtype == a.dtype && size(rows, cols) == Some(u.len()),
            NAME,
            "U is not rows × cols",
        )?;
        self.require(
            vt.dtype == a.dtype && size(cols, cols) == Some(vt.len()),
            NAME,
            "Vᴴ is not cols × cols",
        )?;
        let fit = |v: usize| i64::try_from(v).map_err(|_| self.refused(NAME, "too large"));
        let (m, n) = (fit(rows)?, fit(cols)?);
        let job = b'S' as std::ffi::c_schar;
        // The pointers alone (cudarc's access guards are no-ops here: the
        // engine orders accesses itself).
        let stream = self.stream;
        let pa = a.buf.device_ptr_mut(stream).0;
        let ps = s.buf.device_ptr_mut(stream).0;
        let pu = u.buf.device_ptr_mut(stream).0;
        let pv = vt.buf.device_ptr_mut(stream).0;
        let (h, p) = (solver.handle, solver.params);
        // Both closures' safety: the handle is bound to this stream; `pa`
        // addresses the rows × cols matrix (ld rows), `ps` cols reals, `pu`
        // rows × cols (ld rows) and `pv` cols × cols (ld cols), of the
        // types given (all checked); job 'S' writes exactly those; the
        // workspaces are as the query asked and `info` one `int`.
        self.solver_run(
            NAME,
            &[&*a, &*s, &*u, &*vt],
            |d, hb| {
                // SAFETY: as argued above (the size query).
                unsafe {
                    sys::cusolverDnXgesvd_bufferSize(
                        h,
                        p,
                        job,
                        job,
                        m,
                        n,
                        ty,
                        pa as *const _,
                        m,
                        real,
                        ps as *const _,
                        ty,
                        pu as *const _,
                        m,
                        ty,
                        pv as *const _,
                        n,
                        ty,
                        d,
                        hb,
                    )
                }
            },
            |work, d, host, hb, info| {
                // SAFETY: as argued above (the call).
                unsafe {
                    sys::cusolverDnXgesvd(
                        h,
                        p,
                        job,
                        job,
                        m,
                        n,
                        ty,
                        pa as *mut _,
                        m,
                        real,
                        ps as *mut _,
                        ty,
                        pu as *mut _,
                        m,
                        ty,
                        pv as *mut _,
                        n,
                        ty,
                        work,
                        d,
                        host,
                        hb,
                        info,
                    )
                }
            },
        )
    }

    /// The Householder QR of the column-major `rows × cols` matrix in `a`,
    /// in place (`R` in its upper triangle, the reflectors below), and
    /// their `min(rows, cols)` scalars into `tau`.
    pub(super) fn geqrf(
        &self,
        solver: &Solver,
        a: &mut DeviceTensor,
        tau: &mut DeviceTensor,
        [rows, cols]: [usize; 2],
    ) -> Result<i32, ExecError> {
        use cudarc::cusolver::sys;
        const NAME: &str = "cusolverDnXgeqrf";
        let ty = solver_type(a.dtype).ok_or_else(|| self.refused(NAME, "not a field type"))?;
        let k = rows.min(cols);
        self.require(k > 0, NAME, "an empty matrix")?;
        self.require(
            rows.checked_mul(cols) == Some(a.len()),
            NAME,
            "A is not rows × cols",
        )?;
        self.require(
            tau.dtype == a.dtype && tau.len() == k,
            NAME,
            "tau is not min(rows, cols) elements",
        )?;
        let fit = |v: usize| i64::try_from(v).map_err(|_| self.refused(NAME, "too large"));
        let (m, n) = (fit(rows)?, fit(cols)?);
        let stream = self.stream;
        let pa = a.buf.device_ptr_mut(stream).0;
        let pt = tau.buf.device_ptr_mut(stream).0;
        let (h, p) = (solver.handle, solver.params);
        // Both closures' safety: the handle is bound to this stream; `pa`
        // addresses the rows × cols matrix (ld rows) and `pt` k scalars, of
        // the type given (checked); the workspaces are as the query asked
        // and `info` one `int` (`solver_run`).
        self.solver_run(
            NAME,
            &[&*a, &*tau],
            |d, hb| {
                // SAFETY: as argued above (the size query).
                unsafe {
                    sys::cusolverDnXgeqrf_bufferSize(
                        h,
                        p,
                        m,
                        n,
                        ty,
                        pa as *const _,
                        m,
                        ty,
                        pt as *const _,
                        ty,
                        d,
                        hb,
                    )
                }
            },
            |work, d, host, hb, info| {
                // SAFETY: as argued above (the call).
                unsafe {
                    sys::cusolverDnXgeqrf(
                        h,
                        p,
                        m,
                        n,
                        ty,
                        pa as *mut _,
                        m,
                        ty,
                        pt as *mut _,
                        ty,
                        work,
                        d,
                        host,
                        hb,
                        info,
                    )
                }
            },
        )
    }

    /// The first `k` columns of `Q`, in place over the `rows × k`
    /// column-major reflectors `geqrf` left in `a` (ld `rows`), from their
    /// scalars `tau` (`orgqr`, `ungqr` for the complex types: the 64-bit
    /// API has none).
    pub(super) fn orgqr(
        &self,
        solver: &Solver,
        a: &mut DeviceTensor,
        tau: &DeviceTensor,
        [rows, k]: [usize; 2],
    ) -> Result<i32, ExecError> {
        use cudarc::cusolver::sys;
        const NAME: &str = "cusolverDn<t>orgqr";
        self.require(a.dtype.is_field(), NAME, "not a field type")?;
        self.require(rows >= k && k > 0, NAME, "not a nonempty tall matrix")?;
        self.require(
            rows.checked_mul(k).is_some_and(|n| n <= a.len()),
            NAME,
            "A is shorter than rows × k",
        )?;
        self.require(
            tau.dtype == a.dtype && tau.len() == k,
            NAME,
            "tau is not k elements",
        )?;
        let fit = |v: usize| i32::try_from(v).map_err(|_| self.refused(NAME, "too large"));
        let (m, kk) = (fit(rows)?, fit(k)?);
        let size = a.dtype.size();
        let stream = self.stream;
        let pa = a.buf.device_ptr_mut(stream).0;
        let pt = tau.buf.device_ptr(stream).0;
        let h = solver.handle;
        let dtype = a.dtype;
        // Both closures' safety: the handle is bound to this stream; `pa`
        // addresses at least the rows × k matrix (ld rows) and `pt` k
        // scalars, of the element type each typed call takes (checked,
        // and matched by `dtype`); the device workspace holds the `lwork`
        // elements the query asked for, and `info` is one `int`.
        self.solver_run(
            NAME,
            &[&*a],
            |d, hb| {
                let mut lwork = 0i32;
                // SAFETY: as argued above (the size query).
                let status = unsafe {
                    match dtype {
                        DType::F32 => sys::cusolverDnSorgqr_bufferSize(
                            h,
                            m,
                            kk,
                            kk,
                            pa as *const _,
                            m,
                            pt as *const _,
                            &mut lwork,
                        ),
                        DType::F64 => sys::cusolverDnDorgqr_bufferSize(
                            h,
                            m,
                            kk,
                            kk,
                            pa as *const _,
                            m,
                            pt as *const _,
                            &mut lwork,
                        ),
                        DType::C32 => sys::cusolverDnCungqr_bufferSize(
                            h,
                            m,
                            kk,
                            kk,
                            pa as *const _,
                            m,
                            pt as *const _,
                            &mut lwork,
                        ),
                        _ => sys::cusolverDnZungqr_bufferSize(
                            h,
                            m,
                            kk,
                            kk,
                            pa as *const _,
                            m,
                            pt as *const _,
                            &mut lwork,
                        ),
                    }
                };
                *d = usize::try_from(lwork).unwrap_or(0) * size;
                *hb = 0;
                status
            },
            |work, d, _host, _hb, info| {
                let lwork = i32::try_from(d / size).unwrap_or(i32::MAX);
                // SAFETY: as argued above (the call).
                unsafe {
                    match dtype {
                        DType::F32 => sys::cusolverDnSorgqr(
                            h,
                            m,
                            kk,
                            kk,
                            pa as *mut _,
                            m,
                            pt as *const _,
                            work.cast(),
                            lwork,
                            info,
                        ),
                        DType::F64 => sys::cusolverDnDorgqr(
                            h,
                            m,
                            kk,
                            kk,
                            pa as *mut _,
                            m,
                            pt as *const _,
                            work.cast(),
                            lwork,
                            info,
                        ),
                        DType::C32 => sys::cusolverDnCungqr(
                            h,
                            m,
                            kk,
                            kk,
                            pa as *mut _,
                            m,
                            pt as *const _,
                            work.cast(),
                            lwork,
                            info,
                        ),
                        _ => sys::cusolverDnZungqr(
                            h,
                            m,
                            kk,
                            kk,
                            pa as *mut _,
                            m,
                            pt as *const _,
                            work.cast(),
                            lwork,
                            info,
                        ),
                    }
                }
            },
        )
    }

    /// `A X = B` for row-major `a` (n×n, overwritten by the LU factors of
    /// its column-major reading `Aᵀ`) and `b` holding `B` column-major
    /// (n×nrhs, overwritten by `X`): `getrf` of `Aᵀ`, then `getrs` with
    /// the transpose, which solves `(Aᵀ)ᵀ X = B`. Returns `getrf`'s
    /// `info` (0, or the first zero pivot's order), then `getrs`'s.
    pub(super) fn lu_solve(
        &self,
        solver: &Solver,
        a: &mut DeviceTensor,
        b: &mut DeviceTensor,
        [n, nrhs]: [usize; 2],
    ) -> Result<[i32; 2], ExecError> {
        use cudarc::cusolver::sys;
        const NAME: &str = "cusolverDnXgetrf";
        let ty = solver_type(a.dtype).ok_or_else(|| self.refused(NAME, "not a field type"))?;
        self.require(a.dtype == b.dtype, NAME, "element types differ")?;
        self.require(n > 0 && nrhs > 0, NAME, "an empty system")?;
        self.require(n.checked_mul(n) == Some(a.len()), NAME, "A is not n×n")?;
        self.require(
            n.checked_mul(nrhs) == Some(b.len()),
            NAME,
            "B is not n×nrhs",
        )?;
        let fit = |v: usize| i64::try_from(v).map_err(|_| self.refused(NAME, "too large"));
        let (n64, r64) = (fit(n)?, fit(nrhs)?);
        let err =
            |call, e: sys::cusolverStatus_t| device_error(self.device, call, format!("{e:?}"));
        self.order(&[], &[&*a, &*b])?;
        let stream = self.stream;
        let (pa, _ra) = a.buf.device_ptr_mut(stream);
        let (pb, _rb) = b.buf.device_ptr_mut(stream);
        let (mut on_device, mut on_host) = (0usize, 0usize);
        // SAFETY: the handle is bound to this stream, `pa` addresses the
        // n×n matrix of the type given with ld n (checked), and the sizes
        // are written to the two locals.
        let status = unsafe {
            sys::cusolverDnXgetrf_bufferSize(
                solver.handle,
                solver.params,
                n64,
                n64,
                ty,
                pa as *const _,
                n64,
                ty,
                &mut on_device,
                &mut on_host,
            )
        };
        if status != sys::cusolverStatus_t::CUSOLVER_STATUS_SUCCESS {
            return Err(err(NAME, status).into());
        }
        let mut work = self.workspace(on_device)?;
        let mut host = vec![0u8; on_host.max(1)];
        let alloc = |len: usize| {
            self.stream
                .alloc_zeros::<i64>(len)
                .map_err(self.err("cuMemAllocAsync"))
        };
        let mut pivots = alloc(n)?;
        let mut infos = self
            .stream
            .alloc_zeros::<i32>(2)
            .map_err(self.err("cuMemAllocAsync"))?;
        let (pw, _rw) = work.device_ptr_mut(stream);
        let (pp, _rp) = pivots.device_ptr_mut(stream);
        let (pi, _ri) = infos.device_ptr_mut(stream);
        self.events.count(|c| c.enqueued += 2);
        // SAFETY: as above, with a device workspace of `on_device` bytes,
        // a host one of `on_host` (alive until the status is read below,
        // after the stream has run), `n` 64-bit pivots and two `int`
        // statuses on the device; `getrs` reads the factors and pivots
        // `getrf` wrote (the same stream orders them) and overwrites the
        // n×nrhs column-major `B` (ld n, checked) with `X`.
        let statuses = unsafe {
            let lu = sys::cusolverDnXgetrf(
                solver.handle,
                solver.params,
                n64,
                n64,
                ty,
                pa as *mut _,
                n64,
                pp as *mut _,
                ty,
                pw as *mut _,
                on_device,
                host.as_mut_ptr().cast(),
                on_host,
                pi as *mut _,
            );
            let solve = if lu == sys::cusolverStatus_t::CUSOLVER_STATUS_SUCCESS {
                sys::cusolverDnXgetrs(
                    solver.handle,
                    solver.params,
                    sys::cublasOperation_t::CUBLAS_OP_T,
                    n64,
                    r64,
                    ty,
                    pa as *const _,
                    n64,
                    pp as *const _,
                    ty,
                    pb as *mut _,
                    n64,
                    (pi as *mut i32).wrapping_add(1),
                )
            } else {
                lu
            };
            (lu, solve)
        };
        drop((_ra, _rb, _rw, _rp, _ri));
        if statuses.0 != sys::cusolverStatus_t::CUSOLVER_STATUS_SUCCESS {
            return Err(err(NAME, statuses.0).into());
        }
        if statuses.1 != sys::cusolverStatus_t::CUSOLVER_STATUS_SUCCESS {
            return Err(err("cusolverDnXgetrs", statuses.1).into());
        }
        self.recorded(&[], &[&*a, &*b])?;
        let codes = self.solver_info(&infos)?;
        drop((work, host, pivots));
        Ok(codes)
    }
}
