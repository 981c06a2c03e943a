//! Programs: recorded once, run as one op. Random programs against eager
//! execution of the same ops (bit for bit: the CPU engine runs each step
//! with the kernels and plans an eager op of it runs with), the plan
//! cache, failure inside a program, bad inputs, and programs from many
//! threads and under shutdown.

use std::sync::Arc;
use weft::ops::{Apply, CreateOps, ElementwiseOps, LinalgOps, ReduceOps};

use weft::{
    actor::FailureCause,
    c64,
    engine::PROGRAM_CACHE_CAPACITY,
    error::RecordError,
    ops::{BinaryOp, Linalg, TensorOp, UnaryOp},
    program::Value,
    DType, OpError, Program, Recorder, Runtime, Scalar, Tensor, TensorHandle, TicketError,
};
use weft_tests::{wait, wait_ok};

fn runtime() -> Runtime {
    Runtime::builder().split(1).build().expect("runtime")
}

/// A tiny deterministic generator (xorshift), so a failing seed replays.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64 - 0.5
    }
}

fn random_tensor(rng: &mut Rng, dtype: DType, shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    match dtype {
        DType::C64 => Tensor::from_vec(
            (0..n)
                .map(|_| c64::new(rng.unit(), rng.unit()))
                .collect::<Vec<_>>(),
            shape,
        ),
        _ => Tensor::from_vec((0..n).map(|_| rng.unit()).collect::<Vec<f64>>(), shape),
    }
    .expect("fits")
}

/// One random op on random earlier values; `None` when the pick does not
/// fit them (the recorder refused it, as a lane would).
fn random_step(rng: &mut Rng, p: &Recorder, values: &[Value]) -> Option<Vec<Value>> {
    let mut pick = || values[rng.below(values.len())];
    let (a, b) = (pick(), pick());
    let op = match rng.below(12) {
        0 => TensorOp::Binary(BinaryOp::Add),
        1 => TensorOp::Binary(BinaryOp::Mul),
        2 => TensorOp::Binary(BinaryOp::Sub),
        3 => TensorOp::BinaryScalar {
            op: BinaryOp::Mul,
            value: 0.75.into(),
            scalar_first: false,
        },
        4 => TensorOp::Unary([UnaryOp::Tanh, UnaryOp::Neg, UnaryOp::Sin][rng.below(3)]),
        5 => TensorOp::Matmul,
        6 => TensorOp::Einsum(
            weft::ops::EinsumSpec::parse(
                [
                    "ij,jk->ik",
                    "ij->ji",
                    "ij,kj->ik",
                    "ij,ij->i",
                    "ij->",
                    "ij,jk->ki",
                ][rng.below(6)],
            )
            .expect("valid"),
        ),
        7 => TensorOp::Permute(vec![1, 0]),
        8 => {
            let shape = p.meta(a).ok()?.shape.clone();
            TensorOp::Reshape(vec![shape.iter().product()])
        }
        9 => TensorOp::Reduce {
            op: weft::ops::ReduceOp::Sum,
            axes: vec![0],
            keep_dims: rng.below(2) == 0,
        },
        10 => TensorOp::Linalg(Linalg::Qr),
        _ => TensorOp::Unary(UnaryOp::Conj),
    };
    let args: Vec<Value> = [a, b].into_iter().take(op.arity()).collect();
    p.record_many(op, &args).ok()
}

fn bits(t: &Tensor) -> Vec<u64> {
    match t.dtype() {
        DType::C64 => t
            .as_slice::<c64>()
            .expect("c64")
            .iter()
            .flat_map(|z| [z.re.to_bits(), z.im.to_bits()])
            .collect(),
        _ => t
            .as_slice::<f64>()
            .expect("f64")
            .iter()
            .map(|x| x.to_bits())
            .collect(),
    }
}

