#![no_main]
//! The HTTP API's request parameters: arbitrary bytes as a raw query string
//! (percent-decoding, `query` through the PromQL parser, `time`, `start`,
//! `end`, `step`, `timeout`, `match[]`, `limit`), then, when UTF-8, as the
//! value of each parameter on its own and split in three as a range
//! query's `start`, `end` and `step`. Must never panic.
//!
//! The panic hook libfuzzer-sys installs is replaced by a silent one (a
//! panic that escapes still aborts, since libfuzzer-sys aborts on any
//! panic leaving the target).
use ferrite_server::query::{check_params, check_query, parse_duration, parse_time, range_params};
use ferrite_server::selector::parse_selector;
use ferrite_server::status::tsdb_limit;
use libfuzzer_sys::fuzz_target;

static QUIET_PANICS: std::sync::Once = std::sync::Once::new();

fuzz_target!(|data: &[u8]| {
    QUIET_PANICS.call_once(|| std::panic::set_hook(Box::new(|_| {})));
    let _ = check_params(data);
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    let _ = parse_time(s);
    let _ = parse_duration(s);
    let _ = parse_selector(s);
    let _ = tsdb_limit(Some(s));
    let _ = check_query(s);
    let mut parts = s.splitn(3, '\n');
    if let (Some(start), Some(end), Some(step)) = (parts.next(), parts.next(), parts.next()) {
        let _ = range_params(start, end, step);
    }
});
