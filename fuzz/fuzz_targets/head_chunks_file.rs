//! Arbitrary bytes as a `chunks_head/` file: scanning must never panic,
//! every chunk it reports must read back at its ref, and reading a chunk
//! at any offset must fail cleanly rather than panic.
//!
//! Works in memory through the same parser `ChunkDiskMapper` uses, so no
//! file I/O (and no fsync) slows the fuzzer down.

#![no_main]

use ferrite_tsdb::head_chunks::format::parse_chunk;
use ferrite_tsdb::head_chunks::{scan_file_bytes, DamageKind};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut offsets = Vec::new();
    let scan = scan_file_bytes(1, data, &mut |meta| {
        assert_eq!(meta.chunk_ref.seq(), 1);
        offsets.push(meta.chunk_ref.offset() as usize);
    });
    assert_eq!(scan.chunks, offsets.len() as u64);
    assert!(scan.valid_end <= data.len() as u64);
    if matches!(
        scan.damage,
        Some(
            DamageKind::BadMagic(_) | DamageKind::BadVersion(_) | DamageKind::HeaderTooShort { .. }
        )
    ) {
        assert!(offsets.is_empty());
    }
    for &off in &offsets {
        let chunk = parse_chunk(data, off).expect("a reported chunk must parse");
        assert!(chunk.data.end <= data.len());
    }
    // Refs that point anywhere at all.
    for off in [
        0,
        1,
        7,
        8,
        9,
        data.len() / 2,
        data.len().saturating_sub(1),
        data.len(),
    ] {
        let _ = parse_chunk(data, off);
    }
});
