//! Service discovery's metrics, with Prometheus v3.16's names, help texts
//! and labels (`prometheus_sd_*`), for the server's `/metrics`:
//!
//! - per discovery manager (`name`: `scrape`): the targets each config
//!   (job) discovered, when it last changed, the updates received from
//!   the providers and sent to the pools, the configs that failed (none:
//!   Ferrite refuses them at load);
//! - per mechanism: DNS lookups and their failures, HTTP refresh failures,
//!   refresh failures by config and mechanism, file read errors and the
//!   mtime of each file read;
//! - how long refreshes took, by config and mechanism (a summary and a
//!   histogram), and how long file scans took (a summary).
//!
//! Like Prometheus' default registry, one [`DiscoveryMetrics`] serves the
//! whole process ([`DiscoveryMetrics::global`]).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::SystemTime;

use ferrite_model::selfmetrics::summary::THREE_QUANTILES;
use ferrite_model::selfmetrics::{Desc, Family, Sample, TimingDef, TimingVec};

/// `prometheus_sd_refresh_duration_seconds`, by config and mechanism.
const REFRESH_DURATION: TimingDef = TimingDef {
    summary: Some(Desc {
        name: "prometheus_sd_refresh_duration_seconds",
        help: "The duration of a refresh in seconds for the given SD mechanism.",
    }),
    histogram: None,
    labels: &["config", "mechanism"],
    objectives: THREE_QUANTILES,
};

/// `prometheus_sd_refresh_duration_histogram_seconds`, by mechanism only
/// (as in Prometheus).
const REFRESH_DURATION_HISTOGRAM: TimingDef = TimingDef {
    summary: None,
    histogram: Some(Desc {
        name: "prometheus_sd_refresh_duration_histogram_seconds",
        help: "The duration of a refresh for the given SD mechanism.",
    }),
    labels: &["mechanism"],
    objectives: &[],
};

/// `prometheus_sd_file_scan_duration_seconds`.
const FILE_SCAN_DURATION: TimingDef = TimingDef {
    summary: Some(Desc {
        name: "prometheus_sd_file_scan_duration_seconds",
        help: "The duration of the File-SD scan in seconds.",
    }),
    histogram: None,
    labels: &[],
    objectives: THREE_QUANTILES,
};

/// A discovery manager's counts.
#[derive(Debug, Default)]
struct Manager {
    received: u64,
    updates: u64,
    /// Per config: targets discovered, last update (Unix seconds).
    configs: BTreeMap<String, (usize, f64)>,
}

#[derive(Debug, Default)]
struct Inner {
    managers: BTreeMap<&'static str, Manager>,
    refresh_failures: BTreeMap<(String, &'static str), u64>,
    file_mtimes: BTreeMap<String, f64>,
}

/// Discovery's metrics; see the module documentation.
#[derive(Debug, Default)]
pub struct DiscoveryMetrics {
    dns_lookups: AtomicU64,
    dns_lookup_failures: AtomicU64,
    http_failures: AtomicU64,
    file_read_errors: AtomicU64,
    timings: Timings,
    inner: Mutex<Inner>,
}

/// The refresh and scan durations.
#[derive(Debug)]
struct Timings {
    refresh_duration: TimingVec,
    refresh_duration_histogram: TimingVec,
    file_scan_duration: TimingVec,
}

impl Default for Timings {
    fn default() -> Self {
        Timings {
            refresh_duration: TimingVec::new(REFRESH_DURATION),
            refresh_duration_histogram: TimingVec::new(REFRESH_DURATION_HISTOGRAM),
            file_scan_duration: TimingVec::new(FILE_SCAN_DURATION),
        }
    }
}

fn now_seconds() -> f64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

impl DiscoveryMetrics {
    /// The process' metrics.
    pub fn global() -> &'static DiscoveryMetrics {
        static GLOBAL: OnceLock<DiscoveryMetrics> = OnceLock::new();
        GLOBAL.get_or_init(DiscoveryMetrics::default)
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The configs manager `name` runs now: others are forgotten, new
    /// ones start at zero targets. The refresh failure and duration series
    /// of a config no manager runs any more go too, as in Prometheus (the
    /// duration histogram, by mechanism only, stays).
    pub fn set_configs(&self, name: &'static str, configs: &[&str]) {
        let now = now_seconds();
        let mut inner = self.lock();
        let m = inner.managers.entry(name).or_default();
        m.configs.retain(|c, _| configs.contains(&c.as_str()));
        for c in configs {
            m.configs.entry((*c).to_string()).or_insert((0, now));
        }
        let Inner {
            managers,
            refresh_failures,
            ..
        } = &mut *inner;
        let running = |config: &str| managers.values().any(|m| m.configs.contains_key(config));
        refresh_failures.retain(|(config, mechanism), _| {
            let keep = running(config);
            if !keep {
                self.timings.refresh_duration.remove(&[config, mechanism]);
            }
            keep
        });
    }

