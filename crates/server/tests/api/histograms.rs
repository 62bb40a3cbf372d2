//! Native histograms through the server on loopback: remote write 1.0 and
//! 2.0 in (integer, float and custom-bucket histograms), the query API's
//! JSON out (the bytes Prometheus v3.16's codec writes for the same
//! samples: `web/api/v1/json_codec.go`, `util/jsonutil`), PromQL over the
//! stored histograms, remote read, `/api/v1/series`, and Prometheus'
//! answers to bad histograms.
//!
//! The histograms use schema 0 and custom bounds, whose bucket bounds are
//! exact (powers of two, or given): see `query.rs`' ignored test for
//! positive schemas.

use std::net::SocketAddr;
use std::time::{SystemTime, UNIX_EPOCH};

use ferrite_remote::proto::read::{LabelMatcher, Query, ReadRequest, ReadResponse};
use ferrite_remote::proto::{v1, v2};
use ferrite_server::{start, ServerOptions};
use prost::Message;

const V2_CT: &str = "application/x-protobuf;proto=io.prometheus.write.v2.Request";

fn options(dir: &std::path::Path) -> ServerOptions {
    ServerOptions::new(dir.to_owned(), "127.0.0.1:0".parse::<SocketAddr>().unwrap())
}

/// A whole second ten minutes ago: in the head, well before the future
/// limit.
fn t0() -> i64 {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    (now - 600_000) / 1000 * 1000
}

fn secs(t: i64) -> String {
    format!("{}", t / 1000)
}

fn label(n: &str, v: &str) -> v1::Label {
    v1::Label {
        name: n.as_bytes().to_vec(),
        value: v.as_bytes().to_vec(),
    }
}

fn span1(offset: i32, length: u32) -> v1::BucketSpan {
    v1::BucketSpan { offset, length }
}

/// Schema 0: one negative bucket [-1,-0.5), the zero bucket, positive
/// buckets (1,2] and (2,4]; counts times `k`.
fn int_histogram(t: i64, k: u64) -> v1::Histogram {
    v1::Histogram {
        count: Some(v1::Count::CountInt(5 * k)),
        sum: 10.5 * k as f64,
        schema: 0,
        zero_threshold: 0.001,
        zero_count: Some(v1::ZeroCount::ZeroCountInt(k)),
        negative_spans: vec![span1(0, 1)],
        negative_deltas: vec![k as i64],
        positive_spans: vec![span1(1, 2)],
        positive_deltas: vec![2 * k as i64, -(k as i64)],
        timestamp: t,
        ..Default::default()
    }
}

/// [`int_histogram`]'s JSON, as Prometheus renders it.
fn int_histogram_json(k: u64) -> String {
    format!(
        r#"{{"count":"{}","sum":"{}","buckets":[[1,"-1","-0.5","{k}"],[3,"-0.001","0.001","{k}"],[0,"1","2","{}"],[0,"2","4","{k}"]]}}"#,
        5 * k,
        10.5 * k as f64,
        2 * k
    )
}

fn v1_body(ts: Vec<v1::TimeSeries>) -> Vec<u8> {
    let req = v1::WriteRequest {
        timeseries: ts,
        metadata: Vec::new(),
    };
    snap::raw::Encoder::new()
        .compress_vec(&req.encode_to_vec())
        .unwrap()
}

fn v2_body(req: v2::Request) -> Vec<u8> {
    snap::raw::Encoder::new()
        .compress_vec(&req.encode_to_vec())
        .unwrap()
}

struct Answer {
    status: u16,
    body: String,
    written: Option<(String, String, String)>,
}

async fn write(addr: SocketAddr, content_type: &str, body: Vec<u8>) -> Answer {
    let resp = reqwest::Client::new()
        .post(format!("http://{addr}/api/v1/write"))
        .header("Content-Type", content_type)
        .header("Content-Encoding", "snappy")
        .body(body)
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let h = |n: &str| {
        resp.headers()
            .get(format!("X-Prometheus-Remote-Write-{n}-Written"))
            .map(|v| v.to_str().unwrap().to_owned())
    };
    let written = match (h("Samples"), h("Histograms"), h("Exemplars")) {
        (Some(a), Some(b), Some(c)) => Some((a, b, c)),
        _ => None,
    };
    Answer {
        status,
        body: resp.text().await.unwrap(),
        written,
    }
}

