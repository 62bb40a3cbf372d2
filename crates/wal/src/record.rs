//! Codecs for the WAL records Prometheus v3.16.0 writes (`tsdb/record`).
//!
//! Types 1-10 are those of every Prometheus 3. v3.16 added 11
//! `samples_v2`, 12 `histogram_samples_v2` and 13
//! `float_histogram_samples_v2` (written when its `st-storage` feature is on:
//! samples with a start timestamp each, refs and times as varint deltas,
//! see [`encode_samples_v2`]) and 14 `min_valid_time` (a checkpoint's first
//! record: the min time of the truncation that wrote it, a big-endian i64).
//! Every type is decoded; a start timestamp of 0 means "none", and v1
//! records decode with start timestamp 0.
//!
//! A WAL segment only moves opaque byte records; this module gives them
//! meaning. Every record starts with one [`RecordType`] byte. Fixed-width
//! integers and floats are big-endian, varints are Go's `binary.Uvarint` and
//! zig-zag `binary.Varint`, strings are uvarint-length-prefixed bytes and a
//! label set is a uvarint pair count followed by name/value strings.
//! Sample-like records (samples, exemplars, histograms) store the first
//! entry's series ref and timestamp in full (8 bytes each) and every entry,
//! the first included, as varint deltas from them.
//!
//! Why the decoders are shaped the way they are:
//!
//! * **Strict.** Like Prometheus, a record that ends inside an entry or whose
//!   varints overflow is an error, never a partial result: a record that
//!   passed its CRC but does not parse was written by something else, and
//!   guessing would silently change data. Prometheus' "bytes left in entry"
//!   check can never fire because its loops consume until the record ends or
//!   an entry fails, so leftover bytes surface here as [`RecordError::Truncated`].
//!   Lengths and counts are checked against the bytes left before anything is
//!   reserved, so corrupt input cannot trigger huge allocations.
//! * **Slightly stricter than Go on garbage.** Go silently truncates
//!   out-of-range histogram schemas, span offsets and span lengths to 32 bits;
//!   those values cannot come from a Prometheus encoder, so they are rejected.
//! * **Allocation-free in steady state.** Replay decodes millions of records.
//!   Decoders fill caller-provided `Vec`s and reuse the entries (and the
//!   strings and vectors inside them) left there by the previous call, so a
//!   reused output vector stops allocating once it has seen the largest
//!   record. Series labels are handed out borrowed from the record.
//! * **Faithful.** Decoding keeps everything, e.g. histograms with schemas
//!   this version does not know ([`is_known_schema`] tells); Prometheus' own
//!   decoder drops those, and callers that need that behaviour filter.
//!   Re-encoding what was decoded from a Prometheus record gives back its
//!   exact bytes (tests/records.rs checks this against real records).

use std::str;

/// Start timestamp markers of v2 records: none, the previous sample's, or
/// an explicit delta from the first sample's.
const ST_NONE: u8 = 0;
const ST_SAME: u8 = 1;
const ST_EXPLICIT: u8 = 2;
/// Marker Prometheus reports for an empty record (and unknown types).
const UNKNOWN_TYPE_BYTE: u8 = 255;
/// A Go varint is at most 10 bytes for 64 bits.
const MAX_VARINT_LEN: usize = 10;
/// Metadata field names Prometheus writes (and the only ones it reads).
const UNIT_FIELD: &str = "UNIT";
const HELP_FIELD: &str = "HELP";

/// The kind of a WAL record, from its first byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordType {
    Series,
    Samples,
    Tombstones,
    Exemplars,
    MmapMarkers,
    Metadata,
    HistogramSamples,
    FloatHistogramSamples,
    CustomBucketsHistogramSamples,
    CustomBucketsFloatHistogramSamples,
    /// Float samples with an optional start timestamp per sample (v3.16).
    SamplesV2,
    /// Histogram samples with start timestamps (v3.16).
    HistogramSamplesV2,
    /// Float histogram samples with start timestamps (v3.16).
    FloatHistogramSamplesV2,
    /// The min time of the WAL truncation that wrote a checkpoint (v3.16):
    /// the first record of a checkpoint, never in a live segment; replay
    /// drops samples and head chunks older than it ([`decode_min_valid_time`]).
    MinValidTime,
    /// A type this version does not know (from a newer writer); Prometheus
    /// skips these on replay. An empty record is `Unknown(255)`.
    Unknown(u8),
}

impl RecordType {
    /// The type of a record.
    pub fn of(rec: &[u8]) -> RecordType {
        rec.first()
            .map_or(RecordType::Unknown(UNKNOWN_TYPE_BYTE), |&b| {
                RecordType::from_u8(b)
            })
    }

    pub fn from_u8(b: u8) -> RecordType {
        match b {
            1 => RecordType::Series,
            2 => RecordType::Samples,
            3 => RecordType::Tombstones,
            4 => RecordType::Exemplars,
            5 => RecordType::MmapMarkers,
            6 => RecordType::Metadata,
            7 => RecordType::HistogramSamples,
            8 => RecordType::FloatHistogramSamples,
            9 => RecordType::CustomBucketsHistogramSamples,
            10 => RecordType::CustomBucketsFloatHistogramSamples,
            11 => RecordType::SamplesV2,
            12 => RecordType::HistogramSamplesV2,
            13 => RecordType::FloatHistogramSamplesV2,
            14 => RecordType::MinValidTime,
            other => RecordType::Unknown(other),
        }
    }

    pub fn as_u8(self) -> u8 {
        match self {
            RecordType::Series => 1,
            RecordType::Samples => 2,
            RecordType::Tombstones => 3,
            RecordType::Exemplars => 4,
            RecordType::MmapMarkers => 5,
            RecordType::Metadata => 6,
            RecordType::HistogramSamples => 7,
            RecordType::FloatHistogramSamples => 8,
            RecordType::CustomBucketsHistogramSamples => 9,
            RecordType::CustomBucketsFloatHistogramSamples => 10,
            RecordType::SamplesV2 => 11,
            RecordType::HistogramSamplesV2 => 12,
            RecordType::FloatHistogramSamplesV2 => 13,
            RecordType::MinValidTime => 14,
            RecordType::Unknown(b) => b,
        }
    }

