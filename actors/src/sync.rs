//! The synchronization shim: `std`, parking_lot and crossbeam-channel
//! normally, loom under `--cfg weft_loom`. All concurrent code of this crate
//! imports from here, so the loom models check the code that ships.

pub(crate) use imp::*;

#[cfg(not(weft_loom))]
mod imp {
    use std::time::Instant;

    pub(crate) use crossbeam_channel as channel;
    pub(crate) use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
    pub(crate) use std::thread;
    pub(crate) use std::thread_local;

    /// Who spins: an actor waiting for its mailbox, or a thread waiting
    /// for an actor's op.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub(crate) enum Spinner {
        Actor,
        Waiter,
    }

    /// Spins until `ready()` holds or `budget` has passed since `start`;
    /// returns whether it holds. The clock is read every 64 spins only,
    /// and from then on the thread yields its CPU every 64 spins: where
    /// threads outnumber CPUs (a domain's pinned pool busy with the op the
    /// spinner waits for), the one that would finish the op gets to run.
    ///
    /// A spinner that shares its CPU with the other side (a waiter on an
    /// actor's CPU, an actor with a waiter spinning on its CPU: see
    /// [`cpus`]) yields at every turn instead: spinning there only keeps
    /// the other side from running.
    pub(crate) fn spin_until(
        start: Instant,
        budget: std::time::Duration,
        who: Spinner,
        mut ready: impl FnMut() -> bool,
    ) -> bool {
        if budget.is_zero() {
            return ready();
        }
        let cpu = cpus::current();
        let _spinning = (who == Spinner::Waiter).then(|| cpus::Waiting::on(cpu));
        let crowded = || match who {
            Spinner::Waiter => cpus::actors_on(cpu),
            Spinner::Actor => cpus::waiters_on(cpu),
        };
        let mut spins = 0u32;
        loop {
            if ready() {
                return true;
            }
            spins = spins.wrapping_add(1);
            if crowded() {
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
            if spins.is_multiple_of(64) {
                if start.elapsed() >= budget {
                    return ready();
                }
                if spins >= 256 {
                    std::thread::yield_now();
                }
            }
        }
    }

    /// Which CPUs run an actor and which have a thread spinning for one:
    /// per-CPU counts, so that a spinner can tell it shares its CPU with
    /// the other side. CPUs past the table, and platforms that cannot say
    /// which CPU a thread runs on, are never crowded (spinning there is
    /// only slower).
    pub(crate) mod cpus {
        use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

        use super::super::CachePadded;

        const CPUS: usize = 1024;
        /// Each count on lines of its own: an actor reads its CPU's waiter
        /// count at every spin, while waiters on other CPUs change theirs.
        static ACTORS: [CachePadded<AtomicU32>; CPUS] =
            [const { CachePadded(AtomicU32::new(0)) }; CPUS];
        static WAITERS: [CachePadded<AtomicU32>; CPUS] =
            [const { CachePadded(AtomicU32::new(0)) }; CPUS];

        /// The CPU the calling thread runs on now, if it is in the table.
        pub(crate) fn current() -> Option<usize> {
            weft_topology::current_cpu().filter(|&c| c < CPUS)
        }

        pub(crate) fn actors_on(cpu: Option<usize>) -> bool {
            cpu.is_some_and(|c| ACTORS[c].load(Relaxed) > 0)
        }

        pub(crate) fn waiters_on(cpu: Option<usize>) -> bool {
            cpu.is_some_and(|c| WAITERS[c].load(Relaxed) > 0)
        }

        /// Counts a waiter on its CPU for as long as it lives.
        pub(crate) struct Waiting(Option<usize>);

        impl Waiting {
            pub(crate) fn on(cpu: Option<usize>) -> Waiting {
                if let Some(c) = cpu {
                    WAITERS[c].fetch_add(1, Relaxed);
                }
                Waiting(cpu)
            }
        }

        impl Drop for Waiting {
            fn drop(&mut self) {
                if let Some(c) = self.0 {
                    WAITERS[c].fetch_sub(1, Relaxed);
                }
            }
        }

        /// Where an actor thread runs; moved when it migrates.
        #[derive(Debug, Default)]
        pub(crate) struct ActorCpu(Option<usize>);

        impl ActorCpu {
            /// Notes the CPU the calling (actor) thread runs on now.
            pub(crate) fn update(&mut self) {
                let now = current();
                if now != self.0 {
                    self.leave();
                    if let Some(c) = now {
                        ACTORS[c].fetch_add(1, Relaxed);
                    }
                    self.0 = now;
                }
            }

            fn leave(&mut self) {
                if let Some(c) = self.0.take() {
                    ACTORS[c].fetch_sub(1, Relaxed);
                }
            }
        }

        impl Drop for ActorCpu {
            fn drop(&mut self) {
                self.leave();
            }
        }
    }

    /// A mutex without poisoning: no lock in weft is held across user code.
    #[derive(Debug, Default)]
    pub(crate) struct Mutex<T>(parking_lot::Mutex<T>);

    pub(crate) type MutexGuard<'a, T> = parking_lot::MutexGuard<'a, T>;

    impl<T> Mutex<T> {
        pub(crate) fn new(value: T) -> Self {
            Mutex(parking_lot::Mutex::new(value))
        }

        pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
            self.0.lock()
        }
    }

    #[derive(Debug, Default)]
    pub(crate) struct Condvar(parking_lot::Condvar);

    impl Condvar {
        pub(crate) fn new() -> Self {
            Condvar(parking_lot::Condvar::new())
        }

        pub(crate) fn wait<'a, T>(&self, mut guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
            self.0.wait(&mut guard);
            guard
        }

        /// Waits until notified or `deadline`; the flag says it timed out.
        pub(crate) fn wait_until<'a, T>(
            &self,
            mut guard: MutexGuard<'a, T>,
            deadline: Instant,
        ) -> (MutexGuard<'a, T>, bool) {
            let timed_out = self.0.wait_until(&mut guard, deadline).timed_out();
            (guard, timed_out)
        }

        pub(crate) fn notify_all(&self) {
            self.0.notify_all();
        }
    }
}

