//! Appending to the head with commit/rollback.
//!
//! An appender collects samples (floats, integer and float native
//! histograms), checking each against its series as Prometheus does (out of
//! bounds, out of order, duplicate timestamp with a different value, a
//! histogram that fails validation). `commit` writes the batch to the WAL
//! first and only then applies it, so a sample is visible only once it is
//! durable in the WAL's page cache. New series are created at `append` time
//! (queries may see them empty) and are logged to the WAL even on rollback,
//! because they exist in memory either way.
//!
//! Samples are kept in batches, as in Prometheus: within a batch the WAL
//! gets the floats, then the histograms, then the float histograms, so a
//! series that changes kind within one appender starts a new batch, and
//! replay applies its samples in the order they were appended.

use std::sync::atomic::Ordering;

use ferrite_model::gofloat::format_g;
use ferrite_model::{HistogramError, Labels, LabelsError};
use ferrite_wal::record::{
    encode_float_histogram_samples_split, encode_histogram_samples_split, encode_samples,
    RefFloatHistogramSample, RefHistogramSample, RefSample, SeriesRecordBuilder,
};
use ferrite_wal::PreparedRecords;

mod histogram;
pub(in crate::head) mod pool;

pub use histogram::LentHistogram;

use super::registry::{hash_labels, hash_wire_labels, SeriesEntry};
use super::series::{AppendHint, Appendable, MemSeries};
use super::wbl::WblBatch;
use super::Head;
use crate::error::HeadError;
use crate::sample::SampleRef;
use crate::symbols::{Resolver, SymbolTable};
use ferrite_model::prefetch::prefetch_lines;

thread_local! {
    /// Compression buffers of the appenders committing on this thread.
    static PREPARED: std::cell::RefCell<Option<PreparedRecords>> =
        const { std::cell::RefCell::new(None) };
}

/// A thread's compression buffers are dropped after a batch that made
/// them larger than this.
const KEEP_PREPARED_BYTES: usize = 4 << 20;

thread_local! {
    /// The emptied first batch of the last appender dropped on this
    /// thread, for the next one: a scrape's appender of a thousand
    /// samples would otherwise allocate (and free) its batch vectors
    /// every time.
    static SPARE_BATCH: std::cell::Cell<Option<Batch>> = const { std::cell::Cell::new(None) };
}

/// A batch holding room for more float samples than this is not kept
/// for the thread's next appender.
const KEEP_BATCH_FLOATS: usize = 1 << 16;

/// Why a sample was refused. The messages are Prometheus' own.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum AppendError {
    #[error("out of bounds")]
    OutOfBounds,
    #[error("out of order sample")]
    OutOfOrder,
    /// Out of order and older than the out-of-order window allows.
    #[error("too old sample")]
    TooOld,
    #[error("{}", duplicate_message(*t, format!("existing {}, new value {}", format_g(*existing), format_g(*new))))]
    DuplicateSample { t: i64, existing: f64, new: f64 },
    /// A float at the timestamp of a histogram sample.
    #[error("{}", duplicate_message(*t, format!("existing is a histogram, new value {}", format_g(*new))))]
    DuplicateHistogramToFloat { t: i64, new: f64 },
    /// A histogram at the timestamp of another sample.
    #[error("duplicate sample for timestamp")]
    DuplicateHistogram,
    #[error(transparent)]
    InvalidHistogram(#[from] HistogramError),
    #[error(transparent)]
    InvalidLabels(#[from] LabelsError),
    #[error("unknown series ref {0}")]
    UnknownSeries(u64),
}

/// Prometheus' text for a duplicate float: a timestamp of 0 is not
/// spelled out (Go's error type treats it as "no timestamp").
fn duplicate_message(t: i64, detail: String) -> String {
    if t == 0 {
        "duplicate sample for timestamp".to_string()
    } else {
        format!("duplicate sample for timestamp {t}; overrides not allowed: {detail}")
    }
}

/// The kind of a sample, for batching: custom-bucket histograms are a kind
/// of their own (they go to their own WAL record types).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SampleKind {
    Float,
    Histogram,
    CustomBucketsHistogram,
    FloatHistogram,
    CustomBucketsFloatHistogram,
}

impl SampleKind {
    /// An integer histogram's kind.
    fn histogram(custom_buckets: bool) -> Self {
        if custom_buckets {
            SampleKind::CustomBucketsHistogram
        } else {
            SampleKind::Histogram
        }
    }

