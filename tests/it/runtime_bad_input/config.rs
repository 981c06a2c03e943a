//! The catalog's rows of topology, runtime and actor configuration, and lanes.

use super::*;
use weft::ops::{CreateOps, ElementwiseOps, ReduceOps};

/// The rows of topology.
pub(super) fn topology(fx: &Fx) -> Vec<Row<'_>> {
    let Fx {
        outside,
        sysfs_bad,
        sysfs_dir,
        ..
    } = fx;
    use Refusal as R;
    vec![
        row(
            "cpulist item not a number",
            "`x`",
            |r| {
                matches!(
                    r,
                    R::Topology(TopologyError::BadCpuList {
                        source: CpuListError { .. },
                        ..
                    })
                )
            },
            move || layout("0-3;x"),
        ),
        row(
            "cpulist range backwards",
            "`3-1`",
            |r| matches!(r, R::Topology(TopologyError::BadCpuList { .. })),
            move || layout("3-1"),
        ),
        row(
            "cpulist stride zero",
            "`0-3:0`",
            |r| matches!(r, R::Topology(TopologyError::BadCpuList { .. })),
            move || layout("0-3:0"),
        ),
        row(
            "cpulist CPU id above the maximum",
            "0-70000",
            |r| matches!(r, R::Topology(TopologyError::BadCpuList { .. })),
            move || layout("0-70000"),
        ),
        row(
            "cpulist empty item",
            "`0,,1`",
            |r| matches!(r, R::Topology(TopologyError::BadCpuList { .. })),
            move || layout("0,,1"),
        ),
        row(
            "CPU outside the allowed set",
            "CPU 4 of domain 1",
            |r| {
                matches!(
                    r,
                    R::Topology(TopologyError::CpuNotAllowed {
                        cpu: 4,
                        domain: 1,
                        ..
                    })
                )
            },
            move || layout("0-1;4-5"),
        ),
        row(
            "overlapping domains",
            "CPU 2 is in both domain 0 and domain 1",
            |r| {
                matches!(
                    r,
                    R::Topology(TopologyError::CpuInTwoDomains {
                        cpu: 2,
                        first: 0,
                        second: 1
                    })
                )
            },
            move || layout("0-2;2-3"),
        ),
        row(
            "empty domain",
            "CPU domain 1 is empty",
            |r| matches!(r, R::Topology(TopologyError::EmptyDomain { index: 1 })),
            move || layout("0-1;;2-3"),
        ),
        row(
            "no domain at all",
            "got zero",
            |r| matches!(r, R::Topology(TopologyError::NoDomains)),
            move || {
                Topology::builder()
                    .allowed(CpuSet::range(0..4))
                    .domains(Vec::new())
                    .build()?;
                Ok(())
            },
        ),
        row(
            "split into zero domains",
            "into 0 domains",
            |r| {
                matches!(
                    r,
                    R::Topology(TopologyError::BadSplit {
                        requested: 0,
                        available: 4
                    })
                )
            },
            move || {
                Topology::builder()
                    .allowed(CpuSet::range(0..4))
                    .split(0)
                    .build()?;
                Ok(())
            },
        ),
        row(
            "split into more domains than CPUs",
            "split 4 allowed CPUs into 5",
            |r| {
                matches!(
                    r,
                    R::Topology(TopologyError::BadSplit {
                        requested: 5,
                        available: 4
                    })
                )
            },
            move || {
                Topology::builder()
                    .allowed(CpuSet::range(0..4))
                    .split(5)
                    .build()?;
                Ok(())
            },
        ),
        row(
            "no allowed CPU",
            "no allowed CPU",
            |r| matches!(r, R::Topology(TopologyError::NoAllowedCpus)),
            move || {
                Topology::builder()
                    .allowed(CpuSet::new())
                    .split(1)
                    .build()?;
                Ok(())
            },
        ),
        row(
            "sysfs cpulist that does not parse",
            "node0/cpulist",
            |r| matches!(r, R::Topology(TopologyError::BadCpuList { .. })),
            move || {
                Topology::builder()
                    .ignore_env()
                    .allowed(CpuSet::range(0..4))
                    .sysfs_root(sysfs_bad.path())
                    .build()?;
                Ok(())
            },
        ),
        row(
            "sysfs cpulist that cannot be read",
            "node1/cpulist",
            |r| matches!(r, R::Topology(TopologyError::Io { .. })),
            move || {
                Topology::builder()
                    .ignore_env()
                    .allowed(CpuSet::range(0..4))
                    .sysfs_root(sysfs_dir.path())
                    .build()?;
                Ok(())
            },
        ),
        row(
            "runtime on a CPU this process may not use",
            format!("CPU {outside} of domain 0"),
            |r| {
                matches!(
                    r,
                    R::Build(BuildError::Topology(TopologyError::CpuNotAllowed {
                        domain: 0,
                        ..
                    }))
                )
            },
            move || {
                Runtime::builder().cpulists(&outside.to_string()).build()?;
                Ok(())
            },
        ),
    ]
}

