//! The order of accesses to one device buffer across streams: weft's own
//! table, in place of cudarc's per-buffer events (turned off for the
//! engine's context), which keep one read event per buffer and so lose
//! every reader but the last.
//!
//! Per buffer, the table holds the last write (its stream and the event
//! recorded after it) and, since that write, every stream that read it.
//! A write's event is recorded when the write is enqueued: a reader on
//! another stream, a download or a sync may come for it at any time, and
//! an event recorded later would make them wait for whatever the stream
//! did in between. A read records nothing: the table notes the stream, and
//! only when a later access must follow that read — a write or the free —
//! is an event recorded on the reading stream, which then covers the read
//! and everything before it there (the later access waits for at most the
//! reader's later work, never less than the read). So a chain of ops on
//! one lane records one event per op, for its output, and waits for none.
//!
//! The rules:
//! - a read on stream `s` first waits for the last write, if another stream
//!   made it and `s` has not read since (it waited then);
//! - a write on `s` first waits for the last write and for every read, each
//!   made on another stream (the same stream is ordered already);
//! - the free: a buffer whose every access was on one stream is freed in
//!   that stream's order, with no wait (stream order puts the free after
//!   them); otherwise the engine's free stream, which carries frees and
//!   their waits and nothing else, first waits for every access, so no
//!   reader on any stream can still be reading memory that stream-ordered
//!   allocation hands out again at once, and no lane or copy stream is held
//!   up by another's kernels. A buffer no access touched is freed on the
//!   stream that allocated it.
//!
//! A buffer is allocated on the stream that writes it first, so that
//! stream's order puts the allocation before every access. The table is
//! generic over the stream and event types so that its rules are tested
//! without a device.

/// A stream's identity: a number no other stream of the process has had.
pub(crate) type StreamId = usize;

/// A stream the table can name and record on.
pub(crate) trait Keyed {
    /// Its identity.
    fn key(&self) -> StreamId;
}

/// What an access does to a buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// The kernel or copy reads the buffer.
    Read,
    /// It writes the buffer (all of it or part).
    Write,
}

/// A stream that read the buffer since its last write.
#[derive(Debug)]
struct Read<S, Ev> {
    stream: S,
    /// Recorded after the stream's reads, once a later access needed it.
    event: Option<Ev>,
    /// The stream read again after `event` was recorded (or it never was).
    pending: bool,
}

/// Where a buffer is to be freed.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum FreeOn<'a, S> {
    /// No access touched it: on its allocating stream.
    Allocator,
    /// Every access was on this stream: in its order, with no wait.
    Stream(&'a S),
    /// On the free stream, after waiting for every access
    /// ([`Tracker::settle`] then [`Tracker::waits`] as a write).
    FreeStream,
}

/// The accesses of one buffer that later ones must be ordered after.
#[derive(Debug)]
pub(crate) struct Tracker<S, Ev> {
    write: Option<(S, Ev)>,
    reads: Vec<Read<S, Ev>>,
    /// Events no longer needed, kept for reuse.
    spare: Vec<Ev>,
}

impl<S, Ev> Default for Tracker<S, Ev> {
    fn default() -> Self {
        Tracker {
            write: None,
            reads: Vec::new(),
            spare: Vec::new(),
        }
    }
}

impl<S: Keyed + Clone, Ev> Tracker<S, Ev> {
    /// Before an access of `kind` on stream `on`: records, on each stream
    /// whose reads it must follow, the event those reads still lack
    /// (`record(stream, event)`, the event a spare one or `new()`). Only a
    /// write follows reads. Afterwards [`Tracker::waits`] names every event
    /// to wait for.
    ///
    /// # Errors
    ///
    /// `new`'s or `record`'s; what was recorded before stays recorded.
    pub(crate) fn settle<Er>(
        &mut self,
        on: StreamId,
        kind: Kind,
        mut new: impl FnMut() -> Result<Ev, Er>,
        mut record: impl FnMut(&S, &Ev) -> Result<(), Er>,
    ) -> Result<(), Er> {
        if kind == Kind::Read {
            return Ok(());
        }
        for read in &mut self.reads {
            if !read.pending || read.stream.key() == on {
                continue;
            }
            let event = match read.event.take() {
                Some(event) => event,
                None => self.spare.pop().map_or_else(&mut new, Ok)?,
            };
            let recorded = record(&read.stream, &event);
            read.event = Some(event);
            recorded?;
            read.pending = false;
        }
        Ok(())
    }

    /// The events an access of `kind` on stream `on` must wait for, once
    /// [`Tracker::settle`] has run for it.
    pub(crate) fn waits(&self, on: StreamId, kind: Kind) -> impl Iterator<Item = &Ev> {
        let reads = match kind {
            Kind::Read => &self.reads[..0],
            Kind::Write => &self.reads[..],
        };
        // A stream that has read since the write waited for it then, and
        // its later work is in order behind that wait.
        let waited = kind == Kind::Read && self.reads.iter().any(|r| r.stream.key() == on);
        let write = self
            .write
            .iter()
            .filter(move |(s, _)| s.key() != on && !waited);
        let reads = reads
            .iter()
            .filter(move |r| r.stream.key() != on)
            .filter_map(|r| r.event.as_ref());
        write.map(|(_, ev)| ev).chain(reads)
    }

