//! `/-/quit` and `/-/reload`, Prometheus' lifecycle endpoints, behind
//! `--web.enable-lifecycle` (off by default).
//!
//! `/-/quit` shuts the server down as SIGTERM does (stop accepting, finish
//! in-flight requests, close the WAL). `/-/reload` re-reads and checks the
//! configuration file as SIGHUP does (see [`crate::config`]): 200 and an
//! empty body when it loads, 500 and `failed to reload config: <reason>`
//! when not. Both answer only POST and PUT, with Prometheus' texts and
//! codes.

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use tracing::info;

use crate::AppState;

const NOT_ENABLED: &str = "Lifecycle API is not enabled.";

pub async fn quit(State(s): State<Arc<AppState>>) -> impl IntoResponse {
    if !s.opts.lifecycle_api {
        return (StatusCode::FORBIDDEN, NOT_ENABLED);
    }
    if s.quit.send_replace(true) {
        return (StatusCode::OK, "Termination already in progress.");
    }
    info!("termination requested through /-/quit");
    (StatusCode::OK, "Requesting termination... Goodbye!")
}

pub async fn reload(State(s): State<Arc<AppState>>) -> (StatusCode, String) {
    if !s.opts.lifecycle_api {
        return (StatusCode::FORBIDDEN, NOT_ENABLED.to_string());
    }
    info!("configuration reload requested through /-/reload");
    let state = s.clone();
    let outcome = tokio::task::spawn_blocking(move || state.reload_config()).await;
    match outcome {
        Ok(Ok(())) => (StatusCode::OK, String::new()),
        Ok(Err(e)) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("failed to reload config: {e}"),
        ),
        // The reload panicked: nothing was applied.
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("failed to reload config: {e}"),
        ),
    }
}

/// `GET` (and any other method but POST and PUT) on either endpoint. GET
/// is a route of its own, as in Prometheus (so it is counted in
/// `prometheus_http_requests_total`); other methods reach it as the
/// fallback.
pub async fn wrong_method() -> impl IntoResponse {
    (
        StatusCode::METHOD_NOT_ALLOWED,
        "Only POST or PUT requests allowed",
    )
}