    /// Prometheus' name of the type (as in its logs and metrics).
    pub fn name(self) -> &'static str {
        match self {
            RecordType::Series => "series",
            RecordType::Samples => "samples",
            RecordType::Tombstones => "tombstones",
            RecordType::Exemplars => "exemplars",
            RecordType::MmapMarkers => "mmapmarkers",
            RecordType::Metadata => "metadata",
            RecordType::HistogramSamples => "histogram_samples",
            RecordType::FloatHistogramSamples => "float_histogram_samples",
            RecordType::CustomBucketsHistogramSamples => "custom_buckets_histogram_samples",
            RecordType::CustomBucketsFloatHistogramSamples => {
                "custom_buckets_float_histogram_samples"
            }
            RecordType::SamplesV2 => "samples_v2",
            RecordType::HistogramSamplesV2 => "histogram_samples_v2",
            RecordType::FloatHistogramSamplesV2 => "float_histogram_samples_v2",
            RecordType::MinValidTime => "min_valid_time",
            RecordType::Unknown(_) => "unknown",
        }
    }
}

/// A record that cannot be decoded. Offsets are byte positions in the record.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    /// The record is empty or of another type than the decoder handles.
    #[error("expected a {expected} record, found type byte {found:?} (None: empty record)")]
    UnexpectedType {
        expected: &'static str,
        found: Option<u8>,
    },
    /// The record ends inside a value that starts at `offset`.
    #[error("record truncated: value at byte {offset} runs past its end")]
    Truncated { offset: usize },
    /// A varint longer than 64 bits.
    #[error("varint at byte {offset} overflows 64 bits")]
    VarintOverflow { offset: usize },
    /// A count or length that cannot fit in the bytes left in the record.
    #[error("count {count} at byte {offset} exceeds what the rest of the record can hold")]
    CountTooLarge { offset: usize, count: u64 },
    /// A label or metadata string that is not UTF-8.
    #[error("string at byte {offset} is not valid UTF-8")]
    InvalidUtf8 { offset: usize },
    /// A histogram schema, span offset or span length beyond 32 bits, or a
    /// counter reset hint beyond 3.
    #[error("{what} {value} at byte {offset} does not fit in 32 bits")]
    ValueOutOfRange {
        what: &'static str,
        offset: usize,
        value: i128,
    },
}

/// A float sample of a series; `st` is its start timestamp (0: none,
/// always 0 from a v1 record).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RefSample {
    pub series_ref: u64,
    pub st: i64,
    pub t: i64,
    pub v: f64,
}

/// Deleted time ranges of a series, inclusive on both ends.
///
/// On disk every interval is its own `(ref, mint, maxt)` entry; the decoder
/// merges consecutive entries of one series into one stone and the encoder
/// writes one entry per interval, in order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Stone {
    pub series_ref: u64,
    pub intervals: Vec<(i64, i64)>,
}

/// An exemplar of a series with its own label set.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RefExemplar {
    pub series_ref: u64,
    pub t: i64,
    pub v: f64,
    pub labels: Vec<(String, String)>,
}

/// "All samples of the series up to now are in head chunk `mmap_ref`"
/// (written to the out-of-order WBL only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RefMmapMarker {
    pub series_ref: u64,
    pub mmap_ref: u64,
}

/// Metric metadata of a series. `metric_type` is Prometheus' `MetricType`
/// byte (see the `METRIC_TYPE_*` constants).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RefMetadata {
    pub series_ref: u64,
    pub metric_type: u8,
    pub unit: String,
    pub help: String,
}

pub const METRIC_TYPE_UNKNOWN: u8 = 0;
pub const METRIC_TYPE_COUNTER: u8 = 1;
pub const METRIC_TYPE_GAUGE: u8 = 2;
pub const METRIC_TYPE_HISTOGRAM: u8 = 3;
pub const METRIC_TYPE_GAUGE_HISTOGRAM: u8 = 4;
pub const METRIC_TYPE_SUMMARY: u8 = 5;
pub const METRIC_TYPE_INFO: u8 = 6;
pub const METRIC_TYPE_STATESET: u8 = 7;

pub use ferrite_model::histogram::{is_known_schema, CUSTOM_BUCKETS_SCHEMA};
use ferrite_model::{CounterResetHint, FloatHistogram, Histogram, Span};

/// An integer histogram sample of a series; `st` is its start timestamp
/// (0: none, always 0 from a v1 record).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RefHistogramSample {
    pub series_ref: u64,
    pub st: i64,
    pub t: i64,
    pub h: Histogram,
}

/// A float histogram sample of a series; `st` as in [`RefHistogramSample`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RefFloatHistogramSample {
    pub series_ref: u64,
    pub st: i64,
    pub t: i64,
    pub h: FloatHistogram,
}

// ---------------------------------------------------------------------------
// Decoding primitives

