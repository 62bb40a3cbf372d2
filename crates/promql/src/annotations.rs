//! Annotations (Prometheus' "PromQL warning: ..." / "PromQL info: ...")
//! and the source positions they end with.
//!
//! Prometheus appends the position of the expression an annotation is
//! about, as `(line:column)` (1-based, column in bytes), and keeps one
//! annotation per distinct text. Selectors and binary operations carry
//! their position in the tree; for calls and aggregations [`SourceMap`]
//! finds it from the query text: where each function call and aggregation
//! starts (their names appear in the text in the order of a pre-order walk
//! of the tree), and from there where their arguments start.

use std::collections::HashMap;
use std::sync::OnceLock;

use crate::parser::{AggregateExpr, Call, Expr};

use crate::lexical::{is_ident_start, skip_ident, skip_string, skip_ws};
use ferrite_model::gofloat::{format_g, format_g_prec};

/// Annotation severities.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Warning,
    Info,
}

/// Details of "input to histogram_quantile needed to be fixed for
/// monotonicity", merged over the steps and histograms it was seen in.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Monotonicity {
    pub min_ts: i64,
    pub max_ts: i64,
    pub min_bucket: f64,
    pub max_bucket: f64,
    pub max_diff: f64,
    /// Occurrences merged into this one beyond the first.
    pub merged: usize,
}

#[derive(Debug)]
struct Anno {
    kind: Kind,
    /// The text without position (also the deduplication key).
    text: String,
    pos: Option<usize>,
    monotonicity: Option<Monotonicity>,
}

/// A query's annotations, one per distinct text, in order of first
/// appearance (a later one with the same text replaces the position, as in
/// Prometheus where the last added wins).
#[derive(Debug, Default)]
pub(crate) struct Annotations {
    list: Vec<Anno>,
    index: HashMap<String, usize>,
}

pub(crate) const QUANTILE_WARNING: &str =
    "PromQL warning: quantile value should be between 0 and 1, got ";
pub(crate) const MONOTONICITY_INFO: &str = "PromQL info: input to histogram_quantile needed to be fixed for monotonicity (see https://prometheus.io/docs/prometheus/latest/querying/functions/#histogram_quantile)";
pub(crate) const SORT_WARNING: &str =
    "PromQL warning: sort is ineffective for range queries since results are always ordered by labels";

/// Which operation on histograms an annotation is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HistOp {
    Add,
    Sub,
    Agg,
}

impl HistOp {
    fn text(self) -> &'static str {
        match self {
            HistOp::Add => "addition",
            HistOp::Sub => "subtraction",
            HistOp::Agg => "aggregation",
        }
    }
}

/// Annotations about native histograms a series' evaluation ran into,
/// collected per series (possibly on other threads) and added with the
/// series' metric name and the expression's position afterwards.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Note {
    /// A range (or operation) holding both floats and histograms.
    MixedFloatsHistograms,
    /// Exponential and custom-bucket histograms together.
    MixedExponentialCustom,
    /// A counter function over a gauge histogram.
    NotCounter,
    /// A gauge function over a counter histogram.
    NotGauge,
    /// Histograms ignored in a range that also has floats.
    IgnoredInMixedRange,
    /// Counter reset hints "reset" and "not reset" met.
    CounterResetCollision(HistOp),
    /// Differing custom bounds reduced to their intersection.
    CustomBucketsReconciled(HistOp),
}

impl Note {
    /// The annotation's severity and text for a series named `name`.
    pub fn render(self, name: &str) -> (Kind, String) {
        match self {
            Note::MixedFloatsHistograms => (
                Kind::Warning,
                format!("PromQL warning: encountered a mix of histograms and floats for metric name {name:?}"),
            ),
            Note::MixedExponentialCustom => (
                Kind::Warning,
                format!("PromQL warning: vector contains a mix of histograms with exponential and custom buckets schemas for metric name {name:?}"),
            ),
            Note::NotCounter => (
                Kind::Warning,
                format!("PromQL warning: this native histogram metric is not a counter: {name:?}"),
            ),
            Note::NotGauge => (
                Kind::Warning,
                format!("PromQL warning: this native histogram metric is not a gauge: {name:?}"),
            ),
            Note::IgnoredInMixedRange => (
                Kind::Info,
                format!("PromQL info: ignored histograms in a range containing both floats and histograms for metric name {name:?}"),
            ),
            Note::CounterResetCollision(op) => (
                Kind::Warning,
                format!("PromQL warning: conflicting counter resets during histogram {}", op.text()),
            ),
            Note::CustomBucketsReconciled(op) => (
                Kind::Info,
                format!("PromQL info: mismatched custom buckets were reconciled during {}", op.text()),
            ),
        }
    }
}

