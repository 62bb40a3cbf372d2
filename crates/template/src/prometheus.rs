//! Prometheus' template functions (`template.NewTemplateExpander`'s
//! function map): queries and their samples, regular expressions, string
//! helpers, links, and the `humanize*` family with their output formats
//! and error texts.

use std::collections::BTreeMap;
use std::sync::Arc;

use ferrite_model::gofloat::{format_g, format_g_prec, parse_go_float, FloatError};
use ferrite_model::goquote::{query_escape, quote as go_quote};

use crate::value::{labels_map, Sample, Value};
use crate::QueryFunc;

/// What Prometheus' functions close over.
pub(crate) struct Env<'a> {
    /// The evaluation time (ms since the epoch).
    pub(crate) t_ms: i64,
    pub(crate) query: &'a dyn QueryFunc,
    pub(crate) external_url: &'a str,
}

/// The text of Go's nil pointer dereference panic.
const NIL_DEREF: &str = "runtime error: invalid memory address or nil pointer dereference";

/// Calls Prometheus' function `name` (the executor checked the arguments'
/// number and types).
pub(crate) fn call(env: &Env<'_>, name: &str, a: &[Value]) -> Result<Value, String> {
    let s = |i: usize| -> &str {
        match a.get(i) {
            Some(Value::Str(s)) => s,
            _ => "",
        }
    };
    let arg = a.first().cloned().unwrap_or_default();
    Ok(match name {
        "query" => {
            let samples = env.query.query(s(0), env.t_ms)?;
            Value::QueryResult(Arc::new(
                samples
                    .into_iter()
                    .map(|smp| {
                        Arc::new(Sample {
                            labels: labels_map(&smp.labels),
                            value: match smp.h {
                                Some(h) => Value::Histogram(Arc::new(h)),
                                None => Value::Float(smp.f),
                            },
                        })
                    })
                    .collect(),
            ))
        }
        "first" => match &arg {
            Value::QueryResult(q) if !q.is_empty() => Value::Sample(Arc::clone(&q[0])),
            _ => return Err("first() called on vector with no elements".into()),
        },
        "label" => match a.get(1) {
            Some(Value::Sample(smp)) => {
                Value::str(smp.labels.get(s(0)).map(String::as_str).unwrap_or(""))
            }
            _ => return Err(NIL_DEREF.into()),
        },
        "value" => match &arg {
            Value::Sample(smp) => smp.value.clone(),
            _ => return Err(NIL_DEREF.into()),
        },
        "strvalue" => match &arg {
            Value::Sample(smp) => Value::str(
                smp.labels
                    .get("__value__")
                    .map(String::as_str)
                    .unwrap_or(""),
            ),
            _ => return Err(NIL_DEREF.into()),
        },
        "args" => {
            let mut m = BTreeMap::new();
            for (i, v) in a.iter().enumerate() {
                m.insert(format!("arg{i}"), v.clone());
            }
            Value::Map(Arc::new(m))
        }
        "reReplaceAll" => {
            let re = compile(s(0))
                .map_err(|e| format!("regexp: Compile({}): {e}", regexp_quote(s(0))))?;
            Value::str(&re.replace_all(s(2), s(1)))
        }
        "safeHtml" => Value::Html(Arc::from(s(0))),
        "match" => Value::Bool(compile(s(0))?.is_match(s(1))),
        "title" => Value::str(&title(s(0))),
        "toUpper" => Value::str(&map_chars(s(0), true)),
        "toLower" => Value::str(&map_chars(s(0), false)),
        "graphLink" => Value::str(&format!("/graph?g0.expr={}&g0.tab=0", query_escape(s(0)))),
        "tableLink" => Value::str(&format!("/graph?g0.expr={}&g0.tab=1", query_escape(s(0)))),
        "sortByLabel" => match a.get(1) {
            Some(Value::QueryResult(q)) => {
                let by = s(0);
                let mut v: Vec<Arc<Sample>> = q.as_ref().clone();
                v.sort_by(|x, y| {
                    let kx = x.labels.get(by).map(String::as_str).unwrap_or("");
                    let ky = y.labels.get(by).map(String::as_str).unwrap_or("");
                    kx.cmp(ky)
                });
                Value::QueryResult(Arc::new(v))
            }
            _ => Value::QueryResult(Arc::new(Vec::new())),
        },
        "stripPort" => match split_host_port(s(0)) {
            Some((host, _)) => Value::str(host),
            None => Value::str(s(0)),
        },
        "stripDomain" => Value::str(&strip_domain(s(0))),
        "humanize" => Value::str(&humanize(to_float(&arg)?)),
        "humanize1024" => Value::str(&humanize1024(to_float(&arg)?)),
        "humanizeDuration" => Value::str(&humanize_duration(to_float(&arg)?)),
        "humanizePercentage" => {
            Value::str(&format!("{}%", format_g_prec(to_float(&arg)? * 100.0, 4)))
        }
        "humanizeTimestamp" => {
            let v = to_float(&arg)?;
            if !v.is_finite() {
                Value::str(&format_g_prec(v, 4))
            } else {
                Value::str(&crate::value::time_string(float_to_time(v)?))
            }
        }
        "toTime" => {
            let v = to_float(&arg)?;
            if !v.is_finite() {
                return Err("value is NaN or Inf".into());
            }
            Value::Time(float_to_time(v)?)
        }
        "toDuration" => Value::Duration(go_f64_to_i64(to_float(&arg)? * 1e9)),
        "now" => Value::Float(env.t_ms as f64 / 1000.0),
        "pathPrefix" => Value::str(url_path(env.external_url)),
        "externalURL" => Value::str(env.external_url),
        "parseDuration" => {
            let d = s(0);
            let (neg, body) = match d.strip_prefix('-') {
                Some(rest) => (true, rest),
                None => (false, d),
            };
            let ms = ferrite_model::units::parse_duration_ms(body).map_err(|e| e.to_string())?;
            let secs = ms as f64 / 1000.0;
            Value::Float(if neg { -secs } else { secs })
        }
        "urlQueryEscape" => Value::str(&query_escape(s(0))),
        other => return Err(format!("{} is not a defined function", go_quote(other))),
    })
}

