//! XOR2 chunk round trips (with start timestamps), reopening, seeking and
//! robustness against arbitrary bytes. Byte-level agreement with Prometheus
//! is in `xor2_golden.rs`.

use ferrite_chunkenc::{ChunkError, Xor2Chunk, Xor2Iterator};
use proptest::prelude::*;

const STALE_NAN: u64 = 0x7ff0_0000_0000_0002;

/// (st, t, value bits)
type Sample = (i64, i64, u64);

fn encode(samples: &[Sample]) -> Xor2Chunk {
    let mut c = Xor2Chunk::new();
    for &(st, t, v) in samples {
        c.append(st, t, f64::from_bits(v));
    }
    c
}

/// Decodes to (st, t, value bits), asserting the bytes were valid.
fn decode(bytes: &[u8]) -> Vec<Sample> {
    let mut it = Xor2Iterator::new(bytes);
    let mut out = Vec::new();
    while let Some((st, t, v)) = it.next_with_st() {
        out.push((st, t, v.to_bits()));
    }
    assert!(it.error().is_none(), "{:?}", it.error());
    out
}

fn round_trips(samples: &[Sample]) -> Xor2Chunk {
    let c = encode(samples);
    assert_eq!(c.num_samples() as usize, samples.len());
    assert_eq!(decode(c.bytes()), samples);
    c
}

#[test]
fn single_samples() {
    round_trips(&[(0, 1234, 5.5f64.to_bits())]);
    round_trips(&[(1, i64::MIN, u64::MAX)]);
    round_trips(&[(i64::MIN, i64::MAX, 0)]);
    round_trips(&[(0, 0, STALE_NAN)]);
}

#[test]
fn no_st_means_no_st_bits_up_to_127_samples() {
    let samples: Vec<Sample> = (0..127).map(|i| (0, i * 15_000, 42f64.to_bits())).collect();
    let c = round_trips(&samples);
    // Header, varint t (1 byte: 0), 64 value bits, uvarint delta (2 bytes),
    // the `0` of sample 1's value, then one bit per sample.
    assert_eq!(c.bytes().len(), 3 + 1 + 8 + 2 + (1 + 125usize).div_ceil(8));
    assert_eq!(c.st_header().to_byte(), 0);
    // Sample 127 records ST (still 0) and each later sample its change.
    let samples: Vec<Sample> = (0..130).map(|i| (0, i * 15_000, 42f64.to_bits())).collect();
    let c = round_trips(&samples);
    assert_eq!(c.st_header().to_byte(), 127);
}

#[test]
fn constant_st_costs_only_sample_0() {
    let base: Vec<Sample> = (0..120)
        .map(|i| (0, 1_700_000_000_000 + i * 15_000, 1e9f64.to_bits()))
        .collect();
    let with_st: Vec<Sample> = base
        .iter()
        .map(|&(_, t, v)| (1_699_999_990_000, t, v))
        .collect();
    let a = round_trips(&base);
    let b = round_trips(&with_st);
    // t - st = 10000 as a zig-zag varint (20000, 15 bits): 3 bytes; no
    // other bits.
    assert_eq!(b.bytes().len(), a.bytes().len() + 3);
    assert_eq!(b.st_header().to_byte(), 0x80);
}

#[test]
fn stale_markers_and_the_baseline() {
    let s = STALE_NAN;
    let one = 1f64.to_bits();
    let two = 2f64.to_bits();
    let c = round_trips(&[
        (0, 1000, s), // first sample stale: baseline stays 0
        (0, 2000, 0), // equal to the baseline: `0`
        (0, 3000, s), // dod 0: `11111`
        (0, 4000, 0), // back to the baseline: `0`
        (0, 5500, s), // dod != 0: 13-bit dod, `111`
        (0, 7000, one),
        (0, 8500, s),
        (0, 10000, one),
        (0, 11500, two),
    ]);
    let mut it = c.iter();
    assert_eq!(it.nth(4).map(|(t, v)| (t, v.to_bits())), Some((5500, s)));
    // Stale markers with every dod class and ST.
    let mut samples = Vec::new();
    let mut t = 0i64;
    for (i, step) in [10, 10, 10, 5000, 5000, 600_000, 600_000, 1 << 40, 10, 10]
        .into_iter()
        .enumerate()
    {
        t += step;
        let v = if i % 2 == 0 { s } else { (i as f64).to_bits() };
        samples.push(((i as i64 % 3) * 7, t, v));
    }
    round_trips(&samples);
}

