//! PromQL functions over floats.
//!
//! Range-vector functions see, per step and series, the samples of the
//! window (t - range, t]; instant-vector functions map samples. Unless a
//! function keeps what the series measures (`last_over_time`,
//! `first_over_time`, `sort*`, `label_*`), its output is marked to lose the
//! metric name.

use std::ops::ControlFlow;
use std::sync::Arc;

use crate::parser::{Call, Expr};

use crate::aggregate::{avg, variance};
use crate::annotations::{with_metric_name, Monotonicity, SORT_WARNING};
use crate::engine::DUPLICATE_LABELSET;
use crate::engine::{
    eval_series, read_series_samples, window_in, Ev, Evaluator, Hist, Lbl, RangeData, Samp,
    StepValues,
};
use crate::extended::{Extended, Extension};
use crate::stats_hints;
use crate::storage::{compile_anchored, Labels, METRIC_NAME};
use crate::{eval_err, Result};
use ferrite_model::gofloat::parse_go_float;
use ferrite_model::FloatHistogram;

/// Neumaier-compensated summation, as Prometheus sums floats.
#[derive(Default, Clone, Copy, Debug)]
pub struct KahanSum {
    sum: f64,
    c: f64,
}

impl KahanSum {
    pub fn add(&mut self, v: f64) {
        let t = self.sum + v;
        if t.is_infinite() {
            self.c = 0.0;
        } else if self.sum.abs() >= v.abs() {
            self.c += (self.sum - t) + v;
        } else {
            self.c += (v - t) + self.sum;
        }
        self.sum = t;
    }

    pub fn value(&self) -> f64 {
        if self.sum.is_infinite() {
            self.sum
        } else {
            self.sum + self.c
        }
    }
}

/// Go's `math.Max`/`math.Min`: NaN wins.
fn go_max(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.max(b)
    }
}

fn go_min(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.min(b)
    }
}

/// The φ-quantile of `vals` with linear interpolation between ranks.
pub fn quantile(q: f64, mut vals: Vec<f64>) -> f64 {
    if vals.is_empty() || q.is_nan() {
        return f64::NAN;
    }
    if q < 0.0 {
        return f64::NEG_INFINITY;
    }
    if q > 1.0 {
        return f64::INFINITY;
    }
    // NaN sorts first, as Go's sort.Float64s puts it.
    vals.sort_by(|a, b| match (a.is_nan(), b.is_nan()) {
        (true, true) => std::cmp::Ordering::Equal,
        (true, false) => std::cmp::Ordering::Less,
        (false, true) => std::cmp::Ordering::Greater,
        _ => a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal),
    });
    let n = vals.len() as f64;
    let rank = q * (n - 1.0);
    let lower = rank.floor().max(0.0);
    let upper = (lower + 1.0).min(n - 1.0);
    let w = rank - rank.floor();
    // On a sample exactly, its value (an infinity weighted by 0 is NaN).
    if w == 0.0 {
        return vals[lower as usize];
    }
    vals[lower as usize] * (1.0 - w) + vals[upper as usize] * w
}

/// xxHash64 (seed 0) of the label set's `name\xffvalue\xff...` bytes, as
/// Prometheus' `labels.Hash`.
pub fn labels_hash(ls: &Labels) -> u64 {
    let mut b = Vec::new();
    for l in ls {
        b.extend_from_slice(l.name.as_bytes());
        b.push(0xff);
        b.extend_from_slice(l.value.as_bytes());
        b.push(0xff);
    }
    xxh64(&b)
}

fn xxh64(data: &[u8]) -> u64 {
    const P1: u64 = 0x9E37_79B1_85EB_CA87;
    const P2: u64 = 0xC2B2_AE3D_27D4_EB4F;
    const P3: u64 = 0x1656_67B1_9E37_79F9;
    const P4: u64 = 0x85EB_CA77_C2B2_AE63;
    const P5: u64 = 0x27D4_EB2F_1656_67C5;
    fn round(acc: u64, lane: u64) -> u64 {
        acc.wrapping_add(lane.wrapping_mul(P2))
            .rotate_left(31)
            .wrapping_mul(P1)
    }
    fn merge(h: u64, v: u64) -> u64 {
        (h ^ round(0, v)).wrapping_mul(P1).wrapping_add(P4)
    }
    let rd64 = |b: &[u8]| u64::from_le_bytes(b[..8].try_into().unwrap_or([0; 8]));
    let mut p = 0;
    let n = data.len();
    let mut h: u64;
    if n >= 32 {
        let mut v = [P1.wrapping_add(P2), P2, 0, 0u64.wrapping_sub(P1)];
        while p + 32 <= n {
            for (j, acc) in v.iter_mut().enumerate() {
                *acc = round(*acc, rd64(&data[p + 8 * j..]));
            }
            p += 32;
        }
        h = v[0]
            .rotate_left(1)
            .wrapping_add(v[1].rotate_left(7))
            .wrapping_add(v[2].rotate_left(12))
            .wrapping_add(v[3].rotate_left(18));
        for acc in v {
            h = merge(h, acc);
        }
    } else {
        h = P5;
    }
    h = h.wrapping_add(n as u64);
    while p + 8 <= n {
        h ^= round(0, rd64(&data[p..]));
        h = h.rotate_left(27).wrapping_mul(P1).wrapping_add(P4);
        p += 8;
    }
    if p + 4 <= n {
        let w = u32::from_le_bytes(data[p..p + 4].try_into().unwrap_or([0; 4])) as u64;
        h ^= w.wrapping_mul(P1);
        h = h.rotate_left(23).wrapping_mul(P2).wrapping_add(P3);
        p += 4;
    }
    while p < n {
        h ^= (data[p] as u64).wrapping_mul(P5);
        h = h.rotate_left(11).wrapping_mul(P1);
        p += 1;
    }
    h ^= h >> 33;
    h = h.wrapping_mul(P2);
    h ^= h >> 29;
    h = h.wrapping_mul(P3);
    h ^= h >> 32;
    h
}

/// Prometheus' extrapolated rate/increase/delta of a window.
///
/// The change over the window's samples (counter resets added back for
/// counters) is extrapolated towards the window's edges: fully if the first
/// or last sample is within 1.1 average sample intervals of its edge, else
/// by half an interval. A counter is not extrapolated below zero. `rate`
/// divides by the window's length in seconds.
pub fn extrapolated_rate(
    w: &[(i64, f64)],
    range_start: i64,
    range_end: i64,
    is_counter: bool,
    is_rate: bool,
) -> Option<f64> {
    if w.len() < 2 {
        return None;
    }
    let (first_t, first_v) = w[0];
    let (last_t, last_v) = w[w.len() - 1];
    let mut result = last_v - first_v;
    if is_counter {
        for p in w.windows(2) {
            if p[1].1 < p[0].1 {
                result += p[0].1;
            }
        }
    }
    let to_zero = (is_counter && result > 0.0 && first_v >= 0.0).then(|| first_v / result);
    let factor = extrapolation_factor(
        first_t,
        last_t,
        w.len(),
        range_start,
        range_end,
        to_zero,
        is_rate,
    );
    Some(result * factor)
}

