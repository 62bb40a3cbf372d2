//! A target's labels, from what discovery found and the job's settings,
//! through `relabel_configs` (Prometheus' `scrape.PopulateLabels`).
//!
//! [`discovered_labels`] is the set before relabeling (the target's own
//! labels, its group's, then the job's settings as `__`-labels where not
//! set already); [`populate_labels`] relabels it and checks what a scrape
//! needs: an address without a path, an interval and a timeout that parse,
//! are not 0 and fit each other, and booleans that parse. Then the
//! `__meta_*` labels go and `instance` defaults to the address. The other
//! `__` labels stay: the scrape reads them, and they never reach a series.
//!
//! Labels the rules see come in this order: the target's, its group's, the
//! job's settings, its `params`; Prometheus adds the first two from Go maps,
//! in no fixed order, so a `labelmap` that maps two of them onto one name
//! may keep either there; here the one later in name order wins.

use ferrite_config::relabel::apply;
use ferrite_config::ScrapeConfig;
use ferrite_model::units::{format_duration_ms, parse_duration_ms, UnitsError};
use ferrite_model::Labels;

/// `__address__`: where to scrape.
pub const ADDRESS_LABEL: &str = "__address__";
/// `__scheme__`.
pub const SCHEME_LABEL: &str = "__scheme__";
/// `__metrics_path__`.
pub const METRICS_PATH_LABEL: &str = "__metrics_path__";
/// `__scrape_interval__`.
pub const SCRAPE_INTERVAL_LABEL: &str = "__scrape_interval__";
/// `__scrape_timeout__`.
pub const SCRAPE_TIMEOUT_LABEL: &str = "__scrape_timeout__";
/// Prefix of the URL parameters as labels (`__param_<name>`).
pub const PARAM_LABEL_PREFIX: &str = "__param_";
/// Prefix of discovery's metadata labels, dropped after relabeling.
pub const META_LABEL_PREFIX: &str = "__meta_";
/// `__convert_classic_histograms_to_nhcb__`.
pub const CONVERT_NHCB_LABEL: &str = "__convert_classic_histograms_to_nhcb__";
/// `__always_scrape_classic_histograms__`.
pub const ALWAYS_SCRAPE_CLASSIC_LABEL: &str = "__always_scrape_classic_histograms__";
/// `__scrape_native_histograms__`.
pub const SCRAPE_NATIVE_LABEL: &str = "__scrape_native_histograms__";

