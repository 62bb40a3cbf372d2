//! Aggregation operators (`sum`, `topk`, `count_values`, ...), per step.
//!
//! Groups are formed from each sample's labels: `by (l...)` keeps those
//! labels, `without (l...)` removes them and the metric name; no clause
//! makes one group. Groups come out in order of first appearance.
//!
//! topk and bottomk keep a group's samples in Prometheus' heap and return
//! them in the order Prometheus sorts that heap (`kheap`, `gosort`): which
//! of several equal values are kept, and in what order an instant query
//! returns them, is Prometheus' to the series. The input's order decides it
//! as much: a selector's series come sorted by labels, as from a Prometheus
//! whose query touches blocks (a head-only Prometheus gives them in the
//! order the series were created).

mod gosort;
mod kheap;

use std::collections::HashMap;
use std::sync::Arc;

use kheap::{KHeap, Keep};

use crate::parser::{AggregateExpr, Call, Expr, LabelModifier, VectorSelector};

use crate::annotations::{Annotations, HistOp, Note};
use crate::engine::{Ev, Evaluator, Hist, Samp};
use crate::functions::{quantile, KahanSum};
use crate::histfn::HintTracker;
use crate::storage::Labels;
use crate::{eval_err, Result};
use ferrite_model::gofloat::{format_f, format_g};
use ferrite_model::FloatHistogram;

