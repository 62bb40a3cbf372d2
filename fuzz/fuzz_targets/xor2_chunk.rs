//! Arbitrary bytes as an XOR2 chunk: iterating (with start timestamps),
//! seeking and reopening for appends must never panic, iteration must stop
//! at the header count or report an error, and a chunk that `from_bytes`
//! accepts must stay decodable after one more sample, its old samples
//! unchanged.

#![no_main]

use ferrite_chunkenc::{Xor2Chunk, Xor2Iterator};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut it = Xor2Iterator::new(data);
    let mut decoded = Vec::new();
    while let Some((st, t, v)) = it.next_with_st() {
        assert_eq!(it.at_st(), st);
        decoded.push((st, t, v.to_bits()));
    }
    let announced = usize::from(it.num_samples());
    assert!(decoded.len() <= announced);
    assert!(decoded.len() == announced || it.error().is_some());

    // Seek to a timestamp taken from the input, then read on.
    let target = data
        .get(3..11)
        .and_then(|b| <[u8; 8]>::try_from(b).ok())
        .map_or(0, i64::from_le_bytes);
    let mut it = Xor2Iterator::new(data);
    if let Some((t, _)) = it.seek(target) {
        assert!(t >= target);
        assert_eq!(it.seek(i64::MIN).map(|s| s.0), Some(t));
    }
    for _ in it.by_ref() {}

    if let Ok(mut chunk) = Xor2Chunk::from_bytes(data.to_vec()) {
        // Accepted bytes decode completely.
        assert_eq!(decoded.len(), announced);
        assert_eq!(chunk.bytes(), data);

        let t = decoded.last().map_or(0, |s| s.1).wrapping_add(15_000);
        let st = target;
        chunk.append(st, t, 0.25);
        let mut it = chunk.iter();
        let mut after = Vec::new();
        while let Some((st, t, v)) = it.next_with_st() {
            after.push((st, t, v.to_bits()));
        }
        assert!(it.error().is_none());
        // A full chunk ignores the append.
        if announced == usize::from(u16::MAX) {
            assert_eq!(after, decoded);
        } else {
            assert_eq!(after.len(), announced + 1);
            assert_eq!(after[..announced], decoded[..]);
            assert_eq!(after.last(), Some(&(st, t, 0.25f64.to_bits())));
        }
    }
});
