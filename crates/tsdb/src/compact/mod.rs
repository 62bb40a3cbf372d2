//! Compaction: turning the head's oldest range into a block, and merging
//! blocks into larger ones (leveled, and vertical for overlaps).
//!
//! Head compaction copies the head's chunks as they are: the head never lets
//! a chunk cross a chunk-range boundary (2 h by default), so every chunk
//! belongs to exactly one block range and no sample is re-encoded. Only a
//! chunk straddling the range (possible after a change of block range) is
//! cut, by re-encoding its samples inside the range.

pub mod ooo;
pub mod planner;

use std::path::Path;
use std::sync::Arc;

use ferrite_block::meta::{BlockDesc, BlockMeta, Compaction};
use ferrite_chunkenc::Encoding;
use ferrite_model::SampleValue;

use crate::sample::{BuiltChunk, ChunkBuilder, ChunkDecoder, DecodeError, SampleRef};
use ferrite_index::{ChunkMeta, SymbolCache};

use crate::block::{
    write_block_from, write_pending_block, Block, BlockChunk, BlockError, PendingBlock,
    SeriesSource,
};
use crate::head::registry::SeriesEntry;
use crate::head::Head;
use ferrite_model::Labels;

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
///
/// Series are taken in label order one at a time (labels resolved from the
/// head's interned symbols as they are written), so the compaction holds
/// little beyond one series' chunks. `bytes_per_sec` caps the chunk write
/// rate (`None`: as fast as possible).
pub fn persist_head_range(
    head: &Head,
    dir: &Path,
    mint: i64,
    maxt: i64,
    bytes_per_sec: Option<u64>,
) -> Result<Option<BlockMeta>, CompactError> {
    Ok(write_head_range(head, dir, mint, maxt, bytes_per_sec)?
        .map(PendingBlock::publish)
        .transpose()?)
}

/// [`persist_head_range`] that leaves the block unpublished (see
/// [`write_pending_block`]).
fn write_head_range(
    head: &Head,
    dir: &Path,
    mint: i64,
    maxt: i64,
    bytes_per_sec: Option<u64>,
) -> Result<Option<PendingBlock>, CompactError> {
    let last = maxt - 1;
    let refs: Vec<u64> = head.postings.read().all().to_vec();
    let mut entries: Vec<(u64, SeriesEntry)> = Vec::new();
    for r in refs {
        let Some(entry) = head.series.get(r) else {
            continue;
        };
        let in_range = {
            let d = entry.data.lock();
            d.mmapped.iter().any(|c| c.maxt >= mint && c.mint <= last)
                || d.unmapped()
                    .iter()
                    .any(|c| c.maxt >= mint && c.mint <= last)
                || d.open
                    .as_ref()
                    .is_some_and(|c| c.has_samples() && c.maxt >= mint && c.mint <= last)
        };
        if in_range {
            entries.push((r, entry));
        }
    }
    sort_by_labels(head, &mut entries);
    let mut source = HeadSource {
        head,
        entries,
        next: 0,
        chunks_since_release: 0,
        mint,
        last,
        failure: None,
    };
    let meta = write_pending_block(
        dir,
        mint,
        maxt,
        Compaction {
            level: 1,
            ..Compaction::default()
        },
        &mut source,
        bytes_per_sec,
    );
    if let Some(e) = source.failure {
        return Err(e);
    }
    Ok(meta?)
}

/// The blocks of `ranges` of the head, written side by side on rayon's
/// threads (the head is only read; one at a time when the write rate is
/// capped, so the cap holds) and left unpublished, for the caller to put
/// in place in the order of the ranges ([`PendingBlock::publish`]); the
/// results in the order of `ranges`.
pub fn write_head_ranges(
    head: &Head,
    dir: &Path,
    ranges: &[(i64, i64)],
    bytes_per_sec: Option<u64>,
) -> Vec<Result<Option<PendingBlock>, CompactError>> {
    use rayon::prelude::*;
    let persist =
        |&(mint, maxt): &(i64, i64)| write_head_range(head, dir, mint, maxt, bytes_per_sec);
    match bytes_per_sec {
        Some(_) => ranges.iter().map(persist).collect(),
        None => ranges.par_iter().with_max_len(1).map(persist).collect(),
    }
}

