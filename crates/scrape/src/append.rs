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
//! Prometheus text format, or OpenMetrics as Prometheus' scrape loop reads
//! it by default (`_created` series appended as ordinary series, no
//! `__type__`/`__unit__` labels; `# UNIT` goes to the target's metadata).
//! OpenMetrics exemplars are parsed and checked (a malformed one fails the
//! scrape with Prometheus' message) but not stored: Ferrite has no exemplar
//! storage. Converting classic histograms to native histograms with custom
//! buckets (`convert_classic_histograms_to_nhcb`) is not supported: with
//! [`AppendSettings::convert_classic_histograms_to_nhcb`] set, a scrape fails
//! at the first series Prometheus would convert, rather than store other
//! series than Prometheus would.

use std::borrow::Cow;

use ferrite_config::relabel::{apply as relabel, RelabelConfig};
use ferrite_model::gofloat::parse_go_float;
use ferrite_model::goquote::quote_bytes;
use ferrite_model::{Labels, ValidationScheme, METRIC_NAME, STALE_NAN};
use ferrite_textparse::omtext::{OmEntry, OmParser};
use ferrite_textparse::promtext::{TextEntry, TextError, TextParser, TextSeries};
use ferrite_textparse::MetricType;

use crate::cache::ScrapeCache;
use crate::format::{select_parser, Format};
use crate::storage::{AppendFailure, ScrapeAppender};

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
    /// The job's `convert_classic_histograms_to_nhcb` (false by default).
    /// Ferrite cannot convert, so a body with a classic histogram
    /// Prometheus would convert fails to append with
    /// [`BodyError::Unsupported`].
    pub convert_classic_histograms_to_nhcb: bool,
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
    /// The storage refused a sample for a reason that fails the scrape.
    #[error(transparent)]
    Storage(AppendFailure),
    /// The job asks for something Ferrite cannot do with this body.
    #[error("{0}")]
    Unsupported(String),
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
            pairs: Vec::new(),
        }
    }
}

/// The parser the body's `Content-Type` chose.
enum BodyParser<'b> {
    Text(TextParser<'b>),
    OpenMetrics(OmParser<'b>),
}

/// An entry of either format.
enum BodyEntry<'b> {
    Series(TextSeries<'b>),
    Help(&'b [u8], Cow<'b, [u8]>),
    Type(&'b [u8], MetricType),
    Unit(&'b [u8], &'b [u8]),
    Comment,
}

impl<'b> BodyParser<'b> {
    fn new(format: Format, body: &'b [u8]) -> Self {
        match format {
            Format::PrometheusText => BodyParser::Text(TextParser::new(body)),
            Format::OpenMetrics => BodyParser::OpenMetrics(OmParser::new(body)),
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
        }))
    }

    /// The labels of the last series.
    fn labels(&self, out: &mut Vec<(String, String)>) -> Result<(), TextError> {
        match self {
            BodyParser::Text(p) => p.labels(out),
            BodyParser::OpenMetrics(p) => p.labels(out),
        }
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
        b.cache.iter_done(false);
        return result;
    }
    let format = select_parser(content_type, b.settings.fallback_media_type)?;
    let mut limit = SampleLimit::new(b.settings.sample_limit, now_ms + MAX_AHEAD_MS);
    let mut parser = BodyParser::new(format, body);
    // The last `# TYPE` line, for the NHCB check.
    let mut last_type: (&[u8], MetricType) = (b"", MetricType::Unknown);
    while let Some(entry) = parser.next_entry()? {
        let series = match entry {
            BodyEntry::Series(series) => series,
            BodyEntry::Help(metric, text) => {
                let iter = b.cache.iter();
                lock(&b.cache.metadata).set_help(metric, &text, iter);
                continue;
            }
            BodyEntry::Type(metric, kind) => {
                let iter = b.cache.iter();
                lock(&b.cache.metadata).set_type(metric, kind, iter);
                last_type = (metric, kind);
                continue;
            }
            BodyEntry::Unit(metric, unit) => {
                let iter = b.cache.iter();
                lock(&b.cache.metadata).set_unit(metric, unit, iter);
                continue;
            }
            BodyEntry::Comment => continue,
        };
        if b.settings.convert_classic_histograms_to_nhcb && last_type.1 == MetricType::Histogram {
            refuse_nhcb(b, &parser, last_type.0)?;
        }
        counts.total += 1;
        let explicit = series.timestamp.filter(|_| b.settings.honor_timestamps);
        let sample = Sample {
            key: series.series,
            t: explicit.unwrap_or(ts),
            v: series.value,
            explicit: explicit.is_some(),
        };
        append_sample(b, &parser, app, &mut limit, sample, counts)?;
    }
    if limit.exceeded {
        return Err(BodyError::SampleLimit);
    }
    write_stale_markers(b, app, ts)?;
    b.cache.iter_done(true);
    Ok(())
}

