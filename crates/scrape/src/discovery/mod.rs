//! Service discovery: where a job's targets come from besides its
//! `static_configs`.
//!
//! - [`file`] reads files of target groups (`file_sd_configs`);
//! - [`dns`] looks up DNS records (`dns_sd_configs`);
//! - [`http`] fetches target groups from URLs (`http_sd_configs`);
//! - [`metrics`] counts what they do (`prometheus_sd_*`).

pub mod dns;
pub mod file;
pub mod http;
pub mod metrics;

use ferrite_config::discovery::{DnsSdConfig, FileSdConfig, HttpSdConfig};
use ferrite_config::TargetGroup;
use tokio::sync::watch;

/// A job's discovery providers: their configurations.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DiscoveryConfigs {
    /// The config's name in the metrics: the job's, or `config-<i>` for
    /// the i-th Alertmanager set.
    pub name: String,
    /// `file_sd_configs`
    pub file: Vec<FileSdConfig>,
    /// `dns_sd_configs`
    pub dns: Vec<DnsSdConfig>,
    /// `http_sd_configs`
    pub http: Vec<HttpSdConfig>,
}

impl DiscoveryConfigs {
    /// Whether the job discovers nothing beyond its static targets.
    pub fn is_empty(&self) -> bool {
        self.file.is_empty() && self.dns.is_empty() && self.http.is_empty()
    }
}

/// Runs a job's providers until `stop` turns true, sending every change
/// of their groups (all of them) on `groups`. Files are checked every
/// [`file::POLL`], names looked up and URLs fetched every
/// `refresh_interval`.
pub async fn run(
    configs: DiscoveryConfigs,
    groups: watch::Sender<Option<Vec<TargetGroup>>>,
    mut stop: watch::Receiver<bool>,
) {
    let mut files = (!configs.file.is_empty()).then(|| file::FileDiscovery::new(configs.file));
    let mut names = (!configs.dns.is_empty())
        .then(|| dns::DnsDiscovery::new(configs.dns, configs.name.clone()));
    let mut urls = (!configs.http.is_empty())
        .then(|| http::HttpDiscovery::new(configs.http, configs.name.clone()));
    let mut next_lookup = tokio::time::Instant::now();
    let mut first = true;
    loop {
        let mut changed = first;
        first = false;
        if let Some(f) = files.as_mut() {
            changed |= f.refresh();
        }
        if let Some(d) = names.as_mut() {
            if tokio::time::Instant::now() >= next_lookup {
                changed |= d.refresh().await;
                next_lookup = tokio::time::Instant::now() + d.refresh_interval();
            }
        }
        if let Some(h) = urls.as_mut() {
            changed |= h.refresh_due().await;
        }
        if changed {
            let mut all = files.as_ref().map(|f| f.groups()).unwrap_or_default();
            all.extend(names.as_ref().map(|d| d.groups()).unwrap_or_default());
            all.extend(urls.as_ref().map(|h| h.groups()).unwrap_or_default());
            groups.send_replace(Some(all));
        }
        let now = tokio::time::Instant::now();
        let mut wait = file::POLL;
        if names.is_some() {
            wait = wait.min(next_lookup.saturating_duration_since(now));
        }
        if let Some(due) = urls.as_ref().and_then(|h| h.next_due()) {
            wait = wait.min(due.saturating_duration_since(now));
        }
        tokio::select! {
            _ = tokio::time::sleep(wait.max(std::time::Duration::from_millis(100))) => {}
            _ = stop.wait_for(|s| *s) => return,
        }
    }
}
