//! Fetching a target's exposition: the request Prometheus sends (its
//! `Accept` header from the job's `scrape_protocols`, `Accept-Encoding`,
//! `X-Prometheus-Scrape-Timeout-Seconds`), the scrape timeout, a status
//! other than 200 as an error, a gzip body decoded, and `body_size_limit`
//! on the decoded size.
//!
//! The request goes through the job's [`ScrapeClient`]
//! ([`crate::client::JobClient`]): TLS (`https` targets), proxies,
//! redirects and HTTP/2 as its settings say, and its credentials and
//! `http_headers` added to each request; a failure there (a credentials
//! file that does not read) fails the scrape as `Get "<url>": <reason>`,
//! as in Prometheus.

use std::io::Read;
use std::time::Duration;

use crate::client::ScrapeClient;

/// `User-Agent` of scrape requests.
pub const USER_AGENT: &str = concat!("Ferrite/", env!("CARGO_PKG_VERSION"));

/// Why a scrape got no body (the message a target's `lastError` shows).
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// The request failed (connection, timeout, protocol).
    #[error("Get {}: {reason}", ferrite_model::goquote::quote(.url))]
    Request {
        /// The scrape URL.
        url: String,
        /// Why, with its causes.
        reason: String,
    },
    /// The target answered with another status than 200.
    #[error("server returned HTTP status {0}")]
    Status(String),
    /// The (decoded) body is larger than `body_size_limit`.
    #[error("body size limit exceeded")]
    BodySizeLimit,
    /// A gzip body that does not decode.
    #[error("{0}")]
    Gzip(String),
    /// Not fetched: the pool fails its scrapes (`target_limit`).
    #[error("{0}")]
    Forced(String),
}

/// A scraped body and its `Content-Type`.
#[derive(Debug)]
pub struct Fetched {
    /// The decoded body.
    pub body: Vec<u8>,
    /// The response's `Content-Type` ("" if none).
    pub content_type: String,
}

/// Fetches `url` within `timeout` through the job's client (its
/// credentials and headers added after the scrape's own headers, as
/// Prometheus' round trippers add them).
pub async fn fetch<C: ScrapeClient + ?Sized>(
    client: &C,
    url: &str,
    accept: &str,
    compression: bool,
    timeout: Duration,
    body_size_limit: u64,
) -> Result<Fetched, FetchError> {
    let failed = |reason: String| FetchError::Request {
        url: url.to_string(),
        reason,
    };
    let request_error = |e: reqwest::Error| failed(error_chain(&e));
    let request = client
        .http()
        .map_err(failed)?
        .get(url)
        .header("Accept", accept)
        .header(
            "Accept-Encoding",
            if compression { "gzip" } else { "identity" },
        )
        .header("User-Agent", USER_AGENT)
        .header(
            "X-Prometheus-Scrape-Timeout-Seconds",
            ferrite_model::gofloat::format_f(timeout.as_secs_f64()),
        )
        .timeout(timeout);
    let response = client
        .prepare(request, timeout)
        .await
        .map_err(failed)?
        .send()
        .await
        .map_err(request_error)?;
    let status = response.status();
    if status != reqwest::StatusCode::OK {
        let text = status.canonical_reason().unwrap_or("");
        return Err(FetchError::Status(
            format!("{} {text}", status.as_u16()).trim_end().to_string(),
        ));
    }
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    };
    let content_type = header("Content-Type");
    let gzipped = header("Content-Encoding") == "gzip";
    let limit = if body_size_limit == 0 {
        u64::MAX
    } else {
        body_size_limit
    };
    // A compressed body is bounded too (gzip adds at most a little to
    // incompressible data), so a hostile target cannot fill memory.
    let raw_limit = if gzipped {
        limit.saturating_add(1 << 20)
    } else {
        limit
    };
    let raw = read_body(response, raw_limit)
        .await
        .map_err(request_error)?;
    let body = match (gzipped, raw) {
        (_, None) => return Err(FetchError::BodySizeLimit),
        (false, Some(raw)) => raw,
        (true, Some(raw)) => gunzip(&raw, limit)?,
    };
    if body.len() as u64 >= limit {
        return Err(FetchError::BodySizeLimit);
    }
    Ok(Fetched { body, content_type })
}

