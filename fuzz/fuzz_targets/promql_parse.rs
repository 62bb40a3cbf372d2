#![no_main]
//! PromQL's parser on arbitrary text: it must answer (a tree or an error),
//! never panic, and a tree it gives must print as text that parses to a
//! tree printed the same way. Runs on a thread with a 256 KiB stack, as
//! deep inputs are bounded before parsing (`nesting`).
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(query) = std::str::from_utf8(data) else {
        return;
    };
    let query = query.to_owned();
    std::thread::Builder::new()
        .stack_size(256 << 10)
        .spawn(move || {
            let Ok(parsed) = ferrite_promql::parse(&query) else {
                return;
            };
            let printed = parsed.to_string();
            let again = ferrite_promql::parse(&printed)
                .unwrap_or_else(|e| panic!("{query:?} printed as {printed:?}, which fails: {e}"));
            assert_eq!(again.to_string(), printed, "{query:?}");
        })
        .expect("spawning the parse thread")
        .join()
        .expect("the parse thread panicked");
});
