//! Elementwise ops, reductions, structural and creation ops, products and the rest of the vocabulary on the device, against the CPU.

use super::*;
use weft::ops::{CreateOps, ElementwiseOps, LinalgOps, ReduceOps, StructuralOps};

pub(super) fn elementwise_ops_match_the_cpu() -> Result<Outcome, String> {
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

pub(super) fn reductions_match_the_cpu() -> Result<Outcome, String> {
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

pub(super) fn structural_and_creation_ops_match_the_cpu() -> Result<Outcome, String> {
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

pub(super) fn products_match_the_cpu() -> Result<Outcome, String> {
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
pub(super) fn vocabulary_ops_match_the_cpu() -> Result<Outcome, String> {
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
