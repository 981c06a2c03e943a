//! The engine's [`TensorEngine`] impl: every op of the vocabulary matched
//! to the device's kernels, library calls and host checks, and what the
//! device does not implement ([`missing`]).

use std::collections::HashMap;

use crate::exec::{Exec, Value};
use crate::index::HostIndex;
use crate::launch::Launcher;
use crate::memory::{host_bytes_mut, pool_stats, PoolAttr, PoolAttributes};
use weft_core::layout::View;
use weft_core::ops::{
    broadcast_in_dim_view, broadcast_view, diagonal_view, permute_view, reverse_view, slice_view,
    BinaryOp, Linalg, TensorOp,
};
use weft_core::{DType, Data, Tensor, TensorError};
use weft_core::{
    DeviceError, EngineMemory, ExecError, NotResident, Place, TensorEngine, TensorId, Unsupported,
};
use weft_cpu::HostRun;

use crate::cube::{CubeKernel, CubeLaunch};
use crate::{device_error, CudaEngine, DeviceTensor};
use crate::{kernels, launch, linalg, memory};

impl CudaEngine {
    /// Whether the real types' unary maps run as the source's switch
    /// kernel (`true`) or as their cubecl kernels (`false`, the default):
    /// for a benchmark of one against the other (`cuda_bench`).
    pub fn use_source_maps(&mut self, on: bool) {
        self.kernels.source_maps = on;
    }

    /// Runs the cubecl kernel `K` on resident `inputs` and `scalars` into
    /// new tensors `outputs` (made resident under their ids), on `lane`'s
    /// stream, ordered after the inputs' writes like every launch. The
    /// kernel is compiled on its first launch on this device for the
    /// element type (cubecl to CUDA, NVRTC to the device's image) and kept.
    ///
    /// # Errors
    ///
    /// [`TensorError::Arity`] for counts other than `K`'s signature;
    /// [`ExecError::Device`] naming the kernel when cubecl or NVRTC cannot
    /// compile it (`call`: `cubecl`, `nvrtcCompileProgram`) or the launch
    /// is refused or fails; nothing is made resident then.
    pub fn launch_cube<K: CubeKernel>(
        &mut self,
        inputs: &[TensorId],
        scalars: &[f64],
        outputs: &[(TensorId, DType, &[usize])],
        lane: u64,
    ) -> Result<(), ExecError> {
        self.deferred_error()?;
        K::SIGNATURE.check(K::NAME, inputs.len(), outputs.len(), scalars.len())?;
        let dtype = outputs.first().map_or(DType::F32, |o| o.1);
        self.lane(lane)?;
        let made = self.with_exec(lane, |mut x, store| -> Result<_, ExecError> {
            let reads = inputs
                .iter()
                .map(|id| store.get(id).ok_or(NotResident(*id)))
                .collect::<Result<Vec<&DeviceTensor>, _>>()?;
            let mut outs = outputs
                .iter()
                .map(|&(_, dtype, shape)| x.alloc(dtype, shape))
                .collect::<Result<Vec<DeviceTensor>, _>>()?;
            let source = || crate::cube::cube_source_cached::<K>(dtype);
            x.launch.cube(
                crate::cube::key::<K>(dtype),
                source,
                &reads,
                &mut outs,
                scalars,
            )?;
            Ok(outs)
        })?;
        for (&(id, ..), tensor) in outputs.iter().zip(made) {
            self.insert(id, tensor);
        }
        Ok(())
    }
}

impl CudaEngine {
    /// Refuses what an integer op cannot compute before anything is
    /// launched, as the CPU does: a zero divisor of `floor_div` or `rem`
    /// ([`TensorError::DivisionByZero`], naming its index), a negative
    /// exponent of `pow`. A divisor (exponent) tensor is read back to the
    /// host for this: one synchronous copy of that operand, for these
    /// three ops of integer tensors only.
    pub(crate) fn check_integer_operands(
        &mut self,
        op: &TensorOp,
        inputs: &[TensorId],
        lane: u64,
    ) -> Result<(), ExecError> {
        let (b, divisor) = match (op, inputs) {
            (TensorOp::Binary(b), [_, rhs]) => (*b, Err(*rhs)),
            (
                TensorOp::BinaryScalar {
                    op: b,
                    value,
                    scalar_first,
                },
                [x],
            ) => (*b, if *scalar_first { Err(*x) } else { Ok(*value) }),
            _ => return Ok(()),
        };
        let x = self.store.get(&inputs[0]).ok_or(NotResident(inputs[0]))?;
        if !x.dtype.is_integer() || !matches!(b, BinaryOp::FloorDiv | BinaryOp::Rem | BinaryOp::Pow)
        {
            return Ok(());
        }
        let dtype = x.dtype;
        let host = match divisor {
            Ok(value) => TensorOp::Full {
                dtype,
                shape: Vec::new(),
                value,
            }
            .run(&[], 1)?
            .remove(0),
            Err(id) => TensorEngine::download(self, id, lane)?,
        };
        Ok(weft_core::ops::check_integer_operands(b, &host)?)
    }

