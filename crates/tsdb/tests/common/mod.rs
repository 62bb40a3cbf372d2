//! Helpers shared by the integration tests.

use ferrite_model::Labels;
use ferrite_tsdb::Db;

/// Every series of a database with all its samples, in label order.
pub type Contents = Vec<(Labels, Vec<(i64, f64)>)>;

/// Reads everything back through the querier (blocks and head).
pub fn contents(db: &Db) -> Contents {
    db.querier(i64::MIN, i64::MAX)
        .select(&[])
        .unwrap()
        .into_iter()
        .map(|s| (s.labels.clone(), s.samples().unwrap()))
        .collect()
}