/// Sorts head series by their label sets (resolved from the head's
/// interned symbols), as a block's index lists them.
pub(crate) fn sort_by_labels(head: &Head, entries: &mut [(u64, SeriesEntry)]) {
    head.symbols.with_resolver(|res| {
        entries.sort_by(|a, b| {
            let (a, b) = (a.1.labels(), b.1.labels());
            for (x, y) in a.iter().zip(b.iter()) {
                if x != y {
                    let o = res.get(*x).cmp(res.get(*y));
                    if o != std::cmp::Ordering::Equal {
                        return o;
                    }
                }
            }
            a.len().cmp(&b.len())
        })
    });
}

/// The symbols of a block written from head series: their label names
/// and values, and the empty string. Prometheus' head lists the empty
/// string among its symbols (its all-series postings key is the empty
/// label pair), so its head blocks carry it; so do ours, for
/// byte-identical indexes.
pub(crate) fn head_symbols(head: &Head, entries: &[(u64, SeriesEntry)]) -> Vec<String> {
    let mut ids: Vec<u32> = entries
        .iter()
        .flat_map(|(_, e)| e.labels().iter().copied())
        .collect();
    ids.sort_unstable();
    ids.dedup();
    let mut out: Vec<String> = head
        .symbols
        .with_resolver(|res| ids.iter().map(|&i| res.get(i).to_owned()).collect());
    out.push(String::new());
    out.sort_unstable();
    out.dedup();
    out
}

/// How often head compaction drops the chunk file pages it read: after
/// this many chunks. Each chunk read from the mapped files faults in its
/// page and the kernel maps up to 64 KiB around it, so this bounds the
/// pages the compaction holds to 16 MiB.
const RELEASE_EVERY_CHUNKS: usize = 256;

/// The head's series of one range, in label order.
struct HeadSource<'h> {
    head: &'h Head,
    entries: Vec<(u64, SeriesEntry)>,
    next: usize,
    /// Chunks read since the chunk files' pages were last dropped.
    chunks_since_release: usize,
    mint: i64,
    last: i64,
    /// The real error when a head chunk could not be read.
    failure: Option<CompactError>,
}

impl SeriesSource for HeadSource<'_> {
    fn symbols(&mut self) -> Result<Vec<String>, BlockError> {
        Ok(head_symbols(self.head, &self.entries))
    }

    fn next_series(
        &mut self,
        labels: &mut Labels,
        chunks: &mut Vec<BlockChunk>,
    ) -> Result<bool, BlockError> {
        let Some((r, entry)) = self.entries.get(self.next) else {
            self.head.mapper.release_pages();
            return Ok(false);
        };
        self.next += 1;
        // The series are read in label order, not file order: without this
        // the whole of `chunks_head/` would end up resident.
        if self.chunks_since_release >= RELEASE_EVERY_CHUNKS {
            self.head.mapper.release_pages();
            self.chunks_since_release = 0;
        }
        *labels = self.head.resolve_labels(entry.labels());
        // Samples deleted from the head stay deleted in the block.
        let deleted = self.head.tombstones_of(*r);
        if let Err(e) = head_chunks_in_range(
            self.head, labels, entry, &deleted, self.mint, self.last, chunks,
        ) {
            self.failure = Some(e);
            // Stops the write; the error is reported by the caller.
            return Err(BlockError::Io {
                path: self.head.mapper.dir().to_owned(),
                source: std::io::Error::other("head chunk unreadable"),
            });
        }
        self.chunks_since_release += chunks.len();
        Ok(true)
    }
}

