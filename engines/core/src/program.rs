//! Programs: a tensor computation recorded once against placeholder inputs
//! and run many times as one message.
//!
//! A [`Program`] is a value, like an op: a list of [`TensorOp`] steps over
//! numbered values (inputs and each step's results, in the order they
//! were recorded), checked
//! step by step when it is recorded with the same rules a lane checks an
//! op by ([`TensorOp::infer`]), so a program that records is one every
//! engine can run on inputs of its placeholders' types and shapes. Engines
//! run it through [`crate::TensorEngine::run_program`]; the CPU engine
//! compiles it once per structure into a plan it keeps in a bounded cache.

use std::cell::RefCell;
use std::collections::hash_map::DefaultHasher;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use crate::ops::{Meta, TensorOp};
use crate::tensor::{DType, TensorError};

/// A value of a program being recorded: one of its inputs or a step's
/// result. It names nothing outside the recorder that made it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Value {
    recorder: u64,
    index: usize,
}

impl Value {
    /// Its number in the program, in the order values were recorded.
    pub fn index(self) -> usize {
        self.index
    }
}

/// One step of a program: an op on earlier values, giving new ones.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// The op.
    pub op: TensorOp,
    /// The values it reads, by number.
    pub args: Vec<usize>,
    /// The number of its first result; its results are numbered on from it.
    pub first_result: usize,
    /// How many results it gives.
    pub results: usize,
}

/// A program could not be recorded: a step that does not fit its inputs
/// (named by its number and op, with the rule's own words), or a value of
/// another recorder.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RecordError {
    /// Step `step` (`op`) does not fit its inputs.
    #[error("program step {step} ({op}): {source}")]
    Op {
        /// The step's number.
        step: usize,
        /// The op's name.
        op: &'static str,
        /// Why it does not fit.
        source: TensorError,
    },
    /// A value recorded by another recorder.
    #[error("{op}: the value belongs to another program's recorder")]
    ForeignValue {
        /// The op it was passed to.
        op: &'static str,
    },
    /// The program names no output.
    #[error("the program has no output: call `output` on the values it returns")]
    NoOutput,
}

/// Records a program: its inputs, its steps, its outputs. Every step is
/// checked as it is recorded. Its methods take `&self` (the recording is
/// inside), so that code generic over a vocabulary of ops can record
/// through a shared reference as it runs ops on a lane through one.
#[derive(Debug)]
pub struct Recorder {
    id: u64,
    body: RefCell<Recording>,
}

/// What a recorder has recorded so far.
#[derive(Debug, Default)]
struct Recording {
    inputs: Vec<usize>,
    metas: Vec<Meta>,
    steps: Vec<Step>,
    outputs: Vec<usize>,
}

/// Recorders are told apart by a process-unique number.
fn next_recorder() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

impl Recorder {
    fn new() -> Recorder {
        Recorder {
            id: next_recorder(),
            body: RefCell::default(),
        }
    }

    fn value(&self, index: usize) -> Value {
        Value {
            recorder: self.id,
            index,
        }
    }

    /// A new input: a placeholder for a tensor of this type and shape,
    /// given when the program runs. Inputs are given to a run in the
    /// order they are declared.
    pub fn input(&self, dtype: DType, shape: &[usize]) -> Value {
        let mut body = self.body.borrow_mut();
        let index = body.metas.len();
        body.inputs.push(index);
        body.metas.push(Meta {
            dtype,
            shape: shape.to_vec(),
        });
        self.value(index)
    }

    /// The type and shape of `value`.
    ///
    /// # Errors
    ///
    /// [`RecordError::ForeignValue`].
    pub fn meta(&self, value: Value) -> Result<Meta, RecordError> {
        let index = self.own("meta", value)?;
        Ok(self.body.borrow().metas[index].clone())
    }

    fn own(&self, op: &'static str, value: Value) -> Result<usize, RecordError> {
        if value.recorder == self.id {
            Ok(value.index)
        } else {
            Err(RecordError::ForeignValue { op })
        }
    }

    /// The number the next step will have.
    pub fn next_step(&self) -> usize {
        self.body.borrow().steps.len()
    }

