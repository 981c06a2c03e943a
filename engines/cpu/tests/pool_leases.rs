//! CPU leases between engines: a per-core pool avoids the CPUs another
//! pool holds, holds its own as long as it lives, and pins as before when
//! it cannot lease.
#![cfg(target_os = "linux")]

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread::JoinHandle;

use weft_cpu::{CpuEngine, CpuEngineConfig, Leases, Pinning};
use weft_topology::{process_allowed_cpus, CpuSet};

/// An engine built on a thread of its own (its worker 0), kept until the
/// value is dropped.
struct Running {
    workers: Vec<CpuSet>,
    leases: Leases,
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Running {
    fn start(config: CpuEngineConfig) -> Running {
        let (report, reported) = mpsc::channel();
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            let engine = CpuEngine::new(config).expect("engine");
            report
                .send((engine.worker_cpus().to_vec(), engine.leases().clone()))
                .unwrap();
            let _ = stopped.recv();
            drop(engine);
        });
        let (workers, leases) = reported.recv().expect("the engine was built");
        Running {
            workers,
            leases,
            stop: Some(stop),
            thread: Some(thread),
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            thread.join().unwrap();
        }
    }
}

/// A lease directory of the test's own, empty.
fn lease_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("weft-leases-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// Two CPUs this process may pin to, or `None` (the test says it skips).
fn two_cpus(test: &str) -> Option<(usize, usize)> {
    let allowed = process_allowed_cpus().expect("the allowed CPUs");
    let mut cpus = allowed.iter();
    match (cpus.next(), cpus.next()) {
        (Some(a), Some(b)) => Some((a, b)),
        _ => {
            println!("{test}: skipped, this process may run on CPUs {allowed} only (two needed)");
            None
        }
    }
}

fn per_core(cpus: CpuSet, threads: usize, dir: &Path) -> CpuEngineConfig {
    CpuEngineConfig {
        lease_dir: Some(dir.to_path_buf()),
        ..CpuEngineConfig::new(0, cpus, threads)
    }
}

fn set(cpus: &[usize]) -> CpuSet {
    cpus.iter().copied().collect()
}

#[test]
fn a_second_engine_takes_the_cpu_the_first_leaves_free() {
    let Some((a, b)) = two_cpus("a_second_engine_takes_the_cpu_the_first_leaves_free") else {
        return;
    };
    let dir = lease_dir("second");
    let domain = set(&[a, b]);
    let first = Running::start(per_core(domain.clone(), 1, &dir));
    assert_eq!(first.workers, [CpuSet::single(a)]);
    assert_eq!(
        first.leases,
        Leases::Taken {
            leased: set(&[a]),
            contended: CpuSet::new()
        }
    );
    let second = Running::start(per_core(domain.clone(), 1, &dir));
    assert_eq!(second.workers, [CpuSet::single(b)]);
    assert_eq!(
        second.leases,
        Leases::Taken {
            leased: set(&[b]),
            contended: set(&[a])
        }
    );
    // Both held: a third pins as without leases, and names both.
    let third = Running::start(per_core(domain.clone(), 1, &dir));
    assert_eq!(third.workers, [CpuSet::single(a)]);
    assert_eq!(
        third.leases,
        Leases::Taken {
            leased: CpuSet::new(),
            contended: domain.clone()
        }
    );
    drop(third);
    // The first engine's drop releases its CPU.
    drop(first);
    let fourth = Running::start(per_core(domain, 1, &dir));
    assert_eq!(fourth.workers, [CpuSet::single(a)]);
    drop((second, fourth));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn workers_past_the_free_cpus_take_held_ones_then_wrap() {
    let Some((a, b)) = two_cpus("workers_past_the_free_cpus_take_held_ones_then_wrap") else {
        return;
    };
    let dir = lease_dir("wrap");
    let domain = set(&[a, b]);
    let first = Running::start(per_core(domain.clone(), 1, &dir));
    let wide = Running::start(per_core(domain, 3, &dir));
    let expected: Vec<CpuSet> = [b, a, b].into_iter().map(CpuSet::single).collect();
    assert_eq!(wide.workers, expected);
    assert_eq!(
        wide.leases,
        Leases::Taken {
            leased: set(&[b]),
            contended: set(&[a])
        }
    );
    drop((first, wide));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_unusable_lease_dir_pins_as_before_and_says_so() {
    let cpu = process_allowed_cpus().unwrap().first().unwrap();
    let blocker = lease_dir("unusable");
    std::fs::write(&blocker, b"a file where the directory would go").unwrap();
    let dir = blocker.join("leases");
    let running = Running::start(per_core(CpuSet::single(cpu), 1, &dir));
    assert_eq!(running.workers, [CpuSet::single(cpu)]);
    assert!(
        matches!(&running.leases, Leases::Unavailable { dir: d, .. } if d == &dir),
        "{:?}",
        running.leases
    );
    drop(running);
    std::fs::remove_file(&blocker).unwrap();
}

#[test]
fn only_per_core_pinning_leases() {
    let cpu = process_allowed_cpus().unwrap().first().unwrap();
    let dir = lease_dir("others");
    for pinning in [Pinning::Domain, Pinning::None] {
        let running = Running::start(CpuEngineConfig {
            pinning,
            ..per_core(CpuSet::single(cpu), 1, &dir)
        });
        assert_eq!(running.leases, Leases::NotTaken, "{pinning:?}");
    }
    assert!(!dir.exists(), "no lease directory is made");
}
