//! Programs on the CPU: each compiled once per structure into a plan that
//! the engine keeps in a bounded cache, and run in one call with no store
//! entry, id or handle for an intermediate.
//!
//! The plan is a list of runs: an einsum lowered for its shapes (replayed
//! without parsing or ordering), a fused elementwise chain (one pass over
//! memory for a run of elementwise steps over one shape, see `fused`), or
//! any other op through the engine's dispatch. Intermediates live in the
//! run's own slots, and each one's buffer goes back to the engine's pool
//! right after its last reader, for the next intermediate of its size; a
//! fused chain whose start dies in it runs in the start's buffer, in place
//! (8 MiB chains after a broadcast ran 10–15 % faster so, and one buffer
//! fewer is in flight).

use super::einsum::EinsumPlan;
use super::fused::{Chain, Link};
use super::gemm::Compute;
use super::pool::Workers;
use super::{buffer, exec, Store};
use weft_core::ops::{Meta, TensorOp};
use weft_core::Program;
use weft_core::{DType, Tensor};
use weft_core::{ExecError, TensorId};

/// A program compiled for the CPU.
#[derive(Debug)]
pub(super) struct ProgramPlan {
    /// The program it was compiled from (to tell it from a hash collision).
    program: Program,
    /// What runs, in order.
    runs: Vec<Run>,
    /// Per value, the input it is (by position), if it is one.
    input_of: Vec<Option<usize>>,
}

/// One call of a plan.
#[derive(Debug)]
struct Run {
    /// The program step it is (a chain's last), for errors.
    step: usize,
    kernel: Kernel,
    /// The values it reads.
    args: smallvec::SmallVec<[usize; 4]>,
    /// The values it makes: `first..first + count`.
    first: usize,
    count: usize,
    /// The values no later run reads and no output is: their buffers go
    /// back to the pool once this run is done.
    dead_after: smallvec::SmallVec<[usize; 2]>,
    /// A fused chain that runs in its start's buffer: the start is an
    /// intermediate that dies in this run and no link reads it again.
    in_place: bool,
}

#[derive(Debug)]
enum Kernel {
    /// The step's op, through the engine's dispatch.
    Op,
    /// The step's einsum, lowered.
    Einsum(EinsumPlan),
    /// Steps fused into one pass.
    Fused(Chain),
}

impl ProgramPlan {
    /// Compiles `program`.
    ///
    /// # Errors
    ///
    /// [`ExecError::InProgram`] for an einsum that cannot be lowered (not
    /// expected: every step was checked when it was recorded).
    pub(super) fn compile(program: &Program) -> Result<ProgramPlan, ExecError> {
        let metas = program.metas();
        let steps = program.steps();
        let mut readers = vec![0usize; metas.len()];
        for step in steps {
            for &v in &step.args {
                readers[v] += 1;
            }
        }
        for &v in program.outputs() {
            readers[v] += 1;
        }
        let mut runs = Vec::with_capacity(steps.len());
        let mut i = 0;
        while i < steps.len() {
            if let Some((last, chain, args)) = chain_from(program, &readers, i) {
                let step = &steps[last];
                runs.push(Run {
                    step: last,
                    kernel: Kernel::Fused(chain),
                    args,
                    first: step.first_result,
                    count: 1,
                    dead_after: smallvec::SmallVec::new(),
                    in_place: false,
                });
                i = last + 1;
                continue;
            }
            let step = &steps[i];
            let outputs = &metas[step.first_result..step.first_result + step.results];
            let kernel = match &step.op {
                // Replayed directly, but for outputs with no element or
                // too large to be sure of (those go the generic way, which
                // handles both).
                TensorOp::Einsum(spec) if outputs.iter().all(replayable) => {
                    let shapes: Vec<&[usize]> =
                        step.args.iter().map(|&v| &metas[v].shape[..]).collect();
                    let dtype = step.args.first().map_or(DType::F64, |&v| metas[v].dtype);
                    Kernel::Einsum(
                        EinsumPlan::compile(spec, &shapes, dtype)
                            .map_err(|e| failed(program, i, e.into()))?,
                    )
                }
                _ => Kernel::Op,
            };
            runs.push(Run {
                step: i,
                kernel,
                args: step.args.iter().copied().collect(),
                first: step.first_result,
                count: step.results,
                dead_after: smallvec::SmallVec::new(),
                in_place: false,
            });
            i += 1;
        }
        // Liveness over the runs: a value dies after the last run that
        // reads it (or the run that makes it, if none does).
        let keep = |v: usize| program.inputs().contains(&v) || program.outputs().contains(&v);
        let mut last: Vec<Option<usize>> = vec![None; metas.len()];
        for (r, run) in runs.iter().enumerate() {
            for slot in &mut last[run.first..run.first + run.count] {
                *slot = Some(r);
            }
            for &v in &run.args {
                last[v] = Some(r);
            }
        }
        for (v, at) in last.into_iter().enumerate() {
            if let Some(r) = at.filter(|_| !keep(v)) {
                runs[r].dead_after.push(v);
            }
        }
        // A chain whose start dies in it writes over the start (every
        // value of a chain has the chain's type and shape).
        for run in &mut runs {
            if let (Kernel::Fused(_), [start, others @ ..]) = (&run.kernel, &run.args[..]) {
                run.in_place = run.dead_after.contains(start) && !others.contains(start);
            }
        }
        let mut input_of = vec![None; metas.len()];
        for (k, &v) in program.inputs().iter().enumerate() {
            input_of[v] = Some(k);
        }
        Ok(ProgramPlan {
            program: program.clone(),
            runs,
            input_of,
        })
    }

