//! The bad-input catalog across every layer: topology (cpulists, CPUs
//! outside the allowed set, overlapping domains, sysfs), runtime and actor
//! configuration, lanes (after shutdown, waits and full lanes from inside
//! an actor), and tensors (shapes, dtypes, axes, slices, einsum, sizes,
//! stale, foreign and wrong-domain handles). Each row must be refused with
//! the exact error variant and a message naming the bad value, and after
//! each row the tensors resident before it are all there, unchanged.
//! A bad input that panics, hangs or is accepted fails the catalog.

use std::convert::Infallible;
use std::fmt;
use std::time::Duration;

use weft::{
    actor::ActorBuilder,
    c64,
    engine::Pinning,
    error::{
        CpuListError, ShutdownError, SpawnError, SubmitError, TensorError, TopologyError,
        TrySubmitError, WaitTimeoutError,
    },
    ops::{ReduceOp, SliceAxis, TensorOp},
    runtime::Pipeline,
    topology::{CpuSet, Topology},
    BuildError, CpuEngine, DType, Op, OpError, Runtime, RuntimeError, Scalar, Tensor, TicketError,
};
use weft_tests::{quiet_panics, wait, wait_ok, watchdog, FakeSysfs, Hold};

/// Any refusal, from any layer, keeping its exact type.
enum Refusal {
    Topology(TopologyError),
    Build(BuildError),
    Spawn(SpawnError),
    Runtime(RuntimeError),
    Submit(SubmitError<()>),
    TrySubmit(TrySubmitError<()>),
    Op(OpError),
    Wait(TicketError<Infallible>),
    Ticket(TicketError<OpError>),
    Tensor(TensorError),
    Shutdown(ShutdownError),
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Topology(e) => e.fmt(f),
            Refusal::Build(e) => e.fmt(f),
            Refusal::Spawn(e) => e.fmt(f),
            Refusal::Runtime(e) => e.fmt(f),
            Refusal::Submit(e) => e.fmt(f),
            Refusal::TrySubmit(e) => e.fmt(f),
            Refusal::Op(e) => e.fmt(f),
            Refusal::Wait(e) => e.fmt(f),
            Refusal::Ticket(e) => e.fmt(f),
            Refusal::Tensor(e) => e.fmt(f),
            Refusal::Shutdown(e) => e.fmt(f),
        }
    }
}

impl fmt::Debug for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Topology(e) => write!(f, "Topology({e:?})"),
            Refusal::Build(e) => write!(f, "Build({e:?})"),
            Refusal::Spawn(e) => write!(f, "Spawn({e:?})"),
            Refusal::Runtime(e) => write!(f, "Runtime({e:?})"),
            Refusal::Submit(e) => write!(f, "Submit({e:?})"),
            Refusal::TrySubmit(e) => write!(f, "TrySubmit({e:?})"),
            Refusal::Op(e) => write!(f, "Op({e:?})"),
            Refusal::Wait(e) => write!(f, "Wait({e:?})"),
            Refusal::Ticket(e) => write!(f, "Ticket({e:?})"),
            Refusal::Tensor(e) => write!(f, "Tensor({e:?})"),
            Refusal::Shutdown(e) => write!(f, "Shutdown({e:?})"),
        }
    }
}

macro_rules! from {
    ($($t:ty => $v:ident),* $(,)?) => {
        $(impl From<$t> for Refusal {
            fn from(e: $t) -> Refusal {
                Refusal::$v(e)
            }
        })*
    };
}

from!(
    TopologyError => Topology,
    BuildError => Build,
    SpawnError => Spawn,
    RuntimeError => Runtime,
    OpError => Op,
    TicketError<Infallible> => Wait,
    TicketError<OpError> => Ticket,
    TensorError => Tensor,
    ShutdownError => Shutdown,
);

impl<T> From<SubmitError<T>> for Refusal {
    fn from(e: SubmitError<T>) -> Refusal {
        Refusal::Submit(match e {
            SubmitError::Closed(_) => SubmitError::Closed(()),
            SubmitError::WouldDeadlock(_) => SubmitError::WouldDeadlock(()),
        })
    }
}