#[test]
fn random_programs_match_eager_execution_bit_for_bit() {
    let rt = runtime();
    let lane = rt.lane(0).expect("lane");
    let mut checked_steps = 0;
    for seed in 1..=120u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let dtype = if seed % 3 == 0 {
            DType::C64
        } else {
            DType::F64
        };
        let shapes: Vec<Vec<usize>> = (0..3)
            .map(|_| vec![2 + rng.below(3), 2 + rng.below(3)])
            .collect();
        let steps = 3 + rng.below(10);
        let program = Program::record(|p| -> Result<(), OpError> {
            let mut values: Vec<Value> = shapes.iter().map(|s| p.input(dtype, s)).collect();
            let mut made = 0;
            while made < steps {
                if let Some(out) = random_step(&mut rng, p, &values) {
                    values.extend(out);
                    made += 1;
                }
            }
            let last = *values.last().expect("a value");
            p.output(last)?;
            Ok(p.output(values[3 + rng.below(values.len() - 3)])?)
        })
        .expect("recorded");
        checked_steps += program.steps().len();
        let mut data = Rng(seed + 7);
        let inputs: Vec<TensorHandle> = shapes
            .iter()
            .map(|s| {
                lane.upload(random_tensor(&mut data, dtype, s))
                    .expect("upload")
            })
            .collect();
        let refs: Vec<&TensorHandle> = inputs.iter().collect();
        let outs = lane.run_program(&program, &refs).expect("submitted");
        // The same steps, one eager op each.
        let mut values: Vec<Option<TensorHandle>> = vec![None; program.metas().len()];
        for (&v, h) in program.inputs().iter().zip(&inputs) {
            values[v] = Some(h.clone());
        }
        for step in program.steps() {
            let args: Vec<&TensorHandle> = step
                .args
                .iter()
                .map(|&v| values[v].as_ref().expect("made"))
                .collect();
            let made = lane.apply_many(step.op.clone(), &args).expect("eager op");
            for (i, h) in made.into_iter().enumerate() {
                values[step.first_result + i] = Some(h);
            }
        }
        for (k, (&v, out)) in program.outputs().iter().zip(&outs).enumerate() {
            let got = wait_ok(lane.download(out).expect("download"));
            let eager = values[v].as_ref().expect("made");
            let want = wait_ok(lane.download(eager).expect("download"));
            assert_eq!(
                got.shape(),
                want.shape(),
                "seed {seed}, output {k}\n{program}"
            );
            assert_eq!(
                bits(&got),
                bits(&want),
                "seed {seed}, output {k}\n{program}"
            );
        }
    }
    assert!(checked_steps > 600, "{checked_steps} steps checked");
    rt.shutdown().expect("shutdown");
}

/// Fused elementwise chains give what the same ops give one by one, bit
/// for bit: every link kind, both operand orders, small and large (spread
/// over the pool) tensors, real and complex.
#[test]
fn fused_chains_match_eager_ops_bit_for_bit() {
    let rt = runtime();
    let lane = rt.lane(0).expect("lane");
    for (dtype, n) in [(DType::F64, 1000), (DType::C64, 77), (DType::F64, 100_003)] {
        let program = Program::record(|p| -> Result<(), OpError> {
            let a = p.input(dtype, &[n]);
            let b = p.input(dtype, &[n]);
            let x = p.add(&a, &b)?;
            let x = p.sub(&b, &x)?; // carried on the right
            let x = p.scale(&x, 0.5)?;
            let x = p.apply(
                TensorOp::BinaryScalar {
                    op: BinaryOp::Sub,
                    value: 3.0.into(),
                    scalar_first: true,
                },
                &[&x],
            )?;
            let x = p.unary(UnaryOp::Tanh, &x)?;
            let x = p.div(&x, &a)?;
            let x = p.binary(BinaryOp::Pow, &x, &b)?;
            let x = p.unary(UnaryOp::Neg, &x)?;
            Ok(p.output(x)?)
        })
        .expect("recorded");
        let mut rng = Rng(n as u64);
        let (a, b) = (
            lane.upload(random_tensor(&mut rng, dtype, &[n]))
                .expect("upload"),
            lane.upload(random_tensor(&mut rng, dtype, &[n]))
                .expect("upload"),
        );
        let got = lane.run_program(&program, &[&a, &b]).expect("submitted");
        let mut values: Vec<TensorHandle> = vec![a.clone(), b.clone()];
        for step in program.steps() {
            let args: Vec<&TensorHandle> = step.args.iter().map(|&v| &values[v]).collect();
            let h = lane.apply(step.op.clone(), &args).expect("eager");
            values.push(h);
        }
        let got = wait_ok(lane.download(&got[0]).expect("download"));
        let want = wait_ok(
            lane.download(values.last().expect("last"))
                .expect("download"),
        );
        assert_eq!(bits(&got), bits(&want), "{dtype} × {n}");
    }
    rt.shutdown().expect("shutdown");
}

