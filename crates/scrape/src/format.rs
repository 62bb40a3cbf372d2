//! The exposition formats a scrape asks for and gets: the `Accept`
//! header built from a job's `scrape_protocols`, and the parser chosen
//! from a response's `Content-Type` (with `fallback_scrape_protocol`), as
//! Prometheus v3.16.0 chooses it (`textparse.New`, `extractMediaType`).
//!
//! Ferrite parses the Prometheus text format (0.0.4 and 1.0.0, one parser),
//! OpenMetrics 1.0.0 and 0.0.1 (one parser) and the protobuf format
//! (delimited `io.prometheus.client.MetricFamily` messages, with native
//! histograms). It does not parse OpenMetrics 2.0, which Prometheus
//! refuses too without its `openmetrics2` feature flag: the `Accept`
//! header leaves it out (Prometheus' weights of the others kept), so a
//! target offering it as well answers with what Ferrite reads. With the
//! default protocols (`PrometheusProto` first when the job scrapes native
//! histograms) the header is Prometheus' own.

use ferrite_config::ScrapeProtocol;
use ferrite_model::goquote::quote;

use crate::append::BodyError;

/// The media type of a protocol (its `Accept` entry without parameters):
/// what `fallback_scrape_protocol` parses a body as.
pub fn protocol_media_type(p: ScrapeProtocol) -> &'static str {
    match p {
        ScrapeProtocol::PrometheusProto => "application/vnd.google.protobuf",
        ScrapeProtocol::PrometheusText004 | ScrapeProtocol::PrometheusText100 => "text/plain",
        ScrapeProtocol::OpenMetricsText001
        | ScrapeProtocol::OpenMetricsText100
        | ScrapeProtocol::OpenMetricsText200 => "application/openmetrics-text",
    }
}

/// The `Accept` header for `protocols` (Prometheus' `acceptHeader`): each
/// protocol's media type, the escaping scheme on the newer text formats,
/// falling weights, then `*/*`. OpenMetrics 2.0, which Ferrite does not
/// parse, is left out, its weight too, so the others keep Prometheus'
/// weights.
pub fn accept_header(protocols: &[ScrapeProtocol], escaping: &str) -> String {
    let mut parts = Vec::new();
    let mut weight = 7;
    for &p in protocols {
        let header = match p {
            ScrapeProtocol::PrometheusProto => Some(
                "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited"
                    .to_string(),
            ),
            ScrapeProtocol::PrometheusText004 => Some("text/plain;version=0.0.4".to_string()),
            ScrapeProtocol::PrometheusText100 => {
                Some(format!("text/plain;version=1.0.0;escaping={escaping}"))
            }
            ScrapeProtocol::OpenMetricsText001 => {
                Some("application/openmetrics-text;version=0.0.1".to_string())
            }
            ScrapeProtocol::OpenMetricsText100 => Some(format!(
                "application/openmetrics-text;version=1.0.0;escaping={escaping}"
            )),
            ScrapeProtocol::OpenMetricsText200 => None,
        };
        if let Some(header) = header {
            parts.push(format!("{header};q=0.{weight}"));
        }
        weight -= 1;
    }
    parts.push(format!("*/*;q=0.{weight}"));
    parts.join(",")
}

/// How a body is parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// The Prometheus text format (`text/plain`).
    PrometheusText,
    /// OpenMetrics 1.0.0 or 0.0.1 (`application/openmetrics-text`).
    OpenMetrics,
    /// The protobuf format (`application/vnd.google.protobuf`).
    Protobuf,
}

/// The parser for a body's `Content-Type` (Prometheus' `textparse.New`):
/// the media type, or `fallback` (`fallback_scrape_protocol`'s) when the
/// header is blank, malformed, unsupported or OpenMetrics 2.0.
pub(crate) fn select_parser(
    content_type: &str,
    fallback: Option<&'static str>,
) -> Result<Format, BodyError> {
    let media_type = match media_type(content_type) {
        Ok(mt) => mt,
        Err(why) => match fallback {
            Some(f) => f.to_owned(),
            None => return Err(BodyError::ContentType(why)),
        },
    };
    match media_type.as_str() {
        "text/plain" => Ok(Format::PrometheusText),
        "application/openmetrics-text" => Ok(Format::OpenMetrics),
        "application/vnd.google.protobuf" => Ok(Format::Protobuf),
        other => Err(BodyError::ContentType(format!(
            "received Content-Type {} which Ferrite does not parse",
            quote(other)
        ))),
    }
}

