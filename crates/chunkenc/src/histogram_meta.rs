//! What the integer and float histogram chunk encodings share: the chunk
//! header, the layout written before the first sample, bucket index
//! arithmetic for comparing and re-laying-out bucket sets, and the types
//! of the append API.
//!
//! # Header and layout
//!
//! A histogram chunk starts with a 2-byte big-endian sample count and a
//! flags byte whose top two bits are the [`CounterResetHeader`]; the bit
//! stream follows. The first sample begins with the chunk's layout, which
//! every later sample shares:
//!
//! * the zero threshold: one byte 0 for 0; one byte `k + 244` for `2^k`
//!   with -243 <= k <= 10; else the byte 255 and the 64 bits of the float;
//! * the schema as a varbit int ([`crate::varbit`]);
//! * positive then negative spans: a varbit uint count, then per span its
//!   length (varbit uint) and offset (varbit int);
//! * for the custom-buckets schema -53 only, the custom bounds: a varbit
//!   uint count, then per bound either `v*1000 + 1` as a varbit uint (for
//!   multiples of 0.001 in 0 ..= 33554.43) or a 0 bit and the 64 bits of
//!   the float.

#![deny(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]

use ferrite_model::histogram::{
    is_custom_buckets_schema, EXPONENTIAL_SCHEMA_MAX, EXPONENTIAL_SCHEMA_MAX_RESERVED,
};
use ferrite_model::{CounterResetHint, Span};

use crate::bstream::{BitReader, BitWriter, EndOfStream};
use crate::varbit::{read_varbit_int, read_varbit_uint, write_varbit_int, write_varbit_uint};
use crate::ChunkError;

/// Bytes before the bit stream: sample count and flags.
pub const HISTOGRAM_HEADER_LEN: usize = 3;
/// Position of the flags byte.
pub(crate) const FLAGS_POS: usize = 2;
/// Initial capacity of a new chunk, as Prometheus.
pub(crate) const INITIAL_CAPACITY: usize = 128;

/// Prometheus' size target for a head histogram chunk
/// (`chunkenc.TargetBytesPerHistogramChunk`): the head cuts a chunk once
/// it is twice this big (or its time range is used up), but not before
/// it holds [`MIN_SAMPLES_PER_HISTOGRAM_CHUNK`] samples, unless the chunk
/// range ends.
pub const TARGET_BYTES_PER_HISTOGRAM_CHUNK: usize = 1024;
/// Prometheus' minimum sample count of a head histogram chunk
/// (`chunkenc.MinSamplesPerHistogramChunk`).
pub const MIN_SAMPLES_PER_HISTOGRAM_CHUNK: u16 = 10;

/// What a histogram chunk says about a counter reset before its first
/// sample: the top two bits of its flags byte.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum CounterResetHeader {
    /// Not known; readers detect resets themselves.
    #[default]
    Unknown = 0b0000_0000,
    /// The chunk was cut because of a counter reset.
    CounterReset = 0b1000_0000,
    /// There was certainly no counter reset before the first sample.
    NotCounterReset = 0b0100_0000,
    /// A chunk of gauge histograms.
    Gauge = 0b1100_0000,
}

impl CounterResetHeader {
    /// The bits of the flags byte the header occupies.
    pub const MASK: u8 = 0b1100_0000;

    /// The header of a flags byte (other bits ignored).
    pub fn from_flags(flags: u8) -> Self {
        match flags & Self::MASK {
            0b1000_0000 => CounterResetHeader::CounterReset,
            0b0100_0000 => CounterResetHeader::NotCounterReset,
            0b1100_0000 => CounterResetHeader::Gauge,
            _ => CounterResetHeader::Unknown,
        }
    }

    /// The header a chunk starting with a sample of this hint gets
    /// (Prometheus' `CounterResetHintToHeader`).
    pub fn from_hint(hint: CounterResetHint) -> Self {
        match hint {
            CounterResetHint::CounterReset => CounterResetHeader::CounterReset,
            CounterResetHint::NotCounterReset => CounterResetHeader::NotCounterReset,
            CounterResetHint::Gauge => CounterResetHeader::Gauge,
            CounterResetHint::Unknown => CounterResetHeader::Unknown,
        }
    }

