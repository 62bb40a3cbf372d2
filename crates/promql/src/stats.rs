//! What a query cost, in the terms of Prometheus' query statistics (the
//! query API's `stats` parameter and the query log): how long its parts
//! took and how many samples it loaded.
//!
//! The sample counts follow Prometheus' rules:
//! - `total_queryable`: every sample a step used, so a range selector's
//!   window counts whole at every step it is read at (an instant selector:
//!   one sample per series and step);
//! - `read`: every sample read, a window's samples counted only at the
//!   first step that reads them;
//! - `series_touched`: the series the selectors selected, summed over the
//!   selectors;
//! - a native histogram counts as many samples as its size in 16-byte units
//!   (Prometheus' `HPoint.size`), so a wide histogram weighs what it takes.
//!
//! `peak` is the most samples the query held at once as Ferrite counts
//! them against `--query.max-samples`. Ferrite evaluates in other steps
//! than Prometheus (a range function reads its window and answers without
//! keeping the window's samples), so its peak is its own and not
//! Prometheus' figure for the same query.
//!
//! A subquery's samples count once each, however many of the outer
//! query's steps use them: at an instant query (rules, most API calls) that
//! is Prometheus' count; at a range query whose windows overlap or leave
//! gaps, Prometheus spreads them over the steps and the totals differ.

use std::time::Duration;

use ferrite_model::FloatHistogram;

/// How long a query's parts took, as Prometheus names them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueryTimings {
    /// From taking a query slot to the answer (preparation, evaluation and
    /// sorting).
    pub eval_total: Duration,
    /// Building the result from the evaluated steps, sorted.
    pub result_sort: Duration,
    /// Working out the time span to read and opening the storage over it.
    pub query_preparation: Duration,
    /// Evaluating the expression.
    pub inner_eval: Duration,
    /// Waiting for a `--query.max-concurrency` slot.
    pub exec_queue: Duration,
    /// All of it: the wait for a slot and `eval_total`.
    pub exec_total: Duration,
}

/// How many samples a query loaded (see the module's doc for the rules).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SampleStats {
    /// Samples used, a window's counted at every step that uses it.
    pub total_queryable: i64,
    /// Samples read, each once.
    pub read: i64,
    /// Series selected, summed over the selectors.
    pub series_touched: i64,
    /// The most samples held at once.
    pub peak: i64,
}

impl SampleStats {
    /// `n` samples used and read at one step (an instant selector's).
    pub(crate) fn add_read(&mut self, n: i64) {
        self.total_queryable += n;
        self.read += n;
    }
}

/// A query's timings and sample counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueryStats {
    /// How long its parts took.
    pub timings: QueryTimings,
    /// How many samples it loaded.
    pub samples: SampleStats,
}

/// How many samples a native histogram counts as: its size in 16-byte
/// units, rounded (Prometheus counts the bytes of its Go struct, 168, and
/// 8 per span, bucket and custom bound).
pub fn histogram_weight(h: &FloatHistogram) -> i64 {
    let parts = h.positive_spans.len()
        + h.negative_spans.len()
        + h.positive_buckets.len()
        + h.negative_buckets.len()
        + h.custom_values.len();
    let bytes = 168 + 8 * parts as i64;
    (bytes + 8) / 16
}

/// The weight of `floats` float samples and `hists` histograms.
pub(crate) fn weight_of<'a>(
    floats: usize,
    hists: impl IntoIterator<Item = &'a FloatHistogram>,
) -> i64 {
    floats as i64 + hists.into_iter().map(histogram_weight).sum::<i64>()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrite_model::Span;

    #[test]
    fn a_histogram_weighs_its_size_in_sixteen_byte_units() {
        // An empty histogram: 168 bytes, (168 + 8) / 16 = 11.
        assert_eq!(histogram_weight(&FloatHistogram::default()), 11);
        let h = FloatHistogram {
            positive_spans: vec![Span {
                offset: 0,
                length: 4,
            }],
            positive_buckets: vec![1.0; 4],
            ..Default::default()
        };
        // 168 + 5 * 8 = 208; (208 + 8) / 16 = 13.
        assert_eq!(histogram_weight(&h), 13);
        assert_eq!(weight_of(3, [&h, &h]), 29);
    }

    #[test]
    fn a_read_counts_as_used_and_read() {
        let mut a = SampleStats {
            total_queryable: 5,
            read: 3,
            series_touched: 2,
            peak: 7,
        };
        a.add_read(2);
        assert_eq!(
            a,
            SampleStats {
                total_queryable: 7,
                read: 5,
                series_touched: 2,
                peak: 7
            }
        );
    }
}
