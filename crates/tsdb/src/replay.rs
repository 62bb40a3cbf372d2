//! Rebuilding the head on open: `chunks_head/`, then the WAL checkpoint, then
//! the WAL segments.
//!
//! Why it is shaped this way: replay is what makes a Prometheus restart slow,
//! so it is a pipeline that keeps every core busy.
//!
//! 1. *Decoders* (one per core but one, plus the applier whenever it waits)
//!    read the WAL in page-aligned ranges of a segment in parallel
//!    (`ferrite_wal::ranges`): checksums, decompression, record decoding. Samples already inside m-mapped head chunks are
//!    dropped right there, and the rest are split by series shard, so on a
//!    normal restart most samples never leave the decoder.
//! 2. The *applier* (the calling thread) takes the decoded ranges in WAL
//!    order. It creates series (series must exist before their samples, and
//!    label interning is shared state) and hands each shard its samples.
//! 3. *Append workers* (one per core) each own a disjoint shard of the series
//!    (by ref) and append without a lock per sample. The WAL is in scrape
//!    order (each sample for another series), so a worker groups what it
//!    appends by series: float batches that hold several samples a series,
//!    and histogram samples, which it keeps (up to
//!    `PENDING_HISTOGRAM_BYTES`) before appending them series by series,
//!    prefetching the next series' chunk state.
//!
//! Ranges are decoded at most a few ahead of the applier, so memory stays
//! bounded whatever the WAL's size; sample buffers are recycled.
//!
//! A corrupt WAL is repaired: everything before the first bad record is kept,
//! the rest of that segment and all later segments are dropped, and the open
//! continues (as Prometheus does).
//!
//! Data Ferrite cannot store is never skipped or repaired away, since the
//! next checkpoint and truncation would lose it for good: record types it
//! does not know (from a newer writer) and head chunks of unknown encodings
//! stop the open with [`crate::error::Unsupported`] before anything is
//! changed (head chunk files are checked before any is cut). Every record
//! type and chunk encoding of Prometheus v3.16 is read, out-of-order chunks
//! included (their samples are attached after the WAL, with the WBL's:
//! `crate::replay_wbl`).
//! A record or chunk that fails its checksum, or a histogram record that
//! does not decode, is damage as above. Exemplar, metadata and mmap marker
//! records are skipped: the head does not keep them, but the checkpoint
//! reads them from the WAL files (as Prometheus' does), so they are not lost.
//!
//! Prometheus v3.16 writes a `min_valid_time` record first in every
//! checkpoint: the time its WAL truncation used. It is read before the head
//! chunks ([`read_min_valid_time`]); the head's min valid time becomes the
//! higher of it and the newest block's end, as in v3.16's `DB.open`, and WAL
//! samples before it, head chunks ending before it and tombstone intervals
//! ending before it are dropped, as v3.16's replay does.

use std::path::Path;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Condvar;
use std::time::{Duration, Instant};
use thin_vec::ThinVec;

use ferrite_model::HistogramError;
use ferrite_wal::checkpoint::{read_min_valid_time, replay_sources};
use ferrite_wal::record::{self, RecordType, RefSample};
use ferrite_wal::{
    list_segments, repair, split_segments, stitch, RangeEnd, SegmentRange, WalError,
};
use parking_lot::MutexGuard;
use tracing::{error, info, warn};

use crate::counting_sort::group_by_slot;
use crate::error::{HeadError, Unsupported, UnsupportedKind};
use crate::head::registry::{hash_labels, SeriesEntry};
use crate::head::series::{MemSeries, MmappedChunk};
use crate::head::Head;
use crate::head_chunks::ChunkDiskMapperRef;
use crate::replay_wbl::{attach_ooo_chunks, replay_wbl, WblReplayStats};
use ferrite_model::prefetch::{prefetch, prefetch_lines};

mod buffers;
use buffers::{DecodedHistogram, HistogramBatch, Pool, Pools, Recycle, Scratch};

type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// What an open found and did.
#[derive(Debug, Default, Clone)]
pub struct ReplayStats {
    pub duration: Duration,
    pub mmapped_chunks: u64,
    pub mmapped_chunks_dropped: u64,
    /// Head chunks older than the newest block (already persisted), skipped.
    pub mmapped_chunks_in_blocks: u64,
    /// The out-of-order part: `chunks_head/`'s out-of-order chunks and
    /// the WBL (see [`crate::replay_wbl`]).
    pub wbl: WblReplayStats,
    pub checkpoint: Option<u32>,
    /// The min valid time the newest checkpoint recorded (v3.16's
    /// `min_valid_time` record), if it has one.
    pub checkpoint_min_valid_time: Option<i64>,
    pub segments: u32,
    pub records: u64,
    pub series: u64,
    pub duplicate_series_refs: u64,
    pub samples: u64,
    pub samples_in_mmapped_chunks: u64,
    pub samples_unknown_series: u64,
    pub samples_out_of_order: u64,
    pub tombstones: u64,
    /// Entries of records the head does not keep (exemplars, metadata, mmap
    /// markers, empty records), skipped: (kind, count). Kinds whose data
    /// would be lost stop the replay instead.
    pub skipped: Vec<(&'static str, u64)>,
    pub corruption: Option<ferrite_wal::Corruption>,
}

impl ReplayStats {
    fn skip(&mut self, kind: &'static str, n: u64) {
        if n == 0 {
            return;
        }
        match self.skipped.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, c)) => *c += n,
            None => self.skipped.push((kind, n)),
        }
    }
}

/// WAL bytes per decoding range: small enough that the ranges in flight
/// stay a few MB (512 KiB held 7 MB more at the peak of shape (b)'s
/// replay), large enough that handing them over costs little.
const DEFAULT_RANGE_BYTES: u64 = 256 * 1024;
/// Ranges decoded ahead of the applier, per decoding thread (the applier
/// decodes too while it waits). Each is ~0.5 MB of samples in flight.
const AHEAD_PER_THREAD: usize = 1;

// ---------------------------------------------------------------------------
// Samples inside m-mapped chunks

/// A value per series ref, `missing` for refs never set. Prometheus hands
/// out refs densely from 1, so a plain array indexed by ref is the common
/// case; sparse refs fall back to a map.
struct RefTable<T: Copy> {
    dense: Vec<T>,
    sparse: FastMap<u64, T>,
    missing: T,
}

impl<T: Copy> RefTable<T> {
    const DENSE_LIMIT: u64 = 1 << 26;

    fn new(missing: T) -> Self {
        RefTable {
            dense: Vec::new(),
            sparse: FastMap::default(),
            missing,
        }
    }

    #[inline]
    fn get(&self, r: u64) -> T {
        let v = if r < Self::DENSE_LIMIT {
            self.dense.get(r as usize)
        } else {
            self.sparse.get(&r)
        };
        v.copied().unwrap_or(self.missing)
    }

    fn insert(&mut self, r: u64, v: T) {
        if r < Self::DENSE_LIMIT {
            let r = r as usize;
            if r >= self.dense.len() {
                self.dense.resize((r + 1).next_power_of_two(), self.missing);
            }
            self.dense[r] = v;
        } else {
            self.sparse.insert(r, v);
        }
    }
}

