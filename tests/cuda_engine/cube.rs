//! Kernels written in Rust with cubecl's `#[cube]`: their source compiles
//! under NVRTC, cubecl makes it without a runtime of its own, and on a
//! device a launch matches the CPU and mixes with the vocabulary.

use weft::cuda::cubecl;
use weft::cuda::{CubeArgs, CubeError, CubeKernel, Signature};
use weft::ops::{CreateOps, CubeOps, ElementwiseOps, ReduceOps};
use weft::tensor::Meta;
use weft::{error::TensorError, DType, OpError, Program, Tensor};

use cubecl::ir::Scope;
use cubecl::prelude::*;

use super::{download, flat, with_gpu};
use weft_tests::{check, quiet_panics, thread_count, Outcome};

#[cube]
fn axpy<F: Float>(x: &Array<F>, y: &Array<F>, out: &mut Array<F>, alpha: F) {
    if ABSOLUTE_POS < out.len() {
        out[ABSOLUTE_POS] = alpha * x[ABSOLUTE_POS] + y[ABSOLUTE_POS];
    }
}

/// `out = alpha·x + y`.
struct Axpy;

impl CubeKernel for Axpy {
    const NAME: &'static str = "axpy";
    const SIGNATURE: Signature = Signature {
        inputs: 2,
        outputs: 1,
        scalars: 1,
    };
    fn expand<F: Float + CubeElement>(scope: &mut Scope, a: &CubeArgs<F>) {
        axpy::expand::<F>(scope, a.input(0), a.input(1), a.output(0), a.scalar(0));
    }
}

#[cube]
fn split_sign<F: Float>(x: &Array<F>, up: &mut Array<F>, down: &mut Array<F>) {
    if ABSOLUTE_POS < x.len() {
        let v = x[ABSOLUTE_POS];
        up[ABSOLUTE_POS] = F::max(v, F::new(0.0));
        down[ABSOLUTE_POS] = F::min(v, F::new(0.0));
    }
}

/// Two outputs and no scalar: `x⁺` and `x⁻`, in blocks of 96 threads
/// (three warps, not the default).
struct SplitSign;

impl CubeKernel for SplitSign {
    const NAME: &'static str = "split_sign";
    const SIGNATURE: Signature = Signature {
        inputs: 1,
        outputs: 2,
        scalars: 0,
    };
    const CUBE_DIM: u32 = 96;
    fn expand<F: Float + CubeElement>(scope: &mut Scope, a: &CubeArgs<F>) {
        split_sign::expand::<F>(scope, a.input(0), a.output(0), a.output(1));
    }
}

/// A kernel whose expansion asks for a scalar its signature lacks.
struct Broken;

impl CubeKernel for Broken {
    const NAME: &'static str = "broken";
    const SIGNATURE: Signature = Signature {
        inputs: 2,
        outputs: 1,
        scalars: 0,
    };
    fn expand<F: Float + CubeElement>(scope: &mut Scope, a: &CubeArgs<F>) {
        axpy::expand::<F>(scope, a.input(0), a.input(1), a.output(0), a.scalar(0));
    }
}

/// The source cubecl makes of each kernel (weft's own, and the tests'),
/// for both element types,
/// compiles under NVRTC to PTX (for Hopper and for the oldest
/// architecture the kernels allow) with the entry point weft loads, and to a cubin for Hopper
/// where this NVRTC targets it. Needs only NVRTC.
pub(crate) fn cube_kernels_compile() -> Result<Outcome, String> {
    if !weft_cuda::nvrtc_present() {
        return Ok(Outcome::Skipped(
            "NVRTC cannot be loaded (as libnvrtc.so, or .so.12 down to .so.9): put a CUDA 12 lib \
             folder on LD_LIBRARY_PATH"
                .into(),
        ));
    }
    let tests: [weft_cuda::MakeSource; 2] = [
        weft_cuda::cube_source::<Axpy>,
        weft_cuda::cube_source::<SplitSign>,
    ];
    // Weft's own (the ported unary maps), then the tests' kernels.
    let own = weft_cuda::cube_kernels().iter().map(|(_, make)| *make);
    check(
        weft_cuda::cube_kernels().len() == 13,
        format!(
            "{} cubecl kernels of weft's own",
            weft_cuda::cube_kernels().len()
        ),
    )?;
    for make in own.chain(tests) {
        for dtype in [DType::F32, DType::F64] {
            let source = make(dtype).map_err(|e| e.to_string())?;
            for arch in [(9, 0), weft::cuda::CUBE_MIN_ARCH] {
                let ptx = weft_cuda::compile_cube(&source, arch)
                    .map_err(|log| format!("{}: {log}", source.entry))?;
                let entry = format!(".entry {}(", source.entry);
                check(
                    ptx.to_src().contains(&entry),
                    format!("{}: no {entry}", source.entry),
                )?;
            }
            if weft_cuda::nvrtc_architectures().contains(&90) {
                let cubin = weft_cuda::compile_cube_cubin(&source, 90)
                    .map_err(|log| format!("{} cubin: {log}", source.entry))?;
                check(
                    cubin.starts_with(b"\x7fELF"),
                    format!("{}: the cubin is not an ELF image", source.entry),
                )?;
            }
        }
    }
    Ok(Outcome::Passed)
}

