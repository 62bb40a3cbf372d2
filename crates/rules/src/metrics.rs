//! Rule evaluation's metrics under Prometheus' names
//! (`prometheus_rule_*`), one set per group (label `rule_group`,
//! `<file>;<name>`), for the server's `/metrics`.
//!
//! Beside them, process-wide as in Prometheus (one set for all groups):
//! how long each rule's evaluation took
//! (`prometheus_rule_evaluation_duration_seconds`) and each group's
//! iteration (`prometheus_rule_group_duration_seconds`), each a summary
//! with a histogram twin ([`timing_families`]).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

use ferrite_model::selfmetrics::summary::{FIVE_QUANTILES, THREE_QUANTILES};
use ferrite_model::selfmetrics::{Desc, TimingDef, TimingVec};

/// How long each rule's evaluation took, all groups together.
pub static EVALUATION_DURATION: TimingVec = TimingVec::new(TimingDef {
    summary: Some(Desc {
        name: "prometheus_rule_evaluation_duration_seconds",
        help: "The duration for a rule to execute.",
    }),
    histogram: Some(Desc {
        name: "prometheus_rule_evaluation_duration_histogram_seconds",
        help: "The duration for a rule to execute.",
    }),
    labels: &[],
    objectives: THREE_QUANTILES,
});

/// How long each group's iteration took, all groups together.
pub static GROUP_DURATION: TimingVec = TimingVec::new(TimingDef {
    summary: Some(Desc {
        name: "prometheus_rule_group_duration_seconds",
        help: "The duration of rule group evaluations.",
    }),
    histogram: Some(Desc {
        name: "prometheus_rule_group_duration_histogram_seconds",
        help: "The duration of rule group evaluations.",
    }),
    labels: &[],
    objectives: FIVE_QUANTILES,
});

/// The evaluation and group duration families, in name order.
pub fn timing_families() -> Vec<ferrite_model::selfmetrics::Family> {
    let mut out = EVALUATION_DURATION.families();
    out.extend(GROUP_DURATION.families());
    out.sort_by_key(|f| f.name);
    out
}

/// A group's counters and gauges.
#[derive(Debug, Default)]
pub struct GroupMetrics {
    /// `prometheus_rule_group_iterations_missed_total`
    pub iterations_missed: AtomicU64,
    /// `prometheus_rule_group_iterations_total`
    pub iterations: AtomicU64,
    /// `prometheus_rule_evaluations_total`
    pub evaluations: AtomicU64,
    /// `prometheus_rule_evaluation_failures_total`
    pub evaluation_failures: AtomicU64,
    /// `prometheus_rule_group_interval_seconds` (f64 bits)
    pub interval_seconds: AtomicU64,
    /// `prometheus_rule_group_last_evaluation_timestamp_seconds` (f64 bits)
    pub last_evaluation_timestamp_seconds: AtomicU64,
    /// `prometheus_rule_group_last_duration_seconds` (f64 bits)
    pub last_duration_seconds: AtomicU64,
    /// `prometheus_rule_group_last_rule_duration_sum_seconds` (f64 bits)
    pub last_rule_duration_sum_seconds: AtomicU64,
    /// `prometheus_rule_group_rules` (f64 bits)
    pub rules: AtomicU64,
    /// `prometheus_rule_group_last_evaluation_samples` (f64 bits)
    pub last_evaluation_samples: AtomicU64,
    /// `prometheus_rule_group_last_restore_duration_seconds` (f64 bits;
    /// no sample until the group restored alert state)
    pub last_restore_duration_seconds: AtomicU64,
    /// Whether the group restored alert state (so the gauge above shows).
    pub restored: AtomicBool,
}

