//! From a request body to validated series.
//!
//! Decoding is total: any bytes give a value or a typed error, never a
//! panic, and nothing is allocated from an untrusted length before it is
//! checked (the snappy header against the size limit and against what the
//! body could expand to; protobuf lengths are bounded by the bytes
//! present). What decoding allocates is bounded by a [`Budget`]
//! proportional to the body (see [`crate::cost`]): prost's structs are
//! estimated from the wire form before decoding, and a 2.0 request's symbol
//! references are charged as they are resolved (into labels, metadata or
//! error messages), so a large symbol referenced by every series cannot
//! make the receiver copy it for each.
//!
//! Per-series rules, as Prometheus' receiver applies them (its handler, then
//! the head appender):
//!
//! * labels are sorted by name; the set must contain `__name__`, every
//!   name/value must pass [`ValidationScheme`] (Prometheus' receiver always
//!   uses UTF-8 validation: names non-empty valid UTF-8, values valid UTF-8,
//!   the metric name non-empty); then duplicate names are refused; then
//!   labels with empty values are dropped (a `foo=""` label is "no foo").
//!   An empty set fails the first check, so it never reaches the store.
//! * 2.0 only: label refs must come in pairs and point into the symbols
//!   table; then the metadata's unit ref, then its help ref, must too; a
//!   series needs at least one sample or histogram; exemplar refs are
//!   checked as label refs (a bad exemplar is dropped, not its series).
//!   Metadata that is empty (unknown type, no help, no unit) is dropped:
//!   v3.16 hands it to its head, which records none. A series' exemplars
//!   are sorted by timestamp, value and labels, as v3.16 appends them.
//!
//! A refused series does not fail the request: 1.0 drops it silently, 2.0
//! writes the rest and answers 400 listing every problem (the spec's
//! partial write). [`WriteRequest::verdict`] encodes that.

use ferrite_model::{Label, Labels, METRIC_NAME};
use prost::Message;

use crate::cost::{self, decoded_size, Budget};
use crate::histogram::{self, HistogramSample};
use crate::proto::{v1, v2};
use crate::response::WriteStats;
use crate::text::labels_string;
use crate::{DecodeOptions, MessageType, RequestError, SNAPPY_ENCODING};

use ferrite_model::is_legacy_label_name;
pub use ferrite_model::ValidationScheme;

/// A float sample.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    pub timestamp: i64,
    pub value: f64,
    /// 2.0's `start_timestamp` (formerly "created timestamp"); 0 = not set,
    /// and always 0 for 1.0.
    pub start_timestamp: i64,
}

/// An exemplar attached to a series. Labels are sorted with empty values
/// dropped (as the head does before storing one).
#[derive(Debug, Clone, PartialEq)]
pub struct Exemplar {
    pub labels: Labels,
    pub value: f64,
    pub timestamp: i64,
}

/// Prometheus' metric types (`model.MetricType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum MetricType {
    #[default]
    Unknown,
    Counter,
    Gauge,
    Histogram,
    GaugeHistogram,
    Summary,
    Info,
    Stateset,
}

impl MetricType {
    /// From either proto enum (both number the types alike); unknown numbers
    /// are `Unknown`, as in Prometheus.
    pub fn from_proto(v: i32) -> MetricType {
        match v {
            1 => MetricType::Counter,
            2 => MetricType::Gauge,
            3 => MetricType::Histogram,
            4 => MetricType::GaugeHistogram,
            5 => MetricType::Summary,
            6 => MetricType::Info,
            7 => MetricType::Stateset,
            _ => MetricType::Unknown,
        }
    }

    /// Prometheus' spelling (`counter`, `gaugehistogram`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            MetricType::Unknown => "unknown",
            MetricType::Counter => "counter",
            MetricType::Gauge => "gauge",
            MetricType::Histogram => "histogram",
            MetricType::GaugeHistogram => "gaugehistogram",
            MetricType::Summary => "summary",
            MetricType::Info => "info",
            MetricType::Stateset => "stateset",
        }
    }
}

