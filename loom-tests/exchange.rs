//! Loom models of the MPI exchange's request table (`weft_mpi::
//! Exchange`) against a fake network: completion, cancellation and
//! shutdown in every order. Build and run with `RUSTFLAGS="--cfg
//! weft_loom" cargo test --release -p weft-loom-tests --test exchange`;
//! without the flag this file is empty.
//!
//! The fake is a job of one rank whose messages to itself a network thread
//! delivers. Like MPI, it completes a request at most once, a cancelled
//! receive either completes cancelled or (matched first) with its message,
//! and a request's buffers are the exchange's again only once it has
//! completed. The fake checks what the exchange owes it: it never takes
//! back a buffer of an incomplete request, it is ended once, and it is told
//! "nothing is outstanding" only when no request is.
#![cfg(weft_loom)]

use loom::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use loom::sync::{Arc, Mutex};
use loom::thread;
use weft_core::{DType, Data, Tensor};
use weft_mpi::{
    Buf, Collective, Done, Exchange, Grace, Input, MpiError, MpiOp, Reduction, Request, Transport,
};

const PENDING: u8 = 0;
const COMPLETE: u8 = 1;
const CANCELLED: u8 = 2;

/// One request's state, shared by the exchange's thread (which tests and
/// cancels it) and the network's (which completes it).
struct Slot {
    state: AtomicU8,
    /// What the network delivered, written before `state` says complete.
    delivered: Mutex<Option<Buf>>,
}

impl Slot {
    fn new() -> Slot {
        Slot {
            state: AtomicU8::new(PENDING),
            delivered: Mutex::new(None),
        }
    }

    /// Completes it with `what`, unless it was cancelled first.
    fn complete(&self, what: Option<Buf>) -> bool {
        *self.delivered.lock().unwrap() = what;
        let won = self
            .state
            .compare_exchange(PENDING, COMPLETE, Ordering::AcqRel, Ordering::Acquire)
            .is_ok();
        if !won {
            self.delivered.lock().unwrap().take();
        }
        won
    }
}

/// What is posted and not yet finished by the network, in the order it
/// was posted.
struct Queues {
    sends: Vec<(u32, Buf, Arc<Slot>)>,
    recvs: Vec<(u32, Arc<Slot>)>,
    collectives: Vec<(Option<Buf>, Arc<Slot>)>,
}

struct Net {
    queues: Mutex<Queues>,
    /// Every request's slot, for the check at the end.
    slots: Mutex<Vec<Arc<Slot>>>,
    /// Requests dropped before they completed (their buffers leaked).
    leaked: AtomicUsize,
    /// What `end` was told, each time it was called.
    ended: Mutex<Vec<Option<String>>>,
}

impl Net {
    fn new() -> Arc<Net> {
        Arc::new(Net {
            queues: Mutex::new(Queues {
                sends: Vec::new(),
                recvs: Vec::new(),
                collectives: Vec::new(),
            }),
            slots: Mutex::new(Vec::new()),
            leaked: AtomicUsize::new(0),
            ended: Mutex::new(Vec::new()),
        })
    }

    /// One round of the network: completes the collectives, and matches
    /// each receive with the first send of its tag (MPI's order between
    /// two ranks on one tag). A cancelled receive matches nothing: its
    /// message waits for a later one.
    fn step(&self) {
        let mut q = self.queues.lock().unwrap();
        for (result, slot) in q.collectives.drain(..) {
            slot.complete(result);
        }
        let mut i = 0;
        while i < q.recvs.len() {
            let tag = q.recvs[i].0;
            let Some(s) = q.sends.iter().position(|(t, ..)| *t == tag) else {
                i += 1;
                continue;
            };
            let (_, recv) = q.recvs.remove(i);
            if recv.complete(Some(q.sends[s].1.clone())) {
                let (_, _, send) = q.sends.remove(s);
                send.complete(None);
            }
        }
    }

    fn outstanding(&self) -> usize {
        let slots = self.slots.lock().unwrap();
        slots
            .iter()
            .filter(|s| s.state.load(Ordering::Acquire) == PENDING)
            .count()
    }
}