/// The group labels of a sample's labels.
fn group_labels(ls: &Labels, modifier: &Option<LabelModifier>) -> Labels {
    match modifier {
        None => Labels::empty(),
        Some(LabelModifier::Include(by)) => {
            let mut l = ls.clone();
            l.keep(by);
            l
        }
        Some(LabelModifier::Exclude(without)) => {
            let mut l = ls.clone();
            for n in without {
                l.remove(n);
            }
            l.drop_metric_name();
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
    let op = a.op.name();
    let mut fparam: Option<Vec<f64>> = None;
    let mut sparam: Option<String> = None;
    if let Some(p) = &a.param {
        match op {
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
    if let Some(input) = fusable_input(op, a) {
        // The range function's or selector's results go straight into the
        // groups' per step accumulators, without an instant vector per step.
        ev.check_deadline()?;
        let kind = AggKind::of(op).unwrap_or(AggKind::Sum);
        let mut sink = AggSink::new(kind, &a.modifier, ts.len());
        // The samples the general path reads if this one meets a histogram.
        let read_before = ev.stats;
        match input {
            Fusable::RangeCall(call) => {
                let args: Vec<&Expr> = call.args.iter().collect();
                crate::functions::range_function_into(ev, call, &args, ts, &mut sink)?;
            }
            Fusable::Selector(vs) => ev.vector_selector_into(vs, ts, false, &mut sink)?,
        }
        // Histograms take the general path, which evaluates the input
        // again: the fused one stopped at the first histogram, its
        // annotations are kept once, its samples not counted.
        if !sink.saw_hist {
            return Ok(Ev::Vector(sink.finish()));
        }
        ev.stats = read_before;
    }
    let input = ev.eval_vector(&a.expr, ts)?;
    match op {
        "topk" | "bottomk" | "limitk" => check_k(fparam.as_deref().unwrap_or_default())?,
        "limit_ratio" => {
            let params = fparam.as_deref().unwrap_or_default();
            if params.iter().any(|p| p.is_nan()) {
                return eval_err("Ratio value is NaN");
            }
            let pos = a.param.as_deref().map(Expr::pos);
            let (min, max) = min_max(params);
            if max > 1.0 {
                ev.annos.warn(
                    format!(
                        "PromQL warning: ratio value should be between -1 and 1, got {}, capping to 1",
                        format_g(max)
                    ),
                    pos,
                );
            }
            if min < -1.0 {
                ev.annos.warn(
                    format!(
                        "PromQL warning: ratio value should be between -1 and 1, got {}, capping to -1",
                        format_g(min)
                    ),
                    pos,
                );
            }
        }
        "quantile" => {
            let params = fparam.as_deref().unwrap_or_default();
            let pos = a.param.as_deref().map(Expr::pos);
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
            let literal = a.param.as_deref().map(crate::functions::unwrap_parens);
            match literal {
                Some(Expr::StringLiteral(lit)) if !lit.is_valid_label_name() => {
                    return eval_err(format!("invalid label name {}", lit.go_quoted()));
                }
                Some(Expr::StringLiteral(_)) => {}
                _ if !valid_label_name(l) => {
                    return eval_err(format!("invalid label name {l:?}"));
                }
                _ => {}
            }
        }
        _ => {}
    }
    let mut out = Vec::with_capacity(ts.len());
    let pos = AggPos {
        expr: Some(a.expr.pos()),
        agg: Some(a.pos),
    };
    for (i, vec) in input.into_iter().enumerate() {
        ev.check_deadline()?;
        let p = fparam.as_ref().map(|v| v[i]).unwrap_or(0.0);
        out.push(aggregate_step(
            op,
            vec,
            &a.modifier,
            p,
            sparam.as_deref(),
            &mut ev.annos,
            pos,
        )?);
    }
    Ok(Ev::Vector(out))
}

/// The range-function call an aggregation can take its values from
/// directly: aggregations without a parameter whose value is a running
/// reduction, over a range function (`sum(rate(x[5m]))`).
/// What an aggregation can take its input from without instant vectors.
enum Fusable<'e> {
    RangeCall(&'e Call),
    Selector(&'e VectorSelector),
}

fn fusable_input<'e>(op: &str, a: &'e AggregateExpr) -> Option<Fusable<'e>> {
    if a.param.is_some() || AggKind::of(op).is_none() {
        return None;
    }
    let mut e: &Expr = &a.expr;
    while let Expr::Paren(p) = e {
        e = &p.expr;
    }
    match e {
        Expr::Call(c) if crate::functions::is_range_function(c.func.name) => {
            Some(Fusable::RangeCall(c))
        }
        Expr::VectorSelector(vs) => Some(Fusable::Selector(vs)),
        _ => None,
    }
}

/// The aggregations [`AggSink`] computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AggKind {
    Sum,
    Avg,
    Count,
    Group,
    Min,
    Max,
    Stddev,
    Stdvar,
}

impl AggKind {
    fn of(op: &str) -> Option<AggKind> {
        Some(match op {
            "sum" => AggKind::Sum,
            "avg" => AggKind::Avg,
            "count" => AggKind::Count,
            "group" => AggKind::Group,
            "min" => AggKind::Min,
            "max" => AggKind::Max,
            "stddev" => AggKind::Stddev,
            "stdvar" => AggKind::Stdvar,
            _ => return None,
        })
    }
}

/// A group's running reduction at one step: the same arithmetic, in the
/// same order, as [`aggregate_step`] applies to the step's members.
#[derive(Clone, Copy, Default)]
struct Cell {
    n: u64,
    sum: KahanSum,
    /// avg: the incremental mean; min/max: the value; stddev: Welford's mean.
    x: f64,
    /// stddev: Welford's sum of squares.
    m2: f64,
    /// avg: a member was ±Inf or NaN.
    inf_nan: bool,
    drop_name: bool,
}

/// Aggregates a range function's results as they come, per group and step.
struct AggSink<'m> {
    kind: AggKind,
    modifier: &'m Option<LabelModifier>,
    steps: usize,
    /// Group of each series seen so far (by series number).
    series_group: Vec<Option<usize>>,
    index: HashMap<Labels, usize>,
    groups: Vec<Arc<Labels>>,
    /// `groups.len() * steps` cells, group-major.
    cells: Vec<Cell>,
    /// Per step, the groups in order of their first member.
    order: Vec<Vec<u32>>,
    /// A histogram came in: the aggregation takes the general path.
    saw_hist: bool,
}

impl<'m> AggSink<'m> {
    fn new(kind: AggKind, modifier: &'m Option<LabelModifier>, steps: usize) -> Self {
        AggSink {
            kind,
            modifier,
            steps,
            series_group: Vec::new(),
            index: HashMap::new(),
            groups: Vec::new(),
            cells: Vec::new(),
            order: vec![Vec::new(); steps],
            saw_hist: false,
        }
    }

    fn group_of(&mut self, series: usize, labels: &Labels) -> usize {
        if let Some(Some(g)) = self.series_group.get(series) {
            return *g;
        }
        let gl = group_labels(labels, self.modifier);
        let g = match self.index.get(&gl) {
            Some(&g) => g,
            None => {
                let g = self.groups.len();
                self.index.insert(gl.clone(), g);
                self.groups.push(Arc::new(gl));
                self.cells
                    .resize(self.cells.len() + self.steps, Cell::default());
                g
            }
        };
        if self.series_group.len() <= series {
            self.series_group.resize(series + 1, None);
        }
        self.series_group[series] = Some(g);
        g
    }

    fn finish(self) -> Vec<Vec<Samp>> {
        let mut out = Vec::with_capacity(self.steps);
        for (step, order) in self.order.iter().enumerate() {
            let mut vec = Vec::with_capacity(order.len());
            for &g in order {
                let c = &self.cells[g as usize * self.steps + step];
                let n = c.n as f64;
                let f = match self.kind {
                    AggKind::Sum => c.sum.value(),
                    AggKind::Avg => {
                        let s = c.sum.value();
                        if s.is_finite() || c.inf_nan {
                            s / n
                        } else {
                            c.x
                        }
                    }
                    AggKind::Count => n,
                    AggKind::Group => 1.0,
                    AggKind::Min | AggKind::Max => c.x,
                    AggKind::Stddev => (c.m2 / n).sqrt(),
                    AggKind::Stdvar => c.m2 / n,
                };
                vec.push(Samp {
                    labels: self.groups[g as usize].clone(),
                    f,
                    h: None,
                    drop_name: c.drop_name,
                });
            }
            out.push(vec);
        }
        out
    }
}

impl crate::functions::RangeSink for AggSink<'_> {
    /// One cell per group and step, however many values went in.
    fn holds(&self, _pushed: usize) -> usize {
        self.cells.len()
    }

    fn push_hist(&mut self, _: usize, _: usize, _: &Arc<Labels>, _: Hist, _: bool) {
        self.saw_hist = true;
    }

    fn abandoned(&self) -> bool {
        self.saw_hist
    }

    fn push(&mut self, step: usize, series: usize, labels: &Arc<Labels>, v: f64, drop_name: bool) {
        let g = self.group_of(series, labels);
        let c = &mut self.cells[g * self.steps + step];
        if c.n == 0 {
            self.order[step].push(g as u32);
            c.x = match self.kind {
                AggKind::Min | AggKind::Max => f64::NAN,
                _ => 0.0,
            };
        }
        c.n += 1;
        c.drop_name |= drop_name;
        let n = c.n as f64;
        match self.kind {
            AggKind::Sum => c.sum.add(v),
            AggKind::Avg => {
                c.sum.add(v);
                c.inf_nan |= v.is_infinite() || v.is_nan();
                c.x += v / n - c.x / n;
            }
            AggKind::Count | AggKind::Group => {}
            AggKind::Min => {
                if c.x.is_nan() || v < c.x {
                    c.x = v;
                }
            }
            AggKind::Max => {
                if c.x.is_nan() || v > c.x {
                    c.x = v;
                }
            }
            AggKind::Stddev | AggKind::Stdvar => {
                let d = v - c.x;
                c.x += d / n;
                c.m2 += d * (v - c.x);
            }
        }
    }
}

