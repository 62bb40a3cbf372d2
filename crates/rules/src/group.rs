//! A rule group: its rules evaluated in order at slots of its interval,
//! their results appended, and the stale markers Prometheus writes.
//!
//! - **When.** A group's evaluations fall at `base + k·interval`, where
//!   the offset inside the interval comes from a hash of the group's name
//!   and file ([`Group::eval_timestamp`], Prometheus'
//!   `Group.EvalTimestamp`): groups spread over the interval, and the same
//!   group keeps its phase across restarts and on another server with the
//!   same file.
//! - **At what time.** Each rule is evaluated at the slot's time minus the
//!   query offset (the group's `query_offset`, else the global
//!   `rule_query_offset`); its samples carry that time.
//! - **Staleness.** A series a rule produced at its last evaluation and no
//!   longer produces gets a stale marker at the new evaluation's time, in
//!   the same commit. Series of rules that disappeared with a reload
//!   (handed over by [`Group::copy_state_from`]) are marked stale after
//!   the next evaluation; a removed group's series are marked stale by the
//!   manager two intervals after it stopped.
//! - **Failures.** A failed query, a result over the group's `limit` or
//!   with duplicate label sets marks the rule unhealthy and writes nothing
//!   (its series are not marked stale); a refused sample marks it
//!   unhealthy but the rest are written.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use ferrite_model::{Labels, STALE_NAN};
use ferrite_promql::Engine;
use tracing::{debug, warn};

use crate::alerting::{AlertContext, AlertNotifier};
use crate::metrics::GroupMetrics;
use crate::restore::{restore_for_state, RestoreSettings};
use crate::rule::Rule;
use crate::storage::{FailureKind, RuleStorage};

/// A group of recording and alerting rules.
#[derive(Debug)]
pub struct Group {
    /// Its name.
    pub name: String,
    /// The file it came from (as the pattern expanded to it).
    pub file: String,
    /// How often it is evaluated (ms).
    pub interval_ms: i64,
    /// The most series a rule may produce (0: no limit).
    pub limit: i64,
    /// Its own `query_offset` (ms), if set.
    pub query_offset_ms: Option<i64>,
    /// Its rules, in evaluation order.
    pub rules: Vec<Rule>,
    state: Mutex<GroupState>,
    /// Its metrics (kept across reloads of a group of the same key).
    pub metrics: Arc<GroupMetrics>,
    /// Set when the group is told to stop: evaluation ends before its
    /// next rule.
    stopping: AtomicBool,
    /// Whether its alerting rules' state is to be restored after its
    /// second evaluation (a group loaded at start-up).
    should_restore: AtomicBool,
}

/// What evaluations leave for the next ones and for the API.
#[derive(Debug, Default)]
struct GroupState {
    /// Per rule, the series its last successful evaluation wrote.
    previous: Vec<HashSet<Labels>>,
    /// Series of rules no longer configured, to mark stale.
    stale_series: Vec<Labels>,
    /// How long the last evaluation took.
    evaluation_time: Duration,
    /// When the last evaluation started (wall clock).
    last_evaluation: Option<SystemTime>,
}

/// A group's state as `/api/v1/rules` shows it.
#[derive(Debug, Clone)]
pub struct GroupTiming {
    /// How long the last evaluation took.
    pub evaluation_time: Duration,
    /// When the last evaluation started.
    pub last_evaluation: Option<SystemTime>,
}

/// What an evaluation needs from the manager.
pub struct EvalContext<'a> {
    /// The storage rules read and write.
    pub storage: &'a dyn RuleStorage,
    /// The PromQL engine (the server's limits, the subquery step of the
    /// global evaluation interval).
    pub engine: &'a Engine,
    /// The global `rule_query_offset` (ms).
    pub default_query_offset_ms: i64,
    /// What alert templates read besides the storage.
    pub alerts: AlertContext<'a>,
    /// Where alerts are sent.
    pub notifier: &'a dyn AlertNotifier,
    /// `--rules.alert.resend-delay` (ns).
    pub resend_delay_ns: i64,
    /// How alert state is restored after a start.
    pub restore: RestoreSettings,
}

const NANOS_PER_MS: i64 = 1_000_000;

