//! A bounded plan cache: entries found by a hash of their key and checked
//! against it, the least recently used let go first.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use super::store::IdHasher;
use weft_core::CacheStats;

/// Plans of type `P` by key hash, at most `capacity` of them. One entry per
/// hash: a key that collides with another replaces it (a miss).
pub(crate) struct Cache<P> {
    entries: HashMap<u64, (P, u64), BuildHasherDefault<IdHasher>>,
    clock: u64,
    stats: CacheStats,
}

impl<P> Cache<P> {
    /// An empty cache of at most `capacity` plans (at least one).
    pub(crate) fn new(capacity: usize) -> Cache<P> {
        Cache {
            entries: HashMap::default(),
            clock: 0,
            stats: CacheStats {
                capacity: capacity.max(1),
                ..CacheStats::default()
            },
        }
    }

    /// The plan under `hash` if `matches` says it is this key's, else the
    /// one `make` compiles, kept (evicting the least recently used plan
    /// when the cache is full). A plan `make` fails to compile is not kept.
    pub(crate) fn get_or_make<E>(
        &mut self,
        hash: u64,
        matches: impl FnOnce(&P) -> bool,
        make: impl FnOnce() -> Result<P, E>,
    ) -> Result<&P, E> {
        self.clock += 1;
        let clock = self.clock;
        let hit = self
            .entries
            .get(&hash)
            .is_some_and(|(plan, _)| matches(plan));
        if hit {
            self.stats.hits += 1;
        } else {
            self.stats.misses += 1;
            let plan = make()?;
            if !self.entries.contains_key(&hash) && self.entries.len() >= self.stats.capacity {
                let oldest = self
                    .entries
                    .iter()
                    .min_by_key(|(_, (_, used))| *used)
                    .map(|(&h, _)| h)
                    .expect("a full cache has an entry");
                self.entries.remove(&oldest);
                self.stats.evictions += 1;
            }
            self.entries.insert(hash, (plan, clock));
        }
        let (plan, used) = self.entries.get_mut(&hash).expect("present");
        *used = clock;
        Ok(plan)
    }

    /// The counters.
    pub(crate) fn stats(&self) -> CacheStats {
        CacheStats {
            entries: self.entries.len(),
            ..self.stats
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bound_holds_and_the_least_recently_used_goes() {
        let mut cache: Cache<u32> = Cache::new(2);
        let get = |cache: &mut Cache<u32>, key: u64| {
            *cache
                .get_or_make(key, |&p| u64::from(p) == key, || Ok::<_, ()>(key as u32))
                .unwrap()
        };
        assert_eq!(get(&mut cache, 1), 1);
        assert_eq!(get(&mut cache, 2), 2);
        assert_eq!(get(&mut cache, 1), 1); // 2 is now the oldest
        assert_eq!(get(&mut cache, 3), 3); // evicts 2
        assert_eq!(get(&mut cache, 1), 1);
        let stats = cache.stats();
        assert_eq!(
            (stats.entries, stats.hits, stats.misses, stats.evictions),
            (2, 2, 3, 1)
        );
        // A key that does not match its hash's entry replaces it.
        let got = *cache.get_or_make(1, |_| false, || Ok::<_, ()>(9)).unwrap();
        assert_eq!(got, 9);
        assert_eq!(cache.stats().entries, 2);
        // A failed compile keeps nothing.
        assert!(cache.get_or_make(7, |_| false, || Err(())).is_err());
        assert_eq!(cache.stats().entries, 2);
    }
}
