//! Rules (`ferrite-rules`) wired to the database, and `/api/v1/rules`
//! (the alerting rules' part in [`crate::alerts`]).
//!
//! Rule expressions run through the PromQL engine over
//! [`TsdbQueryable`], as API queries do (with the server's engine limits,
//! but not through `--query.max-concurrency`'s slots); results go to the
//! head through one appender per rule evaluation. The manager is started
//! with the configuration, re-applied on reload, and stopped (without
//! stale markers) before the database closes.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::SystemTime;

use axum::extract::State;
use axum::response::Json;
use ferrite_model::{FloatHistogram, Labels, Matcher};
use ferrite_promql::Queryable;
use ferrite_rules::group::Group;
use ferrite_rules::manager::LoadError;
use ferrite_rules::recording::RecordingRule;
use ferrite_rules::rule::Rule;
use ferrite_rules::storage::{AppendFailure, FailureKind, RuleAppender, RuleStorage};
use ferrite_tsdb::head::{AppendError, HeadAppender};
use ferrite_tsdb::Db;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use tokio::sync::Notify;

use crate::query::{ApiError, Params, TsdbQueryable};
use crate::selector::parse_selector;
use crate::status::success;
use crate::{alerts, AppState};

/// The database as rules see it.
pub struct DbRuleStorage {
    queryable: TsdbQueryable,
    compact_now: Arc<Notify>,
}

impl DbRuleStorage {
    /// Rules over `db`; `compact_now` is woken when an append makes the
    /// head compactable.
    pub fn new(db: Arc<Db>, compact_now: Arc<Notify>) -> Self {
        DbRuleStorage {
            queryable: TsdbQueryable { db },
            compact_now,
        }
    }
}

impl RuleStorage for DbRuleStorage {
    fn queryable(&self) -> &dyn Queryable {
        &self.queryable
    }

    fn appender(&self) -> Box<dyn RuleAppender + '_> {
        Box::new(DbRuleAppender {
            app: self.queryable.db.appender(),
            storage: self,
        })
    }
}

/// One rule evaluation's appends to the head.
struct DbRuleAppender<'d> {
    app: HeadAppender<'d>,
    storage: &'d DbRuleStorage,
}

impl RuleAppender for DbRuleAppender<'_> {
    fn append(&mut self, labels: &Labels, t: i64, v: f64) -> Result<(), AppendFailure> {
        self.app.append(labels, t, v).map(drop).map_err(failure)
    }

    fn append_histogram(
        &mut self,
        labels: &Labels,
        t: i64,
        h: &FloatHistogram,
    ) -> Result<(), AppendFailure> {
        self.app
            .append_float_histogram(labels, t, h.clone())
            .map(drop)
            .map_err(failure)
    }

    fn commit(self: Box<Self>) -> Result<(), String> {
        let storage = self.storage;
        self.app.commit().map_err(|e| e.to_string())?;
        if storage.queryable.db.head_compactable() {
            storage.compact_now.notify_one();
        }
        Ok(())
    }
}

/// The head's refusal as rule evaluation sees it.
fn failure(e: AppendError) -> AppendFailure {
    let kind = match e {
        AppendError::OutOfOrder => FailureKind::OutOfOrder,
        AppendError::TooOld => FailureKind::TooOld,
        AppendError::DuplicateSample { .. }
        | AppendError::DuplicateHistogramToFloat { .. }
        | AppendError::DuplicateHistogram => FailureKind::Duplicate,
        _ => FailureKind::Other,
    };
    AppendFailure {
        kind,
        message: e.to_string(),
    }
}

/// Why the server did not start: the rule files of the configuration did
/// not load (Prometheus exits then, naming every reason).
pub fn load_error_text(e: &LoadError) -> String {
    format!("error loading rule files: {}", e.errors.join("\n"))
}

/// A reload's error when the rules did not load (the reasons are logged):
/// Prometheus' text.
pub fn apply_error(file: Option<&std::path::Path>) -> String {
    let file = file.map(|f| f.display().to_string()).unwrap_or_default();
    format!(
        "one or more errors occurred while applying the new configuration (--config.file={file:?})"
    )
}