impl Annotations {
    /// Adds a [`Note`] about a series named `name`.
    pub fn note(&mut self, n: Note, name: &str, pos: Option<usize>) {
        let (kind, text) = n.render(name);
        self.add(kind, text, pos);
    }

    pub fn info(&mut self, text: String, pos: Option<usize>) {
        self.add(Kind::Info, text, pos);
    }

    pub fn add(&mut self, kind: Kind, text: String, pos: Option<usize>) {
        match self.index.get(&text) {
            Some(&i) => self.list[i].pos = pos.or(self.list[i].pos),
            None => {
                self.index.insert(text.clone(), self.list.len());
                self.list.push(Anno {
                    kind,
                    text,
                    pos,
                    monotonicity: None,
                });
            }
        }
    }

    pub fn warn(&mut self, text: String, pos: Option<usize>) {
        self.add(Kind::Warning, text, pos);
    }

    /// `quantile value should be between 0 and 1, got <q>`.
    pub fn invalid_quantile(&mut self, q: f64, pos: Option<usize>) {
        self.warn(format!("{QUANTILE_WARNING}{}", format_g(q)), pos);
    }

    /// The forced-monotonicity info of `histogram_quantile`; occurrences
    /// for the same metric name merge their time span and bucket details.
    pub fn forced_monotonicity(&mut self, metric_name: &str, pos: Option<usize>, m: Monotonicity) {
        let text = with_metric_name(MONOTONICITY_INFO, metric_name);
        match self.index.get(&text) {
            Some(&i) => {
                let a = &mut self.list[i];
                a.pos = pos.or(a.pos);
                a.monotonicity = Some(match a.monotonicity {
                    None => m,
                    Some(o) => Monotonicity {
                        min_ts: o.min_ts.min(m.min_ts),
                        max_ts: o.max_ts.max(m.max_ts),
                        min_bucket: o.min_bucket.min(m.min_bucket),
                        max_bucket: o.max_bucket.max(m.max_bucket),
                        max_diff: o.max_diff.max(m.max_diff),
                        merged: o.merged + m.merged + 1,
                    },
                });
            }
            None => {
                self.index.insert(text.clone(), self.list.len());
                self.list.push(Anno {
                    kind: Kind::Info,
                    text,
                    pos,
                    monotonicity: Some(m),
                });
            }
        }
    }

    /// The final texts (warnings, infos), with positions in `query`.
    pub fn render(&self, query: &str) -> (Vec<String>, Vec<String>) {
        let mut warnings = Vec::new();
        let mut infos = Vec::new();
        for a in &self.list {
            let mut s = a.text.clone();
            if let Some(m) = &a.monotonicity {
                s.push_str(&format!(
                    ", from buckets {} to {}, with a max diff of {}, over {} samples from {} to {}",
                    format_g(m.min_bucket),
                    format_g(m.max_bucket),
                    format_g_prec(m.max_diff, 2),
                    m.merged + 1,
                    rfc3339(m.min_ts),
                    rfc3339(m.max_ts),
                ));
            }
            if let Some(p) = a.pos {
                s.push_str(&format!(" ({})", line_col(query, p)));
            }
            match a.kind {
                Kind::Warning => warnings.push(s),
                Kind::Info => infos.push(s),
            }
        }
        (warnings, infos)
    }
}

/// `text for metric name "<name>"`, or `text` without a name.
pub(crate) fn with_metric_name(text: &str, name: &str) -> String {
    if name.is_empty() {
        text.to_string()
    } else {
        format!("{text} for metric name {name:?}")
    }
}

/// `line:column` of byte offset `pos` (both 1-based; columns count bytes).
pub(crate) fn line_col(query: &str, pos: usize) -> String {
    let pos = pos.min(query.len());
    let before = &query.as_bytes()[..pos];
    let line = 1 + before.iter().filter(|&&b| b == b'\n').count();
    let col = match before.iter().rposition(|&b| b == b'\n') {
        Some(nl) => pos - nl,
        None => pos + 1,
    };
    format!("{line}:{col}")
}

/// `ms` (Unix milliseconds) as RFC 3339 in UTC, whole seconds.
fn rfc3339(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    let (y, m, d) = crate::functions::civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        sod / 3600,
        (sod / 60) % 60,
        sod % 60
    )
}

/// Where function calls and aggregations start in the query text, found
/// on first use.
pub(crate) struct SourceMap<'q> {
    query: &'q str,
    root: &'q Expr,
    starts: OnceLock<HashMap<usize, usize>>,
}

fn call_key(c: &Call) -> usize {
    c as *const Call as usize
}

fn agg_key(a: &AggregateExpr) -> usize {
    a as *const AggregateExpr as usize
}