    /// Reads an indexing op's index operand back to the host (one
    /// synchronous copy of it) and checks it there as the CPU does:
    /// indices against the axis, starts clamped, a mask's count.
    pub(crate) fn host_index(
        &mut self,
        op: &TensorOp,
        inputs: &[TensorId],
        lane: u64,
    ) -> Result<HostIndex, ExecError> {
        let read = |engine: &mut Self, at: usize| -> Result<Tensor, ExecError> {
            let id = *inputs.get(at).ok_or_else(|| TensorError::Arity {
                op: op.name(),
                expected: at + 1,
                got: inputs.len(),
            })?;
            TensorEngine::download(engine, id, lane)
        };
        let shape = |engine: &Self, at: usize| -> Result<Vec<usize>, ExecError> {
            let id = inputs[at];
            Ok(engine.store.get(&id).ok_or(NotResident(id))?.shape.clone())
        };
        Ok(match op {
            TensorOp::Gather { axis } | TensorOp::Scatter { axis, .. } => {
                let extent = shape(self, 0)?[*axis];
                let name = op.name();
                let at = weft_core::ops::positions(name, &read(self, 1)?, *axis, extent)?;
                match op {
                    TensorOp::Gather { .. } => HostIndex::Positions(at),
                    _ => HostIndex::Targets(kernels::Targets::group(&at)),
                }
            }
            TensorOp::Compress { len } => {
                HostIndex::Positions(weft_core::ops::mask_positions(&read(self, 1)?, *len)?)
            }
            TensorOp::DynamicSlice { sizes } => {
                let x = shape(self, 0)?;
                HostIndex::Starts(weft_core::ops::clamped_starts(&read(self, 1)?, &x, sizes)?)
            }
            TensorOp::DynamicUpdateSlice => {
                let (x, update) = (shape(self, 0)?, shape(self, 1)?);
                HostIndex::Starts(weft_core::ops::clamped_starts(
                    &read(self, 2)?,
                    &x,
                    &update,
                )?)
            }
            _ => HostIndex::None,
        })
    }

    /// The ops with several outputs: the decompositions QR, SVD and eigh.
    pub(crate) fn decompose(
        &mut self,
        op: &TensorOp,
        inputs: &[TensorId],
        outputs: &[(TensorId, DType, &[usize])],
        lane: u64,
    ) -> Result<(), ExecError> {
        let a = *inputs.first().ok_or(TensorError::Arity {
            op: op.name(),
            expected: 1,
            got: 0,
        })?;
        let (dtype, empty) = {
            let t = self.store.get(&a).ok_or(NotResident(a))?;
            (t.dtype, t.is_empty())
        };
        let which = match op {
            TensorOp::Linalg(which @ (Linalg::Qr | Linalg::Svd | Linalg::Eigh))
                if missing(op, dtype).is_none() =>
            {
                *which
            }
            _ => {
                let reason = missing(op, dtype).unwrap_or("ops with several outputs");
                return Err(self.unsupported(op.name(), dtype, Some(reason)));
            }
        };
        if empty {
            // No element in, none out: every output is empty.
            let stream = self.lane(lane)?.stream.clone();
            for &(id, out_dtype, shape) in outputs {
                let t = memory::alloc(&stream, &self.events, self.info.ordinal, out_dtype, shape)?;
                self.insert(id, t);
            }
            return Ok(());
        }
        self.solver(lane)?;
        let made = self.with_exec(lane, |mut x, store| {
            let a = store.get(&a).ok_or(NotResident(a))?;
            match which {
                Linalg::Eigh => x.eigh(a),
                Linalg::Qr => x.qr(a),
                _ => x.svd(a),
            }
        })?;
        match made {
            Err(linalg::Failed(why)) => Err(self.host_error(op, inputs, lane, why)),
            Ok(tensors) => {
                for (&(id, out_dtype, shape), t) in outputs.iter().zip(tensors) {
                    debug_assert_eq!((t.dtype, &t.shape[..]), (out_dtype, shape));
                    self.insert(id, t);
                }
                Ok(())
            }
        }
    }

