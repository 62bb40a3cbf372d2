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

use ferrite_model::erased::{Erased, RawShared};
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

/// A series as the storage holds it: what the first append to a series
/// returns and the target's scrape cache keeps, so that later appends go
/// straight to the series, with no lookup by labels or by ref. Holding a
/// handle keeps the series in the storage (the head does not drop a series
/// anyone holds), so a cached handle is always good.
#[derive(Clone)]
pub struct SeriesHandle(Erased);

impl SeriesHandle {
    /// The storage's own series object, shared (one pointer to a counted
    /// allocation: a `std::sync::Arc`, or the head's series).
    pub fn new<T: RawShared>(series: T) -> Self {
        SeriesHandle(Erased::new(series))
    }

    /// Asks the CPU to bring the start of the storage's object closer (a
    /// hint, for a series appended to soon).
    pub fn prefetch(&self) {
        ferrite_model::prefetch::prefetch_lines(self.0.as_ptr().cast::<u8>(), 3);
    }

    /// Calls `f` with the storage's object as a `T`, or gives `None` if it
    /// is not one.
    pub fn with<T: RawShared, R>(&self, f: impl FnOnce(&T) -> R) -> Option<R> {
        self.0.with(f)
    }

    /// The storage's object, held without naming its type.
    pub fn erased(&self) -> &Erased {
        &self.0
    }
}

impl std::fmt::Debug for SeriesHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SeriesHandle")
    }
}

/// One scrape's appends.
pub trait ScrapeAppender {
    /// Appends a float sample to a series an earlier append returned.
    fn append(&mut self, series: &SeriesHandle, t: i64, v: f64) -> Result<(), AppendFailure>;

    /// Appends a float sample to the series of `labels`, creating it if
    /// needed; returns the series.
    fn append_new(
        &mut self,
        labels: &Labels,
        t: i64,
        v: f64,
    ) -> Result<SeriesHandle, AppendFailure>;

    /// Appends a native histogram sample to a series an earlier append
    /// returned. The histogram is checked by the storage (an invalid one
    /// fails the scrape with the storage's message).
    fn append_histogram(
        &mut self,
        series: &SeriesHandle,
        t: i64,
        h: HistogramSample<'_>,
    ) -> Result<(), AppendFailure>;

    /// [`Self::append_histogram`] to the series of `labels`, creating it
    /// if needed.
    fn append_histogram_new(
        &mut self,
        labels: &Labels,
        t: i64,
        h: HistogramSample<'_>,
    ) -> Result<SeriesHandle, AppendFailure>;

    /// A hint: about `n` samples are coming (the storage may make room
    /// for them at once).
    fn reserve(&mut self, n: usize) {
        let _ = n;
    }

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
