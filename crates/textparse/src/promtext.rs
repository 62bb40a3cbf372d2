//! The Prometheus text exposition format (0.0.4), parsed as Prometheus
//! v3.16.0's scrape loop parses it.
//!
//! [`TextParser`] streams [`TextEntry`]s out of a scraped body without
//! allocating: a series comes out as its raw bytes (the name and the `{...}`
//! part exactly as written), its value and its timestamp, so that a scrape
//! cache keyed by those bytes finds a known series without reading its
//! labels. [`TextParser::labels`] reads the labels of the last series when
//! the cache does not know it.
//!
//! What Prometheus accepts, this accepts (and the reverse), down to its
//! quirks, which a user's exposition may depend on:
//! - a label value (and a quoted name) may span lines; a label value may
//!   contain NUL bytes;
//! - label pairs need no commas between them (`{a="1" b="2"}`), and blanks
//!   may stand around every token in braces and between a name and `{`;
//! - blanks before a series' name are part of the name;
//! - NUL bytes right after a label value's closing quote are taken into the
//!   value's token, which is then cut one byte short at each end
//!   (`{b="x"\0}` gives `b` the value `x"`);
//! - NUL bytes are stepped over inside the `HELP`/`TYPE` of a `# ` line and
//!   the blanks after it, in the rest of a `# ` comment and in metadata
//!   text (not at their first byte);
//! - a NUL byte at the start of a line, right after `#` and its blanks, or
//!   anywhere in a comment with no blank after its `#`, ends the input
//!   without an error (right after a metadata name, it is an error:
//!   `linebreak expected after metadata`);
//! - the metadata text starts one byte after the name, whatever that byte
//!   is (`# TYPE a  gauge` names type ` gauge`, an error);
//! - timestamps are digits only (no sign), values anything Go's
//!   `strconv.ParseFloat` reads except `p`, `P` and `_`;
//! - `le` of a histogram and `quantile` of a summary are rewritten as floats
//!   are in OpenMetrics (`1` becomes `1.0`), after the last `# TYPE` line,
//!   whatever metric it named.
//!
//! Errors carry Prometheus' own messages, which a target's `lastError`
//! shows.
//!
//! `interop/promtext_test.go` checks all of this against Prometheus' own
//! parser, entry by entry. One difference is deliberate: a name given as a
//! quoted string (the metric name in braces, or a label name) that is not
//! UTF-8 is handed out by Prometheus, which rejects the series only when it
//! validates its labels; here [`TextParser::labels`] returns an error for
//! it, as labels are kept as `String`s.

mod lexer;

use std::borrow::Cow;

use ferrite_model::gofloat::{parse_prom_float, FloatError, NORMAL_NAN_BITS};
use ferrite_model::goquote::quote_bytes;

use crate::parser::{normalize_label_value, unescape, MetricType};
use lexer::{Lexer, Token};

/// One entry of an exposition.
#[derive(Debug, Clone, PartialEq)]
pub enum TextEntry<'a> {
    /// `# HELP name text`: the name (unquoted, escapes kept) and the text
    /// with `\\` and `\n` unescaped.
    Help {
        metric: &'a [u8],
        text: Cow<'a, [u8]>,
    },
    /// `# TYPE name type`.
    Type { metric: &'a [u8], kind: MetricType },
    /// Any other `#` line: its text from the `#` to the end of the line.
    Comment { text: &'a [u8] },
    /// A sample.
    Series(TextSeries<'a>),
}

/// A sample as written: read its labels with [`TextParser::labels`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TextSeries<'a> {
    /// The series' bytes from the start of the line to the end of its
    /// name or labels: the key of a scrape cache.
    pub series: &'a [u8],
    /// The value (NaN has Prometheus' bit pattern).
    pub value: f64,
    /// The timestamp in milliseconds, when given.
    pub timestamp: Option<i64>,
}

/// Why an exposition could not be read: Prometheus' message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TextError(pub String);

/// A line [`TextParser::peek_line`] looked at.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PeekedLine<'a> {
    /// What it looks like.
    pub kind: PeekedLineKind<'a>,
    start: usize,
    newline: usize,
}

/// What a [`PeekedLine`] looks like.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PeekedLineKind<'a> {
    /// A `# HELP` line.
    Help,
    /// A `# TYPE` line.
    Type,
    /// A series line: its series part (not checked), value and timestamp.
    Series(TextSeries<'a>),
}

