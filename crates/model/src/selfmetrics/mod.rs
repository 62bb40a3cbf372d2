//! A server's own metrics as `/metrics` shows them: families of samples
//! with Prometheus' names, types and help texts. The components that keep
//! such metrics (discovery, the notifier) hand them to the server in this
//! form; the server writes them in the text format.
//!
//! The kinds that need more than a number live here too, so every
//! component keeps them the same way: [`summary::Summary`] (quantiles over
//! a sliding window, as Prometheus' Go client keeps them),
//! [`histogram::Histogram`] (classic buckets), and [`TimingVec`], a
//! duration kept as both, per label values, as Prometheus keeps its scrape
//! and rule timings.

pub mod histogram;
pub mod quantile;
pub mod summary;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use crate::gofloat::format_g;
use histogram::{Histogram, DURATION_BUCKETS};
use quantile::Objective;
use summary::Summary;

/// One sample of a family.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// The sample's name: the family's, or with `_bucket`, `_sum`,
    /// `_count`.
    pub name: String,
    /// Its labels, in order.
    pub labels: Vec<(&'static str, String)>,
    /// Its value.
    pub value: f64,
}

/// A metric family as `/metrics` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Family {
    /// Its name.
    pub name: &'static str,
    /// `counter`, `gauge`, `histogram` or `summary`.
    pub kind: &'static str,
    /// Prometheus' help text.
    pub help: &'static str,
    /// Its samples.
    pub samples: Vec<Sample>,
}