/// The chunks of one head series within [mint, last], oldest first.
fn head_chunks_in_range(
    head: &Head,
    labels: &Labels,
    entry: &SeriesEntry,
    deleted: &[(i64, i64)],
    mint: i64,
    last: i64,
    out: &mut Vec<BlockChunk>,
) -> Result<(), CompactError> {
    let d = entry.data.lock();
    let is_deleted = |t: i64| deleted.iter().any(|&(a, b)| t >= a && t <= b);
    let mut decoder = ChunkDecoder::new();
    let mut push = |encoding: u8, bytes: &[u8], cmin: i64, cmax: i64| -> Result<(), CompactError> {
        if cmax < mint || cmin > last {
            return Ok(());
        }
        let touched = deleted.iter().any(|&(a, b)| a <= cmax && cmin <= b);
        if cmin >= mint && cmax <= last && !touched {
            out.push(BlockChunk {
                mint: cmin,
                maxt: cmax,
                encoding,
                data: bytes.to_vec(),
            });
            return Ok(());
        }
        // Straddles the range or has deleted samples: keep the samples
        // inside the range that are not deleted, in one chunk.
        let mut builder =
            ChunkBuilder::single().with_float_encoding(head.chunk_opts.float_encoding);
        let mut emit = |c: BuiltChunk| out.push(c.into());
        decoder
            .for_each(encoding, bytes, |t, v| {
                if t >= mint && t <= last && !is_deleted(t) {
                    builder.push(t, v, &mut emit);
                }
                true
            })
            .map_err(|e| CompactError::HeadChunk {
                series: labels.to_string(),
                detail: e.to_string(),
            })?;
        builder.finish(&mut emit);
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
        push(c.encoding as u8, &bytes, c.mint, c.maxt)?;
    }
    for c in d.unmapped() {
        push(c.encoding as u8, &c.bytes, c.mint, c.maxt)?;
    }
    if let Some(c) = &d.open {
        if c.has_samples() {
            push(c.chunk.encoding() as u8, c.chunk.bytes(), c.mint, c.maxt)?;
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
    float_encoding: Encoding,
) -> Result<Option<BlockMeta>, CompactError> {
    let mut meta = compact_blocks(
        dir,
        std::slice::from_ref(block),
        bytes_per_sec,
        float_encoding,
    )?;
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

/// Merges `blocks` into one new block in `dir` (leveled compaction, and
/// vertical compaction where their times overlap): series merged by label
/// set; a series' chunks copied as they are unless they overlap another
/// block's or carry deleted samples, in which case its samples are merged
/// (one per timestamp, the first block's) and re-encoded. Tombstones are
/// applied. Float chunks encoded again are in `float_encoding` (XOR or
/// XOR2, Prometheus' configured float encoding). Returns `None` if nothing
/// is left (every sample deleted).
pub fn compact_blocks(
    dir: &Path,
    blocks: &[Arc<Block>],
    bytes_per_sec: Option<u64>,
    float_encoding: Encoding,
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
    let mut compaction = Compaction {
        level: blocks
            .iter()
            .map(|b| b.meta().compaction.level)
            .max()
            .unwrap_or(0)
            + 1,
        sources,
        parents,
        hints: merged_hints(blocks),
        ..Compaction::default()
    };
    compaction.hints.sort();

    let mut source = MergeSource::new(blocks, float_encoding)?;
    let meta = write_block_from(dir, mint, maxt, compaction, &mut source, bytes_per_sec)?;
    Ok(meta)
}

/// The hints a merged block keeps, as Prometheus: from-out-of-order only
/// when every parent has it (the merged block then holds no in-order
/// sample); from-stale-series and from-selected-series when any has them
/// (such blocks are only merged among themselves).
fn merged_hints(blocks: &[Arc<Block>]) -> Vec<String> {
    use ferrite_block::meta::{
        HINT_FROM_OUT_OF_ORDER, HINT_FROM_SELECTED_SERIES, HINT_FROM_STALE_SERIES,
    };
    fn has(b: &Arc<Block>, hint: &str) -> bool {
        b.meta().compaction.hints.iter().any(|h| h == hint)
    }
    let mut hints = Vec::new();
    if !blocks.is_empty() && blocks.iter().all(|b| has(b, HINT_FROM_OUT_OF_ORDER)) {
        hints.push(HINT_FROM_OUT_OF_ORDER.to_string());
    }
    for hint in [HINT_FROM_STALE_SERIES, HINT_FROM_SELECTED_SERIES] {
        if blocks.iter().any(|b| has(b, hint)) {
            hints.push(hint.to_string());
        }
    }
    hints
}

/// The series of several blocks merged by label set, in label order: one
/// cursor per block over its series (the index keeps them sorted), so a
/// merge holds one series per block at a time.
struct MergeSource<'a> {
    blocks: &'a [Arc<Block>],
    cursors: Vec<BlockCursor<'a>>,
    members: Vec<(usize, u64)>,
    /// The chunk metas of the members, tagged with their block.
    member_chunks: Vec<(usize, ChunkMeta)>,
    float_encoding: Encoding,
}

/// Symbols a merge remembers per block: it walks every series, and label
/// values repeat from one series to the next.
const MERGE_SYMBOL_CACHE_SLOTS: usize = 4096;

/// One input block's series, in label order; each series is read once.
struct BlockCursor<'a> {
    block: &'a Block,
    refs: Vec<u64>,
    pos: usize,
    /// Labels of `refs[pos]`.
    current: Option<Labels>,
    /// Chunk metas of `refs[pos]`.
    chunks: Vec<ChunkMeta>,
    scratch: Vec<ferrite_index::Label<'a>>,
    symbols: SymbolCache<'a>,
}

impl<'a> MergeSource<'a> {
    fn new(
        blocks: &'a [Arc<Block>],
        float_encoding: Encoding,
    ) -> Result<MergeSource<'a>, BlockError> {
        let mut cursors = Vec::with_capacity(blocks.len());
        for b in blocks {
            let mut c = BlockCursor {
                block: b,
                refs: b.postings(&[])?,
                pos: 0,
                current: None,
                chunks: Vec::new(),
                scratch: Vec::new(),
                symbols: SymbolCache::with_slots(MERGE_SYMBOL_CACHE_SLOTS),
            };
            c.load()?;
            cursors.push(c);
        }
        Ok(MergeSource {
            blocks,
            cursors,
            members: Vec::new(),
            member_chunks: Vec::new(),
            float_encoding,
        })
    }
}