    /// Records `op` on `args`, checked as a lane checks it, and returns
    /// its results.
    ///
    /// # Errors
    ///
    /// [`RecordError::Op`] naming the step, the op and the rule it breaks;
    /// [`RecordError::ForeignValue`].
    pub fn record_many(&self, op: TensorOp, args: &[Value]) -> Result<Vec<Value>, RecordError> {
        let name = op.name();
        let args = args
            .iter()
            .map(|&v| self.own(name, v))
            .collect::<Result<Vec<usize>, _>>()?;
        let mut body = self.body.borrow_mut();
        let step = body.steps.len();
        let metas: Vec<Meta> = args.iter().map(|&i| body.metas[i].clone()).collect();
        let outs = op.infer(&metas).map_err(|source| RecordError::Op {
            step,
            op: name,
            source,
        })?;
        let first_result = body.metas.len();
        let results = outs.len();
        body.metas.extend(outs);
        body.steps.push(Step {
            op,
            args,
            first_result,
            results,
        });
        Ok((first_result..first_result + results)
            .map(|index| self.value(index))
            .collect())
    }

    /// Records an op of one result; see [`Recorder::record_many`].
    ///
    /// # Errors
    ///
    /// As [`Recorder::record_many`], and [`RecordError::Op`] with
    /// [`TensorError::Outputs`] for an op of several results (nothing is
    /// recorded then).
    pub fn record_op(&self, op: TensorOp, args: &[Value]) -> Result<Value, RecordError> {
        let name = op.name();
        let step = self.next_step();
        let mut out = self.record_many(op, args)?;
        if out.len() != 1 {
            // Undo the step: its results are not to be used.
            let mut body = self.body.borrow_mut();
            let removed = body.steps.pop().expect("just recorded");
            body.metas.truncate(removed.first_result);
            return Err(RecordError::Op {
                step,
                op: name,
                source: TensorError::Outputs {
                    op: name,
                    outputs: out.len(),
                },
            });
        }
        Ok(out.pop().expect("one result"))
    }

    /// Marks `value` as the program's next output. An output that is an
    /// input, or a value already an output, is recorded as a copy, so
    /// that every output of a run is a tensor of its own.
    ///
    /// # Errors
    ///
    /// [`RecordError::ForeignValue`].
    pub fn output(&self, value: Value) -> Result<(), RecordError> {
        let index = self.own("output", value)?;
        let copy = {
            let body = self.body.borrow();
            (body.inputs.contains(&index) || body.outputs.contains(&index))
                .then(|| body.metas[index].shape.clone())
        };
        let index = match copy {
            Some(shape) => self.record_op(TensorOp::Reshape(shape), &[value])?.index,
            None => index,
        };
        self.body.borrow_mut().outputs.push(index);
        Ok(())
    }

    /// Records `program`'s steps on `args` (one per input of it, of its
    /// placeholders' types and shapes) and returns its outputs: the
    /// program inlined, each step checked again.
    ///
    /// # Errors
    ///
    /// As [`Recorder::record_many`]; [`TensorError::Arity`] (as
    /// [`RecordError::Op`]) for a count of `args` that is not its inputs'.
    pub fn inline(&self, program: &Program, args: &[Value]) -> Result<Vec<Value>, RecordError> {
        if args.len() != program.inputs().len() {
            return Err(RecordError::Op {
                step: self.next_step(),
                op: "program",
                source: TensorError::Arity {
                    op: "program",
                    expected: program.inputs().len(),
                    got: args.len(),
                },
            });
        }
        let mut values: Vec<Option<Value>> = vec![None; program.metas().len()];
        for (&i, &v) in program.inputs().iter().zip(args) {
            values[i] = Some(v);
        }
        for step in program.steps() {
            let step_args: Vec<Value> = step
                .args
                .iter()
                .map(|&a| values[a].expect("a program reads only earlier values"))
                .collect();
            for (k, v) in self
                .record_many(step.op.clone(), &step_args)?
                .into_iter()
                .enumerate()
            {
                values[step.first_result + k] = Some(v);
            }
        }
        Ok(program
            .outputs()
            .iter()
            .map(|&o| values[o].expect("outputs are recorded values"))
            .collect())
    }
}

/// A recorded program: cheap to clone (clones share it), sent whole to an
/// actor when it runs. See the module docs.
#[derive(Clone)]
pub struct Program {
    inner: Arc<Body>,
}

/// What a program is; shared by its clones.
struct Body {
    label: Option<String>,
    /// Every value's type and shape, by number.
    metas: Vec<Meta>,
    /// The value numbers of the inputs, in the order a run gives them.
    inputs: Vec<usize>,
    steps: Vec<Step>,
    outputs: Vec<usize>,
    /// A hash of the structure (metas, steps, outputs): two programs
    /// recorded alike have the same one, so a plan cache finds either.
    fingerprint: u64,
    /// The name its runs carry in stats and traces.
    trace_label: &'static str,
}

