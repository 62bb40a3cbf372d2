//! Native histograms: integer ([`Histogram`]) and float
//! ([`FloatHistogram`]), as Prometheus' `model/histogram` defines them.
//!
//! A native histogram has either an exponential schema (-4..=8: bucket
//! boundaries are powers of `2^(2^-schema)`, 1 always a boundary, with a
//! zero bucket of width `zero_threshold` around 0 and buckets on both
//! sides), or the custom-buckets schema -53 (NHCB: explicit upper bounds in
//! `custom_values`, positive buckets only, no zero bucket). Populated
//! buckets are described by [`Span`]s: the first span's offset is the index
//! of its first bucket, each later span's offset the gap after the previous
//! span. An integer histogram's bucket counts are deltas (the first
//! absolute, each later one relative to the one before); a float
//! histogram's are absolute.

use std::fmt;

use crate::gofloat::format_g;
use crate::sample::is_stale_nan;

/// The highest exponential schema (finest resolution).
pub const EXPONENTIAL_SCHEMA_MAX: i32 = 8;
/// The lowest exponential schema (coarsest resolution).
pub const EXPONENTIAL_SCHEMA_MIN: i32 = -4;
/// The highest schema reserved for exponential buckets: accepted from
/// clients and reduced to [`EXPONENTIAL_SCHEMA_MAX`].
pub const EXPONENTIAL_SCHEMA_MAX_RESERVED: i32 = 52;
/// The lowest schema reserved for exponential buckets.
pub const EXPONENTIAL_SCHEMA_MIN_RESERVED: i32 = -9;
/// The schema of histograms with custom bucket bounds (NHCB).
pub const CUSTOM_BUCKETS_SCHEMA: i32 = -53;

/// Whether `s` is the custom-buckets schema.
pub fn is_custom_buckets_schema(s: i32) -> bool {
    s == CUSTOM_BUCKETS_SCHEMA
}

/// Whether `s` is a valid exponential schema (-4..=8).
pub fn is_exponential_schema(s: i32) -> bool {
    (EXPONENTIAL_SCHEMA_MIN..=EXPONENTIAL_SCHEMA_MAX).contains(&s)
}

/// Whether `s` is a schema a histogram may be stored with.
pub fn is_valid_schema(s: i32) -> bool {
    is_custom_buckets_schema(s) || is_exponential_schema(s)
}

/// Whether `s` is a schema Prometheus accepts from clients (the reserved
/// exponential range is reduced to the nearest valid schema).
pub fn is_known_schema(s: i32) -> bool {
    is_custom_buckets_schema(s)
        || (EXPONENTIAL_SCHEMA_MIN_RESERVED..=EXPONENTIAL_SCHEMA_MAX_RESERVED).contains(&s)
}

/// What is known about a counter reset at a histogram sample.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum CounterResetHint {
    /// Nothing is known; readers detect resets themselves.
    #[default]
    Unknown = 0,
    /// There was a counter reset at this sample.
    CounterReset = 1,
    /// There was certainly no counter reset at this sample.
    NotCounterReset = 2,
    /// A gauge histogram: counter resets do not apply.
    Gauge = 3,
}

impl CounterResetHint {
    /// The hint of its two-bit code (as chunk headers and protobuf carry it);
    /// every code 0..=3 is a hint, higher bits are ignored.
    pub fn from_bits(b: u8) -> Self {
        match b & 0b11 {
            1 => CounterResetHint::CounterReset,
            2 => CounterResetHint::NotCounterReset,
            3 => CounterResetHint::Gauge,
            _ => CounterResetHint::Unknown,
        }
    }
}

/// A run of consecutive buckets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Span {
    /// For the first span, the index of its first bucket (may be negative);
    /// for later ones, the number of empty buckets since the previous span.
    pub offset: i32,
    /// The number of buckets in the span.
    pub length: u32,
}

