//! Differential test: random sequences of tensor ops run through lanes on
//! two domains, with transfers between them, equal the same sequences run
//! directly on the engine's kernels in this thread. The values are of
//! several types (casts and comparisons make integers and masks of the
//! floats); an op whose direct run fails (a zero integer divisor) is
//! left out of the sequence. Some steps write into an earlier value
//! (`apply_into`, the earlier handle given up), which later steps then
//! read as the new value while ops still queued read the old one.

use proptest::prelude::*;
use weft::{
    ops::{ArgOp, BinaryOp, CmpOp, Distribution, HostRun, ReduceOp, TensorOp, UnaryOp},
    tensor::Meta,
    DType, Tensor,
};
use weft_tests::wait_ok;

const N: usize = 4;

#[derive(Debug, Clone)]
enum Step {
    Op(TensorOp, usize, usize),
    /// The op written into value `k` (given up: the result takes its place).
    Into(TensorOp, usize, usize, usize),
    Transfer,
}

fn step() -> impl Strategy<Value = Step> {
    let binary = prop_oneof![
        Just(BinaryOp::Add),
        Just(BinaryOp::Sub),
        Just(BinaryOp::Mul),
        Just(BinaryOp::Maximum),
        Just(BinaryOp::FloorDiv),
        Just(BinaryOp::Rem),
        Just(BinaryOp::And),
        Just(BinaryOp::Xor),
    ];
    let unary = prop_oneof![
        Just(UnaryOp::Neg),
        Just(UnaryOp::Tanh),
        Just(UnaryOp::Abs),
        Just(UnaryOp::Sin),
        Just(UnaryOp::Not),
    ];
    let cast = prop_oneof![
        Just(DType::I64),
        Just(DType::I32),
        Just(DType::F64),
        Just(DType::Bool)
    ];
    let cmp = prop_oneof![Just(CmpOp::Lt), Just(CmpOp::Eq), Just(CmpOp::Ge)];
    let reduce = prop_oneof![
        Just(ReduceOp::Sum),
        Just(ReduceOp::Max),
        Just(ReduceOp::Any),
        Just(ReduceOp::Mean)
    ];
    let written = prop_oneof![
        Just(TensorOp::Binary(BinaryOp::Add)),
        Just(TensorOp::Binary(BinaryOp::Mul)),
        Just(TensorOp::Unary(UnaryOp::Neg)),
        Just(TensorOp::Matmul),
    ];
    prop_oneof![
        4 => (written, 0..8usize, 0..8usize, 0..8usize)
            .prop_map(|(op, i, j, k)| Step::Into(op, i, j, k)),
        1 => (binary, 0..8usize, 0..8usize).prop_map(|(op, i, j)| Step::Op(TensorOp::Binary(op), i, j)),
        1 => (unary, 0..8usize).prop_map(|(op, i)| Step::Op(TensorOp::Unary(op), i, 0)),
        1 => (0..8usize, 0..8usize).prop_map(|(i, j)| Step::Op(TensorOp::Matmul, i, j)),
        1 => (0..8usize).prop_map(|i| Step::Op(TensorOp::Permute(vec![1, 0]), i, 0)),
        1 => (reduce, 0..8usize).prop_map(|(op, i)| Step::Op(
            TensorOp::Reduce {
                op,
                axes: vec![0],
                keep_dims: true
            },
            i,
            0
        )),
        1 => (cast, 0..8usize).prop_map(|(dtype, i)| Step::Op(TensorOp::Cast(dtype), i, 0)),
        1 => (cmp, 0..8usize, 0..8usize).prop_map(|(op, i, j)| Step::Op(TensorOp::Compare(op), i, j)),
        1 => (0..8usize).prop_map(|i| Step::Op(
            TensorOp::ArgReduce {
                op: ArgOp::Max,
                axis: 0,
                keep_dims: true
            },
            i,
            0
        )),
        1 => Just(Step::Transfer),
    ]
}

