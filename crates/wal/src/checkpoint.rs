//! WAL checkpoints, compatible with Prometheus v3.9.1 (`tsdb/wlog/checkpoint.go`).
//!
//! The WAL only grows; once the head has compacted old data into blocks, the
//! segments holding it are replaced by a checkpoint: `wal/checkpoint.NNNNNNNN/`,
//! an ordinary segmented WAL directory with what is still needed from the
//! previous checkpoint and segments up to `NNNNNNNN`. Replay reads the newest
//! checkpoint, then the segments after it ([`replay_sources`]).
//!
//! What survives (the same filter as Prometheus, so the two produce the same
//! records and either can replay the other's checkpoint):
//!
//! * series records of series `keep_series` accepts;
//! * float and histogram samples and exemplars with `t >= mint`. Like
//!   Prometheus, these are not filtered by series: replay drops samples of
//!   unknown series anyway, and the output stays record-for-record identical
//!   to `wlog.Checkpoint`'s;
//! * tombstone intervals ending at or after `mint`;
//! * the latest metadata of each kept series, written last (sorted by ref,
//!   where Prometheus uses random map order);
//! * no mmap markers and no records of unknown types;
//! * first of all, a `min_valid_time` record (type 14, as Prometheus v3.16
//!   writes into every checkpoint): the higher of this truncation's `mint`
//!   and the value the previous checkpoint recorded
//!   ([`read_min_valid_time`]), so the value never goes back across
//!   restarts; the previous checkpoint's own copy is not copied over.
//!
//! Two deliberate differences in histogram handling: histograms with a schema
//! Prometheus does not know are dropped (its decoder skips them too), but
//! reserved high-resolution schemas are kept as they are where Prometheus
//! would reduce their resolution while reading, which it still does when it
//! replays our checkpoint. Custom-bucket histograms found in plain histogram
//! records (older writers) are kept; Prometheus' encoder would drop them.
//!
//! Atomicity: the checkpoint is written to `checkpoint.NNNNNNNN.tmp`, fsynced
//! and renamed, so a crash never leaves a partial checkpoint under a name
//! replay reads. Leftover `.tmp` directories are ignored by
//! [`last_checkpoint`] and removed by the next checkpoint of the same index or
//! by [`remove_tmp_checkpoints`].

use std::collections::HashMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::record::{self, RecordError, RecordType};
use crate::segment::sync_dir;
use crate::{RecordReader, SegmentRef, WalError, WalOptions, WalWriter};

/// Prefix of checkpoint directory names.
pub const CHECKPOINT_PREFIX: &str = "checkpoint.";
/// Suffix of a checkpoint directory being written.
const TMP_SUFFIX: &str = ".tmp";
/// Records are handed to the writer in batches of about this size.
const FLUSH_BYTES: usize = 1 << 20;
/// Batches a reader of later segments may hold while the writer is still
/// busy with earlier ones.
const LOOKAHEAD_BATCHES: usize = 16;
/// The most threads reading segments for one checkpoint.
const MAX_READERS: usize = 4;

/// Failure to create or delete a checkpoint.
///
/// Reading errors are kept apart from [`WalError::Corruption`] on purpose:
/// a damaged segment found while checkpointing must not be "repaired" by
/// truncation, because the head cannot tell which series records were lost.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// Listing the WAL directory failed.
    #[error(transparent)]
    Wal(#[from] WalError),
    #[error("checkpoint I/O on {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// A segment of the previous checkpoint or of the WAL could not be read.
    #[error("reading {dir} for a checkpoint: {source}")]
    Read {
        dir: PathBuf,
        #[source]
        source: WalError,
    },
    /// A record could be read but not decoded.
    #[error(
        "undecodable {record_type} record in {dir}, segment {segment:08} offset {offset}: {source}"
    )]
    Record {
        dir: PathBuf,
        segment: u32,
        offset: u64,
        record_type: &'static str,
        #[source]
        source: RecordError,
    },
    /// Writing the new checkpoint failed.
    #[error("writing checkpoint {dir}: {source}")]
    Write {
        dir: PathBuf,
        #[source]
        source: WalError,
    },
    /// Segments between the last checkpoint and `from` would be lost.
    #[error("gap after checkpoint {last_checkpoint:08}: next checkpoint must start at or before segment {expected}, not {from:08}")]
    Gap {
        last_checkpoint: u32,
        expected: u64,
        from: u32,
    },
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> CheckpointError + '_ {
    move |source| CheckpointError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Directory name of checkpoint `index`: `checkpoint.%08d`, as Prometheus.
pub fn checkpoint_dir_name(index: u32) -> String {
    format!("{CHECKPOINT_PREFIX}{index:08}")
}

