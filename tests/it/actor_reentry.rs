//! Re-entry, the scenario that deadlocks tenferro today (tensor4all-rs
//! #830): an op running on a domain's pool — on the actor thread and on
//! every pool worker — submits to its own domain and blocks on the result;
//! two actors submit to each other and block. Every blocking wait returns
//! `WouldDeadlock` at once, everything that does not block completes, and
//! nothing hangs (every wait here is bounded).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use weft::ops::{ElementwiseOps, ReduceOps};

use crossbeam_channel::{bounded, Receiver, Sender};
use rayon::prelude::*;
use weft::{
    engine::Pinning,
    error::{SubmitError, SubmitTimeoutError, TrySubmitError, TryWaitError, WaitTimeoutError},
    topology::{CpuSet, Topology},
    CpuEngine, Op, OpError, Runtime, Tensor, TicketError,
};
use weft_tests::{wait_ok, watchdog, LIMIT};

/// Threads per domain, the actor thread included.
const WORKERS: usize = 3;

/// `domains` domains of `WORKERS` unpinned threads each, on any machine.
fn runtime(domains: usize, lane_capacity: usize) -> Runtime {
    let layout = Topology::builder()
        .allowed(CpuSet::range(0..domains))
        .split(domains)
        .build()
        .expect("layout");
    Runtime::builder()
        .topology(layout)
        .pinning(Pinning::None)
        .threads_per_domain(WORKERS)
        .lane_capacity(lane_capacity)
        .build()
        .expect("runtime")
}

fn vector(values: &[f64]) -> Tensor {
    Tensor::from_vec(values.to_vec(), &[values.len()]).expect("fits")
}

/// What one pool thread saw when it blocked on its own domain.
#[derive(Debug)]
struct Seen {
    worker: usize,
    marked: Option<weft::actor::ActorId>,
    closure: bool,
    timed: bool,
    download: bool,
    still_pending: bool,
}

#[test]
fn every_pool_thread_blocking_on_its_own_domain_would_deadlock() {
    let _watchdog = watchdog("actor_reentry", Duration::from_secs(120));
    let rt = runtime(1, 1024);
    let lane = rt.lane(0).expect("lane");
    let h = lane.upload(vector(&[1.0, 2.0, 3.0])).expect("upload");
    let ran = Arc::new(AtomicUsize::new(0));
    let (inner, held, counter) = (lane.clone(), h.clone(), ran.clone());
    let outcome = lane
        .run(move |engine: &mut CpuEngine| {
            // Every thread of the pool, the actor thread (worker 0) included.
            engine.pool().broadcast(|ctx| {
                let worker = ctx.index();
                let c = counter.clone();
                let closure = inner
                    .run(move |_| c.fetch_add(1, Ordering::SeqCst))
                    .expect("open")
                    .wait();
                let c = counter.clone();
                let timed = inner
                    .run(move |_| c.fetch_add(1, Ordering::SeqCst))
                    .expect("open")
                    .wait_timeout(LIMIT);
                let download = inner.download(&held).expect("open").wait();
                // Not blocking: poll, and hand the ticket to the caller.
                let later = inner.run(move |_| worker * 10).expect("open");
                let (still_pending, later) = match later.try_wait() {
                    Err(TryWaitError::Pending(t)) => (true, t),
                    other => panic!("worker {worker}: {other:?}"),
                };
                let seen = Seen {
                    worker,
                    marked: weft::actor::current_actor(),
                    closure: matches!(closure, Err(TicketError::WouldDeadlock)),
                    timed: matches!(
                        timed,
                        Err(WaitTimeoutError::Failed(TicketError::WouldDeadlock))
                    ),
                    download: matches!(download, Err(TicketError::WouldDeadlock)),
                    still_pending,
                };
                (seen, later)
            })
        })
        .expect("open");
    let seen = wait_ok(outcome);
    assert_eq!(seen.len(), WORKERS);
    let actor = lane.actor();
    for (i, (s, later)) in seen.into_iter().enumerate() {
        assert_eq!(s.worker, i);
        assert_eq!(s.marked, Some(actor), "{s:?}");
        assert!(
            s.closure && s.timed && s.download && s.still_pending,
            "{s:?}"
        );
        // The op it was not allowed to wait for runs after the outer one.
        assert_eq!(wait_ok(later), i * 10);
    }
    weft_tests::eventually("refused waits' ops all ran", || {
        ran.load(Ordering::SeqCst) == 2 * WORKERS
    });
    assert_eq!(
        wait_ok(lane.download(&h).unwrap()),
        vector(&[1.0, 2.0, 3.0])
    );
    let stats = rt.stats();
    assert_eq!(
        (stats.actors[0].ops.failed, stats.actors[0].ops.panicked),
        (0, 0)
    );
}

