//! Appending records to WAL segments.
//!
//! The writer reproduces Prometheus' `wlog.WL` byte for byte for
//! uncompressed records (compressed bytes depend on the codec library):
//!
//! * opening a WAL always starts a fresh segment after the last existing one,
//!   so a segment torn by a crash is never appended to;
//! * a record is compressed first; if that does not make it smaller it is
//!   stored uncompressed;
//! * before a record, a page with less than a header's worth of room left is
//!   zero padded; then, if the record does not fit in the space left in the
//!   segment (counting one header per remaining page), the segment is closed
//!   and a new one started. A record larger than a whole segment still goes
//!   into a single (oversized) segment: records never span segments;
//! * fragments fill pages; a page left with less than 7 bytes is padded;
//! * a batch ends mid-page without padding; only [`WalWriter::next_segment`]
//!   and [`WalWriter::close`] pad the last page.
//!
//! Unlike Prometheus, which writes page by page, a whole batch is encoded
//! into one reused buffer and handed to the OS in a single `write` (split
//! only where the batch rotates segments). A failed write is rolled back by
//! truncating the segment to its last good length, so the segment never
//! keeps half a batch.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use ferrite_model::selfmetrics::summary::Summary;

use crate::codec::RecordCompressor;
use crate::error::WalError;
use crate::segment::{
    list_segments, segment_path, sync_dir, Compression, FragmentKind, WalOptions,
    FRAGMENT_HEADER_SIZE, MAX_FRAGMENT_DATA, PAGE_SIZE,
};

const PAGE: u64 = PAGE_SIZE as u64;
const HEADER: u64 = FRAGMENT_HEADER_SIZE as u64;

/// Zeros used to pad pages without allocating.
static ZERO_PAGE: [u8; PAGE_SIZE] = [0; PAGE_SIZE];

/// Records compressed ahead of [`WalWriter::log_prepared`]: a record that
/// compression does not shrink is kept as it is (as [`WalWriter::log`]
/// does). Reused from batch to batch.
pub struct PreparedRecords {
    compressor: RecordCompressor,
    bytes: Vec<u8>,
    /// Per record: the compression applied and the end of its bytes.
    records: Vec<(Compression, usize)>,
}

impl PreparedRecords {
    /// Room for records compressed with `kind`.
    pub fn new(kind: Compression) -> Result<Self, WalError> {
        Ok(PreparedRecords {
            compressor: RecordCompressor::new(kind)?,
            bytes: Vec::new(),
            records: Vec::new(),
        })
    }

    /// Bytes its buffers hold on to between batches.
    pub fn held_bytes(&self) -> usize {
        self.bytes.capacity() + self.compressor.held_bytes()
    }

    /// The compression records are prepared with.
    pub fn kind(&self) -> Compression {
        self.compressor.kind()
    }

    /// Compresses `records`, replacing what was prepared before.
    pub fn prepare(&mut self, records: &[&[u8]]) -> Result<(), WalError> {
        self.bytes.clear();
        self.records.clear();
        for rec in records {
            let (applied, data) = self.compressor.compress(rec)?;
            self.bytes.extend_from_slice(data);
            self.records.push((applied, self.bytes.len()));
        }
        Ok(())
    }

    /// The prepared records: (compression applied, bytes to store).
    fn iter(&self) -> impl Iterator<Item = (Compression, &[u8])> + '_ {
        let starts = std::iter::once(0).chain(self.records.iter().map(|&(_, end)| end));
        self.records
            .iter()
            .zip(starts)
            .map(|(&(applied, end), start)| {
                (applied, self.bytes.get(start..end).unwrap_or_default())
            })
    }
}

/// Appends records to the segments of a WAL directory.
pub struct WalWriter {
    dir: PathBuf,
    opts: WalOptions,
    file: File,
    segment: u32,
    /// Bytes of the active segment already handed to the OS.
    written: u64,
    /// Encoded fragments of the batch being logged; reused across calls.
    pending: Vec<u8>,
    /// The records of [`WalWriter::log`], compressed (`None` only while
    /// a batch is logged).
    own: Option<PreparedRecords>,
    /// Set when a failed write could not be rolled back.
    poisoned: bool,
    /// Where each fsync's duration goes (Prometheus'
    /// `prometheus_tsdb_wal_fsync_duration_seconds`), if anywhere.
    fsync_duration: Option<Arc<Summary>>,
}

impl WalWriter {
    /// Opens the WAL in `dir` (created if needed) for appending, in a new
    /// segment after the last existing one.
    pub fn open(dir: &Path, opts: WalOptions) -> Result<Self, WalError> {
        if opts.segment_size == 0 || page_fill(opts.segment_size as u64) != 0 {
            return Err(WalError::InvalidSegmentSize(opts.segment_size));
        }
        fs::create_dir_all(dir)?;
        let segment = match list_segments(dir)?.last() {
            Some(last) => last
                .index
                .checked_add(1)
                .ok_or(WalError::SegmentIndexOverflow(last.index))?,
            None => 0,
        };
        let (file, written) = create_segment(dir, segment)?;
        Ok(WalWriter {
            dir: dir.to_path_buf(),
            own: Some(PreparedRecords::new(opts.compression)?),
            opts,
            file,
            segment,
            written,
            pending: Vec::new(),
            poisoned: false,
            fsync_duration: None,
        })
    }

