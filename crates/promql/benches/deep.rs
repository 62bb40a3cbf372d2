//! What the nesting limits cost: the text scan every new query goes through,
//! and parsing and evaluating queries at the limits (the longest any
//! request can make the parser and evaluator work on one query).
//! `cargo bench -p ferrite-promql --bench deep`

use divan::{black_box, Bencher};
use ferrite_promql::nesting::{check, scan, MAX_NESTING_DEPTH};
use ferrite_promql::{parse, Engine, Labels, MemStorage};

fn main() {
    divan::main();
}

fn wrap(open: &str, inner: &str, close: &str, n: usize) -> String {
    format!("{}{inner}{}", open.repeat(n), close.repeat(n))
}

/// The deepest `build(n)` the limits accept.
fn deepest(build: fn(usize) -> String) -> String {
    let mut n = MAX_NESTING_DEPTH;
    while check(&build(n)).is_err() {
        n -= 1;
    }
    build(n)
}

const DASHBOARD_QUERY: &str = r#"sum by (job, instance) (rate(http_requests_total{job=~"api|web", code!~"5.."}[5m])) / on (job) group_left sum by (job) (rate(http_requests_total[5m]))"#;

/// The scan a query's text goes through before it is parsed.
#[divan::bench]
fn scan_dashboard_query() -> usize {
    scan(black_box(DASHBOARD_QUERY)).depth
}

const SHAPES: &[&str] = &[
    "sum",
    "topk",
    "call",
    "parentheses",
    "binary chain",
    "subqueries",
];

fn shape(name: &str) -> String {
    deepest(match name {
        "sum" => |n| wrap("sum(", "x", ")", n),
        "topk" => |n| wrap("topk(5, ", "x", ")", n),
        "call" => |n| wrap("abs(", "x", ")", n),
        "parentheses" => |n| wrap("(", "x", ")", n),
        "binary chain" => |n| format!("x{}", " + x".repeat(n)),
        _ => |n| wrap("max_over_time(", "x", "[1m:10s])", n),
    })
}

/// Parsing (and dropping) the deepest query of each shape the limits
/// accept. These texts are too long to be cached.
#[divan::bench(args = SHAPES, sample_count = 5, sample_size = 1)]
fn parse_at_the_limit(bencher: Bencher, name: &str) {
    let q = shape(name);
    bencher.bench(|| parse(black_box(&q)).map(|e| e.depth()));
}

/// Parsing and evaluating it over one series.
#[divan::bench(args = SHAPES, sample_count = 5, sample_size = 1)]
fn instant_query_at_the_limit(bencher: Bencher, name: &str) {
    let q = shape(name);
    let mut db = MemStorage::new();
    for i in 0..30 {
        db.add(Labels::from_pairs(&[("__name__", "x")]), i * 10_000, 2.0);
    }
    let engine = Engine::default();
    bencher.bench(|| engine.instant_query(&db, black_box(&q), 290_000).is_ok());
}
