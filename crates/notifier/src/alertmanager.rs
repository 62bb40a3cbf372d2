//! One Alertmanager set: an `alertmanagers` entry of the configuration,
//! its Alertmanagers found (static targets, file and DNS discovery),
//! relabeled into URLs, and a send loop with its own queue per URL.
//!
//! From a discovered target to a URL, as Prometheus'
//! `AlertmanagerFromGroup` does it: the target's `__address__`, the set's
//! `__scheme__` and `__alerts_path__` (`/<path_prefix>/api/v2/alerts`),
//! then the group's labels where the target has none of that name; then
//! the set's `relabel_configs`. A target they drop is listed as dropped
//! (its labels before relabeling make its URL); a kept one whose
//! `__address__` holds a `/` fails its whole group (logged). The URL is
//! `<__scheme__>://<__address__><__alerts_path__>`; duplicates are sent to
//! once.
//!
//! Each URL has a [`SendLoop`]: alerts are pushed to its queue (see
//! [`crate::queue`]) and a task sends them in batches, one request at a
//! time, each within the set's timeout. A failed request is logged and
//! its alerts counted as errors and dropped; nothing is retried, as in
//! Prometheus. A loop whose Alertmanager goes away, or whose set is
//! replaced or stopped, sends what it holds first (when draining is on),
//! within the drain deadline.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use ferrite_config::relabel;
use ferrite_config::{AlertmanagerConfig, TargetGroup};
use ferrite_model::{Labels, ValidationScheme};
use ferrite_scrape::client::JobClient;
use ferrite_scrape::discovery::metrics::DiscoveryMetrics;
use ferrite_scrape::discovery::{self, DiscoveryConfigs};
use tokio::sync::{watch, Notify};
use tracing::{debug, error, warn};

use crate::alert::{relabel_alerts, Alert};
use crate::metrics::Metrics;
use crate::queue::Queue;
use crate::send;

/// The label holding the path alerts are posted to.
pub const PATH_LABEL: &str = "__alerts_path__";

/// What every loop of the notifier shares.
#[derive(Debug, Clone)]
pub(crate) struct LoopSettings {
    pub queue_capacity: usize,
    pub batch_size: usize,
    pub metrics: Arc<Metrics>,
}

/// How a loop ends.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StopMode {
    /// Send what is queued first.
    pub drain: bool,
    /// When to give up sending (what is left is dropped).
    pub deadline: Instant,
}

/// The URL of an Alertmanager's labels, as Go's `url.URL` writes
/// `{Scheme, Host, Path}`.
pub fn alertmanager_url(labels: &Labels) -> String {
    let scheme = labels.get("__scheme__");
    let host = labels.get("__address__");
    let path = labels.get(PATH_LABEL);
    let mut url = String::new();
    if !scheme.is_empty() {
        url.push_str(scheme);
        url.push(':');
    }
    if !scheme.is_empty() || !host.is_empty() {
        url.push_str("//");
        url.push_str(host);
        if !path.is_empty() && !path.starts_with('/') {
            url.push('/');
        }
    }
    url.push_str(path);
    url
}

/// The Alertmanagers of one group: those kept (labels after relabeling)
/// and those dropped (labels before), or the error that fails the group.
pub fn alertmanagers_from_group(
    group: &TargetGroup,
    cfg: &AlertmanagerConfig,
    names: ValidationScheme,
) -> Result<(Vec<Labels>, Vec<Labels>), String> {
    let mut kept = Vec::new();
    let mut dropped = Vec::new();
    let path = cfg.post_path();
    for target in &group.targets {
        let mut labels = Labels::from_pairs(&[("__address__", target.as_str())]);
        labels.set("__scheme__", &cfg.scheme);
        labels.set(PATH_LABEL, &path);
        for l in group.labels.iter() {
            if &*l.name != "__address__" {
                labels.set(&l.name, &l.value);
            }
        }
        match relabel::apply(&labels, &cfg.relabel_configs, names) {
            None => dropped.push(labels),
            Some(after) => {
                let addr = after.get("__address__");
                if addr.contains('/') {
                    return Err(format!(
                        "{} is not a valid hostname",
                        ferrite_model::goquote::quote(addr)
                    ));
                }
                kept.push(after);
            }
        }
    }
    Ok((kept, dropped))
}

/// One Alertmanager's queue and the task sending it.
pub(crate) struct SendLoop {
    url: String,
    queue: Mutex<Queue>,
    wake: Notify,
    stop: watch::Sender<Option<StopMode>>,
    task: Mutex<Option<tokio::task::JoinHandle<()>>>,
    settings: LoopSettings,
}

