//! The `io.prometheus.client` messages read off the wire as Prometheus
//! v3.16.0's streaming decoder reads them (`prompb/io/prometheus/client`,
//! gogo-protobuf generated code): every check in its order, every error
//! with its text, and its reuse of one message per kind across metrics.
//!
//! What that means, beyond plain protobuf:
//! - a varint may have 10 bytes; the bits of the 10th beyond 64 are
//!   dropped, an 11th byte is `proto: integer overflow`;
//! - lengths are Go `int`s: one with the sign bit set is
//!   `proto: negative length found during unmarshaling`;
//! - a tag's field number is the low 32 bits of `tag >> 3` as an `int32`
//!   (so a huge tag can name field 1, or be negative: `illegal tag`);
//! - narrower integers (`int32`, `uint32`) keep the low bits of the varint;
//! - a packed run of varints or doubles is read until its end is reached
//!   or passed: the last element may run past the run's length into the
//!   rest of the message (bounded by the message, not the run);
//! - unknown fields are skipped (groups too), a field given twice merges
//!   (scalars: the last wins; repeated fields and sub-messages append);
//! - strings are not checked for UTF-8 here (the parser checks names,
//!   label values and help), except in metric labels, which the decoder
//!   validates as it reads them ([`parse_label`]);
//! - per metric the decoder resets its counter, gauge, summary and
//!   histogram, but not its untyped value: an untyped metric without a
//!   value has the last untyped value decoded (in any family).
//!
//! Exemplars and start timestamps are decoded for their errors only.

use ferrite_model::Span;

use super::ProtoError;

/// `io.EOF`'s sibling, what Go's decoders return on a cut message.
fn eof() -> ProtoError {
    ProtoError::new("unexpected EOF")
}

fn overflow() -> ProtoError {
    ProtoError::new("proto: integer overflow")
}

fn negative_length() -> ProtoError {
    ProtoError::new("proto: negative length found during unmarshaling")
}

fn wrong_wire_type(wire_type: u8, field: &str) -> ProtoError {
    ProtoError::new(format!(
        "proto: wrong wireType = {wire_type} for field {field}"
    ))
}

/// A position in one message's bytes.
pub(super) struct Reader<'a> {
    d: &'a [u8],
    i: usize,
}

impl<'a> Reader<'a> {
    /// A varint of up to 10 bytes (gogo's loop).
    fn varint(&mut self) -> Result<u64, ProtoError> {
        let mut x = 0u64;
        let mut shift = 0u32;
        loop {
            if shift >= 64 {
                return Err(overflow());
            }
            let b = *self.d.get(self.i).ok_or_else(eof)?;
            self.i += 1;
            x |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Ok(x);
            }
            shift += 7;
        }
    }

    /// Eight little-endian bytes.
    fn fixed64(&mut self) -> Result<u64, ProtoError> {
        let end = self.i + 8;
        let b = self.d.get(self.i..end).ok_or_else(eof)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        self.i = end;
        Ok(u64::from_le_bytes(a))
    }

    fn double(&mut self) -> Result<f64, ProtoError> {
        self.fixed64().map(f64::from_bits)
    }

    /// The end of a length-delimited field, its length read as a Go `int`.
    fn end_of_len(&mut self) -> Result<usize, ProtoError> {
        let n = self.varint()? as i64;
        if n < 0 {
            return Err(negative_length());
        }
        let end = (self.i as i64).wrapping_add(n);
        if end < 0 {
            return Err(negative_length());
        }
        let end = end as u64;
        if end > self.d.len() as u64 {
            return Err(eof());
        }
        Ok(end as usize)
    }

    /// A length-delimited field's bytes.
    fn bytes(&mut self) -> Result<&'a [u8], ProtoError> {
        let end = self.end_of_len()?;
        let s = &self.d[self.i..end];
        self.i = end;
        Ok(s)
    }

    /// A repeated `sint64`, packed (wire type 2) or not (0).
    fn sint64s(
        &mut self,
        wire_type: u8,
        field: &str,
        out: &mut Vec<i64>,
    ) -> Result<(), ProtoError> {
        match wire_type {
            0 => out.push(zigzag64(self.varint()?)),
            2 => {
                let end = self.end_of_len()?;
                while self.i < end {
                    out.push(zigzag64(self.varint()?));
                }
            }
            _ => return Err(wrong_wire_type(wire_type, field)),
        }
        Ok(())
    }

    /// A repeated `double`, packed (wire type 2) or not (1).
    fn doubles(
        &mut self,
        wire_type: u8,
        field: &str,
        out: &mut Vec<f64>,
    ) -> Result<(), ProtoError> {
        match wire_type {
            1 => out.push(self.double()?),
            2 => {
                let end = self.end_of_len()?;
                while self.i < end {
                    out.push(self.double()?);
                }
            }
            _ => return Err(wrong_wire_type(wire_type, field)),
        }
        Ok(())
    }
}

