//! `GET /metrics`, Ferrite's own metrics.
//!
//! The metrics are written by hand in the Prometheus text format 0.0.4
//! (`# HELP`, `# TYPE`, `name{label="value"} value`), which every Prometheus
//! scrapes: they are read from the database at scrape time, so there is no
//! registry to keep in sync. Where a metric means what one of Prometheus'
//! means, it has Prometheus' name and labels, so dashboards and alerts made
//! for Prometheus work on Ferrite (`prometheus_tsdb_head_series`,
//! `prometheus_build_info`, `process_*`, ...). Counters Ferrite does not keep
//! (compactions run, remote write requests received) are left out rather
//! than reported as zero.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::UNIX_EPOCH;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use ferrite_model::gofloat::format_f;

use crate::AppState;
use ferrite_scrape::manager::PoolSnapshot;

/// The content type of the text format 0.0.4.
pub const TEXT_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// One metric family being written.
struct Exposition {
    out: String,
}

impl Exposition {
    fn family(&mut self, name: &str, kind: &str, help: &str) -> &mut Self {
        let _ = writeln!(self.out, "# HELP {name} {help}");
        let _ = writeln!(self.out, "# TYPE {name} {kind}");
        self
    }

    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64) -> &mut Self {
        self.out.push_str(name);
        if !labels.is_empty() {
            self.out.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                if i > 0 {
                    self.out.push(',');
                }
                let _ = write!(self.out, "{k}=\"{}\"", escape(v));
            }
            self.out.push('}');
        }
        let _ = writeln!(self.out, " {}", format_f(value));
        self
    }

    /// A family of one unlabelled sample.
    fn single(&mut self, name: &str, kind: &str, help: &str, value: f64) {
        self.family(name, kind, help).sample(name, &[], value);
    }
}

/// Label value escaping of the text format.
fn escape(v: &str) -> String {
    v.replace('\\', r"\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Go's names of the architecture, as `prometheus_build_info` reports it.
fn go_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "x86" => "386",
        "aarch64" => "arm64",
        "powerpc64" => "ppc64",
        other => other,
    }
}

/// Scraping's metrics: its counters and timings, then each pool's
/// metadata cache, syncs, targets and target limit.
fn scrape_metrics(e: &mut Exposition, s: &AppState, pools: &[PoolSnapshot]) {
    for c in s.scrape.metrics().counters() {
        e.single(c.name, "counter", c.help, c.value as f64);
    }
    write_families(&mut e.out, &s.scrape.metrics().timing_families());
    if pools.is_empty() {
        return;
    }
    // Each pool's metadata cache: (families, bytes) over its targets.
    let cache_sizes: Vec<(usize, usize)> = pools
        .iter()
        .map(|p| {
            p.active.iter().fold((0, 0), |(entries, bytes), t| {
                let metadata = t.metadata.lock().unwrap_or_else(|p| p.into_inner());
                let (n, b) = metadata.cache_size();
                (entries + n, bytes + b)
            })
        })
        .collect();
    let mut per_pool = |name, kind, help, values: &mut dyn Iterator<Item = f64>| {
        e.family(name, kind, help);
        for (p, v) in pools.iter().zip(values) {
            e.sample(name, &[("scrape_job", &p.job)], v);
        }
    };
    per_pool(
        "prometheus_target_metadata_cache_bytes",
        "gauge",
        "The number of bytes that are currently used for storing metric metadata in the cache",
        &mut cache_sizes.iter().map(|c| c.1 as f64),
    );
    per_pool(
        "prometheus_target_metadata_cache_entries",
        "gauge",
        "Total number of metric metadata entries in the cache",
        &mut cache_sizes.iter().map(|c| c.0 as f64),
    );
    per_pool(
        "prometheus_target_scrape_pool_sync_total",
        "counter",
        "Total number of syncs that were executed on a scrape pool.",
        &mut pools.iter().map(|p| p.syncs as f64),
    );
    per_pool(
        "prometheus_target_scrape_pool_target_limit",
        "gauge",
        "Maximum number of targets allowed in this scrape pool.",
        &mut pools.iter().map(|p| p.target_limit as f64),
    );
    per_pool(
        "prometheus_target_scrape_pool_targets",
        "gauge",
        "Current number of targets in this scrape pool.",
        &mut pools.iter().map(|p| p.active.len() as f64),
    );
    per_pool(
        "prometheus_target_sync_failed_total",
        "counter",
        "Total number of target sync failures.",
        &mut pools.iter().map(|p| p.sync_failures as f64),
    );
}

