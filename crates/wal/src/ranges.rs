//! Reading a WAL in page-aligned ranges, in parallel, with the exact result
//! of reading it sequentially.
//!
//! Replay is bound by decompressing and decoding records; one thread per
//! range spreads that over all cores. Fragments never cross pages, so a range
//! can start at any page: [`RecordReader::for_range`] skips the tail of a
//! record begun in an earlier range and reads past its own end to finish the
//! last record it began. Concatenating the ranges' records in order gives the
//! sequential stream; [`stitch`] resolves the one case where a range cannot
//! tell corruption on its own (data after end-of-segment padding that began
//! in the range before).

use std::fs;
use std::io;

use crate::error::{Corruption, WalError};
use crate::reader::RecordReader;
use crate::segment::{SegmentRef, PAGE_SIZE};

/// A page-aligned byte range of one segment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentRange {
    pub segment: SegmentRef,
    pub start: u64,
    pub end: u64,
}

impl SegmentRange {
    /// True for the first range of its segment.
    pub fn is_segment_start(&self) -> bool {
        self.start == 0
    }

    /// A reader of the records that start in this range.
    pub fn reader(&self) -> RecordReader {
        RecordReader::for_range(self.segment.clone(), self.start, self.end)
    }
}

/// Splits `segments` into ranges of about `range_size` bytes (rounded up to
/// whole pages); every segment gets at least one range, even when empty.
pub fn split_segments(
    segments: &[SegmentRef],
    range_size: u64,
) -> Result<Vec<SegmentRange>, WalError> {
    let page = PAGE_SIZE as u64;
    let step = range_size.div_ceil(page).max(1) * page;
    let mut out = Vec::new();
    for seg in segments {
        let len = fs::metadata(&seg.path)
            .map_err(|e| io::Error::new(e.kind(), format!("stat {}: {e}", seg.path.display())))?
            .len();
        let mut start = 0;
        loop {
            let end = start + step;
            out.push(SegmentRange {
                segment: seg.clone(),
                start,
                end,
            });
            if end >= len {
                break;
            }
            start = end;
        }
    }
    Ok(out)
}

/// How reading one range ended, as needed by [`stitch`].
#[derive(Clone, Debug, Default)]
pub struct RangeEnd {
    /// Records the range returned.
    pub records: u64,
    /// The range's own first corruption.
    pub corruption: Option<Corruption>,
    /// Where end-of-segment padding began, if the range ended inside it.
    pub trailing_padding: Option<u64>,
    /// The range began with fragments of an earlier range's record.
    pub skipped_fragments: bool,
}

impl RangeEnd {
    /// Summarises a reader after it returned `records` records and stopped
    /// with `result` (`Ok` at its clean end).
    pub fn of(reader: &RecordReader, records: u64, result: Result<(), Corruption>) -> Self {
        RangeEnd {
            records,
            trailing_padding: reader.trailing_padding(),
            skipped_fragments: reader.skipped_fragments() > 0,
            corruption: result.err(),
        }
    }
}

/// The corruption a sequential read reports at the start of `next`, which
/// follows `prev`: if `prev` ended inside end-of-segment padding of the same
/// segment, anything `next` found (records or damage) is data after that
/// padding (so is a fragment it skipped). When this returns `Some`, none of `next`'s records count. A
/// `next` of nothing but padding carries the padding's start forward.
pub fn stitch(
    prev: &SegmentRange,
    prev_end: &RangeEnd,
    next: &SegmentRange,
    next_end: &mut RangeEnd,
) -> Option<Corruption> {
    let padded_from = prev_end.trailing_padding?;
    if prev.segment.index != next.segment.index {
        return None;
    }
    if next_end.records == 0 && next_end.corruption.is_none() && !next_end.skipped_fragments {
        next_end.trailing_padding = Some(padded_from);
        return None;
    }
    Some(Corruption {
        segment: next.segment.index,
        offset: padded_from,
        reason: "data after end-of-segment padding".into(),
    })
}