    /// Config `config` of manager `name` has `targets` targets now, after
    /// an update from its providers (`received`) or at (re)load.
    pub fn updated(&self, name: &'static str, config: &str, targets: usize, received: bool) {
        let now = now_seconds();
        let mut inner = self.lock();
        let m = inner.managers.entry(name).or_default();
        if received {
            m.received += 1;
        }
        m.updates += 1;
        m.configs.insert(config.to_string(), (targets, now));
    }

    /// One DNS lookup, failed or not.
    pub fn dns_lookup(&self, failed: bool) {
        self.dns_lookups.fetch_add(1, Relaxed);
        if failed {
            self.dns_lookup_failures.fetch_add(1, Relaxed);
        }
    }

    /// One HTTP discovery refresh failed.
    pub fn http_failure(&self) {
        self.http_failures.fetch_add(1, Relaxed);
    }

    /// A refresh of `config` by `mechanism` (`dns`, `http`) ran for
    /// `seconds`; its failure counter appears at zero with the first.
    pub fn refreshed(&self, config: &str, mechanism: &'static str, failed: bool, seconds: f64) {
        self.timings
            .refresh_duration
            .observe(&[config, mechanism], seconds);
        self.timings
            .refresh_duration_histogram
            .observe(&[mechanism], seconds);
        let mut inner = self.lock();
        let n = inner
            .refresh_failures
            .entry((config.to_string(), mechanism))
            .or_default();
        if failed {
            *n += 1;
        }
    }

    /// The discovery files were scanned, in `seconds`.
    pub fn file_scanned(&self, seconds: f64) {
        self.timings.file_scan_duration.observe(&[], seconds);
    }

    /// A discovery file was read; `mtime` in Unix seconds.
    pub fn file_read(&self, filename: &str, mtime: f64) {
        self.lock().file_mtimes.insert(filename.to_string(), mtime);
    }

    /// A discovery file could not be read or decoded.
    pub fn file_read_error(&self) {
        self.file_read_errors.fetch_add(1, Relaxed);
    }

