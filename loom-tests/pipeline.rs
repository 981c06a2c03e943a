//! A user's model of an application built on weft, written only against
//! weft's public API, as an application's own test would be. Run it with
//!
//! ```sh
//! RUSTFLAGS="--cfg weft_loom" LOOM_MAX_PREEMPTIONS=1 \
//!     cargo test --release --target-dir target/loom -p weft-loom-tests --test pipeline
//! ```
//!
//! The application is a two-stage pipeline over two domains with a bounded
//! window of items in flight. Stage one, on domain 0, uploads item `i` as a
//! tensor and records its tag in a table the application keeps (its own
//! state, beside weft's); the tensor moves to domain 1, where stage two
//! reads the tag, and the sink downloads the tensor from there. Stage
//! two's read of the table is safe only if it is ordered after stage one's
//! op, by that op's event: the tensors are ordered by weft, the table only
//! by what the application says.
//!
//! The models check that every item arrives once, in order, with its tag;
//! that a shutdown in the middle resolves every ticket (a hang is a loom
//! deadlock); that a sink awaiting its tickets as futures (loom's
//! `block_on`) and polling them with `try_wait` gets the same; and that the
//! same application with stage two's ordering forgotten is caught. Two
//! more check a transfer's swap (the destination gives a buffer of its
//! pool back to the source's): that the source's pool has it before any
//! op the application submits after the transfer arrived, and that a
//! shutdown racing the swap still resolves every ticket. `scripts/loom.sh`
//! (CI's loom step) runs them at one preemption: two items take about two
//! and a half minutes here, the swap about three, the others (one item
//! each) well under one.
#![cfg(weft_loom)]

use std::collections::VecDeque;

use loom::sync::{Arc, Mutex};
use loom::thread;
use weft::{
    error::TryWaitError, CpuEngine, Lane, Op, OpError, Runtime, Tensor, Ticket, TicketError,
};

/// How stage two is ordered against stage one.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Stage2 {
    /// After stage one's event: the application is right.
    AfterStage1,
    /// Not ordered: the bug the broken model plants.
    Unordered,
}

/// What the application keeps beside weft: each item's tag, written by
/// stage one and taken by stage two.
type Tags = Arc<Mutex<Vec<Option<usize>>>>;

/// One item in flight: its stage-two ticket (the tag it read) and the
/// sink's download.
struct InFlight {
    item: usize,
    tag: Ticket<Option<usize>>,
    value: Ticket<Tensor, OpError>,
}

/// An item as the sink saw it: its tag and value, or why it did not come.
#[derive(Debug, PartialEq)]
enum Arrived {
    Item { item: usize, tag: usize, value: f64 },
    TagMissing { item: usize },
    Failed { item: usize },
}

/// The application: sends `items` through the pipeline with at most
/// `window` in flight, and returns what arrived, in the order the sink
/// took it. Stops submitting once the runtime refuses an op (shut down).
fn pipeline(rt: &Runtime, items: usize, window: usize, order: Stage2) -> Vec<Arrived> {
    let (Ok(first), Ok(second)) = (rt.lane(0), rt.lane(1)) else {
        return Vec::new(); // shut down before the first item
    };
    let tags: Tags = Arc::new(Mutex::new(vec![None; items]));
    let mut in_flight = VecDeque::new();
    let mut arrived = Vec::new();
    for item in 0..items {
        if in_flight.len() == window {
            arrived.push(sink(in_flight.pop_front().expect("a full window")));
        }
        match submit(&first, &second, &tags, item, order) {
            Some(flight) => in_flight.push_back(flight),
            None => break,
        }
    }
    arrived.extend(in_flight.into_iter().map(sink));
    arrived
}