struct FakeRequest {
    slot: Arc<Slot>,
    bufs: Vec<Buf>,
    received: usize,
    complete: bool,
    net: Arc<Net>,
}

/// Copies what arrived into a request's buffer, as MPI writes it.
fn write(into: &mut Buf, msg: &Buf) {
    match (into, msg) {
        (Buf::Words(a), Buf::Words(b)) => {
            let n = a.len().min(b.len());
            a[..n].copy_from_slice(&b[..n]);
        }
        (Buf::Data(Data::F64(a)), Buf::Data(Data::F64(b))) => {
            let n = a.len().min(b.len());
            a[..n].copy_from_slice(&b[..n]);
        }
        _ => panic!("the models move words and f64 only"),
    }
}

impl Request for FakeRequest {
    fn test(&mut self) -> Result<bool, MpiError> {
        if self.complete {
            return Ok(true);
        }
        match self.slot.state.load(Ordering::Acquire) {
            PENDING => return Ok(false),
            COMPLETE => {
                if let Some(msg) = self.slot.delivered.lock().unwrap().take() {
                    self.received = msg.bytes();
                    if let Some(into) = self.bufs.last_mut() {
                        write(into, &msg);
                    }
                }
            }
            _ => self.received = 0,
        }
        self.complete = true;
        Ok(true)
    }

    fn cancel(&mut self) {
        let _ = self.slot.state.compare_exchange(
            PENDING,
            CANCELLED,
            Ordering::AcqRel,
            Ordering::Acquire,
        );
    }

    fn received(&self) -> usize {
        self.received
    }

    fn into_bufs(mut self) -> Vec<Buf> {
        assert!(
            self.complete,
            "the buffers of an incomplete request taken back"
        );
        std::mem::take(&mut self.bufs)
    }
}

impl Drop for FakeRequest {
    fn drop(&mut self) {
        if !self.complete {
            self.net.leaked.fetch_add(1, Ordering::Relaxed);
        }
    }
}

struct Fake(Arc<Net>);

impl Fake {
    /// Posts a request owning `bufs`; `queue` puts its slot in the
    /// network's queues.
    fn post(&self, bufs: Vec<Buf>, queue: impl FnOnce(&mut Queues, Arc<Slot>)) -> FakeRequest {
        let slot = Arc::new(Slot::new());
        self.0.slots.lock().unwrap().push(slot.clone());
        queue(&mut self.0.queues.lock().unwrap(), slot.clone());
        FakeRequest {
            slot,
            bufs,
            received: 0,
            complete: false,
            net: self.0.clone(),
        }
    }

    fn collective(&self, bufs: Vec<Buf>, result: Option<Buf>) -> Result<FakeRequest, MpiError> {
        Ok(self.post(bufs, |q, slot| q.collectives.push((result, slot))))
    }
}

impl Transport for Fake {
    type Request = FakeRequest;

    fn isend(&self, buf: Buf, to: usize, tag: u32) -> Result<FakeRequest, MpiError> {
        assert_eq!(to, 0, "a job of one rank");
        let msg = buf.clone();
        Ok(self.post(vec![buf], |q, slot| q.sends.push((tag, msg, slot))))
    }

    fn irecv(&self, buf: Buf, from: usize, tag: u32) -> Result<FakeRequest, MpiError> {
        assert_eq!(from, 0, "a job of one rank");
        Ok(self.post(vec![buf], |q, slot| q.recvs.push((tag, slot))))
    }

    fn iallreduce(&self, send: Buf, recv: Buf, _: MpiOp) -> Result<FakeRequest, MpiError> {
        // Over one rank, the reduction is the rank's own input.
        let result = Some(send.clone());
        self.collective(vec![send, recv], result)
    }

    fn ibcast(&self, buf: Buf, _: usize) -> Result<FakeRequest, MpiError> {
        let result = Some(buf.clone());
        self.collective(vec![buf], result)
    }

    fn iallgather(&self, send: Buf, recv: Buf) -> Result<FakeRequest, MpiError> {
        let result = Some(send.clone());
        self.collective(vec![send, recv], result)
    }

