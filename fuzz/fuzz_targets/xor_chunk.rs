//! Arbitrary bytes as an XOR chunk: iterating, seeking and reopening for
//! appends must never panic, iteration must stop at the header count or
//! report an error, bulk decoding (`drain_into`) must hand out exactly
//! what iteration does, and a chunk that `from_bytes` accepts must stay
//! decodable after one more sample.

#![no_main]

use ferrite_chunkenc::{XorChunk, XorIterator};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut it = XorIterator::new(data);
    let mut iterated = Vec::new();
    for (t, v) in it.by_ref() {
        iterated.push((t, v.to_bits()));
    }
    let decoded = iterated.len();
    let last_t = iterated.last().map(|s| s.0);
    let announced = usize::from(it.num_samples());
    assert!(decoded <= announced);
    assert!(decoded == announced || it.error().is_some());

    let mut bulk = XorIterator::new(data);
    let mut drained = Vec::new();
    bulk.drain_into(&mut drained);
    let drained: Vec<(i64, u64)> = drained.iter().map(|&(t, v)| (t, v.to_bits())).collect();
    assert_eq!(drained, iterated);
    assert_eq!(bulk.error(), it.error());

    // Seek to a timestamp taken from the input, then read on.
    let target = data
        .get(2..10)
        .and_then(|b| <[u8; 8]>::try_from(b).ok())
        .map_or(0, i64::from_le_bytes);
    let mut it = XorIterator::new(data);
    if let Some((t, _)) = it.seek(target) {
        assert!(t >= target);
        assert_eq!(it.seek(i64::MIN).map(|s| s.0), Some(t));
    }
    for _ in it.by_ref() {}

    if let Ok(mut chunk) = XorChunk::from_bytes(data.to_vec()) {
        // Accepted bytes decode completely.
        let mut it = chunk.iter();
        assert_eq!(it.by_ref().count(), announced);
        assert!(it.error().is_none());
        assert_eq!(chunk.bytes(), data);

        let t = last_t.unwrap_or(0).wrapping_add(15_000);
        chunk.append(t, 0.25);
        // A full chunk ignores the append.
        let expected = if announced == usize::from(u16::MAX) {
            announced
        } else {
            announced + 1
        };
        let mut it = chunk.iter();
        let mut last = None;
        let mut n = 0;
        for sample in it.by_ref() {
            n += 1;
            last = Some(sample);
        }
        assert!(it.error().is_none());
        assert_eq!(n, expected);
        if expected > announced {
            assert_eq!(
                last.map(|(t, v)| (t, v.to_bits())),
                Some((t, 0.25f64.to_bits()))
            );
        }
    }
});
