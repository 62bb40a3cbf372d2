//! The remote write receiver's cost per sample, one thread, no HTTP: a
//! snappy 1.0 body decompressed, read in place and appended to the head
//! (WAL included), as `POST /api/v1/write` does after reading the body.
//! Requests of 2,000 integer native histograms (schema 3, 16 buckets in 2
//! spans, as `scripts/bench-server --scenarios hist-ingest` sends) or
//! 2,000 floats, over 10,000 series: every series gets one sample per
//! round, each iteration appends the next request. Throughput is per
//! sample.

use divan::counter::ItemsCount;
use divan::Bencher;
use ferrite_remote::proto::v1;
use ferrite_server::write::decode_and_append;
use ferrite_tsdb::{Db, DbOptions};
use prost::Message;

fn main() {
    divan::main();
}

const SERIES: usize = 10_000;
const PER_REQUEST: usize = 2_000;
/// Iterations a benchmark may run: samples x sample size.
const SAMPLES: u32 = 10;
const SAMPLE_SIZE: u32 = 20;
const T0: i64 = 1_700_000_000_000;

fn labels(s: usize) -> Vec<v1::Label> {
    let l = |n: &str, v: String| v1::Label {
        name: n.as_bytes().to_vec(),
        value: v.into_bytes(),
    };
    vec![
        l("__name__", "http_request_duration_seconds".into()),
        l("instance", format!("host-{}:9100", s / 50)),
        l("job", "node".into()),
        l("path", format!("/api/v{}", s % 50)),
    ]
}

/// A cheap, fixed pseudo-random number in 0..1 for (series, round, bucket).
fn jitter(s: usize, r: i64, k: usize) -> f64 {
    let mut x = (s as u64) << 32 ^ (r as u64) << 8 ^ k as u64;
    x = x.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    x ^= x >> 29;
    (x >> 11) as f64 / (1u64 << 53) as f64
}

fn histogram(s: usize, r: i64) -> v1::Histogram {
    let n = 100 + r;
    let (mut prev, mut count) = (0i64, 0u64);
    let deltas = (0..16)
        .map(|k| {
            let c = n * (k as i64 % 5 + 1) + (jitter(s, r, k) * 4.0) as i64;
            let d = c - prev;
            prev = c;
            count += c as u64;
            d
        })
        .collect();
    v1::Histogram {
        count: Some(v1::Count::CountInt(count + n as u64)),
        zero_count: Some(v1::ZeroCount::ZeroCountInt(n as u64)),
        sum: count as f64 * 0.0371,
        schema: 3,
        zero_threshold: 2.938_735_877_055_719e-39,
        positive_spans: vec![
            v1::BucketSpan {
                offset: -12 + (s % 5) as i32,
                length: 10,
            },
            v1::BucketSpan {
                offset: 3,
                length: 6,
            },
        ],
        positive_deltas: deltas,
        timestamp: T0 + r * 15_000,
        ..Default::default()
    }
}

/// Every request of the run, snappy-compressed, in sending order.
fn requests(histograms: bool) -> Vec<Vec<u8>> {
    let rounds = (SAMPLES * SAMPLE_SIZE) as usize * PER_REQUEST / SERIES + 1;
    let mut out = Vec::new();
    for r in 0..rounds as i64 {
        for first in (0..SERIES).step_by(PER_REQUEST) {
            let timeseries = (first..first + PER_REQUEST)
                .map(|s| v1::TimeSeries {
                    labels: labels(s),
                    samples: if histograms {
                        vec![]
                    } else {
                        vec![v1::Sample {
                            value: (s as i64 * 7 + r) as f64,
                            timestamp: T0 + r * 15_000,
                        }]
                    },
                    histograms: if histograms {
                        vec![histogram(s, r)]
                    } else {
                        vec![]
                    },
                    ..Default::default()
                })
                .collect();
            let raw = v1::WriteRequest {
                timeseries,
                metadata: vec![],
            }
            .encode_to_vec();
            let compressed = snap::raw::Encoder::new()
                .compress_vec(&raw)
                .expect("snappy");
            out.push(compressed);
        }
    }
    out
}

fn run(bencher: Bencher, histograms: bool) {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Db::open(dir.path(), DbOptions::default()).expect("open");
    let mut reqs = requests(histograms).into_iter();
    let mut raw = Vec::new();
    // The first round creates the series: not measured.
    for body in reqs.by_ref().take(SERIES / PER_REQUEST) {
        let answer = decode_and_append(&db, None, Some("snappy"), &body, &mut raw).expect("ok");
        assert_eq!(answer.status().as_u16(), 204);
    }
    bencher
        .counter(ItemsCount::new(PER_REQUEST))
        .with_inputs(|| reqs.next().expect("enough requests"))
        .bench_local_values(|body| {
            let answer = decode_and_append(&db, None, Some("snappy"), &body, &mut raw).expect("ok");
            assert_eq!(answer.status().as_u16(), 204);
        });
}

#[divan::bench(sample_count = SAMPLES, sample_size = SAMPLE_SIZE)]
fn histograms(bencher: Bencher) {
    run(bencher, true);
}

#[divan::bench(sample_count = SAMPLES, sample_size = SAMPLE_SIZE)]
fn floats(bencher: Bencher) {
    run(bencher, false);
}
