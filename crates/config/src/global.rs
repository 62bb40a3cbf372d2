//! The `global:` section, as Prometheus v3.16.0's `config.GlobalConfig`
//! reads and validates it: the defaults scrape jobs and rule groups
//! inherit, the external labels, the limits.
//!
//! ```yaml
//! global:
//!   scrape_interval: 15s          # default 1m
//!   scrape_timeout: 10s           # default 10s, at most scrape_interval
//!   evaluation_interval: 15s      # default 1m
//!   external_labels: {region: eu} # values expand ${ENV} as Prometheus' do
//!   scrape_protocols: [OpenMetricsText1.0.0, PrometheusText0.0.4]
//! ```
//!
//! Read and validated; what uses the settings (scraping, rules, the query
//! log) reads them from here as it is built.

use serde::de::{self, Deserializer};
use serde::Deserialize;

use ferrite_model::Labels;

use ferrite_model::ValidationScheme;

use crate::relabel::go_quote;
use crate::yaml::{Base2Bytes, DurationMs, GoString, SchemeField};

/// A protocol Prometheus offers a target, in its `Accept` header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScrapeProtocol {
    /// `PrometheusProto`: the protobuf exposition format.
    PrometheusProto,
    /// `PrometheusText0.0.4`.
    PrometheusText004,
    /// `PrometheusText1.0.0`.
    PrometheusText100,
    /// `OpenMetricsText0.0.1`.
    OpenMetricsText001,
    /// `OpenMetricsText1.0.0`.
    OpenMetricsText100,
    /// `OpenMetricsText2.0.0`.
    OpenMetricsText200,
}

impl ScrapeProtocol {
    /// Every protocol, in the order Prometheus lists them in its errors
    /// (sorted by name).
    const SORTED: [ScrapeProtocol; 6] = [
        ScrapeProtocol::OpenMetricsText001,
        ScrapeProtocol::OpenMetricsText100,
        ScrapeProtocol::OpenMetricsText200,
        ScrapeProtocol::PrometheusProto,
        ScrapeProtocol::PrometheusText004,
        ScrapeProtocol::PrometheusText100,
    ];

    /// Offered when neither the job nor `global` says, and the job does not
    /// scrape native histograms.
    pub const DEFAULT: [ScrapeProtocol; 4] = [
        ScrapeProtocol::OpenMetricsText100,
        ScrapeProtocol::OpenMetricsText001,
        ScrapeProtocol::PrometheusText100,
        ScrapeProtocol::PrometheusText004,
    ];

    /// Offered when neither the job nor `global` says, and the job scrapes
    /// native histograms (which only the protobuf format carries).
    pub const PROTO_FIRST: [ScrapeProtocol; 5] = [
        ScrapeProtocol::PrometheusProto,
        ScrapeProtocol::OpenMetricsText100,
        ScrapeProtocol::OpenMetricsText001,
        ScrapeProtocol::PrometheusText100,
        ScrapeProtocol::PrometheusText004,
    ];

    /// The name in configuration files.
    pub fn name(self) -> &'static str {
        match self {
            ScrapeProtocol::PrometheusProto => "PrometheusProto",
            ScrapeProtocol::PrometheusText004 => "PrometheusText0.0.4",
            ScrapeProtocol::PrometheusText100 => "PrometheusText1.0.0",
            ScrapeProtocol::OpenMetricsText001 => "OpenMetricsText0.0.1",
            ScrapeProtocol::OpenMetricsText100 => "OpenMetricsText1.0.0",
            ScrapeProtocol::OpenMetricsText200 => "OpenMetricsText2.0.0",
        }
    }

    /// The protocol named `name` (exactly, as Prometheus matches it).
    pub fn from_name(name: &str) -> Result<ScrapeProtocol, String> {
        Self::SORTED
            .into_iter()
            .find(|p| p.name() == name)
            .ok_or_else(|| {
                let names: Vec<&str> = Self::SORTED.iter().map(|p| p.name()).collect();
                format!(
                    "unknown scrape protocol {name}, supported: [{}]",
                    names.join(" ")
                )
            })
    }
}

