//! Issue 10, item 1: data Ferrite cannot read yet stops the open (or the
//! read) with the "unsupported" error naming file, series and kind, and
//! leaves the data directory byte for byte as it was.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ferrite_model::Labels;
use ferrite_model::{FloatHistogram, Histogram};
use ferrite_tsdb::error::{Unsupported, UnsupportedKind};
use ferrite_tsdb::head_chunks::format::{encode_chunk, file_header};
use ferrite_tsdb::{Db, DbError, DbOptions, HeadError, QueryError};
use ferrite_wal::record::{
    encode_custom_buckets_float_histogram_samples, encode_custom_buckets_histogram_samples,
    encode_float_histogram_samples, encode_histogram_samples, encode_min_valid_time,
    encode_samples, encode_samples_v2, RefFloatHistogramSample, RefHistogramSample, RefSample,
    SeriesRecordBuilder,
};
use ferrite_wal::{WalOptions, WalWriter};

fn options() -> DbOptions {
    DbOptions {
        keep_expired_blocks: true,
        // The lock file is the one thing an open may create.
        no_lockfile: true,
        ..DbOptions::default()
    }
}

/// Every file and directory under `dir` with its bytes (`None`: a directory).
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Option<Vec<u8>>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Option<Vec<u8>>>) {
        for e in fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(root).unwrap().to_path_buf();
            if p.is_dir() {
                out.insert(rel, None);
                walk(root, &p, out);
            } else {
                out.insert(rel, Some(fs::read(&p).unwrap()));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// Writes `records` as one WAL segment file `dst` (written through a
/// scratch directory, so the index in the name is free).
fn write_segment(dst: &Path, records: &[Vec<u8>]) {
    let scratch = tempfile::tempdir().unwrap();
    let mut w = WalWriter::open(scratch.path(), WalOptions::default()).unwrap();
    for r in records {
        w.log(&[r]).unwrap();
    }
    w.close().unwrap();
    fs::create_dir_all(dst.parent().unwrap()).unwrap();
    fs::copy(scratch.path().join("00000000"), dst).unwrap();
}

fn series_record(r: u64, name: &str) -> Vec<u8> {
    let mut buf = Vec::new();
    let mut b = SeriesRecordBuilder::new(&mut buf);
    b.add(r, &[("__name__", name), ("job", "j")]);
    buf
}

fn samples_record(samples: &[(u64, i64, f64)]) -> Vec<u8> {
    let mut buf = Vec::new();
    let s: Vec<RefSample> = samples
        .iter()
        .map(|&(series_ref, t, v)| RefSample {
            st: 0,
            series_ref,
            t,
            v,
        })
        .collect();
    encode_samples(&mut buf, &s);
    buf
}

/// A record of each of the four histogram record types, for series `r`.
fn histogram_records(r: u64) -> Vec<(u8, Vec<u8>)> {
    let h = RefHistogramSample {
        st: 0,
        series_ref: r,
        t: 2000,
        h: Histogram {
            count: 1,
            sum: 1.5,
            zero_count: 1,
            ..Histogram::default()
        },
    };
    let fh = RefFloatHistogramSample {
        st: 0,
        series_ref: r,
        t: 2000,
        h: FloatHistogram {
            count: 1.0,
            sum: 1.5,
            zero_count: 1.0,
            ..FloatHistogram::default()
        },
    };
    let mut cb = h.clone();
    cb.h.schema = -53;
    let mut cfb = fh.clone();
    cfb.h.schema = -53;
    let mut out = Vec::new();
    let mut buf = Vec::new();
    encode_histogram_samples(&mut buf, std::slice::from_ref(&h));
    out.push((7, buf.clone()));
    encode_float_histogram_samples(&mut buf, std::slice::from_ref(&fh));
    out.push((8, buf.clone()));
    encode_custom_buckets_histogram_samples(&mut buf, &[cb]);
    out.push((9, buf.clone()));
    encode_custom_buckets_float_histogram_samples(&mut buf, &[cfb]);
    out.push((10, buf.clone()));
    out
}

/// Names the paths that differ (the bytes are too long to print).
fn assert_unchanged(
    before: &BTreeMap<PathBuf, Option<Vec<u8>>>,
    after: &BTreeMap<PathBuf, Option<Vec<u8>>>,
) {
    let changed: Vec<&PathBuf> = before
        .keys()
        .chain(after.keys())
        .filter(|k| before.get(*k) != after.get(*k))
        .collect();
    assert!(changed.is_empty(), "changed: {changed:?}");
}

fn open_unsupported(dir: &Path) -> Unsupported {
    let before = snapshot(dir);
    let err = match Db::open(dir, options()) {
        Ok(_) => panic!("{}: the open should have failed", dir.display()),
        Err(e) => e,
    };
    assert_unchanged(&before, &snapshot(dir));
    let msg = err.to_string();
    assert!(msg.contains("unsupported"), "{msg}");
    match err {
        DbError::Head(HeadError::Unsupported(u)) => *u,
        e => panic!("want an unsupported error, got {e:?}"),
    }
}

/// A record type newer than v3.16 stops the open.
#[test]
fn unknown_record_types_stop_the_open() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    fs::create_dir(dir.join("chunks_head")).unwrap();
    let seg = dir.join("wal/00000000");
    // The body does not matter: the type alone is refused.
    let mut rec = vec![200];
    rec.extend_from_slice(&[0; 20]);
    write_segment(
        &seg,
        &[
            series_record(1, "f"),
            samples_record(&[(1, 1000, 1.0)]),
            rec,
        ],
    );
    let u = open_unsupported(dir);
    assert_eq!(u.kind, UnsupportedKind::WalRecord(200));
    assert_eq!(u.file, seg);
    let msg = u.to_string();
    assert!(msg.contains("unknown"), "{msg}");
    assert!(msg.contains("record type 200"), "{msg}");
}

/// v3.16's float samples with start timestamps (record type 11) replay
/// as float samples, start timestamps dropped (XOR chunks hold none), and
/// survive a checkpoint as v1 samples.
#[test]
fn v3_16_float_samples_with_start_timestamps_replay() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut v2 = Vec::new();
    let samples = [
        (1, 7, 1000, 1.5),
        (2, 0, 1000, 2.5),
        (1, 7, 2000, 3.0),
        (1, 0, 3000, 4.0),
    ];
    let samples: Vec<RefSample> = samples
        .iter()
        .map(|&(series_ref, st, t, v)| RefSample {
            series_ref,
            st,
            t,
            v,
        })
        .collect();
    encode_samples_v2(&mut v2, &samples);
    write_segment(
        &dir.join("wal/00000000"),
        &[series_record(1, "a"), series_record(2, "b"), v2],
    );
    let db = Db::open(dir, options()).unwrap();
    let got: Vec<(String, Vec<(i64, f64)>)> = db
        .querier(i64::MIN, i64::MAX)
        .select(&[])
        .unwrap()
        .into_iter()
        .map(|s| (s.labels.metric_name().to_string(), s.samples().unwrap()))
        .collect();
    assert_eq!(
        got,
        vec![
            ("a".to_string(), vec![(1000, 1.5), (2000, 3.0), (3000, 4.0)]),
            ("b".to_string(), vec![(1000, 2.5)]),
        ]
    );
    db.close().unwrap();
}

