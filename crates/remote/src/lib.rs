//! Prometheus remote write 1.0 and 2.0 requests, as the receiver of
//! Prometheus v3.16.0 (`storage/remote/write_handler.go` on top of
//! client_golang's `exp/api/remote` handler) understands them.
//!
//! The HTTP server hands this crate the request's `Content-Type` and
//! `Content-Encoding` headers and body; [`decode_request`] answers with
//! either a [`RequestError`] (the whole request refused: status 415 or 400
//! and the message Prometheus sends) or a [`WriteRequest`]: the series to
//! append, each with a sorted, validated label set, plus the per-series
//! problems Prometheus reports. [`WriteRequest::verdict`] says what to do
//! with those problems (1.0 and 2.0 differ), and [`response`] what the
//! answer must carry.
//!
//! Steps, in Prometheus' order (which decides which error wins):
//!
//! 1. `Content-Encoding` must be absent or `snappy` (else 415). The body is
//!    *always* snappy block format — an absent header does not mean
//!    uncompressed. The decoded length (from the block header) is checked
//!    against [`MAX_DECODED_SIZE`] before anything is allocated (400).
//! 2. `Content-Type` (absent = `application/x-protobuf`) picks the message:
//!    no `proto=` parameter means 1.0 (see [`MessageType::from_content_type`]);
//!    unknown or not accepted messages are 415.
//! 3. The protobuf is decoded ([`proto`]; 400 on failure) and converted
//!    ([`decode`]): label validation, duplicate names, empty values dropped.
//!    Decoding works within a memory budget proportional to the body
//!    ([`cost`]; 400 when a body would take more), checked before prost
//!    allocates anything.
//!
//! Native histogram samples (integer or float, exponential or custom
//! buckets) come with their series ([`histogram`]): what the receiver does
//! to them before appending (reserved schemas reduced to 8) is
//! [`HistogramValue::reduce_reserved_schema`]; the head validates them.

pub mod cost;
pub mod decode;
pub mod histogram;
pub mod proto;
pub mod read;
pub mod response;
pub mod text;
pub mod view;

pub use decode::{
    decode_message, decode_request, decode_v1, decode_v2, decompress, decompress_into, read_body,
    Exemplar, MetadataRef, MetricMetadata, MetricType, Sample, Series, SeriesError,
    ValidationScheme, Verdict, WriteRequest,
};
pub use histogram::{HistogramSample, HistogramValue};
pub use response::{WriteStats, SUCCESS_STATUS};
pub use view::{
    utf8_labels, DecodedSeries, HistogramArena, HistogramBuf, HistogramKind, HistogramMessage,
    SeriesView, V1View,
};

use std::fmt;

/// Prometheus' limit on a decoded (decompressed) body: 32 MiB
/// (client_golang `exp/api/remote`, `maxDecodedSize`).
pub const MAX_DECODED_SIZE: usize = 32 * 1024 * 1024;

/// The only media type remote write uses.
pub const PROTOBUF_MEDIA_TYPE: &str = "application/x-protobuf";

/// The only `Content-Encoding` remote write uses (snappy *block* format).
pub const SNAPPY_ENCODING: &str = "snappy";

/// Which protobuf message a request carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MessageType {
    /// Remote write 1.0: `prometheus.WriteRequest`.
    V1,
    /// Remote write 2.0: `io.prometheus.write.v2.Request`.
    V2,
}

