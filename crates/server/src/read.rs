//! `POST /api/v1/read`: Prometheus' remote read, both response types
//! (`ferrite-remote::read` has the wire formats). Prometheus servers with a
//! `remote_read` entry, and Thanos' sidecar, read Ferrite through it.
//!
//! - `STREAMED_XOR_CHUNKS` (what Prometheus' client asks for first): per
//!   series, its stored chunks (XOR, histogram, float histogram) overlapping the query's range, as they
//!   are (re-encoded only where chunks overlap or samples were deleted), in
//!   frames of about `--storage.remote.read-max-bytes-in-frame`, streamed
//!   as they are read.
//! - `SAMPLES`: every series with its samples (floats and native
//!   histograms) in the range, in one snappy message; more than
//!   `--storage.remote.read-sample-limit` samples is a 400.
//!
//! At most `--storage.remote.read-concurrent-limit` reads run at once (0: no
//! limit); the others wait. As in Prometheus, a request that cannot be
//! decoded is a 400, a matcher that cannot be built a 500. A request over
//! `ferrite-remote`'s limits (matchers, regular expressions, memory to
//! decode it; Prometheus has none) is a 400 too.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use ferrite_model::{Labels, MatchType, Matcher};
use ferrite_remote::histogram::{to_v1_float, to_v1_int};
use ferrite_remote::proto::read::{
    Chunk, ChunkEncoding, ChunkedReadResponse, ChunkedSeries, LabelMatcher, MatchType as PbMatch,
    QueryResult, ReadResponse, ResponseType,
};
use ferrite_remote::proto::v1;
use ferrite_remote::read::{
    decode_read_request, encode_samples_response, negotiate, put_frame, SAMPLES_CONTENT_TYPE,
    STREAMED_CONTENT_TYPE,
};
use ferrite_tsdb::sample::SampleRef;
use ferrite_tsdb::{Db, QuerySeries};
use prost::Message;
use tracing::warn;

use crate::AppState;

/// Remote read limits (`--storage.remote.read-*`), Prometheus' defaults.
#[derive(Clone, Debug)]
pub struct RemoteReadOptions {
    /// Most samples a `SAMPLES` response may hold (0: no limit).
    pub sample_limit: usize,
    /// Most reads at once (0: no limit).
    pub concurrent_limit: usize,
    /// About the largest frame of a streamed response.
    pub max_bytes_in_frame: usize,
}

impl Default for RemoteReadOptions {
    fn default() -> Self {
        RemoteReadOptions {
            sample_limit: 50_000_000,
            concurrent_limit: 10,
            max_bytes_in_frame: 1_048_576,
        }
    }
}

/// One query of the request: its range (inclusive) and matchers.
struct ReadQuery {
    start: i64,
    end: i64,
    matchers: Vec<Matcher>,
}

fn text(status: StatusCode, msg: impl Into<String>) -> Response {
    let mut msg = msg.into();
    msg.push('\n');
    (status, msg).into_response()
}

fn matcher(m: &LabelMatcher) -> Result<Matcher, String> {
    let kind = match PbMatch::try_from(m.r#type) {
        Ok(PbMatch::Eq) => MatchType::Equal,
        Ok(PbMatch::Neq) => MatchType::NotEqual,
        Ok(PbMatch::Re) => MatchType::Regex,
        Ok(PbMatch::Nre) => MatchType::NotRegex,
        Err(_) => return Err("invalid matcher type".into()),
    };
    let name = String::from_utf8_lossy(&m.name);
    let value = String::from_utf8_lossy(&m.value);
    Matcher::new(kind, &name, &value).map_err(|e| e.to_string())
}

