//! The buffer pool: element buffers of freed tensors, kept for the next
//! output of the same type and about the same size.
//!
//! Large allocations come straight from the kernel (`mmap`) and go back
//! to it when freed, so a stream of ops on big tensors pays the page
//! faults of fresh memory on every output; small ones churn the
//! allocator's arenas. The engine keeps what its freed tensors held
//! instead, by element type and size class, up to a byte cap.
//!
//! Size classes are quarter octaves (`2^e`, `1.25·2^e`, `1.5·2^e`,
//! `1.75·2^e` bytes, from 64 bytes up), so a reused buffer is at most a
//! quarter larger than asked for. A buffer is filed under the largest
//! class its capacity covers and taken for requests that round up to
//! that class; a buffer the pool allocates itself has exactly its class's
//! capacity, so it comes back to the same class.
//!
//! At the cap, the least recently given buffers go first: a freed buffer
//! is what the ops running now ask for, and a pool full of what an earlier
//! phase left (four 64 MiB buffers, say) would otherwise refuse every
//! buffer of the phase after it, which then pays fresh memory on every
//! output.
//!
//! Kernels do not take the pool as an argument: the engine lends its pool
//! to the thread that runs an op ([`BufferPool::lend`]) for the op's
//! duration, and kernels allocate their outputs with [`take`] and
//! [`filled`], which draw from the lent pool on that thread and allocate
//! normally anywhere else (a pool worker, a test calling a kernel).

use std::cell::RefCell;

use weft_core::BufferStats;
use weft_core::{DType, Data, Element, TensorError};

thread_local! {
    /// The pool lent to this thread for the op it runs, if any.
    static LENT: RefCell<Option<BufferPool>> = const { RefCell::new(None) };
}

/// An empty vector with room for `len` elements: from the pool lent to
/// this thread if there is one (see [`BufferPool::take`]).
pub(crate) fn take<T: Element>(len: usize) -> Vec<T> {
    LENT.try_with(|lent| lent.borrow_mut().as_mut().map(|pool| pool.take(len)))
        .ok()
        .flatten()
        .unwrap_or_else(|| fresh(len))
}

/// Outputs from this size on are tried with a fallible allocation first.
pub(crate) const ALLOCATION_PROBE_BYTES: usize = 16 << 20;

/// Refuses, as [`TensorError::TooLarge`], an output the allocator cannot
/// provide: the kernels allocate infallibly, and a failed allocation there
/// would abort the process instead of failing the op. A large allocation
/// that is made and freed at once is an `mmap` and a `munmap`, touching no
/// page. (An allocation that succeeds here can still fail later under
/// memory pressure; this catches sizes the machine can never hold.)
pub(crate) fn check_allocatable(outputs: &[(DType, &[usize])]) -> Result<(), TensorError> {
    for &(dtype, shape) in outputs {
        match weft_core::ops::byte_size(dtype, shape) {
            Some(bytes) if bytes < ALLOCATION_PROBE_BYTES => {}
            Some(bytes) if Vec::<u8>::new().try_reserve_exact(bytes).is_ok() => {}
            _ => {
                return Err(TensorError::TooLarge {
                    shape: shape.to_vec(),
                })
            }
        }
    }
    Ok(())
}

/// Below this many bytes a fresh buffer is the allocator's as it comes.
const HUGE_MIN_BYTES: usize = 2 * weft_topology::HUGE_PAGE_BYTES;

/// A new, empty vector with room for `capacity` elements, not from any
/// pool; a large one asks for huge pages before its first write (see
/// [`weft_topology::advise_huge_pages`]: a fresh 32 MiB output costs 16
/// page faults, not 8 192).
///
/// # Panics
///
/// When the allocation fails (out of memory, or more bytes than an
/// allocation may hold), with a message that names its size: the actor's
/// isolation fails the op that asked for it as panicked, with that
/// message, where the allocator's own failure would abort the process.
pub(crate) fn fresh<T>(capacity: usize) -> Vec<T> {
    let mut buffer = Vec::new();
    if buffer.try_reserve_exact(capacity).is_err() {
        panic!(
            "out of memory: no buffer of {capacity} elements of {} bytes could be allocated",
            std::mem::size_of::<T>()
        );
    }
    if capacity.saturating_mul(std::mem::size_of::<T>()) >= HUGE_MIN_BYTES {
        weft_topology::advise_huge_pages(buffer.spare_capacity_mut());
    }
    buffer
}

