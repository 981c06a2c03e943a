//! CUDA benchmark (feature `cuda`): a lane against cudarc called directly
//! in the same process, printing medians and ratios (weft's speed over the
//! baseline's):
//!
//! - f32/f64 GEMM 4096 and 8192 through a lane vs cuBLAS (`CudaBlas::gemm`)
//!   on the same values, with a new output per product as the lane makes
//!   (and, for reference, reusing one output);
//! - per-op dispatch of a one-element `binary_scalar` through a lane vs a
//!   raw launch of the same kernel (the difference, in µs per op);
//! - host↔device bandwidth of 256 MiB through a lane vs raw pinned and raw
//!   pageable copies (the uploaded tensors copied before the clock starts);
//! - the real types' unary maps as their cubecl kernels (the default) vs
//!   the source's switch kernel they replaced, on the same lane: 16 Mi
//!   elements (memory speed) and 1 element (dispatch), alternated.
//!
//! `cargo run --release -p weft-examples --features cuda --example cuda_bench`
//! (`--quick`: smaller sizes). Without a GPU it says so and exits.

#![deny(unsafe_code)]

use std::sync::Arc;
use std::time::{Duration, Instant};
use weft::ops::{CreateOps, ElementwiseOps, LinalgOps, StructuralOps, UnaryOp};

use cudarc::cublas::{CudaBlas, GemmConfig};
use cudarc::driver::{CudaContext, CudaStream, LaunchConfig, PushKernelArg};
use weft::{cuda::CudaEngine, DType, Lane, Place, Runtime, Tensor, TensorHandle};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

/// Median of `reps` timings of `f`, after one warm-up.
fn time(reps: usize, mut f: impl FnMut() -> Res<()>) -> Res<Duration> {
    f()?;
    let mut xs = Vec::with_capacity(reps);
    for _ in 0..reps {
        let t = Instant::now();
        f()?;
        xs.push(t.elapsed());
    }
    Ok(median(xs))
}

/// Waits until everything `lane` enqueued has run: a download syncs the
/// lane's stream.
fn sync(lane: &Lane<CudaEngine>, h: &TensorHandle) -> Res<()> {
    let one = lane.slice(
        h,
        &vec![
            weft::ops::SliceAxis {
                start: 0,
                stop: 1,
                step: 1
            };
            h.shape().len()
        ],
    )?;
    lane.download(&one)?.wait()?;
    Ok(())
}

fn gemm(
    rt: &Runtime,
    lane: &Lane<CudaEngine>,
    stream: &Arc<CudaStream>,
    n: usize,
    dtype: DType,
) -> Res<()> {
    let cpu = rt.lane(0)?;
    let (ha, hb) = (
        cpu.random(dtype, &[n, n], weft::ops::Distribution::Uniform, 1)?,
        cpu.random(dtype, &[n, n], weft::ops::Distribution::Uniform, 2)?,
    );
    let (a, b) = (
        cpu.transfer(&ha, Place::Cuda(0))?,
        cpu.transfer(&hb, Place::Cuda(0))?,
    );
    // The baseline multiplies the same values.
    let (ta, tb) = (cpu.download(&ha)?.wait()?, cpu.download(&hb)?.wait()?);
    let reps = 5;
    let per = 4;
    let lane_t = time(reps, || {
        let mut c = lane.matmul(&a, &b)?;
        for _ in 1..per {
            c = lane.matmul(&a, &b)?;
        }
        sync(lane, &c)
    })?;
    let blas = CudaBlas::new(stream.clone())?;
    let (reuse_t, fresh_t) = match dtype {
        DType::F32 => raw_gemms(
            &blas,
            stream,
            n,
            reps,
            per,
            ta.as_slice::<f32>()?,
            tb.as_slice::<f32>()?,
            1.0f32,
            0.0,
        )?,
        _ => raw_gemms(
            &blas,
            stream,
            n,
            reps,
            per,
            ta.as_slice::<f64>()?,
            tb.as_slice::<f64>()?,
            1.0f64,
            0.0,
        )?,
    };
    let flops = 2.0 * (n as f64).powi(3) * per as f64;
    let tflops = |d: Duration| flops / d.as_secs_f64() / 1e12;
    println!(
        "gemm {dtype} {n}: lane {:.1} TFLOP/s (a new output per product); cuBLAS direct {:.1} TFLOP/s \
         with a new output per product, ratio {:.3} (goal >= 0.95); {:.1} TFLOP/s reusing one output, ratio {:.3}",
        tflops(lane_t),
        tflops(fresh_t),
        fresh_t.as_secs_f64() / lane_t.as_secs_f64(),
        tflops(reuse_t),
        reuse_t.as_secs_f64() / lane_t.as_secs_f64()
    );
    Ok(())
}

