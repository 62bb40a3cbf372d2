//! The notifier's metrics, with Prometheus v3.16's names, help texts and
//! labels (`alertmanager`: the Alertmanager's URL), for the server's
//! `/metrics`:
//!
//! - `prometheus_notifications_alertmanagers_discovered` (gauge);
//! - `prometheus_notifications_dropped_total`, `_errors_total`,
//!   `_sent_total` (counters, per Alertmanager);
//! - `prometheus_notifications_latency_histogram_seconds` (histogram,
//!   buckets 0.01, 0.1, 1, 10) and `prometheus_notifications_latency_seconds`
//!   (summary, quantiles 0.5, 0.9, 0.99 over the last ten minutes, kept
//!   as every summary is: [`ferrite_model::selfmetrics::summary`]);
//! - `prometheus_notifications_queue_length` (per Alertmanager) and
//!   `prometheus_notifications_queue_capacity` (gauges).
//!
//! An Alertmanager's series appear (at zero) when it is discovered and go
//! away when it is no longer, as in Prometheus.

use std::collections::BTreeMap;
use std::sync::Mutex;

use ferrite_model::selfmetrics::summary::THREE_QUANTILES;
use ferrite_model::selfmetrics::{Desc, TimingDef, TimingVec};

pub use ferrite_model::selfmetrics::{Family, Sample};

/// The send latency, a summary and a histogram per Alertmanager.
const LATENCY: TimingDef = TimingDef {
    summary: Some(Desc {
        name: "prometheus_notifications_latency_seconds",
        help: "Latency quantiles for sending alert notifications.",
    }),
    histogram: Some(Desc {
        name: "prometheus_notifications_latency_histogram_seconds",
        help: "Latency histogram for sending alert notifications.",
    }),
    labels: &["alertmanager"],
    objectives: THREE_QUANTILES,
};

#[derive(Debug, Default)]
struct PerAlertmanager {
    /// Send loops for this URL (an old set's loop may still drain while
    /// a new set's runs): the series go when the last one ends.
    users: usize,
    sent: u64,
    errors: u64,
    dropped: u64,
    queue_length: usize,
}

/// The counters and gauges, by Alertmanager URL.
#[derive(Debug)]
pub struct Metrics {
    capacity: usize,
    per_am: Mutex<BTreeMap<String, PerAlertmanager>>,
    latency: TimingVec,
}

impl Metrics {
    /// Metrics for queues of `capacity` alerts.
    pub fn new(capacity: usize) -> Self {
        Metrics {
            capacity,
            per_am: Mutex::new(BTreeMap::new()),
            latency: TimingVec::new(LATENCY),
        }
    }

    fn with(&self, url: &str, f: impl FnOnce(&mut PerAlertmanager)) {
        let mut map = self.per_am.lock().unwrap_or_else(|p| p.into_inner());
        f(map.entry(url.to_string()).or_default());
    }

    /// Starts an Alertmanager's series at zero.
    pub fn add_alertmanager(&self, url: &str) {
        self.with(url, |m| m.users += 1);
        self.latency.with(&[url]);
    }

    /// Removes an Alertmanager's series.
    pub fn remove_alertmanager(&self, url: &str) {
        let mut map = self.per_am.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(m) = map.get_mut(url) {
            m.users = m.users.saturating_sub(1);
            if m.users == 0 {
                map.remove(url);
                self.latency.remove(&[url]);
            }
        }
    }

    /// Counts alerts sent.
    pub fn sent(&self, url: &str, n: usize) {
        self.with(url, |m| m.sent += n as u64);
    }

    /// Counts alerts a failed send affected.
    pub fn errors(&self, url: &str, n: usize) {
        self.with(url, |m| m.errors += n as u64);
    }

    /// Counts alerts dropped (a full queue, a failed send, a stop without
    /// draining).
    pub fn dropped(&self, url: &str, n: usize) {
        if n > 0 {
            self.with(url, |m| m.dropped += n as u64);
        }
    }

    /// Sets an Alertmanager's queue length.
    pub fn queue_length(&self, url: &str, n: usize) {
        self.with(url, |m| m.queue_length = n);
    }

