//! Scraping wired to the database: the storage `ferrite-scrape` appends
//! to, and the manager's lifetime (started with the configuration,
//! re-applied on reload, stopped before the database closes).

use std::sync::Arc;

use ferrite_model::Labels;
use ferrite_scrape::storage::{
    AppendFailure, HistogramSample, ScrapeAppender, ScrapeStorage, SeriesHandle,
};
use ferrite_tsdb::head::{AppendError, FoundSeries, HeadAppender, LentHistogram};
use ferrite_tsdb::Db;
use tokio::sync::Notify;

/// The database as scrapes see it.
pub struct DbScrapeStorage {
    /// The database.
    pub db: Arc<Db>,
    /// Woken when an append makes the head compactable.
    pub compact_now: Arc<Notify>,
}

impl ScrapeStorage for DbScrapeStorage {
    fn appender(&self) -> Box<dyn ScrapeAppender + '_> {
        Box::new(DbScrapeAppender {
            app: self.db.appender(),
            storage: self,
        })
    }
}

/// One scrape's appends to the head.
struct DbScrapeAppender<'d> {
    app: HeadAppender<'d>,
    storage: &'d DbScrapeStorage,
}

impl ScrapeAppender for DbScrapeAppender<'_> {
    fn append(&mut self, series: &SeriesHandle, t: i64, v: f64) -> Result<(), AppendFailure> {
        let app = &mut self.app;
        with_head_series(series, |s| app.append_found_owned(s.clone(), t, v))?
            .map(|_| ())
            .map_err(failure)
    }

    fn append_new(
        &mut self,
        labels: &Labels,
        t: i64,
        v: f64,
    ) -> Result<SeriesHandle, AppendFailure> {
        let series = self.app.append_series(labels, t, v).map_err(failure)?;
        Ok(SeriesHandle::new(series))
    }

    fn append_histogram(
        &mut self,
        series: &SeriesHandle,
        t: i64,
        mut h: HistogramSample<'_>,
    ) -> Result<(), AppendFailure> {
        let app = &mut self.app;
        with_head_series(series, |s| app.append_histogram_found(s, t, lend(&mut h)))?
            .map(|_| ())
            .map_err(failure)
    }

    fn append_histogram_new(
        &mut self,
        labels: &Labels,
        t: i64,
        mut h: HistogramSample<'_>,
    ) -> Result<SeriesHandle, AppendFailure> {
        // The head lends from (name, value) pairs.
        let pairs: Vec<(&str, &str)> = labels
            .iter()
            .map(|l| (l.name.as_str(), l.value.as_str()))
            .collect();
        let series = self
            .app
            .append_histogram_series(&pairs, t, lend(&mut h))
            .map_err(failure)?;
        Ok(SeriesHandle::new(series))
    }

    fn reserve(&mut self, n: usize) {
        self.app.reserve_floats(n);
    }

    fn commit(self: Box<Self>) -> Result<(), String> {
        let storage = self.storage;
        self.app.commit().map_err(|e| e.to_string())?;
        if storage.db.head_compactable() {
            storage.compact_now.notify_one();
        }
        Ok(())
    }

    fn rollback(self: Box<Self>) {
        if let Err(e) = self.app.rollback() {
            tracing::warn!(error = %e, "rolling back a scrape failed");
        }
    }
}

/// Calls `f` with the head's series behind a handle this storage gave
/// (lent: its count is not touched).
fn with_head_series<R>(
    series: &SeriesHandle,
    f: impl FnOnce(&FoundSeries) -> R,
) -> Result<R, AppendFailure> {
    series
        .with(f)
        .ok_or_else(|| AppendFailure::Other("a series handle of another storage".into()))
}

/// A scraped histogram lent to the head (which takes its contents if it
/// keeps the sample).
fn lend<'h>(h: &'h mut HistogramSample<'_>) -> LentHistogram<'h> {
    match h {
        HistogramSample::Int(h) => LentHistogram::Int(h),
        HistogramSample::Float(h) => LentHistogram::Float(h),
    }
}