/// Go's conversion of a float to `int64` on amd64: out of range (and
/// NaN) give the minimum.
fn go_f64_to_i64(f: f64) -> i64 {
    if f.is_nan() || !(-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&f) {
        i64::MIN
    } else {
        f as i64
    }
}

/// `FloatToTime`: seconds to a time (nanoseconds), through Prometheus'
/// millisecond `model.Time`.
fn float_to_time(v: f64) -> Result<i64, String> {
    let ts = v * 1e9;
    if !(-9_223_372_036_854_775_808.0..=9_223_372_036_854_775_807.0).contains(&ts) {
        return Err(format!(
            "{} cannot be represented as a nanoseconds timestamp since it overflows int64",
            format_g(v)
        ));
    }
    let ns = go_f64_to_i64(ts);
    let ms = ns / 1_000_000;
    Ok(ms.saturating_mul(1_000_000))
}

/// `ConvertToFloat` of prometheus/common's templates.
fn to_float(v: &Value) -> Result<f64, String> {
    match v {
        Value::Float(f) => Ok(*f),
        Value::Int(i) => Ok(*i as f64),
        Value::Str(s) => match parse_go_float(s.as_bytes()) {
            Ok(f) => Ok(f),
            Err(FloatError::Syntax) => Err(format!(
                "strconv.ParseFloat: parsing {}: invalid syntax",
                go_quote(s)
            )),
            Err(FloatError::Range) => Err(format!(
                "strconv.ParseFloat: parsing {}: value out of range",
                go_quote(s)
            )),
        },
        other => Err(format!("can't convert {} to float", other.type_name())),
    }
}

fn humanize(mut v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format_g_prec(v, 4);
    }
    let mut prefix = "";
    if v.abs() >= 1.0 {
        for p in ["k", "M", "G", "T", "P", "E", "Z", "Y"] {
            if v.abs() < 1000.0 {
                break;
            }
            prefix = p;
            v /= 1000.0;
        }
    } else {
        for p in ["m", "u", "n", "p", "f", "a", "z", "y"] {
            if v.abs() >= 1.0 {
                break;
            }
            prefix = p;
            v *= 1000.0;
        }
    }
    format!("{}{prefix}", format_g_prec(v, 4))
}

fn humanize1024(mut v: f64) -> String {
    if v.abs() <= 1.0 || !v.is_finite() {
        return format_g_prec(v, 4);
    }
    let mut prefix = "";
    for p in ["ki", "Mi", "Gi", "Ti", "Pi", "Ei", "Zi", "Yi"] {
        if v.abs() < 1024.0 {
            break;
        }
        prefix = p;
        v /= 1024.0;
    }
    format!("{}{prefix}", format_g_prec(v, 4))
}

