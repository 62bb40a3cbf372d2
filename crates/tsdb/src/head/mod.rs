//! The head block: the in-memory, appendable part of the database.
//!
//! Samples arrive through a [`HeadAppender`], are written to the WAL at
//! commit and only then become visible. Each series keeps one open chunk in
//! memory; closed chunks go to `chunks_head/` and are read back through mmap,
//! so the head's resident memory is mostly labels and open chunks.
//!
//! Layout: `series.rs` holds one series and the chunk-cutting rules,
//! `registry.rs` the label-set -> series map, `appender.rs` the
//! commit/rollback logic. WAL replay is in `crate::replay`.

mod appender;
mod cardinality;
mod chunk;
pub mod ooo;
pub(crate) mod registry;
pub mod series;
mod truncate;
mod wbl;

use std::path::Path;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;

use ferrite_wal::{WalOptions, WalWriter};
use parking_lot::{Mutex, RwLock};

pub use appender::{AppendError, FoundSeries, HeadAppender, LentHistogram};
pub use cardinality::{CardinalityStat, CardinalityStats};
pub(crate) use registry::SeriesRegistry;
pub use registry::{encode_wire_labels, hash_wire_labels};
pub use series::ChunkOpts;
pub use truncate::TruncateStats;

use crate::error::HeadError;
use crate::head_chunks::{ChunkDiskMapper, HeadChunksOptions};
use crate::postings::MemPostings;
use crate::symbols::{SymbolId, SymbolTable};
use ferrite_model::selfmetrics::summary::{Summary, THREE_QUANTILES};
use ferrite_model::{Label, Labels};

/// Default chunk range / block duration: 2 hours.
pub const DEFAULT_CHUNK_RANGE_MS: i64 = 2 * 60 * 60 * 1000;
/// Default target samples per chunk.
pub const DEFAULT_SAMPLES_PER_CHUNK: u16 = 120;

/// Settings of the head.
#[derive(Clone, Debug)]
pub struct HeadOptions {
    pub chunk_range: i64,
    pub samples_per_chunk: u16,
    /// The encoding of new float chunks (`storage.tsdb.chunk_encoding.floats`):
    /// XOR (the default) or XOR2.
    pub float_chunk_encoding: ferrite_chunkenc::Encoding,
    /// WAL settings; `None` runs without a WAL (nothing survives a restart).
    pub wal: Option<WalOptions>,
    pub head_chunks: HeadChunksOptions,
    /// Threads used for WAL replay; 0 means one per core.
    pub replay_workers: usize,
    /// WAL bytes each replay decoder takes at a time; 0 means the default.
    /// Smaller values only matter to tests (many ranges from a small WAL).
    pub replay_range_bytes: u64,
    /// `storage.tsdb.out_of_order_time_window` in milliseconds: how far
    /// behind the head's newest sample an out-of-order sample may be. 0
    /// refuses out-of-order samples.
    pub out_of_order_time_window: i64,
    /// Samples an in-memory out-of-order chunk holds before it is written
    /// to `chunks_head/` (1-255, 32 by default).
    pub out_of_order_cap_max: u8,
}

impl Default for HeadOptions {
    fn default() -> Self {
        HeadOptions {
            chunk_range: DEFAULT_CHUNK_RANGE_MS,
            samples_per_chunk: DEFAULT_SAMPLES_PER_CHUNK,
            float_chunk_encoding: ferrite_chunkenc::Encoding::Xor,
            wal: Some(WalOptions::default()),
            head_chunks: HeadChunksOptions::default(),
            replay_workers: 0,
            replay_range_bytes: 0,
            out_of_order_time_window: 0,
            out_of_order_cap_max: ooo::DEFAULT_OUT_OF_ORDER_CAP_MAX,
        }
    }
}

