//! A target's scrape cache: what the last scrapes learnt about each series
//! line, so that a scrape repeating the last one's series reads no labels,
//! hashes nothing and allocates nothing per sample.
//!
//! Keys are a series' bytes as the target wrote them (name and `{...}`),
//! values the storage's ref and the final labels (after relabeling).
//! Lines that relabeling dropped are remembered too. The cache also knows
//! which series each scrape appended (for staleness): a series appended by
//! the previous scrape and not by this one gets a stale marker.
//!
//! Entries not seen by a successful scrape are forgotten after it; when
//! failing scrapes let the cache grow past twice its last successful size
//! (plus 1,000), it is cleaned anyway, as Prometheus does.

use std::collections::HashMap;

use ferrite_model::Labels;

use crate::metadata::SharedMetadata;

type Map<V> = HashMap<Box<[u8]>, V, foldhash::fast::RandomState>;

/// What the cache knows of one series line.
#[derive(Debug)]
pub struct CacheEntry {
    /// The storage's ref for the series (0: none yet).
    pub series_ref: u64,
    /// The series' labels after relabeling.
    pub labels: Labels,
    /// The last scrape that saw the line.
    last_iter: u64,
    /// The last scrape that appended to it with staleness tracked.
    tracked_iter: u64,
}

/// The cache of one target; see the module documentation.
#[derive(Debug, Default)]
pub struct ScrapeCache {
    /// The current scrape's number (from 1).
    iter: u64,
    series: Map<CacheEntry>,
    /// Lines dropped by relabeling, with the last scrape that saw them.
    dropped: Map<u64>,
    /// The cache's size after the last successful scrape.
    successful_count: usize,
    /// The metric families' metadata (shared with the APIs).
    pub metadata: SharedMetadata,
}

/// A line found in the cache.
pub struct Cached<'c> {
    /// Its entry.
    pub entry: &'c mut CacheEntry,
    /// Whether this scrape saw the line before (a repeated line).
    pub already_scraped: bool,
    iter: u64,
}

impl Cached<'_> {
    /// Marks the series as appended by this scrape, for staleness.
    pub fn track_staleness(&mut self) {
        self.entry.tracked_iter = self.iter;
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

    /// The entry of a line, marking it seen by this scrape.
    pub fn get(&mut self, key: &[u8]) -> Option<Cached<'_>> {
        let iter = self.iter;
        let entry = self.series.get_mut(key)?;
        let already_scraped = entry.last_iter == iter;
        entry.last_iter = iter;
        Some(Cached {
            entry,
            already_scraped,
            iter,
        })
    }

    /// Whether relabeling dropped the line (marking it seen).
    pub fn is_dropped(&mut self, key: &[u8]) -> bool {
        match self.dropped.get_mut(key) {
            Some(iter) => {
                *iter = self.iter;
                true
            }
            None => false,
        }
    }

    /// Remembers that relabeling drops the line.
    pub fn add_dropped(&mut self, key: &[u8]) {
        self.dropped.insert(key.into(), self.iter);
    }

    /// Adds a line appended for the first time; `track`: as appended by
    /// this scrape, for staleness.
    pub fn add(&mut self, key: &[u8], series_ref: u64, labels: Labels, track: bool) {
        let entry = CacheEntry {
            series_ref,
            labels,
            last_iter: self.iter,
            tracked_iter: if track { self.iter } else { 0 },
        };
        self.series.insert(key.into(), entry);
    }

    /// The series the previous scrape appended and this one did not: the
    /// ones to mark stale.
    pub fn stale(&self) -> impl Iterator<Item = &CacheEntry> {
        let prev = self.iter - 1;
        self.series
            .values()
            .filter(move |e| prev > 0 && e.tracked_iter == prev)
    }

    /// The current scrape's number.
    pub fn iter(&self) -> u64 {
        self.iter
    }

    /// Ends a scrape: after a successful one (or when failures let the
    /// cache grow too much), forgets the lines it did not see.
    pub fn iter_done(&mut self, successful: bool) {
        let count = self.series.len() + self.dropped.len();
        let flush = successful || count > self.successful_count * 2 + 1000;
        if successful {
            self.successful_count = count;
        }
        if flush {
            let iter = self.iter;
            self.series.retain(|_, e| e.last_iter == iter);
            self.dropped.retain(|_, seen| *seen == iter);
            self.metadata
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .forget_old(iter);
        }
        self.iter += 1;
    }

    /// The number of lines cached (series and dropped).
    pub fn len(&self) -> usize {
        self.series.len() + self.dropped.len()
    }

    /// Whether nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
