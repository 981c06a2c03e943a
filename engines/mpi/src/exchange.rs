//! The [`Exchange`]: a rank's request table, the message and collective
//! protocols over a [`Transport`], and the shutdown (see the crate docs).

use std::collections::VecDeque;
use std::fmt;
#[cfg(feature = "mpi")]
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Instant;

use weft_core::{element_count, DType, Data, Tensor};

use crate::collective::{disagreement, mpi_op, SIGNATURE_WORDS, WITHDRAWN};
use crate::error::describe;
use crate::wire::{header, parse_header, HEADER_WORDS};
use crate::{
    check_message, check_peer, Buf, Collective, Done, Finished, Grace, MpiError, MpiOp, Request,
    Transport,
};
#[cfg(feature = "mpi")]
use crate::{launched, MpiSession};

/// MPI's state in this process: MPI can be initialised once per process
/// and never again after it is finalised.
#[cfg(feature = "mpi")]
pub(crate) static STATE: AtomicU8 = AtomicU8::new(NEVER);
#[cfg(feature = "mpi")]
pub(crate) const NEVER: u8 = 0;
#[cfg(feature = "mpi")]
pub(crate) const LIVE: u8 = 1;
#[cfg(feature = "mpi")]
pub(crate) const FINALISED: u8 = 2;

/// A transfer's posted requests and the error that stopped its posting
/// midway (the requests posted before it must still complete); `Err` when
/// nothing was posted.
type Posting<R> = Result<(Vec<R>, Option<MpiError>), MpiError>;

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
    /// Set by the shutdown: a collective whose input is not ready when
    /// its turn comes is withdrawn instead of waited for.
    closing: bool,
}

/// A collective's input when its turn comes
/// ([`Exchange::collective_when`]).
#[derive(Debug)]
pub enum Input {
    /// Not there yet: the collective waits, and those queued after it.
    Pending,
    /// This rank's tensor (none for a barrier), and a buffer for the
    /// result if one is given.
    Ready(Option<Tensor>, Option<Data>),
    /// It will never come: this rank withdraws from the collective, which
    /// every rank then fails ([`MpiError::Withdrawn`] on the others).
    Failed(String),
}

