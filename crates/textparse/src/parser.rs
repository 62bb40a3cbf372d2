//! The streaming OpenMetrics parser: one entry per line (a quoted name may
//! span lines), errors with line numbers.
//!
//! The grammar is that of Prometheus v3.9.1's OpenMetrics parser, restated:
//!
//! * a line is `# HELP name text`, `# TYPE name type`, `# UNIT name unit`,
//!   `# EOF`, or a sample; nothing else (no blank lines, no free comments);
//!   `# EOF` (optionally followed by one newline) must end the input;
//! * metadata names are `[a-zA-Z_:][a-zA-Z0-9_:]*` or a quoted string (which
//!   may contain raw newlines); then exactly one space and text to the end of
//!   the line. A type must be one of the eight OpenMetrics types; help text
//!   must be UTF-8 and has `\\`, `\"`, `\n` unescaped; a non-empty unit must
//!   end the (raw) metric name after a `_`;
//! * a sample is `name{labels} value[ timestamp][ # {labels} value[ timestamp]]`,
//!   single spaces, or `{"name", labels}`: in braces a quoted string followed
//!   by `,` or `}` is the metric name (once, anywhere in the braces); labels
//!   are `name="value"` with `name` `[a-zA-Z_][a-zA-Z0-9_]*` or quoted; a
//!   trailing comma is allowed;
//! * quoted names and values unescape `\\`, `\"`, `\n`; any other `\x` is
//!   kept as the two characters; a backslash before a newline is an error;
//!   label values are UTF-8, may not hold a raw newline, but may hold NUL;
//! * values and timestamps are Go floats without `p`, `_` (see `gofloat`);
//!   timestamps are seconds, turned into milliseconds as `int64(ts*1000)`
//!   and may not be NaN or infinite;
//! * for a histogram (the last `# TYPE` line seen, whatever its name) `le`
//!   values, and for a summary `quantile` values, that parse as floats are
//!   rewritten in canonical form (`1` → `1.0`);
//! * labels come out sorted by name, `__name__` included, as Prometheus'
//!   `labels.Labels`; empty values and duplicate names are kept here (the
//!   TSDB appender is what drops / rejects them: see `backfill`).

use std::borrow::Cow;

use crate::error::{describe, Error, ErrorKind};
use ferrite_model::gofloat::{
    format_om_float, parse_go_float, parse_prom_float, seconds_to_millis,
};
pub use ferrite_model::{Label, METRIC_NAME};

/// An OpenMetrics metric family type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MetricType {
    Counter,
    Gauge,
    Histogram,
    GaugeHistogram,
    Summary,
    Info,
    StateSet,
    Unknown,
}

impl MetricType {
    /// Parses the type word of a `# TYPE` line.
    pub fn from_text(s: &[u8]) -> Option<MetricType> {
        Some(match s {
            b"counter" => MetricType::Counter,
            b"gauge" => MetricType::Gauge,
            b"histogram" => MetricType::Histogram,
            b"gaugehistogram" => MetricType::GaugeHistogram,
            b"summary" => MetricType::Summary,
            b"info" => MetricType::Info,
            b"stateset" => MetricType::StateSet,
            b"unknown" => MetricType::Unknown,
            _ => return None,
        })
    }

    /// The type word, as Prometheus' metadata uses it.
    pub fn as_str(self) -> &'static str {
        match self {
            MetricType::Counter => "counter",
            MetricType::Gauge => "gauge",
            MetricType::Histogram => "histogram",
            MetricType::GaugeHistogram => "gaugehistogram",
            MetricType::Summary => "summary",
            MetricType::Info => "info",
            MetricType::StateSet => "stateset",
            MetricType::Unknown => "unknown",
        }
    }
}

/// An exemplar attached to a sample (backfill ignores them).
#[derive(Debug, Clone, PartialEq)]
pub struct Exemplar {
    /// Sorted by name. Names that are not UTF-8 are converted lossily.
    pub labels: Vec<Label>,
    pub value: f64,
    /// Milliseconds.
    pub timestamp: Option<i64>,
}

/// A sample line.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// The line the sample starts on.
    pub line: usize,
    /// `__name__` and the label pairs, sorted by name (stable: duplicates
    /// keep their order); may hold empty values and duplicate names.
    pub labels: Vec<Label>,
    /// Milliseconds since the epoch (the text has seconds).
    pub timestamp: Option<i64>,
    /// NaN is always `0x7ff8000000000001`, as in Prometheus.
    pub value: f64,
    pub exemplar: Option<Exemplar>,
}

impl Series {
    /// The metric name (`__name__`), if the series has one.
    pub fn metric_name(&self) -> Option<&str> {
        self.labels
            .iter()
            .find(|l| l.name == METRIC_NAME)
            .map(|l| l.value.as_str())
    }
}

/// One parsed line.
#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    /// `# HELP`: metric (unescaped, lossily UTF-8) and help text (unescaped).
    Help {
        line: usize,
        metric: String,
        text: String,
    },
    /// `# TYPE`.
    Type {
        line: usize,
        metric: String,
        kind: MetricType,
    },
    /// `# UNIT` (the unit may be empty).
    Unit {
        line: usize,
        metric: String,
        unit: String,
    },
    Series(Series),
}