    /// The hint of the `n`-th decoded sample (1-based) of a chunk with this
    /// header: gauge chunks hold gauges; within a counter chunk no sample
    /// after the first is a reset; the first is unknown, since the chunk
    /// before it may be gone or come from elsewhere.
    pub fn sample_hint(self, n: u16) -> CounterResetHint {
        if self == CounterResetHeader::Gauge {
            CounterResetHint::Gauge
        } else if n > 1 {
            CounterResetHint::NotCounterReset
        } else {
            CounterResetHint::Unknown
        }
    }
}

/// Most samples a start-timestamp histogram chunk holds: its sample count
/// has 14 bits (Prometheus' `histogramSTSampleCountMask`).
pub const HISTOGRAM_ST_MAX_SAMPLES: u16 = 0x3fff;

/// Where a histogram chunk's 3-byte header keeps its fields.
///
/// * `Plain` (encodings 2 and 3): a 16-bit sample count, then the flags
///   byte whose top two bits are the counter-reset header.
/// * `St` (encodings 5 and 6): the counter-reset header in the top two
///   bits of byte 0, a 14-bit sample count in the rest of bytes 0-1, then
///   the [ST header](crate::st) byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HeaderLayout {
    Plain,
    St,
}

/// A histogram chunk header, split.
pub(crate) struct Header<'a> {
    pub samples: u16,
    pub counter_reset: CounterResetHeader,
    /// The ST header byte (0 for `Plain`).
    pub st: u8,
    pub body: &'a [u8],
}

impl HeaderLayout {
    /// The layout of a chunk that has (or has not) an ST encoder.
    pub(crate) const fn of(st: Option<&crate::st::StEncoder>) -> Self {
        if st.is_some() {
            HeaderLayout::St
        } else {
            HeaderLayout::Plain
        }
    }

    /// The ST encoder a new chunk of this layout starts with.
    pub(crate) const fn new_st_encoder(self) -> Option<crate::st::StEncoder> {
        match self {
            HeaderLayout::Plain => None,
            HeaderLayout::St => Some(crate::st::StEncoder::new()),
        }
    }

    /// Most samples the count holds.
    pub(crate) const fn max_samples(self) -> u16 {
        match self {
            HeaderLayout::Plain => u16::MAX,
            HeaderLayout::St => HISTOGRAM_ST_MAX_SAMPLES,
        }
    }

    /// Index of the byte holding the counter-reset header.
    const fn counter_reset_at(self) -> usize {
        match self {
            HeaderLayout::Plain => FLAGS_POS,
            HeaderLayout::St => 0,
        }
    }

    /// Splits chunk bytes into header fields and bit stream.
    pub(crate) fn split(self, data: &[u8]) -> Result<Header<'_>, ChunkError> {
        let Some((&[c0, c1, flags], body)) = data.split_first_chunk::<HISTOGRAM_HEADER_LEN>()
        else {
            return Err(ChunkError::ShortHeader {
                len: data.len(),
                need: HISTOGRAM_HEADER_LEN,
            });
        };
        let count = u16::from_be_bytes([c0, c1]);
        Ok(match self {
            HeaderLayout::Plain => Header {
                samples: count,
                counter_reset: CounterResetHeader::from_flags(flags),
                st: 0,
                body,
            },
            HeaderLayout::St => Header {
                samples: count & HISTOGRAM_ST_MAX_SAMPLES,
                counter_reset: CounterResetHeader::from_flags(c0),
                st: flags,
                body,
            },
        })
    }

    /// The counter-reset header of chunk bytes.
    pub(crate) fn counter_reset_header(self, buf: &[u8]) -> CounterResetHeader {
        CounterResetHeader::from_flags(buf.get(self.counter_reset_at()).copied().unwrap_or(0))
    }

    /// Writes the counter-reset header, keeping the other bits of its byte.
    pub(crate) fn set_counter_reset_header(self, buf: &mut [u8], header: CounterResetHeader) {
        if let Some(b) = buf.get_mut(self.counter_reset_at()) {
            *b = (*b & !CounterResetHeader::MASK) | header as u8;
        }
    }

    /// Writes the sample count (at most [`Self::max_samples`]), keeping
    /// the counter-reset header.
    pub(crate) fn set_samples(self, buf: &mut [u8], samples: u16) {
        if let Some(count) = buf.first_chunk_mut::<2>() {
            let keep = match self {
                HeaderLayout::Plain => 0,
                HeaderLayout::St => u16::from(count[0] & CounterResetHeader::MASK) << 8,
            };
            *count = (keep | samples).to_be_bytes();
        }
    }

    /// ORs start timestamp header bits into the ST header byte.
    pub(crate) fn add_st_bits(self, buf: &mut [u8], bits: u8) {
        if let (HeaderLayout::St, Some(b)) = (self, buf.get_mut(FLAGS_POS)) {
            *b |= bits;
        }
    }
}

