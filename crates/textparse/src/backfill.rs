//! What `promtool tsdb create-blocks-from openmetrics` adds to the parser.
//!
//! promtool (v3.9.1, `cmd/promtool/backfill.go`) reads the file twice:
//!
//! 1. [`time_range`]: every entry is parsed; a parse error, or a sample
//!    without a timestamp (`expected timestamp for series ..., got none`),
//!    stops the backfill before anything is written. Metadata lines are
//!    read and ignored; `_created` lines are ordinary samples (promtool does
//!    not ask for created timestamps); OpenMetrics text has no native
//!    histograms. No samples at all gives the range (0, 0) in promtool;
//!    here `None`.
//! 2. per block range, each sample in range has its labels passed through
//!    `labels.Builder`, which drops labels with an empty value (and any other
//!    label of the same name), and goes to the TSDB appender, which rejects
//!    an empty label set, a label name that occurs twice and an empty label
//!    name ([`to_sample`]). promtool meets these errors block range by block
//!    range; [`samples`] reports the first in file order.
//!
//! Exemplars are parsed (and must be well-formed) but not written.

use crate::error::{Error, ErrorKind};
use crate::parser::{Entry, Label, Parser, Series};

/// A sample as promtool appends it.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// The line the sample starts on.
    pub line: usize,
    /// Sorted by name, no empty values, names unique, never empty.
    pub labels: Vec<Label>,
    /// Milliseconds.
    pub timestamp: i64,
    pub value: f64,
}

/// The smallest and largest sample timestamps (ms), or `None` when the file
/// has no samples: promtool's first pass, with its errors.
///
/// ```
/// let text = b"a 1 10\nb 2 5.5\n# EOF\n";
/// assert_eq!(ferrite_textparse::backfill::time_range(text)?, Some((5500, 10000)));
/// # Ok::<(), ferrite_textparse::Error>(())
/// ```
pub fn time_range(input: &[u8]) -> Result<Option<(i64, i64)>, Error> {
    let mut range: Option<(i64, i64)> = None;
    for entry in Parser::new(input) {
        if let Entry::Series(s) = entry? {
            let t = require_timestamp(&s)?;
            range = Some(match range {
                None => (t, t),
                Some((lo, hi)) => (lo.min(t), hi.max(t)),
            });
        }
    }
    Ok(range)
}

/// The sample's timestamp, or promtool's error for a sample without one.
pub fn require_timestamp(series: &Series) -> Result<i64, Error> {
    series.timestamp.ok_or_else(|| Error {
        line: series.line,
        kind: ErrorKind::MissingTimestamp(format_labels(&series.labels)),
    })
}

/// A parsed sample as the TSDB appender takes it: timestamp required, labels
/// with an empty value dropped (with every other label of that name), then the set must be non-empty with unique,
/// non-empty names.
pub fn to_sample(series: Series) -> Result<Sample, Error> {
    let timestamp = require_timestamp(&series)?;
    let line = series.line;
    // promtool passes the labels through labels.Builder, which drops every
    // label whose *name* has an empty value anywhere in the set: with
    // `b="",b="1"` both go.
    let emptied: Vec<ferrite_model::Str> = series
        .labels
        .iter()
        .filter(|l| l.value.is_empty())
        .map(|l| l.name.clone())
        .collect();
    let labels: Vec<Label> = series
        .labels
        .into_iter()
        .filter(|l| !emptied.contains(&l.name))
        .collect();
    if labels.is_empty() {
        return Err(Error {
            line,
            kind: ErrorKind::EmptyLabelSet,
        });
    }
    // Prometheus' duplicate check starts from an empty "previous name", so
    // an empty label name (only possible quoted) fails it too.
    if labels[0].name.is_empty() {
        return Err(Error {
            line,
            kind: ErrorKind::EmptyLabelName,
        });
    }
    if let Some(w) = labels.windows(2).find(|w| w[0].name == w[1].name) {
        return Err(Error {
            line,
            kind: ErrorKind::DuplicateLabelName(w[0].name.to_string()),
        });
    }
    Ok(Sample {
        line,
        labels,
        timestamp,
        value: series.value,
    })
}

/// Both passes over a whole file: every sample promtool would append, in
/// file order, or the error promtool would stop at (parse errors and missing
/// timestamps first, anywhere in the file; then label-set errors).
pub fn samples(input: &[u8]) -> Result<Vec<Sample>, Error> {
    time_range(input)?;
    let mut out = Vec::new();
    for entry in Parser::new(input) {
        if let Entry::Series(s) = entry? {
            out.push(to_sample(s)?);
        }
    }
    Ok(out)
}

/// `{a="b", c="d"}` for messages.
fn format_labels(labels: &[Label]) -> String {
    let inner: Vec<String> = labels
        .iter()
        .map(|l| format!("{:?}={:?}", l.name, l.value))
        .collect();
    format!("{{{}}}", inner.join(", "))
}
