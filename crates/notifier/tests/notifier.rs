//! The notifier against local HTTP servers standing in for Alertmanagers:
//! batches, the body, relabeling, errors and timeouts, a full queue, a
//! reload and a stop.

use std::sync::atomic::{AtomicU16, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ferrite_config::Config;
use ferrite_model::Labels;
use ferrite_notifier::{Alert, Notifier, Options};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::watch;

/// One request received: its head (request line and headers) and body.
#[derive(Debug, Clone)]
struct Request {
    head: String,
    body: Vec<u8>,
}

/// A stand-in Alertmanager.
struct Am {
    addr: std::net::SocketAddr,
    received: Arc<Mutex<Vec<Request>>>,
    status: Arc<AtomicU16>,
    delay_ms: Arc<AtomicU64>,
    /// Answers wait while false.
    open: watch::Sender<bool>,
}

impl Am {
    async fn start() -> Am {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let received = Arc::new(Mutex::new(Vec::new()));
        let status = Arc::new(AtomicU16::new(200));
        let delay_ms = Arc::new(AtomicU64::new(0));
        let (open, open_rx) = watch::channel(true);
        let (r, s, d) = (received.clone(), status.clone(), delay_ms.clone());
        tokio::spawn(async move {
            loop {
                let Ok((mut conn, _)) = listener.accept().await else {
                    return;
                };
                let (r, s, d, mut open_rx) = (r.clone(), s.clone(), d.clone(), open_rx.clone());
                tokio::spawn(async move {
                    let mut buf = Vec::new();
                    loop {
                        // One request: the head, then Content-Length bytes.
                        let head_end = loop {
                            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                                break i + 4;
                            }
                            let mut chunk = [0u8; 4096];
                            match conn.read(&mut chunk).await {
                                Ok(0) | Err(_) => return,
                                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                            }
                        };
                        let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
                        let len: usize = head
                            .lines()
                            .find_map(|l| {
                                let (k, v) = l.split_once(':')?;
                                k.eq_ignore_ascii_case("content-length")
                                    .then(|| v.trim().parse().ok())?
                            })
                            .unwrap_or(0);
                        while buf.len() < head_end + len {
                            let mut chunk = [0u8; 4096];
                            match conn.read(&mut chunk).await {
                                Ok(0) | Err(_) => return,
                                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                            }
                        }
                        let body = buf[head_end..head_end + len].to_vec();
                        buf.drain(..head_end + len);
                        r.lock().unwrap().push(Request { head, body });
                        let _ = open_rx.wait_for(|o| *o).await;
                        let delay = d.load(Ordering::SeqCst);
                        if delay > 0 {
                            tokio::time::sleep(Duration::from_millis(delay)).await;
                        }
                        let code = s.load(Ordering::SeqCst);
                        let answer = format!("HTTP/1.1 {code} Status\r\ncontent-length: 0\r\n\r\n");
                        if conn.write_all(answer.as_bytes()).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        Am {
            addr,
            received,
            status,
            delay_ms,
            open,
        }
    }

    fn url(&self) -> String {
        format!("http://{}/api/v2/alerts", self.addr)
    }

    fn requests(&self) -> Vec<Request> {
        self.received.lock().unwrap().clone()
    }

    /// The alerts received, request by request.
    fn batches(&self) -> Vec<Vec<Value>> {
        self.requests()
            .iter()
            .map(|r| serde_json::from_slice::<Vec<Value>>(&r.body).unwrap())
            .collect()
    }

    fn names(&self) -> Vec<Vec<String>> {
        self.batches()
            .iter()
            .map(|b| {
                b.iter()
                    .map(|a| a["labels"]["alertname"].as_str().unwrap().to_string())
                    .collect()
            })
            .collect()
    }
}

fn alert(name: &str) -> Alert {
    Alert {
        labels: Labels::from_pairs(&[("alertname", name)]),
        annotations: Labels::empty(),
        starts_at: None,
        ends_at: None,
        generator_url: String::new(),
    }
}

fn alerts(n: usize) -> Vec<Alert> {
    (0..n).map(|i| alert(&i.to_string())).collect()
}

fn config(text: &str) -> Config {
    Config::parse(text, "t.yml").expect("config")
}

fn one_am(am: &Am, extra: &str) -> Config {
    config(&format!(
        "alerting:\n  alertmanagers:\n    - static_configs: [{{targets: ['{}']}}]\n{extra}",
        am.addr
    ))
}

/// Waits until `f` holds (at most 5 s).
async fn until(mut f: impl FnMut() -> bool) {
    for _ in 0..500 {
        if f() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("condition not reached");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_and_the_body() {
    let am = Am::start().await;
    let n = Notifier::new(Options {
        batch_size: 2,
        ..Options::default()
    });
    n.apply_config(&one_am(&am, "")).await.unwrap();
    assert_eq!(n.alertmanagers(), (vec![am.url()], vec![]));
    // The first batch is held at the server, so the rest queue up behind it.
    am.open.send_replace(false);
    n.send(alerts(1));
    until(|| am.requests().len() == 1).await;
    n.send(alerts(5));
    am.open.send_replace(true);
    until(|| am.requests().len() == 4).await;
    assert_eq!(
        am.names(),
        [vec!["0"], vec!["0", "1"], vec!["2", "3"], vec!["4"]]
    );
    let head = am.requests()[0].head.to_ascii_lowercase();
    assert!(
        head.starts_with("post /api/v2/alerts http/1.1\r\n"),
        "{head}"
    );
    assert!(
        head.contains("content-type: application/json\r\n"),
        "{head}"
    );
    assert!(head.contains("user-agent: ferrite/"), "{head}");
    until(|| n.counts(&am.url()) == Some((6, 0, 0, 0))).await;

    // The body, exactly.
    let start = UNIX_EPOCH + Duration::from_millis(1_764_298_800_250);
    n.send(vec![Alert {
        labels: Labels::from_pairs(&[("alertname", "HighLoad"), ("severity", "page")]),
        annotations: Labels::from_pairs(&[("summary", "load > 1 & rising")]),
        starts_at: Some(start),
        ends_at: Some(start + Duration::from_secs(60)),
        generator_url: "http://ferrite:9090/graph?g0.expr=load".into(),
    }]);
    until(|| am.requests().len() == 5).await;
    assert_eq!(
        String::from_utf8(am.requests()[4].body.clone()).unwrap(),
        r#"[{"annotations":{"summary":"load \u003e 1 \u0026 rising"},"endsAt":"2025-11-28T03:01:00.250Z","startsAt":"2025-11-28T03:00:00.250Z","generatorURL":"http://ferrite:9090/graph?g0.expr=load","labels":{"alertname":"HighLoad","severity":"page"}}]"#
    );
    n.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn external_labels_and_relabeling() {
    let (a, b) = (Am::start().await, Am::start().await);
    let n = Notifier::new(Options::default());
    let text = format!(
        "global:\n  external_labels: {{region: eu, severity: low}}\nalerting:\n  alert_relabel_configs:\n    - {{source_labels: [alertname], regex: Ignored, action: drop}}\n  alertmanagers:\n    - static_configs: [{{targets: ['{}']}}]\n    - static_configs: [{{targets: ['{}']}}]\n      alert_relabel_configs:\n        - {{target_label: team, replacement: b}}\n        - {{source_labels: [severity], regex: page, action: drop}}\n",
        a.addr, b.addr
    );
    n.apply_config(&config(&text)).await.unwrap();
    let mut paged = alert("Paged");
    paged.labels.set("severity", "page");
    n.send(vec![paged, alert("Plain"), alert("Ignored")]);
    until(|| a.requests().len() == 1 && b.requests().len() == 1).await;
    let labels = |am: &Am| -> Vec<Value> {
        am.batches()[0]
            .iter()
            .map(|x| x["labels"].clone())
            .collect()
    };
    assert_eq!(
        labels(&a),
        [
            serde_json::json!({"alertname": "Paged", "region": "eu", "severity": "page"}),
            serde_json::json!({"alertname": "Plain", "region": "eu", "severity": "low"}),
        ]
    );
    assert_eq!(
        labels(&b),
        [serde_json::json!({"alertname": "Plain", "region": "eu", "severity": "low", "team": "b"})]
    );
    n.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_and_timeouts_are_counted() {
    let am = Am::start().await;
    let n = Notifier::new(Options {
        batch_size: 10,
        ..Options::default()
    });
    n.apply_config(&one_am(&am, "      timeout: 200ms\n"))
        .await
        .unwrap();
    am.status.store(500, Ordering::SeqCst);
    n.send(alerts(3));
    until(|| n.counts(&am.url()) == Some((0, 3, 3, 0))).await;
    am.status.store(200, Ordering::SeqCst);
    am.delay_ms.store(1000, Ordering::SeqCst);
    n.send(alerts(2));
    until(|| n.counts(&am.url()) == Some((0, 5, 5, 0))).await;
    am.delay_ms.store(0, Ordering::SeqCst);
    n.send(alerts(1));
    until(|| n.counts(&am.url()) == Some((1, 5, 5, 0))).await;
    // Nothing retried: 3 requests, the failed ones once each.
    assert_eq!(am.requests().len(), 3);
    let families = n.metric_families();
    let errors = families
        .iter()
        .find(|f| f.name == "prometheus_notifications_errors_total")
        .unwrap();
    assert_eq!(errors.samples[0].labels, [("alertmanager", am.url())]);
    assert_eq!(errors.samples[0].value, 5.0);
    n.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_queue_drops_the_oldest() {
    let am = Am::start().await;
    let n = Notifier::new(Options {
        batch_size: 1,
        queue_capacity: 3,
        ..Options::default()
    });
    n.apply_config(&one_am(&am, "")).await.unwrap();
    am.open.send_replace(false);
    n.send(vec![alert("first")]);
    until(|| am.requests().len() == 1).await;
    n.send(alerts(5));
    assert_eq!(n.counts(&am.url()), Some((0, 0, 2, 3)));
    am.open.send_replace(true);
    until(|| am.requests().len() == 4).await;
    assert_eq!(am.names(), [vec!["first"], vec!["2"], vec!["3"], vec!["4"]]);
    n.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_keeps_the_queue_and_a_failed_one_changes_nothing() {
    let am = Am::start().await;
    let n = Notifier::new(Options {
        batch_size: 1,
        ..Options::default()
    });
    n.apply_config(&one_am(&am, "")).await.unwrap();
    am.open.send_replace(false);
    n.send(alerts(4));
    until(|| am.requests().len() == 1).await;
    // The same Alertmanagers, other external labels: the set and its
    // queue stay.
    let reloaded = config(&format!(
        "global:\n  external_labels: {{r: x}}\nalerting:\n  alertmanagers:\n    - static_configs: [{{targets: ['{}']}}]\n",
        am.addr
    ));
    n.apply_config(&reloaded).await.unwrap();
    let bad = one_am(
        &am,
        "    - static_configs: [{targets: ['other:1']}]\n      tls_config: {ca_file: /nonexistent/ca.pem}\n",
    );
    let err = n.apply_config(&bad).await.expect_err("no CA file");
    assert!(
        err.to_string().starts_with("error creating HTTP client:"),
        "{err}"
    );
    assert_eq!(n.alertmanagers(), (vec![am.url()], vec![]));
    n.send(vec![alert("after")]);
    am.open.send_replace(true);
    until(|| am.requests().len() == 5).await;
    assert_eq!(
        am.names(),
        [vec!["0"], vec!["1"], vec!["2"], vec!["3"], vec!["after"]]
    );
    // Only the alert sent after the reload has its external label.
    assert_eq!(am.batches()[4][0]["labels"]["r"], "x");
    assert!(am.batches()[3][0]["labels"].get("r").is_none());
    n.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_drains_the_queue_or_drops_it() {
    for drain in [true, false] {
        let am = Am::start().await;
        am.delay_ms.store(20, Ordering::SeqCst);
        let n = Notifier::new(Options {
            batch_size: 1,
            drain_on_shutdown: drain,
            ..Options::default()
        });
        n.apply_config(&one_am(&am, "")).await.unwrap();
        n.send(alerts(10));
        n.stop().await;
        let got = am.requests().len();
        if drain {
            assert_eq!(got, 10);
        } else {
            assert!(got < 10, "{got}");
        }
        // Nothing is accepted after a stop.
        n.send(alerts(1));
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(am.requests().len(), got);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_drain_is_bounded() {
    let am = Am::start().await;
    am.open.send_replace(false);
    let n = Notifier::new(Options {
        batch_size: 1,
        drain_timeout: Duration::from_millis(300),
        ..Options::default()
    });
    n.apply_config(&one_am(&am, "      timeout: 1m\n"))
        .await
        .unwrap();
    n.send(alerts(5));
    let begin = std::time::Instant::now();
    n.stop().await;
    assert!(
        begin.elapsed() < Duration::from_secs(5),
        "{:?}",
        begin.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovery_and_dropped_alertmanagers() {
    let am = Am::start().await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ams.json");
    std::fs::write(
        &file,
        format!(
            r#"[{{"targets": ["{}", "skip:9093"], "labels": {{"env": "x"}}}}]"#,
            am.addr
        ),
    )
    .unwrap();
    let text = format!(
        "alerting:\n  alertmanagers:\n    - file_sd_configs: [{{files: ['{}']}}]\n      path_prefix: /am\n      relabel_configs:\n        - {{source_labels: [__address__], regex: 'skip:.*', action: drop}}\n",
        file.display()
    );
    let n = Notifier::new(Options::default());
    n.apply_config(&config(&text)).await.unwrap();
    until(|| !n.alertmanagers().0.is_empty()).await;
    assert_eq!(
        n.alertmanagers(),
        (
            vec![format!("http://{}/am/api/v2/alerts", am.addr)],
            vec!["http://skip:9093/am/api/v2/alerts".to_string()]
        )
    );
    n.send(vec![alert("x")]);
    until(|| am.requests().len() == 1).await;
    assert!(am.requests()[0].head.starts_with("POST /am/api/v2/alerts "));
    let _ = SystemTime::now();
    n.stop().await;
}
