//! An alerting rule: its expression evaluated at each slot, every result
//! sample an alert instance that goes pending, fires after `for`, keeps
//! firing for `keep_firing_for` after its condition cleared, and is then
//! resolved, as Prometheus' `AlertingRule.Eval` moves them.
//!
//! - **Instances.** Each result sample, its labels without `__name__`
//!   plus the rule's labels (expanded as templates; an empty result
//!   removes the label) and `alertname`, is one alert; its annotations are
//!   expanded too. Two samples that make the same labels fail the rule.
//! - **States.** A new instance is pending from the slot it appeared at
//!   (`activeAt`); it fires at the first slot at least `for` after that;
//!   one that stops appearing is dropped if pending, and resolved if
//!   firing — unless `keep_firing_for` keeps it firing that long after it
//!   last appeared. A resolved instance is kept (and re-sent) for 15
//!   minutes, then forgotten; if it comes back before, it starts again as
//!   a new pending one.
//! - **Series.** Each pending or firing instance writes `ALERTS{...,
//!   alertstate="pending"|"firing"} 1` and `ALERTS_FOR_STATE{...}` =
//!   `activeAt` in Unix seconds, at the slot minus the query offset —
//!   but only once the rule's state was restored after a start
//!   ([`crate::restore`]), as Prometheus writes nothing before.
//! - **Notifications.** After each successful evaluation, the firing and
//!   recently resolved instances not sent within `--rules.alert.resend-delay`
//!   (or resolved since they were last sent) go to the [`AlertNotifier`],
//!   valid for four times the larger of the interval and the resend
//!   delay.
//! - **Limit.** More pending or firing instances than the group's
//!   `limit` fail the rule and forget every instance.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use ferrite_model::{Labels, METRIC_NAME};
use ferrite_promql::{Engine, ParsedExpr, Queryable, Sample};
use ferrite_template::{alert_template_data, Expander, QueryFunc, Value, DEFINITIONS};
use tracing::warn;

use crate::rule::{query_vector, RuleStatus};

/// The series of an alert's state.
pub const ALERTS: &str = "ALERTS";
/// The series of an alert's `activeAt`, read back after a restart.
pub const ALERTS_FOR_STATE: &str = "ALERTS_FOR_STATE";
/// The label naming the alert.
pub const ALERT_NAME: &str = "alertname";
/// The label of `ALERTS` giving the state.
pub const ALERT_STATE: &str = "alertstate";

/// How long a resolved alert is kept, and re-sent (Prometheus'
/// `resolvedRetention`).
pub const RESOLVED_RETENTION_NS: i64 = 15 * 60 * 1_000_000_000;

/// Prometheus' error for results that make the same alert twice.
pub const DUPLICATE_ALERT: &str =
    "vector contains metrics with the same labelset after applying alert labels";

/// An alert instance's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum AlertState {
    /// The rule was never evaluated.
    Unknown,
    /// Neither pending nor firing (resolved).
    Inactive,
    /// Active for less than `for`.
    Pending,
    /// Active for `for` or longer.
    Firing,
}

impl AlertState {
    /// `unknown`, `inactive`, `pending` or `firing`.
    pub fn as_str(self) -> &'static str {
        match self {
            AlertState::Unknown => "unknown",
            AlertState::Inactive => "inactive",
            AlertState::Pending => "pending",
            AlertState::Firing => "firing",
        }
    }
}

/// One alert instance. Times are Unix nanoseconds; `None` is Go's zero
/// time.
#[derive(Debug, Clone, PartialEq)]
pub struct Alert {
    /// Its state.
    pub state: AlertState,
    /// Its labels (`alertname` included).
    pub labels: Labels,
    /// Its annotations, expanded.
    pub annotations: Labels,
    /// The expression's value at the last evaluation (0 for a
    /// histogram).
    pub value: f64,
    /// When its condition started to hold.
    pub active_at: i64,
    /// When it started firing.
    pub fired_at: Option<i64>,
    /// When it was resolved.
    pub resolved_at: Option<i64>,
    /// When it was last sent.
    pub last_sent_at: Option<i64>,
    /// Until when the last notification holds (its `endsAt` while
    /// firing).
    pub valid_until: Option<i64>,
    /// Since when `keep_firing_for` keeps it firing.
    pub keep_firing_since: Option<i64>,
}

