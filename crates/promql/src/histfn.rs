//! PromQL's functions over native histograms: range functions over windows
//! holding histogram samples (`rate`, `sum_over_time`, `changes`, ...) and
//! the `histogram_*` functions of one histogram. The arithmetic itself is
//! `ferrite_model::histogram_ops`; what is PromQL here is which samples
//! count, what a mix of floats and histograms gives, and which annotations
//! are due.

use std::sync::Arc;

use ferrite_model::histogram_ops::Combined;
use ferrite_model::{CounterResetHint, FloatHistogram};

use crate::annotations::{HistOp, Note};
use crate::engine::{Hist, StepValues};
use crate::functions::{extrapolation_factor, instant_delta, linear_regression, quantile, RangeFn};

/// One step's window of a series: its float and histogram samples.
pub(crate) struct Window<'a> {
    pub floats: &'a [(i64, f64)],
    pub hists: &'a [(i64, Hist)],
    /// (start, end]
    pub start: i64,
    pub end: i64,
    /// The step's own time (for `predict_linear`).
    pub step_t: i64,
    /// The function's scalar parameter.
    pub param: f64,
}

/// A result value.
pub(crate) enum Out {
    F(f64),
    H(FloatHistogram),
}

/// A range function over a window that holds histograms (`w.hists` not
/// empty); annotations go to `values`.
pub(crate) fn apply(func: RangeFn, w: &Window<'_>, values: &mut StepValues) -> Option<Out> {
    use RangeFn::*;
    let floats = w.floats;
    match func {
        Rate | Increase | Delta => {
            if !floats.is_empty() {
                values.note(Note::MixedFloatsHistograms);
                return None;
            }
            let counter = func != Delta;
            hist_rate(w, counter, func == Rate, values).map(Out::H)
        }
        Irate | Idelta => hist_instant(w, func == Irate, values),
        Deriv | PredictLinear => {
            if floats.len() < 2 {
                if floats.len() == 1 {
                    values.note(Note::IgnoredInMixedRange);
                }
                return None;
            }
            values.note(Note::IgnoredInMixedRange);
            if func == Deriv {
                Some(Out::F(linear_regression(floats, floats[0].0).0))
            } else {
                let (slope, intercept) = linear_regression(floats, w.step_t);
                Some(Out::F(slope * w.param + intercept))
            }
        }
        SumOverTime | AvgOverTime => {
            if !floats.is_empty() {
                values.note(Note::MixedFloatsHistograms);
                return None;
            }
            let mut hints = HintTracker::default();
            let list: Vec<&FloatHistogram> = w.hists.iter().map(|(_, h)| &**h).collect();
            list.iter().for_each(|h| hints.see(h));
            let mut reconciled = false;
            let sum = match sum_hists(&list, func == AvgOverTime, &mut reconciled) {
                Ok(s) => s,
                Err(_) => {
                    values.note(Note::MixedExponentialCustom);
                    return None;
                }
            };
            if reconciled {
                values.note(Note::CustomBucketsReconciled(HistOp::Agg));
            }
            if hints.collision() {
                values.note(Note::CounterResetCollision(HistOp::Agg));
            }
            Some(Out::H(sum))
        }
        MinOverTime | MaxOverTime | QuantileOverTime | StddevOverTime | StdvarOverTime => {
            if floats.is_empty() {
                return None;
            }
            values.note(Note::IgnoredInMixedRange);
            let vals: Vec<f64> = floats.iter().map(|p| p.1).collect();
            Some(Out::F(match func {
                MinOverTime => vals
                    .iter()
                    .fold(f64::NAN, |m, &v| if m.is_nan() || v < m { v } else { m }),
                MaxOverTime => vals
                    .iter()
                    .fold(f64::NAN, |m, &v| if m.is_nan() || v > m { v } else { m }),
                QuantileOverTime => quantile(w.param, vals),
                StddevOverTime => crate::aggregate::variance(&vals).sqrt(),
                _ => crate::aggregate::variance(&vals),
            }))
        }
        CountOverTime => Some(Out::F((floats.len() + w.hists.len()) as f64)),
        PresentOverTime => Some(Out::F(1.0)),
        LastOverTime => {
            let (ht, h) = w.hists.last()?;
            match floats.last() {
                Some(&(ft, f)) if ft > *ht => Some(Out::F(f)),
                _ => Some(Out::H(FloatHistogram::clone(h))),
            }
        }
        FirstOverTime => {
            let (ht, h) = w.hists.first()?;
            match floats.first() {
                Some(&(ft, f)) if ft < *ht => Some(Out::F(f)),
                _ => Some(Out::H(FloatHistogram::clone(h))),
            }
        }
        Changes | Resets => {
            let mut n = 0usize;
            let mut prev: Option<Sample<'_>> = None;
            for cur in merged(floats, w.hists) {
                if let Some(p) = prev {
                    let differs = match (p, cur) {
                        (Sample::F(a), Sample::F(b)) => {
                            if func == Changes {
                                a != b && !(a.is_nan() && b.is_nan())
                            } else {
                                b < a
                            }
                        }
                        (Sample::H(a), Sample::H(b)) => {
                            if func == Changes {
                                !b.equals(a)
                            } else {
                                b.detect_reset(a)
                            }
                        }
                        _ => true,
                    };
                    n += usize::from(differs);
                }
                prev = Some(cur);
            }
            Some(Out::F(n as f64))
        }
    }
}

