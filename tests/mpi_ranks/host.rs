//! What a rank does beside tensors: collectives of host values, and the
//! part of its node's CPUs it lays its domains over.

use weft::{error::MpiError, mpi::Reduction, OpError};

use super::{check, me, rt, upload, values, OP_LIMIT};

/// Ranks of one node that the launcher gave the same CPUs (Open MPI binds
/// 2 ranks to a core each, but 4 on this 2-core machine to both cores)
/// lay their domains out over a part each: no CPU carries more ranks'
/// domains than the ranks given it need, and `threads()` says so.
pub(super) fn ranks_given_the_same_cpus_take_parts_of_them() -> Result<(), String> {
    let (_, ranks, _) = me();
    let mask = weft::topology::process_allowed_cpus().map_err(|e| e.to_string())?;
    let threads = rt().threads();
    let mine = (threads.iter()).fold(weft::topology::CpuSet::new(), |all, d| all.union(&d.cpus));
    let top = mask.iter().chain(mine.iter()).max().map_or(0, |c| c + 1);
    let width = rt()
        .allreduce_values(&[top as i64], Reduction::Max)
        .map_err(|e| e.to_string())?
        .wait_timeout(OP_LIMIT)
        .map_err(|e| e.to_string())?[0] as usize;
    let count = |set: &weft::topology::CpuSet| -> Result<Vec<i64>, String> {
        let mut v = vec![0i64; width];
        for cpu in set.iter() {
            v[cpu] = 1;
        }
        rt().allreduce_values(&v, Reduction::Sum)
            .map_err(|e| e.to_string())?
            .wait_timeout(OP_LIMIT)
            .map_err(|e| e.to_string())
    };
    // Per CPU: how many ranks were given it, how many lay a domain on it.
    let (given, load) = (count(&mask)?, count(&mine)?);
    let sharing: Vec<i64> = mask.iter().map(|c| given[c]).collect();
    let peers = sharing.iter().copied().max().unwrap_or(1);
    let cpus = mask.len() as i64;
    let most = (peers + cpus - 1) / cpus;
    for cpu in mine.iter() {
        check(
            load[cpu] <= most,
            format!(
                "CPU {cpu} carries the domains of {} ranks; {peers} ranks were given CPUs {mask}, so at most {most} (this rank's domains: {mine})",
                load[cpu]
            ),
        )?;
    }
    check(
        mine.is_subset(&mask),
        format!("domains on {mine} outside {mask}"),
    )?;
    let share = threads[0].share.as_ref();
    let uniform = sharing.iter().all(|&n| n == peers);
    check(
        !uniform
            || match share {
                None => peers == 1,
                Some(s) => s.parts as i64 == peers && s.of == mask && ranks >= s.parts,
            },
        format!("{peers} ranks given {mask}; threads() says {share:?}"),
    )
}

pub(super) fn host_values_reduce_and_broadcast_in_call_order() -> Result<(), String> {
    let (rank, ranks, lane) = me();
    let (r, n) = (rank as f64 + 1.0, ranks as f64);
    let tri = n * (n + 1.0) / 2.0;
    // A tensor collective on either side: the values' collectives take
    // their places among the lane's in call order on every rank.
    let before = lane
        .allreduce(&upload(&lane, vec![r], &[1])?, Reduction::Sum)
        .map_err(|e| e.to_string())?;
    let sum = rt()
        .allreduce_values(&[r, -2.0 * r], Reduction::Sum)
        .map_err(|e| e.to_string())?;
    let max = rt()
        .allreduce_values(&[rank as i64 - 7], Reduction::Max)
        .map_err(|e| e.to_string())?;
    let csum = rt()
        .allreduce_values(&[weft::c64::new(r, r)], Reduction::Sum)
        .map_err(|e| e.to_string())?;
    let root = ranks - 1;
    let mine: [f32; 3] = if rank == root {
        [7.0, 8.0, 9.0]
    } else {
        [0.0; 3]
    };
    let bcast = rt()
        .broadcast_values(&mine, root)
        .map_err(|e| e.to_string())?;
    let after = lane
        .allreduce(&upload(&lane, vec![2.0 * r], &[1])?, Reduction::Max)
        .map_err(|e| e.to_string())?;
    let v = sum.wait_timeout(OP_LIMIT).map_err(|e| e.to_string())?;
    check(v == [tri, -2.0 * tri], format!("sum {v:?}"))?;
    let v = max.wait_timeout(OP_LIMIT).map_err(|e| e.to_string())?;
    check(v == [ranks as i64 - 8], format!("max {v:?}"))?;
    let v = csum.wait_timeout(OP_LIMIT).map_err(|e| e.to_string())?;
    check(v == [weft::c64::new(tri, tri)], format!("c64 sum {v:?}"))?;
    let v = bcast.wait_timeout(OP_LIMIT).map_err(|e| e.to_string())?;
    check(v == [7.0, 8.0, 9.0], format!("broadcast {v:?}"))?;
    let (_, v) = values::<f64>(&lane, &before)?;
    check(v == [tri], format!("the tensor allreduce before {v:?}"))?;
    let (_, v) = values::<f64>(&lane, &after)?;
    check(v == [2.0 * n], format!("the tensor allreduce after {v:?}"))
}

pub(super) fn host_values_that_disagree_fail_on_every_rank() -> Result<(), String> {
    let (rank, ranks, _) = me();
    // Refused at the call, on every rank alike: nothing is posted.
    let e = rt().allreduce_values(&[true], Reduction::Sum).unwrap_err();
    check(
        e.to_string().contains("sum") && e.to_string().contains("bool"),
        format!("{e}"),
    )?;
    let e = rt().broadcast_values(&[1.0f64], ranks).unwrap_err();
    check(
        matches!(e, OpError::Mpi(MpiError::NoSuchRank { rank, .. }) if rank == ranks),
        format!("{e}"),
    )?;
    // Lengths that differ by rank: every rank fails, the next one pairs.
    let bad = rt()
        .allreduce_values(&vec![1.0f64; rank + 1], Reduction::Sum)
        .map_err(|e| e.to_string())?;
    let good = rt()
        .allreduce_values(&[1i32], Reduction::Sum)
        .map_err(|e| e.to_string())?;
    match bad.wait_timeout(OP_LIMIT) {
        Ok(v) => return Err(format!("a disagreeing allreduce gave {v:?}")),
        Err(e) => check(
            e.to_string().contains("disagree on the shape"),
            format!("error: {e}"),
        )?,
    }
    let v = good.wait_timeout(OP_LIMIT).map_err(|e| e.to_string())?;
    check(
        v == [ranks as i32],
        format!("the next allreduce gave {v:?}"),
    )
}
