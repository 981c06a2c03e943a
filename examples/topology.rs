//! Prints the CPU domains weft discovers on this machine, like a small
//! `lstopo`, and where each domain's threads end up pinned.
//!
//! `cargo run --release -p weft-examples --example topology`
//! (set `WEFT_CPU_DOMAINS="0-3;4-7"` to lay domains out by hand; with
//! `--features cuda` it also lists the CUDA devices and the CPU domain
//! nearest to each)

use weft::{
    topology::{Topology, DOMAINS_ENV},
    Runtime,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let topology = Topology::discover()?;
    println!(
        "allowed CPUs: {} ({} CPUs)",
        topology.allowed(),
        topology.allowed().len()
    );
    println!("layout from:  {:?}", topology.source());
    if let Ok(layout) = std::env::var(DOMAINS_ENV) {
        println!("{DOMAINS_ENV}={layout}");
    }
    let rt = Runtime::builder().topology(topology).build()?;
    for domain in rt.domains() {
        let lane = rt.lane(domain.index())?;
        let workers = lane.run(|engine| engine.worker_cpus().to_vec())?.wait()?;
        let node = domain
            .numa_node()
            .map_or_else(|| "-".to_owned(), |n| n.to_string());
        println!(
            "domain {}  NUMA node {node}  CPUs {}  actor weft-cpu-{}",
            domain.index(),
            domain.cpus(),
            domain.index()
        );
        for (i, cpus) in workers.iter().enumerate() {
            let role = if i == 0 { "actor + worker 0" } else { "worker" };
            println!("  thread {i:>2} ({role}): pinned to CPUs {cpus}");
        }
    }
    #[cfg(feature = "cuda")]
    match weft::topology::cuda_devices() {
        Ok(devices) => {
            for device in devices {
                let near = device
                    .nearest_domain(rt.topology())
                    .map_or_else(|| "unknown".to_owned(), |d| format!("domain {d}"));
                println!("{device}  nearest CPU domain: {near}");
            }
        }
        Err(reason) => println!("{reason}"),
    }
    rt.shutdown()?;
    Ok(())
}
