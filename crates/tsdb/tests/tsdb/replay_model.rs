//! WAL replay equals a model of what Prometheus keeps: random WALs of
//! series records (some repeating a label set under a new ref), float
//! samples and both kinds of native histograms, in and out of order and
//! for refs not (yet) known, replayed over many small ranges by one to
//! three workers. Replay groups histogram samples by series before it
//! appends them; the model appends them one by one in WAL order.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use ferrite_model::{CounterResetHint, FloatHistogram, Histogram, Labels, SampleValue, Span};
use ferrite_tsdb::{AppendError, Db, DbOptions, HeadOptions};
use ferrite_wal::record::*;
use ferrite_wal::{Compression, WalOptions, WalWriter};
use proptest::prelude::*;

/// Label sets the refs name (refs beyond `NAMES` repeat one of them).
const NAMES: u64 = 5;

#[derive(Clone, Debug)]
enum Rec {
    /// A series record: `r` names the label set `r % NAMES`.
    Series(u64),
    Floats(Vec<(u64, i64)>),
    Histograms(Vec<(u64, i64, u64)>),
    FloatHistograms(Vec<(u64, i64, u64)>),
    /// Histograms of a ref no series record names (dropped), enough to
    /// fill most of a WAL page: replay reads the WAL in page ranges, and
    /// these spread the other records over many.
    Filler,
}

/// The ref of [`Rec::Filler`]'s samples.
const UNKNOWN: u64 = 999;

fn entries() -> impl Strategy<Value = Vec<(u64, i64, u64)>> {
    proptest::collection::vec((1..12u64, 0..40i64, 0..6u64), 1..12)
}

fn rec() -> impl Strategy<Value = Rec> {
    prop_oneof![
        1 => (1..12u64).prop_map(Rec::Series),
        2 => proptest::collection::vec((1..12u64, 0..40i64), 1..12).prop_map(Rec::Floats),
        4 => entries().prop_map(Rec::Histograms),
        2 => entries().prop_map(Rec::FloatHistograms),
        1 => Just(Rec::Filler),
    ]
}

fn labels(r: u64) -> Labels {
    Labels::from_pairs(&[("__name__", "m"), ("s", &(r % NAMES).to_string())])
}

/// A valid integer histogram of series `r`: one layout per series (so no
/// chunk is recoded), counts from `seed` (a lower seed is a counter reset).
fn histogram(r: u64, seed: u64) -> Histogram {
    let absolute: Vec<i64> = (0..3).map(|k| (seed * (k + 1) + r % 3) as i64).collect();
    let mut deltas = Vec::new();
    let mut prev = 0;
    for &a in &absolute {
        deltas.push(a - prev);
        prev = a;
    }
    let zero_count = seed;
    Histogram {
        schema: (r % 4) as i32,
        zero_threshold: 0.001,
        zero_count,
        count: zero_count + absolute.iter().sum::<i64>() as u64,
        sum: seed as f64 * 1.5,
        positive_spans: vec![Span {
            offset: (r % NAMES) as i32,
            length: 3,
        }],
        positive_buckets: deltas,
        ..Histogram::default()
    }
}

fn float_histogram(r: u64, seed: u64) -> FloatHistogram {
    let mut h = histogram(r, seed).to_float();
    h.counter_reset_hint = CounterResetHint::Gauge;
    h
}

fn encode(rec: &Rec) -> Vec<u8> {
    let mut buf = Vec::new();
    match rec {
        Rec::Series(r) => {
            let l = labels(*r);
            let pairs: Vec<(&str, &str)> = l
                .iter()
                .map(|l| (l.name.as_ref(), l.value.as_ref()))
                .collect();
            SeriesRecordBuilder::new(&mut buf).add(*r, &pairs);
        }
        Rec::Floats(v) => {
            let samples: Vec<RefSample> = v
                .iter()
                .map(|&(r, t)| RefSample {
                    series_ref: r,
                    st: 0,
                    t,
                    v: t as f64,
                })
                .collect();
            encode_samples(&mut buf, &samples);
        }
        Rec::Histograms(v) => {
            let samples: Vec<RefHistogramSample> = v
                .iter()
                .map(|&(r, t, seed)| RefHistogramSample {
                    series_ref: r,
                    st: 0,
                    t,
                    h: histogram(r % NAMES, seed),
                })
                .collect();
            encode_histogram_samples(&mut buf, &samples);
        }
        Rec::FloatHistograms(v) => {
            let samples: Vec<RefFloatHistogramSample> = v
                .iter()
                .map(|&(r, t, seed)| RefFloatHistogramSample {
                    series_ref: r,
                    st: 0,
                    t,
                    h: float_histogram(r % NAMES, seed),
                })
                .collect();
            encode_float_histogram_samples(&mut buf, &samples);
        }
        Rec::Filler => {
            let samples: Vec<RefHistogramSample> = (0..700)
                .map(|t| RefHistogramSample {
                    series_ref: UNKNOWN,
                    st: 0,
                    t,
                    h: histogram(0, 1),
                })
                .collect();
            encode_histogram_samples(&mut buf, &samples);
        }
    }
    buf
}