/// What an append did.
#[derive(Debug)]
pub enum AppendOutcome<C> {
    /// The sample was appended to the chunk.
    Appended,
    /// The sample brought buckets the chunk lacked: the chunk was rewritten
    /// with the wider layout (its earlier samples gaining empty buckets, its
    /// counter-reset header kept) and the sample appended. It replaces the
    /// old chunk (same time range, same sample count plus one).
    Recoded,
    /// The sample cannot go into this chunk (unchanged): here is a new
    /// chunk holding it, its counter-reset header set. The caller closes the
    /// old chunk and continues with this one.
    NewChunk(C),
}

/// An append that was refused. The chunk is unchanged.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AppendError {
    /// The chunk holds `u16::MAX` samples.
    #[error("chunk capacity exceeded")]
    ChunkFull,
    /// The histogram's spans and buckets disagree.
    #[error("{side} spans need {in_spans} buckets, have {buckets} buckets")]
    SpansBucketsMismatch {
        /// `positive` or `negative`.
        side: &'static str,
        /// Buckets the spans describe.
        in_spans: u64,
        /// Buckets given.
        buckets: usize,
    },
    /// A span after the first has a negative offset.
    #[error("{side} span number {span} has negative offset {offset}")]
    NegativeSpanOffset {
        /// `positive` or `negative`.
        side: &'static str,
        /// 1-based span number.
        span: usize,
        /// The offset.
        offset: i32,
    },
    /// Append-only mode: the sample is a counter reset.
    #[error("histogram counter reset")]
    CounterReset,
    /// Append-only mode: the sample needs a new chunk for another reason
    /// (schema, zero threshold, counter/gauge switch, after a stale marker).
    #[error("histogram schema change")]
    SchemaChange,
    /// Append-only mode: the sample's buckets differ from the chunk's.
    #[error("histogram layout change")]
    LayoutChange,
}

/// Why a counter (non-gauge) histogram cannot be appended to a chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Rejection {
    /// The chunk holds gauge histograms.
    GaugeChunk,
    /// The sample is hinted as a counter reset.
    ExplicitReset,
    /// The chunk's last sample is a stale marker, this one is not.
    AfterStale,
    /// The count went down.
    CountDecreased,
    /// Schema or zero threshold differ.
    SchemaOrThreshold,
    /// Custom bucket bounds differ.
    CustomBounds,
    /// The zero bucket's count went down.
    ZeroCountDecreased,
    /// A bucket's count went down, or a populated bucket vanished.
    BucketDecreased,
}

impl Rejection {
    /// Whether the rejection means a counter reset.
    pub(crate) fn is_counter_reset(self) -> bool {
        matches!(
            self,
            Rejection::ExplicitReset
                | Rejection::CountDecreased
                | Rejection::CustomBounds
                | Rejection::ZeroCountDecreased
                | Rejection::BucketDecreased
        )
    }

    /// The append-only error for this rejection.
    pub(crate) fn error(self) -> AppendError {
        if self.is_counter_reset() {
            AppendError::CounterReset
        } else {
            AppendError::SchemaChange
        }
    }
}

/// Checks the spans of a histogram to append: later offsets not negative
/// and as many buckets as the spans describe.
pub(crate) fn check_spans(
    side: &'static str,
    spans: &[Span],
    buckets: usize,
) -> Result<(), AppendError> {
    let mut in_spans = 0u64;
    for (n, s) in spans.iter().enumerate() {
        if n > 0 && s.offset < 0 {
            return Err(AppendError::NegativeSpanOffset {
                side,
                span: n + 1,
                offset: s.offset,
            });
        }
        in_spans += u64::from(s.length);
    }
    if in_spans != buckets as u64 {
        return Err(AppendError::SpansBucketsMismatch {
            side,
            in_spans,
            buckets,
        });
    }
    Ok(())
}

