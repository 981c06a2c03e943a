//! Functions written once: the same generic code run eagerly on a lane,
//! recorded into a program, and traced by `Lane::call` gives the same
//! bits; `call` traces again for new shapes and static arguments and never
//! for new values; its cache holds its bound; a called function has a
//! gradient; a function that does not trace loses nothing.

use weft::ops::{Function, Ops};
use weft::prelude::*;
use weft::program::{eagerly, Tape};
use weft::{error::RecordError, OpError};
use weft_tests::wait_ok;

/// One Lanczos-style step: `w = H v − α v − β u`, then `‖w‖` and `w/‖w‖`,
/// `H` applied as a one-site environment contraction `L W R`. `α`, `β` are host
/// scalars; `scaled` is a static argument (it changes the program).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Step {
    scaled: bool,
}

impl Function for Step {
    fn call<O: Ops>(&self, o: &O, inputs: &[O::Tensor]) -> Result<Vec<O::Tensor>, OpError> {
        let [l, h, r, v, u, alpha, beta] = inputs else {
            panic!("seven inputs, given {}", inputs.len())
        };
        let x = o.einsum("amx,xtz->amtz", &[l, v])?;
        let x = o.einsum("amtz,mnst->asnz", &[&x, h])?;
        let hv = o.einsum("asnz,cnz->asc", &[&x, r])?;
        let hv = if self.scaled { o.scale(&hv, 0.5)? } else { hv };
        let w = o.sub(&hv, &o.mul(alpha, v)?)?;
        let w = o.sub(&w, &o.mul(beta, u)?)?;
        let norm = o.norm(&w)?;
        let next = o.div(&w, &norm)?;
        Ok(vec![next, norm])
    }
}

/// Ops submitted on every lane of the runtime so far.
fn submitted(rt: &Runtime) -> u64 {
    (rt.stats().actors.iter())
        .flat_map(|a| &a.lanes)
        .map(|l| l.ops.submitted)
        .sum()
}

fn runtime(functions: usize) -> Runtime {
    Runtime::builder()
        .split(1)
        .function_cache(functions)
        .build()
        .expect("runtime")
}

/// Seeded inputs of `Step` at bond `chi`: `[l, h, r, v, u]`.
fn inputs(lane: &Lane, chi: usize, seed: u64) -> Vec<TensorHandle> {
    let normal = weft::ops::Distribution::Normal;
    let shapes: [&[usize]; 5] = [
        &[chi, 3, chi],
        &[3, 3, 2, 2],
        &[chi, 3, chi],
        &[chi, 2, chi],
        &[chi, 2, chi],
    ];
    (shapes.iter().enumerate())
        .map(|(k, s)| lane.random(DType::F64, s, normal, seed + k as u64).unwrap())
        .collect()
}

fn values(lane: &Lane, handles: &[TensorHandle]) -> Vec<Vec<f64>> {
    (handles.iter())
        .map(|h| {
            let t = wait_ok(lane.download(h).unwrap());
            t.as_slice::<f64>().unwrap().to_vec()
        })
        .collect()
}

#[test]
fn eager_recorded_and_traced_runs_give_the_same_bits() {
    let rt = runtime(16);
    let lane = rt.lane(0).unwrap();
    let ins = inputs(&lane, 6, 1);
    let refs: Vec<&TensorHandle> = ins.iter().collect();
    let scalars = [Scalar::Real(0.75), Scalar::Real(-0.25)];
    let f = Step { scaled: false };

    let before = submitted(&rt);
    let traced = lane.call(&f, &refs, &scalars).unwrap();
    assert_eq!(submitted(&rt) - before, 1, "a traced call is one op");
    let before = submitted(&rt);
    let eager = eagerly(|| lane.call(&f, &refs, &scalars)).unwrap();
    // Two scalars made, three einsums, two products, two differences, a
    // norm and a quotient: an op each.
    assert_eq!(submitted(&rt) - before, 11, "an eager call is its ops");
    let program = Program::record(|p| -> Result<(), OpError> {
        let mut vs: Vec<_> = ins.iter().map(|h| p.input(h.dtype(), h.shape())).collect();
        vs.extend([p.input(DType::F64, &[]), p.input(DType::F64, &[])]);
        for out in f.call(p, &vs)? {
            p.output(out)?;
        }
        Ok(())
    })
    .unwrap();
    let recorded = lane.run_program_with(&program, &refs, &scalars).unwrap();

    let (t, e, r) = (
        values(&lane, &traced),
        values(&lane, &eager),
        values(&lane, &recorded),
    );
    let bits = |v: &[Vec<f64>]| -> Vec<Vec<u64>> {
        v.iter()
            .map(|x| x.iter().map(|f| f.to_bits()).collect())
            .collect()
    };
    assert_eq!(bits(&t), bits(&r), "traced and recorded");
    assert_eq!(bits(&t), bits(&e), "traced and eager");
    let norm = t[1][0];
    assert!(norm.is_finite() && norm > 0.0, "{norm}");
    let unit: f64 = t[0].iter().map(|x| x * x).sum();
    assert!((unit - 1.0).abs() < 1e-12, "{unit}");
    // The eager run traced nothing.
    assert_eq!(wait_ok(lane.memory().unwrap()).functions.misses, 1);
}

