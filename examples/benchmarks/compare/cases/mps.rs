//! Cases `mps_eager` and `mps_program`: the norm `<ψ|ψ>` of a 32-site MPS
//! (physical dimension 2, c64) at bond 4 and 16, as 64 eager einsums on a
//! lane and as one recorded program, against the same contractions as
//! direct faer calls. Every value is checked against a plain-loop
//! reference.

use weft::ops::{Apply, CreateOps, LinalgOps};
use weft::OpError;
use weft::{c64, DType, Lane, Program, Tensor, TensorHandle};
use weft_examples::{random, BoxError};

use crate::case::{Case, Domain, Run};
use crate::report::{Row, Side, Unit};
use crate::timing::{interleaved, median, micros};

pub(super) const EAGER: Case = Case {
    name: "mps_eager",
    title: "MPS <ψ|ψ>, eager einsums",
    run: Run::InDomain(eager),
};

pub(super) const PROGRAM: Case = Case {
    name: "mps_program",
    title: "MPS <ψ|ψ>, one program",
    run: Run::InDomain(program),
};

const SITES: usize = 32;
const PHYS: usize = 2;
const CONTRACTIONS: u64 = 2 * SITES as u64;
const BONDS: [usize; 4] = [4, 8, 16, 32];

/// The MPS: its sites and their conjugates, on the host and resident.
struct Mps {
    bond: usize,
    sites: Vec<Tensor>,
    handles: Vec<TensorHandle>,
    conj: Vec<TensorHandle>,
    /// The plain-loop value.
    reference: c64,
}

impl Mps {
    fn new(lane: &Lane, bond: usize) -> Result<Mps, BoxError> {
        let sites: Vec<Tensor> = (0..SITES)
            .map(|k| {
                let (l, r) = dims(bond, k);
                let n = l * PHYS * r;
                let (re, im) = (random(n, 2 * k as u64 + 11), random(n, 2 * k as u64 + 12));
                let values: Vec<c64> = re
                    .into_iter()
                    .zip(im)
                    .map(|(r, i)| c64::new(r, i))
                    .collect();
                Tensor::from_vec(values, &[l, PHYS, r])
            })
            .collect::<Result<_, _>>()?;
        let conj = sites
            .iter()
            .map(|t| {
                let values: Vec<c64> = t.as_slice::<c64>()?.iter().map(|z| z.conj()).collect();
                Ok(lane.upload(Tensor::from_vec(values, t.shape())?)?)
            })
            .collect::<Result<Vec<_>, BoxError>>()?;
        let handles = sites
            .iter()
            .map(|t| lane.upload(t.clone()))
            .collect::<Result<Vec<_>, _>>()?;
        let reference = plain_loop(bond, &sites)?;
        Ok(Mps {
            bond,
            sites,
            handles,
            conj,
            reference,
        })
    }

    /// The program: both contractions of every site, from `E = [[1]]`.
    fn program(&self) -> Result<Program, BoxError> {
        Ok(Program::record(|p| -> Result<(), OpError> {
            let sites: Vec<_> = (0..SITES)
                .map(|k| {
                    let (l, r) = dims(self.bond, k);
                    p.input(DType::C64, &[l, PHYS, r])
                })
                .collect();
            let conj: Vec<_> = (0..SITES)
                .map(|k| {
                    let (l, r) = dims(self.bond, k);
                    p.input(DType::C64, &[l, PHYS, r])
                })
                .collect();
            let mut env = p.apply(
                weft::ops::TensorOp::Full {
                    dtype: DType::C64,
                    shape: vec![1, 1],
                    value: 1.0.into(),
                },
                &[],
            )?;
            for (&a, &ac) in sites.iter().zip(&conj) {
                let t = p.einsum("ab,bsd->asd", &[&env, &a])?;
                env = p.einsum("asc,asd->cd", &[&ac, &t])?;
            }
            Ok(p.output(env)?)
        })?
        .labelled(format!("mps-norm-bond{}", self.bond)))
    }

