//! Encode and decode cost of 120-sample XOR2 chunks next to XOR for the
//! same floats: a gauge scraped every 15s with a little jitter and a
//! counter, the counter also with a start timestamp (constant, and
//! changing at a reset half-way). Throughput is per sample.

use divan::counter::ItemsCount;
use divan::{black_box, Bencher};
use ferrite_chunkenc::{Xor2Chunk, Xor2Iterator, XorChunk, XorIterator};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const SAMPLES: usize = 120;
const T0: i64 = 1_700_000_000_000;

fn main() {
    divan::main();
}

/// (st, t, v)
fn series(name: &str) -> Vec<(i64, i64, f64)> {
    let mut rng = StdRng::seed_from_u64(1);
    let mut value = 21.5f64;
    (0..SAMPLES as i64)
        .map(|i| match name {
            "gauge" => {
                value = ((value + rng.gen_range(-0.5..0.5)) * 100.0).round() / 100.0;
                (0, T0 + i * 15_000 + rng.gen_range(-20..=20), value)
            }
            _ => {
                value += f64::from(rng.gen_range(0..500u32));
                let st = match name {
                    "counter_st" => T0 - 1000,
                    "counter_st_reset" if i < 60 => T0 - 1000,
                    "counter_st_reset" => T0 + 60 * 15_000 - 1,
                    _ => 0,
                };
                (st, T0 + i * 15_000, value)
            }
        })
        .collect()
}

const NAMES: [&str; 4] = ["gauge", "counter", "counter_st", "counter_st_reset"];

fn encode2(samples: &[(i64, i64, f64)]) -> Xor2Chunk {
    let mut c = Xor2Chunk::new();
    for &(st, t, v) in samples {
        c.append(st, t, v);
    }
    c
}

fn encode1(samples: &[(i64, i64, f64)]) -> XorChunk {
    let mut c = XorChunk::new();
    for &(_, t, v) in samples {
        c.append(t, v);
    }
    c
}

#[divan::bench(args = NAMES)]
fn xor2_encode_120(bencher: Bencher, name: &str) {
    let samples = series(name);
    bencher
        .counter(ItemsCount::new(SAMPLES))
        .bench(|| encode2(black_box(&samples)));
}

#[divan::bench(args = NAMES)]
fn xor_encode_120(bencher: Bencher, name: &str) {
    let samples = series(name);
    bencher
        .counter(ItemsCount::new(SAMPLES))
        .bench(|| encode1(black_box(&samples)));
}

#[divan::bench(args = NAMES)]
fn xor2_decode_120(bencher: Bencher, name: &str) {
    let chunk = encode2(&series(name));
    bencher.counter(ItemsCount::new(SAMPLES)).bench(|| {
        let mut it = Xor2Iterator::new(black_box(chunk.bytes()));
        let (mut sum, mut last_t, mut st_sum) = (0.0, 0, 0i64);
        while let Some((st, t, v)) = it.next_with_st() {
            sum += v;
            last_t = t;
            st_sum = st_sum.wrapping_add(st);
        }
        (sum, last_t, st_sum)
    });
}

#[divan::bench(args = NAMES)]
fn xor_decode_120(bencher: Bencher, name: &str) {
    let chunk = encode1(&series(name));
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