impl<'a> PeekedLine<'a> {
    /// The whole line, without its newline.
    pub fn bytes(&self, parser: &TextParser<'a>) -> &'a [u8] {
        let buf = parser.lexer.buf;
        &buf[self.start..self.newline]
    }
}

/// A label of the last series, as byte ranges of the buffer.
#[derive(Debug, Clone, Copy)]
struct LabelSpan {
    name: (usize, usize),
    value: (usize, usize),
}

/// The streaming parser; see the module documentation.
pub struct TextParser<'a> {
    lexer: Lexer<'a>,
    /// Where the current entry started.
    start: usize,
    /// The last series' metric name, if it has one.
    name: Option<(usize, usize)>,
    labels: Vec<LabelSpan>,
    /// The type of the last `# TYPE` line.
    mtype: MetricType,
    /// Whether common series lines take the one-pass path (always, but
    /// in the tests that compare both paths).
    fast: bool,
}

impl<'a> TextParser<'a> {
    /// A parser over a scraped body. A body without a final newline is
    /// read as if it had one, as Prometheus reads it.
    pub fn new(body: &'a [u8]) -> Self {
        TextParser {
            lexer: Lexer::new(body),
            start: 0,
            name: None,
            labels: Vec::new(),
            mtype: MetricType::Unknown,
            fast: true,
        }
    }

