//! Reading the head: series selection by label matchers, label names and values.
//!
//! Matchers become postings lists as Prometheus computes them: a matcher that
//! does not match the empty string selects the union of the postings of its
//! matching values (and such lists are intersected); a matcher that does match
//! the empty string also selects series without the label, so it is applied
//! by subtracting the series whose value it rejects. A selection of only
//! empty-matching matchers starts from all series.
//!
//! Series come back sorted by label set, as PromQL and the block writer expect.

use std::sync::Arc;

use parking_lot::RwLock;

use ferrite_chunkenc::{Encoding, XorIterator};
use ferrite_index::SymbolCache;

use crate::block::Block;
use crate::error::QueryError;
use crate::head::ooo::OooFields;
use crate::head::series::{MmappedChunk, UnmappedChunk};
use crate::head::Head;
use crate::head_chunks::{ChunkBytes, ChunkDiskMapper, ChunkDiskMapperRef};
use crate::postings::{intersect, merge, subtract, RefList};
use crate::sample::{BuiltChunk, ChunkBuilder, ChunkDecoder, DecodeError, SampleRef};
use ferrite_model::{Labels, MatchType, Matcher, SampleValue};

/// A querier over the head for the time range [mint, maxt] (inclusive).
pub struct HeadQuerier<'h> {
    head: &'h Head,
    mint: i64,
    maxt: i64,
}

/// Where a chunk of a selected series lives, and its encoding byte where
/// it is known before reading (a block chunk's comes with its bytes).
enum ChunkSource {
    /// In `chunks_head/`, not resolved (read when needed).
    Mapped(ChunkDiskMapperRef, u8),
    /// In `chunks_head/`, resolved at selection: holds the file mapping, so
    /// it stays readable even if head truncation deletes the file.
    MappedBytes(ChunkBytes, u8),
    /// In memory: the open head chunk (copied at selection) or one that
    /// could not be written to disk.
    Memory(Vec<u8>, u8),
    /// In a block's chunk files.
    Block(Arc<Block>, u64),
}

impl ChunkHandle {
    /// A head chunk: the head's tombstones are the series' first list.
    fn of_head(source: ChunkSource, mint: i64, maxt: i64) -> Self {
        ChunkHandle {
            source,
            mint,
            maxt,
            tombstones: 0,
        }
    }
}

/// A chunk whose source deleted nothing (no tombstone list allocated).
const NO_TOMBSTONES: usize = usize::MAX;

struct ChunkHandle {
    source: ChunkSource,
    mint: i64,
    maxt: i64,
    /// Index into the series' tombstone lists (one per source with any),
    /// [`NO_TOMBSTONES`] for none.
    tombstones: usize,
}

/// A selected series: its labels and a snapshot of its chunks, from the head
/// and/or blocks.
pub struct QuerySeries {
    /// The head's ref of the series, 0 when it is not in the head.
    pub series_ref: u64,
    pub labels: Labels,
    chunks: Vec<ChunkHandle>,
    /// Deleted intervals (inclusive), one list per source.
    tombstones: Vec<Vec<(i64, i64)>>,
    mint: i64,
    maxt: i64,
    mapper: Option<Arc<ChunkDiskMapper>>,
}

impl QuerySeries {
    /// Calls `f` for every float sample in the querier's range, oldest
    /// first; where sources overlap, a timestamp is reported once (the
    /// first source's). Native histogram samples are not handed out here:
    /// [`QuerySeries::for_each_value`] reads every kind.
    pub fn for_each_sample(&self, mut f: impl FnMut(i64, f64)) -> Result<(), QueryError> {
        let overlapping = self.chunks.windows(2).any(|w| w[1].mint <= w[0].maxt);
        if !overlapping {
            for c in &self.chunks {
                self.chunk_samples(c, &mut f)?;
            }
            return Ok(());
        }
        // Overlapping chunks (blocks not compacted yet, or a block and the
        // head): decode them all and merge by time.
        let mut all: Vec<(i64, usize, f64)> = Vec::new();
        for (k, c) in self.chunks.iter().enumerate() {
            self.chunk_samples(c, &mut |t, v| all.push((t, k, v)))?;
        }
        all.sort_by_key(|&(t, k, _)| (t, k));
        all.dedup_by_key(|s| s.0);
        for (t, _, v) in all {
            f(t, v);
        }
        Ok(())
    }

