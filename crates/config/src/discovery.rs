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

use crate::http_client::HttpClientConfig;
use crate::relabel::go_quote;
use crate::scrape::TargetGroup;
use crate::yaml::{DurationMs, GoString, LabelNameField};

/// The service discoveries a Prometheus v3.16.0 server knows, by key,
/// beside the ones Ferrite runs (`dns`, `file`, `http`).
macro_rules! raw_with_discovery {
    ($(#[$meta:meta])* $vis:vis struct $name:ident { $($fields:tt)* }) => {
        $crate::http_client::raw_with_http_client! {
            $(#[$meta])*
            $vis struct $name {
                $($fields)*
                dns_sd_configs: Option<Vec<Option<$crate::discovery::DnsSdConfig>>>,
                file_sd_configs: Option<Vec<Option<$crate::discovery::FileSdConfig>>>,
                http_sd_configs: Option<Vec<Option<$crate::discovery::HttpSdConfig>>>,
                // Accepted and named by `unsupported_discovery` (the
                // server refuses to run what needs them).
                aws_sd_configs: Option<serde::de::IgnoredAny>,
                azure_sd_configs: Option<serde::de::IgnoredAny>,
                consul_sd_configs: Option<serde::de::IgnoredAny>,
                digitalocean_sd_configs: Option<serde::de::IgnoredAny>,
                docker_sd_configs: Option<serde::de::IgnoredAny>,
                dockerswarm_sd_configs: Option<serde::de::IgnoredAny>,
                ec2_sd_configs: Option<serde::de::IgnoredAny>,
                ecs_sd_configs: Option<serde::de::IgnoredAny>,
                elasticache_sd_configs: Option<serde::de::IgnoredAny>,
                eureka_sd_configs: Option<serde::de::IgnoredAny>,
                gce_sd_configs: Option<serde::de::IgnoredAny>,
                hetzner_sd_configs: Option<serde::de::IgnoredAny>,
                ionos_sd_configs: Option<serde::de::IgnoredAny>,
                kubernetes_sd_configs: Option<serde::de::IgnoredAny>,
                kuma_sd_configs: Option<serde::de::IgnoredAny>,
                lightsail_sd_configs: Option<serde::de::IgnoredAny>,
                linode_sd_configs: Option<serde::de::IgnoredAny>,
                marathon_sd_configs: Option<serde::de::IgnoredAny>,
                msk_sd_configs: Option<serde::de::IgnoredAny>,
                nerve_sd_configs: Option<serde::de::IgnoredAny>,
                nomad_sd_configs: Option<serde::de::IgnoredAny>,
                oci_sd_configs: Option<serde::de::IgnoredAny>,
                openstack_sd_configs: Option<serde::de::IgnoredAny>,
                outscale_sd_configs: Option<serde::de::IgnoredAny>,
                ovhcloud_sd_configs: Option<serde::de::IgnoredAny>,
                puppetdb_sd_configs: Option<serde::de::IgnoredAny>,
                rds_sd_configs: Option<serde::de::IgnoredAny>,
                scaleway_sd_configs: Option<serde::de::IgnoredAny>,
                serverset_sd_configs: Option<serde::de::IgnoredAny>,
                stackit_sd_configs: Option<serde::de::IgnoredAny>,
                triton_sd_configs: Option<serde::de::IgnoredAny>,
                uyuni_sd_configs: Option<serde::de::IgnoredAny>,
                vultr_sd_configs: Option<serde::de::IgnoredAny>,
            }
        }

        impl $name {
            /// The service discoveries present that Ferrite does not run,
            /// by their keys.
            fn unsupported_discovery(&self) -> Vec<&'static str> {
                [
                    ("aws_sd_configs", self.aws_sd_configs.is_some()),
                    ("azure_sd_configs", self.azure_sd_configs.is_some()),
                    ("consul_sd_configs", self.consul_sd_configs.is_some()),
                    ("digitalocean_sd_configs", self.digitalocean_sd_configs.is_some()),
                    ("docker_sd_configs", self.docker_sd_configs.is_some()),
                    ("dockerswarm_sd_configs", self.dockerswarm_sd_configs.is_some()),
                    ("ec2_sd_configs", self.ec2_sd_configs.is_some()),
                    ("ecs_sd_configs", self.ecs_sd_configs.is_some()),
                    ("elasticache_sd_configs", self.elasticache_sd_configs.is_some()),
                    ("eureka_sd_configs", self.eureka_sd_configs.is_some()),
                    ("gce_sd_configs", self.gce_sd_configs.is_some()),
                    ("hetzner_sd_configs", self.hetzner_sd_configs.is_some()),
                    ("ionos_sd_configs", self.ionos_sd_configs.is_some()),
                    ("kubernetes_sd_configs", self.kubernetes_sd_configs.is_some()),
                    ("kuma_sd_configs", self.kuma_sd_configs.is_some()),
                    ("lightsail_sd_configs", self.lightsail_sd_configs.is_some()),
                    ("linode_sd_configs", self.linode_sd_configs.is_some()),
                    ("marathon_sd_configs", self.marathon_sd_configs.is_some()),
                    ("msk_sd_configs", self.msk_sd_configs.is_some()),
                    ("nerve_sd_configs", self.nerve_sd_configs.is_some()),
                    ("nomad_sd_configs", self.nomad_sd_configs.is_some()),
                    ("oci_sd_configs", self.oci_sd_configs.is_some()),
                    ("openstack_sd_configs", self.openstack_sd_configs.is_some()),
                    ("outscale_sd_configs", self.outscale_sd_configs.is_some()),
                    ("ovhcloud_sd_configs", self.ovhcloud_sd_configs.is_some()),
                    ("puppetdb_sd_configs", self.puppetdb_sd_configs.is_some()),
                    ("rds_sd_configs", self.rds_sd_configs.is_some()),
                    ("scaleway_sd_configs", self.scaleway_sd_configs.is_some()),
                    ("serverset_sd_configs", self.serverset_sd_configs.is_some()),
                    ("stackit_sd_configs", self.stackit_sd_configs.is_some()),
                    ("triton_sd_configs", self.triton_sd_configs.is_some()),
                    ("uyuni_sd_configs", self.uyuni_sd_configs.is_some()),
                    ("vultr_sd_configs", self.vultr_sd_configs.is_some()),
                ]
                .into_iter()
                .filter(|(_, present)| *present)
                .map(|(key, _)| key)
                .collect()
            }
        }
    };
}
pub(crate) use raw_with_discovery;

/// Why a service discovery Ferrite does not run is refused.
pub const UNSUPPORTED_DISCOVERY: &str = "this service discovery is not supported by Ferrite yet (file_sd_configs, dns_sd_configs, http_sd_configs and static_configs are)";

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

crate::http_client::raw_with_http_client! {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct RawHttpSd {
        url: Option<GoString>,
        refresh_interval: Option<DurationMs>,
    }
}

impl<'de> Deserialize<'de> for HttpSdConfig {
    /// Prometheus' checks, in its order: a URL, parsed as Go parses it,
    /// with an http(s) scheme and a host; then the client's settings.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut raw = RawHttpSd::deserialize(d)?;
        let url = raw.url.take().map(|GoString(u)| u).unwrap_or_default();
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
        let http_client =
            crate::http_client::validate(raw.take_http_client()).map_err(de::Error::custom)?;
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

/// A target group as written (`static_configs` entries, discovery files
/// and answers).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTargetGroup {
    targets: Option<Vec<Option<GoString>>>,
    labels: Option<BTreeMap<LabelNameField, Option<GoString>>>,
}

impl RawTargetGroup {
    /// The group, a null target or label value read as empty.
    fn into_group(self) -> TargetGroup {
        let text = |v: Option<GoString>| v.map(|GoString(s)| s).unwrap_or_default();
        TargetGroup {
            targets: self
                .targets
                .unwrap_or_default()
                .into_iter()
                .map(text)
                .collect(),
            labels: Labels::new(
                self.labels
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(LabelNameField(n), v)| (n, text(v))),
            ),
        }
    }
}