    /// The next entry; `None` at the end of the input.
    pub fn next_entry(&mut self) -> Result<Option<TextEntry<'a>>, TextError> {
        loop {
            self.start = self.lexer.i;
            self.name = None;
            self.labels.clear();
            if self.fast {
                if let Some(series) = self.common_series() {
                    return Ok(Some(TextEntry::Series(series)));
                }
                self.labels.clear();
                if let Some(metadata) = self.common_metadata() {
                    return Ok(Some(metadata));
                }
            }
            let entry = match self.token() {
                Token::Eof => return Ok(None),
                Token::Linebreak => continue,
                t @ (Token::Help | Token::Type) => self.metadata(t)?,
                Token::Comment => {
                    let text = self.lexer.token_text();
                    self.expect_linebreak("linebreak expected after comment")?;
                    TextEntry::Comment { text }
                }
                Token::BraceOpen => {
                    self.label_pairs()?;
                    let series_end = self.lexer.i;
                    let t = self.token();
                    self.series(t, series_end)?
                }
                Token::MetricName => {
                    // From the line's start: blanks before the name are
                    // part of it, as in Prometheus.
                    self.name = Some((self.start, self.lexer.i));
                    let mut series_end = self.lexer.i;
                    let mut t = self.token();
                    if t == Token::BraceOpen {
                        self.label_pairs()?;
                        series_end = self.lexer.i;
                        t = self.token();
                    }
                    self.series(t, series_end)?
                }
                t => return Err(self.unexpected("expected a valid start token", t)),
            };
            return Ok(Some(entry));
        }
    }

    /// A series line in its common form, read in one pass without the
    /// lexer: `name{a="x",b="y"} value [timestamp]` and a newline, with
    /// one run of blanks between the series and the value (and the value
    /// and the timestamp) and no other, no escapes, NUL bytes or
    /// non-ASCII bytes in label values, a value that parses and a
    /// timestamp that fits. Anything else is `None`, the lexer untouched
    /// (some of the line's label spans may be pushed), and the line is
    /// read token by token: on the lines this takes, both read the same.
    fn common_series(&mut self) -> Option<TextSeries<'a>> {
        let buf = self.lexer.buf;
        let start = self.lexer.i;
        let mut i = metric_name_end(buf, start)?;
        let name_end = i;
        if buf.get(i) == Some(&b'{') {
            i = self.common_labels(i + 1)?;
        }
        let series_end = i;
        let (value, timestamp, newline) = common_sample(buf, series_end)?;
        self.past_line(newline);
        self.name = Some((start, name_end));
        Some(TextSeries {
            series: &buf[start..series_end],
            value,
            timestamp,
        })
    }

    /// Moves past the line that ends at the newline at `newline`: the
    /// lexer is at the next line's start, in the state a line's end
    /// leaves it in.
    fn past_line(&mut self, newline: usize) {
        self.lexer.i = newline + 1;
        self.lexer.start = newline;
    }

    /// The next line, looked at without reading it, if it is a `# HELP`
    /// or `# TYPE` line or a series line in the common form of
    /// [`TextParser::next_entry`]'s one-pass path; `None` for anything
    /// else.
    ///
    /// A series line's series part is found without reading its labels
    /// (up to the first `}` that a blank follows) and is not checked: it
    /// is for a caller that knows those exact bytes from an earlier
    /// [`TextParser::next_entry`] (a scrape cache). Bytes read as a
    /// series part once, from a line's start, end it the same way
    /// whatever follows, so such a line reads as that entry; the caller
    /// then moves past it with [`TextParser::take_peeked`], and reads
    /// any other line with `next_entry` as usual. Likewise a metadata
    /// line whose bytes the caller has seen read before (only one with
    /// an unquoted name is peeked: a quoted one may span lines).
    pub fn peek_line(&self) -> Option<PeekedLine<'a>> {
        let buf = self.lexer.buf;
        let start = self.lexer.i;
        let line = match buf.get(start..start + 7) {
            Some(b"# HELP ") => PeekedLineKind::Help,
            Some(b"# TYPE ") => PeekedLineKind::Type,
            _ => {
                let (series, newline) = peek_series(buf, start)?;
                return Some(PeekedLine {
                    kind: PeekedLineKind::Series(series),
                    start,
                    newline,
                });
            }
        };
        // An unquoted name and a blank: the entry is this one line (a
        // quoted name may span lines).
        let name_end = metric_name_end(buf, start + 7)?;
        if buf.get(name_end) != Some(&b' ') {
            return None;
        }
        let newline = name_end + memchr::memchr(b'\n', buf.get(name_end..)?)?;
        Some(PeekedLine {
            kind: line,
            start,
            newline,
        })
    }

    /// Moves past a line [`TextParser::peek_line`] gave, as
    /// [`TextParser::next_entry`] would have read it; `kind` is the type
    /// a `# TYPE` line names.
    pub fn take_peeked(&mut self, line: &PeekedLine<'a>, kind: Option<MetricType>) {
        self.start = line.start;
        self.name = None;
        self.labels.clear();
        if let Some(kind) = kind {
            self.mtype = kind;
        }
        self.past_line(line.newline);
    }

    /// A `# HELP` or `# TYPE` line in its common form, read in one pass:
    /// `# HELP name text` or `# TYPE name type` and a newline, single
    /// spaces, an unquoted name, text that starts with neither a blank nor
    /// a NUL byte, valid UTF-8 help and a known type. Anything else is
    /// `None`, the lexer untouched, and the line is read token by token:
    /// on the lines this takes, both read the same.
    fn common_metadata(&mut self) -> Option<TextEntry<'a>> {
        let buf = self.lexer.buf;
        let start = self.lexer.i;
        let rest = buf.get(start..)?;
        let help = match rest.get(..7)? {
            b"# HELP " => true,
            b"# TYPE " => false,
            _ => return None,
        };
        let name_start = start + 7;
        let i = metric_name_end(buf, name_start)?;
        let name_end = i;
        if *buf.get(i)? != b' ' || matches!(*buf.get(i + 1)?, b' ' | b'\t' | b'\n' | 0) {
            return None;
        }
        let text_start = i + 1;
        let newline = text_start + memchr::memchr(b'\n', buf.get(text_start..)?)?;
        let text = &buf[text_start..newline];
        let metric = &buf[name_start..name_end];
        let entry = if help {
            std::str::from_utf8(text).ok()?;
            TextEntry::Help {
                metric,
                text: unescape_help(text),
            }
        } else {
            let kind = type_named(text)?;
            self.mtype = kind;
            TextEntry::Type { metric, kind }
        };
        self.past_line(newline);
        Some(entry)
    }

    /// [`TextParser::common_series`]' label pairs from just after `{`;
    /// the index after `}`.
    fn common_labels(&mut self, mut i: usize) -> Option<usize> {
        let buf = self.lexer.buf;
        loop {
            let c = *buf.get(i)?;
            if c == b'}' {
                return Some(i + 1);
            }
            if !lexer::is_label_start(c) {
                return None;
            }
            let name_start = i;
            i += 1;
            while lexer::is_label_char(*buf.get(i)?) {
                i += 1;
            }
            let name_end = i;
            if buf.get(i..i + 2)? != b"=\"" {
                return None;
            }
            i += 2;
            let value_start = i;
            while lexer::is_plain_label_value(*buf.get(i)?) {
                i += 1;
            }
            if buf[i] != b'"' {
                return None;
            }
            self.labels.push(LabelSpan {
                name: (name_start, name_end),
                value: (value_start, i),
            });
            i += 1;
            match *buf.get(i)? {
                b',' => i += 1,
                b'}' => {}
                _ => return None,
            }
        }
    }

    /// The type of the last `# TYPE` line (unknown before any).
    pub fn metric_type(&self) -> MetricType {
        self.mtype
    }

    /// The labels of the last series, `__name__` first then as written,
    /// unescaped, with `le`/`quantile` rewritten (see the module
    /// documentation); not sorted, not checked for duplicates. A name that
    /// is not UTF-8 is an error Prometheus gives later, when it validates
    /// the label set (`invalid metric name or label names`).
    pub fn labels(&self, out: &mut Vec<(String, String)>) -> Result<(), TextError> {
        out.clear();
        let Some((from, to)) = self.name else {
            return Ok(());
        };
        out.push(("__name__".to_owned(), self.owned(from, to, "metric name")?));
        for l in &self.labels {
            let name = self.owned(l.name.0, l.name.1, "label name")?;
            let value = self.owned(l.value.0, l.value.1, "label value")?;
            let value = normalize_label_value(self.mtype, &name, value);
            out.push((name, value));
        }
        Ok(())
    }

    /// The bytes `from..to` unescaped as a string.
    fn owned(&self, from: usize, to: usize, what: &str) -> Result<String, TextError> {
        let raw = self.lexer.text(from, to);
        String::from_utf8(unescape(raw).into_owned()).map_err(|e| {
            TextError(format!(
                "invalid {what} {}: not valid UTF-8",
                quote_bytes(e.as_bytes())
            ))
        })
    }

    /// The next token that is not whitespace.
    fn token(&mut self) -> Token {
        loop {
            let t = self.lexer.next_token();
            if t != Token::Whitespace {
                return t;
            }
        }
    }

    /// `# HELP` or `# TYPE` after its keyword.
    fn metadata(&mut self, keyword: Token) -> Result<TextEntry<'a>, TextError> {
        let t = self.token();
        if t != Token::MetricName {
            let what = format!("expected metric name after {}", keyword.name());
            return Err(self.unexpected(&what, t));
        }
        let (mut from, mut to) = (self.lexer.start, self.lexer.i);
        let buf = self.lexer.buf;
        if buf.get(from) == Some(&b'"') && to > from + 1 && buf.get(to - 1) == Some(&b'"') {
            from += 1;
            to -= 1;
        }
        let metric = self.lexer.text(from, to);
        let t = self.token();
        if t != Token::Text {
            return Err(TextError(format!(
                "expected text in {}, got {}",
                keyword.name(),
                t.name()
            )));
        }
        let raw = self.lexer.token_text();
        let text = raw.get(1..).unwrap_or(&[]);
        let entry = if keyword == Token::Type {
            let Some(kind) = type_named(text) else {
                return Err(TextError(format!(
                    "invalid metric type {}",
                    quote_bytes(text)
                )));
            };
            self.mtype = kind;
            TextEntry::Type { metric, kind }
        } else {
            if std::str::from_utf8(text).is_err() {
                return Err(TextError(format!(
                    "help text {} is not a valid utf8 string",
                    quote_bytes(text)
                )));
            }
            TextEntry::Help {
                metric,
                text: unescape_help(text),
            }
        };
        self.expect_linebreak("linebreak expected after metadata")?;
        Ok(entry)
    }

    fn expect_linebreak(&mut self, what: &str) -> Result<(), TextError> {
        match self.token() {
            Token::Linebreak => Ok(()),
            t => Err(self.unexpected(what, t)),
        }
    }

    /// The label pairs after `{`, up to and with `}`; a quoted string
    /// alone is the metric name.
    fn label_pairs(&mut self) -> Result<(), TextError> {
        let mut t = self.token();
        loop {
            let (mut from, mut to) = (self.lexer.start, self.lexer.i);
            let quoted = match t {
                Token::BraceClose => return Ok(()),
                Token::LabelName => false,
                Token::QuotedString => true,
                t => return Err(self.unexpected("expected label name", t)),
            };
            t = self.token();
            if quoted && matches!(t, Token::Comma | Token::BraceClose) {
                if self.name.is_some() {
                    return Err(TextError(format!(
                        "metric name already set while parsing: {}",
                        self.lexer.quoted_text(self.start, self.lexer.i)
                    )));
                }
                self.name = Some((from + 1, to - 1));
                if t == Token::BraceClose {
                    return Ok(());
                }
                t = self.token();
                continue;
            }
            if quoted {
                from += 1;
                to -= 1;
            }
            if t != Token::Equal {
                return Err(self.unexpected("expected equal", t));
            }
            let t2 = self.token();
            if t2 != Token::LabelValue {
                return Err(self.unexpected("expected label value", t2));
            }
            let value = self.lexer.token_text();
            if std::str::from_utf8(value).is_err() {
                return Err(TextError(format!(
                    "invalid UTF-8 label value: {}",
                    quote_bytes(value)
                )));
            }
            self.labels.push(LabelSpan {
                name: (from, to),
                value: (self.lexer.start + 1, self.lexer.i - 1),
            });
            t = self.token();
            if t == Token::Comma {
                t = self.token();
            }
        }
    }

    /// The value and timestamp after a series' name or labels (`t` is the
    /// token after them, which end at `series_end`).
    fn series(&mut self, t: Token, series_end: usize) -> Result<TextEntry<'a>, TextError> {
        let series = self.lexer.text(self.start, series_end);
        if self.name.is_none() {
            return Err(TextError(format!(
                "metric name not set while parsing: {}",
                self.lexer.quoted_text(self.start, self.lexer.i)
            )));
        }
        if t != Token::Value {
            return Err(self.unexpected("expected value after metric", t));
        }
        let value = match parse_prom_float(self.lexer.token_text()) {
            Ok(v) if v.is_nan() => f64::from_bits(NORMAL_NAN_BITS),
            Ok(v) => v,
            Err(e) => return Err(self.float_error(e)),
        };
        let timestamp = match self.token() {
            Token::Linebreak => None,
            Token::Timestamp => {
                let ts = self.timestamp()?;
                let t2 = self.token();
                if t2 != Token::Linebreak {
                    return Err(self.unexpected("expected next entry after timestamp", t2));
                }
                Some(ts)
            }
            t => return Err(self.unexpected("expected timestamp or new record", t)),
        };
        Ok(TextEntry::Series(TextSeries {
            series,
            value,
            timestamp,
        }))
    }

    fn timestamp(&self) -> Result<i64, TextError> {
        let digits = self.lexer.token_text();
        let mut ts: i64 = 0;
        for &d in digits {
            ts = match ts
                .checked_mul(10)
                .and_then(|t| t.checked_add(i64::from(d - b'0')))
            {
                Some(t) => t,
                None => {
                    return Err(TextError(format!(
                        "strconv.ParseInt: parsing {}: value out of range while parsing: {}",
                        quote_bytes(digits),
                        self.lexer.quoted_text(self.start, self.lexer.i)
                    )))
                }
            };
        }
        Ok(ts)
    }

    fn float_error(&self, e: FloatError) -> TextError {
        let cause = float_cause(self.lexer.token_text(), e);
        TextError(format!(
            "{cause} while parsing: {}",
            self.lexer.quoted_text(self.start, self.lexer.i)
        ))
    }

    /// Prometheus' message for an unexpected token.
    fn unexpected(&self, expected: &str, got: Token) -> TextError {
        let end = (self.lexer.i + 1).min(self.lexer.len());
        TextError(format!(
            "{expected}, got {} (\"{}\") while parsing: {}",
            self.lexer.quoted_text(self.lexer.start, end),
            got.name(),
            self.lexer.quoted_text(self.start, end)
        ))
    }
}

