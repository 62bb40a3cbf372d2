//! Alerting's side of the server: the notifier (`ferrite-notifier`)
//! started with the configuration, re-applied on reload (a reload that
//! fails keeps the Alertmanagers and their queues), stopped (its queues
//! drained) at shutdown after rule evaluation, and
//! `GET /api/v1/alertmanagers`:
//!
//! ```json
//! {"status":"success","data":{
//!   "activeAlertmanagers":[{"url":"http://am:9093/api/v2/alerts"}],
//!   "droppedAlertmanagers":[]}}
//! ```
//!
//! Rule evaluation reaches the notifier through `AppState::notifier`
//! (`state.notifier.send(alerts)`).

use std::sync::Arc;

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::AppState;

/// The notifier's options from the server's.
pub fn notifier_options(opts: &crate::ServerOptions) -> ferrite_notifier::Options {
    opts.notifier.clone()
}

/// `GET /api/v1/alertmanagers`.
pub async fn alertmanagers(State(s): State<Arc<AppState>>) -> Response {
    let (active, dropped) = s.notifier.alertmanagers();
    let urls = |list: Vec<String>| {
        list.into_iter()
            .map(|url| json!({ "url": url }))
            .collect::<Vec<_>>()
    };
    axum::Json(json!({
        "status": "success",
        "data": {
            "activeAlertmanagers": urls(active),
            "droppedAlertmanagers": urls(dropped),
        }
    }))
    .into_response()
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;

    use crate::{start, ServerOptions};

    async fn get(addr: SocketAddr, path: &str) -> String {
        reqwest::get(format!("http://{addr}{path}"))
            .await
            .expect("request")
            .text()
            .await
            .expect("body")
    }

    async fn reload(addr: SocketAddr) -> (u16, String) {
        let resp = reqwest::Client::new()
            .post(format!("http://{addr}/-/reload"))
            .send()
            .await
            .expect("reload");
        (resp.status().as_u16(), resp.text().await.expect("body"))
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn alertmanagers_endpoint_metrics_and_reload() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("prometheus.yml");
        std::fs::write(
            &file,
            "alerting:\n  alertmanagers:\n    - static_configs: [{targets: ['am1:9093', 'skip:9093']}]\n      relabel_configs: [{source_labels: [__address__], regex: 'skip:.*', action: drop}]\n",
        )
        .expect("write");
        let mut opts = ServerOptions::new(
            dir.path().join("data"),
            "127.0.0.1:0".parse().expect("addr"),
        );
        opts.lifecycle_api = true;
        opts.notifier.queue_capacity = 77;
        opts.config = ferrite_config::Config::load(&file).expect("config");
        let server = start(opts).await.expect("start");
        let addr = server.addr;
        let body: serde_json::Value =
            serde_json::from_str(&get(addr, "/api/v1/alertmanagers").await).expect("json");
        assert_eq!(
            body,
            serde_json::json!({"status": "success", "data": {
                "activeAlertmanagers": [{"url": "http://am1:9093/api/v2/alerts"}],
                "droppedAlertmanagers": [{"url": "http://skip:9093/api/v2/alerts"}]}})
        );
        let metrics = get(addr, "/metrics").await;
        for line in [
            "# TYPE prometheus_notifications_alertmanagers_discovered gauge\nprometheus_notifications_alertmanagers_discovered 1\n",
            "prometheus_notifications_queue_capacity 77\n",
            "prometheus_notifications_sent_total{alertmanager=\"http://am1:9093/api/v2/alerts\"} 0\n",
            "prometheus_notifications_queue_length{alertmanager=\"http://am1:9093/api/v2/alerts\"} 0\n",
        ] {
            assert!(metrics.contains(line), "{line} not in:\n{metrics}");
        }
        // A set whose client cannot be built fails the reload; the old
        // Alertmanagers stay.
        std::fs::write(
            &file,
            "alerting:\n  alertmanagers:\n    - static_configs: [{targets: ['am2:9093']}]\n      tls_config: {ca_file: /nonexistent/ca.pem}\n",
        )
        .expect("write");
        let (status, text) = reload(addr).await;
        assert_eq!(status, 500, "{text}");
        assert!(text.contains("error creating HTTP client"), "{text}");
        let (active, _) = server
            .state
            .upgrade()
            .expect("state")
            .notifier
            .alertmanagers();
        assert_eq!(active, ["http://am1:9093/api/v2/alerts"]);
        // A discovery Ferrite does not run is refused by name.
        std::fs::write(
            &file,
            "alerting:\n  alertmanagers:\n    - consul_sd_configs: [{server: 'c:8500'}]\n",
        )
        .expect("write");
        let (status, text) = reload(addr).await;
        assert_eq!(status, 500, "{text}");
        assert!(
            text.contains("alerting.alertmanagers[0].consul_sd_configs"),
            "{text}"
        );
        std::fs::write(
            &file,
            "alerting:\n  alertmanagers:\n    - static_configs: [{targets: ['am2:9093']}]\n      path_prefix: /x\n",
        )
        .expect("write");
        assert_eq!(reload(addr).await.0, 200);
        let body = get(addr, "/api/v1/alertmanagers").await;
        assert!(body.contains("http://am2:9093/x/api/v2/alerts"), "{body}");
        assert!(!body.contains("am1"), "{body}");
        server.shutdown().await.expect("shutdown");
    }

    #[test]
    fn metric_families_are_written_in_the_text_format() {
        let n = ferrite_notifier::Notifier::new(ferrite_notifier::Options::default());
        let mut out = String::new();
        crate::metrics::write_families(&mut out, &n.metric_families());
        assert!(out.starts_with("# HELP prometheus_notifications_alertmanagers_discovered The number of alertmanagers discovered and active.\n# TYPE prometheus_notifications_alertmanagers_discovered gauge\nprometheus_notifications_alertmanagers_discovered 0\n"), "{out}");
        assert!(
            out.contains("prometheus_notifications_queue_capacity 10000\n"),
            "{out}"
        );
    }
}
