//! One series in the head: its closed chunks (m-mapped in `chunks_head/`) and
//! its open chunk (in memory), plus the chunk-cutting rules.
//!
//! The cutting rules are Prometheus' so that chunks line up with theirs:
//! a chunk never crosses a chunk-range boundary (2 h by default), and a
//! switch between floats and histograms starts a chunk of the other
//! encoding. Float (XOR) chunks: after a quarter of the target samples the
//! end time is re-estimated so the remaining samples of the range spread
//! evenly over chunks; a chunk is cut at twice the target count, or when it
//! nears 1 KiB. Histogram chunks are cut by size instead: the end time is
//! estimated once a chunk reaches a quarter of 1 KiB, and a chunk is cut at
//! that time or at 2 KiB, but not before it holds 10 samples unless the
//! chunk range ends; the chunk encoding itself may also ask for a new chunk
//! (a counter reset, a schema change) or recode the open one (new buckets),
//! see `ferrite_chunkenc::histogram`.

use ferrite_chunkenc::{
    AppendOutcome, Encoding, MIN_SAMPLES_PER_HISTOGRAM_CHUNK, TARGET_BYTES_PER_HISTOGRAM_CHUNK,
};
use ferrite_model::{FloatHistogram, Histogram, SampleValue};
use thin_vec::ThinVec;

use crate::sample::SampleRef;
use ferrite_model::prefetch::prefetch_lines;
use tracing::error;

pub use super::chunk::{HeadChunk, ValueKind};
use super::ooo::OooFields;
use crate::head_chunks::{ChunkDiskMapper, ChunkDiskMapperRef};

/// Cut a chunk before it could exceed 1024 bytes with one more (19-byte worst case) sample.
const MAX_XOR_CHUNK_BYTES: usize = 1024 - 19;

/// Chunk-cutting settings of the head.
#[derive(Clone, Copy, Debug)]
pub struct ChunkOpts {
    /// Chunk range in milliseconds (the head's block range, 2 h by default).
    pub chunk_range: i64,
    /// Target samples per chunk (120 by default).
    pub samples_per_chunk: u16,
    /// The encoding of new float chunks: XOR (the default) or XOR2. The
    /// two are compatible, so a change does not cut the open chunk.
    pub float_encoding: Encoding,
}

/// A closed chunk stored in the head chunks files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MmappedChunk {
    pub chunk_ref: ChunkDiskMapperRef,
    pub mint: i64,
    pub maxt: i64,
    pub num_samples: u16,
    pub encoding: Encoding,
}

/// The chunk being appended to.
pub struct OpenChunk {
    pub chunk: HeadChunk,
    pub mint: i64,
    /// The newest sample's time; `i64::MIN` while the chunk is empty (no
    /// sample can have that time: appends need one after the newest).
    pub maxt: i64,
}

impl OpenChunk {
    /// Whether the chunk holds a sample, known without reading the chunk
    /// (a histogram chunk is boxed: that would be another cache miss on
    /// every append's order check).
    pub fn has_samples(&self) -> bool {
        self.maxt != i64::MIN
    }
}

/// A closed chunk kept in memory because writing it to `chunks_head/` failed.
pub struct UnmappedChunk {
    pub bytes: Vec<u8>,
    pub mint: i64,
    pub maxt: i64,
    pub encoding: Encoding,
}

/// Sample data of one series.
pub struct MemSeries {
    pub mmapped: ThinVec<MmappedChunk>,
    pub open: Option<OpenChunk>,
    next_at: i64,
    /// What few series have (see [`SeriesExtra`]); `None` when it would
    /// hold nothing.
    extra: Option<Box<SeriesExtra>>,
}

