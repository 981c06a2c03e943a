//! The eager tape: tensor ops submitted while a [`Tape::record`] scope runs
//! are taped as they are submitted, and [`Tape::gradient`] turns the part
//! of the tape a loss depends on into a program, derives its gradient
//! ([`weft_core::Program::gradient`]) and runs that as one op.
//!
//! Taping costs the submitting thread a clone of each op and of its
//! handles; the ops run as they always do. The derived program recomputes
//! the forward steps it needs (the rules read forward values) in the same
//! message as the backward ones.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

use weft_core::{
    DType, GradError, Place, Program, Scalar, TensorEngine, TensorId, TensorOp, Value,
};

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

    /// Where the entry ran: its outputs' place.
    fn place(&self) -> Place {
        self.outputs()[0].place()
    }

    fn inputs(&self) -> &[TensorHandle] {
        match self {
            Entry::Op { inputs, .. } | Entry::Program { inputs, .. } => inputs,
            Entry::Transfer { input, .. } => std::slice::from_ref(input),
        }
    }
}

#[cfg(not(weft_loom))]
thread_local! {
    /// The tapes of the scopes running on this thread, innermost last.
    static ACTIVE: RefCell<Vec<Vec<Entry>>> = const { RefCell::new(Vec::new()) };
}

// Under loom every model thread runs on one OS thread: the tapes are
// per loom thread.
#[cfg(weft_loom)]
loom::thread_local! {
    static ACTIVE: RefCell<Vec<Vec<Entry>>> = RefCell::new(Vec::new());
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
/// use weft::{prelude::*, program::Tape};
///
/// let rt = weft::Runtime::builder().split(1).build()?;
/// let lane = rt.lane(0)?;
/// let x = lane.upload(Tensor::from_vec(vec![1.0f64, 2.0, 3.0], &[3])?)?;
/// // L = Σ sin(x)²
/// let (loss, tape) = Tape::record(|| -> Result<_, weft::OpError> {
///     let s = lane.unary(weft::ops::UnaryOp::Sin, &x)?;
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
    /// `wrt` tensor twice, a transfer on the way (a program runs on one
    /// place; [`Tape::gradient`] crosses places); [`OpError::Gradient`]
    /// for a step that does not record.
    pub fn program(
        &self,
        loss: &TensorHandle,
        wrt: &[&TensorHandle],
    ) -> Result<(Program, Vec<TensorHandle>), OpError> {
        let needed = self.needed(loss, wrt)?;
        if let Some(Entry::Transfer { input, output }) = needed
            .iter()
            .map(|&i| &self.entries[i])
            .find(|e| matches!(e, Entry::Transfer { .. }))
        {
            return Err(OpError::Tape {
                reason: format!(
                    "the loss depends on a transfer ({input:?} to {output:?}): a program runs \
                     on one place (Tape::gradient crosses places)"
                ),
            });
        }
        let first: Vec<TensorHandle> = wrt.iter().map(|&h| h.clone()).collect();
        self.segment_program(&needed, first, std::slice::from_ref(loss))
    }

    /// The gradient of `loss` (a real rank-0 tensor made on this tape)
    /// with respect to each of `wrt` (tensors the taped ops read), in
    /// order, each of its tensor's type, shape and place.
    ///
    /// The taped steps the loss depends on are cut into runs of steps on
    /// one place, split at transfers. Walking them backwards, each run is
    /// made a program, its vector-Jacobian product derived
    /// ([`weft_core::Program::vjp`]) and run as one op on its place
    /// (on `lane` when that is its place, else on a lane into it opened
    /// from `lane`, as transfers are), and a transfer's backward is the
    /// reverse transfer of its output's cotangent. Without transfers that
    /// is one program, run on `lane`.
    ///
    /// # Errors
    ///
    /// As [`Tape::program`] (but for transfers), a loss that is not a real
    /// scalar ([`OpError::Gradient`]), and as
    /// [`weft_core::Program::gradient`] and [`Lane::run_program`].
    pub fn gradient<E: TensorEngine>(
        &self,
        lane: &Lane<E>,
        loss: &TensorHandle,
        wrt: &[&TensorHandle],
    ) -> Result<Vec<TensorHandle>, OpError> {
        let needed = self.needed(loss, wrt)?;
        if !loss.dtype().is_float() || !loss.shape().is_empty() {
            return Err(GradError::NotScalar {
                index: 0,
                dtype: loss.dtype(),
                shape: loss.shape().to_vec(),
            }
            .into());
        }
        if let Some((index, w)) = wrt.iter().enumerate().find(|(_, w)| !w.dtype().is_field()) {
            let dtype = w.dtype();
            return Err(GradError::NotDifferentiable { index, dtype }.into());
        }
        // The tensors a gradient reaches: `wrt` and what is computed from
        // them, of float and complex types.
        let mut reached: HashSet<TensorId> = wrt.iter().map(|h| h.id()).collect();
        for &i in &needed {
            let entry = &self.entries[i];
            if entry.inputs().iter().any(|h| reached.contains(&h.id())) {
                let outs = entry.outputs().iter().filter(|h| h.dtype().is_field());
                reached.extend(outs.map(TensorHandle::id));
            }
        }
        // Runs of steps on one place, in tape order (so each reads only
        // what runs before it made); a transfer is a run of its own.
        let mut runs: Vec<Vec<usize>> = Vec::new();
        for &i in &needed {
            let entry = &self.entries[i];
            let joins = runs.last().is_some_and(|run| {
                let last = &self.entries[run[0]];
                !matches!(entry, Entry::Transfer { .. })
                    && !matches!(last, Entry::Transfer { .. })
                    && entry.place() == last.place()
            });
            match runs.last_mut() {
                Some(run) if joins => run.push(i),
                _ => runs.push(vec![i]),
            }
        }
        let lanes = Places { lane };
        // The cotangents each tensor has got so far, on its place.
        let mut cot: HashMap<TensorId, Vec<TensorHandle>> = HashMap::new();
        let one = lanes
            .at(loss.place())?
            .full(loss.dtype(), Scalar::Real(1.0))?;
        cot.insert(loss.id(), vec![one]);
        for run in runs.iter().rev() {
            if let [i] = run[..] {
                if let Entry::Transfer { input, output } = &self.entries[i] {
                    if let Some(cs) = cot.remove(&output.id()) {
                        let at = lanes.at(output.place())?;
                        let c = at.sum(cs)?;
                        let back = at.transfer(&c, input.place())?;
                        cot.entry(input.id()).or_default().push(back);
                    }
                    continue;
                }
            }
            let made = run.iter().flat_map(|&i| self.entries[i].outputs());
            let mut outputs = Vec::new();
            let mut cotangents = Vec::new();
            for h in made {
                for c in cot.remove(&h.id()).unwrap_or_default() {
                    outputs.push(h.clone());
                    cotangents.push(c);
                }
            }
            if outputs.is_empty() {
                continue;
            }
            let (program, inputs) = self.segment_program(run, Vec::new(), &outputs)?;
            let wanted: Vec<usize> = (0..inputs.len())
                .filter(|&k| reached.contains(&inputs[k].id()))
                .collect();
            if wanted.is_empty() {
                continue;
            }
            let seeds: Vec<usize> = (0..outputs.len()).collect();
            let derived = program.vjp(&seeds, &wanted)?;
            let args: Vec<&TensorHandle> = inputs.iter().chain(&cotangents).collect();
            let mut results = lanes.at(outputs[0].place())?.run(&derived, &args)?;
            let pulled = results.split_off(outputs.len());
            for (&k, g) in wanted.iter().zip(pulled) {
                cot.entry(inputs[k].id()).or_default().push(g);
            }
        }
        wrt.iter()
            .map(|w| {
                let at = lanes.at(w.place())?;
                match cot.remove(&w.id()) {
                    Some(cs) => at.sum(cs),
                    // The loss does not depend on it.
                    None => at.zeros(w),
                }
            })
            .collect()
    }

    /// The entries `loss` depends on, in tape order, after checking `loss`
    /// and `wrt`.
    fn needed(&self, loss: &TensorHandle, wrt: &[&TensorHandle]) -> Result<Vec<usize>, OpError> {
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
        // Found backwards from the loss.
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
        Ok((0..needed.len()).filter(|&i| needed[i]).collect())
    }

    /// The program of the entries `run` (in tape order, none a transfer):
    /// its inputs are `first`, then every other tensor the entries read
    /// that they did not make, returned with them; its outputs are
    /// `outputs`, made by the entries.
    fn segment_program(
        &self,
        run: &[usize],
        mut inputs: Vec<TensorHandle>,
        outputs: &[TensorHandle],
    ) -> Result<(Program, Vec<TensorHandle>), OpError> {
        let program = Program::record(|p| {
            let mut values: HashMap<TensorId, Value> = HashMap::new();
            for h in &inputs {
                values.insert(h.id(), p.input(h.dtype(), h.shape()));
            }
            for entry in run.iter().map(|&i| &self.entries[i]) {
                let mut args = Vec::with_capacity(entry.inputs().len());
                for h in entry.inputs() {
                    let v = match values.get(&h.id()) {
                        Some(&v) => v,
                        None => {
                            let v = p.input(h.dtype(), h.shape());
                            values.insert(h.id(), v);
                            inputs.push(h.clone());
                            v
                        }
                    };
                    args.push(v);
                }
                let results = match entry {
                    Entry::Op { op, .. } => p.record_many(op.clone(), &args)?,
                    Entry::Program { program, .. } => p.inline(program, &args)?,
                    Entry::Transfer { .. } => unreachable!("a run holds no transfer"),
                };
                for (h, v) in entry.outputs().iter().zip(results) {
                    values.insert(h.id(), v);
                }
            }
            for h in outputs {
                p.output(values[&h.id()])?;
            }
            Ok::<(), weft_core::RecordError>(())
        })
        .map_err(GradError::from)?;
        Ok((program, inputs))
    }
}