    /// A float histogram's kind.
    fn float_histogram(custom_buckets: bool) -> Self {
        if custom_buckets {
            SampleKind::CustomBucketsFloatHistogram
        } else {
            SampleKind::FloatHistogram
        }
    }
}

/// Samples logged and applied together: floats first, then histograms,
/// then float histograms.
#[derive(Default)]
struct Batch {
    floats: Vec<RefSample>,
    float_series: Vec<SeriesEntry>,
    /// Where each float's append will write, for prefetching at commit.
    float_hints: Vec<AppendHint>,
    histograms: Vec<RefHistogramSample>,
    histogram_series: Vec<SeriesEntry>,
    float_histograms: Vec<RefFloatHistogramSample>,
    float_histogram_series: Vec<SeriesEntry>,
    /// The one histogram kind of every histogram sample so far, while
    /// `kinds` is not kept (a request of histograms of one kind never
    /// needs it).
    uniform: Option<SampleKind>,
    /// The histogram kind of each series with histograms in this batch
    /// (floats are not recorded), kept from the first sample that needs
    /// it: a float, or a histogram of another kind.
    kinds: Option<std::collections::HashMap<u64, SampleKind, foldhash::fast::RandomState>>,
}

impl Batch {
    fn len(&self) -> usize {
        self.floats.len() + self.histograms.len() + self.float_histograms.len()
    }

    /// A new batch: the thread's spare one if it has one.
    fn take() -> Batch {
        SPARE_BATCH.take().unwrap_or_default()
    }

    /// Empties the batch (dropping its hold on its series) and keeps it
    /// as the thread's spare, unless it grew large.
    fn give_back(mut self) {
        if self.floats.capacity() > KEEP_BATCH_FLOATS {
            return;
        }
        self.floats.clear();
        self.float_series.clear();
        self.float_hints.clear();
        self.histograms.clear();
        self.histogram_series.clear();
        self.float_histograms.clear();
        self.float_histogram_series.clear();
        self.uniform = None;
        self.kinds = None;
        SPARE_BATCH.set(Some(self));
    }

    /// Whether a sample of `kind` for series `series_ref` may join the
    /// batch: not when the series has histograms of another kind in it
    /// (a float counts as another kind), so that the WAL's order of kinds
    /// within a batch keeps the series' samples in order.
    fn admits(&mut self, kind: SampleKind, series_ref: u64) -> bool {
        if self.kinds.is_none() {
            match (self.uniform, kind) {
                (None, SampleKind::Float) => return true,
                (None, k) => {
                    self.uniform = Some(k);
                    return true;
                }
                (Some(u), k) if u == k => return true,
                (Some(_), _) => self.map_kinds(),
            }
        }
        let kinds = self.kinds.get_or_insert_with(Default::default);
        match (kinds.get(&series_ref).copied(), kind) {
            (None, SampleKind::Float) => true,
            (Some(p), k) if p == k => true,
            (None, k) => {
                kinds.insert(series_ref, k);
                true
            }
            (Some(_), _) => false,
        }
    }

    /// Records the kind of every series with histograms so far.
    fn map_kinds(&mut self) {
        let ints = self.histograms.iter().map(|s| {
            let kind = SampleKind::histogram(s.h.uses_custom_buckets());
            (s.series_ref, kind)
        });
        let floats = self.float_histograms.iter().map(|s| {
            let kind = SampleKind::float_histogram(s.h.uses_custom_buckets());
            (s.series_ref, kind)
        });
        self.kinds = Some(ints.chain(floats).collect());
    }
}

/// A batch of appends to the head.
pub struct HeadAppender<'h> {
    head: &'h Head,
    min_valid_time: i64,
    /// The head's newest sample when the appender was made: out-of-order
    /// samples may be up to `ooo_window` older.
    head_max_time: i64,
    /// The out-of-order window when the appender was made (0: none).
    ooo_window: i64,
    new_series: Vec<u64>,
    batches: Vec<Batch>,
    /// Spent histograms to copy borrowed ones into (see [`pool`]).
    spare: Option<pool::Spare>,
    done: bool,
}

