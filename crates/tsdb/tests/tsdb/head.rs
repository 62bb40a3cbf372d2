//! Head behaviour through the public API: appends, rejection rules,
//! visibility, restart, repair, and label matchers.

use std::path::Path;

use ferrite_model::{Labels, MatchType, Matcher};
use ferrite_tsdb::{AppendError, Db, DbOptions};

fn ls(pairs: &[(&str, &str)]) -> Labels {
    Labels::from_pairs(pairs)
}

fn open(dir: &Path) -> Db {
    Db::open(dir, DbOptions::default()).expect("open")
}

fn all_samples(db: &Db) -> Vec<(Labels, Vec<(i64, f64)>)> {
    db.querier(i64::MIN, i64::MAX)
        .select(&[])
        .unwrap()
        .into_iter()
        .map(|s| (s.labels.clone(), s.samples().expect("samples")))
        .collect()
}

/// Opens `dir` again: no corruption reported and exactly `want` read back.
fn assert_reopens_clean(dir: &Path, want: &[(Labels, Vec<(i64, f64)>)]) {
    let db = open(dir);
    assert!(db.replay_stats().corruption.is_none());
    assert_eq!(all_samples(&db), want);
}

/// 20 series x 1000 samples, 15s apart: several chunks per series.
fn fill(db: &Db, series: usize, samples: i64) {
    for j in 0..samples {
        let mut app = db.appender();
        for i in 0..series {
            let l = ls(&[
                ("__name__", "m"),
                ("i", &i.to_string()),
                ("job", if i % 2 == 0 { "even" } else { "odd" }),
            ]);
            app.append(&l, j * 15_000, (i as f64) * 1000.0 + j as f64)
                .unwrap();
        }
        app.commit().unwrap();
    }
}

#[test]
fn samples_visible_only_after_commit() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut app = db.appender();
    app.append(&ls(&[("a", "1")]), 1000, 1.0).unwrap();
    // The series exists but has no samples yet.
    assert!(all_samples(&db).is_empty());
    app.commit().unwrap();
    assert_eq!(all_samples(&db)[0].1, vec![(1000, 1.0)]);

    let mut app = db.appender();
    app.append(&ls(&[("a", "1")]), 2000, 2.0).unwrap();
    app.rollback().unwrap();
    assert_eq!(all_samples(&db)[0].1, vec![(1000, 1.0)]);
}

#[test]
fn rejection_rules_match_prometheus() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let l = ls(&[("a", "1")]);
    let mut app = db.appender();
    app.append(&l, 10_000_000, 1.0).unwrap();
    app.commit().unwrap();

    let mut app = db.appender();
    assert_eq!(app.append(&l, 9_999_999, 1.0), Err(AppendError::OutOfOrder));
    assert!(matches!(
        app.append(&l, 10_000_000, 2.0),
        Err(AppendError::DuplicateSample { .. })
    ));
    // Identical duplicate is accepted silently.
    app.append(&l, 10_000_000, 1.0).unwrap();
    // Older than half a chunk range behind the head's max time.
    assert_eq!(
        app.append(&ls(&[("b", "1")]), 10_000_000 - 3_600_001, 1.0),
        Err(AppendError::OutOfBounds)
    );
    assert!(app.append(&ls(&[]), 10_000_001, 1.0).is_err());
    assert!(app
        .append(&ls(&[("a", "1"), ("a", "2")]), 10_000_001, 1.0)
        .is_err());
    app.commit().unwrap();
    assert_eq!(all_samples(&db)[0].1, vec![(10_000_000, 1.0)]);
    assert_eq!(AppendError::OutOfOrder.to_string(), "out of order sample");
    assert_eq!(AppendError::OutOfBounds.to_string(), "out of bounds");
}