#[test]
fn nan_payloads_infinities_and_signed_zeros_are_exact() {
    let values = [
        1.0f64.to_bits(),
        STALE_NAN,
        f64::NAN.to_bits(),
        0x7ff8_0000_0000_0001,
        0xfff8_0000_0000_0000,
        (-0.0f64).to_bits(),
        0,
        f64::INFINITY.to_bits(),
        f64::NEG_INFINITY.to_bits(),
        1,
        f64::MAX.to_bits(),
        u64::MAX,
        0x8000_0000_0000_0001,
        0x8000_0000_0000_0000,
    ];
    let samples: Vec<Sample> = values
        .iter()
        .enumerate()
        .map(|(i, &v)| (i as i64, i as i64 * 1000 + (i as i64 % 3), v))
        .collect();
    round_trips(&samples);
}

#[test]
fn seek_returns_the_sample_and_its_st() {
    let samples: Vec<Sample> = (0..200)
        .map(|i| (i / 50 * 1_000_000 + 1, i * 15_000, (i as f64).to_bits()))
        .collect();
    let c = round_trips(&samples);
    let mut it = c.iter();
    assert_eq!(it.seek(-5).map(|s| s.0), Some(0));
    assert_eq!(it.at_st(), 1);
    assert_eq!(it.seek(60 * 15_000 - 1), Some((60 * 15_000, 60.0)));
    assert_eq!(it.at_st(), 1_000_001);
    assert_eq!(it.seek(0), Some((60 * 15_000, 60.0)));
    assert_eq!(it.next_with_st(), Some((1_000_001, 61 * 15_000, 61.0)));
    assert_eq!(it.seek(199 * 15_000).map(|s| s.0), Some(199 * 15_000));
    assert_eq!(it.at_st(), 3_000_001);
    assert_eq!(it.next(), None);
    assert_eq!(it.seek(0), None);
    assert!(Xor2Chunk::new().iter().seek(0).is_none());
}

#[test]
fn header_count_bounds_iteration() {
    let samples: Vec<Sample> = (0..10).map(|i| (i, i, i as u64)).collect();
    let mut bytes = encode(&samples).into_bytes();
    bytes[1] = 4;
    assert_eq!(decode(&bytes), samples[..4]);
    assert!(matches!(
        Xor2Chunk::from_bytes(bytes),
        Err(ChunkError::TrailingBytes { samples: 4, .. })
    ));
}

#[test]
fn truncated_chunk_reports_error() {
    let samples: Vec<Sample> = (0..50)
        .map(|i| (i * 3, i * 1000 + (i * i) % 7, (i as f64 * 0.1).to_bits()))
        .collect();
    let c = encode(&samples);
    let b = c.bytes();
    let mut it = Xor2Iterator::new(&b[..b.len() / 2]);
    assert!(it.by_ref().count() < 50);
    assert!(matches!(
        it.error(),
        Some(ChunkError::Truncated { total: 50, .. })
    ));
    assert_eq!(it.next(), None);
    let mut it = Xor2Iterator::new(&[0, 1]);
    assert_eq!(it.next(), None);
    assert_eq!(
        it.error(),
        Some(&ChunkError::ShortHeader { len: 2, need: 3 })
    );
}

#[test]
fn reset_starts_over() {
    let mut c = encode(&[(5, 1, 1.0f64.to_bits()), (6, 2, 2.0f64.to_bits())]);
    c.reset();
    assert_eq!(c.bytes(), &[0, 0, 0]);
    c.append(0, 10, 3.0);
    assert_eq!(c.bytes(), encode(&[(0, 10, 3.0f64.to_bits())]).bytes());
}

