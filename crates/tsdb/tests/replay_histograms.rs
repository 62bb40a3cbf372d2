//! Native histograms survive a restart: WAL records of every histogram
//! type (v1 and v3.16's v2, in segments and checkpoints) replay in order
//! with the floats around them, and histogram head chunks load from
//! `chunks_head/`.

use std::fs;
use std::path::Path;

use ferrite_model::{FloatHistogram, Histogram, Labels, SampleValue, Span};
use ferrite_tsdb::{Db, DbOptions};
use ferrite_wal::record::*;
use ferrite_wal::{WalOptions, WalWriter};

fn options() -> DbOptions {
    DbOptions {
        keep_expired_blocks: true,
        ..DbOptions::default()
    }
}

fn histogram(i: u64, schema: i32) -> Histogram {
    let custom = schema == -53;
    Histogram {
        schema,
        zero_threshold: if custom { 0.0 } else { 0.001 },
        zero_count: if custom { 0 } else { i },
        count: if custom { 2 * i } else { 3 * i },
        sum: 2.0 * i as f64,
        positive_spans: vec![Span {
            offset: 0,
            length: 2,
        }],
        positive_buckets: vec![i as i64, 0],
        custom_values: if custom { vec![1.0, 2.0] } else { vec![] },
        ..Histogram::default()
    }
}

fn write_segment(path: &Path, records: &[Vec<u8>]) {
    let scratch = tempfile::tempdir().unwrap();
    let mut w = WalWriter::open(scratch.path(), WalOptions::default()).unwrap();
    for r in records {
        w.log(&[r]).unwrap();
    }
    w.close().unwrap();
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::copy(scratch.path().join("00000000"), path).unwrap();
}

fn series_record(r: u64, name: &str) -> Vec<u8> {
    let mut buf = Vec::new();
    SeriesRecordBuilder::new(&mut buf).add(r, &[("__name__", name)]);
    buf
}

fn samples_record(r: u64, t: i64, v: f64) -> Vec<u8> {
    let mut buf = Vec::new();
    encode_samples(
        &mut buf,
        &[RefSample {
            series_ref: r,
            st: 0,
            t,
            v,
        }],
    );
    buf
}

/// Every sample of every series, by metric name.
fn contents(db: &Db) -> Vec<(String, Vec<(i64, SampleValue)>)> {
    db.querier(i64::MIN, i64::MAX)
        .select(&[])
        .unwrap()
        .into_iter()
        .map(|s| {
            let mut v = Vec::new();
            s.for_each_value(|t, x| v.push((t, x.to_owned_value())))
                .unwrap();
            (s.labels.metric_name().to_string(), v)
        })
        .collect()
}

/// The integer histogram as read back: the first sample of a chunk has an
/// unknown counter reset hint, later ones are not resets.
fn as_read(mut h: Histogram, first: bool) -> SampleValue {
    h.counter_reset_hint = if first {
        ferrite_model::CounterResetHint::Unknown
    } else {
        ferrite_model::CounterResetHint::NotCounterReset
    };
    SampleValue::Histogram(Box::new(h))
}

fn float_as_read(h: &Histogram, first: bool) -> SampleValue {
    let SampleValue::Histogram(h) = as_read(h.clone(), first) else {
        unreachable!()
    };
    SampleValue::FloatHistogram(Box::new(h.to_float()))
}

