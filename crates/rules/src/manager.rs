//! All of a server's rule groups, brought in line with each (re)loaded
//! configuration as Prometheus' rule manager does (`Manager.Update`).
//!
//! Applying a configuration expands `rule_files` ([`crate::glob`]), reads
//! every file ([`crate::file`]) and builds its groups; if anything fails,
//! nothing changes (the error says why, as Prometheus keeps its previous
//! rule set). Then, by key (`<file>;<name>`):
//! - a group equal to the running one (same interval, limit, query offset
//!   and rules) keeps running untouched;
//! - a changed group replaces the running one after it stopped, taking
//!   over the series its rules wrote ([`Group::copy_state_from`]);
//! - a new group starts;
//! - a removed group stops, and two intervals later (time for a renamed
//!   group to write its series) its series are marked stale, at the time
//!   it stopped.
//!
//! Stopping the manager (the server shutting down) ends every group
//! without stale markers, as Prometheus does, and waits for them.
//!
//! The rules loaded by the first configuration (at start-up) restore
//! their alerts' `for` state after their group's second evaluation
//! ([`crate::restore`]); rules of later reloads start with it restored
//! (nothing to read back), as in Prometheus.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime};

use ferrite_config::Config;
use ferrite_model::goquote::quote as go_quote;
use ferrite_model::Labels;
use ferrite_promql::{Engine, EngineOptions, QueryOrigin, QueryTracker};
use tokio::sync::{watch, Mutex};
use tokio::task::JoinHandle;
use tracing::{error, info};

use crate::alerting::{AlertContext, AlertNotifier, AlertingRule};
use crate::file::{parse_expr, parse_file, RuleGroups};
use crate::glob::glob;
use crate::group::{group_key, write_stale_markers, EvalContext, Group};
use crate::metrics::{families, Family, GroupMetrics};
use crate::recording::RecordingRule;
use crate::restore::RestoreSettings;
use crate::rule::Rule;
use crate::storage::RuleStorage;

/// Why a configuration's rules were not loaded (the previous ones stay).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("error loading rules, previous rule set restored")]
pub struct LoadError {
    /// Every reason, in Prometheus' words (each names its file).
    pub errors: Vec<String>,
}

/// What evaluations read from the configuration in force.
#[derive(Debug, Clone)]
struct Settings {
    /// The global `rule_query_offset` (ms).
    default_query_offset_ms: i64,
    /// The engine's options, with the global evaluation interval as the
    /// step of subqueries without one (as Prometheus sets it).
    engine: EngineOptions,
    /// `global.external_labels`.
    external_labels: Labels,
}

/// How alerting rules send and restore alerts (the server's flags).
#[derive(Clone)]
pub struct AlertingOptions {
    /// Where alerts go.
    pub notifier: Arc<dyn AlertNotifier>,
    /// `--web.external-url` (as given, or Prometheus' default).
    pub external_url: String,
    /// `--rules.alert.resend-delay`.
    pub resend_delay: Duration,
    /// `--rules.alert.for-grace-period`.
    pub for_grace_period: Duration,
    /// `--rules.alert.for-outage-tolerance`.
    pub outage_tolerance: Duration,
}

impl AlertingOptions {
    /// Prometheus' defaults (resend delay 1m, grace period 10m, outage
    /// tolerance 1h) with `notifier` and `external_url`.
    pub fn new(notifier: Arc<dyn AlertNotifier>, external_url: String) -> Self {
        AlertingOptions {
            notifier,
            external_url,
            resend_delay: Duration::from_secs(60),
            for_grace_period: Duration::from_secs(600),
            outage_tolerance: Duration::from_secs(3600),
        }
    }
}

/// What a group's task needs besides its group.
struct Shared {
    storage: Arc<dyn RuleStorage>,
    settings: Arc<RwLock<Settings>>,
    alerting: AlertingOptions,
    /// The server's query slots, engine metrics and query log, which rule
    /// queries go through as the API's do.
    queries: Arc<QueryTracker>,
}

