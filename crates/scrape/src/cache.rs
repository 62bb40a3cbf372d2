//! A target's scrape cache: what the last scrapes learnt about each series
//! line, so that a scrape repeating the last one's series reads no labels
//! and allocates nothing per sample: a known line costs one hash of its
//! bytes, a comparison with the entry expected next (a table probe when
//! the order changed) and an append to the storage's series handle.
//!
//! A line is known by 120 bits of a 128-bit hash of its bytes (name and
//! `{...}` as the target wrote them), seeded at random once per process,
//! not by the bytes themselves; the hash's last 8 bits hold the entry's
//! flags (seen and appended by this scrape, appended by the last). A
//! cache entry is 32 bytes whatever the line's length, where keeping the
//! bytes (and, as Prometheus does, the final labels) cost several hundred
//! a series. Two lines of one target would have to share all 120 bits
//! for one's samples to go to the other's series: for a target of a
//! million lines the odds are below 10^-24, far below those of a memory
//! error, and a target cannot aim at a collision without knowing the
//! seed.
//!
//! Entries are kept in the order the target writes its lines
//! ([`crate::ordered`]): a scrape that repeats the last one's order finds
//! each line at the entry after the last one found.
//!
//! An entry holds the storage's handle on the series (after relabeling),
//! or nothing for a line relabeling dropped. The cache also knows which
//! series each scrape appended (for staleness): a series appended by the
//! previous scrape and not by this one gets a stale marker.
//!
//! Entries not seen by a successful scrape are forgotten after it; when
//! failing scrapes let the cache grow past twice its last successful size
//! (plus 1,000), it is cleaned anyway, as Prometheus does.

use std::sync::OnceLock;

use crate::metadata::SharedMetadata;
use crate::ordered::{Indexed, OrderedTable};
use crate::storage::SeriesHandle;

/// How many entries ahead of the line found the series are prefetched.
const PREFETCH_AHEAD: usize = 4;

/// A line's identity: the two halves of its 128-bit hash, the last 8
/// bits cleared (an entry keeps its [`Flags`] there).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineKey([u64; 2]);

/// The bits of a [`LineKey`] that hold an entry's flags.
const FLAG_BITS: u64 = 0xff;

impl LineKey {
    /// The key of a series line's bytes (name and `{...}` as written).
    pub fn of(line: &[u8]) -> LineKey {
        let h = xxhash_rust::xxh3::xxh3_128_with_seed(line, seed());
        LineKey([h as u64, (h >> 64) as u64 & !FLAG_BITS])
    }

    /// The table's hash: the low half (already uniform).
    fn table_hash(self) -> u64 {
        self.0[0]
    }
}

/// The process' hash seed (also of [`crate::metadata`]'s line hashes).
pub(crate) fn seed() -> u64 {
    static SEED: OnceLock<u64> = OnceLock::new();
    *SEED.get_or_init(|| {
        use std::hash::{BuildHasher, Hasher};
        // std's per-process random keys.
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(0x5eed);
        h.finish()
    })
}

/// An entry's flags (in its key's last bits).
struct Flags;

impl Flags {
    /// This scrape saw the line.
    const SEEN: u64 = 1;
    /// This scrape appended to its series with staleness tracked.
    const TRACKED: u64 = 2;
    /// The previous scrape did.
    const TRACKED_BEFORE: u64 = 4;
}

/// What the cache knows of one series line.
#[derive(Debug)]
struct CacheEntry {
    /// The line's key, and in its last bits the entry's [`Flags`].
    key_and_flags: [u64; 2],
    /// The storage's series (`None`: relabeling drops the line).
    series: Option<SeriesHandle>,
}

impl CacheEntry {
    fn key(&self) -> LineKey {
        let [a, b] = self.key_and_flags;
        LineKey([a, b & !FLAG_BITS])
    }

    fn has(&self, flag: u64) -> bool {
        self.key_and_flags[1] & flag != 0
    }

    fn set(&mut self, flag: u64) {
        self.key_and_flags[1] |= flag;
    }

    /// Ends a scrape for the entry: what it appended becomes what the
    /// previous scrape appended.
    fn next_scrape(&mut self) {
        let tracked = if self.has(Flags::TRACKED) {
            Flags::TRACKED_BEFORE
        } else {
            0
        };
        self.key_and_flags[1] = (self.key_and_flags[1] & !FLAG_BITS) | tracked;
    }
}

/// The cache of one target; see the module documentation.
#[derive(Default)]
pub struct ScrapeCache {
    /// The current scrape's number (from 1).
    iter: u32,
    /// The entries, in the order scrapes first saw their lines.
    entries: OrderedTable<CacheEntry>,
    /// The cache's size after the last successful scrape.
    successful_count: usize,
    /// The metric families' metadata (shared with the APIs).
    pub metadata: SharedMetadata,
}