/// The body, or `None` once it reaches `limit` bytes.
async fn read_body(
    mut response: reqwest::Response,
    limit: u64,
) -> Result<Option<Vec<u8>>, reqwest::Error> {
    // Sized by Content-Length where given (within the limit and 16 MiB).
    let expected = response
        .content_length()
        .unwrap_or(0)
        .min(limit)
        .min(16 << 20);
    let mut body = Vec::with_capacity(expected as usize);
    while let Some(chunk) = response.chunk().await? {
        body.extend_from_slice(&chunk);
        if body.len() as u64 >= limit {
            return Ok(None);
        }
    }
    Ok(Some(body))
}

/// Decodes a gzip body, reading at most `limit` bytes of it.
fn gunzip(raw: &[u8], limit: u64) -> Result<Vec<u8>, FetchError> {
    if let Some(body) = inflate_whole(raw, limit) {
        return Ok(body);
    }
    // The streaming decoder, for what `inflate_whole` leaves: bodies over
    // the limit, and bad ones (its errors are the messages shown).
    let mut out = Vec::with_capacity(raw.len() * 4);
    flate2::read::GzDecoder::new(raw)
        .take(limit)
        .read_to_end(&mut out)
        .map_err(|e| FetchError::Gzip(e.to_string()))?;
    Ok(out)
}

thread_local! {
    /// The whole-body decoder of the thread (it keeps its tables).
    static DECOMPRESSOR: std::cell::RefCell<Option<libdeflater::Decompressor>> =
        const { std::cell::RefCell::new(None) };
}

/// A one-member gzip body decoded at once, several times faster than the
/// streaming decoder, into a buffer of the size its trailer gives (the
/// trailer's size and checksum are checked). `None` when the body is not
/// that (trailing data, a size that is wrong, over `limit`, a bad stream):
/// the streaming decoder then reads it.
fn inflate_whole(raw: &[u8], limit: u64) -> Option<Vec<u8>> {
    let trailer = raw.get(raw.len().checked_sub(4)?..)?;
    let size = u32::from_le_bytes(trailer.try_into().ok()?);
    if u64::from(size) >= limit {
        return None;
    }
    let mut out = vec![0u8; size as usize];
    let n = DECOMPRESSOR.with(|d| {
        let mut d = d.borrow_mut();
        d.get_or_insert_with(libdeflater::Decompressor::new)
            .gzip_decompress(raw, &mut out)
            .ok()
    })?;
    (n == out.len()).then_some(out)
}

/// An error with its causes, `: `-separated.
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let s_text = s.to_string();
        if !text.contains(&s_text) {
            text.push_str(": ");
            text.push_str(&s_text);
        }
        source = s.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    fn gzip(body: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(body).expect("write");
        e.finish().expect("finish")
    }

    /// The streaming decoder alone, as a reference.
    fn streamed(raw: &[u8], limit: u64) -> Result<Vec<u8>, String> {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(raw)
            .take(limit)
            .read_to_end(&mut out)
            .map(|_| out)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn gzip_bodies_decode_as_the_streaming_decoder_reads_them() {
        let body: Vec<u8> = (0..50_000u32)
            .flat_map(|i| format!("m{{i=\"{}\"}} {i}\n", i % 97).into_bytes())
            .collect();
        let raw = gzip(&body);
        assert!(inflate_whole(&raw, u64::MAX).is_some(), "the fast path");
        assert_eq!(gunzip(&raw, u64::MAX).ok(), Some(body.clone()));
        assert_eq!(gunzip(&gzip(b""), u64::MAX).ok(), Some(Vec::new()));

        // Over the limit: the streaming decoder stops at it.
        assert!(inflate_whole(&raw, 1000).is_none());
        assert_eq!(gunzip(&raw, 1000).ok().map(|b| b.len()), Some(1000));

        // Two members: left to the streaming decoder.
        let mut two = raw.clone();
        two.extend(gzip(b"more\n"));
        assert!(inflate_whole(&two, u64::MAX).is_none());
        assert_eq!(gunzip(&two, u64::MAX).ok(), streamed(&two, u64::MAX).ok());

        // A trailer whose size or checksum is wrong, a cut stream, junk:
        // the streaming decoder's verdict.
        let n = raw.len();
        for bad in [
            {
                let mut b = raw.clone();
                b[n - 1] ^= 1;
                b
            },
            {
                let mut b = raw.clone();
                b[n - 8] ^= 1;
                b
            },
            raw[..n / 2].to_vec(),
            b"not gzip at all".to_vec(),
            Vec::new(),
        ] {
            assert!(inflate_whole(&bad, u64::MAX).is_none());
            assert_eq!(
                gunzip(&bad, u64::MAX).map_err(|e| e.to_string()).is_err(),
                streamed(&bad, u64::MAX).is_err()
            );
        }
    }
}
