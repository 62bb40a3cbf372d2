//! Arithmetic on [`FloatHistogram`]s, with the semantics of Prometheus'
//! `model/histogram` (what PromQL computes with): buckets with their
//! bounds, scaling, addition and subtraction across schemas and zero
//! thresholds, custom bounds reconciled to their intersection, resolution
//! reduction, compaction, counter-reset detection.
//!
//! Buckets are handled as sorted `(index, count)` lists: operations merge
//! those and lay the spans out anew, so a result's spans are compact (no
//! empty spans, adjacent buckets in one span). Empty buckets a merge
//! produces are kept, as Prometheus keeps them; [`FloatHistogram::compact`]
//! removes them.

use std::fmt::Write as _;

use crate::gofloat::format_g;
use crate::histogram::{
    is_custom_buckets_schema, CounterResetHint, FloatHistogram, Histogram, Span,
};

/// One bucket with its bounds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bucket {
    /// Lower bound.
    pub lower: f64,
    /// Upper bound.
    pub upper: f64,
    /// Whether the lower bound belongs to the bucket.
    pub lower_inclusive: bool,
    /// Whether the upper bound belongs to the bucket.
    pub upper_inclusive: bool,
    /// Observations in the bucket.
    pub count: f64,
    /// The bucket's index in its schema.
    pub index: i32,
}

impl Bucket {
    /// The fraction of the bucket's width at or below `v` (strictly inside
    /// the bucket's finite bounds): linear, or on a logarithmic scale for
    /// exponential buckets (negative buckets mirrored).
    pub fn fraction_below(&self, v: f64, linear: bool) -> f64 {
        if linear {
            return (v - self.lower) / (self.upper - self.lower);
        }
        let lo = self.lower.abs().log2();
        let hi = self.upper.abs().log2();
        let lv = v.abs().log2();
        if v > 0.0 {
            (lv - lo) / (hi - lo)
        } else {
            1.0 - (lv - hi) / (lo - hi)
        }
    }
}

/// Why two histograms cannot be combined.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HistogramOpError {
    /// One has custom buckets, the other exponential ones.
    #[error("cannot apply this operation on histograms with a mix of exponential and custom bucket schemas")]
    IncompatibleSchema,
}

/// What adding or subtracting two histograms ran into.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Combined {
    /// One histogram said "counter reset", the other "no counter reset".
    pub counter_reset_collision: bool,
    /// Differing custom bounds were reduced to their intersection.
    pub custom_bounds_reconciled: bool,
}

/// The upper bound of bucket `idx` of exponential `schema`:
/// `2^(idx * 2^-schema)`. The last finite bucket ends at `f64::MAX`, the
/// one after it (counting infinities) at `+Inf`.
pub fn exponential_bound(idx: i32, schema: i32) -> f64 {
    if schema <= 0 {
        // Exact: a power of two.
        let e = i64::from(idx) << (-schema).min(62);
        return pow2(e);
    }
    // Schemas past 8 are reduced on ingestion; clamp so that a stray one
    // cannot overflow the shift.
    let schema = schema.min(52);
    let per = 1i64 << schema;
    let idx = i64::from(idx);
    let exp = idx.div_euclid(per);
    let rem = idx.rem_euclid(per);
    let frac = bound_fraction(rem, per);
    let b = frac * pow2(exp);
    if b.is_infinite() && idx == (1024 << schema) {
        return f64::MAX;
    }
    b
}

/// `2^(rem/per)` for `0 <= rem < per`, exactly as Prometheus' bucket
/// bounds have it. Prometheus takes them from a fixed table of
/// `2^(k/256 - 1)` whose values are not all the nearest doubles (`2^-0.25`
/// is 0.8408964152537144 there, one ulp below), so bounds computed here
/// would differ in the last digit. The table's values are Prometheus'
/// output, recorded by `interop/cmd/prombounds` in
/// `testdata/prometheus_bucket_bounds.txt` (schema 8, indices -256..-1: the
/// bounds in [0.5, 1)); the other schemas' bounds are among them, and the
/// tests check every schema's against Prometheus'.
fn bound_fraction(rem: i64, per: i64) -> f64 {
    static FRACTIONS: std::sync::LazyLock<Vec<f64>> = std::sync::LazyLock::new(|| {
        let mut table = vec![0.0; 256];
        let data = include_str!("../testdata/prometheus_bucket_bounds.txt");
        for line in data.lines() {
            let mut f = line.split_whitespace();
            let (Some("8"), Some(i), Some(b)) = (f.next(), f.next(), f.next()) else {
                continue;
            };
            let (Ok(idx), Ok(bits)) = (i.parse::<i64>(), u64::from_str_radix(b, 16)) else {
                continue;
            };
            if let Some(slot) = usize::try_from(idx + 256)
                .ok()
                .and_then(|k| table.get_mut(k))
            {
                *slot = f64::from_bits(bits);
            }
        }
        table
    });
    // Schema `log2(per)` index `rem` is schema 8 index `rem * 256 / per`.
    if per <= 256 {
        let k = rem * (256 / per);
        if let Some(&half) = usize::try_from(k).ok().and_then(|k| FRACTIONS.get(k)) {
            if half != 0.0 {
                return 2.0 * half;
            }
        }
    }
    ((rem as f64) / (per as f64)).exp2()
}

