//! `prometheus.yml`: Prometheus' configuration file, read and validated as
//! Prometheus v3.16.0 reads it, and the one place Ferrite models it.
//!
//! What is modelled so far:
//! - the whole file's top level: every section Prometheus knows
//!   (`global`, `runtime`, `alerting`, `rule_files`, `scrape_config_files`,
//!   `scrape_configs`, `storage`, `tracing`, `remote_write`, `remote_read`,
//!   `otlp`) is accepted and any other key refused with Prometheus' message;
//! - [`global`]: the `global:` section, read, validated and typed (every
//!   field of v3.16.0's, defaults as Prometheus fills them, `${VAR}` in
//!   external label values, relative log files made relative to the
//!   file);
//! - [`scrape`]: `scrape_configs`, each job read and validated with its
//!   defaults from `global:` (intervals, protocols, limits, name
//!   validation and escaping, `static_configs`, the file, DNS and HTTP
//!   discoveries of [`discovery`], both relabeling lists, the HTTP client
//!   settings of [`http_client`]); the other service discoveries are
//!   accepted by name (the server refuses to run them);
//! - [`alerting`]: the `alerting:` section (`alert_relabel_configs` and
//!   the Alertmanager sets: API version, path prefix, scheme, timeout,
//!   HTTP client settings, static, file, DNS and HTTP discovery, both
//!   relabeling lists), read and validated;
//! - `rule_files` and `scrape_config_files`: their patterns checked and
//!   made relative to the file; [`scrape_files`] reads the jobs of
//!   `scrape_config_files` (the rules crate reads the rule files);
//! - [`glob`]: Go's `filepath.Glob`, for both;
//! - [`relabel`]: relabeling rules, read, validated and applied as
//!   Prometheus' `model/relabel` does;
//! - [`storage`]: the `storage:` section, read, validated and typed
//!   (`tsdb.out_of_order_time_window`, `tsdb.chunk_encoding.floats`,
//!   `tsdb.retention`, `tsdb.stale_series_compaction_threshold`,
//!   `exemplars.max_exemplars`).
//!
//! The server applies `storage:`, runs the scrape jobs (those of
//! `scrape_config_files` too), the rule files and the `alerting:`
//! section. The other sections (`remote_write`, `remote_read`, `tracing`,
//! `otlp`, `runtime`) are parsed as YAML but not read: their contents are
//! neither validated nor applied.
//!
//! Errors come as Prometheus' do, and in its order: what Prometheus checks
//! while decoding (a field's own value: a duration, a size, a scheme, a
//! label name, a regex) is checked while decoding here, so the first such
//! fault in the file is the one named; a file with a YAML type error (a
//! string where a number belongs) may name another fault than Prometheus,
//! which reports those after the whole file.
//!
//! With no file, [`Config::default_file`] is Prometheus' shipped example
//! `prometheus.yml`, which scrapes the server itself.
//!
//! Errors read as Prometheus' do: `parsing YAML file <file>: <reason>`,
//! unknown keys as `yaml: unmarshal errors:\n  line N: field <key> not
//! found in type <Go type>`.

#![deny(clippy::unwrap_used, missing_docs)]

pub mod alerting;
pub mod discovery;
mod error;
pub mod glob;
pub mod global;
pub mod http_client;
pub mod log_file;
pub mod redact;
pub mod relabel;
pub mod scrape;
pub mod scrape_files;
pub mod storage;
mod yaml;

use std::path::{Path, PathBuf};

use serde::Deserialize;

pub use alerting::{AlertingConfig, AlertmanagerConfig};
pub use error::{go_open_error, go_os_reason, ConfigError};
pub use global::{GlobalConfig, ScrapeLimits, ScrapeProtocol};
pub use http_client::HttpClientConfig;
pub use scrape::{ScrapeConfig, TargetGroup};
pub use storage::{
    ExemplarsConfig, FloatChunkEncoding, RetentionConfig, StorageConfig, TsdbConfig,
};

/// Prometheus' shipped `documentation/examples/prometheus.yml` (v3.16.0):
/// 15 s scrape and evaluation intervals, one job scraping the server
/// itself. What Ferrite runs with when no file is given.
pub const DEFAULT_CONFIG: &str = r#"# my global config
global:
  scrape_interval: 15s # Set the scrape interval to every 15 seconds. Default is every 1 minute.
  evaluation_interval: 15s # Evaluate rules every 15 seconds. The default is every 1 minute.
  # scrape_timeout is set to the global default (10s).

# Alertmanager configuration
alerting:
  alertmanagers:
    - static_configs:
        - targets:
          # - alertmanager:9093

# Load rules once and periodically evaluate them according to the global 'evaluation_interval'.
rule_files:
  # - "first_rules.yml"
  # - "second_rules.yml"

# A scrape configuration containing exactly one endpoint to scrape:
# Here it's Prometheus itself.
scrape_configs:
  # The job name is added as a label `job=<job_name>` to any timeseries scraped from this config.
  - job_name: "prometheus"

    # metrics_path defaults to '/metrics'
    # scheme defaults to 'http'.

    static_configs:
      - targets: ["localhost:9090"]
       # The label name is added as a label `label_name=<label_value>` to any timeseries scraped from this config.
        labels:
          app: "prometheus"
    scrape_native_histograms: true
