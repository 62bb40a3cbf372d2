//! Head compaction: the oldest ranges become blocks, the head and the WAL are
//! truncated, and queries, restarts and full replays see exactly the same
//! samples before and after.

use crate::common::{contents, contents_from, fill_every_minute};
use std::fs;
use std::io::{Seek, SeekFrom, Write};
use std::path::Path;

use ferrite_model::Labels;
use ferrite_tsdb::{AppendError, Db, DbOptions, HeadOptions};
use ferrite_wal::{Compression, WalOptions, PAGE_SIZE};

const HOUR: i64 = 3_600_000;

fn options() -> DbOptions {
    DbOptions {
        head: HeadOptions {
            wal: Some(WalOptions {
                // Small segments, so the one WAL truncation after the
                // compaction has segments to checkpoint.
                segment_size: PAGE_SIZE,
                compression: Compression::Snappy,
                fsync_on_flush: false,
            }),
            ..HeadOptions::default()
        },
        ..DbOptions::default()
    }
}

/// 30 series over 8 hours at 60 s: some stop after 2 h (they go stale and
/// must leave the head), some start at 5 h.
fn fill(db: &Db, start: i64) {
    for j in 0..(8 * 60) {
        let t = start + j * 60_000;
        let mut app = db.appender();
        for i in 0..30 {
            if (i % 5 == 0 && t >= start + 2 * HOUR) || (i % 7 == 1 && t < start + 5 * HOUR) {
                continue;
            }
            let l = Labels::from_pairs(&[("__name__", "m"), ("i", &i.to_string())]);
            app.append(&l, t, (i * 1000 + j) as f64).unwrap();
        }
        app.commit().unwrap();
    }
}

/// A time at the start of a 2 h block range.
const BLOCK_START: i64 = 1_700_000_000_000 - 1_700_000_000_000 % (2 * HOUR);

fn block_dirs(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.len() == 26)
        .collect();
    v.sort();
    v
}

#[test]
fn compaction_keeps_every_sample_across_restarts() {
    let tmp = tempfile::tempdir().unwrap();
    // Not aligned to the 2 h range: the first block starts mid-range.
    let start = 1_700_000_000_000 + 17 * 60_000;
    let before;
    {
        let db = Db::open(tmp.path(), options()).unwrap();
        fill(&db, start);
        before = contents(&db);
        // i = 15 would only have samples before 2 h and after 5 h: none.
        assert_eq!(before.len(), 29);
        let series_before = db.head().num_series();
        let written = db.compact().unwrap();
        assert!(written.len() >= 2, "blocks written: {written:?}");
        assert!(!db.head_compactable());
        assert_eq!(contents(&db), before, "after compaction");
        // Series that stopped at 2 h are gone from the head.
        assert!(db.head().num_series() < series_before);
        for b in db.blocks() {
            let m = b.meta();
            assert_eq!(m.max_time % (2 * HOUR), 0, "block ends on a range boundary");
            assert_eq!(m.compaction.level, 1);
            assert!(m.stats.num_samples > 0);
        }
        // Appends below the newest block are out of bounds now.
        let newest = db.blocks().iter().map(|b| b.meta().max_time).max().unwrap();
        let mut app = db.appender();
        let l = Labels::from_pairs(&[("__name__", "m"), ("i", "3")]);
        assert_eq!(
            app.append(&l, newest - 1, 1.0),
            Err(AppendError::OutOfBounds)
        );
        app.rollback().unwrap();
        assert!(tmp.path().join("wal").read_dir().unwrap().any(|e| e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .starts_with("checkpoint.")));
        // The compaction's head GC, WAL checkpoint and segment fsyncs were
        // timed (Prometheus' head summaries).
        let stats = &db.head().stats;
        assert!(stats.timings.gc_duration.snapshot().count >= 1);
        assert!(stats.timings.wal_truncate_duration.snapshot().count >= 1);
        assert!(stats.timings.wal_fsync_duration.snapshot().count >= 1);
        assert!(stats.timings.wal_fsync_duration.snapshot().quantiles[0].1 >= 0.0);
        db.close().unwrap();
    }
    // Normal restart, then a full WAL replay (no head chunks).
    let db = Db::open(tmp.path(), options()).unwrap();
    assert_eq!(contents(&db), before, "after restart");
    drop(db);
    fs::remove_dir_all(tmp.path().join("chunks_head")).unwrap();
    let db = Db::open(tmp.path(), options()).unwrap();
    assert_eq!(contents(&db), before, "after full replay");

    // Everything into blocks, as `ferrite tsdb compact` does.
    let n = block_dirs(tmp.path()).len();
    db.compact_head_fully().unwrap();
    assert_eq!(db.head().num_series(), 0);
    assert!(block_dirs(tmp.path()).len() > n);
    assert_eq!(contents(&db), before, "after persisting the whole head");
    db.close().unwrap();
    let db = Db::open(tmp.path(), options()).unwrap();
    assert_eq!(contents(&db), before, "blocks only, after restart");
    // WAL samples now in blocks are not replayed (the series records are,
    // as in Prometheus, until the next head truncation drops them).
    assert!(
        db.head().min_time() > db.head().max_time(),
        "head holds samples"
    );
}

