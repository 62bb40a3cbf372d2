//! Rule unit tests as `promtool test rules` runs them (Prometheus
//! v3.16.0's `cmd/promtool/unittest.go`), with its verdicts and words.
//!
//! A test file ([`file`]) names rule files (patterns relative to it) and
//! test groups. For each group that `--run` selects:
//!
//! 1. **Input.** `input_series` are read in promtool's series notation
//!    (`0+10x10`, `_`, `stale`, `{{...}}` histograms), one sample per
//!    `interval` from the start (`start_timestamp`, else the Unix
//!    epoch); samples are loaded up to each evaluation's time, as
//!    promtool's lazy loader loads them ([`storage`]).
//! 2. **Rules.** The rule files are read as the server reads them (unknown
//!    fields refused unless `--ignore-unknown-fields`); every group gets
//!    the test's `interval`, external labels and URL, and its alerting
//!    rules count as restored (they write `ALERTS` at once).
//! 3. **Evaluation.** From the start, every `evaluation_interval`, up to
//!    the largest `eval_time`, each group is evaluated in
//!    `group_eval_order` (the others first, in key order); a rule that
//!    fails ends the test with `rule: <name>, time: <t>, err: <e>`.
//! 4. **Alerts.** An `alert_rule_test` at `eval_time` is checked after the
//!    last evaluation at or before it: the *firing* alerts of the rules of
//!    that name (pending ones do not count, resolved ones are gone), their
//!    labels and expanded annotations, sorted, against `exp_alerts` (with
//!    `alertname` added).
//! 5. **Expressions.** After the last evaluation, each `promql_expr_test`
//!    is an instant query at its `eval_time` over the inputs and what the
//!    rules wrote; samples are compared sorted by labels, floats exactly
//!    (or within one ulp with `fuzzy_compare`), histograms by their test
//!    notation.
//!
//! With `--diff`, a failed alert test shows promtool's colored JSON diff
//! ([`jsondiff`]) instead of `exp:`/`got:`; with `--debug`, each test's
//! start, end and a dump of all its data go to standard error.

pub mod file;
pub mod jsondiff;
pub mod storage;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Instant;

use ferrite_model::goquote::quote as go_quote;
use ferrite_model::{FloatHistogram, Labels};
use ferrite_promql::promqltest::{parse_series_desc, parse_values, SeqValue};
use ferrite_promql::{Engine, EngineOptions, Value as QueryValue};

use crate::alerting::{AlertContext, AlertNotifier, AlertState, AlertingRule};
use crate::file::{go_io_error, parse_expr, parse_file_with, ParseOptions};
use crate::group::{EvalContext, Group};
use crate::recording::RecordingRule;
use crate::restore::RestoreSettings;
use crate::rule::Rule;
use file::{TestFile, TestGroup};
use storage::{UnitTestStorage, Value};

const NS_PER_MS: i64 = 1_000_000;

/// How tests are run (promtool's flags).
#[derive(Default)]
pub struct Options<'a> {
    /// `--run`: the test groups whose names it matches run (all without
    /// it).
    pub run: Option<&'a dyn Fn(&str) -> bool>,
    /// `--diff`: failed alert tests as a colored JSON diff.
    pub diff: bool,
    /// `--debug`: each test's start, end and data on standard error.
    pub debug: bool,
    /// `--ignore-unknown-fields`: for the rule files.
    pub ignore_unknown_fields: bool,
}

/// What running one test file gave, for the report and the JUnit file.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct FileResult {
    /// Why the file could not be run at all (unreadable, bad YAML, a bad
    /// pattern, a repeated group name): promtool's JUnit `<error>`.
    pub abort: Option<String>,
    /// Whether the file was read far enough for promtool to time-stamp
    /// its JUnit suite.
    pub timestamped: bool,
    /// The test groups run, in order, with their failures.
    pub cases: Vec<CaseResult>,
}

/// One test group's outcome.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct CaseResult {
    /// Its name (`unnamed#<i>` without one).
    pub name: String,
    /// Its failures, in promtool's words.
    pub failures: Vec<String>,
}

impl FileResult {
    /// The errors promtool prints after `FAILED:` (none: success).
    pub fn errors(&self) -> Vec<String> {
        match &self.abort {
            Some(e) => vec![e.clone()],
            None => self
                .cases
                .iter()
                .flat_map(|c| c.failures.iter().cloned())
                .collect(),
        }
    }
}

/// Runs the tests of one file; the errors are what promtool prints after
/// `FAILED:`, one entry per error. A warning for a rule file pattern that
/// matches nothing goes to standard error, as promtool prints it.
pub fn test_file(filename: &str, opts: &Options<'_>) -> Result<(), Vec<String>> {
    let errs = run_file(filename, opts).errors();
    if errs.is_empty() {
        Ok(())
    } else {
        Err(errs)
    }
}