fn humanize_duration(mut v: f64) -> String {
    if !v.is_finite() {
        return format_g_prec(v, 4);
    }
    if v == 0.0 {
        return format!("{}s", format_g_prec(v, 4));
    }
    if v.abs() >= 1.0 {
        let mut sign = "";
        if v < 0.0 {
            sign = "-";
            v = -v;
        }
        let d = go_f64_to_i64(v);
        let seconds = d % 60;
        let minutes = (d / 60) % 60;
        let hours = (d / 60 / 60) % 24;
        let days = d / 60 / 60 / 24;
        if days != 0 {
            return format!("{sign}{days}d {hours}h {minutes}m {seconds}s");
        }
        if hours != 0 {
            return format!("{sign}{hours}h {minutes}m {seconds}s");
        }
        if minutes != 0 {
            return format!("{sign}{minutes}m {seconds}s");
        }
        return format!("{sign}{}s", format_g_prec(v, 4));
    }
    let mut prefix = "";
    for p in ["m", "u", "n", "p", "f", "a", "z", "y"] {
        if v.abs() >= 1.0 {
            break;
        }
        prefix = p;
        v *= 1000.0;
    }
    format!("{}{prefix}s", format_g_prec(v, 4))
}

/// Go's `strings.ToUpper`/`ToLower`: rune by rune, simple mappings only.
fn map_chars(s: &str, upper: bool) -> String {
    s.chars()
        .map(|c| {
            let m: Vec<char> = if upper {
                c.to_uppercase().collect()
            } else {
                c.to_lowercase().collect()
            };
            if m.len() == 1 || (!upper && c == '\u{130}') {
                // İ's simple lower case is i, the first of its full one.
                m.first().copied().unwrap_or(c)
            } else {
                c
            }
        })
        .collect()
}

/// `cases.Title(language.AmericanEnglish, cases.NoLower)`: the first cased
/// letter of each word in title case, the rest untouched. Words break at
/// characters other than letters, digits and `_`, except a single `.`,
/// `:` or apostrophe (Unicode's MidLetter and MidNumLet).
fn title(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut pending = true;
    let mut prev_mid = false;
    for c in s.chars() {
        let mid = matches!(
            c,
            '.' | ':' | '\'' | '\u{2019}' | '\u{2018}' | '\u{B7}' | '\u{2024}'
        );
        if c.is_lowercase() || c.is_uppercase() {
            if pending {
                pending = false;
                out.push_str(&title_case(c));
                prev_mid = false;
                continue;
            }
        } else if !(c.is_alphanumeric() || c == '_' || (mid && !prev_mid)) {
            pending = true;
        }
        prev_mid = mid;
        out.push(c);
    }
    out
}

/// A letter's title case (Unicode's full mapping): the upper case, but for
/// the digraphs, which have a title case of their own, and letters whose
/// upper case is several (`ß` → `Ss`: the first upper, the rest lower).
fn title_case(c: char) -> String {
    match c {
        '\u{1C4}'..='\u{1C6}' => '\u{1C5}'.to_string(),
        '\u{1C7}'..='\u{1C9}' => '\u{1C8}'.to_string(),
        '\u{1CA}'..='\u{1CC}' => '\u{1CB}'.to_string(),
        '\u{1F1}'..='\u{1F3}' => '\u{1F2}'.to_string(),
        _ => {
            let mut up = c.to_uppercase();
            let mut out: String = up.next().into_iter().collect();
            out.extend(up.flat_map(char::to_lowercase));
            out
        }
    }
}

/// Go's `net.SplitHostPort`; `None` on its errors.
fn split_host_port(hp: &str) -> Option<(&str, &str)> {
    let i = hp.rfind(':')?;
    let (host, j, k);
    if hp.starts_with('[') {
        let end = hp.find(']')?;
        if end + 1 == hp.len() {
            return None;
        }
        if end + 1 != i {
            return None;
        }
        host = &hp[1..end];
        j = 1;
        k = end + 1;
    } else {
        host = &hp[..i];
        if host.contains(':') {
            return None;
        }
        j = 0;
        k = 0;
    }
    if hp[j..].contains('[') || hp[k..].contains(']') {
        return None;
    }
    Some((host, &hp[i + 1..]))
}

