//! Recording rules through the whole server: a `prometheus.yml` whose
//! rule file records `sum(up)`-like rules over remote-written data; the
//! recorded series and their aligned timestamps; `/api/v1/rules` and its
//! parameters; reloads that change a rule (its old series go stale), that
//! fail (the old rules keep running) and that remove the group (all its
//! series go stale).

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use ferrite_remote::proto::v1;
use ferrite_server::{start, RunningServer, ServerOptions};
use prost::Message;
use serde_json::Value;

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

fn up(job: &str, instance: &str, t: i64, v: f64) -> v1::TimeSeries {
    v1::TimeSeries {
        labels: [("__name__", "up"), ("instance", instance), ("job", job)]
            .iter()
            .map(|(n, v)| v1::Label {
                name: n.as_bytes().to_vec(),
                value: v.as_bytes().to_vec(),
            })
            .collect(),
        samples: vec![v1::Sample {
            value: v,
            timestamp: t,
        }],
        ..Default::default()
    }
}

async fn remote_write(addr: SocketAddr, ts: Vec<v1::TimeSeries>) {
    let req = v1::WriteRequest {
        timeseries: ts,
        ..Default::default()
    };
    let body = snap::raw::Encoder::new()
        .compress_vec(&req.encode_to_vec())
        .unwrap();
    let resp = reqwest::Client::new()
        .post(format!("http://{addr}/api/v1/write"))
        .header("Content-Type", "application/x-protobuf")
        .header("Content-Encoding", "snappy")
        .header("X-Prometheus-Remote-Write-Version", "0.1.0")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 204);
}

async fn get(addr: SocketAddr, path: &str, params: &[(&str, &str)]) -> (u16, Value) {
    let resp = reqwest::Client::new()
        .get(format!("http://{addr}{path}"))
        .query(params)
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap())
}

/// An instant query's result, by the value of label `by`.
async fn query(addr: SocketAddr, q: &str) -> Vec<Value> {
    let (status, body) = get(addr, "/api/v1/query", &[("query", q)]).await;
    assert_eq!(status, 200, "{q}: {body}");
    body["data"]["result"].as_array().unwrap().clone()
}

