//! The runtime: one actor per CPU domain, lanes from application threads,
//! scoped threads, hosted engines, stats and typed errors.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use weft::{engine::Pinning, BuildError, Op, Runtime, RuntimeError};
use weft_tests::{eventually, wait_ok};

fn two_domains() -> Runtime {
    let allowed = weft_topology::process_allowed_cpus().expect("allowed");
    let builder = if allowed.len() >= 2 {
        Runtime::builder().split(2)
    } else {
        // One CPU: two domains cannot be disjoint; use one.
        Runtime::builder().split(1)
    };
    builder.threads_per_domain(2).build().expect("runtime")
}

#[test]
fn smoke_every_domain_runs_ops_on_its_cpus() {
    let rt = two_domains();
    for (i, domain) in rt.domains().iter().enumerate() {
        let lane = rt.lane(i).expect("lane");
        let (index, cpus, threads, on) = wait_ok(
            lane.run(|engine| {
                let d = engine.domain();
                let on = weft_topology::current_thread_cpus().expect("mask");
                (d.index, d.cpus.clone(), d.threads, on)
            })
            .expect("open"),
        );
        assert_eq!(index, i);
        assert_eq!(&cpus, domain.cpus());
        assert_eq!(threads, 2);
        assert!(
            on.is_subset(domain.cpus()),
            "actor runs on {on}, domain {cpus}"
        );
        let sum = wait_ok(
            lane.run(|engine| {
                use rayon::prelude::*;
                engine.install(|| (0..10_000u64).into_par_iter().sum::<u64>())
            })
            .expect("open"),
        );
        assert_eq!(sum, 49_995_000);
    }
}

