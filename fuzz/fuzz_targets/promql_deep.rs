#![no_main]
//! Deep PromQL expressions, built from the input: each pair of bytes picks
//! a construct (aggregation, call, parentheses, unary minus, binary
//! operator, comparison, set operator, subquery, `@`/`offset` modifiers)
//! and how many times to wrap the expression so far in it (up to 8,160, so
//! inputs reach past the nesting limit). The query is parsed and evaluated
//! over a small storage on a thread with a 256 KiB stack: it must be
//! answered (a result or an error, within the 5 s query timeout plus the
//! bounded parse), never overflow the stack or panic.
use ferrite_promql::{Engine, EngineOptions, Labels, MemStorage};
use libfuzzer_sys::fuzz_target;

/// (before, after) the expression so far.
const WRAPPERS: &[(&str, &str)] = &[
    ("sum(", ")"),
    ("sum by (a) (", ")"),
    ("topk(2, ", ")"),
    ("count_values(\"v\", ", ")"),
    ("abs(", ")"),
    ("label_replace(", ", \"b\", \"$1\", \"a\", \"(.*)\")"),
    ("(", ")"),
    ("-", ""),
    ("", " + x"),
    ("x * ", ""),
    ("", " ^ 1"),
    ("", " > bool 0"),
    ("", " or x"),
    ("", " and on(a) x"),
    ("max_over_time(", "[1m:10s])"),
    ("max_over_time(", "[1m:] @ 100 offset 10s)"),
    ("rate((", ")[1m:])"),
    ("", " unless y"),
];

fn build(data: &[u8]) -> String {
    let mut expr = String::from("x");
    for pair in data.chunks(2) {
        let (before, after) = WRAPPERS[usize::from(pair[0]) % WRAPPERS.len()];
        let times = usize::from(*pair.get(1).unwrap_or(&1)) * 32 + 1;
        if expr.len() + times * (before.len() + after.len()) > 4 << 20 {
            break;
        }
        expr = format!("{}{expr}{}", before.repeat(times), after.repeat(times));
    }
    expr
}

fuzz_target!(|data: &[u8]| {
    let query = build(data);
    std::thread::Builder::new()
        .stack_size(256 << 10)
        .spawn(move || {
            let mut db = MemStorage::new();
            for i in 0..10 {
                db.add(
                    Labels::from_pairs(&[("__name__", "x"), ("a", "1")]),
                    i * 10_000,
                    2.0,
                );
                db.add(
                    Labels::from_pairs(&[("__name__", "y"), ("a", "2")]),
                    i * 10_000,
                    3.0,
                );
            }
            let engine = Engine::new(EngineOptions {
                timeout: std::time::Duration::from_secs(5),
                ..EngineOptions::default()
            });
            let _ = engine.instant_query(&db, &query, 90_000);
        })
        .expect("spawning the query thread")
        .join()
        .expect("the query thread panicked");
});
