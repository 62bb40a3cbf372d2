//! v3.16's start-timestamp records (types 11-13), byte-exact against
//! records written by Prometheus v3.16.0's `record.Encoder` with
//! `EnableSTStorage` (testdata/records/*_v2*.bin, made by
//! `interop/cmd/promrecords`, whose values are spelled out again here).

use std::path::PathBuf;

use ferrite_model::{CounterResetHint, Histogram, Span, STALE_NAN_BITS};
use ferrite_wal::record::*;

fn testdata(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("testdata/records")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn sample(series_ref: u64, st: i64, t: i64, v: f64) -> RefSample {
    RefSample {
        series_ref,
        st,
        t,
        v,
    }
}

fn sample_bits(s: &[RefSample]) -> Vec<(u64, i64, i64, u64)> {
    s.iter()
        .map(|s| (s.series_ref, s.st, s.t, s.v.to_bits()))
        .collect()
}

#[test]
fn samples_v2_decode_and_reencode_exactly() {
    let rec = testdata("samples_v2.bin");
    assert_eq!(RecordType::of(&rec), RecordType::SamplesV2);
    let want = vec![
        sample(7, 1000, 5000, 1.5),
        sample(9, 0, 5000, -2.0),
        sample(3, 0, 4000, f64::from_bits(STALE_NAN_BITS)),
        sample(3, 900, 6000, f64::INFINITY),
        sample(1 << 40, 900, 7000, 0.0),
        // Go's math.NaN().
        sample(2, -50, -100, f64::from_bits(0x7ff8_0000_0000_0001)),
    ];
    let mut got = Vec::new();
    decode_samples(&rec, &mut got).expect("decodes");
    assert_eq!(sample_bits(&got), sample_bits(&want));
    let mut buf = Vec::new();
    encode_samples_v2(&mut buf, &want);
    assert_eq!(buf, rec);

    // The fast path hands out the same samples without start times.
    let mut seen = Vec::new();
    let n = for_each_sample(&rec, |r, t, v| seen.push((r, t, v.to_bits()))).expect("decodes");
    assert_eq!(n, want.len());
    let expect: Vec<_> = want
        .iter()
        .map(|s| (s.series_ref, s.t, s.v.to_bits()))
        .collect();
    assert_eq!(seen, expect);

    let rec = testdata("samples_v2_no_st.bin");
    let want = vec![
        sample(1, 0, 10, 1.0),
        sample(1, 5, 20, 2.0),
        sample(1, 5, 30, 3.0),
    ];
    decode_samples(&rec, &mut got).expect("decodes");
    assert_eq!(sample_bits(&got), sample_bits(&want));
    encode_samples_v2(&mut buf, &want);
    assert_eq!(buf, rec);

    let rec = testdata("samples_v2_empty.bin");
    decode_samples(&rec, &mut got).expect("decodes");
    assert!(got.is_empty());
    encode_samples_v2(&mut buf, &[]);
    assert_eq!(buf, rec);
}

fn exponential() -> Histogram {
    Histogram {
        counter_reset_hint: CounterResetHint::CounterReset,
        schema: 1,
        zero_threshold: 0.001,
        zero_count: 2,
        count: 9,
        sum: -12.5,
        positive_spans: vec![
            Span {
                offset: -2,
                length: 2,
            },
            Span {
                offset: 3,
                length: 1,
            },
        ],
        positive_buckets: vec![1, 2, -1],
        negative_spans: vec![Span {
            offset: 0,
            length: 1,
        }],
        negative_buckets: vec![2],
        custom_values: vec![],
    }
}

fn custom_buckets() -> Histogram {
    Histogram {
        counter_reset_hint: CounterResetHint::NotCounterReset,
        schema: -53,
        count: 4,
        sum: 3.25,
        positive_spans: vec![Span {
            offset: 0,
            length: 3,
        }],
        positive_buckets: vec![1, 1, -1],
        custom_values: vec![0.5, 1.0, 10.0],
        ..Histogram::default()
    }
}

#[test]
fn histogram_samples_v2_decode_and_reencode_exactly() {
    let rec = testdata("histogram_samples_v2.bin");
    assert_eq!(RecordType::of(&rec), RecordType::HistogramSamplesV2);
    let h = |series_ref, st, t, h| RefHistogramSample {
        series_ref,
        st,
        t,
        h,
    };
    let stale = Histogram {
        sum: f64::from_bits(STALE_NAN_BITS),
        ..Histogram::default()
    };
    let want = vec![
        h(4, 100, 1000, exponential()),
        h(5, 100, 1000, custom_buckets()),
        h(4, 0, 2000, stale),
        h(2, 50, 900, exponential()),
    ];
    let mut got = Vec::new();
    decode_histogram_samples(&rec, &mut got).expect("decodes");
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(&want) {
        assert_eq!((g.series_ref, g.st, g.t), (w.series_ref, w.st, w.t));
        assert_eq!(g.h.sum.to_bits(), w.h.sum.to_bits());
        let (mut gh, mut wh) = (g.h.clone(), w.h.clone());
        gh.sum = 0.0;
        wh.sum = 0.0;
        assert_eq!(gh, wh);
    }
    let mut buf = Vec::new();
    encode_histogram_samples_v2(&mut buf, &want);
    assert_eq!(buf, rec);
}

#[test]
fn float_histogram_samples_v2_decode_and_reencode_exactly() {
    let rec = testdata("float_histogram_samples_v2.bin");
    assert_eq!(RecordType::of(&rec), RecordType::FloatHistogramSamplesV2);
    let mut exp = exponential().to_float();
    exp.counter_reset_hint = CounterResetHint::Gauge;
    exp.positive_buckets[1] = 2.5;
    let fh = |series_ref, st, t, h| RefFloatHistogramSample {
        series_ref,
        st,
        t,
        h,
    };
    let want = vec![
        fh(10, 0, 3000, custom_buckets().to_float()),
        fh(11, 2000, 3000, exp.clone()),
        fh(11, 2000, 4000, exp),
    ];
    let mut got = Vec::new();
    decode_float_histogram_samples(&rec, &mut got).expect("decodes");
    assert_eq!(got, want);
    let mut buf = Vec::new();
    encode_float_histogram_samples_v2(&mut buf, &want);
    assert_eq!(buf, rec);
}

/// A record cut anywhere either fails to decode or, cut at an entry's
/// end, decodes to a prefix of the whole record's entries.
#[test]
fn cut_v2_records_fail_or_give_a_prefix() {
    fn keys(rec: &[u8]) -> Result<Vec<(u64, i64, i64)>, RecordError> {
        Ok(match RecordType::of(rec) {
            RecordType::SamplesV2 => {
                let mut out = Vec::new();
                decode_samples(rec, &mut out)?;
                out.iter().map(|s| (s.series_ref, s.st, s.t)).collect()
            }
            RecordType::HistogramSamplesV2 => {
                let mut out = Vec::new();
                decode_histogram_samples(rec, &mut out)?;
                out.iter().map(|s| (s.series_ref, s.st, s.t)).collect()
            }
            _ => {
                let mut out = Vec::new();
                decode_float_histogram_samples(rec, &mut out)?;
                out.iter().map(|s| (s.series_ref, s.st, s.t)).collect()
            }
        })
    }
    for name in [
        "samples_v2.bin",
        "histogram_samples_v2.bin",
        "float_histogram_samples_v2.bin",
    ] {
        let rec = testdata(name);
        let whole = keys(&rec).expect("decodes");
        let mut prefixes = 0;
        for cut in 1..rec.len() {
            if let Ok(part) = keys(&rec[..cut]) {
                assert!(whole.starts_with(&part), "{name} cut at {cut}: {part:?}");
                prefixes += 1;
            }
        }
        // The empty record and one cut after each entry but the last.
        assert_eq!(prefixes, whole.len(), "{name}");
    }
}

/// v1 records of a mix of histogram kinds, as Prometheus' head and
/// checkpoint write them: an exponential record whose base is the first
/// sample of all (here a custom buckets one), then a custom buckets record.
#[test]
fn mixed_histogram_kinds_split_as_prometheus_does() {
    let h = |series_ref, t, h| RefHistogramSample {
        series_ref,
        st: 0,
        t,
        h,
    };
    let mixed = vec![
        h(5, 1000, custom_buckets()),
        h(4, 1500, exponential()),
        h(6, 900, custom_buckets()),
        h(2, 2000, exponential()),
    ];
    let (mut exp, mut custom) = (Vec::new(), Vec::new());
    encode_histogram_samples_split(&mut exp, &mut custom, &mixed);
    assert_eq!(exp, testdata("histogram_samples_mixed.bin"));
    assert_eq!(
        custom,
        testdata("custom_buckets_histogram_samples_mixed.bin")
    );

    let mut fexp_h = exponential().to_float();
    fexp_h.counter_reset_hint = CounterResetHint::Gauge;
    fexp_h.positive_buckets[1] = 2.5;
    let fh = |series_ref, t, h| RefFloatHistogramSample {
        series_ref,
        st: 0,
        t,
        h,
    };
    let fmixed = vec![
        fh(10, 3000, custom_buckets().to_float()),
        fh(11, 2500, fexp_h),
    ];
    encode_float_histogram_samples_split(&mut exp, &mut custom, &fmixed);
    assert_eq!(exp, testdata("float_histogram_samples_mixed.bin"));
    assert_eq!(
        custom,
        testdata("custom_buckets_float_histogram_samples_mixed.bin")
    );

    // One kind only: the other buffer stays empty.
    encode_histogram_samples_split(&mut exp, &mut custom, &mixed[1..2]);
    assert!(!exp.is_empty() && custom.is_empty());
    encode_histogram_samples_split(&mut exp, &mut custom, &mixed[..1]);
    assert!(exp.is_empty() && !custom.is_empty());
}