/// A bounds-checked read position in a record.
struct Cursor<'a> {
    rec: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    /// Checks the type byte against `accepted` and positions after it.
    fn open(
        rec: &'a [u8],
        accepted: &[RecordType],
        expected: &'static str,
    ) -> Result<Self, RecordError> {
        match rec.first() {
            Some(&b) if accepted.contains(&RecordType::from_u8(b)) => Ok(Cursor { rec, pos: 1 }),
            found => Err(RecordError::UnexpectedType {
                expected,
                found: found.copied(),
            }),
        }
    }

    fn remaining(&self) -> usize {
        self.rec.len().saturating_sub(self.pos)
    }

    fn at_end(&self) -> bool {
        self.remaining() == 0
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], RecordError> {
        let offset = self.pos;
        let bytes = offset
            .checked_add(n)
            .and_then(|end| self.rec.get(offset..end))
            .ok_or(RecordError::Truncated { offset })?;
        self.pos += n;
        Ok(bytes)
    }

    fn byte(&mut self) -> Result<u8, RecordError> {
        let offset = self.pos;
        let &b = self
            .rec
            .get(offset)
            .ok_or(RecordError::Truncated { offset })?;
        self.pos += 1;
        Ok(b)
    }

    fn be_u64(&mut self) -> Result<u64, RecordError> {
        let offset = self.pos;
        let bytes: [u8; 8] = self
            .take(8)?
            .try_into()
            .map_err(|_| RecordError::Truncated { offset })?;
        Ok(u64::from_be_bytes(bytes))
    }

    fn be_i64(&mut self) -> Result<i64, RecordError> {
        Ok(self.be_u64()? as i64)
    }

    fn be_f64(&mut self) -> Result<f64, RecordError> {
        Ok(f64::from_bits(self.be_u64()?))
    }

    /// Go's `binary.Uvarint`: at most 10 bytes, the 10th at most 1.
    #[inline]
    fn uvarint(&mut self) -> Result<u64, RecordError> {
        let offset = self.pos;
        // One-byte values dominate sample records.
        if let Some(&b) = self.rec.get(offset) {
            if b < 0x80 {
                self.pos = offset + 1;
                return Ok(u64::from(b));
            }
        }
        let mut value = 0u64;
        for i in 0..MAX_VARINT_LEN {
            let &b = self
                .rec
                .get(offset + i)
                .ok_or(RecordError::Truncated { offset })?;
            if i == MAX_VARINT_LEN - 1 && b > 1 {
                return Err(RecordError::VarintOverflow { offset });
            }
            value |= u64::from(b & 0x7f) << (7 * i);
            if b < 0x80 {
                self.pos = offset + i + 1;
                return Ok(value);
            }
        }
        Err(RecordError::VarintOverflow { offset })
    }

    /// Go's zig-zag `binary.Varint`.
    fn varint(&mut self) -> Result<i64, RecordError> {
        let u = self.uvarint()?;
        Ok((u >> 1) as i64 ^ -((u & 1) as i64))
    }

    fn varint_i32(&mut self, what: &'static str) -> Result<i32, RecordError> {
        let offset = self.pos;
        let v = self.varint()?;
        i32::try_from(v).map_err(|_| RecordError::ValueOutOfRange {
            what,
            offset,
            value: v.into(),
        })
    }

    /// A histogram's counter reset hint byte: 0-3, as Prometheus writes it.
    fn counter_reset_hint(&mut self) -> Result<CounterResetHint, RecordError> {
        let offset = self.pos;
        match self.byte()? {
            b @ 0..=3 => Ok(CounterResetHint::from_bits(b)),
            b => Err(RecordError::ValueOutOfRange {
                what: "counter reset hint",
                offset,
                value: b.into(),
            }),
        }
    }

    /// A v2 record's start timestamp after its marker byte: 0 "none", 1
    /// "the previous sample's", anything else "a varint delta from the
    /// first sample's follows" (Prometheus reads every other byte so).
    fn st_marker(&mut self, prev_st: i64, first_st: i64) -> Result<i64, RecordError> {
        match self.byte()? {
            ST_NONE => Ok(0),
            ST_SAME => Ok(prev_st),
            _ => Ok(first_st.wrapping_add(self.varint()?)),
        }
    }

    fn uvarint_u32(&mut self, what: &'static str) -> Result<u32, RecordError> {
        let offset = self.pos;
        let v = self.uvarint()?;
        u32::try_from(v).map_err(|_| RecordError::ValueOutOfRange {
            what,
            offset,
            value: v.into(),
        })
    }

    /// A uvarint count of entries that each take at least `min_entry_len`
    /// bytes; rejected up front if the rest of the record cannot hold them.
    fn count(&mut self, min_entry_len: usize) -> Result<usize, RecordError> {
        let offset = self.pos;
        let count = self.uvarint()?;
        let fits = self.remaining() / min_entry_len.max(1);
        usize::try_from(count)
            .ok()
            .filter(|&n| n <= fits)
            .ok_or(RecordError::CountTooLarge { offset, count })
    }

    fn str(&mut self) -> Result<&'a str, RecordError> {
        let offset = self.pos;
        let len = self.count(1)?;
        let bytes = self.take(len)?;
        str::from_utf8(bytes).map_err(|_| RecordError::InvalidUtf8 { offset })
    }

    /// Reads a label set into `out` (cleared first).
    fn labels(&mut self, out: &mut Vec<(&'a str, &'a str)>) -> Result<(), RecordError> {
        out.clear();
        // A pair takes at least two length bytes.
        let n = self.count(2)?;
        for _ in 0..n {
            let name = self.str()?;
            let value = self.str()?;
            out.push((name, value));
        }
        Ok(())
    }

    /// Reads a label set into owned strings, reusing those already in `out`.
    fn owned_labels(&mut self, out: &mut Vec<(String, String)>) -> Result<(), RecordError> {
        let n = self.count(2)?;
        out.truncate(n);
        for i in 0..n {
            let name = self.str()?;
            let value = self.str()?;
            match out.get_mut(i) {
                Some((n, v)) => {
                    n.clear();
                    n.push_str(name);
                    v.clear();
                    v.push_str(value);
                }
                None => out.push((name.to_owned(), value.to_owned())),
            }
        }
        Ok(())
    }

    /// The base ref and timestamp of a sample-like record, `None` if the
    /// record holds no entries (just its type byte).
    fn sample_base(&mut self) -> Result<Option<(u64, i64)>, RecordError> {
        if self.at_end() {
            return Ok(None);
        }
        Ok(Some((self.be_u64()?, self.be_i64()?)))
    }

    /// An entry's ref and timestamp, stored as deltas from the base.
    fn sample_ref_t(&mut self, (base_ref, base_t): (u64, i64)) -> Result<(u64, i64), RecordError> {
        let dref = self.varint()?;
        let dt = self.varint()?;
        Ok((base_ref.wrapping_add(dref as u64), base_t.wrapping_add(dt)))
    }
}

/// Slot `i` of `out` for the decoder to overwrite: the entry a previous
/// decode left there (its buffers are reused) or a new default one.
fn reuse_slot<T: Default>(out: &mut Vec<T>, i: usize) -> &mut T {
    if out.len() <= i {
        out.resize_with(i + 1, T::default);
    }
    &mut out[i]
}

/// Runs `decode` with slot reuse: `decode` returns how many entries of
/// `out` it filled; the rest is dropped. On error `out` is left empty.
fn decode_into<T>(
    out: &mut Vec<T>,
    decode: impl FnOnce(&mut Vec<T>) -> Result<usize, RecordError>,
) -> Result<(), RecordError> {
    match decode(out) {
        Ok(n) => {
            out.truncate(n);
            Ok(())
        }
        Err(e) => {
            out.clear();
            Err(e)
        }
    }
}

// ---------------------------------------------------------------------------
// Encoding primitives

fn put_uvarint(buf: &mut Vec<u8>, mut x: u64) {
    while x >= 0x80 {
        buf.push((x as u8) | 0x80);
        x >>= 7;
    }
    buf.push(x as u8);
}

fn put_varint(buf: &mut Vec<u8>, x: i64) {
    put_uvarint(buf, ((x << 1) ^ (x >> 63)) as u64);
}

fn put_be_u64(buf: &mut Vec<u8>, x: u64) {
    buf.extend_from_slice(&x.to_be_bytes());
}

fn put_be_f64(buf: &mut Vec<u8>, x: f64) {
    put_be_u64(buf, x.to_bits());
}

fn put_str(buf: &mut Vec<u8>, s: &str) {
    put_uvarint(buf, s.len() as u64);
    buf.extend_from_slice(s.as_bytes());
}

fn put_labels<'s>(buf: &mut Vec<u8>, labels: impl ExactSizeIterator<Item = (&'s str, &'s str)>) {
    put_uvarint(buf, labels.len() as u64);
    for (name, value) in labels {
        put_str(buf, name);
        put_str(buf, value);
    }
}

