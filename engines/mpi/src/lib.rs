//! A rank's MPI, owned by one actor.
//!
//! [`MpiEngine`] is built on the MPI actor's thread and never leaves it:
//! that thread initialises MPI (`MPI_THREAD_SERIALIZED`), makes every MPI
//! call of the process's weft and finalises MPI once, when the engine is
//! dropped. Its methods only *post* nonblocking requests and return;
//! [`MpiEngine::progress`] (run by every op of the actor and by its
//! housekeeping while requests are outstanding) tests them and calls each
//! request's [`Done`] when it completes. No call waits on the network.
//!
//! # Messages
//!
//! A tensor sent to a rank under tag `t` (at most [`MAX_TAG`]) is two MPI
//! messages on the engine's own communicator (a duplicate of the world's):
//! a header of fixed size on tag `2t` (a magic word, the element type, the
//! axes and their extents) and the elements' bytes on tag `2t + 1`. The
//! receiver posts both receives at once, the data one sized for the shape
//! it expects; MPI's order of messages between two ranks on one tag pairs
//! the k-th header with the k-th data message. When both are in, the
//! header is compared with what was expected: a different type or shape
//! fails the receive with [`MpiError::Mismatch`] naming both (a larger
//! message is truncated by MPI and still consumed, so the next receive on
//! the tag is not shifted), never a tensor of the wrong size.
//!
//! # Collectives
//!
//! Collectives run one at a time, in the order the actor takes them, so
//! every rank posts them to MPI in the same order. Each is preceded by a
//! signature exchange, a maximum over `[s, !s]` of a hash `s` of the
//! collective's kind, reduction, root, element type and shape: the two
//! maxima are `s` and `!s` on every rank only if every rank gave the same
//! `s`. Ranks that disagree all fail that collective with
//! [`MpiError::Disagree`] instead of reducing mismatched buffers.
//!
//! # Failure
//!
//! The communicator is set to `MPI_ERRORS_RETURN`: a failed call fails its
//! request's op with [`MpiError::Call`], and the engine carries on. A peer
//! that never sends leaves the receive outstanding until shutdown cancels
//! it. A rank that dies is not survivable under Open MPI's `mpirun`, which
//! ends the whole job when one of its processes exits abnormally.
//!
//! # Shutdown
//!
//! Dropping the engine progresses what is outstanding for up to
//! [`SHUTDOWN_GRACE`], then cancels the receives nothing matched and fails
//! the rest with [`MpiError::Cancelled`] (collectives in the order they
//! were queued: none that was not begun is begun). MPI is finalised once
//! every request has completed; if one never does (a send to a rank that
//! is gone), MPI is left initialised and its buffers leaked rather than
//! freed under it, and the engine says so on stderr.
//!
//! # The exchange and its transport
//!
//! The request table, the message and collective protocols above and the
//! shutdown are the [`Exchange`], generic over a [`Transport`] that only
//! posts, tests and cancels nonblocking requests; [`MpiEngine`] is the
//! exchange over [`MpiSession`], MPI itself (the only `unsafe` code, in
//! its own module, feature `mpi`). The exchange alone builds without MPI:
//! the loom models of `loom-tests/exchange.rs` run it against a fake
//! network, completion, cancellation and shutdown in every order.
#![deny(unsafe_code)]
#![warn(missing_docs, missing_debug_implementations)]

#[cfg(feature = "mpi")]
#[allow(unsafe_code)] // The MPI calls, each argued.
mod ffi;
mod transport;

use std::collections::VecDeque;
use std::fmt;
#[cfg(feature = "mpi")]
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant};

#[cfg(feature = "mpi")]
pub use ffi::{Posted as MpiRequest, Session as MpiSession};
pub use transport::{Buf, Grace, MpiOp, Request, Transport};

use weft_core::{element_count, DType, Data, Tensor};

/// The largest message tag weft takes (each tag is two of MPI's, and MPI
/// guarantees tags up to 32767).
pub const MAX_TAG: u32 = 16_383;

/// The most axes a tensor sent between ranks may have.
pub const MAX_AXES: usize = 32;

/// How long a dropped engine waits for its outstanding requests before it
/// cancels them.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// The environment variables by which a launcher (Open MPI's `mpirun`,
/// Hydra, Slurm's PMI/PMIx) tells a process it is one of a job's ranks.
pub const LAUNCHER_ENV: [&str; 5] = [
    "OMPI_COMM_WORLD_SIZE",
    "PMI_SIZE",
    "PMI_RANK",
    "PMIX_RANK",
    "SLURM_PROCID",
];

const MAGIC: u64 = 0x7765_6674_5f74_656e;
const HEADER_WORDS: usize = 3 + MAX_AXES;

