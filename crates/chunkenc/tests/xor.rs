//! XOR chunk round trips, reopening, seeking and robustness against
//! arbitrary bytes. Byte-level agreement with Prometheus is in `golden.rs`.

use ferrite_chunkenc::{ChunkError, XorChunk, XorIterator};
use proptest::prelude::*;

const STALE_NAN: u64 = 0x7ff0_0000_0000_0002;

fn encode(samples: &[(i64, u64)]) -> XorChunk {
    let mut c = XorChunk::new();
    for &(t, v) in samples {
        c.append(t, f64::from_bits(v));
    }
    c
}

/// Decodes to (t, value bits), asserting the bytes were valid.
fn decode(bytes: &[u8]) -> Vec<(i64, u64)> {
    let mut it = XorIterator::new(bytes);
    let out: Vec<(i64, u64)> = it.by_ref().map(|(t, v)| (t, v.to_bits())).collect();
    assert!(it.error().is_none(), "{:?}", it.error());
    out
}

fn round_trips(samples: &[(i64, u64)]) {
    let c = encode(samples);
    assert_eq!(c.num_samples() as usize, samples.len());
    assert_eq!(decode(c.bytes()), samples);
}

#[test]
fn empty_chunk_is_two_zero_bytes() {
    let c = XorChunk::new();
    assert_eq!(c.bytes(), &[0, 0]);
    assert_eq!(c.num_samples(), 0);
    assert_eq!(decode(c.bytes()), vec![]);
}

#[test]
fn single_sample() {
    round_trips(&[(1234, 5.5f64.to_bits())]);
    round_trips(&[(i64::MIN, u64::MAX)]);
    round_trips(&[(i64::MAX, 0)]);
}

#[test]
fn regular_unchanged_samples_cost_two_bits() {
    let samples: Vec<(i64, u64)> = (0..120).map(|i| (i * 15_000, 42f64.to_bits())).collect();
    let c = encode(&samples);
    // Header, varint t, 64 value bits, uvarint delta; then 1 value bit for
    // sample 1 and a dod bit plus a value bit for the 118 others.
    assert_eq!(
        c.bytes().len(),
        2 + 1 + 8 + 2 + (1 + 118 * 2usize).div_ceil(8)
    );
    assert_eq!(decode(c.bytes()), samples);
}

#[test]
fn nan_payloads_and_signed_zeros_are_preserved_exactly() {
    let values = [
        1.0f64.to_bits(),
        STALE_NAN,
        STALE_NAN,
        f64::NAN.to_bits(),
        0x7ff8_0000_0000_0001,
        0xfff8_0000_0000_0000,
        STALE_NAN,
        (-0.0f64).to_bits(),
        0,
        f64::INFINITY.to_bits(),
        f64::NEG_INFINITY.to_bits(),
        1, // smallest subnormal
        f64::MIN_POSITIVE.to_bits(),
        f64::MAX.to_bits(),
        STALE_NAN,
    ];
    let samples: Vec<(i64, u64)> = values
        .iter()
        .enumerate()
        .map(|(i, &v)| (i as i64 * 1000, v))
        .collect();
    round_trips(&samples);
}

#[test]
fn negative_timestamps_and_values() {
    let samples: Vec<(i64, u64)> = (0..100)
        .map(|i| {
            (
                -10_000_000 + i * 15_001 - (i % 3),
                (-(i as f64) * 1.25).to_bits(),
            )
        })
        .collect();
    round_trips(&samples);
}

#[test]
fn huge_deltas_and_i64_extremes_wrap_like_go() {
    round_trips(&[
        (i64::MIN, 1),
        (i64::MAX, 2),
        (i64::MAX, 3),
        (i64::MIN, 4),
        (0, 5),
    ]);
    round_trips(&[
        (0, 0),
        (1 << 40, 1),
        (1 << 41, 2),
        ((1 << 41) + 1, 3),
        (i64::MAX - 1, 4),
        (i64::MAX, 5),
    ]);
    round_trips(&[(-1, 0), (0, 0), (i64::MAX, 0), (i64::MIN, 0)]);
}