/// `len` copies of `value`, in a buffer from [`take`].
pub(crate) fn filled<T: Element>(len: usize, value: T) -> Vec<T> {
    let mut buffer = take(len);
    buffer.resize(len, value);
    buffer
}

/// `len` elements whose values are unspecified (what a pooled buffer last
/// held, zeros past that): for an output the kernel overwrites entirely,
/// which then pays no fill. A buffer from [`take`], so from the pool lent
/// to this thread if there is one.
pub(crate) fn overwritten<T: Element>(len: usize) -> Vec<T> {
    LENT.try_with(|lent| {
        lent.borrow_mut()
            .as_mut()
            .map(|pool| pool.take_keeping(len))
    })
    .ok()
    .flatten()
    .unwrap_or_else(|| zeros(len))
}

/// Appends a copy of `src` to `dst` (an empty buffer from the pool or
/// [`fresh`]); a large copy is spread over `threads`, one huge page or
/// more per task, so that no two threads fault the same page in.
pub(crate) fn copy_into<T: Element>(dst: &mut Vec<T>, src: &[T], threads: &super::pool::Workers) {
    use rayon::prelude::*;
    let size = std::mem::size_of::<T>().max(1);
    if src.len().saturating_mul(size) < HUGE_MIN_BYTES || threads.current_num_threads() < 2 {
        dst.extend_from_slice(src);
        return;
    }
    let per_task = weft_topology::HUGE_PAGE_BYTES / size;
    threads.install(|| dst.par_extend(src.par_iter().copied().with_min_len(per_task)));
}

/// `len` zeros in a [`fresh`] buffer. A small one comes from the
/// allocator's zeroed memory; a large one is written, its pages huge (see
/// [`extend_zeros`]).
fn zeros<T: Element>(len: usize) -> Vec<T> {
    if len.saturating_mul(std::mem::size_of::<T>()) < HUGE_MIN_BYTES {
        return vec![T::ZERO; len];
    }
    let mut buffer = fresh(len);
    extend_zeros(&mut buffer, len);
    buffer
}

/// Extends `buffer` with zeros to `len` elements. A large extension made
/// on a worker of a pool (a kernel, inside the domain's `install`) is
/// written by the pool's threads, one huge page or more each: the first
/// write of fresh memory is its page faults, which one thread would
/// otherwise take alone (most of a large permutation's time, measured).
fn extend_zeros<T: Element>(buffer: &mut Vec<T>, len: usize) {
    use rayon::prelude::*;
    let more = len.saturating_sub(buffer.len());
    let size = std::mem::size_of::<T>().max(1);
    if more.saturating_mul(size) < HUGE_MIN_BYTES
        || rayon::current_thread_index().is_none()
        || rayon::current_num_threads() < 2
    {
        buffer.resize(len, T::ZERO);
        return;
    }
    let per_task = weft_topology::HUGE_PAGE_BYTES / size;
    buffer.par_extend(rayon::iter::repeat_n(T::ZERO, more).with_min_len(per_task));
}

/// Gives `tensor`'s buffer to the pool lent to this thread, if there is
/// one; else drops it.
pub(crate) fn recycle(tensor: weft_core::Tensor) {
    let data = tensor.into_parts().1;
    let _ = LENT.try_with(|lent| {
        if let Some(pool) = lent.borrow_mut().as_mut() {
            pool.give(data);
        }
    });
}

/// The smallest class, in bytes: smaller buffers are not pooled.
const MIN_CLASS_BYTES: usize = 64;
/// Classes per element type: quarter octaves up to `2^63` bytes.
const CLASSES: usize = 64 * 4;
/// Buffers kept per class, whatever the cap: a stream that brings in more
/// buffers than it takes (uploads of the caller's vectors) would otherwise
/// fill the pool to its cap with buffers nobody asks for.
pub(crate) const MAX_PER_CLASS: usize = 32;

