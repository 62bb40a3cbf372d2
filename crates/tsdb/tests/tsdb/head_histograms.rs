//! Native histograms in the head: appended through the appender, cut into
//! chunks by Prometheus' rules, read back with every kind of value.

use ferrite_chunkenc::CounterResetHeader;
use ferrite_model::{CounterResetHint, FloatHistogram, Histogram, Labels, SampleValue, Span};
use ferrite_tsdb::{AppendError, Db, DbOptions};

fn histogram(i: u64) -> Histogram {
    Histogram {
        schema: 1,
        zero_threshold: 0.001,
        zero_count: i,
        count: 3 * i,
        sum: 1.5 * i as f64,
        positive_spans: vec![Span {
            offset: 0,
            length: 2,
        }],
        positive_buckets: vec![i as i64, 0],
        ..Histogram::default()
    }
}

fn read_all(db: &Db) -> Vec<(i64, SampleValue)> {
    let series = db.querier(i64::MIN, i64::MAX).select(&[]).expect("select");
    assert_eq!(series.len(), 1);
    let mut out = Vec::new();
    series[0]
        .for_each_value(|t, v| out.push((t, v.to_owned_value())))
        .expect("reads");
    out
}

#[test]
fn histograms_floats_and_float_histograms_in_one_series() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let db = Db::open(tmp.path(), DbOptions::default()).expect("open");
    let l = Labels::from_pairs(&[("__name__", "h")]);
    let mut want = Vec::new();
    let mut app = db.appender();
    // 300 histograms: several chunks, cut by size and the 10-sample minimum.
    for i in 1..=300u64 {
        let t = i as i64 * 1000;
        app.append_histogram(&l, t, histogram(i)).expect("appends");
        let mut h = histogram(i);
        // The head writes the counter reset hint the chunk implies.
        h.counter_reset_hint = if i == 1 {
            CounterResetHint::Unknown
        } else {
            CounterResetHint::NotCounterReset
        };
        want.push((t, h));
    }
    // A kind switch in one appender: floats, then float histograms.
    app.append(&l, 301_000, 7.5).expect("appends");
    let fh = FloatHistogram {
        count: 2.5,
        sum: 1.0,
        positive_spans: vec![Span {
            offset: 3,
            length: 1,
        }],
        positive_buckets: vec![2.5],
        ..FloatHistogram::default()
    };
    app.append_float_histogram(&l, 302_000, fh.clone())
        .expect("appends");
    app.commit().expect("commits");

    let got = read_all(&db);
    assert_eq!(got.len(), 302);
    for ((t, v), (wt, wh)) in got.iter().zip(&want) {
        assert_eq!(t, wt);
        match v {
            SampleValue::Histogram(h) => {
                // Hints are the chunk's; compare the rest.
                let mut h = (**h).clone();
                h.counter_reset_hint = wh.counter_reset_hint;
                assert_eq!(&h, wh, "at {t}");
            }
            other => panic!("at {t}: {other:?}"),
        }
    }
    assert_eq!(got[300], (301_000, SampleValue::Float(7.5)));
    match &got[301] {
        (302_000, SampleValue::FloatHistogram(h)) => {
            assert_eq!((h.count, h.sum), (2.5, 1.0));
            assert_eq!(h.positive_buckets, vec![2.5]);
        }
        other => panic!("{other:?}"),
    }
    // The float path sees only the float.
    let series = db.querier(i64::MIN, i64::MAX).select(&[]).expect("select");
    assert_eq!(series[0].samples().expect("reads"), vec![(301_000, 7.5)]);
    db.close().expect("close");
}

