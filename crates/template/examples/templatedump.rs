//! Expands template cases for the interop cross-check against Prometheus
//! (`interop/template_test.go`): one JSON case a line on stdin, one JSON
//! result a line on stdout (`{"out": ...}` or `{"err": ...}`).
//!
//! A case: `text` (expanded as given; `prefix: true` puts Prometheus'
//! alerting definitions before it), `name`, `labels`, `external_labels`,
//! `external_url`, `value` (Go float syntax as a string: `NaN`, `+Inf`),
//! optional `histogram`, `t_ms`, and `queries`: expression → result vector
//! or error.

use std::collections::BTreeMap;
use std::io::{BufRead, Write};

use ferrite_model::histogram::Span;
use ferrite_model::{FloatHistogram, Labels};
use ferrite_template::{alert_template_data, Expander, QueryFunc, DEFINITIONS};
use serde::Deserialize;

#[derive(Deserialize, Default)]
struct JsonHistogram {
    #[serde(default)]
    schema: i32,
    #[serde(default)]
    zero_threshold: f64,
    #[serde(default)]
    zero_count: f64,
    #[serde(default)]
    count: f64,
    #[serde(default)]
    sum: f64,
    #[serde(default)]
    positive_spans: Vec<(i32, u32)>,
    #[serde(default)]
    positive_buckets: Vec<f64>,
    #[serde(default)]
    negative_spans: Vec<(i32, u32)>,
    #[serde(default)]
    negative_buckets: Vec<f64>,
}

impl JsonHistogram {
    fn to_model(&self) -> FloatHistogram {
        let spans = |v: &[(i32, u32)]| {
            v.iter()
                .map(|&(offset, length)| Span { offset, length })
                .collect()
        };
        FloatHistogram {
            schema: self.schema,
            zero_threshold: self.zero_threshold,
            zero_count: self.zero_count,
            count: self.count,
            sum: self.sum,
            positive_spans: spans(&self.positive_spans),
            positive_buckets: self.positive_buckets.clone(),
            negative_spans: spans(&self.negative_spans),
            negative_buckets: self.negative_buckets.clone(),
            ..FloatHistogram::default()
        }
    }
}

#[derive(Deserialize)]
struct JsonSample {
    #[serde(default)]
    labels: BTreeMap<String, String>,
    #[serde(default)]
    value: String,
    histogram: Option<JsonHistogram>,
}

#[derive(Deserialize)]
struct JsonResult {
    #[serde(default)]
    samples: Vec<JsonSample>,
    error: Option<String>,
}

#[derive(Deserialize)]
struct Case {
    #[serde(default)]
    name: String,
    text: String,
    #[serde(default)]
    prefix: bool,
    #[serde(default)]
    labels: BTreeMap<String, String>,
    #[serde(default)]
    external_labels: BTreeMap<String, String>,
    #[serde(default)]
    external_url: String,
    #[serde(default)]
    value: String,
    histogram: Option<JsonHistogram>,
    #[serde(default)]
    t_ms: i64,
    #[serde(default)]
    queries: BTreeMap<String, JsonResult>,
}

fn float(s: &str) -> f64 {
    ferrite_model::gofloat::parse_go_float(s.as_bytes()).unwrap_or(0.0)
}

fn labels(m: &BTreeMap<String, String>) -> Labels {
    Labels::new(m.iter().map(|(k, v)| (k.as_str(), v.as_str())))
}

struct Table<'a>(&'a BTreeMap<String, JsonResult>);

impl QueryFunc for Table<'_> {
    fn query(&self, expr: &str, t_ms: i64) -> Result<Vec<ferrite_promql::Sample>, String> {
        let Some(r) = self.0.get(expr) else {
            return Err(format!("no canned result for {expr:?}"));
        };
        if let Some(e) = &r.error {
            return Err(e.clone());
        }
        Ok(r.samples
            .iter()
            .map(|s| ferrite_promql::Sample {
                labels: labels(&s.labels),
                t: t_ms,
                f: float(&s.value),
                h: s.histogram.as_ref().map(JsonHistogram::to_model),
            })
            .collect())
    }
}

fn main() {
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        if line.trim().is_empty() {
            continue;
        }
        let result = match serde_json::from_str::<Case>(&line) {
            Err(e) => serde_json::json!({ "err": format!("bad case: {e}") }),
            Ok(c) => {
                let h = c.histogram.as_ref().map(JsonHistogram::to_model);
                let data = alert_template_data(
                    &labels(&c.labels),
                    &labels(&c.external_labels),
                    &c.external_url,
                    float(&c.value),
                    h.as_ref(),
                );
                let text = if c.prefix {
                    format!("{DEFINITIONS}{}", c.text)
                } else {
                    c.text.clone()
                };
                let table = Table(&c.queries);
                let name = if c.name.is_empty() {
                    "__alert_A"
                } else {
                    &c.name
                };
                match Expander::new(name, &text, data, c.t_ms, &table, &c.external_url).expand() {
                    Ok(s) => serde_json::json!({ "out": s }),
                    Err(e) => serde_json::json!({ "err": e }),
                }
            }
        };
        let _ = writeln!(out, "{result}");
    }
}