/// Counters and timings of the head, named after Prometheus' metrics.
#[derive(Debug, Default)]
pub struct HeadStats {
    pub samples_appended: AtomicU64,
    pub series_created: AtomicU64,
    pub out_of_order_samples: AtomicU64,
    pub out_of_bounds_samples: AtomicU64,
    pub duplicate_samples: AtomicU64,
    /// Out-of-order samples refused for being older than the window.
    pub too_old_samples: AtomicU64,
    /// Out-of-order samples accepted (within the window).
    pub out_of_order_samples_appended: AtomicU64,
    /// Out-of-order samples whose WBL write failed (lost on a restart).
    pub wbl_write_failures: AtomicU64,
    /// The head's and the WAL's timings.
    pub timings: HeadTimings,
}

/// Timings of the head and its WAL, named after Prometheus' summaries.
#[derive(Debug)]
pub struct HeadTimings {
    /// How long the WAL's fsyncs took
    /// (`prometheus_tsdb_wal_fsync_duration_seconds`).
    pub wal_fsync_duration: Arc<Summary>,
    /// How long garbage collection of the head took
    /// (`prometheus_tsdb_head_gc_duration_seconds`: no quantiles).
    pub gc_duration: Summary,
    /// How long WAL truncations (checkpoint and segment deletion) took
    /// (`prometheus_tsdb_wal_truncate_duration_seconds`: no quantiles).
    pub wal_truncate_duration: Summary,
}

impl Default for HeadTimings {
    fn default() -> Self {
        HeadTimings {
            wal_fsync_duration: Arc::new(Summary::new(THREE_QUANTILES)),
            gc_duration: Summary::new(&[]),
            wal_truncate_duration: Summary::new(&[]),
        }
    }
}

/// The head block.
pub struct Head {
    opts: HeadOptions,
    pub(crate) chunk_opts: ChunkOpts,
    pub(crate) symbols: SymbolTable,
    pub(crate) series: SeriesRegistry,
    pub(crate) postings: RwLock<MemPostings>,
    pub(crate) mapper: Arc<ChunkDiskMapper>,
    pub(crate) wal: Mutex<Option<WalWriter>>,
    /// The out-of-order WAL (`wbl/`), open while out-of-order samples are
    /// accepted or the directory held any.
    pub(crate) wbl: Mutex<Option<WalWriter>>,
    /// The out-of-order window in effect (see [`HeadOptions`]).
    ooo_window: AtomicI64,
    /// Time range of the out-of-order samples in the head.
    ooo_min_time: AtomicI64,
    ooo_max_time: AtomicI64,
    next_ref: AtomicU64,
    min_time: AtomicI64,
    max_time: AtomicI64,
    min_valid_time: AtomicI64,
    pub stats: HeadStats,
    tombstones: RwLock<FastMap<u64, Vec<(i64, i64)>>>,
    /// Series removed by truncation -> the WAL segment current at the time:
    /// their series records stay in checkpoints until that segment is gone,
    /// since older segments may still hold their samples.
    deleted: Mutex<FastMap<u64, u32>>,
    /// Spent histograms for appenders to copy into.
    histogram_pool: appender::pool::HistogramPool,
}

type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

impl Head {
    /// Creates an empty head over `chunks_dir` (the `chunks_head/` directory).
    /// The WAL writer is attached after replay with [`Head::attach_wal`].
    pub(crate) fn new(opts: HeadOptions, chunks_dir: &Path) -> Result<Self, HeadError> {
        if opts.out_of_order_cap_max == 0 {
            return Err(HeadError::Options(
                "OOOCapMax of 0 is invalid. must be > 0 and <= 255".into(),
            ));
        }
        let mapper = ChunkDiskMapper::open(chunks_dir, opts.head_chunks)?;
        let window = opts.out_of_order_time_window.max(0);
        Ok(Head {
            chunk_opts: ChunkOpts {
                chunk_range: opts.chunk_range,
                samples_per_chunk: opts.samples_per_chunk,
                float_encoding: opts.float_chunk_encoding,
            },
            opts,
            symbols: SymbolTable::new(),
            series: SeriesRegistry::new(),
            postings: RwLock::new(MemPostings::new()),
            mapper: Arc::new(mapper),
            wal: Mutex::new(None),
            wbl: Mutex::new(None),
            ooo_window: AtomicI64::new(window),
            ooo_min_time: AtomicI64::new(i64::MAX),
            ooo_max_time: AtomicI64::new(i64::MIN),
            next_ref: AtomicU64::new(1),
            min_time: AtomicI64::new(i64::MAX),
            max_time: AtomicI64::new(i64::MIN),
            min_valid_time: AtomicI64::new(i64::MIN),
            stats: HeadStats::default(),
            tombstones: RwLock::default(),
            deleted: Mutex::default(),
            histogram_pool: Default::default(),
        })
    }

