//! A job's scrape pool: its targets, one loop each.
//!
//! The pool turns the job's target groups into targets
//! ([`crate::target::populate_labels`]), keeps those relabeling dropped
//! (up to `keep_dropped_targets`, for the targets API), and keeps one
//! [`ScrapeLoop`] running per distinct target (targets with the same
//! labels and URL are one). Syncing to new groups starts loops for new
//! targets and stops those of vanished ones (they write stale markers);
//! reloading with a changed job restarts every loop with the new settings,
//! each new loop taking its predecessor's cache.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use ferrite_config::{ScrapeConfig, TargetGroup};
use ferrite_model::gotime::format_duration;
use ferrite_model::units::parse_duration_ms;
use ferrite_model::Labels;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tracing::warn;

use crate::append::AppendSettings;
use crate::cache::ScrapeCache;
use crate::failure_log::JobFailureLog;
use crate::format::{accept_header, protocol_media_type};
use crate::metadata::SharedMetadata;
use crate::metrics::ScrapeMetrics;
use crate::offset::{first_scrape_at, target_hash};
use crate::scrape_loop::{LoopSettings, ScrapeLoop, StopReason, TargetStatus};
use crate::storage::ScrapeStorage;
use crate::target::{
    discovered_labels, finish_labels, ADDRESS_LABEL, SCRAPE_INTERVAL_LABEL, SCRAPE_TIMEOUT_LABEL,
};
use crate::url::scrape_url;

/// A target being scraped.
pub struct ActiveTarget {
    /// Its labels before relabeling.
    pub discovered: Labels,
    /// Its final labels (`__` labels included).
    pub labels: Labels,
    /// Its scrape URL.
    pub url: String,
    /// Its interval and timeout.
    pub interval: Duration,
    /// Its scrape timeout.
    pub timeout: Duration,
    /// The outcome of its last scrape.
    pub status: Arc<Mutex<TargetStatus>>,
    /// Its metric families' metadata.
    pub metadata: SharedMetadata,
    /// An error every scrape fails with instead of fetching (the job's
    /// `target_limit` exceeded).
    forced_error: Arc<Mutex<Option<String>>>,
    stop: watch::Sender<StopReason>,
    task: JoinHandle<ScrapeCache>,
}

impl ActiveTarget {
    /// Stops the loop for `reason`; the task ends by itself.
    fn stop(self, reason: StopReason) -> StoppingLoop {
        let _ = self.stop.send(reason);
        StoppingLoop {
            stop: self.stop,
            task: self.task,
        }
    }
}

/// A loop told to stop, still running its last steps (stale markers).
pub struct StoppingLoop {
    stop: watch::Sender<StopReason>,
    task: JoinHandle<ScrapeCache>,
}

impl StoppingLoop {
    /// Tells it the server shuts down and waits for it.
    pub async fn shut_down(self) {
        let _ = self.stop.send(StopReason::Shutdown);
        let _ = self.task.await;
    }

    /// Whether it has ended.
    pub fn is_finished(&self) -> bool {
        self.task.is_finished()
    }
}

/// What a pool needs from the manager.
#[derive(Clone)]
pub struct PoolContext {
    /// Where samples go.
    pub storage: Arc<dyn ScrapeStorage>,
    /// The server's offset seed.
    pub offset_seed: u64,
    /// The runtime loops run on.
    pub runtime: tokio::runtime::Handle,
    /// The counters loops and pools add to.
    pub metrics: Arc<ScrapeMetrics>,
}

/// One job's targets and loops; see the module documentation.
pub struct ScrapePool {
    /// The job's settings.
    pub config: ScrapeConfig,
    client: crate::client::JobClient,
    /// The running targets, by hash.
    pub active: HashMap<u64, ActiveTarget>,
    /// Discovered labels of targets relabeling dropped (at most
    /// `keep_dropped_targets`, all when 0).
    pub dropped: Vec<Labels>,
    /// How many targets relabeling dropped, kept or not.
    pub dropped_count: usize,
    /// How many syncs the pool has run
    /// (`prometheus_target_scrape_pool_sync_total`).
    pub syncs: u64,
    /// How many targets failed to be made from their labels
    /// (`prometheus_target_sync_failed_total`).
    pub sync_failures: u64,
    /// Where its loops log failed scrapes (`scrape_failure_log_file`),
    /// set by the manager on every configuration apply.
    pub failure_log: JobFailureLog,
}

