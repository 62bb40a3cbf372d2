//! The integer histogram chunk encoding (encoding 2), with Prometheus'
//! rules for what may be appended to a chunk.
//!
//! # Format
//!
//! Header and layout as in [`crate::histogram_meta`]. Then per sample
//! (varbit = [`crate::varbit`], xor = Gorilla XOR as an XOR chunk's values):
//!
//! | field            | sample 0            | later samples                |
//! |------------------|---------------------|------------------------------|
//! | timestamp        | varbit int          | delta of delta, varbit int   |
//! | count            | varbit uint         | delta of delta, varbit int   |
//! | zero count       | varbit uint         | delta of delta, varbit int   |
//! | sum              | 64 bits             | xor                          |
//! | each bucket      | varbit int (delta to the previous bucket, as in [`Histogram`]) | delta of delta of that, varbit int |
//!
//! Positive buckets come before negative ones. A stale marker (the sum is
//! Prometheus' stale NaN) is written as a histogram of nothing but the
//! sum: as the first sample, an empty layout (schema 0, no spans) and
//! zero counts; later, zero count and zero-count dods and no buckets.
//! All arithmetic wraps as Go's does.
//!
//! # Append rules
//!
//! [`HistogramChunk::append`] does what Prometheus' `AppendHistogram` does
//! for the head (`appendOnly` false); [`HistogramChunk::append_only`] is
//! `appendOnly` true. Every sample of a chunk shares the chunk's layout, so
//! the outcome of an append is one of [`AppendOutcome`]:
//!
//! * **First sample** of a chunk: always appended. The counter-reset header
//!   becomes `Gauge` for a gauge histogram, `CounterReset` for a sample
//!   hinted as a reset, else, if the previous chunk of the series is given,
//!   what appending the sample to that chunk would say (below:
//!   `NotCounterReset` if it could be appended), else it stays as it is.
//! * **Counter histograms** (hint other than gauge) need a new chunk when
//!   the chunk holds gauges (new header `NotCounterReset`), the sample is
//!   hinted as a reset, the count or zero count went down, custom bounds
//!   changed, a bucket count went down or a bucket populated in the
//!   chunk's last sample is missing (all `CounterReset`); or when the
//!   chunk's last sample is a stale marker and this one is not, or schema
//!   or zero threshold changed (`Unknown`). A stale marker can always be
//!   appended. Otherwise the sample is appended: if it lacks buckets the
//!   chunk has (all empty, by the above), they are filled in with zeros;
//!   if it has buckets the chunk lacks, the chunk is recoded: rewritten
//!   with spans covering both (the sample's spans as given where it lacks
//!   none, else the shortest spans of the union), earlier samples getting
//!   empty buckets, then the sample is appended.
//! * **Gauge histograms** need a new chunk (header `Gauge`) when the chunk
//!   holds counters, its last sample is a stale marker and this one is
//!   not, or schema, zero threshold or custom bounds changed. Otherwise
//!   buckets may appear and vanish freely: missing ones are filled in
//!   (both sides then take the shortest spans of the union), new ones
//!   recode the chunk.
//! * In append-only mode, every case that needs a new chunk or a recoding
//!   (and, for gauges, filling in buckets) is an [`AppendError`] instead,
//!   and the chunk is unchanged.
//!
//! Decoded samples carry the hint [`CounterResetHeader::sample_hint`]
//! gives; schemas 9..=52 (from a future Prometheus) are reduced to 8.

#![deny(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]

use ferrite_model::{is_stale_nan, CounterResetHint, FloatHistogram, Histogram, Span};

use crate::bstream::{BitGather, BitReader, BitWriter};
use crate::histogram_meta::{
    absolute, buf_addresses, check_spans, counter_side_diff, gauge_side_diff, needs_reduction,
    reduce_resolution, remap, to_deltas, union_spans, AppendError, AppendOutcome,
    CounterResetHeader, Fault, HeaderLayout, Layout, LayoutView, Rejection, SideDiff,
    HISTOGRAM_HEADER_LEN, INITIAL_CAPACITY,
};
use crate::st::{StDecoder, StEncoder};
use crate::varbit::{read_varbit_int, read_varbit_uint, write_varbit_int, write_varbit_uint};
use crate::xor_value::XorWindow;
use crate::ChunkError;

/// Encoder state after a sample, which is also the decoder's.
#[derive(Clone, Debug, Default)]
struct State {
    layout: Layout,
    t: i64,
    t_delta: i64,
    count: u64,
    zero_count: u64,
    count_delta: i64,
    zero_count_delta: i64,
    /// Bits of the sum.
    sum: u64,
    sum_window: XorWindow,
    /// The last sample's buckets, delta-encoded as in [`Histogram`].
    positive: Vec<i64>,
    negative: Vec<i64>,
    /// How each of those changed from the sample before.
    positive_change: Vec<i64>,
    negative_change: Vec<i64>,
}

