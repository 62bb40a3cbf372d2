//! Replaying the out-of-order WAL (`wbl/`) after the WAL.
//!
//! The series exist by then (series records live in the WAL only), and
//! the out-of-order chunks found in `chunks_head/` are attached to them.
//! The WBL's records are applied in order, as Prometheus does: samples are
//! inserted into their series' in-memory out-of-order chunk (a full one is
//! written to `chunks_head/` again, as at append time), and an mmap marker
//! naming a chunk that the chunk files still hold means the samples before
//! it are in that chunk, so the in-memory chunk built from them is dropped.
//! A marker naming a chunk after the last one found on disk is ignored:
//! that chunk was lost (e.g. a crash before its file was flushed), and the
//! samples rebuilt from the WBL take its place.
//!
//! The WBL holds only samples, histograms and markers. A record type
//! Ferrite does not know stops the open before anything is changed
//! ([`check_wbl_kinds`], run first thing on open); a record that does not
//! decode is damage, repaired as the WAL's is (the WBL is cut there).

use std::path::Path;

use ferrite_model::resolution::ReduceResolution;
use ferrite_wal::record::{self, RecordType, RefMmapMarker};
use ferrite_wal::{list_segments, repair, Corruption, RecordReader, WalError};
use tracing::{error, warn};

use crate::error::{HeadError, Unsupported, UnsupportedKind};
use crate::head::series::MmappedChunk;
use crate::head::Head;
use crate::head_chunks::ChunkDiskMapperRef;
use crate::replay::replayable_histogram;
use crate::sample::SampleRef;

type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// What replaying the WBL did.
#[derive(Debug, Default, Clone)]
pub struct WblReplayStats {
    /// Out-of-order chunks of `chunks_head/` attached to their series.
    pub ooo_mmapped_chunks: u64,
    /// Out-of-order chunks of series the WAL does not have, dropped.
    pub ooo_mmapped_chunks_dropped: u64,
    /// WBL records read.
    pub records: u64,
    /// Out-of-order samples inserted.
    pub samples: u64,
    /// Samples (and markers) of series the WAL does not have, skipped.
    pub unknown_series: u64,
    /// Histograms of schemas Prometheus' decoder drops, skipped.
    pub unknown_schema_histograms: u64,
    /// Where the WBL was found damaged and cut, if it was.
    pub corruption: Option<Corruption>,
}

/// Attaches the out-of-order chunks found in `chunks_head/` (by series
/// ref, in file order) to their series.
pub(crate) fn attach_ooo_chunks(
    head: &Head,
    chunks: FastMap<u64, Vec<MmappedChunk>>,
    resolve: impl Fn(u64) -> u64,
    stats: &mut WblReplayStats,
) {
    for (r, list) in chunks {
        let Some(entry) = head.series.get(resolve(r)) else {
            stats.ooo_mmapped_chunks_dropped += list.len() as u64;
            continue;
        };
        stats.ooo_mmapped_chunks += list.len() as u64;
        let mut d = entry.data.lock();
        let ooo = d.ooo_or_default();
        for c in list {
            head.update_ooo_time_range(c.mint, c.maxt);
            ooo.mmapped.push(c);
        }
    }
    if stats.ooo_mmapped_chunks_dropped > 0 {
        warn!(
            chunks = stats.ooo_mmapped_chunks_dropped,
            "out-of-order head chunks of series absent from the WAL were dropped"
        );
    }
}

