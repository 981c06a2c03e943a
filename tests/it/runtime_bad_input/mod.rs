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
    BuildError, CpuEngine, DType, Lane, Op, OpError, Runtime, RuntimeError, Scalar, Tensor,
    TensorHandle, TicketError,
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

/// What the rows work on: runtimes in every state, resident tensors that
/// must survive every row, and layouts.
struct Fx {
    rt: Runtime,
    lane: Lane,
    lane1: Lane,
    keep: TensorHandle,
    keep_c: TensorHandle,
    keep0: Tensor,
    vec3: TensorHandle,
    vec2: TensorHandle,
    f32s: TensorHandle,
    zs: TensorHandle,
    /// The live runtime `foreign` is resident in, kept alive.
    _other: Runtime,
    foreign: TensorHandle,
    stale_runtime: String,
    stale: TensorHandle,
    closed: Runtime,
    closed_lane: Lane,
    closed_h: TensorHandle,
    tight: Runtime,
    tight_lane: Lane,
    outside: usize,
    sysfs_bad: FakeSysfs,
    sysfs_dir: FakeSysfs,
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

    let fx = Fx {
        rt,
        lane,
        lane1,
        keep,
        keep_c,
        keep0: keep0.clone(),
        vec3,
        vec2,
        f32s,
        zs,
        _other: other,
        foreign,
        stale_runtime,
        stale,
        closed,
        closed_lane,
        closed_h,
        tight,
        tight_lane,
        outside,
        sysfs_bad,
        sysfs_dir,
    };
    let rows: Vec<Row> = [
        config::topology(&fx),
        config::configuration(&fx),
        config::lanes(&fx),
        tensors::host(&fx),
        tensors::shapes(&fx),
        tensors::dtypes(&fx),
        tensors::axes(&fx),
        tensors::integers(&fx),
        tensors::einsum(&fx),
        tensors::handles(&fx),
    ]
    .into_iter()
    .flatten()
    .collect();
    let Fx {
        rt,
        lane,
        lane1,
        keep,
        keep_c,
        ..
    } = &fx;

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
        assert_eq!(wait_ok(lane.download(keep).unwrap()), keep0, "{name}");
        assert_eq!(wait_ok(lane1.download(keep_c).unwrap()), keep1, "{name}");
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

mod config;
mod tensors;