/// Runs the tests of one file (see [`test_file`]), keeping each test
/// group's outcome.
pub fn run_file(filename: &str, opts: &Options<'_>) -> FileResult {
    let mut result = FileResult::default();
    let abort = |mut r: FileResult, e: String| {
        r.abort = Some(e);
        r
    };
    let source = match std::fs::read(filename) {
        Ok(s) => s,
        Err(e) => return abort(result, go_io_error(filename, &e)),
    };
    let text = String::from_utf8_lossy(&source);
    let mut tf: TestFile = match file::parse(&text) {
        Ok(tf) => tf,
        Err(e) => return abort(result, e),
    };
    let rule_files = match resolve_rule_files(&go_dir(filename), &tf.rule_files) {
        Ok(f) => f,
        Err(e) => return abort(result, e),
    };
    if tf.evaluation_interval_ms == 0 {
        tf.evaluation_interval_ms = 60_000;
    }
    result.timestamped = true;
    let mut order: HashMap<&str, usize> = HashMap::new();
    for (i, name) in tf.group_eval_order.iter().enumerate() {
        if order.insert(name, i).is_some() {
            return abort(
                result,
                format!("group name repeated in evaluation order: {name}"),
            );
        }
    }
    for (i, tg) in tf.tests.iter().enumerate() {
        if let Some(run) = opts.run {
            if !run(&tg.name) {
                continue;
            }
        }
        let name = if tg.name.is_empty() {
            format!("unnamed#{i}")
        } else {
            tg.name.clone()
        };
        let interval_ms = if tg.interval_ms == 0 {
            tf.evaluation_interval_ms
        } else {
            tg.interval_ms
        };
        let started = Instant::now();
        if opts.debug {
            eprintln!("DEBUG: Starting test {name}");
        }
        let run = TestRun {
            tg,
            interval_ms,
            eval_interval_ms: tf.evaluation_interval_ms,
            order: &order,
            fuzzy: tf.fuzzy_compare,
            diff: opts.diff,
            debug: opts.debug,
            ignore_unknown_fields: opts.ignore_unknown_fields,
            rule_files: &rule_files,
        };
        let failures = run.run();
        if opts.debug {
            eprintln!(
                "DEBUG: Test {name} finished, took {}",
                go_duration(started.elapsed().as_nanos() as i64)
            );
        }
        result.cases.push(CaseResult { name, failures });
    }
    result
}

/// promtool's JUnit XML (`--junit`) for the files run, in order;
/// `timestamp` is when they ran (`2006-01-02T15:04:05`).
pub fn junit_xml(files: &[(String, FileResult)], timestamp: &str) -> String {
    let mut out = String::from("<testsuites>");
    for (name, r) in files {
        let mut cases = r.cases.clone();
        let errors = usize::from(r.abort.is_some());
        if r.abort.is_some() && cases.is_empty() {
            cases.push(CaseResult {
                name: "unknown".into(),
                failures: Vec::new(),
            });
        }
        let failures: usize = cases.iter().map(|c| c.failures.len()).sum();
        out.push_str(&format!(
            "<testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"0\" timestamp=\"{}\">",
            xml_escape(name),
            cases.len(),
            if r.timestamped { timestamp } else { "" }
        ));
        let last = cases.len().saturating_sub(1);
        for (i, c) in cases.iter().enumerate() {
            out.push_str(&format!("<testcase name=\"{}\">", xml_escape(&c.name)));
            for f in &c.failures {
                out.push_str(&format!("<failure>{}</failure>", xml_escape(f)));
            }
            if let (Some(e), true) = (&r.abort, i == last) {
                out.push_str(&format!("<error>{}</error>", xml_escape(e)));
            }
            out.push_str("</testcase>");
        }
        out.push_str("</testsuite>");
    }
    out.push_str("</testsuites>");
    out
}

/// Go's `xml.EscapeText`.
fn xml_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("&#34;"),
            '\'' => out.push_str("&#39;"),
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\t' => out.push_str("&#x9;"),
            '\n' => out.push_str("&#xA;"),
            '\r' => out.push_str("&#xD;"),
            c if is_xml_char(c) => out.push(c),
            _ => out.push('\u{FFFD}'),
        }
    }
    out
}