    /// Whether this is the plan of `program`.
    pub(super) fn is_for(&self, program: &Program) -> bool {
        self.program.same_as(program)
    }

    /// Fused chains in the plan, and the steps they cover.
    #[cfg(test)]
    fn fused(&self) -> Vec<usize> {
        self.runs
            .iter()
            .filter_map(|r| match &r.kernel {
                Kernel::Fused(chain) => Some(chain.links.len()),
                _ => None,
            })
            .collect()
    }

    /// Runs the plan on the resident `inputs`, returning the outputs in
    /// order (the caller stores them). Runs on the actor inside the
    /// domain's pool, with the engine's buffer pool lent to this thread.
    ///
    /// # Errors
    ///
    /// [`ExecError::InProgram`] naming the step that failed.
    pub(super) fn execute(
        &self,
        program: &Program,
        store: &Store,
        inputs: &[TensorId],
        pool: &Workers,
        compute: Compute,
    ) -> Result<Vec<Tensor>, ExecError> {
        let metas = program.metas();
        let given = inputs
            .iter()
            .map(|&id| store.get(id))
            .collect::<Result<Vec<&Tensor>, _>>()
            .map_err(|e| failed(program, 0, e.into()))?;
        let mut slots: Vec<Option<Tensor>> = Vec::with_capacity(metas.len());
        slots.resize_with(metas.len(), || None);
        for run in &self.runs {
            // The start of an in-place chain leaves its slot for the run.
            let start = run
                .in_place
                .then(|| slots[run.args[0]].take().expect("made by an earlier run"));
            let made = {
                let args: smallvec::SmallVec<[&Tensor; 4]> = run.args
                    [usize::from(start.is_some())..]
                    .iter()
                    .map(|&v| match self.input_of[v] {
                        Some(k) => given[k],
                        None => slots[v].as_ref().expect("made by an earlier run"),
                    })
                    .collect();
                let made: Result<smallvec::SmallVec<[Tensor; 1]>, _> = match &run.kernel {
                    // Checked when recorded, lowered when compiled: replay it.
                    Kernel::Einsum(plan) => {
                        plan.run(&args, compute).map(|t| smallvec::smallvec![t])
                    }
                    Kernel::Fused(chain) => match start {
                        Some(start) => chain.run_in_place(start, &args, compute.parallel()),
                        None => chain.run(&args, compute.parallel()),
                    }
                    .map(|t| smallvec::smallvec![t]),
                    Kernel::Op => {
                        let outs: smallvec::SmallVec<[(DType, &[usize]); 2]> = metas
                            [run.first..run.first + run.count]
                            .iter()
                            .map(|m: &Meta| (m.dtype, &m.shape[..]))
                            .collect();
                        let op = &program.steps()[run.step].op;
                        exec::run(pool, compute, op, &args, &outs, None)
                            .map(smallvec::SmallVec::from_vec)
                    }
                };
                made.map_err(|e| failed(program, run.step, e.into()))?
            };
            for (v, t) in (run.first..).zip(made) {
                slots[v] = Some(t);
            }
            for &v in &run.dead_after {
                if let Some(t) = slots[v].take() {
                    buffer::recycle(t);
                }
            }
        }
        Ok(program
            .outputs()
            .iter()
            .map(|&v| slots[v].take().expect("an output is made"))
            .collect())
    }
}