/// Clears `buf` and writes the type byte.
fn start_record(buf: &mut Vec<u8>, typ: RecordType) {
    buf.clear();
    buf.push(typ.as_u8());
}

/// Writes the base of a sample-like record: the first entry's ref and time.
fn put_sample_base(buf: &mut Vec<u8>, series_ref: u64, t: i64) {
    put_be_u64(buf, series_ref);
    put_be_u64(buf, t as u64);
}

/// Writes an entry's ref and time as deltas from the base.
fn put_sample_ref_t(buf: &mut Vec<u8>, (base_ref, base_t): (u64, i64), series_ref: u64, t: i64) {
    put_varint(buf, series_ref.wrapping_sub(base_ref) as i64);
    put_varint(buf, t.wrapping_sub(base_t));
}

// ---------------------------------------------------------------------------
// Series

/// Decodes a series record, calling `f` with each series ref and its label
/// pairs (borrowed from `rec`, in record order).
///
/// The whole record is validated before the first call, so `f` sees either
/// every series or none.
pub fn decode_series<'a>(
    rec: &'a [u8],
    mut f: impl FnMut(u64, &[(&'a str, &'a str)]),
) -> Result<(), RecordError> {
    let mut labels = Vec::new();
    // Two passes keep callers free of half-applied records.
    for apply in [false, true] {
        let mut c = Cursor::open(rec, &[RecordType::Series], "series")?;
        while !c.at_end() {
            let series_ref = c.be_u64()?;
            c.labels(&mut labels)?;
            if apply {
                f(series_ref, &labels);
            }
        }
    }
    Ok(())
}

/// Builds a series record in a caller's buffer.
pub struct SeriesRecordBuilder<'b> {
    buf: &'b mut Vec<u8>,
    series: usize,
}

impl<'b> SeriesRecordBuilder<'b> {
    /// Clears `buf` and writes the type byte.
    pub fn new(buf: &'b mut Vec<u8>) -> Self {
        start_record(buf, RecordType::Series);
        SeriesRecordBuilder { buf, series: 0 }
    }

    /// Appends a series; labels are written in the order given (Prometheus
    /// writes them sorted by name).
    pub fn add(&mut self, series_ref: u64, labels: &[(&str, &str)]) {
        put_be_u64(self.buf, series_ref);
        put_labels(self.buf, labels.iter().copied());
        self.series += 1;
    }

    /// Number of series added so far.
    pub fn series_count(&self) -> usize {
        self.series
    }
}

// ---------------------------------------------------------------------------
// Samples

/// Decodes a float samples record (v1 or v2) into `out` (cleared first).
pub fn decode_samples(rec: &[u8], out: &mut Vec<RefSample>) -> Result<(), RecordError> {
    decode_into(out, |out| {
        out.clear();
        if RecordType::of(rec) == RecordType::SamplesV2 {
            for_each_sample_v2(rec, |series_ref, st, t, v| {
                out.push(RefSample {
                    series_ref,
                    st,
                    t,
                    v,
                })
            })?;
            return Ok(out.len());
        }
        let mut c = Cursor::open(rec, &[RecordType::Samples], "samples")?;
        let Some(base) = c.sample_base()? else {
            return Ok(0);
        };
        // An entry takes at least 1 + 1 + 8 bytes.
        out.reserve(c.remaining() / 10);
        while !c.at_end() {
            let (series_ref, t) = c.sample_ref_t(base)?;
            let v = c.be_f64()?;
            out.push(RefSample {
                series_ref,
                st: 0,
                t,
                v,
            });
        }
        Ok(out.len())
    })
}

/// The state a v2 record's entries are deltas from: the first entry's
/// time and start time, the previous entry's ref and start time.
struct V2Deltas {
    first_t: i64,
    first_st: i64,
    prev_ref: u64,
    prev_st: i64,
}

impl V2Deltas {
    /// Reads the first entry's ref, time and start time (all varints).
    fn first(c: &mut Cursor<'_>) -> Result<(V2Deltas, (u64, i64, i64)), RecordError> {
        let series_ref = c.varint()? as u64;
        let t = c.varint()?;
        let st = c.varint()?;
        let d = V2Deltas {
            first_t: t,
            first_st: st,
            prev_ref: series_ref,
            prev_st: st,
        };
        Ok((d, (series_ref, t, st)))
    }

    /// Reads a later entry's ref (delta from the previous), time (delta
    /// from the first) and start time (marker).
    fn next(&mut self, c: &mut Cursor<'_>) -> Result<(u64, i64, i64), RecordError> {
        let series_ref = self.prev_ref.wrapping_add(c.varint()? as u64);
        let t = self.first_t.wrapping_add(c.varint()?);
        let st = c.st_marker(self.prev_st, self.first_st)?;
        self.prev_ref = series_ref;
        self.prev_st = st;
        Ok((series_ref, t, st))
    }

    /// Reads the next entry's ref, time and start time, the first or a
    /// later one.
    fn read(
        this: &mut Option<V2Deltas>,
        c: &mut Cursor<'_>,
    ) -> Result<(u64, i64, i64), RecordError> {
        match this {
            Some(d) => d.next(c),
            None => {
                let (d, entry) = V2Deltas::first(c)?;
                *this = Some(d);
                Ok(entry)
            }
        }
    }
}

/// The writer's side of [`V2Deltas`].
struct V2Writer {
    first_t: i64,
    first_st: i64,
    prev: Option<(u64, i64)>,
}

impl V2Writer {
    fn new() -> Self {
        V2Writer {
            first_t: 0,
            first_st: 0,
            prev: None,
        }
    }

    /// Writes an entry's ref, time and start time as the first or a later one.
    fn put(&mut self, buf: &mut Vec<u8>, series_ref: u64, t: i64, st: i64) {
        match self.prev {
            None => {
                put_varint(buf, series_ref as i64);
                put_varint(buf, t);
                put_varint(buf, st);
                self.first_t = t;
                self.first_st = st;
            }
            Some((prev_ref, prev_st)) => {
                put_varint(buf, series_ref.wrapping_sub(prev_ref) as i64);
                put_varint(buf, t.wrapping_sub(self.first_t));
                if st == 0 {
                    buf.push(ST_NONE);
                } else if st == prev_st {
                    buf.push(ST_SAME);
                } else {
                    buf.push(ST_EXPLICIT);
                    put_varint(buf, st.wrapping_sub(self.first_st));
                }
            }
        }
        self.prev = Some((series_ref, st));
    }
}

