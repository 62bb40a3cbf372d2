//! The query API: `/api/v1/query`, `/api/v1/query_range`, `/api/v1/series`,
//! `/api/v1/labels`, `/api/v1/label/<name>/values`, in Prometheus' JSON
//! shapes, parameters (GET query string or POST form) and error codes.
//!
//! The PromQL engine reads the database through [`TsdbQueryable`], the
//! adapter from `ferrite-promql`'s storage trait to `ferrite-tsdb`'s
//! querier: that trait is all the engine knows of storage.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Json, Response};
use ferrite_promql::{
    Engine, Labels as QLabels, MatchType as QMatchType, Matcher as QMatcher, Querier, Queryable,
    SelectHints, Series, StorageError, Value,
};
use ferrite_tsdb::{Db, MatchType, Matcher};
use serde_json::{json, Map, Value as Json_};

use crate::selector::parse_selector;
use crate::AppState;

/// `ferrite-promql`'s storage over the database.
pub struct TsdbQueryable {
    pub db: Arc<Db>,
}

struct TsdbQuerier<'a> {
    db: &'a Db,
    mint: i64,
    maxt: i64,
}

impl Queryable for TsdbQueryable {
    fn querier(&self, mint: i64, maxt: i64) -> Result<Box<dyn Querier + '_>, StorageError> {
        Ok(Box::new(TsdbQuerier {
            db: &self.db,
            mint,
            maxt,
        }))
    }
}

fn storage_err(e: impl std::fmt::Display) -> StorageError {
    StorageError::Other(e.to_string())
}

fn to_tsdb(ms: &[QMatcher]) -> Result<Vec<Matcher>, StorageError> {
    ms.iter()
        .map(|m| {
            let kind = match m.kind {
                QMatchType::Equal => MatchType::Equal,
                QMatchType::NotEqual => MatchType::NotEqual,
                QMatchType::Regex => MatchType::Regex,
                QMatchType::NotRegex => MatchType::NotRegex,
            };
            Matcher::new(kind, &m.name, &m.value).map_err(storage_err)
        })
        .collect()
}

impl Querier for TsdbQuerier<'_> {
    fn select(
        &self,
        matchers: &[QMatcher],
        hints: SelectHints,
    ) -> Result<Vec<Series>, StorageError> {
        let (mint, maxt) = (hints.start.max(self.mint), hints.end.min(self.maxt));
        let ms = to_tsdb(matchers)?;
        let mut out = Vec::new();
        for s in self
            .db
            .querier(mint, maxt)
            .select(&ms)
            .map_err(storage_err)?
        {
            let samples = s.samples().map_err(storage_err)?;
            if samples.is_empty() {
                continue;
            }
            let labels = QLabels::new(s.labels.iter().map(|l| (l.name.clone(), l.value.clone())));
            out.push(Series { labels, samples });
        }
        Ok(out)
    }

    fn label_names(&self, matchers: &[QMatcher]) -> Result<Vec<String>, StorageError> {
        self.db
            .querier(self.mint, self.maxt)
            .label_names(&to_tsdb(matchers)?)
            .map_err(storage_err)
    }

    fn label_values(&self, name: &str, matchers: &[QMatcher]) -> Result<Vec<String>, StorageError> {
        self.db
            .querier(self.mint, self.maxt)
            .label_values(name, &to_tsdb(matchers)?)
            .map_err(storage_err)
    }
}

/// An API error: Prometheus' `errorType` and HTTP status.
pub struct ApiError {
    status: StatusCode,
    kind: &'static str,
    message: String,
}

