#![no_main]
//! meta.json: arbitrary bytes parsed; whatever parses must write and parse
//! back to the same value. Must never panic.
use ferrite_block::BlockMeta;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(m) = BlockMeta::from_json(data) {
        let j = m.to_json();
        let back = BlockMeta::from_json(&j).expect("our own JSON parses");
        assert_eq!(back, m);
        let _ = ferrite_block::text::dump_meta(&m);
    }
});