/// Replays `wbl_dir` into the head. `last_mmap_ref` is the last chunk
/// found in `chunks_head/`; `resolve` maps a series ref of a duplicate
/// series record to the series kept.
pub(crate) fn replay_wbl(
    head: &Head,
    wbl_dir: &Path,
    last_mmap_ref: ChunkDiskMapperRef,
    resolve: impl Fn(u64) -> u64,
    stats: &mut WblReplayStats,
) -> Result<(), HeadError> {
    if !wbl_dir.is_dir() {
        return Ok(());
    }
    let mut reader = RecordReader::open_dir(wbl_dir)?;
    let mut apply = WblApplier {
        head,
        last_mmap_ref,
        resolve,
        stats,
        scratch: Scratch::default(),
        mint: i64::MAX,
        maxt: i64::MIN,
    };
    let corruption = loop {
        let (segment, offset, result) = match reader.next_record() {
            Ok(Some(rec)) => {
                let r = apply.record(rec);
                (reader.segment(), reader.offset(), r)
            }
            Ok(None) => break None,
            Err(WalError::Corruption(c)) => break Some(c),
            Err(e) => return Err(e.into()),
        };
        match result {
            Ok(()) => {}
            Err(RecordFailure::Corrupt(e)) => {
                break Some(Corruption {
                    segment,
                    offset,
                    reason: format!("undecodable WBL record: {e}"),
                })
            }
            Err(RecordFailure::Unsupported(kind)) => {
                return Err(Unsupported {
                    kind,
                    file: ferrite_wal::segment_path(wbl_dir, segment),
                    series: None,
                    series_ref: None,
                }
                .into())
            }
        }
    };
    head.update_ooo_time_range(apply.mint, apply.maxt);
    if let Some(c) = corruption {
        error!(
            segment = c.segment,
            offset = c.offset,
            reason = %c.reason,
            "WBL is corrupt; truncating it at the first bad record and keeping everything before it"
        );
        repair(wbl_dir, &c)?;
        stats.corruption = Some(c);
    }
    if stats.unknown_series > 0 {
        warn!(
            entries = stats.unknown_series,
            "WBL samples or markers referenced series with no series record; skipped"
        );
    }
    Ok(())
}

/// Refuses a WBL holding record types Ferrite does not know, before
/// anything in the data directory is changed. Records that cannot be read
/// end the check: replay repairs them.
pub(crate) fn check_wbl_kinds(wbl_dir: &Path) -> Result<(), HeadError> {
    if !wbl_dir.is_dir() {
        return Ok(());
    }
    for seg in list_segments(wbl_dir)? {
        let path = seg.path.clone();
        let mut reader = RecordReader::new(vec![seg]);
        while let Ok(Some(rec)) = reader.next_record() {
            if let Some(kind) = unsupported_kind(rec) {
                return Err(Unsupported {
                    kind,
                    file: path,
                    series: None,
                    series_ref: None,
                }
                .into());
            }
        }
    }
    Ok(())
}

/// Why a WBL record is refused, if it is: a type Ferrite does not know.
fn unsupported_kind(rec: &[u8]) -> Option<UnsupportedKind> {
    match RecordType::of(rec) {
        RecordType::Unknown(b) if !rec.is_empty() => Some(UnsupportedKind::WalRecord(b)),
        _ => None,
    }
}

/// Why one WBL record could not be applied.
enum RecordFailure {
    /// It does not decode (the reason): damage, cut away.
    Corrupt(String),
    Unsupported(UnsupportedKind),
}

impl From<record::RecordError> for RecordFailure {
    fn from(e: record::RecordError) -> Self {
        RecordFailure::Corrupt(e.to_string())
    }
}

/// Decode buffers reused across records.
#[derive(Default)]
struct Scratch {
    samples: Vec<record::RefSample>,
    histograms: Vec<record::RefHistogramSample>,
    float_histograms: Vec<record::RefFloatHistogramSample>,
    markers: Vec<RefMmapMarker>,
}

struct WblApplier<'a, R: Fn(u64) -> u64> {
    head: &'a Head,
    last_mmap_ref: ChunkDiskMapperRef,
    resolve: R,
    stats: &'a mut WblReplayStats,
    scratch: Scratch,
    mint: i64,
    maxt: i64,
}

