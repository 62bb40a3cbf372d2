//! `scrape_configs`: the scrape jobs, as Prometheus v3.16.0's
//! `config.ScrapeConfig` reads and validates them, with the defaults each
//! job takes from `global:`.
//!
//! ```yaml
//! scrape_configs:
//!   - job_name: node
//!     scrape_interval: 15s       # default: global's
//!     metrics_path: /metrics     # default /metrics
//!     scheme: http               # default http
//!     static_configs:
//!       - targets: ["host:9100"]
//!         labels: {env: prod}
//!     relabel_configs: [...]     # see crate::relabel
//!     metric_relabel_configs: [...]
//! ```
//!
//! Read and validated: every setting of the job itself, `static_configs`,
//! both relabeling lists, and the HTTP client settings (`basic_auth`,
//! `authorization`, `oauth2`, `tls_config`, proxies, `http_headers`, ...:
//! see [`crate::http_client`], checked right after the job's name, as
//! Prometheus checks them). Not read yet: the other service discoveries
//! (`file_sd_configs`, `kubernetes_sd_configs`, ...): their keys are
//! accepted, their contents neither checked nor used.

use std::collections::BTreeMap;

use serde::de::{self, Deserializer};
use serde::Deserialize;

use ferrite_model::Labels;

use crate::global::{validate_scrape_protocols, GlobalConfig, ScrapeLimits, ScrapeProtocol};
use ferrite_model::ValidationScheme;

use crate::discovery::{
    discovery_list, target_groups, DnsSdConfig, FileSdConfig, HttpSdConfig, RawTargetGroup,
};
use crate::http_client::HttpClientConfig;
use crate::relabel::{go_quote, RelabelConfig};
use crate::yaml::{present, Base2Bytes, DurationMs, GoString, SchemeField};

/// A group of targets from `static_configs`.
#[derive(Debug, Clone, PartialEq)]
pub struct TargetGroup {
    /// Each target's `__address__`.
    pub targets: Vec<String>,
    /// Labels every target of the group gets.
    pub labels: Labels,
}

/// One scrape job, its defaults filled in from `global:`.
#[derive(Debug, Clone, PartialEq)]
pub struct ScrapeConfig {
    /// `job_name`: unique in the file.
    pub job_name: String,
    /// `honor_labels`.
    pub honor_labels: bool,
    /// `honor_timestamps` (default true).
    pub honor_timestamps: bool,
    /// `track_timestamps_staleness`.
    pub track_timestamps_staleness: bool,
    /// `params`: URL parameters, by name.
    pub params: BTreeMap<String, Vec<String>>,
    /// `scrape_interval` in milliseconds.
    pub scrape_interval_ms: i64,
    /// `scrape_timeout` in milliseconds.
    pub scrape_timeout_ms: i64,
    /// `scrape_protocols`, in order of preference.
    pub scrape_protocols: Vec<ScrapeProtocol>,
    /// `fallback_scrape_protocol`.
    pub fallback_scrape_protocol: Option<ScrapeProtocol>,
    /// `scrape_native_histograms`.
    pub scrape_native_histograms: bool,
    /// `always_scrape_classic_histograms`.
    pub always_scrape_classic_histograms: bool,
    /// `convert_classic_histograms_to_nhcb`.
    pub convert_classic_histograms_to_nhcb: bool,
    /// `extra_scrape_metrics`.
    pub extra_scrape_metrics: bool,
    /// `scrape_failure_log_file` (relative to the file's directory).
    pub scrape_failure_log_file: String,
    /// `metrics_path` (default `/metrics`).
    pub metrics_path: String,
    /// `scheme` (default `http`).
    pub scheme: String,
    /// `enable_compression` (default true).
    pub enable_compression: bool,
    /// The job's limits, `global:`'s where it sets none.
    pub limits: ScrapeLimits,
    /// `native_histogram_bucket_limit`; 0: none.
    pub native_histogram_bucket_limit: u64,
    /// `native_histogram_min_bucket_factor`.
    pub native_histogram_min_bucket_factor: f64,
    /// `metric_name_validation_scheme`.
    pub metric_name_validation_scheme: ValidationScheme,
    /// `metric_name_escaping_scheme`: `allow-utf-8`, `underscores`,
    /// `dots` or `values`.
    pub metric_name_escaping_scheme: String,
    /// `relabel_configs`: applied to each discovered target.
    pub relabel_configs: Vec<RelabelConfig>,
    /// `metric_relabel_configs`: applied to each scraped series.
    pub metric_relabel_configs: Vec<RelabelConfig>,
    /// `static_configs`.
    pub static_configs: Vec<TargetGroup>,
    /// `file_sd_configs`.
    pub file_sd_configs: Vec<FileSdConfig>,
    /// `dns_sd_configs`.
    pub dns_sd_configs: Vec<DnsSdConfig>,
    /// `http_sd_configs`.
    pub http_sd_configs: Vec<HttpSdConfig>,
    /// The keys of the job's other service discoveries (`kubernetes_sd_configs`,
    /// ...), which Ferrite does not run: read, not used.
    pub unsupported_discovery: Vec<&'static str>,
    /// The HTTP client settings (`basic_auth`, `tls_config`, proxies, ...).
    pub http_client: HttpClientConfig,
}

