//! Hostile bodies: each is decoded or refused with a typed error, quickly,
//! without recursing on the body's nesting and without allocating more than
//! a budget proportional to the body (`ferrite_remote::cost`).

use ferrite_remote::cost::{Budget, OverBudget};
use ferrite_remote::proto::read::{LabelMatcher, Query, ReadRequest};
use ferrite_remote::proto::{v1, v2};
use ferrite_remote::read::{decode_read_request, ReadRequestError, MAX_READ_MATCHERS};
use ferrite_remote::{
    decode_request, decompress_into, DecodeOptions, MessageType, RequestError, V1View,
};
use prost::Message;

fn snappy(raw: &[u8]) -> Vec<u8> {
    snap::raw::Encoder::new().compress_vec(raw).unwrap()
}

fn write(message: MessageType, raw: &[u8]) -> Result<ferrite_remote::WriteRequest, RequestError> {
    decode_request(
        Some(message.content_type()),
        Some("snappy"),
        &snappy(raw),
        &DecodeOptions::default(),
    )
}

fn over_budget(r: Result<ferrite_remote::WriteRequest, RequestError>) -> bool {
    match r {
        Err(e @ RequestError::OverBudget(OverBudget { .. })) => e.status() == 400,
        _ => false,
    }
}

/// A length-delimited field `key` holding `inner`.
fn field(key: u8, inner: &[u8]) -> Vec<u8> {
    let mut out = vec![key];
    prost::encoding::encode_varint(inner.len() as u64, &mut out);
    out.extend_from_slice(inner);
    out
}

fn label(name: &[u8], value: &[u8]) -> v1::Label {
    v1::Label {
        name: name.to_vec(),
        value: value.to_vec(),
    }
}

fn sample() -> v1::Sample {
    v1::Sample {
        value: 1.0,
        timestamp: 1,
    }
}

/// `depth` nested groups of unknown field 9, closed.
fn groups(depth: usize) -> Vec<u8> {
    let mut g = vec![0x4b; depth];
    g.extend(std::iter::repeat_n(0x4c, depth));
    g
}

#[test]
fn deeply_nested_groups_hit_prosts_recursion_limit() {
    // 100,000 nested groups inside a series (1.0 field 1, 2.0 field 5):
    // prost refuses them past its recursion limit of 100 instead of
    // recursing 100,000 deep. (With prost's `no-recursion-limit` feature
    // this test overflows its stack.)
    for (message, key) in [(MessageType::V1, 0x0a), (MessageType::V2, 0x2a)] {
        let body = field(key, &groups(100_000));
        match write(message, &body) {
            Err(e @ RequestError::Protobuf { .. }) => {
                assert_eq!(e.status(), 400);
                assert!(e.to_string().contains("recursion limit"), "{e}");
            }
            other => panic!("{message}: {other:?}"),
        }
    }
    // The in-place reader refuses groups (the general path answers).
    assert!(V1View::new(&field(0x0a, &groups(10))).is_none());
    // A few nested groups are skipped, as unknown fields are.
    let ok = [
        field(0x0a, &groups(20)),
        v1::WriteRequest {
            timeseries: vec![v1::TimeSeries {
                labels: vec![label(b"__name__", b"up")],
                samples: vec![sample()],
                ..Default::default()
            }],
            metadata: vec![],
        }
        .encode_to_vec(),
    ]
    .concat();
    let req = write(MessageType::V1, &ok).unwrap();
    assert_eq!(req.series.len(), 1);
    // Remote read: the same.
    let body = snappy(&field(0x0a, &groups(100_000)));
    assert!(matches!(
        decode_read_request(&body),
        Err(ReadRequestError::Protobuf(e)) if e.contains("recursion limit")
    ));
}

#[test]
fn deeply_nested_length_delimited_fields_are_not_recursed_into() {
    // 100,000 levels of field 1 in field 1: a series, a label, and its
    // name holding the rest as bytes. The series has no metric name.
    let mut headers: Vec<Vec<u8>> = Vec::new();
    let mut len = 0usize;
    for _ in 0..100_000 {
        let mut h = vec![0x0a];
        prost::encoding::encode_varint(len as u64, &mut h);
        len += h.len();
        headers.push(h);
    }
    let body: Vec<u8> = headers.into_iter().rev().flatten().collect();
    let req = write(MessageType::V1, &body).unwrap();
    assert!(req.series.is_empty());
    assert_eq!(req.errors.len(), 1);
}

#[test]
fn empty_histograms_are_refused_before_decoding() {
    // 1,000,000 empty histograms (`22 00`, 2 bytes each) in one series:
    // 2 MB on the wire, 200 times that as prost's structs.
    let mut series = Vec::new();
    for _ in 0..1_000_000 {
        series.extend_from_slice(&[0x22, 0x00]);
    }
    assert!(over_budget(write(MessageType::V1, &field(0x0a, &series))));
    assert!(over_budget(write(
        MessageType::V2,
        &field(0x2a, &field(0x1a, &[]).repeat(1_000_000))
    )));
    // A few are decoded (their series has no labels: refused).
    let few = field(0x0a, &series[..20]);
    assert!(matches!(
        write(MessageType::V1, &few),
        Ok(r) if r.series.is_empty() && r.errors.len() == 1
    ));
}

