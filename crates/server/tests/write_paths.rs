//! The remote write hot path (`append_view`, 1.0 read in place) answers
//! and stores exactly what the general path (`decode` + `append`) does, on
//! random requests with invalid label sets, repeated series and samples
//! out of order or duplicated, sent one after another.

use ferrite_model::Labels;
use ferrite_remote::proto::v1;
use ferrite_remote::{decode_message, DecodeOptions, MessageType, V1View};
use ferrite_server::write::{append, append_view};
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

fn request() -> impl Strategy<Value = v1::WriteRequest> {
    let series = (
        proptest::collection::vec(label(), 0..4),
        proptest::collection::vec((0i64..6, prop_oneof![Just(1.0), Just(2.0)]), 0..4),
    )
        .prop_map(|(ls, ss)| v1::TimeSeries {
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
            ..Default::default()
        });
    proptest::collection::vec(series, 0..5).prop_map(|timeseries| v1::WriteRequest {
        timeseries,
        metadata: vec![],
    })
}

fn contents(db: &Db) -> Vec<(Labels, Vec<(i64, u64)>)> {
    db.querier(i64::MIN, i64::MAX)
        .select(&[])
        .expect("select")
        .into_iter()
        .map(|s| {
            let samples = s.samples().expect("samples");
            (
                s.labels.clone(),
                samples.into_iter().map(|(t, v)| (t, v.to_bits())).collect(),
            )
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
        for r in &reqs {
            let raw = r.encode_to_vec();
            let view = V1View::new(&raw).expect("plain 1.0 request");
            let a = append_view(&fast, &view, &opts);
            let b = append(&general, decode_message(MessageType::V1, &raw, &opts).unwrap());
            prop_assert_eq!(a.status(), b.status());
            prop_assert_eq!(a.message(), b.message());
        }
        prop_assert_eq!(contents(&fast), contents(&general));
        prop_assert_eq!(fast.head().num_series(), general.head().num_series());
    }
}
