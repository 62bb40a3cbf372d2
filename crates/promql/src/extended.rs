//! Anchored and smoothed selectors (Prometheus v3.16, always on):
//! `x[5m] anchored` takes the last sample at or before a window's start as
//! its baseline, `x[5m] smoothed` interpolates the series at the window's
//! start and end, `x smoothed` interpolates an instant selector at each
//! step. Windows read one lookback further back (and, smoothed, one
//! further ahead). Only `rate`, `increase`, `delta` (and, anchored,
//! `changes` and `resets`) accept them.
//!
//! Start timestamps (`--enable-feature=use-start-timestamps`, off by
//! default) are not modelled: a series is read without them.

use ferrite_model::{CounterResetHint, FloatHistogram};

use crate::annotations::{HistOp, Note};
use crate::engine::{Hist, RangeData, StepValues};
use crate::functions::RangeFn;
use crate::histfn::{self, Out, Window};
use crate::parser::VectorSelector;
use crate::storage::is_stale_nan;
use crate::{eval_err, Result};

/// How a range selector is extended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Extension {
    Anchored,
    Smoothed,
}

/// An extended selector's windows: which extension, and the lookback
/// they reach by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Extended {
    pub kind: Extension,
    pub lookback: i64,
}

impl Extension {
    /// The selector's extension, if any.
    pub fn of(vs: &VectorSelector) -> Option<Extension> {
        if vs.anchored {
            Some(Extension::Anchored)
        } else if vs.smoothed {
            Some(Extension::Smoothed)
        } else {
            None
        }
    }

    /// The functions that accept the extension, sorted.
    fn functions(self) -> &'static [&'static str] {
        match self {
            Extension::Anchored => &["changes", "delta", "increase", "rate", "resets"],
            Extension::Smoothed => &["delta", "increase", "rate"],
        }
    }

    /// Refuses a function that does not accept the extension, with
    /// Prometheus' error.
    pub fn check_function(self, func: &str) -> Result<()> {
        let allowed = self.functions();
        if allowed.contains(&func) {
            return Ok(());
        }
        let name = match self {
            Extension::Anchored => "anchored",
            Extension::Smoothed => "smoothed",
        };
        eval_err(format!(
            "{name} modifier can only be used with: {} - not with {func}",
            allowed.join(", ")
        ))
    }
}

impl Extended {
    /// How far before a window's start and after its end samples are read.
    pub fn reach(&self) -> (i64, i64) {
        match self.kind {
            Extension::Anchored => (self.lookback, 0),
            Extension::Smoothed => (self.lookback, self.lookback),
        }
    }

    fn smoothed(&self) -> bool {
        self.kind == Extension::Smoothed
    }
}

/// A range function over a step's samples for an extended selector: the
/// window is (`w.start`, `w.end`], the samples reach around it (see
/// [`Extended::reach`]). The function was checked to accept the extension.
pub(crate) fn apply(
    func: RangeFn,
    ext: &Extended,
    w: &Window<'_>,
    range_secs: f64,
    values: &mut StepValues,
) -> Option<Out> {
    match func {
        RangeFn::Rate | RangeFn::Increase | RangeFn::Delta => {
            let edges = Edges {
                start: w.start,
                end: w.end,
                smoothed: ext.smoothed(),
                counter: func != RangeFn::Delta,
            };
            let scale = if func == RangeFn::Rate {
                range_secs
            } else {
                1.0
            };
            match (w.floats.is_empty(), w.hists.is_empty()) {
                (false, false) => {
                    values.note(Note::MixedFloatsHistograms);
                    None
                }
                (false, true) => float_rate(w.floats, &edges).map(|f| Out::F(f / scale)),
                (true, false) => hist_rate(w.hists, &edges, values).map(|mut h| {
                    if scale != 1.0 {
                        h.div(scale);
                    }
                    Out::H(h)
                }),
                (true, true) => None,
            }
        }
        _ => anchored_count(func, w, values),
    }
}

