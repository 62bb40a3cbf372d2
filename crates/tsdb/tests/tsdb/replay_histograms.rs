//! Native histograms survive a restart: WAL records of every histogram
//! type (v1 and v3.16's v2, in segments and checkpoints) replay in order
//! with the floats around them, and histogram head chunks load from
//! `chunks_head/`.

use std::fs;
use std::path::Path;

use ferrite_model::resolution::ReduceResolution;
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

/// A v1 integer histogram record of `(series ref, time, histogram)`s.
fn int_histogram_record(samples: Vec<(u64, i64, Histogram)>) -> Vec<u8> {
    let samples: Vec<RefHistogramSample> = samples
        .into_iter()
        .map(|(series_ref, t, h)| RefHistogramSample {
            series_ref,
            st: 0,
            t,
            h,
        })
        .collect();
    let mut rec = Vec::new();
    encode_histogram_samples(&mut rec, &samples);
    rec
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

/// One appender whose series change kind in every way (floats and
/// histograms, integer and float histograms, custom and exponential
/// buckets): every sample is stored, and after a restart each series'
/// samples replay in append order (the WAL batches keep a series' kinds
/// apart, so no sample of it is logged ahead of an older one).
#[test]
fn kind_switches_in_one_appender_replay_in_order() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let name = |n: &str| Labels::from_pairs(&[("__name__", n)]);
    let (a, b, c, d) = (name("a"), name("b"), name("c"), name("d"));
    let before;
    {
        let db = Db::open(dir, options()).unwrap();
        let mut app = db.appender();
        app.append_histogram(&a, 1000, histogram(1, 2)).unwrap();
        app.append_histogram(&d, 1000, histogram(1, 2)).unwrap();
        // A float of a series without histograms, then a switch to floats
        // and back.
        app.append(&b, 1000, 1.0).unwrap();
        app.append(&a, 2000, 2.0).unwrap();
        app.append_histogram(&a, 3000, histogram(3, 2)).unwrap();
        // Integer to float histograms and back.
        app.append_float_histogram(&d, 2000, histogram(2, 2).to_float())
            .unwrap();
        app.append_histogram(&d, 3000, histogram(3, 2)).unwrap();
        // Custom buckets, exponential ones, a float.
        app.append_histogram(&c, 1000, histogram(1, -53)).unwrap();
        app.append_histogram(&c, 2000, histogram(2, 2)).unwrap();
        app.append(&c, 3000, 3.0).unwrap();
        app.commit().unwrap();
        before = contents(&db);
        db.close().unwrap();
    }
    let counts: Vec<(&str, usize)> = before.iter().map(|(n, v)| (n.as_str(), v.len())).collect();
    assert_eq!(counts, [("a", 3), ("b", 1), ("c", 3), ("d", 3)]);
    let db = Db::open(dir, options()).unwrap();
    assert_eq!(contents(&db), before);
    db.close().unwrap();
}