impl ScrapePool {
    /// A pool for `config` with no targets yet.
    pub fn new(config: ScrapeConfig) -> Result<Self, crate::client::ClientError> {
        let client = crate::client::JobClient::new_as(&config.http_client)?;
        let failure_log = JobFailureLog::new(&config.job_name);
        Ok(ScrapePool {
            failure_log,
            config,
            client,
            active: HashMap::new(),
            dropped: Vec::new(),
            dropped_count: 0,
            syncs: 0,
            sync_failures: 0,
        })
    }

    /// Brings the running loops in line with `groups`: new targets start,
    /// vanished ones stop (returned, still writing their stale markers).
    pub fn sync(&mut self, ctx: &PoolContext, groups: &[TargetGroup]) -> Vec<StoppingLoop> {
        let started = Instant::now();
        let wanted = self.targets(groups);
        let mut stopping = Vec::new();
        let gone: Vec<u64> = self
            .active
            .keys()
            .filter(|h| !wanted.contains_key(h))
            .copied()
            .collect();
        for h in gone {
            if let Some(t) = self.active.remove(&h) {
                stopping.push(t.stop(StopReason::TargetGone));
            }
        }
        for (h, t) in wanted {
            if !self.active.contains_key(&h) {
                let loop_ = start(ctx, self, t, h, ScrapeCache::new());
                self.active.insert(h, loop_);
            }
        }
        self.apply_target_limit(ctx);
        self.syncs += 1;
        ctx.metrics
            .timings
            .sync_length
            .observe(&[&self.config.job_name], started.elapsed().as_secs_f64());
        stopping
    }

    /// Replaces the job's settings: every loop restarts with them, taking
    /// over its predecessor's cache; targets no longer wanted stop.
    pub async fn reload(
        &mut self,
        ctx: &PoolContext,
        config: ScrapeConfig,
        groups: &[TargetGroup],
    ) -> Vec<StoppingLoop> {
        let started = Instant::now();
        match crate::client::JobClient::new_as(&config.http_client) {
            Ok(c) => self.client = c,
            Err(e) => {
                ScrapeMetrics::inc(&ctx.metrics.pool_reloads_failed);
                warn!(job = %config.job_name, error = %e, "keeping the job's HTTP client")
            }
        }
        self.config = config;
        let wanted = self.targets(groups);
        let mut stopping = Vec::new();
        let mut caches = HashMap::new();
        for (h, t) in self.active.drain() {
            if wanted.contains_key(&h) {
                let _ = t.stop.send(StopReason::Replaced);
                caches.insert(h, t.task);
            } else {
                stopping.push(t.stop(StopReason::TargetGone));
            }
        }
        for (h, t) in wanted {
            let cache = match caches.remove(&h) {
                Some(task) => task.await.unwrap_or_default(),
                None => ScrapeCache::new(),
            };
            let loop_ = start(ctx, self, t, h, cache);
            self.active.insert(h, loop_);
        }
        self.apply_target_limit(ctx);
        let interval =
            Duration::from_millis(u64::try_from(self.config.scrape_interval_ms).unwrap_or(0));
        ctx.metrics.timings.reload_length.observe(
            &[&format_duration(interval)],
            started.elapsed().as_secs_f64(),
        );
        stopping
    }

    /// Stops every loop for `reason`.
    pub fn stop_all(&mut self, reason: StopReason) -> Vec<StoppingLoop> {
        self.active.drain().map(|(_, t)| t.stop(reason)).collect()
    }

    /// `target_limit`: over it, every target fails its scrapes with
    /// Prometheus' error (and writes the stale markers of a failed scrape).
    fn apply_target_limit(&self, ctx: &PoolContext) {
        let limit = self.config.limits.target_limit;
        let n = self.active.len();
        let forced = (limit > 0 && n as u64 > limit)
            .then(|| format!("target_limit exceeded (number of targets: {n}, limit: {limit})"));
        if forced.is_some() {
            ScrapeMetrics::inc(&ctx.metrics.exceeded_target_limit);
        }
        for t in self.active.values() {
            *t.forced_error.lock().unwrap_or_else(|p| p.into_inner()) = forced.clone();
        }
    }

