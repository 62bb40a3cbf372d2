#![no_main]
//! The protobuf format as a scrape reads it: arbitrary bytes through the
//! streaming parser, in each of the scrape loop's histogram modes (with
//! and without the conversion of classic histograms to NHCB), every
//! series' labels and every native histogram. Must never panic; metadata
//! names and texts are pieces of the input; a series' bytes hold its
//! family's name and its labels `__name__`; an error has a message, and
//! comes again.
use ferrite_model::{FloatHistogram, Histogram};
use ferrite_textparse::protobuf::{ProtoEntry, ProtoOptions, ProtoParser};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let input = data.as_ptr_range();
    let within = |s: &[u8]| {
        let r = s.as_ptr_range();
        s.is_empty() || (input.start <= r.start && r.end <= input.end)
    };
    let modes = [(true, false), (false, false), (false, true)];
    for ((ignore, keep), convert) in modes.into_iter().flat_map(|m| [(m, false), (m, true)]) {
        let mut p = ProtoParser::new(
            data,
            ProtoOptions {
                ignore_native_histograms: ignore,
                keep_classic_histograms: keep,
                convert_classic_histograms_to_nhcb: convert,
            },
        );
        let mut labels = Vec::new();
        let (mut h, mut fh) = (Histogram::default(), FloatHistogram::default());
        loop {
            match p.next_entry() {
                Ok(None) => break,
                Ok(Some(ProtoEntry::Help { metric, text })) => {
                    assert!(within(metric) && within(text));
                }
                Ok(Some(ProtoEntry::Unit { metric, unit })) => {
                    assert!(within(metric) && within(unit) && !unit.is_empty());
                }
                Ok(Some(ProtoEntry::Type { metric, .. })) => assert!(within(metric)),
                Ok(Some(e)) => {
                    p.labels(&mut labels);
                    assert!(labels.iter().any(|(n, _)| n == "__name__"));
                    let name = p.family_name();
                    assert!(name.is_empty() || p.series().windows(name.len()).any(|w| w == name));
                    if let ProtoEntry::Histogram { .. } = e {
                        // Native, or converted from a classic one.
                        assert!(!ignore || convert);
                        p.histogram(&mut h, &mut fh);
                    }
                }
                Err(e) => {
                    assert!(!e.as_bytes().is_empty());
                    assert_eq!(p.next_entry(), Err(e));
                    break;
                }
            }
        }
    }
});
