//! Reverse-mode gradients of programs (`Program::gradient`, `Program::vjp`),
//! each rule against central finite differences in f64 (and c64 for the
//! complex rules: `∂L/∂x + i·∂L/∂y`), on random inputs. Programs are run
//! here by a plain interpreter of their steps (`TensorOp::run`), and one
//! derived program through a lane as one message; the eager tape
//! (`Tape::record`) against the same loss recorded as a program.

use weft::ops::{Apply, ElementwiseOps, LinalgOps, ReduceOps, StructuralOps};
use weft::OpError;
use weft::{
    c64,
    error::GradError,
    ops::{
        BinaryOp, CmpOp, Distribution, HostRun, MatOp, ReduceOp, ScatterMode, SliceAxis, TensorOp,
        UnaryOp,
    },
    program::{Tape, Value},
    DType, Program, Recorder, Scalar, Tensor,
};
use weft_tests::wait_ok;

/// Runs `p` step by step on the host.
fn eval(p: &Program, inputs: &[Tensor]) -> Vec<Tensor> {
    let mut values: Vec<Option<Tensor>> = vec![None; p.metas().len()];
    for (k, &i) in p.inputs().iter().enumerate() {
        values[i] = Some(inputs[k].clone());
    }
    for step in p.steps() {
        let args: Vec<&Tensor> = step
            .args
            .iter()
            .map(|&a| values[a].as_ref().expect("computed"))
            .collect();
        let outs = step
            .op
            .run(&args, 1)
            .unwrap_or_else(|e| panic!("{}: {e}", step.op.name()));
        for (k, t) in outs.into_iter().enumerate() {
            values[step.first_result + k] = Some(t);
        }
    }
    p.outputs()
        .iter()
        .map(|&o| values[o].clone().expect("computed"))
        .collect()
}

fn loss(p: &Program, inputs: &[Tensor]) -> f64 {
    eval(p, inputs)[0].as_slice::<f64>().unwrap()[0]
}

/// The elements as complex numbers (reals with imaginary part 0).
fn complex(t: &Tensor) -> Vec<c64> {
    match t.dtype() {
        DType::F64 => t
            .as_slice::<f64>()
            .unwrap()
            .iter()
            .map(|&x| c64::new(x, 0.0))
            .collect(),
        DType::C64 => t.as_slice::<c64>().unwrap().to_vec(),
        other => panic!("{other}"),
    }
}

fn with(t: &Tensor, k: usize, delta: c64) -> Tensor {
    let mut v = complex(t);
    v[k] += delta;
    match t.dtype() {
        DType::F64 => Tensor::from_vec(v.iter().map(|z| z.re).collect(), t.shape()).unwrap(),
        _ => Tensor::from_vec(v, t.shape()).unwrap(),
    }
}

/// The derived gradients equal central differences of the loss.
fn check(name: &str, p: &Program, inputs: &[Tensor], wrt: &[usize]) {
    let g = p.gradient(0, wrt).unwrap_or_else(|e| panic!("{name}: {e}"));
    let outs = eval(&g, inputs);
    let n = p.outputs().len();
    assert_eq!(outs.len(), n + wrt.len(), "{name}");
    assert_eq!(outs[0], eval(p, inputs)[0], "{name}: the loss itself");
    let h = 1e-6;
    for (w, &i) in wrt.iter().enumerate() {
        let x = &inputs[i];
        let got = &outs[n + w];
        assert_eq!(
            (got.dtype(), got.shape()),
            (x.dtype(), x.shape()),
            "{name}: input {i}"
        );
        let got = complex(got);
        let parts: &[c64] = if x.dtype().is_complex() {
            &[c64::new(1.0, 0.0), c64::new(0.0, 1.0)]
        } else {
            &[c64::new(1.0, 0.0)]
        };
        for (k, g) in got.iter().enumerate() {
            let mut want = c64::new(0.0, 0.0);
            for &unit in parts {
                let run = |sign: f64| {
                    let mut moved = inputs.to_vec();
                    moved[i] = with(x, k, unit * (sign * h));
                    loss(p, &moved)
                };
                // ∂L/∂x along `unit`, which the gradient carries along `unit`.
                want += unit * ((run(1.0) - run(-1.0)) / (2.0 * h));
            }
            let err = (g - want).norm();
            assert!(
                err <= 1e-6 * want.norm().max(1.0),
                "{name}: input {i} element {k}: {g} against {want} by differences"
            );
        }
    }
}

