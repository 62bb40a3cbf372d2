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
    let start: chrono_like::Rfc3339 = s.start_time.into();
    let retention = match s.opts.db.retention_ms {
        0 if s.opts.db.retention_bytes == 0 => "15d".to_string(),
        0 => "0s".to_string(),
        ms => format!("{}s", ms / 1000),
    };
    success(json!({
        "startTime": start.0,
        "CWD": std::env::current_dir().map(|p| p.display().to_string()).unwrap_or_default(),
        "reloadConfigSuccess": true,
        "lastConfigTime": start.0,
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

/// RFC 3339 timestamps without a date crate.
mod chrono_like {
    use std::time::{SystemTime, UNIX_EPOCH};

    pub struct Rfc3339(pub String);

    impl From<SystemTime> for Rfc3339 {
        fn from(t: SystemTime) -> Self {
            let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
            let secs = d.as_secs() as i64;
            let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
            let (y, m, day) = civil_from_days(days);
            Rfc3339(format!(
                "{y:04}-{m:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
                rem / 3600,
                rem % 3600 / 60,
                rem % 60,
                d.subsec_millis()
            ))
        }
    }

    /// Days since 1970-01-01 to (year, month, day), proleptic Gregorian.
    fn civil_from_days(z: i64) -> (i64, u32, u32) {
        let z = z + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z.rem_euclid(146_097);
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
        let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
        let y = yoe + era * 400 + i64::from(m <= 2);
        (y, m, d)
    }

    #[cfg(test)]
    mod tests {
        use super::*;
        use std::time::Duration;

        #[test]
        fn formats_like_go() {
            let t = UNIX_EPOCH + Duration::from_millis(1_700_000_000_123);
            assert_eq!(Rfc3339::from(t).0, "2023-11-14T22:13:20.123Z");
            assert_eq!(Rfc3339::from(UNIX_EPOCH).0, "1970-01-01T00:00:00.000Z");
        }
    }
}