#[test]
fn every_histogram_record_type_replays_in_order() {
    type Encode = fn(&mut Vec<u8>, &[RefHistogramSample]);
    type EncodeFloat = fn(&mut Vec<u8>, &[RefFloatHistogramSample]);
    let int_kinds: [(i32, Encode); 3] = [
        (1, encode_histogram_samples),
        (-53, encode_custom_buckets_histogram_samples),
        (1, encode_histogram_samples_v2),
    ];
    let float_kinds: [(i32, EncodeFloat); 3] = [
        (1, encode_float_histogram_samples),
        (-53, encode_custom_buckets_float_histogram_samples),
        (1, encode_float_histogram_samples_v2),
    ];
    for (k, (schema, encode)) in int_kinds.into_iter().enumerate() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let hs: Vec<RefHistogramSample> = (1..=3)
            .map(|i| RefHistogramSample {
                series_ref: 1,
                st: if k == 2 { 500 } else { 0 },
                t: i as i64 * 1000 + 1000,
                h: histogram(i, schema),
            })
            .collect();
        let mut rec = Vec::new();
        encode(&mut rec, &hs);
        // A float before and after: a series may switch kinds.
        write_segment(
            &dir.join("wal/00000000"),
            &[
                series_record(1, "h"),
                samples_record(1, 1000, 0.5),
                rec,
                samples_record(1, 5000, 0.25),
            ],
        );
        let db = Db::open(dir, options()).unwrap();
        let mut want = vec![(1000, SampleValue::Float(0.5))];
        for (i, h) in hs.iter().enumerate() {
            want.push((h.t, as_read(h.h.clone(), i == 0)));
        }
        want.push((5000, SampleValue::Float(0.25)));
        assert_eq!(contents(&db), vec![("h".to_string(), want)], "kind {k}");
        db.close().unwrap();
    }
    for (k, (schema, encode)) in float_kinds.into_iter().enumerate() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let hs: Vec<RefFloatHistogramSample> = (1..=3)
            .map(|i| RefFloatHistogramSample {
                series_ref: 1,
                st: 0,
                t: i as i64 * 1000,
                h: histogram(i, schema).to_float(),
            })
            .collect();
        let mut rec = Vec::new();
        encode(&mut rec, &hs);
        write_segment(&dir.join("wal/00000000"), &[series_record(1, "f"), rec]);
        let db = Db::open(dir, options()).unwrap();
        let want: Vec<(i64, SampleValue)> = (1..=3u64)
            .map(|i| {
                (
                    i as i64 * 1000,
                    float_as_read(&histogram(i, schema), i == 1),
                )
            })
            .collect();
        assert_eq!(contents(&db), vec![("f".to_string(), want)], "kind {k}");
        db.close().unwrap();
    }
}

#[test]
fn histograms_in_a_checkpoint_replay() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut rec = Vec::new();
    encode_histogram_samples(
        &mut rec,
        &[RefHistogramSample {
            series_ref: 1,
            st: 0,
            t: 1000,
            h: histogram(2, 0),
        }],
    );
    write_segment(
        &dir.join("wal/checkpoint.00000000/00000000"),
        &[series_record(1, "h"), rec],
    );
    let mut rec = Vec::new();
    encode_histogram_samples(
        &mut rec,
        &[RefHistogramSample {
            series_ref: 1,
            st: 0,
            t: 2000,
            h: histogram(3, 0),
        }],
    );
    write_segment(&dir.join("wal/00000001"), &[rec]);
    let db = Db::open(dir, options()).unwrap();
    assert_eq!(
        contents(&db),
        vec![(
            "h".to_string(),
            vec![
                (1000, as_read(histogram(2, 0), true)),
                (2000, as_read(histogram(3, 0), false)),
            ]
        )]
    );
    db.close().unwrap();
}

/// Appended, closed (the WAL holds them, closed chunks are in
/// `chunks_head/`), opened again: the same samples, from chunks and WAL.
#[test]
fn appended_histograms_survive_a_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let l = Labels::from_pairs(&[("__name__", "h")]);
    let lf = Labels::from_pairs(&[("__name__", "fh")]);
    let before;
    {
        let db = Db::open(dir, options()).unwrap();
        for i in 1..=400u64 {
            let mut app = db.appender();
            app.append_histogram(&l, i as i64 * 1000, histogram(i, 2))
                .unwrap();
            let fh: FloatHistogram = histogram(i, -53).to_float();
            app.append_float_histogram(&lf, i as i64 * 1000, fh)
                .unwrap();
            app.commit().unwrap();
        }
        before = contents(&db);
        db.close().unwrap();
    }
    let n_chunk_files = fs::read_dir(dir.join("chunks_head")).unwrap().count();
    assert!(n_chunk_files > 0);
    let db = Db::open(dir, options()).unwrap();
    assert!(db.replay_stats().mmapped_chunks > 0);
    assert_eq!(contents(&db), before);
    assert_eq!(before[0].1.len(), 400);
    // And through a head compaction into a block, and that block read back.
    db.compact_head_fully().unwrap();
    assert_eq!(contents(&db), before);
    db.close().unwrap();
    let db = Db::open(dir, options()).unwrap();
    assert_eq!(contents(&db), before);
    db.close().unwrap();
}
