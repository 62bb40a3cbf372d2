//! Checkpoints: byte-for-byte against `wlog.Checkpoint` of Prometheus v3.9.1
//! (testdata/checkpoint, see its README), filtering of every record type,
//! replay order, atomicity and deletion.

use std::fs;
use std::path::{Path, PathBuf};

use ferrite_wal::checkpoint::*;
use ferrite_wal::record::*;
use ferrite_wal::{
    segment_path, Compression, RecordReader, SegmentRef, WalError, WalOptions, WalWriter,
};

fn testdata_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata/checkpoint")
}

fn opts(compression: Compression) -> WalOptions {
    WalOptions {
        compression,
        ..WalOptions::default()
    }
}

/// Copies the Prometheus-written WAL segments (not its checkpoints).
fn copy_prometheus_wal(to: &Path) {
    fs::create_dir_all(to).unwrap();
    for i in 0..4 {
        fs::copy(segment_path(&testdata_dir(), i), segment_path(to, i)).unwrap();
    }
}

fn read_records(dir: &Path) -> Vec<Vec<u8>> {
    let segments = ferrite_wal::list_segments(dir).unwrap();
    let mut reader = RecordReader::new(segments);
    let mut out = Vec::new();
    while let Some(rec) = reader.next_record().unwrap() {
        out.push(rec.to_vec());
    }
    out
}

/// A readable line per entry, for comparing record contents.
fn describe(rec: &[u8]) -> Vec<String> {
    let typ = RecordType::of(rec);
    let mut lines = Vec::new();
    match typ {
        RecordType::Series => {
            decode_series(rec, |r, l| lines.push(format!("series {r} {l:?}"))).unwrap()
        }
        RecordType::Samples => {
            let mut v = Vec::new();
            decode_samples(rec, &mut v).unwrap();
            lines.extend(
                v.iter()
                    .map(|s| format!("sample {} {} {}", s.series_ref, s.t, s.v)),
            );
        }
        RecordType::Tombstones => {
            let mut v = Vec::new();
            decode_tombstones(rec, &mut v).unwrap();
            lines.extend(
                v.iter()
                    .map(|s| format!("tombstone {} {:?}", s.series_ref, s.intervals)),
            );
        }
        RecordType::Exemplars => {
            let mut v = Vec::new();
            decode_exemplars(rec, &mut v).unwrap();
            lines.extend(
                v.iter()
                    .map(|e| format!("exemplar {} {} {} {:?}", e.series_ref, e.t, e.v, e.labels)),
            );
        }
        RecordType::Metadata => {
            let mut v = Vec::new();
            decode_metadata(rec, &mut v).unwrap();
            v.sort_by_key(|m| m.series_ref);
            lines.extend(v.iter().map(|m| {
                format!(
                    "metadata {} {} {:?} {:?}",
                    m.series_ref, m.metric_type, m.unit, m.help
                )
            }));
        }
        RecordType::MmapMarkers => {
            let mut v = Vec::new();
            decode_mmap_markers(rec, &mut v).unwrap();
            lines.extend(
                v.iter()
                    .map(|m| format!("mmap {} {}", m.series_ref, m.mmap_ref)),
            );
        }
        RecordType::HistogramSamples | RecordType::CustomBucketsHistogramSamples => {
            let mut v = Vec::new();
            decode_histogram_samples(rec, &mut v).unwrap();
            lines.extend(v.iter().map(|s| {
                format!(
                    "{} {} {} schema {}",
                    typ.name(),
                    s.series_ref,
                    s.t,
                    s.h.schema
                )
            }));
        }
        RecordType::FloatHistogramSamples | RecordType::CustomBucketsFloatHistogramSamples => {
            let mut v = Vec::new();
            decode_float_histogram_samples(rec, &mut v).unwrap();
            lines.extend(v.iter().map(|s| {
                format!(
                    "{} {} {} schema {}",
                    typ.name(),
                    s.series_ref,
                    s.t,
                    s.h.schema
                )
            }));
        }
        RecordType::MinValidTime => lines.push(format!(
            "min_valid_time {}",
            decode_min_valid_time(rec).unwrap()
        )),
        RecordType::SamplesV2
        | RecordType::HistogramSamplesV2
        | RecordType::FloatHistogramSamplesV2
        | RecordType::Unknown(_) => lines.push(format!("unknown {}", typ.as_u8())),
    }
    lines
}