/// Decodes a v2 float samples record, handing each sample's ref, start
/// time, time and value to `f`; returns the count.
fn for_each_sample_v2(
    rec: &[u8],
    mut f: impl FnMut(u64, i64, i64, f64),
) -> Result<usize, RecordError> {
    let mut c = Cursor::open(rec, &[RecordType::SamplesV2], "samples")?;
    let mut deltas = None;
    let mut n = 0;
    while !c.at_end() {
        let (series_ref, t, st) = V2Deltas::read(&mut deltas, &mut c)?;
        f(series_ref, st, t, c.be_f64()?);
        n += 1;
    }
    Ok(n)
}

/// Decodes a float samples record (v1 or v2), handing each sample to `f` in
/// record order without collecting them; returns the count. Start
/// timestamps are not handed out (use [`decode_samples`] for them). On an
/// error `f` has seen the samples before the bad one, which the caller must
/// discard.
pub fn for_each_sample(rec: &[u8], mut f: impl FnMut(u64, i64, f64)) -> Result<usize, RecordError> {
    if RecordType::of(rec) == RecordType::SamplesV2 {
        return for_each_sample_v2(rec, |series_ref, _, t, v| f(series_ref, t, v));
    }
    let mut c = Cursor::open(rec, &[RecordType::Samples], "samples")?;
    let Some(base) = c.sample_base()? else {
        return Ok(0);
    };
    let (base_ref, base_t) = base;
    let rec = c.rec;
    let mut n = 0;
    // Fast path while a whole entry (two varints of at most 10 bytes and a
    // value) surely fits; anything odd falls back to the checked cursor,
    // which reports it.
    while rec.len().saturating_sub(c.pos) >= 28 {
        let Some((dref, a)) = uvarint_at(rec, c.pos) else {
            break;
        };
        let Some((dt, b)) = uvarint_at(rec, c.pos + a) else {
            break;
        };
        let at = c.pos + a + b;
        let Some(v) = rec.get(at..at + 8).and_then(|v| v.try_into().ok()) else {
            break;
        };
        c.pos = at + 8;
        f(
            base_ref.wrapping_add(zigzag(dref) as u64),
            base_t.wrapping_add(zigzag(dt)),
            f64::from_bits(u64::from_be_bytes(v)),
        );
        n += 1;
    }
    while !c.at_end() {
        let (series_ref, t) = c.sample_ref_t(base)?;
        f(series_ref, t, c.be_f64()?);
        n += 1;
    }
    Ok(n)
}

/// A uvarint at `pos` and its length; `None` if truncated or overlong.
#[inline(always)]
fn uvarint_at(b: &[u8], pos: usize) -> Option<(u64, usize)> {
    let mut v = 0u64;
    for i in 0..MAX_VARINT_LEN {
        let byte = *b.get(pos + i)?;
        if i == MAX_VARINT_LEN - 1 && byte > 1 {
            return None;
        }
        v |= u64::from(byte & 0x7f) << (7 * i);
        if byte < 0x80 {
            return Some((v, i + 1));
        }
    }
    None
}

#[inline(always)]
fn zigzag(u: u64) -> i64 {
    (u >> 1) as i64 ^ -((u & 1) as i64)
}

/// Encodes a v2 float samples record (start timestamps kept) into `buf`
/// (cleared first), as Prometheus does with its `st-storage` feature on.
pub fn encode_samples_v2(buf: &mut Vec<u8>, samples: &[RefSample]) {
    start_record(buf, RecordType::SamplesV2);
    let mut w = V2Writer::new();
    for s in samples {
        w.put(buf, s.series_ref, s.t, s.st);
        put_be_f64(buf, s.v);
    }
}

/// Encodes a float samples record into `buf` (cleared first); start
/// timestamps are not stored. No samples give a record of just the type
/// byte, as in Prometheus.
pub fn encode_samples(buf: &mut Vec<u8>, samples: &[RefSample]) {
    start_record(buf, RecordType::Samples);
    let Some(first) = samples.first() else {
        return;
    };
    put_sample_base(buf, first.series_ref, first.t);
    let base = (first.series_ref, first.t);
    for s in samples {
        put_sample_ref_t(buf, base, s.series_ref, s.t);
        put_be_f64(buf, s.v);
    }
}

// ---------------------------------------------------------------------------
// Min valid time (v3.16)

/// Decodes a min valid time record: type byte 14, then the time as a
/// big-endian i64, nothing else (`record.Decoder.MinValidTime`).
pub fn decode_min_valid_time(rec: &[u8]) -> Result<i64, RecordError> {
    let mut c = Cursor::open(rec, &[RecordType::MinValidTime], "min_valid_time")?;
    let t = c.be_u64()? as i64;
    if !c.at_end() {
        return Err(RecordError::Truncated { offset: 9 });
    }
    Ok(t)
}

/// Encodes a min valid time record into `buf` (cleared first).
pub fn encode_min_valid_time(buf: &mut Vec<u8>, t: i64) {
    start_record(buf, RecordType::MinValidTime);
    buf.extend_from_slice(&t.to_be_bytes());
}

// ---------------------------------------------------------------------------
// Tombstones

/// Decodes a tombstones record into `out` (cleared first), merging
/// consecutive entries of one series into one [`Stone`].
pub fn decode_tombstones(rec: &[u8], out: &mut Vec<Stone>) -> Result<(), RecordError> {
    decode_into(out, |out| {
        let mut c = Cursor::open(rec, &[RecordType::Tombstones], "tombstones")?;
        let mut n = 0;
        while !c.at_end() {
            let series_ref = c.be_u64()?;
            let interval = (c.varint()?, c.varint()?);
            if n > 0 {
                if let Some(prev) = out.get_mut(n - 1).filter(|s| s.series_ref == series_ref) {
                    prev.intervals.push(interval);
                    continue;
                }
            }
            let stone = reuse_slot(out, n);
            stone.series_ref = series_ref;
            stone.intervals.clear();
            stone.intervals.push(interval);
            n += 1;
        }
        Ok(n)
    })
}

/// Encodes a tombstones record into `buf` (cleared first): one entry per
/// interval.
pub fn encode_tombstones(buf: &mut Vec<u8>, stones: &[Stone]) {
    start_record(buf, RecordType::Tombstones);
    for stone in stones {
        for &(mint, maxt) in &stone.intervals {
            put_be_u64(buf, stone.series_ref);
            put_varint(buf, mint);
            put_varint(buf, maxt);
        }
    }
}

// ---------------------------------------------------------------------------
// Exemplars

/// Decodes an exemplars record into `out` (cleared first).
pub fn decode_exemplars(rec: &[u8], out: &mut Vec<RefExemplar>) -> Result<(), RecordError> {
    decode_into(out, |out| {
        let mut c = Cursor::open(rec, &[RecordType::Exemplars], "exemplars")?;
        let Some(base) = c.sample_base()? else {
            return Ok(0);
        };
        let mut n = 0;
        while !c.at_end() {
            let (series_ref, t) = c.sample_ref_t(base)?;
            let e = reuse_slot(out, n);
            e.series_ref = series_ref;
            e.t = t;
            e.v = c.be_f64()?;
            c.owned_labels(&mut e.labels)?;
            n += 1;
        }
        Ok(n)
    })
}