impl<T> From<TrySubmitError<T>> for Refusal {
    fn from(e: TrySubmitError<T>) -> Refusal {
        Refusal::TrySubmit(match e {
            TrySubmitError::Full(_) => TrySubmitError::Full(()),
            TrySubmitError::Closed(_) => TrySubmitError::Closed(()),
        })
    }
}

type Call<'a> = Box<dyn Fn() -> Result<(), Refusal> + 'a>;

struct Row<'a> {
    name: &'static str,
    call: Call<'a>,
    kind: fn(&Refusal) -> bool,
    needle: String,
}

fn row<'a>(
    name: &'static str,
    needle: impl Into<String>,
    kind: fn(&Refusal) -> bool,
    call: impl Fn() -> Result<(), Refusal> + 'a,
) -> Row<'a> {
    Row {
        name,
        call: Box::new(call),
        kind,
        needle: needle.into(),
    }
}

/// A layout checked against CPUs 0-3, whatever the machine has.
fn layout(text: &str) -> Result<(), Refusal> {
    Topology::builder()
        .allowed(CpuSet::range(0..4))
        .cpulists(text)
        .build()?;
    Ok(())
}

/// Two unpinned domains over a made-up layout: the same on any machine.
fn two_domains(lane_capacity: usize) -> Runtime {
    weft_tests::unpinned_pair()
        .lane_capacity(lane_capacity)
        .build()
        .expect("runtime")
}

fn matrix(rows: usize, cols: usize) -> Tensor {
    Tensor::from_vec((0..rows * cols).map(|i| i as f64).collect(), &[rows, cols]).expect("fits")
}

