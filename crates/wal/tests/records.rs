//! Record codecs: byte-exact against records written by Prometheus v3.9.1's
//! `record.Encoder` (testdata/records, see its README), round trips of
//! arbitrary values, and robustness against arbitrary and damaged input.

use std::path::PathBuf;

use ferrite_model::{CounterResetHint, FloatHistogram, Histogram, Span};
use ferrite_wal::record::*;
use proptest::prelude::*;

fn testdata(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("testdata/records")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

type OwnedSeries = (u64, Vec<(String, String)>);

fn series_of(rec: &[u8]) -> Result<Vec<OwnedSeries>, RecordError> {
    let mut out = Vec::new();
    decode_series(rec, |r, labels| {
        out.push((
            r,
            labels
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
        ))
    })?;
    Ok(out)
}

fn encode_series(series: &[OwnedSeries]) -> Vec<u8> {
    let mut buf = vec![0xAA; 3];
    let mut b = SeriesRecordBuilder::new(&mut buf);
    for (r, labels) in series {
        let pairs: Vec<(&str, &str)> = labels
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        b.add(*r, &pairs);
    }
    assert_eq!(b.series_count(), series.len());
    buf
}

fn owned(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect()
}

// ---------------------------------------------------------------------------
// Records written by Prometheus

#[test]
fn record_types() {
    let cases = [
        ("series.bin", RecordType::Series, 1),
        ("samples.bin", RecordType::Samples, 2),
        ("tombstones.bin", RecordType::Tombstones, 3),
        ("exemplars.bin", RecordType::Exemplars, 4),
        ("mmap_markers.bin", RecordType::MmapMarkers, 5),
        ("metadata.bin", RecordType::Metadata, 6),
        ("histogram_samples.bin", RecordType::HistogramSamples, 7),
        (
            "float_histogram_samples.bin",
            RecordType::FloatHistogramSamples,
            8,
        ),
        (
            "custom_buckets_histogram_samples.bin",
            RecordType::CustomBucketsHistogramSamples,
            9,
        ),
        (
            "custom_buckets_float_histogram_samples.bin",
            RecordType::CustomBucketsFloatHistogramSamples,
            10,
        ),
    ];
    for (file, typ, byte) in cases {
        assert_eq!(RecordType::of(&testdata(file)), typ, "{file}");
        assert_eq!(typ.as_u8(), byte);
        assert_eq!(RecordType::from_u8(byte), typ);
    }
    assert_eq!(RecordType::of(&[]), RecordType::Unknown(255));
    assert_eq!(RecordType::of(&[0]), RecordType::Unknown(0));
    assert_eq!(RecordType::of(&[11, 1]), RecordType::SamplesV2);
    assert_eq!(RecordType::of(&[14, 1]), RecordType::MinValidTime);
    assert_eq!(RecordType::of(&[15, 1]), RecordType::Unknown(15));
    for b in 1..=14 {
        assert_eq!(RecordType::from_u8(b).as_u8(), b);
        assert_ne!(RecordType::from_u8(b).name(), "unknown");
    }
    assert_eq!(RecordType::Unknown(200).as_u8(), 200);
    assert_eq!(
        RecordType::CustomBucketsHistogramSamples.name(),
        "custom_buckets_histogram_samples"
    );
}

#[test]
fn prometheus_series() {
    let rec = testdata("series.bin");
    let series = series_of(&rec).unwrap();
    let want = vec![
        (
            1,
            owned(&[
                ("__name__", "up"),
                ("instance", "localhost:9090"),
                ("job", "prometheus"),
            ]),
        ),
        (
            2,
            owned(&[
                ("__name__", "http_requests_total"),
                ("code", "200"),
                ("method", "GET"),
            ]),
        ),
        ((1 << 40) + 7, owned(&[("a", "ü→ unicode"), ("zz", "x")])),
        (3, vec![]),
    ];
    assert_eq!(series, want);
    assert_eq!(encode_series(&series), rec);
}

#[test]
fn prometheus_samples() {
    let rec = testdata("samples.bin");
    let mut out = vec![RefSample {
        st: 0,
        series_ref: 9,
        t: 9,
        v: 9.0,
    }];
    decode_samples(&rec, &mut out).unwrap();
    let want = [
        (5, 1_700_000_000_000, 1.5f64.to_bits()),
        (3, 1_699_999_999_000, (-2.25f64).to_bits()),
        (1_000_000, 1_700_000_015_000, 0x7ff0_0000_0000_0002),
        (5, 1_700_000_030_000, f64::INFINITY.to_bits()),
    ];
    let got: Vec<_> = out
        .iter()
        .map(|s| (s.series_ref, s.t, s.v.to_bits()))
        .collect();
    assert_eq!(got, want);
    let mut buf = vec![1, 2, 3];
    encode_samples(&mut buf, &out);
    assert_eq!(buf, rec);

    let empty = testdata("samples_empty.bin");
    assert_eq!(empty, [2]);
    decode_samples(&empty, &mut out).unwrap();
    assert!(out.is_empty());
    encode_samples(&mut buf, &[]);
    assert_eq!(buf, empty);
}

#[test]
fn prometheus_tombstones() {
    let rec = testdata("tombstones.bin");
    let mut out = Vec::new();
    decode_tombstones(&rec, &mut out).unwrap();
    let want = vec![
        Stone {
            series_ref: 7,
            intervals: vec![(-100, 200), (1000, 2000), (i64::MIN, i64::MAX)],
        },
        Stone {
            series_ref: 9,
            intervals: vec![(5, 5)],
        },
    ];
    assert_eq!(out, want);
    let mut buf = Vec::new();
    encode_tombstones(&mut buf, &out);
    assert_eq!(buf, rec);
}

#[test]
fn prometheus_exemplars() {
    let rec = testdata("exemplars.bin");
    let mut out = Vec::new();
    decode_exemplars(&rec, &mut out).unwrap();
    let want = vec![
        RefExemplar {
            series_ref: 11,
            t: 1_700_000_000_123,
            v: 0.25,
            labels: owned(&[("span_id", "def"), ("trace_id", "abc123")]),
        },
        RefExemplar {
            series_ref: 10,
            t: 1_700_000_000_000,
            v: 99.0,
            labels: vec![],
        },
        RefExemplar {
            series_ref: 12,
            t: 1_700_000_000_500,
            v: -1.0,
            labels: owned(&[("trace_id", "x")]),
        },
    ];
    assert_eq!(out, want);
    let mut buf = Vec::new();
    encode_exemplars(&mut buf, &out);
    assert_eq!(buf, rec);

    let empty = testdata("exemplars_empty.bin");
    decode_exemplars(&empty, &mut out).unwrap();
    assert!(out.is_empty());
    encode_exemplars(&mut buf, &[]);
    assert_eq!(buf, empty);
}

#[test]
fn prometheus_mmap_markers() {
    let rec = testdata("mmap_markers.bin");
    let mut out = Vec::new();
    decode_mmap_markers(&rec, &mut out).unwrap();
    let want = vec![
        RefMmapMarker {
            series_ref: 1,
            mmap_ref: 0x0000_0001_0000_0008,
        },
        RefMmapMarker {
            series_ref: 2,
            mmap_ref: u64::MAX,
        },
    ];
    assert_eq!(out, want);
    let mut buf = Vec::new();
    encode_mmap_markers(&mut buf, &out);
    assert_eq!(buf, rec);
}

#[test]
fn prometheus_metadata() {
    let rec = testdata("metadata.bin");
    let mut out = Vec::new();
    decode_metadata(&rec, &mut out).unwrap();
    let want = vec![
        RefMetadata {
            series_ref: 1,
            metric_type: METRIC_TYPE_COUNTER,
            unit: "seconds".into(),
            help: "Total time.".into(),
        },
        RefMetadata {
            series_ref: 300,
            metric_type: METRIC_TYPE_GAUGE,
            unit: String::new(),
            help: String::new(),
        },
        RefMetadata {
            series_ref: 1 << 35,
            metric_type: METRIC_TYPE_STATESET,
            unit: "bytes".into(),
            help: "help with \"quotes\" and ünïcode".into(),
        },
    ];
    assert_eq!(out, want);
    let mut buf = Vec::new();
    encode_metadata(&mut buf, &out);
    assert_eq!(buf, rec);
}

fn hist1() -> Histogram {
    Histogram {
        counter_reset_hint: CounterResetHint::CounterReset,
        schema: 3,
        zero_threshold: 0.001,
        zero_count: 2,
        count: 20,
        sum: 123.5,
        positive_spans: vec![
            Span {
                offset: 0,
                length: 2,
            },
            Span {
                offset: 3,
                length: 1,
            },
        ],
        negative_spans: vec![Span {
            offset: -2,
            length: 1,
        }],
        positive_buckets: vec![1, 2, -1],
        negative_buckets: vec![3],
        custom_values: vec![],
    }
}

fn hist2() -> Histogram {
    Histogram {
        counter_reset_hint: CounterResetHint::Gauge,
        schema: -4,
        ..Default::default()
    }
}

fn nhcb() -> Histogram {
    Histogram {
        counter_reset_hint: CounterResetHint::NotCounterReset,
        schema: CUSTOM_BUCKETS_SCHEMA,
        count: 5,
        sum: 2.75,
        positive_spans: vec![Span {
            offset: 0,
            length: 3,
        }],
        positive_buckets: vec![1, 1, -2],
        custom_values: vec![0.1, 0.5, 1.0],
        ..Default::default()
    }
}

fn fhist1() -> FloatHistogram {
    FloatHistogram {
        counter_reset_hint: CounterResetHint::Unknown,
        schema: 1,
        zero_threshold: 0.5,
        zero_count: 1.5,
        count: 10.25,
        sum: -3.5,
        positive_spans: vec![Span {
            offset: 1,
            length: 2,
        }],
        negative_spans: vec![
            Span {
                offset: 0,
                length: 1,
            },
            Span {
                offset: 2,
                length: 2,
            },
        ],
        positive_buckets: vec![2.5, 3.0],
        negative_buckets: vec![1.0, 0.25, 2.0],
        custom_values: vec![],
    }
}

fn fnhcb() -> FloatHistogram {
    FloatHistogram {
        counter_reset_hint: CounterResetHint::Gauge,
        schema: CUSTOM_BUCKETS_SCHEMA,
        count: 7.0,
        sum: 100.0,
        positive_spans: vec![
            Span {
                offset: 0,
                length: 2,
            },
            Span {
                offset: 1,
                length: 1,
            },
        ],
        positive_buckets: vec![3.0, 2.0, 2.0],
        custom_values: vec![1.0, 10.0, 100.0, f64::INFINITY],
        ..Default::default()
    }
}

#[test]
fn prometheus_histogram_samples() {
    let rec = testdata("histogram_samples.bin");
    let mut out = Vec::new();
    decode_histogram_samples(&rec, &mut out).unwrap();
    let want = vec![
        RefHistogramSample {
            st: 0,
            series_ref: 20,
            t: 1_700_000_000_000,
            h: hist1(),
        },
        RefHistogramSample {
            st: 0,
            series_ref: 19,
            t: 1_700_000_060_000,
            h: hist2(),
        },
    ];
    assert_eq!(out, want);
    assert!(out.iter().all(|s| !s.h.uses_custom_buckets()));
    let mut buf = Vec::new();
    encode_histogram_samples(&mut buf, &out);
    assert_eq!(buf, rec);

    let empty = testdata("histogram_samples_empty.bin");
    decode_histogram_samples(&empty, &mut out).unwrap();
    assert!(out.is_empty());
    encode_histogram_samples(&mut buf, &[]);
    assert_eq!(buf, empty);
}

#[test]
fn prometheus_custom_buckets_histogram_samples() {
    let rec = testdata("custom_buckets_histogram_samples.bin");
    let mut out = Vec::new();
    decode_histogram_samples(&rec, &mut out).unwrap();
    let want = vec![
        RefHistogramSample {
            st: 0,
            series_ref: 30,
            t: 1_700_000_000_000,
            h: nhcb(),
        },
        RefHistogramSample {
            st: 0,
            series_ref: 31,
            t: 1_699_999_990_000,
            h: nhcb(),
        },
    ];
    assert_eq!(out, want);
    assert!(out.iter().all(|s| s.h.uses_custom_buckets()));
    let mut buf = Vec::new();
    encode_custom_buckets_histogram_samples(&mut buf, &out);
    assert_eq!(buf, rec);
}

#[test]
fn prometheus_float_histogram_samples() {
    let rec = testdata("float_histogram_samples.bin");
    let mut out = Vec::new();
    decode_float_histogram_samples(&rec, &mut out).unwrap();
    let want = vec![RefFloatHistogramSample {
        st: 0,
        series_ref: 40,
        t: 1_700_000_000_000,
        h: fhist1(),
    }];
    assert_eq!(out, want);
    let mut buf = Vec::new();
    encode_float_histogram_samples(&mut buf, &out);
    assert_eq!(buf, rec);
}

#[test]
fn prometheus_custom_buckets_float_histogram_samples() {
    let rec = testdata("custom_buckets_float_histogram_samples.bin");
    let mut out = Vec::new();
    decode_float_histogram_samples(&rec, &mut out).unwrap();
    let want = vec![
        RefFloatHistogramSample {
            st: 0,
            series_ref: 50,
            t: 1_700_000_000_000,
            h: fnhcb(),
        },
        RefFloatHistogramSample {
            st: 0,
            series_ref: 52,
            t: 1_700_000_000_001,
            h: fnhcb(),
        },
    ];
    assert_eq!(out, want);
    assert!(out.iter().all(|s| s.h.uses_custom_buckets()));
    let mut buf = Vec::new();
    encode_custom_buckets_float_histogram_samples(&mut buf, &out);
    assert_eq!(buf, rec);
}

// ---------------------------------------------------------------------------
// Strictness

const ALL_FILES: [&str; 13] = [
    "series.bin",
    "samples.bin",
    "samples_empty.bin",
    "tombstones.bin",
    "exemplars.bin",
    "exemplars_empty.bin",
    "mmap_markers.bin",
    "metadata.bin",
    "histogram_samples.bin",
    "histogram_samples_empty.bin",
    "custom_buckets_histogram_samples.bin",
    "float_histogram_samples.bin",
    "custom_buckets_float_histogram_samples.bin",
];

/// Runs the decoder for the record's type; `None` for unknown types.
fn decode_any(rec: &[u8]) -> Option<Result<usize, RecordError>> {
    Some(match RecordType::of(rec) {
        RecordType::Series => {
            let mut n = 0;
            decode_series(rec, |_, _| n += 1).map(|()| n)
        }
        RecordType::Samples => {
            let mut v = Vec::new();
            decode_samples(rec, &mut v).map(|()| v.len())
        }
        RecordType::Tombstones => {
            let mut v = Vec::new();
            decode_tombstones(rec, &mut v).map(|()| v.len())
        }
        RecordType::Exemplars => {
            let mut v = Vec::new();
            decode_exemplars(rec, &mut v).map(|()| v.len())
        }
        RecordType::MmapMarkers => {
            let mut v = Vec::new();
            decode_mmap_markers(rec, &mut v).map(|()| v.len())
        }
        RecordType::Metadata => {
            let mut v = Vec::new();
            decode_metadata(rec, &mut v).map(|()| v.len())
        }
        RecordType::HistogramSamples | RecordType::CustomBucketsHistogramSamples => {
            let mut v = Vec::new();
            decode_histogram_samples(rec, &mut v).map(|()| v.len())
        }
        RecordType::FloatHistogramSamples | RecordType::CustomBucketsFloatHistogramSamples => {
            let mut v = Vec::new();
            decode_float_histogram_samples(rec, &mut v).map(|()| v.len())
        }
        RecordType::MinValidTime => decode_min_valid_time(rec).map(|_| 1),
        RecordType::SamplesV2
        | RecordType::HistogramSamplesV2
        | RecordType::FloatHistogramSamplesV2
        | RecordType::Unknown(_) => return None,
    })
}

#[test]
fn truncated_and_extended_records_are_rejected() {
    for file in ALL_FILES {
        let rec = testdata(file);
        let full = decode_any(&rec).unwrap().unwrap();
        // A prefix is an error unless it ends at an entry boundary.
        for len in 0..rec.len() {
            if let Ok(n) = decode_any(&rec[..len]).unwrap_or(Ok(0)) {
                assert!(n < full || full == 0, "{file} cut at {len}");
            }
        }
        // Losing the last byte always cuts the last entry.
        if rec.len() > 1 {
            assert!(
                decode_any(&rec[..rec.len() - 1]).unwrap().is_err(),
                "{file}"
            );
        }
        // Like Prometheus, anything after the last entry is an error.
        for extra in [&[0u8][..], &[0x80], &[1, 2, 3]] {
            let mut longer = rec.clone();
            longer.extend_from_slice(extra);
            assert!(decode_any(&longer).unwrap().is_err(), "{file} + {extra:?}");
        }
    }
}

#[test]
fn wrong_type_is_rejected() {
    let samples = testdata("samples.bin");
    let mut out = Vec::new();
    assert_eq!(
        decode_tombstones(&samples, &mut out),
        Err(RecordError::UnexpectedType {
            expected: "tombstones",
            found: Some(2)
        })
    );
    let mut s = Vec::new();
    assert_eq!(
        decode_samples(&[], &mut s),
        Err(RecordError::UnexpectedType {
            expected: "samples",
            found: None
        })
    );
    let mut h = Vec::new();
    assert!(decode_histogram_samples(&testdata("float_histogram_samples.bin"), &mut h).is_err());
    let mut fh = Vec::new();
    assert!(decode_float_histogram_samples(&testdata("histogram_samples.bin"), &mut fh).is_err());
    assert!(decode_series(&samples, |_, _| panic!("called")).is_err());
}

#[test]
fn series_callback_sees_all_or_nothing() {
    let mut rec = testdata("series.bin");
    rec.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 9, 5]); // ref 9 with 5 labels, none present
    let mut calls = 0;
    assert!(matches!(
        decode_series(&rec, |_, _| calls += 1),
        Err(RecordError::CountTooLarge { count: 5, .. })
    ));
    assert_eq!(calls, 0);
}