/// MPI's state in this process: MPI can be initialised once per process
/// and never again after it is finalised.
#[cfg(feature = "mpi")]
static STATE: AtomicU8 = AtomicU8::new(NEVER);
#[cfg(feature = "mpi")]
const NEVER: u8 = 0;
#[cfg(feature = "mpi")]
const LIVE: u8 = 1;
#[cfg(feature = "mpi")]
const FINALISED: u8 = 2;

/// What went wrong with an MPI operation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MpiError {
    /// MPI cannot be had here.
    #[error("MPI is not available: {reason}")]
    Unavailable {
        /// Why.
        reason: String,
    },
    /// An MPI call returned an error.
    #[error("{call} failed (MPI error {code}): {message}")]
    Call {
        /// The call.
        call: &'static str,
        /// MPI's error code.
        code: i32,
        /// MPI's words for it.
        message: String,
    },
    /// A rank outside the job.
    #[error("rank {rank} is not one of the job's {ranks} ranks")]
    NoSuchRank {
        /// The rank asked for.
        rank: usize,
        /// How many there are.
        ranks: usize,
    },
    /// A message tag above [`MAX_TAG`].
    #[error("tag {tag} is above the largest weft takes, {MAX_TAG}")]
    Tag {
        /// The tag asked for.
        tag: u32,
    },
    /// More elements (or bytes) than one MPI call carries (a C `int`).
    #[error("{op}: {count} is more than one MPI call carries (at most 2^31 - 1)")]
    TooLarge {
        /// The op.
        op: &'static str,
        /// The count.
        count: usize,
    },
    /// More axes than a message header holds.
    #[error("{op}: a tensor of {axes} axes; weft sends at most {MAX_AXES}")]
    TooManyAxes {
        /// The op.
        op: &'static str,
        /// Its axes.
        axes: usize,
    },
    /// What arrived is not what the receive expected.
    #[error("recv from rank {from}, tag {tag}: expected {expected}, rank {from} sent {found}")]
    Mismatch {
        /// The sending rank.
        from: usize,
        /// The tag.
        tag: u32,
        /// The type and shape the receive gave.
        expected: String,
        /// What the message was.
        found: String,
    },
    /// The ranks did not all call the same collective with the same
    /// arguments.
    #[error(
        "{op} ({this}): the ranks disagree on this collective; every rank must call the \
         same collectives in the same order, with tensors of one type and shape"
    )]
    Disagree {
        /// The collective.
        op: &'static str,
        /// This rank's call.
        this: String,
    },
    /// A reduction not defined for the element type.
    #[error("{op} with {reduction} is not defined for {dtype} tensors")]
    Unsupported {
        /// The collective.
        op: &'static str,
        /// The reduction.
        reduction: Reduction,
        /// The element type.
        dtype: DType,
    },
    /// A reduce-scatter whose leading extent the ranks do not divide.
    #[error("reduce_scatter: shape {shape:?} does not split into {ranks} equal blocks along its first axis")]
    Indivisible {
        /// The tensor's shape.
        shape: Vec<usize>,
        /// The ranks.
        ranks: usize,
    },
    /// The operation's input never reached MPI.
    #[error("{op}: its input failed: {reason}")]
    InputFailed {
        /// The operation.
        op: &'static str,
        /// Why.
        reason: String,
    },
    /// The rank's MPI actor shut down before the operation completed.
    #[error("{op} was cancelled: the rank's MPI actor shut down first")]
    Cancelled {
        /// The operation.
        op: &'static str,
    },
}

/// A reduction over the ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reduction {
    /// The sum (integers wrap, as MPI's do).
    Sum,
    /// The product.
    Prod,
    /// The largest (for `Bool`: any).
    Max,
    /// The smallest (for `Bool`: all).
    Min,
}

impl fmt::Display for Reduction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Reduction::Sum => "sum",
            Reduction::Prod => "prod",
            Reduction::Max => "max",
            Reduction::Min => "min",
        })
    }
}

/// A collective operation over every rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Collective {
    /// Every rank gets the reduction of every rank's tensor.
    Allreduce(Reduction),
    /// Every rank gets `root`'s tensor (the others give one of its type
    /// and shape).
    Broadcast {
        /// The rank whose tensor is sent.
        root: usize,
    },
    /// Every rank gets every rank's tensor, stacked along a new first
    /// axis in rank order.
    Allgather,
    /// The reduction, split along the first axis into one block per rank;
    /// each rank gets its own block.
    ReduceScatter(Reduction),
    /// Every rank waits for every other.
    Barrier,
}

