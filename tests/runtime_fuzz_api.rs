//! A randomized fuzzer over the public API: seeded sequences of tensor ops
//! with random shapes (zero, huge and overflowing extents included),
//! dtypes, axes, einsum strings and operand counts; closures that panic,
//! fail, return values whose `Drop` panics or errors whose `Display`
//! panics; waits, polls, timeouts and drops of tickets; lanes opened and
//! dropped; transfers; and a shutdown at a random point. After every step:
//! no panic reached the caller, every waited ticket resolved within its
//! bound; every few steps, every actor still runs ops; at the end, the
//! witness tensors resident from the start are unchanged, no actor died,
//! and the thread count is back where it was.
//!
//! The default run (the test suite's) is 24 sequences of 80 steps;
//! `WEFT_FUZZ=<seconds>` runs new seeds for that long. A failure prints its
//! seed and the shortest failing prefix of its steps.

use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};
use weft::ops::CreateOps;
use weft::OpError;

use weft::ops::EinsumSpec;
use weft::{
    ops::{BinaryOp, CmpOp, Distribution, Linalg, ReduceOp, SliceAxis, TensorOp, UnaryOp},
    CpuEngine, DType, Lane, Op, Runtime, Scalar, Tensor, TensorHandle,
};
use weft_tests::{fuzz_seeds, quiet_panics, thread_count, BadDisplay, PanicOnDrop, Rng, LIMIT};

const MARKER: &str = weft_tests::INJECTED;

/// The vocabulary's arguments, drawn from the fuzzer's generator.
trait Draw {
    fn extent(&mut self) -> usize;
    fn shape(&mut self) -> Vec<usize>;
    fn axes(&mut self, rank: usize) -> Vec<usize>;
    fn dtype(&mut self) -> DType;
    fn float(&mut self) -> f64;
}

impl Draw for Rng {
    /// An extent: small mostly, sometimes zero, rarely huge.
    fn extent(&mut self) -> usize {
        match self.below(20) {
            0 => self.pick(&[1 << 62, 1 << 63, usize::MAX, 1 << 40]),
            1..=3 => 0,
            _ => self.pick(&[1, 2, 3, 4, 5]),
        }
    }

    fn shape(&mut self) -> Vec<usize> {
        (0..self.below(4)).map(|_| self.extent()).collect()
    }

    fn axes(&mut self, rank: usize) -> Vec<usize> {
        (0..self.below(rank + 2))
            .map(|_| self.below(rank + 2))
            .collect()
    }

    fn dtype(&mut self) -> DType {
        self.pick(&[DType::F32, DType::F64, DType::C32, DType::C64])
    }

    fn float(&mut self) -> f64 {
        match self.below(12) {
            0 => f64::NAN,
            1 => f64::INFINITY,
            2 => -1e308,
            _ => self.below(9) as f64 - 4.0,
        }
    }
}

