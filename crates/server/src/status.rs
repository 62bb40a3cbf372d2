//! Health, readiness and the `/api/v1/status/*` endpoints, in Prometheus'
//! JSON shapes (`{"status":"success","data":...}`).

use std::sync::Arc;

use axum::extract::{RawQuery, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Json};
use ferrite_tsdb::head::CardinalityStat;
use serde_json::{json, Value};

use crate::query::{ApiError, Params};
use crate::AppState;

/// Prometheus' success envelope.
pub fn success(data: Value) -> Json<Value> {
    Json(json!({ "status": "success", "data": data }))
}

pub async fn healthy() -> impl IntoResponse {
    "Prometheus Server is Healthy.\n"
}

pub async fn ready() -> impl IntoResponse {
    "Prometheus Server is Ready.\n"
}

pub async fn buildinfo() -> Json<Value> {
    success(json!({
        "version": env!("CARGO_PKG_VERSION"),
        "revision": "",
        "branch": "",
        "buildUser": "",
        "buildDate": "",
        "goVersion": "",
    }))
}

/// `/api/v1/status/config`: the configuration in force, its secrets
/// replaced by `<secret>` (see [`ferrite_config::redact`]).
pub async fn config(State(s): State<Arc<AppState>>) -> Result<Json<Value>, ApiError> {
    let yaml = ferrite_config::redact::redacted_yaml(&s.current_config().source)
        .map_err(|e| ApiError::internal(format!("writing the configuration: {e}")))?;
    Ok(success(json!({ "yaml": yaml })))
}

pub async fn runtimeinfo(State(s): State<Arc<AppState>>) -> Json<Value> {
    let start = rfc3339(s.start_time);
    let last_config = rfc3339(
        std::time::UNIX_EPOCH
            + std::time::Duration::from_secs(
                s.reload
                    .last_success_unix
                    .load(std::sync::atomic::Ordering::Relaxed)
                    .max(0) as u64,
            ),
    );
    let retention = match s.opts.db.retention_ms {
        0 if s.opts.db.retention_bytes == 0 => "15d".to_string(),
        0 => "0s".to_string(),
        ms => format!("{}s", ms / 1000),
    };
    success(json!({
        "startTime": start,
        "CWD": std::env::current_dir().map(|p| p.display().to_string()).unwrap_or_default(),
        "reloadConfigSuccess": s.reload.successful.load(std::sync::atomic::Ordering::Relaxed),
        "lastConfigTime": last_config,
        "corruptionCount": 0,
        "goroutineCount": 0,
        "GOMAXPROCS": std::thread::available_parallelism().map_or(1, |n| n.get()),
        "GOMEMLIMIT": 0,
        "GOGC": "",
        "GODEBUG": "",
        "storageRetention": retention,
    }))
}

/// `/api/v1/status/tsdb/blocks`: the open blocks' `meta.json`, oldest
/// first.
pub async fn tsdb_blocks(State(s): State<Arc<AppState>>) -> Result<Json<Value>, ApiError> {
    let metas =
        s.db.blocks()
            .iter()
            .map(|b| serde_json::from_slice::<Value>(&b.meta().to_json()))
            .collect::<Result<Vec<Value>, _>>()
            .map_err(|e| ApiError::internal(format!("error getting block metadata: {e}")))?;
    Ok(success(json!({ "blocks": metas })))
}

pub async fn flags(State(s): State<Arc<AppState>>) -> Json<Value> {
    let map: serde_json::Map<String, Value> = s
        .opts
        .flags
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect();
    success(Value::Object(map))
}

/// Longest list `/api/v1/status/tsdb` gives (Prometheus' `maxTSDBLimit`).
pub const MAX_TSDB_LIMIT: usize = 10_000;

/// The `limit` of `/api/v1/status/tsdb`: 10 when absent, else a positive
/// integer up to [`MAX_TSDB_LIMIT`], with Prometheus' error messages.
pub fn tsdb_limit(limit: Option<&str>) -> Result<usize, ApiError> {
    let Some(s) = limit.filter(|s| !s.is_empty()) else {
        return Ok(10);
    };
    // Go's strconv.Atoi: optional sign, decimal digits.
    let n: i64 = s
        .parse()
        .ok()
        .filter(|&n| n >= 1)
        .ok_or_else(|| ApiError::bad_data("limit must be a positive number"))?;
    if n > MAX_TSDB_LIMIT as i64 {
        return Err(ApiError::bad_data(format!(
            "limit must not exceed {MAX_TSDB_LIMIT}"
        )));
    }
    Ok(n as usize)
}

fn stats_json(list: &[CardinalityStat]) -> Value {
    Value::Array(
        list.iter()
            .map(|s| json!({ "name": s.name, "value": s.count }))
            .collect(),
    )
}

pub async fn tsdb(
    State(s): State<Arc<AppState>>,
    RawQuery(q): RawQuery,
) -> Result<Json<Value>, ApiError> {
    let params = Params::parse(q.as_deref(), &HeaderMap::new(), &[]);
    let limit = tsdb_limit(params.get("limit"))?;
    let db = s.db.clone();
    let stats = tokio::task::spawn_blocking(move || db.head_cardinality(limit))
        .await
        .map_err(|e| ApiError::internal(e.to_string()))?;
    let head = s.db.head();
    let (min, max) = (head.min_time(), head.max_time());
    let (min, max) = if min > max { (0, 0) } else { (min, max) };
    Ok(success(json!({
        "headStats": {
            "numSeries": head.num_series(),
            "numLabelPairs": stats.num_label_pairs,
            "chunkCount": 0,
            "minTime": min,
            "maxTime": max,
        },
        "seriesCountByMetricName": stats_json(&stats.series_count_by_value),
        "labelValueCountByLabelName": stats_json(&stats.label_value_count_by_label_name),
        "memoryInBytesByLabelName": stats_json(&stats.memory_in_bytes_by_label_name),
        "seriesCountByLabelValuePair": stats_json(&stats.series_count_by_label_value_pair),
    })))
}

/// RFC 3339 with milliseconds, as Prometheus prints its start time.
fn rfc3339(t: std::time::SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(t)
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn tsdb_limits_like_prometheus() {
        assert_eq!(tsdb_limit(None).ok(), Some(10));
        assert_eq!(tsdb_limit(Some("")).ok(), Some(10));
        assert_eq!(tsdb_limit(Some("1")).ok(), Some(1));
        assert_eq!(tsdb_limit(Some("+5")).ok(), Some(5));
        assert_eq!(tsdb_limit(Some("10000")).ok(), Some(10_000));
        for bad in ["0", "-1", "x", "1.5", " 3"] {
            let e = tsdb_limit(Some(bad)).unwrap_err();
            assert_eq!(e.message(), "limit must be a positive number", "{bad:?}");
        }
        let e = tsdb_limit(Some("10001")).unwrap_err();
        assert_eq!(e.message(), "limit must not exceed 10000");
        let e = tsdb_limit(Some("99999999999999999999")).unwrap_err();
        assert_eq!(e.message(), "limit must be a positive number");
    }

    #[test]
    fn formats_like_go() {
        let t = UNIX_EPOCH + Duration::from_millis(1_700_000_000_123);
        assert_eq!(rfc3339(t), "2023-11-14T22:13:20.123Z");
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
    }
}