#[test]
fn a_call_traces_again_for_new_shapes_and_statics_never_for_new_values() {
    let rt = runtime(16);
    let lane = rt.lane(0).unwrap();
    let f = Step { scaled: false };
    let run = |f: &Step, ins: &[TensorHandle], a: f64, b: f64| {
        let refs: Vec<&TensorHandle> = ins.iter().collect();
        let out = lane
            .call(f, &refs, &[Scalar::Real(a), Scalar::Real(b)])
            .unwrap();
        wait_ok(lane.sync(&out[0]).unwrap());
    };
    let small = inputs(&lane, 4, 1);
    run(&f, &small, 0.5, 0.25);
    run(&f, &inputs(&lane, 4, 7), -1.0, 2.0); // new values, same shapes
    for k in 0..5 {
        run(&f, &small, k as f64, 1.0 / (k + 1) as f64); // new scalars
    }
    let memory = wait_ok(lane.memory().unwrap());
    assert_eq!((memory.functions.misses, memory.functions.hits), (1, 6));
    assert_eq!(memory.functions.entries, 1);
    assert_eq!(
        memory.programs.entries, 1,
        "scalar values are inputs of a run, not of its plan"
    );
    run(&f, &inputs(&lane, 5, 1), 0.5, 0.25); // new shapes
    run(&Step { scaled: true }, &small, 0.5, 0.25); // a new static argument
    run(&Step { scaled: true }, &small, 1.5, 0.5);
    let memory = wait_ok(lane.memory().unwrap());
    assert_eq!((memory.functions.misses, memory.functions.hits), (3, 7));
    assert_eq!(memory.functions.entries, 3);
    assert_eq!(memory.programs.entries, 3);
    // An integer scalar is an input of another type: traced again.
    let refs: Vec<&TensorHandle> = small.iter().collect();
    let err = lane
        .call(&f, &refs, &[Scalar::Int(1), Scalar::Real(0.0)])
        .unwrap_err();
    assert!(err.to_string().contains("i64"), "{err}");
    let memory = wait_ok(lane.memory().unwrap());
    assert_eq!(memory.functions.misses, 4);
    assert_eq!(memory.functions.entries, 3, "a failed trace is not kept");
}

#[test]
fn the_function_cache_holds_its_bound_and_none_still_runs() {
    let rt = runtime(2);
    let lane = rt.lane(0).unwrap();
    let f = Step { scaled: false };
    let mut last = Vec::new();
    for chi in [2, 3, 4, 2] {
        let ins = inputs(&lane, chi, 3);
        let refs: Vec<&TensorHandle> = ins.iter().collect();
        let out = lane
            .call(&f, &refs, &[Scalar::Real(0.1), Scalar::Real(0.2)])
            .unwrap();
        last = values(&lane, &out);
    }
    let memory = wait_ok(lane.memory().unwrap()).functions;
    assert_eq!((memory.entries, memory.capacity), (2, 2));
    assert_eq!((memory.misses, memory.hits, memory.evictions), (4, 0, 2));

    let none = runtime(0);
    let lane0 = none.lane(0).unwrap();
    let ins = inputs(&lane0, 2, 3);
    let refs: Vec<&TensorHandle> = ins.iter().collect();
    let scalars = [Scalar::Real(0.1), Scalar::Real(0.2)];
    for _ in 0..3 {
        let out = lane0.call(&f, &refs, &scalars).unwrap();
        assert_eq!(values(&lane0, &out), last, "chi 2, as in the bounded cache");
    }
    let memory = wait_ok(lane0.memory().unwrap()).functions;
    assert_eq!((memory.entries, memory.capacity, memory.misses), (0, 0, 3));
}

/// `Σ tanh(A x)²` with a host weight `c`: `[c · Σ tanh(A x)²]`.
#[derive(Clone, PartialEq, Eq, Hash)]
struct Loss;

