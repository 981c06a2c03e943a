//! The CUDA engine (feature `cuda`), with its own harness: a check that
//! needs a GPU prints `skipped: <reason>` on a machine without one and is
//! not counted as passed.
//!
//! `cargo test --release -p weft-tests --features cuda --test cuda_engine`
//!
//! Every device op is checked against the CPU engine on the same random
//! inputs (moved to the device by transfers): f32 and c32 within 1e-4
//! relative, f64 and c64 within 1e-10 (GEMM sums of `k` products: `k`
//! times that). Without a GPU, the kernels' source is still compiled by
//! NVRTC when its library can be loaded (`LD_LIBRARY_PATH`).

use std::process::ExitCode;
use weft::ops::{CreateOps, ElementwiseOps};

use weft::{
    cuda::CudaEngine,
    error::CudaUnavailable,
    ops::{BinaryOp, CmpOp, Distribution, MatOp, ReduceOp, SliceAxis, UnaryOp},
    tensor::Data,
    BuildError, DType, Lane, Place, Runtime, RuntimeError, Scalar, Tensor, TensorHandle,
};
use weft_tests::{check, run_checks, wait_ok, Check, Outcome};

const DTYPES: [DType; 4] = [DType::F32, DType::F64, DType::C32, DType::C64];

/// The kernels' CUDA source compiles for every element type (for Hopper
/// and for NVRTC's default target). Needs only NVRTC, not a device.
fn kernels_compile() -> Result<Outcome, String> {
    if !weft_cuda::nvrtc_present() {
        return Ok(Outcome::Skipped(
            "NVRTC cannot be loaded (as libnvrtc.so, or .so.12 down to .so.9): put a CUDA 12 lib \
             folder on LD_LIBRARY_PATH, or a CUDA 13 one with a libnvrtc.so link to its \
             libnvrtc.so.13 (scripts/gpu-check.sh run makes the links)"
                .into(),
        ));
    }
    for dtype in DType::ALL {
        for arch in [Some((9, 0)), None] {
            let ptx =
                weft_cuda::compile_kernels(dtype, arch).map_err(|log| format!("{dtype}: {log}"))?;
            let text = ptx.to_src();
            // Every kernel the engine loads for the type, and no other.
            let names = weft_cuda::kernel_names(dtype);
            for name in &names {
                let entry = format!(".entry {name}_{dtype}(");
                check(text.contains(&entry), format!("{dtype}: no {entry}"))?;
            }
            let entries = text.matches(".entry ").count();
            check(
                entries == names.len(),
                format!("{dtype}: {entries} entries, {} kernels loaded", names.len()),
            )?;
        }
    }
    // And as a cubin for Hopper, where this NVRTC targets it: an ELF image.
    if weft_cuda::nvrtc_architectures().contains(&90) {
        for dtype in DType::ALL {
            let cubin = weft_cuda::compile_kernels_cubin(dtype, 90)
                .map_err(|log| format!("{dtype} cubin: {log}"))?;
            check(
                cubin.starts_with(b"\x7fELF"),
                format!("{dtype}: the cubin is not an ELF image"),
            )?;
        }
    }
    Ok(Outcome::Passed)
}

/// Asking for a device the machine does not have is a typed error, never a
/// panic; a lane into a device the runtime does not run names the ones it does.
fn missing_devices_are_typed_errors() -> Result<Outcome, String> {
    let rt = Runtime::builder()
        .split(1)
        .build()
        .map_err(|e| e.to_string())?;
    match rt.cuda_lane(0) {
        Err(RuntimeError::NoSuchDevice { device: 0, running }) if running.is_empty() => {}
        other => return Err(format!("cuda_lane on a CPU-only runtime: {other:?}")),
    }
    let lane = rt.lane(0).map_err(|e| e.to_string())?;
    let x = lane.zeros(DType::F32, &[3]).map_err(|e| e.to_string())?;
    match lane.transfer(&x, Place::Cuda(0)) {
        Err(weft::OpError::NoSuchDevice { device: 0, running }) if running.is_empty() => {}
        other => return Err(format!("transfer to a device the runtime lacks: {other:?}")),
    }
    let present = weft::topology::cuda_devices().map(|d| d.len()).unwrap_or(0);
    let wanted = present + 7;
    match Runtime::builder().split(1).cuda_devices([wanted]).build() {
        Err(BuildError::Cuda(reason)) => {
            let typed = matches!(
                reason,
                CudaUnavailable::NoDriver
                    | CudaUnavailable::NoDevice
                    | CudaUnavailable::Driver { .. }
            ) || matches!(reason, CudaUnavailable::NoSuchDevice { ordinal, .. } if ordinal == wanted);
            check(typed, format!("{reason:?}"))?;
            check(
                reason.to_string().starts_with("CUDA unavailable"),
                reason.to_string(),
            )?;
        }
        other => return Err(format!("device {wanted}: {other:?}")),
    }
    if present == 0 {
        match Runtime::builder().split(1).cuda().build() {
            Err(BuildError::Cuda(_)) => {}
            other => return Err(format!("cuda() without a device: {other:?}")),
        }
    }
    Ok(Outcome::Passed)
}