#[test]
fn decoders_leave_output_empty_on_error() {
    let rec = testdata("exemplars.bin");
    let mut out = vec![RefExemplar::default(); 5];
    assert!(decode_exemplars(&rec[..rec.len() - 1], &mut out).is_err());
    assert!(out.is_empty());
    let mut samples = vec![
        RefSample {
            st: 0,
            series_ref: 1,
            t: 1,
            v: 1.0
        };
        3
    ];
    let rec = testdata("samples.bin");
    assert!(decode_samples(&rec[..rec.len() - 3], &mut samples).is_err());
    assert!(samples.is_empty());
}

#[test]
fn metadata_skips_unknown_fields() {
    // ref 5, type gauge, 4 fields: HELP, an unknown one, UNIT, another unknown.
    let mut rec = vec![6, 5, METRIC_TYPE_GAUGE, 4];
    for s in ["HELP", "h", "COLOR", "blue", "UNIT", "u", "", ""] {
        rec.push(s.len() as u8);
        rec.extend_from_slice(s.as_bytes());
    }
    // ref 6 with no fields at all.
    rec.extend_from_slice(&[6, METRIC_TYPE_INFO, 0]);
    let mut out = Vec::new();
    decode_metadata(&rec, &mut out).unwrap();
    assert_eq!(
        out,
        vec![
            RefMetadata {
                series_ref: 5,
                metric_type: METRIC_TYPE_GAUGE,
                unit: "u".into(),
                help: "h".into()
            },
            RefMetadata {
                series_ref: 6,
                metric_type: METRIC_TYPE_INFO,
                unit: String::new(),
                help: String::new()
            },
        ]
    );
}