/// A random op of the vocabulary, arguments anything.
fn random_op(rng: &mut Rng, rank: usize) -> TensorOp {
    match rng.below(24) {
        0 => TensorOp::Binary(rng.pick(&BinaryOp::ALL)),
        1 => TensorOp::Unary(rng.pick(&UnaryOp::ALL)),
        2 => TensorOp::Matmul,
        3 => TensorOp::Linalg(rng.pick(&Linalg::ALL)),
        4 => {
            let operands = match rng.below(10) {
                0 => 70,
                n => n % 4,
            };
            let labels = ['i', 'j', 'k', 'i'];
            let mut spec: Vec<String> = (0..operands)
                .map(|_| (0..rng.below(3)).map(|_| rng.pick(&labels)).collect())
                .collect();
            if spec.is_empty() {
                spec.push(String::new());
            }
            let mut text = spec.join(",");
            if rng.chance(50) {
                text += "->";
                text.extend((0..rng.below(3)).map(|_| rng.pick(&['i', 'j', 'k', '.'])));
            }
            match EinsumSpec::parse(&text) {
                Ok(spec) => TensorOp::Einsum(spec),
                Err(_) => TensorOp::Matmul,
            }
        }
        5 => TensorOp::Reduce {
            op: rng.pick(&ReduceOp::ALL),
            axes: rng.axes(rank),
            keep_dims: rng.chance(50),
        },
        6 => TensorOp::Reshape(rng.shape()),
        7 => TensorOp::Permute(rng.axes(rank)),
        8 => TensorOp::Full {
            dtype: rng.dtype(),
            shape: rng.shape(),
            value: Scalar::Real(rng.float()),
        },
        9 => TensorOp::Eye {
            dtype: rng.dtype(),
            rows: rng.extent(),
            cols: rng.extent(),
        },
        10 => TensorOp::Arange {
            dtype: rng.dtype(),
            start: rng.float(),
            step: rng.float(),
            len: rng.extent(),
        },
        11 => TensorOp::Compare(rng.pick(&CmpOp::ALL)),
        12 => TensorOp::Select,
        13 => TensorOp::Clamp {
            lo: rng.float(),
            hi: rng.float(),
        },
        14 => TensorOp::Cast(rng.dtype()),
        15 => TensorOp::Slice(
            (0..rng.below(rank + 2))
                .map(|_| SliceAxis {
                    start: rng.extent(),
                    stop: rng.extent(),
                    step: rng.extent(),
                })
                .collect(),
        ),
        16 => TensorOp::Reverse(rng.axes(rank)),
        17 => TensorOp::BroadcastTo(rng.shape()),
        18 => TensorOp::Concatenate {
            axis: rng.below(rank + 1),
            inputs: rng.below(4),
        },
        19 => TensorOp::Pad {
            widths: (0..rng.below(rank + 2))
                .map(|_| (rng.extent(), rng.extent()))
                .collect(),
            value: Scalar::Real(rng.float()),
        },
        20 => TensorOp::Diagonal {
            axes: [rng.below(3), rng.below(3)],
        },
        21 => TensorOp::Triangle {
            k: rng.below(5) as isize - 2,
            upper: rng.chance(50),
        },
        22 => TensorOp::Random {
            dtype: rng.dtype(),
            shape: rng.shape(),
            distribution: Distribution::Normal,
            seed: rng.bits(),
        },
        _ => TensorOp::Dot {
            conjugate: rng.chance(50),
        },
    }
}

/// One sequence's world.
struct World {
    rt: Runtime,
    lanes: Vec<Lane>,
    handles: Vec<TensorHandle>,
    witnesses: Vec<(TensorHandle, Tensor)>,
}

/// Why a sequence failed.
type Failure = String;

/// Waits for a ticket within the bound. Its outcome may be anything but a
/// panic the fuzzer did not inject: that is a panic inside weft (one the
/// actor survived, but a panic all the same).
fn resolves<T, E: fmt::Debug>(ticket: weft::Ticket<T, E>, what: &str) -> Result<(), Failure> {
    let injected = |m: &str| m.contains(MARKER);
    match ticket.wait_timeout(LIMIT) {
        Err(weft::error::WaitTimeoutError::Timeout(_)) => {
            Err(format!("{what}: no result in {LIMIT:?}"))
        }
        Err(weft::error::WaitTimeoutError::Failed(weft::TicketError::Panicked(m)))
            if !injected(&m) =>
        {
            Err(format!("{what}: panicked inside weft: {m}"))
        }
        Err(weft::error::WaitTimeoutError::Failed(weft::TicketError::DependencyFailed(first))) => {
            match &first.cause {
                weft::actor::FailureCause::Panicked(m) if !injected(m) => {
                    Err(format!("{what}: `{}` panicked inside weft: {m}", first.op))
                }
                _ => Ok(()),
            }
        }
        _ => Ok(()),
    }
}

impl World {
    fn new() -> World {
        let rt = weft_tests::unpinned_pair().build().expect("runtime");
        let lanes = vec![rt.lane(0).unwrap(), rt.lane(1).unwrap()];
        let witnesses = (0..3)
            .map(|i| {
                let t = Tensor::random(DType::F64, &[3, 2], Distribution::Normal, i).unwrap();
                (lanes[i as usize % 2].upload(t.clone()).unwrap(), t)
            })
            .collect::<Vec<_>>();
        let handles = witnesses.iter().map(|(h, _)| h.clone()).collect();
        World {
            rt,
            lanes,
            handles,
            witnesses,
        }
    }

    fn lane(&self, rng: &mut Rng) -> &Lane {
        &self.lanes[rng.below(self.lanes.len())]
    }

    fn handle(&self, rng: &mut Rng) -> Option<TensorHandle> {
        (!self.handles.is_empty()).then(|| self.handles[rng.below(self.handles.len())].clone())
    }

