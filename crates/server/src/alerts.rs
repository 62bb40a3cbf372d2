//! Alerts: `/api/v1/alerts`, the alerting rules' part of `/api/v1/rules`,
//! and the bridge that hands the rules' alerts to the notifier as
//! Prometheus' `sendAlerts` does.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use axum::extract::State;
use axum::response::Json;
use ferrite_model::gofloat::format_e;
use ferrite_model::goquote::query_escape;
use ferrite_model::Labels;
use ferrite_notifier::Notifier;
use ferrite_rules::alerting::{Alert, AlertNotifier, AlertingRule};
use serde_json::{json, Map, Value};

use crate::status::success;
use crate::AppState;

/// `/api/v1/alerts`: every pending and firing alert of every alerting
/// rule.
pub async fn alerts(State(s): State<Arc<AppState>>) -> Json<Value> {
    let mut out = Vec::new();
    for g in s.rules.groups().await {
        for rule in &g.rules {
            if let ferrite_rules::rule::Rule::Alerting(r) = rule {
                out.extend(r.active_alerts().iter().map(alert_json));
            }
        }
    }
    success(json!({ "alerts": out }))
}

/// An alerting rule as `/api/v1/rules` shows it; its alerts left out
/// when `exclude_alerts` is set.
pub fn alerting_rule_json(r: &AlertingRule, exclude_alerts: bool) -> Value {
    let state = r.status.get();
    let alerts: Vec<Value> = if exclude_alerts {
        Vec::new()
    } else {
        r.active_alerts().iter().map(alert_json).collect()
    };
    let mut o = Map::new();
    o.insert("state".into(), json!(r.state().as_str()));
    o.insert("name".into(), json!(r.name));
    o.insert("query".into(), json!(r.query));
    o.insert(
        "duration".into(),
        crate::rules::seconds(r.hold_ns as f64 / 1e9),
    );
    o.insert(
        "keepFiringFor".into(),
        crate::rules::seconds(r.keep_firing_for_ns as f64 / 1e9),
    );
    o.insert("labels".into(), string_map(&r.labels));
    o.insert("annotations".into(), string_map(&r.annotations));
    o.insert(
        "alerts".into(),
        if exclude_alerts {
            Value::Null
        } else {
            Value::Array(alerts)
        },
    );
    o.insert("health".into(), json!(state.health.as_str()));
    if let Some(e) = &state.last_error {
        o.insert("lastError".into(), json!(e));
    }
    o.insert(
        "evaluationTime".into(),
        crate::rules::seconds(state.evaluation_duration.as_secs_f64()),
    );
    o.insert(
        "lastEvaluation".into(),
        crate::rules::go_time(state.last_evaluation),
    );
    o.insert("type".into(), json!("alerting"));
    Value::Object(o)
}

/// One alert as Prometheus' API writes it.
fn alert_json(a: &Alert) -> Value {
    let mut o = Map::new();
    o.insert("labels".into(), labels_json(&a.labels));
    o.insert("annotations".into(), labels_json(&a.annotations));
    o.insert("state".into(), json!(a.state.as_str()));
    o.insert(
        "activeAt".into(),
        crate::rules::go_time(Some(unix_nanos(a.active_at))),
    );
    if let Some(since) = a.keep_firing_since {
        o.insert(
            "keepFiringSince".into(),
            crate::rules::go_time(Some(unix_nanos(since))),
        );
    }
    o.insert("value".into(), json!(format_e(a.value)));
    Value::Object(o)
}

/// Labels as a JSON object in label order.
fn labels_json(ls: &Labels) -> Value {
    Value::Object(
        ls.iter()
            .map(|l| (l.name.to_string(), Value::String(l.value.to_string())))
            .collect(),
    )
}

/// A rule's labels or annotations as a JSON object.
fn string_map(m: &std::collections::BTreeMap<String, String>) -> Value {
    Value::Object(
        m.iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect(),
    )
}

/// A Unix time in nanoseconds as a `SystemTime`.
fn unix_nanos(ns: i64) -> SystemTime {
    if ns >= 0 {
        SystemTime::UNIX_EPOCH + Duration::from_nanos(ns as u64)
    } else {
        SystemTime::UNIX_EPOCH - Duration::from_nanos(ns.unsigned_abs())
    }
}

/// The rules' alerts handed to the notifier (Prometheus' `sendAlerts`):
/// `startsAt` is when the alert fired, `endsAt` when it was resolved or
/// else until when it is valid, and the generator URL links to the
/// rule's expression in the table view.
pub struct NotifierBridge {
    /// Where the alerts go.
    pub notifier: Arc<Notifier>,
    /// The external URL (`--web.external-url`, or Prometheus' default).
    pub external_url: String,
}

impl AlertNotifier for NotifierBridge {
    fn send(&self, expr: &str, alerts: Vec<Alert>) {
        let generator_url = format!(
            "{}/graph?g0.expr={}&g0.tab=1",
            self.external_url,
            query_escape(expr)
        );
        let out = alerts
            .into_iter()
            .map(|a| ferrite_notifier::Alert {
                labels: a.labels,
                annotations: a.annotations,
                starts_at: a.fired_at.map(unix_nanos),
                ends_at: a.resolved_at.or(a.valid_until).map(unix_nanos),
                generator_url: generator_url.clone(),
            })
            .collect();
        self.notifier.send(out);
    }
}

/// Prometheus' external URL: `--web.external-url` without a trailing
/// slash, or `http://<host name>:<port>` when not given.
pub fn external_url(flag: &str, listen_port: u16) -> String {
    if flag.is_empty() {
        return format!(
            "http://{}:{listen_port}",
            ferrite_scrape::offset::host_name()
        );
    }
    let (before_query, rest) = match flag.find(['?', '#']) {
        Some(i) => flag.split_at(i),
        None => (flag, ""),
    };
    format!("{}{rest}", before_query.trim_end_matches('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_escape_as_go() {
        assert_eq!(
            query_escape("up{job=\"a b\"} == 0"),
            "up%7Bjob%3D%22a+b%22%7D+%3D%3D+0"
        );
    }

    #[test]
    fn external_url_as_prometheus_computes_it() {
        assert_eq!(
            external_url("http://example.com:9090/prometheus/", 9090),
            "http://example.com:9090/prometheus"
        );
        assert_eq!(external_url("https://x/", 1), "https://x");
        assert!(external_url("", 9091).ends_with(":9091"));
    }
}
