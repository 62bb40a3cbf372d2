//! `alerting:`: where alerts go, as Prometheus v3.16.0's
//! `config.AlertingConfig` and `config.AlertmanagerConfig` read and
//! validate them.
//!
//! ```yaml
//! alerting:
//!   alert_relabel_configs: [...]   # applied to every alert (crate::relabel)
//!   alertmanagers:
//!     - api_version: v2            # the only version (v1 is refused)
//!       path_prefix: /am           # before /api/v2/alerts
//!       scheme: http               # default http
//!       timeout: 10s               # default 10s
//!       static_configs: [{targets: ["am:9093"]}]
//!       file_sd_configs: [...]     # and dns_sd_configs (crate::discovery)
//!       relabel_configs: [...]     # on the discovered Alertmanagers
//!       alert_relabel_configs: [...]  # on alerts sent to this set only
//!       basic_auth: {...}          # the HTTP client settings (crate::http_client)
//! ```
//!
//! Checked as Prometheus checks them, in its order: while decoding an
//! entry, its fields' values (`api_version`, durations, relabeling rules,
//! discoveries), then the HTTP client settings, `sigv4` beside another
//! authentication, URLs as static targets (unless the entry relabels its
//! targets) and null relabeling rules; once the whole file is read, the
//! relabeling rules against `global:`'s name validation scheme
//! ([`validate`]). The service discoveries Ferrite does not run, and
//! `sigv4`, are read and named ([`AlertmanagerConfig::unsupported`]) for
//! the server to refuse them, as it refuses them in scrape jobs.

use serde::de::{self, Deserializer, IgnoredAny};
use serde::Deserialize;

use ferrite_model::ValidationScheme;

use crate::discovery::{
    discovery_list, target_groups, DnsSdConfig, FileSdConfig, HttpSdConfig, RawTargetGroup,
};
use crate::http_client::HttpClientConfig;
use crate::relabel::{go_quote, RelabelConfig};
use crate::scrape::TargetGroup;
use crate::yaml::{present, DurationMs, GoString};

/// Prometheus' default `timeout` of an Alertmanager set: 10 seconds.
pub const DEFAULT_TIMEOUT_MS: i64 = 10_000;

/// The `alerting:` section.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AlertingConfig {
    /// `alert_relabel_configs`: applied to every alert, after the external
    /// labels, before any set's own.
    pub alert_relabel_configs: Vec<RelabelConfig>,
    /// `alertmanagers`: the sets of Alertmanagers, in file order.
    pub alertmanagers: Vec<AlertmanagerConfig>,
}

/// One `alertmanagers` entry: a set of Alertmanagers found one way and
/// sent to alike.
#[derive(Debug, Clone, PartialEq)]
pub struct AlertmanagerConfig {
    /// `api_version`: `v2` (the default and only version Prometheus
    /// v3.16 accepts; empty if given as null).
    pub api_version: String,
    /// `path_prefix`: put before `/api/v2/alerts`.
    pub path_prefix: String,
    /// `scheme` (default `http`; not checked, as in Prometheus).
    pub scheme: String,
    /// `timeout` of one push, in milliseconds (default 10 s).
    pub timeout_ms: i64,
    /// The HTTP client settings.
    pub http_client: HttpClientConfig,
    /// Whether `sigv4` is set (AWS signing: Ferrite cannot do it).
    pub sigv4: bool,
    /// `static_configs`.
    pub static_configs: Vec<TargetGroup>,
    /// `file_sd_configs`.
    pub file_sd_configs: Vec<FileSdConfig>,
    /// `dns_sd_configs`.
    pub dns_sd_configs: Vec<DnsSdConfig>,
    /// `http_sd_configs`.
    pub http_sd_configs: Vec<HttpSdConfig>,
    /// The keys of the other service discoveries present (not run).
    pub unsupported_discovery: Vec<&'static str>,
    /// `relabel_configs`: applied to each discovered Alertmanager.
    pub relabel_configs: Vec<RelabelConfig>,
    /// `alert_relabel_configs`: applied to alerts sent to this set only.
    pub alert_relabel_configs: Vec<RelabelConfig>,
}

impl AlertmanagerConfig {
    /// A setting Prometheus honours that Ferrite cannot: its key and why
    /// (`None`: every setting is supported).
    pub fn unsupported(&self) -> Option<(String, &'static str)> {
        if let Some(sd) = self.unsupported_discovery.first() {
            return Some((sd.to_string(), crate::discovery::UNSUPPORTED_DISCOVERY));
        }
        if self.sigv4 {
            return Some((
                "sigv4".to_string(),
                "AWS Signature Version 4 signing is not supported by Ferrite",
            ));
        }
        self.http_client
            .unsupported()
            .map(|(setting, reason)| (setting.to_string(), reason))
    }

    /// The path alerts are posted to: `/<path_prefix>/api/<version>/alerts`,
    /// cleaned as Go's `path.Join` cleans it.
    pub fn post_path(&self) -> String {
        crate::clean_path(&format!(
            "/{}/api/{}/alerts",
            self.path_prefix, self.api_version
        ))
    }
}