impl Collective {
    /// Its name in errors.
    pub fn name(self) -> &'static str {
        match self {
            Collective::Allreduce(_) => "allreduce",
            Collective::Broadcast { .. } => "broadcast",
            Collective::Allgather => "allgather",
            Collective::ReduceScatter(_) => "reduce_scatter",
            Collective::Barrier => "barrier",
        }
    }

    /// The type and shape of its result on `ranks` ranks for an input of
    /// `dtype` and `shape` (none for a barrier), or why it cannot run.
    ///
    /// # Errors
    ///
    /// [`MpiError::Unsupported`], [`MpiError::Indivisible`],
    /// [`MpiError::NoSuchRank`] (a broadcast's root), [`MpiError::TooLarge`].
    pub fn output(
        self,
        dtype: DType,
        shape: &[usize],
        ranks: usize,
    ) -> Result<Option<Vec<usize>>, MpiError> {
        let op = self.name();
        let n = element_count(shape).ok_or(MpiError::TooLarge {
            op,
            count: usize::MAX,
        })?;
        let out = match self {
            Collective::Barrier => return Ok(None),
            Collective::Allreduce(r) | Collective::ReduceScatter(r) => {
                mpi_op(op, r, dtype)?;
                if let Collective::ReduceScatter(_) = self {
                    match shape.first() {
                        Some(&lead) if ranks > 0 && lead % ranks == 0 => {
                            let mut out = shape.to_vec();
                            out[0] = lead / ranks;
                            out
                        }
                        _ => {
                            return Err(MpiError::Indivisible {
                                shape: shape.to_vec(),
                                ranks,
                            })
                        }
                    }
                } else {
                    shape.to_vec()
                }
            }
            Collective::Broadcast { root } => {
                if root >= ranks {
                    return Err(MpiError::NoSuchRank { rank: root, ranks });
                }
                shape.to_vec()
            }
            Collective::Allgather => {
                let total = n.checked_mul(ranks).ok_or(MpiError::TooLarge {
                    op,
                    count: usize::MAX,
                })?;
                if i32::try_from(total).is_err() {
                    return Err(MpiError::TooLarge { op, count: total });
                }
                std::iter::once(ranks)
                    .chain(shape.iter().copied())
                    .collect()
            }
        };
        if i32::try_from(n).is_err() {
            return Err(MpiError::TooLarge { op, count: n });
        }
        Ok(Some(out))
    }

    /// The words that every rank's call must agree on.
    fn signature(self, input: Option<(DType, &[usize])>) -> u64 {
        let (kind, arg) = match self {
            Collective::Allreduce(r) => (1, r as u64),
            Collective::Broadcast { root } => (2, root as u64),
            Collective::Allgather => (3, 0),
            Collective::ReduceScatter(r) => (4, r as u64),
            Collective::Barrier => (5, 0),
        };
        let mut words = vec![kind, arg];
        if let Some((dtype, shape)) = input {
            words.push(dtype_code(dtype));
            words.push(shape.len() as u64);
            words.extend(shape.iter().map(|&d| d as u64));
        }
        // FNV-1a over the words: the same in every process of the job.
        words
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
            })
    }
}

/// MPI's reduction for `r` over `dtype`, or why there is none.
fn mpi_op(op: &'static str, r: Reduction, dtype: DType) -> Result<MpiOp, MpiError> {
    let unsupported = MpiError::Unsupported {
        op,
        reduction: r,
        dtype,
    };
    Ok(match (r, dtype) {
        (Reduction::Max | Reduction::Min, d) if d.is_complex() => return Err(unsupported),
        (Reduction::Sum | Reduction::Prod, DType::Bool) => return Err(unsupported),
        (Reduction::Max, DType::Bool) => MpiOp::Or,
        (Reduction::Min, DType::Bool) => MpiOp::And,
        (Reduction::Sum, _) => MpiOp::Sum,
        (Reduction::Prod, _) => MpiOp::Prod,
        (Reduction::Max, _) => MpiOp::Max,
        (Reduction::Min, _) => MpiOp::Min,
    })
}

/// A type's code in headers and signatures: its place in [`DType::ALL`].
fn dtype_code(dtype: DType) -> u64 {
    DType::ALL.iter().position(|&d| d == dtype).unwrap_or(0) as u64
}

/// "f64 [2, 3]": a type and shape in errors.
fn describe(dtype: DType, shape: &[usize]) -> String {
    format!("{dtype} {shape:?}")
}

/// What a completed operation gives back.
#[derive(Debug, Default)]
pub struct Finished {
    /// The received or computed tensor (none for a send or a barrier).
    pub tensor: Option<Tensor>,
    /// The buffer MPI read from, done with (a send's, a reduction's
    /// input): for the pool it came from.
    pub spent: Option<Data>,
}

/// Called once with an operation's outcome, or its error.
pub type Done = Box<dyn FnOnce(Result<Finished, MpiError>) + Send>;

/// A transfer's posted requests and the error that stopped its posting
/// midway (the requests posted before it must still complete); `Err` when
/// nothing was posted.
type Posting<R> = Result<(Vec<R>, Option<MpiError>), MpiError>;

