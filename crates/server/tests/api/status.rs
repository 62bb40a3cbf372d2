//! `/api/v1/status/tsdb` and `/api/v1/status/flags` in Prometheus' JSON
//! shapes, and the `--web.*` options that change how the server answers.

use std::net::SocketAddr;
use std::path::Path;

use ferrite_model::Labels;
use ferrite_server::{start, ServerOptions, WebOptions};
use ferrite_tsdb::{Db, DbOptions};
use serde_json::{json, Value};

fn options(dir: &Path, web: WebOptions) -> ServerOptions {
    ServerOptions {
        flags: vec![
            ("storage.tsdb.path".into(), dir.display().to_string()),
            ("web.enable-lifecycle".into(), "false".into()),
        ],
        web,
        ..ServerOptions::new(dir.to_owned(), "127.0.0.1:0".parse::<SocketAddr>().unwrap())
    }
}

/// Writes series into `dir` and closes the database (the server replays them).
fn seed(dir: &Path, series: &[&[(&str, &str)]]) {
    let db = Db::open(dir, DbOptions::default()).unwrap();
    let mut app = db.appender();
    for (i, s) in series.iter().enumerate() {
        app.append(&Labels::from_pairs(s), 1_000 + i as i64, 1.0)
            .unwrap();
    }
    app.commit().unwrap();
    db.close().unwrap();
}

