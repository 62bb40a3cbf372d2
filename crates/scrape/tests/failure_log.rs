//! `scrape_failure_log_file` through the scrape manager: failing targets
//! (a refused connection, a 500) logged to their job's file, reloads
//! moving a job to another file or to none.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use ferrite_config::Config;
use ferrite_model::Labels;
use ferrite_scrape::manager::ScrapeManager;
use ferrite_scrape::storage::{
    AppendFailure, HistogramSample, ScrapeAppender, ScrapeStorage, SeriesHandle,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A storage that keeps nothing.
struct Discard;

struct DiscardAppender;

impl ScrapeStorage for Discard {
    fn appender(&self) -> Box<dyn ScrapeAppender + '_> {
        Box::new(DiscardAppender)
    }
}

impl ScrapeAppender for DiscardAppender {
    fn append(&mut self, _: &SeriesHandle, _: i64, _: f64) -> Result<(), AppendFailure> {
        Ok(())
    }
    fn append_new(&mut self, _: &Labels, _: i64, _: f64) -> Result<SeriesHandle, AppendFailure> {
        Ok(SeriesHandle::new(Arc::new(())))
    }
    fn append_histogram(
        &mut self,
        _: &SeriesHandle,
        _: i64,
        _: HistogramSample<'_>,
    ) -> Result<(), AppendFailure> {
        Ok(())
    }
    fn append_histogram_new(
        &mut self,
        _: &Labels,
        _: i64,
        _: HistogramSample<'_>,
    ) -> Result<SeriesHandle, AppendFailure> {
        Ok(SeriesHandle::new(Arc::new(())))
    }
    fn commit(self: Box<Self>) -> Result<(), String> {
        Ok(())
    }
    fn rollback(self: Box<Self>) {}
}

/// A target answering every request with a 500; its address.
async fn failing_target() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 1024];
                while let Ok(n) = conn.read(&mut chunk).await {
                    buf.extend_from_slice(&chunk[..n]);
                    if n == 0 || buf.windows(4).any(|w| w == b"\r\n\r\n") {
                        break;
                    }
                }
                let reply = "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
                let _ = conn.write_all(reply.as_bytes()).await;
            });
        }
    });
    addr.to_string()
}

/// An address nothing listens on.
async fn refusing_target() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    listener.local_addr().expect("addr").to_string()
}

/// Two jobs, `down` (refused) and `err` (500), the global log `global`
/// (`""`: none) and `err`'s own `own` (`""`: the global one).
fn config(global: &str, own: &str, down: &str, err: &str) -> Config {
    let mut text = String::from("global:\n  scrape_interval: 100ms\n  scrape_timeout: 100ms\n");
    if !global.is_empty() {
        text += &format!("  scrape_failure_log_file: {global}\n");
    }
    text += &format!(
        "scrape_configs:\n\
         - job_name: down\n  static_configs: [{{targets: ['{down}']}}]\n\
         - job_name: err\n  static_configs: [{{targets: ['{err}']}}]\n"
    );
    if !own.is_empty() {
        text += &format!("  scrape_failure_log_file: {own}\n");
    }
    Config::parse(&text, "t.yml").expect("config")
}

/// The file's lines as JSON (none if it does not exist).
fn lines(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

/// How many of the file's lines are for `job`.
fn count(path: &Path, job: &str) -> usize {
    lines(path).iter().filter(|v| v["job_name"] == job).count()
}

/// Waits until `f` holds (at most 5 s).
async fn until(what: &str, mut f: impl FnMut() -> bool) {
    for _ in 0..100 {
        if f() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out waiting for {what}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_scrapes_are_logged_to_their_jobs_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (global, own, moved) = (
        dir.path().join("global.log"),
        dir.path().join("own.log"),
        dir.path().join("moved.log"),
    );
    let (down, err) = (refusing_target().await, failing_target().await);
    let path = |p: &Path| p.to_str().expect("utf-8").to_string();
    let manager = ScrapeManager::new(Arc::new(Discard), tokio::runtime::Handle::current());

    // `down` logs to the global file, `err` to its own.
    manager
        .apply_config(&config(&path(&global), &path(&own), &down, &err))
        .await
        .expect("applies");
    until("a line for each job", || {
        count(&global, "down") > 0 && count(&own, "err") > 0
    })
    .await;
    assert_eq!(count(&global, "err"), 0);
    assert_eq!(count(&own, "down"), 0);
    let text = std::fs::read_to_string(&own).expect("read");
    let first = text.lines().next().expect("a line");
    let keys: Vec<usize> = [
        "\"time\":",
        "\"level\":",
        "\"msg\":",
        "\"job_name\":",
        "\"target\":",
    ]
    .iter()
    .map(|k| first.find(k).expect(k))
    .collect();
    assert!(keys.windows(2).all(|w| w[0] < w[1]), "{first}");
    let v: serde_json::Value = serde_json::from_str(first).expect("JSON");
    assert_eq!(v["level"], "ERROR");
    assert_eq!(
        v["msg"],
        "server returned HTTP status 500 Internal Server Error"
    );
    assert_eq!(v["job_name"], "err");
    assert_eq!(v["target"], format!("http://{err}/metrics"));
    let time = v["time"].as_str().expect("a time");
    assert!(time.ends_with('Z') && time.contains('T'), "{time}");
    let v = &lines(&global)[0];
    let url = format!("http://{down}/metrics");
    assert_eq!(v["target"], url.as_str());
    let msg = v["msg"].as_str().expect("a message");
    assert!(
        msg.starts_with(&format!("Get \"{url}\": ")) && msg.ends_with("connection refused"),
        "{msg}"
    );

    // A reload opens the files again (the global one moved away is
    // created anew although `down` did not change) and moves `err`, a
    // changed job, to another file.
    let moved_away = dir.path().join("global.log.1");
    std::fs::rename(&global, &moved_away).expect("rename");
    manager
        .apply_config(&config(&path(&global), &path(&moved), &down, &err))
        .await
        .expect("applies");
    let (own_lines, away_lines) = (lines(&own).len(), lines(&moved_away).len());
    until("lines in the new files", || {
        count(&global, "down") > 0 && count(&moved, "err") > 0
    })
    .await;
    assert_eq!(lines(&own).len(), own_lines);
    assert_eq!(lines(&moved_away).len(), away_lines);

    // An empty path: no file, nothing logged.
    manager
        .apply_config(&config("", "", &down, &err))
        .await
        .expect("applies");
    let before = [&global, &own, &moved].map(|p| lines(p).len());
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!([&global, &own, &moved].map(|p| lines(p).len()), before);
    let snapshot = manager.snapshot().await;
    assert!(snapshot
        .iter()
        .all(|p| p.active.iter().all(|t| !t.status.last_error.is_empty())));

    // A file that cannot be opened fails the apply, changing nothing.
    let bad = dir.path().join("no/such/dir/f.log");
    let e = manager
        .apply_config(&config(&path(&bad), "", &down, &err))
        .await
        .expect_err("cannot open");
    assert_eq!(
        e.to_string(),
        format!(
            "can't create json log file: open {}: no such file or directory",
            bad.display()
        )
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!([&global, &own, &moved].map(|p| lines(p).len()), before);
    manager.stop().await;
}
