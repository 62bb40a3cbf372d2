//! The admin API, `/metrics` and `/api/v1/metadata` on loopback.
//!
//! The data is prepared with the storage engine before the server starts:
//! two blocks (the head persisted) and newer samples left in the WAL, which
//! the server replays into its head, so every admin call meets both.

use std::net::SocketAddr;
use std::path::Path;

use ferrite_model::Labels;
use ferrite_server::{start, ServerOptions};
use ferrite_tsdb::{Db, DbOptions};
use serde_json::Value;

/// A 2 h block boundary.
const T0: i64 = 1_699_999_200_000;
const HOUR: i64 = 3_600_000;
const STEP: i64 = 60_000;

fn options(dir: &Path, admin_api: bool) -> ServerOptions {
    ServerOptions {
        admin_api,
        ..ServerOptions::new(dir.to_owned(), "127.0.0.1:0".parse::<SocketAddr>().unwrap())
    }
}

type Dump = Vec<(String, Vec<(i64, f64)>)>;

fn dump(db: &Db) -> Dump {
    db.querier(i64::MIN, i64::MAX)
        .select(&[])
        .unwrap()
        .into_iter()
        .map(|s| (s.labels.to_string(), s.samples().unwrap()))
        .filter(|(_, s)| !s.is_empty())
        .collect()
}

/// Blocks over [T0, T0 + 4 h), then samples up to T0 + 5 h in the head
/// (WAL). Returns everything the directory holds.
fn prepare(dir: &Path) -> Dump {
    let db = Db::open(dir, DbOptions::default()).unwrap();
    let series = [
        Labels::from_pairs(&[("__name__", "up"), ("job", "a")]),
        Labels::from_pairs(&[("__name__", "up"), ("job", "b")]),
    ];
    let append = |from: i64, to: i64| {
        let mut app = db.appender();
        let mut t = from;
        while t < to {
            for (i, l) in series.iter().enumerate() {
                app.append(l, t, (t / STEP + i as i64) as f64).unwrap();
            }
            t += STEP;
        }
        app.commit().unwrap();
    };
    append(T0, T0 + 4 * HOUR);
    assert_eq!(db.compact_head_fully().unwrap().len(), 2);
    append(T0 + 4 * HOUR, T0 + 5 * HOUR);
    let all = dump(&db);
    db.close().unwrap();
    all
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dst = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dst);
        } else {
            std::fs::copy(e.path(), dst).unwrap();
        }
    }
}

/// Opens a copy of `dir` (a snapshot) and reads everything back.
fn open_copy(dir: &Path) -> (Dump, usize) {
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(dir, tmp.path());
    let db = Db::open(tmp.path(), DbOptions::default()).unwrap();
    let out = (dump(&db), db.blocks().len());
    db.close().unwrap();
    out
}

async fn call(method: reqwest::Method, addr: SocketAddr, path: &str) -> (u16, String) {
    let resp = reqwest::Client::new()
        .request(method, format!("http://{addr}{path}"))
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    (status, resp.text().await.unwrap())
}