#[test]
fn histogram_duplicates_and_order() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let db = Db::open(tmp.path(), DbOptions::default()).expect("open");
    let l = Labels::from_pairs(&[("__name__", "h")]);
    let mut app = db.appender();
    app.append_histogram(&l, 1000, histogram(1))
        .expect("appends");
    app.commit().expect("commits");

    let mut app = db.appender();
    // The same histogram again: accepted, not stored twice.
    app.append_histogram(&l, 1000, histogram(1))
        .expect("duplicate");
    assert_eq!(
        app.append_histogram(&l, 1000, histogram(2)),
        Err(AppendError::DuplicateHistogram)
    );
    assert_eq!(
        app.append(&l, 1000, 1.0).map_err(|e| e.to_string()),
        Err("duplicate sample for timestamp 1000; overrides not allowed: existing is a histogram, new value 1".into())
    );
    assert_eq!(
        app.append_histogram(&l, 500, histogram(1)),
        Err(AppendError::OutOfOrder)
    );
    let mut bad = histogram(1);
    bad.count = 7;
    let err = app.append_histogram(&l, 2000, bad).expect_err("invalid");
    assert!(matches!(err, AppendError::InvalidHistogram(_)), "{err}");
    app.commit().expect("commits");
    assert_eq!(read_all(&db).len(), 1);
    db.close().expect("close");
}

#[test]
fn a_counter_reset_starts_a_chunk_with_the_reset_header() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let db = Db::open(tmp.path(), DbOptions::default()).expect("open");
    let l = Labels::from_pairs(&[("__name__", "h")]);
    let mut app = db.appender();
    for (t, i) in [(1000, 5), (2000, 6), (3000, 1), (4000, 2)] {
        app.append_histogram(&l, t, histogram(i)).expect("appends");
    }
    app.commit().expect("commits");
    // Decoded, the first sample of every chunk reads as Unknown, as in
    // Prometheus (the chunk before it may be gone).
    let hints: Vec<(i64, CounterResetHint)> = read_all(&db)
        .into_iter()
        .map(|(t, v)| match v {
            SampleValue::Histogram(h) => (t, h.counter_reset_hint),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        hints,
        vec![
            (1000, CounterResetHint::Unknown),
            (2000, CounterResetHint::NotCounterReset),
            (3000, CounterResetHint::Unknown),
            (4000, CounterResetHint::NotCounterReset),
        ]
    );
    // The reset cut a chunk whose header says so.
    let series = db.querier(i64::MIN, i64::MAX).select(&[]).expect("select");
    let mut chunks = Vec::new();
    series[0]
        .for_each_chunk(|mint, maxt, _, bytes| {
            chunks.push((mint, maxt, CounterResetHeader::from_flags(bytes[2])))
        })
        .expect("reads");
    assert_eq!(
        chunks,
        vec![
            (1000, 2000, CounterResetHeader::Unknown),
            (3000, 4000, CounterResetHeader::CounterReset),
        ]
    );
    db.close().expect("close");
}

/// Deleted samples make the chunks be encoded again: kinds stay apart,
/// histogram chunks stay histogram chunks.
#[test]
fn chunks_encoded_again_keep_their_kinds() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let db = Db::open(tmp.path(), DbOptions::default()).expect("open");
    let l = Labels::from_pairs(&[("__name__", "h")]);
    let mut app = db.appender();
    for i in 1..=5u64 {
        app.append_histogram(&l, i as i64 * 1000, histogram(i))
            .expect("appends");
    }
    app.append(&l, 6000, 1.0).expect("appends");
    app.append(&l, 7000, 2.0).expect("appends");
    app.commit().expect("commits");
    let m = ferrite_model::Matcher::equal("__name__", "h");
    db.delete(&[m], i64::MIN, 2000).expect("deletes");
    let series = db.querier(i64::MIN, i64::MAX).select(&[]).expect("select");
    let mut chunks = Vec::new();
    series[0]
        .for_each_chunk(|mint, maxt, encoding, _| chunks.push((mint, maxt, encoding)))
        .expect("reads");
    use ferrite_chunkenc::Encoding;
    assert_eq!(
        chunks,
        vec![
            (3000, 5000, Encoding::Histogram),
            (6000, 7000, Encoding::Xor)
        ]
    );
    db.close().expect("close");
}