fn written(s: usize, h: usize, e: usize) -> Option<(String, String, String)> {
    Some((s.to_string(), h.to_string(), e.to_string()))
}

/// The `result` of a query's answer, as the server wrote it.
async fn result(addr: SocketAddr, path_and_query: &str) -> String {
    let text = reqwest::get(format!("http://{addr}{path_and_query}"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["status"], "success", "{text}");
    let start = text.find("\"result\":").unwrap() + "\"result\":".len();
    let end = text.find(",\"resultType\"").unwrap();
    text[start..end].to_owned()
}

fn query(q: &str, t: i64) -> String {
    format!("/api/v1/query?query={}&time={}", form(q), secs(t))
}

fn form(q: &str) -> String {
    form_urlencoded::byte_serialize(q.as_bytes()).collect()
}

/// A 2.0 series: labels, histograms, float samples.
type V2Series<'a> = (Vec<(&'a str, &'a str)>, Vec<v2::Histogram>, Vec<(i64, f64)>);

/// A 2.0 request of one series per `(labels, histograms, floats)`; symbol
/// 0 is "".
fn v2_request(series: Vec<V2Series<'_>>) -> v2::Request {
    let mut symbols: Vec<Vec<u8>> = vec![Vec::new()];
    let mut sym = |s: &str| -> u32 {
        if let Some(i) = symbols.iter().position(|x| x == s.as_bytes()) {
            return i as u32;
        }
        symbols.push(s.as_bytes().to_vec());
        (symbols.len() - 1) as u32
    };
    let timeseries = series
        .into_iter()
        .map(|(ls, hs, fs)| v2::TimeSeries {
            labels_refs: ls.iter().flat_map(|(n, v)| [sym(n), sym(v)]).collect(),
            samples: fs
                .into_iter()
                .map(|(timestamp, value)| v2::Sample {
                    value,
                    timestamp,
                    start_timestamp: 0,
                })
                .collect(),
            histograms: hs,
            ..Default::default()
        })
        .collect();
    v2::Request {
        symbols,
        timeseries,
    }
}

fn span2(offset: i32, length: u32) -> v2::BucketSpan {
    v2::BucketSpan { offset, length }
}

/// A float histogram (schema 0): zero bucket 0.5, positive (0.5,1] 1.5.
fn float_histogram(t: i64) -> v2::Histogram {
    v2::Histogram {
        count: Some(v2::Count::CountFloat(2.0)),
        sum: 1.25,
        schema: 0,
        zero_threshold: 0.01,
        zero_count: Some(v2::ZeroCount::ZeroCountFloat(0.5)),
        positive_spans: vec![span2(0, 1)],
        positive_counts: vec![1.5],
        timestamp: t,
        // Ignored: Prometheus' start-timestamp features are off by default.
        start_timestamp: t - 5000,
        ..Default::default()
    }
}

/// Custom buckets (-Inf,0.5], (0.5,2], (2,+Inf]; counts 1, 0, 3 (integer).
fn nhcb(t: i64) -> v2::Histogram {
    v2::Histogram {
        count: Some(v2::Count::CountInt(4)),
        sum: 12.0,
        schema: -53,
        positive_spans: vec![span2(0, 3)],
        positive_deltas: vec![1, -1, 3],
        custom_values: vec![0.5, 2.0],
        reset_hint: 3,
        timestamp: t,
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn histograms_in_and_out_like_prometheus() {
    let tmp = tempfile::tempdir().unwrap();
    let server = start(options(tmp.path())).await.unwrap();
    let addr = server.addr;
    let t0 = t0();
    let t1 = t0 + 15_000;

    // 1.0: integer histograms, and floats in another series.
    let a = write(
        addr,
        "application/x-protobuf",
        v1_body(vec![
            v1::TimeSeries {
                labels: vec![label("__name__", "h"), label("job", "a")],
                histograms: vec![int_histogram(t0, 1), int_histogram(t1, 2)],
                ..Default::default()
            },
            v1::TimeSeries {
                labels: vec![label("__name__", "up"), label("job", "a")],
                samples: vec![v1::Sample {
                    value: 1.0,
                    timestamp: t0,
                }],
                ..Default::default()
            },
        ]),
    )
    .await;
    assert_eq!((a.status, a.written), (204, None), "{}", a.body);

    // 2.0: a float histogram, custom buckets; counted in the headers.
    let a = write(
        addr,
        V2_CT,
        v2_body(v2_request(vec![
            (vec![("__name__", "fh")], vec![float_histogram(t0)], vec![]),
            (
                vec![("__name__", "nhcb"), ("le_set", "x")],
                vec![nhcb(t0), nhcb(t1)],
                vec![],
            ),
        ])),
    )
    .await;
    assert_eq!((a.status, a.written), (204, written(0, 3, 0)), "{}", a.body);

    // Raw selectors: an instant vector of histograms, a matrix.
    assert_eq!(
        result(addr, &query("h", t1)).await,
        format!(
            r#"[{{"metric":{{"__name__":"h","job":"a"}},"histogram":[{},{}]}}]"#,
            secs(t1),
            int_histogram_json(2)
        )
    );
    assert_eq!(
        result(addr, &query("h[1m]", t1)).await,
        format!(
            r#"[{{"metric":{{"__name__":"h","job":"a"}},"histograms":[[{},{}],[{},{}]]}}]"#,
            secs(t0),
            int_histogram_json(1),
            secs(t1),
            int_histogram_json(2)
        )
    );
    assert_eq!(
        result(
            addr,
            &format!(
                "/api/v1/query_range?query=h&start={}&end={}&step=15",
                secs(t0),
                secs(t1)
            )
        )
        .await,
        format!(
            r#"[{{"metric":{{"__name__":"h","job":"a"}},"histograms":[[{},{}],[{},{}]]}}]"#,
            secs(t0),
            int_histogram_json(1),
            secs(t1),
            int_histogram_json(2)
        )
    );
    assert_eq!(
        result(addr, &query("fh", t0)).await,
        format!(
            r#"[{{"metric":{{"__name__":"fh"}},"histogram":[{},{{"count":"2","sum":"1.25","buckets":[[3,"-0.01","0.01","0.5"],[0,"0.5","1","1.5"]]}}]}}]"#,
            secs(t0)
        )
    );
    assert_eq!(
        result(addr, &query("nhcb", t1)).await,
        format!(
            r#"[{{"metric":{{"__name__":"nhcb","le_set":"x"}},"histogram":[{},{{"count":"4","sum":"12","buckets":[[3,"-Inf","0.5","1"],[0,"2","+Inf","3"]]}}]}}]"#,
            secs(t1)
        )
    );

    // PromQL over stored histograms.
    let scalar_of = |v: &str, t: i64| format!(r#"[{{"metric":{{}},"value":[{},"{v}"]}}]"#, secs(t));
    assert_eq!(
        result(addr, &query("histogram_count(h)", t1)).await,
        format!(
            r#"[{{"metric":{{"job":"a"}},"value":[{},"10"]}}]"#,
            secs(t1)
        )
    );
    assert_eq!(
        result(addr, &query("sum(histogram_sum(h))", t1)).await,
        scalar_of("21", t1)
    );
    assert_eq!(
        result(addr, &query("histogram_quantile(0.5, nhcb)", t1)).await,
        // 2 of 4 observations: the third bucket's lower bound, 2 (the +Inf
        // bucket interpolates to its lower bound).
        format!(
            r#"[{{"metric":{{"le_set":"x"}},"value":[{},"2"]}}]"#,
            secs(t1)
        )
    );
    assert_eq!(
        result(addr, &query("sum(h)", t1)).await,
        format!(
            r#"[{{"metric":{{}},"histogram":[{},{}]}}]"#,
            secs(t1),
            int_histogram_json(2)
        )
    );
    // A float series and a histogram series side by side.
    assert_eq!(
        result(addr, &query(r#"{job="a"}"#, t0)).await,
        format!(
            r#"[{{"metric":{{"__name__":"h","job":"a"}},"histogram":[{t},{}]}},{{"metric":{{"__name__":"up","job":"a"}},"value":[{t},"1"]}}]"#,
            int_histogram_json(1),
            t = secs(t0)
        )
    );

    // /api/v1/series lists series that hold only histograms.
    let v: serde_json::Value = reqwest::get(format!(
        "http://{addr}/api/v1/series?match[]=fh&match[]=nhcb"
    ))
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    assert_eq!(
        v["data"],
        serde_json::json!([{"__name__": "fh"}, {"__name__": "nhcb", "le_set": "x"}])
    );

    // Remote read, SAMPLES: the histograms as they were sent (integer
    // ones with deltas, float ones with counts).
    let rr = ReadRequest {
        queries: vec![Query {
            start_timestamp_ms: t0,
            end_timestamp_ms: t1,
            matchers: vec![LabelMatcher {
                r#type: 2,
                name: b"__name__".to_vec(),
                value: b"h|fh".to_vec(),
            }],
        }],
        accepted_response_types: vec![0],
    };
    let resp = reqwest::Client::new()
        .post(format!("http://{addr}/api/v1/read"))
        .body(
            snap::raw::Encoder::new()
                .compress_vec(&rr.encode_to_vec())
                .unwrap(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let raw = snap::raw::Decoder::new()
        .decompress_vec(&resp.bytes().await.unwrap())
        .unwrap();
    let rr = ReadResponse::decode(raw.as_slice()).unwrap();
    let ts = &rr.results[0].timeseries;
    assert_eq!(ts.len(), 2);
    assert_eq!(ts[0].labels, vec![label("__name__", "fh")]);
    let mut want_fh =
        v1::Histogram::decode(float_histogram(t0).encode_to_vec().as_slice()).unwrap();
    // The read message has no start timestamp; the float histogram's
    // zero count and counts come back as sent.
    want_fh.negative_spans.clear();
    assert_eq!(ts[0].histograms, vec![want_fh]);
    assert!(ts[0].samples.is_empty());
    let mut want_h = vec![int_histogram(t0, 1), int_histogram(t1, 2)];
    for h in &mut want_h {
        // The stored hint of a first and a following sample.
        h.reset_hint = 0;
    }
    assert_eq!(ts[1].histograms.len(), 2);
    for (got, want) in ts[1].histograms.iter().zip(&want_h) {
        assert_eq!(
            (
                got.count,
                got.zero_count,
                got.sum,
                got.schema,
                got.timestamp
            ),
            (
                want.count,
                want.zero_count,
                want.sum,
                want.schema,
                want.timestamp
            )
        );
        assert_eq!(got.positive_deltas, want.positive_deltas);
        assert_eq!(got.negative_deltas, want.negative_deltas);
        assert_eq!(got.positive_spans, want.positive_spans);
    }

    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_histograms_are_answered_like_prometheus() {
    let tmp = tempfile::tempdir().unwrap();
    let server = start(options(tmp.path())).await.unwrap();
    let addr = server.addr;
    let t0 = t0();

    // An integer histogram whose count is not its buckets' total.
    let mut bad = int_histogram(t0, 1);
    bad.count = Some(v1::Count::CountInt(3));
    let mismatch = "5 observations found in buckets, but the Count field is 3: histogram's observation count should equal the number of observations found in the buckets (in absence of NaN)";

    // 1.0: the whole request rolls back, 400 with the validation error.
    let a = write(
        addr,
        "application/x-protobuf",
        v1_body(vec![
            v1::TimeSeries {
                labels: vec![label("__name__", "ok1")],
                samples: vec![v1::Sample {
                    value: 1.0,
                    timestamp: t0,
                }],
                ..Default::default()
            },
            v1::TimeSeries {
                labels: vec![label("__name__", "bad")],
                histograms: vec![bad.clone()],
                ..Default::default()
            },
        ]),
    )
    .await;
    assert_eq!(
        (a.status, a.body.as_str()),
        (400, format!("{mismatch}\n").as_str())
    );
    assert_eq!(result(addr, &query("ok1", t0)).await, "[]");

    // 2.0: each problem listed, the rest written and counted.
    let v2bad = v2::Histogram::decode(bad.encode_to_vec().as_slice()).unwrap();
    let mut schema_10 =
        v2::Histogram::decode(int_histogram(t0, 1).encode_to_vec().as_slice()).unwrap();
    schema_10.schema = 10;
    let mut schema_m5 = schema_10.clone();
    schema_m5.schema = -5;
    let mut schema_53 = schema_10.clone();
    schema_53.schema = 53;
    let mut bad_spans = schema_10.clone();
    bad_spans.positive_spans.push(span2(-1, 1));
    let a = write(
        addr,
        V2_CT,
        v2_body(v2_request(vec![
            (vec![("__name__", "bad")], vec![v2bad], vec![(t0, 1.0)]),
            (vec![("__name__", "s10")], vec![schema_10], vec![]),
            (vec![("__name__", "sm5")], vec![schema_m5], vec![]),
            (vec![("__name__", "s53")], vec![schema_53], vec![]),
            (vec![("__name__", "spans")], vec![bad_spans], vec![]),
        ])),
    )
    .await;
    let invalid = "histogram has an invalid schema, which must be between -4 and 8 for exponential buckets, or -53 for custom buckets";
    assert_eq!(
        a.body,
        format!(
            "{mismatch} for series {{__name__=\"bad\"}}\n\
             {invalid}, got schema -5 for series {{__name__=\"sm5\"}}\n\
             {invalid}, got schema 53 for series {{__name__=\"s53\"}}\n\
             span number 2 with offset -1: histogram has a span whose offset is negative for series {{__name__=\"spans\"}}\n"
        )
    );
    assert_eq!((a.status, a.written), (400, written(1, 1, 0)));
    // The float of the series with the bad histogram was written; the
    // schema 10 histogram was stored (reduced to schema 8).
    assert_eq!(
        result(addr, &query("bad", t0)).await,
        format!(
            r#"[{{"metric":{{"__name__":"bad"}},"value":[{},"1"]}}]"#,
            secs(t0)
        )
    );
    assert_eq!(
        result(addr, &query("histogram_count(s10)", t0)).await,
        format!(r#"[{{"metric":{{}},"value":[{},"5"]}}]"#, secs(t0))
    );

    // Out of order and duplicates, as the head says: the series' float
    // (appended first, pending) does not move the head's last timestamp
    // for the histograms of the same request.
    let a = write(
        addr,
        V2_CT,
        v2_body(v2_request(vec![(
            vec![("__name__", "s10")],
            vec![float_histogram(t0 - 1000), float_histogram(t0)],
            vec![(t0 + 500, 2.0)],
        )])),
    )
    .await;
    assert_eq!(
        a.body,
        "out of order sample for series {__name__=\"s10\"}\n\
         duplicate sample for timestamp for series {__name__=\"s10\"}\n"
    );
    assert_eq!((a.status, a.written), (400, written(1, 0, 0)));

    // Too far in the future (Prometheus' receiver: 10 minutes ahead).
    let future = t0 + 3_600_000;
    let a = write(
        addr,
        "application/x-protobuf",
        v1_body(vec![v1::TimeSeries {
            labels: vec![label("__name__", "later")],
            samples: vec![v1::Sample {
                value: 1.0,
                timestamp: future,
            }],
            ..Default::default()
        }]),
    )
    .await;
    assert_eq!(
        (a.status, a.body.as_str()),
        (400, "out of bounds: timestamp is too far in the future\n")
    );
    let a = write(
        addr,
        V2_CT,
        v2_body(v2_request(vec![(
            vec![("__name__", "later")],
            vec![float_histogram(future)],
            vec![],
        )])),
    )
    .await;
    assert_eq!(
        (a.status, a.body.as_str(), a.written),
        (
            400,
            "out of bounds: timestamp is too far in the future for series {__name__=\"later\"}\n",
            written(0, 0, 0)
        )
    );

    server.shutdown().await.unwrap();
}