/// `static_configs` entries as target groups.
pub(crate) fn target_groups(raw: Vec<RawTargetGroup>) -> Vec<TargetGroup> {
    raw.into_iter().map(RawTargetGroup::into_group).collect()
}

/// The entries of a discovery list, or Prometheus' error for a null one.
pub(crate) fn discovery_list<T>(list: Option<Vec<Option<T>>>, key: &str) -> Result<Vec<T>, String> {
    list.unwrap_or_default()
        .into_iter()
        .map(|c| c.ok_or_else(|| format!("empty or null section in {key}")))
        .collect()
}

/// An HTTP discovery answer's target groups (a JSON array of groups, as
/// in a `.json` discovery file).
pub fn parse_target_groups_json(text: &str) -> Result<Vec<TargetGroup>, String> {
    let raw: Vec<Option<RawTargetGroup>> = serde_json::from_str(text).map_err(|e| e.to_string())?;
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
    let raw: Vec<Option<RawTargetGroup>> = match ext.as_str() {
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
fn groups_from_raw(raw: Vec<Option<RawTargetGroup>>) -> Result<Vec<TargetGroup>, String> {
    raw.into_iter()
        .map(|g| {
            g.map(RawTargetGroup::into_group)
                .ok_or_else(|| "nil target group item found".to_string())
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