/// The lanes a gradient's steps run on: `lane` for its own place, lanes
/// opened from it (those its transfers use) for the others.
struct Places<'a, E: TensorEngine> {
    lane: &'a Lane<E>,
}

impl<E: TensorEngine> Places<'_, E> {
    fn at(&self, place: Place) -> Result<Box<dyn PlaceLane>, OpError> {
        if place == self.lane.place() {
            return Ok(Box::new(self.lane.clone()));
        }
        let closed = || {
            OpError::Closed(weft_actors::ActorClosed {
                actor: self.lane.tensors().actor_name(place),
            })
        };
        let table = self.lane.table().ok_or_else(closed)?;
        let lanes = self.lane.transfer_lanes();
        match place {
            Place::Cpu(d) => Ok(Box::new(lanes.cpu(d, &table)?)),
            #[cfg(feature = "cuda")]
            Place::Cuda(d) => Ok(Box::new(lanes.cuda(d, &table)?)),
            #[cfg(not(feature = "cuda"))]
            Place::Cuda(device) => Err(crate::error::PlaceError::NoSuchDevice {
                device,
                running: Vec::new(),
            }
            .into()),
        }
    }
}

/// What a gradient asks of a lane, whatever its engine.
trait PlaceLane {
    fn run(
        &self,
        program: &Program,
        inputs: &[&TensorHandle],
    ) -> Result<Vec<TensorHandle>, OpError>;
    fn transfer(&self, handle: &TensorHandle, to: Place) -> Result<TensorHandle, OpError>;
    fn full(&self, dtype: DType, value: Scalar) -> Result<TensorHandle, OpError>;
    fn zeros(&self, like: &TensorHandle) -> Result<TensorHandle, OpError>;
    /// The sum of `handles` (at least one).
    fn sum(&self, handles: Vec<TensorHandle>) -> Result<TensorHandle, OpError>;
}