impl<'h> HeadAppender<'h> {
    pub(super) fn new(head: &'h Head) -> Self {
        HeadAppender {
            head,
            min_valid_time: head.appendable_min_valid_time(),
            head_max_time: head.max_time(),
            ooo_window: head.out_of_order_time_window(),
            new_series: Vec::new(),
            batches: Vec::new(),
            spare: None,
            done: false,
        }
    }

    /// The batch a sample of `kind` for series `series_ref` goes to:
    /// the current one, or a new one when the series changes kind in it.
    fn batch_for(&mut self, kind: SampleKind, series_ref: u64) -> &mut Batch {
        let admitted = match self.batches.last_mut() {
            Some(b) => b.admits(kind, series_ref),
            None => false,
        };
        if !admitted {
            let mut b = Batch::take();
            b.admits(kind, series_ref);
            self.batches.push(b);
        }
        let last = self.batches.len() - 1;
        &mut self.batches[last]
    }

    /// Makes room for `n` more float samples in the current batch, so a
    /// caller that knows about how many are coming (a scrape: the last
    /// one's count) spares the batch's growth.
    pub fn reserve_floats(&mut self, n: usize) {
        if self.batches.is_empty() {
            self.batches.push(Batch::take());
        }
        let last = self.batches.len() - 1;
        let b = &mut self.batches[last];
        b.floats.reserve(n);
        b.float_series.reserve(n);
        b.float_hints.reserve(n);
    }

    /// Appends a sample to the series with these labels, creating it if
    /// needed. Returns the series ref for faster later appends.
    pub fn append(&mut self, labels: &Labels, t: i64, v: f64) -> Result<u64, AppendError> {
        self.append_series(labels, t, v).map(|s| s.series_ref())
    }

    /// [`HeadAppender::append`] returning the series, to append to it
    /// later with [`HeadAppender::append_found`].
    pub fn append_series(
        &mut self,
        labels: &Labels,
        t: i64,
        v: f64,
    ) -> Result<FoundSeries, AppendError> {
        labels.validate()?;
        self.check_bounds(t)?;
        let (r, entry) = self.get_or_create_labels(labels);
        self.append_entry(r, entry.clone(), t, v)?;
        Ok(FoundSeries { entry })
    }

    /// [`HeadAppender::append`] for a label set given as (name, value)
    /// pairs sorted by name, as receivers decode them in place: no
    /// [`Labels`] is built unless the series is new.
    pub fn append_pairs(
        &mut self,
        pairs: &[(&str, &str)],
        t: i64,
        v: f64,
    ) -> Result<u64, AppendError> {
        check_pairs(pairs)?;
        self.check_bounds(t)?;
        let (r, entry) = self.get_or_create(pairs.iter().copied(), pairs.len());
        self.append_entry(r, entry, t, v)?;
        Ok(r)
    }

    /// Finds the existing series of many label sets at once, each given as
    /// byte pairs sorted by name with no empty values; `out[i]` is `None`
    /// where there is none. Nothing is checked or changed: the caller
    /// validates the labels of sets not found and uses
    /// [`HeadAppender::append_pairs`] for them. This lets receivers skip
    /// UTF-8 checks for known series (checked at creation), and one batch
    /// is much faster than a lookup per set (see `lookup_batch`). Append
    /// to what was found with [`HeadAppender::append_found`].
    /// `wire[i]`, where given, is set `i` as [`encode_wire_labels`]
    /// encodes it (as the request carried it), which is hashed at once.
    ///
    /// [`encode_wire_labels`]: super::encode_wire_labels
    pub fn find_existing(
        &self,
        sets: &[&[(&[u8], &[u8])]],
        wire: &[Option<&[u8]>],
        out: &mut Vec<Option<FoundSeries>>,
    ) {
        let head = self.head;
        let hashes: Vec<u64> = sets
            .iter()
            .enumerate()
            .map(|(i, ps)| match wire.get(i).copied().flatten() {
                Some(w) => hash_wire_labels(w),
                None => hash_labels(ps.iter().copied()),
            })
            .collect();
        let mut found = Vec::new();
        head.series.lookup_batch(
            &hashes,
            &head.symbols,
            |i, ids, res| same_resolved(res, ids, sets[i].iter().copied(), sets[i].len()),
            &mut found,
        );
        out.clear();
        out.extend(
            found
                .into_iter()
                .map(|f| f.map(|entry| FoundSeries { entry })),
        );
    }

