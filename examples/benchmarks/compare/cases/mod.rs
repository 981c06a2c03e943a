//! The cases, one file each, in the order they run and print.

mod add;
mod bandwidth;
mod chain;
mod chain_program;
mod contention;
mod einsum;
mod einsum10;
mod einsum_kinds;
mod gemm;
mod mps;
mod permutations;
mod pipeline;
mod pipelined;
mod reentry;
mod roofline;
mod round_trip;
mod small;
mod small_gemm;
mod transfers;

use weft::tensor::Field;

use crate::case::Case;

/// Every case. Those on a runtime of their own come last: they run after
/// the one-domain runtime is shut down.
pub(crate) const CASES: [Case; 20] = [
    round_trip::CASE,
    pipelined::CASE,
    contention::CASE,
    reentry::CASE,
    gemm::CASE,
    add::CASE,
    bandwidth::CASE,
    transfers::CASE,
    permutations::CASE,
    einsum::CASE,
    einsum_kinds::CASE,
    chain::CASE,
    chain_program::CASE,
    mps::EAGER,
    mps::PROGRAM,
    einsum10::CASE,
    small_gemm::CASE,
    roofline::CASE,
    pipeline::CASE,
    transfers::BETWEEN,
];

/// Whether `got` is `want` to a relative `tol` of the whole's norm: how
/// the cases check weft's result against their baseline's.
fn close<T: Field>(got: &[T], want: &[T], tol: f64) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!("{} elements, not {}", got.len(), want.len()));
    }
    let norm = |v: &[T]| {
        let squares = v.iter().map(|&x| {
            let (re, im) = x.to_parts();
            re * re + im * im
        });
        squares.sum::<f64>().sqrt()
    };
    let diff: Vec<T> = got.iter().zip(want).map(|(&g, &w)| g - w).collect();
    let (err, size) = (norm(&diff), norm(want));
    if err > tol * size.max(f64::MIN_POSITIVE) {
        return Err(format!("relative error {:e}", err / size));
    }
    Ok(())
}

/// Makes the lane's domain compute its products with `provider`, waiting
/// until it does.
#[cfg(feature = "blas")]
fn set_provider(lane: &weft::Lane, provider: weft::engine::CpuProvider) {
    lane.run(move |engine: &mut weft::CpuEngine| engine.set_provider(provider))
        .expect("submitted")
        .wait()
        .expect("ran");
}