/// The type a `# TYPE` line names.
fn type_named(text: &[u8]) -> Option<MetricType> {
    Some(match text {
        b"counter" => MetricType::Counter,
        b"gauge" => MetricType::Gauge,
        b"histogram" => MetricType::Histogram,
        b"summary" => MetricType::Summary,
        b"untyped" => MetricType::Unknown,
        _ => return None,
    })
}

/// The end of the unquoted metric name at `i`; `None` if none starts
/// there.
fn metric_name_end(buf: &[u8], mut i: usize) -> Option<usize> {
    if !lexer::is_metric_start(*buf.get(i)?) {
        return None;
    }
    i += 1;
    while buf.get(i).is_some_and(|&c| lexer::is_metric_char(c)) {
        i += 1;
    }
    Some(i)
}

/// The index after the run of blanks at `i`; `None` if there is none (or
/// the buffer ends in it).
fn after_blanks(buf: &[u8], mut i: usize) -> Option<usize> {
    if !lexer::is_blank(*buf.get(i)?) {
        return None;
    }
    while lexer::is_blank(*buf.get(i)?) {
        i += 1;
    }
    Some(i)
}

/// The sample of a series line whose series part ends at `series_end`,
/// in common form (blanks, a value, perhaps blanks and a timestamp, a
/// newline): value, timestamp and the newline's index.
fn common_sample(buf: &[u8], series_end: usize) -> Option<(f64, Option<i64>, usize)> {
    let (value, i) = common_value(buf, series_end)?;
    Some(match buf.get(i)? {
        b'\n' => (value, None, i),
        _ => {
            let (ts, newline) = common_timestamp(buf, i)?;
            (value, Some(ts), newline)
        }
    })
}

