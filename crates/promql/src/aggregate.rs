//! Aggregation operators (`sum`, `topk`, `count_values`, ...), per step.
//!
//! Groups are formed from each sample's labels: `by (l...)` keeps those
//! labels, `without (l...)` removes them and the metric name; no clause
//! makes one group. Groups come out in order of first appearance.

use std::collections::HashMap;
use std::sync::Arc;

use promql_parser::parser::{AggregateExpr, Expr, LabelModifier};

use crate::annotations::go_g;
use crate::engine::{Ev, Evaluator, Samp};
use crate::functions::{go_float_string, quantile, KahanSum};
use crate::storage::{Labels, METRIC_NAME};
use crate::{eval_err, Result};

/// The group labels of a sample's labels.
fn group_labels(ls: &Labels, modifier: &Option<LabelModifier>) -> Labels {
    match modifier {
        None => Labels::empty(),
        Some(LabelModifier::Include(by)) => {
            let mut l = ls.clone();
            l.keep(&by.labels);
            l
        }
        Some(LabelModifier::Exclude(without)) => {
            let mut l = ls.clone();
            for n in &without.labels {
                l.remove(n);
            }
            l.remove(METRIC_NAME);
            l
        }
    }
}

/// Whether `s` is a valid label name (legacy charset or any UTF-8, as
/// Prometheus v3 accepts UTF-8 names).
pub(crate) fn valid_label_name(s: &str) -> bool {
    !s.is_empty() && std::str::from_utf8(s.as_bytes()).is_ok() && !s.contains('\u{fffd}')
}

pub(crate) fn eval_aggregate(ev: &mut Evaluator, a: &AggregateExpr, ts: &[i64]) -> Result<Ev> {
    let op = a.op.to_string().to_lowercase();
    let mut fparam: Option<Vec<f64>> = None;
    let mut sparam: Option<String> = None;
    if let Some(p) = &a.param {
        match op.as_str() {
            "count_values" => match ev.eval(p, ts)? {
                Ev::Str(s) => sparam = Some(s),
                other => {
                    return eval_err(format!(
                        "expected string parameter, got {}",
                        other.type_name()
                    ))
                }
            },
            _ => fparam = Some(ev.eval_scalar(p, ts)?),
        }
    }
    let input = ev.eval_vector(&a.expr, ts)?;
    match op.as_str() {
        "topk" | "bottomk" | "limitk" => {
            let params = fparam.as_deref().unwrap_or_default();
            if params.iter().any(|p| p.is_nan()) {
                return eval_err("Parameter value is NaN");
            }
            if let Some(p) = params.iter().find(|&&p| p >= 9.223372036854776e18) {
                return eval_err(format!("Scalar value {p} overflows int64"));
            }
            if let Some(p) = params.iter().find(|&&p| p <= -9.223372036854776e18) {
                return eval_err(format!("Scalar value {p} underflows int64"));
            }
        }
        "limit_ratio" => {
            let params = fparam.as_deref().unwrap_or_default();
            if params.iter().any(|p| p.is_nan()) {
                return eval_err("Ratio value is NaN");
            }
            let pos = ev.src.agg_param(a);
            let (min, max) = min_max(params);
            if max > 1.0 {
                ev.annos.warn(
                    format!(
                        "PromQL warning: ratio value should be between -1 and 1, got {}, capping to 1",
                        go_g(max)
                    ),
                    pos,
                );
            }
            if min < -1.0 {
                ev.annos.warn(
                    format!(
                        "PromQL warning: ratio value should be between -1 and 1, got {}, capping to -1",
                        go_g(min)
                    ),
                    pos,
                );
            }
        }
        "quantile" => {
            let params = fparam.as_deref().unwrap_or_default();
            let pos = ev.src.agg_param(a);
            // As Prometheus' min/max of the parameter: NaN if any is NaN.
            if params.iter().any(|p| p.is_nan()) {
                ev.annos.invalid_quantile(f64::NAN, pos);
            } else {
                let (min, max) = min_max(params);
                if max > 1.0 {
                    ev.annos.invalid_quantile(max, pos);
                }
                if min < 0.0 {
                    ev.annos.invalid_quantile(min, pos);
                }
            }
        }
        "count_values" => {
            let l = sparam.as_deref().unwrap_or_default();
            if !valid_label_name(l) {
                return eval_err(format!("invalid label name {l:?}"));
            }
        }
        _ => {}
    }
    let mut out = Vec::with_capacity(ts.len());
    for (i, vec) in input.into_iter().enumerate() {
        ev.check_deadline()?;
        let p = fparam.as_ref().map(|v| v[i]).unwrap_or(0.0);
        out.push(aggregate_step(&op, vec, &a.modifier, p, sparam.as_deref())?);
    }
    Ok(Ev::Vector(out))
}

/// The smallest and largest of the values (±Inf when none; NaNs ignored).
fn min_max(vals: &[f64]) -> (f64, f64) {
    vals.iter()
        .filter(|v| !v.is_nan())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
            (lo.min(v), hi.max(v))
        })
}