    /// Appends `records` in order. They reach the OS in one write (two or more
    /// if the batch rotates segments) and are fsynced if `fsync_on_flush`.
    ///
    /// On error, the records of the batch written to earlier segments (before
    /// a rotation) stay; the rest of the batch is removed from disk.
    pub fn log(&mut self, records: &[&[u8]]) -> Result<(), WalError> {
        self.check_usable()?;
        // Compressed into the writer's own buffers, taken out while the
        // batch is placed.
        let mut own = self
            .own
            .take()
            .ok_or_else(|| WalError::Compression("WAL writer buffers missing".into()))?;
        let result = own.prepare(records);
        let result = match result {
            Ok(()) => self.log_prepared(&own),
            Err(e) => Err(e),
        };
        self.own = Some(own);
        result
    }

    /// [`WalWriter::log`] for records compressed beforehand: the writer
    /// only frames and writes them, so compression can run outside the
    /// lock that guards it. The records keep the compression they were
    /// prepared with (each record carries its own flag; prepare them with
    /// the writer's [`WalOptions::compression`]).
    pub fn log_prepared(&mut self, records: &PreparedRecords) -> Result<(), WalError> {
        self.check_usable()?;
        self.pending.clear();
        let result = records
            .iter()
            .try_for_each(|(applied, data)| self.place_record(applied, data))
            .and_then(|()| self.finish_batch());
        if result.is_err() {
            self.roll_back();
        }
        result
    }

    /// Writes the batch in `pending` (and fsyncs it if asked to).
    fn finish_batch(&mut self) -> Result<(), WalError> {
        self.write_pending()?;
        if self.opts.fsync_on_flush {
            self.fsync()?;
        }
        Ok(())
    }

    /// Sends each fsync's duration to `summary` from now on.
    pub fn observe_fsyncs(&mut self, summary: Arc<Summary>) {
        self.fsync_duration = Some(summary);
    }

    /// fsyncs the active segment's data, timed.
    fn fsync(&self) -> Result<(), WalError> {
        self.timed_sync(File::sync_data)
    }

    /// Runs `sync` (`sync_data` or `sync_all`) on the active segment and
    /// sends its duration to the fsync summary, if any.
    fn timed_sync(&self, sync: fn(&File) -> std::io::Result<()>) -> Result<(), WalError> {
        let started = Instant::now();
        sync(&self.file)?;
        if let Some(s) = &self.fsync_duration {
            s.observe(started.elapsed().as_secs_f64());
        }
        Ok(())
    }

    /// Appends the fragments of one record (`data`, stored with `applied`)
    /// to `pending`, padding the page and rotating segments first if
    /// Prometheus would.
    fn place_record(&mut self, applied: Compression, data: &[u8]) -> Result<(), WalError> {
        let fill = self.position() % PAGE;
        if fill != 0 && PAGE - fill < HEADER {
            self.pad_page();
        }
        if data.len() as i128 > self.space_left() {
            self.rotate()?;
        }
        let start = self.written + self.pending.len() as u64;
        encode_fragments(&mut self.pending, start, applied.flag(), data);
        Ok(())
    }

    /// Record bytes that still fit in the active segment: the rest of the
    /// current page and every page left, minus one header each (Prometheus'
    /// rule; negative once an oversized record overran the segment).
    fn space_left(&self) -> i128 {
        let pos = self.position();
        let in_page = (PAGE - pos % PAGE).saturating_sub(HEADER) as i128;
        let pages_per_segment = (self.opts.segment_size / PAGE_SIZE) as i128;
        let pages_after = pages_per_segment - (pos / PAGE) as i128 - 1;
        in_page + MAX_FRAGMENT_DATA as i128 * pages_after
    }

    /// Closes the active segment (padding its last page and fsyncing it) and
    /// starts the next one. Returns the new segment's index.
    pub fn next_segment(&mut self) -> Result<u32, WalError> {
        self.check_usable()?;
        self.pending.clear();
        let result = self.rotate();
        if result.is_err() {
            self.roll_back();
        }
        result.map(|()| self.segment)
    }

    /// Index of the segment being written.
    pub fn current_segment(&self) -> u32 {
        self.segment
    }

    /// Byte offset in the active segment where the next record will go
    /// (the offset half of Prometheus' `LastSegmentAndOffset`).
    pub fn position(&self) -> u64 {
        self.written + self.pending.len() as u64
    }

    /// Directory of the WAL.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Options the writer was opened with.
    pub fn options(&self) -> &WalOptions {
        &self.opts
    }

