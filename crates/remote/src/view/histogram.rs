//! Native histograms of a 1.0 request read in place.
//!
//! A `Histogram` message is checked and read in one pass by
//! [`HistogramBuf::read_checked`] into vectors reused from one histogram
//! to the next. [`super::V1View::new`] checks every histogram that way;
//! [`super::V1View::decode`] also keeps what it read, in request order, in
//! a [`HistogramArena`] (flat arrays, no vectors per histogram), from
//! which the ingest path copies each histogram into a reused buffer: the
//! body's histograms are parsed once and nothing is allocated per
//! histogram.
//!
//! The reading follows prost's rules, so that it yields exactly what
//! prost + [`crate::histogram::from_v1`] yield: scalars and the `count` and
//! `zero_count` oneofs keep their last value; repeated fields gather every
//! occurrence, packed or not; `sint32`/`uint32`/`int32` varints are cut to
//! 32 bits as prost cuts them. A message is refused where prost would
//! refuse it (wrong wire types, packed runs that do not end on their
//! length) and also where it would merely skip something (unknown
//! fields): the caller then takes the general path, which gives the exact
//! answer.

use ferrite_model::{CounterResetHint, FloatHistogram, Histogram, Span};

use super::{varint, Field, Fields};
use crate::histogram::hint;
use crate::HistogramSample;

/// Field keys of a 1.0 `Histogram` (field number << 3 | wire type).
const COUNT_INT: u64 = 1 << 3;
const COUNT_FLOAT: u64 = 2 << 3 | 1;
const SUM: u64 = 3 << 3 | 1;
const SCHEMA: u64 = 4 << 3;
const ZERO_THRESHOLD: u64 = 5 << 3 | 1;
const ZERO_COUNT_INT: u64 = 6 << 3;
const ZERO_COUNT_FLOAT: u64 = 7 << 3 | 1;
const NEGATIVE_SPANS: u64 = 8 << 3 | 2;
const NEGATIVE_DELTAS: u64 = 9 << 3;
const NEGATIVE_COUNTS: u64 = 10 << 3;
const POSITIVE_SPANS: u64 = 11 << 3 | 2;
const POSITIVE_DELTAS: u64 = 12 << 3;
const POSITIVE_COUNTS: u64 = 13 << 3;
const RESET_HINT: u64 = 14 << 3;
const TIMESTAMP: u64 = 15 << 3;
const CUSTOM_VALUES: u64 = 16 << 3;

/// Field keys of a `BucketSpan`.
const SPAN_OFFSET: u64 = 1 << 3;
const SPAN_LENGTH: u64 = 2 << 3;

/// The wire type bits of a key.
const WIRE_VARINT: u64 = 0;
const WIRE_FIXED64: u64 = 1;
const WIRE_LEN: u64 = 2;

/// What a `Histogram` message will take once read: its number of spans
/// and of bucket counts and custom values, for the caller's memory
/// budget.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct HistogramSize {
    pub spans: usize,
    pub values: usize,
}

/// prost's `sint32`.
fn sint32(v: u64) -> i32 {
    let v = v as u32;
    ((v >> 1) as i32) ^ -((v & 1) as i32)
}

/// prost's `sint64`.
fn sint64(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// A `BucketSpan` message; `None` for anything but its two varints.
fn span(msg: &[u8]) -> Option<Span> {
    let mut s = Span::default();
    let mut fields = Fields::new(msg);
    while let Some(field) = fields.next_field() {
        match field.ok()? {
            (SPAN_OFFSET, Field::Varint(v)) => s.offset = sint32(v),
            (SPAN_LENGTH, Field::Varint(v)) => s.length = v as u32,
            _ => return None,
        }
    }
    Some(s)
}

/// Appends the `sint64`s of a packed run; `None` unless its varints fill
/// it. Returns how many.
fn extend_sint64(run: &[u8], out: &mut Vec<i64>) -> Option<usize> {
    let (mut pos, start) = (0, out.len());
    while pos < run.len() {
        out.push(sint64(varint(run, &mut pos)?));
    }
    Some(out.len() - start)
}

/// Appends the doubles of a packed run; `None` unless they fill it.
fn extend_f64(run: &[u8], out: &mut Vec<f64>) -> Option<usize> {
    if !run.len().is_multiple_of(8) {
        return None;
    }
    out.extend(run.chunks_exact(8).map(|c| {
        let mut b = [0u8; 8];
        b.copy_from_slice(c);
        f64::from_le_bytes(b)
    }));
    Some(run.len() / 8)
}

/// An occurrence of a repeated `sint64` field (packed or not) appended;
/// `None` for another wire type or a malformed run.
fn extend_deltas(key: u64, field: Field<'_>, out: &mut Vec<i64>) -> Option<usize> {
    match (field, key & 7) {
        (Field::Varint(v), WIRE_VARINT) => {
            out.push(sint64(v));
            Some(1)
        }
        (Field::Len(run), WIRE_LEN) => extend_sint64(run, out),
        _ => None,
    }
}

/// An occurrence of a repeated `double` field (packed or not) appended;
/// `None` for another wire type or a malformed run.
fn extend_doubles(key: u64, field: Field<'_>, out: &mut Vec<f64>) -> Option<usize> {
    match (field, key & 7) {
        (Field::Fixed64(v), WIRE_FIXED64) => {
            out.push(f64::from_bits(v));
            Some(1)
        }
        (Field::Len(run), WIRE_LEN) => extend_f64(run, out),
        _ => None,
    }
}

/// A `Histogram` message of a [`super::V1View`], checked.
#[derive(Debug, Clone, Copy)]
pub struct HistogramMessage<'a>(pub(crate) &'a [u8]);

