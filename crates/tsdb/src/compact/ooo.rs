//! Out-of-order compaction: moving the head's out-of-order samples into
//! blocks, as Prometheus' `compactOOOHead` does.
//!
//! 1. The WBL moves to a new segment: the segments before it hold only
//!    samples that step 2 puts on disk.
//! 2. Every series' in-memory out-of-order chunk is written to
//!    `chunks_head/`; the newest chunk ref written or found is remembered.
//! 3. For each block range (the head's chunk range, 2 h by default) that
//!    the out-of-order chunks up to that ref touch, a level-1 block marked
//!    `from-out-of-order` is written: per series, the samples of its
//!    out-of-order chunks in the range, merged by time (one per timestamp)
//!    and encoded again, deleted samples left out.
//! 4. The caller ([`crate::Db`]) makes the blocks visible, then drops those
//!    chunks from the head ([`OooCompaction::truncate_head`]) and the WBL
//!    segments before step 1's.
//!
//! The blocks may overlap in-order blocks: vertical compaction merges them
//! next. A crash before step 4 completes leaves the samples both in the
//! new blocks and in the head (replayed from `chunks_head/` and the WBL):
//! doubled, never lost, and merged away by time as any overlap is.

use std::path::Path;

use ferrite_block::meta::{BlockMeta, Compaction, HINT_FROM_OUT_OF_ORDER};
use ferrite_model::{Labels, SampleValue};

use super::{head_symbols, sort_by_labels, CompactError};
use crate::block::{write_block_from, BlockChunk, BlockError, SeriesSource};
use crate::head::registry::SeriesEntry;
use crate::head::Head;
use crate::head_chunks::ChunkDiskMapperRef;
use crate::sample::{BuiltChunk, ChunkBuilder, ChunkDecoder, SampleRef};

/// What an out-of-order compaction wrote, and what to drop afterwards.
pub struct OooCompaction {
    /// The blocks written, oldest first.
    pub blocks: Vec<BlockMeta>,
    /// Chunks up to this ref are in the blocks.
    last_mmap_ref: ChunkDiskMapperRef,
    /// WBL segments before this one are in the blocks.
    pub wbl_segment: Option<u32>,
    /// The series compacted.
    entries: Vec<(u64, SeriesEntry)>,
    /// Per series ref, how many of its in-memory (unwritable) chunks are
    /// in the blocks: later ones came after the compaction started.
    unmapped: UnmappedCounts,
}

type UnmappedCounts = std::collections::HashMap<u64, usize, foldhash::fast::RandomState>;

impl OooCompaction {
    /// Drops the compacted chunks from the head's series and recomputes
    /// the head's out-of-order time range.
    pub fn truncate_head(&self, head: &Head) {
        for (r, e) in &self.entries {
            let unmapped = self.unmapped.get(r).copied().unwrap_or(0);
            e.data
                .lock()
                .drop_compacted_ooo(self.last_mmap_ref, unmapped);
        }
        head.recompute_ooo_time_range();
    }
}

/// Writes the head's out-of-order samples into blocks in `dir` (see the
/// module doc). `None` when the head holds no out-of-order sample.
pub fn compact_ooo_head(
    head: &Head,
    dir: &Path,
    bytes_per_sec: Option<u64>,
) -> Result<Option<OooCompaction>, CompactError> {
    if head.out_of_order_time_range().is_none() {
        return Ok(None);
    }
    let wbl_segment = match head.wbl.lock().as_mut() {
        Some(w) => Some(w.next_segment().map_err(crate::error::HeadError::from)?),
        None => None,
    };
    let (mut entries, last_mmap_ref, unmapped) = mmap_all(head);
    let Some((mint, maxt)) = time_range(&entries, last_mmap_ref, &unmapped) else {
        return Ok(None);
    };
    sort_by_labels(head, &mut entries);
    let range = head.options().chunk_range;
    let mut blocks = Vec::new();
    let mut start = mint.div_euclid(range) * range;
    while start <= maxt {
        let mut source = OooSource {
            head,
            entries: &entries,
            next: 0,
            mint: start,
            last: start + range - 1,
            last_mmap_ref,
            unmapped: &unmapped,
            failure: None,
        };
        let compaction = Compaction {
            level: 1,
            hints: vec![HINT_FROM_OUT_OF_ORDER.to_string()],
            ..Compaction::default()
        };
        let meta = write_block_from(
            dir,
            start,
            start + range,
            compaction,
            &mut source,
            bytes_per_sec,
        );
        if let Some(e) = source.failure {
            remove_written(dir, &blocks);
            return Err(e);
        }
        match meta {
            Ok(Some(m)) => blocks.push(m),
            Ok(None) => {}
            Err(e) => {
                remove_written(dir, &blocks);
                return Err(e.into());
            }
        }
        start += range;
    }
    Ok(Some(OooCompaction {
        blocks,
        last_mmap_ref,
        wbl_segment,
        entries,
        unmapped,
    }))
}

/// Best-effort removal of the blocks of a compaction that failed.
fn remove_written(dir: &Path, blocks: &[BlockMeta]) {
    for m in blocks {
        let _ = std::fs::remove_dir_all(dir.join(m.ulid.to_string()));
    }
}