impl SendLoop {
    fn start(
        url: String,
        client: JobClient,
        timeout: Duration,
        settings: LoopSettings,
    ) -> Arc<SendLoop> {
        settings.metrics.add_alertmanager(&url);
        let (stop, stop_rx) = watch::channel(None);
        let l = Arc::new(SendLoop {
            url,
            queue: Mutex::new(Queue::new(settings.queue_capacity)),
            wake: Notify::new(),
            stop,
            task: Mutex::new(None),
            settings,
        });
        let task = tokio::spawn(run_loop(l.clone(), client, timeout, stop_rx));
        *l.task.lock().unwrap_or_else(|p| p.into_inner()) = Some(task);
        l
    }

    fn push(&self, alerts: Vec<Alert>) {
        if self.stop.borrow().is_some() {
            return;
        }
        let (dropped, len) = {
            let mut q = self.queue.lock().unwrap_or_else(|p| p.into_inner());
            (q.push(alerts), q.len())
        };
        if dropped > 0 {
            warn!(alertmanager = %self.url, count = dropped, "Alert notification queue full, dropping alerts");
        }
        let m = &self.settings.metrics;
        m.queue_length(&self.url, len);
        m.dropped(&self.url, dropped);
        self.wake.notify_one();
    }

    fn batch(&self) -> Vec<Alert> {
        let mut q = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        let batch = q.batch(self.settings.batch_size);
        self.settings.metrics.queue_length(&self.url, q.len());
        batch
    }

    /// Asks the loop to end; [`SendLoop::wait`] waits for it.
    fn request_stop(&self, mode: StopMode) {
        self.stop.send_if_modified(|m| {
            if m.is_none() {
                *m = Some(mode);
                true
            } else {
                false
            }
        });
    }

    async fn wait(&self) {
        let task = self.task.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(task) = task {
            let _ = task.await;
        }
    }