/// `2^e` for any integer exponent (0 and infinity past the float range).
fn pow2(e: i64) -> f64 {
    if e > 1023 {
        if e == 1024 {
            return f64::MAX;
        }
        return f64::INFINITY;
    }
    if e < -1074 {
        return 0.0;
    }
    if e >= -1022 {
        f64::from_bits(((e + 1023) as u64) << 52)
    } else {
        f64::from_bits(1u64 << (e + 1074))
    }
}

/// The upper bound of bucket `idx` (custom bounds: `-Inf` below the first,
/// `+Inf` for the last).
pub fn bucket_bound(idx: i32, schema: i32, custom: &[f64]) -> f64 {
    if is_custom_buckets_schema(schema) {
        if idx < 0 {
            return f64::NEG_INFINITY;
        }
        return custom.get(idx as usize).copied().unwrap_or(f64::INFINITY);
    }
    exponential_bound(idx, schema)
}

/// Prometheus' `CustomBucketBoundsMatch`.
pub fn custom_bounds_match(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

/// The bounds both lists have.
pub fn intersect_custom_bounds(a: &[f64], b: &[f64]) -> Vec<f64> {
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::new();
    while i < a.len() && j < b.len() {
        if a[i] == b[j] {
            out.push(a[i]);
            i += 1;
            j += 1;
        } else if a[i] < b[j] {
            i += 1;
        } else {
            j += 1;
        }
    }
    out
}

/// The (index, count) pairs of spans and their buckets, in index order.
pub fn indexed(spans: &[Span], buckets: &[f64]) -> Vec<(i32, f64)> {
    let mut out = Vec::with_capacity(buckets.len());
    let mut idx: i64 = 0;
    let mut k = 0;
    // A later span's offset is the gap after the previous span.
    for s in spans {
        idx += i64::from(s.offset);
        for _ in 0..s.length {
            let Some(&c) = buckets.get(k) else {
                return out;
            };
            out.push((
                idx.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32,
                c,
            ));
            idx += 1;
            k += 1;
        }
    }
    out
}

/// Spans and buckets of (index, count) pairs in increasing index order.
pub fn from_indexed(items: &[(i32, f64)]) -> (Vec<Span>, Vec<f64>) {
    let mut spans: Vec<Span> = Vec::new();
    let mut buckets = Vec::with_capacity(items.len());
    let mut next: Option<i64> = None;
    for &(idx, c) in items {
        let i = i64::from(idx);
        match (next, spans.last_mut()) {
            (Some(n), Some(last)) if n == i => last.length += 1,
            (Some(n), _) => spans.push(Span {
                offset: (i - n) as i32,
                length: 1,
            }),
            (None, _) => spans.push(Span {
                offset: idx,
                length: 1,
            }),
        }
        buckets.push(c);
        next = Some(i + 1);
    }
    (spans, buckets)
}

/// Neumaier's compensated `sum += v`, the compensation in `c`.
fn neumaier(sum: &mut f64, c: &mut f64, v: f64) {
    let t = *sum + v;
    if t.is_infinite() {
        *c = 0.0;
    } else if sum.abs() >= v.abs() {
        *c += (*sum - t) + v;
    } else {
        *c += (v - t) + *sum;
    }
    *sum = t;
}

/// The index of bucket `idx` of schema `from` in the lower schema `to`.
fn target_index(idx: i32, from: i32, to: i32) -> i32 {
    let shift = (from - to).clamp(0, 31);
    (((i64::from(idx) - 1) >> shift) + 1) as i32
}

/// Buckets of schema `from` merged into the lower schema `to`.
fn reduce(items: &[(i32, f64)], from: i32, to: i32) -> Vec<(i32, f64)> {
    if from <= to {
        return items.to_vec();
    }
    let mut out: Vec<(i32, f64)> = Vec::with_capacity(items.len());
    for &(i, c) in items {
        let t = target_index(i, from, to);
        match out.last_mut() {
            Some(last) if last.0 == t => last.1 += c,
            _ => out.push((t, c)),
        }
    }
    out
}

/// Sorted (index, count) lists added (or `b` subtracted when `negate`).
fn merge(a: &[(i32, f64)], b: &[(i32, f64)], negate: bool) -> Vec<(i32, f64)> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    let sign = if negate { -1.0 } else { 1.0 };
    while i < a.len() || j < b.len() {
        match (a.get(i), b.get(j)) {
            (Some(&x), Some(&y)) if x.0 == y.0 => {
                out.push((x.0, x.1 + sign * y.1));
                i += 1;
                j += 1;
            }
            (Some(&x), Some(&y)) if x.0 < y.0 => {
                out.push(x);
                i += 1;
            }
            (Some(&x), None) => {
                out.push(x);
                i += 1;
            }
            (_, Some(&y)) => {
                out.push((y.0, sign * y.1));
                j += 1;
            }
            (None, None) => break,
        }
    }
    out
}

