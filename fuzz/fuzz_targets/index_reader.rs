#![no_main]
// Placeholder: filled in with the decoder it targets.
libfuzzer_sys::fuzz_target!(|_data: &[u8]| {});
