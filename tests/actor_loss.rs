//! Actor loss: an op ends its actor thread in a way `catch_unwind` does not
//! stop (the `fault-injection` hook). Every pending ticket of that actor —
//! closures and tensor ops, waited for by other threads or not — resolves
//! with `ActorLost` (or, for ops ordered after a lost one, a dependency
//! failure naming that loss); other actors, CPU domains and hosted engines
//! keep working; the dead domain refuses new work with typed errors; and
//! no thread of the dead actor or its pool is left behind. One test, alone
//! in its binary, so that the thread count is its own.

use std::thread;
use std::time::Duration;
use weft::ops::ElementwiseOps;

use weft::{
    actor::FailureCause, CpuEngine, Op, OpError, Runtime, RuntimeError, Tensor, TicketError,
};
use weft_actors::fault::kill_actor;
use weft_tests::{eventually, thread_count, wait, wait_ok, watchdog, Hold};

const KILLED: &str = "killed by the fault-injection hook";

fn runtime() -> Runtime {
    weft_tests::unpinned_pair()
        .threads_per_domain(3)
        .build()
        .expect("runtime")
}

fn vector(values: &[f64]) -> Tensor {
    Tensor::from_vec(values.to_vec(), &[values.len()]).expect("fits")
}

/// Lost with its actor, or (ordered after a lost op) failed naming the loss.
fn lost<E: std::fmt::Debug>(r: Result<impl std::fmt::Debug, TicketError<E>>) -> bool {
    match r {
        Err(TicketError::ActorLost) => true,
        Err(TicketError::DependencyFailed(f)) => f.cause == FailureCause::ActorLost,
        other => panic!("expected a loss, got {other:?}"),
    }
}

/// A CPU domain's actor dies with ops queued on several lanes, waited for
/// by other threads, and ops on the other domain ordered after them.
fn kill_a_cpu_domain() -> (usize, usize) {
    let rt = runtime();
    let hosted = rt.spawn_actor(1, || Ok::<_, String>(0u64)).expect("hosted");
    let (dead, live) = (rt.lane(0).expect("lane"), rt.lane(1).expect("lane"));
    let others: Vec<weft::Lane> = (0..3).map(|_| rt.lane(0).expect("lane")).collect();
    let r0 = dead.upload(vector(&[1.0, 2.0])).expect("upload");
    let r1 = live.upload(vector(&[3.0, 4.0])).expect("upload");
    wait_ok(dead.resident().expect("open"));

    let hold = Hold::on(dead.actor_lane());
    let killer = dead.run(|_| kill_actor()).expect("open");
    // Queued behind the killer on its lane: lost for sure.
    let behind: Vec<_> = (0..20u64)
        .map(|i| dead.run(move |_| i).expect("open"))
        .collect();
    let sum = dead.add(&r0, &r0).expect("submitted");
    let download = dead.download(&sum).expect("open");
    let moved = dead.transfer(&r0, 1).expect("submitted");
    let moved_there = live.download(&moved).expect("open");
    let after = live
        .submit(Op::new(|_: &mut CpuEngine| 1).after([behind[0].event()]))
        .expect("open");
    // On other lanes of the dying actor: they ran before the kill, or are lost.
    let elsewhere: Vec<_> = others
        .iter()
        .flat_map(|l| (0..10u64).map(move |i| (i, l.run(move |_| i * 3).expect("open"))))
        .collect();
    // Threads blocked in `wait` when the actor dies.
    let waiters: Vec<_> = behind
        .into_iter()
        .map(|t| thread::spawn(move || wait(t)))
        .collect();
    thread::sleep(Duration::from_millis(20));
    drop(hold);

    assert!(lost(wait(killer)));
    let mut lost_count = 1;
    for w in waiters {
        assert!(lost(w.join().expect("waiter")));
        lost_count += 1;
    }
    assert!(lost(wait(download)));
    assert!(lost(wait(moved_there)));
    let err = wait(after).unwrap_err();
    assert_eq!(
        err.dependency().expect("dependency").cause,
        FailureCause::ActorLost
    );
    let mut ran = 0;
    for (i, t) in elsewhere {
        match wait(t) {
            Ok(v) => {
                assert_eq!(v, i * 3);
                ran += 1;
            }
            r => {
                assert!(lost(r));
                lost_count += 1;
            }
        }
    }

    // The dead domain refuses work with typed errors.
    assert!(dead.run(|_| ()).unwrap_err().is_closed());
    assert!(matches!(
        dead.upload(vector(&[1.0])),
        Err(OpError::Closed(_))
    ));
    assert!(matches!(rt.lane(0), Err(RuntimeError::Closed(_))));
    assert!(matches!(
        rt.spawn_actor(0, || Ok::<_, String>(())),
        Err(RuntimeError::Closed(_))
    ));
    let err = live.transfer(&r1, 0).unwrap_err();
    assert!(matches!(err, OpError::Closed(_)), "{err}");
    // The other domain and the hosted engine keep working.
    let doubled = live.add(&r1, &r1).expect("submitted");
    assert_eq!(
        wait_ok(live.download(&doubled).unwrap()),
        vector(&[6.0, 8.0])
    );
    let hl = hosted.lane().expect("lane");
    assert_eq!(
        wait_ok(
            hl.run(|n: &mut u64| {
                *n += 5;
                *n
            })
            .expect("open")
        ),
        5
    );
    // A new hosted engine can still start on the live domain.
    let fresh = rt.spawn_actor(1, || Ok::<_, String>(7u32)).expect("hosted");
    assert_eq!(
        wait_ok(fresh.lane().unwrap().run(|n: &mut u32| *n).unwrap()),
        7
    );
    let stats = rt.stats();
    assert_eq!(stats.actors.len(), 4);
    let report = rt.shutdown().expect("joined");
    assert_eq!(report.actors[0].died.as_deref(), Some(KILLED));
    assert!(report.actors[0].lost as usize >= lost_count, "{report}");
    assert!(report.actors[1..]
        .iter()
        .all(|a| a.died.is_none() && a.lost == 0));
    (lost_count, ran)
}

