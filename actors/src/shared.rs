//! What an actor shares with its lanes and handles: the [`Shared`] state
//! and the control [`Message`]s its mailbox carries.
//!
//! The builder makes it (`actor.rs`), lanes submit through it (`lane.rs`),
//! the actor loop reads its mailbox (`scheduler.rs`); each of them imports
//! it from here, and it imports none of them.

use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Weak};
use std::time::Duration;

use crate::context::ActorId;
use crate::event::Wake;
use crate::gate::{Entered, Gate};
use crate::queue::{LaneCore, LaneShared};
use crate::shutdown::{ShutdownMode, ShutdownReport, StuckAt};
use crate::stats::{ActorGauges, ActorStats, Counters};
use crate::sync::{channel, CachePadded, Mutex};
use crate::trace::Timeline;

/// A control message to an actor. Data (ops) travel on lanes; the mailbox
/// only says which lane to look at. It holds at most a few messages per lane
/// (one each of `Open`, `Ready`, `Wake`, `Closed`) plus shutdown pokes, so it is
/// bounded by the number of lanes without a capacity of its own, and a send
/// to it never blocks: an actor that fires an event into another actor's
/// mailbox can never wait on it.
pub(crate) enum Message<E> {
    Open(LaneCore<E>),
    Ready(u64),
    Wake(u64),
    Closed(u64),
    Shutdown(ShutdownMode),
    /// Leaving the gate woke a finishing actor.
    Poke,
    /// A [`crate::Nudge`]: run the housekeeping.
    Tidy,
}

/// The state an actor shares with its lanes and handles.
pub(crate) struct Shared<E> {
    pub(crate) id: ActorId,
    pub(crate) name: String,
    pub(crate) mailbox: channel::Sender<Message<E>>,
    /// Entered and left by every submit: on a line of its own.
    pub(crate) gate: CachePadded<Gate>,
    pub(crate) lane_capacity: usize,
    pub(crate) wait_spin: Duration,
    pub(crate) counters: Counters,
    pub(crate) gauges: ActorGauges,
    /// Where ops are recorded, if the actor is traced.
    pub(crate) timeline: Option<Arc<Timeline>>,
    next_lane: AtomicU64,
    lanes: Mutex<LaneList>,
}

/// The lanes of an actor, some of them gone.
#[derive(Default)]
struct LaneList {
    list: Vec<Weak<LaneShared>>,
    /// Entries the last sweep left (at least 8).
    swept: usize,
}

/// Proof of being inside the intake gate; leaving pokes the actor if it
/// waits for the gate to empty.
pub(crate) struct Entry<'a, E>(&'a Shared<E>);

impl<E> Drop for Entry<'_, E> {
    fn drop(&mut self) {
        if self.0.gate.leave() {
            let _ = self.0.mailbox.send(Message::Poke);
        }
    }
}

impl<E> Shared<E> {
    pub(crate) fn new(
        name: String,
        mailbox: channel::Sender<Message<E>>,
        lane_capacity: usize,
        wait_spin: Duration,
        timeline: Option<Arc<Timeline>>,
    ) -> Self {
        Shared {
            id: ActorId::next(),
            name,
            mailbox,
            gate: CachePadded(Gate::new()),
            lane_capacity,
            wait_spin,
            counters: Counters::default(),
            gauges: ActorGauges::default(),
            timeline,
            next_lane: AtomicU64::new(0),
            lanes: Mutex::new(LaneList::default()),
        }
    }

    pub(crate) fn enter(&self) -> Option<Entry<'_, E>> {
        let entered = self.gate.enter();
        let entry = Entry(self);
        match entered {
            Entered::Open => Some(entry),
            Entered::Closed => None,
        }
    }

    pub(crate) fn next_lane_id(&self) -> u64 {
        self.next_lane.fetch_add(1, Relaxed)
    }

    /// Lists a new lane for [`Shared::stats`]. Lanes that are gone are
    /// swept out once the list has doubled since the last sweep, so that
    /// opening `n` lanes costs `O(n)` in all, not `O(n²)`.
    pub(crate) fn register_lane(&self, lane: &Arc<LaneShared>) {
        let mut lanes = self.lanes.lock();
        let LaneList { list, swept } = &mut *lanes;
        if list.len() >= 2 * *swept {
            list.retain(|l| l.strong_count() > 0);
            *swept = list.len().max(8);
        }
        list.push(Arc::downgrade(lane));
    }

    pub(crate) fn stats(&self) -> ActorStats {
        let lanes: Vec<Arc<LaneShared>> = self
            .lanes
            .lock()
            .list
            .iter()
            .filter_map(Weak::upgrade)
            .collect();
        // Submissions are counted per lane only (one counter less on the
        // submit path): what is queued in the actor is what its lanes hold,
        // closed ones included, for a lane lives until its last op ran.
        let queued = lanes.iter().map(|l| l.counters.snapshot().queued).sum();
        ActorStats::collect(
            self.id,
            &self.name,
            &self.counters,
            queued,
            &self.gauges,
            lanes
                .iter()
                .filter(|l| !l.closed.load(Relaxed))
                .map(|l| (l.id, &l.counters))
                .collect(),
        )
    }

    /// What the actor thread is doing, for a shutdown that timed out.
    pub(crate) fn doing(&self) -> StuckAt {
        let gauges = &self.gauges;
        if gauges.ending.load(Relaxed) {
            return StuckAt::Engine;
        }
        match gauges.running() {
            Some(lane) => StuckAt::Op {
                lane,
                label: *gauges.label.lock(),
            },
            None => StuckAt::Finishing,
        }
    }

    pub(crate) fn report(&self, died: Option<String>) -> ShutdownReport {
        let ops = self.counters.snapshot();
        ShutdownReport {
            actor: self.name.clone(),
            completed: ops.completed,
            failed: ops.failed,
            panicked: ops.panicked,
            cancelled: ops.cancelled,
            lost: ops.lost,
            died,
        }
    }
}

/// Events wake a parked lane by a message to its actor's mailbox.
impl<E: 'static> Wake for Shared<E> {
    fn wake(&self, lane: u64) {
        let _ = self.mailbox.send(Message::Wake(lane));
    }
}

impl<E: 'static> crate::housekeeping::Nudged for Shared<E> {
    fn nudge(&self) {
        let _ = self.mailbox.send(Message::Tidy);
    }
}
