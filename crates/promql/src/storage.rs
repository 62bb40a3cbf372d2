//! The storage the engine reads, as a trait, and an in-memory implementation.
//!
//! The engine never sees chunks: it asks a [`Querier`] (opened by a
//! [`Queryable`] for the whole time span a query touches) for the series that
//! match a selector's matchers, with their float samples in time order inside
//! [`SelectHints`]' range. Each selector of a query is selected exactly once,
//! over the union of all the windows its evaluation steps need; the engine
//! then slides its windows over those samples. So a range query of N steps
//! costs one selection per selector, not N.
//!
//! Samples include staleness markers ([`STALE_NAN`], or a histogram whose
//! sum is that NaN); the engine interprets them, the storage only keeps them.
//!
//! A series holds float samples, native histogram samples, or both (at
//! different times): [`SampleSource::read_into`] hands out the floats,
//! [`SampleSource::read_histograms_into`] the histograms (as
//! [`FloatHistogram`]s; integer histograms converted with
//! `Histogram::to_float`). A storage without histograms implements only the
//! first. [`Querier::select`] (the eager variant) carries floats only; the
//! engine selects through [`Querier::select_lazy`].

use std::collections::BTreeMap;
use std::fmt;

pub use ferrite_model::matcher::compile_anchored;
pub use ferrite_model::{
    is_stale_nan, FloatHistogram, Label, Labels, MatchType, Matcher, MatcherError, Str,
    METRIC_NAME, STALE_NAN, STALE_NAN_BITS,
};

/// Errors of a storage implementation.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    #[error(transparent)]
    InvalidRegex(#[from] MatcherError),
    #[error("storage: {0}")]
    Other(String),
}

/// The time range (inclusive, ms) a selection needs samples for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SelectHints {
    pub start: i64,
    pub end: i64,
}

/// A selected series: labels and its float samples in time order (see
/// the module's notes: histograms come through [`Querier::select_lazy`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub labels: Labels,
    pub samples: Vec<(i64, f64)>,
}

/// Reads the samples of one selected series on demand, so that the engine
/// can walk many long series holding one at a time (in a buffer it reuses)
/// instead of all of them at once.
pub trait SampleSource: Send + Sync {
    /// Replaces `out`'s contents with the series' samples in the selection's
    /// range, in time order (staleness markers included).
    fn read_into(&self, out: &mut Vec<(i64, f64)>) -> Result<(), StorageError>;

    /// Replaces `out`'s contents with the series' native histogram samples
    /// in the selection's range, in time order (staleness markers, whose sum
    /// is [`STALE_NAN`], included). At one timestamp a series has either a
    /// float or a histogram. The default: no histograms.
    fn read_histograms_into(
        &self,
        out: &mut Vec<(i64, FloatHistogram)>,
    ) -> Result<(), StorageError> {
        out.clear();
        Ok(())
    }

    /// Whether the samples are in memory already, so that reading them is a
    /// copy (the engine then does not spread the reading over threads).
    fn in_memory(&self) -> bool {
        false
    }
}

impl SampleSource for Vec<(i64, f64)> {
    fn read_into(&self, out: &mut Vec<(i64, f64)>) -> Result<(), StorageError> {
        self.as_slice().read_into(out)
    }

    fn in_memory(&self) -> bool {
        true
    }
}

impl SampleSource for &[(i64, f64)] {
    fn read_into(&self, out: &mut Vec<(i64, f64)>) -> Result<(), StorageError> {
        out.clear();
        out.extend_from_slice(self);
        Ok(())
    }

    fn in_memory(&self) -> bool {
        true
    }
}

/// A selected series whose samples are read when needed.
pub struct LazySeries<'a> {
    pub labels: Labels,
    pub source: Box<dyn SampleSource + 'a>,
}

impl fmt::Debug for LazySeries<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LazySeries")
            .field("labels", &self.labels)
            .finish_non_exhaustive()
    }
}

/// Something that can open a [`Querier`] for a time range.
pub trait Queryable {
    /// Opens a querier for [mint, maxt] (ms, inclusive).
    fn querier(&self, mint: i64, maxt: i64) -> Result<Box<dyn Querier + '_>, StorageError>;
}

/// Reads series of one time range.
pub trait Querier {
    /// The series matching all `matchers`, sorted by labels, with their
    /// samples inside `hints` (and the querier's range). Series without a
    /// sample there may be omitted.
    fn select(&self, matchers: &[Matcher], hints: SelectHints)
        -> Result<Vec<Series>, StorageError>;

