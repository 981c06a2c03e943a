//! The rank's MPI actor: it owns MPI, and one lane every MPI op goes down.

use std::time::Duration;

use weft_actors::{Actor, ActorStats, ShutdownError, ShutdownReport, SpawnError};
use weft_mpi::{launched, MpiEngine, MpiError};
use weft_topology::CpuSet;

use crate::config::Config;
use crate::domain::{Hosted, Stop};
use crate::error::BuildError;

/// Idle time after which the MPI actor, with requests outstanding, stops
/// testing them back to back and backs off (to at most [`POLL_MAX`]).
const SPIN: Duration = Duration::from_micros(200);
const POLL_MAX: Duration = Duration::from_millis(1);

/// While it tests back to back, the MPI actor gives its CPU away every this
/// many tests: a launcher that binds a rank to one core puts the rank's
/// application thread, domain actor and MPI actor on it, and the domain's
/// *mpi out* or the caller's next op may be what the request waits for.
/// Measured with `mpi_bench` (2 ranks, a core each): yielding at every test
/// took a host-value allreduce to 17.6 µs and a tensor's to 33 µs; every 4th,
/// 12.3 and 23 µs; every 16th or 64th, 12.4 / 8.9 and 24 / 20 µs but a 1 MiB
/// round trip 1.5–2× slower; never, 7.8 µs and 340 µs.
const YIELD_EVERY: u32 = 4;

/// The rank's MPI actor, and the one lane every MPI op goes down.
pub(crate) struct MpiActor {
    pub(super) actor: Actor<MpiEngine>,
    pub(super) lane: weft_actors::Lane<MpiEngine>,
    pub(super) rank: usize,
    pub(super) ranks: usize,
    /// This rank's part of the CPUs it was given, and how many ranks of
    /// its node were given the same ones.
    pub(crate) share: (usize, usize),
}

impl MpiActor {
    /// Starts the actor: MPI is initialised on its thread, and the ranks
    /// of this node given the same CPUs as this one (`cpus`, the process's
    /// mask) are counted, so that each takes its part of them.
    pub(crate) fn start(config: &Config, cpus: &CpuSet) -> Result<MpiActor, BuildError> {
        launched()?;
        let key = cpus_key(cpus);
        let (tx, rx) = crossbeam_channel::bounded(1);
        let factory = move || {
            let engine = MpiEngine::start()?;
            let share = engine.node_peers(key)?;
            let _ = tx.send((engine.rank(), engine.ranks(), share));
            Ok::<_, MpiError>(engine)
        };
        // While requests are outstanding it tests them back to back for a
        // while (looking at its mailbox between tests, and yielding its CPU
        // now and then), then every `idle / 8` up to a millisecond.
        let mut polls = 0u32;
        let progress = move |engine: &mut MpiEngine, idle: Option<Duration>| {
            if !engine.progress() {
                return None;
            }
            Some(match idle {
                Some(idle) if idle > SPIN => (idle / 8).min(POLL_MAX),
                _ => {
                    polls = polls.wrapping_add(1);
                    if polls.is_multiple_of(YIELD_EVERY) {
                        std::thread::yield_now();
                    }
                    Duration::ZERO
                }
            })
        };
        let actor = config
            .actor(format!("{}-mpi", config.name))
            // Its housekeeping is its spin: an idle spin before it would
            // only delay the first test of what it just posted.
            .idle_spin(Duration::ZERO)
            .spawn_with(factory, progress)
            .map_err(|e| match e {
                SpawnError::Factory { source, .. } => match source.downcast::<MpiError>() {
                    Ok(e) => BuildError::Mpi(*e),
                    Err(other) => BuildError::Mpi(MpiError::Unavailable {
                        reason: other.to_string(),
                    }),
                },
                other => BuildError::Mpi(MpiError::Unavailable {
                    reason: format!("the MPI actor could not start: {other}"),
                }),
            })?;
        let (rank, ranks, share) = rx.recv().map_err(|_| MpiError::Unavailable {
            reason: "the MPI actor stopped before it said its rank".into(),
        })?;
        let lane = actor.lane().map_err(|e| MpiError::Unavailable {
            reason: e.to_string(),
        })?;
        Ok(MpiActor {
            actor,
            lane,
            rank,
            ranks,
            share,
        })
    }
}

/// A digest of a CPU set (FNV-1a over its CPUs): ranks of one node with
/// the same digest were given the same CPUs.
fn cpus_key(cpus: &CpuSet) -> u64 {
    cpus.iter().fold(0xcbf2_9ce4_8422_2325, |h, cpu| {
        (h ^ cpu as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The MPI actor always drains: its queued ops are collectives and sends
/// other ranks count on (a collective cancelled here would leave them
/// waiting for ever), and none of them waits on anything (a collective
/// whose input is not ready is withdrawn at the engine's shutdown). A
/// shutdown with a deadline still waits no longer than it.
impl Hosted for MpiActor {
    fn stop(&self, how: Stop) -> Result<ShutdownReport, ShutdownError> {
        match how {
            Stop::Drain | Stop::Now => self.actor.shutdown(),
            Stop::Within(timeout) => self.actor.drain_timeout(timeout),
        }
    }

    fn stats(&self) -> ActorStats {
        self.actor.stats()
    }
}