/// Metric metadata: 1.0 sends it per metric family (request level), 2.0 per
/// series (then `metric_family` is empty). Text that is not UTF-8 is
/// converted lossily (Prometheus keeps the bytes; it only stores metadata).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MetricMetadata {
    pub metric_family: String,
    pub kind: MetricType,
    pub help: String,
    pub unit: String,
}

impl MetricMetadata {
    /// Prometheus' `Metadata.IsEmpty`: unknown type, no help, no unit (the
    /// family is not looked at). Prometheus v3.16's head records no such
    /// metadata (`tsdb/head_append_v2.go`).
    pub fn is_empty(&self) -> bool {
        self.kind == MetricType::Unknown && self.help.is_empty() && self.unit.is_empty()
    }
}

/// A series that passed validation, with what to append to it.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Sorted, unique names, no empty values, contains `__name__`.
    pub labels: Labels,
    pub samples: Vec<Sample>,
    pub exemplars: Vec<Exemplar>,
    /// Native histogram samples, in request order (appended after the
    /// float samples, as Prometheus does).
    pub histograms: Vec<HistogramSample>,
    /// 2.0: the series' metadata, `None` when it is empty (none sent, or
    /// unknown type, no help and no unit: Prometheus v3.16 attaches it to
    /// the series' appends, and its head records none of it).
    /// 1.0: `None` (see [`WriteRequest::metadata`]).
    pub metadata: Option<MetricMetadata>,
}

/// A problem with one series (or its exemplars/histograms). `Display` is the
/// text Prometheus' 2.0 receiver puts in its 400 answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SeriesError {
    #[error("parsing labels for series {refs}: invalid labelRefs length {len}")]
    LabelRefsLength { refs: String, len: usize },
    #[error("parsing labels for series {refs}: labelRefs {name_ref} (name) = {value_ref} (value) outside of symbols table (size {symbols})")]
    LabelRefsOutOfRange {
        refs: String,
        name_ref: u32,
        value_ref: u32,
        symbols: usize,
    },
    /// v3.16's `ToMetadata` checks the unit ref, then the help ref; the
    /// first out of range is reported.
    #[error("parsing metadata for series {refs}: metadata {field} {symbol_ref} outside of symbols table (size {symbols})")]
    MetadataRefOutOfRange {
        refs: String,
        field: MetadataRef,
        symbol_ref: u32,
        symbols: usize,
    },
    #[error("invalid metric name or labels, got {labels}")]
    InvalidLabels { labels: String },
    #[error("invalid labels for series, labels {labels}, duplicated label {name}")]
    DuplicateLabel { labels: String, name: String },
    #[error("TimeSeries must contain at least one sample or histogram for series {labels}")]
    NoSamples { labels: String },
    #[error("parsing exemplar for series {labels}: {reason}")]
    ExemplarRefs { labels: String, reason: String },
}

impl SeriesError {
    /// Whether the whole series was refused (versus some of its data).
    pub fn refuses_series(&self) -> bool {
        !matches!(self, SeriesError::ExemplarRefs { .. })
    }
}

/// Which reference of a 2.0 series' metadata (`Display`: the field's name).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetadataRef {
    Unit,
    Help,
}

impl std::fmt::Display for MetadataRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            MetadataRef::Unit => "unit_ref",
            MetadataRef::Help => "help_ref",
        })
    }
}

/// What the server should do with a decoded request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Append every series; answer [`crate::SUCCESS_STATUS`] (204).
    Accept,
    /// 2.0: append every series (the valid part), then answer 400 with this
    /// message (problems joined by `\n`, as Go's `errors.Join`).
    PartialWrite(String),
}