fn random(dtype: DType, shape: &[usize], seed: u64) -> Tensor {
    Tensor::random(dtype, shape, Distribution::Normal, seed).unwrap()
}

/// `|x| + 0.5`: inside log's, sqrt's and pow's domain.
fn positive(shape: &[usize], seed: u64) -> Tensor {
    let v = random(DType::F64, shape, seed);
    Tensor::from_vec(
        v.as_slice::<f64>()
            .unwrap()
            .iter()
            .map(|x| x.abs() + 0.5)
            .collect(),
        shape,
    )
    .unwrap()
}

/// A program of `inputs` whose output is the real loss `Re Σ w·f(inputs)`,
/// `w` a fixed random weight (its own last input, not differentiated).
fn case(
    inputs: &[Tensor],
    f: impl FnOnce(&Recorder, &[Value]) -> Result<Value, OpError>,
) -> (Program, Vec<Tensor>) {
    let mut weight = None;
    let p = Program::record(|p| -> Result<(), OpError> {
        let vs: Vec<Value> = inputs
            .iter()
            .map(|t| p.input(t.dtype(), t.shape()))
            .collect();
        let y = f(p, &vs)?;
        let m = p.meta(y)?.clone();
        let w = p.input(m.dtype, &m.shape);
        weight = Some(random(m.dtype, &m.shape, 99));
        let wy = p.mul(&w, &y)?;
        let all: Vec<usize> = (0..m.shape.len()).collect();
        let mut s = p.sum(&wy, &all)?;
        if m.dtype.is_complex() {
            s = p.apply(TensorOp::Cast(DType::F64), &[&s])?;
        }
        Ok(p.output(s)?)
    })
    .unwrap();
    let mut all = inputs.to_vec();
    all.push(weight.unwrap());
    (p, all)
}

fn check_case(
    name: &str,
    inputs: &[Tensor],
    f: impl FnOnce(&Recorder, &[Value]) -> Result<Value, OpError>,
) {
    let (p, all) = case(inputs, f);
    let wrt: Vec<usize> = (0..inputs.len()).collect();
    check(name, &p, &all, &wrt);
}

/// A case of `selection_and_indexing`: `(x, indices, starts)` to a value.
type IndexCase = dyn Fn(&Recorder, Value, Value, Value) -> Result<Value, OpError>;

const F: DType = DType::F64;
const C: DType = DType::C64;

#[test]
fn binary_ops_with_broadcasting() {
    for dtype in [F, C] {
        let a = random(dtype, &[2, 3], 1);
        let b = random(dtype, &[3], 2);
        for op in [BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div] {
            check_case(
                &format!("{dtype} {op:?}"),
                &[a.clone(), b.clone()],
                |p, v| p.binary(op, &v[0], &v[1]),
            );
        }
    }
    let (a, b) = (positive(&[2, 3], 3), random(F, &[2, 1], 4));
    check_case("pow", &[a.clone(), b.clone()], |p, v| {
        p.binary(BinaryOp::Pow, &v[0], &v[1])
    });
    for op in [BinaryOp::Maximum, BinaryOp::Minimum, BinaryOp::Rem] {
        check_case(
            &format!("{op:?}"),
            &[random(F, &[2, 3], 5), random(F, &[3], 6)],
            |p, v| p.binary(op, &v[0], &v[1]),
        );
    }
}