impl Program {
    /// Records a program: `build` declares inputs with
    /// [`Recorder::input`], records steps, and marks outputs with
    /// [`Recorder::output`]. (The runtime's vocabulary of named ops records
    /// through a recorder too: there, `p.einsum(..)` is the op a lane runs
    /// by that name.)
    ///
    /// ```
    /// use weft_core::{BinaryOp, DType, EinsumSpec, Program, Scalar, TensorOp};
    ///
    /// let program = Program::record(|p| {
    ///     let a = p.input(DType::F64, &[4, 8]);
    ///     let b = p.input(DType::F64, &[8, 2]);
    ///     let spec = EinsumSpec::parse("ij,jk->ik").expect("a valid spec");
    ///     let c = p.record_op(TensorOp::Einsum(spec), &[a, b])?;
    ///     let twice = TensorOp::BinaryScalar {
    ///         op: BinaryOp::Mul,
    ///         value: Scalar::Real(2.0),
    ///         scalar_first: false,
    ///     };
    ///     let d = p.record_op(twice, &[c])?;
    ///     p.output(d)
    /// })?;
    /// assert_eq!(program.steps().len(), 2);
    /// assert_eq!(program.output_metas()[0].shape, [4, 2]);
    /// # Ok::<(), weft_core::RecordError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// The first [`RecordError`] of a step, or [`RecordError::NoOutput`].
    pub fn record<E: From<RecordError>>(
        build: impl FnOnce(&Recorder) -> Result<(), E>,
    ) -> Result<Program, E> {
        let recorder = Recorder::new();
        build(&recorder)?;
        Ok(Program::finish(recorder, None)?)
    }

    /// The most distinct texts [`Program::trace_label`] keeps in a
    /// process.
    pub const MAX_TRACE_LABELS: usize = 4096;

    /// The trace label of a program whose own would be past
    /// [`Program::MAX_TRACE_LABELS`].
    pub const UNKEPT_LABEL: &'static str = "program (a label past the 4096 kept)";

    /// The same program under a label, shown in its stats, traces and
    /// errors. Stats and traces name a program by a text kept for the
    /// life of the process, one per distinct label and length: past
    /// [`Program::MAX_TRACE_LABELS`] of them (a label made of a loop
    /// counter, say), a new one is shown there as
    /// [`Program::UNKEPT_LABEL`] (its errors and [`Program::label`] still
    /// give the label itself).
    pub fn labelled(self, label: impl Into<String>) -> Program {
        let body = &*self.inner;
        let label = Some(label.into());
        Program {
            inner: Arc::new(Body {
                trace_label: trace_label(label.as_deref(), body.steps.len()),
                label,
                metas: body.metas.clone(),
                inputs: body.inputs.clone(),
                steps: body.steps.clone(),
                outputs: body.outputs.clone(),
                fingerprint: body.fingerprint,
            }),
        }
    }

    fn finish(recorder: Recorder, label: Option<String>) -> Result<Program, RecordError> {
        let Recording {
            inputs,
            metas,
            steps,
            outputs,
        } = recorder.body.into_inner();
        if outputs.is_empty() {
            return Err(RecordError::NoOutput);
        }
        let mut hasher = DefaultHasher::new();
        inputs.hash(&mut hasher);
        metas.hash(&mut hasher);
        outputs.hash(&mut hasher);
        format!("{steps:?}").hash(&mut hasher);
        Ok(Program {
            inner: Arc::new(Body {
                trace_label: trace_label(label.as_deref(), steps.len()),
                label,
                metas,
                inputs,
                steps,
                outputs,
                fingerprint: hasher.finish(),
            }),
        })
    }

    /// Its label, if it has one.
    pub fn label(&self) -> Option<&str> {
        self.inner.label.as_deref()
    }

    /// The placeholders' types and shapes, in order.
    pub fn input_metas(&self) -> Vec<Meta> {
        self.inner
            .inputs
            .iter()
            .map(|&i| self.inner.metas[i].clone())
            .collect()
    }

    /// The value numbers of the inputs, in the order a run gives them.
    pub fn inputs(&self) -> &[usize] {
        &self.inner.inputs
    }

