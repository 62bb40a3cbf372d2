//! `POST /api/v1/write`: the remote write receiver, 1.0 and 2.0.
//!
//! Decoding and validation are `ferrite-remote`'s; this appends and answers
//! as Prometheus' receiver does: 204 when everything was written; for 1.0 an
//! append error (out of order, out of bounds, duplicate) rolls the whole
//! request back and answers 400 with the error; 2.0 writes what it can and
//! answers 400 listing what it could not, with the counts of what was
//! written in the `X-Prometheus-Remote-Write-*-Written` headers.
//!
//! The hot path ([`view`]): a 1.0 request of the common shape (series of
//! labels, float samples and native histograms) is read in place
//! ([`V1View`]) from a per-thread decompression buffer and appended by
//! label pairs, so a request costs a handful of allocations rather than
//! several per label and histogram. Every other request takes the general
//! decoder, which answers identically.
//!
//! A body may take [`MAX_BODY_BYTES`] (413 beyond: Prometheus has no limit
//! of its own on the compressed body, only on the decompressed one, which
//! `ferrite-remote` checks); what decoding it may allocate is bounded by
//! `ferrite-remote`'s memory budget, and the hot path reserves no more
//! than [`MAX_RESERVED_SERIES`] series and [`MAX_RESERVED_SAMPLES`] samples
//! ahead (a body's counts come from the sender).

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use std::cell::RefCell;

use ferrite_remote::text::labels_to_string;
use ferrite_remote::{
    decode_message, read_body, DecodeOptions, HistogramArena, HistogramSample, HistogramValue,
    MessageType, Verdict, WriteRequest, WriteStats,
};
use ferrite_tsdb::{AppendError, Db};
use futures_util::StreamExt;
use tracing::warn;

use crate::AppState;

mod view;

pub use view::append_in_place;

/// Largest request body accepted before decompression.
pub const MAX_BODY_BYTES: usize = 32 * 1024 * 1024;

/// Most series the hot path reserves room for before reading them.
pub const MAX_RESERVED_SERIES: usize = 1 << 16;

/// Most samples the hot path reserves room for before reading them.
pub const MAX_RESERVED_SAMPLES: usize = 1 << 20;

pub async fn remote_write(
    State(s): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    if !s.opts.remote_write_receiver {
        return (
            StatusCode::NOT_FOUND,
            "remote write receiver needs to be enabled with --web.enable-remote-write-receiver\n",
        )
            .into_response();
    }
    // Read here rather than by the `Bytes` extractor, whose default limit
    // (2 MiB) would refuse bodies Prometheus accepts.
    let body = match body_within(body, MAX_BODY_BYTES).await {
        Ok(b) => b,
        Err(resp) => return resp,
    };
    let text = |name: HeaderName| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let (ct, ce) = (text(header::CONTENT_TYPE), text(header::CONTENT_ENCODING));
    let db = s.db.clone();
    let outcome = tokio::task::spawn_blocking(move || {
        RAW_BODY.with_borrow_mut(|raw| {
            let res = decode_and_append(&db, ct.as_deref(), ce.as_deref(), &body, raw);
            if raw.capacity() > KEEP_BUFFER_BYTES {
                *raw = Vec::new();
            }
            res
        })
    })
    .await;
    if s.db.head_compactable() {
        s.compact_now.notify_one();
    }
    match outcome {
        Ok(Ok(answer)) => answer.into_response(),
        Ok(Err((status, msg))) => (
            StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST),
            format!("{msg}\n"),
        )
            .into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, format!("{e}\n")).into_response(),
    }
}

/// The whole body, or the answer: 413 as soon as it is over `limit` bytes
/// (nothing more is read), 400 if reading it failed.
async fn body_within(body: Body, limit: usize) -> Result<Bytes, Response> {
    let mut chunks = body.into_data_stream();
    // Most bodies arrive in one chunk (always, behind the read-timeout
    // layer): kept as it is, not copied.
    let mut first: Option<Bytes> = None;
    let mut joined: Vec<u8> = Vec::new();
    let mut len = 0usize;
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.map_err(|e| {
            (
                StatusCode::BAD_REQUEST,
                format!("reading the request body: {e}\n"),
            )
                .into_response()
        })?;
        len = len.saturating_add(chunk.len());
        if len > limit {
            return Err((
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("request body is over the {limit} byte limit\n"),
            )
                .into_response());
        }
        if first.is_none() && joined.is_empty() {
            first = Some(chunk);
        } else {
            if let Some(f) = first.take() {
                joined.extend_from_slice(&f);
            }
            joined.extend_from_slice(&chunk);
        }
    }
    Ok(first.unwrap_or_else(|| Bytes::from(joined)))
}

thread_local! {
    /// Decompressed bodies, reused by the blocking threads that append.
    static RAW_BODY: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    /// The native histograms of a body read in place, likewise.
    static HISTOGRAMS: RefCell<HistogramArena> = RefCell::new(HistogramArena::new());
}

