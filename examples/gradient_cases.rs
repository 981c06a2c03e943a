//! Derives the gradients of a fixed set of programs (MPS norms,
//! contractions, elementwise chains, normalizations, truncated-SVD steps,
//! a spectral function by eigh, a Cholesky solve, QR, gemm, repeated
//! einsum labels, diagonals and stepped slices; in f64 and c64), runs them
//! on a lane, and writes each case (the program's
//! steps, its inputs, the loss and weft's gradients) as JSON, for
//! `scripts/jax_check.py` to recompute with JAX and compare:
//!
//! ```text
//! cargo run --release -p weft-examples --example gradient_cases -- target/gradients.json
//! python3 scripts/jax_check.py target/gradients.json
//! ```

use serde_json::{json, Value as Json};
use weft::ops::{Apply, ElementwiseOps, LinalgOps, ReduceOps, StructuralOps};
use weft::OpError;
use weft::{
    ops::{BinaryOp, Distribution, ReduceOp, TensorOp, UnaryOp},
    program::Value,
    DType, Program, Recorder, Scalar, Tensor, TensorHandle,
};
use weft_examples::{encode, BoxError};

/// A step as the script reads it: the op and its arguments.
fn step(op: &TensorOp) -> Json {
    let scalar = |s: &Scalar| {
        let (re, im) = s.parts();
        json!([re, im])
    };
    match op {
        TensorOp::Binary(b) => json!({ "op": "binary", "fn": b.name() }),
        TensorOp::Unary(u) => json!({ "op": "unary", "fn": u.name() }),
        TensorOp::BinaryScalar {
            op,
            value,
            scalar_first,
        } => {
            json!({ "op": "binary_scalar", "fn": op.name(), "value": scalar(value), "first": scalar_first })
        }
        TensorOp::Einsum(spec) => json!({ "op": "einsum", "spec": spec.text() }),
        TensorOp::Reduce {
            op,
            axes,
            keep_dims,
        } => json!({ "op": "reduce", "fn": op.name(), "axes": axes, "keep": keep_dims }),
        TensorOp::Reshape(shape) => json!({ "op": "reshape", "shape": shape }),
        TensorOp::Full {
            dtype,
            shape,
            value,
        } => {
            json!({ "op": "full", "dtype": dtype.to_string(), "shape": shape, "value": scalar(value) })
        }
        TensorOp::Cast(dtype) => json!({ "op": "cast", "dtype": dtype.to_string() }),
        TensorOp::Matmul => json!({ "op": "matmul" }),
        TensorOp::Eye { dtype, rows, cols } => {
            json!({ "op": "eye", "dtype": dtype.to_string(), "rows": rows, "cols": cols })
        }
        TensorOp::Linalg(l) => json!({ "op": "linalg", "fn": l.name() }),
        TensorOp::Permute(perm) => json!({ "op": "permute", "perm": perm }),
        TensorOp::Slice(axes) => json!({
            "op": "slice",
            "axes": axes.iter().map(|a| [a.start, a.stop, a.step]).collect::<Vec<_>>(),
        }),
        TensorOp::Gemm { alpha, beta, a, b } => json!({
            "op": "gemm",
            "alpha": scalar(alpha),
            "beta": scalar(beta),
            "a": [a.transpose, a.conjugate],
            "b": [b.transpose, b.conjugate],
        }),
        TensorOp::Diagonal { axes } => json!({ "op": "diagonal", "axes": axes }),
        other => panic!("the cases use no {}", other.name()),
    }
}

fn program_json(p: &Program) -> Json {
    json!({
        "inputs": p.inputs(),
        "outputs": p.outputs(),
        "steps": p.steps().iter().map(|s| json!({
            "step": step(&s.op),
            "args": s.args,
            "result": s.first_result,
        })).collect::<Vec<_>>(),
    })
}

type Build = fn(&Recorder, &[Value]) -> Result<Value, OpError>;

/// `Re Σ` of a value, as a real scalar.
fn real_total(p: &Recorder, v: Value) -> Result<Value, OpError> {
    let m = p.meta(v)?.clone();
    let all: Vec<usize> = (0..m.shape.len()).collect();
    let s = p.sum(&v, &all)?;
    if m.dtype.is_complex() {
        p.apply(TensorOp::Cast(DType::F64), &[&s])
    } else {
        Ok(s)
    }
}

