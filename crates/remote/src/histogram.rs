//! Native histogram samples of remote write requests.
//!
//! Both protocol versions carry the same `Histogram` message (2.0 adds a
//! start timestamp). Prometheus v3.16 turns it into an integer histogram
//! when its count is the integer variant of the `count` oneof (or absent),
//! else into a float histogram (`prompb` `IsFloatHistogram`,
//! `ToIntHistogram`, `ToFloatHistogram`): an integer histogram takes the
//! integer zero count and the bucket deltas, a float one the float zero
//! count and the absolute bucket counts; the other variants' fields are
//! ignored.
//!
//! Before the head sees a histogram, Prometheus' receiver reduces the
//! schemas it reserves for finer exponential buckets (9..=52) to 8
//! ([`HistogramValue::reduce_reserved_schema`], the receiver's
//! `timeLimitAppenderV2`); everything else — schemas outside -4..=8 and
//! -53, bucket layouts, counts — is the head's `Validate`
//! ([`HistogramValue::validate`]).

use ferrite_model::resolution::ReduceResolution;
use ferrite_model::{CounterResetHint, FloatHistogram, Histogram, HistogramError, Span};

use crate::proto::{v1, v2};

/// A native histogram sample of a series, as sent.
#[derive(Debug, Clone, PartialEq)]
pub struct HistogramSample {
    pub timestamp: i64,
    /// 2.0's `start_timestamp`; 0 = not set, and always 0 for 1.0.
    /// Prometheus v3.16 hands it to its head, which ignores it unless its
    /// start-timestamp features are on (they are off by default).
    pub start_timestamp: i64,
    pub value: HistogramValue,
}

/// An integer or a float histogram.
#[derive(Debug, Clone, PartialEq)]
pub enum HistogramValue {
    Int(Histogram),
    Float(FloatHistogram),
}

impl HistogramValue {
    /// The schema.
    pub fn schema(&self) -> i32 {
        match self {
            HistogramValue::Int(h) => h.schema,
            HistogramValue::Float(h) => h.schema,
        }
    }

    /// Prometheus' `Validate` of the histogram (its head's first check).
    pub fn validate(&self) -> Result<(), HistogramError> {
        match self {
            HistogramValue::Int(h) => h.validate(),
            HistogramValue::Float(h) => h.validate(),
        }
    }

    /// What Prometheus' receiver does before appending: a schema of the
    /// reserved exponential range above 8 (9..=52) is reduced to 8, merging
    /// buckets, the histogram keeping its kind. Fails (Prometheus' texts)
    /// where the spans do not fit the buckets in a way the merge notices: a
    /// later span with a negative offset, or fewer or more buckets than the
    /// spans need.
    pub fn reduce_reserved_schema(&mut self) -> Result<(), HistogramError> {
        match self {
            HistogramValue::Int(h) => h.reduce_reserved_schema(),
            HistogramValue::Float(h) => h.reduce_reserved_schema(),
        }
    }

    /// The memory the histogram takes (its struct and vectors), for a
    /// decoder's budget.
    pub fn memory(&self) -> usize {
        use std::mem::size_of;
        let spans = |a: &[Span], b: &[Span]| (a.len() + b.len()) * size_of::<Span>();
        size_of::<HistogramSample>()
            + match self {
                HistogramValue::Int(h) => {
                    spans(&h.positive_spans, &h.negative_spans)
                        + (h.positive_buckets.len() + h.negative_buckets.len()) * 8
                        + h.custom_values.len() * 8
                }
                HistogramValue::Float(h) => {
                    spans(&h.positive_spans, &h.negative_spans)
                        + (h.positive_buckets.len() + h.negative_buckets.len()) * 8
                        + h.custom_values.len() * 8
                }
            }
    }
}

/// Go's `histogram.CounterResetHint(h.ResetHint)`: the four hints;
/// other numbers (which no sender uses) are taken as unknown.
pub(crate) fn hint(reset_hint: i32) -> CounterResetHint {
    match reset_hint {
        1 => CounterResetHint::CounterReset,
        2 => CounterResetHint::NotCounterReset,
        3 => CounterResetHint::Gauge,
        _ => CounterResetHint::Unknown,
    }
}

fn spans(s: impl Iterator<Item = (i32, u32)>) -> Vec<Span> {
    s.map(|(offset, length)| Span { offset, length }).collect()
}

/// The fields both versions' `Histogram` messages share.
struct Fields<'a> {
    count: Option<(u64, f64, bool)>,
    zero_count: Option<(u64, f64)>,
    sum: f64,
    schema: i32,
    zero_threshold: f64,
    negative_spans: Vec<Span>,
    negative_deltas: &'a [i64],
    negative_counts: &'a [f64],
    positive_spans: Vec<Span>,
    positive_deltas: &'a [i64],
    positive_counts: &'a [f64],
    reset_hint: i32,
    custom_values: &'a [f64],
}

