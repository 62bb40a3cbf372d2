//! Scraping wired to the database: the storage `ferrite-scrape` appends
//! to, and the manager's lifetime (started with the configuration,
//! re-applied on reload, stopped before the database closes).

use std::sync::Arc;

use ferrite_model::Labels;
use ferrite_scrape::storage::{AppendFailure, ScrapeAppender, ScrapeStorage};
use ferrite_tsdb::head::{AppendError, HeadAppender};
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
    fn append(
        &mut self,
        series_ref: u64,
        labels: &Labels,
        t: i64,
        v: f64,
    ) -> Result<u64, AppendFailure> {
        let appended = if series_ref == 0 {
            self.app.append(labels, t, v)
        } else {
            match self.app.append_ref(series_ref, t, v) {
                // The series was dropped from the head since (compacted
                // away after going stale): create it again.
                Err(AppendError::UnknownSeries(_)) => self.app.append(labels, t, v),
                other => other.map(|()| series_ref),
            }
        };
        appended.map_err(failure)
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