    /// Appends a sample to a series [`HeadAppender::find_existing`] found.
    pub fn append_found(&mut self, s: &FoundSeries, t: i64, v: f64) -> Result<u64, AppendError> {
        self.append_found_owned(s.clone(), t, v)
    }

    /// [`HeadAppender::append_found`] taking the series, which saves
    /// cloning it for the batch.
    pub fn append_found_owned(
        &mut self,
        s: FoundSeries,
        t: i64,
        v: f64,
    ) -> Result<u64, AppendError> {
        self.check_bounds(t)?;
        let r = s.series_ref();
        self.append_entry(r, s.entry, t, v)?;
        Ok(r)
    }

    /// Appends a sample to a series known by ref.
    pub fn append_ref(&mut self, series_ref: u64, t: i64, v: f64) -> Result<(), AppendError> {
        self.check_bounds(t)?;
        let entry = self.entry(series_ref)?;
        self.append_entry(series_ref, entry, t, v)
    }

    /// The series of a ref appends were given.
    fn entry(&self, series_ref: u64) -> Result<SeriesEntry, AppendError> {
        self.head
            .series
            .get(series_ref)
            .ok_or(AppendError::UnknownSeries(series_ref))
    }

    /// Refuses a sample before the min valid time at once when there is
    /// no out-of-order window (with one, the sample may be out of order).
    fn check_bounds(&self, t: i64) -> Result<(), AppendError> {
        if self.ooo_window == 0 && t < self.min_valid_time {
            self.head
                .stats
                .out_of_bounds_samples
                .fetch_add(1, Ordering::Relaxed);
            return Err(AppendError::OutOfBounds);
        }
        Ok(())
    }

    /// [`HeadAppender::get_or_create`] for a (validated) label set.
    fn get_or_create_labels(&mut self, labels: &Labels) -> (u64, SeriesEntry) {
        let pairs = labels
            .as_slice()
            .iter()
            .map(|l| (l.name.as_str(), l.value.as_str()));
        self.get_or_create(pairs, labels.len())
    }

