//! The protobuf exposition format
//! (`application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily;
//! encoding=delimited`), parsed as Prometheus v3.16.0's scrape loop parses
//! it (`textparse.NewProtobufParser`, without type and unit labels).
//!
//! The body is a sequence of `MetricFamily` messages, each preceded by its
//! length as a varint. [`ProtoParser`] hands them out as the text formats'
//! parsers hand out lines, one [`ProtoEntry`] at a time:
//! - per family with at least one metric (an empty family gives nothing):
//!   `Help` (even empty), `Unit` if the family has one, `Type` (`untyped`
//!   is [`MetricType::Unknown`]), after checking the name (non-empty
//!   UTF-8), the help (UTF-8) and the type (one of the six);
//! - per counter, gauge and untyped metric: a `Series`;
//! - per summary: `_count`, `_sum`, then one series per quantile with a
//!   `quantile` label;
//! - per classic histogram (a histogram without native parts, or any
//!   histogram when native histograms are ignored): `_count`, `_sum`, then
//!   `_bucket` series with an `le` label up to the first `+Inf` bucket, or
//!   an added `+Inf` bucket holding the count; counts are the float ones
//!   when not 0, else the integer ones;
//! - per native histogram (one with a span, a zero threshold above 0 or an
//!   integer zero count above 0): a `Histogram`, then, with
//!   [`ProtoOptions::keep_classic_histograms`] and classic buckets, the
//!   classic series as above. Its spans must cover its buckets
//!   (`histogram "name": positive side: spans require 3 buckets, have 2`)
//!   when it is the first metric of its family or follows a classic
//!   series; after another native histogram Prometheus does not check,
//!   and neither does this (the head refuses the histogram).
//!
//! A series is known by its [`ProtoParser::series`] bytes, which are
//! Prometheus' own (`Series()`/`Histogram()`): the metric name, then for
//! each other label, sorted by name, `0xff name 0xff value` — the scrape
//! cache's key. They are built in a reused buffer, and `le`/`quantile`
//! values are formatted into one, so a known series costs no allocation;
//! [`ProtoParser::labels`] reads the labels of a new one. Labels are
//! sorted stably: `__name__` before a label of that name, `le` or
//! `quantile` after one of theirs. Prometheus' sort is stable only up to
//! 12 labels; beyond that, labels repeating a name may come out in
//! another order (such a series is refused by the storage anyway).
//!
//! With [`ProtoOptions::convert_classic_histograms_to_nhcb`], a classic
//! histogram (as above: no native parts, or native parts ignored) is
//! converted to a native histogram with custom buckets ([`crate::nhcb`]),
//! handed out as a `Histogram` of the family's name and the metric's
//! labels after its classic series, which are handed out only with
//! [`ProtoOptions::keep_classic_histograms`]; every bucket is converted,
//! also those after a `+Inf` one. A histogram that cannot be converted
//! fails the body with the conversion's error (`count is not cumulative:
//! 1 < 2`); a gauge histogram's conversion has the gauge hint.
//!
//! A native histogram is read by [`ProtoParser::histogram`] into the
//! caller's buffers: an integer one unless the float counts are used (a
//! float sample count or zero count above 0, or float bucket counts), with
//! empty buckets cut out as Prometheus cuts them (`Compact(0)`), and the
//! gauge hint for a gauge histogram. Timestamps of 0 are no timestamp.
//! Exemplars and start timestamps are decoded (their errors count) and
//! dropped.
//!
//! Errors are Prometheus' texts, down to gogo-protobuf's for malformed
//! bytes (see the `wire` module for its reading of the wire format); a
//! name, label name or value or help that is not UTF-8 appears in its
//! message as the raw bytes ([`ProtoError::as_bytes`]).
//! `interop/protobuf_test.go` checks all of this against Prometheus'
//! parser.

#[cfg(test)]
mod client_model;
mod compact;
mod omfloat;
mod wire;

use std::fmt;

use ferrite_model::goquote::quote;
use ferrite_model::{CounterResetHint, FloatHistogram, Histogram};

use crate::nhcb::ClassicHistogram;
use crate::parser::MetricType;
use wire::Decoder;

/// Why a protobuf body could not be read: Prometheus' message, as bytes
/// (it can quote bytes that are not UTF-8).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtoError(Vec<u8>);

