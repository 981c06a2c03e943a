//! The runtime's cache of traced functions: the programs `Lane::call`
//! traced, keyed by the function (its type, and its value: the arguments
//! it holds are static ones), its inputs' types and shapes, and its
//! scalars' types. Runtime-wide and bounded, the least recently used entry
//! out first.

use std::any::{Any, TypeId};
use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};

use weft_core::{CacheStats, DType, Meta, Program};

/// The default bound of the runtime's cache of traced functions: the programs
/// [`Lane::call`](crate::Lane::call) traced that a runtime keeps
/// ([`Builder::function_cache`](crate::Builder::function_cache)).
pub const FUNCTION_CACHE_CAPACITY: usize = 256;

/// A traced program and what it was traced for.
struct Entry {
    /// The function value (a `F`), compared by `F`'s `==`.
    function: Box<dyn Any + Send>,
    inputs: Vec<Meta>,
    scalars: Vec<DType>,
    program: Program,
    /// When it was last found or kept, on the cache's clock.
    used: u64,
}

#[derive(Default)]
struct State {
    /// Entries by the hash of their key; a bucket holds those whose
    /// hashes collide.
    buckets: HashMap<u64, Vec<Entry>>,
    len: usize,
    clock: u64,
    hits: u64,
    misses: u64,
    evictions: u64,
}

/// See the module docs.
pub(crate) struct Functions {
    capacity: usize,
    state: parking_lot::Mutex<State>,
}

impl std::fmt::Debug for Functions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Functions")
            .field("stats", &self.stats())
            .finish()
    }
}

/// The key of a call: the function, its inputs' types and shapes, its
/// scalars' types.
pub(crate) struct Key<'a, F> {
    pub(crate) function: &'a F,
    pub(crate) inputs: &'a [(DType, &'a [usize])],
    pub(crate) scalars: &'a [DType],
}

impl<F: Hash + 'static> Key<'_, F> {
    /// The hash a call is looked up by (the function's own `Hash` runs on
    /// the calling thread, outside the cache's lock).
    pub(crate) fn hash(&self) -> u64 {
        let mut hasher = DefaultHasher::new();
        TypeId::of::<F>().hash(&mut hasher);
        self.function.hash(&mut hasher);
        self.inputs.hash(&mut hasher);
        self.scalars.hash(&mut hasher);
        hasher.finish()
    }
}

impl<F: PartialEq + 'static> Key<'_, F> {
    fn matches(&self, entry: &Entry) -> bool {
        entry.scalars == self.scalars
            && entry.inputs.len() == self.inputs.len()
            && (entry.inputs.iter().zip(self.inputs))
                .all(|(m, &(dtype, shape))| m.dtype == dtype && m.shape == shape)
            && entry
                .function
                .downcast_ref::<F>()
                .is_some_and(|f| f == self.function)
    }
}

impl Functions {
    /// A cache of at most `capacity` programs (0 keeps none: every call
    /// traces).
    pub(crate) fn new(capacity: usize) -> Functions {
        Functions {
            capacity,
            state: parking_lot::Mutex::default(),
        }
    }

    /// The program traced for `key` (whose hash is `hash`), if kept.
    pub(crate) fn find<F: PartialEq + 'static>(
        &self,
        hash: u64,
        key: &Key<'_, F>,
    ) -> Option<Program> {
        let mut state = self.state.lock();
        state.clock += 1;
        let now = state.clock;
        let found = (state.buckets.get_mut(&hash))
            .and_then(|bucket| bucket.iter_mut().find(|e| key.matches(e)))
            .map(|entry| {
                entry.used = now;
                entry.program.clone()
            });
        match found {
            Some(_) => state.hits += 1,
            None => state.misses += 1,
        }
        found
    }

    /// Keeps `program`, traced for `key`, making room by letting the
    /// least recently used entries go. What is let go is dropped after the
    /// lock is released: a function value's own `Drop` never runs under it.
    pub(crate) fn keep<F: PartialEq + Send + Clone + 'static>(
        &self,
        hash: u64,
        key: &Key<'_, F>,
        program: Program,
    ) {
        if self.capacity == 0 {
            return;
        }
        let entry = Entry {
            function: Box::new(key.function.clone()),
            inputs: (key.inputs.iter())
                .map(|&(dtype, shape)| Meta {
                    dtype,
                    shape: shape.to_vec(),
                })
                .collect(),
            scalars: key.scalars.to_vec(),
            program,
            used: 0,
        };
        let mut gone = Vec::new();
        {
            let mut state = self.state.lock();
            // Another thread may have traced the same call meanwhile.
            if (state.buckets.get(&hash)).is_some_and(|b| b.iter().any(|e| key.matches(e))) {
                drop(state);
                drop(entry);
                return;
            }
            while state.len >= self.capacity {
                gone.push(state.evict_oldest());
            }
            state.clock += 1;
            let now = state.clock;
            state.len += 1;
            let bucket = state.buckets.entry(hash).or_default();
            bucket.push(Entry { used: now, ..entry });
        }
        drop(gone);
    }

    /// Its counters now.
    pub(crate) fn stats(&self) -> CacheStats {
        let state = self.state.lock();
        CacheStats {
            entries: state.len,
            capacity: self.capacity,
            hits: state.hits,
            misses: state.misses,
            evictions: state.evictions,
        }
    }
}

impl State {
    /// Removes and returns the least recently used entry (there is one).
    fn evict_oldest(&mut self) -> Entry {
        let (&hash, index) = (self.buckets.iter())
            .flat_map(|(hash, bucket)| {
                bucket
                    .iter()
                    .enumerate()
                    .map(move |(i, e)| ((hash, i), e.used))
            })
            .min_by_key(|&(_, used)| used)
            .map(|((hash, i), _)| (hash, i))
            .expect("a full cache holds an entry");
        let bucket = self.buckets.get_mut(&hash).expect("its bucket");
        let entry = bucket.swap_remove(index);
        if bucket.is_empty() {
            self.buckets.remove(&hash);
        }
        self.len -= 1;
        self.evictions += 1;
        entry
    }
}