    fn get_or_create<'s>(
        &mut self,
        pairs: impl Iterator<Item = (&'s str, &'s str)> + Clone,
        len: usize,
    ) -> (u64, SeriesEntry) {
        let head = self.head;
        let hash = hash_labels(pairs.clone());
        let same = |ids: &[u32]| same_labels(&head.symbols, ids, pairs.clone(), len);
        let (entry, created) = head.series.get_or_insert(hash, same, || {
            let mut ids = Vec::with_capacity(len * 2);
            head.symbols
                .intern_all(pairs.clone().flat_map(|(n, v)| [n, v]), &mut ids);
            let r = head.next_series_ref();
            let entry = SeriesEntry::new(r, hash, &ids);
            head.postings.write().add(r, entry.labels());
            entry
        });
        let r = entry.series_ref();
        if created {
            head.stats.series_created.fetch_add(1, Ordering::Relaxed);
            self.new_series.push(r);
        }
        (r, entry)
    }

    fn append_entry(
        &mut self,
        series_ref: u64,
        entry: SeriesEntry,
        t: i64,
        v: f64,
    ) -> Result<(), AppendError> {
        let (verdict, hint) = {
            let d = entry.data.lock();
            if ferrite_model::is_stale_nan(v) {
                if let Some(float) = d.last_histogram_kind() {
                    drop(d);
                    return self.append_stale_histogram(series_ref, entry, t, float);
                }
            }
            (self.judge(t, |d| d.appendable(t, v), &d), d.append_hint())
        };
        if !self.accept(verdict, t, v)? {
            return Ok(());
        }
        let b = self.batch_for(SampleKind::Float, series_ref);
        b.floats.push(RefSample {
            series_ref,
            st: 0,
            t,
            v,
        });
        b.float_series.push(entry);
        b.float_hints.push(hint);
        Ok(())
    }

    /// The verdict on a sample at `t`: out of order when it is before the
    /// min valid time (only reached with an out-of-order window), else the
    /// series' own (`series_verdict`).
    fn judge(
        &self,
        t: i64,
        series_verdict: impl FnOnce(&MemSeries) -> Appendable,
        series: &MemSeries,
    ) -> Appendable {
        if t < self.min_valid_time {
            return Appendable::OutOfOrder;
        }
        series_verdict(series)
    }

    /// Whether an out-of-order sample at `t` is inside the window.
    fn in_ooo_window(&self, t: i64) -> bool {
        self.ooo_window > 0 && t >= self.head_max_time.saturating_sub(self.ooo_window)
    }

    /// Turns a series' verdict on a sample into: store it (`true`), drop it
    /// silently as a duplicate (`false`), or refuse it.
    fn accept(&self, verdict: Appendable, t: i64, v: f64) -> Result<bool, AppendError> {
        let stats = &self.head.stats;
        match verdict {
            Appendable::Yes => Ok(true),
            Appendable::Duplicate => Ok(false),
            Appendable::OutOfOrder if self.in_ooo_window(t) => Ok(true),
            Appendable::OutOfOrder if self.ooo_window > 0 => {
                stats.too_old_samples.fetch_add(1, Ordering::Relaxed);
                Err(AppendError::TooOld)
            }
            Appendable::OutOfOrder => {
                stats.out_of_order_samples.fetch_add(1, Ordering::Relaxed);
                Err(AppendError::OutOfOrder)
            }
            Appendable::Conflict { existing } => {
                stats.duplicate_samples.fetch_add(1, Ordering::Relaxed);
                Err(AppendError::DuplicateSample {
                    t,
                    existing,
                    new: v,
                })
            }
            Appendable::ConflictWithHistogram => {
                stats.duplicate_samples.fetch_add(1, Ordering::Relaxed);
                Err(AppendError::DuplicateHistogramToFloat { t, new: v })
            }
            Appendable::HistogramConflict => {
                stats.duplicate_samples.fetch_add(1, Ordering::Relaxed);
                Err(AppendError::DuplicateHistogram)
            }
        }
    }

    /// Number of samples waiting for commit.
    pub fn pending(&self) -> usize {
        self.batches.iter().map(Batch::len).sum()
    }

    /// Writes the batches to the WAL, then makes them visible; out-of-order
    /// samples (with a window) go to their series' out-of-order chunks and
    /// then to the WBL, as Prometheus does.
    pub fn commit(mut self) -> Result<(), HeadError> {
        self.done = true;
        self.log(true)?;
        let mut acc = CommitStats::new();
        let mut wbl = WblBatch::new();
        for b in &self.batches {
            self.commit_floats(b, &mut acc, &mut wbl);
            self.commit_histograms(b, &mut acc, &mut wbl);
        }
        let head = self.head;
        head.update_time_range(acc.mint, acc.maxt);
        head.stats
            .samples_appended
            .fetch_add(acc.appended + wbl.stored, Ordering::Relaxed);
        if acc.rejected > 0 {
            head.stats
                .out_of_order_samples
                .fetch_add(acc.rejected, Ordering::Relaxed);
        }
        if wbl.stored > 0 {
            head.stats
                .out_of_order_samples_appended
                .fetch_add(wbl.stored, Ordering::Relaxed);
            head.update_ooo_time_range(wbl.mint, wbl.maxt);
        }
        self.log_wbl(wbl);
        self.recycle();
        Ok(())
    }

    /// Gives the batches' histograms to the head's pool, when this
    /// appender copied histograms (its callers reuse buffers; the others
    /// keep the allocator's ways).
    fn recycle(&mut self) {
        let Some(mut spare) = self.spare.take() else {
            return;
        };
        for b in &mut self.batches {
            spare.keep(
                b.histograms.drain(..).map(|s| s.h),
                b.float_histograms.drain(..).map(|s| s.h),
            );
        }
        self.head.histogram_pool.give(spare);
    }

    fn commit_floats(&self, b: &Batch, acc: &mut CommitStats, wbl: &mut WblBatch) {
        let (entries, hints) = (&b.float_series, &b.float_hints);
        for (i, (s, e)) in b.floats.iter().zip(entries).enumerate() {
            // As `prefetch_series_ahead`, without locking the series
            // ahead: their chunks' addresses were noted at the append.
            if let Some(e) = entries.get(i + 4) {
                prefetch_lines(e.data.data_ptr(), 3);
            }
            if let Some(h) = hints.get(i + 2) {
                h.prefetch();
            }
            self.commit_sample(s.series_ref, e, s.t, SampleRef::Float(s.v), acc, wbl);
        }
    }

    /// Applies histogram samples (integer, then float, as logged).
    fn commit_histograms(&self, b: &Batch, acc: &mut CommitStats, wbl: &mut WblBatch) {
        let integer = b
            .histograms
            .iter()
            .map(|s| (s.series_ref, s.t, SampleRef::Histogram(&s.h)))
            .zip(&b.histogram_series);
        let float = b
            .float_histograms
            .iter()
            .map(|s| (s.series_ref, s.t, SampleRef::FloatHistogram(&s.h)))
            .zip(&b.float_histogram_series);
        let (ints, floats) = (&b.histogram_series, &b.float_histogram_series);
        let entry = |k: usize| match k.checked_sub(ints.len()) {
            None => ints.get(k),
            Some(k) => floats.get(k),
        };
        for (i, ((series_ref, t, v), e)) in integer.chain(float).enumerate() {
            prefetch_series_ahead(entry, i);
            self.commit_sample(series_ref, e, t, v, acc, wbl);
        }
    }

    /// Applies one sample: appended in order, inserted out of order (when
    /// it is older than the series' newest sample or the min valid time
    /// and inside the window), or dropped (a duplicate, or refused by a
    /// commit that got in first).
    fn commit_sample(
        &self,
        series_ref: u64,
        entry: &SeriesEntry,
        t: i64,
        v: SampleRef<'_>,
        acc: &mut CommitStats,
        wbl: &mut WblBatch,
    ) {
        let head = self.head;
        let mut d = entry.data.lock();
        let out_of_order = self.ooo_window > 0 && (t < self.min_valid_time || t < d.max_time());
        if !out_of_order {
            let ok = match v {
                SampleRef::Float(f) => d.append(series_ref, t, f, head.chunk_opts, &head.mapper),
                _ => d.append_histogram(series_ref, t, v, head.chunk_opts, &head.mapper),
            };
            acc.record(ok, t);
            return;
        }
        if !self.in_ooo_window(t) {
            acc.record(false, t);
            return;
        }
        let res = d.insert_ooo(
            series_ref,
            t,
            v,
            head.chunk_opts.float_encoding,
            usize::from(head.options().out_of_order_cap_max),
            &head.mapper,
        );
        drop(d);
        wbl.add(series_ref, t, v, &res);
    }

    /// Writes a commit's out-of-order records to the WBL. As in
    /// Prometheus this comes after the samples are visible, so a failure
    /// cannot undo the commit: it is logged and counted (the samples are
    /// in the WAL, but replay takes out-of-order samples from the WBL).
    fn log_wbl(&self, wbl: WblBatch) {
        let records = wbl.finish();
        if records.is_empty() {
            return;
        }
        let head = self.head;
        let mut guard = head.wbl.lock();
        let Some(w) = guard.as_mut() else {
            return;
        };
        let refs: Vec<&[u8]> = records.iter().map(Vec::as_slice).collect();
        if let Err(e) = w.log(&refs) {
            head.stats
                .wbl_write_failures
                .fetch_add(1, Ordering::Relaxed);
            tracing::error!(error = %e, "writing out-of-order samples to the WBL failed");
        }
    }

    /// Drops the pending samples. Series created by this appender stay and are logged.
    pub fn rollback(mut self) -> Result<(), HeadError> {
        self.done = true;
        self.recycle();
        self.log(false)
    }

    /// Writes the new series and (if `with_samples`) the batches to the
    /// WAL. The records are encoded and compressed before the WAL's lock
    /// is taken, so appenders committing at once do that in parallel.
    fn log(&mut self, with_samples: bool) -> Result<(), HeadError> {
        let Some(compression) = self.head.options().wal.as_ref().map(|o| o.compression) else {
            return Ok(());
        };
        let recs = self.wal_records(with_samples);
        if recs.is_empty() {
            return Ok(());
        }
        let refs: Vec<&[u8]> = recs.iter().map(Vec::as_slice).collect();
        PREPARED.with_borrow_mut(|prepared| {
            let p = match prepared {
                Some(p) if p.kind() == compression => p,
                _ => prepared.insert(PreparedRecords::new(compression)?),
            };
            p.prepare(&refs)?;
            let logged = match self.head.wal.lock().as_mut() {
                Some(w) => w.log_prepared(p),
                None => Ok(()),
            };
            if p.held_bytes() > KEEP_PREPARED_BYTES {
                *prepared = None;
            }
            Ok(logged?)
        })
    }

    /// The WAL records of this appender: its new series, then its batches'
    /// samples.
    fn wal_records(&self, with_samples: bool) -> Vec<Vec<u8>> {
        let head = self.head;
        let mut recs: Vec<Vec<u8>> = Vec::new();
        if !self.new_series.is_empty() {
            let mut series_rec = Vec::new();
            let mut b = SeriesRecordBuilder::new(&mut series_rec);
            head.symbols.with_resolver(|res| {
                let mut pairs: Vec<(&str, &str)> = Vec::new();
                for &r in &self.new_series {
                    if let Some(e) = head.series.get(r) {
                        pairs.clear();
                        pairs.extend(
                            e.labels()
                                .chunks_exact(2)
                                .map(|p| (res.get(p[0]), res.get(p[1]))),
                        );
                        b.add(r, &pairs);
                    }
                }
            });
            if !series_rec.is_empty() {
                recs.push(series_rec);
            }
        }
        if with_samples {
            for b in &self.batches {
                encode_sample_records(&b.floats, &b.histograms, &b.float_histograms, &mut recs);
            }
        }
        recs
    }
}