#[test]
fn undecodable_histogram_record_is_corruption_not_unsupported() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    fs::create_dir(dir.join("chunks_head")).unwrap();
    let (_, mut rec) = histogram_records(1).remove(0);
    rec.truncate(rec.len() - 3);
    write_segment(
        &dir.join("wal/00000000"),
        &[
            series_record(1, "f"),
            samples_record(&[(1, 1000, 1.0)]),
            rec,
        ],
    );
    // Bad bytes: repaired like any corrupt record, everything before kept.
    let db = Db::open(dir, options()).unwrap();
    assert!(db.replay_stats().corruption.is_some());
    assert_eq!(db.replay_stats().samples, 1);
}

/// A `chunks_head/000001` with one chunk of `encoding` (the raw byte).
fn head_chunk_dir(dir: &Path, encoding: u8) -> PathBuf {
    let mut bytes = file_header().to_vec();
    // A well-formed XOR chunk first, then the one refused.
    encode_chunk(&mut bytes, 1, 100, 200, 1, &[0, 0]);
    encode_chunk(&mut bytes, 2, 100, 200, encoding, &[0, 1, 0x40, 0, 0, 0]);
    let file = dir.join("chunks_head/000001");
    fs::create_dir_all(file.parent().unwrap()).unwrap();
    fs::write(&file, bytes).unwrap();
    write_segment(
        &dir.join("wal/00000000"),
        &[
            series_record(1, "f"),
            series_record(2, "h"),
            samples_record(&[(1, 300, 1.0)]),
        ],
    );
    file
}

