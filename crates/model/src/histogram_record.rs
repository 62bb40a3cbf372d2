//! The one-line text form of a native histogram that the interop suite's
//! Go generators write with Prometheus' own histograms
//! (`interop/internal/histrecord`) and Ferrite's golden tests and
//! `ferrite debug chunk-encode` read:
//!
//! ```text
//! H hint schema zero_threshold count zero_count sum pos_spans neg_spans pos_buckets neg_buckets custom_values
//! F (the same, counts and buckets as floats)
//! ```
//!
//! Fields are separated by one space. Floats are the 16 hex digits of
//! their bits, spans `offset:length`, lists comma-separated or `-` when
//! empty; integer counts and bucket deltas are decimal.

use crate::histogram::{CounterResetHint, FloatHistogram, Histogram, Span};

/// Why a record does not read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RecordTextError {
    /// Not 12 fields, or not the record kind asked for.
    #[error("want an {kind} record of 12 fields: {record:?}")]
    Shape {
        /// `H` or `F`.
        kind: &'static str,
        /// The record read.
        record: String,
    },
    /// A field that does not parse.
    #[error("{field} {text:?} does not parse")]
    Field {
        /// Which field.
        field: &'static str,
        /// Its text.
        text: String,
    },
}

/// An `H` record: an integer histogram.
pub fn parse_int_record(record: &str) -> Result<Histogram, RecordTextError> {
    let f = fields(record, "H")?;
    Ok(Histogram {
        counter_reset_hint: hint(f[1])?,
        schema: number(f[2], "schema")?,
        zero_threshold: float_bits(f[3])?,
        count: number(f[4], "count")?,
        zero_count: number(f[5], "zero count")?,
        sum: float_bits(f[6])?,
        positive_spans: list(f[7], span)?,
        negative_spans: list(f[8], span)?,
        positive_buckets: list(f[9], |s| number(s, "bucket delta"))?,
        negative_buckets: list(f[10], |s| number(s, "bucket delta"))?,
        custom_values: list(f[11], float_bits)?,
    })
}

/// An `F` record: a float histogram.
pub fn parse_float_record(record: &str) -> Result<FloatHistogram, RecordTextError> {
    let f = fields(record, "F")?;
    Ok(FloatHistogram {
        counter_reset_hint: hint(f[1])?,
        schema: number(f[2], "schema")?,
        zero_threshold: float_bits(f[3])?,
        count: float_bits(f[4])?,
        zero_count: float_bits(f[5])?,
        sum: float_bits(f[6])?,
        positive_spans: list(f[7], span)?,
        negative_spans: list(f[8], span)?,
        positive_buckets: list(f[9], float_bits)?,
        negative_buckets: list(f[10], float_bits)?,
        custom_values: list(f[11], float_bits)?,
    })
}

/// The `H` record of `h`.
pub fn int_record(h: &Histogram) -> String {
    format!(
        "H {} {} {} {} {} {} {} {} {} {} {}",
        h.counter_reset_hint as u8,
        h.schema,
        bits(&h.zero_threshold),
        h.count,
        h.zero_count,
        bits(&h.sum),
        join(&h.positive_spans, span_text),
        join(&h.negative_spans, span_text),
        join(&h.positive_buckets, i64::to_string),
        join(&h.negative_buckets, i64::to_string),
        join(&h.custom_values, bits),
    )
}

/// The `F` record of `h`.
pub fn float_record(h: &FloatHistogram) -> String {
    format!(
        "F {} {} {} {} {} {} {} {} {} {} {}",
        h.counter_reset_hint as u8,
        h.schema,
        bits(&h.zero_threshold),
        bits(&h.count),
        bits(&h.zero_count),
        bits(&h.sum),
        join(&h.positive_spans, span_text),
        join(&h.negative_spans, span_text),
        join(&h.positive_buckets, bits),
        join(&h.negative_buckets, bits),
        join(&h.custom_values, bits),
    )
}

/// The 12 fields of a record of `kind`.
fn fields<'a>(record: &'a str, kind: &'static str) -> Result<[&'a str; 12], RecordTextError> {
    let shape = || RecordTextError::Shape {
        kind,
        record: record.to_string(),
    };
    let f: [&str; 12] = record
        .split(' ')
        .collect::<Vec<_>>()
        .try_into()
        .map_err(|_| shape())?;
    if f[0] != kind {
        return Err(shape());
    }
    Ok(f)
}

fn number<T: std::str::FromStr>(s: &str, field: &'static str) -> Result<T, RecordTextError> {
    s.parse().map_err(|_| RecordTextError::Field {
        field,
        text: s.to_string(),
    })
}

fn hint(s: &str) -> Result<CounterResetHint, RecordTextError> {
    Ok(CounterResetHint::from_bits(number(
        s,
        "counter reset hint",
    )?))
}

fn float_bits(s: &str) -> Result<f64, RecordTextError> {
    u64::from_str_radix(s, 16)
        .map(f64::from_bits)
        .map_err(|_| RecordTextError::Field {
            field: "float bits",
            text: s.to_string(),
        })
}

fn span(s: &str) -> Result<Span, RecordTextError> {
    let (offset, length) = s.split_once(':').ok_or_else(|| RecordTextError::Field {
        field: "span offset:length",
        text: s.to_string(),
    })?;
    Ok(Span {
        offset: number(offset, "span offset")?,
        length: number(length, "span length")?,
    })
}

fn list<T>(
    s: &str,
    item: impl Fn(&str) -> Result<T, RecordTextError>,
) -> Result<Vec<T>, RecordTextError> {
    if s == "-" {
        return Ok(Vec::new());
    }
    s.split(',').map(item).collect()
}

fn bits(f: &f64) -> String {
    format!("{:016x}", f.to_bits())
}

fn span_text(s: &Span) -> String {
    format!("{}:{}", s.offset, s.length)
}

fn join<T>(xs: &[T], item: impl Fn(&T) -> String) -> String {
    if xs.is_empty() {
        return "-".to_string();
    }
    xs.iter().map(item).collect::<Vec<_>>().join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip() {
        let h = Histogram {
            counter_reset_hint: CounterResetHint::Gauge,
            schema: 3,
            zero_threshold: 0.001,
            count: 5,
            zero_count: 1,
            sum: -2.5,
            positive_spans: vec![Span {
                offset: -2,
                length: 2,
            }],
            positive_buckets: vec![3, -2],
            ..Histogram::default()
        };
        let text = int_record(&h);
        assert_eq!(
            text,
            "H 3 3 3f50624dd2f1a9fc 5 1 c004000000000000 -2:2 - 3,-2 - -"
        );
        assert_eq!(parse_int_record(&text), Ok(h.clone()));
        let f = h.to_float();
        assert_eq!(parse_float_record(&float_record(&f)), Ok(f));
    }

    #[test]
    fn bad_records_say_why() {
        assert!(matches!(
            parse_int_record("F 0 0 0 0 0 0 - - - - -"),
            Err(RecordTextError::Shape { kind: "H", .. })
        ));
        assert!(matches!(
            parse_int_record("H 0 0"),
            Err(RecordTextError::Shape { .. })
        ));
        assert_eq!(
            parse_int_record("H 0 0 0 0 0 0 1 - - - -"),
            Err(RecordTextError::Field {
                field: "span offset:length",
                text: "1".into()
            })
        );
    }
}