    /// Runs `f` with the op methods on lane `lane`'s stream (which
    /// exists: the caller made it) and the resident tensors, borrowed
    /// apart.
    pub(crate) fn with_exec<R>(
        &mut self,
        lane: u64,
        f: impl for<'a> FnOnce(Exec<'a>, &'a HashMap<TensorId, DeviceTensor>) -> R,
    ) -> R {
        let CudaEngine {
            info,
            ctx,
            lanes,
            store,
            kernels,
            events,
            ..
        } = self;
        let lane = &lanes[&lane];
        let x = Exec {
            launch: Launcher {
                device: info.ordinal,
                arch: info.compute_capability,
                ctx,
                stream: &lane.stream,
                events,
                kernels,
            },
            blas: lane.blas.as_ref(),
            solver: lane.solver.as_ref(),
        };
        f(x, store)
    }

    /// The error of an op the device found failed (`why`): the CPU's own,
    /// from the op rerun on host copies of its inputs, so that both places
    /// name the same entry or reason; `why` itself if the host's run
    /// succeeds where the device's did not (a matrix at the edge of
    /// positive definiteness, say).
    pub(crate) fn host_error(
        &mut self,
        op: &TensorOp,
        inputs: &[TensorId],
        lane: u64,
        why: String,
    ) -> ExecError {
        let mut host = Vec::with_capacity(inputs.len());
        for &id in inputs {
            match TensorEngine::download(self, id, lane) {
                Ok(t) => host.push(t),
                Err(e) => return e,
            }
        }
        let refs: Vec<&Tensor> = host.iter().collect();
        match op.run(&refs, 1) {
            Err(e) => e.into(),
            Ok(_) => TensorError::Factorization {
                op: op.name(),
                reason: why,
            }
            .into(),
        }
    }

    /// Reports an error a drop recorded since the last call (a free that
    /// failed, say): it surfaces on the next op instead of being lost.
    pub(crate) fn deferred_error(&self) -> Result<(), DeviceError> {
        self.ctx
            .check_err()
            .map_err(|e| device_error(self.info.ordinal, "an earlier release", e))
    }

    pub(crate) fn insert(&mut self, id: TensorId, tensor: DeviceTensor) {
        self.bytes += tensor.bytes();
        if let Some(old) = self.store.insert(id, tensor) {
            self.bytes -= old.bytes();
        }
    }

    pub(crate) fn unsupported(
        &self,
        op: &'static str,
        dtype: DType,
        reason: Option<&'static str>,
    ) -> ExecError {
        ExecError::Unsupported(Unsupported {
            place: Place::Cuda(self.info.ordinal),
            op,
            dtype,
            reason,
        })
    }
}

/// Which input's element type the kernels of `op` are of, the one
/// [`missing`] is asked about: the first, but for a select's (its mask is
/// `bool` whatever its sources are).
pub fn data_input(op: &TensorOp) -> usize {
    usize::from(matches!(op, TensorOp::Select))
}

/// Why the CUDA engine cannot run `op` on `dtype` tensors (its inputs'
/// type, or the type it creates), if it cannot: the reason its
/// [`Unsupported`] errors give, and the CUDA column of the coverage table.
/// There is no silent fallback: transfer the tensors to a CPU domain.
pub fn missing(op: &TensorOp, dtype: DType) -> Option<&'static str> {
    // Products are of floats and complexes here (as on the CPU); integer
    // and bool tensors have every other op the device has.
    let exact = !dtype.is_field();
    match op {
        TensorOp::Kernel(k) if k.run.downcast_ref::<CubeLaunch>().is_none() => {
            Some("a kernel of another engine")
        }
        TensorOp::Kernel(_) => None,
        TensorOp::Linalg(_) if exact => Some("decompositions are of float and complex matrices"),
        TensorOp::Linalg(_) => None,
        TensorOp::Matmul
        | TensorOp::Gemm { .. }
        | TensorOp::Axpby { .. }
        | TensorOp::Dot { .. }
        | TensorOp::Einsum(_)
            if exact =>
        {
            Some("no integer or bool kernel yet")
        }
        TensorOp::Binary(_)
        | TensorOp::BinaryScalar { .. }
        | TensorOp::Unary(_)
        | TensorOp::Reduce { .. }
        | TensorOp::Full { .. }
        | TensorOp::Arange { .. }
        | TensorOp::Eye { .. }
        | TensorOp::Reshape(_)
        | TensorOp::Permute(_)
        | TensorOp::Slice(_)
        | TensorOp::Reverse(_)
        | TensorOp::BroadcastTo(_)
        | TensorOp::BroadcastInDim { .. }
        | TensorOp::Diagonal { .. }
        | TensorOp::DiagEmbed { .. }
        | TensorOp::Concatenate { .. }
        | TensorOp::Pad { .. }
        | TensorOp::Gather { .. }
        | TensorOp::Scatter { .. }
        | TensorOp::DynamicSlice { .. }
        | TensorOp::DynamicUpdateSlice
        | TensorOp::Compress { .. }
        | TensorOp::ClampBetween
        | TensorOp::Compare(_)
        | TensorOp::Select
        | TensorOp::Clamp { .. }
        | TensorOp::Cast(_)
        | TensorOp::Triangle { .. }
        | TensorOp::Matmul
        | TensorOp::Gemm { .. }
        | TensorOp::Axpby { .. }
        | TensorOp::Dot { .. }
        | TensorOp::Random { .. }
        | TensorOp::ArgReduce { .. }
        | TensorOp::Einsum(_) => None,
    }
}

