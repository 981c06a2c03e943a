//! CUDA benchmark (feature `cuda`): a lane against cudarc called directly
//! in the same process, printing medians and ratios (weft's speed over the
//! baseline's):
//!
//! - f32/f64 GEMM 4096 and 8192 through a lane vs cuBLAS (`CudaBlas::gemm`);
//! - per-op dispatch of a tiny elementwise kernel through a lane vs a raw
//!   launch of the same kernel (the difference, in µs per op);
//! - host↔device bandwidth of 256 MiB through a lane vs raw pinned copies.
//!
//! `cargo run --release -p weft-examples --features cuda --example cuda_bench`
//! (`--quick`: smaller sizes). Without a GPU it says so and exits.

#![deny(unsafe_code)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use cudarc::cublas::{CudaBlas, GemmConfig};
use cudarc::driver::{CudaContext, CudaStream, LaunchConfig, PushKernelArg};
use weft::{CudaEngine, DType, Lane, Place, Runtime, Tensor, TensorHandle};

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
            weft::SliceAxis {
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
    let a = cpu.transfer(
        &cpu.random(dtype, &[n, n], weft::Distribution::Uniform, 1)?,
        Place::Cuda(0),
    )?;
    let b = cpu.transfer(
        &cpu.random(dtype, &[n, n], weft::Distribution::Uniform, 2)?,
        Place::Cuda(0),
    )?;
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
    let cfg = |n: i32| GemmConfig {
        transa: cudarc::cublas::sys::cublasOperation_t::CUBLAS_OP_N,
        transb: cudarc::cublas::sys::cublasOperation_t::CUBLAS_OP_N,
        m: n,
        n,
        k: n,
        alpha: 1.0,
        lda: n,
        ldb: n,
        beta: 0.0,
        ldc: n,
    };
    let direct_t = match dtype {
        DType::F32 => {
            let (x, y) = (
                stream.alloc_zeros::<f32>(n * n)?,
                stream.alloc_zeros::<f32>(n * n)?,
            );
            let mut z = stream.alloc_zeros::<f32>(n * n)?;
            time(reps, || {
                for _ in 0..per {
                    raw::gemm(&blas, cfg(n as i32), &x, &y, &mut z)?;
                }
                Ok(stream.synchronize()?)
            })?
        }
        _ => {
            let (x, y) = (
                stream.alloc_zeros::<f64>(n * n)?,
                stream.alloc_zeros::<f64>(n * n)?,
            );
            let mut z = stream.alloc_zeros::<f64>(n * n)?;
            let cfg64 = |n: i32| GemmConfig {
                transa: cfg(n).transa,
                transb: cfg(n).transb,
                m: n,
                n,
                k: n,
                alpha: 1.0f64,
                lda: n,
                ldb: n,
                beta: 0.0f64,
                ldc: n,
            };
            time(reps, || {
                for _ in 0..per {
                    raw::gemm(&blas, cfg64(n as i32), &x, &y, &mut z)?;
                }
                Ok(stream.synchronize()?)
            })?
        }
    };
    let flops = 2.0 * (n as f64).powi(3) * per as f64;
    println!(
        "gemm {dtype} {n}: lane {:.1} TFLOP/s, cuBLAS direct {:.1} TFLOP/s, ratio {:.3} (goal >= 0.95)",
        flops / lane_t.as_secs_f64() / 1e12,
        flops / direct_t.as_secs_f64() / 1e12,
        direct_t.as_secs_f64() / lane_t.as_secs_f64()
    );
    Ok(())
}

fn dispatch(lane: &Lane<CudaEngine>, ctx: &Arc<CudaContext>, stream: &Arc<CudaStream>) -> Res<()> {
    let ops = 2000;
    let x = lane.ones(DType::F32, &[1])?;
    let lane_t = time(5, || {
        let mut y = x.clone();
        for _ in 0..ops {
            y = lane.add(&y, &x)?;
        }
        sync(lane, &y)
    })?;
    // The same kernel, launched raw on a stream of its own.
    let module = ctx.load_module(
        weft_engines::cuda::compile_kernels(DType::F32, Some(ctx.compute_capability()?))
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
    let up_t = time(5, || {
        let h = lane.upload(host.clone())?;
        sync(lane, &h)
    })?;
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
    let gbs = |d: Duration| bytes as f64 / d.as_secs_f64() / 1e9;
    println!(
        "host->device {} MiB: lane {:.1} GB/s, raw pinned {:.1} GB/s, ratio {:.3} (goal >= 0.9)",
        bytes >> 20,
        gbs(up_t),
        gbs(raw_up),
        raw_up.as_secs_f64() / up_t.as_secs_f64()
    );
    println!(
        "device->host {} MiB: lane {:.1} GB/s, raw pinned {:.1} GB/s, ratio {:.3} (goal >= 0.9)",
        bytes >> 20,
        gbs(down_t),
        gbs(raw_down),
        raw_down.as_secs_f64() / down_t.as_secs_f64()
    );
    Ok(())
}

fn main() -> Res<()> {
    let quick = std::env::args().any(|a| a == "--quick");
    match weft::cuda_devices() {
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