fn zigzag64(v: u64) -> i64 {
    ((v >> 1) ^ 0u64.wrapping_sub(v & 1)) as i64
}

/// A `sint32` from the low 32 bits of its varint.
fn zigzag32(v: u64) -> i32 {
    let u = v as u32;
    ((u >> 1) ^ 0u32.wrapping_sub(u & 1)) as i32
}

/// Checks a field's wire type.
fn want(wire_type: u8, want: u8, field: &str) -> Result<(), ProtoError> {
    if wire_type == want {
        Ok(())
    } else {
        Err(wrong_wire_type(wire_type, field))
    }
}

/// Reads the fields of message `msg` (its Go name, for errors) from `d`:
/// `field(reader, number, wire type)` reads a known field and returns
/// `true`, or returns `false` for an unknown one, which is skipped.
fn each_field<'a>(
    d: &'a [u8],
    msg: &str,
    mut field: impl FnMut(&mut Reader<'a>, i32, u8) -> Result<bool, ProtoError>,
) -> Result<(), ProtoError> {
    let mut r = Reader { d, i: 0 };
    while r.i < d.len() {
        let pre = r.i;
        let tag = r.varint()?;
        let number = (tag >> 3) as u32 as i32;
        let wire_type = (tag & 7) as u8;
        if wire_type == 4 {
            return Err(ProtoError::new(format!(
                "proto: {msg}: wiretype end group for non-group"
            )));
        }
        if number <= 0 {
            return Err(ProtoError::new(format!(
                "proto: {msg}: illegal tag {number} (wire type {tag})"
            )));
        }
        if !field(&mut r, number, wire_type)? {
            let n = skip(&d[pre..])?;
            let end = (pre as i64).wrapping_add(n);
            if n < 0 || end < 0 {
                return Err(negative_length());
            }
            if end as u64 > d.len() as u64 {
                return Err(eof());
            }
            r.i = end as usize;
        }
    }
    Ok(())
}

/// The length of the unknown field (a whole group, if it starts one) at
/// the start of `d`, as gogo's `skipMetrics` measures it: it may exceed
/// `d` (the caller refuses that).
fn skip(d: &[u8]) -> Result<i64, ProtoError> {
    let l = d.len() as i64;
    let mut i: i64 = 0;
    let mut depth = 0u64;
    let varint = |i: &mut i64| -> Result<u64, ProtoError> {
        let mut x = 0u64;
        let mut shift = 0u32;
        loop {
            if shift >= 64 {
                return Err(overflow());
            }
            if *i >= l {
                return Err(eof());
            }
            let b = d[*i as usize];
            *i += 1;
            x |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Ok(x);
            }
            shift += 7;
        }
    };
    while i < l {
        let tag = varint(&mut i)?;
        match tag & 7 {
            0 => {
                varint(&mut i)?;
            }
            1 => i = i.wrapping_add(8),
            2 => {
                let n = varint(&mut i)? as i64;
                if n < 0 {
                    return Err(negative_length());
                }
                i = i.wrapping_add(n);
            }
            3 => depth += 1,
            4 => {
                if depth == 0 {
                    return Err(ProtoError::new("proto: unexpected end of group"));
                }
                depth -= 1;
            }
            5 => i = i.wrapping_add(4),
            wire_type => {
                return Err(ProtoError::new(format!(
                    "proto: illegal wireType {wire_type}"
                )))
            }
        }
        if i < 0 {
            return Err(negative_length());
        }
        if depth == 0 {
            return Ok(i);
        }
    }
    Err(eof())
}