/// What a quoted string may contain.
#[derive(Clone, Copy, PartialEq)]
enum Quoted {
    /// Metric and label names outside exemplars: raw newlines allowed, NUL not.
    Name,
    /// Label values of a sample: no raw newline; NUL allowed anywhere and
    /// skipped when looking for the byte a backslash escapes.
    Value,
    /// Exemplar names and values: neither raw newline nor NUL.
    Exemplar,
}

/// A streaming parser over an OpenMetrics byte buffer.
///
/// ```
/// use ferrite_textparse::{Entry, Parser};
///
/// let text = b"# TYPE up gauge\nup{job=\"a\"} 1 1700000000.5\n# EOF\n";
/// let mut p = Parser::new(text);
/// assert!(matches!(p.next_entry()?, Some(Entry::Type { .. })));
/// let Some(Entry::Series(s)) = p.next_entry()? else { panic!() };
/// assert_eq!(s.timestamp, Some(1_700_000_000_500));
/// assert_eq!(s.labels[0].value, "up");
/// assert_eq!(p.next_entry()?, None); // `# EOF`
/// # Ok::<(), ferrite_textparse::Error>(())
/// ```
pub struct Parser<'a> {
    buf: &'a [u8],
    /// Start of the next entry.
    pos: usize,
    /// Line of `pos`.
    line: usize,
    /// The type from the last `# TYPE` line (Prometheus keeps it across families).
    mtype: Option<MetricType>,
    state: State,
}

#[derive(Clone, PartialEq)]
enum State {
    Running,
    Eof,
    Failed(Error),
}

impl<'a> Parser<'a> {
    pub fn new(buf: &'a [u8]) -> Parser<'a> {
        Parser {
            buf,
            pos: 0,
            line: 1,
            mtype: None,
            state: State::Running,
        }
    }

    /// The type of the last `# TYPE` line read, if any.
    pub fn metric_type(&self) -> Option<MetricType> {
        self.mtype
    }

    /// The next entry; `Ok(None)` once `# EOF` has been read. After an error
    /// every call returns that error again.
    pub fn next_entry(&mut self) -> Result<Option<Entry>, Error> {
        match &self.state {
            State::Eof => return Ok(None),
            State::Failed(e) => return Err(e.clone()),
            State::Running => {}
        }
        let start = self.pos;
        let r = match self.buf.get(start) {
            None => Err(self.error_at(start, ErrorKind::MissingEof)),
            Some(b'#') => self.hash_line(),
            Some(&c) if is_metric_start(c) || c == b'{' => self.series().map(Some),
            Some(_) => Err(self.error_at(
                start,
                ErrorKind::InvalidLineStart(describe(self.buf, start)),
            )),
        };
        match r {
            Ok(Some((entry, end))) => {
                self.line += count_newlines(&self.buf[start..end]);
                self.pos = end;
                Ok(Some(entry))
            }
            Ok(None) => {
                self.state = State::Eof;
                Ok(None)
            }
            Err(e) => {
                self.state = State::Failed(e.clone());
                Err(e)
            }
        }
    }

    /// The line of byte `at` (at or after the current entry's start).
    fn line_of(&self, at: usize) -> usize {
        let at = at.min(self.buf.len());
        self.line + count_newlines(&self.buf[self.pos..at.max(self.pos)])
    }

    fn error_at(&self, at: usize, kind: ErrorKind) -> Error {
        let kind = match kind {
            // Running out of input is always the missing `# EOF`.
            _ if at >= self.buf.len() && !matches!(kind, ErrorKind::BadQuotedString) => {
                ErrorKind::MissingEof
            }
            k => k,
        };
        Error {
            line: self.line_of(at),
            kind,
        }
    }

    /// `# ...` lines. Returns `None` for `# EOF`.
    fn hash_line(&mut self) -> Result<Option<(Entry, usize)>, Error> {
        let b = self.buf;
        let start = self.pos;
        let rest = &b[start..];
        let keyword: &'static str = if rest.starts_with(b"# HELP ") {
            "HELP"
        } else if rest.starts_with(b"# TYPE ") {
            "TYPE"
        } else if rest.starts_with(b"# UNIT ") {
            "UNIT"
        } else if rest.starts_with(b"# EOF") {
            let mut end = start + 5;
            if b.get(end) == Some(&b'\n') {
                end += 1;
            }
            if end != b.len() {
                return Err(Error {
                    line: self.line_of(end),
                    kind: ErrorKind::DataAfterEof,
                });
            }
            return Ok(None);
        } else {
            return Err(self.error_at(start, ErrorKind::InvalidComment));
        };
        let line = self.line;

        // The metric name.
        let name_at = start + 7;
        let (raw_name, after_name) = match b.get(name_at) {
            Some(b'"') => {
                let end = self.scan_quoted(name_at, Quoted::Name)?;
                (&b[name_at + 1..end - 1], end)
            }
            Some(&c) if is_metric_start(c) => {
                let end = scan_while(b, name_at + 1, is_metric_char);
                (&b[name_at..end], end)
            }
            _ => return Err(self.error_at(name_at, ErrorKind::ExpectedMetadataName(keyword))),
        };

        // One space, then text up to the newline.
        let text_at = after_name;
        let nl = match b.get(text_at) {
            Some(b' ') => b[text_at..].iter().position(|&c| c == b'\n'),
            _ => None,
        };
        let Some(nl) = nl else {
            return Err(self.error_at(text_at, ErrorKind::ExpectedMetadataText(keyword)));
        };
        let text = &b[text_at + 1..text_at + nl];
        let end = text_at + nl + 1;
        let metric = String::from_utf8_lossy(&unescape(raw_name)).into_owned();

        let entry = match keyword {
            "TYPE" => {
                let Some(kind) = MetricType::from_text(text) else {
                    return Err(self.error_at(
                        text_at,
                        ErrorKind::InvalidMetricType(String::from_utf8_lossy(text).into_owned()),
                    ));
                };
                self.mtype = Some(kind);
                Entry::Type { line, metric, kind }
            }
            "HELP" => {
                if std::str::from_utf8(text).is_err() {
                    return Err(self.error_at(text_at, ErrorKind::InvalidUtf8("help text")));
                }
                let text = String::from_utf8_lossy(&unescape(text)).into_owned();
                Entry::Help { line, metric, text }
            }
            _ => {
                // A non-empty unit must be the suffix `_unit` of the raw name.
                let ok = text.is_empty()
                    || (raw_name.len() > text.len()
                        && raw_name.ends_with(text)
                        && raw_name[raw_name.len() - text.len() - 1] == b'_');
                let unit = String::from_utf8_lossy(text).into_owned();
                if !ok {
                    return Err(self.error_at(
                        text_at,
                        ErrorKind::UnitNotSuffix {
                            unit,
                            metric: String::from_utf8_lossy(raw_name).into_owned(),
                        },
                    ));
                }
                Entry::Unit { line, metric, unit }
            }
        };
        Ok(Some((entry, end)))
    }

