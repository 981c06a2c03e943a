//! The integer and bool vocabulary on the device, against the CPU.

use super::*;
use weft::ops::{CreateOps, ElementwiseOps, ReduceOps, StructuralOps};

/// Integer and bool tensors on the device: moved, made, compared, selected
/// and converted as on the CPU (exactly), float-to-integer conversions
/// truncating and saturating (NaN to 0), integer narrowing wrapping.
pub(super) fn integer_and_bool_ops_match_the_cpu() -> Result<Outcome, String> {
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