/// A `google.protobuf.Timestamp` (start timestamps, exemplars' times):
/// read for its errors.
fn timestamp(d: &[u8]) -> Result<(), ProtoError> {
    each_field(d, "Timestamp", |r, n, wt| {
        match n {
            1 => want(wt, 0, "Seconds")?,
            2 => want(wt, 0, "Nanos")?,
            _ => return Ok(false),
        }
        r.varint()?;
        Ok(true)
    })
}

/// A `LabelPair` of an exemplar: read for its errors (not validated).
fn plain_label(d: &[u8]) -> Result<(), ProtoError> {
    each_field(d, "LabelPair", |r, n, wt| {
        match n {
            1 => want(wt, 2, "Name")?,
            2 => want(wt, 2, "Value")?,
            _ => return Ok(false),
        }
        r.bytes()?;
        Ok(true)
    })
}

/// An `Exemplar`: read for its errors (Ferrite stores no exemplars).
fn exemplar(d: &[u8]) -> Result<(), ProtoError> {
    each_field(d, "Exemplar", |r, n, wt| {
        match n {
            1 => {
                want(wt, 2, "Label")?;
                plain_label(r.bytes()?)?;
            }
            2 => {
                want(wt, 1, "Value")?;
                r.fixed64()?;
            }
            3 => {
                want(wt, 2, "Timestamp")?;
                timestamp(r.bytes()?)?;
            }
            _ => return Ok(false),
        }
        Ok(true)
    })
}