/// Custom buckets mapped onto the (fewer) bounds `to`: each bucket goes to
/// the first target bucket whose bound is at least its own.
fn map_custom(items: &[(i32, f64)], from: &[f64], to: &[f64], acc: &mut [f64], sign: f64) {
    let mut t = 0;
    for &(idx, c) in items {
        let target = match from.get(idx.max(0) as usize) {
            Some(&bound) => {
                while t < to.len() && to[t] < bound {
                    t += 1;
                }
                t
            }
            None => to.len(),
        };
        if let Some(slot) = acc.get_mut(target) {
            *slot += sign * c;
        }
    }
}

impl Histogram {
    /// Prometheus' `String()` of an integer histogram: as
    /// [`FloatHistogram::go_string`], counts as integers.
    pub fn go_string(&self) -> String {
        // Counts come from integers: exact in f64 below 2^53.
        self.to_float().go_string_with(|c| (c as u64).to_string())
    }
}

impl FloatHistogram {
    /// The positive buckets with bounds, in increasing index order.
    pub fn positive_bucket_list(&self) -> Vec<Bucket> {
        self.bucket_list(true)
    }

    /// The negative buckets with bounds, in increasing index order (from
    /// zero outwards).
    pub fn negative_bucket_list(&self) -> Vec<Bucket> {
        self.bucket_list(false)
    }

    fn bucket_list(&self, positive: bool) -> Vec<Bucket> {
        let custom = self.uses_custom_buckets();
        let (spans, buckets) = if positive {
            (&self.positive_spans, &self.positive_buckets)
        } else {
            (&self.negative_spans, &self.negative_buckets)
        };
        indexed(spans, buckets)
            .into_iter()
            .map(|(index, count)| {
                let up = bucket_bound(index, self.schema, &self.custom_values);
                let below = bucket_bound(index.saturating_sub(1), self.schema, &self.custom_values);
                let (lower, upper) = if positive { (below, up) } else { (-up, -below) };
                let (lower_inclusive, upper_inclusive) = if custom {
                    (index == 0, true)
                } else {
                    (lower < 0.0, upper > 0.0)
                };
                Bucket {
                    lower,
                    upper,
                    lower_inclusive,
                    upper_inclusive,
                    count,
                    index,
                }
            })
            .collect()
    }

    /// The zero bucket, [-threshold, threshold].
    pub fn zero_bucket(&self) -> Bucket {
        Bucket {
            lower: -self.zero_threshold,
            upper: self.zero_threshold,
            lower_inclusive: true,
            upper_inclusive: true,
            count: self.zero_count,
            index: 0,
        }
    }

    /// All buckets from the lowest to the highest: negative ones, the zero
    /// bucket (if populated), positive ones; bounds of buckets reaching into
    /// the zero bucket are cut at its threshold.
    pub fn all_buckets(&self) -> Vec<Bucket> {
        let zt = self.zero_threshold;
        let clip = |mut b: Bucket| {
            if b.upper < 0.0 && b.upper > -zt {
                b.upper = -zt;
            } else if b.lower > 0.0 && b.lower < zt {
                b.lower = zt;
            }
            b
        };
        let mut out: Vec<Bucket> = self
            .negative_bucket_list()
            .into_iter()
            .rev()
            .map(clip)
            .collect();
        if self.zero_count > 0.0 {
            out.push(self.zero_bucket());
        }
        out.extend(self.positive_bucket_list().into_iter().map(clip));
        out
    }

    /// Scales every count and the sum; a negative factor makes it a gauge.
    pub fn mul(&mut self, factor: f64) -> &mut Self {
        self.zero_count *= factor;
        self.count *= factor;
        self.sum *= factor;
        self.positive_buckets.iter_mut().for_each(|b| *b *= factor);
        self.negative_buckets.iter_mut().for_each(|b| *b *= factor);
        if factor < 0.0 {
            self.counter_reset_hint = CounterResetHint::Gauge;
        }
        self
    }

    /// Divides every count and the sum; dividing by zero removes the
    /// buckets, a negative divisor makes it a gauge.
    pub fn div(&mut self, d: f64) -> &mut Self {
        self.zero_count /= d;
        self.count /= d;
        self.sum /= d;
        if d == 0.0 {
            self.positive_buckets.clear();
            self.negative_buckets.clear();
            self.positive_spans.clear();
            self.negative_spans.clear();
            return self;
        }
        self.positive_buckets.iter_mut().for_each(|b| *b /= d);
        self.negative_buckets.iter_mut().for_each(|b| *b /= d);
        if d < 0.0 {
            self.counter_reset_hint = CounterResetHint::Gauge;
        }
        self
    }

    /// Removes empty buckets (Prometheus' `Compact(0)`).
    pub fn compact(&mut self) -> &mut Self {
        for positive in [true, false] {
            let (spans, buckets) = if positive {
                (&mut self.positive_spans, &mut self.positive_buckets)
            } else {
                (&mut self.negative_spans, &mut self.negative_buckets)
            };
            let items: Vec<(i32, f64)> = indexed(spans, buckets)
                .into_iter()
                .filter(|&(_, c)| c != 0.0)
                .collect();
            let (s, b) = from_indexed(&items);
            *spans = s;
            *buckets = b;
        }
        self
    }

