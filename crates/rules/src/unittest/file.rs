//! A unit-test file as promtool reads it (`yaml.UnmarshalStrict` into its
//! `unitTestFile`): every key it does not know is refused, whatever
//! `--ignore-unknown-fields` says (that flag is for the rule files).

use std::collections::BTreeMap;
use std::rc::Rc;

use crate::yaml::{self, Decoded, Decoder, Fatal, Node, Resolved};

/// The file: rule files, intervals and test groups.
#[derive(Debug, Default)]
pub struct TestFile {
    /// `rule_files`, as written (patterns, relative to the file).
    pub rule_files: Vec<String>,
    /// `evaluation_interval` (ms; 0 when not given).
    pub evaluation_interval_ms: i64,
    /// `group_eval_order`.
    pub group_eval_order: Vec<String>,
    /// `tests`.
    pub tests: Vec<TestGroup>,
    /// `fuzzy_compare`.
    pub fuzzy_compare: bool,
}

/// One item of `tests`.
#[derive(Debug, Default)]
pub struct TestGroup {
    /// `interval` (ms; 0 when not given).
    pub interval_ms: i64,
    /// `input_series`.
    pub input_series: Vec<InputSeries>,
    /// `alert_rule_test`.
    pub alert_rule_test: Vec<AlertTest>,
    /// `promql_expr_test`.
    pub promql_expr_test: Vec<ExprTest>,
    /// `external_labels`.
    pub external_labels: BTreeMap<String, String>,
    /// `external_url`.
    pub external_url: String,
    /// `name`.
    pub name: String,
    /// `start_timestamp` (Unix ns), if given.
    pub start_ns: Option<i64>,
}

/// One item of `input_series`.
#[derive(Debug, Default)]
pub struct InputSeries {
    /// `series`: the labels in PromQL notation.
    pub series: String,
    /// `values`: promtool's expanding notation.
    pub values: String,
}

/// One item of `alert_rule_test`.
#[derive(Debug, Default)]
pub struct AlertTest {
    /// `eval_time` (ms).
    pub eval_time_ms: i64,
    /// `alertname`.
    pub alertname: String,
    /// `exp_alerts`.
    pub exp_alerts: Vec<ExpAlert>,
}

/// One item of `exp_alerts`.
#[derive(Debug, Default)]
pub struct ExpAlert {
    /// `exp_labels`.
    pub labels: BTreeMap<String, String>,
    /// `exp_annotations`.
    pub annotations: BTreeMap<String, String>,
}

/// One item of `promql_expr_test`.
#[derive(Debug, Default)]
pub struct ExprTest {
    /// `expr`.
    pub expr: String,
    /// `eval_time` (ms).
    pub eval_time_ms: i64,
    /// `exp_samples`.
    pub exp_samples: Vec<ExpSample>,
}

/// One item of `exp_samples`.
#[derive(Debug, Default)]
pub struct ExpSample {
    /// `labels`: a metric in PromQL notation.
    pub labels: String,
    /// `value`.
    pub value: f64,
    /// `histogram`: a histogram in promtool's notation, if not empty.
    pub histogram: String,
}

/// Reads a test file's text; the error is yaml.v2's (`yaml: line 3: ...`,
/// `yaml: unmarshal errors:\n  line 5: field x not found in type ...`) or
/// a field's own (a bad duration or timestamp).
pub fn parse(source: &str) -> Result<TestFile, String> {
    let doc = yaml::parse_document(source)?;
    let Some(root) = doc.root else {
        return Ok(TestFile::default());
    };
    let mut d = Decoder::new(true);
    let file = decode_file(&mut d, &root).map_err(|Fatal(e)| e)?;
    if !d.terrors.is_empty() {
        return Err(yaml::type_errors_message(&d.terrors));
    }
    Ok(file)
}

fn set<T>(field: &mut T, value: Option<T>) {
    if let Some(v) = value {
        *field = v;
    }
}

fn strings(d: &mut Decoder, v: &Node) -> Decoded<Vec<String>> {
    d.decode_seq(v, "[]string", &mut |d, n| d.decode_string(n))
}

fn decode_bool(d: &mut Decoder, n: &Node) -> Decoded<bool> {
    let n = n.resolved();
    if n.is_null() {
        return Ok(None);
    }
    if n.kind == yaml::Kind::Scalar && !n.indicated_string {
        if let Resolved::Bool(b) = yaml::resolve(&n.value) {
            return Ok(Some(b));
        }
        // yaml.v2 reads YAML 1.1 booleans too.
        match n.value.as_str() {
            "y" | "Y" | "yes" | "Yes" | "YES" | "on" | "On" | "ON" => return Ok(Some(true)),
            "n" | "N" | "no" | "No" | "NO" | "off" | "Off" | "OFF" => return Ok(Some(false)),
            _ => {}
        }
    }
    d.type_error(n, "bool");
    Ok(None)
}