// ---------------------------------------------------------------------------
// Decoding (parallel)

/// Decoded content of one WAL range, in record order.
#[derive(Default)]
struct DecodedRange {
    events: Vec<Event>,
    end: RangeEnd,
    records: u64,
    in_mmapped: u64,
    skipped: ReplayStats,
    /// A record Ferrite cannot store ended the range: the replay stops
    /// after applying what came before it.
    unsupported: Option<Box<Unsupported>>,
}

enum Event {
    /// A series record, checked to decode.
    Series(Vec<u8>),
    Tombstones(Vec<record::Stone>),
    /// Samples per shard, and the shard of each in WAL order.
    Samples(Vec<Vec<RefSample>>, Route),
    /// Histogram samples (integer and float) per shard, and the shard of
    /// each in WAL order.
    Histograms(Vec<HistogramBatch>, Route),
}

/// The shard of each sample of an event, in WAL order: with it the
/// applier can walk an event's samples in WAL order (to move those of
/// aliased refs to their series' shard without reordering them).
type Route = Vec<u16>;

/// Samples a decoder has split by shard and not yet made an event: floats
/// or histograms (a record of the other kind ends them), so events keep
/// the WAL's order between kinds.
#[derive(Default)]
struct PendingShards {
    floats: Vec<Vec<RefSample>>,
    histograms: Vec<HistogramBatch>,
    route: Route,
}

/// Reused decode buffers of one decoder.
#[derive(Default)]
struct DecodeScratch {
    exemplars: Vec<record::RefExemplar>,
    metadata: Vec<record::RefMetadata>,
    markers: Vec<record::RefMmapMarker>,
    histograms: Vec<record::RefHistogramSample>,
    float_histograms: Vec<record::RefFloatHistogramSample>,
}

struct Decoder<'a> {
    shards: usize,
    skip_until: &'a RefTable<i64>,
    pools: &'a Pools,
    scratch: DecodeScratch,
    pending: PendingShards,
    /// Shard lengths before the record being decoded.
    lens: Vec<usize>,
}

impl Decoder<'_> {
    fn decode(&mut self, range: &SegmentRange) -> Result<DecodedRange, HeadError> {
        let mut out = DecodedRange::default();
        let mut reader = range.reader();
        let result = loop {
            let rec = match reader.next_record() {
                Ok(Some(rec)) => rec,
                Ok(None) => break Ok(()),
                Err(WalError::Corruption(c)) => break Err(c),
                Err(e) => return Err(e.into()),
            };
            // A record with a valid checksum that does not decode is damage
            // all the same: repair at its start, as Prometheus does. A
            // record of a kind Ferrite cannot store stops the replay with
            // nothing repaired (see `Unsupported`).
            match self.record(rec, &mut out) {
                Ok(()) => {}
                Err(RecordFailure::Corrupt(e)) => {
                    break Err(ferrite_wal::Corruption {
                        segment: reader.segment(),
                        offset: reader.offset(),
                        reason: format!("undecodable record: {e}"),
                    });
                }
                Err(RecordFailure::Unsupported {
                    type_byte,
                    series_ref,
                }) => {
                    // The records before it are applied first, so the
                    // error can name the series.
                    out.unsupported = Some(Box::new(Unsupported {
                        kind: UnsupportedKind::WalRecord(type_byte),
                        file: range.segment.path.clone(),
                        series: None,
                        series_ref,
                    }));
                    break Ok(());
                }
            }
            out.records += 1;
        };
        self.flush(&mut out);
        out.end = RangeEnd::of(&reader, out.records, result);
        Ok(out)
    }

    /// [`Self::decode`], with a panic turned into an error: the applier
    /// waits for every range in turn, so one must always be delivered.
    fn decode_guarded(&mut self, range: &SegmentRange) -> Result<DecodedRange, HeadError> {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.decode(range)))
            .unwrap_or_else(|_| Err(HeadError::Replay("a WAL decoder panicked".into())))
    }

    /// Makes the pending samples an event (at most one kind is pending);
    /// shards that stayed empty go back to their pool.
    fn flush(&mut self, out: &mut DecodedRange) {
        let (p, pools) = (&mut self.pending, self.pools);
        if let Some(shards) = take_filled(&mut p.floats, &pools.samples) {
            out.events
                .push(Event::Samples(shards, std::mem::take(&mut p.route)));
        }
        if let Some(shards) = take_filled(&mut p.histograms, &pools.histograms) {
            out.events
                .push(Event::Histograms(shards, std::mem::take(&mut p.route)));
        }
        p.route.clear();
    }

    /// Makes histogram shards pending (after any pending floats).
    fn start_histograms(&mut self, out: &mut DecodedRange) {
        if self.pending.histograms.is_empty() {
            self.flush(out);
            let pool = &self.pools.histograms;
            self.pending
                .histograms
                .extend((0..self.shards).map(|_| pool.take()));
        }
    }

    fn record(&mut self, rec: &[u8], out: &mut DecodedRange) -> Result<(), RecordFailure> {
        if rec.is_empty() {
            // No type at all: nothing to lose.
            out.skipped.skip("empty records", 1);
            return Ok(());
        }
        match RecordType::of(rec) {
            RecordType::Series => {
                record::decode_series(rec, |_, _| {})?;
                self.flush(out);
                out.events.push(Event::Series(rec.to_vec()));
            }
            // A v2 record's start timestamps are not stored: float chunks
            // are XOR, as in Prometheus without its `st-storage` feature.
            RecordType::Samples | RecordType::SamplesV2 => {
                if self.pending.floats.is_empty() {
                    self.flush(out);
                    let pool = &self.pools.samples;
                    self.pending
                        .floats
                        .extend((0..self.shards).map(|_| pool.take()));
                }
                let (samples, route) = (&mut self.pending.floats, &mut self.pending.route);
                let lens = &mut self.lens;
                lens.clear();
                lens.extend(samples.iter().map(Vec::len));
                let routed = route.len();
                let (shards, skip) = (self.shards as u64, self.skip_until);
                let mut in_mmapped = 0;
                let res = record::for_each_sample(rec, |series_ref, t, v| {
                    // Per ref: samples at or before this time are in m-mapped chunks.
                    if t <= skip.get(series_ref) {
                        in_mmapped += 1;
                        return;
                    }
                    let shard = series_ref % shards;
                    if let Some(samples) = samples.get_mut(shard as usize) {
                        samples.push(RefSample {
                            series_ref,
                            st: 0,
                            t,
                            v,
                        });
                        route.push(shard as u16);
                    }
                });
                if let Err(e) = res {
                    for (shard, &len) in samples.iter_mut().zip(lens.iter()) {
                        shard.truncate(len);
                    }
                    route.truncate(routed);
                    return Err(e.into());
                }
                out.in_mmapped += in_mmapped;
            }
            RecordType::Tombstones => {
                let mut stones = Vec::new();
                record::decode_tombstones(rec, &mut stones)?;
                self.flush(out);
                out.events.push(Event::Tombstones(stones));
            }
            RecordType::Exemplars => {
                let s = &mut self.scratch;
                record::decode_exemplars(rec, &mut s.exemplars)?;
                out.skipped.skip("exemplars", s.exemplars.len() as u64);
            }
            RecordType::Metadata => {
                let s = &mut self.scratch;
                record::decode_metadata(rec, &mut s.metadata)?;
                out.skipped.skip("metadata", s.metadata.len() as u64);
            }
            RecordType::MmapMarkers => {
                let s = &mut self.scratch;
                record::decode_mmap_markers(rec, &mut s.markers)?;
                out.skipped.skip("mmap markers", s.markers.len() as u64);
            }
            // Native histograms (start timestamps, in v2 records, are not
            // stored: histogram chunks hold none). They are applied in WAL
            // order after the float samples before them.
            RecordType::HistogramSamples
            | RecordType::CustomBucketsHistogramSamples
            | RecordType::HistogramSamplesV2 => {
                record::decode_histogram_samples(rec, &mut self.scratch.histograms)?;
                self.start_histograms(out);
                keep_histograms(
                    &mut self.scratch.histograms,
                    &mut self.pending.histograms,
                    &mut self.pending.route,
                    self.skip_until,
                    out,
                    &mut self.lens,
                )?;
            }
            RecordType::FloatHistogramSamples
            | RecordType::CustomBucketsFloatHistogramSamples
            | RecordType::FloatHistogramSamplesV2 => {
                record::decode_float_histogram_samples(rec, &mut self.scratch.float_histograms)?;
                self.start_histograms(out);
                keep_histograms(
                    &mut self.scratch.float_histograms,
                    &mut self.pending.histograms,
                    &mut self.pending.route,
                    self.skip_until,
                    out,
                    &mut self.lens,
                )?;
            }
            // Read before replay starts (`read_min_valid_time`): a
            // checkpoint's first record. Checked to decode, else ignored,
            // as Prometheus v3.16's replay does.
            RecordType::MinValidTime => {
                record::decode_min_valid_time(rec)?;
            }
            // Types newer than v3.16.
            typ @ RecordType::Unknown(_) => {
                return Err(RecordFailure::Unsupported {
                    type_byte: typ.as_u8(),
                    series_ref: None,
                });
            }
        }
        Ok(())
    }
}