/// Whether a read histogram is an integer or a float one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HistogramKind {
    Int,
    Float,
}

/// Reusable room for reading histograms in place: the last one read is in
/// [`HistogramBuf::int`] or [`HistogramBuf::float`], as its kind says.
#[derive(Debug, Default)]
pub struct HistogramBuf {
    /// The last histogram read, if it was an integer one.
    pub int: Histogram,
    /// The last histogram read, if it was a float one.
    pub float: FloatHistogram,
}

impl HistogramBuf {
    /// An empty buffer.
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads a `Histogram` message of a checked view, as prost +
    /// [`crate::histogram::from_v1`] would: its timestamp and kind; the
    /// histogram is in `self.int` or `self.float`. Nothing is allocated
    /// once the vectors have grown to the histograms' size.
    pub fn read(&mut self, msg: HistogramMessage<'_>) -> (i64, HistogramKind) {
        // Checked with the view: never `None`.
        self.read_checked(msg.0)
            .map_or((0, HistogramKind::Int), |(t, kind, _)| (t, kind))
    }

    /// Checks and reads a `Histogram` message in one pass, as
    /// [`HistogramBuf::read`]; `None` if prost would refuse it or it has a
    /// field the view does not read. Also returns its size.
    pub(crate) fn read_checked(
        &mut self,
        msg: &[u8],
    ) -> Option<(i64, HistogramKind, HistogramSize)> {
        self.clear();
        // The integer histogram gathers spans and deltas, the float one
        // counts; the count's oneof (last wins) decides which one it is.
        let (int, float) = (&mut self.int, &mut self.float);
        let mut size = HistogramSize::default();
        let (mut count, mut zero_count) = (None, (0u64, 0f64));
        let mut timestamp = 0i64;
        let mut fields = Fields::new(msg);
        while let Some(field) = fields.next_field() {
            match field.ok()? {
                (COUNT_INT, Field::Varint(v)) => count = Some((v, 0.0, false)),
                (COUNT_FLOAT, Field::Fixed64(v)) => count = Some((0, f64::from_bits(v), true)),
                (SUM, Field::Fixed64(v)) => int.sum = f64::from_bits(v),
                (SCHEMA, Field::Varint(v)) => int.schema = sint32(v),
                (ZERO_THRESHOLD, Field::Fixed64(v)) => int.zero_threshold = f64::from_bits(v),
                (ZERO_COUNT_INT, Field::Varint(v)) => zero_count = (v, 0.0),
                (ZERO_COUNT_FLOAT, Field::Fixed64(v)) => zero_count = (0, f64::from_bits(v)),
                (NEGATIVE_SPANS, Field::Len(s)) => {
                    size.spans += 1;
                    int.negative_spans.push(span(s)?);
                }
                (POSITIVE_SPANS, Field::Len(s)) => {
                    size.spans += 1;
                    int.positive_spans.push(span(s)?);
                }
                (RESET_HINT, Field::Varint(v)) => int.counter_reset_hint = hint(v as i32),
                (TIMESTAMP, Field::Varint(v)) => timestamp = v as i64,
                (k, f) => {
                    size.values += match k & !7 {
                        NEGATIVE_DELTAS => extend_deltas(k, f, &mut int.negative_buckets),
                        POSITIVE_DELTAS => extend_deltas(k, f, &mut int.positive_buckets),
                        NEGATIVE_COUNTS => extend_doubles(k, f, &mut float.negative_buckets),
                        POSITIVE_COUNTS => extend_doubles(k, f, &mut float.positive_buckets),
                        CUSTOM_VALUES => extend_doubles(k, f, &mut int.custom_values),
                        _ => None,
                    }?;
                }
            }
        }
        let (count_int, count_float, is_float) = count.unwrap_or((0, 0.0, false));
        if !is_float {
            int.count = count_int;
            int.zero_count = zero_count.0;
            return Some((timestamp, HistogramKind::Int, size));
        }
        float.counter_reset_hint = int.counter_reset_hint;
        float.schema = int.schema;
        float.zero_threshold = int.zero_threshold;
        float.zero_count = zero_count.1;
        float.count = count_float;
        float.sum = int.sum;
        std::mem::swap(&mut float.positive_spans, &mut int.positive_spans);
        std::mem::swap(&mut float.negative_spans, &mut int.negative_spans);
        std::mem::swap(&mut float.custom_values, &mut int.custom_values);
        Some((timestamp, HistogramKind::Float, size))
    }

