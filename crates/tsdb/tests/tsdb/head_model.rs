//! Property test: random appends, commits and rollbacks against a simple
//! model of Prometheus' rules; what the head returns (before and after a
//! restart, with and without `chunks_head/`) must equal the model.

use std::collections::BTreeMap;

use ferrite_model::Labels;
use ferrite_tsdb::{AppendError, Db, DbOptions};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Append { series: u8, dt: i64, v: u8 },
    Commit,
    Rollback,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (0u8..4, dt(), 0u8..4).prop_map(|(series, dt, v)| Op::Append { series, dt, v }),
        2 => Just(Op::Commit),
        1 => Just(Op::Rollback),
    ]
}

/// Time steps: mostly small (some backwards), sometimes hours forward (to
/// cross chunk ranges) or back (out of bounds).
fn dt() -> impl Strategy<Value = i64> {
    prop_oneof![
        10 => -40_000i64..100_000,
        1 => 1_000_000i64..8_000_000,
        1 => -5_000_000i64..-3_000_000,
    ]
}

fn labels(s: u8) -> Labels {
    Labels::from_pairs(&[("__name__", "m"), ("s", &s.to_string())])
}

/// Committed samples per series, as the model accepts them.
#[derive(Default)]
struct Model {
    series: BTreeMap<u8, Vec<(i64, f64)>>,
    max_t: Option<i64>,
}

impl Model {
    fn last(&self, s: u8) -> Option<(i64, f64)> {
        self.series.get(&s).and_then(|v| v.last().copied())
    }
}

fn run(ops: &[Op]) {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), DbOptions::default()).unwrap();
    let mut model = Model::default();
    let mut clock: BTreeMap<u8, i64> = BTreeMap::new();
    let mut app = db.appender();
    // Bounds are fixed when an appender is created, as in Prometheus.
    let mut min_valid = model.max_t.map(|m| m - 3_600_000);
    let mut pending: Vec<(u8, i64, f64)> = Vec::new();
    for op in ops {
        match op {
            Op::Append { series, dt, v } => {
                let c = clock.entry(*series).or_insert(1_000_000);
                *c += dt;
                let (t, v) = (*c, *v as f64);
                let got = app.append(&labels(*series), t, v);
                let want = match (min_valid, model.last(*series)) {
                    (Some(m), _) if t < m => Err(AppendError::OutOfBounds),
                    (_, Some((lt, _))) if t < lt => Err(AppendError::OutOfOrder),
                    (_, Some((lt, lv))) if t == lt && lv.to_bits() != v.to_bits() => {
                        Err(AppendError::DuplicateSample {
                            t,
                            existing: lv,
                            new: v,
                        })
                    }
                    (_, Some((lt, _))) if t == lt => Ok(()),
                    _ => {
                        pending.push((*series, t, v));
                        Ok(())
                    }
                };
                assert_eq!(got.map(|_| ()), want, "append {series} t={t} v={v}");
            }
            Op::Commit | Op::Rollback => {
                let commit = matches!(op, Op::Commit);
                if commit {
                    app.commit().unwrap();
                    for (s, t, v) in pending.drain(..) {
                        // Within a batch, a sample not after the series' last is dropped.
                        if model.last(s).is_none_or(|(lt, _)| t > lt) {
                            model.series.entry(s).or_default().push((t, v));
                            model.max_t = Some(model.max_t.map_or(t, |m| m.max(t)));
                        }
                    }
                } else {
                    app.rollback().unwrap();
                    pending.clear();
                }
                app = db.appender();
                min_valid = model.max_t.map(|m| m - 3_600_000);
            }
        }
    }
    app.commit().unwrap();
    for (s, t, v) in pending.drain(..) {
        if model.last(s).is_none_or(|(lt, _)| t > lt) {
            model.series.entry(s).or_default().push((t, v));
        }
    }
    let want: Vec<(String, Vec<(i64, f64)>)> = model
        .series
        .iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(s, v)| (labels(*s).to_string(), v.clone()))
        .collect();
    let read = |db: &Db| -> Vec<(String, Vec<(i64, f64)>)> {
        db.querier(i64::MIN, i64::MAX)
            .select(&[])
            .unwrap()
            .into_iter()
            .map(|s| (s.labels.to_string(), s.samples().unwrap()))
            .collect()
    };
    assert_eq!(read(&db), want, "before restart");
    db.close().unwrap();
    let db = Db::open(dir.path(), DbOptions::default()).unwrap();
    assert_eq!(read(&db), want, "after restart");
    db.close().unwrap();
    std::fs::remove_dir_all(dir.path().join("chunks_head")).unwrap();
    let db = Db::open(dir.path(), DbOptions::default()).unwrap();
    assert_eq!(read(&db), want, "after full WAL replay");
    db.close().unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    #[test]
    fn head_matches_model(ops in proptest::collection::vec(op(), 1..1000)) {
        run(&ops);
    }
}
