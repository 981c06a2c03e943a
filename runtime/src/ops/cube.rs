//! Kernels written in Rust (feature `cuda`): a `#[cube]` function as an
//! op of the vocabulary, launched on a CUDA lane with the lane's resident
//! tensors as its arrays, or recorded into a program like any op.

use weft_core::{Meta, TensorError, TensorOp};
use weft_cuda::{cube_source_cached, kernel_op, CubeError, CubeKernel};

use super::Apply;
use crate::error::OpError;

/// Kernels written in Rust with cubecl's `#[cube]`, for lanes and
/// recorders alike (feature `cuda`; in `weft::prelude`). Implemented for
/// every [`Apply`]; a kernel runs on a CUDA device's lane, and a CPU lane
/// refuses it at the call ([`TensorError::ForeignKernel`]).
pub trait CubeOps: Apply {
    /// Kernel `K` on `inputs` (its input arrays, read in row-major order)
    /// and `scalars` (converted to the element type), making a new tensor
    /// of each of `outputs` (its output arrays, written by one thread per
    /// element of the largest, `ABSOLUTE_POS`). On a lane the outputs'
    /// handles come back at once, like every op; the kernel runs on the
    /// lane's stream after the inputs' producers, ordered by the device's
    /// access table, and its results stay resident. On a recorder it is a
    /// step of the program, run where the program runs.
    ///
    /// The kernel is turned into CUDA source by cubecl once per process
    /// and element type (here, at the first call) and compiled by NVRTC
    /// once per device (on the device's actor, at its first launch). It
    /// has no derivative: a gradient through it, of a program or of a
    /// [`crate::program::Tape`], is refused (`GradError::NoRule`, naming
    /// the step).
    ///
    /// # Errors
    ///
    /// At the call, with nothing submitted or recorded:
    /// [`TensorError::Arity`] when the counts differ from `K::SIGNATURE`;
    /// [`TensorError::MixedDTypes`] when the operands' element types
    /// differ; [`TensorError::ForeignKernel`] on a CPU lane;
    /// [`OpError::Cube`] naming the kernel when an array has 2³² elements
    /// or more, or none while an output has some, or when it has no form for the type (only `f32` and
    /// `f64`), its expansion panicked or cubecl cannot compile it; a
    /// lane's handle errors. On the device (the outputs' op fails):
    /// NVRTC's log or the driver's error, naming the call.
    fn launch<K: CubeKernel>(
        &self,
        inputs: &[&Self::Tensor],
        scalars: &[f64],
        outputs: &[Meta],
    ) -> Result<Vec<Self::Tensor>, OpError> {
        let op = K::NAME;
        K::SIGNATURE
            .check(op, inputs.len(), outputs.len(), scalars.len())
            .map_err(|e| self.refused(op, e))?;
        let mut metas = Vec::with_capacity(inputs.len() + outputs.len());
        for x in inputs {
            metas.push(Meta {
                dtype: self.dtype(x)?,
                shape: self.shape(x)?.into_owned(),
            });
        }
        metas.extend(outputs.iter().cloned());
        let mut lengths = Vec::with_capacity(metas.len());
        for meta in &metas {
            let elements =
                weft_core::element_count(&meta.shape).ok_or_else(|| TensorError::TooLarge {
                    shape: meta.shape.clone(),
                });
            let elements = elements.map_err(|e| self.refused(op, e))?;
            if u32::try_from(elements).is_err() {
                return Err(CubeError::TooLong {
                    kernel: op,
                    elements,
                }
                .into());
            }
            lengths.push(elements);
        }
        if let Some(array) = weft_cuda::empty_array(&lengths, inputs.len()) {
            return Err(CubeError::EmptyArray { kernel: op, array }.into());
        }
        // The types are the op's own check (`KernelOp::infer`, when it is
        // applied); the source is made for the first operand's.
        let Some(first) = metas.first() else {
            return Err(CubeError::Layout {
                kernel: op,
                message: "no output array".into(),
            }
            .into());
        };
        if metas.iter().all(|m| m.dtype == first.dtype) {
            cube_source_cached::<K>(first.dtype)?;
        }
        let kernel = TensorOp::Kernel(kernel_op::<K>(scalars, outputs));
        self.apply_many(kernel, inputs)
    }
}

impl<T: Apply + ?Sized> CubeOps for T {}
