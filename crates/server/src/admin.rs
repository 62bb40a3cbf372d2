//! The admin API (`--web.enable-admin-api`): `POST|PUT
//! /api/v1/admin/tsdb/{snapshot,delete_series,clean_tombstones}`.
//!
//! Status codes and bodies are Prometheus' (v3.9.1): with the flag off every
//! endpoint answers `{"status":"error","errorType":"unavailable","error":
//! "admin APIs disabled"}`, and Prometheus maps `unavailable` to no status of
//! its own, so the code is 500, not 503. `delete_series` and
//! `clean_tombstones` answer 204 with no body; `snapshot` answers
//! `{"name": ...}`.
//!
//! A snapshot is `<data>/snapshots/<UTC time>-<16 hex digits>/`: every block
//! hard-linked (no data copied), plus the head written as one more block
//! into the snapshot directory only; the live head is neither truncated nor
//! persisted, so taking a snapshot changes nothing in the data directory.
//! The compaction lock is held throughout, so the block list cannot change
//! under the snapshot and no head range can move into a block half-way
//! (which would leave it in neither the linked blocks nor the head block).

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use axum::body::Body;
use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Json, Response};
use ferrite_model::Matcher;
use ferrite_tsdb::block::Block;
use ferrite_tsdb::compact::persist_head_range;
use ferrite_tsdb::Db;
use serde_json::json;
use tracing::info;

use crate::query::parse_time;
use crate::selector::parse_selector;
use crate::AppState;

/// Prometheus' default `start` of optional time ranges (its `MinTime`), in
/// ms: far enough back for anything, and what ends up in tombstones.
pub const MIN_TIME_MS: i64 = -9_223_309_901_257_974_000;
/// Prometheus' default `end` (its `MaxTime`), in ms.
pub const MAX_TIME_MS: i64 = 9_223_309_901_257_974_999;

/// An admin API failure: Prometheus' `errorType` and HTTP status.
#[derive(Debug)]
pub struct AdminError {
    status: StatusCode,
    kind: &'static str,
    message: String,
}

impl AdminError {
    fn disabled() -> Self {
        AdminError {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            kind: "unavailable",
            message: "admin APIs disabled".into(),
        }
    }

    fn bad_data(message: impl Into<String>) -> Self {
        AdminError {
            status: StatusCode::BAD_REQUEST,
            kind: "bad_data",
            message: message.into(),
        }
    }

    fn internal(message: impl std::fmt::Display) -> Self {
        AdminError {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            kind: "internal",
            message: message.to_string(),
        }
    }
}

impl IntoResponse for AdminError {
    fn into_response(self) -> Response {
        (
            self.status,
            Json(json!({ "status": "error", "errorType": self.kind, "error": self.message })),
        )
            .into_response()
    }
}

/// The most of a form body Go's `ParseForm` reads (10 MB); more is an
/// error.
const MAX_FORM_BYTES: usize = 10 << 20;

fn is_urlencoded(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|c| c.to_str().ok())
        .is_some_and(|c| c.starts_with("application/x-www-form-urlencoded"))
}

/// Go's `Request.ParseForm`: a urlencoded body's values (other bodies are
/// not read), then the query string's (so a body value wins for
/// single-valued parameters); a body over [`MAX_FORM_BYTES`] is
/// Prometheus' `bad_data` error.
async fn read_form(
    query: Option<&str>,
    headers: &HeaderMap,
    body: Body,
) -> Result<Vec<(String, String)>, AdminError> {
    let body = if is_urlencoded(headers) {
        axum::body::to_bytes(body, MAX_FORM_BYTES)
            .await
            .map_err(|_| AdminError::bad_data("error parsing form values: http: POST too large"))?
    } else {
        Default::default()
    };
    Ok(form(query, headers, &body))
}

/// [`read_form`] of a body already read.
fn form(query: Option<&str>, headers: &HeaderMap, body: &[u8]) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = Vec::new();
    if is_urlencoded(headers) {
        v.extend(form_urlencoded::parse(body).into_owned());
    }
    if let Some(q) = query {
        v.extend(form_urlencoded::parse(q.as_bytes()).into_owned());
    }
    v
}

