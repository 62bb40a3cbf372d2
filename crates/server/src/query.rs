//! The query API: `/api/v1/query`, `/api/v1/query_range`, `/api/v1/series`,
//! `/api/v1/labels`, `/api/v1/label/<name>/values`, in Prometheus' JSON
//! shapes, parameters (GET query string or POST form) and error codes.
//!
//! The PromQL engine reads the database through [`TsdbQueryable`], the
//! adapter from `ferrite-promql`'s storage trait to `ferrite-tsdb`'s
//! querier: that trait is all the engine knows of storage.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Json, Response};
#[cfg(test)]
use ferrite_model::gofloat::format_f;
use ferrite_model::gofloat::write_f;
use ferrite_model::{Label, Labels, Matcher};
use ferrite_promql::{
    Engine, LazySeries, ParsedExpr, Querier, Queryable, SampleSource, SelectHints, Series,
    StorageError, Value,
};
use ferrite_tsdb::{Db, QuerySeries};
use serde_json::{json, Map, Value as Json_};

use crate::selector::{parse_promql, parse_selector};
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

/// Selections over at most this range (an instant query's lookback
/// window) with many series are decoded at once on every core: they hold a
/// few samples per series, and decoding is most of their cost.
const EAGER_MAX_RANGE_MS: i64 = 15 * 60 * 1000;
/// ... from this many series on (fewer are not worth a thread).
const EAGER_MIN_SERIES: usize = 256;

/// Decodes the samples of `selected` on every core, keeping the order.
fn read_eagerly(mut selected: Vec<QuerySeries>) -> Result<Vec<LazySeries<'static>>, StorageError> {
    use rayon::prelude::*;
    let per = selected.len().div_ceil(rayon::current_num_threads().max(1));
    type Decoded = (Labels, Vec<(i64, f64)>);
    let parts: Vec<Vec<Decoded>> = selected
        .par_chunks_mut(per.max(1))
        .map(|part| {
            // One buffer to decode into; each series keeps an exact-size
            // copy (a few samples, where sizing for whole chunks would take
            // ~2 KB).
            let mut buf = Vec::new();
            part.iter_mut()
                .map(|s| {
                    s.samples_into(&mut buf).map_err(storage_err)?;
                    Ok((lazy_labels(s), buf.as_slice().to_vec()))
                })
                .collect()
        })
        .collect::<Result<_, StorageError>>()?;
    Ok(parts
        .into_iter()
        .flatten()
        .map(|(labels, samples)| LazySeries {
            labels,
            source: Box::new(samples),
        })
        .collect())
}

/// A selected series' labels for the engine, moved out (reading samples
/// does not need them).
fn lazy_labels(s: &mut QuerySeries) -> Labels {
    std::mem::take(&mut s.labels)
}

/// A selected series' chunks, decoded when the engine reads them.
struct TsdbSamples(QuerySeries);

impl SampleSource for TsdbSamples {
    fn read_into(&self, out: &mut Vec<(i64, f64)>) -> Result<(), StorageError> {
        self.0.samples_into(out).map_err(storage_err)
    }
}

impl Querier for TsdbQuerier<'_> {
    fn select(
        &self,
        matchers: &[Matcher],
        hints: SelectHints,
    ) -> Result<Vec<Series>, StorageError> {
        let mut out = Vec::new();
        for s in self.select_lazy(matchers, hints)? {
            let mut samples = Vec::new();
            s.source.read_into(&mut samples)?;
            if samples.is_empty() {
                continue;
            }
            out.push(Series {
                labels: s.labels,
                samples,
            });
        }
        Ok(out)
    }

    fn select_lazy(
        &self,
        matchers: &[Matcher],
        hints: SelectHints,
    ) -> Result<Vec<LazySeries<'_>>, StorageError> {
        let (mint, maxt) = (hints.start.max(self.mint), hints.end.min(self.maxt));
        let selected = self
            .db
            .querier(mint, maxt)
            .select(matchers)
            .map_err(storage_err)?;
        if maxt.saturating_sub(mint) <= EAGER_MAX_RANGE_MS && selected.len() >= EAGER_MIN_SERIES {
            return read_eagerly(selected);
        }
        Ok(selected
            .into_iter()
            .map(|mut s| LazySeries {
                labels: lazy_labels(&mut s),
                source: Box::new(TsdbSamples(s)),
            })
            .collect())
    }

    fn label_names(&self, matchers: &[Matcher]) -> Result<Vec<String>, StorageError> {
        self.db
            .querier(self.mint, self.maxt)
            .label_names(matchers)
            .map_err(storage_err)
    }

    fn label_values(&self, name: &str, matchers: &[Matcher]) -> Result<Vec<String>, StorageError> {
        self.db
            .querier(self.mint, self.maxt)
            .label_values(name, matchers)
            .map_err(storage_err)
    }
}