/// The section as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAlerting {
    alert_relabel_configs: Option<Vec<Option<RelabelConfig>>>,
    alertmanagers: Option<Vec<Option<AlertmanagerEntry>>>,
}

/// The section, checked as Prometheus checks it while decoding (so its
/// faults come in file order with the other decoding errors).
pub(crate) struct AlertingSection(pub(crate) AlertingConfig);

impl<'de> Deserialize<'de> for AlertingSection {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        RawAlerting::deserialize(d)?
            .read()
            .map(AlertingSection)
            .map_err(de::Error::custom)
    }
}

/// One entry as written, checked as far as Prometheus checks it while
/// decoding.
pub(crate) struct AlertmanagerEntry(AlertmanagerConfig);

crate::discovery::raw_with_discovery! {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    // The discovery keys are only accepted, never read.
    #[allow(dead_code)]
    struct RawAlertmanager {
        #[serde(default, deserialize_with = "present")]
        api_version: Option<Option<ApiVersion>>,
        #[serde(default, deserialize_with = "present")]
        path_prefix: Option<Option<GoString>>,
        #[serde(default, deserialize_with = "present")]
        scheme: Option<Option<GoString>>,
        #[serde(default, deserialize_with = "present")]
        timeout: Option<Option<DurationMs>>,
        relabel_configs: Option<Vec<Option<RelabelConfig>>>,
        alert_relabel_configs: Option<Vec<Option<RelabelConfig>>>,
        sigv4: Option<IgnoredAny>,
        static_configs: Option<Vec<RawTargetGroup>>,
    }
}

/// An `api_version` value, checked while decoding.
struct ApiVersion(String);

impl<'de> Deserialize<'de> for ApiVersion {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let GoString(v) = GoString::deserialize(d)?;
        if v != "v2" {
            return Err(de::Error::custom(format!(
                "expected Alertmanager api version to be one of [v2] but got {v}"
            )));
        }
        Ok(ApiVersion(v))
    }
}

/// Rules of a list, or `null_error` for a null one.
fn rules(
    list: Option<Vec<Option<RelabelConfig>>>,
    null_error: &str,
) -> Result<Vec<RelabelConfig>, String> {
    list.unwrap_or_default()
        .into_iter()
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| null_error.to_string())
}

impl<'de> Deserialize<'de> for AlertmanagerEntry {
    /// Reads an entry and makes the checks Prometheus makes while decoding
    /// it (`AlertmanagerConfig.UnmarshalYAML`), in its order.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut raw = RawAlertmanager::deserialize(d)?;
        let static_configs = target_groups(raw.static_configs.take().unwrap_or_default());
        let dns_sd_configs = discovery_list(raw.dns_sd_configs.take(), "dns_sd_configs")
            .map_err(de::Error::custom)?;
        let file_sd_configs = discovery_list(raw.file_sd_configs.take(), "file_sd_configs")
            .map_err(de::Error::custom)?;
        let http_sd_configs = discovery_list(raw.http_sd_configs.take(), "http_sd_configs")
            .map_err(de::Error::custom)?;
        let unsupported_discovery = raw.unsupported_discovery();
        let http_client =
            crate::http_client::validate(raw.take_http_client()).map_err(de::Error::custom)?;
        let sigv4 = raw.sigv4.is_some();
        let auth = http_client.basic_auth.is_some()
            || http_client.authorization.is_some()
            || http_client.oauth2.is_some();
        if auth && sigv4 {
            return Err(de::Error::custom(
                "at most one of basic_auth, authorization, oauth2, & sigv4 must be configured",
            ));
        }
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
        let relabel_configs = rules(
            Some(relabels),
            "empty or null Alertmanager target relabeling rule",
        )
        .map_err(de::Error::custom)?;
        let alert_relabel_configs = rules(
            raw.alert_relabel_configs.take(),
            "empty or null Alertmanager alert relabeling rule",
        )
        .map_err(de::Error::custom)?;
        let text = |v: Option<GoString>| v.map(|GoString(s)| s).unwrap_or_default();
        Ok(AlertmanagerEntry(AlertmanagerConfig {
            api_version: match raw.api_version {
                None => "v2".to_string(),
                Some(v) => v.map(|ApiVersion(v)| v).unwrap_or_default(),
            },
            path_prefix: raw
                .path_prefix
                .flatten()
                .map(|GoString(s)| s)
                .unwrap_or_default(),
            scheme: raw.scheme.map_or("http".to_string(), text),
            timeout_ms: match raw.timeout {
                None => DEFAULT_TIMEOUT_MS,
                Some(t) => t.map_or(0, |DurationMs(ms)| ms),
            },
            http_client,
            sigv4,
            static_configs,
            file_sd_configs,
            dns_sd_configs,
            http_sd_configs,
            unsupported_discovery,
            relabel_configs,
            alert_relabel_configs,
        }))
    }
}

