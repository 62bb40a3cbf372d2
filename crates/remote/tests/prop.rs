//! Property tests: generated requests survive encode (prost) + snappy +
//! decode with their series intact; arbitrary bodies never panic.

use ferrite_remote::proto::{v1, v2};
use ferrite_remote::{decode_request, decompress, DecodeOptions, RequestError, Verdict};
use proptest::prelude::*;
use prost::Message;

fn snappy(raw: &[u8]) -> Vec<u8> {
    snap::raw::Encoder::new().compress_vec(raw).unwrap()
}

/// Valid, distinct label names (besides `__name__`) with values.
fn labels() -> impl Strategy<Value = Vec<(String, String)>> {
    (
        "[a-zA-Z_:][a-zA-Z0-9_:.]{0,8}",
        proptest::collection::btree_map("[a-z_][a-z0-9_.é]{0,6}", "[ -~é世]{0,6}", 0..5),
    )
        .prop_map(|(name, rest)| {
            let mut v = vec![("__name__".to_owned(), name)];
            v.extend(rest.into_iter().filter(|(n, _)| n != "__name__"));
            v
        })
}

fn samples() -> impl Strategy<Value = Vec<(i64, f64)>> {
    proptest::collection::vec((any::<i64>(), any::<f64>()), 0..6)
}

fn expected(ls: &[(String, String)]) -> Vec<(String, String)> {
    let mut e: Vec<_> = ls.iter().filter(|(_, v)| !v.is_empty()).cloned().collect();
    e.sort();
    e
}

fn got(ls: &ferrite_model::Labels) -> Vec<(String, String)> {
    ls.iter()
        .map(|l| (l.name.to_string(), l.value.to_string()))
        .collect()
}

