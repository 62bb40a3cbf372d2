//! An alert as the notifier sends it, and the relabeling every alert goes
//! through before it is queued: the external labels added (an alert's own
//! label of the same name wins), then the `alert_relabel_configs` rules, as
//! Prometheus' `relabelAlerts` does.

use std::time::SystemTime;

use ferrite_config::relabel::{self, RelabelConfig};
use ferrite_model::{Labels, ValidationScheme};

/// One alert: its identity (`labels`, with at least `alertname`), what it
/// says (`annotations`), when it was active, and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Alert {
    /// The labels: the alert's identity, matched and routed on by
    /// Alertmanager.
    pub labels: Labels,
    /// Extra information that does not identify the alert.
    pub annotations: Labels,
    /// When it became active (`None`: unknown, sent as Go's zero time).
    pub starts_at: Option<SystemTime>,
    /// When it ends or ended (`None`: open-ended); an end in the past
    /// resolves the alert.
    pub ends_at: Option<SystemTime>,
    /// A link to what produced it (empty: none).
    pub generator_url: String,
}

impl Alert {
    /// Its `alertname` label.
    pub fn name(&self) -> &str {
        self.labels.get("alertname")
    }

    /// Whether it ended at or before `at`.
    pub fn resolved_at(&self, at: SystemTime) -> bool {
        self.ends_at.is_some_and(|end| end <= at)
    }
}

/// The alerts with `external` labels added where an alert has no label of
/// that name, then relabeled by `rules` (an alert a rule drops is left
/// out).
pub fn relabel_alerts(
    alerts: Vec<Alert>,
    external: &Labels,
    rules: &[RelabelConfig],
    names: ValidationScheme,
) -> Vec<Alert> {
    alerts
        .into_iter()
        .filter_map(|mut a| {
            if !external.is_empty() {
                let mut labels = a.labels.clone();
                for l in external.iter() {
                    if a.labels.get(&l.name).is_empty() {
                        labels.set(&l.name, &l.value);
                    }
                }
                a.labels = labels;
            }
            if !rules.is_empty() {
                a.labels = relabel::apply(&a.labels, rules, names)?;
            }
            Some(a)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alert(labels: &[(&str, &str)]) -> Alert {
        Alert {
            labels: Labels::from_pairs(labels),
            annotations: Labels::empty(),
            starts_at: None,
            ends_at: None,
            generator_url: String::new(),
        }
    }

    #[test]
    fn external_labels_then_rules() {
        let external = Labels::from_pairs(&[("region", "eu"), ("env", "prod")]);
        let rules = relabel::parse_rules(
            "- {source_labels: [severity], regex: debug, action: drop}\n- {target_label: team, replacement: sre}\n",
        )
        .expect("rules");
        let out = relabel_alerts(
            vec![
                alert(&[("alertname", "A"), ("env", "dev")]),
                alert(&[("alertname", "B"), ("severity", "debug")]),
            ],
            &external,
            &rules,
            ValidationScheme::Utf8,
        );
        assert_eq!(out.len(), 1);
        assert_eq!(
            out[0].labels,
            Labels::from_pairs(&[
                ("alertname", "A"),
                ("env", "dev"),
                ("region", "eu"),
                ("team", "sre")
            ])
        );
    }

    #[test]
    fn resolved() {
        let mut a = alert(&[("alertname", "A")]);
        let now = SystemTime::now();
        assert!(!a.resolved_at(now));
        a.ends_at = Some(now);
        assert!(a.resolved_at(now));
        assert_eq!(a.name(), "A");
    }
}
