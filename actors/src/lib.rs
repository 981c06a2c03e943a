//! Generic actors: one OS thread that owns an engine exclusively and runs
//! ops sent to it over ordered, bounded lanes.
//!
//! This crate knows nothing about tensors. An actor is started with a
//! factory that builds its engine on the actor thread
//! ([`ActorBuilder::spawn`]); application code opens [`Lane`]s into it and
//! submits [`Op`]s, each answered by a [`Ticket`]. An op can be ordered after
//! the [`Event`]s of ops on other lanes or actors without blocking any actor.
//!
//! ```
//! use weft_actors::ActorBuilder;
//!
//! let actor = ActorBuilder::new("weft-doc").spawn(|| Ok::<_, String>(Vec::<u32>::new()))?;
//! let lane = actor.lane()?;
//! for i in 0..3 {
//!     drop(lane.run(move |v: &mut Vec<u32>| v.push(i))?);
//! }
//! let seen = lane.run(|v: &mut Vec<u32>| v.clone())?.wait()?;
//! assert_eq!(seen, [0, 1, 2]);
//! let report = actor.shutdown()?;
//! assert_eq!(report.completed, 4);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The protocols (ticket slot, intake gate, lane wake-up, events, the actor
//! loop) are each documented in their own module, with their invariants and
//! memory orderings, and checked by the loom models in `loom-tests`.
#![forbid(unsafe_code)]
#![warn(missing_docs, missing_debug_implementations)]

mod actor;
mod context;
mod event;
pub mod fault;
mod gate;
mod housekeeping;
mod lane;
mod op;
mod promise;
mod queue;
mod release;
mod scheduler;
mod shared;
mod shutdown;
mod stats;
mod sync;
mod ticket;
mod trace;

pub use actor::{
    Actor, ActorBuilder, ActorClosed, ActorJob, SpawnError, DEFAULT_HOST_TIMEOUT,
    DEFAULT_IDLE_SPIN, DEFAULT_LANE_CAPACITY, DEFAULT_WAIT_SPIN, MAX_LANE_CAPACITY,
};
pub use context::{current_actor, mark_current_thread, ActorId};
#[cfg(not(weft_loom))]
pub use context::{lend_workers, LentWorkers};
pub use event::{Event, EventState, Failure, FailureCause};
pub use housekeeping::{Housekeeping, Nudge};
pub use lane::{Lane, SubmitError, SubmitTimeoutError, TicketFor, TrySubmitError};
pub use op::{Call, Op, OpBody, TryCall};
pub use promise::Promise;
pub use release::{release_queue, Released, Releaser};
pub use scheduler::OPS_PER_TURN;
pub use shutdown::{ShutdownError, ShutdownMode, ShutdownReport, Stuck, StuckAt};
pub use stats::{ActorStats, LaneStats, OpCounts, SampledTime, HISTOGRAM_BUCKETS};
pub use ticket::{Ticket, TicketError, TryWaitError, WaitTimeoutError};
pub use trace::{ActorTimeline, Flow, Outcome, Record, Trace, DEFAULT_TRACE_CAPACITY};