impl MessageType {
    /// The fully qualified message name, as in `proto=...`.
    pub fn proto_name(self) -> &'static str {
        match self {
            MessageType::V1 => "prometheus.WriteRequest",
            MessageType::V2 => "io.prometheus.write.v2.Request",
        }
    }

    /// The canonical `Content-Type` a sender uses for this message.
    pub fn content_type(self) -> &'static str {
        match self {
            MessageType::V1 => "application/x-protobuf",
            MessageType::V2 => "application/x-protobuf;proto=io.prometheus.write.v2.Request",
        }
    }

    /// Parses a `Content-Type` the way Prometheus does (client_golang's
    /// `ParseProtoMsg`), quirks included so that Ferrite accepts and refuses
    /// the same headers: the whole value is trimmed, then split on `;`
    /// without trimming the parts, so `application/x-protobuf; proto=...`
    /// (with a space) has a parameter named ` proto` and is read as 1.0.
    /// Every parameter must be exactly one `key=value`; the first `proto`
    /// parameter decides. An absent header should be passed as `None` and
    /// means `application/x-protobuf`, i.e. 1.0.
    pub fn from_content_type(content_type: Option<&str>) -> Result<MessageType, RequestError> {
        let ct = content_type.unwrap_or(PROTOBUF_MEDIA_TYPE).trim();
        // Go's Header.Get gives "" for an absent header, which the handler
        // replaces by the default; an empty (or blank) value is the same.
        let ct = if content_type.is_some_and(str::is_empty) {
            PROTOBUF_MEDIA_TYPE
        } else {
            ct
        };
        let mut parts = ct.split(';');
        if parts.next() != Some(PROTOBUF_MEDIA_TYPE) {
            return Err(RequestError::UnsupportedMediaType(ct.to_owned()));
        }
        for p in parts {
            let mut kv = p.split('=');
            let (Some(k), Some(v), None) = (kv.next(), kv.next(), kv.next()) else {
                return Err(RequestError::MalformedParameter {
                    param: p.to_owned(),
                    content_type: ct.to_owned(),
                });
            };
            if k == "proto" {
                return match v {
                    "prometheus.WriteRequest" => Ok(MessageType::V1),
                    "io.prometheus.write.v2.Request" => Ok(MessageType::V2),
                    _ => Err(RequestError::UnknownMessage {
                        content_type: ct.to_owned(),
                        proto: v.to_owned(),
                    }),
                };
            }
        }
        Ok(MessageType::V1)
    }
}

impl fmt::Display for MessageType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.proto_name())
    }
}

/// Which messages the receiver accepts (Prometheus'
/// `--web.remote-write-receiver.accepted-protobuf-messages`; both by default).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Accepted {
    pub v1: bool,
    pub v2: bool,
}

impl Default for Accepted {
    fn default() -> Self {
        Accepted { v1: true, v2: true }
    }
}

impl Accepted {
    pub fn contains(self, m: MessageType) -> bool {
        match m {
            MessageType::V1 => self.v1,
            MessageType::V2 => self.v2,
        }
    }

    /// Prometheus' list form, e.g. `prometheus.WriteRequest, io.prometheus.write.v2.Request`.
    fn list(self) -> String {
        let mut v = Vec::new();
        if self.v1 {
            v.push(MessageType::V1.proto_name());
        }
        if self.v2 {
            v.push(MessageType::V2.proto_name());
        }
        v.join(", ")
    }
}

/// How to decode requests. The defaults are Prometheus v3.16.0's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodeOptions {
    /// Largest decompressed body accepted, in bytes.
    pub max_decoded_size: usize,
    /// Name validation. Prometheus' receiver always validates as UTF-8
    /// (whatever the global scheme); legacy is offered for stricter setups.
    pub validation: ValidationScheme,
    pub accepted: Accepted,
    /// Most memory decoding may take per byte of decompressed body (and
    /// [`cost::MIN_BUDGET`] whatever the body's size): the structs prost
    /// makes, estimated before decoding, and for 2.0 the text its symbol
    /// references resolve to. See [`cost`].
    pub memory_per_body_byte: usize,
}

impl Default for DecodeOptions {
    fn default() -> Self {
        DecodeOptions {
            max_decoded_size: MAX_DECODED_SIZE,
            validation: ValidationScheme::Utf8,
            accepted: Accepted::default(),
            memory_per_body_byte: cost::DEFAULT_BYTES_PER_BODY_BYTE,
        }
    }
}