    /// How many alerts wait.
    pub(crate) fn queue_len(&self) -> usize {
        self.queue.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

/// Sends one batch; whether it went through.
async fn send_batch(l: &SendLoop, client: &JobClient, alerts: &[Alert], timeout: Duration) -> bool {
    let m = &l.settings.metrics;
    let begin = Instant::now();
    let body = send::encode_v2(alerts);
    match send::post(client, &l.url, body, timeout).await {
        Ok(()) => {
            m.observe(&l.url, begin.elapsed().as_secs_f64());
            m.sent(&l.url, alerts.len());
            true
        }
        Err(e) => {
            error!(alertmanager = %l.url, count = alerts.len(), err = %e, "Error sending alerts");
            m.errors(&l.url, alerts.len());
            m.dropped(&l.url, alerts.len());
            false
        }
    }
}

/// Returns once a stop was asked for and its deadline passed.
async fn past_stop_deadline(stop: &mut watch::Receiver<Option<StopMode>>) {
    let mode = match stop.wait_for(Option::is_some).await {
        Ok(m) => *m,
        Err(_) => None,
    };
    match mode {
        Some(mode) => tokio::time::sleep_until(mode.deadline.into()).await,
        None => std::future::pending().await,
    }
}

async fn run_loop(
    l: Arc<SendLoop>,
    client: JobClient,
    timeout: Duration,
    mut stop: watch::Receiver<Option<StopMode>>,
) {
    debug!(alertmanager = %l.url, "Starting send loop");
    let mode = loop {
        if let Some(mode) = *stop.borrow_and_update() {
            break mode;
        }
        tokio::select! {
            _ = l.wake.notified() => {}
            _ = stop.changed() => continue,
        }
        loop {
            if stop.borrow().is_some() {
                break;
            }
            let batch = l.batch();
            if batch.is_empty() {
                break;
            }
            // A send under way when a stop comes may take until the stop's
            // deadline, not longer.
            let mut watch_stop = stop.clone();
            tokio::select! {
                _ = send_batch(&l, &client, &batch, timeout) => {}
                _ = past_stop_deadline(&mut watch_stop) => {
                    l.settings.metrics.dropped(&l.url, batch.len());
                }
            }
        }
    };
    if mode.drain {
        loop {
            let left = mode.deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || l.queue_len() == 0 {
                break;
            }
            let batch = l.batch();
            send_batch(&l, &client, &batch, timeout.min(left)).await;
        }
    }
    let rest = l.queue.lock().unwrap_or_else(|p| p.into_inner()).take_all();
    if !rest.is_empty() {
        warn!(alertmanager = %l.url, count = rest.len(), "Alert notification queue not drained on shutdown, dropping alerts");
        l.settings.metrics.dropped(&l.url, rest.len());
    }
    l.settings.metrics.remove_alertmanager(&l.url);
}

/// What a set found: URLs sent to, URLs dropped by relabeling, and a loop
/// per URL sent to.
#[derive(Default)]
struct Found {
    active: Vec<String>,
    dropped: Vec<String>,
    loops: BTreeMap<String, Arc<SendLoop>>,
}

/// One `alertmanagers` entry at work.
pub(crate) struct AlertmanagerSet {
    pub(crate) cfg: AlertmanagerConfig,
    client: JobClient,
    names: ValidationScheme,
    settings: LoopSettings,
    drain: bool,
    drain_timeout: Duration,
    found: Mutex<Found>,
    discovery_stop: watch::Sender<bool>,
}

impl AlertmanagerSet {
    /// Builds the set's HTTP client (the `index`-th of the configuration),
    /// finds its static Alertmanagers and starts its discovery.
    pub(crate) fn start(
        index: usize,
        cfg: &AlertmanagerConfig,
        names: ValidationScheme,
        settings: LoopSettings,
        drain: bool,
        drain_timeout: Duration,
    ) -> Result<Arc<AlertmanagerSet>, ferrite_scrape::client::ClientError> {
        let client = JobClient::new(&cfg.http_client)?;
        let (discovery_stop, stop_rx) = watch::channel(false);
        let set = Arc::new(AlertmanagerSet {
            cfg: cfg.clone(),
            client,
            names,
            settings,
            drain,
            drain_timeout,
            found: Mutex::new(Found::default()),
            discovery_stop,
        });
        set.sync(&cfg.static_configs);
        let sd_name = format!("config-{index}");
        let metrics = DiscoveryMetrics::global();
        metrics.updated("notify", &sd_name, target_count(&cfg.static_configs), false);
        let configs = DiscoveryConfigs {
            // As Prometheus names a set in its discovery metrics.
            name: sd_name.clone(),
            file: cfg.file_sd_configs.clone(),
            dns: cfg.dns_sd_configs.clone(),
            http: cfg.http_sd_configs.clone(),
        };
        if !configs.is_empty() {
            let (tx, mut rx) = watch::channel(None);
            tokio::spawn(discovery::run(configs, tx, stop_rx));
            let weak: Weak<AlertmanagerSet> = Arc::downgrade(&set);
            let statics = cfg.static_configs.clone();
            tokio::spawn(async move {
                while rx.changed().await.is_ok() {
                    let Some(set) = weak.upgrade() else { return };
                    let discovered = rx.borrow_and_update().clone().unwrap_or_default();
                    let mut groups = statics.clone();
                    groups.extend(discovered);
                    DiscoveryMetrics::global().updated(
                        "notify",
                        &sd_name,
                        target_count(&groups),
                        true,
                    );
                    set.sync(&groups);
                }
            });
        }
        Ok(set)
    }

    /// Makes the set's Alertmanagers those of `groups`: loops started for
    /// new URLs, stopped (drained) for gone ones.
    pub(crate) fn sync(&self, groups: &[TargetGroup]) {
        let mut active = Vec::new();
        let mut dropped = Vec::new();
        for g in groups {
            match alertmanagers_from_group(g, &self.cfg, self.names) {
                Ok((kept, gone)) => {
                    active.extend(kept.iter().map(alertmanager_url));
                    dropped.extend(gone.iter().map(alertmanager_url));
                }
                Err(e) => error!(err = %e, "Creating discovered Alertmanagers failed"),
            }
        }
        let mut seen = std::collections::HashSet::new();
        active.retain(|u| seen.insert(u.clone()));
        let timeout = Duration::from_millis(u64::try_from(self.cfg.timeout_ms).unwrap_or(0));
        let mut found = self.found.lock().unwrap_or_else(|p| p.into_inner());
        let mut loops = std::mem::take(&mut found.loops);
        let mut kept = BTreeMap::new();
        for url in &active {
            let l = loops.remove(url).unwrap_or_else(|| {
                SendLoop::start(
                    url.clone(),
                    self.client.clone(),
                    timeout,
                    self.settings.clone(),
                )
            });
            kept.insert(url.clone(), l);
        }
        *found = Found {
            active,
            dropped,
            loops: kept,
        };
        drop(found);
        // The loops of Alertmanagers gone: stopped in the background.
        if !loops.is_empty() {
            let mode = self.stop_mode();
            tokio::spawn(async move {
                for l in loops.values() {
                    l.request_stop(mode);
                }
                for l in loops.values() {
                    l.wait().await;
                }
            });
        }
    }

    fn stop_mode(&self) -> StopMode {
        StopMode {
            drain: self.drain,
            deadline: Instant::now() + self.drain_timeout,
        }
    }

    /// Relabels `alerts` by the set's `alert_relabel_configs` and queues
    /// them for every Alertmanager of the set.
    pub(crate) fn send(&self, alerts: &[Alert]) {
        let alerts = if self.cfg.alert_relabel_configs.is_empty() {
            alerts.to_vec()
        } else {
            relabel_alerts(
                alerts.to_vec(),
                &Labels::empty(),
                &self.cfg.alert_relabel_configs,
                self.names,
            )
        };
        if alerts.is_empty() {
            return;
        }
        let found = self.found.lock().unwrap_or_else(|p| p.into_inner());
        for l in found.loops.values() {
            l.push(alerts.clone());
        }
    }

    /// The URLs sent to and those dropped.
    pub(crate) fn urls(&self) -> (Vec<String>, Vec<String>) {
        let found = self.found.lock().unwrap_or_else(|p| p.into_inner());
        (found.active.clone(), found.dropped.clone())
    }

    /// Stops discovery and every loop (draining them when `mode` says so),
    /// and waits for them.
    pub(crate) async fn stop(&self, mode: StopMode) {
        let _ = self.discovery_stop.send(true);
        let loops: Vec<Arc<SendLoop>> = {
            let mut found = self.found.lock().unwrap_or_else(|p| p.into_inner());
            std::mem::take(&mut found.loops).into_values().collect()
        };
        for l in &loops {
            l.request_stop(mode);
        }
        for l in &loops {
            l.wait().await;
        }
    }

    /// Stops the set in the background (a set a reload replaced).
    pub(crate) fn retire(self: Arc<Self>) {
        let mode = self.stop_mode();
        tokio::spawn(async move { self.stop(mode).await });
    }
}

/// How many targets the groups list, as `prometheus_sd_discovered_targets`
/// counts them.
fn target_count(groups: &[TargetGroup]) -> usize {
    groups.iter().map(|g| g.targets.len()).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn am_config(text: &str) -> AlertmanagerConfig {
        let cfg = ferrite_config::Config::parse(text, "p.yml").expect("config");
        cfg.alerting.alertmanagers[0].clone()
    }

    #[test]
    fn urls_from_targets_relabeled() {
        let cfg = am_config(
            "alerting:\n  alertmanagers:\n    - path_prefix: /prefix\n      scheme: https\n      relabel_configs:\n        - {source_labels: [__address__], regex: 'drop.*', action: drop}\n        - {source_labels: [team], target_label: __alerts_path__, regex: '(.+)', replacement: '/$1/api/v2/alerts'}\n",
        );
        let group = TargetGroup {
            targets: vec!["a:9093".into(), "drop:9093".into()],
            labels: Labels::from_pairs(&[("team", "x")]),
        };
        let (kept, dropped) =
            alertmanagers_from_group(&group, &cfg, ValidationScheme::Utf8).expect("group");
        assert_eq!(
            kept.iter().map(alertmanager_url).collect::<Vec<_>>(),
            ["https://a:9093/x/api/v2/alerts"]
        );
        assert_eq!(
            dropped.iter().map(alertmanager_url).collect::<Vec<_>>(),
            ["https://drop:9093/prefix/api/v2/alerts"]
        );
        let plain =
            am_config("alerting:\n  alertmanagers:\n    - static_configs: [{targets: [h:1]}]\n");
        let group = TargetGroup {
            targets: vec!["h:1".into()],
            labels: Labels::empty(),
        };
        let (kept, _) =
            alertmanagers_from_group(&group, &plain, ValidationScheme::Utf8).expect("group");
        assert_eq!(alertmanager_url(&kept[0]), "http://h:1/api/v2/alerts");
    }

    #[test]
    fn a_url_address_fails_the_group() {
        let cfg = am_config(
            "alerting:\n  alertmanagers:\n    - relabel_configs: [{target_label: __address__, replacement: 'h/x'}]\n",
        );
        let group = TargetGroup {
            targets: vec!["h:1".into()],
            labels: Labels::empty(),
        };
        let e = alertmanagers_from_group(&group, &cfg, ValidationScheme::Utf8).expect_err("fails");
        assert_eq!(e, "\"h/x\" is not a valid hostname");
    }
}