impl Fields<'_> {
    fn convert(self) -> HistogramValue {
        let is_float = matches!(self.count, Some((_, _, true)));
        let (count_int, count_float) = match self.count {
            Some((i, f, _)) => (i, f),
            None => (0, 0.0),
        };
        let (zero_int, zero_float) = self.zero_count.unwrap_or((0, 0.0));
        if is_float {
            HistogramValue::Float(FloatHistogram {
                counter_reset_hint: hint(self.reset_hint),
                schema: self.schema,
                zero_threshold: self.zero_threshold,
                zero_count: zero_float,
                count: count_float,
                sum: self.sum,
                positive_spans: self.positive_spans,
                negative_spans: self.negative_spans,
                positive_buckets: self.positive_counts.to_vec(),
                negative_buckets: self.negative_counts.to_vec(),
                custom_values: self.custom_values.to_vec(),
            })
        } else {
            HistogramValue::Int(Histogram {
                counter_reset_hint: hint(self.reset_hint),
                schema: self.schema,
                zero_threshold: self.zero_threshold,
                zero_count: zero_int,
                count: count_int,
                sum: self.sum,
                positive_spans: self.positive_spans,
                negative_spans: self.negative_spans,
                positive_buckets: self.positive_deltas.to_vec(),
                negative_buckets: self.negative_deltas.to_vec(),
                custom_values: self.custom_values.to_vec(),
            })
        }
    }
}

/// A 1.0 `Histogram` message as Prometheus converts it.
pub fn from_v1(h: &v1::Histogram) -> HistogramSample {
    let fields = Fields {
        // (int value, float value, is the float variant)
        count: h.count.map(|c| match c {
            v1::Count::CountInt(i) => (i, 0.0, false),
            v1::Count::CountFloat(f) => (0, f, true),
        }),
        zero_count: h.zero_count.map(|c| match c {
            v1::ZeroCount::ZeroCountInt(i) => (i, 0.0),
            v1::ZeroCount::ZeroCountFloat(f) => (0, f),
        }),
        sum: h.sum,
        schema: h.schema,
        zero_threshold: h.zero_threshold,
        negative_spans: spans(h.negative_spans.iter().map(|s| (s.offset, s.length))),
        negative_deltas: &h.negative_deltas,
        negative_counts: &h.negative_counts,
        positive_spans: spans(h.positive_spans.iter().map(|s| (s.offset, s.length))),
        positive_deltas: &h.positive_deltas,
        positive_counts: &h.positive_counts,
        reset_hint: h.reset_hint,
        custom_values: &h.custom_values,
    };
    HistogramSample {
        timestamp: h.timestamp,
        start_timestamp: 0,
        value: fields.convert(),
    }
}

/// A 2.0 `Histogram` message as Prometheus converts it.
pub fn from_v2(h: &v2::Histogram) -> HistogramSample {
    let fields = Fields {
        count: h.count.map(|c| match c {
            v2::Count::CountInt(i) => (i, 0.0, false),
            v2::Count::CountFloat(f) => (0, f, true),
        }),
        zero_count: h.zero_count.map(|c| match c {
            v2::ZeroCount::ZeroCountInt(i) => (i, 0.0),
            v2::ZeroCount::ZeroCountFloat(f) => (0, f),
        }),
        sum: h.sum,
        schema: h.schema,
        zero_threshold: h.zero_threshold,
        negative_spans: spans(h.negative_spans.iter().map(|s| (s.offset, s.length))),
        negative_deltas: &h.negative_deltas,
        negative_counts: &h.negative_counts,
        positive_spans: spans(h.positive_spans.iter().map(|s| (s.offset, s.length))),
        positive_deltas: &h.positive_deltas,
        positive_counts: &h.positive_counts,
        reset_hint: h.reset_hint,
        custom_values: &h.custom_values,
    };
    HistogramSample {
        timestamp: h.timestamp,
        start_timestamp: h.start_timestamp,
        value: fields.convert(),
    }
}

fn spans_v1(s: &[Span]) -> Vec<v1::BucketSpan> {
    s.iter()
        .map(|s| v1::BucketSpan {
            offset: s.offset,
            length: s.length,
        })
        .collect()
}

/// An integer histogram as a 1.0 `Histogram` message (remote read's
/// samples response), as Prometheus' `FromIntHistogram`: integer count
/// and zero count, bucket deltas.
pub fn to_v1_int(t: i64, h: &Histogram) -> v1::Histogram {
    v1::Histogram {
        count: Some(v1::Count::CountInt(h.count)),
        sum: h.sum,
        schema: h.schema,
        zero_threshold: h.zero_threshold,
        zero_count: Some(v1::ZeroCount::ZeroCountInt(h.zero_count)),
        negative_spans: spans_v1(&h.negative_spans),
        negative_deltas: h.negative_buckets.clone(),
        negative_counts: Vec::new(),
        positive_spans: spans_v1(&h.positive_spans),
        positive_deltas: h.positive_buckets.clone(),
        positive_counts: Vec::new(),
        reset_hint: h.counter_reset_hint as i32,
        timestamp: t,
        custom_values: h.custom_values.clone(),
    }
}