/// [`TextParser::peek_line`]'s series line at `start`: the series part
/// is the name and, if `{` follows it, everything up to the first `}`
/// that a blank follows (not read further); then the sample in common
/// form. The series and the newline's index.
fn peek_series(buf: &[u8], start: usize) -> Option<(TextSeries<'_>, usize)> {
    let name_end = metric_name_end(buf, start)?;
    let mut series_end = name_end;
    if buf.get(name_end) == Some(&b'{') {
        loop {
            series_end += 1 + memchr::memchr(b'}', buf.get(series_end + 1..)?)?;
            if lexer::is_blank(*buf.get(series_end + 1)?) {
                series_end += 1;
                break;
            }
        }
    }
    let (value, timestamp, newline) = common_sample(buf, series_end)?;
    let series = TextSeries {
        series: &buf[start..series_end],
        value,
        timestamp,
    };
    Some((series, newline))
}

/// [`TextParser::common_series`]' blanks and value from `i`: the value and
/// the index after it.
fn common_value(buf: &[u8], i: usize) -> Option<(f64, usize)> {
    let mut i = after_blanks(buf, i)?;
    let value_start = i;
    while buf.get(i).is_some_and(|&c| lexer::is_value_char(c)) {
        i += 1;
    }
    let value = match parse_prom_float(&buf[value_start..i]) {
        Ok(v) if v.is_nan() => f64::from_bits(NORMAL_NAN_BITS),
        Ok(v) => v,
        Err(_) => return None,
    };
    Some((value, i))
}

