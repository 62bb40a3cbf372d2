//! The server's flags, named as Prometheus names them, so a Prometheus
//! systemd unit or container command starts Ferrite unchanged.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Args;
use ferrite_server::ServerOptions;
use ferrite_tsdb::DbOptions;

use super::backfill::parse_duration_ms;

#[derive(Args, Debug, Clone)]
pub struct ServerFlags {
    /// Base path for metrics storage.
    #[arg(long = "storage.tsdb.path", default_value = "data/")]
    pub data_dir: PathBuf,
    /// Address to listen on for the API and telemetry.
    #[arg(long = "web.listen-address", default_value = "0.0.0.0:9090")]
    pub listen: String,
    /// How long to retain samples (e.g. 15d). Default 15d, or none when a
    /// size limit is set.
    #[arg(long = "storage.tsdb.retention.time")]
    pub retention_time: Option<String>,
    /// Maximum number of bytes of blocks to retain (e.g. 512MB, 10GB).
    #[arg(long = "storage.tsdb.retention.size")]
    pub retention_size: Option<String>,
    /// Maximum block duration (default: a tenth of the retention, at most 31d).
    #[arg(long = "storage.tsdb.max-block-duration")]
    pub max_block_duration: Option<String>,
    /// Prometheus configuration file (scrape configuration is not used yet).
    #[arg(long = "config.file", default_value = "prometheus.yml")]
    pub config_file: PathBuf,
    /// How far back PromQL looks for a sample of an instant selector.
    #[arg(long = "query.lookback-delta", default_value = "5m")]
    pub lookback_delta: String,
    /// Maximum time a query may take before it is aborted.
    #[arg(long = "query.timeout", default_value = "2m")]
    pub query_timeout: String,
    /// Maximum number of samples a single query can load into memory.
    #[arg(long = "query.max-samples", default_value_t = 50_000_000)]
    pub query_max_samples: u64,
    /// Accept remote write requests (on by default in Ferrite).
    #[arg(long = "web.enable-remote-write-receiver")]
    pub remote_write_receiver: bool,
    /// Refuse remote write requests.
    #[arg(long = "no-web.enable-remote-write-receiver")]
    pub no_remote_write_receiver: bool,
    /// Enable the admin endpoints (snapshot, delete_series, clean_tombstones).
    #[arg(long = "web.enable-admin-api")]
    pub admin_api: bool,
    /// Cap on the rate compaction writes chunk data, bytes per second.
    #[arg(long = "storage.tsdb.compaction-write-rate")]
    pub compaction_write_rate: Option<u64>,
    // Accepted for compatibility with Prometheus command lines; unused.
    #[arg(long = "web.enable-lifecycle", hide = true)]
    pub enable_lifecycle: bool,
    #[arg(long = "web.external-url", hide = true)]
    pub external_url: Option<String>,
    #[arg(long = "web.console.templates", hide = true)]
    pub console_templates: Option<String>,
    #[arg(long = "web.console.libraries", hide = true)]
    pub console_libraries: Option<String>,
    #[arg(long = "log.level", hide = true)]
    pub log_level: Option<String>,
    #[arg(long = "log.format", hide = true)]
    pub log_format: Option<String>,
}

/// Parses a Prometheus byte size (`512MB`, `10GB`, `1TB`; base 1024).
pub fn parse_size_bytes(s: &str) -> Result<i64> {
    let s = s.trim();
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        bail!("invalid size {s:?}");
    }
    let n: i64 = s[..digits].parse().with_context(|| format!("size {s:?}"))?;
    let mult: i64 = match s[digits..].to_ascii_uppercase().as_str() {
        "" | "B" => 1,
        "KB" | "KIB" => 1 << 10,
        "MB" | "MIB" => 1 << 20,
        "GB" | "GIB" => 1 << 30,
        "TB" | "TIB" => 1 << 40,
        "PB" | "PIB" => 1 << 50,
        "EB" | "EIB" => 1 << 60,
        u => bail!("unknown unit {u:?} in size {s:?}"),
    };
    n.checked_mul(mult)
        .with_context(|| format!("size {s:?} is too large"))
}

impl ServerFlags {
    pub fn to_options(&self) -> Result<ServerOptions> {
        let listen: SocketAddr = self
            .listen
            .parse()
            .with_context(|| format!("--web.listen-address {:?}", self.listen))?;
        let mut db = DbOptions::default();
        if let Some(t) = &self.retention_time {
            db.retention_ms = parse_duration_ms(t).context("--storage.tsdb.retention.time")?;
        }
        if let Some(s) = &self.retention_size {
            db.retention_bytes = parse_size_bytes(s).context("--storage.tsdb.retention.size")?;
        }
        if let Some(d) = &self.max_block_duration {
            db.max_block_duration_ms =
                parse_duration_ms(d).context("--storage.tsdb.max-block-duration")?;
        }
        db.compaction_write_bytes_per_sec = self.compaction_write_rate;
        let engine = ferrite_promql::EngineOptions {
            lookback_delta_ms: parse_duration_ms(&self.lookback_delta)
                .context("--query.lookback-delta")?,
            max_samples: usize::try_from(self.query_max_samples).unwrap_or(usize::MAX),
            timeout: std::time::Duration::from_millis(
                parse_duration_ms(&self.query_timeout).context("--query.timeout")? as u64,
            ),
            ..ferrite_promql::EngineOptions::default()
        };
        let flags = vec![
            ("storage.tsdb.path", self.data_dir.display().to_string()),
            ("web.listen-address", self.listen.clone()),
            (
                "storage.tsdb.retention.time",
                self.retention_time.clone().unwrap_or_default(),
            ),
            (
                "storage.tsdb.retention.size",
                self.retention_size.clone().unwrap_or_else(|| "0B".into()),
            ),
            ("config.file", self.config_file.display().to_string()),
            ("query.lookback-delta", self.lookback_delta.clone()),
            ("query.timeout", self.query_timeout.clone()),
            ("query.max-samples", self.query_max_samples.to_string()),
            (
                "web.enable-remote-write-receiver",
                (!self.no_remote_write_receiver).to_string(),
            ),
            ("web.enable-admin-api", self.admin_api.to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        Ok(ServerOptions {
            data_dir: self.data_dir.clone(),
            listen,
            db,
            remote_write_receiver: !self.no_remote_write_receiver,
            admin_api: self.admin_api,
            engine,
            flags,
        })
    }
}

/// Runs the server until SIGTERM or SIGINT.
pub fn run(flags: ServerFlags) -> Result<()> {
    let opts = flags.to_options()?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    rt.block_on(ferrite_server::run_until_signal(opts))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size_bytes("512MB").unwrap(), 512 << 20);
        assert_eq!(parse_size_bytes("1GB").unwrap(), 1 << 30);
        assert_eq!(parse_size_bytes("100").unwrap(), 100);
        assert!(parse_size_bytes("10XB").is_err());
        assert!(parse_size_bytes("GB").is_err());
    }
}