/// cubecl is a compiler here: making a kernel's source starts no thread
/// (cubecl's runtime would start its device server's), the source is made
/// once per process for a kernel and type, and no cubecl runtime for a
/// device is even built (no `cubecl-cuda`, `-hip`, `-wgpu` or `-cpu` in
/// the workspace's lock file: without one, no `ComputeClient` can exist).
pub(crate) fn cube_makes_no_thread() -> Result<Outcome, String> {
    let lock = concat!(env!("CARGO_MANIFEST_DIR"), "/../Cargo.lock");
    let lock = std::fs::read_to_string(lock).map_err(|e| format!("Cargo.lock: {e}"))?;
    check(
        lock.contains("name = \"cubecl-cpp\""),
        "cubecl's compiler is not in the lock file",
    )?;
    for runtime in ["cubecl-cuda", "cubecl-hip", "cubecl-wgpu", "cubecl-cpu"] {
        check(
            !lock.contains(&format!("name = \"{runtime}\"")),
            format!("{runtime} is built"),
        )?;
    }
    let before = thread_count();
    let a = weft_cuda::cube_source_cached::<SplitSign>(DType::F64).map_err(|e| e.to_string())?;
    let b = weft_cuda::cube_source_cached::<SplitSign>(DType::F64).map_err(|e| e.to_string())?;
    let after = thread_count();
    check(
        before == after,
        format!("{before} threads before, {after} after"),
    )?;
    check(std::sync::Arc::ptr_eq(&a, &b), "the source was made twice")?;
    // The argument block the engine fills: scalars none, six lengths.
    let info = a.info;
    check(
        info.buffers == 3 && info.scalars.is_none() && info.static_meta == 6,
        format!("{info:?}"),
    )?;
    Ok(Outcome::Passed)
}

/// A host tensor of `dtype` holding `values`.
fn tensor(dtype: DType, values: &[f64]) -> Result<Tensor, String> {
    let n = [values.len()];
    match dtype {
        DType::F32 => Tensor::from_vec(values.iter().map(|&v| v as f32).collect(), &n),
        _ => Tensor::from_vec(values.to_vec(), &n),
    }
    .map_err(|e| e.to_string())
}

/// A resident tensor's values, as `f64`s (read back to the host).
fn got<E: weft::TensorEngine>(
    lane: &weft::Lane<E>,
    h: &weft::TensorHandle,
) -> Result<Vec<f64>, String> {
    Ok(flat(&download(lane, h)?))
}