/// Larger decompression buffers are given back after their request.
const KEEP_BUFFER_BYTES: usize = 4 << 20;

/// Decodes a request body (headers' values given) and appends it: the
/// in-place path when the body allows, else the general decoder. `raw` is
/// the decompression buffer, reused across calls. `Err`: the request was
/// refused as a whole (status and message).
pub fn decode_and_append(
    db: &Db,
    content_type: Option<&str>,
    content_encoding: Option<&str>,
    body: &[u8],
    raw: &mut Vec<u8>,
) -> Result<Answer, (u16, String)> {
    let opts = DecodeOptions::default();
    let bad = |e: ferrite_remote::RequestError| (e.status(), e.to_string());
    let message = read_body(content_type, content_encoding, body, &opts, raw).map_err(bad)?;
    if message == MessageType::V1 {
        let in_place = HISTOGRAMS.with_borrow_mut(|arena| {
            let answer = view::append_in_place(db, raw, arena, &opts);
            if arena.capacity_bytes() > KEEP_BUFFER_BYTES {
                *arena = HistogramArena::new();
            }
            answer
        });
        if let Some(answer) = in_place {
            return Ok(answer);
        }
    }
    let req = decode_message(message, raw, &opts).map_err(bad)?;
    Ok(append(db, req))
}

fn refused_sample(e: &AppendError) -> bool {
    matches!(
        e,
        AppendError::OutOfOrder
            | AppendError::OutOfBounds
            | AppendError::TooOld
            | AppendError::DuplicateSample { .. }
    )
}

/// What a decoded request did, as the response to send.
pub struct Answer {
    status: StatusCode,
    message: Option<String>,
    /// 2.0 only.
    stats: Option<WriteStats>,
}

impl Answer {
    /// Everything was written: 204.
    fn written(stats: Option<WriteStats>) -> Self {
        Answer {
            status: StatusCode::NO_CONTENT,
            message: None,
            stats,
        }
    }

    /// A sample or histogram refused the request: 400 or 500 as
    /// [`SampleError::bad_request`] says.
    fn refused(e: &SampleError, stats: Option<WriteStats>) -> Self {
        Answer {
            status: if e.bad_request() {
                StatusCode::BAD_REQUEST
            } else {
                StatusCode::INTERNAL_SERVER_ERROR
            },
            message: Some(e.to_string()),
            stats,
        }
    }

    /// The commit failed: 500.
    fn failed(message: String, stats: Option<WriteStats>) -> Self {
        Answer {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            message: Some(message),
            stats,
        }
    }

    pub fn status(&self) -> StatusCode {
        self.status
    }

    pub fn message(&self) -> Option<&str> {
        self.message.as_deref()
    }
}

impl IntoResponse for Answer {
    fn into_response(self) -> Response {
        let mut resp = match self.message {
            Some(m) => (self.status, format!("{m}\n")).into_response(),
            None => self.status.into_response(),
        };
        if let Some(stats) = self.stats {
            for (k, v) in stats.headers() {
                if let Ok(v) = HeaderValue::from_str(&v) {
                    resp.headers_mut().insert(k, v);
                }
            }
        }
        resp
    }
}

/// Prometheus' receiver refuses samples more than this far ahead of its
/// clock (`maxAheadTime`).
pub const MAX_AHEAD_MS: i64 = 10 * 60 * 1000;

/// The newest timestamp a request arriving now may carry.
pub fn max_time_now() -> i64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    now.saturating_add(MAX_AHEAD_MS)
}

/// Why one sample or histogram of a request was not appended.
#[derive(Debug)]
pub enum SampleError {
    /// Its timestamp is more than [`MAX_AHEAD_MS`] ahead (Prometheus'
    /// `ErrOutOfBounds`, wrapped).
    TooFarInFuture,
    /// A histogram whose reserved schema could not be reduced.
    Histogram(ferrite_model::HistogramError),
    /// The head refused it.
    Append(AppendError),
}

impl std::fmt::Display for SampleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SampleError::TooFarInFuture => {
                f.write_str("out of bounds: timestamp is too far in the future")
            }
            SampleError::Histogram(e) => e.fmt(f),
            SampleError::Append(e) => e.fmt(f),
        }
    }
}

impl From<AppendError> for SampleError {
    fn from(e: AppendError) -> Self {
        SampleError::Append(e)
    }
}

impl SampleError {
    /// Prometheus' out-of-order family (out of order, out of bounds,
    /// duplicate), which its receiver logs.
    fn out_of_order(&self) -> bool {
        match self {
            SampleError::TooFarInFuture => true,
            SampleError::Histogram(_) => false,
            SampleError::Append(e) => {
                refused_sample(e)
                    || matches!(
                        e,
                        AppendError::DuplicateHistogram
                            | AppendError::DuplicateHistogramToFloat { .. }
                    )
            }
        }
    }