fn describe_all(dir: &Path) -> Vec<String> {
    read_records(dir).iter().flat_map(|r| describe(r)).collect()
}

fn keep_a(r: u64) -> bool {
    r != 2
}

fn keep_b(r: u64) -> bool {
    r != 2 && r != 3
}

/// What Prometheus put in checkpoint.00000001 (segments 0-1, series 2
/// dropped, mint 1000).
const CHECKPOINT_A: &[&str] = &[
    r#"series 1 [("__name__", "a"), ("job", "x")]"#,
    r#"series 3 [("__name__", "c"), ("le", "0.5")]"#,
    "sample 3 1000 3",
    "sample 1 1100 4",
    r#"exemplar 1 1001 0.7 [("trace_id", "t2")]"#,
    "tombstone 1 [(900, 1500)]",
    "tombstone 2 [(1200, 1300)]",
    r#"series 4 [("__name__", "d")]"#,
    "sample 1 1200 5",
    "histogram_samples 4 1500 schema -4",
    "histogram_samples 4 1950 schema 3",
    "float_histogram_samples 4 1600 schema 1",
    "custom_buckets_histogram_samples 4 1700 schema -53",
    "custom_buckets_float_histogram_samples 4 1800 schema -53",
    r#"metadata 1 1 "seconds" "new help""#,
];

#[test]
fn prometheus_checkpoints_read_by_ferrite() {
    let a = testdata_dir().join(checkpoint_dir_name(1));
    assert_eq!(describe_all(&a), CHECKPOINT_A);
    let b = testdata_dir().join(checkpoint_dir_name(2));
    assert_eq!(
        describe_all(&b),
        [
            r#"series 1 [("__name__", "a"), ("job", "x")]"#,
            r#"series 4 [("__name__", "d")]"#,
            r#"series 5 [("__name__", "e")]"#,
            "sample 5 2500 7",
            "sample 1 2100 9",
            "tombstone 3 [(1500, 2500)]",
            r#"metadata 1 1 "seconds" "new help""#,
            r#"metadata 5 2 "bytes" "e help""#,
        ]
    );
}

#[test]
fn checkpoints_match_prometheus_byte_for_byte() {
    let tmp = tempfile::tempdir().unwrap();
    let wal = tmp.path().join("wal");
    copy_prometheus_wal(&wal);

    let stats = write_checkpoint(&wal, 0, 1, &keep_a, 1000, opts(Compression::None)).unwrap();
    // The counts `wlog.Checkpoint` reported for the same input.
    assert_eq!(
        stats,
        CheckpointStats {
            total_series: 4,
            dropped_series: 1,
            total_samples: 14,
            dropped_samples: 6,
            total_tombstones: 3,
            dropped_tombstones: 1,
            total_exemplars: 2,
            dropped_exemplars: 1,
            total_metadata: 3,
            dropped_metadata: 2,
            skipped_records: 2,
        }
    );
    // The testdata comes from Prometheus v3.9.1, which wrote no
    // min_valid_time record; v3.16 writes it first, as we do. The rest is
    // record-for-record what v3.9.1 wrote.
    let ours = read_records(&wal.join("checkpoint.00000001"));
    let theirs = read_records(&testdata_dir().join("checkpoint.00000001"));
    assert_eq!(describe(&ours[0]), ["min_valid_time 1000"]);
    assert!(
        ours[1..] == theirs[..],
        "checkpoint.00000001 differs from Prometheus'"
    );

    // The second checkpoint starts from the first.
    let stats = write_checkpoint(&wal, 2, 2, &keep_b, 2000, opts(Compression::None)).unwrap();
    assert_eq!(
        (
            stats.total_series,
            stats.dropped_series,
            stats.total_samples,
            stats.dropped_samples,
            stats.total_tombstones,
            stats.dropped_tombstones,
            stats.total_exemplars,
            stats.dropped_exemplars,
            stats.total_metadata,
            stats.dropped_metadata
        ),
        (4, 1, 11, 9, 3, 2, 1, 1, 3, 1)
    );
    // Identical records, except that Prometheus orders the final metadata
    // record by Go map iteration (random) and we by ref.
    let ours = read_records(&wal.join(checkpoint_dir_name(2)));
    let theirs = read_records(&testdata_dir().join(checkpoint_dir_name(2)));
    // max(2000, the 1000 checkpoint 1 recorded); its own copy not repeated.
    assert_eq!(describe(&ours[0]), ["min_valid_time 2000"]);
    let ours = &ours[1..];
    assert_eq!(ours.len(), theirs.len());
    for (o, t) in ours.iter().zip(&theirs) {
        if RecordType::of(o) == RecordType::Metadata {
            assert_eq!(describe(o), describe(t));
        } else {
            assert_eq!(o, t);
        }
    }
}