/// The rule groups' metrics (`prometheus_rule_*`, one sample per group).
fn rule_metrics(e: &mut Exposition, families: &[ferrite_rules::metrics::Family]) {
    for f in families {
        e.family(f.name, f.kind, f.help);
        for (group, v) in &f.samples {
            e.sample(f.name, &[("rule_group", group)], *v);
        }
    }
}

/// The compaction counters, with Prometheus' names and help texts.
fn compaction_metrics(e: &mut Exposition, stats: &ferrite_tsdb::CompactionStats) {
    use std::sync::atomic::Ordering::Relaxed;
    for (name, help, counter) in [
        (
            "prometheus_tsdb_compactions_failed_total",
            "Total number of compactions that failed for the partition.",
            &stats.failed,
        ),
        (
            "prometheus_tsdb_compactions_total",
            "Total number of compactions that were executed for the partition.",
            &stats.ran,
        ),
        (
            "prometheus_tsdb_compactions_triggered_total",
            "Total number of triggered compactions for the partition.",
            &stats.triggered,
        ),
    ] {
        e.single(name, "counter", help, counter.load(Relaxed) as f64);
    }
}

/// Writes self-metric families (discovery's, the notifier's) in the text
/// format. A family with no samples is left out, as Go's client leaves
/// out a labelled metric with no series yet.
pub fn write_families(out: &mut String, families: &[ferrite_model::selfmetrics::Family]) {
    use std::fmt::Write as _;
    for f in families.iter().filter(|f| !f.samples.is_empty()) {
        let _ = writeln!(out, "# HELP {} {}", f.name, f.help);
        let _ = writeln!(out, "# TYPE {} {}", f.name, f.kind);
        for s in &f.samples {
            out.push_str(&s.name);
            if !s.labels.is_empty() {
                out.push('{');
                for (i, (k, v)) in s.labels.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    let v = v
                        .replace('\\', r"\\")
                        .replace('"', "\\\"")
                        .replace('\n', "\\n");
                    let _ = write!(out, "{k}=\"{v}\"");
                }
                out.push('}');
            }
            let _ = writeln!(out, " {}", ferrite_model::gofloat::format_f(s.value));
        }
    }
}