/// A native histogram with integer counts (what instrumentation observes).
#[derive(Debug, Default, PartialEq)]
pub struct Histogram {
    /// Counter reset knowledge.
    pub counter_reset_hint: CounterResetHint,
    /// -4..=8 exponential, or [`CUSTOM_BUCKETS_SCHEMA`].
    pub schema: i32,
    /// Half-width of the zero bucket.
    pub zero_threshold: f64,
    /// Observations in the zero bucket.
    pub zero_count: u64,
    /// All observations (including NaN ones, which are in no bucket).
    pub count: u64,
    /// The sum of observations; Prometheus' stale marker in a stale sample.
    pub sum: f64,
    /// Populated positive buckets.
    pub positive_spans: Vec<Span>,
    /// Populated negative buckets (exponential schemas only).
    pub negative_spans: Vec<Span>,
    /// Positive bucket counts as deltas: the first absolute.
    pub positive_buckets: Vec<i64>,
    /// Negative bucket counts as deltas: the first absolute.
    pub negative_buckets: Vec<i64>,
    /// Custom upper bounds, strictly increasing, no `+Inf` (schema -53 only).
    pub custom_values: Vec<f64>,
}

/// A native histogram with float counts (what PromQL computes with).
#[derive(Debug, Default, PartialEq)]
pub struct FloatHistogram {
    /// Counter reset knowledge.
    pub counter_reset_hint: CounterResetHint,
    /// -4..=8 exponential, or [`CUSTOM_BUCKETS_SCHEMA`].
    pub schema: i32,
    /// Half-width of the zero bucket.
    pub zero_threshold: f64,
    /// Observations in the zero bucket.
    pub zero_count: f64,
    /// All observations.
    pub count: f64,
    /// The sum of observations.
    pub sum: f64,
    /// Populated positive buckets.
    pub positive_spans: Vec<Span>,
    /// Populated negative buckets (exponential schemas only).
    pub negative_spans: Vec<Span>,
    /// Positive bucket counts, absolute.
    pub positive_buckets: Vec<f64>,
    /// Negative bucket counts, absolute.
    pub negative_buckets: Vec<f64>,
    /// Custom upper bounds (schema -53 only).
    pub custom_values: Vec<f64>,
}

/// `Clone` whose `clone_from` reuses the destination's buckets and spans
/// (the derived one allocates anew): the head keeps every series' newest
/// histogram and overwrites it on each append.
macro_rules! clone_reusing_buffers {
    ($t:ty) => {
        impl Clone for $t {
            fn clone(&self) -> Self {
                let mut out = Self::default();
                out.clone_from(self);
                out
            }

            fn clone_from(&mut self, src: &Self) {
                self.counter_reset_hint = src.counter_reset_hint;
                self.schema = src.schema;
                self.zero_threshold = src.zero_threshold;
                self.zero_count = src.zero_count;
                self.count = src.count;
                self.sum = src.sum;
                self.positive_spans.clone_from(&src.positive_spans);
                self.negative_spans.clone_from(&src.negative_spans);
                self.positive_buckets.clone_from(&src.positive_buckets);
                self.negative_buckets.clone_from(&src.negative_buckets);
                self.custom_values.clone_from(&src.custom_values);
            }
        }
    };
}

clone_reusing_buffers!(Histogram);
clone_reusing_buffers!(FloatHistogram);

/// `clear`: back to the default (empty) histogram, its vectors keeping
/// their room, for decoders that read many histograms into one.
macro_rules! clear_keeping_buffers {
    ($t:ty) => {
        impl $t {
            /// Makes this the default (empty) histogram, keeping the
            /// vectors' allocations.
            pub fn clear(&mut self) {
                self.counter_reset_hint = CounterResetHint::Unknown;
                self.schema = 0;
                self.zero_threshold = 0.0;
                self.zero_count = Default::default();
                self.count = Default::default();
                self.sum = 0.0;
                self.positive_spans.clear();
                self.negative_spans.clear();
                self.positive_buckets.clear();
                self.negative_buckets.clear();
                self.custom_values.clear();
            }
        }
    };
}

