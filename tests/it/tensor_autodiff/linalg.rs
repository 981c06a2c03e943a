//! Gradients of the decompositions (solve, Cholesky, eigh, SVD, QR), of degenerate spectra, and of prod with zeros.

use super::*;
use weft::ops::{Apply, ElementwiseOps, LinalgOps, ReduceOps, StructuralOps};
use weft::OpError;

/// `A` random, made well conditioned: `+ 4I`.
fn conditioned(dtype: DType, n: usize, seed: u64) -> Tensor {
    let a = random(dtype, &[n, n], seed);
    let eye = TensorOp::Eye {
        dtype,
        rows: n,
        cols: n,
    }
    .run(&[], 1)
    .unwrap()
    .remove(0);
    let four = TensorOp::BinaryScalar {
        op: BinaryOp::Mul,
        value: Scalar::Real(4.0),
        scalar_first: false,
    };
    let eye = four.run(&[&eye], 1).unwrap().remove(0);
    TensorOp::Binary(BinaryOp::Add)
        .run(&[&a, &eye], 1)
        .unwrap()
        .remove(0)
}

/// `xᴴ` of a recorded matrix.
fn adjoint(p: &Recorder, x: Value) -> Result<Value, OpError> {
    let t = p.permute(&x, &[1, 0])?;
    p.unary(UnaryOp::Conj, &t)
}

/// `M Mᴴ + 4I`: Hermitian positive definite, recorded from `M`.
fn hpd(p: &Recorder, m: Value) -> Result<Value, OpError> {
    let meta = p.meta(m)?.clone();
    let n = meta.shape[0];
    let mh = adjoint(p, m)?;
    let mm = p.matmul(&m, &mh)?;
    let eye = p.apply(
        TensorOp::Eye {
            dtype: meta.dtype,
            rows: n,
            cols: n,
        },
        &[],
    )?;
    let eye = p.scale(&eye, 4.0)?;
    p.add(&mm, &eye)
}

fn linalg(op: weft::ops::Linalg) -> TensorOp {
    TensorOp::Linalg(op)
}

/// `M + Mᵀ`, on the host.
fn symmetric(m: &Tensor) -> Tensor {
    let mt = TensorOp::Permute(vec![1, 0])
        .run(&[m], 1)
        .unwrap()
        .remove(0);
    TensorOp::Binary(BinaryOp::Add)
        .run(&[m, &mt], 1)
        .unwrap()
        .remove(0)
}

#[test]
fn solve_and_cholesky() {
    for dtype in [F, C] {
        let a = conditioned(dtype, 4, 70);
        check_case(
            &format!("{dtype} solve, vector"),
            &[a.clone(), random(dtype, &[4], 71)],
            |p, v| p.apply(linalg(weft::ops::Linalg::Solve), &[&v[0], &v[1]]),
        );
        check_case(
            &format!("{dtype} solve, matrix"),
            &[a, random(dtype, &[4, 2], 72)],
            |p, v| p.apply(linalg(weft::ops::Linalg::Solve), &[&v[0], &v[1]]),
        );
        check_case(
            &format!("{dtype} cholesky of M Mᴴ + 4I"),
            &[random(dtype, &[4, 4], 73)],
            |p, v| {
                let a = hpd(p, v[0])?;
                p.apply(linalg(weft::ops::Linalg::Cholesky), &[&a])
            },
        );
    }
    // Directly of A: faer reads its lower triangle, and so does the rule.
    let m = random(F, &[4, 4], 74);
    let mt = TensorOp::Permute(vec![1, 0])
        .run(&[&m], 1)
        .unwrap()
        .remove(0);
    let mm = TensorOp::Matmul.run(&[&m, &mt], 1).unwrap().remove(0);
    let eye = TensorOp::Eye {
        dtype: F,
        rows: 4,
        cols: 4,
    }
    .run(&[], 1)
    .unwrap()
    .remove(0);
    let spd = TensorOp::Binary(BinaryOp::Add)
        .run(&[&mm, &eye], 1)
        .unwrap()
        .remove(0);
    check_case("f64 cholesky of A itself", &[spd], |p, v| {
        p.apply(linalg(weft::ops::Linalg::Cholesky), &[&v[0]])
    });
}

