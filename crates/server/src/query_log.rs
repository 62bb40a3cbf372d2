//! The query log (`global.query_log_file`): every query the engine runs,
//! from the API or a rule group, as one JSON line, the lines Prometheus
//! writes:
//!
//! ```text
//! {"time":"...","level":"INFO","msg":"promql query logged",
//!  "params":{"end":"...","query":"...","start":"...","step":0},
//!  "stats":{"timings":{...},"samples":{...}},
//!  "httpRequest":{"clientIP":"...","method":"GET","path":"/api/v1/query"}}
//! ```
//!
//! with `"error"` after `params` for a query that failed, and
//! `"ruleGroup":{"file":...,"name":...}` instead of `httpRequest` for a
//! rule's query. Prometheus' lines also carry `"source"`, its Go file and
//! line; Ferrite's do not.
//!
//! The file is opened for appending (created if missing) at start and on
//! every configuration reload, as Prometheus does: a log moved away is
//! written to until the next reload, which opens the configured path again.
//! A file that cannot be opened fails the start or the reload.

use std::path::Path;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use ferrite_config::log_file::{LogFile, LogFileError};
use ferrite_model::goquote::slog_json_string_into;
use ferrite_model::gotime::format_rfc3339_nano;
use ferrite_promql::{LoggedQuery, QueryLogger, QueryOrigin, QueryTracker};

use crate::query::put_int;
use crate::query_stats::{put_stats, Exponent};

/// The query log's file.
#[derive(Debug)]
pub struct QueryLogFile {
    file: LogFile,
}

impl QueryLogFile {
    /// Opens `path` for appending, creating it if missing.
    pub fn open(path: &Path) -> Result<Self, LogFileError> {
        Ok(QueryLogFile {
            file: LogFile::open(path)?,
        })
    }
}

impl QueryLogger for QueryLogFile {
    fn log(&self, query: &LoggedQuery<'_>) -> std::io::Result<()> {
        self.file.write_line(&render(query, Utc::now()))
    }
}

/// Points `tracker` at the configured query log (`""`: none), opening the
/// file again even if the path did not change.
pub fn apply(tracker: &QueryTracker, path: &str) -> Result<(), LogFileError> {
    if path.is_empty() {
        tracker.set_logger(None);
        return Ok(());
    }
    let file = QueryLogFile::open(Path::new(path))?;
    tracker.set_logger(Some(Arc::new(file)));
    Ok(())
}

/// A query's line, ending in a newline, logged at `now`.
fn render(q: &LoggedQuery<'_>, now: DateTime<Utc>) -> Vec<u8> {
    let mut out = Vec::with_capacity(512 + q.query.len());
    out.extend_from_slice(b"{\"time\":\"");
    out.extend_from_slice(format_rfc3339_nano(now.into()).as_bytes());
    out.extend_from_slice(
        b"\",\"level\":\"INFO\",\"msg\":\"promql query logged\",\"params\":{\"end\":\"",
    );
    out.extend_from_slice(param_date(q.end_ms).as_bytes());
    out.extend_from_slice(b"\",\"query\":");
    slog_json_string_into(q.query, &mut out);
    out.extend_from_slice(b",\"start\":\"");
    out.extend_from_slice(param_date(q.start_ms).as_bytes());
    out.extend_from_slice(b"\",\"step\":");
    // Whole seconds, as Prometheus truncates the step.
    put_int(&mut out, q.step_ms / 1000);
    out.push(b'}');
    if let Some(e) = q.error {
        out.extend_from_slice(b",\"error\":");
        slog_json_string_into(&e.to_string(), &mut out);
    }
    out.extend_from_slice(b",\"stats\":");
    put_stats(&mut out, q.stats, Exponent::Shortest);
    match q.origin {
        QueryOrigin::Unknown => {}
        QueryOrigin::Http {
            client_ip,
            method,
            path,
        } => {
            out.extend_from_slice(b",\"httpRequest\":{\"clientIP\":");
            slog_json_string_into(client_ip, &mut out);
            out.extend_from_slice(b",\"method\":");
            slog_json_string_into(method, &mut out);
            out.extend_from_slice(b",\"path\":");
            slog_json_string_into(path, &mut out);
            out.push(b'}');
        }
        QueryOrigin::RuleGroup { file, name } => {
            out.extend_from_slice(b",\"ruleGroup\":{\"file\":");
            slog_json_string_into(file, &mut out);
            out.extend_from_slice(b",\"name\":");
            slog_json_string_into(name, &mut out);
            out.push(b'}');
        }
    }
    out.extend_from_slice(b"}\n");
    out
}