/// Tells whether this process was started by an MPI launcher.
///
/// # Errors
///
/// [`MpiError::Unavailable`] naming the variables looked for.
pub fn launched() -> Result<(), MpiError> {
    if LAUNCHER_ENV.iter().any(|v| std::env::var_os(v).is_some()) {
        return Ok(());
    }
    Err(MpiError::Unavailable {
        reason: format!(
            "this process was not started by an MPI launcher (none of {} is set); \
             run it under `mpirun -n <ranks>`",
            LAUNCHER_ENV.join(", ")
        ),
    })
}

/// The rank's MPI, owned by the MPI actor: an [`Exchange`] over MPI.
#[cfg(feature = "mpi")]
pub type MpiEngine = Exchange<MpiSession>;

/// A rank's messages and collectives over a [`Transport`]: the requests
/// outstanding, what each completion means, and the shutdown (see the
/// module docs). One thread owns it and makes every call.
pub struct Exchange<T: Transport> {
    /// `None` once closed.
    transport: Option<T>,
    rank: usize,
    ranks: usize,
    p2p: Vec<Transfer<T::Request>>,
    queued: VecDeque<Queued>,
    active: Option<Active<T::Request>>,
}

/// A send or a receive: its two requests (header, data).
struct Transfer<R> {
    posted: Vec<R>,
    errors: Vec<Option<MpiError>>,
    recv: Option<Expect>,
    /// A receive the shutdown cancelled.
    cancelled: bool,
    done: Done,
}

/// What a receive expects.
struct Expect {
    from: usize,
    tag: u32,
    dtype: DType,
    shape: Vec<usize>,
}

/// A collective waiting for its turn.
struct Queued {
    what: Collective,
    input: Option<Tensor>,
    /// A buffer for the result, if one was given.
    buffer: Option<Data>,
    out: Option<Vec<usize>>,
    signature: u64,
    done: Done,
}

/// The collective in progress, and its phase.
struct Active<R> {
    queued: Queued,
    posted: R,
    /// Its data phase is posted (else its signature exchange is).
    data: bool,
}

#[cfg(feature = "mpi")]
impl Exchange<MpiSession> {
    /// Initialises MPI on the calling thread, which must then make every
    /// call of the engine (it is the MPI actor's factory). Collective:
    /// every rank of the job starts its engine.
    ///
    /// # Errors
    ///
    /// [`MpiError::Unavailable`]: not started by a launcher
    /// ([`launched`]), MPI already running or finalised in this process,
    /// or a library without the threading weft needs; [`MpiError::Call`].
    pub fn start() -> Result<MpiEngine, MpiError> {
        launched()?;
        if let Err(state) = STATE.compare_exchange(NEVER, LIVE, Ordering::AcqRel, Ordering::Acquire)
        {
            return Err(MpiError::Unavailable {
                reason: match state {
                    LIVE => "MPI is already running for another runtime of this process \
                             (one runtime per process owns it)"
                        .into(),
                    _ => "MPI was finalised by an earlier runtime of this process, and MPI \
                          cannot be initialised twice in one process"
                        .into(),
                },
            });
        }
        let session =
            MpiSession::start().inspect_err(|_| STATE.store(FINALISED, Ordering::Release))?;
        let (rank, ranks) = (session.rank()?, session.size()?);
        Ok(Exchange::new(session, rank, ranks))
    }
}

impl<T: Transport> Exchange<T> {
    /// An exchange over `transport`, for rank `rank` of `ranks`.
    pub fn new(transport: T, rank: usize, ranks: usize) -> Exchange<T> {
        Exchange {
            transport: Some(transport),
            rank,
            ranks,
            p2p: Vec::new(),
            queued: VecDeque::new(),
            active: None,
        }
    }

    /// This process's rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The job's ranks.
    pub fn ranks(&self) -> usize {
        self.ranks
    }

    /// Requests outstanding: sends and receives, and collectives queued or
    /// in progress.
    pub fn outstanding(&self) -> usize {
        self.p2p.len() + self.queued.len() + usize::from(self.active.is_some())
    }

    fn session(&self) -> Result<&T, MpiError> {
        self.transport
            .as_ref()
            .ok_or(MpiError::Cancelled { op: "mpi" })
    }

    /// Sends `tensor` to rank `to` under `tag`; once MPI is done with the
    /// data (not necessarily once it arrived), `done` gets its buffer back
    /// ([`Finished::spent`], for the pool it came from).
    pub fn send(&mut self, tensor: Tensor, to: usize, tag: u32, done: Done) {
        let posted = self.post_send(tensor, to, tag);
        self.start_transfer(posted, None, done);
    }