/// XML's `Char` production, as Go's encoder checks it.
fn is_xml_char(c: char) -> bool {
    matches!(c, '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..='\u{10FFFF}')
}

/// Go's `filepath.Dir`.
fn go_dir(path: &str) -> String {
    match path.rfind('/') {
        Some(i) => go_clean(&path[..=i]),
        None => ".".into(),
    }
}

/// Go's `filepath.Clean` (Unix).
fn go_clean(path: &str) -> String {
    if path.is_empty() {
        return ".".into();
    }
    let rooted = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for p in path.split('/') {
        match p {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|l| *l != "..") {
                    parts.pop();
                } else if !rooted {
                    parts.push("..");
                }
            }
            p => parts.push(p),
        }
    }
    let joined = parts.join("/");
    match (rooted, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".into(),
        (false, false) => joined,
    }
}

/// promtool's `resolveAndGlobFilepaths`: relative patterns joined to the
/// test file's directory, then expanded.
fn resolve_rule_files(base: &str, patterns: &[String]) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for rf in patterns {
        let pattern = if !rf.is_empty() && !rf.starts_with('/') {
            go_clean(&format!("{base}/{rf}"))
        } else {
            rf.clone()
        };
        let found = crate::glob::glob(&pattern).map_err(|e| e.to_string())?;
        if found.is_empty() {
            eprintln!("  WARNING: no file match pattern {pattern}");
        }
        out.extend(found);
    }
    Ok(out)
}

/// Alerts are dropped: a unit test sends nothing.
struct NoNotifier;

impl AlertNotifier for NoNotifier {
    fn send(&self, _: &str, _: Vec<crate::alerting::Alert>) {}
}

/// A label set as sorted pairs (empty values kept, as `labels.FromMap`
/// keeps them).
type Pairs = Vec<(String, String)>;

fn pairs_of(l: &Labels) -> Pairs {
    l.iter()
        .map(|l| (l.name.to_string(), l.value.to_string()))
        .collect()
}