/// `changes`/`resets` from the anchor (the last sample, float or
/// histogram, at or before the window's start) on.
fn anchored_count(func: RangeFn, w: &Window<'_>, values: &mut StepValues) -> Option<Out> {
    let (f0, h0) = anchor(w.floats, w.hists, w.start)?;
    let (floats, hists) = (&w.floats[f0..], &w.hists[h0..]);
    if hists.is_empty() {
        return func
            .apply(floats, w.start, w.end, w.step_t, w.param)
            .map(Out::F);
    }
    let win = Window {
        floats,
        hists,
        start: w.start,
        end: w.end,
        step_t: w.step_t,
        param: w.param,
    };
    histfn::apply(func, &win, values)
}

/// Where an anchored window starts in the floats and the histograms: the
/// last sample at or before `start` (of either kind) and everything after
/// it. `None` if no sample lies after `start`.
fn anchor(floats: &[(i64, f64)], hists: &[(i64, Hist)], start: i64) -> Option<(usize, usize)> {
    let f_le = floats.partition_point(|p| p.0 <= start);
    let h_le = hists.partition_point(|p| p.0 <= start);
    if f_le >= floats.len() && h_le >= hists.len() {
        return None;
    }
    Some(match (f_le.checked_sub(1), h_le.checked_sub(1)) {
        (None, None) => (0, 0),
        (Some(f), None) => (f, h_le),
        (Some(f), Some(h)) if floats[f].0 >= hists[h].0 => (f, h_le),
        (_, Some(h)) => (f_le, h),
    })
}

/// A window's bounds and how its edges are taken.
struct Edges {
    start: i64,
    end: i64,
    smoothed: bool,
    counter: bool,
}

/// Which samples make the edges: `first` (the last at or before the
/// start, else the first) and `last` (smoothed: the first at or after the
/// end, else the last). `None` if nothing lies inside the window.
fn edge_indices<T>(s: &[(i64, T)], e: &Edges) -> Option<(usize, usize)> {
    let n = s.len();
    let mut last = n.checked_sub(1)?;
    let first = s[..last]
        .partition_point(|p| p.0 <= e.start)
        .saturating_sub(1);
    if e.smoothed {
        last = s[..last].partition_point(|p| p.0 < e.end);
    }
    if s[last].0 <= e.start || (e.smoothed && s[first].0 > e.end) {
        return None;
    }
    Some((first, last))
}

/// Linear interpolation at `t`; a counter that dropped restarts from 0.
fn interpolate(p1: (i64, f64), p2: (i64, f64), t: i64, counter: bool) -> f64 {
    let y1 = if counter && p2.1 < p1.1 { 0.0 } else { p1.1 };
    y1 + (p2.1 - y1) * (t - p1.0) as f64 / (p2.0 - p1.0) as f64
}

/// The value at the window's start: the anchor sample's, or interpolated
/// towards the next when smoothed.
fn left_value(f: &[(i64, f64)], first: usize, e: &Edges) -> f64 {
    let p = f[first];
    if p.0 >= e.start || !e.smoothed {
        return p.1;
    }
    interpolate(p, f[first + 1], e.start, e.counter)
}

/// The value at the window's end: the last sample's, or interpolated from
/// the one before when smoothed and past the end.
fn right_value(f: &[(i64, f64)], last: usize, e: &Edges) -> f64 {
    let p = f[last];
    if p.0 <= e.end || last == 0 {
        return p.1;
    }
    if e.smoothed {
        interpolate(f[last - 1], p, e.end, e.counter)
    } else {
        f[last - 1].1
    }
}

/// The increase (or delta) over the window's edges, counter resets
/// between them added back.
fn float_rate(f: &[(i64, f64)], e: &Edges) -> Option<f64> {
    let (first, last) = edge_indices(f, e)?;
    let left = left_value(f, first, e);
    let right = right_value(f, last, e);
    let mut result = right - left;
    if e.counter {
        let a = first + usize::from(f[first].0 <= e.start);
        let b = (last + 1).saturating_sub(usize::from(f[last].0 >= e.end));
        let inner = f.get(a..b.max(a)).unwrap_or(&[]);
        let mut prev = left;
        for &(_, v) in inner {
            if v < prev {
                result += prev;
            }
            prev = v;
        }
        if right < prev {
            result += prev;
        }
    }
    Some(result)
}