#[test]
fn restart_restores_everything_with_and_without_chunks_head() {
    let dir = tempfile::tempdir().unwrap();
    let before;
    {
        let db = open(dir.path());
        fill(&db, 20, 1000);
        before = all_samples(&db);
        assert_eq!(before.len(), 20);
        assert_eq!(before.iter().map(|s| s.1.len()).sum::<usize>(), 20_000);
        db.close().unwrap();
    }
    // Normal restart: chunks_head + WAL.
    {
        let db = open(dir.path());
        assert_eq!(all_samples(&db), before);
        assert!(db.replay_stats().mmapped_chunks > 0);
        assert!(db.replay_stats().samples_in_mmapped_chunks > 0);
        db.close().unwrap();
    }
    // Full replay: chunks_head removed.
    std::fs::remove_dir_all(dir.path().join("chunks_head")).unwrap();
    {
        let db = open(dir.path());
        assert_eq!(db.replay_stats().mmapped_chunks, 0);
        assert_eq!(all_samples(&db), before);
        // Appending continues after a restart.
        let mut app = db.appender();
        app.append(
            &ls(&[("__name__", "m"), ("i", "0"), ("job", "even")]),
            1000 * 15_000,
            7.0,
        )
        .unwrap();
        app.commit().unwrap();
        db.close().unwrap();
    }
    let db = open(dir.path());
    let after = all_samples(&db);
    assert_eq!(after.iter().map(|s| s.1.len()).sum::<usize>(), 20_001);
}

#[test]
fn corrupt_wal_tail_is_repaired_and_prefix_kept() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = open(dir.path());
        fill(&db, 5, 400);
        db.close().unwrap();
    }
    std::fs::remove_dir_all(dir.path().join("chunks_head")).unwrap();
    // Damage the middle of the first segment.
    let seg = dir.path().join("wal").join("00000000");
    let mut bytes = std::fs::read(&seg).unwrap();
    let mid = bytes.len() / 2;
    for b in &mut bytes[mid..mid + 16] {
        *b ^= 0x5a;
    }
    std::fs::write(&seg, &bytes).unwrap();
    let kept;
    {
        let db = open(dir.path());
        assert!(db.replay_stats().corruption.is_some());
        kept = all_samples(&db);
        let n: usize = kept.iter().map(|s| s.1.len()).sum();
        assert!(n > 0 && n < 2000, "kept {n}");
        // Each series keeps a prefix of its samples.
        for (_, s) in &kept {
            for (k, (t, _)) in s.iter().enumerate() {
                assert_eq!(*t, k as i64 * 15_000);
            }
        }
        db.close().unwrap();
    }
    // After repair the WAL reads cleanly and holds the same data.
    assert_reopens_clean(dir.path(), &kept);
}

#[test]
fn corrupt_chunks_head_comes_back_from_wal() {
    let dir = tempfile::tempdir().unwrap();
    let before;
    {
        let db = open(dir.path());
        fill(&db, 10, 1000);
        before = all_samples(&db);
        db.close().unwrap();
    }
    let chunks_dir = dir.path().join("chunks_head");
    let mut files: Vec<_> = std::fs::read_dir(&chunks_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let f = &files[0];
    let mut bytes = std::fs::read(f).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0xff;
    std::fs::write(f, &bytes).unwrap();
    let db = open(dir.path());
    assert_eq!(all_samples(&db), before);
}

#[test]
fn matchers_select_like_prometheus() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut app = db.appender();
    app.append(
        &ls(&[("__name__", "up"), ("job", "api"), ("env", "prod")]),
        1,
        1.0,
    )
    .unwrap();
    app.append(&ls(&[("__name__", "up"), ("job", "api-canary")]), 1, 1.0)
        .unwrap();
    app.append(
        &ls(&[("__name__", "up"), ("job", "db"), ("env", "dev")]),
        1,
        1.0,
    )
    .unwrap();
    app.append(&ls(&[("__name__", "down"), ("job", "db")]), 1, 1.0)
        .unwrap();
    app.commit().unwrap();
    let q = db.querier(i64::MIN, i64::MAX);
    let sel = |ms: &[Matcher]| -> Vec<String> {
        q.select(ms)
            .unwrap()
            .iter()
            .map(|s| s.labels.to_string())
            .collect()
    };
    let m = |k, n: &str, v: &str| Matcher::new(k, n, v).unwrap();
    use MatchType::*;
    assert_eq!(sel(&[m(Equal, "__name__", "up")]).len(), 3);
    assert_eq!(
        sel(&[m(Equal, "__name__", "up"), m(Regex, "job", "api")]).len(),
        1
    );
    assert_eq!(sel(&[m(Regex, "job", "api.*")]).len(), 2);
    assert_eq!(sel(&[m(NotRegex, "job", "api.*")]).len(), 2);
    assert_eq!(
        sel(&[m(Equal, "__name__", "up"), m(Equal, "env", "")]).len(),
        1
    );
    assert_eq!(
        sel(&[m(Equal, "__name__", "up"), m(NotEqual, "env", "")]).len(),
        2
    );
    assert_eq!(
        sel(&[m(Equal, "__name__", "up"), m(NotEqual, "env", "prod")]).len(),
        2
    );
    assert_eq!(sel(&[m(Equal, "nosuch", "x")]).len(), 0);
    assert_eq!(
        sel(&[m(Equal, "__name__", "up"), m(Regex, "nosuch", ".*")]).len(),
        3
    );
    assert_eq!(sel(&[m(Regex, "job", "db|api")]).len(), 3);
    // Sorted by labels.
    let all = sel(&[]);
    let mut sorted = all.clone();
    sorted.sort();
    assert_eq!(all.len(), 4);
    assert_eq!(q.label_names(&[]).unwrap(), vec!["__name__", "env", "job"]);
    assert_eq!(
        q.label_values("job", &[]).unwrap(),
        vec!["api", "api-canary", "db"]
    );
    assert_eq!(
        q.label_values("env", &[m(Equal, "job", "db")]).unwrap(),
        vec!["dev"]
    );
    assert_eq!(
        q.label_names(&[m(Equal, "__name__", "down")]).unwrap(),
        vec!["__name__", "job"]
    );
}

