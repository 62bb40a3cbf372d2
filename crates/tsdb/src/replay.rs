//! Rebuilding the head on open: `chunks_head/`, then the WAL checkpoint, then
//! the WAL segments.
//!
//! Why it is shaped this way: replay is what makes a Prometheus restart slow,
//! so the work is split into a pipeline. The calling thread reads, checks and
//! decompresses records, decodes them and creates series (series must exist
//! before their samples, and label interning is shared state). Samples go to
//! worker threads, each owning a disjoint shard of the series (by ref), which
//! append into worker-local series without locks; at the end each worker hands
//! its series data to the registry. Samples already inside m-mapped chunks are
//! skipped, so a normal restart only re-appends the open chunks.
//!
//! A corrupt WAL is repaired: everything before the first bad record is kept,
//! the rest of that segment and all later segments are dropped, and the open
//! continues (as Prometheus does).

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ferrite_wal::checkpoint::replay_sources;
use ferrite_wal::record::{self, RecordType, RefSample};
use ferrite_wal::{list_segments, repair, RecordReader, WalError};
use std::ptr::NonNull;

use parking_lot::{Mutex, MutexGuard};
use tracing::{error, info, warn};

use crate::error::HeadError;
use crate::head::registry::{hash_labels, SeriesEntry};
use crate::head::series::{MemSeries, MmappedChunk};
use crate::head::Head;

type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// What an open found and did.
#[derive(Debug, Default, Clone)]
pub struct ReplayStats {
    pub duration: Duration,
    pub mmapped_chunks: u64,
    pub mmapped_chunks_dropped: u64,
    pub ooo_mmapped_chunks_skipped: u64,
    pub checkpoint: Option<u32>,
    pub segments: u32,
    pub records: u64,
    pub series: u64,
    pub duplicate_series_refs: u64,
    pub samples: u64,
    pub samples_in_mmapped_chunks: u64,
    pub samples_unknown_series: u64,
    pub samples_out_of_order: u64,
    pub tombstones: u64,
    /// Records of kinds Ferrite does not store yet, skipped: (kind, count).
    pub skipped: Vec<(&'static str, u64)>,
    pub corruption: Option<ferrite_wal::Corruption>,
}

impl ReplayStats {
    fn skip(&mut self, kind: &'static str, n: u64) {
        match self.skipped.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, c)) => *c += n,
            None => self.skipped.push((kind, n)),
        }
    }
}

enum Msg {
    Series(Vec<(u64, Arc<SeriesEntry>)>),
    Samples(Arc<Vec<RefSample>>),
}

/// A series of this worker's shard. The worker locks the series' mutex when
/// the series is registered and keeps it locked until replay ends, so it can
/// append through `data` without a lock per sample and without a second copy
/// of the series (the per-worker table stays 16 bytes per series).
struct WorkerSeries {
    entry: Arc<SeriesEntry>,
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
    in_mmapped: u64,
    unknown: u64,
    out_of_order: u64,
    mmapped_dropped: u64,
    mint: i64,
    maxt: i64,
}

/// One replay worker's state: the series of its shard and reused buffers.
struct Worker<'h> {
    head: &'h Head,
    id: usize,
    workers: usize,
    index: RefIndex,
    series: Vec<WorkerSeries>,
    /// Per slot: samples at or before this time are in m-mapped chunks.
    /// Kept apart from `series` so skipping them touches only this array.
    skip_until: Vec<i64>,
    /// This batch's samples of the shard: (slot, t, v, ref).
    mine: Vec<(u32, i64, f64, u64)>,
    res: WorkerResult,
}