impl State {
    /// The state of an empty chunk, keeping the vectors' allocations.
    fn reset(&mut self) {
        let State {
            mut layout,
            mut positive,
            mut negative,
            mut positive_change,
            mut negative_change,
            ..
        } = std::mem::take(self);
        layout.clear();
        for v in [
            &mut positive,
            &mut negative,
            &mut positive_change,
            &mut negative_change,
        ] {
            v.clear();
        }
        *self = State {
            layout,
            positive,
            negative,
            positive_change,
            negative_change,
            ..State::default()
        };
    }
}

/// The values of a sample to write.
#[derive(Clone, Copy)]
struct Sample<'a> {
    count: u64,
    zero_count: u64,
    sum: f64,
    positive: &'a [i64],
    negative: &'a [i64],
}

impl<'a> Sample<'a> {
    fn of(h: &'a Histogram) -> Self {
        Sample {
            count: h.count,
            zero_count: h.zero_count,
            sum: h.sum,
            positive: &h.positive_buckets,
            negative: &h.negative_buckets,
        }
    }
}

fn layout_of(h: &Histogram) -> LayoutView<'_> {
    LayoutView {
        schema: h.schema,
        zero_threshold: h.zero_threshold,
        positive_spans: &h.positive_spans,
        negative_spans: &h.negative_spans,
        custom_values: &h.custom_values,
    }
}

/// An integer histogram chunk, appendable: its bytes and the state the
/// next sample is encoded relative to.
#[derive(Clone, Debug)]
pub struct HistogramChunk {
    /// Header and bit stream, exactly the bytes Prometheus would have.
    buf: Vec<u8>,
    /// Unwritten low bits of the last byte of `buf`.
    free_bits: u8,
    /// Sample count, mirrored from the header.
    count: u16,
    state: State,
    /// The start timestamp encoder of a `histogramST` chunk (encoding 5,
    /// wrapped by [`crate::HistogramStChunk`]); `None` for encoding 2.
    st: Option<StEncoder>,
}

impl Default for HistogramChunk {
    fn default() -> Self {
        Self::new()
    }
}

impl HistogramChunk {
    /// Most samples a chunk can hold.
    pub const MAX_SAMPLES: u16 = u16::MAX;

    /// An empty chunk: zero samples, header `Unknown`.
    pub fn new() -> Self {
        Self::empty(HeaderLayout::Plain)
    }

    /// An empty chunk of either encoding.
    pub(crate) fn empty(layout: HeaderLayout) -> Self {
        let mut buf = Vec::with_capacity(INITIAL_CAPACITY);
        buf.extend_from_slice(&[0; HISTOGRAM_HEADER_LEN]);
        HistogramChunk {
            buf,
            free_bits: 0,
            count: 0,
            state: State::default(),
            st: layout.new_st_encoder(),
        }
    }

    /// Empties the chunk for reuse, as a new chunk of its encoding but
    /// keeping its allocations (bytes and encoder state): the head cuts
    /// chunk after chunk of similar size and layout for a series.
    pub fn reset(&mut self) {
        let layout = self.header_layout();
        self.buf.clear();
        self.buf.extend_from_slice(&[0; HISTOGRAM_HEADER_LEN]);
        self.free_bits = 0;
        self.count = 0;
        self.state.reset();
        self.st = layout.new_st_encoder();
    }

    /// Which header this chunk has.
    pub(crate) fn header_layout(&self) -> HeaderLayout {
        HeaderLayout::of(self.st.as_ref())
    }

    /// Reopens chunk bytes for appending, decoding every sample to restore
    /// the encoder state.
    ///
    /// Fails on anything Prometheus' appender could not have written: a
    /// short header, undecodable samples, bytes or non-zero padding bits
    /// after the last sample, or a layout whose later spans have negative
    /// offsets. Appending resumes at the exact bit after the last sample,
    /// and a sum that never changed gets its first window as in a fresh
    /// chunk (Prometheus' reopened appender starts at the next byte and
    /// with a 64-bit window; both decode the same).
    pub fn from_bytes(data: Vec<u8>) -> Result<Self, ChunkError> {
        Self::from_bytes_as(data, HeaderLayout::Plain)
    }