/// What replay (of the WAL and of the WBL) does with a decoded histogram
/// of `schema`, as Prometheus' decoder: `false` for a schema it does not
/// know (skipped), else `true` once `reduce` brought a schema reserved for
/// finer resolution (9..=52) down to 8; its error for a layout the
/// reduction refuses makes the record undecodable.
pub(crate) fn replayable_histogram(
    schema: i32,
    reduce: impl FnOnce() -> Result<(), HistogramError>,
) -> Result<bool, HistogramError> {
    if !ferrite_model::histogram::is_known_schema(schema) {
        return Ok(false);
    }
    reduce()?;
    Ok(true)
}

/// The pending shards, unless all are empty (then given back to `pool`).
fn take_filled<T: Recycle>(shards: &mut Vec<T>, pool: &Pool<T>) -> Option<Vec<T>> {
    let shards = std::mem::take(shards);
    if shards.iter().all(T::is_empty) {
        for b in shards {
            pool.give(b);
        }
        return None;
    }
    Some(shards)
}

/// Moves the histogram samples of a decoded record that replay applies
/// into their shards, as Prometheus v3.16's WAL decoder and replay have
/// them: those of schemas it does not know are skipped (and counted),
/// those of the schemas it reserves for finer resolution (9..=52, from a
/// newer writer) reduced to schema 8, those already in m-mapped head
/// chunks (or before the min valid time) dropped. A histogram whose layout
/// the reduction refuses makes the record undecodable, as in Prometheus:
/// then none of the record's samples stays in the shards.
fn keep_histograms<S: DecodedHistogram>(
    decoded: &mut [S],
    shards: &mut [HistogramBatch],
    route: &mut Route,
    skip_until: &RefTable<i64>,
    out: &mut DecodedRange,
    lens: &mut Vec<usize>,
) -> Result<(), Undecodable> {
    lens.clear();
    lens.extend(shards.iter().map(HistogramBatch::len));
    let routed = route.len();
    let n_shards = shards.len().max(1) as u64;
    let mut unknown = 0u64;
    let mut in_mmapped = 0u64;
    for (n, s) in decoded.iter_mut().enumerate() {
        let replayed = replayable_histogram(s.schema(), || s.reduce_reserved_schema());
        let replayed = match replayed {
            Ok(r) => r,
            Err(source) => {
                for (shard, &len) in shards.iter_mut().zip(lens.iter()) {
                    shard.truncate(len);
                }
                route.truncate(routed);
                return Err(Undecodable::Reduction {
                    number: n + 1 - unknown as usize,
                    source,
                });
            }
        };
        if !replayed {
            unknown += 1;
        } else if s.t() <= skip_until.get(s.series_ref()) {
            in_mmapped += 1;
        } else {
            let shard = s.series_ref() % n_shards;
            if let Some(batch) = shards.get_mut(shard as usize) {
                s.push_into(batch);
                route.push(shard as u16);
            }
        }
    }
    out.skipped.skip("histograms of unknown schemas", unknown);
    out.in_mmapped += in_mmapped;
    Ok(())
}

/// Why a record with a valid checksum does not decode.
#[derive(Debug, thiserror::Error)]
enum Undecodable {
    #[error(transparent)]
    Record(#[from] record::RecordError),
    /// Prometheus' decoder's words.
    #[error("error reducing resolution of histogram #{number}: {source}")]
    Reduction {
        number: usize,
        #[source]
        source: HistogramError,
    },
}

/// Why one WAL record could not be replayed.
enum RecordFailure {
    /// It does not decode: damage, repaired like a bad checksum.
    Corrupt(Undecodable),
    /// A kind Ferrite cannot store yet: the open stops, nothing repaired.
    Unsupported {
        type_byte: u8,
        series_ref: Option<u64>,
    },
}

impl From<record::RecordError> for RecordFailure {
    fn from(e: record::RecordError) -> Self {
        RecordFailure::Corrupt(e.into())
    }
}

impl From<Undecodable> for RecordFailure {
    fn from(e: Undecodable) -> Self {
        RecordFailure::Corrupt(e)
    }
}

/// Hands decoded ranges to the applier in order, with decoders at most a
/// few ranges ahead.
struct RangeQueue {
    state: std::sync::Mutex<QueueState>,
    changed: Condvar,
    ahead: usize,
    total: usize,
    stop: AtomicBool,
}

struct QueueState {
    next_to_decode: usize,
    next_to_apply: usize,
    done: FastMap<usize, Result<DecodedRange, HeadError>>,
}

impl RangeQueue {
    fn lock(&self) -> std::sync::MutexGuard<'_, QueueState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The next range index for a decoder; `None` when there is no more work.
    fn claim(&self) -> Option<usize> {
        let mut st = self.lock();
        loop {
            if self.stop.load(Ordering::Relaxed) || st.next_to_decode >= self.total {
                return None;
            }
            if st.next_to_decode < st.next_to_apply + self.ahead {
                st.next_to_decode += 1;
                return Some(st.next_to_decode - 1);
            }
            st = self.changed.wait(st).unwrap_or_else(|p| p.into_inner());
        }
    }