"#;

/// A loaded configuration file.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// The `global:` section, with Prometheus' defaults where absent.
    pub global: GlobalConfig,
    /// `rule_files`: paths or globs (relative to the file's directory).
    pub rule_files: Vec<String>,
    /// `scrape_config_files`: paths or globs (likewise), read by
    /// [`Config::scrape_configs_with_files`].
    pub scrape_config_files: Vec<String>,
    /// `scrape_configs`, each with the `global:` defaults filled in.
    pub scrape_configs: Vec<ScrapeConfig>,
    /// The `storage:` section, with Prometheus' defaults where absent.
    pub storage: StorageConfig,
    /// The `alerting:` section (empty where absent).
    pub alerting: AlertingConfig,
    /// The file's text, as loaded.
    pub source: String,
    /// Where it was loaded from (`None`: the embedded default).
    pub path: Option<PathBuf>,
}

/// The top level of the file: every section Prometheus knows; those not
/// modelled yet are parsed and set aside.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
// The sections not modelled yet are only parsed, never read.
#[allow(dead_code)]
struct TopLevel {
    global: Option<global::CheckedGlobal>,
    runtime: Option<serde::de::IgnoredAny>,
    alerting: Option<alerting::AlertingSection>,
    rule_files: Option<Vec<Option<yaml::GoString>>>,
    scrape_config_files: Option<Vec<Option<yaml::GoString>>>,
    scrape_configs: Option<Vec<Option<scrape::ScrapeSection>>>,
    storage: Option<storage::StorageSection>,
    tracing: Option<serde::de::IgnoredAny>,
    remote_write: Option<serde::de::IgnoredAny>,
    remote_read: Option<serde::de::IgnoredAny>,
    otlp: Option<serde::de::IgnoredAny>,
}

impl Config {
    /// Reads and validates the file at `path`. Relative file names in it
    /// (`query_log_file`, `scrape_failure_log_file`, a job's HTTP client
    /// files) become relative to the file's directory, as in Prometheus.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let source = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let mut cfg = Config::parse(&source, &path.display().to_string())?;
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let files = [
            &mut cfg.global.query_log_file,
            &mut cfg.global.scrape_failure_log_file,
        ]
        .into_iter()
        .chain(cfg.rule_files.iter_mut())
        .chain(cfg.scrape_config_files.iter_mut())
        .chain(cfg.alerting.alertmanagers.iter_mut().flat_map(|a| {
            let mut files = a.http_client.files_mut();
            files.extend(
                a.http_sd_configs
                    .iter_mut()
                    .flat_map(|sd| sd.http_client.files_mut()),
            );
            files
        }));
        for file in files {
            *file = join_dir(dir, file);
        }
        for sd in cfg
            .alerting
            .alertmanagers
            .iter_mut()
            .flat_map(|a| a.file_sd_configs.iter_mut())
        {
            sd.set_directory(dir);
        }
        for job in &mut cfg.scrape_configs {
            job.set_directory(dir);
        }
        cfg.path = Some(path.to_path_buf());
        Ok(cfg)
    }

    /// Reads and validates configuration text; `name` is the file name
    /// errors mention. `${VAR}` in external label values expands from the
    /// process environment.
    pub fn parse(source: &str, name: &str) -> Result<Config, ConfigError> {
        Config::parse_with_env(source, name, &|var| std::env::var(var).ok())
    }

    /// [`Config::parse`] with the environment given as a lookup.
    pub fn parse_with_env(
        source: &str,
        name: &str,
        lookup_env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Config, ConfigError> {
        let parse_error = |reason: String| ConfigError::Parse {
            file: name.to_string(),
            reason,
        };
        let top: TopLevel = yaml::from_str(source).map_err(parse_error)?;
        // The sections read as a whole; those not modelled yet are dropped.
        let TopLevel {
            global,
            rule_files,
            scrape_config_files,
            scrape_configs,
            storage,
            alerting,
            ..
        } = top;
        let mut global = global.map_or_else(GlobalConfig::default, |g| g.0);
        let alerting = alerting.map_or_else(AlertingConfig::default, |a| a.0);
        let rule_files = file_patterns(rule_files, "rule file").map_err(parse_error)?;
        let scrape_config_files =
            file_patterns(scrape_config_files, "scrape config file").map_err(parse_error)?;
        let scrape_configs = scrape::validate_jobs(scrape_configs.unwrap_or_default(), &global)
            .map_err(parse_error)?;
        alerting::validate(&alerting, global.metric_name_validation_scheme).map_err(parse_error)?;
        global.expand_external_labels(lookup_env);
        let storage = match storage {
            Some(s) => s.validate().map_err(parse_error)?,
            None => StorageConfig::default(),
        };
        Ok(Config {
            global,
            rule_files,
            scrape_config_files,
            scrape_configs,
            storage,
            alerting,
            source: source.to_string(),
            path: None,
        })
    }

    /// No file at all: Prometheus' defaults and no jobs (what
    /// `ferrite_server::ServerOptions::new` starts with).
    pub fn empty() -> Config {
        Config::parse("", "<none>").unwrap_or_else(|_| Config {
            global: GlobalConfig::default(),
            rule_files: Vec::new(),
            scrape_config_files: Vec::new(),
            scrape_configs: Vec::new(),
            storage: StorageConfig::default(),
            alerting: AlertingConfig::default(),
            source: String::new(),
            path: None,
        })
    }

    /// The embedded default with its job scraping `localhost:<port>`: the
    /// server itself, wherever it listens (the shipped example names
    /// Prometheus' port, 9090).
    pub fn default_file_for_port(port: u16) -> Config {
        let text = DEFAULT_CONFIG.replace("localhost:9090", &format!("localhost:{port}"));
        Config::parse(&text, "<default>").unwrap_or_else(|_| Config::default_file())
    }

    /// The embedded default ([`DEFAULT_CONFIG`]).
    pub fn default_file() -> Config {
        // The embedded text is tested to parse; were it not to, the
        // defaults it would give are these.
        Config::parse(DEFAULT_CONFIG, "<default>").unwrap_or_else(|_| Config {
            global: GlobalConfig::default(),
            rule_files: Vec::new(),
            scrape_config_files: Vec::new(),
            scrape_configs: Vec::new(),
            storage: StorageConfig::default(),
            alerting: AlertingConfig::default(),
            source: DEFAULT_CONFIG.to_string(),
            path: None,
        })
    }
}