/// Freed element buffers by element type and size class, up to a byte cap.
#[derive(Debug)]
pub struct BufferPool {
    /// Indexed by `dtype_index * CLASSES + class`; allocated on first use.
    /// Each class is a stack of buffers with the tick they were given at:
    /// the most recent last, the oldest first.
    free: Vec<Vec<(u64, Data)>>,
    /// A donated tensor's buffer (see [`BufferPool::donate`]), served to
    /// the next request of its type that fits, before any pooled one.
    donated: Option<Data>,
    /// Counts gives: the age of a pooled buffer.
    tick: u64,
    stats: BufferStats,
}

impl BufferPool {
    /// A pool that keeps at most `cap_bytes` bytes; 0 turns it off.
    pub fn new(cap_bytes: usize) -> BufferPool {
        BufferPool {
            free: Vec::new(),
            donated: None,
            tick: 0,
            stats: BufferStats {
                cap_bytes,
                ..BufferStats::default()
            },
        }
    }

    /// Runs `f` with this pool lent to the calling thread, so that the
    /// kernels `f` runs here draw their outputs from it; the pool comes
    /// back when `f` returns or unwinds.
    pub fn lend<R>(&mut self, f: impl FnOnce() -> R) -> R {
        /// Puts the lent pool back, and whatever was lent before it.
        struct Return<'a> {
            home: &'a mut BufferPool,
            outer: Option<BufferPool>,
        }
        impl Drop for Return<'_> {
            fn drop(&mut self) {
                let outer = self.outer.take();
                if let Ok(Some(pool)) = LENT.try_with(|lent| lent.replace(outer)) {
                    *self.home = pool;
                }
            }
        }
        let pool = std::mem::replace(self, BufferPool::new(0));
        let outer = LENT.with(|lent| lent.replace(Some(pool)));
        let _return = Return { home: self, outer };
        f()
    }

    /// The counters.
    pub fn stats(&self) -> BufferStats {
        self.stats
    }

    /// An empty vector with room for at least `len` elements: a pooled
    /// buffer of the right class if there is one, else a new allocation
    /// of the class's full size (so that it returns to the same class).
    pub fn take<T: Element>(&mut self, len: usize) -> Vec<T> {
        let mut buffer = self.pooled(len);
        buffer.clear();
        buffer
    }

    /// Like [`BufferPool::take`], but `len` elements long: a pooled
    /// buffer keeps what it held (cut to `len`, or zeros appended), a new
    /// one is zeros. For outputs a kernel overwrites entirely.
    pub(crate) fn take_keeping<T: Element>(&mut self, len: usize) -> Vec<T> {
        let mut buffer = self.pooled(len);
        if buffer.len() >= len {
            buffer.truncate(len);
        } else {
            extend_zeros(&mut buffer, len);
        }
        buffer
    }

    /// Holds `data` (a donated tensor's buffer) for the next request of
    /// its element type it has room for, whatever its size and the cap:
    /// the op run next gets it for its output when that is the first
    /// buffer of the type it asks for. What no request took goes to the
    /// pool with [`BufferPool::settle`].
    pub fn donate(&mut self, data: Data) {
        self.settle();
        self.donated = Some(data);
    }

    /// Gives the donated buffer no request took, if any, to the pool;
    /// whether one was left.
    pub fn settle(&mut self) -> bool {
        let left = self.donated.take();
        let any = left.is_some();
        if let Some(data) = left {
            self.give(data);
        }
        any
    }

    /// A pooled buffer for `len` elements as it was given back, or a new
    /// empty one with room for them.
    fn pooled<T: Element>(&mut self, len: usize) -> Vec<T> {
        if let Some(data) = self.donated.take_if(|_| len > 0) {
            match T::unwrap(data) {
                Ok(buffer) if buffer.capacity() >= len => return buffer,
                Ok(buffer) => self.donated = Some(T::wrap(buffer)),
                Err(data) => self.donated = Some(data),
            }
        }
        let size = std::mem::size_of::<T>();
        if len == 0 || self.stats.cap_bytes == 0 {
            return fresh(len);
        }
        let Some(class) = pooled_class(T::DTYPE, len) else {
            return fresh(len);
        };
        if let Some(data) = self.pop(T::DTYPE, class) {
            self.stats.hits += 1;
            return T::unwrap(data).unwrap_or_else(|_| unreachable!("filed by type"));
        }
        self.stats.misses += 1;
        fresh(class_size(class) / size)
    }

    /// The most recently given buffer of `dtype` and `class`, if any.
    fn pop(&mut self, dtype: DType, class: usize) -> Option<Data> {
        let (_, data) = self.free.get_mut(slot(dtype, class))?.pop()?;
        self.stats.pooled_buffers -= 1;
        self.stats.pooled_bytes -= capacity(&data) * dtype.size();
        Some(data)
    }

    /// A pooled buffer with room for `len` elements of `dtype`, if the
    /// pool holds one (it allocates none): for another domain's pool (a
    /// transfer's swap, [`crate::CpuEngine`]'s `take_transfer`).
    pub fn spare(&mut self, dtype: DType, len: usize) -> Option<Data> {
        self.pop(dtype, pooled_class(dtype, len)?)
    }

    /// An initialized vector of `len` copies of `value`, from the pool.
    pub fn filled<T: Element>(&mut self, len: usize, value: T) -> Vec<T> {
        let mut buffer = self.take(len);
        buffer.resize(len, value);
        buffer
    }

    /// Keeps `data`'s buffer for reuse, letting the least recently given
    /// buffers go while keeping it would pass the cap; or lets it go itself
    /// if it is larger than the cap, its class is full (32 buffers), or it
    /// is too small to be worth keeping.
    pub fn give(&mut self, data: Data) {
        let dtype = data.dtype();
        let bytes = capacity(&data) * dtype.size();
        let slot = match class_down(bytes) {
            Some(class) if bytes <= self.stats.cap_bytes => slot(dtype, class),
            _ => {
                if bytes > 0 {
                    self.stats.released += 1;
                }
                return;
            }
        };
        if self.free.len() <= slot {
            self.free.resize_with(DType::ALL.len() * CLASSES, Vec::new);
        }
        if self.free[slot].len() >= MAX_PER_CLASS {
            self.stats.released += 1;
            return;
        }
        while self.stats.pooled_bytes + bytes > self.stats.cap_bytes && self.let_oldest_go() {}
        self.free[slot].push((self.tick, data));
        self.tick += 1;
        self.stats.kept += 1;
        self.stats.pooled_buffers += 1;
        self.stats.pooled_bytes += bytes;
        self.stats.peak_bytes = self.stats.peak_bytes.max(self.stats.pooled_bytes);
    }

    /// Lets the least recently given buffer go; `false` if the pool is
    /// empty.
    fn let_oldest_go(&mut self) -> bool {
        let oldest = self
            .free
            .iter()
            .enumerate()
            .filter_map(|(slot, class)| Some((class.first()?.0, slot)))
            .min()
            .map(|(_, slot)| slot);
        let Some(slot) = oldest else {
            return false;
        };
        let (_, data) = self.free[slot].remove(0);
        self.stats.released += 1;
        self.stats.pooled_buffers -= 1;
        self.stats.pooled_bytes -= capacity(&data) * data.dtype().size();
        true
    }

    /// Lets every pooled buffer go (counted as released); returns the
    /// bytes they held.
    pub fn trim(&mut self) -> usize {
        let bytes = self.stats.pooled_bytes;
        self.free.clear();
        self.stats.released += self.stats.pooled_buffers as u64;
        self.stats.pooled_buffers = 0;
        self.stats.pooled_bytes = 0;
        bytes
    }

    /// Changes the cap, letting buffers go if the pool holds more.
    pub fn set_cap(&mut self, cap_bytes: usize) {
        self.stats.cap_bytes = cap_bytes;
        if self.stats.pooled_bytes > cap_bytes {
            self.trim();
        }
    }
}