#[test]
fn a_parallel_loop_that_calls_back_into_its_domain_would_deadlock() {
    // tenferro's shape of the bug: a rayon loop inside the engine whose
    // body calls an API that submits to the same engine and blocks.
    let _watchdog = watchdog("actor_reentry", Duration::from_secs(120));
    let rt = runtime(1, 1024);
    let lane = rt.lane(0).expect("lane");
    let x = lane.upload(vector(&[2.0; 4])).expect("upload");
    let (inner, held) = (lane.clone(), x.clone());
    let outcome = lane
        .with(&[&x], move |engine, tensors| {
            assert_eq!(tensors[0].len(), 4);
            engine.install(|| {
                let refused = (0..64usize)
                    .into_par_iter()
                    .map(|i| {
                        let sum = inner.sum_all(&held).expect("submitted");
                        let blocked = inner.download(&sum).expect("open").wait();
                        let ran = inner.run(move |_| i).expect("open").wait();
                        usize::from(matches!(blocked, Err(TicketError::WouldDeadlock)))
                            + usize::from(matches!(ran, Err(TicketError::WouldDeadlock)))
                    })
                    .sum::<usize>();
                let (a, b) = rayon::join(
                    || inner.run(|_| 1).expect("open").wait(),
                    || inner.run(|_| 2).expect("open").wait(),
                );
                let joined = [a, b]
                    .iter()
                    .filter(|r| matches!(r, Err(TicketError::WouldDeadlock)))
                    .count();
                // A result ordered after everything queued so far.
                let last = inner.sum_all(&held).expect("submitted");
                (refused, joined, inner.download(&last).expect("open"))
            })
        })
        .expect("open");
    let (refused, joined, last) = wait_ok(outcome);
    assert_eq!((refused, joined), (128, 2));
    assert_eq!(wait_ok(last), Tensor::from_vec(vec![8.0f64], &[]).unwrap());
    let stats = rt.stats();
    // with + 64 × (sum, download, run) + 2 runs + sum + download + upload.
    assert_eq!(stats.actors[0].ops.completed, 1 + 64 * 3 + 2 + 2 + 1);
}

#[test]
fn a_full_lane_refuses_every_pool_thread_instead_of_blocking_it() {
    let _watchdog = watchdog("actor_reentry", Duration::from_secs(120));
    let rt = runtime(1, 1);
    let lane = rt.lane(0).expect("lane");
    // One lane per pool thread, each with room for one op.
    let lanes: Vec<weft::Lane> = (0..WORKERS).map(|_| rt.lane(0).expect("lane")).collect();
    let outcome = lane
        .run(move |engine: &mut CpuEngine| {
            engine.pool().broadcast(|ctx| {
                let own = &lanes[ctx.index()];
                let first = own.run(|_| 1).expect("room for one");
                let second = own.submit(Op::new(|_: &mut CpuEngine| 2));
                let timed = own.submit_timeout(Op::new(|_: &mut CpuEngine| 3), LIMIT);
                let tried = own.try_submit(Op::new(|_: &mut CpuEngine| 4));
                let upload = own.upload(vector(&[1.0]));
                (
                    first,
                    matches!(second, Err(SubmitError::WouldDeadlock(_))),
                    matches!(timed, Err(SubmitTimeoutError::WouldDeadlock(_))),
                    matches!(tried, Err(TrySubmitError::Full(_))),
                    matches!(upload, Err(OpError::WouldDeadlock)),
                )
            })
        })
        .expect("open");
    let results = wait_ok(outcome);
    assert_eq!(results.len(), WORKERS);
    for (first, second, timed, tried, upload) in results {
        assert!(second && timed && tried && upload);
        assert_eq!(wait_ok(first), 1);
    }
}

/// One side of a meeting point between two ops on two actors.
struct Meet {
    me: Sender<()>,
    peer: Receiver<()>,
}

impl Meet {
    fn pair() -> (Meet, Meet) {
        let (a_tx, a_rx) = bounded(1);
        let (b_tx, b_rx) = bounded(1);
        (
            Meet {
                me: a_tx,
                peer: b_rx,
            },
            Meet {
                me: b_tx,
                peer: a_rx,
            },
        )
    }

    /// Returns once the other side has come here too.
    fn meet(&self) {
        self.me.send_timeout((), LIMIT).expect("the peer takes it");
        self.peer
            .recv_timeout(LIMIT)
            .expect("the peer's op runs too");
    }
}