    /// A 400 (the sender's data is wrong: not retried) rather than a 500:
    /// the out-of-order family and invalid histograms, as in Prometheus.
    fn bad_request(&self) -> bool {
        self.out_of_order()
            || matches!(
                self,
                SampleError::Histogram(_) | SampleError::Append(AppendError::InvalidHistogram(_))
            )
    }
}

/// Appends one float sample as Prometheus' receiver does.
fn append_float(
    app: &mut ferrite_tsdb::HeadAppender<'_>,
    labels: &ferrite_model::Labels,
    t: i64,
    v: f64,
    max_time: i64,
) -> Result<(), SampleError> {
    if t > max_time {
        return Err(SampleError::TooFarInFuture);
    }
    app.append(labels, t, v)?;
    Ok(())
}

/// Appends one native histogram as Prometheus' receiver and head do: the
/// time limit, then a reserved schema reduced to 8, then the appender's
/// checks (validation, the head's bounds, the series' order).
fn append_histogram(
    app: &mut ferrite_tsdb::HeadAppender<'_>,
    labels: &ferrite_model::Labels,
    h: HistogramSample,
    max_time: i64,
) -> Result<(), SampleError> {
    if h.timestamp > max_time {
        return Err(SampleError::TooFarInFuture);
    }
    let mut value = h.value;
    value
        .reduce_reserved_schema()
        .map_err(SampleError::Histogram)?;
    match value {
        HistogramValue::Int(x) => app.append_histogram(labels, h.timestamp, x)?,
        HistogramValue::Float(x) => app.append_float_histogram(labels, h.timestamp, x)?,
    };
    Ok(())
}

fn log_refused(e: &SampleError, labels: &dyn std::fmt::Display, t: i64, histogram: bool) {
    if e.out_of_order() {
        let what = if histogram { "histogram" } else { "sample" };
        warn!(series = %labels, timestamp = t, error = %e, "{what} from remote write refused");
    } else if matches!(
        e,
        SampleError::Histogram(_) | SampleError::Append(AppendError::InvalidHistogram(_))
    ) {
        warn!(series = %labels, timestamp = t, error = %e, "invalid histogram from remote write");
    }
}

/// Appends a decoded request with Prometheus' all-or-nothing (1.0) or
/// partial (2.0) semantics: per series its float samples, then its native
/// histograms. 1.0: the first refused sample or histogram rolls the request
/// back (400 for the out-of-order family and invalid histograms, 500 for
/// anything else). 2.0: those 400 errors are listed and the rest is
/// written; anything else rolls back and answers 500.
pub fn append(db: &Db, req: WriteRequest) -> Answer {
    append_until(db, req, max_time_now())
}

/// [`append`] with the newest timestamp accepted given.
pub fn append_until(db: &Db, req: WriteRequest, max_time: i64) -> Answer {
    let v2 = req.message == Some(MessageType::V2);
    let verdict = req.verdict();
    let mut problems: Vec<String> = match verdict {
        Verdict::PartialWrite(msg) => vec![msg],
        Verdict::Accept => Vec::new(),
    };
    let mut app = db.appender();
    let mut stats = WriteStats::default();
    let fail = |app: ferrite_tsdb::HeadAppender<'_>, e: &SampleError| {
        let _ = app.rollback();
        Answer::refused(e, v2.then(WriteStats::default))
    };
    for series in req.series {
        let labels = &series.labels;
        for s in &series.samples {
            match append_float(&mut app, labels, s.timestamp, s.value, max_time) {
                Ok(()) => stats.samples += 1,
                Err(e) => {
                    log_refused(&e, labels, s.timestamp, false);
                    if !v2 || !e.bad_request() {
                        return fail(app, &e);
                    }
                    problems.push(format!("{e} for series {}", labels_to_string(labels)));
                }
            }
        }
        for h in series.histograms {
            let t = h.timestamp;
            match append_histogram(&mut app, labels, h, max_time) {
                Ok(()) => stats.histograms += 1,
                Err(e) => {
                    log_refused(&e, labels, t, true);
                    if !v2 || !e.bad_request() {
                        return fail(app, &e);
                    }
                    problems.push(format!("{e} for series {}", labels_to_string(labels)));
                }
            }
        }
    }
    if let Err(e) = app.commit() {
        return Answer::failed(e.to_string(), v2.then(WriteStats::default));
    }
    let stats = v2.then_some(WriteStats {
        samples: stats.samples,
        histograms: stats.histograms,
        exemplars: 0,
    });
    if problems.is_empty() {
        Answer::written(stats)
    } else {
        Answer {
            status: StatusCode::BAD_REQUEST,
            message: Some(problems.join("\n")),
            stats,
        }
    }
}
