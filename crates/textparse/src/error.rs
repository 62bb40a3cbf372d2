//! Errors: every one names the 1-based line it was found on.
//!
//! The line is that of the offending byte (the start of the token that could
//! not be read), so a quoted name spanning several lines reports where the
//! problem is; an early end of input reports the last line. Errors about a
//! whole series (promtool's missing timestamp, duplicate label names) report
//! the line the series starts on.

use thiserror::Error;

/// A parse or backfill error and the line it was found on.
#[derive(Debug, Clone, PartialEq, Error)]
#[error("line {line}: {kind}")]
pub struct Error {
    /// 1-based line number.
    pub line: usize,
    pub kind: ErrorKind,
}

/// What was wrong.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum ErrorKind {
    #[error("unexpected end of input: OpenMetrics text must end with `# EOF`")]
    MissingEof,
    #[error("unexpected data after `# EOF`")]
    DataAfterEof,
    #[error("expected a metric name, `{{` or `# ` at the start of a line, found {0}")]
    InvalidLineStart(String),
    #[error("a `#` line must be `# HELP `, `# TYPE `, `# UNIT ` or `# EOF` (OpenMetrics has no free comments)")]
    InvalidComment,
    #[error("expected a metric name after `# {0} `")]
    ExpectedMetadataName(&'static str),
    #[error("expected a space and text, ending with a newline, after the metric name in `# {0}`")]
    ExpectedMetadataText(&'static str),
    #[error("invalid metric type {0:?}")]
    InvalidMetricType(String),
    #[error("unit {unit:?} is not a suffix `_{unit}` of metric {metric:?}")]
    UnitNotSuffix { unit: String, metric: String },
    #[error("{0} is not valid UTF-8")]
    InvalidUtf8(&'static str),
    #[error("unterminated or invalid quoted string (a backslash may not precede a newline, and no NUL byte or newline may appear where they are not allowed)")]
    BadQuotedString,
    #[error("expected a label name or `}}`, found {0}")]
    ExpectedLabelName(String),
    #[error("expected `=` after the label name, found {0}")]
    ExpectedEquals(String),
    #[error("expected a quoted label value, found {0}")]
    ExpectedLabelValue(String),
    #[error("expected `,` or `}}` after the label value, found {0}")]
    ExpectedCommaOrBrace(String),
    #[error("the metric name is given twice")]
    MetricNameAlreadySet,
    #[error("the series has no metric name")]
    MetricNameNotSet,
    #[error("expected a space and a value after the {0}, found {1}")]
    ExpectedValue(&'static str, String),
    #[error("invalid {0} value {1:?}")]
    InvalidValue(&'static str, String),
    #[error("invalid {0} timestamp {1:?}")]
    InvalidTimestamp(&'static str, String),
    #[error("expected the end of the line after the {0}, found {1}")]
    ExpectedLineEnd(&'static str, String),
    #[error("expected a timestamp, an exemplar (` # {{`) or the end of the line after the value, found {0}")]
    DanglingAfterValue(String),
    #[error("{0} is not valid UTF-8 (Ferrite keeps names as UTF-8 strings)")]
    NonUtf8Name(&'static str),
    #[error("expected timestamp for series {0}, got none (backfill needs one on every sample)")]
    MissingTimestamp(String),
    #[error("label name {0:?} is not unique")]
    DuplicateLabelName(String),
    #[error("empty label name (Prometheus reports it as `label name \"\" is not unique`)")]
    EmptyLabelName,
    #[error("empty label set (every label value is empty)")]
    EmptyLabelSet,
}

/// A short description of what is at `pos` for messages.
pub(crate) fn describe(buf: &[u8], pos: usize) -> String {
    match buf.get(pos) {
        None => "the end of input".into(),
        Some(b'\n') => "the end of the line".into(),
        Some(_) => {
            let end = buf[pos..]
                .iter()
                .take(16)
                .position(|&c| c == b'\n')
                .map_or((pos + 16).min(buf.len()), |n| pos + n);
            format!("{:?}", String::from_utf8_lossy(&buf[pos..end]))
        }
    }
}
