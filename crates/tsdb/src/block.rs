//! Persistent blocks: opening a block directory for queries, and writing one.
//!
//! A block is Prometheus' `<ULID>/` directory (`meta.json`, `index`,
//! `chunks/`, `tombstones`); the file formats live in `ferrite-index` and
//! `ferrite-block`. An opened [`Block`] keeps the index and chunk files
//! memory-mapped and holds little else (the index reader's sampled tables,
//! the tombstones), so hundreds of open blocks cost little resident memory.
//!
//! [`write_block`] streams series in label order into a temporary directory
//! (`<ULID>.tmp-for-creation`, as Prometheus names it), syncs it and renames
//! it into place: a crash leaves either no block or a whole one, and leftover
//! temporary directories are removed on the next open.
//!
//! Chunk encodings: only XOR chunks are decoded. [`Block::chunk`] refuses
//! every other encoding byte (native histograms, Prometheus v3.16's XOR2
//! and start-timestamp encodings, unknown bytes) with
//! [`BlockError::UnsupportedEncoding`], so a query, `tsdb dump`, `tsdb
//! digest` or a compaction that reaches such a chunk fails naming the file
//! and (from the querier) the series; compaction never decodes, re-encodes
//! or drops it: it fails, writes nothing and leaves its source blocks
//! untouched (not even marked `compaction.failed` on disk; `Db` skips them
//! in memory until restart, so retention still runs). Copying such chunks
//! unchanged where nothing needs re-encoding was tried and left out: it
//! replaces the source blocks, and the sample counts in `meta.json` cannot
//! be told for v3.16's encodings 4-6 without decoding them. Opening a block does
//! not scan its chunks for this: that would read every chunk file of every
//! block on each start, while the encoding byte is checked on every read
//! anyway, at no cost.

use std::fs;
use std::path::{Path, PathBuf};

use compact_str::CompactString;
use ferrite_block::chunks::{ChunkReader, ChunkRef, ChunkWriter, RawChunk};
use ferrite_block::meta::{read_meta, write_meta, BlockMeta, BlockStats, BlockUlid, Compaction};
use ferrite_block::tombstones::{read_tombstones, write_tombstones, Tombstones};
use ferrite_chunkenc::Encoding;
use ferrite_index::postings::{expand, intersect, merge, without, BoxPostings};
use ferrite_index::{ChunkMeta, IndexReader, IndexWriter, SymbolCache};

use ferrite_model::{Label, Labels, MatchType, Matcher};

/// Suffix of a block directory being written.
pub const TMP_FOR_CREATION: &str = ".tmp-for-creation";
/// Suffix of a block directory being deleted.
pub const TMP_FOR_DELETION: &str = ".tmp-for-deletion";

/// Failure to read or write a block.
#[derive(Debug, thiserror::Error)]
pub enum BlockError {
    #[error("block {dir}: meta.json: {source}")]
    Meta {
        dir: PathBuf,
        #[source]
        source: ferrite_block::MetaError,
    },
    #[error("block {dir}: index: {source}")]
    Index {
        dir: PathBuf,
        #[source]
        source: ferrite_index::IndexError,
    },
    #[error("block {dir}: chunks: {source}")]
    Chunks {
        dir: PathBuf,
        #[source]
        source: ferrite_block::ChunksError,
    },
    #[error("block {dir}: tombstones: {source}")]
    Tombstones {
        dir: PathBuf,
        #[source]
        source: ferrite_block::TombstonesError,
    },
    /// A chunk Ferrite cannot decode (anything but XOR). Never decoded as
    /// XOR, never re-encoded or dropped: reads and compactions fail.
    #[error("unsupported: block chunk encoding {encoding} ({}) in {}, chunk {chunk}; Ferrite cannot read it yet", crate::error::chunk_encoding_name(*encoding), file.display())]
    UnsupportedEncoding {
        dir: PathBuf,
        /// The chunk segment file holding it.
        file: PathBuf,
        chunk: ChunkRef,
        encoding: u8,
    },
    #[error("block {dir}: corrupt chunk: {detail}")]
    CorruptChunk { dir: PathBuf, detail: String },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> BlockError + '_ {
    move |source| BlockError::Io {
        path: path.to_owned(),
        source,
    }
}