#[test]
fn interrupted_block_writes_and_deletions_are_cleaned_up() {
    let tmp = tempfile::tempdir().unwrap();
    let before;
    {
        let db = Db::open(tmp.path(), options()).unwrap();
        fill(&db, 1_700_000_000_000);
        db.compact().unwrap();
        before = contents(&db);
        db.close().unwrap();
    }
    let blocks = block_dirs(tmp.path());
    // A block write cut short, and a deletion cut short.
    let partial = tmp
        .path()
        .join("01ARZ3NDEKTSV4RRFFQ69G5FAV.tmp-for-creation");
    fs::create_dir_all(partial.join("chunks")).unwrap();
    fs::write(partial.join("index"), b"half").unwrap();
    let doomed = tmp
        .path()
        .join(format!("{}.tmp-for-deletion", "01ARZ3NDEKTSV4RRFFQ69G5FAW"));
    fs::create_dir_all(&doomed).unwrap();
    let db = Db::open(tmp.path(), options()).unwrap();
    assert!(!partial.exists() && !doomed.exists());
    assert_eq!(block_dirs(tmp.path()), blocks);
    assert_eq!(contents(&db), before);
}

/// A block selection of many series is read on several threads; it must
/// come back complete and in label order, as the head gave it.
#[test]
fn large_block_selections_keep_order_and_samples() {
    let tmp = tempfile::tempdir().unwrap();
    let db = Db::open(tmp.path(), options()).unwrap();
    let start = BLOCK_START;
    for j in 0..(4 * 12) {
        let t = start + j * 5 * 60_000;
        let mut app = db.appender();
        for i in 0..900 {
            let l = Labels::from_pairs(&[("__name__", "m"), ("i", &format!("{i:04}"))]);
            app.append(&l, t, (i * 100 + j) as f64).unwrap();
        }
        app.commit().unwrap();
    }
    let before = contents(&db);
    assert_eq!(before.len(), 900);
    assert!(!db.compact().unwrap().is_empty());
    assert!(!db.blocks().is_empty());
    assert_eq!(contents(&db), before);
}

