//! One scraped body into the storage, as Prometheus' scrape loop appends
//! it: each series line looked up in the target's [`ScrapeCache`] (a known
//! line costs a map lookup and an append by ref), new lines labelled with
//! the target's labels (`honor_labels`, or conflicts renamed
//! `exported_<name>`) and `metric_relabel_configs`, checked against the
//! name rules and label limits, and counted against `sample_limit`; then
//! stale markers for the series the previous scrape had and this one has
//! not.
//!
//! A sample the storage finds out of order, duplicate or out of bounds is
//! skipped and counted; any other error fails the whole scrape: the caller
//! rolls the appender back and calls [`append_body`] again with an empty
//! body, which writes the stale markers of a failed scrape.
//!
//! The body is read as its `Content-Type` says ([`crate::format`]): the
//! Prometheus text format, OpenMetrics as Prometheus' scrape loop reads
//! it by default (`_created` series appended as ordinary series, no
//! `__type__`/`__unit__` labels; `# UNIT` goes to the target's metadata),
//! or the protobuf format ([`ferrite_textparse::protobuf`]): counters,
//! gauges, untyped metrics, summaries and classic histograms as their
//! series (`_count`, `_sum`, `_bucket` and `quantile` ones synthesized as
//! Prometheus does), native histograms appended as such when the job
//! scrapes them ([`HistogramSettings`]; else their classic buckets), HELP,
//! TYPE and UNIT to the target's metadata, start timestamps ignored (as
//! Prometheus does by default).
//!
//! Native histograms pass Prometheus' limits in its order: a schema above
//! the one `native_histogram_min_bucket_factor` allows is reduced to it,
//! then one with more buckets than `native_histogram_bucket_limit` is
//! reduced a schema at a time until it fits (or, not exponential or at
//! schema -4, refused: the scrape fails with `histogram bucket limit
//! exceeded` after the rest of the body was read, unless the sample limit
//! was hit too), then `sample_limit` and the time bound as for floats. A
//! series that goes away gets a float stale marker, histogram or not, as
//! Prometheus' scrape loop writes it (its head then stores the marker of
//! a histogram series as a histogram; Ferrite's head stores the float).
//!
//! With `convert_classic_histograms_to_nhcb`
//! ([`AppendSettings::convert_classic_histograms_to_nhcb`]), classic
//! histograms are converted to native histograms with custom buckets as
//! Prometheus converts them: in the text formats by [`nhcb::TextNhcb`]
//! between the parser and the loop below (a histogram that cannot be
//! converted is dropped silently; the per-target fast path for known lines
//! is off, every series' labels being read), in the protobuf format by its
//! parser (one that cannot be converted fails the scrape). The classic
//! series are appended too only with `always_scrape_classic_histograms`.
//! The converted histogram is one sample, appended as a native histogram.
//!
//! Exemplars (OpenMetrics and protobuf) are parsed and checked (a
//! malformed one fails the scrape with Prometheus' message) but not
//! stored: Ferrite has no exemplar storage.

use std::borrow::Cow;

use ferrite_config::relabel::{apply as relabel, RelabelConfig};
use ferrite_config::ScrapeConfig;
use ferrite_model::histogram::{
    is_exponential_schema, EXPONENTIAL_SCHEMA_MAX, EXPONENTIAL_SCHEMA_MAX_RESERVED,
    EXPONENTIAL_SCHEMA_MIN, EXPONENTIAL_SCHEMA_MIN_RESERVED,
};
use ferrite_model::resolution::ReduceResolution;
use ferrite_model::{
    FloatHistogram, Histogram, HistogramError, Labels, ValidationScheme, METRIC_NAME, STALE_NAN,
};
use ferrite_textparse::omtext::{OmEntry, OmParser};
use ferrite_textparse::promtext::{PeekedLineKind, TextEntry, TextError, TextParser, TextSeries};
use ferrite_textparse::protobuf::{HistogramKind, ProtoEntry, ProtoOptions, ProtoParser};
use ferrite_textparse::MetricType;

use crate::cache::{LineKey, Lookup, ScrapeCache};
use crate::format::{select_parser, Format};
use crate::metadata::{self, TargetMetadata};
use crate::storage::{AppendFailure, HistogramSample, ScrapeAppender, SeriesHandle};
use crate::target::{
    parse_go_bool, ALWAYS_SCRAPE_CLASSIC_LABEL, CONVERT_NHCB_LABEL, SCRAPE_NATIVE_LABEL,
};
use nhcb::TextNhcb;

/// How far ahead of now a sample's timestamp may be (Prometheus'
/// `maxAheadTime`).
pub const MAX_AHEAD_MS: i64 = 10 * 60 * 1000;

