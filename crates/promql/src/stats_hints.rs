//! Counter-reset hints as Prometheus reads histograms for their count and
//! sum only.
//!
//! Below `histogram_count`, `histogram_sum` and `histogram_avg` (and
//! `timestamp`, `absent`), with nothing on the way that needs buckets (a
//! subquery, `histogram_quantile` and the other bucket functions,
//! `changes`, `count_values`, `==`/`!=`, the trim operators), Prometheus
//! reads a selector's histograms through its `HistogramStatsIterator`. That
//! iterator works out a hint the storage left "unknown" from the histogram
//! read just before: "reset" or "not a reset". Aggregations and
//! `sum_over_time` then see those hints, and "reset" meeting "not a reset"
//! is a conflict they warn about.
//!
//! The iterator reads a selector from a lookback (an instant selector) or
//! a range (a range selector) before the evaluation time; the histogram
//! read first has no "before".

use std::collections::HashSet;
use std::sync::Arc;

use ferrite_model::CounterResetHint;

use crate::engine::Hist;
use crate::parser::{AggregateOp, BinaryOp, Expr, VectorSelector};

/// The selectors of a query that Prometheus reads for count and sum only,
/// by address.
pub(crate) fn stats_selectors(root: &Expr) -> HashSet<usize> {
    let mut out = HashSet::new();
    // (node, below a stats function, below something that needs buckets)
    let mut pending = vec![(root, false, false)];
    while let Some((e, stats, blocked)) = pending.pop() {
        let (stats, blocked) = match e {
            Expr::Call(c) => match c.func.name {
                "histogram_count" | "histogram_sum" | "histogram_avg" | "timestamp"
                | "start_timestamp" | "absent" => (true, blocked),
                "histogram_quantile"
                | "histogram_quantiles"
                | "histogram_fraction"
                | "histogram_stddev"
                | "histogram_stdvar"
                | "changes" => (stats, true),
                _ => (stats, blocked),
            },
            Expr::Subquery(_) => (stats, true),
            Expr::Aggregate(a) if a.op == AggregateOp::CountValues => (stats, true),
            Expr::Binary(b) if b.op.is_trim() || matches!(b.op, BinaryOp::Eq | BinaryOp::Ne) => {
                (stats, true)
            }
            Expr::VectorSelector(vs) => {
                mark(vs, stats && !blocked, &mut out);
                continue;
            }
            Expr::MatrixSelector(ms) => {
                mark(&ms.vs, stats && !blocked, &mut out);
                continue;
            }
            _ => (stats, blocked),
        };
        pending.extend(crate::parsed::children(e).map(|c| (c, stats, blocked)));
    }
    out
}

fn mark(vs: &VectorSelector, stats: bool, out: &mut HashSet<usize>) {
    if stats {
        out.insert(vs as *const VectorSelector as usize);
    }
}

/// The address a selector is known by in [`stats_selectors`].
pub(crate) fn key(vs: &VectorSelector) -> usize {
    vs as *const VectorSelector as usize
}

/// `h` with the hint the stats iterator gives it, read after `prev` (if
/// the iterator read `prev`): an "unknown" hint becomes "reset" or "not a
/// reset". `None` when the hint stays.
pub(crate) fn derived(h: &Hist, prev: Option<&Hist>) -> Option<Hist> {
    let prev = prev?;
    if h.counter_reset_hint != CounterResetHint::Unknown || h.is_stale() {
        return None;
    }
    let hint = if h.detect_reset(prev) {
        CounterResetHint::CounterReset
    } else {
        CounterResetHint::NotCounterReset
    };
    let mut out = ferrite_model::FloatHistogram::clone(h);
    out.counter_reset_hint = hint;
    Some(Arc::new(out))
}

/// A range window's histograms with derived hints, into `out`: the
/// window is `all[from..to]`, and the iterator read from `read_from` on
/// (the sample before the window counts if it is not older).
pub(crate) fn derive_window(
    all: &[(i64, Hist)],
    from: usize,
    to: usize,
    read_from: i64,
    out: &mut Vec<(i64, Hist)>,
) {
    out.clear();
    for i in from..to {
        let (t, h) = &all[i];
        let prev = i
            .checked_sub(1)
            .map(|j| &all[j])
            .filter(|(pt, _)| *pt >= read_from)
            .map(|(_, p)| p);
        out.push((*t, derived(h, prev).unwrap_or_else(|| h.clone())));
    }
}
