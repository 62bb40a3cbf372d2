//! The server end to end on loopback: remote write in, data on disk after a
//! clean shutdown, Prometheus' status codes.

use std::net::SocketAddr;

use ferrite_remote::proto::v1;
use ferrite_server::{start, ServerOptions};
use ferrite_tsdb::{Db, DbOptions};
use prost::Message;

fn options(dir: &std::path::Path) -> ServerOptions {
    ServerOptions {
        flags: vec![("storage.tsdb.path".into(), dir.display().to_string())],
        ..ServerOptions::new(dir.to_owned(), "127.0.0.1:0".parse::<SocketAddr>().unwrap())
    }
}

fn series(name: &str, job: &str, samples: &[(i64, f64)]) -> v1::TimeSeries {
    v1::TimeSeries {
        labels: [("__name__", name), ("job", job)]
            .iter()
            .map(|(n, v)| v1::Label {
                name: n.as_bytes().to_vec(),
                value: v.as_bytes().to_vec(),
            })
            .collect(),
        samples: samples
            .iter()
            .map(|&(timestamp, value)| v1::Sample { value, timestamp })
            .collect(),
        ..Default::default()
    }
}

fn body(ts: Vec<v1::TimeSeries>) -> Vec<u8> {
    let req = v1::WriteRequest {
        timeseries: ts,
        ..Default::default()
    };
    snap::raw::Encoder::new()
        .compress_vec(&req.encode_to_vec())
        .unwrap()
}