/// `storage.tsdb.chunk_encoding.floats: xor2`: the head writes XOR2 float
/// chunks, which survive a restart and go into blocks as they are.
#[test]
fn float_chunks_in_xor2() {
    use ferrite_chunkenc::Encoding;
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut opts = DbOptions::default();
    opts.head.float_chunk_encoding = Encoding::Xor2;
    let l = Labels::from_pairs(&[("__name__", "f")]);
    let want: Vec<(i64, f64)> = (0..1000).map(|i| (i * 15_000, (i % 7) as f64)).collect();
    let encodings = |db: &Db| {
        let series = db.querier(i64::MIN, i64::MAX).select(&[]).expect("select");
        let mut e = Vec::new();
        series[0]
            .for_each_chunk(|_, _, enc, _| e.push(enc))
            .expect("reads");
        e.dedup();
        e
    };
    {
        let db = Db::open(tmp.path(), opts.clone()).expect("open");
        let mut app = db.appender();
        for &(t, v) in &want {
            app.append(&l, t, v).expect("appends");
        }
        app.commit().expect("commits");
        assert_eq!(encodings(&db), vec![Encoding::Xor2]);
        db.close().expect("close");
    }
    let db = Db::open(tmp.path(), opts).expect("open");
    // Closed XOR2 chunks went to chunks_head/ and load from there.
    assert!(db.replay_stats().mmapped_chunks > 0);
    let series = db.querier(i64::MIN, i64::MAX).select(&[]).expect("select");
    assert_eq!(series[0].samples().expect("reads"), want);
    db.compact_head_fully().expect("compacts");
    assert_eq!(encodings(&db), vec![Encoding::Xor2]);
    let series = db.querier(i64::MIN, i64::MAX).select(&[]).expect("select");
    assert_eq!(series[0].samples().expect("reads"), want);
    db.close().expect("close");
}

/// A float stale marker on a histogram series is stored as Prometheus'
/// head stores it: a histogram of the series' kind with the marker as its
/// sum (scrapes and remote writes mark histogram series stale this way).
#[test]
fn a_float_stale_marker_on_a_histogram_series_is_a_histogram_stale_marker() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let db = Db::open(tmp.path(), DbOptions::default()).expect("open");
    let ints = Labels::from_pairs(&[("__name__", "h")]);
    let floats = Labels::from_pairs(&[("__name__", "fh")]);
    let plain = Labels::from_pairs(&[("__name__", "f")]);
    let mut app = db.appender();
    app.append_histogram(&ints, 1000, histogram(1))
        .expect("appends");
    let fh = FloatHistogram {
        count: 1.0,
        sum: 2.0,
        ..FloatHistogram::default()
    };
    app.append_float_histogram(&floats, 1000, fh)
        .expect("appends");
    app.append(&plain, 1000, 1.0).expect("appends");
    app.commit().expect("commits");
    let mut app = db.appender();
    for l in [&ints, &floats, &plain] {
        app.append(l, 2000, ferrite_model::STALE_NAN)
            .expect("appends");
    }
    app.commit().expect("commits");

    let last = |name: &str| {
        let m = ferrite_model::Matcher::equal("__name__", name);
        let series = db.querier(i64::MIN, i64::MAX).select(&[m]).expect("select");
        let mut out = Vec::new();
        series[0]
            .for_each_value(|t, v| out.push((t, v.to_owned_value())))
            .expect("reads");
        out.pop().expect("a sample")
    };
    match last("h") {
        (2000, SampleValue::Histogram(h)) => assert!(ferrite_model::is_stale_nan(h.sum)),
        other => panic!("h: {other:?}"),
    }
    match last("fh") {
        (2000, SampleValue::FloatHistogram(h)) => assert!(ferrite_model::is_stale_nan(h.sum)),
        other => panic!("fh: {other:?}"),
    }
    match last("f") {
        (2000, SampleValue::Float(v)) => assert!(ferrite_model::is_stale_nan(v)),
        other => panic!("f: {other:?}"),
    }
}
