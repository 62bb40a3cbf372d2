//! A classic histogram as Prometheus' own metrics have them: cumulative
//! counts under fixed upper bounds, a sum and a count.

use std::sync::Mutex;

use super::{push_sum_and_count, with_number_label, Sample};

/// The bounds of Prometheus' duration histograms that come with a
/// summary (`*_histogram_seconds`): 10 ms, 100 ms, 1 s, 10 s.
pub const DURATION_BUCKETS: &[f64] = &[0.01, 0.1, 1.0, 10.0];

/// A histogram; shared between threads.
#[derive(Debug)]
pub struct Histogram {
    bounds: &'static [f64],
    state: Mutex<HistogramState>,
}

#[derive(Debug)]
struct HistogramState {
    /// Observations at or under each bound (not cumulative).
    buckets: Vec<u64>,
    sum: f64,
    count: u64,
}

impl Histogram {
    /// An empty histogram with these upper bounds (ascending; `+Inf` is
    /// implied).
    pub fn new(bounds: &'static [f64]) -> Self {
        debug_assert!(bounds.windows(2).all(|w| w[0] < w[1]));
        Histogram {
            bounds,
            state: Mutex::new(HistogramState {
                buckets: vec![0; bounds.len()],
                sum: 0.0,
                count: 0,
            }),
        }
    }

    /// Records one observation.
    pub fn observe(&self, value: f64) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(i) = self.bounds.iter().position(|b| value <= *b) {
            state.buckets[i] += 1;
        }
        state.sum += value;
        state.count += 1;
    }

    /// How many observations it has had (Go's client shows a labelled
    /// histogram only from its first).
    pub fn count(&self) -> u64 {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).count
    }

    /// Appends the histogram's samples as the text format lists them:
    /// `name_bucket{labels,le="b"}` (cumulative, `+Inf` last), `name_sum`,
    /// `name_count`.
    pub fn samples(&self, name: &str, labels: &[(&'static str, String)], out: &mut Vec<Sample>) {
        let state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let bucket = format!("{name}_bucket");
        let mut cumulative = 0;
        for (bound, n) in self.bounds.iter().zip(&state.buckets) {
            cumulative += n;
            out.push(Sample {
                name: bucket.clone(),
                labels: with_number_label(labels, "le", *bound),
                value: cumulative as f64,
            });
        }
        out.push(Sample {
            name: bucket,
            labels: with_number_label(labels, "le", f64::INFINITY),
            value: state.count as f64,
        });
        push_sum_and_count(name, labels, state.sum, state.count, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_cumulative_with_inf_last() {
        let h = Histogram::new(DURATION_BUCKETS);
        for v in [0.005, 0.01, 0.5, 20.0] {
            h.observe(v);
        }
        let mut out = Vec::new();
        h.samples("d", &[("job", "j".into())], &mut out);
        let rendered = super::super::rendered(&out);
        assert_eq!(
            rendered,
            [
                r#"d_bucket[("job", "j"), ("le", "0.01")] 2"#,
                r#"d_bucket[("job", "j"), ("le", "0.1")] 2"#,
                r#"d_bucket[("job", "j"), ("le", "1")] 3"#,
                r#"d_bucket[("job", "j"), ("le", "10")] 3"#,
                r#"d_bucket[("job", "j"), ("le", "+Inf")] 4"#,
                r#"d_sum[("job", "j")] 20.515"#,
                r#"d_count[("job", "j")] 4"#,
            ]
        );
        assert_eq!(h.count(), 4);
    }

    #[test]
    fn any_ascending_bounds_with_le_as_go_writes_it() {
        const SIZES: &[f64] = &[100.0, 1e6, 1e9];
        let h = Histogram::new(SIZES);
        assert_eq!(h.count(), 0);
        for v in [100.0, 100.5, 2e6, 1e9, 5e9] {
            h.observe(v);
        }
        let mut out = Vec::new();
        h.samples("s", &[], &mut out);
        assert_eq!(
            super::super::rendered(&out),
            [
                r#"s_bucket[("le", "100")] 1"#,
                r#"s_bucket[("le", "1e+06")] 2"#,
                r#"s_bucket[("le", "1e+09")] 4"#,
                r#"s_bucket[("le", "+Inf")] 5"#,
                r#"s_sum[] 6002000200.5"#,
                r#"s_count[] 5"#,
            ]
        );
        assert_eq!(h.count(), 5);
    }
}