impl Function for Loss {
    fn call<O: Ops>(&self, o: &O, inputs: &[O::Tensor]) -> Result<Vec<O::Tensor>, OpError> {
        let [a, x, c] = inputs else {
            unreachable!("three inputs")
        };
        let y = o.unary(weft::ops::UnaryOp::Tanh, &o.einsum("ij,j->i", &[a, x])?)?;
        let l = o.sum_all(&o.mul(&y, &y)?)?;
        Ok(vec![o.mul(c, &l)?])
    }
}

#[test]
fn a_called_function_has_a_gradient_as_central_differences_say() {
    let rt = runtime(8);
    let lane = rt.lane(0).unwrap();
    let a0 = vec![0.5f64, -1.0, 2.0, 0.25, 0.75, -0.5];
    let x0 = vec![1.0f64, -2.0];
    let c = Scalar::Real(1.5);
    let loss = |a: &[f64], x: &[f64]| -> f64 {
        let a = lane
            .upload(Tensor::from_vec(a.to_vec(), &[3, 2]).unwrap())
            .unwrap();
        let x = lane
            .upload(Tensor::from_vec(x.to_vec(), &[2]).unwrap())
            .unwrap();
        let out = lane.call(&Loss, &[&a, &x], &[c]).unwrap();
        wait_ok(lane.item::<f64>(&out[0]).unwrap())
    };
    let a = lane
        .upload(Tensor::from_vec(a0.clone(), &[3, 2]).unwrap())
        .unwrap();
    let x = lane
        .upload(Tensor::from_vec(x0.clone(), &[2]).unwrap())
        .unwrap();
    for eager in [false, true] {
        let (out, tape) = Tape::record(|| {
            let call = || lane.call(&Loss, &[&a, &x], &[c]);
            if eager {
                eagerly(call)
            } else {
                call()
            }
        });
        let out = out.unwrap();
        let grads = tape.gradient(&lane, &out[0], &[&a, &x]).unwrap();
        let g = values(&lane, &grads);
        let h = 1e-6;
        for (k, &analytic) in g[0].iter().enumerate() {
            let (mut up, mut down) = (a0.clone(), a0.clone());
            up[k] += h;
            down[k] -= h;
            let numeric = (loss(&up, &x0) - loss(&down, &x0)) / (2.0 * h);
            assert!(
                (numeric - analytic).abs() < 1e-7,
                "eager {eager}: dL/dA[{k}] {analytic} vs {numeric}"
            );
        }
        for (k, &analytic) in g[1].iter().enumerate() {
            let (mut up, mut down) = (x0.clone(), x0.clone());
            up[k] += h;
            down[k] -= h;
            let numeric = (loss(&a0, &up) - loss(&a0, &down)) / (2.0 * h);
            assert!(
                (numeric - analytic).abs() < 1e-7,
                "eager {eager}: dL/dx[{k}] {analytic} vs {numeric}"
            );
        }
    }
}

/// A function whose second step does not fit, and one with no output.
#[derive(Clone, PartialEq, Eq, Hash)]
enum Broken {
    BadStep,
    NoOutput,
}

impl Function for Broken {
    fn call<O: Ops>(&self, o: &O, inputs: &[O::Tensor]) -> Result<Vec<O::Tensor>, OpError> {
        match self {
            Broken::BadStep => {
                let t = o.transpose(&inputs[0])?;
                Ok(vec![o.matmul(&t, &t)?])
            }
            Broken::NoOutput => Ok(Vec::new()),
        }
    }
}

#[test]
fn a_function_that_does_not_trace_is_named_and_loses_nothing() {
    let rt = runtime(8);
    let lane = rt.lane(0).unwrap();
    let a = lane.eye(DType::F64, 2, 3).unwrap();
    let err = lane.call(&Broken::BadStep, &[&a], &[]).unwrap_err();
    match &err {
        OpError::Record(record) => assert!(
            matches!(
                **record,
                RecordError::Op {
                    step: 1,
                    op: "matmul",
                    ..
                }
            ),
            "{record:?}"
        ),
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains("[3, 2] and [3, 2]"), "{err}");
    let err = lane.call(&Broken::NoOutput, &[&a], &[]).unwrap_err();
    assert!(err.to_string().contains("no output"), "{err}");
    // Nothing kept, nothing lost: the inputs are as they were, and eager
    // runs fail the same step at the call site.
    let memory = wait_ok(lane.memory().unwrap()).functions;
    assert_eq!((memory.entries, memory.misses), (0, 2));
    let err = eagerly(|| lane.call(&Broken::BadStep, &[&a], &[])).unwrap_err();
    assert!(matches!(err, OpError::Tensor(_)), "{err:?}");
    let back = values(&lane, &[a]);
    assert_eq!(back[0], [1.0, 0.0, 0.0, 0.0, 1.0, 0.0]);
    // Eager scopes nest and end even when their closure unwinds.
    let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        eagerly(|| eagerly(|| panic!("inside")))
    }));
    assert!(unwound.is_err());
    let ins = inputs(&lane, 2, 5);
    let refs: Vec<&TensorHandle> = ins.iter().collect();
    let scalars = [Scalar::Real(0.0), Scalar::Real(0.0)];
    lane.call(&Step { scaled: false }, &refs, &scalars).unwrap();
    let memory = wait_ok(lane.memory().unwrap()).functions;
    assert_eq!(memory.entries, 1, "traced again after the scope unwound");
}