/// A query's start or end as Prometheus logs it: UTC, milliseconds.
fn param_date(ms: i64) -> String {
    match DateTime::<Utc>::from_timestamp_millis(ms) {
        Some(t) => t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string(),
        None => ms.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrite_promql::QueryStats;

    fn line(origin: QueryOrigin, error: Option<&ferrite_promql::Error>) -> serde_json::Value {
        let stats = QueryStats::default();
        let q = LoggedQuery {
            query: "sum(rate(x{a=\"b\"}[5m]))",
            start_ms: 1_000,
            end_ms: 3_601_000,
            step_ms: 15_500,
            error,
            stats: &stats,
            origin: &origin,
        };
        let now = DateTime::<Utc>::from_timestamp(1_800_000_000, 48_321_810).expect("in range");
        let text = render(&q, now);
        assert_eq!(text.last(), Some(&b'\n'));
        serde_json::from_slice(&text).expect("one JSON object")
    }

    #[test]
    fn an_api_query_is_logged_with_its_request() {
        let v = line(
            QueryOrigin::Http {
                client_ip: "::1".into(),
                method: "GET".into(),
                path: "/prefix/api/v1/query_range".into(),
            },
            None,
        );
        assert_eq!(v["time"], "2027-01-15T08:00:00.04832181Z");
        assert_eq!(v["level"], "INFO");
        assert_eq!(v["msg"], "promql query logged");
        assert_eq!(v["params"]["query"], "sum(rate(x{a=\"b\"}[5m]))");
        assert_eq!(v["params"]["start"], "1970-01-01T00:00:01.000Z");
        assert_eq!(v["params"]["end"], "1970-01-01T01:00:01.000Z");
        assert_eq!(v["params"]["step"], 15);
        assert_eq!(v["httpRequest"]["clientIP"], "::1");
        assert_eq!(v["httpRequest"]["path"], "/prefix/api/v1/query_range");
        assert_eq!(v["stats"]["samples"]["peakSamples"], 0);
        assert!(v.get("error").is_none() && v.get("ruleGroup").is_none());
    }

    #[test]
    fn a_rule_query_names_its_group_and_a_failure_its_error() {
        let err = ferrite_promql::Error::Timeout("query queue");
        let v = line(
            QueryOrigin::RuleGroup {
                file: "/etc/rules.yml".into(),
                name: "g1".into(),
            },
            Some(&err),
        );
        assert_eq!(v["ruleGroup"]["file"], "/etc/rules.yml");
        assert_eq!(v["ruleGroup"]["name"], "g1");
        assert_eq!(v["error"], "query timed out in query queue");
        assert!(v.get("httpRequest").is_none());
    }

    #[test]
    fn the_file_is_appended_to_and_reopened_by_apply() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("q.log");
        let tracker = QueryTracker::new(1);
        apply(&tracker, path.to_str().expect("utf-8")).expect("opens");
        assert!(tracker.logging());
        std::fs::write(&path, "before\n").expect("write");
        let engine =
            ferrite_promql::Engine::default().tracked(Arc::new(tracker), QueryOrigin::Unknown);
        let db = ferrite_promql::MemStorage::default();
        engine.instant_query(&db, "1 + 1", 0).expect("evaluates");
        let text = std::fs::read_to_string(&path).expect("read");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert!(lines[1].contains("\"query\":\"1 + 1\""), "{text}");
        let missing = dir.path().join("no/such/dir/q.log");
        let err = apply(&QueryTracker::new(1), missing.to_str().expect("utf-8"))
            .expect_err("cannot open");
        assert_eq!(
            err.to_string(),
            format!(
                "can't create json log file: open {}: no such file or directory",
                missing.display()
            )
        );
    }
}