#[test]
fn bad_input_catalog() {
    let _watchdog = watchdog("bad_input", Duration::from_secs(120));
    quiet_panics("driver exploded");
    let rt = two_domains(1024);
    let (lane, lane1) = (rt.lane(0).expect("lane"), rt.lane(1).expect("lane"));

    // What must survive every row.
    let keep0 = matrix(2, 3);
    let keep1 = Tensor::from_vec(vec![c64::new(1.0, -1.0); 4], &[2, 2]).expect("fits");
    let keep = lane.upload(keep0.clone()).expect("upload");
    let keep_c = lane1.upload(keep1.clone()).expect("upload");
    let vec3 = lane
        .upload(Tensor::from_vec(vec![1.0f64; 3], &[3]).unwrap())
        .unwrap();
    let vec2 = lane
        .upload(Tensor::from_vec(vec![1.0f64; 2], &[2]).unwrap())
        .unwrap();
    let f32s = lane
        .upload(Tensor::from_vec(vec![1.0f32; 6], &[2, 3]).unwrap())
        .unwrap();
    let zs = lane
        .upload(Tensor::from_vec(vec![c64::new(0.0, 1.0); 6], &[2, 3]).unwrap())
        .unwrap();
    let floor = [
        wait_ok(lane.resident().unwrap()),
        wait_ok(lane1.resident().unwrap()),
    ];

    // Other runtimes: a live one, a dropped one, one shut down, one with
    // lanes of capacity one.
    let other = two_domains(1024);
    let foreign = other.lane(0).unwrap().upload(matrix(2, 3)).unwrap();
    let (stale_runtime, stale) = {
        let old = two_domains(1024);
        let h = old.lane(0).unwrap().upload(matrix(2, 3)).unwrap();
        (format!("{:?}", old.id()), h)
    };
    let closed = two_domains(1024);
    let closed_lane = closed.lane(0).unwrap();
    let closed_h = closed_lane.upload(matrix(1, 1)).unwrap();
    closed.shutdown().expect("joined");
    let tight = two_domains(1);
    let tight_lane = tight.lane(0).unwrap();

    let allowed = weft_topology::process_allowed_cpus().expect("allowed CPUs");
    let outside = allowed.iter().last().expect("a CPU") + 1;
    let sysfs_bad = FakeSysfs::new("bad-input").node(0, "0-zz");
    let sysfs_dir = FakeSysfs::new("bad-input-dir");
    std::fs::create_dir_all(sysfs_dir.path().join("devices/system/node/node1/cpulist"))
        .expect("temp dir");

    use Refusal as R;
    use TensorError as T;
    let rows: Vec<Row> = vec![
        // ---- topology ----
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
            || layout("0-3;x"),
        ),
        row(
            "cpulist range backwards",
            "`3-1`",
            |r| matches!(r, R::Topology(TopologyError::BadCpuList { .. })),
            || layout("3-1"),
        ),
        row(
            "cpulist stride zero",
            "`0-3:0`",
            |r| matches!(r, R::Topology(TopologyError::BadCpuList { .. })),
            || layout("0-3:0"),
        ),
        row(
            "cpulist CPU id above the maximum",
            "0-70000",
            |r| matches!(r, R::Topology(TopologyError::BadCpuList { .. })),
            || layout("0-70000"),
        ),
        row(
            "cpulist empty item",
            "`0,,1`",
            |r| matches!(r, R::Topology(TopologyError::BadCpuList { .. })),
            || layout("0,,1"),
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
            || layout("0-1;4-5"),
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
            || layout("0-2;2-3"),
        ),
        row(
            "empty domain",
            "CPU domain 1 is empty",
            |r| matches!(r, R::Topology(TopologyError::EmptyDomain { index: 1 })),
            || layout("0-1;;2-3"),
        ),
        row(
            "no domain at all",
            "got zero",
            |r| matches!(r, R::Topology(TopologyError::NoDomains)),
            || {
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
            || {
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
            || {
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
            || {
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
            || {
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
            || {
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
            || {
                Runtime::builder()
                    .overlap(weft::runtime::Overlap::Allow)
                    .cpulists(&outside.to_string())
                    .build()?;
                Ok(())
            },
        ),
        // ---- runtime and actor configuration ----
        row(
            "zero threads per domain",
            "got 0",
            |r| matches!(r, R::Build(BuildError::ZeroThreads)),
            || {
                Runtime::builder()
                    .overlap(weft::runtime::Overlap::Allow)
                    .split(1)
                    .threads_per_domain(0)
                    .build()?;
                Ok(())
            },
        ),
        row(
            "zero lane capacity",
            "got 0",
            |r| matches!(r, R::Build(BuildError::ZeroLaneCapacity)),
            || {
                Runtime::builder()
                    .overlap(weft::runtime::Overlap::Allow)
                    .split(1)
                    .lane_capacity(0)
                    .build()?;
                Ok(())
            },
        ),
        row(
            "lane capacity too large to hold",
            "1099511627776 is above the largest, 4294967295",
            |r| matches!(r, R::Build(BuildError::LaneCapacity { .. })),
            || {
                Runtime::builder()
                    .overlap(weft::runtime::Overlap::Allow)
                    .split(1)
                    .lane_capacity(1 << 40)
                    .build()?;
                Ok(())
            },
        ),
        row(
            "lane capacity usize::MAX",
            "is above the largest",
            |r| matches!(r, R::Build(BuildError::LaneCapacity { .. })),
            || {
                Runtime::builder()
                    .overlap(weft::runtime::Overlap::Allow)
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
            || {
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
            || {
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
            || {
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
            || {
                rt.lane(7)?;
                Ok(())
            },
        ),
        row(
            "hosted engine on no such domain",
            "no CPU domain 9",
            |r| matches!(r, R::Runtime(RuntimeError::NoSuchDomain { domain: 9, .. })),
            || {
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
            || {
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
            || {
                rt.spawn_actor(1, || -> Result<(), String> { panic!("driver exploded") })?;
                Ok(())
            },
        ),
        row(
            "application thread on no such domain",
            "no CPU domain 9",
            |r| matches!(r, R::Runtime(RuntimeError::NoSuchDomain { domain: 9, .. })),
            || {
                rt.spawn(9, |_| ())?;
                Ok(())
            },
        ),
        row(
            "pipeline stage on no such domain",
            "no CPU domain 5",
            |r| matches!(r, R::Runtime(RuntimeError::NoSuchDomain { domain: 5, .. })),
            || {
                Pipeline::new(&rt, "ones", 0, |l, _| l.ones(DType::F64, &[1]))
                    .stage("sum", 5, |l, x| l.sum_all(x))
                    .run(1)?;
                Ok(())
            },
        ),
        // ---- lanes ----
        row(
            "submit after shutdown",
            "shut down",
            |r| matches!(r, R::Submit(SubmitError::Closed(()))),
            || {
                drop(closed_lane.run(|_| ())?);
                Ok(())
            },
        ),
        row(
            "try_submit after shutdown",
            "shut down",
            |r| matches!(r, R::TrySubmit(TrySubmitError::Closed(()))),
            || {
                drop(closed_lane.try_submit(Op::new(|_: &mut CpuEngine| ()))?);
                Ok(())
            },
        ),
        row(
            "lane after shutdown",
            "weft-cpu-0",
            |r| matches!(r, R::Runtime(RuntimeError::Closed(_))),
            || {
                closed.lane(0)?;
                Ok(())
            },
        ),
        row(
            "hosted engine after shutdown",
            "weft-cpu-1",
            |r| matches!(r, R::Runtime(RuntimeError::Closed(_))),
            || {
                closed.spawn_actor(1, || Ok::<_, String>(()))?;
                Ok(())
            },
        ),
        row(
            "tensor op after shutdown",
            "weft-cpu-0",
            |r| matches!(r, R::Op(OpError::Closed(_))),
            || {
                closed_lane.add(&closed_h, &closed_h)?;
                Ok(())
            },
        ),
        row(
            "wait from inside the same actor",
            "would deadlock",
            |r| matches!(r, R::Wait(TicketError::WouldDeadlock)),
            || {
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
            || {
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
            || {
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
            || {
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
            || {
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
        // ---- tensors: host side ----
        row(
            "elements that do not fit the shape",
            "got 5",
            |r| {
                matches!(
                    r,
                    R::Tensor(T::ElementCount {
                        expected: 6,
                        got: 5,
                        ..
                    })
                )
            },
            || {
                Tensor::from_vec(vec![1.0f64; 5], &[2, 3])?;
                Ok(())
            },
        ),
        row(
            "host shape too large",
            "18446744073709551615",
            |r| matches!(r, R::Tensor(T::TooLarge { .. })),
            || {
                Tensor::from_vec(Vec::<f32>::new(), &[usize::MAX, 2])?;
                Ok(())
            },
        ),
        row(
            "elements read as the wrong dtype",
            "expected a f32 tensor, got f64",
            |r| {
                matches!(
                    r,
                    R::Tensor(T::DType {
                        expected: DType::F32,
                        got: DType::F64
                    })
                )
            },
            || {
                keep0.as_slice::<f32>()?;
                Ok(())
            },
        ),
        // ---- tensors: shapes ----
        row(
            "reshape to another element count",
            "[7]",
            |r| matches!(r, R::Op(OpError::Tensor(T::Reshape { .. }))),
            || {
                lane.reshape(&keep, &[7])?;
                Ok(())
            },
        ),
        row(
            "shapes that do not broadcast",
            "[2, 3] and [2]",
            |r| matches!(r, R::Op(OpError::Tensor(T::Broadcast { .. }))),
            || {
                lane.add(&keep, &vec2)?;
                Ok(())
            },
        ),
        row(
            "broadcast_to fewer axes",
            "[2, 3] and []",
            |r| matches!(r, R::Op(OpError::Tensor(T::Broadcast { .. }))),
            || {
                lane.broadcast_to(&keep, &[])?;
                Ok(())
            },
        ),
        row(
            "concatenate of nothing",
            "got 0",
            |r| matches!(r, R::Op(OpError::Tensor(T::Concat { .. }))),
            || {
                lane.concatenate(&[], 0)?;
                Ok(())
            },
        ),
        row(
            "permutation of the wrong length",
            "[] is not a permutation",
            |r| matches!(r, R::Op(OpError::Tensor(T::Permutation { rank: 2, .. }))),
            || {
                lane.permute(&keep, &[])?;
                Ok(())
            },
        ),
        row(
            "dot of vectors of different lengths",
            "[3] and [2]",
            |r| matches!(r, R::Op(OpError::Tensor(T::MatmulShapes { .. }))),
            || {
                lane.dot(&vec3, &vec2)?;
                Ok(())
            },
        ),
        row(
            "factorization of a vector",
            "[3]",
            |r| matches!(r, R::Op(OpError::Tensor(T::NotMatrix { op: "svd", .. }))),
            || {
                lane.svd(&vec3)?;
                Ok(())
            },
        ),
        row(
            "cholesky of a non-square matrix",
            "[2, 3]",
            |r| {
                matches!(
                    r,
                    R::Op(OpError::Tensor(T::NotSquare { op: "cholesky", .. }))
                )
            },
            || {
                lane.cholesky(&keep)?;
                Ok(())
            },
        ),
        row(
            "op given the wrong number of inputs",
            "got 1",
            |r| {
                matches!(
                    r,
                    R::Op(OpError::Tensor(T::Arity {
                        op: "matmul",
                        expected: 2,
                        got: 1
                    }))
                )
            },
            || {
                lane.apply(TensorOp::Matmul, &[&keep])?;
                Ok(())
            },
        ),
        row(
            "output whose bytes overflow",
            "4611686018427387904",
            |r| matches!(r, R::Op(OpError::Tensor(T::TooLarge { .. }))),
            || {
                lane.zeros(DType::F64, &[1 << 62])?;
                Ok(())
            },
        ),
        row(
            "output the allocator cannot provide",
            "[1099511627778, 3]",
            |r| matches!(r, R::Ticket(TicketError::DependencyFailed(f)) if f.op == "pad"),
            || {
                // Refused on the actor, as a typed error, instead of aborting.
                let padded = lane.pad(&keep, &[(1 << 40, 0), (0, 0)], Scalar::Real(0.0))?;
                wait(lane.download(&padded)?)?;
                Ok(())
            },
        ),
        // ---- tensors: dtypes ----
        row(
            "real and complex operands",
            "f64 and c64",
            |r| {
                matches!(
                    r,
                    R::Op(OpError::Tensor(T::MixedDTypes {
                        lhs: DType::F64,
                        rhs: DType::C64,
                        ..
                    }))
                )
            },
            || {
                lane.add(&keep, &zs)?;
                Ok(())
            },
        ),
        row(
            "solve with a right-hand side of another dtype",
            "f32",
            |r| {
                matches!(
                    r,
                    R::Op(OpError::Tensor(T::MixedDTypes { op: "solve", .. }))
                )
            },
            || {
                let a = lane.eye(DType::F64, 2, 2)?;
                let b = lane.ones(DType::F32, &[2, 1])?;
                lane.solve(&a, &b)?;
                Ok(())
            },
        ),
        row(
            "complex fill of a real tensor",
            "f32",
            |r| {
                matches!(
                    r,
                    R::Op(OpError::Tensor(T::Unsupported {
                        dtype: DType::F32,
                        ..
                    }))
                )
            },
            || {
                lane.full(DType::F32, &[2], Scalar::Complex(c64::new(0.0, 1.0)))?;
                Ok(())
            },
        ),
        row(
            "complex mask for select",
            "c64",
            |r| {
                matches!(
                    r,
                    R::Op(OpError::Tensor(T::DType {
                        got: DType::C64,
                        ..
                    }))
                )
            },
            || {
                lane.select(&zs, &keep, &keep)?;
                Ok(())
            },
        ),
        row(
            "cast then mixed",
            "f32 and f64",
            |r| matches!(r, R::Op(OpError::Tensor(T::MixedDTypes { .. }))),
            || {
                let c = lane.cast(&keep, DType::F32)?;
                lane.matmul(&c, &lane.transpose(&keep)?)?;
                Ok(())
            },
        ),
        row(
            "concatenate of two dtypes",
            "f64 and f32",
            |r| {
                matches!(
                    r,
                    R::Op(OpError::Tensor(T::MixedDTypes {
                        op: "concatenate",
                        ..
                    }))
                )
            },
            || {
                lane.concatenate(&[&keep, &f32s], 0)?;
                Ok(())
            },
        ),
        // ---- tensors: axes and slices ----
        row(
            "reverse along a missing axis",
            "axis 5",
            |r| {
                matches!(
                    r,
                    R::Op(OpError::Tensor(T::Axis {
                        axis: 5,
                        rank: 2,
                        ..
                    }))
                )
            },
            || {
                lane.reverse(&keep, &[5])?;
                Ok(())
            },
        ),
        row(
            "concatenate along a missing axis",
            "axis 2",
            |r| matches!(r, R::Op(OpError::Tensor(T::Axis { axis: 2, .. }))),
            || {
                lane.concatenate(&[&keep, &keep], 2)?;
                Ok(())
            },
        ),
        row(
            "reduction over a missing axis",
            "axis 3",
            |r| matches!(r, R::Op(OpError::Tensor(T::Axis { axis: 3, .. }))),
            || {
                lane.reduce(ReduceOp::Max, &keep, &[3], true)?;
                Ok(())
            },
        ),
        row(
            "dot_general over a missing axis",
            "axis 4",
            |r| {
                matches!(
                    r,
                    R::Op(OpError::Tensor(T::Axis {
                        op: "dot_general",
                        axis: 4,
                        ..
                    }))
                )
            },
            || {
                lane.dot_general(&keep, &keep, &[(4, 0)], &[])?;
                Ok(())
            },
        ),
        row(
            "diagonal of one axis twice",
            "axis 1",
            |r| {
                matches!(
                    r,
                    R::Op(OpError::Tensor(T::Axis {
                        op: "diagonal",
                        axis: 1,
                        ..
                    }))
                )
            },
            || {
                lane.diagonal_axes(&keep, 1, 1)?;
                Ok(())
            },
        ),
        row(
            "clamp_between with bounds of another type",
            "f32",
            |r| {
                matches!(
                    r,
                    R::Op(OpError::Tensor(T::MixedDTypes {
                        op: "clamp_between",
                        ..
                    }))
                )
            },
            || {
                lane.clamp_between(&keep, &f32s, &keep)?;
                Ok(())
            },
        ),
        row(
            "writing into a tensor of another shape",
            "shape [3]",
            |r| matches!(r, R::Op(OpError::Tensor(T::Into { op: "add", .. }))),
            || {
                let out = lane.zeros(DType::F64, &[3])?;
                lane.apply_into(
                    TensorOp::Binary(weft::ops::BinaryOp::Add),
                    &[&keep, &keep],
                    out,
                )?;
                Ok(())
            },
        ),
        row(
            "slice starting past the extent",
            "start 3",
            |r| matches!(r, R::Op(OpError::Tensor(T::Slice { op: "slice", .. }))),
            || {
                lane.slice(
                    &keep,
                    &[
                        SliceAxis {
                            start: 3,
                            stop: 4,
                            step: 1,
                        },
                        SliceAxis::ALL,
                    ],
                )?;
                Ok(())
            },
        ),
        row(
            "slice with ranges for another rank",
            "1 axis ranges for a rank-2",
            |r| matches!(r, R::Op(OpError::Tensor(T::Slice { .. }))),
            || {
                lane.slice(&keep, &[SliceAxis::ALL])?;
                Ok(())
            },
        ),
        row(
            "pad widths for another rank",
            "3 pad widths",
            |r| matches!(r, R::Op(OpError::Tensor(T::Slice { op: "pad", .. }))),
            || {
                lane.pad(&keep, &[(0, 0); 3], Scalar::Real(0.0))?;
                Ok(())
            },
        ),
        // ---- tensors: integers and bool ----
        row(
            "an integer fill that is not whole",
            "1.5, which must be a whole number in i32's range",
            |r| matches!(r, R::Op(OpError::Tensor(T::Argument { .. }))),
            || {
                lane.full(DType::I32, &[2], Scalar::Real(1.5))?;
                Ok(())
            },
        ),
        row(
            "a bool fill of 2",
            "2, which must be true, false, 0 or 1",
            |r| matches!(r, R::Op(OpError::Tensor(T::Argument { .. }))),
            || {
                lane.full(DType::Bool, &[2], Scalar::Int(2))?;
                Ok(())
            },
        ),
        row(
            "an integer range past i32",
            "2147483650",
            |r| matches!(r, R::Op(OpError::Tensor(T::Argument { .. }))),
            || {
                lane.arange(DType::I32, 2147483640.0, 5.0, 3)?;
                Ok(())
            },
        ),
        row(
            "integer division by zero",
            "element [1] of the divisor [2] is 0",
            |r| matches!(r, R::Ticket(TicketError::DependencyFailed(f)) if f.op == "floor_div"),
            || {
                // Refused on the actor, before any element is computed.
                let a = lane.upload(Tensor::from_vec(vec![4i64, 5], &[2])?)?;
                let b = lane.upload(Tensor::from_vec(vec![2i64, 0], &[2])?)?;
                wait(lane.download(&lane.floor_div(&a, &b)?)?)?;
                Ok(())
            },
        ),
        row(
            "a negative integer exponent",
            "exponent is -2",
            |r| matches!(r, R::Ticket(TicketError::DependencyFailed(f)) if f.op == "pow"),
            || {
                let a = lane.upload(Tensor::from_vec(vec![4i32, 5], &[2])?)?;
                let e = lane.upload(Tensor::from_vec(vec![1i32, -2], &[2])?)?;
                wait(lane.download(&lane.pow(&a, &e)?)?)?;
                Ok(())
            },
        ),
        row(
            "div of integers",
            "div is not defined for i64 tensors",
            |r| matches!(r, R::Op(OpError::Tensor(T::Unsupported { op: "div", .. }))),
            || {
                let a = lane.upload(Tensor::from_vec(vec![4i64, 5], &[2])?)?;
                lane.div(&a, &a)?;
                Ok(())
            },
        ),
        row(
            "a select mask of floats",
            "expected a bool tensor, got f64",
            |r| {
                matches!(
                    r,
                    R::Op(OpError::Tensor(T::DType {
                        expected: DType::Bool,
                        ..
                    }))
                )
            },
            || {
                lane.select(&keep, &keep, &keep)?;
                Ok(())
            },
        ),
        row(
            "logical and of floats",
            "and is not defined for f64 tensors",
            |r| matches!(r, R::Op(OpError::Tensor(T::Unsupported { op: "and", .. }))),
            || {
                lane.and(&keep, &keep)?;
                Ok(())
            },
        ),
        row(
            "argmax along an axis out of range",
            "axis 2 of a rank-2 tensor",
            |r| matches!(r, R::Op(OpError::Tensor(T::Axis { axis: 2, .. }))),
            || {
                lane.argmax(&keep, 2)?;
                Ok(())
            },
        ),
        row(
            "random integers of an empty interval",
            "3..3",
            |r| matches!(r, R::Op(OpError::Tensor(T::Argument { .. }))),
            || {
                lane.random(
                    DType::I64,
                    &[2],
                    weft::ops::Distribution::Integers { low: 3, high: 3 },
                    1,
                )?;
                Ok(())
            },
        ),
        // ---- tensors: einsum ----
        row(
            "einsum with broadcast axes and no ellipsis in the output",
            "1 axes under `...` but the output has no `...`",
            |r| matches!(r, R::Op(OpError::Tensor(T::Einsum { .. }))),
            || {
                lane.einsum("...i->i", &[&keep])?;
                Ok(())
            },
        ),
        row(
            "einsum output label twice",
            "`i` appears twice",
            |r| matches!(r, R::Op(OpError::Tensor(T::Einsum { .. }))),
            || {
                lane.einsum("ij->ii", &[&keep])?;
                Ok(())
            },
        ),
        row(
            "einsum subscripts for another rank",
            "2 axes",
            |r| matches!(r, R::Op(OpError::Tensor(T::Einsum { .. }))),
            || {
                lane.einsum("ijk->i", &[&keep])?;
                Ok(())
            },
        ),
        row(
            "einsum without operands",
            "got 0",
            |r| matches!(r, R::Op(OpError::Tensor(T::Arity { op: "einsum", .. }))),
            || {
                lane.einsum("->", &[])?;
                Ok(())
            },
        ),
        // ---- tensors: handles ----
        row(
            "stale handle: tensor gone from the store",
            "not resident",
            |r| matches!(r, R::Ticket(TicketError::Op(OpError::NotResident(_)))),
            || {
                let doomed = lane.upload(matrix(1, 2))?;
                let id = doomed.id();
                assert!(wait_ok(
                    lane.run(move |e| e.store_mut().remove(id).is_some())
                        .unwrap()
                ));
                wait(lane.download(&doomed)?)?;
                Ok(())
            },
        ),
        row(
            "stale handle: its runtime was dropped",
            stale_runtime.clone(),
            |r| matches!(r, R::Op(OpError::ForeignHandle { op: "add", .. })),
            || {
                lane.add(&stale, &keep)?;
                Ok(())
            },
        ),
        row(
            "foreign handle: another live runtime",
            "with",
            |r| matches!(r, R::Op(OpError::ForeignHandle { op: "with", .. })),
            || {
                drop(lane.with(&[&foreign], |_, _| ())?);
                Ok(())
            },
        ),
        row(
            "wrong-domain handle in an op",
            "lives in CPU domain 1",
            |r| {
                matches!(
                    r,
                    R::Op(OpError::WrongDomain {
                        handle: weft::Place::Cpu(1),
                        lane: weft::Place::Cpu(0),
                        ..
                    })
                )
            },
            || {
                lane.add(&keep_c, &keep_c)?;
                Ok(())
            },
        ),
        row(
            "wrong-domain handle to download",
            "download",
            |r| matches!(r, R::Op(OpError::WrongDomain { op: "download", .. })),
            || {
                drop(lane1.download(&keep)?);
                Ok(())
            },
        ),
        row(
            "wrong-domain handle to transfer",
            "transfer",
            |r| matches!(r, R::Op(OpError::WrongDomain { op: "transfer", .. })),
            || {
                lane1.transfer(&keep, 0)?;
                Ok(())
            },
        ),
        row(
            "transfer to no such domain",
            "no CPU domain 4",
            |r| {
                matches!(
                    r,
                    R::Op(OpError::NoSuchDomain {
                        domain: 4,
                        count: 2
                    })
                )
            },
            || {
                lane.transfer(&keep, 4)?;
                Ok(())
            },
        ),
        row(
            "singular system",
            "singular",
            |r| matches!(r, R::Ticket(TicketError::DependencyFailed(f)) if f.op == "solve"),
            || {
                let a = lane.zeros(DType::F64, &[2, 2])?;
                let x = lane.solve(&a, &a)?;
                wait(lane.download(&x)?)?;
                Ok(())
            },
        ),
    ];

    assert!(rows.len() >= 30, "{} rows", rows.len());
    let mut names: Vec<&str> = rows.iter().map(|r| r.name).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), rows.len(), "row names are unique");
    for Row {
        name,
        call,
        kind,
        needle,
    } in &rows
    {
        let refusal = match call() {
            Ok(()) => panic!("{name}: accepted"),
            Err(r) => r,
        };
        assert!(kind(&refusal), "{name}: wrong kind {refusal:?}");
        let message = refusal.to_string();
        assert!(
            message.contains(needle.as_str()),
            "{name}: `{message}` does not name `{needle}`"
        );
        // Nothing resident was lost, changed, or left behind.
        assert_eq!(wait_ok(lane.download(&keep).unwrap()), keep0, "{name}");
        assert_eq!(wait_ok(lane1.download(&keep_c).unwrap()), keep1, "{name}");
        let now = [
            wait_ok(lane.resident().unwrap()),
            wait_ok(lane1.resident().unwrap()),
        ];
        assert_eq!(now, floor, "{name}: resident tensors");
    }
    let stats = rt.stats();
    assert!(stats.actors.iter().all(|a| a.ops.panicked == 0), "{stats}");
    eprintln!("bad input: {} kinds refused with typed errors", rows.len());
}

#[test]
fn timeouts_too_long_for_the_clock_wait_instead_of_panicking() {
    let _watchdog = watchdog("bad_input", Duration::from_secs(120));
    let rt = Runtime::builder()
        .overlap(weft::runtime::Overlap::Allow)
        .split(1)
        .pinning(Pinning::None)
        .build()
        .expect("runtime");
    let lane = rt.lane(0).expect("lane");
    let hold = Hold::on(lane.actor_lane());
    let ticket = lane
        .submit_timeout(Op::new(|_: &mut CpuEngine| 5), Duration::MAX)
        .expect("room");
    let waiter = std::thread::spawn(move || ticket.wait_timeout(Duration::MAX));
    drop(hold);
    assert_eq!(waiter.join().expect("waiter").expect("ran"), 5);
    let failing = lane.try_run(|_| Err::<(), _>("bad value 9")).expect("open");
    match failing.wait_timeout(Duration::MAX) {
        Err(WaitTimeoutError::Failed(TicketError::Op(e))) => assert_eq!(e, "bad value 9"),
        other => panic!("{other:?}"),
    }
    let inner = lane.clone();
    let refused = wait_ok(
        lane.run(move |_| {
            let t = inner.run(|_| ()).expect("open");
            matches!(
                t.wait_timeout(Duration::MAX),
                Err(WaitTimeoutError::Failed(TicketError::WouldDeadlock))
            )
        })
        .expect("open"),
    );
    assert!(refused, "from inside the actor it is still refused");
}