    /// The outputs' types and shapes, in order.
    pub fn output_metas(&self) -> Vec<Meta> {
        self.inner
            .outputs
            .iter()
            .map(|&i| self.inner.metas[i].clone())
            .collect()
    }

    /// The steps, in order.
    pub fn steps(&self) -> &[Step] {
        &self.inner.steps
    }

    /// The numbers of the output values.
    pub fn outputs(&self) -> &[usize] {
        &self.inner.outputs
    }

    /// Every value's type and shape, by number.
    pub fn metas(&self) -> &[Meta] {
        &self.inner.metas
    }

    /// A hash of the program's structure: equal for programs recorded
    /// alike, whoever recorded them.
    pub fn fingerprint(&self) -> u64 {
        self.inner.fingerprint
    }

    /// Whether `other` is this program or one recorded alike.
    pub fn same_as(&self, other: &Program) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
            || (self.inner.fingerprint == other.inner.fingerprint
                && self.inner.inputs == other.inner.inputs
                && self.inner.metas == other.inner.metas
                && self.inner.steps == other.inner.steps
                && self.inner.outputs == other.inner.outputs)
    }

    /// The name its runs carry in stats and traces:
    /// `program <label> (<n> ops)`.
    pub fn trace_label(&self) -> &'static str {
        self.inner.trace_label
    }
}

/// The trace label of a program, interned: one allocation per distinct
/// label for the life of the process, however many programs carry it, and
/// at most [`Program::MAX_TRACE_LABELS`] of them.
fn trace_label(label: Option<&str>, steps: usize) -> &'static str {
    static INTERNED: OnceLock<Mutex<std::collections::HashSet<&'static str>>> = OnceLock::new();
    let text = match label {
        Some(label) => format!("program {label} ({steps} ops)"),
        None => format!("program ({steps} ops)"),
    };
    let mut set = INTERNED
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(&known) = set.get(text.as_str()) {
        return known;
    }
    if set.len() >= Program::MAX_TRACE_LABELS {
        return Program::UNKEPT_LABEL;
    }
    let leaked: &'static str = Box::leak(text.into_boxed_str());
    set.insert(leaked);
    leaked
}

impl fmt::Debug for Program {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Program")
            .field("label", &self.inner.label)
            .field("inputs", &self.inner.inputs.len())
            .field("steps", &self.inner.steps.len())
            .field("outputs", &self.inner.outputs)
            .finish_non_exhaustive()
    }
}

/// One line per input, step and output: `%2 = einsum[ij,jk->ik](%0, %1) : f64[4, 2]`.
impl fmt::Display for Program {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let body = &*self.inner;
        let meta = |i: usize| {
            let m = &body.metas[i];
            format!("{}{:?}", m.dtype, m.shape)
        };
        match &body.label {
            Some(label) => writeln!(f, "program {label}")?,
            None => writeln!(f, "program")?,
        }
        for &i in &body.inputs {
            writeln!(f, "  %{i} = input : {}", meta(i))?;
        }
        for step in &body.steps {
            let results: Vec<String> = (step.first_result..step.first_result + step.results)
                .map(|i| format!("%{i}"))
                .collect();
            let args: Vec<String> = step.args.iter().map(|i| format!("%{i}")).collect();
            let detail = match &step.op {
                TensorOp::Einsum(spec) => format!("[{}]", spec.text()),
                TensorOp::Binary(_)
                | TensorOp::Unary(_)
                | TensorOp::Matmul
                | TensorOp::Linalg(_)
                | TensorOp::Select
                | TensorOp::ClampBetween => String::new(),
                TensorOp::Diagonal { axes } | TensorOp::DiagEmbed { axes } => format!("{axes:?}"),
                TensorOp::Reshape(v)
                | TensorOp::Permute(v)
                | TensorOp::BroadcastTo(v)
                | TensorOp::Reverse(v) => format!("{v:?}"),
                TensorOp::Slice(axes) => {
                    let axes: Vec<String> = axes
                        .iter()
                        .map(|a| match (a.stop, a.step) {
                            (usize::MAX, 1) => format!("{}:", a.start),
                            (usize::MAX, step) => format!("{}::{step}", a.start),
                            (stop, 1) => format!("{}:{stop}", a.start),
                            (stop, step) => format!("{}:{stop}:{step}", a.start),
                        })
                        .collect();
                    format!("[{}]", axes.join(", "))
                }
                TensorOp::Reduce {
                    axes, keep_dims, ..
                } => format!("[axes {axes:?}{}]", if *keep_dims { ", kept" } else { "" }),
                // The op's arguments, without the variant's name.
                other => {
                    let debug = format!("{other:?}");
                    let arguments = debug.trim_start_matches(|c: char| c.is_alphanumeric());
                    format!("[{}]", arguments.trim())
                }
            };
            let types: Vec<String> = (step.first_result..step.first_result + step.results)
                .map(meta)
                .collect();
            writeln!(
                f,
                "  {} = {}{}({}) : {}",
                results.join(", "),
                step.op.name(),
                detail,
                args.join(", "),
                types.join(", ")
            )?;
        }
        let outs: Vec<String> = body.outputs.iter().map(|i| format!("%{i}")).collect();
        write!(f, "  return {}", outs.join(", "))
    }
}