fn mps_norm(p: &Recorder, a: &[Value]) -> Result<Value, OpError> {
    let dtype = p.meta(a[0])?.dtype;
    let mut env = p.apply(
        TensorOp::Full {
            dtype,
            shape: vec![1, 1],
            value: Scalar::Real(1.0),
        },
        &[],
    )?;
    for &t in a {
        let tc = p.unary(UnaryOp::Conj, &t)?;
        env = p.einsum("ab,asc,bsd->cd", &[&env, &tc, &t])?;
    }
    real_total(p, env)
}

/// `xᴴ` of a recorded matrix.
fn adjoint(p: &Recorder, x: Value) -> Result<Value, OpError> {
    let t = p.permute(&x, &[1, 0])?;
    p.unary(UnaryOp::Conj, &t)
}

/// One truncation of a tensor-network sweep: the SVD of the first input,
/// kept to its two largest singular values, `U₂ S₂ V₂ᴴ`, weighted by the
/// second input.
fn truncated_svd(p: &Recorder, v: &[Value]) -> Result<Value, OpError> {
    let dtype = p.meta(v[0])?.dtype;
    let out = p.apply_many(TensorOp::Linalg(weft::ops::Linalg::Svd), &[&v[0]])?;
    let (u, s, vh) = (out[0], out[1], out[2]);
    let all = weft::ops::SliceAxis::ALL;
    let two = weft::ops::SliceAxis {
        start: 0,
        stop: 2,
        step: 1,
    };
    let u2 = p.slice(&u, &[all, two])?;
    let s2 = p.slice(&s, &[two])?;
    let vh2 = p.slice(&vh, &[two, all])?;
    let s2 = p.cast(&s2, dtype)?;
    let s2 = p.reshape(&s2, &[1, 2])?;
    let us = p.mul(&u2, &s2)?;
    let a2 = p.matmul(&us, &vh2)?;
    let w = p.mul(&a2, &v[1])?;
    real_total(p, w)
}

/// A QR's factors in a loss that does not depend on their gauge (the
/// phases of `Q`'s columns and `R`'s rows): `Re Σ w ∘ R ∘ conj(R)`, plus
/// `Re Σ m ∘ (Q Qᴴ)` when a third input is given.
fn qr_loss(p: &Recorder, v: &[Value]) -> Result<Value, OpError> {
    let out = p.apply_many(TensorOp::Linalg(weft::ops::Linalg::Qr), &[&v[0]])?;
    let (q, r) = (out[0], out[1]);
    let rc = p.unary(UnaryOp::Conj, &r)?;
    let rr = p.mul(&r, &rc)?;
    let w = p.mul(&rr, &v[1])?;
    let mut total = real_total(p, w)?;
    if let Some(&m) = v.get(2) {
        let qh = adjoint(p, q)?;
        let qq = p.matmul(&q, &qh)?;
        let qm = p.mul(&qq, &m)?;
        let t = real_total(p, qm)?;
        total = p.add(&total, &t)?;
    }
    Ok(total)
}