/// The reduce keeps `[1, N]`; broadcasting keeps every value usable with
/// every other, so any pair of earlier values is a valid operand pair,
/// except for matmul, which needs `[N, N]` on the left.
fn runs(op: &TensorOp, a: &Meta, b: &Meta) -> bool {
    op.infer(&match op.arity() {
        1 => vec![a.clone()],
        _ => vec![a.clone(), b.clone()],
    })
    .is_ok()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]

    #[test]
    fn lanes_equal_direct_execution(steps in prop::collection::vec(step(), 1..24), seed in 0u64..1000) {
        let rt = weft_tests::unpinned_pair().build().expect("runtime");
        let lanes = [rt.lane(0).unwrap(), rt.lane(1).unwrap()];
        let start = Tensor::random(DType::F64, &[N, N], Distribution::Normal, seed).unwrap();
        let mut here = 0;
        // Handles (where they live) and direct values, in step order.
        let mut handles = vec![lanes[0].upload(start.clone()).unwrap()];
        let mut direct = vec![start];
        for s in &steps {
            match s {
                Step::Transfer => {
                    let to = 1 - here;
                    let moved: Vec<_> = handles.iter().map(|h| lanes[h.domain()].transfer(h, to).unwrap()).collect();
                    handles = moved;
                    here = to;
                }
                Step::Into(op, i, j, k) => {
                    let (i, j, k) = (i % direct.len(), j % direct.len(), k % direct.len());
                    let (a, b) = (Meta::of(&direct[i]), Meta::of(&direct[j]));
                    if k == i || k == j || !runs(op, &a, &b) {
                        continue;
                    }
                    let inputs: Vec<&Tensor> = if op.arity() == 1 { vec![&direct[i]] } else { vec![&direct[i], &direct[j]] };
                    let Ok(mut want) = op.run(&inputs, 1) else {
                        continue;
                    };
                    let want = want.remove(0);
                    if Meta::of(&want) != Meta::of(&direct[k]) || handles[k].domain() != here {
                        continue;
                    }
                    // Given up (this list held its last handle): value k is
                    // the result from here on.
                    let out = handles.remove(k);
                    let at = |x: usize| if x > k { x - 1 } else { x };
                    let hs: Vec<&weft::TensorHandle> = if op.arity() == 1 { vec![&handles[at(i)]] } else { vec![&handles[at(i)], &handles[at(j)]] };
                    let got = lanes[here].apply_into(op.clone(), &hs, out).unwrap();
                    handles.insert(k, got);
                    direct[k] = want;
                }
                Step::Op(op, i, j) => {
                    let (i, j) = (i % direct.len(), j % direct.len());
                    let (a, b) = (Meta::of(&direct[i]), Meta::of(&direct[j]));
                    if !runs(op, &a, &b) {
                        continue;
                    }
                    let inputs: Vec<&Tensor> = if op.arity() == 1 { vec![&direct[i]] } else { vec![&direct[i], &direct[j]] };
                    let Ok(mut want) = op.run(&inputs, 1) else {
                        continue;
                    };
                    let want = want.remove(0);
                    let hs: Vec<&weft::TensorHandle> = if op.arity() == 1 { vec![&handles[i]] } else { vec![&handles[i], &handles[j]] };
                    let got = lanes[here].apply(op.clone(), &hs).unwrap();
                    prop_assert_eq!((got.dtype(), got.shape()), (want.dtype(), want.shape()));
                    handles.push(got);
                    direct.push(want);
                }
            }
        }
        for (h, want) in handles.iter().zip(&direct) {
            let got = wait_ok(lanes[h.domain()].download(h).unwrap());
            if want.dtype() != DType::F64 {
                // Integers and masks: exactly.
                prop_assert_eq!(&got, want);
                continue;
            }
            let (g, w) = (got.as_slice::<f64>().unwrap(), want.as_slice::<f64>().unwrap());
            for (x, y) in g.iter().zip(w) {
                let same = x == y || (x.is_nan() && y.is_nan()) || (x - y).abs() <= 1e-9 * (1.0 + y.abs());
                prop_assert!(same, "{} vs {}", x, y);
            }
        }
    }
}