/// `V diag(sin w) Vᴴ + 3w` (broadcast over rows): neither part depends on
/// the eigenvectors' phases.
fn spectral(p: &Recorder, a: Value) -> Result<Value, OpError> {
    let out = p.apply_many(linalg(weft::ops::Linalg::Eigh), &[&a])?;
    let (w, v) = (out[0], out[1]);
    let n = p.meta(w)?.shape[0];
    let dtype = p.meta(v)?.dtype;
    let sw = p.unary(UnaryOp::Sin, &w)?;
    let sw = p.apply(TensorOp::Cast(dtype), &[&sw])?;
    let sw = p.reshape(&sw, &[1, n])?;
    let scaled = p.mul(&v, &sw)?;
    let vh = adjoint(p, v)?;
    let y = p.matmul(&scaled, &vh)?;
    let w3 = p.scale(&w, 3.0)?;
    let w3 = p.apply(TensorOp::Cast(dtype), &[&w3])?;
    let w3 = p.reshape(&w3, &[n, 1])?;
    p.add(&y, &w3)
}

#[test]
fn eigh_with_gauge_invariant_losses() {
    for dtype in [F, C] {
        check_case(
            &format!("{dtype} eigh of M + Mᴴ"),
            &[random(dtype, &[4, 4], 80)],
            |p, v| {
                let mh = adjoint(p, v[0])?;
                let a = p.add(&v[0], &mh)?;
                spectral(p, a)
            },
        );
    }
    // Directly of a symmetric A (its lower triangle is read).
    let a = symmetric(&random(F, &[4, 4], 81));
    check_case("f64 eigh of A itself", &[a], |p, v| spectral(p, v[0]));
}

