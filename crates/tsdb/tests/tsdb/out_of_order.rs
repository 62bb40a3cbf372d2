//! Out-of-order samples (`out_of_order_time_window`): accepted inside the
//! window, refused outside it with Prometheus' errors, merged with the
//! in-order data by queries, kept across restarts (WBL and out-of-order
//! head chunks) and moved into blocks by compaction.

use std::collections::BTreeMap;
use std::path::Path;

use ferrite_model::{Histogram, Labels, SampleValue, Span};
use ferrite_tsdb::{AppendError, Db, DbOptions, HeadOptions};

const MIN: i64 = 60_000;
const HOUR: i64 = 60 * MIN;

fn options(window: i64) -> DbOptions {
    DbOptions {
        head: HeadOptions {
            out_of_order_time_window: window,
            ..HeadOptions::default()
        },
        keep_expired_blocks: true,
        ..DbOptions::default()
    }
}

fn histogram(i: i64) -> Histogram {
    Histogram {
        schema: 0,
        count: 2 * i as u64,
        sum: i as f64,
        positive_spans: vec![Span {
            offset: 0,
            length: 2,
        }],
        positive_buckets: vec![i, 0],
        ..Histogram::default()
    }
}

/// Every sample of every series, by label set, as (t, value) with
/// histogram hints cleared (chunks set their own).
type Everything = BTreeMap<String, Vec<(i64, SampleValue)>>;

fn everything(db: &Db) -> Everything {
    let mut out = BTreeMap::new();
    for s in db.querier(i64::MIN, i64::MAX).select(&[]).expect("select") {
        let mut v = Vec::new();
        s.for_each_value(|t, x| {
            let mut x = x.to_owned_value();
            if let SampleValue::Histogram(h) = &mut x {
                h.counter_reset_hint = Default::default();
            }
            v.push((t, x))
        })
        .expect("reads");
        out.insert(s.labels.to_string(), v);
    }
    out
}

/// Asserts equality, reporting only the first difference.
fn assert_same(got: &Everything, want: &Everything, when: &str) {
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>(),
        "{when}: series"
    );
    for (k, w) in want {
        let g = &got[k];
        if let Some(i) = (0..w.len().min(g.len())).find(|&i| g[i] != w[i]) {
            panic!("{when}: {k} sample {i}: got {:?}, want {:?}", g[i], w[i]);
        }
        assert_eq!(g.len(), w.len(), "{when}: {k} sample count");
    }
}

fn wbl_segments(dir: &Path) -> Vec<u32> {
    ferrite_wal::list_segments(&dir.join("wbl"))
        .expect("wbl")
        .iter()
        .map(|s| s.index)
        .collect()
}

/// Appends in-order floats and histograms from 2 h to 6 h every 10 s,
/// then out-of-order ones in between; returns what the database must hold.
fn fill(db: &Db) -> Everything {
    let f = Labels::from_pairs(&[("__name__", "f")]);
    let h = Labels::from_pairs(&[("__name__", "h")]);
    let mut want = Everything::new();
    let mut app = db.appender();
    for i in 0..(4 * HOUR / 10_000) {
        let t = 2 * HOUR + i * 10_000;
        app.append(&f, t, i as f64).expect("in order");
        app.append_histogram(&h, t, histogram(i)).expect("in order");
        want.entry(f.to_string())
            .or_default()
            .push((t, SampleValue::Float(i as f64)));
        want.entry(h.to_string())
            .or_default()
            .push((t, SampleValue::Histogram(Box::new(histogram(i)))));
    }
    app.commit().expect("commits");
    // 100 floats and 40 histograms out of order, newest first, between
    // the in-order ones (5 s after each), in several commits.
    for k in 0..100i64 {
        let t = 4 * HOUR + 5_000 + (99 - k) * 20_000;
        let mut app = db.appender();
        app.append(&f, t, -(k as f64))
            .expect("out of order, in window");
        if k < 40 {
            app.append_histogram(&h, t, histogram(1000 + k))
                .expect("in window");
            want.entry(h.to_string())
                .or_default()
                .push((t, SampleValue::Histogram(Box::new(histogram(1000 + k)))));
        }
        app.commit().expect("commits");
        want.entry(f.to_string())
            .or_default()
            .push((t, SampleValue::Float(-(k as f64))));
    }
    for v in want.values_mut() {
        v.sort_by_key(|s| s.0);
    }
    want
}

#[test]
fn out_of_order_samples_survive_restarts_and_compaction() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let want = {
        let db = Db::open(dir, options(3 * HOUR)).expect("open");
        let want = fill(&db);
        assert_same(&everything(&db), &want, "merged before restart");
        let (min, max) = db.head().out_of_order_time_range().expect("ooo range");
        assert!(min >= 4 * HOUR && max < 5 * HOUR);
        db.close().expect("close");
        want
    };
    assert!(!wbl_segments(dir).is_empty());

    // Restart: out-of-order chunks from chunks_head/, the rest from the WBL.
    let db = Db::open(dir, options(3 * HOUR)).expect("reopen");
    assert!(db.replay_stats().wbl.ooo_mmapped_chunks > 0);
    assert!(db.replay_stats().wbl.samples > 0);
    assert_same(&everything(&db), &want, "after restart");

    // Compaction: the head's oldest range, then the out-of-order samples
    // into their own blocks, then vertical compaction of the overlaps.
    let written = db.compact().expect("compacts");
    assert!(!written.is_empty());
    assert_eq!(db.head().out_of_order_time_range(), None);
    assert!(db.blocks().iter().all(|b| b.meta().min_time >= 2 * HOUR));
    assert_same(&everything(&db), &want, "after compaction");
    db.close().expect("close");

    let db = Db::open(dir, options(3 * HOUR)).expect("reopen after compaction");
    assert_eq!(db.replay_stats().wbl.samples, 0, "WBL truncated");
    assert_same(&everything(&db), &want, "after compaction and restart");
    db.close().expect("close");
}