/// `/api/v1/rules`: the rule groups, filtered and paginated by
/// Prometheus' parameters (`type`, `rule_name[]`, `rule_group[]`,
/// `file[]`, `match[]`, `exclude_alerts`, `group_limit`,
/// `group_next_token`), checked in its order with its messages.
pub async fn rules(State(s): State<Arc<AppState>>, p: Params) -> Result<Json<Value>, ApiError> {
    let set =
        |name: &str| -> HashSet<String> { p.all(name).into_iter().map(String::from).collect() };
    let (rule_names, group_names, files) = (set("rule_name[]"), set("rule_group[]"), set("file[]"));
    let mut matcher_sets: Vec<Vec<Matcher>> = Vec::new();
    for sel in p.all("match[]") {
        let ms = parse_selector(sel).map_err(|e| ApiError::bad_data(e.to_string()))?;
        if ms.iter().all(|m| m.matches("")) {
            return Err(ApiError::bad_data(
                "match[] must contain at least one non-empty matcher",
            ));
        }
        matcher_sets.push(ms);
    }
    let groups = s.rules.groups().await;
    let invalid =
        |name: &str, why: String| ApiError::bad_data(format!("invalid parameter {name:?}: {why}"));
    let typ = p.get("type").unwrap_or("").to_lowercase();
    if !typ.is_empty() && typ != "alert" && typ != "record" {
        return Err(invalid("type", format!("not supported value {typ:?}")));
    }
    let return_recording = typ.is_empty() || typ == "record";
    let return_alerts = typ.is_empty() || typ == "alert";
    let exclude = p.get("exclude_alerts").unwrap_or("").to_lowercase();
    let exclude_alerts = if exclude.is_empty() {
        false
    } else {
        go_parse_bool(&exclude).ok_or_else(|| invalid(
            "exclude_alerts",
            format!("error converting exclude_alerts: strconv.ParseBool: parsing {exclude:?}: invalid syntax"),
        ))?
    };
    let (max_groups, next_token) = pagination(&p)?;

    let mut out = Vec::new();
    let mut next_group_token = None;
    let mut found_token = false;
    for g in &groups {
        let token = next_token_of(&g.file, &g.name);
        if max_groups > 0 && !next_token.is_empty() && !found_token {
            if next_token != token {
                continue;
            }
            found_token = true;
        }
        if !group_names.is_empty() && !group_names.contains(&g.name) {
            continue;
        }
        if !files.is_empty() && !files.contains(&g.file) {
            continue;
        }
        let rules: Vec<Value> = g
            .rules
            .iter()
            .filter(|r| matches_any(&matcher_sets, &r.label_set()))
            .filter(|r| rule_names.is_empty() || rule_names.contains(r.name()))
            .filter_map(|r| match r {
                Rule::Recording(r) => return_recording.then(|| recording_rule_json(r)),
                Rule::Alerting(r) => {
                    return_alerts.then(|| alerts::alerting_rule_json(r, exclude_alerts))
                }
            })
            .collect();
        if rules.is_empty() {
            continue;
        }
        if max_groups > 0 && out.len() as i64 == max_groups {
            next_group_token = Some(token);
            break;
        }
        out.push(group_json(g, rules));
    }
    if max_groups > 0 && !next_token.is_empty() && !found_token {
        return Err(invalid(
            "group_next_token",
            format!("invalid group_next_token '{next_token}'. were rule groups changed?"),
        ));
    }
    let mut data = Map::new();
    data.insert("groups".into(), Value::Array(out));
    if let Some(t) = next_group_token {
        data.insert("groupNextToken".into(), Value::String(t));
    }
    Ok(success(Value::Object(data)))
}

/// `group_limit` and `group_next_token` as Prometheus reads them: the
/// limit (0: none) and the token.
fn pagination(p: &Params) -> Result<(i64, String), ApiError> {
    let limit = p.get("group_limit").unwrap_or("");
    let token = p.get("group_next_token").unwrap_or("");
    let invalid =
        |name: &str, why: String| ApiError::bad_data(format!("invalid parameter {name:?}: {why}"));
    if !token.is_empty() && limit.is_empty() {
        return Err(invalid(
            "group_next_token",
            "group_limit needs to be present in order to paginate over the groups".into(),
        ));
    }
    if limit.is_empty() {
        return Ok((0, String::new()));
    }
    let n = go_parse_int32(limit).map_err(|why| {
        invalid(
            "group_limit",
            format!("group_limit needs to be a valid number: strconv.ParseInt: parsing {limit:?}: {why}"),
        )
    })?;
    if n <= 0 {
        return Err(invalid(
            "group_limit",
            "group_limit needs to be greater than 0".into(),
        ));
    }
    Ok((n, token.to_string()))
}