    /// The histogram with its buckets merged down to the lower `schema`
    /// (unchanged if not lower, or custom).
    pub fn reduce_resolution(&mut self, schema: i32) -> &mut Self {
        if self.uses_custom_buckets() || schema >= self.schema {
            return self;
        }
        for positive in [true, false] {
            let (spans, buckets) = if positive {
                (&mut self.positive_spans, &mut self.positive_buckets)
            } else {
                (&mut self.negative_spans, &mut self.negative_buckets)
            };
            let items = reduce(&indexed(spans, buckets), self.schema, schema);
            let (s, b) = from_indexed(&items);
            *spans = s;
            *buckets = b;
        }
        self.schema = schema;
        self
    }

    /// A copy at the lower `schema`.
    pub fn copy_to_schema(&self, schema: i32) -> FloatHistogram {
        let mut h = self.clone();
        h.reduce_resolution(schema);
        h
    }

    /// Prometheus' counter-hint rules for adding or subtracting `other`:
    /// true on a collision of "reset" and "no reset".
    fn adjust_counter_reset(&mut self, other: &FloatHistogram) -> bool {
        use CounterResetHint::*;
        let (a, b) = (self.counter_reset_hint, other.counter_reset_hint);
        if a == b || a == Gauge {
            return false;
        }
        if b == Gauge {
            self.counter_reset_hint = Gauge;
            return false;
        }
        if a == Unknown {
            return false;
        }
        self.counter_reset_hint = Unknown;
        b != Unknown
    }

