//! The exposition formats a scrape asks for and gets: the `Accept`
//! header built from a job's `scrape_protocols`, and the parser chosen
//! from a response's `Content-Type` (with `fallback_scrape_protocol`).
//!
//! Only the Prometheus text format is parsed so far, so the `Accept`
//! header offers the job's text protocols only (Prometheus' weights and
//! escaping parameter kept); a target offering nothing else answers with
//! what it would send Prometheus.

use ferrite_config::ScrapeProtocol;

use crate::append::BodyError;

/// The `Accept` header for `protocols` (Prometheus' `acceptHeader`): each
/// protocol's media type, the escaping scheme on the newer text formats,
/// falling weights, then `*/*`. Protocols Ferrite does not parse yet are
/// left out (their weights too, so the others keep Prometheus' weights).
pub fn accept_header(protocols: &[ScrapeProtocol], escaping: &str) -> String {
    let mut parts = Vec::new();
    let mut weight = 7;
    for &p in protocols {
        let header = match p {
            ScrapeProtocol::PrometheusText004 => Some("text/plain;version=0.0.4".to_string()),
            ScrapeProtocol::PrometheusText100 => {
                Some(format!("text/plain;version=1.0.0;escaping={escaping}"))
            }
            _ => None,
        };
        if let Some(header) = header {
            parts.push(format!("{header};q=0.{weight}"));
        }
        weight -= 1;
    }
    parts.push(format!("*/*;q=0.{weight}"));
    parts.join(",")
}

/// The parser for a body's `Content-Type` (Prometheus' `textparse.New`);
/// only the Prometheus text format is parsed so far, so only it is asked
/// for (see [`accept_header`]).
pub(crate) fn select_parser(
    content_type: &str,
    fallback: Option<&'static str>,
) -> Result<(), BodyError> {
    let media_type = match media_type(content_type) {
        Ok(mt) => mt,
        Err(why) => match fallback {
            Some(f) => f.to_owned(),
            None => return Err(BodyError::ContentType(why)),
        },
    };
    match media_type.as_str() {
        "text/plain" => Ok(()),
        other => Err(BodyError::ContentType(format!(
            "received Content-Type {} which Ferrite does not parse yet (only the Prometheus text format is)",
            ferrite_model::goquote::quote(other)
        ))),
    }
}

/// The media type of a `Content-Type` Prometheus would parse, or its
/// message when there is none.
fn media_type(content_type: &str) -> Result<String, String> {
    if content_type.is_empty() {
        return Err("non-compliant scrape target sending blank Content-Type and no fallback_scrape_protocol specified for target".into());
    }
    let mt = content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    let token = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|c| c.is_ascii_graphic() && !b"()<>@,;:\\\"/[]?=".contains(&c))
    };
    let well_formed = match mt.split_once('/') {
        Some((a, b)) => token(a) && token(b),
        None => false,
    };
    if !well_formed {
        return Err(format!(
            "cannot parse Content-Type {} and no fallback_scrape_protocol for target",
            ferrite_model::goquote::quote(content_type)
        ));
    }
    match mt.as_str() {
        "application/openmetrics-text" | "application/vnd.google.protobuf" | "text/plain" => {
            Ok(mt)
        }
        _ => Err(format!(
            "received unsupported Content-Type {} and no fallback_scrape_protocol specified for target",
            ferrite_model::goquote::quote(content_type)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_header_offers_text_protocols_with_prometheus_weights() {
        assert_eq!(
            accept_header(&ScrapeProtocol::DEFAULT, "allow-utf-8"),
            "text/plain;version=1.0.0;escaping=allow-utf-8;q=0.5,text/plain;version=0.0.4;q=0.4,*/*;q=0.3"
        );
    }
}