/// cuBLAS on `x`, `y` (column-major n×n, the lane's values): `per`
/// products reusing one output, and `per` products each into a new one,
/// as the lane makes (median times of `reps`).
#[allow(clippy::too_many_arguments)]
fn raw_gemms<T>(
    blas: &CudaBlas,
    stream: &Arc<CudaStream>,
    n: usize,
    reps: usize,
    per: usize,
    x: &[T],
    y: &[T],
    one: T,
    zero: T,
) -> Res<(Duration, Duration)>
where
    T: cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits + Copy,
    CudaBlas: cudarc::cublas::Gemm<T>,
{
    let (x, y) = (stream.clone_htod(x)?, stream.clone_htod(y)?);
    let cfg = GemmConfig {
        transa: cudarc::cublas::sys::cublasOperation_t::CUBLAS_OP_N,
        transb: cudarc::cublas::sys::cublasOperation_t::CUBLAS_OP_N,
        m: n as i32,
        n: n as i32,
        k: n as i32,
        alpha: one,
        lda: n as i32,
        ldb: n as i32,
        beta: zero,
        ldc: n as i32,
    };
    let mut z = stream.alloc_zeros::<T>(n * n)?;
    let reuse = time(reps, || {
        for _ in 0..per {
            raw::gemm(blas, cfg, &x, &y, &mut z)?;
        }
        Ok(stream.synchronize()?)
    })?;
    let fresh = time(reps, || {
        for _ in 0..per {
            let mut z = raw::uninit::<T>(stream, n * n)?;
            raw::gemm(blas, cfg, &x, &y, &mut z)?;
        }
        Ok(stream.synchronize()?)
    })?;
    Ok((reuse, fresh))
}

fn dispatch(lane: &Lane<CudaEngine>, ctx: &Arc<CudaContext>, stream: &Arc<CudaStream>) -> Res<()> {
    let ops = 2000;
    let x = lane.ones(DType::F32, &[1])?;
    // The kernel the baseline launches: `binary_scalar`.
    let lane_t = time(5, || {
        let mut y = x.clone();
        for _ in 0..ops {
            y = lane.binary_scalar(weft::ops::BinaryOp::Add, &y, weft::Scalar::Real(1.0))?;
        }
        sync(lane, &y)
    })?;
    // The same kernel, launched raw on a stream of its own.
    let module = ctx.load_module(
        weft_cuda::compile_kernels(DType::F32, Some(ctx.compute_capability()?))
            .map_err(|e| e.to_string())?,
    )?;
    let f = module.load_function("binary_scalar_f32")?;
    let buf = stream.alloc_zeros::<f32>(1)?;
    let out = stream.alloc_zeros::<f32>(1)?;
    let (re, im, op, first, n) = (1.0f64, 0.0f64, 0i32, 0i32, 1i64);
    let cfg = LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    };
    let raw_t = time(5, || {
        for _ in 0..ops {
            let mut launch = stream.launch_builder(&f);
            launch
                .arg(&out)
                .arg(&buf)
                .arg(&re)
                .arg(&im)
                .arg(&op)
                .arg(&first)
                .arg(&n);
            raw::launch_one_element(launch, cfg)?;
        }
        Ok(stream.synchronize()?)
    })?;
    let per = |d: Duration| d.as_secs_f64() * 1e6 / ops as f64;
    println!(
        "dispatch of a 1-element add: lane {:.2} µs/op, raw launch {:.2} µs/op, {:.2} µs above (goal <= 5)",
        per(lane_t),
        per(raw_t),
        per(lane_t) - per(raw_t)
    );
    // What the engine asks of the driver per op (the one sync at the end
    // spread over the ops).
    let calls = || -> Res<weft::cuda::DriverCalls> {
        Ok(lane.run(|e: &mut CudaEngine| e.driver_calls())?.wait()?)
    };
    let before = calls()?;
    let mut y = x.clone();
    for _ in 0..ops {
        y = lane.binary_scalar(weft::ops::BinaryOp::Add, &y, weft::Scalar::Real(1.0))?;
    }
    sync(lane, &y)?;
    drop(y);
    let c = calls()?.since(&before);
    let each = |n: u64| n as f64 / ops as f64;
    println!(
        "driver calls per op: {:.2} ({:.2} enqueued, {:.2} event records, {:.2} event waits, \
         {:.2} allocations, {:.2} frees, {:.3} events created, {:.3} host copies, {:.3} syncs)",
        each(c.total()),
        each(c.enqueued),
        each(c.event_records),
        each(c.event_waits),
        each(c.allocs),
        each(c.frees),
        each(c.events_created),
        each(c.host_copies),
        each(c.syncs)
    );
    Ok(())
}