/// Go's `netip.ParseAddr` succeeds.
fn is_ip(s: &str) -> bool {
    if s.parse::<std::net::Ipv4Addr>().is_ok() {
        return true;
    }
    let (addr, zone) = match s.split_once('%') {
        Some((a, z)) => (a, Some(z)),
        None => (s, None),
    };
    if zone == Some("") {
        return false;
    }
    addr.contains(':') && addr.parse::<std::net::Ipv6Addr>().is_ok()
}

fn strip_domain(hp: &str) -> String {
    let (host, port) = split_host_port(hp).unwrap_or((hp, ""));
    if is_ip(host) {
        return hp.to_string();
    }
    let host = host.split('.').next().unwrap_or("");
    if !port.is_empty() {
        if host.contains(':') {
            return format!("[{host}]:{port}");
        }
        return format!("{host}:{port}");
    }
    host.to_string()
}

/// The path of a URL (`url.URL.Path`), for `pathPrefix`.
fn url_path(u: &str) -> &str {
    let rest = match u.find("://") {
        Some(i) => {
            let after = &u[i + 3..];
            match after.find('/') {
                Some(j) => &after[j..],
                None => "",
            }
        }
        None => u,
    };
    let end = rest.find(['?', '#']).unwrap_or(rest.len());
    &rest[..end]
}

/// How Go's `regexp.MustCompile` quotes a pattern in its panic.
fn regexp_quote(s: &str) -> String {
    let can_backquote = !s.contains('`')
        && s.chars()
            .all(|c| c == '\t' || !(c.is_control() || c == '\u{FEFF}'));
    if can_backquote {
        format!("`{s}`")
    } else {
        go_quote(s)
    }
}

/// Compiles a Go (RE2) regular expression with the `regex` crate: Perl
/// classes and word boundaries are made ASCII as in Go.
fn compile(pattern: &str) -> Result<regex::Regex, String> {
    go_syntax_check(pattern).map_err(|e| format!("error parsing regexp: {e}"))?;
    let mut p = String::with_capacity(pattern.len() + 16);
    let mut chars = pattern.chars().peekable();
    // Inside a character class (`[...]`), and how many characters into it.
    let mut class: Option<usize> = None;
    while let Some(c) = chars.next() {
        if let Some(n) = class {
            class = Some(n + 1);
            if c == ']' && n > 0 {
                class = None;
            }
            if c == '^' && n == 0 {
                class = Some(0);
            }
            // Go has no nested classes nor class operations: literals.
            if (c == '[' && chars.peek() != Some(&':')) || c == '&' || c == '~' {
                p.push('\\');
                p.push(c);
                continue;
            }
        } else if c == '[' {
            class = Some(0);
        } else if c == '{' {
            // Go reads a brace that starts no repetition as a literal.
            let rest: String = chars.clone().collect();
            let valid = rest.find('}').is_some_and(|end| {
                let body = &rest[..end];
                let (lo, hi) = body.split_once(',').unwrap_or((body, "0"));
                !lo.is_empty()
                    && lo.bytes().all(|b| b.is_ascii_digit())
                    && hi.bytes().all(|b| b.is_ascii_digit())
            });
            if !valid {
                p.push_str("\\{");
                continue;
            }
        }
        if c != '\\' {
            p.push(c);
            continue;
        }
        match chars.next() {
            Some('d') => p.push_str("[0-9]"),
            Some('D') => p.push_str("[^0-9]"),
            Some('w') => p.push_str("[0-9A-Za-z_]"),
            Some('W') => p.push_str("[^0-9A-Za-z_]"),
            Some('s') => p.push_str("[\\t\\n\\f\\r ]"),
            Some('S') => p.push_str("[^\\t\\n\\f\\r ]"),
            Some('b') => p.push_str("(?-u:\\b)"),
            Some('B') => p.push_str("(?-u:\\B)"),
            Some(o) => {
                p.push('\\');
                p.push(o);
            }
            None => p.push('\\'),
        }
    }
    regex::RegexBuilder::new(&p)
        .size_limit(1 << 24)
        .build()
        .map_err(|e| format!("error parsing regexp: {}", regex_error(&e, pattern)))
}

