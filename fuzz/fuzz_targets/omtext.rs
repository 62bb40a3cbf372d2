#![no_main]
//! OpenMetrics as a scrape reads it: arbitrary bytes through the streaming
//! parser, every series' labels and exemplar. Must never panic; a series'
//! bytes are a piece of the input from the start of a line, its labels
//! start with the metric name, exemplar labels are pieces of the input,
//! and an error has a message.
use ferrite_textparse::omtext::{OmEntry, OmParser};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let input = data.as_ptr_range();
    let within = |s: &[u8]| {
        let r = s.as_ptr_range();
        input.start <= r.start && r.end <= input.end
    };
    let mut p = OmParser::new(data);
    let mut labels = Vec::new();
    loop {
        match p.next_entry() {
            Ok(None) => break,
            Ok(Some(OmEntry::Series(s))) => {
                assert!(!s.series.is_empty() && within(s.series));
                let at = s.series.as_ptr() as usize - input.start as usize;
                assert!(at == 0 || data[at - 1] == b'\n' || data[at - 1] == 0);
                if p.labels(&mut labels).is_ok() {
                    assert_eq!(labels[0].0, "__name__");
                }
                if let Some(e) = p.exemplar() {
                    assert!(e.labels.iter().all(|(n, v)| within(n) && within(v)));
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
