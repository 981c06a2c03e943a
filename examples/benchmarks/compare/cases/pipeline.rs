//! Case 8, `pipeline`: a 3-stage pipeline across two domains (`Pipeline`)
//! against its slowest stage alone. It builds a runtime of its own.

use weft::ops::{CreateOps, ElementwiseOps, LinalgOps, ReduceOps};
use weft::{ops::Distribution, runtime::Pipeline, DType, Lane, OpError, TensorHandle};
use weft_examples::BoxError;

use crate::case::{Case, Run};
use crate::report::{Row, Side, Unit};
use crate::settings::Settings;
use crate::timing::{interleaved, per_second};

pub(super) const CASE: Case = Case {
    name: "pipeline",
    title: "8. 3-stage pipeline across domains",
    run: Run::OwnRuntime(run),
};

const PIPE_BATCH: usize = 16;
const PIPE_N: usize = 96;

fn run(settings: &Settings, rows: &mut Vec<Row>) -> Result<(), BoxError> {
    // Two domains, as the pipeline example splits one NUMA node; one on a
    // single CPU, where the stages share it.
    let rt = settings.runtime(2).or_else(|_| settings.runtime(1))?;
    let domains = rt.domains().len();
    let on = |stage: usize| stage % domains;
    let items = settings.count(160) as usize;
    let in_flight = 8;

    let generate = |lane: &Lane, i: usize| {
        lane.random(
            DType::F64,
            &[PIPE_BATCH, PIPE_N, PIPE_N],
            Distribution::Uniform,
            i as u64,
        )
    };
    let contract = |lane: &Lane, x: &TensorHandle| lane.einsum("bij,bkj->ik", &[x, x]);
    let reduce = |lane: &Lane, g: &TensorHandle| lane.sum_all(&lane.mul(g, g)?);
    let pipe = Pipeline::new(&rt, "generate", on(0), generate)
        .stage("contract", on(1), contract)
        .stage("reduce", on(2), reduce)
        .in_flight(in_flight);

    // Each stage alone on its domain, fed one resident input: its ops for
    // every item submitted on one lane, the last one waited for.
    let x = rt.lane(on(1))?.random(
        DType::F64,
        &[PIPE_BATCH, PIPE_N, PIPE_N],
        Distribution::Uniform,
        7,
    )?;
    let g = rt
        .lane(on(2))?
        .random(DType::F64, &[PIPE_N, PIPE_N], Distribution::Uniform, 8)?;
    let alone = |domain: usize, stage: &dyn Fn(&Lane, usize) -> Result<TensorHandle, OpError>| {
        let lane = rt.lane(domain).expect("a domain of this runtime");
        let mut last = None;
        for i in 0..items {
            last = Some(stage(&lane, i).expect("submitted"));
        }
        let last = last.expect("one item at least");
        lane.with(&[&last], |_, _| ())
            .expect("submitted")
            .wait()
            .expect("ran");
    };
    let [whole, gen_alone, contract_alone, reduce_alone] = interleaved(
        settings.reps(5),
        [
            &mut || {
                let run = pipe.run(items).expect("ran");
                assert!(run.outputs.iter().all(Result::is_ok));
            },
            &mut || alone(on(0), &|lane, i| generate(lane, i)),
            &mut || alone(on(1), &|lane, _| contract(lane, &x)),
            &mut || alone(on(2), &|lane, _| reduce(lane, &g)),
        ],
    );
    let stages = [
        ("generate", on(0), gen_alone),
        ("contract", on(1), contract_alone),
        ("reduce", on(2), reduce_alone),
    ];
    for (name, domain, time) in stages {
        rows.push(Row::new(
            CASE.name,
            format!("pipeline-stage-{name}"),
            format!("stage {name} alone (domain {domain})"),
            Unit::ItemsPerSecond,
            Side::new(
                format!("{name} ops, wait the last"),
                per_second(time, items as u64),
            ),
        ));
    }
    let (slowest, domain, time) = stages
        .into_iter()
        .max_by_key(|s| s.2)
        .expect("three stages");
    rows.push(
        Row::new(
            CASE.name,
            "pipeline",
            format!("{items} items, 3 stages on {domains} domain(s), {in_flight} in flight"),
            Unit::ItemsPerSecond,
            Side::new("Pipeline::run", per_second(whole, items as u64)),
        )
        .against(Side::new(
            format!("slowest stage alone: {slowest} (domain {domain})"),
            per_second(time, items as u64),
        )),
    );
    rt.shutdown()?;
    Ok(())
}