/// A decoded, validated request.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct WriteRequest {
    /// `None` only for a default-constructed value.
    pub message: Option<MessageType>,
    /// Valid series in request order (2.0 may repeat a label set).
    pub series: Vec<Series>,
    /// Problems, in request order.
    pub errors: Vec<SeriesError>,
    /// 1.0's request-level metadata (2.0 has it per series).
    pub metadata: Vec<MetricMetadata>,
    /// Float and histogram samples in series refused for their labels
    /// (Prometheus counts these in
    /// `prometheus_api_remote_write_invalid_labels_samples_total`; not those
    /// refused for their metadata or for having no samples).
    pub invalid_label_samples: usize,
}

impl WriteRequest {
    /// What Prometheus' rules make of [`WriteRequest::errors`].
    pub fn verdict(&self) -> Verdict {
        if self.errors.is_empty() {
            return Verdict::Accept;
        }
        match self.message {
            Some(MessageType::V2) => Verdict::PartialWrite(join(self.errors.iter())),
            // 1.0: bad series are dropped without a word.
            _ => Verdict::Accept,
        }
    }

    /// The 2.0 response counts if every sample, histogram and exemplar
    /// appends.
    pub fn stats(&self) -> WriteStats {
        WriteStats {
            samples: self.sample_count(),
            histograms: self.histogram_count(),
            exemplars: self.exemplar_count(),
        }
    }

    /// Native histogram samples to append.
    pub fn histogram_count(&self) -> usize {
        self.series.iter().map(|s| s.histograms.len()).sum()
    }

    /// Float samples to append.
    pub fn sample_count(&self) -> usize {
        self.series.iter().map(|s| s.samples.len()).sum()
    }

    /// Exemplars to append.
    pub fn exemplar_count(&self) -> usize {
        self.series.iter().map(|s| s.exemplars.len()).sum()
    }

    /// Metadata entries (1.0 request level, or 2.0 series that carry any).
    pub fn metadata_count(&self) -> usize {
        self.metadata.len() + self.series.iter().filter(|s| s.metadata.is_some()).count()
    }
}

fn join<'a>(errs: impl Iterator<Item = &'a SeriesError>) -> String {
    errs.map(|e| e.to_string()).collect::<Vec<_>>().join("\n")
}

/// Decodes a whole request from its headers (`None` = absent) and body,
/// checking in Prometheus' order: encoding, snappy, content type, accepted
/// message, protobuf.
pub fn decode_request(
    content_type: Option<&str>,
    content_encoding: Option<&str>,
    body: &[u8],
    opts: &DecodeOptions,
) -> Result<WriteRequest, RequestError> {
    let mut raw = Vec::new();
    let message = read_body(content_type, content_encoding, body, opts, &mut raw)?;
    decode_message(message, &raw, opts)
}

/// The steps of [`decode_request`] before the protobuf: checks the headers
/// and decompresses the body into `raw` (a buffer the caller may reuse).
/// Returns the message type the body holds.
pub fn read_body(
    content_type: Option<&str>,
    content_encoding: Option<&str>,
    body: &[u8],
    opts: &DecodeOptions,
    raw: &mut Vec<u8>,
) -> Result<MessageType, RequestError> {
    if let Some(enc) = content_encoding {
        if !enc.is_empty() && enc != SNAPPY_ENCODING {
            return Err(RequestError::UnsupportedEncoding(enc.to_owned()));
        }
    }
    decompress_into(body, opts.max_decoded_size, raw)?;
    let message = MessageType::from_content_type(content_type)?;
    if !opts.accepted.contains(message) {
        return Err(RequestError::not_accepted(message, opts.accepted));
    }
    Ok(message)
}

/// The last step of [`decode_request`]: the protobuf of a decompressed
/// body, within its memory budget ([`DecodeOptions::memory_per_body_byte`]).
pub fn decode_message(
    message: MessageType,
    raw: &[u8],
    opts: &DecodeOptions,
) -> Result<WriteRequest, RequestError> {
    let mut budget = Budget::for_body(raw.len(), opts.memory_per_body_byte);
    Ok(match message {
        MessageType::V1 => {
            budget.charge(decoded_size(raw, &cost::V1_REQUEST))?;
            convert_v1_within(&decode_v1(raw)?, opts.validation, &mut budget)?
        }
        MessageType::V2 => {
            budget.charge(decoded_size(raw, &cost::V2_REQUEST))?;
            convert_v2(&decode_v2(raw)?, opts.validation, &mut budget)?
        }
    })
}

