//! The receiver rules Prometheus v3.16.0 changed, one by one (the golden
//! bodies `v2_metadata_and_st` and `v2_no_symbols` check them against
//! Prometheus itself):
//!
//! - metadata refs: the unit ref is checked before the help ref, each with
//!   its own message (`prompb/io/prometheus/write/v2/codec.go`, `ToMetadata`),
//!   and such a series does not count as having invalid labels;
//! - empty metadata is not handed on (`tsdb/head_append_v2.go` records
//!   metadata only when `!IsEmpty()`);
//! - each sample is handed its start timestamp as sent, t=0 included;
//! - a series' exemplars are appended sorted by timestamp, then value, then
//!   labels (`write_handler.go`: `slices.SortFunc(exemplars,
//!   exemplar.Compare)`).

use ferrite_remote::proto::v2;
use ferrite_remote::{
    decode_request, text, DecodeOptions, MessageType, MetadataRef, MetricType, SeriesError,
    WriteRequest,
};
use prost::Message;

fn decode(message: MessageType, raw: &[u8]) -> WriteRequest {
    let body = snap::raw::Encoder::new().compress_vec(raw).unwrap();
    decode_request(
        Some(message.content_type()),
        None,
        &body,
        &DecodeOptions::default(),
    )
    .unwrap()
}

fn symbols(s: &[&str]) -> Vec<Vec<u8>> {
    s.iter().map(|s| s.as_bytes().to_vec()).collect()
}

fn series(labels_refs: Vec<u32>, metadata: v2::Metadata) -> v2::TimeSeries {
    v2::TimeSeries {
        labels_refs,
        samples: vec![v2::Sample {
            value: 1.0,
            timestamp: 5,
            start_timestamp: 0,
        }],
        metadata: Some(metadata),
        ..Default::default()
    }
}

#[test]
fn metadata_unit_ref_is_checked_before_help_ref() {
    // 0 "", 1 __name__, 2 a, 3 b, 4 seconds
    let req = v2::Request {
        symbols: symbols(&["", "__name__", "a", "b", "seconds"]),
        timeseries: vec![
            series(
                vec![1, 2],
                v2::Metadata {
                    r#type: 2,
                    help_ref: 600,
                    unit_ref: 500,
                },
            ),
            series(
                vec![1, 3],
                v2::Metadata {
                    r#type: 2,
                    help_ref: 600,
                    unit_ref: 4,
                },
            ),
        ],
    };
    let out = decode(MessageType::V2, &req.encode_to_vec());
    assert!(out.series.is_empty());
    let msgs: Vec<String> = out.errors.iter().map(|e| e.to_string()).collect();
    assert_eq!(
        msgs,
        [
            "parsing metadata for series [1 2]: metadata unit_ref 500 outside of symbols table (size 5)",
            "parsing metadata for series [1 3]: metadata help_ref 600 outside of symbols table (size 5)",
        ]
    );
    assert!(matches!(
        out.errors[0],
        SeriesError::MetadataRefOutOfRange {
            field: MetadataRef::Unit,
            symbol_ref: 500,
            symbols: 5,
            ..
        }
    ));
    assert!(out.errors.iter().all(SeriesError::refuses_series));
    // v3.16 counts these series in no invalid-labels counter.
    assert_eq!(out.invalid_label_samples, 0);
}

#[test]
fn empty_metadata_is_not_handed_on() {
    let md = |r#type, help_ref, unit_ref| v2::Metadata {
        r#type,
        help_ref,
        unit_ref,
    };
    // 0 "", 1 __name__, 2..=6 names, 7 help, 8 seconds
    let req = v2::Request {
        symbols: symbols(&[
            "", "__name__", "none", "zero", "enum99", "help", "unit", "h", "seconds",
        ]),
        timeseries: vec![
            v2::TimeSeries {
                metadata: None,
                ..series(vec![1, 2], md(0, 0, 0))
            },
            series(vec![1, 3], md(0, 0, 0)),
            // An unknown enum number is the unknown type.
            series(vec![1, 4], md(99, 0, 0)),
            series(vec![1, 5], md(0, 7, 0)),
            series(vec![1, 6], md(0, 0, 8)),
        ],
    };
    let out = decode(MessageType::V2, &req.encode_to_vec());
    assert!(out.errors.is_empty());
    let kept: Vec<_> = out
        .series
        .iter()
        .map(|s| {
            s.metadata
                .as_ref()
                .map(|m| (m.kind, m.help.as_str(), m.unit.as_str()))
        })
        .collect();
    assert_eq!(
        kept,
        [
            None,
            None,
            None,
            Some((MetricType::Unknown, "h", "")),
            Some((MetricType::Unknown, "", "seconds")),
        ]
    );
    assert_eq!(out.metadata_count(), 2);
    let dump = text::render_response(&Ok(out));
    assert_eq!(dump.matches("\nmetadata ").count(), 2, "{dump}");
}

#[test]
fn start_timestamps_are_handed_on_as_sent() {
    let req = v2::Request {
        symbols: symbols(&["", "__name__", "x"]),
        timeseries: vec![v2::TimeSeries {
            labels_refs: vec![1, 2],
            samples: [(0, -5), (0, 123), (10, 0), (20, 7)]
                .into_iter()
                .map(|(timestamp, start_timestamp)| v2::Sample {
                    value: 1.0,
                    timestamp,
                    start_timestamp,
                })
                .collect(),
            ..Default::default()
        }],
    };
    let dump = text::render_response(&Ok(decode(MessageType::V2, &req.encode_to_vec())));
    let sts: Vec<&str> = dump
        .lines()
        .filter(|l| l.starts_with("sample "))
        .map(|l| l.rsplit(' ').next().unwrap())
        .collect();
    assert_eq!(sts, ["st=-5", "st=123", "st=0", "st=7"]);
}

#[test]
fn exemplars_are_sorted_by_timestamp_value_and_labels() {
    // 0 "", 1 __name__, 2 x, 3 trace_id, 4 a, 5 b
    let exemplar = |trace: u32, value: f64, timestamp: i64| v2::Exemplar {
        labels_refs: vec![3, trace],
        value,
        timestamp,
    };
    let req = v2::Request {
        symbols: symbols(&["", "__name__", "x", "trace_id", "a", "b"]),
        timeseries: vec![v2::TimeSeries {
            labels_refs: vec![1, 2],
            samples: vec![v2::Sample {
                value: 1.0,
                timestamp: 50,
                start_timestamp: 0,
            }],
            exemplars: vec![
                exemplar(5, 1.0, 30),
                exemplar(4, 2.0, 10),
                exemplar(5, 1.0, 10),
                exemplar(4, 1.0, 10),
            ],
            ..Default::default()
        }],
    };
    let out = decode(MessageType::V2, &req.encode_to_vec());
    let order: Vec<(i64, f64, String)> = out.series[0]
        .exemplars
        .iter()
        .map(|e| (e.timestamp, e.value, e.labels.get("trace_id").to_string()))
        .collect();
    assert_eq!(
        order,
        [
            (10, 1.0, "a".to_string()),
            (10, 1.0, "b".to_string()),
            (10, 2.0, "a".to_string()),
            (30, 1.0, "b".to_string()),
        ]
    );
}