#[test]
fn replay_sources_of_prometheus_dir() {
    let (cp, segments) = replay_sources(&testdata_dir()).unwrap();
    assert_eq!(cp, Some((testdata_dir().join("checkpoint.00000002"), 2)));
    assert_eq!(
        segments,
        vec![SegmentRef {
            index: 3,
            path: segment_path(&testdata_dir(), 3)
        }]
    );
}

/// Logs the same content as the Prometheus test WAL with Ferrite's writer.
fn write_test_wal(dir: &Path, compression: Compression) {
    let mut w = WalWriter::open(
        dir,
        WalOptions {
            segment_size: 64 * 1024,
            ..opts(compression)
        },
    )
    .unwrap();
    let mut buf = Vec::new();
    let mut log = |buf: &Vec<u8>| w.log(&[buf]).unwrap();
    let mut b = SeriesRecordBuilder::new(&mut buf);
    b.add(1, &[("__name__", "a"), ("job", "x")]);
    b.add(2, &[("__name__", "b")]);
    b.add(3, &[("__name__", "c"), ("le", "0.5")]);
    log(&buf);
    let s = |series_ref, t, v| RefSample {
        st: 0,
        series_ref,
        t,
        v,
    };
    encode_samples(
        &mut buf,
        &[
            s(1, 900, 1.0),
            s(2, 950, 2.0),
            s(3, 1000, 3.0),
            s(1, 1100, 4.0),
        ],
    );
    log(&buf);
    let md = |series_ref, metric_type, unit: &str, help: &str| RefMetadata {
        series_ref,
        metric_type,
        unit: unit.into(),
        help: help.into(),
    };
    encode_metadata(
        &mut buf,
        &[
            md(1, 1, "seconds", "old help"),
            md(2, 2, "", "dropped series"),
        ],
    );
    log(&buf);
    let ex = |t, v, trace: &str| RefExemplar {
        series_ref: 1,
        t,
        v,
        labels: vec![("trace_id".into(), trace.into())],
    };
    encode_exemplars(&mut buf, &[ex(999, 0.5, "t1"), ex(1001, 0.7, "t2")]);
    log(&buf);
    encode_tombstones(
        &mut buf,
        &[
            Stone {
                series_ref: 1,
                intervals: vec![(0, 500), (900, 1500)],
            },
            Stone {
                series_ref: 2,
                intervals: vec![(1200, 1300)],
            },
        ],
    );
    log(&buf);
    encode_mmap_markers(
        &mut buf,
        &[RefMmapMarker {
            series_ref: 1,
            mmap_ref: 123,
        }],
    );
    log(&buf);
    let mut b = SeriesRecordBuilder::new(&mut buf);
    b.add(4, &[("__name__", "d")]);
    log(&buf);
    w.next_segment().unwrap();
    w.close().unwrap();
}

#[test]
fn ferrite_wal_checkpoint_and_compressions() {
    for compression in [Compression::None, Compression::Snappy, Compression::Zstd] {
        let tmp = tempfile::tempdir().unwrap();
        let wal = tmp.path();
        write_test_wal(wal, compression);
        let stats = write_checkpoint(wal, 0, 0, &keep_a, 1000, opts(compression)).unwrap();
        assert_eq!(stats.kept_series(), 3);
        assert_eq!(stats.kept_samples(), 2);
        assert_eq!(stats.kept_tombstones(), 2);
        assert_eq!(stats.kept_exemplars(), 1);
        assert_eq!(stats.kept_metadata(), 1);
        assert_eq!(stats.skipped_records, 1);
        let cp = wal.join("checkpoint.00000000");
        assert_eq!(
            describe_all(&cp),
            [
                "min_valid_time 1000",
                r#"series 1 [("__name__", "a"), ("job", "x")]"#,
                r#"series 3 [("__name__", "c"), ("le", "0.5")]"#,
                "sample 3 1000 3",
                "sample 1 1100 4",
                r#"exemplar 1 1001 0.7 [("trace_id", "t2")]"#,
                "tombstone 1 [(900, 1500)]",
                "tombstone 2 [(1200, 1300)]",
                r#"series 4 [("__name__", "d")]"#,
                r#"metadata 1 1 "seconds" "old help""#,
            ],
            "{compression:?}"
        );
        // Segment 1 (empty, after the checkpoint) is what replay reads next.
        let (found, segments) = replay_sources(wal).unwrap();
        assert_eq!(found, Some((cp, 0)));
        assert_eq!(segments.iter().map(|s| s.index).collect::<Vec<_>>(), [1]);
    }
}