impl TensorEngine for CudaEngine {
    const RETIRES_LANES: bool = true;

    fn place(&self) -> Place {
        Place::Cuda(self.info.ordinal)
    }

    fn execute_into(
        &mut self,
        op: &TensorOp,
        inputs: &[TensorId],
        outputs: &[(TensorId, DType, &[usize])],
        lane: u64,
    ) -> Result<(), ExecError> {
        self.deferred_error()?;
        if let TensorOp::Kernel(k) = op {
            // A cubecl kernel launches itself (its type is in `launch`).
            let launch = k.run.downcast_ref::<CubeLaunch>();
            let launch = launch.ok_or(TensorError::ForeignKernel { kernel: k.name })?;
            return (launch.0)(self, inputs, &k.scalars, outputs, lane);
        }
        let place = self.place();
        let (out_id, out_dtype, out_shape) = match outputs {
            [one] => *one,
            _ => return self.decompose(op, inputs, outputs, lane),
        };
        // Before the empty-output answer below: an index out of range is
        // an error even when nothing would be written.
        let host_index = self.host_index(op, inputs, lane)?;
        if out_shape.contains(&0) {
            // No element: the shape alone is the answer, whatever the op
            // (the vocabulary inferred it), and no kernel walks extents
            // that a shape with no element may take to any size.
            for id in inputs {
                self.store.get(id).ok_or(NotResident(*id))?;
            }
            let lane = self.lane(lane)?.stream.clone();
            let empty =
                memory::alloc(&lane, &self.events, self.info.ordinal, out_dtype, out_shape)?;
            self.insert(out_id, empty);
            return Ok(());
        }
        if let TensorOp::Random { .. } = op {
            // The host's generator, so the same seed gives the same data
            // in every place; then one upload.
            let TensorOp::Random {
                dtype,
                shape,
                distribution,
                seed,
            } = op
            else {
                unreachable!("matched above")
            };
            let made = Tensor::random(*dtype, shape, *distribution, *seed)?;
            let out = self.copy_in(&made)?;
            self.insert(out_id, out);
            return Ok(());
        }
        self.check_integer_operands(op, inputs, lane)?;
        if matches!(
            op,
            TensorOp::Matmul | TensorOp::Einsum(_) | TensorOp::Gemm { .. }
        ) {
            self.blas(lane)?;
        } else if let TensorOp::Linalg(Linalg::Cholesky | Linalg::Solve) = op {
            self.solver(lane)?;
        } else {
            self.lane(lane)?;
        }
        // A decomposition the device found failed: rerun on the host for
        // the CPU's own error (below).
        let mut failed: Option<linalg::Failed> = None;
        let result = self.with_exec(lane, |mut x, store| -> Result<DeviceTensor, ExecError> {
            let mut resident: smallvec::SmallVec<[&DeviceTensor; 4]> = smallvec::SmallVec::new();
            for id in inputs {
                resident.push(store.get(id).ok_or(NotResident(*id))?);
            }
            let input_dtype = resident.get(data_input(op)).map_or(out_dtype, |t| t.dtype);
            let unsupported = |reason| {
                ExecError::Unsupported(Unsupported {
                    place,
                    op: op.name(),
                    dtype: input_dtype,
                    reason,
                })
            };
            if let Some(reason) = missing(op, input_dtype) {
                return Err(unsupported(Some(reason)));
            }
            let gather =
                |x: &mut Exec<'_>, view: Result<View, TensorError>| x.gather(resident[0], &view?);
            // Every op of the vocabulary, each with what it does here.
            Ok(match op {
                TensorOp::Kernel(_) => unreachable!("launched above"),
                TensorOp::Binary(b) => x.binary(*b, resident[0], resident[1], out_shape)?,
                TensorOp::BinaryScalar {
                    op: b,
                    value,
                    scalar_first,
                } => x.binary_scalar(*b, resident[0], *value, *scalar_first)?,
                TensorOp::Unary(u) => x.unary(*u, resident[0], out_dtype)?,
                TensorOp::Reduce { op: r, axes, .. } => {
                    x.reduce(*r, resident[0], axes, out_dtype, out_shape)?
                }
                TensorOp::Full {
                    dtype,
                    shape,
                    value,
                } => x.fill(*dtype, shape, *value)?,
                TensorOp::Arange {
                    dtype,
                    start,
                    step,
                    len,
                } => x.arange(*dtype, *start, *step, *len)?,
                TensorOp::Eye { dtype, rows, cols } => x.eye(*dtype, *rows, *cols)?,
                TensorOp::Reshape(_) => x.duplicate(resident[0], out_shape)?,
                TensorOp::Permute(perm) => gather(&mut x, permute_view(&resident[0].shape, perm))?,
                TensorOp::Slice(axes) => gather(&mut x, slice_view(&resident[0].shape, axes))?,
                TensorOp::Reverse(axes) => gather(&mut x, reverse_view(&resident[0].shape, axes))?,
                TensorOp::BroadcastTo(shape) => {
                    gather(&mut x, broadcast_view(&resident[0].shape, shape))?
                }
                TensorOp::BroadcastInDim { shape, dims } => gather(
                    &mut x,
                    broadcast_in_dim_view(&resident[0].shape, shape, dims),
                )?,
                TensorOp::Diagonal { axes } => {
                    gather(&mut x, diagonal_view(&resident[0].shape, *axes))?
                }
                TensorOp::Concatenate { axis, .. } => x.concatenate(&resident, *axis, out_shape)?,
                TensorOp::Matmul => x.matmul(resident[0], resident[1], out_shape)?,
                TensorOp::Einsum(spec) => {
                    let values = resident.iter().map(|&t| Value::Resident(t)).collect();
                    match spec.contract(&mut x, values)? {
                        Value::Owned(t) => t,
                        Value::Resident(t) => x.duplicate(t, out_shape)?,
                    }
                }
                TensorOp::Pad { widths, value } => x.pad(resident[0], widths, *value, out_shape)?,
                TensorOp::DiagEmbed { axes } => x.diag_embed(resident[0], *axes)?,
                TensorOp::Gemm { alpha, beta, a, b } => x.gemm_accumulate(
                    [resident[0], resident[1], resident[2]],
                    [*a, *b],
                    [*alpha, *beta],
                    out_shape,
                )?,
                TensorOp::Axpby { alpha, beta } => {
                    x.axpby([resident[0], resident[1]], [*alpha, *beta], out_shape)?
                }
                TensorOp::ClampBetween => {
                    x.clamp_between([resident[0], resident[1], resident[2]], out_shape)?
                }
                TensorOp::Dot { conjugate } => x.dot(resident[0], resident[1], *conjugate)?,
                TensorOp::Random { .. } => unreachable!("made on the host, above"),
                TensorOp::Compare(c) => x.compare(*c, resident[0], resident[1], out_shape)?,
                TensorOp::Select => x.select([resident[0], resident[1], resident[2]], out_shape)?,
                TensorOp::Clamp { lo, hi } if input_dtype.is_integer() => {
                    x.clamp_integers(resident[0], *lo, *hi)?
                }
                TensorOp::Clamp { lo, hi } => x.map(
                    resident[0],
                    out_dtype,
                    launch::MapArgs::Clamp { lo: *lo, hi: *hi },
                )?,
                TensorOp::Triangle { k, upper } => x.triangle(resident[0], *k, *upper)?,
                TensorOp::Cast(to) => x.cast(resident[0], *to)?,
                TensorOp::ArgReduce { op: a, axis, .. } => {
                    x.arg_reduce(*a, resident[0], *axis, out_shape)?
                }
                TensorOp::Gather { axis } => {
                    x.take(resident[0], host_index.positions(), Some(*axis), out_shape)?
                }
                TensorOp::Compress { .. } => {
                    x.take(resident[0], host_index.positions(), None, out_shape)?
                }
                TensorOp::Scatter { axis, mode } => {
                    x.scatter(resident[0], resident[2], host_index.targets(), *axis, *mode)?
                }
                TensorOp::DynamicSlice { sizes } => {
                    x.window(resident[0], host_index.starts(), sizes)?
                }
                TensorOp::DynamicUpdateSlice => {
                    x.update_window(resident[0], resident[1], host_index.starts())?
                }
                TensorOp::Linalg(Linalg::Cholesky) => match x.cholesky(resident[0])? {
                    Ok(l) => l,
                    Err(why) => {
                        failed = Some(why);
                        x.alloc(out_dtype, out_shape)?
                    }
                },
                TensorOp::Linalg(Linalg::Solve) => match x.solve(resident[0], resident[1])? {
                    Ok(solution) => solution,
                    Err(why) => {
                        failed = Some(why);
                        x.alloc(out_dtype, out_shape)?
                    }
                },
                // Several outputs: `decompose`, above.
                TensorOp::Linalg(Linalg::Qr | Linalg::Svd | Linalg::Eigh) => {
                    return Err(unsupported(missing(op, input_dtype)))
                }
            })
        })?;
        if let Some(linalg::Failed(why)) = failed {
            drop(result);
            return Err(self.host_error(op, inputs, lane, why));
        }
        debug_assert_eq!((result.dtype, &result.shape[..]), (out_dtype, out_shape));
        self.insert(out_id, result);
        Ok(())
    }

