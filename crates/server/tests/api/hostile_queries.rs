//! Hostile queries to a server on loopback: PromQL nested deep in every
//! construct (aggregations, calls, parentheses, unary minus, binary
//! operator chains, subqueries, `@` and `offset`) up to 100,000 levels,
//! very long queries, deep `match[]` selectors, by GET and by POST. Each
//! gets an answer: the query's result when its nesting is within
//! `MAX_NESTING_DEPTH`, a 400 `bad_data` naming the limit past it. The
//! query timeout and `--query.max-samples` still apply to deep queries,
//! the server stays up, and a sample written first is read back last.

use std::net::SocketAddr;

use ferrite_promql::nesting::{check, MAX_NESTING_DEPTH};
use ferrite_remote::proto::v1;
use ferrite_server::{start, ServerOptions};
use prost::Message;
use serde_json::Value;

/// The written sample: `up{job="a"} 1` at this time (ms).
const T0: i64 = 1_700_000_000_000;
/// Queries are evaluated 30 s after it (Unix seconds).
const QUERY_TIME: i64 = T0 / 1000 + 30;

/// A construct nested `n` deep over `up`, and the value it has.
struct Construct {
    name: &'static str,
    build: fn(usize) -> String,
    value: fn(usize) -> f64,
}

fn wrap(open: &str, inner: &str, close: &str, n: usize) -> String {
    format!("{}{inner}{}", open.repeat(n), close.repeat(n))
}

fn one(_: usize) -> f64 {
    1.0
}

fn alternating(n: usize) -> f64 {
    if n.is_multiple_of(2) {
        1.0
    } else {
        -1.0
    }
}

const CONSTRUCTS: &[Construct] = &[
    Construct {
        name: "aggregation",
        build: |n| wrap("sum(", "up", ")", n),
        value: one,
    },
    Construct {
        name: "aggregation with a parameter",
        build: |n| wrap("topk(1, ", "up", ")", n),
        value: one,
    },
    Construct {
        name: "function call",
        build: |n| wrap("abs(", "up", ")", n),
        value: one,
    },
    Construct {
        name: "parentheses",
        build: |n| wrap("(", "up", ")", n),
        value: one,
    },
    Construct {
        name: "unary minus",
        build: |n| format!("{}up", "-".repeat(n)),
        value: alternating,
    },
    Construct {
        name: "binary operator chain",
        build: |n| format!("up{}", " * up".repeat(n)),
        value: one,
    },
    Construct {
        name: "set operator chain",
        build: |n| format!("up{}", " or up".repeat(n)),
        value: one,
    },
    Construct {
        name: "subqueries",
        build: |n| wrap("max_over_time(", "up", "[1m:10s])", n),
        value: one,
    },
    Construct {
        name: "subqueries with @ and offset",
        build: |n| {
            let close = format!("[1m:10s] @ {QUERY_TIME} offset 10s)");
            wrap("max_over_time(", "up", &close, n)
        },
        value: one,
    },
];