/// A runtime with one CPU domain and CUDA device 0, or the reason there is none.
fn gpu_runtime() -> Result<Result<Runtime, String>, String> {
    match weft::topology::cuda_devices() {
        Err(reason) => return Ok(Err(reason.to_string())),
        Ok(devices) if devices.is_empty() => return Ok(Err("no CUDA device".into())),
        Ok(_) => {}
    }
    Runtime::builder()
        .split(1)
        .cuda_devices([0])
        .build()
        .map(Ok)
        .map_err(|e| e.to_string())
}

/// Runs `body` with a CPU lane and a GPU lane, or skips saying why.
fn with_gpu(
    body: impl FnOnce(&Runtime, &Lane, &Lane<CudaEngine>) -> Result<(), String>,
) -> Result<Outcome, String> {
    let rt = match gpu_runtime()? {
        Ok(rt) => rt,
        Err(reason) => return Ok(Outcome::Skipped(reason)),
    };
    let cpu = rt.lane(0).map_err(|e| e.to_string())?;
    let gpu = rt.cuda_lane(0).map_err(|e| e.to_string())?;
    body(&rt, &cpu, &gpu)?;
    rt.shutdown().map_err(|e| e.to_string())?;
    Ok(Outcome::Passed)
}

/// The elements as f64s (complex: re, im interleaved).
fn flat(t: &Tensor) -> Vec<f64> {
    match t.data() {
        Data::F32(v) => v.iter().map(|&x| f64::from(x)).collect(),
        Data::F64(v) => v.clone(),
        Data::C32(v) => v
            .iter()
            .flat_map(|z| [f64::from(z.re), f64::from(z.im)])
            .collect(),
        Data::C64(v) => v.iter().flat_map(|z| [z.re, z.im]).collect(),
        Data::I32(v) => v.iter().map(|&x| f64::from(x)).collect(),
        Data::I64(v) => v.iter().map(|&x| x as f64).collect(),
        Data::Bool(v) => v.iter().map(|&x| f64::from(u8::from(x))).collect(),
    }
}

fn tolerance(dtype: DType) -> f64 {
    match dtype {
        DType::F32 | DType::C32 => 1e-4,
        DType::F64 | DType::C64 => 1e-10,
        DType::I32 | DType::I64 | DType::Bool => 0.0,
    }
}

/// `got` matches `want` in type, shape and values within `tol` (relative,
/// absolute below 1; NaNs must match NaNs).
fn close(what: &str, got: &Tensor, want: &Tensor, tol: f64) -> Result<(), String> {
    check(
        got.dtype() == want.dtype() && got.shape() == want.shape(),
        format!(
            "{what}: {}{:?} against {}{:?}",
            got.dtype(),
            got.shape(),
            want.dtype(),
            want.shape()
        ),
    )?;
    for (i, (g, w)) in flat(got).into_iter().zip(flat(want)).enumerate() {
        let ok = (g.is_nan() && w.is_nan()) || g == w || (g - w).abs() <= tol * w.abs().max(1.0);
        check(ok, format!("{what}: element {i}: {g} against {w}"))?;
    }
    Ok(())
}

fn download<E: weft::TensorEngine>(lane: &Lane<E>, h: &TensorHandle) -> Result<Tensor, String> {
    lane.download(h)
        .map_err(|e| e.to_string())?
        .wait()
        .map_err(|e| e.to_string())
}

/// Runs the same op on both lanes (the inputs made on the CPU and moved to
/// the device) and compares the results.
macro_rules! same {
    ($what:expr, $tol:expr, $cpu:expr, $gpu:expr, $inputs:expr, |$l:ident, $x:ident| $body:expr) => {{
        let inputs: &[TensorHandle] = $inputs;
        let on_gpu = inputs
            .iter()
            .map(|h| $cpu.transfer(h, Place::Cuda(0)))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("{}: transfer: {e}", $what))?;
        let want = {
            let ($l, $x) = ($cpu, inputs);
            $body
        }
        .map_err(|e| format!("{} on the CPU: {e}", $what))?;
        let got = {
            let ($l, $x) = ($gpu, &on_gpu[..]);
            $body
        }
        .map_err(|e| format!("{} on the GPU: {e}", $what))?;
        close(
            &$what,
            &download($gpu, &got)?,
            &download($cpu, &want)?,
            $tol,
        )?;
    }};
}