clear_keeping_buffers!(Histogram);
clear_keeping_buffers!(FloatHistogram);

/// What is wrong with a histogram, with Prometheus' wording.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HistogramErrorKind {
    /// Count below the sum of the buckets (a NaN was observed).
    CountNotBigEnough,
    /// Count differs from the sum of the buckets.
    CountMismatch,
    /// A negative count.
    NegativeCount,
    /// A bucket (or the zero bucket) with a negative count.
    NegativeBucketCount,
    /// A later span with a negative offset.
    SpanNegativeOffset,
    /// Spans cover a different number of buckets than given.
    SpansBucketsMismatch,
    /// Bucket indices outside `i32`.
    SpanIndexOutOfRange,
    /// Too few custom bounds for the spans.
    CustomBucketsMismatch,
    /// Custom bounds not strictly increasing.
    CustomBucketsInvalid,
    /// An explicit `+Inf` custom bound.
    CustomBucketsInfinite,
    /// A NaN custom bound.
    CustomBucketsNaN,
    /// A custom-buckets histogram with a zero count.
    CustomBucketsZeroCount,
    /// A custom-buckets histogram with a zero threshold.
    CustomBucketsZeroThreshold,
    /// A custom-buckets histogram with negative spans.
    CustomBucketsNegativeSpans,
    /// A custom-buckets histogram with negative buckets.
    CustomBucketsNegativeBuckets,
    /// An exponential histogram with custom bounds.
    ExponentialSchemaCustomBounds,
    /// A schema that is neither exponential nor custom.
    InvalidSchema,
}

impl HistogramErrorKind {
    /// Prometheus' text of the error (`histogram.ErrHistogram*`).
    pub fn text(self) -> &'static str {
        use HistogramErrorKind::*;
        match self {
            CountNotBigEnough => "histogram's observation count should be at least the number of observations found in the buckets",
            CountMismatch => "histogram's observation count should equal the number of observations found in the buckets (in absence of NaN)",
            NegativeCount => "histogram's observation count is negative",
            NegativeBucketCount => "histogram has a bucket whose observation count is negative",
            SpanNegativeOffset => "histogram has a span whose offset is negative",
            SpansBucketsMismatch => "histogram spans specify different number of buckets than provided",
            SpanIndexOutOfRange => "histogram has a span whose bucket index is out of range",
            CustomBucketsMismatch => "histogram custom bounds are too few",
            CustomBucketsInvalid => "histogram custom bounds must be in strictly increasing order",
            CustomBucketsInfinite => "histogram custom bounds must be finite",
            CustomBucketsNaN => "histogram custom bounds must not be NaN",
            CustomBucketsZeroCount => "custom buckets: must have zero count of 0",
            CustomBucketsZeroThreshold => "custom buckets: must have zero threshold of 0",
            CustomBucketsNegativeSpans => "custom buckets: must not have negative spans",
            CustomBucketsNegativeBuckets => "custom buckets: must not have negative buckets",
            ExponentialSchemaCustomBounds => "histogram with exponential schema must not have custom bounds",
            InvalidSchema => "histogram has an invalid schema, which must be between -4 and 8 for exponential buckets, or -53 for custom buckets",
        }
    }
}

/// A histogram failed validation: the kind, and the message Prometheus
/// gives for it (details first, the kind's text last).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct HistogramError {
    /// What is wrong.
    pub kind: HistogramErrorKind,
    /// The whole message.
    pub message: String,
}

impl HistogramError {
    pub(crate) fn new(kind: HistogramErrorKind, detail: Option<String>) -> Self {
        let message = match detail {
            Some(d) => format!("{d}: {}", kind.text()),
            None => kind.text().to_string(),
        };
        HistogramError { kind, message }
    }