proptest! {
    #[test]
    fn v1_round_trip(series in proptest::collection::vec((labels(), samples()), 0..6)) {
        let req = v1::WriteRequest {
            timeseries: series.iter().map(|(ls, ss)| v1::TimeSeries {
                labels: ls.iter().rev().map(|(n, v)| v1::Label {
                    name: n.clone().into_bytes(), value: v.clone().into_bytes(),
                }).collect(),
                samples: ss.iter().map(|&(t, v)| v1::Sample { timestamp: t, value: v }).collect(),
                ..Default::default()
            }).collect(),
            metadata: vec![],
        };
        let body = snappy(&req.encode_to_vec());
        let out = decode_request(None, Some("snappy"), &body, &DecodeOptions::default()).unwrap();
        prop_assert_eq!(out.verdict(), Verdict::Accept);
        prop_assert_eq!(out.series.len(), series.len());
        for (s, (ls, ss)) in out.series.iter().zip(&series) {
            prop_assert_eq!(got(&s.labels), expected(ls));
            prop_assert_eq!(s.samples.len(), ss.len());
            for (a, &(t, v)) in s.samples.iter().zip(ss) {
                prop_assert_eq!(a.timestamp, t);
                // proto3 does not encode a zero (-0.0 included): it decodes as +0.
                let want = if v == 0.0 { 0.0f64 } else { v };
                prop_assert_eq!(a.value.to_bits(), want.to_bits());
            }
        }
    }

    #[test]
    fn v2_round_trip(series in proptest::collection::vec((labels(), samples(), 0i64..1000), 0..6)) {
        let mut symbols: Vec<String> = vec![String::new()];
        let mut sym = |s: &str| -> u32 {
            if let Some(i) = symbols.iter().position(|x| x == s) { return i as u32; }
            symbols.push(s.to_owned());
            (symbols.len() - 1) as u32
        };
        let mut ts = Vec::new();
        for (ls, ss, st) in &series {
            let refs = ls.iter().flat_map(|(n, v)| [sym(n), sym(v)]).collect();
            ts.push(v2::TimeSeries {
                labels_refs: refs,
                samples: ss.iter().map(|&(t, v)| v2::Sample { timestamp: t, value: v, start_timestamp: *st }).collect(),
                metadata: Some(v2::Metadata { r#type: 1, help_ref: sym("help"), unit_ref: 0 }),
                ..Default::default()
            });
        }
        let req = v2::Request { symbols: symbols.into_iter().map(String::into_bytes).collect(), timeseries: ts };
        let body = snappy(&req.encode_to_vec());
        let out = decode_request(
            Some("application/x-protobuf;proto=io.prometheus.write.v2.Request"),
            None, &body, &DecodeOptions::default()).unwrap();
        let with_samples: Vec<_> = series.iter().filter(|(_, ss, _)| !ss.is_empty()).collect();
        prop_assert_eq!(out.series.len(), with_samples.len());
        prop_assert_eq!(out.errors.len(), series.len() - with_samples.len());
        for (s, (ls, ss, st)) in out.series.iter().zip(with_samples) {
            prop_assert_eq!(got(&s.labels), expected(ls));
            prop_assert_eq!(s.samples.len(), ss.len());
            prop_assert!(s.samples.iter().all(|x| x.start_timestamp == *st));
            let md = s.metadata.as_ref().unwrap();
            prop_assert_eq!(md.kind, ferrite_remote::MetricType::Counter);
            prop_assert_eq!(md.help.as_str(), "help");
        }
        prop_assert_eq!(out.stats().samples, out.sample_count());
    }

    #[test]
    fn arbitrary_bodies_never_panic(body in proptest::collection::vec(any::<u8>(), 0..512), v2 in any::<bool>()) {
        let ct = if v2 { "application/x-protobuf;proto=io.prometheus.write.v2.Request" } else { "application/x-protobuf" };
        let _ = decode_request(Some(ct), None, &body, &DecodeOptions::default());
        // And as an already-decompressed protobuf.
        let _ = decode_request(Some(ct), None, &snappy(&body), &DecodeOptions::default());
    }
}

#[test]
fn snappy_limits_and_corruption() {
    // Go refuses an empty body (no length header) as corrupt.
    assert_eq!(decompress(&[], 100), Err(RequestError::Snappy));
    let big = snappy(&vec![0u8; 1000]);
    assert_eq!(
        decompress(&big, 999),
        Err(RequestError::TooLarge {
            size: 1000,
            limit: 999
        })
    );
    assert_eq!(decompress(&big, 1000).unwrap().len(), 1000);
    // A header above 2^32-1 is corrupt, not too large.
    assert_eq!(
        decompress(&[0xff, 0xff, 0xff, 0xff, 0x7f], usize::MAX),
        Err(RequestError::Snappy)
    );
    let e = decode_request(
        None,
        None,
        &[0x80, 0x80, 0x80, 0x20, 0],
        &DecodeOptions::default(),
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "decoded size exceeds the 33554432 bytes limit"
    );
    assert_eq!(e.status(), 400);
}

#[test]
fn invalid_utf8_rejects_the_series_not_the_request() {
    let req = v1::WriteRequest {
        timeseries: vec![
            v1::TimeSeries {
                labels: vec![v1::Label {
                    name: b"__name__".to_vec(),
                    value: b"a\xff".to_vec(),
                }],
                samples: vec![v1::Sample {
                    timestamp: 1,
                    value: 1.0,
                }],
                ..Default::default()
            },
            v1::TimeSeries {
                labels: vec![v1::Label {
                    name: b"__name__".to_vec(),
                    value: b"ok".to_vec(),
                }],
                samples: vec![v1::Sample {
                    timestamp: 1,
                    value: 1.0,
                }],
                ..Default::default()
            },
        ],
        metadata: vec![],
    };
    let out = decode_request(
        None,
        None,
        &snappy(&req.encode_to_vec()),
        &DecodeOptions::default(),
    )
    .unwrap();
    assert_eq!(out.series.len(), 1);
    assert_eq!(out.invalid_label_samples, 1);
    assert_eq!(
        out.errors[0].to_string(),
        r#"invalid metric name or labels, got {__name__="a\xff"}"#
    );
    // 1.0 drops bad series silently.
    assert_eq!(out.verdict(), Verdict::Accept);
}

#[test]
fn legacy_validation_is_stricter() {
    let req = v1::WriteRequest {
        timeseries: vec![v1::TimeSeries {
            labels: vec![v1::Label {
                name: b"__name__".to_vec(),
                value: b"a.b".to_vec(),
            }],
            samples: vec![v1::Sample {
                timestamp: 1,
                value: 1.0,
            }],
            ..Default::default()
        }],
        metadata: vec![],
    };
    let body = snappy(&req.encode_to_vec());
    let utf8 = decode_request(None, None, &body, &DecodeOptions::default()).unwrap();
    assert_eq!(utf8.series.len(), 1);
    let opts = DecodeOptions {
        validation: ferrite_remote::ValidationScheme::Legacy,
        ..Default::default()
    };
    let legacy = decode_request(None, None, &body, &opts).unwrap();
    assert_eq!(legacy.series.len(), 0);
}