    /// [`Self::from_bytes`] for either encoding; an ST chunk's ST header
    /// must also fit its sample count ([`StEncoder::resume`]).
    pub(crate) fn from_bytes_as(
        mut data: Vec<u8>,
        layout: HeaderLayout,
    ) -> Result<Self, ChunkError> {
        let mut it = HistogramIterator::new_as(&data, layout);
        while it.advance().is_some() {}
        if let Some(err) = it.err.take() {
            return Err(err);
        }
        let (free_bits, count) = check_end(&data, it.reader.bits_consumed(), it.total)?;
        let state = std::mem::take(&mut it.state);
        if count > 0 && state.layout.has_unordered_spans() {
            return Err(ChunkError::UnorderedSpans);
        }
        let st = resume_st(it.st.as_ref(), count)?;
        data.reserve(16);
        Ok(HistogramChunk {
            buf: data,
            free_bits,
            count,
            state,
            st,
        })
    }

    /// Number of samples.
    pub fn num_samples(&self) -> u16 {
        self.count
    }

    /// True when the chunk takes no more samples.
    pub fn is_full(&self) -> bool {
        self.count == self.header_layout().max_samples()
    }

    /// The chunk bytes, header included, as Prometheus stores them.
    pub fn bytes(&self) -> &[u8] {
        &self.buf
    }

    /// Where the next append reads and writes first: the chunk's tail and
    /// header, the encoder's bucket arrays and the layout's spans. For
    /// prefetching when appending to many chunks in turn (WAL replay).
    pub fn append_addresses(&self) -> [*const u8; 6] {
        let s = &self.state;
        let [tail, header] = buf_addresses(&self.buf);
        [
            tail,
            header,
            s.positive.as_ptr().cast(),
            s.positive_change.as_ptr().cast(),
            s.layout.positive_spans.as_ptr().cast(),
            s.negative.as_ptr().cast(),
        ]
    }

    /// The chunk bytes.
    pub fn into_bytes(self) -> Vec<u8> {
        self.buf
    }

    /// The counter-reset header.
    pub fn counter_reset_header(&self) -> CounterResetHeader {
        self.header_layout().counter_reset_header(&self.buf)
    }

    /// Sets the counter-reset header, keeping the flags byte's other bits.
    pub fn set_counter_reset_header(&mut self, header: CounterResetHeader) {
        self.header_layout()
            .set_counter_reset_header(&mut self.buf, header);
    }