    fn within(mut self, context: &str) -> Self {
        self.message = format!("{context}: {}", self.message);
        self
    }
}

fn check_spans(spans: &[Span], buckets: usize) -> Result<(), HistogramError> {
    use HistogramErrorKind::*;
    let mut in_spans = 0usize;
    // Bucket indices are i32: sums past its range are an error, not a wrap.
    let mut end: i64 = 0;
    for (n, span) in spans.iter().enumerate() {
        if n > 0 && span.offset < 0 {
            let d = format!("span number {} with offset {}", n + 1, span.offset);
            return Err(HistogramError::new(SpanNegativeOffset, Some(d)));
        }
        if n == 0 && span.offset == i32::MIN {
            let d = format!(
                "span number {} starts at bucket index {}",
                n + 1,
                span.offset
            );
            return Err(HistogramError::new(SpanIndexOutOfRange, Some(d)));
        }
        in_spans += span.length as usize;
        end += i64::from(span.offset) + i64::from(span.length);
        if end - 1 > i64::from(i32::MAX) {
            let d = format!("span number {} ends at bucket index {}", n + 1, end - 1);
            return Err(HistogramError::new(SpanIndexOutOfRange, Some(d)));
        }
    }
    if in_spans != buckets {
        let d = format!("spans need {in_spans} buckets, have {buckets} buckets");
        return Err(HistogramError::new(SpansBucketsMismatch, Some(d)));
    }
    Ok(())
}

fn check_custom_bounds(
    bounds: &[f64],
    spans: &[Span],
    buckets: usize,
) -> Result<(), HistogramError> {
    use HistogramErrorKind::*;
    let mut prev = f64::NEG_INFINITY;
    for (i, &b) in bounds.iter().enumerate() {
        if b.is_nan() {
            return Err(HistogramError::new(CustomBucketsNaN, None));
        }
        if i > 0 && b <= prev {
            let d = format!(
                "previous bound is {} and current is {}",
                fixed6(prev),
                fixed6(b)
            );
            return Err(HistogramError::new(CustomBucketsInvalid, Some(d)));
        }
        prev = b;
    }
    if prev == f64::INFINITY {
        let d = "last +Inf bound must not be explicitly defined".to_string();
        return Err(HistogramError::new(CustomBucketsInfinite, Some(d)));
    }
    let (mut in_spans, mut total) = (0usize, 0i64);
    for (n, span) in spans.iter().enumerate() {
        if span.offset < 0 {
            let d = format!("span number {} with offset {}", n + 1, span.offset);
            return Err(HistogramError::new(SpanNegativeOffset, Some(d)));
        }
        in_spans += span.length as usize;
        total += i64::from(span.length) + i64::from(span.offset);
    }
    if in_spans != buckets {
        let d = format!("spans need {in_spans} buckets, have {buckets} buckets");
        return Err(HistogramError::new(SpansBucketsMismatch, Some(d)));
    }
    if (bounds.len() as i64 + 1) < total {
        let d = format!(
            "only {} custom bounds defined which is insufficient to cover total span length of {total}",
            bounds.len()
        );
        return Err(HistogramError::new(CustomBucketsMismatch, Some(d)));
    }
    Ok(())
}

/// Go's `%f`: six decimals, `+Inf`/`-Inf`/`NaN` spelled as Go does.
fn fixed6(f: f64) -> String {
    if f.is_finite() {
        format!("{f:.6}")
    } else {
        format_g(f)
    }
}

/// Sums delta-encoded counts into `total` (wrapping as Go's integers do),
/// refusing a negative bucket.
fn check_delta_buckets(buckets: &[i64], total: &mut u64) -> Result<(), HistogramError> {
    let mut current: i64 = 0;
    for (i, &d) in buckets.iter().enumerate() {
        current = current.wrapping_add(d);
        if current < 0 {
            let detail = format!("bucket number {} has observation count of {current}", i + 1);
            return Err(HistogramError::new(
                HistogramErrorKind::NegativeBucketCount,
                Some(detail),
            ));
        }
        *total = total.wrapping_add(current as u64);
    }
    Ok(())
}

