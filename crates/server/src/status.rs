//! Health, readiness and the `/api/v1/status/*` endpoints, in Prometheus'
//! JSON shapes (`{"status":"success","data":...}`).

use std::sync::Arc;

use axum::extract::State;
use axum::response::{IntoResponse, Json};
use serde_json::{json, Value};

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

pub async fn runtimeinfo(State(s): State<Arc<AppState>>) -> Json<Value> {
    let start = rfc3339(s.start_time);
    let retention = match s.opts.db.retention_ms {
        0 if s.opts.db.retention_bytes == 0 => "15d".to_string(),
        0 => "0s".to_string(),
        ms => format!("{}s", ms / 1000),
    };
    success(json!({
        "startTime": start,
        "CWD": std::env::current_dir().map(|p| p.display().to_string()).unwrap_or_default(),
        "reloadConfigSuccess": true,
        "lastConfigTime": start,
        "corruptionCount": 0,
        "goroutineCount": 0,
        "GOMAXPROCS": std::thread::available_parallelism().map_or(1, |n| n.get()),
        "GOMEMLIMIT": 0,
        "GOGC": "",
        "GODEBUG": "",
        "storageRetention": retention,
    }))
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

pub async fn tsdb(State(s): State<Arc<AppState>>) -> Json<Value> {
    let head = s.db.head();
    let (min, max) = (head.min_time(), head.max_time());
    let (min, max) = if min > max { (0, 0) } else { (min, max) };
    success(json!({
        "headStats": {
            "numSeries": head.num_series(),
            "numLabelPairs": 0,
            "chunkCount": 0,
            "minTime": min,
            "maxTime": max,
        },
        "seriesCountByMetricName": [],
        "labelValueCountByLabelName": [],
        "memoryInBytesByLabelName": [],
        "seriesCountByLabelValuePair": [],
    }))
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
    fn formats_like_go() {
        let t = UNIX_EPOCH + Duration::from_millis(1_700_000_000_123);
        assert_eq!(rfc3339(t), "2023-11-14T22:13:20.123Z");
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
    }
}
