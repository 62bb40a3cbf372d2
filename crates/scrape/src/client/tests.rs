use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::*;

fn settings(yaml: &str) -> HttpClientConfig {
    let text = format!("scrape_configs:\n  - job_name: a\n{yaml}");
    let mut cfg = ferrite_config::Config::parse(&text, "p.yml").expect("valid");
    cfg.scrape_configs.remove(0).http_client
}

fn client(yaml: &str) -> JobClient {
    JobClient::new(&settings(yaml)).expect("builds")
}

fn build_error(yaml: &str) -> String {
    JobClient::new(&settings(yaml))
        .expect_err("refused")
        .to_string()
}

/// The headers `client` gives a request.
async fn headers(client: &JobClient) -> Result<Vec<(String, String)>, String> {
    let http = client.http()?;
    let request = http
        .get("http://127.0.0.1:1/metrics")
        .header("Accept", "text/plain");
    let request = client
        .prepare(request, Duration::from_secs(5))
        .await?
        .build()
        .map_err(|e| e.to_string())?;
    Ok(request
        .headers()
        .iter()
        .map(|(k, v)| {
            (
                k.to_string(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect())
}

fn header<'a>(hs: &'a [(String, String)], name: &str) -> Vec<&'a str> {
    hs.iter()
        .filter(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
        .collect()
}

#[tokio::test]
async fn credentials_files_are_read_for_every_request() {
    let dir = tempfile::tempdir().expect("tempdir");
    let token = dir.path().join("token");
    std::fs::write(&token, "first\n").expect("write");
    let c = client(&format!(
        "    authorization: {{credentials_file: {}}}\n",
        token.display()
    ));
    let hs = headers(&c).await.expect("headers");
    assert_eq!(header(&hs, "authorization"), ["Bearer first"]);
    std::fs::write(&token, "  second  ").expect("write");
    let hs = headers(&c).await.expect("headers");
    assert_eq!(header(&hs, "authorization"), ["Bearer second"]);
    std::fs::remove_file(&token).expect("rm");
    assert_eq!(
        headers(&c).await.expect_err("no file"),
        format!(
            "unable to read authorization credentials: unable to read file {0}: open {0}: no such file or directory",
            token.display()
        )
    );
}

#[tokio::test]
async fn basic_auth_bearer_tokens_and_headers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pw = dir.path().join("pw");
    std::fs::write(&pw, "pass\n").expect("write");
    let h = dir.path().join("h");
    std::fs::write(&h, "from-file").expect("write");
    let c = client(&format!(
        "    basic_auth: {{username: user, password_file: {}}}\n    http_headers: {{X-Tenant: {{values: [a, b], secrets: [s], files: [{}]}}, accept: {{values: [extra]}}}}\n",
        pw.display(),
        h.display()
    ));
    let hs = headers(&c).await.expect("headers");
    // base64("user:pass")
    assert_eq!(header(&hs, "authorization"), ["Basic dXNlcjpwYXNz"]);
    assert_eq!(header(&hs, "x-tenant"), ["a", "b", "s", "from-file"]);
    assert_eq!(header(&hs, "accept"), ["text/plain", "extra"]);
    let c = client("    bearer_token: tok\n");
    let hs = headers(&c).await.expect("headers");
    assert_eq!(header(&hs, "authorization"), ["Bearer tok"]);
    let c = client("    authorization: {type: Custom, credentials: xyz}\n");
    let hs = headers(&c).await.expect("headers");
    assert_eq!(header(&hs, "authorization"), ["Custom xyz"]);
    let c = client("    basic_auth: {username: u}\n");
    let hs = headers(&c).await.expect("headers");
    assert_eq!(header(&hs, "authorization"), ["Basic dTo="]);
    let c = client("");
    assert!(header(&headers(&c).await.expect("headers"), "authorization").is_empty());
    let c = client("    http_headers: {X-A: {files: [/nonexistent/h]}}\n");
    assert_eq!(
        headers(&c).await.expect_err("no file"),
        "unable to read headers file /nonexistent/h: open /nonexistent/h: no such file or directory"
    );
}

#[test]
fn building_fails_as_prometheus_fails() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bad_ca = dir.path().join("ca.pem");
    std::fs::write(&bad_ca, "not a certificate").expect("write");
    for (yaml, want) in [
        (
            "    authorization: {credentials_ref: r}\n".to_string(),
            "error creating HTTP client: unable to use credentials: cannot use secret ref without manager".to_string(),
        ),
        (
            "    basic_auth: {password_ref: r}\n".to_string(),
            "error creating HTTP client: unable to use password: cannot use secret ref without manager".to_string(),
        ),
        (
            "    tls_config: {ca_ref: r}\n".to_string(),
            "error creating HTTP client: unable to use CA cert: cannot use secret ref without manager".to_string(),
        ),
        (
            "    tls_config: {ca_file: /nonexistent/ca.pem}\n".to_string(),
            "error creating HTTP client: unable to read CA cert: unable to read file /nonexistent/ca.pem: open /nonexistent/ca.pem: no such file or directory".to_string(),
        ),
        (
            format!("    tls_config: {{ca_file: {}}}\n", bad_ca.display()),
            format!("error creating HTTP client: unable to use specified CA cert file {}", bad_ca.display()),
        ),
        (
            "    tls_config: {ca: nothing}\n".to_string(),
            "error creating HTTP client: unable to use specified CA cert inline".to_string(),
        ),
        (
            "    tls_config: {min_version: TLS13, max_version: TLS12}\n".to_string(),
            "error creating HTTP client: tls_config.max_version must be greater than or equal to tls_config.min_version if both are specified".to_string(),
        ),
        (
            "    tls_config: {max_version: TLS11}\n".to_string(),
            "error creating HTTP client: tls_config.max_version TLS11: TLS versions below 1.2 are not supported".to_string(),
        ),
        (
            "    tls_config: {cert: x, key: y}\n".to_string(),
            "error creating HTTP client: unable to use specified client cert (inline) & key (inline): tls: failed to find any PEM data in certificate input".to_string(),
        ),
        (
            "    oauth2: {client_id: i, token_url: http://t, client_secret_ref: r}\n".to_string(),
            "error creating HTTP client: unable to use client secret: cannot use secret ref without manager".to_string(),
        ),
    ] {
        assert_eq!(build_error(&yaml), want, "{yaml}");
    }
    // Settings that build.
    for yaml in [
        "    tls_config: {insecure_skip_verify: true, server_name: x, min_version: TLS10}\n",
        "    proxy_url: http://proxy:3128\n    no_proxy: localhost\n    proxy_connect_header: {X-A: [s]}\n",
        "    proxy_from_environment: true\n",
        "    follow_redirects: false\n    enable_http2: false\n",
    ] {
        JobClient::new(&settings(yaml)).expect(yaml);
    }
}

#[test]
fn debug_shows_no_secret() {
    let c = client(
        "    basic_auth: {username: u, password: hunter2}\n    http_headers: {X-A: {secrets: [headerpw]}}\n",
    );
    let shown = format!("{c:?}");
    assert!(
        !shown.contains("hunter2") && !shown.contains("headerpw"),
        "{shown}"
    );
}

/// What a test token endpoint saw.
#[derive(Default)]
struct Seen {
    requests: Vec<String>,
}

/// Serves one HTTP/1.1 answer per connection from `answer(request)`.
async fn serve(
    answer: impl Fn(&str) -> (u16, &'static str, String) + Send + Sync + 'static,
) -> (String, Arc<Mutex<Seen>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let seen = Arc::new(Mutex::new(Seen::default()));
    let log = seen.clone();
    let answer = Arc::new(answer);
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            let mut buf = Vec::new();
            let mut chunk = [0u8; 4096];
            while let Ok(n) = conn.read(&mut chunk).await {
                if n == 0 {
                    break;
                }
                buf.extend_from_slice(&chunk[..n]);
                let text = String::from_utf8_lossy(&buf).to_string();
                if let Some(end) = text.find("\r\n\r\n") {
                    let length = text[..end]
                        .lines()
                        .find_map(|l| {
                            let (k, v) = l.split_once(':')?;
                            k.eq_ignore_ascii_case("content-length")
                                .then(|| v.trim().parse::<usize>().ok())?
                        })
                        .unwrap_or(0);
                    if buf.len() >= end + 4 + length {
                        break;
                    }
                }
            }
            let request = String::from_utf8_lossy(&buf).to_string();
            let (status, content_type, body) = answer(&request);
            log.lock().expect("lock").requests.push(request);
            let reply = format!(
                "HTTP/1.1 {status} X\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = conn.write_all(reply.as_bytes()).await;
        }
    });
    (format!("http://{addr}"), seen)
}