impl Indexed for CacheEntry {
    fn index_hash(&self) -> u64 {
        self.key().table_hash()
    }
}

impl std::fmt::Debug for ScrapeCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScrapeCache")
            .field("iter", &self.iter)
            .field("entries", &self.len())
            .finish_non_exhaustive()
    }
}

/// What a lookup found.
pub enum Lookup<'c> {
    /// A line appended before.
    Series(Cached<'c>),
    /// A line relabeling drops.
    Dropped,
    /// A line the cache does not know; its key, for [`ScrapeCache::add`].
    Unknown(NewLine),
}

/// The key of a line the cache did not know.
#[derive(Debug, Clone, Copy)]
pub struct NewLine(LineKey);

/// A line found in the cache with its series.
pub struct Cached<'c> {
    /// Its series.
    pub series: &'c SeriesHandle,
    /// Whether this scrape saw the line before (a repeated line).
    pub already_scraped: bool,
    flags: &'c mut u64,
}

impl Cached<'_> {
    /// Marks the series as appended by this scrape, for staleness.
    pub fn track_staleness(&mut self) {
        *self.flags |= Flags::TRACKED;
    }
}

impl ScrapeCache {
    /// An empty cache.
    pub fn new() -> Self {
        ScrapeCache {
            iter: 1,
            ..ScrapeCache::default()
        }
    }

    /// The position of a line's entry.
    fn find(&self, key: LineKey) -> Option<usize> {
        self.entries.position(key.table_hash(), |e| e.key() == key)
    }

    /// Whether the cache knows the line of `key` (a line it knows is
    /// one a scrape read whole before).
    pub fn knows(&self, key: LineKey) -> bool {
        self.find(key).is_some()
    }