/// Encodes sample records in Prometheus' order: floats, histograms
/// (exponential, then custom buckets), float histograms (likewise).
pub(super) fn encode_sample_records(
    floats: &[RefSample],
    histograms: &[RefHistogramSample],
    float_histograms: &[RefFloatHistogramSample],
    recs: &mut Vec<Vec<u8>>,
) {
    if !floats.is_empty() {
        // About what a sample takes: two varint deltas and the value.
        let mut rec = Vec::with_capacity(16 + floats.len() * 12);
        encode_samples(&mut rec, floats);
        recs.push(rec);
    }
    let (mut exponential, mut custom) = (Vec::new(), Vec::new());
    if !histograms.is_empty() {
        encode_histogram_samples_split(&mut exponential, &mut custom, histograms);
        push_non_empty(recs, &mut exponential, &mut custom);
    }
    if !float_histograms.is_empty() {
        encode_float_histogram_samples_split(&mut exponential, &mut custom, float_histograms);
        push_non_empty(recs, &mut exponential, &mut custom);
    }
}

/// Before the commit of sample `i` of a batch whose series are `entry(k)`:
/// prefetches in stages what the next samples' appends touch first (each
/// stage reads what the one before fetched): the series four samples on,
/// its boxed chunk and newest value two on, its chunk's encoder state one
/// on. Each sample of a remote-write request is for another series, and
/// an append otherwise waits on its cache misses one after another. The
/// series read ahead are only tried (never waited for) and released at
/// once.
fn prefetch_series_ahead<'a>(entry: impl Fn(usize) -> Option<&'a SeriesEntry>, i: usize) {
    if let Some(e) = entry(i + 4) {
        prefetch_lines(e.data.data_ptr(), 3);
    }
    if let Some(d) = entry(i + 2).and_then(|e| e.data.try_lock()) {
        d.prefetch_far();
    }
    if let Some(d) = entry(i + 1).and_then(|e| e.data.try_lock()) {
        d.prefetch_near();
    }
}

