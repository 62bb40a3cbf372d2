//! What the tests of groups and alerting rules evaluate over: an
//! in-memory storage that keeps what was appended, and a notifier that
//! keeps what was sent.

use std::sync::Mutex;

use ferrite_model::{FloatHistogram, Labels, Matcher};
use ferrite_promql::{Engine, MemStorage, Querier, Queryable, SelectHints, Series, StorageError};

use crate::alerting::{Alert, AlertContext, AlertNotifier};
use crate::group::EvalContext;
use crate::restore::RestoreSettings;
use crate::storage::{AppendFailure, FailureKind, RuleAppender, RuleStorage};

/// Input series the rules read, and what they appended, in order.
#[derive(Default)]
pub struct TestStorage {
    /// The series rules read.
    pub data: Mutex<MemStorage>,
    /// What was committed, in order.
    pub appended: Mutex<Vec<(Labels, i64, f64)>>,
}

/// A querier over a copy of the data at the time it was opened.
struct Snapshot {
    mem: MemStorage,
    mint: i64,
    maxt: i64,
}

impl Querier for Snapshot {
    fn select(&self, m: &[Matcher], hints: SelectHints) -> Result<Vec<Series>, StorageError> {
        self.mem.querier(self.mint, self.maxt)?.select(m, hints)
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

impl Queryable for TestStorage {
    fn querier(&self, mint: i64, maxt: i64) -> Result<Box<dyn Querier + '_>, StorageError> {
        let mem = self.data.lock().expect("lock").clone();
        Ok(Box::new(Snapshot { mem, mint, maxt }))
    }
}

struct TestAppender<'a> {
    storage: &'a TestStorage,
    pending: Vec<(Labels, i64, f64)>,
}

impl RuleAppender for TestAppender<'_> {
    fn append(&mut self, labels: &Labels, t: i64, v: f64) -> Result<(), AppendFailure> {
        let newest = self
            .storage
            .appended
            .lock()
            .expect("lock")
            .iter()
            .filter(|(l, ..)| l == labels)
            .map(|(_, t, _)| *t)
            .max();
        if newest.is_some_and(|n| n >= t) {
            return Err(AppendFailure {
                kind: FailureKind::OutOfOrder,
                message: "out of order sample".into(),
            });
        }
        self.pending.push((labels.clone(), t, v));
        Ok(())
    }

    fn append_histogram(
        &mut self,
        _: &Labels,
        _: i64,
        _: &FloatHistogram,
    ) -> Result<(), AppendFailure> {
        unreachable!("no histograms here")
    }

    fn commit(self: Box<Self>) -> Result<(), String> {
        let mut data = self.storage.data.lock().expect("lock");
        for (l, t, v) in &self.pending {
            data.add(l.clone(), *t, *v);
        }
        self.storage
            .appended
            .lock()
            .expect("lock")
            .extend(self.pending);
        Ok(())
    }
}

impl RuleStorage for TestStorage {
    fn queryable(&self) -> &dyn Queryable {
        self
    }

    fn appender(&self) -> Box<dyn RuleAppender + '_> {
        Box::new(TestAppender {
            storage: self,
            pending: Vec::new(),
        })
    }
}

/// Alerts sent, with their rule's expression.
#[derive(Default)]
pub struct TestNotifier {
    /// Each send.
    pub sent: Mutex<Vec<(String, Vec<Alert>)>>,
}

impl AlertNotifier for TestNotifier {
    fn send(&self, expr: &str, alerts: Vec<Alert>) {
        self.sent
            .lock()
            .expect("lock")
            .push((expr.to_string(), alerts));
    }
}

/// No external labels.
pub static NO_LABELS: std::sync::LazyLock<Labels> = std::sync::LazyLock::new(Labels::empty);

/// A drop-everything notifier for tests that send nothing of interest.
pub static DROP_NOTIFIER: std::sync::LazyLock<TestNotifier> =
    std::sync::LazyLock::new(TestNotifier::default);

/// `up{job, instance}`.
pub fn up(job: &str, instance: &str) -> Labels {
    Labels::new([("__name__", "up"), ("job", job), ("instance", instance)])
}

/// An evaluation context over `storage` with no query offset, no
/// external labels, alerts dropped, Prometheus' default alert settings.
pub fn ctx<'a>(storage: &'a TestStorage, engine: &'a Engine) -> EvalContext<'a> {
    EvalContext {
        storage,
        engine,
        default_query_offset_ms: 0,
        alerts: AlertContext {
            external_labels: &NO_LABELS,
            external_url: "http://ferrite.test",
        },
        notifier: &*DROP_NOTIFIER,
        resend_delay_ns: 60_000_000_000,
        restore: RestoreSettings {
            outage_tolerance_ns: 3_600_000_000_000,
            grace_period_ns: 600_000_000_000,
        },
    }
}
