//! Remote read (`POST /api/v1/read`) end to end on loopback: both response
//! types against what the database holds, frames split by size, the sample
//! limit, and Prometheus' status codes for bad requests.

use std::net::SocketAddr;
use std::path::Path;

use ferrite_model::{Labels, MatchType, Matcher};
use ferrite_remote::proto::read::{LabelMatcher, Query, ReadRequest, ReadResponse};
use ferrite_remote::read::read_frames;
use ferrite_server::read::RemoteReadOptions;
use ferrite_server::{start, ServerOptions};
use ferrite_tsdb::{Db, DbOptions};
use prost::Message;

const HOUR: i64 = 3_600_000;
const START: i64 = 1_700_000_000_000;

fn options(dir: &Path, remote_read: RemoteReadOptions) -> ServerOptions {
    ServerOptions {
        remote_read,
        ..ServerOptions::new(dir.to_owned(), "127.0.0.1:0".parse::<SocketAddr>().unwrap())
    }
}

/// 5 series over 7 hours, a sample a minute: blocks and a head, with one
/// series' second hour deleted.
fn seed(dir: &Path) {
    let db = Db::open(dir, DbOptions::default()).unwrap();
    for j in 0..(7 * 60) {
        let mut app = db.appender();
        for i in 0..5 {
            let l = Labels::from_pairs(&[("__name__", "m"), ("i", &i.to_string())]);
            app.append(&l, START + j * 60_000, (i * 1000 + j) as f64)
                .unwrap();
        }
        app.commit().unwrap();
    }
    db.compact().unwrap();
    assert!(!db.blocks().is_empty());
    let m = Matcher::new(MatchType::Equal, "i", "3").unwrap();
    db.delete(&[m], START + HOUR, START + 2 * HOUR).unwrap();
    db.close().unwrap();
}

type Expected = Vec<(Vec<(String, String)>, Vec<(i64, f64)>)>;

/// What the database holds for `{__name__="m", i=~re}` in [start, end].
fn expected(dir: &Path, re: &str, start: i64, end: i64) -> Expected {
    let db = Db::open(dir, DbOptions::default()).unwrap();
    let ms = [
        Matcher::new(MatchType::Equal, "__name__", "m").unwrap(),
        Matcher::new(MatchType::Regex, "i", re).unwrap(),
    ];
    let out = db
        .querier(start, end)
        .select(&ms)
        .unwrap()
        .into_iter()
        .map(|s| {
            let mut v = Vec::new();
            s.for_each_sample(|t, x| v.push((t, x))).unwrap();
            let l = s
                .labels
                .iter()
                .map(|l| (l.name.to_string(), l.value.to_string()))
                .collect();
            (l, v)
        })
        .collect();
    db.close().unwrap();
    out
}

fn request(re: &str, start: i64, end: i64, accepted: Vec<i32>) -> Vec<u8> {
    let m = |t: i32, n: &str, v: &str| LabelMatcher {
        r#type: t,
        name: n.as_bytes().to_vec(),
        value: v.as_bytes().to_vec(),
    };
    let req = ReadRequest {
        queries: vec![Query {
            start_timestamp_ms: start,
            end_timestamp_ms: end,
            matchers: vec![m(0, "__name__", "m"), m(2, "i", re)],
        }],
        accepted_response_types: accepted,
    };
    snap::raw::Encoder::new()
        .compress_vec(&req.encode_to_vec())
        .unwrap()
}

async fn post(addr: SocketAddr, body: Vec<u8>) -> (u16, Option<String>, Vec<u8>) {
    let r = reqwest::Client::new()
        .post(format!("http://{addr}/api/v1/read"))
        .header("Content-Type", "application/x-protobuf")
        .header("Content-Encoding", "snappy")
        .body(body)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let ct = r
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string());
    (status, ct, r.bytes().await.unwrap().to_vec())
}