    fn done(&self, i: usize, r: Result<DecodedRange, HeadError>) {
        self.lock().done.insert(i, r);
        self.changed.notify_all();
    }

    /// Waits for range `i` (ranges are taken in order), decoding ranges
    /// with `decode` meanwhile instead of idling.
    fn take(
        &self,
        i: usize,
        mut decode: impl FnMut(usize) -> Result<DecodedRange, HeadError>,
    ) -> Result<DecodedRange, HeadError> {
        let mut st = self.lock();
        loop {
            if let Some(r) = st.done.remove(&i) {
                st.next_to_apply = i + 1;
                drop(st);
                self.changed.notify_all();
                return r;
            }
            let j = st.next_to_decode;
            if j < self.total && j < st.next_to_apply + self.ahead {
                st.next_to_decode += 1;
                drop(st);
                let r = decode(j);
                st = self.lock();
                st.done.insert(j, r);
                self.changed.notify_all();
                continue;
            }
            st = self.changed.wait(st).unwrap_or_else(|p| p.into_inner());
        }
    }

    fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
        self.changed.notify_all();
    }
}

fn run_decoder(queue: &RangeQueue, ranges: &[Source], mut decoder: Decoder<'_>) {
    while let Some(i) = queue.claim() {
        let r = decoder.decode_guarded(&ranges[i].range);
        queue.done(i, r);
    }
}

// ---------------------------------------------------------------------------
// Appending (parallel, one shard of the series each)

enum Msg {
    Series(Vec<SeriesEntry>),
    Samples(Vec<RefSample>),
    Histograms(HistogramBatch),
}

/// A series of this worker's shard. The worker locks the series' mutex when
/// the series is registered and keeps it locked until replay ends, so it can
/// append through `data` without a lock per sample and without a second copy
/// of the series (the per-worker table stays 16 bytes per series).
struct WorkerSeries {
    entry: SeriesEntry,
    /// Points into `entry.data`, whose lock this worker holds.
    data: NonNull<MemSeries>,
}

impl WorkerSeries {
    fn data(&self) -> &MemSeries {
        // SAFETY: `entry` keeps the pointee alive, and this worker holds its
        // lock (leaked guard, see `Worker::add_series`), so no other
        // reference to it exists.
        unsafe { self.data.as_ref() }
    }

    fn data_mut(&mut self) -> &mut MemSeries {
        // SAFETY: as in `data`; `&mut self` makes this the only reference.
        unsafe { self.data.as_mut() }
    }
}

#[derive(Default)]
struct WorkerResult {
    samples: u64,
    unknown: u64,
    out_of_order: u64,
    mmapped_dropped: u64,
    mint: i64,
    maxt: i64,
}

/// `Worker::index` value of refs not in the shard.
const NO_SLOT: u32 = u32::MAX;

/// One append worker's state: the series of its shard and reused buffers.
struct Worker<'h> {
    head: &'h Head,
    pools: &'h Pools,
    index: RefTable<u32>,
    series: Vec<WorkerSeries>,
    /// This batch's samples resolved to series slots: (slot, t, v, ref).
    mine: Vec<(u32, i64, f64, u64)>,
    /// `mine` grouped by slot, and the counting sort's counters.
    grouped: Vec<(u32, i64, f64, u64)>,
    counts: Vec<u32>,
    /// Runs of one series in `grouped`: (slot, start, end).
    runs: Vec<(u32, u32, u32)>,
    pending: PendingHistograms,
    res: WorkerResult,
}

/// Histogram samples a worker keeps before appending them grouped by
/// series: with ~3 per series of a 10,000-series shard, each series' chunk
/// state is loaded once for several samples (~15 MB of decoded histograms).
const PENDING_HISTOGRAM_BYTES: usize = 16 << 20;

/// Histogram samples received and not yet appended.
#[derive(Default)]
struct PendingHistograms {
    /// The samples received, in WAL order (received batches are copied in
    /// and given back at once, so only this one grows).
    batch: HistogramBatch,
    scratch: Scratch,
    /// (series slot, index in `batch`) of the samples of known series, in
    /// WAL order.
    order: Vec<(u32, u32)>,
    /// `order` grouped by slot.
    grouped: Vec<(u32, u32)>,
    /// Per slot, the flush its latest pending sample waits for: a slot
    /// holds pending samples when its mark equals `flush`.
    marks: Vec<u32>,
    /// The number of the next flush (from 1, so unmarked slots are 0).
    flush: u32,
}

impl PendingHistograms {
    fn mark(&mut self, slot: u32) {
        let slot = slot as usize;
        if slot >= self.marks.len() {
            self.marks.resize(slot + 1, 0);
        }
        self.marks[slot] = self.flush;
    }

    fn is_pending(&self, slot: u32) -> bool {
        self.marks.get(slot as usize) == Some(&self.flush)
    }

    /// Starts the next flush's marks (all slots unmarked again).
    fn next_flush(&mut self) {
        self.flush = self.flush.wrapping_add(1);
        if self.flush == 0 {
            self.marks.fill(0);
            self.flush = 1;
        }
    }
}

