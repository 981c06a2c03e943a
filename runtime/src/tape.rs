//! The eager tape: tensor ops submitted while a [`Tape::record`] scope runs
//! are taped as they are submitted, and [`Tape::gradient`] turns the part
//! of the tape a loss depends on into a program, derives its gradient
//! ([`weft_engines::Program::gradient`]) and runs that as one op.
//!
//! Taping costs the submitting thread a clone of each op and of its
//! handles; the ops run as they always do. The derived program recomputes
//! the forward steps it needs (the rules read forward values) in the same
//! message as the backward ones.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

use weft_engines::{Program, TensorEngine, TensorId, TensorOp, Value};

use crate::error::OpError;
use crate::handle::TensorHandle;
use crate::lane::Lane;

/// What one taped submission did.
#[derive(Debug, Clone)]
enum Entry {
    /// An op of the vocabulary (fresh, or written into a given tensor).
    Op {
        op: TensorOp,
        inputs: Vec<TensorHandle>,
        outputs: Vec<TensorHandle>,
    },
    /// A program run as one op.
    Program {
        program: Program,
        inputs: Vec<TensorHandle>,
        outputs: Vec<TensorHandle>,
    },
    /// A transfer: its output is another place's copy of its input.
    Transfer {
        input: TensorHandle,
        output: TensorHandle,
    },
}

impl Entry {
    fn outputs(&self) -> &[TensorHandle] {
        match self {
            Entry::Op { outputs, .. } | Entry::Program { outputs, .. } => outputs,
            Entry::Transfer { output, .. } => std::slice::from_ref(output),
        }
    }

    fn inputs(&self) -> &[TensorHandle] {
        match self {
            Entry::Op { inputs, .. } | Entry::Program { inputs, .. } => inputs,
            Entry::Transfer { input, .. } => std::slice::from_ref(input),
        }
    }
}

thread_local! {
    /// The tapes of the scopes running on this thread, innermost last.
    static ACTIVE: RefCell<Vec<Vec<Entry>>> = const { RefCell::new(Vec::new()) };
}

/// Whether a scope on this thread is taping (checked before anything is
/// cloned for it).
pub(crate) fn taping() -> bool {
    ACTIVE.with(|active| !active.borrow().is_empty())
}

/// Tapes an op, if a scope on this thread is taping.
pub(crate) fn note_op(op: &TensorOp, inputs: &[&TensorHandle], outputs: &[TensorHandle]) {
    note(|| Entry::Op {
        op: op.clone(),
        inputs: inputs.iter().map(|&h| h.clone()).collect(),
        outputs: outputs.to_vec(),
    });
}

/// Tapes a program's run, if a scope on this thread is taping.
pub(crate) fn note_program(program: &Program, inputs: &[&TensorHandle], outputs: &[TensorHandle]) {
    note(|| Entry::Program {
        program: program.clone(),
        inputs: inputs.iter().map(|&h| h.clone()).collect(),
        outputs: outputs.to_vec(),
    });
}

/// Tapes a transfer, if a scope on this thread is taping.
pub(crate) fn note_transfer(input: &TensorHandle, output: &TensorHandle) {
    note(|| Entry::Transfer {
        input: input.clone(),
        output: output.clone(),
    });
}

fn note(entry: impl FnOnce() -> Entry) {
    ACTIVE.with(|active| {
        if let Some(tape) = active.borrow_mut().last_mut() {
            tape.push(entry());
        }
    });
}

/// The tensor ops a scope submitted, for gradients of what they computed.
///
/// ```
/// use weft::{DType, Tape, Tensor};
///
/// let rt = weft::Runtime::builder().split(1).build()?;
/// let lane = rt.lane(0)?;
/// let x = lane.upload(Tensor::from_vec(vec![1.0f64, 2.0, 3.0], &[3])?)?;
/// // L = Σ sin(x)²
/// let (loss, tape) = Tape::record(|| -> Result<_, weft::OpError> {
///     let s = lane.unary(weft::UnaryOp::Sin, &x)?;
///     let sq = lane.mul(&s, &s)?;
///     lane.sum_all(&sq)
/// });
/// let grad = tape.gradient(&lane, &loss?, &[&x])?; // 2 sin(x) cos(x)
/// let g = lane.download(&grad[0])?.wait()?;
/// assert!((g.as_slice::<f64>()?[0] - 2f64.sin()).abs() < 1e-12);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct Tape {
    entries: Vec<Entry>,
}

impl Tape {
    /// Runs `f`, taping every tensor op, program run and transfer that
    /// this thread submits on any lane meanwhile (ops other threads submit
    /// are not taped; a scope inside another tapes its ops on its own tape
    /// only). Returns what `f` returns and the tape.
    pub fn record<R>(f: impl FnOnce() -> R) -> (R, Tape) {
        /// Ends the scope even if `f` unwinds.
        struct Scope;
        impl Drop for Scope {
            fn drop(&mut self) {
                let _ = ACTIVE.try_with(|active| active.borrow_mut().pop());
            }
        }
        ACTIVE.with(|active| active.borrow_mut().push(Vec::new()));
        let scope = Scope;
        let result = f();
        let entries = ACTIVE
            .with(|active| active.borrow_mut().pop())
            .unwrap_or_default();
        std::mem::forget(scope);
        (result, Tape { entries })
    }

