//! HTTP discovery (`http_sd_configs`): target groups fetched from a URL
//! every `refresh_interval`, as Prometheus' `discovery/http` fetches them.
//!
//! Each refresh is a `GET` with `Accept: application/json` and
//! `X-Prometheus-Refresh-Interval-Seconds`, through a client built from
//! the entry's HTTP settings (TLS, authentication, proxy, headers). The
//! answer must be `200` with a JSON content type, and be a JSON array of
//! target groups (no null group); each group gets `__meta_url`. A failed
//! refresh is logged and keeps the previous groups.

use std::time::Duration;

use ferrite_config::discovery::{parse_target_groups_json, HttpSdConfig};
use ferrite_config::TargetGroup;
use tokio::time::Instant;
use tracing::warn;

use crate::client::{JobClient, ScrapeClient};
use crate::discovery::metrics::DiscoveryMetrics;
use crate::http::USER_AGENT;

/// The largest answer read (a bigger one fails the refresh).
pub const MAX_BODY_BYTES: usize = 64 << 20;

/// One entry: its client, its last groups and when it is due.
struct Endpoint {
    config: HttpSdConfig,
    client: Result<JobClient, String>,
    groups: Vec<TargetGroup>,
    due: Instant,
}

/// One job's HTTP discovery.
pub struct HttpDiscovery {
    endpoints: Vec<Endpoint>,
    /// The config's name in the metrics.
    name: String,
}

impl HttpDiscovery {
    /// Discovery for a job's `http_sd_configs`, every entry due now.
    pub fn new(configs: Vec<HttpSdConfig>, name: String) -> Self {
        let now = Instant::now();
        let endpoints = configs
            .into_iter()
            .map(|config| Endpoint {
                client: JobClient::new(&config.http_client).map_err(|e| e.to_string()),
                config,
                groups: Vec::new(),
                due: now,
            })
            .collect();
        HttpDiscovery { endpoints, name }
    }

    /// When the next entry is due.
    pub fn next_due(&self) -> Option<Instant> {
        self.endpoints.iter().map(|e| e.due).min()
    }

    /// Refreshes the entries that are due; true if their groups changed.
    pub async fn refresh_due(&mut self) -> bool {
        let now = Instant::now();
        let mut changed = false;
        for e in self.endpoints.iter_mut().filter(|e| e.due <= now) {
            let interval = refresh_interval(&e.config);
            e.due = now + interval;
            let metrics = DiscoveryMetrics::global();
            let started = Instant::now();
            let fetched = fetch(e, interval).await;
            let seconds = started.elapsed().as_secs_f64();
            match fetched {
                Ok(groups) => {
                    metrics.refreshed(&self.name, "http", false, seconds);
                    changed |= groups != e.groups;
                    e.groups = groups;
                }
                Err(err) => {
                    metrics.http_failure();
                    metrics.refreshed(&self.name, "http", true, seconds);
                    warn!(url = %e.config.url, error = %err, "Unable to refresh target groups");
                }
            }
        }
        changed
    }

    /// Every entry's groups.
    pub fn groups(&self) -> Vec<TargetGroup> {
        self.endpoints
            .iter()
            .flat_map(|e| e.groups.iter().cloned())
            .collect()
    }
}

fn refresh_interval(c: &HttpSdConfig) -> Duration {
    Duration::from_millis(u64::try_from(c.refresh_interval_ms).unwrap_or(0).max(1))
}

