//! Trimming a float histogram at a value: PromQL's `h </ v` keeps the
//! observations below `v`, `h >/ v` those above, with Prometheus'
//! semantics (`model/histogram`'s `TrimBuckets`): a bucket that contains
//! the trim point keeps the share of its count on the kept side
//! (interpolated linearly for custom buckets, logarithmically for
//! exponential ones), buckets reaching to an infinity are kept or dropped
//! whole unless the interpolation is well-defined, and the sum is
//! re-estimated from the kept buckets' midpoints.

use crate::histogram::FloatHistogram;
use crate::histogram_ops::Bucket;

/// Which side of the trim point is kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trim {
    /// `</`: keep what is below.
    Upper,
    /// `>/`: keep what is above.
    Lower,
}

impl FloatHistogram {
    /// Removes the observations on one side of `at` (see [`Trim`]). Count
    /// and sum change only if some bucket was trimmed.
    pub fn trim_buckets(&mut self, at: f64, trim: Trim) -> &mut Self {
        let linear = self.uses_custom_buckets();
        let mut kept = Kept::default();
        let mut trimmed = false;
        let sides = [
            (self.positive_bucket_list(), true),
            (self.negative_bucket_list(), false),
        ];
        let mut present = [false, false];
        for (side, (list, positive)) in sides.into_iter().enumerate() {
            let counts = if positive {
                &mut self.positive_buckets
            } else {
                &mut self.negative_buckets
            };
            for (i, b) in list.iter().enumerate() {
                if b.count == 0.0 {
                    continue;
                }
                present[side] = true;
                let (count, mid) = trim_bucket(b, at, trim, positive, linear);
                kept.add(count, mid);
                if counts[i] != count {
                    counts[i] = count;
                    trimmed = true;
                }
            }
        }
        if self.zero_count > 0.0 {
            let (count, mid) = trim_zero_bucket(&self.zero_bucket(), at, present, trim);
            if self.zero_count != count {
                self.zero_count = count;
                trimmed = true;
            }
            kept.add(count, mid);
        }
        if trimmed {
            self.count = kept.count;
            self.sum = kept.sum;
            self.compact();
        }
        self
    }
}

/// The kept observations' count and estimated sum.
#[derive(Default)]
struct Kept {
    count: f64,
    sum: f64,
}

impl Kept {
    fn add(&mut self, count: f64, midpoint: f64) {
        self.count += count;
        self.sum += midpoint * count;
    }
}

/// The count a bucket keeps and the midpoint of its kept part.
fn trim_bucket(b: &Bucket, at: f64, trim: Trim, positive: bool, linear: bool) -> (f64, f64) {
    let (keep_all, contains) = match trim {
        Trim::Upper => (b.upper <= at, b.lower < at),
        Trim::Lower => (b.lower >= at, b.upper > at),
    };
    if keep_all {
        return (b.count, midpoint(b.lower, b.upper, positive, linear));
    }
    if !contains {
        return (0.0, 0.0);
    }
    if b.lower == f64::NEG_INFINITY || b.upper == f64::INFINITY {
        return trim_infinite_bucket(b, at, trim);
    }
    let below = if at <= b.lower {
        0.0
    } else if at >= b.upper {
        b.count
    } else {
        b.count * b.fraction_below(at, linear)
    };
    match trim {
        Trim::Upper => (below, midpoint(b.lower, at, positive, linear)),
        Trim::Lower => (b.count - below, midpoint(at, b.upper, positive, linear)),
    }
}

fn finite_or_zero(x: f64) -> f64 {
    if x.is_infinite() {
        0.0
    } else {
        x
    }
}

/// A bucket reaching to -Inf or +Inf that contains the trim point.
fn trim_infinite_bucket(b: &Bucket, at: f64, trim: Trim) -> (f64, f64) {
    if b.lower == f64::NEG_INFINITY {
        return trim_lowest_bucket(b, at, trim);
    }
    match trim {
        // Some of the bucket could lie above any point: all of it goes.
        Trim::Upper => (0.0, finite_or_zero(b.lower)),
        Trim::Lower if at >= b.lower => (b.count, at),
        Trim::Lower => (0.0, finite_or_zero(b.lower)),
    }
}