impl ProtoError {
    fn new(msg: impl Into<String>) -> Self {
        ProtoError(msg.into().into_bytes())
    }

    fn with_bytes(prefix: &str, b: &[u8]) -> Self {
        let mut v = prefix.as_bytes().to_vec();
        v.extend_from_slice(b);
        ProtoError(v)
    }

    /// The message as Prometheus writes it.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

impl fmt::Display for ProtoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&String::from_utf8_lossy(&self.0))
    }
}

impl std::error::Error for ProtoError {}

/// What a scrape takes of histograms (the scrape loop's parser options).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProtoOptions {
    /// Native parts are ignored (`scrape_native_histograms: false`):
    /// every histogram is read as a classic one.
    pub ignore_native_histograms: bool,
    /// A native histogram's classic buckets are read too
    /// (`always_scrape_classic_histograms`); with
    /// [`Self::convert_classic_histograms_to_nhcb`], a converted classic
    /// histogram's series are kept too.
    pub keep_classic_histograms: bool,
    /// Classic histograms are converted to native histograms with custom
    /// buckets (`convert_classic_histograms_to_nhcb`).
    pub convert_classic_histograms_to_nhcb: bool,
}

/// One entry of a protobuf body. A series' bytes and labels, and a
/// native histogram, are read from the parser.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ProtoEntry<'a> {
    /// A family's help (possibly empty).
    Help {
        /// The family name.
        metric: &'a [u8],
        /// Its help text.
        text: &'a [u8],
    },
    /// A family's type.
    Type {
        /// The family name.
        metric: &'a [u8],
        /// Its type.
        kind: MetricType,
    },
    /// A family's unit (only when not empty).
    Unit {
        /// The family name.
        metric: &'a [u8],
        /// Its unit.
        unit: &'a [u8],
    },
    /// A float sample: [`ProtoParser::series`] has its bytes.
    Series {
        /// Its value.
        value: f64,
        /// Its timestamp in milliseconds, when given (not 0).
        timestamp: Option<i64>,
    },
    /// A native histogram (or a classic one converted to custom buckets):
    /// [`ProtoParser::series`] has its bytes, [`ProtoParser::histogram`]
    /// reads it.
    Histogram {
        /// Its timestamp in milliseconds, when given (not 0).
        timestamp: Option<i64>,
    },
}

/// Which buffer [`ProtoParser::histogram`] filled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HistogramKind {
    /// The integer histogram.
    Int,
    /// The float histogram.
    Float,
}

const COUNTER: i32 = 0;
const GAUGE: i32 = 1;
const SUMMARY: i32 = 2;
const UNTYPED: i32 = 3;
const HISTOGRAM: i32 = 4;
const GAUGE_HISTOGRAM: i32 = 5;

fn is_histogram_type(t: i32) -> bool {
    t == HISTOGRAM || t == GAUGE_HISTOGRAM
}

/// The Go name of a metric type (`MetricType.String()`), or its number.
fn type_name(t: i32) -> String {
    match t {
        COUNTER => "COUNTER".into(),
        GAUGE => "GAUGE".into(),
        SUMMARY => "SUMMARY".into(),
        UNTYPED => "UNTYPED".into(),
        HISTOGRAM => "HISTOGRAM".into(),
        GAUGE_HISTOGRAM => "GAUGE_HISTOGRAM".into(),
        other => other.to_string(),
    }
}

/// What the parser is at (Prometheus' entry kinds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Before the next family.
    Invalid,
    Help,
    Unit,
    Type,
    /// A float series of the current metric.
    Series,
    /// A native histogram.
    Histogram,
}

/// The streaming parser; see the module documentation.
pub struct ProtoParser<'a> {
    dec: Decoder<'a>,
    opts: ProtoOptions,
    state: State,
    /// Where in a summary or classic histogram: -2 `_count`, -1 `_sum`,
    /// else the quantile or bucket.
    field_pos: i64,
    /// No more series of the current summary or classic histogram.
    fields_done: bool,
    /// The native histogram just handed out has classic buckets to hand
    /// out next.
    redo_classic: bool,
    failed: Option<ProtoError>,
    /// The current metric's labels, sorted by name (stable).
    labels: Vec<(&'a [u8], &'a [u8])>,
    /// Whether `labels` are the current metric's.
    labels_read: bool,
    /// The current series' name suffix (`_count`...).
    suffix: &'static str,
    /// Its `le` or `quantile` label, if any; the value in `magic_value`.
    magic: Option<&'static [u8]>,
    magic_value: Vec<u8>,
    /// The current series' bytes.
    key: Vec<u8>,
    /// The classic histograms converted to custom buckets.
    nhcb: Converted,
}