/// On a device: `axpy` and `split_sign` match the host for both element
/// types, a kernel's output feeds the vocabulary's ops on the same lane,
/// and what cannot be launched is refused at the call, named.
pub(crate) fn cube_kernels_match_the_cpu() -> Result<Outcome, String> {
    with_gpu(|_rt, _cpu, gpu| {
        let err = |e: OpError| e.to_string();
        let get = |h: &weft::TensorHandle| got(gpu, h);
        // More elements than one block, not a multiple of it.
        let n = 1000;
        let xs: Vec<f64> = (0..n).map(|i| (i as f64 * 0.37).sin()).collect();
        let ys: Vec<f64> = (0..n).map(|i| (i as f64 * 0.11).cos()).collect();
        for dtype in [DType::F32, DType::F64] {
            let tol = if dtype == DType::F32 { 1e-6 } else { 1e-15 };
            let x = gpu.upload(tensor(dtype, &xs)?).map_err(err)?;
            let y = gpu.upload(tensor(dtype, &ys)?).map_err(err)?;
            let meta = || Meta {
                dtype,
                shape: vec![n],
            };
            let out = gpu
                .launch::<Axpy>(&[&x, &y], &[2.5], &[meta()])
                .map_err(err)?;
            // Mixed with the vocabulary: the kernel's result feeds an op.
            let twice = gpu.add(&out[0], &out[0]).map_err(err)?;
            for (i, (got, doubled)) in get(&out[0])?.iter().zip(get(&twice)?).enumerate() {
                let want = 2.5 * xs[i] + ys[i];
                check(
                    (got - want).abs() <= tol * 4.0 && (doubled - 2.0 * want).abs() <= tol * 8.0,
                    format!("{dtype} axpy {i}: {got} and {doubled} for {want}"),
                )?;
            }
            let parts = gpu
                .launch::<SplitSign>(&[&x], &[], &[meta(), meta()])
                .map_err(err)?;
            let (up, down) = (get(&parts[0])?, get(&parts[1])?);
            let rounded = flat(&tensor(dtype, &xs)?);
            for (i, v) in rounded.iter().enumerate() {
                check(
                    up[i] == v.max(0.0) && down[i] == v.min(0.0),
                    format!("{dtype} split_sign {i}: {v} gave {} and {}", up[i], down[i]),
                )?;
            }
        }
        // Refused at the call.
        let x = gpu.zeros(DType::F64, &[4]).map_err(err)?;
        let f = gpu.zeros(DType::F32, &[4]).map_err(err)?;
        let c = gpu.zeros(DType::C64, &[4]).map_err(err)?;
        let m = |dtype| {
            [Meta {
                dtype,
                shape: vec![4],
            }]
        };
        match gpu.launch::<Axpy>(&[&x], &[1.0], &m(DType::F64)) {
            Err(OpError::Tensor(TensorError::Arity {
                op: "axpy",
                expected: 2,
                got: 1,
            })) => {}
            other => return Err(format!("one input for two: {other:?}")),
        }
        match gpu.launch::<Axpy>(&[&x, &f], &[1.0], &m(DType::F64)) {
            Err(OpError::Tensor(TensorError::MixedDTypes { .. })) => {}
            other => return Err(format!("f64 and f32: {other:?}")),
        }
        match gpu.launch::<Axpy>(&[&c, &c], &[1.0], &m(DType::C64)) {
            Err(OpError::Cube(CubeError::DType {
                kernel: "axpy",
                dtype: DType::C64,
            })) => {}
            other => return Err(format!("c64: {other:?}")),
        }
        quiet_panics("the len is 0 but the index is 0");
        match gpu.launch::<Broken>(&[&x, &x], &[], &m(DType::F64)) {
            Err(OpError::Cube(CubeError::Expand {
                kernel: "broken", ..
            })) => {}
            other => return Err(format!("a broken expansion: {other:?}")),
        }
        // The lane still works after the refusals.
        check(get(&x)? == [0.0; 4], "the lane after the refusals")?;
        Ok(())
    })
}

