//! A summary as Prometheus' Go client keeps one: a count and a sum of
//! every observation since start, and quantiles over a sliding window of
//! the last ten minutes or so.
//!
//! The window is five sketches ([`QuantileSketch`]) that take every
//! observation and are cleared in turn, one every two minutes; quantiles
//! are read from the one cleared longest ago, so they cover the last
//! eight to ten minutes (Go's `DefMaxAge` and `DefAgeBuckets`).
//! Observations wait in a small buffer and go into the sketches sorted,
//! a batch at a time.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::quantile::{Objective, QuantileSketch};
use super::{push_sum_and_count, with_number_label, Sample};

/// How far back quantiles look at most.
pub const MAX_AGE: Duration = Duration::from_secs(600);
/// How many sketches share the window.
const AGE_BUCKETS: u32 = 5;
/// How long each sketch lives before it is cleared.
const SKETCH_LIFETIME: Duration = Duration::from_secs(600 / AGE_BUCKETS as u64);
/// Observations buffered before they go into the sketches.
const PENDING: usize = 500;

/// An objective: `quantile` within `error`.
const fn objective(quantile: f64, error: f64) -> Objective {
    Objective { quantile, error }
}

/// The objectives most of Prometheus' summaries have: 0.5 within 0.05,
/// 0.9 within 0.01, 0.99 within 0.001.
pub const THREE_QUANTILES: &[Objective] = &[
    objective(0.5, 0.05),
    objective(0.9, 0.01),
    objective(0.99, 0.001),
];

/// The objectives of Prometheus' scrape interval and rule group
/// summaries: 0.01, 0.05, 0.5, 0.9 and 0.99.
pub const FIVE_QUANTILES: &[Objective] = &[
    objective(0.01, 0.001),
    objective(0.05, 0.005),
    objective(0.5, 0.05),
    objective(0.9, 0.01),
    objective(0.99, 0.001),
];

/// A summary; see the module documentation. Shared between threads.
#[derive(Debug)]
pub struct Summary {
    objectives: &'static [Objective],
    state: Mutex<SummaryState>,
}

#[derive(Debug)]
struct SummaryState {
    sum: f64,
    count: u64,
    /// Observations not yet in the sketches.
    pending: Vec<f64>,
    /// The window (empty when there are no objectives).
    sketches: Vec<QuantileSketch>,
    /// The sketch quantiles are read from: the one cleared longest ago.
    oldest: usize,
    /// When the oldest sketch is cleared and the next one becomes oldest.
    oldest_expires: Instant,
}

/// What a summary holds at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct SummarySnapshot {
    /// Each objective's quantile and its value (NaN with no observation
    /// in the window).
    pub quantiles: Vec<(f64, f64)>,
    /// The sum of every observation.
    pub sum: f64,
    /// How many observations there were.
    pub count: u64,
}

impl Summary {
    /// An empty summary with these objectives (none: only a count and a
    /// sum, as Prometheus' summaries without objectives).
    pub fn new(objectives: &'static [Objective]) -> Self {
        Self::new_at(objectives, Instant::now())
    }

