//! When a kernel spreads over the domain's pool: the thresholds every CPU
//! kernel and both product providers decide by, measured on the machines
//! the benchmarks ran on.

use weft_core::Field;

/// Below this many output elements (or multiply-adds, for a product) an op
/// runs inline on the calling thread, the actor; above it, over the
/// domain's pool.
pub const PARALLEL_THRESHOLD: usize = 1 << 15;

/// Products below this many multiply-adds run on one thread each: the
/// threads of one product cost more than they save there.
pub(crate) const SMALL_PRODUCT: usize = 1 << 18;

/// The least work, in real multiply-adds, of a batch of small products
/// spread over the pool; a smaller batch runs on the calling thread. A
/// pool thread that has gone to sleep takes 20–50 µs to wake on the
/// machines measured, about what 2^20 multiply-adds take on one core:
/// below that, the woken thread arrives when the work is done (measured
/// in `compare`'s `small_gemm` batched rows: 64 products of bond 16 ran
/// 2.3× slower spread than on one thread).
pub(crate) const PARALLEL_BATCH: usize = 1 << 20;

/// The least work, in real multiply-adds, of one task of a batch spread
/// over the pool: small products go to a task several at a time (a task
/// costs about a microsecond to hand over; a whole product of bond 4 is
/// 30 ns).
pub(crate) const BATCH_TASK: usize = 1 << 16;

/// Real multiply-adds of one `[m, k] @ [k, n]` product of `T` (a complex
/// one is four), saturating: what the thresholds above measure.
pub(crate) fn real_multiply_adds<T: Field>(m: usize, k: usize, n: usize) -> usize {
    let per = if T::DTYPE.is_complex() { 4 } else { 1 };
    [k, n, per].into_iter().fold(m, usize::saturating_mul)
}
