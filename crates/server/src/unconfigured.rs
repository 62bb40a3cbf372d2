//! Endpoints for what Ferrite does not keep: the exemplar storage (off
//! by default in Prometheus too).
//!
//! Ferrite answers as a Prometheus without it answers (the same parameter
//! checks, no exemplars), so that clients which look at them, such as
//! Grafana's exemplar views, work instead of failing on a 404.

use std::sync::Arc;

use axum::extract::State;
use axum::response::Json;
use serde_json::{json, Value};

use crate::query::{parse_query, parse_time, ApiError, Params};
use crate::status::success;
use crate::AppState;

/// `/api/v1/query_exemplars`: the parameters checked as Prometheus checks
/// them, then no exemplars (`null` when the query has no selector).
pub async fn query_exemplars(
    State(_): State<Arc<AppState>>,
    p: Params,
) -> Result<Json<Value>, ApiError> {
    let time = |name: &str, default: i64| -> Result<i64, ApiError> {
        match p.get(name) {
            Some(t) if !t.is_empty() => parse_time(t).map_err(|e| {
                ApiError::bad_data(format!("invalid parameter {name:?}: {}", e.message()))
            }),
            _ => Ok(default),
        }
    };
    let (start, end) = (time("start", i64::MIN)?, time("end", i64::MAX)?);
    if end < start {
        return Err(ApiError::bad_data(
            "end timestamp must not be before start timestamp",
        ));
    }
    let (_, expr) = parse_query(p.get("query").unwrap_or("").to_owned()).await?;
    let has_selector = expr.nodes().any(|e| {
        matches!(
            e,
            ferrite_promql::parser::Expr::VectorSelector(_)
                | ferrite_promql::parser::Expr::MatrixSelector(_)
        )
    });
    Ok(success(if has_selector { json!([]) } else { Value::Null }))
}