crate::discovery::raw_with_discovery! {
    /// A job as written, checked as far as Prometheus checks it while
    /// decoding (see [`ScrapeSection::deserialize`]).
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    // The discovery keys are only accepted, never read.
    #[allow(dead_code)]
    struct RawScrape {
        job_name: Option<GoString>,
        honor_labels: Option<bool>,
        #[serde(default, deserialize_with = "present")]
        honor_timestamps: Option<Option<bool>>,
        track_timestamps_staleness: Option<bool>,
        params: Option<BTreeMap<String, Option<Vec<Option<GoString>>>>>,
        scrape_interval: Option<DurationMs>,
        scrape_timeout: Option<DurationMs>,
        scrape_protocols: Option<Vec<Option<GoString>>>,
        fallback_scrape_protocol: Option<GoString>,
        scrape_native_histograms: Option<bool>,
        always_scrape_classic_histograms: Option<bool>,
        convert_classic_histograms_to_nhcb: Option<bool>,
        scrape_failure_log_file: Option<GoString>,
        #[serde(default, deserialize_with = "present")]
        metrics_path: Option<Option<GoString>>,
        #[serde(default, deserialize_with = "present")]
        scheme: Option<Option<GoString>>,
        #[serde(default, deserialize_with = "present")]
        enable_compression: Option<Option<bool>>,
        body_size_limit: Option<Base2Bytes>,
        sample_limit: Option<u64>,
        target_limit: Option<u64>,
        label_limit: Option<u64>,
        label_name_length_limit: Option<u64>,
        label_value_length_limit: Option<u64>,
        native_histogram_bucket_limit: Option<u64>,
        native_histogram_min_bucket_factor: Option<f64>,
        keep_dropped_targets: Option<u64>,
        metric_name_validation_scheme: Option<SchemeField>,
        metric_name_escaping_scheme: Option<GoString>,
        extra_scrape_metrics: Option<bool>,
        relabel_configs: Option<Vec<Option<RelabelConfig>>>,
        metric_relabel_configs: Option<Vec<Option<RelabelConfig>>>,
        static_configs: Option<Vec<RawTargetGroup>>,
    }
}

/// A job as read from the file, before the `global:` defaults.
pub(crate) struct ScrapeSection {
    raw: RawScrape,
    relabel_configs: Vec<RelabelConfig>,
    metric_relabel_configs: Vec<RelabelConfig>,
    static_configs: Vec<TargetGroup>,
    file_sd_configs: Vec<FileSdConfig>,
    dns_sd_configs: Vec<DnsSdConfig>,
    http_sd_configs: Vec<HttpSdConfig>,
    unsupported_discovery: Vec<&'static str>,
    http_client: HttpClientConfig,
}