/// Checks a `scrape_protocols` list as Prometheus does: not empty, no
/// name twice (ignoring case), every name known.
pub(crate) fn validate_scrape_protocols(names: &[String]) -> Result<Vec<ScrapeProtocol>, String> {
    if names.is_empty() {
        return Err("scrape_protocols cannot be empty".to_string());
    }
    let mut seen: Vec<String> = Vec::new();
    let mut out = Vec::with_capacity(names.len());
    for name in names {
        let lower = name.to_lowercase();
        if seen.contains(&lower) {
            return Err(format!(
                "duplicated protocol in scrape_protocols, got [{}]",
                names.join(" ")
            ));
        }
        out.push(ScrapeProtocol::from_name(name).map_err(|e| format!("scrape_protocols: {e}"))?);
        seen.push(lower);
    }
    Ok(out)
}

/// The limits a scrape enforces, each 0 for none: set in `global:`, and
/// per job where the job sets them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ScrapeLimits {
    /// `body_size_limit` in bytes.
    pub body_size_limit: i64,
    /// `sample_limit`.
    pub sample_limit: u64,
    /// `target_limit`.
    pub target_limit: u64,
    /// `label_limit`.
    pub label_limit: u64,
    /// `label_name_length_limit`.
    pub label_name_length_limit: u64,
    /// `label_value_length_limit`.
    pub label_value_length_limit: u64,
    /// `keep_dropped_targets` (0: keep all).
    pub keep_dropped_targets: u64,
}

impl ScrapeLimits {
    /// These limits, each one left 0 taken from `global` (as a job takes
    /// `global:`'s).
    pub(crate) fn or(self, global: ScrapeLimits) -> ScrapeLimits {
        let pick = |own: u64, global: u64| if own == 0 { global } else { own };
        ScrapeLimits {
            body_size_limit: if self.body_size_limit == 0 {
                global.body_size_limit
            } else {
                self.body_size_limit
            },
            sample_limit: pick(self.sample_limit, global.sample_limit),
            target_limit: pick(self.target_limit, global.target_limit),
            label_limit: pick(self.label_limit, global.label_limit),
            label_name_length_limit: pick(
                self.label_name_length_limit,
                global.label_name_length_limit,
            ),
            label_value_length_limit: pick(
                self.label_value_length_limit,
                global.label_value_length_limit,
            ),
            keep_dropped_targets: pick(self.keep_dropped_targets, global.keep_dropped_targets),
        }
    }
}

/// The `global:` section, defaults filled in.
#[derive(Debug, Clone, PartialEq)]
pub struct GlobalConfig {
    /// `scrape_interval` in milliseconds (default 1m).
    pub scrape_interval_ms: i64,
    /// `scrape_timeout` in milliseconds (default 10s, or the interval if
    /// shorter).
    pub scrape_timeout_ms: i64,
    /// `scrape_protocols`; `None`: each job picks its default.
    pub scrape_protocols: Option<Vec<ScrapeProtocol>>,
    /// `evaluation_interval` in milliseconds (default 1m).
    pub evaluation_interval_ms: i64,
    /// `rule_query_offset` in milliseconds.
    pub rule_query_offset_ms: i64,
    /// `query_log_file` (relative paths are relative to the file's
    /// directory); empty: none.
    pub query_log_file: String,
    /// `query_max_series` (enforced only with the query-cost feature).
    pub query_max_series: u64,
    /// `query_max_samples_read` (likewise).
    pub query_max_samples_read: u64,
    /// `query_max_duration` in milliseconds (likewise).
    pub query_max_duration_ms: i64,
    /// `scrape_failure_log_file` (relative as `query_log_file`).
    pub scrape_failure_log_file: String,
    /// `external_labels`, environment variables expanded in the values.
    pub external_labels: Labels,
    /// The scrape limits every job takes where it sets none.
    pub limits: ScrapeLimits,
    /// `metric_name_validation_scheme` (default UTF-8).
    pub metric_name_validation_scheme: ValidationScheme,
    /// `metric_name_escaping_scheme` as written (checked by the scrape
    /// jobs that use it, as in Prometheus); empty: from the validation
    /// scheme. Without a `global:` mapping, `allow-utf-8` (Prometheus'
    /// default global section; a written section, even `{}`, starts empty).
    pub metric_name_escaping_scheme: String,
    /// `scrape_native_histograms` (default false).
    pub scrape_native_histograms: bool,
    /// `convert_classic_histograms_to_nhcb`.
    pub convert_classic_histograms_to_nhcb: bool,
    /// `always_scrape_classic_histograms`.
    pub always_scrape_classic_histograms: bool,
    /// `extra_scrape_metrics` (default false).
    pub extra_scrape_metrics: bool,
}