    /// Calls `f` for every sample in the querier's range, of every kind
    /// (floats and native histograms), oldest first; where sources
    /// overlap, a timestamp is reported once (the first source's).
    pub fn for_each_value(&self, mut f: impl FnMut(i64, SampleRef<'_>)) -> Result<(), QueryError> {
        let mut decoder = ChunkDecoder::new();
        let overlapping = self.chunks.windows(2).any(|w| w[1].mint <= w[0].maxt);
        if !overlapping {
            for c in &self.chunks {
                self.chunk_values(c, &mut decoder, &mut f)?;
            }
            return Ok(());
        }
        let mut all: Vec<(i64, usize, SampleValue)> = Vec::new();
        for (k, c) in self.chunks.iter().enumerate() {
            self.chunk_values(c, &mut decoder, &mut |t, v| {
                all.push((t, k, v.to_owned_value()))
            })?;
        }
        all.sort_by_key(|s| (s.0, s.1));
        all.dedup_by_key(|s| s.0);
        for (t, _, v) in &all {
            f(*t, SampleRef::of(v));
        }
        Ok(())
    }

    /// Reads every sample in the querier's range, as
    /// [`Self::for_each_value`] hands them out, but appends the floats to
    /// `floats` and calls `hist` only for native histograms. XOR chunks
    /// that overlap no other chunk are decoded in bulk
    /// ([`XorIterator::drain_into`]), without a call per sample: what a
    /// query spends most of its time on.
    pub fn read_into(
        &self,
        floats: &mut Vec<(i64, f64)>,
        mut hist: impl FnMut(i64, SampleRef<'_>),
    ) -> Result<(), QueryError> {
        fn split<'a>(
            floats: &'a mut Vec<(i64, f64)>,
            hist: &'a mut impl FnMut(i64, SampleRef<'_>),
        ) -> impl FnMut(i64, SampleRef<'_>) + 'a {
            |t, v| match v {
                SampleRef::Float(v) => floats.push((t, v)),
                v => hist(t, v),
            }
        }
        if self.chunks.windows(2).any(|w| w[1].mint <= w[0].maxt) {
            return self.for_each_value(split(floats, &mut hist));
        }
        let mut decoder = ChunkDecoder::new();
        for c in &self.chunks {
            if c.maxt < self.mint || c.mint > self.maxt {
                continue;
            }
            let res = self.with_chunk_bytes(c, |encoding, bytes| {
                if encoding != Encoding::Xor as u8 {
                    let mut f = split(floats, &mut hist);
                    return self.decode_values(c, encoding, bytes, &mut decoder, &mut f);
                }
                let start = floats.len();
                let mut it = XorIterator::new(bytes);
                it.drain_into(floats);
                self.keep_in_range(c, floats, start);
                it.error()
                    .map_or(Ok(()), |e| Err(DecodeError::Corrupt(e.clone())))
            })?;
            if let Some(Err(e)) = res {
                return Err(self.decode_error(c, e));
            }
        }
        Ok(())
    }

    /// Drops what [`Self::chunk_values`] would not have handed out from
    /// the samples of chunk `c` at `floats[start..]`: everything from the
    /// first sample after the querier's range on, then samples before it
    /// or deleted.
    fn keep_in_range(&self, c: &ChunkHandle, floats: &mut Vec<(i64, f64)>, start: usize) {
        let deleted = self.tombstones.get(c.tombstones).map_or(&[][..], |v| v);
        if c.mint >= self.mint && c.maxt <= self.maxt && deleted.is_empty() {
            return;
        }
        let (mint, maxt) = (self.mint, self.maxt);
        let tail = floats.get(start..).unwrap_or(&[]);
        if let Some(after) = tail.iter().position(|&(t, _)| t > maxt) {
            floats.truncate(start + after);
        }
        let mut k = start;
        for i in start..floats.len() {
            let sample = floats[i];
            let t = sample.0;
            if t >= mint && !deleted.iter().any(|&(a, b)| t >= a && t <= b) {
                floats[k] = sample;
                k += 1;
            }
        }
        floats.truncate(k);
    }

    /// Calls `f` with a chunk's encoding byte and bytes (not at all for a
    /// head chunk whose mapper is gone).
    fn with_chunk_bytes<R>(
        &self,
        c: &ChunkHandle,
        f: impl FnOnce(u8, &[u8]) -> R,
    ) -> Result<Option<R>, QueryError> {
        Ok(Some(match &c.source {
            ChunkSource::Mapped(chunk_ref, encoding) => {
                let Some(mapper) = &self.mapper else {
                    return Ok(None);
                };
                f(*encoding, &mapper.chunk(*chunk_ref)?)
            }
            ChunkSource::MappedBytes(bytes, encoding) => f(*encoding, bytes),
            ChunkSource::Memory(bytes, encoding) => f(*encoding, bytes),
            ChunkSource::Block(block, r) => {
                let (encoding, bytes) =
                    block
                        .chunk_of_any_encoding(*r)
                        .map_err(|e| QueryError::CorruptChunk {
                            series: self.labels.to_string(),
                            detail: e.to_string(),
                        })?;
                f(encoding, bytes)
            }
        }))
    }

    /// The error for a chunk that does not decode.
    fn decode_error(&self, c: &ChunkHandle, e: DecodeError) -> QueryError {
        match e {
            DecodeError::Corrupt(e) => QueryError::CorruptChunk {
                series: self.labels.to_string(),
                detail: e.to_string(),
            },
            DecodeError::Unsupported(encoding) => {
                let file = match &c.source {
                    ChunkSource::Block(block, r) => block.chunk_file(*r),
                    _ => self
                        .mapper
                        .as_ref()
                        .map(|m| m.dir().to_path_buf())
                        .unwrap_or_default(),
                };
                QueryError::Unsupported(Box::new(crate::error::Unsupported {
                    kind: crate::error::UnsupportedKind::BlockChunk(encoding),
                    file,
                    series: Some(self.labels.to_string()),
                    series_ref: None,
                }))
            }
        }
    }

    /// Decodes one chunk's samples in range, deletions skipped.
    fn chunk_values(
        &self,
        c: &ChunkHandle,
        decoder: &mut ChunkDecoder,
        f: &mut impl FnMut(i64, SampleRef<'_>),
    ) -> Result<(), QueryError> {
        if c.maxt < self.mint || c.mint > self.maxt {
            return Ok(());
        }
        let res = self.with_chunk_bytes(c, |encoding, bytes| {
            self.decode_values(c, encoding, bytes, decoder, f)
        })?;
        match res {
            Some(Err(e)) => Err(self.decode_error(c, e)),
            _ => Ok(()),
        }
    }

    /// Calls `f` for the samples of chunk `c` (`bytes`) in the querier's
    /// range and not deleted.
    fn decode_values(
        &self,
        c: &ChunkHandle,
        encoding: u8,
        bytes: &[u8],
        decoder: &mut ChunkDecoder,
        f: &mut impl FnMut(i64, SampleRef<'_>),
    ) -> Result<(), DecodeError> {
        let deleted = self.tombstones.get(c.tombstones).map_or(&[][..], |v| v);
        let (mint, maxt) = (self.mint, self.maxt);
        decoder.for_each(encoding, bytes, |t, v| {
            if t > maxt {
                return false;
            }
            if t >= mint && !deleted.iter().any(|&(a, b)| t >= a && t <= b) {
                f(t, v);
            }
            true
        })
    }

    /// Calls `f(mint, maxt, encoding, bytes)` for the series' chunks that
    /// overlap the querier's range, oldest first: as stored when they
    /// neither overlap each other nor hold deleted samples; otherwise the
    /// merged samples in range, deletions applied, encoded again
    /// ([`ChunkBuilder`]: at most 120 samples a chunk, a new one at each
    /// change of kind). Remote read streams these.
    pub fn for_each_chunk(
        &self,
        mut f: impl FnMut(i64, i64, Encoding, &[u8]),
    ) -> Result<(), QueryError> {
        let in_range: Vec<&ChunkHandle> = self
            .chunks
            .iter()
            .filter(|c| c.maxt >= self.mint && c.mint <= self.maxt)
            .collect();
        let overlapping = in_range.windows(2).any(|w| w[1].mint <= w[0].maxt);
        let deletions = in_range.iter().any(|c| {
            self.tombstones
                .get(c.tombstones)
                .is_some_and(|v| !v.is_empty())
        });
        if !overlapping && !deletions {
            for c in in_range {
                let res = self.with_chunk_bytes(c, |encoding, bytes| {
                    match Encoding::from_u8(encoding) {
                        Some(
                            e @ (Encoding::Xor
                            | Encoding::Xor2
                            | Encoding::Histogram
                            | Encoding::FloatHistogram),
                        ) => {
                            f(c.mint, c.maxt, e, bytes);
                            Ok(())
                        }
                        _ => Err(DecodeError::Unsupported(encoding)),
                    }
                })?;
                if let Some(Err(e)) = res {
                    return Err(self.decode_error(c, e));
                }
            }
            return Ok(());
        }
        let mut builder = ChunkBuilder::new();
        let mut emit = |c: BuiltChunk| f(c.mint, c.maxt, c.encoding, &c.bytes);
        self.for_each_value(|t, v| builder.push(t, v, &mut emit))?;
        builder.finish(&mut emit);
        Ok(())
    }

    fn chunk_samples(
        &self,
        c: &ChunkHandle,
        f: &mut impl FnMut(i64, f64),
    ) -> Result<(), QueryError> {
        if c.maxt < self.mint || c.mint > self.maxt {
            return Ok(());
        }
        self.with_chunk_bytes(c, |encoding, bytes| {
            if encoding == Encoding::Xor as u8 {
                self.decode_chunk(c, bytes, f)
            } else {
                // Floats of other encodings (XOR2) through the typed
                // decoder; histograms are not floats.
                let mut decoder = ChunkDecoder::new();
                self.chunk_values(c, &mut decoder, &mut |t, v| {
                    if let SampleRef::Float(v) = v {
                        f(t, v);
                    }
                })
            }
        })?
        .unwrap_or(Ok(()))
    }

    fn decode_chunk(
        &self,
        c: &ChunkHandle,
        bytes: &[u8],
        f: &mut impl FnMut(i64, f64),
    ) -> Result<(), QueryError> {
        let deleted = self.tombstones.get(c.tombstones).map_or(&[][..], |v| v);
        let mut it = XorIterator::new(bytes);
        for (t, v) in it.by_ref() {
            if t < self.mint {
                continue;
            }
            if t > self.maxt {
                break;
            }
            if deleted.iter().any(|&(a, b)| t >= a && t <= b) {
                continue;
            }
            f(t, v);
        }
        if let Some(e) = it.error() {
            return Err(QueryError::CorruptChunk {
                series: self.labels.to_string(),
                detail: e.to_string(),
            });
        }
        Ok(())
    }

    /// All samples in range.
    pub fn samples(&self) -> Result<Vec<(i64, f64)>, QueryError> {
        let mut out = Vec::new();
        self.samples_into(&mut out)?;
        Ok(out)
    }

    /// All samples in range, into `out` (cleared first; its allocation is
    /// reused, so a caller reading many series in turn allocates once).
    pub fn samples_into(&self, out: &mut Vec<(i64, f64)>) -> Result<(), QueryError> {
        out.clear();
        // Chunks hold ~120 samples: sizing for that up front spares the
        // reallocations (and page faults) of growing a long series' vector.
        out.reserve(self.chunks.len() * 120);
        self.for_each_sample(|t, v| out.push((t, v)))
    }

    /// Adds `other`'s chunks (the same series from another source).
    fn absorb(&mut self, other: QuerySeries) {
        let base = self.tombstones.len();
        self.tombstones.extend(other.tombstones);
        for mut c in other.chunks {
            if c.tombstones != NO_TOMBSTONES {
                c.tombstones += base;
            }
            self.chunks.push(c);
        }
        self.chunks.sort_by_key(|c| c.mint);
        if self.mapper.is_none() {
            self.mapper = other.mapper;
        }
        if self.series_ref == 0 {
            self.series_ref = other.series_ref;
        }
    }
}

impl<'h> HeadQuerier<'h> {
    pub fn new(head: &'h Head, mint: i64, maxt: i64) -> Self {
        HeadQuerier { head, mint, maxt }
    }

    /// Sorted refs of the series matching all matchers.
    pub fn postings(&self, matchers: &[Matcher]) -> Vec<u64> {
        let head = self.head;
        let postings = head.postings.read();
        let mut its: Vec<Vec<u64>> = Vec::new();
        let mut not_its: Vec<Vec<u64>> = Vec::new();
        if matchers.iter().all(|m| m.matches("")) {
            its.push(postings.all().to_vec());
        }
        for m in matchers {
            let Some(name) = head.symbols.lookup(&m.name) else {
                // No series has this label: it reads as "" everywhere.
                if !m.matches("") {
                    return Vec::new();
                }
                continue;
            };
            if m.kind == MatchType::Equal && !m.value.is_empty() {
                let list = head
                    .symbols
                    .lookup(&m.value)
                    .map_or_else(Vec::new, |v| postings.get(name, v).to_vec());
                its.push(list);
                continue;
            }
            let matches_empty = m.matches("");
            let mut lists: Vec<&RefList> = Vec::new();
            head.symbols.with_resolver(|res| {
                for (v, list) in postings.values(name) {
                    // Keep values the matcher accepts; for empty-matching
                    // matchers collect the rejected ones, to subtract.
                    if m.matches(res.get(v)) != matches_empty {
                        lists.push(list);
                    }
                }
            });
            if matches_empty {
                not_its.push(merge(&lists));
            } else {
                its.push(merge(&lists));
            }
        }
        let mut out = intersect(its);
        for n in &not_its {
            out = subtract(&out, n);
        }
        out
    }

    /// Handles for a series' closed chunks in range: those in
    /// `chunks_head/` (resolved now, so they stay readable if truncation
    /// deletes the file) and those kept in memory after a failed write.
    fn closed_chunks(
        &self,
        mmapped: &[MmappedChunk],
        unmapped: &[UnmappedChunk],
        out: &mut Vec<ChunkHandle>,
    ) {
        let in_range = |mint: i64, maxt: i64| maxt >= self.mint && mint <= self.maxt;
        for c in mmapped.iter().filter(|c| in_range(c.mint, c.maxt)) {
            let encoding = c.encoding as u8;
            let source = match self.head.mapper.chunk(c.chunk_ref) {
                Ok(bytes) => ChunkSource::MappedBytes(bytes, encoding),
                // Reported when the samples are read.
                Err(_) => ChunkSource::Mapped(c.chunk_ref, encoding),
            };
            out.push(ChunkHandle::of_head(source, c.mint, c.maxt));
        }
        for c in unmapped.iter().filter(|c| in_range(c.mint, c.maxt)) {
            let source = ChunkSource::Memory(c.bytes.clone(), c.encoding as u8);
            out.push(ChunkHandle::of_head(source, c.mint, c.maxt));
        }
    }

    /// A series' out-of-order chunks in range: those in `chunks_head/`,
    /// those kept in memory, and the in-memory one encoded now. They may
    /// overlap each other and the in-order chunks; reads merge by time.
    fn ooo_chunks(&self, ooo: &OooFields, out: &mut Vec<ChunkHandle>) {
        let in_range = |mint: i64, maxt: i64| maxt >= self.mint && mint <= self.maxt;
        self.closed_chunks(&ooo.mmapped, &ooo.unmapped, out);
        if let Some(h) = ooo.head.as_ref().filter(|h| in_range(h.mint, h.maxt)) {
            let float_encoding = self.head.chunk_opts.float_encoding;
            h.chunk.encode(float_encoding, &mut |c: BuiltChunk| {
                let source = ChunkSource::Memory(c.bytes, c.encoding as u8);
                out.push(ChunkHandle::of_head(source, c.mint, c.maxt));
            });
        }
    }

    /// Series matching all matchers that have samples in range, sorted by labels.
    pub fn select(&self, matchers: &[Matcher]) -> Vec<QuerySeries> {
        let head = self.head;
        let mut out: Vec<QuerySeries> = Vec::new();
        for r in self.postings(matchers) {
            let Some(entry) = head.series.get(r) else {
                continue;
            };
            let mut chunks = Vec::new();
            {
                let d = entry.data.lock();
                self.closed_chunks(&d.mmapped, d.unmapped(), &mut chunks);
                if let Some(c) = &d.open {
                    if c.has_samples() && c.maxt >= self.mint && c.mint <= self.maxt {
                        let bytes = c.chunk.bytes().to_vec();
                        let source = ChunkSource::Memory(bytes, c.chunk.encoding() as u8);
                        chunks.push(ChunkHandle::of_head(source, c.mint, c.maxt));
                    }
                }
                if let Some(ooo) = d.ooo() {
                    self.ooo_chunks(ooo, &mut chunks);
                }
            }
            if chunks.is_empty() {
                continue;
            }
            chunks.sort_by_key(|c| c.mint);
            out.push(QuerySeries {
                series_ref: r,
                labels: head.resolve_labels(entry.labels()),
                chunks,
                tombstones: vec![head.tombstones_of(r)],
                mint: self.mint,
                maxt: self.maxt,
                mapper: Some(head.mapper.clone()),
            });
        }
        out.sort_by(|a, b| a.labels.cmp(&b.labels));
        out
    }

    /// Sorted label names of the series matching `matchers` (all series if none).
    pub fn label_names(&self, matchers: &[Matcher]) -> Vec<String> {
        let head = self.head;
        let mut names: Vec<String> = if matchers.is_empty() {
            let postings = head.postings.read();
            head.symbols
                .with_resolver(|res| postings.names().map(|n| res.get(n).to_owned()).collect())
        } else {
            let mut ids: Vec<u32> = Vec::new();
            for r in self.postings(matchers) {
                if let Some(e) = head.series.get(r) {
                    ids.extend(e.labels().chunks_exact(2).map(|p| p[0]));
                }
            }
            ids.sort_unstable();
            ids.dedup();
            head.symbols
                .with_resolver(|res| ids.iter().map(|&i| res.get(i).to_owned()).collect())
        };
        names.sort();
        names.dedup();
        names
    }

    /// Sorted values of label `name` among the series matching `matchers`.
    pub fn label_values(&self, name: &str, matchers: &[Matcher]) -> Vec<String> {
        let head = self.head;
        let Some(name_id) = head.symbols.lookup(name) else {
            return Vec::new();
        };
        let mut values: Vec<String> = if matchers.is_empty() {
            let postings = head.postings.read();
            head.symbols.with_resolver(|res| {
                postings
                    .values(name_id)
                    .filter(|(_, l)| !l.is_empty())
                    .map(|(v, _)| res.get(v).to_owned())
                    .collect()
            })
        } else {
            let mut ids: Vec<u32> = Vec::new();
            for r in self.postings(matchers) {
                if let Some(e) = head.series.get(r) {
                    ids.extend(
                        e.labels()
                            .chunks_exact(2)
                            .filter(|p| p[0] == name_id)
                            .map(|p| p[1]),
                    );
                }
            }
            ids.sort_unstable();
            ids.dedup();
            head.symbols
                .with_resolver(|res| ids.iter().map(|&i| res.get(i).to_owned()).collect())
        };
        values.sort();
        values
    }
}

impl Head {
    /// A querier over [mint, maxt].
    pub fn querier(&self, mint: i64, maxt: i64) -> HeadQuerier<'_> {
        HeadQuerier::new(self, mint, maxt)
    }
}

/// Series of a block matching `matchers` with chunks in [mint, maxt], sorted
/// by labels.
pub(crate) fn select_block(
    block: &Arc<Block>,
    matchers: &[Matcher],
    mint: i64,
    maxt: i64,
) -> Result<Vec<QuerySeries>, QueryError> {
    let refs = block
        .postings(matchers)
        .map_err(|e| QueryError::Block(e.to_string()))?;
    let workers = series_readers(refs.len());
    if workers <= 1 {
        return read_block_series(block, &refs, mint, maxt);
    }
    // Decoding series entries is independent per series: split the refs
    // (kept in order, so the result stays sorted) over the cores.
    use rayon::prelude::*;
    let part = refs.len().div_ceil(workers);
    let parts: Vec<Result<Vec<QuerySeries>, QueryError>> = refs
        .par_chunks(part)
        .map(|refs| read_block_series(block, refs, mint, maxt))
        .collect();
    let mut out = Vec::with_capacity(refs.len());
    for p in parts {
        out.extend(p?);
    }
    Ok(out)
}

/// Series below which one thread reads a block's selection (a thread
/// costs about what reading a few dozen series does).
const PARALLEL_MIN_SERIES: usize = 256;

/// How many threads read `n` selected series of one block.
fn series_readers(n: usize) -> usize {
    let cores = rayon::current_num_threads();
    if n < PARALLEL_MIN_SERIES {
        1
    } else {
        cores.min(n / (PARALLEL_MIN_SERIES / 2)).max(1)
    }
}

/// [`select_block`]'s work for some of the selected refs, in order.
fn read_block_series(
    block: &Arc<Block>,
    refs: &[u64],
    mint: i64,
    maxt: i64,
) -> Result<Vec<QuerySeries>, QueryError> {
    let err = |e: crate::block::BlockError| QueryError::Block(e.to_string());
    let mut out = Vec::with_capacity(refs.len());
    let (mut metas, mut scratch) = (Vec::new(), Vec::new());
    let mut cache = SymbolCache::default();
    for &r in refs {
        let labels = block
            .series_cached(r, &mut metas, maxt, &mut scratch, Some(&mut cache))
            .map_err(err)?;
        let tombstones: Vec<Vec<(i64, i64)>> = match block.tombstones().get(r) {
            Some(ivs) if !ivs.is_empty() => vec![ivs.iter().map(|iv| (iv.mint, iv.maxt)).collect()],
            _ => Vec::new(),
        };
        let stones = if tombstones.is_empty() {
            NO_TOMBSTONES
        } else {
            0
        };
        let chunks: Vec<ChunkHandle> = metas
            .iter()
            .filter(|c| c.max_time >= mint && c.min_time <= maxt)
            .map(|c| ChunkHandle {
                source: ChunkSource::Block(block.clone(), c.chunk_ref),
                mint: c.min_time,
                maxt: c.max_time,
                tombstones: stones,
            })
            .collect();
        if chunks.is_empty() {
            continue;
        }
        out.push(QuerySeries {
            series_ref: 0,
            labels,
            chunks,
            tombstones,
            mint,
            maxt,
            mapper: None,
        });
    }
    // The index stores series sorted by label set already.
    Ok(out)
}

/// A querier over the blocks and the head of a database, for [mint, maxt]
/// (inclusive): only blocks overlapping the range are read, and a series
/// found in several of them (and the head) comes back once, its chunks
/// merged.
///
/// Each selection takes the block list and the head's chunks together while
/// no head range is being moved into a block (`consistency`), so a
/// compaction running meanwhile neither hides samples nor shows them twice;
/// what was selected stays readable after the compaction (head chunk files
/// and blocks stay mapped while referenced).
pub struct Querier<'a> {
    head: HeadQuerier<'a>,
    blocks: &'a RwLock<Vec<Arc<Block>>>,
    consistency: &'a RwLock<()>,
    mint: i64,
    maxt: i64,
}

impl<'a> Querier<'a> {
    pub(crate) fn new(
        head: &'a Head,
        blocks: &'a RwLock<Vec<Arc<Block>>>,
        consistency: &'a RwLock<()>,
        mint: i64,
        maxt: i64,
    ) -> Self {
        Querier {
            head: HeadQuerier::new(head, mint, maxt),
            blocks,
            consistency,
            mint,
            maxt,
        }
    }

