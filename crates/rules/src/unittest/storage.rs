//! The storage a rule unit test runs over: the input series, loaded up to
//! each evaluation's time as promtool's lazy loader loads them, and what
//! the rules write, all in memory.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, RwLock, RwLockReadGuard};

use ferrite_model::{CounterResetHint, FloatHistogram, Labels, Matcher};
use ferrite_promql::{
    LazySeries, MemStorage, Querier, Queryable, SampleSource, SelectHints, Series, StorageError,
};

use crate::storage::{AppendFailure, FailureKind, RuleAppender, RuleStorage};

/// One input sample.
#[derive(Debug, Clone)]
pub enum Value {
    /// A float (a stale marker included).
    Float(f64),
    /// A native histogram.
    Histogram(Box<FloatHistogram>),
}

/// Input series with their samples' times (ms), in time order.
pub type Inputs = Vec<(Labels, Vec<(i64, Value)>)>;

/// Input series still to load, and everything loaded or written.
#[derive(Default)]
pub struct UnitTestStorage {
    data: RwLock<MemStorage>,
    /// Per series, the newest sample's time (ms) and its last histogram.
    newest: Mutex<HashMap<Labels, Newest>>,
    /// Input samples not loaded yet, by series, in time order.
    pending: Mutex<BTreeMap<Labels, std::collections::VecDeque<(i64, Value)>>>,
}

#[derive(Default, Clone)]
struct Newest {
    t: i64,
    value_bits: Option<u64>,
    histogram: Option<FloatHistogram>,
}

impl UnitTestStorage {
    /// A storage whose input series are `series` (a later definition of
    /// the same labels replaces an earlier one, as promtool's does).
    pub fn new(series: Inputs) -> Self {
        let mut pending = BTreeMap::new();
        for (l, samples) in series {
            pending.insert(l, samples.into_iter().collect());
        }
        UnitTestStorage {
            pending: Mutex::new(pending),
            ..UnitTestStorage::default()
        }
    }

    /// Loads the input samples at or before `till` (ms).
    pub fn load_till(&self, till: i64) {
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        let mut app = self.appender();
        for (l, samples) in pending.iter_mut() {
            while samples.front().is_some_and(|(t, _)| *t <= till) {
                let Some((t, v)) = samples.pop_front() else {
                    break;
                };
                // Refusals (a rule wrote the series first) are dropped.
                let _ = match &v {
                    Value::Float(f) => app.append(l, t, *f),
                    Value::Histogram(h) => app.append_histogram(l, t, h),
                };
            }
        }
        let _ = app.commit();
    }

    fn read(&self) -> RwLockReadGuard<'_, MemStorage> {
        self.data.read().unwrap_or_else(|p| p.into_inner())
    }
}

/// A querier over the storage as it is while the query runs.
struct Reader<'a> {
    mem: RwLockReadGuard<'a, MemStorage>,
    mint: i64,
    maxt: i64,
}

impl Querier for Reader<'_> {
    fn select(&self, m: &[Matcher], hints: SelectHints) -> Result<Vec<Series>, StorageError> {
        self.mem.querier(self.mint, self.maxt)?.select(m, hints)
    }

    fn select_lazy(
        &self,
        m: &[Matcher],
        hints: SelectHints,
    ) -> Result<Vec<LazySeries<'_>>, StorageError> {
        fn within<T>(s: &[(i64, T)], lo: i64, hi: i64) -> &[(i64, T)] {
            let a = s.partition_point(|(t, _)| *t < lo);
            let b = s.partition_point(|(t, _)| *t <= hi);
            &s[a..b.max(a)]
        }
        let (lo, hi) = (hints.start.max(self.mint), hints.end.min(self.maxt));
        let mut out = Vec::new();
        for (ls, floats, hists) in self.mem.iter() {
            if !m.iter().all(|m| m.matches_labels(ls)) {
                continue;
            }
            let (floats, hists) = (within(floats, lo, hi), within(hists, lo, hi));
            if floats.is_empty() && hists.is_empty() {
                continue;
            }
            out.push(LazySeries {
                labels: ls.clone(),
                source: Box::new(Source { floats, hists }),
            });
        }
        Ok(out)
    }

    fn label_names(&self, m: &[Matcher]) -> Result<Vec<String>, StorageError> {
        self.mem.querier(self.mint, self.maxt)?.label_names(m)
    }

    fn label_values(&self, name: &str, m: &[Matcher]) -> Result<Vec<String>, StorageError> {
        self.mem
            .querier(self.mint, self.maxt)?
            .label_values(name, m)
    }
}

/// One series' samples in a selection's range.
struct Source<'a> {
    floats: &'a [(i64, f64)],
    hists: &'a [(i64, FloatHistogram)],
}