    /// Iterates the samples.
    pub fn iter(&self) -> HistogramIterator<'_> {
        HistogramIterator::new_as(&self.buf, self.header_layout())
    }

    /// Releases spare capacity once the chunk is complete.
    pub fn compact(&mut self) {
        if self.buf.capacity() > self.buf.len() + 32 {
            self.buf.shrink_to_fit();
        }
    }

    /// Appends a sample as Prometheus' head does (see the module doc):
    /// appended, appended after recoding this chunk, or put into a new
    /// chunk that the caller continues with. `prev` is the series' previous
    /// chunk, consulted only for the counter-reset header of a first sample
    /// (pass `None` when the previous chunk has another encoding, which
    /// Prometheus ignores too).
    ///
    /// Errors for a full chunk, or spans that disagree with the buckets or
    /// have negative offsets after the first; the chunk is then unchanged.
    pub fn append(
        &mut self,
        prev: Option<&HistogramChunk>,
        t: i64,
        h: &Histogram,
    ) -> Result<AppendOutcome<HistogramChunk>, AppendError> {
        self.append_with(prev, 0, t, h, false)
    }

    /// Appends a sample only if it fits this chunk as it is laid out
    /// (Prometheus' `appendOnly`): anything that would need a new chunk
    /// or a recoding is an error, and the chunk is unchanged.
    pub fn append_only(&mut self, t: i64, h: &Histogram) -> Result<(), AppendError> {
        self.append_only_st(0, t, h)
    }

    /// [`Self::append_only`] with a start timestamp (ignored by encoding 2).
    pub(crate) fn append_only_st(
        &mut self,
        st: i64,
        t: i64,
        h: &Histogram,
    ) -> Result<(), AppendError> {
        match self.append_with(None, st, t, h, true)? {
            AppendOutcome::Appended => Ok(()),
            // Not reached: append-only mode errs instead.
            AppendOutcome::Recoded | AppendOutcome::NewChunk(_) => Err(AppendError::LayoutChange),
        }
    }

    /// Appends with start timestamp `st` (ignored by encoding 2). An ST
    /// plays no part in the decisions: Prometheus cuts and recodes ST
    /// chunks exactly as the others.
    pub(crate) fn append_with(
        &mut self,
        prev: Option<&HistogramChunk>,
        st: i64,
        t: i64,
        h: &Histogram,
        append_only: bool,
    ) -> Result<AppendOutcome<HistogramChunk>, AppendError> {
        if !h.is_stale() {
            check_spans("positive", &h.positive_spans, h.positive_buckets.len())?;
            check_spans("negative", &h.negative_spans, h.negative_buckets.len())?;
        }
        if self.is_full() {
            return Err(AppendError::ChunkFull);
        }
        if self.count == 0 {
            self.push(st, t, layout_of(h), Sample::of(h));
            let header = match (h.counter_reset_hint, prev) {
                (CounterResetHint::Gauge, _) => CounterResetHeader::Gauge,
                (CounterResetHint::CounterReset, _) => CounterResetHeader::CounterReset,
                (_, Some(prev)) => match prev.counter_check(h) {
                    Ok(_) => CounterResetHeader::NotCounterReset,
                    Err(r) => new_chunk_header(r),
                },
                (_, None) => return Ok(AppendOutcome::Appended),
            };
            self.set_counter_reset_header(header);
            return Ok(AppendOutcome::Appended);
        }

        let gauge = h.counter_reset_hint == CounterResetHint::Gauge;
        let diff = if gauge {
            self.gauge_check(h).ok_or(Rejection::SchemaOrThreshold)
        } else {
            self.counter_check(h)
        };
        let (pos, neg) = match diff {
            Ok(d) => d,
            Err(r) if append_only => return Err(r.error()),
            Err(r) => {
                let header = if gauge {
                    CounterResetHeader::Gauge
                } else {
                    new_chunk_header(r)
                };
                let mut c = HistogramChunk::empty(self.header_layout());
                c.push(st, t, layout_of(h), Sample::of(h));
                c.set_counter_reset_header(header);
                return Ok(AppendOutcome::NewChunk(c));
            }
        };
        let new_buckets = pos.new_buckets || neg.new_buckets;
        let missing = pos.missing_buckets || neg.missing_buckets;
        if !new_buckets && !missing {
            self.push(st, t, layout_of(h), Sample::of(h));
            return Ok(AppendOutcome::Appended);
        }
        if append_only && (new_buckets || gauge) {
            return Err(AppendError::LayoutChange);
        }

        // The spans the sample (and, with new buckets, the chunk) take.
        let (positive_spans, negative_spans) = if !new_buckets {
            (
                self.state.layout.positive_spans.clone(),
                self.state.layout.negative_spans.clone(),
            )
        } else {
            (
                target_spans(
                    gauge,
                    missing,
                    pos,
                    &self.state.layout.positive_spans,
                    &h.positive_spans,
                ),
                target_spans(
                    gauge,
                    missing,
                    neg,
                    &self.state.layout.negative_spans,
                    &h.negative_spans,
                ),
            )
        };
        let (mut positive, mut negative) = (Vec::new(), Vec::new());
        let sample = if missing {
            remap_deltas(
                &h.positive_spans,
                &h.positive_buckets,
                &positive_spans,
                &mut positive,
            );
            remap_deltas(
                &h.negative_spans,
                &h.negative_buckets,
                &negative_spans,
                &mut negative,
            );
            Sample {
                positive: &positive,
                negative: &negative,
                ..Sample::of(h)
            }
        } else {
            Sample::of(h)
        };
        if !new_buckets {
            self.push(st, t, layout_of(h), sample);
            return Ok(AppendOutcome::Appended);
        }
        self.recode(&positive_spans, &negative_spans);
        self.push(st, t, layout_of(h), sample);
        Ok(AppendOutcome::Recoded)
    }

    /// Whether `h` (not a gauge) may follow this chunk's last sample, and
    /// how its buckets relate to the chunk's (Prometheus' `appendable`).
    fn counter_check(&self, h: &Histogram) -> Result<(SideDiff, SideDiff), Rejection> {
        let st = &self.state;
        if self.count > 0 && self.counter_reset_header() == CounterResetHeader::Gauge {
            return Err(Rejection::GaugeChunk);
        }
        if h.counter_reset_hint == CounterResetHint::CounterReset {
            return Err(Rejection::ExplicitReset);
        }
        if h.is_stale() {
            return Ok(Default::default());
        }
        if is_stale_nan(f64::from_bits(st.sum)) {
            return Err(Rejection::AfterStale);
        }
        if h.count < st.count {
            return Err(Rejection::CountDecreased);
        }
        if h.schema != st.layout.schema || h.zero_threshold != st.layout.zero_threshold {
            return Err(Rejection::SchemaOrThreshold);
        }
        if h.uses_custom_buckets() && h.custom_values != st.layout.custom_values {
            return Err(Rejection::CustomBounds);
        }
        if h.zero_count < st.zero_count {
            return Err(Rejection::ZeroCountDecreased);
        }
        let pos = counter_side_diff(
            &st.layout.positive_spans,
            absolute(&st.positive),
            &h.positive_spans,
            absolute(&h.positive_buckets),
        );
        let neg = counter_side_diff(
            &st.layout.negative_spans,
            absolute(&st.negative),
            &h.negative_spans,
            absolute(&h.negative_buckets),
        );
        pos.zip(neg).ok_or(Rejection::BucketDecreased)
    }

    /// Whether gauge `h` may follow this chunk's last sample, and how its
    /// buckets relate to the chunk's (Prometheus' `appendableGauge`).
    fn gauge_check(&self, h: &Histogram) -> Option<(SideDiff, SideDiff)> {
        let st = &self.state;
        if self.count > 0 && self.counter_reset_header() != CounterResetHeader::Gauge {
            return None;
        }
        if h.is_stale() {
            return Some(Default::default());
        }
        if is_stale_nan(f64::from_bits(st.sum))
            || h.schema != st.layout.schema
            || h.zero_threshold != st.layout.zero_threshold
            || (h.uses_custom_buckets() && h.custom_values != st.layout.custom_values)
        {
            return None;
        }
        Some((
            gauge_side_diff(&st.layout.positive_spans, &h.positive_spans),
            gauge_side_diff(&st.layout.negative_spans, &h.negative_spans),
        ))
    }

    /// Rewrites the chunk with other spans, which cover all of its buckets;
    /// the header and the start timestamps are kept.
    fn recode(&mut self, positive_spans: &[Span], negative_spans: &[Span]) {
        let old = std::mem::replace(self, Self::empty(self.header_layout()));
        let mut it = old.iter();
        let (mut positive, mut negative) = (Vec::new(), Vec::new());
        while let Some(t) = it.advance() {
            let st = &it.state;
            remap_deltas(
                &st.layout.positive_spans,
                &st.positive,
                positive_spans,
                &mut positive,
            );
            remap_deltas(
                &st.layout.negative_spans,
                &st.negative,
                negative_spans,
                &mut negative,
            );
            let layout = LayoutView {
                positive_spans,
                negative_spans,
                ..st.layout.view()
            };
            let sample = Sample {
                count: st.count,
                zero_count: st.zero_count,
                sum: f64::from_bits(st.sum),
                positive: &positive,
                negative: &negative,
            };
            self.push(it.start_timestamp(), t, layout, sample);
        }
        debug_assert!(it.error().is_none() && self.count == old.count);
        self.set_counter_reset_header(old.counter_reset_header());
    }

    /// Writes a sample, then its start timestamp `start` if this is an ST
    /// chunk; `layout` only matters for the first. The bucket slices of
    /// later samples match the chunk's layout.
    fn push(&mut self, start: i64, t: i64, layout: LayoutView<'_>, sample: Sample<'_>) {
        let stale = is_stale_nan(sample.sum);
        let (layout, sample) = if stale {
            let empty = Sample {
                count: 0,
                zero_count: 0,
                sum: sample.sum,
                positive: &[],
                negative: &[],
            };
            (LayoutView::EMPTY, empty)
        } else {
            (layout, sample)
        };
        let st = &mut self.state;
        let prev_t = st.t;
        let mut w = BitWriter::new(&mut self.buf, &mut self.free_bits);
        if self.count == 0 {
            st.layout.set(layout);
            st.layout.write(&mut w);
            write_varbit_int(&mut w, t);
            write_varbit_uint(&mut w, sample.count);
            write_varbit_uint(&mut w, sample.zero_count);
            w.write_bits(sample.sum.to_bits(), 64);
            for &b in sample.positive.iter().chain(sample.negative) {
                write_varbit_int(&mut w, b);
            }
            st.t_delta = 0;
            st.count_delta = 0;
            st.zero_count_delta = 0;
            for (last, change, new) in [
                (&mut st.positive, &mut st.positive_change, sample.positive),
                (&mut st.negative, &mut st.negative_change, sample.negative),
            ] {
                last.clear();
                last.extend_from_slice(new);
                change.clear();
                change.resize(new.len(), 0);
            }
        } else {
            let t_delta = t.wrapping_sub(st.t);
            let count_delta = (sample.count as i64).wrapping_sub(st.count as i64);
            let zero_count_delta = (sample.zero_count as i64).wrapping_sub(st.zero_count as i64);
            // Most fields are a bit or a few: gathered, they take a few
            // writes rather than one each.
            let mut g = BitGather::new(&mut w);
            write_varbit_int(&mut g, t_delta.wrapping_sub(st.t_delta));
            if stale {
                write_varbit_int(&mut g, 0);
                write_varbit_int(&mut g, 0);
            } else {
                write_varbit_int(&mut g, count_delta.wrapping_sub(st.count_delta));
                write_varbit_int(&mut g, zero_count_delta.wrapping_sub(st.zero_count_delta));
            }
            st.sum_window.write(&mut g, st.sum ^ sample.sum.to_bits());
            for (last, change, new) in [
                (&mut st.positive, &mut st.positive_change, sample.positive),
                (&mut st.negative, &mut st.negative_change, sample.negative),
            ] {
                debug_assert!(new.is_empty() || new.len() == last.len());
                for ((last, change), &b) in last.iter_mut().zip(change.iter_mut()).zip(new) {
                    let delta = b.wrapping_sub(*last);
                    write_varbit_int(&mut g, delta.wrapping_sub(*change));
                    *change = delta;
                    *last = b;
                }
            }
            g.finish();
            st.t_delta = t_delta;
            st.count_delta = count_delta;
            st.zero_count_delta = zero_count_delta;
        }
        st.t = t;
        st.count = sample.count;
        st.zero_count = sample.zero_count;
        st.sum = sample.sum.to_bits();
        let st_bits = match &mut self.st {
            Some(enc) => enc.encode(&mut w, self.count, t, prev_t, start),
            None => 0,
        };
        self.count += 1;
        let header = self.header_layout();
        header.set_samples(&mut self.buf, self.count);
        header.add_st_bits(&mut self.buf, st_bits);
    }
}