    /// A sample line.
    fn series(&mut self) -> Result<(Entry, usize), Error> {
        let b = self.buf;
        let start = self.pos;
        let mut name: Option<String> = None;
        let mut pairs: Vec<Label> = Vec::new();
        let mut p = start;
        if is_metric_start(b[p]) {
            p = scan_while(b, p + 1, is_metric_char);
            name = Some(String::from_utf8_lossy(&b[start..p]).into_owned());
        }
        if b.get(p) == Some(&b'{') {
            p = self.labels(p + 1, &mut name, &mut pairs, false)?;
        }
        let Some(name) = name else {
            return Err(self.error_at(p, ErrorKind::MetricNameNotSet));
        };

        let (v, mut p) = self.number(p, "metric name or labels")?;
        let value = self.value(v, p, "sample")?;
        let mut timestamp = None;
        let mut exemplar = None;
        match b.get(p) {
            Some(b'\n') => p += 1,
            None => return Err(self.error_at(p, ErrorKind::MissingEof)),
            _ if b[p..].starts_with(b" # {") => {
                let (e, end) = self.exemplar(p + 4)?;
                exemplar = Some(e);
                p = end;
            }
            Some(b' ')
                if matches!(b.get(p + 1), Some(&c) if is_token_char(c))
                    && !b[p..].starts_with(b" # ") =>
            {
                let (ts, q) = self.number(p, "value")?;
                timestamp = Some(self.timestamp(ts, q, "sample")?);
                p = q;
                match b.get(p) {
                    Some(b'\n') => p += 1,
                    _ if b[p..].starts_with(b" # {") => {
                        let (e, end) = self.exemplar(p + 4)?;
                        exemplar = Some(e);
                        p = end;
                    }
                    _ => {
                        return Err(self
                            .error_at(p, ErrorKind::ExpectedLineEnd("timestamp", describe(b, p))))
                    }
                }
            }
            // Prometheus returns such a sample without a timestamp and fails
            // on what follows; backfill rejects it for the missing timestamp.
            // Either way it is this sample's line.
            _ => {
                return Err(Error {
                    line: self.line,
                    kind: ErrorKind::DanglingAfterValue(describe(b, p)),
                })
            }
        }

        let mut labels = Vec::with_capacity(pairs.len() + 1);
        labels.push(Label::new(METRIC_NAME, name));
        labels.extend(pairs);
        labels.sort_by(|x, y| x.name.cmp(&y.name));
        let series = Series {
            line: self.line,
            labels,
            timestamp,
            value,
            exemplar,
        };
        Ok((Entry::Series(series), p))
    }

