//! A runner for Prometheus' PromQL test files (`promql/promqltest/testdata`).
//!
//! The format: `load <step>` (series lines with value expansions such as
//! `0+10x10`, `_`, `stale`), `clear`, and `eval instant at <t> <expr>` /
//! `eval range from <t> to <t> step <d> <expr>` with variants
//! (`eval_fail`, `eval_warn`, `eval_info`, `eval_ordered`), `expect ...`
//! lines and expected results. Results compare as Prometheus' runner does:
//! relative tolerance 1e-6, NaN equal to NaN, order only when asked for;
//! an instant query is also run as a range query around its time and the
//! middle step compared.
//!
//! Native histograms are written `{{schema:0 count:3 buckets:[1 2]}}`;
//! `load_with_nhcb` also stores classic histograms as NHCB, and loaded
//! histograms get the counter-reset hints Prometheus' TSDB reads back.
//! Cases that need what Prometheus gates behind experimental flags (which its test engine
//! turns on) are reported as skipped with a reason, not as failures.
//! Not done: the extra `@`-modifier re-runs Prometheus adds to each instant
//! case.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use regex::Regex;

use crate::engine::{Engine, EngineOptions};
use crate::storage::{Labels, MemStorage, STALE_NAN};
use crate::value::Value;
use ferrite_model::histogram_ops::custom_bounds_match;
use ferrite_model::{CounterResetHint, FloatHistogram, Span};

/// The outcome of one file.
#[derive(Clone, Debug, Default)]
pub struct FileReport {
    /// The file name (no directory), as used in `file:line` ids.
    pub file: String,
    pub passed: Vec<usize>,
    pub failed: Vec<Failure>,
    /// (line, reason)
    pub skipped: Vec<(usize, String)>,
}

/// A failing case.
#[derive(Clone, Debug)]
pub struct Failure {
    pub line: usize,
    pub expr: String,
    pub reason: String,
}

/// The outcome of a set of files.
#[derive(Clone, Debug, Default)]
pub struct Report {
    pub files: Vec<FileReport>,
}

impl Report {
    /// `file:line` of every passing case, sorted.
    pub fn passing_ids(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .files
            .iter()
            .flat_map(|f| f.passed.iter().map(move |l| format!("{}:{l}", f.file)))
            .collect();
        v.sort();
        v
    }

    pub fn totals(&self) -> (usize, usize, usize) {
        self.files.iter().fold((0, 0, 0), |(p, f, s), r| {
            (p + r.passed.len(), f + r.failed.len(), s + r.skipped.len())
        })
    }

    /// A human-readable report: per-file counts, skip reasons, failures.
    pub fn summary(&self, list_failures: bool) -> String {
        let mut out = String::new();
        for f in &self.files {
            let mut reasons: HashMap<&str, usize> = HashMap::new();
            for (_, r) in &f.skipped {
                *reasons.entry(r.as_str()).or_default() += 1;
            }
            let mut reasons: Vec<_> = reasons.into_iter().collect();
            reasons.sort();
            let _ = write!(
                out,
                "{}: passed {} failed {} skipped {}",
                f.file,
                f.passed.len(),
                f.failed.len(),
                f.skipped.len()
            );
            if !reasons.is_empty() {
                let rs: Vec<String> = reasons.iter().map(|(r, n)| format!("{r}: {n}")).collect();
                let _ = write!(out, " ({})", rs.join("; "));
            }
            out.push('\n');
        }
        let (p, fl, s) = self.totals();
        let _ = writeln!(out, "total: passed {p} failed {fl} skipped {s}");
        if list_failures {
            for f in &self.files {
                for x in &f.failed {
                    let _ = writeln!(out, "FAIL {}:{} {}: {}", f.file, x.line, x.expr, x.reason);
                }
            }
        }
        out
    }
}

/// Runs test files with the engine Prometheus' runner uses (5m lookback,
/// 1m default subquery step, delayed name removal).
pub fn run_files(paths: &[PathBuf]) -> Report {
    let engine = Engine::new(EngineOptions {
        delayed_name_removal: true,
        ..EngineOptions::default()
    });
    let mut report = Report::default();
    for p in paths {
        let file = p
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        match std::fs::read_to_string(p) {
            Ok(content) => report.files.push(run_file(&file, &content, &engine)),
            Err(e) => report.files.push(FileReport {
                file,
                failed: vec![Failure {
                    line: 0,
                    expr: String::new(),
                    reason: format!("reading {}: {e}", p.display()),
                }],
                ..Default::default()
            }),
        }
    }
    report
}

/// The `.test` files of a directory, sorted.
pub fn test_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "test"))
        .collect();
    v.sort();
    Ok(v)
}

/// One value of a series description.
#[derive(Clone, Debug, PartialEq)]
pub enum SeqValue {
    Omitted,
    Float(f64),
    /// A native histogram (`{{...}}`), and whether its counter reset hint
    /// was given (results are compared on it only then).
    Histogram(Box<FloatHistogram>, bool),
}

/// Parses a histogram description (`{{schema:0 count:3 buckets:[1 2]}}`)
/// at the start of `s`: the histogram, whether it gave its counter reset
/// hint, and the rest of `s`.
pub fn parse_histogram(s: &str) -> Result<(FloatHistogram, bool, &str), String> {
    let body = s.strip_prefix("{{").ok_or("histogram must start with {{")?;
    let end = body.find("}}").ok_or("unterminated histogram")?;
    let (inner, rest) = (&body[..end], &body[end + 2..]);
    let mut h = FloatHistogram::default();
    let mut hint_set = false;
    let (mut pos, mut neg) = (None::<Vec<f64>>, None::<Vec<f64>>);
    let (mut pos_off, mut neg_off) = (0i32, 0i32);
    let mut it = inner.trim();
    let num = |v: &str| parse_num(v).ok_or_else(|| format!("invalid number {v:?} in histogram"));
    let list = |v: &str| -> Result<Vec<f64>, String> { v.split_whitespace().map(num).collect() };
    while !it.is_empty() {
        let (key, after) = it
            .split_once(':')
            .ok_or_else(|| format!("invalid histogram description {inner:?}"))?;
        let key = key.trim();
        let after = after.trim_start();
        let (val, next) = if let Some(a) = after.strip_prefix('[') {
            let e = a.find(']').ok_or("unterminated bucket list")?;
            (&a[..e], &a[e + 1..])
        } else {
            let e = after.find(char::is_whitespace).unwrap_or(after.len());
            (&after[..e], &after[e..])
        };
        it = next.trim_start();
        let int = |v: &str| v.parse::<i32>().map_err(|_| format!("invalid {key} {v:?}"));
        match key {
            "schema" => h.schema = int(val)?,
            "sum" => h.sum = num(val)?,
            "count" => h.count = num(val)?,
            "z_bucket" => h.zero_count = num(val)?,
            "z_bucket_w" => h.zero_threshold = num(val)?,
            "custom_values" => h.custom_values = list(val)?,
            "buckets" => pos = Some(list(val)?),
            "n_buckets" => neg = Some(list(val)?),
            "offset" => pos_off = int(val)?,
            "n_offset" => neg_off = int(val)?,
            "counter_reset_hint" => {
                hint_set = true;
                h.counter_reset_hint = match val {
                    "unknown" => CounterResetHint::Unknown,
                    "reset" => CounterResetHint::CounterReset,
                    "not_reset" => CounterResetHint::NotCounterReset,
                    "gauge" => CounterResetHint::Gauge,
                    other => return Err(format!("invalid counter_reset_hint {other:?}")),
                };
            }
            other => return Err(format!("unknown histogram key {other:?}")),
        }
    }
    for (b, off, positive) in [(pos, pos_off, true), (neg, neg_off, false)] {
        let Some(b) = b else { continue };
        let spans = if b.is_empty() {
            Vec::new()
        } else {
            vec![Span {
                offset: off,
                length: b.len() as u32,
            }]
        };
        if positive {
            h.positive_spans = spans;
            h.positive_buckets = b;
        } else {
            h.negative_spans = spans;
            h.negative_buckets = b;
        }
    }
    Ok((h, hint_set, rest))
}

