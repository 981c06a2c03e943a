//! The main job for now: start weft on this machine's own topology, print
//! the domains, and drive every domain from several application threads,
//! each with its own lane, with results checked against a serial loop.
//!
//! `cargo run --release -p weft-examples --example lanes`
//!
//! Each application thread submits a stream of ops without waiting: chunks
//! of a sum, each computed in parallel on the domain's pinned pool, and a
//! serial check on the next domain over, ordered after the last chunk by an
//! event. Then it waits for the tickets and compares.

use std::time::Instant;

use rayon::prelude::*;
use weft::{CpuEngine, Op, Runtime};

const THREADS_PER_DOMAIN: usize = 3;
const CHUNKS: u64 = 200;
const CHUNK: u64 = 50_000;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let rt = Runtime::new()?;
    println!("{}", rt.topology());
    let domains = rt.domains().len();
    let start = Instant::now();

    let results: Vec<(usize, usize, u64, u64)> = rt.scope(|s| {
        let mut handles = Vec::new();
        for domain in 0..domains {
            for t in 0..THREADS_PER_DOMAIN {
                // The checking op runs on the next domain over.
                let checker = rt.lane((domain + 1) % domains).expect("lane");
                let handle = s
                    .spawn(domain, move |lane| {
                        let seed = (domain * THREADS_PER_DOMAIN + t) as u64;
                        let mut chunks = Vec::new();
                        for c in 0..CHUNKS {
                            let lo = (seed * CHUNKS + c) * CHUNK;
                            // Parallel over the domain's pool.
                            let chunk = lane
                                .submit(
                                    Op::new(move |engine: &mut CpuEngine| {
                                        engine.install(|| {
                                            (lo..lo + CHUNK)
                                                .into_par_iter()
                                                .map(|x| x % 7)
                                                .sum::<u64>()
                                        })
                                    })
                                    .label("chunk"),
                                )
                                .expect("open");
                            chunks.push(chunk);
                        }
                        let last = chunks.last().expect("chunks submitted").event();
                        let check = checker
                            .submit(
                                Op::new(move |_: &mut CpuEngine| serial(seed))
                                    .label("check")
                                    .after([last]),
                            )
                            .expect("open");
                        let total: u64 = chunks.into_iter().map(|c| c.wait().expect("chunk")).sum();
                        let expected = check.wait().expect("check");
                        (domain, t, total, expected)
                    })
                    .expect("spawned");
                handles.push(handle);
            }
        }
        handles
            .into_iter()
            .map(|h| h.join().expect("application thread"))
            .collect()
    });

    for (domain, t, total, serial_total) in &results {
        assert_eq!(total, serial_total, "domain {domain} thread {t}");
        println!("domain {domain} thread {t}: sum of chunks {total} = serial check {serial_total}");
    }
    let elapsed = start.elapsed();
    let ops = results.len() as u64 * (CHUNKS + 1);
    println!(
        "{ops} ops on {domains} domain(s) from {} application threads in {elapsed:.2?}",
        results.len()
    );
    println!("{}", rt.stats());
    print!("{}", rt.shutdown()?);
    Ok(())
}

/// The whole sum of one thread's chunks, serially, as a check.
fn serial(seed: u64) -> u64 {
    let lo = seed * CHUNKS * CHUNK;
    (lo..lo + CHUNKS * CHUNK).map(|x| x % 7).sum()
}