/// A 2.0 request whose symbol 2 is `big`, with `series` series built by
/// `ts` from it.
fn v2_request(big: &[u8], series: usize, ts: impl Fn() -> v2::TimeSeries) -> Vec<u8> {
    v2::Request {
        symbols: vec![b"".to_vec(), b"__name__".to_vec(), big.to_vec()],
        timeseries: (0..series).map(|_| ts()).collect(),
    }
    .encode_to_vec()
}

fn v2_sample() -> v2::Sample {
    v2::Sample {
        value: 1.0,
        timestamp: 1,
        start_timestamp: 0,
    }
}

#[test]
fn a_large_symbol_referenced_by_every_series_is_not_copied_for_each() {
    // A 1 MiB symbol and 256 series naming it: without a budget, 256 MiB
    // of copies (labels, metadata or error messages) from a 1 MiB body.
    let big = vec![b'x'; 1 << 20];
    type Series = fn() -> v2::TimeSeries;
    let cases: [(&str, Series); 3] = [
        ("as a label value", || v2::TimeSeries {
            labels_refs: vec![1, 2],
            samples: vec![v2_sample()],
            ..Default::default()
        }),
        ("in an invalid label set's error", || v2::TimeSeries {
            labels_refs: vec![2, 2],
            samples: vec![v2_sample()],
            ..Default::default()
        }),
        ("as help text", || v2::TimeSeries {
            labels_refs: vec![1, 1],
            samples: vec![v2_sample()],
            metadata: Some(v2::Metadata {
                r#type: 1,
                help_ref: 2,
                unit_ref: 0,
            }),
            ..Default::default()
        }),
    ];
    for (what, ts) in cases {
        let raw = v2_request(&big, 256, ts);
        assert!(raw.len() < (1 << 20) + 10_000);
        assert!(over_budget(write(MessageType::V2, &raw)), "{what}");
    }
    // One series with 100,000 bad exemplars, each error quoting the
    // series' labels (a 64 KiB value): 6.4 GB of messages.
    let raw = v2_request(&big[..64 << 10], 1, || v2::TimeSeries {
        labels_refs: vec![1, 2],
        samples: vec![v2_sample()],
        exemplars: vec![
            v2::Exemplar {
                labels_refs: vec![1],
                value: 0.0,
                timestamp: 0,
            };
            100_000
        ],
        ..Default::default()
    });
    assert!(over_budget(write(MessageType::V2, &raw)));
    // Within the budget, the same shapes decode.
    let raw = v2_request(&big[..1 << 10], 64, || v2::TimeSeries {
        labels_refs: vec![1, 2],
        samples: vec![v2_sample()],
        metadata: Some(v2::Metadata {
            r#type: 1,
            help_ref: 2,
            unit_ref: 0,
        }),
        exemplars: vec![v2::Exemplar {
            labels_refs: vec![1],
            value: 0.0,
            timestamp: 0,
        }],
        ..Default::default()
    });
    let req = write(MessageType::V2, &raw).unwrap();
    assert_eq!(req.series.len(), 64);
    assert_eq!(req.errors.len(), 64);
}

#[test]
fn a_budget_can_be_set() {
    let raw = v1::WriteRequest {
        timeseries: vec![v1::TimeSeries {
            labels: vec![label(b"__name__", b"up")],
            samples: vec![sample(); 100_000],
            ..Default::default()
        }],
        metadata: vec![],
    }
    .encode_to_vec();
    let opts = |per_byte| DecodeOptions {
        memory_per_body_byte: per_byte,
        ..Default::default()
    };
    let body = snappy(&raw);
    let decode = |per_byte| decode_request(None, None, &body, &opts(per_byte));
    assert!(decode(16).is_ok());
    // 1.8 MB of samples as 1.6 MB of structs: under 1 byte per byte.
    assert_eq!(
        decode(0).map(|_| ()),
        Err(RequestError::OverBudget(OverBudget {
            limit: Budget::for_body(raw.len(), 0).limit()
        }))
    );
}