/// Fetches one entry's groups; a refresh takes at most its interval.
async fn fetch(e: &Endpoint, interval: Duration) -> Result<Vec<TargetGroup>, String> {
    let client = e.client.as_ref().map_err(Clone::clone)?;
    let request = client
        .http()?
        .get(&e.config.url)
        .header("User-Agent", USER_AGENT)
        .header("Accept", "application/json")
        .header(
            "X-Prometheus-Refresh-Interval-Seconds",
            ferrite_model::gofloat::format_f(interval.as_secs_f64()),
        )
        .timeout(interval);
    let request = client.prepare(request, interval).await?;
    let mut response = request.send().await.map_err(|e| e.to_string())?;
    let status = response.status();
    if status != reqwest::StatusCode::OK {
        return Err(format!(
            "server returned HTTP status {} {}",
            status.as_u16(),
            status.canonical_reason().unwrap_or("")
        ));
    }
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .unwrap_or_default();
    if !is_json_content_type(content_type.trim()) {
        return Err(format!("unsupported content type {content_type:?}"));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| e.to_string())? {
        if body.len() + chunk.len() > MAX_BODY_BYTES {
            return Err(format!("answer larger than {MAX_BODY_BYTES} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    let text = String::from_utf8(body).map_err(|e| e.to_string())?;
    let mut groups = parse_target_groups_json(&text)?;
    for g in &mut groups {
        g.labels.set("__meta_url", &e.config.url);
    }
    Ok(groups)
}

/// `application/json`, optionally with `; charset=utf-8` (quoted or not),
/// in any case, as Prometheus accepts it.
fn is_json_content_type(v: &str) -> bool {
    let lower = v.to_ascii_lowercase();
    let Some(rest) = lower.strip_prefix("application/json") else {
        return false;
    };
    if rest.is_empty() {
        return true;
    }
    let Some(params) = rest.strip_prefix(';') else {
        return false;
    };
    let params = params.trim_start_matches([' ', '\t', '\n', '\r', '\x0c']);
    // The value `utf-8` is matched as written (case-insensitively, as
    // Prometheus' pattern is), quoted or bare.
    params == "charset=utf-8" || params == "charset=\"utf-8\""
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_types_as_prometheus_accepts_them() {
        for ok in [
            "application/json",
            "Application/JSON",
            "application/json; charset=utf-8",
            "application/json;charset=\"UTF-8\"",
        ] {
            assert!(is_json_content_type(ok), "{ok}");
        }
        for bad in [
            "",
            "text/plain",
            "application/json; charset=latin1",
            "application/jsonx",
            "application/json;",
        ] {
            assert!(!is_json_content_type(bad), "{bad}");
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn fetches_groups_and_keeps_them_when_a_refresh_fails() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let answers = [
            (
                "200 OK",
                "application/json",
                r#"[{"targets":["a:1","b:2"],"labels":{"env":"x"}}]"#,
            ),
            ("500 Internal Server Error", "application/json", "[]"),
            ("200 OK", "text/plain", "[]"),
            ("200 OK", "application/json", "[null]"),
            ("200 OK", "application/json; charset=utf-8", "[]"),
        ];
        let server = tokio::spawn(async move {
            let mut seen = Vec::new();
            for (status, ct, body) in answers {
                let (mut sock, _) = listener.accept().await.expect("accept");
                let mut buf = vec![0u8; 4096];
                let n = sock.read(&mut buf).await.expect("read");
                seen.push(String::from_utf8_lossy(&buf[..n]).to_lowercase());
                let reply = format!(
                    "HTTP/1.1 {status}\r\ncontent-type: {ct}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                sock.write_all(reply.as_bytes()).await.expect("write");
            }
            seen
        });
        let url = format!("http://{addr}/sd");
        let config = HttpSdConfig {
            url: url.clone(),
            refresh_interval_ms: 15_000,
            http_client: Default::default(),
        };
        let mut d = HttpDiscovery::new(vec![config], "job".into());
        assert!(d.refresh_due().await);
        let groups = d.groups();
        assert_eq!(groups.len(), 1);
        assert_eq!(groups[0].targets, ["a:1", "b:2"]);
        assert_eq!(groups[0].labels.get("env"), "x");
        assert_eq!(groups[0].labels.get("__meta_url"), url);
        // Not due again before its interval.
        assert!(!d.refresh_due().await);
        // Failures (status, content type, a null group) keep the groups.
        for _ in 0..3 {
            d.endpoints[0].due = Instant::now();
            assert!(!d.refresh_due().await);
            assert_eq!(d.groups().len(), 1);
        }
        // An empty answer empties them.
        d.endpoints[0].due = Instant::now();
        assert!(d.refresh_due().await);
        assert!(d.groups().is_empty());
        let seen = server.await.expect("server");
        assert!(seen[0].starts_with("get /sd http/1.1"), "{}", seen[0]);
        assert!(seen[0].contains("accept: application/json"), "{}", seen[0]);
        assert!(
            seen[0].contains("x-prometheus-refresh-interval-seconds: 15"),
            "{}",
            seen[0]
        );
    }
}
