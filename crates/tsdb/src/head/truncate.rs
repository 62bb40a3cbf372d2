//! Dropping what a block now holds from the head: chunks, empty series, head
//! chunk files, and the WAL segments before a checkpoint.
//!
//! Runs after the block is safely on disk, in Prometheus' order: memory
//! first (so the checkpoint knows which series survive), then the WAL. A
//! crash in between loses nothing: on restart, replay drops WAL samples and
//! head chunks older than the newest block (its max time becomes the head's
//! minimum valid time), so nothing is doubled either.

use std::sync::atomic::Ordering;
use std::time::Instant;

use ferrite_wal::checkpoint::{delete_checkpoints, write_checkpoint};
use ferrite_wal::list_segments;
use tracing::{info, warn};

use super::registry::SeriesRegistry;
use super::Head;
use crate::error::HeadError;

/// What a memory truncation removed.
#[derive(Debug, Default, Clone, Copy)]
pub struct TruncateStats {
    pub series_removed: u64,
    pub chunk_files_before: u32,
}

impl Head {
    /// Drops chunks entirely before `mint`, removes series left empty (unless
    /// an appender is using them) and deletes head chunk files nothing
    /// refers to any more. Samples before `mint` are refused from now on.
    pub fn truncate_memory(&self, mint: i64) -> Result<TruncateStats, HeadError> {
        let started = Instant::now();
        let result = self.collect_garbage(mint);
        self.stats
            .timings
            .gc_duration
            .observe(started.elapsed().as_secs_f64());
        result
    }

    /// [`Head::truncate_memory`]'s work (Prometheus' head GC).
    fn collect_garbage(&self, mint: i64) -> Result<TruncateStats, HeadError> {
        self.min_valid_time.fetch_max(mint, Ordering::AcqRel);
        let refs: Vec<u64> = self.postings.read().all().to_vec();
        let mut removed = Vec::new();
        let mut min_seq = u32::MAX;
        for r in refs {
            let Some(entry) = self.series.get(r) else {
                continue;
            };
            let alive = {
                let mut d = entry.data.lock();
                let alive = d.truncate_chunks_before(mint);
                min_seq = min_seq.min(d.first_chunk_file());
                alive
            };
            if alive {
                continue;
            }
            // Ours and the registry's references only: no appender holds it.
            let gone = self.series.remove_if(&entry, |e| {
                e.holders() == SeriesRegistry::HELD_REFS + 1
                    && !e.data.lock().truncate_chunks_before(mint)
            });
            if gone {
                removed.push(r);
            }
        }
        if !removed.is_empty() {
            removed.sort_unstable();
            self.postings
                .write()
                .remove_if(|r| removed.binary_search(&r).is_ok());
            let segment = self.wal.lock().as_ref().map_or(0, |w| w.current_segment());
            let mut deleted = self.deleted.lock();
            for &r in &removed {
                deleted.insert(r, segment);
            }
            let mut stones = self.tombstones.write();
            for r in &removed {
                stones.remove(r);
            }
        }
        let keep_from = self.truncate_chunk_files_before(min_seq)?;
        // As Prometheus: the head starts at the truncation point, so the
        // next block persisted from it starts there too.
        self.min_time.store(mint, Ordering::Release);
        if self.series.len() == 0 {
            self.max_time.store(i64::MIN, Ordering::Release);
            self.min_time.store(i64::MAX, Ordering::Release);
        }
        Ok(TruncateStats {
            series_removed: removed.len() as u64,
            chunk_files_before: keep_from,
        })
    }

    /// Deletes the head chunk files no series refers to any more (after
    /// out-of-order compaction dropped chunks).
    pub(crate) fn truncate_unreferenced_chunk_files(&self) -> Result<u32, HeadError> {
        let refs: Vec<u64> = self.postings.read().all().to_vec();
        let mut min_seq = u32::MAX;
        for r in refs {
            let Some(entry) = self.series.get(r) else {
                continue;
            };
            min_seq = min_seq.min(entry.data.lock().first_chunk_file());
        }
        self.truncate_chunk_files_before(min_seq)
    }

    /// Deletes the head chunk files before `min_seq`, the oldest one still
    /// referenced (`u32::MAX`: none is; the newest file is kept, it may be
    /// the one being written). Returns the first file kept.
    fn truncate_chunk_files_before(&self, min_seq: u32) -> Result<u32, HeadError> {
        let keep_from = if min_seq == u32::MAX {
            self.mapper.files().last().copied().unwrap_or(0)
        } else {
            min_seq
        };
        self.mapper.truncate_before(keep_from)?;
        Ok(keep_from)
    }

    /// Checkpoints the older two thirds of the WAL segments (keeping series
    /// still in the head and samples at or after `mint`) and deletes them, as
    /// Prometheus' head does after a compaction. The writer moves to a new
    /// segment first, so the checkpoint never covers the active one.
    /// A truncation that checkpointed is timed
    /// (`prometheus_tsdb_wal_truncate_duration_seconds`).
    pub fn truncate_wal(&self, mint: i64) -> Result<(), HeadError> {
        let started = Instant::now();
        let mut wal = self.wal.lock();
        let Some(w) = wal.as_mut() else {
            return Ok(());
        };
        let dir = w.dir().to_owned();
        let segs = list_segments(&dir)?;
        let (Some(first), Some(last)) = (segs.first(), segs.last()) else {
            return Ok(());
        };
        let (first, last) = (first.index, last.index);
        w.next_segment()?;
        let Some(last) = last.checked_sub(1) else {
            return Ok(());
        };
        let last = first + (last.saturating_sub(first)) * 2 / 3;
        if last <= first {
            return Ok(());
        }
        let opts = w.options().clone();
        drop(wal);
        let deleted = self.deleted.lock().clone();
        let keep = |r: u64| -> bool {
            self.series.get(r).is_some() || deleted.get(&r).is_some_and(|&seg| seg > last)
        };
        let stats = write_checkpoint(&dir, first, last, &keep, mint, opts)?;
        if let Some(w) = self.wal.lock().as_mut() {
            w.truncate(last + 1)?;
        }
        if let Err(e) = delete_checkpoints(&dir, last) {
            warn!(error = %e, "deleting old WAL checkpoints failed");
        }
        self.deleted.lock().retain(|_, seg| *seg > last);
        info!(
            first,
            last,
            series = stats.kept_series(),
            samples = stats.kept_samples(),
            "WAL checkpoint written"
        );
        self.stats
            .timings
            .wal_truncate_duration
            .observe(started.elapsed().as_secs_f64());
        Ok(())
    }
}