impl Group {
    /// A group that has not run yet.
    pub fn new(
        name: String,
        file: String,
        interval_ms: i64,
        limit: i64,
        query_offset_ms: Option<i64>,
        rules: Vec<Rule>,
        metrics: Arc<GroupMetrics>,
    ) -> Self {
        GroupMetrics::set(&metrics.rules, rules.len() as f64);
        GroupMetrics::set(&metrics.interval_seconds, interval_ms as f64 / 1000.0);
        let previous = vec![HashSet::new(); rules.len()];
        Group {
            name,
            file,
            interval_ms,
            limit,
            query_offset_ms,
            rules,
            state: Mutex::new(GroupState {
                previous,
                ..GroupState::default()
            }),
            metrics,
            stopping: AtomicBool::new(false),
            should_restore: AtomicBool::new(false),
        }
    }

    /// The group, restoring its alerts' state after its second
    /// evaluation when `restore` (it was loaded at start-up).
    pub fn with_restore(self, restore: bool) -> Self {
        self.should_restore.store(restore, Ordering::Relaxed);
        self
    }

    /// The group's key: `<file>;<name>` (names are unique per file only).
    pub fn key(&self) -> String {
        group_key(&self.file, &self.name)
    }

    fn lock(&self) -> MutexGuard<'_, GroupState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Prometheus' `Group.hash`: the label set `{file, name}` hashed.
    fn hash(&self) -> u64 {
        Labels::new([("name", self.name.as_str()), ("file", self.file.as_str())]).prometheus_hash()
    }

    /// The latest evaluation slot at or before `now_ns` (Unix
    /// nanoseconds), as Prometheus' `Group.EvalTimestamp` places it.
    pub fn eval_timestamp(&self, now_ns: i64) -> i64 {
        let interval = self.interval_ns();
        let offset = (self.hash() % interval as u64) as i64;
        let adjusted = now_ns - offset;
        let base = adjusted - adjusted % interval;
        base + offset
    }

    /// The interval in nanoseconds (at least one).
    pub fn interval_ns(&self) -> i64 {
        self.interval_ms.saturating_mul(NANOS_PER_MS).max(1)
    }

    /// The query offset in force (ms).
    pub fn query_offset(&self, default_ms: i64) -> i64 {
        self.query_offset_ms.unwrap_or(default_ms)
    }

    /// Whether `other` is the same group (name, file, interval, limit,
    /// query offset, and the same rules in the same order), which a reload
    /// leaves running as it is.
    pub fn equals(&self, other: &Group) -> bool {
        self.name == other.name
            && self.file == other.file
            && self.interval_ms == other.interval_ms
            && self.limit == other.limit
            && self.query_offset_ms == other.query_offset_ms
            && self.rules.len() == other.rules.len()
            && self
                .rules
                .iter()
                .zip(&other.rules)
                .all(|(a, b)| a.same_as(b))
    }

    /// Takes over the staleness state of the group this one replaces:
    /// rules matched by name and labels (duplicates first to first) keep
    /// their series; the series of rules left unmatched are marked stale
    /// after this group's first evaluation.
    pub fn copy_state_from(&self, from: &Group) {
        let old = from.lock();
        let mut new = self.lock();
        new.evaluation_time = old.evaluation_time;
        new.last_evaluation = old.last_evaluation;
        let mut unmatched: Vec<Option<String>> = from
            .rules
            .iter()
            .map(|r| Some(r.name_and_labels()))
            .collect();
        for (i, rule) in self.rules.iter().enumerate() {
            let key = rule.name_and_labels();
            if let Some(fi) = unmatched.iter().position(|k| k.as_deref() == Some(&key)) {
                unmatched[fi] = None;
                if let (Some(dst), Some(src)) = (new.previous.get_mut(i), old.previous.get(fi)) {
                    dst.clone_from(src);
                }
                if let (Rule::Alerting(dst), Some(Rule::Alerting(src))) = (rule, from.rules.get(fi))
                {
                    dst.copy_alerts_from(src);
                }
            }
        }
        new.stale_series = old.stale_series.clone();
        for (fi, k) in unmatched.iter().enumerate() {
            if k.is_some() {
                if let Some(series) = old.previous.get(fi) {
                    new.stale_series.extend(series.iter().cloned());
                }
            }
        }
    }