#[test]
fn scalar_forms() {
    let x = positive(&[4], 7);
    let s = |value: f64, scalar_first: bool, op: BinaryOp| TensorOp::BinaryScalar {
        op,
        value: Scalar::Real(value),
        scalar_first,
    };
    for (op, first) in [
        (BinaryOp::Add, false),
        (BinaryOp::Sub, true),
        (BinaryOp::Mul, false),
        (BinaryOp::Div, false),
        (BinaryOp::Div, true),
        (BinaryOp::Pow, false),
        (BinaryOp::Pow, true),
        (BinaryOp::Maximum, false),
    ] {
        check_case(
            &format!("{op:?} scalar first {first}"),
            std::slice::from_ref(&x),
            |p, v| p.apply(s(1.25, first, op), &[&v[0]]),
        );
    }
    let z = random(C, &[3], 8);
    check_case("c64 times a complex scalar", &[z], |p, v| {
        p.apply(
            TensorOp::BinaryScalar {
                op: BinaryOp::Mul,
                value: Scalar::Complex(c64::new(0.5, -2.0)),
                scalar_first: false,
            },
            &[&v[0]],
        )
    });
}

#[test]
fn unary_ops() {
    let x = positive(&[5], 9);
    for op in [
        UnaryOp::Neg,
        UnaryOp::Exp,
        UnaryOp::Log,
        UnaryOp::Sqrt,
        UnaryOp::Rsqrt,
        UnaryOp::Sin,
        UnaryOp::Cos,
        UnaryOp::Tanh,
        UnaryOp::Expm1,
        UnaryOp::Log1p,
        UnaryOp::Abs,
    ] {
        check_case(&format!("{op:?}"), std::slice::from_ref(&x), |p, v| {
            p.unary(op, &v[0])
        });
    }
    let z = random(C, &[4], 10);
    for op in [
        UnaryOp::Exp,
        UnaryOp::Sin,
        UnaryOp::Conj,
        UnaryOp::Tanh,
        UnaryOp::Neg,
        UnaryOp::Abs,
    ] {
        check_case(&format!("c64 {op:?}"), std::slice::from_ref(&z), |p, v| {
            p.unary(op, &v[0])
        });
    }
}

#[test]
fn reductions() {
    let x = random(F, &[3, 4], 11);
    let reduce = |op, axes: &[usize], keep_dims| TensorOp::Reduce {
        op,
        axes: axes.to_vec(),
        keep_dims,
    };
    for op in [
        ReduceOp::Sum,
        ReduceOp::Mean,
        ReduceOp::Max,
        ReduceOp::Min,
        ReduceOp::Norm,
    ] {
        for (axes, keep) in [(&[1][..], false), (&[0][..], true), (&[0, 1][..], false)] {
            check_case(
                &format!("{op:?} over {axes:?}"),
                std::slice::from_ref(&x),
                |p, v| p.apply(reduce(op, axes, keep), &[&v[0]]),
            );
        }
    }
    let z = random(C, &[2, 3], 12);
    check_case("c64 norm", std::slice::from_ref(&z), |p, v| {
        p.apply(reduce(ReduceOp::Norm, &[1], false), &[&v[0]])
    });
    check_case("c64 sum", &[z], |p, v| {
        p.apply(reduce(ReduceOp::Sum, &[0], false), &[&v[0]])
    });
}

#[test]
fn max_splits_its_gradient_among_ties() {
    // Two equal maxima in the row: each gets half.
    let x = Tensor::from_vec(vec![1.0, 3.0, 3.0, 2.0], &[4]).unwrap();
    let p = Program::record(|p| -> Result<(), OpError> {
        let v = p.input(F, &[4]);
        let m = p.apply(
            TensorOp::Reduce {
                op: ReduceOp::Max,
                axes: vec![0],
                keep_dims: false,
            },
            &[&v],
        )?;
        Ok(p.output(m)?)
    })
    .unwrap();
    let g = eval(&p.gradient(0, &[0]).unwrap(), &[x]);
    assert_eq!(g[1].as_slice::<f64>().unwrap(), [0.0, 0.5, 0.5, 0.0]);
}