/// The whole exposition.
pub fn render(
    s: &AppState,
    pools: &[PoolSnapshot],
    rules: &[ferrite_rules::metrics::Family],
) -> String {
    use std::sync::atomic::Ordering::Relaxed;
    let mut e = Exposition { out: String::new() };
    scrape_metrics(&mut e, s, pools);
    rule_metrics(&mut e, rules);
    write_families(&mut e.out, &ferrite_rules::metrics::timing_families());
    write_families(
        &mut e.out,
        &ferrite_scrape::discovery::metrics::DiscoveryMetrics::global().families(),
    );
    write_families(&mut e.out, &s.notifier.metric_families());
    write_families(&mut e.out, &s.queries.families());
    let head = s.db.head();
    let stats = &head.stats;
    let float = [("type", "float")];

    e.family(
        "prometheus_build_info",
        "gauge",
        "A metric with a constant '1' value labeled by version, revision, branch, goversion from which prometheus was built, and the goos and goarch for the build.",
    )
    .sample(
        "prometheus_build_info",
        &[
            ("branch", ""),
            ("goarch", go_arch()),
            ("goos", std::env::consts::OS),
            ("goversion", ""),
            ("revision", ""),
            ("tags", ""),
            ("version", env!("CARGO_PKG_VERSION")),
        ],
        1.0,
    );
    e.single(
        "prometheus_ready",
        "gauge",
        "Whether Prometheus startup was fully completed and the server is ready for normal operation.",
        1.0,
    );
    e.single(
        "prometheus_config_last_reload_successful",
        "gauge",
        "Whether the last configuration reload attempt was successful.",
        if s.reload.successful.load(Relaxed) {
            1.0
        } else {
            0.0
        },
    );
    e.single(
        "prometheus_config_last_reload_success_timestamp_seconds",
        "gauge",
        "Timestamp of the last successful configuration reload.",
        s.reload.last_success_unix.load(Relaxed) as f64,
    );
    write_families(&mut e.out, &s.http.families());

    {
        use ferrite_model::selfmetrics::summary_family;
        write_families(
            &mut e.out,
            &[
                summary_family(
                    "prometheus_tsdb_head_gc_duration_seconds",
                    "Runtime of garbage collection in the head block.",
                    &stats.timings.gc_duration,
                ),
                summary_family(
                    "prometheus_tsdb_wal_fsync_duration_seconds",
                    "Duration of write log fsync.",
                    &stats.timings.wal_fsync_duration,
                ),
                summary_family(
                    "prometheus_tsdb_wal_truncate_duration_seconds",
                    "Duration of WAL truncation.",
                    &stats.timings.wal_truncate_duration,
                ),
            ],
        );
    }
    e.single(
        "prometheus_tsdb_head_series",
        "gauge",
        "Total number of series in the head block.",
        head.num_series() as f64,
    );
    e.single(
        "prometheus_tsdb_head_series_created_total",
        "counter",
        "Total number of series created in the head",
        stats.series_created.load(Relaxed) as f64,
    );
    e.family(
        "prometheus_tsdb_head_samples_appended_total",
        "counter",
        "Total number of appended samples.",
    )
    .sample(
        "prometheus_tsdb_head_samples_appended_total",
        &float,
        stats.samples_appended.load(Relaxed) as f64,
    );
    e.family(
        "prometheus_tsdb_out_of_bound_samples_total",
        "counter",
        "Total number of out of bound samples ingestion failed attempts with out of order support disabled.",
    )
    .sample(
        "prometheus_tsdb_out_of_bound_samples_total",
        &float,
        stats.out_of_bounds_samples.load(Relaxed) as f64,
    );
    e.family(
        "prometheus_tsdb_out_of_order_samples_total",
        "counter",
        "Total number of out of order samples ingestion failed attempts due to out of order being disabled.",
    )
    .sample(
        "prometheus_tsdb_out_of_order_samples_total",
        &float,
        stats.out_of_order_samples.load(Relaxed) as f64,
    );
    e.family(
        "prometheus_tsdb_too_old_samples_total",
        "counter",
        "Total number of out of order samples ingestion failed attempts with out of support enabled, but sample outside of time window.",
    )
    .sample(
        "prometheus_tsdb_too_old_samples_total",
        &float,
        stats.too_old_samples.load(Relaxed) as f64,
    );
    e.family(
        "prometheus_tsdb_head_out_of_order_samples_appended_total",
        "counter",
        "Total number of appended out of order samples.",
    )
    .sample(
        "prometheus_tsdb_head_out_of_order_samples_appended_total",
        &float,
        stats.out_of_order_samples_appended.load(Relaxed) as f64,
    );
    // As Prometheus: the raw bounds, so an empty head reports the extremes.
    e.single(
        "prometheus_tsdb_head_min_time",
        "gauge",
        "Minimum time bound of the head block. The unit is decided by the library consumer.",
        head.min_time() as f64,
    );
    e.single(
        "prometheus_tsdb_head_max_time",
        "gauge",
        "Maximum timestamp of the head block. The unit is decided by the library consumer.",
        head.max_time() as f64,
    );
    e.single(
        "prometheus_tsdb_data_replay_duration_seconds",
        "gauge",
        "Time taken to replay the data on disk.",
        s.db.replay_stats().duration.as_secs_f64(),
    );

    compaction_metrics(&mut e, s.db.compaction_stats());
    let blocks = s.db.blocks();
    e.single(
        "prometheus_tsdb_blocks_loaded",
        "gauge",
        "Number of currently loaded data blocks",
        blocks.len() as f64,
    );
    e.single(
        "prometheus_tsdb_storage_blocks_bytes",
        "gauge",
        "The number of bytes that are currently used for local storage by all blocks.",
        blocks.iter().map(|b| b.size_bytes()).sum::<u64>() as f64,
    );

    let start = s
        .start_time
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    e.single(
        "process_start_time_seconds",
        "gauge",
        "Start time of the process since unix epoch in seconds.",
        start,
    );
    if let Some(p) = proc_stats() {
        e.single(
            "process_cpu_seconds_total",
            "counter",
            "Total user and system CPU time spent in seconds.",
            p.cpu_seconds,
        );
        e.single(
            "process_resident_memory_bytes",
            "gauge",
            "Resident memory size in bytes.",
            p.resident_bytes as f64,
        );
        e.single(
            "process_virtual_memory_bytes",
            "gauge",
            "Virtual memory size in bytes.",
            p.virtual_bytes as f64,
        );
        e.single(
            "process_open_fds",
            "gauge",
            "Number of open file descriptors.",
            p.open_fds as f64,
        );
    }
    e.out
}

