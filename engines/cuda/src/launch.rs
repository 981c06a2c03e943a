//! Kernel launches: the [`Launcher`] a lane's op launches the engine's own
//! kernels through, and the driver's presence. With `nvrtc`, `cublas`,
//! `cusolver` and `memory`, one file per library, it holds every `unsafe`
//! of the CUDA engine.
//!
//! Each launch takes its buffers as [`DeviceTensor`]s and checks, before
//! the launch, what the kernel's signature and walk need of them: the
//! function is the kernel of that name for the operands' element type
//! (fetched here, by [`Kernel`]), the element types match the signature,
//! and every offset a walk reaches lies inside its buffer. A launch that
//! fails a check is refused with a [`DeviceError`] naming it, so the
//! `unsafe` blocks rest on checks made in this file (and, for the library
//! calls of `cublas` and `cusolver`, in theirs). Every launch of a source
//! kernel then takes one path, [`Launcher::enqueue`]: order after the
//! operands' earlier accesses, fetch the kernel, push and launch, record
//! the access. A cubecl kernel (`cube/`: a user's, or a ported map) takes
//! the same steps in [`Launcher::cube`], for any number of outputs, its
//! arguments checked against the parameters read back from its source.

use std::sync::Arc;

use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, DeviceRepr, DriverError, LaunchConfig, PushKernelArg,
};

