//! Round trip and pipelined throughput of empty ops on a lane, each next to
//! a raw crossbeam-channel baseline measured in the same process; the round
//! trip again with the submitting thread pinned onto the actor's CPU and
//! off it; and what opening many lanes costs, in time and resident memory
//! per lane.
//!
//! `cargo run --release -p weft-examples --example lane_bench`

use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, Receiver, Sender};
use weft::{Lane, Runtime};
use weft_examples::{median_per_item, per_second, print_row, recv_spin};

const ROUNDS: usize = 21;
const ROUND_TRIPS: u64 = 20_000;
const PIPELINED: u64 = 200_000;
/// The same spin budgets weft uses by default, so both sides spin alike.
const SPIN: Duration = Duration::from_micros(50);

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // `--only round-trip`, `--only pipelined`, `--only same-cpu` or
    // `--only lanes` runs one part (for profiling).
    let only = std::env::args().skip_while(|a| a != "--only").nth(1);
    let wants = |name: &str| only.as_deref().is_none_or(|o| o == name);
    let rt = Runtime::builder().split(1).build()?;
    println!("{}", rt.topology());
    let lane = rt.lane(0)?;
    if wants("round-trip") {
        round_trip(&lane);
    }
    if wants("pipelined") {
        pipelined(&lane);
    }
    if wants("same-cpu") {
        same_cpu(&lane)?;
    }
    if wants("lanes") {
        many_lanes(&rt);
    }
    println!("{}", rt.stats());
    Ok(())
}

fn round_trip(lane: &Lane) {
    let weft_rtt = median_per_item(ROUNDS, ROUND_TRIPS, || {
        for _ in 0..ROUND_TRIPS {
            lane.run(|_| ()).expect("open").wait().expect("ran");
        }
    });
    let raw_rtt = raw_ping_pong();
    print_row(
        "round trip (submit + wait)",
        weft_rtt,
        raw_rtt,
        "crossbeam ping-pong",
    );
}

fn pipelined(lane: &Lane) {
    let weft_pipe = median_per_item(ROUNDS, PIPELINED, || {
        let mut last = None;
        for _ in 0..PIPELINED {
            last = Some(lane.run(|_| ()).expect("open"));
        }
        last.expect("at least one op").wait().expect("ran");
    });
    let raw_pipe = raw_pipelined();
    print_row(
        "pipelined empty op",
        weft_pipe,
        raw_pipe,
        "crossbeam pipelined",
    );
    println!(
        "pipelined throughput: weft {:.1} M ops/s, crossbeam {:.1} M msgs/s",
        per_second(weft_pipe) / 1e6,
        per_second(raw_pipe) / 1e6
    );
}

/// The round trip with this thread pinned onto the actor's CPU, where the
/// two sides take turns on one CPU, and onto another CPU of the process;
/// the thread's own CPUs are given back after.
fn same_cpu(lane: &Lane) -> Result<(), Box<dyn std::error::Error>> {
    let actor_cpu = lane.run(|_| weft::topology::current_cpu())?.wait()?;
    let allowed = weft::topology::process_allowed_cpus()?;
    let Some(actor_cpu) = actor_cpu else {
        println!("same CPU: skipped, the platform does not say which CPU a thread runs on");
        return Ok(());
    };
    let other = allowed.iter().find(|&c| c != actor_cpu);
    let mut rows = vec![("on the actor's CPU", actor_cpu)];
    rows.extend(other.map(|c| ("on another CPU", c)));
    for (name, cpu) in rows {
        weft::topology::pin_current_thread(&weft::topology::CpuSet::single(cpu))?;
        let rtt = median_per_item(ROUNDS, ROUND_TRIPS / 4, || {
            for _ in 0..ROUND_TRIPS / 4 {
                lane.run(|_| ()).expect("open").wait().expect("ran");
            }
        });
        println!(
            "round trip, submitter {name} (CPU {cpu}): {:.3} µs ({:.0} k/s)",
            rtt.as_secs_f64() * 1e6,
            per_second(rtt) / 1e3
        );
    }
    weft::topology::pin_current_thread(&allowed)?;
    Ok(())
}

/// Opens `n` lanes at once, submits one empty op on each (so each queue
/// has taken its first op), and reports the time per open and the growth
/// of resident memory per lane; each lane's capacity is the default.
fn many_lanes(rt: &Runtime) {
    for n in [1_000usize, 10_000, 40_000] {
        let before = resident_bytes();
        let started = Instant::now();
        let lanes: Vec<Lane> = (0..n).map(|_| rt.lane(0).expect("open")).collect();
        let open = started.elapsed();
        let tickets: Vec<_> = lanes.iter().map(|l| l.run(|_| ()).expect("open")).collect();
        for t in tickets {
            t.wait().expect("ran");
        }
        let grown = resident_bytes().saturating_sub(before);
        println!(
            "{n:>6} lanes: open {:>7.2?} per lane ({:.2?} in all), resident +{} B per lane",
            open / n as u32,
            open,
            grown / n
        );
        drop(lanes);
    }
}

/// The process's resident memory, from `/proc/self/statm` (0 elsewhere).
fn resident_bytes() -> usize {
    let pages = std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<usize>().ok())
        .unwrap_or(0);
    pages * 4096
}

fn echo_server(rx: Receiver<u64>, tx: Sender<u64>) -> thread::JoinHandle<()> {
    thread::spawn(move || {
        while let Some(v) = recv_spin(&rx, SPIN) {
            if tx.send(v).is_err() {
                return;
            }
        }
    })
}

fn raw_ping_pong() -> Duration {
    let (to_server, server_rx) = bounded(1);
    let (server_tx, from_server) = bounded(1);
    let server = echo_server(server_rx, server_tx);
    let per = median_per_item(ROUNDS, ROUND_TRIPS, || {
        for i in 0..ROUND_TRIPS {
            to_server.send(i).expect("server alive");
            recv_spin(&from_server, SPIN).expect("server alive");
        }
    });
    drop(to_server);
    server.join().expect("server ran");
    per
}

fn raw_pipelined() -> Duration {
    let (to_server, server_rx) = bounded::<u64>(1024);
    let (ack_tx, ack_rx) = bounded::<u64>(1);
    let server = thread::spawn(move || {
        let mut seen = 0u64;
        while let Some(v) = recv_spin(&server_rx, SPIN) {
            seen += 1;
            if v == u64::MAX {
                let _ = ack_tx.send(seen);
            }
        }
    });
    let per = median_per_item(ROUNDS, PIPELINED, || {
        for _ in 1..PIPELINED {
            to_server.send(0).expect("server alive");
        }
        to_server.send(u64::MAX).expect("server alive");
        recv_spin(&ack_rx, SPIN).expect("server alive");
    });
    drop(to_server);
    server.join().expect("server ran");
    per
}
