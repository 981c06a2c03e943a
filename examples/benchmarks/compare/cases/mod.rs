//! The cases, one file each, in the order they run and print.

mod add;
mod bandwidth;
mod chain;
mod chain_program;
mod contention;
mod einsum;
mod einsum10;
mod gemm;
mod mps;
mod pipeline;
mod pipelined;
mod reentry;
mod roofline;
mod round_trip;
mod small;
mod small_gemm;

use crate::case::Case;

/// Every case. Those on a runtime of their own come last: they run after
/// the one-domain runtime is shut down.
pub(crate) const CASES: [Case; 16] = [
    round_trip::CASE,
    pipelined::CASE,
    contention::CASE,
    reentry::CASE,
    gemm::CASE,
    add::CASE,
    bandwidth::CASE,
    einsum::CASE,
    chain::CASE,
    chain_program::CASE,
    mps::EAGER,
    mps::PROGRAM,
    einsum10::CASE,
    small_gemm::CASE,
    roofline::CASE,
    pipeline::CASE,
];