const DEFAULT_SCRAPE_INTERVAL_MS: i64 = 60_000;
const DEFAULT_SCRAPE_TIMEOUT_MS: i64 = 10_000;
const DEFAULT_EVALUATION_INTERVAL_MS: i64 = 60_000;

impl Default for GlobalConfig {
    fn default() -> Self {
        GlobalConfig {
            scrape_interval_ms: DEFAULT_SCRAPE_INTERVAL_MS,
            scrape_timeout_ms: DEFAULT_SCRAPE_TIMEOUT_MS,
            scrape_protocols: None,
            evaluation_interval_ms: DEFAULT_EVALUATION_INTERVAL_MS,
            rule_query_offset_ms: 0,
            query_log_file: String::new(),
            query_max_series: 0,
            query_max_samples_read: 0,
            query_max_duration_ms: 0,
            scrape_failure_log_file: String::new(),
            external_labels: Labels::empty(),
            limits: ScrapeLimits::default(),
            metric_name_validation_scheme: ValidationScheme::Utf8,
            metric_name_escaping_scheme: "allow-utf-8".to_string(),
            scrape_native_histograms: false,
            convert_classic_histograms_to_nhcb: false,
            always_scrape_classic_histograms: false,
            extra_scrape_metrics: false,
        }
    }
}

/// The section as written (a null value reads as Go's zero value, as
/// yaml.v2 sets it, hence the `Option`s).
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct GlobalSection {
    scrape_interval: Option<DurationMs>,
    scrape_timeout: Option<DurationMs>,
    scrape_protocols: Option<Vec<Option<GoString>>>,
    evaluation_interval: Option<DurationMs>,
    rule_query_offset: Option<DurationMs>,
    query_log_file: Option<GoString>,
    query_max_series: Option<u64>,
    query_max_samples_read: Option<u64>,
    query_max_duration: Option<DurationMs>,
    scrape_failure_log_file: Option<GoString>,
    external_labels: Option<ExternalLabelsMap>,
    body_size_limit: Option<Base2Bytes>,
    sample_limit: Option<u64>,
    target_limit: Option<u64>,
    label_limit: Option<u64>,
    label_name_length_limit: Option<u64>,
    label_value_length_limit: Option<u64>,
    keep_dropped_targets: Option<u64>,
    metric_name_validation_scheme: Option<SchemeField>,
    metric_name_escaping_scheme: Option<GoString>,
    scrape_native_histograms: Option<bool>,
    convert_classic_histograms_to_nhcb: Option<bool>,
    always_scrape_classic_histograms: Option<bool>,
    extra_scrape_metrics: Option<bool>,
}

/// The section read and validated while decoding, as Prometheus'
/// `GlobalConfig.UnmarshalYAML` validates it (so its errors come in file
/// order with the other decoding errors); external label values are not
/// expanded yet ([`GlobalConfig::expand_external_labels`]).
pub(crate) struct CheckedGlobal(pub GlobalConfig);

impl<'de> Deserialize<'de> for CheckedGlobal {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        GlobalSection::deserialize(d)?
            .validate()
            .map(CheckedGlobal)
            .map_err(de::Error::custom)
    }
}