/// What Go's `regexp/syntax` refuses and the `regex` crate accepts:
/// stacked repetitions (`a**`), counts above 1000, flags other than
/// `imsU`. The error is Go's text.
fn go_syntax_check(pattern: &str) -> Result<(), String> {
    let chars: Vec<char> = pattern.chars().collect();
    let text =
        |from: usize, to: usize| -> String { chars[from..to.min(chars.len())].iter().collect() };
    let mut i = 0;
    // Where the class's first character is, inside `[...]`.
    let mut class: Option<usize> = None;
    // Where the repetition just before starts, and whether it took its `?`.
    let mut last_rep: Option<(usize, bool)> = None;
    while i < chars.len() {
        let c = chars[i];
        if let Some(first) = class {
            match c {
                '\\' => i += 2,
                '[' if chars.get(i + 1) == Some(&':') => {
                    let close = (i + 2..chars.len().saturating_sub(1))
                        .find(|&k| chars[k] == ':' && chars[k + 1] == ']');
                    if let Some(k) = close {
                        let name = text(i + 2, k);
                        let known = [
                            "alnum", "alpha", "ascii", "blank", "cntrl", "digit", "graph", "lower",
                            "print", "punct", "space", "upper", "word", "xdigit",
                        ];
                        if !known.contains(&name.trim_start_matches('^')) {
                            return Err(format!(
                                "invalid character class range: `{}`",
                                text(i, k + 2)
                            ));
                        }
                    }
                    i = close.map_or(i + 1, |k| k + 2);
                }
                ']' if i > first => {
                    class = None;
                    i += 1;
                }
                _ => i += 1,
            }
            continue;
        }
        let rep_end = match c {
            '*' | '+' | '?' => Some(i + 1),
            '{' => {
                let close = (i + 1..chars.len()).find(|&k| chars[k] == '}');
                close
                    .and_then(|end| {
                        let body = text(i + 1, end);
                        let (lo, hi) = match body.split_once(',') {
                            Some((lo, hi)) => (lo.to_string(), Some(hi.to_string())),
                            None => (body.clone(), None),
                        };
                        let digits =
                            |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
                        let ok =
                            digits(&lo) && hi.as_deref().is_none_or(|h| h.is_empty() || digits(h));
                        ok.then_some((end, lo, hi))
                    })
                    .map(|(end, lo, hi)| {
                        let n = |s: &str| s.parse::<u64>().unwrap_or(u64::MAX);
                        let too_big = n(&lo) > 1000
                            || hi.as_deref().is_some_and(|h| !h.is_empty() && n(h) > 1000);
                        (end + 1, too_big)
                    })
                    .map(
                        |(end, too_big)| {
                            if too_big {
                                usize::MAX - end
                            } else {
                                end
                            }
                        },
                    )
            }
            _ => None,
        };
        match rep_end {
            Some(end) if end > chars.len() => {
                let end = usize::MAX - end;
                return Err(format!("invalid repeat count: `{}`", text(i, end)));
            }
            Some(end) => {
                if let Some((start, lazy)) = last_rep {
                    if c == '?' && !lazy {
                        last_rep = Some((start, true));
                        i = end;
                        continue;
                    }
                    return Err(format!(
                        "invalid nested repetition operator: `{}`",
                        text(start, end)
                    ));
                }
                last_rep = Some((i, false));
                i = end;
                continue;
            }
            None => last_rep = None,
        }
        match c {
            '\\' => i += 2,
            '[' => {
                class = Some(if chars.get(i + 1) == Some(&'^') {
                    i + 2
                } else {
                    i + 1
                });
                i += 1;
            }
            '(' if chars.get(i + 1) == Some(&'?')
                && !matches!(chars.get(i + 2), Some('P' | '<')) =>
            {
                let mut j = i + 2;
                while j < chars.len() && matches!(chars[j], 'i' | 'm' | 's' | 'U' | '-') {
                    j += 1;
                }
                if j < chars.len() && !matches!(chars[j], ':' | ')') {
                    return Err(format!(
                        "invalid or unsupported Perl syntax: `{}`",
                        text(i, j + 1)
                    ));
                }
                i += 1;
            }
            _ => i += 1,
        }
    }
    Ok(())
}