/// Why a target cannot be scraped (Prometheus' texts).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    /// Relabeling left no `__address__`.
    #[error("no address")]
    NoAddress,
    /// The address holds a `/` (a URL rather than `host:port`).
    #[error("{} is not a valid hostname", go_quote(.0))]
    InvalidHostname(String),
    /// `__scrape_interval__` does not parse.
    #[error("error parsing scrape interval: {0}")]
    BadInterval(#[source] UnitsError),
    /// `__scrape_interval__` is 0.
    #[error("scrape interval cannot be 0")]
    ZeroInterval,
    /// `__scrape_timeout__` does not parse.
    #[error("error parsing scrape timeout: {0}")]
    BadTimeout(#[source] UnitsError),
    /// `__scrape_timeout__` is 0.
    #[error("scrape timeout cannot be 0")]
    ZeroTimeout,
    /// The timeout is longer than the interval.
    #[error("scrape timeout cannot be greater than scrape interval ({} > {})", go_quote(.timeout), go_quote(.interval))]
    TimeoutAboveInterval {
        /// `__scrape_timeout__` as set.
        timeout: String,
        /// `__scrape_interval__` as set.
        interval: String,
    },
    /// One of the histogram switches is not a Go boolean.
    #[error("error parsing {what}: strconv.ParseBool: parsing {}: invalid syntax", go_quote(.value))]
    BadBool {
        /// Which switch, as Prometheus names it.
        what: &'static str,
        /// The value as set.
        value: String,
    },
}

/// The target's labels before relabeling: its own, its group's where the
/// target has none of that name, then the job's settings and `params`
/// where not set already (Prometheus' `PopulateDiscoveredLabels`).
pub fn discovered_labels(target: &Labels, group: &Labels, cfg: &ScrapeConfig) -> Labels {
    let mut ls = target.clone();
    for l in group.iter() {
        if !target.has(&l.name) {
            ls.set(&l.name, &l.value);
        }
    }
    let bool_text = |b: bool| if b { "true" } else { "false" };
    let settings = [
        ("job", cfg.job_name.clone()),
        (
            SCRAPE_INTERVAL_LABEL,
            format_duration_ms(cfg.scrape_interval_ms),
        ),
        (
            SCRAPE_TIMEOUT_LABEL,
            format_duration_ms(cfg.scrape_timeout_ms),
        ),
        (METRICS_PATH_LABEL, cfg.metrics_path.clone()),
        (SCHEME_LABEL, cfg.scheme.clone()),
        (
            CONVERT_NHCB_LABEL,
            bool_text(cfg.convert_classic_histograms_to_nhcb).to_string(),
        ),
        (
            ALWAYS_SCRAPE_CLASSIC_LABEL,
            bool_text(cfg.always_scrape_classic_histograms).to_string(),
        ),
        (
            SCRAPE_NATIVE_LABEL,
            bool_text(cfg.scrape_native_histograms).to_string(),
        ),
    ];
    for (name, value) in settings {
        if ls.get(name).is_empty() {
            ls.set(name, &value);
        }
    }
    for (name, values) in &cfg.params {
        let label = format!("{PARAM_LABEL_PREFIX}{name}");
        if let Some(first) = values.first() {
            if ls.get(&label).is_empty() {
                ls.set(&label, first);
            }
        }
    }
    ls
}

/// The target's labels after relabeling and checks: `Ok(None)` if a rule
/// dropped it, an error if it cannot be scraped (Prometheus'
/// `PopulateLabels`). Expects `cfg`'s rules validated (as
/// `ferrite_config::Config` leaves them).
pub fn populate_labels(
    target: &Labels,
    group: &Labels,
    cfg: &ScrapeConfig,
) -> Result<Option<Labels>, TargetError> {
    finish_labels(&discovered_labels(target, group, cfg), cfg)
}

/// [`populate_labels`] from labels [`discovered_labels`] already gave (a
/// pool keeps them for the targets API).
pub fn finish_labels(
    discovered: &Labels,
    cfg: &ScrapeConfig,
) -> Result<Option<Labels>, TargetError> {
    let Some(mut ls) = apply(
        discovered,
        &cfg.relabel_configs,
        cfg.metric_name_validation_scheme,
    ) else {
        return Ok(None);
    };
    let address = ls.get(ADDRESS_LABEL).to_string();
    if address.is_empty() {
        return Err(TargetError::NoAddress);
    }
    if address.contains('/') {
        return Err(TargetError::InvalidHostname(address));
    }
    check_interval_and_timeout(&ls)?;
    for (name, what) in [
        (CONVERT_NHCB_LABEL, "convert classic histograms to nhcb"),
        (
            ALWAYS_SCRAPE_CLASSIC_LABEL,
            "always scrape classic histograms",
        ),
        (SCRAPE_NATIVE_LABEL, "scrape native histograms"),
    ] {
        let value = ls.get(name);
        if !value.is_empty() && parse_go_bool(value).is_none() {
            return Err(TargetError::BadBool {
                what,
                value: value.to_string(),
            });
        }
    }
    let meta: Vec<String> = ls
        .iter()
        .filter(|l| l.name.starts_with(META_LABEL_PREFIX))
        .map(|l| l.name.to_string())
        .collect();
    for name in meta {
        ls.remove(&name);
    }
    if ls.get("instance").is_empty() {
        ls.set("instance", &address);
    }
    Ok(Some(ls))
}

fn check_interval_and_timeout(ls: &Labels) -> Result<(), TargetError> {
    let interval = ls.get(SCRAPE_INTERVAL_LABEL);
    let interval_ms = parse_duration_ms(interval).map_err(TargetError::BadInterval)?;
    if interval_ms == 0 {
        return Err(TargetError::ZeroInterval);
    }
    let timeout = ls.get(SCRAPE_TIMEOUT_LABEL);
    let timeout_ms = parse_duration_ms(timeout).map_err(TargetError::BadTimeout)?;
    if timeout_ms == 0 {
        return Err(TargetError::ZeroTimeout);
    }
    if timeout_ms > interval_ms {
        return Err(TargetError::TimeoutAboveInterval {
            timeout: timeout.to_string(),
            interval: interval.to_string(),
        });
    }
    Ok(())
}

/// Go's `strconv.ParseBool`.
pub fn parse_go_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

use ferrite_model::goquote::quote as go_quote;

#[cfg(test)]
mod tests;
