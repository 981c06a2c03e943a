//! A stream of the engine, and the id the access table knows it by.

use std::sync::Arc;

use std::sync::atomic::{AtomicUsize, Ordering};

use cudarc::driver::{CudaContext, CudaStream, DriverError};

use super::access::{Keyed, StreamId};

/// A stream, and an id no other stream of the process has had: the
/// driver may hand a destroyed stream's handle to a new one, and the
/// access table (`access.rs`) must not take the new stream's accesses for
/// the old one's. Clones are the same stream.
#[derive(Clone)]
pub(super) struct Stream {
    id: StreamId,
    stream: Arc<CudaStream>,
}

impl Stream {
    pub(super) fn new(ctx: &Arc<CudaContext>) -> Result<Stream, DriverError> {
        static NEXT: AtomicUsize = AtomicUsize::new(1);
        Ok(Stream {
            id: NEXT.fetch_add(1, Ordering::Relaxed),
            stream: ctx.new_stream()?,
        })
    }

    /// The stream's id in the access table.
    pub(super) fn id(&self) -> StreamId {
        self.id
    }
}

impl Keyed for Stream {
    fn key(&self) -> StreamId {
        self.id
    }
}

impl std::ops::Deref for Stream {
    type Target = Arc<CudaStream>;

    fn deref(&self) -> &Arc<CudaStream> {
        &self.stream
    }
}