/// `h2` at `t` between `(t1, h1)` and `(t2, h2)`; a counter that reset
/// restarts from empty.
fn interpolate_hist(
    (t1, h1): (i64, &FloatHistogram),
    (t2, h2): (i64, &FloatHistogram),
    t: i64,
    counter: bool,
    values: &mut StepValues,
) -> Option<FloatHistogram> {
    if t == t1 {
        return Some(h1.clone());
    }
    if t == t2 {
        return Some(h2.clone());
    }
    let fraction = (t - t1) as f64 / (t2 - t1) as f64;
    let mut out = h2.clone();
    if counter && h2.detect_reset(h1) {
        out.mul(fraction);
        return Some(out);
    }
    combine(&mut out, h1, HistOp::Sub, values)?;
    out.mul(fraction);
    combine(&mut out, h1, HistOp::Add, values)?;
    Some(out)
}

/// `a += b` or `a -= b`, with the annotations Prometheus gives; `None` if
/// the two cannot be combined.
fn combine(
    a: &mut FloatHistogram,
    b: &FloatHistogram,
    op: HistOp,
    values: &mut StepValues,
) -> Option<()> {
    let res = if op == HistOp::Add {
        a.add(b)
    } else {
        a.sub(b)
    };
    match res {
        Ok(c) => {
            if c.custom_bounds_reconciled {
                values.note(Note::CustomBucketsReconciled(op));
            }
            Some(())
        }
        Err(_) => {
            values.note(Note::MixedExponentialCustom);
            None
        }
    }
}

/// The histograms' layouts agree, and (for counters) none is a gauge.
fn check_hist_range(h: &[(i64, Hist)], counter: bool, values: &mut StepValues) -> bool {
    let custom = h[0].1.uses_custom_buckets();
    for (_, x) in h {
        if x.uses_custom_buckets() != custom {
            values.note(Note::MixedExponentialCustom);
            return false;
        }
        if counter && x.counter_reset_hint == CounterResetHint::Gauge {
            values.note(Note::NotCounter);
        }
    }
    true
}

/// [`float_rate`] of histograms.
fn hist_rate(h: &[(i64, Hist)], e: &Edges, values: &mut StepValues) -> Option<FloatHistogram> {
    let (first, last) = edge_indices(h, e)?;
    if !check_hist_range(&h[first..=last], e.counter, values) {
        return None;
    }
    let point = |i: usize| (h[i].0, &*h[i].1);
    let left = if e.smoothed && h[first].0 < e.start {
        interpolate_hist(point(first), point(first + 1), e.start, e.counter, values)?
    } else {
        FloatHistogram::clone(&h[first].1)
    };
    let right = if e.smoothed && last > 0 && h[last].0 > e.end {
        interpolate_hist(point(last - 1), point(last), e.end, e.counter, values)?
    } else {
        FloatHistogram::clone(&h[last].1)
    };
    let gauge = |x: &FloatHistogram| x.counter_reset_hint == CounterResetHint::Gauge;
    let both_gauges = gauge(&left) && gauge(&right);
    if !e.counter && !both_gauges {
        values.note(Note::NotGauge);
    }
    let mut result = right.clone();
    combine(&mut result, &left, HistOp::Sub, values)?;
    if e.counter {
        if let Some(c) = hist_correction(h, first, last, &left, &right, e, values)? {
            combine(&mut result, &c, HistOp::Add, values)?;
        }
    }
    result.counter_reset_hint = CounterResetHint::Gauge;
    result.compact();
    Some(result)
}