#[tokio::test]
async fn oauth2_tokens_are_fetched_cached_and_renewed() {
    let (url, seen) = serve(|request| {
        // The endpoint takes the credentials as form parameters only.
        if request.contains("client_secret=s%26cret") {
            (
                200,
                "application/json",
                r#"{"access_token":"tok1","token_type":"bearer","expires_in":3600}"#.to_string(),
            )
        } else {
            (
                401,
                "application/json",
                r#"{"error":"invalid_client"}"#.to_string(),
            )
        }
    })
    .await;
    let c = client(&format!(
        "    oauth2: {{client_id: id, client_secret: \"s&cret\", token_url: {url}/token, scopes: [a, b], endpoint_params: {{audience: x}}}}\n"
    ));
    for _ in 0..3 {
        let hs = headers(&c).await.expect("headers");
        assert_eq!(header(&hs, "authorization"), ["Bearer tok1"]);
    }
    let requests = seen.lock().expect("lock").requests.clone();
    assert_eq!(
        requests.len(),
        2,
        "one refused try in the header, one token: {requests:?}"
    );
    assert!(requests[0].to_lowercase().contains("authorization: basic "));
    let body = requests[1].split("\r\n\r\n").nth(1).unwrap_or("");
    assert_eq!(
        body,
        "audience=x&client_id=id&client_secret=s%26cret&grant_type=client_credentials&scope=a+b"
    );

    let (url, _) = serve(|_| (500, "text/plain", "down".to_string())).await;
    let c = client(&format!(
        "    oauth2: {{client_id: id, token_url: {url}/token}}\n"
    ));
    assert_eq!(
        headers(&c).await.expect_err("no token"),
        "oauth2: cannot fetch token: 500 Internal Server Error\nResponse: down"
    );
}

#[tokio::test]
async fn oauth2_secret_files_are_read_for_every_request() {
    let (url, seen) = serve(|request| {
        let token = if request.contains("Basic aWQ6b25l") {
            "for-one"
        } else {
            "for-two"
        };
        (
            200,
            "application/x-www-form-urlencoded",
            format!("access_token={token}&token_type=bearer"),
        )
    })
    .await;
    let dir = tempfile::tempdir().expect("tempdir");
    let secret = dir.path().join("secret");
    std::fs::write(&secret, "one\n").expect("write");
    let c = client(&format!(
        "    oauth2: {{client_id: id, client_secret_file: {}, token_url: {url}/t}}\n",
        secret.display()
    ));
    let hs = headers(&c).await.expect("headers");
    assert_eq!(header(&hs, "authorization"), ["Bearer for-one"]);
    let hs = headers(&c).await.expect("headers");
    assert_eq!(header(&hs, "authorization"), ["Bearer for-one"]);
    std::fs::write(&secret, "two").expect("write");
    let hs = headers(&c).await.expect("headers");
    assert_eq!(header(&hs, "authorization"), ["Bearer for-two"]);
    assert_eq!(seen.lock().expect("lock").requests.len(), 2);
}
