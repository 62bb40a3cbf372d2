#![no_main]
//! The Prometheus text format (0.0.4): arbitrary bytes through the
//! streaming parser a scrape uses, and every series' labels. Must never
//! panic; a series' bytes are a piece of the input from the start of a
//! line, its labels start with the metric name, and an error has a
//! message.
use ferrite_textparse::promtext::{TextEntry, TextParser};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let input = data.as_ptr_range();
    let mut p = TextParser::new(data);
    let mut labels = Vec::new();
    loop {
        match p.next_entry() {
            Ok(None) => break,
            Ok(Some(TextEntry::Series(s))) => {
                let r = s.series.as_ptr_range();
                assert!(!s.series.is_empty() && input.start <= r.start && r.end <= input.end);
                let at = r.start as usize - input.start as usize;
                assert!(at == 0 || data[at - 1] == b'\n');
                assert!(s.timestamp.map_or(true, |t| t >= 0));
                if p.labels(&mut labels).is_ok() {
                    assert_eq!(labels[0].0, "__name__");
                }
            }
            Ok(Some(_)) => {}
            Err(e) => {
                assert!(!e.0.is_empty());
                break;
            }
        }
    }
});