    /// The targets of `groups` by hash, recording the dropped ones.
    fn targets(&mut self, groups: &[TargetGroup]) -> HashMap<u64, NewTarget> {
        let mut out = HashMap::new();
        self.dropped.clear();
        self.dropped_count = 0;
        let keep = self.config.limits.keep_dropped_targets;
        for group in groups {
            for address in &group.targets {
                let own = Labels::new([(ADDRESS_LABEL, address.as_str())]);
                let discovered = discovered_labels(&own, &group.labels, &self.config);
                match finish_labels(&discovered, &self.config) {
                    Ok(Some(labels)) => {
                        let url = scrape_url(&labels, &self.config.params);
                        let hash = target_hash(&labels, &url);
                        out.insert(
                            hash,
                            NewTarget {
                                discovered,
                                labels,
                                url,
                            },
                        );
                    }
                    Ok(None) => {
                        self.dropped_count += 1;
                        if keep == 0 || (self.dropped.len() as u64) < keep {
                            self.dropped.push(discovered);
                        }
                    }
                    Err(e) => {
                        self.sync_failures += 1;
                        warn!(job = %self.config.job_name, target = %address, error = %e, "creating target failed")
                    }
                }
            }
        }
        out
    }
}

/// A target found in the groups, not started yet.
struct NewTarget {
    discovered: Labels,
    labels: Labels,
    url: String,
}

/// Starts a loop for a target of `pool`.
fn start(
    ctx: &PoolContext,
    pool: &ScrapePool,
    t: NewTarget,
    hash: u64,
    cache: ScrapeCache,
) -> ActiveTarget {
    let cfg = &pool.config;
    let interval = label_duration(&t.labels, SCRAPE_INTERVAL_LABEL, cfg.scrape_interval_ms);
    let timeout = label_duration(&t.labels, SCRAPE_TIMEOUT_LABEL, cfg.scrape_timeout_ms);
    let settings = Arc::new(loop_settings(cfg, &t, interval, timeout));
    let status = Arc::new(Mutex::new(TargetStatus::default()));
    let forced_error = Arc::new(Mutex::new(None));
    let metadata = cache.metadata.clone();
    let (stop, stopped) = watch::channel(StopReason::Running);
    let scrape_loop = ScrapeLoop {
        settings,
        storage: ctx.storage.clone(),
        client: pool.client.clone(),
        cache,
        failure_log: pool.failure_log.clone(),
        status: status.clone(),
        forced_error: forced_error.clone(),
        metrics: ctx.metrics.clone(),
        first_scrape: first_scrape_at(SystemTime::now(), interval, hash, ctx.offset_seed),
    };
    let task = ctx.runtime.spawn(scrape_loop.run(stopped));
    ActiveTarget {
        discovered: t.discovered,
        labels: t.labels,
        url: t.url,
        interval,
        timeout,
        status,
        metadata,
        forced_error,
        stop,
        task,
    }
}

/// A target's interval or timeout: its label (as relabeling left it,
/// checked by `populate_labels`), else the job's.
fn label_duration(labels: &Labels, name: &str, default_ms: i64) -> Duration {
    let ms = parse_duration_ms(labels.get(name)).unwrap_or(default_ms);
    Duration::from_millis(u64::try_from(ms).unwrap_or(0).max(1))
}

fn loop_settings(
    cfg: &ScrapeConfig,
    t: &NewTarget,
    interval: Duration,
    timeout: Duration,
) -> LoopSettings {
    let target_labels = Labels::from_sorted(
        t.labels
            .iter()
            .filter(|l| !l.name.starts_with("__"))
            .cloned()
            .collect(),
    );
    let escaping = if cfg.metric_name_escaping_scheme.is_empty() {
        "allow-utf-8"
    } else {
        cfg.metric_name_escaping_scheme.as_str()
    };
    LoopSettings {
        url: t.url.clone(),
        interval,
        timeout,
        accept: accept_header(&cfg.scrape_protocols, escaping),
        compression: cfg.enable_compression,
        body_size_limit: u64::try_from(cfg.limits.body_size_limit).unwrap_or(0),
        extra_metrics: cfg.extra_scrape_metrics,
        append: AppendSettings {
            target_labels,
            honor_labels: cfg.honor_labels,
            honor_timestamps: cfg.honor_timestamps,
            track_timestamps_staleness: cfg.track_timestamps_staleness,
            metric_relabel_configs: cfg.metric_relabel_configs.clone(),
            validation: cfg.metric_name_validation_scheme,
            sample_limit: cfg.limits.sample_limit,
            label_limit: cfg.limits.label_limit,
            label_name_length_limit: cfg.limits.label_name_length_limit,
            label_value_length_limit: cfg.limits.label_value_length_limit,
            fallback_media_type: cfg.fallback_scrape_protocol.map(protocol_media_type),
            convert_classic_histograms_to_nhcb: crate::append::converts_to_nhcb(cfg, &t.labels),
            histograms: crate::append::HistogramSettings::from_job(cfg, &t.labels),
        },
    }
}