/// Encodes an exemplars record into `buf` (cleared first).
pub fn encode_exemplars(buf: &mut Vec<u8>, exemplars: &[RefExemplar]) {
    start_record(buf, RecordType::Exemplars);
    let Some(first) = exemplars.first() else {
        return;
    };
    put_sample_base(buf, first.series_ref, first.t);
    let base = (first.series_ref, first.t);
    for e in exemplars {
        put_sample_ref_t(buf, base, e.series_ref, e.t);
        put_be_f64(buf, e.v);
        put_labels(buf, e.labels.iter().map(|(n, v)| (n.as_str(), v.as_str())));
    }
}

// ---------------------------------------------------------------------------
// Mmap markers

/// Decodes an mmap markers record into `out` (cleared first).
pub fn decode_mmap_markers(rec: &[u8], out: &mut Vec<RefMmapMarker>) -> Result<(), RecordError> {
    decode_into(out, |out| {
        let mut c = Cursor::open(rec, &[RecordType::MmapMarkers], "mmap markers")?;
        out.clear();
        while !c.at_end() {
            out.push(RefMmapMarker {
                series_ref: c.be_u64()?,
                mmap_ref: c.be_u64()?,
            });
        }
        Ok(out.len())
    })
}

/// Encodes an mmap markers record into `buf` (cleared first).
pub fn encode_mmap_markers(buf: &mut Vec<u8>, markers: &[RefMmapMarker]) {
    start_record(buf, RecordType::MmapMarkers);
    for m in markers {
        put_be_u64(buf, m.series_ref);
        put_be_u64(buf, m.mmap_ref);
    }
}

// ---------------------------------------------------------------------------
// Metadata

/// Decodes a metadata record into `out` (cleared first).
///
/// Each entry is `uvarint ref, type byte, uvarint field count, fields` where
/// a field is a name and a value string. Only `UNIT` and `HELP` are known;
/// other fields are skipped, as Prometheus does, so records of newer
/// writers stay readable. A missing field reads as empty.
pub fn decode_metadata(rec: &[u8], out: &mut Vec<RefMetadata>) -> Result<(), RecordError> {
    decode_into(out, |out| {
        let mut c = Cursor::open(rec, &[RecordType::Metadata], "metadata")?;
        let mut n = 0;
        while !c.at_end() {
            let series_ref = c.uvarint()?;
            let metric_type = c.byte()?;
            let fields = c.count(2)?;
            let (mut unit, mut help) = ("", "");
            for _ in 0..fields {
                let name = c.str()?;
                let value = c.str()?;
                match name {
                    UNIT_FIELD => unit = value,
                    HELP_FIELD => help = value,
                    _ => {}
                }
            }
            let m = reuse_slot(out, n);
            m.series_ref = series_ref;
            m.metric_type = metric_type;
            m.unit.clear();
            m.unit.push_str(unit);
            m.help.clear();
            m.help.push_str(help);
            n += 1;
        }
        Ok(n)
    })
}

/// Encodes a metadata record into `buf` (cleared first) with the two fields
/// Prometheus writes, `UNIT` then `HELP`.
pub fn encode_metadata(buf: &mut Vec<u8>, metadata: &[RefMetadata]) {
    start_record(buf, RecordType::Metadata);
    for m in metadata {
        put_uvarint(buf, m.series_ref);
        buf.push(m.metric_type);
        put_uvarint(buf, 2);
        put_str(buf, UNIT_FIELD);
        put_str(buf, &m.unit);
        put_str(buf, HELP_FIELD);
        put_str(buf, &m.help);
    }
}

// ---------------------------------------------------------------------------
// Histograms

// Both kinds share the layout: hint byte, varint schema, f64 zero
// threshold, counts and sum (uvarints or f64s), positive then negative
// spans, positive then negative buckets (varint deltas or f64s), and the
// custom bounds for the custom buckets schema only.

fn decode_spans(c: &mut Cursor<'_>, out: &mut Vec<Span>) -> Result<(), RecordError> {
    out.clear();
    // A span takes at least two varint bytes.
    let n = c.count(2)?;
    for _ in 0..n {
        let offset = c.varint_i32("span offset")?;
        let length = c.uvarint_u32("span length")?;
        out.push(Span { offset, length });
    }
    Ok(())
}

fn put_spans(buf: &mut Vec<u8>, spans: &[Span]) {
    put_uvarint(buf, spans.len() as u64);
    for s in spans {
        put_varint(buf, i64::from(s.offset));
        put_uvarint(buf, u64::from(s.length));
    }
}

fn decode_f64s(c: &mut Cursor<'_>, out: &mut Vec<f64>) -> Result<(), RecordError> {
    out.clear();
    let n = c.count(8)?;
    for _ in 0..n {
        out.push(c.be_f64()?);
    }
    Ok(())
}

fn put_f64s(buf: &mut Vec<u8>, values: &[f64]) {
    put_uvarint(buf, values.len() as u64);
    for &v in values {
        put_be_f64(buf, v);
    }
}

fn decode_varints(c: &mut Cursor<'_>, out: &mut Vec<i64>) -> Result<(), RecordError> {
    out.clear();
    let n = c.count(1)?;
    for _ in 0..n {
        out.push(c.varint()?);
    }
    Ok(())
}

fn put_varints(buf: &mut Vec<u8>, values: &[i64]) {
    put_uvarint(buf, values.len() as u64);
    for &v in values {
        put_varint(buf, v);
    }
}

/// Custom bounds are stored only for the custom buckets schema; other
/// histograms neither read nor write them (as in Prometheus).
fn decode_custom_values(
    c: &mut Cursor<'_>,
    schema: i32,
    out: &mut Vec<f64>,
) -> Result<(), RecordError> {
    if schema == CUSTOM_BUCKETS_SCHEMA {
        decode_f64s(c, out)
    } else {
        out.clear();
        Ok(())
    }
}

fn put_custom_values(buf: &mut Vec<u8>, schema: i32, values: &[f64]) {
    if schema == CUSTOM_BUCKETS_SCHEMA {
        put_f64s(buf, values);
    }
}

