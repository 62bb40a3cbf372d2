//! Restoring alerts' `for` state after a start, as Prometheus'
//! `Group.RestoreForState` does.
//!
//! The rules loaded at start-up begin with no instances and write no
//! series. Their group evaluates twice (so that recording rules and
//! scrapes have caught up), then each alerting rule reads back the
//! `ALERTS_FOR_STATE` series it wrote within `--rules.alert.for-outage-tolerance`
//! before now. For every instance pending or firing now whose series is
//! found, the newest sample (unless a stale marker: the alert had ended)
//! gives the `activeAt` it had and the time the server went down:
//! - an alert that had been active for `for` keeps its `activeAt`, so it
//!   fires at once;
//! - one whose `for` is shorter than `--rules.alert.for-grace-period`
//!   starts its `for` again;
//! - one with less than the grace period left fires the grace period
//!   after now;
//! - otherwise its `activeAt` moves on by the time the server was down.
//!
//! The rule is then marked restored and writes its series from its next
//! evaluation on.

use std::collections::HashMap;

use ferrite_model::{is_stale_nan, Labels, METRIC_NAME};
use ferrite_promql::{Queryable, SelectHints};
use tracing::{debug, error};

use crate::alerting::AlertingRule;

const NANOS_PER_SECOND: i64 = 1_000_000_000;
const NANOS_PER_MS: i64 = 1_000_000;

/// How far back, and with what grace, state is restored.
#[derive(Debug, Clone, Copy)]
pub struct RestoreSettings {
    /// `--rules.alert.for-outage-tolerance` (ns).
    pub outage_tolerance_ns: i64,
    /// `--rules.alert.for-grace-period` (ns).
    pub grace_period_ns: i64,
}

/// Restores the `activeAt` of `rule`'s instances from the storage at
/// `now` (Unix ns), then marks the rule restored, whatever the outcome.
pub fn restore_for_state(
    rule: &AlertingRule,
    db: &dyn Queryable,
    now: i64,
    settings: RestoreSettings,
) {
    let newest = match newest_for_state_samples(rule, db, now, settings) {
        Ok(n) => n,
        Err(e) => {
            error!(alertname = %rule.name, stage = "Select", err = %e, "Failed to restore 'for' state");
            rule.set_restored();
            return;
        }
    };
    if newest.is_empty() {
        debug!(alertname = %rule.name, "No series found to restore the 'for' state of the alert rule");
        rule.set_restored();
        return;
    }
    rule.for_each_alert(|a| {
        let Some(&(t_ms, v)) = newest.get(&a.labels) else {
            return;
        };
        if is_stale_nan(v) {
            return;
        }
        if let Some(active_at) = restored_active_at(rule.hold_ns, t_ms, v, now, settings) {
            debug!(alertname = %rule.name, labels = %a.labels, active_at, "'for' state restored");
            a.active_at = active_at;
        }
    });
    rule.set_restored();
}

/// The newest float sample of each of the rule's `ALERTS_FOR_STATE`
/// series in the tolerance window, by the series' labels without
/// `__name__` (an alert's labels).
fn newest_for_state_samples(
    rule: &AlertingRule,
    db: &dyn Queryable,
    now: i64,
    settings: RestoreSettings,
) -> Result<HashMap<Labels, (i64, f64)>, String> {
    let maxt = now.div_euclid(NANOS_PER_MS);
    let mint = now
        .saturating_sub(settings.outage_tolerance_ns)
        .div_euclid(NANOS_PER_MS);
    let querier = db.querier(mint, maxt).map_err(|e| e.to_string())?;
    let series = querier
        .select(
            &rule.for_state_matchers(),
            SelectHints {
                start: mint,
                end: maxt,
            },
        )
        .map_err(|e| e.to_string())?;
    let mut out = HashMap::with_capacity(series.len());
    for s in series {
        let Some(&newest) = s.samples.last() else {
            continue;
        };
        let mut labels = s.labels;
        labels.remove(METRIC_NAME);
        out.insert(labels, newest);
    }
    Ok(out)
}

/// The `activeAt` (Unix ns) an instance gets back from its last
/// `ALERTS_FOR_STATE` sample (`value` = `activeAt` in seconds, written at
/// `t_ms`, when the server was last up), or `None` to start its `for`
/// again.
fn restored_active_at(
    hold_ns: i64,
    t_ms: i64,
    value: f64,
    now: i64,
    settings: RestoreSettings,
) -> Option<i64> {
    // Both times at whole seconds, as Prometheus reads them.
    let down_at = t_ms.div_euclid(1000).saturating_mul(NANOS_PER_SECOND);
    let active_at = (value as i64).saturating_mul(NANOS_PER_SECOND);
    let spent_pending = down_at.saturating_sub(active_at);
    let remaining = hold_ns.saturating_sub(spent_pending);
    if remaining <= 0 {
        // It was firing: it fires again at the next evaluation.
        Some(active_at)
    } else if hold_ns < settings.grace_period_ns {
        None
    } else if remaining < settings.grace_period_ns {
        Some(
            now.saturating_add(settings.grace_period_ns)
                .saturating_sub(hold_ns),
        )
    } else {
        Some(active_at.saturating_add(now.saturating_sub(down_at)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = NANOS_PER_SECOND;
    const MIN: i64 = 60 * S;

    fn settings() -> RestoreSettings {
        RestoreSettings {
            outage_tolerance_ns: 60 * MIN,
            grace_period_ns: 10 * MIN,
        }
    }

    #[test]
    fn firing_alerts_keep_their_active_at() {
        // Active at 1000 s, for 5m, down at 1400 s: it had fired.
        let got = restored_active_at(5 * MIN, 1_400_000, 1000.0, 2000 * S, settings());
        assert_eq!(got, Some(1000 * S));
    }

    #[test]
    fn short_for_restarts() {
        let got = restored_active_at(2 * MIN, 1_050_000, 1000.0, 2000 * S, settings());
        assert_eq!(got, None);
    }

    #[test]
    fn little_left_fires_after_the_grace_period() {
        // for 30m, pending 25m when it went down: 5m left < 10m grace.
        let now = 5000 * S;
        let got = restored_active_at(30 * MIN, (1000 + 25 * 60) * 1000, 1000.0, now, settings());
        assert_eq!(got, Some(now + 10 * MIN - 30 * MIN));
    }

    #[test]
    fn otherwise_active_at_moves_on_by_the_downtime() {
        // for 60m, pending 10m, down for 1000 s.
        let down_at = 1000 + 600;
        let now = (down_at + 1000) * S;
        let got = restored_active_at(60 * MIN, down_at * 1000 + 999, 1000.0, now, settings());
        assert_eq!(got, Some((1000 + 1000) * S));
    }
}