    fn blocks(&self) -> Vec<Arc<Block>> {
        self.blocks
            .read()
            .iter()
            .filter(|b| b.overlaps(self.mint, self.maxt))
            .cloned()
            .collect()
    }

    /// Series matching all matchers with samples in range, sorted by labels.
    pub fn select(&self, matchers: &[Matcher]) -> Result<Vec<QuerySeries>, QueryError> {
        let (blocks, head) = {
            let _g = self.consistency.read();
            (self.blocks(), self.head.select(matchers))
        };
        let mut sets = Vec::with_capacity(blocks.len() + 1);
        for b in &blocks {
            sets.push(select_block(b, matchers, self.mint, self.maxt)?);
        }
        sets.push(head);
        Ok(merge_sorted_series(sets))
    }

    /// Sorted label names of the matching series (all series if no matchers).
    pub fn label_names(&self, matchers: &[Matcher]) -> Result<Vec<String>, QueryError> {
        let mut all = self.head.label_names(matchers);
        for b in &self.blocks() {
            all.extend(
                b.label_names(matchers)
                    .map_err(|e| QueryError::Block(e.to_string()))?,
            );
        }
        all.sort();
        all.dedup();
        Ok(all)
    }

    /// Sorted values of label `name` among the matching series.
    pub fn label_values(
        &self,
        name: &str,
        matchers: &[Matcher],
    ) -> Result<Vec<String>, QueryError> {
        let mut all = self.head.label_values(name, matchers);
        for b in &self.blocks() {
            all.extend(
                b.label_values(name, matchers)
                    .map_err(|e| QueryError::Block(e.to_string()))?,
            );
        }
        all.sort();
        all.dedup();
        Ok(all)
    }
}

/// Merges lists of series, each sorted by labels, into one sorted list with
/// each label set once.
fn merge_sorted_series(sets: Vec<Vec<QuerySeries>>) -> Vec<QuerySeries> {
    let mut sets: Vec<Vec<QuerySeries>> = sets.into_iter().filter(|s| !s.is_empty()).collect();
    if sets.len() <= 1 {
        return sets.pop().unwrap_or_default();
    }
    let mut all: Vec<QuerySeries> = sets.into_iter().flatten().collect();
    // Stable: the same label set keeps source order (blocks by time, then head).
    all.sort_by(|a, b| a.labels.cmp(&b.labels));
    let mut out: Vec<QuerySeries> = Vec::with_capacity(all.len());
    for s in all {
        match out.last_mut() {
            Some(last) if last.labels == s.labels => last.absorb(s),
            _ => out.push(s),
        }
    }
    out
}
