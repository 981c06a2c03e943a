//! Kernels written in Rust (feature `cuda`): a `#[cube]` function launched
//! on a CUDA lane, with the lane's resident tensors as its arrays.

use std::sync::Arc;

use weft_core::{Meta, TensorError};
use weft_cuda::{cube_source_cached, CubeError, CubeKernel, CudaEngine};

use crate::error::OpError;
use crate::handle::TensorHandle;
use crate::lane::Lane;

impl Lane<CudaEngine> {
    /// Launches the cubecl kernel `K` on this lane's stream: `inputs` are
    /// its input arrays (resident tensors of this device, read in
    /// row-major order), `scalars` its scalars (converted to the element
    /// type), and a new tensor of each of `outputs` its output arrays, one
    /// thread per element of the largest (`ABSOLUTE_POS`). Returns the
    /// outputs' handles at once, like every op; the kernel runs after the
    /// inputs' producers, ordered by the device's access table, and its
    /// results stay resident.
    ///
    /// The kernel is turned into CUDA source by cubecl once per process
    /// and element type (here, at the first call) and compiled by NVRTC
    /// once per device (on the device's actor, at its first launch). A
    /// [`crate::program::Tape`] sees its outputs as constants: a kernel of one's own
    /// has no derivative weft knows.
    ///
    /// # Errors
    ///
    /// At the call, with nothing submitted: [`TensorError::Arity`] when the
    /// counts differ from `K::SIGNATURE`; [`TensorError::MixedDTypes`] when
    /// the operands' element types differ; [`OpError::Cube`] naming the
    /// kernel when an array has 2³² elements or more, when it has no form for the type (only `f32` and `f64`), its
    /// expansion panicked or cubecl cannot compile it; the handle errors of
    /// [`Lane::download`]. On the device (the outputs' op fails):
    /// NVRTC's log or the driver's error, naming the call.
    pub fn launch<K: CubeKernel>(
        &self,
        inputs: &[&TensorHandle],
        scalars: &[f64],
        outputs: &[Meta],
    ) -> Result<Vec<TensorHandle>, OpError> {
        let sig = K::SIGNATURE;
        let op = K::NAME;
        for (expected, got) in [
            (sig.inputs, inputs.len()),
            (sig.outputs, outputs.len()),
            (sig.scalars, scalars.len()),
        ] {
            if expected != got {
                return Err(TensorError::Arity { op, expected, got }.into());
            }
        }
        for input in inputs {
            self.check(op, input)?;
        }
        let metas: Vec<Meta> = inputs
            .iter()
            .map(|h| h.meta())
            .chain(outputs.iter().cloned())
            .collect();
        let Some(first) = metas.first() else {
            return Err(TensorError::Arity {
                op,
                expected: 1,
                got: 0,
            }
            .into());
        };
        let dtype = first.dtype;
        if let Some(other) = metas.iter().find(|m| m.dtype != dtype) {
            return Err(TensorError::MixedDTypes {
                op,
                lhs: dtype,
                rhs: other.dtype,
            }
            .into());
        }
        for meta in &metas {
            let elements =
                weft_core::element_count(&meta.shape).ok_or_else(|| TensorError::TooLarge {
                    shape: meta.shape.clone(),
                })?;
            if u32::try_from(elements).is_err() {
                return Err(CubeError::TooLong {
                    kernel: op,
                    elements,
                }
                .into());
            }
        }
        let _checked: Arc<_> = cube_source_cached::<K>(dtype)?;
        let scalars = scalars.to_vec();
        let lane = self.actor_lane().id();
        self.produce(
            op,
            inputs,
            None,
            outputs.to_vec(),
            move |engine, ids, outs| {
                let outputs: Vec<_> = outs
                    .iter()
                    .map(|o| (o.id(), o.dtype(), o.shape()))
                    .collect();
                Ok(engine.launch_cube::<K>(ids, &scalars, &outputs, lane)?)
            },
        )
    }
}