impl RawAlerting {
    /// The section's own decoding checks (`AlertingConfig.UnmarshalYAML`)
    /// and its entries.
    fn read(self) -> Result<AlertingConfig, String> {
        let alertmanagers = self
            .alertmanagers
            .unwrap_or_default()
            .into_iter()
            .map(|e| e.map(|AlertmanagerEntry(c)| c))
            .collect::<Option<Vec<_>>>();
        let alert_relabel_configs = rules(
            self.alert_relabel_configs,
            "empty or null alert relabeling rule",
        )?;
        // Prometheus crashes on a null entry; Ferrite refuses it.
        let alertmanagers =
            alertmanagers.ok_or("empty or null Alertmanager configuration in alertmanagers")?;
        Ok(AlertingConfig {
            alert_relabel_configs,
            alertmanagers,
        })
    }
}

/// `AlertingConfig.Validate`: every relabeling rule against the name
/// validation scheme, the section's own rules first, then each entry's
/// alert rules and target rules.
pub(crate) fn validate(cfg: &AlertingConfig, names: ValidationScheme) -> Result<(), String> {
    for rule in &cfg.alert_relabel_configs {
        rule.validate(names)?;
    }
    for am in &cfg.alertmanagers {
        for rule in am.alert_relabel_configs.iter().chain(&am.relabel_configs) {
            rule.validate(names)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::Config;

    fn parse(text: &str) -> Result<Config, String> {
        Config::parse(text, "p.yml").map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_and_fields() {
        let cfg = parse(
            "alerting:\n  alert_relabel_configs: [{action: labeldrop, regex: tmp}]\n  alertmanagers:\n    - static_configs: [{targets: ['am:9093']}]\n    - scheme: https\n      path_prefix: /x/\n      timeout: 3s\n      api_version: v2\n      basic_auth: {username: u, password: p}\n      relabel_configs: [{target_label: a, replacement: b}]\n      alert_relabel_configs: [{target_label: c, replacement: d}]\n      file_sd_configs: [{files: [am.json]}]\n      dns_sd_configs: [{names: [_am._tcp.example.org]}]\n",
        )
        .expect("loads");
        let a = &cfg.alerting;
        assert_eq!(a.alert_relabel_configs.len(), 1);
        let first = &a.alertmanagers[0];
        assert_eq!(
            (
                first.api_version.as_str(),
                first.scheme.as_str(),
                first.timeout_ms
            ),
            ("v2", "http", 10_000)
        );
        assert_eq!(first.post_path(), "/api/v2/alerts");
        assert_eq!(first.static_configs[0].targets, ["am:9093"]);
        let second = &a.alertmanagers[1];
        assert_eq!((second.scheme.as_str(), second.timeout_ms), ("https", 3000));
        assert_eq!(second.post_path(), "/x/api/v2/alerts");
        assert!(second.http_client.basic_auth.is_some());
        assert_eq!(second.relabel_configs.len(), 1);
        assert_eq!(second.alert_relabel_configs.len(), 1);
        assert_eq!(second.file_sd_configs.len(), 1);
        assert_eq!(second.dns_sd_configs.len(), 1);
        assert_eq!(second.unsupported(), None);
        assert!(parse("").expect("empty").alerting.alertmanagers.is_empty());
    }

    #[test]
    fn refusals_read_as_prometheus() {
        for (text, want) in [
            (
                "alerting:\n  alertmanagers:\n    - api_version: v1\n",
                "expected Alertmanager api version to be one of [v2] but got v1",
            ),
            (
                "alerting:\n  alertmanagers:\n    - bogus: 1\n",
                "line 3: field bogus not found in type config.AlertmanagerConfig",
            ),
            (
                "alerting:\n  bogus: 1\n",
                "line 2: field bogus not found in type config.plain",
            ),
            (
                "alerting:\n  alertmanagers:\n    - static_configs: [{targets: ['http://am:9093']}]\n",
                "\"http://am:9093\" is not a valid hostname",
            ),
            (
                "alerting:\n  alert_relabel_configs: [null]\n",
                "empty or null alert relabeling rule",
            ),
            (
                "alerting:\n  alertmanagers:\n    - relabel_configs: [null]\n",
                "empty or null Alertmanager target relabeling rule",
            ),
            (
                "alerting:\n  alertmanagers:\n    - alert_relabel_configs: [null]\n",
                "empty or null Alertmanager alert relabeling rule",
            ),
            (
                "alerting:\n  alertmanagers:\n    - basic_auth: {username: u}\n      sigv4: {region: x}\n",
                "at most one of basic_auth, authorization, oauth2, & sigv4 must be configured",
            ),
            (
                "alerting:\n  alertmanagers:\n    - dns_sd_configs: [null]\n",
                "empty or null section in dns_sd_configs",
            ),
        ] {
            let e = parse(text).expect_err(text);
            assert!(e.contains(want), "{text}: {e}");
        }
    }

    #[test]
    fn unsupported_settings_are_named() {
        let cfg = parse("alerting:\n  alertmanagers:\n    - consul_sd_configs: [{server: x}]\n    - sigv4: {region: x}\n")
            .expect("loads");
        let names: Vec<_> = cfg
            .alerting
            .alertmanagers
            .iter()
            .map(|a| a.unsupported().map(|(k, _)| k))
            .collect();
        assert_eq!(
            names,
            [
                Some("consul_sd_configs".to_string()),
                Some("sigv4".to_string())
            ]
        );
    }
}