impl Alert {
    /// Whether it is due to be sent at `ts`: firing or resolved, and
    /// resolved since it was last sent or not sent for `resend_delay`.
    fn needs_sending(&self, ts: i64, resend_delay_ns: i64) -> bool {
        if self.state == AlertState::Pending {
            return false;
        }
        if let Some(resolved) = self.resolved_at {
            let resolved_since_sent = match self.last_sent_at {
                None => true,
                Some(sent) => resolved > sent,
            };
            if resolved_since_sent {
                return true;
            }
        }
        match self.last_sent_at {
            None => true,
            Some(sent) => sent.saturating_add(resend_delay_ns) < ts,
        }
    }
}

/// Where the alerts to send go (the server hands them to its notifier).
pub trait AlertNotifier: Send + Sync {
    /// Sends `alerts` of the rule whose expression is `expr`.
    fn send(&self, expr: &str, alerts: Vec<Alert>);
}

/// What an alerting rule's evaluation reads besides the storage.
pub struct AlertContext<'a> {
    /// `global.external_labels`, for `$externalLabels`.
    pub external_labels: &'a Labels,
    /// `--web.external-url`, for `$externalURL`.
    pub external_url: &'a str,
}

/// An alerting rule (`alert:`).
#[derive(Debug)]
pub struct AlertingRule {
    /// The alert's name.
    pub name: String,
    /// The expression, parsed.
    pub expr: Arc<ParsedExpr>,
    /// The expression as Prometheus prints it.
    pub query: String,
    /// `for`, in nanoseconds.
    pub hold_ns: i64,
    /// `keep_firing_for`, in nanoseconds.
    pub keep_firing_for_ns: i64,
    /// The group's labels and the rule's (the rule's win), templates.
    pub labels: BTreeMap<String, String>,
    /// The annotations, templates.
    pub annotations: BTreeMap<String, String>,
    /// Its health, last error and timing.
    pub status: RuleStatus,
    /// The instances, by labels.
    active: Mutex<HashMap<Labels, Alert>>,
    /// Whether its state was restored after a start (until then it
    /// writes no series).
    restored: AtomicBool,
}