#[test]
fn malformed_values() {
    let mut out = Vec::new();
    // 11-byte varint.
    let mut rec = vec![6];
    rec.extend_from_slice(&[0xff; 10]);
    rec.push(0);
    assert_eq!(
        decode_metadata(&rec, &mut out),
        Err(RecordError::VarintOverflow { offset: 1 })
    );
    // Tenth varint byte above 1.
    let mut rec = vec![6];
    rec.extend_from_slice(&[0xff; 9]);
    rec.push(2);
    assert_eq!(
        decode_metadata(&rec, &mut out),
        Err(RecordError::VarintOverflow { offset: 1 })
    );
    // u64::MAX as a varint is fine.
    let mut rec = vec![6];
    rec.extend_from_slice(&[0xff; 9]);
    rec.extend_from_slice(&[1, 0, 0]);
    decode_metadata(&rec, &mut out).unwrap();
    assert_eq!(out[0].series_ref, u64::MAX);
    // Huge field count.
    let rec = [6, 1, 0, 0xff, 0xff, 0xff, 0xff, 0x0f];
    assert!(matches!(
        decode_metadata(&rec, &mut out),
        Err(RecordError::CountTooLarge { offset: 3, .. })
    ));
    // Invalid UTF-8 in a label.
    let rec = [1, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, b'a', 1, 0xff];
    assert_eq!(
        decode_series(&rec, |_, _| {}),
        Err(RecordError::InvalidUtf8 { offset: 12 })
    );
    // Histogram schema beyond i32.
    let mut h = vec![RefHistogramSample {
        h: hist1(),
        ..Default::default()
    }];
    let mut bad = Vec::new();
    encode_histogram_samples(&mut bad, &h);
    // Base (17 bytes), two delta bytes, hint: the schema varint follows.
    assert_eq!(bad[20], 6); // zig-zag 3
    bad.splice(20..21, [0x80, 0x80, 0x80, 0x80, 0x10]); // 2^32 zig-zag: 2^31
    assert!(matches!(
        decode_histogram_samples(&bad, &mut h),
        Err(RecordError::ValueOutOfRange {
            what: "histogram schema",
            offset: 20,
            ..
        })
    ));
}

