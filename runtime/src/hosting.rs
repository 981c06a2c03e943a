//! Caller's pools that run CPU domains' actors ([`crate::Builder::host_pool`]):
//! how many of each pool's workers the process's actors hold, and the
//! launcher that puts an actor on one.
//!
//! An actor's job holds its worker for as long as its runtime runs, so a
//! pool lent to two runtimes has that many fewer workers free for the
//! second: the seats are counted here, across every runtime of the
//! process, and taken before a build hands out any job. While the actor
//! runs, every worker of its pool is the domain's
//! ([`weft_actors::lend_workers`]): a blocking wait on one is refused as
//! on weft's own workers.

use std::sync::Arc;

use parking_lot::Mutex;
use rayon::ThreadPool;
#[cfg(not(weft_loom))]
use weft_actors::lend_workers;
use weft_actors::ActorJob;

use crate::error::BuildError;

/// Each lent pool with actors on it, and how many.
static SEATED: Mutex<Vec<(Arc<ThreadPool>, usize)>> = Mutex::new(Vec::new());

/// One worker of a caller's pool, held for one domain's actor from the
/// build until the actor's job returns (or the build fails before it
/// began).
pub(crate) struct Seat {
    pool: Arc<ThreadPool>,
}

/// Takes a seat on `pool` for each of `domains` actors.
///
/// # Errors
///
/// [`BuildError::HostPool`] when fewer of the pool's workers are free: not
/// counting the building thread if it is one of them, nor those the
/// actors of live runtimes hold.
pub(crate) fn reserve(pool: &Arc<ThreadPool>, domains: usize) -> Result<Vec<Seat>, BuildError> {
    let mut seated = SEATED.lock();
    let entry = seated.iter().position(|(p, _)| Arc::ptr_eq(p, pool));
    let taken = entry.map_or(0, |i| seated[i].1);
    let building_on_it = usize::from(pool.current_thread_index().is_some());
    let workers = pool
        .current_num_threads()
        .saturating_sub(building_on_it + taken);
    if workers < domains {
        return Err(BuildError::HostPool {
            domains,
            workers,
            held: taken,
        });
    }
    match entry {
        Some(i) => seated[i].1 += domains,
        None if domains > 0 => seated.push((pool.clone(), domains)),
        None => {}
    }
    Ok((0..domains).map(|_| Seat { pool: pool.clone() }).collect())
}

impl Drop for Seat {
    fn drop(&mut self) {
        let mut seated = SEATED.lock();
        if let Some(i) = seated.iter().position(|(p, _)| Arc::ptr_eq(p, &self.pool)) {
            seated[i].1 -= 1;
            if seated[i].1 == 0 {
                seated.swap_remove(i);
            }
        }
    }
}

impl Seat {
    /// Runs `job` on a worker of the seat's pool, the pool's workers lent
    /// to the actor while it runs; the seat and the workers are given back
    /// as the actor ends, before the shutdown that waits for it returns.
    pub(crate) fn launch(self, job: ActorJob) {
        let pool = self.pool.clone();
        #[cfg(not(weft_loom))]
        let job = {
            let workers = self.pool.clone();
            let lent = lend_workers(job.actor(), move || {
                workers.current_thread_index().is_some()
            });
            job.hold(lent)
        };
        let job = job.hold(self);
        pool.spawn(move || job.run());
    }
}