/// Submits item `item`'s stages; `None` once the runtime is shut down.
fn submit(
    first: &Lane,
    second: &Lane,
    tags: &Tags,
    item: usize,
    order: Stage2,
) -> Option<InFlight> {
    let tensor = Tensor::from_vec(vec![item as f64], &[1]).expect("a one-element tensor");
    let uploaded = first.upload(tensor).ok()?;
    let table = tags.clone();
    let tagged = first
        .run(move |_: &mut CpuEngine| table.lock().unwrap()[item] = Some(item))
        .ok()?;
    let moved = first.transfer(&uploaded, 1).ok()?;
    let table = tags.clone();
    let read = Op::new(move |_: &mut CpuEngine| table.lock().unwrap()[item].take());
    let read = match order {
        Stage2::AfterStage1 => read.after([tagged.event()]),
        Stage2::Unordered => read,
    };
    let tag = second.submit(read).ok()?;
    let value = second.download(&moved).ok()?;
    Some(InFlight { item, tag, value })
}

/// Waits for an item's tickets.
fn sink(flight: InFlight) -> Arrived {
    let InFlight { item, tag, value } = flight;
    match (tag.wait(), value.wait()) {
        (Ok(tag), Ok(tensor)) => whole(item, tag, &tensor),
        (Ok(None), _) => Arrived::TagMissing { item },
        (Err(e), _) => {
            assert!(resolved_by_shutdown(&e), "item {item}'s tag: {e}");
            Arrived::Failed { item }
        }
        (_, Err(e)) => {
            assert!(resolved_by_shutdown(&e), "item {item}'s value: {e}");
            Arrived::Failed { item }
        }
    }
}

/// The sink as an async application writes it: the tag's ticket awaited
/// as a future (loom's `block_on` polls it; the actor wakes its waker),
/// the value's ticket polled with `try_wait` between other work.
fn sink_polling(flight: InFlight) -> Arrived {
    let InFlight {
        item,
        tag,
        mut value,
    } = flight;
    let tag = loom::future::block_on(tag);
    let value = loop {
        match value.try_wait() {
            Ok(tensor) => break Ok(tensor),
            Err(TryWaitError::Pending(ticket)) => {
                value = ticket;
                thread::yield_now(); // the application's other work
            }
            Err(TryWaitError::Failed(e)) => break Err(e),
        }
    };
    match (tag, value) {
        (Ok(tag), Ok(tensor)) => whole(item, tag, &tensor),
        (Ok(None), _) => Arrived::TagMissing { item },
        (tag, value) => panic!("item {item} failed with the runtime up: {tag:?}, {value:?}"),
    }
}

/// An item whose tickets both came back: whole, or its tag missing.
fn whole(item: usize, tag: Option<usize>, tensor: &Tensor) -> Arrived {
    match tag {
        Some(tag) => Arrived::Item {
            item,
            tag,
            value: tensor.as_slice::<f64>().expect("f64")[0],
        },
        None => Arrived::TagMissing { item },
    }
}

/// Whether a ticket failed the way a shutdown fails it: cancelled, or
/// failed because an op it waited on (a tensor's producer) was.
fn resolved_by_shutdown<E>(error: &TicketError<E>) -> bool {
    error.is_cancelled() || error.dependency().is_some()
}

/// Every item that arrived is whole (its tag and its value), the items
/// came in order, once each.
fn check(arrived: &[Arrived]) {
    let mut next = 0;
    for a in arrived {
        match *a {
            Arrived::Item { item, tag, value } => {
                assert_eq!(item, next, "items out of order or twice: {arrived:?}");
                assert_eq!(tag, item, "item {item} got another's tag");
                assert_eq!(value, item as f64, "item {item}'s value");
                next += 1;
            }
            Arrived::TagMissing { item } => {
                panic!("item {item}: stage two read the table before stage one wrote it")
            }
            Arrived::Failed { item } => assert_eq!(item, next, "failures out of order"),
        }
    }
}

/// Runs `f` under loom. A whole application is a long run for loom (each
/// op is a handful of atomic steps on two actors), longer than loom's
/// default bound of 1 000 branches per run.
fn model(f: impl Fn() + Send + Sync + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.max_branches = 100_000;
    builder.check(f);
}

fn model_runtime() -> Runtime {
    Runtime::builder()
        .model_domains(2)
        .build()
        .expect("a model runtime")
}

