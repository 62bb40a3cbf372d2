//! Deleting series data: tombstones in blocks and head are honoured by
//! queries at once and after a restart; cleaning tombstones rewrites the
//! blocks without the deleted samples.

use crate::common::{contents, fill_every_minute, Contents};
use ferrite_model::{MatchType, Matcher};
use ferrite_tsdb::{Db, DbOptions};

const HOUR: i64 = 3_600_000;
const START: i64 = 1_700_000_000_000;

fn fill(db: &Db) {
    fill_every_minute(db, START, 7 * 60, 10);
}

/// `c` without the samples of series i=3 and i=7 in [mint, maxt].
fn expected(c: &Contents, mint: i64, maxt: i64) -> Contents {
    c.iter()
        .map(|(l, s)| {
            let gone = matches!(l.get("i"), "3" | "7");
            let kept = s
                .iter()
                .copied()
                .filter(|&(t, _)| !(gone && t >= mint && t <= maxt))
                .collect();
            (l.clone(), kept)
        })
        .collect()
}

#[test]
fn deletion_spans_blocks_and_head_and_survives_restarts() {
    let tmp = tempfile::tempdir().unwrap();
    let (mint, maxt) = (START + HOUR, START + 6 * HOUR);
    let want;
    {
        let db = Db::open(tmp.path(), DbOptions::default()).unwrap();
        fill(&db);
        db.compact().unwrap();
        assert!(!db.blocks().is_empty());
        let before = contents(&db);
        want = expected(&before, mint, maxt);
        let m = Matcher::new(MatchType::Regex, "i", "3|7").unwrap();
        let n = db.delete(&[m], mint, maxt).unwrap();
        assert!(n >= 2, "series affected: {n}");
        assert_eq!(contents(&db), want, "right after the delete");
        db.close().unwrap();
    }
    let db = Db::open(tmp.path(), DbOptions::default()).unwrap();
    assert_eq!(contents(&db), want, "after a restart");
    // Samples deleted in the head stay deleted once the head is a block.
    db.compact_head_fully().unwrap();
    assert_eq!(db.head().num_series(), 0);
    assert_eq!(contents(&db), want, "after persisting the head");
    let blocks_before: Vec<_> = db.blocks().iter().map(|b| b.ulid()).collect();
    let rewritten = db.clean_tombstones().unwrap();
    assert!(rewritten >= 1);
    for b in db.blocks() {
        assert!(
            b.tombstones().is_empty(),
            "block {} still has tombstones",
            b.ulid()
        );
        assert!(!blocks_before.contains(&b.ulid()) || rewritten < blocks_before.len());
    }
    assert_eq!(contents(&db), want, "after cleaning tombstones");
    db.close().unwrap();
    let db = Db::open(tmp.path(), DbOptions::default()).unwrap();
    assert_eq!(contents(&db), want, "after cleaning and a restart");
}

/// The chunks a series streams (remote read) hold exactly its samples:
/// stored chunks as they are, and re-encoded ones where deletions apply,
/// in order, without overlap, at most 120 samples each.
#[test]
fn streamed_chunks_hold_the_queried_samples() {
    let tmp = tempfile::tempdir().unwrap();
    let db = Db::open(tmp.path(), DbOptions::default()).unwrap();
    fill(&db);
    db.compact().unwrap();
    let m = Matcher::new(MatchType::Regex, "i", "3|7").unwrap();
    db.delete(&[m], START + HOUR, START + 2 * HOUR).unwrap();
    for (mint, maxt) in [
        (i64::MIN, i64::MAX),
        (START + 30 * 60_000, START + 5 * HOUR),
    ] {
        let q = db.querier(mint, maxt);
        for s in q.select(&[]).unwrap() {
            let mut want = Vec::new();
            s.for_each_sample(|t, v| want.push((t, v))).unwrap();
            let mut got = Vec::new();
            let mut spans: Vec<(i64, i64)> = Vec::new();
            s.for_each_chunk(|cmin, cmax, _, bytes| {
                let samples: Vec<(i64, f64)> = ferrite_chunkenc::XorIterator::new(bytes).collect();
                assert!(!samples.is_empty() && samples.len() <= 120);
                assert_eq!((samples[0].0, samples[samples.len() - 1].0), (cmin, cmax));
                spans.push((cmin, cmax));
                got.extend(samples.into_iter().filter(|&(t, _)| t >= mint && t <= maxt));
            })
            .unwrap();
            assert!(spans.windows(2).all(|w| w[0].1 < w[1].0), "{spans:?}");
            assert_eq!(got, want, "{}", s.labels);
        }
    }
}
