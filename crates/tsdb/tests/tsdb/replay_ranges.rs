//! Parallel replay reads the WAL in page ranges; whatever the range size,
//! an open must load exactly what a one-range-per-segment replay loads, and
//! find the same first corruption, on intact and on damaged WALs.

use crate::common::{contents, Contents};
use std::fs;
use std::path::Path;

use ferrite_model::Labels;
use ferrite_tsdb::{Db, DbOptions, HeadOptions};
use ferrite_wal::{Compression, WalOptions, PAGE_SIZE};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn options(range_bytes: u64, compression: Compression) -> DbOptions {
    DbOptions {
        head: HeadOptions {
            wal: Some(WalOptions {
                segment_size: 2 * PAGE_SIZE,
                compression,
                fsync_on_flush: false,
            }),
            replay_range_bytes: range_bytes,
            ..HeadOptions::default()
        },
        ..DbOptions::default()
    }
}

/// Several segments of several pages; series records at the start and in
/// the middle; records of every size from one fragment to several pages.
fn write_dir(dir: &Path, compression: Compression) {
    let db = Db::open(dir, options(0, compression)).unwrap();
    for j in 0..400i64 {
        let mut app = db.appender();
        let series = if j < 200 { 40 } else { 60 };
        for i in 0..series {
            let l = Labels::from_pairs(&[("__name__", "m"), ("i", &i.to_string())]);
            let v = if i % 2 == 0 {
                (j * i) as f64
            } else {
                f64::from_bits((j as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 2)
            };
            app.append(&l, j * 15_000 + i, v).unwrap();
            // Some large batches: records spanning pages.
            if j % 37 != 0 && i % 10 == 9 {
                app.commit().unwrap();
                app = db.appender();
            }
        }
        app.commit().unwrap();
    }
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else if e.file_name() != "lock" {
            fs::copy(e.path(), target).unwrap();
        }
    }
}

/// Opens a copy of `dir` with ranges of `range_bytes`.
fn open_copy(dir: &Path, range_bytes: u64) -> (Contents, Option<(u32, u64)>, u64) {
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(dir, tmp.path());
    let db = Db::open(tmp.path(), options(range_bytes, Compression::None)).unwrap();
    let st = db.replay_stats();
    let corruption = st.corruption.as_ref().map(|c| (c.segment, c.offset));
    (contents(&db), corruption, st.samples)
}

fn damage(dir: &Path, rng: &mut StdRng) {
    let wal = dir.join("wal");
    let mut segs: Vec<_> = fs::read_dir(&wal)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    segs.sort();
    let path = &segs[rng.gen_range(0..segs.len())];
    let mut data = fs::read(path).unwrap();
    if data.is_empty() {
        return;
    }
    match rng.gen_range(0..4) {
        0 => {
            let at = rng.gen_range(0..data.len());
            data[at] ^= 1 << rng.gen_range(0..8);
        }
        1 => {
            let p = rng.gen_range(0..data.len().div_ceil(PAGE_SIZE));
            let end = ((p + 1) * PAGE_SIZE).min(data.len());
            data[p * PAGE_SIZE..end].fill(0);
        }
        2 => data.truncate(rng.gen_range(0..data.len())),
        _ => data.extend((0..rng.gen_range(1..100)).map(|_| rng.gen::<u8>())),
    }
    fs::write(path, data).unwrap();
}

#[test]
fn any_range_size_replays_like_whole_segments() {
    for compression in [Compression::None, Compression::Snappy, Compression::Zstd] {
        let src = tempfile::tempdir().unwrap();
        write_dir(src.path(), compression);
        let segments = fs::read_dir(src.path().join("wal")).unwrap().count();
        assert!(segments >= 2, "want several segments, got {segments}");
        for chunks_head in [true, false] {
            if !chunks_head {
                fs::remove_dir_all(src.path().join("chunks_head")).unwrap();
            }
            let whole = open_copy(src.path(), u64::MAX / 2);
            assert!(whole.1.is_none());
            assert_eq!(whole.0.len(), 60);
            for pages in [1, 2, 3] {
                let split = open_copy(src.path(), pages * PAGE_SIZE as u64);
                assert_eq!(split, whole, "{compression:?}, {pages} pages");
            }
        }
    }
}

#[test]
fn damaged_wals_replay_alike_with_any_range_size() {
    let trials: u64 = std::env::var("REPLAY_RANGE_TRIALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(24);
    let src = tempfile::tempdir().unwrap();
    write_dir(src.path(), Compression::Snappy);
    fs::remove_dir_all(src.path().join("chunks_head")).unwrap();
    let mut corrupt = 0;
    for seed in 0..trials {
        let mut rng = StdRng::seed_from_u64(seed);
        let dir = tempfile::tempdir().unwrap();
        copy_dir(src.path(), dir.path());
        for _ in 0..rng.gen_range(1..3) {
            damage(dir.path(), &mut rng);
        }
        let whole = open_copy(dir.path(), u64::MAX / 2);
        corrupt += u64::from(whole.1.is_some());
        for pages in [1, 2] {
            let split = open_copy(dir.path(), pages * PAGE_SIZE as u64);
            assert_eq!(split, whole, "seed {seed}, {pages} pages");
        }
    }
    assert!(
        corrupt > trials / 3,
        "damage found in only {corrupt} trials"
    );
}