    /// Opens a WAL writer in `wal_dir` (a new segment after the existing ones).
    pub(crate) fn attach_wal(&self, wal_dir: &Path) -> Result<(), HeadError> {
        if let Some(o) = &self.opts.wal {
            let mut w = WalWriter::open(wal_dir, o.clone())?;
            w.observe_fsyncs(self.stats.timings.wal_fsync_duration.clone());
            *self.wal.lock() = Some(w);
        }
        Ok(())
    }

    /// Opens the out-of-order WAL writer in `wbl_dir` (a new segment after
    /// the existing ones) unless it is open already. Without a WAL (tests,
    /// tools) there is no WBL either.
    pub(crate) fn attach_wbl(&self, wbl_dir: &Path) -> Result<(), HeadError> {
        let mut wbl = self.wbl.lock();
        if wbl.is_none() {
            if let Some(o) = &self.opts.wal {
                *wbl = Some(WalWriter::open(wbl_dir, o.clone())?);
            }
        }
        Ok(())
    }

    /// The out-of-order window in effect, in milliseconds (0: refused).
    pub fn out_of_order_time_window(&self) -> i64 {
        self.ooo_window.load(Ordering::Acquire)
    }

    /// Changes the out-of-order window (a config reload). Enabling it
    /// opens the WBL in `wbl_dir` if it is not open yet.
    pub fn set_out_of_order_time_window(
        &self,
        window_ms: i64,
        wbl_dir: &Path,
    ) -> Result<(), HeadError> {
        if window_ms > 0 {
            self.attach_wbl(wbl_dir)?;
        }
        self.ooo_window.store(window_ms.max(0), Ordering::Release);
        Ok(())
    }

    /// Time range of the head's out-of-order samples, `None` if it has none.
    pub fn out_of_order_time_range(&self) -> Option<(i64, i64)> {
        let (min, max) = (
            self.ooo_min_time.load(Ordering::Acquire),
            self.ooo_max_time.load(Ordering::Acquire),
        );
        (min <= max).then_some((min, max))
    }

    pub(crate) fn update_ooo_time_range(&self, mint: i64, maxt: i64) {
        if mint <= maxt {
            self.ooo_min_time.fetch_min(mint, Ordering::AcqRel);
            self.ooo_max_time.fetch_max(maxt, Ordering::AcqRel);
        }
    }

    /// Sets the out-of-order time range from what the series hold (after
    /// out-of-order compaction dropped some).
    pub(crate) fn recompute_ooo_time_range(&self) {
        let refs: Vec<u64> = self.postings.read().all().to_vec();
        let (mut min, mut max) = (i64::MAX, i64::MIN);
        for r in refs {
            let Some(entry) = self.series.get(r) else {
                continue;
            };
            let d = entry.data.lock();
            if let Some((a, b)) = d.ooo().and_then(|o| o.time_range()) {
                min = min.min(a);
                max = max.max(b);
            }
        }
        self.ooo_min_time.store(min, Ordering::Release);
        self.ooo_max_time.store(max, Ordering::Release);
    }

    pub fn options(&self) -> &HeadOptions {
        &self.opts
    }

