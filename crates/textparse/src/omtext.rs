//! OpenMetrics text (1.0.0 and 0.0.1), parsed as Prometheus v3.16.0's
//! scrape loop parses it (`textparse.NewOpenMetricsParser` with the
//! default scrape options: no `__type__`/`__unit__` labels, `_created`
//! series handed out as ordinary series).
//!
//! [`OmParser`] streams [`OmEntry`]s out of a scraped body like
//! [`crate::promtext::TextParser`] does for the Prometheus text format,
//! without allocating: a series comes out as its raw bytes (the name and
//! the `{...}` part exactly as written, Prometheus' `Series()` bytes), its
//! value and its timestamp, so that a scrape cache keyed by those bytes
//! finds a known series without reading its labels.
//! [`OmParser::labels`] reads the labels of the last series when the cache
//! does not know it.
//!
//! # Exemplars
//!
//! An exemplar (` # {labels} value [timestamp]` after a sample) is parsed
//! and checked as Prometheus checks it, so a malformed one fails the scrape
//! with Prometheus' message, and then dropped: Ferrite stores no
//! exemplars. [`OmParser::exemplar`] reads the last series' exemplar for
//! the cross-check; its labels are the bytes as written (Prometheus does
//! not unescape them either).
//!
//! # What Prometheus accepts, and its quirks
//!
//! - every line is a sample, `# HELP`, `# TYPE`, `# UNIT` or `# EOF`;
//!   `# EOF` ends the input, optionally with one newline (and NUL bytes);
//!   anything after it, or no `# EOF` at all, is an error;
//! - single spaces separate tokens; a value or timestamp is anything up to
//!   the next space or newline (read as a Go float without `p`, `P`, `_`),
//!   timestamps are seconds made milliseconds as `int64(s * 1000)`;
//! - in braces: `name="value"` pairs, names plain or quoted, a quoted string
//!   alone the metric name (once), commas between pairs and one after the
//!   last allowed; a quoted name may span lines, a label value may not;
//! - a sample followed by something that is neither a timestamp, an
//!   exemplar nor the end of the line is handed out without a timestamp,
//!   and the next call fails on what follows;
//! - NUL bytes are stepped over inside label values, metadata text and the
//!   keyword of a `# ` line, and right after them: NULs after a label
//!   value's closing quote are taken into the value's token, which is then
//!   cut one byte short at each end (`{b="x"\0}` gives `b` the value `x"`),
//!   NULs after a metadata line's newline are taken into its text, likewise
//!   cut (`# HELP a x\n\0` has the text `x\n`), NULs after `# EOF` end the
//!   input;
//! - metadata names are handed out as written (quotes stripped, escapes
//!   kept); help text has `\\`, `\"` and `\n` unescaped, as label values;
//! - a non-empty `# UNIT` must end the metric's name after a `_`;
//! - `le` of a histogram and `quantile` of a summary are rewritten as
//!   OpenMetrics floats (`1` becomes `1.0`), after the last `# TYPE` line,
//!   whatever metric it named.
//!
//! Errors carry Prometheus' own messages, which a target's `lastError`
//! shows.
//!
//! `interop/omtext_test.go` checks all of this against Prometheus' own
//! parser, entry by entry. One difference is deliberate, as in
//! [`crate::promtext`]: a name given as a quoted string that is not UTF-8
//! is handed out by Prometheus, which rejects the series only when it
//! validates its labels; here [`OmParser::labels`] returns an error for it.
//!
//! # Why a parser beside [`crate::Parser`]
//!
//! [`crate::Parser`] reads OpenMetrics for promtool's backfill: whole
//! owned samples with line numbers and its own messages, and a few
//! deliberate rejections of input Prometheus' lexer mishandles. A scrape
//! needs the opposite: no allocation per sample, the raw series bytes,
//! Prometheus' messages and its exact token boundaries. What both need
//! (unescaping, metric types, `le`/`quantile` rewriting, Go floats) is
//! shared.

mod lexer;

use std::borrow::Cow;

use ferrite_model::gofloat::{parse_prom_float, seconds_to_millis, NORMAL_NAN_BITS};
use ferrite_model::goquote::quote_bytes;