impl Worker<'_> {
    fn add_series(
        &mut self,
        list: Vec<(u64, Arc<SeriesEntry>)>,
        mmapped: &mut FastMap<u64, Vec<MmappedChunk>>,
    ) {
        for (r, entry) in list {
            if self.index.get(r).is_some() {
                continue;
            }
            // Held until the worker finishes (end of `run_worker`): nobody
            // else touches series data during replay, and holding the lock
            // makes that exclusivity sound.
            let data = NonNull::from(MutexGuard::leak(entry.data.lock()));
            let mut ws = WorkerSeries { entry, data };
            let mut mmapped_maxt = i64::MIN;
            if let Some(chunks) = mmapped.remove(&r) {
                mmapped_maxt = chunks.last().map_or(i64::MIN, |c| c.maxt);
                ws.data_mut().mmapped = chunks;
            }
            self.index.insert(r, self.series.len() as u32);
            self.series.push(ws);
            self.skip_until.push(mmapped_maxt);
        }
    }

    fn apply(&mut self, samples: &[RefSample]) {
        // This worker's samples, resolved to series slots first, so the
        // append loop below can prefetch ahead: each sample touches a
        // different series, and waiting on those cache misses one at a time
        // dominates replay otherwise.
        self.mine.clear();
        for s in samples {
            if (s.series_ref as usize) % self.workers != self.id {
                continue;
            }
            match self.index.get(s.series_ref) {
                Some(i) if s.t <= self.skip_until[i as usize] => self.res.in_mmapped += 1,
                Some(i) => self.mine.push((i, s.t, s.v, s.series_ref)),
                None => self.res.unknown += 1,
            }
        }
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

fn run_worker(
    head: &Head,
    id: usize,
    workers: usize,
    rx: Receiver<Msg>,
    mut mmapped: FastMap<u64, Vec<MmappedChunk>>,
) -> WorkerResult {
    let mut w = Worker {
        head,
        id,
        workers,
        index: RefIndex::default(),
        series: Vec::new(),
        skip_until: Vec::new(),
        mine: Vec::new(),
        res: WorkerResult {
            mint: i64::MAX,
            maxt: i64::MIN,
            ..Default::default()
        },
    };
    for msg in rx {
        match msg {
            Msg::Series(list) => w.add_series(list, &mut mmapped),
            Msg::Samples(samples) => w.apply(&samples),
        }
    }
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

/// Series ref -> worker slot. Prometheus hands out refs densely from 1, so a
/// plain array indexed by ref is the common case; sparse refs fall back to a map.
#[derive(Default)]
struct RefIndex {
    dense: Vec<u32>,
    sparse: FastMap<u64, u32>,
}

impl RefIndex {
    const DENSE_LIMIT: u64 = 1 << 26;

    #[inline]
    fn get(&self, r: u64) -> Option<u32> {
        if r < Self::DENSE_LIMIT {
            match self.dense.get(r as usize) {
                Some(&i) if i != u32::MAX => Some(i),
                _ => None,
            }
        } else {
            self.sparse.get(&r).copied()
        }
    }

    fn insert(&mut self, r: u64, slot: u32) {
        if r < Self::DENSE_LIMIT {
            let r = r as usize;
            if r >= self.dense.len() {
                self.dense.resize((r + 1).next_power_of_two(), u32::MAX);
            }
            self.dense[r] = slot;
        } else {
            self.sparse.insert(r, slot);
        }
    }
}

/// Hints the CPU to load `p`'s cache line; never faults.
#[inline(always)]
fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetch is a hint; it does not dereference `p` architecturally
    // and cannot fault, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch(p as *const i8, std::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Per-record decode state of the reading thread.
struct Reader<'h> {
    head: &'h Head,
    workers: Vec<SyncSender<Msg>>,
    stats: ReplayStats,
    /// Refs whose series record repeated an existing label set -> the existing ref.
    aliases: FastMap<u64, u64>,
    pending_series: Vec<Vec<(u64, Arc<SeriesEntry>)>>,
    ids: Vec<u32>,
    max_ref: u64,
    scratch_stones: Vec<record::Stone>,
    scratch_samples: Vec<RefSample>,
    /// Reused decode buffers for the record kinds that are only validated
    /// and counted.
    skipped: SkippedScratch,
    /// Samples of several records, sent to the workers together.
    batch: Vec<RefSample>,
}

/// Decode buffers for records Ferrite does not store yet.
#[derive(Default)]
struct SkippedScratch {
    exemplars: Vec<record::RefExemplar>,
    metadata: Vec<record::RefMetadata>,
    markers: Vec<record::RefMmapMarker>,
    histograms: Vec<record::RefHistogramSample>,
    float_histograms: Vec<record::RefFloatHistogramSample>,
}

/// Samples per message to the workers: fewer, larger messages keep the
/// threads busy instead of waking each other per record.
const SAMPLE_BATCH: usize = 32 * 1024;

impl Reader<'_> {
    fn send(&self, w: usize, msg: Msg) -> Result<(), HeadError> {
        self.workers[w]
            .send(msg)
            .map_err(|_| HeadError::Replay("replay worker stopped".into()))
    }

    /// Sends the batched samples to every worker (each takes its shard).
    fn flush_samples(&mut self) -> Result<(), HeadError> {
        if self.batch.is_empty() {
            return Ok(());
        }
        let batch = Arc::new(std::mem::replace(
            &mut self.batch,
            Vec::with_capacity(SAMPLE_BATCH + 4096),
        ));
        for w in 0..self.workers.len() {
            self.send(w, Msg::Samples(batch.clone()))?;
        }
        Ok(())
    }

    fn handle(&mut self, rec: &[u8]) -> Result<(), HeadError> {
        self.stats.records += 1;
        match RecordType::of(rec) {
            RecordType::Series => self.series(rec),
            RecordType::Samples => {
                record::decode_samples(rec, &mut self.scratch_samples)?;
                if !self.aliases.is_empty() {
                    for s in self.scratch_samples.iter_mut() {
                        if let Some(&to) = self.aliases.get(&s.series_ref) {
                            s.series_ref = to;
                        }
                    }
                }
                self.batch.extend_from_slice(&self.scratch_samples);
                if self.batch.len() >= SAMPLE_BATCH {
                    self.flush_samples()?;
                }
                Ok(())
            }
            RecordType::Tombstones => {
                let mut stones = std::mem::take(&mut self.scratch_stones);
                record::decode_tombstones(rec, &mut stones)?;
                for st in &stones {
                    let r = self
                        .aliases
                        .get(&st.series_ref)
                        .copied()
                        .unwrap_or(st.series_ref);
                    self.head.add_tombstones(r, &st.intervals);
                    self.stats.tombstones += st.intervals.len() as u64;
                }
                self.scratch_stones = stones;
                Ok(())
            }
            RecordType::Exemplars => {
                let v = &mut self.skipped.exemplars;
                record::decode_exemplars(rec, v)?;
                self.stats.skip("exemplars", v.len() as u64);
                Ok(())
            }
            RecordType::Metadata => {
                let v = &mut self.skipped.metadata;
                record::decode_metadata(rec, v)?;
                self.stats.skip("metadata", v.len() as u64);
                Ok(())
            }
            RecordType::MmapMarkers => {
                let v = &mut self.skipped.markers;
                record::decode_mmap_markers(rec, v)?;
                self.stats.skip("mmap markers", v.len() as u64);
                Ok(())
            }
            RecordType::HistogramSamples | RecordType::CustomBucketsHistogramSamples => {
                let v = &mut self.skipped.histograms;
                record::decode_histogram_samples(rec, v)?;
                self.stats.skip("native histogram samples", v.len() as u64);
                Ok(())
            }
            RecordType::FloatHistogramSamples | RecordType::CustomBucketsFloatHistogramSamples => {
                let v = &mut self.skipped.float_histograms;
                record::decode_float_histogram_samples(rec, v)?;
                self.stats
                    .skip("native float histogram samples", v.len() as u64);
                Ok(())
            }
            RecordType::Unknown(_) => {
                self.stats.skip("unknown record types", 1);
                Ok(())
            }
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
                if existing != r {
                    stats.duplicate_series_refs += 1;
                    aliases.insert(r, existing);
                }
                return;
            }
            head.symbols
                .intern_all(pairs.iter().flat_map(|(a, b)| [*a, *b]), &mut ids);
            let entry = Arc::new(SeriesEntry {
                labels: ids.as_slice().into(),
                data: Mutex::new(MemSeries::new()),
            });
            if head.series.insert(hash, r, entry.clone()) {
                head.postings.write().add(r, &entry.labels);
                pending[(r as usize) % n].push((r, entry));
            }
        })?;
        self.ids = ids;
        if pending.iter().any(|l| !l.is_empty()) {
            // Samples read before this record must not see its series, as in
            // a sequential replay (Prometheus drops samples of unknown series).
            self.flush_samples()?;
        }
        for (w, list) in pending.iter_mut().enumerate() {
            if !list.is_empty() {
                self.send(w, Msg::Series(std::mem::take(list)))?;
            }
        }
        self.pending_series = pending;
        Ok(())
    }
}

