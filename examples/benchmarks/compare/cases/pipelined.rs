//! Case 2, `pipelined`: empty ops submitted back to back, the last one
//! waited for, against crossbeam messages (bare integers, and boxed closures
//! as an op has).

use std::thread;

use crossbeam_channel::bounded;
use weft_examples::{recv_spin, BoxError};

use crate::case::{Case, Domain, Run};
use crate::report::{Row, Side, Unit};
use crate::timing::{interleaved, micros};

pub(super) const CASE: Case = Case {
    name: "pipelined",
    title: "2. pipelined empty ops",
    run: Run::InDomain(run),
};

enum Message {
    Run(Box<dyn FnOnce() + Send>),
    Ack,
}

fn run(domain: &Domain<'_>, rows: &mut Vec<Row>) -> Result<(), BoxError> {
    let Domain { settings, lane, .. } = *domain;
    let ops = settings.count(200_000);
    let (idle, wait) = (settings.idle_spin, settings.wait_spin);

    // Bare integers: the channel alone.
    let (to_raw, raw_rx) = bounded::<u64>(1024);
    let (raw_ack, raw_acked) = bounded::<()>(1);
    let raw_server = thread::spawn(move || {
        while let Some(v) = recv_spin(&raw_rx, idle) {
            if v == u64::MAX && raw_ack.send(()).is_err() {
                return;
            }
        }
    });
    // Boxed closures: the channel plus one allocation per op, as an op has.
    let (to_boxed, boxed_rx) = bounded::<Message>(1024);
    let (boxed_ack, boxed_acked) = bounded::<()>(1);
    let boxed_server = thread::spawn(move || {
        while let Some(m) = recv_spin(&boxed_rx, idle) {
            match m {
                Message::Run(f) => f(),
                Message::Ack => {
                    if boxed_ack.send(()).is_err() {
                        return;
                    }
                }
            }
        }
    });
    let [weft, raw, boxed] = interleaved(
        settings.reps(11),
        [
            &mut || {
                let mut last = None;
                for _ in 0..ops {
                    last = Some(lane.run(|_| ()).expect("open"));
                }
                last.expect("one op at least").wait().expect("ran");
            },
            &mut || {
                for i in 1..ops {
                    to_raw.send(i).expect("server alive");
                }
                to_raw.send(u64::MAX).expect("server alive");
                recv_spin(&raw_acked, wait).expect("server alive");
            },
            &mut || {
                for _ in 1..ops {
                    let f: Box<dyn FnOnce() + Send> = Box::new(|| ());
                    to_boxed.send(Message::Run(f)).expect("server alive");
                }
                to_boxed.send(Message::Ack).expect("server alive");
                recv_spin(&boxed_acked, wait).expect("server alive");
            },
        ],
    );
    drop((to_raw, to_boxed));
    raw_server.join().expect("server ran");
    boxed_server.join().expect("server ran");

    let what = format!("{ops} empty ops, wait the last");
    let weft_side = || Side::new("lane.run ×N, wait last", micros(weft, ops));
    rows.push(
        Row::new(
            CASE.name,
            "pipelined",
            what.clone(),
            Unit::MicrosPerOp,
            weft_side(),
        )
        .against(Side::new("crossbeam bounded(1024), u64", micros(raw, ops))),
    );
    rows.push(
        Row::new(
            CASE.name,
            "pipelined-boxed",
            what,
            Unit::MicrosPerOp,
            weft_side(),
        )
        .against(Side::new(
            "crossbeam bounded(1024), boxed closure",
            micros(boxed, ops),
        )),
    );
    Ok(())
}