impl GroupMetrics {
    /// Adds `n` to a counter.
    pub fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Relaxed);
    }

    /// Sets a gauge.
    pub fn set(gauge: &AtomicU64, v: f64) {
        gauge.store(v.to_bits(), Relaxed);
    }

    fn gauge(g: &AtomicU64) -> f64 {
        f64::from_bits(g.load(Relaxed))
    }

    /// Records how long restoring alert state took.
    pub fn set_restore_duration(&self, seconds: f64) {
        Self::set(&self.last_restore_duration_seconds, seconds);
        self.restored.store(true, Relaxed);
    }

    /// The restore duration, NaN (no sample) before any restore.
    fn restore_duration(&self) -> f64 {
        if self.restored.load(Relaxed) {
            Self::gauge(&self.last_restore_duration_seconds)
        } else {
            f64::NAN
        }
    }
}

/// A metric family as `/metrics` shows it: one sample per group.
#[derive(Debug, Clone, PartialEq)]
pub struct Family {
    /// Its name.
    pub name: &'static str,
    /// `counter` or `gauge`.
    pub kind: &'static str,
    /// Its help text (Prometheus').
    pub help: &'static str,
    /// Each group's value, by its `rule_group` label (`<file>;<name>`).
    pub samples: Vec<(String, f64)>,
}

/// Every family, in name order, with a sample for each group given (in
/// the order given); none when there are no groups.
pub fn families(groups: &[(String, &GroupMetrics)]) -> Vec<Family> {
    if groups.is_empty() {
        return Vec::new();
    }
    type Get = fn(&GroupMetrics) -> f64;
    let all: [(&'static str, &'static str, &'static str, Get); 11] = [
        ("prometheus_rule_evaluation_failures_total", "counter", "The total number of rule evaluation failures.", |m| m.evaluation_failures.load(Relaxed) as f64),
        ("prometheus_rule_evaluations_total", "counter", "The total number of rule evaluations.", |m| m.evaluations.load(Relaxed) as f64),
        ("prometheus_rule_group_interval_seconds", "gauge", "The interval of a rule group.", |m| GroupMetrics::gauge(&m.interval_seconds)),
        ("prometheus_rule_group_iterations_missed_total", "counter", "The total number of rule group evaluations missed due to slow rule group evaluation.", |m| m.iterations_missed.load(Relaxed) as f64),
        ("prometheus_rule_group_iterations_total", "counter", "The total number of scheduled rule group evaluations, whether executed or missed.", |m| m.iterations.load(Relaxed) as f64),
        ("prometheus_rule_group_last_duration_seconds", "gauge", "The duration of the last rule group evaluation.", |m| GroupMetrics::gauge(&m.last_duration_seconds)),
        ("prometheus_rule_group_last_evaluation_samples", "gauge", "The number of samples returned during the last rule group evaluation.", |m| GroupMetrics::gauge(&m.last_evaluation_samples)),
        ("prometheus_rule_group_last_evaluation_timestamp_seconds", "gauge", "The timestamp of the last rule group evaluation in seconds.", |m| GroupMetrics::gauge(&m.last_evaluation_timestamp_seconds)),
        ("prometheus_rule_group_last_restore_duration_seconds", "gauge", "The duration of the last alert rules alerts restoration using the `ALERTS_FOR_STATE` series.", |m| m.restore_duration()),
        ("prometheus_rule_group_last_rule_duration_sum_seconds", "gauge", "The sum of time in seconds it took to evaluate each rule in the group regardless of concurrency. This should be higher than the group duration if rules are evaluated concurrently.", |m| GroupMetrics::gauge(&m.last_rule_duration_sum_seconds)),
        ("prometheus_rule_group_rules", "gauge", "The number of rules.", |m| GroupMetrics::gauge(&m.rules)),
    ];
    all.into_iter()
        .map(|(name, kind, help, get)| Family {
            name,
            kind,
            help,
            samples: groups
                .iter()
                .map(|(k, m)| (k.clone(), get(m)))
                .filter(|(_, v)| !v.is_nan())
                .collect(),
        })
        .filter(|f| !f.samples.is_empty())
        .collect()
}
