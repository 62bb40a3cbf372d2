//! Repairing a WAL after corruption was found while reading it.
//!
//! Like Prometheus, repair keeps everything before the first bad record and
//! drops everything after it, including all later segments: records can
//! depend on earlier ones (samples on series), so a WAL with a hole in the
//! middle is worse than a shorter one.
//!
//! Prometheus rewrites the corrupt segment record by record; cutting the
//! file at the corruption offset has the same result, because the offset is
//! the start of the first bad record and every earlier record lies wholly
//! before it. The cut page is zero padded to its end, as Prometheus pads the
//! rewritten segment. Later segments are deleted newest first, so that a
//! crash during repair leaves a gap-free WAL that the next read re-checks.

use std::fs::{self, OpenOptions};
use std::path::Path;

use crate::error::{Corruption, WalError};
use crate::segment::{list_segments, segment_path, sync_dir, PAGE_SIZE};

/// Truncates the WAL in `dir` just before the corruption `c`, as reported by
/// [`crate::RecordReader`]: segment `c.segment` is cut at `c.offset` and all
/// later segments are deleted. Must run while no [`crate::WalWriter`] is
/// open on `dir`.
pub fn repair(dir: &Path, c: &Corruption) -> Result<(), WalError> {
    tracing::error!(
        dir = %dir.display(),
        segment = c.segment,
        offset = c.offset,
        reason = %c.reason,
        "WAL corruption: keeping records before it, truncating segment and deleting later segments"
    );
    let segments = list_segments(dir)?;
    if !segments.iter().any(|s| s.index == c.segment) {
        return Err(WalError::RepairSegmentMissing(c.segment));
    }

    let path = segment_path(dir, c.segment);
    let file = OpenOptions::new().write(true).open(&path)?;
    let len = file.metadata()?.len();
    if c.offset > len {
        return Err(WalError::RepairOffsetOutOfRange {
            segment: c.segment,
            offset: c.offset,
            len,
        });
    }

    for seg in segments.iter().rev().filter(|s| s.index > c.segment) {
        tracing::warn!(segment = seg.index, "deleting WAL segment after corruption");
        fs::remove_file(&seg.path)?;
    }

    // Two steps: drop the bad bytes, then extend with zeros to the page end.
    file.set_len(c.offset)?;
    file.set_len(c.offset.next_multiple_of(PAGE_SIZE as u64))?;
    file.sync_all()?;
    sync_dir(dir)?;
    Ok(())
}