/// A histogram as stored in a histogram samples record.
trait HistogramCodec: Default {
    /// Decodes into `self`, reusing its vectors.
    fn decode(&mut self, c: &mut Cursor<'_>) -> Result<(), RecordError>;
    fn encode(&self, buf: &mut Vec<u8>);
}

impl HistogramCodec for Histogram {
    fn decode(&mut self, c: &mut Cursor<'_>) -> Result<(), RecordError> {
        self.counter_reset_hint = c.counter_reset_hint()?;
        self.schema = c.varint_i32("histogram schema")?;
        self.zero_threshold = c.be_f64()?;
        self.zero_count = c.uvarint()?;
        self.count = c.uvarint()?;
        self.sum = c.be_f64()?;
        decode_spans(c, &mut self.positive_spans)?;
        decode_spans(c, &mut self.negative_spans)?;
        decode_varints(c, &mut self.positive_buckets)?;
        decode_varints(c, &mut self.negative_buckets)?;
        decode_custom_values(c, self.schema, &mut self.custom_values)
    }

    fn encode(&self, buf: &mut Vec<u8>) {
        buf.push(self.counter_reset_hint as u8);
        put_varint(buf, i64::from(self.schema));
        put_be_f64(buf, self.zero_threshold);
        put_uvarint(buf, self.zero_count);
        put_uvarint(buf, self.count);
        put_be_f64(buf, self.sum);
        put_spans(buf, &self.positive_spans);
        put_spans(buf, &self.negative_spans);
        put_varints(buf, &self.positive_buckets);
        put_varints(buf, &self.negative_buckets);
        put_custom_values(buf, self.schema, &self.custom_values);
    }
}

impl HistogramCodec for FloatHistogram {
    fn decode(&mut self, c: &mut Cursor<'_>) -> Result<(), RecordError> {
        self.counter_reset_hint = c.counter_reset_hint()?;
        self.schema = c.varint_i32("histogram schema")?;
        self.zero_threshold = c.be_f64()?;
        self.zero_count = c.be_f64()?;
        self.count = c.be_f64()?;
        self.sum = c.be_f64()?;
        decode_spans(c, &mut self.positive_spans)?;
        decode_spans(c, &mut self.negative_spans)?;
        decode_f64s(c, &mut self.positive_buckets)?;
        decode_f64s(c, &mut self.negative_buckets)?;
        decode_custom_values(c, self.schema, &mut self.custom_values)
    }