/// The kill is raised on a pool worker inside a parallel section: it
/// reaches the actor thread and ends it all the same, with no hang.
fn kill_from_a_pool_worker() -> usize {
    let rt = runtime();
    let lane = rt.lane(0).expect("lane");
    let hold = Hold::on(lane.actor_lane());
    let killer = lane
        .run(|e: &mut CpuEngine| {
            e.pool().broadcast(|ctx| {
                if ctx.index() == 1 {
                    kill_actor();
                }
            });
        })
        .expect("open");
    let queued: Vec<_> = (0..10).map(|_| lane.run(|_| ()).expect("open")).collect();
    drop(hold);
    assert!(lost(wait(killer)));
    let n = queued.len();
    for t in queued {
        assert!(lost(wait(t)));
    }
    let other = rt.lane(1).expect("lane");
    assert_eq!(wait_ok(other.run(|_| 2).expect("open")), 2);
    let report = rt.shutdown().expect("joined");
    assert_eq!(report.actors[0].died.as_deref(), Some(KILLED));
    n + 1
}

/// A hosted engine dies; the CPU domains it shares a runtime with do not.
fn kill_a_hosted_engine() -> usize {
    let rt = runtime();
    let hosted = rt
        .spawn_actor(0, || Ok::<_, String>(vec![1u8]))
        .expect("hosted");
    let lanes: Vec<_> = (0..4).map(|_| hosted.lane().expect("lane")).collect();
    let hold = Hold::on(&lanes[0]);
    let killer = lanes[0].run(|_| kill_actor()).expect("open");
    let queued: Vec<_> = (0..25)
        .map(|_| lanes[0].run(|v: &mut Vec<u8>| v.len()).expect("open"))
        .collect();
    drop(hold);
    assert!(lost(wait(killer)));
    let n = queued.len();
    for t in queued {
        assert!(lost(wait(t)));
    }
    for l in &lanes {
        assert!(l.run(|_| ()).unwrap_err().is_closed());
    }
    let domain = rt.lane(0).expect("lane");
    let x = domain.upload(vector(&[2.0])).expect("upload");
    let y = domain.mul(&x, &x).expect("submitted");
    assert_eq!(wait_ok(domain.download(&y).unwrap()), vector(&[4.0]));
    let report = rt.shutdown().expect("joined");
    assert_eq!(report.actors[2].died.as_deref(), Some(KILLED));
    assert!(report.actors[..2].iter().all(|a| a.died.is_none()));
    n + 1
}

#[test]
fn lost_actors_resolve_every_ticket_and_leave_no_thread() {
    let _watchdog = watchdog("actor_loss", Duration::from_secs(120));
    let before = thread_count();
    let (domain_lost, ran_first) = kill_a_cpu_domain();
    eventually("the dead domain's threads are gone", || {
        thread_count() == before
    });
    let worker_lost = kill_from_a_pool_worker();
    eventually("threads are gone after a kill on a worker", || {
        thread_count() == before
    });
    let hosted_lost = kill_a_hosted_engine();
    eventually("threads are gone after a hosted kill", || {
        thread_count() == before
    });
    eprintln!(
        "actor loss: CPU domain {domain_lost} tickets lost ({ran_first} ran before the kill), \
         kill on a pool worker {worker_lost} lost, hosted engine {hosted_lost} lost; \
         threads {before} before, {} after",
        thread_count()
    );
}