/// `⟨a|M|b⟩` with the bra read conjugated by the spec's mark.
#[derive(Clone, PartialEq, Eq, Hash)]
struct Sandwich {
    marked: bool,
}

impl Function for Sandwich {
    fn call<O: Ops>(&self, o: &O, inputs: &[O::Tensor]) -> Result<Vec<O::Tensor>, OpError> {
        let [a, m, b] = inputs else {
            unreachable!("three inputs")
        };
        let out = if self.marked {
            o.einsum("i*,ij,j->", &[a, m, b])?
        } else {
            let bra = o.unary(weft::ops::UnaryOp::Conj, a)?;
            o.einsum("i,ij,j->", &[&bra, m, b])?
        };
        // A real loss of it, for gradients.
        Ok(vec![o.unary(weft::ops::UnaryOp::Abs, &out)?, out])
    }
}

#[test]
fn a_marked_operand_is_read_conjugated_in_either_mode() {
    let rt = runtime(8);
    let lane = rt.lane(0).unwrap();
    let normal = weft::ops::Distribution::Normal;
    let a = lane.random(DType::C64, &[3], normal, 1).unwrap();
    let m = lane.random(DType::C64, &[3, 3], normal, 2).unwrap();
    let b = lane.random(DType::C64, &[3], normal, 3).unwrap();
    let item = |h: &TensorHandle| wait_ok(lane.item::<c64>(h).unwrap());
    let mut seen = Vec::new();
    for marked in [true, false] {
        let f = Sandwich { marked };
        let traced = lane.call(&f, &[&a, &m, &b], &[]).unwrap();
        let eager = eagerly(|| lane.call(&f, &[&a, &m, &b], &[])).unwrap();
        assert_eq!(item(&traced[1]), item(&eager[1]), "marked {marked}");
        let (out, tape) = Tape::record(|| lane.call(&f, &[&a, &m, &b], &[]));
        let grads = tape.gradient(&lane, &out.unwrap()[0], &[&a, &b]).unwrap();
        let grads: Vec<Vec<c64>> = (grads.iter())
            .map(|g| {
                wait_ok(lane.download(g).unwrap())
                    .into_vec::<c64>()
                    .unwrap()
            })
            .collect();
        seen.push((item(&traced[1]), grads));
    }
    assert_eq!(seen[0], seen[1], "the mark is the explicit conjugate");
    // Against the definition: Σ conj(aᵢ) Mᵢⱼ bⱼ.
    let get = |h: &TensorHandle| {
        wait_ok(lane.download(h).unwrap())
            .into_vec::<c64>()
            .unwrap()
    };
    let (av, mv, bv) = (get(&a), get(&m), get(&b));
    let mut want = c64::new(0.0, 0.0);
    for i in 0..3 {
        for j in 0..3 {
            want += av[i].conj() * mv[i * 3 + j] * bv[j];
        }
    }
    assert!((seen[0].0 - want).norm() < 1e-12, "{} vs {want}", seen[0].0);
    // A real operand is its own conjugate: no op for the mark.
    let x = lane.random(DType::F64, &[2, 2], normal, 4).unwrap();
    let before = submitted(&rt);
    let marked = lane.einsum("ij*,jk->ik", &[&x, &x]).unwrap();
    assert_eq!(submitted(&rt) - before, 1);
    let plain = lane.einsum("ij,jk->ik", &[&x, &x]).unwrap();
    assert_eq!(values(&lane, &[marked]), values(&lane, &[plain]));
    // A mark anywhere but after an operand's labels is the parser's error.
    let err = lane.einsum("ij,jk->ik*", &[&x, &x]).unwrap_err();
    assert!(err.to_string().contains('*'), "{err}");
}