#[derive(Clone, Copy)]
enum Sample<'a> {
    F(f64),
    H(&'a FloatHistogram),
}

/// Floats and histograms of a window in time order.
fn merged<'a>(floats: &'a [(i64, f64)], hists: &'a [(i64, Hist)]) -> Vec<Sample<'a>> {
    let mut out = Vec::with_capacity(floats.len() + hists.len());
    let (mut i, mut j) = (0, 0);
    while i < floats.len() || j < hists.len() {
        let take_float = match (floats.get(i), hists.get(j)) {
            (Some(f), Some(h)) => f.0 < h.0,
            (Some(_), None) => true,
            _ => false,
        };
        if take_float {
            out.push(Sample::F(floats[i].1));
            i += 1;
        } else {
            out.push(Sample::H(&hists[j].1));
            j += 1;
        }
    }
    out
}

/// Whether histograms said "counter reset" and "no counter reset" both.
#[derive(Default)]
pub(crate) struct HintTracker {
    reset: bool,
    not_reset: bool,
}

impl HintTracker {
    pub fn see(&mut self, h: &FloatHistogram) {
        match h.counter_reset_hint {
            CounterResetHint::CounterReset => self.reset = true,
            CounterResetHint::NotCounterReset => self.not_reset = true,
            _ => {}
        }
    }

    pub fn collision(&self) -> bool {
        self.reset && self.not_reset
    }
}

fn note_combined(c: Combined, op: HistOp, values: &mut StepValues) {
    if c.custom_bounds_reconciled {
        values.note(Note::CustomBucketsReconciled(op));
    }
}

/// `rate`/`increase`/`delta` of a window of histograms (no floats).
fn hist_rate(
    w: &Window<'_>,
    counter: bool,
    is_rate: bool,
    values: &mut StepValues,
) -> Option<FloatHistogram> {
    let points = w.hists;
    if points.len() < 2 {
        return None;
    }
    let mut notes: Vec<Note> = Vec::new();
    let first = &*points[0].1;
    let last = &*points[points.len() - 1].1;
    if counter
        && (first.counter_reset_hint == CounterResetHint::Gauge
            || last.counter_reset_hint == CounterResetHint::Gauge)
    {
        notes.push(Note::NotCounter);
    }
    // A reset right after the first sample: start from an empty histogram
    // (the first one's layout does not matter then).
    let empty;
    let mut prev: &FloatHistogram = first;
    if counter {
        let second = &*points[1].1;
        if second.detect_reset(first) {
            empty = FloatHistogram {
                schema: second.schema,
                custom_values: second.custom_values.clone(),
                ..FloatHistogram::default()
            };
            prev = &empty;
        }
    }
    let custom = prev.uses_custom_buckets();
    let incompatible = |values: &mut StepValues| {
        values.note(Note::MixedExponentialCustom);
        None
    };
    if last.uses_custom_buckets() != custom {
        for n in notes {
            values.note(n);
        }
        return incompatible(values);
    }
    let mut min_schema = last.schema.min(prev.schema);
    for (_, h) in &points[1..points.len() - 1] {
        if !counter {
            continue;
        }
        if h.counter_reset_hint == CounterResetHint::Gauge && !notes.contains(&Note::NotCounter) {
            notes.push(Note::NotCounter);
        }
        min_schema = min_schema.min(h.schema);
        if h.uses_custom_buckets() != custom {
            return incompatible(values);
        }
    }
    let mut h = last.copy_to_schema(min_schema);
    match h.sub(prev) {
        Ok(c) => note_combined(c, HistOp::Sub, values),
        Err(_) => return incompatible(values),
    }
    if counter {
        let mut prev = prev;
        for (_, cur) in &points[1..] {
            if cur.detect_reset(prev) {
                match h.add(prev) {
                    Ok(c) => note_combined(c, HistOp::Add, values),
                    Err(_) => return incompatible(values),
                }
            }
            prev = cur;
        }
    } else if first.counter_reset_hint != CounterResetHint::Gauge
        || last.counter_reset_hint != CounterResetHint::Gauge
    {
        notes.push(Note::NotGauge);
    }
    for n in notes {
        values.note(n);
    }
    h.counter_reset_hint = CounterResetHint::Gauge;
    h.compact();
    let first_t = points[0].0;
    let last_t = points[points.len() - 1].0;
    let to_zero = (counter && h.count > 0.0 && first.count >= 0.0).then(|| first.count / h.count);
    let factor = extrapolation_factor(
        first_t,
        last_t,
        points.len(),
        w.start,
        w.end,
        to_zero,
        is_rate,
    );
    h.mul(factor);
    Some(h)
}