/// Parses a PromQL duration (`1h30m`, `5m`, `100ms`, `0`) into ms.
pub fn parse_duration(s: &str) -> Option<i64> {
    let s = s.trim();
    if s == "0" {
        return Some(0);
    }
    if let Ok(n) = s.parse::<f64>() {
        return Some((n * 1000.0).round() as i64);
    }
    let (neg, s) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s),
    };
    let b = s.as_bytes();
    let mut i = 0;
    let mut total: i64 = 0;
    if b.is_empty() {
        return None;
    }
    while i < b.len() {
        let st = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if st == i {
            return None;
        }
        let n: i64 = s[st..i].parse().ok()?;
        let us = i;
        while i < b.len() && b[i].is_ascii_alphabetic() {
            i += 1;
        }
        let mult = match &s[us..i] {
            "ms" => 1,
            "s" => 1000,
            "m" => 60_000,
            "h" => 3_600_000,
            "d" => 86_400_000,
            "w" => 604_800_000,
            "y" => 31_536_000_000,
            _ => return None,
        };
        total = total.checked_add(n.checked_mul(mult)?)?;
    }
    Some(if neg { -total } else { total })
}

fn unquote(s: &str) -> Option<(String, &str)> {
    let mut chars = s.char_indices();
    let (_, q) = chars.next()?;
    if q != '"' && q != '\'' && q != '`' {
        return None;
    }
    let mut bytes: Vec<u8> = Vec::new();
    let raw = q == '`';
    let mut it = s[1..].char_indices().peekable();
    while let Some((i, c)) = it.next() {
        if c == q {
            return Some((
                String::from_utf8_lossy(&bytes).into_owned(),
                &s[1 + i + 1..],
            ));
        }
        if c == '\\' && !raw {
            let (_, e) = it.next()?;
            match e {
                'n' => bytes.push(b'\n'),
                't' => bytes.push(b'\t'),
                'r' => bytes.push(b'\r'),
                '\\' => bytes.push(b'\\'),
                '"' => bytes.push(b'"'),
                '\'' => bytes.push(b'\''),
                'x' => {
                    let h: String = [it.next()?.1, it.next()?.1].iter().collect();
                    bytes.push(u8::from_str_radix(&h, 16).ok()?);
                }
                'u' => {
                    let h: String = (0..4).filter_map(|_| it.next().map(|x| x.1)).collect();
                    let ch = char::from_u32(u32::from_str_radix(&h, 16).ok()?)?;
                    bytes.extend_from_slice(ch.to_string().as_bytes());
                }
                other => {
                    bytes.push(b'\\');
                    bytes.extend_from_slice(other.to_string().as_bytes());
                }
            }
        } else {
            bytes.extend_from_slice(c.to_string().as_bytes());
        }
    }
    None
}

/// Characters of unquoted names in series descriptions: Prometheus' runner
/// reads its test data with unquoted UTF-8 names enabled (letters of any
/// script, dots).
fn is_name_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == ':' || c == '.'
}

/// Parses `metric{l="v", ...} <values>` into labels and the rest.
pub fn parse_series_desc(line: &str) -> Result<(Labels, &str), String> {
    let s = line.trim();
    let mut pairs: Vec<(String, String)> = Vec::new();
    let name_end = s.find(|c: char| !is_name_char(c)).unwrap_or(s.len());
    if name_end > 0 {
        pairs.push(("__name__".into(), s[..name_end].to_string()));
    }
    let mut rest = &s[name_end..];
    if let Some(r) = rest.strip_prefix('{') {
        rest = r;
        loop {
            rest = rest.trim_start_matches(|c: char| c.is_whitespace() || c == ',');
            if let Some(r) = rest.strip_prefix('}') {
                rest = r;
                break;
            }
            let (name, r) = if let Some((n, r)) = unquote(rest) {
                (n, r)
            } else {
                let e = rest.find(|c: char| !is_name_char(c)).unwrap_or(rest.len());
                if e == 0 {
                    return Err(format!("invalid series description {line:?}"));
                }
                (rest[..e].to_string(), &rest[e..])
            };
            let r = r.trim_start();
            if let Some(r) = r.strip_prefix('=') {
                let (v, r) = unquote(r.trim_start())
                    .ok_or_else(|| format!("invalid label value in {line:?}"))?;
                pairs.push((name, v));
                rest = r;
            } else {
                // A quoted metric name: {"my.metric", ...}.
                pairs.push(("__name__".into(), name));
                rest = r;
            }
        }
    }
    Ok((Labels::new(pairs), rest))
}