    /// How many submissions the tape holds.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the tape holds none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The program of what `loss` is computed from on this tape: its
    /// inputs are `wrt` first, in order, then every other tensor the taped
    /// ops read that they did not make (constants, as far as the gradient
    /// goes); its one output is `loss`. Returned with the handles to run
    /// it on, in its inputs' order.
    ///
    /// # Errors
    ///
    /// [`OpError::Tape`]: `loss` not made on the tape, a `wrt` tensor made
    /// on it (gradients are with respect to tensors it reads), the same
    /// `wrt` tensor twice, a transfer on the way (gradients do not cross
    /// places yet); [`OpError::Gradient`] for a step that does not record.
    pub fn program(
        &self,
        loss: &TensorHandle,
        wrt: &[&TensorHandle],
    ) -> Result<(Program, Vec<TensorHandle>), OpError> {
        let bad = |reason: String| OpError::Tape { reason };
        let made: HashMap<TensorId, usize> = self
            .entries
            .iter()
            .enumerate()
            .flat_map(|(i, e)| e.outputs().iter().map(move |h| (h.id(), i)))
            .collect();
        if !made.contains_key(&loss.id()) {
            return Err(bad(format!("the loss {loss:?} was not made on this tape")));
        }
        for (k, w) in wrt.iter().enumerate() {
            if made.contains_key(&w.id()) {
                return Err(bad(format!(
                    "{w:?} was made on this tape: gradients are with respect to tensors the \
                     taped ops read"
                )));
            }
            if wrt[..k].iter().any(|o| o.id() == w.id()) {
                return Err(bad(format!("{w:?} is asked for twice")));
            }
        }
        // The entries the loss depends on, found backwards from it.
        let mut needed = vec![false; self.entries.len()];
        let mut todo = vec![made[&loss.id()]];
        while let Some(i) = todo.pop() {
            if std::mem::replace(&mut needed[i], true) {
                continue;
            }
            for h in self.entries[i].inputs() {
                if let Some(&j) = made.get(&h.id()) {
                    todo.push(j);
                }
            }
        }
        let mut inputs: Vec<TensorHandle> = wrt.iter().map(|&h| h.clone()).collect();
        let mut failure: Option<OpError> = None;
        let program = Program::record(|p| {
            let mut values: HashMap<TensorId, Value> = HashMap::new();
            for h in &inputs {
                values.insert(h.id(), p.input(h.dtype(), h.shape()));
            }
            let mut leaves: HashSet<TensorId> = values.keys().copied().collect();
            for (entry, _) in self.entries.iter().zip(&needed).filter(|(_, &n)| n) {
                let mut args = Vec::with_capacity(entry.inputs().len());
                for h in entry.inputs() {
                    let v = match values.get(&h.id()) {
                        Some(&v) => v,
                        None => {
                            let v = p.input(h.dtype(), h.shape());
                            values.insert(h.id(), v);
                            leaves.insert(h.id());
                            inputs.push(h.clone());
                            v
                        }
                    };
                    args.push(v);
                }
                let results = match entry {
                    Entry::Op { op, .. } => p.apply_many(op.clone(), &args)?,
                    Entry::Program { program, .. } => p.inline(program, &args)?,
                    Entry::Transfer { input, output } => {
                        failure = Some(bad(format!(
                            "the loss depends on a transfer ({input:?} to {output:?}): \
                             gradients do not cross places yet"
                        )));
                        return Err(weft_engines::RecordError::NoOutput);
                    }
                };
                for (h, v) in entry.outputs().iter().zip(results) {
                    values.insert(h.id(), v);
                }
            }
            p.output(values[&loss.id()])
        });
        match (program, failure) {
            (Ok(program), _) => Ok((program, inputs)),
            (Err(_), Some(e)) => Err(e),
            (Err(e), None) => Err(weft_engines::GradError::from(e).into()),
        }
    }

    /// The gradient of `loss` (a real rank-0 tensor made on this tape)
    /// with respect to each of `wrt` (tensors the taped ops read), in
    /// order, each of its tensor's type and shape: the tape's
    /// [`Tape::program`], differentiated, run on `lane` as one op.
    ///
    /// # Errors
    ///
    /// As [`Tape::program`] and [`weft_engines::Program::gradient`]
    /// ([`OpError::Gradient`]), and as [`Lane::run_program`].
    pub fn gradient<E: TensorEngine>(
        &self,
        lane: &Lane<E>,
        loss: &TensorHandle,
        wrt: &[&TensorHandle],
    ) -> Result<Vec<TensorHandle>, OpError> {
        let (program, inputs) = self.program(loss, wrt)?;
        let positions: Vec<usize> = (0..wrt.len()).collect();
        let derived = program.gradient(0, &positions)?;
        let refs: Vec<&TensorHandle> = inputs.iter().collect();
        let mut outputs = lane.run_program(&derived, &refs)?;
        Ok(outputs.split_off(1))
    }
}
