//! A target's scrape loop, timed as Prometheus times it.
//!
//! - The first scrape waits for the target's phase in the interval grid
//!   ([`crate::offset`]); later ones follow every interval after it (a
//!   scrape that overruns skips the ticks it missed).
//! - Timestamps are aligned: a scrape that starts within
//!   `min(interval / 100, 2 ms)` of its grid point gets the grid point's
//!   time, so timestamps stay evenly spaced (better compression, and the
//!   same timestamps as a Prometheus scraping the same target).
//! - Each scrape fetches, appends (or on failure writes the stale markers
//!   of a failed scrape), writes its report series, then commits, all in
//!   one appender.
//! - A loop stopped because its target went away writes stale markers on
//!   all its series after two more ticks and a tenth of an interval (the
//!   target may be back on another loop by then: Prometheus' timing). A
//!   loop stopped by a shutdown writes none, nor does one replaced by a
//!   reload (its cache goes to the new loop, which carries on).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use ferrite_model::gotime::format_duration;
use tokio::sync::watch;
use tracing::{debug, warn};

use crate::append::{
    append_body, AppendCounts, AppendSettings, BodyAppender, BodyError, SkippedSamples,
};
use crate::cache::ScrapeCache;
use crate::failure_log::JobFailureLog;
use crate::http::{fetch, FetchError};
use crate::metrics::ScrapeMetrics;
use crate::report::{append_report, append_stale_report, ExtraReport, ScrapeReport};
use crate::storage::{ScrapeAppender, ScrapeStorage};

/// Bodies of up to this many bytes (decoded; a quarter of it as
/// received) are appended on the scrape loop's own task: a few
/// milliseconds of work at most.
const INLINE_APPEND_BYTES: usize = 256 << 10;

/// How far from its grid point a scrape may start and still get the grid
/// point's timestamp (Prometheus' `ScrapeTimestampTolerance`).
pub const TIMESTAMP_TOLERANCE: Duration = Duration::from_millis(2);

/// What a target's loop scrapes and how.
#[derive(Debug, Clone)]
pub struct LoopSettings {
    /// The scrape URL.
    pub url: String,
    /// `scrape_interval` (the target's).
    pub interval: Duration,
    /// `scrape_timeout` (the target's).
    pub timeout: Duration,
    /// The `Accept` header.
    pub accept: String,
    /// `enable_compression`
    pub compression: bool,
    /// `body_size_limit` (0: none).
    pub body_size_limit: u64,
    /// `extra_scrape_metrics`
    pub extra_metrics: bool,
    /// How samples are appended.
    pub append: AppendSettings,
}

/// A target's health, as `/api/v1/targets` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Health {
    /// Not scraped yet.
    #[default]
    Unknown,
    /// The last scrape succeeded.
    Up,
    /// The last scrape failed.
    Down,
}

impl Health {
    /// Prometheus' word for it.
    pub fn as_str(self) -> &'static str {
        match self {
            Health::Unknown => "unknown",
            Health::Up => "up",
            Health::Down => "down",
        }
    }
}

/// The outcome of a target's last scrape.
#[derive(Debug, Clone, Default)]
pub struct TargetStatus {
    /// Up, down, or not scraped yet.
    pub health: Health,
    /// The last scrape's error ("" if none).
    pub last_error: String,
    /// The last scrape's timestamp.
    pub last_scrape: Option<SystemTime>,
    /// How long the last scrape took.
    pub last_duration: Duration,
}

/// Why a loop ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// Still running.
    Running,
    /// The target went away: stale markers follow.
    TargetGone,
    /// A reload replaces the loop: no stale markers, the cache goes on.
    Replaced,
    /// The server shuts down: no stale markers.
    Shutdown,
}

/// One target's loop; see the module documentation.
pub struct ScrapeLoop {
    /// What and how it scrapes.
    pub settings: Arc<LoopSettings>,
    /// Where samples go.
    pub storage: Arc<dyn ScrapeStorage>,
    /// The job's HTTP client.
    pub client: crate::client::JobClient,
    /// The target's cache (carried over from the loop it replaces).
    pub cache: ScrapeCache,
    /// Where its failed scrapes are logged (the job's
    /// `scrape_failure_log_file`).
    pub failure_log: JobFailureLog,
    /// The outcome of the last scrape, shared with the APIs.
    pub status: Arc<Mutex<TargetStatus>>,
    /// An error to fail every scrape with instead of fetching (set by the
    /// pool while `target_limit` is exceeded).
    pub forced_error: Arc<Mutex<Option<String>>>,
    /// When the first scrape is (the target's phase).
    pub first_scrape: SystemTime,
    /// The counters it adds to.
    pub metrics: Arc<ScrapeMetrics>,
}