/// Parses the value sequence of a series description (`1+2x3 _ stale`).
pub fn parse_values(s: &str) -> Result<Vec<SeqValue>, String> {
    let mut out = Vec::new();
    let mut rest = s.trim();
    let num = r"[+-]?(?:[Ii]nf|NaN|(?:[0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?))";
    let re = Regex::new(&format!(r"^({num})(?:([+-])({num}))?(?:x([0-9]+))?$"))
        .map_err(|e| e.to_string())?;
    while !rest.is_empty() {
        if rest.starts_with("{{") {
            let (base, set, after) = parse_histogram(rest)?;
            let times = |a: &str| -> Result<(usize, usize), String> {
                let e = a.find(|c: char| !c.is_ascii_digit()).unwrap_or(a.len());
                let n = a[..e]
                    .parse::<usize>()
                    .map_err(|_| format!("invalid repetition in {a:?}"))?;
                Ok((n, e))
            };
            let after = if let Some(a) = after.strip_prefix('x') {
                let (n, e) = times(a)?;
                for _ in 0..=n {
                    out.push(SeqValue::Histogram(Box::new(base.clone()), set));
                }
                &a[e..]
            } else if after.starts_with("+{{") || after.starts_with("-{{") {
                let sub = after.starts_with('-');
                let (inc, inc_set, a) = parse_histogram(&after[1..])?;
                let a = a.strip_prefix('x').ok_or("histogram expansion needs xN")?;
                let (n, e) = times(a)?;
                if inc.schema < base.schema && !base.uses_custom_buckets() {
                    return Err(format!(
                        "error combining histograms: cannot merge from schema {} to {}",
                        inc.schema, base.schema
                    ));
                }
                let mut cur = base;
                out.push(SeqValue::Histogram(Box::new(cur.clone()), inc_set));
                for _ in 0..n {
                    let r = if sub { cur.sub(&inc) } else { cur.add(&inc) };
                    r.map_err(|e| e.to_string())?;
                    out.push(SeqValue::Histogram(Box::new(cur.clone()), inc_set));
                }
                &a[e..]
            } else {
                out.push(SeqValue::Histogram(Box::new(base), set));
                after
            };
            rest = after.trim_start();
            continue;
        }
        let e = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let tok = &rest[..e];
        rest = rest[e..].trim_start();
        if tok == "_" {
            out.push(SeqValue::Omitted);
        } else if let Some(n) = tok.strip_prefix("_x") {
            let n: usize = n.parse().map_err(|_| format!("invalid value {tok:?}"))?;
            out.extend(std::iter::repeat_n(SeqValue::Omitted, n));
        } else if tok == "stale" {
            out.push(SeqValue::Float(STALE_NAN));
        } else if let Some(n) = tok.strip_prefix("stalex") {
            let n: usize = n.parse().map_err(|_| format!("invalid value {tok:?}"))?;
            out.extend(std::iter::repeat_n(SeqValue::Float(STALE_NAN), n + 1));
        } else {
            let c = re
                .captures(tok)
                .ok_or_else(|| format!("invalid value {tok:?}"))?;
            let start = parse_num(&c[1]).ok_or_else(|| format!("invalid value {tok:?}"))?;
            let mut inc = match (c.get(2), c.get(3)) {
                (Some(_), Some(v)) => {
                    parse_num(v.as_str()).ok_or_else(|| format!("invalid value {tok:?}"))?
                }
                _ => 0.0,
            };
            if c.get(2).is_some_and(|s| s.as_str() == "-") {
                inc = -inc;
            }
            match c.get(4) {
                None => out.push(SeqValue::Float(start)),
                Some(n) => {
                    let n: usize = n
                        .as_str()
                        .parse()
                        .map_err(|_| format!("invalid value {tok:?}"))?;
                    let mut cur = start;
                    for _ in 0..=n {
                        out.push(SeqValue::Float(cur));
                        cur += inc;
                    }
                }
            }
        }
    }
    Ok(out)
}

/// A number in a test file: a hexadecimal integer (`0x1f`), or what Go's
/// `strconv.ParseFloat` reads.
fn parse_num(s: &str) -> Option<f64> {
    let t = s.trim();
    if let Some(hex) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        return u64::from_str_radix(hex, 16).ok().map(|v| v as f64);
    }
    ferrite_model::gofloat::parse_go_float(t.as_bytes()).ok()
}

/// Prometheus' `almost.Equal`: relative tolerance, NaN equals NaN, a stale
/// marker only equals a stale marker.
pub fn almost_equal(a: f64, b: f64, eps: f64) -> bool {
    let (sa, sb) = (crate::is_stale_nan(a), crate::is_stale_nan(b));
    if sa || sb {
        return sa && sb;
    }
    if a.is_nan() && b.is_nan() {
        return true;
    }
    if a == b {
        return true;
    }
    let min_normal = f64::MIN_POSITIVE;
    let abs_sum = a.abs() + b.abs();
    let diff = (a - b).abs();
    if a == 0.0 || b == 0.0 || abs_sum < min_normal {
        return diff < eps * min_normal;
    }
    diff / abs_sum.min(f64::MAX) < eps
}

const EPSILON: f64 = 1e-6;

#[derive(Default, Debug)]
struct EvalCase {
    line: usize,
    expr: String,
    instant: bool,
    start: i64,
    end: i64,
    step: i64,
    fail: bool,
    warn: bool,
    info: bool,
    ordered: bool,
    fail_msg: Option<String>,
    fail_regex: Option<Regex>,
    expect_warn: Vec<Expect>,
    expect_info: Vec<Expect>,
    no_warn: bool,
    no_info: bool,
    scalar: Option<f64>,
    /// (labels, values, position among expected lines, 1-based)
    series: Vec<(Labels, Vec<SeqValue>, usize)>,
    expect_string: Option<String>,
    range_vector: Option<(i64, i64, i64)>,
    histograms: bool,
    bad: Option<String>,
}

#[derive(Debug)]
enum Expect {
    Msg(String),
    Re(Regex),
    Any,
}

impl Expect {
    fn matches(&self, s: &str) -> bool {
        match self {
            Expect::Msg(m) => m == s,
            Expect::Re(r) => r.is_match(s),
            Expect::Any => true,
        }
    }
}