/// Snappy block format, as Go's `snappy.Decode`, refusing bodies whose
/// header announces more than `limit` bytes before decompressing.
pub fn decompress(body: &[u8], limit: usize) -> Result<Vec<u8>, RequestError> {
    let mut out = Vec::new();
    decompress_into(body, limit, &mut out)?;
    Ok(out)
}

/// [`decompress`] into a buffer the caller reuses.
pub fn decompress_into(body: &[u8], limit: usize, out: &mut Vec<u8>) -> Result<(), RequestError> {
    // The header is a Go uvarint; Go refuses an empty body and lengths
    // above 2^32-1 as corrupt (snap would accept the empty body).
    let len = uvarint(body).ok_or(RequestError::Snappy)?;
    if len > u64::from(u32::MAX) {
        return Err(RequestError::Snappy);
    }
    if len > limit as u64 {
        return Err(RequestError::TooLarge { size: len, limit });
    }
    // A header announcing more than the body can expand to is corrupt:
    // refused before the buffer for it is allocated (decompressing would
    // fail anyway).
    if len > max_snappy_expansion(body.len()) {
        return Err(RequestError::Snappy);
    }
    // Only the bytes the buffer lacks are zeroed: a successful
    // decompression writes every byte (it must give exactly `len`).
    let len = len as usize;
    if out.len() < len {
        out.resize(len, 0);
    } else {
        out.truncate(len);
    }
    match snap::raw::Decoder::new().decompress(body, out) {
        Ok(n) if n == out.len() => Ok(()),
        _ => {
            out.clear();
            Err(RequestError::Snappy)
        }
    }
}

/// The most a snappy block of `compressed` bytes (header included) can
/// decompress to. Literals give one byte per byte; the densest element is
/// a copy with a 2-byte offset, 3 bytes for up to 64.
pub fn max_snappy_expansion(compressed: usize) -> u64 {
    (compressed as u64).saturating_mul(64) / 3
}

/// Go's `binary.Uvarint`, `None` where it reports n <= 0.
fn uvarint(b: &[u8]) -> Option<u64> {
    let mut x = 0u64;
    for (i, &c) in b.iter().enumerate().take(10) {
        if c < 0x80 {
            if i == 9 && c > 1 {
                return None;
            }
            return Some(x | u64::from(c) << (7 * i));
        }
        x |= u64::from(c & 0x7f) << (7 * i);
    }
    None
}

/// The protobuf of a 1.0 request (already decompressed).
pub fn decode_v1(raw: &[u8]) -> Result<v1::WriteRequest, RequestError> {
    v1::WriteRequest::decode(raw).map_err(|e| RequestError::Protobuf {
        message: MessageType::V1,
        reason: e.to_string(),
    })
}

/// The protobuf of a 2.0 request (already decompressed).
pub fn decode_v2(raw: &[u8]) -> Result<v2::Request, RequestError> {
    v2::Request::decode(raw).map_err(|e| RequestError::Protobuf {
        message: MessageType::V2,
        reason: e.to_string(),
    })
}

/// Sorts and validates raw labels; `Err` is the series' problem.
fn validate<'a>(
    raw: &mut [(&'a [u8], &'a [u8])],
    scheme: ValidationScheme,
) -> Result<Labels, SeriesError> {
    let mut pairs = Vec::with_capacity(raw.len());
    validate_pairs(raw, scheme, &mut pairs)?;
    Ok(Labels::from_sorted(
        pairs
            .into_iter()
            .map(|(n, v)| Label {
                name: n.into(),
                value: v.into(),
            })
            .collect(),
    ))
}

