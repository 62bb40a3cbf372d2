//! [`Notifier`]: the notifier as the server holds it (shared, `Arc`):
//! configured from the file, fed alerts by rule evaluation, stopped at
//! shutdown.
//!
//! - [`Notifier::apply_config`] (start and every reload): the external
//!   labels, `alerting.alert_relabel_configs` and the Alertmanager sets.
//!   A set whose entry is unchanged is kept as it is, with its discovered
//!   Alertmanagers and their queues (Prometheus matches entries by a hash
//!   of their configuration, Ferrite by equality); others are built anew
//!   and the sets no entry keeps are stopped (drained, in the
//!   background). Nothing changes if any set cannot be built.
//! - [`Notifier::send`]: relabels alerts (external labels, then the
//!   global rules) and queues them for every set, which applies its own
//!   `alert_relabel_configs` and queues them for each of its
//!   Alertmanagers; never waits for the network.
//! - [`Notifier::stop`]: refuses further alerts, then sends what is queued
//!   (with `drain_on_shutdown`, within [`Options::drain_timeout`]) and
//!   stops.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use ferrite_config::relabel::RelabelConfig;
use ferrite_config::Config;
use ferrite_model::{Labels, ValidationScheme};

use crate::alert::{relabel_alerts, Alert};
use crate::alertmanager::{AlertmanagerSet, LoopSettings, StopMode};
use crate::metrics::{Family, Metrics};

/// Prometheus' default `--alertmanager.notification-queue-capacity`.
pub const DEFAULT_QUEUE_CAPACITY: usize = 10_000;
/// Prometheus' default `--alertmanager.notification-batch-size`.
pub const DEFAULT_BATCH_SIZE: usize = 256;
/// How long [`Notifier::stop`] sends queued alerts at most, by default.
pub const DEFAULT_DRAIN_TIMEOUT: Duration = Duration::from_secs(30);

/// The notifier's settings (flags).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// `--alertmanager.notification-queue-capacity`: alerts each
    /// Alertmanager's queue holds.
    pub queue_capacity: usize,
    /// `--alertmanager.notification-batch-size`: alerts per request (at
    /// least 1).
    pub batch_size: usize,
    /// `--alertmanager.drain-notification-queue-on-shutdown`.
    pub drain_on_shutdown: bool,
    /// The longest a stop spends sending queued alerts; what is left is
    /// dropped (and counted). Prometheus has no such bound.
    pub drain_timeout: Duration,
}

impl Default for Options {
    /// Prometheus' defaults.
    fn default() -> Self {
        Options {
            queue_capacity: DEFAULT_QUEUE_CAPACITY,
            batch_size: DEFAULT_BATCH_SIZE,
            drain_on_shutdown: true,
            drain_timeout: DEFAULT_DRAIN_TIMEOUT,
        }
    }
}

/// Why a configuration was not applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A set's HTTP client could not be built (Prometheus' text: `error
    /// creating HTTP client: ...`).
    #[error("{0}")]
    Client(#[from] ferrite_scrape::client::ClientError),
    /// A setting Ferrite cannot honour.
    #[error("{setting}: {reason}")]
    Unsupported {
        /// The setting, as `alerting.alertmanagers[<i>].<key>`.
        setting: String,
        /// Why.
        reason: &'static str,
    },
}

/// Checks that Ferrite can honour every setting of `cfg`'s `alerting:`
/// section (a discovery it runs, no `sigv4`, HTTP client settings it has).
pub fn check_supported(cfg: &Config) -> Result<(), Error> {
    for (i, am) in cfg.alerting.alertmanagers.iter().enumerate() {
        if let Some((setting, reason)) = am.unsupported() {
            return Err(Error::Unsupported {
                setting: format!("alerting.alertmanagers[{i}].{setting}"),
                reason,
            });
        }
    }
    Ok(())
}

struct State {
    external_labels: Labels,
    relabel_configs: Vec<RelabelConfig>,
    names: ValidationScheme,
    sets: Vec<Arc<AlertmanagerSet>>,
}

/// Sends alerts to the configured Alertmanagers; see the module
/// documentation.
pub struct Notifier {
    opts: Options,
    metrics: Arc<Metrics>,
    state: RwLock<State>,
    stopped: AtomicBool,
}

impl std::fmt::Debug for Notifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Notifier")
            .field("opts", &self.opts)
            .finish_non_exhaustive()
    }
}

impl Notifier {
    /// A notifier with no Alertmanagers yet.
    pub fn new(opts: Options) -> Self {
        let opts = Options {
            batch_size: opts.batch_size.max(1),
            ..opts
        };
        Notifier {
            metrics: Arc::new(Metrics::new(opts.queue_capacity)),
            opts,
            state: RwLock::new(State {
                external_labels: Labels::empty(),
                relabel_configs: Vec::new(),
                names: ValidationScheme::Utf8,
                sets: Vec::new(),
            }),
            stopped: AtomicBool::new(false),
        }
    }