    /// Empties both histograms, keeping their vectors' room.
    fn clear(&mut self) {
        self.int.clear();
        self.float.clear();
    }

    /// The last histogram read, owned (for tests and the general path's
    /// comparison).
    pub fn to_sample(&self, timestamp: i64, kind: HistogramKind) -> HistogramSample {
        use crate::HistogramValue;
        HistogramSample {
            timestamp,
            start_timestamp: 0,
            value: match kind {
                HistogramKind::Int => HistogramValue::Int(self.int.clone()),
                HistogramKind::Float => HistogramValue::Float(self.float.clone()),
            },
        }
    }
}

/// One histogram of a [`HistogramArena`]: its scalars, and where its
/// spans (positive then negative), buckets (positive then negative, in
/// `ints` or `floats` as its kind says) and custom bounds (in `floats`)
/// are in the arena's arrays.
#[derive(Debug, Clone, Copy)]
struct ArenaEntry {
    timestamp: i64,
    kind: HistogramKind,
    hint: CounterResetHint,
    schema: i32,
    zero_threshold: f64,
    sum: f64,
    /// The integer count, or the float count's bits.
    count: u64,
    /// Likewise for the zero bucket.
    zero_count: u64,
    spans_at: u32,
    positive_spans: u32,
    negative_spans: u32,
    buckets_at: u32,
    positive: u32,
    negative: u32,
    custom_at: u32,
    custom: u32,
}

/// The histograms of a request, read once by [`super::V1View::decode`],
/// in request order, in flat arrays: integer buckets in one vector, float
/// buckets and custom bounds in another, spans in a third. Reused from
/// request to request; [`HistogramArena::read_into`] copies one back into
/// a [`HistogramBuf`].
#[derive(Debug, Default)]
pub struct HistogramArena {
    entries: Vec<ArenaEntry>,
    spans: Vec<Span>,
    ints: Vec<i64>,
    floats: Vec<f64>,
    /// Where each message is read before it is added.
    scratch: HistogramBuf,
}

/// A length or offset of an arena array as stored (`None` past 2^32).
fn small(n: usize) -> Option<u32> {
    u32::try_from(n).ok()
}

/// Bytes `v` has allocated once `more` items are pushed (a `Vec` grows
/// to twice its capacity, or to what it needs, and to at least 4).
fn grown<T>(v: &Vec<T>, more: usize) -> usize {
    let need = v.len().saturating_add(more);
    let capacity = if need <= v.capacity() {
        v.capacity()
    } else {
        need.max(v.capacity().saturating_mul(2)).max(4)
    };
    capacity.saturating_mul(std::mem::size_of::<T>())
}

/// A run of `len` items at `at` of `v` (empty if out of range, which the
/// arena never makes).
fn run<T>(v: &[T], at: u32, len: u32) -> &[T] {
    let start = at as usize;
    v.get(start..start + len as usize).unwrap_or(&[])
}

impl HistogramArena {
    /// An empty arena.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of histograms held.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Bytes its arrays have allocated.
    pub fn capacity_bytes(&self) -> usize {
        use std::mem::size_of;
        self.entries.capacity() * size_of::<ArenaEntry>()
            + self.spans.capacity() * size_of::<Span>()
            + (self.ints.capacity() + self.floats.capacity()) * 8
    }

    /// Bytes its arrays will have allocated once the histogram in
    /// `scratch` (of `kind`) is added.
    fn grown_bytes(&self, kind: HistogramKind) -> usize {
        let (int, float) = (&self.scratch.int, &self.scratch.float);
        let (spans, ints, floats) = match kind {
            HistogramKind::Int => (
                int.positive_spans.len() + int.negative_spans.len(),
                int.positive_buckets.len() + int.negative_buckets.len(),
                int.custom_values.len(),
            ),
            HistogramKind::Float => (
                float.positive_spans.len() + float.negative_spans.len(),
                0,
                float.positive_buckets.len()
                    + float.negative_buckets.len()
                    + float.custom_values.len(),
            ),
        };
        grown(&self.entries, 1)
            + grown(&self.spans, spans)
            + grown(&self.ints, ints)
            + grown(&self.floats, floats)
    }