    /// The zero count (and the threshold actually reached) if the zero
    /// bucket were widened to at least `larger`: buckets inside it join it,
    /// and a populated bucket the threshold falls into widens it to its
    /// bound.
    pub fn zero_count_for_larger_threshold(&self, larger: f64) -> (f64, f64) {
        if larger == self.zero_threshold {
            return (self.zero_count, larger);
        }
        let pos = self.positive_bucket_list();
        let neg = self.negative_bucket_list();
        let mut threshold = larger;
        'outer: loop {
            let mut count = self.zero_count;
            for b in &pos {
                if b.lower >= threshold {
                    break;
                }
                count += b.count;
                if b.upper > threshold {
                    if b.count != 0.0 {
                        threshold = b.upper;
                    }
                    break;
                }
            }
            for b in &neg {
                if b.upper <= -threshold {
                    break;
                }
                count += b.count;
                if b.lower < -threshold {
                    if b.count != 0.0 {
                        threshold = -b.lower;
                        continue 'outer;
                    }
                    break;
                }
            }
            return (count, threshold);
        }
    }

    /// Zeroes (then removes) the buckets inside the zero bucket, whose
    /// counts the zero count holds already.
    fn trim_buckets_in_zero_bucket(&mut self) {
        let zt = self.zero_threshold;
        for (k, b) in self.positive_bucket_list().iter().enumerate() {
            if b.lower >= zt {
                break;
            }
            self.positive_buckets[k] = 0.0;
        }
        for (k, b) in self.negative_bucket_list().iter().enumerate() {
            if b.upper <= -zt {
                break;
            }
            self.negative_buckets[k] = 0.0;
        }
        self.compact();
    }

    /// Widens whichever zero bucket is narrower until both match; changes
    /// `self`, returns the zero count `other` has at the common threshold.
    fn reconcile_zero_buckets(&mut self, other: &FloatHistogram) -> f64 {
        let mut other_count = other.zero_count;
        let mut other_threshold = other.zero_threshold;
        let mut rounds = 0;
        while other_threshold != self.zero_threshold && rounds < 64 {
            rounds += 1;
            if self.zero_threshold > other_threshold {
                (other_count, other_threshold) =
                    other.zero_count_for_larger_threshold(self.zero_threshold);
            }
            if other_threshold > self.zero_threshold {
                let (c, t) = self.zero_count_for_larger_threshold(other_threshold);
                self.zero_count = c;
                self.zero_threshold = t;
                self.trim_buckets_in_zero_bucket();
            }
        }
        other_count
    }

    /// Adds `other` into `self`: the lower schema and the wider zero bucket
    /// win; custom bounds that differ are reduced to their intersection.
    pub fn add(&mut self, other: &FloatHistogram) -> Result<Combined, HistogramOpError> {
        self.combine(other, false)
    }

    /// Subtracts `other` from `self` (see [`Self::add`]).
    pub fn sub(&mut self, other: &FloatHistogram) -> Result<Combined, HistogramOpError> {
        self.combine(other, true)
    }

    fn combine(
        &mut self,
        other: &FloatHistogram,
        negate: bool,
    ) -> Result<Combined, HistogramOpError> {
        if self.uses_custom_buckets() != other.uses_custom_buckets() {
            return Err(HistogramOpError::IncompatibleSchema);
        }
        let sign = if negate { -1.0 } else { 1.0 };
        let mut out = Combined {
            counter_reset_collision: self.adjust_counter_reset(other),
            ..Combined::default()
        };
        if !self.uses_custom_buckets() {
            let oz = self.reconcile_zero_buckets(other);
            self.zero_count += sign * oz;
        }
        self.count += sign * other.count;
        self.sum += sign * other.sum;
        let mine = indexed(&self.positive_spans, &self.positive_buckets);
        let theirs = indexed(&other.positive_spans, &other.positive_buckets);
        if self.uses_custom_buckets() {
            if custom_bounds_match(&self.custom_values, &other.custom_values) {
                let (s, b) = from_indexed(&merge(&mine, &theirs, negate));
                self.positive_spans = s;
                self.positive_buckets = b;
            } else {
                out.custom_bounds_reconciled = true;
                let bounds = intersect_custom_bounds(&self.custom_values, &other.custom_values);
                let mut acc = vec![0.0; bounds.len() + 1];
                map_custom(&mine, &self.custom_values, &bounds, &mut acc, 1.0);
                map_custom(&theirs, &other.custom_values, &bounds, &mut acc, sign);
                let items: Vec<(i32, f64)> = acc
                    .into_iter()
                    .enumerate()
                    .filter(|&(_, c)| c != 0.0)
                    .map(|(i, c)| (i as i32, c))
                    .collect();
                let (s, b) = from_indexed(&items);
                self.positive_spans = s;
                self.positive_buckets = b;
                self.custom_values = bounds;
            }
            return Ok(out);
        }
        let schema = self.schema.min(other.schema);
        let threshold = self.zero_threshold;
        for positive in [true, false] {
            let (a, b) = if positive {
                (mine.clone(), theirs.clone())
            } else {
                (
                    indexed(&self.negative_spans, &self.negative_buckets),
                    indexed(&other.negative_spans, &other.negative_buckets),
                )
            };
            let a = reduce(&a, self.schema, schema);
            let b: Vec<(i32, f64)> = reduce(&b, other.schema, schema)
                .into_iter()
                .skip_while(|&(i, _)| exponential_bound(i, schema) <= threshold)
                .collect();
            let (s, bk) = from_indexed(&merge(&a, &b, negate));
            if positive {
                self.positive_spans = s;
                self.positive_buckets = bk;
            } else {
                self.negative_spans = s;
                self.negative_buckets = bk;
            }
        }
        self.schema = schema;
        Ok(out)
    }

    /// [`Self::add`] with Neumaier-compensated summation: `c` holds the
    /// compensation terms (start with an empty histogram); the sum is
    /// `self` plus `c` in the end. `c` follows `self`'s layout.
    pub fn kahan_add(
        &mut self,
        other: &FloatHistogram,
        c: &mut FloatHistogram,
    ) -> Result<Combined, HistogramOpError> {
        if self.uses_custom_buckets() != other.uses_custom_buckets() {
            return Err(HistogramOpError::IncompatibleSchema);
        }
        let custom_mismatch = self.uses_custom_buckets()
            && !custom_bounds_match(&self.custom_values, &other.custom_values);
        if custom_mismatch {
            // Rare: fold the compensation in and add plainly.
            let comp = std::mem::take(c);
            if comp.count != 0.0 || comp.sum != 0.0 || !comp.positive_buckets.is_empty() {
                let mut comp = comp;
                comp.schema = self.schema;
                comp.custom_values = self.custom_values.clone();
                self.add(&comp)?;
            }
            return self.add(other);
        }
        let out = Combined {
            counter_reset_collision: self.adjust_counter_reset(other),
            ..Combined::default()
        };
        if !self.uses_custom_buckets() {
            let oz = self.reconcile_zero_buckets(other);
            if c.zero_threshold < self.zero_threshold {
                let (cz, _) = c.zero_count_for_larger_threshold(self.zero_threshold);
                c.zero_count = cz;
                c.zero_threshold = self.zero_threshold;
                c.trim_buckets_in_zero_bucket();
            }
            neumaier(&mut self.zero_count, &mut c.zero_count, oz);
        }
        neumaier(&mut self.count, &mut c.count, other.count);
        neumaier(&mut self.sum, &mut c.sum, other.sum);
        let schema = if self.uses_custom_buckets() {
            self.schema
        } else {
            self.schema.min(other.schema)
        };
        let threshold = self.zero_threshold;
        let custom = self.uses_custom_buckets();
        let c_schema =
            if c.schema == 0 && c.positive_buckets.is_empty() && c.negative_buckets.is_empty() {
                self.schema
            } else {
                c.schema
            };
        for positive in [true, false] {
            let (a, comp, b) = if positive {
                (
                    indexed(&self.positive_spans, &self.positive_buckets),
                    indexed(&c.positive_spans, &c.positive_buckets),
                    indexed(&other.positive_spans, &other.positive_buckets),
                )
            } else {
                (
                    indexed(&self.negative_spans, &self.negative_buckets),
                    indexed(&c.negative_spans, &c.negative_buckets),
                    indexed(&other.negative_spans, &other.negative_buckets),
                )
            };
            let a = reduce(&a, self.schema, schema);
            let comp = reduce(&comp, c_schema, schema);
            let b: Vec<(i32, f64)> = reduce(&b, other.schema, schema)
                .into_iter()
                .skip_while(|&(i, _)| !custom && exponential_bound(i, schema) <= threshold)
                .collect();
            // Union of the layouts; per bucket (sum, compensation).
            let mut idx: Vec<i32> = a.iter().chain(&comp).chain(&b).map(|p| p.0).collect();
            idx.sort_unstable();
            idx.dedup();
            let get = |v: &[(i32, f64)], i: i32| {
                v.binary_search_by_key(&i, |p| p.0)
                    .map(|k| v[k].1)
                    .unwrap_or(0.0)
            };
            let mut sums = Vec::with_capacity(idx.len());
            let mut comps = Vec::with_capacity(idx.len());
            for &i in &idx {
                let (mut x, mut cx) = (get(&a, i), get(&comp, i));
                if b.binary_search_by_key(&i, |p| p.0).is_ok() {
                    neumaier(&mut x, &mut cx, get(&b, i));
                }
                sums.push((i, x));
                comps.push((i, cx));
            }
            let (s1, b1) = from_indexed(&sums);
            let (s2, b2) = from_indexed(&comps);
            if positive {
                self.positive_spans = s1;
                self.positive_buckets = b1;
                c.positive_spans = s2;
                c.positive_buckets = b2;
            } else {
                self.negative_spans = s1;
                self.negative_buckets = b1;
                c.negative_spans = s2;
                c.negative_buckets = b2;
            }
        }
        self.schema = schema;
        c.schema = schema;
        c.custom_values = self.custom_values.clone();
        Ok(out)
    }

    /// Whether going from `previous` to `self` was a counter reset: the
    /// hint says so, or a count went down, or the layout changed in a way a
    /// counter cannot (higher schema, narrower zero bucket, other custom
    /// bounds with a lower count).
    pub fn detect_reset(&self, previous: &FloatHistogram) -> bool {
        match self.counter_reset_hint {
            CounterResetHint::CounterReset => return true,
            CounterResetHint::NotCounterReset => return false,
            _ => {}
        }
        if self.count < previous.count {
            return true;
        }
        if self.uses_custom_buckets() {
            if !previous.uses_custom_buckets() {
                return true;
            }
            if !custom_bounds_match(&self.custom_values, &previous.custom_values) {
                return self.reset_with_other_bounds(previous);
            }
        }
        if self.schema > previous.schema {
            return true;
        }
        if self.zero_threshold < previous.zero_threshold {
            return true;
        }
        let (prev_zero, t) = previous.zero_count_for_larger_threshold(self.zero_threshold);
        if t != self.zero_threshold {
            return true;
        }
        if self.zero_count < prev_zero {
            return true;
        }
        let skip = |items: Vec<(i32, f64)>, schema: i32| -> Vec<(i32, f64)> {
            if is_custom_buckets_schema(schema) {
                return items;
            }
            items
                .into_iter()
                .skip_while(|&(i, _)| exponential_bound(i, schema) <= self.zero_threshold)
                .collect()
        };
        for positive in [true, false] {
            let (cs, cb, ps, pb) = if positive {
                (
                    &self.positive_spans,
                    &self.positive_buckets,
                    &previous.positive_spans,
                    &previous.positive_buckets,
                )
            } else {
                (
                    &self.negative_spans,
                    &self.negative_buckets,
                    &previous.negative_spans,
                    &previous.negative_buckets,
                )
            };
            let cur = skip(indexed(cs, cb), self.schema);
            let prev = skip(
                reduce(&indexed(ps, pb), previous.schema, self.schema),
                self.schema,
            );
            let mut j = 0;
            for &(pi, pc) in &prev {
                while j < cur.len() && cur[j].0 < pi {
                    j += 1;
                }
                match cur.get(j) {
                    Some(&(ci, cc)) if ci == pi => {
                        if cc < pc {
                            return true;
                        }
                    }
                    _ => {
                        if pc != 0.0 {
                            return true;
                        }
                    }
                }
            }
        }
        false
    }

    /// Counter reset across differing custom bounds: a cumulative count at
    /// a bound both share went down.
    fn reset_with_other_bounds(&self, previous: &FloatHistogram) -> bool {
        let shared = intersect_custom_bounds(&self.custom_values, &previous.custom_values);
        let mut a = vec![0.0; shared.len() + 1];
        let mut b = vec![0.0; shared.len() + 1];
        map_custom(
            &indexed(&self.positive_spans, &self.positive_buckets),
            &self.custom_values,
            &shared,
            &mut a,
            1.0,
        );
        map_custom(
            &indexed(&previous.positive_spans, &previous.positive_buckets),
            &previous.custom_values,
            &shared,
            &mut b,
            1.0,
        );
        a.iter().zip(&b).any(|(x, y)| x < y)
    }

    /// Exact equality of the data (floats by their bits), spans compared by
    /// the layout they describe (Prometheus' `Equals`).
    pub fn equals(&self, o: &FloatHistogram) -> bool {
        if self.schema != o.schema
            || self.count.to_bits() != o.count.to_bits()
            || self.sum.to_bits() != o.sum.to_bits()
        {
            return false;
        }
        if self.uses_custom_buckets() && !custom_bounds_match(&self.custom_values, &o.custom_values)
        {
            return false;
        }
        if self.zero_threshold != o.zero_threshold
            || self.zero_count.to_bits() != o.zero_count.to_bits()
        {
            return false;
        }
        let same = |a: Vec<(i32, f64)>, b: Vec<(i32, f64)>| {
            a.len() == b.len()
                && a.iter()
                    .zip(&b)
                    .all(|(x, y)| x.0 == y.0 && x.1.to_bits() == y.1.to_bits())
        };
        same(
            indexed(&self.positive_spans, &self.positive_buckets),
            indexed(&o.positive_spans, &o.positive_buckets),
        ) && same(
            indexed(&self.negative_spans, &self.negative_buckets),
            indexed(&o.negative_spans, &o.negative_buckets),
        )
    }

    /// Whether a count, the sum or the zero count is infinite.
    pub fn has_overflow(&self) -> bool {
        self.zero_count.is_infinite()
            || self.count.is_infinite()
            || self.sum.is_infinite()
            || self.positive_buckets.iter().any(|b| b.is_infinite())
            || self.negative_buckets.iter().any(|b| b.is_infinite())
    }

    /// Prometheus' `String()` of the histogram: count, sum and the
    /// populated buckets from lowest to highest
    /// (`{count:3, sum:2, [-1,-0.5):1, [-0.001,0.001]:1, (1,2]:1}`).
    pub fn go_string(&self) -> String {
        self.go_string_with(format_g)
    }

    /// [`FloatHistogram::go_string`] with the counts (total and per
    /// bucket) written by `count`: `%g` for float histograms, `%d` for
    /// integer ones.
    fn go_string_with(&self, count: impl Fn(f64) -> String) -> String {
        let mut s = format!("{{count:{}, sum:{}", count(self.count), format_g(self.sum));
        let bucket = |s: &mut String, b: &Bucket| {
            let _ = write!(
                s,
                ", {}{},{}{}:{}",
                if b.lower_inclusive { '[' } else { '(' },
                format_g(b.lower),
                format_g(b.upper),
                if b.upper_inclusive { ']' } else { ')' },
                count(b.count)
            );
        };
        for b in self.negative_bucket_list().iter().rev() {
            if b.count != 0.0 {
                bucket(&mut s, b);
            }
        }
        if self.zero_count != 0.0 {
            bucket(&mut s, &self.zero_bucket());
        }
        for b in self.positive_bucket_list().iter() {
            if b.count != 0.0 {
                bucket(&mut s, b);
            }
        }
        s.push('}');
        s
    }

    /// The histogram in the notation of Prometheus' test files
    /// (`{{schema:0 count:3 sum:2 buckets:[1 2]}}`), buckets compacted.
    pub fn test_expression(&self) -> String {
        let mut h = self.clone();
        h.compact();
        let mut parts: Vec<String> = Vec::new();
        if h.schema != 0 {
            parts.push(format!("schema:{}", h.schema));
        }
        if h.count != 0.0 {
            parts.push(format!("count:{}", format_g(h.count)));
        }
        if h.sum != 0.0 {
            parts.push(format!("sum:{}", format_g(h.sum)));
        }
        if h.zero_count != 0.0 {
            parts.push(format!("z_bucket:{}", format_g(h.zero_count)));
        }
        if h.zero_threshold != 0.0 {
            parts.push(format!("z_bucket_w:{}", format_g(h.zero_threshold)));
        }
        if !h.custom_values.is_empty() {
            parts.push(format!("custom_values:{}", list(&h.custom_values)));
        }
        match h.counter_reset_hint {
            CounterResetHint::Unknown => {}
            CounterResetHint::CounterReset => parts.push("counter_reset_hint:reset".into()),
            CounterResetHint::NotCounterReset => parts.push("counter_reset_hint:not_reset".into()),
            CounterResetHint::Gauge => parts.push("counter_reset_hint:gauge".into()),
        }
        for (name, off, spans, buckets) in [
            ("buckets", "offset", &h.positive_spans, &h.positive_buckets),
            (
                "n_buckets",
                "n_offset",
                &h.negative_spans,
                &h.negative_buckets,
            ),
        ] {
            let items = indexed(spans, buckets);
            let Some(&(first, _)) = items.first() else {
                continue;
            };
            if first != 0 {
                parts.push(format!("{off}:{first}"));
            }
            // Gaps are written as empty buckets.
            let mut vals = Vec::new();
            let mut next = first;
            for (i, c) in items {
                while next < i {
                    vals.push(0.0);
                    next += 1;
                }
                vals.push(c);
                next = i + 1;
            }
            parts.push(format!("{name}:{}", list(&vals)));
        }
        format!("{{{{{}}}}}", parts.join(" "))
    }
}