/// A db with out-of-order window `window` whose one series `{__name__="m"}`
/// has a sample at 10h.
fn newest_at_10h(dir: &std::path::Path, window: i64) -> (Db, Labels) {
    let db = Db::open(dir, options(window)).expect("open");
    let l = Labels::from_pairs(&[("__name__", "m")]);
    let mut app = db.appender();
    app.append(&l, 10 * HOUR, 1.0).expect("appends");
    app.commit().expect("commits");
    (db, l)
}

#[test]
fn samples_outside_the_window_get_prometheus_errors() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (db, l) = newest_at_10h(tmp.path(), HOUR);
    let mut app = db.appender();
    assert_eq!(app.append(&l, 9 * HOUR, 2.0), Ok(1), "exactly the window");
    let err = app.append(&l, 9 * HOUR - 1, 2.0).expect_err("too old");
    assert_eq!(err, AppendError::TooOld);
    assert_eq!(err.to_string(), "too old sample");
    app.commit().expect("commits");
    assert_eq!(
        db.head()
            .stats
            .too_old_samples
            .load(std::sync::atomic::Ordering::Relaxed),
        1
    );

    // Without a window, Prometheus' in-order errors.
    let tmp = tempfile::tempdir().expect("tempdir");
    let (db, _) = newest_at_10h(tmp.path(), 0);
    let mut app = db.appender();
    assert_eq!(
        app.append(&l, 10 * HOUR - 1, 1.0),
        Err(AppendError::OutOfOrder)
    );
    assert_eq!(app.append(&l, 8 * HOUR, 1.0), Err(AppendError::OutOfBounds));
}

#[test]
fn a_duplicate_out_of_order_timestamp_keeps_the_first_value() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (db, l) = newest_at_10h(tmp.path(), HOUR);
    for v in [5.0, 6.0] {
        let mut app = db.appender();
        app.append(&l, 10 * HOUR - MIN, v).expect("in window");
        app.commit().expect("commits");
    }
    let got = everything(&db);
    let v = got.values().next().expect("series");
    assert_eq!(v[0], (10 * HOUR - MIN, SampleValue::Float(5.0)));
    assert_eq!(v.len(), 2);
}

mod model {
    use super::*;
    use proptest::prelude::*;

    /// What a stream of float appends must leave: every timestamp inside
    /// the window when appended. Values are a function of the timestamp:
    /// which of two different values at one timestamp wins when one is in
    /// order and the other out of order is not defined (Prometheus keeps
    /// both and its merges pick either).
    fn expected(appends: &[(i64, f64)], window: i64) -> BTreeMap<i64, f64> {
        let mut held = BTreeMap::new();
        let mut newest = i64::MIN;
        for &(t, v) in appends {
            let in_window = newest == i64::MIN || t >= newest - window;
            if !in_window {
                continue;
            }
            held.entry(t).or_insert(v);
            newest = newest.max(t);
        }
        held
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        /// Random in-order and out-of-order appends (one per commit, so the
        /// window moves with every sample, as the model's does) read back
        /// as the model says, after a restart too, and after compaction.
        #[test]
        fn out_of_order_appends_match_the_model(
            steps in proptest::collection::vec((0i64..400, -3i64..=1), 1..300)
        ) {
            let window = 40 * MIN;
            let tmp = tempfile::tempdir().expect("tempdir");
            let dir = tmp.path();
            let l = Labels::from_pairs(&[("__name__", "m")]);
            // A mostly rising clock with jumps back of up to 3 slots.
            let mut clock = 0i64;
            let mut appends = Vec::new();
            for (i, (jump, back)) in steps.iter().enumerate() {
                clock += jump % 7;
                let t = (clock + back).max(0) * MIN + (i as i64 % 3) * 1000;
                appends.push((t, (t / 1000 % 13) as f64));
            }
            let want = expected(&appends, window);
            {
                let db = Db::open(dir, options(window)).expect("open");
                for &(t, v) in &appends {
                    let mut app = db.appender();
                    // Refusals (too old) are the model's too.
                    if app.append(&l, t, v).is_ok() {
                        app.commit().expect("commits");
                    }
                }
                prop_assert_eq!(floats(&db), want.clone());
                db.close().expect("close");
            }
            let db = Db::open(dir, options(window)).expect("reopen");
            prop_assert_eq!(floats(&db), want.clone());
            db.compact_head_fully().expect("compacts");
            prop_assert_eq!(floats(&db), want.clone());
            db.close().expect("close");
            let db = Db::open(dir, options(window)).expect("reopen");
            prop_assert_eq!(floats(&db), want);
        }
    }

    fn floats(db: &Db) -> BTreeMap<i64, f64> {
        let mut out = BTreeMap::new();
        for s in db.querier(i64::MIN, i64::MAX).select(&[]).expect("select") {
            for (t, v) in s.samples().expect("reads") {
                out.insert(t, v);
            }
        }
        out
    }
}
