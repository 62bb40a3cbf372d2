//! Fetching a target's exposition: the request Prometheus sends (its
//! `Accept` header from the job's `scrape_protocols`, `Accept-Encoding`,
//! `X-Prometheus-Scrape-Timeout-Seconds`), the scrape timeout, a status
//! other than 200 as an error, a gzip body decoded ([`Fetched::decode`],
//! on the thread that appends it, into a buffer that thread reuses;
//! libdeflate for a whole one-member body, the streaming decoder for
//! anything else), and `body_size_limit` on the decoded size.
//!
//! The request goes through the job's [`ScrapeClient`]
//! ([`crate::client::JobClient`]): TLS (`https` targets), proxies,
//! redirects and HTTP/2 as its settings say, and its credentials and
//! `http_headers` added to each request; a failure there (a credentials
//! file that does not read) fails the scrape as `Get "<url>": <reason>`,
//! as in Prometheus.

use std::cell::RefCell;
use std::io::Read;
use std::time::Duration;

use ferrite_model::spare::{with_local, Spares};
use reqwest::header::{HeaderName, HeaderValue, ACCEPT, ACCEPT_ENCODING};

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

/// A scraped body as received, and its `Content-Type`: decoded by
/// [`Fetched::decode`] where it is appended (a gzip body into a buffer
/// the appending thread reuses).
#[derive(Debug)]
pub struct Fetched {
    raw: Vec<u8>,
    gzipped: bool,
    /// `body_size_limit` (`u64::MAX`: none).
    limit: u64,
    /// The response's `Content-Type` ("" if none).
    pub content_type: String,
}

impl Fetched {
    /// Decodes a gzip body into `scratch` (a plain one stays where it
    /// is) and checks `body_size_limit`: a body of that many bytes or
    /// more is an error.
    pub fn decode(&self, scratch: &mut Vec<u8>) -> Result<(), FetchError> {
        if self.gzipped {
            gunzip(&self.raw, self.limit, scratch)?;
        }
        if self.body(scratch).len() as u64 >= self.limit {
            return Err(FetchError::BodySizeLimit);
        }
        Ok(())
    }

    /// About how many bytes the body holds decoded: a gzip body's
    /// trailer says (modulo 4 GiB; a bad one says anything, so this is
    /// only a hint).
    pub fn decoded_len_hint(&self) -> usize {
        match gzip_trailer_size(&self.raw) {
            Some(size) if self.gzipped => size,
            _ => self.raw.len(),
        }
    }

    /// The body's size as received.
    pub fn raw_len(&self) -> usize {
        self.raw.len()
    }