pub async fn remote_read(State(s): State<Arc<AppState>>, body: Bytes) -> Response {
    // Held until the response is complete (for a streamed one, by the
    // task writing it).
    let slot = match &s.read_slots {
        Some(slots) => match slots.clone().acquire_owned().await {
            Ok(p) => Some(p),
            Err(e) => return text(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
        },
        None => None,
    };
    if body.len() > ferrite_remote::read::MAX_READ_REQUEST {
        return text(StatusCode::BAD_REQUEST, "read request body too large");
    }
    // Decoding a large request and compiling its regexes take a while:
    // done off the async threads, which keep answering other requests.
    let parsed = tokio::task::spawn_blocking(move || parse_request(&body))
        .await
        .unwrap_or_else(|e| Err((StatusCode::INTERNAL_SERVER_ERROR, e.to_string())));
    let (kind, queries) = match parsed {
        Ok(p) => p,
        Err((status, msg)) => return text(status, msg),
    };
    let db = s.db.clone();
    let opts = s.opts.remote_read.clone();
    match kind {
        ResponseType::Samples => {
            let built = tokio::task::spawn_blocking(move || samples_response(&db, &queries, &opts))
                .await
                .unwrap_or_else(|e| Err((StatusCode::INTERNAL_SERVER_ERROR, e.to_string())));
            drop(slot);
            match built {
                Ok(body) => (
                    [
                        (header::CONTENT_TYPE, SAMPLES_CONTENT_TYPE),
                        (header::CONTENT_ENCODING, "snappy"),
                    ],
                    body,
                )
                    .into_response(),
                Err((status, msg)) => text(status, msg),
            }
        }
        ResponseType::StreamedXorChunks => {
            let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(4);
            tokio::task::spawn_blocking(move || {
                let _slot = slot;
                if let Err(e) = stream_chunks(&db, &queries, &opts, &tx) {
                    warn!(error = %e, "remote read stopped");
                    // Ends the response in error: the client sees a cut stream.
                    let _ = tx.blocking_send(Err(std::io::Error::other(e)));
                }
            });
            let stream = futures_util::stream::unfold(rx, |mut rx| async move {
                rx.recv().await.map(|item| (item, rx))
            });
            (
                [(header::CONTENT_TYPE, STREAMED_CONTENT_TYPE)],
                Body::from_stream(stream),
            )
                .into_response()
        }
    }
}

/// The response type and queries of a request body: a 400 if it cannot be
/// decoded (or is over `ferrite-remote`'s limits), a 500 if a matcher
/// cannot be built, as Prometheus answers.
fn parse_request(body: &[u8]) -> Result<(ResponseType, Vec<ReadQuery>), (StatusCode, String)> {
    let bad = |e: ferrite_remote::read::ReadRequestError| (StatusCode::BAD_REQUEST, e.to_string());
    let req = decode_read_request(body).map_err(bad)?;
    let kind = negotiate(&req.accepted_response_types).map_err(bad)?;
    let mut queries = Vec::with_capacity(req.queries.len());
    for q in &req.queries {
        let matchers = q
            .matchers
            .iter()
            .map(matcher)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| (StatusCode::INTERNAL_SERVER_ERROR, e))?;
        queries.push(ReadQuery {
            start: q.start_timestamp_ms,
            end: q.end_timestamp_ms,
            matchers,
        });
    }
    Ok((kind, queries))
}

fn pb_labels(l: &Labels) -> Vec<v1::Label> {
    l.iter()
        .map(|l| v1::Label {
            name: l.name.as_bytes().to_vec(),
            value: l.value.as_bytes().to_vec(),
        })
        .collect()
}

fn select(db: &Db, q: &ReadQuery) -> Result<Vec<QuerySeries>, String> {
    // A query without matchers selects nothing in Prometheus (its postings
    // are the intersection of none); Ferrite's querier would select every
    // series.
    if q.matchers.is_empty() {
        return Ok(Vec::new());
    }
    db.querier(q.start, q.end)
        .select(&q.matchers)
        .map_err(|e| e.to_string())
}