fn random(cpu: &Lane, dtype: DType, shape: &[usize], seed: u64) -> Result<TensorHandle, String> {
    cpu.random(dtype, shape, Distribution::Uniform, seed)
        .map_err(|e| e.to_string())
}

/// Inputs inside log's and sqrt's domain, away from the branch cut: real
/// `|x| + 0.5`, complex `x + 2.5`.
fn positive(cpu: &Lane, x: &TensorHandle) -> Result<TensorHandle, String> {
    let base = if x.dtype().is_complex() {
        x.clone()
    } else {
        cpu.unary(UnaryOp::Abs, x).map_err(|e| e.to_string())?
    };
    let shift = if x.dtype().is_complex() { 2.5 } else { 0.5 };
    cpu.binary_scalar(BinaryOp::Add, &base, Scalar::Real(shift))
        .map_err(|e| e.to_string())
}

/// The error `h`'s op failed with (it must fail), and its source.
fn wait_err<E: weft::TensorEngine>(lane: &Lane<E>, h: &TensorHandle) -> Result<String, String> {
    match lane.download(h).map_err(|e| e.to_string())?.wait() {
        Err(e) => Ok(format!(
            "{e}: {:?}",
            std::error::Error::source(&e).map(ToString::to_string)
        )),
        Ok(_) => Err(format!("{h:?} was made")),
    }
}

mod cube;
mod integers;
mod linalg;
mod ops;
mod streams;

use cube::*;
use integers::*;
use linalg::*;
use ops::*;
use streams::*;

fn main() -> ExitCode {
    run_checks(&[
        ("kernels_compile", kernels_compile as Check),
        ("cube_kernels_compile", cube_kernels_compile),
        ("cube_makes_no_thread", cube_makes_no_thread),
        (
            "cube_kernels_record_into_programs",
            cube_kernels_record_into_programs,
        ),
        ("cube_kernels_run_in_programs", cube_kernels_run_in_programs),
        ("cube_kernels_match_the_cpu", cube_kernels_match_the_cpu),
        (
            "cube_maps_match_the_cpu_and_the_source",
            cube_maps_match_the_cpu_and_the_source,
        ),
        (
            "missing_devices_are_typed_errors",
            missing_devices_are_typed_errors,
        ),
        (
            "elementwise_ops_match_the_cpu",
            elementwise_ops_match_the_cpu,
        ),
        ("reductions_match_the_cpu", reductions_match_the_cpu),
        (
            "structural_and_creation_ops_match_the_cpu",
            structural_and_creation_ops_match_the_cpu,
        ),
        ("products_match_the_cpu", products_match_the_cpu),
        ("vocabulary_ops_match_the_cpu", vocabulary_ops_match_the_cpu),
        ("transfers_round_trip", transfers_round_trip),
        (
            "lanes_are_ordered_across_streams",
            lanes_are_ordered_across_streams,
        ),
        (
            "a_tensor_read_on_two_lanes_outlives_both_reads",
            a_tensor_read_on_two_lanes_outlives_both_reads,
        ),
        ("programs_match_the_cpu", programs_match_the_cpu),
        (
            "integer_and_bool_ops_match_the_cpu",
            integer_and_bool_ops_match_the_cpu,
        ),
        ("gradients_match_the_cpu", gradients_match_the_cpu),
        ("cpu_gpu_pipeline", cpu_gpu_pipeline),
        (
            "unsupported_and_device_errors_are_typed",
            unsupported_and_device_errors_are_typed,
        ),
        (
            "dropped_lanes_release_their_streams",
            dropped_lanes_release_their_streams,
        ),
        ("indexing_ops_match_the_cpu", indexing_ops_match_the_cpu),
        ("decompositions_match_the_cpu", decompositions_match_the_cpu),
        (
            "spectral_decompositions_match_the_cpu",
            spectral_decompositions_match_the_cpu,
        ),
        (
            "a_chain_on_one_lane_makes_only_the_driver_calls_it_needs",
            a_chain_on_one_lane_makes_only_the_driver_calls_it_needs,
        ),
    ])
}