/// On a device: the ported maps (the real types' unary ops as cubecl
/// kernels) give what the CPU gives, at the edges too (signed zeros,
/// infinities, NaN, `expm1` near 0 and near overflow), and what the
/// source's switch kernel they replaced gives.
pub(crate) fn cube_maps_match_the_cpu_and_the_source() -> Result<Outcome, String> {
    with_gpu(|_rt, cpu, gpu| {
        let err = |e: OpError| e.to_string();
        let edges = [
            0.0,
            -0.0,
            1e-10,
            -1e-10,
            1e-3,
            0.5,
            -0.5,
            2.0,
            -3.0,
            30.0,
            88.0,
            700.0,
            709.0,
            710.0,
            -800.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
        ];
        let source = |on: bool| -> Result<(), String> {
            gpu.run(move |e: &mut weft::cuda::CudaEngine| e.use_source_maps(on))
                .map_err(|e| e.to_string())?
                .wait()
                .map_err(|e| e.to_string())
        };
        for dtype in [DType::F32, DType::F64] {
            // Relative, and absolute near 0 (the CPU's libm and CUDA's
            // differ by an ulp or two).
            let tol = if dtype == DType::F32 { 4e-6 } else { 1e-14 };
            let host = tensor(dtype, &edges)?;
            let x = cpu.upload(host.clone()).map_err(err)?;
            let g = gpu.upload(host).map_err(err)?;
            for op in weft::ops::UnaryOp::ALL
                .into_iter()
                .filter(|op| op.supports(dtype))
            {
                let want = got(cpu, &cpu.unary(op, &x).map_err(err)?)?;
                let run = |on| -> Result<Vec<f64>, String> {
                    source(on)?;
                    got(gpu, &gpu.unary(op, &g).map_err(err)?)
                };
                let (cube, src) = (run(false)?, run(true)?);
                for (i, &v) in edges.iter().enumerate() {
                    let same = |a: f64, b: f64| {
                        (a.is_nan() && b.is_nan())
                            || a == b && a.is_sign_negative() == b.is_sign_negative()
                            || (a - b).abs() <= tol * b.abs().max(1e-30)
                    };
                    check(
                        same(cube[i], want[i]) && same(cube[i], src[i]),
                        format!(
                            "{dtype} {} of {v}: cubecl {}, CPU {}, source {}",
                            op.name(),
                            cube[i],
                            want[i],
                            src[i]
                        ),
                    )?;
                }
            }
        }
        source(false)
    })
}

/// The `y = alpha·x + y` program of the checks below, reduced to its sum.
fn axpy_program(n: usize, dtype: DType) -> Result<Program, OpError> {
    Program::record(|p| -> Result<(), OpError> {
        let x = p.input(dtype, &[n]);
        let y = p.input(dtype, &[n]);
        let out = p.launch::<Axpy>(
            &[&x, &y],
            &[2.5],
            &[Meta {
                dtype,
                shape: vec![n],
            }],
        )?;
        let total = p.sum_all(&out[0])?;
        Ok(p.output(total)?)
    })
}

/// A program of one launch of `K` on inputs of these types and shapes,
/// making one array `out`.
fn one_launch<K: CubeKernel>(
    inputs: &[(DType, &[usize])],
    scalars: &[f64],
    out: Meta,
) -> Result<Program, OpError> {
    Program::record(|p| -> Result<(), OpError> {
        let xs: Vec<_> = inputs
            .iter()
            .map(|&(dtype, shape)| p.input(dtype, shape))
            .collect();
        let refs: Vec<_> = xs.iter().collect();
        let made = p.launch::<K>(&refs, scalars, &[out])?;
        Ok(p.output(made[0])?)
    })
}

