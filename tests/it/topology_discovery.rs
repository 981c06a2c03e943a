//! Topology: NUMA discovery over fake sysfs trees, explicit layouts and
//! their validation, and pinning read-back.

use weft::{
    engine::Pinning,
    error::TopologyError,
    topology::{CpuSet, LayoutSource, Topology},
    Runtime,
};
use weft_tests::{wait_ok, FakeSysfs};

fn set(text: &str) -> CpuSet {
    text.parse().expect("valid cpulist")
}

fn domains(t: &Topology) -> Vec<String> {
    t.domains().iter().map(|d| d.cpus().to_string()).collect()
}

fn discover(sysfs: &FakeSysfs, allowed: &str) -> Topology {
    Topology::builder()
        .sysfs_root(sysfs.path())
        .allowed(set(allowed))
        .ignore_env()
        .build()
        .expect("discovery succeeds")
}

#[test]
fn two_nodes() {
    let fake = FakeSysfs::new("two").node(0, "0-3").node(1, "4-7");
    let t = discover(&fake, "0-7");
    assert_eq!(t.source(), LayoutSource::Numa);
    assert_eq!(domains(&t), ["0-3", "4-7"]);
    assert_eq!(t.domains()[1].numa_node(), Some(1));
    assert_eq!(t.domains()[1].index(), 1);
}

#[test]
fn four_nodes_sorted_numerically() {
    let fake = FakeSysfs::new("four")
        .node(10, "12-15")
        .node(2, "8-11")
        .node(0, "0-3")
        .node(1, "4-7");
    let t = discover(&fake, "0-15");
    assert_eq!(domains(&t), ["0-3", "4-7", "8-11", "12-15"]);
    let nodes: Vec<_> = t.domains().iter().map(|d| d.numa_node()).collect();
    assert_eq!(nodes, [Some(0), Some(1), Some(2), Some(10)]);
}

#[test]
fn holes_in_cpu_numbering() {
    let fake = FakeSysfs::new("holes")
        .node(0, "0,2,4,6")
        .node(1, "9-11,40");
    let t = discover(&fake, "0-63");
    assert_eq!(domains(&t), ["0,2,4,6", "9-11,40"]);
}

#[test]
fn offline_cpus_are_dropped() {
    let fake = FakeSysfs::new("offline")
        .node(0, "0-3")
        .node(1, "4-7")
        .online("0-2,4-5");
    let t = discover(&fake, "0-7");
    assert_eq!(domains(&t), ["0-2", "4-5"]);
}

#[test]
fn node_without_allowed_cpus_is_dropped() {
    let fake = FakeSysfs::new("cgroup")
        .node(0, "0-3")
        .node(1, "4-7")
        .node(2, "8-11");
    let t = discover(&fake, "0-1,8-9");
    assert_eq!(domains(&t), ["0-1", "8-9"]);
    assert_eq!(t.domains()[1].numa_node(), Some(2));
    assert_eq!(t.domains()[1].index(), 1);
}

#[test]
fn no_numa_information_gives_one_flat_domain() {
    let fake = FakeSysfs::new("flat");
    std::fs::remove_dir_all(fake.root.join("devices/system/node")).expect("rm");
    let t = discover(&fake, "0-5");
    assert_eq!(t.source(), LayoutSource::Flat);
    assert_eq!(domains(&t), ["0-5"]);
    // An empty node directory is no NUMA information either.
    let empty = FakeSysfs::new("empty");
    assert_eq!(discover(&empty, "3").source(), LayoutSource::Flat);
}

#[test]
fn bad_sysfs_cpulist_names_the_file() {
    let fake = FakeSysfs::new("bad").node(0, "0-x");
    let err = Topology::builder()
        .sysfs_root(fake.path())
        .allowed(set("0-3"))
        .ignore_env()
        .build()
        .unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, TopologyError::BadCpuList { .. }), "{err:?}");
    assert!(
        text.contains("node0/cpulist") && text.contains("`0-x`"),
        "{text}"
    );
}