    /// Records a successful send's latency.
    pub fn observe(&self, url: &str, seconds: f64) {
        self.latency.observe(&[url], seconds);
    }

    /// `(sent, errors, dropped, queue length)` of an Alertmanager, if it
    /// has series.
    pub fn counts(&self, url: &str) -> Option<(u64, u64, u64, usize)> {
        let map = self.per_am.lock().unwrap_or_else(|p| p.into_inner());
        map.get(url)
            .map(|m| (m.sent, m.errors, m.dropped, m.queue_length))
    }

    /// The families, in name order, with `discovered` Alertmanagers.
    pub fn families(&self, discovered: usize) -> Vec<Family> {
        let map = self.per_am.lock().unwrap_or_else(|p| p.into_inner());
        let am = |url: &String| vec![("alertmanager", url.clone())];
        let per = |name: &'static str,
                   kind: &'static str,
                   help: &'static str,
                   value: &dyn Fn(&PerAlertmanager) -> f64| Family {
            name,
            kind,
            help,
            samples: map
                .iter()
                .map(|(url, m)| Sample {
                    name: name.to_string(),
                    labels: am(url),
                    value: value(m),
                })
                .collect(),
        };
        let mut out = vec![Family {
            name: "prometheus_notifications_alertmanagers_discovered",
            kind: "gauge",
            help: "The number of alertmanagers discovered and active.",
            samples: vec![Sample {
                name: "prometheus_notifications_alertmanagers_discovered".into(),
                labels: Vec::new(),
                value: discovered as f64,
            }],
        }];
        out.push(per(
            "prometheus_notifications_dropped_total",
            "counter",
            "Total number of alerts dropped due to errors when sending to Alertmanager.",
            &|m| m.dropped as f64,
        ));
        out.push(per(
            "prometheus_notifications_errors_total",
            "counter",
            "Total number of sent alerts affected by errors.",
            &|m| m.errors as f64,
        ));
        out.extend(self.latency.families());
        out.push(Family {
            name: "prometheus_notifications_queue_capacity",
            kind: "gauge",
            help: "The capacity of the alert notifications queue.",
            samples: vec![Sample {
                name: "prometheus_notifications_queue_capacity".into(),
                labels: Vec::new(),
                value: self.capacity as f64,
            }],
        });
        out.push(per(
            "prometheus_notifications_queue_length",
            "gauge",
            "The number of alert notifications in the queue.",
            &|m| m.queue_length as f64,
        ));
        out.push(per(
            "prometheus_notifications_sent_total",
            "counter",
            "Total number of alerts sent.",
            &|m| m.sent as f64,
        ));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_per_alertmanager() {
        let m = Metrics::new(10);
        m.add_alertmanager("http://a/api/v2/alerts");
        m.sent("http://a/api/v2/alerts", 3);
        m.observe("http://a/api/v2/alerts", 0.05);
        m.errors("http://a/api/v2/alerts", 2);
        m.dropped("http://a/api/v2/alerts", 2);
        let fams = m.families(1);
        let names: Vec<_> = fams.iter().map(|f| f.name).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(names, sorted);
        let value = |name: &str| {
            fams.iter()
                .flat_map(|f| &f.samples)
                .find(|s| s.name == name)
                .map(|s| s.value)
        };
        assert_eq!(value("prometheus_notifications_sent_total"), Some(3.0));
        assert_eq!(value("prometheus_notifications_errors_total"), Some(2.0));
        assert_eq!(value("prometheus_notifications_queue_capacity"), Some(10.0));
        assert_eq!(
            value("prometheus_notifications_latency_seconds"),
            Some(0.05)
        );
        m.remove_alertmanager("http://a/api/v2/alerts");
        assert_eq!(value_after(&m), None);
    }

    fn value_after(m: &Metrics) -> Option<f64> {
        m.families(0)
            .iter()
            .flat_map(|f| f.samples.clone())
            .find(|s| s.name == "prometheus_notifications_sent_total")
            .map(|s| s.value)
    }
}