/// Checks `rule_files` or `scrape_config_files` entries as Prometheus does
/// (`^[^*]*(\*[^/]*)?$`): wildcards only in the last path element.
fn file_patterns(
    entries: Option<Vec<Option<yaml::GoString>>>,
    what: &str,
) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for entry in entries.unwrap_or_default() {
        let path = entry.map(|yaml::GoString(p)| p).unwrap_or_default();
        let valid = match path.split_once('*') {
            None => true,
            Some((_, after)) => !after.contains('/'),
        };
        if !valid {
            return Err(format!("invalid {what} path {}", relabel::go_quote(&path)));
        }
        out.push(path);
    }
    Ok(out)
}

/// Go's `config.JoinDir`: `path` relative to `dir` unless empty or
/// absolute, cleaned as `filepath.Join` cleans it.
fn join_dir(dir: &Path, path: &str) -> String {
    if path.is_empty() || Path::new(path).is_absolute() {
        return path.to_string();
    }
    clean_path(&format!("{}/{path}", dir.display()))
}

/// Go's `filepath.Clean` for Unix paths: no `.`, no `x/..`, no repeated
/// or trailing `/`; `.` for nothing.
fn clean_path(path: &str) -> String {
    let rooted = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => match parts.last() {
                Some(&last) if last != ".." => {
                    parts.pop();
                }
                _ if rooted => {}
                _ => parts.push(".."),
            },
            p => parts.push(p),
        }
    }
    let joined = parts.join("/");
    match (rooted, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".to_string(),
        (false, false) => joined,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_file_parses() {
        let cfg = Config::parse(DEFAULT_CONFIG, "<default>").expect("parses");
        assert_eq!(cfg.storage, StorageConfig::default());
        assert_eq!(Config::default_file().source, DEFAULT_CONFIG);
        assert_eq!(cfg.scrape_configs.len(), 1);
        assert_eq!(
            cfg.scrape_configs[0].static_configs[0].targets,
            ["localhost:9090"]
        );
        let own = Config::default_file_for_port(19090);
        assert_eq!(
            own.scrape_configs[0].static_configs[0].targets,
            ["localhost:19090"]
        );
        assert_eq!(own.scrape_configs[0].scrape_interval_ms, 15_000);
        assert!(Config::empty().scrape_configs.is_empty());
    }

    #[test]
    fn empty_files_are_the_defaults() {
        for text in ["", "# nothing\n", "---\n"] {
            let cfg = Config::parse(text, "p.yml").expect("parses");
            assert_eq!(cfg.storage, StorageConfig::default(), "{text:?}");
        }
    }

    #[test]
    fn unknown_top_level_keys_are_refused_as_prometheus_does() {
        let err = Config::parse("global: {}\nscrape_confgs: []\n", "prometheus.yml")
            .expect_err("unknown key");
        assert_eq!(
            err.to_string(),
            "parsing YAML file prometheus.yml: yaml: unmarshal errors:\n  line 2: field scrape_confgs not found in type config.plain"
        );
    }

    #[test]
    fn load_names_the_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let missing = dir.path().join("missing.yml");
        let err = Config::load(&missing).expect_err("missing");
        assert!(err
            .to_string()
            .starts_with(&format!("open {}: ", missing.display())));
        let p = dir.path().join("p.yml");
        std::fs::write(&p, "storage:\n  tsdb:\n    out_of_order_time_window: 1h\n").expect("write");
        let cfg = Config::load(&p).expect("loads");
        assert_eq!(cfg.storage.tsdb.out_of_order_time_window_ms, 3_600_000);
        assert_eq!(cfg.path.as_deref(), Some(p.as_path()));
    }
}
