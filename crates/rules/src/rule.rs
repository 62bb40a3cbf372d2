//! A recording rule: its expression evaluated at one time, the result
//! renamed and relabeled, with the state `/api/v1/rules` shows (health,
//! last error, when and how long it last ran).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use ferrite_model::{Labels, METRIC_NAME};
use ferrite_promql::{Engine, ParsedExpr, Queryable, Sample, Value};

/// A rule's health as Prometheus names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Health {
    /// Not evaluated yet.
    Unknown,
    /// Its last evaluation succeeded.
    Good,
    /// Its last evaluation failed.
    Bad,
}

impl Health {
    /// `unknown`, `ok` or `err`.
    pub fn as_str(self) -> &'static str {
        match self {
            Health::Unknown => "unknown",
            Health::Good => "ok",
            Health::Bad => "err",
        }
    }
}

/// What a rule's last evaluation left.
#[derive(Debug, Clone)]
pub struct RuleState {
    /// Its health.
    pub health: Health,
    /// The error of its last evaluation, if it failed.
    pub last_error: Option<String>,
    /// How long the last evaluation took.
    pub evaluation_duration: Duration,
    /// When the last evaluation started (wall clock); `None` before the
    /// first.
    pub last_evaluation: Option<SystemTime>,
}

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
    state: Mutex<RuleState>,
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
            state: Mutex::new(RuleState {
                health: Health::Unknown,
                last_error: None,
                evaluation_duration: Duration::ZERO,
                last_evaluation: None,
            }),
        }
    }

    /// The rule's labels as a label set (empty values left out), for
    /// `match[]`.
    pub fn label_set(&self) -> Labels {
        Labels::new(self.labels.iter().map(|(k, v)| (k.as_str(), v.as_str())))
    }

    /// Whether two rules are the same (Prometheus compares them as their
    /// YAML: name, printed expression, labels).
    pub fn same_as(&self, other: &RecordingRule) -> bool {
        self.name == other.name && self.query == other.query && self.labels == other.labels
    }

    /// The key Prometheus matches rules by across a reload: name and
    /// labels.
    pub fn name_and_labels(&self) -> String {
        format!("{}{}", self.name, self.label_set())
    }

    /// The rule's state now.
    pub fn state(&self) -> RuleState {
        self.lock().clone()
    }

    fn lock(&self) -> MutexGuard<'_, RuleState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records a success or a failure.
    pub fn set_outcome(&self, error: Option<String>) {
        let mut s = self.lock();
        s.health = if error.is_some() {
            Health::Bad
        } else {
            Health::Good
        };
        s.last_error = error;
    }

    /// Records when the evaluation started and how long it took.
    pub fn set_timing(&self, started: SystemTime, took: Duration) {
        let mut s = self.lock();
        s.last_evaluation = Some(started);
        s.evaluation_duration = took;
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
        let res = engine
            .instant_query_parsed(db, &self.query, &self.expr, t)
            .map_err(|e| e.to_string())?;
        let mut vector = match res.value {
            Value::Vector(v) => v,
            Value::Scalar { t, v } => vec![Sample {
                labels: Labels::empty(),
                t,
                f: v,
                h: None,
            }],
            _ => return Err("rule result is not a vector or scalar".into()),
        };
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