/// Runs one file's content.
pub fn run_file(file: &str, content: &str, engine: &Engine) -> FileReport {
    let mut rep = FileReport {
        file: file.to_string(),
        ..Default::default()
    };
    let lines: Vec<String> = content
        .lines()
        .map(|l| {
            let t = l.trim();
            if t.starts_with('#') {
                String::new()
            } else {
                t.to_string()
            }
        })
        .collect();
    let mut db = MemStorage::new();
    // Metric names whose data needs unsupported features: name -> reason.
    let mut unsupported: HashMap<String, &'static str> = HashMap::new();
    // Label sets of series holding native histograms.
    let mut hist_series: Vec<Labels> = Vec::new();
    let eval_re =
        Regex::new(r"^eval(?:_(fail|warn|ordered|info))?\s+instant\s+(?:at\s+(.+?))?\s+(.+)$")
            .expect("static regex");
    let range_re = Regex::new(
        r"^eval(?:_(fail|warn|info))?\s+range\s+from\s+(.+)\s+to\s+(.+)\s+step\s+(.+?)\s+(.+)$",
    )
    .expect("static regex");
    let expect_range_re =
        Regex::new(r"^\s+from\s+(.+)\s+to\s+(.+)\s+step\s+(.+)$").expect("static regex");
    let expect_re =
        Regex::new(r"^expect\s+(ordered|fail|warn|no_warn|info|no_info)(?:\s+(regex|msg):(.+))?$")
            .expect("static regex");
    let mut i = 0;
    while i < lines.len() {
        let l = &lines[i];
        if l.is_empty() {
            i += 1;
            continue;
        }
        let cmd = l.split_whitespace().next().unwrap_or("").to_lowercase();
        if cmd == "clear" {
            db.clear();
            unsupported.clear();
            hist_series.clear();
            i += 1;
        } else if cmd.starts_with("load") {
            let nhcb = cmd == "load_with_nhcb";
            let step = l
                .split_whitespace()
                .nth(1)
                .and_then(parse_duration)
                .unwrap_or(0);
            let mut st_default = false;
            let mut names = Vec::new();
            let mut nhcb_defs: Vec<Labels> = Vec::new();
            let mut loaded_hist: Vec<Labels> = Vec::new();
            i += 1;
            while i < lines.len() && !lines[i].is_empty() {
                let def = &lines[i];
                i += 1;
                let first = def.split_whitespace().next().unwrap_or("");
                if first.ends_with("@st") {
                    if first == "@st" {
                        st_default = true;
                    } else if let Ok((ls, _)) = parse_series_desc(first.trim_end_matches("@st")) {
                        unsupported.insert(ls.metric_name().to_string(), START_TIMESTAMPS);
                    }
                    continue;
                }
                let Ok((ls, rest)) = parse_series_desc(def) else {
                    continue;
                };
                let name = ls.metric_name().to_string();
                names.push(name.clone());
                let Ok(vals) = parse_values(rest) else {
                    continue;
                };
                let has_hist = vals.iter().any(|v| matches!(v, SeqValue::Histogram(..)));
                for (k, v) in vals.into_iter().enumerate() {
                    let t = k as i64 * step;
                    match v {
                        // A staleness marker in a histogram series is a
                        // histogram (as the TSDB stores it).
                        SeqValue::Float(f) if has_hist && crate::is_stale_nan(f) => db
                            .add_histogram(
                                ls.clone(),
                                t,
                                FloatHistogram {
                                    sum: f,
                                    ..FloatHistogram::default()
                                },
                            ),
                        SeqValue::Float(f) => db.add(ls.clone(), t, f),
                        SeqValue::Histogram(h, _) => db.add_histogram(ls.clone(), t, *h),
                        SeqValue::Omitted => {}
                    }
                }
                if has_hist {
                    loaded_hist.push(ls.clone());
                }
                if nhcb {
                    nhcb_defs.push(ls.clone());
                }
            }
            if nhcb {
                loaded_hist.extend(add_nhcb(&mut db, &nhcb_defs));
            }
            for ls in loaded_hist.drain(..) {
                stored_hints(&mut db, &ls);
            }
            if st_default {
                for n in names {
                    unsupported.insert(n, START_TIMESTAMPS);
                }
            }
        } else if cmd.starts_with("eval") {
            let mut case = EvalCase {
                line: i + 1,
                ..Default::default()
            };
            if let Some(c) = eval_re.captures(l) {
                case.instant = true;
                let m = c.get(1).map(|m| m.as_str()).unwrap_or("");
                set_mod(&mut case, m);
                let t = c.get(2).and_then(|m| parse_duration(m.as_str()));
                case.start = t.unwrap_or(0);
                case.end = case.start;
                case.expr = c[3].to_string();
            } else if let Some(c) = range_re.captures(l) {
                set_mod(&mut case, c.get(1).map(|m| m.as_str()).unwrap_or(""));
                match (
                    parse_duration(&c[2]),
                    parse_duration(&c[3]),
                    parse_duration(&c[4]),
                ) {
                    (Some(a), Some(b), Some(s)) => {
                        case.start = a;
                        case.end = b;
                        case.step = s;
                    }
                    _ => case.bad = Some("invalid range definition".into()),
                }
                case.expr = c[5].to_string();
            } else {
                case.bad = Some(format!("invalid eval command {l:?}"));
            }
            i += 1;
            let mut pos = 0;
            while i < lines.len() && !lines[i].is_empty() {
                let def = lines[i].clone();
                i += 1;
                if case.fail && def.starts_with("expected_fail_message") {
                    case.fail_msg = Some(def["expected_fail_message".len()..].trim().to_string());
                    break;
                }
                if case.fail && def.starts_with("expected_fail_regexp") {
                    case.fail_regex = Regex::new(def["expected_fail_regexp".len()..].trim()).ok();
                    break;
                }
                if let Some(r) = def.strip_prefix("expect range vector") {
                    let c = Some(&expect_range_re).and_then(|re| {
                        re.captures(r).map(|c| {
                            (
                                parse_duration(&c[1]),
                                parse_duration(&c[2]),
                                parse_duration(&c[3]),
                            )
                        })
                    });
                    match c {
                        Some((Some(a), Some(b), Some(s))) => case.range_vector = Some((a, b, s)),
                        _ => case.bad = Some(format!("invalid {def:?}")),
                    }
                    continue;
                }
                if let Some(r) = def.strip_prefix("expect string") {
                    case.expect_string = unquote(r.trim()).map(|(s, _)| s);
                    continue;
                }
                if def.split(' ').next() == Some("expect") {
                    let Some(c) = expect_re.captures(def.trim()) else {
                        case.bad = Some(format!("invalid expect line {def:?}"));
                        continue;
                    };
                    let e = match (c.get(2).map(|m| m.as_str()), c.get(3)) {
                        (Some("msg"), Some(m)) => Expect::Msg(m.as_str().trim().to_string()),
                        (Some("regex"), Some(m)) => match Regex::new(m.as_str().trim()) {
                            Ok(r) => Expect::Re(r),
                            Err(_) => Expect::Any,
                        },
                        _ => Expect::Any,
                    };
                    match &c[1] {
                        "ordered" => case.ordered = true,
                        "fail" => {
                            case.fail = true;
                            match e {
                                Expect::Msg(m) => case.fail_msg = Some(m),
                                Expect::Re(r) => case.fail_regex = Some(r),
                                Expect::Any => {}
                            }
                        }
                        "warn" => case.expect_warn.push(e),
                        "info" => case.expect_info.push(e),
                        "no_warn" => case.no_warn = true,
                        _ => case.no_info = true,
                    }
                    continue;
                }
                if let Some(f) = parse_expected_number(&def) {
                    case.scalar = Some(f);
                    break;
                }
                pos += 1;
                match parse_series_desc(&def).and_then(|(ls, rest)| Ok((ls, parse_values(rest)?))) {
                    Ok((ls, vals)) => {
                        case.series.push((ls, vals, pos));
                    }
                    Err(e) => case.bad = Some(e),
                }
            }
            // Skip the rest of a block cut short by `break`.
            while i < lines.len() && !lines[i].is_empty() {
                i += 1;
            }
            if let Some(reason) = skip_reason(&case, &unsupported, &hist_series) {
                rep.skipped.push((case.line, reason));
                continue;
            }
            match run_case(&case, &db, engine) {
                Ok(()) => rep.passed.push(case.line),
                Err(reason) => rep.failed.push(Failure {
                    line: case.line,
                    expr: case.expr.clone(),
                    reason,
                }),
            }
        } else {
            rep.failed.push(Failure {
                line: i + 1,
                expr: String::new(),
                reason: format!("invalid command {l:?}"),
            });
            i += 1;
        }
    }
    rep
}

