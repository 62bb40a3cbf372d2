//! `prometheus_http_*` on `/metrics`: requests through the server's routes
//! counted per handler (Prometheus' spelling of the route, without the
//! route prefix) and status code, timed and sized; requests no route
//! serves left out.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use ferrite_server::{start, ServerOptions, WebOptions};
use reqwest::Method;

fn options(dir: &Path, web: WebOptions) -> ServerOptions {
    ServerOptions {
        web,
        ..ServerOptions::new(dir.to_owned(), "127.0.0.1:0".parse::<SocketAddr>().unwrap())
    }
}

/// `/metrics` under `prefix`: its text and its samples by series
/// (`name{labels}` as written).
async fn scrape(addr: SocketAddr, prefix: &str) -> (String, HashMap<String, f64>) {
    let text = reqwest::get(format!("http://{addr}{prefix}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let samples = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            let (series, value) = l.rsplit_once(' ').unwrap();
            (series.to_string(), value.parse().unwrap())
        })
        .collect();
    (text, samples)
}

fn requests(code: u16, handler: &str) -> String {
    format!("prometheus_http_requests_total{{code=\"{code}\",handler=\"{handler}\"}}")
}

fn duration(part: &str, handler: &str) -> String {
    format!("prometheus_http_request_duration_seconds_{part}{{handler=\"{handler}\"}}")
}