/// A tensor of `shape` filled with `value`, made on `lane`.
fn filled<E: TensorEngine>(
    lane: &Lane<E>,
    dtype: DType,
    shape: Vec<usize>,
    value: Scalar,
) -> Result<TensorHandle, OpError> {
    Lane::apply(
        lane,
        TensorOp::Full {
            dtype,
            shape,
            value,
        },
        &[],
    )
}

impl<E: TensorEngine> PlaceLane for Lane<E> {
    fn run(
        &self,
        program: &Program,
        inputs: &[&TensorHandle],
    ) -> Result<Vec<TensorHandle>, OpError> {
        Lane::run_program(self, program, inputs)
    }

    fn transfer(&self, handle: &TensorHandle, to: Place) -> Result<TensorHandle, OpError> {
        Lane::transfer(self, handle, to)
    }

    fn full(&self, dtype: DType, value: Scalar) -> Result<TensorHandle, OpError> {
        filled(self, dtype, Vec::new(), value)
    }

    fn zeros(&self, like: &TensorHandle) -> Result<TensorHandle, OpError> {
        filled(self, like.dtype(), like.shape().to_vec(), Scalar::Real(0.0))
    }

    fn sum(&self, handles: Vec<TensorHandle>) -> Result<TensorHandle, OpError> {
        let mut handles = handles.into_iter();
        let first = handles.next().expect("a cotangent");
        let add = || TensorOp::Binary(weft_core::BinaryOp::Add);
        handles.try_fold(first, |acc, h| Lane::apply(self, add(), &[&acc, &h]))
    }
}