/// A classic histogram converted to a native one with custom buckets: the
/// collector and the result (its buffers reused).
#[derive(Default)]
struct Converted {
    classic: ClassicHistogram,
    int: Histogram,
    float: FloatHistogram,
    /// Which buffer holds the histogram of the current entry, when it is
    /// a converted one.
    current: Option<HistogramKind>,
}

/// One label of the current series: the name, and the value in up to
/// two pieces (the metric name and its suffix).
type LabelParts<'s> = (&'s [u8], [&'s [u8]; 2]);

impl<'a> ProtoParser<'a> {
    /// A parser over a scraped body.
    pub fn new(body: &'a [u8], opts: ProtoOptions) -> Self {
        ProtoParser {
            dec: Decoder::new(body),
            opts,
            state: State::Invalid,
            field_pos: -2,
            fields_done: false,
            redo_classic: false,
            failed: None,
            labels: Vec::new(),
            labels_read: false,
            suffix: "",
            magic: None,
            magic_value: Vec::new(),
            key: Vec::new(),
            nhcb: Converted::default(),
        }
    }

    /// The next entry; `None` at the end of the body. After an error, the
    /// same error again.
    pub fn next_entry(&mut self) -> Result<Option<ProtoEntry<'a>>, ProtoError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        self.nhcb.current = None;
        let entry = self.advance();
        if let Err(e) = &entry {
            self.failed = Some(e.clone());
        }
        entry
    }

    /// The bytes of the last series or histogram (the scrape cache's key).
    pub fn series(&self) -> &[u8] {
        &self.key
    }

    /// The labels of the last series or histogram, sorted by name.
    pub fn labels(&self, out: &mut Vec<(String, String)>) {
        out.clear();
        self.each_label(|name, value| {
            let mut v = String::from_utf8_lossy(value[0]).into_owned();
            v.push_str(&String::from_utf8_lossy(value[1]));
            out.push((String::from_utf8_lossy(name).into_owned(), v));
        });
    }

    /// Reads the last native histogram into one of the buffers (its
    /// vectors reused), compacted, and says which.
    pub fn histogram(&self, int: &mut Histogram, float: &mut FloatHistogram) -> HistogramKind {
        match self.nhcb.current {
            Some(HistogramKind::Int) => {
                int.clone_from(&self.nhcb.int);
                return HistogramKind::Int;
            }
            Some(HistogramKind::Float) => {
                float.clone_from(&self.nhcb.float);
                return HistogramKind::Float;
            }
            None => {}
        }
        let h = &self.dec.metric.histogram;
        let hint = if self.dec.mtype == GAUGE_HISTOGRAM {
            CounterResetHint::Gauge
        } else {
            CounterResetHint::Unknown
        };
        if h.is_float() {
            float.counter_reset_hint = hint;
            float.schema = h.schema;
            float.zero_threshold = h.zero_threshold;
            float.zero_count = h.zero_count_float;
            float.count = h.sample_count_float;
            float.sum = h.sample_sum;
            refill(&mut float.positive_spans, &h.positive_spans);
            refill(&mut float.negative_spans, &h.negative_spans);
            refill(&mut float.positive_buckets, &h.positive_counts);
            refill(&mut float.negative_buckets, &h.negative_counts);
            float.custom_values.clear();
            compact::compact(
                &mut float.positive_buckets,
                &mut float.positive_spans,
                false,
            );
            compact::compact(
                &mut float.negative_buckets,
                &mut float.negative_spans,
                false,
            );
            HistogramKind::Float
        } else {
            int.counter_reset_hint = hint;
            int.schema = h.schema;
            int.zero_threshold = h.zero_threshold;
            int.zero_count = h.zero_count;
            int.count = h.sample_count;
            int.sum = h.sample_sum;
            refill(&mut int.positive_spans, &h.positive_spans);
            refill(&mut int.negative_spans, &h.negative_spans);
            refill(&mut int.positive_buckets, &h.positive_deltas);
            refill(&mut int.negative_buckets, &h.negative_deltas);
            int.custom_values.clear();
            compact::compact(&mut int.positive_buckets, &mut int.positive_spans, true);
            compact::compact(&mut int.negative_buckets, &mut int.negative_spans, true);
            HistogramKind::Int
        }
    }

    /// The name of the current metric family.
    pub fn family_name(&self) -> &'a [u8] {
        self.dec.name
    }

    /// Whether the last series belongs to a classic histogram (one whose
    /// native parts are absent or ignored): what Prometheus would convert
    /// with `convert_classic_histograms_to_nhcb`.
    pub fn is_classic_histogram(&self) -> bool {
        self.state == State::Series && is_histogram_type(self.dec.mtype) && self.is_classic_metric()
    }

    fn is_classic_metric(&self) -> bool {
        self.opts.ignore_native_histograms || !self.dec.metric.histogram.is_native()
    }

    fn next_metric(&mut self) -> Result<bool, ProtoError> {
        let more = self.dec.next_metric()?;
        if more {
            self.labels_read = false;
        }
        Ok(more)
    }

    /// Prometheus' `Next`, its recursion unrolled: each arm either hands
    /// out an entry or moves to another state and goes round again.
    fn advance(&mut self) -> Result<Option<ProtoEntry<'a>>, ProtoError> {
        loop {
            match self.state {
                State::Invalid => {
                    self.field_pos = -2;
                    if !self.dec.next_family()? {
                        return Ok(None);
                    }
                    if !self.next_metric()? {
                        continue; // An empty family: nothing of it.
                    }
                    self.check_family()?;
                    self.state = State::Help;
                    return Ok(Some(ProtoEntry::Help {
                        metric: self.dec.name,
                        text: self.dec.help,
                    }));
                }
                State::Help => {
                    if self.dec.unit.is_empty() {
                        self.state = State::Type;
                        return Ok(Some(self.type_entry()));
                    }
                    self.state = State::Unit;
                    return Ok(Some(ProtoEntry::Unit {
                        metric: self.dec.name,
                        unit: self.dec.unit,
                    }));
                }
                State::Unit => {
                    self.state = State::Type;
                    return Ok(Some(self.type_entry()));
                }
                State::Type => {
                    if is_histogram_type(self.dec.mtype) {
                        if self.is_classic_metric() {
                            self.state = State::Series;
                            self.field_pos = -3;
                            continue;
                        }
                        self.check_native()?;
                        self.state = State::Histogram;
                    } else {
                        self.state = State::Series;
                    }
                    return self.update().map(Some);
                }
                State::Series => {
                    let t = self.dec.mtype;
                    let mut check_next_kind = false;
                    if t == SUMMARY || is_histogram_type(t) {
                        let convert = is_histogram_type(t)
                            && self.opts.convert_classic_histograms_to_nhcb
                            && self.is_classic_metric();
                        let skip_classic = convert && !self.opts.keep_classic_histograms;
                        if !self.fields_done && !skip_classic {
                            self.field_pos += 1;
                            return self.update().map(Some);
                        }
                        self.field_pos = -2;
                        self.fields_done = false;
                        if convert {
                            // The converted histogram, before the next metric.
                            self.convert_to_nhcb()?;
                            self.state = State::Histogram;
                            return self.update().map(Some);
                        }
                        check_next_kind = is_histogram_type(t);
                    }
                    if !self.next_metric()? {
                        self.state = State::Invalid;
                        continue;
                    }
                    if check_next_kind {
                        if self.is_classic_metric() {
                            self.field_pos = -3;
                            self.fields_done = false;
                            continue;
                        }
                        self.check_native()?;
                        self.state = State::Histogram;
                    }
                    return self.update().map(Some);
                }
                State::Histogram => {
                    if !self.redo_classic && !self.next_metric()? {
                        self.state = State::Invalid;
                        continue;
                    }
                    if self.redo_classic || self.is_classic_metric() {
                        self.redo_classic = false;
                        self.field_pos = -3;
                        self.fields_done = false;
                        self.state = State::Series;
                        continue;
                    }
                    return self.update().map(Some);
                }
            }
        }
    }

    /// The checks of a family's first metric: name, help, type.
    fn check_family(&self) -> Result<(), ProtoError> {
        let name = self.dec.name;
        let Ok(name_str) = std::str::from_utf8(name) else {
            return Err(ProtoError::with_bytes("invalid metric name: ", name));
        };
        if name.is_empty() {
            return Err(ProtoError::new("invalid metric name: "));
        }
        if std::str::from_utf8(self.dec.help).is_err() {
            let prefix = format!("invalid help for metric {}: ", quote(name_str));
            return Err(ProtoError::with_bytes(&prefix, self.dec.help));
        }
        if !(COUNTER..=GAUGE_HISTOGRAM).contains(&self.dec.mtype) {
            return Err(ProtoError::new(format!(
                "unknown metric type for metric {}: {}",
                quote(name_str),
                type_name(self.dec.mtype)
            )));
        }
        Ok(())
    }

    /// A native histogram's spans must cover its buckets.
    fn check_native(&self) -> Result<(), ProtoError> {
        let h = &self.dec.metric.histogram;
        let (pos, neg) = if h.is_float() {
            (h.positive_counts.len(), h.negative_counts.len())
        } else {
            (h.positive_deltas.len(), h.negative_deltas.len())
        };
        for (side, spans, have) in [
            ("positive", &h.positive_spans, pos),
            ("negative", &h.negative_spans, neg),
        ] {
            let need: u64 = spans.iter().map(|s| u64::from(s.length)).sum();
            if need != have as u64 {
                let name = String::from_utf8_lossy(self.dec.name);
                return Err(ProtoError::new(format!(
                    "histogram {}: {side} side: spans require {need} buckets, have {have}",
                    quote(&name)
                )));
            }
        }
        Ok(())
    }

    fn type_entry(&self) -> ProtoEntry<'a> {
        let kind = match self.dec.mtype {
            COUNTER => MetricType::Counter,
            GAUGE => MetricType::Gauge,
            HISTOGRAM => MetricType::Histogram,
            GAUGE_HISTOGRAM => MetricType::GaugeHistogram,
            SUMMARY => MetricType::Summary,
            _ => MetricType::Unknown,
        };
        ProtoEntry::Type {
            metric: self.dec.name,
            kind,
        }
    }

    /// Prometheus' `onSeriesOrHistogramUpdate`: the current series' name,
    /// labels and bytes; then the entry, its value read (which, for a
    /// summary's `_sum`, ends a summary without quantiles).
    fn update(&mut self) -> Result<ProtoEntry<'a>, ProtoError> {
        if !self.labels_read {
            self.labels.clear();
            for &l in &self.dec.metric.labels {
                self.labels.push(wire::parse_label(l)?);
            }
            self.labels.sort_by(|a, b| a.0.cmp(b.0));
            self.labels_read = true;
        }
        let t = self.dec.mtype;
        let hist = is_histogram_type(t);
        let native = self.state == State::Histogram;
        self.suffix = match self.field_pos {
            _ if native || !(hist || t == SUMMARY) => "",
            -2 => "_count",
            -1 => "_sum",
            _ if hist => "_bucket",
            _ => "",
        };
        self.magic = None;
        self.magic_value.clear();
        if !native && self.field_pos >= 0 {
            let pos = self.field_pos as usize;
            let m = &self.dec.metric;
            if t == SUMMARY {
                let qq = &m.summary.quantiles;
                if pos >= qq.len() {
                    self.fields_done = true;
                } else {
                    self.fields_done = pos == qq.len() - 1;
                    self.magic = Some(b"quantile");
                    omfloat::write_om_float(&mut self.magic_value, qq[pos].0);
                }
            } else if hist {
                let bb = &m.histogram.buckets;
                self.magic = Some(b"le");
                match bb.get(pos) {
                    None => {
                        self.fields_done = true;
                        self.magic_value.extend_from_slice(b"+Inf");
                    }
                    Some(b) => {
                        self.fields_done = b.upper_bound == f64::INFINITY;
                        omfloat::write_om_float(&mut self.magic_value, b.upper_bound);
                    }
                }
            }
        }
        let mut key = std::mem::take(&mut self.key);
        key.clear();
        self.each_label(|name, value| {
            if name != b"__name__" {
                key.push(0xff);
                key.extend_from_slice(name);
                key.push(0xff);
            }
            key.extend_from_slice(value[0]);
            key.extend_from_slice(value[1]);
        });
        self.key = key;

        let ts = self.dec.metric.timestamp_ms;
        let timestamp = (ts != 0).then_some(ts);
        if native {
            if self.nhcb.current.is_none()
                && self.opts.keep_classic_histograms
                && !self.dec.metric.histogram.buckets.is_empty()
            {
                self.redo_classic = true;
            }
            return Ok(ProtoEntry::Histogram { timestamp });
        }
        let value = self.series_value();
        Ok(ProtoEntry::Series { value, timestamp })
    }

    /// Converts the current classic histogram (Prometheus'
    /// `convertToNHCB`): its count (the float one unless 0), its sum, then
    /// every bucket as it comes.
    fn convert_to_nhcb(&mut self) -> Result<(), ProtoError> {
        let h = &self.dec.metric.histogram;
        let c = &mut self.nhcb.classic;
        c.reset();
        let collected = c
            .set_count(h.count())
            .and_then(|()| c.set_sum(h.sample_sum));
        let collected = h.buckets.iter().fold(collected, |done, b| {
            done.and_then(|()| c.set_bucket_count(b.upper_bound, b.count()))
        });
        let kind = collected
            .and_then(|()| c.convert(&mut self.nhcb.int, &mut self.nhcb.float))
            .map_err(|e| ProtoError::new(e.to_string()))?;
        if self.dec.mtype == GAUGE_HISTOGRAM {
            match kind {
                HistogramKind::Int => self.nhcb.int.counter_reset_hint = CounterResetHint::Gauge,
                HistogramKind::Float => {
                    self.nhcb.float.counter_reset_hint = CounterResetHint::Gauge;
                }
            }
        }
        self.nhcb.current = Some(kind);
        Ok(())
    }

    /// Prometheus' `Series()` value.
    fn series_value(&mut self) -> f64 {
        let m = &self.dec.metric;
        let pos = usize::try_from(self.field_pos).ok();
        match self.dec.mtype {
            COUNTER => m.counter,
            GAUGE => m.gauge,
            UNTYPED => m.untyped,
            SUMMARY => match self.field_pos {
                -2 => m.summary.sample_count as f64,
                -1 => {
                    if m.summary.quantiles.is_empty() {
                        self.fields_done = true;
                    }
                    m.summary.sample_sum
                }
                _ => pos
                    .and_then(|p| m.summary.quantiles.get(p))
                    .map_or(0.0, |q| q.1),
            },
            _ => {
                let h = &m.histogram;
                match (self.field_pos, pos.and_then(|p| h.buckets.get(p))) {
                    (-1, _) => h.sample_sum,
                    (_, Some(b)) => b.count(),
                    _ => h.count(),
                }
            }
        }
    }

    /// Calls `f` with each label of the current series in order: the
    /// metric's labels sorted by name, `__name__` (name and suffix) before
    /// any of that name, the `le`/`quantile` label after any of its name.
    fn each_label(&self, mut f: impl FnMut(&[u8], [&[u8]; 2])) {
        let mut name: Option<LabelParts<'_>> =
            Some((b"__name__", [self.dec.name, self.suffix.as_bytes()]));
        let mut magic: Option<LabelParts<'_>> =
            self.magic.map(|m| (m, [&self.magic_value[..], &[][..]]));
        for &(n, v) in &self.labels {
            // "__name__" sorts before "le" and "quantile": once a label
            // passes the magic one, it has passed the name too.
            if let Some((nn, nv)) = name.filter(|(nn, _)| n >= *nn) {
                f(nn, nv);
                name = None;
            }
            if let Some((mn, mv)) = magic.filter(|(mn, _)| n > *mn) {
                f(mn, mv);
                magic = None;
            }
            f(n, [v, &[]]);
        }
        if let Some((nn, nv)) = name {
            f(nn, nv);
        }
        if let Some((mn, mv)) = magic {
            f(mn, mv);
        }
    }
}

/// `dst` made a copy of `src`, its allocation reused.
fn refill<T: Copy>(dst: &mut Vec<T>, src: &[T]) {
    dst.clear();
    dst.extend_from_slice(src);
}

#[cfg(test)]
mod tests;