/// The media type of a `Content-Type` Prometheus would parse, or its
/// message when there is none (`extractMediaType`).
fn media_type(content_type: &str) -> Result<String, String> {
    if content_type.is_empty() {
        return Err("non-compliant scrape target sending blank Content-Type and no fallback_scrape_protocol specified for target".into());
    }
    let (mt, version) = parse_media_type(content_type).map_err(|e| {
        format!(
            "cannot parse Content-Type {} and no fallback_scrape_protocol for target\n{e}",
            quote(content_type)
        )
    })?;
    if mt == "application/openmetrics-text" && version.as_deref() == Some("2.0.0") {
        return Err(format!(
            "received OpenMetrics 2.0 Content-Type {}, but the openmetrics2 feature flag is not enabled and no fallback_scrape_protocol specified for target",
            quote(content_type)
        ));
    }
    match mt.as_str() {
        "application/openmetrics-text" | "application/vnd.google.protobuf" | "text/plain" => {
            Ok(mt)
        }
        _ => Err(format!(
            "received unsupported Content-Type {} and no fallback_scrape_protocol specified for target",
            quote(content_type)
        )),
    }
}

/// Go's `mime.ParseMediaType`, as far as Prometheus uses it: the media
/// type (lower case) and the `version` parameter, or Go's error.
fn parse_media_type(v: &str) -> Result<(String, Option<String>), &'static str> {
    let base = v.split(';').next().unwrap_or_default();
    let mt = base.to_lowercase().trim().to_owned();
    check_media_type(&mt)?;
    // Parameters by name; RFC 2231 continuations (`name*`, `name*0`...)
    // apart, by their base name.
    let mut params: Vec<(String, Vec<u8>)> = Vec::new();
    let mut continued: Vec<(String, String, Vec<u8>)> = Vec::new();
    let mut rest = &v[base.len()..];
    loop {
        rest = rest.trim_start();
        if rest.is_empty() {
            break;
        }
        let Some((key, value, after)) = media_param(rest) else {
            if rest.trim() == ";" {
                break; // a trailing semicolon
            }
            return Err("mime: invalid media parameter");
        };
        let seen = match key.split_once('*') {
            Some((base_name, _)) => continued
                .iter()
                .find(|(b, k, _)| *b == base_name && *k == key)
                .map(|(_, _, v)| v),
            None => params.iter().find(|(k, _)| *k == key).map(|(_, v)| v),
        };
        match seen {
            Some(old) if *old != value => return Err("mime: duplicate parameter name"),
            Some(_) => {}
            None => match key.split_once('*') {
                Some((base_name, _)) => continued.push((base_name.to_owned(), key, value)),
                None => params.push((key, value)),
            },
        }
        rest = after;
    }
    let mut version = params
        .iter()
        .find(|(k, _)| k == "version")
        .map(|(_, v)| v.clone());
    if let Some(v) = continued_value(&continued, "version") {
        version = Some(v);
    }
    Ok((
        mt,
        version.map(|v| String::from_utf8_lossy(&v).into_owned()),
    ))
}

/// Go's `checkMediaTypeDisposition`: a token, optionally `/` and a token.
fn check_media_type(s: &str) -> Result<(), &'static str> {
    let (typ, rest) = token(s);
    if typ.is_empty() {
        return Err("mime: no media type");
    }
    if rest.is_empty() {
        return Ok(());
    }
    let Some(rest) = rest.strip_prefix('/') else {
        return Err("mime: expected slash after first token");
    };
    let (subtype, rest) = token(rest);
    if subtype.is_empty() {
        return Err("mime: expected token after slash");
    }
    if !rest.is_empty() {
        return Err("mime: unexpected content after media subtype");
    }
    Ok(())
}

fn is_tspecial(c: u8) -> bool {
    b"()<>@,;:\\\"/[]?=".contains(&c)
}

fn is_token_char(c: u8) -> bool {
    c.is_ascii_graphic() && !is_tspecial(c)
}