#[test]
fn every_dod_bucket_edge() {
    let mut samples = vec![(0i64, 0u64), (15_000, 1)];
    let mut delta = 15_000i64;
    for dod in [
        0,
        1,
        -1,
        8192,
        -8191,
        8193,
        -8192,
        65536,
        -65535,
        65537,
        -65536,
        524_288,
        -524_287,
        524_289,
        -524_288,
        1 << 50,
        -(1 << 50),
    ] {
        delta += dod;
        let t = samples.last().map_or(0, |s| s.0) + delta;
        samples.push((t, samples.len() as u64));
    }
    round_trips(&samples);
}

#[test]
fn value_windows_64_significant_bits_and_clamp() {
    round_trips(&[
        (0, 0),
        (1, 0x8000_0000_0000_0001), // 64 significant bits, written as 0
        (2, 0x8000_0000_0000_0000),
        (3, 0x0000_0000_0000_0001), // 63 leading zeros, clamped to 31
        (4, 0x0000_0000_0000_0003),
        (5, u64::MAX),
        (6, u64::MAX),
        (7, 0),
    ]);
}

#[test]
fn seek_finds_first_sample_at_or_after_and_never_goes_back() {
    let samples: Vec<(i64, u64)> = (0..120)
        .map(|i| (i * 15_000, (i as f64).to_bits()))
        .collect();
    let c = encode(&samples);
    let mut it = c.iter();
    assert_eq!(it.seek(-5).map(|s| s.0), Some(0));
    assert_eq!(it.seek(30_001).map(|s| s.0), Some(45_000));
    assert_eq!(it.seek(45_000).map(|s| s.0), Some(45_000));
    assert_eq!(it.seek(0).map(|s| s.0), Some(45_000));
    assert_eq!(it.next().map(|s| s.0), Some(60_000));
    assert_eq!(it.seek(119 * 15_000), Some((119 * 15_000, 119.0)));
    assert_eq!(it.seek(0), Some((119 * 15_000, 119.0)));
    assert_eq!(it.next(), None);
    assert_eq!(it.seek(0), None);
    assert_eq!(c.iter().seek(10_000_000), None);
    assert!(XorChunk::new().iter().seek(0).is_none());
}

#[test]
fn header_count_bounds_iteration() {
    let samples: Vec<(i64, u64)> = (0..10).map(|i| (i, i as u64)).collect();
    let mut bytes = encode(&samples).into_bytes();
    bytes[1] = 4;
    assert_eq!(decode(&bytes), samples[..4]);
    // Appending after the 4th sample would overwrite the rest: refused.
    assert!(matches!(
        XorChunk::from_bytes(bytes),
        Err(ChunkError::TrailingBytes { samples: 4, .. })
    ));
}

#[test]
fn truncated_chunk_reports_error() {
    let samples: Vec<(i64, u64)> = (0..50)
        .map(|i| (i * 1000 + (i * i) % 7, (i as f64 * 0.1).to_bits()))
        .collect();
    let c = encode(&samples);
    let b = c.bytes();
    let mut it = XorIterator::new(&b[..b.len() / 2]);
    let n = it.by_ref().count();
    assert!(n < 50);
    assert!(matches!(
        it.error(),
        Some(ChunkError::Truncated { total: 50, .. })
    ));
    assert_eq!(it.next(), None);
    assert!(XorChunk::from_bytes(b[..b.len() / 2].to_vec()).is_err());
    let mut it = XorIterator::new(&[1]);
    assert_eq!(it.next(), None);
    assert_eq!(it.error(), Some(&ChunkError::MissingHeader { len: 1 }));
}