fn pairs_from_map(m: &BTreeMap<String, String>) -> Pairs {
    m.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

/// Prometheus' `labels.Compare`.
fn compare_pairs(a: &Pairs, b: &Pairs) -> std::cmp::Ordering {
    for (x, y) in a.iter().zip(b) {
        let c = x.0.cmp(&y.0).then_with(|| x.1.cmp(&y.1));
        if c.is_ne() {
            return c;
        }
    }
    a.len().cmp(&b.len())
}

/// Prometheus' `labels.Labels.String()`: `{a="1", b="2"}`, names that are
/// not legacy names quoted.
fn labels_string(p: &Pairs) -> String {
    let mut s = String::from("{");
    for (i, (n, v)) in p.iter().enumerate() {
        if i > 0 {
            s.push_str(", ");
        }
        if is_legacy_name(n) {
            s.push_str(n);
        } else {
            s.push_str(&go_quote(n));
        }
        s.push('=');
        s.push_str(&go_quote(v));
    }
    s.push('}');
    s
}

fn is_legacy_name(n: &str) -> bool {
    let mut chars = n.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// promtool's `indentLines`.
fn indent_lines(lines: &str, indent: &str) -> String {
    lines
        .split('\n')
        .collect::<Vec<_>>()
        .join(&format!("\n{indent}"))
}

/// A firing or expected alert.
#[derive(Clone, PartialEq)]
struct AlertLA {
    labels: Pairs,
    annotations: Pairs,
}

fn alerts_string(la: &[AlertLA]) -> String {
    if la.is_empty() {
        return "[]".into();
    }
    let one = |a: &AlertLA| {
        format!(
            "Labels:{}\nAnnotations:{}",
            labels_string(&a.labels),
            labels_string(&a.annotations)
        )
    };
    let mut s = format!("[\n0:{}", indent_lines(&format!("\n{}", one(&la[0])), "  "));
    for (i, a) in la[1..].iter().enumerate() {
        s.push_str(&format!(
            ",\n{}:{}",
            i + 1,
            indent_lines(&format!("\n{}", one(a)), "  ")
        ));
    }
    s.push_str("\n]");
    s
}

/// The alerts as promtool marshals them for `--diff` (an empty list as
/// one alert without labels or annotations).
fn alerts_json(la: &[AlertLA]) -> jsondiff::Json {
    use jsondiff::Json;
    let map = |p: &Pairs| {
        Json::Obj(
            p.iter()
                .map(|(k, v)| (k.clone(), Json::Str(v.clone())))
                .collect(),
        )
    };
    let empty = [AlertLA {
        labels: Vec::new(),
        annotations: Vec::new(),
    }];
    let la = if la.is_empty() { &empty[..] } else { la };
    Json::Arr(
        la.iter()
            .map(|a| {
                Json::Obj(
                    [
                        ("Labels".to_string(), map(&a.labels)),
                        ("Annotations".to_string(), map(&a.annotations)),
                    ]
                    .into_iter()
                    .collect(),
                )
            })
            .collect(),
    )
}

fn sort_alerts(la: &mut [AlertLA]) {
    la.sort_by(|a, b| {
        compare_pairs(&a.labels, &b.labels)
            .then_with(|| compare_pairs(&a.annotations, &b.annotations))
    });
}

/// A sample of a query's result or of `exp_samples`.
struct ParsedSample {
    labels: Pairs,
    value: f64,
    /// The histogram in test notation ("" for a float).
    histogram: String,
}

impl ParsedSample {
    fn string(&self) -> String {
        if self.histogram.is_empty() {
            format!(
                "{} {}",
                labels_string(&self.labels),
                format_upper_e(self.value)
            )
        } else {
            format!("{} {}", labels_string(&self.labels), self.histogram)
        }
    }
}

fn samples_string(s: &[ParsedSample]) -> String {
    if s.is_empty() {
        return "nil".into();
    }
    s.iter()
        .map(ParsedSample::string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Go's `strconv.FormatFloat(f, 'E', -1, 64)`.
fn format_upper_e(f: f64) -> String {
    let s = ferrite_model::gofloat::format_e(f);
    if f.is_finite() {
        s.replace('e', "E")
    } else {
        s
    }
}

/// Go's `time.Duration.String()` of `ns`.
fn go_duration(ns: i64) -> String {
    if ns == 0 {
        return "0s".into();
    }
    let neg = ns < 0;
    let u = ns.unsigned_abs();
    let sign = if neg { "-" } else { "" };
    let frac = |v: u64, digits: u32| -> String {
        // v in units of 10^-digits, printed with trailing zeros cut.
        let p = 10u64.pow(digits);
        let (int, rest) = (v / p, v % p);
        if rest == 0 {
            int.to_string()
        } else {
            let r = format!("{rest:0width$}", width = digits as usize);
            format!("{int}.{}", r.trim_end_matches('0'))
        }
    };
    if u < 1_000 {
        return format!("{sign}{u}ns");
    }
    if u < 1_000_000 {
        return format!("{sign}{}µs", frac(u, 3));
    }
    if u < 1_000_000_000 {
        return format!("{sign}{}ms", frac(u, 6));
    }
    let secs_ns = u % 60_000_000_000;
    let mins = u / 60_000_000_000;
    let s = format!("{}s", frac(secs_ns, 9));
    if mins == 0 {
        return format!("{sign}{s}");
    }
    let (h, m) = (mins / 60, mins % 60);
    if h == 0 {
        format!("{sign}{m}m{s}")
    } else {
        format!("{sign}{h}h{m}m{s}")
    }
}

/// `model.Duration.String()` of a time in ms.
fn model_duration(ms: i64) -> String {
    ferrite_model::units::format_duration_ms(ms)
}

/// One test group being run.
struct TestRun<'a> {
    tg: &'a TestGroup,
    interval_ms: i64,
    eval_interval_ms: i64,
    order: &'a HashMap<&'a str, usize>,
    fuzzy: bool,
    diff: bool,
    debug: bool,
    ignore_unknown_fields: bool,
    rule_files: &'a [String],
}

impl TestRun<'_> {
    fn run(&self) -> Vec<String> {
        let tg = self.tg;
        let mint_ns = tg.start_ns.unwrap_or(0);
        let series = match self.input_series(mint_ns) {
            Ok(s) => s,
            Err(e) => return vec![e],
        };
        let db = UnitTestStorage::new(series);
        let engine = Engine::new(EngineOptions {
            max_samples: 10_000,
            timeout: std::time::Duration::from_secs(100),
            default_subquery_step_ms: self.eval_interval_ms,
            ..EngineOptions::default()
        });
        let groups = match self.load_groups() {
            Ok(g) => g,
            Err(e) => return e,
        };
        let external_labels = Labels::new(
            tg.external_labels
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str())),
        );
        let ctx = EvalContext {
            storage: &db,
            engine: &engine,
            default_query_offset_ms: 0,
            alerts: AlertContext {
                external_labels: &external_labels,
                external_url: &tg.external_url,
            },
            notifier: &NoNotifier,
            resend_delay_ns: 60_000_000_000,
            restore: RestoreSettings {
                outage_tolerance_ns: 3_600_000_000_000,
                grace_period_ns: 600_000_000_000,
            },
        };
        let max_eval_ms = tg
            .alert_rule_test
            .iter()
            .map(|a| a.eval_time_ms)
            .chain(tg.promql_expr_test.iter().map(|p| p.eval_time_ms))
            .max()
            .unwrap_or(0)
            .max(0);
        let maxt_ns = mint_ns.saturating_add(max_eval_ms.saturating_mul(NS_PER_MS));

        let mut alert_names: BTreeMap<i64, BTreeSet<&str>> = BTreeMap::new();
        let mut alert_tests: BTreeMap<i64, Vec<&file::AlertTest>> = BTreeMap::new();
        for a in &tg.alert_rule_test {
            if a.alertname.is_empty() {
                let in_group = if tg.name.is_empty() {
                    String::new()
                } else {
                    format!(" (in TestGroup {})", tg.name)
                };
                return vec![format!(
                    "an item under alert_rule_test misses required attribute alertname at eval_time {}{in_group}",
                    model_duration(a.eval_time_ms)
                )];
            }
            alert_names
                .entry(a.eval_time_ms)
                .or_default()
                .insert(&a.alertname);
            alert_tests.entry(a.eval_time_ms).or_default().push(a);
        }
        let alert_times: Vec<i64> = alert_names.keys().copied().collect();
        let mut curr = 0;
        let step_ns = self.eval_interval_ms.saturating_mul(NS_PER_MS).max(1);

        let mut errs = Vec::new();
        let mut ts = mint_ns;
        while ts <= maxt_ns {
            db.load_till(ts.div_euclid(NS_PER_MS));
            let mut eval_errs = Vec::new();
            for g in &groups {
                g.eval(ts, &ctx);
                for r in &g.rules {
                    if let Some(e) = r.status().get().last_error {
                        eval_errs.push(format!(
                            "    rule: {}, time: {}, err: {e}",
                            r.name(),
                            go_duration(ts)
                        ));
                    }
                }
            }
            if !eval_errs.is_empty() {
                errs.extend(eval_errs);
                return errs;
            }
            let since = ts - mint_ns;
            while curr < alert_times.len()
                && since <= alert_times[curr].saturating_mul(NS_PER_MS)
                && alert_times[curr].saturating_mul(NS_PER_MS) < since + step_ns
            {
                let t = alert_times[curr];
                self.check_alerts(t, &alert_names[&t], &alert_tests[&t], &groups, &mut errs);
                curr += 1;
            }
            match ts.checked_add(step_ns) {
                Some(next) => ts = next,
                None => break,
            }
        }

        for test in &tg.promql_expr_test {
            if let Err(e) = self.check_expr(test, mint_ns, &engine, &db) {
                errs.push(e);
            }
        }
        if self.debug {
            debug_dump(max_eval_ms, mint_ns, &engine, &db);
        }
        errs
    }

    /// The input series with their samples' times (ms), or promtool's
    /// error for a line it cannot read.
    fn input_series(&self, mint_ns: i64) -> Result<storage::Inputs, String> {
        let mut out: storage::Inputs = Vec::new();
        for (i, s) in self.tg.input_series.iter().enumerate() {
            let line = format!("{} {}", s.series, s.values);
            let line = line.trim();
            // promqltest's loader: a blank or comment line ends `load`.
            if line.is_empty() || line.starts_with('#') {
                break;
            }
            let lineno = i + 2;
            let (labels, rest) = match parse_series_desc(line) {
                Ok((labels, rest)) if !labels.is_empty() => (labels, rest),
                Ok(_) | Err(_) => return Err(series_error(line, lineno)),
            };
            let at = line.len() - rest.len();
            if let Some((col, e)) = check_values(rest) {
                return Err(format!("{lineno}:{}: parse error: {e}", at + col));
            }
            let values =
                parse_values(rest).map_err(|e| format!("{lineno}:{}: parse error: {e}", at + 1))?;
            let mut samples = Vec::with_capacity(values.len());
            for (k, v) in values.into_iter().enumerate() {
                let t_ns = mint_ns.saturating_add(
                    (k as i64).saturating_mul(self.interval_ms.saturating_mul(NS_PER_MS)),
                );
                let t = t_ns.div_euclid(NS_PER_MS);
                match v {
                    SeqValue::Omitted => {}
                    SeqValue::Float(f) => samples.push((t, Value::Float(f))),
                    SeqValue::Histogram(h, _) => samples.push((t, Value::Histogram(h))),
                }
            }
            match out.iter_mut().find(|(l, _)| *l == labels) {
                Some(slot) => slot.1 = samples,
                None => out.push((labels, samples)),
            }
        }
        Ok(out)
    }

    /// The rule files' groups (as `Manager.LoadGroups` builds them, with
    /// the test's interval), in evaluation order.
    fn load_groups(&self) -> Result<Vec<Group>, Vec<String>> {
        let opts = ParseOptions {
            ignore_unknown_fields: self.ignore_unknown_fields,
            ..ParseOptions::default()
        };
        let mut by_key: BTreeMap<String, Group> = BTreeMap::new();
        for f in self.rule_files {
            let rgs = parse_file_with(std::path::Path::new(f), opts)?;
            for g in rgs.groups {
                let interval_ms = if g.interval_ms != 0 {
                    g.interval_ms
                } else {
                    self.interval_ms
                };
                let mut rules = Vec::with_capacity(g.rules.len());
                for r in &g.rules {
                    let expr = parse_expr(&r.expr).map_err(|e| vec![format!("{f}: {e}")])?;
                    let mut labels = g.labels.clone();
                    labels.extend(r.labels.iter().map(|(k, v)| (k.clone(), v.clone())));
                    rules.push(if r.alert.is_empty() {
                        Rule::Recording(RecordingRule::new(r.record.clone(), expr, labels))
                    } else {
                        Rule::Alerting(AlertingRule::new(
                            r.alert.clone(),
                            expr,
                            r.for_ms.saturating_mul(NS_PER_MS),
                            r.keep_firing_for_ms.saturating_mul(NS_PER_MS),
                            labels,
                            r.annotations.clone(),
                            true,
                        ))
                    });
                }
                let key = crate::group::group_key(f, &g.name);
                let group = Group::new(
                    g.name,
                    f.clone(),
                    interval_ms,
                    g.limit,
                    g.query_offset_ms,
                    rules,
                    Arc::default(),
                );
                by_key.insert(key, group);
            }
        }
        let mut groups: Vec<Group> = by_key.into_values().collect();
        groups.sort_by_key(|g| self.order.get(g.name.as_str()).copied().unwrap_or(0));
        Ok(groups)
    }

    fn check_alerts(
        &self,
        t: i64,
        names: &BTreeSet<&str>,
        tests: &[&file::AlertTest],
        groups: &[Group],
        errs: &mut Vec<String>,
    ) {
        let mut got: HashMap<&str, Vec<AlertLA>> = HashMap::new();
        for g in groups {
            for r in &g.rules {
                let Rule::Alerting(ar) = r else { continue };
                if !names.contains(ar.name.as_str()) {
                    continue;
                }
                let firing = ar
                    .active_alerts()
                    .into_iter()
                    .filter(|a| a.state == AlertState::Firing)
                    .map(|a| AlertLA {
                        labels: pairs_of(&a.labels),
                        annotations: pairs_of(&a.annotations),
                    });
                got.entry(ar.name.as_str()).or_default().extend(firing);
            }
        }
        for test in tests {
            let mut got_alerts = got
                .get(test.alertname.as_str())
                .cloned()
                .unwrap_or_default();
            let mut exp_alerts: Vec<AlertLA> = test
                .exp_alerts
                .iter()
                .map(|a| {
                    let mut labels = a.labels.clone();
                    labels.insert("alertname".into(), test.alertname.clone());
                    AlertLA {
                        labels: pairs_from_map(&labels),
                        annotations: pairs_from_map(&a.annotations),
                    }
                })
                .collect();
            sort_alerts(&mut got_alerts);
            sort_alerts(&mut exp_alerts);
            if exp_alerts != got_alerts {
                let name = if self.tg.name.is_empty() {
                    String::new()
                } else {
                    format!("    name: {},\n", self.tg.name)
                };
                let indent = "            ";
                if self.diff {
                    let (res, diff) =
                        jsondiff::compare(&alerts_json(&exp_alerts), &alerts_json(&got_alerts));
                    if res != jsondiff::Difference::FullMatch {
                        errs.push(format!(
                            "{name}    alertname: {}, time: {}, \n        diff: {}",
                            test.alertname,
                            model_duration(t),
                            indent_lines(&diff, indent)
                        ));
                    }
                    continue;
                }
                errs.push(format!(
                    "{name}    alertname: {}, time: {}, \n        exp:{}, \n        got:{}",
                    test.alertname,
                    model_duration(t),
                    indent_lines(&alerts_string(&exp_alerts), indent),
                    indent_lines(&alerts_string(&got_alerts), indent)
                ));
            }
        }
    }

    fn check_expr(
        &self,
        test: &file::ExprTest,
        mint_ns: i64,
        engine: &Engine,
        db: &UnitTestStorage,
    ) -> Result<(), String> {
        let head = format!(
            "    expr: {}, time: {}",
            go_quote(&test.expr),
            model_duration(test.eval_time_ms)
        );
        let t = (mint_ns + test.eval_time_ms.saturating_mul(NS_PER_MS)).div_euclid(NS_PER_MS);
        let got = query(engine, db, &test.expr, t).map_err(|e| format!("{head}, err: {e}"))?;
        let mut got: Vec<ParsedSample> = got
            .into_iter()
            .map(|s| ParsedSample {
                labels: pairs_of(&s.labels),
                value: s.f,
                histogram: s
                    .h
                    .as_ref()
                    .map(|h| h.test_expression())
                    .unwrap_or_default(),
            })
            .collect();
        let mut exp = Vec::with_capacity(test.exp_samples.len());
        for s in &test.exp_samples {
            let parsed = parse_metric(&s.labels).and_then(|labels| {
                let histogram = if s.histogram.is_empty() {
                    String::new()
                } else {
                    parse_one_histogram(&s.histogram)?.test_expression()
                };
                Ok((labels, histogram))
            });
            let (labels, histogram) =
                parsed.map_err(|e| format!("{head}, err: labels {}: {e}", go_quote(&s.labels)))?;
            exp.push(ParsedSample {
                labels: pairs_of(&labels),
                value: s.value,
                histogram,
            });
        }
        exp.sort_by(|a, b| compare_pairs(&a.labels, &b.labels));
        got.sort_by(|a, b| compare_pairs(&a.labels, &b.labels));
        let fuzzy = self.fuzzy;
        let float_eq = |x: f64, y: f64| {
            x == y
                || (fuzzy
                    && (next_after(x, f64::NEG_INFINITY) == y || next_after(x, f64::INFINITY) == y))
        };
        let equal = exp.len() == got.len()
            && exp.iter().zip(&got).all(|(e, g)| {
                e.labels == g.labels && float_eq(e.value, g.value) && e.histogram == g.histogram
            });
        if equal {
            Ok(())
        } else {
            Err(format!(
                "{head},\n        exp: {}\n        got: {}",
                samples_string(&exp),
                samples_string(&got)
            ))
        }
    }
}