/// Sorts and validates raw labels as Prometheus' receiver does; on success
/// `out` holds the label set (sorted, empty values dropped).
pub(crate) fn validate_pairs<'a>(
    raw: &mut [(&'a [u8], &'a [u8])],
    scheme: ValidationScheme,
    out: &mut Vec<(&'a str, &'a str)>,
) -> Result<(), SeriesError> {
    out.clear();
    // Stable, like Go's insertion sort for the small sets series have.
    raw.sort_by(|a, b| a.0.cmp(b.0));
    let mut has_name = false;
    let mut valid = true;
    for &(n, v) in raw.iter() {
        let is_name = n == METRIC_NAME.as_bytes();
        has_name |= is_name;
        let (Ok(ns), Ok(vs)) = (std::str::from_utf8(n), std::str::from_utf8(v)) else {
            valid = false;
            break;
        };
        // Both are valid UTF-8 here, so the UTF-8 scheme only needs non-empty.
        let (name_ok, metric_ok) = match scheme {
            ValidationScheme::Utf8 => (!n.is_empty(), !is_name || !v.is_empty()),
            ValidationScheme::Legacy => (
                is_legacy_label_name(n),
                !is_name || scheme.is_valid_metric_name(v),
            ),
        };
        if !name_ok || !metric_ok {
            valid = false;
            break;
        }
        if !vs.is_empty() {
            out.push((ns, vs));
        }
    }
    if !has_name || !valid {
        out.clear();
        return Err(SeriesError::InvalidLabels {
            labels: labels_string(raw),
        });
    }
    if let Some(w) = raw.windows(2).find(|w| w[0].0 == w[1].0) {
        out.clear();
        return Err(SeriesError::DuplicateLabel {
            labels: labels_string(raw),
            name: String::from_utf8_lossy(w[0].0).into_owned(),
        });
    }
    Ok(())
}

/// What [`validate_structure`] found of a series' labels.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Structure {
    Invalid,
    /// Valid, and they came sorted by name.
    Sorted,
    /// Valid once sorted.
    Unsorted,
}

impl Structure {
    pub(crate) fn is_valid(self) -> bool {
        self != Structure::Invalid
    }
}

/// Every rule of [`validate_pairs`] but one: the UTF-8 validity of the
/// labels that stay (those with non-empty values), which `kept` receives as
/// bytes, sorted. So `raw` is valid iff this holds and `kept` is UTF-8 —
/// which a receiver need not check when `kept` equals a stored label set.
pub(crate) fn validate_structure<'a>(
    raw: &mut [(&'a [u8], &'a [u8])],
    scheme: ValidationScheme,
    kept: &mut Vec<(&'a [u8], &'a [u8])>,
) -> Structure {
    kept.clear();
    // Senders sort their labels: one comparison per pair finds them
    // sorted and without a repeated name, where sorting and then looking
    // for repeats took two.
    let sorted = raw.windows(2).all(|w| name_before(w[0].0, w[1].0));
    if !sorted {
        raw.sort_by(|a, b| a.0.cmp(b.0));
    }
    let mut has_name = false;
    for &(n, v) in raw.iter() {
        let is_name = n == METRIC_NAME.as_bytes();
        has_name |= is_name;
        let ok = match scheme {
            // A dropped label's name is checked here, a kept one's later.
            ValidationScheme::Utf8 => {
                !n.is_empty()
                    && (!v.is_empty() || std::str::from_utf8(n).is_ok())
                    && (!is_name || !v.is_empty())
            }
            ValidationScheme::Legacy => {
                is_legacy_label_name(n) && (!is_name || scheme.is_valid_metric_name(v))
            }
        };
        if !ok {
            return Structure::Invalid;
        }
        if !v.is_empty() {
            kept.push((n, v));
        }
    }
    match (has_name, sorted) {
        (false, _) => Structure::Invalid,
        (true, true) => Structure::Sorted,
        (true, false) if raw.windows(2).any(|w| w[0].0 == w[1].0) => Structure::Invalid,
        (true, false) => Structure::Unsorted,
    }
}