    /// The body [`Fetched::decode`] decoded (into `scratch` if gzipped).
    pub fn body<'a>(&'a self, scratch: &'a [u8]) -> &'a [u8] {
        if self.gzipped {
            scratch
        } else {
            &self.raw
        }
    }
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
    let request_error = |e: reqwest::Error| failed(request_reason(&e));
    // Names and fixed values as constants: nothing to parse or copy.
    let encoding = HeaderValue::from_static(if compression { "gzip" } else { "identity" });
    let request = client
        .http()
        .map_err(failed)?
        .get(url)
        .header(ACCEPT, accept)
        .header(ACCEPT_ENCODING, encoding)
        .header(
            reqwest::header::USER_AGENT,
            HeaderValue::from_static(USER_AGENT),
        )
        .header(
            HeaderName::from_static("x-prometheus-scrape-timeout-seconds"),
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
    let Some(raw) = read_body(response, raw_limit)
        .await
        .map_err(request_error)?
    else {
        return Err(FetchError::BodySizeLimit);
    };
    Ok(Fetched {
        raw,
        gzipped,
        limit,
        content_type,
    })
}

/// Body buffers a thread keeps for the next scrapes (see [`Fetched`]'s
/// `Drop`): a scrape's body is the largest allocation it makes, and one
/// per scrape made glibc's malloc consolidate its bins every time.
const KEPT_BODY_BUFFERS: usize = 2;
/// The largest body buffer kept.
const KEPT_BODY_BYTES: usize = 4 << 20;

thread_local! {
    static BODY_BUFFERS: RefCell<Spares<u8>> = const { RefCell::new(Spares::new()) };
}

impl Drop for Fetched {
    fn drop(&mut self) {
        let raw = std::mem::take(&mut self.raw);
        if raw.capacity() <= KEPT_BODY_BYTES {
            with_local(&BODY_BUFFERS, |b| b.keep(raw, KEPT_BODY_BUFFERS));
        }
    }
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
    let mut body = with_local(&BODY_BUFFERS, Spares::take)
        .flatten()
        .unwrap_or_default();
    body.reserve(expected as usize);
    while let Some(chunk) = response.chunk().await? {
        body.extend_from_slice(&chunk);
        if body.len() as u64 >= limit {
            return Ok(None);
        }
    }
    Ok(Some(body))
}

/// Decodes a gzip body into `out`, reading at most `limit` bytes of it.
fn gunzip(raw: &[u8], limit: u64, out: &mut Vec<u8>) -> Result<(), FetchError> {
    if inflate_whole(raw, limit, out) {
        return Ok(());
    }
    // The streaming decoder, for what `inflate_whole` leaves: bodies over
    // the limit, and bad ones (its errors are the messages shown).
    out.clear();
    flate2::read::GzDecoder::new(raw)
        .take(limit)
        .read_to_end(out)
        .map_err(|e| FetchError::Gzip(e.to_string()))?;
    Ok(())
}

thread_local! {
    /// The whole-body decoder of the thread (it keeps its tables).
    static DECOMPRESSOR: std::cell::RefCell<Option<libdeflater::Decompressor>> =
        const { std::cell::RefCell::new(None) };
}

/// A one-member gzip body decoded at once into `out`, several times
/// faster than the streaming decoder, sized by its trailer (whose size
/// and checksum are checked); `out`'s bytes are zeroed only where it
/// grows. False when the body is not that (trailing data, a size that is
/// wrong, over `limit`, a bad stream): the streaming decoder then reads
/// it.
fn inflate_whole(raw: &[u8], limit: u64, out: &mut Vec<u8>) -> bool {
    let Some(size) = gzip_trailer_size(raw) else {
        return false;
    };
    if size as u64 >= limit {
        return false;
    }
    if out.len() < size {
        out.resize(size, 0);
    }
    let decoded = DECOMPRESSOR.with(|d| {
        let mut d = d.borrow_mut();
        d.get_or_insert_with(libdeflater::Decompressor::new)
            .gzip_decompress(raw, &mut out[..size])
            .ok()
    });
    out.truncate(size);
    decoded == Some(size)
}

/// The decoded size a gzip body's trailer gives (its last four bytes,
/// modulo 4 GiB; not checked against anything).
fn gzip_trailer_size(raw: &[u8]) -> Option<usize> {
    let trailer = raw.get(raw.len().checked_sub(4)?..)?;
    Some(u32::from_le_bytes(<[u8; 4]>::try_from(trailer).ok()?) as usize)
}

/// Why a request failed, in Go's words where Ferrite knows them: a
/// connection refused by an IP address as Go's dialer words it (`dial tcp
/// 127.0.0.1:9: connect: connection refused`, what Prometheus shows and
/// logs for a target nothing listens on); else the error and its causes.
fn request_reason(e: &reqwest::Error) -> String {
    let refused = std::iter::successors(Some(e as &(dyn std::error::Error + 'static)), |e| {
        e.source()
    })
    .filter_map(|e| e.downcast_ref::<std::io::Error>())
    .any(|io| io.kind() == std::io::ErrorKind::ConnectionRefused);
    let ip_address = e.url().and_then(|u| {
        let host = u.host_str()?.trim_start_matches('[').trim_end_matches(']');
        let ip: std::net::IpAddr = host.parse().ok()?;
        Some(std::net::SocketAddr::new(ip, u.port_or_known_default()?))
    });
    match ip_address {
        Some(addr) if e.is_connect() && refused => {
            format!("dial tcp {addr}: connect: connection refused")
        }
        _ => error_chain(e),
    }
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

    fn decoded(raw: &[u8], limit: u64) -> Result<Vec<u8>, String> {
        let mut out = Vec::new();
        gunzip(raw, limit, &mut out)
            .map(|()| out)
            .map_err(|e| e.to_string())
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
        let mut out = Vec::new();
        assert!(inflate_whole(&raw, u64::MAX, &mut out), "the fast path");
        assert_eq!(decoded(&raw, u64::MAX), Ok(body.clone()));
        assert_eq!(decoded(&gzip(b""), u64::MAX), Ok(Vec::new()));
        // Into a buffer holding a longer body.
        let mut out = vec![7; body.len() * 2];
        assert!(gunzip(&gzip(b"short\n"), u64::MAX, &mut out).is_ok());
        assert_eq!(out, b"short\n");

        // Over the limit: the streaming decoder stops at it.
        assert!(!inflate_whole(&raw, 1000, &mut out));
        assert_eq!(decoded(&raw, 1000).map(|b| b.len()), Ok(1000));

        // Two members: left to the streaming decoder.
        let mut two = raw.clone();
        two.extend(gzip(b"more\n"));
        assert!(!inflate_whole(&two, u64::MAX, &mut out));
        assert_eq!(decoded(&two, u64::MAX).ok(), streamed(&two, u64::MAX).ok());

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
            assert!(!inflate_whole(&bad, u64::MAX, &mut out));
            assert_eq!(
                decoded(&bad, u64::MAX).is_err(),
                streamed(&bad, u64::MAX).is_err()
            );
        }
    }
}
