//! Golden vectors written by Prometheus v3.9.1 itself (`chunkenc.NewXORChunk`
//! and its appender, see the header of the data file): our encoder must
//! produce the same bytes and our decoder the same samples, bit for bit.

use ferrite_chunkenc::{XorChunk, XorIterator};

const VECTORS: &str = include_str!("../testdata/prometheus_xor_vectors.txt");

struct Vector {
    name: String,
    samples: Vec<(i64, u64)>,
    chunk: Vec<u8>,
}

fn parse_hex(s: &str) -> Vec<u8> {
    s.as_bytes()
        .chunks(2)
        .map(|pair| {
            let pair = std::str::from_utf8(pair).expect("ascii");
            assert_eq!(pair.len(), 2, "odd hex length");
            u8::from_str_radix(pair, 16).expect("hex")
        })
        .collect()
}

fn vectors() -> Vec<Vector> {
    let mut out = Vec::new();
    let mut name = None;
    let mut samples = Vec::new();
    for line in VECTORS.lines().filter(|l| !l.starts_with('#')) {
        if let Some(n) = line.strip_prefix("name ") {
            name = Some(n.to_string());
        } else if let Some(rest) = line.strip_prefix("samples") {
            samples = rest
                .split_whitespace()
                .map(|pair| {
                    let (t, v) = pair.split_once(':').expect("t:v");
                    (
                        t.parse().expect("t"),
                        u64::from_str_radix(v, 16).expect("v"),
                    )
                })
                .collect();
        } else if let Some(hex) = line.strip_prefix("chunk ") {
            out.push(Vector {
                name: name.take().expect("name before chunk"),
                samples: std::mem::take(&mut samples),
                chunk: parse_hex(hex),
            });
        }
    }
    out
}

fn encode(samples: &[(i64, u64)]) -> XorChunk {
    let mut c = XorChunk::new();
    for &(t, v) in samples {
        c.append(t, f64::from_bits(v));
    }
    c
}

#[test]
fn vectors_cover_the_cases() {
    let vs = vectors();
    assert!(vs.len() >= 14, "only {} vectors", vs.len());
    assert!(vs.iter().any(|v| v.samples.len() == 1));
    assert!(vs.iter().any(|v| v.samples.len() == 120));
}

#[test]
fn encoding_is_byte_identical_to_prometheus() {
    for v in vectors() {
        let c = encode(&v.samples);
        assert_eq!(c.num_samples() as usize, v.samples.len(), "{}", v.name);
        assert_eq!(c.bytes(), &v.chunk[..], "{}", v.name);
    }
}

#[test]
fn decoding_prometheus_chunks_is_exact() {
    for v in vectors() {
        let mut it = XorIterator::new(&v.chunk);
        let got: Vec<(i64, u64)> = it.by_ref().map(|(t, x)| (t, x.to_bits())).collect();
        assert!(it.error().is_none(), "{}: {:?}", v.name, it.error());
        assert_eq!(got, v.samples, "{}", v.name);
    }
}

#[test]
fn reopening_at_any_sample_then_appending_gives_prometheus_bytes() {
    for v in vectors() {
        // Prometheus' own chunk reopens and reports its samples.
        let whole = XorChunk::from_bytes(v.chunk.clone()).expect(&v.name);
        assert_eq!(whole.num_samples() as usize, v.samples.len());
        for split in 0..v.samples.len() {
            let mut c = XorChunk::from_bytes(encode(&v.samples[..split]).into_bytes())
                .unwrap_or_else(|e| panic!("{} at {split}: {e}", v.name));
            for &(t, x) in &v.samples[split..] {
                c.append(t, f64::from_bits(x));
            }
            assert_eq!(c.bytes(), &v.chunk[..], "{} split at {split}", v.name);
        }
    }
}

#[test]
fn truncated_prometheus_chunks_fail_cleanly() {
    for v in vectors() {
        for len in 0..v.chunk.len() {
            let mut it = XorIterator::new(&v.chunk[..len]);
            let got: Vec<(i64, u64)> = it.by_ref().map(|(t, x)| (t, x.to_bits())).collect();
            assert!(it.error().is_some(), "{} cut at {len}", v.name);
            assert_eq!(got, v.samples[..got.len()], "{} cut at {len}", v.name);
            assert!(XorChunk::from_bytes(v.chunk[..len].to_vec()).is_err());
        }
    }
}