impl SampleSource for Source<'_> {
    fn read_into(&self, out: &mut Vec<(i64, f64)>) -> Result<(), StorageError> {
        out.clear();
        out.extend_from_slice(self.floats);
        Ok(())
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

impl Queryable for UnitTestStorage {
    fn querier(&self, mint: i64, maxt: i64) -> Result<Box<dyn Querier + '_>, StorageError> {
        Ok(Box::new(Reader {
            mem: self.read(),
            mint,
            maxt,
        }))
    }
}

enum Pending {
    Float(Labels, i64, f64),
    Histogram(Labels, i64, FloatHistogram),
}

/// Appends checked as Prometheus' head checks them (no out-of-order
/// window): older than the series' newest sample is out of order, the
/// same time with another value a duplicate.
struct Appender<'a> {
    storage: &'a UnitTestStorage,
    pending: Vec<Pending>,
    /// The newest times of this appender's own samples.
    own: HashMap<Labels, Newest>,
}

impl Appender<'_> {
    fn check(
        &mut self,
        labels: &Labels,
        t: i64,
        bits: Option<u64>,
    ) -> Result<Newest, AppendFailure> {
        let prev = match self.own.get(labels) {
            Some(n) => Some(n.clone()),
            None => self
                .storage
                .newest
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(labels)
                .cloned(),
        };
        if let Some(p) = &prev {
            if t < p.t {
                return Err(AppendFailure {
                    kind: FailureKind::OutOfOrder,
                    message: "out of order sample".into(),
                });
            }
            if t == p.t && (bits.is_none() || p.value_bits != bits) {
                return Err(AppendFailure {
                    kind: FailureKind::Duplicate,
                    message: "duplicate sample for timestamp".into(),
                });
            }
        }
        Ok(prev.unwrap_or_default())
    }
}

impl RuleAppender for Appender<'_> {
    fn append(&mut self, labels: &Labels, t: i64, v: f64) -> Result<(), AppendFailure> {
        let prev = self.check(labels, t, Some(v.to_bits()))?;
        if prev.t == t && prev.value_bits == Some(v.to_bits()) {
            return Ok(());
        }
        self.own.insert(
            labels.clone(),
            Newest {
                t,
                value_bits: Some(v.to_bits()),
                histogram: None,
            },
        );
        self.pending.push(Pending::Float(labels.clone(), t, v));
        Ok(())
    }

    fn append_histogram(
        &mut self,
        labels: &Labels,
        t: i64,
        h: &FloatHistogram,
    ) -> Result<(), AppendFailure> {
        let prev = self.check(labels, t, None)?;
        let mut h = h.clone();
        stored_hint(&mut h, prev.histogram.as_ref());
        self.own.insert(
            labels.clone(),
            Newest {
                t,
                value_bits: None,
                histogram: Some(h.clone()),
            },
        );
        self.pending.push(Pending::Histogram(labels.clone(), t, h));
        Ok(())
    }

    fn commit(self: Box<Self>) -> Result<(), String> {
        let mut data = self.storage.data.write().unwrap_or_else(|p| p.into_inner());
        for p in self.pending {
            match p {
                Pending::Float(l, t, v) => data.add(l, t, v),
                Pending::Histogram(l, t, h) => data.add_histogram(l, t, h),
            }
        }
        self.storage
            .newest
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(self.own);
        Ok(())
    }
}

/// The counter reset hint Prometheus' TSDB hands out for a histogram
/// read back: gauges stay gauges; one that starts a chunk (the first, or
/// after a reset or a change of layout) is "unknown", the others "not a
/// reset".
fn stored_hint(h: &mut FloatHistogram, prev: Option<&FloatHistogram>) {
    if h.counter_reset_hint == CounterResetHint::Gauge || h.is_stale() {
        return;
    }
    let new_chunk = match prev {
        None => true,
        Some(p) if p.counter_reset_hint == CounterResetHint::Gauge => true,
        Some(p) => {
            let mut probe = h.clone();
            probe.counter_reset_hint = CounterResetHint::Unknown;
            h.counter_reset_hint == CounterResetHint::CounterReset
                || p.schema != h.schema
                || p.zero_threshold != h.zero_threshold
                || p.custom_values != h.custom_values
                || probe.detect_reset(p)
        }
    };
    h.counter_reset_hint = if new_chunk {
        CounterResetHint::Unknown
    } else {
        CounterResetHint::NotCounterReset
    };
}

impl RuleStorage for UnitTestStorage {
    fn queryable(&self) -> &dyn Queryable {
        self
    }

    fn appender(&self) -> Box<dyn RuleAppender + '_> {
        Box::new(Appender {
            storage: self,
            pending: Vec::new(),
            own: HashMap::new(),
        })
    }
}