    fn encode(&self, buf: &mut Vec<u8>) {
        buf.push(self.counter_reset_hint as u8);
        put_varint(buf, i64::from(self.schema));
        put_be_f64(buf, self.zero_threshold);
        put_be_f64(buf, self.zero_count);
        put_be_f64(buf, self.count);
        put_be_f64(buf, self.sum);
        put_spans(buf, &self.positive_spans);
        put_spans(buf, &self.negative_spans);
        put_f64s(buf, &self.positive_buckets);
        put_f64s(buf, &self.negative_buckets);
        put_custom_values(buf, self.schema, &self.custom_values);
    }
}

/// A histogram sample of either kind, for the shared record loop.
trait HistogramSample: Default {
    type H: HistogramCodec;
    /// Whether the histogram has custom buckets (schema -53).
    fn custom_buckets(&self) -> bool;
    /// Ref, start time, time and histogram, to be overwritten.
    fn parts(&mut self) -> (&mut u64, &mut i64, &mut i64, &mut Self::H);
    fn ref_t(&self) -> (u64, i64);
    fn st(&self) -> i64;
    fn histogram(&self) -> &Self::H;
}

impl HistogramSample for RefHistogramSample {
    type H = Histogram;
    fn custom_buckets(&self) -> bool {
        self.h.uses_custom_buckets()
    }
    fn parts(&mut self) -> (&mut u64, &mut i64, &mut i64, &mut Histogram) {
        (&mut self.series_ref, &mut self.st, &mut self.t, &mut self.h)
    }
    fn ref_t(&self) -> (u64, i64) {
        (self.series_ref, self.t)
    }
    fn st(&self) -> i64 {
        self.st
    }
    fn histogram(&self) -> &Histogram {
        &self.h
    }
}

impl HistogramSample for RefFloatHistogramSample {
    type H = FloatHistogram;
    fn custom_buckets(&self) -> bool {
        self.h.uses_custom_buckets()
    }
    fn parts(&mut self) -> (&mut u64, &mut i64, &mut i64, &mut FloatHistogram) {
        (&mut self.series_ref, &mut self.st, &mut self.t, &mut self.h)
    }
    fn ref_t(&self) -> (u64, i64) {
        (self.series_ref, self.t)
    }
    fn st(&self) -> i64 {
        self.st
    }
    fn histogram(&self) -> &FloatHistogram {
        &self.h
    }
}

/// Decodes a v1 histogram record (base ref and time, varint deltas) or,
/// when its type is `v2`, a v2 one (see [`V2Deltas`]).
fn decode_histogram_record<S: HistogramSample>(
    rec: &[u8],
    accepted: &[RecordType],
    v2: RecordType,
    expected: &'static str,
    out: &mut Vec<S>,
) -> Result<(), RecordError> {
    decode_into(out, |out| {
        if RecordType::of(rec) == v2 {
            let mut c = Cursor::open(rec, &[v2], expected)?;
            let mut deltas = None;
            let mut n = 0;
            while !c.at_end() {
                let (series_ref, t, st) = V2Deltas::read(&mut deltas, &mut c)?;
                let (slot_ref, slot_st, slot_t, slot_h) = reuse_slot(out, n).parts();
                (*slot_ref, *slot_st, *slot_t) = (series_ref, st, t);
                slot_h.decode(&mut c)?;
                n += 1;
            }
            return Ok(n);
        }
        let mut c = Cursor::open(rec, accepted, expected)?;
        let Some(base) = c.sample_base()? else {
            return Ok(0);
        };
        let mut n = 0;
        while !c.at_end() {
            let (series_ref, t) = c.sample_ref_t(base)?;
            let (slot_ref, slot_st, slot_t, slot_h) = reuse_slot(out, n).parts();
            (*slot_ref, *slot_st, *slot_t) = (series_ref, 0, t);
            slot_h.decode(&mut c)?;
            n += 1;
        }
        Ok(n)
    })
}

/// Encodes a v2 histogram record of either kind.
fn encode_histogram_record_v2<S: HistogramSample>(
    buf: &mut Vec<u8>,
    typ: RecordType,
    samples: &[S],
) {
    start_record(buf, typ);
    let mut w = V2Writer::new();
    for s in samples {
        let (series_ref, t) = s.ref_t();
        w.put(buf, series_ref, t, s.st());
        s.histogram().encode(buf);
    }
}

fn encode_histogram_record<S: HistogramSample>(buf: &mut Vec<u8>, typ: RecordType, samples: &[S]) {
    start_record(buf, typ);
    let Some(first) = samples.first() else {
        return;
    };
    put_histogram_entries(buf, first.ref_t(), samples.iter());
}

/// Writes the base (`base`: a ref and a time) and the entries of a v1
/// histogram record after its type byte.
fn put_histogram_entries<'a, S: HistogramSample + 'a>(
    buf: &mut Vec<u8>,
    base: (u64, i64),
    samples: impl Iterator<Item = &'a S>,
) {
    put_sample_base(buf, base.0, base.1);
    for s in samples {
        let (series_ref, t) = s.ref_t();
        put_sample_ref_t(buf, base, series_ref, t);
        s.histogram().encode(buf);
    }
}

/// Encodes histogram samples as Prometheus' v1 encoder does for a mix of
/// kinds (`Encoder.HistogramSamples`, then `CustomBucketsHistogramSamples`
/// for what it leaves over): the exponential ones into `exponential`, a
/// record whose base is the first sample of all (custom or not), the
/// custom-bucket ones into `custom`, a record of their own. Each buffer is
/// cleared, and left empty when it has no samples.
fn encode_histogram_records_split<S: HistogramSample>(
    exponential: &mut Vec<u8>,
    exponential_type: RecordType,
    custom: &mut Vec<u8>,
    custom_type: RecordType,
    samples: &[S],
) {
    exponential.clear();
    custom.clear();
    let Some(first) = samples.first() else {
        return;
    };
    if samples.iter().any(|s| !s.custom_buckets()) {
        start_record(exponential, exponential_type);
        put_histogram_entries(
            exponential,
            first.ref_t(),
            samples.iter().filter(|s| !s.custom_buckets()),
        );
    }
    if let Some(first_custom) = samples.iter().find(|s| s.custom_buckets()) {
        start_record(custom, custom_type);
        put_histogram_entries(
            custom,
            first_custom.ref_t(),
            samples.iter().filter(|s| s.custom_buckets()),
        );
    }
}

/// [`RecordType::HistogramSamples`] and
/// [`RecordType::CustomBucketsHistogramSamples`] records of a mix of
/// histograms, as Prometheus writes them: see
/// [`encode_histogram_records_split`] (the exponential record's base is the
/// first sample of all, even a custom-bucket one).
pub fn encode_histogram_samples_split(
    exponential: &mut Vec<u8>,
    custom: &mut Vec<u8>,
    samples: &[RefHistogramSample],
) {
    encode_histogram_records_split(
        exponential,
        RecordType::HistogramSamples,
        custom,
        RecordType::CustomBucketsHistogramSamples,
        samples,
    );
}

/// [`encode_histogram_samples_split`] for float histograms.
pub fn encode_float_histogram_samples_split(
    exponential: &mut Vec<u8>,
    custom: &mut Vec<u8>,
    samples: &[RefFloatHistogramSample],
) {
    encode_histogram_records_split(
        exponential,
        RecordType::FloatHistogramSamples,
        custom,
        RecordType::CustomBucketsFloatHistogramSamples,
        samples,
    );
}

/// Decodes a [`RecordType::HistogramSamples`],
/// [`RecordType::CustomBucketsHistogramSamples`] or
/// [`RecordType::HistogramSamplesV2`] record into `out` (cleared first). Histograms of every schema are returned, also those Prometheus'
/// decoder drops (see [`is_known_schema`]).
pub fn decode_histogram_samples(
    rec: &[u8],
    out: &mut Vec<RefHistogramSample>,
) -> Result<(), RecordError> {
    decode_histogram_record(
        rec,
        &[
            RecordType::HistogramSamples,
            RecordType::CustomBucketsHistogramSamples,
        ],
        RecordType::HistogramSamplesV2,
        "histogram samples",
        out,
    )
}

/// Decodes a [`RecordType::FloatHistogramSamples`],
/// [`RecordType::CustomBucketsFloatHistogramSamples`] or
/// [`RecordType::FloatHistogramSamplesV2`] record into `out` (cleared
/// first). Histograms of every schema are returned.
pub fn decode_float_histogram_samples(
    rec: &[u8],
    out: &mut Vec<RefFloatHistogramSample>,
) -> Result<(), RecordError> {
    decode_histogram_record(
        rec,
        &[
            RecordType::FloatHistogramSamples,
            RecordType::CustomBucketsFloatHistogramSamples,
        ],
        RecordType::FloatHistogramSamplesV2,
        "float histogram samples",
        out,
    )
}

/// Encodes a [`RecordType::HistogramSamples`] record into `buf` (cleared
/// first). Prometheus puts custom-bucket histograms in their own record
/// type: pass those to [`encode_custom_buckets_histogram_samples`] (split
/// with [`Histogram::uses_custom_buckets`]).
pub fn encode_histogram_samples(buf: &mut Vec<u8>, samples: &[RefHistogramSample]) {
    encode_histogram_record(buf, RecordType::HistogramSamples, samples);
}

/// Encodes a [`RecordType::CustomBucketsHistogramSamples`] record into `buf`
/// (cleared first).
pub fn encode_custom_buckets_histogram_samples(buf: &mut Vec<u8>, samples: &[RefHistogramSample]) {
    encode_histogram_record(buf, RecordType::CustomBucketsHistogramSamples, samples);
}

/// Encodes a [`RecordType::FloatHistogramSamples`] record into `buf`
/// (cleared first); custom-bucket histograms belong in
/// [`encode_custom_buckets_float_histogram_samples`].
pub fn encode_float_histogram_samples(buf: &mut Vec<u8>, samples: &[RefFloatHistogramSample]) {
    encode_histogram_record(buf, RecordType::FloatHistogramSamples, samples);
}

/// Encodes a [`RecordType::CustomBucketsFloatHistogramSamples`] record into
/// `buf` (cleared first).
pub fn encode_custom_buckets_float_histogram_samples(
    buf: &mut Vec<u8>,
    samples: &[RefFloatHistogramSample],
) {
    encode_histogram_record(buf, RecordType::CustomBucketsFloatHistogramSamples, samples);
}

/// Encodes a [`RecordType::HistogramSamplesV2`] record (histograms of every
/// schema, custom buckets included, with start timestamps) into `buf`
/// (cleared first).
pub fn encode_histogram_samples_v2(buf: &mut Vec<u8>, samples: &[RefHistogramSample]) {
    encode_histogram_record_v2(buf, RecordType::HistogramSamplesV2, samples);
}

/// Encodes a [`RecordType::FloatHistogramSamplesV2`] record into `buf`
/// (cleared first).
pub fn encode_float_histogram_samples_v2(buf: &mut Vec<u8>, samples: &[RefFloatHistogramSample]) {
    encode_histogram_record_v2(buf, RecordType::FloatHistogramSamplesV2, samples);
}