/// Moves the records that are not empty into `recs`, in order.
fn push_non_empty(recs: &mut Vec<Vec<u8>>, first: &mut Vec<u8>, second: &mut Vec<u8>) {
    for rec in [first, second] {
        if !rec.is_empty() {
            recs.push(std::mem::take(rec));
        }
    }
}

/// What a commit applied: counts and the time range of the applied samples.
struct CommitStats {
    appended: u64,
    rejected: u64,
    mint: i64,
    maxt: i64,
}

impl CommitStats {
    fn new() -> Self {
        CommitStats {
            appended: 0,
            rejected: 0,
            mint: i64::MAX,
            maxt: i64::MIN,
        }
    }

    fn record(&mut self, appended: bool, t: i64) {
        if appended {
            self.appended += 1;
            self.mint = self.mint.min(t);
            self.maxt = self.maxt.max(t);
        } else {
            self.rejected += 1;
        }
    }
}

/// A series found by [`HeadAppender::find_existing`] or created by
/// [`HeadAppender::append_series`]; holding it keeps the series from being
/// garbage-collected (head truncation drops only series nobody holds), so
/// appends to it never need a lookup.
#[derive(Clone)]
pub struct FoundSeries {
    entry: SeriesEntry,
}

impl FoundSeries {
    pub fn series_ref(&self) -> u64 {
        self.entry.series_ref()
    }
}

