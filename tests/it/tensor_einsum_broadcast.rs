//! einsum as NumPy defines it: the ellipsis (on every operand, some, or
//! one side only) and extent-1 axes broadcasting against their label's
//! extent elsewhere, checked against a brute-force evaluation written
//! here (every index assignment, a broadcast axis read at 0), through a
//! lane and through a program.

use std::collections::BTreeMap;
use weft::ops::LinalgOps;
use weft::OpError;

use weft::{error::TensorError, ops::EinsumSpec, DType, Program, Tensor};
use weft_tests::wait_ok;

/// The value at every position of a tensor of `shape`, seeded.
fn tensor(shape: &[usize], seed: u64) -> Tensor {
    let n: usize = shape.iter().product();
    let values = (0..n)
        .map(|i| (((i as u64 + 1) * (seed * 7 + 3)) % 17) as f64 / 4.0 - 2.0)
        .collect();
    Tensor::from_vec::<f64>(values, shape).unwrap()
}

/// NumPy's einsum by brute force: the broadcast extents of the ellipsis
/// (right-aligned) and of each label (1 against n is n), then a sum over
/// every assignment of every index, an operand's axis of extent 1 read at
/// index 0.
fn reference(spec: &str, inputs: &[&Tensor]) -> (Vec<usize>, Vec<f64>) {
    let spec: String = spec.chars().filter(|c| !c.is_whitespace()).collect();
    let (lhs, rhs) = match spec.split_once("->") {
        Some((l, r)) => (l.to_owned(), Some(r.to_owned())),
        None => (spec.clone(), None),
    };
    // Each operand's axes as names: a label, or `#k` for broadcast axis k
    // counted from the right of the ellipsis.
    let ops: Vec<&str> = lhs.split(',').collect();
    let mut names: Vec<Vec<String>> = Vec::new();
    let mut extents: BTreeMap<String, usize> = BTreeMap::new();
    let mut broadcast = 0;
    for (t, sub) in inputs.iter().zip(&ops) {
        let (before, after) = sub
            .split_once("...")
            .map_or((*sub, None), |(b, a)| (b, Some(a)));
        let mut axes: Vec<String> = before.chars().map(String::from).collect();
        if let Some(after) = after {
            let r = t.shape().len() - before.len() - after.len();
            broadcast = broadcast.max(r);
            axes.extend((0..r).rev().map(|k| format!("#{k}")));
            axes.extend(after.chars().map(String::from));
        }
        for (a, &d) in axes.iter().zip(t.shape()) {
            let e = extents.entry(a.clone()).or_insert(d);
            assert!(
                *e == d || *e == 1 || d == 1,
                "{a}: {e} and {d} do not broadcast"
            );
            *e = (*e).max(d);
        }
        names.push(axes);
    }
    let ellipsis: Vec<String> = (0..broadcast).rev().map(|k| format!("#{k}")).collect();
    let output: Vec<String> = match rhs {
        Some(r) => {
            let (before, after) = r
                .split_once("...")
                .map_or((&r[..], None), |(b, a)| (b, Some(a)));
            let mut out: Vec<String> = before.chars().map(String::from).collect();
            if let Some(after) = after {
                out.extend(ellipsis.iter().cloned());
                out.extend(after.chars().map(String::from));
            }
            out
        }
        None => {
            let mut count: BTreeMap<String, usize> = BTreeMap::new();
            for a in names.iter().flatten().filter(|a| !a.starts_with('#')) {
                *count.entry(a.clone()).or_default() += 1;
            }
            let once = count.into_iter().filter(|&(_, n)| n == 1).map(|(a, _)| a);
            ellipsis.iter().cloned().chain(once).collect()
        }
    };
    let all: Vec<String> = extents.keys().cloned().collect();
    let out_shape: Vec<usize> = output.iter().map(|a| extents[a]).collect();
    let mut out = vec![0.0; out_shape.iter().product()];
    let total: usize = all.iter().map(|a| extents[a]).product();
    for flat in 0..total {
        let mut index: BTreeMap<&str, usize> = BTreeMap::new();
        let mut rest = flat;
        for a in all.iter().rev() {
            index.insert(a, rest % extents[a]);
            rest /= extents[a];
        }
        let mut product = 1.0;
        for (t, axes) in inputs.iter().zip(&names) {
            let mut offset = 0;
            for (a, &d) in axes.iter().zip(t.shape()) {
                offset = offset * d + if d == 1 { 0 } else { index[a.as_str()] };
            }
            product *= t.as_slice::<f64>().unwrap()[offset];
        }
        let o = output
            .iter()
            .fold(0, |o, a| o * extents[a] + index[a.as_str()]);
        out[o] += product;
    }
    (out_shape, out)
}