#[test]
fn structural_ops() {
    let x = random(F, &[2, 3, 4], 13);
    let ops = [
        TensorOp::Reshape(vec![6, 4]),
        TensorOp::Permute(vec![2, 0, 1]),
        TensorOp::BroadcastTo(vec![5, 2, 3, 4]),
        TensorOp::Reverse(vec![0, 2]),
        TensorOp::Slice(vec![
            SliceAxis {
                start: 1,
                stop: 2,
                step: 1,
            },
            SliceAxis {
                start: 0,
                stop: 3,
                step: 1,
            },
            SliceAxis {
                start: 1,
                stop: 3,
                step: 1,
            },
        ]),
        TensorOp::Pad {
            widths: vec![(1, 0), (0, 2), (1, 1)],
            value: Scalar::Real(3.0),
        },
        TensorOp::BroadcastInDim {
            shape: vec![4, 5, 2, 3],
            dims: vec![2, 3, 0],
        },
        TensorOp::Triangle { k: 0, upper: true },
        TensorOp::DiagEmbed { axes: [0, 2] },
        TensorOp::Cast(DType::C64),
        // The diagonal of axes of extents 2 and 4, and of 4 and 3 (in
        // either order).
        TensorOp::Diagonal { axes: [0, 2] },
        TensorOp::Diagonal { axes: [2, 1] },
        // Steps: every other row from 1, every third column, a step past
        // the end.
        TensorOp::Slice(vec![
            SliceAxis {
                start: 0,
                stop: 2,
                step: 5,
            },
            SliceAxis {
                start: 1,
                stop: 3,
                step: 2,
            },
            SliceAxis {
                start: 0,
                stop: 4,
                step: 3,
            },
        ]),
    ];
    for op in ops {
        let name = format!("{op:?}");
        check_case(&name, std::slice::from_ref(&x), |p, v| {
            p.apply(op, &[&v[0]])
        });
    }
    let y = random(F, &[2, 1, 4], 14);
    check_case(
        "broadcast_in_dim from extent 1",
        std::slice::from_ref(&y),
        |p, v| {
            p.apply(
                TensorOp::BroadcastInDim {
                    shape: vec![3, 2, 4],
                    dims: vec![1, 0, 2],
                },
                &[&v[0]],
            )
        },
    );
    check_case(
        "concatenate",
        &[x.clone(), random(F, &[2, 1, 4], 15)],
        |p, v| {
            p.apply(
                TensorOp::Concatenate { axis: 1, inputs: 2 },
                &[&v[0], &v[1]],
            )
        },
    );
}