    fn post_send(&self, tensor: Tensor, to: usize, tag: u32) -> Posting<T::Request> {
        check_peer(to, tag, self.ranks)?;
        if tensor.shape().len() > MAX_AXES {
            return Err(MpiError::TooManyAxes {
                op: "send",
                axes: tensor.shape().len(),
            });
        }
        let mut header = vec![0u64; HEADER_WORDS];
        header[0] = MAGIC;
        header[1] = dtype_code(tensor.dtype());
        header[2] = tensor.shape().len() as u64;
        for (w, &d) in header[3..].iter_mut().zip(tensor.shape()) {
            *w = d as u64;
        }
        let session = self.session()?;
        let (_, data) = tensor.into_parts();
        let first = session.isend(Buf::Words(header.into()), to, 2 * tag)?;
        // The header is posted: from here an error is the transfer's
        // outcome, once the header's request completes.
        match session.isend(Buf::Data(data), to, 2 * tag + 1) {
            Ok(second) => Ok((vec![first, second], None)),
            Err(e) => Ok((vec![first], Some(e))),
        }
    }

    /// Receives the tensor rank `from` sends under `tag`, which must be of
    /// `dtype` and `shape`; `done` gets it, or [`MpiError::Mismatch`]. MPI
    /// writes it into `buffer` when that is given and of the type and
    /// length (a pooled buffer of the destination domain, say), else into
    /// a new one.
    pub fn recv(
        &mut self,
        from: usize,
        tag: u32,
        (dtype, shape): (DType, &[usize]),
        buffer: Option<Data>,
        done: Done,
    ) {
        let expect = Expect {
            from,
            tag,
            dtype,
            shape: shape.to_vec(),
        };
        let posted = self.post_recv(&expect, buffer);
        self.start_transfer(posted, Some(expect), done);
    }

    fn post_recv(&self, expect: &Expect, buffer: Option<Data>) -> Posting<T::Request> {
        check_peer(expect.from, expect.tag, self.ranks)?;
        let axes = expect.shape.len();
        if axes > MAX_AXES {
            return Err(MpiError::TooManyAxes { op: "recv", axes });
        }
        let n = element_count(&expect.shape).ok_or(MpiError::TooLarge {
            op: "recv",
            count: usize::MAX,
        })?;
        let bytes = n.saturating_mul(expect.dtype.size());
        if i32::try_from(bytes).is_err() {
            return Err(MpiError::TooLarge {
                op: "recv",
                count: bytes,
            });
        }
        let session = self.session()?;
        let header = Buf::Words(vec![0u64; HEADER_WORDS].into());
        let first = session.irecv(header, expect.from, 2 * expect.tag)?;
        let data = match buffer {
            Some(b) if b.dtype() == expect.dtype && b.len() == n => b,
            _ => Data::zeros(expect.dtype, n),
        };
        let data = Buf::Data(data);
        match session.irecv(data, expect.from, 2 * expect.tag + 1) {
            Ok(second) => Ok((vec![first, second], None)),
            Err(e) => Ok((vec![first], Some(e))),
        }
    }

    fn start_transfer(&mut self, posted: Posting<T::Request>, recv: Option<Expect>, done: Done) {
        match posted {
            Err(e) => done(Err(e)),
            Ok((posted, error)) => {
                let mut errors: Vec<Option<MpiError>> = posted.iter().map(|_| None).collect();
                if let Some(e) = error {
                    errors.push(Some(e));
                }
                self.p2p.push(Transfer {
                    posted,
                    errors,
                    recv,
                    cancelled: false,
                    done,
                });
                self.progress();
            }
        }
    }

    /// Queues a collective with this rank's `input` (none for a barrier);
    /// `done` gets its result, written into `buffer` when that is given and
    /// of the result's type and length. Collectives run one at a time, in
    /// the order they are queued.
    pub fn collective(
        &mut self,
        what: Collective,
        input: Option<Tensor>,
        buffer: Option<Data>,
        done: Done,
    ) {
        let meta = input.as_ref().map(|t| (t.dtype(), t.shape()));
        let out = match (what, meta) {
            (Collective::Barrier, _) => Ok(None),
            (_, Some((dtype, shape))) => what.output(dtype, shape, self.ranks),
            (_, None) => Err(MpiError::InputFailed {
                op: what.name(),
                reason: "no tensor was given".into(),
            }),
        };
        match out {
            Err(e) => done(Err(e)),
            Ok(out) => {
                let signature = what.signature(meta);
                self.queued.push_back(Queued {
                    what,
                    input,
                    buffer,
                    out,
                    signature,
                    done,
                });
                self.progress();
            }
        }
    }