use super::access::Kind;
use super::cube::{CubeError, CubeKey, CubeSource};
use super::kernels::{self, Dims, Kernel, KernelError, Kernels, Targets};
use super::streams::Stream;
use super::{device_error, DeviceTensor};
use weft_core::ops::UnaryOp;
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
    pub(super) fn err(&self, call: &'static str) -> impl Fn(DriverError) -> ExecError + '_ {
        move |e| device_error(self.device, call, e).into()
    }

    /// Refuses a launch whose operands do not fit its kernel.
    pub(super) fn require(
        &self,
        ok: bool,
        kernel: &'static str,
        what: &str,
    ) -> Result<(), ExecError> {
        if ok {
            return Ok(());
        }
        Err(self.refused(kernel, what))
    }

    /// A launch refused before it reached the device.
    pub(super) fn refused(&self, kernel: &'static str, what: &str) -> ExecError {
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
    pub(super) fn function(
        &mut self,
        dtype: DType,
        kernel: Kernel,
    ) -> Result<CudaFunction, ExecError> {
        self.require(
            Kernel::of(dtype).contains(&kernel),
            kernel.name(),
            "a kernel of this element type",
        )?;
        self.kernels
            .get(self.ctx, self.arch, dtype, kernel)
            .map_err(|e| self.unavailable(e))
    }

    /// The error of a kernel that could not be had, naming the call.
    fn unavailable(&self, e: KernelError) -> ExecError {
        let (call, message) = match e {
            KernelError::NoNvrtc => ("loading libnvrtc", "NVRTC cannot be loaded".to_owned()),
            KernelError::Cube(e) => ("cubecl", e.to_string()),
            KernelError::Compile(log) => ("nvrtcCompileProgram", log),
            KernelError::Load(m) => ("cuModuleLoadData", m),
        };
        ExecError::Device(DeviceError {
            device: self.device,
            call,
            message,
            out_of_memory: false,
        })
    }

    /// Launches the cubecl kernel `key` (compiled from `source` on first
    /// use) on `reads` and `outs` (its buffers, in that order) and
    /// `scalars`: one thread per element of the largest output, in blocks
    /// of the kernel's `cube_dim`, ordered and recorded as every launch.
    pub(super) fn cube(
        &mut self,
        key: CubeKey,
        source: impl FnOnce() -> Result<Arc<CubeSource>, CubeError>,
        reads: &[&DeviceTensor],
        outs: &mut [DeviceTensor],
        scalars: &[f64],
    ) -> Result<(), ExecError> {
        const NAME: &str = "cuLaunchKernel (cubecl)";
        let dtype = key.1;
        let (f, info, cube_dim) = self
            .kernels
            .cube(self.ctx, self.arch, key, source)
            .map_err(|e| self.unavailable(e))?;
        let every = reads.iter().copied().chain(outs.iter());
        self.require(
            every.clone().all(|t| t.dtype == dtype),
            NAME,
            "an operand of another element type",
        )?;
        self.require(
            info.buffers == reads.len() + outs.len(),
            NAME,
            "the kernel takes another number of buffers",
        )?;
        let lengths: Vec<usize> = every.map(DeviceTensor::len).collect();
        let block = info
            .block(scalars, &lengths)
            .map_err(|why| self.refused(NAME, &why))?;
        self.require(
            super::cube::empty_array(&lengths, reads.len()).is_none(),
            NAME,
            "an empty array in a launch that runs threads",
        )?;
        let threads = outs.iter().map(DeviceTensor::len).max().unwrap_or(0);
        if threads == 0 {
            return Ok(());
        }
        let blocks = threads.div_ceil(cube_dim as usize);
        self.require(
            u32::try_from(blocks).is_ok_and(|b| b <= i32::MAX as u32),
            NAME,
            "more blocks than a grid holds",
        )?;
        let writes: Vec<&DeviceTensor> = outs.iter().collect();
        self.order(reads, &writes)?;
        drop(writes);
        let config = LaunchConfig {
            grid_dim: (blocks as u32, 1, 1),
            block_dim: (cube_dim, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut launch = self.stream.launch_builder(&f);
        for r in reads {
            launch.arg(&*r.buf);
        }
        for o in outs.iter_mut() {
            launch.arg(&mut *o.buf);
        }
        if let Some(first) = block.first() {
            launch.arg(first);
        }
        // SAFETY: the kernel's parameters were read back from its source
        // (`InfoLayout::of_source`): `info.buffers` element pointers, one
        // per operand pushed (checked), every operand of the element type
        // it was compiled for (checked), then `info_st` by value, whose
        // bytes `block` holds in cubecl's layout (the driver copies the
        // parameter's size from the first word's address; `block` holds
        // the whole struct, scalars and every buffer's length, so the
        // kernel's checked indexing keeps each access inside its buffer,
        // every buffer holding an element (checked: a checked read loads
        // the last one).
        // One thread per element of the largest output, in blocks of the
        // `cube_dim` the kernel was compiled for.
        unsafe { launch.launch(config) }.map_err(self.err(NAME))?;
        drop(launch);
        let writes: Vec<&DeviceTensor> = outs.iter().collect();
        self.recorded(reads, &writes)
    }

    /// Enqueues a launch whose operands passed the caller's checks: orders
    /// it after the accesses its operands must follow (`reads`, and `out`,
    /// which it writes), fetches `kernel` of `dtype`, lets `launch` push the
    /// arguments and launch (its `unsafe` argued, at the call, by those
    /// checks) and records the launch as an access of its operands. Every
    /// launch of the engine's own kernels goes through here.
    fn enqueue(
        &mut self,
        name: &'static str,
        (kernel, dtype): (Kernel, DType),
        reads: &[&DeviceTensor],
        out: &mut DeviceTensor,
        launch: impl FnOnce(&Stream, &CudaFunction, &mut DeviceTensor) -> Result<(), DriverError>,
    ) -> Result<(), ExecError> {
        self.order(reads, &[&*out])?;
        let f = self.function(dtype, kernel)?;
        launch(self.stream, &f, out).map_err(self.err(name))?;
        self.recorded(reads, &[&*out])
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
        let kernel = (Kernel::StridedCopy, src.dtype);
        self.enqueue(NAME, kernel, &[src], dst, |stream, f, dst| {
            let mut launch = stream.launch_builder(f);
            launch.arg(&mut *dst.buf).arg(&*src.buf).arg(dims);
            // SAFETY: `strided_copy` takes (T*, const T*, Dims), and both
            // buffers hold `T` elements (checked); every offset the walk
            // reaches lies inside its buffer (checked).
            unsafe { launch.launch(kernels::elementwise(dims.len())) }.map(drop)
        })
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
        let [p, m, q, e] = [pre, at.len(), post, extent].map(|v| v as i64);
        self.enqueue(
            NAME,
            (Kernel::Take, x.dtype),
            &[x],
            out,
            |stream, f, out| {
                let threads = out.len();
                let mut launch = stream.launch_builder(f);
                launch
                    .arg(&mut *out.buf)
                    .arg(&*x.buf)
                    .arg(&positions)
                    .arg(&p)
                    .arg(&m)
                    .arg(&q)
                    .arg(&e);
                // SAFETY: `take` takes (T*, const T*, const long long*, long
                // long ×4), as pushed; both tensors hold `T` elements (checked);
                // the output holds `pre·m·post` of them and the source at least
                // `pre·extent·post` (checked), every position is below `extent`
                // (checked before the upload), and `positions` holds all `m`.
                unsafe { launch.launch(kernels::elementwise(threads)) }.map(drop)
            },
        )
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
        let [p, u64_, n64, q, e] = [pre, u, n, post, extent].map(|v| v as i64);
        let add = i32::from(add);
        let kernel = (Kernel::Put, out.dtype);
        self.enqueue(NAME, kernel, &[updates], out, |stream, f, out| {
            let mut launch = stream.launch_builder(f);
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
            // SAFETY: `put` takes (T*, const T*, const long long*, long
            // long ×5, int), as pushed; both tensors hold `T` elements
            // (checked); `plan` holds the `u` targets, `u + 1` offsets and
            // `n` update positions, sound (checked: targets below `extent`,
            // offsets rising from 0 to `n` by at least one, positions below
            // `n`), and every element reached lies inside `out`
            // (`pre·extent·post`) and `updates` (at least `pre·n·post`),
            // both checked. One thread per (p, target, q) writes each
            // element at most once.
            unsafe { launch.launch(kernels::elementwise(threads)) }.map(drop)
        })
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
        self.enqueue(name, (kernel, a.dtype), &[a, b], out, |stream, f, out| {
            let mut launch = stream.launch_builder(f);
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
            unsafe { launch.launch(kernels::elementwise(dims.len())) }.map(drop)
        })
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
        let first = i32::from(scalar_first);
        let kernel = (Kernel::BinaryScalar, a.dtype);
        self.enqueue(NAME, kernel, &[a], out, |stream, f, out| {
            let mut launch = stream.launch_builder(f);
            launch
                .arg(&mut *out.buf)
                .arg(&*a.buf)
                .arg(&re)
                .arg(&im)
                .arg(&op)
                .arg(&first)
                .arg(&n);
            // SAFETY: `binary_scalar` takes (T*, const T*, double, double,
            // int, int, long long) and touches `n` elements of each buffer;
            // both hold `n` elements of `T` (checked).
            unsafe { launch.launch(kernels::elementwise(a.len())) }.map(drop)
        })
    }

    /// `out[i] = f(a[i])`; `out` of the real type takes `|a[i]|`.
    pub(super) fn unary(
        &mut self,
        out: &mut DeviceTensor,
        a: &DeviceTensor,
        unary: UnaryOp,
    ) -> Result<(), ExecError> {
        let op = super::codes::unary(unary);
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
        // The real types' maps are cubecl kernels, one per op (`cube/maps.rs`).
        let ported = match a.dtype {
            DType::F32 | DType::F64 if !magnitude && !self.kernels.source_maps => {
                super::cube::unary_kernel(unary)
            }
            _ => None,
        };
        if let Some(map) = ported {
            let source = || (map.source)(a.dtype);
            return self.cube(
                (map.key)(a.dtype),
                source,
                &[a],
                std::slice::from_mut(out),
                &[],
            );
        }
        let kernel = if magnitude {
            Kernel::Magnitude
        } else {
            Kernel::Unary
        };
        self.enqueue(NAME, (kernel, a.dtype), &[a], out, |stream, f, out| {
            let mut launch = stream.launch_builder(f);
            launch.arg(&mut *out.buf).arg(&*a.buf);
            if !magnitude {
                launch.arg(&op);
            }
            launch.arg(&n);
            // SAFETY: `unary` takes (T*, const T*, int, long long) and
            // `magnitude` (R*, const T*, long long), picked by the output's
            // type (checked: T, or R for magnitude); both buffers hold `n`
            // elements.
            unsafe { launch.launch(kernels::elementwise(a.len())) }.map(drop)
        })
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
        let kernel = (Kernel::Select, a.dtype);
        self.enqueue(NAME, kernel, &[mask, a, b], out, |stream, f, out| {
            let mut launch = stream.launch_builder(f);
            launch
                .arg(&mut *out.buf)
                .arg(&*mask.buf)
                .arg(&*a.buf)
                .arg(&*b.buf)
                .arg(dims);
            // SAFETY: `select` takes (T*, const unsigned char*, const T*,
            // const T*, Dims); the output and sources hold `T` elements, the
            // mask bytes, and each walk stays inside its operand (all
            // checked).
            unsafe { launch.launch(kernels::elementwise(dims.len())) }.map(drop)
        })
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
        self.enqueue(NAME, (kernel, a.dtype), &[a], out, |stream, f, out| {
            let mut launch = stream.launch_builder(f);
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
            // SAFETY: `clamp` takes (T*, const T*, double, double, long
            // long), `triangle` (T*, const T*, long long, long long, long
            // long, int, long long) and `cast_<u>` (U*, const T*, long
            // long), as pushed for each; both buffers hold `n` elements, the
            // input of `T` and the output of `T` or, for a conversion, of
            // the type the kernel's name gives (all checked); a triangle's
            // index arithmetic stays inside its matrices, which tile the
            // input (checked).
            unsafe { launch.launch(kernels::elementwise(a.len())) }.map(drop)
        })
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
        let (r, l, p) = (rows as i64, len as i64, parts as i64);
        let width = kernels::segment_width(len.div_ceil(parts));
        self.enqueue(NAME, (kernel, src.dtype), &[src], out, |stream, f, out| {
            let mut launch = stream.launch_builder(f);
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
            // SAFETY: `reduce` takes (T*, const T*, long long, long long,
            // long long, int, int, double), `norm` (R*, const T*, long long,
            // long long, long long, int, int, int) and `arg_reduce` (long
            // long*, const T*, long long, long long, long long, int, int),
            // as pushed for each; the source holds `rows·len` elements of
            // `T` (`len ≥ 1` for `arg_reduce`, which reads the first) and
            // the output `rows·parts` of its type (all checked); `width`
            // divides the block (`kernels::rows` launches REDUCE_THREADS
            // threads), as the kernels' lanes need.
            unsafe { launch.launch(kernels::rows(rows * parts, width)) }.map(drop)
        })
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
        let (rows, cols) = match (what, &out.shape[..]) {
            (Create::Eye, &[r, c]) => (r as i64, c as i64),
            (Create::Eye, _) => {
                return self.require(false, NAME, "an identity of a non-matrix shape")
            }
            _ => (0, 0),
        };
        self.enqueue(NAME, (kernel, out.dtype), &[], out, |stream, f, out| {
            let mut launch = stream.launch_builder(f);
            launch.arg(&mut *out.buf);
            let (x, y);
            let (first, by);
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
                    launch.arg(&rows).arg(&cols);
                }
            }
            // SAFETY: `fill` and `arange` take (T*, double, double, long
            // long), `fill_int` (T*, long long, long long) and `arange_int`
            // (T*, long long, long long, long long), and write `n` elements;
            // `eye` takes (T*, long long, long long) and writes `rows·cols =
            // n` (the output's shape, checked to be a matrix). The buffer
            // holds `n` elements of `T`, its own type.
            unsafe { launch.launch(kernels::elementwise(n as usize)) }.map(drop)
        })
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
