//! Programs on a lane: a recorded computation run as one op.

use weft_core::{Meta, Program, TensorEngine, TensorId};

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
    /// use weft::{DType, Program, Tensor};
    ///
    /// let program = Program::record(|p| {
    ///     let a = p.input(DType::F64, &[2, 2]);
    ///     let b = p.einsum("ij,jk->ik", &[a, a])?;
    ///     let c = p.add(b, a)?;
    ///     p.output(c)
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
        let label = program.trace_label();
        let placeholders = program.inputs();
        if inputs.len() != placeholders.len() {
            return Err(OpError::ProgramArity {
                program: label,
                expected: placeholders.len(),
                got: inputs.len(),
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
        let outputs: Vec<Meta> = program.output_metas();
        let program = program.clone();
        let lane = self.actor_lane().id();
        let taped = crate::tape::taping().then(|| program.clone());
        let handles = self.produce(label, inputs, None, outputs, move |engine, ids, outs| {
            let out_ids: smallvec::SmallVec<[TensorId; 4]> =
                outs.iter().map(TensorHandle::id).collect();
            Ok(engine.run_program(&program, ids, &out_ids, lane)?)
        })?;
        if let Some(program) = taped {
            crate::tape::note_program(&program, inputs, &handles);
        }
        Ok(handles)
    }
}
