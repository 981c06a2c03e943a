//! What every tensor engine offers the runtime: resident ops by id, host
//! copies in and out, frees, and a memory report. The runtime's lanes are
//! generic over it, so a CPU domain and a CUDA device get the same lanes,
//! handles, tickets and transfers. The types both backends share live
//! here: places, ids, errors and memory reports.

use std::fmt;

use crate::ops::TensorOp;
use crate::program::{last_uses, Program};
use crate::tensor::{DType, Data, Tensor, TensorError};

/// Where a tensor lives: a CPU domain or a CUDA device, by index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Place {
    /// CPU domain `i`.
    Cpu(usize),
    /// CUDA device `i` (its ordinal).
    Cuda(usize),
}

impl Place {
    /// The index within its kind.
    pub fn index(self) -> usize {
        match self {
            Place::Cpu(i) | Place::Cuda(i) => i,
        }
    }
}

/// A bare index names a CPU domain.
impl From<usize> for Place {
    fn from(domain: usize) -> Place {
        Place::Cpu(domain)
    }
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Place::Cpu(i) => write!(f, "CPU domain {i}"),
            Place::Cuda(i) => write!(f, "CUDA device {i}"),
        }
    }
}

/// A device call that failed: the driver's, cuBLAS's or NVRTC's word,
/// with the call that got it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("CUDA device {device}: {call} failed: {message}")]
pub struct DeviceError {
    /// The device's ordinal.
    pub device: usize,
    /// What was called.
    pub call: &'static str,
    /// What the library said.
    pub message: String,
    /// Whether the device ran out of memory (the op may succeed later,
    /// once tensors are freed).
    pub out_of_memory: bool,
}

/// A resident op could not run: an input is not resident, the op failed,
/// the engine does not implement it, or the device failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExecError {
    /// An input id names no resident tensor.
    #[error(transparent)]
    NotResident(#[from] NotResident),
    /// The op failed.
    #[error(transparent)]
    Tensor(#[from] TensorError),
    /// This engine does not implement the op for this element type.
    #[error(transparent)]
    Unsupported(#[from] Unsupported),
    /// A device call failed. The engine lives on, with its other tensors.
    #[error(transparent)]
    Device(#[from] DeviceError),
    /// A step of a program failed; the program's outputs are not made,
    /// its inputs are untouched.
    #[error("{program}, step {step} ({op}): {source}")]
    InProgram {
        /// The program's trace label (`program <label> (<n> ops)`).
        program: &'static str,
        /// The step's number.
        step: usize,
        /// The step's op.
        op: &'static str,
        /// Why it failed.
        source: Box<ExecError>,
    },
}

/// An op an engine does not implement for an element type. There is no
/// silent fallback to another engine: transfer the tensors to one that
/// implements it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{place} does not implement {op} for {dtype} tensors{}",
    detail(reason)
)]
pub struct Unsupported {
    /// The engine's place.
    pub place: Place,
    /// The op.
    pub op: &'static str,
    /// The element type.
    pub dtype: DType,
    /// What is missing, when it is narrower than the whole op.
    pub reason: Option<&'static str>,
}

fn detail(reason: &Option<&'static str>) -> String {
    reason.map(|r| format!(" ({r})")).unwrap_or_default()
}

/// Names one resident tensor for the life of its runtime. Ids are handed
/// out once and never reused, so a handle outliving its tensor can never
/// name another one: looking it up fails instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TensorId(pub u64);

impl TensorId {
    /// The top bit marks ids an engine hands out itself.
    const SCRATCH: u64 = 1 << 63;

    /// A fresh id for a tensor an engine makes for itself (a program's
    /// intermediate run step by step): process-unique, and never one the
    /// runtime hands out (those stay below `2^63`).
    pub fn scratch() -> TensorId {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        TensorId(Self::SCRATCH | NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
    }
}

/// A tensor id that names nothing in this store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("tensor {0:?} is not resident here (freed, never produced, or of another domain)")]
pub struct NotResident(pub TensorId);

/// Counters of an engine's buffer pool (the CPU engine's `BufferPool`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BufferStats {
    /// The byte cap (0: the pool is off).
    pub cap_bytes: usize,
    /// Bytes held for reuse now.
    pub pooled_bytes: usize,
    /// Most bytes ever held at once.
    pub peak_bytes: usize,
    /// Buffers held for reuse now.
    pub pooled_buffers: usize,
    /// Requests served from the pool.
    pub hits: u64,
    /// Requests that allocated.
    pub misses: u64,
    /// Freed buffers kept.
    pub kept: u64,
    /// Buffers let go: freed ones that keeping would pass the cap or
    /// that are smaller than the smallest class, and pooled ones let go
    /// by a trim.
    pub released: u64,
}

/// Counters of one of an engine's plan caches (compiled programs, einsum
/// plans): bounded, least recently used first out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Plans held now.
    pub entries: usize,
    /// The most it holds.
    pub capacity: usize,
    /// Lookups that found a plan.
    pub hits: u64,
    /// Lookups that compiled one.
    pub misses: u64,
    /// Plans let go to make room.
    pub evictions: u64,
}