fn set_mod(case: &mut EvalCase, m: &str) {
    match m {
        "fail" => case.fail = true,
        "warn" => case.warn = true,
        "info" => case.info = true,
        "ordered" => case.ordered = true,
        _ => {}
    }
}

fn parse_expected_number(s: &str) -> Option<f64> {
    let s = s.trim();
    if s.contains(char::is_whitespace) || s.contains('{') {
        return None;
    }
    if let Ok(n) = s.parse::<i64>() {
        return Some(n as f64);
    }
    if let Some(h) = s.strip_prefix("0x") {
        return i64::from_str_radix(h, 16).ok().map(|n| n as f64);
    }
    match s {
        "Inf" | "+Inf" | "inf" | "+inf" => Some(f64::INFINITY),
        "-Inf" | "-inf" => Some(f64::NEG_INFINITY),
        "NaN" => Some(f64::NAN),
        _ => s.parse::<f64>().ok(),
    }
}

/// Prometheus' test comparison of histograms: both compacted; schema,
/// zero threshold, spans and custom bounds exact, counts within the
/// tolerance, the counter reset hint only when the expectation gave one.
fn histograms_match(exp: &FloatHistogram, got: &FloatHistogram, hint_set: bool) -> bool {
    let (mut e, mut g) = (exp.clone(), got.clone());
    e.compact();
    g.compact();
    let close = |a: f64, b: f64| almost_equal(a, b, EPSILON);
    let buckets =
        |a: &[f64], b: &[f64]| a.len() == b.len() && a.iter().zip(b).all(|(x, y)| close(*x, *y));
    e.schema == g.schema
        && close(e.count, g.count)
        && close(e.sum, g.sum)
        && (!e.uses_custom_buckets() || custom_bounds_match(&e.custom_values, &g.custom_values))
        && e.zero_threshold == g.zero_threshold
        && close(e.zero_count, g.zero_count)
        && e.positive_spans == g.positive_spans
        && e.negative_spans == g.negative_spans
        && buckets(&e.positive_buckets, &g.positive_buckets)
        && buckets(&e.negative_buckets, &g.negative_buckets)
        && (!hint_set || e.counter_reset_hint == g.counter_reset_hint)
}

/// Sets the counter reset hints of a series' histograms to what
/// Prometheus' TSDB hands out when reading them: a histogram starting a
/// chunk (the first, one after a float, a counter reset, a layout the
/// chunk cannot take, a gauge/counter switch) has "unknown", the others
/// "not a reset"; gauge histograms stay gauges.
fn stored_hints(db: &mut MemStorage, ls: &Labels) {
    let floats: Vec<i64> = db
        .iter()
        .find(|(l, _, _)| *l == ls)
        .map(|(_, f, _)| f.iter().map(|p| p.0).collect())
        .unwrap_or_default();
    let Some(hists) = db.histograms_mut(ls) else {
        return;
    };
    let mut prev: Option<(i64, FloatHistogram)> = None;
    let mut fi = 0;
    for (t, h) in hists.iter_mut() {
        if h.is_stale() {
            continue;
        }
        // A float sample since the previous histogram starts a new chunk.
        let mut float_between = false;
        while fi < floats.len() && floats[fi] < *t {
            if prev.as_ref().is_some_and(|(pt, _)| floats[fi] > *pt) {
                float_between = true;
            }
            fi += 1;
        }
        let gauge = h.counter_reset_hint == CounterResetHint::Gauge;
        let new_chunk = match &prev {
            None => true,
            Some(_) if float_between => true,
            Some((_, p)) => {
                let p_gauge = p.counter_reset_hint == CounterResetHint::Gauge;
                if gauge != p_gauge {
                    true
                } else if gauge {
                    false
                } else {
                    let mut probe = h.clone();
                    probe.counter_reset_hint = CounterResetHint::Unknown;
                    h.counter_reset_hint == CounterResetHint::CounterReset
                        || p.schema != h.schema
                        || p.zero_threshold != h.zero_threshold
                        || !custom_bounds_match(&p.custom_values, &h.custom_values)
                        || probe.detect_reset(p)
                }
            }
        };
        let original = h.clone();
        h.counter_reset_hint = if gauge {
            CounterResetHint::Gauge
        } else if new_chunk {
            CounterResetHint::Unknown
        } else {
            CounterResetHint::NotCounterReset
        };
        prev = Some((*t, original));
    }
}

