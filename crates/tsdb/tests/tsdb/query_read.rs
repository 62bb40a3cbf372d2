//! `QuerySeries::read_into` (floats of XOR chunks decoded in bulk) hands
//! out exactly what `for_each_value` does: over blocks and the head,
//! query ranges that cut chunks, deleted intervals, and series that switch
//! between floats and native histograms.

use ferrite_model::{Histogram, Labels, MatchType, Matcher, SampleValue, Span};
use ferrite_tsdb::{Db, DbOptions, QuerySeries};
use proptest::prelude::*;

const MINUTE: i64 = 60_000;
const START: i64 = 1_700_000_000_000;
/// Samples per series: 7 h at one a minute, so blocks and head both hold some.
const SAMPLES: i64 = 7 * 60;

fn histogram(i: u64) -> Histogram {
    Histogram {
        schema: 1,
        count: 2 * i,
        sum: 1.5 * i as f64,
        positive_spans: vec![Span {
            offset: 0,
            length: 2,
        }],
        positive_buckets: vec![i as i64, 0],
        ..Histogram::default()
    }
}

/// Ten float series; series 9 holds native histograms for its second hour.
fn filled(dir: &std::path::Path) -> Db {
    let db = Db::open(dir, DbOptions::default()).expect("opens");
    for j in 0..SAMPLES {
        let mut app = db.appender();
        for i in 0..10 {
            let l = Labels::from_pairs(&[("__name__", "m"), ("i", &i.to_string())]);
            let t = START + j * MINUTE;
            if i == 9 && (60..120).contains(&j) {
                app.append_histogram(&l, t, histogram(j as u64))
                    .expect("appends");
            } else {
                let v = (i * 1000 + j) as f64 + 0.25 * (j % 7) as f64;
                app.append(&l, t, v).expect("appends");
            }
        }
        app.commit().expect("commits");
    }
    db
}

/// A series' floats (value bits, so NaNs compare) and histograms.
type Read = (Vec<(i64, u64)>, Vec<(i64, SampleValue)>);

/// What `for_each_value` hands out.
fn by_value(s: &QuerySeries) -> Read {
    let (mut floats, mut hists) = (Vec::new(), Vec::new());
    s.for_each_value(|t, v| match v.to_owned_value() {
        SampleValue::Float(f) => floats.push((t, f.to_bits())),
        other => hists.push((t, other)),
    })
    .expect("reads");
    (floats, hists)
}

/// The same, by `read_into`, appending to a buffer that holds a sample
/// already (which must stay).
fn by_read_into(s: &QuerySeries) -> Read {
    let (mut floats, mut hists) = (vec![(-1, 0.5)], Vec::new());
    s.read_into(&mut floats, |t, v| hists.push((t, v.to_owned_value())))
        .expect("reads");
    assert_eq!(floats.first(), Some(&(-1, 0.5)));
    let floats = floats[1..].iter().map(|&(t, v)| (t, v.to_bits())).collect();
    (floats, hists)
}

fn assert_same_reads(db: &Db, mint: i64, maxt: i64) {
    let series = db.querier(mint, maxt).select(&[]).expect("selects");
    for s in &series {
        assert_eq!(
            by_read_into(s),
            by_value(s),
            "{} in [{mint}, {maxt}]",
            s.labels
        );
    }
}

#[test]
fn read_into_equals_for_each_value_over_blocks_head_and_deletions() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let db = filled(tmp.path());
    db.compact().expect("compacts");
    assert!(!db.blocks().is_empty(), "some samples are in blocks");
    let m = Matcher::new(MatchType::Regex, "i", "3|7|9").expect("matcher");
    db.delete(&[m], START + 50 * MINUTE, START + 200 * MINUTE)
        .expect("deletes");
    let end = START + SAMPLES * MINUTE;
    assert_same_reads(&db, i64::MIN, i64::MAX);
    assert_same_reads(&db, START + 17 * MINUTE + 1, end - 33 * MINUTE - 1);
    assert_same_reads(&db, START + 119 * MINUTE, START + 119 * MINUTE);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Any query range, with and without a deletion.
    #[test]
    fn read_into_equals_for_each_value_in_any_range(
        a in 0..SAMPLES * MINUTE,
        len in 0..SAMPLES * MINUTE,
        delete in proptest::option::of((0..SAMPLES * MINUTE, 0..60 * MINUTE)),
    ) {
        let tmp = tempfile::tempdir().expect("tempdir");
        let db = filled(tmp.path());
        db.compact().expect("compacts");
        if let Some((at, len)) = delete {
            let m = Matcher::new(MatchType::Regex, "i", "[0-4]|9").expect("matcher");
            db.delete(&[m], START + at, START + at + len).expect("deletes");
        }
        assert_same_reads(&db, START + a, START + a + len);
    }
}