/// The rows of runtime and actor configuration.
pub(super) fn configuration(fx: &Fx) -> Vec<Row<'_>> {
    let Fx { rt, .. } = fx;
    use Refusal as R;
    vec![
        row(
            "zero threads per domain",
            "got 0",
            |r| matches!(r, R::Build(BuildError::ZeroThreads)),
            move || {
                Runtime::builder().split(1).threads_per_domain(0).build()?;
                Ok(())
            },
        ),
        row(
            "zero lane capacity",
            "got 0",
            |r| matches!(r, R::Build(BuildError::ZeroLaneCapacity)),
            move || {
                Runtime::builder().split(1).lane_capacity(0).build()?;
                Ok(())
            },
        ),
        row(
            "lane capacity too large to hold",
            "1099511627776 is above the largest, 4294967295",
            |r| matches!(r, R::Build(BuildError::LaneCapacity { .. })),
            move || {
                Runtime::builder().split(1).lane_capacity(1 << 40).build()?;
                Ok(())
            },
        ),
        row(
            "lane capacity usize::MAX",
            "is above the largest",
            |r| matches!(r, R::Build(BuildError::LaneCapacity { .. })),
            move || {
                Runtime::builder()
                    .split(1)
                    .lane_capacity(usize::MAX)
                    .build()?;
                Ok(())
            },
        ),
        row(
            "actor with a lane capacity too large",
            "is above the largest",
            |r| matches!(r, R::Spawn(SpawnError::LaneCapacity { .. })),
            move || {
                ActorBuilder::new("weft-bad")
                    .lane_capacity(1 << 40)
                    .spawn(|| Ok::<_, String>(()))?;
                Ok(())
            },
        ),
        row(
            "actor with zero lane capacity",
            "got 0",
            |r| matches!(r, R::Spawn(SpawnError::ZeroLaneCapacity)),
            move || {
                ActorBuilder::new("weft-bad")
                    .lane_capacity(0)
                    .spawn(|| Ok::<_, String>(()))?;
                Ok(())
            },
        ),
        row(
            "actor name with a NUL byte",
            "weft\\0bad",
            |r| matches!(r, R::Spawn(SpawnError::NulInName { .. })),
            move || {
                ActorBuilder::new("weft\0bad").spawn(|| Ok::<_, String>(()))?;
                Ok(())
            },
        ),
        row(
            "lane into no such domain",
            "no CPU domain 7",
            |r| {
                matches!(
                    r,
                    R::Runtime(RuntimeError::NoSuchDomain {
                        domain: 7,
                        count: 2
                    })
                )
            },
            move || {
                rt.lane(7)?;
                Ok(())
            },
        ),
        row(
            "hosted engine on no such domain",
            "no CPU domain 9",
            |r| matches!(r, R::Runtime(RuntimeError::NoSuchDomain { domain: 9, .. })),
            move || {
                rt.spawn_actor(9, || Ok::<_, String>(()))?;
                Ok(())
            },
        ),
        row(
            "hosted engine whose factory fails",
            "no device 3",
            |r| {
                matches!(
                    r,
                    R::Runtime(RuntimeError::Spawn(SpawnError::Factory { .. }))
                )
            },
            move || {
                rt.spawn_actor(0, || Err::<(), _>("no device 3"))?;
                Ok(())
            },
        ),
        row(
            "hosted engine whose factory panics",
            "driver exploded",
            |r| {
                matches!(
                    r,
                    R::Runtime(RuntimeError::Spawn(SpawnError::FactoryPanicked { .. }))
                )
            },
            move || {
                rt.spawn_actor(1, || -> Result<(), String> { panic!("driver exploded") })?;
                Ok(())
            },
        ),
        row(
            "application thread on no such domain",
            "no CPU domain 9",
            |r| matches!(r, R::Runtime(RuntimeError::NoSuchDomain { domain: 9, .. })),
            move || {
                rt.spawn(9, |_| ())?;
                Ok(())
            },
        ),
        row(
            "pipeline stage on no such domain",
            "no CPU domain 5",
            |r| matches!(r, R::Runtime(RuntimeError::NoSuchDomain { domain: 5, .. })),
            move || {
                Pipeline::new(rt, "ones", 0, |l, _| l.ones(DType::F64, &[1]))
                    .stage("sum", 5, |l, x| l.sum_all(x))
                    .run(1)?;
                Ok(())
            },
        ),
    ]
}