    /// Notes a read just enqueued on `stream`. No driver call: its event is
    /// recorded only when a later access must follow it.
    pub(crate) fn read(&mut self, stream: &S) {
        match self
            .reads
            .iter_mut()
            .find(|r| r.stream.key() == stream.key())
        {
            Some(read) => read.pending = true,
            None => self.reads.push(Read {
                stream: stream.clone(),
                event: None,
                pending: true,
            }),
        }
    }

    /// Notes a write just enqueued on `stream`, and returns the event to
    /// record after it there: the last write's, reused, or a spare one, or
    /// `new()`. The write was ordered after every earlier access (its
    /// waits), so the readers' events go back to the spares.
    ///
    /// # Errors
    ///
    /// `new`'s, with the table unchanged.
    pub(crate) fn write<Er>(
        &mut self,
        stream: &S,
        new: impl FnOnce() -> Result<Ev, Er>,
    ) -> Result<&Ev, Er> {
        let event = match self.write.take() {
            Some((_, event)) => event,
            None => match self.spare.pop() {
                Some(event) => event,
                None => new()?,
            },
        };
        self.spare
            .extend(self.reads.drain(..).filter_map(|r| r.event));
        Ok(&self.write.insert((stream.clone(), event)).1)
    }

    /// The event of the last write, if there was one.
    pub(crate) fn last_write(&self) -> Option<&Ev> {
        self.write.as_ref().map(|(_, ev)| ev)
    }

    /// Where the buffer is to be freed.
    pub(crate) fn free_on(&self) -> FreeOn<'_, S> {
        let mut streams = self
            .write
            .iter()
            .map(|(s, _)| s)
            .chain(self.reads.iter().map(|r| &r.stream));
        let Some(first) = streams.next() else {
            return FreeOn::Allocator;
        };
        if streams.all(|s| s.key() == first.key()) {
            FreeOn::Stream(first)
        } else {
            FreeOn::FreeStream
        }
    }

    /// The events, to be reused by other buffers once the free has waited.
    pub(crate) fn into_events(self) -> impl Iterator<Item = Ev> {
        self.write
            .into_iter()
            .map(|(_, ev)| ev)
            .chain(self.reads.into_iter().filter_map(|r| r.event))
            .chain(self.spare)
    }
}

#[cfg(test)]
mod tests {
    use std::cell::{Cell, RefCell};

    use super::*;

    impl Keyed for StreamId {
        fn key(&self) -> StreamId {
            *self
        }
    }

    /// Events are numbered by creation; `recorded` lists (stream, event)
    /// for every record the table asked for.
    #[derive(Default)]
    struct Device {
        made: Cell<u32>,
        recorded: RefCell<Vec<(StreamId, u32)>>,
    }

    impl Device {
        fn make(&self) -> Result<u32, ()> {
            self.made.set(self.made.get() + 1);
            Ok(self.made.get())
        }

        fn record(&self, s: &StreamId, ev: &u32) -> Result<(), ()> {
            self.recorded.borrow_mut().push((*s, *ev));
            Ok(())
        }

        /// `settle` then `waits`, sorted.
        fn before(&self, t: &mut Tracker<StreamId, u32>, on: StreamId, k: Kind) -> Vec<u32> {
            t.settle(on, k, || self.make(), |s, ev| self.record(s, ev))
                .unwrap();
            let mut w: Vec<u32> = t.waits(on, k).copied().collect();
            w.sort_unstable();
            w
        }

        fn write(&self, t: &mut Tracker<StreamId, u32>, on: StreamId) -> u32 {
            let ev = *t.write(&on, || self.make()).unwrap();
            self.record(&on, &ev).unwrap();
            ev
        }

        fn recorded(&self) -> Vec<(StreamId, u32)> {
            self.recorded.borrow().clone()
        }
    }

    const FREE: StreamId = 0;
    const A: StreamId = 1;
    const B: StreamId = 2;
    const C: StreamId = 3;

    #[test]
    fn a_chain_on_one_stream_records_one_event_per_write_and_frees_there() {
        let d = Device::default();
        let mut t = Tracker::default();
        assert_eq!(t.free_on(), FreeOn::Allocator, "never touched");
        assert_eq!(d.before(&mut t, A, Kind::Write), [] as [u32; 0]);
        let w = d.write(&mut t, A);
        for _ in 0..3 {
            assert_eq!(d.before(&mut t, A, Kind::Read), [] as [u32; 0]);
            t.read(&A);
        }
        assert_eq!(d.recorded(), [(A, w)], "the reads recorded nothing");
        assert_eq!(t.free_on(), FreeOn::Stream(&A), "freed in A's order");
        assert_eq!(d.made.get(), 1);
    }