#[test]
fn selection_and_indexing() {
    let (a, b) = (random(F, &[2, 3], 16), random(F, &[3], 17));
    check_case("select", &[a.clone(), b.clone()], |p, v| {
        let m = p.apply(TensorOp::Compare(CmpOp::Gt), &[&v[0], &v[1]])?;
        p.apply(TensorOp::Select, &[&m, &v[0], &v[1]])
    });
    check_case("clamp", std::slice::from_ref(&a), |p, v| {
        p.apply(TensorOp::Clamp { lo: -0.3, hi: 0.4 }, &[&v[0]])
    });
    // Bounds of their own (some `lo > hi`), broadcast, each differentiated.
    let (lo, hi) = (random(F, &[3], 22), random(F, &[2, 1], 23));
    check_case("clamp_between", &[a.clone(), lo, hi], |p, v| {
        p.apply(TensorOp::ClampBetween, &[&v[0], &v[1], &v[2]])
    });
    let taken = a
        .as_slice::<f64>()
        .unwrap()
        .iter()
        .filter(|&&x| x > 0.2)
        .count();
    assert!(taken > 0 && taken < 6, "{taken} of 6 taken");
    check_case("compress", std::slice::from_ref(&a), |p, v| {
        let limit = p.apply(
            TensorOp::Full {
                dtype: F,
                shape: Vec::new(),
                value: Scalar::Real(0.2),
            },
            &[],
        )?;
        let m = p.apply(TensorOp::Compare(CmpOp::Gt), &[&v[0], &limit])?;
        p.apply(TensorOp::Compress { len: taken }, &[&v[0], &m])
    });
    let x = random(F, &[4, 3], 18);
    let idx = Tensor::from_vec(vec![2i64, 0, 2, 3], &[4]).unwrap();
    let starts = Tensor::from_vec(vec![1i64, 1], &[2]).unwrap();
    let (i2, s2) = (idx.clone(), starts.clone());
    let index_case = |name: &str, f: &IndexCase| {
        let (p, all) = {
            let mut weight = None;
            let p = Program::record(|p| -> Result<(), OpError> {
                let xv = p.input(F, &[4, 3]);
                let iv = p.input(DType::I64, &[4]);
                let sv = p.input(DType::I64, &[2]);
                let y = f(p, xv, iv, sv)?;
                let m = p.meta(y)?.clone();
                let w = p.input(F, &m.shape);
                weight = Some(random(F, &m.shape, 98));
                let wy = p.mul(&w, &y)?;
                let all: Vec<usize> = (0..m.shape.len()).collect();
                let s = p.sum(&wy, &all)?;
                Ok(p.output(s)?)
            })
            .unwrap();
            (p, vec![x.clone(), i2.clone(), s2.clone(), weight.unwrap()])
        };
        check(name, &p, &all, &[0]);
    };
    index_case("gather", &|p, x, i, _| {
        p.apply(TensorOp::Gather { axis: 0 }, &[&x, &i])
    });
    index_case("dynamic_slice", &|p, x, _, s| {
        p.apply(TensorOp::DynamicSlice { sizes: vec![2, 2] }, &[&x, &s])
    });
    // Index 2 is written twice: added twice, or set by the second update,
    // which alone is credited with the cotangent there.
    for (name, mode) in [
        ("scatter_add", ScatterMode::Add),
        ("scatter (set), a duplicate index", ScatterMode::Set),
    ] {
        index_case(name, &move |p, x, i, _| {
            let u = p.scale(&x, 2.0)?;
            p.apply(TensorOp::Scatter { axis: 0, mode }, &[&x, &i, &u])
        });
    }
    index_case("dynamic_update_slice", &|p, x, _, s| {
        let u = p.apply(TensorOp::DynamicSlice { sizes: vec![2, 2] }, &[&x, &s])?;
        let u = p.unary(UnaryOp::Sin, &u)?;
        p.apply(TensorOp::DynamicUpdateSlice, &[&x, &u, &s])
    });
}

