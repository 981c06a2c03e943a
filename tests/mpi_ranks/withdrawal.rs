//! A rank that cannot give its part of a collective withdraws from it:
//! the other ranks fail it instead of waiting for ever, whether the
//! rank's input failed or its runtime shut down first.

use std::process::ExitCode;
use weft::ops::ElementwiseOps;

use weft::{mpi::Reduction, Runtime};

use super::{check, download, me, upload, values};

/// Rank 0's input fails: it withdraws, every other rank fails the
/// collective too instead of waiting for rank 0's part, and the next
/// collective pairs up as before.
pub(super) fn a_collective_whose_input_failed_is_withdrawn_on_every_rank() -> Result<(), String> {
    let (rank, ranks, lane) = me();
    let one = upload(&lane, vec![1i32], &[1])?;
    let input = match rank {
        0 => {
            let zero = upload(&lane, vec![0i32], &[1])?;
            lane.floor_div(&one, &zero).map_err(|e| e.to_string())?
        }
        _ => one.clone(),
    };
    let withdrawn = lane
        .allreduce(&input, Reduction::Sum)
        .map_err(|e| e.to_string())?;
    let next = lane
        .allreduce(&one, Reduction::Sum)
        .map_err(|e| e.to_string())?;
    match download(&lane, &withdrawn) {
        Ok(t) => return Err(format!("an allreduce with a failed input gave {t:?}")),
        Err(e) if rank == 0 => check(
            e.contains("its input failed") && e.contains("zero"),
            format!("error: {e}"),
        )?,
        Err(e) => check(
            e.contains("another rank withdrew from it"),
            format!("error: {e}"),
        )?,
    }
    let (_, v) = values::<i32>(&lane, &next)?;
    check(
        v == [ranks as i32],
        format!("the next allreduce gave {v:?}"),
    )
}

/// A job of its own: rank 0 asks for an allreduce and shuts its runtime
/// down at once (`shutdown_now`); rank 1's allreduce must still end, with
/// the sum (rank 0's collective was kept) or a withdrawal, and both ranks
/// must then end: no rank waits for a contribution that will not come,
/// nor in MPI's finalisation for a rank that does.
pub(super) fn shutdown_now_main() -> ExitCode {
    let rt = match Runtime::builder().split(1).mpi().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("rank: the runtime did not build: {e}");
            return ExitCode::FAILURE;
        }
    };
    let rank = rt.rank();
    let outcome = (|| -> Result<String, String> {
        let lane = rt.lane(0).map_err(|e| e.to_string())?;
        let mine = upload(&lane, vec![1.0f64, 2.0], &[2])?;
        let sum = lane
            .allreduce(&mine, Reduction::Sum)
            .map_err(|e| e.to_string())?;
        if rank == 0 {
            rt.shutdown_now().map_err(|e| e.to_string())?;
            return Ok("shut down right after its allreduce".into());
        }
        let ranks = rt.ranks() as f64;
        match download(&lane, &sum) {
            Ok(t) if t.as_slice::<f64>() == Ok(&[ranks, 2.0 * ranks][..]) => {
                Ok("got the sum".into())
            }
            Ok(t) => Err(format!("the allreduce gave {t:?}")),
            Err(e) if e.contains("withdrew") => Ok(format!("was told: {e}")),
            Err(e) => Err(e),
        }
    })();
    let shut = rt.shutdown().map_err(|e| e.to_string());
    match (outcome, shut) {
        (Ok(what), Ok(_)) => {
            println!("shutdown_now after a collective: rank {rank} {what}: ok");
            ExitCode::SUCCESS
        }
        (outcome, shut) => {
            println!("shutdown_now after a collective: rank {rank}: FAILED: {outcome:?} {shut:?}");
            ExitCode::FAILURE
        }
    }
}