impl<'q> SourceMap<'q> {
    pub fn new(query: &'q str, root: &'q Expr) -> Self {
        SourceMap {
            query,
            root,
            starts: OnceLock::new(),
        }
    }

    fn starts(&self) -> &HashMap<usize, usize> {
        self.starts
            .get_or_init(|| node_starts(self.query, self.root))
    }

    /// Where the call (its function name) starts.
    pub fn call(&self, c: &Call) -> Option<usize> {
        self.starts().get(&call_key(c)).copied()
    }

    /// Where argument `i` of the call starts.
    pub fn call_arg(&self, c: &Call, i: usize) -> Option<usize> {
        let start = self.call(c)?;
        let b = self.query.as_bytes();
        let p = skip_ws(b, skip_ident(b, start));
        arg_starts(b, p).get(i).copied()
    }

    /// Where the aggregation's parameter (`0.5` of `quantile(0.5, x)`) starts.
    pub fn agg_param(&self, a: &AggregateExpr) -> Option<usize> {
        let start = self.starts().get(&agg_key(a)).copied()?;
        let b = self.query.as_bytes();
        let mut p = skip_ws(b, skip_ident(b, start));
        // `by (...)` / `without (...)` before the body.
        if b.get(p).is_some_and(|c| is_ident_start(*c)) {
            p = skip_ws(b, skip_ident(b, p));
            if b.get(p) == Some(&b'(') {
                p = skip_ws(b, skip_group(b, p));
            }
        }
        arg_starts(b, p).first().copied()
    }

    /// Where the aggregation starts.
    pub fn agg(&self, a: &AggregateExpr) -> Option<usize> {
        self.starts().get(&agg_key(a)).copied()
    }

    /// Where the aggregation's aggregated expression starts.
    pub fn agg_expr(&self, a: &AggregateExpr) -> Option<usize> {
        let start = self.starts().get(&agg_key(a)).copied()?;
        let b = self.query.as_bytes();
        let mut p = skip_ws(b, skip_ident(b, start));
        if b.get(p).is_some_and(|c| is_ident_start(*c)) {
            p = skip_ws(b, skip_ident(b, p));
            if b.get(p) == Some(&b'(') {
                p = skip_ws(b, skip_group(b, p));
            }
        }
        let args = arg_starts(b, p);
        let i = usize::from(a.param.is_some());
        args.get(i).copied()
    }
}