fn read_all(
    reader: &mut RecordReader,
    st: &mut Reader<'_>,
    total_segments: usize,
    from_checkpoint: bool,
) -> Result<Option<ferrite_wal::Corruption>, HeadError> {
    let start = Instant::now();
    let mut last_seg = None;
    loop {
        let rec = match reader.next_record() {
            Ok(Some(rec)) => rec,
            Ok(None) => return Ok(None),
            Err(WalError::Corruption(c)) => return Ok(Some(c)),
            Err(e) => return Err(e.into()),
        };
        match st.handle(rec) {
            Ok(()) => {}
            // A record with a valid checksum that does not decode is damage
            // all the same: repair at its start, as Prometheus does.
            Err(HeadError::Record(e)) => {
                return Ok(Some(ferrite_wal::Corruption {
                    segment: reader.segment(),
                    offset: reader.offset(),
                    reason: format!("undecodable record: {e}"),
                }))
            }
            Err(e) => return Err(e),
        }
        if !from_checkpoint && last_seg != Some(reader.segment()) {
            last_seg = Some(reader.segment());
            st.stats.segments += 1;
            if start.elapsed() > Duration::from_secs(2) || total_segments > 16 {
                info!(
                    segment = reader.segment(),
                    done = st.stats.segments,
                    of = total_segments,
                    "replaying WAL segment"
                );
            }
        }
    }
}