    /// What the cache knows of the line of `key`, marking it seen by
    /// this scrape.
    pub fn lookup(&mut self, key: LineKey) -> Lookup<'_> {
        let Some(i) = self.find(key) else {
            return Lookup::Unknown(NewLine(key));
        };
        // The lines to come are likely the entries after it: their series
        // are asked for ahead, so that their cache misses overlap this
        // line's work.
        if let Some(series) = self
            .entries
            .get(i + PREFETCH_AHEAD)
            .and_then(|e| e.series.as_ref())
        {
            series.prefetch();
        }
        let entry = self.entries.visit(i);
        let already_scraped = entry.has(Flags::SEEN);
        entry.set(Flags::SEEN);
        let CacheEntry {
            key_and_flags: [_, flags],
            series,
        } = entry;
        match series {
            None => Lookup::Dropped,
            Some(series) => Lookup::Series(Cached {
                series,
                already_scraped,
                flags,
            }),
        }
    }

    /// Remembers a line [`ScrapeCache::lookup`] did not know: appended to
    /// `series` for the first time (`track`: by this scrape, for
    /// staleness), or dropped by relabeling (`None`).
    pub fn add(&mut self, line: NewLine, series: Option<SeriesHandle>, track: bool) {
        let key = line.0;
        let [a, b] = key.0;
        let flags = Flags::SEEN | if track { Flags::TRACKED } else { 0 };
        let entry = CacheEntry {
            key_and_flags: [a, b | flags],
            series,
        };
        match self.find(key) {
            Some(i) => self.entries.set(i, entry),
            None => {
                self.entries.push(entry);
            }
        }
    }

    /// The series the previous scrape appended and this one did not: the
    /// ones to mark stale.
    pub fn stale(&self) -> impl Iterator<Item = &SeriesHandle> {
        self.entries
            .items()
            .iter()
            .filter(|e| e.has(Flags::TRACKED_BEFORE) && !e.has(Flags::TRACKED))
            .filter_map(|e| e.series.as_ref())
    }

    /// The current scrape's number.
    pub fn iter(&self) -> u32 {
        self.iter
    }

    /// Ends a scrape: after a successful one (or when failures let the
    /// cache grow too much), forgets the lines it did not see. Returns
    /// whether a failed scrape's growth forced that.
    pub fn iter_done(&mut self, successful: bool) -> bool {
        let count = self.len();
        let forced = !successful && count > self.successful_count * 2 + 1000;
        let flush = successful || forced;
        if successful {
            self.successful_count = count;
        }
        if flush {
            self.entries.retain(|e| e.has(Flags::SEEN));
            self.metadata
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .forget_old(self.iter);
        }
        for e in self.entries.items_mut() {
            e.next_scrape();
        }
        self.iter += 1;
        forced
    }

    /// The number of lines cached (series and dropped).
    pub fn len(&self) -> usize {
        self.entries.items().len()
    }

    /// Whether nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn handle(n: u64) -> SeriesHandle {
        SeriesHandle::new(Arc::new(n))
    }

    fn series_of(c: &mut ScrapeCache, line: &[u8]) -> Option<u64> {
        match c.lookup(LineKey::of(line)) {
            Lookup::Series(s) => s.series.with(|n: &Arc<u64>| **n),
            _ => None,
        }
    }

    #[test]
    fn lines_known_by_their_bytes_forgotten_when_a_scrape_misses_them() {
        let mut c = ScrapeCache::new();
        let Lookup::Unknown(a) = c.lookup(LineKey::of(b"a{x=\"1\"}")) else {
            panic!("new line")
        };
        c.add(a, Some(handle(1)), true);
        let Lookup::Unknown(d) = c.lookup(LineKey::of(b"dropped")) else {
            panic!("new line")
        };
        c.add(d, None, false);
        assert!(matches!(c.lookup(LineKey::of(b"dropped")), Lookup::Dropped));
        assert!(matches!(
            c.lookup(LineKey::of(b"a{x=\"2\"}")),
            Lookup::Unknown(_)
        ));
        c.iter_done(true);
        assert_eq!(c.len(), 2);

        // Scrape 2 sees `a` twice, not `dropped`.
        match c.lookup(LineKey::of(b"a{x=\"1\"}")) {
            Lookup::Series(s) => assert!(!s.already_scraped),
            _ => panic!("cached"),
        }
        match c.lookup(LineKey::of(b"a{x=\"1\"}")) {
            Lookup::Series(s) => assert!(s.already_scraped),
            _ => panic!("cached"),
        }
        assert_eq!(series_of(&mut c, b"a{x=\"1\"}"), Some(1));
        // Not tracked by scrape 2: stale.
        assert_eq!(c.stale().count(), 1);
        c.iter_done(true);
        assert_eq!(c.len(), 1);
        assert!(matches!(
            c.lookup(LineKey::of(b"dropped")),
            Lookup::Unknown(_)
        ));
    }

    #[test]
    fn failed_scrapes_keep_the_cache_until_it_grows_too_much() {
        let mut c = ScrapeCache::new();
        for i in 0..10u64 {
            let line = format!("m{i}");
            let Lookup::Unknown(k) = c.lookup(LineKey::of(line.as_bytes())) else {
                panic!("new")
            };
            c.add(k, Some(handle(i)), true);
        }
        c.iter_done(true);
        c.iter_done(false);
        assert_eq!(c.len(), 10);
        for i in 0..1100u64 {
            let line = format!("n{i}");
            let Lookup::Unknown(k) = c.lookup(LineKey::of(line.as_bytes())) else {
                panic!("new")
            };
            c.add(k, Some(handle(i)), true);
        }
        // 1,110 > 2 x 10 + 1,000: cleaned, keeping this scrape's lines.
        c.iter_done(false);
        assert_eq!(c.len(), 1100);
        assert_eq!(series_of(&mut c, b"n7"), Some(7));
    }

    #[test]
    fn lines_in_another_order_and_new_lines_between_are_found() {
        let mut c = ScrapeCache::new();
        let lines: Vec<String> = (0..50).map(|i| format!("m{{i=\"{i}\"}}")).collect();
        for (i, l) in lines.iter().enumerate() {
            let Lookup::Unknown(k) = c.lookup(LineKey::of(l.as_bytes())) else {
                panic!("new")
            };
            c.add(k, Some(handle(i as u64)), true);
        }
        c.iter_done(true);
        // Reversed, every other line, with new ones between.
        for (i, l) in lines.iter().enumerate().rev().step_by(2) {
            assert_eq!(series_of(&mut c, l.as_bytes()), Some(i as u64), "{l}");
            let new = format!("n{i}");
            let Lookup::Unknown(k) = c.lookup(LineKey::of(new.as_bytes())) else {
                panic!("new")
            };
            c.add(k, Some(handle(1000 + i as u64)), true);
        }
        c.iter_done(true);
        assert_eq!(c.len(), 50);
        for (i, l) in lines.iter().enumerate() {
            let want = (i % 2 == 1).then_some(i as u64);
            assert_eq!(series_of(&mut c, l.as_bytes()), want, "{l}");
            if i % 2 == 1 {
                assert_eq!(
                    series_of(&mut c, format!("n{i}").as_bytes()),
                    Some(1000 + i as u64)
                );
            }
        }
    }

    #[test]
    fn an_entry_is_small() {
        assert!(std::mem::size_of::<CacheEntry>() <= 32);
    }
}