/// The leading token of `s` and the rest.
fn token(s: &str) -> (&str, &str) {
    let n = s.bytes().take_while(|&c| is_token_char(c)).count();
    s.split_at(n)
}

/// `; key=value` at the start of `v` (Go's `consumeMediaParam`): the key
/// (lower case), the value and the rest; `None` if there is none.
fn media_param(v: &str) -> Option<(String, Vec<u8>, &str)> {
    let rest = v.trim_start().strip_prefix(';')?.trim_start();
    let (key, rest) = token(rest);
    if key.is_empty() {
        return None;
    }
    let rest = rest.trim_start().strip_prefix('=')?.trim_start();
    let (value, after) = param_value(rest);
    if value.is_empty() && after.len() == rest.len() {
        return None;
    }
    Some((key.to_ascii_lowercase(), value, after))
}

/// A token or a quoted string (Go's `consumeValue`); an empty value and
/// the input unchanged when neither is there.
fn param_value(v: &str) -> (Vec<u8>, &str) {
    let b = v.as_bytes();
    if b.first() != Some(&b'"') {
        let (t, rest) = token(v);
        return (t.as_bytes().to_vec(), rest);
    }
    let mut out = Vec::new();
    let mut i = 1;
    while i < b.len() {
        match b[i] {
            b'"' => return (out, &v[i + 1..]),
            b'\\' if i + 1 < b.len() && is_tspecial(b[i + 1]) => {
                out.push(b[i + 1]);
                i += 2;
                continue;
            }
            b'\r' | b'\n' => return (Vec::new(), v),
            c => out.push(c),
        }
        i += 1;
    }
    (Vec::new(), v)
}

/// The value of parameter `name` given as RFC 2231 continuations, if it
/// is (Go's stitching in `ParseMediaType`).
fn continued_value(continued: &[(String, String, Vec<u8>)], name: &str) -> Option<Vec<u8>> {
    let piece = |key: &str| {
        continued
            .iter()
            .find(|(b, k, _)| b == name && k == key)
            .map(|(_, _, v)| v.as_slice())
    };
    if !continued.iter().any(|(b, _, _)| b == name) {
        return None;
    }
    if let Some(v) = piece(&format!("{name}*")) {
        return decode_2231(v);
    }
    let mut out = Vec::new();
    let mut valid = false;
    for n in 0.. {
        if let Some(v) = piece(&format!("{name}*{n}")) {
            valid = true;
            out.extend_from_slice(v);
            continue;
        }
        let Some(v) = piece(&format!("{name}*{n}*")) else {
            break;
        };
        valid = true;
        if n == 0 {
            if let Some(d) = decode_2231(v) {
                out.extend_from_slice(&d);
            }
        } else {
            out.extend_from_slice(&percent_unescape(v).unwrap_or_default());
        }
    }
    valid.then_some(out)
}

/// `charset'language'percent-encoded`, for us-ascii and utf-8.
fn decode_2231(v: &[u8]) -> Option<Vec<u8>> {
    let mut parts = v.splitn(3, |&c| c == b'\'');
    let charset = parts.next()?.to_ascii_lowercase();
    let _language = parts.next()?;
    let value = parts.next()?;
    if charset != b"us-ascii" && charset != b"utf-8" {
        return None;
    }
    percent_unescape(value)
}