/// What `/proc/self` says about the process (Linux only).
struct ProcStats {
    cpu_seconds: f64,
    resident_bytes: u64,
    virtual_bytes: u64,
    open_fds: usize,
}

fn proc_stats() -> Option<ProcStats> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kb = |key: &str| -> Option<u64> {
        let line = status.lines().find(|l| l.starts_with(key))?;
        let n: u64 = line[key.len()..]
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .ok()?;
        Some(n * 1024)
    };
    // utime and stime are fields 14 and 15, after the command name, which
    // may itself hold spaces and parentheses (hence the last ')').
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(ProcStats {
        // USER_HZ, which /proc reports in, is 100 on every Linux ABI.
        cpu_seconds: ticks as f64 / 100.0,
        resident_bytes: kb("VmRSS:")?,
        virtual_bytes: kb("VmSize:")?,
        open_fds: std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count()),
    })
}

/// `GET /metrics`.
pub async fn metrics(State(s): State<Arc<AppState>>) -> Response {
    let pools = s.scrape.snapshot().await;
    let rules = s.rules.metric_families().await;
    // Reads /proc: off the async threads.
    match tokio::task::spawn_blocking(move || render(&s, &pools, &rules)).await {
        Ok(text) => ([(header::CONTENT_TYPE, TEXT_CONTENT_TYPE)], text).into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, format!("{e}\n")).into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_format() {
        let mut e = Exposition { out: String::new() };
        e.family("x_total", "counter", "Things.")
            .sample("x_total", &[("a", "q\"\\\n")], 1.0)
            .sample("x_total", &[], 0.5);
        assert_eq!(
            e.out,
            "# HELP x_total Things.\n# TYPE x_total counter\nx_total{a=\"q\\\"\\\\\\n\"} 1\nx_total 0.5\n"
        );
        // An empty head's bounds: long, but they read back exactly.
        let max = format_f(i64::MAX as f64);
        assert_eq!(max.parse::<f64>().ok(), Some(i64::MAX as f64));
        assert_eq!(format_f(f64::NAN), "NaN");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn reads_proc() {
        let p = proc_stats().unwrap();
        assert!(p.resident_bytes > 0 && p.virtual_bytes >= p.resident_bytes);
        assert!(p.open_fds > 0);
    }
}