/// The factor a change over `n` samples from `first_t` to `last_t` is
/// extrapolated by to the window (range_start, range_end]: fully to an
/// edge within 1.1 average sample intervals, else by half an interval; a
/// counter not beyond where it would be zero (`to_zero`: the first value
/// as a fraction of the change); divided by the window's seconds for a
/// rate.
pub(crate) fn extrapolation_factor(
    first_t: i64,
    last_t: i64,
    n: usize,
    range_start: i64,
    range_end: i64,
    to_zero: Option<f64>,
    is_rate: bool,
) -> f64 {
    let sampled = (last_t - first_t) as f64 / 1000.0;
    let avg_step = sampled / n.saturating_sub(1).max(1) as f64;
    let threshold = avg_step * 1.1;
    let mut to_start = (first_t - range_start) as f64 / 1000.0;
    let mut to_end = (range_end - last_t) as f64 / 1000.0;
    if to_start >= threshold {
        to_start = avg_step / 2.0;
    }
    if let Some(ratio) = to_zero {
        let to_zero = sampled * ratio;
        if to_zero < to_start {
            to_start = to_zero;
        }
    }
    if to_end >= threshold {
        to_end = avg_step / 2.0;
    }
    let mut factor = if sampled != 0.0 {
        (sampled + to_start + to_end) / sampled
    } else {
        1.0
    };
    if is_rate {
        factor /= (range_end - range_start) as f64 / 1000.0;
    }
    factor
}

/// irate / idelta: from the last two samples.
pub fn instant_delta(w: &[(i64, f64)], is_rate: bool) -> Option<f64> {
    if w.len() < 2 {
        return None;
    }
    let (pt, pv) = w[w.len() - 2];
    let (lt, lv) = w[w.len() - 1];
    let d = if is_rate && lv < pv { lv } else { lv - pv };
    if is_rate {
        let dt = (lt - pt) as f64 / 1000.0;
        if dt == 0.0 {
            return None;
        }
        Some(d / dt)
    } else {
        Some(d)
    }
}

/// Least-squares slope and intercept (at `intercept_t`) of the samples.
pub fn linear_regression(w: &[(i64, f64)], intercept_t: i64) -> (f64, f64) {
    let n = w.len() as f64;
    let const_y = w.iter().all(|&(_, v)| v == w[0].1);
    let (mut sx, mut sy, mut sxy, mut sx2) = (
        KahanSum::default(),
        KahanSum::default(),
        KahanSum::default(),
        KahanSum::default(),
    );
    for &(t, v) in w {
        let x = (t - intercept_t) as f64 / 1000.0;
        sx.add(x);
        sy.add(v);
        sxy.add(x * v);
        sx2.add(x * x);
    }
    if const_y && w[0].1.is_finite() {
        return (0.0, w[0].1);
    }
    let (sx, sy, sxy, sx2) = (sx.value(), sy.value(), sxy.value(), sx2.value());
    let cov = sxy - sx * sy / n;
    let var = sx2 - sx * sx / n;
    let slope = cov / var;
    let intercept = sy / n - slope * sx / n;
    (slope, intercept)
}

/// Range-vector functions that keep the metric name.
fn keeps_name(name: &str) -> bool {
    matches!(name, "last_over_time" | "first_over_time")
}

fn matrix_arg_index(name: &str) -> usize {
    if name == "quantile_over_time" {
        1
    } else {
        0
    }
}

pub(crate) fn is_range_function(name: &str) -> bool {
    matches!(
        name,
        "rate"
            | "irate"
            | "increase"
            | "delta"
            | "idelta"
            | "deriv"
            | "predict_linear"
            | "avg_over_time"
            | "min_over_time"
            | "max_over_time"
            | "sum_over_time"
            | "count_over_time"
            | "last_over_time"
            | "first_over_time"
            | "present_over_time"
            | "quantile_over_time"
            | "stddev_over_time"
            | "stdvar_over_time"
            | "changes"
            | "resets"
    )
}

pub(crate) fn unwrap_parens(e: &Expr) -> &Expr {
    match e {
        Expr::Paren(p) => unwrap_parens(&p.expr),
        other => other,
    }
}