fn decode_float(d: &mut Decoder, n: &Node) -> Decoded<f64> {
    let n = n.resolved();
    if n.is_null() {
        return Ok(None);
    }
    if n.kind == yaml::Kind::Scalar && !n.indicated_string {
        match yaml::resolve(&n.value) {
            Resolved::Int(i) => return Ok(Some(i as f64)),
            Resolved::Uint(u) => return Ok(Some(u as f64)),
            Resolved::Float(f) => return Ok(Some(f)),
            _ => {}
        }
    }
    d.type_error(n, "float64");
    Ok(None)
}

fn decode_file(d: &mut Decoder, root: &Node) -> Result<TestFile, Fatal> {
    let mut f = TestFile::default();
    d.decode_struct(root, "main.unitTestFile", &mut |d, key, v| {
        match key {
            "rule_files" => set(&mut f.rule_files, strings(d, v)?),
            "evaluation_interval" => set(&mut f.evaluation_interval_ms, d.decode_duration(v)?),
            "group_eval_order" => set(&mut f.group_eval_order, strings(d, v)?),
            "tests" => set(
                &mut f.tests,
                d.decode_seq(v, "[]main.testGroup", &mut decode_group)?,
            ),
            "fuzzy_compare" => set(&mut f.fuzzy_compare, decode_bool(d, v)?),
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    Ok(f)
}

fn decode_group(d: &mut Decoder, n: &Rc<Node>) -> Decoded<TestGroup> {
    let mut g = TestGroup::default();
    let decoded = d.decode_struct(n, "main.testGroup", &mut |d, key, v| {
        match key {
            "interval" => set(&mut g.interval_ms, d.decode_duration(v)?),
            "input_series" => set(
                &mut g.input_series,
                d.decode_seq(v, "[]main.series", &mut decode_series)?,
            ),
            "alert_rule_test" => set(
                &mut g.alert_rule_test,
                d.decode_seq(v, "[]main.alertTestCase", &mut decode_alert_test)?,
            ),
            "promql_expr_test" => set(
                &mut g.promql_expr_test,
                d.decode_seq(v, "[]main.promqlTestCase", &mut decode_expr_test)?,
            ),
            "external_labels" => set(&mut g.external_labels, d.decode_string_map(v)?),
            "external_url" => set(&mut g.external_url, d.decode_string(v)?),
            "name" => set(&mut g.name, d.decode_string(v)?),
            "start_timestamp" => {
                if let Some(s) = d.decode_string(v)? {
                    g.start_ns = Some(parse_time(&s).map_err(Fatal)?);
                }
            }
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    Ok(decoded.then_some(g))
}

fn decode_series(d: &mut Decoder, n: &Rc<Node>) -> Decoded<InputSeries> {
    let mut s = InputSeries::default();
    let decoded = d.decode_struct(n, "main.series", &mut |d, key, v| {
        match key {
            "series" => set(&mut s.series, d.decode_string(v)?),
            "values" => set(&mut s.values, d.decode_string(v)?),
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    Ok(decoded.then_some(s))
}

fn decode_alert_test(d: &mut Decoder, n: &Rc<Node>) -> Decoded<AlertTest> {
    let mut t = AlertTest::default();
    let decoded = d.decode_struct(n, "main.alertTestCase", &mut |d, key, v| {
        match key {
            "eval_time" => set(&mut t.eval_time_ms, d.decode_duration(v)?),
            "alertname" => set(&mut t.alertname, d.decode_string(v)?),
            "exp_alerts" => set(
                &mut t.exp_alerts,
                d.decode_seq(v, "[]main.alert", &mut |d, n| {
                    let mut a = ExpAlert::default();
                    let decoded = d.decode_struct(n, "main.alert", &mut |d, key, v| {
                        match key {
                            "exp_labels" => set(&mut a.labels, d.decode_string_map(v)?),
                            "exp_annotations" => set(&mut a.annotations, d.decode_string_map(v)?),
                            _ => return Ok(false),
                        }
                        Ok(true)
                    })?;
                    Ok(decoded.then_some(a))
                })?,
            ),
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    Ok(decoded.then_some(t))
}

fn decode_expr_test(d: &mut Decoder, n: &Rc<Node>) -> Decoded<ExprTest> {
    let mut t = ExprTest::default();
    let decoded = d.decode_struct(n, "main.promqlTestCase", &mut |d, key, v| {
        match key {
            "expr" => set(&mut t.expr, d.decode_string(v)?),
            "eval_time" => set(&mut t.eval_time_ms, d.decode_duration(v)?),
            "exp_samples" => set(
                &mut t.exp_samples,
                d.decode_seq(v, "[]main.sample", &mut |d, n| {
                    let mut s = ExpSample::default();
                    let decoded = d.decode_struct(n, "main.sample", &mut |d, key, v| {
                        match key {
                            "labels" => set(&mut s.labels, d.decode_string(v)?),
                            "value" => set(&mut s.value, decode_float(d, v)?),
                            "histogram" => set(&mut s.histogram, d.decode_string(v)?),
                            _ => return Ok(false),
                        }
                        Ok(true)
                    })?;
                    Ok(decoded.then_some(s))
                })?,
            ),
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    Ok(decoded.then_some(t))
}

/// promtool's `parseTime`: Unix seconds (a float), else RFC 3339; Unix
/// nanoseconds.
pub fn parse_time(s: &str) -> Result<i64, String> {
    let bad = || {
        format!(
            "cannot parse {} to a valid timestamp",
            ferrite_model::goquote::quote(s)
        )
    };
    if let Ok(f) = ferrite_model::gofloat::parse_go_float(s.as_bytes()) {
        if !f.is_finite() {
            return Err(bad());
        }
        let secs = f.trunc();
        let frac = f - secs;
        return Ok((secs as i64)
            .saturating_mul(1_000_000_000)
            .saturating_add((frac * 1e9) as i64));
    }
    parse_rfc3339(s).ok_or_else(bad)
}

/// `2006-01-02T15:04:05.999999999Z07:00` into Unix nanoseconds.
fn parse_rfc3339(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    let num = |from: usize, len: usize| -> Option<i64> {
        let part = s.get(from..from + len)?;
        if !part.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        part.parse().ok()
    };
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't') {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (year, month, day) = (num(0, 4)?, num(5, 2)?, num(8, 2)?);
    let (hour, min, sec) = (num(11, 2)?, num(14, 2)?, num(17, 2)?);
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return None;
    }
    if hour > 23 || min > 59 || sec > 59 {
        return None;
    }
    let mut i = 19;
    let mut nanos = 0i64;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        let digits = &s[start..i];
        if digits.is_empty() || digits.len() > 9 {
            return None;
        }
        nanos = digits.parse::<i64>().ok()? * 10i64.pow(9 - digits.len() as u32);
    }
    let offset_s = match &s[i..] {
        "Z" | "z" => 0,
        tz => {
            let tb = tz.as_bytes();
            if tb.len() != 6 || !matches!(tb[0], b'+' | b'-') || tb[3] != b':' {
                return None;
            }
            let (h, m) = (num(i + 1, 2)?, num(i + 4, 2)?);
            if h > 23 || m > 59 {
                return None;
            }
            let off = h * 3600 + m * 60;
            if tb[0] == b'-' {
                -off
            } else {
                off
            }
        }
    };
    let days = days_from_civil(year, month, day);
    let secs = days * 86_400 + hour * 3600 + min * 60 + sec - offset_s;
    Some(secs * 1_000_000_000 + nanos)
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unittest_reads_a_file() {
        let f = parse(
            "rule_files: [a.yml]\nevaluation_interval: 30s\nfuzzy_compare: true\ntests:\n  - name: x\n    interval: 1m\n    start_timestamp: 1609459200\n    input_series:\n      - series: up\n        values: 1\n    alert_rule_test:\n      - eval_time: 5m\n        alertname: A\n        exp_alerts:\n          - exp_labels: {a: b}\n    promql_expr_test:\n      - expr: up\n        eval_time: 0\n        exp_samples:\n          - labels: up\n            value: 1\n",
        )
        .expect("parses");
        assert_eq!(f.rule_files, ["a.yml"]);
        assert_eq!(f.evaluation_interval_ms, 30_000);
        assert!(f.fuzzy_compare);
        let t = &f.tests[0];
        assert_eq!(t.start_ns, Some(1_609_459_200_000_000_000));
        assert_eq!(t.input_series[0].values, "1");
        assert_eq!(t.alert_rule_test[0].eval_time_ms, 300_000);
        assert_eq!(t.alert_rule_test[0].exp_alerts[0].labels["a"], "b");
        assert_eq!(t.promql_expr_test[0].exp_samples[0].value, 1.0);
    }

    #[test]
    fn unittest_refuses_unknown_fields() {
        let e = parse("tests:\n  - nme: x\n").expect_err("unknown field");
        assert_eq!(
            e,
            "yaml: unmarshal errors:\n  line 2: field nme not found in type main.testGroup"
        );
    }

    #[test]
    fn unittest_times() {
        assert_eq!(
            parse_time("2024-01-01T00:00:00Z"),
            Ok(1_704_067_200_000_000_000)
        );
        assert_eq!(
            parse_time("2024-01-01T01:00:00.5+01:00"),
            Ok(1_704_067_200_500_000_000)
        );
        assert_eq!(
            parse_time("soon"),
            Err("cannot parse \"soon\" to a valid timestamp".to_string())
        );
    }
}
