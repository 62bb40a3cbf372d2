//! The server's compaction loop end to end: head blocks merged level by
//! level (2 h -> 6 h -> 18 h), retention deleting whole blocks.

use crate::common::contents;
use ferrite_model::Labels;
use ferrite_tsdb::{Db, DbOptions};

const HOUR: i64 = 3_600_000;
const START: i64 = 1_700_006_400_000; // a multiple of 2 h... and of 6 h

/// `hours` hours of 5 series every 5 minutes, compacting as a server would
/// every simulated hour.
fn run(db: &Db, hours: i64) {
    append_hours(db, hours, true);
}

/// `hours` hours of 5 series every 5 minutes, compacting after each hour
/// when `compact`.
fn append_hours(db: &Db, hours: i64, compact: bool) {
    for h in 0..hours {
        for m in 0..12 {
            let t = START + h * HOUR + m * 300_000;
            let mut app = db.appender();
            for i in 0..5 {
                let l = Labels::from_pairs(&[("__name__", "m"), ("i", &i.to_string())]);
                app.append(&l, t, (t / 1000 + i) as f64).unwrap();
            }
            app.commit().unwrap();
        }
        if compact {
            db.compact().unwrap();
        }
    }
}

#[test]
fn blocks_are_merged_level_by_level() {
    assert_eq!(START % (6 * HOUR), 0);
    let tmp = tempfile::tempdir().unwrap();
    let db = Db::open(tmp.path(), DbOptions::default()).unwrap();
    run(&db, 40);
    let before = contents(&db);
    let levels: Vec<i64> = db
        .blocks()
        .iter()
        .map(|b| b.meta().compaction.level)
        .collect();
    assert!(levels.iter().any(|&l| l >= 3), "levels: {levels:?}");
    for w in db.blocks().windows(2) {
        assert!(
            w[0].meta().max_time <= w[1].meta().min_time,
            "blocks overlap"
        );
    }
    for b in db.blocks() {
        let m = b.meta();
        let span = m.max_time - m.min_time;
        assert!(
            span <= 18 * HOUR,
            "block {} spans {} h",
            m.ulid,
            span / HOUR
        );
        assert!(m.compaction.parents.is_empty() == (m.compaction.level == 1));
    }
    // Only the open blocks remain on disk.
    let dirs = std::fs::read_dir(tmp.path())
        .unwrap()
        .filter(|e| e.as_ref().unwrap().file_name().len() == 26)
        .count();
    assert_eq!(dirs, db.blocks().len());
    db.close().unwrap();
    let db = Db::open(tmp.path(), DbOptions::default()).unwrap();
    assert_eq!(contents(&db), before);
    let total: usize = before.iter().map(|(_, s)| s.len()).sum();
    assert_eq!(total, 40 * 12 * 5);
}

#[test]
fn retention_deletes_whole_old_blocks() {
    let tmp = tempfile::tempdir().unwrap();
    let opts = DbOptions {
        retention_ms: 12 * HOUR,
        ..DbOptions::default()
    };
    let db = Db::open(tmp.path(), opts.clone()).unwrap();
    run(&db, 40);
    let blocks = db.blocks();
    let newest = blocks.iter().map(|b| b.meta().max_time).max().unwrap();
    for b in &blocks {
        assert!(
            newest - b.meta().max_time < 12 * HOUR,
            "block {} kept beyond retention",
            b.ulid()
        );
    }
    let oldest_kept = contents(&db)
        .iter()
        .filter_map(|(_, s)| s.first().map(|x| x.0))
        .min()
        .unwrap();
    assert!(oldest_kept > START + 12 * HOUR, "old samples were kept");
    // With retention 12 h the block ranges stop at a tenth of it (1.2 h < 2 h: only 2 h).
    assert!(blocks.iter().all(|b| b.meta().compaction.level == 1));
    db.close().unwrap();
    let db = Db::open(tmp.path(), opts).unwrap();
    assert_eq!(db.blocks().len(), blocks.len());
}

/// A tool's open (`keep_expired_blocks`) deletes nothing that only the
/// retention would delete; a server's open afterwards does.
#[test]
fn tools_open_keeps_blocks_beyond_retention() {
    let tmp = tempfile::tempdir().unwrap();
    let db = Db::open(tmp.path(), DbOptions::default()).unwrap();
    run(&db, 30);
    let all = db.blocks().len();
    let before = contents(&db);
    db.close().unwrap();
    let short = DbOptions {
        retention_ms: 12 * HOUR,
        ..DbOptions::default()
    };
    let tool = DbOptions {
        keep_expired_blocks: true,
        ..short.clone()
    };
    let db = Db::open(tmp.path(), tool).unwrap();
    assert_eq!(db.blocks().len(), all);
    assert!(db.compact().unwrap().is_empty());
    assert_eq!(db.blocks().len(), all);
    assert_eq!(contents(&db), before);
    db.close().unwrap();
    let db = Db::open(tmp.path(), short).unwrap();
    assert!(
        db.blocks().len() < all,
        "the server's open applies retention"
    );
}

/// A compaction that fails (a damaged chunk in one of its blocks) marks its
/// blocks `compaction.failed`, as Prometheus does: the planner leaves them
/// alone afterwards, also after a restart, and they stay readable.
#[test]
fn failed_compaction_marks_its_blocks() {
    let tmp = tempfile::tempdir().unwrap();
    let db = Db::open(tmp.path(), DbOptions::default()).unwrap();
    append_hours(&db, 7, false);
    db.compact_head_fully().unwrap();
    let blocks: Vec<_> = db.blocks().iter().map(|b| b.dir().to_owned()).collect();
    assert_eq!(blocks.len(), 4, "2 h blocks of the 7 hours");
    db.close().unwrap();

    // Damage a byte in the middle of the first block's chunk data.
    let chunks = blocks[0].join("chunks").join("000001");
    let mut bytes = std::fs::read(&chunks).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0xff;
    std::fs::write(&chunks, bytes).unwrap();

    let db = Db::open(tmp.path(), DbOptions::default()).unwrap();
    assert!(db.compact().is_err(), "the damaged chunk went unnoticed");
    // Counted as Prometheus counts it: one run, failed, one merge tried.
    let counts = |db: &Db| {
        use std::sync::atomic::Ordering::Relaxed;
        let c = db.compaction_stats();
        (
            c.triggered.load(Relaxed),
            c.ran.load(Relaxed),
            c.failed.load(Relaxed),
        )
    };
    assert_eq!(counts(&db), (1, 1, 1));
    let failed = |db: &Db| -> Vec<bool> {
        db.blocks()
            .iter()
            .map(|b| b.meta().compaction.failed)
            .collect()
    };
    // The first three (one 6 h range) were chosen; the newest was not.
    assert_eq!(failed(&db), [true, true, true, false]);
    assert!(
        db.compact().unwrap().is_empty(),
        "failed blocks planned again"
    );
    assert_eq!(counts(&db), (2, 1, 1), "a run with nothing to do");
    assert_eq!(db.blocks().len(), 4);
    db.close().unwrap();

    let db = Db::open(tmp.path(), DbOptions::default()).unwrap();
    assert_eq!(failed(&db), [true, true, true, false]);
    assert!(db.compact().unwrap().is_empty());
    db.close().unwrap();
}