    fn check(&self, what: &str, value: c64) -> Result<(), BoxError> {
        let error = (value - self.reference).norm() / self.reference.norm();
        if error > 1e-10 {
            return Err(format!(
                "{what}, bond {}: {value} against the plain loop's {} (relative error {error:.2e})",
                self.bond, self.reference
            )
            .into());
        }
        Ok(())
    }
}

/// The bond dimensions left and right of site `k`.
fn dims(bond: usize, k: usize) -> (usize, usize) {
    (
        if k == 0 { 1 } else { bond },
        if k == SITES - 1 { 1 } else { bond },
    )
}

/// `<ψ|ψ>` by loops over every index: the reference.
fn plain_loop(bond: usize, sites: &[Tensor]) -> Result<c64, BoxError> {
    let mut env = vec![c64::new(1.0, 0.0)];
    for (k, site) in sites.iter().enumerate() {
        let (l, r) = dims(bond, k);
        let a = site.as_slice::<c64>()?;
        let mut next = vec![c64::new(0.0, 0.0); r * r];
        for c in 0..r {
            for d in 0..r {
                let mut sum = c64::new(0.0, 0.0);
                for x in 0..l {
                    for s in 0..PHYS {
                        for b in 0..l {
                            sum += a[(x * PHYS + s) * r + c].conj()
                                * env[x * l + b]
                                * a[(b * PHYS + s) * r + d];
                        }
                    }
                }
                next[c * r + d] = sum;
            }
        }
        env = next;
    }
    Ok(env[0])
}

/// The same two products per site as direct faer calls, the conjugate as
/// faer's adjoint view.
fn direct(bond: usize, sites: &[Tensor]) -> c64 {
    let mut env = vec![c64::new(1.0, 0.0)];
    for (k, site) in sites.iter().enumerate() {
        let (l, r) = dims(bond, k);
        let a = site.as_slice::<c64>().expect("c64");
        let mut t = vec![c64::new(0.0, 0.0); l * PHYS * r];
        faer::linalg::matmul::matmul(
            faer::MatMut::from_row_major_slice_mut(&mut t, l, PHYS * r),
            faer::Accum::Replace,
            faer::MatRef::from_row_major_slice(&env, l, l),
            faer::MatRef::from_row_major_slice(a, l, PHYS * r),
            c64::new(1.0, 0.0),
            faer::Par::Seq,
        );
        let mut next = vec![c64::new(0.0, 0.0); r * r];
        faer::linalg::matmul::matmul(
            faer::MatMut::from_row_major_slice_mut(&mut next, r, r),
            faer::Accum::Replace,
            faer::MatRef::from_row_major_slice(a, l * PHYS, r).adjoint(),
            faer::MatRef::from_row_major_slice(&t, l * PHYS, r),
            c64::new(1.0, 0.0),
            faer::Par::Seq,
        );
        env = next;
    }
    env[0]
}

fn value_of(lane: &Lane, env: &TensorHandle) -> c64 {
    let t = lane.download(env).expect("submitted").wait().expect("ran");
    t.as_slice::<c64>().expect("c64")[0]
}

fn eager(domain: &Domain<'_>, rows: &mut Vec<Row>) -> Result<(), BoxError> {
    let Domain { settings, lane, .. } = *domain;
    for bond in BONDS {
        let mps = Mps::new(lane, bond)?;
        let one = lane.ones(DType::C64, &[1, 1])?;
        let (mut got, mut want) = (c64::new(0.0, 0.0), c64::new(0.0, 0.0));
        let [weft, faer] = interleaved(
            settings.reps(21),
            [
                &mut || {
                    let mut env = one.clone();
                    for (a, ac) in mps.handles.iter().zip(&mps.conj) {
                        let t = lane.einsum("ab,bsd->asd", &[&env, a]).expect("submitted");
                        env = lane.einsum("asc,asd->cd", &[ac, &t]).expect("submitted");
                    }
                    got = value_of(lane, &env);
                },
                &mut || want = direct(bond, &mps.sites),
            ],
        );
        mps.check("eager einsums", got)?;
        mps.check("direct faer", want)?;
        rows.push(row(
            EAGER.name,
            "lane.einsum ×64, download the last",
            bond,
            weft,
            faer,
        ));
    }
    Ok(())
}