impl ApiError {
    pub fn bad_data(message: impl Into<String>) -> Self {
        ApiError {
            status: StatusCode::BAD_REQUEST,
            kind: "bad_data",
            message: message.into(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (
            self.status,
            Json(json!({ "status": "error", "errorType": self.kind, "error": self.message })),
        )
            .into_response()
    }
}

impl From<ferrite_promql::Error> for ApiError {
    fn from(e: ferrite_promql::Error) -> Self {
        use ferrite_promql::Error as E;
        let (status, kind) = match &e {
            E::Parse(_) => (StatusCode::BAD_REQUEST, "bad_data"),
            E::Timeout(_) => (StatusCode::SERVICE_UNAVAILABLE, "timeout"),
            E::TooManySamples(_) | E::Eval(_) => (StatusCode::UNPROCESSABLE_ENTITY, "execution"),
            E::Storage(_) => (StatusCode::UNPROCESSABLE_ENTITY, "execution"),
        };
        ApiError {
            status,
            kind,
            message: e.to_string(),
        }
    }
}

/// Query-string and form parameters, in order (`match[]` repeats).
pub struct Params(Vec<(String, String)>);

impl Params {
    fn parse(query: Option<&str>, headers: &HeaderMap, body: &[u8]) -> Params {
        let mut v: Vec<(String, String)> = query
            .map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect())
            .unwrap_or_default();
        let form = headers
            .get(axum::http::header::CONTENT_TYPE)
            .and_then(|c| c.to_str().ok())
            .is_some_and(|c| c.starts_with("application/x-www-form-urlencoded"));
        if form {
            v.extend(form_urlencoded::parse(body).into_owned());
        }
        Params(v)
    }

    fn get(&self, k: &str) -> Option<&str> {
        self.0.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str())
    }

    fn all(&self, k: &str) -> Vec<&str> {
        self.0
            .iter()
            .filter(|(n, _)| n == k)
            .map(|(_, v)| v.as_str())
            .collect()
    }
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Prometheus' `parseTime`: float Unix seconds or RFC 3339.
pub fn parse_time(s: &str) -> Result<i64, ApiError> {
    if let Ok(f) = s.parse::<f64>() {
        if f.is_finite() {
            return Ok((f * 1000.0).round() as i64);
        }
    }
    parse_rfc3339(s)
        .ok_or_else(|| ApiError::bad_data(format!("cannot parse {s:?} to a valid timestamp")))
}

fn parse_rfc3339(s: &str) -> Option<i64> {
    chrono::DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.timestamp_millis())
}

/// Prometheus' `parseDuration` for `step` and `timeout`: float seconds or a
/// PromQL duration.
pub fn parse_duration(s: &str) -> Result<i64, ApiError> {
    if let Ok(f) = s.parse::<f64>() {
        if f.is_finite() {
            return Ok((f * 1000.0).round() as i64);
        }
    }
    promql_parser::util::parse_duration(s)
        .map(|d| d.as_millis() as i64)
        .map_err(|_| ApiError::bad_data(format!("cannot parse {s:?} to a valid duration")))
}

/// A sample value as Prometheus writes it (Go's `FormatFloat(v, 'f', -1)`).
pub fn format_value(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v == f64::INFINITY {
        "+Inf".into()
    } else if v == f64::NEG_INFINITY {
        "-Inf".into()
    } else {
        format!("{v}")
    }
}

/// A timestamp as Prometheus writes it: Unix seconds, no `.0`.
fn format_time(t: i64) -> Json_ {
    if t % 1000 == 0 {
        json!(t / 1000)
    } else {
        json!(t as f64 / 1000.0)
    }
}

fn labels_json(l: &QLabels) -> Json_ {
    Json_::Object(
        l.iter()
            .map(|(k, v)| (k.to_string(), Json_::String(v.to_string())))
            .collect::<Map<_, _>>(),
    )
}

