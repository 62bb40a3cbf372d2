//! Native histogram appends.
//!
//! A histogram is checked in the order of Prometheus v3.16's head appender
//! (`headAppenderV2.Append`, which its receivers use): `Validate` first,
//! then the head's bounds, then the series' labels (for a new series),
//! then the series' verdict on it. It can be given owned (moved into the
//! batch) or lent (a receiver reads each histogram of a request into one
//! reused buffer: the batch takes its contents and leaves a spent
//! histogram of the head's pool, vectors allocated, for the next read),
//! and its series by labels, by (name, value) pairs, as found by
//! [`HeadAppender::find_existing`], or by ref — as float samples are.

use ferrite_model::{FloatHistogram, Histogram, HistogramError, Labels};
use ferrite_wal::record::{RefFloatHistogramSample, RefHistogramSample};

use super::pool::Spare;
use super::{check_pairs, AppendError, Batch, FoundSeries, HeadAppender, SampleKind};
use crate::head::registry::SeriesEntry;
use crate::head::series::{Appendable, MemSeries};

/// A native histogram of either kind lent to the appender: if the sample
/// is kept, the batch takes its contents and leaves a spent histogram in
/// its place (vectors allocated, contents unspecified: read the next one
/// over it). A refused or duplicate sample is left as it was.
#[derive(Debug)]
pub enum LentHistogram<'a> {
    Int(&'a mut Histogram),
    Float(&'a mut FloatHistogram),
}

use kinds::BatchedHistogram;

mod kinds {
    use super::*;

    /// What the appender needs of either kind.
    pub(super) trait BatchedHistogram: Clone {
        fn validate(&self) -> Result<(), HistogramError>;
        /// The sum (a stale marker's is the stale NaN), for error texts.
        fn sum(&self) -> f64;
        /// Its kind for batching.
        fn kind(&self) -> SampleKind;
        /// The series' verdict on it at `t`.
        fn appendable(&self, series: &MemSeries, t: i64) -> Appendable;
        /// Adds it to the batch.
        fn push(self, b: &mut Batch, series_ref: u64, t: i64, entry: SeriesEntry);
        /// A spent histogram of `spare` (or a new one) to leave in the
        /// place of a lent one.
        fn spent(spare: &mut Spare) -> Self;
    }

    impl BatchedHistogram for Histogram {
        fn validate(&self) -> Result<(), HistogramError> {
            Histogram::validate(self)
        }

        fn sum(&self) -> f64 {
            self.sum
        }

        fn kind(&self) -> SampleKind {
            SampleKind::histogram(self.uses_custom_buckets())
        }

        fn appendable(&self, series: &MemSeries, t: i64) -> Appendable {
            series.appendable_histogram(t, self)
        }

        fn spent(spare: &mut Spare) -> Self {
            spare.spent_int()
        }

        fn push(self, b: &mut Batch, series_ref: u64, t: i64, entry: SeriesEntry) {
            b.histograms.push(RefHistogramSample {
                series_ref,
                st: 0,
                t,
                h: self,
            });
            b.histogram_series.push(entry);
        }
    }

    impl BatchedHistogram for FloatHistogram {
        fn validate(&self) -> Result<(), HistogramError> {
            FloatHistogram::validate(self)
        }

        fn sum(&self) -> f64 {
            self.sum
        }

        fn kind(&self) -> SampleKind {
            SampleKind::float_histogram(self.uses_custom_buckets())
        }

        fn appendable(&self, series: &MemSeries, t: i64) -> Appendable {
            series.appendable_float_histogram(t, self)
        }

        fn spent(spare: &mut Spare) -> Self {
            spare.spent_float()
        }

        fn push(self, b: &mut Batch, series_ref: u64, t: i64, entry: SeriesEntry) {
            b.float_histograms.push(RefFloatHistogramSample {
                series_ref,
                st: 0,
                t,
                h: self,
            });
            b.float_histogram_series.push(entry);
        }
    }
}

/// A histogram given to the appender, owned or lent.
enum Given<'a, H> {
    Owned(H),
    Lent(&'a mut H),
}

impl<H: BatchedHistogram> Given<'_, H> {
    fn get(&self) -> &H {
        match self {
            Given::Owned(h) => h,
            Given::Lent(h) => h,
        }
    }

    /// The histogram to keep: moved, or taken from the lender, who gets a
    /// spent one of the appender's spare histograms (taken from the head's
    /// pool at the first one).
    fn into_owned(self, app: &mut HeadAppender<'_>) -> H {
        match self {
            Given::Owned(h) => h,
            Given::Lent(h) => {
                let head = app.head;
                let spare = app.spare.get_or_insert_with(|| head.histogram_pool.take());
                std::mem::replace(h, H::spent(spare))
            }
        }
    }
}

