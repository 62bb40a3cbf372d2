//! All of a server's scraping: one [`ScrapePool`] per job of the
//! configuration, brought in line with each (re)loaded file.
//!
//! Applying a configuration keeps a job whose settings did not change as
//! it is (its targets re-synced), reloads one whose settings changed (its
//! loops restart with their caches), starts new jobs and stops removed
//! ones (their targets write stale markers). Stopping the manager (the
//! server shutting down) ends every loop without stale markers, as
//! Prometheus does, and waits for them.
//!
//! A job with `file_sd_configs`, `dns_sd_configs` or `http_sd_configs` has a discovery task
//! ([`crate::discovery::run`]); each change it reports re-syncs the job's
//! pool to its static targets plus the discovered ones. A reload restarts
//! the discovery tasks but keeps the groups last discovered until the new
//! tasks report, so no target blinks out across a reload.
//!
//! Every apply opens the jobs' `scrape_failure_log_file`s again
//! ([`crate::failure_log`]) and hands each pool its file, which its running
//! loops log to from then on; a file that cannot be opened fails the apply
//! before anything changed, as Prometheus' `ApplyConfig` fails.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use ferrite_config::{Config, ScrapeConfig, TargetGroup};
use tokio::sync::{watch, Mutex};
use tokio::task::JoinHandle;
use tracing::{error, info};

use crate::discovery::metrics::DiscoveryMetrics;
use crate::discovery::DiscoveryConfigs;
use crate::failure_log::FailureLogs;
use crate::metrics::ScrapeMetrics;
use crate::offset::{fqdn, offset_seed};
use crate::pool::{PoolContext, ScrapePool, StoppingLoop};
use crate::scrape_loop::StopReason;
use crate::storage::ScrapeStorage;
use ferrite_config::log_file::LogFileError;

/// The server's scrape pools; see the module documentation.
pub struct ScrapeManager {
    storage: Arc<dyn ScrapeStorage>,
    runtime: tokio::runtime::Handle,
    /// The host's name, for the offset seed.
    fqdn: String,
    /// The pools by job name.
    pools: Arc<Mutex<BTreeMap<String, ScrapePool>>>,
    /// Loops told to stop that may still be writing stale markers.
    stopping: Arc<Mutex<Vec<StoppingLoop>>>,
    /// Scraping's counters.
    metrics: Arc<ScrapeMetrics>,
    /// The groups each job's discovery last reported.
    discovered: Arc<std::sync::Mutex<HashMap<String, Vec<TargetGroup>>>>,
    /// The running discovery tasks.
    discoveries: std::sync::Mutex<Vec<RunningDiscovery>>,
}

/// A job's discovery task and the task syncing its pool to it.
struct RunningDiscovery {
    stop: watch::Sender<bool>,
    tasks: [JoinHandle<()>; 2],
}