    /// Every family, in name order, as Prometheus shows them.
    pub fn families(&self) -> Vec<Family> {
        let inner = self.lock();
        let sample = |name: &str, labels: Vec<(&'static str, String)>, value: f64| Sample {
            name: name.to_string(),
            labels,
            value,
        };
        let per_manager = |name: &'static str, get: &dyn Fn(&Manager) -> f64| -> Vec<Sample> {
            inner
                .managers
                .iter()
                .map(|(m, s)| sample(name, vec![("name", m.to_string())], get(s)))
                .collect()
        };
        let per_config = |name: &'static str, get: &dyn Fn(&(usize, f64)) -> f64| -> Vec<Sample> {
            inner
                .managers
                .iter()
                .flat_map(|(m, s)| {
                    s.configs.iter().map(move |(c, v)| {
                        sample(
                            name,
                            vec![("config", c.clone()), ("name", m.to_string())],
                            get(v),
                        )
                    })
                })
                .collect()
        };
        let single =
            |name: &'static str, v: &AtomicU64| vec![sample(name, vec![], v.load(Relaxed) as f64)];
        let family = |name, kind, help, samples| Family {
            name,
            kind,
            help,
            samples,
        };
        let mut families = vec![
            family(
                "prometheus_sd_discovered_targets",
                "gauge",
                "Current number of discovered targets.",
                per_config("prometheus_sd_discovered_targets", &|v| v.0 as f64),
            ),
            family(
                "prometheus_sd_dns_lookup_failures_total",
                "counter",
                "The number of DNS-SD lookup failures.",
                single(
                    "prometheus_sd_dns_lookup_failures_total",
                    &self.dns_lookup_failures,
                ),
            ),
            family(
                "prometheus_sd_dns_lookups_total",
                "counter",
                "The number of DNS-SD lookups.",
                single("prometheus_sd_dns_lookups_total", &self.dns_lookups),
            ),
            family(
                "prometheus_sd_failed_configs",
                "gauge",
                "Current number of service discovery configurations that failed to load.",
                per_manager("prometheus_sd_failed_configs", &|_| 0.0),
            ),
            family(
                "prometheus_sd_file_mtime_seconds",
                "gauge",
                "Timestamp (mtime) of files read by FileSD. Timestamp is set at read time.",
                inner
                    .file_mtimes
                    .iter()
                    .map(|(f, v)| {
                        sample(
                            "prometheus_sd_file_mtime_seconds",
                            vec![("filename", f.clone())],
                            *v,
                        )
                    })
                    .collect(),
            ),
            family(
                "prometheus_sd_file_read_errors_total",
                "counter",
                "The number of File-SD read errors.",
                single(
                    "prometheus_sd_file_read_errors_total",
                    &self.file_read_errors,
                ),
            ),
            family(
                "prometheus_sd_file_watcher_errors_total",
                "counter",
                "The number of File-SD errors caused by filesystem watch failures.",
                vec![sample(
                    "prometheus_sd_file_watcher_errors_total",
                    vec![],
                    0.0,
                )],
            ),
            family(
                "prometheus_sd_http_failures_total",
                "counter",
                "Number of HTTP service discovery refresh failures.",
                single("prometheus_sd_http_failures_total", &self.http_failures),
            ),
            family(
                "prometheus_sd_last_update_timestamp_seconds",
                "gauge",
                "Timestamp of the last update sent to the SD consumers.",
                per_config("prometheus_sd_last_update_timestamp_seconds", &|v| v.1),
            ),
            family(
                "prometheus_sd_received_updates_total",
                "counter",
                "Total number of update events received from the SD providers.",
                per_manager("prometheus_sd_received_updates_total", &|m| {
                    m.received as f64
                }),
            ),
            family(
                "prometheus_sd_refresh_failures_total",
                "counter",
                "Number of refresh failures for the given SD mechanism.",
                inner
                    .refresh_failures
                    .iter()
                    .map(|((c, m), n)| {
                        sample(
                            "prometheus_sd_refresh_failures_total",
                            vec![("config", c.clone()), ("mechanism", m.to_string())],
                            *n as f64,
                        )
                    })
                    .collect(),
            ),
            family(
                "prometheus_sd_updates_delayed_total",
                "counter",
                "Total number of update events that couldn't be sent immediately.",
                per_manager("prometheus_sd_updates_delayed_total", &|_| 0.0),
            ),
            family(
                "prometheus_sd_updates_total",
                "counter",
                "Total number of update events sent to the SD consumers.",
                per_manager("prometheus_sd_updates_total", &|m| m.updates as f64),
            ),
        ]
        .into_iter()
        .chain(self.timings.refresh_duration.families())
        .chain(self.timings.refresh_duration_histogram.families())
        .chain(self.timings.file_scan_duration.families())
        .filter(|f| !f.samples.is_empty())
        .collect::<Vec<Family>>();
        families.sort_by_key(|f| f.name);
        families
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_have_prometheus_names_and_labels() {
        let m = DiscoveryMetrics::default();
        m.set_configs("scrape", &["static", "files"]);
        m.updated("scrape", "files", 3, true);
        m.dns_lookup(true);
        m.refreshed("dns", "dns", false, 0.25);
        m.file_read("t.json", 12.0);
        let f = m.families();
        let get = |name: &str| f.iter().find(|f| f.name == name).expect(name);
        let targets = get("prometheus_sd_discovered_targets");
        assert_eq!(targets.samples.len(), 2);
        assert_eq!(
            targets.samples[0].labels,
            [
                ("config", "files".to_string()),
                ("name", "scrape".to_string())
            ]
        );
        assert_eq!(targets.samples[0].value, 3.0);
        assert_eq!(
            get("prometheus_sd_received_updates_total").samples[0].value,
            1.0
        );
        assert_eq!(
            get("prometheus_sd_dns_lookup_failures_total").samples[0].value,
            1.0
        );
        assert_eq!(
            get("prometheus_sd_refresh_failures_total").samples[0].value,
            0.0
        );
        assert_eq!(
            get("prometheus_sd_file_mtime_seconds").samples[0].value,
            12.0
        );
        // Forgotten configs go away, their refresh series with them.
        assert!(f
            .iter()
            .any(|f| f.name == "prometheus_sd_refresh_duration_seconds"));
        m.set_configs("scrape", &["files"]);
        let after = m.families();
        for gone in [
            "prometheus_sd_refresh_failures_total",
            "prometheus_sd_refresh_duration_seconds",
        ] {
            assert!(after.iter().all(|f| f.name != gone), "{gone}");
        }
        assert!(after
            .iter()
            .any(|f| f.name == "prometheus_sd_refresh_duration_histogram_seconds"));
        assert_eq!(
            m.families()
                .iter()
                .find(|f| f.name == "prometheus_sd_discovered_targets")
                .map(|f| f.samples.len()),
            Some(1)
        );
    }
}