async fn get(url: String) -> (u16, Value) {
    let resp = reqwest::get(url).await.unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tsdb_status_lists_cardinality() {
    let tmp = tempfile::tempdir().unwrap();
    seed(
        tmp.path(),
        &[
            &[("__name__", "up"), ("job", "a"), ("instance", "1")],
            &[("__name__", "up"), ("job", "a"), ("instance", "2")],
            &[("__name__", "up"), ("job", "b"), ("instance", "3")],
            &[("__name__", "go_goroutines"), ("job", "a")],
        ],
    );
    let server = start(options(tmp.path(), WebOptions::default()))
        .await
        .unwrap();
    let addr = server.addr;

    let (status, body) = get(format!("http://{addr}/api/v1/status/tsdb")).await;
    assert_eq!(status, 200);
    assert_eq!(body["status"], "success");
    let data = &body["data"];
    assert_eq!(data["headStats"]["numSeries"], 4);
    assert_eq!(data["headStats"]["numLabelPairs"], 7);
    assert_eq!(data["headStats"]["minTime"], 1_000);
    assert_eq!(data["headStats"]["maxTime"], 1_003);
    assert!(data["headStats"]["chunkCount"].is_number());
    assert_eq!(
        data["seriesCountByMetricName"],
        json!([{"name": "up", "value": 3}, {"name": "go_goroutines", "value": 1}])
    );
    assert_eq!(
        data["labelValueCountByLabelName"],
        json!([
            {"name": "instance", "value": 3},
            {"name": "__name__", "value": 2},
            {"name": "job", "value": 2},
        ])
    );
    assert_eq!(
        data["memoryInBytesByLabelName"],
        json!([
            {"name": "__name__", "value": 59},
            {"name": "instance", "value": 33},
            {"name": "job", "value": 24},
        ])
    );
    let pairs = data["seriesCountByLabelValuePair"].as_array().unwrap();
    assert_eq!(pairs.len(), 7);
    assert_eq!(pairs[0], json!({"name": "__name__=up", "value": 3}));
    assert_eq!(pairs[1], json!({"name": "job=a", "value": 3}));

    let (status, body) = get(format!("http://{addr}/api/v1/status/tsdb?limit=1")).await;
    assert_eq!(status, 200);
    for list in [
        "seriesCountByMetricName",
        "labelValueCountByLabelName",
        "memoryInBytesByLabelName",
        "seriesCountByLabelValuePair",
    ] {
        assert_eq!(body["data"][list].as_array().unwrap().len(), 1, "{list}");
    }
    assert_eq!(body["data"]["headStats"]["numLabelPairs"], 7);

    for (limit, error) in [
        ("0", "limit must be a positive number"),
        ("abc", "limit must be a positive number"),
        ("10001", "limit must not exceed 10000"),
    ] {
        let (status, body) = get(format!("http://{addr}/api/v1/status/tsdb?limit={limit}")).await;
        assert_eq!(status, 400, "limit={limit}");
        assert_eq!(body["status"], "error");
        assert_eq!(body["errorType"], "bad_data");
        assert_eq!(body["error"], error);
    }

    let (status, body) = get(format!("http://{addr}/api/v1/status/flags")).await;
    assert_eq!(status, 200);
    assert_eq!(body["data"]["web.enable-lifecycle"], "false");
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn empty_head_has_empty_lists() {
    let tmp = tempfile::tempdir().unwrap();
    let server = start(options(tmp.path(), WebOptions::default()))
        .await
        .unwrap();
    let (status, body) = get(format!("http://{}/api/v1/status/tsdb", server.addr)).await;
    assert_eq!(status, 200);
    assert_eq!(body["data"]["seriesCountByMetricName"], json!([]));
    assert_eq!(body["data"]["seriesCountByLabelValuePair"], json!([]));
    assert_eq!(body["data"]["headStats"]["numSeries"], 0);
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn route_prefix_moves_every_endpoint() {
    let tmp = tempfile::tempdir().unwrap();
    let web = WebOptions {
        route_prefix: "/prom".into(),
        max_connections: 4,
        max_concurrent_queries: 1,
        ..WebOptions::default()
    };
    let server = start(options(tmp.path(), web)).await.unwrap();
    let addr = server.addr;
    let ready = reqwest::get(format!("http://{addr}/prom/-/ready"))
        .await
        .unwrap();
    assert_eq!(ready.status().as_u16(), 200);
    let unprefixed = reqwest::get(format!("http://{addr}/-/ready"))
        .await
        .unwrap();
    assert_eq!(unprefixed.status().as_u16(), 404);
    // Queries run one at a time but all complete.
    let mut tasks = Vec::new();
    for i in 0..4 {
        tasks.push(tokio::spawn(get(format!(
            "http://{addr}/prom/api/v1/query?query={i}%2B1&time=100"
        ))));
    }
    for (i, t) in tasks.into_iter().enumerate() {
        let (status, body) = t.await.unwrap();
        assert_eq!(status, 200);
        assert_eq!(body["data"]["result"][1], format!("{}", i + 1));
    }
    server.shutdown().await.unwrap();
}

/// `/-/quit` and `/-/reload`: refused unless `--web.enable-lifecycle`,
/// POST or PUT only; `/-/quit` stops the server and closes the database.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lifecycle_endpoints() {
    let client = reqwest::Client::new();
    let tmp = tempfile::tempdir().unwrap();
    let server = start(options(tmp.path(), WebOptions::default()))
        .await
        .unwrap();
    let addr = server.addr;
    for path in ["quit", "reload"] {
        let url = format!("http://{addr}/-/{path}");
        let r = client.post(&url).send().await.unwrap();
        assert_eq!(r.status().as_u16(), 403);
        assert_eq!(r.text().await.unwrap(), "Lifecycle API is not enabled.");
        let r = client.get(&url).send().await.unwrap();
        assert_eq!(r.status().as_u16(), 405);
    }
    // Still serving.
    let (status, _) = get(format!("http://{addr}/api/v1/status/tsdb")).await;
    assert_eq!(status, 200);
    server.shutdown().await.unwrap();

    let mut opts = options(tmp.path(), WebOptions::default());
    opts.lifecycle_api = true;
    let server = start(opts).await.unwrap();
    let addr = server.addr;
    let r = client
        .put(format!("http://{addr}/-/reload"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let r = client
        .get(format!("http://{addr}/-/quit"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 405);
    assert_eq!(r.text().await.unwrap(), "Only POST or PUT requests allowed");
    let r = client
        .post(format!("http://{addr}/-/quit"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(
        r.text().await.unwrap(),
        "Requesting termination... Goodbye!"
    );
    // The server stops by itself and releases the data directory.
    tokio::time::timeout(std::time::Duration::from_secs(30), server.wait())
        .await
        .expect("the server did not stop after /-/quit")
        .unwrap();
    Db::open(tmp.path(), DbOptions::default())
        .unwrap()
        .close()
        .unwrap();
}

/// `/-/reload` re-reads the configuration file: a file that does not load
/// (or asks for what Ferrite does not do) answers 500 with Prometheus' text
/// and sets `prometheus_config_last_reload_successful` to 0; a good file
/// sets it back to 1.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reload_rereads_the_configuration_file() {
    let client = reqwest::Client::new();
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("prometheus.yml");
    std::fs::write(&file, "global: {}\n").unwrap();
    let mut opts = options(&tmp.path().join("data"), WebOptions::default());
    opts.lifecycle_api = true;
    opts.config = ferrite_config::Config::load(&file).unwrap();
    let server = start(opts).await.unwrap();
    let addr = server.addr;
    let reload = || client.post(format!("http://{addr}/-/reload")).send();
    let metric = |body: &str| {
        body.lines()
            .find_map(|l| l.strip_prefix("prometheus_config_last_reload_successful "))
            .map(str::to_string)
    };

    std::fs::write(&file, "storage:\n  tsdb:\n    bogus: 1\n").unwrap();
    let r = reload().await.unwrap();
    assert_eq!(r.status().as_u16(), 500);
    assert_eq!(
        r.text().await.unwrap(),
        format!(
            "failed to reload config: couldn't load configuration (--config.file={:?}): parsing YAML file {}: yaml: unmarshal errors:\n  line 3: field bogus not found in type config.plain",
            file.display().to_string(),
            file.display()
        )
    );
    let text = |path: &'static str| {
        let client = client.clone();
        async move {
            let r = client
                .get(format!("http://{addr}{path}"))
                .send()
                .await
                .unwrap();
            r.text().await.unwrap()
        }
    };
    assert_eq!(metric(&text("/metrics").await).as_deref(), Some("0"));
    let (_, info) = get(format!("http://{addr}/api/v1/status/runtimeinfo")).await;
    assert_eq!(info["data"]["reloadConfigSuccess"], false);

    std::fs::write(
        &file,
        "storage:\n  tsdb:\n    stale_series_compaction_threshold: 0.5\n",
    )
    .unwrap();
    let r = reload().await.unwrap();
    assert_eq!(r.status().as_u16(), 500);
    assert!(r
        .text()
        .await
        .unwrap()
        .starts_with("failed to reload config: storage.tsdb.stale_series_compaction_threshold: "));

    // The out-of-order window applies at once.
    std::fs::write(
        &file,
        "storage:\n  tsdb:\n    out_of_order_time_window: 1h\n",
    )
    .unwrap();
    let r = reload().await.unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let state = server.state.upgrade().expect("running");
    assert_eq!(state.db.head().out_of_order_time_window(), 3_600_000);
    drop(state);

    std::fs::write(&file, "global: {}\n").unwrap();
    let r = reload().await.unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(metric(&text("/metrics").await).as_deref(), Some("1"));
    server.shutdown().await.unwrap();
}

/// The endpoints of what Ferrite does not run (rules, alerts, targets,
/// exemplars) answer as a Prometheus with none of them, with its parameter
/// checks; `/api/v1/status/tsdb/blocks` lists the blocks' metas.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unconfigured_endpoints_and_blocks() {
    let tmp = tempfile::tempdir().unwrap();
    {
        let db = Db::open(tmp.path(), DbOptions::default()).unwrap();
        let mut app = db.appender();
        for i in 0..10 {
            app.append(
                &Labels::from_pairs(&[("__name__", "up"), ("job", "a")]),
                i * 3_600_000,
                1.0,
            )
            .unwrap();
        }
        app.commit().unwrap();
        db.compact_head_fully().unwrap();
        db.close().unwrap();
    }
    let server = start(options(tmp.path(), WebOptions::default()))
        .await
        .unwrap();
    let addr = server.addr;
    let url = |p: &str| format!("http://{addr}{p}");

    let (status, v) = get(url("/api/v1/rules")).await;
    assert_eq!(
        (status, &v),
        (200, &json!({"status": "success", "data": {"groups": []}}))
    );
    let (status, v) = get(url("/api/v1/rules?type=Record")).await;
    assert_eq!((status, &v["data"]), (200, &json!({"groups": []})));
    let (status, v) = get(url("/api/v1/rules?type=both")).await;
    assert_eq!(status, 400);
    assert_eq!(
        v["error"],
        "invalid parameter \"type\": not supported value \"both\""
    );
    let (status, _) = get(url("/api/v1/rules?match[]=up{")).await;
    assert_eq!(status, 400);
    let (_, v) = get(url("/api/v1/alerts")).await;
    assert_eq!(v["data"], json!({"alerts": []}));
    let (_, v) = get(url("/api/v1/targets")).await;
    assert_eq!(
        v["data"],
        json!({"activeTargets": [], "droppedTargets": [], "droppedTargetCounts": {}})
    );

    let (status, v) = get(url(
        "/api/v1/query_exemplars?query=rate(up[5m])&start=1&end=2",
    ))
    .await;
    assert_eq!((status, &v["data"]), (200, &json!([])));
    let (_, v) = get(url("/api/v1/query_exemplars?query=1%2B1")).await;
    assert_eq!(v["data"], Value::Null);
    let (status, v) = get(url("/api/v1/query_exemplars?query=up&start=2&end=1")).await;
    assert_eq!(status, 400);
    assert_eq!(
        v["error"],
        "end timestamp must not be before start timestamp"
    );
    let (status, v) = get(url("/api/v1/query_exemplars?query=up(")).await;
    assert_eq!((status, v["errorType"].as_str()), (400, Some("bad_data")));

    let (status, v) = get(url("/api/v1/status/tsdb/blocks")).await;
    assert_eq!(status, 200);
    let blocks = v["data"]["blocks"].as_array().unwrap();
    assert!(!blocks.is_empty(), "{v}");
    let samples: u64 = blocks
        .iter()
        .map(|b| b["stats"]["numSamples"].as_u64().unwrap())
        .sum();
    assert_eq!(samples, 10);
    for w in blocks.windows(2) {
        assert!(w[0]["minTime"].as_i64() <= w[1]["minTime"].as_i64());
    }
    assert!(blocks[0]["ulid"].as_str().is_some_and(|u| u.len() == 26));
    assert_eq!(blocks[0]["compaction"]["level"], 1);
    server.shutdown().await.unwrap();
}

/// The query API's `stats` parameter: no statistics without it, Prometheus'
/// `stats` object with it (the samples the selector read counted), and a
/// deprecation warning for a value other than `true` or `all`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn query_statistics_when_asked() {
    let tmp = tempfile::tempdir().unwrap();
    seed(
        tmp.path(),
        &[
            &[("__name__", "up"), ("job", "a")],
            &[("__name__", "up"), ("job", "b")],
        ],
    );
    let server = start(options(tmp.path(), WebOptions::default()))
        .await
        .unwrap();
    let addr = server.addr;
    let query = |stats: &str| format!("http://{addr}/api/v1/query?query=up&time=10{stats}");

    let (status, plain) = get(query("")).await;
    assert_eq!(status, 200);
    assert!(plain["data"].get("stats").is_none(), "{plain}");

    let (_, with) = get(query("&stats=true")).await;
    let stats = &with["data"]["stats"];
    assert_eq!(stats["samples"]["totalQueryableSamples"], 2, "{with}");
    assert_eq!(stats["samples"]["samplesRead"], 2);
    assert_eq!(stats["samples"]["seriesTouched"], 2);
    for t in [
        "evalTotalTime",
        "resultSortTime",
        "queryPreparationTime",
        "innerEvalTime",
        "execQueueTime",
        "execTotalTime",
    ] {
        assert!(stats["timings"][t].as_f64().is_some(), "{t}: {with}");
    }
    assert!(with.get("warnings").is_none(), "{with}");

    let (_, odd) = get(query("&stats=1")).await;
    assert!(odd["data"]["stats"].is_object(), "{odd}");
    assert_eq!(
        odd["warnings"][0],
        "value \"1\" for parameter \"stats\" is deprecated and will be rejected in the next major release, use \"true\" or \"all\""
    );
    server.shutdown().await.unwrap();
}