    fn ireduce_scatter(&self, send: Buf, recv: Buf, _: MpiOp) -> Result<FakeRequest, MpiError> {
        let result = Some(send.clone());
        self.collective(vec![send, recv], result)
    }

    fn ibarrier(&self) -> Result<FakeRequest, MpiError> {
        self.collective(Vec::new(), None)
    }

    fn grace(&self) -> Grace {
        Grace::Rounds(2)
    }

    fn pause(&self) {
        thread::yield_now();
    }

    fn end(self, left: Option<String>) {
        if left.is_none() {
            assert_eq!(
                self.0.outstanding(),
                0,
                "told nothing is outstanding while a request is"
            );
        }
        self.0.ended.lock().unwrap().push(left);
    }
}

/// Each op's outcome: its name and the received or computed values.
type Outcomes = Arc<Mutex<Vec<(&'static str, Result<Option<Vec<f64>>, MpiError>)>>>;

fn done(outcomes: &Outcomes, op: &'static str) -> Done {
    let outcomes = outcomes.clone();
    Box::new(move |result| {
        let result = result.map(|f| f.tensor.map(|t| t.into_vec::<f64>().expect("f64")));
        outcomes.lock().unwrap().push((op, result));
    })
}

fn outcome(outcomes: &Outcomes, op: &str) -> Result<Option<Vec<f64>>, MpiError> {
    let all = outcomes.lock().unwrap();
    let mine: Vec<_> = all.iter().filter(|(name, _)| *name == op).collect();
    assert_eq!(mine.len(), 1, "{op} finished {} times: {all:?}", mine.len());
    mine[0].1.clone()
}

fn cancelled<T: std::fmt::Debug>(result: &Result<T, MpiError>) -> bool {
    matches!(result, Err(MpiError::Cancelled { .. }))
}

/// The network's thread: `steps` rounds.
fn network(net: &Arc<Net>, steps: usize) -> thread::JoinHandle<()> {
    let net = net.clone();
    thread::spawn(move || {
        for _ in 0..steps {
            net.step();
            thread::yield_now();
        }
    })
}

/// What the one `end` of the transport was told; checks that requests
/// were leaked only if it was told some were left.
fn ended(net: &Net) -> Option<String> {
    let ended = net.ended.lock().unwrap().clone();
    assert_eq!(ended.len(), 1, "ended once: {ended:?}");
    if net.leaked.load(Ordering::Relaxed) > 0 {
        assert!(ended[0].is_some(), "requests leaked, but ended as settled");
    }
    ended[0].clone()
}

fn tensor(values: &[f64]) -> Tensor {
    Tensor::from_vec(values.to_vec(), &[values.len()]).expect("tensor")
}

/// A send to itself and its receive race the network's delivery and the
/// shutdown, beside a receive nothing sends. Each op finishes once; a
/// received tensor is the one sent; the unmatched receive is cancelled,
/// so when the pair went through, the transport is ended with nothing
/// outstanding.
#[test]
fn transfers_vs_delivery_vs_shutdown() {
    loom::model(|| {
        let net = Net::new();
        let outcomes = Outcomes::default();
        let wire = network(&net, 2);
        let mut exchange = Exchange::new(Fake(net.clone()), 0, 1);
        exchange.recv(0, 7, (DType::F64, &[2]), None, done(&outcomes, "lonely"));
        exchange.send(tensor(&[1.0, 2.0]), 0, 3, done(&outcomes, "send"));
        exchange.recv(0, 3, (DType::F64, &[2]), None, done(&outcomes, "recv"));
        exchange.progress();
        drop(exchange);
        wire.join().expect("network");

        assert!(cancelled(&outcome(&outcomes, "lonely")));
        let (send, recv) = (outcome(&outcomes, "send"), outcome(&outcomes, "recv"));
        match &recv {
            Ok(values) => assert_eq!(values.as_deref(), Some(&[1.0, 2.0][..])),
            Err(e) => assert!(cancelled(&recv), "{e}"),
        }
        assert!(send.is_ok() || cancelled(&send), "{send:?}");
        let ended = ended(&net);
        if send.is_ok() && recv.is_ok() {
            assert_eq!(ended, None, "everything completed");
        }
    });
}

/// An allreduce and a barrier queued behind it race the network and the
/// shutdown: each finishes once, in order (the barrier never before the
/// allreduce), with the rank's own sum when it goes through.
#[test]
fn collectives_vs_delivery_vs_shutdown() {
    loom::model(|| {
        let net = Net::new();
        let outcomes = Outcomes::default();
        let wire = network(&net, 3);
        let mut exchange = Exchange::new(Fake(net.clone()), 0, 1);
        let sum = Collective::Allreduce(Reduction::Sum);
        exchange.collective(sum, Some(tensor(&[1.0, 2.0])), None, done(&outcomes, "sum"));
        exchange.collective(Collective::Barrier, None, None, done(&outcomes, "barrier"));
        exchange.progress();
        drop(exchange);
        wire.join().expect("network");

        let (sum, barrier) = (outcome(&outcomes, "sum"), outcome(&outcomes, "barrier"));
        match &sum {
            Ok(values) => assert_eq!(values.as_deref(), Some(&[1.0, 2.0][..])),
            Err(e) => assert!(cancelled(&sum), "{e}"),
        }
        assert!(barrier.is_ok() || cancelled(&barrier), "{barrier:?}");
        let order: Vec<&str> = outcomes.lock().unwrap().iter().map(|(n, _)| *n).collect();
        assert_eq!(order, ["sum", "barrier"], "in the order they were queued");
        if barrier.is_ok() {
            assert!(sum.is_ok(), "the barrier went through before the sum");
        }
        let ended = ended(&net);
        if barrier.is_ok() {
            assert_eq!(ended, None, "everything completed");
        }
    });
}

/// A collective whose input another thread gives (as a domain's op gives
/// a tensor to the MPI actor) races that thread, the network and the
/// shutdown: the rank contributes the input if it came in time and
/// withdraws otherwise (a withdrawal is a collective too, so the other
/// ranks are not left waiting for the rank's part), and the barrier
/// behind it finishes after it, once.
#[test]
fn an_awaited_collective_vs_its_input_vs_shutdown() {
    loom::model(|| {
        let net = Net::new();
        let outcomes = Outcomes::default();
        let wire = network(&net, 3);
        let slot: Arc<Mutex<Option<Tensor>>> = Arc::default();
        let giver = {
            let slot = slot.clone();
            thread::spawn(move || *slot.lock().unwrap() = Some(tensor(&[1.0, 2.0])))
        };
        let mut exchange = Exchange::new(Fake(net.clone()), 0, 1);
        let awaited = Box::new(move || match slot.lock().unwrap().take() {
            Some(t) => Input::Ready(Some(t), None),
            None => Input::Pending,
        });
        let sum = Collective::Allreduce(Reduction::Sum);
        let meta = Some((DType::F64, vec![2]));
        exchange.collective_when(sum, meta, awaited, done(&outcomes, "sum"));
        exchange.collective(Collective::Barrier, None, None, done(&outcomes, "barrier"));
        exchange.progress();
        drop(exchange);
        giver.join().expect("giver");
        wire.join().expect("network");

        let (sum, barrier) = (outcome(&outcomes, "sum"), outcome(&outcomes, "barrier"));
        match &sum {
            Ok(values) => assert_eq!(values.as_deref(), Some(&[1.0, 2.0][..])),
            Err(MpiError::InputFailed { reason, .. }) => {
                assert!(reason.contains("shut down"), "{reason}")
            }
            Err(e) => assert!(cancelled(&sum), "{e}"),
        }
        assert!(barrier.is_ok() || cancelled(&barrier), "{barrier:?}");
        let order: Vec<&str> = outcomes.lock().unwrap().iter().map(|(n, _)| *n).collect();
        assert_eq!(order, ["sum", "barrier"], "in the order they were queued");
        let ended = ended(&net);
        if barrier.is_ok() {
            assert!(!cancelled(&sum), "the barrier went through before the sum");
            assert_eq!(ended, None, "everything completed");
        }
    });
}
