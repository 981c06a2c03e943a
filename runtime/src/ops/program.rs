//! Programs on a lane: a recorded computation run as one op.

use weft_core::{Meta, Program, Scalar, Tensor, TensorEngine, TensorId, TensorOp};
use weft_cpu::HostRun;

use crate::error::OpError;
use crate::handle::TensorHandle;
use crate::lane::Lane;

impl<E: TensorEngine> Lane<E> {
    /// Runs `program` on `inputs` as **one** op of this lane: one envelope,
    /// one ticket, one event for all its outputs, whose handles come back
    /// at once like any op's. The inputs are checked here against the
    /// program's placeholders; on the actor the engine runs every step in
    /// one turn (the CPU engine from a plan compiled once per program
    /// structure and kept in its cache: [`EngineMemory::programs`](crate::engine::EngineMemory::programs)).
    /// A step that fails fails every output with
    /// [`OpError::Program`], naming the step; the inputs are untouched.
    ///
    /// ```
    /// use weft::prelude::*;
    ///
    /// let program = Program::record(|p| -> Result<(), weft::OpError> {
    ///     let a = p.input(DType::F64, &[2, 2]);
    ///     let b = p.einsum("ij,jk->ik", &[&a, &a])?;
    ///     let c = p.add(&b, &a)?;
    ///     Ok(p.output(c)?)
    /// })?;
    /// let rt = weft::Runtime::builder().split(1).build()?;
    /// let lane = rt.lane(0)?;
    /// let a = lane.upload(Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], &[2, 2])?)?;
    /// let out = lane.run_program(&program, &[&a])?;
    /// let c = lane.download(&out[0])?.wait()?;
    /// assert_eq!(c.as_slice::<f64>()?, &[8.0, 12.0, 18.0, 26.0]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`OpError::ProgramArity`], [`OpError::ProgramInput`], and the
    /// handle errors of [`Lane::download`].
    pub fn run_program(
        &self,
        program: &Program,
        inputs: &[&TensorHandle],
    ) -> Result<Vec<TensorHandle>, OpError> {
        self.check_program_inputs(program, inputs, 0)?;
        let handles = self.submit_program(program, inputs, Vec::new())?;
        if crate::tape::taping() {
            crate::tape::note_program(program, inputs, &handles);
        }
        Ok(handles)
    }

    /// Runs `program` as [`Lane::run_program`] does, its placeholders
    /// filled by `tensors` first, then by host `scalars`: each of the last
    /// `scalars.len()` placeholders is rank 0 (recorded as
    /// `p.input(dtype, &[])`) and takes its value at this call, converted to
    /// the placeholder's type by the exact rules of [`Scalar`]. The values
    /// are not part of the program or its plan: a program whose scalars
    /// change from run to run (the coefficients of a Lanczos step) is
    /// compiled once. On the actor they become rank-0 tensors for the run
    /// and are freed after it. Under a [`Tape`](crate::program::Tape) they
    /// are uploaded as tensors first, so the run is taped as any program
    /// run (the scalars are constants of it).
    ///
    /// ```
    /// use weft::prelude::*;
    ///
    /// // c₀·v₀ + c₁·v₁, the coefficients given at each run.
    /// let combine = Program::record(|p| -> Result<(), weft::OpError> {
    ///     let v = [p.input(DType::F64, &[2]), p.input(DType::F64, &[2])];
    ///     let c = [p.input(DType::F64, &[]), p.input(DType::F64, &[])];
    ///     let (a, b) = (p.mul(&c[0], &v[0])?, p.mul(&c[1], &v[1])?);
    ///     let sum = p.add(&a, &b)?;
    ///     Ok(p.output(sum)?)
    /// })?;
    /// let rt = weft::Runtime::builder().split(1).build()?;
    /// let lane = rt.lane(0)?;
    /// let v0 = lane.upload(Tensor::from_vec(vec![1.0f64, 0.0], &[2])?)?;
    /// let v1 = lane.upload(Tensor::from_vec(vec![0.0f64, 1.0], &[2])?)?;
    /// let out = lane.run_program_with(&combine, &[&v0, &v1], &[Scalar::Real(2.0), Scalar::Real(-3.0)])?;
    /// assert_eq!(lane.download(&out[0])?.wait()?.as_slice::<f64>()?, &[2.0, -3.0]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Lane::run_program`], counting `tensors` and `scalars` together;
    /// [`OpError::ProgramInput`] for a scalar whose placeholder is not
    /// rank 0, and the scalar's refusal ([`OpError::Tensor`]) for a value
    /// the placeholder's type cannot hold.
    pub fn run_program_with(
        &self,
        program: &Program,
        tensors: &[&TensorHandle],
        scalars: &[Scalar],
    ) -> Result<Vec<TensorHandle>, OpError> {
        if scalars.is_empty() {
            return self.run_program(program, tensors);
        }
        let label = program.trace_label();
        self.check_program_inputs(program, tensors, scalars.len())?;
        let placeholders = &program.inputs()[tensors.len()..];
        let values = (scalars.iter().zip(placeholders).enumerate())
            .map(|(k, (&value, &placeholder))| {
                let meta = &program.metas()[placeholder];
                if !meta.shape.is_empty() {
                    return Err(OpError::ProgramInput {
                        program: label,
                        index: tensors.len() + k,
                        expected: Box::new(meta.clone()),
                        got: Box::new(Meta {
                            dtype: meta.dtype,
                            shape: Vec::new(),
                        }),
                    });
                }
                let full = TensorOp::Full {
                    dtype: meta.dtype,
                    shape: Vec::new(),
                    value,
                };
                Ok(full.run(&[], 1)?.pop().expect("one output"))
            })
            .collect::<Result<Vec<Tensor>, OpError>>()?;
        if crate::tape::taping() {
            let uploaded = (values.into_iter())
                .map(|t| self.upload(t))
                .collect::<Result<Vec<_>, _>>()?;
            let all: Vec<&TensorHandle> = tensors.iter().copied().chain(&uploaded).collect();
            return self.run_program(program, &all);
        }
        self.submit_program(program, tensors, values)
    }