pub(crate) use crate::Fault;

/// A chunk buffer's last byte (where an append writes next) and first
/// (the header's sample count), for prefetching.
pub(crate) fn buf_addresses(buf: &[u8]) -> [*const u8; 2] {
    let start = buf.as_ptr();
    [start.wrapping_add(buf.len().saturating_sub(1)), start]
}

/// The layout every sample of a chunk shares.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Layout {
    pub schema: i32,
    pub zero_threshold: f64,
    pub positive_spans: Vec<Span>,
    pub negative_spans: Vec<Span>,
    /// Only read and written for the custom-buckets schema.
    pub custom_values: Vec<f64>,
}

/// A layout borrowed from a histogram, or with other spans.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LayoutView<'a> {
    pub schema: i32,
    pub zero_threshold: f64,
    pub positive_spans: &'a [Span],
    pub negative_spans: &'a [Span],
    pub custom_values: &'a [f64],
}

impl LayoutView<'_> {
    /// What a stale marker's layout is written as.
    pub(crate) const EMPTY: LayoutView<'static> = LayoutView {
        schema: 0,
        zero_threshold: 0.0,
        positive_spans: &[],
        negative_spans: &[],
        custom_values: &[],
    };
}

impl Layout {
    /// Empties the layout, keeping its vectors' allocations.
    pub(crate) fn clear(&mut self) {
        self.schema = 0;
        self.zero_threshold = 0.0;
        self.positive_spans.clear();
        self.negative_spans.clear();
        self.custom_values.clear();
    }

    /// The layout as a view.
    pub(crate) fn view(&self) -> LayoutView<'_> {
        LayoutView {
            schema: self.schema,
            zero_threshold: self.zero_threshold,
            positive_spans: &self.positive_spans,
            negative_spans: &self.negative_spans,
            custom_values: &self.custom_values,
        }
    }

    /// Whether a later span has a negative offset (bucket indices not
    /// increasing): nothing Prometheus appends for a valid histogram.
    pub(crate) fn has_unordered_spans(&self) -> bool {
        later_offset_negative(&self.positive_spans) || later_offset_negative(&self.negative_spans)
    }

    /// Buckets the positive and negative spans describe.
    pub(crate) fn bucket_counts(&self) -> (u64, u64) {
        (
            span_buckets(&self.positive_spans),
            span_buckets(&self.negative_spans),
        )
    }

    /// Takes the layout of a histogram being appended.
    pub(crate) fn set(&mut self, v: LayoutView<'_>) {
        self.schema = v.schema;
        self.zero_threshold = v.zero_threshold;
        self.positive_spans.clear();
        self.positive_spans.extend_from_slice(v.positive_spans);
        self.negative_spans.clear();
        self.negative_spans.extend_from_slice(v.negative_spans);
        self.custom_values.clear();
        self.custom_values.extend_from_slice(v.custom_values);
    }

    /// Writes the layout (see the module doc).
    pub(crate) fn write(&self, w: &mut BitWriter<'_>) {
        write_zero_threshold(w, self.zero_threshold);
        write_varbit_int(w, i64::from(self.schema));
        write_spans(w, &self.positive_spans);
        write_spans(w, &self.negative_spans);
        if is_custom_buckets_schema(self.schema) {
            write_varbit_uint(w, self.custom_values.len() as u64);
            for &v in &self.custom_values {
                write_custom_bound(w, v);
            }
        }
    }

    /// Reads a layout into `self`, reusing its vectors. Refuses schemas
    /// Prometheus does not know, and layouts of schemas above 8 that
    /// could not be reduced to schema 8.
    pub(crate) fn read(&mut self, r: &mut BitReader<'_>) -> Result<(), Fault> {
        self.zero_threshold = read_zero_threshold(r)?;
        // Prometheus truncates to 32 bits.
        self.schema = read_varbit_int(r)? as i32;
        read_spans(r, &mut self.positive_spans)?;
        read_spans(r, &mut self.negative_spans)?;
        self.custom_values.clear();
        if is_custom_buckets_schema(self.schema) {
            let n = read_varbit_uint(r)?;
            // Every bound takes at least one bit: the loop ends at the end
            // of the data at the latest.
            for _ in 0..n {
                self.custom_values.push(read_custom_bound(r)?);
            }
        }
        if !ferrite_model::histogram::is_known_schema(self.schema) {
            return Err(Fault::UnknownSchema(self.schema));
        }
        if needs_reduction(self.schema)
            && (later_offset_negative(&self.positive_spans)
                || later_offset_negative(&self.negative_spans))
        {
            return Err(Fault::IrreducibleLayout(self.schema));
        }
        Ok(())
    }
}