    /// [`Self::select`] with samples read on demand: the same series in the
    /// same order, except that series without samples in range may be
    /// included (their source then reads nothing). The default reads every
    /// series through `select`; storages that can decode lazily override it.
    fn select_lazy(
        &self,
        matchers: &[Matcher],
        hints: SelectHints,
    ) -> Result<Vec<LazySeries<'_>>, StorageError> {
        Ok(self
            .select(matchers, hints)?
            .into_iter()
            .map(|s| LazySeries {
                labels: s.labels,
                source: Box::new(s.samples),
            })
            .collect())
    }

    /// Label names of the series matching `matchers` (all series if empty), sorted.
    fn label_names(&self, matchers: &[Matcher]) -> Result<Vec<String>, StorageError>;

    /// Values of label `name` over the series matching `matchers`, sorted.
    fn label_values(&self, name: &str, matchers: &[Matcher]) -> Result<Vec<String>, StorageError>;
}

/// The samples of one in-memory series.
#[derive(Default, Debug, Clone)]
struct MemSeries {
    floats: Vec<(i64, f64)>,
    hists: Vec<(i64, FloatHistogram)>,
}

/// Puts `(t, v)` into time-ordered `s`, replacing a sample at `t`.
fn insert_sorted<T>(s: &mut Vec<(i64, T)>, t: i64, v: T) {
    match s.last() {
        Some((lt, _)) if *lt < t => s.push((t, v)),
        None => s.push((t, v)),
        _ => match s.binary_search_by_key(&t, |(st, _)| *st) {
            Ok(i) => s[i].1 = v,
            Err(i) => s.insert(i, (t, v)),
        },
    }
}

fn remove_at<T>(s: &mut Vec<(i64, T)>, t: i64) {
    if let Ok(i) = s.binary_search_by_key(&t, |(st, _)| *st) {
        s.remove(i);
    }
}

/// An in-memory storage: a sorted map from label set to samples.
#[derive(Default, Debug, Clone)]
pub struct MemStorage {
    series: BTreeMap<Labels, MemSeries>,
}

/// An in-memory series' samples in a range.
struct MemSource<'a> {
    floats: &'a [(i64, f64)],
    hists: &'a [(i64, FloatHistogram)],
}

impl SampleSource for MemSource<'_> {
    fn read_into(&self, out: &mut Vec<(i64, f64)>) -> Result<(), StorageError> {
        self.floats.read_into(out)
    }

    fn read_histograms_into(
        &self,
        out: &mut Vec<(i64, FloatHistogram)>,
    ) -> Result<(), StorageError> {
        out.clear();
        out.extend_from_slice(self.hists);
        Ok(())
    }

    fn in_memory(&self) -> bool {
        true
    }
}

impl MemStorage {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a sample; a sample (float or histogram) at an existing
    /// timestamp is replaced.
    pub fn add(&mut self, labels: Labels, t: i64, v: f64) {
        let s = self.series.entry(labels).or_default();
        if !s.hists.is_empty() {
            remove_at(&mut s.hists, t);
        }
        insert_sorted(&mut s.floats, t, v);
    }

    /// Adds a native histogram sample; a sample at an existing timestamp
    /// is replaced.
    pub fn add_histogram(&mut self, labels: Labels, t: i64, h: FloatHistogram) {
        let s = self.series.entry(labels).or_default();
        remove_at(&mut s.floats, t);
        insert_sorted(&mut s.hists, t, h);
    }

    /// Every series with its float and histogram samples, sorted by labels.
    #[allow(clippy::type_complexity)]
    pub fn iter(
        &self,
    ) -> impl Iterator<Item = (&Labels, &[(i64, f64)], &[(i64, FloatHistogram)])> + '_ {
        self.series
            .iter()
            .map(|(l, s)| (l, s.floats.as_slice(), s.hists.as_slice()))
    }

    /// The histogram samples of a series, to adjust in place.
    pub fn histograms_mut(&mut self, labels: &Labels) -> Option<&mut Vec<(i64, FloatHistogram)>> {
        self.series.get_mut(labels).map(|s| &mut s.hists)
    }

    pub fn clear(&mut self) {
        self.series.clear();
    }

    pub fn num_series(&self) -> usize {
        self.series.len()
    }

    fn matching<'a>(
        &'a self,
        matchers: &'a [Matcher],
    ) -> impl Iterator<Item = (&'a Labels, &'a MemSeries)> + 'a {
        self.series
            .iter()
            .filter(move |(ls, _)| matchers.iter().all(|m| m.matches_labels(ls)))
    }
}

struct MemQuerier<'a> {
    db: &'a MemStorage,
    mint: i64,
    maxt: i64,
}

impl Queryable for MemStorage {
    fn querier(&self, mint: i64, maxt: i64) -> Result<Box<dyn Querier + '_>, StorageError> {
        Ok(Box::new(MemQuerier {
            db: self,
            mint,
            maxt,
        }))
    }
}