    /// One random step; its description, or why it failed.
    fn step(&mut self, rng: &mut Rng) -> Result<String, Failure> {
        let lane = self.lane(rng).clone();
        match rng.below(13) {
            0 => {
                let shape: Vec<usize> = (0..rng.below(3)).map(|_| rng.below(4)).collect();
                let n: usize = shape.iter().product();
                let t = Tensor::random(rng.dtype(), &shape, Distribution::Uniform, rng.bits())
                    .map_err(|e| format!("a small random tensor: {e}"))?;
                assert_eq!(t.len(), n);
                if let Ok(h) = lane.upload(t) {
                    self.handles.push(h);
                }
                Ok(format!("upload {shape:?}"))
            }
            1..=4 => {
                let rank = self.handle(rng).map_or(2, |h| h.shape().len());
                let op = random_op(rng, rank);
                let mut inputs: Vec<TensorHandle> = Vec::new();
                for _ in 0..op.arity().min(4) {
                    // Mostly of the lane's domain; sometimes a wrong one.
                    if let Some(h) = self.handle(rng) {
                        if h.domain() == lane.domain() || rng.chance(30) {
                            inputs.push(h);
                        }
                    }
                }
                let refs: Vec<&TensorHandle> = inputs.iter().collect();
                let what = format!(
                    "{op:?} on {:?}",
                    refs.iter().map(|h| h.shape()).collect::<Vec<_>>()
                );
                if let Ok(outs) = lane.apply_many(op, &refs) {
                    for h in outs {
                        if rng.chance(50) {
                            resolves(lane.download(&h).map_err(|e| e.to_string())?, &what)?;
                        }
                        self.handles.push(h);
                    }
                }
                Ok(what)
            }
            5 => {
                let kind = rng.below(5);
                let after: Vec<weft::Event> =
                    self.handle(rng).map(|h| h.ready()).into_iter().collect();
                let body = move |_: &mut CpuEngine| -> Result<u8, String> {
                    match kind {
                        0 => panic!("{MARKER} an op panics"),
                        1 => Err("an op fails".to_owned()),
                        _ => Ok(1),
                    }
                };
                let t = lane
                    .submit(Op::fallible(body).after(after))
                    .map_err(|e| e.to_string())?;
                self.settle(rng, t, "closure")?;
                if kind == 3 {
                    let t = lane
                        .submit(Op::new(|_: &mut CpuEngine| PanicOnDrop))
                        .map_err(|e| e.to_string())?;
                    // Dropped after the op finished, the ticket drops the
                    // value here, on this thread, as a `JoinHandle` would:
                    // that panic is this thread's own.
                    let _ = catch_unwind(AssertUnwindSafe(move || drop(t)));
                }
                if kind == 4 {
                    let t = lane
                        .submit(Op::fallible(|_: &mut CpuEngine| Err::<(), _>(BadDisplay)))
                        .map_err(|e| e.to_string())?;
                    let dependent = lane
                        .submit(Op::new(|_: &mut CpuEngine| ()).after([t.event()]))
                        .map_err(|e| e.to_string())?;
                    drop(t);
                    resolves(dependent, "after a bad Display")?;
                }
                Ok(format!("closure kind {kind}"))
            }
            6 => {
                if let Some(h) = self.handle(rng) {
                    let from = &self.lanes[h.domain() % self.lanes.len()];
                    if let Ok(moved) = from.transfer(&h, rng.below(3)) {
                        self.handles.push(moved);
                    }
                }
                Ok("transfer".into())
            }
            7 => {
                if let Some(h) = self.handle(rng) {
                    let from = &self.lanes[h.domain() % self.lanes.len()];
                    if let Ok(t) = from.download(&h) {
                        self.settle(rng, t, "download")?;
                    }
                }
                Ok("download".into())
            }
            8 => {
                if !self.handles.is_empty() {
                    let i = rng.below(self.handles.len());
                    self.handles.swap_remove(i);
                }
                Ok("drop a handle".into())
            }
            9 => {
                let d = rng.below(2);
                if rng.chance(50) && self.lanes.len() > 2 {
                    self.lanes.pop();
                } else {
                    self.lanes.push(self.rt.lane(d).map_err(|e| e.to_string())?);
                }
                Ok("open or drop a lane".into())
            }
            10 => {
                let d = rng.below(2);
                let shape = rng.shape();
                if let Ok(h) = self.lanes[d].zeros(rng.dtype(), &shape) {
                    self.handles.push(h);
                }
                Ok(format!("zeros {shape:?}"))
            }
            11 if rng.chance(25) => self.shut_down(rng),
            12 => self.program(rng, &lane),
            _ => {
                self.alive()?;
                Ok("probe the actors".into())
            }
        }
    }