/// `irate`/`idelta` of the last two samples of a window holding
/// histograms.
fn hist_instant(w: &Window<'_>, is_rate: bool, values: &mut StepValues) -> Option<Out> {
    if w.floats.len() + w.hists.len() < 2 {
        return None;
    }
    let all = merged(w.floats, w.hists);
    let times = {
        let mut t: Vec<i64> = w
            .floats
            .iter()
            .map(|p| p.0)
            .chain(w.hists.iter().map(|p| p.0))
            .collect();
        t.sort_unstable();
        t
    };
    let (t0, t1) = (times[times.len() - 2], times[times.len() - 1]);
    let (a, b) = (all[all.len() - 2], all[all.len() - 1]);
    if t1 == t0 {
        return None;
    }
    match (a, b) {
        (Sample::F(x), Sample::F(y)) => instant_delta(&[(t0, x), (t1, y)], is_rate).map(Out::F),
        (Sample::H(x), Sample::H(y)) => {
            let mut r = y.clone();
            if is_rate
                && (y.counter_reset_hint == CounterResetHint::Gauge
                    || x.counter_reset_hint == CounterResetHint::Gauge)
            {
                values.note(Note::NotCounter);
            }
            if !is_rate
                && (y.counter_reset_hint != CounterResetHint::Gauge
                    || x.counter_reset_hint != CounterResetHint::Gauge)
            {
                values.note(Note::NotGauge);
            }
            if !is_rate || !y.detect_reset(x) {
                match r.sub(x) {
                    Ok(c) => note_combined(c, HistOp::Sub, values),
                    Err(_) => {
                        values.note(Note::MixedExponentialCustom);
                        return None;
                    }
                }
            }
            r.counter_reset_hint = CounterResetHint::Gauge;
            r.compact();
            if is_rate {
                r.div((t1 - t0) as f64 / 1000.0);
            }
            Some(Out::H(r))
        }
        _ => {
            values.note(Note::MixedFloatsHistograms);
            None
        }
    }
}

/// Annotations of `histogram_quantile` over one native histogram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum QuantileNote {
    NaNResult,
    NaNSkew,
}