/// An open, immutable block.
pub struct Block {
    dir: PathBuf,
    meta: BlockMeta,
    index: IndexReader,
    chunks: ChunkReader,
    tombstones: Tombstones,
    size_bytes: u64,
}

impl std::fmt::Debug for Block {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Block")
            .field("dir", &self.dir)
            .field("meta", &self.meta)
            .finish()
    }
}

impl Block {
    /// Opens the block in `dir`.
    pub fn open(dir: &Path) -> Result<Block, BlockError> {
        let meta = read_meta(dir).map_err(|source| BlockError::Meta {
            dir: dir.to_owned(),
            source,
        })?;
        let index = IndexReader::open(dir.join("index")).map_err(|source| BlockError::Index {
            dir: dir.to_owned(),
            source,
        })?;
        let chunks =
            ChunkReader::open(&dir.join("chunks")).map_err(|source| BlockError::Chunks {
                dir: dir.to_owned(),
                source,
            })?;
        let tombstones = read_tombstones(dir).map_err(|source| BlockError::Tombstones {
            dir: dir.to_owned(),
            source,
        })?;
        let size_bytes = crate::retention::block_size_on_disk(dir).map_err(io_err(dir))? as u64;
        Ok(Block {
            dir: dir.to_owned(),
            meta,
            index,
            chunks,
            tombstones,
            size_bytes,
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn meta(&self) -> &BlockMeta {
        &self.meta
    }

    pub fn ulid(&self) -> BlockUlid {
        self.meta.ulid
    }

    pub fn index(&self) -> &IndexReader {
        &self.index
    }

    pub fn tombstones(&self) -> &Tombstones {
        &self.tombstones
    }

    /// Adds deleted intervals (inclusive) for the series matching
    /// `matchers` and rewrites the `tombstones` file atomically; returns the
    /// block re-opened with them (this one is left as it was) and how many
    /// series were affected.
    pub fn delete(
        &self,
        matchers: &[Matcher],
        mint: i64,
        maxt: i64,
    ) -> Result<(Block, usize), BlockError> {
        let refs = self.postings(matchers)?;
        let mut stones = self.tombstones.clone();
        let mut chunks = Vec::new();
        let mut n = 0;
        for r in refs {
            self.index
                .series(r, &mut Vec::new(), Some(&mut chunks))
                .map_err(|source| BlockError::Index {
                    dir: self.dir.clone(),
                    source,
                })?;
            if chunks
                .iter()
                .any(|c| c.min_time <= maxt && mint <= c.max_time)
            {
                stones.add_interval(r, ferrite_block::Interval::new(mint, maxt));
                n += 1;
            }
        }
        if n > 0 {
            write_tombstones(&self.dir, &stones).map_err(|source| BlockError::Tombstones {
                dir: self.dir.clone(),
                source,
            })?;
        }
        Ok((Block::open(&self.dir)?, n))
    }

    /// Bytes of the block's files as Prometheus counts them (meta, index,
    /// chunk segments, tombstones), measured at open: what size retention
    /// and `prometheus_tsdb_storage_blocks_bytes` use.
    pub fn size_bytes(&self) -> u64 {
        self.size_bytes
    }

    /// Whether the block holds samples in [mint, maxt] (inclusive).
    pub fn overlaps(&self, mint: i64, maxt: i64) -> bool {
        self.meta.min_time <= maxt && mint < self.meta.max_time
    }

    /// Sorted series refs matching all `matchers`, with Prometheus' matcher
    /// semantics (a missing label reads as the empty string).
    pub fn postings(&self, matchers: &[Matcher]) -> Result<Vec<u64>, BlockError> {
        let ix = &self.index;
        let err = |source| BlockError::Index {
            dir: self.dir.clone(),
            source,
        };
        let mut its: Vec<BoxPostings<'_>> = Vec::new();
        let mut nots: Vec<BoxPostings<'_>> = Vec::new();
        if matchers.iter().all(|m| m.matches("")) {
            its.push(ix.all_postings().map_err(err)?);
        }
        for m in matchers {
            let name = m.name.as_bytes();
            if m.kind == MatchType::Equal && !m.value.is_empty() {
                its.push(ix.postings(name, &[m.value.as_bytes()]).map_err(err)?);
                continue;
            }
            let matches_empty = m.matches("");
            // Values the matcher accepts, or for empty-matching matchers the
            // values it rejects (those series are subtracted).
            let p = ix
                .postings_for_label_matching(name, |v| {
                    m.matches(&String::from_utf8_lossy(v)) != matches_empty
                })
                .map_err(err)?;
            if matches_empty {
                nots.push(p);
            } else {
                its.push(p);
            }
        }
        let mut p = intersect(its);
        if !nots.is_empty() {
            p = without(p, merge(nots));
        }
        Ok(expand(p.as_mut()))
    }

    /// The labels and chunk metas of series `r`.
    pub fn series(&self, r: u64, chunks: &mut Vec<ChunkMeta>) -> Result<Labels, BlockError> {
        self.series_cached(r, chunks, i64::MAX, &mut Vec::new(), None)
    }

    /// [`Block::series`] with only the chunks starting at or before
    /// `until`, for a caller reading many series in turn: `scratch` is
    /// reused and `cache` remembers resolved label values.
    pub fn series_cached<'a>(
        &'a self,
        r: u64,
        chunks: &mut Vec<ChunkMeta>,
        until: i64,
        scratch: &mut Vec<ferrite_index::Label<'a>>,
        cache: Option<&mut SymbolCache<'a>>,
    ) -> Result<Labels, BlockError> {
        let ls = scratch;
        self.index
            .series_cached(r, ls, Some(chunks), until, cache)
            .map_err(|source| BlockError::Index {
                dir: self.dir.clone(),
                source,
            })?;
        Ok(Labels::from_sorted(
            ls.iter()
                .map(|l| Label {
                    name: CompactString::from_utf8_lossy(l.name),
                    value: CompactString::from_utf8_lossy(l.value),
                })
                .collect(),
        ))
    }

    /// A chunk's encoding byte and bytes, checksum verified, whatever the
    /// encoding.
    pub fn chunk_of_any_encoding(&self, r: u64) -> Result<(u8, &[u8]), BlockError> {
        self.chunks
            .chunk(ChunkRef(r))
            .map_err(|source| BlockError::Chunks {
                dir: self.dir.clone(),
                source,
            })
    }

    /// The segment file a chunk reference points into.
    pub fn chunk_file(&self, r: u64) -> PathBuf {
        let chunk = ChunkRef(r);
        let name = self.chunks.segment_name(chunk.segment() as usize);
        self.dir.join("chunks").join(name.unwrap_or("?"))
    }

    /// The bytes of an XOR chunk, checksum verified.
    pub fn chunk(&self, r: u64) -> Result<&[u8], BlockError> {
        let chunk = ChunkRef(r);
        let (encoding, data) = self
            .chunks
            .chunk(chunk)
            .map_err(|source| BlockError::Chunks {
                dir: self.dir.clone(),
                source,
            })?;
        if encoding != Encoding::Xor as u8 {
            let name = self.chunks.segment_name(chunk.segment() as usize);
            return Err(BlockError::UnsupportedEncoding {
                dir: self.dir.clone(),
                file: self.dir.join("chunks").join(name.unwrap_or("?")),
                chunk,
                encoding,
            });
        }
        Ok(data)
    }

    /// Sorted label names of the series matching `matchers` (all if none).
    pub fn label_names(&self, matchers: &[Matcher]) -> Result<Vec<String>, BlockError> {
        if matchers.is_empty() {
            return Ok(self
                .index
                .label_names()
                .into_iter()
                .filter(|n| !n.is_empty())
                .map(|n| String::from_utf8_lossy(n).into_owned())
                .collect());
        }
        let mut names = std::collections::BTreeSet::new();
        let mut chunks = Vec::new();
        for r in self.postings(matchers)? {
            for l in self.series(r, &mut chunks)?.iter() {
                if !names.contains(l.name.as_str()) {
                    names.insert(l.name.to_string());
                }
            }
        }
        Ok(names.into_iter().collect())
    }

    /// Sorted values of label `name` among the series matching `matchers`.
    pub fn label_values(
        &self,
        name: &str,
        matchers: &[Matcher],
    ) -> Result<Vec<String>, BlockError> {
        if matchers.is_empty() {
            return self
                .index
                .sorted_label_values(name.as_bytes())
                .map(|vs| {
                    vs.into_iter()
                        .map(|v| String::from_utf8_lossy(v).into_owned())
                        .collect()
                })
                .map_err(|source| BlockError::Index {
                    dir: self.dir.clone(),
                    source,
                });
        }
        let mut values = std::collections::BTreeSet::new();
        let mut chunks = Vec::new();
        for r in self.postings(matchers)? {
            let v = self.series(r, &mut chunks)?.get(name).to_owned();
            if !v.is_empty() {
                values.insert(v);
            }
        }
        Ok(values.into_iter().collect())
    }
}

/// One chunk handed to [`write_block`].
#[derive(Debug, Clone)]
pub struct BlockChunk {
    pub mint: i64,
    pub maxt: i64,
    /// The encoding byte the chunk is written with.
    pub encoding: u8,
    /// The chunk's bytes.
    pub data: Vec<u8>,
}

impl From<crate::sample::BuiltChunk> for BlockChunk {
    fn from(c: crate::sample::BuiltChunk) -> Self {
        BlockChunk {
            mint: c.mint,
            maxt: c.maxt,
            encoding: c.encoding as u8,
            data: c.bytes,
        }
    }
}

impl BlockChunk {
    /// An XOR chunk.
    pub fn xor(mint: i64, maxt: i64, data: Vec<u8>) -> Self {
        BlockChunk {
            mint,
            maxt,
            encoding: Encoding::Xor as u8,
            data,
        }
    }
}

/// The series of a block being written, produced in label order one at a
/// time, so writing a block holds one series' chunks at a time, not the
/// block's.
pub trait SeriesSource {
    /// Every label name and value the series may use, sorted and unique.
    fn symbols(&mut self) -> Result<Vec<String>, BlockError>;
    /// Fills the next series' labels and chunks (oldest first); `false`
    /// when there is none left. A series left without chunks is skipped.
    fn next_series(
        &mut self,
        labels: &mut Labels,
        chunks: &mut Vec<BlockChunk>,
    ) -> Result<bool, BlockError>;
}

/// A [`SeriesSource`] over label sets in memory (tests, backfill).
struct SliceSource<'a, F> {
    labels: &'a [Labels],
    chunks_of: F,
    next: usize,
}

impl<F> SeriesSource for SliceSource<'_, F>
where
    F: FnMut(usize, &mut Vec<BlockChunk>) -> Result<(), BlockError>,
{
    fn symbols(&mut self) -> Result<Vec<String>, BlockError> {
        let mut symbols: Vec<String> = self
            .labels
            .iter()
            .flat_map(|ls| {
                ls.iter()
                    .flat_map(|l| [l.name.to_string(), l.value.to_string()])
            })
            .collect();
        symbols.sort_unstable();
        symbols.dedup();
        Ok(symbols)
    }

    fn next_series(
        &mut self,
        labels: &mut Labels,
        chunks: &mut Vec<BlockChunk>,
    ) -> Result<bool, BlockError> {
        let Some(ls) = self.labels.get(self.next) else {
            return Ok(false);
        };
        *labels = ls.clone();
        (self.chunks_of)(self.next, chunks)?;
        self.next += 1;
        Ok(true)
    }
}

/// Writes a block of the series `labels` (sorted, unique) over [mint, maxt)
/// into `parent`; `chunks_of(i, out)` fills the chunks of series `i`, oldest
/// first (a series left without chunks is not written). Returns `None` and
/// leaves nothing behind when there is no sample to write, as Prometheus
/// does not write empty blocks.
pub fn write_block(
    parent: &Path,
    mint: i64,
    maxt: i64,
    compaction: Compaction,
    labels: &[Labels],
    chunks_of: impl FnMut(usize, &mut Vec<BlockChunk>) -> Result<(), BlockError>,
) -> Result<Option<BlockMeta>, BlockError> {
    let mut source = SliceSource {
        labels,
        chunks_of,
        next: 0,
    };
    write_block_from(parent, mint, maxt, compaction, &mut source, None)
}

/// Writes a block of the series `source` produces over [mint, maxt) into
/// `parent` (see [`write_block`]), writing chunk data at most
/// `bytes_per_sec` on average (sleeping between series) so a compaction
/// does not starve the disk.
pub fn write_block_from(
    parent: &Path,
    mint: i64,
    maxt: i64,
    compaction: Compaction,
    source: &mut dyn SeriesSource,
    bytes_per_sec: Option<u64>,
) -> Result<Option<BlockMeta>, BlockError> {
    write_pending_block(parent, mint, maxt, compaction, source, bytes_per_sec)?
        .map(PendingBlock::publish)
        .transpose()
}

/// [`write_block_from`] that leaves the block in its temporary directory,
/// for the caller to put in place ([`PendingBlock::publish`]) when its
/// turn comes: blocks written side by side must appear on disk in the
/// order of their ranges, or a crash could leave a newer block without
/// an older one, and the samples between them, still only in the WAL,
/// would be dropped at the next start as older than the newest block.
pub fn write_pending_block(
    parent: &Path,
    mint: i64,
    maxt: i64,
    compaction: Compaction,
    source: &mut dyn SeriesSource,
    bytes_per_sec: Option<u64>,
) -> Result<Option<PendingBlock>, BlockError> {
    let ulid = BlockUlid::generate();
    let tmp = parent.join(format!("{ulid}{TMP_FOR_CREATION}"));
    let mut throttle = bytes_per_sec.filter(|&r| r > 0).map(Throttle::new);
    let result = write_into(
        &tmp,
        ulid,
        mint,
        maxt,
        compaction,
        source,
        throttle.as_mut(),
    );
    match result {
        Ok(Some(meta)) => Ok(Some(PendingBlock {
            parent: parent.to_owned(),
            tmp,
            meta,
            published: false,
        })),
        other => {
            let _ = fs::remove_dir_all(&tmp);
            other.map(|_| None)
        }
    }
}

/// A block written whole into its temporary directory
/// (`<ULID>.tmp-for-creation`), not yet in place. Dropped unpublished,
/// its directory is removed (an open removes any left by a crash).
pub struct PendingBlock {
    parent: PathBuf,
    tmp: PathBuf,
    meta: BlockMeta,
    published: bool,
}

impl PendingBlock {
    /// Puts the block in place: syncs its directory, renames it to the
    /// block's ULID and syncs the parent, so that it is in place on disk
    /// when this returns.
    pub fn publish(mut self) -> Result<BlockMeta, BlockError> {
        let dir = self.parent.join(self.meta.ulid.to_string());
        sync_dir(&self.tmp)?;
        fs::rename(&self.tmp, &dir).map_err(io_err(&dir))?;
        self.published = true;
        sync_dir(&self.parent)?;
        Ok(std::mem::take(&mut self.meta))
    }
}

impl Drop for PendingBlock {
    fn drop(&mut self) {
        if !self.published {
            let _ = fs::remove_dir_all(&self.tmp);
        }
    }
}

fn write_into(
    tmp: &Path,
    ulid: BlockUlid,
    mint: i64,
    maxt: i64,
    mut compaction: Compaction,
    source: &mut dyn SeriesSource,
    mut throttle: Option<&mut Throttle>,
) -> Result<Option<BlockMeta>, BlockError> {
    let _ = fs::remove_dir_all(tmp);
    let chunks_dir = tmp.join("chunks");
    fs::create_dir_all(&chunks_dir).map_err(io_err(&chunks_dir))?;
    let chunks_err = |source| BlockError::Chunks {
        dir: tmp.to_owned(),
        source,
    };
    let index_err = |source| BlockError::Index {
        dir: tmp.to_owned(),
        source,
    };

    let mut cw = ChunkWriter::new(&chunks_dir).map_err(chunks_err)?;
    let mut iw = IndexWriter::create(tmp.join("index")).map_err(index_err)?;
    for s in source.symbols()? {
        iw.add_symbol(&s).map_err(index_err)?;
    }
    let mut stats = BlockStats::default();
    let mut labels = Labels::default();
    let mut chunks = Vec::new();
    let mut refs = Vec::new();
    let mut metas = Vec::new();
    loop {
        chunks.clear();
        if !source.next_series(&mut labels, &mut chunks)? {
            break;
        }
        if chunks.is_empty() {
            continue;
        }
        let raw: Vec<RawChunk<'_>> = chunks
            .iter()
            .map(|c| RawChunk {
                encoding: c.encoding,
                data: &c.data,
            })
            .collect();
        refs.clear();
        cw.write_chunks(&raw, &mut refs).map_err(chunks_err)?;
        metas.clear();
        for (c, r) in chunks.iter().zip(&refs) {
            metas.push(ChunkMeta {
                min_time: c.mint,
                max_time: c.maxt,
                chunk_ref: r.0,
            });
            let n = u64::from(u16::from_be_bytes([
                c.data.first().copied().unwrap_or(0),
                c.data.get(1).copied().unwrap_or(0),
            ]));
            stats.num_samples += n;
            if c.encoding == Encoding::Xor as u8 || c.encoding == Encoding::Xor2 as u8 {
                stats.num_float_samples += n;
            } else {
                stats.num_histogram_samples += n;
            }
        }
        let pairs: Vec<(&str, &str)> = labels
            .iter()
            .map(|l| (l.name.as_str(), l.value.as_str()))
            .collect();
        iw.add_series(&pairs, &metas).map_err(index_err)?;
        stats.num_series += 1;
        stats.num_chunks += chunks.len() as u64;
        if let Some(t) = throttle.as_deref_mut() {
            t.wrote(chunks.iter().map(|c| c.data.len() as u64 + 8).sum());
        }
    }
    cw.finish().map_err(chunks_err)?;
    iw.close().map_err(index_err)?;
    if stats.num_samples == 0 {
        return Ok(None);
    }
    write_tombstones(tmp, &Tombstones::new()).map_err(|source| BlockError::Tombstones {
        dir: tmp.to_owned(),
        source,
    })?;
    if compaction.level == 0 {
        compaction.level = 1;
    }
    if compaction.sources.is_empty() {
        compaction.sources.push(ulid);
    }
    let meta = BlockMeta {
        ulid,
        min_time: mint,
        max_time: maxt,
        stats,
        compaction,
        version: 1,
    };
    write_meta(tmp, &meta).map_err(|source| BlockError::Meta {
        dir: tmp.to_owned(),
        source,
    })?;
    Ok(Some(meta))
}

/// Paces writes to an average rate: after each batch, sleeps until the
/// bytes written so far are due.
pub struct Throttle {
    bytes_per_sec: u64,
    start: std::time::Instant,
    written: u64,
}

impl Throttle {
    pub fn new(bytes_per_sec: u64) -> Throttle {
        Throttle {
            bytes_per_sec: bytes_per_sec.max(1),
            start: std::time::Instant::now(),
            written: 0,
        }
    }

    /// Accounts `n` bytes, sleeping if ahead of the rate.
    pub fn wrote(&mut self, n: u64) {
        self.written += n;
        let due =
            std::time::Duration::from_secs_f64(self.written as f64 / self.bytes_per_sec as f64);
        let elapsed = self.start.elapsed();
        // Sleep in steps of at least 10 ms, so small series do not each sleep.
        if due > elapsed + std::time::Duration::from_millis(10) {
            std::thread::sleep(due - elapsed);
        }
    }
}

/// fsyncs a directory so renames and new entries in it are durable.
pub(crate) fn sync_dir(dir: &Path) -> Result<(), BlockError> {
    fs::File::open(dir)
        .and_then(|f| f.sync_all())
        .map_err(io_err(dir))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn throttle_holds_writes_to_the_rate() {
        let start = std::time::Instant::now();
        let mut t = Throttle::new(1_000_000);
        for _ in 0..10 {
            t.wrote(30_000);
        }
        // 300 kB at 1 MB/s: at least 0.3 s minus the 10 ms slack.
        assert!(start.elapsed() >= std::time::Duration::from_millis(290));
    }
}