/// `%XX` decoded; `None` if a `%` is not followed by two hex digits.
fn percent_unescape(s: &[u8]) -> Option<Vec<u8>> {
    let hex = |c: u8| char::from(c).to_digit(16);
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        if s[i] == b'%' {
            let hi = hex(*s.get(i + 1)?)?;
            let lo = hex(*s.get(i + 2)?)?;
            out.push(u8::try_from(hi * 16 + lo).ok()?);
            i += 3;
        } else {
            out.push(s[i]);
            i += 1;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_header_is_prometheus_for_the_default_protocols() {
        assert_eq!(
            accept_header(&ScrapeProtocol::DEFAULT, "allow-utf-8"),
            "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.7,\
             application/openmetrics-text;version=0.0.1;q=0.6,\
             text/plain;version=1.0.0;escaping=allow-utf-8;q=0.5,\
             text/plain;version=0.0.4;q=0.4,*/*;q=0.3"
        );
        // A job scraping native histograms: the protobuf format first.
        assert_eq!(
            accept_header(&ScrapeProtocol::PROTO_FIRST, "underscores"),
            "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.7,\
             application/openmetrics-text;version=1.0.0;escaping=underscores;q=0.6,\
             application/openmetrics-text;version=0.0.1;q=0.5,\
             text/plain;version=1.0.0;escaping=underscores;q=0.4,\
             text/plain;version=0.0.4;q=0.3,*/*;q=0.2"
        );
        // OpenMetrics 2.0 is left out, its weight kept from the others.
        assert_eq!(
            accept_header(
                &[
                    ScrapeProtocol::OpenMetricsText200,
                    ScrapeProtocol::PrometheusText004
                ],
                "allow-utf-8"
            ),
            "text/plain;version=0.0.4;q=0.6,*/*;q=0.5"
        );
    }

    fn parse(ct: &str, fallback: Option<&'static str>) -> Result<Format, String> {
        select_parser(ct, fallback).map_err(|e| e.to_string())
    }

    #[test]
    fn content_types_choose_the_parser() {
        for ct in [
            "text/plain; version=0.0.4; charset=utf-8",
            "text/plain;version=1.0.0;escaping=allow-utf-8",
            "TEXT/Plain",
            "text/plain;",
            "text/plain; version=\"0.0.4\" ; ",
        ] {
            assert_eq!(parse(ct, None), Ok(Format::PrometheusText), "{ct}");
        }
        for ct in [
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
            "application/openmetrics-text;version=0.0.1",
            "application/openmetrics-text",
            "application/openmetrics-text; version=1.1.0",
        ] {
            assert_eq!(parse(ct, None), Ok(Format::OpenMetrics), "{ct}");
        }
        // OpenMetrics 2.0: refused, or the fallback.
        for ct in [
            "application/openmetrics-text; version=2.0.0",
            "application/openmetrics-text; VERSION=\"2.0.0\"",
            "application/openmetrics-text; version*=utf-8''2%2E0.0",
            "application/openmetrics-text; version*0=2.0; version*1=.0",
        ] {
            assert_eq!(
                parse(ct, None),
                Err(format!(
                    "received OpenMetrics 2.0 Content-Type {}, but the openmetrics2 feature flag is not enabled and no fallback_scrape_protocol specified for target",
                    quote(ct)
                )),
                "{ct}"
            );
            assert_eq!(parse(ct, Some("text/plain")), Ok(Format::PrometheusText));
        }
        for ct in [
            "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited",
            "application/vnd.google.protobuf",
            "Application/Vnd.Google.Protobuf; proto=other",
        ] {
            assert_eq!(parse(ct, None), Ok(Format::Protobuf), "{ct}");
        }
        assert_eq!(
            parse("", Some("application/vnd.google.protobuf")),
            Ok(Format::Protobuf)
        );
        assert_eq!(
            parse("text", None),
            Err("received unsupported Content-Type \"text\" and no fallback_scrape_protocol specified for target".into())
        );
        assert_eq!(
            parse("text/plain; =x", None),
            Err("cannot parse Content-Type \"text/plain; =x\" and no fallback_scrape_protocol for target\nmime: invalid media parameter".into())
        );
        assert_eq!(
            parse("text/plain; version=1; Version=2", None),
            Err("cannot parse Content-Type \"text/plain; version=1; Version=2\" and no fallback_scrape_protocol for target\nmime: duplicate parameter name".into())
        );
        for (ct, why) in [
            ("/plain", "mime: no media type"),
            ("text plain", "mime: expected slash after first token"),
            ("text/", "mime: expected token after slash"),
            (
                "text/plain x",
                "mime: unexpected content after media subtype",
            ),
            ("text/plain; a=\"b", "mime: invalid media parameter"),
        ] {
            assert_eq!(
                parse(ct, None),
                Err(format!(
                    "cannot parse Content-Type {} and no fallback_scrape_protocol for target\n{why}",
                    quote(ct)
                ))
            );
            assert_eq!(
                parse(ct, Some("application/openmetrics-text")),
                Ok(Format::OpenMetrics)
            );
        }
    }
}