impl BlockCursor<'_> {
    fn load(&mut self) -> Result<(), BlockError> {
        self.current = match self.refs.get(self.pos) {
            Some(&r) => Some(self.block.series_cached(
                r,
                &mut self.chunks,
                i64::MAX,
                &mut self.scratch,
                Some(&mut self.symbols),
            )?),
            None => None,
        };
        Ok(())
    }
}

impl SeriesSource for MergeSource<'_> {
    fn symbols(&mut self) -> Result<Vec<String>, BlockError> {
        let mut out: Vec<String> = Vec::new();
        for b in self.blocks {
            for s in b.index().symbols() {
                let s = s.map_err(|source| BlockError::Index {
                    dir: b.dir().to_owned(),
                    source,
                })?;
                out.push(String::from_utf8_lossy(s).into_owned());
            }
        }
        out.sort_unstable();
        out.dedup();
        Ok(out)
    }

    fn next_series(
        &mut self,
        labels: &mut Labels,
        chunks: &mut Vec<BlockChunk>,
    ) -> Result<bool, BlockError> {
        let Some(min) = self
            .cursors
            .iter()
            .filter_map(|c| c.current.as_ref())
            .min()
            .cloned()
        else {
            return Ok(false);
        };
        self.members.clear();
        self.member_chunks.clear();
        for (k, c) in self.cursors.iter_mut().enumerate() {
            if c.current.as_ref() == Some(&min) {
                self.members.push((k, c.refs[c.pos]));
                self.member_chunks.extend(c.chunks.iter().map(|m| (k, *m)));
                c.pos += 1;
                c.load()?;
            }
        }
        *labels = min;
        merged_chunks(
            self.blocks,
            &self.members,
            &mut self.member_chunks,
            self.float_encoding,
            chunks,
        )?;
        Ok(true)
    }
}