/// A metric's label, as the decoder hands it to the parser: the name
/// must be a valid label name (non-empty UTF-8) and the value UTF-8 where
/// they are given; a missing one is empty, unchecked.
pub(super) fn parse_label(d: &[u8]) -> Result<(&[u8], &[u8]), ProtoError> {
    let mut name: &[u8] = &[];
    let mut value: &[u8] = &[];
    each_field(d, "LabelPair", |r, n, wt| {
        match n {
            1 => {
                want(wt, 2, "Name")?;
                let s = r.bytes()?;
                if s.is_empty() || std::str::from_utf8(s).is_err() {
                    return Err(ProtoError::with_bytes("invalid label name: ", s));
                }
                name = s;
            }
            2 => {
                want(wt, 2, "Value")?;
                let s = r.bytes()?;
                if std::str::from_utf8(s).is_err() {
                    return Err(ProtoError::with_bytes("invalid label value: ", s));
                }
                value = s;
            }
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    Ok((name, value))
}

/// A `Summary`'s fields.
#[derive(Debug, Default)]
pub(super) struct SummaryMsg {
    pub(super) sample_count: u64,
    pub(super) sample_sum: f64,
    /// (quantile, value)
    pub(super) quantiles: Vec<(f64, f64)>,
}

/// A classic bucket.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct BucketMsg {
    pub(super) cumulative_count: u64,
    pub(super) cumulative_count_float: f64,
    pub(super) upper_bound: f64,
}

impl BucketMsg {
    /// The bucket's count as Prometheus reads it: the float one unless 0.
    pub(super) fn count(&self) -> f64 {
        float_unless_zero(self.cumulative_count_float, self.cumulative_count)
    }
}

/// A count given as a float and an integer field: the float one unless it
/// is 0 (unset).
fn float_unless_zero(float: f64, int: u64) -> f64 {
    if float == 0.0 {
        int as f64
    } else {
        float
    }
}

/// A `Histogram`'s fields (classic and native).
#[derive(Debug, Default)]
pub(super) struct HistogramMsg {
    pub(super) sample_count: u64,
    pub(super) sample_count_float: f64,
    pub(super) sample_sum: f64,
    pub(super) buckets: Vec<BucketMsg>,
    pub(super) schema: i32,
    pub(super) zero_threshold: f64,
    pub(super) zero_count: u64,
    pub(super) zero_count_float: f64,
    pub(super) negative_spans: Vec<Span>,
    pub(super) negative_deltas: Vec<i64>,
    pub(super) negative_counts: Vec<f64>,
    pub(super) positive_spans: Vec<Span>,
    pub(super) positive_deltas: Vec<i64>,
    pub(super) positive_counts: Vec<f64>,
}

impl HistogramMsg {
    /// The classic histogram's sample count as Prometheus reads it: the
    /// float one unless 0.
    pub(super) fn count(&self) -> f64 {
        float_unless_zero(self.sample_count_float, self.sample_count)
    }

    fn reset(&mut self) {
        self.sample_count = 0;
        self.sample_count_float = 0.0;
        self.sample_sum = 0.0;
        self.buckets.clear();
        self.schema = 0;
        self.zero_threshold = 0.0;
        self.zero_count = 0;
        self.zero_count_float = 0.0;
        self.negative_spans.clear();
        self.negative_deltas.clear();
        self.negative_counts.clear();
        self.positive_spans.clear();
        self.positive_deltas.clear();
        self.positive_counts.clear();
    }

    /// Whether it has native parts (Prometheus' `isNativeHistogram`): a
    /// span, a zero threshold above 0 or an integer zero count above 0.
    pub(super) fn is_native(&self) -> bool {
        !self.positive_spans.is_empty()
            || !self.negative_spans.is_empty()
            || self.zero_threshold > 0.0
            || self.zero_count > 0
    }

    /// Whether its native parts are float counts (`isFloatHistogram`).
    pub(super) fn is_float(&self) -> bool {
        self.sample_count_float > 0.0
            || self.zero_count_float > 0.0
            || !self.positive_counts.is_empty()
            || !self.negative_counts.is_empty()
    }

    fn merge(&mut self, d: &[u8]) -> Result<(), ProtoError> {
        each_field(d, "Histogram", |r, n, wt| {
            match n {
                1 => {
                    want(wt, 0, "SampleCount")?;
                    self.sample_count = r.varint()?;
                }
                2 => {
                    want(wt, 1, "SampleSum")?;
                    self.sample_sum = r.double()?;
                }
                3 => {
                    want(wt, 2, "Bucket")?;
                    let b = r.bytes()?;
                    self.buckets.push(BucketMsg::default());
                    if let Some(last) = self.buckets.last_mut() {
                        bucket(last, b)?;
                    }
                }
                4 => {
                    want(wt, 1, "SampleCountFloat")?;
                    self.sample_count_float = r.double()?;
                }
                5 => {
                    want(wt, 0, "Schema")?;
                    self.schema = zigzag32(r.varint()?);
                }
                6 => {
                    want(wt, 1, "ZeroThreshold")?;
                    self.zero_threshold = r.double()?;
                }
                7 => {
                    want(wt, 0, "ZeroCount")?;
                    self.zero_count = r.varint()?;
                }
                8 => {
                    want(wt, 1, "ZeroCountFloat")?;
                    self.zero_count_float = r.double()?;
                }
                9 => {
                    want(wt, 2, "NegativeSpan")?;
                    span_into(&mut self.negative_spans, r.bytes()?)?;
                }
                10 => r.sint64s(wt, "NegativeDelta", &mut self.negative_deltas)?,
                11 => r.doubles(wt, "NegativeCount", &mut self.negative_counts)?,
                12 => {
                    want(wt, 2, "PositiveSpan")?;
                    span_into(&mut self.positive_spans, r.bytes()?)?;
                }
                13 => r.sint64s(wt, "PositiveDelta", &mut self.positive_deltas)?,
                14 => r.doubles(wt, "PositiveCount", &mut self.positive_counts)?,
                15 => {
                    want(wt, 2, "StartTimestamp")?;
                    timestamp(r.bytes()?)?;
                }
                16 => {
                    want(wt, 2, "Exemplars")?;
                    exemplar(r.bytes()?)?;
                }
                _ => return Ok(false),
            }
            Ok(true)
        })
    }
}

fn bucket(b: &mut BucketMsg, d: &[u8]) -> Result<(), ProtoError> {
    each_field(d, "Bucket", |r, n, wt| {
        match n {
            1 => {
                want(wt, 0, "CumulativeCount")?;
                b.cumulative_count = r.varint()?;
            }
            2 => {
                want(wt, 1, "UpperBound")?;
                b.upper_bound = r.double()?;
            }
            3 => {
                want(wt, 2, "Exemplar")?;
                exemplar(r.bytes()?)?;
            }
            4 => {
                want(wt, 1, "CumulativeCountFloat")?;
                b.cumulative_count_float = r.double()?;
            }
            _ => return Ok(false),
        }
        Ok(true)
    })
}

/// A `BucketSpan`, appended to `spans`.
fn span_into(spans: &mut Vec<Span>, d: &[u8]) -> Result<(), ProtoError> {
    spans.push(Span::default());
    let Some(s) = spans.last_mut() else {
        return Ok(());
    };
    each_field(d, "BucketSpan", |r, n, wt| {
        match n {
            1 => {
                want(wt, 0, "Offset")?;
                s.offset = zigzag32(r.varint()?);
            }
            2 => {
                want(wt, 0, "Length")?;
                s.length = r.varint()? as u32;
            }
            _ => return Ok(false),
        }
        Ok(true)
    })
}

/// Reads a one-`double` message (`Gauge`, `Untyped`, `Counter`'s value)
/// into `value`; a `Counter` also has an exemplar and a start timestamp.
fn value_message(d: &[u8], msg: &str, value: &mut f64) -> Result<(), ProtoError> {
    let counter = msg == "Counter";
    each_field(d, msg, |r, n, wt| {
        match n {
            1 => {
                want(wt, 1, "Value")?;
                *value = r.double()?;
            }
            2 if counter => {
                want(wt, 2, "Exemplar")?;
                exemplar(r.bytes()?)?;
            }
            3 if counter => {
                want(wt, 2, "StartTimestamp")?;
                timestamp(r.bytes()?)?;
            }
            _ => return Ok(false),
        }
        Ok(true)
    })
}

fn summary(s: &mut SummaryMsg, d: &[u8]) -> Result<(), ProtoError> {
    each_field(d, "Summary", |r, n, wt| {
        match n {
            1 => {
                want(wt, 0, "SampleCount")?;
                s.sample_count = r.varint()?;
            }
            2 => {
                want(wt, 1, "SampleSum")?;
                s.sample_sum = r.double()?;
            }
            3 => {
                want(wt, 2, "Quantile")?;
                let q = r.bytes()?;
                s.quantiles.push((0.0, 0.0));
                if let Some(last) = s.quantiles.last_mut() {
                    quantile(last, q)?;
                }
            }
            4 => {
                want(wt, 2, "StartTimestamp")?;
                timestamp(r.bytes()?)?;
            }
            _ => return Ok(false),
        }
        Ok(true)
    })
}

fn quantile(q: &mut (f64, f64), d: &[u8]) -> Result<(), ProtoError> {
    each_field(d, "Quantile", |r, n, wt| {
        match n {
            1 => {
                want(wt, 1, "Quantile")?;
                q.0 = r.double()?;
            }
            2 => {
                want(wt, 1, "Value")?;
                q.1 = r.double()?;
            }
            _ => return Ok(false),
        }
        Ok(true)
    })
}

/// The metric being read: reused from metric to metric (see the module
/// documentation for what is reset).
#[derive(Debug, Default)]
pub(super) struct MetricMsg<'a> {
    /// The `LabelPair`s' bytes, read by [`parse_label`] when asked.
    pub(super) labels: Vec<&'a [u8]>,
    pub(super) timestamp_ms: i64,
    pub(super) gauge: f64,
    pub(super) counter: f64,
    /// Never reset.
    pub(super) untyped: f64,
    pub(super) summary: SummaryMsg,
    pub(super) histogram: HistogramMsg,
}

impl<'a> MetricMsg<'a> {
    fn reset(&mut self) {
        self.labels.clear();
        self.timestamp_ms = 0;
        self.gauge = 0.0;
        self.counter = 0.0;
        self.summary.sample_count = 0;
        self.summary.sample_sum = 0.0;
        self.summary.quantiles.clear();
        self.histogram.reset();
    }

    fn read(&mut self, d: &'a [u8]) -> Result<(), ProtoError> {
        each_field(d, "Metric", |r, n, wt| {
            match n {
                1 => {
                    want(wt, 2, "Label")?;
                    self.labels.push(r.bytes()?);
                }
                2 => {
                    want(wt, 2, "Gauge")?;
                    value_message(r.bytes()?, "Gauge", &mut self.gauge)?;
                }
                3 => {
                    want(wt, 2, "Counter")?;
                    value_message(r.bytes()?, "Counter", &mut self.counter)?;
                }
                4 => {
                    want(wt, 2, "Summary")?;
                    summary(&mut self.summary, r.bytes()?)?;
                }
                5 => {
                    want(wt, 2, "Untyped")?;
                    value_message(r.bytes()?, "Untyped", &mut self.untyped)?;
                }
                6 => {
                    want(wt, 0, "TimestampMs")?;
                    self.timestamp_ms = r.varint()? as i64;
                }
                7 => {
                    want(wt, 2, "Histogram")?;
                    self.histogram.merge(r.bytes()?)?;
                }
                _ => return Ok(false),
            }
            Ok(true)
        })
    }
}

/// The streaming decoder: one metric family at a time, then its metrics
/// one at a time.
#[derive(Debug, Default)]
pub(super) struct Decoder<'a> {
    input: &'a [u8],
    pos: usize,
    pub(super) name: &'a [u8],
    pub(super) help: &'a [u8],
    pub(super) unit: &'a [u8],
    /// The `MetricType` as Go's `int32` enum holds it.
    pub(super) mtype: i32,
    metrics: Vec<&'a [u8]>,
    next_metric: usize,
    pub(super) metric: MetricMsg<'a>,
}

