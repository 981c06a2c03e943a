//! Ranks over MPI (feature `mpi`), with its own harness.
//!
//! `cargo test --release -p weft-tests --features mpi --test mpi_ranks`
//!
//! Started by cargo (not under an MPI launcher), the test runs itself as
//! a job of 2 ranks and then of 4 under `mpirun` and fails if either
//! fails; without `mpirun` it says `skipped` and counts nothing. Under the
//! launcher, every rank runs every check; the failures of all ranks are
//! summed over MPI at the end, and rank 0 prints each check and the
//! summary line CI tallies.

use std::process::{Command, ExitCode};
use std::sync::OnceLock;
use std::time::{Duration, Instant};
use weft::ops::{CreateOps, ElementwiseOps, LinalgOps};

use weft::{
    error::MpiError,
    mpi::{Reduction, LAUNCHER_ENV, MAX_TAG},
    runtime::Overlap,
    BuildError, DType, OpError, Runtime, Tensor, TensorHandle,
};

/// How long a job may take before it is killed and failed.
const JOB_LIMIT: Duration = Duration::from_secs(180);
/// How long one op may take under the launcher.
const OP_LIMIT: Duration = Duration::from_secs(30);

static RT: OnceLock<Runtime> = OnceLock::new();

#[path = "mpi_ranks/host.rs"]
mod host;
#[path = "mpi_ranks/withdrawal.rs"]
mod withdrawal;
use host::{
    host_values_reduce_and_broadcast_in_call_order, host_values_that_disagree_fail_on_every_rank,
    ranks_given_the_same_cpus_take_parts_of_them,
};
use withdrawal::{a_collective_whose_input_failed_is_withdrawn_on_every_rank, shutdown_now_main};

fn rt() -> &'static Runtime {
    RT.get().expect("built in main")
}

/// Set (to any value) in the job that runs [`shutdown_now_main`].
const SHUTDOWN_NOW_ENV: &str = "WEFT_MPI_SHUTDOWN_NOW";

fn main() -> ExitCode {
    if LAUNCHER_ENV.iter().any(|v| std::env::var_os(v).is_some()) {
        if std::env::var_os(SHUTDOWN_NOW_ENV).is_some() {
            return shutdown_now_main();
        }
        return rank_main();
    }
    launch()
}