/// The index of a complete checkpoint directory name (`None` for `.tmp`
/// directories and anything else).
pub fn parse_checkpoint_name(name: &str) -> Option<u32> {
    let digits = name.strip_prefix(CHECKPOINT_PREFIX)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Complete checkpoints in `wal_dir`, sorted by index. A missing directory
/// has none. Like Prometheus, a non-directory named like a checkpoint is an
/// error: replaying without it would silently lose data.
fn list_checkpoints(wal_dir: &Path) -> Result<Vec<(u32, PathBuf)>, WalError> {
    let entries = match fs::read_dir(wal_dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    let mut checkpoints = Vec::new();
    for entry in entries {
        let entry = entry?;
        let Some(index) = entry.file_name().to_str().and_then(parse_checkpoint_name) else {
            continue;
        };
        if !entry.file_type()?.is_dir() {
            return Err(WalError::Io(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("checkpoint {} is not a directory", entry.path().display()),
            )));
        }
        checkpoints.push((index, entry.path()));
    }
    checkpoints.sort_by_key(|&(index, _)| index);
    Ok(checkpoints)
}

/// The newest complete checkpoint in `wal_dir`: its path and index.
pub fn last_checkpoint(wal_dir: &Path) -> Result<Option<(PathBuf, u32)>, WalError> {
    Ok(list_checkpoints(wal_dir)?
        .pop()
        .map(|(index, path)| (path, index)))
}

/// The newest checkpoint (path, index), if any, and the segments after it.
pub type ReplaySources = (Option<(PathBuf, u32)>, Vec<SegmentRef>);

/// What replay reads, in order: the newest checkpoint (if any), then the WAL
/// segments after it.
///
/// As in Prometheus, segments at or below the checkpoint index (left behind
/// when a crash interrupted truncation) are skipped, and the segments after
/// it must follow it without a gap.
pub fn replay_sources(wal_dir: &Path) -> Result<ReplaySources, WalError> {
    let checkpoint = last_checkpoint(wal_dir)?;
    let segments = match &checkpoint {
        None => crate::segment::list_segments_in_range(wal_dir, 0, u32::MAX)?,
        Some((_, index)) => match index.checked_add(1) {
            None => Vec::new(),
            Some(first) => {
                let segments = crate::segment::list_segments_in_range(wal_dir, first, u32::MAX)?;
                if let Some(s) = segments.first().filter(|s| s.index != first) {
                    return Err(WalError::NonSequentialSegments {
                        dir: wal_dir.to_path_buf(),
                        before: *index,
                        after: s.index,
                    });
                }
                segments
            }
        },
    };
    Ok((checkpoint, segments))
}

/// The min valid time recorded by the newest checkpoint in `wal_dir`: its
/// first record, if that is a `min_valid_time` record (Prometheus v3.16's
/// `wlog.ReadMinValidTime`). `None` without a checkpoint or when the
/// checkpoint predates the record (Prometheus before v3.16, or Ferrite
/// before it wrote one).
pub fn read_min_valid_time(wal_dir: &Path) -> Result<Option<i64>, CheckpointError> {
    let Some((dir, _)) = last_checkpoint(wal_dir)? else {
        return Ok(None);
    };
    let segments = crate::segment::list_segments_in_range(&dir, 0, u32::MAX)?;
    let mut reader = RecordReader::new(segments);
    let rec = match reader.next_record() {
        Ok(Some(rec)) => rec,
        Ok(None) => return Ok(None),
        Err(source) => return Err(CheckpointError::Read { dir, source }),
    };
    if RecordType::of(rec) != RecordType::MinValidTime {
        return Ok(None);
    }
    match record::decode_min_valid_time(rec) {
        Ok(t) => Ok(Some(t)),
        Err(source) => Err(CheckpointError::Record {
            segment: reader.segment(),
            offset: reader.offset(),
            dir,
            record_type: RecordType::MinValidTime.name(),
            source,
        }),
    }
}

/// What a checkpoint processed and dropped. Samples include histogram
/// samples; tombstones count intervals.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CheckpointStats {
    pub total_series: u64,
    pub dropped_series: u64,
    pub total_samples: u64,
    pub dropped_samples: u64,
    pub total_tombstones: u64,
    pub dropped_tombstones: u64,
    pub total_exemplars: u64,
    pub dropped_exemplars: u64,
    /// Metadata entries read; all but the latest of each kept series drop.
    pub total_metadata: u64,
    pub dropped_metadata: u64,
    /// Mmap marker and unknown-type records, never checkpointed.
    pub skipped_records: u64,
}