#[test]
fn concurrent_appenders() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    std::thread::scope(|s| {
        for w in 0..4 {
            let db = &db;
            s.spawn(move || {
                for j in 0..200i64 {
                    let mut app = db.appender();
                    for i in 0..50 {
                        // Half the series are shared between workers.
                        let id = if i % 2 == 0 {
                            format!("shared{i}")
                        } else {
                            format!("w{w}-{i}")
                        };
                        let _ = app.append(&ls(&[("id", &id)]), j * 1000 + w, 1.0);
                    }
                    app.commit().unwrap();
                }
            });
        }
    });
    assert_eq!(db.head().num_series(), 25 + 4 * 25);
    db.close().unwrap();
    let db = open(dir.path());
    assert_eq!(db.head().num_series(), 125);
}

#[test]
fn undecodable_record_with_valid_checksum_is_repaired_like_corruption() {
    let dir = tempfile::tempdir().unwrap();
    let before;
    {
        let db = open(dir.path());
        fill(&db, 5, 100);
        before = all_samples(&db);
        db.close().unwrap();
    }
    std::fs::remove_dir_all(dir.path().join("chunks_head")).unwrap();
    {
        // A samples record cut short, written with a correct CRC.
        let mut w =
            ferrite_wal::WalWriter::open(&dir.path().join("wal"), Default::default()).unwrap();
        w.log(&[&[2u8, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0]]).unwrap();
        w.close().unwrap();
    }
    let db = open(dir.path());
    let c = db
        .replay_stats()
        .corruption
        .clone()
        .expect("reported as corruption");
    assert!(c.reason.contains("undecodable"), "{c:?}");
    assert_eq!(all_samples(&db), before);
    db.close().unwrap();
    // Repaired: the next open is clean.
    assert_reopens_clean(dir.path(), &before);
}

#[test]
fn samples_before_their_series_record_are_dropped_like_prometheus() {
    use ferrite_wal::record::{encode_samples, RefSample, SeriesRecordBuilder};
    let dir = tempfile::tempdir().unwrap();
    {
        let mut w =
            ferrite_wal::WalWriter::open(&dir.path().join("wal"), Default::default()).unwrap();
        let mut samples = Vec::new();
        // Series 7's sample comes before its series record: unknown then.
        encode_samples(
            &mut samples,
            &[RefSample {
                st: 0,
                series_ref: 7,
                t: 1000,
                v: 1.0,
            }],
        );
        let mut series = Vec::new();
        SeriesRecordBuilder::new(&mut series).add(7, &[("a", "b")]);
        let mut later = Vec::new();
        encode_samples(
            &mut later,
            &[RefSample {
                st: 0,
                series_ref: 7,
                t: 2000,
                v: 2.0,
            }],
        );
        w.log(&[&samples, &series, &later]).unwrap();
        w.close().unwrap();
    }
    let db = open(dir.path());
    assert_eq!(db.replay_stats().samples_unknown_series, 1);
    assert_eq!(all_samples(&db)[0].1, vec![(2000, 2.0)]);
}