pub(crate) fn eval_call(ev: &mut Evaluator, call: &Call, ts: &[i64]) -> Result<Ev> {
    let name = call.func.name;
    let args: Vec<&Expr> = call.args.iter().collect();
    check_extensions(name, &args)?;
    if is_range_function(name) {
        return eval_range_function(ev, call, &args, ts);
    }
    match name {
        "time" => Ok(Ev::Scalar(ts.iter().map(|&t| t as f64 / 1000.0).collect())),
        "pi" => Ok(Ev::Scalar(vec![std::f64::consts::PI; ts.len()])),
        "vector" => {
            let v = ev.eval_scalar(args[0], ts)?;
            let empty: Lbl = Arc::new(Labels::empty());
            Ok(Ev::Vector(
                v.into_iter()
                    .map(|f| {
                        vec![Samp {
                            labels: empty.clone(),
                            f,
                            h: None,
                            drop_name: false,
                        }]
                    })
                    .collect(),
            ))
        }
        "scalar" => {
            let v = ev.eval_vector(args[0], ts)?;
            Ok(Ev::Scalar(
                v.into_iter()
                    .map(|vec| {
                        let mut floats = vec.iter().filter(|s| s.h.is_none());
                        match (floats.next(), floats.next()) {
                            (Some(s), None) => s.f,
                            _ => f64::NAN,
                        }
                    })
                    .collect(),
            ))
        }
        "timestamp" => {
            let steps = match unwrap_parens(args[0]) {
                Expr::VectorSelector(vs) => ev.eval_vector_selector(vs, ts, true)?,
                other => {
                    let mut v = ev.eval_vector(other, ts)?;
                    for (i, vec) in v.iter_mut().enumerate() {
                        for s in vec {
                            s.f = ts[i] as f64 / 1000.0;
                            s.h = None;
                        }
                    }
                    v
                }
            };
            Ok(Ev::Vector(mark_drop(steps)))
        }
        "abs" | "ceil" | "floor" | "exp" | "sqrt" | "ln" | "log2" | "log10" | "sgn" | "sin"
        | "cos" | "tan" | "asin" | "acos" | "atan" | "sinh" | "cosh" | "tanh" | "asinh"
        | "acosh" | "atanh" | "deg" | "rad" => {
            let f: fn(f64) -> f64 = match name {
                "abs" => f64::abs,
                "ceil" => f64::ceil,
                "floor" => f64::floor,
                "exp" => f64::exp,
                "sqrt" => f64::sqrt,
                "ln" => f64::ln,
                "log2" => f64::log2,
                "log10" => f64::log10,
                "sgn" => |x: f64| {
                    if x > 0.0 {
                        1.0
                    } else if x < 0.0 {
                        -1.0
                    } else {
                        x
                    }
                },
                "sin" => f64::sin,
                "cos" => f64::cos,
                "tan" => f64::tan,
                "asin" => f64::asin,
                "acos" => f64::acos,
                "atan" => f64::atan,
                "sinh" => f64::sinh,
                "cosh" => f64::cosh,
                "tanh" => f64::tanh,
                "asinh" => f64::asinh,
                "acosh" => f64::acosh,
                "atanh" => f64::atanh,
                "deg" => f64::to_degrees,
                _ => f64::to_radians,
            };
            let v = ev.eval_vector(args[0], ts)?;
            Ok(Ev::Vector(map_values(v, |_, x| Some(f(x)))))
        }
        "round" => {
            let v = ev.eval_vector(args[0], ts)?;
            let to = match args.get(1) {
                Some(e) => ev.eval_scalar(e, ts)?,
                None => vec![1.0; ts.len()],
            };
            Ok(Ev::Vector(map_values(v, |i, x| {
                let inv = 1.0 / to[i];
                Some((x * inv + 0.5).floor() / inv)
            })))
        }
        "clamp" | "clamp_min" | "clamp_max" => {
            let v = ev.eval_vector(args[0], ts)?;
            let a = ev.eval_scalar(args[1], ts)?;
            let b = match args.get(2) {
                Some(e) => ev.eval_scalar(e, ts)?,
                None => vec![0.0; ts.len()],
            };
            Ok(Ev::Vector(map_values(v, |i, x| match name {
                "clamp" if b[i] < a[i] => None,
                "clamp" => Some(go_max(a[i], go_min(b[i], x))),
                "clamp_min" => Some(go_max(a[i], x)),
                _ => Some(go_min(a[i], x)),
            })))
        }
        "minute" | "hour" | "day_of_month" | "day_of_week" | "day_of_year" | "days_in_month"
        | "month" | "year" => {
            let v = match args.first() {
                Some(e) => ev.eval_vector(e, ts)?,
                None => {
                    let empty: Lbl = Arc::new(Labels::empty());
                    ts.iter()
                        .map(|&t| {
                            vec![Samp {
                                labels: empty.clone(),
                                f: t as f64 / 1000.0,
                                h: None,
                                drop_name: false,
                            }]
                        })
                        .collect()
                }
            };
            Ok(Ev::Vector(map_values(v, |_, x| Some(date_part(name, x)))))
        }
        "sort" | "sort_desc" => {
            if ts.len() > 1 {
                let pos = Some(call.pos);
                ev.annos.warn(SORT_WARNING.to_string(), pos);
            }
            let mut v = ev.eval_vector(args[0], ts)?;
            let desc = name == "sort_desc";
            for vec in &mut v {
                vec.retain(|s| s.h.is_none());
                vec.sort_by(|a, b| match (a.f.is_nan(), b.f.is_nan()) {
                    (true, true) => std::cmp::Ordering::Equal,
                    (true, false) => std::cmp::Ordering::Greater,
                    (false, true) => std::cmp::Ordering::Less,
                    _ if desc => b.f.partial_cmp(&a.f).unwrap_or(std::cmp::Ordering::Equal),
                    _ => a.f.partial_cmp(&b.f).unwrap_or(std::cmp::Ordering::Equal),
                });
            }
            Ok(Ev::Vector(v))
        }
        "label_replace" => {
            let v = ev.eval_vector(args[0], ts)?;
            let dst = string_arg(ev, args[1], ts)?;
            let repl = string_arg(ev, args[2], ts)?;
            let src = string_arg(ev, args[3], ts)?;
            let re_s = string_arg(ev, args[4], ts)?;
            let re = compile_anchored(&re_s).map_err(|e| {
                crate::Error::Eval(format!(
                    "invalid regular expression in label_replace(): {e}"
                ))
            })?;
            if !valid_label_name_arg(call, 1, &dst) {
                return eval_err(format!(
                    "invalid destination label name in label_replace(): {dst}"
                ));
            }
            let v = if dst == METRIC_NAME { keep_name(v) } else { v };
            Ok(Ev::Vector(map_labels(v, |ls| {
                let val = ls.get(&src).to_string();
                if let Some(caps) = re.captures(&val) {
                    let mut res = String::new();
                    caps.expand(&repl, &mut res);
                    let mut l = ls.clone();
                    l.set(&dst, &res);
                    Some(l)
                } else {
                    None
                }
            })))
        }
        "label_join" => {
            let v = ev.eval_vector(args[0], ts)?;
            let dst = string_arg(ev, args[1], ts)?;
            let sep = string_arg(ev, args[2], ts)?;
            let mut srcs = Vec::new();
            for (i, a) in args.iter().enumerate().skip(3) {
                let src = string_arg(ev, a, ts)?;
                if !valid_label_name_arg(call, i, &src) {
                    return eval_err(format!("invalid source label name in label_join(): {src}"));
                }
                srcs.push(src);
            }
            if !valid_label_name_arg(call, 1, &dst) {
                return eval_err(format!(
                    "invalid destination label name in label_join(): {dst}"
                ));
            }
            let v = if dst == METRIC_NAME { keep_name(v) } else { v };
            Ok(Ev::Vector(map_labels(v, |ls| {
                let joined: Vec<&str> = srcs.iter().map(|s| ls.get(s)).collect();
                let mut l = ls.clone();
                l.set(&dst, &joined.join(&sep));
                Some(l)
            })))
        }
        "absent" => {
            let v = ev.eval_vector(args[0], ts)?;
            let labels: Lbl = Arc::new(absent_labels(args[0]));
            Ok(Ev::Vector(
                v.into_iter()
                    .map(|vec| {
                        if vec.is_empty() {
                            vec![Samp {
                                labels: labels.clone(),
                                f: 1.0,
                                h: None,
                                drop_name: false,
                            }]
                        } else {
                            Vec::new()
                        }
                    })
                    .collect(),
            ))
        }
        "absent_over_time" => {
            let rd = ev.eval_matrix(args[0], ts)?;
            let labels: Lbl = Arc::new(match unwrap_parens(args[0]) {
                Expr::MatrixSelector(ms) => absent_labels(&Expr::VectorSelector(ms.vs.clone())),
                _ => Labels::empty(),
            });
            Ok(Ev::Vector(
                ts.iter()
                    .map(|&t| {
                        let present = |i: usize| {
                            !rd.window(i, t).is_empty() || !rd.hist_window(i, t).is_empty()
                        };
                        if (0..rd.series.len()).any(present) {
                            Vec::new()
                        } else {
                            vec![Samp {
                                labels: labels.clone(),
                                f: 1.0,
                                h: None,
                                drop_name: false,
                            }]
                        }
                    })
                    .collect(),
            ))
        }
        "histogram_quantile" => {
            let q = ev.eval_scalar(args[0], ts)?;
            let v = ev.eval_vector(args[1], ts)?;
            let mut out = Vec::with_capacity(ts.len());
            let q_pos = call.args.first().map(Expr::pos);
            let hist = HistArg {
                pos: call.args.get(1).map(Expr::pos),
                monotonicity_info: true,
            };
            for (i, vec) in v.into_iter().enumerate() {
                let qi = q[i];
                if !(0.0..=1.0).contains(&qi) {
                    ev.annos.invalid_quantile(qi, q_pos);
                }
                let (natives, classic) = split_histograms(ev, &hist, vec);
                let mut step = Vec::new();
                for s in natives {
                    let Some(h) = &s.h else { continue };
                    let (f, note) = crate::histfn::histogram_quantile(qi, h);
                    if let Some(n) = note {
                        let text = match n {
                            crate::histfn::QuantileNote::NaNResult => "PromQL info: input to histogram_quantile has NaN observations, result is NaN",
                            crate::histfn::QuantileNote::NaNSkew => "PromQL info: input to histogram_quantile has NaN observations, result is skewed higher",
                        };
                        let name = native_name(ev, &s);
                        ev.annos.info(with_metric_name(text, &name), hist.pos);
                    }
                    step.push(native_result(s, f));
                }
                step.extend(classic_histogram_step(ev, &hist, ts[i], classic, |b| {
                    bucket_quantile_checked(qi, b)
                }));
                out.push(step);
            }
            Ok(Ev::Vector(out))
        }
        "histogram_fraction" => {
            let lo = ev.eval_scalar(args[0], ts)?;
            let hi = ev.eval_scalar(args[1], ts)?;
            let v = ev.eval_vector(args[2], ts)?;
            let mut out = Vec::with_capacity(ts.len());
            let hist = HistArg {
                pos: call.args.get(2).map(Expr::pos),
                monotonicity_info: false,
            };
            for (i, vec) in v.into_iter().enumerate() {
                let (l, u) = (lo[i], hi[i]);
                let (natives, classic) = split_histograms(ev, &hist, vec);
                let mut step = Vec::new();
                for s in natives {
                    let Some(h) = &s.h else { continue };
                    let (f, nan) = crate::histfn::histogram_fraction(l, u, h);
                    if nan {
                        let name = native_name(ev, &s);
                        ev.annos.info(with_metric_name("PromQL info: input to histogram_fraction has NaN observations, which are excluded from all fractions", &name), hist.pos);
                    }
                    step.push(native_result(s, f));
                }
                step.extend(classic_histogram_step(ev, &hist, ts[i], classic, |b| {
                    (bucket_fraction(l, u, b), None)
                }));
                out.push(step);
            }
            Ok(Ev::Vector(out))
        }
        "histogram_count" | "histogram_sum" | "histogram_avg" | "histogram_stddev"
        | "histogram_stdvar" => {
            // Native-histogram functions ignore float samples.
            let v = ev.eval_vector(args[0], ts)?;
            let f: fn(&FloatHistogram) -> f64 = match name {
                "histogram_count" => |h| h.count,
                "histogram_sum" => |h| h.sum,
                "histogram_avg" => |h| h.sum / h.count,
                "histogram_stddev" => |h| crate::histfn::histogram_variance(h).sqrt(),
                _ => crate::histfn::histogram_variance,
            };
            Ok(Ev::Vector(
                v.into_iter()
                    .map(|vec| {
                        vec.into_iter()
                            .filter_map(|s| {
                                let x = f(s.h.as_deref()?);
                                Some(Samp::float(s.labels, x, true))
                            })
                            .collect()
                    })
                    .collect(),
            ))
        }
        other => eval_err(format!("function {other:?} is not supported")),
    }
}