#[test]
fn reserved_and_unknown_schemas_decode() {
    for schema in [-9, 52, 53, -10, -53, 8, -4, i32::MIN, i32::MAX] {
        let h = Histogram {
            schema,
            custom_values: if schema == CUSTOM_BUCKETS_SCHEMA {
                vec![1.0]
            } else {
                vec![]
            },
            ..Default::default()
        };
        let sample = RefHistogramSample {
            st: 0,
            series_ref: 1,
            t: 2,
            h,
        };
        let mut buf = Vec::new();
        encode_histogram_samples(&mut buf, std::slice::from_ref(&sample));
        let mut out = Vec::new();
        decode_histogram_samples(&buf, &mut out).unwrap();
        assert_eq!(out, vec![sample]);
        let known = (-9..=52).contains(&schema) || schema == -53;
        assert_eq!(is_known_schema(schema), known, "{schema}");
    }
}

#[test]
fn custom_values_only_for_custom_schema() {
    // Prometheus neither writes nor reads custom bounds of other schemas.
    let mut h = hist1();
    h.custom_values = vec![1.0, 2.0];
    let mut buf = Vec::new();
    let s = RefHistogramSample {
        st: 0,
        series_ref: 1,
        t: 1,
        h,
    };
    encode_histogram_samples(&mut buf, std::slice::from_ref(&s));
    let mut out = Vec::new();
    decode_histogram_samples(&buf, &mut out).unwrap();
    assert!(out[0].h.custom_values.is_empty());
}