fn check_float_buckets(buckets: &[f64]) -> Result<(), HistogramError> {
    for (i, &c) in buckets.iter().enumerate() {
        if c < 0.0 {
            let detail = format!(
                "bucket number {} has observation count of {}",
                i + 1,
                format_g(c)
            );
            return Err(HistogramError::new(
                HistogramErrorKind::NegativeBucketCount,
                Some(detail),
            ));
        }
    }
    Ok(())
}

/// The checks common to both kinds on the schema-specific fields.
fn check_layout<C: PartialEq + Default>(
    schema: i32,
    zero: (f64, &C),
    positive: (&[Span], usize),
    negative: (&[Span], usize),
    custom_values: &[f64],
) -> Result<(), HistogramError> {
    use HistogramErrorKind::*;
    if is_custom_buckets_schema(schema) {
        check_custom_bounds(custom_values, positive.0, positive.1)
            .map_err(|e| e.within("custom buckets"))?;
        if *zero.1 != C::default() {
            return Err(HistogramError::new(CustomBucketsZeroCount, None));
        }
        if zero.0 != 0.0 {
            return Err(HistogramError::new(CustomBucketsZeroThreshold, None));
        }
        if !negative.0.is_empty() {
            return Err(HistogramError::new(CustomBucketsNegativeSpans, None));
        }
        if negative.1 > 0 {
            return Err(HistogramError::new(CustomBucketsNegativeBuckets, None));
        }
        Ok(())
    } else if is_exponential_schema(schema) {
        check_spans(positive.0, positive.1).map_err(|e| e.within("positive side"))?;
        check_spans(negative.0, negative.1).map_err(|e| e.within("negative side"))?;
        Ok(())
    } else {
        let mut e = HistogramError::new(InvalidSchema, None);
        e.message = format!("{}, got schema {schema}", e.message);
        Err(e)
    }
}

impl Histogram {
    /// Whether the histogram has custom bucket bounds (schema -53).
    pub fn uses_custom_buckets(&self) -> bool {
        is_custom_buckets_schema(self.schema)
    }

    /// Whether this is a staleness marker (its sum is the stale NaN).
    pub fn is_stale(&self) -> bool {
        is_stale_nan(self.sum)
    }

    /// Prometheus' `Validate`: spans agree with buckets, no negative
    /// counts, the schema's own rules, and the count equals the buckets'
    /// total (at least it, when the sum is NaN).
    pub fn validate(&self) -> Result<(), HistogramError> {
        check_layout(
            self.schema,
            (self.zero_threshold, &self.zero_count),
            (&self.positive_spans, self.positive_buckets.len()),
            (&self.negative_spans, self.negative_buckets.len()),
            &self.custom_values,
        )?;
        let mut in_buckets = 0u64;
        if is_exponential_schema(self.schema) {
            check_delta_buckets(&self.negative_buckets, &mut in_buckets)
                .map_err(|e| e.within("negative side"))?;
            if !self.custom_values.is_empty() {
                return Err(HistogramError::new(
                    HistogramErrorKind::ExponentialSchemaCustomBounds,
                    None,
                ));
            }
        }
        check_delta_buckets(&self.positive_buckets, &mut in_buckets)
            .map_err(|e| e.within("positive side"))?;
        let in_buckets = in_buckets.wrapping_add(self.zero_count);
        let (ok, kind) = if self.sum.is_nan() {
            (
                in_buckets <= self.count,
                HistogramErrorKind::CountNotBigEnough,
            )
        } else {
            (in_buckets == self.count, HistogramErrorKind::CountMismatch)
        };
        if !ok {
            let d = format!(
                "{in_buckets} observations found in buckets, but the Count field is {}",
                self.count
            );
            return Err(HistogramError::new(kind, Some(d)));
        }
        Ok(())
    }

