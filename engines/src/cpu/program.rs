//! Programs on the CPU: each compiled once per structure into a plan (its
//! einsums lowered for their shapes, each value's last use) that the
//! engine keeps in a bounded cache, and run in one call with no store
//! entry, id or handle for an intermediate: intermediates live in the
//! run's own slots, and each one's buffer goes back to the engine's pool
//! right after its last reader, for the next intermediate of its size.

use super::einsum::EinsumPlan;
use super::{buffer, exec, Store};
use crate::engine::{ExecError, TensorId};
use crate::ops::{Meta, TensorOp};
use crate::program::{last_uses, Program};
use crate::tensor::{DType, Tensor};

/// A program compiled for the CPU.
#[derive(Debug)]
pub(super) struct ProgramPlan {
    /// The program it was compiled from (to tell it from a hash collision).
    program: Program,
    /// Per step, its einsum's plan (`None` for other ops).
    einsums: Vec<Option<EinsumPlan>>,
    /// Per step, the values no later step reads and no output is: their
    /// buffers go back to the pool once the step has run.
    dead_after: Vec<smallvec::SmallVec<[usize; 2]>>,
    /// Per value, the input it is (by position), if it is one.
    input_of: Vec<Option<usize>>,
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
        let mut einsums = Vec::with_capacity(program.steps().len());
        for (i, step) in program.steps().iter().enumerate() {
            let outputs = &metas[step.first_result..step.first_result + step.results];
            einsums.push(match &step.op {
                // Replayed directly, but for outputs with no element or
                // too large to be sure of (those go the generic way, which
                // handles both).
                TensorOp::Einsum(spec) if outputs.iter().all(|m| replayable(m)) => {
                    let shapes: Vec<&[usize]> =
                        step.args.iter().map(|&v| &metas[v].shape[..]).collect();
                    let dtype = step.args.first().map_or(DType::F64, |&v| metas[v].dtype);
                    Some(
                        EinsumPlan::compile(spec, &shapes, dtype)
                            .map_err(|e| failed(program, i, e.into()))?,
                    )
                }
                _ => None,
            });
        }
        let last = last_uses(program);
        let keep = |v: usize| program.inputs().contains(&v) || program.outputs().contains(&v);
        let mut dead_after = vec![smallvec::SmallVec::new(); program.steps().len()];
        for v in 0..metas.len() {
            if keep(v) {
                continue;
            }
            let made = program
                .steps()
                .iter()
                .position(|s| (s.first_result..s.first_result + s.results).contains(&v));
            if let Some(step) = last[v].or(made) {
                dead_after[step].push(v);
            }
        }
        let mut input_of = vec![None; metas.len()];
        for (k, &v) in program.inputs().iter().enumerate() {
            input_of[v] = Some(k);
        }
        Ok(ProgramPlan {
            program: program.clone(),
            einsums,
            dead_after,
            input_of,
        })
    }

    /// Whether this is the plan of `program`.
    pub(super) fn is_for(&self, program: &Program) -> bool {
        self.program.same_as(program)
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
        pool: &rayon::ThreadPool,
        threads: usize,
    ) -> Result<Vec<Tensor>, ExecError> {
        let metas = program.metas();
        let given = inputs
            .iter()
            .map(|&id| store.get(id))
            .collect::<Result<Vec<&Tensor>, _>>()
            .map_err(|e| failed(program, 0, e.into()))?;
        let mut slots: Vec<Option<Tensor>> = Vec::with_capacity(metas.len());
        slots.resize_with(metas.len(), || None);
        for (i, step) in program.steps().iter().enumerate() {
            let made = {
                let args: smallvec::SmallVec<[&Tensor; 4]> = step
                    .args
                    .iter()
                    .map(|&v| match self.input_of[v] {
                        Some(k) => given[k],
                        None => slots[v].as_ref().expect("made by an earlier step"),
                    })
                    .collect();
                let ran = match &self.einsums[i] {
                    // Checked when recorded, lowered when compiled: replay it.
                    Some(plan) => plan.replay(&args, threads).map(|t| smallvec::smallvec![t]),
                    None => {
                        let outs: smallvec::SmallVec<[(DType, &[usize]); 2]> = metas
                            [step.first_result..step.first_result + step.results]
                            .iter()
                            .map(|m: &Meta| (m.dtype, &m.shape[..]))
                            .collect();
                        exec::run(pool, threads, &step.op, &args, &outs, None)
                            .map(smallvec::SmallVec::<[Tensor; 1]>::from_vec)
                    }
                };
                ran.map_err(|e| failed(program, i, e.into()))?
            };
            for (v, t) in (step.first_result..).zip(made) {
                slots[v] = Some(t);
            }
            for &v in &self.dead_after[i] {
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

/// Whether a step's output is one the einsum replay can make directly:
/// it has elements, and fewer bytes than the allocation probe's bound.
fn replayable(meta: &Meta) -> bool {
    crate::ops::byte_size(meta.dtype, &meta.shape)
        .is_some_and(|bytes| bytes > 0 && bytes < exec::ALLOCATION_PROBE_BYTES)
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