/// The fused chain that starts at step `start`, if there is one of two
/// steps or more: each step an elementwise link over one type and shape
/// (every tensor it reads of that type and shape, so nothing broadcasts),
/// each result but the last read only by the next step and not an output.
/// Returns the chain's last step, the chain, and the values it reads (its
/// start, then each binary link's other operand).
fn chain_from(
    program: &Program,
    readers: &[usize],
    start: usize,
) -> Option<(usize, Chain, smallvec::SmallVec<[usize; 4]>)> {
    let steps = program.steps();
    let metas = program.metas();
    let first = &steps[start];
    let meta = &metas[first.first_result];
    // Chains are of floats and complexes: the integer kernels check
    // divisors and exponents, which a link does not.
    if first.results != 1 || !replayable(meta) || !meta.dtype.is_field() {
        return None;
    }
    let fits = |v: usize| metas[v] == *meta;
    let mut args: smallvec::SmallVec<[usize; 4]> = smallvec::smallvec![*first.args.first()?];
    let mut links = Vec::new();
    // The first step: its first argument is where the chain starts.
    let link = Link::of(&first.op, 0, 1)?;
    if !first.args.iter().all(|&v| fits(v)) {
        return None;
    }
    if let Some(&other) = first.args.get(1) {
        args.push(other);
    }
    links.push(link);
    let mut at = start;
    loop {
        let carried = steps[at].first_result;
        let Some(next) = steps.get(at + 1) else { break };
        if readers[carried] != 1 || next.results != 1 || !fits(next.first_result) {
            break;
        }
        let Some(position) = next.args.iter().position(|&v| v == carried) else {
            break;
        };
        let others: smallvec::SmallVec<[usize; 2]> = next
            .args
            .iter()
            .enumerate()
            .filter(|&(i, _)| i != position)
            .map(|(_, &v)| v)
            .collect();
        if !others.iter().all(|&v| fits(v)) {
            break;
        }
        let Some(link) = Link::of(&next.op, position, args.len()) else {
            break;
        };
        args.extend(others);
        links.push(link);
        at += 1;
    }
    (links.len() >= 2).then(|| {
        (
            at,
            Chain {
                links,
                dtype: meta.dtype,
                shape: meta.shape.clone(),
            },
            args,
        )
    })
}

/// Whether a step's output is one a plan's own kernels (einsum replay,
/// fused chains) make directly: it has elements, and fewer bytes than
/// the allocation probe's bound (the generic dispatch handles the rest).
fn replayable(meta: &Meta) -> bool {
    weft_core::ops::byte_size(meta.dtype, &meta.shape)
        .is_some_and(|bytes| bytes > 0 && bytes < buffer::ALLOCATION_PROBE_BYTES)
}

