//! Ranks over MPI (feature `mpi`): the rank's MPI actor and the lane ops that reach it.
//!
//! One actor per process owns MPI ([`MpiEngine`]: it initialised it and
//! makes every call). A lane op between ranks is up to three ops, none of
//! which waits for another:
//!
//! 1. *mpi out*, on the lane's actor after the tensor's producer: a copy
//!    of the tensor into a buffer of the domain's pool (the one copy: the
//!    store keeps its own, which lanes may still read);
//! 2. the MPI actor's op, ordered after *mpi out* by its event: it hands
//!    the copy to MPI (which reads that buffer in place) and returns; the
//!    request is progressed by the actor's loop, and its completion keeps a
//!    [`Promise`](crate::actor::Promise) (or fails it with the typed error);
//! 3. *mpi in*, on a lane of its own into the domain, after the promise's
//!    event: what MPI wrote, into a buffer of the domain's pool taken on
//!    that lane first for a large result (*mpi buffer*), becomes resident
//!    under the handle the call returned, without a copy.
//!
//! A large input's buffer goes back to the pool once MPI is done with it
//! (*mpi return*). Every op the application submits between ranks goes
//! down one lane into the MPI actor, in submission order, so collectives
//! reach MPI in the order the application called them; each is posted once
//! its data is ready.

mod actor;
mod ops;

pub(crate) use actor::MpiActor;
pub use weft_mpi::{Collective, MpiEngine, Reduction, LAUNCHER_ENV, MAX_AXES, MAX_TAG};