impl CheckpointStats {
    /// Adds what `other` counted (of other segments) to these counts.
    fn add(&mut self, other: &CheckpointStats) {
        self.total_series += other.total_series;
        self.dropped_series += other.dropped_series;
        self.total_samples += other.total_samples;
        self.dropped_samples += other.dropped_samples;
        self.total_tombstones += other.total_tombstones;
        self.dropped_tombstones += other.dropped_tombstones;
        self.total_exemplars += other.total_exemplars;
        self.dropped_exemplars += other.dropped_exemplars;
        self.total_metadata += other.total_metadata;
        self.dropped_metadata += other.dropped_metadata;
        self.skipped_records += other.skipped_records;
    }

    pub fn kept_series(&self) -> u64 {
        self.total_series - self.dropped_series
    }
    pub fn kept_samples(&self) -> u64 {
        self.total_samples - self.dropped_samples
    }
    pub fn kept_tombstones(&self) -> u64 {
        self.total_tombstones - self.dropped_tombstones
    }
    pub fn kept_exemplars(&self) -> u64 {
        self.total_exemplars - self.dropped_exemplars
    }
    pub fn kept_metadata(&self) -> u64 {
        self.total_metadata - self.dropped_metadata
    }
}

/// Writes `checkpoint.{to}` from the newest existing checkpoint and WAL
/// segments `from..=to`, keeping what is described in the module docs.
///
/// As in Prometheus, when a checkpoint exists the range really starts right
/// after it (segments below it are ignored), and `from` beyond that point is
/// a [`CheckpointError::Gap`]. The previous checkpoint is not deleted (see
/// [`delete_checkpoints`]). On error nothing new is left visible.
pub fn write_checkpoint(
    wal_dir: &Path,
    from: u32,
    to: u32,
    keep_series: &(dyn Fn(u64) -> bool + Sync),
    mint: i64,
    opts: WalOptions,
) -> Result<CheckpointStats, CheckpointError> {
    let mut sources: Vec<(PathBuf, Vec<SegmentRef>)> = Vec::new();
    // First WAL segment to read; `None` if none can follow the checkpoint.
    let mut wal_first = Some(from);
    if let Some((dir, index)) = last_checkpoint(wal_dir)? {
        let expected = u64::from(index) + 1;
        if u64::from(from) > expected {
            return Err(CheckpointError::Gap {
                last_checkpoint: index,
                expected,
                from,
            });
        }
        let segments = crate::segment::list_segments_in_range(&dir, 0, u32::MAX)?;
        sources.push((dir, segments));
        wal_first = index.checked_add(1);
    }
    let wal_segments = match wal_first {
        Some(first) if first <= to => crate::segment::list_segments_in_range(wal_dir, first, to)?,
        _ => Vec::new(),
    };
    sources.push((wal_dir.to_path_buf(), wal_segments));
    let min_valid_time = read_min_valid_time(wal_dir)?.map_or(mint, |prev| prev.max(mint));

    let final_dir = wal_dir.join(checkpoint_dir_name(to));
    let tmp_dir = wal_dir.join(format!("{}{TMP_SUFFIX}", checkpoint_dir_name(to)));
    remove_dir_if_exists(&tmp_dir)?;
    fs::create_dir_all(&tmp_dir).map_err(io_err(&tmp_dir))?;

    let written = write_tmp_checkpoint(
        &tmp_dir,
        &sources,
        keep_series,
        (mint, min_valid_time),
        opts,
        reader_threads(),
    )
    .and_then(|stats| {
        sync_dir(&tmp_dir).map_err(io_err(&tmp_dir))?;
        Ok(stats)
    });
    let stats = match written {
        Ok(stats) => stats,
        Err(e) => {
            // Best effort: a leftover .tmp is harmless and removed next time.
            let _ = fs::remove_dir_all(&tmp_dir);
            return Err(e);
        }
    };
    // Re-checkpointing an existing index replaces it (as Prometheus does).
    remove_dir_if_exists(&final_dir)?;
    fs::rename(&tmp_dir, &final_dir).map_err(io_err(&final_dir))?;
    sync_dir(wal_dir).map_err(io_err(wal_dir))?;
    Ok(stats)
}

fn remove_dir_if_exists(dir: &Path) -> Result<(), CheckpointError> {
    match fs::remove_dir_all(dir) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(io_err(dir)(e)),
        _ => Ok(()),
    }
}