#[test]
fn decoders_reuse_output_entries() {
    let rec = testdata("custom_buckets_float_histogram_samples.bin");
    let mut out = Vec::new();
    decode_float_histogram_samples(&rec, &mut out).unwrap();
    let ptr = out[0].h.custom_values.as_ptr();
    decode_float_histogram_samples(&rec, &mut out).unwrap();
    assert_eq!(out[0].h.custom_values.as_ptr(), ptr);
    assert_eq!(out[0].h, fnhcb());

    let rec = testdata("exemplars.bin");
    let mut ex = Vec::new();
    decode_exemplars(&rec, &mut ex).unwrap();
    let ptr = ex[0].labels[0].0.as_ptr();
    decode_exemplars(&rec, &mut ex).unwrap();
    assert_eq!(ex[0].labels[0].0.as_ptr(), ptr);
}

// ---------------------------------------------------------------------------
// Round trips

fn labels_strategy() -> impl Strategy<Value = Vec<(String, String)>> {
    prop::collection::vec((".{0,12}", ".{0,20}"), 0..5)
}

fn spans() -> impl Strategy<Value = Vec<Span>> {
    prop::collection::vec(
        (any::<i32>(), any::<u32>()).prop_map(|(offset, length)| Span { offset, length }),
        0..4,
    )
}