/// The φ-quantile of a native histogram, interpolated inside the bucket
/// holding the rank (exponentially in exponential buckets, linearly in
/// custom and zero buckets).
pub(crate) fn histogram_quantile(q: f64, h: &FloatHistogram) -> (f64, Option<QuantileNote>) {
    if q < 0.0 {
        return (f64::NEG_INFINITY, None);
    }
    if q > 1.0 {
        return (f64::INFINITY, None);
    }
    if h.count == 0.0 || q.is_nan() {
        return (f64::NAN, None);
    }
    let forward = h.sum.is_nan() || q < 0.5;
    let mut buckets = h.all_buckets();
    if !forward {
        buckets.reverse();
    }
    let mut rank = if forward {
        q * h.count
    } else {
        (1.0 - q) * h.count
    };
    let mut count = 0.0;
    let mut chosen = None;
    let mut k = 0;
    while k < buckets.len() {
        let b = buckets[k];
        k += 1;
        if b.count == 0.0 {
            continue;
        }
        count += b.count;
        chosen = Some(b);
        if count >= rank {
            break;
        }
    }
    let Some(mut bucket) = chosen else {
        // No populated bucket: every observation is NaN (or none counts).
        if h.sum.is_nan() && rank > 0.0 {
            return (f64::NAN, Some(QuantileNote::NaNResult));
        }
        return (f64::NAN, None);
    };
    let custom = h.uses_custom_buckets();
    if !custom && bucket.lower < 0.0 && bucket.upper > 0.0 {
        if h.negative_buckets.is_empty() && !h.positive_buckets.is_empty() {
            bucket.lower = 0.0;
        } else if h.positive_buckets.is_empty() && !h.negative_buckets.is_empty() {
            bucket.upper = 0.0;
        }
    } else if custom {
        if bucket.lower == f64::NEG_INFINITY {
            if bucket.upper <= 0.0 {
                return (bucket.upper, None);
            }
            bucket.lower = 0.0;
        } else if bucket.upper == f64::INFINITY {
            return (bucket.lower, None);
        }
    }
    if count > h.count {
        count = h.count;
    }
    if count < rank {
        if h.sum.is_nan() {
            return (f64::NAN, Some(QuantileNote::NaNResult));
        }
        return (bucket.upper, None);
    }
    if forward {
        rank -= count - bucket.count;
    } else {
        rank = count - rank;
    }
    let mut note = None;
    if h.sum.is_nan() {
        let rest: f64 = buckets[k..].iter().map(|b| b.count).sum();
        if count + rest < h.count {
            note = Some(QuantileNote::NaNSkew);
        }
    }
    let fraction = rank / bucket.count;
    if custom || (bucket.lower <= 0.0 && bucket.upper >= 0.0) {
        return (
            bucket.lower + (bucket.upper - bucket.lower) * fraction,
            note,
        );
    }
    let lo = bucket.lower.abs().log2();
    let hi = bucket.upper.abs().log2();
    if bucket.lower > 0.0 {
        return ((lo + (hi - lo) * fraction).exp2(), note);
    }
    (-(hi + (lo - hi) * (1.0 - fraction)).exp2(), note)
}

/// The estimated fraction of observations between `lower` and `upper`;
/// true as the second value when NaN observations were left out.
pub(crate) fn histogram_fraction(lower: f64, upper: f64, h: &FloatHistogram) -> (f64, bool) {
    if h.count == 0.0 || lower.is_nan() || upper.is_nan() {
        return (f64::NAN, false);
    }
    if lower >= upper {
        return (0.0, false);
    }
    let custom = h.uses_custom_buckets();
    let buckets = h.all_buckets();
    let (mut count, mut rank) = (0.0, 0.0);
    let (mut lower_rank, mut upper_rank) = (0.0, 0.0);
    let (mut lower_set, mut upper_set) = (false, false);
    let mut k = 0;
    while k < buckets.len() {
        let mut b = buckets[k];
        k += 1;
        count += b.count;
        let mut zero_bucket = false;
        if custom {
            if b.lower == f64::NEG_INFINITY && b.upper > 0.0 {
                b.lower = 0.0;
            }
        } else if b.lower <= 0.0 && b.upper >= 0.0 {
            zero_bucket = true;
            if h.negative_buckets.is_empty() && !h.positive_buckets.is_empty() {
                b.lower = 0.0;
            } else if h.positive_buckets.is_empty() && !h.negative_buckets.is_empty() {
                b.upper = 0.0;
            }
        }
        let linear = custom || zero_bucket;
        let interpolate = |v: f64| -> f64 {
            if linear && b.lower == f64::NEG_INFINITY {
                return b.count;
            }
            rank + b.count * b.fraction_below(v, linear)
        };
        if !lower_set && b.lower >= lower {
            lower_rank = rank;
            lower_set = true;
        }
        if !upper_set && b.lower >= upper {
            upper_rank = rank;
            upper_set = true;
        }
        if lower_set && upper_set {
            break;
        }
        if !lower_set && b.lower < lower && b.upper > lower {
            lower_rank = interpolate(lower);
            lower_set = true;
        }
        if !upper_set && b.lower < upper && b.upper > upper {
            upper_rank = interpolate(upper);
            upper_set = true;
        }
        if lower_set && upper_set {
            break;
        }
        rank += b.count;
    }
    let mut nan_note = false;
    if h.sum.is_nan() {
        count += buckets[k..].iter().map(|b| b.count).sum::<f64>();
        nan_note = count < h.count;
    } else {
        count = h.count;
    }
    if !lower_set || lower_rank > count {
        lower_rank = count;
    }
    if !upper_set || upper_rank > count {
        upper_rank = count;
    }
    ((upper_rank - lower_rank) / h.count, nan_note)
}