#[test]
fn products_and_einsum_as_one_node() {
    for dtype in [F, C] {
        let a = random(dtype, &[2, 3, 4], 19);
        let b = random(dtype, &[4, 5], 20);
        check_case(
            &format!("{dtype} batched matmul, b broadcast"),
            &[a.clone(), b.clone()],
            |p, v| p.matmul(&v[0], &v[1]),
        );
        let c = random(dtype, &[5, 2], 21);
        // α·a @ bᵀ + β·c, and α·conj(a)ᵀ… with the other reads; β = 0
        // reads no `c` (its gradient is zero).
        let alpha = if dtype == C {
            Scalar::Complex(c64::new(0.5, -1.5))
        } else {
            Scalar::Real(-1.5)
        };
        for (ra, rb, beta, bs) in [
            (MatOp::NONE, MatOp::T, Scalar::Real(0.75), [5, 4]),
            (MatOp::H, MatOp::NONE, alpha, [4, 5]),
            (
                MatOp {
                    transpose: false,
                    conjugate: true,
                },
                MatOp::H,
                Scalar::Real(0.0),
                [5, 4],
            ),
        ] {
            let a = if ra.transpose {
                random(dtype, &[2, 4, 3], 24)
            } else {
                a.clone()
            };
            let b = random(dtype, &bs, 25);
            let c = random(dtype, &[2, 3, 5], 26);
            check_case(
                &format!("{dtype} gemm {ra:?} {rb:?} β {beta:?}"),
                &[a, b, c],
                |p, v| {
                    p.apply(
                        TensorOp::Gemm {
                            alpha,
                            beta,
                            a: ra,
                            b: rb,
                        },
                        &[&v[0], &v[1], &v[2]],
                    )
                },
            );
        }
        check_case(
            &format!("{dtype} einsum chain"),
            &[a.clone(), b.clone(), c],
            |p, v| p.einsum("bij,jk,kl->bil", &[&v[0], &v[1], &v[2]]),
        );
        // Repeated labels: a trace, a diagonal contracted, one thrice.
        let sq = random(dtype, &[3, 3], 27);
        check_case(
            &format!("{dtype} einsum trace"),
            std::slice::from_ref(&sq),
            |p, v| p.einsum("ii->", &[&v[0]]),
        );
        check_case(
            &format!("{dtype} einsum of a diagonal and a matrix"),
            &[sq.clone(), random(dtype, &[3, 2], 28)],
            |p, v| p.einsum("ii,ij->ij", &[&v[0], &v[1]]),
        );
        check_case(
            &format!("{dtype} einsum of a label thrice"),
            &[random(dtype, &[2, 2, 3, 2], 29), random(dtype, &[3], 30)],
            |p, v| p.einsum("iiki,k->i", &[&v[0], &v[1]]),
        );
        check_case(
            &format!("{dtype} einsum summing a label of one operand"),
            std::slice::from_ref(&a),
            |p, v| p.einsum("bij->bj", &[&v[0]]),
        );
        check_case(
            &format!("{dtype} einsum with an ellipsis"),
            &[a.clone(), b.clone()],
            |p, v| p.einsum("...j,jk->...k", &[&v[0], &v[1]]),
        );
        let (x, y) = (random(dtype, &[6], 22), random(dtype, &[6], 23));
        check_case(&format!("{dtype} dot"), &[x.clone(), y.clone()], |p, v| {
            p.apply(TensorOp::Dot { conjugate: false }, &[&v[0], &v[1]])
        });
        check_case(&format!("{dtype} vdot"), &[x.clone(), y.clone()], |p, v| {
            p.apply(TensorOp::Dot { conjugate: true }, &[&v[0], &v[1]])
        });
        check_case(&format!("{dtype} axpby"), &[x, y], |p, v| {
            p.apply(
                TensorOp::Axpby {
                    alpha: Scalar::Real(0.5),
                    beta: Scalar::Real(-2.0),
                },
                &[&v[0], &v[1]],
            )
        });
    }
    // Extent-1 broadcasting inside an einsum.
    let (r, s) = (random(F, &[1, 3], 24), random(F, &[4, 3], 25));
    check_case("einsum broadcasting an extent of 1", &[r, s], |p, v| {
        p.einsum("ij,ij->j", &[&v[0], &v[1]])
    });
}

#[test]
fn an_n_ary_einsum_costs_a_linear_backward() {
    // Six operands: replayed as its five binary contractions, walked back
    // by two binary contractions each (one (n-1)-ary einsum per operand
    // would be six einsums of five operands, quadratic in n).
    for dtype in [F, C] {
        let shapes: [&[usize]; 6] = [&[2, 3], &[3, 4], &[4, 2], &[2, 5], &[5, 3], &[3, 2]];
        let inputs: Vec<Tensor> = shapes
            .iter()
            .enumerate()
            .map(|(k, s)| random(dtype, s, 30 + k as u64))
            .collect();
        let (p, all) = case(&inputs, |p, v| {
            let v: Vec<&Value> = v.iter().collect();
            p.einsum("ab,bc,cd,de,ef,fg->ag", &v)
        });
        let wrt: Vec<usize> = (0..6).collect();
        check(&format!("{dtype} six-operand chain"), &p, &all, &wrt);
        let g = p.gradient(0, &wrt).unwrap();
        let einsums: Vec<usize> = g
            .steps()
            .iter()
            .filter(|s| matches!(s.op, TensorOp::Einsum(_)))
            .map(|s| s.args.len())
            .collect();
        assert_eq!(einsums, [2; 15], "{dtype}: {g}");
    }
}