#[test]
fn every_item_arrives_once_in_order() {
    model(|| {
        let rt = model_runtime();
        let arrived = pipeline(&rt, 2, 1, Stage2::AfterStage1);
        check(&arrived);
        assert_eq!(arrived.len(), 2, "{arrived:?}");
        assert!(arrived.iter().all(|a| matches!(a, Arrived::Item { .. })));
        rt.shutdown().expect("shutdown");
    });
}

#[test]
fn a_shutdown_in_the_middle_resolves_every_ticket() {
    model(|| {
        let rt = model_runtime();
        let stopper = {
            let rt = rt.clone();
            thread::spawn(move || rt.shutdown_now().expect("shutdown"))
        };
        // Every ticket resolves (a wait that never returns is a deadlock
        // loom reports), and what arrived is whole. One item: its five ops
        // give the shutdown six places to land (two items take loom past
        // twenty minutes at one preemption without an end).
        let arrived = pipeline(&rt, 1, 1, Stage2::AfterStage1);
        check(&arrived);
        stopper.join().unwrap();
    });
}

#[test]
fn a_sink_that_awaits_and_polls_gets_every_item() {
    model(|| {
        let rt = model_runtime();
        let (first, second) = (rt.lane(0).unwrap(), rt.lane(1).unwrap());
        let tags: Tags = Arc::new(Mutex::new(vec![None; 1]));
        let flight = submit(&first, &second, &tags, 0, Stage2::AfterStage1).expect("submitted");
        let arrived = [sink_polling(flight)];
        check(&arrived);
        assert!(matches!(arrived[0], Arrived::Item { .. }), "{arrived:?}");
        rt.shutdown().expect("shutdown");
    });
}

/// A transfer large enough to swap buffers: what the destination's pool
/// gives back reaches the source's pool before any op of the source's that
/// a thread submits after the transfer has arrived; with a shutdown racing
/// it, every ticket still resolves and a value that arrives is whole.
fn swap(shutdown_racing: bool) {
    model(move || {
        let rt = model_runtime();
        let (first, second) = (rt.lane(0).unwrap(), rt.lane(1).unwrap());
        let n = weft::engine::SWAP_MIN_BYTES / 8;
        // A buffer of the size in domain 1's pool, for the swap (a memory
        // report frees what finished ops held), and the tensor to move.
        let spare = Tensor::from_vec(vec![0.0; n], &[n]).unwrap();
        drop(second.upload(spare).unwrap());
        second.memory().unwrap().wait().unwrap();
        let x = first
            .upload(Tensor::from_vec(vec![1.0; n], &[n]).unwrap())
            .unwrap();
        // The shutdown races the transfer and the swap only.
        let stopper = shutdown_racing.then(|| {
            let rt = rt.clone();
            thread::spawn(move || rt.shutdown_now().expect("shutdown"))
        });
        let moved = (|| {
            let moved = first.transfer(&x, 1).ok()?;
            second.download(&moved).ok()?.wait().ok()
        })();
        if let Some(t) = &moved {
            assert!(t.as_slice::<f64>().unwrap().iter().all(|&v| v == 1.0));
        }
        match stopper {
            Some(stopper) => drop(stopper.join().unwrap()),
            None => {
                assert!(moved.is_some(), "nothing stopped the transfer");
                let pool = first.memory().unwrap().wait().unwrap().buffers;
                // The buffer given back (`x` is still resident; its copy
                // went to domain 1).
                assert_eq!(pool.pooled_buffers, 1, "{pool:?}");
                rt.shutdown().expect("shutdown");
            }
        }
    });
}

#[test]
fn a_transfer_gives_its_source_a_buffer_back() {
    swap(false);
}

#[test]
fn a_shutdown_racing_a_transfer_swap_resolves_every_ticket() {
    swap(true);
}

/// The application with stage two's ordering forgotten: loom finds a
/// schedule where domain 1 reads the table before domain 0 writes it.
#[test]
#[should_panic(expected = "stage two read the table before stage one wrote it")]
fn a_read_not_ordered_after_its_producer_is_caught() {
    model(|| {
        let rt = model_runtime();
        let arrived = pipeline(&rt, 1, 1, Stage2::Unordered);
        rt.shutdown().expect("shutdown");
        check(&arrived);
    });
}
