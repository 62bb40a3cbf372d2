//! Arbitrary bytes as an index file: opening and every read path (symbols,
//! label names and values, postings and their union, series decoding) must
//! return errors, never panic or read out of bounds. Seed the corpus with
//! `crates/index/testdata/*.index` to start from valid files.
#![no_main]

use ferrite_index::postings::expand;
use ferrite_index::IndexReader;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Ok(r) = IndexReader::from_bytes(data) else {
        return;
    };
    let _ = ferrite_index::text::dump(&r);
    for id in [0, 1, 31, 32, 33, 64, u32::MAX] {
        let _ = r.lookup_symbol(id);
    }
    let (mut labels, mut chunks) = (Vec::new(), Vec::new());
    for id in [0u64, 1, 2, 3, 7, u64::MAX / 16, u64::MAX] {
        let _ = r.series(id, &mut labels, Some(&mut chunks));
    }
    for name in r.label_names() {
        let _ = r.reverse_lookup(name);
        if let Ok(values) = r.sorted_label_values(name) {
            if let Ok(mut p) = r.postings(name, &values) {
                let _ = expand(&mut *p);
            }
            let _ = r.postings(name, &[b"", b"\xff"]);
        }
    }
});