#[test]
fn two_domains_blocking_on_each_other_would_deadlock() {
    let _watchdog = watchdog("actor_reentry", Duration::from_secs(120));
    let rt = runtime(2, 1024);
    let (l0, l1) = (rt.lane(0).expect("lane"), rt.lane(1).expect("lane"));
    let a = l0.upload(vector(&[1.0, 2.0])).expect("upload");
    let b = l1.upload(vector(&[10.0, 20.0])).expect("upload");
    let (meet0, meet1) = Meet::pair();
    // Each domain's op sends work to the other and blocks on it, while the
    // other does the same: the classic mutual wait. Both ops are running
    // from the first meeting to the second, so neither's work can have run.
    let side = |here: weft::Lane, there: weft::Lane, mine: weft::TensorHandle, meet: Meet| {
        let lane = here.clone();
        lane.run(move |_: &mut CpuEngine| {
            meet.meet();
            let closure = there.run(|_| 7).expect("open").wait();
            let moved = here.transfer(&mine, there.domain()).expect("open");
            let doubled = there.add(&moved, &moved).expect("submitted");
            let download = there.download(&doubled).expect("open").wait();
            meet.meet();
            // Not blocking: a reply ordered after the other side's op.
            let theirs = there.run(|_| 5).expect("open");
            let reply = here
                .submit(Op::new(|_: &mut CpuEngine| 6).after([theirs.event()]))
                .expect("open");
            let back = there.transfer(&doubled, here.domain()).expect("open");
            (
                matches!(closure, Err(TicketError::WouldDeadlock)),
                matches!(download, Err(TicketError::WouldDeadlock)),
                theirs,
                reply,
                here.download(&back).expect("open"),
            )
        })
        .expect("open")
    };
    let zero = side(l0.clone(), l1.clone(), a, meet0);
    let one = side(l1.clone(), l0.clone(), b, meet1);
    for (outcome, want) in [(zero, [2.0, 4.0]), (one, [20.0, 40.0])] {
        let (closure, download, theirs, reply, back) = wait_ok(outcome);
        assert!(closure && download);
        assert_eq!((wait_ok(theirs), wait_ok(reply)), (5, 6));
        assert_eq!(wait_ok(back), vector(&want));
    }
}

#[test]
fn hosted_actors_blocking_on_each_other_would_deadlock_and_bouncing_completes() {
    let _watchdog = watchdog("actor_reentry", Duration::from_secs(120));
    let rt = runtime(2, 1024);
    let a = rt.spawn_actor(0, || Ok::<_, String>(0u64)).expect("hosted");
    let b = rt.spawn_actor(1, || Ok::<_, String>(0u64)).expect("hosted");
    let (la, lb) = (a.lane().expect("lane"), b.lane().expect("lane"));
    let (meet_a, meet_b) = Meet::pair();
    let mutual = |here: &weft::actor::Lane<u64>, there: weft::actor::Lane<u64>, meet: Meet| {
        here.run(move |_: &mut u64| {
            meet.meet();
            let blocked = there.run(|n: &mut u64| *n).expect("open").wait();
            meet.meet();
            matches!(blocked, Err(TicketError::WouldDeadlock))
        })
        .expect("open")
    };
    let first = mutual(&la, lb.clone(), meet_a);
    let second = mutual(&lb, la.clone(), meet_b);
    assert!(wait_ok(first) && wait_ok(second));

    // Ping-pong without waiting: each op submits the next to the other
    // actor and returns; the last one reports how far it got.
    fn bounce(
        here: weft::actor::Lane<u64>,
        there: weft::actor::Lane<u64>,
        left: u64,
        done: Sender<u64>,
    ) -> impl FnOnce(&mut u64) + Send + 'static {
        move |count: &mut u64| {
            *count += 1;
            if left == 0 {
                done.send(*count).expect("the test waits");
            } else {
                drop(
                    there
                        .run(bounce(there.clone(), here, left - 1, done))
                        .expect("open"),
                );
            }
        }
    }
    let (done, finished) = bounded(1);
    drop(
        la.run(bounce(la.clone(), lb.clone(), 399, done))
            .expect("open"),
    );
    // 400 hops: 200 on each actor; the last lands on `b`.
    assert_eq!(
        finished.recv_timeout(LIMIT).expect("bounced to the end"),
        200
    );
    assert_eq!(wait_ok(la.run(|n: &mut u64| *n).expect("open")), 200);
    let report = rt.shutdown().expect("joined");
    assert!(report.actors.iter().all(|r| r.died.is_none()));
}