/// Loads `chunks_head/` and replays the WAL in `wal_dir` into `head`.
pub(crate) fn replay(head: &Head, wal_dir: &Path) -> Result<ReplayStats, HeadError> {
    let start = Instant::now();
    let workers = match head.options().replay_workers {
        0 => std::thread::available_parallelism().map_or(2, |n| n.get()),
        n => n,
    }
    .max(1);

    // 1. Chunks already on disk, sharded like the series.
    let mut mmapped: Vec<FastMap<u64, Vec<MmappedChunk>>> =
        (0..workers).map(|_| FastMap::default()).collect();
    let mut stats = ReplayStats::default();
    let mut ooo = 0u64;
    let mut loaded = 0u64;
    head.mapper.iterate_all_chunks(&mut |m| {
        if m.is_ooo {
            ooo += 1;
            return;
        }
        loaded += 1;
        mmapped[(m.series_ref as usize) % workers]
            .entry(m.series_ref)
            .or_default()
            .push(MmappedChunk {
                chunk_ref: m.chunk_ref,
                mint: m.mint,
                maxt: m.maxt,
                num_samples: m.num_samples,
            });
    })?;
    for shard in mmapped.iter_mut() {
        for chunks in shard.values_mut() {
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
        }
    }
    stats.mmapped_chunks = loaded;
    stats.ooo_mmapped_chunks_skipped = ooo;
    if ooo > 0 {
        warn!(
            chunks = ooo,
            "out-of-order head chunks are not supported yet; skipped"
        );
    }

    // 2. Checkpoint and segments.
    let (checkpoint, segments) = replay_sources(wal_dir)?;
    stats.checkpoint = checkpoint.as_ref().map(|(_, i)| *i);

    let results: Vec<Option<WorkerResult>>;
    let read_result: Result<Option<ferrite_wal::Corruption>, HeadError>;
    let mut st_stats = ReplayStats::default();
    let mut max_ref = 0;
    {
        let (txs, rxs): (Vec<_>, Vec<_>) = (0..workers).map(|_| sync_channel::<Msg>(4)).unzip();
        let (res, rr) = std::thread::scope(|scope| {
            let handles: Vec<_> = rxs
                .into_iter()
                .zip(mmapped)
                .enumerate()
                .map(|(id, (rx, mm))| scope.spawn(move || run_worker(head, id, workers, rx, mm)))
                .collect();
            let mut st = Reader {
                head,
                workers: txs,
                stats: ReplayStats::default(),
                aliases: FastMap::default(),
                pending_series: Vec::new(),
                ids: Vec::new(),
                max_ref: 0,
                scratch_stones: Vec::new(),
                scratch_samples: Vec::new(),
                skipped: SkippedScratch::default(),
                batch: Vec::new(),
            };
            let rr = (|| {
                if let Some((dir, idx)) = &checkpoint {
                    let segs = list_segments(dir)?;
                    let mut reader = RecordReader::new(segs);
                    if let Some(c) = read_all(&mut reader, &mut st, 0, true)? {
                        return Err(HeadError::CorruptCheckpoint {
                            index: *idx,
                            detail: c.to_string(),
                        });
                    }
                }
                let total = segments.len();
                let mut reader = RecordReader::new(segments.clone());
                let corruption = read_all(&mut reader, &mut st, total, false)?;
                st.flush_samples()?;
                Ok(corruption)
            })();
            st_stats = std::mem::take(&mut st.stats);
            max_ref = st.max_ref;
            drop(st); // closes the channels: workers finish
            let res: Vec<Option<WorkerResult>> =
                handles.into_iter().map(|h| h.join().ok()).collect();
            (res, rr)
        });
        results = res;
        read_result = rr;
    }
    // A panicked worker leaves its series locked: the head is unusable.
    let Some(results) = results.into_iter().collect::<Option<Vec<_>>>() else {
        return Err(HeadError::Replay("a replay worker panicked".into()));
    };
    let corruption = read_result?;
    head.bump_series_ref(max_ref);

    stats.segments = st_stats.segments;
    stats.records = st_stats.records;
    stats.series = st_stats.series;
    stats.duplicate_series_refs = st_stats.duplicate_series_refs;
    stats.tombstones = st_stats.tombstones;
    stats.skipped = st_stats.skipped;
    for r in &results {
        stats.samples += r.samples;
        stats.samples_in_mmapped_chunks += r.in_mmapped;
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
    stats.duration = start.elapsed();
    Ok(stats)
}