/// An API error: Prometheus' `errorType` and HTTP status.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    kind: &'static str,
    message: String,
}

impl ApiError {
    /// The error message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Prometheus' `internal` error (500).
    pub fn internal(message: impl Into<String>) -> Self {
        ApiError {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            kind: "internal",
            message: message.into(),
        }
    }

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

/// A handler's parameters: the URL's query string, then a form body
/// (`POST` with `application/x-www-form-urlencoded`), as Prometheus reads
/// them.
/// The largest form body read, as Go's `ParseForm` reads at most 10 MB.
const MAX_FORM_BYTES: usize = 10 << 20;

impl<S: Send + Sync> axum::extract::FromRequest<S> for Params {
    type Rejection = Response;

    async fn from_request(req: axum::extract::Request, _: &S) -> Result<Self, Response> {
        let query = req.uri().query().map(str::to_owned);
        let headers = req.headers().clone();
        let body = axum::body::to_bytes(req.into_body(), MAX_FORM_BYTES)
            .await
            .map_err(|_| ApiError::bad_data("http: POST too large").into_response())?;
        Ok(Params::parse(query.as_deref(), &headers, &body))
    }
}

impl Params {
    /// The form body's values first, then the URL's, as Go's `ParseForm`
    /// merges them: a body value takes precedence over the URL's for the
    /// same name (`FormValue`), and a list (`match[]`) holds the body's
    /// values before the URL's.
    pub(crate) fn parse(query: Option<&str>, headers: &HeaderMap, body: &[u8]) -> Params {
        let form = headers
            .get(axum::http::header::CONTENT_TYPE)
            .and_then(|c| c.to_str().ok())
            .is_some_and(|c| c.starts_with("application/x-www-form-urlencoded"));
        let mut v: Vec<(String, String)> = if form {
            form_urlencoded::parse(body).into_owned().collect()
        } else {
            Vec::new()
        };
        if let Some(q) = query {
            v.extend(form_urlencoded::parse(q.as_bytes()).into_owned());
        }
        Params(v)
    }

    pub(crate) fn get(&self, k: &str) -> Option<&str> {
        self.0.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str())
    }

    pub(crate) fn all(&self, k: &str) -> Vec<&str> {
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
        // As Prometheus: a number is seconds, and one out of range is an
        // error. (It must not reach promql-parser, whose `parse_duration`
        // panics on an infinite or negative number of seconds.)
        let ms = (f * 1000.0).round();
        if ms.is_finite() && ms.abs() < i64::MAX as f64 {
            return Ok(ms as i64);
        }
        return Err(ApiError::bad_data(format!(
            "cannot parse {s:?} to a valid duration. It overflows int64"
        )));
    }
    promql_parser::util::parse_duration(s)
        .map(|d| d.as_millis() as i64)
        .map_err(|_| ApiError::bad_data(format!("cannot parse {s:?} to a valid duration")))
}

/// A timestamp as Prometheus writes it: Unix seconds, no `.0`.
#[cfg(test)]
fn format_time(t: i64) -> Json_ {
    if t % 1000 == 0 {
        json!(t / 1000)
    } else {
        json!(t as f64 / 1000.0)
    }
}

/// Appends `s` as a JSON string.
fn put_str(out: &mut Vec<u8>, s: &str) {
    // Label names and values rarely need escaping: copy those as they are.
    if !s.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\') {
        out.reserve(s.len() + 2);
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
        return;
    }
    // Writing into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, s);
}