impl GlobalConfig {
    /// Expands environment variables in the external labels' values, as
    /// `config.Load` does after decoding (`os.Expand`: `$VAR`, `${VAR}`,
    /// `$$` for `$`; an unset or empty variable expands to nothing). A
    /// label whose value expands to nothing is dropped (Ferrite's label
    /// sets hold no empty values; Prometheus keeps it, and an empty label
    /// means no label to every reader of it).
    pub(crate) fn expand_external_labels(&mut self, lookup_env: &dyn Fn(&str) -> Option<String>) {
        let expanded: Vec<(String, String)> = self
            .external_labels
            .iter()
            .map(|l| (l.name.to_string(), os_expand(&l.value, lookup_env)))
            .collect();
        self.external_labels = Labels::new(expanded);
    }
}

impl GlobalSection {
    /// Fills in the defaults and validates, as `GlobalConfig.UnmarshalYAML`
    /// does.
    fn validate(self) -> Result<GlobalConfig, String> {
        let mut g = GlobalConfig {
            scrape_interval_ms: 0,
            scrape_timeout_ms: 0,
            evaluation_interval_ms: 0,
            ..GlobalConfig::default()
        };
        let text = |v: Option<GoString>| v.map(|GoString(s)| s).unwrap_or_default();
        g.metric_name_validation_scheme = self
            .metric_name_validation_scheme
            .and_then(|s| s.0)
            .unwrap_or(ValidationScheme::Utf8);
        g.external_labels = external_labels(
            self.external_labels.map(|m| m.0).unwrap_or_default(),
            g.metric_name_validation_scheme,
        )?;
        let ms = |d: Option<DurationMs>| d.map_or(0, |d| d.0);
        g.scrape_interval_ms = ms(self.scrape_interval);
        if g.scrape_interval_ms == 0 {
            g.scrape_interval_ms = DEFAULT_SCRAPE_INTERVAL_MS;
        }
        g.scrape_timeout_ms = ms(self.scrape_timeout);
        if g.scrape_timeout_ms > g.scrape_interval_ms {
            return Err("global scrape timeout greater than scrape interval".to_string());
        }
        if g.scrape_timeout_ms == 0 {
            g.scrape_timeout_ms = DEFAULT_SCRAPE_TIMEOUT_MS.min(g.scrape_interval_ms);
        }
        g.evaluation_interval_ms = ms(self.evaluation_interval);
        if g.evaluation_interval_ms == 0 {
            g.evaluation_interval_ms = DEFAULT_EVALUATION_INTERVAL_MS;
        }
        g.rule_query_offset_ms = ms(self.rule_query_offset);
        g.query_max_duration_ms = ms(self.query_max_duration);
        g.query_log_file = text(self.query_log_file);
        g.scrape_failure_log_file = text(self.scrape_failure_log_file);
        g.query_max_series = self.query_max_series.unwrap_or(0);
        g.query_max_samples_read = self.query_max_samples_read.unwrap_or(0);
        let uint = |v: Option<u64>| v.unwrap_or(0);
        g.limits = ScrapeLimits {
            body_size_limit: self.body_size_limit.map_or(0, |b| b.0),
            sample_limit: uint(self.sample_limit),
            target_limit: uint(self.target_limit),
            label_limit: uint(self.label_limit),
            label_name_length_limit: uint(self.label_name_length_limit),
            label_value_length_limit: uint(self.label_value_length_limit),
            keep_dropped_targets: uint(self.keep_dropped_targets),
        };
        g.metric_name_escaping_scheme = text(self.metric_name_escaping_scheme);
        g.scrape_native_histograms = self.scrape_native_histograms.unwrap_or(false);
        g.convert_classic_histograms_to_nhcb =
            self.convert_classic_histograms_to_nhcb.unwrap_or(false);
        g.always_scrape_classic_histograms = self.always_scrape_classic_histograms.unwrap_or(false);
        g.extra_scrape_metrics = self.extra_scrape_metrics.unwrap_or(false);
        if let Some(names) = self.scrape_protocols {
            let names: Vec<String> = names.into_iter().map(text).collect();
            let protocols =
                validate_scrape_protocols(&names).map_err(|e| format!("{e} for global config"))?;
            g.scrape_protocols = Some(protocols);
        }
        Ok(g)
    }
}

