//! The scrape APIs, in Prometheus' shapes: `/api/v1/targets` (active and
//! dropped targets, `state` and `scrapePool` filters),
//! `/api/v1/scrape_pools`, `/api/v1/targets/metadata` and
//! `/api/v1/metadata` (the metric metadata the targets expose).
//!
//! Active targets are listed by pool name, then by scrape URL (Prometheus
//! lists a pool's targets in no fixed order). A target on this host is
//! given a `globalUrl` reachable from elsewhere, as Prometheus derives it
//! from `--web.external-url` (or the host name and the listen port).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use axum::extract::State;
use axum::response::Json;
use ferrite_model::Labels;
use ferrite_scrape::manager::{PoolSnapshot, TargetSnapshot};
use ferrite_scrape::metadata::MetricMetadata;
use serde_json::{json, Map, Value};

use crate::query::{ApiError, Params};
use crate::selector::parse_selector;
use crate::status::success;
use crate::AppState;

/// The scheme and host under which this server is reached from elsewhere
/// (Prometheus' `GlobalURLOptions`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlobalUrl {
    /// The external URL's scheme.
    pub scheme: String,
    /// The external URL's host (with port).
    pub host: String,
    /// The port this server listens on.
    pub listen_port: u16,
}

impl GlobalUrl {
    /// From `--web.external-url` (empty: `http://<host name>:<port>`).
    pub fn new(external_url: &str, listen_port: u16) -> Self {
        let (scheme, rest) = external_url
            .split_once("://")
            .unwrap_or(("http", external_url));
        let host = rest.split(['/', '?', '#']).next().unwrap_or("");
        let host = if host.is_empty() {
            format!("{}:{listen_port}", ferrite_scrape::offset::host_name())
        } else {
            host.to_string()
        };
        GlobalUrl {
            scheme: if scheme.is_empty() { "http" } else { scheme }.to_string(),
            host,
            listen_port,
        }
    }

    /// A scrape URL as others reach it: a target on `localhost`,
    /// `127.0.0.1` or `::1` gets the external host (and, when it is this
    /// server's own port, the external scheme and port).
    pub fn of(&self, url: &str) -> String {
        let Some((scheme, rest)) = url.split_once("://") else {
            return url.to_string();
        };
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(end);
        let (host, port) = split_host_port(authority);
        if !matches!(host, "127.0.0.1" | "localhost" | "::1") {
            return url.to_string();
        }
        if port == Some(self.listen_port.to_string().as_str()) {
            return format!("{}://{}{tail}", self.scheme, self.host);
        }
        let (own_host, _) = split_host_port(&self.host);
        let own_host = if own_host.contains(':') {
            format!("[{own_host}]")
        } else {
            own_host.to_string()
        };
        match port {
            Some(p) => format!("{scheme}://{own_host}:{p}{tail}"),
            None => format!("{scheme}://{own_host}{tail}"),
        }
    }
}

/// `host:port`, `[v6]:port`, or a host alone.
fn split_host_port(authority: &str) -> (&str, Option<&str>) {
    if let Some(rest) = authority.strip_prefix('[') {
        if let Some((host, after)) = rest.split_once(']') {
            return (host, after.strip_prefix(':'));
        }
    }
    match authority.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') => (h, Some(p)),
        _ => (authority, None),
    }
}

/// Labels as Prometheus' JSON writes them: an object in label order.
fn labels_json(ls: &Labels) -> Value {
    let mut m = Map::new();
    for l in ls.iter() {
        m.insert(l.name.to_string(), Value::String(l.value.to_string()));
    }
    Value::Object(m)
}

/// A target's public labels (no `__` labels).
fn public_labels(ls: &Labels) -> Labels {
    Labels::from_sorted(
        ls.iter()
            .filter(|l| !l.name.starts_with("__"))
            .cloned()
            .collect(),
    )
}

/// Go's zero time for a target never scraped, else RFC 3339 with
/// nanoseconds as Go's JSON writes `time.Time` (trailing zeros dropped).
fn scrape_time(t: Option<std::time::SystemTime>) -> String {
    match t {
        None => "0001-01-01T00:00:00Z".to_string(),
        Some(t) => {
            let at = chrono::DateTime::<chrono::Utc>::from(t);
            let nanos = format!("{:09}", at.timestamp_subsec_nanos());
            let nanos = nanos.trim_end_matches('0');
            let dot = if nanos.is_empty() { "" } else { "." };
            format!("{}{dot}{nanos}Z", at.format("%Y-%m-%dT%H:%M:%S"))
        }
    }
}