    /// [`Summary::new`] with its window starting at `now`.
    pub fn new_at(objectives: &'static [Objective], now: Instant) -> Self {
        let sketches = if objectives.is_empty() {
            Vec::new()
        } else {
            (0..AGE_BUCKETS)
                .map(|_| QuantileSketch::new(objectives))
                .collect()
        };
        Summary {
            objectives,
            state: Mutex::new(SummaryState {
                sum: 0.0,
                count: 0,
                pending: Vec::new(),
                sketches,
                oldest: 0,
                oldest_expires: now + SKETCH_LIFETIME,
            }),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, SummaryState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records one observation.
    pub fn observe(&self, value: f64) {
        self.observe_at(value, Instant::now());
    }

    /// Records one observation made at `now`.
    pub fn observe_at(&self, value: f64, now: Instant) {
        let mut state = self.state();
        state.sum += value;
        state.count += 1;
        if state.sketches.is_empty() || value.is_nan() {
            return;
        }
        state.expire(now);
        state.pending.push(value);
        if state.pending.len() >= PENDING {
            state.flush();
        }
    }

    /// The quantiles, sum and count as of now.
    pub fn snapshot(&self) -> SummarySnapshot {
        self.snapshot_at(Instant::now())
    }

    /// The quantiles, sum and count as of `now`.
    pub fn snapshot_at(&self, now: Instant) -> SummarySnapshot {
        let mut state = self.state();
        let quantiles = if state.sketches.is_empty() {
            Vec::new()
        } else {
            state.expire(now);
            state.flush();
            let oldest = &state.sketches[state.oldest];
            self.objectives
                .iter()
                .map(|o| (o.quantile, oldest.query(o.quantile)))
                .collect()
        };
        SummarySnapshot {
            quantiles,
            sum: state.sum,
            count: state.count,
        }
    }

    /// Appends the summary's samples, as the text format lists them:
    /// `name{labels,quantile="q"}` for each objective, then `name_sum` and
    /// `name_count`.
    pub fn samples(&self, name: &str, labels: &[(&'static str, String)], out: &mut Vec<Sample>) {
        let snapshot = self.snapshot();
        for (q, value) in snapshot.quantiles {
            out.push(Sample {
                name: name.to_string(),
                labels: with_number_label(labels, "quantile", q),
                value,
            });
        }
        push_sum_and_count(name, labels, snapshot.sum, snapshot.count, out);
    }
}

impl SummaryState {
    /// Puts the pending observations into every sketch.
    fn flush(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        self.pending.sort_by(f64::total_cmp);
        for sketch in &mut self.sketches {
            sketch.insert_sorted(&self.pending);
        }
        self.pending.clear();
    }

    /// Clears the sketches whose time is up (after putting in what was
    /// observed before), oldest first.
    fn expire(&mut self, now: Instant) {
        if now < self.oldest_expires {
            return;
        }
        self.flush();
        if now >= self.oldest_expires + MAX_AGE {
            // Idle for longer than the window: everything in it is old.
            for sketch in &mut self.sketches {
                sketch.reset();
            }
            self.oldest_expires = now + SKETCH_LIFETIME;
            return;
        }
        while now >= self.oldest_expires {
            self.sketches[self.oldest].reset();
            self.oldest = (self.oldest + 1) % self.sketches.len();
            self.oldest_expires += SKETCH_LIFETIME;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn count_and_sum_are_kept_forever_quantiles_for_the_window() {
        let start = Instant::now();
        let s = Summary::new_at(THREE_QUANTILES, start);
        for i in 1..=100 {
            s.observe_at(f64::from(i), start);
        }
        let snap = s.snapshot_at(start + Duration::from_secs(1));
        assert_eq!(snap.count, 100);
        assert_eq!(snap.sum, 5050.0);
        let median = snap.quantiles[0].1;
        assert!((45.0..=55.0).contains(&median), "{median}");
        assert_eq!(snap.quantiles[2], (0.99, 100.0));
        // Nine minutes on, the early observations are still in the oldest
        // sketch; eleven minutes on, they are gone.
        let snap = s.snapshot_at(start + Duration::from_secs(9 * 60));
        assert!(!snap.quantiles[0].1.is_nan());
        let snap = s.snapshot_at(start + Duration::from_secs(11 * 60));
        assert!(snap.quantiles[0].1.is_nan());
        assert_eq!(snap.count, 100);
    }

    #[test]
    fn the_window_slides_in_steps() {
        let start = Instant::now();
        let s = Summary::new_at(THREE_QUANTILES, start);
        // One observation a minute for an hour, value = its minute.
        for minute in 0..60u64 {
            s.observe_at(minute as f64, start + Duration::from_secs(minute * 60));
        }
        let now = start + Duration::from_secs(59 * 60 + 30);
        let snap = s.snapshot_at(now);
        // The window covers the last 8 to 10 minutes: its median is near
        // minute 55 and its minimum no older than minute 49.
        let median = snap.quantiles[0].1;
        assert!((53.0..=56.0).contains(&median), "{median}");
        assert_eq!(snap.count, 60);
    }

    #[test]
    fn no_objectives_no_quantiles() {
        let s = Summary::new(&[]);
        s.observe(2.5);
        s.observe(0.5);
        let mut out = Vec::new();
        s.samples("gc", &[], &mut out);
        let names: Vec<_> = out.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["gc_sum", "gc_count"]);
        assert_eq!(out[0].value, 3.0);
        assert_eq!(out[1].value, 2.0);
    }

    #[test]
    fn samples_name_quantiles_after_the_labels() {
        let s = Summary::new(FIVE_QUANTILES);
        s.observe(15.0);
        let mut out = Vec::new();
        s.samples("x_seconds", &[("interval", "15s".into())], &mut out);
        let rendered = super::super::rendered(&out);
        assert_eq!(
            rendered,
            [
                r#"x_seconds[("interval", "15s"), ("quantile", "0.01")] 15"#,
                r#"x_seconds[("interval", "15s"), ("quantile", "0.05")] 15"#,
                r#"x_seconds[("interval", "15s"), ("quantile", "0.5")] 15"#,
                r#"x_seconds[("interval", "15s"), ("quantile", "0.9")] 15"#,
                r#"x_seconds[("interval", "15s"), ("quantile", "0.99")] 15"#,
                r#"x_seconds_sum[("interval", "15s")] 15"#,
                r#"x_seconds_count[("interval", "15s")] 1"#,
            ]
        );
    }
}