fn samples_response(
    db: &Db,
    queries: &[ReadQuery],
    opts: &RemoteReadOptions,
) -> Result<Vec<u8>, (StatusCode, String)> {
    let internal = |e: String| (StatusCode::INTERNAL_SERVER_ERROR, e);
    let mut resp = ReadResponse {
        results: Vec::with_capacity(queries.len()),
    };
    let mut total = 0usize;
    for q in queries {
        let mut result = QueryResult::default();
        for s in select(db, q).map_err(internal)? {
            let (mut samples, mut histograms) = (Vec::new(), Vec::new());
            // Floats and histograms count alike against the limit, which
            // is checked as they are read (Prometheus' `ToQueryResult`).
            let mut over = false;
            s.for_each_value(|timestamp, v| {
                total += 1;
                if opts.sample_limit > 0 && total > opts.sample_limit {
                    over = true;
                }
                if over {
                    return;
                }
                match v {
                    SampleRef::Float(value) => samples.push(v1::Sample { value, timestamp }),
                    SampleRef::Histogram(h) => histograms.push(to_v1_int(timestamp, h)),
                    SampleRef::FloatHistogram(h) => histograms.push(to_v1_float(timestamp, h)),
                }
            })
            .map_err(|e| internal(e.to_string()))?;
            if over {
                return Err((
                    StatusCode::BAD_REQUEST,
                    format!("exceeded sample limit ({})", opts.sample_limit),
                ));
            }
            result.timeseries.push(v1::TimeSeries {
                labels: pb_labels(&s.labels),
                samples,
                histograms,
                ..Default::default()
            });
        }
        resp.results.push(result);
    }
    Ok(encode_samples_response(&resp))
}

/// The remote read protocol's number of a chunk encoding: Prometheus
/// sends a chunk's encoding byte as it is (`prompb.Chunk_Encoding(
/// chk.Chunk.Encoding())`), and v3.16's enum names every encoding its
/// storage has.
fn remote_chunk_encoding(e: ferrite_chunkenc::Encoding) -> ChunkEncoding {
    use ferrite_chunkenc::Encoding as E;
    match e {
        E::Xor => ChunkEncoding::Xor,
        E::Histogram => ChunkEncoding::Histogram,
        E::FloatHistogram => ChunkEncoding::FloatHistogram,
        E::Xor2 => ChunkEncoding::Xor2,
        E::HistogramSt => ChunkEncoding::HistogramSt,
        E::FloatHistogramSt => ChunkEncoding::FloatHistogramSt,
        E::None => ChunkEncoding::Unknown,
    }
}

/// Streams every query's series as frames: one series per frame, a
/// series' chunks split over frames of about `max_bytes_in_frame`.
fn stream_chunks(
    db: &Db,
    queries: &[ReadQuery],
    opts: &RemoteReadOptions,
    tx: &tokio::sync::mpsc::Sender<Result<Bytes, std::io::Error>>,
) -> Result<(), String> {
    let mut chunks: Vec<Chunk> = Vec::new();
    for (index, q) in queries.iter().enumerate() {
        for s in select(db, q)? {
            chunks.clear();
            s.for_each_chunk(|mint, maxt, encoding, bytes| {
                chunks.push(Chunk {
                    min_time_ms: mint,
                    max_time_ms: maxt,
                    r#type: remote_chunk_encoding(encoding) as i32,
                    data: bytes.to_vec(),
                })
            })
            .map_err(|e| e.to_string())?;
            let labels = pb_labels(&s.labels);
            let label_bytes: usize = labels.iter().map(Message::encoded_len).sum();
            let room = opts.max_bytes_in_frame as i64 - label_bytes as i64;
            let mut left = room;
            let mut frame: Vec<Chunk> = Vec::new();
            let mut pending = chunks.drain(..).peekable();
            while let Some(c) = pending.next() {
                left -= c.encoded_len() as i64;
                frame.push(c);
                if left > 0 && pending.peek().is_some() {
                    continue;
                }
                let msg = ChunkedReadResponse {
                    chunked_series: vec![ChunkedSeries {
                        labels: labels.clone(),
                        chunks: std::mem::take(&mut frame),
                    }],
                    query_index: index as i64,
                };
                let mut out = Vec::with_capacity(msg.encoded_len() + 16);
                put_frame(&mut out, &msg);
                if tx.blocking_send(Ok(Bytes::from(out))).is_err() {
                    return Ok(()); // the client went away
                }
                left = room;
            }
        }
    }
    Ok(())
}