fn active_json(pool: &str, t: &TargetSnapshot, global: &GlobalUrl) -> Value {
    json!({
        "discoveredLabels": labels_json(&t.discovered),
        "labels": labels_json(&public_labels(&t.labels)),
        "scrapePool": pool,
        "scrapeUrl": t.url,
        "globalUrl": global.of(&t.url),
        "lastError": t.status.last_error,
        "lastScrape": scrape_time(t.status.last_scrape),
        "lastScrapeDuration": t.status.last_duration.as_secs_f64(),
        "health": t.status.health.as_str(),
        "scrapeInterval": t.labels.get("__scrape_interval__"),
        "scrapeTimeout": t.labels.get("__scrape_timeout__"),
    })
}

/// `/api/v1/targets`
pub async fn targets(State(s): State<Arc<AppState>>, p: Params) -> Json<Value> {
    let pools = s.scrape.snapshot().await;
    let only_pool = p.get("scrapePool").unwrap_or("");
    let state = p.get("state").unwrap_or("").to_lowercase();
    let show_active = matches!(state.as_str(), "" | "any" | "active");
    let show_dropped = matches!(state.as_str(), "" | "any" | "dropped");
    let wanted = |pool: &PoolSnapshot| only_pool.is_empty() || pool.job == only_pool;
    let mut active = Vec::new();
    let mut dropped = Vec::new();
    let mut dropped_counts = Map::new();
    for pool in &pools {
        if show_dropped {
            dropped_counts.insert(pool.job.clone(), json!(pool.dropped_count));
        }
        if !wanted(pool) {
            continue;
        }
        if show_active {
            active.extend(
                pool.active
                    .iter()
                    .map(|t| active_json(&pool.job, t, &s.global_url)),
            );
        }
        if show_dropped {
            dropped.extend(
                pool.dropped
                    .iter()
                    .map(|d| json!({ "discoveredLabels": labels_json(d), "scrapePool": pool.job })),
            );
        }
    }
    let mut data = json!({ "activeTargets": active, "droppedTargets": dropped });
    if show_dropped {
        data["droppedTargetCounts"] = Value::Object(dropped_counts);
    } else {
        data["droppedTargetCounts"] = Value::Null;
    }
    success(data)
}

/// `/api/v1/targets/relabel_steps?scrapePool=<job>&labels=<JSON object>`:
/// the job's `relabel_configs` applied one by one to the labels, each
/// rule with its output (empty once a rule dropped the target) and whether
/// the target is kept, as Prometheus answers.
pub async fn relabel_steps(
    State(s): State<Arc<AppState>>,
    p: Params,
) -> Result<Json<Value>, ApiError> {
    let pool = p.get("scrapePool").unwrap_or("");
    if pool.is_empty() {
        return Err(ApiError::bad_data("no scrapePool parameter provided"));
    }
    let labels_text = p.get("labels").unwrap_or("");
    if labels_text.is_empty() {
        return Err(ApiError::bad_data("no labels parameter provided"));
    }
    let map: BTreeMap<String, String> = serde_json::from_str(labels_text)
        .map_err(|e| ApiError::bad_data(format!("error parsing labels: {e}")))?;
    let labels = Labels::new(map.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    let cfg = s.current_config();
    let job = cfg
        .scrape_configs
        .iter()
        .find(|j| j.job_name == pool)
        .ok_or_else(|| {
            ApiError::bad_data(format!(
                "error retrieving scrape config: scrape pool {pool:?} not found"
            ))
        })?;
    let outputs = ferrite_config::relabel::apply_steps(
        &labels,
        &job.relabel_configs,
        job.metric_name_validation_scheme,
    );
    let steps: Vec<Value> = job
        .relabel_configs
        .iter()
        .zip(outputs)
        .map(|(rule, out)| {
            json!({
                "rule": relabel_rule_json(rule),
                "output": labels_json(out.as_ref().unwrap_or(&Labels::empty())),
                "keep": out.is_some(),
            })
        })
        .collect();
    Ok(success(json!({ "steps": steps })))
}

/// A relabeling rule as Prometheus' `relabel.Config` marshals to JSON.
fn relabel_rule_json(rule: &ferrite_config::relabel::RelabelConfig) -> Value {
    let mut o = serde_json::Map::new();
    if !rule.source_labels.is_empty() {
        o.insert("source_labels".into(), json!(rule.source_labels));
    }
    o.insert("separator".into(), json!(rule.separator));
    o.insert("regex".into(), json!(rule.regex.as_str()));
    if rule.modulus != 0 {
        o.insert("modulus".into(), json!(rule.modulus));
    }
    if !rule.target_label.is_empty() {
        o.insert("target_label".into(), json!(rule.target_label));
    }
    o.insert("replacement".into(), json!(rule.replacement));
    if let Some(action) = rule.action {
        o.insert("action".into(), json!(action.name()));
    }
    Value::Object(o)
}

/// `/api/v1/scrape_pools`
pub async fn scrape_pools(State(s): State<Arc<AppState>>) -> Json<Value> {
    let names: Vec<String> = s
        .scrape
        .snapshot()
        .await
        .into_iter()
        .map(|p| p.job)
        .collect();
    success(json!({ "scrapePools": names }))
}

/// A `limit`-style parameter: -1 when absent, Prometheus' message when not
/// a number.
fn number_param(p: &Params, name: &str) -> Result<i64, ApiError> {
    match p.get(name) {
        None | Some("") => Ok(-1),
        Some(v) => v
            .parse::<i64>()
            .map_err(|_| ApiError::bad_data(format!("{name} must be a number"))),
    }
}

fn metadata_fields(m: &MetricMetadata) -> (String, String, String) {
    (m.kind.as_str().to_string(), m.help.clone(), m.unit.clone())
}

/// `/api/v1/targets/metadata`
pub async fn target_metadata(
    State(s): State<Arc<AppState>>,
    p: Params,
) -> Result<Json<Value>, ApiError> {
    let limit = number_param(&p, "limit")?;
    let matchers = match p.get("match_target") {
        Some(m) if !m.is_empty() => parse_selector(m)
            .map_err(|e| ApiError::bad_data(format!("invalid parameter \"match_target\": {e}")))?,
        _ => Vec::new(),
    };
    let metric = p.get("metric").unwrap_or("");
    let mut out = Vec::new();
    'pools: for pool in s.scrape.snapshot().await {
        for t in &pool.active {
            if limit >= 0 && out.len() as i64 >= limit {
                break 'pools;
            }
            let labels = public_labels(&t.labels);
            if !matchers.iter().all(|m| m.matches(labels.get(&m.name))) {
                continue;
            }
            let md = t.metadata.lock().unwrap_or_else(|e| e.into_inner());
            if metric.is_empty() {
                for m in md.list() {
                    let (kind, help, unit) = metadata_fields(&m);
                    out.push(json!({
                        "target": labels_json(&labels), "metric": m.metric,
                        "type": kind, "help": help, "unit": unit,
                    }));
                }
            } else if let Some(m) = md.get(metric) {
                let (kind, help, unit) = metadata_fields(&m);
                out.push(json!({
                    "target": labels_json(&labels),
                    "type": kind, "help": help, "unit": unit,
                }));
            }
        }
    }
    Ok(success(Value::Array(out)))
}

