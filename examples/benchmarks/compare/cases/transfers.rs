//! Case `transfers`: a 32 MiB f64 tensor downloaded, and moved from one
//! domain to another, in GB/s (bytes read plus bytes written), against a
//! copy loop on the same threads and against a clone on the caller's
//! thread.
//!
//! A download is a copy: the tensor stays resident. Its buffer comes from
//! the domain's pool when the pool holds one of its size (its pages are
//! faulted in already) and is fresh otherwise (huge pages, so 16 faults
//! instead of 8 192); the rows measure each, and say how many downloads
//! the pool served. An upload moves the caller's vector in and copies
//! nothing, so it has no row.

use std::time::{Duration, Instant};

use weft::{Lane, Tensor};
use weft_examples::{copy_loop, random, written_buffer, BoxError};

use crate::case::{Case, Domain, Run};
use crate::report::{Row, Side, Unit};
use crate::settings::Settings;
use crate::timing::median;

pub(super) const CASE: Case = Case {
    name: "transfers",
    title: "downloads, 32 MiB f64",
    run: Run::InDomain(run),
};

pub(super) const BETWEEN: Case = Case {
    name: "transfers-2",
    title: "a transfer between two domains, 32 MiB f64",
    run: Run::OwnRuntime(between),
};

const ELEMENTS: usize = 4 << 20;
const BYTES: usize = ELEMENTS * 8;

/// GB/s of a copy of `BYTES` (read and written) taking `d`.
fn gbs(d: Duration) -> f64 {
    2.0 * BYTES as f64 / d.as_secs_f64() / 1e9
}

/// Pool hits and misses of `lane`'s domain so far.
fn pool_counts(lane: &Lane) -> Result<(u64, u64), BoxError> {
    let b = lane.memory()?.wait()?.buffers;
    Ok((b.hits, b.misses))
}

/// Checks that a downloaded tensor holds `want`.
fn check(t: &Tensor, want: &[f64]) -> Result<(), BoxError> {
    if t.as_slice::<f64>()? != want {
        return Err("transfers: a downloaded copy differs from its source".into());
    }
    Ok(())
}

fn run(domain: &Domain<'_>, rows: &mut Vec<Row>) -> Result<(), BoxError> {
    let Domain {
        settings,
        lane,
        direct_pool,
        ..
    } = *domain;
    let reps = settings.reps(9);
    let x = random(ELEMENTS, 9);
    let h = lane.upload(Tensor::from_vec(x.clone(), &[ELEMENTS])?)?;
    let mut written = written_buffer(ELEMENTS);
    let (mut pooled, mut copies, mut clones) = (vec![], vec![], vec![]);
    let (hits0, _) = pool_counts(lane)?;
    for rep in 0..=reps {
        // Untimed: a tensor of the same size freed in the domain, so that
        // its pool holds a buffer for the download.
        drop(lane.upload(Tensor::from_vec(x.clone(), &[ELEMENTS])?)?);
        let start = Instant::now();
        let t = lane.download(&h)?.wait()?;
        let took = start.elapsed();
        check(&t, &x)?;
        drop(t);
        let start = Instant::now();
        copy_loop(direct_pool, &mut written, &x);
        let copied = start.elapsed();
        let start = Instant::now();
        let clone = std::hint::black_box(x.clone());
        let cloned = start.elapsed();
        drop(clone);
        if rep > 0 {
            pooled.push(took);
            copies.push(copied);
            clones.push(cloned);
        }
    }
    let (hits1, misses1) = pool_counts(lane)?;
    // Downloads kept, so that none finds a buffer of its size in the pool
    // after the first few.
    let mut kept = Vec::new();
    let mut fresh = vec![];
    for _ in 0..reps {
        let start = Instant::now();
        let t = lane.download(&h)?.wait()?;
        fresh.push(start.elapsed());
        kept.push(t);
    }
    for t in &kept {
        check(t, &x)?;
    }
    drop(kept);
    let (_, misses2) = pool_counts(lane)?;
    let (copy, clone) = (median(copies), median(clones));
    rows.push(
        Row::new(
            CASE.name,
            "transfers-download-pooled",
            format!(
                "download, a buffer of its size in the pool ({} of {} served by it)",
                hits1 - hits0,
                reps + 1
            ),
            Unit::GigabytesPerSecond,
            Side::new("lane.download", gbs(median(pooled))),
        )
        .against(Side::new(
            "copy loop, same threads, written buffer",
            gbs(copy),
        )),
    );
    rows.push(
        Row::new(
            CASE.name,
            "transfers-download-fresh",
            format!(
                "download, no buffer of its size in the pool ({} of {reps} allocated)",
                misses2 - misses1
            ),
            Unit::GigabytesPerSecond,
            Side::new("lane.download", gbs(median(fresh))),
        )
        .against(Side::new("Vec::clone on the caller's thread", gbs(clone))),
    );
    Ok(())
}

/// A tensor moved from domain 0 to domain 1 (one thread each on a 2-CPU
/// machine), against a copy loop on one thread.
fn between(settings: &Settings, rows: &mut Vec<Row>) -> Result<(), BoxError> {
    let rt = settings.runtime(2)?;
    if rt.domains().len() < 2 {
        println!("transfers-2: skipped: one domain only on this machine");
        return Ok(());
    }
    let (from, to) = (rt.lane(0)?, rt.lane(1)?);
    let x = random(ELEMENTS, 10);
    let h = from.upload(Tensor::from_vec(x.clone(), &[ELEMENTS])?)?;
    let mut written = written_buffer(ELEMENTS);
    let (mut moves, mut copies) = (vec![], vec![]);
    for rep in 0..=settings.reps(9) {
        let start = Instant::now();
        let there = from.transfer(&h, 1usize)?;
        to.sync(&there)?.wait()?;
        let took = start.elapsed();
        check(&to.download(&there)?.wait()?, &x)?;
        drop(there);
        let start = Instant::now();
        written.copy_from_slice(&x);
        let copied = start.elapsed();
        std::hint::black_box(&written);
        if rep > 0 {
            moves.push(took);
            copies.push(copied);
        }
    }
    drop((from, to));
    rt.shutdown()?;
    rows.push(
        Row::new(
            BETWEEN.name,
            "transfers-between-domains",
            "lane.transfer to a domain of the same node, then sync there",
            Unit::GigabytesPerSecond,
            Side::new("lane.transfer", gbs(median(moves))),
        )
        .against(Side::new(
            "copy loop, one thread, written buffer",
            gbs(median(copies)),
        )),
    );
    Ok(())
}