    /// A program of random ops over placeholders of existing handles'
    /// types and shapes (steps that do not fit are refused at record time
    /// and left out), run on those handles (some of another domain);
    /// every output resolves.
    fn program(&mut self, rng: &mut Rng, lane: &Lane) -> Result<String, Failure> {
        let inputs: Vec<TensorHandle> = (0..1 + rng.below(3))
            .filter_map(|_| self.handle(rng))
            .collect();
        if inputs.is_empty() {
            return Ok("no program: no handle".into());
        }
        let rank = inputs[0].shape().len();
        let steps: Vec<(TensorOp, Vec<usize>)> = (0..1 + rng.below(5))
            .map(|_| {
                let op = random_op(rng, rank);
                let picks = (0..op.arity().min(4)).map(|_| rng.below(64)).collect();
                (op, picks)
            })
            .collect();
        let recorded = weft::Program::record(|p| -> Result<(), OpError> {
            let mut values: Vec<weft::program::Value> = inputs
                .iter()
                .map(|h| p.input(h.dtype(), h.shape()))
                .collect();
            for (op, picks) in &steps {
                let args: Vec<weft::program::Value> =
                    picks.iter().map(|&k| values[k % values.len()]).collect();
                if let Ok(out) = p.record_many(op.clone(), &args) {
                    values.extend(out);
                }
            }
            Ok(p.output(*values.last().expect("an input at least"))?)
        });
        let what = format!("a program of {} ops", steps.len());
        let Ok(program) = recorded else {
            return Ok(what);
        };
        let refs: Vec<&TensorHandle> = inputs.iter().collect();
        if let Ok(outs) = lane.run_program(&program, &refs) {
            for h in outs {
                resolves(lane.download(&h).map_err(|e| e.to_string())?, &what)?;
                self.handles.push(h);
            }
        }
        Ok(what)
    }

    /// Shuts the runtime down from another thread (drain, now, or with a
    /// short deadline) while this one goes on submitting; every op
    /// submitted meanwhile is refused as closed or resolves, the shutdown
    /// returns, no actor died, and every later op is refused as closed.
    /// The sequence then goes on in a new world.
    fn shut_down(&mut self, rng: &mut Rng) -> Result<String, Failure> {
        let rt = self.rt.clone();
        let how = rng.below(3);
        let timeout = Duration::from_micros(rng.below(2_000) as u64);
        let (done, stopped) = crossbeam_channel::bounded(1);
        std::thread::spawn(move || {
            let report = match how {
                0 => rt.shutdown(),
                1 => rt.shutdown_now(),
                _ => match rt.shutdown_timeout(timeout) {
                    // Work was still running: a plain shutdown joins it.
                    Err(weft::error::ShutdownError::TimedOut { .. }) => rt.shutdown(),
                    other => other,
                },
            };
            let _ = done.send(report);
        });
        let mut racing = Vec::new();
        for _ in 0..rng.below(8) {
            let lane = self.lane(rng).clone();
            match lane.run(|_: &mut CpuEngine| 1u8) {
                Ok(t) => racing.push(t),
                Err(e) if e.is_closed() => {}
                Err(e) => return Err(format!("a submit during a shutdown: {e}")),
            }
        }
        for t in racing {
            resolves(t, "an op submitted during a shutdown")?;
        }
        let report = stopped
            .recv_timeout(LIMIT)
            .map_err(|_| format!("shutdown kind {how} did not return in {LIMIT:?}"))?
            .map_err(|e| format!("shutdown kind {how}: {e}"))?;
        if let Some(dead) = report.actors.iter().find(|a| a.died.is_some()) {
            return Err(format!("actor {} died: {:?}", dead.actor, dead.died));
        }
        for lane in &self.lanes {
            match lane.run(|_: &mut CpuEngine| ()) {
                Err(e) if e.is_closed() => {}
                other => return Err(format!("an op after shutdown: {:?}", other.map(drop))),
            }
            match lane.zeros(DType::F64, &[2]) {
                Err(weft::OpError::Closed(_)) => {}
                other => return Err(format!("a tensor op after shutdown: {other:?}")),
            }
        }
        *self = World::new();
        Ok(format!("shutdown kind {how} mid-sequence"))
    }

    /// Waits for, polls, times out on or drops a ticket, at random.
    fn settle<T, E: fmt::Debug>(
        &self,
        rng: &mut Rng,
        ticket: weft::Ticket<T, E>,
        what: &str,
    ) -> Result<(), Failure> {
        match rng.below(4) {
            0 => drop(ticket),
            1 => {
                if let Err(weft::error::TryWaitError::Pending(t)) = ticket.try_wait() {
                    resolves(t, what)?;
                }
            }
            2 => {
                let short = Duration::from_micros(rng.below(200) as u64);
                if let Err(weft::error::WaitTimeoutError::Timeout(t)) = ticket.wait_timeout(short) {
                    resolves(t, what)?;
                }
            }
            _ => resolves(ticket, what)?,
        }
        Ok(())
    }