    /// The labels after `{` at `p`, up to and including `}`; returns the
    /// offset after `}`. A quoted string followed by `,` or `}` sets the
    /// metric name (never in an exemplar).
    fn labels(
        &self,
        mut p: usize,
        name: &mut Option<String>,
        pairs: &mut Vec<Label>,
        exemplar: bool,
    ) -> Result<usize, Error> {
        let b = self.buf;
        let quoted = if exemplar {
            Quoted::Exemplar
        } else {
            Quoted::Name
        };
        loop {
            let label_name: Cow<'_, [u8]> = match b.get(p) {
                Some(b'}') => return Ok(p + 1),
                Some(b'"') => {
                    let end = self.scan_quoted(p, quoted)?;
                    let raw = &b[p + 1..end - 1];
                    if !exemplar && matches!(b.get(end), Some(b',' | b'}')) {
                        if name.is_some() {
                            return Err(self.error_at(end, ErrorKind::MetricNameAlreadySet));
                        }
                        *name = Some(self.name_string(raw, "metric name", p)?);
                        p = end + 1;
                        if b[end] == b'}' {
                            return Ok(p);
                        }
                        continue;
                    }
                    p = end;
                    unescape(raw)
                }
                Some(&c) if is_label_start(c) => {
                    let end = scan_while(b, p + 1, is_label_char);
                    let raw = &b[p..end];
                    p = end;
                    Cow::Borrowed(raw)
                }
                _ => return Err(self.error_at(p, ErrorKind::ExpectedLabelName(describe(b, p)))),
            };
            if b.get(p) != Some(&b'=') {
                let kind = if exemplar && matches!(b.get(p), Some(b',' | b'}')) {
                    ErrorKind::ExpectedLabelName(describe(b, p))
                } else {
                    ErrorKind::ExpectedEquals(describe(b, p))
                };
                return Err(self.error_at(p, kind));
            }
            p += 1;
            if b.get(p) != Some(&b'"') {
                return Err(self.error_at(p, ErrorKind::ExpectedLabelValue(describe(b, p))));
            }
            let end = self.scan_quoted(
                p,
                if exemplar {
                    Quoted::Exemplar
                } else {
                    Quoted::Value
                },
            )?;
            let raw_value = &b[p + 1..end - 1];
            if std::str::from_utf8(raw_value).is_err() {
                return Err(self.error_at(p, ErrorKind::InvalidUtf8("label value")));
            }
            let label_name = if exemplar {
                String::from_utf8_lossy(&label_name).into_owned()
            } else {
                match String::from_utf8(label_name.into_owned()) {
                    Ok(s) => s,
                    Err(_) => {
                        return Err(self.error_at(p, ErrorKind::NonUtf8Name("label name")));
                    }
                }
            };
            let mut value = String::from_utf8_lossy(&unescape(raw_value)).into_owned();
            if !exemplar {
                let mtype = self.mtype.unwrap_or(MetricType::Unknown);
                value = normalize_label_value(mtype, &label_name, value);
            }
            pairs.push(Label::new(label_name, value));
            p = end;
            match b.get(p) {
                Some(b',') => p += 1,
                Some(b'}') => return Ok(p + 1),
                _ => {
                    return Err(self.error_at(p, ErrorKind::ExpectedCommaOrBrace(describe(b, p))));
                }
            }
        }
    }

    /// ` # {` has been read; the exemplar up to and including its newline.
    fn exemplar(&self, p: usize) -> Result<(Exemplar, usize), Error> {
        let b = self.buf;
        let mut labels = Vec::new();
        let p = self.labels(p, &mut None, &mut labels, true)?;
        labels.sort_by(|x, y| x.name.cmp(&y.name));
        let (v, mut p) = self.number(p, "exemplar labels")?;
        let value = self.value(v, p, "exemplar")?;
        let mut timestamp = None;
        if b.get(p) == Some(&b' ') && matches!(b.get(p + 1), Some(&c) if is_token_char(c)) {
            let (ts, q) = self.number(p, "exemplar value")?;
            timestamp = Some(self.timestamp(ts, q, "exemplar")?);
            p = q;
        }
        match b.get(p) {
            Some(b'\n') => Ok((
                Exemplar {
                    labels,
                    value,
                    timestamp,
                },
                p + 1,
            )),
            _ => Err(self.error_at(
                p,
                ErrorKind::ExpectedLineEnd(
                    if timestamp.is_some() {
                        "exemplar timestamp"
                    } else {
                        "exemplar value"
                    },
                    describe(b, p),
                ),
            )),
        }
    }

    /// A space and a number token at `p`: returns the token's start (after
    /// the space) and end. Such a token is anything up to a space, newline
    /// or NUL; what it must look like is `value`'s and `timestamp`'s job.
    fn number(&self, p: usize, after: &'static str) -> Result<(usize, usize), Error> {
        let b = self.buf;
        if b.get(p) == Some(&b' ') && matches!(b.get(p + 1), Some(&c) if is_token_char(c)) {
            let end = scan_while(b, p + 2, is_token_char);
            Ok((p + 1, end))
        } else {
            Err(self.error_at(p, ErrorKind::ExpectedValue(after, describe(b, p))))
        }
    }

    /// The value token `start..end`.
    fn value(&self, start: usize, end: usize, what: &'static str) -> Result<f64, Error> {
        parse_prom_float(&self.buf[start..end]).map_err(|_| {
            let text = String::from_utf8_lossy(&self.buf[start..end]).into_owned();
            self.error_at(start - 1, ErrorKind::InvalidValue(what, text))
        })
    }

    /// The timestamp token `start..end`: seconds, returned as milliseconds.
    fn timestamp(&self, start: usize, end: usize, what: &'static str) -> Result<i64, Error> {
        match parse_prom_float(&self.buf[start..end]) {
            Ok(ts) if ts.is_finite() => Ok(seconds_to_millis(ts)),
            _ => {
                let text = String::from_utf8_lossy(&self.buf[start..end]).into_owned();
                Err(self.error_at(start - 1, ErrorKind::InvalidTimestamp(what, text)))
            }
        }
    }

    /// Unescapes and checks a name that must become a series label.
    fn name_string(&self, raw: &[u8], what: &'static str, at: usize) -> Result<String, Error> {
        String::from_utf8(unescape(raw).into_owned())
            .map_err(|_| self.error_at(at, ErrorKind::NonUtf8Name(what)))
    }

    /// The end (after the closing quote) of the quoted string at `at`.
    fn scan_quoted(&self, at: usize, kind: Quoted) -> Result<usize, Error> {
        let b = self.buf;
        let bad = || Error {
            line: self.line_of(at),
            kind: ErrorKind::BadQuotedString,
        };
        let mut i = at + 1;
        loop {
            match b.get(i) {
                None => return Err(bad()),
                Some(b'"') => return Ok(i + 1),
                Some(b'\\') => {
                    i += 1;
                    if kind == Quoted::Value {
                        while b.get(i) == Some(&0) {
                            i += 1;
                        }
                    }
                    match b.get(i) {
                        None | Some(b'\n') => return Err(bad()),
                        Some(0) if kind != Quoted::Value => return Err(bad()),
                        _ => i += 1,
                    }
                }
                Some(b'\n') if kind != Quoted::Name => return Err(bad()),
                Some(0) if kind != Quoted::Value => return Err(bad()),
                _ => i += 1,
            }
        }
    }
}