/// promtool's `--debug` dump: every series over the test's time, as
/// Prometheus prints a matrix.
fn debug_dump(max_eval_ms: i64, mint_ns: i64, engine: &Engine, db: &UnitTestStorage) {
    // Rounded up to the next whole second, as promtool does.
    let ms = (max_eval_ms + 1000) / 1000 * 1000;
    let dur = go_duration(ms.saturating_mul(NS_PER_MS));
    let expr = format!("{{__name__=~\".+\"}}[{dur}]");
    let t = (mint_ns + ms.saturating_mul(NS_PER_MS)).div_euclid(NS_PER_MS);
    let parsed = match ferrite_promql::parse(&expr) {
        Ok(p) => p,
        Err(e) => {
            eprintln!(
                "DEBUG: Failed querying, expr: {}, err: {e}",
                go_quote(&expr)
            );
            return;
        }
    };
    match engine.instant_query_parsed(db, &expr, &parsed, t) {
        Err(e) => eprintln!(
            "DEBUG: Failed query exec, expr: {}, err: {e}",
            go_quote(&expr)
        ),
        Ok(res) => match res.value {
            QueryValue::Matrix(m) => {
                eprintln!("DEBUG: Dump of all data (input_series and rules) at {dur}:");
                let series: Vec<String> = m
                    .iter()
                    .map(|s| {
                        let mut vals: Vec<String> = s
                            .points
                            .iter()
                            .map(|(t, v)| {
                                format!("{} @[{t}]", ferrite_model::gofloat::format_f(*v))
                            })
                            .collect();
                        vals.extend(
                            s.histograms
                                .iter()
                                .map(|(t, h)| format!("{} @[{t}]", h.go_string())),
                        );
                        format!(
                            "{} =>\n{}",
                            labels_string(&pairs_of(&s.labels)),
                            vals.join("\n")
                        )
                    })
                    .collect();
                eprintln!("{}", series.join("\n"));
            }
            other => eprintln!("DEBUG: Got unexpected type {}", other.type_name()),
        },
    }
}