/// Filters all records of `sources` into a new WAL in `tmp_dir`.
fn write_tmp_checkpoint(
    tmp_dir: &Path,
    sources: &[(PathBuf, Vec<SegmentRef>)],
    keep_series: &(dyn Fn(u64) -> bool + Sync),
    (mint, min_valid_time): (i64, i64),
    opts: WalOptions,
    readers: usize,
) -> Result<CheckpointStats, CheckpointError> {
    let write_err = |source| CheckpointError::Write {
        dir: tmp_dir.to_path_buf(),
        source,
    };
    let mut writer = WalWriter::open(tmp_dir, opts).map_err(write_err)?;
    let mut first = Vec::with_capacity(9);
    record::encode_min_valid_time(&mut first, min_valid_time);
    writer.log(&[&first]).map_err(write_err)?;
    let groups = split_sources(sources, readers);
    // Each group of segments is read, decompressed and filtered on its own
    // thread; one more writes the kept records in segment order, after
    // compressing them. A later group reads ahead by at most
    // `LOOKAHEAD_BATCHES` batches while the writer is still on an earlier
    // one, so what waits is bounded however much is kept.
    let (senders, receivers): (Vec<_>, Vec<_>) = (0..groups.len())
        .map(|i| std::sync::mpsc::sync_channel::<Batch>(if i == 0 { 2 } else { LOOKAHEAD_BATCHES }))
        .unzip();
    let (read_results, writer) = std::thread::scope(|scope| {
        let handle = scope.spawn(move || -> Result<WalWriter, WalError> {
            let mut writer = writer;
            for rx in receivers {
                for mut batch in rx {
                    batch.flush(&mut writer)?;
                }
            }
            Ok(writer)
        });
        let readers: Vec<_> = groups
            .iter()
            .zip(senders)
            .map(|(group, tx)| {
                scope.spawn(move || {
                    let mut filter = Filter::new(keep_series, mint);
                    read_sources(group, &mut filter, &tx).map(|()| filter)
                })
            })
            .collect();
        let results: Vec<_> = readers
            .into_iter()
            .map(|reader| {
                reader.join().unwrap_or_else(|_| {
                    Err(CheckpointError::Io {
                        path: tmp_dir.to_path_buf(),
                        source: io::Error::other("checkpoint reader panicked"),
                    })
                })
            })
            .collect();
        let writer = handle
            .join()
            .unwrap_or_else(|_| Err(WalError::Io(io::Error::other("checkpoint writer panicked"))));
        (results, writer)
    });
    let mut writer = writer.map_err(write_err)?;
    let mut filter = Filter::new(keep_series, mint);
    for result in read_results {
        filter.absorb(result?);
    }

    // Latest metadata last, in records of bounded size.
    let mut metadata: Vec<record::RefMetadata> =
        filter.latest_metadata.drain().map(|(_, m)| m).collect();
    metadata.sort_by_key(|m| m.series_ref);
    let mut start = 0;
    while start < metadata.len() {
        let mut end = start;
        let mut size = 0;
        while end < metadata.len() && (end == start || size < FLUSH_BYTES) {
            size += metadata_entry_len(&metadata[end]);
            end += 1;
        }
        record::encode_metadata(&mut filter.out, &metadata[start..end]);
        writer.log(&[&filter.out]).map_err(write_err)?;
        start = end;
    }
    writer.close().map_err(write_err)?;
    Ok(filter.stats)
}

/// Threads that read segments for a checkpoint: the cores there are, at
/// most [`MAX_READERS`].
fn reader_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(MAX_READERS))
}

/// The segments of `sources` (in order) as at most `max_groups` runs of
/// consecutive segments of about equal size, each run's segments grouped by
/// directory. Records never continue into the next segment, so each run
/// can be read on its own. Always at least one (maybe empty) run.
fn split_sources(
    sources: &[(PathBuf, Vec<SegmentRef>)],
    max_groups: usize,
) -> Vec<Vec<(PathBuf, Vec<SegmentRef>)>> {
    let sized: Vec<(&Path, &SegmentRef, u64)> = sources
        .iter()
        .flat_map(|(dir, segments)| {
            segments.iter().map(move |seg| {
                // An unreadable size only skews the split; reading reports it.
                let len = fs::metadata(&seg.path).map_or(0, |m| m.len());
                (dir.as_path(), seg, len)
            })
        })
        .collect();
    let total: u64 = sized.iter().map(|&(_, _, len)| len.max(1)).sum();
    let groups = max_groups.clamp(1, sized.len().max(1)) as u64;
    let mut out: Vec<Vec<(PathBuf, Vec<SegmentRef>)>> = Vec::new();
    // A segment goes to the run its first byte falls in.
    let (mut before, mut run) = (0u64, None);
    for (dir, seg, len) in sized {
        let this_run = (u128::from(before) * u128::from(groups) / u128::from(total.max(1))) as u64;
        if run != Some(this_run) {
            out.push(Vec::new());
            run = Some(this_run);
        }
        if let Some(current) = out.last_mut() {
            match current.last_mut() {
                Some((d, segs)) if d.as_path() == dir => segs.push(seg.clone()),
                _ => current.push((dir.to_path_buf(), vec![seg.clone()])),
            }
        }
        // Empty segments weigh one byte, so equal ones still spread.
        before += len.max(1);
    }
    if out.is_empty() {
        out.push(Vec::new());
    }
    out
}

