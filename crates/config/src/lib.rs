//! `prometheus.yml`: Prometheus' configuration file, read and validated as
//! Prometheus v3.16.0 reads it, and the one place Ferrite models it.
//!
//! What is modelled so far:
//! - the whole file's top level: every section Prometheus knows
//!   (`global`, `runtime`, `alerting`, `rule_files`, `scrape_config_files`,
//!   `scrape_configs`, `storage`, `tracing`, `remote_write`, `remote_read`,
//!   `otlp`) is accepted and any other key refused with Prometheus' message;
//! - [`storage`]: the `storage:` section, read, validated and typed
//!   (`tsdb.out_of_order_time_window`, `tsdb.chunk_encoding.floats`,
//!   `tsdb.retention`, `tsdb.stale_series_compaction_threshold`,
//!   `exemplars.max_exemplars`);
//! - [`relabel`]: relabeling rules, read, validated and applied as
//!   Prometheus' `model/relabel` does (the sections that hold them are not
//!   read yet, so nothing applies them).
//!
//! The other sections are parsed as YAML but not yet read: their contents
//! are neither validated nor applied (scraping, rules and alerting, remote
//! write, tracing and OTLP settings are modelled by the modules that do
//! those things, as they are built).
//!
//! With no file, [`Config::default_file`] is Prometheus' shipped example
//! `prometheus.yml`, which scrapes the server itself.
//!
//! Errors read as Prometheus' do: `parsing YAML file <file>: <reason>`,
//! unknown keys as `yaml: unmarshal errors:\n  line N: field <key> not
//! found in type <Go type>`.

#![deny(clippy::unwrap_used, missing_docs)]

mod error;
pub mod relabel;
pub mod storage;
mod yaml;

use std::path::{Path, PathBuf};

use serde::Deserialize;

pub use error::ConfigError;
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
    /// The `storage:` section, with Prometheus' defaults where absent.
    pub storage: StorageConfig,
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
    global: Option<serde::de::IgnoredAny>,
    runtime: Option<serde::de::IgnoredAny>,
    alerting: Option<serde::de::IgnoredAny>,
    rule_files: Option<serde::de::IgnoredAny>,
    scrape_config_files: Option<serde::de::IgnoredAny>,
    scrape_configs: Option<serde::de::IgnoredAny>,
    storage: Option<storage::StorageSection>,
    tracing: Option<serde::de::IgnoredAny>,
    remote_write: Option<serde::de::IgnoredAny>,
    remote_read: Option<serde::de::IgnoredAny>,
    otlp: Option<serde::de::IgnoredAny>,
}

impl Config {
    /// Reads and validates the file at `path`.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let source = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let mut cfg = Config::parse(&source, &path.display().to_string())?;
        cfg.path = Some(path.to_path_buf());
        Ok(cfg)
    }

    /// Reads and validates configuration text; `name` is the file name
    /// errors mention.
    pub fn parse(source: &str, name: &str) -> Result<Config, ConfigError> {
        let parse_error = |reason: String| ConfigError::Parse {
            file: name.to_string(),
            reason,
        };
        let top: TopLevel = yaml::from_str(source).map_err(parse_error)?;
        // The sections read as a whole; those not modelled yet are dropped.
        let TopLevel { storage, .. } = top;
        let storage = match storage {
            Some(s) => s.validate().map_err(parse_error)?,
            None => StorageConfig::default(),
        };
        Ok(Config {
            storage,
            source: source.to_string(),
            path: None,
        })
    }

    /// The embedded default ([`DEFAULT_CONFIG`]).
    pub fn default_file() -> Config {
        // The embedded text is tested to parse; were it not to, the
        // defaults it would give are these.
        Config::parse(DEFAULT_CONFIG, "<default>").unwrap_or_else(|_| Config {
            storage: StorageConfig::default(),
            source: DEFAULT_CONFIG.to_string(),
            path: None,
        })
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
