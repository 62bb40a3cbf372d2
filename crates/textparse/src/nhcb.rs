//! A classic histogram converted to a native histogram with custom buckets
//! (NHCB, schema -53), as Prometheus v3.16.0 converts one
//! (`util/convertnhcb`) for `convert_classic_histograms_to_nhcb`.
//!
//! [`ClassicHistogram`] collects a classic histogram's `_bucket`, `_count`
//! and `_sum` values in any order, then [`ClassicHistogram::convert`]
//! builds the native histogram:
//! - buckets are kept sorted by their upper bound (`le`); a repeated bound
//!   is ignored; a NaN bound, a negative count or a bucket whose cumulative
//!   count is below the one before it (or above the one after it) is an
//!   error, which sticks until [`ClassicHistogram::reset`];
//! - without a count, the count is the highest bucket's (no bucket and no
//!   count is an error); without a `+Inf` bucket, one is added holding
//!   the count; the `+Inf` bucket's count must equal the count;
//! - the finite bounds are the `custom_values`; bucket `i` holds the
//!   observations above bound `i - 1` up to bound `i`;
//! - an integer histogram when every count is a whole number (in range),
//!   with empty buckets cut out unless they are runs of at most two
//!   between non-empty ones (`Compact(2)`), else a float histogram with
//!   every empty bucket cut out (`Compact(0)`); either must then pass
//!   Prometheus' validation.
//!
//! Errors carry Prometheus' messages ([`NhcbError`]): the protobuf parser
//! fails the scrape with them, the text formats' conversion drops the
//! histogram silently.

use ferrite_model::gofloat::format_g;
use ferrite_model::histogram::CUSTOM_BUCKETS_SCHEMA;
use ferrite_model::{CounterResetHint, FloatHistogram, Histogram, HistogramError, Span};

use crate::protobuf::HistogramKind;

/// 2^63: the first float beyond Go's `int64`.
const TWO_POW_63: f64 = 9_223_372_036_854_775_808.0;
/// 2^64: the first float beyond Go's `uint64`.
const TWO_POW_64: f64 = 18_446_744_073_709_551_616.0;

/// The longest run of empty buckets an integer NHCB keeps between two
/// non-empty ones (Prometheus' `Compact(2)`); a float one keeps none.
const INT_MAX_EMPTY_RUN: usize = 2;

/// Why a classic histogram could not be converted (Prometheus' messages).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum NhcbError {
    /// A bucket with a NaN upper bound.
    #[error("bucket boundary must not be NaN")]
    NaNBound,
    /// A bucket with a negative count.
    #[error("bucket count must be non-negative: le={}, count={}", format_g(*le), format_g(*count))]
    NegativeBucketCount {
        /// The bucket's bound.
        le: f64,
        /// Its count.
        count: f64,
    },
    /// A negative `_count`.
    #[error("count must be non-negative: count={}", format_g(*.0))]
    NegativeCount(f64),
    /// No bucket and no `_count`.
    #[error("count must be provided when no buckets are present")]
    MissingCount,
    /// A bucket's count below the one of the bucket below it.
    #[error("count is not cumulative: {} < {}", format_g(*count), format_g(*below))]
    BelowLower {
        /// The bucket's count.
        count: f64,
        /// The count of the bucket below.
        below: f64,
    },
    /// A bucket's count above the one of the bucket above it.
    #[error("count is not cumulative: {} > {}", format_g(*count), format_g(*above))]
    AboveUpper {
        /// The bucket's count.
        count: f64,
        /// The count of the bucket above.
        above: f64,
    },
    /// An integer histogram's count other than its `+Inf` bucket's.
    #[error("count mismatch: count={count} != le={} count={}", format_g(*le), format_g(*last))]
    IntCountMismatch {
        /// The histogram's count.
        count: u64,
        /// The highest bucket's bound (`+Inf`).
        le: f64,
        /// Its count.
        last: f64,
    },
    /// A float histogram's count other than its `+Inf` bucket's.
    #[error("count mismatch: count={} != le={} count={}", format_g(*count), format_g(*le), format_g(*last))]
    FloatCountMismatch {
        /// The histogram's count.
        count: f64,
        /// The highest bucket's bound (`+Inf`).
        le: f64,
        /// Its count.
        last: f64,
    },
    /// The integer histogram fails validation.
    #[error("invalid histogram: {0}")]
    Invalid(HistogramError),
    /// The float histogram fails validation.
    #[error("invalid float histogram: {0}")]
    InvalidFloat(HistogramError),
}