/// `labels` and then one more, `name`, whose value is a number as Go's
/// text format writes it (`quantile`, `le`): `%g`, so a bound of a million
/// is `1e+06`.
pub(crate) fn with_number_label(
    labels: &[(&'static str, String)],
    name: &'static str,
    value: f64,
) -> Vec<(&'static str, String)> {
    let mut out = Vec::with_capacity(labels.len() + 1);
    out.extend_from_slice(labels);
    out.push((name, format_g(value)));
    out
}

/// A family of one unlabelled summary (`name`, `name_sum`, `name_count`).
pub fn summary_family(name: &'static str, help: &'static str, summary: &Summary) -> Family {
    let mut samples = Vec::new();
    summary.samples(name, &[], &mut samples);
    Desc { name, help }.family("summary", samples)
}

/// Appends `name_sum` and `name_count`, the last two samples of a summary
/// or a histogram.
pub(crate) fn push_sum_and_count(
    name: &str,
    labels: &[(&'static str, String)],
    sum: f64,
    count: u64,
    out: &mut Vec<Sample>,
) {
    out.push(Sample {
        name: format!("{name}_sum"),
        labels: labels.to_vec(),
        value: sum,
    });
    out.push(Sample {
        name: format!("{name}_count"),
        labels: labels.to_vec(),
        value: count as f64,
    });
}

/// A family's name and Prometheus' help text for it.
#[derive(Debug, Clone, Copy)]
pub struct Desc {
    /// The family's name.
    pub name: &'static str,
    /// Its help text.
    pub help: &'static str,
}

impl Desc {
    /// The family of this name and help, of `kind`, with `samples`.
    fn family(self, kind: &'static str, samples: Vec<Sample>) -> Family {
        Family {
            name: self.name,
            kind,
            help: self.help,
            samples,
        }
    }
}

/// Samples as the tests compare them: `name[labels] value`.
#[cfg(test)]
pub(crate) fn rendered(samples: &[Sample]) -> Vec<String> {
    samples
        .iter()
        .map(|s| format!("{}{:?} {}", s.name, s.labels, s.value))
        .collect()
}

/// What a [`TimingVec`] is called and how it is kept: a summary, a
/// histogram or both, with the same labels.
#[derive(Debug, Clone, Copy)]
pub struct TimingDef {
    /// The summary (`prometheus_target_interval_length_seconds`), if
    /// Prometheus keeps one.
    pub summary: Option<Desc>,
    /// The histogram, if Prometheus keeps one
    /// (`prometheus_target_interval_length_histogram_seconds`); its
    /// buckets are [`DURATION_BUCKETS`].
    pub histogram: Option<Desc>,
    /// The label names, in ascending order (none: one unlabelled series).
    pub labels: &'static [&'static str],
    /// The summary's objectives.
    pub objectives: &'static [Objective],
}

/// One series' timing: a summary, a histogram or both, taking the same
/// observations.
#[derive(Debug)]
pub struct Timing {
    summary: Option<Summary>,
    histogram: Option<Histogram>,
}

impl Timing {
    fn new(def: &TimingDef) -> Self {
        Timing {
            summary: def.summary.map(|_| Summary::new(def.objectives)),
            histogram: def.histogram.map(|_| Histogram::new(DURATION_BUCKETS)),
        }
    }

    /// Records a duration in seconds.
    pub fn observe(&self, seconds: f64) {
        if let Some(s) = &self.summary {
            s.observe(seconds);
        }
        if let Some(h) = &self.histogram {
            h.observe(seconds);
        }
    }
}

/// A duration kept per label values (Go's `SummaryVec` and
/// `HistogramVec` side by side); see [`TimingDef`]. A series appears with
/// its first observation (or [`TimingVec::with`]) and goes with
/// [`TimingVec::remove`]; an unlabelled one is always there.
#[derive(Debug)]
pub struct TimingVec {
    def: TimingDef,
    series: Mutex<BTreeMap<Vec<String>, Arc<Timing>>>,
}

impl TimingVec {
    /// No series yet.
    pub const fn new(def: TimingDef) -> Self {
        TimingVec {
            def,
            series: Mutex::new(BTreeMap::new()),
        }
    }

    fn series(&self) -> std::sync::MutexGuard<'_, BTreeMap<Vec<String>, Arc<Timing>>> {
        self.series.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The series with these label values (one per label name), made if
    /// new. Keep it to observe without looking it up again.
    pub fn with(&self, values: &[&str]) -> Arc<Timing> {
        debug_assert_eq!(values.len(), self.def.labels.len());
        let key: Vec<String> = values.iter().map(|v| v.to_string()).collect();
        self.series()
            .entry(key)
            .or_insert_with(|| Arc::new(Timing::new(&self.def)))
            .clone()
    }

    /// Records a duration for the series with these label values.
    pub fn observe(&self, values: &[&str], seconds: f64) {
        self.with(values).observe(seconds);
    }

    /// Removes the series with these label values.
    pub fn remove(&self, values: &[&str]) {
        let key: Vec<String> = values.iter().map(|v| v.to_string()).collect();
        self.series().remove(&key);
    }

    /// The histogram family and the summary family (those kept), in name
    /// order, series in label value order.
    pub fn families(&self) -> Vec<Family> {
        if self.def.labels.is_empty() {
            self.with(&[]);
        }
        let series: Vec<(Vec<String>, Arc<Timing>)> = self
            .series()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let labels_of = |values: &[String]| -> Vec<(&'static str, String)> {
            self.def
                .labels
                .iter()
                .copied()
                .zip(values.iter().cloned())
                .collect()
        };
        let mut out = Vec::with_capacity(2);
        if let Some(desc) = self.def.histogram {
            let mut samples = Vec::new();
            for (values, timing) in &series {
                if let Some(h) = &timing.histogram {
                    h.samples(desc.name, &labels_of(values), &mut samples);
                }
            }
            out.push(desc.family("histogram", samples));
        }
        if let Some(desc) = self.def.summary {
            let mut samples = Vec::new();
            for (values, timing) in &series {
                if let Some(s) = &timing.summary {
                    s.samples(desc.name, &labels_of(values), &mut samples);
                }
            }
            out.push(desc.family("summary", samples));
        }
        out.sort_by_key(|f| f.name);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const INTERVAL: TimingDef = TimingDef {
        summary: Some(Desc {
            name: "x_interval_seconds",
            help: "Intervals.",
        }),
        histogram: Some(Desc {
            name: "x_interval_histogram_seconds",
            help: "Intervals.",
        }),
        labels: &["interval"],
        objectives: summary::FIVE_QUANTILES,
    };

    #[test]
    fn timing_vec_keeps_series_per_label_values() {
        let v = TimingVec::new(INTERVAL);
        assert!(v.families().iter().all(|f| f.samples.is_empty()));
        v.observe(&["15s"], 15.0);
        v.observe(&["1m"], 60.0);
        v.observe(&["15s"], 15.5);
        let fams = v.families();
        let names: Vec<_> = fams.iter().map(|f| (f.name, f.kind)).collect();
        assert_eq!(
            names,
            [
                ("x_interval_histogram_seconds", "histogram"),
                ("x_interval_seconds", "summary")
            ]
        );
        let count = |labels: &str| {
            fams[1]
                .samples
                .iter()
                .find(|s| s.name == "x_interval_seconds_count" && s.labels[0].1 == labels)
                .map(|s| s.value)
        };
        assert_eq!(count("15s"), Some(2.0));
        assert_eq!(count("1m"), Some(1.0));
        // Series in label value order: "15s" before "1m".
        assert_eq!(fams[0].samples[0].labels[0].1, "15s");
        v.remove(&["15s"]);
        assert_eq!(v.families()[1].samples.len(), 7);
    }

    #[test]
    fn an_unlabelled_timing_is_always_there() {
        let v = TimingVec::new(TimingDef {
            summary: Some(Desc {
                name: "gc_seconds",
                help: "GC.",
            }),
            histogram: None,
            labels: &[],
            objectives: &[],
        });
        let fams = v.families();
        assert_eq!(fams.len(), 1);
        let rendered: Vec<_> = fams[0]
            .samples
            .iter()
            .map(|s| (s.name.as_str(), s.value))
            .collect();
        assert_eq!(
            rendered,
            [("gc_seconds_sum", 0.0), ("gc_seconds_count", 0.0)]
        );
    }
}
