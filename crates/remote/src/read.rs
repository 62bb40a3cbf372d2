//! Remote read (`POST /api/v1/read`), as Prometheus v3.9.1 serves it
//! (`storage/remote/read_handler.go`, `codec.go`, `chunked.go`): the
//! request's decoding, the response type's negotiation, and the wire form of
//! both responses. Selecting the series is the server's part.
//!
//! - The request body is a snappy (block) compressed `prometheus.ReadRequest`,
//!   at most [`MAX_READ_REQUEST`] bytes compressed and
//!   [`crate::MAX_DECODED_SIZE`] decompressed, decoded within a memory
//!   budget proportional to its size ([`crate::cost`]). Ferrite's own
//!   limits (Prometheus has none): at most [`MAX_READ_MATCHERS`] matchers
//!   and [`MAX_READ_REGEX_BYTES`] bytes of regular expressions in all, as
//!   every matcher costs a selection and every regular expression
//!   kilobytes to compile (and its pattern's length a hundredfold while
//!   compiling). Real clients send one query of a selector's few matchers.
//! - `SAMPLES`: one snappy compressed `prometheus.ReadResponse`.
//! - `STREAMED_XOR_CHUNKS`: frames of one `prometheus.ChunkedReadResponse`
//!   each (one series, or part of one), every frame the message's length
//!   as a uvarint, its CRC32 (Castagnoli) as 4 big-endian bytes, then the
//!   message.

use prost::Message;

use crate::cost::{self, decoded_size, Budget, OverBudget};
use crate::decode::max_snappy_expansion;
use crate::proto::read::{ChunkedReadResponse, MatchType, ReadRequest, ReadResponse, ResponseType};

/// Prometheus' limit on a read request's compressed body (`decodeReadLimit`).
pub const MAX_READ_REQUEST: usize = 32 * 1024 * 1024;

/// Most matchers a read request may hold, its queries' together.
pub const MAX_READ_MATCHERS: usize = 1_000;

/// Most bytes the patterns of a read request's `=~` and `!~` matchers may
/// take together. (A single pattern much over 300 KiB exceeds the regex
/// engine's compiled size limit anyway.)
pub const MAX_READ_REGEX_BYTES: usize = 1 << 20;

/// `Content-Type` of a `SAMPLES` response (with `Content-Encoding: snappy`).
pub const SAMPLES_CONTENT_TYPE: &str = "application/x-protobuf";

/// `Content-Type` of a `STREAMED_XOR_CHUNKS` response.
pub const STREAMED_CONTENT_TYPE: &str =
    "application/x-streamed-protobuf; proto=prometheus.ChunkedReadResponse";

/// Why a read request was refused (all are 400s, the text is the body).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ReadRequestError {
    #[error("snappy: {0}")]
    Snappy(String),
    #[error("decoding the read request: {0}")]
    Protobuf(String),
    #[error("server does not support any of the requested response types: {0:?}; supported: [SAMPLES STREAMED_XOR_CHUNKS]")]
    NoResponseType(Vec<i32>),
    #[error(transparent)]
    OverBudget(#[from] OverBudget),
    #[error("the read request has {0} matchers, more than the {MAX_READ_MATCHERS} accepted")]
    TooManyMatchers(usize),
    #[error("the read request's regular expressions take {0} bytes, more than the {MAX_READ_REGEX_BYTES} accepted")]
    RegexesTooLarge(usize),
}

/// Decodes a read request body (snappy block, then protobuf) and checks
/// it against the limits (see the module's documentation).
pub fn decode_read_request(body: &[u8]) -> Result<ReadRequest, ReadRequestError> {
    // The block header says how much the body decodes to: refuse absurd
    // sizes before allocating them (an 8-byte body can claim 2 GiB).
    let len =
        snap::raw::decompress_len(body).map_err(|e| ReadRequestError::Snappy(e.to_string()))?;
    if len > crate::MAX_DECODED_SIZE {
        return Err(ReadRequestError::Snappy(format!(
            "decoded length {len} is over the limit of {} bytes",
            crate::MAX_DECODED_SIZE
        )));
    }
    if len as u64 > max_snappy_expansion(body.len()) {
        return Err(ReadRequestError::Snappy(format!(
            "decoded length {len} is more than a body of {} bytes can hold",
            body.len()
        )));
    }
    let raw = snap::raw::Decoder::new()
        .decompress_vec(body)
        .map_err(|e| ReadRequestError::Snappy(e.to_string()))?;
    Budget::for_body(raw.len(), cost::DEFAULT_BYTES_PER_BODY_BYTE)
        .charge(decoded_size(&raw, &cost::READ_REQUEST))?;
    let req = ReadRequest::decode(raw.as_slice())
        .map_err(|e| ReadRequestError::Protobuf(e.to_string()))?;
    check_limits(&req)?;
    Ok(req)
}

