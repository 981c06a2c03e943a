//! Runs ops of the vocabulary on seeded inputs of every element type and
//! writes each case (op, arguments, inputs, weft's output) as JSON, for
//! `scripts/numpy_check.py` to recompute with NumPy and compare:
//!
//! ```text
//! cargo run --release -p weft-examples --example vocabulary_cases -- target/vocabulary.json
//! python3 scripts/numpy_check.py target/vocabulary.json
//! ```
//!
//! Values are written as text (`{:?}`: every digit, and `NaN`/`inf`
//! where they arise), so that NumPy reads back exactly what weft holds.

use serde_json::{json, Value};
use weft::{
    ops::{
        ArgOp, BinaryOp, CmpOp, Distribution, HostRun, ReduceOp, ScatterMode, TensorOp, UnaryOp,
    },
    DType, Tensor,
};
use weft_examples::encode;

type BoxError = Box<dyn std::error::Error>;

/// Seeded inputs: integers over a range with negatives (nonzero where
/// `nonzero`), floats of both signs, a mix of bools.
fn input(dtype: DType, shape: &[usize], seed: u64, nonzero: bool) -> Result<Tensor, BoxError> {
    let distribution = match dtype {
        DType::I32 | DType::I64 => Distribution::Integers { low: -20, high: 21 },
        DType::Bool => Distribution::Bits,
        _ => Distribution::Normal,
    };
    let t = Tensor::random(dtype, shape, distribution, seed)?;
    if nonzero && dtype.is_integer() {
        // Zero divisors become 3 (their own error is tested elsewhere).
        let (shape, data) = t.into_parts();
        let data = match data {
            weft::tensor::Data::I32(v) => {
                weft::tensor::Data::I32(v.into_iter().map(|x| if x == 0 { 3 } else { x }).collect())
            }
            weft::tensor::Data::I64(v) => {
                weft::tensor::Data::I64(v.into_iter().map(|x| if x == 0 { 3 } else { x }).collect())
            }
            other => other,
        };
        return Ok(Tensor::from_parts(shape, data)?);
    }
    if !dtype.is_field() {
        return Ok(t);
    }
    // Floats scaled up, so that floor division and casts see whole parts.
    let scale = TensorOp::BinaryScalar {
        op: BinaryOp::Mul,
        value: weft::Scalar::Real(7.0),
        scalar_first: false,
    };
    Ok(scale.run(&[&t], 1)?.remove(0))
}