fn list(v: &[f64]) -> String {
    let mut s = String::from("[");
    for (i, x) in v.iter().enumerate() {
        if i > 0 {
            s.push(' ');
        }
        let _ = write!(s, "{}", format_g(*x));
    }
    s.push(']');
    s
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn h(schema: i32, pos: &[(i32, f64)]) -> FloatHistogram {
        let (positive_spans, positive_buckets) = from_indexed(pos);
        FloatHistogram {
            schema,
            count: pos.iter().map(|p| p.1).sum(),
            positive_spans,
            positive_buckets,
            ..FloatHistogram::default()
        }
    }

    #[test]
    fn bounds() {
        assert_eq!(exponential_bound(1, 0), 2.0);
        assert_eq!(exponential_bound(0, 0), 1.0);
        assert_eq!(exponential_bound(-1, 0), 0.5);
        assert_eq!(exponential_bound(1, -1), 4.0);
        assert!((exponential_bound(1, 1) - std::f64::consts::SQRT_2).abs() < 1e-15);
        assert_eq!(exponential_bound(2, 1), 2.0);
        assert_eq!(bucket_bound(-1, -53, &[1.0]), f64::NEG_INFINITY);
        assert_eq!(bucket_bound(1, -53, &[1.0]), f64::INFINITY);
    }

    #[test]
    fn add_reduces_to_the_lower_schema() {
        let mut a = h(1, &[(1, 1.0), (2, 2.0)]);
        let b = h(0, &[(1, 4.0)]);
        a.add(&b).unwrap();
        assert_eq!(a.schema, 0);
        assert_eq!(
            indexed(&a.positive_spans, &a.positive_buckets),
            vec![(1, 7.0)]
        );
        assert_eq!(a.count, 7.0);
    }

    #[test]
    fn sub_and_compact() {
        let mut a = h(0, &[(0, 1.0), (3, 2.0)]);
        a.sub(&h(0, &[(0, 1.0)])).unwrap();
        a.compact();
        assert_eq!(
            a.positive_spans,
            vec![Span {
                offset: 3,
                length: 1
            }]
        );
        assert_eq!(a.positive_buckets, vec![2.0]);
    }

    #[test]
    fn custom_bounds_are_intersected() {
        let mut a = h(-53, &[(0, 1.0), (1, 2.0), (2, 3.0)]);
        a.custom_values = vec![1.0, 2.0];
        let mut b = h(-53, &[(0, 1.0), (1, 1.0)]);
        b.custom_values = vec![2.0];
        let r = a.add(&b).unwrap();
        assert!(r.custom_bounds_reconciled);
        assert_eq!(a.custom_values, vec![2.0]);
        assert_eq!(a.positive_buckets, vec![4.0, 4.0]);
        let mut e = h(0, &[]);
        assert_eq!(e.add(&a), Err(HistogramOpError::IncompatibleSchema));
    }

    #[test]
    fn resets() {
        let a = h(0, &[(0, 1.0), (1, 2.0)]);
        let b = h(0, &[(0, 1.0), (1, 3.0)]);
        assert!(!b.detect_reset(&a));
        assert!(a.detect_reset(&b));
        let c = h(0, &[(1, 5.0)]);
        assert!(c.detect_reset(&a));
        let mut d = b.clone();
        d.counter_reset_hint = CounterResetHint::NotCounterReset;
        assert!(!d.detect_reset(&h(0, &[(0, 100.0)])));
    }

    #[test]
    fn zero_threshold_widening() {
        let mut a = h(0, &[(-1, 1.0), (0, 2.0), (2, 3.0)]);
        a.zero_threshold = 0.001;
        let mut b = h(0, &[(2, 1.0)]);
        b.zero_threshold = 1.0;
        b.zero_count = 5.0;
        a.add(&b).unwrap();
        assert_eq!(a.zero_threshold, 1.0);
        assert_eq!(a.zero_count, 8.0);
        assert_eq!(
            indexed(&a.positive_spans, &a.positive_buckets),
            vec![(2, 4.0)]
        );
    }

    #[test]
    fn test_expressions() {
        let mut a = h(0, &[(0, 1.0), (2, 2.0)]);
        a.sum = 3.0;
        assert_eq!(a.test_expression(), "{{count:3 sum:3 buckets:[1 0 2]}}");
    }
}

#[cfg(test)]
mod bound_tests {
    use super::exponential_bound;

    /// Every bound of every schema equals Prometheus' (bit for bit).
    #[test]
    fn bounds_are_prometheus_bounds() {
        let data = include_str!("../testdata/prometheus_bucket_bounds.txt");
        let mut n = 0;
        let mut wrong = Vec::new();
        for line in data.lines() {
            let mut f = line.split_whitespace();
            let (Some(s), Some(i), Some(b)) = (f.next(), f.next(), f.next()) else {
                continue;
            };
            let schema: i32 = s.parse().expect("schema");
            let idx: i32 = i.parse().expect("index");
            let want = f64::from_bits(u64::from_str_radix(b, 16).expect("bits"));
            let got = exponential_bound(idx, schema);
            if got.to_bits() != want.to_bits() {
                wrong.push(format!("schema {schema} index {idx}: {got:e} vs {want:e}"));
            }
            n += 1;
        }
        assert!(n > 2000, "{n} bounds read");
        assert!(
            wrong.is_empty(),
            "{} differ, e.g. {:?}",
            wrong.len(),
            &wrong[..wrong.len().min(5)]
        );
    }
}
