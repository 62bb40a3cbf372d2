//! Golden vectors written by Prometheus v3.16.0 itself
//! (`chunkenc.NewXOR2Chunk` and its appender; see the header of the data
//! file and interop/cmd/promxor2chunks): our encoder must produce the same
//! bytes and our decoder the same (st, t, v), bit for bit.

use ferrite_chunkenc::{ChunkError, Xor2Chunk, Xor2Iterator, XorChunk};

const VECTORS: &str = include_str!("../testdata/prometheus_xor2_vectors.txt");
const STALE_NAN: u64 = 0x7ff0_0000_0000_0002;

/// (st, t, value bits)
type Sample = (i64, i64, u64);

struct Vector {
    name: String,
    samples: Vec<Sample>,
    /// Prometheus reopened the chunk after this many samples (0: never).
    reopen: usize,
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
    let mut reopen = 0;
    for line in VECTORS.lines().filter(|l| !l.starts_with('#')) {
        if let Some(n) = line.strip_prefix("name ") {
            name = Some(n.to_string());
        } else if let Some(rest) = line.strip_prefix("samples") {
            samples = rest
                .split_whitespace()
                .map(|triple| {
                    let mut parts = triple.split(':');
                    let mut next = || parts.next().expect("st:t:v");
                    (
                        next().parse().expect("st"),
                        next().parse().expect("t"),
                        u64::from_str_radix(next(), 16).expect("v"),
                    )
                })
                .collect();
        } else if let Some(k) = line.strip_prefix("reopen ") {
            reopen = k.parse().expect("reopen");
        } else if let Some(hex) = line.strip_prefix("chunk ") {
            out.push(Vector {
                name: name.take().expect("name before chunk"),
                samples: std::mem::take(&mut samples),
                reopen: std::mem::take(&mut reopen),
                chunk: parse_hex(hex),
            });
        }
    }
    out
}

/// Vectors appended in one go, which our encoder must reproduce.
fn appended() -> impl Iterator<Item = Vector> {
    vectors().into_iter().filter(|v| v.reopen == 0)
}

fn encode(samples: &[Sample]) -> Xor2Chunk {
    let mut c = Xor2Chunk::new();
    for &(st, t, v) in samples {
        c.append(st, t, f64::from_bits(v));
    }
    c
}

fn decode(bytes: &[u8]) -> (Vec<Sample>, Option<ChunkError>) {
    let mut it = Xor2Iterator::new(bytes);
    let mut out = Vec::new();
    while let Some((st, t, v)) = it.next_with_st() {
        assert_eq!(it.at_st(), st);
        out.push((st, t, v.to_bits()));
    }
    (out, it.error().cloned())
}

#[test]
fn vectors_cover_the_cases() {
    let vs = vectors();
    assert!(vs.len() >= 300, "only {} vectors", vs.len());
    let has = |f: &dyn Fn(&Vector) -> bool| vs.iter().any(f);
    assert!(has(&|v| v.samples.is_empty()));
    assert!(has(&|v| v.samples.len() == 1));
    assert!(has(&|v| v.samples.len() > 255));
    assert!(has(&|v| v.reopen > 0));
    // ST: none, on sample 0, first changing at 1, at 127 (forced), later.
    let headers: Vec<u8> = vs.iter().filter_map(|v| v.chunk.get(2).copied()).collect();
    for h in [0x00, 0x80, 0x81, 0x01, 0x7f, 0xff] {
        assert!(headers.contains(&h), "no chunk with ST header {h:#04x}");
    }
    assert!(headers.iter().any(|&h| h & 0x7f > 1 && h & 0x7f < 127));
    // Stale markers with dod 0 (`11111`) and otherwise, other NaNs, ±0, ±Inf.
    let values: Vec<u64> = vs
        .iter()
        .flat_map(|v| v.samples.iter().map(|s| s.2))
        .collect();
    for special in [
        STALE_NAN,
        0x7ff8_0000_0000_0001, // Go's math.NaN()
        f64::INFINITY.to_bits(),
        f64::NEG_INFINITY.to_bits(),
        0,
        (-0.0f64).to_bits(),
    ] {
        assert!(values.contains(&special), "no value {special:#x}");
    }
}

#[test]
fn encoding_is_byte_identical_to_prometheus() {
    let mut n = 0;
    for v in appended() {
        let c = encode(&v.samples);
        assert_eq!(c.num_samples() as usize, v.samples.len(), "{}", v.name);
        assert_eq!(c.bytes(), &v.chunk[..], "{}", v.name);
        assert_eq!(c.st_header().to_byte(), v.chunk[2], "{}", v.name);
        n += 1;
    }
    assert!(n >= 300);
}

#[test]
fn decoding_prometheus_chunks_is_exact() {
    for v in vectors() {
        let (got, err) = decode(&v.chunk);
        assert!(err.is_none(), "{}: {err:?}", v.name);
        assert_eq!(got, v.samples, "{}", v.name);
    }
}

