//! Case 1, `round-trip`: an empty op's round trip (submit, wait) against a
//! crossbeam ping-pong between two threads, and against the floor of any
//! exchange between two cores: one atomic handed back and forth (each hop
//! moves one cache line); and the same round trip with the submitting
//! thread pinned onto the actor's CPU, against the crossbeam ping-pong.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;

use crossbeam_channel::bounded;
use weft_examples::{recv_spin, BoxError};

use crate::case::{Case, Domain, Run};
use crate::report::{Row, Side, Unit};
use crate::timing::{interleaved, micros};

pub(super) const CASE: Case = Case {
    name: "round-trip",
    title: "1. empty op round trip",
    run: Run::InDomain(run),
};

fn run(domain: &Domain<'_>, rows: &mut Vec<Row>) -> Result<(), BoxError> {
    let Domain { settings, lane, .. } = *domain;
    let trips = settings.count(20_000);
    let (idle, wait) = (settings.idle_spin, settings.wait_spin);
    let (to_server, server_rx) = bounded::<u64>(1);
    let (server_tx, from_server) = bounded::<u64>(1);
    let server = thread::spawn(move || {
        while let Some(v) = recv_spin(&server_rx, idle) {
            if server_tx.send(v).is_err() {
                return;
            }
        }
    });
    let [weft, raw, line] = interleaved(
        settings.reps(11),
        [
            &mut || round_trips(lane, trips),
            &mut || {
                for i in 0..trips {
                    to_server.send(i).expect("server alive");
                    recv_spin(&from_server, wait).expect("server alive");
                }
            },
            &mut || line_round_trips(trips),
        ],
    );
    // The submitter on the actor's CPU, where the two take turns.
    let same_cpu = match lane.run(|_| weft::topology::current_cpu())?.wait()? {
        Some(cpu) => {
            let allowed = weft::topology::process_allowed_cpus()?;
            weft::topology::pin_current_thread(&weft::topology::CpuSet::single(cpu))?;
            let [pinned] = interleaved(settings.reps(11), [&mut || round_trips(lane, trips)]);
            weft::topology::pin_current_thread(&allowed)?;
            Some(pinned)
        }
        None => None,
    };
    drop(to_server);
    server.join().expect("server ran");
    let pingpong = || Side::new("crossbeam bounded(1) ping-pong", micros(raw, trips));
    rows.push(
        Row::new(
            CASE.name,
            "round-trip",
            "empty op, submit + wait",
            Unit::MicrosPerOp,
            Side::new("lane.run + wait", micros(weft, trips)),
        )
        .against(pingpong()),
    );
    rows.push(
        Row::new(
            CASE.name,
            "round-trip-line",
            "empty op, submit + wait",
            Unit::MicrosPerOp,
            Side::new("lane.run + wait", micros(weft, trips)),
        )
        .against(Side::new(
            "one cache line there and back (atomic ping-pong)",
            micros(line, trips),
        )),
    );
    if let Some(pinned) = same_cpu {
        rows.push(
            Row::new(
                CASE.name,
                "round-trip-same-cpu",
                "same, submitter on the actor's CPU",
                Unit::MicrosPerOp,
                Side::new("lane.run + wait", micros(pinned, trips)),
            )
            .against(pingpong()),
        );
    }
    Ok(())
}

/// `trips` round trips of one atomic between this thread and a partner
/// that spins on it (its start, a few microseconds, is in the time).
fn line_round_trips(trips: u64) {
    let line = Arc::new(AtomicU64::new(0));
    let theirs = line.clone();
    let partner = thread::spawn(move || {
        for i in 0..trips {
            while theirs.load(Ordering::Acquire) != 2 * i + 1 {
                std::hint::spin_loop();
            }
            theirs.store(2 * i + 2, Ordering::Release);
        }
    });
    for i in 0..trips {
        line.store(2 * i + 1, Ordering::Release);
        while line.load(Ordering::Acquire) != 2 * i + 2 {
            std::hint::spin_loop();
        }
    }
    partner.join().expect("partner ran");
}

/// `trips` empty ops on `lane`, each waited for.
fn round_trips(lane: &weft::Lane, trips: u64) {
    for _ in 0..trips {
        lane.run(|_| ()).expect("open").wait().expect("ran");
    }
}