/// What a target's samples are appended with (from its job).
#[derive(Debug, Clone, Default)]
pub struct AppendSettings {
    /// The target's labels without the `__`-prefixed ones.
    pub target_labels: Labels,
    /// `honor_labels`
    pub honor_labels: bool,
    /// `honor_timestamps`
    pub honor_timestamps: bool,
    /// `track_timestamps_staleness`
    pub track_timestamps_staleness: bool,
    /// `metric_relabel_configs`
    pub metric_relabel_configs: Vec<RelabelConfig>,
    /// `metric_name_validation_scheme`
    pub validation: ValidationScheme,
    /// `sample_limit` (0: none).
    pub sample_limit: u64,
    /// `label_limit` (0: none).
    pub label_limit: u64,
    /// `label_name_length_limit` (0: none).
    pub label_name_length_limit: u64,
    /// `label_value_length_limit` (0: none).
    pub label_value_length_limit: u64,
    /// The media type of `fallback_scrape_protocol`, if set.
    pub fallback_media_type: Option<&'static str>,
    /// The job's `convert_classic_histograms_to_nhcb` (false by default),
    /// or the target's `__convert_classic_histograms_to_nhcb__`: classic
    /// histograms are converted to native histograms with custom buckets
    /// (kept as classic series too with
    /// [`HistogramSettings::always_scrape_classic`]); see the module
    /// documentation.
    pub convert_classic_histograms_to_nhcb: bool,
    /// What the job takes of native histograms.
    pub histograms: HistogramSettings,
}

/// What a job takes of native histograms (protobuf bodies).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HistogramSettings {
    /// `scrape_native_histograms`, or the target's
    /// `__scrape_native_histograms__`: native histograms are appended as
    /// such; without it only their classic buckets are.
    pub scrape_native: bool,
    /// `always_scrape_classic_histograms`, or the target's
    /// `__always_scrape_classic_histograms__`: a native histogram's
    /// classic buckets are appended too.
    pub always_scrape_classic: bool,
    /// `native_histogram_bucket_limit` (0: none).
    pub bucket_limit: u64,
    /// The highest schema kept ([`pick_schema`] of
    /// `native_histogram_min_bucket_factor`; 8 keeps every one).
    pub max_schema: i32,
}

impl Default for HistogramSettings {
    fn default() -> Self {
        HistogramSettings {
            scrape_native: false,
            always_scrape_classic: false,
            bucket_limit: 0,
            max_schema: EXPONENTIAL_SCHEMA_MAX,
        }
    }
}

impl HistogramSettings {
    /// A target's settings: its job's, the booleans overridden by the
    /// target's labels where they parse (Prometheus' `boolLabel`).
    pub fn from_job(cfg: &ScrapeConfig, target_labels: &Labels) -> Self {
        let flag =
            |name: &str, default: bool| parse_go_bool(target_labels.get(name)).unwrap_or(default);
        HistogramSettings {
            scrape_native: flag(SCRAPE_NATIVE_LABEL, cfg.scrape_native_histograms),
            always_scrape_classic: flag(
                ALWAYS_SCRAPE_CLASSIC_LABEL,
                cfg.always_scrape_classic_histograms,
            ),
            bucket_limit: cfg.native_histogram_bucket_limit,
            max_schema: pick_schema(cfg.native_histogram_min_bucket_factor),
        }
    }
}

/// A target's `convert_classic_histograms_to_nhcb`: its
/// `__convert_classic_histograms_to_nhcb__` label where it parses (Prometheus'
/// `boolLabel`), else its job's.
pub fn converts_to_nhcb(cfg: &ScrapeConfig, target_labels: &Labels) -> bool {
    parse_go_bool(target_labels.get(CONVERT_NHCB_LABEL))
        .unwrap_or(cfg.convert_classic_histograms_to_nhcb)
}

/// The schema whose bucket growth factor is at least `factor` (Prometheus'
/// `pickSchema`): `⌊-log2(log2(factor))⌋` within -4..=8, a factor of 1 or
/// less meaning the finest schema.
pub fn pick_schema(factor: f64) -> i32 {
    let factor = if factor <= 1.0 { 1.00271 } else { factor };
    let floor = (-factor.log2().log2()).floor();
    if floor >= f64::from(EXPONENTIAL_SCHEMA_MAX) {
        EXPONENTIAL_SCHEMA_MAX
    } else if floor <= f64::from(EXPONENTIAL_SCHEMA_MIN) {
        EXPONENTIAL_SCHEMA_MIN
    } else if floor.is_nan() {
        i32::MIN // Go's int32(NaN) on amd64
    } else {
        floor as i32
    }
}