fn main() -> Result<(), BoxError> {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "target/gradients.json".into());
    let rt = weft::Runtime::builder().split(1).build()?;
    let lane = rt.lane(0)?;
    let mps = |dtype: DType, bond: usize, seed: u64| -> Result<Vec<Tensor>, BoxError> {
        (0..4)
            .map(|k| {
                let (l, r) = (if k == 0 { 1 } else { bond }, if k == 3 { 1 } else { bond });
                Ok(Tensor::random(
                    dtype,
                    &[l, 2, r],
                    Distribution::Normal,
                    seed + k,
                )?)
            })
            .collect()
    };
    let rand =
        |dtype, shape: &[usize], seed| Tensor::random(dtype, shape, Distribution::Normal, seed);
    let mut cases: Vec<(&str, Vec<Tensor>, Build)> = vec![
        ("mps norm, c64, bond 3", mps(DType::C64, 3, 1)?, mps_norm),
        ("mps norm, f64, bond 4", mps(DType::F64, 4, 10)?, mps_norm),
        (
            "tanh of a matrix-vector product, squared",
            vec![rand(DType::F64, &[5, 4], 20)?, rand(DType::F64, &[4], 21)?],
            |p, v| {
                let y = p.einsum("ij,j->i", &[&v[0], &v[1]])?;
                let t = p.unary(UnaryOp::Tanh, &y)?;
                let s = p.mul(&t, &t)?;
                real_total(p, s)
            },
        ),
        (
            "einsum chain, c64, weighted",
            vec![
                rand(DType::C64, &[2, 3, 4], 30)?,
                rand(DType::C64, &[4, 5], 31)?,
                rand(DType::C64, &[5, 3], 32)?,
                rand(DType::C64, &[2, 3, 3], 33)?,
            ],
            |p, v| {
                let c = p.einsum("bij,jk,kl->bil", &[&v[0], &v[1], &v[2]])?;
                let w = p.mul(&c, &v[3])?;
                real_total(p, w)
            },
        ),
        (
            "elementwise chain with broadcasting",
            vec![
                rand(DType::F64, &[3, 4], 40)?,
                rand(DType::F64, &[4], 41)?,
                rand(DType::F64, &[3, 1], 42)?,
            ],
            |p, v| {
                let m = p.binary(BinaryOp::Maximum, &v[0], &v[1])?;
                let e = p.unary(UnaryOp::Exp, &v[2])?;
                let me = p.mul(&m, &e)?;
                let sq = p.mul(&v[0], &v[0])?;
                let d = p.apply(
                    TensorOp::BinaryScalar {
                        op: BinaryOp::Add,
                        value: Scalar::Real(1.0),
                        scalar_first: false,
                    },
                    &[&sq],
                )?;
                let q = p.div(&me, &d)?;
                let s = p.unary(UnaryOp::Sin, &q)?;
                real_total(p, s)
            },
        ),
        (
            "normalized, c64, weighted",
            vec![rand(DType::C64, &[6], 50)?, rand(DType::C64, &[6], 51)?],
            |p, v| {
                let n = p.apply(
                    TensorOp::Reduce {
                        op: ReduceOp::Norm,
                        axes: vec![0],
                        keep_dims: true,
                    },
                    &[&v[0]],
                )?;
                let n = p.apply(TensorOp::Cast(DType::C64), &[&n])?;
                let u = p.div(&v[0], &n)?;
                let w = p.mul(&u, &v[1])?;
                real_total(p, w)
            },
        ),
        (
            "means and maxima",
            vec![rand(DType::F64, &[4, 5], 60)?],
            |p, v| {
                let m = p.apply(
                    TensorOp::Reduce {
                        op: ReduceOp::Mean,
                        axes: vec![1],
                        keep_dims: false,
                    },
                    &[&v[0]],
                )?;
                let x = p.apply(
                    TensorOp::Reduce {
                        op: ReduceOp::Max,
                        axes: vec![1],
                        keep_dims: false,
                    },
                    &[&v[0]],
                )?;
                let s = p.mul(&m, &x)?;
                real_total(p, s)
            },
        ),
        (
            "truncated svd step, f64",
            vec![
                rand(DType::F64, &[6, 4], 80)?,
                rand(DType::F64, &[6, 4], 81)?,
            ],
            truncated_svd,
        ),
        (
            "truncated svd step, c64",
            vec![
                rand(DType::C64, &[4, 5], 82)?,
                rand(DType::C64, &[4, 5], 83)?,
            ],
            truncated_svd,
        ),
        (
            "eigh, a spectral function, c64",
            vec![
                rand(DType::C64, &[4, 4], 84)?,
                rand(DType::C64, &[4, 4], 85)?,
            ],
            |p, v| {
                let mh = adjoint(p, v[0])?;
                let a = p.add(&v[0], &mh)?;
                let out = p.apply_many(TensorOp::Linalg(weft::ops::Linalg::Eigh), &[&a])?;
                let (w, vecs) = (out[0], out[1]);
                let sw = p.unary(UnaryOp::Tanh, &w)?;
                let sw = p.apply(TensorOp::Cast(DType::C64), &[&sw])?;
                let sw = p.reshape(&sw, &[1, 4])?;
                let scaled = p.mul(&vecs, &sw)?;
                let vh = adjoint(p, vecs)?;
                let f = p.matmul(&scaled, &vh)?;
                let weighted = p.mul(&f, &v[1])?;
                real_total(p, weighted)
            },
        ),
        (
            "cholesky then solve, f64",
            vec![rand(DType::F64, &[4, 4], 86)?, rand(DType::F64, &[4], 87)?],
            |p, v| {
                let mt = p.permute(&v[0], &[1, 0])?;
                let mm = p.matmul(&v[0], &mt)?;
                let eye = p.apply(
                    TensorOp::Eye {
                        dtype: DType::F64,
                        rows: 4,
                        cols: 4,
                    },
                    &[],
                )?;
                let eye = p.scale(&eye, 4.0)?;
                let a = p.add(&mm, &eye)?;
                let l = p.apply(TensorOp::Linalg(weft::ops::Linalg::Cholesky), &[&a])?;
                let x = p.apply(TensorOp::Linalg(weft::ops::Linalg::Solve), &[&l, &v[1]])?;
                let x2 = p.mul(&x, &x)?;
                real_total(p, x2)
            },
        ),
        (
            "batched matmul, c64, weighted",
            vec![
                rand(DType::C64, &[2, 3, 4], 70)?,
                rand(DType::C64, &[4, 2], 71)?,
                rand(DType::C64, &[2, 3, 2], 72)?,
            ],
            |p, v| {
                let c = p.matmul(&v[0], &v[1])?;
                let e = p.unary(UnaryOp::Exp, &c)?;
                let w = p.mul(&e, &v[2])?;
                real_total(p, w)
            },
        ),
        (
            "qr of a wide matrix, c64",
            vec![
                rand(DType::C64, &[3, 5], 90)?,
                rand(DType::C64, &[3, 5], 91)?,
            ],
            qr_loss,
        ),
        (
            "qr of a tall matrix, f64",
            vec![
                rand(DType::F64, &[5, 3], 92)?,
                rand(DType::F64, &[3, 3], 93)?,
                rand(DType::F64, &[5, 5], 94)?,
            ],
            qr_loss,
        ),
        (
            "gemm, c64: α aᴴ b + β c",
            vec![
                rand(DType::C64, &[2, 4, 3], 100)?,
                rand(DType::C64, &[4, 5], 101)?,
                rand(DType::C64, &[2, 3, 5], 102)?,
                rand(DType::C64, &[2, 3, 5], 103)?,
            ],
            |p, v| {
                let g = p.apply(
                    TensorOp::Gemm {
                        alpha: Scalar::Complex(weft::c64::new(0.5, -1.5)),
                        beta: Scalar::Real(0.75),
                        a: weft::ops::MatOp::H,
                        b: weft::ops::MatOp::NONE,
                    },
                    &[&v[0], &v[1], &v[2]],
                )?;
                let t = p.unary(UnaryOp::Tanh, &g)?;
                let w = p.mul(&t, &v[3])?;
                real_total(p, w)
            },
        ),
        (
            "einsum with repeated labels, c64",
            vec![
                rand(DType::C64, &[3, 3, 4], 104)?,
                rand(DType::C64, &[4, 3], 105)?,
            ],
            |p, v| {
                let e = p.einsum("iik,kj->ij", &[&v[0], &v[1]])?;
                let t = p.einsum("ii->", &[&e])?;
                let s = p.unary(UnaryOp::Sin, &e)?;
                let total = real_total(p, s)?;
                let t = real_total(p, t)?;
                p.add(&total, &t)
            },
        ),
        (
            "a diagonal and a stepped slice, f64",
            vec![rand(DType::F64, &[4, 3, 5], 106)?],
            |p, v| {
                let d = p.apply(TensorOp::Diagonal { axes: [0, 2] }, &[&v[0]])?;
                let every = |start, step| weft::ops::SliceAxis {
                    start,
                    stop: usize::MAX,
                    step,
                };
                let s = p.apply(
                    TensorOp::Slice(vec![every(1, 2), every(0, 1), every(0, 3)]),
                    &[&v[0]],
                )?;
                let ss = p.unary(UnaryOp::Sin, &s)?;
                let dd = p.mul(&d, &d)?;
                let a = real_total(p, ss)?;
                let b = real_total(p, dd)?;
                p.add(&a, &b)
            },
        ),
    ];
    let mut out = Vec::new();
    for (name, inputs, build) in cases.drain(..) {
        let program = Program::record(|p| -> Result<(), OpError> {
            let vs: Vec<Value> = inputs
                .iter()
                .map(|t| p.input(t.dtype(), t.shape()))
                .collect();
            let l = build(p, &vs)?;
            Ok(p.output(l)?)
        })?;
        let wrt: Vec<usize> = (0..inputs.len()).collect();
        let grad = program.gradient(0, &wrt)?;
        let handles: Vec<TensorHandle> = inputs
            .iter()
            .map(|t| lane.upload(t.clone()))
            .collect::<Result<_, _>>()?;
        let refs: Vec<&TensorHandle> = handles.iter().collect();
        let results = lane.run_program(&grad, &refs)?;
        let mut values: Vec<Tensor> = Vec::with_capacity(results.len());
        for h in &results {
            values.push(lane.download(h)?.wait()?);
        }
        out.push(json!({
            "name": name,
            "program": program_json(&program),
            "inputs": inputs.iter().map(encode).collect::<Vec<_>>(),
            "loss": encode(&values[0]),
            "gradients": values[1..].iter().map(encode).collect::<Vec<_>>(),
        }));
    }
    std::fs::write(&path, serde_json::to_string_pretty(&out)?)?;
    println!("{} gradient cases written to {path}", out.len());
    Ok(())
}
