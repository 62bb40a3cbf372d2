//! Compaction: turning the head's oldest range into a block, and merging
//! blocks into larger ones (leveled, and vertical for overlaps).
//!
//! Head compaction copies the head's chunks as they are: the head never lets
//! a chunk cross a chunk-range boundary (2 h by default), so every chunk
//! belongs to exactly one block range and no sample is re-encoded. Only a
//! chunk straddling the range (possible after a change of block range) is
//! cut, by re-encoding its samples inside the range.

pub mod planner;

use std::path::Path;
use std::sync::Arc;

use ferrite_block::meta::{BlockDesc, BlockMeta, Compaction};
use ferrite_chunkenc::{XorChunk, XorIterator};
use ferrite_index::ChunkMeta;

use crate::block::{write_block_limited, Block, BlockChunk, BlockError};
use crate::head::registry::SeriesEntry;
use crate::head::Head;
use crate::labels::Labels;

/// Failure of a compaction.
#[derive(Debug, thiserror::Error)]
pub enum CompactError {
    #[error(transparent)]
    Block(#[from] BlockError),
    #[error(transparent)]
    Head(#[from] crate::error::HeadError),
    #[error("reading head chunk of {series}: {detail}")]
    HeadChunk { series: String, detail: String },
    #[error("planning: {0}")]
    Plan(String),
}

/// Persists the head's samples in [mint, maxt) as a level-1 block in
/// `dir`. Returns `None` when the range holds no sample.
/// `bytes_per_sec` caps the chunk write rate (`None`: as fast as possible).
pub fn persist_head_range(
    head: &Head,
    dir: &Path,
    mint: i64,
    maxt: i64,
    bytes_per_sec: Option<u64>,
) -> Result<Option<BlockMeta>, CompactError> {
    let last = maxt - 1;
    let refs: Vec<u64> = head.postings.read().all().to_vec();
    let mut series: Vec<(Labels, Arc<SeriesEntry>)> = Vec::new();
    for r in refs {
        let Some(entry) = head.series.get(r) else {
            continue;
        };
        let in_range = {
            let d = entry.data.lock();
            d.mmapped.iter().any(|c| c.maxt >= mint && c.mint <= last)
                || d.unmapped
                    .iter()
                    .flat_map(|u| u.iter())
                    .any(|c| c.maxt >= mint && c.mint <= last)
                || d.open
                    .as_ref()
                    .is_some_and(|c| c.chunk.num_samples() > 0 && c.maxt >= mint && c.mint <= last)
        };
        if in_range {
            series.push((head.resolve_labels(&entry.labels), entry));
        }
    }
    series.sort_by(|a, b| a.0.cmp(&b.0));
    let labels: Vec<Labels> = series.iter().map(|(l, _)| l.clone()).collect();
    let mut failure: Option<CompactError> = None;
    let meta = write_block_limited(
        dir,
        mint,
        maxt,
        Compaction {
            level: 1,
            ..Compaction::default()
        },
        &labels,
        bytes_per_sec,
        |i, out| {
            if let Err(e) = head_chunks_in_range(head, &series[i], mint, last, out) {
                failure = Some(e);
                // Stop the write; the error is reported below.
                return Err(BlockError::Io {
                    path: dir.to_owned(),
                    source: std::io::Error::other("head chunk unreadable"),
                });
            }
            Ok(())
        },
    );
    if let Some(e) = failure {
        return Err(e);
    }
    Ok(meta?)
}

/// The chunks of one head series within [mint, last], oldest first.
fn head_chunks_in_range(
    head: &Head,
    (labels, entry): &(Labels, Arc<SeriesEntry>),
    mint: i64,
    last: i64,
    out: &mut Vec<BlockChunk>,
) -> Result<(), CompactError> {
    let d = entry.data.lock();
    let mut push = |bytes: &[u8], cmin: i64, cmax: i64| -> Result<(), CompactError> {
        if cmax < mint || cmin > last {
            return Ok(());
        }
        if cmin >= mint && cmax <= last {
            out.push(BlockChunk {
                mint: cmin,
                maxt: cmax,
                data: bytes.to_vec(),
            });
            return Ok(());
        }
        // Straddles the range: keep the samples inside it.
        let mut c = XorChunk::new();
        let (mut lo, mut hi) = (i64::MAX, i64::MIN);
        let mut it = XorIterator::new(bytes);
        for (t, v) in it.by_ref() {
            if t >= mint && t <= last {
                c.append(t, v);
                lo = lo.min(t);
                hi = hi.max(t);
            }
        }
        if let Some(e) = it.error() {
            return Err(CompactError::HeadChunk {
                series: labels.to_string(),
                detail: e.to_string(),
            });
        }
        if c.num_samples() > 0 {
            out.push(BlockChunk {
                mint: lo,
                maxt: hi,
                data: c.into_bytes(),
            });
        }
        Ok(())
    };
    for c in &d.mmapped {
        if c.maxt < mint || c.mint > last {
            continue;
        }
        let bytes = head
            .mapper
            .chunk(c.chunk_ref)
            .map_err(|e| CompactError::HeadChunk {
                series: labels.to_string(),
                detail: e.to_string(),
            })?;
        push(&bytes, c.mint, c.maxt)?;
    }
    for c in d.unmapped.iter().flat_map(|u| u.iter()) {
        push(&c.bytes, c.mint, c.maxt)?;
    }
    if let Some(c) = &d.open {
        if c.chunk.num_samples() > 0 {
            push(c.chunk.bytes(), c.mint, c.maxt)?;
        }
    }
    out.sort_by_key(|c| c.mint);
    Ok(())
}

/// Rewrites one block without its deleted samples (clean tombstones): same
/// time range and compaction level, the old block as its parent.
pub fn rewrite_block(
    dir: &Path,
    block: &Arc<Block>,
    bytes_per_sec: Option<u64>,
) -> Result<Option<BlockMeta>, CompactError> {
    let mut meta = compact_blocks(dir, std::slice::from_ref(block), bytes_per_sec)?;
    if let Some(m) = meta.as_mut() {
        if m.compaction.level != block.meta().compaction.level {
            m.compaction.level = block.meta().compaction.level;
            let path = dir.join(m.ulid.to_string());
            ferrite_block::meta::write_meta(&path, m).map_err(|source| BlockError::Meta {
                dir: path.clone(),
                source,
            })?;
        }
    }
    Ok(meta)
}

/// Samples per chunk when compaction has to re-encode (overlapping blocks,
/// deleted samples): Prometheus' target.
const SAMPLES_PER_CHUNK: usize = 120;

/// Merges `blocks` into one new block in `dir` (leveled compaction, and
/// vertical compaction where their times overlap): series merged by label
/// set; a series' chunks copied as they are unless they overlap another
/// block's or carry deleted samples, in which case its samples are merged
/// (one per timestamp, the first block's) and re-encoded. Tombstones are
/// applied. Returns `None` if nothing is left (every sample deleted).
pub fn compact_blocks(
    dir: &Path,
    blocks: &[Arc<Block>],
    bytes_per_sec: Option<u64>,
) -> Result<Option<BlockMeta>, CompactError> {
    let mint = blocks.iter().map(|b| b.meta().min_time).min().unwrap_or(0);
    let maxt = blocks.iter().map(|b| b.meta().max_time).max().unwrap_or(0);
    let mut sources: Vec<_> = blocks
        .iter()
        .flat_map(|b| b.meta().compaction.sources.iter().copied())
        .collect();
    sources.sort();
    sources.dedup();
    let mut parents: Vec<BlockDesc> = blocks
        .iter()
        .map(|b| BlockDesc {
            ulid: b.ulid(),
            min_time: b.meta().min_time,
            max_time: b.meta().max_time,
        })
        .collect();
    parents.sort_by_key(|p| p.min_time);
    let compaction = Compaction {
        level: blocks
            .iter()
            .map(|b| b.meta().compaction.level)
            .max()
            .unwrap_or(0)
            + 1,
        sources,
        parents,
        ..Compaction::default()
    };

    // Every series of every block, grouped by label set (blocks in order).
    let mut all: Vec<(Labels, usize, u64)> = Vec::new();
    let mut metas = Vec::new();
    for (k, b) in blocks.iter().enumerate() {
        for r in b.postings(&[])? {
            all.push((b.series(r, &mut metas)?, k, r));
        }
    }
    all.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)));
    let mut labels: Vec<Labels> = Vec::new();
    let mut members: Vec<Vec<(usize, u64)>> = Vec::new();
    for (l, k, r) in all {
        if labels.last() == Some(&l) {
            if let Some(m) = members.last_mut() {
                m.push((k, r));
            }
        } else {
            labels.push(l);
            members.push(vec![(k, r)]);
        }
    }
    let meta = write_block_limited(
        dir,
        mint,
        maxt,
        compaction,
        &labels,
        bytes_per_sec,
        |i, out| merged_chunks(blocks, &members[i], out),
    )?;
    Ok(meta)
}

