//! Queries nested as deep as the limit allows, of every construct, answer
//! correctly on a thread with a small stack; deeper ones are refused with
//! an error naming the limit, without parsing them.

use ferrite_promql::nesting::{check, scan, MAX_NESTING_DEPTH};
use ferrite_promql::{Engine, Labels, MemStorage, Value};

/// A construct nested `n` deep, with the value the query has over `x` = 2.
struct Construct {
    name: &'static str,
    build: fn(usize) -> String,
    value: fn(usize) -> f64,
}

fn wrap(open: &str, inner: &str, close: &str, n: usize) -> String {
    format!("{}{inner}{}", open.repeat(n), close.repeat(n))
}

const CONSTRUCTS: &[Construct] = &[
    Construct {
        name: "aggregation",
        build: |n| wrap("sum(", "x", ")", n),
        value: |_| 2.0,
    },
    Construct {
        name: "aggregation with grouping and parameter",
        build: |n| wrap("topk by (a) (5, ", "x", ")", n),
        value: |_| 2.0,
    },
    Construct {
        name: "function call",
        build: |n| wrap("abs(", "x", ")", n),
        value: |_| 2.0,
    },
    Construct {
        name: "function call with more arguments",
        build: |n| wrap("label_replace(", "x", ", \"a\", \"b\", \"c\", \"d\")", n),
        value: |_| 2.0,
    },
    Construct {
        name: "parentheses",
        build: |n| wrap("(", "x", ")", n),
        value: |_| 2.0,
    },
    Construct {
        name: "unary minus",
        build: |n| format!("{}x", "-".repeat(n)),
        value: |n| if n.is_multiple_of(2) { 2.0 } else { -2.0 },
    },
    Construct {
        name: "binary chain over vectors",
        build: |n| format!("x{}", " + x".repeat(n)),
        value: |n| 2.0 * (n + 1) as f64,
    },
    Construct {
        name: "binary chain over scalars",
        build: |n| format!("2{}", " * 1".repeat(n)),
        value: |_| 2.0,
    },
    Construct {
        name: "right-associative power chain",
        build: |n| format!("x{}", " ^ 1".repeat(n)),
        value: |_| 2.0,
    },
    Construct {
        name: "comparison chain",
        build: |n| format!("x{}", " > bool 0".repeat(n)),
        value: |_| 1.0,
    },
    Construct {
        name: "set operator chain",
        build: |n| format!("x{}", " or x".repeat(n)),
        value: |_| 2.0,
    },
    Construct {
        name: "nested subqueries",
        build: |n| wrap("max_over_time(", "x", "[1s:1s])", n),
        value: |_| 2.0,
    },
    Construct {
        name: "nested subqueries with @ and offset",
        build: |n| wrap("max_over_time(", "x", "[2s:1s] @ 100 offset 1s)", n),
        value: |_| 2.0,
    },
    Construct {
        name: "mixed",
        build: |n| wrap("-(sum(abs(", "x", " + 0)) * 1)", n),
        value: |n| if n.is_multiple_of(2) { 2.0 } else { -2.0 },
    },
];

fn storage() -> MemStorage {
    let mut db = MemStorage::new();
    for i in 0..=30 {
        db.add(
            Labels::from_pairs(&[("__name__", "x"), ("a", "1")]),
            i * 10_000,
            2.0,
        );
    }
    db
}

/// The most levels of `c` whose text stays within the nesting limits.
fn deepest(c: &Construct) -> usize {
    let per_level = scan(&(c.build)(2)).depth - scan(&(c.build)(1)).depth;
    let mut n = (MAX_NESTING_DEPTH - scan(&(c.build)(0)).depth) / per_level;
    while check(&(c.build)(n)).is_err() {
        n -= 1;
    }
    n
}

/// Runs `f` on a thread with a small stack, as a request's thread might be.
fn on_small_stack<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> R {
    std::thread::Builder::new()
        .stack_size(256 << 10)
        .spawn(f)
        .expect("spawning a test thread")
        .join()
        .expect("the test thread panicked")
}

fn scalar_or_single(v: &Value) -> f64 {
    match v {
        Value::Scalar { v, .. } => *v,
        Value::Vector(v) if v.len() == 1 => v[0].f,
        Value::Matrix(m) if m.len() == 1 => m[0].points[0].1,
        other => panic!("unexpected result {other:?}"),
    }
}

#[test]
fn deep_queries_of_every_construct() {
    for c in CONSTRUCTS {
        let n = deepest(c);
        let q = (c.build)(n);
        assert!(
            scan(&q).depth + 4 > MAX_NESTING_DEPTH || check(&(c.build)(n + 1)).is_err(),
            "{}: {n} levels stay far below the limits",
            c.name
        );
        let (name, want) = (c.name, (c.value)(n));
        on_small_stack(move || {
            let db = storage();
            let eng = Engine::default();
            let res = eng
                .instant_query(&db, &q, 100_000)
                .unwrap_or_else(|e| panic!("{name}, {n} levels: {e}"));
            assert_eq!(scalar_or_single(&res.value), want, "{name}, {n} levels");
            let res = eng
                .range_query(&db, &q, 100_000, 120_000, 10_000)
                .unwrap_or_else(|e| panic!("{name}, {n} levels, range: {e}"));
            assert_eq!(
                scalar_or_single(&res.value),
                want,
                "{name}, {n} levels, range"
            );
        });
    }
}

#[test]
fn deeper_queries_are_refused_naming_the_limit() {
    for c in CONSTRUCTS {
        for n in [deepest(c) + 2, 100_000] {
            let q = (c.build)(n);
            let name = c.name;
            on_small_stack(move || {
                let db = storage();
                let err = Engine::default()
                    .instant_query(&db, &q, 100_000)
                    .expect_err(name)
                    .to_string();
                assert!(err.contains("the limit is"), "{name}, {n} levels: {err}");
            });
        }
    }
}

#[test]
fn long_flat_queries_are_answered() {
    // A regex alternation of 5,000 names (about 50 KB, a dashboard
    // variable's "All") and a selector with 5,000 matchers: long, not deep.
    let names: Vec<String> = (0..5_000).map(|i| format!("host-{i}")).collect();
    let alternation = format!("x{{a=~\"1|{}\"}}", names.join("|"));
    let matchers: Vec<String> = (0..5_000).map(|i| format!("b{i}!=\"v\"")).collect();
    let many = format!("x{{{}}}", matchers.join(","));
    on_small_stack(move || {
        let db = storage();
        for q in [alternation, many] {
            let res = Engine::default()
                .instant_query(&db, &q, 100_000)
                .unwrap_or_else(|e| panic!("{}", &e.to_string()[..200]));
            assert_eq!(scalar_or_single(&res.value), 2.0);
        }
    });
}