/// A group and the task evaluating it.
struct Running {
    group: Arc<Group>,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

/// The manager's groups and what is still finishing.
#[derive(Default)]
struct Inner {
    groups: BTreeMap<String, Running>,
    /// Stale marker writers of removed groups, waiting out their delay.
    pending: Vec<JoinHandle<()>>,
    /// Whether a configuration was applied (groups loaded later do not
    /// restore alert state).
    loaded_once: bool,
}

/// The server's rule groups; see the module documentation.
pub struct RuleManager {
    shared: Arc<Shared>,
    runtime: tokio::runtime::Handle,
    base_engine: EngineOptions,
    inner: Mutex<Inner>,
    /// Set when the manager stops: pending stale markers are given up.
    done: watch::Sender<bool>,
}

impl RuleManager {
    /// A manager with no groups, evaluating over `storage` with the
    /// server's engine options, its queries going through `queries`,
    /// running groups on `runtime`, sending alerts as `alerting` says.
    pub fn new(
        storage: Arc<dyn RuleStorage>,
        engine: EngineOptions,
        queries: Arc<QueryTracker>,
        runtime: tokio::runtime::Handle,
        alerting: AlertingOptions,
    ) -> Self {
        let settings = Arc::new(RwLock::new(Settings {
            default_query_offset_ms: 0,
            engine: engine.clone(),
            external_labels: Labels::empty(),
        }));
        RuleManager {
            shared: Arc::new(Shared {
                storage,
                settings,
                alerting,
                queries,
            }),
            runtime,
            base_engine: engine,
            inner: Mutex::new(Inner::default()),
            done: watch::channel(false).0,
        }
    }

    /// Brings the groups in line with `cfg`'s `rule_files`; on an error
    /// nothing changes.
    pub async fn apply_config(&self, cfg: &Config) -> Result<(), LoadError> {
        let cfg_owned = cfg.clone();
        let (existing, restore) = {
            let inner = self.inner.lock().await;
            let existing = inner
                .groups
                .iter()
                .map(|(k, r)| (k.clone(), r.group.metrics.clone()))
                .collect::<BTreeMap<_, _>>();
            (existing, !inner.loaded_once)
        };
        let loaded =
            tokio::task::spawn_blocking(move || load_groups(&cfg_owned, &existing, restore))
                .await
                .map_err(|e| LoadError {
                    errors: vec![e.to_string()],
                })?;
        let new_groups = match loaded {
            Ok(g) => g,
            Err(e) => {
                for reason in &e.errors {
                    error!(err = %reason, "loading groups failed");
                }
                return Err(e);
            }
        };
        {
            let mut s = self
                .shared
                .settings
                .write()
                .unwrap_or_else(|p| p.into_inner());
            s.default_query_offset_ms = cfg.global.rule_query_offset_ms;
            s.external_labels = cfg.global.external_labels.clone();
            s.engine = self.base_engine.clone();
            s.engine.default_subquery_step_ms = cfg.global.evaluation_interval_ms.max(1);
        }
        let mut inner = self.inner.lock().await;
        let mut old = std::mem::take(&mut inner.groups);
        let mut running = BTreeMap::new();
        for (key, group) in new_groups {
            match old.remove(&key) {
                Some(r) if r.group.equals(&group) => {
                    running.insert(key, r);
                }
                Some(r) => {
                    stop_and_wait(r.group.clone(), r.stop, r.task).await;
                    group.copy_state_from(&r.group);
                    running.insert(key, self.start(Arc::new(group)));
                }
                None => {
                    running.insert(key, self.start(Arc::new(group)));
                }
            }
        }
        for (key, r) in old {
            info!(group = %key, "stopping a removed rule group");
            let group = r.group.clone();
            stop_and_wait(r.group, r.stop, r.task).await;
            let stopped_at = now_ns();
            inner.pending.retain(|t| !t.is_finished());
            inner.pending.push(self.mark_stale_later(group, stopped_at));
        }
        inner.groups = running;
        inner.loaded_once = true;
        Ok(())
    }

    /// Starts a group's evaluation task.
    fn start(&self, group: Arc<Group>) -> Running {
        let (stop, stopped) = watch::channel(false);
        let task = self
            .runtime
            .spawn(run_group(group.clone(), self.shared.clone(), stopped));
        Running { group, stop, task }
    }

