//! Ops: what a lane carries to its actor, and how the actor runs one.

use std::any::Any;
use std::fmt;
use std::marker::PhantomData;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

use crate::event::Event;
use crate::ticket::{panic_message, Completer, Failure, TicketError};

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
    pub(crate) after: Vec<Event>,
}

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
            after: Vec::new(),
        }
    }
}

impl<F> Op<TryCall<F>> {
    /// An op that runs `f`; an `Err` becomes [`TicketError::Op`].
    pub fn fallible(f: F) -> Self {
        Op {
            body: TryCall(f),
            label: "op",
            after: Vec::new(),
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

    /// The op's body.
    pub fn into_body(self) -> B {
        self.body
    }
}

impl<B> fmt::Debug for Op<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Op")
            .field("label", &self.label)
            .field("after", &self.after)
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

/// An op with its completer, type-erased for the lane queue.
pub(crate) trait Task<E>: Send {
    fn after(&self) -> &[Event];
    fn run(self: Box<Self>, engine: &mut E) -> RunOutcome;
    fn cancel(self: Box<Self>, why: Cancel);
    /// For handing an op that could not be queued back to its submitter.
    fn into_any(self: Box<Self>) -> Box<dyn Any>;
}

pub(crate) struct TaskCell<B: OpBody<E>, E> {
    pub(crate) op: Op<B>,
    pub(crate) completer: Completer<B::Output, B::Error>,
    pub(crate) engine: PhantomData<fn(&mut E)>,
}

impl<E, B: OpBody<E>> TaskCell<B, E> {
    /// Takes the op back out of a task that was never queued.
    pub(crate) fn into_op(self) -> Op<B> {
        self.completer.disarm();
        self.op
    }
}

impl<E: 'static, B: OpBody<E>> Task<E> for TaskCell<B, E> {
    fn after(&self) -> &[Event] {
        &self.op.after
    }

    fn run(self: Box<Self>, engine: &mut E) -> RunOutcome {
        let TaskCell { op, completer, .. } = *self;
        let Op { body, after, .. } = op;
        drop(after);
        match catch_unwind(AssertUnwindSafe(|| body.call(engine))) {
            Ok(Ok(value)) => {
                completer.complete(Ok(value));
                RunOutcome::Completed
            }
            Ok(Err(error)) => {
                completer.complete(Err(TicketError::Op(error)));
                RunOutcome::Failed
            }
            Err(payload) => {
                if crate::fault::is_kill(&*payload) {
                    // Unwinding drops `completer`: the ticket sees ActorLost.
                    resume_unwind(payload);
                }
                completer.complete(Err(TicketError::Panicked(panic_message(&*payload))));
                RunOutcome::Panicked
            }
        }
    }

    fn cancel(self: Box<Self>, why: Cancel) {
        let error = match why {
            Cancel::Shutdown => TicketError::Cancelled,
            Cancel::Dependency(first) => TicketError::DependencyFailed(first),
        };
        self.completer.complete(Err(error));
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}