/// `E' = Aᴴ (E A)` per site: the MPS transfer of `<ψ|ψ>`, bond `bond`.
fn transfer(bond: usize) -> Program {
    Program::record(|p| -> Result<(), OpError> {
        let e = p.input(DType::C64, &[bond, bond]);
        let a = p.input(DType::C64, &[bond, 2, bond]);
        let ac = p.input(DType::C64, &[bond, 2, bond]);
        let t = p.einsum("ab,bsd->asd", &[&e, &a])?;
        let next = p.einsum("asc,asd->cd", &[&ac, &t])?;
        Ok(p.output(next)?)
    })
    .expect("recorded")
    .labelled("transfer")
}

#[test]
fn plans_are_cached_by_structure_and_the_bound_holds() {
    let rt = runtime();
    let lane = rt.lane(0).expect("lane");
    let programs = |lane: &weft::Lane| wait_ok(lane.memory().expect("memory")).programs;
    let before = programs(&lane);
    let mut rng = Rng(99);
    let run = |program: &Program, rng: &mut Rng| {
        let inputs: Vec<TensorHandle> = program
            .input_metas()
            .iter()
            .map(|m| {
                lane.upload(random_tensor(rng, m.dtype, &m.shape))
                    .expect("upload")
            })
            .collect();
        let refs: Vec<&TensorHandle> = inputs.iter().collect();
        let out = lane.run_program(program, &refs).expect("submitted");
        wait_ok(lane.sync(&out[0]).expect("sync"));
    };
    let four = transfer(4);
    run(&four, &mut rng);
    run(&four, &mut rng); // new inputs, same metas: a hit
    run(&transfer(4), &mut rng); // recorded again alike: a hit too
    run(&transfer(5), &mut rng); // new shapes: a new plan
    let after = programs(&lane);
    assert_eq!(after.misses - before.misses, 2, "{after:?}");
    assert_eq!(after.hits - before.hits, 2, "{after:?}");
    assert_eq!(after.entries, before.entries + 2, "{after:?}");
    assert_eq!(after.capacity, PROGRAM_CACHE_CAPACITY);
    // Past the bound, the oldest plans go and the count stays at it.
    for n in 0..PROGRAM_CACHE_CAPACITY + 8 {
        let program = Program::record(|p| -> Result<(), OpError> {
            let a = p.input(DType::F64, &[n + 1]);
            let b = p.unary(UnaryOp::Neg, &a)?;
            Ok(p.output(b)?)
        })
        .expect("recorded");
        run(&program, &mut rng);
    }
    let full = programs(&lane);
    assert_eq!(full.entries, PROGRAM_CACHE_CAPACITY, "{full:?}");
    assert!(full.evictions >= 10, "{full:?}");
    assert_eq!(
        full.hits + full.misses,
        after.hits + after.misses + PROGRAM_CACHE_CAPACITY as u64 + 8,
        "every lookup counted once: {full:?}"
    );
    // The eager path caches einsum plans by subscripts, shapes and type.
    let x = lane
        .upload(random_tensor(&mut rng, DType::F64, &[3, 3]))
        .expect("upload");
    let einsums = |lane: &weft::Lane| wait_ok(lane.memory().expect("memory")).einsums;
    let e0 = einsums(&lane);
    for _ in 0..5 {
        let y = lane.einsum("ij,jk->ik", &[&x, &x]).expect("einsum");
        wait_ok(lane.sync(&y).expect("sync"));
    }
    let e1 = einsums(&lane);
    assert_eq!((e1.misses - e0.misses, e1.hits - e0.hits), (1, 4), "{e1:?}");
    rt.shutdown().expect("shutdown");
}

