//! The small ops that `contention` and `reentry` share, and the numbers of
//! application threads they run on.

use weft::{error::TensorError, Tensor};
use weft_examples::random;

/// Application threads, one run each.
pub(super) const APP_THREADS: [usize; 4] = [1, 2, 4, 8];

/// Small-op inputs: 4 KiB f64 add operands and 64×64 GEMM operands.
pub(super) struct SmallInputs {
    pub(super) add: [Tensor; 2],
    pub(super) gemm: [Tensor; 2],
}

impl SmallInputs {
    pub(super) fn new() -> Result<SmallInputs, TensorError> {
        Ok(SmallInputs {
            add: [
                Tensor::from_vec(random(512, 11), &[512])?,
                Tensor::from_vec(random(512, 12), &[512])?,
            ],
            gemm: [
                Tensor::from_vec(random(64 * 64, 13), &[64, 64])?,
                Tensor::from_vec(random(64 * 64, 14), &[64, 64])?,
            ],
        })
    }
}