/// Reads every record of `sources` through `filter`, sending the kept ones
/// to the writer thread in batches. A send fails only if the writer
/// stopped; its error is the one reported.
fn read_sources(
    sources: &[(PathBuf, Vec<SegmentRef>)],
    filter: &mut Filter<'_>,
    tx: &std::sync::mpsc::SyncSender<Batch>,
) -> Result<(), CheckpointError> {
    let mut batch = Batch::default();
    for (dir, segments) in sources {
        let mut reader = RecordReader::new(segments.clone());
        loop {
            let rec = match reader.next_record() {
                Ok(Some(rec)) => rec,
                Ok(None) => break,
                Err(source) => {
                    return Err(CheckpointError::Read {
                        dir: dir.clone(),
                        source,
                    })
                }
            };
            let record_type = RecordType::of(rec).name();
            let kept = filter.process(rec);
            match kept {
                Ok(true) => {
                    batch.push(&filter.out);
                    if !filter.out_custom.is_empty() {
                        batch.push(&filter.out_custom);
                    }
                }
                Ok(false) => {}
                Err(source) => {
                    return Err(CheckpointError::Record {
                        dir: dir.clone(),
                        segment: reader.segment(),
                        offset: reader.offset(),
                        record_type,
                        source,
                    })
                }
            }
            if batch.buf.len() >= FLUSH_BYTES && tx.send(std::mem::take(&mut batch)).is_err() {
                return Ok(());
            }
        }
    }
    let _ = tx.send(batch);
    Ok(())
}

/// Upper bound of an encoded metadata entry's size.
fn metadata_entry_len(m: &record::RefMetadata) -> usize {
    32 + m.unit.len() + m.help.len()
}

/// Filtered records waiting to be written, back to back in one buffer.
#[derive(Default)]
struct Batch {
    buf: Vec<u8>,
    ends: Vec<usize>,
}

impl Batch {
    fn push(&mut self, rec: &[u8]) {
        self.buf.extend_from_slice(rec);
        self.ends.push(self.buf.len());
    }

    fn flush(&mut self, writer: &mut WalWriter) -> Result<(), WalError> {
        if self.ends.is_empty() {
            return Ok(());
        }
        let mut records = Vec::with_capacity(self.ends.len());
        let mut start = 0;
        for &end in &self.ends {
            records.push(self.buf.get(start..end).unwrap_or_default());
            start = end;
        }
        writer.log(&records)?;
        self.buf.clear();
        self.ends.clear();
        Ok(())
    }
}

/// Decides record by record what goes into the checkpoint, with reused
/// decode buffers.
struct Filter<'k> {
    keep_series: &'k (dyn Fn(u64) -> bool + Sync),
    mint: i64,
    stats: CheckpointStats,
    /// The filtered record to write.
    out: Vec<u8>,
    /// A second record to write after `out` when not empty: the custom
    /// buckets histograms split off a record that had both kinds.
    out_custom: Vec<u8>,
    samples: Vec<record::RefSample>,
    histograms: Vec<record::RefHistogramSample>,
    float_histograms: Vec<record::RefFloatHistogramSample>,
    stones: Vec<record::Stone>,
    exemplars: Vec<record::RefExemplar>,
    metadata: Vec<record::RefMetadata>,
    latest_metadata: HashMap<u64, record::RefMetadata>,
}

impl<'k> Filter<'k> {
    fn new(keep_series: &'k (dyn Fn(u64) -> bool + Sync), mint: i64) -> Self {
        Filter {
            keep_series,
            mint,
            stats: CheckpointStats::default(),
            out: Vec::new(),
            out_custom: Vec::new(),
            samples: Vec::new(),
            histograms: Vec::new(),
            float_histograms: Vec::new(),
            stones: Vec::new(),
            exemplars: Vec::new(),
            metadata: Vec::new(),
            latest_metadata: HashMap::new(),
        }
    }

    /// Takes in what `later` (which read the segments after this one's)
    /// counted and kept: its stats and its series' latest metadata.
    fn absorb(&mut self, later: Filter<'_>) {
        self.stats.add(&later.stats);
        self.latest_metadata.extend(later.latest_metadata);
        // All but one entry per kept series dropped, across the readers.
        self.stats.dropped_metadata = self.stats.total_metadata - self.latest_metadata.len() as u64;
    }