/// The header of a new chunk cut for a rejected counter sample.
fn new_chunk_header(r: Rejection) -> CounterResetHeader {
    if r.is_counter_reset() {
        CounterResetHeader::CounterReset
    } else if r == Rejection::GaugeChunk {
        CounterResetHeader::NotCounterReset
    } else {
        CounterResetHeader::Unknown
    }
}

/// The spans of one side after a sample with new buckets: a gauge sample
/// that lacks buckets on either side takes the union on both; a counter
/// sample on a side where it lacks buckets; else the sample's own spans.
pub(crate) fn target_spans(
    gauge: bool,
    missing_anywhere: bool,
    side: SideDiff,
    chunk: &[Span],
    sample: &[Span],
) -> Vec<Span> {
    if (gauge && missing_anywhere) || (!gauge && side.missing_buckets) {
        union_spans(chunk, sample)
    } else {
        sample.to_vec()
    }
}

/// Lays delta-encoded buckets out in other spans (new buckets empty).
fn remap_deltas(from: &[Span], deltas: &[i64], to: &[Span], out: &mut Vec<i64>) {
    remap(from, absolute(deltas), to, out);
    to_deltas(out);
}

/// The ST encoder to continue after `samples` samples that `decoder` read
/// (`None` for a chunk without STs), or the error if its header does not
/// fit them.
pub(crate) fn resume_st(
    decoder: Option<&StDecoder>,
    samples: u16,
) -> Result<Option<StEncoder>, ChunkError> {
    let Some(dec) = decoder else {
        return Ok(None);
    };
    StEncoder::resume(dec, samples)
        .map(Some)
        .ok_or(ChunkError::InvalidStHeader {
            header: dec.header().to_byte(),
            samples,
        })
}