/// The error of step `step` of `program`.
fn failed(program: &Program, step: usize, source: ExecError) -> ExecError {
    ExecError::InProgram {
        program: program.trace_label(),
        step,
        op: program.steps()[step].op.name(),
        source: Box::new(source),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::HostRun;
    use weft_core::ops::{BinaryOp, UnaryOp};
    use weft_core::Scalar;

    /// `value · x`, as a step.
    fn scale(value: f64) -> TensorOp {
        TensorOp::BinaryScalar {
            op: BinaryOp::Mul,
            value: Scalar::Real(value),
            scalar_first: false,
        }
    }

    #[test]
    fn elementwise_runs_fuse_and_nothing_else_does() {
        let program = Program::record(|p| {
            let a = p.input(DType::F64, &[64]);
            let b = p.input(DType::F64, &[64]);
            let row = p.input(DType::F64, &[1]);
            let x = p.record_op(TensorOp::Binary(BinaryOp::Add), &[a, b])?; // chain 1: add, scale, tanh, sub
            let x = p.record_op(scale(2.0), &[x])?;
            let x = p.record_op(TensorOp::Unary(UnaryOp::Tanh), &[x])?;
            let x = p.record_op(TensorOp::Binary(BinaryOp::Sub), &[b, x])?;
            let y = p.record_op(TensorOp::Binary(BinaryOp::Add), &[x, row])?; // broadcasts: not a link
            let z = p.record_op(TensorOp::Binary(BinaryOp::Mul), &[y, y])?; // chain 2: mul, add
            let w = p.record_op(TensorOp::Binary(BinaryOp::Add), &[z, a])?;
            p.output(w)
        })
        .unwrap();
        let plan = ProgramPlan::compile(&program).unwrap();
        assert_eq!(plan.fused(), vec![4, 2], "{:?}", plan.runs);
        assert_eq!(plan.runs.len(), 3);
    }

    /// The steps of `program` one by one, each with its own kernel.
    fn stepwise(program: &Program, inputs: &[Tensor]) -> Vec<Tensor> {
        let mut values: Vec<Option<Tensor>> = vec![None; program.metas().len()];
        for (&v, t) in program.inputs().iter().zip(inputs) {
            values[v] = Some(t.clone());
        }
        for step in program.steps() {
            let args: Vec<&Tensor> = step
                .args
                .iter()
                .map(|&v| values[v].as_ref().unwrap())
                .collect();
            let made = step.op.run(&args, 1).unwrap();
            for (k, t) in made.into_iter().enumerate() {
                values[step.first_result + k] = Some(t);
            }
        }
        let outputs = program.outputs().iter();
        outputs.map(|&v| values[v].clone().unwrap()).collect()
    }

    #[test]
    fn a_chain_whose_start_dies_in_it_runs_in_place_with_the_same_bits() {
        let (n, k) = (48, 40);
        let values = |len: usize, seed: f64| -> Vec<f64> {
            (0..len).map(|i| ((i as f64 + seed) * 0.37).sin()).collect()
        };
        let a = Tensor::from_vec(values(n * k, 1.0), &[n, k]).unwrap();
        let b = Tensor::from_vec(values(k * n, 2.0), &[k, n]).unwrap();
        let c = Tensor::from_vec(values(n * n, 3.0), &[n, n]).unwrap();
        let program = Program::record(|p| {
            let (a, b, c) = (
                p.input(DType::F64, &[n, k]),
                p.input(DType::F64, &[k, n]),
                p.input(DType::F64, &[n, n]),
            );
            let t = p.record_op(TensorOp::Matmul, &[a, b])?;
            let x = p.record_op(scale(0.5), &[t])?; // in place over `t`
            let x = p.record_op(TensorOp::Unary(UnaryOp::Tanh), &[x])?;
            let x = p.record_op(TensorOp::Binary(BinaryOp::Sub), &[c, x])?;
            let u = p.record_op(TensorOp::Matmul, &[a, b])?;
            let y = p.record_op(TensorOp::Binary(BinaryOp::Mul), &[u, u])?; // reads its start again: not in place
            let y = p.record_op(TensorOp::Binary(BinaryOp::Add), &[y, x])?;
            let z = p.record_op(scale(3.0), &[c])?; // starts at an input: not in place
            let z = p.record_op(TensorOp::Unary(UnaryOp::Exp), &[z])?;
            p.output(x)?;
            p.output(y)?;
            p.output(z)
        })
        .unwrap();
        let plan = ProgramPlan::compile(&program).unwrap();
        let in_place: Vec<bool> = plan
            .runs
            .iter()
            .filter(|r| matches!(r.kernel, Kernel::Fused(_)))
            .map(|r| r.in_place)
            .collect();
        assert_eq!(in_place, vec![true, false, false], "{:?}", plan.runs);
        let mut store = Store::default();
        let ids = [TensorId(1), TensorId(2), TensorId(3)];
        for (&id, t) in ids.iter().zip([&a, &b, &c]) {
            store.insert(id, t.clone());
        }
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        let fused = plan
            .execute(&program, &store, &ids, &pool, Compute::faer(1))
            .unwrap();
        let plain = stepwise(&program, &[a, b, c]);
        assert_eq!(fused.len(), 3);
        for (f, p) in fused.iter().zip(&plain) {
            assert_eq!(f.as_slice::<f64>().unwrap(), p.as_slice::<f64>().unwrap());
        }
    }
}