#[test]
fn spawn_and_scope_give_each_thread_a_lane() {
    let rt = two_domains();
    let total = Arc::new(AtomicU64::new(0));
    let handles: Vec<_> = (0..4)
        .map(|i| {
            let total = total.clone();
            rt.spawn(i % rt.domains().len(), move |lane| {
                let name = std::thread::current().name().map(str::to_owned);
                let mut last = None;
                for k in 0..100u64 {
                    let total = total.clone();
                    last = Some(
                        lane.run(move |_| total.fetch_add(k, Ordering::SeqCst))
                            .expect("open"),
                    );
                }
                wait_ok(last.expect("submitted"));
                name
            })
            .expect("spawned")
        })
        .collect();
    for h in handles {
        let name = h.join().expect("app thread").expect("named");
        assert!(name.starts_with("weft-app-"), "{name}");
    }
    assert_eq!(total.load(Ordering::SeqCst), 4 * 4950);

    // Scoped threads borrow `words`; the ops they send own their data.
    let words = vec!["alpha".to_owned(), "beta".to_owned(), "gamma".to_owned()];
    let lengths: Vec<usize> = rt.scope(|s| {
        let handles: Vec<_> = (0..words.len())
            .map(|i| {
                let words = &words;
                s.spawn(0, move |lane| {
                    let word = words[i].clone();
                    wait_ok(lane.run(move |_| word.len()).expect("open"))
                })
                .expect("spawned")
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("scoped"))
            .collect()
    });
    assert_eq!(lengths, [5, 4, 5]);
}

#[test]
fn hosted_engine_may_be_non_send() {
    struct Counter {
        hits: Rc<RefCell<u32>>,
    }
    let rt = Runtime::builder().split(1).build().expect("runtime");
    let actor = rt
        .spawn_actor(0, || {
            Ok::<_, String>(Counter {
                hits: Rc::new(RefCell::new(0)),
            })
        })
        .expect("hosted");
    let lane = actor.lane().expect("lane");
    for _ in 0..10 {
        drop(
            lane.run(|c: &mut Counter| *c.hits.borrow_mut() += 1)
                .expect("open"),
        );
    }
    assert_eq!(
        wait_ok(lane.run(|c: &mut Counter| *c.hits.borrow()).expect("open")),
        10
    );
    let on = wait_ok(
        lane.run(|_| weft_topology::current_thread_cpus().expect("mask"))
            .expect("open"),
    );
    assert!(on.is_subset(rt.domains()[0].cpus()));
    assert!(actor.name().starts_with("weft-cpu-0-actor-"));
    let err = rt.spawn_actor(0, || Err::<(), _>("no")).unwrap_err();
    assert!(matches!(err, RuntimeError::Spawn(_)), "{err}");
    let report = rt.shutdown().expect("joined");
    assert_eq!(report.actors.len(), 2);
    assert_eq!(report.actors[1].completed, 12);
    assert!(lane.run(|_| ()).unwrap_err().is_closed());
    // A shut-down runtime starts no new actor.
    let err = rt.spawn_actor(0, || Ok::<_, String>(())).unwrap_err();
    assert!(matches!(err, RuntimeError::Closed(_)), "{err}");
}

#[test]
fn actors_submit_to_each_other_without_waiting() {
    let rt = two_domains();
    let last = rt.domains().len() - 1;
    let to_last = rt.lane(last).expect("lane");
    let back = rt.lane(0).expect("lane");
    let done = wait_ok(
        rt.lane(0)
            .expect("lane")
            .run(move |_| {
                // Submit to another actor and order a reply after it: no wait.
                let there = to_last.run(|_| 20).expect("open");
                let reply = back
                    .submit(Op::new(|_: &mut weft::CpuEngine| 22).after([there.event()]))
                    .expect("open");
                (there, reply)
            })
            .expect("open"),
    );
    assert_eq!(wait_ok(done.0) + wait_ok(done.1), 42);
}

#[test]
fn stats_count_per_actor_and_lane() {
    let rt = Runtime::builder().split(1).build().expect("runtime");
    let lane = rt.lane(0).expect("lane");
    let other = rt.lane(0).expect("lane");
    for _ in 0..40 {
        drop(lane.run(|_| ()).expect("open"));
    }
    wait_ok(other.run(|_| ()).expect("open"));
    wait_ok(lane.run(|_| ()).expect("open"));
    let stats = rt.stats();
    let actor = &stats.actors[0];
    assert_eq!(actor.ops.completed, 42);
    assert_eq!(actor.ops.queued, 0);
    assert!(actor.ops.queue_wait.samples >= 2);
    assert_eq!(actor.ops.run_time.samples, actor.ops.queue_wait.samples);
    assert_eq!(actor.running, None);
    let mut per_lane: Vec<u64> = actor.lanes.iter().map(|l| l.ops.completed).collect();
    per_lane.sort_unstable();
    assert_eq!(per_lane, [1, 41]);
    assert_eq!(actor.ops.submitted, 42);
    let table = stats.to_string();
    let row = table
        .lines()
        .find(|l| l.starts_with("weft-cpu-0"))
        .unwrap_or_else(|| panic!("no row for the actor: {table}"));
    let counts: Vec<&str> = row.split_whitespace().skip(1).take(2).collect();
    assert_eq!(counts, ["42", "42"], "submitted, completed: {table}");
    drop(other);
    eventually("a dropped lane leaves the stats", || {
        rt.stats().actors[0].lanes.len() == 1
    });
}

#[test]
fn bad_configuration_and_requests_are_typed_errors() {
    let err = Runtime::builder()
        .threads_per_domain(0)
        .build()
        .unwrap_err();
    assert!(matches!(err, BuildError::ZeroThreads), "{err}");
    let err = Runtime::builder().lane_capacity(0).build().unwrap_err();
    assert!(matches!(err, BuildError::ZeroLaneCapacity), "{err}");
    let err = Runtime::builder().cpulists("0;0").build().unwrap_err();
    assert!(
        err.to_string()
            .contains("CPU 0 is in both domain 0 and domain 1"),
        "{err}"
    );
    let err = Runtime::builder().split(100_000).build().unwrap_err();
    assert!(matches!(err, BuildError::Topology(_)), "{err}");

    let rt = Runtime::builder()
        .split(1)
        .pinning(Pinning::None)
        .build()
        .expect("runtime");
    let err = rt.lane(7).unwrap_err();
    assert!(matches!(
        err,
        RuntimeError::NoSuchDomain {
            domain: 7,
            count: 1
        }
    ));
    assert_eq!(
        err.to_string(),
        "no CPU domain 7: this runtime has 1 (0..1)"
    );
    rt.shutdown_now().expect("joined");
    let err = rt.lane(0).unwrap_err();
    assert!(matches!(err, RuntimeError::Closed(_)), "{err}");
}