/// The counts of one scrape, for the report series.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AppendCounts {
    /// Samples in the body (`scrape_samples_scraped`).
    pub total: usize,
    /// Samples after metric relabeling
    /// (`scrape_samples_post_metric_relabeling`).
    pub added: usize,
    /// Series new to the cache (`scrape_series_added`).
    pub series_added: usize,
}

/// Why a scrape's body could not be appended (Prometheus' messages).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BodyError {
    /// The body does not parse.
    #[error(transparent)]
    Parse(#[from] TextError),
    /// No parser for the body's `Content-Type`.
    #[error("{0}")]
    ContentType(String),
    /// A series without `__name__` after relabeling.
    #[error("missing metric name (__name__ label)")]
    NoMetricName,
    /// A name the validation scheme refuses.
    #[error("invalid metric name or label names: {0}")]
    InvalidNames(String),
    /// `label_limit` or a label length limit.
    #[error("{0}")]
    LabelLimit(String),
    /// More samples than `sample_limit`.
    #[error("sample limit exceeded")]
    SampleLimit,
    /// A native histogram with more buckets than
    /// `native_histogram_bucket_limit` that could not be reduced.
    #[error("histogram bucket limit exceeded")]
    BucketLimit,
    /// The storage refused a sample for a reason that fails the scrape.
    #[error(transparent)]
    Storage(AppendFailure),
}

/// Samples the storage skipped, by reason (for the scrape metrics).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SkippedSamples {
    /// Out of order.
    pub out_of_order: u64,
    /// Duplicate timestamps.
    pub duplicate: u64,
    /// Out of bounds (too old, or over 10 minutes ahead).
    pub out_of_bounds: u64,
}

/// One scrape's appends: see the module documentation.
pub struct BodyAppender<'a> {
    /// The target's cache.
    pub cache: &'a mut ScrapeCache,
    /// The target's settings.
    pub settings: &'a AppendSettings,
    /// Skipped samples, added to as appends go.
    pub skipped: SkippedSamples,
    /// The counts of the last [`append_body`], also when it failed (the
    /// report of a failed scrape gives them, as Prometheus' does).
    pub counts: AppendCounts,
    /// Whether the last [`append_body`] refused a native histogram for
    /// `native_histogram_bucket_limit` (Prometheus counts it in
    /// `prometheus_target_scrapes_exceeded_native_histogram_bucket_limit_total`
    /// also when the sample limit, hit too, is the scrape's error).
    pub bucket_limit_exceeded: bool,
    /// Whether the last [`append_body`], a failed scrape's, found the
    /// cache grown past twice its last successful size (plus 1000) and
    /// flushed it (`prometheus_target_scrapes_cache_flush_forced_total`).
    pub cache_flush_forced: bool,
    /// The parsed labels of a line the cache does not know (reused).
    pairs: Vec<(String, String)>,
}

impl<'a> BodyAppender<'a> {
    /// Appends to `cache`'s target with `settings`.
    pub fn new(cache: &'a mut ScrapeCache, settings: &'a AppendSettings) -> Self {
        BodyAppender {
            cache,
            settings,
            skipped: SkippedSamples::default(),
            counts: AppendCounts::default(),
            bucket_limit_exceeded: false,
            cache_flush_forced: false,
            pairs: Vec::new(),
        }
    }
}