/// A whole request refused. `Display` is the message Prometheus answers
/// with (except for [`RequestError::Protobuf`], whose text comes from prost
/// rather than gogo-protobuf); [`RequestError::status`] the status code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    #[error(
        "{0} encoding (compression) is not accepted by this server; only snappy is acceptable"
    )]
    UnsupportedEncoding(String),
    #[error("expected application/x-protobuf as the first (media) part, got {0} content-type")]
    UnsupportedMediaType(String),
    #[error("as per https://www.rfc-editor.org/rfc/rfc9110#parameter expected parameters to be key-values, got {param} in {content_type} content-type")]
    MalformedParameter { param: String, content_type: String },
    #[error("got {content_type} content type; unknown type for remote write protobuf message {proto}, supported: prometheus.WriteRequest, io.prometheus.write.v2.Request")]
    UnknownMessage { content_type: String, proto: String },
    #[error("{message} protobuf message is not accepted by this server; only accepts {accepted}")]
    NotAccepted {
        message: MessageType,
        accepted: String,
    },
    /// Not snappy block format (the text of the S2 decoder Prometheus uses).
    #[error("s2: corrupt input")]
    Snappy,
    /// The block header announces more than the limit (checked before
    /// decompressing).
    #[error("decoded size exceeds the {limit} bytes limit")]
    TooLarge { size: u64, limit: usize },
    /// Decoding the body would take more memory than its budget allows
    /// (Ferrite's own limit: see [`cost`]).
    #[error(transparent)]
    OverBudget(#[from] cost::OverBudget),
    /// The decompressed body is not the announced message. The text is
    /// prost's (Prometheus' comes from gogo-protobuf).
    #[error("{reason}")]
    Protobuf {
        message: MessageType,
        reason: String,
    },
}

impl RequestError {
    /// The HTTP status Prometheus answers with: 415 for what the receiver
    /// does not speak, 400 for bodies it cannot read.
    pub fn status(&self) -> u16 {
        match self {
            RequestError::UnsupportedEncoding(_)
            | RequestError::UnsupportedMediaType(_)
            | RequestError::MalformedParameter { .. }
            | RequestError::UnknownMessage { .. }
            | RequestError::NotAccepted { .. } => 415,
            RequestError::Snappy
            | RequestError::TooLarge { .. }
            | RequestError::OverBudget(_)
            | RequestError::Protobuf { .. } => 400,
        }
    }

    pub(crate) fn not_accepted(message: MessageType, accepted: Accepted) -> RequestError {
        RequestError::NotAccepted {
            message,
            accepted: accepted.list(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_types() {
        let ok = [
            (None, MessageType::V1),
            (Some(""), MessageType::V1),
            (Some("application/x-protobuf"), MessageType::V1),
            (Some("  application/x-protobuf  "), MessageType::V1),
            (
                Some("application/x-protobuf;proto=prometheus.WriteRequest"),
                MessageType::V1,
            ),
            (
                Some("application/x-protobuf;proto=io.prometheus.write.v2.Request"),
                MessageType::V2,
            ),
            // A space before the parameter name: not "proto", so 1.0.
            (
                Some("application/x-protobuf; proto=io.prometheus.write.v2.Request"),
                MessageType::V1,
            ),
            (
                Some("application/x-protobuf;charset=utf-8;proto=io.prometheus.write.v2.Request"),
                MessageType::V2,
            ),
        ];
        for (ct, want) in ok {
            assert_eq!(MessageType::from_content_type(ct), Ok(want), "{ct:?}");
        }
        let bad = [
            ("application/json", "expected application/x-protobuf as the first (media) part, got application/json content-type"),
            ("application/x-protobuf ;proto=x", "expected application/x-protobuf as the first (media) part, got application/x-protobuf ;proto=x content-type"),
            ("application/x-protobuf;proto", "as per https://www.rfc-editor.org/rfc/rfc9110#parameter expected parameters to be key-values, got proto in application/x-protobuf;proto content-type"),
            ("application/x-protobuf;a=b=c", "as per https://www.rfc-editor.org/rfc/rfc9110#parameter expected parameters to be key-values, got a=b=c in application/x-protobuf;a=b=c content-type"),
            ("application/x-protobuf;proto=io.prometheus.write.v3.Request", "got application/x-protobuf;proto=io.prometheus.write.v3.Request content type; unknown type for remote write protobuf message io.prometheus.write.v3.Request, supported: prometheus.WriteRequest, io.prometheus.write.v2.Request"),
        ];
        for (ct, msg) in bad {
            let e = MessageType::from_content_type(Some(ct)).unwrap_err();
            assert_eq!(e.to_string(), msg);
            assert_eq!(e.status(), 415);
        }
    }

    #[test]
    fn not_accepted_message() {
        let e = RequestError::not_accepted(
            MessageType::V2,
            Accepted {
                v1: true,
                v2: false,
            },
        );
        assert_eq!(
            e.to_string(),
            "io.prometheus.write.v2.Request protobuf message is not accepted by this server; only accepts prometheus.WriteRequest"
        );
        assert_eq!(e.status(), 415);
    }
}