/// Timestamp steps and value changes in the shapes real series have, plus
/// arbitrary ones.
fn samples_strategy() -> impl Strategy<Value = Vec<(i64, u64)>> {
    (
        any::<i64>(),
        proptest::collection::vec((any::<u64>(), any::<u64>(), 0u8..6, 0u8..5), 0..300),
    )
        .prop_map(|(start, steps)| {
            let mut t = start >> 2;
            let mut last = 0u64;
            steps
                .into_iter()
                .map(|(d, v, dkind, vkind)| {
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
                    (t, last)
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

    /// Any i64 sequence, not just increasing ones: the arithmetic wraps.
    #[test]
    fn round_trip_arbitrary(samples in proptest::collection::vec((any::<i64>(), any::<u64>()), 0..50)) {
        prop_assert_eq!(decode(encode(&samples).bytes()), samples);
    }

    #[test]
    fn reopen_then_append_equals_append_all(samples in samples_strategy(), split in 0usize..300) {
        let split = split.min(samples.len());
        let first = encode(&samples[..split]);
        let mut reopened = XorChunk::from_bytes(first.bytes().to_vec()).unwrap();
        prop_assert_eq!(reopened.bytes(), first.bytes());
        for &(t, v) in &samples[split..] {
            reopened.append(t, f64::from_bits(v));
        }
        let all = encode(&samples);
        prop_assert_eq!(reopened.bytes(), all.bytes());
    }

    #[test]
    fn seek_matches_linear_scan(samples in samples_strategy(), targets in proptest::collection::vec(any::<i64>(), 1..5)) {
        let c = encode(&samples);
        let mut targets = targets;
        targets.sort();
        let mut it = c.iter();
        for target in targets {
            let expected = samples.iter().find(|s| s.0 >= target).map(|s| (s.0, s.1));
            prop_assert_eq!(it.seek(target).map(|(t, v)| (t, v.to_bits())), expected);
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400), seek in any::<i64>()) {
        let mut it = XorIterator::new(&bytes);
        let n = it.by_ref().count();
        prop_assert!(n <= it.num_samples() as usize);
        prop_assert!(n == it.num_samples() as usize || it.error().is_some());
        let _ = XorIterator::new(&bytes).seek(seek);
        let _ = XorChunk::from_bytes(bytes);
    }

    /// Corrupted real chunks reach deeper than random bytes do.
    #[test]
    fn damaged_chunks_never_panic(samples in samples_strategy(), flips in proptest::collection::vec((any::<usize>(), 0u8..8), 1..4), cut in any::<usize>()) {
        let mut bytes = encode(&samples).into_bytes();
        for (at, bit) in flips {
            let i = at % bytes.len();
            bytes[i] ^= 1 << bit;
        }
        bytes.truncate(2 + cut % bytes.len());
        let mut it = XorIterator::new(&bytes);
        for _ in it.by_ref() {}
        if let Ok(mut c) = XorChunk::from_bytes(bytes) {
            // Whatever we accept must stay decodable after an append.
            let n = c.num_samples();
            let last_t = c.iter().last().map_or(0, |s| s.0);
            c.append(last_t.wrapping_add(1), 1.5);
            let mut it = c.iter();
            let got: Vec<_> = it.by_ref().collect();
            prop_assert!(it.error().is_none());
            if n < u16::MAX {
                prop_assert_eq!(got.len(), n as usize + 1);
                prop_assert_eq!(got.last().map(|s| (s.0, s.1.to_bits())), Some((last_t.wrapping_add(1), 1.5f64.to_bits())));
            }
        }
    }

    /// `drain_into` hands out exactly what `next` does, and stops with the
    /// same error: on real chunks, damaged ones and arbitrary bytes, from
    /// the start or after some samples were taken with `next`.
    #[test]
    fn drain_into_equals_next(
        samples in samples_strategy(),
        flips in proptest::collection::vec((any::<usize>(), 0u8..8), 0..3),
        cut in any::<usize>(),
        first in 0usize..5,
        noise in proptest::collection::vec(any::<u8>(), 0..200),
    ) {
        let mut damaged = encode(&samples).into_bytes();
        for (at, bit) in flips {
            let i = at % damaged.len();
            damaged[i] ^= 1 << bit;
        }
        damaged.truncate(2 + cut % damaged.len());
        for bytes in [encode(&samples).into_bytes(), damaged, noise] {
            let mut by_next = XorIterator::new(&bytes);
            let mut by_drain = XorIterator::new(&bytes);
            let mut drained = Vec::new();
            for _ in 0..first {
                let a = by_next.next().map(|(t, v)| (t, v.to_bits()));
                prop_assert_eq!(a, by_drain.next().map(|(t, v)| (t, v.to_bits())));
            }
            let expected: Vec<(i64, u64)> = by_next.by_ref().map(|(t, v)| (t, v.to_bits())).collect();
            drained.push((7, 7.0));
            by_drain.drain_into(&mut drained);
            let got: Vec<(i64, u64)> = drained[1..].iter().map(|&(t, v)| (t, v.to_bits())).collect();
            prop_assert_eq!(got, expected);
            prop_assert_eq!(by_drain.error(), by_next.error());
            prop_assert_eq!(by_drain.next(), None);
        }
    }
}
