//! Native histograms of a 1.0 request read in place.
//!
//! A `Histogram` message is checked once by [`check`] (while
//! [`super::V1View::new`] checks the whole body) and then read by
//! [`HistogramBuf::read`] into vectors reused from one histogram to the
//! next, so the ingest path allocates nothing per histogram to read it.
//!
//! The reading follows prost's rules, so that it yields exactly what
//! prost + [`crate::histogram::from_v1`] yield: scalars and the `count` and
//! `zero_count` oneofs keep their last value; repeated fields gather every
//! occurrence, packed or not; `sint32`/`uint32`/`int32` varints are cut to
//! 32 bits as prost cuts them. [`check`] refuses what prost would refuse
//! (wrong wire types, packed runs that do not end on their length) and
//! also what it would merely skip (unknown fields): the caller then takes
//! the general path, which gives the exact answer.

use ferrite_model::{FloatHistogram, Histogram, Span};

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

/// What a checked `Histogram` message will take once read: its number of
/// spans and of bucket counts and custom values, for the caller's memory
/// budget.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct HistogramSize {
    pub spans: usize,
    pub values: usize,
}

/// Checks a `Histogram` message: `None` if prost would refuse it or it has
/// a field the view does not read, else its size.
pub(crate) fn check(msg: &[u8]) -> Option<HistogramSize> {
    let mut size = HistogramSize::default();
    let mut fields = Fields::new(msg);
    while let Some(field) = fields.next_field() {
        let (key, field) = field.ok()?;
        let ok = match (key, field) {
            (COUNT_INT | SCHEMA | ZERO_COUNT_INT | RESET_HINT | TIMESTAMP, Field::Varint(_)) => {
                true
            }
            (COUNT_FLOAT | SUM | ZERO_THRESHOLD | ZERO_COUNT_FLOAT, Field::Fixed64(_)) => true,
            (NEGATIVE_SPANS | POSITIVE_SPANS, Field::Len(span)) => {
                size.spans += 1;
                is_span(span)
            }
            _ => match repeated_len(key, field) {
                Some(n) => {
                    size.values += n;
                    true
                }
                None => false,
            },
        };
        if !ok {
            return None;
        }
    }
    Some(size)
}

/// The number of values of a repeated numeric field's occurrence (packed or
/// not), `None` if `key` is none of them or the run is malformed.
fn repeated_len(key: u64, field: Field<'_>) -> Option<usize> {
    let number = key & !7;
    let deltas = number == NEGATIVE_DELTAS || number == POSITIVE_DELTAS;
    let doubles = number == NEGATIVE_COUNTS || number == POSITIVE_COUNTS || number == CUSTOM_VALUES;
    match (field, key & 7) {
        (Field::Varint(_), WIRE_VARINT) if deltas => Some(1),
        (Field::Fixed64(_), WIRE_FIXED64) if doubles => Some(1),
        (Field::Len(run), WIRE_LEN) if deltas => packed_varints(run),
        (Field::Len(run), WIRE_LEN) if doubles => (run.len() % 8 == 0).then_some(run.len() / 8),
        _ => None,
    }
}

/// The number of varints of a packed run, `None` unless they fill it.
fn packed_varints(run: &[u8]) -> Option<usize> {
    let (mut pos, mut n) = (0, 0);
    while pos < run.len() {
        varint(run, &mut pos)?;
        n += 1;
    }
    Some(n)
}