fn program(domain: &Domain<'_>, rows: &mut Vec<Row>) -> Result<(), BoxError> {
    let Domain { settings, lane, .. } = *domain;
    for bond in BONDS {
        let mps = Mps::new(lane, bond)?;
        let program = mps.program()?;
        let inputs: Vec<&TensorHandle> = mps.handles.iter().chain(&mps.conj).collect();
        let (mut got, mut want) = (c64::new(0.0, 0.0), c64::new(0.0, 0.0));
        let [weft, faer] = interleaved(
            settings.reps(21),
            [
                &mut || {
                    let out = lane.run_program(&program, &inputs).expect("submitted");
                    got = value_of(lane, &out[0]);
                },
                &mut || want = direct(bond, &mps.sites),
            ],
        );
        mps.check("program", got)?;
        mps.check("direct faer", want)?;
        rows.push(row(
            PROGRAM.name,
            "lane.run_program, download the result",
            bond,
            weft,
            faer,
        ));
        // The engine's side alone: runs of the plan inside one op on the
        // actor, against the direct calls inside one op there too (no
        // message, no wake-up of a waiting thread on either side).
        let [engine, direct_on_actor] = on_the_actor(lane, &program, &mps, settings.reps(21))?;
        rows.push(
            Row::new(
                PROGRAM.name,
                format!("{}-engine-bond{bond}", PROGRAM.name),
                format!("the same, on the actor, {RUNS_ON_ACTOR} runs in one op"),
                Unit::MicrosPerOp,
                Side::new("engine.run_program", micros(engine, CONTRACTIONS)),
            )
            .against(Side::new(
                "faer called directly on the actor",
                micros(direct_on_actor, CONTRACTIONS),
            )),
        );
    }
    Ok(())
}

/// Runs timed inside one op: enough that the op's own cost vanishes.
const RUNS_ON_ACTOR: u32 = 200;

/// The median time of one run of `program`, and of the direct calls, each
/// timed over [`RUNS_ON_ACTOR`] runs inside an op on the actor.
fn on_the_actor(
    lane: &Lane,
    program: &Program,
    mps: &Mps,
    reps: usize,
) -> Result<[std::time::Duration; 2], BoxError> {
    use weft::TensorEngine;
    let ids: Vec<weft::tensor::TensorId> = mps
        .handles
        .iter()
        .chain(&mps.conj)
        .map(|h| h.id())
        .collect();
    // The inputs stay resident while the op runs: the handles outlive it.
    lane.sync(&mps.conj[SITES - 1])?.wait()?;
    let (program, sites, bond) = (program.clone(), mps.sites.clone(), mps.bond);
    let times = lane
        .run(move |engine: &mut weft::CpuEngine| {
            let out = [weft::tensor::TensorId::scratch()];
            let mut plan = Vec::with_capacity(reps);
            let mut direct_times = Vec::with_capacity(reps);
            for _ in 0..reps {
                let start = std::time::Instant::now();
                for _ in 0..RUNS_ON_ACTOR {
                    engine
                        .run_program(&program, &ids, &out, 0)
                        .map_err(|e| e.to_string())?;
                    engine.free(out[0]);
                }
                plan.push(start.elapsed() / RUNS_ON_ACTOR);
                let start = std::time::Instant::now();
                for _ in 0..RUNS_ON_ACTOR {
                    std::hint::black_box(direct(bond, &sites));
                }
                direct_times.push(start.elapsed() / RUNS_ON_ACTOR);
            }
            Ok::<_, String>([median(plan), median(direct_times)])
        })?
        .wait()??;
    Ok(times)
}

fn row(
    case: &'static str,
    how: &str,
    bond: usize,
    weft: std::time::Duration,
    faer: std::time::Duration,
) -> Row {
    Row::new(
        case,
        format!("{case}-bond{bond}"),
        format!("{SITES} sites, bond {bond}, c64, per contraction ({CONTRACTIONS})"),
        Unit::MicrosPerOp,
        Side::new(how, micros(weft, CONTRACTIONS)),
    )
    .against(Side::new(
        "faer called directly",
        micros(faer, CONTRACTIONS),
    ))
}