/// Validates external labels: names under the section's scheme (values
/// are UTF-8 by construction). Values are kept as written, `$` and all;
/// an empty one is dropped.
fn external_labels(
    pairs: Vec<(GoString, Option<GoString>)>,
    names: ValidationScheme,
) -> Result<Labels, String> {
    // Checked in name order, as Prometheus checks its sorted label set.
    let mut pairs = pairs;
    pairs.sort_by(|a, b| a.0 .0.cmp(&b.0 .0));
    let mut out = Vec::with_capacity(pairs.len());
    for (GoString(name), value) in pairs {
        if !names.is_valid_label_name(name.as_bytes()) {
            return Err(format!("{} is not a valid label name", go_quote(&name)));
        }
        let value = value.map(|GoString(v)| v).unwrap_or_default();
        out.push((name, value));
    }
    Ok(Labels::new(out))
}

/// Go's `os.Expand` with Prometheus' mapping: `$$` (and `${$}`) is `$`,
/// other names are looked up.
pub(crate) fn os_expand(s: &str, lookup_env: &dyn Fn(&str) -> Option<String>) -> String {
    let bytes = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    let mut start = 0;
    while i < bytes.len() {
        if bytes[i] == b'$' && i + 1 < bytes.len() {
            out.push_str(&s[start..i]);
            let (name, width) = shell_name(&s[i + 1..]);
            if name.is_none() && width > 0 {
                // Bad syntax (`${` unclosed, `${}`): the `$` and what was
                // read are dropped.
            } else if name.is_none() {
                // A `$` followed by no name stays.
                out.push('$');
            } else if let Some(name) = name {
                if name == "$" {
                    out.push('$');
                } else {
                    out.push_str(&lookup_env(name).unwrap_or_default());
                }
            }
            i += 1 + width;
            start = i;
        } else {
            i += 1;
        }
    }
    out.push_str(&s[start..]);
    out
}

/// `os.getShellName`: the name after a `$` and the bytes it takes. A
/// special one-character name (`*#$@!?-` or a digit), `{...}`, or
/// letters, digits and `_`. `(None, 0)`: no name (the `$` is kept);
/// `(None, n)`: bad syntax over `n` bytes.
fn shell_name(s: &str) -> (Option<&str>, usize) {
    let bytes = s.as_bytes();
    let special = |b: u8| b"*#$@!?-".contains(&b) || b.is_ascii_digit();
    let alnum = |b: u8| b == b'_' || b.is_ascii_alphanumeric();
    match bytes.first() {
        Some(b'{') => {
            if bytes.len() > 2 && special(bytes[1]) && bytes[2] == b'}' {
                return (Some(&s[1..2]), 3);
            }
            match bytes[1..].iter().position(|&b| b == b'}') {
                Some(0) => (None, 2),
                Some(end) => (Some(&s[1..1 + end]), end + 2),
                None => (None, 1),
            }
        }
        Some(&b) if special(b) => (Some(&s[..1]), 1),
        _ => {
            let n = bytes.iter().take_while(|&&b| alnum(b)).count();
            if n == 0 {
                (None, 0)
            } else {
                (Some(&s[..n]), n)
            }
        }
    }
}

/// Deserializes `external_labels` as an ordered list of pairs (so a name
/// given twice is refused by the YAML reader, as yaml.v2 refuses it).
impl<'de> Deserialize<'de> for ExternalLabelsMap {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct MapVisitor;
        impl<'de> de::Visitor<'de> for MapVisitor {
            type Value = ExternalLabelsMap;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a map of label names to values")
            }
            fn visit_map<A: de::MapAccess<'de>>(self, mut m: A) -> Result<Self::Value, A::Error> {
                let mut pairs = Vec::new();
                while let Some((k, v)) = m.next_entry::<GoString, Option<GoString>>()? {
                    pairs.push((k, v));
                }
                Ok(ExternalLabelsMap(pairs))
            }
        }
        d.deserialize_map(MapVisitor)
    }
}

/// `external_labels` as written.
pub(crate) struct ExternalLabelsMap(pub Vec<(GoString, Option<GoString>)>);

#[cfg(test)]
mod tests;
