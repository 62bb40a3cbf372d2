//! Annotations (Prometheus' "PromQL warning: ..." / "PromQL info: ...")
//! and the source positions they end with.
//!
//! Prometheus appends the position of the expression an annotation is
//! about, as `(line:column)` (1-based, column in bytes), and keeps one
//! annotation per distinct text. Every node of the syntax tree knows
//! where it starts (`parser::Expr::pos`).

use std::collections::HashMap;

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
    let (y, m, d) = ferrite_model::gotime::civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        sod / 3600,
        (sod / 60) % 60,
        sod % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parser::Expr;

    #[test]
    fn the_tree_knows_where_calls_arguments_and_params_start() {
        let q = "sum(sort(x)) + histogram_quantile(0.8, rate(b[5m])) # c(\n or quantile without(point) ( NaN, data)";
        let e = crate::parse(q).unwrap();
        let Expr::Binary(top) = &**e else { panic!() };
        let Expr::Binary(left) = top.lhs.as_ref() else {
            panic!()
        };
        let Expr::Aggregate(sum) = left.lhs.as_ref() else {
            panic!()
        };
        assert_eq!(line_col(q, sum.expr.pos()), "1:5");
        let Expr::Call(hq) = left.rhs.as_ref() else {
            panic!()
        };
        assert_eq!(line_col(q, hq.args[0].pos()), "1:35");
        assert_eq!(line_col(q, hq.args[1].pos()), "1:40");
        let Expr::Aggregate(quant) = top.rhs.as_ref() else {
            panic!()
        };
        let param = quant.param.as_deref().map(Expr::pos);
        assert_eq!(param.map(|p| line_col(q, p)).as_deref(), Some("2:31"));
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