/// Without a device: a kernel is a step of a recorded program like any
/// op, checked when recorded (counts, types, the source cubecl makes);
/// its gradient is refused, naming the step; a CPU lane refuses it at the
/// call and a program holding it fails naming the step.
pub(crate) fn cube_kernels_record_into_programs() -> Result<Outcome, String> {
    let program = axpy_program(8, DType::F64).map_err(|e| e.to_string())?;
    let names: Vec<&str> = program.steps().iter().map(|s| s.op.name()).collect();
    check(names == ["axpy", "sum"], format!("steps {names:?}"))?;
    match program.gradient(0, &[0]) {
        Err(weft::error::GradError::NoRule {
            step: 0,
            op: "axpy",
            ..
        }) => {}
        other => return Err(format!("the gradient through a kernel: {other:?}")),
    }
    // Checked when recorded.
    let f64s = |n| Meta {
        dtype: DType::F64,
        shape: vec![n],
    };
    let refused = one_launch::<Axpy>(&[(DType::F64, &[4]), (DType::F32, &[4])], &[1.0], f64s(4));
    check(
        refused
            .as_ref()
            .is_err_and(|e| e.to_string().contains("different element types")),
        format!("mixed types recorded: {refused:?}"),
    )?;
    quiet_panics("the len is 0 but the index is 0");
    let refused = one_launch::<Broken>(&[(DType::F64, &[4]), (DType::F64, &[4])], &[], f64s(4));
    check(
        matches!(
            refused,
            Err(OpError::Cube(CubeError::Expand {
                kernel: "broken",
                ..
            }))
        ),
        format!("a broken kernel recorded: {refused:?}"),
    )?;
    // An empty input where the output runs threads (a checked read would
    // still load its element); with the output empty too, nothing runs.
    let f32s = |shape: &[usize]| Meta {
        dtype: DType::F32,
        shape: shape.to_vec(),
    };
    let refused = one_launch::<Axpy>(
        &[(DType::F32, &[4]), (DType::F32, &[0])],
        &[1.0],
        f32s(&[4]),
    );
    check(
        matches!(
            refused,
            Err(OpError::Cube(CubeError::EmptyArray {
                kernel: "axpy",
                array: 1
            }))
        ),
        format!("an empty input recorded: {refused:?}"),
    )?;
    one_launch::<Axpy>(
        &[(DType::F32, &[0, 3]), (DType::F32, &[0, 3])],
        &[1.0],
        f32s(&[3, 0]),
    )
    .map_err(|e| format!("an all-empty launch: {e}"))?;
    // A CPU lane: refused at the call; the program fails at its step.
    let rt = weft::Runtime::builder()
        .split(1)
        .build()
        .map_err(|e| e.to_string())?;
    let cpu = rt.lane(0).map_err(|e| e.to_string())?;
    let x = cpu.ones(DType::F64, &[8]).map_err(|e| e.to_string())?;
    match cpu.launch::<Axpy>(
        &[&x, &x],
        &[2.5],
        &[Meta {
            dtype: DType::F64,
            shape: vec![8],
        }],
    ) {
        Err(OpError::Tensor(TensorError::ForeignKernel { kernel: "axpy" })) => {}
        other => return Err(format!("a kernel on a CPU lane: {other:?}")),
    }
    let out = cpu
        .run_program(&program, &[&x, &x])
        .map_err(|e| e.to_string())?;
    let failed = cpu.download(&out[0]).map_err(|e| e.to_string())?.wait();
    let message = format!("{failed:?}");
    check(
        failed.is_err() && message.contains("axpy") && message.contains("runs only on"),
        format!("the program on a CPU lane: {message}"),
    )?;
    // The lane goes on.
    let two = cpu.add(&x, &x).map_err(|e| e.to_string())?;
    check(
        got(&cpu, &two)? == [2.0; 8],
        "the CPU lane after the refusals",
    )?;
    rt.shutdown().map_err(|e| e.to_string())?;
    Ok(Outcome::Passed)
}

/// On a device: the recorded program holding a kernel gives what the same
/// ops give eagerly.
pub(crate) fn cube_kernels_run_in_programs() -> Result<Outcome, String> {
    with_gpu(|_rt, _cpu, gpu| {
        let err = |e: OpError| e.to_string();
        let n = 3000;
        let xs: Vec<f64> = (0..n).map(|i| (i as f64 * 0.37).sin()).collect();
        let ys: Vec<f64> = (0..n).map(|i| (i as f64 * 0.11).cos()).collect();
        for dtype in [DType::F32, DType::F64] {
            let x = gpu.upload(tensor(dtype, &xs)?).map_err(err)?;
            let y = gpu.upload(tensor(dtype, &ys)?).map_err(err)?;
            let program = axpy_program(n, dtype).map_err(err)?;
            let recorded = gpu.run_program(&program, &[&x, &y]).map_err(err)?.remove(0);
            let out = gpu
                .launch::<Axpy>(
                    &[&x, &y],
                    &[2.5],
                    &[Meta {
                        dtype,
                        shape: vec![n],
                    }],
                )
                .map_err(err)?;
            let eager = gpu.sum_all(&out[0]).map_err(err)?;
            let get = |h: &weft::TensorHandle| got(gpu, h);
            let (a, b) = (get(&recorded)?, get(&eager)?);
            let want: f64 = xs.iter().zip(&ys).map(|(x, y)| 2.5 * x + y).sum();
            let tol = if dtype == DType::F32 { 1e-3 } else { 1e-9 };
            check(
                a == b && (a[0] - want).abs() <= tol * want.abs().max(1.0),
                format!("{dtype}: recorded {a:?}, eager {b:?}, host {want}"),
            )?;
        }
        Ok(())
    })
}