/// Go's `regexp/syntax` error text (`missing closing ): `(``) for the
/// `regex` crate's error on `pattern`: the kinds a typo gives are mapped,
/// with the part of the pattern Go names; others keep the crate's words.
fn regex_error(e: &regex::Error, pattern: &str) -> String {
    // The crate's error on the pattern as written names its span there.
    let full = match regex::Regex::new(pattern) {
        Err(orig) => orig.to_string(),
        Ok(_) => e.to_string(),
    };
    let lines: Vec<&str> = full.lines().collect();
    let last = lines
        .iter()
        .rev()
        .find(|l| l.starts_with("error:"))
        .map(|l| l.trim_start_matches("error:").trim().to_string())
        .unwrap_or_else(|| full.clone());
    // The span under the pattern: `    ^^^`, in characters.
    let chars: Vec<char> = pattern.chars().collect();
    let span = if lines.len() >= 4 && !pattern.contains('\n') {
        let carets = lines[2].get(4..).unwrap_or("");
        let start = carets.chars().take_while(|&c| c == ' ').count();
        let len = carets.chars().filter(|&c| c == '^').count();
        (start <= chars.len()).then(|| (start, (start + len).min(chars.len())))
    } else {
        None
    };
    let text = |from: usize, to: usize| -> String { chars[from..to].iter().collect() };
    let (code, expr) = match (last.as_str(), span) {
        (l, _) if l.contains("unclosed group") => ("missing closing )", pattern.to_string()),
        (l, _) if l.contains("unopened group") => ("unexpected )", pattern.to_string()),
        (l, Some((s, _))) if l.contains("unclosed character class") => {
            ("missing closing ]", text(s, chars.len()))
        }
        (l, Some((s, e)))
            if l.contains("invalid character class range") || l.contains("Unicode property") =>
        {
            ("invalid character class range", text(s, e))
        }
        (l, Some((s, e))) if l.contains("escape sequence") || l.contains("backreferences") => {
            ("invalid escape sequence", text(s, e))
        }
        (l, Some((s, e))) if l.contains("repetition operator missing expression") => {
            ("missing argument to repetition operator", text(s, e))
        }
        (l, Some((s, e))) if l.contains("repetition count") => ("invalid repeat count", text(s, e)),
        (l, Some((s, e)))
            if l.contains("capture group name") || l.contains("capture group character") =>
        {
            let from = chars[..s]
                .iter()
                .collect::<String>()
                .rfind("(?")
                .map_or(0, |b| pattern[..b].chars().count());
            ("invalid named capture", text(from, e.max(s)))
        }
        (l, Some((_, e))) if l.contains("flag") => {
            let from = chars[..e.min(chars.len())]
                .iter()
                .collect::<String>()
                .rfind("(?")
                .map_or(0, |b| pattern[..b].chars().count());
            (
                "invalid or unsupported Perl syntax",
                text(from, e.min(chars.len())),
            )
        }
        _ => return last,
    };
    format!("{code}: `{expr}`")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn humanizers() {
        assert_eq!(humanize(0.0), "0");
        assert_eq!(humanize(1234567.0), "1.235M");
        assert_eq!(humanize(0.001234), "1.234m");
        assert_eq!(humanize(f64::NAN), "NaN");
        assert_eq!(humanize(-1e30), "-1e+06Y");
        assert_eq!(humanize1024(1024.0), "1ki");
        assert_eq!(humanize1024(0.5), "0.5");
        assert_eq!(humanize_duration(0.0), "0s");
        assert_eq!(humanize_duration(90061.0), "1d 1h 1m 1s");
        assert_eq!(humanize_duration(-61.0), "-1m 1s");
        assert_eq!(humanize_duration(1.5), "1.5s");
        assert_eq!(humanize_duration(0.0015), "1.5ms");
    }

    #[test]
    fn hosts() {
        assert_eq!(split_host_port("a:1"), Some(("a", "1")));
        assert_eq!(split_host_port("[::1]:80"), Some(("::1", "80")));
        assert_eq!(split_host_port("::1"), None);
        assert_eq!(strip_domain("foo.example.com:9090"), "foo:9090");
        assert_eq!(strip_domain("10.0.0.1:9090"), "10.0.0.1:9090");
        assert_eq!(strip_domain("foo.bar"), "foo");
        assert_eq!(query_escape("a b&c/é"), "a+b%26c%2F%C3%A9");
    }

    #[test]
    fn regexps() {
        let re = compile("(\\w+)-(\\d+)").expect("valid");
        assert_eq!(re.replace_all("ab-12 é-3", "$2:$1"), "12:ab é-3");
        assert!(compile("(")
            .expect_err("invalid")
            .contains("missing closing )"));
    }
}