use crate::parser::{normalize_label_value, unescape, MetricType};
use crate::promtext::{float_cause, TextError, TextSeries};
use lexer::{Lexer, Token};

/// One entry of an exposition.
#[derive(Debug, Clone, PartialEq)]
pub enum OmEntry<'a> {
    /// `# HELP name text`: the name as written (quotes stripped, escapes
    /// kept) and the text with `\\`, `\"` and `\n` unescaped.
    Help {
        /// The metric family's name.
        metric: &'a [u8],
        /// The help text.
        text: Cow<'a, [u8]>,
    },
    /// `# TYPE name type`.
    Type {
        /// The metric family's name.
        metric: &'a [u8],
        /// Its type.
        kind: MetricType,
    },
    /// `# UNIT name unit` (the unit may be empty).
    Unit {
        /// The metric family's name.
        metric: &'a [u8],
        /// Its unit.
        unit: &'a [u8],
    },
    /// A sample: read its labels with [`OmParser::labels`].
    Series(TextSeries<'a>),
}

/// The exemplar of a sample, as Prometheus' parser hands it out.
#[derive(Debug, Clone, PartialEq)]
pub struct OmExemplar<'a> {
    /// The label pairs as written (quotes stripped, escapes kept), in
    /// order.
    pub labels: Vec<(&'a [u8], &'a [u8])>,
    /// The value (NaN has Prometheus' bit pattern).
    pub value: f64,
    /// The timestamp in milliseconds, when given.
    pub timestamp: Option<i64>,
}

/// A label as byte ranges of the buffer.
#[derive(Debug, Clone, Copy)]
struct LabelSpan {
    name: (usize, usize),
    value: (usize, usize),
}

/// The streaming parser; see the module documentation.
pub struct OmParser<'a> {
    lexer: Lexer<'a>,
    /// Where the current entry started.
    start: usize,
    /// The last series' metric name, if it has one.
    name: Option<(usize, usize)>,
    labels: Vec<LabelSpan>,
    /// The last series' exemplar: value and timestamp.
    exemplar: Option<(f64, Option<i64>)>,
    exemplar_labels: Vec<LabelSpan>,
    /// The type of the last `# TYPE` line.
    mtype: MetricType,
    /// Set once `# EOF` or an error ended the input.
    finished: Option<Result<(), TextError>>,
}

impl<'a> OmParser<'a> {
    /// A parser over a scraped body.
    pub fn new(body: &'a [u8]) -> Self {
        OmParser {
            lexer: Lexer::new(body),
            start: 0,
            name: None,
            labels: Vec::new(),
            exemplar: None,
            exemplar_labels: Vec::new(),
            mtype: MetricType::Unknown,
            finished: None,
        }
    }

    /// The next entry; `None` after `# EOF`. After an error every call
    /// returns it again.
    pub fn next_entry(&mut self) -> Result<Option<OmEntry<'a>>, TextError> {
        if let Some(done) = &self.finished {
            return done.clone().map(|()| None);
        }
        self.start = self.lexer.i;
        self.name = None;
        self.labels.clear();
        self.exemplar = None;
        self.exemplar_labels.clear();
        let r = self.entry();
        match &r {
            Ok(None) => self.finished = Some(Ok(())),
            Err(e) => self.finished = Some(Err(e.clone())),
            Ok(Some(_)) => {}
        }
        r
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