/// Runs this binary as jobs of 2 and 4 ranks, after the checks that need
/// no launcher.
fn launch() -> ExitCode {
    let exe = std::env::current_exe().expect("the test's path");
    let mut failed = false;
    match a_shared_build_without_mpi_is_refused_when_mpi_was_asked_for() {
        Ok(()) => println!("a_shared_build_without_mpi_is_refused_when_mpi_was_asked_for: ok"),
        Err(e) => {
            println!("a_shared_build_without_mpi_is_refused_when_mpi_was_asked_for: FAILED: {e}");
            failed = true;
        }
    }
    // Jobs of 2 and 4 ranks running every check, then one of 2 whose rank
    // 0 shuts down right after a collective.
    for (ranks, shutdown_now) in [(2, false), (4, false), (2, true)] {
        let mut command = Command::new("mpirun");
        command
            .args(["--allow-run-as-root", "--oversubscribe", "-n"])
            .arg(ranks.to_string());
        if shutdown_now {
            command.args(["-x", &format!("{SHUTDOWN_NOW_ENV}=1")]);
        }
        let spawned = command.arg(&exe).spawn();
        let ranks = match shutdown_now {
            true => format!("{ranks} (shutdown_now after a collective)"),
            false => ranks.to_string(),
        };
        let mut child = match spawned {
            Ok(child) => child,
            Err(e) => {
                println!("mpi: skipped: cannot run mpirun ({e}); install Open MPI (openmpi-bin)");
                return ExitCode::SUCCESS;
            }
        };
        let start = Instant::now();
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break Some(status),
                Ok(None) if start.elapsed() > JOB_LIMIT => {
                    let _ = child.kill();
                    let _ = child.wait();
                    break None;
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(50)),
                Err(_) => break None,
            }
        };
        match status {
            Some(s) if s.success() => println!("mpi job of {ranks} ranks: ok"),
            Some(s) => {
                println!("mpi job of {ranks} ranks: FAILED ({s})");
                failed = true;
            }
            None => {
                println!("mpi job of {ranks} ranks: FAILED (killed after {JOB_LIMIT:?})");
                failed = true;
            }
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// `Overlap::Share` hands out the live runtime as it is: one without MPI
/// does not stand in for a build that asked for MPI.
fn a_shared_build_without_mpi_is_refused_when_mpi_was_asked_for() -> Result<(), String> {
    let plain = Runtime::builder()
        .split(1)
        .build()
        .map_err(|e| e.to_string())?;
    let shared = Runtime::builder()
        .split(1)
        .overlap(Overlap::Share)
        .mpi()
        .build();
    let refused = matches!(&shared, Err(BuildError::Mpi(MpiError::Unavailable { reason }))
        if reason.contains("runs no MPI") && reason.contains(&plain.id().to_string()));
    // Without .mpi() the same build shares.
    let same = Runtime::builder()
        .split(1)
        .overlap(Overlap::Share)
        .build()
        .map_err(|e| e.to_string())?;
    let shares = same.id() == plain.id();
    drop(same);
    plain.shutdown().map_err(|e| e.to_string())?;
    check(refused, format!("{shared:?}"))?;
    check(shares, "a build without .mpi() did not share")
}

type Check = fn() -> Result<(), String>;

fn rank_main() -> ExitCode {
    let built = Runtime::builder().split(1).mpi().build();
    match built {
        Ok(rt) => {
            let _ = RT.set(rt);
        }
        Err(e) => {
            eprintln!("rank: the runtime did not build: {e}");
            return ExitCode::FAILURE;
        }
    }
    let rank = rt().rank();
    let checks: &[(&str, Check)] = &[
        ("ranks_are_the_jobs", ranks_are_the_jobs),
        (
            "ranks_given_the_same_cpus_take_parts_of_them",
            ranks_given_the_same_cpus_take_parts_of_them,
        ),
        (
            "a_ring_of_sends_arrives_intact",
            a_ring_of_sends_arrives_intact,
        ),
        (
            "many_lanes_and_tags_at_once_keep_the_order_per_tag",
            many_lanes_and_tags_at_once_keep_the_order_per_tag,
        ),
        (
            "a_mismatched_recv_fails_typed_and_the_next_one_is_not_shifted",
            a_mismatched_recv_fails_typed_and_the_next_one_is_not_shifted,
        ),
        (
            "allreduce_sums_and_maxes_every_type",
            allreduce_sums_and_maxes_every_type,
        ),
        (
            "broadcast_gives_every_rank_the_roots_tensor",
            broadcast_gives_every_rank_the_roots_tensor,
        ),
        (
            "allgather_stacks_in_rank_order",
            allgather_stacks_in_rank_order,
        ),
        (
            "reduce_scatter_gives_each_rank_its_block",
            reduce_scatter_gives_each_rank_its_block,
        ),
        (
            "disagreeing_ranks_all_fail_and_the_next_collective_works",
            disagreeing_ranks_all_fail_and_the_next_collective_works,
        ),
        (
            "a_collective_whose_input_failed_is_withdrawn_on_every_rank",
            a_collective_whose_input_failed_is_withdrawn_on_every_rank,
        ),
        (
            "a_received_tensor_feeds_the_domain_ops",
            a_received_tensor_feeds_the_domain_ops,
        ),
        (
            "large_tensors_through_pooled_buffers_arrive_intact",
            large_tensors_through_pooled_buffers_arrive_intact,
        ),
        (
            "a_send_of_the_last_handle_moves_the_tensor_without_a_copy",
            a_send_of_the_last_handle_moves_the_tensor_without_a_copy,
        ),
        (
            "receives_complete_in_the_order_their_messages_come",
            receives_complete_in_the_order_their_messages_come,
        ),
        (
            "a_send_of_a_failed_tensor_fails_with_its_reason",
            a_send_of_a_failed_tensor_fails_with_its_reason,
        ),
        ("barrier_resolves", barrier_resolves),
        (
            "host_values_reduce_and_broadcast_in_call_order",
            host_values_reduce_and_broadcast_in_call_order,
        ),
        (
            "host_values_that_disagree_fail_on_every_rank",
            host_values_that_disagree_fail_on_every_rank,
        ),
        (
            "bad_arguments_are_typed_errors_at_the_call",
            bad_arguments_are_typed_errors_at_the_call,
        ),
        (
            "a_second_mpi_runtime_is_refused",
            a_second_mpi_runtime_is_refused,
        ),
    ];
    let only = std::env::var("WEFT_MPI_ONLY").ok();
    let (mut failed, mut ran) = (0i64, 0i64);
    for &(name, run) in checks {
        if only.as_deref().is_some_and(|o| !name.contains(o)) {
            continue;
        }
        ran += 1;
        match std::panic::catch_unwind(run) {
            Ok(Ok(())) => {
                if rank == 0 {
                    println!("{name}: ok");
                }
            }
            Ok(Err(what)) => {
                failed += 1;
                println!("rank {rank}: {name}: FAILED: {what}");
            }
            Err(_) => {
                failed += 1;
                println!("rank {rank}: {name}: FAILED: panicked");
            }
        }
    }
    // Every rank's failures, summed over MPI.
    let total = (|| -> Result<i64, String> {
        let lane = rt().lane(0).map_err(|e| e.to_string())?;
        let mine = lane
            .upload(Tensor::from_vec(vec![failed], &[1]).map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
        let sum = lane
            .allreduce(&mine, Reduction::Sum)
            .map_err(|e| e.to_string())?;
        let t = download(&lane, &sum)?;
        Ok(t.as_slice::<i64>().map_err(|e| e.to_string())?[0])
    })();
    // A receive nothing will match: the shutdown cancels it, and the op
    // waiting for its tensor fails instead of waiting for ever.
    let unmatched = (|| -> Result<_, String> {
        let lane = rt().lane(0).map_err(|e| e.to_string())?;
        let h = lane
            .recv(rank, 9, DType::F64, &[4])
            .map_err(|e| e.to_string())?;
        lane.sync(&h).map_err(|e| e.to_string())
    })();
    let shut = rt().shutdown();
    match unmatched.map(|t| t.wait_timeout(OP_LIMIT)) {
        Ok(Err(e)) if e.to_string().contains("cancelled") => {}
        other => {
            println!("rank {rank}: an unmatched recv at shutdown: {other:?}");
            return ExitCode::FAILURE;
        }
    }
    let total = match total {
        Ok(t) => t,
        Err(e) => {
            println!("rank {rank}: summing the failures over MPI failed: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Err(e) = shut {
        println!("rank {rank}: shutdown: {e}");
        return ExitCode::FAILURE;
    }
    // MPI is finalised: it cannot come back in this process.
    let again = Runtime::builder().split(1).mpi().build();
    let finalised = matches!(&again, Err(BuildError::Mpi(MpiError::Unavailable { reason })) if reason.contains("finalised"));
    if rank == 0 {
        let passed = ran * rt().ranks() as i64 - total;
        println!(
            "test result: {}. {passed} passed; {total} failed (checks × {} ranks)",
            if total == 0 { "ok" } else { "FAILED" },
            rt().ranks()
        );
    }
    if !finalised {
        println!("rank {rank}: a runtime after MPI's finalisation was not refused: {again:?}");
        return ExitCode::FAILURE;
    }
    if total == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn download(lane: &weft::Lane, h: &TensorHandle) -> Result<Tensor, String> {
    lane.download(h)
        .map_err(|e| e.to_string())?
        .wait_timeout(OP_LIMIT)
        .map_err(|e| e.to_string())
}

fn values<T: weft::tensor::Element + Clone>(
    lane: &weft::Lane,
    h: &TensorHandle,
) -> Result<(Vec<usize>, Vec<T>), String> {
    let t = download(lane, h)?;
    let shape = t.shape().to_vec();
    Ok((shape, t.into_vec::<T>().map_err(|e| e.to_string())?))
}

fn upload<T: weft::tensor::Element>(
    lane: &weft::Lane,
    v: Vec<T>,
    shape: &[usize],
) -> Result<TensorHandle, String> {
    let t = Tensor::from_vec(v, shape).map_err(|e| e.to_string())?;
    lane.upload(t).map_err(|e| e.to_string())
}

fn check(ok: bool, what: impl Into<String>) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(what.into())
    }
}

fn me() -> (usize, usize, weft::Lane) {
    let rt = rt();
    (rt.rank(), rt.ranks(), rt.lane(0).expect("lane"))
}

fn ranks_are_the_jobs() -> Result<(), String> {
    let (rank, ranks, _) = me();
    let want: usize = std::env::var("OMPI_COMM_WORLD_SIZE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(ranks);
    check(
        ranks == want && rank < ranks,
        format!("rank {rank} of {ranks}, launcher says {want}"),
    )
}

fn a_ring_of_sends_arrives_intact() -> Result<(), String> {
    let (rank, ranks, lane) = me();
    let (next, prev) = ((rank + 1) % ranks, (rank + ranks - 1) % ranks);
    // Received before it is sent: the receive is posted first on every rank.
    let got = lane
        .recv(prev, 1, DType::F64, &[2, 3])
        .map_err(|e| e.to_string())?;
    let mine: Vec<f64> = (0..6).map(|i| (rank * 100 + i) as f64).collect();
    let sent = lane
        .send(upload(&lane, mine, &[2, 3])?, next, 1)
        .map_err(|e| e.to_string())?;
    let (shape, v) = values::<f64>(&lane, &got)?;
    sent.wait_timeout(OP_LIMIT).map_err(|e| e.to_string())?;
    let want: Vec<f64> = (0..6).map(|i| (prev * 100 + i) as f64).collect();
    check(
        shape == [2, 3] && v == want,
        format!("got {shape:?} {v:?}, want {want:?}"),
    )
}

/// Several threads per rank, each with its own lane and tag, send a stream
/// of tensors round the ring at once: on every tag they arrive in the
/// order sent (MPI's order per pair of ranks and tag), none lost.
fn many_lanes_and_tags_at_once_keep_the_order_per_tag() -> Result<(), String> {
    const THREADS: u32 = 4;
    const MESSAGES: usize = 25;
    let (rank, ranks, _) = me();
    let (next, prev) = ((rank + 1) % ranks, (rank + ranks - 1) % ranks);
    let results: Vec<Result<(), String>> = std::thread::scope(|s| {
        let threads: Vec<_> = (0..THREADS)
            .map(|t| {
                s.spawn(move || -> Result<(), String> {
                    let lane = rt().lane(0).map_err(|e| e.to_string())?;
                    let tag = 100 + t;
                    let mut recvs = Vec::new();
                    let mut sends = Vec::new();
                    for m in 0..MESSAGES {
                        recvs.push(
                            lane.recv(prev, tag, DType::I64, &[m + 1])
                                .map_err(|e| e.to_string())?,
                        );
                        let v = vec![(rank * 1000 + m) as i64 + i64::from(t) * 100_000; m + 1];
                        sends.push(
                            lane.send(upload(&lane, v, &[m + 1])?, next, tag)
                                .map_err(|e| e.to_string())?,
                        );
                    }
                    for (m, h) in recvs.iter().enumerate() {
                        let (_, v) = values::<i64>(&lane, h)?;
                        let want = (prev * 1000 + m) as i64 + i64::from(t) * 100_000;
                        check(
                            v.len() == m + 1 && v.iter().all(|&x| x == want),
                            format!("tag {tag}, message {m}: {v:?}"),
                        )?;
                    }
                    for s in sends {
                        s.wait_timeout(OP_LIMIT).map_err(|e| e.to_string())?;
                    }
                    Ok(())
                })
            })
            .collect();
        threads
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("panicked".into())))
            .collect()
    });
    results.into_iter().collect()
}

fn a_mismatched_recv_fails_typed_and_the_next_one_is_not_shifted() -> Result<(), String> {
    let (rank, _, lane) = me();
    match rank {
        0 => {
            let a = lane
                .send(upload(&lane, vec![1.0f64, 2.0], &[2])?, 1, 2)
                .map_err(|e| e.to_string())?;
            let b = lane
                .send(upload(&lane, vec![3i32, 4, 5], &[3])?, 1, 2)
                .map_err(|e| e.to_string())?;
            a.wait_timeout(OP_LIMIT).map_err(|e| e.to_string())?;
            b.wait_timeout(OP_LIMIT).map_err(|e| e.to_string())?;
            Ok(())
        }
        1 => {
            // Expects three f64: two were sent.
            let bad = lane
                .recv(0, 2, DType::F64, &[3])
                .map_err(|e| e.to_string())?;
            let good = lane
                .recv(0, 2, DType::I32, &[3])
                .map_err(|e| e.to_string())?;
            let e = match download(&lane, &bad) {
                Ok(t) => return Err(format!("a mismatched recv gave {t:?}")),
                Err(e) => e,
            };
            check(
                e.contains("expected f64 [3]") && e.contains("sent f64 [2]"),
                format!("error: {e}"),
            )?;
            let (_, v) = values::<i32>(&lane, &good)?;
            check(v == [3, 4, 5], format!("the next recv got {v:?}"))
        }
        _ => Ok(()),
    }
}

fn allreduce_sums_and_maxes_every_type() -> Result<(), String> {
    let (rank, ranks, lane) = me();
    let r = rank as f64 + 1.0;
    let n = ranks as f64;
    let x = upload(&lane, vec![r, 2.0 * r], &[2])?;
    let sum = lane
        .allreduce(&x, Reduction::Sum)
        .map_err(|e| e.to_string())?;
    let max = lane
        .allreduce(&x, Reduction::Max)
        .map_err(|e| e.to_string())?;
    let i = upload(&lane, vec![rank as i64 - 1], &[1, 1])?;
    let isum = lane
        .allreduce(&i, Reduction::Sum)
        .map_err(|e| e.to_string())?;
    let b = upload(&lane, vec![rank == 0, true], &[2])?;
    let any = lane
        .allreduce(&b, Reduction::Max)
        .map_err(|e| e.to_string())?;
    let all = lane
        .allreduce(&b, Reduction::Min)
        .map_err(|e| e.to_string())?;
    let c = upload(&lane, vec![weft::c64::new(r, -r)], &[1])?;
    let csum = lane
        .allreduce(&c, Reduction::Sum)
        .map_err(|e| e.to_string())?;
    let tri = n * (n + 1.0) / 2.0;
    let (_, v) = values::<f64>(&lane, &sum)?;
    check(v == [tri, 2.0 * tri], format!("sum {v:?}"))?;
    let (_, v) = values::<f64>(&lane, &max)?;
    check(v == [n, 2.0 * n], format!("max {v:?}"))?;
    let (shape, v) = values::<i64>(&lane, &isum)?;
    let want = (0..ranks as i64).map(|k| k - 1).sum::<i64>();
    check(
        shape == [1, 1] && v == [want],
        format!("i64 sum {shape:?} {v:?}"),
    )?;
    let (_, v) = values::<bool>(&lane, &any)?;
    check(v == [true, true], format!("any {v:?}"))?;
    let (_, v) = values::<bool>(&lane, &all)?;
    check(v == [ranks == 1, true], format!("all {v:?}"))?;
    let (_, v) = values::<weft::c64>(&lane, &csum)?;
    check(v == [weft::c64::new(tri, -tri)], format!("c64 sum {v:?}"))
}

fn broadcast_gives_every_rank_the_roots_tensor() -> Result<(), String> {
    let (rank, ranks, lane) = me();
    let root = ranks - 1;
    let mine = if rank == root {
        vec![7.0f32, 8.0, 9.0]
    } else {
        vec![0.0; 3]
    };
    let got = lane
        .broadcast(&upload(&lane, mine, &[3])?, root)
        .map_err(|e| e.to_string())?;
    let (_, v) = values::<f32>(&lane, &got)?;
    check(v == [7.0, 8.0, 9.0], format!("{v:?}"))
}

fn allgather_stacks_in_rank_order() -> Result<(), String> {
    let (rank, ranks, lane) = me();
    let got = lane
        .allgather(&upload(&lane, vec![rank as i32, -(rank as i32)], &[2])?)
        .map_err(|e| e.to_string())?;
    let (shape, v) = values::<i32>(&lane, &got)?;
    let want: Vec<i32> = (0..ranks as i32).flat_map(|r| [r, -r]).collect();
    check(shape == [ranks, 2] && v == want, format!("{shape:?} {v:?}"))
}

fn reduce_scatter_gives_each_rank_its_block() -> Result<(), String> {
    let (rank, ranks, lane) = me();
    let all: Vec<f64> = (0..2 * ranks).map(|i| i as f64).collect();
    let got = lane
        .reduce_scatter(&upload(&lane, all, &[2 * ranks])?, Reduction::Sum)
        .map_err(|e| e.to_string())?;
    let (shape, v) = values::<f64>(&lane, &got)?;
    let n = ranks as f64;
    let want = vec![(2 * rank) as f64 * n, (2 * rank + 1) as f64 * n];
    check(
        shape == [2] && v == want,
        format!("{shape:?} {v:?}, want {want:?}"),
    )
}

fn disagreeing_ranks_all_fail_and_the_next_collective_works() -> Result<(), String> {
    let (rank, _, lane) = me();
    let odd = upload(&lane, vec![1.0f64; rank + 1], &[rank + 1])?;
    let bad = lane
        .allreduce(&odd, Reduction::Sum)
        .map_err(|e| e.to_string())?;
    let even = upload(&lane, vec![1.0f64; 2], &[2])?;
    let good = lane
        .allreduce(&even, Reduction::Sum)
        .map_err(|e| e.to_string())?;
    match download(&lane, &bad) {
        Ok(t) => return Err(format!("a disagreeing allreduce gave {t:?}")),
        Err(e) => check(
            e.contains("disagree on the shape") && e.contains(&format!("[{}]", rank + 1)),
            format!("error: {e}"),
        )?,
    }
    let (_, v) = values::<f64>(&lane, &good)?;
    let n = rt().ranks() as f64;
    check(v == [n, n], format!("the next allreduce gave {v:?}"))?;
    // Rank 0 sums where the others take the maximum: every rank is told
    // which reductions the ranks asked for.
    let reduction = if rank == 0 {
        Reduction::Sum
    } else {
        Reduction::Max
    };
    let mixed = lane
        .allreduce(&even, reduction)
        .map_err(|e| e.to_string())?;
    match download(&lane, &mixed) {
        Ok(t) => Err(format!("allreduces of sum and max gave {t:?}")),
        Err(e) => check(
            e.contains("disagree on the reduction (from sum to max over the ranks)"),
            format!("error: {e}"),
        ),
    }
}

fn a_received_tensor_feeds_the_domain_ops() -> Result<(), String> {
    let (rank, ranks, lane) = me();
    // Rank 0 sends the identity to every other rank, which multiplies by it.
    if rank == 0 {
        let eye = lane.eye(DType::F64, 3, 3).map_err(|e| e.to_string())?;
        let tickets = (1..ranks)
            .map(|to| lane.send(eye.clone(), to, 3).map_err(|e| e.to_string()))
            .collect::<Result<Vec<_>, _>>()?;
        for t in tickets {
            t.wait_timeout(OP_LIMIT).map_err(|e| e.to_string())?;
        }
        return Ok(());
    }
    let eye = lane
        .recv(0, 3, DType::F64, &[3, 3])
        .map_err(|e| e.to_string())?;
    let x = upload(&lane, (0..9).map(f64::from).collect(), &[3, 3])?;
    let y = lane.matmul(&x, &eye).map_err(|e| e.to_string())?;
    let (_, v) = values::<f64>(&lane, &y)?;
    check(
        v == (0..9).map(f64::from).collect::<Vec<_>>(),
        format!("{v:?}"),
    )
}

/// Large tensors (sent from and received into the domain's pooled
/// buffers, which come back and are reused) arrive intact, round after
/// round with new values, through sends and collectives.
fn large_tensors_through_pooled_buffers_arrive_intact() -> Result<(), String> {
    const N: usize = 40_000; // 320 KB of f64: above the pooling threshold
    let (rank, ranks, lane) = me();
    let (next, prev) = ((rank + 1) % ranks, (rank + ranks - 1) % ranks);
    for round in 0..3usize {
        let value = |r: usize, i: usize| (r * 1_000_000 + round * 100_000 + i) as f64;
        let got = lane
            .recv(prev, 30, DType::F64, &[N])
            .map_err(|e| e.to_string())?;
        let mine = upload(&lane, (0..N).map(|i| value(rank, i)).collect(), &[N])?;
        let sent = lane
            .send(mine.clone(), next, 30)
            .map_err(|e| e.to_string())?;
        let sum = lane
            .allreduce(&mine, Reduction::Sum)
            .map_err(|e| e.to_string())?;
        let (_, v) = values::<f64>(&lane, &got)?;
        sent.wait_timeout(OP_LIMIT).map_err(|e| e.to_string())?;
        let bad = (0..N).find(|&i| v[i] != value(prev, i));
        check(
            bad.is_none(),
            format!("round {round}: element {bad:?} of the send"),
        )?;
        let (_, s) = values::<f64>(&lane, &sum)?;
        let bad = (0..N).find(|&i| s[i] != (0..ranks).map(|r| value(r, i)).sum::<f64>());
        check(
            bad.is_none(),
            format!("round {round}: element {bad:?} of the allreduce"),
        )?;
    }
    Ok(())
}

/// A send given the last handle moves the store's own buffer to MPI (the
/// domain's pool is asked for nothing), even when it runs at once; one
/// given a clone sends a pooled copy, and the tensor stays intact. Rank 1
/// receives both.
fn a_send_of_the_last_handle_moves_the_tensor_without_a_copy() -> Result<(), String> {
    const N: usize = 16_384; // 128 KiB of f64
    let (rank, _, lane) = me();
    let values_of = |i: usize| i as f64 * 0.5;
    match rank {
        0 => {
            let requests = |lane: &weft::Lane| -> Result<u64, String> {
                lane.run(|engine: &mut weft::CpuEngine| {
                    let s = engine.buffer_stats();
                    s.hits + s.misses
                })
                .map_err(|e| e.to_string())?
                .wait_timeout(OP_LIMIT)
                .map_err(|e| e.to_string())
            };
            let kept = upload(&lane, (0..N).map(values_of).collect(), &[N])?;
            let given = upload(&lane, (0..N).map(values_of).collect(), &[N])?;
            let before = requests(&lane)?;
            lane.send(kept.clone(), 1, 40)
                .map_err(|e| e.to_string())?
                .wait_timeout(OP_LIMIT)
                .map_err(|e| e.to_string())?;
            let copied = requests(&lane)? - before;
            lane.send(given, 1, 40)
                .map_err(|e| e.to_string())?
                .wait_timeout(OP_LIMIT)
                .map_err(|e| e.to_string())?;
            let moved = requests(&lane)? - before - copied;
            check(
                copied == 1 && moved == 0,
                format!("pool requests: {copied} for the held tensor's send, {moved} for the given one's"),
            )?;
            let (_, v) = values::<f64>(&lane, &kept)?;
            check(
                v.iter().enumerate().all(|(i, &x)| x == values_of(i)),
                "the held tensor changed",
            )
        }
        1 => {
            for round in 0..2 {
                let got = lane
                    .recv(0, 40, DType::F64, &[N])
                    .map_err(|e| e.to_string())?;
                let (_, v) = values::<f64>(&lane, &got)?;
                let bad = (0..N).find(|&i| v[i] != values_of(i));
                check(bad.is_none(), format!("send {round}: element {bad:?}"))?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Receives complete in the order their messages come, not the order they
/// were posted: rank 0 posts receives on tags A then B, and rank 1 sends
/// on A only after rank 0 has answered what came on B.
fn receives_complete_in_the_order_their_messages_come() -> Result<(), String> {
    let (rank, _, lane) = me();
    let (a, b, c) = (20, 21, 22);
    match rank {
        0 => {
            let first = lane
                .recv(1, a, DType::F64, &[2])
                .map_err(|e| e.to_string())?;
            let second = lane
                .recv(1, b, DType::F64, &[2])
                .map_err(|e| e.to_string())?;
            let echo = lane.send(second, 1, c).map_err(|e| e.to_string())?;
            let (_, v) = values::<f64>(&lane, &first)?;
            echo.wait_timeout(OP_LIMIT).map_err(|e| e.to_string())?;
            check(v == [5.0, 6.0], format!("{v:?}"))
        }
        1 => {
            let x = upload(&lane, vec![1.0f64, 2.0], &[2])?;
            drop(lane.send(x, 0, b).map_err(|e| e.to_string())?);
            let back = lane
                .recv(0, c, DType::F64, &[2])
                .map_err(|e| e.to_string())?;
            let (_, v) = values::<f64>(&lane, &back)?;
            check(v == [1.0, 2.0], format!("echo {v:?}"))?;
            let z = upload(&lane, vec![5.0f64, 6.0], &[2])?;
            lane.send(z, 0, a)
                .map_err(|e| e.to_string())?
                .wait_timeout(OP_LIMIT)
                .map_err(|e| e.to_string())
        }
        _ => Ok(()),
    }
}

/// A send whose tensor's producer fails on the actor fails with that
/// reason, and sends nothing: the next message on the tag is the next one.
fn a_send_of_a_failed_tensor_fails_with_its_reason() -> Result<(), String> {
    let (rank, ranks, lane) = me();
    let (next, prev) = ((rank + 1) % ranks, (rank + ranks - 1) % ranks);
    let got = lane
        .recv(prev, 4, DType::I32, &[1])
        .map_err(|e| e.to_string())?;
    let one = upload(&lane, vec![1i32], &[1])?;
    let zero = upload(&lane, vec![0i32], &[1])?;
    let failed = lane.floor_div(&one, &zero).map_err(|e| e.to_string())?;
    let e = match lane
        .send(failed, next, 4)
        .map_err(|e| e.to_string())?
        .wait_timeout(OP_LIMIT)
    {
        Ok(()) => return Err("the send of a failed tensor succeeded".into()),
        Err(e) => e.to_string(),
    };
    check(
        e.contains("its input failed") && e.contains("zero"),
        format!("error: {e}"),
    )?;
    let sent = lane.send(one, next, 4).map_err(|e| e.to_string())?;
    let (_, v) = values::<i32>(&lane, &got)?;
    sent.wait_timeout(OP_LIMIT).map_err(|e| e.to_string())?;
    check(v == [1], format!("received {v:?}"))
}

fn barrier_resolves() -> Result<(), String> {
    rt().barrier()
        .map_err(|e| e.to_string())?
        .wait_timeout(OP_LIMIT)
        .map_err(|e| e.to_string())
}

fn bad_arguments_are_typed_errors_at_the_call() -> Result<(), String> {
    let (_, ranks, lane) = me();
    let x = upload(&lane, vec![1.0f64; 3], &[3])?;
    let e = lane.send(x.clone(), ranks, 0).unwrap_err();
    check(
        matches!(e, OpError::Mpi(MpiError::NoSuchRank { rank, .. }) if rank == ranks),
        format!("{e}"),
    )?;
    let e = lane.recv(0, MAX_TAG + 1, DType::F64, &[3]).unwrap_err();
    check(
        matches!(e, OpError::Mpi(MpiError::Tag { .. })),
        format!("{e}"),
    )?;
    // A shape no message carries is refused before its buffer is taken
    // (8 TiB of f64: an allocation that would abort the process).
    let e = lane.recv(0, 5, DType::F64, &[1 << 40]).unwrap_err();
    check(
        matches!(e, OpError::Mpi(MpiError::TooLarge { op: "recv", count }) if count == 8 << 40),
        format!("{e}"),
    )?;
    let e = lane.recv(0, 5, DType::F64, &[1; 33]).unwrap_err();
    check(
        matches!(e, OpError::Mpi(MpiError::TooManyAxes { axes: 33, .. })),
        format!("{e}"),
    )?;
    let e = lane.reduce_scatter(&x, Reduction::Sum).unwrap_err();
    check(
        ranks == 3 || matches!(e, OpError::Mpi(MpiError::Indivisible { .. })),
        format!("{e}"),
    )?;
    let c = upload(&lane, vec![weft::c32::new(1.0, 0.0)], &[1])?;
    let e = lane.allreduce(&c, Reduction::Max).unwrap_err();
    check(
        e.to_string().contains("max") && e.to_string().contains("c32"),
        format!("{e}"),
    )?;
    let e = lane.broadcast(&x, ranks).unwrap_err();
    check(
        matches!(e, OpError::Mpi(MpiError::NoSuchRank { .. })),
        format!("{e}"),
    )
}

fn a_second_mpi_runtime_is_refused() -> Result<(), String> {
    let e = Runtime::builder().split(1).mpi().build().unwrap_err();
    check(
        matches!(&e, BuildError::Mpi(MpiError::Unavailable { reason }) if reason.contains("already running")),
        format!("{e}"),
    )
}
