//! WAL checkpoints: `wal/checkpoint.NNNNNNNN/`, the compacted content of all
//! segments up to NNNNNNNN.
//!
//! When the head drops old data, the WAL segments that held it are replaced
//! by a checkpoint keeping only what is still needed: series records of live
//! series and samples newer than the cut-off. Replay reads the newest
//! checkpoint, then the segments after it. A checkpoint is written to a
//! `.tmp` directory and renamed, so a crash never leaves a partial one
//! visible (leftover `.tmp` directories are ignored and cleaned up).

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

use tracing::warn;

use crate::record::{self, RecordType};
use crate::{list_segments, RecordReader, SegmentRef, WalError, WalOptions, WalWriter};

const PREFIX: &str = "checkpoint.";

/// Directory name of checkpoint `index`.
pub fn checkpoint_dir_name(index: u32) -> String {
    format!("{PREFIX}{index:08}")
}

fn parse_checkpoint_name(name: &str) -> Option<u32> {
    let digits = name.strip_prefix(PREFIX)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

fn list_checkpoints(wal_dir: &Path) -> Result<Vec<(u32, PathBuf)>, WalError> {
    let mut out = Vec::new();
    let entries = match fs::read_dir(wal_dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(e.into()),
    };
    for e in entries {
        let e = e?;
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some(i) = parse_checkpoint_name(name) {
            if e.file_type()?.is_dir() {
                out.push((i, e.path()));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The newest checkpoint in `wal_dir`: its path and index.
pub fn last_checkpoint(wal_dir: &Path) -> Result<Option<(PathBuf, u32)>, WalError> {
    Ok(list_checkpoints(wal_dir)?.pop().map(|(i, p)| (p, i)))
}

/// What replay reads, in order: the newest checkpoint (if any), then the WAL
/// segments after it. Segments at or before the checkpoint index (left over
/// by an interrupted truncation) are skipped.
pub fn replay_sources(
    wal_dir: &Path,
) -> Result<(Option<(PathBuf, u32)>, Vec<SegmentRef>), WalError> {
    let cp = last_checkpoint(wal_dir)?;
    let segments = match &cp {
        Some((_, idx)) => {
            let all = list_segments_from(wal_dir, idx.saturating_add(1))?;
            all
        }
        None => list_segments(wal_dir)?,
    };
    Ok((cp, segments))
}

/// Segments with index >= `from`; only those must be contiguous.
fn list_segments_from(dir: &Path, from: u32) -> Result<Vec<SegmentRef>, WalError> {
    match list_segments(dir) {
        Ok(all) => Ok(all.into_iter().filter(|s| s.index >= from).collect()),
        Err(WalError::NonSequentialSegments { .. }) => {
            // A gap below the checkpoint does not matter; re-check above it.
            let mut segs: Vec<SegmentRef> = fs::read_dir(dir)?
                .filter_map(|e| e.ok())
                .filter_map(|e| {
                    let name = e.file_name();
                    let index = crate::segment::parse_segment_name(name.to_str()?)?;
                    (index >= from).then(|| SegmentRef {
                        index,
                        path: e.path(),
                    })
                })
                .collect();
            segs.sort_by_key(|s| s.index);
            for w in segs.windows(2) {
                if w[1].index != w[0].index + 1 {
                    return Err(WalError::NonSequentialSegments {
                        dir: dir.to_owned(),
                        before: w[0].index,
                        after: w[1].index,
                    });
                }
            }
            Ok(segs)
        }
        Err(e) => Err(e),
    }
}

/// Counts of what a checkpoint kept and dropped.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CheckpointStats {
    pub series_kept: u64,
    pub series_dropped: u64,
    pub samples_kept: u64,
    pub samples_dropped: u64,
    pub tombstones_kept: u64,
    pub exemplars_kept: u64,
    pub metadata_kept: u64,
    pub records_dropped: u64,
}

/// Writes `checkpoint.{to}` from the previous checkpoint and segments
/// `[from, to]`, keeping series for which `keep_series` is true and samples
/// at or after `mint`.
pub fn write_checkpoint(
    wal_dir: &Path,
    from: u32,
    to: u32,
    keep_series: &dyn Fn(u64) -> bool,
    mint: i64,
    opts: WalOptions,
) -> Result<CheckpointStats, WalError> {
    let mut sources: Vec<Vec<SegmentRef>> = Vec::new();
    if let Some((dir, idx)) = last_checkpoint(wal_dir)? {
        if idx < from || from == 0 {
            sources.push(list_segments(&dir)?);
        }
    }
    sources.push(
        list_segments(wal_dir)?
            .into_iter()
            .filter(|s| s.index >= from && s.index <= to)
            .collect(),
    );

    let final_dir = wal_dir.join(checkpoint_dir_name(to));
    let tmp_dir = wal_dir.join(format!("{}.tmp", checkpoint_dir_name(to)));
    if tmp_dir.exists() {
        fs::remove_dir_all(&tmp_dir)?;
    }
    fs::create_dir_all(&tmp_dir)?;
    let result = (|| {
        let mut w = WalWriter::open(&tmp_dir, opts)?;
        let mut stats = CheckpointStats::default();
        let mut metadata: HashMap<u64, record::RefMetadata> = HashMap::new();
        let mut out = Vec::new();
        let mut samples = Vec::new();
        for segs in sources {
            let mut r = RecordReader::new(segs);
            while let Some(rec) = r.next_record()? {
                out.clear();
                match RecordType::of(rec) {
                    RecordType::Series => {
                        let mut b = record::SeriesRecordBuilder::new(&mut out);
                        let mut any = false;
                        record::decode_series(rec, |r, labels| {
                            if keep_series(r) {
                                b.add(r, labels);
                                stats.series_kept += 1;
                                any = true;
                            } else {
                                stats.series_dropped += 1;
                            }
                        })
                        .map_err(record_err)?;
                        if !any {
                            out.clear();
                        }
                    }
                    RecordType::Samples => {
                        record::decode_samples(rec, &mut samples).map_err(record_err)?;
                        let before = samples.len();
                        samples.retain(|s| s.t >= mint && keep_series(s.series_ref));
                        stats.samples_kept += samples.len() as u64;
                        stats.samples_dropped += (before - samples.len()) as u64;
                        if !samples.is_empty() {
                            record::encode_samples(&mut out, &samples);
                        }
                    }
                    t @ (RecordType::HistogramSamples
                    | RecordType::CustomBucketsHistogramSamples) => {
                        let mut v = Vec::new();
                        record::decode_histogram_samples(rec, &mut v).map_err(record_err)?;
                        v.retain(|s| s.t >= mint && keep_series(s.series_ref));
                        stats.samples_kept += v.len() as u64;
                        if !v.is_empty() {
                            record::encode_histogram_samples(&mut out, t, &v);
                        }
                    }
                    t @ (RecordType::FloatHistogramSamples
                    | RecordType::CustomBucketsFloatHistogramSamples) => {
                        let mut v = Vec::new();
                        record::decode_float_histogram_samples(rec, &mut v).map_err(record_err)?;
                        v.retain(|s| s.t >= mint && keep_series(s.series_ref));
                        stats.samples_kept += v.len() as u64;
                        if !v.is_empty() {
                            record::encode_float_histogram_samples(&mut out, t, &v);
                        }
                    }
                    RecordType::Tombstones => {
                        let mut v = Vec::new();
                        record::decode_tombstones(rec, &mut v).map_err(record_err)?;
                        v.retain_mut(|s| {
                            s.intervals.retain(|&(_, maxt)| maxt >= mint);
                            keep_series(s.series_ref) && !s.intervals.is_empty()
                        });
                        stats.tombstones_kept += v.len() as u64;
                        if !v.is_empty() {
                            record::encode_tombstones(&mut out, &v);
                        }
                    }
                    RecordType::Exemplars => {
                        let mut v = Vec::new();
                        record::decode_exemplars(rec, &mut v).map_err(record_err)?;
                        v.retain(|e| e.t >= mint && keep_series(e.series_ref));
                        stats.exemplars_kept += v.len() as u64;
                        if !v.is_empty() {
                            record::encode_exemplars(&mut out, &v);
                        }
                    }
                    RecordType::Metadata => {
                        let mut v = Vec::new();
                        record::decode_metadata(rec, &mut v).map_err(record_err)?;
                        for m in v {
                            if keep_series(m.series_ref) {
                                metadata.insert(m.series_ref, m);
                            }
                        }
                    }
                    RecordType::MmapMarkers | RecordType::Unknown(_) => {
                        stats.records_dropped += 1;
                    }
                }
                if !out.is_empty() {
                    w.log(&[&out])?;
                }
            }
        }
        if !metadata.is_empty() {
            let mut v: Vec<_> = metadata.into_values().collect();
            v.sort_by_key(|m| m.series_ref);
            stats.metadata_kept = v.len() as u64;
            record::encode_metadata(&mut out, &v);
            w.log(&[&out])?;
        }
        w.close()?;
        Ok(stats)
    })();
    match result {
        Ok(stats) => {
            if final_dir.exists() {
                fs::remove_dir_all(&final_dir)?;
            }
            fs::rename(&tmp_dir, &final_dir)?;
            fs::File::open(wal_dir)?.sync_all()?;
            Ok(stats)
        }
        Err(e) => {
            let _ = fs::remove_dir_all(&tmp_dir);
            Err(e)
        }
    }
}

fn record_err(e: record::RecordError) -> WalError {
    WalError::Corruption(crate::Corruption {
        segment: 0,
        offset: 0,
        reason: format!("undecodable record while checkpointing: {e}"),
    })
}

/// Deletes checkpoints with index < `max_index` and leftover `.tmp` dirs.
pub fn delete_checkpoints(wal_dir: &Path, max_index: u32) -> Result<(), WalError> {
    for (i, p) in list_checkpoints(wal_dir)? {
        if i < max_index {
            fs::remove_dir_all(&p)?;
        }
    }
    for e in fs::read_dir(wal_dir)? {
        let e = e?;
        if let Some(name) = e.file_name().to_str() {
            if name.starts_with(PREFIX) && name.ends_with(".tmp") {
                if let Err(err) = fs::remove_dir_all(e.path()) {
                    warn!(dir = %e.path().display(), error = %err, "removing stale checkpoint dir");
                }
            }
        }
    }
    Ok(())
}