impl ScrapeLoop {
    /// Runs until `stop` says why it ends; returns the cache.
    pub async fn run(mut self, mut stop: watch::Receiver<StopReason>) -> ScrapeCache {
        let interval = self.settings.interval;
        let wait = self
            .first_scrape
            .duration_since(SystemTime::now())
            .unwrap_or_default();
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = stop.wait_for(|r| *r != StopReason::Running) => return self.cache,
        }
        let mut ticker = tokio::time::interval(interval);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        ticker.tick().await; // The first tick is now.
        let mut aligned = self.first_scrape;
        let mut scraped_once = false;
        let interval_length = self
            .metrics
            .timings
            .interval_length
            .with(&[&format_duration(interval)]);
        let mut last_start: Option<Instant> = None;
        loop {
            if *stop.borrow() != StopReason::Running {
                break;
            }
            let started = Instant::now();
            if let Some(last) = last_start.replace(started) {
                interval_length.observe(started.duration_since(last).as_secs_f64());
            }
            let now = SystemTime::now();
            let ts = aligned_time(now, &mut aligned, interval);
            self = self.scrape_and_report(ts).await;
            scraped_once = true;
            tokio::select! {
                _ = ticker.tick() => {}
                _ = stop.wait_for(|r| *r != StopReason::Running) => break,
            }
        }
        let reason = *stop.borrow();
        if reason == StopReason::TargetGone && scraped_once {
            self.end_of_run_staleness(&mut ticker, &mut stop).await
        } else {
            self.cache
        }
    }

    /// One scrape: fetch, append (on a blocking thread if the body is
    /// large), report, commit.
    async fn scrape_and_report(mut self, ts: SystemTime) -> Self {
        let start = Instant::now();
        let s = self.settings.clone();
        let forced = self
            .forced_error
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let fetched = match forced {
            Some(e) => Err(FetchError::Forced(e)),
            None => {
                fetch(
                    &self.client,
                    &s.url,
                    &s.accept,
                    s.compression,
                    s.timeout,
                    s.body_size_limit,
                )
                .await
            }
        };
        let ts_ms = millis(ts);
        let storage = self.storage.clone();
        let metrics = self.metrics.clone();
        let mut cache = std::mem::take(&mut self.cache);
        // A small body is appended right here: handing it to a blocking
        // thread (a wake-up there and back) would cost more than the
        // append. A large one would hold up the runtime's other tasks.
        let inline = match &fetched {
            Ok(f) => {
                f.decoded_len_hint() <= INLINE_APPEND_BYTES
                    && f.raw_len() <= INLINE_APPEND_BYTES / 4
            }
            Err(_) => cache.len() <= INLINE_APPEND_BYTES / 100,
        };
        let append = move || {
            let outcome = append_scrape(&storage, &mut cache, &s, fetched, ts_ms, start, &metrics);
            (cache, outcome)
        };
        let appended = if inline {
            Ok(append())
        } else {
            tokio::task::spawn_blocking(append).await
        };
        match appended {
            Ok((cache, outcome)) => {
                self.cache = cache;
                if let (true, Some(e)) = (outcome.fetch_failed, &outcome.error) {
                    self.failure_log.log(&self.settings.url, e);
                }
                let mut status = self.status.lock().unwrap_or_else(|p| p.into_inner());
                status.health = if outcome.error.is_none() {
                    Health::Up
                } else {
                    Health::Down
                };
                status.last_error = outcome.error.unwrap_or_default();
                status.last_scrape = Some(ts);
                status.last_duration = start.elapsed();
            }
            Err(e) => warn!(url = %self.settings.url, error = %e, "scrape task failed"),
        }
        self
    }

    /// Stale markers for every series of a target that went away, two
    /// ticks and a tenth of an interval later, unless the server shuts
    /// down first.
    async fn end_of_run_staleness(
        mut self,
        ticker: &mut tokio::time::Interval,
        stop: &mut watch::Receiver<StopReason>,
    ) -> ScrapeCache {
        let shutdown = |stop: &watch::Receiver<StopReason>| *stop.borrow() == StopReason::Shutdown;
        let mut stale_time = None;
        for _ in 0..2 {
            tokio::select! {
                _ = ticker.tick() => {}
                _ = stop.wait_for(|r| *r == StopReason::Shutdown) => return self.cache,
            }
            stale_time.get_or_insert_with(SystemTime::now);
        }
        tokio::select! {
            _ = tokio::time::sleep(self.settings.interval / 10) => {}
            _ = stop.wait_for(|r| *r == StopReason::Shutdown) => return self.cache,
        }
        if shutdown(stop) {
            return self.cache;
        }
        let ts = millis(stale_time.unwrap_or_else(SystemTime::now));
        let storage = self.storage.clone();
        let settings = self.settings.clone();
        let mut cache = std::mem::take(&mut self.cache);
        let done = tokio::task::spawn_blocking(move || {
            let mut app = storage.appender();
            let mut b = BodyAppender::new(&mut cache, &settings.append);
            let stale = append_body(&mut b, &mut *app, b"", "", ts, ts);
            let report = append_stale_report(
                &mut cache,
                &settings.append.target_labels,
                &mut *app,
                ts,
                settings.extra_metrics,
            );
            match (stale, report) {
                (Ok(_), Ok(())) => {
                    if let Err(e) = app.commit() {
                        warn!(error = %e, "stale marker commit failed");
                    }
                }
                _ => app.rollback(),
            }
            cache
        })
        .await;
        done.unwrap_or_default()
    }
}