/// A decoder's step: `Ok(false)` at the end of the families, or of the
/// family's metrics.
pub(super) type Step = Result<bool, ProtoError>;

impl<'a> Decoder<'a> {
    pub(super) fn new(input: &'a [u8]) -> Self {
        Decoder {
            input,
            ..Decoder::default()
        }
    }

    /// Reads the next length-delimited `MetricFamily` without its metrics.
    pub(super) fn next_family(&mut self) -> Step {
        let b = &self.input[self.pos..];
        if b.is_empty() {
            return Ok(false);
        }
        // gogo's `proto.DecodeVarint`: at most 10 bytes, 0 on failure; a
        // length must fit 5.
        let mut len = 0u64;
        let mut n = 0usize;
        for (i, &c) in b.iter().take(10).enumerate() {
            len |= u64::from(c & 0x7f) << (7 * i);
            if c < 0x80 {
                n = i + 1;
                break;
            }
        }
        if n == 0 || n > 5 {
            return Err(ProtoError::new("clientpb: invalid varint encountered"));
        }
        let total = n + len as usize;
        if total > b.len() {
            return Err(ProtoError::new(format!(
                "clientpb: insufficient length of buffer, expected at least {total} bytes, got {} bytes",
                b.len()
            )));
        }
        self.name = &[];
        self.help = &[];
        self.unit = &[];
        self.mtype = 0;
        self.metrics.clear();
        self.next_metric = 0;
        let family = &b[n..total];
        self.pos += total;
        let (name, help, unit, mtype, metrics) = (
            &mut self.name,
            &mut self.help,
            &mut self.unit,
            &mut self.mtype,
            &mut self.metrics,
        );
        each_field(family, "MetricFamily", |r, n, wt| {
            match n {
                1 => {
                    want(wt, 2, "Name")?;
                    *name = r.bytes()?;
                }
                2 => {
                    want(wt, 2, "Help")?;
                    *help = r.bytes()?;
                }
                3 => {
                    want(wt, 0, "Type")?;
                    *mtype = r.varint()? as u32 as i32;
                }
                4 => {
                    want(wt, 2, "Metric")?;
                    metrics.push(r.bytes()?);
                }
                5 => {
                    want(wt, 2, "Unit")?;
                    *unit = r.bytes()?;
                }
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        Ok(true)
    }

    /// Reads the family's next metric (its labels left for
    /// [`parse_label`]).
    pub(super) fn next_metric(&mut self) -> Step {
        let Some(&m) = self.metrics.get(self.next_metric) else {
            return Ok(false);
        };
        self.metric.reset();
        self.metric.read(m)?;
        self.next_metric += 1;
        Ok(true)
    }
}
