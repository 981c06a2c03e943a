//! Ops: what a lane carries to its actor, and how the actor runs one.

use std::fmt;
use std::marker::PhantomData;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Duration;

use crate::context::ActorId;
use crate::event::{Dependent, Event, EventSource, EventState, Failure};
use crate::fault::{drop_isolated, is_kill, take_message};
use crate::sync::Mutex;
use crate::ticket::{Slot, SlotCell, TicketError};
use crate::trace::Flow;

/// An op: a closure to run with exclusive access to the actor's engine, a
/// label for stats and error messages, and the events it must wait for.
///
/// ```
/// use weft_actors::{ActorBuilder, Op};
///
/// let actor = ActorBuilder::new("counter").spawn(|| Ok::<_, String>(0u64))?;
/// let lane = actor.lane()?;
/// let first = lane.submit(Op::new(|n: &mut u64| { *n += 1; *n }).label("bump"))?;
/// let second = lane.submit(Op::fallible(|n: &mut u64| {
///     if *n == 1 { Ok(*n * 10) } else { Err(format!("count is {n}")) }
/// }).after([first.event()]))?;
/// assert_eq!(second.wait()?, 10);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Op<B> {
    pub(crate) body: B,
    pub(crate) label: &'static str,
    pub(crate) after: Events,
    pub(crate) flow: Option<Flow>,
}

/// The events an op waits for: inline up to three (most ops read one or
/// two tensors), so the op's one allocation holds them.
pub(crate) type Events = smallvec::SmallVec<[Event; 3]>;

/// The body of an op whose closure returns a plain value.
#[derive(Debug)]
pub struct Call<F>(F);

/// The body of an op whose closure returns `Result`; its error becomes
/// [`TicketError::Op`].
#[derive(Debug)]
pub struct TryCall<F>(F);

/// What an op's body computes on engine `E`. Implemented by [`Call`] and
/// [`TryCall`]; build them with [`Op::new`] and [`Op::fallible`].
pub trait OpBody<E>: Send + 'static {
    /// The value the ticket yields.
    type Output: Send + 'static;
    /// The op's own error type.
    type Error: fmt::Display + Send + 'static;
    /// Runs the body.
    ///
    /// # Errors
    ///
    /// The op's own error.
    fn call(self, engine: &mut E) -> Result<Self::Output, Self::Error>;
}

impl<E, T, F> OpBody<E> for Call<F>
where
    F: FnOnce(&mut E) -> T + Send + 'static,
    T: Send + 'static,
{
    type Output = T;
    type Error = std::convert::Infallible;

    fn call(self, engine: &mut E) -> Result<T, Self::Error> {
        Ok((self.0)(engine))
    }
}

impl<E, T, Er, F> OpBody<E> for TryCall<F>
where
    F: FnOnce(&mut E) -> Result<T, Er> + Send + 'static,
    T: Send + 'static,
    Er: fmt::Display + Send + 'static,
{
    type Output = T;
    type Error = Er;

    fn call(self, engine: &mut E) -> Result<T, Er> {
        (self.0)(engine)
    }
}

impl<F> Op<Call<F>> {
    /// An op that runs `f` and yields its value.
    pub fn new(f: F) -> Self {
        Op {
            body: Call(f),
            label: "op",
            after: Events::new(),
            flow: None,
        }
    }
}

impl<F> Op<TryCall<F>> {
    /// An op that runs `f`; an `Err` becomes [`TicketError::Op`].
    pub fn fallible(f: F) -> Self {
        Op {
            body: TryCall(f),
            label: "op",
            after: Events::new(),
            flow: None,
        }
    }
}

impl<B> Op<B> {
    /// Names the op in stats and in the errors of ops that depend on it.
    pub fn label(mut self, label: &'static str) -> Self {
        self.label = label;
        self
    }

    /// Orders the op after `events`: it runs once all have finished with a
    /// value; if one failed, it does not run and its ticket gets
    /// [`TicketError::DependencyFailed`] naming the first failure.
    pub fn after(mut self, events: impl IntoIterator<Item = Event>) -> Self {
        self.after.extend(events);
        self
    }

    /// Marks the op as one end of a flow, drawn as an arrow between ops of
    /// different actors in a [`Trace`](crate::Trace).
    pub fn flow(mut self, flow: Flow) -> Self {
        self.flow = Some(flow);
        self
    }

    /// The op's body.
    pub fn into_body(self) -> B {
        self.body
    }
}

impl<B> fmt::Debug for Op<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Op")
            .field("label", &self.label)
            .field("after", &&self.after[..])
            .finish_non_exhaustive()
    }
}

/// How a run ended, for the actor's counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RunOutcome {
    Completed,
    Failed,
    Panicked,
}

/// Why an op is resolved without running.
pub(crate) enum Cancel {
    Shutdown,
    Dependency(std::sync::Arc<Failure>),
}