impl AlertingRule {
    /// A rule with no instances; `restored` is false for the rules loaded
    /// at start-up, whose state is restored from `ALERTS_FOR_STATE`.
    pub fn new(
        name: String,
        expr: Arc<ParsedExpr>,
        hold_ns: i64,
        keep_firing_for_ns: i64,
        labels: BTreeMap<String, String>,
        annotations: BTreeMap<String, String>,
        restored: bool,
    ) -> Self {
        let query = expr.to_string();
        AlertingRule {
            name,
            expr,
            query,
            hold_ns,
            keep_firing_for_ns,
            labels,
            annotations,
            status: RuleStatus::default(),
            active: Mutex::new(HashMap::new()),
            restored: AtomicBool::new(restored),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<Labels, Alert>> {
        self.active.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether two rules are the same (as Prometheus compares their YAML).
    pub fn same_as(&self, other: &AlertingRule) -> bool {
        self.name == other.name
            && self.query == other.query
            && self.hold_ns == other.hold_ns
            && self.keep_firing_for_ns == other.keep_firing_for_ns
            && self.labels == other.labels
            && self.annotations == other.annotations
    }

    /// Takes over the instances of the rule this one replaces on reload.
    pub fn copy_alerts_from(&self, from: &AlertingRule) {
        let old = from.lock().clone();
        self.lock().extend(old);
    }

    /// Whether the rule's state has been restored.
    pub fn restored(&self) -> bool {
        self.restored.load(Ordering::Relaxed)
    }

    /// Marks the state restored: the rule writes its series from now on.
    pub fn set_restored(&self) {
        self.restored.store(true, Ordering::Relaxed);
    }

    /// The highest state of its instances (`unknown` before the first
    /// evaluation).
    pub fn state(&self) -> AlertState {
        if self.status.get().last_evaluation.is_none() {
            return AlertState::Unknown;
        }
        self.lock()
            .values()
            .map(|a| a.state)
            .max()
            .unwrap_or(AlertState::Inactive)
            .max(AlertState::Inactive)
    }

    /// The pending and firing instances (not the resolved ones kept for
    /// re-sending).
    pub fn active_alerts(&self) -> Vec<Alert> {
        let mut out: Vec<Alert> = self
            .lock()
            .values()
            .filter(|a| a.resolved_at.is_none())
            .cloned()
            .collect();
        out.sort_by(|a, b| a.labels.cmp(&b.labels));
        out
    }

    /// How many instances it holds (resolved ones included).
    pub fn instance_count(&self) -> usize {
        self.lock().len()
    }

    /// Runs `f` on each instance (for restoring their `activeAt`).
    pub fn for_each_alert(&self, mut f: impl FnMut(&mut Alert)) {
        for a in self.lock().values_mut() {
            f(a);
        }
    }

    /// Evaluates the rule at slot `ts` (Unix ns), the query at `ts`
    /// minus `offset_ns`, and moves the instances; returns the `ALERTS`
    /// and `ALERTS_FOR_STATE` samples to write (none before the state is
    /// restored).
    pub fn eval(
        &self,
        engine: &Engine,
        db: &dyn Queryable,
        ctx: &AlertContext<'_>,
        ts: i64,
        offset_ns: i64,
        limit: i64,
    ) -> Result<Vec<Sample>, String> {
        let query_ts = ts.saturating_sub(offset_ns);
        let t_ms = query_ts.div_euclid(1_000_000);
        let result = query_vector(engine, db, &self.query, &self.expr, t_ms)?;
        let templates = TemplateQueries { engine, db };
        let found = self.instances(&result, ctx, ts, &templates)?;
        let mut active = self.lock();
        let mut current = Vec::with_capacity(found.len());
        for alert in found {
            current.push(alert.labels.clone());
            match active.get_mut(&alert.labels) {
                Some(a) if a.state != AlertState::Inactive => {
                    a.value = alert.value;
                    a.annotations = alert.annotations;
                }
                _ => {
                    active.insert(alert.labels.clone(), alert);
                }
            }
        }
        let current: std::collections::HashSet<Labels> = current.into_iter().collect();
        let mut out = Vec::new();
        let mut pending_or_firing = 0i64;
        let restored = self.restored();
        active.retain(|labels, a| {
            let keep = if current.contains(labels) {
                a.keep_firing_since = None;
                Keep {
                    kept: true,
                    still_active: true,
                }
            } else {
                self.clear(a, ts)
            };
            if keep.still_active {
                pending_or_firing += 1;
                self.advance(a, ts);
                if restored {
                    out.push(self.alerts_sample(a, t_ms));
                    out.push(self.for_state_sample(&a.labels, a.active_at, t_ms));
                }
            }
            keep.kept
        });
        if limit > 0 && pending_or_firing > limit {
            active.clear();
            return Err(format!(
                "exceeded limit of {limit} with {pending_or_firing} alerts"
            ));
        }
        Ok(out)
    }

    /// The instances a result makes, with their labels and annotations
    /// expanded.
    fn instances(
        &self,
        result: &[Sample],
        ctx: &AlertContext<'_>,
        ts: i64,
        templates: &TemplateQueries<'_>,
    ) -> Result<Vec<Alert>, String> {
        let template_name = format!("__alert_{}", self.name);
        let mut seen = std::collections::HashSet::with_capacity(result.len());
        let mut out = Vec::with_capacity(result.len());
        for sample in result {
            // The template data of the sample, built once for all its
            // labels and annotations.
            let data = alert_template_data(
                &sample.labels,
                ctx.external_labels,
                ctx.external_url,
                sample.f,
                sample.h.as_ref(),
            );
            let expand = |text: &str| self.expand(&template_name, text, &data, ctx, ts, templates);
            let mut labels = sample.labels.clone();
            labels.remove(METRIC_NAME);
            for (name, text) in &self.labels {
                labels.set(name, &expand(text));
            }
            labels.set(ALERT_NAME, &self.name);
            let annotations = Labels::new(
                self.annotations
                    .iter()
                    .map(|(name, text)| (name.clone(), expand(text))),
            );
            if !seen.insert(labels.clone()) {
                return Err(DUPLICATE_ALERT.into());
            }
            out.push(Alert {
                state: AlertState::Pending,
                labels,
                annotations,
                value: sample.f,
                active_at: ts,
                fired_at: None,
                resolved_at: None,
                last_sent_at: None,
                valid_until: None,
                keep_firing_since: None,
            });
        }
        Ok(out)
    }

    /// One label or annotation template expanded over a sample's `data`,
    /// with the variables Prometheus defines first; an error is shown in
    /// place of the text, as Prometheus shows it.
    fn expand(
        &self,
        template_name: &str,
        text: &str,
        data: &Value,
        ctx: &AlertContext<'_>,
        ts: i64,
        templates: &TemplateQueries<'_>,
    ) -> String {
        let full = format!("{DEFINITIONS}{text}");
        let expander = Expander::new(
            template_name,
            &full,
            data.clone(),
            ts.div_euclid(1_000_000),
            templates,
            ctx.external_url,
        );
        match expander.expand() {
            Ok(s) => s,
            Err(e) => {
                warn!(alert = %self.name, err = %e, "Expanding alert template failed");
                format!("<error expanding template: {e}>")
            }
        }
    }

    /// An instance that no longer appears in the result at `ts`: kept
    /// firing by `keep_firing_for`, or resolved (a pending one dropped,
    /// a resolved one dropped after the retention).
    fn clear(&self, a: &mut Alert, ts: i64) -> Keep {
        let mut keep_firing = false;
        if a.state == AlertState::Firing && self.keep_firing_for_ns > 0 {
            let since = *a.keep_firing_since.get_or_insert(ts);
            keep_firing = ts.saturating_sub(since) < self.keep_firing_for_ns;
        }
        let dropped = a.state == AlertState::Pending
            || a.resolved_at
                .is_some_and(|r| ts.saturating_sub(r) > RESOLVED_RETENTION_NS);
        if a.state != AlertState::Inactive && !keep_firing {
            a.state = AlertState::Inactive;
            a.resolved_at = Some(ts);
        }
        Keep {
            kept: !dropped,
            still_active: keep_firing,
        }
    }

    /// Moves a pending or firing instance on at `ts`: it fires once
    /// active for `for`; a firing one whose `for` grew past its age goes
    /// back to pending.
    fn advance(&self, a: &mut Alert, ts: i64) {
        let age = ts.saturating_sub(a.active_at);
        if a.state == AlertState::Pending && age >= self.hold_ns {
            a.state = AlertState::Firing;
            a.fired_at = Some(ts);
        }
        if a.state == AlertState::Firing && age < self.hold_ns {
            a.state = AlertState::Pending;
            a.fired_at = None;
            a.last_sent_at = None;
            a.keep_firing_since = None;
        }
    }

    /// `ALERTS{<rule labels>, <alert labels>, alertstate}` = 1 at `t_ms`.
    fn alerts_sample(&self, a: &Alert, t_ms: i64) -> Sample {
        let mut labels = self.label_base(&a.labels);
        labels.set(METRIC_NAME, ALERTS);
        labels.set(ALERT_STATE, a.state.as_str());
        Sample {
            labels,
            t: t_ms,
            f: 1.0,
            h: None,
        }
    }

    /// `ALERTS_FOR_STATE{<rule labels>, <alert labels>}` = `active_at`
    /// in Unix seconds, at `t_ms`.
    fn for_state_sample(&self, alert_labels: &Labels, active_at: i64, t_ms: i64) -> Sample {
        let mut labels = self.label_base(alert_labels);
        labels.set(METRIC_NAME, ALERTS_FOR_STATE);
        Sample {
            labels,
            t: t_ms,
            f: active_at.div_euclid(1_000_000_000) as f64,
            h: None,
        }
    }

    /// The rule's labels (unexpanded), overridden by the alert's, with
    /// `alertname`.
    fn label_base(&self, alert_labels: &Labels) -> Labels {
        let mut labels = Labels::new(self.labels.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        for l in alert_labels.iter() {
            labels.set(&l.name, &l.value);
        }
        labels.set(ALERT_NAME, &self.name);
        labels
    }

    /// The labels every `ALERTS_FOR_STATE` series of the rule has (those
    /// rule labels that are not templates), as matchers for restoring.
    pub fn for_state_matchers(&self) -> Vec<ferrite_model::Matcher> {
        let mut labels = self.label_base(&Labels::empty());
        labels.set(METRIC_NAME, ALERTS_FOR_STATE);
        labels
            .iter()
            .filter(|l| !l.value.contains("{{"))
            .map(|l| ferrite_model::Matcher::equal(&l.name, &l.value))
            .collect()
    }

    /// Sends the instances due at `ts` to `notifier` and records that
    /// they were sent (Prometheus' `sendAlerts`).
    pub fn send_alerts(
        &self,
        ts: i64,
        resend_delay_ns: i64,
        interval_ns: i64,
        notifier: &dyn AlertNotifier,
    ) {
        let mut due = Vec::new();
        for a in self.lock().values_mut() {
            if a.needs_sending(ts, resend_delay_ns) {
                a.last_sent_at = Some(ts);
                let delta = interval_ns.max(resend_delay_ns);
                a.valid_until = Some(ts.saturating_add(delta.saturating_mul(4)));
                due.push(a.clone());
            }
        }
        if !due.is_empty() {
            due.sort_by(|a, b| a.labels.cmp(&b.labels));
            notifier.send(&self.query, due);
        }
    }
}

/// What happens to an instance missing from the result.
struct Keep {
    /// Still in the rule's instances.
    kept: bool,
    /// Still firing (`keep_firing_for`).
    still_active: bool,
}

/// The `query` template function over the rule's engine and storage.
struct TemplateQueries<'a> {
    engine: &'a Engine,
    db: &'a dyn Queryable,
}

impl QueryFunc for TemplateQueries<'_> {
    fn query(&self, expr: &str, t_ms: i64) -> Result<Vec<Sample>, String> {
        let parsed = crate::file::parse_expr(expr)?;
        query_vector(self.engine, self.db, expr, &parsed, t_ms)
    }
}

#[cfg(test)]
mod tests {
    use ferrite_promql::{Queryable as _, SelectHints};

    use super::*;
    use crate::file::parse_expr;
    use crate::restore::{restore_for_state, RestoreSettings};
    use crate::testing::{up, TestNotifier, TestStorage, NO_LABELS};

    const S: i64 = 1_000_000_000;
    const MIN: i64 = 60 * S;
    /// A slot time (Unix ns) well after the epoch.
    const T0: i64 = 1_700_000_000 * S;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn rule(
        expr: &str,
        hold: i64,
        keep: i64,
        labels: &[(&str, &str)],
        restored: bool,
    ) -> AlertingRule {
        AlertingRule::new(
            "Down".into(),
            parse_expr(expr).expect("parses"),
            hold,
            keep,
            map(labels),
            map(&[(
                "summary",
                "{{ $labels.instance }} of {{ $labels.job }} is {{ $value }}",
            )]),
            restored,
        )
    }

    fn ctx() -> AlertContext<'static> {
        AlertContext {
            external_labels: &NO_LABELS,
            external_url: "http://ferrite.test",
        }
    }

    /// `up` of instance `1` and `2` at `t_ns`, each with its value.
    fn scrape(storage: &TestStorage, t_ns: i64, values: &[(&str, f64)]) {
        let mut d = storage.data.lock().expect("lock");
        for (instance, v) in values {
            d.add(up("node", instance), t_ns / 1_000_000, *v);
        }
    }

    fn eval(r: &AlertingRule, s: &TestStorage, ts: i64) -> Vec<Sample> {
        let engine = Engine::default();
        let out = r.eval(&engine, s, &ctx(), ts, 0, 0).expect("evaluates");
        r.status
            .set_timing(std::time::SystemTime::now(), std::time::Duration::ZERO);
        out
    }

    fn states(r: &AlertingRule) -> Vec<(String, AlertState)> {
        let mut v: Vec<_> = r
            .lock()
            .values()
            .map(|a| (a.labels.get("instance").to_string(), a.state))
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }

    #[test]
    fn pending_then_firing_then_resolved_then_forgotten() {
        let s = TestStorage::default();
        let r = rule("up == 0", 2 * MIN, 0, &[("severity", "page")], true);
        assert_eq!(r.state(), AlertState::Unknown);
        scrape(&s, T0, &[("1", 0.0), ("2", 1.0)]);
        let out = eval(&r, &s, T0);
        assert_eq!(states(&r), [("1".into(), AlertState::Pending)]);
        assert_eq!(r.state(), AlertState::Pending);
        // ALERTS and ALERTS_FOR_STATE, at the slot, with the rule's and
        // the series' labels.
        let alerts = out
            .iter()
            .find(|s| s.labels.get("__name__") == ALERTS)
            .expect("ALERTS");
        assert_eq!(
            alerts.labels,
            Labels::new([
                ("__name__", "ALERTS"),
                ("alertname", "Down"),
                ("alertstate", "pending"),
                ("instance", "1"),
                ("job", "node"),
                ("severity", "page"),
            ])
        );
        assert_eq!((alerts.t, alerts.f), (T0 / 1_000_000, 1.0));
        let for_state = out
            .iter()
            .find(|s| s.labels.get("__name__") == ALERTS_FOR_STATE)
            .expect("ALERTS_FOR_STATE");
        assert_eq!(for_state.f, (T0 / S) as f64);
        let a = &r.active_alerts()[0];
        assert_eq!(a.annotations.get("summary"), "1 of node is 0");
        // Still pending one minute on; firing at two.
        scrape(&s, T0 + MIN, &[("1", 0.0)]);
        eval(&r, &s, T0 + MIN);
        assert_eq!(states(&r), [("1".into(), AlertState::Pending)]);
        scrape(&s, T0 + 2 * MIN, &[("1", 0.0)]);
        let out = eval(&r, &s, T0 + 2 * MIN);
        assert_eq!(states(&r), [("1".into(), AlertState::Firing)]);
        assert!(out.iter().any(|s| s.labels.get("alertstate") == "firing"));
        assert_eq!(r.active_alerts()[0].fired_at, Some(T0 + 2 * MIN));
        // Cleared: resolved, kept (not among the active alerts), no series.
        scrape(&s, T0 + 3 * MIN, &[("1", 1.0)]);
        let out = eval(&r, &s, T0 + 3 * MIN);
        assert!(out.is_empty());
        assert_eq!(states(&r), [("1".into(), AlertState::Inactive)]);
        assert!(r.active_alerts().is_empty());
        assert_eq!(r.state(), AlertState::Inactive);
        // Forgotten once resolved for more than 15 minutes.
        scrape(&s, T0 + 18 * MIN, &[("1", 1.0)]);
        eval(&r, &s, T0 + 18 * MIN);
        assert_eq!(r.instance_count(), 1);
        scrape(&s, T0 + 19 * MIN, &[("1", 1.0)]);
        eval(&r, &s, T0 + 19 * MIN);
        assert_eq!(r.instance_count(), 0);
    }

    #[test]
    fn a_pending_alert_that_clears_is_dropped() {
        let s = TestStorage::default();
        let r = rule("up == 0", 5 * MIN, 0, &[], true);
        scrape(&s, T0, &[("1", 0.0)]);
        eval(&r, &s, T0);
        scrape(&s, T0 + MIN, &[("1", 1.0)]);
        eval(&r, &s, T0 + MIN);
        assert_eq!(r.instance_count(), 0);
    }

    #[test]
    fn keep_firing_for_holds_a_firing_alert() {
        let s = TestStorage::default();
        let r = rule("up == 0", 0, 2 * MIN, &[], true);
        scrape(&s, T0, &[("1", 0.0)]);
        eval(&r, &s, T0);
        assert_eq!(states(&r), [("1".into(), AlertState::Firing)]);
        scrape(&s, T0 + MIN, &[("1", 1.0)]);
        let out = eval(&r, &s, T0 + MIN);
        assert_eq!(states(&r), [("1".into(), AlertState::Firing)]);
        assert_eq!(r.active_alerts()[0].keep_firing_since, Some(T0 + MIN));
        assert!(out.iter().any(|s| s.labels.get("alertstate") == "firing"));
        scrape(&s, T0 + 2 * MIN, &[("1", 1.0)]);
        eval(&r, &s, T0 + 2 * MIN);
        assert_eq!(states(&r), [("1".into(), AlertState::Firing)]);
        scrape(&s, T0 + 3 * MIN, &[("1", 1.0)]);
        eval(&r, &s, T0 + 3 * MIN);
        assert_eq!(states(&r), [("1".into(), AlertState::Inactive)]);
    }

    #[test]
    fn nothing_is_written_before_the_state_is_restored() {
        let s = TestStorage::default();
        let r = rule("up == 0", 0, 0, &[], false);
        scrape(&s, T0, &[("1", 0.0)]);
        assert!(eval(&r, &s, T0).is_empty());
        assert_eq!(states(&r), [("1".into(), AlertState::Firing)]);
        r.set_restored();
        assert_eq!(eval(&r, &s, T0 + MIN).len(), 2);
    }

    #[test]
    fn duplicates_and_limits_fail_the_rule() {
        let s = TestStorage::default();
        scrape(&s, T0, &[("1", 0.0), ("2", 0.0)]);
        let engine = Engine::default();
        // `instance` overwritten by the rule: both samples make one alert.
        let r = rule("up == 0", 0, 0, &[("instance", "x")], true);
        let err = r
            .eval(&engine, &s, &ctx(), T0, 0, 0)
            .expect_err("duplicate");
        assert_eq!(err, DUPLICATE_ALERT);
        let r = rule("up == 0", 0, 0, &[], true);
        let err = r.eval(&engine, &s, &ctx(), T0, 0, 1).expect_err("limit");
        assert_eq!(err, "exceeded limit of 1 with 2 alerts");
        assert_eq!(r.instance_count(), 0);
    }

    #[test]
    fn sends_firing_and_resolved_alerts_with_the_resend_delay() {
        let s = TestStorage::default();
        let n = TestNotifier::default();
        let r = rule("up == 0", MIN, 0, &[], true);
        let interval = MIN;
        let send = |ts| r.send_alerts(ts, MIN, interval, &n);
        scrape(&s, T0, &[("1", 0.0)]);
        eval(&r, &s, T0);
        send(T0);
        assert!(
            n.sent.lock().expect("lock").is_empty(),
            "pending is not sent"
        );
        scrape(&s, T0 + MIN, &[("1", 0.0)]);
        eval(&r, &s, T0 + MIN);
        send(T0 + MIN);
        {
            let sent = n.sent.lock().expect("lock");
            assert_eq!(sent.len(), 1);
            assert_eq!(sent[0].0, "up == 0");
            let a = &sent[0].1[0];
            assert_eq!(a.valid_until, Some(T0 + MIN + 4 * MIN));
            assert_eq!(a.fired_at, Some(T0 + MIN));
        }
        // Within the resend delay: nothing; after it: again.
        scrape(&s, T0 + 2 * MIN, &[("1", 0.0)]);
        eval(&r, &s, T0 + 2 * MIN);
        send(T0 + 2 * MIN);
        assert_eq!(n.sent.lock().expect("lock").len(), 1);
        scrape(&s, T0 + 3 * MIN, &[("1", 0.0)]);
        eval(&r, &s, T0 + 3 * MIN);
        send(T0 + 3 * MIN);
        assert_eq!(n.sent.lock().expect("lock").len(), 2);
        // Resolved: sent at once with its resolution time.
        scrape(&s, T0 + 3 * MIN + S, &[("1", 1.0)]);
        eval(&r, &s, T0 + 3 * MIN + S);
        send(T0 + 3 * MIN + S);
        let sent = n.sent.lock().expect("lock");
        assert_eq!(sent.len(), 3);
        assert_eq!(sent[2].1[0].resolved_at, Some(T0 + 3 * MIN + S));
        assert_eq!(sent[2].1[0].state, AlertState::Inactive);
    }

    #[test]
    fn restores_active_at_from_for_state_series() {
        let s = TestStorage::default();
        // Before a restart: pending since T0, `for` 30m, written until
        // T0 + 10m.
        let before = rule("up == 0", 30 * MIN, 0, &[("severity", "page")], true);
        for m in 0..=10 {
            scrape(&s, T0 + m * MIN, &[("1", 0.0)]);
            let out = eval(&before, &s, T0 + m * MIN);
            let mut d = s.data.lock().expect("lock");
            for smpl in out {
                d.add(smpl.labels, smpl.t, smpl.f);
            }
        }
        // After: the server was down 20 minutes.
        let now = T0 + 30 * MIN;
        let after = rule("up == 0", 30 * MIN, 0, &[("severity", "page")], false);
        scrape(&s, now, &[("1", 0.0)]);
        eval(&after, &s, now);
        assert_eq!(after.active_alerts()[0].active_at, now);
        let settings = RestoreSettings {
            outage_tolerance_ns: 60 * MIN,
            grace_period_ns: 10 * MIN,
        };
        restore_for_state(&after, &s, now, settings);
        assert!(after.restored());
        // 20 of 30 minutes left >= the grace period: activeAt moves on by
        // the 20 minutes down.
        assert_eq!(after.active_alerts()[0].active_at, T0 + 20 * MIN);
        // The matchers select the rule's series only.
        let q = s.querier(0, i64::MAX).expect("querier");
        let found = q
            .select(
                &after.for_state_matchers(),
                SelectHints {
                    start: 0,
                    end: i64::MAX,
                },
            )
            .expect("select");
        assert_eq!(found.len(), 1);
        let names: Vec<String> = after
            .for_state_matchers()
            .iter()
            .map(|m| format!("{}={}", m.name, m.value))
            .collect();
        assert_eq!(
            names,
            [
                "__name__=ALERTS_FOR_STATE",
                "alertname=Down",
                "severity=page"
            ]
        );
    }
}