#[test]
fn the_plan_caches_hold_what_the_builder_sets() {
    let rt = Runtime::builder()
        .split(1)
        .program_cache(3)
        .einsum_cache(2)
        .build()
        .expect("runtime");
    let lane = rt.lane(0).expect("lane");
    let memory = || wait_ok(lane.memory().expect("memory"));
    let negate = |n: usize| {
        Program::record(|p| -> Result<(), OpError> {
            let a = p.input(DType::F64, &[n]);
            let b = p.unary(UnaryOp::Neg, &a)?;
            Ok(p.output(b)?)
        })
        .expect("recorded")
    };
    for round in 0..2 {
        for n in 1..=5 {
            let x = lane.zeros(DType::F64, &[n]).expect("zeros");
            let y = lane.run_program(&negate(n), &[&x]).expect("run");
            wait_ok(lane.sync(&y[0]).expect("sync"));
            let e = lane.einsum("i,i->i", &[&x, &x]).expect("einsum");
            wait_ok(lane.sync(&e).expect("sync"));
        }
        let m = memory();
        assert_eq!((m.programs.capacity, m.programs.entries), (3, 3), "{m:?}");
        assert_eq!((m.einsums.capacity, m.einsums.entries), (2, 2), "{m:?}");
        // Five shapes through three places: every lookup misses, in both
        // rounds, and each past the bound evicts.
        let lookups = 5 * (round + 1) as u64;
        assert_eq!((m.programs.misses, m.programs.hits), (lookups, 0), "{m:?}");
        assert_eq!(m.programs.evictions, lookups - 3, "{m:?}");
        assert_eq!(m.einsums.evictions, lookups - 2, "{m:?}");
    }
    rt.shutdown().expect("shutdown");
}

#[test]
fn host_scalars_are_inputs_of_a_run_not_of_its_plan() {
    let rt = runtime();
    let lane = rt.lane(0).expect("lane");
    let n = 64;
    // Σ cⱼ·vⱼ over three vectors, the coefficients given per run.
    let combine = Program::record(|p| -> Result<(), OpError> {
        let v: Vec<Value> = (0..3).map(|_| p.input(DType::F64, &[n])).collect();
        let c: Vec<Value> = (0..3).map(|_| p.input(DType::F64, &[])).collect();
        let mut sum = p.mul(&c[0], &v[0])?;
        for j in 1..3 {
            let term = p.mul(&c[j], &v[j])?;
            sum = p.add(&sum, &term)?;
        }
        Ok(p.output(sum)?)
    })
    .expect("recorded");
    let mut rng = Rng(7);
    let vs: Vec<Tensor> = (0..3)
        .map(|_| random_tensor(&mut rng, DType::F64, &[n]))
        .collect();
    let handles: Vec<TensorHandle> = vs.iter().map(|v| lane.upload(v.clone()).unwrap()).collect();
    let refs: Vec<&TensorHandle> = handles.iter().collect();
    let programs = |lane: &weft::Lane| wait_ok(lane.memory().expect("memory")).programs;
    let before = programs(&lane);
    for (round, cs) in [[0.5, 2.0, -1.25], [3.0, -0.1, 1e-3], [0.0, 1.0, 7.5]]
        .into_iter()
        .enumerate()
    {
        let scalars: Vec<Scalar> = cs.iter().map(|&c| Scalar::Real(c)).collect();
        let out = lane
            .run_program_with(&combine, &refs, &scalars)
            .expect("submitted");
        let got = wait_ok(lane.download(&out[0]).expect("download"));
        // The same operations in the same order on the host: equal bits.
        let want: Vec<f64> = (0..n)
            .map(|i| {
                let v = |j: usize| vs[j].as_slice::<f64>().unwrap()[i];
                (cs[0] * v(0) + cs[1] * v(1)) + cs[2] * v(2)
            })
            .collect();
        assert_eq!(got.as_slice::<f64>().unwrap(), want, "round {round}");
    }
    let after = programs(&lane);
    assert_eq!(
        (after.misses - before.misses, after.hits - before.hits),
        (1, 2),
        "one plan for three sets of values: {after:?}"
    );
    // Nothing of the runs stays resident but their outputs, dropped.
    let (tensors, _) = wait_ok(lane.resident().expect("resident"));
    assert_eq!(tensors, 3);
    // Bad calls, named; nothing submitted.
    let real = |c: f64| Scalar::Real(c);
    let err = lane
        .run_program_with(&combine, &refs, &[real(1.0)])
        .unwrap_err();
    assert!(
        matches!(
            err,
            OpError::ProgramArity {
                expected: 6,
                got: 4,
                ..
            }
        ),
        "{err:?}"
    );
    let err = lane
        .run_program_with(&combine, &refs[..2], &[real(1.0); 4])
        .unwrap_err();
    assert!(
        matches!(err, OpError::ProgramInput { index: 2, .. }),
        "{err:?}"
    );
    let ints = Program::record(|p| -> Result<(), OpError> {
        let k = p.input(DType::I32, &[]);
        let x = p.input(DType::I32, &[2]);
        let y = p.mul(&k, &x)?;
        Ok(p.output(y)?)
    })
    .expect("recorded");
    let x = lane
        .upload(Tensor::from_vec(vec![2i32, -3], &[2]).unwrap())
        .unwrap();
    // A scalar for a placeholder that is not rank 0.
    let err = lane
        .run_program_with(&ints, &[], &[Scalar::Int(2), Scalar::Int(1)])
        .unwrap_err();
    assert!(
        matches!(err, OpError::ProgramInput { index: 1, .. }),
        "{err:?}"
    );
    let k_first = Program::record(|p| -> Result<(), OpError> {
        let x = p.input(DType::I32, &[2]);
        let k = p.input(DType::I32, &[]);
        let y = p.mul(&k, &x)?;
        Ok(p.output(y)?)
    })
    .expect("recorded");
    let err = lane
        .run_program_with(&k_first, &[&x], &[real(1.5)])
        .unwrap_err();
    assert!(matches!(err, OpError::Tensor(_)), "{err:?}");
    assert!(err.to_string().contains("1.5"), "{err}");
    let out = lane
        .run_program_with(&k_first, &[&x], &[Scalar::Int(-4)])
        .unwrap();
    assert_eq!(
        wait_ok(lane.download(&out[0]).unwrap())
            .as_slice::<i32>()
            .unwrap(),
        &[-8, 12]
    );
    // Under a tape the run is taped, and its gradient flows to the tensors.
    let (out, tape) = weft::program::Tape::record(|| {
        let out = lane
            .run_program_with(&combine, &refs, &[real(2.0), real(-1.0), real(0.5)])
            .unwrap();
        lane.sum_all(&out[0]).unwrap()
    });
    let grads = tape
        .gradient(&lane, &out, &[&handles[1]])
        .expect("gradient");
    let g = wait_ok(lane.download(&grads[0]).unwrap());
    assert!(
        g.as_slice::<f64>().unwrap().iter().all(|&d| d == -1.0),
        "{g:?}"
    );
    rt.shutdown().expect("shutdown");
}