/// An op's queued form, type-erased for the lane queue.
///
/// One allocation per op, [`TaskCell`], holds the body, the events to wait
/// for and the reply slot; the lane's envelope, the ticket and any event
/// subscribers all point into it.
pub(crate) trait Task<E>: Send + Sync {
    /// Calls `check` with the events the op waits for (empty once it ran).
    fn check_after(&self, check: &mut dyn FnMut(&[Event]) -> Deps) -> Deps;
    /// Runs the body, reports the outcome to `count`, then resolves the
    /// slot: a caller that saw the ticket finish also sees it counted.
    fn run(&self, engine: &mut E, count: &mut dyn FnMut(RunOutcome));
    /// Resolves the slot without running the body.
    fn cancel(&self, why: Cancel);
    /// Resolves the slot with `ActorLost` unless it is resolved already.
    fn abandon(&self);
    /// The op's label and flow, for the trace.
    fn trace_info(&self) -> (&'static str, Option<Flow>);
}

pub(crate) struct TaskCell<B: OpBody<E>, E> {
    slot: Slot<B::Output, B::Error>,
    /// Taken by the one run (or cancel); a lock, not a cell, because the
    /// allocation is shared with the ticket (and this crate has no
    /// `unsafe`). The events go with the body, so a finished op does not
    /// keep the ops it waited for alive.
    queued: Mutex<Option<Queued<B>>>,
    flow: Option<Flow>,
    engine: PhantomData<fn(&mut E)>,
}

struct Queued<B> {
    body: B,
    after: Events,
}

/// What the events of an op say about running it.
pub(crate) enum Deps {
    /// All finished with a value: run.
    Ready,
    /// One is pending; the lane is subscribed to it.
    Pending,
    /// One failed: do not run, fail with the first failure.
    Failed(Arc<Failure>),
}

impl<E: 'static, B: OpBody<E>> TaskCell<B, E> {
    pub(crate) fn new(op: Op<B>, actor: ActorId, spin: Duration) -> Arc<Self> {
        Arc::new(TaskCell {
            slot: Slot::new(actor, op.label, spin),
            queued: Mutex::new(Some(Queued {
                body: op.body,
                after: op.after,
            })),
            flow: op.flow,
            engine: PhantomData,
        })
    }

    /// Takes the op back out of a cell that was never queued.
    pub(crate) fn take_op(&self) -> Op<B> {
        let Queued { body, after } = self
            .queued
            .lock()
            .take()
            .expect("a refused op still has its body");
        Op {
            body,
            label: self.slot.label(),
            after,
            flow: self.flow,
        }
    }
}

impl<E: 'static, B: OpBody<E>> Task<E> for TaskCell<B, E> {
    fn check_after(&self, check: &mut dyn FnMut(&[Event]) -> Deps) -> Deps {
        match &*self.queued.lock() {
            Some(queued) => check(&queued.after),
            None => Deps::Ready,
        }
    }

    fn run(&self, engine: &mut E, count: &mut dyn FnMut(RunOutcome)) {
        let Some(Queued { body, after }) = self.queued.lock().take() else {
            unreachable!("an op runs once")
        };
        drop(after);
        let (outcome, how) = match catch_unwind(AssertUnwindSafe(|| body.call(engine))) {
            Ok(Ok(value)) => (Ok(value), RunOutcome::Completed),
            Ok(Err(error)) => (Err(TicketError::Op(error)), RunOutcome::Failed),
            Err(payload) => {
                if is_kill(&*payload) {
                    // The envelope's drop, during unwinding, resolves the
                    // slot with ActorLost.
                    resume_unwind(payload);
                }
                let message = take_message(payload);
                (Err(TicketError::Panicked(message)), RunOutcome::Panicked)
            }
        };
        count(how);
        self.slot.resolve(outcome);
    }

    fn cancel(&self, why: Cancel) {
        let error = match why {
            Cancel::Shutdown => TicketError::Cancelled,
            Cancel::Dependency(first) => TicketError::DependencyFailed(first),
        };
        // The body is the user's closure: its captures' drops are user code.
        let body = self.queued.lock().take();
        drop_isolated(body);
        self.slot.resolve(Err(error));
    }

    fn abandon(&self) {
        if !self.slot.is_resolved() {
            let body = self.queued.lock().take();
            drop_isolated(body);
            self.slot.resolve(Err(TicketError::ActorLost));
        }
    }

    fn trace_info(&self) -> (&'static str, Option<Flow>) {
        (self.slot.label(), self.flow)
    }
}

impl<E: 'static, B: OpBody<E>> EventSource for TaskCell<B, E> {
    fn state(&self) -> EventState {
        self.slot.event_state()
    }

    fn subscribe(&self, dependent: Dependent) -> Option<EventState> {
        self.slot.subscribe(dependent)
    }

    fn label(&self) -> &'static str {
        self.slot.label()
    }
}

impl<E: 'static, B: OpBody<E>> SlotCell<B::Output, B::Error> for TaskCell<B, E> {
    fn slot(&self) -> &Slot<B::Output, B::Error> {
        &self.slot
    }
}