fn later_offset_negative(spans: &[Span]) -> bool {
    spans.iter().skip(1).any(|s| s.offset < 0)
}

/// Whether decoded histograms of this schema are reduced to schema 8, as
/// Prometheus does for chunks of a newer version with finer resolution.
pub(crate) fn needs_reduction(schema: i32) -> bool {
    schema > EXPONENTIAL_SCHEMA_MAX && schema <= EXPONENTIAL_SCHEMA_MAX_RESERVED
}

/// Buckets the spans describe.
pub(crate) fn span_buckets(spans: &[Span]) -> u64 {
    spans.iter().map(|s| u64::from(s.length)).sum()
}

fn write_spans(w: &mut BitWriter<'_>, spans: &[Span]) {
    write_varbit_uint(w, spans.len() as u64);
    for s in spans {
        write_varbit_uint(w, u64::from(s.length));
        write_varbit_int(w, i64::from(s.offset));
    }
}

fn read_spans(r: &mut BitReader<'_>, spans: &mut Vec<Span>) -> Result<(), EndOfStream> {
    spans.clear();
    let n = read_varbit_uint(r)?;
    // Every span takes at least two bits.
    for _ in 0..n {
        let length = read_varbit_uint(r)? as u32;
        let offset = read_varbit_int(r)? as i32;
        spans.push(Span { offset, length });
    }
    Ok(())
}

/// The zero-threshold byte of `2^k`: `k + 244` for -243 <= k <= 10.
fn zero_threshold_code(threshold: f64) -> Option<u8> {
    let bits = threshold.to_bits();
    let biased = (bits >> 52) as i64; // Sign bit included: positive only.
    if bits & ((1 << 52) - 1) != 0 || biased == 0 || biased >= 0x7ff {
        return None;
    }
    let k = biased - 1023;
    (-243..=10).contains(&k).then(|| (k + 244) as u8)
}

fn write_zero_threshold(w: &mut BitWriter<'_>, threshold: f64) {
    if threshold == 0.0 {
        w.write_bits(0, 8);
    } else if let Some(code) = zero_threshold_code(threshold) {
        w.write_bits(u64::from(code), 8);
    } else {
        w.write_bits(0xff, 8);
        w.write_bits(threshold.to_bits(), 64);
    }
}

fn read_zero_threshold(r: &mut BitReader<'_>) -> Result<f64, EndOfStream> {
    Ok(match r.read_bits(8)? {
        0 => 0.0,
        0xff => f64::from_bits(r.read_bits(64)?),
        // 2^(code - 244), a normal float for every code 1..=254.
        code => f64::from_bits(((code as i64 - 244 + 1023) as u64) << 52),
    })
}

/// Largest `bound * 1000` stored as a varbit uint (plus one, it fills the
/// 25-bit class).
const CUSTOM_BOUND_MAX_MILLIS: f64 = 33_554_430.0;

fn write_custom_bound(w: &mut BitWriter<'_>, bound: f64) {
    let millis = bound * 1000.0;
    // NaN fails every comparison and is never a whole number of millis.
    let whole = (millis.round() as u64) as f64 / 1000.0 == bound;
    if (0.0..=CUSTOM_BOUND_MAX_MILLIS).contains(&millis) && whole {
        write_varbit_uint(w, millis.round() as u64 + 1);
    } else {
        w.write_bits(0, 1);
        w.write_bits(bound.to_bits(), 64);
    }
}

fn read_custom_bound(r: &mut BitReader<'_>) -> Result<f64, EndOfStream> {
    Ok(match read_varbit_uint(r)? {
        0 => f64::from_bits(r.read_bits(64)?),
        n => (n - 1) as f64 / 1000.0,
    })
}