/// `a < b`, deciding by the first bytes where they differ (as most
/// label names of a set do) instead of calling `memcmp`.
#[inline]
fn name_before(a: &[u8], b: &[u8]) -> bool {
    match (a.first(), b.first()) {
        (Some(x), Some(y)) if x != y => x < y,
        _ => a < b,
    }
}

/// The UTF-8 check [`validate_structure`] leaves out: `kept` as strings.
pub(crate) fn utf8_pairs<'a>(
    kept: &[(&'a [u8], &'a [u8])],
    out: &mut Vec<(&'a str, &'a str)>,
) -> bool {
    out.clear();
    for &(n, v) in kept {
        let (Ok(n), Ok(v)) = (std::str::from_utf8(n), std::str::from_utf8(v)) else {
            out.clear();
            return false;
        };
        out.push((n, v));
    }
    true
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A series' exemplars in the order Prometheus v3.16 appends them
/// (`write_handler.go` sorts them with `exemplar.Compare` first): by
/// timestamp, then value, then labels. Go's sort is unstable, and its
/// comparison ties a NaN with any value, 0 with -0, and labels that differ
/// only in empty values; the order of such ties is Go's sort's accident,
/// and here it is a total order's (`f64::total_cmp`).
fn sort_exemplars(exemplars: &mut [Exemplar]) {
    exemplars.sort_by(|a, b| {
        a.timestamp
            .cmp(&b.timestamp)
            .then(a.value.total_cmp(&b.value))
            .then_with(|| a.labels.cmp(&b.labels))
    });
}

/// Exemplar labels as Prometheus keeps them: stable-sorted by name only
/// (duplicates stay, in request order), empty values dropped.
fn exemplar_labels(pairs: &[(&[u8], &[u8])]) -> Labels {
    let mut v: Vec<Label> = pairs
        .iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(n, v)| Label {
            name: compact_str::CompactString::from_utf8_lossy(n),
            value: compact_str::CompactString::from_utf8_lossy(v),
        })
        .collect();
    v.sort_by(|a, b| a.name.cmp(&b.name));
    Labels::from_sorted(v)
}

/// Converts a decoded 1.0 request.
pub fn convert_v1(req: &v1::WriteRequest, scheme: ValidationScheme) -> WriteRequest {
    let mut unlimited = Budget::new(usize::MAX);
    // An unlimited budget does not run out.
    convert_v1_within(req, scheme, &mut unlimited).unwrap_or_default()
}

