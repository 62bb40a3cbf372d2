//! Compaction runs beside appends and queries: appenders are never refused
//! for it, queries keep answering, and nothing is lost or doubled.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ferrite_model::Labels;
use ferrite_tsdb::{Db, DbOptions};

const MIN: i64 = 60_000;

#[test]
fn compaction_beside_appends_and_queries() {
    let tmp = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::open(tmp.path(), DbOptions::default()).unwrap());
    let start = 1_700_000_000_000;
    let minutes = 12 * 60;
    let series = 20;
    let done = Arc::new(AtomicBool::new(false));

    let writer = {
        let db = db.clone();
        std::thread::spawn(move || {
            for j in 0..minutes {
                let mut app = db.appender();
                for i in 0..series {
                    let l = Labels::from_pairs(&[("__name__", "m"), ("i", &i.to_string())]);
                    app.append(&l, start + j * MIN, (i * 10_000 + j) as f64)
                        .unwrap();
                }
                app.commit().unwrap();
                if j % 60 == 0 {
                    std::thread::sleep(Duration::from_millis(2));
                }
            }
        })
    };
    let reader = {
        let (db, done) = (db.clone(), done.clone());
        std::thread::spawn(move || {
            let mut reads = 0;
            while !done.load(Ordering::Acquire) {
                for s in db.querier(i64::MIN, i64::MAX).select(&[]).unwrap() {
                    let samples = s.samples().unwrap();
                    assert!(samples.windows(2).all(|w| w[0].0 < w[1].0), "{}", s.labels);
                }
                reads += 1;
            }
            reads
        })
    };
    let mut blocks = 0;
    while !writer.is_finished() {
        blocks += db.compact().unwrap().len();
        std::thread::sleep(Duration::from_millis(1));
    }
    writer.join().unwrap();
    blocks += db.compact().unwrap().len();
    done.store(true, Ordering::Release);
    assert!(reader.join().unwrap() > 0);
    assert!(blocks >= 3, "blocks written: {blocks}");

    let check = |db: &Db| {
        let got = db.querier(i64::MIN, i64::MAX).select(&[]).unwrap();
        assert_eq!(got.len(), series as usize);
        for s in got {
            let i: i64 = s.labels.get("i").parse().unwrap();
            let want: Vec<(i64, f64)> = (0..minutes)
                .map(|j| (start + j * MIN, (i * 10_000 + j) as f64))
                .collect();
            assert_eq!(s.samples().unwrap(), want, "{}", s.labels);
        }
    };
    check(&db);
    Arc::try_unwrap(db).ok().unwrap().close().unwrap();
    let db = Db::open(tmp.path(), DbOptions::default()).unwrap();
    check(&db);
}