/// The request's matchers and regular expressions against
/// [`MAX_READ_MATCHERS`] and [`MAX_READ_REGEX_BYTES`].
pub fn check_limits(req: &ReadRequest) -> Result<(), ReadRequestError> {
    let (mut matchers, mut regex_bytes) = (0usize, 0usize);
    for m in req.queries.iter().flat_map(|q| &q.matchers) {
        matchers += 1;
        if matches!(
            MatchType::try_from(m.r#type),
            Ok(MatchType::Re | MatchType::Nre)
        ) {
            regex_bytes = regex_bytes.saturating_add(m.value.len());
        }
    }
    if matchers > MAX_READ_MATCHERS {
        return Err(ReadRequestError::TooManyMatchers(matchers));
    }
    if regex_bytes > MAX_READ_REGEX_BYTES {
        return Err(ReadRequestError::RegexesTooLarge(regex_bytes));
    }
    Ok(())
}

/// The first accepted response type this server has (none listed:
/// `SAMPLES`), as Prometheus' `NegotiateResponseType`.
pub fn negotiate(accepted: &[i32]) -> Result<ResponseType, ReadRequestError> {
    if accepted.is_empty() {
        return Ok(ResponseType::Samples);
    }
    accepted
        .iter()
        .find_map(|&t| ResponseType::try_from(t).ok())
        .ok_or_else(|| ReadRequestError::NoResponseType(accepted.to_vec()))
}

/// The body of a `SAMPLES` response: the response, snappy compressed.
pub fn encode_samples_response(resp: &ReadResponse) -> Vec<u8> {
    let raw = resp.encode_to_vec();
    // Compressing into a Vec cannot fail but for absurd sizes (> 4 GiB).
    snap::raw::Encoder::new()
        .compress_vec(&raw)
        .unwrap_or_default()
}

/// Appends one frame of a `STREAMED_XOR_CHUNKS` response to `out`.
pub fn put_frame(out: &mut Vec<u8>, msg: &ChunkedReadResponse) {
    let bytes = msg.encode_to_vec();
    let mut n = bytes.len() as u64;
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
    out.extend_from_slice(&crc32c::crc32c(&bytes).to_be_bytes());
    out.extend_from_slice(&bytes);
}

/// Splits a `STREAMED_XOR_CHUNKS` body back into its messages, checking
/// lengths and checksums (for tests and tools; `None` if damaged).
pub fn read_frames(mut body: &[u8]) -> Option<Vec<ChunkedReadResponse>> {
    let mut out = Vec::new();
    while !body.is_empty() {
        let mut len = 0u64;
        let mut shift = 0;
        loop {
            let (&b, rest) = body.split_first()?;
            body = rest;
            if shift > 63 {
                return None;
            }
            len |= u64::from(b & 0x7f) << shift;
            shift += 7;
            if b < 0x80 {
                break;
            }
        }
        let end = usize::try_from(len).ok()?.checked_add(4)?;
        if body.len() < end {
            return None;
        }
        let crc = u32::from_be_bytes([body[0], body[1], body[2], body[3]]);
        let msg = &body[4..end];
        if crc32c::crc32c(msg) != crc {
            return None;
        }
        out.push(ChunkedReadResponse::decode(msg).ok()?);
        body = &body[end..];
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::read::{Chunk, ChunkedSeries, LabelMatcher, Query};
    use crate::proto::v1::Label;
    use proptest::prelude::*;

    fn request(accepted: Vec<i32>) -> ReadRequest {
        ReadRequest {
            queries: vec![Query {
                start_timestamp_ms: -5,
                end_timestamp_ms: 1_000,
                matchers: vec![LabelMatcher {
                    r#type: 2,
                    name: b"__name__".to_vec(),
                    value: b"up|x".to_vec(),
                }],
            }],
            accepted_response_types: accepted,
        }
    }

    #[test]
    fn negotiates_as_prometheus() {
        assert_eq!(negotiate(&[]), Ok(ResponseType::Samples));
        assert_eq!(negotiate(&[1, 0]), Ok(ResponseType::StreamedXorChunks));
        assert_eq!(negotiate(&[7, 0]), Ok(ResponseType::Samples));
        assert_eq!(
            negotiate(&[7]),
            Err(ReadRequestError::NoResponseType(vec![7]))
        );
    }

    #[test]
    fn bad_bodies_are_errors() {
        assert!(matches!(
            decode_read_request(b"junk"),
            Err(ReadRequestError::Snappy(_))
        ));
        // Found by the `remote_read` fuzz target: a header claiming ~2 GiB.
        let huge = [0xa3, 0xa9, 0xa9, 0xa9, 0x08, 0x00, 0xa9, 0xff];
        assert!(matches!(
            decode_read_request(&huge),
            Err(ReadRequestError::Snappy(_))
        ));
        let not_proto = snap::raw::Encoder::new().compress_vec(&[0xff; 9]).unwrap();
        assert!(matches!(
            decode_read_request(&not_proto),
            Err(ReadRequestError::Protobuf(_))
        ));
    }

    proptest! {
        #[test]
        fn request_round_trips(accepted in proptest::collection::vec(0i32..3, 0..3)) {
            let req = request(accepted);
            let body = snap::raw::Encoder::new().compress_vec(&req.encode_to_vec()).unwrap();
            prop_assert_eq!(decode_read_request(&body).unwrap(), req);
        }

        #[test]
        fn frames_round_trip_and_detect_damage(
            sizes in proptest::collection::vec(0usize..300, 1..5),
            flip in any::<prop::sample::Index>(),
        ) {
            let msgs: Vec<ChunkedReadResponse> = sizes
                .iter()
                .enumerate()
                .map(|(i, &n)| ChunkedReadResponse {
                    chunked_series: vec![ChunkedSeries {
                        labels: vec![Label { name: b"a".to_vec(), value: i.to_string().into_bytes() }],
                        chunks: vec![Chunk { min_time_ms: 1, max_time_ms: 2, r#type: 1, data: vec![7; n] }],
                    }],
                    query_index: i as i64,
                })
                .collect();
            let mut body = Vec::new();
            for m in &msgs {
                put_frame(&mut body, m);
            }
            prop_assert_eq!(read_frames(&body), Some(msgs.clone()));
            // Any damaged byte (length, checksum or message) is noticed.
            let i = flip.index(body.len());
            body[i] ^= 0x10;
            prop_assert_ne!(read_frames(&body), Some(msgs));
        }
    }
}