/// The outcome of one scrape.
struct ScrapeOutcome {
    /// The scrape's error, if it failed.
    error: Option<String>,
    /// Whether that error is the fetch's (the target's answer, or none),
    /// the errors the failure log gets: not an append's, nor the job's
    /// `target_limit`.
    fetch_failed: bool,
}

thread_local! {
    /// The buffer gzip bodies are decoded into on this thread.
    static BODY_SCRATCH: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// A thread keeps its decoding buffer up to this size.
const KEEP_SCRATCH_BYTES: usize = 16 << 20;

/// Appends a fetched body (or the stale markers of a failed scrape) and
/// the report, then commits.
fn append_scrape(
    storage: &Arc<dyn ScrapeStorage>,
    cache: &mut ScrapeCache,
    s: &LoopSettings,
    fetched: Result<crate::http::Fetched, FetchError>,
    ts: i64,
    start: Instant,
    metrics: &ScrapeMetrics,
) -> ScrapeOutcome {
    let now = millis(SystemTime::now());
    let mut app = storage.appender();
    let mut body_bytes = 0i64;
    let mut scratch = BODY_SCRATCH.take();
    let fetched = fetched.and_then(|f| f.decode(&mut scratch).map(|()| f));
    let fetch_failed = matches!(&fetched, Err(e) if !matches!(e, FetchError::Forced(_)));
    let (counts, error) = match &fetched {
        Ok(f) => {
            let body = f.body(&scratch);
            body_bytes = body.len() as i64;
            // The last scrape's series and report samples, about.
            app.reserve(cache.len());
            let mut b = BodyAppender::new(cache, &s.append);
            let appended = append_body(&mut b, &mut *app, body, &f.content_type, ts, now);
            count_skipped(metrics, &b.skipped);
            if b.bucket_limit_exceeded {
                ScrapeMetrics::inc(&metrics.exceeded_bucket_limit);
            }
            match appended {
                Ok(c) => (c, None),
                Err(e) => {
                    match e {
                        BodyError::SampleLimit => {
                            ScrapeMetrics::inc(&metrics.exceeded_sample_limit)
                        }
                        BodyError::LabelLimit(_) => {
                            ScrapeMetrics::inc(&metrics.exceeded_label_limits)
                        }
                        _ => {}
                    }
                    debug!(url = %s.url, error = %e, "append failed");
                    // The report gives what was counted up to the failure.
                    let counts = b.counts;
                    app.rollback();
                    app = storage.appender();
                    let mut b = BodyAppender::new(cache, &s.append);
                    failed_scrape_staleness(&mut b, &mut *app, ts, metrics);
                    (counts, Some(e.to_string()))
                }
            }
        }
        Err(e) => {
            if matches!(e, FetchError::BodySizeLimit) {
                body_bytes = -1;
                ScrapeMetrics::inc(&metrics.exceeded_body_size_limit);
            }
            debug!(url = %s.url, error = %e, "scrape failed");
            let mut b = BodyAppender::new(cache, &s.append);
            failed_scrape_staleness(&mut b, &mut *app, ts, metrics);
            (AppendCounts::default(), Some(e.to_string()))
        }
    };
    if scratch.capacity() <= KEEP_SCRATCH_BYTES {
        BODY_SCRATCH.set(scratch);
    }
    let report = ScrapeReport {
        healthy: error.is_none(),
        duration_seconds: start.elapsed().as_secs_f64(),
        scraped: counts.total,
        added: counts.added,
        series_added: counts.series_added,
        extra: s.extra_metrics.then_some(ExtraReport {
            timeout_seconds: s.timeout.as_secs_f64(),
            sample_limit: s.append.sample_limit,
            body_size_bytes: body_bytes,
        }),
    };
    if let Err(e) = append_report(cache, &s.append.target_labels, &mut *app, ts, &report) {
        warn!(url = %s.url, error = %e, "appending scrape report failed");
        app.rollback();
        return ScrapeOutcome {
            error,
            fetch_failed,
        };
    }
    if let Err(e) = app.commit() {
        warn!(url = %s.url, error = %e, "scrape commit failed");
    }
    if s.extra_metrics {
        metrics
            .timings
            .scrape_duration
            .observe(start.elapsed().as_secs_f64());
    }
    ScrapeOutcome {
        error,
        fetch_failed,
    }
}

/// Adds a scrape's skipped samples to the counters.
fn count_skipped(metrics: &ScrapeMetrics, skipped: &SkippedSamples) {
    use std::sync::atomic::Ordering::Relaxed;
    metrics
        .sample_out_of_order
        .fetch_add(skipped.out_of_order, Relaxed);
    metrics
        .sample_duplicate
        .fetch_add(skipped.duplicate, Relaxed);
    metrics
        .sample_out_of_bounds
        .fetch_add(skipped.out_of_bounds, Relaxed);
}

/// The stale markers a failed scrape writes (every series of the last
/// one).
fn failed_scrape_staleness(
    b: &mut BodyAppender<'_>,
    app: &mut dyn ScrapeAppender,
    ts: i64,
    metrics: &ScrapeMetrics,
) {
    if let Err(e) = append_body(b, app, b"", "", ts, ts) {
        warn!(error = %e, "appending stale markers failed");
    }
    if b.cache_flush_forced {
        ScrapeMetrics::inc(&metrics.cache_flush_forced);
    }
}

/// The scrape's timestamp: the grid point when `now` is within the
/// tolerance of it (advancing `aligned` to the latest grid point).
fn aligned_time(now: SystemTime, aligned: &mut SystemTime, interval: Duration) -> SystemTime {
    let tolerance = (interval / 100).min(TIMESTAMP_TOLERANCE);
    while now
        .duration_since(*aligned)
        .is_ok_and(|since| since >= interval)
    {
        *aligned += interval;
    }
    match now.duration_since(*aligned) {
        Ok(since) if since > tolerance => now,
        // Within the tolerance, or (a tick early) before the grid point.
        _ => *aligned,
    }
}

/// Milliseconds since the epoch (Prometheus' `timestamp.FromTime`).
pub fn millis(t: SystemTime) -> i64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_millis()).unwrap_or(i64::MAX),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_snap_to_the_grid_within_the_tolerance() {
        let interval = Duration::from_secs(15);
        let base = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let mut aligned = base;
        let at = |ms: u64| base + Duration::from_millis(ms);
        assert_eq!(aligned_time(at(1), &mut aligned, interval), base);
        assert_eq!(aligned_time(at(15_002), &mut aligned, interval), at(15_000));
        assert_eq!(aligned_time(at(30_003), &mut aligned, interval), at(30_003));
        assert_eq!(aligned, at(30_000));
        // Two intervals late: the grid moves on.
        assert_eq!(aligned_time(at(60_001), &mut aligned, interval), at(60_000));
    }
}
