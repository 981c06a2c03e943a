//! The MPI calls the engine makes, each checked, behind a safe surface.
//!
//! rsmpi starts and finalises MPI ([`mpi::initialize_with_threading`],
//! the `Universe`'s drop); every other call is the C function through
//! `mpi::ffi`, because rsmpi's nonblocking requests borrow their buffers
//! for a scope, and the engine's requests outlive every scope: they are
//! progressed by the actor's loop, op after op.
//!
//! The one invariant every `unsafe` block here rests on: **a buffer MPI
//! reads or writes is owned by the [`Posted`] request (a [`Request`]) that uses it**, on
//! the heap (a `Vec` or a `Box` whose allocation does not move when its
//! owner does), until MPI says the request is complete. A request dropped
//! before that leaks its buffers instead of freeing them, so MPI can never
//! write into freed memory. Every call returns its code, checked: the
//! engine's communicator is set to `MPI_ERRORS_RETURN`, so an error is a
//! value here, not an abort of the job.

use std::ffi::{c_char, c_int, c_void};
use std::mem;
use std::sync::atomic::Ordering;

use mpi::ffi as sys;

use super::exchange::{FINALISED, STATE};
use super::transport::{Buf, Grace, MpiOp, Request, Transport};
use super::{MpiError, SHUTDOWN_GRACE};
use weft_core::{DType, Data};

impl Buf {
    /// The start of its heap allocation, for MPI to read or write.
    fn ptr(&mut self) -> *mut c_void {
        match self {
            Buf::Words(w) => w.as_mut_ptr().cast(),
            Buf::Data(Data::F32(v)) => v.as_mut_ptr().cast(),
            Buf::Data(Data::F64(v)) => v.as_mut_ptr().cast(),
            Buf::Data(Data::C32(v)) => v.as_mut_ptr().cast(),
            Buf::Data(Data::C64(v)) => v.as_mut_ptr().cast(),
            Buf::Data(Data::I32(v)) => v.as_mut_ptr().cast(),
            Buf::Data(Data::I64(v)) => v.as_mut_ptr().cast(),
            Buf::Data(Data::Bool(v)) => v.as_mut_ptr().cast(),
        }
    }

    /// The MPI type of its elements.
    fn datatype(&self) -> sys::MPI_Datatype {
        // SAFETY: reading rsmpi's constants, initialised statics of the C
        // shim (`rsmpi.c`) that nothing writes.
        unsafe {
            match self {
                Buf::Words(_) => sys::RSMPI_UINT64_T,
                Buf::Data(d) => match d.dtype() {
                    DType::F32 => sys::RSMPI_FLOAT,
                    DType::F64 => sys::RSMPI_DOUBLE,
                    DType::C32 => sys::RSMPI_FLOAT_COMPLEX,
                    DType::C64 => sys::RSMPI_DOUBLE_COMPLEX,
                    DType::I32 => sys::RSMPI_INT32_T,
                    DType::I64 => sys::RSMPI_INT64_T,
                    DType::Bool => sys::RSMPI_C_BOOL,
                },
            }
        }
    }
}

impl MpiOp {
    fn raw(self) -> sys::MPI_Op {
        // SAFETY: as in `Buf::datatype`: rsmpi's initialised constants.
        unsafe {
            match self {
                MpiOp::Sum => sys::RSMPI_SUM,
                MpiOp::Prod => sys::RSMPI_PROD,
                MpiOp::Max => sys::RSMPI_MAX,
                MpiOp::Min => sys::RSMPI_MIN,
                MpiOp::And => sys::RSMPI_LAND,
                MpiOp::Or => sys::RSMPI_LOR,
            }
        }
    }
}

