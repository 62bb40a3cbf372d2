#![no_main]
//! `prometheus.yml` text and relabeling rules: arbitrary bytes through the
//! configuration reader and the relabeling rules' reader, validation and
//! application. Must never panic; a rule list that reads and validates
//! relabels a label set into labels with no empty value.
use ferrite_config::relabel::{apply, parse_rules};
use ferrite_model::ValidationScheme;
use ferrite_config::Config;
use ferrite_model::Labels;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = Config::parse(text, "fuzz.yml");
    let Ok(rules) = parse_rules(text) else {
        return;
    };
    for names in [ValidationScheme::Utf8, ValidationScheme::Legacy] {
        if rules.iter().all(|r| r.validate(names).is_ok()) {
            let base = Labels::from_pairs(&[("__address__", "host:9100"), ("job", "node"), ("é", "x")]);
            if let Some(out) = apply(&base, &rules, names) {
                assert!(out.iter().all(|l| !l.value.is_empty()));
            }
        }
    }
});