/// When one range of a whole-head compaction fails (here: its head chunks
/// on disk are damaged), the blocks written for the ranges after it (side
/// by side with it) are discarded unpublished and their samples stay in
/// the head.
#[test]
fn a_failed_range_leaves_the_later_ranges_in_the_head() {
    let tmp = tempfile::tempdir().unwrap();
    let start = BLOCK_START;
    {
        let db = Db::open(tmp.path(), options()).unwrap();
        fill_every_minute(&db, start, 3 * 60, 10);
        db.close().unwrap();
    }
    // Reopened, the first range's chunks are read from `chunks_head/`.
    let db = Db::open(tmp.path(), options()).unwrap();
    let second_range = contents_from(&db, start + 2 * HOUR);
    assert_eq!(second_range.len(), 10);
    assert!(second_range.iter().all(|(_, s)| s.len() == 60));
    let files: Vec<_> = fs::read_dir(tmp.path().join("chunks_head"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(!files.is_empty());
    for f in &files {
        // Everything after the 8-byte file header: every chunk's CRC fails.
        // Written in place (the file stays mapped, so never truncated).
        let len = fs::metadata(f).unwrap().len() as usize;
        let mut file = fs::OpenOptions::new().write(true).open(f).unwrap();
        file.seek(SeekFrom::Start(8)).unwrap();
        file.write_all(&vec![0xa5; len - 8]).unwrap();
    }
    assert!(db.compact_head_fully().is_err());
    assert!(db.blocks().is_empty());
    assert_eq!(block_dirs(tmp.path()), Vec::<String>::new());
    assert_eq!(contents_from(&db, start + 2 * HOUR), second_range);
}

/// Blocks written side by side stay in their temporary directories until
/// put in place one by one, oldest first: a crash while a newer range is
/// written can never leave it on disk without the older ones (the samples
/// in between, still only in the WAL, would be dropped at the next start
/// as older than the newest block). Dropped unpublished, they leave
/// nothing behind.
#[test]
fn head_ranges_are_written_unpublished_and_put_in_place_in_order() {
    use ferrite_tsdb::compact::write_head_ranges;
    let tmp = tempfile::tempdir().unwrap();
    let start = BLOCK_START;
    let db = Db::open(tmp.path(), options()).unwrap();
    fill_every_minute(&db, start, 5 * 60, 10);
    let ranges = [
        (start, start + 2 * HOUR),
        (start + 2 * HOUR, start + 4 * HOUR),
        (start + 4 * HOUR, start + 5 * HOUR),
    ];
    let pending: Vec<_> = write_head_ranges(db.head(), tmp.path(), &ranges, None)
        .into_iter()
        .map(|r| r.unwrap().expect("samples in every range"))
        .collect();
    assert_eq!(
        block_dirs(tmp.path()),
        Vec::<String>::new(),
        "published early"
    );
    let mut pending = pending.into_iter();
    let oldest = pending.next().unwrap().publish().unwrap();
    assert_eq!(block_dirs(tmp.path()), vec![oldest.ulid.to_string()]);
    drop(pending);
    assert_eq!(block_dirs(tmp.path()), vec![oldest.ulid.to_string()]);
    let left: Vec<_> = fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp"))
        .collect();
    assert_eq!(left, Vec::<String>::new(), "temporary directories left");
}

/// A series `later` with a sample at each of `hours` after
/// `BLOCK_START`, then a compaction.
fn later_then_compact(db: &Db, hours: std::ops::RangeInclusive<i64>) {
    let l = Labels::from_pairs(&[("__name__", "later")]);
    for h in hours {
        let mut app = db.appender();
        app.append(&l, BLOCK_START + h * HOUR, 1.0).unwrap();
        app.commit().unwrap();
    }
    db.compact().unwrap();
}

/// A series someone holds (a scrape cache's handle) stays in the head
/// through compaction even with no samples left, so appends to the handle
/// land in the head; once released, the next truncation drops it.
#[test]
fn a_held_series_is_not_garbage_collected() {
    let tmp = tempfile::tempdir().unwrap();
    let db = Db::open(tmp.path(), options()).unwrap();
    let held_labels = Labels::from_pairs(&[("__name__", "held")]);
    let gone_labels = Labels::from_pairs(&[("__name__", "gone")]);
    let mut app = db.appender();
    let held = app.append_series(&held_labels, BLOCK_START, 1.0).unwrap();
    app.append(&gone_labels, BLOCK_START, 1.0).unwrap();
    app.commit().unwrap();
    // Only a later series has samples past the first range.
    later_then_compact(&db, 1..=4);
    assert_eq!(db.head().num_series(), 2, "`gone` dropped, `held` kept");
    let t = BLOCK_START + 5 * HOUR;
    let mut app = db.appender();
    app.append_found(&held, t, 2.0).unwrap();
    app.commit().unwrap();
    let got = contents(&db);
    let held_samples: Vec<_> = got
        .iter()
        .filter(|(l, _)| *l == held_labels)
        .flat_map(|(_, s)| s.iter().map(|&(t, _)| t))
        .collect();
    assert_eq!(held_samples, vec![BLOCK_START, t]);

    // Released, with its samples compacted away: dropped.
    drop(held);
    later_then_compact(&db, 6..=9);
    assert_eq!(db.head().num_series(), 1, "only `later` left");
}