/// The position after the bracketed group opening at `p`.
fn skip_group(b: &[u8], p: usize) -> usize {
    let mut depth = 0usize;
    let mut i = p;
    while i < b.len() {
        match b[i] {
            b'"' | b'\'' | b'`' => {
                i = skip_string(b, i);
                continue;
            }
            b'#' => {
                i = skip_ws(b, i);
                continue;
            }
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    b.len()
}

/// Where the comma-separated arguments of the parenthesised list opening
/// at `p` start.
fn arg_starts(b: &[u8], p: usize) -> Vec<usize> {
    let mut out = Vec::new();
    if b.get(p) != Some(&b'(') {
        return out;
    }
    let mut i = skip_ws(b, p + 1);
    if b.get(i) == Some(&b')') {
        return out;
    }
    out.push(i);
    let mut depth = 0usize;
    while i < b.len() {
        match b[i] {
            b'"' | b'\'' | b'`' => {
                i = skip_string(b, i);
                continue;
            }
            b'#' => {
                i = skip_ws(b, i);
                continue;
            }
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => {
                if depth == 0 {
                    return out;
                }
                depth -= 1;
            }
            b',' if depth == 0 => {
                i = skip_ws(b, i + 1);
                out.push(i);
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// Identifiers in the text that may name a call or aggregation: followed
/// by `(`, or by `by`/`without` (an aggregation's leading grouping), and
/// not after `@` (`@ start()`).
fn candidate_names(q: &str) -> Vec<(&str, usize)> {
    let b = q.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let mut prev: Option<u8> = None;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() || c == b'#' {
            i = skip_ws(b, i);
            continue;
        }
        if matches!(c, b'"' | b'\'' | b'`') {
            i = skip_string(b, i);
            prev = Some(c);
            continue;
        }
        if c.is_ascii_digit() || c == b'.' {
            // Numbers and durations (`1e3`, `0x1f`, `5m`) are no names.
            while b
                .get(i)
                .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'.' || *c == b'_')
            {
                i += 1;
            }
            prev = Some(b'0');
            continue;
        }
        if is_ident_start(c) {
            let end = skip_ident(b, i);
            let next = skip_ws(b, end);
            let follows_call = b.get(next) == Some(&b'(');
            let follows_grouping = b.get(next).is_some_and(|c| is_ident_start(*c)) && {
                let w = &q[next..skip_ident(b, next)];
                w.eq_ignore_ascii_case("by") || w.eq_ignore_ascii_case("without")
            };
            if (follows_call || follows_grouping) && prev != Some(b'@') {
                out.push((&q[i..end], i));
            }
            i = end;
            prev = Some(b'a');
            continue;
        }
        prev = Some(c);
        i += 1;
    }
    out
}

/// Start offsets of the calls and aggregations of `root`, keyed by node.
fn node_starts(q: &str, root: &Expr) -> HashMap<usize, usize> {
    let mut nodes: Vec<(usize, String, bool)> = Vec::new();
    collect_nodes(root, &mut nodes);
    let cands = candidate_names(q);
    let mut out = HashMap::new();
    let mut ci = 0;
    for (key, name, is_agg) in nodes {
        let found = cands[ci..].iter().position(|(n, _)| {
            if is_agg {
                n.eq_ignore_ascii_case(&name)
            } else {
                *n == name
            }
        });
        if let Some(k) = found {
            out.insert(key, cands[ci + k].1);
            ci += k + 1;
        }
    }
    out
}

/// Calls and aggregations in pre-order, children in text order.
fn collect_nodes(e: &Expr, out: &mut Vec<(usize, String, bool)>) {
    match e {
        Expr::Aggregate(a) => {
            out.push((agg_key(a), a.op.name().to_string(), true));
            if let Some(p) = &a.param {
                collect_nodes(p, out);
            }
            collect_nodes(&a.expr, out);
        }
        Expr::Call(c) => {
            out.push((call_key(c), c.func.name.to_string(), false));
            for a in &c.args {
                collect_nodes(a, out);
            }
        }
        Expr::Unary(u) => collect_nodes(&u.expr, out),
        Expr::Paren(p) => collect_nodes(&p.expr, out),
        Expr::Binary(b) => {
            collect_nodes(&b.lhs, out);
            collect_nodes(&b.rhs, out);
        }
        Expr::Subquery(s) => collect_nodes(&s.expr, out),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_of_calls_arguments_and_params() {
        let q = "sum(sort(x)) + histogram_quantile(0.8, rate(b[5m])) # c(\n or quantile without(point) ( NaN, data)";
        let e = crate::parse(q).unwrap();
        let sm = SourceMap::new(q, &e);
        let Expr::Binary(top) = &**e else { panic!() };
        let Expr::Binary(left) = top.lhs.as_ref() else {
            panic!()
        };
        let Expr::Aggregate(sum) = left.lhs.as_ref() else {
            panic!()
        };
        let Expr::Call(sort) = sum.expr.as_ref() else {
            panic!()
        };
        assert_eq!(line_col(q, sm.call(sort).unwrap()), "1:5");
        let Expr::Call(hq) = left.rhs.as_ref() else {
            panic!()
        };
        assert_eq!(line_col(q, sm.call_arg(hq, 0).unwrap()), "1:35");
        assert_eq!(line_col(q, sm.call_arg(hq, 1).unwrap()), "1:40");
        let Expr::Aggregate(quant) = top.rhs.as_ref() else {
            panic!()
        };
        assert_eq!(line_col(q, sm.agg_param(quant).unwrap()), "2:31");
    }

    #[test]
    fn at_start_is_no_call() {
        let q = "x @ start() + abs(y)";
        let e = crate::parse(q).unwrap();
        let sm = SourceMap::new(q, &e);
        let Expr::Binary(b) = &**e else { panic!() };
        let Expr::Call(abs) = b.rhs.as_ref() else {
            panic!()
        };
        assert_eq!(sm.call(abs), Some(14));
    }

    #[test]
    fn annotations_dedup_and_render() {
        let mut a = Annotations::default();
        a.invalid_quantile(f64::NAN, Some(3));
        a.invalid_quantile(f64::NAN, Some(3));
        let m = Monotonicity {
            min_ts: 60_000,
            max_ts: 60_000,
            min_bucket: 1.0,
            max_bucket: 100.0,
            max_diff: 1.0,
            merged: 0,
        };
        a.forced_monotonicity("h", Some(0), m);
        a.forced_monotonicity(
            "h",
            Some(0),
            Monotonicity {
                min_ts: 120_000,
                max_ts: 120_000,
                ..m
            },
        );
        let (w, i) = a.render("abcd");
        assert_eq!(
            w,
            vec!["PromQL warning: quantile value should be between 0 and 1, got NaN (1:4)"]
        );
        assert_eq!(i.len(), 1);
        assert!(i[0].ends_with(" for metric name \"h\", from buckets 1 to 100, with a max diff of 1, over 2 samples from 1970-01-01T00:01:00Z to 1970-01-01T00:02:00Z (1:1)"), "{}", i[0]);
    }
}