#[test]
fn seek_in_prometheus_chunks_matches_linear_scan() {
    for v in vectors() {
        let mut it = Xor2Iterator::new(&v.chunk);
        // Every other sample's timestamp, and just past it, in order.
        let mut want_from = 0;
        for (i, s) in v.samples.iter().enumerate().step_by(2) {
            let target = s.1;
            let expected = v.samples[want_from..]
                .iter()
                .position(|x| x.1 >= target)
                .map(|p| p + want_from);
            let got = it.seek(target);
            assert_eq!(
                got.map(|(t, x)| (it.at_st(), t, x.to_bits())),
                expected.map(|p| v.samples[p]),
                "{} seek {i}",
                v.name
            );
            match expected {
                Some(p) => want_from = p,
                None => break,
            }
        }
    }
}

#[test]
fn reopening_at_any_sample_then_appending_gives_prometheus_bytes() {
    for v in appended() {
        let whole = Xor2Chunk::from_bytes(v.chunk.clone()).expect(&v.name);
        assert_eq!(whole.num_samples() as usize, v.samples.len());
        let step = (v.samples.len() / 40).max(1);
        for split in (0..v.samples.len()).step_by(step) {
            let mut c = Xor2Chunk::from_bytes(encode(&v.samples[..split]).into_bytes())
                .unwrap_or_else(|e| panic!("{} at {split}: {e}", v.name));
            for &(st, t, x) in &v.samples[split..] {
                c.append(st, t, f64::from_bits(x));
            }
            assert_eq!(c.bytes(), &v.chunk[..], "{} split at {split}", v.name);
        }
    }
}

#[test]
fn prometheus_reopened_chunks_can_be_continued() {
    for v in vectors().into_iter().filter(|v| v.reopen > 0) {
        let mut c = Xor2Chunk::from_bytes(v.chunk.clone()).expect(&v.name);
        let last_t = v.samples.last().map_or(0, |s| s.1);
        c.append(5, last_t.wrapping_add(15_000), 0.5);
        let (got, err) = decode(c.bytes());
        assert!(err.is_none(), "{}: {err:?}", v.name);
        assert_eq!(got[..v.samples.len()], v.samples[..], "{}", v.name);
        assert_eq!(
            got.last(),
            Some(&(5, last_t.wrapping_add(15_000), 0.5f64.to_bits()))
        );
    }
}

#[test]
fn truncated_prometheus_chunks_fail_cleanly() {
    for v in vectors() {
        for len in 0..v.chunk.len() {
            let (got, err) = decode(&v.chunk[..len]);
            assert!(err.is_some(), "{} cut at {len}", v.name);
            assert_eq!(got, v.samples[..got.len()], "{} cut at {len}", v.name);
            assert!(Xor2Chunk::from_bytes(v.chunk[..len].to_vec()).is_err());
        }
    }
}

/// XOR2 against XOR for the same float samples (ST dropped), over the
/// golden data. Prints the figures (`--nocapture`) and checks the gains
/// Prometheus designed XOR2 for.
#[test]
fn bytes_per_sample_against_xor() {
    #[derive(Default)]
    struct Total {
        samples: usize,
        xor: usize,
        xor2_no_st: usize,
        xor2_st: usize,
    }
    let mut groups: Vec<(&str, Total)> = ["edge_cases", "prom_window", "random", "all"]
        .into_iter()
        .map(|g| (g, Total::default()))
        .collect();
    for v in appended().filter(|v| !v.samples.is_empty()) {
        let mut xor = XorChunk::new();
        let mut xor2 = Xor2Chunk::new();
        for &(_, t, x) in &v.samples {
            xor.append(t, f64::from_bits(x));
            xor2.append(0, t, f64::from_bits(x));
        }
        let group = if v.name.starts_with("prom_window") {
            "prom_window"
        } else if v.name.starts_with("random") {
            "random"
        } else {
            "edge_cases"
        };
        for (name, total) in groups.iter_mut() {
            if *name == group || *name == "all" {
                total.samples += v.samples.len();
                total.xor += xor.bytes().len();
                total.xor2_no_st += xor2.bytes().len();
                total.xor2_st += v.chunk.len();
            }
        }
    }
    for (name, t) in &groups {
        let per = |bytes: usize| bytes as f64 / t.samples as f64;
        println!(
            "{name:>11}: {} samples, bytes/sample XOR {:.3}, XOR2 {:.3} ({:+.1}%), XOR2 with the vectors' ST {:.3}",
            t.samples,
            per(t.xor),
            per(t.xor2_no_st),
            (per(t.xor2_no_st) / per(t.xor) - 1.0) * 100.0,
            per(t.xor2_st),
        );
    }
    // Prometheus' window-selection patterns (regular 15 s scrapes, with and
    // without jitter) are where XOR2 must win.
    let window = &groups[1].1;
    assert!(window.xor2_no_st < window.xor, "XOR2 larger than XOR");

    // A constant series of 120 samples: 1 bit a sample in XOR2, 2 in XOR.
    let mut xor = XorChunk::new();
    let mut xor2 = Xor2Chunk::new();
    for i in 0..120 {
        xor.append(1_700_000_000_000 + i * 15_000, 1e9);
        xor2.append(0, 1_700_000_000_000 + i * 15_000, 1e9);
    }
    assert_eq!(xor2.bytes().len(), 34);
    assert_eq!(
        xor.bytes().len(),
        2 + 6 + 8 + 2 + (1 + 118 * 2usize).div_ceil(8)
    );
}
