//! The remote write hot path (`append_view`, 1.0 read in place) answers
//! and stores exactly what the general path (`decode` + `append`) does, on
//! random requests with invalid label sets, repeated series, samples and
//! native histograms (integer and float, valid and not, reserved schemas)
//! out of order or duplicated, sent one after another.

use ferrite_model::Labels;
use ferrite_remote::proto::v1;
use ferrite_remote::{decode_message, DecodeOptions, HistogramArena, MessageType};
use ferrite_server::write::{append, append_in_place};
use ferrite_tsdb::{Db, DbOptions};
use proptest::prelude::*;
use prost::Message;

fn label() -> impl Strategy<Value = (Vec<u8>, Vec<u8>)> {
    let name = prop_oneof![
        3 => Just(b"job".to_vec()),
        3 => Just(b"__name__".to_vec()),
        1 => Just(b"i".to_vec()),
        1 => Just(Vec::new()),
        1 => Just(vec![0xff]),
    ];
    let value = prop_oneof![
        3 => Just(b"a".to_vec()),
        3 => Just(b"b".to_vec()),
        1 => Just(Vec::new()),
        1 => Just(vec![b'x', 0xc3]),
    ];
    (name, value)
}

/// A histogram message: integer or float, a few layouts (one whose
/// buckets do not match its spans, one at a reserved schema that reduces,
/// one at a schema no one accepts), two counts.
fn histogram() -> impl Strategy<Value = v1::Histogram> {
    let layout = prop_oneof![
        3 => Just((3, vec![(0, 2)], 2)),
        1 => Just((3, vec![(0, 3)], 2)),
        1 => Just((10, vec![(-4, 4)], 4)),
        1 => Just((40, vec![(0, 1)], 1)),
        1 => Just((-53, vec![(0, 2)], 2)),
    ];
    (
        0i64..6,
        any::<bool>(),
        layout,
        prop_oneof![Just(1u64), Just(2)],
    )
        .prop_map(|(t, float, (schema, spans, buckets), n)| {
            let spans = spans
                .into_iter()
                .map(|(offset, length)| v1::BucketSpan { offset, length })
                .collect();
            let total = n * buckets as u64;
            let custom_values = if schema == -53 {
                vec![1.0, 2.0]
            } else {
                vec![]
            };
            let mut h = v1::Histogram {
                sum: 1.5,
                schema,
                zero_threshold: 0.001,
                positive_spans: spans,
                reset_hint: 0,
                timestamp: t * 1000,
                custom_values,
                ..Default::default()
            };
            if float {
                h.count = Some(v1::Count::CountFloat(total as f64));
                h.zero_count = Some(v1::ZeroCount::ZeroCountFloat(0.0));
                h.positive_counts = vec![n as f64; buckets];
            } else {
                h.count = Some(v1::Count::CountInt(total));
                h.zero_count = Some(v1::ZeroCount::ZeroCountInt(0));
                h.positive_deltas = std::iter::once(n as i64)
                    .chain(std::iter::repeat_n(0, buckets - 1))
                    .collect();
            }
            h
        })
}

fn request() -> impl Strategy<Value = v1::WriteRequest> {
    let series = (
        proptest::collection::vec(label(), 0..4),
        proptest::collection::vec((0i64..6, prop_oneof![Just(1.0), Just(2.0)]), 0..4),
        proptest::collection::vec(histogram(), 0..3),
    )
        .prop_map(|(ls, ss, hs)| v1::TimeSeries {
            labels: ls
                .into_iter()
                .map(|(name, value)| v1::Label { name, value })
                .collect(),
            samples: ss
                .into_iter()
                .map(|(t, value)| v1::Sample {
                    value,
                    timestamp: t * 1000,
                })
                .collect(),
            histograms: hs,
            ..Default::default()
        });
    proptest::collection::vec(series, 0..5).prop_map(|timeseries| v1::WriteRequest {
        timeseries,
        metadata: vec![],
    })
}

/// Every series with its samples, values as text (`Debug` of the value).
fn contents(db: &Db) -> Vec<(Labels, Vec<(i64, String)>)> {
    db.querier(i64::MIN, i64::MAX)
        .select(&[])
        .expect("select")
        .into_iter()
        .map(|s| {
            let mut samples = Vec::new();
            s.for_each_value(|t, v| samples.push((t, format!("{v:?}"))))
                .expect("samples");
            (s.labels.clone(), samples)
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn hot_path_equals_general_path(reqs in proptest::collection::vec(request(), 1..5)) {
        let (da, db_) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let fast = Db::open(da.path(), DbOptions::default()).unwrap();
        let general = Db::open(db_.path(), DbOptions::default()).unwrap();
        let opts = DecodeOptions::default();
        let mut arena = HistogramArena::new();
        for r in &reqs {
            let raw = r.encode_to_vec();
            let a = append_in_place(&fast, &raw, &mut arena, &opts).expect("plain 1.0 request");
            let b = append(&general, decode_message(MessageType::V1, &raw, &opts).unwrap());
            prop_assert_eq!(a.status(), b.status());
            prop_assert_eq!(a.message(), b.message());
        }
        prop_assert_eq!(contents(&fast), contents(&general));
        prop_assert_eq!(fast.head().num_series(), general.head().num_series());
    }
}