/// A float histogram as a 1.0 `Histogram` message, as Prometheus'
/// `FromFloatHistogram`: float count and zero count, absolute counts.
pub fn to_v1_float(t: i64, h: &FloatHistogram) -> v1::Histogram {
    v1::Histogram {
        count: Some(v1::Count::CountFloat(h.count)),
        sum: h.sum,
        schema: h.schema,
        zero_threshold: h.zero_threshold,
        zero_count: Some(v1::ZeroCount::ZeroCountFloat(h.zero_count)),
        negative_spans: spans_v1(&h.negative_spans),
        negative_deltas: Vec::new(),
        negative_counts: h.negative_buckets.clone(),
        positive_spans: spans_v1(&h.positive_spans),
        positive_deltas: Vec::new(),
        positive_counts: h.positive_buckets.clone(),
        reset_hint: h.counter_reset_hint as i32,
        timestamp: t,
        custom_values: h.custom_values.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sp(v: &[(i32, u32)]) -> Vec<Span> {
        spans(v.iter().copied())
    }

    #[test]
    fn int_or_float_by_the_count_variant() {
        let mut h = v1::Histogram {
            count: Some(v1::Count::CountInt(3)),
            zero_count: Some(v1::ZeroCount::ZeroCountFloat(9.0)),
            positive_spans: vec![v1::BucketSpan {
                offset: 0,
                length: 2,
            }],
            positive_deltas: vec![1, 1],
            positive_counts: vec![5.0, 6.0],
            reset_hint: 2,
            timestamp: 7,
            ..Default::default()
        };
        let s = from_v1(&h);
        assert_eq!(s.timestamp, 7);
        let HistogramValue::Int(i) = &s.value else {
            panic!("int expected")
        };
        // The float zero count is not the int one: 0.
        assert_eq!((i.count, i.zero_count), (3, 0));
        assert_eq!(i.positive_buckets, [1, 1]);
        assert_eq!(i.counter_reset_hint, CounterResetHint::NotCounterReset);
        assert!(s.value.validate().is_ok());

        h.count = Some(v1::Count::CountFloat(11.0));
        let HistogramValue::Float(f) = from_v1(&h).value else {
            panic!("float expected")
        };
        assert_eq!((f.count, f.zero_count), (11.0, 9.0));
        assert_eq!(f.positive_buckets, [5.0, 6.0]);

        // No count at all: an integer histogram counting 0.
        h.count = None;
        assert!(matches!(from_v1(&h).value, HistogramValue::Int(ref i) if i.count == 0));
    }

    #[test]
    fn read_messages_round_trip() {
        let i = Histogram {
            counter_reset_hint: CounterResetHint::Gauge,
            schema: 3,
            zero_threshold: 0.5,
            zero_count: 2,
            count: 5,
            sum: 7.5,
            positive_spans: sp(&[(-2, 2)]),
            negative_spans: sp(&[(1, 1)]),
            positive_buckets: vec![1, 0],
            negative_buckets: vec![1],
            custom_values: Vec::new(),
        };
        let m = to_v1_int(9, &i);
        assert_eq!(m.reset_hint, 3);
        assert_eq!(from_v1(&m).value, HistogramValue::Int(i.clone()));
        let f = i.to_float();
        let m = to_v1_float(9, &f);
        assert_eq!(m.timestamp, 9);
        assert_eq!(from_v1(&m).value, HistogramValue::Float(f));
    }

    /// The receiver's reduction keeps each kind (the merging itself is
    /// ferrite-model's, checked against Prometheus there).
    #[test]
    fn reserved_schemas_are_reduced_to_8_keeping_the_kind() {
        let int = Histogram {
            schema: 12,
            count: 3,
            positive_spans: sp(&[(1, 2)]),
            positive_buckets: vec![1, 1],
            ..Default::default()
        };
        let mut v = HistogramValue::Int(int.clone());
        v.reduce_reserved_schema().unwrap();
        let HistogramValue::Int(h) = &v else {
            panic!("int expected")
        };
        assert_eq!((h.schema, &h.positive_buckets[..]), (8, &[3][..]));

        let mut v = HistogramValue::Float(int.to_float());
        v.reduce_reserved_schema().unwrap();
        let HistogramValue::Float(h) = &v else {
            panic!("float expected")
        };
        assert_eq!((h.schema, &h.positive_buckets[..]), (8, &[3.0][..]));

        let mut v = HistogramValue::Int(Histogram {
            schema: 9,
            positive_spans: sp(&[(0, 3)]),
            positive_buckets: vec![1, 1],
            ..Default::default()
        });
        assert_eq!(
            v.reduce_reserved_schema().unwrap_err().message,
            "have 2 buckets but spans need more: histogram spans specify different number of buckets than provided"
        );
    }
}
