//! Appending to the head with commit/rollback.
//!
//! An appender collects samples, checking each against its series as
//! Prometheus does (out of bounds, out of order, duplicate timestamp with a
//! different value). `commit` writes the batch to the WAL first and only then
//! applies it, so a sample is visible only once it is durable in the WAL's
//! page cache. New series are created at `append` time (queries may see them
//! empty) and are logged to the WAL even on rollback, because they exist in
//! memory either way.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use ferrite_wal::record::{encode_samples, RefSample, SeriesRecordBuilder};
use parking_lot::Mutex;

use super::registry::{hash_labels, SeriesEntry};
use super::series::{Appendable, MemSeries};
use super::Head;
use crate::error::HeadError;
use crate::symbols::{Resolver, SymbolTable};
use ferrite_model::{Labels, LabelsError};

/// Why a sample was refused. The messages are Prometheus' own.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum AppendError {
    #[error("out of bounds")]
    OutOfBounds,
    #[error("out of order sample")]
    OutOfOrder,
    #[error("duplicate sample for timestamp {t}; overrides not allowed: existing {existing}, new value {new}")]
    DuplicateSample { t: i64, existing: f64, new: f64 },
    #[error(transparent)]
    InvalidLabels(#[from] LabelsError),
    #[error("unknown series ref {0}")]
    UnknownSeries(u64),
}

/// A batch of appends to the head.
pub struct HeadAppender<'h> {
    head: &'h Head,
    min_valid_time: i64,
    new_series: Vec<u64>,
    samples: Vec<RefSample>,
    entries: Vec<Arc<SeriesEntry>>,
    done: bool,
}

impl<'h> HeadAppender<'h> {
    pub(super) fn new(head: &'h Head) -> Self {
        HeadAppender {
            head,
            min_valid_time: head.appendable_min_valid_time(),
            new_series: Vec::new(),
            samples: Vec::new(),
            entries: Vec::new(),
            done: false,
        }
    }

    /// Appends a sample to the series with these labels, creating it if
    /// needed. Returns the series ref for faster later appends.
    pub fn append(&mut self, labels: &Labels, t: i64, v: f64) -> Result<u64, AppendError> {
        labels.validate()?;
        self.check_bounds(t)?;
        let pairs = labels
            .as_slice()
            .iter()
            .map(|l| (l.name.as_str(), l.value.as_str()));
        let (r, entry) = self.get_or_create(pairs, labels.len());
        self.append_entry(r, entry, t, v)?;
        Ok(r)
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
    pub fn find_existing(&self, sets: &[&[(&[u8], &[u8])]], out: &mut Vec<Option<FoundSeries>>) {
        let head = self.head;
        let hashes: Vec<u64> = sets
            .iter()
            .map(|ps| hash_labels(ps.iter().copied()))
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
                .map(|f| f.map(|(series_ref, entry)| FoundSeries { series_ref, entry })),
        );
    }

    /// Appends a sample to a series [`HeadAppender::find_existing`] found.
    pub fn append_found(&mut self, s: &FoundSeries, t: i64, v: f64) -> Result<u64, AppendError> {
        self.check_bounds(t)?;
        self.append_entry(s.series_ref, s.entry.clone(), t, v)?;
        Ok(s.series_ref)
    }

    /// Appends a sample to a series known by ref.
    pub fn append_ref(&mut self, series_ref: u64, t: i64, v: f64) -> Result<(), AppendError> {
        self.check_bounds(t)?;
        let entry = self
            .head
            .series
            .get(series_ref)
            .ok_or(AppendError::UnknownSeries(series_ref))?;
        self.append_entry(series_ref, entry, t, v)
    }

    fn check_bounds(&self, t: i64) -> Result<(), AppendError> {
        if t < self.min_valid_time {
            self.head
                .stats
                .out_of_bounds_samples
                .fetch_add(1, Ordering::Relaxed);
            return Err(AppendError::OutOfBounds);
        }
        Ok(())
    }