/// [`TextParser::common_series`]' blanks and timestamp from `i`, up to a
/// newline: the timestamp and the newline's index.
fn common_timestamp(buf: &[u8], i: usize) -> Option<(i64, usize)> {
    let mut i = after_blanks(buf, i)?;
    let digits_start = i;
    let mut ts: i64 = 0;
    while let Some(d) = buf.get(i).filter(|c| c.is_ascii_digit()) {
        ts = ts.checked_mul(10)?.checked_add(i64::from(d - b'0'))?;
        i += 1;
    }
    if i == digits_start || *buf.get(i)? != b'\n' {
        return None;
    }
    Some((ts, i))
}

/// `# HELP` text with `\\` and `\n` unescaped (other escapes kept).
fn unescape_help(text: &[u8]) -> Cow<'_, [u8]> {
    if !text.contains(&b'\\') {
        return Cow::Borrowed(text);
    }
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        match (text[i], text.get(i + 1)) {
            (b'\\', Some(b'\\')) => {
                out.push(b'\\');
                i += 2;
            }
            (b'\\', Some(b'n')) => {
                out.push(b'\n');
                i += 2;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    Cow::Owned(out)
}

/// Why a value or timestamp is not a float, as Prometheus' `parseFloat`
/// says it (the text is what came after the token's leading blank).
pub(crate) fn float_cause(text: &[u8], e: FloatError) -> String {
    if text.iter().any(|&c| matches!(c, b'p' | b'P' | b'_')) {
        return "unsupported character in float".to_owned();
    }
    let why = match e {
        FloatError::Syntax => "invalid syntax",
        FloatError::Range => "value out of range",
    };
    format!("strconv.ParseFloat: parsing {}: {why}", quote_bytes(text))
}

#[cfg(test)]
mod tests;
