//! A scrape job's HTTP client settings through the whole server: an
//! `https` target with a certificate made here, trusted through
//! `tls_config.ca_file` (relative to the configuration file) or checked
//! against `server_name`, and refused without them; a target demanding
//! basic authentication (a wrong password is `up` 0 with Prometheus'
//! error); a bearer token from a `credentials_file` that changes between
//! scrapes.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use ferrite_server::{start, ServerOptions};
use serde_json::Value;

const BODY: &str = "# TYPE t gauge\nt 1\n";

/// A listener that speaks TLS with one certificate.
struct TlsListener {
    tcp: tokio::net::TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
}

impl axum::serve::Listener for TlsListener {
    type Io = tokio_rustls::server::TlsStream<tokio::net::TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let Ok((tcp, addr)) = self.tcp.accept().await else {
                continue;
            };
            // A client that does not trust the certificate ends the
            // handshake: wait for the next one.
            if let Ok(tls) = self.acceptor.accept(tcp).await {
                return (tls, addr);
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.tcp.local_addr()
    }
}

/// Serves `/metrics` over TLS with a new self-signed certificate for
/// `names`; returns its address and the certificate's PEM text.
async fn start_tls_target(names: &[&str]) -> (SocketAddr, String) {
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let certified = rcgen::generate_simple_self_signed(names).unwrap();
    let pem = certified.cert.pem();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(certified.signing_key.serialize_der().into());
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![certified.cert.der().clone()], key)
        .unwrap();
    let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = tcp.local_addr().unwrap();
    let listener = TlsListener {
        tcp,
        acceptor: tokio_rustls::TlsAcceptor::from(Arc::new(config)),
    };
    let app = Router::new().route("/metrics", get(|| async { BODY }));
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (addr, pem)
}

