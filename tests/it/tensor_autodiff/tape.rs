//! The eager tape, and gradients across places through reverse transfers.

use super::*;
use weft::ops::{CreateOps, ElementwiseOps, LinalgOps, ReduceOps};
use weft::OpError;

#[test]
fn a_tape_records_eager_ops_programs_and_writes_into() {
    let rt = weft::Runtime::builder().split(2).build().unwrap();
    let lane = rt.lane(0).unwrap();
    let (av, xv) = (random(F, &[4, 3], 60), random(F, &[3], 61));
    let a = lane.upload(av.clone()).unwrap();
    let x = lane.upload(xv.clone()).unwrap();
    let square = Program::record(|p| -> Result<(), OpError> {
        let v = p.input(F, &[4]);
        let s = p.mul(&v, &v)?;
        Ok(p.output(s)?)
    })
    .unwrap();
    // L = Σ tanh(A x)², the square by a program, the tanh written into a
    // given tensor.
    let (loss, tape) = Tape::record(|| -> Result<_, weft::OpError> {
        let y = lane.einsum("ij,j->i", &[&a, &x])?;
        let out = lane.zeros(F, &[4])?;
        let t = lane.apply_into(TensorOp::Unary(UnaryOp::Tanh), &[&y], out)?;
        let sq = lane.run_program(&square, &[&t])?.remove(0);
        lane.sum_all(&sq)
    });
    let loss = loss.unwrap();
    assert!(tape.len() >= 4, "{} entries", tape.len());
    let grads = tape.gradient(&lane, &loss, &[&x, &a]).unwrap();
    // The same loss, recorded as a program, by differences.
    let p = Program::record(|p| -> Result<(), OpError> {
        let xi = p.input(F, &[3]);
        let ai = p.input(F, &[4, 3]);
        let y = p.einsum("ij,j->i", &[&ai, &xi])?;
        let t = p.unary(UnaryOp::Tanh, &y)?;
        let s = p.mul(&t, &t)?;
        let l = p.sum(&s, &[0])?;
        Ok(p.output(l)?)
    })
    .unwrap();
    check(
        "the tape's loss as a program",
        &p,
        &[xv.clone(), av.clone()],
        &[0, 1],
    );
    let want = eval(&p.gradient(0, &[0, 1]).unwrap(), &[xv, av]);
    for (h, w) in grads.iter().zip(&want[1..]) {
        let got = wait_ok(lane.download(h).unwrap());
        for (g, w) in got
            .as_slice::<f64>()
            .unwrap()
            .iter()
            .zip(w.as_slice::<f64>().unwrap())
        {
            assert!((g - w).abs() <= 1e-12 * w.abs().max(1.0), "{g} vs {w}");
        }
    }
    // What the tape cannot answer, in words.
    let outside = lane.sum_all(&x).unwrap();
    let err = tape.gradient(&lane, &outside, &[&x]).unwrap_err();
    assert!(
        err.to_string().contains("was not made on this tape"),
        "{err}"
    );
    let (made, tape2) = Tape::record(|| lane.mul(&x, &x).unwrap());
    let (l2, tape3) = Tape::record(|| lane.sum_all(&made).unwrap());
    let err = tape2.gradient(&lane, &made, &[&made]).unwrap_err();
    assert!(err.to_string().contains("was made on this tape"), "{err}");
    // The second tape saw only its own op: `made` is a constant there.
    let g = tape3.gradient(&lane, &l2, &[&made]).unwrap();
    assert_eq!(
        wait_ok(lane.download(&g[0]).unwrap())
            .as_slice::<f64>()
            .unwrap(),
        [1.0; 3]
    );
    let other = rt.lane(1).unwrap();
    let (far, tape4) = Tape::record(|| {
        let moved = lane.transfer(&x, 1).unwrap();
        other.sum_all(&moved).unwrap()
    });
    // A program runs on one place: the tape's program refuses a transfer
    // (its gradient crosses it: the next test).
    let err = tape4.program(&far, &[&x]).unwrap_err();
    assert!(err.to_string().contains("transfer"), "{err}");
    let err = tape.gradient(&lane, &loss, &[&x, &a, &x]).unwrap_err();
    assert!(err.to_string().contains("asked for twice"), "{err}");
}

/// Downloads `h` as f64 values.
fn values(lane: &weft::Lane, h: &weft::TensorHandle) -> Vec<f64> {
    wait_ok(lane.download(h).unwrap())
        .as_slice::<f64>()
        .unwrap()
        .to_vec()
}

#[test]
fn gradients_cross_places_through_reverse_transfers() {
    let rt = weft::Runtime::builder().split(2).build().unwrap();
    let (a, b) = (rt.lane(0).unwrap(), rt.lane(1).unwrap());
    let (xv, wv) = (random(F, &[5], 70), random(F, &[5], 71));
    let (x, w) = (a.upload(xv.clone()).unwrap(), b.upload(wv.clone()).unwrap());
    let unused = b.upload(random(F, &[2], 72)).unwrap();
    // y = sin(x)·x on domain 0; z = y·w on domain 1, back to 0;
    // L = Σ z·y + Σ x, with y read on both places and the loss itself
    // moved to domain 1 at the end.
    let (loss, tape) = Tape::record(|| -> Result<_, weft::OpError> {
        let s = a.unary(UnaryOp::Sin, &x)?;
        let y = a.mul(&s, &x)?;
        let there = a.transfer(&y, 1)?;
        let z = b.mul(&there, &w)?;
        let back = b.transfer(&z, 0)?;
        let zy = a.mul(&back, &y)?;
        let l = a.add(&a.sum_all(&zy)?, &a.sum_all(&x)?)?;
        a.transfer(&l, 1)
    });
    let loss = loss.unwrap();
    assert_eq!(loss.place(), weft::Place::Cpu(1));
    let g = tape.gradient(&b, &loss, &[&x, &w, &unused]).unwrap();
    let places: Vec<_> = g.iter().map(|h| h.place()).collect();
    assert_eq!(
        places,
        [
            weft::Place::Cpu(0),
            weft::Place::Cpu(1),
            weft::Place::Cpu(1)
        ]
    );
    // By hand: L = Σ w y² + Σ x, y = x sin x:
    // ∂L/∂x = 2 w y (sin x + x cos x) + 1, ∂L/∂w = y².
    let (xs, ws) = (xv.as_slice::<f64>().unwrap(), wv.as_slice::<f64>().unwrap());
    let (gx, gw) = (values(&a, &g[0]), values(&b, &g[1]));
    for i in 0..5 {
        let y = xs[i] * xs[i].sin();
        let want = 2.0 * ws[i] * y * (xs[i].sin() + xs[i] * xs[i].cos()) + 1.0;
        assert!((gx[i] - want).abs() < 1e-12, "x̄[{i}] {} vs {want}", gx[i]);
        assert!(
            (gw[i] - y * y).abs() < 1e-12,
            "w̄[{i}] {} vs {}",
            gw[i],
            y * y
        );
    }
    assert_eq!(values(&b, &g[2]), [0.0; 2]);
    // The lane asked may be any of the places: the same from domain 0.
    let again = tape.gradient(&a, &loss, &[&x, &w]).unwrap();
    assert_eq!(values(&a, &again[0]), gx);
    assert_eq!(values(&b, &again[1]), gw);
    // The loss must be a real scalar.
    let (v, tape2) = Tape::record(|| a.mul(&x, &x).unwrap());
    let err = tape2.gradient(&a, &v, &[&x]).unwrap_err();
    assert!(err.to_string().contains("real scalar"), "{err}");
}
