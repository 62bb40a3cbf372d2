#![no_main]
//! Remote write: arbitrary bytes as a 1.0 or 2.0 request (first byte picks
//! the message, and whether the rest is the snappy body or the protobuf
//! itself). Must never panic; whatever decodes must render.
use ferrite_remote::cost::Budget;
use ferrite_remote::decode::{convert_v1, convert_v2};
use ferrite_remote::{decode_request, decode_v1, decode_v2, text, DecodeOptions};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let v2 = mode & 1 == 1;
    let opts = DecodeOptions::default();
    let res = if mode & 2 == 0 {
        let ct = if v2 {
            "application/x-protobuf;proto=io.prometheus.write.v2.Request"
        } else {
            "application/x-protobuf"
        };
        decode_request(Some(ct), Some("snappy"), rest, &opts)
    } else if v2 {
        let mut budget = Budget::for_body(rest.len(), opts.memory_per_body_byte);
        decode_v2(rest).and_then(|r| convert_v2(&r, opts.validation, &mut budget))
    } else {
        decode_v1(rest).map(|r| convert_v1(&r, opts.validation))
    };
    if let Ok(req) = &res {
        let _ = req.verdict();
        let _ = req.stats().headers();
    }
    let _ = text::render_response(&res);
});
