//! Encode cost of integer native histogram chunks: 120 samples of a
//! counter histogram (schema 3, 16 buckets in 2 spans) growing by a
//! pseudo-random amount per bucket each sample, as the replay and ingest
//! benchmarks' shape h. Throughput is per sample.

use divan::counter::ItemsCount;
use divan::{black_box, Bencher};
use ferrite_chunkenc::HistogramChunk;
use ferrite_model::{Histogram, Span};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const SAMPLES: usize = 120;

fn main() {
    divan::main();
}

fn samples() -> Vec<(i64, Histogram)> {
    let mut rng = StdRng::seed_from_u64(1);
    let mut counts = [0i64; 16];
    (0..SAMPLES as i64)
        .map(|i| {
            for (k, c) in counts.iter_mut().enumerate() {
                *c += rng.gen_range(0..(k as i64 % 5 + 1) * 40);
            }
            let mut prev = 0;
            let deltas: Vec<i64> = counts
                .iter()
                .map(|&c| {
                    let d = c - prev;
                    prev = c;
                    d
                })
                .collect();
            let count = counts.iter().sum::<i64>() as u64;
            let h = Histogram {
                schema: 3,
                count,
                sum: count as f64 * 0.0371,
                positive_spans: vec![
                    Span {
                        offset: -12,
                        length: 10,
                    },
                    Span {
                        offset: 3,
                        length: 6,
                    },
                ],
                positive_buckets: deltas,
                ..Histogram::default()
            };
            (1_700_000_000_000 + i * 15_000, h)
        })
        .collect()
}

#[divan::bench]
fn encode(bencher: Bencher) {
    let samples = samples();
    bencher.counter(ItemsCount::new(SAMPLES)).bench(|| {
        let mut c = HistogramChunk::new();
        for (t, h) in &samples {
            let _ = black_box(c.append(None, *t, h));
        }
        c
    });
}