/// Checks that the chunk ends right after the last sample: returns the
/// free bits of the last byte and the sample count.
pub(crate) fn check_end(
    data: &[u8],
    body_bits: u64,
    samples: u16,
) -> Result<(u8, u16), ChunkError> {
    let used_bits = HISTOGRAM_HEADER_LEN as u64 * 8 + body_bits;
    let used_bytes = used_bits.div_ceil(8);
    if data.len() as u64 != used_bytes {
        return Err(ChunkError::TrailingBytes {
            samples,
            extra: (data.len() as u64).saturating_sub(used_bytes),
        });
    }
    let free_bits = (used_bytes * 8 - used_bits) as u8;
    let padding = data.last().map_or(0, |&b| b & ((1u8 << free_bits) - 1));
    if padding != 0 {
        return Err(ChunkError::NonZeroPadding {
            samples,
            bits: free_bits,
        });
    }
    Ok((free_bits, samples))
}

/// Decodes the samples of integer histogram chunk bytes.
///
/// [`Self::advance`] decodes the next sample into the iterator; [`Self::at`]
/// copies it into a caller's histogram, reusing its vectors, so iterating
/// allocates nothing per sample. Iteration stops after the header's count
/// or at the first sample that cannot be decoded (see [`Self::error`]).
/// Never reads outside the slice, never panics.
#[derive(Clone, Debug)]
pub struct HistogramIterator<'a> {
    reader: BitReader<'a>,
    total: u16,
    read: u16,
    header: CounterResetHeader,
    state: State,
    /// Which header the bytes have.
    layout: HeaderLayout,
    /// The start timestamp decoder of an ST chunk.
    st: Option<StDecoder>,
    done: bool,
    err: Option<ChunkError>,
}

impl<'a> HistogramIterator<'a> {
    /// An iterator over chunk bytes (header included).
    pub fn new(data: &'a [u8]) -> Self {
        Self::new_as(data, HeaderLayout::Plain)
    }

    /// An iterator over histogramST (encoding 5) chunk bytes (header included):
    /// [`Self::start_timestamp`] gives each sample's start timestamp.
    pub fn new_st(data: &'a [u8]) -> Self {
        Self::new_as(data, HeaderLayout::St)
    }