#[test]
fn checkpoint_of_everything_dropped_is_empty() {
    let tmp = tempfile::tempdir().unwrap();
    write_test_wal(tmp.path(), Compression::Snappy);
    let stats = write_checkpoint(
        tmp.path(),
        0,
        0,
        &|_| false,
        i64::MAX,
        opts(Compression::Snappy),
    )
    .unwrap();
    assert_eq!(
        stats.kept_series() + stats.kept_samples() + stats.kept_metadata(),
        0
    );
    let left = read_records(&tmp.path().join("checkpoint.00000000"));
    assert_eq!(left.len(), 1);
    assert_eq!(describe(&left[0]), [format!("min_valid_time {}", i64::MAX)]);
}

#[test]
fn last_checkpoint_ignores_tmp_and_other_names() {
    let tmp = tempfile::tempdir().unwrap();
    let wal = tmp.path();
    assert_eq!(last_checkpoint(wal).unwrap(), None);
    assert_eq!(last_checkpoint(&wal.join("missing")).unwrap(), None);
    for name in [
        "checkpoint.00000003",
        "checkpoint.00000010",
        "checkpoint.00000042.tmp",
        "checkpoint.x",
        "checkpoint.",
        "checkpoints.00000099",
    ] {
        fs::create_dir(wal.join(name)).unwrap();
    }
    assert_eq!(
        last_checkpoint(wal).unwrap(),
        Some((wal.join("checkpoint.00000010"), 10))
    );
    assert_eq!(checkpoint_dir_name(7), "checkpoint.00000007");
    assert_eq!(checkpoint_dir_name(123_456_789), "checkpoint.123456789");
    assert_eq!(
        parse_checkpoint_name("checkpoint.123456789"),
        Some(123_456_789)
    );
    assert_eq!(parse_checkpoint_name("checkpoint.7"), Some(7));
    assert_eq!(parse_checkpoint_name("checkpoint.00000007.tmp"), None);
    assert_eq!(parse_checkpoint_name("checkpoint.-7"), None);
    assert_eq!(parse_checkpoint_name("checkpoint.99999999999"), None);

    // Like Prometheus, a file posing as a checkpoint is an error.
    fs::write(wal.join("checkpoint.00000011"), b"").unwrap();
    assert!(matches!(last_checkpoint(wal), Err(WalError::Io(_))));
}

#[test]
fn interrupted_checkpoint_is_invisible_and_replaced() {
    let tmp = tempfile::tempdir().unwrap();
    let wal = tmp.path();
    write_test_wal(wal, Compression::None);
    // A crash left a half-written checkpoint behind.
    let stale = wal.join("checkpoint.00000000.tmp");
    fs::create_dir(&stale).unwrap();
    fs::write(stale.join("00000000"), b"garbage").unwrap();
    fs::create_dir(wal.join("checkpoint.00000007.tmp")).unwrap();
    let (cp, segments) = replay_sources(wal).unwrap();
    assert_eq!(cp, None);
    assert_eq!(segments.len(), 2);

    write_checkpoint(wal, 0, 0, &keep_a, 1000, opts(Compression::None)).unwrap();
    assert!(!stale.exists());
    assert_eq!(describe_all(&wal.join("checkpoint.00000000")).len(), 10);
    assert_eq!(remove_tmp_checkpoints(wal).unwrap(), 1);
    assert!(!wal.join("checkpoint.00000007.tmp").exists());
}

