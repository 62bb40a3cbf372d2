//! XOR chunk round trips and robustness.

use ferrite_chunkenc::{XorChunk, XorIterator};
use proptest::prelude::*;

fn encode(samples: &[(i64, u64)]) -> XorChunk {
    let mut c = XorChunk::new();
    for &(t, v) in samples {
        c.append(t, f64::from_bits(v));
    }
    c
}

fn decode(bytes: &[u8]) -> Vec<(i64, u64)> {
    let mut it = XorIterator::new(bytes);
    let out: Vec<(i64, u64)> = it.by_ref().map(|(t, v)| (t, v.to_bits())).collect();
    assert!(it.error().is_none(), "{:?}", it.error());
    out
}

#[test]
fn empty_chunk_is_two_zero_bytes() {
    let c = XorChunk::new();
    assert_eq!(c.bytes(), &[0, 0]);
    assert_eq!(decode(c.bytes()), vec![]);
}

#[test]
fn edge_values_round_trip() {
    let stale = 0x7ff0_0000_0000_0002u64;
    let samples = vec![
        (-5_000_000_000i64, 0u64),
        (-4_999_999_000, f64::NAN.to_bits()),
        (-4_999_998_000, stale),
        (0, (-0.0f64).to_bits()),
        (1, f64::INFINITY.to_bits()),
        (2, f64::MIN_POSITIVE.to_bits()),
        (1 << 40, 1.5f64.to_bits()),
        ((1 << 40) + 8192, 1.5f64.to_bits()),
        ((1 << 40) + 8192 * 2 - 8191, 2.5f64.to_bits()),
        (i64::MAX / 2, u64::MAX),
        (i64::MAX / 2 + 1, 1),
    ];
    let c = encode(&samples);
    assert_eq!(c.num_samples() as usize, samples.len());
    assert_eq!(decode(c.bytes()), samples);
}

#[test]
fn seek_finds_first_sample_at_or_after() {
    let samples: Vec<(i64, u64)> = (0..120)
        .map(|i| (i * 15_000, (i as f64).to_bits()))
        .collect();
    let c = encode(&samples);
    let mut it = c.iter();
    assert_eq!(it.seek(30_001).map(|s| s.0), Some(45_000));
    assert_eq!(it.seek(0).map(|s| s.0), Some(45_000));
    assert_eq!(it.next().map(|s| s.0), Some(60_000));
    assert_eq!(it.seek(10_000_000), None);
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
    assert!(it.error().is_some());
    assert!(XorChunk::from_bytes(b[..b.len() / 2].to_vec()).is_err());
}

fn samples_strategy() -> impl Strategy<Value = Vec<(i64, u64)>> {
    (
        any::<i32>(),
        proptest::collection::vec((1i64..2_000_000_000, any::<u64>(), 0u8..4), 0..300),
    )
        .prop_map(|(start, steps)| {
            let mut t = start as i64;
            let mut last = 0u64;
            steps
                .into_iter()
                .map(|(d, v, kind)| {
                    // Mix regular and irregular deltas and value patterns.
                    t += match kind {
                        0 => 15_000,
                        1 => d % 100 + 1,
                        _ => d,
                    };
                    let v = match kind {
                        0 => last,
                        1 => (f64::from_bits(last) + 1.0).to_bits(),
                        _ => v,
                    };
                    last = v;
                    (t, v)
                })
                .collect()
        })
}

proptest! {
    #[test]
    fn round_trip(samples in samples_strategy()) {
        let c = encode(&samples);
        prop_assert_eq!(decode(c.bytes()), samples);
    }

    #[test]
    fn reopen_then_append_equals_append_all(samples in samples_strategy(), split in 0usize..300) {
        let split = split.min(samples.len());
        let first = encode(&samples[..split]);
        let mut reopened = XorChunk::from_bytes(first.bytes().to_vec()).unwrap();
        for &(t, v) in &samples[split..] {
            reopened.append(t, f64::from_bits(v));
        }
        let all = encode(&samples);
        prop_assert_eq!(reopened.bytes(), all.bytes());
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400), seek in any::<i64>()) {
        let mut it = XorIterator::new(&bytes);
        for _ in it.by_ref() {}
        let mut it = XorIterator::new(&bytes);
        let _ = it.seek(seek);
        let _ = XorChunk::from_bytes(bytes);
    }
}