/// What counter resets between the edges take away, to be added back:
/// `Some(None)` for none, `None` if the histograms cannot be combined.
fn hist_correction(
    h: &[(i64, Hist)],
    first: usize,
    last: usize,
    left: &FloatHistogram,
    right: &FloatHistogram,
    e: &Edges,
    values: &mut StepValues,
) -> Option<Option<FloatHistogram>> {
    let mut from = first + 1;
    let mut prev: &FloatHistogram = left;
    // A reset the smoothed left edge interpolated across is accounted
    // for already.
    if e.smoothed && h[first].0 < e.start && h[first + 1].1.detect_reset(&h[first].1) {
        prev = &h[first + 1].1;
        from += 1;
    }
    if from > last {
        return Some(None);
    }
    let mut correction: Option<FloatHistogram> = None;
    let mut add = |c: &FloatHistogram, values: &mut StepValues| match correction.as_mut() {
        None => {
            correction = Some(c.clone());
            Some(())
        }
        Some(sum) => combine(sum, c, HistOp::Add, values),
    };
    for (_, x) in &h[from..last] {
        if x.detect_reset(prev) {
            add(prev, values)?;
        }
        prev = x;
    }
    if right.detect_reset(prev) {
        add(prev, values)?;
    }
    Some(correction)
}

/// A matrix selector's samples as an anchored or smoothed range gives
/// them: the edge values at the window's start and end, and the samples
/// strictly inside (floats only; Prometheus refuses histograms).
pub(crate) fn extend_floats(
    f: &[(i64, f64)],
    start: i64,
    end: i64,
    smoothed: bool,
) -> Vec<(i64, f64)> {
    let e = Edges {
        start,
        end,
        smoothed,
        counter: false,
    };
    let Some((first, last)) = edge_indices(f, &e) else {
        return Vec::new();
    };
    let left = left_value(f, first, &e);
    let right = right_value(f, last, &e);
    let a = first + usize::from(f[first].0 <= start);
    let b = (last + 1).saturating_sub(usize::from(f[last].0 >= end));
    let mut out = Vec::with_capacity(b.saturating_sub(a) + 2);
    out.push((start, left));
    out.extend_from_slice(f.get(a..b.max(a)).unwrap_or(&[]));
    out.push((end, right));
    out
}

/// A matrix selector's value (instant queries) with anchored or smoothed
/// windows: each series' edge values and the samples between (the window
/// then holds its start, so it is widened by 1 ms). Prometheus refuses
/// histograms here.
pub(crate) fn extend_matrix(mut rd: RangeData, ext: Extended, ts: &[i64]) -> Result<RangeData> {
    let name = match ext.kind {
        Extension::Anchored => "anchored",
        Extension::Smoothed => "smoothed",
    };
    if rd.series.iter().any(|s| !s.hists.is_empty()) {
        return eval_err(format!("{name} modifier is not supported with histograms"));
    }
    let end = rd.eval_time(ts.first().copied().unwrap_or(0));
    let start = end - rd.range;
    for s in &mut rd.series {
        s.samples = extend_floats(&s.samples, start, end, ext.smoothed());
    }
    rd.series.retain(|s| !s.samples.is_empty());
    rd.range += 1;
    rd.extended = None;
    Ok(rd)
}

/// `x smoothed` at every step: the series interpolated at each evaluation
/// time from the samples within a lookback either side (staleness markers
/// left out); a step whose samples mix floats and histograms has no value
/// and a warning.
pub(crate) fn pick_smoothed(
    etimes: &[i64],
    lookback: i64,
    floats: &[(i64, f64)],
    hists: &[(i64, Hist)],
    out: &mut StepValues,
) {
    let floats: Vec<(i64, f64)> = floats
        .iter()
        .copied()
        .filter(|p| !is_stale_nan(p.1))
        .collect();
    let hists: Vec<(i64, Hist)> = hists.iter().filter(|p| !p.1.is_stale()).cloned().collect();
    for (step, &t) in etimes.iter().enumerate() {
        let f = around(&floats, t, lookback);
        let h = around(&hists, t, lookback);
        match (f.is_empty(), h.is_empty()) {
            (false, false) => out.note(Note::MixedFloatsHistograms),
            (false, true) => {
                if let Some(v) = smoothed_float(f, t) {
                    out.floats.push((step, v));
                }
            }
            (true, false) => {
                if let Some(x) = smoothed_hist(h, t, out) {
                    out.hists.push((step, histfn::shared(x)));
                }
            }
            (true, true) => {}
        }
    }
}