/// The absolute bucket indices the spans describe, in order.
pub(crate) fn bucket_indices(spans: &[Span]) -> impl Iterator<Item = i64> + Clone + '_ {
    spans
        .iter()
        .scan(0i64, |next, s| {
            let start = *next + i64::from(s.offset);
            *next = start + i64::from(s.length);
            Some(start..*next)
        })
        .flatten()
}

/// Builds the shortest spans of an increasing sequence of bucket indices.
#[derive(Default)]
pub(crate) struct SpanBuilder {
    spans: Vec<Span>,
    last: i64,
}

impl SpanBuilder {
    pub(crate) fn push(&mut self, index: i64) {
        match self.spans.last_mut() {
            Some(s) if index == self.last + 1 => s.length += 1,
            Some(_) => self.spans.push(Span {
                offset: (index - self.last - 1) as i32,
                length: 1,
            }),
            None => self.spans.push(Span {
                offset: index as i32,
                length: 1,
            }),
        }
        self.last = index;
    }

    pub(crate) fn finish(self) -> Vec<Span> {
        self.spans
    }
}

/// How one side's (positive or negative) buckets of a new sample relate
/// to the chunk's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct SideDiff {
    /// The sample has buckets the chunk lacks.
    pub new_buckets: bool,
    /// The chunk has buckets the sample lacks.
    pub missing_buckets: bool,
}

/// A bucket count as the counter checks compare it.
pub(crate) trait BucketCount: Copy + PartialOrd {
    fn is_zero(self) -> bool;
}

impl BucketCount for i64 {
    fn is_zero(self) -> bool {
        self == 0
    }
}

impl BucketCount for f64 {
    fn is_zero(self) -> bool {
        self == 0.0
    }
}

/// Compares a counter sample's buckets with the chunk's: `None` if a
/// bucket count went down or a bucket populated in the chunk's last
/// sample is missing (a counter reset). Counts are absolute.
pub(crate) fn counter_side_diff<T: BucketCount>(
    chunk_spans: &[Span],
    chunk_counts: impl Iterator<Item = T>,
    spans: &[Span],
    counts: impl Iterator<Item = T>,
) -> Option<SideDiff> {
    let mut diff = SideDiff::default();
    if chunk_spans == spans {
        // The usual case, the same buckets: no bucket is missing or new,
        // and none may have decreased (`!(a > b)`: as below, a NaN count
        // does not count as a decrease).
        #[allow(clippy::neg_cmp_op_on_partial_ord)]
        let kept = chunk_counts.zip(counts).all(|(a, b)| !(a > b));
        return kept.then_some(diff);
    }
    let mut a = bucket_indices(chunk_spans).zip(chunk_counts).peekable();
    let mut b = bucket_indices(spans).zip(counts).peekable();
    loop {
        match (a.peek(), b.peek()) {
            (Some(&(ai, ac)), Some(&(bi, bc))) if ai == bi => {
                if ac > bc {
                    return None;
                }
                a.next();
                b.next();
            }
            (Some(&(ai, ac)), Some(&(bi, _))) if ai < bi => {
                if !ac.is_zero() {
                    return None;
                }
                diff.missing_buckets = true;
                a.next();
            }
            (Some(&(_, ac)), None) => {
                if !ac.is_zero() {
                    return None;
                }
                diff.missing_buckets = true;
                a.next();
            }
            (_, Some(_)) => {
                diff.new_buckets = true;
                b.next();
            }
            (None, None) => return Some(diff),
        }
    }
}

/// Compares a gauge sample's bucket indices with the chunk's.
pub(crate) fn gauge_side_diff(chunk_spans: &[Span], spans: &[Span]) -> SideDiff {
    let mut diff = SideDiff::default();
    merge_indices(chunk_spans, spans, |in_chunk, in_sample, _| {
        diff.missing_buckets |= in_chunk && !in_sample;
        diff.new_buckets |= in_sample && !in_chunk;
    });
    diff
}

/// The shortest spans covering the buckets of both span lists.
pub(crate) fn union_spans(a: &[Span], b: &[Span]) -> Vec<Span> {
    let mut builder = SpanBuilder::default();
    merge_indices(a, b, |_, _, index| builder.push(index));
    builder.finish()
}