/// Histograms of the schemas Prometheus reserves for finer resolution
/// (9..=52, from a newer writer) replay reduced to schema 8, integer ones
/// staying integer, from segments (v1 and v2 records) and checkpoints.
#[test]
fn histograms_of_finer_schemas_replay_reduced_to_8() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // Schema 10 to 8: index i goes to ((i - 1) >> 2) + 1, so 1..=4 merge
    // into 1 and 5 goes to 2: absolute 1+2+3+4 = 10, then 5.
    let int = |i: u64, schema: i32| Histogram {
        schema,
        zero_threshold: 0.001,
        zero_count: i,
        count: 15 + 3 + i,
        sum: 2.5,
        positive_spans: vec![Span {
            offset: 1,
            length: 5,
        }],
        positive_buckets: vec![1, 1, 1, 1, 1],
        // Schema 52 to 8: -3 lands in 0, 97 in 1.
        negative_spans: vec![
            Span {
                offset: -3,
                length: 1,
            },
            Span {
                offset: 100,
                length: 1,
            },
        ],
        negative_buckets: vec![1, 1],
        ..Histogram::default()
    };
    let reduced = |h: &Histogram| {
        let mut r = h.clone();
        r.reduce_reserved_schema().unwrap();
        r
    };
    let sample = |t: i64, h: Histogram| RefHistogramSample {
        series_ref: 1,
        st: 0,
        t,
        h,
    };
    let float_sample = |t: i64, h: FloatHistogram| RefFloatHistogramSample {
        series_ref: 2,
        st: 0,
        t,
        h,
    };
    let in_checkpoint = int_histogram_record(vec![(1, 1000, int(1, 10))]);
    write_segment(
        &dir.join("wal/checkpoint.00000000/00000000"),
        &[series_record(1, "h"), series_record(2, "f"), in_checkpoint],
    );
    let v1 = int_histogram_record(vec![(1, 2000, int(2, 52))]);
    let mut v2 = Vec::new();
    encode_histogram_samples_v2(&mut v2, &[sample(3000, int(3, 9))]);
    let mut floats = Vec::new();
    encode_float_histogram_samples(
        &mut floats,
        &[
            float_sample(1000, int(1, 30).to_float()),
            float_sample(2000, int(2, 8).to_float()),
        ],
    );
    let mut floats_v2 = Vec::new();
    encode_float_histogram_samples_v2(&mut floats_v2, &[float_sample(3000, int(3, 11).to_float())]);
    write_segment(&dir.join("wal/00000001"), &[v1, v2, floats, floats_v2]);

    let db = Db::open(dir, options()).unwrap();
    assert!(db.replay_stats().corruption.is_none());
    // Spelled out once, the rest by the reduction checked against
    // Prometheus in ferrite-model.
    let first = reduced(&int(1, 10));
    assert_eq!(first.schema, 8);
    let spans = |v: &[(i32, u32)]| -> Vec<Span> {
        v.iter()
            .map(|&(offset, length)| Span { offset, length })
            .collect()
    };
    assert_eq!(first.positive_spans, spans(&[(1, 2)]));
    assert_eq!(first.positive_buckets, [10, -5]);
    // -3 lands in ((-4 >> 2) + 1) = 0, 97 in 25: absolute 1 and 2.
    assert_eq!(first.negative_spans, spans(&[(0, 1), (24, 1)]));
    assert_eq!(first.negative_buckets, [1, 1]);
    // Every sample lacks a bucket the one before has (its layout comes
    // from another schema): a counter reset, so each starts a chunk and
    // reads back with an unknown hint.
    let want_int = vec![
        (1000, as_read(first, true)),
        (2000, as_read(reduced(&int(2, 52)), true)),
        (3000, as_read(reduced(&int(3, 9)), true)),
    ];
    let want_float = vec![
        (1000, float_as_read(&reduced(&int(1, 30)), true)),
        (2000, float_as_read(&int(2, 8), true)),
        (3000, float_as_read(&reduced(&int(3, 11)), true)),
    ];
    assert_eq!(
        contents(&db),
        vec![("f".to_string(), want_float), ("h".to_string(), want_int)]
    );
    db.close().unwrap();
}

/// A histogram of a finer schema whose spans do not fit its buckets cannot
/// be reduced: Prometheus' decoder fails the record, so it is damage,
/// repaired with everything before it kept.
#[test]
fn a_finer_schema_histogram_that_cannot_be_reduced_is_damage() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let good = int_histogram_record(vec![(1, 1000, histogram(1, 12))]);
    let mut bad_layout = histogram(2, 12);
    bad_layout.positive_buckets.pop();
    let bad = int_histogram_record(vec![(1, 2000, histogram(2, 12)), (1, 3000, bad_layout)]);
    write_segment(
        &dir.join("wal/00000000"),
        &[
            series_record(1, "h"),
            good,
            bad,
            samples_record(1, 4000, 1.0),
        ],
    );
    let db = Db::open(dir, options()).unwrap();
    let corruption = db.replay_stats().corruption.clone().expect("damage");
    assert!(
        corruption.reason.contains(
            "error reducing resolution of histogram #2: have 1 buckets but spans need more"
        ),
        "{corruption:?}"
    );
    let mut first = histogram(1, 12);
    first.reduce_reserved_schema().unwrap();
    assert_eq!(
        contents(&db),
        vec![("h".to_string(), vec![(1000, as_read(first, true))])]
    );
    db.close().unwrap();
}
