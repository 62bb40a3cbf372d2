//! Helpers shared by the integration tests.

use ferrite_model::Labels;
use ferrite_tsdb::Db;

/// Every series of a database with all its samples, in label order.
pub type Contents = Vec<(Labels, Vec<(i64, f64)>)>;

/// Reads everything back through the querier (blocks and head).
pub fn contents(db: &Db) -> Contents {
    contents_from(db, i64::MIN)
}

/// [`contents`] of the samples from `mint` on.
#[allow(dead_code)] // not every test crate reads a part
pub fn contents_from(db: &Db, mint: i64) -> Contents {
    db.querier(mint, i64::MAX)
        .select(&[])
        .unwrap()
        .into_iter()
        .map(|s| (s.labels.clone(), s.samples().unwrap()))
        .collect()
}

/// Appends a sample a minute for `minutes` minutes from `start` to `series`
/// series `m{i="0"}`, `m{i="1"}`, ... (value `i * 100 + minute`), one
/// commit a minute.
#[allow(dead_code)] // not every test crate writes this shape
pub fn fill_every_minute(db: &Db, start: i64, minutes: i64, series: i64) {
    for j in 0..minutes {
        let mut app = db.appender();
        for i in 0..series {
            let l = Labels::from_pairs(&[("__name__", "m"), ("i", &i.to_string())]);
            app.append(&l, start + j * 60_000, (i * 100 + j) as f64)
                .unwrap();
        }
        app.commit().unwrap();
    }
}