    /// Submits one run of `program` on `tensors` (checked) and, for its
    /// last placeholders, `scalars`: rank-0 host tensors made resident
    /// under scratch ids for the run and freed after it.
    fn submit_program(
        &self,
        program: &Program,
        tensors: &[&TensorHandle],
        scalars: Vec<Tensor>,
    ) -> Result<Vec<TensorHandle>, OpError> {
        let label = program.trace_label();
        let outputs: Vec<Meta> = program.output_metas();
        let program = program.clone();
        let lane = self.actor_lane().id();
        self.produce(label, tensors, None, outputs, move |engine, ids, outs| {
            let out_ids: smallvec::SmallVec<[TensorId; 4]> =
                outs.iter().map(TensorHandle::id).collect();
            if scalars.is_empty() {
                return Ok(engine.run_program(&program, ids, &out_ids, lane)?);
            }
            let scratch: smallvec::SmallVec<[TensorId; 4]> =
                scalars.iter().map(|_| TensorId::scratch()).collect();
            let run = || -> Result<(), OpError> {
                for (&id, value) in scratch.iter().zip(scalars) {
                    engine.upload(id, value, lane)?;
                }
                let all: Vec<TensorId> = ids.iter().chain(&scratch).copied().collect();
                Ok(engine.run_program(&program, &all, &out_ids, lane)?)
            };
            let result = run();
            for &id in &scratch {
                engine.free(id);
            }
            result
        })
    }

    /// Checks `inputs` against the first placeholders of `program`, which
    /// has `more` placeholders after them: their count, this lane's
    /// domain, their types and shapes.
    fn check_program_inputs(
        &self,
        program: &Program,
        inputs: &[&TensorHandle],
        more: usize,
    ) -> Result<(), OpError> {
        let label = program.trace_label();
        let placeholders = program.inputs();
        let got = inputs.len().saturating_add(more);
        if got != placeholders.len() {
            return Err(OpError::ProgramArity {
                program: label,
                expected: placeholders.len(),
                got,
            });
        }
        for (index, (input, &value)) in inputs.iter().zip(placeholders).enumerate() {
            self.check(label, input)?;
            let expected = &program.metas()[value];
            if input.dtype() != expected.dtype || input.shape() != &expected.shape[..] {
                return Err(OpError::ProgramInput {
                    program: label,
                    index,
                    expected: Box::new(expected.clone()),
                    got: Box::new(input.meta()),
                });
            }
        }
        Ok(())
    }
}