    fn upload(&mut self, id: TensorId, tensor: Tensor, _lane: u64) -> Result<(), ExecError> {
        self.deferred_error()?;
        let out = self.copy_in(&tensor)?;
        self.insert(id, out);
        Ok(())
    }

    fn download(&mut self, id: TensorId, _lane: u64) -> Result<Tensor, ExecError> {
        self.deferred_error()?;
        let t = self.store.remove(&id).ok_or(NotResident(id))?;
        // `bool` arrives as bytes, read as nonzero: no byte the device
        // holds can make an invalid `bool` on the host.
        let (mut data, mut bytes) = match t.dtype {
            DType::Bool => (None, vec![0u8; t.len()]),
            dtype => (Some(Data::zeros(dtype, t.len())), Vec::new()),
        };
        let copied = match &mut data {
            Some(data) => self.copy_out(&t, host_bytes_mut(data)),
            None => self.copy_out(&t, &mut bytes),
        };
        self.store.insert(id, t);
        copied?;
        let data = data.unwrap_or_else(|| Data::Bool(bytes.iter().map(|&b| b != 0).collect()));
        let shape = self.store[&id].shape.clone();
        Ok(Tensor::from_parts(shape, data)?)
    }

    fn free(&mut self, id: TensorId) -> bool {
        match self.store.remove(&id) {
            Some(t) => {
                self.bytes -= t.bytes();
                true
            }
            None => false,
        }
    }