/// Appends a decimal integer.
fn put_int(out: &mut Vec<u8>, n: i64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    let mut m = n.unsigned_abs();
    loop {
        i -= 1;
        digits[i] = b'0' + (m % 10) as u8;
        m /= 10;
        if m == 0 {
            break;
        }
    }
    if n < 0 {
        out.push(b'-');
    }
    out.extend_from_slice(&digits[i..]);
}

/// Appends a timestamp as [`format_time`] writes it.
fn put_time(out: &mut Vec<u8>, t: i64) {
    if t % 1000 == 0 {
        put_int(out, t / 1000);
    } else {
        let _ = serde_json::to_writer(&mut *out, &(t as f64 / 1000.0));
    }
}

/// Appends `[t,"v"]`.
fn put_point(out: &mut Vec<u8>, t: i64, v: f64) {
    out.push(b'[');
    put_time(out, t);
    out.extend_from_slice(b",\"");
    write_f(out, v);
    out.extend_from_slice(b"\"]");
}

fn put_labels(out: &mut Vec<u8>, l: &Labels) {
    out.push(b'{');
    for (i, Label { name: k, value: v }) in l.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        put_str(out, k.as_str());
        out.push(b':');
        put_str(out, v.as_str());
    }
    out.push(b'}');
}

fn put_strings(out: &mut Vec<u8>, key: &str, list: &[String]) {
    if list.is_empty() {
        return;
    }
    out.push(b',');
    put_str(out, key);
    out.extend_from_slice(b":[");
    for (i, s) in list.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        put_str(out, s);
    }
    out.push(b']');
}

/// A query's success response, written straight into one buffer: the
/// bytes `success(result_json(..))` produces (keys in serde_json's sorted
/// order), without building a JSON value per point first.
fn query_response_body(res: &ferrite_promql::QueryResult) -> Vec<u8> {
    let points = match &res.value {
        Value::Matrix(m) => m.iter().map(|s| s.points.len() + 4).sum(),
        Value::Vector(v) => v.len() * 4,
        _ => 1,
    };
    let mut out = Vec::with_capacity(64 + points * 40);
    out.extend_from_slice(b"{\"data\":{\"result\":");
    let kind = match &res.value {
        Value::Scalar { t, v } => {
            put_point(&mut out, *t, *v);
            "scalar"
        }
        Value::String { t, v } => {
            out.push(b'[');
            put_time(&mut out, *t);
            out.push(b',');
            put_str(&mut out, v);
            out.push(b']');
            "string"
        }
        Value::Vector(samples) => {
            out.push(b'[');
            for (i, s) in samples.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(b"{\"metric\":");
                put_labels(&mut out, &s.labels);
                out.extend_from_slice(b",\"value\":");
                put_point(&mut out, s.t, s.f);
                out.push(b'}');
            }
            out.push(b']');
            "vector"
        }
        Value::Matrix(series) => {
            out.push(b'[');
            for (i, s) in series.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(b"{\"metric\":");
                put_labels(&mut out, &s.labels);
                out.extend_from_slice(b",\"values\":[");
                for (j, &(t, v)) in s.points.iter().enumerate() {
                    if j > 0 {
                        out.push(b',');
                    }
                    put_point(&mut out, t, v);
                }
                out.extend_from_slice(b"]}");
            }
            out.push(b']');
            "matrix"
        }
    };
    out.extend_from_slice(b",\"resultType\":");
    put_str(&mut out, kind);
    out.push(b'}');
    put_strings(&mut out, "infos", &res.infos);
    out.extend_from_slice(b",\"status\":\"success\"");
    put_strings(&mut out, "warnings", &res.warnings);
    out.push(b'}');
    out
}

#[cfg(test)]
fn labels_json(l: &Labels) -> Json_ {
    Json_::Object(
        l.iter()
            .map(|l| (l.name.to_string(), Json_::String(l.value.to_string())))
            .collect::<Map<_, _>>(),
    )
}

