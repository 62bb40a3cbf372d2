//! Scraping's own counters, shown on the server's `/metrics` under
//! Prometheus' names (`prometheus_target_*`), so that dashboards and
//! alerts written for Prometheus' scrape health work on Ferrite.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// The counters every pool and loop adds to.
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
            c("prometheus_target_scrape_pool_reloads_total", "Total number of scrape pool reloads.", &self.pool_reloads),
            c("prometheus_target_scrape_pools_failed_total", "Total number of scrape pool creations that failed.", &self.pools_failed),
            c("prometheus_target_scrape_pools_total", "Total number of scrape pool creation attempts.", &self.pools_created),
            c("prometheus_target_scrapes_exceeded_body_size_limit_total", "Total number of scrapes that hit the body size limit", &self.exceeded_body_size_limit),
            c("prometheus_target_scrapes_exceeded_native_histogram_bucket_limit_total", "Total number of scrapes that hit the native histogram bucket limit and were rejected.", &self.exceeded_bucket_limit),
            c("prometheus_target_scrapes_exceeded_sample_limit_total", "Total number of scrapes that hit the sample limit and were rejected.", &self.exceeded_sample_limit),
            c("prometheus_target_scrapes_sample_duplicate_timestamp_total", "Total number of samples rejected due to duplicate timestamps but different values.", &self.sample_duplicate),
            c("prometheus_target_scrapes_sample_out_of_bounds_total", "Total number of samples rejected due to timestamp falling outside of the time bounds.", &self.sample_out_of_bounds),
            c("prometheus_target_scrapes_sample_out_of_order_total", "Total number of samples rejected due to not being out of the expected order.", &self.sample_out_of_order),
        ]
    }
}