    /// The same histogram with float counts (bucket deltas summed up).
    pub fn to_float(&self) -> FloatHistogram {
        let custom = self.uses_custom_buckets();
        FloatHistogram {
            counter_reset_hint: self.counter_reset_hint,
            schema: self.schema,
            zero_threshold: if custom { 0.0 } else { self.zero_threshold },
            zero_count: if custom { 0.0 } else { self.zero_count as f64 },
            count: self.count as f64,
            sum: self.sum,
            positive_spans: self.positive_spans.clone(),
            negative_spans: if custom {
                Vec::new()
            } else {
                self.negative_spans.clone()
            },
            positive_buckets: absolute_counts(&self.positive_buckets),
            negative_buckets: if custom {
                Vec::new()
            } else {
                absolute_counts(&self.negative_buckets)
            },
            custom_values: if custom {
                self.custom_values.clone()
            } else {
                Vec::new()
            },
        }
    }
}

/// Delta-encoded integer counts as absolute float counts.
fn absolute_counts(deltas: &[i64]) -> Vec<f64> {
    let mut current = 0.0;
    deltas
        .iter()
        .map(|&d| {
            current += d as f64;
            current
        })
        .collect()
}

impl FloatHistogram {
    /// Whether the histogram has custom bucket bounds (schema -53).
    pub fn uses_custom_buckets(&self) -> bool {
        is_custom_buckets_schema(self.schema)
    }

    /// Whether this is a staleness marker (its sum is the stale NaN).
    pub fn is_stale(&self) -> bool {
        is_stale_nan(self.sum)
    }

    /// Prometheus' `Validate` for float histograms: spans agree with
    /// buckets, no negative counts, the schema's own rules (the count is
    /// not checked against the buckets).
    pub fn validate(&self) -> Result<(), HistogramError> {
        use HistogramErrorKind::*;
        check_layout(
            self.schema,
            (self.zero_threshold, &self.zero_count),
            (&self.positive_spans, self.positive_buckets.len()),
            (&self.negative_spans, self.negative_buckets.len()),
            &self.custom_values,
        )?;
        if is_exponential_schema(self.schema) {
            check_float_buckets(&self.negative_buckets).map_err(|e| e.within("negative side"))?;
            if self.zero_count < 0.0 {
                let d = format!(
                    "zero bucket has observation count of {}",
                    format_g(self.zero_count)
                );
                return Err(HistogramError::new(NegativeBucketCount, Some(d)));
            }
            if !self.custom_values.is_empty() {
                return Err(HistogramError::new(ExponentialSchemaCustomBounds, None));
            }
        }
        if self.count < 0.0 {
            let d = format!("observation count is  {}", format_g(self.count));
            return Err(HistogramError::new(NegativeCount, Some(d)));
        }
        check_float_buckets(&self.positive_buckets).map_err(|e| e.within("positive side"))
    }
}

/// Whether two spans lists describe the same bucket layout, once empty
/// spans are folded into the next non-empty one (their offsets add up).
pub fn spans_match(a: &[Span], b: &[Span]) -> bool {
    let mut a = folded_spans(a);
    let mut b = folded_spans(b);
    loop {
        match (a.next(), b.next()) {
            (None, None) => return true,
            (Some(x), Some(y)) if x == y => {}
            _ => return false,
        }
    }
}

/// The non-empty spans of a list, each with the offsets of the empty spans
/// before it added to its own.
fn folded_spans(spans: &[Span]) -> impl Iterator<Item = Span> + '_ {
    let mut carry = 0i64;
    spans.iter().filter_map(move |s| {
        let offset = carry + i64::from(s.offset);
        if s.length == 0 {
            carry = offset;
            return None;
        }
        carry = 0;
        Some(Span {
            // Sums of i32 offsets that leave i32 cannot describe buckets.
            offset: i32::try_from(offset).unwrap_or(i32::MAX),
            length: s.length,
        })
    })
}