    /// Keeps a float samples record's samples from `mint` on, as a v1
    /// record in `self.out`.
    fn filter_samples(&mut self, rec: &[u8]) -> Result<bool, RecordError> {
        record::decode_samples(rec, &mut self.samples)?;
        let total = self.samples.len();
        self.samples.retain(|s| s.t >= self.mint);
        count(
            &mut self.stats.total_samples,
            &mut self.stats.dropped_samples,
            total,
            self.samples.len(),
        );
        record::encode_samples(&mut self.out, &self.samples);
        Ok(!self.samples.is_empty())
    }

    /// Filters `rec` into `self.out` (and `self.out_custom`); `Ok(false)`
    /// if nothing of it is kept.
    fn process(&mut self, rec: &[u8]) -> Result<bool, RecordError> {
        self.out_custom.clear();
        let mint = self.mint;
        let keep = self.keep_series;
        let stats = &mut self.stats;
        match RecordType::of(rec) {
            RecordType::Series => {
                let mut builder = record::SeriesRecordBuilder::new(&mut self.out);
                let mut total = 0;
                record::decode_series(rec, |series_ref, labels| {
                    total += 1;
                    if keep(series_ref) {
                        builder.add(series_ref, labels);
                    }
                })?;
                let kept = builder.series_count() as u64;
                stats.total_series += total;
                stats.dropped_series += total - kept;
                Ok(kept > 0)
            }
            RecordType::Samples => {
                // Most records are kept or dropped whole: a scan of the
                // timestamps decides, and a record kept whole is copied as it
                // is (the same bytes re-encoding it would give).
                let (mut total, mut kept) = (0usize, 0usize);
                record::for_each_sample(rec, |_, t, _| {
                    total += 1;
                    kept += usize::from(t >= mint);
                })?;
                if kept == total || kept == 0 {
                    count(
                        &mut stats.total_samples,
                        &mut stats.dropped_samples,
                        total,
                        kept,
                    );
                    self.out.clear();
                    if kept > 0 {
                        self.out.extend_from_slice(rec);
                    }
                    return Ok(kept > 0);
                }
                self.filter_samples(rec)
            }
            // Start timestamps are not kept: Prometheus v3.16 without its
            // `st-storage` feature rewrites these as v1 records too.
            RecordType::SamplesV2 => self.filter_samples(rec),
            RecordType::HistogramSamples
            | RecordType::CustomBucketsHistogramSamples
            | RecordType::HistogramSamplesV2 => {
                record::decode_histogram_samples(rec, &mut self.histograms)?;
                let kept =
                    keep_histograms(&mut self.histograms, mint, |h| (h.h.schema, h.t), stats);
                if RecordType::of(rec) == RecordType::CustomBucketsHistogramSamples {
                    // A custom buckets record stays one, as in Prometheus.
                    record::encode_custom_buckets_histogram_samples(
                        &mut self.out,
                        &self.histograms,
                    );
                } else {
                    split_records(&mut self.out, &mut self.out_custom, |a, b| {
                        record::encode_histogram_samples_split(a, b, &self.histograms)
                    });
                }
                Ok(kept)
            }
            RecordType::FloatHistogramSamples
            | RecordType::CustomBucketsFloatHistogramSamples
            | RecordType::FloatHistogramSamplesV2 => {
                record::decode_float_histogram_samples(rec, &mut self.float_histograms)?;
                let kept = keep_histograms(
                    &mut self.float_histograms,
                    mint,
                    |h| (h.h.schema, h.t),
                    stats,
                );
                if RecordType::of(rec) == RecordType::CustomBucketsFloatHistogramSamples {
                    record::encode_custom_buckets_float_histogram_samples(
                        &mut self.out,
                        &self.float_histograms,
                    );
                } else {
                    split_records(&mut self.out, &mut self.out_custom, |a, b| {
                        record::encode_float_histogram_samples_split(a, b, &self.float_histograms)
                    });
                }
                Ok(kept)
            }
            RecordType::Tombstones => {
                record::decode_tombstones(rec, &mut self.stones)?;
                let (mut total, mut kept) = (0, 0);
                for stone in &mut self.stones {
                    total += stone.intervals.len();
                    stone.intervals.retain(|&(_, maxt)| maxt >= mint);
                    kept += stone.intervals.len();
                }
                count(
                    &mut stats.total_tombstones,
                    &mut stats.dropped_tombstones,
                    total,
                    kept,
                );
                record::encode_tombstones(&mut self.out, &self.stones);
                Ok(kept > 0)
            }
            RecordType::Exemplars => {
                record::decode_exemplars(rec, &mut self.exemplars)?;
                let total = self.exemplars.len();
                self.exemplars.retain(|e| e.t >= mint);
                count(
                    &mut stats.total_exemplars,
                    &mut stats.dropped_exemplars,
                    total,
                    self.exemplars.len(),
                );
                record::encode_exemplars(&mut self.out, &self.exemplars);
                Ok(!self.exemplars.is_empty())
            }
            RecordType::Metadata => {
                record::decode_metadata(rec, &mut self.metadata)?;
                let total = self.metadata.len();
                let mut new_series = 0;
                for m in self.metadata.drain(..) {
                    if keep(m.series_ref) && self.latest_metadata.insert(m.series_ref, m).is_none()
                    {
                        new_series += 1;
                    }
                }
                count(
                    &mut stats.total_metadata,
                    &mut stats.dropped_metadata,
                    total,
                    new_series,
                );
                Ok(false)
            }
            // The previous checkpoint's copy: already folded into the new
            // checkpoint's first record.
            RecordType::MinValidTime => Ok(false),
            RecordType::MmapMarkers | RecordType::Unknown(_) => {
                stats.skipped_records += 1;
                Ok(false)
            }
        }
    }
}