#[test]
fn svd_thin_and_truncated_for_tall_wide_and_square_matrices() {
    for dtype in [F, C] {
        for shape in [[5, 3], [3, 5], [4, 4]] {
            let x = random(dtype, &shape, 90 + shape[0] as u64);
            check_case(
                &format!("{dtype} svd {shape:?}: U exp(S) Vᴴ"),
                std::slice::from_ref(&x),
                |p, v| {
                    let out = p.apply_many(linalg(weft::ops::Linalg::Svd), &[&v[0]])?;
                    let (u, s, vh) = (out[0], out[1], out[2]);
                    let k = p.meta(s)?.shape[0];
                    let es = p.unary(UnaryOp::Exp, &s)?;
                    let es = p.apply(TensorOp::Cast(dtype), &[&es])?;
                    let es = p.reshape(&es, &[1, k])?;
                    let us = p.mul(&u, &es)?;
                    p.matmul(&us, &vh)
                },
            );
            // Truncated to the two largest: U[:, :2] diag(S[:2]) Vᴴ[:2, :].
            check_case(
                &format!("{dtype} svd {shape:?} truncated to 2"),
                std::slice::from_ref(&x),
                |p, v| {
                    let out = p.apply_many(linalg(weft::ops::Linalg::Svd), &[&v[0]])?;
                    let (u, s, vh) = (out[0], out[1], out[2]);
                    let all = SliceAxis {
                        start: 0,
                        stop: usize::MAX,
                        step: 1,
                    };
                    let two = SliceAxis {
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
                    p.matmul(&us, &vh2)
                },
            );
        }
    }
}

#[test]
fn qr_of_tall_and_square_matrices() {
    for shape in [[5, 3], [4, 4]] {
        let x = random(F, &shape, 95 + shape[0] as u64);
        check_case(
            &format!("qr {shape:?}: Q and R"),
            std::slice::from_ref(&x),
            |p, v| {
                let out = p.apply_many(linalg(weft::ops::Linalg::Qr), &[&v[0]])?;
                let (q, r) = (out[0], out[1]);
                let qr = p.matmul(&q, &r)?;
                let sq = p.unary(UnaryOp::Sin, &q)?;
                let qs = p.sum(&sq, &[0])?;
                let r2 = p.unary(UnaryOp::Tanh, &r)?;
                let rs = p.sum(&r2, &[0])?;
                let both = p.add(&qs, &rs)?;
                let both = p.reshape(&both, &[1, shape[1]])?;
                p.add(&qr, &both)
            },
        );
    }
    for (dtype, shape) in [(C, [4, 3]), (F, [3, 5]), (C, [3, 5])] {
        let x = random(dtype, &shape, 97);
        check_case(
            &format!("{dtype} qr {shape:?}: Q and R"),
            std::slice::from_ref(&x),
            |p, v| {
                let out = p.apply_many(linalg(weft::ops::Linalg::Qr), &[&v[0]])?;
                let (q, r) = (out[0], out[1]);
                let sq = p.unary(UnaryOp::Sin, &q)?;
                let tr = p.unary(UnaryOp::Tanh, &r)?;
                let mixed = p.matmul(&sq, &tr)?;
                let qr = p.matmul(&q, &r)?;
                p.add(&qr, &mixed)
            },
        );
    }
}

#[test]
fn degenerate_spectra_give_bounded_gradients() {
    // A with a doubly degenerate eigenvalue, and a matrix with two equal
    // singular values: the broadened inverse gaps keep every entry finite.
    let a = Tensor::from_vec(vec![1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 2.0], &[3, 3]).unwrap();
    let (p, inputs) = case(std::slice::from_ref(&a), |p, v| spectral(p, v[0]));
    let g = eval(&p.gradient(0, &[0]).unwrap(), &inputs);
    assert!(
        g[1].as_slice::<f64>()
            .unwrap()
            .iter()
            .all(|x| x.is_finite()),
        "{:?}",
        g[1]
    );
    let (p, inputs) = case(std::slice::from_ref(&a), |p, v| {
        let out = p.apply_many(linalg(weft::ops::Linalg::Svd), &[&v[0]])?;
        p.matmul(&out[0], &out[2])
    });
    let g = eval(&p.gradient(0, &[0]).unwrap(), &inputs);
    assert!(
        g[1].as_slice::<f64>()
            .unwrap()
            .iter()
            .all(|x| x.abs() < 1e7),
        "{:?}",
        g[1]
    );
}

#[test]
fn prod_with_no_one_and_two_zeros() {
    let reduce = |axes: &[usize]| TensorOp::Reduce {
        op: ReduceOp::Prod,
        axes: axes.to_vec(),
        keep_dims: false,
    };
    for dtype in [F, C] {
        check_case(
            &format!("{dtype} prod"),
            &[random(dtype, &[3, 4], 110)],
            |p, v| p.apply(reduce(&[1]), &[&v[0]]),
        );
    }
    // Rows with no zero, one zero and two zeros: the derivative is the
    // product of the other elements, so only a lone zero gets one.
    let x = Tensor::from_vec(vec![2.0, 3.0, 0.5, -1.0, 0.0, 4.0, 0.0, 5.0, 0.0], &[3, 3]).unwrap();
    check_case("prod with zeros", std::slice::from_ref(&x), |p, v| {
        p.apply(reduce(&[1]), &[&v[0]])
    });
    let p = Program::record(|p| -> Result<(), OpError> {
        let v = p.input(F, &[3, 3]);
        let r = p.apply(reduce(&[0, 1]), &[&v])?;
        let r = p
            .apply(
                TensorOp::Reduce {
                    op: ReduceOp::Prod,
                    axes: vec![1],
                    keep_dims: false,
                },
                &[&v],
            )
            .and_then(|rows| p.sum(&rows, &[0]))
            .and_then(|s| p.add(&s, &r))?;
        Ok(p.output(r)?)
    })
    .unwrap();
    let g = eval(&p.gradient(0, &[0]).unwrap(), &[x]);
    // Row 0: the others' products; row 1: only the zero, -1·4; row 2: none.
    assert_eq!(
        g[1].as_slice::<f64>().unwrap(),
        [1.5, 1.0, 6.0, 0.0, -4.0, 0.0, 0.0, 0.0, 0.0]
    );
}