impl Worker<'_> {
    fn add_series(
        &mut self,
        list: Vec<SeriesEntry>,
        mmapped: &mut FastMap<u64, ThinVec<MmappedChunk>>,
    ) {
        for entry in list {
            let r = entry.series_ref();
            if self.index.get(r) != NO_SLOT {
                continue;
            }
            // Held until the worker finishes (end of `run_worker`): nobody
            // else touches series data during replay, and holding the lock
            // makes that exclusivity sound.
            let data = NonNull::from(MutexGuard::leak(entry.data.lock()));
            let mut ws = WorkerSeries { entry, data };
            if let Some(chunks) = mmapped.remove(&r) {
                ws.data_mut().mmapped = chunks;
            }
            self.index.insert(r, self.series.len() as u32);
            self.series.push(ws);
        }
    }

    /// Takes a batch of histogram samples: each is resolved to its series
    /// now (a ref unknown at this point of the WAL stays unknown) and kept
    /// until enough are pending to append them grouped by series
    /// ([`Self::flush_histograms`]).
    fn take_histograms(&mut self, batch: HistogramBatch) {
        let p = &mut self.pending;
        let base = p.batch.len();
        for (k, series_ref) in batch.refs().enumerate() {
            match self.index.get(series_ref) {
                NO_SLOT => self.res.unknown += 1,
                slot => {
                    p.order.push((slot, (base + k) as u32));
                    p.mark(slot);
                }
            }
        }
        p.batch.append(&batch);
        self.pools.histograms.give(batch);
        if p.batch.bytes() >= PENDING_HISTOGRAM_BYTES {
            self.flush_histograms();
        }
    }

    /// Appends the pending histogram samples grouped by series (stably: a
    /// series' samples keep their WAL order), so each series' chunk state
    /// is loaded once per flush rather than once per sample, and keeps
    /// each series' last appended one as its newest value.
    fn flush_histograms(&mut self) {
        let (opts, mapper) = (self.head.chunk_opts, &self.head.mapper);
        let p = &mut self.pending;
        group_by_slot(
            &p.order,
            |m| m.0,
            self.series.len(),
            &mut self.counts,
            &mut p.grouped,
        );
        let runs = &mut self.runs;
        runs.clear();
        let mut start = 0;
        while start < p.grouped.len() {
            let slot = p.grouped[start].0;
            let run = p.grouped[start..]
                .iter()
                .take_while(|m| m.0 == slot)
                .count();
            runs.push((slot, start as u32, (start + run) as u32));
            start += run;
        }
        let (series, res, batch) = (&mut self.series, &mut self.res, &p.batch);
        let scratch = &mut p.scratch;
        for (n, &(slot, start, end)) in runs.iter().enumerate() {
            prefetch_histogram_series(series, runs, n);
            let data = series[slot as usize].data_mut();
            let mut newest = None;
            let (start, end) = (start as usize, end as usize);
            for (i, &(_, k)) in p.grouped[start..end].iter().enumerate() {
                // Pending samples are read out of order: their fixed parts
                // two stages ahead, then their buckets.
                if let Some(&(_, far)) = p.grouped.get(start + i + 16) {
                    batch.prefetch(far as usize, false);
                }
                if let Some(&(_, near)) = p.grouped.get(start + i + 8) {
                    batch.prefetch(near as usize, true);
                }
                let Some((series_ref, t, v)) = batch.load(k as usize, scratch) else {
                    continue;
                };
                if data.append_histogram_unrecorded(series_ref, t, v, opts, mapper) {
                    res.samples += 1;
                    newest = Some(k);
                } else {
                    res.out_of_order += 1;
                }
            }
            if let Some((_, _, v)) = newest.and_then(|k| batch.load(k as usize, scratch)) {
                data.record_last(v);
            }
        }
        p.order.clear();
        p.batch.recycle();
        p.next_flush();
    }

    fn apply(&mut self, samples: &[RefSample]) {
        self.mine.clear();
        for s in samples {
            match self.index.get(s.series_ref) {
                NO_SLOT => self.res.unknown += 1,
                i => self.mine.push((i, s.t, s.v, s.series_ref)),
            }
        }
        // A series' floats come after its pending histograms (WAL order);
        // floats of other series need not wait for them.
        if self.mine.iter().any(|m| self.pending.is_pending(m.0)) {
            self.flush_histograms();
        }
        // Each sample touches a different series (the WAL is in scrape
        // order), and waiting on those cache misses one at a time dominates
        // replay. When the batch holds several samples per series, group
        // them by series (stably: a series' samples keep their order) so
        // each series is loaded once per batch; otherwise prefetch ahead.
        if self.mine.len() >= self.series.len() {
            self.group_by_series();
            self.append_grouped();
        } else {
            self.append_prefetching();
        }
    }

    fn group_by_series(&mut self) {
        group_by_slot(
            &self.mine,
            |m| m.0,
            self.series.len(),
            &mut self.counts,
            &mut self.grouped,
        );
    }

    fn append_grouped(&mut self) {
        let (opts, mapper) = (self.head.chunk_opts, &self.head.mapper);
        let (grouped, series, res) = (&self.grouped, &mut self.series, &mut self.res);
        let runs = &mut self.runs;
        runs.clear();
        let mut k = 0;
        while k < grouped.len() {
            let i = grouped[k].0;
            let end = k + grouped[k..].iter().take_while(|m| m.0 == i).count();
            runs.push((i, k as u32, end as u32));
            k = end;
        }
        for (n, &(i, start, end)) in runs.iter().enumerate() {
            // Two stages ahead: the series two runs on, then the open chunk
            // of the next one (whose series was fetched a run ago).
            if let Some(&(j, ..)) = runs.get(n + 2) {
                let p = series[j as usize].data.as_ptr() as *const u8;
                prefetch(p);
                prefetch(p.wrapping_add(64));
            }
            if let Some(&(j, ..)) = runs.get(n + 1) {
                if let Some(c) = &series[j as usize].data().open {
                    prefetch(c.chunk.tail_ptr());
                    prefetch(c.chunk.bytes().as_ptr());
                }
            }
            let s = series[i as usize].data_mut();
            for &(_, t, v, r) in &grouped[start as usize..end as usize] {
                if s.append(r, t, v, opts, mapper) {
                    res.samples += 1;
                } else {
                    res.out_of_order += 1;
                }
            }
        }
    }

    fn append_prefetching(&mut self) {
        let (opts, mapper) = (self.head.chunk_opts, &self.head.mapper);
        let (mine, series) = (&self.mine, &mut self.series);
        for k in 0..mine.len() {
            if let Some(&(i, ..)) = mine.get(k + 16) {
                let p = series[i as usize].data.as_ptr() as *const u8;
                prefetch(p);
                prefetch(p.wrapping_add(64));
                prefetch(p.wrapping_add(128));
            }
            if let Some(&(i, ..)) = mine.get(k + 8) {
                if let Some(c) = &series[i as usize].data().open {
                    // The append writes the tail and the count header.
                    prefetch(c.chunk.tail_ptr());
                    prefetch(c.chunk.bytes().as_ptr());
                }
            }
            let (i, t, v, r) = mine[k];
            if series[i as usize].data_mut().append(r, t, v, opts, mapper) {
                self.res.samples += 1;
            } else {
                self.res.out_of_order += 1;
            }
        }
    }
}

/// Prefetches what the appends of the runs after run `n` touch first, in
/// three stages (each reads what the one before fetched): the series
/// three runs on, its boxed chunk two runs on, the chunk's tail and
/// encoder state one run on. A histogram append otherwise waits on some
/// twenty cache misses in turn when it starts on a series.
fn prefetch_histogram_series(series: &[WorkerSeries], runs: &[(u32, u32, u32)], n: usize) {
    let ahead = |k: usize| {
        let &(slot, ..) = runs.get(n + k)?;
        series.get(slot as usize)
    };
    if let Some(ws) = ahead(3) {
        prefetch_lines(ws.data.as_ptr(), 3);
    }
    if let Some(ws) = ahead(2) {
        ws.data().prefetch_far();
    }
    if let Some(ws) = ahead(1) {
        ws.data().prefetch_near();
    }
}

/// Calls `f(shard, index in shard)` for each sample of an event, in WAL
/// order (`route`: the shard of each).
fn in_wal_order(route: &[u16], shards: usize, mut f: impl FnMut(usize, usize)) {
    let mut next = vec![0usize; shards];
    for &shard in route {
        if let Some(k) = next.get_mut(shard as usize) {
            f(shard as usize, *k);
            *k += 1;
        }
    }
}