/// `/api/v1/metadata`: each family's distinct metadata over all targets.
pub async fn metric_metadata(
    State(s): State<Arc<AppState>>,
    p: Params,
) -> Result<Json<Value>, ApiError> {
    let limit = number_param(&p, "limit")?;
    let per_metric = number_param(&p, "limit_per_metric")?;
    let metric = p.get("metric").unwrap_or("");
    let mut families: BTreeMap<String, BTreeSet<(String, String, String)>> = BTreeMap::new();
    for pool in s.scrape.snapshot().await {
        for t in &pool.active {
            let md = t.metadata.lock().unwrap_or_else(|e| e.into_inner());
            let found = if metric.is_empty() {
                md.list()
            } else {
                md.get(metric).into_iter().collect()
            };
            for m in found {
                let set = families.entry(m.metric.clone()).or_default();
                if per_metric > 0 && set.len() as i64 >= per_metric {
                    continue;
                }
                set.insert(metadata_fields(&m));
            }
        }
    }
    let mut out = Map::new();
    for (name, set) in families {
        if limit >= 0 && out.len() as i64 >= limit {
            break;
        }
        let list: Vec<Value> = set
            .into_iter()
            .map(|(kind, help, unit)| json!({ "type": kind, "help": help, "unit": unit }))
            .collect();
        out.insert(name, Value::Array(list));
    }
    Ok(success(Value::Object(out)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn global_urls_as_prometheus_derives_them() {
        let g = GlobalUrl::new("https://prom.example.com:443/p/", 9090);
        assert_eq!(
            g.of("http://localhost:9090/p/metrics"),
            "https://prom.example.com:443/p/metrics"
        );
        assert_eq!(
            g.of("http://127.0.0.1:9100/metrics"),
            "http://prom.example.com:9100/metrics"
        );
        assert_eq!(
            g.of("http://[::1]:9100/metrics"),
            "http://prom.example.com:9100/metrics"
        );
        assert_eq!(
            g.of("http://node:9100/metrics?a=b"),
            "http://node:9100/metrics?a=b"
        );
        let g = GlobalUrl::new("", 9191);
        assert!(g.host.ends_with(":9191"), "{}", g.host);
        assert_eq!(g.scheme, "http");
    }

    #[test]
    fn never_scraped_is_go_zero_time() {
        assert_eq!(scrape_time(None), "0001-01-01T00:00:00Z");
        let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(1_700_000_000_120);
        assert_eq!(scrape_time(Some(t)), "2023-11-14T22:13:20.12Z");
    }
}