fn write_body() -> Vec<u8> {
    let req = v1::WriteRequest {
        timeseries: vec![v1::TimeSeries {
            labels: [("__name__", "up"), ("job", "a")]
                .iter()
                .map(|(n, v)| v1::Label {
                    name: n.as_bytes().to_vec(),
                    value: v.as_bytes().to_vec(),
                })
                .collect(),
            samples: vec![v1::Sample {
                value: 1.0,
                timestamp: T0,
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    snap::raw::Encoder::new()
        .compress_vec(&req.encode_to_vec())
        .expect("snappy")
}

/// A client for one server.
struct Client {
    addr: SocketAddr,
    http: reqwest::Client,
}

impl Client {
    /// `path` with `params` by GET (in the URL) or POST (a form body):
    /// the status and the JSON answer.
    async fn call(&self, path: &str, params: &[(&str, &str)], post: bool) -> (u16, Value) {
        let url = format!("http://{}{path}", self.addr);
        let req = if post {
            self.http.post(&url).form(params)
        } else {
            self.http.get(&url).query(params)
        };
        let resp = req.send().await.expect("the server answers");
        let status = resp.status().as_u16();
        let text = resp.text().await.expect("a whole answer");
        let json = serde_json::from_str(&text).unwrap_or(Value::String(text));
        (status, json)
    }

    async fn query(&self, q: &str, post: bool) -> (u16, Value) {
        let time = QUERY_TIME.to_string();
        self.call("/api/v1/query", &[("query", q), ("time", &time)], post)
            .await
    }

    async fn healthy(&self) {
        let (status, _) = self.call("/-/healthy", &[], false).await;
        assert_eq!(status, 200, "the server is down");
    }
}

/// Sends a GET of `/api/v1/query` with `query` as it is (no HTTP client
/// builds URLs this long) and returns the response's status line.
async fn raw_get(addr: SocketAddr, query: &str) -> String {
    let head = format!(
        "GET /api/v1/query?query={query} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    );
    tokio::task::spawn_blocking(move || {
        use std::io::{Read, Write};
        let mut conn = std::net::TcpStream::connect(addr).expect("connecting");
        // The server may answer, and close, before reading the whole head.
        let _ = conn.write_all(head.as_bytes());
        let mut answer = Vec::new();
        let _ = conn.read_to_end(&mut answer);
        let answer = String::from_utf8_lossy(&answer);
        answer.lines().next().unwrap_or("no answer").to_owned()
    })
    .await
    .expect("the raw GET")
}

/// The single value of an instant query's answer.
fn single_value(v: &Value) -> f64 {
    let value = match v["data"]["resultType"].as_str() {
        Some("scalar") => &v["data"]["result"][1],
        _ => &v["data"]["result"][0]["value"][1],
    };
    value
        .as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no single value in {}", brief(v)))
}

/// An answer cut short for an assertion message.
fn brief(v: &Value) -> String {
    v.to_string().chars().take(300).collect()
}

/// Expects a 400 `bad_data` that names a limit.
fn assert_refused(what: &str, status: u16, v: &Value) {
    assert_eq!(status, 400, "{what}: {}", brief(v));
    assert_eq!(v["errorType"], "bad_data", "{what}: {}", brief(v));
    let err = v["error"].as_str().unwrap_or("");
    assert!(err.contains("the limit is"), "{what}: {}", brief(v));
}

async fn start_server(dir: &std::path::Path, max_samples: usize) -> ferrite_server::RunningServer {
    let mut opts = ServerOptions::new(dir.to_owned(), "127.0.0.1:0".parse().expect("address"));
    opts.engine.max_samples = max_samples;
    start(opts).await.expect("the server starts")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deep_and_long_queries_are_answered_and_the_server_stays_up() {
    let tmp = tempfile::tempdir().expect("a temporary dir");
    let server = start_server(tmp.path(), 50_000_000).await;
    let c = Client {
        addr: server.addr,
        http: reqwest::Client::new(),
    };
    let resp = c
        .http
        .post(format!("http://{}/api/v1/write", c.addr))
        .header("Content-Type", "application/x-protobuf")
        .header("Content-Encoding", "snappy")
        .body(write_body())
        .send()
        .await
        .expect("remote write answers");
    assert_eq!(resp.status().as_u16(), 204);

    // The request: `sum(` nested 1,000 deep, as curl's
    // --data-urlencode sends it.
    let q = wrap("sum(", "up", ")", 1000);
    let (status, v) = c.query(&q, true).await;
    assert_eq!(status, 200, "{}", brief(&v));
    assert_eq!(single_value(&v), 1.0);

    for con in CONSTRUCTS {
        for n in [10, 1000, MAX_NESTING_DEPTH - 2, 100_000] {
            let q = (con.build)(n);
            let within = check(&q).is_ok();
            for post in [true, false] {
                // The client builds URLs of up to 64 KiB (encoded).
                if !post && q.len() > 16 << 10 {
                    continue;
                }
                let what = format!(
                    "{}, {n} deep, {}",
                    con.name,
                    if post { "POST" } else { "GET" }
                );
                let (status, v) = c.query(&q, post).await;
                if within {
                    assert_eq!(status, 200, "{what}: {}", brief(&v));
                    assert_eq!(single_value(&v), (con.value)(n), "{what}");
                } else {
                    assert_refused(&what, status, &v);
                }
            }
            c.healthy().await;
        }
    }

    // A range query at the limit, and past it.
    let deep = wrap("abs(", "up", ")", MAX_NESTING_DEPTH - 1);
    let (start, end) = ((QUERY_TIME - 20).to_string(), QUERY_TIME.to_string());
    for (q, ok) in [(deep.clone(), true), (format!("-{deep}"), false)] {
        let params = [
            ("query", q.as_str()),
            ("start", &start),
            ("end", &end),
            ("step", "10"),
        ];
        let (status, v) = c.call("/api/v1/query_range", &params, true).await;
        if ok {
            assert_eq!(status, 200, "{}", brief(&v));
            assert_eq!(
                v["data"]["result"][0]["values"].as_array().map(Vec::len),
                Some(3)
            );
        } else {
            assert_refused("range query past the limit", status, &v);
        }
    }

    // A GET whose URL is too long for the request head is refused.
    let status = raw_get(c.addr, &wrap("sum(", "up", ")", 100_000)).await;
    assert!(status.starts_with("HTTP/1.1 4"), "{status}");
    c.healthy().await;

    // Very long but shallow: a 1 MB regex alternation (answered, or
    // refused by the regex size limit), 50,000 `or`-ed selectors (refused
    // by the depth limit), a selector with 5,000 matchers (answered).
    let alternation: Vec<String> = (0..100_000).map(|i| format!("host-{i}")).collect();
    let long_regex = format!("up{{job=~\"a|{}\"}}", alternation.join("|"));
    let (status, v) = c.query(&long_regex, true).await;
    assert!(status == 200 || status == 400, "{}", brief(&v));
    let ors = format!("up{}", " or up{job=\"x\"}".repeat(50_000));
    let (status, v) = c.query(&ors, true).await;
    assert_refused("50,000 or-ed selectors", status, &v);
    let matchers: Vec<String> = (0..5_000).map(|i| format!("l{i}!=\"v\"")).collect();
    let (status, v) = c
        .query(&format!("up{{{}}}", matchers.join(",")), true)
        .await;
    assert_eq!(status, 200, "{}", brief(&v));
    assert_eq!(single_value(&v), 1.0);
    c.healthy().await;

    // Deep `match[]` selectors and exemplar queries.
    let deep_selector = wrap("sum(", "up", ")", 100_000);
    let shallower = wrap("sum(", "up", ")", 2_000);
    for (path, post) in [
        ("/api/v1/series", true),
        ("/api/v1/labels", true),
        ("/api/v1/series", false),
        ("/api/v1/label/job/values", false),
    ] {
        let selector = if post { &deep_selector } else { &shallower };
        let (status, v) = c.call(path, &[("match[]", selector)], post).await;
        assert_eq!(status, 400, "{path}: {}", brief(&v));
        assert_eq!(v["errorType"], "bad_data", "{path}");
    }
    let (status, v) = c
        .call(
            "/api/v1/query_exemplars",
            &[("query", &deep_selector)],
            true,
        )
        .await;
    assert_refused("query_exemplars", status, &v);

    // The query timeout applies to deep queries.
    let slow = wrap("max_over_time(", "up", "[1h:1s])", 50);
    let (status, v) = c
        .call(
            "/api/v1/query",
            &[("query", &slow), ("timeout", "1ms")],
            true,
        )
        .await;
    assert_eq!(status, 503, "{}", brief(&v));
    assert_eq!(v["errorType"], "timeout");

    // What was written first is still there.
    let (status, v) = c.query("up", false).await;
    assert_eq!(status, 200, "{}", brief(&v));
    assert_eq!(v["data"]["result"][0]["metric"]["job"], "a");
    assert_eq!(single_value(&v), 1.0);
    server.shutdown().await.expect("a clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_samples_applies_to_deep_queries() {
    let tmp = tempfile::tempdir().expect("a temporary dir");
    let server = start_server(tmp.path(), 1_000).await;
    let c = Client {
        addr: server.addr,
        http: reqwest::Client::new(),
    };
    // Every level of these subqueries holds 3,600 points.
    let q = wrap("max_over_time(", "vector(1)", "[1h:1s])", 100);
    let (status, v) = c.query(&q, true).await;
    assert_eq!(status, 422, "{}", brief(&v));
    let err = v["error"].as_str().unwrap_or("");
    assert!(err.contains("too many samples"), "{}", brief(&v));
    c.healthy().await;
    server.shutdown().await.expect("a clean shutdown");
}
