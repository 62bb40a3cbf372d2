//! A query's statistics as Prometheus writes them: the `stats` object of a
//! query API response (asked for with the `stats` parameter) and of a
//! query log line.
//!
//! The object is `{"timings":{...},"samples":{...}}` with Prometheus' keys
//! in its order; timings are seconds. The API and the log spell small
//! numbers differently, as Prometheus' two JSON encoders do: the API
//! `3.91e-07`, the log `3.91e-7`.

use ferrite_promql::QueryStats;

use crate::query::{put_int, write_json_float};

/// How numbers below 1e-6 are spelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Exponent {
    /// At least two exponent digits (`1e-07`), as the query API.
    TwoDigits,
    /// As few as needed (`1e-7`), as Go's `encoding/json` and the log.
    Shortest,
}

/// The `stats` values Prometheus accepts without a warning.
const ACCEPTED: [&str; 3] = ["", "true", "all"];

/// The warning Prometheus adds for any other `stats` value (which still
/// turns the statistics on).
pub(crate) fn param_warning(value: &str) -> Option<String> {
    (!ACCEPTED.contains(&value)).then(|| {
        format!(
            "value {value:?} for parameter \"stats\" is deprecated and will be rejected in the next major release, use \"true\" or \"all\""
        )
    })
}

/// Appends the `stats` object.
pub(crate) fn put_stats(out: &mut Vec<u8>, stats: &QueryStats, exponent: Exponent) {
    let t = &stats.timings;
    let timings = [
        ("evalTotalTime", t.eval_total),
        ("resultSortTime", t.result_sort),
        ("queryPreparationTime", t.query_preparation),
        ("innerEvalTime", t.inner_eval),
        ("execQueueTime", t.exec_queue),
        ("execTotalTime", t.exec_total),
    ];
    out.extend_from_slice(b"{\"timings\":{");
    for (i, (key, d)) in timings.iter().enumerate() {
        put_key(out, i, key);
        put_float(out, d.as_secs_f64(), exponent);
    }
    let s = &stats.samples;
    let samples = [
        ("totalQueryableSamples", s.total_queryable),
        ("samplesRead", s.read),
        ("seriesTouched", s.series_touched),
        ("peakSamples", s.peak),
    ];
    out.extend_from_slice(b"},\"samples\":{");
    for (i, (key, n)) in samples.iter().enumerate() {
        put_key(out, i, key);
        put_int(out, *n);
    }
    out.extend_from_slice(b"}}");
}

/// `"key":`, after a comma unless first.
fn put_key(out: &mut Vec<u8>, i: usize, key: &str) {
    if i > 0 {
        out.push(b',');
    }
    out.push(b'"');
    out.extend_from_slice(key.as_bytes());
    out.extend_from_slice(b"\":");
}

/// A float as a JSON number, its exponent spelled as `exponent` says.
fn put_float(out: &mut Vec<u8>, v: f64, exponent: Exponent) {
    let from = out.len();
    write_json_float(out, v);
    if exponent == Exponent::Shortest {
        // `e-07` -> `e-7`, as Go's encoding/json trims it.
        let n = out.len() - from;
        if n >= 4 && out[out.len() - 4] == b'e' && out[out.len() - 3] == b'-' {
            let last = out.len() - 2;
            if out[last] == b'0' {
                out.remove(last);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn stats() -> QueryStats {
        let mut s = QueryStats::default();
        s.timings.eval_total = Duration::from_nanos(39_008);
        s.timings.result_sort = Duration::from_nanos(391);
        s.timings.exec_total = Duration::from_secs(2);
        s.samples.total_queryable = 3;
        s.samples.read = 2;
        s.samples.series_touched = 1;
        s.samples.peak = 4;
        s
    }

    #[test]
    fn the_object_has_prometheus_keys_and_numbers() {
        let mut out = Vec::new();
        put_stats(&mut out, &stats(), Exponent::TwoDigits);
        assert_eq!(
            String::from_utf8(out).expect("utf-8"),
            "{\"timings\":{\"evalTotalTime\":0.000039008,\"resultSortTime\":3.91e-07,\
             \"queryPreparationTime\":0,\"innerEvalTime\":0,\"execQueueTime\":0,\"execTotalTime\":2},\
             \"samples\":{\"totalQueryableSamples\":3,\"samplesRead\":2,\"seriesTouched\":1,\"peakSamples\":4}}"
        );
    }

    #[test]
    fn the_log_trims_the_exponent() {
        let mut out = Vec::new();
        put_stats(&mut out, &stats(), Exponent::Shortest);
        let text = String::from_utf8(out).expect("utf-8");
        assert!(text.contains("\"resultSortTime\":3.91e-7,"), "{text}");
        assert!(text.contains("\"evalTotalTime\":0.000039008,"), "{text}");
    }

    #[test]
    fn only_other_values_of_the_parameter_warn() {
        for ok in ["", "true", "all"] {
            assert_eq!(param_warning(ok), None);
        }
        assert_eq!(
            param_warning("xyz").as_deref(),
            Some("value \"xyz\" for parameter \"stats\" is deprecated and will be rejected in the next major release, use \"true\" or \"all\"")
        );
    }
}