/// The class a buffer of `len` elements of `dtype` is pooled in; `None`
/// below the smallest class (the allocator's own caches serve those
/// better) or past the largest.
fn pooled_class(dtype: DType, len: usize) -> Option<usize> {
    len.checked_mul(dtype.size())
        .filter(|&bytes| bytes >= MIN_CLASS_BYTES)
        .and_then(class_up)
}

fn slot(dtype: DType, class: usize) -> usize {
    let index = DType::ALL
        .iter()
        .position(|&d| d == dtype)
        .expect("every type is in ALL");
    index * CLASSES + class
}

fn capacity(data: &Data) -> usize {
    with_data!(data, |v| v.capacity())
}

/// Bytes of class `class`: `(4 + q) · 2^e / 4` for `class = 4e + q`.
fn class_size(class: usize) -> usize {
    let (e, q) = (class / 4, class % 4);
    ((4 + q) << e) >> 2
}

/// The smallest class holding `bytes`; `None` past the largest class.
fn class_up(bytes: usize) -> Option<usize> {
    let bytes = bytes.max(MIN_CLASS_BYTES);
    let e = (usize::BITS - 1 - bytes.leading_zeros()) as usize;
    (4 * e..4 * e + 4)
        .chain([4 * e + 4])
        .find(|&c| c < CLASSES && e < 62 && class_size(c) >= bytes)
}

