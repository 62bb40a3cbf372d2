//! What every query of a server goes through, whoever asks it (the query
//! API, a rule group): a `--query.max-concurrency` slot, the engine's
//! metrics (`prometheus_engine_*`) and the query log.
//!
//! An [`Engine`](crate::Engine) given a tracker waits for a slot before it
//! evaluates (the wait counts against the query's timeout, as in
//! Prometheus), counts itself in `prometheus_engine_queries` while it waits
//! and runs, and afterwards records its timings and samples and hands the
//! query to the [`QueryLogger`], if one is set. Where the log goes and how
//! it is written (Prometheus' JSON lines) is the server's business: this
//! module only says what a logged query holds.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock};
use std::time::Instant;

use ferrite_model::selfmetrics::summary::THREE_QUANTILES;
use ferrite_model::selfmetrics::{Desc, Family, Sample, Timing, TimingDef, TimingVec};

use crate::stats::QueryStats;
use crate::Error;

/// Where a query came from, as the query log records it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum QueryOrigin {
    /// Not said (tests, tools).
    #[default]
    Unknown,
    /// An HTTP request (`httpRequest` in the log).
    Http {
        /// The client's address, without its port.
        client_ip: String,
        /// `GET` or `POST`.
        method: String,
        /// The request's path, the route prefix included.
        path: String,
    },
    /// A rule group's evaluation (`ruleGroup` in the log).
    RuleGroup {
        /// The rule file, as the configuration names it.
        file: String,
        /// The group's name.
        name: String,
    },
}

/// A query as the query log records it.
#[derive(Debug)]
pub struct LoggedQuery<'a> {
    /// The query's text.
    pub query: &'a str,
    /// Its first and last evaluation time (ms; equal for an instant query).
    pub start_ms: i64,
    /// See `start_ms`.
    pub end_ms: i64,
    /// Its step (ms; 0 for an instant query).
    pub step_ms: i64,
    /// Its error, if it failed.
    pub error: Option<&'a Error>,
    /// What it cost.
    pub stats: &'a QueryStats,
    /// Who asked.
    pub origin: &'a QueryOrigin,
}

/// Where queries are logged (`global.query_log_file`).
pub trait QueryLogger: Send + Sync {
    /// Records one query.
    fn log(&self, query: &LoggedQuery<'_>) -> std::io::Result<()>;
}

/// The parts of a query the duration metrics are kept for, by their
/// `slice` label.
const SLICES: [&str; 4] = ["inner_eval", "prepare_time", "queue_time", "result_sort"];

const DURATION: TimingDef = TimingDef {
    summary: Some(Desc {
        name: "prometheus_engine_query_duration_seconds",
        help: "Query timings",
    }),
    histogram: Some(Desc {
        name: "prometheus_engine_query_duration_histogram_seconds",
        help: "The duration of various parts of PromQL query execution.",
    }),
    labels: &["slice"],
    objectives: THREE_QUANTILES,
};

/// The queries of one server: slots, metrics and the query log.
pub struct QueryTracker {
    /// `--query.max-concurrency`.
    max_concurrent: usize,
    /// Slots taken.
    running: Mutex<usize>,
    /// Signalled when a slot is given back.
    freed: Condvar,
    /// Queries waiting or running.
    queries: AtomicI64,
    samples_total: AtomicU64,
    samples_read_total: AtomicU64,
    log_failures: AtomicU64,
    durations: TimingVec,
    /// The timings of each slice, in [`SLICES`] order.
    slices: [Arc<Timing>; 4],
    logger: RwLock<Option<Arc<dyn QueryLogger>>>,
}

impl std::fmt::Debug for QueryTracker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueryTracker")
            .field("max_concurrent", &self.max_concurrent)
            .field("queries", &self.queries)
            .finish_non_exhaustive()
    }
}

/// A query slot, given back when dropped.
pub struct QuerySlot<'a> {
    tracker: &'a QueryTracker,
}

impl Drop for QuerySlot<'_> {
    fn drop(&mut self) {
        let mut running = self.tracker.lock_running();
        *running = running.saturating_sub(1);
        drop(running);
        self.tracker.freed.notify_one();
    }
}

