//! What scraping needs of the storage: an appender per scrape.
//!
//! The scrape loop knows nothing of the storage engine; the server hands
//! it a [`ScrapeStorage`] over its database. One scrape's samples go
//! through one [`ScrapeAppender`] and are committed together, or rolled
//! back together when the scrape fails, as Prometheus' scrape loop does.
//! Native histograms go through [`ScrapeAppender::append_histogram`], in
//! the shared `ferrite_model` types; a series that goes stale gets a float
//! stale marker whatever it held, as Prometheus' scrape loop appends it
//! (Prometheus' head turns it into a histogram stale marker when the
//! series' last sample is a histogram; Ferrite's head keeps the float).

use ferrite_model::{FloatHistogram, Histogram, Labels};

/// Why the storage refused one sample. The first three are expected in a
/// scrape (the sample is skipped and counted); any other fails the scrape.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AppendFailure {
    /// Older than the series' newest sample.
    #[error("out of order sample")]
    OutOfOrder,
    /// Another value at a timestamp the series already has.
    #[error("duplicate sample for timestamp")]
    Duplicate,
    /// Outside the time range the storage accepts.
    #[error("out of bounds")]
    OutOfBounds,
    /// Anything else: the storage's message.
    #[error("{0}")]
    Other(String),
}

/// A native histogram lent for one append: the storage may take its
/// contents, leaving a histogram to read the next one over (its vectors
/// allocated, its contents unspecified).
#[derive(Debug)]
pub enum HistogramSample<'h> {
    /// An integer histogram.
    Int(&'h mut Histogram),
    /// A float histogram.
    Float(&'h mut FloatHistogram),
}

/// One scrape's appends.
pub trait ScrapeAppender {
    /// Appends a float sample. `series_ref` is what an earlier append to
    /// the same series returned, or 0; a ref the storage no longer knows
    /// is looked up again by `labels`. Returns the series' ref.
    fn append(
        &mut self,
        series_ref: u64,
        labels: &Labels,
        t: i64,
        v: f64,
    ) -> Result<u64, AppendFailure>;

    /// Appends a native histogram sample, refs as for [`Self::append`].
    /// The histogram is checked by the storage (an invalid one fails the
    /// scrape with the storage's message).
    fn append_histogram(
        &mut self,
        series_ref: u64,
        labels: &Labels,
        t: i64,
        h: HistogramSample<'_>,
    ) -> Result<u64, AppendFailure>;

    /// Makes every append durable and visible.
    fn commit(self: Box<Self>) -> Result<(), String>;

    /// Discards every append.
    fn rollback(self: Box<Self>);
}

/// A storage scrapes append to.
pub trait ScrapeStorage: Send + Sync + 'static {
    /// An appender for one scrape.
    fn appender(&self) -> Box<dyn ScrapeAppender + '_>;
}
