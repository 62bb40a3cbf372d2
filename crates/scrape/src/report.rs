//! The series every scrape writes about itself: `up`,
//! `scrape_duration_seconds`, `scrape_samples_scraped`,
//! `scrape_samples_post_metric_relabeling`, `scrape_series_added`, and with
//! `extra_scrape_metrics` also `scrape_timeout_seconds`,
//! `scrape_sample_limit` and `scrape_body_size_bytes`. They carry the
//! target's labels (a target label wins over one of the same name, which
//! would become `exported_<name>`); a target that goes away gets stale
//! markers on them too.

use ferrite_model::{Labels, METRIC_NAME, STALE_NAN};

use crate::cache::{Lookup, ScrapeCache};
use crate::storage::{AppendFailure, ScrapeAppender};

/// What one scrape reports.
#[derive(Debug, Clone, Copy, Default)]
pub struct ScrapeReport {
    /// Whether the scrape succeeded (`up`).
    pub healthy: bool,
    /// How long it took, in seconds.
    pub duration_seconds: f64,
    /// `scrape_samples_scraped`
    pub scraped: usize,
    /// `scrape_samples_post_metric_relabeling`
    pub added: usize,
    /// `scrape_series_added`
    pub series_added: usize,
    /// With `extra_scrape_metrics`: the timeout (seconds), the sample
    /// limit, and the body's size (-1 over `body_size_limit`, 0 on other
    /// failures).
    pub extra: Option<ExtraReport>,
}

/// The `extra_scrape_metrics` values.
#[derive(Debug, Clone, Copy, Default)]
pub struct ExtraReport {
    /// `scrape_timeout_seconds`
    pub timeout_seconds: f64,
    /// `scrape_sample_limit`
    pub sample_limit: u64,
    /// `scrape_body_size_bytes`
    pub body_size_bytes: i64,
}

/// The report series' names, in the order they are written.
const NAMES: [&str; 8] = [
    "up",
    "scrape_duration_seconds",
    "scrape_samples_scraped",
    "scrape_samples_post_metric_relabeling",
    "scrape_series_added",
    "scrape_timeout_seconds",
    "scrape_sample_limit",
    "scrape_body_size_bytes",
];

impl ScrapeReport {
    /// The values in [`NAMES`] order (the extra ones only if reported).
    fn values(&self) -> Vec<f64> {
        let mut v = vec![
            if self.healthy { 1.0 } else { 0.0 },
            self.duration_seconds,
            self.scraped as f64,
            self.added as f64,
            self.series_added as f64,
        ];
        if let Some(e) = self.extra {
            v.extend([
                e.timeout_seconds,
                e.sample_limit as f64,
                e.body_size_bytes as f64,
            ]);
        }
        v
    }
}

/// Writes a scrape's report at `ts`.
pub fn append_report(
    cache: &mut ScrapeCache,
    target_labels: &Labels,
    app: &mut dyn ScrapeAppender,
    ts: i64,
    report: &ScrapeReport,
) -> Result<(), AppendFailure> {
    for (name, v) in NAMES.iter().zip(report.values()) {
        append_one(cache, target_labels, app, name, ts, v)?;
    }
    Ok(())
}

/// Writes stale markers on a target's report series (it went away).
pub fn append_stale_report(
    cache: &mut ScrapeCache,
    target_labels: &Labels,
    app: &mut dyn ScrapeAppender,
    ts: i64,
    extra: bool,
) -> Result<(), AppendFailure> {
    let n = if extra { NAMES.len() } else { 5 };
    for name in &NAMES[..n] {
        append_one(cache, target_labels, app, name, ts, STALE_NAN)?;
    }
    Ok(())
}

/// One report sample, through the cache under the name and `0xff` (a key
/// no series line can have).
fn append_one(
    cache: &mut ScrapeCache,
    target_labels: &Labels,
    app: &mut dyn ScrapeAppender,
    name: &str,
    ts: i64,
    v: f64,
) -> Result<(), AppendFailure> {
    let mut key = [0u8; 64];
    let key = {
        let n = name.len();
        key[..n].copy_from_slice(name.as_bytes());
        key[n] = 0xff;
        &key[..=n]
    };
    let result = match cache.lookup(crate::cache::LineKey::of(key)) {
        Lookup::Series(cached) => app.append(cached.series, ts, v),
        Lookup::Dropped => Ok(()),
        Lookup::Unknown(line) => {
            let labels = report_labels(name, target_labels);
            app.append_new(&labels, ts, v)
                .map(|series| cache.add(line, Some(series), false))
        }
    };
    match result {
        // Expected when a target comes back with a new scrape loop.
        Ok(()) | Err(AppendFailure::OutOfOrder | AppendFailure::Duplicate) => Ok(()),
        Err(e) => Err(e),
    }
}

/// A report series' labels: the target's over `{__name__=name}`
/// (Prometheus' `mutateReportSampleLabels`).
fn report_labels(name: &str, target_labels: &Labels) -> Labels {
    let mut ls = Labels::new([(METRIC_NAME, name)]);
    for l in target_labels.iter() {
        let exposed = ls.get(&l.name).to_string();
        ls.set(&format!("exported_{}", l.name), &exposed);
        ls.set(&l.name, &l.value);
    }
    ls
}