/// Whether the string argument `i` of `call` (evaluated to `s`) is a valid
/// label name: not empty and UTF-8. A literal is judged by its bytes as
/// Prometheus (Go) decodes them (`"\xff"` is no UTF-8 there).
fn valid_label_name_arg(call: &Call, i: usize, s: &str) -> bool {
    match call.args.get(i).map(unwrap_parens) {
        Some(Expr::StringLiteral(lit)) => lit.is_valid_label_name(),
        _ => crate::aggregate::valid_label_name(s),
    }
}

fn string_arg(ev: &mut Evaluator, e: &Expr, ts: &[i64]) -> Result<String> {
    match ev.eval(e, ts)? {
        Ev::Str(s) => Ok(s),
        other => eval_err(format!(
            "expected string argument, got {}",
            other.type_name()
        )),
    }
}

/// Setting `__name__` explicitly cancels a pending name drop.
fn keep_name(mut v: Vec<Vec<Samp>>) -> Vec<Vec<Samp>> {
    for vec in &mut v {
        for s in vec {
            s.drop_name = false;
        }
    }
    v
}

fn mark_drop(mut v: Vec<Vec<Samp>>) -> Vec<Vec<Samp>> {
    for vec in &mut v {
        for s in vec {
            s.drop_name = true;
        }
    }
    v
}

/// Maps float sample values (None drops the sample; histogram samples are
/// dropped) and marks the name dropped.
fn map_values(v: Vec<Vec<Samp>>, f: impl Fn(usize, f64) -> Option<f64>) -> Vec<Vec<Samp>> {
    v.into_iter()
        .enumerate()
        .map(|(i, vec)| {
            vec.into_iter()
                .filter_map(|mut s| {
                    if s.h.is_some() {
                        return None;
                    }
                    s.f = f(i, s.f)?;
                    s.drop_name = true;
                    Some(s)
                })
                .collect()
        })
        .collect()
}

/// Rewrites labels (None keeps them), per distinct label set. Equal
/// results share one `Arc` (so duplicates can be found by pointer).
fn map_labels(v: Vec<Vec<Samp>>, f: impl Fn(&Labels) -> Option<Labels>) -> Vec<Vec<Samp>> {
    let mut cache: std::collections::HashMap<Lbl, Lbl> = std::collections::HashMap::new();
    let mut interned: std::collections::HashSet<Lbl> = std::collections::HashSet::new();
    v.into_iter()
        .map(|vec| {
            vec.into_iter()
                .map(|mut s| {
                    let new = cache
                        .entry(s.labels.clone())
                        .or_insert_with(|| {
                            let l = f(&s.labels)
                                .map(Arc::new)
                                .unwrap_or_else(|| s.labels.clone());
                            match interned.get(&l) {
                                Some(k) => k.clone(),
                                None => {
                                    interned.insert(l.clone());
                                    l
                                }
                            }
                        })
                        .clone();
                    s.labels = new;
                    s
                })
                .collect()
        })
        .collect()
}

/// Labels of `absent(sel)`: the selector's equality matchers (not the name),
/// except names matched more than once.
fn absent_labels(e: &Expr) -> Labels {
    let Expr::VectorSelector(vs) = unwrap_parens(e) else {
        return match unwrap_parens(e) {
            Expr::MatrixSelector(ms) => absent_labels(&Expr::VectorSelector(ms.vs.clone())),
            _ => Labels::empty(),
        };
    };
    let mut seen: Vec<(String, Option<String>)> = Vec::new();
    for m in &vs.matchers {
        if ferrite_model::is_metadata_label(&m.name) {
            continue;
        }
        if let Some(e) = seen.iter_mut().find(|(n, _)| *n == m.name) {
            e.1 = None;
            continue;
        }
        let v = if m.kind == crate::storage::MatchType::Equal {
            Some(m.value.clone())
        } else {
            None
        };
        seen.push((m.name.clone(), v));
    }
    Labels::new(seen.into_iter().filter_map(|(n, v)| v.map(|v| (n, v))))
}