/// Converts a decoded 1.0 request, charging the histograms it converts to
/// `budget`.
pub fn convert_v1_within(
    req: &v1::WriteRequest,
    scheme: ValidationScheme,
    budget: &mut Budget,
) -> Result<WriteRequest, RequestError> {
    let mut out = WriteRequest {
        message: Some(MessageType::V1),
        ..Default::default()
    };
    let mut raw: Vec<(&[u8], &[u8])> = Vec::new();
    for ts in &req.timeseries {
        raw.clear();
        raw.extend(ts.labels.iter().map(|l| (&l.name[..], &l.value[..])));
        let labels = match validate(&mut raw, scheme) {
            Ok(l) => l,
            Err(e) => {
                out.invalid_label_samples += ts.samples.len() + ts.histograms.len();
                out.errors.push(e);
                continue;
            }
        };
        let samples = ts
            .samples
            .iter()
            .map(|s| Sample {
                timestamp: s.timestamp,
                value: s.value,
                start_timestamp: 0,
            })
            .collect();
        let mut exemplars: Vec<Exemplar> = ts
            .exemplars
            .iter()
            .map(|e| {
                let pairs: Vec<(&[u8], &[u8])> = e
                    .labels
                    .iter()
                    .map(|l| (&l.name[..], &l.value[..]))
                    .collect();
                Exemplar {
                    labels: exemplar_labels(&pairs),
                    value: e.value,
                    timestamp: e.timestamp,
                }
            })
            .collect();
        sort_exemplars(&mut exemplars);
        let histograms = convert_histograms(&ts.histograms, histogram::from_v1, budget)?;
        out.series.push(Series {
            labels,
            samples,
            exemplars,
            histograms,
            metadata: None,
        });
    }
    out.metadata = req
        .metadata
        .iter()
        .map(|m| MetricMetadata {
            metric_family: lossy(&m.metric_family_name),
            kind: MetricType::from_proto(m.r#type),
            help: lossy(&m.help),
            unit: lossy(&m.unit),
        })
        .collect();
    Ok(out)
}

/// A series' histogram messages converted, their memory charged to `budget`.
fn convert_histograms<H>(
    hs: &[H],
    convert: fn(&H) -> HistogramSample,
    budget: &mut Budget,
) -> Result<Vec<HistogramSample>, RequestError> {
    let mut out = Vec::with_capacity(hs.len());
    for h in hs {
        let s = convert(h);
        budget.charge(s.value.memory())?;
        out.push(s);
    }
    Ok(out)
}

/// Go's `%v` of a `[]uint32`: `[1 2 3]`.
fn refs_string(refs: &[u32]) -> String {
    let v: Vec<String> = refs.iter().map(u32::to_string).collect();
    format!("[{}]", v.join(" "))
}

/// Resolves label refs against the symbols table.
fn desymbolize<'a>(
    refs: &[u32],
    symbols: &'a [Vec<u8>],
    out: &mut Vec<(&'a [u8], &'a [u8])>,
) -> Result<(), (u32, u32)> {
    out.clear();
    for p in refs.chunks_exact(2) {
        let (n, v) = (p[0], p[1]);
        match (symbols.get(n as usize), symbols.get(v as usize)) {
            (Some(n), Some(v)) => out.push((n, v)),
            _ => return Err((n, v)),
        }
    }
    Ok(())
}

/// The bytes of resolved label pairs.
fn text_len(pairs: &[(&[u8], &[u8])]) -> usize {
    pairs
        .iter()
        .fold(0usize, |n, (a, b)| n.saturating_add(a.len() + b.len()))
}

/// [`labels_string`] of resolved pairs, their text charged to `budget`
/// first (every copy of a symbol counts: this is what a request whose
/// series all reference one large symbol cannot get for free).
fn quoted(pairs: &[(&[u8], &[u8])], budget: &mut Budget) -> Result<String, RequestError> {
    budget.charge(text_len(pairs))?;
    Ok(labels_string(pairs))
}