/// One classic bucket: its upper bound and cumulative count.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Bucket {
    le: f64,
    count: f64,
}

/// A classic histogram being collected (Prometheus' `TempHistogram`);
/// see the module documentation. Its vectors are reused across
/// [`ClassicHistogram::reset`]s.
#[derive(Debug, Clone, Default)]
pub struct ClassicHistogram {
    /// Sorted by bound, no bound twice.
    buckets: Vec<Bucket>,
    count: f64,
    sum: f64,
    has_count: bool,
    /// The first error; later values are ignored.
    err: Option<NhcbError>,
}

impl ClassicHistogram {
    /// An empty histogram.
    pub fn new() -> Self {
        Self::default()
    }

    /// Forgets everything collected (the allocation kept).
    pub fn reset(&mut self) {
        self.buckets.clear();
        self.count = 0.0;
        self.sum = 0.0;
        self.has_count = false;
        self.err = None;
    }

    /// Whether nothing was collected since the last reset.
    pub fn is_empty(&self) -> bool {
        self.buckets.is_empty() && !self.has_count && self.sum == 0.0 && self.err.is_none()
    }

    /// Keeps `err` as the histogram's error and returns it.
    fn fail(&mut self, err: NhcbError) -> Result<(), NhcbError> {
        self.err = Some(err.clone());
        Err(err)
    }

