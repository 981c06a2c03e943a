//! The order of accesses to one device buffer across streams: weft's own
//! table, in place of cudarc's per-buffer events (turned off for the
//! engine's context), which keep one read event per buffer and so lose
//! every reader but the last.
//!
//! Per buffer, the table holds the last write (its stream and the event
//! recorded after it) and, since that write, one event per stream that
//! read it, recorded after its last read there. Then:
//! - a read on stream `s` first waits for the last write, if another stream
//!   made it;
//! - a write on `s` first waits for the last write and for every read, each
//!   made on another stream (the same stream is ordered already);
//! - the free (on the memory stream, which allocates and frees and carries
//!   nothing else) first waits for all of them, so no reader, on any
//!   stream, can still be reading memory that stream-ordered allocation
//!   hands out again at once.
//!
//! An allocation counts as a write on the memory stream: the first access
//! on any other stream waits for it. The table is generic over the event
//! type so that its rules are tested without a device.

/// A stream's identity (its driver handle's address).
pub(crate) type StreamId = usize;

/// What an access does to a buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// The kernel or copy reads the buffer.
    Read,
    /// It writes the buffer (all of it or part).
    Write,
}

/// The accesses of one buffer that later ones must be ordered after.
#[derive(Debug)]
pub(crate) struct Tracker<Ev> {
    write: Option<(StreamId, Ev)>,
    reads: Vec<(StreamId, Ev)>,
    /// Events no longer needed, kept for reuse.
    spare: Vec<Ev>,
}

impl<Ev> Default for Tracker<Ev> {
    fn default() -> Self {
        Tracker {
            write: None,
            reads: Vec::new(),
            spare: Vec::new(),
        }
    }
}

impl<Ev> Tracker<Ev> {
    /// The events an access of `kind` on `stream` must wait for first.
    pub(crate) fn waits(&self, stream: StreamId, kind: Kind) -> impl Iterator<Item = &Ev> {
        let reads = match kind {
            Kind::Read => &self.reads[..0],
            Kind::Write => &self.reads[..],
        };
        self.write
            .iter()
            .chain(reads)
            .filter(move |(s, _)| *s != stream)
            .map(|(_, ev)| ev)
    }

    /// Notes an access of `kind` just enqueued on `stream`, and returns
    /// the event to record on `stream` after it: this stream's own read
    /// event, or the write event, reused when there is one (an event that
    /// no access needs any more is kept for the next), else `new()`.
    ///
    /// # Errors
    ///
    /// `new`'s, with the table unchanged.
    pub(crate) fn record<Er>(
        &mut self,
        stream: StreamId,
        kind: Kind,
        new: impl FnOnce() -> Result<Ev, Er>,
    ) -> Result<&Ev, Er> {
        let fresh = |spare: &mut Vec<Ev>| spare.pop().map_or_else(new, Ok);
        match kind {
            Kind::Read => {
                let at = match self.reads.iter().position(|(s, _)| *s == stream) {
                    Some(at) => at,
                    None => {
                        let ev = fresh(&mut self.spare)?;
                        self.reads.push((stream, ev));
                        self.reads.len() - 1
                    }
                };
                Ok(&self.reads[at].1)
            }
            Kind::Write => {
                let ev = match self.write.take() {
                    Some((_, ev)) => ev,
                    None => fresh(&mut self.spare)?,
                };
                // The write is ordered after every earlier access (its
                // waits), so none of their events is needed any more.
                self.spare.extend(self.reads.drain(..).map(|(_, ev)| ev));
                Ok(&self.write.insert((stream, ev)).1)
            }
        }
    }

    /// The event of the last write, if there was one.
    pub(crate) fn last_write(&self) -> Option<&Ev> {
        self.write.as_ref().map(|(_, ev)| ev)
    }

    /// Whether no access was ever recorded.
    pub(crate) fn is_empty(&self) -> bool {
        self.write.is_none() && self.reads.is_empty()
    }

    /// Every event the free must wait for: the last write and every read
    /// since.
    pub(crate) fn all(&self) -> impl Iterator<Item = &Ev> {
        self.write.iter().chain(&self.reads).map(|(_, ev)| ev)
    }

    /// The events, to be reused by other buffers once the free has waited.
    pub(crate) fn into_events(self) -> impl Iterator<Item = Ev> {
        self.write
            .into_iter()
            .chain(self.reads)
            .map(|(_, ev)| ev)
            .chain(self.spare)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Events are numbered by creation; recording returns which one.
    fn tracker() -> (Tracker<u32>, impl FnMut() -> Result<u32, ()>) {
        let mut next = 0;
        (Tracker::default(), move || {
            next += 1;
            Ok(next)
        })
    }

    fn waits(t: &Tracker<u32>, s: StreamId, k: Kind) -> Vec<u32> {
        let mut w: Vec<u32> = t.waits(s, k).copied().collect();
        w.sort_unstable();
        w
    }

    const MEMORY: StreamId = 0;
    const A: StreamId = 1;
    const B: StreamId = 2;
    const C: StreamId = 3;

    #[test]
    fn every_reader_on_every_stream_is_waited_for_by_the_free() {
        let (mut t, mut new) = tracker();
        // Allocated on the memory stream, written by lane A.
        let alloc = *t.record(MEMORY, Kind::Write, &mut new).unwrap();
        assert_eq!(waits(&t, A, Kind::Write), [alloc]);
        let write = *t.record(A, Kind::Write, &mut new).unwrap();
        // Read by A, then B, then the copy stream C: three read events.
        assert_eq!(waits(&t, A, Kind::Read), [] as [u32; 0], "same stream");
        assert_eq!(waits(&t, B, Kind::Read), [write]);
        let ra = *t.record(A, Kind::Read, &mut new).unwrap();
        let rb = *t.record(B, Kind::Read, &mut new).unwrap();
        let rc = *t.record(C, Kind::Read, &mut new).unwrap();
        // A's read is not lost when B and C read after it.
        let mut all: Vec<u32> = t.all().copied().collect();
        all.sort_unstable();
        assert_eq!(all, [write, ra, rb, rc]);
        // A second read on A re-records A's own event, no new one.
        assert_eq!(*t.record(A, Kind::Read, &mut new).unwrap(), ra);
    }

    #[test]
    fn a_write_waits_for_other_streams_readers_then_forgets_them() {
        let (mut t, mut new) = tracker();
        let w1 = *t.record(A, Kind::Write, &mut new).unwrap();
        let ra = *t.record(A, Kind::Read, &mut new).unwrap();
        let rb = *t.record(B, Kind::Read, &mut new).unwrap();
        // A write on A waits for B's read only (A's own work is in order).
        assert_eq!(waits(&t, A, Kind::Write), [rb]);
        // On C: the write and both reads.
        assert_eq!(waits(&t, C, Kind::Write), [w1, ra, rb]);
        let w2 = *t.record(C, Kind::Write, &mut new).unwrap();
        assert_eq!(w2, w1, "the write event is reused");
        assert_eq!(t.all().copied().collect::<Vec<_>>(), [w2]);
        // The readers' events are kept for reuse: no new event for the
        // next reader.
        let reused = *t.record(A, Kind::Read, &mut new).unwrap();
        assert!([ra, rb].contains(&reused));
        assert_eq!(new(), Ok(4), "three events made in all");
        let mut events: Vec<u32> = t.into_events().collect();
        events.sort_unstable();
        assert_eq!(events, [1, 2, 3]);
    }
}