/// What an engine holds in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EngineMemory {
    /// Resident tensors.
    pub tensors: usize,
    /// Bytes of their elements.
    pub tensor_bytes: usize,
    /// The engine's buffer pool (all zero for an engine without one).
    pub buffers: BufferStats,
    /// Its cache of compiled programs (all zero for an engine that runs
    /// programs step by step).
    pub programs: CacheStats,
    /// Its cache of einsum plans, keyed by subscripts, shapes and type.
    pub einsums: CacheStats,
    /// The runtime's cache of traced functions (an engine reports it
    /// empty; the runtime fills it in, and it is the same for all its
    /// lanes).
    pub functions: CacheStats,
}

/// A tensor engine as the runtime drives it. Every method runs on the
/// engine's actor thread; `lane` names the lane whose op is running, so an
/// engine that orders work per lane (a CUDA stream per lane) can.
pub trait TensorEngine: 'static {
    /// Whether the engine keeps per-lane state that
    /// [`TensorEngine::retire_lane`] frees; only then does a dropped lane
    /// cost the actor an op.
    const RETIRES_LANES: bool = false;

    /// Where the engine's tensors live.
    fn place(&self) -> Place;

    /// Runs `op` on the resident `inputs` and makes its results resident
    /// under the ids of `outputs` (already checked by [`TensorOp::infer`]).
    ///
    /// # Errors
    ///
    /// [`ExecError`].
    fn execute_into(
        &mut self,
        op: &TensorOp,
        inputs: &[TensorId],
        outputs: &[(TensorId, DType, &[usize])],
        lane: u64,
    ) -> Result<(), ExecError>;

    /// [`TensorEngine::execute_into`] with the resident tensor `donated`
    /// given up: it has the one output's type and shape, and no handle
    /// names it once the op has run (its caller gave the last one), so the
    /// engine may put the output in its memory instead of fresh memory,
    /// and frees it in any case. It may be one of `inputs` (an
    /// accumulation, `c ← α·a·b + β·c`), or not be resident at all (its
    /// producer has not run: the output is then fresh).
    ///
    /// The default frees it before the op when the op does not read it
    /// (so the memory is free for the output: a buffer pool or a
    /// stream-ordered allocator hands it out again), after the op when it
    /// does. The CPU engine puts the output in the very buffer, and
    /// accumulates a `gemm` or `axpby` into it in place.
    ///
    /// # Errors
    ///
    /// As [`TensorEngine::execute_into`]; `donated` is freed even then.
    fn execute_donating(
        &mut self,
        op: &TensorOp,
        inputs: &[TensorId],
        outputs: &[(TensorId, DType, &[usize])],
        donated: TensorId,
        lane: u64,
    ) -> Result<(), ExecError> {
        if inputs.contains(&donated) {
            execute_then_free(self, op, inputs, outputs, donated, lane)
        } else {
            self.free(donated);
            self.execute_into(op, inputs, outputs, lane)
        }
    }

    /// Runs `program` on the resident `inputs` (checked against its
    /// placeholders) and makes its outputs resident under `outputs`, in
    /// one call: the intermediates are the engine's own, with no id or
    /// handle outside it. The default runs it step by step through
    /// [`TensorEngine::execute_into`], the intermediates under ids of the
    /// engine's own ([`TensorId::scratch`]), each freed after its last
    /// use; an engine may compile it instead (the CPU engine does).
    ///
    /// The CUDA engine runs the default: every kernel of a run is enqueued
    /// on the lane's stream in one turn of the actor. A compiled program is
    /// also where CUDA graph capture belongs (a GPU's replay mechanism):
    /// capture the stepwise run on the lane's stream once per program
    /// structure, keep the graph with the plan, and relaunch it with the
    /// run's input and output buffers patched in
    /// (`cuGraphExecKernelNodeSetParams`); that needs intermediates
    /// allocated inside the capture (stream-ordered allocation nodes) and
    /// no host synchronisation between steps, both of which the stepwise
    /// run already keeps.
    ///
    /// # Errors
    ///
    /// [`ExecError::InProgram`] naming the step that failed. Nothing the
    /// program made is left resident; its inputs are untouched.
    fn run_program(
        &mut self,
        program: &Program,
        inputs: &[TensorId],
        outputs: &[TensorId],
        lane: u64,
    ) -> Result<(), ExecError>
    where
        Self: Sized,
    {
        run_stepwise(self, program, inputs, outputs, lane)
    }

    /// Makes a host tensor resident under `id`.
    ///
    /// # Errors
    ///
    /// [`ExecError::Device`] when a device cannot take it.
    fn upload(&mut self, id: TensorId, tensor: Tensor, lane: u64) -> Result<(), ExecError>;

    /// A host copy of the resident tensor `id`, complete when returned.
    ///
    /// # Errors
    ///
    /// [`ExecError::NotResident`], [`ExecError::Device`].
    fn download(&mut self, id: TensorId, lane: u64) -> Result<Tensor, ExecError>;

    /// Makes `sent`, the host copy another domain's transfer handed over,
    /// resident under `id`, and returns a host buffer for the sending
    /// domain's pool, if there is one to give: the transfer's swap, so
    /// that a stream of transfers from one domain to another does not
    /// drain the sender's pool and fill the receiver's. `copy`: copy the
    /// elements before keeping them (the domains are on different NUMA
    /// nodes, and the copy's pages must be first touched on this one).
    ///
    /// The default uploads `sent` (a copy of it if `copy`) and gives
    /// nothing back.
    ///
    /// # Errors
    ///
    /// As [`TensorEngine::upload`].
    fn take_transfer(
        &mut self,
        id: TensorId,
        sent: Tensor,
        copy: bool,
        lane: u64,
    ) -> Result<Option<Data>, ExecError> {
        let kept = match copy {
            true => sent.clone(),
            false => sent,
        };
        self.upload(id, kept, lane)?;
        Ok(None)
    }

    /// Keeps `data`, a host buffer another domain gave back (see
    /// [`TensorEngine::take_transfer`]), for reuse. The default lets it go.
    fn keep_buffer(&mut self, data: Data) {
        drop(data);
    }

    /// Frees the resident tensor `id`; whether it was resident.
    fn free(&mut self, id: TensorId) -> bool;

    /// Returns once resident tensor `id` holds its values: at once for an
    /// engine whose ops finish when they return (the CPU's); after the
    /// device has run the work that wrote it, for one that only enqueues.
    ///
    /// # Errors
    ///
    /// [`NotResident`], or a device failure.
    fn sync(&mut self, id: TensorId) -> Result<(), ExecError>;

    /// Lane `lane` is gone (its last handle dropped), and every op it
    /// submitted has run: per-lane state (a CUDA stream and its cuBLAS
    /// handle) can go. Work still in flight on the device is unaffected.
    fn retire_lane(&mut self, lane: u64) {
        let _ = lane;
    }

    /// What the engine holds.
    fn memory(&self) -> EngineMemory;

    /// Lets go of the memory the engine keeps for reuse (its buffer pool;
    /// never a resident tensor) and returns the bytes let go. An engine
    /// that keeps none returns 0.
    fn trim(&mut self) -> usize {
        0
    }
}