/// Checks topk's, bottomk's or limitk's k at every step, as Prometheus does
/// before evaluating any step: when every k is below 1 (the result is empty)
/// nothing else is checked; otherwise a NaN, then a k at or below the
/// smallest int64, then one at or above the largest is an error.
fn check_k(params: &[f64]) -> Result<()> {
    const INT64_MIN: f64 = i64::MIN as f64;
    const INT64_MAX: f64 = i64::MAX as f64;
    if params.iter().any(|p| p.is_nan()) {
        return eval_err("Parameter value is NaN");
    }
    let (min, max) = min_max(params);
    if max < 1.0 {
        return Ok(());
    }
    if min <= INT64_MIN {
        return eval_err(format!("Scalar value {} underflows int64", format_g(min)));
    }
    if max >= INT64_MAX {
        return eval_err(format!("Scalar value {} overflows int64", format_g(max)));
    }
    Ok(())
}

/// The members of a group topk (`Keep::Largest`) or bottomk keeps, given
/// in input order (floats only), best first: Prometheus' heap decides which
/// of equal values stay and Go's sort their order (see [`kheap`]).
fn keep_k(keep: Keep, k: i64, members: Vec<Samp>) -> Vec<Samp> {
    let k = usize::try_from(k).unwrap_or(0).min(members.len());
    if k == 0 {
        return Vec::new();
    }
    let mut heap = KHeap::new(keep, k);
    for s in members {
        heap.offer(s.f, s);
    }
    heap.into_ranked()
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

/// Where an aggregation and its aggregated expression start, for
/// annotations.
#[derive(Clone, Copy)]
struct AggPos {
    expr: Option<usize>,
    agg: Option<usize>,
}

/// `sum`/`avg` of a group holding histograms: None (with a warning) when it
/// holds floats too, or histograms that cannot be added.
fn sum_histograms(
    members: &[Samp],
    avg: bool,
    annos: &mut Annotations,
    pos: Option<usize>,
) -> Option<FloatHistogram> {
    if members.iter().any(|s| s.h.is_none()) {
        annos.warn(
            "PromQL warning: encountered a mix of histograms and floats for aggregation".into(),
            pos,
        );
        return None;
    }
    let mut hints = HintTracker::default();
    let list: Vec<&FloatHistogram> = members.iter().filter_map(|s| s.h.as_deref()).collect();
    list.iter().for_each(|h| hints.see(h));
    let mut reconciled = false;
    let mut sum = match crate::histfn::sum_hists(&list, avg, &mut reconciled) {
        Ok(s) => s,
        Err(e) => {
            let name = members.get(e.at).map_or("", |s| s.labels.metric_name());
            annos.note(Note::MixedExponentialCustom, name, pos);
            return None;
        }
    };
    if reconciled {
        annos.note(Note::CustomBucketsReconciled(HistOp::Agg), "", pos);
    }
    sum.compact();
    if hints.collision() {
        annos.note(Note::CounterResetCollision(HistOp::Agg), "", pos);
    }
    Some(sum)
}

fn aggregate_step(
    op: &str,
    vec: Vec<Samp>,
    modifier: &Option<LabelModifier>,
    param: f64,
    label: Option<&str>,
    annos: &mut Annotations,
    pos: AggPos,
) -> Result<Vec<Samp>> {
    // A k below 1 empties the step before any sample is looked at (so no
    // histogram is reported as ignored either).
    if matches!(op, "topk" | "bottomk" | "limitk") && (param as i64) < 1 {
        return Ok(Vec::new());
    }
    let mut index: HashMap<Labels, usize> = HashMap::new();
    let mut groups: Vec<Group> = Vec::new();
    for s in vec {
        let mut gl = group_labels(&s.labels, modifier);
        if op == "count_values" {
            let v = match &s.h {
                Some(h) => h.go_string(),
                None => format_f(s.f),
            };
            gl.set(label.unwrap_or_default(), &v);
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
    for mut g in groups {
        let has_hist = g.members.iter().any(|s| s.h.is_some());
        if has_hist {
            match op {
                "sum" | "avg" => {
                    if let Some(h) = sum_histograms(&g.members, op == "avg", annos, pos.expr) {
                        out.push(Samp {
                            labels: Arc::new(g.labels),
                            f: 0.0,
                            h: Some(Arc::new(h)),
                            drop_name: g.drop_name,
                        });
                    }
                    continue;
                }
                "min" | "max" | "stddev" | "stdvar" | "quantile" | "topk" | "bottomk" => {
                    let at = if matches!(op, "topk" | "bottomk") {
                        pos.agg
                    } else {
                        pos.expr
                    };
                    annos.info(
                        format!("PromQL info: ignored histogram in {op} aggregation"),
                        at,
                    );
                    g.members.retain(|s| s.h.is_none());
                    if g.members.is_empty() {
                        continue;
                    }
                }
                _ => {}
            }
        }
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
            "topk" => {
                out.extend(keep_k(Keep::Largest, param as i64, g.members));
                continue;
            }
            "bottomk" => {
                out.extend(keep_k(Keep::Smallest, param as i64, g.members));
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
            h: None,
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
        Expr::Aggregate(a) => a.op.name() == op,
        Expr::Paren(p) => is_aggregation(&p.expr, op),
        _ => false,
    }
}

#[cfg(test)]
mod fused_tests {
    use crate::storage::{Labels, MemStorage};
    use crate::{Engine, Value};
    use proptest::prelude::*;

    fn matrix(
        eng: &Engine,
        db: &MemStorage,
        q: &str,
        end: i64,
        step: i64,
    ) -> Vec<(Labels, Vec<(i64, u64)>)> {
        let r = eng.range_query(db, q, 0, end, step).unwrap();
        let Value::Matrix(m) = r.value else {
            panic!("{q}: not a matrix")
        };
        // Bits, so that NaN equals NaN and -0 differs from 0.
        m.into_iter()
            .map(|s| {
                (
                    s.labels,
                    s.points.iter().map(|&(t, v)| (t, v.to_bits())).collect(),
                )
            })
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        // The streaming range function (a matrix selector read series by
        // series) and the aggregation fused onto it give what the general
        // path gives: a subquery holding the same samples (one every 10s,
        // the subquery's step) and an aggregation over an operator's result.
        #[test]
        fn fused_and_streaming_equal_general(
            vals in proptest::collection::vec(proptest::collection::vec(
                prop_oneof![8 => -50.0f64..50.0, 1 => Just(0.0), 1 => Just(f64::INFINITY), 1 => Just(f64::NAN)], 30), 1..5),
            groups in proptest::collection::vec(0u8..3, 5),
            step in 1i64..40,
        ) {
            let mut db = MemStorage::new();
            for (i, vs) in vals.iter().enumerate() {
                let l = Labels::from_pairs(&[("__name__", "m"), ("i", &i.to_string()), ("g", &groups[i].to_string())]);
                for (k, &v) in vs.iter().enumerate() {
                    db.add(l.clone(), k as i64 * 10_000, v);
                }
            }
            let end = 300_000;
            let step = step * 7_000;
            for eng in [Engine::default(), Engine::new(crate::EngineOptions { delayed_name_removal: true, ..Default::default() })] {
                for f in ["rate", "increase", "delta", "sum_over_time", "avg_over_time", "max_over_time", "count_over_time", "last_over_time", "stddev_over_time", "changes", "deriv"] {
                    let plain = matrix(&eng, &db, &format!("{f}(m[1m])"), end, step);
                    let sub = matrix(&eng, &db, &format!("{f}(m[1m:10s])"), end, step);
                    prop_assert_eq!(&plain, &sub, "{}", f);
                    for op in ["sum", "avg", "count", "min", "max", "group", "stddev", "stdvar"] {
                        for by in ["", " by (g)", " without (i)"] {
                            let fused = matrix(&eng, &db, &format!("{op}{by} ({f}(m[1m]))"), end, step);
                            let general = matrix(&eng, &db, &format!("{op}{by} (1 * {f}(m[1m:10s]))"), end, step);
                            prop_assert_eq!(&fused, &general, "{} {} {}", op, by, f);
                        }
                    }
                }
                // An aggregation straight over a selector (`and` keeps the
                // left side's samples, name included, but is not fused).
                for op in ["sum", "avg", "count", "min", "max", "group", "stddev", "stdvar"] {
                    for by in ["", " by (g)", " without (i)"] {
                        let fused = matrix(&eng, &db, &format!("{op}{by} (m)"), end, step);
                        let general = matrix(&eng, &db, &format!("{op}{by} (m and m)"), end, step);
                        prop_assert_eq!(&fused, &general, "{} {} selector", op, by);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod topk_tests {
    use crate::storage::{FloatHistogram, Labels, MemStorage};
    use crate::{Engine, Value};

    /// Series `m{i="a"}`, `m{i="b"}`, ... holding `values` at 0s.
    fn db(values: &[f64]) -> MemStorage {
        let mut db = MemStorage::new();
        for (n, &v) in values.iter().enumerate() {
            let name = ((b'a' + n as u8) as char).to_string();
            db.add(Labels::from_pairs(&[("__name__", "m"), ("i", &name)]), 0, v);
        }
        db
    }

    /// The `i` labels of an instant query's result, in its order.
    fn instant(db: &MemStorage, q: &str) -> Vec<String> {
        let r = Engine::default().instant_query(db, q, 0).unwrap();
        let Value::Vector(v) = r.value else {
            panic!("{q}: not a vector")
        };
        v.iter().map(|s| s.labels.get("i").to_string()).collect()
    }

    #[test]
    fn a_tie_goes_as_in_prometheus_heap() {
        // topk(2) of 1 1 1 5: a and b fill the heap with a at the root; c is
        // not better than the root; 5 displaces a. So b stays, not a.
        let d = db(&[1.0, 1.0, 1.0, 5.0]);
        assert_eq!(instant(&d, "topk(2, m)"), ["d", "b"]);
        let d = db(&[5.0, 5.0, 5.0, 1.0]);
        assert_eq!(instant(&d, "bottomk(2, m)"), ["d", "b"]);
        // Equal values only: the heap never takes a value equal to its root.
        let d = db(&[1.0; 6]);
        assert_eq!(instant(&d, "topk(4, m)"), ["a", "b", "c", "d"]);
    }

    #[test]
    fn instant_order_of_ties_is_go_sorts() {
        // 13 kept values, 0 1 2 repeated: Go's pdqsort (no longer an
        // insertion sort at 13) leaves the ties in this order. Prometheus
        // v3.16.0's answer, its series created in label order.
        let values: Vec<f64> = (0..13).map(|i| f64::from(i % 3)).collect();
        let d = db(&values);
        assert_eq!(
            instant(&d, "topk(13, m)").concat(),
            "cflibhekmjagd",
            "topk(13) of {values:?}"
        );
    }

    #[test]
    fn every_step_selects_from_its_own_samples() {
        // Range query: at 0s the 5 of d displaces a; at 60s b's 9 wins and
        // the tie of the others keeps a, which is at the root only at 0s.
        let mut d = MemStorage::new();
        for (i, v0, v1) in [
            ("a", 1.0, 1.0),
            ("b", 1.0, 9.0),
            ("c", 1.0, 1.0),
            ("d", 5.0, 1.0),
        ] {
            let l = Labels::from_pairs(&[("__name__", "m"), ("i", i)]);
            d.add(l.clone(), 0, v0);
            d.add(l, 60_000, v1);
        }
        let r = Engine::default()
            .range_query(&d, "topk(2, m)", 0, 60_000, 60_000)
            .unwrap();
        let Value::Matrix(m) = r.value else {
            panic!("not a matrix")
        };
        let got: Vec<(String, Vec<i64>)> = m
            .iter()
            .map(|s| {
                (
                    s.labels.get("i").to_string(),
                    s.points.iter().map(|p| p.0).collect(),
                )
            })
            .collect();
        let want = [("a", vec![60_000]), ("b", vec![0, 60_000]), ("d", vec![0])];
        let want: Vec<(String, Vec<i64>)> =
            want.into_iter().map(|(i, t)| (i.to_string(), t)).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn k_below_one_is_empty_without_checks_or_annotations() {
        let mut d = db(&[1.0, 2.0]);
        d.add_histogram(
            Labels::from_pairs(&[("__name__", "m"), ("i", "h")]),
            0,
            FloatHistogram::default(),
        );
        let e = Engine::default();
        let r = e.instant_query(&d, "topk(0.5, m)", 0).unwrap();
        assert!(matches!(&r.value, Value::Vector(v) if v.is_empty()));
        assert!(r.infos.is_empty(), "{:?}", r.infos);
        // Every k below 1: no underflow error (Prometheus returns early).
        let r = e.instant_query(&d, "bottomk(-1e19, m)", 0).unwrap();
        assert!(matches!(&r.value, Value::Vector(v) if v.is_empty()));
        // A k of 1 or more: the histogram is ignored, with an info.
        let r = e.instant_query(&d, "topk(1, m)", 0).unwrap();
        assert_eq!(r.infos.len(), 1, "{:?}", r.infos);
        let err = e
            .range_query(&d, "topk(1e19 * (time() - 30) , m)", 0, 60_000, 60_000)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("Scalar value -3e+20 underflows int64"),
            "{err}"
        );
    }
}

#[cfg(test)]
mod abandoned_tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use crate::storage::{
        FloatHistogram, Labels, LazySeries, Matcher, MemStorage, Querier, Queryable, SampleSource,
        SelectHints, StorageError,
    };
    use crate::{Engine, Value};

    /// A storage counting the series it reads.
    struct Counting {
        db: MemStorage,
        reads: AtomicUsize,
    }

    struct CountingQuerier<'a> {
        inner: Box<dyn Querier + 'a>,
        reads: &'a AtomicUsize,
    }

    struct CountingSource<'a> {
        inner: Box<dyn SampleSource + 'a>,
        reads: &'a AtomicUsize,
    }

    impl SampleSource for CountingSource<'_> {
        fn read_into(&self, out: &mut Vec<(i64, f64)>) -> Result<(), StorageError> {
            self.inner.read_into(out)
        }

        fn read_histograms_into(
            &self,
            out: &mut Vec<(i64, FloatHistogram)>,
        ) -> Result<(), StorageError> {
            self.reads.fetch_add(1, Ordering::Relaxed);
            self.inner.read_histograms_into(out)
        }
    }

    impl Queryable for Counting {
        fn querier(&self, mint: i64, maxt: i64) -> Result<Box<dyn Querier + '_>, StorageError> {
            Ok(Box::new(CountingQuerier {
                inner: self.db.querier(mint, maxt)?,
                reads: &self.reads,
            }))
        }
    }

    impl Querier for CountingQuerier<'_> {
        fn select(
            &self,
            matchers: &[Matcher],
            hints: SelectHints,
        ) -> Result<Vec<crate::storage::Series>, StorageError> {
            self.inner.select(matchers, hints)
        }

        fn select_lazy(
            &self,
            matchers: &[Matcher],
            hints: SelectHints,
        ) -> Result<Vec<LazySeries<'_>>, StorageError> {
            Ok(self
                .inner
                .select_lazy(matchers, hints)?
                .into_iter()
                .map(|s| LazySeries {
                    labels: s.labels,
                    source: Box::new(CountingSource {
                        inner: s.source,
                        reads: self.reads,
                    }),
                })
                .collect())
        }

        fn label_names(&self, matchers: &[Matcher]) -> Result<Vec<String>, StorageError> {
            self.inner.label_names(matchers)
        }

        fn label_values(
            &self,
            name: &str,
            matchers: &[Matcher],
        ) -> Result<Vec<String>, StorageError> {
            self.inner.label_values(name, matchers)
        }
    }

    /// A sum over histogram series leaves the fused path at the first
    /// histogram: the series are read once by the general path, not twice,
    /// and the answer and the sample counts are the general path's.
    #[test]
    fn a_fused_aggregation_stops_at_the_first_histogram() {
        let mut db = MemStorage::new();
        let series = 10;
        for i in 0..series {
            let l = Labels::from_pairs(&[("__name__", "h"), ("i", &i.to_string())]);
            for k in 0..20i64 {
                let h = FloatHistogram {
                    count: (k * (i + 1)) as f64,
                    sum: k as f64,
                    ..Default::default()
                };
                db.add_histogram(l.clone(), k * 15_000, h);
            }
        }
        let store = Counting {
            db,
            reads: AtomicUsize::new(0),
        };
        for (q, fused_reads) in [("sum(rate(h[1m]))", 1), ("sum(h)", 1)] {
            store.reads.store(0, Ordering::Relaxed);
            let r = Engine::default()
                .instant_query(&store, q, 285_000)
                .expect("evaluates");
            let Value::Vector(v) = &r.value else {
                panic!("{q}: not a vector")
            };
            assert_eq!(v.len(), 1, "{q}");
            assert!(v[0].h.is_some(), "{q}: a histogram sum");
            assert_eq!(
                store.reads.load(Ordering::Relaxed),
                series as usize + fused_reads,
                "{q}: the fused path read more than its first series"
            );
            assert_eq!(r.stats.samples.series_touched, series, "{q}");
        }
    }
}