    /// An iterator over chunk bytes of either encoding.
    pub(crate) fn new_as(data: &'a [u8], layout: HeaderLayout) -> Self {
        let mut it = HistogramIterator {
            reader: BitReader::new(&[]),
            total: 0,
            read: 0,
            header: CounterResetHeader::Unknown,
            state: State::default(),
            layout,
            st: None,
            done: false,
            err: None,
        };
        it.reset(data);
        it
    }

    /// Starts over on other chunk bytes, keeping allocations.
    pub fn reset(&mut self, data: &'a [u8]) {
        let (total, header, st, body, err) = match self.layout.split(data) {
            Ok(h) => (h.samples, h.counter_reset, h.st, h.body, None),
            Err(e) => (0, CounterResetHeader::Unknown, 0, &[][..], Some(e)),
        };
        self.reader = BitReader::new(body);
        self.total = total;
        self.read = 0;
        self.header = header;
        self.st = (self.layout == HeaderLayout::St).then(|| StDecoder::new(st));
        self.state.sum_window = XorWindow::NONE;
        self.done = false;
        self.err = err;
    }

    /// Number of samples the header announces.
    pub fn num_samples(&self) -> u16 {
        self.total
    }

    /// The chunk's counter-reset header.
    pub fn counter_reset_header(&self) -> CounterResetHeader {
        self.header
    }

    /// Why iteration ended early: the bytes are truncated or corrupt.
    pub fn error(&self) -> Option<&ChunkError> {
        self.err.as_ref()
    }

    /// Decodes the next sample and returns its timestamp; `None` after
    /// the last sample or on an error.
    pub fn advance(&mut self) -> Option<i64> {
        if self.done || self.err.is_some() || self.read >= self.total {
            self.done = true;
            return None;
        }
        let prev_t = self.state.t;
        let mut res = if self.read == 0 {
            self.decode_first()
        } else {
            self.decode_next()
        };
        if let (Ok(()), Some(dec)) = (res, &mut self.st) {
            res = dec
                .decode(&mut self.reader, self.read, self.state.t, prev_t)
                .map(drop)
                .map_err(Fault::from);
        }
        match res {
            Ok(()) => {
                self.read += 1;
                Some(self.state.t)
            }
            Err(f) => {
                self.err = Some(f.at(self.read, self.total));
                self.done = true;
                None
            }
        }
    }

    /// Advances to the first sample with timestamp >= `t` and returns its
    /// timestamp. Never moves backwards: if the current sample qualifies,
    /// stays on it.
    pub fn seek(&mut self, t: i64) -> Option<i64> {
        if self.read > 0 && !self.done && self.state.t >= t {
            return Some(self.state.t);
        }
        while let Some(ts) = self.advance() {
            if ts >= t {
                return Some(ts);
            }
        }
        None
    }

    /// Timestamp of the current sample.
    pub fn timestamp(&self) -> i64 {
        self.state.t
    }

    /// Start timestamp of the current sample: 0 for none, and always for
    /// encoding 2.
    pub fn start_timestamp(&self) -> i64 {
        self.st.as_ref().map_or(0, StDecoder::st)
    }

    /// The ST header (empty for encoding 2).
    pub fn st_header(&self) -> crate::StHeader {
        self.st.as_ref().map(StDecoder::header).unwrap_or_default()
    }

    /// Decodes the next sample into `h` and returns its timestamp.
    pub fn next_into(&mut self, h: &mut Histogram) -> Option<i64> {
        let t = self.advance()?;
        self.at(h);
        Some(t)
    }

    /// Copies the current sample (after [`Self::advance`] returned it)
    /// into `h`, reusing its vectors. A stale marker comes out as a
    /// histogram of nothing but the sum.
    pub fn at(&self, h: &mut Histogram) {
        let st = &self.state;
        let sum = f64::from_bits(st.sum);
        h.clear();
        h.sum = sum;
        if is_stale_nan(sum) {
            return;
        }
        h.counter_reset_hint = self.header.sample_hint(self.read);
        h.schema = st.layout.schema;
        h.zero_threshold = st.layout.zero_threshold;
        h.zero_count = st.zero_count;
        h.count = st.count;
        h.custom_values.extend_from_slice(&st.layout.custom_values);
        if needs_reduction(st.layout.schema) {
            for (spans, deltas, out_spans, out) in [
                (
                    &st.layout.positive_spans,
                    &st.positive,
                    &mut h.positive_spans,
                    &mut h.positive_buckets,
                ),
                (
                    &st.layout.negative_spans,
                    &st.negative,
                    &mut h.negative_spans,
                    &mut h.negative_buckets,
                ),
            ] {
                let abs: Vec<i64> = absolute(deltas).collect();
                reduce_resolution(
                    spans,
                    &abs,
                    st.layout.schema,
                    8,
                    i64::wrapping_add,
                    out_spans,
                    out,
                );
                to_deltas(out);
            }
            h.schema = 8;
            return;
        }
        h.positive_spans
            .extend_from_slice(&st.layout.positive_spans);
        h.negative_spans
            .extend_from_slice(&st.layout.negative_spans);
        h.positive_buckets.extend_from_slice(&st.positive);
        h.negative_buckets.extend_from_slice(&st.negative);
    }