    /// Its settings.
    pub fn options(&self) -> &Options {
        &self.opts
    }

    fn settings(&self) -> LoopSettings {
        LoopSettings {
            queue_capacity: self.opts.queue_capacity,
            batch_size: self.opts.batch_size,
            metrics: self.metrics.clone(),
        }
    }

    /// Applies a (re)loaded configuration; on an error nothing changes.
    /// Must run on a Tokio runtime (it starts the sets' tasks).
    pub async fn apply_config(&self, cfg: &Config) -> Result<(), Error> {
        check_supported(cfg)?;
        if self.stopped.load(Ordering::SeqCst) {
            return Ok(());
        }
        let names = cfg.global.metric_name_validation_scheme;
        let mut old: Vec<Option<Arc<AlertmanagerSet>>> = self
            .state
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .sets
            .iter()
            .cloned()
            .map(Some)
            .collect();
        let mut sets = Vec::with_capacity(cfg.alerting.alertmanagers.len());
        let mut built: Vec<Arc<AlertmanagerSet>> = Vec::new();
        let sd_names: Vec<String> = (0..cfg.alerting.alertmanagers.len())
            .map(|i| format!("config-{i}"))
            .collect();
        let sd_names: Vec<&str> = sd_names.iter().map(String::as_str).collect();
        ferrite_scrape::discovery::metrics::DiscoveryMetrics::global()
            .set_configs("notify", &sd_names);
        for (index, am) in cfg.alerting.alertmanagers.iter().enumerate() {
            let same = old
                .iter_mut()
                .find(|s| s.as_ref().is_some_and(|s| s.cfg == *am))
                .and_then(Option::take);
            let set = match same {
                Some(s) => s,
                None => {
                    match AlertmanagerSet::start(
                        index,
                        am,
                        names,
                        self.settings(),
                        self.opts.drain_on_shutdown,
                        self.opts.drain_timeout,
                    ) {
                        Ok(s) => {
                            built.push(s.clone());
                            s
                        }
                        Err(e) => {
                            for s in built {
                                s.retire();
                            }
                            return Err(e.into());
                        }
                    }
                }
            };
            sets.push(set);
        }
        {
            let mut state = self.state.write().unwrap_or_else(|p| p.into_inner());
            *state = State {
                external_labels: cfg.global.external_labels.clone(),
                relabel_configs: cfg.alerting.alert_relabel_configs.clone(),
                names,
                sets,
            };
        }
        for s in old.into_iter().flatten() {
            s.retire();
        }
        Ok(())
    }

    /// Relabels `alerts` and queues them for every Alertmanager; returns
    /// at once. Ignored once the notifier is stopping.
    pub fn send(&self, alerts: Vec<Alert>) {
        if alerts.is_empty() || self.stopped.load(Ordering::SeqCst) {
            return;
        }
        let state = self.state.read().unwrap_or_else(|p| p.into_inner());
        let alerts = relabel_alerts(
            alerts,
            &state.external_labels,
            &state.relabel_configs,
            state.names,
        );
        if alerts.is_empty() {
            return;
        }
        for set in &state.sets {
            set.send(&alerts);
        }
    }

    /// Stops: no alert is accepted any more; what is queued is sent first
    /// when `drain_on_shutdown` is set (within `drain_timeout`), else
    /// dropped. Returns once every send loop ended.
    pub async fn stop(&self) {
        if self.stopped.swap(true, Ordering::SeqCst) {
            return;
        }
        tracing::info!("Stopping notification manager...");
        let sets = std::mem::take(&mut self.state.write().unwrap_or_else(|p| p.into_inner()).sets);
        let mode = StopMode {
            drain: self.opts.drain_on_shutdown,
            deadline: Instant::now() + self.opts.drain_timeout,
        };
        let stops: Vec<_> = sets
            .iter()
            .map(|s| {
                let s = s.clone();
                tokio::spawn(async move { s.stop(mode).await })
            })
            .collect();
        for s in stops {
            let _ = s.await;
        }
    }

    /// The URLs of the Alertmanagers alerts go to, and of those dropped by
    /// relabeling (`/api/v1/alertmanagers`), sets in file order.
    pub fn alertmanagers(&self) -> (Vec<String>, Vec<String>) {
        let sets = self
            .state
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .sets
            .clone();
        let mut active = Vec::new();
        let mut dropped = Vec::new();
        for s in sets {
            let (a, d) = s.urls();
            active.extend(a);
            dropped.extend(d);
        }
        (active, dropped)
    }

    /// The metric families for `/metrics` (see [`crate::metrics`]).
    pub fn metric_families(&self) -> Vec<Family> {
        let discovered = self.alertmanagers().0.len();
        self.metrics.families(discovered)
    }

    /// An Alertmanager's `(sent, errors, dropped, queue length)` counts,
    /// if it has series.
    pub fn counts(&self, url: &str) -> Option<(u64, u64, u64, usize)> {
        self.metrics.counts(url)
    }
}