/// The estimated variance of a histogram's observations: each bucket's
/// observations taken at its (geometric, for exponential buckets) middle.
pub(crate) fn histogram_variance(h: &FloatHistogram) -> f64 {
    let mean = h.sum / h.count;
    let custom = h.uses_custom_buckets();
    let mut v = crate::functions::KahanSum::default();
    for b in h.all_buckets() {
        if b.count == 0.0 {
            continue;
        }
        let x = if custom {
            (b.upper + b.lower) / 2.0
        } else if b.lower <= 0.0 && b.upper >= 0.0 {
            0.0
        } else {
            let g = (b.upper * b.lower).sqrt();
            if b.upper < 0.0 {
                -g
            } else {
                g
            }
        };
        let d = x - mean;
        v.add(b.count * d * d);
    }
    v.value() / h.count
}

/// Why histograms could not be summed.
pub(crate) struct Incompatible<'a> {
    /// The histogram that did not fit.
    pub at: usize,
    _h: std::marker::PhantomData<&'a ()>,
}

/// The sum (or mean) of histograms with compensated summation, as
/// Prometheus computes `sum`/`avg` and `sum_over_time`/`avg_over_time`:
/// a mean switches to incremental averaging once the sum would overflow.
/// `reconciled` is set if differing custom bounds were intersected.
pub(crate) fn sum_hists<'a>(
    hists: &[&'a FloatHistogram],
    avg: bool,
    reconciled: &mut bool,
) -> Result<FloatHistogram, Incompatible<'a>> {
    let fail = |at| Incompatible {
        at,
        _h: std::marker::PhantomData,
    };
    let Some(first) = hists.first() else {
        return Ok(FloatHistogram::default());
    };
    let mut sum = FloatHistogram::clone(first);
    let mut c = FloatHistogram::default();
    let mut mean: Option<FloatHistogram> = None;
    for (k, h) in hists.iter().enumerate().skip(1) {
        let n = (k + 1) as f64;
        if mean.is_none() {
            let (mut s2, mut c2) = (sum.clone(), c.clone());
            let r = s2.kahan_add(h, &mut c2).map_err(|_| fail(k))?;
            *reconciled |= r.custom_bounds_reconciled;
            if !avg || !s2.has_overflow() {
                sum = s2;
                c = c2;
                continue;
            }
            let mut m = sum.clone();
            m.div(n - 1.0);
            c.div(n - 1.0);
            mean = Some(m);
        }
        if let Some(m) = &mut mean {
            let q = (n - 1.0) / n;
            c.mul(q);
            m.mul(q);
            let mut part = FloatHistogram::clone(h);
            part.div(n);
            let r = m.kahan_add(&part, &mut c).map_err(|_| fail(k))?;
            *reconciled |= r.custom_bounds_reconciled;
        }
    }
    let n = hists.len() as f64;
    let mut out = match mean {
        Some(m) => m,
        None => {
            if avg {
                sum.div(n);
                c.div(n);
            }
            sum
        }
    };
    if !c.positive_buckets.is_empty()
        || !c.negative_buckets.is_empty()
        || c.count != 0.0
        || c.sum != 0.0
        || c.zero_count != 0.0
    {
        c.counter_reset_hint = out.counter_reset_hint;
        c.schema = out.schema;
        c.zero_threshold = out.zero_threshold;
        c.custom_values = out.custom_values.clone();
        let _ = out.add(&c);
    }
    Ok(out)
}

/// A histogram result shared by the steps that hold it.
pub(crate) fn shared(h: FloatHistogram) -> Hist {
    Arc::new(h)
}
