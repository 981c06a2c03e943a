//! Tensors between two MPI ranks through weft, against the `mpi` crate
//! (rsmpi) called directly in the same program.
//!
//! ```text
//! cargo build --release -p weft-examples --features mpi --example mpi_bench
//! mpirun -n 2 target/release/examples/mpi_bench      # as root: --allow-run-as-root
//! ```
//!
//! - ping-pong of an f64 tensor, 8 B to 64 MiB: rank 0 sends, rank 1 sends
//!   what it received back. weft: `send` and `recv` on lanes, rank 0
//!   waiting for each reply (`sync`); raw: rsmpi's blocking `send` and
//!   `receive_into` of the same bytes, run on weft's MPI actor thread (the
//!   only thread of the process that may call MPI) through
//!   `Runtime::mpi_lane`. Round-trip time and bandwidth (2 × bytes per round
//!   trip), the median of 5 rounds.
//! - `allreduce` (sum) of 1 to 64 MiB of f64 over the ranks: weft's against
//!   rsmpi's `all_reduce_into`, the same way.
//! - `allreduce` (sum) of 1 and 8 f64 into a host value, waited for each
//!   time (a distributed norm or Lanczos step): `Runtime::allreduce_values`
//!   (`values`), and a resident tensor's `allreduce` and its download
//!   (`tensor`), against rsmpi's `all_reduce_into`; and MPI's own
//!   nonblocking allreduce tested in a loop (`polled`), as weft's MPI actor
//!   tests its requests: the least a nonblocking call costs.

use std::time::{Duration, Instant};

use mpi::collective::SystemOperation;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use weft::{mpi::Reduction, DType, Lane, Runtime, Tensor};
use weft_examples::BoxError;

const ROUNDS: usize = 5;

fn main() -> Result<(), BoxError> {
    // Two ranks share the machine: each runs one domain of one thread, and
    // no thread spins before it parks (on a machine with fewer cores than
    // threads, a spinning thread takes the core the next hop needs: with
    // the default spins a round trip takes about 1.6x as long on 2 cores).
    let rt = Runtime::builder()
        .split(1)
        .threads_per_domain(1)
        .idle_spin(Duration::ZERO)
        .wait_spin(Duration::ZERO)
        .mpi()
        .build()?;
    if rt.ranks() != 2 {
        if rt.rank() == 0 {
            eprintln!(
                "mpi_bench: run it as two ranks (mpirun -n 2), not {}",
                rt.ranks()
            );
        }
        rt.shutdown()?;
        return Ok(());
    }
    let rank = rt.rank();
    for d in rt.threads() {
        let given = match &d.share {
            Some(s) => format!("part {} of {} of CPUs {}", s.part, s.parts, s.of),
            None => "all the CPUs it was given".into(),
        };
        eprintln!(
            "rank {rank}: domain {} on CPUs {} ({given})",
            d.domain, d.cpus
        );
    }
    let lane = rt.lane(0)?;
    let mpi = rt.mpi_lane()?;
    let say = |line: String| {
        if rank == 0 {
            println!("{line}");
        }
    };
    say("ping-pong between 2 ranks (round trip, median of 5 rounds)".into());
    for elements in [1usize, 128, 8 << 10, 128 << 10, 1 << 20, 8 << 20] {
        let bytes = elements * 8;
        // Enough round trips per round for a measurable time.
        let reps = ((64usize << 20) / bytes).clamp(4, 2000);
        let x = lane.upload(Tensor::from_vec(vec![1.0f64; elements], &[elements])?)?;
        let weft = median(|| ping_pong_weft(&lane, rank, &x, elements, reps))? / reps as u32;
        let raw = on_mpi(&mpi, reps, move || ping_pong_raw(rank, elements, reps))?;
        say(row(&size(bytes), bytes * 2, weft, raw));
    }
    say("allreduce (sum) over 2 ranks (median of 5 rounds)".into());
    for elements in [128usize << 10, 1 << 20, 8 << 20] {
        let bytes = elements * 8;
        let reps = ((256usize << 20) / bytes).clamp(3, 50);
        let x = lane.upload(Tensor::from_vec(vec![1.0f64; elements], &[elements])?)?;
        let weft = per_rep(reps, || {
            let y = lane.allreduce(&x, Reduction::Sum)?;
            lane.sync(&y)?.wait()?;
            Ok(())
        })?;
        let raw = on_mpi(&mpi, reps, move || allreduce_raw(elements, reps))?;
        say(row(&size(bytes), bytes, weft, raw));
    }
    say("allreduce (sum) of a few f64 into a host value (median of 5 rounds)".into());
    for elements in [1usize, 8] {
        let bytes = elements * 8;
        let reps = 2000;
        let local = vec![1.0f64; elements];
        let values = per_rep(reps, || {
            rt.allreduce_values(&local, Reduction::Sum)?.wait()?;
            Ok(())
        })?;
        let x = lane.upload(Tensor::from_vec(local.clone(), &[elements])?)?;
        let tensor = per_rep(reps, || {
            let y = lane.allreduce(&x, Reduction::Sum)?;
            lane.download(&y)?.wait()?;
            Ok(())
        })?;
        let raw = on_mpi(&mpi, reps, move || allreduce_raw(elements, reps))?;
        // MPI's nonblocking allreduce, tested in a loop as weft's MPI
        // actor tests its requests: what weft's own call costs at least.
        let polled = on_mpi(&mpi, reps, move || {
            let world = SimpleCommunicator::world();
            let send = vec![1.0f64; elements];
            let mut recv = vec![0.0f64; elements];
            let start = Instant::now();
            for _ in 0..reps {
                mpi::request::scope(|scope| {
                    let mut request = world.immediate_all_reduce_into(
                        scope,
                        &send[..],
                        &mut recv[..],
                        SystemOperation::sum(),
                    );
                    loop {
                        match request.test() {
                            Ok(_) => break,
                            Err(r) => request = r,
                        }
                    }
                });
            }
            start.elapsed()
        })?;
        let name = size(bytes);
        say(row(&format!("{name} values"), bytes, values, raw));
        say(row(&format!("{name} tensor"), bytes, tensor, raw));
        say(row(&format!("{name} polled"), bytes, polled, raw));
    }
    rt.shutdown()?;
    Ok(())
}

