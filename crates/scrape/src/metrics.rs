//! Scraping's own metrics, shown on the server's `/metrics` under
//! Prometheus' names (`prometheus_target_*`), so that dashboards and
//! alerts written for Prometheus' scrape health work on Ferrite: counters,
//! and the timings Prometheus keeps as a summary (with a histogram beside
//! some): the interval between a target's scrapes, how long a pool's sync
//! and reload took. The per-pool counters (syncs, failed targets) live in
//! the pool and go with it (see `crate::manager::PoolSnapshot`).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use ferrite_model::selfmetrics::histogram::Histogram;
use ferrite_model::selfmetrics::summary::FIVE_QUANTILES;
use ferrite_model::selfmetrics::{Desc, Family, TimingDef, TimingVec};

/// `prometheus_target_interval_length_seconds`, by the loop's interval.
const INTERVAL_LENGTH: TimingDef = TimingDef {
    summary: Some(Desc {
        name: "prometheus_target_interval_length_seconds",
        help: "Actual intervals between scrapes.",
    }),
    histogram: Some(Desc {
        name: "prometheus_target_interval_length_histogram_seconds",
        help: "Actual intervals between scrapes.",
    }),
    labels: &["interval"],
    objectives: FIVE_QUANTILES,
};

/// `prometheus_target_sync_length_seconds`, by job.
const SYNC_LENGTH: TimingDef = TimingDef {
    summary: Some(Desc {
        name: "prometheus_target_sync_length_seconds",
        help: "Actual interval to sync the scrape pool.",
    }),
    histogram: Some(Desc {
        name: "prometheus_target_sync_length_histogram_seconds",
        help: "Actual interval to sync the scrape pool.",
    }),
    labels: &["scrape_job"],
    objectives: FIVE_QUANTILES,
};

/// `prometheus_target_reload_length_seconds`, by the job's interval.
const RELOAD_LENGTH: TimingDef = TimingDef {
    summary: Some(Desc {
        name: "prometheus_target_reload_length_seconds",
        help: "Actual interval to reload the scrape pool with a given configuration.",
    }),
    histogram: None,
    labels: &["interval"],
    objectives: FIVE_QUANTILES,
};

/// The counters and timings every pool and loop adds to.
#[derive(Debug, Default)]
pub struct ScrapeMetrics {
    /// `prometheus_target_scrape_pools_total`
    pub pools_created: AtomicU64,
    /// `prometheus_target_scrape_pools_failed_total`
    pub pools_failed: AtomicU64,
    /// `prometheus_target_scrape_pool_reloads_total`
    pub pool_reloads: AtomicU64,
    /// `prometheus_target_scrape_pool_exceeded_target_limit_total`
    pub exceeded_target_limit: AtomicU64,
    /// `prometheus_target_scrapes_exceeded_body_size_limit_total`
    pub exceeded_body_size_limit: AtomicU64,
    /// `prometheus_target_scrapes_exceeded_sample_limit_total`
    pub exceeded_sample_limit: AtomicU64,
    /// `prometheus_target_scrapes_sample_duplicate_timestamp_total`
    pub sample_duplicate: AtomicU64,
    /// `prometheus_target_scrapes_sample_out_of_order_total`
    pub sample_out_of_order: AtomicU64,
    /// `prometheus_target_scrapes_sample_out_of_bounds_total`
    pub sample_out_of_bounds: AtomicU64,
    /// `prometheus_target_scrape_pool_exceeded_label_limits_total`
    pub exceeded_label_limits: AtomicU64,
    /// `prometheus_target_scrapes_exceeded_native_histogram_bucket_limit_total`
    pub exceeded_bucket_limit: AtomicU64,
    /// `prometheus_target_scrape_pool_reloads_failed_total` (the job's new
    /// HTTP client could not be made; the old one is kept).
    pub pool_reloads_failed: AtomicU64,
    /// `prometheus_target_scrapes_cache_flush_forced_total`
    pub cache_flush_forced: AtomicU64,
    /// The timings.
    pub timings: ScrapeTimings,
}