/// Go's `math.Nextafter`.
fn next_after(x: f64, to: f64) -> f64 {
    if x.is_nan() || to.is_nan() {
        return f64::NAN;
    }
    if x == to {
        return x;
    }
    if x == 0.0 {
        return f64::from_bits(1).copysign(to);
    }
    let bits = x.to_bits();
    if (to > x) == (x > 0.0) {
        f64::from_bits(bits + 1)
    } else {
        f64::from_bits(bits - 1)
    }
}

/// An instant query's result as promtool's `query` takes it: a vector,
/// or a scalar as one sample without labels.
fn query(
    engine: &Engine,
    db: &UnitTestStorage,
    expr: &str,
    t: i64,
) -> Result<Vec<ferrite_promql::Sample>, String> {
    let parsed = parse_expr(expr)?;
    let res = engine
        .instant_query_parsed(db, expr, &parsed, t)
        .map_err(|e| e.to_string())?;
    match res.value {
        QueryValue::Vector(v) => Ok(v),
        QueryValue::Scalar { t, v } => Ok(vec![ferrite_promql::Sample {
            labels: Labels::empty(),
            t,
            f: v,
            h: None,
        }]),
        _ => Err("rule result is not a vector or scalar".into()),
    }
}

/// The parser's error for a series line that is not a metric and values,
/// placed on its line of promtool's `load` command.
fn series_error(line: &str, lineno: usize) -> String {
    match ferrite_promql::parser::parse_expr(line) {
        Err(e) if e.line == 1 => format!("{lineno}:{}: parse error: {}", e.column, e.message),
        _ => format!(
            "{lineno}:1: parse error: invalid series description {}",
            go_quote(line)
        ),
    }
}