#[test]
fn a_failing_step_fails_the_outputs_and_keeps_the_inputs_and_the_actor() {
    let rt = runtime();
    let lane = rt.lane(0).expect("lane");
    let program = Program::record(|p| -> Result<(), OpError> {
        let a = p.input(DType::F64, &[2, 2]);
        let b = p.scale(&a, -1.0)?;
        let l = p.apply(TensorOp::Linalg(Linalg::Cholesky), &[&b])?;
        let c = p.add(&l, &a)?;
        p.output(c)?;
        Ok(p.output(b)?)
    })
    .expect("recorded")
    .labelled("failing");
    let a = lane
        .upload(Tensor::from_vec(vec![2.0f64, 0.0, 0.0, 3.0], &[2, 2]).expect("fits"))
        .expect("upload");
    let (tensors, _) = wait_ok(lane.resident().expect("resident"));
    let outs = lane.run_program(&program, &[&a]).expect("submitted");
    for out in &outs {
        let err = wait(lane.download(out).expect("download")).expect_err("fails");
        let TicketError::DependencyFailed(failure) = &err else {
            panic!("{err:?}");
        };
        assert_eq!(failure.op, "program failing (3 ops)");
        let FailureCause::Error(message) = &failure.cause else {
            panic!("{failure:?}");
        };
        assert!(
            message.starts_with("program failing (3 ops), step 1 (cholesky): "),
            "{message}"
        );
    }
    // The input is intact, nothing the program made stayed, the actor lives.
    let back = wait_ok(lane.download(&a).expect("download"));
    assert_eq!(back.as_slice::<f64>().expect("f64"), &[2.0, 0.0, 0.0, 3.0]);
    drop(outs);
    assert_eq!(wait_ok(lane.resident().expect("resident")).0, tensors);
    let sum = lane.add(&a, &a).expect("add");
    assert_eq!(
        wait_ok(lane.download(&sum).expect("download"))
            .as_slice::<f64>()
            .expect("f64"),
        &[4.0, 0.0, 0.0, 6.0]
    );
    rt.shutdown().expect("shutdown");
}