impl<'de> Deserialize<'de> for ScrapeSection {
    /// Reads a job and makes the checks Prometheus makes while decoding it
    /// (`ScrapeConfig.UnmarshalYAML`), so they come in file order with the
    /// other decoding errors: a job name, no URL as a static target
    /// (unless the job relabels its targets), no null relabeling rule.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut raw = RawScrape::deserialize(d)?;
        let static_configs = target_groups(raw.static_configs.take().unwrap_or_default());
        let dns_sd_configs = discovery_list(raw.dns_sd_configs.take(), "dns_sd_configs")
            .map_err(de::Error::custom)?;
        let file_sd_configs = discovery_list(raw.file_sd_configs.take(), "file_sd_configs")
            .map_err(de::Error::custom)?;
        let http_sd_configs = discovery_list(raw.http_sd_configs.take(), "http_sd_configs")
            .map_err(de::Error::custom)?;
        let unsupported_discovery = raw.unsupported_discovery();
        let job_empty = raw.job_name.as_ref().is_none_or(|GoString(j)| j.is_empty());
        if job_empty {
            return Err(de::Error::custom("job_name is empty"));
        }
        let http_client =
            crate::http_client::validate(raw.take_http_client()).map_err(de::Error::custom)?;
        let relabels = raw.relabel_configs.take().unwrap_or_default();
        if relabels.is_empty() {
            for target in static_configs.iter().flat_map(|g| &g.targets) {
                if target.contains('/') {
                    return Err(de::Error::custom(format!(
                        "{} is not a valid hostname",
                        go_quote(target)
                    )));
                }
            }
        }
        let relabel_configs = relabels
            .into_iter()
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| {
                de::Error::custom("empty or null target relabeling rule in scrape config")
            })?;
        let metric_relabel_configs = raw
            .metric_relabel_configs
            .take()
            .unwrap_or_default()
            .into_iter()
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| {
                de::Error::custom("empty or null metric relabeling rule in scrape config")
            })?;
        Ok(ScrapeSection {
            raw,
            relabel_configs,
            metric_relabel_configs,
            static_configs,
            file_sd_configs,
            dns_sd_configs,
            http_sd_configs,
            unsupported_discovery,
            http_client,
        })
    }
}

/// The escaping schemes Prometheus knows.
const ESCAPING_SCHEMES: [&str; 4] = ["allow-utf-8", "underscores", "dots", "values"];

fn escaping_list() -> String {
    format!(
        "must be one of '{}', '{}', '{}', or '{}'",
        ESCAPING_SCHEMES[0], ESCAPING_SCHEMES[1], ESCAPING_SCHEMES[2], ESCAPING_SCHEMES[3]
    )
}

impl ScrapeConfig {
    /// Makes the job's relative file names (its HTTP client's and its
    /// discoveries' files, `scrape_failure_log_file`) relative to `dir`,
    /// the directory of the file it came from (Prometheus'
    /// `SetDirectory`).
    pub fn set_directory(&mut self, dir: &std::path::Path) {
        let mut files = self.http_client.files_mut();
        files.push(&mut self.scrape_failure_log_file);
        files.extend(
            self.http_sd_configs
                .iter_mut()
                .flat_map(|sd| sd.http_client.files_mut()),
        );
        for file in files {
            *file = crate::join_dir(dir, file);
        }
        for sd in &mut self.file_sd_configs {
            sd.set_directory(dir);
        }
    }
}

impl ScrapeSection {
    /// The job's name as written.
    pub(crate) fn job_name(&self) -> &str {
        self.raw.job_name.as_ref().map_or("", |GoString(j)| j)
    }