/// The parts of a series that few series need, boxed so that the others
/// do not carry them (a head holds millions of series; together they
/// would make every one 16 bytes larger).
#[derive(Default)]
struct SeriesExtra {
    /// Closed chunks that could not be written to `chunks_head/`, kept
    /// in memory.
    unmapped: Vec<UnmappedChunk>,
    /// Out-of-order samples (see `super::ooo`).
    ooo: Option<OooFields>,
    /// Whether the open histogram chunk's end time was estimated already
    /// (once per chunk, at a quarter of its target size).
    histogram_end_estimated: bool,
    /// The newest sample when it is a histogram, for the duplicate checks
    /// of appends at its timestamp. A newest float is read from the open
    /// chunk's encoder, which keeps it anyway.
    last_histogram: Option<SampleValue>,
}

impl SeriesExtra {
    fn is_empty(&self) -> bool {
        self.unmapped.is_empty()
            && self.ooo.is_none()
            && !self.histogram_end_estimated
            && self.last_histogram.is_none()
    }
}

/// Where the next float append to a series writes (its open chunk's
/// tail and header), as plain addresses taken while the series was
/// locked, so that a commit can prefetch them for the samples ahead
/// without locking those series again. An address may be stale by then
/// (the chunk was cut or grew in between): prefetching it is harmless.
#[derive(Clone, Copy, Default)]
pub(crate) struct AppendHint([usize; 2]);

impl AppendHint {
    pub(crate) fn prefetch(self) {
        for a in self.0 {
            prefetch_lines(a as *const u8, 1);
        }
    }
}

/// Result of checking a sample against a series.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Appendable {
    Yes,
    /// Same timestamp and identical value as the newest sample: accepted, not stored again.
    Duplicate,
    OutOfOrder,
    /// A float at the newest sample's timestamp, with another value.
    Conflict {
        existing: f64,
    },
    /// A float at the newest sample's timestamp, which is a histogram.
    ConflictWithHistogram,
    /// A histogram at the newest sample's timestamp, other than it.
    HistogramConflict,
}

fn range_for_timestamp(t: i64, width: i64) -> i64 {
    t.div_euclid(width) * width + width
}

/// Estimates when to cut so the rest of the range splits into equal chunks.
fn compute_chunk_end_time(start: i64, cur: i64, max: i64, ratio_to_full: f64) -> i64 {
    let n = (max - start) as f64 / ((cur - start + 1) as f64 * ratio_to_full);
    if n <= 1.0 {
        return max;
    }
    (start as f64 + (max - start) as f64 / n.floor()) as i64
}

impl Default for MemSeries {
    fn default() -> Self {
        Self::new()
    }
}

impl MemSeries {
    pub fn new() -> Self {
        MemSeries {
            mmapped: ThinVec::new(),
            open: None,
            next_at: i64::MIN,
            extra: None,
        }
    }

    /// The series' extra parts, made if it has none.
    fn extra_mut(&mut self) -> &mut SeriesExtra {
        self.extra.get_or_insert_with(Default::default)
    }

    /// Changes the extra parts with `change`, dropping them if that left
    /// them empty.
    fn change_extra<R>(&mut self, change: impl FnOnce(&mut SeriesExtra) -> R) -> R {
        let r = change(self.extra_mut());
        if self.extra.as_ref().is_some_and(|e| e.is_empty()) {
            self.extra = None;
        }
        r
    }

    /// Closed in-order chunks kept in memory because writing them to
    /// `chunks_head/` failed, oldest first.
    pub fn unmapped(&self) -> &[UnmappedChunk] {
        self.extra.as_ref().map_or(&[], |e| &e.unmapped)
    }

    /// The out-of-order samples, if any.
    pub fn ooo(&self) -> Option<&OooFields> {
        self.extra.as_ref().and_then(|e| e.ooo.as_ref())
    }

    /// The out-of-order samples, if any, to change.
    pub fn ooo_mut(&mut self) -> Option<&mut OooFields> {
        self.extra.as_mut().and_then(|e| e.ooo.as_mut())
    }

    /// The out-of-order samples, made empty if there are none.
    pub fn ooo_or_default(&mut self) -> &mut OooFields {
        self.extra_mut().ooo.get_or_insert_with(Default::default)
    }