fn lock(
    m: &crate::metadata::SharedMetadata,
) -> std::sync::MutexGuard<'_, crate::metadata::TargetMetadata> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// One series line's sample.
struct Sample<'b> {
    key: &'b [u8],
    t: i64,
    v: f64,
    /// Whether the timestamp came with the sample.
    explicit: bool,
}

/// `sample_limit` and the time bound, as Prometheus' limiting appenders
/// apply them.
struct SampleLimit {
    limit: u64,
    appended: u64,
    max_time: i64,
    exceeded: bool,
}

impl SampleLimit {
    fn new(limit: u64, max_time: i64) -> Self {
        SampleLimit {
            limit,
            appended: 0,
            max_time,
            exceeded: false,
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
    Storage(AppendFailure),
}

fn append_sample(
    b: &mut BodyAppender<'_>,
    parser: &BodyParser<'_>,
    app: &mut dyn ScrapeAppender,
    limit: &mut SampleLimit,
    s: Sample<'_>,
    counts: &mut AppendCounts,
) -> Result<(), BodyError> {
    if b.cache.is_dropped(s.key) {
        return Ok(());
    }
    let track = !s.explicit || b.settings.track_timestamps_staleness;
    let appended = if let Some(mut cached) = b.cache.get(s.key) {
        let result = if cached.already_scraped && !s.explicit {
            Err(Refused::Storage(AppendFailure::Duplicate))
        } else {
            limit.admit(s.t).and_then(|()| {
                let e = &*cached.entry;
                app.append(e.series_ref, &e.labels, s.t, s.v)
                    .map_err(Refused::Storage)
            })
        };
        if let Ok(series_ref) = result {
            cached.entry.series_ref = series_ref;
            if track {
                cached.track_staleness();
            }
        }
        result.map(|_| ())
    } else {
        let Some(labels) = new_series_labels(b, parser)? else {
            b.cache.add_dropped(s.key);
            return Ok(());
        };
        let result = limit
            .admit(s.t)
            .and_then(|()| app.append(0, &labels, s.t, s.v).map_err(Refused::Storage));
        if let Ok(series_ref) = result {
            b.cache.add(s.key, series_ref, labels, track);
            if !limit.exceeded {
                counts.series_added += 1;
            }
        }
        result.map(|_| ())
    };
    match appended {
        Ok(()) => {}
        Err(Refused::SampleLimit) => limit.exceeded = true,
        Err(Refused::Storage(AppendFailure::OutOfOrder)) => b.skipped.out_of_order += 1,
        Err(Refused::Storage(AppendFailure::Duplicate)) => b.skipped.duplicate += 1,
        Err(Refused::Storage(AppendFailure::OutOfBounds)) => b.skipped.out_of_bounds += 1,
        Err(Refused::Storage(other)) => return Err(BodyError::Storage(other)),
    }
    counts.added += 1;
    Ok(())
}

/// The labels of a line the cache does not know: parsed, given the
/// target's labels and `metric_relabel_configs`, and checked. `None` if
/// relabeling dropped it.
fn new_series_labels(
    b: &mut BodyAppender<'_>,
    parser: &BodyParser<'_>,
) -> Result<Option<Labels>, BodyError> {
    let s = b.settings;
    if let Err(e) = parser.labels(&mut b.pairs) {
        return Err(BodyError::InvalidNames(e.0));
    }
    let sample = Labels::from_pairs(&b.pairs);
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

/// Fails the scrape at a series Prometheus' NHCB conversion would take
/// (the last `# TYPE` named `family` a histogram): `family_bucket` with an
/// `le` that is a number, `family_count` or `family_sum`.
fn refuse_nhcb(
    b: &mut BodyAppender<'_>,
    parser: &BodyParser<'_>,
    family: &[u8],
) -> Result<(), BodyError> {
    if parser.labels(&mut b.pairs).is_err() {
        return Ok(()); // Not a series Prometheus appends either.
    }
    let get = |name: &str| {
        b.pairs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    };
    let name = get(METRIC_NAME).unwrap_or_default();
    let converted = if let Some(base) = name.strip_suffix("_bucket") {
        base.as_bytes() == family
            && get("le")
                .and_then(|le| parse_go_float(le.as_bytes()).ok())
                .is_some_and(|le| !le.is_nan())
    } else if let Some(base) = name.strip_suffix("_sum") {
        base.as_bytes() == family
    } else if let Some(base) = name.strip_suffix("_count") {
        base.as_bytes() == family
    } else {
        false
    };
    if !converted {
        return Ok(());
    }
    Err(BodyError::Unsupported(format!(
        "convert_classic_histograms_to_nhcb is set, but Ferrite cannot convert classic histograms \
         to native histograms with custom buckets: not appending histogram {} rather than \
         storing other series than Prometheus would",
        quote_bytes(family)
    )))
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
    for e in b.cache.stale() {
        match app.append(e.series_ref, &e.labels, ts, STALE_NAN) {
            Ok(_) | Err(AppendFailure::OutOfOrder | AppendFailure::Duplicate) => {}
            Err(other) => return Err(BodyError::Storage(other)),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
