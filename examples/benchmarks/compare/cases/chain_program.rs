//! Case `chain_program`: the 1 000 dependent adds of case 7 (`chain`) as
//! one recorded program, against the same kernel called inline.

use weft::ops::ElementwiseOps;
use weft::OpError;
use weft::{DType, Program, Tensor};
use weft_examples::{random, BoxError};

use crate::case::{Case, Domain, Run};
use crate::report::{Row, Side, Unit};
use crate::timing::{interleaved, micros};

pub(super) const CASE: Case = Case {
    name: "chain_program",
    title: "chain of small ops, one program",
    run: Run::InDomain(run),
};

fn run(domain: &Domain<'_>, rows: &mut Vec<Row>) -> Result<(), BoxError> {
    let Domain { settings, lane, .. } = *domain;
    const LINKS: u64 = 1_000;
    let x = Tensor::from_vec(random(64, 5), &[64])?;
    let small = lane.upload(x.clone())?;
    let program = Program::record(|p| -> Result<(), OpError> {
        let a = p.input(DType::F64, &[64]);
        let mut h = a;
        for _ in 0..LINKS {
            h = p.add(&h, &a)?;
        }
        Ok(p.output(h)?)
    })?
    .labelled("chain");
    let (mut got, mut want) = (Vec::new(), Vec::new());
    let [weft, direct] = interleaved(
        settings.reps(21),
        [
            &mut || {
                let out = lane.run_program(&program, &[&small]).expect("submitted");
                let t = lane
                    .download(&out[0])
                    .expect("submitted")
                    .wait()
                    .expect("ran");
                got = t.as_slice::<f64>().expect("f64").to_vec();
            },
            &mut || {
                let t = super::chain::inline_adds(&x, LINKS);
                want = t.as_slice::<f64>().expect("f64").to_vec();
            },
        ],
    );
    if got != want {
        return Err("chain_program: the program's sum differs from the inline loop's".into());
    }
    rows.push(
        Row::new(
            CASE.name,
            "chain-program",
            format!("{LINKS} dependent adds, 64 f64, as one program"),
            Unit::MicrosPerOp,
            Side::new("lane.run_program, download the result", micros(weft, LINKS)),
        )
        .against(Side::new(
            "kernel called inline (no sharing)",
            micros(direct, LINKS),
        )),
    );
    Ok(())
}
