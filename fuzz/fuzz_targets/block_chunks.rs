#![no_main]
//! Block chunk segments: arbitrary bytes as one or two segment files, read
//! by walking every chunk and by arbitrary refs. Must never panic.
use ferrite_block::chunks::{ChunkReader, ChunkRef};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // First byte: where to split into two segments (0 = one segment).
    let Some((&split, rest)) = data.split_first() else {
        return;
    };
    let segments = match split as usize {
        0 => vec![rest.to_vec()],
        s => {
            let s = s.min(rest.len());
            vec![rest[..s].to_vec(), rest[s..].to_vec()]
        }
    };
    let Ok(r) = ChunkReader::from_bytes(segments) else {
        return;
    };
    for c in r.iter() {
        let _ = c;
    }
    let _ = ferrite_block::text::dump_chunks(&r);
    for w in rest.chunks_exact(8).take(32) {
        let rf = ChunkRef(u64::from_le_bytes(w.try_into().unwrap_or_default()));
        let _ = r.chunk(rf);
        let _ = r.chunk(ChunkRef(rf.0 & 0x1_0000_01ff));
        let _ = r.chunk_unchecked(ChunkRef(rf.0 & 0x1ff));
    }
});
