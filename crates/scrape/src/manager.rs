//! All of a server's scraping: one [`ScrapePool`] per job of the
//! configuration, brought in line with each (re)loaded file.
//!
//! Applying a configuration keeps a job whose settings did not change as
//! it is (its targets re-synced), reloads one whose settings changed (its
//! loops restart with their caches), starts new jobs and stops removed
//! ones (their targets write stale markers). Stopping the manager (the
//! server shutting down) ends every loop without stale markers, as
//! Prometheus does, and waits for them.

use std::collections::BTreeMap;
use std::sync::Arc;

use ferrite_config::Config;
use tokio::sync::Mutex;
use tracing::{error, info};

use crate::metrics::ScrapeMetrics;
use crate::offset::{fqdn, offset_seed};
use crate::pool::{PoolContext, ScrapePool, StoppingLoop};
use crate::scrape_loop::StopReason;
use crate::storage::ScrapeStorage;

/// The server's scrape pools; see the module documentation.
pub struct ScrapeManager {
    storage: Arc<dyn ScrapeStorage>,
    runtime: tokio::runtime::Handle,
    /// The host's name, for the offset seed.
    fqdn: String,
    /// The pools by job name.
    pools: Mutex<BTreeMap<String, ScrapePool>>,
    /// Loops told to stop that may still be writing stale markers.
    stopping: Mutex<Vec<StoppingLoop>>,
    /// Scraping's counters.
    metrics: Arc<ScrapeMetrics>,
}

impl ScrapeManager {
    /// A manager with no jobs, appending to `storage`, running loops on
    /// `runtime`.
    pub fn new(storage: Arc<dyn ScrapeStorage>, runtime: tokio::runtime::Handle) -> Self {
        ScrapeManager {
            storage,
            runtime,
            fqdn: fqdn(),
            pools: Mutex::new(BTreeMap::new()),
            stopping: Mutex::new(Vec::new()),
            metrics: Arc::new(ScrapeMetrics::default()),
        }
    }

    /// Scraping's counters.
    pub fn metrics(&self) -> &ScrapeMetrics {
        &self.metrics
    }

    /// Brings the pools in line with `cfg`'s `scrape_configs`.
    pub async fn apply_config(&self, cfg: &Config) {
        let ctx = PoolContext {
            storage: self.storage.clone(),
            offset_seed: offset_seed(&self.fqdn, &cfg.global.external_labels),
            runtime: self.runtime.clone(),
            metrics: self.metrics.clone(),
        };
        let mut pools = self.pools.lock().await;
        let mut stopped = Vec::new();
        let wanted: Vec<&str> = cfg
            .scrape_configs
            .iter()
            .map(|c| c.job_name.as_str())
            .collect();
        let removed: Vec<String> = pools
            .keys()
            .filter(|name| !wanted.contains(&name.as_str()))
            .cloned()
            .collect();
        for name in removed {
            if let Some(mut pool) = pools.remove(&name) {
                info!(job = %name, "stopping the scrape pool of a removed job");
                stopped.extend(pool.stop_all(StopReason::TargetGone));
            }
        }
        for job in &cfg.scrape_configs {
            let groups = &job.static_configs;
            match pools.get_mut(&job.job_name) {
                Some(pool) if pool.config == *job => stopped.extend(pool.sync(&ctx, groups)),
                Some(pool) => {
                    ScrapeMetrics::inc(&self.metrics.pool_reloads);
                    stopped.extend(pool.reload(&ctx, job.clone(), groups).await);
                }
                None => match ScrapePool::new(job.clone()) {
                    Ok(mut pool) => {
                        ScrapeMetrics::inc(&self.metrics.pools_created);
                        stopped.extend(pool.sync(&ctx, groups));
                        pools.insert(job.job_name.clone(), pool);
                    }
                    Err(e) => {
                        ScrapeMetrics::inc(&self.metrics.pools_created);
                        ScrapeMetrics::inc(&self.metrics.pools_failed);
                        error!(job = %job.job_name, error = %e, "creating the scrape pool failed");
                    }
                },
            }
        }
        let mut stopping = self.stopping.lock().await;
        stopping.retain(|l| !l.is_finished());
        stopping.extend(stopped);
    }

    /// Ends every loop (no stale markers) and waits for them.
    pub async fn stop(&self) {
        let mut all = Vec::new();
        for pool in self.pools.lock().await.values_mut() {
            all.extend(pool.stop_all(StopReason::Shutdown));
        }
        all.append(&mut *self.stopping.lock().await);
        for l in all {
            l.shut_down().await;
        }
    }

    /// What every pool scrapes, by job name (for the targets APIs).
    pub async fn snapshot(&self) -> Vec<PoolSnapshot> {
        let pools = self.pools.lock().await;
        pools
            .iter()
            .map(|(job, pool)| {
                let mut active: Vec<TargetSnapshot> = pool
                    .active
                    .values()
                    .map(|t| TargetSnapshot {
                        discovered: t.discovered.clone(),
                        labels: t.labels.clone(),
                        url: t.url.clone(),
                        status: t.status.lock().unwrap_or_else(|p| p.into_inner()).clone(),
                        metadata: t.metadata.clone(),
                    })
                    .collect();
                active.sort_by(|a, b| a.url.cmp(&b.url).then_with(|| a.labels.cmp(&b.labels)));
                PoolSnapshot {
                    job: job.clone(),
                    target_limit: pool.config.limits.target_limit,
                    active,
                    dropped: pool.dropped.clone(),
                    dropped_count: pool.dropped_count,
                }
            })
            .collect()
    }
}

/// A pool's targets at one moment.
#[derive(Debug, Clone)]
pub struct PoolSnapshot {
    /// The job's name.
    pub job: String,
    /// Its `target_limit` (0: none).
    pub target_limit: u64,
    /// Its targets, by scrape URL.
    pub active: Vec<TargetSnapshot>,
    /// Discovered labels of targets relabeling dropped (as many as
    /// `keep_dropped_targets` keeps).
    pub dropped: Vec<ferrite_model::Labels>,
    /// How many targets relabeling dropped.
    pub dropped_count: usize,
}

/// A target at one moment.
#[derive(Debug, Clone)]
pub struct TargetSnapshot {
    /// Its labels before relabeling.
    pub discovered: ferrite_model::Labels,
    /// Its final labels (`__` labels included).
    pub labels: ferrite_model::Labels,
    /// Its scrape URL.
    pub url: String,
    /// Its last scrape's outcome.
    pub status: crate::scrape_loop::TargetStatus,
    /// Its metric families' metadata.
    pub metadata: crate::metadata::SharedMetadata,
}