#[test]
fn bad_inputs_are_refused_at_the_call_site_naming_the_input() {
    let rt = runtime();
    let lane = rt.lane(0).expect("lane");
    let program = transfer(4);
    let e = lane.eye(DType::C64, 4, 4).expect("eye");
    let wrong = lane.zeros(DType::C64, &[4, 3, 4]).expect("zeros");
    let err = lane.run_program(&program, &[&e, &e]).unwrap_err();
    assert!(matches!(
        err,
        OpError::ProgramArity {
            expected: 3,
            got: 2,
            ..
        }
    ));
    assert_eq!(
        err.to_string(),
        "program transfer (2 ops): takes 3 inputs, given 2"
    );
    let err = lane
        .run_program(&program, &[&e, &wrong, &wrong])
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "program transfer (2 ops): input 1 is c64 [4, 3, 4], its placeholder c64 [4, 2, 4]"
    );
    // A record-time error names the step, the op and both shapes.
    let err = Program::record(|p| -> Result<(), OpError> {
        let a = p.input(DType::F64, &[2, 3]);
        let b = p.input(DType::F64, &[2, 3]);
        let c = p.einsum("ij,jk->ik", &[&a, &b])?;
        Ok(p.output(c)?)
    })
    .unwrap_err();
    assert!(matches!(
        &err,
        OpError::Record(record) if matches!(**record, RecordError::Op {
            step: 0,
            op: "einsum",
            ..
        })
    ));
    assert_eq!(
        err.to_string(),
        "program step 0 (einsum): einsum `ij,jk->ik`: label `j` has extents 3 and 2"
    );
    // Handles of another runtime are refused too.
    let other = runtime();
    let foreign = other
        .lane(0)
        .expect("lane")
        .eye(DType::C64, 4, 4)
        .expect("eye");
    let a = lane.zeros(DType::C64, &[4, 2, 4]).expect("zeros");
    let err = lane.run_program(&program, &[&foreign, &a, &a]).unwrap_err();
    assert!(matches!(err, OpError::ForeignHandle { .. }), "{err}");
    other.shutdown().expect("shutdown");
    rt.shutdown().expect("shutdown");
}