    /// Tests every outstanding request, finishes those that completed and
    /// starts the next collective; `true` while any is outstanding.
    pub fn progress(&mut self) -> bool {
        let mut i = 0;
        while i < self.p2p.len() {
            let t = &mut self.p2p[i];
            if poll(&mut t.posted, &mut t.errors) {
                let transfer = self.p2p.swap_remove(i);
                finish_transfer(transfer);
            } else {
                i += 1;
            }
        }
        self.advance();
        self.outstanding() > 0
    }

    /// Moves the collectives on: the active one through its phases, then
    /// the next queued one, until one waits on MPI.
    fn advance(&mut self) {
        loop {
            let Some(active) = self.active.as_mut() else {
                let Some(next) = self.queued.pop_front() else {
                    return;
                };
                let posted = self.session().and_then(|s| {
                    let sig = next.signature;
                    s.iallreduce(
                        Buf::Words(vec![sig, !sig].into()),
                        Buf::Words(vec![0, 0].into()),
                        MpiOp::Max,
                    )
                });
                match posted {
                    Ok(posted) => {
                        self.active = Some(Active {
                            queued: next,
                            posted,
                            data: false,
                        })
                    }
                    Err(e) => (next.done)(Err(e)),
                }
                continue;
            };
            match active.posted.test() {
                Ok(false) => return,
                Ok(true) => {}
                Err(e) => {
                    let active = self.active.take().expect("active");
                    (active.queued.done)(Err(e));
                    continue;
                }
            }
            let Active {
                mut queued,
                posted,
                data,
            } = self.active.take().expect("active");
            let mut bufs = posted.into_bufs();
            if data {
                // The result is the last buffer; a reduction's input, if
                // any, the one before it.
                let result = match (bufs.pop(), queued.out.take()) {
                    (Some(Buf::Data(data)), Some(shape)) => Tensor::from_data(data, &shape)
                        .map(Some)
                        .map_err(|e| MpiError::Unavailable {
                            reason: e.to_string(),
                        }),
                    _ => Ok(None),
                };
                let spent = match bufs.pop() {
                    Some(Buf::Data(data)) => Some(data),
                    _ => None,
                };
                (queued.done)(result.map(|tensor| Finished { tensor, spent }));
                continue;
            }
            // The signature exchange is in: the data phase, if the ranks
            // agree.
            let sig = queued.signature;
            let agreed = matches!(bufs.pop(), Some(Buf::Words(w)) if *w == [sig, !sig]);
            if !agreed {
                let this = match &queued.input {
                    Some(t) => describe(t.dtype(), t.shape()),
                    None => "no tensor".into(),
                };
                (queued.done)(Err(MpiError::Disagree {
                    op: queued.what.name(),
                    this,
                }));
                continue;
            }
            match self.post_collective(&mut queued) {
                Ok(posted) => {
                    self.active = Some(Active {
                        queued,
                        posted,
                        data: true,
                    })
                }
                Err(e) => (queued.done)(Err(e)),
            }
        }
    }

    fn post_collective(&self, queued: &mut Queued) -> Result<T::Request, MpiError> {
        let session = self.session()?;
        let input = queued.input.take();
        let Some(input) = input else {
            return session.ibarrier();
        };
        let op = queued.what.name();
        let dtype = input.dtype();
        let out_len = queued.out.as_deref().and_then(element_count).unwrap_or(0);
        let (_, data) = input.into_parts();
        let given = queued.buffer.take();
        let recv = || {
            Buf::Data(match given {
                Some(b) if b.dtype() == dtype && b.len() == out_len => b,
                _ => Data::zeros(dtype, out_len),
            })
        };
        match queued.what {
            Collective::Allreduce(r) => {
                session.iallreduce(Buf::Data(data), recv(), mpi_op(op, r, dtype)?)
            }
            Collective::ReduceScatter(r) => {
                session.ireduce_scatter(Buf::Data(data), recv(), mpi_op(op, r, dtype)?)
            }
            Collective::Allgather => session.iallgather(Buf::Data(data), recv()),
            Collective::Broadcast { root } => session.ibcast(Buf::Data(data), root),
            Collective::Barrier => session.ibarrier(),
        }
    }

    /// Ends the engine: see the module docs ("Shutdown").
    fn close(&mut self) {
        self.settle();
        // What is left: collectives not begun are never begun (they fail
        // after the one in progress, in their order), receives nothing
        // matched are cancelled (they still complete, as cancelled), and
        // what completes in a second grace period is finished as usual.
        let never = std::mem::take(&mut self.queued);
        for transfer in &mut self.p2p {
            if transfer.recv.is_some() {
                transfer.cancelled = true;
                transfer.posted.iter_mut().for_each(Request::cancel);
            }
        }
        let settled = self.settle();
        // Whatever never completed fails; its buffers are leaked with its
        // requests (a [`Request`]'s drop), never freed under the transport.
        let stuck = self.active.as_ref().map(|a| a.queued.what.name());
        let unsettled = self.p2p.len();
        for transfer in self.p2p.drain(..) {
            let op = if transfer.recv.is_some() {
                "recv"
            } else {
                "send"
            };
            (transfer.done)(Err(MpiError::Cancelled { op }));
        }
        if let Some(active) = self.active.take() {
            (active.queued.done)(Err(MpiError::Cancelled {
                op: active.queued.what.name(),
            }));
        }
        for queued in never {
            (queued.done)(Err(MpiError::Cancelled {
                op: queued.what.name(),
            }));
        }
        let Some(transport) = self.transport.take() else {
            return;
        };
        transport.end((!settled).then(|| match stuck {
            Some(op) => format!("{unsettled} sends or receives and a {op}"),
            None => format!("{unsettled} sends or receives"),
        }));
    }