/// The rows of lanes.
pub(super) fn lanes(fx: &Fx) -> Vec<Row<'_>> {
    let Fx {
        lane,
        keep,
        closed,
        closed_lane,
        closed_h,
        tight,
        tight_lane,
        ..
    } = fx;
    use Refusal as R;
    vec![
        row(
            "submit after shutdown",
            "shut down",
            |r| matches!(r, R::Submit(SubmitError::Closed(()))),
            move || {
                drop(closed_lane.run(|_| ())?);
                Ok(())
            },
        ),
        row(
            "try_submit after shutdown",
            "shut down",
            |r| matches!(r, R::TrySubmit(TrySubmitError::Closed(()))),
            move || {
                drop(closed_lane.try_submit(Op::new(|_: &mut CpuEngine| ()))?);
                Ok(())
            },
        ),
        row(
            "lane after shutdown",
            "weft-cpu-0",
            |r| matches!(r, R::Runtime(RuntimeError::Closed(_))),
            move || {
                closed.lane(0)?;
                Ok(())
            },
        ),
        row(
            "hosted engine after shutdown",
            "weft-cpu-1",
            |r| matches!(r, R::Runtime(RuntimeError::Closed(_))),
            move || {
                closed.spawn_actor(1, || Ok::<_, String>(()))?;
                Ok(())
            },
        ),
        row(
            "tensor op after shutdown",
            "weft-cpu-0",
            |r| matches!(r, R::Op(OpError::Closed(_))),
            move || {
                closed_lane.add(closed_h, closed_h)?;
                Ok(())
            },
        ),
        row(
            "wait from inside the same actor",
            "would deadlock",
            |r| matches!(r, R::Wait(TicketError::WouldDeadlock)),
            move || {
                let inner = lane.clone();
                wait_ok(
                    lane.run(move |_| inner.run(|_| 1).expect("open").wait())
                        .unwrap(),
                )?;
                Ok(())
            },
        ),
        row(
            "download waited for inside the same actor",
            "would deadlock",
            |r| matches!(r, R::Ticket(TicketError::WouldDeadlock)),
            move || {
                let (inner, h) = (lane.clone(), keep.clone());
                wait_ok(
                    lane.run(move |_| inner.download(&h).expect("open").wait())
                        .unwrap(),
                )?;
                Ok(())
            },
        ),
        row(
            "submit to a full lane from inside an actor",
            "must not block",
            |r| matches!(r, R::Submit(SubmitError::WouldDeadlock(()))),
            move || {
                // Another lane of capacity one: the first op waits behind us,
                // the second would block the actor on its own queue.
                let inner = tight.lane(0).expect("lane");
                let (fits, refused) = wait_ok(
                    tight_lane
                        .run(move |_| {
                            let fits = inner.run(|_| ()).map(drop).is_ok();
                            (fits, inner.run(|_| ()).map(drop).map_err(Refusal::from))
                        })
                        .unwrap_or_else(|_| panic!("open")),
                );
                assert!(fits, "the first op fits");
                refused
            },
        ),
        row(
            "tensor op on a full lane from inside an actor",
            "must not block",
            |r| matches!(r, R::Op(OpError::WouldDeadlock)),
            move || {
                let inner = tight.lane(0).expect("lane");
                wait_ok(
                    tight_lane
                        .run(move |_| {
                            let first = inner.ones(DType::F64, &[1]).map(drop);
                            assert!(first.is_ok(), "the first op fits");
                            inner
                                .ones(DType::F64, &[1])
                                .map(drop)
                                .map_err(Refusal::from)
                        })
                        .unwrap_or_else(|_| panic!("open")),
                )
            },
        ),
        row(
            "shutdown joined from inside an actor",
            "weft-cpu-0",
            |r| matches!(r, R::Shutdown(ShutdownError::WouldDeadlock { .. })),
            move || {
                let victim = two_domains(16);
                let me = victim.clone();
                let out = wait_ok(
                    victim
                        .lane(0)
                        .unwrap()
                        .run(move |_| me.shutdown().map(drop))
                        .unwrap_or_else(|_| panic!("open")),
                );
                victim.shutdown().expect("joined from outside");
                Ok(out?)
            },
        ),
    ]
}