    /// Forgets every histogram, keeping the arrays' room.
    pub fn clear(&mut self) {
        self.entries.clear();
        self.spans.clear();
        self.ints.clear();
        self.floats.clear();
    }

    /// Checks and reads a `Histogram` message and keeps it; `None` if it
    /// is refused ([`HistogramBuf::read_checked`]) or the arena's arrays
    /// would have to grow past `max_bytes` allocated to keep it (checked
    /// before they grow).
    pub(crate) fn push_message(&mut self, msg: &[u8], max_bytes: usize) -> Option<HistogramSize> {
        let (timestamp, kind, size) = self.scratch.read_checked(msg)?;
        if self.grown_bytes(kind) > max_bytes {
            return None;
        }
        let (int, float) = (&self.scratch.int, &self.scratch.float);
        // The spans and custom bounds are in the kind's histogram; the
        // scalars not set for a float one are in neither (read_checked
        // copies them over).
        let (positive_spans, negative_spans, custom) = match kind {
            HistogramKind::Int => (&int.positive_spans, &int.negative_spans, &int.custom_values),
            HistogramKind::Float => (
                &float.positive_spans,
                &float.negative_spans,
                &float.custom_values,
            ),
        };
        let mut entry = ArenaEntry {
            timestamp,
            kind,
            hint: int.counter_reset_hint,
            schema: int.schema,
            zero_threshold: int.zero_threshold,
            sum: int.sum,
            count: int.count,
            zero_count: int.zero_count,
            spans_at: small(self.spans.len())?,
            positive_spans: small(positive_spans.len())?,
            negative_spans: small(negative_spans.len())?,
            buckets_at: 0,
            positive: 0,
            negative: 0,
            custom_at: small(self.floats.len())?,
            custom: small(custom.len())?,
        };
        self.spans.extend_from_slice(positive_spans);
        self.spans.extend_from_slice(negative_spans);
        self.floats.extend_from_slice(custom);
        match kind {
            HistogramKind::Int => {
                entry.buckets_at = small(self.ints.len())?;
                entry.positive = small(int.positive_buckets.len())?;
                entry.negative = small(int.negative_buckets.len())?;
                self.ints.extend_from_slice(&int.positive_buckets);
                self.ints.extend_from_slice(&int.negative_buckets);
            }
            HistogramKind::Float => {
                entry.hint = float.counter_reset_hint;
                entry.schema = float.schema;
                entry.zero_threshold = float.zero_threshold;
                entry.sum = float.sum;
                entry.count = float.count.to_bits();
                entry.zero_count = float.zero_count.to_bits();
                entry.buckets_at = small(self.floats.len())?;
                entry.positive = small(float.positive_buckets.len())?;
                entry.negative = small(float.negative_buckets.len())?;
                self.floats.extend_from_slice(&float.positive_buckets);
                self.floats.extend_from_slice(&float.negative_buckets);
            }
        }
        self.entries.push(entry);
        Some(size)
    }

    /// Copies histogram `k` (in request order) into `buf`, as
    /// [`HistogramBuf::read`] would have read its message: its timestamp
    /// and kind; `None` past the last one.
    pub fn read_into(&self, k: usize, buf: &mut HistogramBuf) -> Option<(i64, HistogramKind)> {
        let e = self.entries.get(k)?;
        buf.clear();
        let spans = run(&self.spans, e.spans_at, e.positive_spans + e.negative_spans);
        let (positive_spans, negative_spans) =
            spans.split_at(spans.len().min(e.positive_spans as usize));
        let custom = run(&self.floats, e.custom_at, e.custom);
        // Both kinds take the same fields; only the buckets' array and the
        // counts' type differ.
        macro_rules! fill {
            ($h:expr, $values:expr, $count:expr, $zero_count:expr) => {{
                let h = $h;
                let buckets = run($values, e.buckets_at, e.positive + e.negative);
                let (positive, negative) = buckets.split_at(buckets.len().min(e.positive as usize));
                h.counter_reset_hint = e.hint;
                h.schema = e.schema;
                h.zero_threshold = e.zero_threshold;
                h.sum = e.sum;
                h.count = $count;
                h.zero_count = $zero_count;
                h.positive_spans.extend_from_slice(positive_spans);
                h.negative_spans.extend_from_slice(negative_spans);
                h.positive_buckets.extend_from_slice(positive);
                h.negative_buckets.extend_from_slice(negative);
                h.custom_values.extend_from_slice(custom);
            }};
        }
        match e.kind {
            HistogramKind::Int => fill!(&mut buf.int, &self.ints, e.count, e.zero_count),
            HistogramKind::Float => fill!(
                &mut buf.float,
                &self.floats,
                f64::from_bits(e.count),
                f64::from_bits(e.zero_count)
            ),
        }
        Some((e.timestamp, e.kind))
    }
}
