//! Gradients, indexing ops and the decompositions on the device, against the CPU.

use super::*;
use weft::ops::{Apply, CreateOps, ElementwiseOps, IndexOps, LinalgOps, ReduceOps, StructuralOps};
use weft::OpError;

/// A derived gradient program on the device equals the CPU's, and a tape
/// whose loss crossed to the device gives its gradient back on the CPU.
pub(super) fn gradients_match_the_cpu() -> Result<Outcome, String> {
    with_gpu(|_, cpu, gpu| {
        let e = |err: weft::OpError| err.to_string();
        // The norm of a c64 MPS of four sites and bond 4.
        let shapes: Vec<Vec<usize>> = (0..4)
            .map(|k| vec![if k == 0 { 1 } else { 4 }, 2, if k == 3 { 1 } else { 4 }])
            .collect();
        let norm = weft::Program::record(|p| -> Result<(), OpError> {
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
                let ac = p.unary(weft::ops::UnaryOp::Conj, &a)?;
                env = p.einsum("ab,asc,bsd->cd", &[&env, &ac, &a])?;
            }
            let n = p.apply(weft::ops::TensorOp::Cast(DType::F64), &[&env])?;
            let n = p.reshape(&n, &[])?;
            Ok(p.output(n)?)
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

/// Gather (negative indices, `i32` and `i64` ones), scatter and
/// scatter_add with duplicate indices, dynamic slices with starts that
/// clamp, and compress, on every element type, equal to the CPU's
/// exactly (copies, and adds in the index tensor's order); an index out
/// of range is the CPU's typed error, with the device's memory as it was.
pub(super) fn indexing_ops_match_the_cpu() -> Result<Outcome, String> {
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
pub(super) fn decompositions_match_the_cpu() -> Result<Outcome, String> {
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
pub(super) fn adjoint<E: weft::TensorEngine>(
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
pub(super) fn spectral_decompositions_match_the_cpu() -> Result<Outcome, String> {
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