    fn sync(&mut self, id: TensorId) -> Result<(), ExecError> {
        let tensor = self.store.get(&id).ok_or(NotResident(id))?;
        tensor
            .wait_written()
            .map_err(|e| device_error(self.info.ordinal, "cuEventSynchronize", e))?;
        Ok(())
    }

    fn retire_lane(&mut self, lane: u64) {
        self.retire(lane);
    }

    /// The device pool's counters are the engine's buffer pool: what it
    /// holds beyond live allocations, its high-water mark, its threshold.
    fn memory(&self) -> EngineMemory {
        EngineMemory {
            tensors: self.store.len(),
            tensor_bytes: self.bytes,
            buffers: self
                .pool
                .as_ref()
                .and_then(|pool| pool_stats(pool).ok())
                .unwrap_or_default(),
            ..EngineMemory::default()
        }
    }

    /// Returns the device pool's unused memory to the OS.
    fn trim(&mut self) -> usize {
        let Some(pool) = &mut self.pool else {
            return 0;
        };
        let before = pool.get(PoolAttr::Reserved).unwrap_or(0);
        if pool.trim_to(0).is_err() {
            return 0;
        }
        let after = pool.get(PoolAttr::Reserved).unwrap_or(before);
        usize::try_from(before.saturating_sub(after)).unwrap_or(usize::MAX)
    }
}