#[test]
fn explicit_layout_validation() {
    let allowed = set("0-7");
    let build = |sets: Vec<CpuSet>| {
        Topology::builder()
            .allowed(allowed.clone())
            .domains(sets)
            .build()
    };
    assert!(matches!(build(vec![]), Err(TopologyError::NoDomains)));
    let err = build(vec![set("0-1"), CpuSet::new()]).unwrap_err();
    assert!(
        matches!(err, TopologyError::EmptyDomain { index: 1 }),
        "{err}"
    );
    let err = build(vec![set("0-1"), set("6-9")]).unwrap_err();
    assert!(
        matches!(
            err,
            TopologyError::CpuNotAllowed {
                cpu: 8,
                domain: 1,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("CPU 8"), "{err}");
    let err = build(vec![set("0-3"), set("4-5"), set("5-7")]).unwrap_err();
    assert!(
        matches!(
            err,
            TopologyError::CpuInTwoDomains {
                cpu: 5,
                first: 1,
                second: 2
            }
        ),
        "{err}"
    );
    let t = build(vec![set("4-7"), set("0-3")]).expect("valid");
    assert_eq!(domains(&t), ["4-7", "0-3"]);
    assert_eq!(t.source(), LayoutSource::Explicit);
}

#[test]
fn layout_strings() {
    let t = Topology::builder()
        .allowed(set("0-7"))
        .cpulists("0-3;4-7")
        .build()
        .expect("valid");
    assert_eq!(domains(&t), ["0-3", "4-7"]);
    let err = Topology::builder()
        .allowed(set("0-7"))
        .cpulists("0-3;4-z")
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("`4-z`"), "{err}");
    let err = Topology::builder()
        .allowed(set("0-7"))
        .cpulists("0-3;")
        .build()
        .unwrap_err();
    assert!(
        matches!(err, TopologyError::EmptyDomain { index: 1 }),
        "{err}"
    );
}

#[test]
fn split_allowed_cpus() {
    let split = |allowed: &str, n| {
        Topology::builder()
            .allowed(set(allowed))
            .split(n)
            .build()
            .map(|t| domains(&t))
    };
    assert_eq!(split("0-7", 2).unwrap(), ["0-3", "4-7"]);
    assert_eq!(split("0-6", 3).unwrap(), ["0-2", "3-4", "5-6"]);
    assert_eq!(split("1,3,5", 3).unwrap(), ["1", "3", "5"]);
    for n in [0, 4] {
        let err = split("0-2", n).unwrap_err();
        assert!(
            matches!(err, TopologyError::BadSplit { requested, available: 3 } if requested == n),
            "{err}"
        );
    }
}

#[test]
fn a_share_takes_its_part_of_a_discovered_or_split_layout_only() {
    let fake = FakeSysfs::new("share").node(0, "0-3").node(1, "4-7");
    let shared = |part, parts| {
        Topology::builder()
            .sysfs_root(fake.path())
            .allowed(set("0-7"))
            .ignore_env()
            .share(part, parts)
            .build()
            .expect("discovery succeeds")
    };
    // Two ranks on a node of two NUMA nodes: one node each.
    let t = shared(1, 2);
    assert_eq!(domains(&t), ["4-7"]);
    assert_eq!(t.domains()[0].numa_node(), Some(1));
    assert_eq!(t.allowed(), &set("4-7"));
    let share = t.share().expect("shared");
    assert_eq!((share.part, share.parts, &share.of), (1, 2, &set("0-7")));
    assert!(t.to_string().contains("part 1 of 2 of CPUs 0-7"), "{t}");
    // Three: nearly equal runs, in order, the first ones longer; a run
    // over two NUMA nodes is a domain on each.
    let parts: Vec<_> = (0..3).map(|p| domains(&shared(p, 3))).collect();
    assert_eq!(parts, [vec!["0-2"], vec!["3", "4-5"], vec!["6-7"]]);
    // More parts than CPUs: one CPU each, in turn.
    let few = |part| {
        Topology::builder()
            .allowed(set("2,5"))
            .split(1)
            .share(part, 5)
            .build()
            .map(|t| domains(&t))
            .expect("a split")
    };
    let parts: Vec<_> = (0..5).map(few).collect();
    assert_eq!(parts, [["2"], ["5"], ["2"], ["5"], ["2"]]);
    // A split splits the part.
    let t = Topology::builder()
        .allowed(set("0-7"))
        .split(2)
        .share(0, 2)
        .build()
        .expect("a split");
    assert_eq!(domains(&t), ["0-1", "2-3"]);
    // An explicit layout is kept as given; one part is no share.
    let t = Topology::builder()
        .allowed(set("0-7"))
        .cpulists("0-7")
        .share(1, 2)
        .build()
        .expect("explicit");
    assert_eq!((domains(&t), t.share()), (vec!["0-7".to_string()], None));
    assert!(shared(0, 1).share().is_none());
    assert_eq!(domains(&shared(0, 1)), ["0-3", "4-7"]);
}

#[test]
fn discovery_on_this_machine_is_consistent() {
    let t = Topology::builder().ignore_env().build().expect("discovery");
    let mut seen = CpuSet::new();
    for d in t.domains() {
        assert!(!d.cpus().is_empty());
        assert!(d.cpus().is_subset(t.allowed()));
        assert!(d.cpus().is_disjoint(&seen));
        seen = seen.union(d.cpus());
    }
}

#[cfg(target_os = "linux")]
#[test]
fn workers_are_pinned_as_assigned() {
    let allowed = weft_topology::process_allowed_cpus().expect("allowed");
    let n = allowed.len();
    // Leases of its own: a weft process running beside the test would
    // otherwise move its workers off the CPUs it holds.
    let leases = std::env::temp_dir().join(format!("weft-leases-pinned-{}", std::process::id()));
    let rt = Runtime::builder()
        .domains([allowed.clone()])
        .threads_per_domain(n + 1)
        .lease_dir(&leases)
        .build()
        .expect("runtime");
    let lane = rt.lane(0).expect("lane");
    let (recorded, live) = wait_ok(
        lane.run(|engine| {
            let live = engine
                .pool()
                .broadcast(|_| weft_topology::current_thread_cpus().expect("readable"));
            (engine.worker_cpus().to_vec(), live)
        })
        .expect("open"),
    );
    let cpus: Vec<usize> = allowed.iter().collect();
    let expected: Vec<CpuSet> = (0..=n).map(|i| CpuSet::single(cpus[i % n])).collect();
    assert_eq!(recorded, expected);
    assert_eq!(live, expected);

    let rt = Runtime::builder()
        .domains([allowed.clone()])
        .pinning(Pinning::Domain)
        .build()
        .expect("runtime");
    let masks = wait_ok(
        rt.lane(0)
            .expect("lane")
            .run(|engine| engine.worker_cpus().to_vec())
            .expect("open"),
    );
    assert!(masks.iter().all(|m| m == &allowed), "{masks:?}");
    drop(rt);
    let _ = std::fs::remove_dir_all(&leases);
}

#[test]
fn explicit_layouts_learn_their_numa_nodes() {
    let fake = FakeSysfs::new("annotate").node(0, "0-3").node(1, "4-7");
    let nodes = |builder: weft_topology::TopologyBuilder| -> Vec<Option<usize>> {
        let t = builder
            .sysfs_root(fake.path())
            .allowed(set("0-7"))
            .ignore_env()
            .build()
            .expect("layout");
        t.domains().iter().map(|d| d.numa_node()).collect()
    };
    // A split within each node, across them, and a domain spanning both.
    assert_eq!(
        nodes(Topology::builder().split(4)),
        [Some(0), Some(0), Some(1), Some(1)]
    );
    assert_eq!(
        nodes(Topology::builder().cpulists("0-1;5;2-4")),
        [Some(0), Some(1), None]
    );
    // Without NUMA information, nothing is claimed.
    let flat = FakeSysfs::new("annotate-flat");
    let t = Topology::builder()
        .sysfs_root(flat.path())
        .allowed(set("0-3"))
        .split(2)
        .build()
        .expect("layout");
    assert!(t.domains().iter().all(|d| d.numa_node().is_none()));
}