/// For each value, the number of the last step that reads it (`None`:
/// no step does).
pub fn last_uses(program: &Program) -> Vec<Option<usize>> {
    let mut last = vec![None; program.metas().len()];
    for (i, step) in program.steps().iter().enumerate() {
        for &arg in &step.args {
            last[arg] = Some(i);
        }
    }
    last
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::{BinaryOp, UnaryOp};

    #[test]
    fn a_bad_step_is_named_at_record_time() {
        let err = Program::record(|p| {
            let a = p.input(DType::F64, &[2, 3]);
            let b = p.input(DType::F64, &[4, 5]);
            let c = p.record_op(TensorOp::Binary(BinaryOp::Add), &[a, a])?;
            let d = p.record_op(TensorOp::Matmul, &[c, b])?;
            p.output(d)
        })
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "program step 1 (matmul): matmul: shapes [2, 3] and [4, 5] do not multiply (the inner extents differ)"
        );
    }

    #[test]
    fn values_of_another_recorder_are_refused() {
        let mut stray = None;
        let _ = Program::record(|p| {
            stray = Some(p.input(DType::F32, &[1]));
            p.output(stray.unwrap())
        })
        .unwrap();
        let err = Program::record(|p| {
            let a = p.input(DType::F32, &[1]);
            let c = p.record_op(TensorOp::Binary(BinaryOp::Add), &[a, stray.unwrap()])?;
            p.output(c)
        })
        .unwrap_err();
        assert_eq!(err, RecordError::ForeignValue { op: "add" });
    }

    #[test]
    fn an_input_returned_as_output_is_copied_and_programs_alike_match() {
        let build = |p: &Recorder| {
            let a = p.input(DType::F64, &[3]);
            let b = p.record_op(TensorOp::Unary(UnaryOp::Exp), &[a])?;
            p.output(a)?;
            p.output(b)?;
            p.output(b)
        };
        let one = Program::record(build).unwrap();
        let two = Program::record(build).unwrap();
        assert_eq!(one.steps().len(), 3, "exp, and a copy for each repeat");
        assert_eq!(one.outputs(), &[2, 1, 3]);
        assert_eq!(one.fingerprint(), two.fingerprint());
        assert!(one.same_as(&two));
        let text = one.labelled("demo").to_string();
        assert!(
            text.starts_with("program demo\n  %0 = input : f64[3]\n"),
            "{text}"
        );
        assert!(text.ends_with("return %2, %1, %3"), "{text}");
        assert!(Program::record(|_| Ok::<(), RecordError>(())).is_err());
    }

    #[test]
    fn trace_labels_are_kept_up_to_their_bound() {
        let program = Program::record(|p| {
            let a = p.input(DType::F64, &[3]);
            p.output(a)
        })
        .unwrap();
        let first = program.clone().labelled("kept from the start");
        assert_eq!(first.trace_label(), "program kept from the start (1 ops)");
        // More distinct labels than are kept (whatever other tests of this
        // process interned): the last ones are shown as unkept, the first
        // still as itself, and the label itself is never lost.
        let mut last = first.clone();
        for i in 0..Program::MAX_TRACE_LABELS {
            last = program.clone().labelled(format!("step {i}"));
        }
        assert_eq!(last.trace_label(), Program::UNKEPT_LABEL);
        assert_eq!(last.label(), Some("step 4095"));
        assert!(Program::UNKEPT_LABEL.contains(&Program::MAX_TRACE_LABELS.to_string()));
        let again = program.labelled("kept from the start");
        assert_eq!(again.trace_label(), "program kept from the start (1 ops)");
    }
}