fn labels(ls: &[ferrite_remote::proto::v1::Label]) -> Vec<(String, String)> {
    ls.iter()
        .map(|l| {
            (
                String::from_utf8(l.name.clone()).unwrap(),
                String::from_utf8(l.value.clone()).unwrap(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_read_answers_what_the_database_holds() {
    let tmp = tempfile::tempdir().unwrap();
    seed(tmp.path());
    let ranges = [
        (START - HOUR, START + 8 * HOUR),
        (START + 30 * 60_000, START + 5 * HOUR + 7),
    ];
    let wants: Vec<Expected> = ranges
        .iter()
        .map(|&(a, b)| expected(tmp.path(), "1|3|4", a, b))
        .collect();
    // Small frames, so that series span several.
    let opts = RemoteReadOptions {
        max_bytes_in_frame: 200,
        ..Default::default()
    };
    let server = start(options(tmp.path(), opts)).await.unwrap();
    let addr = server.addr;
    for (&(a, b), want) in ranges.iter().zip(&wants) {
        assert_eq!(want.len(), 3);
        // SAMPLES (no accepted types: the default).
        let (status, ct, body) = post(addr, request("1|3|4", a, b, vec![])).await;
        assert_eq!(
            (status, ct.as_deref()),
            (200, Some("application/x-protobuf"))
        );
        let raw = snap::raw::Decoder::new().decompress_vec(&body).unwrap();
        let resp = ReadResponse::decode(raw.as_slice()).unwrap();
        assert_eq!(resp.results.len(), 1);
        let got: Expected = resp.results[0]
            .timeseries
            .iter()
            .map(|ts| {
                (
                    labels(&ts.labels),
                    ts.samples.iter().map(|s| (s.timestamp, s.value)).collect(),
                )
            })
            .collect();
        assert_eq!(&got, want);

        // STREAMED_XOR_CHUNKS first, as Prometheus' client asks.
        let (status, ct, body) = post(addr, request("1|3|4", a, b, vec![1, 0])).await;
        assert_eq!(status, 200);
        assert_eq!(
            ct.as_deref(),
            Some("application/x-streamed-protobuf; proto=prometheus.ChunkedReadResponse")
        );
        let frames = read_frames(&body).expect("frames with good checksums");
        assert!(frames.len() > want.len(), "series split over frames");
        let mut got: Expected = Vec::new();
        for f in &frames {
            assert_eq!(f.query_index, 0);
            assert_eq!(f.chunked_series.len(), 1);
            let cs = &f.chunked_series[0];
            let l = labels(&cs.labels);
            if got.last().is_none_or(|(last, _)| *last != l) {
                got.push((l, Vec::new()));
            }
            let samples = &mut got.last_mut().unwrap().1;
            for c in &cs.chunks {
                assert_eq!(c.r#type, 1);
                let decoded: Vec<(i64, f64)> =
                    ferrite_chunkenc::XorIterator::new(&c.data).collect();
                assert_eq!(decoded.first().map(|s| s.0), Some(c.min_time_ms));
                assert_eq!(decoded.last().map(|s| s.0), Some(c.max_time_ms));
                samples.extend(decoded.into_iter().filter(|&(t, _)| t >= a && t <= b));
            }
        }
        assert_eq!(&got, want);
    }

    // Bad requests, with Prometheus' codes.
    let (status, _, _) = post(addr, b"not snappy".to_vec()).await;
    assert_eq!(status, 400);
    let (status, _, body) = post(addr, request("1", 0, 1, vec![5])).await;
    assert_eq!(status, 400);
    assert!(String::from_utf8_lossy(&body).contains("does not support"));
    let (status, _, _) = post(addr, request("(", 0, 1, vec![])).await;
    assert_eq!(status, 500);
    server.shutdown().await.unwrap();

    // The sample limit applies to SAMPLES.
    let opts = RemoteReadOptions {
        sample_limit: 100,
        ..Default::default()
    };
    let server = start(options(tmp.path(), opts)).await.unwrap();
    let (status, _, body) = post(server.addr, request("1", START, START + 8 * HOUR, vec![0])).await;
    assert_eq!(status, 400);
    assert_eq!(
        String::from_utf8_lossy(&body).trim(),
        "exceeded sample limit (100)"
    );
    let (status, _, _) = post(server.addr, request("1", START, START + 8 * HOUR, vec![1])).await;
    assert_eq!(status, 200, "streamed responses have no sample limit");
    server.shutdown().await.unwrap();

    // One read at a time: each frees its slot when its response is done
    // (a streamed one when the last frame is out).
    let opts = RemoteReadOptions {
        concurrent_limit: 1,
        ..Default::default()
    };
    let server = start(options(tmp.path(), opts)).await.unwrap();
    for accepted in [vec![1], vec![0], vec![1], vec![1]] {
        let read = post(
            server.addr,
            request("1|2", START, START + 8 * HOUR, accepted),
        );
        let (status, _, _) = tokio::time::timeout(std::time::Duration::from_secs(20), read)
            .await
            .expect("a read waited for a slot that was never freed");
        assert_eq!(status, 200);
    }
    server.shutdown().await.unwrap();
}
