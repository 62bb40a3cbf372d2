//! Sends alerts through a [`Notifier`], for the interop test against a real
//! Alertmanager (`interop/alertmanager_test.go`).
//!
//! ```text
//! notifysend [--batch-size N] [--queue-capacity N] CONFIG_FILE < alerts.jsonl
//! ```
//!
//! The configuration file is loaded as the server loads it; each line of
//! the standard input is one alert:
//!
//! ```json
//! {"labels":{"alertname":"A"},"annotations":{"summary":"s"},
//!  "startsAtMs":1700000000000,"endsAtMs":null,"generatorURL":"http://x"}
//! ```
//!
//! (times in Unix milliseconds, absent or null for none). The alerts are
//! sent, then the notifier is stopped (its queues drained); each
//! Alertmanager's URL is printed with the alerts sent, failed and dropped,
//! `URL sent=N errors=N dropped=N`, before the stop.

use std::io::BufRead;
use std::time::{Duration, UNIX_EPOCH};

use ferrite_config::Config;
use ferrite_model::Labels;
use ferrite_notifier::{Alert, Notifier, Options};
use serde_json::Value;

fn labels(v: Option<&Value>) -> Labels {
    let pairs: Vec<(String, String)> = v
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect()
        })
        .unwrap_or_default();
    Labels::new(pairs)
}

fn time(v: Option<&Value>) -> Option<std::time::SystemTime> {
    let ms = v.and_then(Value::as_i64)?;
    Some(if ms >= 0 {
        UNIX_EPOCH + Duration::from_millis(ms as u64)
    } else {
        UNIX_EPOCH - Duration::from_millis(ms.unsigned_abs())
    })
}

fn main() -> Result<(), String> {
    let mut opts = Options::default();
    let mut args = std::env::args().skip(1);
    let mut file = None;
    while let Some(a) = args.next() {
        let mut number = |name: &str| -> Result<usize, String> {
            args.next()
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| format!("{name} needs a number"))
        };
        match a.as_str() {
            "--batch-size" => opts.batch_size = number("--batch-size")?,
            "--queue-capacity" => opts.queue_capacity = number("--queue-capacity")?,
            _ => file = Some(a),
        }
    }
    let file = file.ok_or("usage: notifysend [--batch-size N] [--queue-capacity N] CONFIG_FILE")?;
    let cfg = Config::load(std::path::Path::new(&file)).map_err(|e| e.to_string())?;
    let mut alerts = Vec::new();
    for line in std::io::stdin().lock().lines() {
        let line = line.map_err(|e| e.to_string())?;
        if line.trim().is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(&line).map_err(|e| format!("{line}: {e}"))?;
        alerts.push(Alert {
            labels: labels(v.get("labels")),
            annotations: labels(v.get("annotations")),
            starts_at: time(v.get("startsAtMs")),
            ends_at: time(v.get("endsAtMs")),
            generator_url: v
                .get("generatorURL")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
        });
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(async {
        let notifier = Notifier::new(opts);
        notifier
            .apply_config(&cfg)
            .await
            .map_err(|e| e.to_string())?;
        notifier.send(alerts);
        // Let the loops send (queues empty, counts unchanged for 300 ms,
        // at most a minute), then report before the stop removes the
        // series.
        let mut last = Vec::new();
        let mut steady = 0;
        for _ in 0..1200 {
            let (active, _) = notifier.alertmanagers();
            let counts: Vec<_> = active.iter().map(|u| notifier.counts(u)).collect();
            let idle = counts.iter().all(|c| c.is_some_and(|c| c.3 == 0));
            steady = if idle && counts == last {
                steady + 1
            } else {
                0
            };
            if steady >= 6 {
                break;
            }
            last = counts;
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let (active, dropped) = notifier.alertmanagers();
        for url in &active {
            let (sent, errors, dropped, _) = notifier.counts(url).unwrap_or_default();
            println!("{url} sent={sent} errors={errors} dropped={dropped}");
        }
        for url in &dropped {
            println!("{url} dropped-by-relabeling");
        }
        notifier.stop().await;
        Ok(())
    })
}