fn eval_range_function(ev: &mut Evaluator, call: &Call, args: &[&Expr], ts: &[i64]) -> Result<Ev> {
    let mut out: Vec<Vec<Samp>> = vec![Vec::new(); ts.len()];
    range_function_into(ev, call, args, ts, &mut out)?;
    Ok(Ev::Vector(out))
}

/// Where a range function's results go, one at a time. For each series
/// (numbered in selection order) results come in step order, and series
/// come in order, so a step's results arrive in series order.
pub(crate) trait RangeSink {
    fn push(&mut self, step: usize, series: usize, labels: &Lbl, f: f64, drop_name: bool);

    /// A histogram result.
    fn push_hist(&mut self, step: usize, series: usize, labels: &Lbl, h: Hist, drop_name: bool);

    /// How many values the sink holds after `pushed` were pushed into it,
    /// for the max-samples limit: all of them, unless it folds them.
    fn holds(&self, pushed: usize) -> usize {
        pushed
    }

    /// Whether the sink wants no more series: a fused aggregation that met
    /// a histogram, whose input the general path evaluates again.
    fn abandoned(&self) -> bool {
        false
    }
}

/// The instant vector of every step.
impl RangeSink for Vec<Vec<Samp>> {
    fn push(&mut self, step: usize, _series: usize, labels: &Lbl, f: f64, drop_name: bool) {
        self[step].push(Samp {
            labels: labels.clone(),
            f,
            h: None,
            drop_name,
        });
    }

    fn push_hist(&mut self, step: usize, _series: usize, labels: &Lbl, h: Hist, drop_name: bool) {
        self[step].push(Samp {
            labels: labels.clone(),
            f: 0.0,
            h: Some(h),
            drop_name,
        });
    }
}

/// A range function applied to one series after another.
struct RangeJob<'a> {
    func: RangeFn,
    ts: &'a [i64],
    scalar_arg: Option<&'a [f64]>,
    drop: bool,
    /// Drop the name now (see [`Evaluator::settle_names`]).
    strip: bool,
    /// Per step: whether some series had samples in the window (only
    /// tracked for `quantile_over_time`'s parameter check).
    any_window: Vec<bool>,
    /// The stripped labels of the series that had output.
    stripped: Vec<Lbl>,
    /// Annotations, with the metric name of the series they are about.
    notes: Vec<(crate::annotations::Note, String)>,
}

impl RangeJob<'_> {
    /// The function's value at every step whose window holds samples, as
    /// (step, value) in step order.
    fn values(
        &self,
        spec: &RangeData,
        samples: &[(i64, f64)],
        hists: &[(i64, Hist)],
        out: &mut StepValues,
    ) {
        out.clear();
        if let Some(ext) = &spec.extended {
            return self.extended_values(spec, ext, samples, hists, out);
        }
        let mut cursor = (0usize, 0usize);
        let mut hcursor = (0usize, 0usize);
        let mut as_read = Vec::new();
        let mut prev_end = None;
        for (step, &t) in self.ts.iter().enumerate() {
            let end = spec.eval_time(t);
            let w = window_in(samples, end, spec.range, &mut cursor);
            let mut wh = if hists.is_empty() {
                &[]
            } else {
                window_in(hists, end, spec.range, &mut hcursor)
            };
            out.count_window(w, wh, prev_end.replace(end));
            if spec.stats_hints && !wh.is_empty() {
                let (from, to) = hcursor;
                stats_hints::derive_window(hists, from, to, end - spec.range, &mut as_read);
                wh = &as_read;
            }
            let p = self.scalar_arg.map_or(0.0, |v| v[step]);
            if !wh.is_empty() {
                let win = crate::histfn::Window {
                    floats: w,
                    hists: wh,
                    start: end - spec.range,
                    end,
                    step_t: t,
                    param: p,
                };
                let result = crate::histfn::apply(self.func, &win, out);
                out.push_result(step, result);
                continue;
            }
            if w.is_empty() {
                continue;
            }
            if let Some(f) = self.func.apply(w, end - spec.range, end, t, p) {
                out.floats.push((step, f));
            }
        }
    }

    /// [`Self::values`] over anchored or smoothed windows, which reach one
    /// lookback before their start (and, smoothed, after their end).
    fn extended_values(
        &self,
        spec: &RangeData,
        ext: &Extended,
        samples: &[(i64, f64)],
        hists: &[(i64, Hist)],
        out: &mut StepValues,
    ) {
        let (before, after) = ext.reach();
        let reach = spec.range + before + after;
        let mut cursor = (0usize, 0usize);
        let mut hcursor = (0usize, 0usize);
        let mut prev_end = None;
        for (step, &t) in self.ts.iter().enumerate() {
            let end = spec.eval_time(t);
            let w = crate::histfn::Window {
                floats: window_in(samples, end + after, reach, &mut cursor),
                hists: window_in(hists, end + after, reach, &mut hcursor),
                start: end - spec.range,
                end,
                step_t: t,
                param: self.scalar_arg.map_or(0.0, |v| v[step]),
            };
            out.count_window(w.floats, w.hists, prev_end.replace(end + after));
            let range_secs = spec.range as f64 / 1000.0;
            let result = crate::extended::apply(self.func, ext, &w, range_secs, out);
            out.push_result(step, result);
        }
    }

    /// Hands series `i`'s values to `sink`, with its output labels. (Only
    /// `quantile_over_time` tracks windows, and it has a value for every
    /// step whose window holds samples.)
    fn emit(
        &mut self,
        i: usize,
        labels: &Lbl,
        drop_name: bool,
        values: &StepValues,
        sink: &mut dyn RangeSink,
    ) {
        for n in &values.notes {
            self.notes.push((*n, labels.metric_name().to_string()));
        }
        if values.len() == 0 {
            return;
        }
        let track = !self.any_window.is_empty();
        let l = if self.strip {
            let mut l = (**labels).clone();
            l.drop_metric_name();
            let l = Arc::new(l);
            self.stripped.push(l.clone());
            l
        } else {
            labels.clone()
        };
        let dn = !self.strip && (self.drop || drop_name);
        for &(step, f) in &values.floats {
            if track {
                self.any_window[step] = true;
            }
            sink.push(step, i, &l, f, dn);
        }
        for (step, h) in &values.hists {
            sink.push_hist(*step, i, &l, h.clone(), dn);
        }
    }
}

/// Refuses anchored or smoothed selectors passed to a function that does
/// not accept them.
fn check_extensions(name: &str, args: &[&Expr]) -> Result<()> {
    for arg in args {
        if let Expr::MatrixSelector(ms) = arg {
            if let Some(ext) = Extension::of(&ms.vs) {
                ext.check_function(name)?;
            }
        }
    }
    Ok(())
}

