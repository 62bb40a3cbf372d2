//! Service discovery settings Ferrite runs, and the target-group files
//! file discovery reads.
//!
//! - `file_sd_configs`: `files` (paths or globs with at most one `*`, in
//!   the last path element, ending `.json`, `.yml` or `.yaml`; relative to
//!   the configuration file's directory) and `refresh_interval` (5m);
//! - `dns_sd_configs`: `names`, `type` (`SRV`, the default, `A`, `AAAA`,
//!   `MX`, `NS`), `port` (required but for SRV) and `refresh_interval`
//!   (30s);
//! - `http_sd_configs`: `url` (http or https, with a host),
//!   `refresh_interval` (60s) and the HTTP client's settings;
//! - [`read_target_groups`]: a discovery file's target groups, decoded as
//!   Prometheus decodes them (`targets` as addresses, `labels` with valid
//!   names; a null group is an error), in JSON or YAML by the extension;
//!   [`parse_target_groups_json`] the same for an HTTP discovery answer.

use std::collections::BTreeMap;
use std::path::Path;

use ferrite_model::Labels;
use serde::de::{self, Deserializer};
use serde::Deserialize;

use crate::http_client::{
    Authorization, BasicAuth, HeaderConfig, HttpClientConfig, OAuth2, ProxyUrl, RawHttpClient,
    Secret, TlsConfig,
};
use crate::relabel::go_quote;
use crate::scrape::TargetGroup;
use crate::yaml::{present, DurationMs, GoString, LabelNameField};

/// One `file_sd_configs` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileSdConfig {
    /// The files or globs, made absolute (or relative to the working
    /// directory) as the configuration file's directory makes them.
    pub files: Vec<String>,
    /// `refresh_interval` in milliseconds (default 5 minutes).
    pub refresh_interval_ms: i64,
}

/// Prometheus' default `refresh_interval` of file discovery.
pub const FILE_SD_REFRESH_MS: i64 = 5 * 60 * 1000;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFileSd {
    files: Option<Vec<Option<GoString>>>,
    refresh_interval: Option<DurationMs>,
}

impl<'de> Deserialize<'de> for FileSdConfig {
    /// Prometheus' checks: at least one file, each a valid name.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = RawFileSd::deserialize(d)?;
        let files: Vec<String> = raw
            .files
            .unwrap_or_default()
            .into_iter()
            .map(|f| f.map(|GoString(s)| s).unwrap_or_default())
            .collect();
        if files.is_empty() {
            return Err(de::Error::custom(
                "file service discovery config must contain at least one path name",
            ));
        }
        for name in &files {
            if !is_file_sd_name(name) {
                return Err(de::Error::custom(format!(
                    "path name {} is not valid for file discovery",
                    go_quote(name)
                )));
            }
        }
        Ok(FileSdConfig {
            files,
            refresh_interval_ms: raw
                .refresh_interval
                .map_or(FILE_SD_REFRESH_MS, |DurationMs(ms)| ms),
        })
    }
}

impl FileSdConfig {
    /// Makes relative paths relative to `dir` (the configuration file's).
    pub fn set_directory(&mut self, dir: &Path) {
        for f in &mut self.files {
            *f = crate::join_dir(dir, f);
        }
    }
}

/// A DNS record type DNS discovery asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DnsRecordType {
    /// `SRV`: targets are each record's target and port.
    Srv,
    /// `A`: each IPv4 address with the configured port.
    A,
    /// `AAAA`: each IPv6 address with the configured port.
    Aaaa,
    /// `MX`: each mail exchanger with the configured port.
    Mx,
    /// `NS`: each name server with the configured port.
    Ns,
}

/// One `dns_sd_configs` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DnsSdConfig {
    /// The names to look up.
    pub names: Vec<String>,
    /// The record type.
    pub record_type: DnsRecordType,
    /// The port of targets from records other than SRV.
    pub port: u16,
    /// `refresh_interval` in milliseconds (default 30 seconds).
    pub refresh_interval_ms: i64,
}

/// Prometheus' default `refresh_interval` of DNS discovery.
pub const DNS_SD_REFRESH_MS: i64 = 30 * 1000;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDnsSd {
    names: Option<Vec<Option<GoString>>>,
    refresh_interval: Option<DurationMs>,
    #[serde(rename = "type")]
    record_type: Option<GoString>,
    port: Option<i64>,
}