#[test]
fn failed_checkpoint_leaves_nothing_visible() {
    let tmp = tempfile::tempdir().unwrap();
    let wal = tmp.path();
    write_test_wal(wal, Compression::None);
    // Damage a record inside segment 0 (its CRC no longer matches).
    let seg = segment_path(wal, 0);
    let mut bytes = fs::read(&seg).unwrap();
    bytes[20] ^= 0xff;
    fs::write(&seg, bytes).unwrap();
    let err = write_checkpoint(wal, 0, 0, &keep_a, 1000, opts(Compression::None)).unwrap_err();
    assert!(matches!(err, CheckpointError::Read { .. }), "{err}");
    let names: Vec<_> = fs::read_dir(wal)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with("checkpoint"))
        .collect();
    assert!(names.is_empty(), "{names:?}");
}

#[test]
fn undecodable_record_is_a_record_error() {
    let tmp = tempfile::tempdir().unwrap();
    let wal = tmp.path();
    let mut w = WalWriter::open(wal, opts(Compression::None)).unwrap();
    w.log(&[&[2, 0, 0, 0]]).unwrap(); // samples record with a cut base
    w.close().unwrap();
    let err = write_checkpoint(wal, 0, 0, &keep_a, 0, opts(Compression::None)).unwrap_err();
    match err {
        CheckpointError::Record {
            segment,
            offset,
            record_type,
            ..
        } => assert_eq!((segment, offset, record_type), (0, 0, "samples")),
        other => panic!("{other}"),
    }
    assert_eq!(last_checkpoint(wal).unwrap(), None);
}

#[test]
fn gap_after_last_checkpoint_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let wal = tmp.path();
    write_test_wal(wal, Compression::None);
    write_checkpoint(wal, 0, 0, &keep_a, 0, opts(Compression::None)).unwrap();
    let err = write_checkpoint(wal, 2, 3, &keep_a, 0, opts(Compression::None)).unwrap_err();
    assert!(
        matches!(
            err,
            CheckpointError::Gap {
                last_checkpoint: 0,
                expected: 1,
                from: 2
            }
        ),
        "{err}"
    );
    // A range starting earlier is clamped to right after the checkpoint.
    write_checkpoint(wal, 0, 1, &keep_a, 0, opts(Compression::None)).unwrap();
    assert_eq!(
        describe_all(&wal.join("checkpoint.00000001")),
        describe_all(&wal.join("checkpoint.00000000"))
    );
}

#[test]
fn replay_skips_segments_below_the_checkpoint() {
    let tmp = tempfile::tempdir().unwrap();
    let wal = tmp.path();
    // Old segments 0 and 2 (with a gap) survived an interrupted truncation.
    for i in [0, 2, 4, 5, 6] {
        fs::write(segment_path(wal, i), b"").unwrap();
    }
    fs::create_dir(wal.join("checkpoint.00000003")).unwrap();
    let (cp, segments) = replay_sources(wal).unwrap();
    assert_eq!(cp.map(|c| c.1), Some(3));
    assert_eq!(
        segments.iter().map(|s| s.index).collect::<Vec<_>>(),
        [4, 5, 6]
    );

    // A hole right after the checkpoint means lost data.
    fs::remove_file(segment_path(wal, 4)).unwrap();
    assert!(matches!(
        replay_sources(wal),
        Err(WalError::NonSequentialSegments {
            before: 3,
            after: 5,
            ..
        })
    ));
    // Without a checkpoint every segment counts.
    fs::remove_dir(wal.join("checkpoint.00000003")).unwrap();
    assert!(replay_sources(wal).is_err());
}

#[test]
fn delete_checkpoints_below_index() {
    let tmp = tempfile::tempdir().unwrap();
    let wal = tmp.path();
    for name in [
        "checkpoint.00000001",
        "checkpoint.00000002",
        "checkpoint.00000002.tmp",
        "checkpoint.00000005",
        "checkpoint.00000009.tmp",
    ] {
        fs::create_dir(wal.join(name)).unwrap();
        fs::write(wal.join(name).join("00000000"), b"x").unwrap();
    }
    delete_checkpoints(wal, 5).unwrap();
    let mut left: Vec<_> = fs::read_dir(wal)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    left.sort();
    assert_eq!(left, ["checkpoint.00000005", "checkpoint.00000009.tmp"]);
    delete_checkpoints(&wal.join("missing"), 5).unwrap();
}

