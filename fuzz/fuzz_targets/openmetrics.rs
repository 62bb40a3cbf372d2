#![no_main]
//! OpenMetrics text: arbitrary bytes through the streaming parser and
//! promtool's backfill rules. Must never panic; every error names a line
//! inside the input.
use ferrite_textparse::{backfill, Parser};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let lines = 1 + data.iter().filter(|&&c| c == b'\n').count();
    for entry in Parser::new(data) {
        if let Err(e) = entry {
            assert!(e.line >= 1 && e.line <= lines);
            let _ = e.to_string();
        }
    }
    match backfill::samples(data) {
        Ok(samples) => {
            for s in samples {
                assert!(!s.labels.is_empty());
                assert!(s.labels.windows(2).all(|w| w[0].name < w[1].name));
            }
        }
        Err(e) => assert!(e.line >= 1 && e.line <= lines),
    }
});
