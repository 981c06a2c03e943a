//! What the exchange asks of MPI: nonblocking calls that own their buffers
//! until their requests complete.
//!
//! [`Exchange`](super::Exchange) keeps the table of outstanding requests
//! and decides what each completion means; a [`Transport`] only posts,
//! tests and cancels. MPI is one ([`MpiSession`](super::MpiSession),
//! feature `mpi`); a test's fake network is another, which lets the
//! request table be checked without MPI (the loom models put completion,
//! cancellation and shutdown in every order).

use std::mem;
use std::time::Duration;

use super::MpiError;
use weft_core::Data;

/// A buffer a request owns while the transport uses it.
#[derive(Debug, Clone, PartialEq)]
pub enum Buf {
    /// Control words: a message header, a collective's signature.
    Words(Box<[u64]>),
    /// A tensor's elements.
    Data(Data),
}

impl Buf {
    /// Its elements (words, or the tensor's elements).
    pub fn len(&self) -> usize {
        match self {
            Buf::Words(w) => w.len(),
            Buf::Data(d) => d.len(),
        }
    }

    /// Whether it has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Its size in bytes.
    pub fn bytes(&self) -> usize {
        match self {
            Buf::Words(w) => mem::size_of_val(&**w),
            Buf::Data(d) => d.len() * d.dtype().size(),
        }
    }
}

/// A reduction as MPI has them (the exchange maps weft's
/// [`Reduction`](super::Reduction)s and element types onto these).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MpiOp {
    /// `MPI_SUM`.
    Sum,
    /// `MPI_PROD`.
    Prod,
    /// `MPI_MAX`.
    Max,
    /// `MPI_MIN`.
    Min,
    /// `MPI_LAND`.
    And,
    /// `MPI_LOR`.
    Or,
}

/// How long a shutdown waits for outstanding requests, each of its two
/// times (see the module docs of [`mpi`](super), "Shutdown").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grace {
    /// For this long ([`SHUTDOWN_GRACE`](super::SHUTDOWN_GRACE) for MPI).
    For(Duration),
    /// For this many rounds of tests (a model's bounded wait).
    Rounds(u32),
}

/// A posted request and the buffers it owns until it completes.
///
/// Dropped before it completed, a request must not free its buffers (the
/// transport may still write them): it leaks them.
pub trait Request {
    /// Whether the request has completed; `Ok(true)` once it has, and
    /// from then on. An error completes it too: the request failed.
    ///
    /// # Errors
    ///
    /// The transport's, for a failed request.
    fn test(&mut self) -> Result<bool, MpiError>;

    /// Asks the transport to cancel the request (a receive nothing
    /// matched yet): it still completes, cancelled or not, and must be
    /// tested until it does.
    fn cancel(&mut self);

    /// Bytes a completed receive received.
    fn received(&self) -> usize;

    /// The buffers of a completed request, in the order they were given.
    fn into_bufs(self) -> Vec<Buf>;
}

/// Nonblocking point-to-point and collective calls on one communicator,
/// made from one thread. Each call takes its buffers and returns the
/// request that owns them until it completes; an `Err` means nothing was
/// posted (and the buffers are dropped).
///
/// Collective calls are made in the same order on every rank (the
/// exchange runs them one at a time).
pub trait Transport {
    /// A posted request.
    type Request: Request;

    /// Sends `buf`'s bytes to rank `to` under the transport's `tag`.
    ///
    /// # Errors
    ///
    /// The transport's.
    fn isend(&self, buf: Buf, to: usize, tag: u32) -> Result<Self::Request, MpiError>;

    /// Receives at most `buf`'s bytes from rank `from` under `tag`.
    ///
    /// # Errors
    ///
    /// The transport's.
    fn irecv(&self, buf: Buf, from: usize, tag: u32) -> Result<Self::Request, MpiError>;

    /// Reduces `send` over the ranks into `recv` (same type and length).
    ///
    /// # Errors
    ///
    /// The transport's.
    fn iallreduce(&self, send: Buf, recv: Buf, op: MpiOp) -> Result<Self::Request, MpiError>;

    /// Broadcasts `buf` from `root`; every rank gives a buffer of the same
    /// length, and the others' are overwritten.
    ///
    /// # Errors
    ///
    /// The transport's.
    fn ibcast(&self, buf: Buf, root: usize) -> Result<Self::Request, MpiError>;

    /// Gathers every rank's `send` into `recv` (ranks × its length) in
    /// rank order.
    ///
    /// # Errors
    ///
    /// The transport's.
    fn iallgather(&self, send: Buf, recv: Buf) -> Result<Self::Request, MpiError>;

    /// Reduces `send` (ranks × `recv`'s length) over the ranks and gives
    /// each rank its block in `recv`.
    ///
    /// # Errors
    ///
    /// The transport's.
    fn ireduce_scatter(&self, send: Buf, recv: Buf, op: MpiOp) -> Result<Self::Request, MpiError>;

    /// A barrier over the ranks.
    ///
    /// # Errors
    ///
    /// The transport's.
    fn ibarrier(&self) -> Result<Self::Request, MpiError>;

    /// How long a shutdown waits for outstanding requests.
    fn grace(&self) -> Grace;

    /// Between two rounds of tests while a shutdown waits (a yield).
    fn pause(&self) {
        std::thread::yield_now();
    }

    /// Ends the transport. `left` is `None` when no request is
    /// outstanding (the transport may finalise), else what was left: the
    /// transport must then leave alone what those requests use.
    fn end(self, left: Option<String>);
}