fn is_span(msg: &[u8]) -> bool {
    super::all_fields(msg, |k, f| {
        matches!((k, f), (SPAN_OFFSET | SPAN_LENGTH, Field::Varint(_)))
    })
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

/// A `BucketSpan` message (checked by [`is_span`]).
fn span(msg: &[u8]) -> Span {
    let mut s = Span::default();
    for (k, f) in Fields::new(msg) {
        match (k, f) {
            (SPAN_OFFSET, Field::Varint(v)) => s.offset = sint32(v),
            (SPAN_LENGTH, Field::Varint(v)) => s.length = v as u32,
            _ => {}
        }
    }
    s
}

/// Appends the varints of a checked packed run, as `sint64`s.
fn extend_sint64(run: &[u8], out: &mut Vec<i64>) {
    let mut pos = 0;
    while let Some(v) = varint(run, &mut pos) {
        out.push(sint64(v));
    }
}

/// Appends the doubles of a checked packed run.
fn extend_f64(run: &[u8], out: &mut Vec<f64>) {
    out.extend(run.chunks_exact(8).map(|c| {
        let mut b = [0u8; 8];
        b.copy_from_slice(c);
        f64::from_le_bytes(b)
    }));
}

/// An occurrence of a repeated `sint64` field (packed or not) appended.
fn extend_deltas(field: Field<'_>, out: &mut Vec<i64>) {
    match field {
        Field::Varint(v) => out.push(sint64(v)),
        Field::Len(run) => extend_sint64(run, out),
        Field::Fixed64(_) => {}
    }
}

/// An occurrence of a repeated `double` field (packed or not) appended.
fn extend_doubles(field: Field<'_>, out: &mut Vec<f64>) {
    match field {
        Field::Fixed64(v) => out.push(f64::from_bits(v)),
        Field::Len(run) => extend_f64(run, out),
        Field::Varint(_) => {}
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

    /// Reads a `Histogram` message of a view, as prost +
    /// [`crate::histogram::from_v1`] would: its timestamp and kind; the
    /// histogram is in `self.int` or `self.float`. Nothing is allocated
    /// once the vectors have grown to the histograms' size.
    pub fn read(&mut self, msg: HistogramMessage<'_>) -> (i64, HistogramKind) {
        self.clear();
        // The integer histogram gathers spans and deltas, the float one
        // counts; the count's oneof (last wins) decides which one it is.
        let (int, float) = (&mut self.int, &mut self.float);
        let (mut count, mut zero_count) = (None, (0u64, 0f64));
        let mut timestamp = 0i64;
        for (key, field) in Fields::new(msg.0) {
            match (key, field) {
                (COUNT_INT, Field::Varint(v)) => count = Some((v, 0.0, false)),
                (COUNT_FLOAT, Field::Fixed64(v)) => count = Some((0, f64::from_bits(v), true)),
                (SUM, Field::Fixed64(v)) => int.sum = f64::from_bits(v),
                (SCHEMA, Field::Varint(v)) => int.schema = sint32(v),
                (ZERO_THRESHOLD, Field::Fixed64(v)) => int.zero_threshold = f64::from_bits(v),
                (ZERO_COUNT_INT, Field::Varint(v)) => zero_count = (v, 0.0),
                (ZERO_COUNT_FLOAT, Field::Fixed64(v)) => zero_count = (0, f64::from_bits(v)),
                (NEGATIVE_SPANS, Field::Len(s)) => int.negative_spans.push(span(s)),
                (POSITIVE_SPANS, Field::Len(s)) => int.positive_spans.push(span(s)),
                (RESET_HINT, Field::Varint(v)) => int.counter_reset_hint = hint(v as i32),
                (TIMESTAMP, Field::Varint(v)) => timestamp = v as i64,
                // Checked: the wire type fits the field.
                (k, f) => match k & !7 {
                    NEGATIVE_DELTAS => extend_deltas(f, &mut int.negative_buckets),
                    POSITIVE_DELTAS => extend_deltas(f, &mut int.positive_buckets),
                    NEGATIVE_COUNTS => extend_doubles(f, &mut float.negative_buckets),
                    POSITIVE_COUNTS => extend_doubles(f, &mut float.positive_buckets),
                    CUSTOM_VALUES => extend_doubles(f, &mut int.custom_values),
                    _ => {}
                },
            }
        }
        let (count_int, count_float, is_float) = count.unwrap_or((0, 0.0, false));
        if !is_float {
            int.count = count_int;
            int.zero_count = zero_count.0;
            return (timestamp, HistogramKind::Int);
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
        (timestamp, HistogramKind::Float)
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