    #[test]
    fn every_reader_on_every_stream_is_waited_for_by_the_free() {
        let d = Device::default();
        let mut t = Tracker::default();
        let write = d.write(&mut t, A);
        // Read by A, then B, then the copy stream C: nothing recorded yet.
        assert_eq!(
            d.before(&mut t, A, Kind::Read),
            [] as [u32; 0],
            "same stream"
        );
        assert_eq!(d.before(&mut t, B, Kind::Read), [write]);
        for s in [A, B, C] {
            t.read(&s);
        }
        assert_eq!(d.recorded().len(), 1);
        // The free records an event on each reading stream, then waits for
        // them and the write: A's read is not lost behind B's and C's.
        assert_eq!(t.free_on(), FreeOn::FreeStream);
        let waits = d.before(&mut t, FREE, Kind::Write);
        assert_eq!(waits.len(), 4);
        let read_records: Vec<StreamId> = d.recorded()[1..].iter().map(|(s, _)| *s).collect();
        assert_eq!(read_records, [A, B, C]);
        let mut expected: Vec<u32> = d.recorded().iter().map(|(_, e)| *e).collect();
        expected.sort_unstable();
        assert_eq!(waits, expected);
    }

    #[test]
    fn a_stream_waits_for_another_streams_write_once() {
        let d = Device::default();
        let mut t = Tracker::default();
        let upload = d.write(&mut t, C);
        assert_eq!(d.before(&mut t, A, Kind::Read), [upload]);
        t.read(&A);
        assert_eq!(
            d.before(&mut t, A, Kind::Read),
            [] as [u32; 0],
            "A waited already"
        );
        assert_eq!(d.before(&mut t, B, Kind::Read), [upload], "B has not");
        // A new write: A must wait again.
        let w = d.write(&mut t, C);
        assert_eq!(d.before(&mut t, A, Kind::Read), [w]);
    }

    #[test]
    fn a_read_again_after_its_event_is_recorded_again() {
        let d = Device::default();
        let mut t = Tracker::default();
        d.write(&mut t, A);
        t.read(&B);
        let first = d.before(&mut t, FREE, Kind::Write);
        // Nothing new since: settling again records nothing.
        assert_eq!(d.before(&mut t, FREE, Kind::Write), first);
        assert_eq!(d.recorded().len(), 2);
        // B reads again: its event is stale and is recorded once more,
        // reusing the same event.
        t.read(&B);
        assert_eq!(d.before(&mut t, FREE, Kind::Write), first);
        assert_eq!(d.recorded().len(), 3);
        assert_eq!(d.recorded()[1], d.recorded()[2]);
        assert_eq!(d.made.get(), 2);
    }

    #[test]
    fn a_write_waits_for_other_streams_readers_then_forgets_them() {
        let d = Device::default();
        let mut t = Tracker::default();
        let w1 = d.write(&mut t, A);
        t.read(&A);
        t.read(&B);
        // A write on A waits for B's read only (A's own work is in order),
        // and records no event on A.
        let on_a = d.before(&mut t, A, Kind::Write);
        assert_eq!(on_a.len(), 1);
        assert_eq!(d.recorded().iter().filter(|(s, _)| *s == A).count(), 1);
        let rb = on_a[0];
        assert_ne!(rb, w1);
        // On C: the write and both reads, A's now recorded too.
        let on_c = d.before(&mut t, C, Kind::Write);
        assert_eq!(on_c.len(), 3);
        assert!(on_c.contains(&w1) && on_c.contains(&rb));
        let w2 = d.write(&mut t, C);
        assert_eq!(w2, w1, "the write event is reused");
        assert_eq!(
            t.waits(FREE, Kind::Write).copied().collect::<Vec<_>>(),
            [w2]
        );
        assert_eq!(t.free_on(), FreeOn::Stream(&C));
        // The readers' events are kept for reuse: no new event when the
        // next reader must be waited for.
        t.read(&B);
        d.before(&mut t, FREE, Kind::Write);
        assert_eq!(d.made.get(), 3, "three events made in all");
        let mut events: Vec<u32> = t.into_events().collect();
        events.sort_unstable();
        assert_eq!(events, [1, 2, 3]);
    }

    #[test]
    fn a_failed_record_keeps_the_read_pending() {
        let mut t: Tracker<StreamId, u32> = Tracker::default();
        t.write(&A, || Ok::<_, ()>(1)).unwrap();
        t.read(&B);
        let failed = t.settle(FREE, Kind::Write, || Ok(2), |_, _| Err("busy"));
        assert_eq!(failed, Err("busy"));
        let mut recorded = 0;
        t.settle(
            FREE,
            Kind::Write,
            || Ok(3),
            |_, ev: &u32| {
                recorded = *ev;
                Ok::<_, &str>(())
            },
        )
        .unwrap();
        assert_eq!(
            recorded, 2,
            "the event made for the failed record is reused"
        );
        let mut waits: Vec<u32> = t.waits(FREE, Kind::Write).copied().collect();
        waits.sort_unstable();
        assert_eq!(waits, [1, 2]);
    }
}