/// The head's refusal as a scrape sees it: out of order, duplicate and
/// out of bounds skip the sample; anything else (a too old sample
/// included, as in Prometheus) fails the scrape.
fn failure(e: AppendError) -> AppendFailure {
    match e {
        AppendError::OutOfOrder => AppendFailure::OutOfOrder,
        AppendError::OutOfBounds => AppendFailure::OutOfBounds,
        AppendError::DuplicateSample { .. }
        | AppendError::DuplicateHistogramToFloat { .. }
        | AppendError::DuplicateHistogram => AppendFailure::Duplicate,
        other => AppendFailure::Other(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use ferrite_model::{FloatHistogram, Histogram, Matcher, Span, STALE_NAN};
    use ferrite_tsdb::sample::SampleRef;
    use ferrite_tsdb::DbOptions;

    use super::*;

    fn histogram(count: u64) -> Histogram {
        Histogram {
            schema: 0,
            count,
            sum: 1.0,
            positive_spans: vec![Span {
                offset: 0,
                length: 1,
            }],
            positive_buckets: vec![count as i64],
            ..Histogram::default()
        }
    }

    /// What the head holds for `name`: (t, "float value" or "H count").
    fn read(db: &Db, name: &str) -> Vec<(i64, String)> {
        let q = db.querier(i64::MIN, i64::MAX);
        let mut out = Vec::new();
        for s in q
            .select(&[Matcher::equal("__name__", name)])
            .expect("select")
        {
            s.for_each_value(|t, v| {
                out.push((
                    t,
                    match v {
                        SampleRef::Float(f) if ferrite_model::is_stale_nan(f) => "stale".into(),
                        SampleRef::Float(f) => f.to_string(),
                        SampleRef::Histogram(h) if ferrite_model::is_stale_nan(h.sum) => {
                            "H stale".into()
                        }
                        SampleRef::Histogram(h) => format!("H {}", h.count),
                        SampleRef::FloatHistogram(h) => format!("F {}", h.count),
                    },
                ))
            })
            .expect("values");
        }
        out
    }

    #[test]
    fn histograms_by_labels_then_by_handle_then_a_float_stale_marker() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = Arc::new(Db::open(dir.path(), DbOptions::default()).expect("open"));
        let storage = DbScrapeStorage {
            db: db.clone(),
            compact_now: Arc::new(Notify::new()),
        };
        let labels = Labels::new([("__name__", "h"), ("job", "j")]);
        let mut app = storage.appender();
        let mut h = histogram(1);
        let series = app
            .append_histogram_new(&labels, 1000, HistogramSample::Int(&mut h))
            .expect("new series");
        app.commit().expect("commit");

        let mut app = storage.appender();
        let mut h = histogram(2);
        assert_eq!(
            app.append_histogram(&series, 2000, HistogramSample::Int(&mut h)),
            Ok(())
        );
        // A float histogram too.
        let mut f = FloatHistogram {
            count: 3.0,
            ..histogram(3).to_float()
        };
        assert_eq!(
            app.append_histogram(&series, 3000, HistogramSample::Float(&mut f)),
            Ok(())
        );
        // The same labels again: the same series.
        let mut h = histogram(5);
        let again = app
            .append_histogram_new(&labels, 4000, HistogramSample::Int(&mut h))
            .expect("same series");
        assert_eq!(
            with_head_series(&again, FoundSeries::series_ref),
            with_head_series(&series, FoundSeries::series_ref)
        );
        // An invalid one fails the scrape with the head's message.
        let mut bad = histogram(6);
        bad.positive_buckets.clear();
        let e = app
            .append_histogram(&series, 5000, HistogramSample::Int(&mut bad))
            .expect_err("invalid");
        assert!(matches!(e, AppendFailure::Other(_)), "{e}");
        // A handle of another storage is refused.
        let foreign = SeriesHandle::new(Arc::new(7u64));
        assert!(matches!(
            app.append(&foreign, 5000, 1.0),
            Err(AppendFailure::Other(_))
        ));
        app.commit().expect("commit");

        // The series goes stale: a float stale marker, as Prometheus'
        // scrape writes it, stored as the head stores it on a histogram
        // series (a histogram stale marker).
        let mut app = storage.appender();
        // Another histogram at a stored one's timestamp: a duplicate.
        let mut h = histogram(7);
        assert_eq!(
            app.append_histogram(&series, 4000, HistogramSample::Int(&mut h)),
            Err(AppendFailure::Duplicate)
        );
        assert_eq!(app.append(&series, 6000, STALE_NAN), Ok(()));
        app.commit().expect("commit");
        assert_eq!(
            read(&db, "h"),
            vec![
                (1000, "H 1".into()),
                (2000, "H 2".into()),
                (3000, "F 3".into()),
                (4000, "H 5".into()),
                (6000, "H stale".into()),
            ]
        );
    }
}