/// Writes every series' in-memory out-of-order chunk to `chunks_head/`;
/// returns the series with out-of-order chunks, the newest chunk ref among
/// them, and how many chunks each keeps in memory (writes that failed).
fn mmap_all(head: &Head) -> (Vec<(u64, SeriesEntry)>, ChunkDiskMapperRef, UnmappedCounts) {
    let refs: Vec<u64> = head.postings.read().all().to_vec();
    let float_encoding = head.chunk_opts.float_encoding;
    let mut entries = Vec::new();
    let mut last = ChunkDiskMapperRef(0);
    let mut unmapped = UnmappedCounts::default();
    for r in refs {
        let Some(entry) = head.series.get(r) else {
            continue;
        };
        let has = {
            let mut d = entry.data.lock();
            if d.ooo().is_none() {
                continue;
            }
            d.mmap_ooo_head(r, float_encoding, &head.mapper);
            let newest = d.ooo().and_then(|o| o.mmapped.last());
            if let Some(c) = newest {
                last = last.max(c.chunk_ref);
            }
            let kept = d.ooo().map_or(0, |o| o.unmapped.len());
            if kept > 0 {
                unmapped.insert(r, kept);
            }
            d.has_ooo()
        };
        if has {
            entries.push((r, entry));
        }
    }
    (entries, last, unmapped)
}

/// The time range of the chunks to compact.
fn time_range(
    entries: &[(u64, SeriesEntry)],
    last: ChunkDiskMapperRef,
    unmapped: &UnmappedCounts,
) -> Option<(i64, i64)> {
    let mut range: Option<(i64, i64)> = None;
    for (r, e) in entries {
        let d = e.data.lock();
        let Some(ooo) = d.ooo() else {
            continue;
        };
        let mmapped = ooo
            .mmapped
            .iter()
            .filter(|c| c.chunk_ref <= last)
            .map(|c| (c.mint, c.maxt));
        let kept = unmapped.get(r).copied().unwrap_or(0);
        let unmapped = ooo.unmapped.iter().take(kept).map(|c| (c.mint, c.maxt));
        for (a, b) in mmapped.chain(unmapped) {
            range = Some(match range {
                None => (a, b),
                Some((x, y)) => (x.min(a), y.max(b)),
            });
        }
    }
    range
}

/// The out-of-order samples of the compacted series in one block range.
struct OooSource<'h> {
    head: &'h Head,
    entries: &'h [(u64, SeriesEntry)],
    next: usize,
    mint: i64,
    last: i64,
    last_mmap_ref: ChunkDiskMapperRef,
    unmapped: &'h UnmappedCounts,
    failure: Option<CompactError>,
}

impl SeriesSource for OooSource<'_> {
    fn symbols(&mut self) -> Result<Vec<String>, BlockError> {
        Ok(head_symbols(self.head, self.entries))
    }

    fn next_series(
        &mut self,
        labels: &mut Labels,
        chunks: &mut Vec<BlockChunk>,
    ) -> Result<bool, BlockError> {
        let Some((r, entry)) = self.entries.get(self.next) else {
            return Ok(false);
        };
        self.next += 1;
        *labels = self.head.resolve_labels(entry.labels());
        let deleted = self.head.tombstones_of(*r);
        let unmapped = self.unmapped.get(r).copied().unwrap_or(0);
        match self.samples_in_range(entry, &deleted, unmapped) {
            Ok(samples) => {
                encode(&samples, self.head.chunk_opts.float_encoding, chunks);
                Ok(true)
            }
            Err(detail) => {
                self.failure = Some(CompactError::HeadChunk {
                    series: labels.to_string(),
                    detail,
                });
                Err(BlockError::Io {
                    path: self.head.mapper.dir().to_owned(),
                    source: std::io::Error::other("out-of-order head chunk unreadable"),
                })
            }
        }
    }
}

impl OooSource<'_> {
    /// The series' compacted out-of-order samples in range, not deleted,
    /// sorted by time, one per timestamp (the first chunk's).
    fn samples_in_range(
        &self,
        entry: &SeriesEntry,
        deleted: &[(i64, i64)],
        unmapped: usize,
    ) -> Result<Vec<(i64, SampleValue)>, String> {
        let (mint, last) = (self.mint, self.last);
        let d = entry.data.lock();
        let Some(ooo) = d.ooo() else {
            return Ok(Vec::new());
        };
        let mut out: Vec<(i64, SampleValue)> = Vec::new();
        let mut decoder = ChunkDecoder::new();
        let mut take = |t: i64, v: SampleRef<'_>| {
            if t >= mint && t <= last && !deleted.iter().any(|&(a, b)| t >= a && t <= b) {
                out.push((t, v.to_owned_value()));
            }
            t <= last
        };
        for c in &ooo.mmapped {
            if c.chunk_ref > self.last_mmap_ref || c.maxt < mint || c.mint > last {
                continue;
            }
            let bytes = self
                .head
                .mapper
                .chunk(c.chunk_ref)
                .map_err(|e| e.to_string())?;
            decoder
                .for_each(c.encoding as u8, &bytes, &mut take)
                .map_err(|e| e.to_string())?;
        }
        for c in ooo.unmapped.iter().take(unmapped) {
            if c.maxt >= mint && c.mint <= last {
                decoder
                    .for_each(c.encoding as u8, &c.bytes, &mut take)
                    .map_err(|e| e.to_string())?;
            }
        }
        // Stable: the first chunk's sample wins a shared timestamp.
        out.sort_by_key(|s| s.0);
        out.dedup_by_key(|s| s.0);
        Ok(out)
    }
}

/// Encodes sorted samples into block chunks as Prometheus' merging
/// encoder does (at most 120 samples a chunk, a new one per kind change).
fn encode(
    samples: &[(i64, SampleValue)],
    float_encoding: ferrite_chunkenc::Encoding,
    out: &mut Vec<BlockChunk>,
) {
    let mut builder = ChunkBuilder::new().with_float_encoding(float_encoding);
    let mut emit = |c: BuiltChunk| out.push(c.into());
    for (t, v) in samples {
        builder.push(*t, SampleRef::of(v), &mut emit);
    }
    builder.finish(&mut emit);
}
