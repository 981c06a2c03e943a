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
        .overlap(weft::runtime::Overlap::Allow)
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
    match Runtime::builder()
        .overlap(weft::runtime::Overlap::Allow)
        .split(1)
        .cuda_devices([wanted])
        .build()
    {
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
        match Runtime::builder()
            .overlap(weft::runtime::Overlap::Allow)
            .split(1)
            .cuda()
            .build()
        {
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
        .overlap(weft::runtime::Overlap::Allow)
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

fn elementwise_ops_match_the_cpu() -> Result<Outcome, String> {
    with_gpu(|_, cpu, gpu| {
        for (seed, dtype) in DTYPES.into_iter().enumerate() {
            let tol = tolerance(dtype);
            let seed = seed as u64 * 10;
            let a = random(cpu, dtype, &[3, 1, 5], seed)?;
            let b = random(cpu, dtype, &[4, 5], seed + 1)?;
            let p = positive(cpu, &random(cpu, dtype, &[3, 4, 5], seed + 2)?)?;
            for op in [BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div] {
                same!(
                    format!("{dtype} {op:?} broadcast"),
                    tol,
                    cpu,
                    gpu,
                    &[a.clone(), b.clone()],
                    |l, x| l.binary(op, &x[0], &x[1])
                );
                same!(
                    format!("{dtype} {op:?} scalar"),
                    tol,
                    cpu,
                    gpu,
                    std::slice::from_ref(&a),
                    |l, x| l.binary_scalar(op, &x[0], Scalar::Real(1.5))
                );
            }
            same!(
                format!("{dtype} pow"),
                tol * 10.0,
                cpu,
                gpu,
                &[p.clone(), a.clone()],
                |l, x| l.pow(&x[0], &x[1])
            );
            if !dtype.is_complex() {
                for op in [BinaryOp::Maximum, BinaryOp::Minimum] {
                    same!(
                        format!("{dtype} {op:?}"),
                        tol,
                        cpu,
                        gpu,
                        &[a.clone(), b.clone()],
                        |l, x| l.binary(op, &x[0], &x[1])
                    );
                }
            }
            for op in weft::ops::UnaryOp::ALL
                .into_iter()
                .filter(|op| op.supports(dtype))
            {
                let input = match op {
                    UnaryOp::Log | UnaryOp::Log1p | UnaryOp::Sqrt | UnaryOp::Rsqrt => &p,
                    _ => &a,
                };
                same!(
                    format!("{dtype} {op:?}"),
                    tol,
                    cpu,
                    gpu,
                    std::slice::from_ref(input),
                    |l, x| l.unary(op, &x[0])
                );
            }
        }
        Ok(())
    })
}

fn reductions_match_the_cpu() -> Result<Outcome, String> {
    with_gpu(|_, cpu, gpu| {
        for (seed, dtype) in DTYPES.into_iter().enumerate() {
            let tol = tolerance(dtype) * 10.0;
            let x = random(cpu, dtype, &[6, 7, 300], 100 + seed as u64)?;
            let mut ops = vec![
                ReduceOp::Sum,
                ReduceOp::Mean,
                ReduceOp::Norm,
                ReduceOp::Prod,
            ];
            if !dtype.is_complex() {
                ops.extend([ReduceOp::Max, ReduceOp::Min]);
            }
            for op in ops {
                let axes_list: [&[usize]; 4] = [&[2], &[0, 2], &[1], &[0, 1, 2]];
                for axes in axes_list {
                    if op == ReduceOp::Prod && axes.contains(&2) {
                        continue; // 300 factors under 1 underflow to noise
                    }
                    for keep in [false, true] {
                        same!(
                            format!("{dtype} {op:?} over {axes:?} keep {keep}"),
                            tol,
                            cpu,
                            gpu,
                            std::slice::from_ref(&x),
                            |l, x| l.reduce(op, &x[0], axes, keep)
                        );
                    }
                }
            }
        }
        // Long rows: each is cut into parts that a second launch combines.
        for (seed, dtype) in DTYPES.into_iter().enumerate() {
            // f32 sums of 300 000 terms, in another order than the CPU's.
            let tol = match dtype {
                DType::F32 | DType::C32 => 1e-3,
                _ => 1e-9,
            };
            let x = random(cpu, dtype, &[3, 300_000], 150 + seed as u64)?;
            let mut ops = vec![ReduceOp::Sum, ReduceOp::Mean, ReduceOp::Norm];
            if !dtype.is_complex() {
                ops.extend([ReduceOp::Max, ReduceOp::Min]);
            }
            for op in ops {
                let axes_list: [&[usize]; 2] = [&[1], &[0, 1]];
                for axes in axes_list {
                    same!(
                        format!("{dtype} {op:?} over {axes:?} of [3, 300000]"),
                        tol,
                        cpu,
                        gpu,
                        std::slice::from_ref(&x),
                        |l, x| l.reduce(op, &x[0], axes, false)
                    );
                }
            }
        }
        Ok(())
    })
}

fn structural_and_creation_ops_match_the_cpu() -> Result<Outcome, String> {
    with_gpu(|_, cpu, gpu| {
        for (seed, dtype) in DTYPES.into_iter().enumerate() {
            let x = random(cpu, dtype, &[4, 5, 6], 200 + seed as u64)?;
            let y = random(cpu, dtype, &[4, 2, 6], 300 + seed as u64)?;
            let all = [x.clone()];
            same!(format!("{dtype} permute"), 0.0, cpu, gpu, &all, |l, x| l
                .permute(&x[0], &[2, 0, 1]));
            same!(format!("{dtype} transpose"), 0.0, cpu, gpu, &all, |l, x| l
                .transpose(&x[0]));
            same!(format!("{dtype} reshape"), 0.0, cpu, gpu, &all, |l, x| l
                .reshape(&x[0], &[20, 6]));
            let axes = [
                SliceAxis {
                    start: 1,
                    stop: 4,
                    step: 2,
                },
                SliceAxis::ALL,
                SliceAxis {
                    start: 5,
                    stop: 0,
                    step: 1,
                },
            ];
            same!(format!("{dtype} slice"), 0.0, cpu, gpu, &all, |l, x| l
                .slice(&x[0], &axes));
            let axes = [
                SliceAxis {
                    start: 0,
                    stop: 4,
                    step: 3,
                },
                SliceAxis {
                    start: 1,
                    stop: 5,
                    step: 2,
                },
                SliceAxis::ALL,
            ];
            same!(
                format!("{dtype} strided slice"),
                0.0,
                cpu,
                gpu,
                &all,
                |l, x| l.slice(&x[0], &axes)
            );
            same!(format!("{dtype} reverse"), 0.0, cpu, gpu, &all, |l, x| l
                .reverse(&x[0], &[0, 2]));
            same!(
                format!("{dtype} broadcast_to"),
                0.0,
                cpu,
                gpu,
                &all,
                |l, x| l.broadcast_to(&x[0], &[3, 4, 5, 6])
            );
            same!(format!("{dtype} diagonal"), 0.0, cpu, gpu, &all, |l, x| l
                .diagonal(&x[0]));
            same!(
                format!("{dtype} concatenate"),
                0.0,
                cpu,
                gpu,
                &[x.clone(), y.clone(), x.clone()],
                |l, x| l.concatenate(&[&x[0], &x[1], &x[2]], 1)
            );
            same!(format!("{dtype} full"), 0.0, cpu, gpu, &[], |l, _x| l.full(
                dtype,
                &[3, 2],
                Scalar::Real(-2.5)
            ));
            same!(format!("{dtype} zeros"), 0.0, cpu, gpu, &[], |l, _x| l
                .zeros(dtype, &[7]));
            same!(format!("{dtype} ones"), 0.0, cpu, gpu, &[], |l, _x| l
                .ones(dtype, &[2, 0, 3]));
            same!(format!("{dtype} eye"), 0.0, cpu, gpu, &[], |l, _x| l
                .eye(dtype, 4, 6));
            if !dtype.is_complex() {
                same!(
                    format!("{dtype} arange"),
                    tolerance(dtype),
                    cpu,
                    gpu,
                    &[],
                    |l, _x| l.arange(dtype, -1.0, 0.25, 1000)
                );
            }
        }
        Ok(())
    })
}

fn products_match_the_cpu() -> Result<Outcome, String> {
    with_gpu(|_, cpu, gpu| {
        for (seed, dtype) in DTYPES.into_iter().enumerate() {
            let s = 400 + 10 * seed as u64;
            let tol = tolerance(dtype) * 100.0;
            let a = random(cpu, dtype, &[33, 65], s)?;
            let b = random(cpu, dtype, &[65, 17], s + 1)?;
            let ba = random(cpu, dtype, &[3, 33, 65], s + 2)?;
            let bb = random(cpu, dtype, &[3, 65, 17], s + 3)?;
            let b4 = random(cpu, dtype, &[2, 1, 33, 65], s + 4)?;
            let c4 = random(cpu, dtype, &[1, 3, 65, 17], s + 5)?;
            same!(
                format!("{dtype} matmul"),
                tol,
                cpu,
                gpu,
                &[a.clone(), b.clone()],
                |l, x| l.matmul(&x[0], &x[1])
            );
            same!(
                format!("{dtype} batched matmul"),
                tol,
                cpu,
                gpu,
                &[ba.clone(), bb.clone()],
                |l, x| l.matmul(&x[0], &x[1])
            );
            same!(
                format!("{dtype} matmul, one side broadcast"),
                tol,
                cpu,
                gpu,
                &[ba.clone(), b.clone()],
                |l, x| l.matmul(&x[0], &x[1])
            );
            same!(
                format!("{dtype} matmul, both broadcast"),
                tol,
                cpu,
                gpu,
                &[b4.clone(), c4.clone()],
                |l, x| l.matmul(&x[0], &x[1])
            );
            let specs: [(&str, Vec<TensorHandle>); 6] = [
                ("ij,jk->ik", vec![a.clone(), b.clone()]),
                ("bij,bjk->bik", vec![ba.clone(), bb.clone()]),
                ("bij,bjk->kib", vec![ba.clone(), bb.clone()]),
                (
                    "bij,jk,bkl->il",
                    vec![
                        ba.clone(),
                        b.clone(),
                        random(cpu, dtype, &[3, 17, 5], s + 6)?,
                    ],
                ),
                ("ij->ji", vec![a.clone()]),
                ("ii->i", vec![random(cpu, dtype, &[9, 9], s + 7)?]),
            ];
            for (spec, inputs) in specs {
                same!(
                    format!("{dtype} einsum {spec}"),
                    tol,
                    cpu,
                    gpu,
                    &inputs,
                    |l, x| {
                        let refs: Vec<&TensorHandle> = x.iter().collect();
                        l.einsum(spec, &refs)
                    }
                );
            }
            same!(
                format!("{dtype} dot_general"),
                tol,
                cpu,
                gpu,
                &[ba.clone(), bb.clone()],
                |l, x| l.dot_general(&x[0], &x[1], &[(0, 0)], &[(2, 1)])
            );
        }
        Ok(())
    })
}

/// The vocabulary the device gained with the integer and bool types:
/// comparisons into `bool`, select by a `bool` mask, clamps, casts between
/// the field types, pads, triangles, diagonals and their embeddings on any
/// axes, dots, seeded random tensors (the host's generator: exactly the
/// CPU's), and the accumulating products, fresh and written into.
fn vocabulary_ops_match_the_cpu() -> Result<Outcome, String> {
    with_gpu(|_, cpu, gpu| {
        let e = |e: weft::OpError| e.to_string();
        for (seed, dtype) in DTYPES.into_iter().enumerate() {
            let s = 700 + 10 * seed as u64;
            let tol = tolerance(dtype);
            let a = random(cpu, dtype, &[5, 1, 7], s)?;
            let b = random(cpu, dtype, &[4, 7], s + 1)?;
            let m = random(cpu, dtype, &[3, 6, 5], s + 2)?;
            let ops: &[CmpOp] = if dtype.is_complex() {
                &[CmpOp::Eq, CmpOp::Ne]
            } else {
                &[
                    CmpOp::Eq,
                    CmpOp::Ne,
                    CmpOp::Lt,
                    CmpOp::Le,
                    CmpOp::Gt,
                    CmpOp::Ge,
                ]
            };
            // Equal elements too: a compared with its own broadcast.
            let twice = cpu.concatenate(&[&a, &a], 1).map_err(e)?;
            for &op in ops {
                same!(
                    format!("{dtype} {op:?}"),
                    0.0,
                    cpu,
                    gpu,
                    &[a.clone(), b.clone()],
                    |l, x| l.compare(op, &x[0], &x[1])
                );
                same!(
                    format!("{dtype} {op:?} of equals"),
                    0.0,
                    cpu,
                    gpu,
                    &[twice.clone(), a.clone()],
                    |l, x| l.compare(op, &x[0], &x[1])
                );
            }
            let re = |x: &TensorHandle| -> Result<TensorHandle, String> {
                if dtype.is_complex() {
                    cpu.cast(x, dtype.real()).map_err(e)
                } else {
                    Ok(x.clone())
                }
            };
            let mask = cpu.compare(CmpOp::Gt, &re(&a)?, &re(&b)?).map_err(e)?;
            same!(
                format!("{dtype} select"),
                0.0,
                cpu,
                gpu,
                &[mask, a.clone(), b.clone()],
                |l, x| l.select(&x[0], &x[1], &x[2])
            );
            if !dtype.is_complex() {
                same!(
                    format!("{dtype} clamp"),
                    0.0,
                    cpu,
                    gpu,
                    std::slice::from_ref(&b),
                    |l, x| l.clamp(&x[0], 0.2, 0.7)
                );
                let lo = random(cpu, dtype, &[7], s + 3)?;
                let hi = cpu
                    .binary_scalar(BinaryOp::Add, &lo, Scalar::Real(0.25))
                    .map_err(e)?;
                same!(
                    format!("{dtype} clamp_between"),
                    0.0,
                    cpu,
                    gpu,
                    &[b.clone(), lo, hi],
                    |l, x| l.clamp_between(&x[0], &x[1], &x[2])
                );
            }
            for to in DTYPES {
                same!(
                    format!("{dtype} cast to {to}"),
                    tolerance(to).max(tol),
                    cpu,
                    gpu,
                    std::slice::from_ref(&m),
                    |l, x| l.cast(&x[0], to)
                );
            }
            same!(
                format!("{dtype} pad"),
                0.0,
                cpu,
                gpu,
                std::slice::from_ref(&m),
                |l, x| l.pad(&x[0], &[(1, 0), (0, 2), (3, 1)], Scalar::Real(-2.0))
            );
            for k in [-2isize, 0, 3] {
                same!(
                    format!("{dtype} tril {k}"),
                    0.0,
                    cpu,
                    gpu,
                    std::slice::from_ref(&m),
                    |l, x| l.tril(&x[0], k)
                );
                same!(
                    format!("{dtype} triu {k}"),
                    0.0,
                    cpu,
                    gpu,
                    std::slice::from_ref(&m),
                    |l, x| l.triu(&x[0], k)
                );
            }
            same!(
                format!("{dtype} diagonal of axes 0, 2"),
                0.0,
                cpu,
                gpu,
                std::slice::from_ref(&m),
                |l, x| l.diagonal_axes(&x[0], 0, 2)
            );
            same!(
                format!("{dtype} diag_embed"),
                0.0,
                cpu,
                gpu,
                std::slice::from_ref(&b),
                |l, x| l.diag_embed(&x[0])
            );
            same!(
                format!("{dtype} diag_embed on axes 0, 2"),
                0.0,
                cpu,
                gpu,
                std::slice::from_ref(&b),
                |l, x| l.diag_embed_axes(&x[0], 0, 2)
            );
            let v = random(cpu, dtype, &[1000], s + 4)?;
            let w = random(cpu, dtype, &[1000], s + 5)?;
            same!(
                format!("{dtype} dot"),
                tol * 100.0,
                cpu,
                gpu,
                &[v.clone(), w.clone()],
                |l, x| l.dot(&x[0], &x[1])
            );
            same!(
                format!("{dtype} vdot"),
                tol * 100.0,
                cpu,
                gpu,
                &[v, w],
                |l, x| l.vdot(&x[0], &x[1])
            );
            same!(format!("{dtype} random"), 0.0, cpu, gpu, &[], |l, _x| l
                .random(dtype, &[3, 333], Distribution::Normal, s));
            let (alpha, beta) = (Scalar::Real(0.5), Scalar::Real(-1.5));
            for a_op in [MatOp::NONE, MatOp::T, MatOp::H] {
                for b_op in [MatOp::NONE, MatOp::H] {
                    let ga = random(
                        cpu,
                        dtype,
                        if a_op.transpose {
                            &[2, 9, 8]
                        } else {
                            &[2, 8, 9]
                        },
                        s + 6,
                    )?;
                    let gb = random(
                        cpu,
                        dtype,
                        if b_op.transpose { &[6, 9] } else { &[9, 6] },
                        s + 7,
                    )?;
                    let gc = random(cpu, dtype, &[2, 8, 6], s + 8)?;
                    let inputs = [ga, gb, gc];
                    same!(
                        format!("{dtype} gemm {a_op:?} {b_op:?}"),
                        tol * 100.0,
                        cpu,
                        gpu,
                        &inputs,
                        |l, x| l.gemm(alpha, &x[0], a_op, &x[1], b_op, beta, &x[2])
                    );
                    same!(
                        format!("{dtype} gemm_into {a_op:?} {b_op:?}"),
                        tol * 100.0,
                        cpu,
                        gpu,
                        &inputs,
                        |l, x| l.gemm_into(alpha, &x[0], a_op, &x[1], b_op, beta, x[2].clone())
                    );
                }
            }
            same!(
                format!("{dtype} axpby"),
                tol,
                cpu,
                gpu,
                &[a.clone(), b.clone()],
                |l, x| l.axpby(alpha, &x[0], beta, &x[1])
            );
            let y = random(cpu, dtype, &[5, 4, 7], s + 9)?;
            same!(
                format!("{dtype} axpby_into"),
                tol,
                cpu,
                gpu,
                &[a.clone(), y],
                |l, x| l.axpby_into(alpha, &x[0], beta, x[1].clone())
            );
        }
        Ok(())
    })
}

/// Host → device → host is exact, for every type and size (the large ones
/// go through the pinned staging in several chunks), and device → device
/// through two lanes keeps the values.
fn transfers_round_trip() -> Result<Outcome, String> {
    with_gpu(|rt, cpu, gpu| {
        let other = rt.cuda_lane(0).map_err(|e| e.to_string())?;
        for (seed, dtype) in DTYPES.into_iter().enumerate() {
            for n in [0usize, 1, 1000, 3 << 20] {
                let x = random(cpu, dtype, &[n], 500 + seed as u64)?;
                let there = cpu
                    .transfer(&x, Place::Cuda(0))
                    .map_err(|e| e.to_string())?;
                let moved = other.add(
                    &there,
                    &other.zeros(dtype, &[n]).map_err(|e| e.to_string())?,
                );
                let moved = moved.map_err(|e| e.to_string())?;
                let back = gpu.transfer(&moved, 0).map_err(|e| e.to_string())?;
                close(
                    &format!("{dtype} x{n} round trip"),
                    &download(cpu, &back)?,
                    &download(cpu, &x)?,
                    0.0,
                )?;
                let uploaded = gpu.upload(download(cpu, &x)?).map_err(|e| e.to_string())?;
                close(
                    &format!("{dtype} x{n} upload/download"),
                    &download(gpu, &uploaded)?,
                    &download(cpu, &x)?,
                    0.0,
                )?;
            }
        }
        // Integers and bool: bytes there and back, a reshape and a
        // transpose on the device.
        for t in [
            Tensor::from_vec(vec![i32::MIN, -1, 0, i32::MAX], &[2, 2]).unwrap(),
            Tensor::from_vec(vec![i64::MIN, 7, 1 << 50, i64::MAX], &[2, 2]).unwrap(),
            Tensor::from_vec(vec![true, false, false, true], &[2, 2]).unwrap(),
        ] {
            let h = gpu.upload(t.clone()).map_err(|e| e.to_string())?;
            let r = gpu.reshape(&h, &[4]).map_err(|e| e.to_string())?;
            let back = download(gpu, &r)?;
            check(
                back.data() == t.data() && back.shape() == [4],
                format!("{} round trip: {back:?}", t.dtype()),
            )?;
            let p = gpu.transpose(&h).map_err(|e| e.to_string())?;
            let want = cpu
                .transpose(&cpu.upload(t.clone()).map_err(|e| e.to_string())?)
                .map_err(|e| e.to_string())?;
            let (got, want) = (download(gpu, &p)?, download(cpu, &want)?);
            check(
                got.data() == want.data() && got.shape() == want.shape(),
                format!("{} transpose: {got:?}, the CPU's {want:?}", t.dtype()),
            )?;
        }
        Ok(())
    })
}

/// Ops on one stream read tensors another stream wrote: the device orders
/// them by events, the actor never waits. A long product on lane A, read
/// at once by lane B, must give the product.
fn lanes_are_ordered_across_streams() -> Result<Outcome, String> {
    with_gpu(|rt, cpu, a| {
        let b = rt.cuda_lane(0).map_err(|e| e.to_string())?;
        let x = random(cpu, DType::F64, &[1024, 1024], 600)?;
        let xa = cpu
            .transfer(&x, Place::Cuda(0))
            .map_err(|e| e.to_string())?;
        let mut p = xa.clone();
        for _ in 0..8 {
            p = a.matmul(&p, &xa).map_err(|e| e.to_string())?;
            p = a
                .binary_scalar(BinaryOp::Mul, &p, Scalar::Real(1.0 / 512.0))
                .map_err(|e| e.to_string())?;
        }
        let sum_b = b.sum_all(&p).map_err(|e| e.to_string())?;
        let mut q = x.clone();
        for _ in 0..8 {
            q = cpu.matmul(&q, &x).map_err(|e| e.to_string())?;
            q = cpu
                .binary_scalar(BinaryOp::Mul, &q, Scalar::Real(1.0 / 512.0))
                .map_err(|e| e.to_string())?;
        }
        let sum_cpu = cpu.sum_all(&q).map_err(|e| e.to_string())?;
        close(
            "cross-lane sum",
            &download(&b, &sum_b)?,
            &download(cpu, &sum_cpu)?,
            1e-8,
        )
    })
}

/// `x·x / 1024` on `lane` (of a 1024×1024 `x`: values stay in range).
fn square_scaled<E: weft::TensorEngine>(
    lane: &Lane<E>,
    x: &TensorHandle,
) -> Result<TensorHandle, String> {
    let p = lane.matmul(x, x).map_err(|e| e.to_string())?;
    lane.binary_scalar(BinaryOp::Mul, &p, Scalar::Real(1.0 / 1024.0))
        .map_err(|e| e.to_string())
}

/// A tensor read by two lanes (each read long enough to still run when the
/// tensor is dropped), then dropped while a third lane allocates and
/// fills buffers of its size over and over: stream-ordered allocation
/// would hand its memory out at once if the free waited for one reader
/// only. Both readers' results must be intact.
fn a_tensor_read_on_two_lanes_outlives_both_reads() -> Result<Outcome, String> {
    with_gpu(|rt, cpu, a| {
        let (b, c) = (
            rt.cuda_lane(0).map_err(|e| e.to_string())?,
            rt.cuda_lane(0).map_err(|e| e.to_string())?,
        );
        let x = random(cpu, DType::F64, &[1024, 1024], 900)?;
        let gx = cpu
            .transfer(&x, Place::Cuda(0))
            .map_err(|e| e.to_string())?;
        // Long reads: a chain of products on each lane, the first of each
        // reading `gx`.
        let (mut pa, mut pb) = (
            a.matmul(&gx, &gx).map_err(|e| e.to_string())?,
            b.mul(&gx, &gx).map_err(|e| e.to_string())?,
        );
        for _ in 0..4 {
            pa = square_scaled(a, &pa)?;
            pb = square_scaled(&b, &pb)?;
        }
        drop(gx);
        for _ in 0..32 {
            drop(c.full(DType::F64, &[1024, 1024], Scalar::Real(f64::NAN)));
        }
        let (mut qa, mut qb) = (
            cpu.matmul(&x, &x).map_err(|e| e.to_string())?,
            cpu.mul(&x, &x).map_err(|e| e.to_string())?,
        );
        for _ in 0..4 {
            qa = square_scaled(cpu, &qa)?;
            qb = square_scaled(cpu, &qb)?;
        }
        close(
            "lane A's reads",
            &download(a, &pa)?,
            &download(cpu, &qa)?,
            1e-8,
        )?;
        close(
            "lane B's reads",
            &download(&b, &pb)?,
            &download(cpu, &qb)?,
            1e-8,
        )
    })
}

/// A program runs on the device as one op (every kernel on the lane's
/// stream, intermediates freed after their last use) and matches the same
/// program on the CPU; a step that fails on the device fails the outputs,
/// naming the step, and leaves the inputs and the device's memory as they
/// were.
fn programs_match_the_cpu() -> Result<Outcome, String> {
    with_gpu(|_, cpu, gpu| {
        let program = weft::Program::record(|p| {
            let e = p.input(DType::C64, &[16, 16]);
            let a = p.input(DType::C64, &[16, 2, 16]);
            let ac = p.unary(weft::ops::UnaryOp::Conj, a)?;
            let t = p.einsum("ab,bsd->asd", &[e, a])?;
            let next = p.einsum("asc,asd->cd", &[ac, t])?;
            let scaled = p.scale(next, 0.5)?;
            p.output(scaled)
        })
        .map_err(|e| e.to_string())?;
        let e = random(cpu, DType::C64, &[16, 16], 1200)?;
        let a = random(cpu, DType::C64, &[16, 2, 16], 1201)?;
        let want = cpu
            .run_program(&program, &[&e, &a])
            .map_err(|e| e.to_string())?;
        let (ge, ga) = (
            cpu.transfer(&e, Place::Cuda(0))
                .map_err(|e| e.to_string())?,
            cpu.transfer(&a, Place::Cuda(0))
                .map_err(|e| e.to_string())?,
        );
        // The transfers arrive in their own order, not the lane's: wait
        // for both before counting what is resident.
        download(gpu, &ge)?;
        download(gpu, &ga)?;
        let (tensors, _) = gpu
            .resident()
            .map_err(|e| e.to_string())?
            .wait()
            .map_err(|e| e.to_string())?;
        let mut got = Vec::new();
        for _ in 0..8 {
            got = gpu
                .run_program(&program, &[&ge, &ga])
                .map_err(|e| e.to_string())?;
        }
        close(
            "program",
            &download(gpu, &got[0])?,
            &download(cpu, &want[0])?,
            1e-10,
        )?;
        drop(got);
        let after = gpu
            .resident()
            .map_err(|e| e.to_string())?
            .wait()
            .map_err(|e| e.to_string())?;
        check(
            after.0 == tensors,
            format!("{} resident after the runs, {tensors} before", after.0),
        )?;
        // A random matrix has no Cholesky factor: the program fails at
        // that step, with the CPU's error.
        let failing = weft::Program::record(|p| {
            let x = p.input(DType::C64, &[16, 16]);
            let y = p.scale(x, 2.0)?;
            let l = p.apply_many(
                weft::ops::TensorOp::Linalg(weft::ops::Linalg::Cholesky),
                &[y],
            )?;
            p.output(l[0])
        })
        .map_err(|e| e.to_string())?;
        let out = gpu
            .run_program(&failing, &[&ge])
            .map_err(|e| e.to_string())?;
        let err = wait_err(gpu, &out[0])?;
        check(err.contains("step 1 (cholesky)"), err)?;
        close(
            "the input after a failed program",
            &download(gpu, &ge)?,
            &download(cpu, &e)?,
            0.0,
        )
    })
}

/// Integer and bool tensors on the device: moved, made, compared, selected
/// and converted as on the CPU (exactly), float-to-integer conversions
/// truncating and saturating (NaN to 0), integer narrowing wrapping.
fn integer_and_bool_ops_match_the_cpu() -> Result<Outcome, String> {
    with_gpu(|_, cpu, gpu| {
        let e = |e: weft::OpError| e.to_string();
        let step = |start, stop, step| SliceAxis { start, stop, step };
        let one = |h: &TensorHandle| vec![h.clone()];
        for (k, dtype) in [DType::I32, DType::I64, DType::Bool]
            .into_iter()
            .enumerate()
        {
            let s = 1400 + 10 * k as u64;
            let make = |shape: &[usize], seed: u64| {
                let d = if dtype == DType::Bool {
                    Distribution::Bits
                } else {
                    Distribution::Integers { low: -50, high: 50 }
                };
                cpu.random(dtype, shape, d, seed).map_err(e)
            };
            let a = make(&[3, 4, 5], s)?;
            let b = make(&[4, 5], s + 1)?;
            let sq = make(&[2, 4, 4], s + 2)?;
            same!(
                format!("{dtype} permute"),
                0.0,
                cpu,
                gpu,
                &one(&a),
                |l, x| l.permute(&x[0], &[2, 0, 1])
            );
            same!(
                format!("{dtype} stepped slice"),
                0.0,
                cpu,
                gpu,
                &one(&a),
                |l, x| l.slice(&x[0], &[step(1, 3, 1), step(0, 4, 3), step(4, 0, 1)])
            );
            same!(
                format!("{dtype} reverse"),
                0.0,
                cpu,
                gpu,
                &one(&a),
                |l, x| l.reverse(&x[0], &[0, 2])
            );
            same!(
                format!("{dtype} broadcast"),
                0.0,
                cpu,
                gpu,
                &one(&b),
                |l, x| l.broadcast_to(&x[0], &[3, 4, 5])
            );
            same!(
                format!("{dtype} concatenate"),
                0.0,
                cpu,
                gpu,
                &[a.clone(), a.clone()],
                |l, x| l.concatenate(&[&x[0], &x[1]], 1)
            );
            same!(format!("{dtype} pad"), 0.0, cpu, gpu, &one(&b), |l, x| l
                .pad(&x[0], &[(1, 2), (0, 1)], Scalar::Int(1)));
            same!(
                format!("{dtype} diagonal"),
                0.0,
                cpu,
                gpu,
                &one(&sq),
                |l, x| l.diagonal_axes(&x[0], 1, 2)
            );
            same!(
                format!("{dtype} diag_embed"),
                0.0,
                cpu,
                gpu,
                &one(&b),
                |l, x| l.diag_embed_axes(&x[0], 0, 2)
            );
            same!(format!("{dtype} tril"), 0.0, cpu, gpu, &one(&sq), |l, x| l
                .tril(&x[0], -1));
            same!(format!("{dtype} triu"), 0.0, cpu, gpu, &one(&sq), |l, x| l
                .triu(&x[0], 1));
            for op in [CmpOp::Eq, CmpOp::Ne, CmpOp::Lt, CmpOp::Ge] {
                same!(
                    format!("{dtype} {op:?}"),
                    0.0,
                    cpu,
                    gpu,
                    &[a.clone(), b.clone()],
                    |l, x| l.compare(op, &x[0], &x[1])
                );
            }
            let mask = cpu.compare(CmpOp::Ne, &a, &b).map_err(e)?;
            same!(
                format!("{dtype} select"),
                0.0,
                cpu,
                gpu,
                &[mask, a.clone(), b.clone()],
                |l, x| l.select(&x[0], &x[1], &x[2])
            );
            for to in DType::ALL {
                same!(
                    format!("{dtype} cast to {to}"),
                    0.0,
                    cpu,
                    gpu,
                    &one(&a),
                    |l, x| l.cast(&x[0], to)
                );
            }
            same!(format!("{dtype} full"), 0.0, cpu, gpu, &[], |l, _x| l.full(
                dtype,
                &[3, 2],
                if dtype == DType::Bool {
                    Scalar::Bool(true)
                } else {
                    Scalar::Int(-7)
                }
            ));
            same!(format!("{dtype} eye"), 0.0, cpu, gpu, &[], |l, _x| l
                .eye(dtype, 3, 4));
            for op in [weft::ops::ArgOp::Max, weft::ops::ArgOp::Min] {
                for axis in 0..3 {
                    same!(
                        format!("{dtype} {op:?} along {axis}"),
                        0.0,
                        cpu,
                        gpu,
                        &one(&a),
                        |l, x| l.apply(
                            weft::ops::TensorOp::ArgReduce {
                                op,
                                axis,
                                keep_dims: axis == 1
                            },
                            &[&x[0]]
                        )
                    );
                }
            }
            // Reductions: sums and products in i64 (wrapping), means in
            // f64, extrema in the type, any/all as bool.
            for op in weft::ops::ReduceOp::ALL {
                if op == weft::ops::ReduceOp::Norm {
                    continue;
                }
                for axes in [&[1][..], &[0, 2], &[0, 1, 2]] {
                    let tol = if op == weft::ops::ReduceOp::Mean {
                        1e-12
                    } else {
                        0.0
                    };
                    same!(
                        format!("{dtype} {op:?} over {axes:?}"),
                        tol,
                        cpu,
                        gpu,
                        &one(&a),
                        |l, x| l.reduce(op, &x[0], axes, false)
                    );
                }
            }
            if dtype != DType::Bool {
                same!(format!("{dtype} arange"), 0.0, cpu, gpu, &[], |l, _x| l
                    .arange(dtype, -5.0, 3.0, 9));
            }
        }
        // Elementwise arithmetic: wrapping, floor division and remainder
        // with NumPy's signs, bitwise ops, and bool's logic.
        for (k, dtype) in [DType::I32, DType::I64].into_iter().enumerate() {
            let s = 1500 + 10 * k as u64;
            let draw = |shape: &[usize], low: i64, high: i64, seed: u64| {
                cpu.random(dtype, shape, Distribution::Integers { low, high }, seed)
                    .map_err(e)
            };
            let a = draw(&[4, 6], -40, 40, s)?;
            let b = draw(&[6], 1, 9, s + 1)?;
            let nb = cpu.unary(UnaryOp::Neg, &b).map_err(e)?;
            let small = draw(&[4, 6], 0, 5, s + 2)?;
            let extreme = cpu
                .full(
                    dtype,
                    &[6],
                    Scalar::Int(if dtype == DType::I32 {
                        i64::from(i32::MAX)
                    } else {
                        i64::MAX
                    }),
                )
                .map_err(e)?;
            // Clamps: bounds rounded inward, saturated, an empty interval;
            // tensor bounds broadcast. A NaN bound is refused at the call,
            // in both places, with the same error.
            for (lo, hi) in [(-7.5, 12.2), (-1e300, 1e300), (5.0, -5.0)] {
                same!(
                    format!("{dtype} clamp {lo} {hi}"),
                    0.0,
                    cpu,
                    gpu,
                    &one(&a),
                    |l, x| l.clamp(&x[0], lo, hi)
                );
            }
            let ga = cpu.transfer(&a, Place::Cuda(0)).map_err(e)?;
            match (cpu.clamp(&a, f64::NAN, 3.0), gpu.clamp(&ga, f64::NAN, 3.0)) {
                (Err(want), Err(got)) => check(
                    want.to_string() == got.to_string() && got.to_string().contains("NaN"),
                    format!("{dtype} clamp NaN: the CPU says {want}, the GPU {got}"),
                )?,
                other => return Err(format!("{dtype} clamp NaN 3 was not refused: {other:?}")),
            }
            same!(
                format!("{dtype} clamp_between"),
                0.0,
                cpu,
                gpu,
                &[a.clone(), nb.clone(), b.clone()],
                |l, x| l.clamp_between(&x[0], &x[1], &x[2])
            );
            for op in [
                BinaryOp::Add,
                BinaryOp::Sub,
                BinaryOp::Mul,
                BinaryOp::Maximum,
                BinaryOp::Minimum,
                BinaryOp::FloorDiv,
                BinaryOp::Rem,
                BinaryOp::And,
                BinaryOp::Or,
                BinaryOp::Xor,
            ] {
                for (what, rhs) in [("", &b), (" by negatives", &nb)] {
                    same!(
                        format!("{dtype} {op:?}{what}"),
                        0.0,
                        cpu,
                        gpu,
                        &[a.clone(), rhs.clone()],
                        |l, x| l.binary(op, &x[0], &x[1])
                    );
                }
                same!(
                    format!("{dtype} {op:?} wrapping"),
                    0.0,
                    cpu,
                    gpu,
                    &[extreme.clone(), b.clone()],
                    |l, x| l.binary(op, &x[0], &x[1])
                );
                same!(
                    format!("{dtype} {op:?} with a scalar"),
                    0.0,
                    cpu,
                    gpu,
                    &one(&a),
                    |l, x| l.binary_scalar(op, &x[0], Scalar::Int(-3))
                );
            }
            same!(
                format!("{dtype} pow"),
                0.0,
                cpu,
                gpu,
                &[a.clone(), small.clone()],
                |l, x| l.binary(BinaryOp::Pow, &x[0], &x[1])
            );
            for op in [
                UnaryOp::Neg,
                UnaryOp::Abs,
                UnaryOp::Sign,
                UnaryOp::Not,
                UnaryOp::Conj,
            ] {
                same!(
                    format!("{dtype} {op:?}"),
                    0.0,
                    cpu,
                    gpu,
                    &one(&a),
                    |l, x| l.unary(op, &x[0])
                );
                same!(
                    format!("{dtype} {op:?} of the extreme"),
                    0.0,
                    cpu,
                    gpu,
                    &one(&extreme),
                    |l, x| l.unary(op, &x[0])
                );
            }
            // A zero divisor fails the op as on the CPU, naming the index;
            // the dividend stays as it was.
            let zeroed = cpu
                .upload(
                    Tensor::from_vec(vec![3i64, 1, 0, 2, 5, 7], &[6]).map_err(|e| e.to_string())?,
                )
                .map_err(e)?;
            let zeroed = cpu.cast(&zeroed, dtype).map_err(e)?;
            let want = cpu.binary(BinaryOp::Rem, &a, &zeroed).map_err(e)?;
            let want = wait_err(cpu, &want)?;
            let (ga, gz) = (
                cpu.transfer(&a, Place::Cuda(0)).map_err(e)?,
                cpu.transfer(&zeroed, Place::Cuda(0)).map_err(e)?,
            );
            let got = gpu.binary(BinaryOp::Rem, &ga, &gz).map_err(e)?;
            let got = wait_err(gpu, &got)?;
            check(
                got.contains("division by zero") && got.contains("[2]"),
                format!("{dtype} rem by zero: {got} (the CPU: {want})"),
            )?;
            close(
                "the dividend after a refused rem",
                &download(gpu, &ga)?,
                &download(cpu, &a)?,
                0.0,
            )?;
        }
        let (p, q) = (
            cpu.random(DType::Bool, &[3, 5], Distribution::Bits, 1530)
                .map_err(e)?,
            cpu.random(DType::Bool, &[5], Distribution::Bits, 1531)
                .map_err(e)?,
        );
        for op in [BinaryOp::And, BinaryOp::Or, BinaryOp::Xor] {
            same!(
                format!("bool {op:?}"),
                0.0,
                cpu,
                gpu,
                &[p.clone(), q.clone()],
                |l, x| l.binary(op, &x[0], &x[1])
            );
        }
        same!(String::from("bool not"), 0.0, cpu, gpu, &one(&p), |l, x| l
            .unary(UnaryOp::Not, &x[0]));
        // Floor division and remainder of floats, a zero divisor included.
        for dtype in [DType::F32, DType::F64] {
            let a = cpu
                .random(dtype, &[4, 6], Distribution::Normal, 1540)
                .map_err(e)?;
            let b = cpu
                .random(dtype, &[6], Distribution::Normal, 1541)
                .map_err(e)?;
            let b = cpu
                .apply(
                    weft::ops::TensorOp::Concatenate { axis: 0, inputs: 2 },
                    &[
                        &cpu.slice(
                            &b,
                            &[SliceAxis {
                                start: 0,
                                stop: 5,
                                step: 1,
                            }],
                        )
                        .map_err(e)?,
                        &cpu.zeros(dtype, &[1]).map_err(e)?,
                    ],
                )
                .map_err(e)?;
            for op in [BinaryOp::FloorDiv, BinaryOp::Rem] {
                same!(
                    format!("{dtype} {op:?}"),
                    tolerance(dtype),
                    cpu,
                    gpu,
                    &[a.clone(), b.clone()],
                    |l, x| l.binary(op, &x[0], &x[1])
                );
            }
            // argmax and argmin of floats: the first NaN wins, then the
            // first of equals.
            let nan = cpu.full(dtype, &[], Scalar::Real(f64::NAN)).map_err(e)?;
            let ties = cpu
                .binary(
                    BinaryOp::FloorDiv,
                    &a,
                    &cpu.full(dtype, &[], Scalar::Real(0.5)).map_err(e)?,
                )
                .map_err(e)?;
            let mask = cpu
                .compare(
                    CmpOp::Gt,
                    &a,
                    &cpu.full(dtype, &[], Scalar::Real(1.2)).map_err(e)?,
                )
                .map_err(e)?;
            let holes = cpu.select(&mask, &nan, &ties).map_err(e)?;
            for op in [weft::ops::ArgOp::Max, weft::ops::ArgOp::Min] {
                for x in [&a, &ties, &holes] {
                    same!(format!("{dtype} {op:?}"), 0.0, cpu, gpu, &one(x), |l, x| l
                        .apply(
                            weft::ops::TensorOp::ArgReduce {
                                op,
                                axis: 1,
                                keep_dims: false
                            },
                            &[&x[0]]
                        ));
                }
            }
            // any and all of floats: nonzero (NaN too) is true.
            let with_zero = cpu.binary(BinaryOp::Mul, &a, &b).map_err(e)?;
            for op in [weft::ops::ReduceOp::Any, weft::ops::ReduceOp::All] {
                same!(
                    format!("{dtype} {op:?}"),
                    0.0,
                    cpu,
                    gpu,
                    &one(&with_zero),
                    |l, x| l.reduce(op, &x[0], &[1], false)
                );
            }
        }
        // Exactly: floats to integers and bool, 64-bit integers narrowed.
        let odd = cpu
            .upload(
                Tensor::from_vec(
                    vec![
                        2.9f64,
                        -2.9,
                        1e300,
                        -1e300,
                        f64::NAN,
                        f64::INFINITY,
                        2147483647.5,
                        -2147483648.7,
                        9.3e18,
                        -0.0,
                    ],
                    &[10],
                )
                .map_err(|e| e.to_string())?,
            )
            .map_err(e)?;
        let wide = cpu
            .upload(
                Tensor::from_vec(vec![i64::MAX, i64::MIN, (1 << 33) + 5, -1, 0], &[5])
                    .map_err(|e| e.to_string())?,
            )
            .map_err(e)?;
        for (from, to) in [
            (&odd, DType::I32),
            (&odd, DType::I64),
            (&odd, DType::Bool),
            (&wide, DType::I32),
            (&wide, DType::F32),
            (&wide, DType::Bool),
        ] {
            let want = download(cpu, &cpu.cast(from, to).map_err(e)?)?;
            let there = cpu.transfer(from, Place::Cuda(0)).map_err(e)?;
            let got = download(gpu, &gpu.cast(&there, to).map_err(e)?)?;
            check(
                got == want,
                format!("{} to {to}: {got:?} against {want:?}", from.dtype()),
            )?;
        }
        Ok(())
    })
}

/// A derived gradient program on the device equals the CPU's, and a tape
/// whose loss crossed to the device gives its gradient back on the CPU.
fn gradients_match_the_cpu() -> Result<Outcome, String> {
    with_gpu(|_, cpu, gpu| {
        let e = |err: weft::OpError| err.to_string();
        // The norm of a c64 MPS of four sites and bond 4.
        let shapes: Vec<Vec<usize>> = (0..4)
            .map(|k| vec![if k == 0 { 1 } else { 4 }, 2, if k == 3 { 1 } else { 4 }])
            .collect();
        let norm = weft::Program::record(|p| {
            let sites: Vec<weft::program::Value> =
                shapes.iter().map(|s| p.input(DType::C64, s)).collect();
            let mut env = p.apply(
                weft::ops::TensorOp::Full {
                    dtype: DType::C64,
                    shape: vec![1, 1],
                    value: weft::Scalar::Real(1.0),
                },
                &[],
            )?;
            for &a in &sites {
                let ac = p.unary(weft::ops::UnaryOp::Conj, a)?;
                env = p.einsum("ab,asc,bsd->cd", &[env, ac, a])?;
            }
            let n = p.apply(weft::ops::TensorOp::Cast(DType::F64), &[env])?;
            let n = p.reshape(n, &[])?;
            p.output(n)
        })
        .map_err(|e| e.to_string())?;
        let grad = norm.gradient(0, &[0, 1, 2, 3]).map_err(|e| e.to_string())?;
        let mut on_cpu = Vec::new();
        for (k, s) in shapes.iter().enumerate() {
            on_cpu.push(random(cpu, DType::C64, s, 1300 + k as u64)?);
        }
        let on_gpu: Vec<TensorHandle> = on_cpu
            .iter()
            .map(|h| cpu.transfer(h, Place::Cuda(0)).map_err(e))
            .collect::<Result<_, _>>()?;
        let want = cpu
            .run_program(&grad, &on_cpu.iter().collect::<Vec<_>>())
            .map_err(e)?;
        let got = gpu
            .run_program(&grad, &on_gpu.iter().collect::<Vec<_>>())
            .map_err(e)?;
        for (k, (g, w)) in got.iter().zip(&want).enumerate() {
            close(
                &format!("gradient output {k}"),
                &download(gpu, g)?,
                &download(cpu, w)?,
                1e-10,
            )?;
        }
        // L = Σ tanh(A x)² with A x on the device: the gradient crosses back.
        let a = random(cpu, DType::F64, &[8, 8], 1310)?;
        let x = random(cpu, DType::F64, &[8], 1311)?;
        let loss = |lane_a: &dyn Fn(&TensorHandle) -> Result<TensorHandle, weft::OpError>| {
            weft::program::Tape::record(|| -> Result<TensorHandle, weft::OpError> {
                let (da, dx) = (lane_a(&a)?, lane_a(&x)?);
                let on = |h: &TensorHandle| h.place();
                let y = if on(&da) == Place::Cuda(0) {
                    let y = gpu.einsum("ij,j->i", &[&da, &dx])?;
                    let t = gpu.unary(weft::ops::UnaryOp::Tanh, &y)?;
                    gpu.sum_all(&gpu.mul(&t, &t)?)?
                } else {
                    let y = cpu.einsum("ij,j->i", &[&da, &dx])?;
                    let t = cpu.unary(weft::ops::UnaryOp::Tanh, &y)?;
                    cpu.sum_all(&cpu.mul(&t, &t)?)?
                };
                Ok(y)
            })
        };
        let (far, far_tape) = loss(&|h| cpu.transfer(h, Place::Cuda(0)));
        let (near, near_tape) = loss(&|h| Ok(h.clone()));
        let (far, near) = (far.map_err(e)?, near.map_err(e)?);
        check(
            far.place() == Place::Cuda(0),
            format!("the loss is on {:?}", far.place()),
        )?;
        let got = far_tape.gradient(cpu, &far, &[&a, &x]).map_err(e)?;
        let want = near_tape.gradient(cpu, &near, &[&a, &x]).map_err(e)?;
        for (k, (g, w)) in got.iter().zip(&want).enumerate() {
            check(
                g.place() == Place::Cpu(0),
                format!("gradient {k} on {:?}", g.place()),
            )?;
            close(
                &format!("gradient {k} across the transfer"),
                &download(cpu, g)?,
                &download(cpu, w)?,
                1e-10,
            )?;
        }
        Ok(())
    })
}

/// A two-stage pipeline: CPU makes inputs, the GPU multiplies, the CPU reduces.
fn cpu_gpu_pipeline() -> Result<Outcome, String> {
    with_gpu(|_, cpu, gpu| {
        let mut pending = Vec::new();
        for i in 0..16u64 {
            let a = random(cpu, DType::F32, &[128, 64], 700 + i)?;
            let b = random(cpu, DType::F32, &[64, 32], 800 + i)?;
            let (ga, gb) = (
                cpu.transfer(&a, Place::Cuda(0))
                    .map_err(|e| e.to_string())?,
                cpu.transfer(&b, Place::Cuda(0))
                    .map_err(|e| e.to_string())?,
            );
            let c = gpu.matmul(&ga, &gb).map_err(|e| e.to_string())?;
            let back = gpu.transfer(&c, 0).map_err(|e| e.to_string())?;
            let total = cpu.sum_all(&back).map_err(|e| e.to_string())?;
            let want = cpu
                .sum_all(&cpu.matmul(&a, &b).map_err(|e| e.to_string())?)
                .map_err(|e| e.to_string())?;
            pending.push((total, want));
        }
        for (i, (got, want)) in pending.iter().enumerate() {
            close(
                &format!("item {i}"),
                &download(cpu, got)?,
                &download(cpu, want)?,
                1e-4,
            )?;
        }
        Ok(())
    })
}

/// What the vocabulary does not define is refused at the call, naming op
/// and type (the device implements every op the vocabulary defines: the
/// coverage table has no missing cell), never a CPU fallback; a device
/// failure (out of memory) fails its op and loses nothing resident.
fn unsupported_and_device_errors_are_typed() -> Result<Outcome, String> {
    with_gpu(|_, cpu, gpu| {
        let x = cpu
            .transfer(&random(cpu, DType::F64, &[8, 8], 900)?, Place::Cuda(0))
            .map_err(|e| e.to_string())?;
        let before = download(gpu, &x)?;
        let ints = gpu.cast(&x, DType::I64).map_err(|e| e.to_string())?;
        match gpu.cholesky(&ints) {
            Err(err) => check(
                err.to_string().contains("cholesky is not defined for i64"),
                err.to_string(),
            )?,
            Ok(h) => return Err(format!("cholesky of i64 was accepted: {h:?}")),
        }
        let huge = gpu
            .zeros(DType::F64, &[1 << 22, 1 << 22])
            .map_err(|e| e.to_string())?;
        let err = wait_err(gpu, &huge)?;
        check(err.contains("CUDA device 0"), err)?;
        close(
            "resident after the errors",
            &download(gpu, &x)?,
            &before,
            0.0,
        )?;
        let memory = wait_ok(gpu.memory().map_err(|e| e.to_string())?);
        check(
            memory.tensors >= 1 && memory.tensor_bytes >= 512,
            format!("{memory:?}"),
        )?;
        Ok(())
    })
}

/// A lane's stream and cuBLAS handle go with its last handle, after its
/// last op: lanes opened and dropped by the hundred leave nothing behind.
fn dropped_lanes_release_their_streams() -> Result<Outcome, String> {
    with_gpu(|rt, _, gpu| {
        let x = gpu.ones(DType::F32, &[64, 64]).map_err(|e| e.to_string())?;
        let mut kept = Vec::new();
        for i in 0..200 {
            let lane = rt.cuda_lane(0).map_err(|e| e.to_string())?;
            let y = lane.matmul(&x, &x).map_err(|e| e.to_string())?;
            if i % 50 == 0 {
                kept.push(y); // outlives its lane: the stream lives on under it
            }
        }
        for y in &kept {
            let total = gpu.sum_all(y).map_err(|e| e.to_string())?;
            let got = download(gpu, &total)?;
            check(flat(&got) == [64.0 * 64.0 * 64.0], format!("{got:?}"))?;
        }
        // Retirements are ops of their own lanes, served fairly with the
        // query's: ask until they are all through (bounded).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let streams = loop {
            let streams = gpu
                .run(|engine| engine.lane_streams())
                .map_err(|e| e.to_string())?
                .wait()
                .map_err(|e| e.to_string())?;
            if streams <= 2 || std::time::Instant::now() > deadline {
                break streams;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        check(
            streams <= 2,
            format!("{streams} streams after 200 dropped lanes"),
        )
    })
}

/// Gather (negative indices, `i32` and `i64` ones), scatter and
/// scatter_add with duplicate indices, dynamic slices with starts that
/// clamp, and compress, on every element type, equal to the CPU's
/// exactly (copies, and adds in the index tensor's order); an index out
/// of range is the CPU's typed error, with the device's memory as it was.
fn indexing_ops_match_the_cpu() -> Result<Outcome, String> {
    with_gpu(|_, cpu, gpu| {
        let e = |e: weft::OpError| e.to_string();
        let up = |t: Result<Tensor, weft::error::TensorError>| {
            cpu.upload(t.map_err(|e| e.to_string())?).map_err(e)
        };
        let i64s = up(Tensor::from_vec(vec![2i64, -1, 0, 2, 5, -6], &[2, 3]))?;
        let i32s = up(Tensor::from_vec(vec![1i32, 1, -3], &[3]))?;
        let starts = up(Tensor::from_vec(vec![3i64, -2, 9], &[3]))?;
        for (k, dtype) in DType::ALL.into_iter().enumerate() {
            let s = 2000 + 10 * k as u64;
            let make = |shape: &[usize], seed: u64| {
                let d = match dtype {
                    DType::Bool => Distribution::Bits,
                    DType::I32 | DType::I64 => Distribution::Integers { low: -50, high: 50 },
                    _ => Distribution::Uniform,
                };
                cpu.random(dtype, shape, d, seed).map_err(e)
            };
            let mask = cpu
                .random(DType::Bool, &[4, 6, 3], Distribution::Bits, s + 4)
                .map_err(e)?;
            let count = download(cpu, &mask)?
                .as_slice::<bool>()
                .map_err(|e| e.to_string())?
                .iter()
                .filter(|&&b| b)
                .count();
            let v = [
                make(&[4, 6, 3], s)?,
                i64s.clone(),
                i32s.clone(),
                make(&[4, 2, 3, 3], s + 1)?,
                make(&[3, 6, 3], s + 2)?,
                make(&[2, 4, 2], s + 3)?,
                starts.clone(),
                mask,
            ];
            let name = |op: &str| format!("{dtype} {op}");
            same!(name("gather"), 0.0, cpu, gpu, &v, |l, v| l
                .gather(&v[0], &v[1], 1));
            same!(name("gather by i32"), 0.0, cpu, gpu, &v, |l, v| l
                .gather(&v[0], &v[2], 0));
            same!(name("scatter"), 0.0, cpu, gpu, &v, |l, v| l
                .scatter(&v[0], &v[1], &v[3], 1));
            same!(name("scatter by i32"), 0.0, cpu, gpu, &v, |l, v| l
                .scatter(&v[0], &v[2], &v[4], 0));
            if dtype != DType::Bool {
                same!(name("scatter_add"), 0.0, cpu, gpu, &v, |l, v| l
                    .scatter_add(&v[0], &v[1], &v[3], 1));
                same!(name("scatter_add by i32"), 0.0, cpu, gpu, &v, |l, v| l
                    .scatter_add(&v[0], &v[2], &v[4], 0));
            }
            same!(name("dynamic_slice"), 0.0, cpu, gpu, &v, |l, v| l
                .dynamic_slice(&v[0], &v[6], &[2, 4, 2]));
            same!(name("dynamic_update_slice"), 0.0, cpu, gpu, &v, |l, v| l
                .dynamic_update_slice(&v[0], &v[5], &v[6]));
            same!(name("compress"), 0.0, cpu, gpu, &v, |l, v| l
                .compress(&v[0], &v[7], count));
        }
        // An index past the axis: the CPU's error, on the device too.
        let x = random(cpu, DType::F64, &[3, 4], 2100)?;
        let bad = up(Tensor::from_vec(vec![0i64, 4], &[2]))?;
        let want = wait_err(cpu, &cpu.gather(&x, &bad, 1).map_err(e)?)?;
        let (gx, gbad) = (
            cpu.transfer(&x, Place::Cuda(0)).map_err(e)?,
            cpu.transfer(&bad, Place::Cuda(0)).map_err(e)?,
        );
        let memory = || -> Result<weft::engine::EngineMemory, String> {
            gpu.memory().map_err(e)?.wait().map_err(|e| e.to_string())
        };
        let held = memory()?;
        let got = wait_err(gpu, &gpu.gather(&gx, &gbad, 1).map_err(e)?)?;
        let index =
            "gather: index 4 (element [1] of the indices) is out of range for axis 1 of extent 4";
        check(
            got.contains(index) && want.contains(index),
            format!("{got} on the GPU, {want} on the CPU"),
        )?;
        let after = memory()?;
        check(
            after.tensors == held.tensors && after.tensor_bytes == held.tensor_bytes,
            format!("{held:?} before the failed gather, {after:?} after"),
        )?;
        close(
            "x after the failed gather",
            &download(gpu, &gx)?,
            &download(cpu, &x)?,
            0.0,
        )
    })
}

/// Cholesky and solve through cuSOLVER match the CPU's on every field
/// type (a vector and a matrix right-hand side); a matrix that is not
/// positive definite, a singular one and a NaN entry fail with the CPU's
/// own errors, and leave the inputs as they were.
fn decompositions_match_the_cpu() -> Result<Outcome, String> {
    with_gpu(|_, cpu, gpu| {
        let e = |e: weft::OpError| e.to_string();
        for (k, dtype) in DTYPES.into_iter().enumerate() {
            let s = 2200 + 10 * k as u64;
            let tol = 100.0 * tolerance(dtype);
            // A Hermitian positive definite matrix: M Mᴴ + 6 I.
            let m = random(cpu, dtype, &[6, 6], s)?;
            let mh = cpu
                .unary(UnaryOp::Conj, &cpu.permute(&m, &[1, 0]).map_err(e)?)
                .map_err(e)?;
            let shift = cpu
                .binary_scalar(
                    BinaryOp::Mul,
                    &cpu.eye(dtype, 6, 6).map_err(e)?,
                    Scalar::Real(6.0),
                )
                .map_err(e)?;
            let spd = cpu
                .binary(BinaryOp::Add, &cpu.matmul(&m, &mh).map_err(e)?, &shift)
                .map_err(e)?;
            let v = random(cpu, dtype, &[6], s + 1)?;
            let b = random(cpu, dtype, &[6, 3], s + 2)?;
            let inputs = [spd, m, v, b];
            same!(
                format!("{dtype} cholesky"),
                tol,
                cpu,
                gpu,
                &inputs,
                |l, x| l.cholesky(&x[0])
            );
            same!(
                format!("{dtype} solve, a vector"),
                tol,
                cpu,
                gpu,
                &inputs,
                |l, x| l.solve(&x[1], &x[2])
            );
            same!(
                format!("{dtype} solve, a matrix"),
                tol,
                cpu,
                gpu,
                &inputs,
                |l, x| l.solve(&x[1], &x[3])
            );
            // Failures: the CPU's error, the input intact.
            let negative = cpu
                .binary_scalar(BinaryOp::Mul, &inputs[0], Scalar::Real(-1.0))
                .map_err(e)?;
            let singular = cpu.zeros(dtype, &[6, 6]).map_err(e)?;
            let nan = cpu
                .binary_scalar(BinaryOp::Mul, &inputs[0], Scalar::Real(f64::NAN))
                .map_err(e)?;
            for (what, a) in [
                ("not definite", &negative),
                ("singular", &singular),
                ("NaN", &nan),
            ] {
                let ga = cpu.transfer(a, Place::Cuda(0)).map_err(e)?;
                let gv = cpu.transfer(&inputs[2], Place::Cuda(0)).map_err(e)?;
                let (want, got) = if what == "singular" {
                    (
                        wait_err(cpu, &cpu.solve(a, &inputs[2]).map_err(e)?)?,
                        wait_err(gpu, &gpu.solve(&ga, &gv).map_err(e)?)?,
                    )
                } else {
                    (
                        wait_err(cpu, &cpu.cholesky(a).map_err(e)?)?,
                        wait_err(gpu, &gpu.cholesky(&ga).map_err(e)?)?,
                    )
                };
                check(
                    got == want,
                    format!("{dtype} {what}: {got} on the GPU, {want} on the CPU"),
                )?;
                close(
                    &format!("{dtype} {what}: the input after the failure"),
                    &download(gpu, &ga)?,
                    &download(cpu, a)?,
                    0.0,
                )?;
            }
        }
        Ok(())
    })
}

/// `Uᴴ`, on `lane`.
fn adjoint<E: weft::TensorEngine>(
    lane: &Lane<E>,
    u: &TensorHandle,
) -> Result<TensorHandle, String> {
    let t = lane.permute(u, &[1, 0]).map_err(|e| e.to_string())?;
    lane.unary(UnaryOp::Conj, &t).map_err(|e| e.to_string())
}

/// The thin SVD, QR and eigh through cuSOLVER on every field type (tall,
/// wide and square for the SVD and QR): the same singular values and
/// eigenvalues as the CPU's, factors that rebuild the matrix and have
/// orthonormal columns (the vectors' phases are a gauge, free in both
/// places); QR's factors equal the CPU's (R's diagonal fixes the gauge).
fn spectral_decompositions_match_the_cpu() -> Result<Outcome, String> {
    with_gpu(|_, cpu, gpu| {
        let e = |e: weft::OpError| e.to_string();
        for (k, dtype) in DTYPES.into_iter().enumerate() {
            let s = 2300 + 10 * k as u64;
            let tol = 100.0 * tolerance(dtype);
            for (i, shape) in [[7, 4], [4, 7], [5, 5]].into_iter().enumerate() {
                let what = format!("{dtype} svd of {shape:?}");
                let a = random(cpu, dtype, &shape, s + i as u64)?;
                let ga = cpu.transfer(&a, Place::Cuda(0)).map_err(e)?;
                let (u, sv, vh) = gpu.svd(&ga).map_err(e)?;
                let (_, want, _) = cpu.svd(&a).map_err(e)?;
                close(
                    &format!("{what}: S"),
                    &download(gpu, &sv)?,
                    &download(cpu, &want)?,
                    tol,
                )?;
                let scaled = gpu
                    .binary(BinaryOp::Mul, &u, &gpu.cast(&sv, dtype).map_err(e)?)
                    .map_err(e)?;
                let rebuilt = gpu.matmul(&scaled, &vh).map_err(e)?;
                close(
                    &format!("{what}: U S Vᴴ"),
                    &download(gpu, &rebuilt)?,
                    &download(cpu, &a)?,
                    tol,
                )?;
                let k = shape[0].min(shape[1]);
                let eye = download(cpu, &cpu.eye(dtype, k, k).map_err(e)?)?;
                let uu = gpu.matmul(&adjoint(gpu, &u)?, &u).map_err(e)?;
                close(&format!("{what}: UᴴU"), &download(gpu, &uu)?, &eye, tol)?;
                let vv = gpu.matmul(&vh, &adjoint(gpu, &vh)?).map_err(e)?;
                close(&format!("{what}: VᴴV"), &download(gpu, &vv)?, &eye, tol)?;
                // QR with R's diagonal real and non-negative is unique for
                // a matrix of full rank: the CPU's factors exactly.
                let v = [a.clone()];
                same!(
                    format!("{dtype} qr of {shape:?}: Q"),
                    tol,
                    cpu,
                    gpu,
                    &v,
                    |l, x| l.qr(&x[0]).map(|(q, _)| q)
                );
                same!(
                    format!("{dtype} qr of {shape:?}: R"),
                    tol,
                    cpu,
                    gpu,
                    &v,
                    |l, x| l.qr(&x[0]).map(|(_, r)| r)
                );
            }
            // A Hermitian matrix: M + Mᴴ.
            let m = random(cpu, dtype, &[6, 6], s + 5)?;
            let h = cpu
                .binary(BinaryOp::Add, &m, &adjoint(cpu, &m)?)
                .map_err(e)?;
            let gh = cpu.transfer(&h, Place::Cuda(0)).map_err(e)?;
            let (w, v) = gpu.eigh(&gh).map_err(e)?;
            let (want, _) = cpu.eigh(&h).map_err(e)?;
            let what = format!("{dtype} eigh");
            close(
                &format!("{what}: W"),
                &download(gpu, &w)?,
                &download(cpu, &want)?,
                tol,
            )?;
            let av = gpu.matmul(&gh, &v).map_err(e)?;
            let vw = gpu
                .binary(BinaryOp::Mul, &v, &gpu.cast(&w, dtype).map_err(e)?)
                .map_err(e)?;
            close(
                &format!("{what}: A V = V W"),
                &download(gpu, &av)?,
                &download(gpu, &vw)?,
                tol,
            )?;
            let vv = gpu.matmul(&adjoint(gpu, &v)?, &v).map_err(e)?;
            let eye = download(cpu, &cpu.eye(dtype, 6, 6).map_err(e)?)?;
            close(&format!("{what}: VᴴV"), &download(gpu, &vv)?, &eye, tol)?;
        }
        Ok(())
    })
}

/// A chain of binary ops on one lane asks the driver for what its
/// ordering needs and no more: per op one launch, one allocation and one
/// event (its output's write); the intermediates, written and read on the
/// lane's stream alone, are freed in its order with no event and no wait;
/// the only waits are the first op's, for the upload on the copy stream,
/// and the download's.
fn a_chain_on_one_lane_makes_only_the_driver_calls_it_needs() -> Result<Outcome, String> {
    with_gpu(|_, cpu, gpu| {
        const OPS: u64 = 64;
        let calls = || -> Result<weft::cuda::DriverCalls, String> {
            gpu.run(|e: &mut CudaEngine| e.driver_calls())
                .map_err(|e| e.to_string())?
                .wait()
                .map_err(|e| e.to_string())
        };
        let x = random(cpu, DType::F32, &[256], 7)?;
        let gx = cpu
            .transfer(&x, Place::Cuda(0))
            .map_err(|e| e.to_string())?;
        gpu.sync(&gx)
            .map_err(|e| e.to_string())?
            .wait()
            .map_err(|e| e.to_string())?;
        let before = calls()?;
        let mut y = gx.clone();
        for _ in 0..OPS {
            y = gpu
                .binary(BinaryOp::Add, &y, &gx)
                .map_err(|e| e.to_string())?;
        }
        let got = download(gpu, &y)?;
        let mut want = x.clone();
        for _ in 0..OPS {
            want = cpu
                .binary(BinaryOp::Add, &want, &x)
                .map_err(|e| e.to_string())?;
        }
        close("the chain", &got, &download(cpu, &want)?, 1e-6)?;
        drop(y);
        // The intermediates' frees follow their handles' release: ask
        // until every one is through (bounded).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let c = loop {
            let c = calls()?.since(&before);
            if c.frees >= OPS || std::time::Instant::now() > deadline {
                break c;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        println!("    driver calls for {OPS} adds on one lane: {c:?}");
        check(
            c.frees >= OPS,
            format!("{} of {OPS} outputs freed", c.frees),
        )?;
        check(
            c.enqueued == OPS && c.allocs == OPS,
            format!("{c:?}: one launch and one allocation per op"),
        )?;
        check(
            c.event_records == OPS,
            format!("{c:?}: one event per op, none for reads or frees"),
        )?;
        // The first add waits for the upload (once per operand; the lane
        // has read it since, so no later add waits), and the download's
        // copy stream for the last add.
        check(
            c.event_waits <= 3,
            format!("{c:?}: a wait beyond the upload's and the download's"),
        )
    })
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

fn main() -> ExitCode {
    run_checks(&[
        ("kernels_compile", kernels_compile as Check),
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
