//! `max_samples` bounds what a query holds before it holds it: step arrays
//! (a subquery's, nested ones together), selected samples spread over those
//! steps, and aggregation cells are refused as they would pass the limit,
//! not after they were built. A counting allocator measures the most the
//! process held during each query.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use ferrite_promql::{Engine, EngineOptions, Error, Labels, MemStorage, Value};

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(n: usize) {
    let now = LIVE.fetch_add(n, Ordering::Relaxed) + n;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

// SAFETY: every call is passed on to the system allocator unchanged; only
// the sizes are counted.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(layout);
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = System.realloc(ptr, layout, new_size);
        if !p.is_null() {
            if new_size >= layout.size() {
                grew(new_size - layout.size());
            } else {
                LIVE.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        p
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

const MAX_SAMPLES: usize = 1_000_000;

/// 200 series `x{i="..."}` with a sample every 10 s for 2 h.
fn storage() -> MemStorage {
    let mut db = MemStorage::new();
    for i in 0..200 {
        let labels = Labels::from_pairs(&[("__name__", "x"), ("i", &i.to_string())]);
        for t in 0..720 {
            db.add(labels.clone(), t * 10_000, 1.0);
        }
    }
    db
}

/// Queries run one at a time: they share the counters.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Runs `q` at 2 h and returns its outcome with the most it made the
/// process hold above what it held before (bytes).
fn run(db: &MemStorage, q: &str) -> (Result<Value, Error>, usize) {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let engine = Engine::new(EngineOptions {
        max_samples: MAX_SAMPLES,
        ..EngineOptions::default()
    });
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let res = engine.instant_query(db, q, 7_200_000).map(|r| r.value);
    (res, PEAK.load(Ordering::Relaxed) - before)
}

fn assert_refused(db: &MemStorage, q: &str, ceiling: usize) {
    let (res, peak) = run(db, q);
    match res {
        Err(Error::TooManySamples(_)) => {}
        other => panic!("{q}: {other:?}"),
    }
    assert!(peak < ceiling, "{q}: held {peak} bytes");
}

#[test]
fn queries_are_refused_before_they_hold_more_than_the_limit() {
    let db = storage();
    // 360 million steps: refused before the step array exists (without
    // the limit: 24 GB and the process killed).
    assert_refused(&db, "max_over_time(vector(1)[100h:1ms])", 16 << 20);
    // 600,000 steps twice over: each within the limit, together not.
    assert_refused(
        &db,
        "max_over_time(max_over_time(vector(1)[10m:1ms])[10m:1ms])",
        128 << 20,
    );
    // 600,000 steps of 200 series that each have a sample at every step.
    assert_refused(&db, "max_over_time(x[10m:1ms])", 256 << 20);
    assert_refused(&db, "max_over_time(rate(x[1m])[10m:1ms])", 256 << 20);
    // 200 groups of 600,000 cells.
    assert_refused(&db, "max_over_time(sum by (i) (x)[10m:1ms])", 256 << 20);
}

#[test]
fn queries_within_the_limit_are_answered() {
    let db = storage();
    // 600 steps of 200 series, and one group of 600,000 cells.
    for q in [
        "max_over_time(x[10m:1s])",
        "max_over_time(sum(x)[10m:1ms])",
        "count(count_over_time(x[1h]))",
    ] {
        let (res, _) = run(&db, q);
        match res {
            Ok(Value::Vector(v)) => assert!(!v.is_empty(), "{q}"),
            other => panic!("{q}: {other:?}"),
        }
    }
}