impl Iterator for Parser<'_> {
    type Item = Result<Entry, Error>;

    /// Entries until `# EOF`; an error is yielded once, then the iterator ends.
    fn next(&mut self) -> Option<Self::Item> {
        if matches!(self.state, State::Failed(_)) {
            return None;
        }
        self.next_entry().transpose()
    }
}

/// `le` of histograms and `quantile` of summaries (by the type of the last
/// `# TYPE` line) rewritten as OpenMetrics floats when they parse as Go
/// floats, as Prometheus' text parsers do (`1` becomes `1.0`).
pub(crate) fn normalize_label_value(mtype: MetricType, name: &str, value: String) -> String {
    let applies = matches!(
        (mtype, name),
        (MetricType::Histogram, "le") | (MetricType::Summary, "quantile")
    );
    if applies {
        if let Ok(f) = parse_go_float(value.as_bytes()) {
            return format_om_float(f);
        }
    }
    value
}

/// Unescapes `\\`, `\"` and `\n`; any other backslash stays as it is.
pub(crate) fn unescape(raw: &[u8]) -> Cow<'_, [u8]> {
    if !raw.contains(&b'\\') {
        return Cow::Borrowed(raw);
    }
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        if raw[i] == b'\\' {
            match raw.get(i + 1) {
                Some(b'\\') => out.push(b'\\'),
                Some(b'"') => out.push(b'"'),
                Some(b'n') => out.push(b'\n'),
                _ => {
                    out.push(b'\\');
                    i += 1;
                    continue;
                }
            }
            i += 2;
        } else {
            out.push(raw[i]);
            i += 1;
        }
    }
    Cow::Owned(out)
}

fn count_newlines(s: &[u8]) -> usize {
    s.iter().filter(|&&c| c == b'\n').count()
}

fn scan_while(b: &[u8], mut i: usize, f: impl Fn(u8) -> bool) -> usize {
    while i < b.len() && f(b[i]) {
        i += 1;
    }
    i
}

fn is_metric_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_' || c == b':'
}

fn is_metric_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b':'
}

fn is_label_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_'
}