    /// The last series' exemplar, if it had one.
    pub fn exemplar(&self) -> Option<OmExemplar<'a>> {
        let (value, timestamp) = self.exemplar?;
        let buf = self.lexer.buf;
        let labels = self
            .exemplar_labels
            .iter()
            .map(|l| (&buf[l.name.0..l.name.1], &buf[l.value.0..l.value.1]))
            .collect();
        Some(OmExemplar {
            labels,
            value,
            timestamp,
        })
    }

    /// The bytes `from..to` unescaped as a string.
    fn owned(&self, from: usize, to: usize, what: &str) -> Result<String, TextError> {
        String::from_utf8(unescape(&self.lexer.buf[from..to]).into_owned()).map_err(|e| {
            TextError(format!(
                "invalid {what} {}: not valid UTF-8",
                quote_bytes(e.as_bytes())
            ))
        })
    }

    fn token(&mut self) -> Token {
        self.lexer.next_token()
    }

    /// The buffer from the entry's start to the cursor, quoted.
    fn quoted_entry(&self) -> String {
        quote_bytes(&self.lexer.buf[self.start..self.lexer.i])
    }

    fn entry(&mut self) -> Result<Option<OmEntry<'a>>, TextError> {
        match self.token() {
            Token::EofWord => {
                if self.token() != Token::Eof {
                    return Err(TextError("unexpected data after # EOF".into()));
                }
                Ok(None)
            }
            Token::Eof => Err(eof_missing()),
            t @ (Token::Help | Token::Type | Token::Unit) => self.metadata(t).map(Some),
            Token::BraceOpen => {
                self.label_pairs(false)?;
                let series_end = self.lexer.i;
                let t = self.token();
                self.series(t, series_end).map(Some)
            }
            Token::MetricName => {
                self.name = Some((self.start, self.lexer.i));
                let mut series_end = self.lexer.i;
                let mut t = self.token();
                if t == Token::BraceOpen {
                    self.label_pairs(false)?;
                    series_end = self.lexer.i;
                    t = self.token();
                }
                self.series(t, series_end).map(Some)
            }
            t => Err(self.unexpected("expected a valid start token", t)),
        }
    }

    /// `# HELP`, `# TYPE` or `# UNIT` after its keyword.
    fn metadata(&mut self, keyword: Token) -> Result<OmEntry<'a>, TextError> {
        let t = self.token();
        if t != Token::MetricName {
            let what = format!("expected metric name after {}", keyword.name());
            return Err(self.unexpected(&what, t));
        }
        let buf = self.lexer.buf;
        let (mut from, mut to) = (self.lexer.start, self.lexer.i);
        if buf[from] == b'"' && buf[to - 1] == b'"' {
            from += 1;
            to -= 1;
        }
        let metric = &buf[from..to];
        if self.token() != Token::Text {
            return Err(TextError(format!("expected text in {}", keyword.name())));
        }
        // The token is a space, the text and the newline (or, after NUL
        // bytes that followed the newline, the last of them).
        let raw = self.lexer.token_text();
        let text = raw.get(1..raw.len() - 1).unwrap_or(&[]);
        match keyword {
            Token::Type => {
                let Some(kind) = MetricType::from_text(text) else {
                    return Err(TextError(format!(
                        "invalid metric type {}",
                        quote_bytes(text)
                    )));
                };
                self.mtype = kind;
                Ok(OmEntry::Type { metric, kind })
            }
            Token::Help => {
                if std::str::from_utf8(text).is_err() {
                    return Err(TextError(format!(
                        "help text {} is not a valid utf8 string",
                        quote_bytes(text)
                    )));
                }
                Ok(OmEntry::Help {
                    metric,
                    text: unescape(text),
                })
            }
            _ => {
                let unit = text;
                let suffix_ok = unit.is_empty()
                    || (metric.len() > unit.len()
                        && metric.ends_with(unit)
                        && buf[to - unit.len() - 1] == b'_');
                if !suffix_ok {
                    return Err(TextError(format!(
                        "unit {} not a suffix of metric {}",
                        quote_bytes(unit),
                        quote_bytes(metric)
                    )));
                }
                Ok(OmEntry::Unit { metric, unit })
            }
        }
    }

    /// The label pairs after `{`, up to and with `}`: a series' (where a
    /// quoted string alone is the metric name) or an exemplar's.
    fn label_pairs(&mut self, exemplar: bool) -> Result<(), TextError> {
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
                if exemplar {
                    return Err(self.unexpected("expected label name", t));
                }
                if self.name.is_some() {
                    return Err(TextError(format!(
                        "metric name already set while parsing: {}",
                        self.quoted_entry()
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
            // The token's first and last bytes are cut: its quotes, or
            // with NULs after the closing quote, the last NUL.
            let span = LabelSpan {
                name: (from, to),
                value: (self.lexer.start + 1, self.lexer.i - 1),
            };
            if exemplar {
                self.exemplar_labels.push(span);
            } else {
                self.labels.push(span);
            }
            t = self.token();
            if t == Token::Comma {
                t = self.token();
            } else if t != Token::BraceClose {
                return Err(self.unexpected("expected comma or brace close", t));
            }
        }
    }

    /// The value, timestamp and exemplar after a series' name or labels
    /// (`t` is the token after them, which end at `series_end`).
    fn series(&mut self, t: Token, series_end: usize) -> Result<OmEntry<'a>, TextError> {
        if self.name.is_none() {
            return Err(TextError(format!(
                "metric name not set while parsing: {}",
                self.quoted_entry()
            )));
        }
        let series = &self.lexer.buf[self.start..series_end];
        let value = self.float_value(t, "metric")?;
        let mut timestamp = None;
        match self.token() {
            Token::Eof => return Err(eof_missing()),
            Token::Linebreak => {}
            Token::Comment => self.exemplar_after()?,
            Token::Timestamp => {
                timestamp = Some(self.timestamp("")?);
                match self.token() {
                    Token::Linebreak => {}
                    Token::Comment => self.exemplar_after()?,
                    t => return Err(self.unexpected("expected next entry after timestamp", t)),
                }
            }
            // Prometheus hands the sample out as it is; reading on fails.
            _ => {}
        }
        Ok(OmEntry::Series(TextSeries {
            series,
            value,
            timestamp,
        }))
    }

    /// ` # {` has been read: the exemplar to the end of the line.
    fn exemplar_after(&mut self) -> Result<(), TextError> {
        self.label_pairs(true)?;
        let t = self.token();
        let value = self.float_value(t, "exemplar labels")?;
        let timestamp = match self.token() {
            Token::Eof => return Err(eof_missing()),
            Token::Linebreak => None,
            Token::Timestamp => {
                let ts = self.timestamp("exemplar ")?;
                let t = self.token();
                if t != Token::Linebreak {
                    return Err(self.unexpected("expected next entry after exemplar timestamp", t));
                }
                Some(ts)
            }
            t => return Err(self.unexpected("expected timestamp or comment", t)),
        };
        self.exemplar = Some((value, timestamp));
        Ok(())
    }

    /// The value token `t` (after `after`, for the message).
    fn float_value(&self, t: Token, after: &str) -> Result<f64, TextError> {
        if t != Token::Value {
            return Err(self.unexpected(&format!("expected value after {after}"), t));
        }
        let text = &self.lexer.token_text()[1..];
        match parse_prom_float(text) {
            Ok(v) if v.is_nan() => Ok(f64::from_bits(NORMAL_NAN_BITS)),
            Ok(v) => Ok(v),
            Err(e) => Err(TextError(format!(
                "{} while parsing: {}",
                float_cause(text, e),
                self.quoted_entry()
            ))),
        }
    }

    /// The timestamp token just read, in milliseconds; `what` prefixes
    /// `timestamp` in the message for NaN and infinities.
    fn timestamp(&self, what: &str) -> Result<i64, TextError> {
        let text = &self.lexer.token_text()[1..];
        let ts = parse_prom_float(text).map_err(|e| {
            TextError(format!(
                "{} while parsing: {}",
                float_cause(text, e),
                self.quoted_entry()
            ))
        })?;
        if !ts.is_finite() {
            let shown = if ts.is_nan() {
                "NaN"
            } else if ts > 0.0 {
                "+Inf"
            } else {
                "-Inf"
            };
            return Err(TextError(format!("invalid {what}timestamp {shown}")));
        }
        Ok(seconds_to_millis(ts))
    }

    /// Prometheus' message for an unexpected token.
    fn unexpected(&self, expected: &str, got: Token) -> TextError {
        let buf = self.lexer.buf;
        let end = (self.lexer.i + 1).min(buf.len());
        TextError(format!(
            "{expected}, got {} (\"{}\") while parsing: {}",
            quote_bytes(&buf[self.lexer.start..end]),
            got.name(),
            quote_bytes(&buf[self.start..end])
        ))
    }
}

fn eof_missing() -> TextError {
    TextError("data does not end with # EOF".into())
}

#[cfg(test)]
mod tests;