/// Prometheus' `Histogram.Equals`: the same schema, counts, zero bucket,
/// custom bounds, bucket layout (empty spans aside) and bucket deltas, and
/// the same sum bit for bit (this is about data, not arithmetic: a stale
/// marker equals a stale marker).
pub fn same_histogram(a: &Histogram, b: &Histogram) -> bool {
    a.schema == b.schema
        && a.count == b.count
        && a.sum.to_bits() == b.sum.to_bits()
        && (!a.uses_custom_buckets() || a.custom_values == b.custom_values)
        && a.zero_threshold == b.zero_threshold
        && a.zero_count == b.zero_count
        && spans_match(&a.negative_spans, &b.negative_spans)
        && a.negative_buckets == b.negative_buckets
        && spans_match(&a.positive_spans, &b.positive_spans)
        && a.positive_buckets == b.positive_buckets
}

impl fmt::Display for CounterResetHint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CounterResetHint::Unknown => "UnknownCounterReset",
            CounterResetHint::CounterReset => "CounterReset",
            CounterResetHint::NotCounterReset => "NotCounterReset",
            CounterResetHint::Gauge => "GaugeType",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Histogram {
        Histogram {
            schema: 0,
            zero_threshold: 0.001,
            zero_count: 2,
            count: 10,
            sum: 18.4,
            positive_spans: vec![
                Span {
                    offset: 0,
                    length: 2,
                },
                Span {
                    offset: 1,
                    length: 2,
                },
            ],
            positive_buckets: vec![1, 1, -1, 0],
            negative_spans: vec![Span {
                offset: 0,
                length: 2,
            }],
            negative_buckets: vec![1, 1],
            ..Histogram::default()
        }
    }

    #[test]
    fn a_consistent_histogram_validates() {
        let h = sample();
        assert_eq!(h.validate(), Ok(()));
        assert_eq!(h.to_float().validate(), Ok(()));
    }

    #[test]
    fn to_float_sums_deltas() {
        let f = sample().to_float();
        assert_eq!(f.positive_buckets, vec![1.0, 2.0, 1.0, 1.0]);
        assert_eq!(f.negative_buckets, vec![1.0, 2.0]);
        assert_eq!((f.count, f.zero_count), (10.0, 2.0));
    }

    #[test]
    fn errors_read_as_prometheus_writes_them() {
        let mut h = sample();
        h.count = 11;
        assert_eq!(
            h.validate().map_err(|e| e.message),
            Err("10 observations found in buckets, but the Count field is 11: histogram's observation count should equal the number of observations found in the buckets (in absence of NaN)".into())
        );
        h.sum = f64::NAN;
        h.count = 9;
        assert_eq!(
            h.validate().map_err(|e| e.kind),
            Err(HistogramErrorKind::CountNotBigEnough)
        );
        h.count = 13;
        assert_eq!(h.validate(), Ok(()));

        let mut h = sample();
        h.positive_buckets.push(1);
        assert_eq!(
            h.validate().map_err(|e| e.message),
            Err("positive side: spans need 4 buckets, have 5 buckets: histogram spans specify different number of buckets than provided".into())
        );
        let mut h = sample();
        h.negative_buckets = vec![1, -2];
        assert_eq!(
            h.validate().map_err(|e| e.message),
            Err("negative side: bucket number 2 has observation count of -1: histogram has a bucket whose observation count is negative".into())
        );
        let mut h = sample();
        h.schema = 9;
        assert_eq!(
            h.validate().map_err(|e| e.message),
            Err("histogram has an invalid schema, which must be between -4 and 8 for exponential buckets, or -53 for custom buckets, got schema 9".into())
        );
    }

    #[test]
    fn custom_buckets_rules() {
        let nhcb = Histogram {
            schema: CUSTOM_BUCKETS_SCHEMA,
            count: 3,
            sum: 2.0,
            positive_spans: vec![Span {
                offset: 0,
                length: 3,
            }],
            positive_buckets: vec![1, 0, 0],
            custom_values: vec![0.5, 1.0],
            ..Histogram::default()
        };
        assert_eq!(nhcb.validate(), Ok(()));
        let mut h = nhcb.clone();
        h.custom_values = vec![1.0, 0.5];
        assert_eq!(
            h.validate().map_err(|e| e.message),
            Err("custom buckets: previous bound is 1.000000 and current is 0.500000: histogram custom bounds must be in strictly increasing order".into())
        );
        let mut h = nhcb.clone();
        h.custom_values = vec![0.5];
        assert_eq!(
            h.validate().map_err(|e| e.kind),
            Err(HistogramErrorKind::CustomBucketsMismatch)
        );
        let mut h = nhcb.clone();
        h.custom_values.push(f64::INFINITY);
        assert_eq!(
            h.validate().map_err(|e| e.kind),
            Err(HistogramErrorKind::CustomBucketsInfinite)
        );
        let mut h = nhcb;
        h.zero_count = 1;
        assert_eq!(
            h.validate().map_err(|e| e.kind),
            Err(HistogramErrorKind::CustomBucketsZeroCount)
        );
        let mut h = sample();
        h.custom_values = vec![1.0];
        assert_eq!(
            h.validate().map_err(|e| e.kind),
            Err(HistogramErrorKind::ExponentialSchemaCustomBounds)
        );
    }

    #[test]
    fn span_index_range() {
        let mut h = Histogram {
            positive_spans: vec![Span {
                offset: i32::MAX,
                length: 2,
            }],
            positive_buckets: vec![0, 0],
            ..Histogram::default()
        };
        assert_eq!(
            h.validate().map_err(|e| e.kind),
            Err(HistogramErrorKind::SpanIndexOutOfRange)
        );
        h.positive_spans[0].offset = i32::MIN;
        assert_eq!(
            h.validate().map_err(|e| e.kind),
            Err(HistogramErrorKind::SpanIndexOutOfRange)
        );
    }

    #[test]
    fn equality_as_prometheus_defines_it() {
        let h = sample();
        assert!(same_histogram(&h, &h.clone()));
        // Empty spans in between describe the same layout.
        let mut g = h.clone();
        g.positive_spans = vec![
            Span {
                offset: 0,
                length: 2,
            },
            Span {
                offset: 1,
                length: 0,
            },
            Span {
                offset: 0,
                length: 2,
            },
        ];
        assert!(same_histogram(&h, &g));
        g.positive_spans.push(Span {
            offset: 3,
            length: 0,
        });
        assert!(same_histogram(&h, &g));
        g.positive_spans[2].offset = 1;
        assert!(!same_histogram(&h, &g));
        // The hint does not matter; the sum's bits do.
        let mut g = h.clone();
        g.counter_reset_hint = CounterResetHint::CounterReset;
        assert!(same_histogram(&h, &g));
        g.sum = f64::NAN;
        let mut k = g.clone();
        assert!(same_histogram(&g, &k));
        k.sum = -f64::NAN;
        assert!(!same_histogram(&g, &k));
        let f = h.to_float();
        assert!(f.equals(&f.clone()));
        let mut e = f.clone();
        e.positive_buckets[0] = 1.5;
        assert!(!f.equals(&e));
    }

    #[test]
    fn float_histogram_rules() {
        let mut f = sample().to_float();
        f.zero_count = -1.0;
        assert_eq!(
            f.validate().map_err(|e| e.message),
            Err("zero bucket has observation count of -1: histogram has a bucket whose observation count is negative".into())
        );
        let mut f = sample().to_float();
        f.count = -2.5;
        assert_eq!(
            f.validate().map_err(|e| e.kind),
            Err(HistogramErrorKind::NegativeCount)
        );
    }
}