/// The mistakes in a series' values that Prometheus' series parser
/// reports in its own words: a word other than a number or `stale`, a
/// character it does not know, a repetition without its count. The
/// column is 1-based in `values`.
fn check_values(values: &str) -> Option<(usize, String)> {
    let b = values.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match c {
            b'{' if b.get(i + 1) == Some(&b'{') => match values[i..].find("}}") {
                Some(end) => i += end + 2,
                None => return None,
            },
            b'x' => {
                if i > 0 && matches!(b[i - 1], b'+' | b'-') {
                    return Some((i + 1, "unexpected \"x\" in series values".into()));
                }
                if i + 1 == b.len() {
                    return Some((i + 2, "unexpected end of input in series values".into()));
                }
                i += 1;
            }
            c if c.is_ascii_whitespace() || matches!(c, b'+' | b'-' | b'_') => i += 1,
            c if c.is_ascii_digit()
                || (c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit)) =>
            {
                // The lexer's number: digits, a fraction, an exponent;
                // then nothing alphanumeric but the `x` of a repetition.
                let start = i;
                let digits = |i: &mut usize| {
                    while *i < b.len() && b[*i].is_ascii_digit() {
                        *i += 1;
                    }
                };
                digits(&mut i);
                if b.get(i) == Some(&b'.') {
                    i += 1;
                    digits(&mut i);
                }
                if matches!(b.get(i), Some(b'e' | b'E')) {
                    i += 1;
                    if matches!(b.get(i), Some(b'+' | b'-')) {
                        i += 1;
                    }
                    digits(&mut i);
                }
                if b.get(i)
                    .is_some_and(|&c| c != b'x' && (c.is_ascii_alphanumeric() || c == b'_'))
                {
                    return Some((
                        start + 1,
                        format!("bad number syntax: {}", go_quote(&values[start..i])),
                    ));
                }
            }
            c if c.is_ascii_alphabetic() => {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b':')
                {
                    i += 1;
                }
                let word = &values[start..i];
                let number = word.eq_ignore_ascii_case("inf") || word.eq_ignore_ascii_case("nan");
                if word != "stale" && !number {
                    return Some((
                        start + 1,
                        format!(
                            "unexpected identifier {} in series values, expected number or \"stale\"",
                            go_quote(word)
                        ),
                    ));
                }
            }
            _ => {
                let ch = values[i..].chars().next().unwrap_or_default();
                return Some((
                    i + 1,
                    format!(
                        "unexpected character in series sequence: {}",
                        go_quote_rune(ch)
                    ),
                ));
            }
        }
    }
    None
}