/// `load_with_nhcb`: the classic histograms among `defs` (series named
/// `*_bucket` with `le`, `*_count`, `*_sum`) also stored as native
/// histograms with custom buckets, named without the suffix. Returns the
/// new series.
fn add_nhcb(db: &mut MemStorage, defs: &[Labels]) -> Vec<Labels> {
    #[derive(Default)]
    struct Temp {
        buckets: Vec<(f64, f64)>,
        count: Option<f64>,
        sum: f64,
    }
    let mut by_series: std::collections::BTreeMap<Labels, std::collections::BTreeMap<i64, Temp>> =
        std::collections::BTreeMap::new();
    let defs: HashSet<&Labels> = defs.iter().collect();
    let series: Vec<(Labels, Vec<(i64, f64)>)> = db
        .iter()
        .filter(|(l, _, _)| defs.contains(l))
        .map(|(l, f, _)| (l.clone(), f.to_vec()))
        .collect();
    for (ls, samples) in series {
        let name = ls.metric_name().to_string();
        let (kind, base) = if let Some(b) = name.strip_suffix("_bucket") {
            (0, b)
        } else if let Some(b) = name.strip_suffix("_sum") {
            (2, b)
        } else if let Some(b) = name.strip_suffix("_count") {
            (1, b)
        } else {
            continue;
        };
        let le = if kind == 0 {
            match parse_num(ls.get("le")) {
                Some(v) if !v.is_nan() => Some(v),
                _ => continue,
            }
        } else {
            None
        };
        let mut key = ls.clone();
        key.set("__name__", base);
        key.remove("le");
        let per_t = by_series.entry(key).or_default();
        for (t, v) in samples {
            let temp = per_t.entry(t).or_default();
            match (kind, le) {
                (0, Some(le)) => {
                    if !temp.buckets.iter().any(|b| b.0 == le) {
                        temp.buckets.push((le, v));
                    }
                }
                (1, _) => temp.count = Some(v),
                _ => temp.sum = v,
            }
        }
    }
    let mut out = Vec::new();
    for (key, per_t) in by_series {
        for (t, mut temp) in per_t {
            temp.buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
            let Some(count) = temp.count.or_else(|| temp.buckets.last().map(|b| b.1)) else {
                continue;
            };
            if temp.buckets.last().is_none_or(|b| b.0 != f64::INFINITY) {
                temp.buckets.push((f64::INFINITY, count));
            }
            let mut prev = 0.0;
            let mut counts = Vec::with_capacity(temp.buckets.len());
            let mut bounds = Vec::new();
            for &(le, c) in &temp.buckets {
                counts.push(c - prev);
                prev = c;
                if le != f64::INFINITY {
                    bounds.push(le);
                }
            }
            let mut h = FloatHistogram {
                schema: ferrite_model::histogram::CUSTOM_BUCKETS_SCHEMA,
                count,
                sum: temp.sum,
                positive_spans: vec![Span {
                    offset: 0,
                    length: counts.len() as u32,
                }],
                positive_buckets: counts,
                custom_values: bounds,
                ..FloatHistogram::default()
            };
            h.compact();
            db.add_histogram(key.clone(), t, h);
        }
        out.push(key);
    }
    out
}

/// Why a case is skipped: features Prometheus v3.16.0 keeps behind a flag
/// that is off by default.
const EXPERIMENTAL: &str =
    "experimental functions (--enable-feature=promql-experimental-functions)";
const FILL_MODIFIERS: &str = "binop fill modifiers (--enable-feature=promql-binop-fill-modifiers)";
const UNQUOTED_UTF8: &str = "unquoted UTF-8 names (--enable-feature=promql-unquoted-utf8-names)";
const START_TIMESTAMPS: &str = "start timestamps (--enable-feature=use-start-timestamps)";

/// The flag a query's syntax needs: an experimental function or
/// aggregation (as Prometheus' function list marks them), `fill` modifiers,
/// or unquoted UTF-8 names (the last two do not parse without their flag).
fn syntax_feature(e: &str, expect_fail: bool) -> Option<&'static str> {
    use crate::parser::Expr;
    let parsed = match crate::parse(e) {
        Ok(p) => p,
        Err(err) => {
            let err = err.to_string();
            if err.contains("fill modifiers") {
                return Some(FILL_MODIFIERS);
            }
            let utf8_name =
                Regex::new(r"[A-Za-z_]\.[A-Za-z_.]|[^\x00-\x7f]").expect("static regex");
            let unquoted = Regex::new(r#""[^"]*"|'[^']*'"#)
                .expect("static regex")
                .replace_all(e, "");
            return (!expect_fail
                && err.contains("unexpected character")
                && utf8_name.is_match(&unquoted))
            .then_some(UNQUOTED_UTF8);
        }
    };
    // The experimental aggregations (`limitk`, `limit_ratio`) are
    // implemented, so their cases run.
    let experimental = parsed
        .nodes()
        .any(|n| matches!(n, Expr::Call(c) if c.func.experimental));
    experimental.then_some(EXPERIMENTAL)
}