impl<'de> Deserialize<'de> for DnsSdConfig {
    /// Prometheus' checks: a name, a known type, a port unless SRV.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = RawDnsSd::deserialize(d)?;
        let names: Vec<String> = raw
            .names
            .unwrap_or_default()
            .into_iter()
            .map(|n| n.map(|GoString(s)| s).unwrap_or_default())
            .collect();
        if names.is_empty() {
            return Err(de::Error::custom(
                "DNS-SD config must contain at least one SRV record name",
            ));
        }
        let typ = raw
            .record_type
            .map_or_else(|| "SRV".to_string(), |GoString(t)| t);
        let port = raw.port.unwrap_or(0);
        let record_type = match typ.to_uppercase().as_str() {
            "SRV" => DnsRecordType::Srv,
            other => {
                let t = match other {
                    "A" => DnsRecordType::A,
                    "AAAA" => DnsRecordType::Aaaa,
                    "MX" => DnsRecordType::Mx,
                    "NS" => DnsRecordType::Ns,
                    _ => {
                        return Err(de::Error::custom(format!(
                            "invalid DNS-SD records type {typ}"
                        )))
                    }
                };
                if port == 0 {
                    return Err(de::Error::custom(
                        "a port is required in DNS-SD configs for all record types except SRV",
                    ));
                }
                t
            }
        };
        Ok(DnsSdConfig {
            names,
            record_type,
            // Go keeps any int; a port outside 0..65535 could not be
            // dialled there either.
            port: u16::try_from(port).unwrap_or(0),
            refresh_interval_ms: raw
                .refresh_interval
                .map_or(DNS_SD_REFRESH_MS, |DurationMs(ms)| ms),
        })
    }
}

/// One `http_sd_configs` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpSdConfig {
    /// The URL answering the target groups.
    pub url: String,
    /// `refresh_interval` in milliseconds (default 60 seconds).
    pub refresh_interval_ms: i64,
    /// The client's settings (TLS, authentication, proxy, headers).
    pub http_client: HttpClientConfig,
}

/// Prometheus' default `refresh_interval` of HTTP discovery.
pub const HTTP_SD_REFRESH_MS: i64 = 60 * 1000;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHttpSd {
    url: Option<GoString>,
    refresh_interval: Option<DurationMs>,
    basic_auth: Option<BasicAuth>,
    authorization: Option<Authorization>,
    oauth2: Option<OAuth2>,
    bearer_token: Option<Secret>,
    bearer_token_file: Option<GoString>,
    tls_config: Option<TlsConfig>,
    #[serde(default, deserialize_with = "present")]
    follow_redirects: Option<Option<bool>>,
    #[serde(default, deserialize_with = "present")]
    enable_http2: Option<Option<bool>>,
    http_headers: Option<BTreeMap<GoString, Option<HeaderConfig>>>,
    proxy_url: Option<ProxyUrl>,
    no_proxy: Option<GoString>,
    proxy_from_environment: Option<bool>,
    proxy_connect_header: Option<BTreeMap<GoString, Option<Vec<Option<Secret>>>>>,
}

impl<'de> Deserialize<'de> for HttpSdConfig {
    /// Prometheus' checks, in its order: a URL, parsed as Go parses it,
    /// with an http(s) scheme and a host; then the client's settings.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = RawHttpSd::deserialize(d)?;
        let url = raw.url.map(|GoString(u)| u).unwrap_or_default();
        if url.is_empty() {
            return Err(de::Error::custom("URL is missing"));
        }
        let parsed = crate::http_client::gourl::parse(&url).map_err(de::Error::custom)?;
        if parsed.scheme != "http" && parsed.scheme != "https" {
            return Err(de::Error::custom("URL scheme must be 'http' or 'https'"));
        }
        if parsed.host.is_empty() {
            return Err(de::Error::custom("host is missing in URL"));
        }
        let http_client = crate::http_client::validate(RawHttpClient {
            basic_auth: raw.basic_auth,
            authorization: raw.authorization,
            oauth2: raw.oauth2,
            bearer_token: raw.bearer_token,
            bearer_token_file: raw.bearer_token_file,
            tls_config: raw.tls_config,
            follow_redirects: raw.follow_redirects,
            enable_http2: raw.enable_http2,
            http_headers: raw.http_headers,
            proxy_url: raw.proxy_url,
            no_proxy: raw.no_proxy,
            proxy_from_environment: raw.proxy_from_environment,
            proxy_connect_header: raw.proxy_connect_header,
        })
        .map_err(de::Error::custom)?;
        Ok(HttpSdConfig {
            url,
            refresh_interval_ms: raw
                .refresh_interval
                .map_or(HTTP_SD_REFRESH_MS, |DurationMs(ms)| ms),
            http_client,
        })
    }
}