#[cfg(test)]
fn result_json(v: &Value) -> Json_ {
    match v {
        Value::Scalar { t, v } => json!({
            "resultType": "scalar",
            "result": [format_time(*t), format_f(*v)],
        }),
        Value::String { t, v } => json!({ "resultType": "string", "result": [format_time(*t), v] }),
        Value::Vector(samples) => json!({
            "resultType": "vector",
            "result": samples.iter().map(|s| json!({
                "metric": labels_json(&s.labels),
                "value": [format_time(s.t), format_f(s.f)],
            })).collect::<Vec<_>>(),
        }),
        Value::Matrix(series) => json!({
            "resultType": "matrix",
            "result": series.iter().map(|s| json!({
                "metric": labels_json(&s.labels),
                "values": s.points.iter().map(|&(t, v)| json!([format_time(t), format_f(v)])).collect::<Vec<_>>(),
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
    // Prometheus' per-query `lookback_delta` (0: the server's).
    if let Some(d) = p.get("lookback_delta").filter(|d| !d.is_empty()) {
        let ms = parse_duration(d).map_err(|e| {
            ApiError::bad_data(format!(
                "error parsing lookback delta duration: {}",
                e.message
            ))
        })?;
        if ms > 0 {
            opts.lookback_delta_ms = ms;
        }
    }
    Ok(Engine::new(opts))
}

/// The `limit` parameter of the query endpoints: at most this many series
/// in the result (0: no limit), as Prometheus parses it.
pub fn query_limit(p: Option<&str>) -> Result<usize, ApiError> {
    let Some(s) = p.filter(|s| !s.is_empty()) else {
        return Ok(0);
    };
    let bad = |why: String| ApiError::bad_data(format!("invalid parameter \"limit\": {why}"));
    let n: i64 = s
        .parse()
        .map_err(|_| bad(format!("strconv.Atoi: parsing {s:?}: invalid syntax")))?;
    if n < 0 {
        return Err(bad("limit must be non-negative".into()));
    }
    Ok(usize::try_from(n).unwrap_or(usize::MAX))
}

/// Keeps the first `limit` series of a vector or matrix (0: all), with
/// Prometheus' warning when some were cut.
fn truncate_result(res: &mut ferrite_promql::QueryResult, limit: usize) {
    if limit == 0 {
        return;
    }
    let cut = match &mut res.value {
        Value::Vector(v) if v.len() > limit => {
            v.truncate(limit);
            true
        }
        Value::Matrix(m) if m.len() > limit => {
            m.truncate(limit);
            true
        }
        _ => false,
    };
    if cut {
        res.warnings.push("results truncated due to limit".into());
    }
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

/// Parses a query, with the API's error for a bad one.
pub fn check_query(query: &str) -> Result<Arc<ParsedExpr>, ApiError> {
    parse_promql(query).map_err(|e| ApiError::from(ferrite_promql::Error::Parse(e)))
}

/// Parses a query before anything else of the request is used, so that a
/// bad query is the error a client sees first. Parsing runs on a blocking
/// thread: a query near the nesting limits takes up to a second or so to
/// parse, too long to hold one of the async runtime's threads.
pub(crate) async fn parse_query(query: String) -> Result<(String, Arc<ParsedExpr>), ApiError> {
    tokio::task::spawn_blocking(move || check_query(&query).map(|expr| (query, expr)))
        .await
        .map_err(internal)?
}

/// Runs a query on a blocking thread and answers with its result, cut to
/// the `limit` parameter.
async fn run_query(
    s: &AppState,
    p: &Params,
    f: impl FnOnce(&Engine, &TsdbQueryable) -> ferrite_promql::Result<ferrite_promql::QueryResult>
        + Send
        + 'static,
) -> Result<Response, ApiError> {
    let limit = query_limit(p.get("limit"))?;
    let engine = engine_for(s, p)?;
    let db = TsdbQueryable { db: s.db.clone() };
    // `--query.max-concurrency`: wait for a slot (the semaphore is never
    // closed).
    let _slot = s.query_slots.acquire().await.map_err(internal)?;
    let mut res = tokio::task::spawn_blocking(move || f(&engine, &db))
        .await
        .map_err(internal)??;
    truncate_result(&mut res, limit);
    let body = query_response_body(&res);
    // Freeing a large result (a label set per series) takes a while: not
    // on the way to the client.
    tokio::task::spawn_blocking(move || drop(res));
    Ok((
        [(
            axum::http::header::CONTENT_TYPE,
            axum::http::HeaderValue::from_static("application/json"),
        )],
        body,
    )
        .into_response())
}

pub async fn instant_query(
    State(s): State<Arc<AppState>>,
    p: Params,
) -> Result<Response, ApiError> {
    let (query, expr) = parse_query(p.required("query")?.to_owned()).await?;
    let t = match p.get("time") {
        Some(t) => param_with("time", t, parse_time)?,
        None => now_ms(),
    };
    run_query(&s, &p, move |e, db| {
        e.instant_query_parsed(db, &query, &expr, t)
    })
    .await
}

pub async fn range_query(State(s): State<Arc<AppState>>, p: Params) -> Result<Response, ApiError> {
    let (query, expr) = parse_query(p.required("query")?.to_owned()).await?;
    let (start, end, step) = range_params(
        p.required("start")?,
        p.required("end")?,
        p.required("step")?,
    )?;
    run_query(&s, &p, move |e, db| {
        e.range_query_parsed(db, &query, &expr, start, end, step)
    })
    .await
}

/// `start`, `end` and `step` of a range query, checked as Prometheus
/// checks them (order, positive step, at most 11,000 points).
pub fn range_params(start: &str, end: &str, step: &str) -> Result<(i64, i64, i64), ApiError> {
    let start = param_with("start", start, parse_time)?;
    let end = param_with("end", end, parse_time)?;
    if end < start {
        return Err(ApiError::bad_data(
            "invalid parameter \"end\": end timestamp must not be before start time",
        ));
    }
    let step = param_with("step", step, parse_duration)?;
    if step <= 0 {
        return Err(ApiError::bad_data(
            "invalid parameter \"step\": zero or negative query resolution step widths are not accepted. Try a positive integer",
        ));
    }
    // Prometheus' cap: at most 11,000 points per series. In i128: the
    // span of two extreme timestamps overflows i64.
    if (i128::from(end) - i128::from(start)) / i128::from(step) > 11_000 {
        return Err(ApiError::bad_data(
            "exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query resolution (?step=XX)",
        ));
    }
    Ok((start, end, step))
}

/// Every request parameter of the query and status APIs in a raw query
/// string (`a=b&c=d`, percent-encoded), parsed as the handlers parse them
/// without touching storage: `query` (PromQL parser), `time`, `start`,
/// `end`, `step`, `timeout`, `match[]` and `limit`. Returns the first error,
/// having parsed everything. For fuzzing and property tests: whatever the
/// input, it must return rather than panic.
pub fn check_params(raw_query: &[u8]) -> Result<(), ApiError> {
    let p = Params(form_urlencoded::parse(raw_query).into_owned().collect());
    let mut results: Vec<Result<(), ApiError>> = Vec::new();
    if let Some(q) = p.get("query") {
        results.push(check_query(q).map(drop));
    }
    if let Some(t) = p.get("time") {
        results.push(param_with("time", t, parse_time).map(drop));
    }
    if let (Some(start), Some(end), Some(step)) = (p.get("start"), p.get("end"), p.get("step")) {
        results.push(range_params(start, end, step).map(drop));
    }
    if let Some(t) = p.get("timeout") {
        results.push(param_with("timeout", t, parse_duration).map(drop));
    }
    results.push(selection(&p, false).map(drop));
    results.push(crate::status::tsdb_limit(p.get("limit")).map(drop));
    results.push(query_limit(p.get("limit")).map(drop));
    if let Some(d) = p.get("lookback_delta") {
        results.push(param_with("lookback_delta", d, parse_duration).map(drop));
    }
    results.into_iter().collect()
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
    ApiError::internal(e.to_string())
}

pub async fn series(State(s): State<Arc<AppState>>, p: Params) -> Result<Response, ApiError> {
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
                    .map(|l| (l.name.to_string(), Json_::String(l.value.to_string())))
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

pub async fn labels(State(s): State<Arc<AppState>>, p: Params) -> Result<Response, ApiError> {
    let names = union_over_selectors(&s, &p, |q, ms| q.label_names(ms)).await?;
    Ok(success(json!(names), &[], &[]))
}

pub async fn label_values(
    State(s): State<Arc<AppState>>,
    Path(name): Path<String>,
    p: Params,
) -> Result<Response, ApiError> {
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
    fn form_body_values_come_before_the_urls() {
        let mut headers = HeaderMap::new();
        headers.insert(
            axum::http::header::CONTENT_TYPE,
            axum::http::HeaderValue::from_static("application/x-www-form-urlencoded"),
        );
        let p = Params::parse(
            Some("query=url&match[]=a&time=1"),
            &headers,
            b"query=body&match[]=b",
        );
        assert_eq!(p.get("query"), Some("body"));
        assert_eq!(p.get("time"), Some("1"));
        assert_eq!(p.all("match[]"), ["b", "a"]);
        // Without a form content type the body is not read.
        let p = Params::parse(Some("query=url"), &HeaderMap::new(), b"query=body");
        assert_eq!(p.get("query"), Some("url"));
    }

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
        // Found by the http_params fuzz target: promql-parser panics on
        // these.
        for overflow in ["42e5454", "inf", "-Infinity", "NaN", "1e300"] {
            assert!(parse_duration(overflow).is_err(), "{overflow}");
        }
    }

    #[test]
    fn range_params_checks() {
        assert_eq!(
            range_params("0", "60", "15").ok(),
            Some((0, 60_000, 15_000))
        );
        assert!(range_params("60", "0", "15").is_err());
        assert!(range_params("0", "60", "0").is_err());
        assert!(range_params("0", "60", "-1").is_err());
        assert!(range_params("0", "100000", "1").is_err());
        // Extreme timestamps: the span overflows i64; must be an error,
        // not an overflow.
        assert!(range_params("-1e300", "1e300", "1").is_err());
        assert!(range_params("-9.2e15", "9.2e15", "1ms").is_err());
    }

    #[test]
    fn check_params_parses_everything() {
        assert!(check_params(b"query=up&time=10&limit=5&match[]=up").is_ok());
        assert!(check_params(b"query=rate(up%5B5m%5D)&start=0&end=60&step=15s").is_ok());
        assert!(check_params(b"").is_ok());
        // promql-parser panics on this one; it must be a plain error.
        let e = check_params(b"query=up%5B1e400%5D").unwrap_err();
        assert_eq!(e.kind, "bad_data");
        for bad in [
            &b"query=up("[..],
            b"time=never",
            b"start=0&end=60&step=0",
            b"timeout=x",
            b"match[]=%7B",
            b"limit=0",
        ] {
            assert!(
                check_params(bad).is_err(),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    /// Random strings, of characters PromQL, times and selectors care about,
    /// through every parameter parser: errors are fine, panics are not.
    /// (The fuzz target `http_params` does the same, coverage-guided.)
    #[test]
    fn random_params_never_panic() {
        use rand::{Rng, SeedableRng};
        const ALPHABET: &[u8] = b"abcxyz_:{}[]()=!~\"',.+-*/^%@ 0123456789eEmshdwyTZ:\n\t\\";
        let mut rng = rand::rngs::StdRng::seed_from_u64(0x5eed);
        for _ in 0..20_000 {
            let len = rng.gen_range(0..40);
            let mut s: String = (0..len)
                .map(|_| ALPHABET[rng.gen_range(0..ALPHABET.len())] as char)
                .collect();
            if rng.gen_bool(0.05) {
                s.push(char::from_u32(rng.gen_range(0x80..0x10FFFF)).unwrap_or('\u{fffd}'));
            }
            let _ = parse_time(&s);
            let _ = parse_duration(&s);
            let _ = parse_selector(&s);
            let _ = crate::status::tsdb_limit(Some(&s));
            let _ = check_query(&s);
            let mut parts = s.splitn(3, ' ');
            if let (Some(a), Some(b), Some(c)) = (parts.next(), parts.next(), parts.next()) {
                let _ = range_params(a, b, c);
            }
            let _ = check_params(s.as_bytes());
            let _ = check_params(format!("query={s}&time={s}&match[]={s}&limit={s}").as_bytes());
        }
    }

    /// The hand-written response is byte for byte what the serde_json
    /// value tree gave.
    #[test]
    fn query_response_matches_json_tree() {
        use ferrite_promql::{QueryResult, Sample, SeriesResult};
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let special = [
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            0.0,
            -0.0,
            1e21,
            1e-7,
            5e-324,
            f64::MAX,
            0.1,
            123456789.125,
        ];
        let value = |rng: &mut rand::rngs::StdRng| -> f64 {
            if rng.gen_bool(0.3) {
                special[rng.gen_range(0..special.len())]
            } else {
                rng.gen_range(-1e6..1e6)
            }
        };
        let time = |rng: &mut rand::rngs::StdRng| -> i64 {
            if rng.gen_bool(0.5) {
                rng.gen_range(-5_000..5_000) * 1000
            } else {
                rng.gen_range(-5_000_000..5_000_000)
            }
        };
        let labels = |rng: &mut rand::rngs::StdRng| {
            let n = rng.gen_range(0..4);
            // Half the names and values need escaping, half do not.
            Labels::new((0..n).map(|i| {
                if rng.gen_bool(0.5) {
                    (
                        format!("l{i}\"\\"),
                        format!("v\n{}é\u{1}", rng.gen_range(0..100)),
                    )
                } else {
                    (
                        format!("l{i}"),
                        format!("v{}é/\u{7f}", rng.gen_range(0..100)),
                    )
                }
            }))
        };
        for case in 0..200 {
            let v = match case % 4 {
                0 => Value::Scalar {
                    t: time(&mut rng),
                    v: value(&mut rng),
                },
                1 => Value::String {
                    t: time(&mut rng),
                    v: "a\"b\\c\u{7f}".into(),
                },
                2 => Value::Vector(
                    (0..rng.gen_range(0..4))
                        .map(|_| Sample {
                            labels: labels(&mut rng),
                            t: time(&mut rng),
                            f: value(&mut rng),
                            h: None,
                        })
                        .collect(),
                ),
                _ => Value::Matrix(
                    (0..rng.gen_range(0..4))
                        .map(|_| SeriesResult {
                            labels: labels(&mut rng),
                            points: (0..rng.gen_range(0..5))
                                .map(|_| (time(&mut rng), value(&mut rng)))
                                .collect(),
                            histograms: Vec::new(),
                        })
                        .collect(),
                ),
            };
            let notes = |rng: &mut rand::rngs::StdRng| -> Vec<String> {
                (0..rng.gen_range(0..3))
                    .map(|i| format!("note \"{i}\""))
                    .collect()
            };
            let res = QueryResult {
                value: v,
                warnings: notes(&mut rng),
                infos: notes(&mut rng),
            };
            let mut body = Map::new();
            body.insert("status".into(), json!("success"));
            body.insert("data".into(), result_json(&res.value));
            if !res.warnings.is_empty() {
                body.insert("warnings".into(), json!(res.warnings));
            }
            if !res.infos.is_empty() {
                body.insert("infos".into(), json!(res.infos));
            }
            let want = serde_json::to_string(&Json_::Object(body)).unwrap();
            let got = String::from_utf8(query_response_body(&res)).unwrap();
            assert_eq!(got, want);
        }
    }

    #[test]
    fn ints_like_display() {
        for n in [0, 1, -1, 9, 10, -10, i64::MAX, i64::MIN, 1_700_000_000] {
            let mut out = Vec::new();
            put_int(&mut out, n);
            assert_eq!(String::from_utf8(out).unwrap(), n.to_string());
        }
    }

    #[test]
    fn values_like_go() {
        assert_eq!(format_f(1.0), "1");
        assert_eq!(format_f(0.5), "0.5");
        assert_eq!(format_f(1e21), "1000000000000000000000");
        assert_eq!(format_f(f64::NAN), "NaN");
        assert_eq!(format_f(f64::NEG_INFINITY), "-Inf");
        assert_eq!(format_time(1_700_000_000_000), json!(1_700_000_000));
        assert_eq!(format_time(1_700_000_000_123), json!(1_700_000_000.123));
    }
}