/// Go's `strconv.ParseInt(s, 10, 32)`, with its two reasons.
fn go_parse_int32(s: &str) -> Result<i64, &'static str> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err("invalid syntax");
    }
    match s.parse::<i64>() {
        Ok(n) if i32::try_from(n).is_ok() => Ok(n),
        _ => Err("value out of range"),
    }
}

/// Go's `strconv.ParseBool`.
fn go_parse_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// The pagination token of a group: the hex SHA-256 of `<file>;<name>`.
fn next_token_of(file: &str, name: &str) -> String {
    let digest = Sha256::digest(format!("{file};{name}").as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether `labels` satisfy every matcher of at least one set (all match
/// when there are no sets).
fn matches_any(sets: &[Vec<Matcher>], labels: &Labels) -> bool {
    sets.is_empty()
        || sets
            .iter()
            .any(|ms| ms.iter().all(|m| m.matches(labels.get(&m.name))))
}

fn group_json(g: &Group, rules: Vec<Value>) -> Value {
    let timing = g.timing();
    json!({
        "name": g.name,
        "file": g.file,
        "rules": rules,
        "interval": seconds(g.interval_ms as f64 / 1000.0),
        "limit": g.limit,
        "evaluationTime": seconds(timing.evaluation_time.as_secs_f64()),
        "lastEvaluation": go_time(timing.last_evaluation),
    })
}

fn recording_rule_json(r: &RecordingRule) -> Value {
    let state = r.status.get();
    let labels: Map<String, Value> = r
        .labels
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect();
    let mut o = Map::new();
    o.insert("name".into(), json!(r.name));
    o.insert("query".into(), json!(r.query));
    o.insert("labels".into(), Value::Object(labels));
    o.insert("health".into(), json!(state.health.as_str()));
    if let Some(e) = &state.last_error {
        o.insert("lastError".into(), json!(e));
    }
    o.insert(
        "evaluationTime".into(),
        seconds(state.evaluation_duration.as_secs_f64()),
    );
    o.insert("lastEvaluation".into(), go_time(state.last_evaluation));
    o.insert("type".into(), json!("recording"));
    Value::Object(o)
}

/// A number of seconds as Go's JSON writes a float64 (`15`, `0.0021`).
pub(crate) fn seconds(v: f64) -> Value {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        json!(v as i64)
    } else {
        json!(v)
    }
}

/// A time as Go's JSON writes a `time.Time` (RFC 3339 with the fraction's
/// trailing zeros dropped, in UTC); the zero time before any evaluation.
pub(crate) fn go_time(t: Option<SystemTime>) -> Value {
    let Some(t) = t else {
        return json!("0001-01-01T00:00:00Z");
    };
    let d = t.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
    let secs = chrono::DateTime::from_timestamp(d.as_secs() as i64, 0)
        .map(|dt| dt.format("%Y-%m-%dT%H:%M:%S").to_string())
        .unwrap_or_default();
    let nanos = d.subsec_nanos();
    let frac = if nanos == 0 {
        String::new()
    } else {
        format!(".{nanos:09}").trim_end_matches('0').to_string()
    };
    json!(format!("{secs}{frac}Z"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_and_numbers_as_go_writes_them() {
        assert_eq!(go_time(None), json!("0001-01-01T00:00:00Z"));
        let t = SystemTime::UNIX_EPOCH + std::time::Duration::new(1_700_000_000, 120_000_000);
        assert_eq!(go_time(Some(t)), json!("2023-11-14T22:13:20.12Z"));
        assert_eq!(seconds(15.0).to_string(), "15");
        assert_eq!(seconds(0.5).to_string(), "0.5");
        assert_eq!(
            next_token_of("rules.yml", "g"),
            format!("{:x}", Sha256::digest(b"rules.yml;g"))
        );
        assert_eq!(go_parse_int32("2147483648"), Err("value out of range"));
        assert_eq!(go_parse_int32("x"), Err("invalid syntax"));
        assert_eq!(go_parse_int32("+3"), Ok(3));
    }
}