/// Walks the bucket indices of two span lists in merged order, calling
/// `f(in_a, in_b, index)` once per distinct index.
fn merge_indices(a: &[Span], b: &[Span], mut f: impl FnMut(bool, bool, i64)) {
    let mut a = bucket_indices(a).peekable();
    let mut b = bucket_indices(b).peekable();
    loop {
        match (a.peek().copied(), b.peek().copied()) {
            (Some(ai), Some(bi)) if ai == bi => {
                f(true, true, ai);
                a.next();
                b.next();
            }
            (Some(ai), Some(bi)) if ai < bi => {
                f(true, false, ai);
                a.next();
            }
            (Some(ai), None) => {
                f(true, false, ai);
                a.next();
            }
            (_, Some(bi)) => {
                f(false, true, bi);
                b.next();
            }
            (None, None) => return,
        }
    }
}

/// Lays absolute bucket values out in other spans: `out` gets one value
/// per bucket of `to`, the value of the same bucket in `from` or the
/// default (0). Buckets of `from` missing in `to` are dropped (callers
/// only widen layouts).
pub(crate) fn remap<T: Copy + Default>(
    from: &[Span],
    values: impl Iterator<Item = T>,
    to: &[Span],
    out: &mut Vec<T>,
) {
    out.clear();
    let mut src = bucket_indices(from).zip(values).peekable();
    for index in bucket_indices(to) {
        while src.next_if(|&(i, _)| i < index).is_some() {}
        out.push(match src.next_if(|&(i, _)| i == index) {
            Some((_, v)) => v,
            None => T::default(),
        });
    }
}

/// Absolute counts of delta-encoded integer buckets (wrapping as Go).
pub(crate) fn absolute(deltas: &[i64]) -> impl Iterator<Item = i64> + '_ {
    deltas.iter().scan(0i64, |acc, &d| {
        *acc = acc.wrapping_add(d);
        Some(*acc)
    })
}

/// Turns absolute integer counts into deltas, in place.
pub(crate) fn to_deltas(values: &mut [i64]) {
    let mut prev = 0i64;
    for v in values {
        let abs = *v;
        *v = abs.wrapping_sub(prev);
        prev = abs;
    }
}

/// The bucket of `index` of schema `from` in the coarser schema `to`.
fn coarser_index(index: i32, from: i32, to: i32) -> i32 {
    let shift = (from - to) as u32;
    let i = index.wrapping_sub(1);
    let shifted = if shift >= 32 { i >> 31 } else { i >> shift };
    shifted.wrapping_add(1)
}

/// Merges absolute bucket values of schema `from` into the coarser schema
/// `to` (Prometheus' `reduceResolution`), adding values with `add`.
pub(crate) fn reduce_resolution<T: Copy>(
    spans: &[Span],
    values: &[T],
    from: i32,
    to: i32,
    add: impl Fn(T, T) -> T,
    out_spans: &mut Vec<Span>,
    out_values: &mut Vec<T>,
) {
    out_spans.clear();
    out_values.clear();
    let mut values = values.iter().copied();
    let mut index = 0i32;
    let mut last = 0i32;
    for s in spans {
        index = index.wrapping_add(s.offset);
        for _ in 0..s.length {
            let Some(v) = values.next() else { return };
            let target = coarser_index(index, from, to);
            if out_spans.is_empty() {
                out_spans.push(Span {
                    offset: target,
                    length: 1,
                });
                out_values.push(v);
                last = target;
            } else if target == last {
                if let Some(acc) = out_values.last_mut() {
                    *acc = add(*acc, v);
                }
            } else if target == last.wrapping_add(1) {
                if let Some(span) = out_spans.last_mut() {
                    span.length += 1;
                }
                out_values.push(v);
                last = target;
            } else if last.wrapping_add(1) < target {
                out_spans.push(Span {
                    offset: target.wrapping_sub(last).wrapping_sub(1),
                    length: 1,
                });
                out_values.push(v);
                last = target;
            }
            // Otherwise the index wrapped around: dropped, as in Go.
            index = index.wrapping_add(1);
        }
    }
}

