//! One batch to one Alertmanager: the body of Alertmanager's API v2
//! (`POST <url>` with a JSON list of `PostableAlert`s), byte for byte as
//! Prometheus' client writes it, and the request.
//!
//! The body, as Go's `encoding/json` writes Alertmanager's generated
//! models (`models.PostableAlert` marshals its two halves and joins them):
//!
//! ```json
//! [{"annotations":{"summary":"x"},"endsAt":"0001-01-01T00:00:00.000Z",
//!   "startsAt":"2026-11-28T03:00:00.123Z","generatorURL":"http://p/graph",
//!   "labels":{"alertname":"A"}}]
//! ```
//!
//! `annotations` and `generatorURL` are left out when empty; times are
//! `strfmt.DateTime`s, written as RFC 3339 with milliseconds (truncated),
//! in UTC here, a missing time as Go's zero time; strings are escaped as
//! Go escapes them (`<`, `>` and `&` as `\u003c`, `\u003e`, `\u0026`).
//!
//! The request carries `Content-Type: application/json` and the
//! scrapers' `User-Agent`, goes through the set's HTTP client (TLS,
//! authentication, headers, proxies: [`ferrite_scrape::client`]) and must
//! answer 2xx within the set's timeout.

use std::fmt::Write as _;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ferrite_model::Labels;
use ferrite_scrape::client::ScrapeClient;

use crate::alert::Alert;

/// The JSON body for `alerts`.
pub fn encode_v2(alerts: &[Alert]) -> Vec<u8> {
    let mut out = String::with_capacity(alerts.len() * 256);
    out.push('[');
    for (i, a) in alerts.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push('{');
        if !a.annotations.is_empty() {
            out.push_str("\"annotations\":");
            label_set(&mut out, &a.annotations);
            out.push(',');
        }
        out.push_str("\"endsAt\":\"");
        out.push_str(&format_time(a.ends_at));
        out.push_str("\",\"startsAt\":\"");
        out.push_str(&format_time(a.starts_at));
        out.push_str("\",");
        if !a.generator_url.is_empty() {
            out.push_str("\"generatorURL\":");
            json_string(&mut out, &a.generator_url);
            out.push(',');
        }
        out.push_str("\"labels\":");
        label_set(&mut out, &a.labels);
        out.push('}');
    }
    out.push(']');
    out.into_bytes()
}

/// A label set as a JSON object, keys in byte order (Go sorts map keys).
fn label_set(out: &mut String, labels: &Labels) {
    let mut pairs: Vec<(&str, &str)> = labels.iter().map(|l| (&*l.name, &*l.value)).collect();
    pairs.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    out.push('{');
    for (i, (k, v)) in pairs.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        json_string(out, k);
        out.push(':');
        json_string(out, v);
    }
    out.push('}');
}

/// A JSON string as Go's `encoding/json` writes it (HTML-safe).
fn json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// `2006-01-02T15:04:05.000Z` (UTC, milliseconds truncated); `None` is
/// Go's zero time, `0001-01-01T00:00:00.000Z`.
pub fn format_time(t: Option<SystemTime>) -> String {
    let Some(t) = t else {
        return "0001-01-01T00:00:00.000Z".to_string();
    };
    // Milliseconds since the epoch, floored (also before 1970).
    let ms: i64 = match t.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
        Err(e) => {
            let d = e.duration();
            let whole = i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
            if d.subsec_nanos() % 1_000_000 != 0 {
                -whole - 1
            } else {
                -whole
            }
        }
    };
    let secs = ms.div_euclid(1000);
    let millis = ms.rem_euclid(1000);
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    let (y, m, d) = ferrite_model::gotime::civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        sod / 3600,
        sod % 3600 / 60,
        sod % 60
    )
}

/// Posts `body` to `url` through `client`; an error unless the answer is
/// 2xx within `timeout`.
pub async fn post<C: ScrapeClient + ?Sized>(
    client: &C,
    url: &str,
    body: Vec<u8>,
    timeout: Duration,
) -> Result<(), String> {
    let attempt = async {
        let http = client.http()?;
        let request = http
            .post(url)
            .header(
                reqwest::header::USER_AGENT,
                ferrite_scrape::http::USER_AGENT,
            )
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body);
        let request = client.prepare(request, timeout).await?;
        let response = request
            .send()
            .await
            .map_err(|e| format!("Post {:?}: {}", url, error_chain(&e)))?;
        let status = response.status();
        // The body is read and discarded, as Prometheus does, so the
        // connection can be reused.
        let _ = response.bytes().await;
        if !status.is_success() {
            return Err(format!(
                "bad response status {} {}",
                status.as_u16(),
                status.canonical_reason().unwrap_or("")
            )
            .trim_end()
            .to_string());
        }
        Ok(())
    };
    match tokio::time::timeout(timeout, attempt).await {
        Ok(outcome) => outcome,
        Err(_) => Err(format!("Post {url:?}: context deadline exceeded")),
    }
}

/// An error and its sources, `: `-joined.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let _ = write!(text, ": {s}");
        source = s.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_as_strfmt_writes_them() {
        assert_eq!(format_time(None), "0001-01-01T00:00:00.000Z");
        let t = UNIX_EPOCH + Duration::from_nanos(1_795_000_000_123_456_789);
        assert_eq!(format_time(Some(t)), "2026-11-18T11:06:40.123Z");
        assert_eq!(format_time(Some(UNIX_EPOCH)), "1970-01-01T00:00:00.000Z");
        let before = UNIX_EPOCH - Duration::from_millis(1500);
        assert_eq!(format_time(Some(before)), "1969-12-31T23:59:58.500Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(format_time(Some(leap)), "2000-02-29T00:00:00.000Z");
    }

    #[test]
    fn body_as_prometheus_posts_it() {
        let alerts = vec![
            Alert {
                labels: Labels::from_pairs(&[("alertname", "High<Load>"), ("a", "x\"y")]),
                annotations: Labels::from_pairs(&[("summary", "a & b\n")]),
                starts_at: Some(UNIX_EPOCH + Duration::from_millis(1_000_123)),
                ends_at: None,
                generator_url: "http://p:9090/graph?g0.expr=up&x=1".into(),
            },
            Alert {
                labels: Labels::from_pairs(&[("alertname", "B")]),
                annotations: Labels::empty(),
                starts_at: None,
                ends_at: Some(UNIX_EPOCH),
                generator_url: String::new(),
            },
        ];
        let body = String::from_utf8(encode_v2(&alerts)).expect("utf-8");
        assert_eq!(
            body,
            concat!(
                r#"[{"annotations":{"summary":"a \u0026 b\n"},"endsAt":"0001-01-01T00:00:00.000Z","#,
                r#""startsAt":"1970-01-01T00:16:40.123Z","generatorURL":"http://p:9090/graph?g0.expr=up\u0026x=1","#,
                r#""labels":{"a":"x\"y","alertname":"High\u003cLoad\u003e"}},"#,
                r#"{"endsAt":"1970-01-01T00:00:00.000Z","startsAt":"0001-01-01T00:00:00.000Z","labels":{"alertname":"B"}}]"#
            )
        );
        assert_eq!(encode_v2(&[]), b"[]");
    }
}