#[derive(Default)]
struct Group {
    labels: Labels,
    drop_name: bool,
    members: Vec<Samp>,
}

fn aggregate_step(
    op: &str,
    vec: Vec<Samp>,
    modifier: &Option<LabelModifier>,
    param: f64,
    label: Option<&str>,
) -> Result<Vec<Samp>> {
    let mut index: HashMap<Labels, usize> = HashMap::new();
    let mut groups: Vec<Group> = Vec::new();
    for s in vec {
        let mut gl = group_labels(&s.labels, modifier);
        if op == "count_values" {
            gl.set(label.unwrap_or_default(), &go_float_string(s.f));
        }
        let gi = *index.entry(gl.clone()).or_insert_with(|| {
            groups.push(Group {
                labels: gl,
                ..Default::default()
            });
            groups.len() - 1
        });
        groups[gi].drop_name |= s.drop_name;
        groups[gi].members.push(s);
    }
    let mut out = Vec::with_capacity(groups.len());
    for g in groups {
        let vals: Vec<f64> = g.members.iter().map(|s| s.f).collect();
        let f = match op {
            "sum" => {
                let mut k = KahanSum::default();
                vals.iter().for_each(|&v| k.add(v));
                k.value()
            }
            "avg" => avg(&vals),
            "count" | "count_values" => vals.len() as f64,
            "group" => 1.0,
            "min" => vals
                .iter()
                .copied()
                .fold(f64::NAN, |m, v| if m.is_nan() || v < m { v } else { m }),
            "max" => vals
                .iter()
                .copied()
                .fold(f64::NAN, |m, v| if m.is_nan() || v > m { v } else { m }),
            "stddev" => variance(&vals).sqrt(),
            "stdvar" => variance(&vals),
            "quantile" => quantile(param, vals.clone()),
            "topk" | "bottomk" => {
                let k = (param as i64).min(g.members.len() as i64);
                if k < 1 {
                    continue;
                }
                let mut m = g.members;
                let top = op == "topk";
                // Best first; NaN is never preferred.
                m.sort_by(|a, b| {
                    let (x, y) = (a.f, b.f);
                    match (x.is_nan(), y.is_nan()) {
                        (true, true) => std::cmp::Ordering::Equal,
                        (true, false) => std::cmp::Ordering::Greater,
                        (false, true) => std::cmp::Ordering::Less,
                        _ if top => y.partial_cmp(&x).unwrap_or(std::cmp::Ordering::Equal),
                        _ => x.partial_cmp(&y).unwrap_or(std::cmp::Ordering::Equal),
                    }
                });
                m.truncate(k as usize);
                out.extend(m);
                continue;
            }
            "limitk" => {
                let k = (param as i64).min(g.members.len() as i64);
                if k < 1 {
                    continue;
                }
                out.extend(g.members.into_iter().take(k as usize));
                continue;
            }
            "limit_ratio" => {
                let r = param.clamp(-1.0, 1.0);
                out.extend(g.members.into_iter().filter(|s| ratio_keep(r, &s.labels)));
                continue;
            }
            other => return eval_err(format!("aggregation {other:?} is not supported")),
        };
        out.push(Samp {
            labels: Arc::new(g.labels),
            f,
            drop_name: g.drop_name,
        });
    }
    Ok(out)
}

/// Whether `limit_ratio(r, ...)` keeps a series: its labels' hash, as a
/// fraction of u64::MAX, falls in [0, r) for r >= 0 or [1+r, 1] for r < 0.
fn ratio_keep(r: f64, ls: &Labels) -> bool {
    let offset = crate::functions::labels_hash(ls) as f64 / u64::MAX as f64;
    (r >= 0.0 && offset < r) || (r < 0.0 && offset >= 1.0 + r)
}

/// The mean, with a compensated sum; if the sum overflows, an incremental mean.
pub(crate) fn avg(vals: &[f64]) -> f64 {
    let mut k = KahanSum::default();
    vals.iter().for_each(|&v| k.add(v));
    let s = k.value();
    if s.is_finite() || vals.iter().any(|v| v.is_infinite() || v.is_nan()) {
        return s / vals.len() as f64;
    }
    let mut mean = 0.0;
    for (i, &v) in vals.iter().enumerate() {
        let n = (i + 1) as f64;
        mean += v / n - mean / n;
    }
    mean
}

/// Population variance (Welford).
pub(crate) fn variance(vals: &[f64]) -> f64 {
    let mut mean = 0.0;
    let mut m2 = 0.0;
    for (i, &v) in vals.iter().enumerate() {
        let n = (i + 1) as f64;
        let d = v - mean;
        mean += d / n;
        m2 += d * (v - mean);
    }
    m2 / vals.len() as f64
}

/// Whether an expression is a (parenthesised) aggregation of `op`.
#[allow(dead_code)]
pub(crate) fn is_aggregation(e: &Expr, op: &str) -> bool {
    match e {
        Expr::Aggregate(a) => a.op.to_string() == op,
        Expr::Paren(p) => is_aggregation(&p.expr, op),
        _ => false,
    }
}