/// The parser the body's `Content-Type` chose.
enum BodyParser<'b> {
    Text(TextParser<'b>),
    OpenMetrics(OmParser<'b>),
    /// Boxed: the decoder's reused messages make it large.
    Proto(Box<ProtoParser<'b>>),
}

/// An entry of any format. A protobuf series' bytes are the parser's
/// ([`BodyParser::proto_key`]).
enum BodyEntry<'b> {
    Series(TextSeries<'b>),
    ProtoSeries {
        value: f64,
        timestamp: Option<i64>,
    },
    ProtoHistogram {
        timestamp: Option<i64>,
    },
    /// A classic histogram of a text-format body converted to a native
    /// one ([`nhcb::TextNhcb`]): its histogram and labels are in the
    /// [`HistogramBufs`].
    Converted(nhcb::Converted),
    Help(&'b [u8], Cow<'b, [u8]>),
    Type(&'b [u8], MetricType),
    Unit(&'b [u8], &'b [u8]),
    Comment,
}

impl<'b> BodyParser<'b> {
    fn new(format: Format, body: &'b [u8], h: &HistogramSettings, convert_nhcb: bool) -> Self {
        match format {
            Format::PrometheusText => BodyParser::Text(TextParser::new(body)),
            Format::OpenMetrics => BodyParser::OpenMetrics(OmParser::new(body)),
            Format::Protobuf => BodyParser::Proto(Box::new(ProtoParser::new(
                body,
                ProtoOptions {
                    ignore_native_histograms: !h.scrape_native,
                    keep_classic_histograms: h.always_scrape_classic,
                    convert_classic_histograms_to_nhcb: convert_nhcb,
                },
            ))),
        }
    }

    fn next_entry(&mut self) -> Result<Option<BodyEntry<'b>>, TextError> {
        Ok(Some(match self {
            BodyParser::Text(p) => match p.next_entry()? {
                None => return Ok(None),
                Some(TextEntry::Series(s)) => BodyEntry::Series(s),
                Some(TextEntry::Help { metric, text }) => BodyEntry::Help(metric, text),
                Some(TextEntry::Type { metric, kind }) => BodyEntry::Type(metric, kind),
                Some(TextEntry::Comment { .. }) => BodyEntry::Comment,
            },
            // Exemplars were checked by next_entry; they are not read.
            BodyParser::OpenMetrics(p) => match p.next_entry()? {
                None => return Ok(None),
                Some(OmEntry::Series(s)) => BodyEntry::Series(s),
                Some(OmEntry::Help { metric, text }) => BodyEntry::Help(metric, text),
                Some(OmEntry::Type { metric, kind }) => BodyEntry::Type(metric, kind),
                Some(OmEntry::Unit { metric, unit }) => BodyEntry::Unit(metric, unit),
            },
            BodyParser::Proto(p) => match p.next_entry() {
                Err(e) => return Err(TextError(e.to_string())),
                Ok(None) => return Ok(None),
                Ok(Some(ProtoEntry::Series { value, timestamp })) => {
                    BodyEntry::ProtoSeries { value, timestamp }
                }
                Ok(Some(ProtoEntry::Histogram { timestamp })) => {
                    BodyEntry::ProtoHistogram { timestamp }
                }
                Ok(Some(ProtoEntry::Help { metric, text })) => {
                    BodyEntry::Help(metric, Cow::Borrowed(text))
                }
                Ok(Some(ProtoEntry::Type { metric, kind })) => BodyEntry::Type(metric, kind),
                Ok(Some(ProtoEntry::Unit { metric, unit })) => BodyEntry::Unit(metric, unit),
            },
        }))
    }

    /// The bytes of the last protobuf series (empty for the text formats,
    /// whose entries carry them).
    fn proto_key(&self) -> &[u8] {
        match self {
            BodyParser::Proto(p) => p.series(),
            _ => &[],
        }
    }

    /// The labels of the last series.
    fn labels(&self, out: &mut Vec<(String, String)>) -> Result<(), TextError> {
        match self {
            BodyParser::Text(p) => p.labels(out),
            BodyParser::OpenMetrics(p) => p.labels(out),
            BodyParser::Proto(p) => {
                p.labels(out);
                Ok(())
            }
        }
    }
}

/// The buffers a scrape reads its native histograms into (lent to the
/// storage, which leaves spent ones in their place), and the labels of
/// the last histogram converted from a text-format classic one.
#[derive(Default)]
struct HistogramBufs {
    int: Histogram,
    float: FloatHistogram,
    converted_labels: Labels,
}

impl HistogramBufs {
    /// The histogram of a sample of `value`: the last protobuf histogram
    /// of `parser`, or the one converted into these buffers.
    fn read(&mut self, value: Value, parser: &BodyParser<'_>) -> Option<HistogramSample<'_>> {
        let kind = match value {
            Value::Float(_) => return None,
            Value::Converted(kind) => kind,
            Value::Histogram => {
                let BodyParser::Proto(p) = parser else {
                    return None;
                };
                p.histogram(&mut self.int, &mut self.float)
            }
        };
        Some(match kind {
            HistogramKind::Int => HistogramSample::Int(&mut self.int),
            HistogramKind::Float => HistogramSample::Float(&mut self.float),
        })
    }
}

/// Appends one scraped `body` of `content_type` at `ts` (ms) through
/// `app`; `now_ms` bounds explicit timestamps. An empty body appends
/// nothing but the stale markers (a failed scrape).
pub fn append_body(
    b: &mut BodyAppender<'_>,
    app: &mut dyn ScrapeAppender,
    body: &[u8],
    content_type: &str,
    ts: i64,
    now_ms: i64,
) -> Result<AppendCounts, BodyError> {
    let mut counts = AppendCounts::default();
    b.bucket_limit_exceeded = false;
    let result = append_entries(b, app, body, content_type, ts, now_ms, &mut counts);
    b.counts = counts;
    result.map(|()| counts)
}

/// [`append_body`]'s work, counting into `counts` as it goes.
fn append_entries(
    b: &mut BodyAppender<'_>,
    app: &mut dyn ScrapeAppender,
    body: &[u8],
    content_type: &str,
    ts: i64,
    now_ms: i64,
    counts: &mut AppendCounts,
) -> Result<(), BodyError> {
    if body.is_empty() {
        let result = write_stale_markers(b, app, ts);
        b.cache_flush_forced = b.cache.iter_done(false);
        return result;
    }
    let format = select_parser(content_type, b.settings.fallback_media_type)?;
    let mut limit = SampleLimit::new(b.settings.sample_limit, now_ms + MAX_AHEAD_MS);
    let hs = &b.settings.histograms;
    let convert = b.settings.convert_classic_histograms_to_nhcb;
    let mut parser = BodyParser::new(format, body, hs, convert);
    let mut histograms = HistogramBufs::default();
    // The protobuf parser converts by itself.
    let mut nhcb =
        (convert && format != Format::Protobuf).then(|| TextNhcb::new(hs.always_scrape_classic));
    // Locked for the whole body (metadata lines come every few series);
    // released before the cache's end of scrape, which locks it too.
    let metadata = b.cache.metadata.clone();
    let mut metadata = lock(&metadata);
    let iter = b.cache.iter();
    // Lines the target gave before are taken without reading them (the
    // NHCB conversion reads every series' labels).
    let take_known = nhcb.is_none();
    loop {
        let mut peeked_metadata = 0;
        if take_known {
            match take_known_line(&mut parser, b.cache, &mut metadata) {
                KnownLine::Series(s, key) => {
                    counts.total += 1;
                    let sample = sample_of(b, key, Value::Float(s.value), s.timestamp, ts);
                    append_sample(b, &parser, app, &mut limit, sample, counts, &mut histograms)?;
                    continue;
                }
                KnownLine::Metadata => continue,
                KnownLine::UnknownMetadata(line) => peeked_metadata = line,
                KnownLine::Unknown => {}
            }
        }
        let entry = match &mut nhcb {
            Some(nhcb) => nhcb.next_entry(&mut parser, &mut histograms)?,
            None => parser.next_entry()?,
        };
        let Some(entry) = entry else {
            break;
        };
        let (key, value, timestamp) = match &entry {
            BodyEntry::Series(s) => (LineKey::of(s.series), Value::Float(s.value), s.timestamp),
            BodyEntry::ProtoSeries { value, timestamp } => (
                LineKey::of(parser.proto_key()),
                Value::Float(*value),
                *timestamp,
            ),
            BodyEntry::ProtoHistogram { timestamp } => (
                LineKey::of(parser.proto_key()),
                Value::Histogram,
                *timestamp,
            ),
            BodyEntry::Converted(c) => (c.key, Value::Converted(c.kind), c.timestamp),
            // A text-format metadata line comes right after its peek.
            BodyEntry::Help(metric, text) => {
                metadata.set_help(metric, text, iter, peeked_metadata);
                continue;
            }
            BodyEntry::Type(metric, kind) => {
                metadata.set_type(metric, *kind, iter, peeked_metadata);
                continue;
            }
            BodyEntry::Unit(metric, unit) => {
                metadata.set_unit(metric, unit, iter);
                continue;
            }
            BodyEntry::Comment => continue,
        };
        counts.total += 1;
        let sample = sample_of(b, key, value, timestamp, ts);
        append_sample(b, &parser, app, &mut limit, sample, counts, &mut histograms)?;
    }
    drop(metadata);
    b.bucket_limit_exceeded = limit.bucket_exceeded;
    if limit.exceeded {
        return Err(BodyError::SampleLimit);
    }
    if limit.bucket_exceeded {
        return Err(BodyError::BucketLimit);
    }
    write_stale_markers(b, app, ts)?;
    b.cache.iter_done(true);
    Ok(())
}

/// A line of a text-format body as [`take_known_line`] found it.
enum KnownLine<'b> {
    /// A series line the cache knows (by this key), taken: its sample
    /// is to append.
    Series(TextSeries<'b>, LineKey),
    /// A metadata line that set its family last time, taken.
    Metadata,
    /// A metadata line to read: the [`metadata::line_hash`] of its bytes.
    UnknownMetadata(u64),
    /// Anything else, to read.
    Unknown,
}

/// Takes the body's next line without reading it if the target gave it
/// before ([`TextParser::peek_line`]): a series line the cache knows,
/// or a `# HELP` or `# TYPE` line that set the family expected there
/// (which is then marked seen).
fn take_known_line<'b>(
    parser: &mut BodyParser<'b>,
    cache: &ScrapeCache,
    metadata: &mut TargetMetadata,
) -> KnownLine<'b> {
    let BodyParser::Text(p) = parser else {
        return KnownLine::Unknown;
    };
    let Some(line) = p.peek_line() else {
        return KnownLine::Unknown;
    };
    let iter = cache.iter();
    let kind = match line.kind {
        PeekedLineKind::Series(s) => {
            let key = LineKey::of(s.series);
            if !cache.knows(key) {
                return KnownLine::Unknown;
            }
            p.take_peeked(&line, None);
            return KnownLine::Series(s, key);
        }
        PeekedLineKind::Help => {
            let hash = metadata::line_hash(line.bytes(p));
            if !metadata.known_help(hash, iter) {
                return KnownLine::UnknownMetadata(hash);
            }
            None
        }
        PeekedLineKind::Type => {
            let hash = metadata::line_hash(line.bytes(p));
            match metadata.known_type(hash, iter) {
                Some(kind) => Some(kind),
                None => return KnownLine::UnknownMetadata(hash),
            }
        }
    };
    p.take_peeked(&line, kind);
    KnownLine::Metadata
}

/// A series line's sample: its own timestamp if it gives one and the
/// job honours it, else the scrape's.
fn sample_of(
    b: &BodyAppender<'_>,
    key: LineKey,
    value: Value,
    timestamp: Option<i64>,
    ts: i64,
) -> Sample {
    let explicit = timestamp.filter(|_| b.settings.honor_timestamps);
    Sample {
        key,
        t: explicit.unwrap_or(ts),
        value,
        explicit: explicit.is_some(),
    }
}

fn lock(
    m: &crate::metadata::SharedMetadata,
) -> std::sync::MutexGuard<'_, crate::metadata::TargetMetadata> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A sample's value: a float, the parser's last native histogram, or a
/// histogram converted into the [`HistogramBufs`].
#[derive(Clone, Copy)]
enum Value {
    Float(f64),
    Histogram,
    Converted(HistogramKind),
}

/// One series line's sample.
struct Sample {
    /// The cache's key of the line.
    key: LineKey,
    t: i64,
    value: Value,
    /// Whether the timestamp came with the sample.
    explicit: bool,
}

/// `sample_limit`, the time bound and the bucket limit, as Prometheus'
/// limiting appenders apply them.
struct SampleLimit {
    limit: u64,
    appended: u64,
    max_time: i64,
    exceeded: bool,
    /// A histogram was refused for its buckets.
    bucket_exceeded: bool,
}

impl SampleLimit {
    fn new(limit: u64, max_time: i64) -> Self {
        SampleLimit {
            limit,
            appended: 0,
            max_time,
            exceeded: false,
            bucket_exceeded: false,
        }
    }

    /// Counts a sample against the limit and checks its time.
    fn admit(&mut self, t: i64) -> Result<(), Refused> {
        if self.limit > 0 {
            self.appended += 1;
            if self.appended > self.limit {
                return Err(Refused::SampleLimit);
            }
        }
        if t > self.max_time {
            return Err(Refused::Storage(AppendFailure::OutOfBounds));
        }
        Ok(())
    }
}

/// Why one sample was not appended.
enum Refused {
    SampleLimit,
    BucketLimit,
    Storage(AppendFailure),
}

/// Prometheus' schema and bucket limits on a native histogram, in its
/// order: a reserved exponential schema above `max_schema` reduced to it,
/// then, with more buckets than `bucket_limit`, the schema reduced one at
/// a time until it fits; refused if it cannot (not exponential, or at the
/// lowest schema). A reduction refused by the layout fails the scrape.
fn limit_buckets<H: ReduceResolution>(h: &mut H, s: &HistogramSettings) -> Result<(), Refused> {
    let schema = |h: &mut H| *h.schema_and_sides().0;
    let buckets = |h: &mut H| {
        let (_, positive, negative) = h.schema_and_sides();
        (positive.1.len() + negative.1.len()) as u64
    };
    let reduce = |h: &mut H, to: i32| {
        h.try_reduce_resolution(to)
            .map_err(|e: HistogramError| Refused::Storage(AppendFailure::Other(e.to_string())))
    };
    if s.max_schema < EXPONENTIAL_SCHEMA_MAX {
        let from = schema(h);
        if (EXPONENTIAL_SCHEMA_MIN_RESERVED..=EXPONENTIAL_SCHEMA_MAX_RESERVED).contains(&from)
            && from > s.max_schema
        {
            reduce(h, s.max_schema)?;
        }
    }
    if s.bucket_limit > 0 {
        if buckets(h) > s.bucket_limit && !is_exponential_schema(schema(h)) {
            return Err(Refused::BucketLimit);
        }
        while buckets(h) > s.bucket_limit {
            let from = schema(h);
            if from <= EXPONENTIAL_SCHEMA_MIN {
                return Err(Refused::BucketLimit);
            }
            reduce(h, from - 1)?;
        }
    }
    Ok(())
}

/// Where a sample goes: a cached series, or the series of new labels.
#[derive(Clone, Copy)]
enum Destination<'d> {
    Cached(&'d SeriesHandle),
    New(&'d Labels),
}

/// One sample through the limits into the storage; the series' handle
/// when it was new.
fn push(
    app: &mut dyn ScrapeAppender,
    limit: &mut SampleLimit,
    to: Destination<'_>,
    s: &Sample,
    parser: &BodyParser<'_>,
    histograms: &mut HistogramBufs,
    settings: &HistogramSettings,
) -> Result<Option<SeriesHandle>, Refused> {
    let stored = match s.value {
        Value::Float(v) => {
            limit.admit(s.t)?;
            match to {
                Destination::Cached(series) => app.append(series, s.t, v).map(|()| None),
                Destination::New(labels) => app.append_new(labels, s.t, v).map(Some),
            }
        }
        Value::Histogram | Value::Converted(_) => {
            let Some(mut h) = histograms.read(s.value, parser) else {
                return Err(Refused::Storage(AppendFailure::Other(
                    "no histogram to append".into(),
                )));
            };
            match &mut h {
                HistogramSample::Int(h) => limit_buckets(&mut **h, settings)?,
                HistogramSample::Float(h) => limit_buckets(&mut **h, settings)?,
            }
            limit.admit(s.t)?;
            match to {
                Destination::Cached(series) => app.append_histogram(series, s.t, h).map(|()| None),
                Destination::New(labels) => app.append_histogram_new(labels, s.t, h).map(Some),
            }
        }
    };
    stored.map_err(Refused::Storage)
}

fn append_sample(
    b: &mut BodyAppender<'_>,
    parser: &BodyParser<'_>,
    app: &mut dyn ScrapeAppender,
    limit: &mut SampleLimit,
    s: Sample,
    counts: &mut AppendCounts,
    histograms: &mut HistogramBufs,
) -> Result<(), BodyError> {
    let track = !s.explicit || b.settings.track_timestamps_staleness;
    let hs = b.settings.histograms;
    let appended = match b.cache.lookup(s.key) {
        Lookup::Dropped => return Ok(()),
        Lookup::Series(mut cached) => {
            let result = if cached.already_scraped && !s.explicit {
                Err(Refused::Storage(AppendFailure::Duplicate))
            } else {
                let to = Destination::Cached(cached.series);
                push(app, limit, to, &s, parser, histograms, &hs)
            };
            if result.is_ok() && track {
                cached.track_staleness();
            }
            result.map(|_| ())
        }
        Lookup::Unknown(line) => {
            let Some(labels) = new_series_labels(b, parser, s.value, histograms)? else {
                b.cache.add(line, None, false);
                return Ok(());
            };
            let to = Destination::New(&labels);
            push(app, limit, to, &s, parser, histograms, &hs).map(|series| {
                b.cache.add(line, series, track);
                if !limit.exceeded && !limit.bucket_exceeded {
                    counts.series_added += 1;
                }
            })
        }
    };
    match appended {
        Ok(()) => {}
        Err(Refused::SampleLimit) => limit.exceeded = true,
        Err(Refused::BucketLimit) => limit.bucket_exceeded = true,
        Err(Refused::Storage(AppendFailure::OutOfOrder)) => b.skipped.out_of_order += 1,
        Err(Refused::Storage(AppendFailure::Duplicate)) => b.skipped.duplicate += 1,
        Err(Refused::Storage(AppendFailure::OutOfBounds)) => b.skipped.out_of_bounds += 1,
        Err(Refused::Storage(other)) => return Err(BodyError::Storage(other)),
    }
    counts.added += 1;
    Ok(())
}

/// The labels of a line the cache does not know: parsed (a converted
/// histogram's are in `histograms`), given the target's labels and
/// `metric_relabel_configs`, and checked. `None` if relabeling dropped it.
fn new_series_labels(
    b: &mut BodyAppender<'_>,
    parser: &BodyParser<'_>,
    value: Value,
    histograms: &HistogramBufs,
) -> Result<Option<Labels>, BodyError> {
    let s = b.settings;
    let sample = if let Value::Converted(_) = value {
        histograms.converted_labels.clone()
    } else {
        if let Err(e) = parser.labels(&mut b.pairs) {
            return Err(BodyError::InvalidNames(e.0));
        }
        Labels::from_pairs(&b.pairs)
    };
    let Some(labels) = mutate_sample_labels(sample, s) else {
        return Ok(None);
    };
    if labels.is_empty() {
        return Ok(None);
    }
    if !labels.has(METRIC_NAME) {
        return Err(BodyError::NoMetricName);
    }
    if !is_valid(&labels, s.validation) {
        return Err(BodyError::InvalidNames(labels.to_string()));
    }
    verify_label_limits(&labels, s)?;
    Ok(Some(labels))
}

/// The target's labels over a sample's (Prometheus' `mutateSampleLabels`),
/// then `metric_relabel_configs`; `None` if a rule dropped the series.
pub fn mutate_sample_labels(sample: Labels, s: &AppendSettings) -> Option<Labels> {
    let mut lb = sample.clone();
    if s.honor_labels {
        for l in s.target_labels.iter() {
            if !sample.has(&l.name) {
                lb.set(&l.name, &l.value);
            }
        }
    } else {
        let mut conflicts: Vec<(&str, &str)> = Vec::new();
        for l in s.target_labels.iter() {
            let exposed = sample.get(&l.name);
            if !exposed.is_empty() {
                conflicts.push((&l.name, exposed));
            }
            lb.set(&l.name, &l.value);
        }
        conflicts.sort_by_key(|(name, _)| name.len());
        for (name, value) in conflicts {
            let mut renamed = format!("exported_{name}");
            while !lb.get(&renamed).is_empty() {
                renamed.insert_str(0, "exported_");
            }
            lb.set(&renamed, value);
        }
    }
    if s.metric_relabel_configs.is_empty() {
        return Some(lb);
    }
    relabel(&lb, &s.metric_relabel_configs, s.validation)
}

/// Prometheus' `labels.IsValid`.
fn is_valid(labels: &Labels, scheme: ValidationScheme) -> bool {
    labels.iter().all(|l| {
        (l.name != METRIC_NAME || scheme.is_valid_metric_name(l.value.as_bytes()))
            && scheme.is_valid_label_name(l.name.as_bytes())
    })
}

/// `label_limit`, `label_name_length_limit`, `label_value_length_limit`.
fn verify_label_limits(labels: &Labels, s: &AppendSettings) -> Result<(), BodyError> {
    let metric = truncate(labels.get(METRIC_NAME), 50);
    if s.label_limit > 0 && labels.len() as u64 > s.label_limit {
        return Err(BodyError::LabelLimit(format!(
            "label_limit exceeded (metric: {metric}, number of labels: {}, limit: {})",
            labels.len(),
            s.label_limit
        )));
    }
    for l in labels.iter() {
        let name = truncate(&l.name, 50);
        if s.label_name_length_limit > 0 && l.name.len() as u64 > s.label_name_length_limit {
            return Err(BodyError::LabelLimit(format!(
                "label_name_length_limit exceeded (metric: {metric}, label name: {name}, length: {}, limit: {})",
                l.name.len(),
                s.label_name_length_limit
            )));
        }
        if s.label_value_length_limit > 0 && l.value.len() as u64 > s.label_value_length_limit {
            return Err(BodyError::LabelLimit(format!(
                "label_value_length_limit exceeded (metric: {metric}, label name: {name}, value: {}, length: {}, limit: {})",
                ferrite_model::goquote::quote(truncate(&l.value, 50)),
                l.value.len(),
                s.label_value_length_limit
            )));
        }
    }
    Ok(())
}

/// Go's `%.50s`: at most `n` characters.
fn truncate(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// Stale markers for the series the previous scrape appended and this one
/// did not. Markers the storage finds out of order or duplicate are
/// expected (a target that came back) and ignored.
fn write_stale_markers(
    b: &mut BodyAppender<'_>,
    app: &mut dyn ScrapeAppender,
    ts: i64,
) -> Result<(), BodyError> {
    for series in b.cache.stale() {
        match app.append(series, ts, STALE_NAN) {
            Ok(_) | Err(AppendFailure::OutOfOrder | AppendFailure::Duplicate) => {}
            Err(other) => return Err(BodyError::Storage(other)),
        }
    }
    Ok(())
}

mod nhcb;

#[cfg(test)]
mod tests;
