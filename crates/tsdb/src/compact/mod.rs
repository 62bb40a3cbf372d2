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

use ferrite_block::meta::{BlockMeta, Compaction};
use ferrite_chunkenc::{XorChunk, XorIterator};

use crate::block::{write_block, BlockChunk, BlockError};
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
}

/// Persists the head's samples in [mint, maxt) as a level-1 block in
/// `dir`. Returns `None` when the range holds no sample.
pub fn persist_head_range(
    head: &Head,
    dir: &Path,
    mint: i64,
    maxt: i64,
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
    let meta = write_block(
        dir,
        mint,
        maxt,
        Compaction {
            level: 1,
            ..Compaction::default()
        },
        &labels,
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