/// Drops histogram samples of schemas Prometheus' decoder drops (they are
/// not counted), then those before `mint`; whether any are left.
/// `schema_and_time` reads a sample's histogram schema and time.
fn keep_histograms<S>(
    samples: &mut Vec<S>,
    mint: i64,
    schema_and_time: impl Fn(&S) -> (i32, i64),
    stats: &mut CheckpointStats,
) -> bool {
    samples.retain(|s| record::is_known_schema(schema_and_time(s).0));
    let total = samples.len();
    samples.retain(|s| schema_and_time(s).1 >= mint);
    count(
        &mut stats.total_samples,
        &mut stats.dropped_samples,
        total,
        samples.len(),
    );
    !samples.is_empty()
}

/// Writes kept histogram samples as Prometheus v3.16's checkpoint does
/// (v1 records) from any record but a custom buckets one: `encode` splits
/// them into an exponential record and a custom buckets one; the first
/// non-empty goes to `out`, a second one to `out_custom`.
fn split_records(
    out: &mut Vec<u8>,
    out_custom: &mut Vec<u8>,
    encode: impl FnOnce(&mut Vec<u8>, &mut Vec<u8>),
) {
    encode(out, out_custom);
    if out.is_empty() {
        std::mem::swap(out, out_custom);
    }
}

/// Adds `total` processed entries of which `kept` survived to the stats.
fn count(total_stat: &mut u64, dropped_stat: &mut u64, total: usize, kept: usize) {
    *total_stat += total as u64;
    *dropped_stat += total.saturating_sub(kept) as u64;
}

/// Deletes the checkpoints with index < `max_index`, oldest first, and
/// leftover `.tmp` directories of such indexes. Every deletion is attempted;
/// the first failure is returned.
pub fn delete_checkpoints(wal_dir: &Path, max_index: u32) -> Result<(), CheckpointError> {
    let mut doomed = list_checkpoints(wal_dir)?;
    doomed.extend(list_tmp_checkpoints(wal_dir)?);
    doomed.retain(|&(index, _)| index < max_index);
    doomed.sort_by_key(|&(index, _)| index);
    let mut first_error = None;
    for (_, path) in &doomed {
        if let Err(e) = remove_dir_if_exists(path) {
            first_error.get_or_insert(e);
        }
    }
    if !doomed.is_empty() {
        if let Err(e) = sync_dir(wal_dir) {
            first_error.get_or_insert(io_err(wal_dir)(e));
        }
    }
    first_error.map_or(Ok(()), Err)
}

/// Removes every leftover `checkpoint.NNNNNNNN.tmp` directory (from a crash
/// during [`write_checkpoint`]); returns how many were removed. Call it only
/// while no checkpoint is being written.
pub fn remove_tmp_checkpoints(wal_dir: &Path) -> Result<usize, CheckpointError> {
    let tmp = list_tmp_checkpoints(wal_dir)?;
    for (_, path) in &tmp {
        remove_dir_if_exists(path)?;
    }
    if !tmp.is_empty() {
        sync_dir(wal_dir).map_err(io_err(wal_dir))?;
    }
    Ok(tmp.len())
}