fn run_worker(
    head: &Head,
    rx: Receiver<Msg>,
    pools: &Pools,
    mut mmapped: FastMap<u64, ThinVec<MmappedChunk>>,
) -> WorkerResult {
    let mut w = Worker {
        head,
        pools,
        index: RefTable::new(NO_SLOT),
        series: Vec::new(),
        mine: Vec::new(),
        grouped: Vec::new(),
        counts: Vec::new(),
        runs: Vec::new(),
        pending: PendingHistograms {
            flush: 1,
            ..PendingHistograms::default()
        },
        res: WorkerResult {
            mint: i64::MAX,
            maxt: i64::MIN,
            ..Default::default()
        },
    };
    for msg in rx {
        match msg {
            Msg::Series(list) => w.add_series(list, &mut mmapped),
            Msg::Samples(samples) => {
                w.apply(&samples);
                pools.samples.give(samples);
            }
            Msg::Histograms(hs) => w.take_histograms(hs),
        }
    }
    w.flush_histograms();
    let (series, mut res) = (w.series, w.res);
    res.mmapped_dropped = mmapped.values().map(|v| v.len() as u64).sum();
    for ws in series {
        let d = ws.data();
        let (mint, maxt) = (d.min_time(), d.max_time());
        if mint <= maxt {
            res.mint = res.mint.min(mint);
            res.maxt = res.maxt.max(maxt);
        }
        // SAFETY: this thread took the lock in `add_series` and leaked the
        // guard; no reference from `data()` outlives this iteration.
        unsafe { ws.entry.data.force_unlock() };
    }
    res
}

// ---------------------------------------------------------------------------
// Applying decoded ranges in WAL order (the calling thread)

/// A range to replay and where it comes from.
struct Source {
    range: SegmentRange,
    checkpoint: Option<u32>,
}

struct Applier<'h> {
    head: &'h Head,
    workers: Vec<SyncSender<Msg>>,
    skip_until: &'h RefTable<i64>,
    pools: &'h Pools,
    stats: ReplayStats,
    /// Refs whose series record repeated an existing label set -> the existing ref.
    aliases: FastMap<u64, u64>,
    pending_series: Vec<Vec<SeriesEntry>>,
    ids: Vec<u32>,
    max_ref: u64,
}