    /// Hands every series the group wrote over to be marked stale (the
    /// group was removed).
    pub fn take_all_series(&self) -> Vec<Labels> {
        let mut s = self.lock();
        let mut out = std::mem::take(&mut s.stale_series);
        for set in &mut s.previous {
            out.extend(set.drain());
        }
        out
    }

    /// Tells a running evaluation to stop before its next rule.
    pub fn stop(&self) {
        self.stopping.store(true, Ordering::Relaxed);
    }

    /// Whether the group was told to stop.
    pub fn is_stopping(&self) -> bool {
        self.stopping.load(Ordering::Relaxed)
    }

    /// The last evaluation's duration and start, for the API.
    pub fn timing(&self) -> GroupTiming {
        let s = self.lock();
        GroupTiming {
            evaluation_time: s.evaluation_time,
            last_evaluation: s.last_evaluation,
        }
    }

    /// One scheduled evaluation at slot `ts_ns`, with its bookkeeping
    /// (Prometheus' `DefaultEvalIterationFunc`).
    pub fn run_iteration(&self, ts_ns: i64, ctx: &EvalContext<'_>) {
        GroupMetrics::add(&self.metrics.iterations, 1);
        let started_at = SystemTime::now();
        let started = Instant::now();
        self.eval(ts_ns, ctx);
        let took = started.elapsed();
        crate::metrics::GROUP_DURATION.observe(&[], took.as_secs_f64());
        let rule_sum: Duration = self
            .rules
            .iter()
            .map(|r| r.status().get().evaluation_duration)
            .sum();
        GroupMetrics::set(
            &self.metrics.last_rule_duration_sum_seconds,
            rule_sum.as_secs_f64(),
        );
        GroupMetrics::set(&self.metrics.last_duration_seconds, took.as_secs_f64());
        let unix = started_at
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        GroupMetrics::set(&self.metrics.last_evaluation_timestamp_seconds, unix);
        let mut s = self.lock();
        s.evaluation_time = took;
        s.last_evaluation = Some(started_at);
    }

    /// Evaluates every rule at slot `ts_ns` (Prometheus' `Group.Eval`),
    /// then writes the stale markers of series handed over by a reload.
    pub fn eval(&self, ts_ns: i64, ctx: &EvalContext<'_>) {
        let offset_ms = self.query_offset(ctx.default_query_offset_ms);
        // Prometheus' `timestamp.FromTime(ts.Add(-offset))`.
        let t = (ts_ns - offset_ms.saturating_mul(NANOS_PER_MS)).div_euclid(NANOS_PER_MS);
        let mut samples = 0usize;
        for (i, rule) in self.rules.iter().enumerate() {
            if self.is_stopping() {
                return;
            }
            let started_at = SystemTime::now();
            let started = Instant::now();
            samples += self.eval_rule(i, rule, ts_ns, offset_ms, ctx);
            let took = started.elapsed();
            crate::metrics::EVALUATION_DURATION.observe(&[], took.as_secs_f64());
            rule.status().set_timing(started_at, took);
        }
        GroupMetrics::set(&self.metrics.last_evaluation_samples, samples as f64);
        self.cleanup_stale_series(t, ctx);
    }