/// The bucket from -Inf (custom buckets only), treated as starting at 0
/// where its upper bound is positive and finite.
fn trim_lowest_bucket(b: &Bucket, at: f64, trim: Trim) -> (f64, f64) {
    let finite_positive_upper = b.upper > 0.0 && b.upper.is_finite();
    match trim {
        Trim::Upper if at >= b.upper => (b.count, 0.0),
        Trim::Upper if at > 0.0 && finite_positive_upper => (b.count * at / b.upper, at / 2.0),
        Trim::Upper if b.upper <= 0.0 => (b.count, at),
        Trim::Upper => (0.0, finite_or_zero(b.upper)),
        Trim::Lower if at <= b.lower => (b.count, 0.0),
        Trim::Lower if at >= 0.0 && b.upper > at && b.upper.is_finite() => {
            (b.count * (1.0 - at / b.upper), (at + b.upper) / 2.0)
        }
        Trim::Lower => (0.0, finite_or_zero(b.upper)),
    }
}

/// The zero bucket, taken as one-sided when only positive (or only
/// negative) buckets are populated.
fn trim_zero_bucket(z: &Bucket, at: f64, present: [bool; 2], trim: Trim) -> (f64, f64) {
    let [has_positive, has_negative] = present;
    let lower = if has_positive && !has_negative {
        0.0
    } else {
        z.lower
    };
    let upper = if has_negative && !has_positive {
        0.0
    } else {
        z.upper
    };
    let width = upper - lower;
    match trim {
        Trim::Upper if at <= lower => (0.0, 0.0),
        Trim::Upper if at >= upper => (z.count, (lower + upper) / 2.0),
        Trim::Upper => (z.count * (at - lower) / width, (lower + at) / 2.0),
        Trim::Lower if at <= lower => (z.count, (lower + upper) / 2.0),
        Trim::Lower if at >= upper => (0.0, 0.0),
        Trim::Lower => (z.count * (upper - at) / width, (at + upper) / 2.0),
    }
}

/// Where the observations of [lower, upper] are taken to be: the middle
/// (arithmetic for linear buckets, geometric for exponential ones).
fn midpoint(lower: f64, upper: f64, positive: bool, linear: bool) -> f64 {
    match (lower.is_infinite(), upper.is_infinite()) {
        (true, true) => 0.0,
        (true, false) if upper > 0.0 => upper / 2.0,
        (true, false) => upper,
        (false, true) => lower,
        (false, false) if linear => (lower + upper) / 2.0,
        (false, false) => {
            let g = (lower * upper).abs().sqrt();
            if positive {
                g
            } else {
                -g
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::histogram::Span;

    fn custom(bounds: &[f64], counts: &[f64]) -> FloatHistogram {
        FloatHistogram {
            schema: crate::histogram::CUSTOM_BUCKETS_SCHEMA,
            count: counts.iter().sum(),
            sum: 0.0,
            positive_spans: vec![Span {
                offset: 0,
                length: counts.len() as u32,
            }],
            positive_buckets: counts.to_vec(),
            custom_values: bounds.to_vec(),
            ..FloatHistogram::default()
        }
    }

    #[test]
    fn trims_custom_buckets_linearly() {
        // Buckets (-Inf, 10], (10, 20], (20, +Inf).
        let mut h = custom(&[10.0, 20.0], &[4.0, 4.0, 0.0]);
        h.trim_buckets(15.0, Trim::Upper);
        assert_eq!(h.count, 6.0);
        assert_eq!(h.sum, 4.0 * 5.0 + 2.0 * 12.5);
        let mut h = custom(&[10.0, 20.0], &[4.0, 4.0, 0.0]);
        h.trim_buckets(15.0, Trim::Lower);
        assert_eq!(h.count, 2.0);
    }

    #[test]
    fn untouched_histograms_keep_their_totals() {
        let mut h = custom(&[10.0, 20.0], &[4.0, 4.0, 0.0]);
        h.sum = 77.0;
        h.trim_buckets(100.0, Trim::Upper);
        assert_eq!((h.count, h.sum), (8.0, 77.0));
    }
}