/// `^[^*]*(\*[^/]*)?\.(json|yml|yaml|JSON|YML|YAML)$`: at most one `*`, in
/// the last path element, and a known extension.
fn is_file_sd_name(name: &str) -> bool {
    let known = ["json", "yml", "yaml", "JSON", "YML", "YAML"];
    let Some((stem, ext)) = name.rsplit_once('.') else {
        return false;
    };
    if !known.contains(&ext) {
        return false;
    }
    match stem.split_once('*') {
        None => true,
        Some((_, after)) => !after.contains('*') && !after.contains('/') && !ext.contains('/'),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGroup {
    targets: Option<Vec<Option<GoString>>>,
    labels: Option<BTreeMap<LabelNameField, Option<GoString>>>,
}

/// An HTTP discovery answer's target groups (a JSON array of groups, as
/// in a `.json` discovery file).
pub fn parse_target_groups_json(text: &str) -> Result<Vec<TargetGroup>, String> {
    let raw: Vec<Option<RawGroup>> = serde_json::from_str(text).map_err(|e| e.to_string())?;
    groups_from_raw(raw)
}

/// Reads a discovery file's target groups (JSON for `.json`, YAML for
/// `.yml`/`.yaml`, by the extension in any case).
pub fn read_target_groups(path: &Path, text: &str) -> Result<Vec<TargetGroup>, String> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    let raw: Vec<Option<RawGroup>> = match ext.as_str() {
        "json" => serde_json::from_str(text).map_err(|e| e.to_string())?,
        "yml" | "yaml" => {
            // An empty YAML file is no groups.
            if text.trim().is_empty() {
                Vec::new()
            } else {
                crate::yaml::from_str(text)?
            }
        }
        other => return Err(format!("unhandled file extension {}", go_quote(other))),
    };
    groups_from_raw(raw)
}

/// Decoded groups checked (no null group) and made [`TargetGroup`]s.
fn groups_from_raw(raw: Vec<Option<RawGroup>>) -> Result<Vec<TargetGroup>, String> {
    raw.into_iter()
        .map(|g| {
            let g = g.ok_or_else(|| "nil target group item found".to_string())?;
            let text = |v: Option<GoString>| v.map(|GoString(s)| s).unwrap_or_default();
            Ok(TargetGroup {
                targets: g
                    .targets
                    .unwrap_or_default()
                    .into_iter()
                    .map(text)
                    .collect(),
                labels: Labels::new(
                    g.labels
                        .unwrap_or_default()
                        .into_iter()
                        .map(|(LabelNameField(n), v)| (n, text(v))),
                ),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_sd_names() {
        for ok in [
            "a.json",
            "dir/*.yml",
            "/abs/x*y.YAML",
            "a/b/c.yaml",
            "*.json",
        ] {
            assert!(is_file_sd_name(ok), "{ok}");
        }
        for bad in ["a.txt", "a", "*/x.json", "a*b*c.json", "x.json/"] {
            assert!(!is_file_sd_name(bad), "{bad}");
        }
    }

    #[test]
    fn target_group_files() {
        let groups = read_target_groups(
            Path::new("t.json"),
            r#"[{"targets": ["a:1", "b:2"], "labels": {"env": "x"}}, {"targets": []}]"#,
        )
        .expect("json");
        assert_eq!(groups.len(), 2);
        assert_eq!(groups[0].targets, ["a:1", "b:2"]);
        assert_eq!(groups[0].labels.get("env"), "x");
        let groups = read_target_groups(
            Path::new("t.yml"),
            "- targets: [c:3]\n  labels: {team: y}\n",
        )
        .expect("yaml");
        assert_eq!(groups[0].targets, ["c:3"]);
        assert!(read_target_groups(Path::new("t.yml"), "")
            .expect("empty")
            .is_empty());
        let e = read_target_groups(Path::new("t.json"), "[null]").expect_err("an error");
        assert_eq!(e, "nil target group item found");
        let e =
            read_target_groups(Path::new("t.yml"), "- labels: {\"\": x}\n").expect_err("an error");
        assert!(e.contains("is not a valid label name"), "{e}");
        assert!(read_target_groups(Path::new("t.yml"), "- targets: [a]\n  bogus: 1\n").is_err());
    }

    #[test]
    fn dns_sd_config() {
        let c: DnsSdConfig = crate::yaml::from_str("names: [_x._tcp.example.org]\n").expect("ok");
        assert_eq!(c.record_type, DnsRecordType::Srv);
        assert_eq!(c.refresh_interval_ms, DNS_SD_REFRESH_MS);
        let c: DnsSdConfig =
            crate::yaml::from_str("names: [a.example.org]\ntype: a\nport: 9100\n").expect("ok");
        assert_eq!((c.record_type, c.port), (DnsRecordType::A, 9100));
        for (text, want) in [
            ("names: []\n", "at least one SRV record name"),
            ("names: [a]\ntype: A\n", "a port is required"),
            ("names: [a]\ntype: TXT\n", "invalid DNS-SD records type TXT"),
        ] {
            let e = crate::yaml::from_str::<DnsSdConfig>(text).expect_err("an error");
            assert!(e.contains(want), "{text}: {e}");
        }
    }

    #[test]
    fn file_sd_config() {
        let c: FileSdConfig = crate::yaml::from_str("files: [a/*.json]\n").expect("ok");
        assert_eq!(c.refresh_interval_ms, FILE_SD_REFRESH_MS);
        let e = crate::yaml::from_str::<FileSdConfig>("files: []\n").expect_err("an error");
        assert!(e.contains("at least one path name"), "{e}");
        let e = crate::yaml::from_str::<FileSdConfig>("files: [a.txt]\n").expect_err("an error");
        assert!(e.contains("is not valid for file discovery"), "{e}");
    }
}