/// Timestamp steps in the shapes real series have plus arbitrary ones,
/// values likewise, and ST patterns.
fn samples_strategy() -> impl Strategy<Value = Vec<Sample>> {
    (
        any::<i64>(),
        0u8..8,
        proptest::collection::vec(
            (any::<u64>(), any::<u64>(), any::<u64>(), 0u8..6, 0u8..5),
            0..300,
        ),
    )
        .prop_map(|(start, st_kind, steps)| {
            let mut t = start >> 2;
            let mut last = 0u64;
            let mut st = 0i64;
            let mut prev_t = t;
            steps
                .into_iter()
                .enumerate()
                .map(|(i, (d, v, s, dkind, vkind))| {
                    prev_t = t;
                    t = t.saturating_add(match dkind {
                        0 => 15_000,
                        1 => 15_000 + (d % 41) as i64 - 20,
                        2 => (d % 100) as i64 + 1,
                        3 => (d % (1 << 21)) as i64 + 1,
                        4 => (d % (1 << 45)) as i64 + 1,
                        _ => (d >> 2) as i64 + 1,
                    });
                    last = match vkind {
                        0 => last,
                        1 => (f64::from_bits(last) + (v % 10) as f64).to_bits(),
                        2 => last ^ (v & 0xffff),
                        3 => STALE_NAN,
                        _ => v,
                    };
                    st = match st_kind {
                        0 => 0,
                        1 => start >> 3,
                        2 => t - (s % 1000) as i64,
                        3 => prev_t,
                        4 if s % 13 == 0 => t - 1,
                        5 if i == (s % 200) as usize => t - 5,
                        6 => s as i64,
                        7 if s % 3 == 0 => 0,
                        7 => t.wrapping_add((s % 64) as i64 - 32),
                        _ => st,
                    };
                    (st, t, last)
                })
                .collect()
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn round_trip(samples in samples_strategy()) {
        let c = encode(&samples);
        prop_assert_eq!(c.num_samples() as usize, samples.len());
        prop_assert_eq!(decode(c.bytes()), samples);
    }

    /// Any i64 sequences, not just increasing ones: the arithmetic wraps.
    #[test]
    fn round_trip_arbitrary(samples in proptest::collection::vec((any::<i64>(), any::<i64>(), any::<u64>()), 0..200)) {
        prop_assert_eq!(decode(encode(&samples).bytes()), samples);
    }

    #[test]
    fn reopen_then_append_equals_append_all(samples in samples_strategy(), split in 0usize..300) {
        let split = split.min(samples.len());
        let first = encode(&samples[..split]);
        let mut reopened = Xor2Chunk::from_bytes(first.bytes().to_vec()).unwrap();
        prop_assert_eq!(reopened.bytes(), first.bytes());
        prop_assert_eq!(reopened.num_samples(), first.num_samples());
        for &(st, t, v) in &samples[split..] {
            reopened.append(st, t, f64::from_bits(v));
        }
        let all = encode(&samples);
        prop_assert_eq!(reopened.bytes(), all.bytes());
    }

    #[test]
    fn seek_matches_linear_scan(samples in samples_strategy(), targets in proptest::collection::vec(any::<i64>(), 1..5)) {
        // Seek assumes increasing timestamps, as chunks have them.
        let c = encode(&samples);
        let mut targets = targets;
        targets.sort();
        let mut it = c.iter();
        for target in targets {
            let expected = samples.iter().find(|s| s.1 >= target).copied();
            let got = it.seek(target).map(|(t, v)| (it.at_st(), t, v.to_bits()));
            prop_assert_eq!(got, expected);
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400), seek in any::<i64>()) {
        let mut it = Xor2Iterator::new(&bytes);
        let mut n = 0usize;
        while it.next_with_st().is_some() {
            n += 1;
        }
        prop_assert!(n <= it.num_samples() as usize);
        prop_assert!(n == it.num_samples() as usize || it.error().is_some());
        let _ = Xor2Iterator::new(&bytes).seek(seek);
        let _ = Xor2Chunk::from_bytes(bytes);
    }

    /// Corrupted real chunks reach deeper than random bytes do.
    #[test]
    fn damaged_chunks_never_panic(samples in samples_strategy(), flips in proptest::collection::vec((any::<usize>(), 0u8..8), 1..4), cut in any::<usize>()) {
        let mut bytes = encode(&samples).into_bytes();
        for (at, bit) in flips {
            let i = at % bytes.len();
            bytes[i] ^= 1 << bit;
        }
        bytes.truncate(3 + cut % (bytes.len() - 2));
        let mut it = Xor2Iterator::new(&bytes);
        while it.next_with_st().is_some() {}
        if let Ok(mut c) = Xor2Chunk::from_bytes(bytes) {
            // Whatever we accept must stay decodable after an append.
            let n = c.num_samples();
            let before = decode(c.bytes());
            let last_t = before.last().map_or(0, |s| s.1);
            c.append(77, last_t.wrapping_add(1), 1.5);
            let got = decode(c.bytes());
            if n < u16::MAX {
                prop_assert_eq!(got.len(), n as usize + 1);
                prop_assert_eq!(&got[..n as usize], &before[..]);
                prop_assert_eq!(got.last().copied(), Some((77, last_t.wrapping_add(1), 1.5f64.to_bits())));
            }
        }
    }
}
