//! Case `einsum10`: ten chained einsums on 8×8 f64 matrices, eager and as
//! one program, against ten direct faer products (tenferro measured this
//! case at 137.8 µs one-shot and 55.1 µs in one held session).

use weft::ops::LinalgOps;
use weft::OpError;
use weft::{DType, Program, Tensor, TensorHandle};
use weft_examples::{random, BoxError};

use crate::case::{Case, Domain, Run};
use crate::report::{Row, Side, Unit};
use crate::timing::{interleaved, micros};

pub(super) const CASE: Case = Case {
    name: "einsum10",
    title: "ten chained einsums, 8×8 f64",
    run: Run::InDomain(run),
};

const LINKS: usize = 10;
const N: usize = 8;

fn run(domain: &Domain<'_>, rows: &mut Vec<Row>) -> Result<(), BoxError> {
    let Domain { settings, lane, .. } = *domain;
    let matrices: Vec<Vec<f64>> = (0..=LINKS).map(|i| random(N * N, 40 + i as u64)).collect();
    let handles = matrices
        .iter()
        .map(|m| lane.upload(Tensor::from_vec(m.clone(), &[N, N])?))
        .collect::<Result<Vec<_>, _>>()?;
    let program = Program::record(|p| -> Result<(), OpError> {
        let inputs: Vec<_> = (0..=LINKS).map(|_| p.input(DType::F64, &[N, N])).collect();
        let mut x = inputs[0];
        for &m in &inputs[1..] {
            x = p.einsum("ij,jk->ik", &[&x, &m])?;
        }
        Ok(p.output(x)?)
    })?
    .labelled("einsum10");
    let refs: Vec<&TensorHandle> = handles.iter().collect();
    let direct = || {
        let mut x = matrices[0].clone();
        for m in &matrices[1..] {
            let mut next = vec![0.0; N * N];
            faer::linalg::matmul::matmul(
                faer::MatMut::from_row_major_slice_mut(&mut next, N, N),
                faer::Accum::Replace,
                faer::MatRef::from_row_major_slice(&x, N, N),
                faer::MatRef::from_row_major_slice(m, N, N),
                1.0,
                faer::Par::Seq,
            );
            x = next;
        }
        x
    };
    let want = direct();
    let (mut eager_out, mut program_out) = (Vec::new(), Vec::new());
    let download = |h: &TensorHandle| -> Vec<f64> {
        let t = lane.download(h).expect("submitted").wait().expect("ran");
        t.as_slice::<f64>().expect("f64").to_vec()
    };
    let [eager, recorded, faer] = interleaved(
        settings.reps(51),
        [
            &mut || {
                let mut x = handles[0].clone();
                for m in &handles[1..] {
                    x = lane.einsum("ij,jk->ik", &[&x, m]).expect("submitted");
                }
                eager_out = download(&x);
            },
            &mut || {
                let out = lane.run_program(&program, &refs).expect("submitted");
                program_out = download(&out[0]);
            },
            &mut || {
                std::hint::black_box(direct());
            },
        ],
    );
    for (what, got) in [("eager", &eager_out), ("program", &program_out)] {
        for (g, w) in got.iter().zip(&want) {
            if (g - w).abs() > 1e-9 * (1.0 + w.abs()) {
                return Err(format!("einsum10 {what}: {g} against faer's {w}").into());
            }
        }
    }
    let what = format!("{LINKS} einsums ij,jk->ik, {N}×{N} f64, the whole chain");
    let baseline = || Side::new("10 faer products called directly", micros(faer, 1));
    rows.push(
        Row::new(
            CASE.name,
            "einsum10-eager",
            what.clone(),
            Unit::MicrosPerOp,
            Side::new("lane.einsum ×10, download the last", micros(eager, 1)),
        )
        .against(baseline()),
    );
    rows.push(
        Row::new(
            CASE.name,
            "einsum10-program",
            what,
            Unit::MicrosPerOp,
            Side::new("lane.run_program, download the result", micros(recorded, 1)),
        )
        .against(baseline()),
    );
    Ok(())
}