impl<R: Fn(u64) -> u64> WblApplier<'_, R> {
    fn record(&mut self, rec: &[u8]) -> Result<(), RecordFailure> {
        self.stats.records += 1;
        if rec.is_empty() {
            return Ok(());
        }
        let mut s = std::mem::take(&mut self.scratch);
        let res = self.apply_record(rec, &mut s);
        self.scratch = s;
        res
    }

    fn apply_record(&mut self, rec: &[u8], s: &mut Scratch) -> Result<(), RecordFailure> {
        match RecordType::of(rec) {
            RecordType::Samples | RecordType::SamplesV2 => {
                record::decode_samples(rec, &mut s.samples)?;
                for x in &s.samples {
                    self.insert(x.series_ref, x.t, SampleRef::Float(x.v));
                }
            }
            RecordType::HistogramSamples
            | RecordType::CustomBucketsHistogramSamples
            | RecordType::HistogramSamplesV2 => {
                record::decode_histogram_samples(rec, &mut s.histograms)?;
                for x in s.histograms.iter_mut() {
                    if self.readable(x.h.schema, || x.h.reduce_reserved_schema())? {
                        self.insert(x.series_ref, x.t, SampleRef::Histogram(&x.h));
                    }
                }
            }
            RecordType::FloatHistogramSamples
            | RecordType::CustomBucketsFloatHistogramSamples
            | RecordType::FloatHistogramSamplesV2 => {
                record::decode_float_histogram_samples(rec, &mut s.float_histograms)?;
                for x in s.float_histograms.iter_mut() {
                    if self.readable(x.h.schema, || x.h.reduce_reserved_schema())? {
                        self.insert(x.series_ref, x.t, SampleRef::FloatHistogram(&x.h));
                    }
                }
            }
            RecordType::MmapMarkers => {
                record::decode_mmap_markers(rec, &mut s.markers)?;
                for m in &s.markers {
                    self.marker(m);
                }
            }
            RecordType::Unknown(b) => {
                return Err(RecordFailure::Unsupported(UnsupportedKind::WalRecord(b)))
            }
            // Prometheus writes no other kinds to the WBL (and ignores
            // them there): they hold nothing replay could store.
            _ => {}
        }
        Ok(())
    }

    /// Whether replay stores a histogram of `schema`
    /// ([`replayable_histogram`]); skipped ones are counted, a layout the
    /// reduction refuses makes the record damage.
    fn readable(
        &mut self,
        schema: i32,
        reduce: impl FnOnce() -> Result<(), ferrite_model::HistogramError>,
    ) -> Result<bool, RecordFailure> {
        let readable = replayable_histogram(schema, reduce)
            .map_err(|e| RecordFailure::Corrupt(e.to_string()))?;
        if !readable {
            self.stats.unknown_schema_histograms += 1;
        }
        Ok(readable)
    }

    fn insert(&mut self, series_ref: u64, t: i64, v: SampleRef<'_>) {
        let head = self.head;
        let r = (self.resolve)(series_ref);
        let Some(entry) = head.series.get(r) else {
            self.stats.unknown_series += 1;
            return;
        };
        let res = entry.data.lock().insert_ooo(
            r,
            t,
            v,
            head.chunk_opts.float_encoding,
            usize::from(head.options().out_of_order_cap_max),
            &head.mapper,
        );
        if res.inserted {
            self.stats.samples += 1;
            self.mint = self.mint.min(t);
            self.maxt = self.maxt.max(t);
        }
    }

    /// A marker: the series' samples so far are in chunk `mmap_ref`, if
    /// the chunk files still hold it.
    fn marker(&mut self, m: &RefMmapMarker) {
        if m.mmap_ref > self.last_mmap_ref.0 {
            return;
        }
        let Some(entry) = self.head.series.get((self.resolve)(m.series_ref)) else {
            self.stats.unknown_series += 1;
            return;
        };
        let mut d = entry.data.lock();
        if let Some(ooo) = d.ooo_mut() {
            ooo.head = None;
        }
    }
}
