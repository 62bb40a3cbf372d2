//! The float histogram chunk encoding (encoding 3).
//!
//! Header and layout as in [`crate::histogram_meta`]. The first sample
//! holds its timestamp as a varbit int, then count, zero count, sum and
//! every bucket (absolute counts, positive before negative) as 64 raw
//! bits each. Later samples hold the timestamp's delta of delta as a
//! varbit int, then every one of those floats as a Gorilla XOR field
//! (as an XOR chunk's values) against its own previous value, each with its
//! own window. A stale marker (the sum is the stale NaN) is written with
//! count and zero count 0 and no buckets (and, as a first sample, an
//! empty layout).
//!
//! Appending follows the rules of [`crate::histogram`] with two
//! differences of Prometheus': a counter sample that needs a new chunk for
//! a reason other than a counter reset leaves the new chunk's header
//! `Unknown` (also when the old chunk holds gauges); and a first sample
//! checked against the previous chunk gets `CounterReset` or
//! `NotCounterReset`, never `Unknown`.

#![deny(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]

use ferrite_model::{is_stale_nan, CounterResetHint, FloatHistogram, Span};

use crate::bstream::{BitGather, BitReader, BitWriter};
use crate::histogram::{check_end, target_spans};
use crate::histogram_meta::{
    buf_addresses, check_spans, counter_side_diff, gauge_side_diff, needs_reduction,
    reduce_resolution, remap, AppendError, AppendOutcome, CounterResetHeader, Fault, HeaderLayout,
    Layout, LayoutView, Rejection, SideDiff, HISTOGRAM_HEADER_LEN, INITIAL_CAPACITY,
};
use crate::st::{StDecoder, StEncoder};
use crate::varbit::{read_varbit_int, write_varbit_int};
use crate::xor_value::XorField;
use crate::ChunkError;

/// Encoder state after a sample, which is also the decoder's.
#[derive(Clone, Debug, Default)]
struct State {
    layout: Layout,
    t: i64,
    t_delta: i64,
    count: XorField,
    zero_count: XorField,
    sum: XorField,
    positive: Vec<XorField>,
    negative: Vec<XorField>,
}

impl State {
    /// The state of an empty chunk, keeping the vectors' allocations.
    fn reset(&mut self) {
        let State {
            mut layout,
            mut positive,
            mut negative,
            ..
        } = std::mem::take(self);
        layout.clear();
        positive.clear();
        negative.clear();
        *self = State {
            layout,
            positive,
            negative,
            ..State::default()
        };
    }
}

/// The values of a sample to write.
#[derive(Clone, Copy)]
struct Sample<'a> {
    count: f64,
    zero_count: f64,
    sum: f64,
    positive: &'a [f64],
    negative: &'a [f64],
}

impl<'a> Sample<'a> {
    fn of(h: &'a FloatHistogram) -> Self {
        Sample {
            count: h.count,
            zero_count: h.zero_count,
            sum: h.sum,
            positive: &h.positive_buckets,
            negative: &h.negative_buckets,
        }
    }
}

fn layout_of(h: &FloatHistogram) -> LayoutView<'_> {
    LayoutView {
        schema: h.schema,
        zero_threshold: h.zero_threshold,
        positive_spans: &h.positive_spans,
        negative_spans: &h.negative_spans,
        custom_values: &h.custom_values,
    }
}

fn values(fields: &[XorField]) -> impl Iterator<Item = f64> + '_ {
    fields.iter().map(XorField::value)
}

/// A float histogram chunk, appendable: its bytes and the state the next
/// sample is encoded relative to.
#[derive(Clone, Debug)]
pub struct FloatHistogramChunk {
    buf: Vec<u8>,
    free_bits: u8,
    count: u16,
    state: State,
    /// The start timestamp encoder of a `floathistogramST` chunk (encoding
    /// 6, wrapped by [`crate::FloatHistogramStChunk`]); `None` for 3.
    st: Option<StEncoder>,
}

impl Default for FloatHistogramChunk {
    fn default() -> Self {
        Self::new()
    }
}