#[test]
fn head_chunks_of_other_encodings_stop_the_open() {
    for (encoding, kind) in [(0x7f, "unknown"), (0xff, "out-of-order")] {
        let tmp = tempfile::tempdir().unwrap();
        let file = head_chunk_dir(tmp.path(), encoding);
        let u = open_unsupported(tmp.path());
        assert_eq!(u.kind, UnsupportedKind::HeadChunk(encoding));
        assert_eq!(u.file, file);
        assert_eq!(u.series_ref, Some(2));
        let msg = u.to_string();
        assert!(msg.contains(kind), "{msg}");
        assert!(msg.contains("series ref 2"), "{msg}");
    }
}

#[test]
fn head_chunks_before_the_min_valid_time_are_dropped_not_refused() {
    // As Prometheus: an in-order chunk wholly before the min valid time is
    // already in a block, whatever its encoding.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    head_chunk_dir(dir, 2);
    let mut mvt = Vec::new();
    encode_min_valid_time(&mut mvt, 250);
    write_segment(&dir.join("wal/checkpoint.00000000/00000000"), &[mvt]);
    fs::rename(dir.join("wal/00000000"), dir.join("wal/00000001")).unwrap();
    let db = Db::open(dir, options()).unwrap();
    assert_eq!(db.replay_stats().mmapped_chunks_in_blocks, 2);
    assert_eq!(db.replay_stats().samples, 1);
}

#[test]
fn wbl_records_of_unknown_types_stop_the_open() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    fs::create_dir(dir.join("chunks_head")).unwrap();
    write_segment(
        &dir.join("wal/00000000"),
        &[series_record(1, "f"), samples_record(&[(1, 1000, 1.0)])],
    );
    let seg = dir.join("wbl/00000000");
    write_segment(
        &seg,
        &[samples_record(&[(1, 900, 1.0)]), vec![200, 1, 2, 3]],
    );
    let u = open_unsupported(dir);
    assert_eq!(u.kind, UnsupportedKind::WalRecord(200));
    assert_eq!(u.file, seg);

    // Without it, the WBL's out-of-order sample is replayed.
    write_segment(&seg, &[samples_record(&[(1, 900, 1.0)])]);
    let db = Db::open(dir, options()).unwrap();
    assert_eq!(db.replay_stats().wbl.samples, 1);
    let got = db.querier(0, 2000).select(&[]).unwrap()[0]
        .samples()
        .unwrap();
    assert_eq!(got, vec![(900, 1.0), (1000, 1.0)]);
}

/// A v3.16 checkpoint starts with a min_valid_time record: understood, and
/// applied as v3.16 does (older WAL samples dropped).
#[test]
fn checkpoint_min_valid_time_is_applied() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    fs::create_dir(dir.join("chunks_head")).unwrap();
    let mut mvt = Vec::new();
    encode_min_valid_time(&mut mvt, 2000);
    write_segment(
        &dir.join("wal/checkpoint.00000000/00000000"),
        &[
            mvt,
            series_record(1, "a"),
            samples_record(&[(1, 1000, 1.0), (1, 2000, 2.0)]),
        ],
    );
    write_segment(
        &dir.join("wal/00000001"),
        &[samples_record(&[(1, 1500, 9.0), (1, 3000, 3.0)])],
    );
    let db = Db::open(dir, options()).unwrap();
    assert_eq!(db.replay_stats().checkpoint_min_valid_time, Some(2000));
    let got: Vec<(Labels, Vec<(i64, f64)>)> = db
        .querier(i64::MIN, i64::MAX)
        .select(&[])
        .unwrap()
        .into_iter()
        .map(|s| (s.labels.clone(), s.samples().unwrap()))
        .collect();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].1, [(2000, 2.0), (3000, 3.0)]);
    // Appends below it are refused, as after a truncation.
    assert!(db.head().appendable_min_valid_time() >= 2000);
}