    fn get_or_create<'s>(
        &mut self,
        pairs: impl Iterator<Item = (&'s str, &'s str)> + Clone,
        len: usize,
    ) -> (u64, Arc<SeriesEntry>) {
        let head = self.head;
        let hash = hash_labels(pairs.clone());
        let same = |ids: &[u32]| same_labels(&head.symbols, ids, pairs.clone(), len);
        let (r, entry, created) = head.series.get_or_insert(hash, same, || {
            let mut ids = Vec::with_capacity(len * 2);
            head.symbols
                .intern_all(pairs.clone().flat_map(|(n, v)| [n, v]), &mut ids);
            let r = head.next_series_ref();
            let entry = Arc::new(SeriesEntry {
                labels: ids.into_boxed_slice(),
                data: Mutex::new(MemSeries::new()),
            });
            head.postings.write().add(r, &entry.labels);
            (r, entry)
        });
        if created {
            head.stats.series_created.fetch_add(1, Ordering::Relaxed);
            self.new_series.push(r);
        }
        (r, entry)
    }

    fn append_entry(
        &mut self,
        series_ref: u64,
        entry: Arc<SeriesEntry>,
        t: i64,
        v: f64,
    ) -> Result<(), AppendError> {
        let verdict = entry.data.lock().appendable(t, v);
        match verdict {
            Appendable::Yes => {}
            Appendable::Duplicate => return Ok(()),
            Appendable::OutOfOrder => {
                self.head
                    .stats
                    .out_of_order_samples
                    .fetch_add(1, Ordering::Relaxed);
                return Err(AppendError::OutOfOrder);
            }
            Appendable::Conflict { existing } => {
                self.head
                    .stats
                    .duplicate_samples
                    .fetch_add(1, Ordering::Relaxed);
                return Err(AppendError::DuplicateSample {
                    t,
                    existing,
                    new: v,
                });
            }
        }
        self.samples.push(RefSample {
            series_ref,
            st: 0,
            t,
            v,
        });
        self.entries.push(entry);
        Ok(())
    }

    /// Number of samples waiting for commit.
    pub fn pending(&self) -> usize {
        self.samples.len()
    }

    /// Writes the batch to the WAL, then makes it visible.
    pub fn commit(mut self) -> Result<(), HeadError> {
        self.done = true;
        self.log(true)?;
        let head = self.head;
        let (mut mint, mut maxt) = (i64::MAX, i64::MIN);
        let mut appended = 0u64;
        let mut rejected = 0u64;
        for (s, e) in self.samples.iter().zip(&self.entries) {
            let ok = e
                .data
                .lock()
                .append(s.series_ref, s.t, s.v, head.chunk_opts, &head.mapper);
            if ok {
                appended += 1;
                mint = mint.min(s.t);
                maxt = maxt.max(s.t);
            } else {
                rejected += 1;
            }
        }
        head.update_time_range(mint, maxt);
        head.stats
            .samples_appended
            .fetch_add(appended, Ordering::Relaxed);
        if rejected > 0 {
            head.stats
                .out_of_order_samples
                .fetch_add(rejected, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Drops the pending samples. Series created by this appender stay and are logged.
    pub fn rollback(mut self) -> Result<(), HeadError> {
        self.done = true;
        self.log(false)
    }

    fn log(&mut self, with_samples: bool) -> Result<(), HeadError> {
        let head = self.head;
        let mut wal = head.wal.lock();
        let Some(w) = wal.as_mut() else {
            return Ok(());
        };
        let mut series_rec = Vec::new();
        if !self.new_series.is_empty() {
            let mut b = SeriesRecordBuilder::new(&mut series_rec);
            head.symbols.with_resolver(|res| {
                let mut pairs: Vec<(&str, &str)> = Vec::new();
                for &r in &self.new_series {
                    if let Some(e) = head.series.get(r) {
                        pairs.clear();
                        pairs.extend(
                            e.labels
                                .chunks_exact(2)
                                .map(|p| (res.get(p[0]), res.get(p[1]))),
                        );
                        b.add(r, &pairs);
                    }
                }
            });
        }
        let mut samples_rec = Vec::new();
        if with_samples && !self.samples.is_empty() {
            encode_samples(&mut samples_rec, &self.samples);
        }
        let recs: Vec<&[u8]> = [series_rec.as_slice(), samples_rec.as_slice()]
            .into_iter()
            .filter(|r| !r.is_empty())
            .collect();
        if !recs.is_empty() {
            w.log(&recs)?;
        }
        Ok(())
    }
}

/// A series found by [`HeadAppender::find_existing`]; holding it keeps
/// the series from being garbage-collected.
pub struct FoundSeries {
    series_ref: u64,
    entry: Arc<SeriesEntry>,
}

impl FoundSeries {
    pub fn series_ref(&self) -> u64 {
        self.series_ref
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
fn same_resolved<N: AsRef<[u8]>, V: AsRef<[u8]>>(
    res: &Resolver<'_>,
    ids: &[u32],
    pairs: impl Iterator<Item = (N, V)>,
    len: usize,
) -> bool {
    ids.len() == len * 2
        && ids.chunks_exact(2).zip(pairs).all(|(p, (n, v))| {
            res.get(p[0]).as_bytes() == n.as_ref() && res.get(p[1]).as_bytes() == v.as_ref()
        })
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
    }
}