    /// Marks a removed group's series stale two intervals after it
    /// stopped, unless the manager stops first.
    fn mark_stale_later(&self, group: Arc<Group>, stopped_at_ns: i64) -> JoinHandle<()> {
        let mut done = self.done.subscribe();
        let storage = self.shared.storage.clone();
        let settings = self.shared.settings.clone();
        let delay = Duration::from_millis(2 * group.interval_ms.max(0) as u64);
        self.runtime.spawn(async move {
            tokio::select! {
                _ = done.wait_for(|d| *d) => return,
                _ = tokio::time::sleep(delay) => {}
            }
            let default_offset = settings
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .default_query_offset_ms;
            let offset_ms = group.query_offset(default_offset);
            let t = (stopped_at_ns - offset_ms.saturating_mul(1_000_000)).div_euclid(1_000_000);
            let series = group.take_all_series();
            if series.is_empty() {
                return;
            }
            let written =
                tokio::task::spawn_blocking(move || write_stale_markers(&*storage, &series, t))
                    .await;
            if let Ok(Err(e)) = written {
                tracing::warn!(group = %group.key(), error = %e, "Stale sample appending for previous configuration failed");
            }
        })
    }

    /// Ends every group (no stale markers) and waits for them.
    pub async fn stop(&self) {
        let _ = self.done.send(true);
        let mut inner = self.inner.lock().await;
        let groups = std::mem::take(&mut inner.groups);
        for r in groups.values() {
            r.group.stop();
            let _ = r.stop.send(true);
        }
        for (_, r) in groups {
            let _ = r.task.await;
        }
        for t in inner.pending.drain(..) {
            let _ = t.await;
        }
    }

    /// The running groups, by file then name (the order `/api/v1/rules`
    /// lists them in).
    pub async fn groups(&self) -> Vec<Arc<Group>> {
        let inner = self.inner.lock().await;
        let mut groups: Vec<Arc<Group>> = inner.groups.values().map(|r| r.group.clone()).collect();
        groups.sort_by(|a, b| a.file.cmp(&b.file).then_with(|| a.name.cmp(&b.name)));
        groups
    }