    /// Every domain still runs ops.
    fn alive(&self) -> Result<(), Failure> {
        for d in 0..2 {
            let t = self
                .rt
                .lane(d)
                .map_err(|e| format!("domain {d}: {e}"))?
                .run(|_: &mut CpuEngine| 7u8)
                .map_err(|e| format!("domain {d}: {e}"))?;
            match t.wait_timeout(LIMIT) {
                Ok(7) => {}
                Ok(_) => unreachable!(),
                Err(e) => return Err(format!("domain {d} no longer runs ops: {e}")),
            }
        }
        Ok(())
    }

    /// The end of a sequence: witnesses intact, a shutdown, nothing died.
    fn finish(self, rng: &mut Rng) -> Result<(), Failure> {
        self.alive()?;
        for (h, want) in &self.witnesses {
            let got = self.lanes[h.domain()]
                .download(h)
                .map_err(|e| e.to_string())?
                .wait_timeout(LIMIT)
                .map_err(|e| format!("a witness: {e}"))?;
            if &got != want {
                return Err(format!("witness on domain {} changed", h.domain()));
            }
        }
        let rt = self.rt.clone();
        let now = rng.chance(50);
        drop(self);
        let report = std::thread::spawn(move || {
            if now {
                rt.shutdown_now()
            } else {
                rt.shutdown()
            }
        })
        .join()
        .map_err(|_| "shutdown panicked".to_owned())?
        .map_err(|e| e.to_string())?;
        if let Some(dead) = report.actors.iter().find(|a| a.died.is_some()) {
            return Err(format!("actor {} died: {:?}", dead.actor, dead.died));
        }
        Ok(())
    }
}

/// Runs seed `seed` for `steps` steps; the steps it took and, if it failed,
/// why.
fn run(seed: u64, steps: usize) -> (Vec<String>, Option<Failure>) {
    let mut rng = Rng(seed);
    let mut log = Vec::new();
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let mut world = World::new();
        for _ in 0..steps {
            match world.step(&mut rng) {
                Ok(what) => log.push(what),
                Err(failure) => return Some(failure),
            }
        }
        world.finish(&mut rng).err()
    }));
    let failure = match outcome {
        Ok(failure) => failure,
        Err(payload) => Some(format!(
            "a panic reached the caller: {}",
            payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_default()
        )),
    };
    (log, failure)
}

/// The shortest prefix of `seed`'s steps that still fails.
fn shrink(seed: u64, steps: usize) -> (usize, Vec<String>, Failure) {
    let (mut lo, mut hi) = (0, steps);
    let (mut log, mut failure) = match run(seed, steps) {
        (log, Some(f)) => (log, f),
        (log, None) => return (steps, log, "(did not fail again)".into()),
    };
    while lo < hi {
        let mid = (lo + hi) / 2;
        match run(seed, mid) {
            (l, Some(f)) => {
                (hi, log, failure) = (mid, l, f);
            }
            (_, None) => lo = mid + 1,
        }
    }
    (hi, log, failure)
}

#[test]
fn fuzz_the_public_api() {
    quiet_panics(MARKER);
    let threads = thread_count();
    let start = Instant::now();
    let (mut sequences, mut steps, mut shutdowns) = (0u64, 0usize, 0usize);
    for seed in fuzz_seeds(0xF0F0, 24) {
        let length = 80;
        let (log, failure) = run(seed, length);
        steps += log.len();
        shutdowns += log
            .iter()
            .filter(|s| s.starts_with("shutdown kind"))
            .count();
        sequences += 1;
        if let Some(first) = failure {
            eprintln!(
                "fuzz: seed {seed:#x} failed: {first}\n  {}",
                log.join("\n  ")
            );
            let (n, log, failure) = shrink(seed, length);
            panic!(
                "seed {seed:#x}: {first}; its shortest failing prefix, {n} steps: {failure}\nsteps:\n  {}",
                log.join("\n  ")
            );
        }
    }
    println!(
        "fuzz: {sequences} sequences, {steps} steps ({shutdowns} shutdowns mid-sequence) in {:.1?}",
        start.elapsed()
    );
    weft_tests::eventually("the thread count returns", || thread_count() <= threads);
}