impl FloatHistogramChunk {
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
        FloatHistogramChunk {
            buf,
            free_bits: 0,
            count: 0,
            state: State::default(),
            st: layout.new_st_encoder(),
        }
    }

    /// Empties the chunk for reuse, as a new chunk of its encoding but
    /// keeping its allocations (as [`crate::HistogramChunk::reset`]).
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

    /// Reopens chunk bytes for appending; see
    /// [`crate::HistogramChunk::from_bytes`] for what is refused.
    pub fn from_bytes(data: Vec<u8>) -> Result<Self, ChunkError> {
        Self::from_bytes_as(data, HeaderLayout::Plain)
    }

    /// [`Self::from_bytes`] for either encoding.
    pub(crate) fn from_bytes_as(
        mut data: Vec<u8>,
        layout: HeaderLayout,
    ) -> Result<Self, ChunkError> {
        let mut it = FloatHistogramIterator::new_as(&data, layout);
        while it.advance().is_some() {}
        if let Some(err) = it.err.take() {
            return Err(err);
        }
        let (free_bits, count) = check_end(&data, it.reader.bits_consumed(), it.total)?;
        let state = std::mem::take(&mut it.state);
        if count > 0 && state.layout.has_unordered_spans() {
            return Err(ChunkError::UnorderedSpans);
        }
        let st = crate::histogram::resume_st(it.st.as_ref(), count)?;
        data.reserve(16);
        Ok(FloatHistogramChunk {
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
    /// header, the encoder's bucket fields and the layout's spans. For
    /// prefetching when appending to many chunks in turn (WAL replay).
    pub fn append_addresses(&self) -> [*const u8; 6] {
        let s = &self.state;
        let [tail, header] = buf_addresses(&self.buf);
        [
            tail,
            header,
            s.positive.as_ptr().cast(),
            s.positive.as_ptr().wrapping_add(4).cast(),
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
    pub fn iter(&self) -> FloatHistogramIterator<'_> {
        FloatHistogramIterator::new_as(&self.buf, self.header_layout())
    }

    /// Releases spare capacity once the chunk is complete.
    pub fn compact(&mut self) {
        if self.buf.capacity() > self.buf.len() + 32 {
            self.buf.shrink_to_fit();
        }
    }

    /// Appends a sample as Prometheus' head does (see the module docs of
    /// this module and of [`crate::histogram`]). `prev` is the series'
    /// previous chunk (`None` if it has another encoding), consulted only
    /// for the counter-reset header of a first sample.
    pub fn append(
        &mut self,
        prev: Option<&FloatHistogramChunk>,
        t: i64,
        h: &FloatHistogram,
    ) -> Result<AppendOutcome<FloatHistogramChunk>, AppendError> {
        self.append_with(prev, 0, t, h, false)
    }

    /// Appends a sample only if it fits this chunk as it is laid out
    /// (Prometheus' `appendOnly`); the chunk is unchanged on an error.
    pub fn append_only(&mut self, t: i64, h: &FloatHistogram) -> Result<(), AppendError> {
        self.append_only_st(0, t, h)
    }

    /// [`Self::append_only`] with a start timestamp (ignored by encoding 3).
    pub(crate) fn append_only_st(
        &mut self,
        st: i64,
        t: i64,
        h: &FloatHistogram,
    ) -> Result<(), AppendError> {
        match self.append_with(None, st, t, h, true)? {
            AppendOutcome::Appended => Ok(()),
            AppendOutcome::Recoded | AppendOutcome::NewChunk(_) => Err(AppendError::LayoutChange),
        }
    }

    /// Appends with start timestamp `st` (ignored by encoding 3); the ST
    /// plays no part in the decisions.
    pub(crate) fn append_with(
        &mut self,
        prev: Option<&FloatHistogramChunk>,
        st: i64,
        t: i64,
        h: &FloatHistogram,
        append_only: bool,
    ) -> Result<AppendOutcome<FloatHistogramChunk>, AppendError> {
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
                    Err(r) if r.is_counter_reset() => CounterResetHeader::CounterReset,
                    _ => CounterResetHeader::NotCounterReset,
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
                let mut c = FloatHistogramChunk::empty(self.header_layout());
                if gauge {
                    c.set_counter_reset_header(CounterResetHeader::Gauge);
                } else if r.is_counter_reset() {
                    c.set_counter_reset_header(CounterResetHeader::CounterReset);
                }
                c.push(st, t, layout_of(h), Sample::of(h));
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
            remap(
                &h.positive_spans,
                h.positive_buckets.iter().copied(),
                &positive_spans,
                &mut positive,
            );
            remap(
                &h.negative_spans,
                h.negative_buckets.iter().copied(),
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

    /// Prometheus' `appendable` for float histograms.
    fn counter_check(&self, h: &FloatHistogram) -> Result<(SideDiff, SideDiff), Rejection> {
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
        if is_stale_nan(st.sum.value()) {
            return Err(Rejection::AfterStale);
        }
        if h.count < st.count.value() {
            return Err(Rejection::CountDecreased);
        }
        if h.schema != st.layout.schema || h.zero_threshold != st.layout.zero_threshold {
            return Err(Rejection::SchemaOrThreshold);
        }
        if h.uses_custom_buckets() && h.custom_values != st.layout.custom_values {
            return Err(Rejection::CustomBounds);
        }
        if h.zero_count < st.zero_count.value() {
            return Err(Rejection::ZeroCountDecreased);
        }
        let pos = counter_side_diff(
            &st.layout.positive_spans,
            values(&st.positive),
            &h.positive_spans,
            h.positive_buckets.iter().copied(),
        );
        let neg = counter_side_diff(
            &st.layout.negative_spans,
            values(&st.negative),
            &h.negative_spans,
            h.negative_buckets.iter().copied(),
        );
        pos.zip(neg).ok_or(Rejection::BucketDecreased)
    }

    /// Prometheus' `appendableGauge` for float histograms.
    fn gauge_check(&self, h: &FloatHistogram) -> Option<(SideDiff, SideDiff)> {
        let st = &self.state;
        if self.count > 0 && self.counter_reset_header() != CounterResetHeader::Gauge {
            return None;
        }
        if h.is_stale() {
            return Some(Default::default());
        }
        if is_stale_nan(st.sum.value())
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

    /// Rewrites the chunk with other spans covering all of its buckets.
    fn recode(&mut self, positive_spans: &[Span], negative_spans: &[Span]) {
        let old = std::mem::replace(self, Self::empty(self.header_layout()));
        let mut it = old.iter();
        let (mut positive, mut negative) = (Vec::new(), Vec::new());
        while let Some(t) = it.advance() {
            let st = &it.state;
            remap(
                &st.layout.positive_spans,
                values(&st.positive),
                positive_spans,
                &mut positive,
            );
            remap(
                &st.layout.negative_spans,
                values(&st.negative),
                negative_spans,
                &mut negative,
            );
            let layout = LayoutView {
                positive_spans,
                negative_spans,
                ..st.layout.view()
            };
            let sample = Sample {
                count: st.count.value(),
                zero_count: st.zero_count.value(),
                sum: st.sum.value(),
                positive: &positive,
                negative: &negative,
            };
            self.push(it.start_timestamp(), t, layout, sample);
        }
        debug_assert!(it.error().is_none() && self.count == old.count);
        self.set_counter_reset_header(old.counter_reset_header());
    }

    /// Writes a sample, then its start timestamp `start` if this is an ST
    /// chunk; `layout` only matters for the first.
    fn push(&mut self, start: i64, t: i64, layout: LayoutView<'_>, sample: Sample<'_>) {
        let (layout, sample) = if is_stale_nan(sample.sum) {
            let empty = Sample {
                count: 0.0,
                zero_count: 0.0,
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
            for v in [sample.count, sample.zero_count, sample.sum] {
                w.write_bits(v.to_bits(), 64);
            }
            st.count.bits = sample.count.to_bits();
            st.zero_count.bits = sample.zero_count.to_bits();
            st.sum.bits = sample.sum.to_bits();
            for (fields, new) in [
                (&mut st.positive, sample.positive),
                (&mut st.negative, sample.negative),
            ] {
                fields.clear();
                for &v in new {
                    w.write_bits(v.to_bits(), 64);
                    fields.push(XorField::new(v.to_bits()));
                }
            }
            st.t_delta = 0;
        } else {
            let t_delta = t.wrapping_sub(st.t);
            // Gathered into few writes (see the integer chunk's `push`).
            let mut g = BitGather::new(&mut w);
            write_varbit_int(&mut g, t_delta.wrapping_sub(st.t_delta));
            st.count.write(&mut g, sample.count);
            st.zero_count.write(&mut g, sample.zero_count);
            st.sum.write(&mut g, sample.sum);
            for (fields, new) in [
                (&mut st.positive, sample.positive),
                (&mut st.negative, sample.negative),
            ] {
                debug_assert!(new.is_empty() || new.len() == fields.len());
                for (f, &v) in fields.iter_mut().zip(new) {
                    f.write(&mut g, v);
                }
            }
            g.finish();
            st.t_delta = t_delta;
        }
        st.t = t;
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

/// Decodes the samples of float histogram chunk bytes; see
/// [`crate::HistogramIterator`] for the calling pattern.
#[derive(Clone, Debug)]
pub struct FloatHistogramIterator<'a> {
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

impl<'a> FloatHistogramIterator<'a> {
    /// An iterator over chunk bytes (header included).
    pub fn new(data: &'a [u8]) -> Self {
        Self::new_as(data, HeaderLayout::Plain)
    }

    /// An iterator over floathistogramST (encoding 6) chunk bytes (header included):
    /// [`Self::start_timestamp`] gives each sample's start timestamp.
    pub fn new_st(data: &'a [u8]) -> Self {
        Self::new_as(data, HeaderLayout::St)
    }

    /// An iterator over chunk bytes of either encoding.
    pub(crate) fn new_as(data: &'a [u8], layout: HeaderLayout) -> Self {
        let mut it = FloatHistogramIterator {
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

    /// Advances to the first sample with timestamp >= `t`; never moves
    /// backwards.
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
    /// encoding 3.
    pub fn start_timestamp(&self) -> i64 {
        self.st.as_ref().map_or(0, StDecoder::st)
    }

    /// The ST header (empty for encoding 3).
    pub fn st_header(&self) -> crate::StHeader {
        self.st.as_ref().map(StDecoder::header).unwrap_or_default()
    }

    /// Decodes the next sample into `h` and returns its timestamp.
    pub fn next_into(&mut self, h: &mut FloatHistogram) -> Option<i64> {
        let t = self.advance()?;
        self.at(h);
        Some(t)
    }

    /// Copies the current sample into `h`, reusing its vectors. A stale
    /// marker comes out as a histogram of nothing but the sum.
    pub fn at(&self, h: &mut FloatHistogram) {
        let st = &self.state;
        h.clear();
        h.sum = st.sum.value();
        if is_stale_nan(h.sum) {
            return;
        }
        h.counter_reset_hint = self.header.sample_hint(self.read);
        h.schema = st.layout.schema;
        h.zero_threshold = st.layout.zero_threshold;
        h.zero_count = st.zero_count.value();
        h.count = st.count.value();
        h.custom_values.extend_from_slice(&st.layout.custom_values);
        if needs_reduction(st.layout.schema) {
            for (spans, fields, out_spans, out) in [
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
                let abs: Vec<f64> = values(fields).collect();
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
            h.schema = 8;
            return;
        }
        h.positive_spans
            .extend_from_slice(&st.layout.positive_spans);
        h.negative_spans
            .extend_from_slice(&st.layout.negative_spans);
        h.positive_buckets.extend(values(&st.positive));
        h.negative_buckets.extend(values(&st.negative));
    }

    fn decode_first(&mut self) -> Result<(), Fault> {
        let r = &mut self.reader;
        let st = &mut self.state;
        st.layout.read(r)?;
        let (np, nn) = st.layout.bucket_counts();
        // Every bucket takes 64 bits: refuse to allocate for more.
        if np.saturating_add(nn).saturating_mul(64) > r.remaining() as u64 {
            return Err(Fault::Truncated);
        }
        st.t = read_varbit_int(r)?;
        st.count = XorField::new(r.read_bits(64)?);
        st.zero_count = XorField::new(r.read_bits(64)?);
        st.sum = XorField::new(r.read_bits(64)?);
        st.t_delta = 0;
        for (n, fields) in [(np, &mut st.positive), (nn, &mut st.negative)] {
            fields.clear();
            for _ in 0..n {
                fields.push(XorField::new(r.read_bits(64)?));
            }
        }
        Ok(())
    }

    fn decode_next(&mut self) -> Result<(), Fault> {
        let r = &mut self.reader;
        let st = &mut self.state;
        st.t_delta = st.t_delta.wrapping_add(read_varbit_int(r)?);
        st.t = st.t.wrapping_add(st.t_delta);
        st.count.read(r)?;
        st.zero_count.read(r)?;
        st.sum.read(r)?;
        if is_stale_nan(st.sum.value()) {
            return Ok(());
        }
        for f in st.positive.iter_mut().chain(st.negative.iter_mut()) {
            f.read(r)?;
        }
        Ok(())
    }
}
