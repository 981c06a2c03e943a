//! Case 1, `round-trip`: an empty op's round trip (submit, wait) against a
//! crossbeam ping-pong between two threads.

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
    let [weft, raw] = interleaved(
        settings.reps(11),
        [
            &mut || {
                for _ in 0..trips {
                    lane.run(|_| ()).expect("open").wait().expect("ran");
                }
            },
            &mut || {
                for i in 0..trips {
                    to_server.send(i).expect("server alive");
                    recv_spin(&from_server, wait).expect("server alive");
                }
            },
        ],
    );
    drop(to_server);
    server.join().expect("server ran");
    rows.push(
        Row::new(
            CASE.name,
            "round-trip",
            "empty op, submit + wait",
            Unit::MicrosPerOp,
            Side::new("lane.run + wait", micros(weft, trips)),
        )
        .against(Side::new(
            "crossbeam bounded(1) ping-pong",
            micros(raw, trips),
        )),
    );
    Ok(())
}