    /// Fills in the defaults from `global` and validates, as
    /// `ScrapeConfig.Validate` does (the same checks, in its order).
    pub(crate) fn validate(self, global: &GlobalConfig) -> Result<ScrapeConfig, String> {
        let job = self.job_name().to_string();
        let mut raw = self.raw;
        let text = |v: Option<GoString>| v.map(|GoString(s)| s).unwrap_or_default();
        let (interval, timeout) = interval_and_timeout(&raw, global, &job)?;
        let native = raw
            .scrape_native_histograms
            .unwrap_or(global.scrape_native_histograms);
        let protocols = scrape_protocols(raw.scrape_protocols.take(), global, native, &job)?;
        let fallback = fallback_protocol(text(raw.fallback_scrape_protocol.take()), &job)?;
        let local_scheme = raw.metric_name_validation_scheme.as_ref().and_then(|s| s.0);
        let (validation, escaping) = name_schemes(
            local_scheme,
            text(raw.metric_name_escaping_scheme.take()),
            global,
        )?;
        for rule in self
            .relabel_configs
            .iter()
            .chain(&self.metric_relabel_configs)
        {
            rule.validate(validation)?;
        }
        let failure_log = match text(raw.scrape_failure_log_file) {
            f if f.is_empty() => global.scrape_failure_log_file.clone(),
            f => f,
        };
        let uint = |v: Option<u64>| v.unwrap_or(0);
        let limits = ScrapeLimits {
            body_size_limit: raw.body_size_limit.map_or(0, |b| b.0),
            sample_limit: uint(raw.sample_limit),
            target_limit: uint(raw.target_limit),
            label_limit: uint(raw.label_limit),
            label_name_length_limit: uint(raw.label_name_length_limit),
            label_value_length_limit: uint(raw.label_value_length_limit),
            keep_dropped_targets: uint(raw.keep_dropped_targets),
        }
        .or(global.limits);
        let params = raw
            .params
            .unwrap_or_default()
            .into_iter()
            .map(|(k, vs)| (k, vs.unwrap_or_default().into_iter().map(text).collect()))
            .collect();
        Ok(ScrapeConfig {
            job_name: job,
            honor_labels: raw.honor_labels.unwrap_or(false),
            honor_timestamps: raw.honor_timestamps.is_none_or(|v| v.unwrap_or(false)),
            track_timestamps_staleness: raw.track_timestamps_staleness.unwrap_or(false),
            params,
            scrape_interval_ms: interval,
            scrape_timeout_ms: timeout,
            scrape_protocols: protocols,
            fallback_scrape_protocol: fallback,
            scrape_native_histograms: native,
            always_scrape_classic_histograms: raw
                .always_scrape_classic_histograms
                .unwrap_or(global.always_scrape_classic_histograms),
            convert_classic_histograms_to_nhcb: raw
                .convert_classic_histograms_to_nhcb
                .unwrap_or(global.convert_classic_histograms_to_nhcb),
            extra_scrape_metrics: raw
                .extra_scrape_metrics
                .unwrap_or(global.extra_scrape_metrics),
            scrape_failure_log_file: failure_log,
            metrics_path: raw.metrics_path.map_or("/metrics".to_string(), text),
            scheme: raw.scheme.map_or("http".to_string(), text),
            enable_compression: raw.enable_compression.is_none_or(|v| v.unwrap_or(false)),
            limits,
            native_histogram_bucket_limit: raw.native_histogram_bucket_limit.unwrap_or(0),
            native_histogram_min_bucket_factor: raw
                .native_histogram_min_bucket_factor
                .unwrap_or(0.0),
            metric_name_validation_scheme: validation,
            metric_name_escaping_scheme: escaping,
            relabel_configs: self.relabel_configs,
            metric_relabel_configs: self.metric_relabel_configs,
            static_configs: self.static_configs,
            file_sd_configs: self.file_sd_configs,
            dns_sd_configs: self.dns_sd_configs,
            http_sd_configs: self.http_sd_configs,
            unsupported_discovery: self.unsupported_discovery,
            http_client: self.http_client,
        })
    }
}

/// The job's interval and timeout (`global:`'s where 0): the timeout may
/// not exceed the interval, and defaults to the shorter of `global:`'s
/// and the interval.
fn interval_and_timeout(
    raw: &RawScrape,
    global: &GlobalConfig,
    job: &str,
) -> Result<(i64, i64), String> {
    let interval = match raw.scrape_interval.map_or(0, |d| d.0) {
        0 => global.scrape_interval_ms,
        i => i,
    };
    let timeout = raw.scrape_timeout.map_or(0, |d| d.0);
    if timeout > interval {
        return Err(format!(
            "scrape timeout greater than scrape interval for scrape config with job name {}",
            go_quote(job)
        ));
    }
    if timeout == 0 {
        return Ok((interval, global.scrape_timeout_ms.min(interval)));
    }
    Ok((interval, timeout))
}