/// `reps` round trips of `x` through weft, timed on this rank.
fn ping_pong_weft(
    lane: &Lane,
    rank: usize,
    x: &weft::TensorHandle,
    elements: usize,
    reps: usize,
) -> Result<Duration, BoxError> {
    let start = Instant::now();
    if rank == 0 {
        // The tensor that comes back is sent on, its buffer moving to MPI
        // (only the first send, of `x`, which the caller keeps, copies).
        let mut ball = x.clone();
        for _ in 0..reps {
            drop(lane.send(ball, 1, 1)?);
            ball = lane.recv(1, 2, DType::F64, &[elements])?;
            lane.sync(&ball)?.wait()?;
        }
    } else {
        let mut last = None;
        for _ in 0..reps {
            let got = lane.recv(0, 1, DType::F64, &[elements])?;
            last = Some(lane.send(got, 0, 2)?);
        }
        if let Some(last) = last {
            last.wait()?;
        }
    }
    Ok(start.elapsed())
}

/// `reps` sums of `elements` f64 through rsmpi's blocking allreduce, on
/// the MPI actor's thread, after one untimed (the receive buffer's pages
/// are touched).
fn allreduce_raw(elements: usize, reps: usize) -> Duration {
    let world = SimpleCommunicator::world();
    let send = vec![1.0f64; elements];
    let mut recv = vec![0.0f64; elements];
    world.all_reduce_into(&send[..], &mut recv[..], SystemOperation::sum());
    let start = Instant::now();
    for _ in 0..reps {
        world.all_reduce_into(&send[..], &mut recv[..], SystemOperation::sum());
    }
    start.elapsed()
}

/// The same round trips through rsmpi, on the MPI actor's thread.
fn ping_pong_raw(rank: usize, elements: usize, reps: usize) -> Duration {
    let world = SimpleCommunicator::world();
    let peer = world.process_at_rank(1 - rank as i32);
    let mut buf = vec![1.0f64; elements];
    let start = Instant::now();
    for _ in 0..reps {
        if rank == 0 {
            peer.send(&buf[..]);
            peer.receive_into(&mut buf[..]);
        } else {
            peer.receive_into(&mut buf[..]);
            peer.send(&buf[..]);
        }
    }
    start.elapsed()
}

/// The time per repetition of `once`, run `reps` times a round on this
/// thread (the median round).
fn per_rep(
    reps: usize,
    mut once: impl FnMut() -> Result<(), BoxError>,
) -> Result<Duration, BoxError> {
    let round = median(|| {
        let start = Instant::now();
        for _ in 0..reps {
            once()?;
        }
        Ok(start.elapsed())
    })?;
    Ok(round / reps as u32)
}

/// The time per repetition of `round`, a timed loop of `reps` raw MPI
/// calls run on the MPI actor's thread (the median round).
fn on_mpi(
    mpi: &weft::actor::Lane<weft::mpi::MpiEngine>,
    reps: usize,
    round: impl Fn() -> Duration + Send + Clone + 'static,
) -> Result<Duration, BoxError> {
    let round = median(|| {
        let round = round.clone();
        Ok(mpi.run(move |_| round())?.wait()?)
    })?;
    Ok(round / reps as u32)
}

/// The median of `ROUNDS` runs of `f`, after one warm-up.
fn median(mut f: impl FnMut() -> Result<Duration, BoxError>) -> Result<Duration, BoxError> {
    f()?;
    let mut times = (0..ROUNDS).map(|_| f()).collect::<Result<Vec<_>, _>>()?;
    times.sort();
    Ok(times[ROUNDS / 2])
}

fn size(bytes: usize) -> String {
    match bytes {
        b if b >= 1 << 20 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 => format!("{} KiB", b >> 10),
        b => format!("{b} B"),
    }
}

/// One row: each side's time and rate (`moved` bytes per operation), and
/// weft's time as a multiple of the raw one.
fn row(name: &str, moved: usize, weft: Duration, raw: Duration) -> String {
    let rate = |t: Duration| moved as f64 / t.as_secs_f64() / 1e9;
    format!(
        "{name:>14}   weft {:>10.2} µs {:>7.2} GB/s   rsmpi {:>10.2} µs {:>7.2} GB/s   \
         weft/raw time {:>5.2}x",
        weft.as_secs_f64() * 1e6,
        rate(weft),
        raw.as_secs_f64() * 1e6,
        rate(raw),
        weft.as_secs_f64() / raw.as_secs_f64()
    )
}