// SAFETY: a `FoundSeries` is its `SeriesEntry`, whose `RawShared` it
// uses: callers that keep series of several storages hold it as a
// `ferrite_model::erased::Erased`, without another allocation.
unsafe impl ferrite_model::erased::RawShared for FoundSeries {
    fn into_raw(self) -> *const () {
        <SeriesEntry as ferrite_model::erased::RawShared>::into_raw(self.entry)
    }

    unsafe fn from_raw(raw: *const ()) -> Self {
        FoundSeries {
            // SAFETY: as the caller of this function says.
            entry: unsafe { <SeriesEntry as ferrite_model::erased::RawShared>::from_raw(raw) },
        }
    }
}

/// Whether interned labels `ids` are the `len` pairs of `pairs`.
fn same_labels<N: AsRef<[u8]>, V: AsRef<[u8]>>(
    symbols: &SymbolTable,
    ids: &[u32],
    pairs: impl Iterator<Item = (N, V)>,
    len: usize,
) -> bool {
    ids.len() == len * 2 && symbols.with_resolver(|res| same_resolved(res, ids, pairs, len))
}

/// [`same_labels`] with the symbol table already read-locked.
#[inline(always)]
fn same_resolved<N: AsRef<[u8]>, V: AsRef<[u8]>>(
    res: &Resolver<'_>,
    ids: &[u32],
    pairs: impl Iterator<Item = (N, V)>,
    len: usize,
) -> bool {
    ids.len() == len * 2
        && ids.chunks_exact(2).zip(pairs).all(|(p, (n, v))| {
            same_bytes(res.get(p[0]).as_bytes(), n.as_ref())
                && same_bytes(res.get(p[1]).as_bytes(), v.as_ref())
        })
}

/// `a == b`, for label names and values: most are shorter than 33 bytes,
/// and those are compared by two (overlapping) loads each instead of a
/// call to `memcmp` (which was most of a label set's comparison).
#[inline(always)]
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    match a.len() {
        17..=32 => {
            a.first_chunk::<16>() == b.first_chunk::<16>()
                && a.last_chunk::<16>() == b.last_chunk::<16>()
        }
        8..=16 => {
            a.first_chunk::<8>() == b.first_chunk::<8>()
                && a.last_chunk::<8>() == b.last_chunk::<8>()
        }
        4..=7 => {
            a.first_chunk::<4>() == b.first_chunk::<4>()
                && a.last_chunk::<4>() == b.last_chunk::<4>()
        }
        // The first, middle and last bytes are every byte.
        1..=3 => {
            let n = a.len();
            a[0] == b[0] && a[n / 2] == b[n / 2] && a[n - 1] == b[n - 1]
        }
        _ => a == b,
    }
}

/// The checks [`Labels::validate`] makes, on pairs sorted by name.
fn check_pairs(pairs: &[(&str, &str)]) -> Result<(), LabelsError> {
    if pairs.is_empty() {
        return Err(LabelsError::Empty);
    }
    if let Some(w) = pairs.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(LabelsError::DuplicateName(w[0].0.to_owned()));
    }
    if let Some((_, v)) = pairs.iter().find(|(n, _)| n.is_empty()) {
        return Err(LabelsError::EmptyName((*v).to_owned()));
    }
    Ok(())
}

impl Drop for HeadAppender<'_> {
    fn drop(&mut self) {
        if !self.done && !self.new_series.is_empty() {
            if let Err(e) = self.log(false) {
                tracing::error!(error = %e, "logging series of a dropped appender failed");
            }
        }
        if !self.batches.is_empty() {
            self.batches.swap_remove(0).give_back();
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    proptest! {
        /// The word-load comparison answers as `==` at every length,
        /// whichever byte differs.
        #[test]
        fn same_bytes_is_equality(
            a in proptest::collection::vec(any::<u8>(), 0..40),
            flip in any::<proptest::sample::Index>(),
            other_len in 0usize..40,
        ) {
            prop_assert!(super::same_bytes(&a, &a.clone()));
            if !a.is_empty() {
                let mut b = a.clone();
                b[flip.index(a.len())] ^= 1;
                prop_assert!(!super::same_bytes(&a, &b));
            }
            let c: Vec<u8> = a.iter().copied().cycle().take(other_len).collect();
            prop_assert_eq!(super::same_bytes(&a, &c), a == c);
        }
    }
}