#[test]
fn an_mps_norm_and_its_gradient() {
    // ⟨ψ|ψ⟩ of a 4-site MPS of bond 3 (c64), every tensor differentiated.
    let (d, chi) = (2, 3);
    let shapes = [
        vec![1, d, chi],
        vec![chi, d, chi],
        vec![chi, d, chi],
        vec![chi, d, 1],
    ];
    let tensors: Vec<Tensor> = shapes
        .iter()
        .enumerate()
        .map(|(i, s)| random(C, s, 30 + i as u64))
        .collect();
    let p = Program::record(|p| -> Result<(), OpError> {
        let a: Vec<Value> = shapes.iter().map(|s| p.input(C, s)).collect();
        let mut env = p.apply(
            TensorOp::Full {
                dtype: C,
                shape: vec![1, 1],
                value: Scalar::Real(1.0),
            },
            &[],
        )?;
        for &t in &a {
            let tc = p.unary(UnaryOp::Conj, &t)?;
            env = p.einsum("ab,asc,bsd->cd", &[&env, &tc, &t])?;
        }
        let n = p.reshape(&env, &[])?;
        let n = p.apply(TensorOp::Cast(DType::F64), &[&n])?;
        Ok(p.output(n)?)
    })
    .unwrap()
    .labelled("mps norm");
    check("mps norm", &p, &tensors, &[0, 1, 2, 3]);
    let g = p.gradient(0, &[0, 1, 2, 3]).unwrap();
    assert_eq!(g.label(), Some("mps norm gradient"));
    let printed = g.to_string();
    assert!(printed.contains("einsum"), "{printed}");
}

#[test]
fn a_vjp_takes_the_cotangent_as_its_last_input() {
    let p = Program::record(|p| -> Result<(), OpError> {
        let a = p.input(F, &[2, 3]);
        let b = p.input(F, &[3, 2]);
        let c = p.matmul(&a, &b)?;
        Ok(p.output(c)?)
    })
    .unwrap();
    let vjp = p.vjp(&[0], &[0, 1]).unwrap();
    assert_eq!(vjp.inputs().len(), 3);
    let (a, b) = (random(F, &[2, 3], 40), random(F, &[3, 2], 41));
    let ct = random(F, &[2, 2], 42);
    let outs = eval(&vjp, &[a.clone(), b.clone(), ct.clone()]);
    // ā = c̄ bᵀ, b̄ = aᵀ c̄, by plain loops.
    let (av, bv, cv) = (
        a.as_slice::<f64>().unwrap(),
        b.as_slice::<f64>().unwrap(),
        ct.as_slice::<f64>().unwrap(),
    );
    let ga = outs[1].as_slice::<f64>().unwrap();
    for i in 0..2 {
        for k in 0..3 {
            let want: f64 = (0..2).map(|j| cv[i * 2 + j] * bv[k * 2 + j]).sum();
            assert!((ga[i * 3 + k] - want).abs() < 1e-12);
        }
    }
    let gb = outs[2].as_slice::<f64>().unwrap();
    for k in 0..3 {
        for j in 0..2 {
            let want: f64 = (0..2).map(|i| av[i * 3 + k] * cv[i * 2 + j]).sum();
            assert!((gb[k * 2 + j] - want).abs() < 1e-12);
        }
    }
}

#[test]
fn a_vjp_of_several_outputs_sums_their_pullbacks() {
    // y = sin(x), z = x² and y again: x̄ = ȳ₁ cos x + 2x z̄ + ȳ₂ cos x.
    let p = Program::record(|p| -> Result<(), OpError> {
        let x = p.input(F, &[4]);
        let y = p.unary(UnaryOp::Sin, &x)?;
        let z = p.mul(&x, &x)?;
        p.output(y)?;
        Ok(p.output(z)?)
    })
    .unwrap();
    let vjp = p.vjp(&[0, 1, 0], &[0]).unwrap();
    assert_eq!(vjp.inputs().len(), 4);
    let x = random(F, &[4], 43);
    let (y1, z, y2) = (
        random(F, &[4], 44),
        random(F, &[4], 45),
        random(F, &[4], 46),
    );
    let outs = eval(&vjp, &[x.clone(), y1.clone(), z.clone(), y2.clone()]);
    let f = |t: &Tensor| t.as_slice::<f64>().unwrap().to_vec();
    let (xv, y1v, zv, y2v) = (f(&x), f(&y1), f(&z), f(&y2));
    let g = f(&outs[2]);
    for i in 0..4 {
        let want = (y1v[i] + y2v[i]) * xv[i].cos() + 2.0 * xv[i] * zv[i];
        assert!((g[i] - want).abs() < 1e-12, "{i}: {} against {want}", g[i]);
    }
    // An output of an integer type has no cotangent.
    let q = Program::record(|p| -> Result<(), OpError> {
        let x = p.input(F, &[4]);
        let i = p.apply(TensorOp::Cast(DType::I64), &[&x])?;
        Ok(p.output(i)?)
    })
    .unwrap();
    assert!(matches!(
        q.vjp(&[0], &[0]),
        Err(GradError::NotScalar { index: 0, .. })
    ));
}