/// Rewrites the encoding byte of the first chunk of `chunks/000001` and its
/// checksum, as a chunk written with that encoding would be.
fn patch_block_chunk_encoding(block_dir: &Path, encoding: u8) -> PathBuf {
    let file = block_dir.join("chunks/000001");
    let mut b = fs::read(&file).unwrap();
    let mut pos = 8;
    let mut len = 0u64;
    let mut shift = 0;
    loop {
        let byte = b[pos];
        pos += 1;
        len |= u64::from(byte & 0x7f) << shift;
        shift += 7;
        if byte & 0x80 == 0 {
            break;
        }
    }
    let end = pos + 1 + len as usize;
    b[pos] = encoding;
    let crc = crc32c::crc32c(&b[pos..end]);
    b[end..end + 4].copy_from_slice(&crc.to_be_bytes());
    fs::write(&file, b).unwrap();
    file
}

#[test]
fn unknown_block_chunk_encodings_fail_reads_and_compaction_unchanged() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    {
        let db = Db::open(dir, options()).unwrap();
        let mut app = db.appender();
        let l = Labels::from_pairs(&[("__name__", "h"), ("job", "j")]);
        for t in 0..100 {
            app.append(&l, t * 1000, t as f64).unwrap();
        }
        app.commit().unwrap();
        assert_eq!(db.compact_head_fully().unwrap().len(), 1);
        db.close().unwrap();
    }
    let block_dir = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.join("meta.json").exists())
        .unwrap();
    // An encoding byte no Prometheus writes.
    let file = patch_block_chunk_encoding(&block_dir, 9);

    // Opening does not scan block chunks; reading one fails.
    let before = snapshot(&block_dir);
    let db = Db::open(dir, options()).unwrap();
    let series = db.querier(i64::MIN, i64::MAX).select(&[]).unwrap();
    assert_eq!(series.len(), 1);
    let err = series[0].samples().unwrap_err();
    let msg = err.to_string();
    match err {
        QueryError::Unsupported(u) => {
            assert_eq!(u.kind, UnsupportedKind::BlockChunk(9));
            assert_eq!(u.file, file);
            assert!(u.series.unwrap_or_default().contains("\"h\""));
        }
        e => panic!("want unsupported, got {e:?}"),
    }
    assert!(msg.contains("unsupported"), "{msg}");

    // Compaction fails and leaves the source block as it was.
    let blocks: Vec<Arc<_>> = db.blocks();
    let out = tempfile::tempdir().unwrap();
    let err = ferrite_tsdb::compact::compact_blocks(
        out.path(),
        &[blocks[0].clone()],
        None,
        ferrite_chunkenc::Encoding::Xor,
    )
    .map(|_| ())
    .unwrap_err();
    assert!(err.to_string().contains("unsupported"), "{err}");
    assert!(snapshot(out.path()).is_empty(), "no partial block left");
    drop(blocks);
    db.close().unwrap();
    // The block, not even marked compaction.failed.
    assert_unchanged(&before, &snapshot(&block_dir));
}

/// The server's compaction loop: the leveled planner picks the blocks, the
/// compaction fails on the histogram chunk, and the blocks are left as
/// they are (meta.json not marked `compaction.failed`), skipped until
/// restart so the loop carries on.
#[test]
fn db_compaction_leaves_blocks_with_non_xor_chunks_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let h2 = 2 * 3600 * 1000;
    {
        let db = Db::open(dir, options()).unwrap();
        let mut app = db.appender();
        let l = Labels::from_pairs(&[("__name__", "h"), ("job", "j")]);
        let mut t = 0;
        while t < 4 * h2 {
            app.append(&l, t, 1.0).unwrap();
            t += 60_000;
        }
        app.commit().unwrap();
        db.compact_head_fully().unwrap();
        assert_eq!(db.blocks().len(), 4);
        db.close().unwrap();
    }
    let mut block_dirs: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("meta.json").exists())
        .collect();
    block_dirs.sort();
    // A byte no Prometheus writes: never copied into a new block.
    patch_block_chunk_encoding(&block_dirs[0], 9);
    let before: Vec<_> = block_dirs.iter().map(|b| snapshot(b)).collect();

    let db = Db::open(dir, options()).unwrap();
    let err = db.compact().map(|_| ()).unwrap_err().to_string();
    assert!(err.contains("unsupported"), "{err}");
    for (b, snap) in block_dirs.iter().zip(&before) {
        assert_unchanged(snap, &snapshot(b));
    }
    // Skipped from now on: the next cycle goes through.
    db.compact().unwrap();
    assert_eq!(db.blocks().len(), 4);
    db.close().unwrap();
    for (b, snap) in block_dirs.iter().zip(&before) {
        assert_unchanged(snap, &snapshot(b));
    }
}
