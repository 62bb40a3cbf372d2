//! Bounded caches of what a query compiles: parsed expressions (in
//! `ferrite-promql`) and anchored regexes ([`crate::matcher`]).
//!
//! Dashboards send the same queries again and again, and parsing a query
//! with a regex matcher compiles that regex (the parser compiles its
//! anchored form into the selector's matcher). Compiling a small regex into a DFA
//! takes longer than selecting and answering a thousand series, so both are
//! kept, keyed by their text. A cache holds at most `cap` entries; when it
//! is full, an arbitrary entry makes room. Failures are not kept, and
//! neither are texts longer than `max_key` bytes (what a long regex compiles
//! to can be large, and dashboards' queries are short).

use std::collections::HashMap;
use std::sync::Mutex;

/// A map of at most `cap` entries keyed by text, safe to share.
pub struct BoundedCache<V> {
    map: Mutex<HashMap<String, V>>,
    cap: usize,
    max_key: usize,
}

impl<V: Clone> BoundedCache<V> {
    /// An empty cache of at most `cap` entries, keeping keys of at most
    /// `max_key` bytes.
    pub fn new(cap: usize, max_key: usize) -> Self {
        BoundedCache {
            map: Mutex::new(HashMap::new()),
            cap: cap.max(1),
            max_key,
        }
    }

    /// The value kept for `key`, or `make()`'s, kept if it is `Ok`. `make`
    /// runs outside the lock.
    pub fn get_or_try_insert<E>(
        &self,
        key: &str,
        make: impl FnOnce() -> Result<V, E>,
    ) -> Result<V, E> {
        if key.len() > self.max_key {
            return make();
        }
        if let Some(v) = self.lock().get(key) {
            return Ok(v.clone());
        }
        let v = make()?;
        let mut map = self.lock();
        if map.len() >= self.cap && !map.contains_key(key) {
            if let Some(victim) = map.keys().next().cloned() {
                map.remove(&victim);
            }
        }
        map.insert(key.to_owned(), v.clone());
        Ok(v)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, V>> {
        // A panic while holding the lock leaves a consistent map.
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_values_and_not_failures() {
        let c = BoundedCache::new(2, 8);
        let mut calls = 0;
        for _ in 0..3 {
            let v: Result<u32, ()> = c.get_or_try_insert("a", || {
                calls += 1;
                Ok(7)
            });
            assert_eq!(v, Ok(7));
        }
        assert_eq!(calls, 1);
        let e: Result<u32, &str> = c.get_or_try_insert("bad", || Err("no"));
        assert_eq!(e, Err("no"));
        assert_eq!(c.len(), 1);
        let long: Result<u32, ()> = c.get_or_try_insert("123456789", || Ok(1));
        assert_eq!(long, Ok(1));
        assert_eq!(c.len(), 1);
    }

    #[test]
    fn stays_within_its_bound() {
        let c = BoundedCache::new(3, 8);
        for i in 0..10u32 {
            let v: Result<u32, ()> = c.get_or_try_insert(&i.to_string(), || Ok(i));
            assert_eq!(v, Ok(i));
            assert!(c.len() <= 3);
        }
        // The newest entry is always kept.
        let v: Result<u32, ()> = c.get_or_try_insert("9", || Ok(99));
        assert_eq!(v, Ok(9));
    }
}
