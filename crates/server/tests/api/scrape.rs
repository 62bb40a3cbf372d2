//! Scraping through the whole server: a `prometheus.yml` with static
//! targets, a live target whose exposition changes, a dead one; the report
//! series, target labels, stale markers for a vanished series, and a
//! reload that removes the job (its series go stale).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::HeaderMap;
use axum::routing::get;
use axum::Router;
use ferrite_server::{start, ServerOptions};
use serde_json::Value;

/// What the test target serves, and what it was asked.
#[derive(Default)]
struct TargetState {
    body: String,
    scrapes: usize,
    headers: Option<HeaderMap>,
}

/// Serves `/metrics` from a shared state on a free port.
async fn start_target(state: Arc<Mutex<TargetState>>) -> SocketAddr {
    let app = Router::new().route(
        "/metrics",
        get(move |headers: HeaderMap| {
            let state = state.clone();
            async move {
                let mut s = state.lock().unwrap();
                s.scrapes += 1;
                s.headers = Some(headers);
                (
                    [("Content-Type", "text/plain; version=0.0.4; charset=utf-8")],
                    s.body.clone(),
                )
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    addr
}

async fn query(addr: SocketAddr, q: &str) -> Vec<Value> {
    let url = format!("http://{addr}/api/v1/query");
    let resp = reqwest::Client::new()
        .get(url)
        .query(&[("query", q)])
        .send()
        .await
        .unwrap();
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["status"], "success", "{q}: {body}");
    body["data"]["result"].as_array().unwrap().clone()
}

/// Polls until `f` holds (10 s at most on a busy machine).
async fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The value of the one series `q` returns.
async fn single_value(addr: SocketAddr, q: &str) -> f64 {
    let r = query(addr, q).await;
    assert_eq!(r.len(), 1, "{q}: {r:?}");
    r[0]["value"][1].as_str().unwrap().parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scrapes_targets_writes_reports_and_stale_markers() {
    let live = Arc::new(Mutex::new(TargetState {
        body: "# TYPE c counter\nc_total{path=\"/\"} 7\ngone 1\n".into(),
        ..TargetState::default()
    }));
    let live_addr = start_target(live.clone()).await;
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_addr = dead.local_addr().unwrap();
    drop(dead);

    let tmp = tempfile::tempdir().unwrap();
    let config_path = tmp.path().join("prometheus.yml");
    let job = format!(
        "global:\n  scrape_interval: 200ms\n  scrape_timeout: 150ms\n\
         scrape_configs:\n  - job_name: app\n    static_configs:\n      \
         - targets: [\"{live_addr}\", \"{dead_addr}\", \"drop.me:1\"]\n        labels: {{env: test}}\n    \
         relabel_configs:\n      - {{source_labels: [__address__], regex: 'drop.me:1', action: drop}}\n"
    );
    std::fs::write(&config_path, &job).unwrap();
    let mut opts = ServerOptions::new(tmp.path().join("data"), "127.0.0.1:0".parse().unwrap());
    opts.config = ferrite_config::Config::load(&config_path).unwrap();
    opts.lifecycle_api = true;
    let server = start(opts).await.unwrap();
    let addr = server.addr;

    wait_for("two scrapes", || live.lock().unwrap().scrapes >= 2).await;
    live.lock().unwrap().body = "# TYPE c counter\nc_total{path=\"/\"} 9\n".into();
    let seen = live.lock().unwrap().scrapes;
    wait_for("two more scrapes", || {
        live.lock().unwrap().scrapes >= seen + 2
    })
    .await;
    // The last scrape's samples are committed shortly after the target
    // answered.
    tokio::time::sleep(Duration::from_millis(100)).await;

    // `up` for both targets, with the target labels.
    let up = query(addr, "up").await;
    assert_eq!(up.len(), 2, "{up:?}");
    for s in &up {
        let m = &s["metric"];
        assert_eq!(m["job"], "app");
        assert_eq!(m["env"], "test");
        let healthy = m["instance"] == live_addr.to_string();
        assert_eq!(s["value"][1], if healthy { "1" } else { "0" }, "{s}");
    }
    // The samples, with the target's labels added.
    let c = query(addr, "c_total").await;
    assert_eq!(c.len(), 1);
    assert_eq!(c[0]["metric"]["path"], "/");
    assert_eq!(c[0]["metric"]["instance"], live_addr.to_string());
    assert_eq!(c[0]["value"][1], "9");
    // The vanished series is stale (no value now), but its samples stay.
    assert!(
        query(addr, "gone").await.is_empty(),
        "a stale marker ends it"
    );
    let gone = single_value(addr, "count_over_time(gone[1m])").await;
    assert!(gone >= 2.0, "{gone}");
    let selector = format!("{{instance=\"{live_addr}\"}}");
    assert_eq!(
        single_value(addr, &format!("scrape_samples_scraped{selector}")).await,
        1.0
    );
    assert_eq!(
        single_value(addr, &format!("scrape_series_added{selector}")).await,
        0.0
    );
    assert!(single_value(addr, &format!("scrape_duration_seconds{selector}")).await < 1.0);

    // What the target was asked.
    let headers = live.lock().unwrap().headers.clone().unwrap();
    let header = |name: &str| headers.get(name).unwrap().to_str().unwrap().to_string();
    assert!(
        header("accept").contains("text/plain;version=0.0.4"),
        "{}",
        header("accept")
    );
    assert!(header("user-agent").starts_with("Ferrite/"));
    assert_eq!(header("x-prometheus-scrape-timeout-seconds"), "0.15");
    assert_eq!(header("accept-encoding"), "gzip");

    // The targets API.
    let api = |path: &str| {
        let url = format!("http://{addr}{path}");
        async move {
            reqwest::get(url)
                .await
                .unwrap()
                .json::<Value>()
                .await
                .unwrap()
        }
    };
    let t = api("/api/v1/targets").await;
    let active = t["data"]["activeTargets"].as_array().unwrap();
    assert_eq!(active.len(), 2, "{t}");
    for a in active {
        assert_eq!(a["scrapePool"], "app");
        assert_eq!(a["labels"]["env"], "test");
        assert_eq!(a["labels"]["job"], "app");
        assert!(a["labels"].get("__address__").is_none());
        assert!(a["discoveredLabels"]["__address__"].is_string());
        assert_eq!(a["scrapeInterval"], "200ms");
        assert_eq!(a["scrapeTimeout"], "150ms");
        assert_ne!(a["lastScrape"], "0001-01-01T00:00:00Z");
        let url = a["scrapeUrl"].as_str().unwrap();
        if url == format!("http://{live_addr}/metrics") {
            assert_eq!(a["health"], "up", "{a}");
            assert_eq!(a["lastError"], "");
        } else {
            assert_eq!(url, format!("http://{dead_addr}/metrics"));
            assert_eq!(a["health"], "down", "{a}");
            let e = a["lastError"].as_str().unwrap();
            assert!(e.starts_with(&format!("Get \"{url}\": ")), "{e}");
        }
    }
    let dropped = t["data"]["droppedTargets"].as_array().unwrap();
    assert_eq!(dropped.len(), 1);
    assert_eq!(dropped[0]["discoveredLabels"]["__address__"], "drop.me:1");
    assert_eq!(t["data"]["droppedTargetCounts"]["app"], 1);
    let t = api("/api/v1/targets?state=dropped").await;
    assert!(t["data"]["activeTargets"].as_array().unwrap().is_empty());
    let t = api("/api/v1/targets?scrapePool=other").await;
    assert!(t["data"]["activeTargets"].as_array().unwrap().is_empty());
    assert_eq!(
        api("/api/v1/scrape_pools").await["data"]["scrapePools"],
        serde_json::json!(["app"])
    );
    let md = api("/api/v1/targets/metadata?metric=c").await;
    assert_eq!(md["data"][0]["type"], "counter", "{md}");
    assert_eq!(md["data"][0]["target"]["instance"], live_addr.to_string());
    let md = api("/api/v1/metadata").await;
    assert_eq!(md["data"]["c"][0]["type"], "counter", "{md}");
    let metrics = reqwest::get(format!("http://{addr}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("prometheus_target_scrape_pool_targets{scrape_job=\"app\"} 2\n"),
        "{metrics}"
    );
    assert!(metrics.contains("prometheus_target_scrape_pools_total 1\n"));

    // Reload without the job: its targets stop and their series go stale.
    std::fs::write(&config_path, "global:\n  scrape_interval: 200ms\n").unwrap();
    let resp = reqwest::Client::new()
        .post(format!("http://{addr}/-/reload"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let deadline = Instant::now() + Duration::from_secs(20);
    while !query(addr, "up").await.is_empty() {
        assert!(Instant::now() < deadline, "up never went stale");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(query(addr, "c_total").await.is_empty());
    assert!(single_value(addr, "count(count_over_time(up[1m]))").await == 2.0);
    let config: Value = reqwest::get(format!("http://{addr}/api/v1/status/config"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        config["data"]["yaml"],
        "global:\n  scrape_interval: 200ms\n"
    );
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_discovery_adds_and_removes_targets() {
    let live = Arc::new(Mutex::new(TargetState {
        body: "a_metric 1\n".into(),
        ..TargetState::default()
    }));
    let live_addr = start_target(live.clone()).await;
    let tmp = tempfile::tempdir().unwrap();
    let targets_file = tmp.path().join("targets").join("app.json");
    std::fs::create_dir_all(targets_file.parent().unwrap()).unwrap();
    std::fs::write(
        &targets_file,
        format!(r#"[{{"targets": ["{live_addr}"], "labels": {{"team": "t1"}}}}]"#),
    )
    .unwrap();
    let config_path = tmp.path().join("prometheus.yml");
    std::fs::write(
        &config_path,
        "global:\n  scrape_interval: 200ms\n  scrape_timeout: 150ms\n\
         scrape_configs:\n  - job_name: files\n    file_sd_configs:\n      - files: [targets/*.json]\n",
    )
    .unwrap();
    let mut opts = ServerOptions::new(tmp.path().join("data"), "127.0.0.1:0".parse().unwrap());
    opts.config = ferrite_config::Config::load(&config_path).unwrap();
    let server = start(opts).await.unwrap();
    let addr = server.addr;

    wait_for("a scrape of the discovered target", || {
        live.lock().unwrap().scrapes >= 2
    })
    .await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let up = query(addr, "up").await;
    assert_eq!(up.len(), 1, "{up:?}");
    assert_eq!(up[0]["metric"]["team"], "t1");
    assert_eq!(up[0]["metric"]["job"], "files");
    let t: Value = reqwest::get(format!("http://{addr}/api/v1/targets"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let discovered = &t["data"]["activeTargets"][0]["discoveredLabels"];
    assert_eq!(
        discovered["__meta_filepath"],
        targets_file.display().to_string()
    );

    // The file empties: the target goes, its series go stale.
    std::fs::write(&targets_file, "[]").unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !query(addr, "up").await.is_empty() {
        assert!(
            Instant::now() < deadline,
            "the removed target's up never went stale"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(query(addr, "a_metric").await.is_empty());
    server.shutdown().await.unwrap();
}