/// The words of MPI's message for `code`.
fn message(code: c_int) -> String {
    let mut text = [0 as c_char; sys::MPI_MAX_ERROR_STRING as usize + 1];
    let mut len: c_int = 0;
    // SAFETY: `text` holds MPI_MAX_ERROR_STRING characters, as the call
    // requires; `len` is a valid out-pointer.
    let rc = unsafe { sys::MPI_Error_string(code, text.as_mut_ptr(), &mut len) };
    if rc != sys::MPI_SUCCESS as c_int {
        return format!("MPI error {code}");
    }
    let len = usize::try_from(len).unwrap_or(0).min(text.len());
    let bytes: Vec<u8> = text[..len].iter().map(|&c| c as u8).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// `Ok` for `MPI_SUCCESS`, else the call's typed error.
fn check(call: &'static str, code: c_int) -> Result<(), MpiError> {
    if code == sys::MPI_SUCCESS as c_int {
        return Ok(());
    }
    Err(MpiError::Call {
        call,
        code,
        message: message(code),
    })
}

/// A count MPI can take (a C `int`).
fn count(what: &'static str, n: usize) -> Result<c_int, MpiError> {
    c_int::try_from(n).map_err(|_| MpiError::TooLarge { op: what, count: n })
}

/// The rank's MPI, the [`Transport`] of the MPI engine: rsmpi's `Universe` (MPI itself, finalised when it is
/// dropped) and the engine's own communicator, a duplicate of the world's
/// so that weft's messages never match another library's.
pub struct Session {
    universe: Option<mpi::environment::Universe>,
    comm: sys::MPI_Comm,
}

impl Session {
    /// Initialises MPI on this thread (`MPI_THREAD_SERIALIZED`: every call
    /// comes from the thread that owns the session) and duplicates the
    /// world communicator with `MPI_ERRORS_RETURN` set on both.
    ///
    /// The duplication is collective: every rank starts its session.
    pub(super) fn start() -> Result<Session, MpiError> {
        let Some((universe, threading)) =
            mpi::initialize_with_threading(mpi::Threading::Serialized)
        else {
            return Err(MpiError::Unavailable {
                reason: "MPI was initialised by other code in this process".into(),
            });
        };
        if threading < mpi::Threading::Serialized {
            return Err(MpiError::Unavailable {
                reason: format!(
                    "the MPI library gives threading {threading:?}, weft needs Serialized \
                     (its MPI actor is not the main thread)"
                ),
            });
        }
        // SAFETY: reading rsmpi's initialised constants.
        let (world, errors_return) = unsafe { (sys::RSMPI_COMM_WORLD, sys::RSMPI_ERRORS_RETURN) };
        // SAFETY: MPI is initialised (above); the handles are valid
        // predefined ones.
        check("MPI_Comm_set_errhandler", unsafe {
            sys::MPI_Comm_set_errhandler(world, errors_return)
        })?;
        let mut comm = mem::MaybeUninit::<sys::MPI_Comm>::uninit();
        // SAFETY: `comm` is a valid out-pointer; MPI writes it on success,
        // and it is read only then.
        check("MPI_Comm_dup", unsafe {
            sys::MPI_Comm_dup(world, comm.as_mut_ptr())
        })?;
        // SAFETY: MPI_Comm_dup succeeded, so it wrote `comm`.
        let comm = unsafe { comm.assume_init() };
        // SAFETY: `comm` is the communicator just made.
        check("MPI_Comm_set_errhandler", unsafe {
            sys::MPI_Comm_set_errhandler(comm, errors_return)
        })?;
        Ok(Session {
            universe: Some(universe),
            comm,
        })
    }

    /// This process's rank in the communicator.
    pub(super) fn rank(&self) -> Result<usize, MpiError> {
        let mut rank: c_int = 0;
        // SAFETY: a live communicator and a valid out-pointer.
        check("MPI_Comm_rank", unsafe {
            sys::MPI_Comm_rank(self.comm, &mut rank)
        })?;
        Ok(usize::try_from(rank).unwrap_or(0))
    }

    /// How many ranks the communicator has.
    pub(super) fn size(&self) -> Result<usize, MpiError> {
        let mut size: c_int = 0;
        // SAFETY: a live communicator and a valid out-pointer.
        check("MPI_Comm_size", unsafe {
            sys::MPI_Comm_size(self.comm, &mut size)
        })?;
        Ok(usize::try_from(size).unwrap_or(1))
    }

    /// This rank's place among the ranks of its node whose `key` is the
    /// same (a digest of the CPUs each was given), and how many they are.
    /// Blocking and collective: every rank calls it once, at its start,
    /// before any request is posted.
    pub(super) fn node_peers(&self, key: u64) -> Result<(usize, usize), MpiError> {
        let rank = c_int::try_from(self.rank()?).unwrap_or(0);
        let mut node = mem::MaybeUninit::<sys::MPI_Comm>::uninit();
        // SAFETY: reading rsmpi's initialised constants.
        let (shared, info) = unsafe { (sys::RSMPI_COMM_TYPE_SHARED, sys::RSMPI_INFO_NULL) };
        // SAFETY: a live communicator, predefined split type and info, and
        // a valid out-pointer that MPI writes on success (read only then).
        check("MPI_Comm_split_type", unsafe {
            sys::MPI_Comm_split_type(self.comm, shared, rank, info, node.as_mut_ptr())
        })?;
        // SAFETY: MPI_Comm_split_type succeeded, so it wrote `node`.
        let mut node = unsafe { node.assume_init() };
        let peers = || -> Result<(usize, usize), MpiError> {
            let (mut size, mut me): (c_int, c_int) = (0, 0);
            // SAFETY: the communicator just made, valid out-pointers.
            check("MPI_Comm_size", unsafe {
                sys::MPI_Comm_size(node, &mut size)
            })?;
            // SAFETY: as above.
            check("MPI_Comm_rank", unsafe {
                sys::MPI_Comm_rank(node, &mut me)
            })?;
            let size = usize::try_from(size).unwrap_or(1).max(1);
            let me = usize::try_from(me).unwrap_or(0);
            let mut keys = vec![0u64; size];
            // SAFETY: one u64 sent from `key`, one received from each of
            // the node's `size` ranks into `keys`, which holds `size`;
            // the call is blocking, so both outlive it.
            check("MPI_Allgather", unsafe {
                sys::MPI_Allgather(
                    (&key as *const u64).cast(),
                    1,
                    sys::RSMPI_UINT64_T,
                    keys.as_mut_ptr().cast(),
                    1,
                    sys::RSMPI_UINT64_T,
                    node,
                )
            })?;
            let alike = |k: &&u64| **k == key;
            let part = keys[..me.min(size)].iter().filter(alike).count();
            Ok((part, keys.iter().filter(alike).count()))
        };
        let found = peers();
        // SAFETY: the communicator made above, freed once; nothing of it
        // is used after.
        let freed = check("MPI_Comm_free", unsafe { sys::MPI_Comm_free(&mut node) });
        let found = found?;
        freed?;
        Ok(found)
    }

    /// Ends the session without finalising MPI: for a shutdown that left
    /// requests MPI may still use (their buffers are leaked with them).
    pub(super) fn abandon(mut self) {
        mem::forget(self.universe.take());
    }
}

impl Transport for Session {
    type Request = Posted;

    /// Sends `buf`'s bytes to `to` under `tag`.
    fn isend(&self, buf: Buf, to: usize, tag: u32) -> Result<Posted, MpiError> {
        let n = count("send", buf.bytes())?;
        let (to, tag) = (rank_arg(to)?, tag_arg(tag)?);
        Posted::post("MPI_Isend", vec![buf], |bufs, request| {
            // SAFETY: the buffer is owned by the request being posted until
            // it completes (the module's invariant); `n` is its size in
            // bytes; the communicator is live.
            unsafe {
                sys::MPI_Isend(
                    bufs[0].ptr(),
                    n,
                    sys::RSMPI_UINT8_T,
                    to,
                    tag,
                    self.comm,
                    request,
                )
            }
        })
    }

    /// Receives at most `buf`'s bytes from `from` under `tag`.
    fn irecv(&self, buf: Buf, from: usize, tag: u32) -> Result<Posted, MpiError> {
        let n = count("recv", buf.bytes())?;
        let (from, tag) = (rank_arg(from)?, tag_arg(tag)?);
        Posted::post("MPI_Irecv", vec![buf], |bufs, request| {
            // SAFETY: as in `isend`; MPI writes at most `n` bytes.
            unsafe {
                sys::MPI_Irecv(
                    bufs[0].ptr(),
                    n,
                    sys::RSMPI_UINT8_T,
                    from,
                    tag,
                    self.comm,
                    request,
                )
            }
        })
    }

    /// Reduces `send` over the ranks into `recv` (same type and length).
    fn iallreduce(&self, send: Buf, recv: Buf, op: MpiOp) -> Result<Posted, MpiError> {
        let n = count("allreduce", recv.len())?;
        debug_assert_eq!(send.len(), recv.len());
        Posted::post("MPI_Iallreduce", vec![send, recv], |bufs, request| {
            let dt = bufs[0].datatype();
            let (a, b) = bufs.split_at_mut(1);
            // SAFETY: both buffers are owned by the request until it
            // completes, each of `n` elements of type `dt`.
            unsafe {
                sys::MPI_Iallreduce(a[0].ptr(), b[0].ptr(), n, dt, op.raw(), self.comm, request)
            }
        })
    }

    /// Broadcasts `buf` from `root` (every rank gives a buffer of the same
    /// length; the others' are overwritten).
    fn ibcast(&self, buf: Buf, root: usize) -> Result<Posted, MpiError> {
        let n = count("broadcast", buf.len())?;
        let root = rank_arg(root)?;
        Posted::post("MPI_Ibcast", vec![buf], |bufs, request| {
            let dt = bufs[0].datatype();
            // SAFETY: the buffer is owned by the request until it
            // completes, `n` elements of type `dt`.
            unsafe { sys::MPI_Ibcast(bufs[0].ptr(), n, dt, root, self.comm, request) }
        })
    }

    /// Gathers every rank's `send` into `recv` (ranks × its length), in
    /// rank order.
    fn iallgather(&self, send: Buf, recv: Buf) -> Result<Posted, MpiError> {
        let n = count("allgather", send.len())?;
        Posted::post("MPI_Iallgather", vec![send, recv], |bufs, request| {
            let dt = bufs[0].datatype();
            let (a, b) = bufs.split_at_mut(1);
            // SAFETY: both buffers are owned by the request until it
            // completes; `recv` holds `n` elements from each rank (the
            // caller sized it ranks × `n`).
            unsafe { sys::MPI_Iallgather(a[0].ptr(), n, dt, b[0].ptr(), n, dt, self.comm, request) }
        })
    }

    /// Reduces `send` (ranks × `recv`'s length) over the ranks and gives
    /// each rank its block in `recv`.
    fn ireduce_scatter(&self, send: Buf, recv: Buf, op: MpiOp) -> Result<Posted, MpiError> {
        let n = count("reduce_scatter", recv.len())?;
        Posted::post(
            "MPI_Ireduce_scatter_block",
            vec![send, recv],
            |bufs, request| {
                let dt = bufs[0].datatype();
                let (a, b) = bufs.split_at_mut(1);
                // SAFETY: both buffers are owned by the request until it
                // completes; `send` holds ranks × `n` elements (the caller
                // checked), `recv` `n`.
                unsafe {
                    sys::MPI_Ireduce_scatter_block(
                        a[0].ptr(),
                        b[0].ptr(),
                        n,
                        dt,
                        op.raw(),
                        self.comm,
                        request,
                    )
                }
            },
        )
    }

    /// A barrier over the ranks.
    fn ibarrier(&self) -> Result<Posted, MpiError> {
        Posted::post("MPI_Ibarrier", Vec::new(), |_, request| {
            // SAFETY: a live communicator and a valid out-pointer.
            unsafe { sys::MPI_Ibarrier(self.comm, request) }
        })
    }

    fn grace(&self) -> Grace {
        Grace::For(SHUTDOWN_GRACE)
    }

    fn end(self, left: Option<String>) {
        match left {
            None => drop(self),
            Some(left) => {
                eprintln!(
                    "weft: MPI requests were still outstanding {:?} after shutdown began \
                     (a peer rank gone?): {left}; MPI is left unfinalised",
                    2 * SHUTDOWN_GRACE
                );
                self.abandon();
            }
        }
        STATE.store(FINALISED, Ordering::Release);
    }
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MpiSession")
            .field("finalises", &self.universe.is_some())
            .finish_non_exhaustive()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if self.universe.is_none() {
            return;
        }
        // SAFETY: the communicator is the session's own, live, and no
        // request on it is outstanding (the engine completes or cancels
        // every one before it drops the session, or abandons it).
        let rc = unsafe { sys::MPI_Comm_free(&mut self.comm) };
        if let Err(e) = check("MPI_Comm_free", rc) {
            eprintln!("weft: {e}");
        }
        // MPI_Finalize, once: rsmpi's Universe allows one per process.
        drop(self.universe.take());
    }
}