/// The largest class that `bytes` covers; `None` below the smallest.
fn class_down(bytes: usize) -> Option<usize> {
    if bytes < MIN_CLASS_BYTES {
        return None;
    }
    let e = (usize::BITS - 1 - bytes.leading_zeros()) as usize;
    if e >= 62 {
        return None;
    }
    (4 * e..4 * e + 4).rev().find(|&c| class_size(c) <= bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_the_allocator_cannot_give_is_a_panic_that_names_it() {
        let failed = std::panic::catch_unwind(|| fresh::<f64>(1 << 58)).unwrap_err();
        let message = failed
            .downcast_ref::<String>()
            .expect("a formatted message");
        assert!(message.starts_with("out of memory"), "{message}");
        assert!(
            message.contains("288230376151711744 elements of 8 bytes"),
            "{message}"
        );
        // A large buffer that can be had is had, empty, with room for all.
        let large = fresh::<f64>(HUGE_MIN_BYTES);
        assert!(large.is_empty() && large.capacity() >= HUGE_MIN_BYTES);
    }

    #[test]
    fn large_zeros_are_zeros_on_a_pool_and_off_it() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let len = (3 * HUGE_MIN_BYTES) / 8 + 5;
        let all_zero = |v: &[f64]| v.len() == len && v.iter().all(|&x| x == 0.0);
        assert!(all_zero(&pool.install(|| zeros::<f64>(len))));
        assert!(all_zero(&zeros::<f64>(len)));
        // Extended from a buffer that holds values: those stay, zeros after.
        let mut held = vec![7.0; 1000];
        pool.install(|| extend_zeros(&mut held, len));
        assert_eq!(held.len(), len);
        assert!(held[..1000].iter().all(|&x| x == 7.0));
        assert!(held[1000..].iter().all(|&x| x == 0.0));
    }

    #[test]
    fn classes_are_quarter_octaves_and_round_trip() {
        assert_eq!(class_size(4 * 6), 64);
        assert_eq!(class_size(4 * 6 + 1), 80);
        assert_eq!(class_size(4 * 6 + 3), 112);
        for bytes in [
            1,
            63,
            64,
            65,
            80,
            81,
            100,
            4096,
            4097,
            1 << 26,
            (1 << 26) + 1,
            3 << 40,
        ] {
            let up = class_up(bytes).expect("in range");
            assert!(class_size(up) >= bytes, "{bytes}: class {up} too small");
            assert!(
                class_size(up) <= (bytes.max(64) * 5).div_ceil(4),
                "{bytes}: class {up} wasteful"
            );
            // A buffer of exactly the class's size is filed back under it.
            assert_eq!(class_down(class_size(up)), Some(up), "{bytes}");
            let down = class_down(bytes.max(64)).expect("in range");
            assert!(class_size(down) <= bytes.max(64));
        }
        assert_eq!(class_down(63), None);
        assert_eq!(class_up(usize::MAX), None);
    }

    #[test]
    fn freed_buffers_are_reused_by_type_and_class() {
        let mut pool = BufferPool::new(1 << 20);
        let a: Vec<f64> = pool.filled(1000, 1.0);
        let ptr = a.as_ptr();
        assert_eq!(pool.stats().misses, 1);
        pool.give(f64::wrap(a));
        assert_eq!((pool.stats().kept, pool.stats().pooled_buffers), (1, 1));
        // Another type of the same byte size does not get it.
        let b: Vec<f32> = pool.take(2000);
        assert_ne!(b.as_ptr().cast::<f64>(), ptr);
        // The same type, a size in the same class, does.
        let c: Vec<f64> = pool.take(990);
        assert_eq!((c.as_ptr(), c.len()), (ptr, 0));
        assert!(c.capacity() >= 990);
        let s = pool.stats();
        assert_eq!(
            (s.hits, s.misses, s.pooled_bytes, s.pooled_buffers),
            (1, 2, 0, 0)
        );
        assert!(s.peak_bytes >= 8000);
    }

    #[test]
    fn a_lent_pool_serves_this_thread_only_and_comes_back() {
        let mut pool = BufferPool::new(1 << 20);
        pool.give(f64::wrap(Vec::with_capacity(128)));
        let (here, elsewhere) = pool.lend(|| {
            let here: Vec<f64> = filled(120, 2.0);
            let elsewhere = std::thread::scope(|s| s.spawn(|| take::<f64>(100).capacity()).join());
            (here, elsewhere.expect("joined"))
        });
        assert_eq!((here.len(), here[119], elsewhere), (120, 2.0, 100));
        assert_eq!(pool.stats().hits, 1);
        // It comes back on unwinding too.
        let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            pool.lend(|| {
                let _: Vec<f64> = take(500);
                panic!("kernel failed")
            })
        }));
        assert!(unwound.is_err());
        assert_eq!(pool.stats().misses, 1);
        assert_eq!(take::<f64>(8).capacity(), 8, "nothing lent now");
    }

    #[test]
    fn the_cap_bounds_what_is_kept_and_zero_turns_it_off() {
        let mut pool = BufferPool::new(10_000);
        for _ in 0..5 {
            pool.give(f64::wrap(vec![0.0; 500]));
        }
        let s = pool.stats();
        assert!(s.pooled_bytes <= 10_000, "{s:?}");
        // Each give past the second lets the oldest go.
        assert_eq!((s.kept, s.released, s.pooled_buffers), (5, 3, 2));
        // A buffer larger than the cap is not kept at all.
        pool.give(f64::wrap(vec![0.0; 2000]));
        assert_eq!((pool.stats().kept, pool.stats().pooled_buffers), (5, 2));
        pool.set_cap(0);
        assert_eq!(pool.stats().pooled_bytes, 0);
        pool.give(f64::wrap(vec![0.0; 500]));
        let _: Vec<f64> = pool.take(500);
        let s = pool.stats();
        assert_eq!((s.pooled_buffers, s.hits), (0, 0));
        // A class keeps at most MAX_PER_CLASS buffers.
        let mut pool = BufferPool::new(1 << 30);
        for _ in 0..MAX_PER_CLASS + 5 {
            pool.give(f64::wrap(vec![0.0; 64]));
        }
        let s = pool.stats();
        assert_eq!((s.pooled_buffers, s.released), (MAX_PER_CLASS, 5));
        // Tiny buffers are not worth keeping.
        let mut pool = BufferPool::new(1 << 20);
        pool.give(f32::wrap(vec![0.0; 3]));
        assert_eq!(pool.stats().kept, 0);
    }

    #[test]
    fn at_the_cap_the_least_recently_given_buffers_go_first() {
        // Room for two 4096-byte buffers but not a 1536-byte one beside
        // them; a phase of large buffers, then one of small ones.
        let mut pool = BufferPool::new(9_000);
        let (old, older) = (vec![0.0f64; 512], vec![0.0f64; 512]);
        pool.give(f64::wrap(older));
        pool.give(f64::wrap(old));
        let small: Vec<f32> = vec![0.0; 384];
        let small_ptr = small.as_ptr();
        pool.give(f32::wrap(small));
        let s = pool.stats();
        assert_eq!((s.pooled_buffers, s.released), (2, 1), "{s:?}");
        // The small one is kept (and served); one large one is left.
        let again: Vec<f32> = pool.take(384);
        assert_eq!(again.as_ptr(), small_ptr);
        let large: Vec<f64> = pool.take(512);
        assert!(large.capacity() >= 512);
        assert_eq!(pool.stats().hits, 2);
    }
}