/// Evaluates a range-vector function call for all steps into `sink`. A
/// matrix selector argument is read one series at a time (into one reused
/// buffer), never holding all of its samples at once.
pub(crate) fn range_function_into(
    ev: &mut Evaluator,
    call: &Call,
    args: &[&Expr],
    ts: &[i64],
    sink: &mut dyn RangeSink,
) -> Result<()> {
    let name = call.func.name;
    check_extensions(name, args)?;
    let Some(func) = RangeFn::of(name) else {
        return eval_err(format!("unknown range function {name:?}"));
    };
    let mi = matrix_arg_index(name);
    let scalar_arg = match name {
        "quantile_over_time" => Some(ev.eval_scalar(args[0], ts)?),
        "predict_linear" => Some(ev.eval_scalar(args[1], ts)?),
        _ => None,
    };
    let check_quantile = name == "quantile_over_time";
    let q_pos = if check_quantile {
        call.args.first().map(Expr::pos)
    } else {
        None
    };
    let drop = !keeps_name(name);
    // Without delayed name removal the name goes now, and series that
    // then share a label set are an error (checked once, per series).
    let strip = drop && !ev.delayed_name_removal;
    let mut job = RangeJob {
        func,
        ts,
        scalar_arg: scalar_arg.as_deref(),
        drop,
        strip,
        any_window: vec![false; if check_quantile { ts.len() } else { 0 }],
        stripped: Vec::new(),
        notes: Vec::new(),
    };
    let arg_pos = call.args.get(mi).map(Expr::pos);
    match unwrap_parens(args[mi]) {
        Expr::MatrixSelector(ms) => {
            let range = crate::engine::range_ms(&ms.range, &ev.durations);
            let (selected, spec) = ev.matrix_selection(&ms.vs, range, ts)?;
            let (mut total, mut pushed) = (0, 0);
            eval_series(
                ev,
                ts.len(),
                selected,
                &mut job,
                |job, s, buf, values| {
                    read_series_samples(s, buf)?;
                    job.values(&spec, &buf.floats, &buf.hists, values);
                    Ok(buf.len())
                },
                |ev, job, i, s, n, values| {
                    if n == 0 {
                        return Ok(ControlFlow::Continue(()));
                    }
                    total += n;
                    ev.count_samples(total)?;
                    ev.stats.total_queryable += values.used;
                    ev.stats.read += values.fresh;
                    job.emit(i, &Arc::new(s.labels), false, values, sink);
                    pushed += values.len();
                    ev.count_samples(sink.holds(pushed))?;
                    Ok(crate::engine::go_on(sink))
                },
            )?;
        }
        _ => {
            let rd: RangeData = ev.eval_matrix(args[mi], ts)?;
            let mut values = StepValues::default();
            for (i, s) in rd.series.iter().enumerate() {
                ev.check_deadline()?;
                job.values(&rd, &s.samples, &s.hists, &mut values);
                job.emit(i, &s.labels, s.drop_name, &values, sink);
            }
        }
    }
    for (n, name) in std::mem::take(&mut job.notes) {
        ev.annos.note(n, &name, arg_pos);
    }
    if check_quantile {
        for (step, &any) in job.any_window.iter().enumerate() {
            let p = job.scalar_arg.map_or(0.0, |v| v[step]);
            if any && !(0.0..=1.0).contains(&p) {
                ev.annos.invalid_quantile(p, q_pos);
            }
        }
    }
    if strip {
        let mut seen: Vec<&Labels> = job.stripped.iter().map(|l| l.as_ref()).collect();
        seen.sort_unstable();
        if seen.windows(2).any(|w| w[0] == w[1]) {
            return eval_err(DUPLICATE_LABELSET);
        }
    }
    Ok(())
}

/// A range-vector function, resolved from its name once per call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RangeFn {
    Rate,
    Increase,
    Delta,
    Irate,
    Idelta,
    Deriv,
    PredictLinear,
    AvgOverTime,
    SumOverTime,
    MinOverTime,
    MaxOverTime,
    CountOverTime,
    LastOverTime,
    FirstOverTime,
    PresentOverTime,
    QuantileOverTime,
    StddevOverTime,
    StdvarOverTime,
    Changes,
    Resets,
}

impl RangeFn {
    fn of(name: &str) -> Option<RangeFn> {
        use RangeFn::*;
        Some(match name {
            "rate" => Rate,
            "increase" => Increase,
            "delta" => Delta,
            "irate" => Irate,
            "idelta" => Idelta,
            "deriv" => Deriv,
            "predict_linear" => PredictLinear,
            "avg_over_time" => AvgOverTime,
            "sum_over_time" => SumOverTime,
            "min_over_time" => MinOverTime,
            "max_over_time" => MaxOverTime,
            "count_over_time" => CountOverTime,
            "last_over_time" => LastOverTime,
            "first_over_time" => FirstOverTime,
            "present_over_time" => PresentOverTime,
            "quantile_over_time" => QuantileOverTime,
            "stddev_over_time" => StddevOverTime,
            "stdvar_over_time" => StdvarOverTime,
            "changes" => Changes,
            "resets" => Resets,
            _ => return None,
        })
    }

    /// The function's value for window `w` = (start, end] of step `step_t`;
    /// `p` is its scalar parameter, if it has one.
    pub(crate) fn apply(
        self,
        w: &[(i64, f64)],
        start: i64,
        end: i64,
        step_t: i64,
        p: f64,
    ) -> Option<f64> {
        use RangeFn::*;
        let vals = || w.iter().map(|&(_, v)| v);
        match self {
            Rate => extrapolated_rate(w, start, end, true, true),
            Increase => extrapolated_rate(w, start, end, true, false),
            Delta => extrapolated_rate(w, start, end, false, false),
            Irate => instant_delta(w, true),
            Idelta => instant_delta(w, false),
            Deriv => {
                if w.len() < 2 {
                    return None;
                }
                Some(linear_regression(w, w[0].0).0)
            }
            PredictLinear => {
                if w.len() < 2 {
                    return None;
                }
                let (slope, intercept) = linear_regression(w, step_t);
                Some(slope * p + intercept)
            }
            AvgOverTime => Some(avg(&vals().collect::<Vec<_>>())),
            SumOverTime => {
                let mut k = KahanSum::default();
                vals().for_each(|v| k.add(v));
                Some(k.value())
            }
            MinOverTime => {
                Some(vals().fold(f64::NAN, |m, v| if m.is_nan() || v < m { v } else { m }))
            }
            MaxOverTime => {
                Some(vals().fold(f64::NAN, |m, v| if m.is_nan() || v > m { v } else { m }))
            }
            CountOverTime => Some(w.len() as f64),
            LastOverTime => w.last().map(|&(_, v)| v),
            FirstOverTime => w.first().map(|&(_, v)| v),
            PresentOverTime => Some(1.0),
            QuantileOverTime => Some(quantile(p, vals().collect())),
            StddevOverTime => Some(variance(&vals().collect::<Vec<_>>()).sqrt()),
            StdvarOverTime => Some(variance(&vals().collect::<Vec<_>>())),
            Changes => Some(
                w.windows(2)
                    .filter(|p| p[1].1 != p[0].1 && !(p[1].1.is_nan() && p[0].1.is_nan()))
                    .count() as f64,
            ),
            Resets => Some(w.windows(2).filter(|p| p[1].1 < p[0].1).count() as f64),
        }
    }
}

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

