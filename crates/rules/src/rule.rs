//! What every rule has, recording or alerting: a name, labels, an
//! expression, and the state `/api/v1/rules` shows (health, last error,
//! when and how long it last ran). [`Rule`] is a group's rule of either
//! kind.

use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use ferrite_model::Labels;
use ferrite_promql::{Engine, ParsedExpr, Queryable, Sample, Value};

use crate::alerting::AlertingRule;
use crate::recording::RecordingRule;

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

/// A rule's [`RuleState`], shared between its evaluations and the API.
#[derive(Debug)]
pub struct RuleStatus(Mutex<RuleState>);

impl Default for RuleStatus {
    fn default() -> Self {
        RuleStatus(Mutex::new(RuleState {
            health: Health::Unknown,
            last_error: None,
            evaluation_duration: Duration::ZERO,
            last_evaluation: None,
        }))
    }
}

impl RuleStatus {
    fn lock(&self) -> MutexGuard<'_, RuleState> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The state now.
    pub fn get(&self) -> RuleState {
        self.lock().clone()
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
}

/// One rule of a group.
#[derive(Debug)]
pub enum Rule {
    /// `record:`.
    Recording(RecordingRule),
    /// `alert:`.
    Alerting(AlertingRule),
}

impl Rule {
    /// The recorded series' name or the alert's name.
    pub fn name(&self) -> &str {
        match self {
            Rule::Recording(r) => &r.name,
            Rule::Alerting(r) => &r.name,
        }
    }

    /// The rule's health, error and timing.
    pub fn status(&self) -> &RuleStatus {
        match self {
            Rule::Recording(r) => &r.status,
            Rule::Alerting(r) => &r.status,
        }
    }

    /// The rule's labels as a label set (empty values left out), for
    /// `match[]`.
    pub fn label_set(&self) -> Labels {
        let labels = match self {
            Rule::Recording(r) => &r.labels,
            Rule::Alerting(r) => &r.labels,
        };
        Labels::new(labels.iter().map(|(k, v)| (k.as_str(), v.as_str())))
    }

    /// The key Prometheus matches rules by across a reload: name and
    /// labels.
    pub fn name_and_labels(&self) -> String {
        format!("{}{}", self.name(), self.label_set())
    }

    /// Whether two rules are the same (Prometheus compares them as their
    /// YAML: kind, name, printed expression, durations, labels,
    /// annotations).
    pub fn same_as(&self, other: &Rule) -> bool {
        match (self, other) {
            (Rule::Recording(a), Rule::Recording(b)) => a.same_as(b),
            (Rule::Alerting(a), Rule::Alerting(b)) => a.same_as(b),
            _ => false,
        }
    }
}

/// A rule's expression as an instant query at `t` (ms), as Prometheus'
/// `EngineQueryFunc` runs it: a vector as it is, a scalar as one sample
/// without labels, anything else an error.
pub fn query_vector(
    engine: &Engine,
    db: &dyn Queryable,
    query: &str,
    expr: &ParsedExpr,
    t: i64,
) -> Result<Vec<Sample>, String> {
    let res = engine
        .instant_query_parsed(db, query, expr, t)
        .map_err(|e| e.to_string())?;
    match res.value {
        Value::Vector(v) => Ok(v),
        Value::Scalar { t, v } => Ok(vec![Sample {
            labels: Labels::empty(),
            t,
            f: v,
            h: None,
        }]),
        _ => Err("rule result is not a vector or scalar".into()),
    }
}