/// What replay keeps: per label set, the samples after the newest one
/// kept, for refs whose series record came first.
fn model(recs: &[Rec]) -> BTreeMap<String, Vec<(i64, SampleValue)>> {
    let mut known: BTreeMap<u64, String> = BTreeMap::new();
    let mut kept: BTreeMap<String, Vec<(i64, SampleValue)>> = BTreeMap::new();
    let mut add = |known: &BTreeMap<u64, String>, r: u64, t: i64, v: SampleValue| {
        let Some(name) = known.get(&r) else { return };
        let series = kept.entry(name.clone()).or_default();
        if series.last().is_none_or(|&(last, _)| t > last) {
            series.push((t, v));
        }
    };
    for rec in recs {
        match rec {
            Rec::Series(r) => {
                known.insert(*r, (r % NAMES).to_string());
            }
            Rec::Floats(v) => {
                for &(r, t) in v {
                    add(&known, r, t, SampleValue::Float(t as f64));
                }
            }
            Rec::Histograms(v) => {
                for &(r, t, seed) in v {
                    let h = histogram(r % NAMES, seed);
                    add(&known, r, t, SampleValue::Histogram(Box::new(h)));
                }
            }
            Rec::FloatHistograms(v) => {
                for &(r, t, seed) in v {
                    let h = float_histogram(r % NAMES, seed);
                    add(&known, r, t, SampleValue::FloatHistogram(Box::new(h)));
                }
            }
            Rec::Filler => {}
        }
    }
    kept.retain(|_, v| !v.is_empty());
    kept
}

/// A value with its counter reset hint dropped (read back, the hint
/// depends on where chunks were cut), gauge float histograms excepted.
fn without_hint(v: SampleValue) -> SampleValue {
    match v {
        SampleValue::Histogram(mut h) => {
            h.counter_reset_hint = CounterResetHint::Unknown;
            SampleValue::Histogram(h)
        }
        other => other,
    }
}

fn contents(db: &Db) -> BTreeMap<String, Vec<(i64, SampleValue)>> {
    db.querier(i64::MIN, i64::MAX)
        .select(&[])
        .unwrap()
        .into_iter()
        .map(|s| {
            let mut v = Vec::new();
            s.for_each_value(|t, x| v.push((t, without_hint(x.to_owned_value()))))
                .unwrap();
            (s.labels.get("s").to_string(), v)
        })
        .collect()
}

fn write_wal(dir: &Path, recs: &[Rec]) {
    let scratch = tempfile::tempdir().unwrap();
    // Uncompressed, so the fillers take the room they are meant to.
    let wal = WalOptions {
        compression: Compression::None,
        ..WalOptions::default()
    };
    let mut w = WalWriter::open(scratch.path(), wal).unwrap();
    for r in recs {
        w.log(&[&encode(r)]).unwrap();
    }
    w.close().unwrap();
    fs::create_dir_all(dir.join("wal")).unwrap();
    fs::copy(scratch.path().join("00000000"), dir.join("wal/00000000")).unwrap();
}

fn options(workers: usize) -> DbOptions {
    DbOptions {
        keep_expired_blocks: true,
        head: HeadOptions {
            replay_workers: workers,
            // Many ranges from a small WAL.
            replay_range_bytes: 1,
            ..HeadOptions::default()
        },
        ..DbOptions::default()
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn replay_keeps_what_the_model_keeps(
        recs in proptest::collection::vec(rec(), 1..40),
        workers in 1..=3usize,
    ) {
        let tmp = tempfile::tempdir().unwrap();
        write_wal(tmp.path(), &recs);
        let db = Db::open(tmp.path(), options(workers)).unwrap();
        let fillers = recs.iter().filter(|r| matches!(r, Rec::Filler)).count();
        prop_assert!(fs::metadata(tmp.path().join("wal/00000000")).unwrap().len() as usize >= fillers * 16 * 1024);
        let want: BTreeMap<_, _> = model(&recs)
            .into_iter()
            .map(|(k, v)| (k, v.into_iter().map(|(t, v)| (t, without_hint(v))).collect()))
            .collect();
        prop_assert_eq!(contents(&db), want.clone());

        // The newest value of each series is the one replay appended last:
        // the same value again at its time is a duplicate, accepted; any
        // other histogram there is refused.
        for (name, samples) in &want {
            let Some((t, v)) = samples.last() else { continue };
            let l = Labels::from_pairs(&[("__name__", "m"), ("s", name)]);
            let mut app = db.appender();
            match v {
                SampleValue::Histogram(h) => {
                    let mut h = (**h).clone();
                    // The hint was dropped above; the stored one may differ,
                    // and a duplicate compares without it.
                    h.counter_reset_hint = CounterResetHint::Unknown;
                    prop_assert!(app.append_histogram(&l, *t, h.clone()).is_ok());
                    h.sum += 1.0;
                    prop_assert_eq!(
                        app.append_histogram(&l, *t, h),
                        Err(AppendError::DuplicateHistogram)
                    );
                }
                SampleValue::FloatHistogram(h) => {
                    prop_assert!(app.append_float_histogram(&l, *t, (**h).clone()).is_ok());
                    let mut other = (**h).clone();
                    other.sum += 1.0;
                    prop_assert_eq!(
                        app.append_float_histogram(&l, *t, other),
                        Err(AppendError::DuplicateHistogram)
                    );
                }
                SampleValue::Float(_) => {}
            }
            app.rollback().unwrap();
        }
        db.close().unwrap();
    }
}