/// A block chunk that may be copied as it is: any encoding Prometheus
/// v3.16 writes (1-6), including those Ferrite does not decode yet; an
/// unknown byte is refused, so that a block is never rewritten with chunks
/// no reader could make sense of.
fn check_copyable(block: &Block, r: u64, encoding: u8) -> Result<(), BlockError> {
    match Encoding::valid(encoding) {
        None => Err(unsupported_encoding(block, r, encoding)),
        Some(_) => Ok(()),
    }
}

/// The error for a chunk whose encoding cannot be handled here.
fn unsupported_encoding(block: &Block, r: u64, encoding: u8) -> BlockError {
    BlockError::UnsupportedEncoding {
        dir: block.dir().to_owned(),
        file: block.chunk_file(r),
        chunk: ferrite_block::chunks::ChunkRef(r),
        encoding,
    }
}

/// The chunks of one series merged from several blocks.
fn merged_chunks(
    blocks: &[Arc<Block>],
    members: &[(usize, u64)],
    chunks: &mut [(usize, ChunkMeta)],
    float_encoding: Encoding,
    out: &mut Vec<BlockChunk>,
) -> Result<(), BlockError> {
    let mut needs_rewrite = false;
    for &(k, r) in members {
        let Some(deleted) = blocks[k].tombstones().get(r) else {
            continue;
        };
        if chunks.iter().any(|(b, m)| {
            *b == k
                && deleted
                    .iter()
                    .any(|iv| iv.mint <= m.max_time && m.min_time <= iv.maxt)
        }) {
            needs_rewrite = true;
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
        for (k, m) in chunks.iter() {
            let (encoding, data) = blocks[*k].chunk_of_any_encoding(m.chunk_ref)?;
            check_copyable(&blocks[*k], m.chunk_ref, encoding)?;
            out.push(BlockChunk {
                mint: m.min_time,
                maxt: m.max_time,
                encoding,
                data: data.to_vec(),
            });
        }
        return Ok(());
    }
    // Decode everything, drop deleted samples, keep one sample per
    // timestamp (the earliest block's), encode again.
    let mut samples: Vec<(i64, usize, SampleValue)> = Vec::new();
    let mut decoder = ChunkDecoder::new();
    for (k, m) in chunks.iter() {
        let r = members.iter().find(|(b, _)| b == k).map_or(0, |&(_, r)| r);
        let deleted = blocks[*k].tombstones().get(r);
        let (encoding, bytes) = blocks[*k].chunk_of_any_encoding(m.chunk_ref)?;
        let res = decoder.for_each(encoding, bytes, |t, v| {
            if !deleted.is_some_and(|ivs| ivs.is_deleted(t)) {
                samples.push((t, *k, v.to_owned_value()));
            }
            true
        });
        match res {
            Ok(()) => {}
            Err(DecodeError::Unsupported(encoding)) => {
                return Err(unsupported_encoding(&blocks[*k], m.chunk_ref, encoding));
            }
            Err(DecodeError::Corrupt(e)) => {
                return Err(BlockError::CorruptChunk {
                    dir: blocks[*k].dir().to_owned(),
                    detail: e.to_string(),
                });
            }
        }
    }
    samples.sort_by_key(|s| (s.0, s.1));
    samples.dedup_by_key(|s| s.0);
    let mut builder = ChunkBuilder::new().with_float_encoding(float_encoding);
    let mut emit = |c: BuiltChunk| out.push(c.into());
    for (t, _, v) in &samples {
        builder.push(*t, SampleRef::of(v), &mut emit);
    }
    builder.finish(&mut emit);
    Ok(())
}