/// A calendar field of the UTC time `secs` (Unix seconds, truncated).
pub fn date_part(name: &str, secs: f64) -> f64 {
    if !secs.is_finite() {
        return f64::NAN;
    }
    let s = secs as i64;
    let days = s.div_euclid(86_400);
    let sod = s.rem_euclid(86_400);
    let (y, m, d) = ferrite_model::gotime::civil_from_days(days);
    let month_days = [
        31,
        if is_leap(y) { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    match name {
        "minute" => ((sod / 60) % 60) as f64,
        "hour" => (sod / 3600) as f64,
        "day_of_month" => d as f64,
        "day_of_week" => (days + 4).rem_euclid(7) as f64,
        "day_of_year" => (month_days[..(m - 1) as usize].iter().sum::<u32>() + d) as f64,
        "days_in_month" => month_days[(m - 1) as usize] as f64,
        "month" => m as f64,
        _ => y as f64,
    }
}

/// The histogram argument of `histogram_quantile`/`histogram_fraction`:
/// where it starts (for annotations) and whether forced monotonicity is
/// reported.
struct HistArg {
    pos: Option<usize>,
    monotonicity_info: bool,
}

/// Where and by how much bucket counts had to be raised to be monotonic.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ForcedMonotonicity {
    pub min_bucket: f64,
    pub max_bucket: f64,
    pub max_diff: f64,
}

/// Groups one step's classic bucket series (`le` labels) into histograms
/// and computes `f` of each one's (upper bound, cumulative count) buckets.
fn classic_histogram_step(
    ev: &mut Evaluator,
    arg: &HistArg,
    t: i64,
    vec: Vec<Samp>,
    f: impl Fn(Vec<(f64, f64)>) -> (f64, Option<ForcedMonotonicity>),
) -> Vec<Samp> {
    struct Hist {
        labels: Labels,
        name: Lbl,
        buckets: Vec<(f64, f64)>,
    }
    // Prometheus names the metric in these annotations only when the name
    // is still there (delayed name removal).
    let named = ev.delayed_name_removal;
    let mut hists: Vec<Hist> = Vec::new();
    let mut index: std::collections::HashMap<Labels, usize> = std::collections::HashMap::new();
    for s in &vec {
        let le_s = s.labels.get("le");
        let Some(le) = parse_go_float(le_s.as_bytes()).ok().filter(|v| !v.is_nan()) else {
            let text = format!(
                "PromQL warning: bucket label \"le\" is missing or has a malformed value of {le_s:?}"
            );
            let name = if named { s.labels.metric_name() } else { "" };
            ev.annos.warn(with_metric_name(&text, name), arg.pos);
            continue;
        };
        // Buckets group by their labels but `le`, the name included: two
        // metrics are two histograms, even if they collide once the name
        // goes.
        let mut l = (*s.labels).clone();
        l.remove("le");
        let i = *index.entry(l.clone()).or_insert_with(|| {
            hists.push(Hist {
                labels: l,
                name: s.labels.clone(),
                buckets: Vec::new(),
            });
            hists.len() - 1
        });
        hists[i].buckets.push((le, s.f));
    }
    let mut out = Vec::with_capacity(hists.len());
    for h in hists {
        let (v, forced) = f(h.buckets);
        if let (Some(m), true) = (forced, arg.monotonicity_info) {
            let name = if named { h.name.metric_name() } else { "" };
            ev.annos.forced_monotonicity(
                name,
                arg.pos,
                Monotonicity {
                    min_ts: t,
                    max_ts: t,
                    min_bucket: m.min_bucket,
                    max_bucket: m.max_bucket,
                    max_diff: m.max_diff,
                    merged: 0,
                },
            );
        }
        out.push(Samp {
            labels: Arc::new(h.labels),
            f: v,
            h: None,
            drop_name: true,
        });
    }
    out
}

/// Splits one step's input of `histogram_quantile`/`histogram_fraction`
/// into native histogram samples and classic bucket samples. A native
/// histogram with the labels of a classic histogram's buckets (less `le`)
/// is a conflict: both are left out, with a warning.
fn split_histograms(ev: &mut Evaluator, arg: &HistArg, vec: Vec<Samp>) -> (Vec<Samp>, Vec<Samp>) {
    let (natives, classic): (Vec<Samp>, Vec<Samp>) = vec.into_iter().partition(|s| s.h.is_some());
    if natives.is_empty() || classic.is_empty() {
        return (natives, classic);
    }
    let key = |l: &Labels| {
        let mut l = l.clone();
        l.remove("le");
        l
    };
    let classic_keys: std::collections::HashSet<Labels> = classic
        .iter()
        .filter(|s| {
            let le = s.labels.get("le");
            parse_go_float(le.as_bytes()).is_ok_and(|v| !v.is_nan())
        })
        .map(|s| key(&s.labels))
        .collect();
    let mut conflicts: std::collections::HashSet<Labels> = std::collections::HashSet::new();
    let mut kept = Vec::with_capacity(natives.len());
    for s in natives {
        if classic_keys.contains(&*s.labels) {
            let name = native_name(ev, &s);
            ev.annos.warn(
                with_metric_name(
                    "PromQL warning: vector contains a mix of classic and native histograms",
                    &name,
                ),
                arg.pos,
            );
            conflicts.insert((*s.labels).clone());
            continue;
        }
        kept.push(s);
    }
    let classic = classic
        .into_iter()
        .filter(|s| !conflicts.contains(&key(&s.labels)))
        .collect();
    (kept, classic)
}

/// The metric name annotations about a native histogram sample name (none
/// once the name is gone, without delayed name removal).
fn native_name(ev: &Evaluator, s: &Samp) -> String {
    if ev.delayed_name_removal {
        s.labels.metric_name().to_string()
    } else {
        String::new()
    }
}

/// A float computed from a native histogram sample: its labels, the name
/// to be dropped.
fn native_result(s: Samp, f: f64) -> Samp {
    Samp::float(s.labels, f, true)
}

/// The φ-quantile from cumulative (upper bound, count) buckets, linearly
/// interpolated inside the bucket that holds the rank.
pub fn bucket_quantile(q: f64, b: Vec<(f64, f64)>) -> f64 {
    bucket_quantile_checked(q, b).0
}

/// Relative differences between neighbouring bucket counts below this are
/// floating-point noise, evened out silently.
const SMALL_DELTA_TOLERANCE: f64 = 1e-12;

/// [`bucket_quantile`], also telling whether the counts had to be forced
/// to be monotonic (non-decreasing with the bound) and where.
pub fn bucket_quantile_checked(
    q: f64,
    mut b: Vec<(f64, f64)>,
) -> (f64, Option<ForcedMonotonicity>) {
    if q.is_nan() {
        return (f64::NAN, None);
    }
    if q < 0.0 {
        return (f64::NEG_INFINITY, None);
    }
    if q > 1.0 {
        return (f64::INFINITY, None);
    }
    b.sort_by(|x, y| x.0.partial_cmp(&y.0).unwrap_or(std::cmp::Ordering::Equal));
    if b.last().is_none_or(|l| l.0 != f64::INFINITY) {
        return (f64::NAN, None);
    }
    // Coalesce equal bounds.
    let mut c: Vec<(f64, f64)> = Vec::with_capacity(b.len());
    for (ub, n) in b {
        match c.last_mut() {
            Some(last) if last.0 == ub => last.1 += n,
            _ => c.push((ub, n)),
        }
    }
    // Even out tiny differences, then raise any decrease to the count
    // before it.
    let mut forced: Option<ForcedMonotonicity> = None;
    let mut prev = c[0].1;
    for x in c.iter_mut().skip(1) {
        let cur = x.1;
        if cur == prev {
            continue;
        }
        if crate::promqltest::almost_equal(prev, cur, SMALL_DELTA_TOLERANCE) {
            x.1 = prev;
            continue;
        }
        if cur < prev {
            x.1 = prev;
            let m = forced.get_or_insert(ForcedMonotonicity {
                min_bucket: f64::INFINITY,
                max_bucket: f64::NEG_INFINITY,
                max_diff: 0.0,
            });
            m.min_bucket = m.min_bucket.min(x.0);
            m.max_bucket = m.max_bucket.max(x.0);
            m.max_diff = m.max_diff.max(prev - cur);
            continue;
        }
        prev = cur;
    }
    if c.len() < 2 {
        return (f64::NAN, forced);
    }
    let total = c[c.len() - 1].1;
    if total == 0.0 || total.is_nan() {
        return (f64::NAN, forced);
    }
    let mut rank = q * total;
    let idx = c[..c.len() - 1].partition_point(|x| x.1 < rank);
    if idx == c.len() - 1 {
        return (c[c.len() - 2].0, forced);
    }
    if idx == 0 && c[0].0 <= 0.0 {
        return (c[0].0, forced);
    }
    let (mut start, mut count) = (0.0, c[idx].1);
    let end = c[idx].0;
    if idx > 0 {
        start = c[idx - 1].0;
        count -= c[idx - 1].1;
        rank -= c[idx - 1].1;
    }
    (start + (end - start) * (rank / count), forced)
}

/// The estimated fraction of observations in [lower, upper] from
/// cumulative buckets, interpolating linearly inside buckets (the first
/// bucket starts at 0, or at -Inf if its bound is not positive).
pub fn bucket_fraction(lower: f64, upper: f64, mut b: Vec<(f64, f64)>) -> f64 {
    b.sort_by(|x, y| x.0.partial_cmp(&y.0).unwrap_or(std::cmp::Ordering::Equal));
    if b.last().is_none_or(|l| l.0 != f64::INFINITY) {
        return f64::NAN;
    }
    let mut c: Vec<(f64, f64)> = Vec::with_capacity(b.len());
    for (ub, n) in b {
        match c.last_mut() {
            Some(last) if last.0 == ub => last.1 += n,
            _ => c.push((ub, n)),
        }
    }
    let total = c[c.len() - 1].1;
    if total == 0.0 || lower.is_nan() || upper.is_nan() {
        return f64::NAN;
    }
    if lower >= upper {
        return 0.0;
    }
    // The cumulative count at x.
    let rank_at = |x: f64| -> f64 {
        let mut prev_count = 0.0;
        for (i, &(ub, n)) in c.iter().enumerate() {
            let lb = if i > 0 {
                c[i - 1].0
            } else if c[0].0 <= 0.0 {
                f64::NEG_INFINITY
            } else {
                0.0
            };
            if lb >= x {
                return prev_count;
            }
            if x < ub {
                if lb == f64::NEG_INFINITY {
                    return n;
                }
                return prev_count + (n - prev_count) * (x - lb) / (ub - lb);
            }
            prev_count = n;
        }
        total
    };
    let lo = rank_at(lower).min(total);
    let hi = rank_at(upper).min(total);
    (hi - lo) / total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_extrapolates_like_prometheus() {
        // Samples every 10s from 10s to 50s in a 60s window ending at 60s,
        // +10 each: 40 observed over 40s; both gaps (10s) are within 1.1
        // intervals, so the full window is covered: 60 total.
        let w: Vec<(i64, f64)> = (1..=5).map(|i| (i * 10_000, (i * 10) as f64)).collect();
        let inc = extrapolated_rate(&w, 0, 60_000, true, false).unwrap();
        assert!((inc - 60.0).abs() < 1e-9, "{inc}");
        let rate = extrapolated_rate(&w, 0, 60_000, true, true).unwrap();
        assert!((rate - 1.0).abs() < 1e-9);
        // A counter is not extrapolated below zero: first sample 10 at 10s
        // would reach 0 at 0s exactly here; with first value 5 it reaches
        // zero after 5s, so the start extrapolation is capped at 5s... of
        // sampled interval * first/result.
        let w = vec![(10_000, 5.0), (20_000, 15.0), (30_000, 25.0)];
        let inc = extrapolated_rate(&w, 0, 40_000, true, false).unwrap();
        // sampled 20s, result 20, to_zero = 20*5/20 = 5s, to_end 10s.
        assert!(
            (inc - 20.0 * (20.0 + 5.0 + 10.0) / 20.0).abs() < 1e-9,
            "{inc}"
        );
        // Far edges get half an interval.
        let w = vec![(100_000, 1.0), (110_000, 2.0)];
        let d = extrapolated_rate(&w, 0, 300_000, false, false).unwrap();
        assert!((d - 1.0 * (10.0 + 5.0 + 5.0) / 10.0).abs() < 1e-9);
        // Resets are added back: 10 -> 2 -> 4 is an increase of 4 + 10 - 10.
        let w = vec![(0, 10.0), (10_000, 2.0), (20_000, 4.0)];
        assert_eq!(extrapolated_rate(&w, 0, 20_000, true, false), Some(4.0));
        assert_eq!(extrapolated_rate(&[(0, 1.0)], 0, 10, true, true), None);
    }

    #[test]
    fn quantiles() {
        assert_eq!(quantile(0.5, vec![1.0, 2.0, 3.0, 4.0]), 2.5);
        assert_eq!(quantile(2.0, vec![1.0]), f64::INFINITY);
        let b = vec![(0.1, 1.0), (0.2, 2.0), (f64::INFINITY, 4.0)];
        assert!((bucket_quantile(0.5, b.clone()) - 0.2).abs() < 1e-12);
        assert_eq!(bucket_quantile(0.9, b), 0.2);
        assert!(bucket_quantile(0.5, vec![(1.0, 1.0)]).is_nan());
    }

    #[test]
    fn dates() {
        // 2024-02-29T13:45:00Z
        let t = 1_709_214_300.0;
        assert_eq!(date_part("year", t), 2024.0);
        assert_eq!(date_part("month", t), 2.0);
        assert_eq!(date_part("day_of_month", t), 29.0);
        assert_eq!(date_part("days_in_month", t), 29.0);
        assert_eq!(date_part("hour", t), 13.0);
        assert_eq!(date_part("minute", t), 45.0);
        assert_eq!(date_part("day_of_week", t), 4.0);
        assert_eq!(date_part("day_of_year", t), 60.0);
    }

    #[test]
    fn xxhash_known_values() {
        assert_eq!(xxh64(b""), 0xEF46_DB37_51D8_E999);
        assert_eq!(xxh64(b"abc"), 0x44BC_2CF5_AD77_0999);
    }
}