fn size(part: &str, handler: &str) -> String {
    format!("prometheus_http_response_size_bytes_{part}{{handler=\"{handler}\"}}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_are_counted_per_route_and_code() {
    let tmp = tempfile::tempdir().unwrap();
    let server = start(options(tmp.path(), WebOptions::default()))
        .await
        .unwrap();
    let addr = server.addr;
    let client = reqwest::Client::new();
    let send = |method: Method, path: &str| {
        let request = client.request(method, format!("http://{addr}{path}"));
        async move {
            let r = request.send().await.unwrap();
            let status = r.status().as_u16();
            (status, r.bytes().await.unwrap().len() as f64)
        }
    };

    let mut query_bytes = 0.0;
    for (query, want) in [("1", 200), ("2", 200), ("(", 400)] {
        let (status, bytes) = send(Method::GET, &format!("/api/v1/query?query={query}")).await;
        assert_eq!(status, want, "{query}");
        query_bytes += bytes;
    }
    assert_eq!(send(Method::GET, "/api/v1/label/job/values").await.0, 200);
    let (status, ready_bytes) = send(Method::GET, "/-/ready").await;
    assert_eq!(status, 200);
    assert_eq!(send(Method::HEAD, "/-/ready").await.0, 200);
    // GET on a lifecycle endpoint is a route of its own in Prometheus.
    assert_eq!(send(Method::GET, "/-/quit").await.0, 405);
    // Not routed: no path, or no such method on the path.
    assert_eq!(send(Method::GET, "/nowhere").await.0, 404);
    assert_eq!(send(Method::GET, "/api/v1/write").await.0, 405);
    assert_eq!(send(Method::DELETE, "/-/ready").await.0, 405);

    let (text, samples) = scrape(addr, "").await;
    for (name, kind, help) in [
        (
            "prometheus_http_requests_total",
            "counter",
            "Counter of HTTP requests.",
        ),
        (
            "prometheus_http_request_duration_seconds",
            "histogram",
            "Histogram of latencies for HTTP requests.",
        ),
        (
            "prometheus_http_response_size_bytes",
            "histogram",
            "Histogram of response size for HTTP requests.",
        ),
    ] {
        assert!(
            text.contains(&format!("# HELP {name} {help}\n# TYPE {name} {kind}\n")),
            "{name}"
        );
    }
    let value = |series: String| samples.get(&series).copied();
    assert_eq!(value(requests(200, "/api/v1/query")), Some(2.0));
    assert_eq!(value(requests(400, "/api/v1/query")), Some(1.0));
    assert_eq!(
        value(requests(200, "/api/v1/label/:name/values")),
        Some(1.0)
    );
    assert_eq!(value(requests(200, "/-/ready")), Some(2.0));
    assert_eq!(value(requests(405, "/-/quit")), Some(1.0));
    assert_eq!(value(requests(405, "/-/ready")), None);
    assert_eq!(value(requests(405, "/api/v1/write")), None);
    // Every route is there from the start with a zero 200, this scrape's
    // own request included (counted once answered).
    assert_eq!(value(requests(200, "/api/v1/series")), Some(0.0));
    assert_eq!(value(requests(200, "/api/v1/write")), Some(0.0));
    assert_eq!(value(requests(200, "/metrics")), Some(0.0));
    let http_series: Vec<&String> = samples
        .keys()
        .filter(|s| s.starts_with("prometheus_http_"))
        .collect();
    for s in &http_series {
        assert!(!s.contains("nowhere") && !s.contains("code=\"404\""), "{s}");
        assert!(!s.contains("handler=\"/api/v1/label/{"), "{s}");
    }

    assert_eq!(value(duration("count", "/api/v1/query")), Some(3.0));
    assert!(value(duration("sum", "/api/v1/query")).is_some_and(|s| s > 0.0));
    assert_eq!(
        value(duration("bucket", "/api/v1/query").replace('}', ",le=\"+Inf\"}")),
        Some(3.0)
    );
    let first_bound = duration("bucket", "/api/v1/query").replace('}', ",le=\"0.1\"}");
    assert!(value(first_bound).is_some());
    assert_eq!(value(size("count", "/api/v1/query")), Some(3.0));
    assert_eq!(value(size("sum", "/api/v1/query")), Some(query_bytes));
    assert!(value(size("bucket", "/api/v1/query").replace('}', ",le=\"1e+09\"}")).is_some());
    // HEAD has no body: only the GET's bytes.
    assert_eq!(value(size("count", "/-/ready")), Some(2.0));
    assert_eq!(value(size("sum", "/-/ready")), Some(ready_bytes));
    // No histograms for a route never requested.
    assert_eq!(value(duration("count", "/api/v1/series")), None);
    assert_eq!(value(size("count", "/api/v1/series")), None);

    let (_, samples) = scrape(addr, "").await;
    assert_eq!(samples.get(&requests(200, "/metrics")), Some(&1.0));
    assert_eq!(samples.get(&size("count", "/metrics")), Some(&1.0));
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_route_prefix_is_not_part_of_the_handler() {
    let tmp = tempfile::tempdir().unwrap();
    let web = WebOptions {
        route_prefix: "/prom".into(),
        ..WebOptions::default()
    };
    let server = start(options(tmp.path(), web)).await.unwrap();
    let addr = server.addr;
    let r = reqwest::get(format!("http://{addr}/prom/api/v1/query?query=1"))
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let (_, samples) = scrape(addr, "/prom").await;
    assert_eq!(samples.get(&requests(200, "/api/v1/query")), Some(&1.0));
    assert!(
        samples.keys().all(|s| !s.contains("handler=\"/prom")),
        "{samples:?}"
    );
    server.shutdown().await.unwrap();
}

/// `--web.read-timeout`: a request whose body does not arrive in time gets
/// 408, counted under its route with the wait in its duration.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_too_slow_to_read_counts_as_the_routes_408() {
    use std::io::{Read, Write};
    let tmp = tempfile::tempdir().unwrap();
    let web = WebOptions {
        read_timeout: Duration::from_millis(200),
        ..WebOptions::default()
    };
    let server = start(options(tmp.path(), web)).await.unwrap();
    let addr = server.addr;
    // A client that promises a body and never sends it.
    let reply = tokio::task::spawn_blocking(move || {
        let mut c = std::net::TcpStream::connect(addr).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        c.write_all(
            b"POST /api/v1/query HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 10\r\n\r\nquery",
        )
        .unwrap();
        let mut buf = [0u8; 64];
        let n = c.read(&mut buf).unwrap();
        String::from_utf8_lossy(&buf[..n]).into_owned()
    })
    .await
    .unwrap();
    assert!(reply.starts_with("HTTP/1.1 408"), "{reply}");
    let (_, samples) = scrape(addr, "").await;
    assert_eq!(samples.get(&requests(408, "/api/v1/query")), Some(&1.0));
    // Timed from the route's start: the wait for the body is in it.
    let took = samples[&duration("sum", "/api/v1/query")];
    assert!(took >= 0.2, "{took}");
    server.shutdown().await.unwrap();
}