/// The unary maps: cubecl's kernels against the source's, alternated on
/// one lane (`CudaEngine::use_source_maps`); a ratio above 1 is cubecl's
/// kernel faster.
fn maps(lane: &Lane<CudaEngine>, n: usize) -> Res<()> {
    let source = |on: bool| -> Res<()> {
        Ok(lane
            .run(move |e: &mut CudaEngine| e.use_source_maps(on))?
            .wait()?)
    };
    for dtype in [DType::F32, DType::F64] {
        for op in [UnaryOp::Neg, UnaryOp::Sqrt, UnaryOp::Tanh, UnaryOp::Expm1] {
            for (elements, chain) in [(n, 10), (1, 1000)] {
                let x = lane.full(dtype, &[elements], weft::Scalar::Real(1e-3))?;
                let run = || -> Res<()> {
                    let mut y = x.clone();
                    for _ in 0..chain {
                        y = lane.unary(op, &y)?;
                    }
                    sync(lane, &y)
                };
                let (mut cube, mut src) = (Vec::new(), Vec::new());
                for _ in 0..3 {
                    source(true)?;
                    src.push(time(3, run)?);
                    source(false)?;
                    cube.push(time(3, run)?);
                }
                let (cube, src) = (median(cube), median(src));
                let per = |d: Duration| d.as_secs_f64() * 1e6 / chain as f64;
                let rate = |d: Duration| {
                    (2 * elements * dtype.size()) as f64 * chain as f64 / d.as_secs_f64() / 1e9
                };
                println!(
                    "unary {} {dtype} x{elements}: cubecl {:.2} µs/op ({:.0} GB/s), source {:.2} µs/op ({:.0} GB/s), cubecl/source speed {:.3} (goal >= 0.95)",
                    op.name(),
                    per(cube),
                    rate(cube),
                    per(src),
                    rate(src),
                    src.as_secs_f64() / cube.as_secs_f64()
                );
            }
        }
    }
    Ok(())
}

fn bandwidth(
    lane: &Lane<CudaEngine>,
    ctx: &Arc<CudaContext>,
    stream: &Arc<CudaStream>,
    bytes: usize,
) -> Res<()> {
    let n = bytes / 4;
    let host = Tensor::from_vec(vec![1.5f32; n], &[n])?;
    // Copies made before the clock starts: an upload takes its tensor.
    let reps = 5;
    let mut copies: Vec<Tensor> = (0..=reps).map(|_| host.clone()).collect();
    let up_t = time(reps, || {
        let h = lane.upload(copies.pop().ok_or("a copy per repetition")?)?;
        sync(lane, &h)
    })?;
    drop(copies);
    let on = lane.upload(host.clone())?;
    let down_t = time(5, || {
        lane.download(&on)?.wait()?;
        Ok(())
    })?;
    let mut pinned = raw::pinned_filled(ctx, n, 1.5)?;
    let mut dev = stream.alloc_zeros::<f32>(n)?;
    let raw_up = time(5, || {
        stream.memcpy_htod(&pinned, &mut dev)?;
        Ok(stream.synchronize()?)
    })?;
    let raw_down = time(5, || {
        stream.memcpy_dtoh(&dev, &mut pinned)?;
        Ok(stream.synchronize()?)
    })?;
    // Pageable host memory, as a plain `Vec` is: what a lane's caller has.
    let mut pageable = vec![1.5f32; n];
    let page_up = time(5, || {
        stream.memcpy_htod(&pageable, &mut dev)?;
        Ok(stream.synchronize()?)
    })?;
    let page_down = time(5, || {
        stream.memcpy_dtoh(&dev, &mut pageable)?;
        Ok(stream.synchronize()?)
    })?;
    // The floor of a download on the host alone: a new tensor of the same
    // bytes (its allocation, page faults, copy and free), as a clone.
    let clone_t = time(5, || {
        drop(std::hint::black_box(host.clone()));
        Ok(())
    })?;
    let gbs = |d: Duration| bytes as f64 / d.as_secs_f64() / 1e9;
    println!(
        "host clone {} MiB (a new tensor's allocation, faults and copy): {:.1} GB/s; \
         the lane's download takes {:.2}x that",
        bytes >> 20,
        gbs(clone_t),
        down_t.as_secs_f64() / clone_t.as_secs_f64()
    );
    for (way, lane_t, pinned_t, page_t) in [
        ("host->device", up_t, raw_up, page_up),
        ("device->host", down_t, raw_down, page_down),
    ] {
        println!(
            "{way} {} MiB: lane {:.1} GB/s; raw pinned {:.1} GB/s, ratio {:.3} (goal >= 0.9); \
             raw pageable {:.1} GB/s, ratio {:.3}",
            bytes >> 20,
            gbs(lane_t),
            gbs(pinned_t),
            pinned_t.as_secs_f64() / lane_t.as_secs_f64(),
            gbs(page_t),
            page_t.as_secs_f64() / lane_t.as_secs_f64()
        );
    }
    Ok(())
}