/// Polls until `q` returns `n` series (20 s at most on a busy machine).
async fn wait_for_series(addr: SocketAddr, q: &str, n: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let r = query(addr, q).await;
        if r.len() == n {
            return r;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {n} series of {q}: {r:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn value_of(series: &[Value], label: &str, value: &str) -> f64 {
    let s = series
        .iter()
        .find(|s| s["metric"][label] == value)
        .unwrap_or_else(|| panic!("no series with {label}={value:?} in {series:?}"));
    s["value"][1].as_str().unwrap().parse().unwrap()
}

const RULES: &str = "groups:
  - name: recorded
    interval: 100ms
    rules:
      - record: job:up:sum
        expr: sum by (job) (up)
      - record: up:count
        expr: count(up)
        labels: {source: rules}
";

fn write_config(dir: &Path, rule_files: &[&str]) -> std::path::PathBuf {
    let path = dir.join("prometheus.yml");
    let files: Vec<String> = rule_files.iter().map(|f| format!("{f:?}")).collect();
    std::fs::write(
        &path,
        format!(
            "global:\n  evaluation_interval: 1s\nrule_files: [{}]\n",
            files.join(", ")
        ),
    )
    .unwrap();
    path
}

async fn start_with(dir: &Path) -> RunningServer {
    let config = dir.join("prometheus.yml");
    let mut opts = ServerOptions::new(dir.join("data"), "127.0.0.1:0".parse().unwrap());
    opts.config = ferrite_config::Config::load(&config).unwrap();
    opts.lifecycle_api = true;
    start(opts).await.unwrap()
}

async fn reload(addr: SocketAddr) -> (u16, String) {
    let resp = reqwest::Client::new()
        .post(format!("http://{addr}/-/reload"))
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    (status, resp.text().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_rules_and_marks_their_series_stale() {
    let tmp = tempfile::tempdir().unwrap();
    let rules_path = tmp.path().join("rules.yml");
    std::fs::write(&rules_path, RULES).unwrap();
    write_config(tmp.path(), &["rules.yml"]);
    let server = start_with(tmp.path()).await;
    let addr = server.addr;

    let t = now_ms() - 1_000;
    remote_write(
        addr,
        vec![
            up("a", "1", t, 1.0),
            up("a", "2", t, 1.0),
            up("b", "1", t, 0.0),
        ],
    )
    .await;

    let sums = wait_for_series(addr, "job:up:sum", 2).await;
    assert_eq!(value_of(&sums, "job", "a"), 2.0);
    assert_eq!(value_of(&sums, "job", "b"), 0.0);
    let counts = wait_for_series(addr, "up:count", 1).await;
    assert_eq!(counts[0]["metric"]["source"], "rules");
    assert_eq!(counts[0]["value"][1], "3");

    // Several evaluations, all in the group's slots: one phase modulo the
    // interval.
    tokio::time::sleep(Duration::from_millis(800)).await;
    let (_, range) = get(
        addr,
        "/api/v1/query",
        &[("query", "job:up:sum{job=\"a\"}[2s]")],
    )
    .await;
    let points = range["data"]["result"][0]["values"]
        .as_array()
        .unwrap()
        .clone();
    assert!(points.len() >= 4, "{points:?}");
    let times: Vec<i64> = points
        .iter()
        .map(|p| (p[0].as_f64().unwrap() * 1000.0).round() as i64)
        .collect();
    let phase = times[0].rem_euclid(100);
    assert!(
        times.iter().all(|t| t.rem_euclid(100) == phase),
        "{times:?}"
    );

    // The API.
    let (status, body) = get(addr, "/api/v1/rules", &[]).await;
    assert_eq!(status, 200, "{body}");
    let groups = body["data"]["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 1, "{body}");
    let g = &groups[0];
    assert_eq!(g["name"], "recorded");
    assert_eq!(g["file"], rules_path.display().to_string());
    assert_eq!(g["interval"], 0.1);
    assert_eq!(g["limit"], 0);
    assert!(g["evaluationTime"].is_number());
    assert_ne!(g["lastEvaluation"], "0001-01-01T00:00:00Z");
    let rules = g["rules"].as_array().unwrap();
    assert_eq!(rules.len(), 2);
    assert_eq!(rules[0]["type"], "recording");
    assert_eq!(rules[0]["name"], "job:up:sum");
    assert_eq!(rules[0]["query"], "sum by (job) (up)");
    assert_eq!(rules[0]["health"], "ok");
    assert_eq!(rules[0]["labels"], serde_json::json!({}));
    assert!(rules[0].get("lastError").is_none());
    assert!(rules[0]["evaluationTime"].is_number());
    assert!(rules[0]["lastEvaluation"].is_string());
    assert_eq!(rules[1]["labels"], serde_json::json!({"source": "rules"}));

    // Its parameters.
    let names = |body: &Value| -> Vec<String> {
        body["data"]["groups"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|g| g["rules"].as_array().unwrap().clone())
            .map(|r| r["name"].as_str().unwrap().to_string())
            .collect()
    };
    let (_, b) = get(addr, "/api/v1/rules", &[("type", "alert")]).await;
    assert_eq!(b["data"]["groups"], serde_json::json!([]));
    // The groups' metrics, under Prometheus' names.
    let metrics = reqwest::get(format!("http://{addr}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("# TYPE prometheus_rule_evaluations_total counter\n"),
        "{metrics}"
    );
    assert!(metrics.contains("prometheus_rule_group_rules{rule_group=\""));
    let (_, b) = get(addr, "/api/v1/rules", &[("type", "RECORD")]).await;
    assert_eq!(names(&b), ["job:up:sum", "up:count"]);
    let (_, b) = get(addr, "/api/v1/rules", &[("rule_name[]", "up:count")]).await;
    assert_eq!(names(&b), ["up:count"]);
    let (_, b) = get(addr, "/api/v1/rules", &[("match[]", "{source=\"rules\"}")]).await;
    assert_eq!(names(&b), ["up:count"]);
    let (_, b) = get(addr, "/api/v1/rules", &[("rule_group[]", "other")]).await;
    assert_eq!(b["data"]["groups"], serde_json::json!([]));
    let (_, b) = get(addr, "/api/v1/rules", &[("group_limit", "1")]).await;
    assert_eq!(names(&b), ["job:up:sum", "up:count"]);
    assert!(b["data"].get("groupNextToken").is_none());
    for (params, error) in [
        (vec![("type", "bogus")], "invalid parameter \"type\": not supported value \"bogus\""),
        (vec![("group_next_token", "x")], "invalid parameter \"group_next_token\": group_limit needs to be present in order to paginate over the groups"),
        (vec![("group_limit", "0")], "invalid parameter \"group_limit\": group_limit needs to be greater than 0"),
        (vec![("group_limit", "1"), ("group_next_token", "x")], "invalid parameter \"group_next_token\": invalid group_next_token 'x'. were rule groups changed?"),
        (vec![("exclude_alerts", "maybe")], "invalid parameter \"exclude_alerts\": error converting exclude_alerts: strconv.ParseBool: parsing \"maybe\": invalid syntax"),
        (vec![("match[]", "{a=\"\"}")], "match[] must contain at least one non-empty matcher"),
    ] {
        let (status, b) = get(addr, "/api/v1/rules", &params).await;
        assert_eq!(status, 400, "{params:?}: {b}");
        assert_eq!(b["errorType"], "bad_data");
        assert_eq!(b["error"], error, "{params:?}");
    }

    // A changed rule: the group restarts, the renamed rule's old series
    // goes stale, the unchanged rule's series goes on.
    std::fs::write(&rules_path, RULES.replace("up:count", "up:total")).unwrap();
    let (status, text) = reload(addr).await;
    assert_eq!(status, 200, "{text}");
    wait_for_series(addr, "up:total", 1).await;
    wait_for_series(addr, "up:count", 0).await;
    assert_eq!(query(addr, "job:up:sum").await.len(), 2);

    // A rule file that fails: the reload fails, the rules stay.
    std::fs::write(
        &rules_path,
        "groups:\n  - name: recorded\n    rules:\n      - record: x\n        expr: sum(\n",
    )
    .unwrap();
    let (status, text) = reload(addr).await;
    assert_eq!(status, 500, "{text}");
    assert!(
        text.contains("one or more errors occurred while applying the new configuration"),
        "{text}"
    );
    let (_, b) = get(addr, "/api/v1/rules", &[]).await;
    assert_eq!(names(&b), ["job:up:sum", "up:total"]);
    // An alerting rule beside them: it fires, shows in /api/v1/rules
    // and /api/v1/alerts, and writes ALERTS (a group added by a reload
    // has nothing to restore).
    let alerting = format!(
        "{}  - name: alerts\n    interval: 100ms\n    rules:\n      - alert: JobsUp\n        expr: job:up:sum > 0\n        labels: {{severity: '{{{{ $labels.job }}}}'}}\n        annotations: {{summary: '{{{{ $value }}}} up'}}\n",
        RULES.replace("up:count", "up:total")
    );
    std::fs::write(&rules_path, alerting).unwrap();
    let (status, text) = reload(addr).await;
    assert_eq!(status, 200, "{text}");
    let alerts = wait_for_series(addr, "ALERTS{alertstate=\"firing\"}", 1).await;
    assert_eq!(value_of(&alerts, "severity", "a"), 1.0);
    let (_, b) = get(addr, "/api/v1/alerts", &[]).await;
    let alerts = b["data"]["alerts"].as_array().unwrap();
    assert_eq!(alerts.len(), 1, "{b}");
    assert!(alerts.iter().all(|a| a["state"] == "firing"), "{b}");
    assert!(
        alerts
            .iter()
            .any(|a| a["annotations"]["summary"] == "2 up" && a["value"] == "2e+00"),
        "{b}"
    );
    let (_, b) = get(addr, "/api/v1/rules", &[("type", "alert")]).await;
    assert_eq!(names(&b), ["JobsUp"]);
    assert_eq!(b["data"]["groups"][0]["rules"][0]["type"], "alerting");
    assert_eq!(b["data"]["groups"][0]["rules"][0]["state"], "firing");
    let (_, b) = get(addr, "/api/v1/rules", &[("exclude_alerts", "true")]).await;
    assert_eq!(names(&b), ["JobsUp", "job:up:sum", "up:total"]);
    assert!(b["data"]["groups"][0]["rules"][0]["alerts"].is_null());

    // The group removed: two intervals later, every series it wrote is
    // stale.
    write_config(tmp.path(), &[]);
    let (status, text) = reload(addr).await;
    assert_eq!(status, 200, "{text}");
    let (_, b) = get(addr, "/api/v1/rules", &[]).await;
    assert_eq!(b["data"]["groups"], serde_json::json!([]));
    wait_for_series(addr, "job:up:sum", 0).await;
    wait_for_series(addr, "up:total", 0).await;
    // Stale, not just old: the last samples are within the lookback.
    let (_, b) = get(
        addr,
        "/api/v1/query",
        &[("query", "count_over_time(job:up:sum[1m])")],
    )
    .await;
    assert_eq!(b["data"]["result"].as_array().unwrap().len(), 2, "{b}");

    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_with_a_bad_rule_file_does_not_start() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("rules.yml"),
        "groups:\n  - name: g\n    rules:\n      - record: 'a{b}'\n        expr: up\n",
    )
    .unwrap();
    write_config(tmp.path(), &["r*.yml"]);
    let config = tmp.path().join("prometheus.yml");
    let mut opts = ServerOptions::new(tmp.path().join("data"), "127.0.0.1:0".parse().unwrap());
    opts.config = ferrite_config::Config::load(&config).unwrap();
    let err = match start(opts).await {
        Ok(_) => panic!("started with a bad rule file"),
        Err(e) => e.to_string(),
    };
    assert!(
        err.contains("braces present in the recording rule name; should it be in expr?: a{b}"),
        "{err}"
    );
}