    /// Progresses what is outstanding for the transport's [`Grace`];
    /// `true` once nothing is.
    fn settle(&mut self) -> bool {
        let Some(grace) = self.transport.as_ref().map(Transport::grace) else {
            return !self.progress();
        };
        let deadline = match grace {
            Grace::For(time) => Some(Instant::now() + time),
            Grace::Rounds(_) => None,
        };
        let mut rounds = 0u32;
        loop {
            if !self.progress() {
                return true;
            }
            rounds = rounds.saturating_add(1);
            let over = match (grace, deadline) {
                (Grace::Rounds(n), _) => rounds >= n,
                (_, Some(deadline)) => Instant::now() >= deadline,
                (Grace::For(_), None) => true,
            };
            if over {
                return false;
            }
            if let Some(t) = &self.transport {
                t.pause();
            }
        }
    }
}

/// Checks a peer rank of a job of `ranks` and a message tag.
///
/// # Errors
///
/// [`MpiError::NoSuchRank`], [`MpiError::Tag`].
pub fn check_peer(rank: usize, tag: u32, ranks: usize) -> Result<(), MpiError> {
    if rank >= ranks {
        return Err(MpiError::NoSuchRank { rank, ranks });
    }
    if tag > MAX_TAG {
        return Err(MpiError::Tag { tag });
    }
    Ok(())
}

/// Tests each request, keeping the first error of each; `true` once all
/// have completed.
fn poll<R: Request>(posted: &mut [R], errors: &mut [Option<MpiError>]) -> bool {
    let mut all = true;
    for (p, e) in posted.iter_mut().zip(errors.iter_mut()) {
        match p.test() {
            Ok(done) => all &= done,
            Err(err) => {
                e.get_or_insert(err);
            }
        }
    }
    all
}

/// Calls a completed transfer's `done` with its outcome.
fn finish_transfer<R: Request>(transfer: Transfer<R>) {
    let Transfer {
        posted,
        errors,
        recv,
        cancelled,
        done,
    } = transfer;
    if cancelled {
        // Cancelled or not, MPI is done with its buffers; a message that
        // came in meanwhile is dropped with the shutdown.
        return done(Err(MpiError::Cancelled { op: "recv" }));
    }
    let first_error = errors.iter().flatten().next().cloned();
    let Some(expect) = recv else {
        if let Some(e) = first_error {
            return done(Err(e));
        }
        let sent = posted.into_iter().nth(1).and_then(|p| p.into_bufs().pop());
        return done(Ok(Finished {
            tensor: None,
            spent: match sent {
                Some(Buf::Data(data)) => Some(data),
                _ => None,
            },
        }));
    };
    let received: Vec<usize> = posted.iter().map(R::received).collect();
    let mut bufs = posted.into_iter().map(R::into_bufs);
    let header = bufs.next().and_then(|mut b| b.pop());
    let data = bufs.next().and_then(|mut b| b.pop());
    let found = match (&header, errors.first()) {
        (Some(Buf::Words(w)), Some(None)) => parse_header(w),
        _ => None,
    };
    let expected = describe(expect.dtype, &expect.shape);
    let mismatch = |found: String| MpiError::Mismatch {
        from: expect.from,
        tag: expect.tag,
        expected: expected.clone(),
        found,
    };
    let Some((dtype, shape)) = found else {
        return done(Err(first_error.unwrap_or_else(|| {
            mismatch("a message that is not a weft tensor".into())
        })));
    };
    if dtype != expect.dtype || shape != expect.shape {
        return done(Err(mismatch(describe(dtype, &shape))));
    }
    if let Some(e) = first_error {
        return done(Err(e));
    }
    match data {
        Some(Buf::Data(data)) if received.get(1) == Some(&(data.len() * dtype.size())) => done(
            Tensor::from_data(data, &shape)
                .map(|t| Finished {
                    tensor: Some(t),
                    spent: None,
                })
                .map_err(|e| mismatch(e.to_string())),
        ),
        _ => done(Err(mismatch(format!(
            "{} bytes of data",
            received.get(1).copied().unwrap_or(0)
        )))),
    }
}