/// The chunks of one series merged from several blocks.
fn merged_chunks(
    blocks: &[Arc<Block>],
    members: &[(usize, u64)],
    out: &mut Vec<BlockChunk>,
) -> Result<(), BlockError> {
    let mut metas = Vec::new();
    // (block, chunk meta, deleted intervals of the series in that block)
    let mut chunks: Vec<(usize, ChunkMeta)> = Vec::new();
    let mut needs_rewrite = false;
    for &(k, r) in members {
        blocks[k].series(r, &mut metas)?;
        let deleted = blocks[k].tombstones().get(r);
        for m in &metas {
            if deleted.is_some_and(|ivs| {
                ivs.iter()
                    .any(|iv| iv.mint <= m.max_time && m.min_time <= iv.maxt)
            }) {
                needs_rewrite = true;
            }
            chunks.push((k, *m));
        }
    }
    chunks.sort_by_key(|(_, m)| m.min_time);
    if chunks
        .windows(2)
        .any(|w| w[1].1.min_time <= w[0].1.max_time)
    {
        needs_rewrite = true;
    }
    if !needs_rewrite {
        for (k, m) in &chunks {
            out.push(BlockChunk {
                mint: m.min_time,
                maxt: m.max_time,
                data: blocks[*k].chunk(m.chunk_ref)?.to_vec(),
            });
        }
        return Ok(());
    }
    // Decode everything, drop deleted samples, keep one sample per
    // timestamp (the earliest block's), re-encode.
    let mut samples: Vec<(i64, usize, f64)> = Vec::new();
    for (k, m) in &chunks {
        let r = members.iter().find(|(b, _)| b == k).map_or(0, |&(_, r)| r);
        let deleted = blocks[*k].tombstones().get(r);
        let bytes = blocks[*k].chunk(m.chunk_ref)?;
        let mut it = XorIterator::new(bytes);
        for (t, v) in it.by_ref() {
            if !deleted.is_some_and(|ivs| ivs.is_deleted(t)) {
                samples.push((t, *k, v));
            }
        }
        if let Some(e) = it.error() {
            return Err(BlockError::CorruptChunk {
                dir: blocks[*k].dir().to_owned(),
                detail: e.to_string(),
            });
        }
    }
    samples.sort_by_key(|&(t, k, _)| (t, k));
    samples.dedup_by_key(|s| s.0);
    for group in samples.chunks(SAMPLES_PER_CHUNK) {
        let mut c = XorChunk::new();
        for &(t, _, v) in group {
            c.append(t, v);
        }
        if let (Some(first), Some(last)) = (group.first(), group.last()) {
            out.push(BlockChunk {
                mint: first.0,
                maxt: last.0,
                data: c.into_bytes(),
            });
        }
    }
    Ok(())
}