#[test]
fn the_gradient_program_runs_on_a_lane_as_one_message() {
    let (p, inputs) = case(&[random(F, &[8, 8], 50), random(F, &[8], 51)], |p, v| {
        let y = p.einsum("ij,j->i", &[&v[0], &v[1]])?;
        p.unary(UnaryOp::Tanh, &y)
    });
    let g = p.gradient(0, &[0, 1]).unwrap();
    let rt = weft::Runtime::builder().split(1).build().unwrap();
    let lane = rt.lane(0).unwrap();
    let handles: Vec<_> = inputs
        .iter()
        .map(|t| lane.upload(t.clone()).unwrap())
        .collect();
    let refs: Vec<_> = handles.iter().collect();
    let outs = lane.run_program(&g, &refs).unwrap();
    let want = eval(&g, &inputs);
    for (h, w) in outs.iter().zip(&want) {
        let got = wait_ok(lane.download(h).unwrap());
        for (x, y) in got
            .as_slice::<f64>()
            .unwrap()
            .iter()
            .zip(w.as_slice::<f64>().unwrap())
        {
            assert!((x - y).abs() <= 1e-12 * y.abs().max(1.0), "{x} vs {y}");
        }
    }
}

#[test]
fn what_cannot_be_differentiated_is_a_typed_error_naming_it() {
    let p = Program::record(|p| -> Result<(), OpError> {
        let a = p.input(F, &[3, 3]);
        let n = p.input(DType::I64, &[3]);
        let q = p.einsum("ii->", &[&a])?;
        p.output(q)?;
        p.output(n)?;
        Ok(p.output(a)?)
    })
    .unwrap();
    // Every op of the vocabulary has a rule: the trace differentiates.
    let g = eval(
        &p.gradient(0, &[0]).unwrap(),
        &[
            random(F, &[3, 3], 3),
            Tensor::from_vec(vec![1i64, 2, 3], &[3]).unwrap(),
        ],
    );
    assert_eq!(
        g[3].as_slice::<f64>().unwrap(),
        [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    );
    assert!(matches!(
        p.gradient(2, &[0]),
        Err(GradError::NotScalar { index: 2, .. })
    ));
    assert!(matches!(
        p.gradient(5, &[0]),
        Err(GradError::NoSuchOutput {
            index: 5,
            outputs: 3
        })
    ));
    assert!(matches!(
        p.gradient(0, &[7]),
        Err(GradError::NoSuchInput {
            index: 7,
            inputs: 2
        })
    ));
    assert_eq!(
        p.gradient(0, &[1]).unwrap_err(),
        GradError::NotDifferentiable {
            index: 1,
            dtype: DType::I64
        }
    );
    // An output that does not depend on the input: a zero gradient.
    let q = Program::record(|p| -> Result<(), OpError> {
        let a = p.input(F, &[2]);
        let _unused = p.input(F, &[3]);
        let l = p.sum(&a, &[0])?;
        Ok(p.output(l)?)
    })
    .unwrap();
    let g = eval(
        &q.gradient(0, &[1]).unwrap(),
        &[random(F, &[2], 1), random(F, &[3], 2)],
    );
    assert_eq!(g[1].as_slice::<f64>().unwrap(), [0.0; 3]);
}

mod linalg;
mod tape;