    /// Deletes segments with index < `before`, oldest first so that a crash
    /// midway leaves a gap-free sequence. The active segment is never deleted.
    pub fn truncate(&mut self, before: u32) -> Result<(), WalError> {
        let limit = before.min(self.segment);
        if limit < before {
            tracing::warn!(
                before,
                active = self.segment,
                "WAL truncation would delete the active segment; keeping it"
            );
        }
        let mut deleted = false;
        for seg in list_segments(&self.dir)?
            .iter()
            .take_while(|s| s.index < limit)
        {
            fs::remove_file(&seg.path)?;
            deleted = true;
        }
        if deleted {
            sync_dir(&self.dir)?;
        }
        Ok(())
    }

    /// fsyncs the active segment.
    pub fn sync(&mut self) -> Result<(), WalError> {
        self.fsync()
    }

    /// Pads the last page (if it holds data), fsyncs and closes the segment.
    pub fn close(mut self) -> Result<(), WalError> {
        self.check_usable()?;
        self.pending.clear();
        if page_fill(self.position()) != 0 {
            self.pad_page();
            if let Err(e) = self.write_pending() {
                self.roll_back();
                return Err(e);
            }
        }
        self.timed_sync(File::sync_all)
    }

    fn check_usable(&self) -> Result<(), WalError> {
        if self.poisoned {
            return Err(WalError::WriterPoisoned);
        }
        Ok(())
    }

    /// Finishes the active segment and switches to a new one. The new file is
    /// created before the old one is padded, so a failure leaves the active
    /// segment appendable.
    fn rotate(&mut self) -> Result<(), WalError> {
        let next = self
            .segment
            .checked_add(1)
            .ok_or(WalError::SegmentIndexOverflow(self.segment))?;
        let (file, written) = create_segment(&self.dir, next)?;
        if page_fill(self.position()) != 0 {
            self.pad_page();
        }
        self.write_pending()?;
        self.fsync()?;
        self.file = file;
        self.segment = next;
        self.written = written;
        Ok(())
    }

    /// Zero-fills `pending` up to the end of the current page.
    fn pad_page(&mut self) {
        let fill = (self.position() % PAGE) as usize;
        if fill != 0 {
            self.pending.extend_from_slice(&ZERO_PAGE[fill..]);
        }
    }

    fn write_pending(&mut self) -> Result<(), WalError> {
        if !self.pending.is_empty() {
            self.file.write_all(&self.pending)?;
            self.written += self.pending.len() as u64;
            self.pending.clear();
        }
        Ok(())
    }

    /// Drops the unwritten part of a failed batch and cuts anything partially
    /// written off the segment.
    fn roll_back(&mut self) {
        self.pending.clear();
        if let Err(e) = self.file.set_len(self.written) {
            tracing::error!(
                segment = self.segment,
                error = %e,
                "failed to roll back a partial WAL write; writer disabled"
            );
            self.poisoned = true;
        }
    }
}

/// Bytes used in the page holding offset `pos`.
fn page_fill(pos: u64) -> u64 {
    pos % PAGE
}

/// Creates (or opens, if it exists) segment `index` for appending and
/// returns it with its length, zero padding a torn last page first.
fn create_segment(dir: &Path, index: u32) -> Result<(File, u64), WalError> {
    let path = segment_path(dir, index);
    let mut file = OpenOptions::new().create(true).append(true).open(&path)?;
    let mut len = file.metadata()?.len();
    let fill = (len % PAGE) as usize;
    if fill != 0 {
        tracing::warn!(
            segment = index,
            "last page of WAL segment is torn, zero padding it"
        );
        file.write_all(&ZERO_PAGE[fill..])?;
        len += (PAGE_SIZE - fill) as u64;
    }
    sync_dir(dir)?;
    Ok((file, len))
}

/// Splits `data` into fragments starting at segment offset `start` (which
/// must leave room for a header in its page) and appends them to `out`.
fn encode_fragments(out: &mut Vec<u8>, start: u64, flag: u8, data: &[u8]) {
    let mut pos = start;
    let mut rest = data;
    let mut first = true;
    loop {
        let room = (PAGE - pos % PAGE - HEADER) as usize;
        let (part, tail) = rest.split_at(rest.len().min(room));
        let kind = match (first, tail.is_empty()) {
            (true, true) => FragmentKind::Full,
            (true, false) => FragmentKind::First,
            (false, false) => FragmentKind::Middle,
            (false, true) => FragmentKind::Last,
        };
        out.push(kind as u8 | flag);
        // `part` fits in a page, so its length fits in u16.
        out.extend_from_slice(&(part.len() as u16).to_be_bytes());
        out.extend_from_slice(&crc32c::crc32c(part).to_be_bytes());
        out.extend_from_slice(part);
        pos += HEADER + part.len() as u64;

        // A page too full for another header is padded and done.
        let fill = pos % PAGE;
        if fill != 0 && PAGE - fill < HEADER {
            let pad = (PAGE - fill) as usize;
            out.extend_from_slice(&ZERO_PAGE[..pad]);
            pos += pad as u64;
        }
        rest = tail;
        first = false;
        if rest.is_empty() {
            return;
        }
    }
}
