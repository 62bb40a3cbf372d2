//! `/-/quit` and `/-/reload`, Prometheus' lifecycle endpoints, behind
//! `--web.enable-lifecycle` (off by default).
//!
//! `/-/quit` shuts the server down as SIGTERM does (stop accepting, finish
//! in-flight requests, close the WAL). `/-/reload` re-reads the
//! configuration in Prometheus; Ferrite takes nothing from
//! `--config.file`, so a reload has nothing to apply and answers as a
//! successful reload does (config-reloader sidecars POST it after every
//! change). Both answer only POST and PUT, with Prometheus' texts and codes.

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

pub async fn reload(State(s): State<Arc<AppState>>) -> impl IntoResponse {
    if !s.opts.lifecycle_api {
        return (StatusCode::FORBIDDEN, NOT_ENABLED);
    }
    info!("configuration reload requested: Ferrite takes nothing from --config.file, nothing to apply");
    (StatusCode::OK, "")
}

/// `GET` (and any other method but POST and PUT) on either endpoint.
pub async fn wrong_method() -> impl IntoResponse {
    (
        StatusCode::METHOD_NOT_ALLOWED,
        "Only POST or PUT requests allowed",
    )
}