    /// The `prometheus_rule_*` metric families of the running groups.
    pub async fn metric_families(&self) -> Vec<Family> {
        let groups = self.groups().await;
        let keyed: Vec<(String, &GroupMetrics)> =
            groups.iter().map(|g| (g.key(), &*g.metrics)).collect();
        families(&keyed)
    }
}

/// Tells a group to stop and waits for its task.
async fn stop_and_wait(group: Arc<Group>, stop: watch::Sender<bool>, task: JoinHandle<()>) {
    group.stop();
    let _ = stop.send(true);
    let _ = task.await;
}

/// Reads every rule file of `cfg` into groups by key; metrics of groups
/// already running are carried over.
fn load_groups(
    cfg: &Config,
    existing: &BTreeMap<String, Arc<GroupMetrics>>,
    restore: bool,
) -> Result<BTreeMap<String, Group>, LoadError> {
    let fail = |errors: Vec<String>| LoadError { errors };
    let mut files = Vec::new();
    for pattern in &cfg.rule_files {
        let found = glob(pattern).map_err(|e| {
            fail(vec![format!(
                "error retrieving rule files for {pattern}: {e}"
            )])
        })?;
        files.extend(found);
    }
    let default_interval = cfg.global.evaluation_interval_ms;
    let mut out = BTreeMap::new();
    for file in files {
        let rgs: RuleGroups = parse_file(std::path::Path::new(&file)).map_err(fail)?;
        for g in rgs.groups {
            let interval_ms = if g.interval_ms != 0 {
                g.interval_ms
            } else {
                default_interval
            };
            if interval_ms <= 0 {
                return Err(fail(vec![format!(
                    "{file}: group {}: the evaluation interval must be greater than zero",
                    go_quote(&g.name)
                )]));
            }
            let mut rules = Vec::with_capacity(g.rules.len());
            for r in &g.rules {
                let expr = parse_expr(&r.expr).map_err(|e| fail(vec![format!("{file}: {e}")]))?;
                let mut labels = g.labels.clone();
                labels.extend(r.labels.iter().map(|(k, v)| (k.clone(), v.clone())));
                rules.push(if r.alert.is_empty() {
                    Rule::Recording(RecordingRule::new(r.record.clone(), expr, labels))
                } else {
                    Rule::Alerting(AlertingRule::new(
                        r.alert.clone(),
                        expr,
                        r.for_ms.saturating_mul(1_000_000),
                        r.keep_firing_for_ms.saturating_mul(1_000_000),
                        labels,
                        r.annotations.clone(),
                        !restore,
                    ))
                });
            }
            let key = group_key(&file, &g.name);
            let metrics = existing.get(&key).cloned().unwrap_or_default();
            let group = Group::new(
                g.name,
                file.clone(),
                interval_ms,
                g.limit,
                g.query_offset_ms,
                rules,
                metrics,
            )
            .with_restore(restore);
            out.insert(key, group);
        }
    }
    Ok(out)
}

/// Checks that `cfg`'s rule files load, without running anything: what
/// Prometheus checks at start-up (`rules.ParseFiles`). The error names
/// the file, the pattern and every reason.
pub fn check_rule_files(cfg: &Config) -> Result<(), LoadError> {
    load_groups(cfg, &BTreeMap::new(), false).map(drop)
}

/// The wall clock in Unix nanoseconds.
fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

/// A group's evaluation loop (Prometheus' `Group.run`): the first slot
/// after now, then every interval; slots that passed while an evaluation
/// ran are counted as missed and skipped. A group that restores alert
/// state does so after its second evaluation.
async fn run_group(group: Arc<Group>, shared: Arc<Shared>, mut stopped: watch::Receiver<bool>) {
    let interval = group.interval_ns();
    let mut ts = group.eval_timestamp(now_ns()) + interval;
    let mut wake_at = ts;
    let mut evaluations = 0u64;
    loop {
        let wait = Duration::from_nanos((wake_at - now_ns()).max(0) as u64);
        tokio::select! {
            _ = stopped.wait_for(|s| *s) => return,
            _ = tokio::time::sleep(wait) => {}
        }
        if group.is_stopping() {
            return;
        }
        if wake_at != ts {
            // A tick: the slot after the last one, or later ones if
            // evaluating (or this wake-up) took longer than an interval.
            let missed = (now_ns() - ts) / interval - 1;
            if missed > 0 {
                GroupMetrics::add(&group.metrics.iterations_missed, missed as u64);
                GroupMetrics::add(&group.metrics.iterations, missed as u64);
            }
            ts += (missed.max(0) + 1) * interval;
        }
        evaluations += 1;
        let restore_now = evaluations >= 2 && group.should_restore();
        let (g, sh) = (group.clone(), shared.clone());
        let evaluated = tokio::task::spawn_blocking(move || {
            evaluate(&g, &sh, ts, restore_now);
        })
        .await;
        if let Err(e) = evaluated {
            error!(group = %group.key(), error = %e, "rule group evaluation panicked");
        }
        wake_at = ts + interval;
    }
}

/// One iteration of `group` at slot `ts` with the settings in force,
/// then, if `restore`, its alerts' state restored.
fn evaluate(group: &Group, shared: &Shared, ts: i64, restore: bool) {
    let (engine, default_offset, external_labels) = {
        let s = shared.settings.read().unwrap_or_else(|p| p.into_inner());
        (
            Engine::new(s.engine.clone()).tracked(
                shared.queries.clone(),
                QueryOrigin::RuleGroup {
                    file: group.file.clone(),
                    name: group.name.clone(),
                },
            ),
            s.default_query_offset_ms,
            s.external_labels.clone(),
        )
    };
    let alerting = &shared.alerting;
    let nanos = |d: Duration| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX);
    let ctx = EvalContext {
        storage: &*shared.storage,
        engine: &engine,
        default_query_offset_ms: default_offset,
        alerts: AlertContext {
            external_labels: &external_labels,
            external_url: &alerting.external_url,
        },
        notifier: &*alerting.notifier,
        resend_delay_ns: nanos(alerting.resend_delay),
        restore: RestoreSettings {
            outage_tolerance_ns: nanos(alerting.outage_tolerance),
            grace_period_ns: nanos(alerting.for_grace_period),
        },
    };
    group.run_iteration(ts, &ctx);
    if restore {
        group.restore_for_state(now_ns(), &ctx);
    }
}