fn main() -> Res<()> {
    let quick = std::env::args().any(|a| a == "--quick");
    match weft::topology::cuda_devices() {
        Ok(d) if !d.is_empty() => {}
        Ok(_) => {
            println!("skipped: no CUDA device");
            return Ok(());
        }
        Err(reason) => {
            println!("skipped: {reason}");
            return Ok(());
        }
    }
    let rt = Runtime::builder().cuda_devices([0]).build()?;
    let lane = rt.cuda_lane(0)?;
    let ctx = CudaContext::new(0)?;
    let stream = ctx.new_stream()?;
    let sizes: &[usize] = if quick { &[1024] } else { &[4096, 8192] };
    for &n in sizes {
        for dtype in [DType::F32, DType::F64] {
            gemm(&rt, &lane, &stream, n, dtype)?;
        }
    }
    dispatch(&lane, &ctx, &stream)?;
    maps(&lane, if quick { 1 << 20 } else { 16 << 20 })?;
    bandwidth(
        &lane,
        &ctx,
        &stream,
        if quick { 16 << 20 } else { 256 << 20 },
    )?;
    rt.shutdown()?;
    Ok(())
}

/// The raw baseline's calls into cudarc that are `unsafe`: the only place
/// of this benchmark that may hold any.
#[allow(unsafe_code)]
mod raw {
    use std::sync::Arc;

    use cudarc::cublas::{CudaBlas, Gemm, GemmConfig};
    use cudarc::driver::{
        CudaContext, CudaSlice, DriverError, LaunchArgs, LaunchConfig, PinnedHostSlice,
    };

    /// One cuBLAS GEMM of column-major `n×n` operands, `n` as `cfg` says.
    pub(super) fn gemm<T>(
        blas: &CudaBlas,
        cfg: GemmConfig<T>,
        x: &CudaSlice<T>,
        y: &CudaSlice<T>,
        z: &mut CudaSlice<T>,
    ) -> Result<(), cudarc::cublas::result::CublasError>
    where
        CudaBlas: Gemm<T>,
    {
        let n = usize::try_from(cfg.n).unwrap_or(0);
        assert!(
            cfg.m == cfg.n
                && cfg.k == cfg.n
                && [x.len(), y.len(), z.len()].iter().all(|&l| l >= n * n),
            "the baseline multiplies n×n buffers"
        );
        // SAFETY: three buffers of at least n×n elements (checked above),
        // square column-major operands with leading dimension n.
        unsafe { blas.gemm(cfg, x, y, z) }
    }

    /// `len` uninitialized elements, which the next GEMM overwrites.
    pub(super) fn uninit<T: cudarc::driver::DeviceRepr>(
        stream: &Arc<cudarc::driver::CudaStream>,
        len: usize,
    ) -> Result<CudaSlice<T>, DriverError> {
        // SAFETY: the only caller writes every element (a GEMM with
        // beta = 0 into all n×n) before anything reads them.
        unsafe { stream.alloc::<T>(len) }
    }

    /// Launches a kernel whose arguments the caller pushed, over one element.
    pub(super) fn launch_one_element(
        mut launch: LaunchArgs<'_>,
        cfg: LaunchConfig,
    ) -> Result<(), DriverError> {
        // SAFETY: the caller pushes binary_scalar_f32's arguments (float*,
        // const float*, double, double, int, int, long long) with n = 1,
        // over buffers of one element each.
        unsafe { launch.launch(cfg) }.map(drop)
    }

    /// Pinned host memory of `n` elements, all `value`.
    pub(super) fn pinned_filled(
        ctx: &Arc<CudaContext>,
        n: usize,
        value: f32,
    ) -> Result<PinnedHostSlice<f32>, DriverError> {
        // SAFETY: the memory is uninitialized; it is filled here before
        // anything reads it.
        let mut pinned = unsafe { ctx.alloc_pinned::<f32>(n) }?;
        pinned.as_mut_slice()?.fill(value);
        Ok(pinned)
    }
}
