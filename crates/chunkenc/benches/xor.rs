//! Encode and decode cost of 120-sample XOR chunks (Prometheus' usual chunk
//! size): a gauge scraped every 15s with a little jitter, and a counter.
//! Throughput is per sample, so divan's items/s reads as samples/s.

use divan::counter::ItemsCount;
use divan::{black_box, Bencher};
use ferrite_chunkenc::{XorChunk, XorIterator};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const SAMPLES: usize = 120;

fn main() {
    divan::main();
}

/// 15s scrapes with +-20ms jitter; a random walk with 2 decimals.
fn gauge() -> Vec<(i64, f64)> {
    let mut rng = StdRng::seed_from_u64(1);
    let mut value = 21.5f64;
    (0..SAMPLES as i64)
        .map(|i| {
            value = ((value + rng.gen_range(-0.5..0.5)) * 100.0).round() / 100.0;
            (
                1_700_000_000_000 + i * 15_000 + rng.gen_range(-20..=20),
                value,
            )
        })
        .collect()
}

/// Exact 15s scrapes of a request counter.
fn counter() -> Vec<(i64, f64)> {
    let mut rng = StdRng::seed_from_u64(2);
    let mut value = 1_000_000.0f64;
    (0..SAMPLES as i64)
        .map(|i| {
            value += f64::from(rng.gen_range(0..500u32));
            (1_700_000_000_000 + i * 15_000, value)
        })
        .collect()
}

/// Exact 15s scrapes of a CPU-seconds counter: it grows by 0.5..1.5 times
/// its mean rate each scrape, so every value has a full-width mantissa
/// (the server benchmark's dashboard query reads such series).
fn cpu_counter() -> Vec<(i64, f64)> {
    let mut rng = StdRng::seed_from_u64(3);
    let mut value = 123_456.0f64;
    (0..SAMPLES as i64)
        .map(|i| {
            value += 0.3 * 15.0 * rng.gen_range(0.5..1.5);
            (1_700_000_000_000 + i * 15_000, value)
        })
        .collect()
}

fn series(name: &str) -> Vec<(i64, f64)> {
    match name {
        "counter" => counter(),
        "cpu_counter" => cpu_counter(),
        _ => gauge(),
    }
}

fn encode(samples: &[(i64, f64)]) -> XorChunk {
    let mut c = XorChunk::new();
    for &(t, v) in samples {
        c.append(t, v);
    }
    c
}

#[divan::bench(args = ["gauge", "counter"])]
fn encode_120(bencher: Bencher, name: &str) {
    let samples = series(name);
    bencher
        .counter(ItemsCount::new(SAMPLES))
        .bench(|| encode(black_box(&samples)));
}

#[divan::bench(args = ["gauge", "counter", "cpu_counter"])]
fn decode_120(bencher: Bencher, name: &str) {
    let chunk = encode(&series(name));
    bencher.counter(ItemsCount::new(SAMPLES)).bench(|| {
        let mut sum = 0.0;
        let mut last_t = 0;
        for (t, v) in XorIterator::new(black_box(chunk.bytes())) {
            sum += v;
            last_t = t;
        }
        (sum, last_t)
    });
}

#[divan::bench(args = ["gauge", "counter"])]
fn seek_last_120(bencher: Bencher, name: &str) {
    let samples = series(name);
    let chunk = encode(&samples);
    let last = samples.last().map_or(0, |s| s.0);
    bencher
        .counter(ItemsCount::new(SAMPLES))
        .bench(|| XorIterator::new(black_box(chunk.bytes())).seek(last));
}

/// 64 chunks of one series in a row, as a query reads them.
fn chunks_64(name: &str) -> Vec<XorChunk> {
    (0..64u64)
        .map(|k| {
            let mut samples = series(name);
            for s in &mut samples {
                s.0 += k as i64 * 1_800_000;
                s.1 += k as f64;
            }
            encode(&samples)
        })
        .collect()
}

#[divan::bench(args = ["gauge", "counter", "cpu_counter"])]
fn drain_64x120(bencher: Bencher, name: &str) {
    let chunks = chunks_64(name);
    let mut out = Vec::new();
    bencher
        .counter(ItemsCount::new(SAMPLES * chunks.len()))
        .bench_local(|| {
            out.clear();
            for c in &chunks {
                XorIterator::new(black_box(c.bytes())).drain_into(&mut out);
            }
            out.len()
        });
}