/// Counts a query in `prometheus_engine_queries` while it lives.
pub(crate) struct Active<'a>(&'a QueryTracker);

impl Drop for Active<'_> {
    fn drop(&mut self) {
        self.0.queries.fetch_sub(1, Ordering::Relaxed);
    }
}

impl QueryTracker {
    /// A tracker letting `max_concurrent` queries run at once (at least
    /// one), with no query log.
    pub fn new(max_concurrent: usize) -> Self {
        let durations = TimingVec::new(DURATION);
        // Prometheus makes the four slices when it starts.
        let slices = SLICES.map(|s| durations.with(&[s]));
        QueryTracker {
            max_concurrent: max_concurrent.max(1),
            running: Mutex::new(0),
            freed: Condvar::new(),
            queries: AtomicI64::new(0),
            samples_total: AtomicU64::new(0),
            samples_read_total: AtomicU64::new(0),
            log_failures: AtomicU64::new(0),
            durations,
            slices,
            logger: RwLock::new(None),
        }
    }

    fn lock_running(&self) -> std::sync::MutexGuard<'_, usize> {
        self.running.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Counts a query as waiting or running until the guard drops.
    pub(crate) fn begin(&self) -> Active<'_> {
        self.queries.fetch_add(1, Ordering::Relaxed);
        Active(self)
    }

    /// Waits for a slot until `deadline`; `None` if it passed first.
    pub fn acquire(&self, deadline: Instant) -> Option<QuerySlot<'_>> {
        let mut running = self.lock_running();
        while *running >= self.max_concurrent {
            let left = deadline.checked_duration_since(Instant::now())?;
            running = self
                .freed
                .wait_timeout(running, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        *running += 1;
        Some(QuerySlot { tracker: self })
    }

    /// Sets the query log (`None`: no log); the one before is dropped when
    /// the queries using it are done.
    pub fn set_logger(&self, logger: Option<Arc<dyn QueryLogger>>) {
        *self.logger.write().unwrap_or_else(|p| p.into_inner()) = logger;
    }

    /// Whether queries are logged.
    pub fn logging(&self) -> bool {
        self.logger
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .is_some()
    }

    /// Records a query that ran (or failed): its timings and samples in
    /// the metrics, and the query in the log.
    pub(crate) fn finish(&self, query: &LoggedQuery<'_>) {
        let st = query.stats;
        let [inner_eval, prepare, queue, sort] = &self.slices;
        inner_eval.observe(st.timings.inner_eval.as_secs_f64());
        prepare.observe(st.timings.query_preparation.as_secs_f64());
        queue.observe(st.timings.exec_queue.as_secs_f64());
        sort.observe(st.timings.result_sort.as_secs_f64());
        let add = |c: &AtomicU64, n: i64| c.fetch_add(n.max(0) as u64, Ordering::Relaxed);
        add(&self.samples_total, st.samples.total_queryable);
        add(&self.samples_read_total, st.samples.read);
        let logger = self
            .logger
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        if let Some(l) = logger {
            if l.log(query).is_err() {
                self.log_failures.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// The `prometheus_engine_*` families, in name order.
    pub fn families(&self) -> Vec<Family> {
        let single = |name, kind, help, value: f64| Family {
            name,
            kind,
            help,
            samples: vec![Sample {
                name: name.to_string(),
                labels: Vec::new(),
                value,
            }],
        };
        let mut out = vec![
            single(
                "prometheus_engine_queries",
                "gauge",
                "The current number of queries being executed or waiting.",
                self.queries.load(Ordering::Relaxed) as f64,
            ),
            single(
                "prometheus_engine_queries_concurrent_max",
                "gauge",
                "The max number of concurrent queries.",
                self.max_concurrent as f64,
            ),
        ];
        out.extend(self.durations.families());
        out.extend([
            single(
                "prometheus_engine_query_log_enabled",
                "gauge",
                "State of the query log.",
                if self.logging() { 1.0 } else { 0.0 },
            ),
            single(
                "prometheus_engine_query_log_failures_total",
                "counter",
                "The number of query log failures.",
                self.log_failures.load(Ordering::Relaxed) as f64,
            ),
            single(
                "prometheus_engine_query_samples_read_total",
                "counter",
                "The total number of samples read by all queries (only new points per step for range-vector).",
                self.samples_read_total.load(Ordering::Relaxed) as f64,
            ),
            single(
                "prometheus_engine_query_samples_total",
                "counter",
                "The total number of samples loaded by all queries (full window per step for range-vector).",
                self.samples_total.load(Ordering::Relaxed) as f64,
            ),
        ]);
        out.sort_by_key(|f| f.name);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn slots_are_limited_and_a_wait_ends_at_its_deadline() {
        let t = QueryTracker::new(2);
        let soon = || Instant::now() + Duration::from_millis(50);
        let a = t.acquire(soon()).expect("first slot");
        let b = t.acquire(soon()).expect("second slot");
        let began = Instant::now();
        assert!(t.acquire(soon()).is_none(), "a third query must wait");
        assert!(began.elapsed() >= Duration::from_millis(40));
        drop(a);
        assert!(t.acquire(soon()).is_some(), "a slot given back is free");
        drop(b);
    }

    #[test]
    fn a_waiting_query_takes_the_slot_given_back() {
        let t = Arc::new(QueryTracker::new(1));
        let slot = t.acquire(Instant::now()).expect("free");
        let t2 = t.clone();
        let waiter = std::thread::spawn(move || {
            t2.acquire(Instant::now() + Duration::from_secs(10))
                .is_some()
        });
        std::thread::sleep(Duration::from_millis(30));
        drop(slot);
        assert!(waiter.join().expect("no panic"));
    }

    #[test]
    fn the_families_are_prometheus_and_count_what_was_recorded() {
        struct Lines(Mutex<Vec<String>>);
        impl QueryLogger for Lines {
            fn log(&self, q: &LoggedQuery<'_>) -> std::io::Result<()> {
                self.0.lock().expect("lock").push(q.query.to_string());
                Ok(())
            }
        }
        let t = QueryTracker::new(3);
        let lines = Arc::new(Lines(Mutex::new(Vec::new())));
        t.set_logger(Some(lines.clone()));
        let mut stats = QueryStats::default();
        stats.samples.total_queryable = 7;
        stats.samples.read = 5;
        let active = t.begin();
        t.finish(&LoggedQuery {
            query: "up",
            start_ms: 0,
            end_ms: 0,
            step_ms: 0,
            error: None,
            stats: &stats,
            origin: &QueryOrigin::Unknown,
        });
        let value = |fams: &[Family], name: &str| {
            fams.iter()
                .flat_map(|f| &f.samples)
                .find(|s| s.name == name)
                .map(|s| s.value)
        };
        let fams = t.families();
        assert_eq!(value(&fams, "prometheus_engine_queries"), Some(1.0));
        drop(active);
        let fams = t.families();
        assert_eq!(value(&fams, "prometheus_engine_queries"), Some(0.0));
        assert_eq!(
            value(&fams, "prometheus_engine_queries_concurrent_max"),
            Some(3.0)
        );
        assert_eq!(
            value(&fams, "prometheus_engine_query_samples_total"),
            Some(7.0)
        );
        assert_eq!(
            value(&fams, "prometheus_engine_query_samples_read_total"),
            Some(5.0)
        );
        assert_eq!(
            value(&fams, "prometheus_engine_query_log_enabled"),
            Some(1.0)
        );
        let slices: Vec<String> = fams
            .iter()
            .filter(|f| f.name == "prometheus_engine_query_duration_seconds")
            .flat_map(|f| &f.samples)
            .filter(|s| s.name.ends_with("_count"))
            .map(|s| format!("{:?} {}", s.labels, s.value))
            .collect();
        assert_eq!(slices.len(), 4, "{slices:?}");
        assert!(slices.iter().all(|s| s.ends_with(" 1")), "{slices:?}");
        assert_eq!(*lines.0.lock().expect("lock"), vec!["up".to_string()]);
        t.set_logger(None);
        assert!(!t.logging());
    }
}