async fn post(addr: SocketAddr, path: &str) -> (u16, String) {
    call(reqwest::Method::POST, addr, path).await
}

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// Samples per series over the whole range, by job, from the query API.
async fn counts(addr: SocketAddr) -> Vec<(String, String)> {
    let (status, text) = call(
        reqwest::Method::GET,
        addr,
        &format!(
            "/api/v1/query?query=count_over_time(up[6h])&time={}",
            (T0 + 5 * HOUR) / 1000
        ),
    )
    .await;
    assert_eq!(status, 200, "{text}");
    json(&text)["data"]["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["metric"]["job"].as_str().unwrap().to_string(),
                r["value"][1].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_api_disabled_is_refused_as_prometheus_does() {
    let tmp = tempfile::tempdir().unwrap();
    let server = start(options(tmp.path(), false)).await.unwrap();
    let addr = server.addr;
    for path in [
        "/api/v1/admin/tsdb/snapshot",
        "/api/v1/admin/tsdb/delete_series?match[]=up",
        "/api/v1/admin/tsdb/clean_tombstones",
    ] {
        for method in [reqwest::Method::POST, reqwest::Method::PUT] {
            let (status, text) = call(method, addr, path).await;
            assert_eq!(status, 500, "{path}: {text}");
            assert_eq!(
                json(&text),
                serde_json::json!({"status": "error", "errorType": "unavailable", "error": "admin APIs disabled"})
            );
        }
    }
    assert!(!tmp.path().join("snapshots").exists());
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_delete_and_clean_tombstones() {
    let tmp = tempfile::tempdir().unwrap();
    let all = prepare(tmp.path());
    let server = start(options(tmp.path(), true)).await.unwrap();
    let addr = server.addr;

    // Snapshot with the head: a copy opens with exactly the same data.
    let (status, text) = post(addr, "/api/v1/admin/tsdb/snapshot").await;
    assert_eq!(status, 200, "{text}");
    let v = json(&text);
    assert_eq!(v["status"], "success");
    let name = v["data"]["name"].as_str().unwrap().to_string();
    let (stamp, hex) = name.split_once('-').unwrap();
    assert!(stamp.len() == 16 && stamp.as_bytes()[8] == b'T' && stamp.ends_with('Z'));
    assert!(hex.len() == 16 && hex.bytes().all(|b| b.is_ascii_hexdigit()));
    let snap = tmp.path().join("snapshots").join(&name);
    let (got, nblocks) = open_copy(&snap);
    assert_eq!(nblocks, 3, "two linked blocks and the head's");
    assert_eq!(got, all);
    // Blocks are hard links, not copies.
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let db_blocks: Vec<_> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .filter(|n| n.len() == 26)
            .collect();
        assert_eq!(db_blocks.len(), 2);
        for b in &db_blocks {
            let live = std::fs::metadata(tmp.path().join(b).join("index")).unwrap();
            let linked = std::fs::metadata(snap.join(b).join("index")).unwrap();
            assert_eq!(live.ino(), linked.ino());
        }
    }

    // Without the head (PUT works too): the blocks' data only.
    let (status, text) = call(
        reqwest::Method::PUT,
        addr,
        "/api/v1/admin/tsdb/snapshot?skip_head=true",
    )
    .await;
    assert_eq!(status, 200, "{text}");
    let name2 = json(&text)["data"]["name"].as_str().unwrap().to_string();
    assert_ne!(name, name2);
    let (got, nblocks) = open_copy(&tmp.path().join("snapshots").join(&name2));
    assert_eq!(nblocks, 2);
    let in_blocks: Dump = all
        .iter()
        .map(|(l, s)| {
            let s = s.iter().copied().filter(|&(t, _)| t < T0 + 4 * HOUR);
            (l.clone(), s.collect())
        })
        .collect();
    assert_eq!(got, in_blocks);
    let (status, text) = post(addr, "/api/v1/admin/tsdb/snapshot?skip_head=maybe").await;
    assert_eq!(status, 400, "{text}");
    assert_eq!(json(&text)["errorType"], "bad_data");

    // delete_series: everything of job a; one hour of job b across the
    // newest block and the head.
    let per_series = (5 * HOUR / STEP).to_string();
    assert_eq!(
        counts(addr).await,
        [("a".into(), per_series.clone()), ("b".into(), per_series)]
    );
    let (status, text) = post(addr, "/api/v1/admin/tsdb/delete_series").await;
    assert_eq!(status, 400, "{text}");
    assert_eq!(json(&text)["error"], "no match[] parameter provided");
    let (status, text) = post(addr, "/api/v1/admin/tsdb/delete_series?match[]=up{").await;
    assert_eq!(status, 400, "{text}");
    let (status, text) = post(
        addr,
        "/api/v1/admin/tsdb/delete_series?match[]=up&start=yesterday",
    )
    .await;
    assert_eq!(status, 400, "{text}");
    let (status, text) = post(
        addr,
        "/api/v1/admin/tsdb/delete_series?match[]=up{job=\"a\"}",
    )
    .await;
    assert_eq!(status, 204, "{text}");
    assert!(text.is_empty());
    let (start, end) = (T0 + 3 * HOUR + 30 * 60_000, T0 + 4 * HOUR + 30 * 60_000);
    let (status, text) = post(
        addr,
        &format!(
            "/api/v1/admin/tsdb/delete_series?match[]={{job=\"b\"}}&start={}&end={}",
            start / 1000,
            end / 1000
        ),
    )
    .await;
    assert_eq!(status, 204, "{text}");
    // [start, end] is inclusive: 61 samples gone.
    let left = 5 * HOUR / STEP - ((end - start) / STEP + 1);
    assert_eq!(counts(addr).await, [("b".into(), left.to_string())]);

    // clean_tombstones rewrites the blocks that have tombstones.
    let before: Vec<String> = {
        let mut v: Vec<String> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.len() == 26)
            .collect();
        v.sort();
        v
    };
    let (status, text) = post(addr, "/api/v1/admin/tsdb/clean_tombstones").await;
    assert_eq!(status, 204, "{text}");
    assert_eq!(counts(addr).await, [("b".into(), left.to_string())]);

    server.shutdown().await.unwrap();
    let db = Db::open(tmp.path(), DbOptions::default()).unwrap();
    let blocks = db.blocks();
    assert_eq!(blocks.len(), 2);
    for b in &blocks {
        assert!(b.tombstones().is_empty());
        assert!(
            !before.contains(&b.ulid().to_string()),
            "block not rewritten"
        );
    }
    let expected: Dump = all
        .iter()
        .filter(|&(l, _)| l.contains("job=\"b\""))
        .cloned()
        .map(|(l, s)| {
            let s = s.into_iter().filter(|&(t, _)| t < start || t > end);
            (l, s.collect())
        })
        .collect();
    assert_eq!(dump(&db), expected);
    // The snapshots were not disturbed by any of it.
    drop(blocks);
    db.close().unwrap();
    let (got, _) = open_copy(&tmp.path().join("snapshots").join(&name));
    assert_eq!(got, all);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_and_metadata() {
    let tmp = tempfile::tempdir().unwrap();
    prepare(tmp.path());
    let server = start(options(tmp.path(), false)).await.unwrap();
    let addr = server.addr;

    let resp = reqwest::get(format!("http://{addr}/metrics"))
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    assert_eq!(
        resp.headers()["content-type"],
        "text/plain; version=0.0.4; charset=utf-8"
    );
    let text = resp.text().await.unwrap();
    let mut samples = std::collections::HashMap::new();
    for line in text.lines() {
        if line.starts_with('#') {
            assert!(
                line.starts_with("# HELP ") || line.starts_with("# TYPE "),
                "{line}"
            );
            continue;
        }
        // name{labels} value
        let (series, value) = line.rsplit_once(' ').unwrap();
        let value: f64 = value.parse().unwrap_or_else(|_| panic!("{line}"));
        let name = series.split('{').next().unwrap();
        assert!(
            !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b':'),
            "{line}"
        );
        if let Some(rest) = series.strip_prefix(name).filter(|r| !r.is_empty()) {
            assert!(rest.starts_with('{') && rest.ends_with('}'), "{line}");
        }
        samples.insert(series.to_string(), value);
    }
    assert_eq!(samples["prometheus_tsdb_head_series"], 2.0);
    assert_eq!(samples["prometheus_tsdb_blocks_loaded"], 2.0);
    assert_eq!(
        samples["prometheus_tsdb_head_max_time"],
        (T0 + 5 * HOUR - STEP) as f64
    );
    assert!(samples.contains_key("process_start_time_seconds"));
    assert!(samples.contains_key("prometheus_tsdb_head_samples_appended_total{type=\"float\"}"));
    assert!(text.contains(&format!("version=\"{}\"", env!("CARGO_PKG_VERSION"))));
    #[cfg(target_os = "linux")]
    assert!(samples["process_resident_memory_bytes"] > 0.0);

    let (status, text) = call(reqwest::Method::GET, addr, "/api/v1/metadata").await;
    assert_eq!(status, 200);
    assert_eq!(
        json(&text),
        serde_json::json!({"status": "success", "data": {}})
    );
    let (status, text) = call(reqwest::Method::GET, addr, "/api/v1/metadata?limit=x").await;
    assert_eq!(status, 400);
    assert_eq!(json(&text)["error"], "limit must be a number");
    server.shutdown().await.unwrap();
}