    /// A new appender. Appenders are cheap; use one per batch.
    pub fn appender(&self) -> HeadAppender<'_> {
        HeadAppender::new(self)
    }

    /// Number of series in the head.
    pub fn num_series(&self) -> usize {
        self.series.len()
    }

    /// Oldest sample timestamp, `i64::MAX` when empty.
    pub fn min_time(&self) -> i64 {
        self.min_time.load(Ordering::Acquire)
    }

    /// Newest sample timestamp, `i64::MIN` when empty.
    pub fn max_time(&self) -> i64 {
        self.max_time.load(Ordering::Acquire)
    }

    /// Lowest timestamp an append may carry right now (Prometheus'
    /// "appendable min valid time": half a chunk range behind the newest sample).
    pub fn appendable_min_valid_time(&self) -> i64 {
        let max = self.max_time();
        let min_valid = self.min_valid_time.load(Ordering::Acquire);
        if max == i64::MIN {
            return min_valid;
        }
        (max - self.opts.chunk_range / 2).max(min_valid)
    }

    /// Refuses samples before `t` from now on (the newest block's end).
    pub(crate) fn set_min_valid_time(&self, t: i64) {
        self.min_valid_time.fetch_max(t, Ordering::AcqRel);
    }

    pub(crate) fn min_valid_time(&self) -> i64 {
        self.min_valid_time.load(Ordering::Acquire)
    }

    pub(crate) fn next_series_ref(&self) -> u64 {
        self.next_ref.fetch_add(1, Ordering::AcqRel)
    }

    /// Makes sure new refs are above `r` (after replay).
    pub(crate) fn bump_series_ref(&self, r: u64) {
        self.next_ref
            .fetch_max(r.saturating_add(1), Ordering::AcqRel);
    }

    pub(crate) fn update_time_range(&self, mint: i64, maxt: i64) {
        if mint <= maxt {
            self.min_time.fetch_min(mint, Ordering::AcqRel);
            self.max_time.fetch_max(maxt, Ordering::AcqRel);
        }
    }

    /// Records deleted time ranges (inclusive) of a series.
    pub(crate) fn add_tombstones(&self, series_ref: u64, intervals: &[(i64, i64)]) {
        if intervals.is_empty() {
            return;
        }
        let mut t = self.tombstones.write();
        let list = t.entry(series_ref).or_default();
        list.extend_from_slice(intervals);
        list.sort_unstable();
    }

    /// Deletes the samples of the series matching `matchers` in [mint, maxt]
    /// (inclusive): tombstones, logged to the WAL first so they survive a
    /// restart, as Prometheus does. Returns how many series were affected.
    pub fn delete(&self, refs: &[u64], mint: i64, maxt: i64) -> Result<usize, HeadError> {
        if refs.is_empty() {
            return Ok(0);
        }
        let stones: Vec<ferrite_wal::record::Stone> = refs
            .iter()
            .map(|&r| ferrite_wal::record::Stone {
                series_ref: r,
                intervals: vec![(mint, maxt)],
            })
            .collect();
        if let Some(w) = self.wal.lock().as_mut() {
            let mut buf = Vec::new();
            ferrite_wal::record::encode_tombstones(&mut buf, &stones);
            w.log(&[&buf])?;
        }
        for &r in refs {
            self.add_tombstones(r, &[(mint, maxt)]);
        }
        Ok(refs.len())
    }

    /// Deleted time ranges of a series.
    pub(crate) fn tombstones_of(&self, series_ref: u64) -> Vec<(i64, i64)> {
        self.tombstones
            .read()
            .get(&series_ref)
            .cloned()
            .unwrap_or_default()
    }

    /// The label set of a series, resolved from interned symbols.
    pub(crate) fn resolve_labels(&self, ids: &[SymbolId]) -> Labels {
        self.symbols.with_resolver(|r| {
            Labels::from_sorted(
                ids.chunks_exact(2)
                    .map(|p| Label {
                        name: r.get(p[0]).into(),
                        value: r.get(p[1]).into(),
                    })
                    .collect(),
            )
        })
    }

    /// Flushes the WAL and the head chunks and closes them. The open chunks
    /// stay only in the WAL, as in Prometheus.
    pub fn close(&self) -> Result<(), HeadError> {
        let wal = self.wal.lock().take();
        let wal_res = wal.map(|w| w.close()).transpose();
        let wbl = self.wbl.lock().take();
        let wbl_res = wbl.map(|w| w.close()).transpose();
        let mapper_res = self.mapper.close();
        wal_res?;
        wbl_res?;
        mapper_res?;
        Ok(())
    }
}