    /// The error collected so far, if any.
    fn sticky(&self) -> Result<(), NhcbError> {
        match &self.err {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    /// A bucket's cumulative `count` up to `le`, in any order.
    pub fn set_bucket_count(&mut self, le: f64, count: f64) -> Result<(), NhcbError> {
        self.sticky()?;
        if le.is_nan() {
            return self.fail(NhcbError::NaNBound);
        }
        if count < 0.0 {
            return self.fail(NhcbError::NegativeBucketCount { le, count });
        }
        let Some(last) = self.buckets.last().copied() else {
            self.buckets.push(Bucket { le, count });
            return Ok(());
        };
        if last.le < le {
            if count < last.count {
                let below = last.count;
                return self.fail(NhcbError::BelowLower { count, below });
            }
            self.buckets.push(Bucket { le, count });
            return Ok(());
        }
        if last.le == le {
            return Ok(()); // A repeated bucket.
        }
        let i = self.buckets.partition_point(|b| b.le < le);
        let above = self.buckets[i];
        if above.le == le {
            return Ok(());
        }
        if let Some(below) = i.checked_sub(1).map(|j| self.buckets[j].count) {
            if count < below {
                return self.fail(NhcbError::BelowLower { count, below });
            }
        }
        if count > above.count {
            let above = above.count;
            return self.fail(NhcbError::AboveUpper { count, above });
        }
        self.buckets.insert(i, Bucket { le, count });
        Ok(())
    }

    /// The `_count` value.
    pub fn set_count(&mut self, count: f64) -> Result<(), NhcbError> {
        self.sticky()?;
        if count < 0.0 {
            return self.fail(NhcbError::NegativeCount(count));
        }
        self.count = count;
        self.has_count = true;
        Ok(())
    }

    /// The `_sum` value.
    pub fn set_sum(&mut self, sum: f64) -> Result<(), NhcbError> {
        self.sticky()?;
        self.sum = sum;
        Ok(())
    }

    /// Converts what was collected into one of the buffers (its vectors
    /// reused) and says which; then resets. The histogram's counter reset
    /// hint is left unknown.
    pub fn convert(
        &mut self,
        int: &mut Histogram,
        float: &mut FloatHistogram,
    ) -> Result<HistogramKind, NhcbError> {
        let result = self.convert_collected(int, float);
        self.reset();
        result
    }

    fn convert_collected(
        &mut self,
        int: &mut Histogram,
        float: &mut FloatHistogram,
    ) -> Result<HistogramKind, NhcbError> {
        self.sticky()?;
        if !self.has_count {
            let last = self.buckets.last().ok_or(NhcbError::MissingCount)?;
            self.count = last.count;
        }
        if !matches!(self.buckets.last(), Some(b) if b.le == f64::INFINITY) {
            let count = self.count;
            self.buckets.push(Bucket {
                le: f64::INFINITY,
                count,
            });
        }
        let whole = self.buckets.iter().all(|b| fits_i64(b.count)) && fits_u64(self.count);
        if whole {
            self.fill_int(int)?;
            Ok(HistogramKind::Int)
        } else {
            self.fill_float(float)?;
            Ok(HistogramKind::Float)
        }
    }

    /// The finite bounds (every bucket's but the last, `+Inf`).
    fn custom_values(&self, out: &mut Vec<f64>) {
        out.clear();
        let finite = &self.buckets[..self.buckets.len() - 1];
        out.extend(finite.iter().map(|b| b.le));
    }

    fn fill_int(&self, h: &mut Histogram) -> Result<(), NhcbError> {
        // Every count fits an i64 (checked by the caller).
        let cumulative = |i: usize| self.buckets[i].count as i64;
        let absolute = |i: usize| {
            let below = i.checked_sub(1).map_or(0, cumulative);
            cumulative(i).wrapping_sub(below)
        };
        h.counter_reset_hint = CounterResetHint::Unknown;
        h.schema = CUSTOM_BUCKETS_SCHEMA;
        h.zero_threshold = 0.0;
        h.zero_count = 0;
        h.count = self.count as u64;
        h.sum = self.sum;
        h.negative_spans.clear();
        h.negative_buckets.clear();
        self.custom_values(&mut h.custom_values);
        let last = self.buckets[self.buckets.len() - 1];
        if h.count != last.count as u64 {
            return Err(NhcbError::IntCountMismatch {
                count: h.count,
                le: last.le,
                last: last.count,
            });
        }
        h.positive_buckets.clear();
        let mut previous = 0i64;
        let buckets = &mut h.positive_buckets;
        compact_layout(
            |i| absolute(i) == 0,
            self.buckets.len(),
            INT_MAX_EMPTY_RUN,
            &mut h.positive_spans,
            |i| {
                let a = absolute(i);
                buckets.push(a.wrapping_sub(previous));
                previous = a;
            },
        );
        h.validate().map_err(NhcbError::Invalid)
    }

    fn fill_float(&self, h: &mut FloatHistogram) -> Result<(), NhcbError> {
        let absolute = |i: usize| {
            let below = i.checked_sub(1).map_or(0.0, |j| self.buckets[j].count);
            self.buckets[i].count - below
        };
        h.counter_reset_hint = CounterResetHint::Unknown;
        h.schema = CUSTOM_BUCKETS_SCHEMA;
        h.zero_threshold = 0.0;
        h.zero_count = 0.0;
        h.count = self.count;
        h.sum = self.sum;
        h.negative_spans.clear();
        h.negative_buckets.clear();
        self.custom_values(&mut h.custom_values);
        let last = self.buckets[self.buckets.len() - 1];
        if h.count != last.count {
            return Err(NhcbError::FloatCountMismatch {
                count: h.count,
                le: last.le,
                last: last.count,
            });
        }
        h.positive_buckets.clear();
        let buckets = &mut h.positive_buckets;
        compact_layout(
            |i| absolute(i) == 0.0,
            self.buckets.len(),
            0,
            &mut h.positive_spans,
            |i| buckets.push(absolute(i)),
        );
        h.validate().map_err(NhcbError::InvalidFloat)
    }
}

/// Whether Go's `float64(int64(math.Round(c))) == c` on amd64: a whole
/// number an `int64` holds.
fn fits_i64(c: f64) -> bool {
    c.fract() == 0.0 && (-TWO_POW_63..TWO_POW_63).contains(&c)
}

/// Whether Go's `float64(uint64(math.Round(c))) == c` on amd64 (for the
/// non-negative counts it is asked about): a whole number a `uint64` holds.
fn fits_u64(c: f64) -> bool {
    c.fract() == 0.0 && (0.0..TWO_POW_64).contains(&c)
}

/// The spans of `n` buckets in one run from index 0 once empty ones are cut
/// out as Prometheus' `Compact(max_empty)` cuts them: every empty bucket
/// before the first non-empty one and after the last, and runs of more
/// than `max_empty` empty ones between two (which split the span).
/// `keep` gets the index of every bucket kept, in order.
fn compact_layout(
    empty: impl Fn(usize) -> bool,
    n: usize,
    max_empty: usize,
    spans: &mut Vec<Span>,
    mut keep: impl FnMut(usize),
) {
    spans.clear();
    let mut last_kept: Option<usize> = None;
    for i in (0..n).filter(|&i| !empty(i)) {
        match last_kept {
            None => spans.push(Span {
                offset: span_len(i) as i32,
                length: 1,
            }),
            Some(prev) => {
                let run = i - prev - 1;
                match spans.last_mut() {
                    Some(span) if run <= max_empty => {
                        (prev + 1..i).for_each(&mut keep);
                        span.length += span_len(run + 1);
                    }
                    _ => spans.push(Span {
                        offset: span_len(run) as i32,
                        length: 1,
                    }),
                }
            }
        }
        keep(i);
        last_kept = Some(i);
    }
}

/// A bucket count as a span length (a body cannot hold 2^32 buckets of
/// one histogram; saturated if it could).
fn span_len(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrite_model::histogram_record::{float_record, int_record};

    /// Converts `buckets` (bound, count), `count` and `sum`, set in that
    /// order; the record of the result, or the error's message.
    fn convert(buckets: &[(f64, f64)], count: Option<f64>, sum: f64) -> String {
        let mut c = ClassicHistogram::new();
        for &(le, n) in buckets {
            let _ = c.set_bucket_count(le, n);
        }
        if let Some(n) = count {
            let _ = c.set_count(n);
        }
        let _ = c.set_sum(sum);
        let (mut int, mut float) = (Histogram::default(), FloatHistogram::default());
        let kind = c.convert(&mut int, &mut float);
        assert!(c.is_empty(), "reset after converting");
        match kind {
            Ok(HistogramKind::Int) => int_record(&int),
            Ok(HistogramKind::Float) => float_record(&float),
            Err(e) => format!("error: {e}"),
        }
    }

    fn int(counts: &[f64], bounds: &[f64], count: u64) -> Histogram {
        let mut c = ClassicHistogram::new();
        for (&le, &n) in bounds.iter().zip(counts) {
            c.set_bucket_count(le, n).expect("bucket");
        }
        c.set_count(count as f64).expect("count");
        let (mut h, mut f) = (Histogram::default(), FloatHistogram::default());
        assert_eq!(c.convert(&mut h, &mut f), Ok(HistogramKind::Int));
        h
    }

    #[test]
    fn buckets_in_any_order_become_custom_buckets() {
        let inf = f64::INFINITY;
        let sorted = convert(
            &[(0.5, 1.0), (1.0, 3.0), (2.0, 3.0), (inf, 6.0)],
            Some(6.0),
            7.5,
        );
        let shuffled = convert(
            &[(2.0, 3.0), (inf, 6.0), (0.5, 1.0), (1.0, 3.0)],
            Some(6.0),
            7.5,
        );
        assert_eq!(sorted, shuffled);
        let h = int(&[1.0, 3.0, 3.0, 6.0], &[0.5, 1.0, 2.0, inf], 6);
        assert_eq!(h.schema, CUSTOM_BUCKETS_SCHEMA);
        assert_eq!(h.custom_values, vec![0.5, 1.0, 2.0]);
        // Absolute counts 1, 2, 0, 3: one empty bucket kept in the span.
        assert_eq!(
            h.positive_spans,
            vec![Span {
                offset: 0,
                length: 4
            }]
        );
        assert_eq!(h.positive_buckets, vec![1, 1, -2, 3]);
        assert_eq!((h.count, h.sum), (6, 0.0));
    }

    #[test]
    fn runs_of_empty_buckets_are_cut_as_prometheus_compacts() {
        let b = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0];
        // Absolute 0 0 2 0 0 0 1 0 (last +Inf): leading run cut into the
        // offset, a run of three splits the span, the trailing one goes.
        let h = int(&[0.0, 0.0, 2.0, 2.0, 2.0, 2.0, 3.0], &b, 3);
        assert_eq!(
            h.positive_spans,
            vec![
                Span {
                    offset: 2,
                    length: 1
                },
                Span {
                    offset: 3,
                    length: 1
                }
            ]
        );
        assert_eq!(h.positive_buckets, vec![2, -1]);
        assert_eq!(h.custom_values, b.to_vec());
        // A run of two stays in the span.
        let h = int(&[1.0, 1.0, 1.0, 2.0], &b[..4], 2);
        assert_eq!(
            h.positive_spans,
            vec![Span {
                offset: 0,
                length: 4
            }]
        );
        assert_eq!(h.positive_buckets, vec![1, -1, 0, 1]);
        // Nothing observed: no buckets at all, the bounds kept.
        let h = int(&[0.0, 0.0], &b[..2], 0);
        assert!(h.positive_spans.is_empty() && h.positive_buckets.is_empty());
        assert_eq!(h.custom_values, vec![1.0, 2.0]);
        // A float histogram keeps no empty bucket.
        assert_eq!(
            convert(&[(1.0, 0.5), (2.0, 0.5), (3.0, 1.5)], Some(1.5), 1.0),
            convert(&[(1.0, 0.5), (3.0, 1.5), (2.0, 0.5)], Some(1.5), 1.0),
        );
        let mut c = ClassicHistogram::new();
        for (le, n) in [(1.0, 0.5), (2.0, 0.5), (3.0, 1.5)] {
            c.set_bucket_count(le, n).expect("bucket");
        }
        let (mut h, mut f) = (Histogram::default(), FloatHistogram::default());
        assert_eq!(c.convert(&mut h, &mut f), Ok(HistogramKind::Float));
        assert_eq!(
            f.positive_spans,
            vec![
                Span {
                    offset: 0,
                    length: 1
                },
                Span {
                    offset: 1,
                    length: 1
                }
            ]
        );
        assert_eq!(f.positive_buckets, vec![0.5, 1.0]);
        assert_eq!(f.count, 1.5, "the count of the highest bucket");
    }

    #[test]
    fn missing_inf_bucket_holds_the_count() {
        let h = int(&[1.0, 2.0], &[1.0, 2.0], 5);
        assert_eq!(h.positive_buckets, vec![1, 0, 2]);
        assert_eq!(h.count, 5);
        // Below the highest bucket: the +Inf bucket would be negative.
        assert_eq!(
            convert(&[(1.0, 1.0), (2.0, 4.0)], Some(3.0), 0.0),
            "error: invalid histogram: positive side: bucket number 3 has observation count \
             of -1: histogram has a bucket whose observation count is negative"
        );
    }

    #[test]
    fn errors_are_prometheus_messages() {
        let inf = f64::INFINITY;
        assert_eq!(
            convert(&[(1.0, 2.0), (2.0, 1.0)], Some(2.0), 0.0),
            "error: count is not cumulative: 1 < 2"
        );
        assert_eq!(
            convert(&[(1.0, 2.0), (3.0, 4.0), (2.0, 5.0)], Some(4.0), 0.0),
            "error: count is not cumulative: 5 > 4"
        );
        assert_eq!(
            convert(&[(f64::NAN, 2.0)], Some(2.0), 0.0),
            "error: bucket boundary must not be NaN"
        );
        assert_eq!(
            convert(&[(1.5, -2.0)], Some(2.0), 0.0),
            "error: bucket count must be non-negative: le=1.5, count=-2"
        );
        assert_eq!(
            convert(&[], Some(-1.0), 0.0),
            "error: count must be non-negative: count=-1"
        );
        assert_eq!(
            convert(&[], None, 1.0),
            "error: count must be provided when no buckets are present"
        );
        assert_eq!(
            convert(&[(1.0, 1.0), (inf, 3.0)], Some(4.0), 0.0),
            "error: count mismatch: count=4 != le=+Inf count=3"
        );
        assert_eq!(
            convert(&[(1.0, 1.0), (inf, 3.5)], Some(4.0), 0.0),
            "error: count mismatch: count=4 != le=+Inf count=3.5"
        );
        // The first error sticks.
        let mut c = ClassicHistogram::new();
        c.set_count(-1.0).expect_err("negative");
        assert_eq!(c.set_sum(1.0), Err(NhcbError::NegativeCount(-1.0)));
        // A repeated bucket is ignored.
        assert_eq!(
            convert(&[(1.0, 1.0), (1.0, 7.0), (inf, 2.0)], None, 0.0),
            convert(&[(1.0, 1.0), (inf, 2.0)], None, 0.0)
        );
    }

    #[test]
    fn counts_beyond_int64_make_a_float_histogram() {
        let big = TWO_POW_63;
        let mut c = ClassicHistogram::new();
        c.set_bucket_count(1.0, big).expect("bucket");
        let (mut h, mut f) = (Histogram::default(), FloatHistogram::default());
        assert_eq!(c.convert(&mut h, &mut f), Ok(HistogramKind::Float));
        assert!(fits_i64(big - 1024.0) && !fits_i64(big) && !fits_i64(f64::NAN));
        assert!(fits_u64(big) && !fits_u64(TWO_POW_64) && !fits_u64(f64::INFINITY));
    }
}
