//! Hosting your own engine type as an actor.
//!
//! `cargo run --release -p weft-examples --example custom_engine`
//!
//! Any type can be an engine: the actor builds it on its own thread with
//! the factory you give, owns it there (it need not be `Send`), and runs
//! the ops of its lanes on it one at a time. Here the engine is a small
//! key-value store with an `Rc` inside — a type no lock-based design could
//! share between threads — hosted next to the CPU domain it is pinned to.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use weft::{Op, Runtime};

/// The engine: not `Send`, not `Sync`, never needs to be.
struct Inventory {
    items: Rc<RefCell<BTreeMap<String, u64>>>,
    ops: u64,
}

impl Inventory {
    fn add(&mut self, name: &str, count: u64) -> u64 {
        self.ops += 1;
        let mut items = self.items.borrow_mut();
        let total = items.entry(name.to_owned()).or_insert(0);
        *total += count;
        *total
    }

    fn take(&mut self, name: &str, count: u64) -> Result<u64, String> {
        self.ops += 1;
        let mut items = self.items.borrow_mut();
        let have = items
            .get_mut(name)
            .ok_or_else(|| format!("no item `{name}`"))?;
        if *have < count {
            return Err(format!("only {have} of `{name}`, asked for {count}"));
        }
        *have -= count;
        Ok(*have)
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let rt = Runtime::builder().split(1).build()?;
    let actor = rt.spawn_actor(0, || {
        Ok::<_, String>(Inventory {
            items: Rc::new(RefCell::new(BTreeMap::new())),
            ops: 0,
        })
    })?;

    // Four application threads, each with its own lane into the actor.
    // Ops of one lane run in order, so waiting for a lane's last op waits
    // for all of that lane's ops; lanes are not ordered with each other.
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let lane = actor.lane().expect("lane");
            s.spawn(move || {
                let mut last = None;
                for i in 0..250 {
                    let name = format!("part-{}", (t + i) % 5);
                    last = Some(lane.run(move |inv: &mut Inventory| inv.add(&name, 1)));
                }
                last.expect("250 ops")
                    .expect("submitted")
                    .wait()
                    .expect("ran");
            });
        }
    });

    let lane = actor.lane()?;
    let added = lane.submit(Op::new(|inv: &mut Inventory| inv.items.borrow().clone()))?;
    // An op's own error arrives on its ticket, typed; the actor lives on.
    let refused = lane.try_run(|inv: &mut Inventory| inv.take("part-0", 10_000))?;
    let taken = lane.try_run(|inv: &mut Inventory| inv.take("part-0", 50))?;
    let ops = lane.run(|inv: &mut Inventory| inv.ops)?;

    let items = added.wait()?;
    println!("after 1000 adds from 4 threads: {items:?}");
    assert_eq!(items.values().sum::<u64>(), 1000);
    match refused.wait() {
        Err(e) => println!("refused: {e}"),
        Ok(left) => return Err(format!("took 10000 and left {left}").into()),
    }
    println!("took 50 of part-0, {} left", taken.wait()?);
    println!("{} ops ran on the engine", ops.wait()?);
    print!("{}", rt.shutdown()?);
    Ok(())
}