fn schema() -> impl Strategy<Value = i32> {
    prop_oneof![Just(CUSTOM_BUCKETS_SCHEMA), -9i32..=52, any::<i32>()]
}

/// Any f64 including every NaN payload.
fn float() -> impl Strategy<Value = f64> {
    any::<u64>().prop_map(f64::from_bits)
}

fn floats(max: usize) -> impl Strategy<Value = Vec<f64>> {
    prop::collection::vec(float(), 0..max)
}

fn histogram() -> impl Strategy<Value = Histogram> {
    (
        (
            (0u8..4).prop_map(CounterResetHint::from_bits),
            schema(),
            float(),
            any::<u64>(),
            any::<u64>(),
            float(),
        ),
        (spans(), spans()),
        (
            prop::collection::vec(any::<i64>(), 0..6),
            prop::collection::vec(any::<i64>(), 0..6),
            floats(4),
        ),
    )
        .prop_map(
            |((hint, schema, zt, zc, c, sum), (ps, ns), (pb, nb, cv))| Histogram {
                counter_reset_hint: hint,
                schema,
                zero_threshold: zt,
                zero_count: zc,
                count: c,
                sum,
                positive_spans: ps,
                negative_spans: ns,
                positive_buckets: pb,
                negative_buckets: nb,
                custom_values: if schema == CUSTOM_BUCKETS_SCHEMA {
                    cv
                } else {
                    vec![]
                },
            },
        )
}

fn float_histogram() -> impl Strategy<Value = FloatHistogram> {
    (
        (
            (0u8..4).prop_map(CounterResetHint::from_bits),
            schema(),
            float(),
            float(),
            float(),
            float(),
        ),
        (spans(), spans()),
        (floats(6), floats(6), floats(4)),
    )
        .prop_map(
            |((hint, schema, zt, zc, c, sum), (ps, ns), (pb, nb, cv))| FloatHistogram {
                counter_reset_hint: hint,
                schema,
                zero_threshold: zt,
                zero_count: zc,
                count: c,
                sum,
                positive_spans: ps,
                negative_spans: ns,
                positive_buckets: pb,
                negative_buckets: nb,
                custom_values: if schema == CUSTOM_BUCKETS_SCHEMA {
                    cv
                } else {
                    vec![]
                },
            },
        )
}

