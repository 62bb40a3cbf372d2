//! What rule evaluation needs of the storage: a [`Queryable`] for the
//! PromQL engine to read, and an appender per rule evaluation.
//!
//! The rules know nothing of the storage engine; the server hands the
//! manager a [`RuleStorage`] over its database (as it hands scraping a
//! `ferrite_scrape::storage::ScrapeStorage`). One rule's results, and the
//! stale markers of the series it stopped producing, go through one
//! [`RuleAppender`] and are committed together, as in Prometheus.

use ferrite_model::{FloatHistogram, Labels};
use ferrite_promql::Queryable;

/// Why the storage refused one sample.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct AppendFailure {
    /// What kind of refusal it is.
    pub kind: FailureKind,
    /// The storage's message (Prometheus' wording).
    pub message: String,
}

/// The refusals Prometheus' rule evaluation tells apart: the first three
/// are expected when two rules write the same series (a stale marker for
/// such a series is dropped quietly).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// Older than the series' newest sample.
    OutOfOrder,
    /// Older than the out-of-order window allows.
    TooOld,
    /// Another value at a timestamp the series already has.
    Duplicate,
    /// Anything else (out of bounds, invalid labels, ...).
    Other,
}

/// One rule evaluation's appends.
pub trait RuleAppender {
    /// Appends a float sample (a stale marker is
    /// [`ferrite_model::STALE_NAN`]).
    fn append(&mut self, labels: &Labels, t: i64, v: f64) -> Result<(), AppendFailure>;

    /// Appends a native histogram sample.
    fn append_histogram(
        &mut self,
        labels: &Labels,
        t: i64,
        h: &FloatHistogram,
    ) -> Result<(), AppendFailure>;

    /// Makes every append durable and visible.
    fn commit(self: Box<Self>) -> Result<(), String>;
}

/// The storage rules read and write.
pub trait RuleStorage: Send + Sync + 'static {
    /// What the PromQL engine evaluates rule expressions over.
    fn queryable(&self) -> &dyn Queryable;

    /// An appender for one rule's results.
    fn appender(&self) -> Box<dyn RuleAppender + '_>;
}