fn skip_reason(
    case: &EvalCase,
    unsupported: &HashMap<String, &'static str>,
    hist_series: &[Labels],
) -> Option<String> {
    let e = &case.expr;
    if case.histograms {
        return Some("native histograms".into());
    }
    if !hist_series.is_empty() && selects_any(e, hist_series) {
        return Some("native histograms".into());
    }
    if let Some(feature) = syntax_feature(e, case.fail) {
        return Some(feature.into());
    }
    let ident = Regex::new(r"[A-Za-z_:][A-Za-z0-9_:]*").expect("static regex");
    let idents: HashSet<&str> = ident.find_iter(e).map(|m| m.as_str()).collect();
    // Metric names: also those inside quotes (`{"name"}`, `__name__="x"`).
    let mut reasons: Vec<&str> = idents
        .iter()
        .filter_map(|i| unsupported.get(*i).copied())
        .collect();
    let quoted = Regex::new(r#""([^"]*)""#).expect("static regex");
    for c in quoted.captures_iter(e) {
        for part in c[1].split('|') {
            if let Some(r) = unsupported.get(part) {
                reasons.push(r);
            }
        }
    }
    let regex_sel = Regex::new(r#"__name__\s*=~\s*"([^"]*)""#).expect("static regex");
    for c in regex_sel.captures_iter(e) {
        if let Ok(re) = crate::storage::compile_anchored(&c[1]) {
            reasons.extend(
                unsupported
                    .iter()
                    .filter(|(n, _)| re.is_match(n))
                    .map(|(_, r)| *r),
            );
        }
    }
    reasons.sort();
    reasons.first().map(|r| r.to_string())
}

/// Whether a selector of `expr` selects one of `series`.
fn selects_any(expr: &str, series: &[Labels]) -> bool {
    use crate::parser::{Expr, VectorSelector};
    let selects = |vs: &VectorSelector| {
        series
            .iter()
            .any(|l| vs.matchers.iter().all(|m| m.matches_labels(l)))
    };
    let Ok(e) = crate::parse(expr) else {
        return false;
    };
    let found = e.nodes().any(|n| match n {
        Expr::VectorSelector(vs) => selects(vs),
        Expr::MatrixSelector(ms) => selects(&ms.vs),
        _ => false,
    });
    found
}

fn run_case(case: &EvalCase, db: &MemStorage, engine: &Engine) -> Result<(), String> {
    if let Some(b) = &case.bad {
        return Err(b.clone());
    }
    let (start, end, step, instant) = match case.range_vector {
        Some((a, b, s)) if case.instant => (a, b, s, true),
        _ => (case.start, case.end, case.step, case.instant),
    };
    let _ = (start, end);
    let res = if instant {
        engine.instant_query(db, &case.expr, case.start)
    } else {
        engine.range_query(db, &case.expr, case.start, case.end, case.step)
    };
    let res = match res {
        Err(e) => {
            if case.fail {
                return check_failure(case, &e.to_string());
            }
            return Err(format!("error evaluating query: {e}"));
        }
        Ok(r) => r,
    };
    if case.fail {
        return Err("expected error evaluating query but got none".into());
    }
    check_annotations(case, &res.warnings, &res.infos)?;
    compare(case, &res.value, start, step)?;
    // An instant case must give the same in range mode (middle step).
    let ctx_funcs = Regex::new(r"(start|end|range|step)\(\)").expect("static regex");
    if instant
        && case.range_vector.is_none()
        && case.expect_string.is_none()
        && !ctx_funcs.is_match(&case.expr)
        && !case.ordered
    {
        let t = case.start;
        let rr = engine
            .range_query(db, &case.expr, t - 60_000, t + 60_000, 60_000)
            .map_err(|e| format!("error evaluating query in range mode: {e}"))?;
        let Value::Matrix(m) = rr.value else {
            return Err("range mode returned no matrix".into());
        };
        let vec: Vec<crate::value::Sample> = m
            .into_iter()
            .filter_map(|s| {
                let f = s.points.iter().find(|p| p.0 == t).map(|&(_, f)| (f, None));
                let h = s
                    .histograms
                    .iter()
                    .find(|p| p.0 == t)
                    .map(|(_, h)| (0.0, Some(h.clone())));
                f.or(h).map(|(f, h)| crate::value::Sample {
                    labels: s.labels.clone(),
                    t,
                    f,
                    h,
                })
            })
            .collect();
        let v = if matches!(res.value, Value::Scalar { .. }) {
            Value::Scalar {
                t,
                v: vec.first().map(|s| s.f).unwrap_or(f64::NAN),
            }
        } else {
            Value::Vector(vec)
        };
        compare(case, &v, start, step).map_err(|e| format!("range mode: {e}"))?;
    }
    Ok(())
}

fn check_failure(case: &EvalCase, err: &str) -> Result<(), String> {
    if let Some(m) = &case.fail_msg {
        if m != err {
            return Err(format!("expected error {m:?}, got {err:?}"));
        }
    }
    if let Some(r) = &case.fail_regex {
        if !r.is_match(err) {
            return Err(format!(
                "expected error matching {:?}, got {err:?}",
                r.as_str()
            ));
        }
    }
    Ok(())
}

fn check_annotations(case: &EvalCase, warnings: &[String], infos: &[String]) -> Result<(), String> {
    if case.warn && warnings.is_empty() {
        return Err("expected warnings but got none".into());
    }
    if case.info && infos.is_empty() {
        return Err("expected info annotations but got none".into());
    }
    for (kind, exp, act) in [
        ("warn", &case.expect_warn, warnings),
        ("info", &case.expect_info, infos),
    ] {
        if exp.is_empty() {
            continue;
        }
        if act.is_empty() {
            return Err(format!("expected {kind} annotations but none were found"));
        }
        for e in exp.iter() {
            if !act.iter().any(|a| e.matches(a)) {
                return Err(format!(
                    "expected {kind} annotation {e:?} not found in {act:?}"
                ));
            }
        }
        for a in act {
            if !exp.iter().any(|e| e.matches(a)) {
                return Err(format!("unexpected {kind} annotation {a:?}"));
            }
        }
    }
    if case.no_warn && !warnings.is_empty() {
        return Err(format!("unexpected warnings {warnings:?}"));
    }
    if case.no_info && !infos.is_empty() {
        return Err(format!("unexpected info annotations {infos:?}"));
    }
    Ok(())
}

fn compare(case: &EvalCase, v: &Value, start: i64, step: i64) -> Result<(), String> {
    let expected: HashMap<&Labels, (&Vec<SeqValue>, usize)> =
        case.series.iter().map(|(l, v, p)| (l, (v, *p))).collect();
    match v {
        Value::Matrix(m) => {
            if case.ordered {
                return Err("expected ordered result, but query returned a matrix".into());
            }
            if case.scalar.is_some() {
                return Err("expected scalar result, but got matrix".into());
            }
            for w in m.windows(2) {
                if w[0].labels > w[1].labels {
                    return Err("matrix results should always be sorted by labels".into());
                }
            }
            let end = case.range_vector.map(|r| r.1).unwrap_or(case.end);
            for s in m {
                let Some((vals, _)) = expected.get(&s.labels) else {
                    return Err(format!(
                        "unexpected metric {} in result, has {:?}",
                        s.labels, s.points
                    ));
                };
                let mut exp = Vec::new();
                let mut exp_h = Vec::new();
                for (k, e) in vals.iter().enumerate() {
                    let t = start + k as i64 * step;
                    if t > end {
                        return Err(format!("expected {} points for {}, but query time range cannot return this many points", vals.len(), s.labels));
                    }
                    match e {
                        SeqValue::Float(f) => exp.push((t, *f)),
                        SeqValue::Histogram(h, set) => exp_h.push((t, h, *set)),
                        SeqValue::Omitted => {}
                    }
                }
                if exp.len() != s.points.len() || exp_h.len() != s.histograms.len() {
                    return Err(format!(
                        "expected {} float points and {} histogram points for {}, got {:?} and {}",
                        exp.len(),
                        exp_h.len(),
                        s.labels,
                        s.points,
                        s.histograms
                            .iter()
                            .map(|(t, h)| format!("{} @[{t}]", h.test_expression()))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
                for (e, a) in exp.iter().zip(&s.points) {
                    if e.0 != a.0 || !almost_equal(e.1, a.1, EPSILON) {
                        return Err(format!("expected {:?} for {}, got {:?}", e, s.labels, a));
                    }
                }
                for (e, a) in exp_h.iter().zip(&s.histograms) {
                    if e.0 != a.0 || !histograms_match(e.1, &a.1, e.2) {
                        return Err(format!(
                            "expected {} @[{}] for {}, got {} @[{}]",
                            e.1.test_expression(),
                            e.0,
                            s.labels,
                            a.1.test_expression(),
                            a.0
                        ));
                    }
                }
            }
            if expected.len() > m.len() {
                let got: HashSet<&Labels> = m.iter().map(|s| &s.labels).collect();
                if let Some(l) = expected.keys().find(|l| !got.contains(*l)) {
                    return Err(format!("expected metric {l} not found"));
                }
            }
        }
        Value::Vector(vec) => {
            if case.scalar.is_some() {
                return Err(format!(
                    "expected scalar result, but got vector of {}",
                    vec.len()
                ));
            }
            let mut seen = HashSet::new();
            for (pos, s) in vec.iter().enumerate() {
                let Some((vals, epos)) = expected.get(&s.labels) else {
                    return Err(format!(
                        "unexpected metric {} in result, has value {}",
                        s.labels, s.f
                    ));
                };
                if case.ordered && *epos != pos + 1 {
                    return Err(format!(
                        "expected metric {} at position {epos} but was at {}",
                        s.labels,
                        pos + 1
                    ));
                }
                match (vals.first(), &s.h) {
                    (Some(SeqValue::Float(e)), None) => {
                        if !almost_equal(*e, s.f, EPSILON) {
                            return Err(format!("expected {e} for {} but got {}", s.labels, s.f));
                        }
                    }
                    (Some(SeqValue::Histogram(e, set)), Some(h)) => {
                        if !histograms_match(e, h, *set) {
                            return Err(format!(
                                "expected {} for {} but got {}",
                                e.test_expression(),
                                s.labels,
                                h.test_expression()
                            ));
                        }
                    }
                    (Some(SeqValue::Float(e)), Some(h)) => {
                        return Err(format!(
                            "expected float value {e} for {} but got histogram {}",
                            s.labels,
                            h.test_expression()
                        ))
                    }
                    (Some(SeqValue::Histogram(e, _)), None) => {
                        return Err(format!(
                            "expected histogram {} for {} but got float value {}",
                            e.test_expression(),
                            s.labels,
                            s.f
                        ))
                    }
                    _ => return Err(format!("bad expectation for {}", s.labels)),
                }
                seen.insert(&s.labels);
            }
            if let Some(l) = expected.keys().find(|l| !seen.contains(*l)) {
                return Err(format!("expected metric {l} not found"));
            }
        }
        Value::Scalar { v, .. } => {
            if let Some((_, vals, _)) = case.series.first() {
                if let Some(SeqValue::Histogram(h, _)) = vals.first() {
                    return Err(format!(
                        "expected histogram {} but got scalar {v}",
                        h.test_expression()
                    ));
                }
            }
            let Some(e) = case.scalar else {
                return Err(format!(
                    "expected vector or matrix result, but got scalar {v}"
                ));
            };
            if !almost_equal(e, *v, EPSILON) {
                return Err(format!("expected scalar {e} but got {v}"));
            }
        }
        Value::String { v, .. } => {
            let e = case.expect_string.as_deref().unwrap_or("");
            if e != v {
                return Err(format!("expected string {e:?} but got {v:?}"));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_expansions() {
        use SeqValue::*;
        assert_eq!(
            parse_values("0+10x3").unwrap(),
            vec![Float(0.0), Float(10.0), Float(20.0), Float(30.0)]
        );
        assert_eq!(
            parse_values("1x2 _ _x2").unwrap(),
            vec![
                Float(1.0),
                Float(1.0),
                Float(1.0),
                Omitted,
                Omitted,
                Omitted
            ]
        );
        assert_eq!(
            parse_values("-2-1x2").unwrap(),
            vec![Float(-2.0), Float(-3.0), Float(-4.0)]
        );
        assert_eq!(
            parse_values("1e3 -Inf").unwrap(),
            vec![Float(1000.0), Float(f64::NEG_INFINITY)]
        );
        let v = parse_values("stale NaN").unwrap();
        assert!(matches!(v[0], Float(f) if crate::is_stale_nan(f)));
        assert!(matches!(v[1], Float(f) if f.is_nan() && !crate::is_stale_nan(f)));
        let v = parse_values("{{schema:1 sum:3 count:22 buckets:[5 10 7] offset:-1}} 1").unwrap();
        let Histogram(h, false) = &v[0] else {
            panic!("{v:?}")
        };
        assert_eq!((h.schema, h.sum, h.count), (1, 3.0, 22.0));
        assert_eq!(
            h.positive_spans,
            vec![Span {
                offset: -1,
                length: 3
            }]
        );
        assert_eq!(v[1], Float(1.0));
        assert_eq!(parse_values("{{count:1}}x2").unwrap().len(), 3);
        let v = parse_values(
            "{{count:1 buckets:[1]}}+{{count:2 buckets:[2] counter_reset_hint:gauge}}x2",
        )
        .unwrap();
        let Histogram(h, true) = &v[2] else {
            panic!("{v:?}")
        };
        assert_eq!((h.count, h.positive_buckets.clone()), (5.0, vec![5.0]));
        assert!(parse_values("abc").is_err());
    }

    #[test]
    fn series_descriptions() {
        let (ls, rest) =
            parse_series_desc(r#"http_requests{job="api", instance="0"} 1 2"#).unwrap();
        assert_eq!(
            ls,
            Labels::from_pairs(&[
                ("__name__", "http_requests"),
                ("instance", "0"),
                ("job", "api")
            ])
        );
        assert_eq!(rest.trim(), "1 2");
        let (ls, _) = parse_series_desc(r#"{"my.metric", a="x\"y"} 1"#).unwrap();
        assert_eq!(
            ls,
            Labels::from_pairs(&[("__name__", "my.metric"), ("a", "x\"y")])
        );
        let (ls, _) = parse_series_desc("{} 1").unwrap();
        assert!(ls.is_empty());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("1h30m"), Some(5_400_000));
        assert_eq!(parse_duration("100ms"), Some(100));
        assert_eq!(parse_duration("0"), Some(0));
        assert_eq!(parse_duration("x"), None);
    }

    #[test]
    fn tolerance() {
        assert!(almost_equal(1.0, 1.0 + 1e-9, EPSILON));
        assert!(!almost_equal(1.0, 1.01, EPSILON));
        assert!(almost_equal(f64::NAN, f64::NAN, EPSILON));
        assert!(!almost_equal(f64::NAN, STALE_NAN, EPSILON));
    }
}

#[cfg(test)]
mod proptests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn expansion_is_arithmetic(start in -1000i64..1000, inc in -50i64..50, n in 0usize..40) {
            let sign = if inc < 0 { '-' } else { '+' };
            let vals = parse_values(&format!("{start}{sign}{}x{n}", inc.abs())).unwrap();
            prop_assert_eq!(vals.len(), n + 1);
            for (i, v) in vals.iter().enumerate() {
                prop_assert_eq!(v, &SeqValue::Float((start + inc * i as i64) as f64));
            }
        }
    }
}