fn bits(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// Everything of a histogram sample with floats as bits (NaN != NaN).
type HistogramKey = (
    u64,
    i64,
    u8,
    i32,
    [u64; 4],
    Vec<Span>,
    Vec<Span>,
    Vec<u64>,
    Vec<u64>,
    Vec<u64>,
);

fn histogram_key(s: &RefHistogramSample) -> HistogramKey {
    let h = &s.h;
    let signed = |v: &[i64]| v.iter().map(|&x| x as u64).collect();
    (
        s.series_ref,
        s.t,
        h.counter_reset_hint as u8,
        h.schema,
        [
            h.zero_threshold.to_bits(),
            h.zero_count,
            h.count,
            h.sum.to_bits(),
        ],
        h.positive_spans.clone(),
        h.negative_spans.clone(),
        signed(&h.positive_buckets),
        signed(&h.negative_buckets),
        bits(&h.custom_values),
    )
}

fn float_histogram_key(s: &RefFloatHistogramSample) -> HistogramKey {
    let h = &s.h;
    (
        s.series_ref,
        s.t,
        h.counter_reset_hint as u8,
        h.schema,
        [h.zero_threshold, h.zero_count, h.count, h.sum].map(f64::to_bits),
        h.positive_spans.clone(),
        h.negative_spans.clone(),
        bits(&h.positive_buckets),
        bits(&h.negative_buckets),
        bits(&h.custom_values),
    )
}

proptest! {
    #[test]
    fn series_round_trip(series in prop::collection::vec((any::<u64>(), labels_strategy()), 0..6)) {
        let rec = encode_series(&series);
        prop_assert_eq!(series_of(&rec).unwrap(), series);
    }

    #[test]
    fn samples_round_trip(samples in prop::collection::vec((any::<u64>(), any::<i64>(), any::<u64>()), 0..20)) {
        let samples: Vec<RefSample> = samples
            .into_iter()
            .map(|(series_ref, t, bits)| RefSample { st: 0, series_ref, t, v: f64::from_bits(bits) })
            .collect();
        let mut buf = Vec::new();
        encode_samples(&mut buf, &samples);
        let mut out = Vec::new();
        decode_samples(&buf, &mut out).unwrap();
        let bits = |s: &[RefSample]| s.iter().map(|s| (s.series_ref, s.t, s.v.to_bits())).collect::<Vec<_>>();
        prop_assert_eq!(bits(&out), bits(&samples));
        let mut each = Vec::new();
        let n = for_each_sample(&buf, |series_ref, t, v| each.push(RefSample { st: 0, series_ref, t, v })).unwrap();
        prop_assert_eq!(n, samples.len());
        prop_assert_eq!(bits(&each), bits(&samples));
    }

    #[test]
    fn for_each_sample_agrees_with_decode_samples(body in prop::collection::vec(any::<u8>(), 0..200)) {
        let mut rec = vec![2u8];
        rec.extend_from_slice(&body);
        let mut out = Vec::new();
        let whole = decode_samples(&rec, &mut out);
        let mut each = Vec::new();
        let streamed = for_each_sample(&rec, |series_ref, t, v| each.push((series_ref, t, v.to_bits())));
        prop_assert_eq!(whole.is_ok(), streamed.is_ok());
        if whole.is_ok() {
            let bits: Vec<_> = out.iter().map(|s| (s.series_ref, s.t, s.v.to_bits())).collect();
            prop_assert_eq!(each, bits);
        }
    }

    #[test]
    fn tombstones_round_trip(stones in prop::collection::vec((0u64..4, prop::collection::vec((any::<i64>(), any::<i64>()), 1..4)), 0..6)) {
        let stones: Vec<Stone> = stones.into_iter().map(|(series_ref, intervals)| Stone { series_ref, intervals }).collect();
        let mut buf = Vec::new();
        encode_tombstones(&mut buf, &stones);
        let mut out = Vec::new();
        decode_tombstones(&buf, &mut out).unwrap();
        // Same entries; consecutive stones of one series come back merged.
        let flat = |s: &[Stone]| s.iter().flat_map(|s| s.intervals.iter().map(move |&i| (s.series_ref, i))).collect::<Vec<_>>();
        prop_assert_eq!(flat(&out), flat(&stones));
        prop_assert!(out.windows(2).all(|w| w[0].series_ref != w[1].series_ref));
        let mut again = Vec::new();
        encode_tombstones(&mut again, &out);
        prop_assert_eq!(again, buf);
    }

    #[test]
    fn exemplars_round_trip(ex in prop::collection::vec((any::<u64>(), any::<i64>(), -1e9f64..1e9, labels_strategy()), 0..6)) {
        let ex: Vec<RefExemplar> = ex.into_iter().map(|(series_ref, t, v, labels)| RefExemplar { series_ref, t, v, labels }).collect();
        let mut buf = Vec::new();
        encode_exemplars(&mut buf, &ex);
        let mut out = vec![RefExemplar { labels: vec![("x".into(), "y".into()); 9], ..Default::default() }; 3];
        decode_exemplars(&buf, &mut out).unwrap();
        prop_assert_eq!(out, ex);
    }

    #[test]
    fn mmap_markers_round_trip(m in prop::collection::vec((any::<u64>(), any::<u64>()), 0..6)) {
        let m: Vec<RefMmapMarker> = m.into_iter().map(|(series_ref, mmap_ref)| RefMmapMarker { series_ref, mmap_ref }).collect();
        let mut buf = Vec::new();
        encode_mmap_markers(&mut buf, &m);
        let mut out = Vec::new();
        decode_mmap_markers(&buf, &mut out).unwrap();
        prop_assert_eq!(out, m);
    }

    #[test]
    fn metadata_round_trip(m in prop::collection::vec((any::<u64>(), any::<u8>(), ".{0,10}", ".{0,40}"), 0..6)) {
        let m: Vec<RefMetadata> = m.into_iter().map(|(series_ref, metric_type, unit, help)| RefMetadata { series_ref, metric_type, unit, help }).collect();
        let mut buf = Vec::new();
        encode_metadata(&mut buf, &m);
        let mut out = Vec::new();
        decode_metadata(&buf, &mut out).unwrap();
        prop_assert_eq!(out, m);
    }

    #[test]
    fn histograms_round_trip(hs in prop::collection::vec((any::<u64>(), any::<i64>(), histogram()), 0..4), custom in any::<bool>()) {
        let hs: Vec<RefHistogramSample> = hs.into_iter().map(|(series_ref, t, h)| RefHistogramSample { st: 0, series_ref, t, h }).collect();
        let mut buf = Vec::new();
        if custom {
            encode_custom_buckets_histogram_samples(&mut buf, &hs);
        } else {
            encode_histogram_samples(&mut buf, &hs);
        }
        let mut out = Vec::new();
        decode_histogram_samples(&buf, &mut out).unwrap();
        prop_assert_eq!(out.iter().map(histogram_key).collect::<Vec<_>>(), hs.iter().map(histogram_key).collect::<Vec<_>>());
        let mut again = Vec::new();
        if custom {
            encode_custom_buckets_histogram_samples(&mut again, &out);
        } else {
            encode_histogram_samples(&mut again, &out);
        }
        prop_assert_eq!(again, buf);
    }

    #[test]
    fn float_histograms_round_trip(hs in prop::collection::vec((any::<u64>(), any::<i64>(), float_histogram()), 0..4), custom in any::<bool>()) {
        let hs: Vec<RefFloatHistogramSample> = hs.into_iter().map(|(series_ref, t, h)| RefFloatHistogramSample { st: 0, series_ref, t, h }).collect();
        let mut buf = Vec::new();
        if custom {
            encode_custom_buckets_float_histogram_samples(&mut buf, &hs);
        } else {
            encode_float_histogram_samples(&mut buf, &hs);
        }
        let mut out = Vec::new();
        decode_float_histogram_samples(&buf, &mut out).unwrap();
        prop_assert_eq!(out.iter().map(float_histogram_key).collect::<Vec<_>>(), hs.iter().map(float_histogram_key).collect::<Vec<_>>());
        let mut again = Vec::new();
        if custom {
            encode_custom_buckets_float_histogram_samples(&mut again, &out);
        } else {
            encode_float_histogram_samples(&mut again, &out);
        }
        prop_assert_eq!(again, buf);
    }

    /// Arbitrary bytes, with and without a valid type byte, never panic.
    #[test]
    fn arbitrary_bytes_never_panic(typ in 0u8..12, body in prop::collection::vec(any::<u8>(), 0..300)) {
        let mut rec = vec![typ];
        rec.extend_from_slice(&body);
        let _ = decode_any(&rec);
        let _ = decode_any(&body);
    }

    /// Valid records with one byte changed never panic either.
    #[test]
    fn mutated_records_never_panic(file in 0..ALL_FILES.len(), pos in any::<prop::sample::Index>(), byte in any::<u8>()) {
        let mut rec = testdata(ALL_FILES[file]);
        let i = pos.index(rec.len());
        rec[i] = byte;
        let _ = decode_any(&rec);
    }
}

#[test]
fn min_valid_time_round_trip() {
    let mut buf = Vec::new();
    encode_min_valid_time(&mut buf, -5);
    // As Prometheus v3.16's Encoder.MinValidTime: type 14, big-endian i64.
    assert_eq!(buf, [14, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfb]);
    assert_eq!(decode_min_valid_time(&buf), Ok(-5));
    assert!(decode_min_valid_time(&buf[..8]).is_err());
    let mut long = buf.clone();
    long.push(0);
    assert!(decode_min_valid_time(&long).is_err());
    assert!(decode_min_valid_time(&[2, 0, 0, 0, 0, 0, 0, 0, 0]).is_err());
}