/// Serves `/metrics` over plain HTTP to requests `allow` lets through
/// (else 401), recording each request's `Authorization` header.
async fn start_auth_target(
    allow: impl Fn(&str) -> bool + Clone + Send + Sync + 'static,
    seen: Arc<Mutex<Vec<String>>>,
) -> SocketAddr {
    let app = Router::new().route(
        "/metrics",
        get(move |headers: HeaderMap| {
            let allow = allow.clone();
            let seen = seen.clone();
            async move {
                let auth = headers
                    .get("authorization")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("")
                    .to_string();
                seen.lock().unwrap().push(auth.clone());
                if allow(&auth) {
                    BODY.into_response()
                } else {
                    (StatusCode::UNAUTHORIZED, "no").into_response()
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    addr
}

/// Starts a server with `config` written as `prometheus.yml` in `dir`.
async fn start_server(dir: &std::path::Path, config: &str) -> ferrite_server::RunningServer {
    let path = dir.join("prometheus.yml");
    std::fs::write(&path, config).unwrap();
    let mut opts = ServerOptions::new(dir.join("data"), "127.0.0.1:0".parse().unwrap());
    opts.config = ferrite_config::Config::load(&path).unwrap();
    start(opts).await.unwrap()
}

/// The active targets, by scrape pool, once every one was scraped.
async fn scraped_targets(addr: SocketAddr, pools: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let t: Value = reqwest::get(format!("http://{addr}/api/v1/targets"))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let active = t["data"]["activeTargets"].as_array().unwrap().clone();
        if active.len() == pools && active.iter().all(|a| a["health"] != "unknown") {
            return active;
        }
        assert!(Instant::now() < deadline, "targets not scraped: {t}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn target<'a>(active: &'a [Value], pool: &str) -> &'a Value {
    active
        .iter()
        .find(|a| a["scrapePool"] == pool)
        .unwrap_or_else(|| panic!("no target of {pool}: {active:?}"))
}

/// `up` of `job` (queried through the API).
async fn up(addr: SocketAddr, job: &str) -> String {
    let body: Value = reqwest::Client::new()
        .get(format!("http://{addr}/api/v1/query"))
        .query(&[("query", format!("up{{job=\"{job}\"}}"))])
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let r = body["data"]["result"].as_array().unwrap();
    assert_eq!(r.len(), 1, "{body}");
    r[0]["value"][1].as_str().unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_targets_are_trusted_through_the_job_ca_file() {
    let (addr, pem) = start_tls_target(&["localhost", "127.0.0.1"]).await;
    let (named_addr, named_pem) = start_tls_target(&["target.example"]).await;
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("ca.pem"), &pem).unwrap();
    std::fs::write(tmp.path().join("named-ca.pem"), &named_pem).unwrap();
    let server = start_server(
        tmp.path(),
        &format!(
            "global:\n  scrape_interval: 200ms\n  scrape_timeout: 150ms\n\
             scrape_configs:\n\
             \x20 - job_name: trusted\n    scheme: https\n    tls_config: {{ca_file: ca.pem}}\n    static_configs: [{{targets: [\"{addr}\"]}}]\n\
             \x20 - job_name: untrusted\n    scheme: https\n    static_configs: [{{targets: [\"{addr}\"]}}]\n\
             \x20 - job_name: named\n    scheme: https\n    tls_config: {{ca_file: named-ca.pem, server_name: target.example}}\n    static_configs: [{{targets: [\"{named_addr}\"]}}]\n\
             \x20 - job_name: skip\n    scheme: https\n    tls_config: {{insecure_skip_verify: true}}\n    static_configs: [{{targets: [\"{named_addr}\"]}}]\n"
        ),
    )
    .await;
    let active = scraped_targets(server.addr, 4).await;
    for pool in ["trusted", "named", "skip"] {
        let t = target(&active, pool);
        assert_eq!(t["health"], "up", "{t}");
        assert_eq!(t["lastError"], "", "{t}");
    }
    let t = target(&active, "untrusted");
    assert_eq!(t["health"], "down", "{t}");
    let e = t["lastError"].as_str().unwrap();
    assert!(
        e.starts_with(&format!("Get \"https://{addr}/metrics\": ")) && e.contains("certificate"),
        "{e}"
    );
    assert_eq!(up(server.addr, "trusted").await, "1");
    assert_eq!(up(server.addr, "untrusted").await, "0");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn basic_auth_targets_take_the_right_password_only() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    // base64("user:right")
    let addr = start_auth_target(|auth| auth == "Basic dXNlcjpyaWdodA==", seen.clone()).await;
    let tmp = tempfile::tempdir().unwrap();
    let server = start_server(
        tmp.path(),
        &format!(
            "global:\n  scrape_interval: 200ms\n  scrape_timeout: 150ms\n\
             scrape_configs:\n\
             \x20 - job_name: right\n    basic_auth: {{username: user, password: right}}\n    static_configs: [{{targets: [\"{addr}\"]}}]\n\
             \x20 - job_name: wrong\n    basic_auth: {{username: user, password: wrong}}\n    static_configs: [{{targets: [\"{addr}\"]}}]\n"
        ),
    )
    .await;
    let active = scraped_targets(server.addr, 2).await;
    assert_eq!(target(&active, "right")["health"], "up");
    let wrong = target(&active, "wrong");
    assert_eq!(wrong["health"], "down");
    assert_eq!(
        wrong["lastError"],
        "server returned HTTP status 401 Unauthorized"
    );
    assert_eq!(up(server.addr, "right").await, "1");
    assert_eq!(up(server.addr, "wrong").await, "0");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotated_bearer_token_file_is_used_at_the_next_scrape() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let addr = start_auth_target(|auth| auth.starts_with("Bearer "), seen.clone()).await;
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("token"), "first\n").unwrap();
    let server = start_server(
        tmp.path(),
        &format!(
            "global:\n  scrape_interval: 200ms\n  scrape_timeout: 150ms\n\
             scrape_configs:\n\
             \x20 - job_name: token\n    authorization: {{credentials_file: token}}\n    static_configs: [{{targets: [\"{addr}\"]}}]\n"
        ),
    )
    .await;
    let wait_for = |token: &'static str| {
        let seen = seen.clone();
        async move {
            let deadline = Instant::now() + Duration::from_secs(20);
            while !seen.lock().unwrap().iter().any(|a| a == token) {
                let so_far = seen.lock().unwrap().clone();
                assert!(
                    Instant::now() < deadline,
                    "no scrape with {token}: {so_far:?}"
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    };
    wait_for("Bearer first").await;
    std::fs::write(tmp.path().join("token"), "second").unwrap();
    wait_for("Bearer second").await;
    assert_eq!(up(server.addr, "token").await, "1");
    // Once the file is gone, scrapes fail with Prometheus' reason.
    std::fs::remove_file(tmp.path().join("token")).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let active = scraped_targets(server.addr, 1).await;
        let e = active[0]["lastError"].as_str().unwrap().to_string();
        if !e.is_empty() {
            assert_eq!(
                e,
                format!(
                    "Get \"http://{addr}/metrics\": unable to read authorization credentials: unable to read file {0}: open {0}: no such file or directory",
                    tmp.path().join("token").display()
                )
            );
            break;
        }
        assert!(Instant::now() < deadline, "the scrape never failed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