fn main() -> Result<(), BoxError> {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "target/vocabulary.json".into());
    let mut cases = Vec::new();
    let mut add =
        |name: String, op: &TensorOp, args: Value, inputs: &[&Tensor]| -> Result<(), BoxError> {
            let out = op.run(inputs, 1)?.remove(0);
            cases.push(json!({
                "name": name,
                "op": op.name(),
                "args": args,
                "inputs": inputs.iter().map(|t| encode(t)).collect::<Vec<_>>(),
                "output": encode(&out),
            }));
            Ok(())
        };
    let shape = [3, 4];
    for (k, dtype) in DType::ALL.into_iter().enumerate() {
        let seed = 10 * k as u64;
        let a = input(dtype, &shape, seed, false)?;
        let b = input(dtype, &[4], seed + 1, true)?;
        for op in BinaryOp::ALL {
            if !op.supports(dtype) || (op == BinaryOp::Pow && !dtype.is_field()) {
                continue;
            }
            let op = TensorOp::Binary(op);
            add(format!("{} {dtype}", op.name()), &op, json!({}), &[&a, &b])?;
        }
        if dtype.is_integer() {
            let e = TensorOp::Clamp { lo: 0.0, hi: 5.0 }
                .run(&[&b], 1)?
                .remove(0);
            let op = TensorOp::Binary(BinaryOp::Pow);
            add(format!("pow {dtype}"), &op, json!({}), &[&a, &e])?;
        }
        for op in UnaryOp::ALL {
            if op.supports(dtype)
                && !matches!(
                    op,
                    UnaryOp::Log | UnaryOp::Sqrt | UnaryOp::Rsqrt | UnaryOp::Log1p
                )
            {
                let op = TensorOp::Unary(op);
                add(format!("{} {dtype}", op.name()), &op, json!({}), &[&a])?;
            }
        }
        for op in CmpOp::ALL {
            let op = TensorOp::Compare(op);
            if op
                .infer(&[weft::tensor::Meta::of(&a), weft::tensor::Meta::of(&b)])
                .is_ok()
            {
                add(format!("{} {dtype}", op.name()), &op, json!({}), &[&a, &b])?;
            }
        }
        for to in DType::ALL {
            // Floats in range: NumPy leaves out-of-range conversions undefined.
            let op = TensorOp::Cast(to);
            add(
                format!("cast {dtype} to {to}"),
                &op,
                json!({ "dtype": to.to_string() }),
                &[&a],
            )?;
        }
        for op in ReduceOp::ALL {
            for axes in [vec![0], vec![1], vec![0, 1]] {
                let r = TensorOp::Reduce {
                    op,
                    axes: axes.clone(),
                    keep_dims: false,
                };
                if r.infer(&[weft::tensor::Meta::of(&a)]).is_ok() {
                    add(
                        format!("{} {dtype} over {axes:?}", r.name()),
                        &r,
                        json!({ "axes": axes }),
                        &[&a],
                    )?;
                }
            }
        }
        for op in [ArgOp::Max, ArgOp::Min] {
            for axis in 0..2 {
                let r = TensorOp::ArgReduce {
                    op,
                    axis,
                    keep_dims: false,
                };
                if r.infer(&[weft::tensor::Meta::of(&a)]).is_ok() {
                    add(
                        format!("{} {dtype} along {axis}", r.name()),
                        &r,
                        json!({ "axis": axis }),
                        &[&a],
                    )?;
                }
            }
        }
        if !dtype.is_complex() && dtype != DType::Bool {
            let op = TensorOp::Clamp { lo: -2.5, hi: 6.5 };
            add(
                format!("clamp {dtype}"),
                &op,
                json!({ "lo": -2.5, "hi": 6.5 }),
                &[&a],
            )?;
        }
        // Indexing.
        let idx = Tensor::from_vec(vec![2i64, -1, 0, 2], &[2, 2])?;
        let op = TensorOp::Gather { axis: 1 };
        add(
            format!("gather {dtype}"),
            &op,
            json!({ "axis": 1 }),
            &[&a, &idx],
        )?;
        let distinct = Tensor::from_vec(vec![3i64, 0], &[2])?;
        let updates = input(dtype, &[3, 2], seed + 2, false)?;
        for mode in [ScatterMode::Set, ScatterMode::Add] {
            let op = TensorOp::Scatter { axis: 1, mode };
            if op
                .infer(&[
                    weft::tensor::Meta::of(&a),
                    weft::tensor::Meta::of(&distinct),
                    weft::tensor::Meta::of(&updates),
                ])
                .is_ok()
            {
                add(
                    format!("{} {dtype}", op.name()),
                    &op,
                    json!({ "axis": 1 }),
                    &[&a, &distinct, &updates],
                )?;
            }
        }
        for starts in [vec![1i64, 2], vec![-3, 9]] {
            let s = Tensor::from_vec(starts.clone(), &[2])?;
            let op = TensorOp::DynamicSlice { sizes: vec![2, 3] };
            add(
                format!("dynamic_slice {dtype} at {starts:?}"),
                &op,
                json!({ "sizes": [2, 3] }),
                &[&a, &s],
            )?;
        }
        let mask = TensorOp::Compare(CmpOp::Ne)
            .run(
                &[
                    &a,
                    &TensorOp::Full {
                        dtype,
                        shape: vec![],
                        value: weft::Scalar::Bool(false),
                    }
                    .run(&[], 1)?
                    .remove(0),
                ],
                1,
            )?
            .remove(0);
        let len = mask.as_slice::<bool>()?.iter().filter(|&&m| m).count();
        let op = TensorOp::Compress { len };
        add(format!("compress {dtype}"), &op, json!({}), &[&a, &mask])?;
    }
    // einsum with the ellipsis and broadcasting, f64.
    for (k, (spec, shapes)) in [
        ("...ij,...jk->...ik", vec![vec![2, 1, 3, 4], vec![5, 4, 2]]),
        ("ij,ij->j", vec![vec![1, 3], vec![4, 3]]),
        ("i...->...i", vec![vec![2, 3, 4]]),
        ("...a,...b", vec![vec![2, 3], vec![4, 2, 5]]),
        ("bij,bjk->bik", vec![vec![1, 2, 3], vec![4, 3, 2]]),
    ]
    .into_iter()
    .enumerate()
    {
        let tensors: Vec<Tensor> = shapes
            .iter()
            .enumerate()
            .map(|(i, s)| input(DType::F64, s, 900 + 10 * k as u64 + i as u64, false))
            .collect::<Result<_, _>>()?;
        let refs: Vec<&Tensor> = tensors.iter().collect();
        let shape_refs: Vec<&[usize]> = shapes.iter().map(|s| &s[..]).collect();
        let op = TensorOp::Einsum(weft::ops::EinsumSpec::parse_for(spec, &shape_refs)?);
        add(
            format!("einsum {spec}"),
            &op,
            json!({ "spec": spec }),
            &refs,
        )?;
    }
    let count = cases.len();
    std::fs::write(&path, serde_json::to_string(&json!({ "cases": cases }))?)?;
    println!("{count} cases written to {path}");
    Ok(())
}