/// The MPS norm through programs, from many threads at once, each
/// checking its value against the plain-loop result.
#[test]
fn programs_from_many_threads_agree() {
    let rt = Arc::new(runtime());
    let program = transfer(3);
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let rt = rt.clone();
            let program = program.clone();
            std::thread::spawn(move || {
                let lane = rt.lane(0).expect("lane");
                let mut rng = Rng(1000 + t);
                for _ in 0..50 {
                    let a = random_tensor(&mut rng, DType::C64, &[3, 2, 3]);
                    let e = random_tensor(&mut rng, DType::C64, &[3, 3]);
                    let conj = Tensor::from_vec(
                        a.as_slice::<c64>()
                            .expect("c64")
                            .iter()
                            .map(|z| z.conj())
                            .collect::<Vec<_>>(),
                        &[3, 2, 3],
                    )
                    .expect("fits");
                    let want = reference_transfer(&e, &a, &conj);
                    let hs = [e, a, conj].map(|t| lane.upload(t).expect("upload"));
                    let out = lane
                        .run_program(&program, &[&hs[0], &hs[1], &hs[2]])
                        .expect("submitted");
                    let got = wait_ok(lane.download(&out[0]).expect("download"));
                    for (g, w) in got.as_slice::<c64>().expect("c64").iter().zip(&want) {
                        assert!((g - w).norm() <= 1e-12 * (1.0 + w.norm()), "{g} vs {w}");
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("thread");
    }
    Arc::try_unwrap(rt)
        .expect("last")
        .shutdown()
        .expect("shutdown");
}

/// `E'[c,d] = Σ_{a,s,b} conj[a,s,c] E[a,b] A[b,s,d]`, by loops.
fn reference_transfer(e: &Tensor, a: &Tensor, ac: &Tensor) -> Vec<c64> {
    let n = e.shape()[0];
    let (e, a, ac) = (
        e.as_slice::<c64>().expect("c64"),
        a.as_slice::<c64>().expect("c64"),
        ac.as_slice::<c64>().expect("c64"),
    );
    let mut out = vec![c64::new(0.0, 0.0); n * n];
    for c in 0..n {
        for d in 0..n {
            for x in 0..n {
                for s in 0..2 {
                    for b in 0..n {
                        out[c * n + d] +=
                            ac[(x * 2 + s) * n + c] * e[x * n + b] * a[(b * 2 + s) * n + d];
                    }
                }
            }
        }
    }
    out
}

#[test]
fn shutdown_now_while_programs_run_loses_nothing_and_hangs_nothing() {
    let rt = runtime();
    let lane = rt.lane(0).expect("lane");
    let program = Program::record(|p| -> Result<(), OpError> {
        let a = p.input(DType::F64, &[64, 64]);
        let mut x = a;
        for _ in 0..8 {
            x = p.matmul(&x, &a)?;
            x = p.scale(&x, 1.0 / 64.0)?;
        }
        Ok(p.output(x)?)
    })
    .expect("recorded");
    let a = lane.eye(DType::F64, 64, 64).expect("eye");
    let tickets: Vec<_> = (0..200)
        .map(|_| {
            let out = lane.run_program(&program, &[&a]).expect("submitted");
            lane.download(&out[0]).expect("download")
        })
        .collect();
    rt.shutdown_now().expect("shutdown");
    let (mut done, mut cancelled) = (0, 0);
    for t in tickets {
        match wait(t) {
            Ok(t) => {
                assert_eq!(t.shape(), &[64, 64]);
                done += 1;
            }
            Err(TicketError::Cancelled) => cancelled += 1,
            Err(TicketError::DependencyFailed(f)) if f.cause == FailureCause::Cancelled => {
                cancelled += 1
            }
            Err(e) => panic!("{e:?}"),
        }
    }
    assert_eq!(done + cancelled, 200);
}

#[test]
fn programs_of_integers_and_masks_run_op_by_op_and_check_divisors() {
    let rt = runtime();
    let lane = rt.lane(0).expect("lane");
    // A chain of elementwise integer steps (not fused: an integer kernel
    // checks its divisors), a comparison and a select on its mask.
    let program = Program::record(|p| -> Result<(), OpError> {
        let a = p.input(DType::I64, &[5]);
        let b = p.input(DType::I64, &[5]);
        let q = p.binary(BinaryOp::FloorDiv, &a, &b)?;
        let r = p.binary(BinaryOp::Rem, &q, &b)?;
        let s = p.add(&r, &a)?;
        let m = p.apply(TensorOp::Compare(weft::ops::CmpOp::Gt), &[&s, &b])?;
        let out = p.apply(TensorOp::Select, &[&m, &s, &b])?;
        Ok(p.output(out)?)
    })
    .expect("recorded")
    .labelled("integers");
    let av = [7i64, -7, 20, i64::MIN, 3];
    let bv = [2i64, 3, -6, -1, 5];
    let a = lane
        .upload(Tensor::from_vec(av.to_vec(), &[5]).unwrap())
        .unwrap();
    let b = lane
        .upload(Tensor::from_vec(bv.to_vec(), &[5]).unwrap())
        .unwrap();
    let got = lane.run_program(&program, &[&a, &b]).expect("submitted");
    let got = wait_ok(lane.download(&got[0]).expect("download"));
    // The plain loop, Python's signs.
    let want: Vec<i64> = av
        .iter()
        .zip(&bv)
        .map(|(&x, &y)| {
            let q = x.wrapping_div(y) - i64::from(x.wrapping_rem(y) != 0 && (x < 0) != (y < 0));
            let r = q.wrapping_rem(y);
            let r = if r != 0 && (r < 0) != (y < 0) {
                r + y
            } else {
                r
            };
            let s = r.wrapping_add(x);
            if s > y {
                s
            } else {
                y
            }
        })
        .collect();
    assert_eq!(got.as_slice::<i64>().unwrap(), &want[..]);
    // A zero divisor fails the step, not the actor.
    let zero = lane
        .upload(Tensor::from_vec(vec![1i64, 1, 0, 1, 1], &[5]).unwrap())
        .unwrap();
    let outs = lane.run_program(&program, &[&a, &zero]).expect("submitted");
    let err = wait(lane.download(&outs[0]).expect("download")).expect_err("fails");
    let TicketError::DependencyFailed(failure) = &err else {
        panic!("{err:?}");
    };
    assert!(
        failure
            .to_string()
            .contains("step 0 (floor_div): floor_div: integer division by zero (element [2]"),
        "{failure}"
    );
    rt.shutdown().expect("shutdown");
}