fn rank_arg(rank: usize) -> Result<c_int, MpiError> {
    c_int::try_from(rank).map_err(|_| MpiError::NoSuchRank {
        rank,
        ranks: c_int::MAX as usize,
    })
}

fn tag_arg(tag: u32) -> Result<c_int, MpiError> {
    c_int::try_from(tag).map_err(|_| MpiError::Tag { tag })
}

/// A posted request and the buffers it owns until it completes.
#[derive(Debug)]
pub struct Posted {
    request: sys::MPI_Request,
    bufs: Vec<Buf>,
    /// MPI has completed it (the buffers are free to go).
    complete: bool,
    /// Bytes received (for a receive, once complete).
    received: usize,
}

impl Posted {
    fn post(
        name: &'static str,
        mut bufs: Vec<Buf>,
        call: impl FnOnce(&mut [Buf], *mut sys::MPI_Request) -> c_int,
    ) -> Result<Posted, MpiError> {
        // SAFETY: reading rsmpi's initialised constant.
        let mut request = unsafe { sys::RSMPI_REQUEST_NULL };
        check(name, call(&mut bufs, &mut request))?;
        Ok(Posted {
            request,
            bufs,
            complete: false,
            received: 0,
        })
    }
}

impl Request for Posted {
    /// Asks MPI whether the request has completed; `Ok(true)` once it has
    /// (then its buffers are the caller's again, [`Posted::into_bufs`]).
    /// An error completes it too: the request failed.
    fn test(&mut self) -> Result<bool, MpiError> {
        if self.complete {
            return Ok(true);
        }
        let mut flag: c_int = 0;
        // SAFETY: MPI_Status is a plain C struct of integers, for which
        // all-zero is a valid value.
        let mut status: sys::MPI_Status = unsafe { mem::zeroed() };
        // SAFETY: a request this value posted and has not seen complete;
        // valid out-pointers.
        let rc = unsafe { sys::MPI_Test(&mut self.request, &mut flag, &mut status) };
        if rc != sys::MPI_SUCCESS as c_int {
            // A failed request is complete: MPI is done with its buffers.
            self.complete = true;
            return check("MPI_Test", rc).map(|()| true);
        }
        if flag != 0 {
            self.complete = true;
            let mut n: c_int = 0;
            // SAFETY: `status` is the completed request's; valid
            // out-pointer.
            let rc = unsafe { sys::MPI_Get_count(&status, sys::RSMPI_UINT8_T, &mut n) };
            self.received = if rc == sys::MPI_SUCCESS as c_int {
                usize::try_from(n).unwrap_or(0)
            } else {
                0
            };
        }
        Ok(self.complete)
    }

    /// Asks MPI to cancel the request (a receive nothing matched yet); it
    /// still completes, and must still be tested until it does.
    fn cancel(&mut self) {
        if self.complete {
            return;
        }
        // SAFETY: a live request this value posted.
        let rc = unsafe { sys::MPI_Cancel(&mut self.request) };
        if let Err(e) = check("MPI_Cancel", rc) {
            eprintln!("weft: {e}");
        }
    }

    /// Bytes a completed receive received.
    fn received(&self) -> usize {
        self.received
    }

    /// The buffers of a completed request.
    fn into_bufs(mut self) -> Vec<Buf> {
        debug_assert!(self.complete);
        mem::take(&mut self.bufs)
    }
}

impl Drop for Posted {
    fn drop(&mut self) {
        if !self.complete {
            // MPI may still read or write them: never freed.
            mem::forget(mem::take(&mut self.bufs));
        }
    }
}