/// Go's `%q` of a rune: `'a'`, `'\''`.
fn go_quote_rune(c: char) -> String {
    let quoted = go_quote(&c.to_string());
    let inner = &quoted[1..quoted.len() - 1];
    let inner = match inner {
        "\\\"" => "\"".to_string(),
        "'" => "\\'".to_string(),
        other => other.to_string(),
    };
    format!("'{inner}'")
}

/// `parser.ParseMetric`: a metric name and/or labels, nothing else.
fn parse_metric(s: &str) -> Result<Labels, String> {
    if s.trim().is_empty() {
        return Ok(Labels::empty());
    }
    match parse_series_desc(s) {
        Ok((labels, rest)) if rest.trim().is_empty() => Ok(labels),
        _ => Err(match ferrite_promql::parser::parse_expr(s) {
            Err(e) => e.to_string(),
            Ok(_) => format!("1:1: parse error: could not parse metric {}", go_quote(s)),
        }),
    }
}

/// A histogram of `exp_samples` (`{{...}}`).
fn parse_one_histogram(s: &str) -> Result<FloatHistogram, String> {
    let values = parse_values(s).map_err(|e| format!("1:4: parse error: {e}"))?;
    match values.as_slice() {
        [SeqValue::Histogram(h, _)] => Ok((**h).clone()),
        [other] => Err(format!("expected histogram, got {other:?}")),
        v => Err(format!("expected 1 value, got {}", v.len())),
    }
}

#[cfg(test)]
mod tests;