fn list_tmp_checkpoints(wal_dir: &Path) -> Result<Vec<(u32, PathBuf)>, CheckpointError> {
    let entries = match fs::read_dir(wal_dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io_err(wal_dir)(e)),
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.map_err(io_err(wal_dir))?;
        let name = entry.file_name();
        let Some(index) = name
            .to_str()
            .and_then(|n| n.strip_suffix(TMP_SUFFIX))
            .and_then(parse_checkpoint_name)
        else {
            continue;
        };
        out.push((index, entry.path()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]

    use super::*;
    use crate::record::{RefMetadata, RefSample, SeriesRecordBuilder};
    use crate::Compression;
    use proptest::prelude::*;

    /// A WAL of many small segments: series, samples around `mint` (some
    /// records kept whole, some dropped whole, some split) and metadata
    /// repeated across segments.
    fn write_wal(dir: &Path, records: &[(u8, u64, i64)]) {
        let opts = WalOptions {
            segment_size: 32 * 1024,
            compression: Compression::Snappy,
            ..WalOptions::default()
        };
        let mut w = WalWriter::open(dir, opts).unwrap();
        let mut buf = Vec::new();
        for &(kind, series_ref, t) in records {
            match kind % 3 {
                0 => {
                    let mut b = SeriesRecordBuilder::new(&mut buf);
                    let name = format!("s{series_ref}");
                    b.add(series_ref, &[("__name__", name.as_str())]);
                }
                1 => {
                    let samples: Vec<RefSample> = (0..200)
                        .map(|i| RefSample {
                            st: 0,
                            series_ref: series_ref + i % 7,
                            t: t + i as i64,
                            v: i as f64,
                        })
                        .collect();
                    record::encode_samples(&mut buf, &samples);
                }
                _ => record::encode_metadata(
                    &mut buf,
                    &[RefMetadata {
                        series_ref,
                        metric_type: 1,
                        unit: String::new(),
                        help: format!("help at {t}"),
                    }],
                ),
            }
            w.log(&[&buf]).unwrap();
        }
        w.close().unwrap();
    }

    fn checkpoint_with(wal: &Path, out: &Path, readers: usize) -> (CheckpointStats, Vec<Vec<u8>>) {
        let segments = crate::segment::list_segments_in_range(wal, 0, u32::MAX).unwrap();
        let sources = vec![(wal.to_path_buf(), segments)];
        let keep = |r: u64| !r.is_multiple_of(3);
        fs::create_dir_all(out).unwrap();
        let stats = write_tmp_checkpoint(
            out,
            &sources,
            &keep,
            (1000, 1000),
            WalOptions::default(),
            readers,
        )
        .unwrap();
        let segments = crate::segment::list_segments_in_range(out, 0, u32::MAX).unwrap();
        let mut reader = RecordReader::new(segments);
        let mut records = Vec::new();
        while let Some(rec) = reader.next_record().unwrap() {
            records.push(rec.to_vec());
        }
        (stats, records)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        /// Reading the segments on several threads writes the same
        /// records, in the same order, with the same counts, as one
        /// thread does.
        #[test]
        fn readers_in_parallel_write_what_one_reader_writes(
            records in proptest::collection::vec((0u8..3, 0u64..40, 0i64..2000), 1..400),
            readers in 2usize..6,
        ) {
            let tmp = tempfile::tempdir().unwrap();
            let wal = tmp.path().join("wal");
            write_wal(&wal, &records);
            let one = checkpoint_with(&wal, &tmp.path().join("one"), 1);
            let many = checkpoint_with(&wal, &tmp.path().join("many"), readers);
            prop_assert_eq!(one, many);
        }
    }

    #[test]
    fn split_sources_keeps_every_segment_in_order() {
        let tmp = tempfile::tempdir().unwrap();
        let seg = |dir: &Path, index: u32, len: usize| {
            fs::create_dir_all(dir).unwrap();
            let path = crate::segment::segment_path(dir, index);
            fs::write(&path, vec![0u8; len]).unwrap();
            SegmentRef { index, path }
        };
        let (cp, wal) = (
            tmp.path().join("checkpoint.00000002"),
            tmp.path().join("wal"),
        );
        let sources = vec![
            (cp.clone(), vec![seg(&cp, 0, 100)]),
            (wal.clone(), (3..8).map(|i| seg(&wal, i, 100)).collect()),
        ];
        for groups in 1..9 {
            let split = split_sources(&sources, groups);
            assert_eq!(split.len(), groups.min(6), "{groups} groups");
            let flat: Vec<(PathBuf, u32)> = split
                .iter()
                .flatten()
                .flat_map(|(d, segs)| segs.iter().map(move |s| (d.clone(), s.index)))
                .collect();
            let want: Vec<(PathBuf, u32)> = sources
                .iter()
                .flat_map(|(d, segs)| segs.iter().map(move |s| (d.clone(), s.index)))
                .collect();
            assert_eq!(flat, want);
        }
        assert_eq!(split_sources(&[], 4).len(), 1);
    }
}