/// Go's `FormValue`: the first value, "" when absent.
fn value<'a>(form: &'a [(String, String)], name: &str) -> &'a str {
    form.iter()
        .find(|(k, _)| k == name)
        .map_or("", |(_, v)| v.as_str())
}

/// A time parameter, `default` when absent or empty.
fn time_param(form: &[(String, String)], name: &str, default: i64) -> Result<i64, AdminError> {
    let v = value(form, name);
    if v.is_empty() {
        return Ok(default);
    }
    parse_time(v).map_err(|_| {
        AdminError::bad_data(format!(
            "invalid parameter {name:?}: invalid time value for '{name}': cannot parse {v:?} to a valid timestamp"
        ))
    })
}

/// Go's `strconv.ParseBool`.
fn parse_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// Runs blocking database work off the async threads.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, AdminError> + Send + 'static,
) -> Result<T, AdminError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(AdminError::internal)?
}

/// `POST|PUT /api/v1/admin/tsdb/snapshot[?skip_head=true]`.
pub async fn snapshot(
    State(s): State<Arc<AppState>>,
    RawQuery(q): RawQuery,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, AdminError> {
    if !s.opts.admin_api {
        return Err(AdminError::disabled());
    }
    // Prometheus reads `skip_head` with `FormValue`, which ignores a form
    // error: then only the query string counts.
    let form = match read_form(q.as_deref(), &headers, body).await {
        Ok(f) => f,
        Err(_) => form(q.as_deref(), &HeaderMap::new(), &[]),
    };
    let skip = value(&form, "skip_head");
    let skip_head = if skip.is_empty() {
        false
    } else {
        parse_bool(skip).ok_or_else(|| {
            AdminError::bad_data(format!(
                "invalid parameter \"skip_head\": unable to parse boolean: strconv.ParseBool: parsing {skip:?}: invalid syntax"
            ))
        })?
    };
    let name = snapshot_name(SystemTime::now(), rand::random::<u64>() >> 1);
    let dir = s.db.dir().join("snapshots").join(&name);
    let db = s.db.clone();
    blocking(move || {
        let res = write_snapshot(&db, &dir, !skip_head);
        if res.is_err() {
            // A partial snapshot is no snapshot: leave nothing behind.
            let _ = fs::remove_dir_all(&dir);
        }
        res
    })
    .await?;
    Ok(Json(json!({ "status": "success", "data": { "name": name } })).into_response())
}

/// Prometheus' snapshot name: `20060102T150405Z` (UTC) and a random
/// non-negative 63-bit number as 16 hex digits.
fn snapshot_name(now: SystemTime, random: u64) -> String {
    let when = chrono::DateTime::<chrono::Utc>::from(now).format("%Y%m%dT%H%M%SZ");
    format!("{when}-{random:016x}")
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> AdminError + '_ {
    move |e| AdminError::internal(format!("create snapshot: {}: {e}", path.display()))
}

/// Links every block into `dir` and, if `with_head`, writes the head there
/// as a block covering [head min, head max].
fn write_snapshot(db: &Db, dir: &Path, with_head: bool) -> Result<(), AdminError> {
    fs::create_dir_all(dir).map_err(io_err(dir))?;
    let _guard = db.compaction_guard();
    let blocks = db.blocks();
    for b in &blocks {
        link_block(b, dir)?;
    }
    let mut head_block = None;
    if with_head {
        let head = db.head();
        let (mint, maxt) = (head.min_time(), head.max_time());
        if mint <= maxt {
            // Block ranges are half-open: one past the newest sample.
            head_block = persist_head_range(head, dir, mint, maxt.saturating_add(1), None)
                .map_err(|e| AdminError::internal(format!("create snapshot: head block: {e}")))?
                .map(|m| m.ulid);
        }
    }
    info!(dir = %dir.display(), blocks = blocks.len(), head_block = ?head_block, "snapshot written");
    Ok(())
}

/// Hard-links a block's files (its `chunks/` segments included) into
/// `<dir>/<ulid>/`.
fn link_block(b: &Block, dir: &Path) -> Result<(), AdminError> {
    let target = dir.join(b.ulid().to_string());
    link_files(b.dir(), &target)?;
    let chunks = b.dir().join("chunks");
    if chunks.is_dir() {
        link_files(&chunks, &target.join("chunks"))?;
    }
    Ok(())
}

/// Hard-links the regular files of `from` into `to` (created).
fn link_files(from: &Path, to: &Path) -> Result<(), AdminError> {
    fs::create_dir_all(to).map_err(io_err(to))?;
    for e in fs::read_dir(from).map_err(io_err(from))? {
        let e = e.map_err(io_err(from))?;
        if !e.file_type().map_err(io_err(from))?.is_file() {
            continue;
        }
        let dst: PathBuf = to.join(e.file_name());
        fs::hard_link(e.path(), &dst).map_err(io_err(&dst))?;
    }
    Ok(())
}

/// `POST|PUT /api/v1/admin/tsdb/delete_series?match[]=...&start=...&end=...`.
pub async fn delete_series(
    State(s): State<Arc<AppState>>,
    RawQuery(q): RawQuery,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, AdminError> {
    if !s.opts.admin_api {
        return Err(AdminError::disabled());
    }
    let form = read_form(q.as_deref(), &headers, body).await?;
    let selectors: Vec<&str> = form
        .iter()
        .filter(|(k, _)| k == "match[]")
        .map(|(_, v)| v.as_str())
        .collect();
    if selectors.is_empty() {
        return Err(AdminError::bad_data("no match[] parameter provided"));
    }
    let start = time_param(&form, "start", MIN_TIME_MS)?;
    let end = time_param(&form, "end", MAX_TIME_MS)?;
    // Prometheus parses and deletes one selector at a time, so a bad second
    // selector leaves the first one's deletion done; so does this.
    let mut sets: Vec<Result<Vec<Matcher>, String>> = Vec::new();
    for sel in selectors {
        sets.push(parse_selector(sel).map_err(|e| e.to_string()));
    }
    let db = s.db.clone();
    blocking(move || {
        for set in sets {
            let ms = set
                .map_err(|e| AdminError::bad_data(format!("invalid parameter \"match[]\": {e}")))?;
            let n = db.delete(&ms, start, end).map_err(AdminError::internal)?;
            info!(series = n, start, end, "series deleted");
        }
        Ok(())
    })
    .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// `POST|PUT /api/v1/admin/tsdb/clean_tombstones`.
pub async fn clean_tombstones(State(s): State<Arc<AppState>>) -> Result<Response, AdminError> {
    if !s.opts.admin_api {
        return Err(AdminError::disabled());
    }
    let db = s.db.clone();
    blocking(move || {
        let n = db.clean_tombstones().map_err(AdminError::internal)?;
        info!(blocks = n, "tombstones cleaned");
        Ok(())
    })
    .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn names_like_prometheus() {
        let t = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        assert_eq!(
            snapshot_name(t, 0x7d0b_9ca8_be8e_9981),
            "20231114T221320Z-7d0b9ca8be8e9981"
        );
        assert_eq!(
            snapshot_name(UNIX_EPOCH, 1),
            "19700101T000000Z-0000000000000001"
        );
    }

    #[test]
    fn go_bools() {
        assert_eq!(parse_bool("True"), Some(true));
        assert_eq!(parse_bool("0"), Some(false));
        assert_eq!(parse_bool("yes"), None);
    }

    #[test]
    fn body_values_come_first() {
        let mut h = HeaderMap::new();
        h.insert(
            header::CONTENT_TYPE,
            "application/x-www-form-urlencoded".parse().unwrap(),
        );
        let f = form(Some("start=1&match[]=a"), &h, b"start=2&match[]=b");
        assert_eq!(value(&f, "start"), "2");
        assert_eq!(value(&f, "end"), "");
        assert_eq!(f.iter().filter(|(k, _)| k == "match[]").count(), 2);
    }
}