/// The type and shape a header announces, if it is a weft header.
fn parse_header(words: &[u64]) -> Option<(DType, Vec<usize>)> {
    if words.len() != HEADER_WORDS || words[0] != MAGIC {
        return None;
    }
    let dtype = *DType::ALL.get(usize::try_from(words[1]).ok()?)?;
    let axes = usize::try_from(words[2]).ok().filter(|&a| a <= MAX_AXES)?;
    let shape = words[3..3 + axes]
        .iter()
        .map(|&d| usize::try_from(d).ok())
        .collect::<Option<Vec<_>>>()?;
    Some((dtype, shape))
}

impl<T: Transport> Drop for Exchange<T> {
    fn drop(&mut self) {
        self.close();
    }
}

impl<T: Transport> fmt::Debug for Exchange<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Exchange")
            .field("rank", &self.rank)
            .field("ranks", &self.ranks)
            .field("outstanding", &self.outstanding())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collectives_know_their_results_and_refuse_what_is_undefined() {
        let out = |c: Collective, d, s: &[usize]| c.output(d, s, 4);
        let sum = Collective::Allreduce(Reduction::Sum);
        assert_eq!(out(sum, DType::F64, &[2, 3]).unwrap(), Some(vec![2, 3]));
        assert_eq!(
            out(Collective::Allgather, DType::I32, &[3]).unwrap(),
            Some(vec![4, 3])
        );
        let rs = Collective::ReduceScatter(Reduction::Max);
        assert_eq!(out(rs, DType::F32, &[8, 2]).unwrap(), Some(vec![2, 2]));
        let e = out(rs, DType::F32, &[6, 2]).unwrap_err();
        assert!(
            e.to_string().contains("[6, 2]") && e.to_string().contains('4'),
            "{e}"
        );
        let e = out(Collective::Allreduce(Reduction::Max), DType::C64, &[2]).unwrap_err();
        assert!(
            e.to_string().contains("max") && e.to_string().contains("c64"),
            "{e}"
        );
        assert!(out(sum, DType::Bool, &[2]).is_err());
        assert!(out(Collective::Allreduce(Reduction::Min), DType::Bool, &[2]).is_ok());
        let e = out(Collective::Broadcast { root: 4 }, DType::F64, &[1]).unwrap_err();
        assert_eq!(e, MpiError::NoSuchRank { rank: 4, ranks: 4 });
        assert_eq!(out(Collective::Barrier, DType::F64, &[]).unwrap(), None);
    }

    #[test]
    fn signatures_differ_when_any_argument_differs() {
        let sig = |c: Collective, s: &[usize]| c.signature(Some((DType::F64, s)));
        let sum = Collective::Allreduce(Reduction::Sum);
        assert_eq!(sig(sum, &[2, 3]), sig(sum, &[2, 3]));
        assert_ne!(sig(sum, &[2, 3]), sig(sum, &[3, 2]));
        assert_ne!(
            sig(sum, &[2]),
            sig(Collective::Allreduce(Reduction::Max), &[2])
        );
        assert_ne!(sig(sum, &[2]), sig(Collective::Allgather, &[2]));
        assert_ne!(
            sum.signature(Some((DType::F32, &[2]))),
            sum.signature(Some((DType::F64, &[2])))
        );
    }

    #[test]
    fn headers_round_trip_and_strangers_are_refused() {
        let mut words = vec![0u64; HEADER_WORDS];
        words[0] = MAGIC;
        words[1] = dtype_code(DType::C32);
        words[2] = 2;
        words[3] = 4;
        words[4] = 5;
        assert_eq!(parse_header(&words), Some((DType::C32, vec![4, 5])));
        words[2] = MAX_AXES as u64 + 1;
        assert_eq!(parse_header(&words), None);
        words[2] = 2;
        words[0] = 7;
        assert_eq!(parse_header(&words), None);
    }

    #[test]
    #[cfg(feature = "mpi")]
    fn outside_a_launcher_the_engine_says_how_to_run() {
        if LAUNCHER_ENV.iter().any(|v| std::env::var_os(v).is_some()) {
            println!("skipped: this test runs outside an MPI launcher");
            return;
        }
        let e = MpiEngine::start().unwrap_err();
        assert!(e.to_string().contains("mpirun"), "{e}");
    }

    #[test]
    fn peers_and_tags_are_checked() {
        assert_eq!(
            check_peer(2, 0, 2),
            Err(MpiError::NoSuchRank { rank: 2, ranks: 2 })
        );
        assert_eq!(
            check_peer(1, MAX_TAG + 1, 2),
            Err(MpiError::Tag { tag: MAX_TAG + 1 })
        );
        assert!(check_peer(1, MAX_TAG, 2).is_ok());
    }
}