/// [`TensorEngine::execute_into`], then frees `donated`: a donation whose
/// op reads the donated tensor as an operand (the output needs memory of
/// its own).
pub fn execute_then_free<E: TensorEngine + ?Sized>(
    engine: &mut E,
    op: &TensorOp,
    inputs: &[TensorId],
    outputs: &[(TensorId, DType, &[usize])],
    donated: TensorId,
    lane: u64,
) -> Result<(), ExecError> {
    let result = engine.execute_into(op, inputs, outputs, lane);
    engine.free(donated);
    result
}

/// Runs `program` step by step through `engine`'s
/// [`TensorEngine::execute_into`]: the default of
/// [`TensorEngine::run_program`].
pub fn run_stepwise<E: TensorEngine>(
    engine: &mut E,
    program: &Program,
    inputs: &[TensorId],
    outputs: &[TensorId],
    lane: u64,
) -> Result<(), ExecError> {
    let metas = program.metas();
    let mut ids: Vec<Option<TensorId>> = vec![None; metas.len()];
    for (&value, &id) in program.inputs().iter().zip(inputs) {
        ids[value] = Some(id);
    }
    for (&value, &id) in program.outputs().iter().zip(outputs) {
        ids[value] = Some(id);
    }
    let keep: Vec<bool> = (0..metas.len())
        .map(|v| program.inputs().contains(&v) || program.outputs().contains(&v))
        .collect();
    let last = last_uses(program);
    let mut scratch: Vec<TensorId> = Vec::new();
    let mut outcome = Ok(());
    'steps: for (i, step) in program.steps().iter().enumerate() {
        let results = step.first_result..step.first_result + step.results;
        for v in results.clone() {
            if ids[v].is_none() {
                let id = TensorId::scratch();
                scratch.push(id);
                ids[v] = Some(id);
            }
        }
        let args: smallvec::SmallVec<[TensorId; 4]> =
            step.args.iter().map(|&v| ids[v].expect("made")).collect();
        let outs: smallvec::SmallVec<[(TensorId, DType, &[usize]); 2]> = results
            .clone()
            .map(|v| (ids[v].expect("named"), metas[v].dtype, &metas[v].shape[..]))
            .collect();
        if let Err(source) = engine.execute_into(&step.op, &args, &outs, lane) {
            outcome = Err(ExecError::InProgram {
                program: program.trace_label(),
                step: i,
                op: step.op.name(),
                source: Box::new(source),
            });
            break 'steps;
        }
        // Intermediates no later step reads go now.
        for v in step.args.iter().copied().chain(results) {
            if !keep[v] && last[v].is_none_or(|l| l <= i) {
                if let Some(id) = ids[v].take() {
                    engine.free(id);
                }
            }
        }
    }
    if outcome.is_err() {
        for id in scratch.into_iter().chain(outputs.iter().copied()) {
            engine.free(id);
        }
    }
    outcome
}
