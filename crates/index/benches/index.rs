//! Index micro-benchmarks over a 100k-series index shaped like a real block
//! (`__name__` x 100, `instance` x 2000, `job` x 10, a unique `pod`):
//! writing it, decoding series, postings intersection and union.
//! Run: `cargo bench -p ferrite-index --bench index`.

use std::sync::OnceLock;

use divan::counter::ItemsCount;
use divan::{black_box, Bencher};
use ferrite_index::postings::{expand, intersect};
use ferrite_index::text::{Spec, SpecSeries};
use ferrite_index::{ChunkMeta, IndexReader};

const SERIES: usize = 100_000;

fn main() {
    divan::main();
}

fn spec() -> &'static Spec {
    static SPEC: OnceLock<Spec> = OnceLock::new();
    SPEC.get_or_init(|| {
        let mut sets: Vec<Vec<(Vec<u8>, Vec<u8>)>> = (0..SERIES)
            .map(|i| {
                vec![
                    (
                        b"__name__".to_vec(),
                        format!("metric_{:03}", i % 100).into_bytes(),
                    ),
                    (
                        b"instance".to_vec(),
                        format!("host-{:05}", (i * 7919) % 2000).into_bytes(),
                    ),
                    (b"job".to_vec(), format!("job-{}", i % 10).into_bytes()),
                    (b"pod".to_vec(), format!("pod-{i:07}").into_bytes()),
                ]
            })
            .collect();
        sets.sort();
        let mut r = 0;
        let series = sets
            .into_iter()
            .map(|labels| {
                let chunks = (0..3)
                    .map(|c| {
                        r += 180;
                        ChunkMeta {
                            min_time: c * 7_200_000,
                            max_time: c * 7_200_000 + 7_199_999,
                            chunk_ref: r,
                        }
                    })
                    .collect();
                SpecSeries { labels, chunks }
            })
            .collect();
        Spec {
            symbols: Vec::new(),
            series,
        }
    })
}

fn reader() -> &'static IndexReader {
    static READER: OnceLock<(tempfile::TempDir, IndexReader)> = OnceLock::new();
    &READER
        .get_or_init(|| {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("index");
            spec().write_index(&path).unwrap();
            let r = IndexReader::open(&path).unwrap();
            (dir, r)
        })
        .1
}

#[divan::bench(sample_count = 10)]
fn write_100k_series(bencher: Bencher) {
    let spec = spec();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index");
    bencher
        .counter(ItemsCount::new(SERIES))
        .bench(|| spec.write_index(&path).unwrap());
}

#[divan::bench]
fn decode_all_series(bencher: Bencher) {
    let r = reader();
    let refs = expand(&mut *r.all_postings().unwrap());
    bencher.counter(ItemsCount::new(refs.len())).bench(|| {
        let (mut labels, mut chunks) = (Vec::new(), Vec::new());
        for &id in &refs {
            r.series(id, &mut labels, Some(&mut chunks)).unwrap();
            black_box((&labels, &chunks));
        }
    });
}

/// `{__name__="metric_042", job="job-2"}`: a 1000-series list against a
/// 10000-series list (seeks skip most of the larger one).
#[divan::bench]
fn intersect_name_job(bencher: Bencher) {
    let r = reader();
    bencher.bench(|| {
        let mut p = intersect(vec![
            r.postings(b"__name__", &[b"metric_042"]).unwrap(),
            r.postings(b"job", &[b"job-2"]).unwrap(),
        ]);
        black_box(expand(&mut *p))
    });
}

/// `{job=~"job-1|job-3|job-5|job-7"}`: a union of four 10000-series lists.
#[divan::bench]
fn merge_four_jobs(bencher: Bencher) {
    let r = reader();
    bencher.bench(|| {
        let mut p = r
            .postings(b"job", &[b"job-1", b"job-3", b"job-5", b"job-7"])
            .unwrap();
        black_box(expand(&mut *p))
    });
}

/// Postings lookup by value across the sampled offset table (2000 values).
#[divan::bench]
fn postings_lookup_instance(bencher: Bencher) {
    let r = reader();
    bencher.bench(|| black_box(r.postings(b"instance", &[b"host-01234"]).unwrap().next()));
}