#[test]
fn many_labels_are_linear() {
    // 100,000 labels in one series, by the general path (an exemplar
    // makes the in-place reader decline) and the in-place one; then
    // 100,000 labels all named alike (a duplicate name).
    let many: Vec<v1::Label> = (0..100_000)
        .map(|i| label(format!("l{i:06}").as_bytes(), b"v"))
        .chain([label(b"__name__", b"up")])
        .collect();
    let start = std::time::Instant::now();
    for exemplars in [vec![v1::Exemplar::default()], vec![]] {
        let raw = v1::WriteRequest {
            timeseries: vec![v1::TimeSeries {
                labels: many.clone(),
                samples: vec![sample()],
                exemplars: exemplars.clone(),
                ..Default::default()
            }],
            metadata: vec![],
        }
        .encode_to_vec();
        assert_eq!(V1View::new(&raw).is_some(), exemplars.is_empty());
        let req = write(MessageType::V1, &raw).unwrap();
        assert_eq!(req.series[0].labels.len(), 100_001);
    }
    let raw = v1::WriteRequest {
        timeseries: vec![v1::TimeSeries {
            labels: (0..100_000)
                .map(|_| label(b"a", b"v"))
                .chain([label(b"__name__", b"up")])
                .collect(),
            samples: vec![sample()],
            ..Default::default()
        }],
        metadata: vec![],
    }
    .encode_to_vec();
    let req = write(MessageType::V1, &raw).unwrap();
    assert!(req.series.is_empty());
    assert!(matches!(
        &req.errors[..],
        [ferrite_remote::SeriesError::DuplicateLabel { name, .. }] if name == "a"
    ));
    // Quadratic work would take minutes here (10^10 steps).
    assert!(start.elapsed().as_secs() < 20, "{:?}", start.elapsed());
}

#[test]
fn snappy_headers_claiming_more_than_the_body_holds_allocate_nothing() {
    // A 5-byte body claiming 30 MiB (under the 32 MiB limit).
    let mut body = Vec::new();
    prost::encoding::encode_varint(30 << 20, &mut body);
    body.extend_from_slice(&[0x00, 0x00]);
    let mut out = Vec::new();
    assert_eq!(
        decompress_into(&body, 32 << 20, &mut out),
        Err(RequestError::Snappy)
    );
    assert_eq!(out.capacity(), 0);
    // Over the limit: refused with its own error, as before.
    let mut huge = Vec::new();
    prost::encoding::encode_varint(1 << 31, &mut huge);
    assert!(matches!(
        decompress_into(&huge, 32 << 20, &mut out),
        Err(RequestError::TooLarge { .. })
    ));
    // Remote read: the same check.
    assert!(matches!(
        decode_read_request(&body),
        Err(ReadRequestError::Snappy(_))
    ));
}

#[test]
fn the_snappy_expansion_bound_holds_for_the_most_compressible_bodies() {
    for len in [0, 1, 63, 64, 65, 1000, 1 << 16, 1 << 20, 32 << 20] {
        for byte in [0u8, 7] {
            let raw = vec![byte; len];
            let body = snappy(&raw);
            let mut out = Vec::new();
            decompress_into(&body, 32 << 20, &mut out).unwrap();
            assert_eq!(out, raw);
        }
    }
}

fn read_request(queries: Vec<Vec<LabelMatcher>>) -> Vec<u8> {
    snappy(
        &ReadRequest {
            queries: queries
                .into_iter()
                .map(|matchers| Query {
                    start_timestamp_ms: 0,
                    end_timestamp_ms: 1,
                    matchers,
                })
                .collect(),
            accepted_response_types: vec![],
        }
        .encode_to_vec(),
    )
}

fn matcher(kind: i32, value: &str) -> LabelMatcher {
    LabelMatcher {
        r#type: kind,
        name: b"__name__".to_vec(),
        value: value.as_bytes().to_vec(),
    }
}

#[test]
fn read_requests_have_limits() {
    // 100,000 matchers in one query, or spread over queries.
    let many: Vec<LabelMatcher> = (0..100_000).map(|i| matcher(0, &format!("m{i}"))).collect();
    assert_eq!(
        decode_read_request(&read_request(vec![many.clone()])),
        Err(ReadRequestError::TooManyMatchers(100_000))
    );
    let spread: Vec<Vec<LabelMatcher>> = many.chunks(10).map(<[_]>::to_vec).collect();
    assert_eq!(
        decode_read_request(&read_request(spread)),
        Err(ReadRequestError::TooManyMatchers(100_000))
    );
    let most = many[..MAX_READ_MATCHERS].to_vec();
    assert!(decode_read_request(&read_request(vec![most])).is_ok());
    // 2 MiB of regular expressions.
    let re = "a".repeat(1 << 20);
    assert_eq!(
        decode_read_request(&read_request(vec![vec![matcher(2, &re), matcher(3, &re)]])),
        Err(ReadRequestError::RegexesTooLarge(2 << 20))
    );
    assert!(
        decode_read_request(&read_request(vec![vec![matcher(0, &re), matcher(2, "x")]])).is_ok()
    );
    // 1,000,000 empty matchers (`1a 00`): refused before prost makes
    // 56 MB of structs of them.
    let query = field(0x0a, &[0x1a, 0x00].repeat(1_000_000));
    assert!(matches!(
        decode_read_request(&snappy(&query)),
        Err(ReadRequestError::OverBudget(_))
    ));
}