impl HeadAppender<'_> {
    /// Appends an integer native histogram to the series with these labels,
    /// creating it if needed. Returns the series ref.
    pub fn append_histogram(
        &mut self,
        labels: &Labels,
        t: i64,
        h: Histogram,
    ) -> Result<u64, AppendError> {
        self.append_labelled(labels, t, Given::Owned(h))
    }

    /// [`HeadAppender::append_histogram`] for a float histogram.
    pub fn append_float_histogram(
        &mut self,
        labels: &Labels,
        t: i64,
        h: FloatHistogram,
    ) -> Result<u64, AppendError> {
        self.append_labelled(labels, t, Given::Owned(h))
    }

    /// Appends a lent histogram of either kind to the series of these
    /// (name, value) pairs, sorted by name, creating it if needed (as
    /// [`HeadAppender::append_pairs`] does for floats).
    pub fn append_histogram_pairs(
        &mut self,
        pairs: &[(&str, &str)],
        t: i64,
        h: LentHistogram<'_>,
    ) -> Result<u64, AppendError> {
        match h {
            LentHistogram::Int(h) => self.append_pairs_any(pairs, t, h),
            LentHistogram::Float(h) => self.append_pairs_any(pairs, t, h),
        }
    }

    /// [`HeadAppender::append_histogram_pairs`] returning the series, to
    /// append to it later with [`HeadAppender::append_histogram_found`].
    pub fn append_histogram_series(
        &mut self,
        pairs: &[(&str, &str)],
        t: i64,
        h: LentHistogram<'_>,
    ) -> Result<FoundSeries, AppendError> {
        match h {
            LentHistogram::Int(h) => self.append_series_any(pairs, t, h),
            LentHistogram::Float(h) => self.append_series_any(pairs, t, h),
        }
    }

    /// Appends a lent histogram of either kind to a series
    /// [`HeadAppender::find_existing`] found.
    pub fn append_histogram_found(
        &mut self,
        s: &FoundSeries,
        t: i64,
        h: LentHistogram<'_>,
    ) -> Result<u64, AppendError> {
        match h {
            LentHistogram::Int(h) => self.append_found_any(s, t, h),
            LentHistogram::Float(h) => self.append_found_any(s, t, h),
        }
    }

    /// Appends a lent histogram of either kind to a series known by ref.
    pub fn append_histogram_ref(
        &mut self,
        series_ref: u64,
        t: i64,
        h: LentHistogram<'_>,
    ) -> Result<(), AppendError> {
        match h {
            LentHistogram::Int(h) => self.append_ref_any(series_ref, t, h),
            LentHistogram::Float(h) => self.append_ref_any(series_ref, t, h),
        }
    }

    fn append_pairs_any<H: BatchedHistogram>(
        &mut self,
        pairs: &[(&str, &str)],
        t: i64,
        h: &mut H,
    ) -> Result<u64, AppendError> {
        self.append_series_any(pairs, t, h).map(|s| s.series_ref())
    }

    fn append_series_any<H: BatchedHistogram>(
        &mut self,
        pairs: &[(&str, &str)],
        t: i64,
        h: &mut H,
    ) -> Result<FoundSeries, AppendError> {
        self.check_histogram(t, h)?;
        check_pairs(pairs)?;
        let (series_ref, entry) = self.get_or_create(pairs.iter().copied(), pairs.len());
        self.append_histogram_entry(series_ref, entry.clone(), t, Given::Lent(h))?;
        Ok(FoundSeries { entry })
    }

    fn append_found_any<H: BatchedHistogram>(
        &mut self,
        s: &FoundSeries,
        t: i64,
        h: &mut H,
    ) -> Result<u64, AppendError> {
        self.check_histogram(t, h)?;
        self.append_histogram_entry(s.series_ref(), s.entry.clone(), t, Given::Lent(h))?;
        Ok(s.series_ref())
    }

    fn append_ref_any<H: BatchedHistogram>(
        &mut self,
        series_ref: u64,
        t: i64,
        h: &mut H,
    ) -> Result<(), AppendError> {
        self.check_histogram(t, h)?;
        let entry = self.entry(series_ref)?;
        self.append_histogram_entry(series_ref, entry, t, Given::Lent(h))
    }

    fn append_labelled<H: BatchedHistogram>(
        &mut self,
        labels: &Labels,
        t: i64,
        h: Given<'_, H>,
    ) -> Result<u64, AppendError> {
        self.check_histogram(t, h.get())?;
        labels.validate()?;
        let (series_ref, entry) = self.get_or_create_labels(labels);
        self.append_histogram_entry(series_ref, entry, t, h)?;
        Ok(series_ref)
    }

    /// The checks before the series: the histogram's validity, then the
    /// head's bounds.
    fn check_histogram<H: BatchedHistogram>(&self, t: i64, h: &H) -> Result<(), AppendError> {
        h.validate()?;
        self.check_bounds(t)
    }

    /// A float stale marker on a series whose newest sample is a histogram,
    /// appended as Prometheus' head appends it: a histogram of that kind
    /// whose sum is the stale marker (so a scrape or a remote write that
    /// marks a histogram series stale stores what Prometheus stores).
    pub(super) fn append_stale_histogram(
        &mut self,
        series_ref: u64,
        entry: SeriesEntry,
        t: i64,
        float: bool,
    ) -> Result<(), AppendError> {
        let sum = ferrite_model::STALE_NAN;
        if float {
            let h = FloatHistogram {
                sum,
                ..FloatHistogram::default()
            };
            self.append_histogram_entry(series_ref, entry, t, Given::Owned(h))
        } else {
            let h = Histogram {
                sum,
                ..Histogram::default()
            };
            self.append_histogram_entry(series_ref, entry, t, Given::Owned(h))
        }
    }

    /// The series' verdict, then the histogram into the batch if accepted.
    fn append_histogram_entry<H: BatchedHistogram>(
        &mut self,
        series_ref: u64,
        entry: SeriesEntry,
        t: i64,
        h: Given<'_, H>,
    ) -> Result<(), AppendError> {
        let verdict = self.judge(t, |d| h.get().appendable(d, t), &entry.data.lock());
        if self.accept(verdict, t, h.get().sum())? {
            let kind = h.get().kind();
            let owned = h.into_owned(self);
            owned.push(self.batch_for(kind, series_ref), series_ref, t, entry);
        }
        Ok(())
    }
}