impl ScrapeManager {
    /// A manager with no jobs, appending to `storage`, running loops on
    /// `runtime`.
    pub fn new(storage: Arc<dyn ScrapeStorage>, runtime: tokio::runtime::Handle) -> Self {
        ScrapeManager {
            storage,
            runtime,
            fqdn: fqdn(),
            pools: Arc::new(Mutex::new(BTreeMap::new())),
            stopping: Arc::new(Mutex::new(Vec::new())),
            metrics: Arc::new(ScrapeMetrics::default()),
            discovered: Arc::new(std::sync::Mutex::new(HashMap::new())),
            discoveries: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// A job's static groups and those its discovery last reported.
    fn groups_of(&self, job: &ScrapeConfig) -> Vec<TargetGroup> {
        job_groups(&self.discovered, job)
    }

    /// Scraping's counters.
    pub fn metrics(&self) -> &ScrapeMetrics {
        &self.metrics
    }

    /// Brings the pools in line with `cfg`'s `scrape_configs`; fails,
    /// changing nothing, if a `scrape_failure_log_file` cannot be opened.
    pub async fn apply_config(&self, cfg: &Config) -> Result<(), LogFileError> {
        let failure_logs = FailureLogs::open(cfg)?;
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
                self.metrics.timings.sync_length.remove(&[&name]);
            }
        }
        self.restart_discovery(cfg, &ctx);
        let sd_metrics = DiscoveryMetrics::global();
        sd_metrics.set_configs("scrape", &wanted);
        for job in &cfg.scrape_configs {
            let groups = &self.groups_of(job);
            sd_metrics.updated("scrape", &job.job_name, target_count(groups), false);
            let failure_log = failure_logs.get(&job.scrape_failure_log_file);
            match pools.get_mut(&job.job_name) {
                Some(pool) if pool.config == *job => {
                    pool.failure_log.set(failure_log);
                    stopped.extend(pool.sync(&ctx, groups))
                }
                Some(pool) => {
                    ScrapeMetrics::inc(&self.metrics.pool_reloads);
                    pool.failure_log.set(failure_log);
                    stopped.extend(pool.reload(&ctx, job.clone(), groups).await);
                }
                None => match ScrapePool::new(job.clone()) {
                    Ok(mut pool) => {
                        ScrapeMetrics::inc(&self.metrics.pools_created);
                        pool.failure_log.set(failure_log);
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
        Ok(())
    }

    /// Stops the discovery tasks and starts one for each job of `cfg` that
    /// discovers targets (the groups already discovered are kept).
    fn restart_discovery(&self, cfg: &Config, ctx: &PoolContext) {
        let mut running = self.discoveries.lock().unwrap_or_else(|p| p.into_inner());
        for d in running.drain(..) {
            let _ = d.stop.send(true);
        }
        let jobs: Vec<&str> = cfg
            .scrape_configs
            .iter()
            .map(|j| j.job_name.as_str())
            .collect();
        self.discovered
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|job, _| jobs.contains(&job.as_str()));
        for job in &cfg.scrape_configs {
            let configs = DiscoveryConfigs {
                name: job.job_name.clone(),
                file: job.file_sd_configs.clone(),
                dns: job.dns_sd_configs.clone(),
                http: job.http_sd_configs.clone(),
            };
            if configs.is_empty() {
                continue;
            }
            let (stop, stopped) = watch::channel(false);
            let (groups_tx, groups_rx) = watch::channel(None);
            let discover = self
                .runtime
                .spawn(crate::discovery::run(configs, groups_tx, stopped));
            let sync = self.runtime.spawn(sync_on_discovery(
                job.clone(),
                groups_rx,
                ctx.clone(),
                self.pools.clone(),
                self.stopping.clone(),
                self.discovered.clone(),
            ));
            running.push(RunningDiscovery {
                stop,
                tasks: [discover, sync],
            });
        }
    }

    /// Ends every loop (no stale markers) and waits for them.
    pub async fn stop(&self) {
        let discoveries: Vec<RunningDiscovery> = self
            .discoveries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain(..)
            .collect();
        for d in discoveries {
            let _ = d.stop.send(true);
            for t in d.tasks {
                t.abort();
                let _ = t.await;
            }
        }
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
                    syncs: pool.syncs,
                    sync_failures: pool.sync_failures,
                    target_limit: pool.config.limits.target_limit,
                    active,
                    dropped: pool.dropped.clone(),
                    dropped_count: pool.dropped_count,
                }
            })
            .collect()
    }
}

/// A job's static groups and those its discovery last reported.
fn job_groups(
    discovered: &std::sync::Mutex<HashMap<String, Vec<TargetGroup>>>,
    job: &ScrapeConfig,
) -> Vec<TargetGroup> {
    let mut groups = job.static_configs.clone();
    if let Some(found) = discovered
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(&job.job_name)
    {
        groups.extend(found.iter().cloned());
    }
    groups
}

/// Re-syncs a job's pool each time its discovery reports (until the
/// discovery's sender goes away).
async fn sync_on_discovery(
    job: ScrapeConfig,
    mut reports: watch::Receiver<Option<Vec<TargetGroup>>>,
    ctx: PoolContext,
    pools: Arc<Mutex<BTreeMap<String, ScrapePool>>>,
    stopping: Arc<Mutex<Vec<StoppingLoop>>>,
    discovered: Arc<std::sync::Mutex<HashMap<String, Vec<TargetGroup>>>>,
) {
    while reports.changed().await.is_ok() {
        let Some(found) = reports.borrow_and_update().clone() else {
            continue;
        };
        discovered
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(job.job_name.clone(), found);
        let groups = job_groups(&discovered, &job);
        DiscoveryMetrics::global().updated("scrape", &job.job_name, target_count(&groups), true);
        let stopped = match pools.lock().await.get_mut(&job.job_name) {
            Some(pool) => pool.sync(&ctx, &groups),
            None => continue,
        };
        let mut stopping = stopping.lock().await;
        stopping.retain(|l| !l.is_finished());
        stopping.extend(stopped);
    }
}

/// How many targets the groups list (before relabeling), as
/// `prometheus_sd_discovered_targets` counts them.
fn target_count(groups: &[TargetGroup]) -> usize {
    groups.iter().map(|g| g.targets.len()).sum()
}

/// A pool's targets at one moment.
#[derive(Debug, Clone)]
pub struct PoolSnapshot {
    /// The job's name.
    pub job: String,
    /// How many syncs the pool has run.
    pub syncs: u64,
    /// How many targets failed to be made from their labels.
    pub sync_failures: u64,
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