/// Scraping's summaries and histograms.
#[derive(Debug)]
pub struct ScrapeTimings {
    /// The time from one scrape's start to the next one's, by interval.
    pub interval_length: TimingVec,
    /// How long a pool's sync took, by job.
    pub sync_length: TimingVec,
    /// How long a pool's reload took, by the job's interval.
    pub reload_length: TimingVec,
    /// `prometheus_target_scrape_duration_seconds`: a scrape from its start
    /// to its commit, for jobs with `extra_scrape_metrics` (a native
    /// histogram in Prometheus; the text format shows its count and sum).
    pub scrape_duration: Histogram,
}

impl Default for ScrapeTimings {
    fn default() -> Self {
        ScrapeTimings {
            interval_length: TimingVec::new(INTERVAL_LENGTH),
            sync_length: TimingVec::new(SYNC_LENGTH),
            reload_length: TimingVec::new(RELOAD_LENGTH),
            scrape_duration: Histogram::new(&[]),
        }
    }
}

/// One counter as `/metrics` shows it.
pub struct Counter {
    /// Its name.
    pub name: &'static str,
    /// Its help text (Prometheus').
    pub help: &'static str,
    /// Its value.
    pub value: u64,
}

impl ScrapeMetrics {
    /// Adds one to a counter.
    pub fn inc(counter: &AtomicU64) {
        counter.fetch_add(1, Relaxed);
    }

    /// Every counter with its name and help, in name order.
    pub fn counters(&self) -> Vec<Counter> {
        let c = |name, help, v: &AtomicU64| Counter {
            name,
            help,
            value: v.load(Relaxed),
        };
        vec![
            c("prometheus_target_scrape_pool_exceeded_label_limits_total", "Total number of times scrape pools hit the label limits, during sync or config reload.", &self.exceeded_label_limits),
            c("prometheus_target_scrape_pool_exceeded_target_limit_total", "Total number of times scrape pools hit the target limit, during sync or config reload.", &self.exceeded_target_limit),
            c("prometheus_target_scrape_pool_reloads_failed_total", "Total number of failed scrape pool reloads.", &self.pool_reloads_failed),
            c("prometheus_target_scrape_pool_reloads_total", "Total number of scrape pool reloads.", &self.pool_reloads),
            c("prometheus_target_scrape_pools_failed_total", "Total number of scrape pool creations that failed.", &self.pools_failed),
            c("prometheus_target_scrape_pools_total", "Total number of scrape pool creation attempts.", &self.pools_created),
            c("prometheus_target_scrapes_cache_flush_forced_total", "How many times a scrape cache was flushed due to getting big while scrapes are failing.", &self.cache_flush_forced),
            c("prometheus_target_scrapes_exceeded_body_size_limit_total", "Total number of scrapes that hit the body size limit", &self.exceeded_body_size_limit),
            c("prometheus_target_scrapes_exceeded_native_histogram_bucket_limit_total", "Total number of scrapes that hit the native histogram bucket limit and were rejected.", &self.exceeded_bucket_limit),
            c("prometheus_target_scrapes_exceeded_sample_limit_total", "Total number of scrapes that hit the sample limit and were rejected.", &self.exceeded_sample_limit),
            c("prometheus_target_scrapes_sample_duplicate_timestamp_total", "Total number of samples rejected due to duplicate timestamps but different values.", &self.sample_duplicate),
            c("prometheus_target_scrapes_sample_out_of_bounds_total", "Total number of samples rejected due to timestamp falling outside of the time bounds.", &self.sample_out_of_bounds),
            c("prometheus_target_scrapes_sample_out_of_order_total", "Total number of samples rejected due to not being out of the expected order.", &self.sample_out_of_order),
        ]
    }

    /// The timing families (summaries and histograms), in name order.
    pub fn timing_families(&self) -> Vec<Family> {
        let t = &self.timings;
        let mut out = t.interval_length.families();
        out.extend(t.reload_length.families());
        let mut samples = Vec::new();
        t.scrape_duration.samples(
            "prometheus_target_scrape_duration_seconds",
            &[],
            &mut samples,
        );
        out.push(Family {
            name: "prometheus_target_scrape_duration_seconds",
            kind: "histogram",
            help: "Total duration of the scrape from start to commit completion in seconds.",
            samples,
        });
        out.extend(t.sync_length.families());
        out.sort_by_key(|f| f.name);
        out
    }
}