    /// Evaluates one rule at slot `ts_ns` (its query `offset_ms` before),
    /// sends an alerting rule's due alerts, and appends the result and
    /// stale markers; returns how many samples it produced.
    fn eval_rule(
        &self,
        i: usize,
        rule: &Rule,
        ts_ns: i64,
        offset_ms: i64,
        ctx: &EvalContext<'_>,
    ) -> usize {
        GroupMetrics::add(&self.metrics.evaluations, 1);
        let db = ctx.storage.queryable();
        let offset_ns = offset_ms.saturating_mul(NANOS_PER_MS);
        // Prometheus' `timestamp.FromTime(ts.Add(-offset))`.
        let t = (ts_ns - offset_ns).div_euclid(NANOS_PER_MS);
        let evaluated = match rule {
            Rule::Recording(r) => r.eval(ctx.engine, db, t, self.limit),
            Rule::Alerting(r) => r.eval(ctx.engine, db, &ctx.alerts, ts_ns, offset_ns, self.limit),
        };
        let vector = match evaluated {
            Ok(v) => v,
            Err(e) => {
                warn!(file = %self.file, group = %self.name, rule = %rule.name(), index = i, error = %e, "Evaluating rule failed");
                rule.status().set_outcome(Some(e));
                GroupMetrics::add(&self.metrics.evaluation_failures, 1);
                return 0;
            }
        };
        rule.status().set_outcome(None);
        if let Rule::Alerting(r) = rule {
            r.send_alerts(ts_ns, ctx.resend_delay_ns, self.interval_ns(), ctx.notifier);
        }
        let mut app = ctx.storage.appender();
        let mut returned = HashSet::with_capacity(vector.len());
        let (mut out_of_order, mut too_old, mut duplicates) = (0, 0, 0);
        for s in &vector {
            let appended = match &s.h {
                Some(h) => app.append_histogram(&s.labels, s.t, h),
                None => app.append(&s.labels, s.t, s.f),
            };
            match appended {
                Ok(()) => {
                    returned.insert(s.labels.clone());
                }
                Err(e) => {
                    rule.status().set_outcome(Some(e.message.clone()));
                    match e.kind {
                        FailureKind::OutOfOrder => out_of_order += 1,
                        FailureKind::TooOld => too_old += 1,
                        FailureKind::Duplicate => duplicates += 1,
                        FailureKind::Other => {
                            warn!(group = %self.name, rule = %rule.name(), error = %e, sample = %s.labels, "Rule evaluation result discarded")
                        }
                    }
                }
            }
        }
        if out_of_order > 0 {
            warn!(group = %self.name, rule = %rule.name(), num_dropped = out_of_order, "Error on ingesting out-of-order result from rule evaluation");
        }
        if too_old > 0 {
            warn!(group = %self.name, rule = %rule.name(), num_dropped = too_old, "Error on ingesting too old result from rule evaluation");
        }
        if duplicates > 0 {
            warn!(group = %self.name, rule = %rule.name(), num_dropped = duplicates, "Error on ingesting results from rule evaluation with different value but same timestamp");
        }
        let gone: Vec<Labels> = {
            let state = self.lock();
            state
                .previous
                .get(i)
                .map(|prev| prev.difference(&returned).cloned().collect())
                .unwrap_or_default()
        };
        for lset in &gone {
            if let Err(e) = app.append(lset, t, STALE_NAN) {
                if e.kind == FailureKind::Other {
                    warn!(sample = %lset, error = %e, "Adding stale sample failed");
                }
            }
        }
        match app.commit() {
            Ok(()) => {
                if let Some(prev) = self.lock().previous.get_mut(i) {
                    *prev = returned;
                }
            }
            Err(e) => {
                warn!(group = %self.name, rule = %rule.name(), error = %e, "Rule sample appending failed");
                rule.status().set_outcome(Some(e));
                GroupMetrics::add(&self.metrics.evaluation_failures, 1);
            }
        }
        vector.len()
    }

    /// Whether the group still has to restore alert state (it was loaded
    /// at start-up and has not done so yet).
    pub fn should_restore(&self) -> bool {
        self.should_restore.load(Ordering::Relaxed)
    }

    /// Restores the `for` state of every alerting rule at `now_ns`
    /// ([`crate::restore`]); afterwards the rules write their series.
    pub fn restore_for_state(&self, now_ns: i64, ctx: &EvalContext<'_>) {
        let started = Instant::now();
        for rule in &self.rules {
            if let Rule::Alerting(r) = rule {
                restore_for_state(r, ctx.storage.queryable(), now_ns, ctx.restore);
            }
        }
        self.metrics
            .set_restore_duration(started.elapsed().as_secs_f64());
        self.should_restore.store(false, Ordering::Relaxed);
    }