impl Applier<'_> {
    fn send(&self, w: usize, msg: Msg) -> Result<(), HeadError> {
        self.workers[w]
            .send(msg)
            .map_err(|_| HeadError::Replay("replay worker stopped".into()))
    }

    fn apply(&mut self, decoded: DecodedRange) -> Result<(), HeadError> {
        self.stats.records += decoded.records;
        self.stats.samples_in_mmapped_chunks += decoded.in_mmapped;
        for (kind, n) in decoded.skipped.skipped {
            self.stats.skip(kind, n);
        }
        for event in decoded.events {
            match event {
                Event::Series(rec) => self.series(&rec)?,
                Event::Tombstones(mut stones) => {
                    // As Prometheus: intervals wholly before the min valid
                    // time cover nothing the head holds.
                    let min_valid = self.head.min_valid_time();
                    for st in &mut stones {
                        st.intervals.retain(|&(_, maxt)| maxt >= min_valid);
                    }
                    for st in &stones {
                        let r = self
                            .aliases
                            .get(&st.series_ref)
                            .copied()
                            .unwrap_or(st.series_ref);
                        self.head.add_tombstones(r, &st.intervals);
                        self.stats.tombstones += st.intervals.len() as u64;
                    }
                }
                Event::Histograms(mut shards, route) => {
                    if !self.aliases.is_empty() {
                        self.resolve_histogram_aliases(&mut shards, &route);
                    }
                    for (w, batch) in shards.into_iter().enumerate() {
                        if batch.is_empty() {
                            self.pools.histograms.give(batch);
                        } else {
                            self.send(w, Msg::Histograms(batch))?;
                        }
                    }
                }
                Event::Samples(mut shards, route) => {
                    if !self.aliases.is_empty() {
                        self.resolve_aliases(&mut shards, &route);
                    }
                    for (w, samples) in shards.into_iter().enumerate() {
                        if samples.is_empty() {
                            self.pools.samples.give(samples);
                        } else {
                            self.send(w, Msg::Samples(samples))?;
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// The ref a series record's ref stands for (itself unless its record
    /// repeated an existing label set).
    fn resolve_alias(&self, r: u64) -> u64 {
        self.aliases.get(&r).copied().unwrap_or(r)
    }

    /// Moves histogram samples of aliased refs to the ref they stand for
    /// (rare: a series record repeated a label set), in its shard, keeping
    /// WAL order (`route`); those now inside its m-mapped chunks are
    /// dropped, as the decoder drops them for other refs.
    fn resolve_histogram_aliases(&mut self, shards: &mut [HistogramBatch], route: &[u16]) {
        let pool = &self.pools.histograms;
        let n = shards.len().max(1) as u64;
        let mut rebuilt: Vec<HistogramBatch> = shards.iter().map(|_| pool.take()).collect();
        let mut scratch = Scratch::default();
        let mut in_mmapped = 0;
        in_wal_order(route, shards.len(), |shard, k| {
            let Some(from) = shards.get_mut(shard) else {
                return;
            };
            let Some((r, t)) = from.series_ref(k).zip(from.time(k)) else {
                return;
            };
            let r = self.resolve_alias(r);
            if t <= self.skip_until.get(r) {
                in_mmapped += 1;
                return;
            }
            from.set_ref(k, r);
            if let Some(to) = rebuilt.get_mut((r % n) as usize) {
                to.push_from(from, k, &mut scratch);
            }
        });
        self.stats.samples_in_mmapped_chunks += in_mmapped;
        for (old, new) in shards.iter_mut().zip(rebuilt) {
            pool.give(std::mem::replace(old, new));
        }
    }

    /// [`Self::resolve_histogram_aliases`] for float samples.
    fn resolve_aliases(&mut self, shards: &mut [Vec<RefSample>], route: &[u16]) {
        let n = shards.len().max(1) as u64;
        let mut rebuilt: Vec<Vec<RefSample>> =
            shards.iter().map(|_| self.pools.samples.take()).collect();
        let mut in_mmapped = 0;
        in_wal_order(route, shards.len(), |shard, k| {
            let Some(&s) = shards.get(shard).and_then(|v| v.get(k)) else {
                return;
            };
            let r = self.resolve_alias(s.series_ref);
            if s.t <= self.skip_until.get(r) {
                in_mmapped += 1;
            } else if let Some(to) = rebuilt.get_mut((r % n) as usize) {
                to.push(RefSample { series_ref: r, ..s });
            }
        });
        self.stats.samples_in_mmapped_chunks += in_mmapped;
        for (old, new) in shards.iter_mut().zip(rebuilt) {
            self.pools.samples.give(std::mem::replace(old, new));
        }
    }

    fn series(&mut self, rec: &[u8]) -> Result<(), HeadError> {
        let head = self.head;
        let n = self.workers.len();
        let mut pending = std::mem::take(&mut self.pending_series);
        pending.resize_with(n, Vec::new);
        let mut ids = std::mem::take(&mut self.ids);
        let stats = &mut self.stats;
        let aliases = &mut self.aliases;
        let max_ref = &mut self.max_ref;
        record::decode_series(rec, |r, pairs| {
            stats.series += 1;
            *max_ref = (*max_ref).max(r);
            let hash = hash_labels(pairs.iter().copied());
            let same = |cand: &[u32]| {
                cand.len() == pairs.len() * 2
                    && head.symbols.with_resolver(|res| {
                        cand.chunks_exact(2).zip(pairs).all(|(p, (name, value))| {
                            res.get(p[0]) == *name && res.get(p[1]) == *value
                        })
                    })
            };
            if let Some(existing) = head.series.lookup(hash, same) {
                let existing = existing.series_ref();
                if existing != r {
                    stats.duplicate_series_refs += 1;
                    aliases.insert(r, existing);
                }
                return;
            }
            head.symbols
                .intern_all(pairs.iter().flat_map(|(a, b)| [*a, *b]), &mut ids);
            let entry = SeriesEntry::new(r, hash, &ids);
            if head.series.insert(entry.clone()) {
                head.postings.write().add(r, entry.labels());
                pending[(r as usize) % n].push(entry);
            }
        })?;
        self.ids = ids;
        for (w, list) in pending.iter_mut().enumerate() {
            if !list.is_empty() {
                self.send(w, Msg::Series(std::mem::take(list)))?;
            }
        }
        self.pending_series = pending;
        Ok(())
    }
}

/// Applies the decoded ranges in order; returns the WAL's first corruption.
fn apply_all(
    queue: &RangeQueue,
    sources: &[Source],
    st: &mut Applier<'_>,
    decoder: &mut Decoder<'_>,
    total_segments: usize,
) -> Result<Option<ferrite_wal::Corruption>, HeadError> {
    let start = Instant::now();
    let mut prev: Option<(usize, RangeEnd)> = None;
    for (i, src) in sources.iter().enumerate() {
        let mut decoded = queue.take(i, |j| decoder.decode_guarded(&sources[j].range))?;
        if let Some((p, prev_end)) = &prev {
            let p = &sources[*p];
            if p.checkpoint == src.checkpoint {
                if let Some(c) = stitch(&p.range, prev_end, &src.range, &mut decoded.end) {
                    return corrupt(src, c);
                }
            }
        }
        let end = std::mem::take(&mut decoded.end);
        let unsupported = decoded.unsupported.take();
        st.apply(decoded)?;
        if let Some(mut u) = unsupported {
            // Every earlier record is applied: name the series.
            if let Some(r) = u.series_ref {
                let r = st.aliases.get(&r).copied().unwrap_or(r);
                if let Some(e) = st.head.series.get(r) {
                    u.series = Some(st.head.resolve_labels(e.labels()).to_string());
                }
            }
            return Err(HeadError::Unsupported(u));
        }
        if let Some(c) = end.corruption {
            return corrupt(src, c);
        }
        if src.checkpoint.is_none() && src.range.is_segment_start() {
            st.stats.segments += 1;
            if start.elapsed() > Duration::from_secs(2) || total_segments > 16 {
                info!(
                    segment = src.range.segment.index,
                    done = st.stats.segments,
                    of = total_segments,
                    "replaying WAL segment"
                );
            }
        }
        prev = Some((i, end));
    }
    Ok(None)
}

fn corrupt(
    src: &Source,
    c: ferrite_wal::Corruption,
) -> Result<Option<ferrite_wal::Corruption>, HeadError> {
    match src.checkpoint {
        Some(index) => Err(HeadError::CorruptCheckpoint {
            index,
            detail: c.to_string(),
        }),
        None => Ok(Some(c)),
    }
}

// ---------------------------------------------------------------------------

/// Loads `chunks_head/` and replays the WAL in `wal_dir` into `head`.
pub(crate) fn replay(
    head: &Head,
    wal_dir: &Path,
    wbl_dir: &Path,
) -> Result<ReplayStats, HeadError> {
    let start = Instant::now();
    let cores = match head.options().replay_workers {
        0 => std::thread::available_parallelism().map_or(2, |n| n.get()),
        n => n,
    }
    .max(1);
    let workers = cores;
    // The applier decodes while it waits, so one thread fewer.
    let decoders = cores - 1;

    // 1. Chunks already on disk, sharded like the series.
    let mut mmapped: Vec<FastMap<u64, ThinVec<MmappedChunk>>> =
        (0..workers).map(|_| FastMap::default()).collect();
    let mut stats = ReplayStats::default();
    let mut loaded = 0u64;
    // Samples before this are in blocks already (the newest block's end),
    // or were truncated from the WAL by a checkpoint that recorded it
    // (Prometheus v3.16's `min_valid_time` record, the checkpoint's first):
    // the higher of the two, as v3.16's `DB.open` takes. Older WAL samples
    // and head chunks ending before it are dropped, as v3.16 does.
    if let Some(t) = read_min_valid_time(wal_dir)? {
        stats.checkpoint_min_valid_time = Some(t);
        if t > head.min_valid_time() {
            head.set_min_valid_time(t);
        }
    }
    let min_valid = head.min_valid_time();
    let mut below_blocks = 0u64;
    // Chunks of the encodings Ferrite reads (every encoding of v3.16: XOR,
    // XOR2, integer and float histograms and their start-timestamp
    // variants) are loaded, in-order and out-of-order ones. Anything else
    // (unknown bytes) stops the open before any head chunk file is
    // repaired or deleted.
    // Like Prometheus, in-order chunks wholly before the min valid time are
    // dropped first, whatever their encoding: blocks hold their samples.
    // Out-of-order chunks are kept whatever their time: out-of-order
    // compaction has not moved them into blocks yet.
    let mut refused: Option<crate::head_chunks::MappedChunkMeta> = None;
    let mut ooo_chunks: FastMap<u64, Vec<MmappedChunk>> = FastMap::default();
    let mut last_mmap_ref = ChunkDiskMapperRef(0);
    head.mapper.try_iterate_all_chunks(&mut |m| {
        last_mmap_ref = m.chunk_ref;
        if !m.is_ooo && m.maxt < min_valid {
            below_blocks += 1;
            return true;
        }
        // The chunks are read, never appended to: a series continues in a
        // new open chunk.
        let Some(encoding) = ferrite_chunkenc::Encoding::valid(m.encoding) else {
            refused = Some(m);
            return false;
        };
        let chunk = MmappedChunk {
            chunk_ref: m.chunk_ref,
            mint: m.mint,
            maxt: m.maxt,
            num_samples: m.num_samples,
            encoding,
        };
        if m.is_ooo {
            ooo_chunks.entry(m.series_ref).or_default().push(chunk);
            return true;
        }
        loaded += 1;
        mmapped[(m.series_ref as usize) % workers]
            .entry(m.series_ref)
            .or_default()
            .push(chunk);
        true
    })?;
    if let Some(m) = refused {
        let ooo_bit = if m.is_ooo {
            crate::head_chunks::OOO_ENCODING_MASK
        } else {
            0
        };
        return Err(Unsupported {
            kind: UnsupportedKind::HeadChunk(m.encoding | ooo_bit),
            file: head
                .mapper
                .dir()
                .join(crate::head_chunks::chunk_file_name(m.chunk_ref.seq())),
            series: None,
            series_ref: Some(m.series_ref),
        }
        .into());
    }
    let floor = min_valid.saturating_sub(1);
    let mut skip_until = RefTable::new(floor);
    for shard in mmapped.iter_mut() {
        for (&r, chunks) in shard.iter_mut() {
            chunks.sort_by_key(|c| c.mint);
            // Overlapping chunks cannot come from one writer; keep the first of each overlap.
            let mut last = i64::MIN;
            chunks.retain(|c| {
                let keep = c.mint > last;
                if keep {
                    last = c.maxt;
                }
                keep
            });
            if let Some(c) = chunks.last() {
                skip_until.insert(r, c.maxt.max(floor));
            }
        }
    }
    stats.mmapped_chunks = loaded;
    stats.mmapped_chunks_in_blocks = below_blocks;

    // 2. Checkpoint and segments, split into ranges.
    let range_bytes = match head.options().replay_range_bytes {
        0 => DEFAULT_RANGE_BYTES,
        n => n,
    };
    let (checkpoint, segments) = replay_sources(wal_dir)?;
    stats.checkpoint = checkpoint.as_ref().map(|(_, i)| *i);
    let mut sources = Vec::new();
    if let Some((dir, idx)) = &checkpoint {
        for range in split_segments(&list_segments(dir)?, range_bytes)? {
            sources.push(Source {
                range,
                checkpoint: Some(*idx),
            });
        }
    }
    for range in split_segments(&segments, range_bytes)? {
        sources.push(Source {
            range,
            checkpoint: None,
        });
    }

    let pools = Pools::default();
    let queue = RangeQueue {
        state: std::sync::Mutex::new(QueueState {
            next_to_decode: 0,
            next_to_apply: 0,
            done: FastMap::default(),
        }),
        changed: Condvar::new(),
        ahead: AHEAD_PER_THREAD * cores,
        total: sources.len(),
        stop: AtomicBool::new(false),
    };

    let results: Vec<Option<WorkerResult>>;
    let read_result: Result<Option<ferrite_wal::Corruption>, HeadError>;
    let mut st_stats = ReplayStats::default();
    let mut max_ref = 0;
    let mut aliases: FastMap<u64, u64> = FastMap::default();
    {
        let (txs, rxs): (Vec<_>, Vec<_>) = (0..workers).map(|_| sync_channel::<Msg>(1)).unzip();
        let (res, rr) = std::thread::scope(|scope| {
            let handles: Vec<_> = rxs
                .into_iter()
                .zip(mmapped)
                .map(|(rx, mm)| {
                    let pools = &pools;
                    std::thread::Builder::new()
                        .name("replay-append".into())
                        .spawn_scoped(scope, move || run_worker(head, rx, pools, mm))
                })
                .collect();
            let new_decoder = || Decoder {
                shards: workers,
                skip_until: &skip_until,
                pools: &pools,
                scratch: DecodeScratch::default(),
                pending: PendingShards::default(),
                lens: Vec::new(),
            };
            let decoder_handles: Vec<_> = (0..decoders)
                .map(|_| {
                    let decoder = new_decoder();
                    let (queue, sources) = (&queue, &sources);
                    std::thread::Builder::new()
                        .name("replay-decode".into())
                        .spawn_scoped(scope, move || run_decoder(queue, sources, decoder))
                })
                .collect();
            let mut st = Applier {
                head,
                workers: txs,
                skip_until: &skip_until,
                pools: &pools,
                stats: ReplayStats::default(),
                aliases: FastMap::default(),
                pending_series: Vec::new(),
                ids: Vec::new(),
                max_ref: 0,
            };
            let total = segments.len();
            // The applier decodes too while it waits, so it makes progress
            // even if no decoder thread could start.
            let rr = apply_all(&queue, &sources, &mut st, &mut new_decoder(), total);
            queue.stop();
            for h in decoder_handles.into_iter().flatten() {
                // A decoder's panic is delivered as its range's error.
                let _ = h.join();
            }
            st_stats = std::mem::take(&mut st.stats);
            max_ref = st.max_ref;
            aliases = std::mem::take(&mut st.aliases);
            drop(st); // closes the channels: workers finish
            let res: Vec<Option<WorkerResult>> = handles
                .into_iter()
                .map(|h| h.ok().and_then(|h| h.join().ok()))
                .collect();
            (res, rr)
        });
        results = res;
        read_result = rr;
    }

    // A panicked worker leaves its series locked: the head is unusable.
    let Some(results) = results.into_iter().collect::<Option<Vec<_>>>() else {
        return Err(HeadError::Replay(
            "a replay worker panicked or could not start".into(),
        ));
    };
    let corruption = read_result?;
    head.bump_series_ref(max_ref);

    stats.segments = st_stats.segments;
    stats.records = st_stats.records;
    stats.series = st_stats.series;
    stats.duplicate_series_refs = st_stats.duplicate_series_refs;
    stats.tombstones = st_stats.tombstones;
    stats.skipped = st_stats.skipped;
    stats.samples_in_mmapped_chunks = st_stats.samples_in_mmapped_chunks;
    for r in &results {
        stats.samples += r.samples;
        stats.samples_unknown_series += r.unknown;
        stats.samples_out_of_order += r.out_of_order;
        stats.mmapped_chunks_dropped += r.mmapped_dropped;
        head.update_time_range(r.mint, r.maxt);
    }
    head.stats
        .samples_appended
        .fetch_add(stats.samples, Ordering::Relaxed);

    if let Some(c) = &corruption {
        error!(
            segment = c.segment,
            offset = c.offset,
            reason = %c.reason,
            "WAL is corrupt; truncating it at the first bad record and keeping everything before it"
        );
        repair(wal_dir, c)?;
        stats.corruption = Some(c.clone());
    }
    for (kind, n) in &stats.skipped {
        warn!(
            kind,
            count = n,
            "WAL records of a kind Ferrite does not store yet were skipped"
        );
    }
    if stats.samples_unknown_series > 0 {
        warn!(
            samples = stats.samples_unknown_series,
            "WAL samples referenced series with no series record; skipped"
        );
    }
    if stats.mmapped_chunks_dropped > 0 {
        warn!(
            chunks = stats.mmapped_chunks_dropped,
            "head chunks of series absent from the WAL were dropped"
        );
    }
    // 3. Out-of-order data, now that every series exists.
    let resolve = |r: u64| aliases.get(&r).copied().unwrap_or(r);
    attach_ooo_chunks(head, ooo_chunks, resolve, &mut stats.wbl);
    replay_wbl(head, wbl_dir, last_mmap_ref, resolve, &mut stats.wbl)?;
    stats.duration = start.elapsed();
    Ok(stats)
}