/// Prometheus v3.16 keeps the highest min valid time any checkpoint
/// recorded (`wlog.Checkpoint` with `ReadMinValidTime`): a lower `mint`
/// after a restart does not lower it.
#[test]
fn min_valid_time_is_carried_and_never_lowered() {
    let tmp = tempfile::tempdir().unwrap();
    let wal = tmp.path();
    write_test_wal(wal, Compression::None);
    assert_eq!(read_min_valid_time(wal).unwrap(), None);
    write_checkpoint(wal, 0, 0, &keep_a, 1000, opts(Compression::None)).unwrap();
    assert_eq!(read_min_valid_time(wal).unwrap(), Some(1000));
    // A later truncation with a lower mint (e.g. after a restart).
    write_checkpoint(wal, 1, 1, &keep_a, 500, opts(Compression::None)).unwrap();
    assert_eq!(read_min_valid_time(wal).unwrap(), Some(1000));
    let recs = read_records(&wal.join("checkpoint.00000001"));
    let n = recs
        .iter()
        .filter(|r| RecordType::of(r) == RecordType::MinValidTime)
        .count();
    assert_eq!(n, 1, "the previous checkpoint's record is not copied");
}

/// v3.16's start-timestamp records (Prometheus-written, see
/// testdata/records) are checkpointed as Prometheus v3.16 does without its
/// `st-storage` feature: as v1 records, start timestamps dropped, and a
/// histogram record holding both kinds split into an exponential record
/// followed by a custom buckets one.
#[test]
fn v2_records_are_checkpointed_as_v1() {
    let record = |name: &str| {
        let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("testdata/records")
            .join(name);
        fs::read(&p).unwrap()
    };
    let tmp = tempfile::tempdir().unwrap();
    let wal = tmp.path();
    let mut w = WalWriter::open(wal, opts(Compression::None)).unwrap();
    for name in [
        "samples_v2.bin",
        "histogram_samples_v2.bin",
        "float_histogram_samples_v2.bin",
    ] {
        w.log(&[&record(name)]).unwrap();
    }
    w.close().unwrap();
    // Every sample's series kept, those before t=1000 dropped.
    write_checkpoint(wal, 0, 0, &|_| true, 1000, opts(Compression::None)).unwrap();
    let recs = read_records(&wal.join("checkpoint.00000000"));
    let types: Vec<RecordType> = recs.iter().map(|r| RecordType::of(r)).collect();
    assert_eq!(
        types,
        [
            RecordType::MinValidTime,
            RecordType::Samples,
            RecordType::HistogramSamples,
            RecordType::CustomBucketsHistogramSamples,
            RecordType::FloatHistogramSamples,
            RecordType::CustomBucketsFloatHistogramSamples,
        ]
    );
    let mut samples = Vec::new();
    decode_samples(&recs[1], &mut samples).unwrap();
    let kept: Vec<(u64, i64, i64)> = samples.iter().map(|s| (s.series_ref, s.st, s.t)).collect();
    assert_eq!(
        kept,
        [
            (7, 0, 5000),
            (9, 0, 5000),
            (3, 0, 4000),
            (3, 0, 6000),
            (1 << 40, 0, 7000)
        ]
    );
    let mut hs = Vec::new();
    decode_histogram_samples(&recs[2], &mut hs).unwrap();
    let exp: Vec<(u64, i64)> = hs.iter().map(|h| (h.series_ref, h.t)).collect();
    assert_eq!(exp, [(4, 1000), (4, 2000)]);
    decode_histogram_samples(&recs[3], &mut hs).unwrap();
    let custom: Vec<(u64, i64, i32)> = hs.iter().map(|h| (h.series_ref, h.t, h.h.schema)).collect();
    assert_eq!(custom, [(5, 1000, -53)]);
    let mut fhs = Vec::new();
    decode_float_histogram_samples(&recs[4], &mut fhs).unwrap();
    let t: Vec<(i64, i64)> = fhs.iter().map(|h| (h.st, h.t)).collect();
    assert_eq!(t, [(0, 3000), (0, 4000)]);
    decode_float_histogram_samples(&recs[5], &mut fhs).unwrap();
    assert_eq!(fhs.len(), 1);
    assert_eq!((fhs[0].series_ref, fhs[0].st), (10, 0));
}