    /// Writes stale markers at `t` (ms) for the series handed over by a
    /// reload; kept for the next evaluation if the commit fails.
    pub fn cleanup_stale_series(&self, t: i64, ctx: &EvalContext<'_>) {
        let stale = std::mem::take(&mut self.lock().stale_series);
        if stale.is_empty() {
            return;
        }
        if let Err(e) = write_stale_markers(ctx.storage, &stale, t) {
            warn!(group = %self.name, error = %e, "Stale sample appending for previous configuration failed");
            self.lock().stale_series.extend(stale);
        } else {
            debug!(group = %self.name, series = stale.len(), "marked series of a previous configuration stale");
        }
    }
}

/// Appends a stale marker at `t` (ms) to each series and commits; a
/// refusal of one marker (the series written since by another rule) is
/// not an error.
pub fn write_stale_markers(
    storage: &dyn RuleStorage,
    series: &[Labels],
    t: i64,
) -> Result<(), String> {
    let mut app = storage.appender();
    for s in series {
        if let Err(e) = app.append(s, t, STALE_NAN) {
            if e.kind == FailureKind::Other {
                warn!(sample = %s, error = %e, "Adding stale sample for previous configuration failed");
            }
        }
    }
    app.commit()
}

/// A group's key: `<file>;<name>`.
pub fn group_key(file: &str, name: &str) -> String {
    format!("{file};{name}")
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use ferrite_model::is_stale_nan;

    use super::*;
    use crate::file::parse_expr;
    use crate::recording::RecordingRule;
    use crate::testing::{ctx, up, TestStorage};

    fn rule(name: &str, expr: &str, labels: &[(&str, &str)]) -> RecordingRule {
        let labels: BTreeMap<String, String> = labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        RecordingRule::new(name.into(), parse_expr(expr).expect("parses"), labels)
    }

    fn group(rules: Vec<RecordingRule>, limit: i64, offset: Option<i64>) -> Group {
        Group::new(
            "g".into(),
            "rules.yml".into(),
            60_000,
            limit,
            offset,
            rules.into_iter().map(Rule::Recording).collect(),
            Arc::default(),
        )
    }

    const MS: i64 = 1_000_000;

    #[test]
    fn slots_are_aligned_by_a_hash_of_name_and_file() {
        let g = group(Vec::new(), 0, None);
        let interval = g.interval_ns();
        let now = 1_700_000_123_456 * MS;
        let slot = g.eval_timestamp(now);
        assert!(slot <= now && now - slot < interval);
        // The same phase for any time, and a slot maps to itself.
        assert_eq!(g.eval_timestamp(slot), slot);
        assert_eq!(g.eval_timestamp(now + 7 * interval) - slot, 7 * interval);
        let phase = slot.rem_euclid(interval);
        let expected = (Labels::new([("name", "g"), ("file", "rules.yml")]).prometheus_hash()
            % interval as u64) as i64;
        assert_eq!(phase, expected);
    }

    #[test]
    fn records_results_and_marks_vanished_series_stale() {
        let storage = TestStorage::default();
        {
            let mut d = storage.data.lock().expect("lock");
            d.add(up("a", "1"), 1_000, 1.0);
            d.add(up("a", "2"), 1_000, 1.0);
            d.add(up("b", "1"), 1_000, 0.0);
        }
        let engine = Engine::default();
        let g = group(
            vec![rule(
                "job:up:sum",
                "sum by (job) (up)",
                &[("source", "rules")],
            )],
            0,
            None,
        );
        g.eval(60_000 * MS, &ctx(&storage, &engine));
        let state = g.rules[0].status().get();
        assert_eq!(state.health.as_str(), "ok");
        let appended = storage.appended.lock().expect("lock").clone();
        let name = |job: &str| {
            Labels::new([
                ("__name__", "job:up:sum"),
                ("job", job),
                ("source", "rules"),
            ])
        };
        assert_eq!(
            appended,
            vec![(name("a"), 60_000, 2.0), (name("b"), 60_000, 0.0)]
        );

        // Job b's instances go away (stale themselves): its sum is marked
        // stale at the next evaluation.
        storage
            .data
            .lock()
            .expect("lock")
            .add(up("b", "1"), 61_000, ferrite_model::STALE_NAN);
        g.eval(120_000 * MS, &ctx(&storage, &engine));
        let appended = storage.appended.lock().expect("lock").clone();
        assert_eq!(appended.len(), 4, "{appended:?}");
        assert_eq!(appended[2], (name("a"), 120_000, 2.0));
        assert_eq!(appended[3].0, name("b"));
        assert_eq!(appended[3].1, 120_000);
        assert!(is_stale_nan(appended[3].2));

        // A removed group hands over its series.
        assert_eq!(g.take_all_series(), vec![name("a")]);
    }

    #[test]
    fn query_offset_moves_the_evaluation_time() {
        let storage = TestStorage::default();
        storage
            .data
            .lock()
            .expect("lock")
            .add(up("a", "1"), 1_000, 1.0);
        let engine = Engine::default();
        let g = group(vec![rule("r", "up", &[])], 0, Some(30_000));
        g.eval(60_000 * MS + 123, &ctx(&storage, &engine));
        let appended = storage.appended.lock().expect("lock").clone();
        assert_eq!(appended.len(), 1);
        assert_eq!(appended[0].1, 30_000);
        // The global offset applies when the group has none.
        let g = group(vec![rule("s", "up", &[])], 0, None);
        let mut c = ctx(&storage, &engine);
        c.default_query_offset_ms = 10_000;
        g.eval(60_000 * MS, &c);
        assert_eq!(storage.appended.lock().expect("lock")[1].1, 50_000);
    }

    #[test]
    fn limits_and_collisions_fail_the_rule_and_write_nothing() {
        let storage = TestStorage::default();
        {
            let mut d = storage.data.lock().expect("lock");
            d.add(up("a", "1"), 1_000, 1.0);
            d.add(up("b", "1"), 1_000, 1.0);
        }
        let engine = Engine::default();
        let g = group(
            vec![
                rule("over", "up", &[]),
                rule("same", "up", &[("job", "x"), ("instance", "y")]),
                rule("scalar", "time()", &[]),
                rule("bad", "up[5m]", &[]),
            ],
            1,
            None,
        );
        g.eval(60_000 * MS, &ctx(&storage, &engine));
        let errors: Vec<Option<String>> = g
            .rules
            .iter()
            .map(|r| r.status().get().last_error)
            .collect();
        assert_eq!(
            errors,
            [
                Some("exceeded limit of 1 with 2 series".to_string()),
                Some(crate::recording::DUPLICATE_LABELSET.to_string()),
                None,
                Some("rule result is not a vector or scalar".to_string()),
            ]
        );
        // Only the scalar's sample, named, without other labels.
        let appended = storage.appended.lock().expect("lock").clone();
        assert_eq!(
            appended,
            [(Labels::new([("__name__", "scalar")]), 60_000, 60.0)]
        );
        assert_eq!(g.metrics.evaluation_failures.load(Ordering::Relaxed), 3);
    }

    #[test]
    fn a_changed_group_takes_over_matching_rules_and_drops_the_others() {
        let storage = TestStorage::default();
        storage
            .data
            .lock()
            .expect("lock")
            .add(up("a", "1"), 1_000, 1.0);
        let engine = Engine::default();
        let old = group(
            vec![rule("kept", "up", &[]), rule("gone", "up", &[])],
            0,
            None,
        );
        old.eval(60_000 * MS, &ctx(&storage, &engine));
        let new = group(
            vec![rule("kept", "up * 2", &[]), rule("new", "up", &[])],
            0,
            None,
        );
        assert!(!new.equals(&old));
        new.copy_state_from(&old);
        new.eval(120_000 * MS, &ctx(&storage, &engine));
        let appended = storage.appended.lock().expect("lock").clone();
        let at_120: Vec<(String, bool)> = appended
            .iter()
            .filter(|(_, t, _)| *t == 120_000)
            .map(|(l, _, v)| (l.metric_name().to_string(), is_stale_nan(*v)))
            .collect();
        // "kept" goes on (no stale marker), "new" starts, "gone" is
        // marked stale after the evaluation.
        assert_eq!(
            at_120,
            [
                ("kept".to_string(), false),
                ("new".to_string(), false),
                ("gone".to_string(), true)
            ]
        );
        let same = group(
            vec![rule("kept", "up * 2", &[]), rule("new", "up", &[])],
            0,
            None,
        );
        assert!(same.equals(&new));
    }
}
