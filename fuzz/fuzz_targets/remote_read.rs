#![no_main]
//! Remote read: arbitrary bytes as a request body (snappy, then protobuf)
//! and as a streamed response (frames). Neither may panic; a decoded
//! request negotiates a response type or says why not, and frames read
//! back re-encode to the same bytes.
use ferrite_remote::read::{decode_read_request, negotiate, put_frame, read_frames};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(req) = decode_read_request(data) {
        let _ = negotiate(&req.accepted_response_types);
    }
    if let Some(frames) = read_frames(data) {
        let mut again = Vec::new();
        for f in &frames {
            put_frame(&mut again, f);
        }
        assert_eq!(read_frames(&again), Some(frames));
    }
});