#[cfg(weft_loom)]
mod imp {
    use std::ops::{Deref, DerefMut};
    use std::time::Instant;

    pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
    pub(crate) use loom::thread;
    pub(crate) use loom::thread_local;
    use std::sync::Arc;

    /// Who spins (see the non-loom shim).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    #[allow(dead_code)]
    pub(crate) enum Spinner {
        Actor,
        Waiter,
    }

    /// Loom has no clock and a spin is only a longer schedule: look once.
    pub(crate) fn spin_until(
        _start: Instant,
        _budget: std::time::Duration,
        _who: Spinner,
        mut ready: impl FnMut() -> bool,
    ) -> bool {
        ready()
    }

    /// No CPUs under loom.
    pub(crate) mod cpus {
        #[derive(Debug, Default)]
        pub(crate) struct ActorCpu(());

        impl ActorCpu {
            pub(crate) fn update(&mut self) {}
        }
    }

    #[derive(Debug)]
    pub(crate) struct Mutex<T>(loom::sync::Mutex<T>);

    /// Remembers its mutex so that a modelled timed wait can unlock, let the
    /// other threads run, and lock again.
    pub(crate) struct MutexGuard<'a, T> {
        lock: &'a loom::sync::Mutex<T>,
        guard: Option<loom::sync::MutexGuard<'a, T>>,
    }

    impl<T> Mutex<T> {
        pub(crate) fn new(value: T) -> Self {
            Mutex(loom::sync::Mutex::new(value))
        }

        pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
            MutexGuard {
                lock: &self.0,
                guard: Some(self.0.lock().unwrap_or_else(|e| e.into_inner())),
            }
        }
    }

    impl<T: Default> Default for Mutex<T> {
        fn default() -> Self {
            Mutex::new(T::default())
        }
    }

    impl<T> Deref for MutexGuard<'_, T> {
        type Target = T;
        fn deref(&self) -> &T {
            self.guard.as_deref().expect("guard is held")
        }
    }

    impl<T> DerefMut for MutexGuard<'_, T> {
        fn deref_mut(&mut self) -> &mut T {
            self.guard.as_deref_mut().expect("guard is held")
        }
    }

    #[derive(Debug)]
    pub(crate) struct Condvar(loom::sync::Condvar);

    impl Condvar {
        pub(crate) fn new() -> Self {
            Condvar(loom::sync::Condvar::new())
        }

        pub(crate) fn wait<'a, T>(&self, mut guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
            let inner = guard.guard.take().expect("guard is held");
            guard.guard = Some(self.0.wait(inner).unwrap_or_else(|e| e.into_inner()));
            guard
        }

        /// Loom has no clock: a timed wait is modelled as "the time ran out
        /// while the lock was released", the branch that races with a wake.
        pub(crate) fn wait_until<'a, T>(
            &self,
            mut guard: MutexGuard<'a, T>,
            _deadline: Instant,
        ) -> (MutexGuard<'a, T>, bool) {
            drop(guard.guard.take());
            loom::thread::yield_now();
            guard.guard = Some(guard.lock.lock().unwrap_or_else(|e| e.into_inner()));
            (guard, true)
        }

        pub(crate) fn notify_all(&self) {
            self.0.notify_all();
        }
    }

    /// A small bounded/unbounded channel on loom primitives with the
    /// semantics weft uses from crossbeam-channel: FIFO per sender,
    /// blocking and non-blocking sends, disconnection when either side is
    /// gone, buffered messages dropped when the last receiver goes.
    ///
    /// # Why it is no stronger than crossbeam's
    ///
    /// crossbeam publishes a message through its slot: the sender writes
    /// it, then stores the slot's stamp with `Release`; a receiver sees the
    /// message only by an `Acquire` load of that stamp. So a receiver that
    /// learnt of a message some other way (a counter read `Relaxed`) is
    /// not guaranteed to find it. A stand-in that passes messages under a
    /// mutex would hide exactly that: loom orders a lock after the unlock
    /// that came before it, so everything a sender did before it unlocked
    /// would be visible to the receiver. Here, therefore:
    ///
    /// - a send first *claims* its place (it queues its message, flagged
    ///   unpublished, under the queue's lock), then *publishes* it with a
    ///   `Release` store of the flag, outside every lock a receiver takes;
    /// - `try_recv` takes the first slot whose flag it reads as set with
    ///   `Acquire`: a message whose publication it cannot see is not there
    ///   for it, whatever else it saw. (Sends from one thread are
    ///   published in order, so they arrive in order; concurrent sends
    ///   from several threads arrive in the order they were published,
    ///   one of the orders crossbeam may give them.)
    /// - a blocked receiver waits on a condvar of its own lock, which a
    ///   sender takes after it published (so a wake-up is never lost) and
    ///   `try_recv` never takes (so it orders nothing for `try_recv`).
    pub(crate) mod channel {
        use std::collections::VecDeque;
        use std::time::Duration;

        pub(crate) use crossbeam_channel::{RecvError, RecvTimeoutError, SendError, TryRecvError};

        use super::{Arc, AtomicBool, Condvar, Mutex, Ordering};

        /// A message in its place, and whether it is published yet.
        struct Slot<T> {
            published: Arc<AtomicBool>,
            msg: T,
        }

        struct State<T> {
            slots: VecDeque<Slot<T>>,
            cap: usize,
            senders: usize,
            receivers: usize,
        }

        struct Chan<T> {
            state: Mutex<State<T>>,
            /// Senders wait here for room (with `state`'s lock).
            room: Condvar,
            /// Blocked receivers wait here, with this lock.
            bell: Mutex<()>,
            rung: Condvar,
        }

        impl<T> Chan<T> {
            /// Wakes blocked receivers (after a publication or a drop).
            fn ring(&self) {
                let _bell = self.bell.lock();
                self.rung.notify_all();
            }

            /// The first published message, taken; or why there is none.
            fn take(&self) -> Result<T, TryRecvError> {
                let mut state = self.state.lock();
                let found = state
                    .slots
                    .iter()
                    .position(|s| s.published.load(Ordering::Acquire));
                match found {
                    Some(i) => {
                        let slot = state.slots.remove(i).expect("a slot there");
                        drop(state);
                        self.room.notify_all();
                        Ok(slot.msg)
                    }
                    None if state.senders == 0 && state.slots.is_empty() => {
                        Err(TryRecvError::Disconnected)
                    }
                    None => Err(TryRecvError::Empty),
                }
            }
        }

        pub(crate) struct Sender<T>(Arc<Chan<T>>);
        pub(crate) struct Receiver<T>(Arc<Chan<T>>);

        pub(crate) fn bounded<T>(cap: usize) -> (Sender<T>, Receiver<T>) {
            let chan = Arc::new(Chan {
                state: Mutex::new(State {
                    slots: VecDeque::new(),
                    cap,
                    senders: 1,
                    receivers: 1,
                }),
                room: Condvar::new(),
                bell: Mutex::new(()),
                rung: Condvar::new(),
            });
            (Sender(chan.clone()), Receiver(chan))
        }

        pub(crate) fn unbounded<T>() -> (Sender<T>, Receiver<T>) {
            bounded(usize::MAX)
        }

        impl<T> Sender<T> {
            pub(crate) fn send(&self, msg: T) -> Result<(), SendError<T>> {
                let published = {
                    let mut state = self.0.state.lock();
                    loop {
                        if state.receivers == 0 {
                            return Err(SendError(msg));
                        }
                        if state.slots.len() < state.cap {
                            break;
                        }
                        state = self.0.room.wait(state);
                    }
                    let published = Arc::new(AtomicBool::new(false));
                    state.slots.push_back(Slot {
                        published: published.clone(),
                        msg,
                    });
                    published
                };
                published.store(true, Ordering::Release);
                self.0.ring();
                Ok(())
            }
        }

        impl<T> Receiver<T> {
            pub(crate) fn try_recv(&self) -> Result<T, TryRecvError> {
                self.0.take()
            }

            pub(crate) fn is_empty(&self) -> bool {
                let state = self.0.state.lock();
                !state
                    .slots
                    .iter()
                    .any(|s| s.published.load(Ordering::Acquire))
            }

            /// Loom has no clock: the time runs out unless a message is
            /// there at once or after the other threads had a turn.
            pub(crate) fn recv_timeout(&self, _timeout: Duration) -> Result<T, RecvTimeoutError> {
                for _ in 0..2 {
                    match self.try_recv() {
                        Ok(msg) => return Ok(msg),
                        Err(TryRecvError::Disconnected) => {
                            return Err(RecvTimeoutError::Disconnected)
                        }
                        Err(TryRecvError::Empty) => super::thread::yield_now(),
                    }
                }
                Err(RecvTimeoutError::Timeout)
            }

            pub(crate) fn recv(&self) -> Result<T, RecvError> {
                let mut bell = self.0.bell.lock();
                loop {
                    match self.0.take() {
                        Ok(msg) => return Ok(msg),
                        Err(TryRecvError::Disconnected) => return Err(RecvError),
                        Err(TryRecvError::Empty) => bell = self.0.rung.wait(bell),
                    }
                }
            }
        }

        impl<T> Clone for Sender<T> {
            fn clone(&self) -> Self {
                self.0.state.lock().senders += 1;
                Sender(self.0.clone())
            }
        }

        impl<T> Drop for Sender<T> {
            fn drop(&mut self) {
                self.0.state.lock().senders -= 1;
                self.0.ring();
            }
        }

        impl<T> Drop for Receiver<T> {
            fn drop(&mut self) {
                let discarded = {
                    let mut state = self.0.state.lock();
                    state.receivers -= 1;
                    std::mem::take(&mut state.slots)
                };
                self.0.room.notify_all();
                drop(discarded);
            }
        }

        impl<T> std::fmt::Debug for Sender<T> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("Sender { .. }")
            }
        }

        impl<T> std::fmt::Debug for Receiver<T> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("Receiver { .. }")
            }
        }
    }
}

/// Keeps a value on cache lines of its own, so that counters written by one
/// thread do not slow the flags another thread writes (false sharing).
/// 128 bytes: adjacent-line prefetch pairs 64-byte lines on x86.
#[derive(Debug, Default)]
#[repr(align(128))]
pub(crate) struct CachePadded<T>(pub(crate) T);

impl<T> std::ops::Deref for CachePadded<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}