/// Converts a decoded 2.0 request. Every copy of symbol text it makes
/// (labels, exemplar labels, metadata, label sets quoted in errors) is
/// charged to `budget`; the request is refused when it runs out.
pub fn convert_v2(
    req: &v2::Request,
    scheme: ValidationScheme,
    budget: &mut Budget,
) -> Result<WriteRequest, RequestError> {
    let mut out = WriteRequest {
        message: Some(MessageType::V2),
        ..Default::default()
    };
    let symbols = &req.symbols;
    let mut raw: Vec<(&[u8], &[u8])> = Vec::new();
    let mut ex_raw: Vec<(&[u8], &[u8])> = Vec::new();
    for ts in &req.timeseries {
        let bad_series = ts.samples.len() + ts.histograms.len();
        if ts.labels_refs.len() % 2 != 0 {
            out.invalid_label_samples += bad_series;
            out.errors.push(SeriesError::LabelRefsLength {
                refs: refs_string(&ts.labels_refs),
                len: ts.labels_refs.len(),
            });
            continue;
        }
        if let Err((name_ref, value_ref)) = desymbolize(&ts.labels_refs, symbols, &mut raw) {
            out.invalid_label_samples += bad_series;
            out.errors.push(SeriesError::LabelRefsOutOfRange {
                refs: refs_string(&ts.labels_refs),
                name_ref,
                value_ref,
                symbols: symbols.len(),
            });
            continue;
        }
        // Copied once below, into the labels or the error.
        budget.charge(text_len(&raw))?;
        // v3.16's ToMetadata: the unit ref is checked first. Such a series
        // is not counted as having invalid labels.
        let md = ts.metadata.unwrap_or_default();
        let unit = symbols.get(md.unit_ref as usize);
        let help = symbols.get(md.help_ref as usize);
        let (Some(help), Some(unit)) = (help, unit) else {
            let (field, symbol_ref) = match unit {
                None => (MetadataRef::Unit, md.unit_ref),
                Some(_) => (MetadataRef::Help, md.help_ref),
            };
            out.errors.push(SeriesError::MetadataRefOutOfRange {
                refs: refs_string(&ts.labels_refs),
                field,
                symbol_ref,
                symbols: symbols.len(),
            });
            continue;
        };
        let labels = match validate(&mut raw, scheme) {
            Ok(l) => l,
            Err(e) => {
                out.invalid_label_samples += bad_series;
                out.errors.push(e);
                continue;
            }
        };
        // Prometheus prints the set before empty values are dropped.
        if ts.samples.is_empty() && ts.histograms.is_empty() {
            out.errors.push(SeriesError::NoSamples {
                labels: quoted(&raw, budget)?,
            });
            continue;
        }
        let samples = ts
            .samples
            .iter()
            .map(|s| Sample {
                timestamp: s.timestamp,
                value: s.value,
                start_timestamp: s.start_timestamp,
            })
            .collect();
        let histograms = convert_histograms(&ts.histograms, histogram::from_v2, budget)?;
        let mut exemplars = Vec::with_capacity(ts.exemplars.len());
        for e in &ts.exemplars {
            let res = if e.labels_refs.len() % 2 != 0 {
                Err(format!("invalid labelRefs length {}", e.labels_refs.len()))
            } else {
                desymbolize(&e.labels_refs, symbols, &mut ex_raw).map_err(|(n, v)| {
                    format!(
                        "labelRefs {n} (name) = {v} (value) outside of symbols table (size {})",
                        symbols.len()
                    )
                })
            };
            match res {
                Ok(()) => {
                    budget.charge(text_len(&ex_raw))?;
                    exemplars.push(Exemplar {
                        labels: exemplar_labels(&ex_raw),
                        value: e.value,
                        timestamp: e.timestamp,
                    })
                }
                Err(reason) => out.errors.push(SeriesError::ExemplarRefs {
                    labels: quoted(&raw, budget)?,
                    reason,
                }),
            }
        }
        budget.charge(help.len().saturating_add(unit.len()))?;
        let metadata = MetricMetadata {
            metric_family: String::new(),
            kind: MetricType::from_proto(md.r#type),
            help: lossy(help),
            unit: lossy(unit),
        };
        sort_exemplars(&mut exemplars);
        out.series.push(Series {
            labels,
            samples,
            exemplars,
            histograms,
            metadata: (!metadata.is_empty()).then_some(metadata),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    proptest! {
        /// A reused buffer, left holding a longer or shorter body, holds
        /// exactly the next body after it (no stale byte survives).
        #[test]
        fn reused_buffer_holds_exactly_each_body(
            bodies in proptest::collection::vec(proptest::collection::vec(0u8..3, 0..300), 1..5),
        ) {
            let mut out = Vec::new();
            for b in &bodies {
                let compressed = snap::raw::Encoder::new().compress_vec(b).expect("compress");
                super::decompress_into(&compressed, 1 << 20, &mut out).expect("decompress");
                prop_assert_eq!(&out, b);
            }
        }

        /// The first-byte shortcut orders names as `<` does, equal first
        /// bytes and empty names included.
        #[test]
        fn name_before_is_less_than(
            a in proptest::collection::vec(0u8..4, 0..5),
            b in proptest::collection::vec(0u8..4, 0..5),
        ) {
            prop_assert_eq!(super::name_before(&a, &b), a < b);
        }
    }
}
