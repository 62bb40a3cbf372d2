//! A recording rule: its expression evaluated at one time, the result
//! renamed and relabeled.

use std::collections::BTreeMap;
use std::sync::Arc;

use ferrite_model::{Labels, METRIC_NAME};
use ferrite_promql::{Engine, ParsedExpr, Queryable, Sample};

use crate::rule::{query_vector, RuleStatus};

/// A recording rule (`record:`).
#[derive(Debug)]
pub struct RecordingRule {
    /// The recorded series' name.
    pub name: String,
    /// The expression, parsed.
    pub expr: Arc<ParsedExpr>,
    /// The expression as Prometheus prints it (what it evaluates and
    /// shows).
    pub query: String,
    /// The group's labels and the rule's (the rule's win), set on every
    /// result; an empty value removes the label.
    pub labels: BTreeMap<String, String>,
    /// Its health, last error and timing.
    pub status: RuleStatus,
}

/// Prometheus' error for a result that collapses after relabeling.
pub const DUPLICATE_LABELSET: &str =
    "vector contains metrics with the same labelset after applying rule labels";

impl RecordingRule {
    /// A rule that has not run yet.
    pub fn new(name: String, expr: Arc<ParsedExpr>, labels: BTreeMap<String, String>) -> Self {
        let query = expr.to_string();
        RecordingRule {
            name,
            expr,
            query,
            labels,
            status: RuleStatus::default(),
        }
    }

    /// Whether two rules are the same (Prometheus compares them as their
    /// YAML: name, printed expression, labels).
    pub fn same_as(&self, other: &RecordingRule) -> bool {
        self.name == other.name && self.query == other.query && self.labels == other.labels
    }

    /// Evaluates the expression at `t` (ms) and names the result: each
    /// sample gets `__name__` and the rule's labels. Refuses a result in
    /// which two samples end up with the same labels, or with more than
    /// `limit` samples (when `limit` > 0).
    pub fn eval(
        &self,
        engine: &Engine,
        db: &dyn Queryable,
        t: i64,
        limit: i64,
    ) -> Result<Vec<Sample>, String> {
        let mut vector = query_vector(engine, db, &self.query, &self.expr, t)?;
        for s in &mut vector {
            s.labels.set(METRIC_NAME, &self.name);
            for (k, v) in &self.labels {
                s.labels.set(k, v);
            }
        }
        let mut seen: Vec<&Labels> = vector.iter().map(|s| &s.labels).collect();
        seen.sort();
        if seen.windows(2).any(|w| w[0] == w[1]) {
            return Err(DUPLICATE_LABELSET.into());
        }
        if limit > 0 && vector.len() as i64 > limit {
            return Err(format!(
                "exceeded limit of {limit} with {} series",
                vector.len()
            ));
        }
        Ok(vector)
    }
}