async fn post(addr: SocketAddr, body: Vec<u8>) -> (u16, String) {
    let resp = reqwest::Client::new()
        .post(format!("http://{addr}/api/v1/write"))
        .header("Content-Type", "application/x-protobuf")
        .header("Content-Encoding", "snappy")
        .header("X-Prometheus-Remote-Write-Version", "0.1.0")
        .body(body)
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    (status, resp.text().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_write_then_clean_shutdown_keeps_everything() {
    let tmp = tempfile::tempdir().unwrap();
    let server = start(options(tmp.path())).await.unwrap();
    let addr = server.addr;

    let health = reqwest::get(format!("http://{addr}/-/ready"))
        .await
        .unwrap();
    assert_eq!(health.status().as_u16(), 200);
    let info: serde_json::Value = reqwest::get(format!("http://{addr}/api/v1/status/buildinfo"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(info["status"], "success");

    let t0 = 1_700_000_000_000;
    let (status, text) = post(
        addr,
        body(vec![
            series("up", "a", &[(t0, 1.0), (t0 + 15_000, 1.0)]),
            series("up", "b", &[(t0, 0.0)]),
        ]),
    )
    .await;
    assert_eq!(status, 204, "{text}");

    // 1.0 is all or nothing: an out-of-order sample refuses the request.
    let (status, text) = post(
        addr,
        body(vec![
            series("up", "b", &[(t0 + 15_000, 1.0)]),
            series("up", "a", &[(t0, 5.0)]),
        ]),
    )
    .await;
    assert_eq!(status, 400);
    assert!(
        text.contains("out of order") || text.contains("duplicate"),
        "{text}"
    );

    // Garbage: 400 with a reason, nothing written, the server carries on.
    let (status, text) = post(addr, b"not snappy".to_vec()).await;
    assert_eq!(status, 400, "{text}");

    // The query API over what was written.
    let get = |path: String| async move {
        let r = reqwest::get(format!("http://{addr}{path}")).await.unwrap();
        let status = r.status().as_u16();
        (status, r.json::<serde_json::Value>().await.unwrap())
    };
    let (status, v) = get(format!(
        "/api/v1/query?query=sum(up)&time={}",
        (t0 + 15_000) / 1000
    ))
    .await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["data"]["resultType"], "vector");
    assert_eq!(v["data"]["result"][0]["value"][1], "1");
    let (status, v) = get(format!(
        "/api/v1/query_range?query=up&start={}&end={}&step=15",
        t0 / 1000,
        (t0 + 15_000) / 1000
    ))
    .await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["data"]["resultType"], "matrix");
    assert_eq!(v["data"]["result"].as_array().unwrap().len(), 2);
    assert_eq!(v["data"]["result"][0]["metric"]["job"], "a");
    assert_eq!(v["data"]["result"][0]["values"][1][0], (t0 + 15_000) / 1000);
    // `limit` cuts the result, with Prometheus' warning; bad limits are 400.
    let range = format!(
        "/api/v1/query_range?query=up&start={}&end={}&step=15",
        t0 / 1000,
        (t0 + 15_000) / 1000
    );
    let (status, v) = get(format!("{range}&limit=1")).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["data"]["result"].as_array().unwrap().len(), 1);
    assert_eq!(
        v["warnings"],
        serde_json::json!(["results truncated due to limit"])
    );
    let (_, v) = get(format!("{range}&limit=2")).await;
    assert_eq!(v["data"]["result"].as_array().unwrap().len(), 2);
    assert!(v.get("warnings").is_none(), "{v}");
    let (status, v) = get(format!("{range}&limit=-1")).await;
    assert_eq!(status, 400);
    assert_eq!(
        v["error"],
        "invalid parameter \"limit\": limit must be non-negative"
    );
    let (status, v) = get(format!("{range}&limit=x")).await;
    assert_eq!(status, 400);
    assert_eq!(
        v["error"],
        "invalid parameter \"limit\": strconv.Atoi: parsing \"x\": invalid syntax"
    );
    // `lookback_delta` replaces the 5 minutes for one query.
    let later = format!("/api/v1/query?query=up&time={}", (t0 + 15_000) / 1000 + 400);
    let (_, v) = get(later.clone()).await;
    assert_eq!(v["data"]["result"].as_array().unwrap().len(), 0, "{v}");
    let (_, v) = get(format!("{later}&lookback_delta=10m")).await;
    assert_eq!(v["data"]["result"].as_array().unwrap().len(), 2, "{v}");
    let (status, v) = get(format!("{later}&lookback_delta=soon")).await;
    assert_eq!(status, 400);
    assert_eq!(v["errorType"], "bad_data");
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .starts_with("error parsing lookback delta duration: "),
        "{v}"
    );
    let (status, v) = get("/api/v1/series?match[]=up{job=\"b\"}".to_string()).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(
        v["data"],
        serde_json::json!([{"__name__": "up", "job": "b"}])
    );
    let (_, v) = get("/api/v1/labels".to_string()).await;
    assert_eq!(v["data"], serde_json::json!(["__name__", "job"]));
    let (_, v) = get("/api/v1/label/job/values".to_string()).await;
    assert_eq!(v["data"], serde_json::json!(["a", "b"]));
    let (status, v) = get("/api/v1/query?query=sum(".to_string()).await;
    assert_eq!(status, 400);
    assert_eq!(v["status"], "error");
    assert_eq!(v["errorType"], "bad_data");
    assert_eq!(
        v["error"],
        "invalid parameter \"query\": 1:5: parse error: unclosed left parenthesis"
    );
    let (status, v) = get("/api/v1/query_range?query=up&start=10&end=5&step=1".to_string()).await;
    assert_eq!(status, 400, "{v}");

    server.shutdown().await.unwrap();

    let db = Db::open(tmp.path(), DbOptions::default()).unwrap();
    let got: Vec<(String, Vec<(i64, f64)>)> = db
        .querier(i64::MIN, i64::MAX)
        .select(&[])
        .unwrap()
        .into_iter()
        .map(|s| (s.labels.to_string(), s.samples().unwrap()))
        .collect();
    assert_eq!(
        got,
        vec![
            (
                r#"{__name__="up", job="a"}"#.to_string(),
                vec![(t0, 1.0), (t0 + 15_000, 1.0)]
            ),
            (r#"{__name__="up", job="b"}"#.to_string(), vec![(t0, 0.0)]),
        ]
    );
}

/// Like Prometheus, a head that becomes compactable through appends is
/// compacted right away, not at the next tick of the compaction loop.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn appends_that_make_the_head_compactable_start_a_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(options(dir.path())).await.unwrap();
    let hour = 3_600_000i64;
    let t0 = 1_700_000_000_000 - 1_700_000_000_000 % (2 * hour);
    // 4 h of samples: more than 1.5 block ranges.
    let samples: Vec<(i64, f64)> = (0..=16).map(|i| (t0 + i * 15 * 60_000, i as f64)).collect();
    let (status, text) = post(server.addr, body(vec![series("up", "a", &samples)])).await;
    assert_eq!(status, 204, "{text}");
    let blocks = || {
        std::fs::read_dir(dir.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().len() == 26 && e.path().join("meta.json").exists())
            .count()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while blocks() == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "no block written within 20 s (the loop's interval is 60 s)"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    server.shutdown().await.unwrap();
}

/// Instant selections of many series are decoded eagerly on every core;
/// they must answer what the lazy path (a longer range) answers, in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_series_instant_queries_match_the_lazy_path() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(options(dir.path())).await.unwrap();
    let addr = server.addr;
    let t0 = 1_700_000_000_000i64;
    let ts: Vec<v1::TimeSeries> = (0..700)
        .map(|i| {
            let job = format!("j{i:04}");
            let samples: Vec<(i64, f64)> = (0..=20)
                .map(|j| (t0 + j * 15_000, (i * 1000 + j) as f64))
                .collect();
            series("m", &job, &samples)
        })
        .collect();
    let (status, text) = post(addr, body(ts)).await;
    assert_eq!(status, 204, "{text}");
    let get = |q: &str| {
        let url = format!(
            "http://{addr}/api/v1/query?query={q}&time={}",
            (t0 + 150_000) / 1000
        );
        async move {
            let v: serde_json::Value = reqwest::get(url).await.unwrap().json().await.unwrap();
            v["data"]["result"].clone()
        }
    };
    // 5 min lookback: eager; the 1 h range: lazy.
    let eager = get("m").await;
    let lazy = get("last_over_time(m[1h])").await;
    let eager = eager.as_array().unwrap();
    assert_eq!(eager.len(), 700);
    for (i, (e, l)) in eager.iter().zip(lazy.as_array().unwrap()).enumerate() {
        assert_eq!(e["metric"]["job"], format!("j{i:04}"));
        assert_eq!(e["value"][1], format!("{}", i * 1000 + 10));
        assert_eq!(e["value"], l["value"]);
    }
    server.shutdown().await.unwrap();
}