#[test]
fn append_by_pairs_finds_the_same_series_as_by_labels() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let pairs = [("__name__", "up"), ("instance", "a:9100"), ("job", "node")];
    let mut app = db.appender();
    let r1 = app.append(&ls(&pairs), 1000, 1.0).unwrap();
    let r2 = app.append_pairs(&pairs, 2000, 2.0).unwrap();
    assert_eq!(r1, r2);
    // A label set that is a prefix of another is another series.
    let r3 = app.append_pairs(&pairs[..2], 2000, 3.0).unwrap();
    assert_ne!(r1, r3);
    assert_eq!(
        app.append_pairs(&[], 3000, 1.0),
        Err(AppendError::InvalidLabels(
            ferrite_model::LabelsError::Empty
        ))
    );
    assert!(matches!(
        app.append_pairs(&[("a", "1"), ("a", "2")], 3000, 1.0),
        Err(AppendError::InvalidLabels(_))
    ));
    assert!(matches!(
        app.append_pairs(&[("", "1")], 3000, 1.0),
        Err(AppendError::InvalidLabels(_))
    ));
    // As in Prometheus, appends are checked against committed data; one
    // out of order within the batch is dropped at commit.
    assert_eq!(app.append_pairs(&pairs, 1500, 9.0), Ok(r1));
    app.commit().unwrap();
    let mut app = db.appender();
    assert_eq!(
        app.append_pairs(&pairs, 1500, 9.0),
        Err(AppendError::OutOfOrder)
    );
    app.rollback().unwrap();
    let want = vec![
        (ls(&pairs[..2]), vec![(2000, 3.0)]),
        (ls(&pairs), vec![(1000, 1.0), (2000, 2.0)]),
    ];
    assert_eq!(all_samples(&db), want);
    db.close().unwrap();
    assert_reopens_clean(dir.path(), &want);
}

#[test]
fn batch_lookup_finds_known_series_only() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut app = db.appender();
    let mut refs = Vec::new();
    for i in 0..300 {
        let v = i.to_string();
        refs.push(
            app.append_pairs(&[("__name__", "m"), ("i", &v)], 1000, 1.0)
                .unwrap(),
        );
    }
    app.commit().unwrap();
    let values: Vec<String> = (0..600).map(|i| i.to_string()).collect();
    let owned: Vec<[(&[u8], &[u8]); 2]> = values
        .iter()
        .rev()
        .map(|v| {
            [
                (b"__name__".as_slice(), b"m".as_slice()),
                (b"i", v.as_bytes()),
            ]
        })
        .collect();
    let sets: Vec<&[(&[u8], &[u8])]> = owned.iter().map(|s| s.as_slice()).collect();
    let mut app = db.appender();
    let mut found = Vec::new();
    app.find_existing(&sets, &[], &mut found);
    assert_eq!(found.len(), 600);
    for (k, f) in found.iter().enumerate() {
        let i = 599 - k;
        match f {
            Some(f) => {
                assert!(i < 300, "set {i} is not a series");
                assert_eq!(f.series_ref(), refs[i]);
                assert_eq!(app.append_found(f, 2000, 2.0), Ok(refs[i]));
            }
            None => assert!(i >= 300, "series {i} not found"),
        }
    }
    // The bounds and order rules apply as to any append.
    let f = found[599].as_ref().unwrap();
    assert_eq!(app.append_found(f, 500, 2.0), Err(AppendError::OutOfOrder));
    app.commit().unwrap();
    assert_eq!(all_samples(&db).len(), 300);
    assert!(all_samples(&db)
        .iter()
        .all(|(_, s)| s == &[(1000, 1.0), (2000, 2.0)]));
}

/// The lock file keeps a second open out; `no_lockfile` neither creates
/// nor takes it.
#[test]
fn lock_file_keeps_a_second_open_out() {
    let tmp = tempfile::tempdir().unwrap();
    let db = open(tmp.path());
    assert!(tmp.path().join("lock").exists());
    match Db::open(tmp.path(), DbOptions::default()) {
        Err(ferrite_tsdb::DbError::Locked(_)) => {}
        Err(e) => panic!("unexpected error {e}"),
        Ok(_) => panic!("a second open of a locked dir succeeded"),
    }
    db.close().unwrap();
    let db = open(tmp.path());
    db.close().unwrap();

    let other = tempfile::tempdir().unwrap();
    let opts = DbOptions {
        no_lockfile: true,
        ..DbOptions::default()
    };
    let db = Db::open(other.path(), opts).unwrap();
    assert!(!other.path().join("lock").exists());
    db.close().unwrap();
}