/// Expressions NumPy accepts that need the ellipsis or broadcasting (the
/// ones opt_einsum's own tests use among them), with operand shapes.
const CASES: &[(&str, &[&[usize]])] = &[
    ("...ij,...jk->...ik", &[&[2, 1, 3, 4], &[5, 4, 2]]),
    ("...ij,...jk->...ik", &[&[1, 5], &[5, 5]]),
    ("ij,ij->j", &[&[10, 2], &[1, 2]]),
    ("ij,ij->j", &[&[1, 3], &[4, 3]]),
    ("...a->...", &[&[2, 3, 4]]),
    ("a...->...", &[&[2, 3, 4]]),
    ("a...a->...a", &[&[3, 2, 3]]),
    ("...,...", &[&[3], &[2, 3]]),
    ("...a,...b", &[&[2, 3], &[4, 2, 5]]),
    ("...b,...a->...", &[&[2, 3], &[2, 4]]),
    ("...a,ab", &[&[2, 3], &[3, 4]]),
    ("...", &[&[2, 3]]),
    ("i...", &[&[2, 3]]),
    ("i...->...i", &[&[2, 3, 4]]),
    ("...i,i", &[&[3, 1, 4], &[4]]),
    ("ij,jk,kl->il", &[&[2, 1], &[3, 4], &[4, 2]]),
    ("bij,bjk->bik", &[&[1, 2, 3], &[4, 3, 2]]),
    ("i,i->", &[&[1], &[5]]),
    ("...ii->...i", &[&[2, 3, 3]]),
];

#[test]
fn ellipses_and_extent_one_axes_broadcast_as_numpy() {
    let rt = weft::Runtime::builder().split(1).build().expect("runtime");
    let lane = rt.lane(0).expect("lane");
    for (k, &(spec, shapes)) in CASES.iter().enumerate() {
        let tensors: Vec<Tensor> = shapes
            .iter()
            .enumerate()
            .map(|(i, s)| tensor(s, (k * 5 + i) as u64))
            .collect();
        let refs: Vec<&Tensor> = tensors.iter().collect();
        let (shape, want) = reference(spec, &refs);
        let handles: Vec<_> = tensors
            .iter()
            .map(|t| lane.upload(t.clone()).unwrap())
            .collect();
        let hs: Vec<&weft::TensorHandle> = handles.iter().collect();
        let got = lane
            .einsum(spec, &hs)
            .unwrap_or_else(|e| panic!("{spec} {shapes:?}: {e}"));
        let got = wait_ok(lane.download(&got).unwrap());
        assert_eq!(got.shape(), &shape[..], "{spec} {shapes:?}");
        for (g, w) in got.as_slice::<f64>().unwrap().iter().zip(&want) {
            assert!(
                (g - w).abs() <= 1e-12 * (1.0 + w.abs()),
                "{spec} {shapes:?}: {g} vs {w}"
            );
        }
        // The same through a program.
        let program = Program::record(|p| -> Result<(), OpError> {
            let values: Vec<_> = shapes.iter().map(|s| p.input(DType::F64, s)).collect();
            let values: Vec<&weft::program::Value> = values.iter().collect();
            let out = p.einsum(spec, &values)?;
            Ok(p.output(out)?)
        })
        .unwrap_or_else(|e| panic!("{spec}: {e}"));
        let out = lane.run_program(&program, &hs).unwrap();
        let out = wait_ok(lane.download(&out[0]).unwrap());
        assert_eq!(out, got, "{spec}: the program differs from the lane");
    }
}

#[test]
fn what_numpy_refuses_is_refused_naming_the_reason() {
    let bad = |spec: &str, shapes: &[&[usize]]| match EinsumSpec::parse_for(spec, shapes) {
        Err(TensorError::Einsum { reason, .. }) => reason,
        other => {
            // Parsed: the shapes must then be refused.
            let spec = other.unwrap_or_else(|e| panic!("{spec}: {e}"));
            let metas: Vec<weft::tensor::Meta> = shapes
                .iter()
                .map(|s| weft::tensor::Meta {
                    dtype: DType::F64,
                    shape: s.to_vec(),
                })
                .collect();
            spec.infer(&metas).unwrap_err().to_string()
        }
    };
    assert_eq!(
        bad("...i->i", &[&[2, 3]]),
        "the operands have 1 axes under `...` but the output has no `...`"
    );
    assert_eq!(
        bad("ij,ij->j", &[&[2, 3], &[4, 3]]),
        "einsum `ij,ij->j`: label `i` has extents 2 and 4"
    );
    assert_eq!(
        bad("ij...", &[&[2]]),
        "operand 0 has 1 axes but 2 labels besides `...`"
    );
    assert_eq!(bad("i......", &[&[2]]), "`i......` has two ellipses");
    // Without shapes, an ellipsis cannot be resolved: the plain parser
    // says so and where to go.
    let err = EinsumSpec::parse("...i->...").unwrap_err();
    assert!(err.to_string().contains("EinsumSpec::parse_for"), "{err}");
}