fn result_json(v: &Value) -> Json_ {
    match v {
        Value::Scalar { t, v } => json!({
            "resultType": "scalar",
            "result": [format_time(*t), format_value(*v)],
        }),
        Value::String { t, v } => json!({ "resultType": "string", "result": [format_time(*t), v] }),
        Value::Vector(samples) => json!({
            "resultType": "vector",
            "result": samples.iter().map(|s| json!({
                "metric": labels_json(&s.labels),
                "value": [format_time(s.t), format_value(s.f)],
            })).collect::<Vec<_>>(),
        }),
        Value::Matrix(series) => json!({
            "resultType": "matrix",
            "result": series.iter().map(|s| json!({
                "metric": labels_json(&s.labels),
                "values": s.points.iter().map(|&(t, v)| json!([format_time(t), format_value(v)])).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
        }),
    }
}

fn success(data: Json_, warnings: &[String], infos: &[String]) -> Response {
    let mut body = Map::new();
    body.insert("status".into(), json!("success"));
    body.insert("data".into(), data);
    if !warnings.is_empty() {
        body.insert("warnings".into(), json!(warnings));
    }
    if !infos.is_empty() {
        body.insert("infos".into(), json!(infos));
    }
    Json(Json_::Object(body)).into_response()
}

fn engine_for(s: &AppState, p: &Params) -> Result<Engine, ApiError> {
    let mut opts = s.engine.clone();
    if let Some(t) = p.get("timeout") {
        let ms = parse_duration(t)?;
        let limit = std::time::Duration::from_millis(ms.max(0) as u64);
        if limit < opts.timeout {
            opts.timeout = limit;
        }
    }
    Ok(Engine::new(opts))
}

impl Params {
    /// A required parameter, or Prometheus' "missing" error.
    fn required(&self, name: &str) -> Result<&str, ApiError> {
        self.get(name)
            .ok_or_else(|| ApiError::bad_data(format!("invalid parameter \"{name}\": missing")))
    }
}

/// Parses parameter `name` with `parse`, naming it in the error.
fn param_with(
    name: &str,
    value: &str,
    parse: fn(&str) -> Result<i64, ApiError>,
) -> Result<i64, ApiError> {
    parse(value)
        .map_err(|e| ApiError::bad_data(format!("invalid parameter \"{name}\": {}", e.message)))
}

/// Runs a query on a blocking thread and answers with its result.
async fn run_query(
    s: &AppState,
    p: &Params,
    f: impl FnOnce(&Engine, &TsdbQueryable) -> ferrite_promql::Result<ferrite_promql::QueryResult>
        + Send
        + 'static,
) -> Result<Response, ApiError> {
    let engine = engine_for(s, p)?;
    let db = TsdbQueryable { db: s.db.clone() };
    let res = tokio::task::spawn_blocking(move || f(&engine, &db))
        .await
        .map_err(internal)??;
    Ok(success(result_json(&res.value), &res.warnings, &res.infos))
}

pub async fn instant_query(
    State(s): State<Arc<AppState>>,
    RawQuery(q): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let p = Params::parse(q.as_deref(), &headers, &body);
    let query = p.required("query")?.to_owned();
    let t = match p.get("time") {
        Some(t) => param_with("time", t, parse_time)?,
        None => now_ms(),
    };
    run_query(&s, &p, move |e, db| e.instant_query(db, &query, t)).await
}

pub async fn range_query(
    State(s): State<Arc<AppState>>,
    RawQuery(q): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let p = Params::parse(q.as_deref(), &headers, &body);
    let query = p.required("query")?.to_owned();
    let start = param_with("start", p.required("start")?, parse_time)?;
    let end = param_with("end", p.required("end")?, parse_time)?;
    if end < start {
        return Err(ApiError::bad_data(
            "invalid parameter \"end\": end timestamp must not be before start time",
        ));
    }
    let step = param_with("step", p.required("step")?, parse_duration)?;
    if step <= 0 {
        return Err(ApiError::bad_data(
            "invalid parameter \"step\": zero or negative query resolution step widths are not accepted. Try a positive integer",
        ));
    }
    // Prometheus' cap: at most 11,000 points per series.
    if (end - start) / step > 11_000 {
        return Err(ApiError::bad_data(
            "exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query resolution (?step=XX)",
        ));
    }
    run_query(&s, &p, move |e, db| {
        e.range_query(db, &query, start, end, step)
    })
    .await
}

/// `match[]`, `start`, `end` of the metadata endpoints.
fn selection(p: &Params, required: bool) -> Result<(Vec<Vec<Matcher>>, i64, i64), ApiError> {
    let selectors = p.all("match[]");
    if required && selectors.is_empty() {
        return Err(ApiError::bad_data("no match[] parameter provided"));
    }
    let mut sets = Vec::new();
    for sel in selectors {
        sets.push(parse_selector(sel).map_err(|e| ApiError::bad_data(e.to_string()))?);
    }
    let start = match p.get("start") {
        Some(t) => parse_time(t)?,
        None => i64::MIN,
    };
    let end = match p.get("end") {
        Some(t) => parse_time(t)?,
        None => i64::MAX,
    };
    Ok((sets, start, end))
}

fn internal(e: impl std::fmt::Display) -> ApiError {
    ApiError {
        status: StatusCode::INTERNAL_SERVER_ERROR,
        kind: "internal",
        message: e.to_string(),
    }
}

pub async fn series(
    State(s): State<Arc<AppState>>,
    RawQuery(q): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let p = Params::parse(q.as_deref(), &headers, &body);
    let (sets, start, end) = selection(&p, true)?;
    let db = s.db.clone();
    let out = tokio::task::spawn_blocking(move || -> Result<Vec<Json_>, ApiError> {
        let q = db.querier(start, end);
        let mut all = std::collections::BTreeMap::new();
        for ms in &sets {
            for series in q.select(ms).map_err(internal)? {
                let obj: Map<String, Json_> = series
                    .labels
                    .iter()
                    .map(|l| (l.name.clone(), Json_::String(l.value.clone())))
                    .collect();
                all.insert(series.labels.clone(), Json_::Object(obj));
            }
        }
        Ok(all.into_values().collect())
    })
    .await
    .map_err(internal)??;
    Ok(success(Json_::Array(out), &[], &[]))
}

pub async fn labels(
    State(s): State<Arc<AppState>>,
    RawQuery(q): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let p = Params::parse(q.as_deref(), &headers, &body);
    let names = union_over_selectors(&s, &p, |q, ms| q.label_names(ms)).await?;
    Ok(success(json!(names), &[], &[]))
}

pub async fn label_values(
    State(s): State<Arc<AppState>>,
    Path(name): Path<String>,
    RawQuery(q): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let p = Params::parse(q.as_deref(), &headers, &body);
    let values = union_over_selectors(&s, &p, move |q, ms| q.label_values(&name, ms)).await?;
    Ok(success(json!(values), &[], &[]))
}

/// `list` over the series of each `match[]` selector (all series if none),
/// as one sorted, deduplicated list.
async fn union_over_selectors<F>(s: &AppState, p: &Params, list: F) -> Result<Vec<String>, ApiError>
where
    F: Fn(&ferrite_tsdb::Querier<'_>, &[Matcher]) -> Result<Vec<String>, ferrite_tsdb::QueryError>
        + Send
        + 'static,
{
    let (mut sets, start, end) = selection(p, false)?;
    if sets.is_empty() {
        sets.push(Vec::new());
    }
    let db = s.db.clone();
    tokio::task::spawn_blocking(move || -> Result<Vec<String>, ApiError> {
        let q = db.querier(start, end);
        let mut all = Vec::new();
        for ms in &sets {
            all.extend(list(&q, ms).map_err(internal)?);
        }
        all.sort();
        all.dedup();
        Ok(all)
    })
    .await
    .map_err(internal)?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times() {
        assert_eq!(parse_time("1700000000").ok(), Some(1_700_000_000_000));
        assert_eq!(parse_time("1700000000.123").ok(), Some(1_700_000_000_123));
        assert_eq!(
            parse_time("2023-11-14T22:13:20Z").ok(),
            Some(1_700_000_000_000)
        );
        assert_eq!(
            parse_time("2023-11-14T22:13:20.5Z").ok(),
            Some(1_700_000_000_500)
        );
        assert_eq!(
            parse_time("2023-11-14T23:13:20+01:00").ok(),
            Some(1_700_000_000_000)
        );
        assert!(parse_time("yesterday").is_err());
        assert_eq!(parse_duration("15").ok(), Some(15_000));
        assert_eq!(parse_duration("1m").ok(), Some(60_000));
        assert!(parse_duration("x").is_err());
    }

    #[test]
    fn values_like_go() {
        assert_eq!(format_value(1.0), "1");
        assert_eq!(format_value(0.5), "0.5");
        assert_eq!(format_value(1e21), "1000000000000000000000");
        assert_eq!(format_value(f64::NAN), "NaN");
        assert_eq!(format_value(f64::NEG_INFINITY), "-Inf");
        assert_eq!(format_time(1_700_000_000_000), json!(1_700_000_000));
        assert_eq!(format_time(1_700_000_000_123), json!(1_700_000_000.123));
    }
}