impl<'a> MemQuerier<'a> {
    /// The matching series with samples in range, and those samples.
    fn in_range<'m>(
        &'m self,
        matchers: &'m [Matcher],
        hints: SelectHints,
    ) -> impl Iterator<Item = (&'a Labels, MemSource<'a>)> + 'm
    where
        'a: 'm,
    {
        fn within<T>(s: &[(i64, T)], lo: i64, hi: i64) -> &[(i64, T)] {
            let a = s.partition_point(|(t, _)| *t < lo);
            let b = s.partition_point(|(t, _)| *t <= hi);
            &s[a..b.max(a)]
        }
        let lo = hints.start.max(self.mint);
        let hi = hints.end.min(self.maxt);
        let db: &'a MemStorage = self.db;
        db.series.iter().filter_map(move |(ls, s)| {
            if !matchers.iter().all(|m| m.matches_labels(ls)) {
                return None;
            }
            let floats = within(&s.floats, lo, hi);
            let hists = within(&s.hists, lo, hi);
            (!floats.is_empty() || !hists.is_empty()).then_some((ls, MemSource { floats, hists }))
        })
    }
}

impl Querier for MemQuerier<'_> {
    fn select(
        &self,
        matchers: &[Matcher],
        hints: SelectHints,
    ) -> Result<Vec<Series>, StorageError> {
        Ok(self
            .in_range(matchers, hints)
            .filter(|(_, src)| !src.floats.is_empty())
            .map(|(ls, src)| Series {
                labels: ls.clone(),
                samples: src.floats.to_vec(),
            })
            .collect())
    }

    fn select_lazy(
        &self,
        matchers: &[Matcher],
        hints: SelectHints,
    ) -> Result<Vec<LazySeries<'_>>, StorageError> {
        let mut out = Vec::new();
        for (ls, src) in self.in_range(matchers, hints) {
            out.push(LazySeries {
                labels: ls.clone(),
                source: Box::new(src),
            });
        }
        Ok(out)
    }

    fn label_names(&self, matchers: &[Matcher]) -> Result<Vec<String>, StorageError> {
        let mut names: Vec<String> = self
            .db
            .matching(matchers)
            .flat_map(|(ls, _)| ls.iter().map(|l| l.name.to_string()).collect::<Vec<_>>())
            .collect();
        names.sort();
        names.dedup();
        Ok(names)
    }

    fn label_values(&self, name: &str, matchers: &[Matcher]) -> Result<Vec<String>, StorageError> {
        let mut vals: Vec<String> = self
            .db
            .matching(matchers)
            .map(|(ls, _)| ls.get(name).to_string())
            .filter(|v| !v.is_empty())
            .collect();
        vals.sort();
        vals.dedup();
        Ok(vals)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matchers_follow_promql_rules() {
        let ls = Labels::from_pairs(&[("__name__", "up"), ("job", "a\nb")]);
        assert!(Matcher::new(MatchType::Equal, "missing", "")
            .unwrap()
            .matches_labels(&ls));
        assert!(Matcher::new(MatchType::Regex, "job", "a.b")
            .unwrap()
            .matches_labels(&ls));
        // Anchored: a partial match is no match.
        assert!(!Matcher::new(MatchType::Regex, "job", "a")
            .unwrap()
            .matches_labels(&ls));
        assert!(Matcher::new(MatchType::NotRegex, "missing", ".+")
            .unwrap()
            .matches_labels(&ls));
        assert!(Matcher::new(MatchType::Regex, "x", "(").is_err());
    }

    #[test]
    fn select_filters_time_and_sorts() {
        let mut db = MemStorage::new();
        let b = Labels::from_pairs(&[("__name__", "b")]);
        let a = Labels::from_pairs(&[("__name__", "a")]);
        for t in 0..10 {
            db.add(b.clone(), t * 10, t as f64);
            db.add(a.clone(), t * 10, t as f64);
        }
        let q = db.querier(0, 1000).unwrap();
        let m = Matcher::new(MatchType::Regex, "__name__", "a|b").unwrap();
        let s = q.select(&[m], SelectHints { start: 15, end: 30 }).unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].labels, a);
        assert_eq!(s[0].samples, vec![(20, 2.0), (30, 3.0)]);
        assert_eq!(q.label_values("__name__", &[]).unwrap(), vec!["a", "b"]);
    }
}

#[cfg(test)]
mod proptests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn labels_stay_sorted_and_unique(ops in proptest::collection::vec(("[a-d]", "[x-z]{0,2}"), 0..20)) {
            let mut l = Labels::empty();
            let mut model = std::collections::BTreeMap::new();
            for (n, v) in &ops {
                l.set(n, v);
                if v.is_empty() { model.remove(n); } else { model.insert(n.clone(), v.clone()); }
            }
            let got: Vec<(String, String)> = l.iter().map(|l| (l.name.to_string(), l.value.to_string())).collect();
            let want: Vec<(String, String)> = model.into_iter().collect();
            prop_assert_eq!(got, want);
        }
    }
}