    /// Copies the current sample into a float histogram (Prometheus'
    /// `AtFloatHistogram` on an integer chunk).
    pub fn at_float(&self, fh: &mut FloatHistogram) {
        let st = &self.state;
        let sum = f64::from_bits(st.sum);
        fh.clear();
        fh.sum = sum;
        if is_stale_nan(sum) {
            return;
        }
        fh.counter_reset_hint = self.header.sample_hint(self.read);
        fh.schema = st.layout.schema;
        fh.zero_threshold = st.layout.zero_threshold;
        fh.zero_count = st.zero_count as f64;
        fh.count = st.count as f64;
        fh.custom_values.extend_from_slice(&st.layout.custom_values);
        // Integer running sums, then converted: Prometheus' iterator does
        // this when it allocates the float histogram (its path reusing one
        // sums the converted deltas instead, which differs above 2^53).
        let cumulative = |deltas: &[i64], out: &mut Vec<f64>| {
            out.extend(absolute(deltas).map(|c| c as f64));
        };
        if needs_reduction(st.layout.schema) {
            for (spans, deltas, out_spans, out) in [
                (
                    &st.layout.positive_spans,
                    &st.positive,
                    &mut fh.positive_spans,
                    &mut fh.positive_buckets,
                ),
                (
                    &st.layout.negative_spans,
                    &st.negative,
                    &mut fh.negative_spans,
                    &mut fh.negative_buckets,
                ),
            ] {
                let mut abs = Vec::new();
                cumulative(deltas, &mut abs);
                reduce_resolution(
                    spans,
                    &abs,
                    st.layout.schema,
                    8,
                    |a, b| a + b,
                    out_spans,
                    out,
                );
            }
            fh.schema = 8;
            return;
        }
        fh.positive_spans
            .extend_from_slice(&st.layout.positive_spans);
        fh.negative_spans
            .extend_from_slice(&st.layout.negative_spans);
        cumulative(&st.positive, &mut fh.positive_buckets);
        cumulative(&st.negative, &mut fh.negative_buckets);
    }

    fn decode_first(&mut self) -> Result<(), Fault> {
        let r = &mut self.reader;
        let st = &mut self.state;
        st.layout.read(r)?;
        let (np, nn) = st.layout.bucket_counts();
        // Every bucket takes at least one bit: refuse to allocate for more.
        if np.saturating_add(nn) > r.remaining() as u64 {
            return Err(Fault::Truncated);
        }
        st.t = read_varbit_int(r)?;
        st.count = read_varbit_uint(r)?;
        st.zero_count = read_varbit_uint(r)?;
        st.sum = r.read_bits(64)?;
        st.sum_window = XorWindow::NONE;
        st.t_delta = 0;
        st.count_delta = 0;
        st.zero_count_delta = 0;
        for (n, last, change) in [
            (np, &mut st.positive, &mut st.positive_change),
            (nn, &mut st.negative, &mut st.negative_change),
        ] {
            last.clear();
            change.clear();
            change.resize(n as usize, 0);
            for _ in 0..n {
                last.push(read_varbit_int(r)?);
            }
        }
        Ok(())
    }

    fn decode_next(&mut self) -> Result<(), Fault> {
        let r = &mut self.reader;
        let st = &mut self.state;
        st.t_delta = st.t_delta.wrapping_add(read_varbit_int(r)?);
        st.t = st.t.wrapping_add(st.t_delta);
        st.count_delta = st.count_delta.wrapping_add(read_varbit_int(r)?);
        st.count = (st.count as i64).wrapping_add(st.count_delta) as u64;
        st.zero_count_delta = st.zero_count_delta.wrapping_add(read_varbit_int(r)?);
        st.zero_count = (st.zero_count as i64).wrapping_add(st.zero_count_delta) as u64;
        st.sum ^= st.sum_window.read(r)?;
        if is_stale_nan(f64::from_bits(st.sum)) {
            return Ok(());
        }
        for (last, change) in [
            (&mut st.positive, &mut st.positive_change),
            (&mut st.negative, &mut st.negative_change),
        ] {
            for (last, change) in last.iter_mut().zip(change.iter_mut()) {
                *change = change.wrapping_add(read_varbit_int(r)?);
                *last = last.wrapping_add(*change);
            }
        }
        Ok(())
    }
}