    /// Forgets the out-of-order samples.
    pub fn clear_ooo(&mut self) {
        self.change_extra(|e| e.ooo = None);
    }

    fn histogram_end_estimated(&self) -> bool {
        self.extra
            .as_ref()
            .is_some_and(|e| e.histogram_end_estimated)
    }

    fn set_histogram_end_estimated(&mut self, estimated: bool) {
        if estimated != self.histogram_end_estimated() {
            self.change_extra(|e| e.histogram_end_estimated = estimated);
        }
    }

    /// Timestamp of the newest sample, `i64::MIN` if none.
    pub fn max_time(&self) -> i64 {
        if let Some(c) = &self.open {
            if c.has_samples() {
                return c.maxt;
            }
        }
        let u = self.unmapped().last().map_or(i64::MIN, |c| c.maxt);
        let m = self.mmapped.last().map_or(i64::MIN, |c| c.maxt);
        u.max(m)
    }

    /// Timestamp of the oldest sample, `i64::MAX` if none.
    pub fn min_time(&self) -> i64 {
        if let Some(c) = self.mmapped.first() {
            return c.mint;
        }
        if let Some(c) = self.unmapped().first() {
            return c.mint;
        }
        match &self.open {
            Some(c) if c.has_samples() => c.mint,
            _ => i64::MAX,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.max_time() == i64::MIN
    }

    /// The newest sample when it is a histogram.
    fn last_histogram(&self) -> Option<&SampleValue> {
        self.extra.as_ref().and_then(|e| e.last_histogram.as_ref())
    }

    /// The kind of the newest sample when it is a histogram: `Some(false)`
    /// for an integer histogram, `Some(true)` for a float histogram.
    pub fn last_histogram_kind(&self) -> Option<bool> {
        match self.last_histogram()? {
            SampleValue::Histogram(_) => Some(false),
            SampleValue::FloatHistogram(_) => Some(true),
            SampleValue::Float(_) => None,
        }
    }

    /// Forgets the newest histogram (a float was appended after it).
    fn forget_last_histogram(&mut self) {
        if self.last_histogram().is_some() {
            self.change_extra(|e| e.last_histogram = None);
        }
    }

    /// Checks a float sample the way Prometheus does before accepting it.
    pub fn appendable(&self, t: i64, v: f64) -> Appendable {
        self.appendable_at(t, |last| match last {
            SampleValue::Float(f) if f.to_bits() == v.to_bits() => Appendable::Duplicate,
            SampleValue::Float(f) => Appendable::Conflict { existing: *f },
            _ => Appendable::ConflictWithHistogram,
        })
    }

    /// Checks an integer histogram sample the way Prometheus does.
    pub fn appendable_histogram(&self, t: i64, h: &Histogram) -> Appendable {
        self.appendable_at(t, |last| match last {
            SampleValue::Histogram(l) if ferrite_model::histogram::same_histogram(l, h) => {
                Appendable::Duplicate
            }
            _ => Appendable::HistogramConflict,
        })
    }

    /// Checks a float histogram sample the way Prometheus does.
    pub fn appendable_float_histogram(&self, t: i64, h: &FloatHistogram) -> Appendable {
        self.appendable_at(t, |last| match last {
            SampleValue::FloatHistogram(l) if l.equals(h) => Appendable::Duplicate,
            _ => Appendable::HistogramConflict,
        })
    }

    /// The checks common to every kind; `at_newest` judges a sample at the
    /// newest sample's timestamp.
    fn appendable_at(
        &self,
        t: i64,
        at_newest: impl FnOnce(&SampleValue) -> Appendable,
    ) -> Appendable {
        let maxt = self.max_time();
        if maxt == i64::MIN || t > maxt {
            return Appendable::Yes;
        }
        if t < maxt {
            return Appendable::OutOfOrder;
        }
        let Some(open) = &self.open else {
            // Newest sample is in an m-mapped chunk (after a restart) and its
            // value is not at hand: like Prometheus, accept and drop silently.
            return Appendable::Duplicate;
        };
        if let Some(h) = self.last_histogram() {
            return at_newest(h);
        }
        match open.chunk.last_float() {
            Some(f) => at_newest(&SampleValue::Float(f)),
            // The open chunk is empty: the newest sample is not in it
            // either.
            None => Appendable::Duplicate,
        }
    }

    /// Appends a sample, cutting and m-mapping chunks as needed. Returns false
    /// (and stores nothing) if `t` is not after the newest sample.
    pub fn append(
        &mut self,
        series_ref: u64,
        t: i64,
        v: f64,
        opts: ChunkOpts,
        mapper: &ChunkDiskMapper,
    ) -> bool {
        if t <= self.max_time() {
            return false;
        }
        let need_cut = match &self.open {
            None => true,
            Some(c) => match &c.chunk {
                HeadChunk::Xor(_) | HeadChunk::Xor2(_) => {
                    let x = &c.chunk;
                    let n = x.num_samples();
                    if x.bytes().len() > MAX_XOR_CHUNK_BYTES {
                        true
                    } else {
                        if n == opts.samples_per_chunk / 4 {
                            self.next_at =
                                compute_chunk_end_time(c.mint, c.maxt, self.next_at, 4.0);
                        }
                        t >= self.next_at || n >= opts.samples_per_chunk.saturating_mul(2)
                    }
                }
                // A float after histograms starts an XOR chunk.
                _ => true,
            },
        };
        if need_cut {
            self.cut(series_ref, t, ValueKind::Float, opts, mapper);
        }
        let Some(c) = self.open.as_mut() else {
            return false;
        };
        match &mut c.chunk {
            HeadChunk::Xor(x) => x.append(t, v),
            // No start timestamps stored (Prometheus' `st-storage` is off).
            HeadChunk::Xor2(x) => x.append(0, t, v),
            _ => return false,
        }
        c.maxt = t;
        self.forget_last_histogram();
        true
    }

    /// Appends a histogram sample, integer or float (validated by the
    /// caller), cutting, recoding and m-mapping chunks as Prometheus does.
    /// Returns false (and stores nothing) if `t` is not after the newest
    /// sample, or `v` is a float.
    pub fn append_histogram(
        &mut self,
        series_ref: u64,
        t: i64,
        v: SampleRef<'_>,
        opts: ChunkOpts,
        mapper: &ChunkDiskMapper,
    ) -> bool {
        let appended = self.append_histogram_unrecorded(series_ref, t, v, opts, mapper);
        if appended {
            self.record_last(v);
        }
        appended
    }

    /// [`Self::append_histogram`] without keeping `v` as the newest value
    /// (the duplicate check's reference): for replay, which appends a run
    /// of one series' samples and then records only the run's last
    /// appended one ([`Self::record_last`]).
    pub(crate) fn append_histogram_unrecorded(
        &mut self,
        series_ref: u64,
        t: i64,
        v: SampleRef<'_>,
        opts: ChunkOpts,
        mapper: &ChunkDiskMapper,
    ) -> bool {
        let kind = match v {
            SampleRef::Histogram(_) => ValueKind::Histogram,
            SampleRef::FloatHistogram(_) => ValueKind::FloatHistogram,
            SampleRef::Float(_) => return false,
        };
        let Some(prev) = self.prepare_histogram_append(series_ref, t, kind, opts, mapper) else {
            return false;
        };
        let Some(outcome) = self
            .open
            .as_mut()
            .and_then(|c| c.chunk.append_histogram(prev.as_ref(), t, v))
        else {
            return false;
        };
        self.finish_histogram_append(series_ref, t, outcome, opts, mapper)
    }

    /// Prefetches what an append to this series touches first beyond the
    /// series itself and needs no pointer read from there: the boxed
    /// open chunk (histogram kinds) and the newest value's arrays. The
    /// first of two stages, when appending to many series in turn.
    pub(crate) fn prefetch_far(&self) {
        if let Some(c) = &self.open {
            prefetch_lines(c.chunk.boxed_address(), 5);
        }
        if let Some(SampleValue::Histogram(h)) = self.last_histogram() {
            prefetch_lines(h.positive_buckets.as_ptr(), 2);
            prefetch_lines(h.positive_spans.as_ptr(), 1);
        }
    }

    /// The second stage after [`Self::prefetch_far`]: the open chunk's
    /// tail, header and encoder state, read through the boxed chunk.
    pub(crate) fn prefetch_near(&self) {
        if let Some(c) = &self.open {
            for p in c.chunk.append_addresses() {
                prefetch_lines(p, 2);
            }
        }
    }

    /// Where the next float append to this series writes: see
    /// [`AppendHint`].
    pub(crate) fn append_hint(&self) -> AppendHint {
        match &self.open {
            Some(c) => AppendHint([
                c.chunk.tail_ptr() as usize,
                c.chunk.bytes().as_ptr() as usize,
            ]),
            None => AppendHint::default(),
        }
    }

    /// Keeps `v`, the newest appended sample, for the duplicate check
    /// (a float is in the open chunk already).
    pub(crate) fn record_last(&mut self, v: SampleRef<'_>) {
        if let SampleRef::Float(_) = v {
            return self.forget_last_histogram();
        }
        match &mut self.extra_mut().last_histogram {
            Some(last) => v.store_into(last),
            slot @ None => *slot = Some(v.to_owned_value()),
        }
    }

    /// Prometheus' `histogramsAppendPreprocessor`: refuses a sample not
    /// after the newest one (`None`), and cuts a new chunk of `kind` when
    /// the open one has another encoding, has grown past its size or end
    /// time, or there is none. `Some(prev)`: the chunk closed by such a
    /// cut (for the new chunk's counter-reset header), else `Some(None)`.
    fn prepare_histogram_append(
        &mut self,
        series_ref: u64,
        t: i64,
        kind: ValueKind,
        opts: ChunkOpts,
        mapper: &ChunkDiskMapper,
    ) -> Option<Option<HeadChunk>> {
        if t <= self.max_time() {
            return None;
        }
        let mut closed = None;
        let mut created = false;
        match &self.open {
            Some(c) if c.chunk.kind() == kind => {}
            _ => {
                closed = self.cut(series_ref, t, kind, opts, mapper);
                created = true;
            }
        }
        let c = self.open.as_ref()?;
        let n = c.chunk.num_samples();
        let bytes = c.chunk.bytes().len();
        let estimated = self.histogram_end_estimated();
        let next_range_start = if estimated {
            range_for_timestamp(c.mint, opts.chunk_range)
        } else {
            // Not estimated yet: the minimum sample count is not enforced.
            self.next_at
        };
        if !estimated && bytes >= TARGET_BYTES_PER_HISTOGRAM_CHUNK / 4 {
            let ratio = TARGET_BYTES_PER_HISTOGRAM_CHUNK as f64 / bytes as f64;
            self.next_at = compute_chunk_end_time(c.mint, c.maxt, self.next_at, ratio);
            self.set_histogram_end_estimated(true);
        }
        if (t >= self.next_at || bytes >= TARGET_BYTES_PER_HISTOGRAM_CHUNK * 2)
            && (n >= MIN_SAMPLES_PER_HISTOGRAM_CHUNK || t >= next_range_start)
        {
            closed = self.cut(series_ref, t, kind, opts, mapper);
            created = true;
        }
        if created {
            self.set_histogram_end_estimated(false);
        }
        Some(closed)
    }

    /// Applies the chunk's verdict on an appended histogram: the open chunk
    /// took it (perhaps recoded), or a new chunk holding it replaces the
    /// open one, which is closed.
    fn finish_histogram_append(
        &mut self,
        series_ref: u64,
        t: i64,
        outcome: Result<AppendOutcome<HeadChunk>, ferrite_chunkenc::AppendError>,
        opts: ChunkOpts,
        mapper: &ChunkDiskMapper,
    ) -> bool {
        match outcome {
            Ok(AppendOutcome::Appended | AppendOutcome::Recoded) => {
                if let Some(c) = self.open.as_mut() {
                    c.maxt = t;
                }
                true
            }
            Ok(AppendOutcome::NewChunk(chunk)) => {
                if let Some(old) = self.open.take() {
                    self.close_chunk(series_ref, old, mapper);
                }
                self.open = Some(OpenChunk {
                    chunk,
                    mint: t,
                    maxt: t,
                });
                self.next_at = range_for_timestamp(t, opts.chunk_range);
                true
            }
            Err(e) => {
                // Validated histograms do not get here; nothing was stored.
                error!(series_ref, t, error = %e, "histogram chunk refused a sample");
                false
            }
        }
    }

    /// Closes the open chunk (writing it to `chunks_head/`) and opens a new
    /// one of `kind` at `mint`. Returns the closed chunk when it is a
    /// histogram chunk (its last sample decides the new chunk's counter
    /// reset header); a closed XOR chunk's buffer is reused instead.
    fn cut(
        &mut self,
        series_ref: u64,
        mint: i64,
        kind: ValueKind,
        opts: ChunkOpts,
        mapper: &ChunkDiskMapper,
    ) -> Option<HeadChunk> {
        let closed = match self.open.take() {
            Some(old) => self.close_chunk(series_ref, old, mapper),
            None => None,
        };
        let xor2 = opts.float_encoding == Encoding::Xor2;
        let (chunk, closed) = match (closed, kind) {
            // The closed chunk's buffer, once on disk, is the new chunk's.
            (Some(HeadChunk::Xor(mut c)), ValueKind::Float) if !xor2 => {
                c.reset();
                (HeadChunk::Xor(c), None)
            }
            (Some(HeadChunk::Xor2(mut c)), ValueKind::Float) if xor2 => {
                c.reset();
                (HeadChunk::Xor2(c), None)
            }
            (Some(HeadChunk::Histogram(mut c)), ValueKind::Histogram) => {
                c.reset();
                (HeadChunk::Histogram(c), None)
            }
            (Some(HeadChunk::FloatHistogram(mut c)), ValueKind::FloatHistogram) => {
                c.reset();
                (HeadChunk::FloatHistogram(c), None)
            }
            (_, ValueKind::Float) if xor2 => (HeadChunk::Xor2(Box::default()), None),
            (closed, kind) => (HeadChunk::new(kind), closed),
        };
        self.open = Some(OpenChunk {
            chunk,
            mint,
            maxt: i64::MIN,
        });
        self.next_at = range_for_timestamp(mint, opts.chunk_range);
        closed
    }

    /// Writes `old` to `chunks_head/` (or keeps it in memory if that fails);
    /// returns the chunk when its bytes are no longer needed.
    fn close_chunk(
        &mut self,
        series_ref: u64,
        old: OpenChunk,
        mapper: &ChunkDiskMapper,
    ) -> Option<HeadChunk> {
        let n = old.chunk.num_samples();
        if n == 0 {
            return Some(old.chunk);
        }
        let encoding = old.chunk.encoding();
        match mapper.write_chunk(
            series_ref,
            old.mint,
            old.maxt,
            encoding as u8,
            old.chunk.bytes(),
        ) {
            Ok(chunk_ref) => {
                self.mmapped.push(MmappedChunk {
                    chunk_ref,
                    mint: old.mint,
                    maxt: old.maxt,
                    num_samples: n,
                    encoding,
                });
                Some(old.chunk)
            }
            Err(e) => {
                error!(series_ref, error = %e, "writing head chunk failed; keeping it in memory");
                self.extra_mut().unmapped.push(UnmappedChunk {
                    bytes: old.chunk.into_bytes(),
                    mint: old.mint,
                    maxt: old.maxt,
                    encoding,
                });
                None
            }
        }
    }

    /// Drops the in-order chunks whose samples all lie before `mint` (head
    /// truncation after compaction); returns whether anything is left,
    /// out-of-order samples included (out-of-order compaction drops those).
    pub fn truncate_chunks_before(&mut self, mint: i64) -> bool {
        self.mmapped.retain(|c| c.maxt >= mint);
        if !self.unmapped().is_empty() {
            self.change_extra(|e| e.unmapped.retain(|c| c.maxt >= mint));
        }
        if self
            .open
            .as_ref()
            .is_some_and(|c| c.has_samples() && c.maxt < mint)
        {
            self.open = None;
        }
        !self.mmapped.is_empty()
            || !self.unmapped().is_empty()
            || self.has_ooo()
            || self.open.as_ref().is_some_and(|c| c.has_samples())
    }

    /// The oldest `chunks_head/` file holding one of the series' chunks,
    /// in-order or out-of-order (`u32::MAX`: none). Out-of-order chunks
    /// stay until out-of-order compaction.
    pub fn first_chunk_file(&self) -> u32 {
        let in_order = self.mmapped.first();
        let ooo = self.ooo().and_then(|o| o.mmapped.first());
        in_order
            .into_iter()
            .chain(ooo)
            .map(|c| c.chunk_ref.seq())
            .min()
            .unwrap_or(u32::MAX)
    }

    /// Approximate heap bytes held by this series' sample data.
    pub fn heap_bytes(&self) -> usize {
        let last = match self.last_histogram() {
            None | Some(SampleValue::Float(_)) => 0,
            Some(SampleValue::Histogram(h)) => {
                std::mem::size_of::<Histogram>()
                    + 8 * (h.positive_buckets.len()
                        + h.negative_buckets.len()
                        + h.custom_values.len())
                    + 8 * (h.positive_spans.len() + h.negative_spans.len())
            }
            Some(SampleValue::FloatHistogram(h)) => {
                std::mem::size_of::<FloatHistogram>()
                    + 8 * (h.positive_buckets.len()
                        + h.negative_buckets.len()
                        + h.custom_values.len())
                    + 8 * (h.positive_spans.len() + h.negative_spans.len())
            }
        };
        let ooo = self.ooo().map_or(0, |o| {
            std::mem::size_of::<OooFields>()
                + o.mmapped.capacity() * std::mem::size_of::<MmappedChunk>()
                + o.unmapped.iter().map(|c| c.bytes.len()).sum::<usize>()
                + o.head.as_ref().map_or(0, |h| {
                    h.chunk.len() * std::mem::size_of::<(i64, SampleValue)>()
                })
        });
        last + ooo
            + self.mmapped.capacity() * std::mem::size_of::<MmappedChunk>()
            + self.open.as_ref().map_or(0, |c| c.chunk.bytes().len())
            + self.unmapped().iter().map(|c| c.bytes.len()).sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_end_time_spreads_samples() {
        // 30 samples in the first 30*15s of a 2h range: cut at an equal split.
        let start = 0;
        let cur = 29 * 15_000;
        let max = 7_200_000;
        let end = compute_chunk_end_time(start, cur, max, 4.0);
        assert!(end > cur && end <= max);
        assert_eq!(
            compute_chunk_end_time(0, 7_000_000, 7_200_000, 4.0),
            7_200_000
        );
        assert_eq!(range_for_timestamp(7_199_999, 7_200_000), 7_200_000);
        assert_eq!(range_for_timestamp(-1, 7_200_000), 0);
    }

    #[test]
    fn appendable_rules() {
        let dir = tempfile::tempdir().unwrap();
        let mapper = ChunkDiskMapper::open(dir.path(), Default::default()).unwrap();
        let opts = ChunkOpts {
            chunk_range: 7_200_000,
            samples_per_chunk: 120,
            float_encoding: Encoding::Xor,
        };
        let mut s = MemSeries::new();
        assert_eq!(s.appendable(10, 1.0), Appendable::Yes);
        assert!(s.append(1, 10, 1.0, opts, &mapper));
        assert_eq!(s.appendable(10, 1.0), Appendable::Duplicate);
        assert_eq!(
            s.appendable(10, 2.0),
            Appendable::Conflict { existing: 1.0 }
        );
        assert_eq!(s.appendable(9, 2.0), Appendable::OutOfOrder);
        assert!(!s.append(1, 10, 1.0, opts, &mapper));
        assert_eq!((s.min_time(), s.max_time()), (10, 10));
    }

    #[test]
    fn the_newest_value_judges_samples_at_its_time_across_kinds_and_encodings() {
        let dir = tempfile::tempdir().unwrap();
        let mapper = ChunkDiskMapper::open(dir.path(), Default::default()).unwrap();
        for float_encoding in [Encoding::Xor, Encoding::Xor2] {
            let opts = ChunkOpts {
                chunk_range: 7_200_000,
                samples_per_chunk: 120,
                float_encoding,
            };
            let stale = f64::from_bits(ferrite_model::STALE_NAN_BITS);
            let mut s = MemSeries::new();
            assert!(s.append(1, 10, 1.0, opts, &mapper));
            assert!(s.append(1, 20, stale, opts, &mapper));
            // The stale marker is the newest value, not the float before.
            assert_eq!(s.appendable(20, stale), Appendable::Duplicate);
            assert!(matches!(
                s.appendable(20, 1.0),
                Appendable::Conflict { existing } if existing.to_bits() == ferrite_model::STALE_NAN_BITS
            ));
            // A histogram after the floats: the newest is the histogram.
            let h = Histogram {
                count: 3,
                sum: 1.5,
                zero_count: 3,
                ..Histogram::default()
            };
            assert!(s.append_histogram(1, 30, SampleRef::Histogram(&h), opts, &mapper));
            assert_eq!(s.last_histogram_kind(), Some(false));
            assert_eq!(
                s.appendable_histogram(30, &h),
                Appendable::Duplicate,
                "{float_encoding:?}"
            );
            assert_eq!(s.appendable(30, 1.0), Appendable::ConflictWithHistogram);
            // A float again: the histogram is forgotten.
            assert!(s.append(1, 40, 7.0, opts, &mapper));
            assert_eq!(s.last_histogram_kind(), None);
            assert!(s.extra.is_none(), "nothing extra is kept for a float");
            assert_eq!(s.appendable(40, 7.0), Appendable::Duplicate);
            assert_eq!(
                s.appendable(40, 8.0),
                Appendable::Conflict { existing: 7.0 }
            );
        }
    }

    #[test]
    fn cuts_at_range_boundary_and_at_twice_target() {
        let dir = tempfile::tempdir().unwrap();
        let mapper = ChunkDiskMapper::open(dir.path(), Default::default()).unwrap();
        let opts = ChunkOpts {
            chunk_range: 7_200_000,
            samples_per_chunk: 120,
            float_encoding: Encoding::Xor,
        };
        let mut s = MemSeries::new();
        // 15s interval over 4h: chunks must not cross the 2h boundary.
        for i in 0..960 {
            assert!(s.append(1, i * 15_000, i as f64, opts, &mapper));
        }
        for c in &s.mmapped {
            assert_eq!(
                c.mint.div_euclid(7_200_000),
                c.maxt.div_euclid(7_200_000),
                "chunk crosses a range boundary"
            );
            assert!(c.num_samples <= 240);
        }
        let total: u32 = s.mmapped.iter().map(|c| c.num_samples as u32).sum::<u32>()
            + s.open.as_ref().map_or(0, |c| c.chunk.num_samples() as u32);
        assert_eq!(total, 960);
        // 1ms interval: many samples per range, cut at 240.
        let mut s = MemSeries::new();
        for i in 0..1000 {
            s.append(2, i, 0.0, opts, &mapper);
        }
        assert!(s.mmapped.iter().all(|c| c.num_samples <= 240));
    }
}