/// The protocols the job offers: its own list, else `global:`'s, else
/// protobuf first when it scrapes native histograms, else the default.
fn scrape_protocols(
    names: Option<Vec<Option<GoString>>>,
    global: &GlobalConfig,
    native_histograms: bool,
    job: &str,
) -> Result<Vec<ScrapeProtocol>, String> {
    let names: Option<Vec<String>> = names.map(|ns| {
        ns.into_iter()
            .map(|n| n.map(|GoString(s)| s).unwrap_or_default())
            .collect()
    });
    Ok(match (names, &global.scrape_protocols) {
        (Some(names), _) => validate_scrape_protocols(&names)
            .map_err(|e| format!("{e} for scrape config with job name {}", go_quote(job)))?,
        (None, Some(global)) => global.clone(),
        (None, None) if native_histograms => ScrapeProtocol::PROTO_FIRST.to_vec(),
        (None, None) => ScrapeProtocol::DEFAULT.to_vec(),
    })
}

fn fallback_protocol(name: String, job: &str) -> Result<Option<ScrapeProtocol>, String> {
    if name.is_empty() {
        return Ok(None);
    }
    ScrapeProtocol::from_name(&name).map(Some).map_err(|e| {
        format!(
            "invalid fallback_scrape_protocol for scrape config with job name {}: {e}",
            go_quote(job)
        )
    })
}

/// The job's name validation and escaping schemes, as Prometheus derives
/// them: an unset validation scheme is `global:`'s; an unset escaping
/// scheme is `global:`'s (itself derived from `global:`'s validation
/// scheme when unset) if the job's validation scheme is unset too, else
/// `underscores` for legacy names and `allow-utf-8` for UTF-8 ones; and
/// `allow-utf-8` needs UTF-8 names.
fn name_schemes(
    local_validation: Option<ValidationScheme>,
    local_escaping: String,
    global: &GlobalConfig,
) -> Result<(ValidationScheme, String), String> {
    let validation = local_validation.unwrap_or(global.metric_name_validation_scheme);
    let global_escaping = match global.metric_name_escaping_scheme.as_str() {
        "" if global.metric_name_validation_scheme == ValidationScheme::Legacy => "underscores",
        "" => "allow-utf-8",
        known if ESCAPING_SCHEMES.contains(&known) => known,
        other => {
            return Err(format!(
                "unknown global name escaping method specified, {}, got {}",
                escaping_list(),
                go_quote(other)
            ))
        }
    };
    let escaping = match local_escaping {
        e if !e.is_empty() => e,
        _ if local_validation.is_none() => global_escaping.to_string(),
        _ if validation == ValidationScheme::Legacy => "underscores".to_string(),
        _ => "allow-utf-8".to_string(),
    };
    if escaping == "allow-utf-8" && validation != ValidationScheme::Utf8 {
        return Err(
            "utf8 metric names requested but validation scheme is not set to UTF8".to_string(),
        );
    }
    if !ESCAPING_SCHEMES.contains(&escaping.as_str()) {
        return Err(format!(
            "unknown scrape config name escaping method specified, {}, got {}",
            escaping_list(),
            go_quote(&escaping)
        ));
    }
    Ok((validation, escaping))
}

/// Validates every job against `global` and checks their names are unique,
/// as `Config.UnmarshalYAML` does (a null job is refused).
pub(crate) fn validate_jobs(
    jobs: Vec<Option<ScrapeSection>>,
    global: &GlobalConfig,
) -> Result<Vec<ScrapeConfig>, String> {
    let mut out: Vec<ScrapeConfig> = Vec::with_capacity(jobs.len());
    for job in jobs {
        let job = job.ok_or("empty or null scrape config section")?;
        let job = job.validate(global)?;
        if out.iter().any(|j| j.job_name == job.job_name) {
            return Err(format!(
                "found multiple scrape configs with job name {}",
                go_quote(&job.job_name)
            ));
        }
        out.push(job);
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