/// Asked for a collective's input each time the exchange looks at it.
pub type Awaited = Box<dyn FnMut() -> Input + Send>;

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
    /// Where the input comes from, until it has come.
    awaited: Option<Awaited>,
    /// Why this rank withdraws from it, if it does.
    withdrawn: Option<String>,
    out: Option<Vec<usize>>,
    signature: [u64; SIGNATURE_WORDS],
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

    /// This rank's place among the ranks of its node that were given the
    /// same CPUs (`key`, a digest of them), and how many they are: which
    /// part of those CPUs it takes. Blocking and collective: every rank
    /// calls it once, right after [`Exchange::start`].
    ///
    /// # Errors
    ///
    /// [`MpiError::Call`].
    pub fn node_peers(&self, key: u64) -> Result<(usize, usize), MpiError> {
        match &self.transport {
            Some(session) => session.node_peers(key),
            None => Ok((0, 1)),
        }
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
            closing: false,
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
        check_message("send", tensor.dtype(), tensor.shape())?;
        let header = header(tensor.dtype(), tensor.shape());
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
        let n = check_message("recv", expect.dtype, &expect.shape)?;
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
        let meta = input.as_ref().map(|t| (t.dtype(), t.shape().to_vec()));
        self.queue(what, meta, (input, buffer, None), done);
    }

    /// Queues a collective whose input is not there yet: a tensor of
    /// `meta` (none for a barrier) that `awaited` gives when it is ready.
    /// It takes its place in the order now, so that every rank posts its
    /// collectives in the order they were asked for; when its turn comes
    /// it waits for the input, and a rank whose input fails (or whose
    /// shutdown comes first) withdraws from it: every rank fails it, and
    /// none waits for ever for a contribution that will not come.
    pub fn collective_when(
        &mut self,
        what: Collective,
        meta: Option<(DType, Vec<usize>)>,
        awaited: Awaited,
        done: Done,
    ) {
        self.queue(what, meta, (None, None, Some(awaited)), done);
    }

    fn queue(
        &mut self,
        what: Collective,
        meta: Option<(DType, Vec<usize>)>,
        (input, buffer, awaited): (Option<Tensor>, Option<Data>, Option<Awaited>),
        done: Done,
    ) {
        let meta = meta
            .as_ref()
            .map(|(dtype, shape)| (*dtype, shape.as_slice()));
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
                    awaited,
                    withdrawn: None,
                    out,
                    signature,
                    done,
                });
                self.progress();
            }
        }
    }

    /// Whether the next queued collective may begin: its input is there,
    /// or it is withdrawn.
    fn next_ready(&mut self) -> bool {
        let closing = self.closing;
        let Some(next) = self.queued.front_mut() else {
            return false;
        };
        let Some(awaited) = next.awaited.as_mut() else {
            return true;
        };
        match awaited() {
            Input::Pending if !closing => return false,
            Input::Pending => {
                next.withdrawn = Some("the runtime shut down before its input was ready".into());
            }
            Input::Ready(input, buffer) => {
                let meta = input.as_ref().map(|t| (t.dtype(), t.shape()));
                if next.what.signature(meta) == next.signature {
                    next.input = input;
                    next.buffer = buffer;
                } else {
                    next.withdrawn = Some(format!(
                        "its input is not the tensor it was asked for ({})",
                        input.map_or("no tensor".into(), |t| describe(t.dtype(), t.shape()))
                    ));
                }
            }
            Input::Failed(reason) => next.withdrawn = Some(reason),
        }
        next.awaited = None;
        true
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
                if !self.next_ready() {
                    return;
                }
                let Some(next) = self.queued.pop_front() else {
                    return;
                };
                let posted = self.session().and_then(|s| {
                    // A rank that withdraws says so in place of its
                    // signature: every rank then disagrees with it.
                    let sig = match next.withdrawn {
                        Some(_) => WITHDRAWN,
                        None => next.signature,
                    };
                    let words = sig.iter().copied().chain(sig.iter().map(|w| !w));
                    s.iallreduce(
                        Buf::Words(words.collect()),
                        Buf::Words(vec![0; 2 * SIGNATURE_WORDS].into()),
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
            if let Some(reason) = queued.withdrawn.take() {
                (queued.done)(Err(MpiError::InputFailed {
                    op: queued.what.name(),
                    reason,
                }));
                continue;
            }
            let differs = match bufs.pop() {
                Some(Buf::Words(w)) if w.len() == 2 * SIGNATURE_WORDS => {
                    let (max, max_not) = w.split_at(SIGNATURE_WORDS);
                    if max[0] == WITHDRAWN[0] {
                        (queued.done)(Err(MpiError::Withdrawn {
                            op: queued.what.name(),
                        }));
                        continue;
                    }
                    disagreement(&queued.signature, max, max_not)
                }
                _ => Some("a signature MPI did not return whole".into()),
            };
            if let Some(differs) = differs {
                let this = match &queued.input {
                    Some(t) => describe(t.dtype(), t.shape()),
                    None => "no tensor".into(),
                };
                (queued.done)(Err(MpiError::Disagree {
                    op: queued.what.name(),
                    this,
                    differs,
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
        // What is left: collectives whose input is still not there are
        // withdrawn on their turn (the others ranks fail them too),
        // receives nothing matched are cancelled (they still complete, as
        // cancelled), and what completes in a second grace period is
        // finished as usual.
        self.closing = true;
        for transfer in &mut self.p2p {
            if transfer.recv.is_some() {
                transfer.cancelled = true;
                transfer.posted.iter_mut().for_each(Request::cancel);
            }
        }
        let settled = self.settle();
        // Collectives that never began: after one that never completed.
        let never = std::mem::take(&mut self.queued);
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