fn is_label_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Bytes of a value or timestamp token: anything but space, newline, NUL.
fn is_token_char(c: u8) -> bool {
    !matches!(c, b' ' | b'\n' | 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backfill;

    fn entries(s: impl AsRef<[u8]>) -> Result<Vec<Entry>, Error> {
        Parser::new(s.as_ref()).collect()
    }

    fn series(s: &str) -> Vec<Series> {
        entries(s)
            .unwrap_or_else(|e| panic!("{s:?}: {e}"))
            .into_iter()
            .filter_map(|e| match e {
                Entry::Series(s) => Some(s),
                _ => None,
            })
            .collect()
    }

    fn labels(s: &Series) -> Vec<(&str, &str)> {
        s.labels
            .iter()
            .map(|l| (l.name.as_str(), l.value.as_str()))
            .collect()
    }

    /// The error's line and kind.
    fn err(s: impl AsRef<[u8]>) -> (usize, ErrorKind) {
        let e = entries(&s).expect_err(&String::from_utf8_lossy(s.as_ref()));
        (e.line, e.kind)
    }

    #[test]
    fn metadata_entries() {
        let e = entries(
            "# TYPE a_seconds counter\n# HELP a_seconds x \\\\ \\n \\\" \\t\n# UNIT a_seconds seconds\n# HELP \"a.b\" \n# EOF\n",
        )
        .unwrap();
        assert_eq!(
            e,
            vec![
                Entry::Type {
                    line: 1,
                    metric: "a_seconds".into(),
                    kind: MetricType::Counter
                },
                Entry::Help {
                    line: 2,
                    metric: "a_seconds".into(),
                    text: "x \\ \n \" \\t".into()
                },
                Entry::Unit {
                    line: 3,
                    metric: "a_seconds".into(),
                    unit: "seconds".into()
                },
                Entry::Help {
                    line: 4,
                    metric: "a.b".into(),
                    text: "".into()
                },
            ]
        );
        for t in [
            "counter",
            "gauge",
            "histogram",
            "gaugehistogram",
            "summary",
            "info",
            "stateset",
            "unknown",
        ] {
            let kind = MetricType::from_text(t.as_bytes()).unwrap();
            assert_eq!(kind.as_str(), t);
        }
    }

    #[test]
    fn metadata_errors() {
        assert_eq!(
            err("# TYPE a foo\n# EOF\n"),
            (1, ErrorKind::InvalidMetricType("foo".into()))
        );
        assert!(matches!(
            err("# TYPE a counter \n# EOF\n").1,
            ErrorKind::InvalidMetricType(_)
        ));
        assert!(matches!(
            err("# HELP a\n# EOF\n").1,
            ErrorKind::ExpectedMetadataText("HELP")
        ));
        assert!(matches!(
            err(b"# HELP a \xff\n# EOF\n").1,
            ErrorKind::InvalidUtf8(_)
        ));
        assert!(matches!(
            err("# UNIT a_s b\n# EOF\n").1,
            ErrorKind::UnitNotSuffix { .. }
        ));
        assert!(matches!(
            err("# UNIT as s\n# EOF\n").1,
            ErrorKind::UnitNotSuffix { .. }
        ));
        assert!(matches!(
            err("# UNIT s s\n# EOF\n").1,
            ErrorKind::UnitNotSuffix { .. }
        ));
        assert!(matches!(
            err("# HELP 1a x\n# EOF\n").1,
            ErrorKind::ExpectedMetadataName("HELP")
        ));
        assert_eq!(err("# a comment\n# EOF\n").1, ErrorKind::InvalidComment);
        assert_eq!(err("#HELP a b\n# EOF\n").1, ErrorKind::InvalidComment);
    }

    #[test]
    fn eof_rules() {
        assert_eq!(entries("# EOF").unwrap(), vec![]);
        assert_eq!(err(""), (1, ErrorKind::MissingEof));
        assert_eq!(err("a 1 1\n"), (2, ErrorKind::MissingEof));
        assert_eq!(err("a 1 1"), (1, ErrorKind::MissingEof));
        assert_eq!(err("a 1 1\n# EOF\n\n"), (3, ErrorKind::DataAfterEof));
        assert_eq!(err("# EOF\na 1 1\n"), (2, ErrorKind::DataAfterEof));
        assert_eq!(err("# EOFx\n"), (1, ErrorKind::DataAfterEof));
        assert_eq!(err("# EOF \n"), (1, ErrorKind::DataAfterEof));
        // Nothing after `# EOF` is looked at, and the parser stays done.
        let mut p = Parser::new(b"# EOF\n");
        assert_eq!(p.next_entry(), Ok(None));
        assert_eq!(p.next_entry(), Ok(None));
    }

    #[test]
    fn samples_labels_sorted_with_name() {
        let s = series("a{z=\"1\",b=\"2\",A=\"3\",__x=\"4\"} 1 1\n# EOF\n");
        assert_eq!(
            labels(&s[0]),
            vec![
                ("A", "3"),
                ("__name__", "a"),
                ("__x", "4"),
                ("b", "2"),
                ("z", "1")
            ]
        );
        assert_eq!(s[0].metric_name(), Some("a"));
        // Quoted metric name anywhere in the braces, quoted label names.
        let s = series("{a=\"1\",\"my.m\",\"c d\"=\"2\",} 1 1\n{\"x\"} 2 2\n# EOF\n");
        assert_eq!(
            labels(&s[0]),
            vec![("__name__", "my.m"), ("a", "1"), ("c d", "2")]
        );
        assert_eq!(labels(&s[1]), vec![("__name__", "x")]);
        // Empty braces, trailing comma, colons in names.
        let s = series("a:b{} 1 1\nc{d=\"e\",} 1 1\n# EOF\n");
        assert_eq!(labels(&s[0]), vec![("__name__", "a:b")]);
        assert_eq!(labels(&s[1]), vec![("__name__", "c"), ("d", "e")]);
    }

    #[test]
    fn escapes_like_prometheus() {
        let s = series("a{b=\"\\\\ \\\" \\n \\t \\x é\"} 1 1\n{\"q\\\"n\\\\\"} 1 1\n# EOF\n");
        assert_eq!(s[0].labels[1].value, "\\ \" \n \\t \\x é");
        assert_eq!(s[1].labels[0].value, "q\"n\\");
        // Raw newline in a quoted name: allowed, and counted for later lines.
        let s = series("{\"a\nb\"} 1 1\nc 1 1\n# EOF\n");
        assert_eq!(s[0].labels[0].value, "a\nb");
        assert_eq!((s[0].line, s[1].line), (1, 3));
        // NUL inside label values and help text.
        let s = series("# HELP a x\0y\na{b=\"\0c\0\"} 1 1\n# EOF\n");
        assert_eq!(s[0].labels[1].value, "\0c\0");
        assert_eq!(
            err("a{b=\"c\\\nd\"} 1 1\n# EOF\n"),
            (1, ErrorKind::BadQuotedString)
        );
        assert_eq!(
            err("a{b=\"c\nd\"} 1 1\n# EOF\n"),
            (1, ErrorKind::BadQuotedString)
        );
        assert_eq!(err("x 1 1\n{\"a\nb\nc"), (2, ErrorKind::BadQuotedString));
        assert_eq!(
            err("{\"a\0\"} 1 1\n# EOF\n"),
            (1, ErrorKind::BadQuotedString)
        );
        assert!(matches!(
            err(b"a{b=\"\xff\"} 1 1\n# EOF\n").1,
            ErrorKind::InvalidUtf8(_)
        ));
        assert!(matches!(
            err(b"{\"\xff\"} 1 1\n# EOF\n").1,
            ErrorKind::NonUtf8Name(_)
        ));
    }

    #[test]
    fn label_syntax_errors() {
        let cases = [
            "a{1=\"b\"} 1 1\n",
            "a{b-c=\"d\"} 1 1\n",
            "a{b=\"c\", d=\"e\"} 1 1\n",
            "a{b=c} 1 1\n",
            "a{b=\"c\",,} 1 1\n",
            "a{,} 1 1\n",
            "a{b=\"c\"d=\"e\"} 1 1\n",
            "a{b} 1 1\n",
            "{abc} 1 1\n",
            "a {b=\"c\"} 1 1\n",
        ];
        for c in cases {
            let (line, _) = err(format!("x 1 1\n{c}# EOF\n"));
            assert_eq!(line, 2, "{c:?}");
        }
        assert_eq!(
            err("a{\"b\"} 1 1\n# EOF\n").1,
            ErrorKind::MetricNameAlreadySet
        );
        assert_eq!(
            err("{\"a\",\"b\"} 1 1\n# EOF\n").1,
            ErrorKind::MetricNameAlreadySet
        );
        assert_eq!(err("{b=\"c\"} 1 1\n# EOF\n").1, ErrorKind::MetricNameNotSet);
        assert_eq!(
            err("{__name__=\"c\"} 1 1\n# EOF\n").1,
            ErrorKind::MetricNameNotSet
        );
        // Error after a multi-line name: the line where it is.
        assert_eq!(err("{\"a\nb\nc\",d} 1 1\n# EOF\n").0, 3);
    }

    #[test]
    fn values_and_timestamps() {
        let s = series(
            "a NaN 1.5\na -Inf -1.5\na +inf 1.001\na .5 1e3\na -0 0.0009\na 1E2 -0.0009\na 1 1700000000.123\n# EOF\n",
        );
        let got: Vec<(u64, Option<i64>)> =
            s.iter().map(|s| (s.value.to_bits(), s.timestamp)).collect();
        assert_eq!(
            got,
            vec![
                (0x7ff8000000000001, Some(1500)),
                (f64::NEG_INFINITY.to_bits(), Some(-1500)),
                (f64::INFINITY.to_bits(), Some(1000)),
                (0.5f64.to_bits(), Some(1_000_000)),
                ((-0.0f64).to_bits(), Some(0)),
                (100f64.to_bits(), Some(0)),
                (1f64.to_bits(), Some(1_700_000_000_123)),
            ]
        );
        assert_eq!(series("a 1\n# EOF\n")[0].timestamp, None);
        assert_eq!(series("a 1 1e17\n# EOF\n")[0].timestamp, Some(i64::MIN));
        for bad in ["x", "0x1p3", "1_0", "1e309", "-nan", "1 ", "1\t"] {
            assert!(
                matches!(
                    err(format!("a {bad} 1\n# EOF\n")).1,
                    ErrorKind::InvalidValue(..)
                        | ErrorKind::ExpectedValue(..)
                        | ErrorKind::DanglingAfterValue(_)
                ),
                "{bad:?}"
            );
        }
        for bad in ["NaN", "+Inf", "1e400", "x"] {
            assert!(
                matches!(
                    err(format!("a 1 {bad}\n# EOF\n")).1,
                    ErrorKind::InvalidTimestamp(..)
                ),
                "{bad:?}"
            );
        }
        assert!(matches!(err("a\n# EOF\n").1, ErrorKind::ExpectedValue(..)));
        assert!(matches!(
            err("a  1 1\n# EOF\n").1,
            ErrorKind::ExpectedValue(..)
        ));
        assert!(matches!(
            err("a 1 1 1\n# EOF\n").1,
            ErrorKind::ExpectedLineEnd(..)
        ));
        assert!(matches!(
            err("a 1 1 \n# EOF\n").1,
            ErrorKind::ExpectedLineEnd(..)
        ));
        assert!(matches!(
            err("a 1 \n# EOF\n").1,
            ErrorKind::DanglingAfterValue(_)
        ));
        assert!(matches!(
            err("a 1 1\r\n# EOF\n").1,
            ErrorKind::InvalidTimestamp(..)
        ));
        assert!(matches!(
            err("\na 1 1\n# EOF\n").1,
            ErrorKind::InvalidLineStart(_)
        ));
    }

    #[test]
    fn exemplars() {
        let s = series("a 1 1 # {b=\"c\",\"d e\"=\"f\"} 2 3.5\na 1 # {} NaN\n# EOF\n");
        let e = s[0].exemplar.as_ref().unwrap();
        assert_eq!(e.labels, vec![Label::new("b", "c"), Label::new("d e", "f")]);
        assert_eq!((e.value, e.timestamp), (2.0, Some(3500)));
        let e = s[1].exemplar.as_ref().unwrap();
        assert!(e.labels.is_empty() && e.value.is_nan() && e.timestamp.is_none());
        assert_eq!(s[1].timestamp, None);
        for bad in [
            "# {b=\"c\"}",
            "#  {} 1",
            "# b 1",
            "# {\"x\"} 1",
            "# {1=\"x\"} 1",
            "# {} 1 NaN",
            "# {} 1 1 1",
            "# {} 1 ",
            "# {b=\"\0\"} 1",
        ] {
            assert!(entries(format!("a 1 1 {bad}\n# EOF\n")).is_err(), "{bad:?}");
        }
        assert!(entries(b"a 1 1 # {b=\"\xff\"} 1\n# EOF\n").is_err());
    }

    #[test]
    fn le_and_quantile_follow_the_last_type() {
        let s = series(
            "# TYPE h histogram\nh_bucket{le=\"1\"} 1 1\nh_bucket{le=\"0x1p-2\"} 1 1\nh_bucket{le=\"x\"} 1 1\nh{quantile=\"1\"} 1 1\n\
             # TYPE s summary\ns{quantile=\"0.50\"} 1 1\nother{quantile=\"1e-7\"} 1 1\nh_bucket{le=\"1\"} 1 1\n# EOF\n",
        );
        let v: Vec<&str> = s
            .iter()
            .map(|s| s.labels.last().unwrap().value.as_str())
            .collect();
        assert_eq!(v, vec!["1.0", "0.25", "x", "1", "0.5", "1e-07", "1"]);
    }

    #[test]
    fn errors_carry_lines() {
        assert_eq!(err("a 1 1\nb 1 1\nc{ 1 1\n# EOF\n").0, 3);
        let e = entries("a 1 1\nb x 1\n# EOF\n").unwrap_err();
        assert!(
            e.to_string().starts_with("line 2: invalid sample value"),
            "{e}"
        );
        // After an error the iterator ends and next_entry repeats the error.
        let mut p = Parser::new(b"a x 1\n# EOF\n");
        let first = p.next_entry().unwrap_err();
        assert_eq!(p.next_entry().unwrap_err(), first);
        let mut p = Parser::new(b"a x 1\n# EOF\n");
        assert!(p.next().unwrap().is_err());
        assert!(p.next().is_none());
    }

    #[test]
    fn backfill_rules() {
        let e = backfill::samples(b"a 1 1\nb 2\n# EOF\n").unwrap_err();
        assert!(matches!(
            (e.line, e.kind),
            (2, ErrorKind::MissingTimestamp(_))
        ));
        // Parse errors anywhere come before label-set errors.
        let e = backfill::samples(b"a{b=\"1\",b=\"2\"} 1 1\nc x 1\n# EOF\n").unwrap_err();
        assert_eq!(e.line, 2);
        let e = backfill::samples(b"a{b=\"1\",b=\"2\"} 1 1\n# EOF\n").unwrap_err();
        assert_eq!(e.kind, ErrorKind::DuplicateLabelName("b".into()));
        let e = backfill::samples(b"{\"\"} 1 1\n# EOF\n").unwrap_err();
        assert_eq!(e.kind, ErrorKind::EmptyLabelSet);
        let e = backfill::samples(b"a{\"\"=\"x\"} 1 1\n# EOF\n").unwrap_err();
        assert_eq!(e.kind, ErrorKind::EmptyLabelName);
        let s =
            backfill::samples(b"a{b=\"\",c=\"1\"} 1 1\na{b=\"\",b=\"1\"} 2 2\n# EOF\n").unwrap();
        assert_eq!(
            s[0].labels,
            vec![Label::new("__name__", "a"), Label::new("c", "1")]
        );
        assert_eq!(s[1].labels, vec![Label::new("__name__", "a")]);
        assert_eq!(backfill::time_range(b"# EOF\n").unwrap(), None);
        assert_eq!(
            backfill::time_range(b"a 1 3\na 1 -2\n# EOF\n").unwrap(),
            Some((-2000, 3000))
        );
        // _created lines are plain samples.
        let s =
            backfill::samples(b"# TYPE c counter\nc_total 1 10\nc_created 5 10\n# EOF\n").unwrap();
        assert_eq!(s.len(), 2);
    }
}
