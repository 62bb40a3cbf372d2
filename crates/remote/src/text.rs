//! Text forms: Prometheus' label printing (used in error messages) and a
//! dump of how a receiver answers a request, the common language of the
//! golden files, `examples/rwdump.rs` and `interop/cmd/promremote`.
//!
//! Dump format, one item per line, in the order Prometheus' receiver calls
//! its appender (per series: samples, each with the start timestamp it is
//! handed, then its native histograms, then the exemplars in the order
//! they are appended, then the series' metadata unless it is empty, which
//! v3.16 attaches to the samples' appends and its head does not record):
//!
//! ```text
//! status 400
//! body <line of the error message>           (one per line; errors only)
//! header samples=1 histograms=0 exemplars=0  (2.0 answers only)
//! sample {__name__="up"} t=1000 v=0x3ff0000000000000 st=0
//! histogram {__name__="h"} t=1000
//! exemplar {__name__="up"} {trace_id="a"} t=1000 v=0x3ff0000000000000
//! metadata {__name__="up"} type=counter help="h" unit=""
//! ```
//!
//! Values are printed as their bits so that both sides agree exactly.

use std::fmt::Write;

use ferrite_model::goquote::quote_bytes_into as go_quote_bytes;
use ferrite_model::Labels;

use crate::response::SUCCESS_STATUS;
use crate::{MessageType, RequestError, Verdict, WriteRequest};
use ferrite_model::is_legacy_label_name;

/// Prometheus' `labels.Labels.String()` of (sorted) raw pairs:
/// `{__name__="up", "my.name"="x"}` — names quoted unless legacy-valid.
pub fn labels_string(raw: &[(&[u8], &[u8])]) -> String {
    let mut out = String::with_capacity(64);
    out.push('{');
    for (i, (n, v)) in raw.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        if is_legacy_label_name(n) {
            // ASCII only.
            out.push_str(std::str::from_utf8(n).unwrap_or_default());
        } else {
            go_quote_bytes(n, &mut out);
        }
        out.push('=');
        go_quote_bytes(v, &mut out);
    }
    out.push('}');
    out
}

/// [`labels_string`] of a label set.
pub fn labels_to_string(ls: &Labels) -> String {
    let raw: Vec<(&[u8], &[u8])> = ls
        .iter()
        .map(|l| (l.name.as_bytes(), l.value.as_bytes()))
        .collect();
    labels_string(&raw)
}

/// Reads a `.headers` file (`content-type: V` / `content-encoding: V`
/// lines, each omitted when the header is absent).
pub fn parse_headers(s: &str) -> (Option<String>, Option<String>) {
    let (mut ct, mut ce) = (None, None);
    for line in s.lines() {
        let (k, v) = line
            .split_once(": ")
            .or_else(|| line.split_once(':'))
            .unwrap_or((line, ""));
        match k {
            "content-type" => ct = Some(v.to_owned()),
            "content-encoding" => ce = Some(v.to_owned()),
            _ => {}
        }
    }
    (ct, ce)
}

/// The dump of how a receiver whose appends all succeed answers `result`
/// (a [`crate::decode_request`] outcome).
pub fn render_response(result: &Result<WriteRequest, RequestError>) -> String {
    let mut out = String::new();
    match result {
        Err(e) => {
            let _ = writeln!(out, "status {}", e.status());
            for l in e.to_string().lines() {
                let _ = writeln!(out, "body {l}");
            }
            // Prometheus' 2.0 handler still sets the (zero) counts when its
            // storage code refused the protobuf; earlier errors have none.
            if let RequestError::Protobuf {
                message: MessageType::V2,
                ..
            } = e
            {
                let _ = writeln!(out, "header samples=0 histograms=0 exemplars=0");
            }
        }
        Ok(req) => {
            let v2 = req.message == Some(MessageType::V2);
            let (status, body) = match req.verdict() {
                Verdict::Accept => (SUCCESS_STATUS, None),
                Verdict::PartialWrite(m) => (400, Some(m)),
            };
            let _ = writeln!(out, "status {status}");
            for l in body.iter().flat_map(|b| b.lines()) {
                let _ = writeln!(out, "body {l}");
            }
            if v2 {
                let s = req.stats();
                let _ = writeln!(
                    out,
                    "header samples={} histograms={} exemplars={}",
                    s.samples, s.histograms, s.exemplars
                );
            }
            render_appends(req, &mut out);
        }
    }
    out
}

fn render_appends(req: &WriteRequest, out: &mut String) {
    for s in &req.series {
        let ls = labels_to_string(&s.labels);
        for x in &s.samples {
            // v3.16 hands every sample its start timestamp as sent, t=0 or
            // not (the storage decides what to keep).
            let _ = writeln!(
                out,
                "sample {ls} t={} v={:#018x} st={}",
                x.timestamp,
                x.value.to_bits(),
                x.start_timestamp,
            );
        }
        for h in &s.histograms {
            let _ = writeln!(out, "histogram {ls} t={}", h.timestamp);
        }
        for e in &s.exemplars {
            let _ = writeln!(
                out,
                "exemplar {ls} {} t={} v={:#018x}",
                labels_to_string(&e.labels),
                e.timestamp,
                e.value.to_bits()
            );
        }
        if let Some(m) = &s.metadata {
            let mut help = String::new();
            go_quote_bytes(m.help.as_bytes(), &mut help);
            let mut unit = String::new();
            go_quote_bytes(m.unit.as_bytes(), &mut unit);
            let _ = writeln!(
                out,
                "metadata {ls} type={} help={help} unit={unit}",
                m.kind.as_str()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(b: &[u8]) -> String {
        let mut s = String::new();
        go_quote_bytes(b, &mut s);
        s
    }

    #[test]
    fn quoting_matches_go() {
        // Expected strings from Go's strconv.Quote.
        assert_eq!(q(b"a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(q(b"\n\t\x00\x7f"), r#""\n\t\x00\x7f""#);
        assert_eq!(q(b"\xff\xfeok"), r#""\xff\xfeok""#);
        assert_eq!(q("héllo 世界".as_bytes()), "\"héllo 世界\"");
        assert_eq!(q("\u{200b}".as_bytes()), r#""\u200b""#);
        assert_eq!(q("\u{a0}".as_bytes()), r#""\u00a0""#);
        assert_eq!(q("\u{1F600}".as_bytes()), "\"\u{1F600}\"");
        assert_eq!(q("\u{e000}".as_bytes()), r#""\ue000""#);
    }

    #[test]
    fn labels_print_like_prometheus() {
        let raw: Vec<(&[u8], &[u8])> = vec![(b"__name__", b"up"), (b"a.b", b"x"), (b"job", b"")];
        assert_eq!(labels_string(&raw), r#"{__name__="up", "a.b"="x", job=""}"#);
        assert_eq!(labels_string(&[]), "{}");
    }
}