/// The samples in (t - lookback, t + lookback].
fn around<T>(s: &[(i64, T)], t: i64, lookback: i64) -> &[(i64, T)] {
    let a = s.partition_point(|p| p.0 <= t - lookback);
    let b = s.partition_point(|p| p.0 <= t + lookback);
    &s[a..b.max(a)]
}

/// An instant selector's smoothed value at `t` from the samples around it:
/// the sample at `t`, else interpolated between its neighbours, else the
/// last one before (`None` before the first).
pub(crate) fn smoothed_float(f: &[(i64, f64)], t: i64) -> Option<f64> {
    let i = f.partition_point(|p| p.0 < t);
    match (f.get(i), i.checked_sub(1)) {
        (Some(p), _) if p.0 == t => Some(p.1),
        (Some(&next), Some(j)) => Some(interpolate(f[j], next, t, false)),
        (None, Some(j)) => Some(f[j].1),
        _ => None,
    }
}

/// [`smoothed_float`] of histograms: interpolated as a counter unless both
/// neighbours are gauges; a value carried forward loses its hint.
pub(crate) fn smoothed_hist(
    h: &[(i64, Hist)],
    t: i64,
    values: &mut StepValues,
) -> Option<FloatHistogram> {
    let i = h.partition_point(|p| p.0 < t);
    match (h.get(i), i.checked_sub(1)) {
        (Some(p), _) if p.0 == t => Some(FloatHistogram::clone(&p.1)),
        (Some(next), Some(j)) => {
            let prev = &h[j];
            if prev.1.uses_custom_buckets() != next.1.uses_custom_buckets() {
                values.note(Note::MixedExponentialCustom);
                return None;
            }
            let gauge = |x: &FloatHistogram| x.counter_reset_hint == CounterResetHint::Gauge;
            let counter = !(gauge(&prev.1) && gauge(&next.1));
            interpolate_hist((prev.0, &prev.1), (next.0, &next.1), t, counter, values)
        }
        (None, Some(j)) => {
            let mut x = FloatHistogram::clone(&h[j].1);
            x.counter_reset_hint = CounterResetHint::Unknown;
            Some(x)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edges(start: i64, end: i64, smoothed: bool) -> Edges {
        Edges {
            start,
            end,
            smoothed,
            counter: true,
        }
    }

    #[test]
    fn anchored_increase_takes_the_sample_before_the_window() {
        // Samples at 0..=60s every 15s of 0, 1, 2, 3, 4; window (15s, 60s].
        let f: Vec<(i64, f64)> = (0..5).map(|i| (i * 15_000, i as f64)).collect();
        assert_eq!(float_rate(&f, &edges(15_000, 60_000, false)), Some(3.0));
        // Smoothed: interpolated at 10s and 50s.
        let g = [(0, 0.0), (20_000, 2.0), (60_000, 6.0)];
        assert_eq!(float_rate(&g, &edges(10_000, 50_000, true)), Some(4.0));
    }

    #[test]
    fn counter_resets_are_added_back() {
        let f = [(0, 5.0), (10_000, 1.0), (20_000, 3.0)];
        assert_eq!(float_rate(&f, &edges(0, 20_000, false)), Some(3.0));
    }

    #[test]
    fn extended_matrix_has_edge_points() {
        let f = [(0, 1.0), (60_000, 2.0), (120_000, 3.0)];
        assert_eq!(
            extend_floats(&f, 0, 120_000, false),
            vec![(0, 1.0), (60_000, 2.0), (120_000, 3.0)]
        );
        assert_eq!(smoothed_float(&f, 30_000), Some(1.5));
        assert_eq!(smoothed_float(&f, 150_000), Some(3.0));
        assert_eq!(smoothed_float(&f, -1), None);
    }

    #[test]
    fn only_some_functions_accept_extensions() {
        assert!(Extension::Anchored.check_function("resets").is_ok());
        let err = Extension::Smoothed.check_function("deriv").unwrap_err();
        assert_eq!(
            err.to_string(),
            "smoothed modifier can only be used with: delta, increase, rate - not with deriv"
        );
    }
}