#[cfg(test)]
#[allow(clippy::expect_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn spans(s: &[(i32, u32)]) -> Vec<Span> {
        s.iter()
            .map(|&(offset, length)| Span { offset, length })
            .collect()
    }

    fn layout_bytes(l: &Layout) -> Vec<u8> {
        let mut buf = Vec::new();
        let mut free = 0;
        l.write(&mut BitWriter::new(&mut buf, &mut free));
        buf
    }

    #[test]
    fn zero_thresholds() {
        for (t, first) in [
            (0.0, Some(0u8)),
            (2f64.powi(-128), Some(116)),
            (1024.0, Some(254)),
            (2f64.powi(-243), Some(1)),
            (2048.0, None),
            (2f64.powi(-244), None),
            (0.001, None),
            (-0.5, None),
            (f64::INFINITY, None),
        ] {
            let l = Layout {
                zero_threshold: t,
                ..Layout::default()
            };
            let bytes = layout_bytes(&l);
            match first {
                Some(code) => assert_eq!(bytes[0], code, "{t}"),
                None => assert_eq!(bytes[0], 0xff, "{t}"),
            }
            let mut back = Layout::default();
            back.read(&mut BitReader::new(&bytes)).expect("decodes");
            assert_eq!(back.zero_threshold.to_bits(), t.to_bits());
        }
    }

    #[test]
    fn custom_bounds_round_trip() {
        let l = Layout {
            schema: -53,
            positive_spans: spans(&[(0, 3)]),
            custom_values: vec![0.001, 0.5, 33554.43, 33554.431, -1.0, 0.1234, 1e9, 0.0],
            ..Layout::default()
        };
        let bytes = layout_bytes(&l);
        let mut back = Layout::default();
        back.read(&mut BitReader::new(&bytes)).expect("decodes");
        assert_eq!(back, l);
    }

    #[test]
    fn unknown_schemas_are_refused() {
        for schema in [53, -10, -52, 100] {
            let l = Layout {
                schema,
                ..Layout::default()
            };
            let bytes = layout_bytes(&l);
            assert_eq!(
                Layout::default().read(&mut BitReader::new(&bytes)),
                Err(Fault::UnknownSchema(schema))
            );
        }
    }

    #[test]
    fn indices_and_unions() {
        let a = spans(&[(-2, 2), (1, 1), (0, 0), (2, 2)]);
        assert_eq!(bucket_indices(&a).collect::<Vec<_>>(), [-2, -1, 1, 4, 5]);
        let b = spans(&[(0, 3), (3, 1)]);
        assert_eq!(union_spans(&a, &b), spans(&[(-2, 5), (1, 3)]));
        assert_eq!(
            gauge_side_diff(&a, &b),
            SideDiff {
                new_buckets: true,
                missing_buckets: true
            }
        );
        let mut out = Vec::new();
        remap(
            &a,
            [1, 2, 3, 4, 5].into_iter(),
            &union_spans(&a, &b),
            &mut out,
        );
        assert_eq!(out, [1, 2, 0, 3, 0, 4, 5, 0]);
    }

    #[test]
    fn counter_diffs() {
        let a = spans(&[(0, 3)]);
        let b = spans(&[(0, 2), (1, 1)]);
        // Bucket 2 empty in the chunk: may be missing.
        assert_eq!(
            counter_side_diff(&a, [1i64, 1, 0].into_iter(), &b, [1i64, 1, 1].into_iter()),
            Some(SideDiff {
                new_buckets: true,
                missing_buckets: true
            })
        );
        // Populated: a reset.
        assert_eq!(
            counter_side_diff(&a, [1i64, 1, 1].into_iter(), &b, [1i64, 1, 1].into_iter()),
            None
        );
        // Decreased.
        assert_eq!(
            counter_side_diff(&a, [1i64, 2, 0].into_iter(), &a, [1i64, 1, 0].into_iter()),
            None
        );
    }

    #[test]
    fn resolution_reduction() {
        // Schema 1 buckets 1..=4 map to schema 0 buckets 1, 1, 2, 2.
        let mut s = Vec::new();
        let mut v = Vec::new();
        reduce_resolution(
            &spans(&[(1, 4)]),
            &[1, 2, 3, 4],
            1,
            0,
            |a, b| a + b,
            &mut s,
            &mut v,
        );
        assert_eq!((s, v), (spans(&[(1, 2)]), vec![3, 7]));
        assert_eq!(coarser_index(5, 52, 8), 1);
        assert_eq!(coarser_index(-5, 52, 8), 0);
    }
}
