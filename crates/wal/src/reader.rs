//! Reading whole records back from WAL segments.
//!
//! Segments are read in large page-aligned chunks, so every page is either
//! entirely in the buffer or cut short by the end of the file, and fragments
//! (which never cross pages) are parsed straight out of the buffer. A record
//! held in one uncompressed fragment is returned without copying; multi-page
//! records are assembled, and compressed ones decompressed, into buffers that
//! are reused for the whole read.
//!
//! # What counts as a clean end
//!
//! A segment may end anywhere between records, with or without page padding:
//! a writer that crashed leaves its last page unpadded, and Prometheus reads
//! that as a clean end. A segment that ends inside a record is torn, and a
//! record never continues in the next segment, so that is corruption.
//!
//! # Stricter than Prometheus
//!
//! Prometheus' reader skips zero padding wherever it appears and does not
//! check page geometry, so a zeroed page in the middle of a segment makes it
//! silently drop records. Its writer, however, only ever pads (a) the last
//! < 7 bytes of a page, or (b) the last page of a segment it is closing. This
//! reader enforces exactly that, so damage shows up as corruption at the
//! first lost record instead of a gap:
//!
//! * padding with room for a header left in its page must be followed by
//!   nothing but zeros up to the end of the segment;
//! * padding may not interrupt a record, and a first or middle fragment must
//!   fill its page to the end;
//! * the reserved type bits must be zero, at most one compression flag may be
//!   set, and all fragments of a record must carry the same flags.
//!
//! Every error carries the segment and the offset of the start of the first
//! record that could not be returned, which is where [`crate::repair`] cuts.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

use crate::codec::RecordDecompressor;
use crate::error::{Corruption, WalError};
use crate::segment::{
    list_segments, Compression, FragmentKind, SegmentRef, FRAGMENT_HEADER_SIZE, PAGE_SIZE,
    RESERVED_MASK, SNAPPY_FLAG, ZSTD_FLAG,
};

/// Bytes read from a segment at a time: 32 pages.
const READ_CHUNK: usize = 32 * PAGE_SIZE;

/// Default cap on a record's size (after decompression). Records are bounded
/// by the segment size in practice; the cap stops a corrupt compression header
/// from making the reader allocate without bound.
pub const DEFAULT_MAX_RECORD_SIZE: usize = 1 << 30;

const PAGE: u64 = PAGE_SIZE as u64;

/// Where the segments come from.
enum Source {
    Segments(std::vec::IntoIter<SegmentRef>),
    /// One in-memory segment (tests, fuzzing); taken when opened.
    Bytes(Option<Vec<u8>>),
}

/// The open segment.
enum Input {
    File(File),
    Bytes { data: Vec<u8>, pos: usize },
}

impl Input {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Input::File(f) => f.read(buf),
            Input::Bytes { data, pos } => {
                let rest = data.get(*pos..).unwrap_or_default();
                let n = rest.len().min(buf.len());
                buf[..n].copy_from_slice(&rest[..n]);
                *pos += n;
                Ok(n)
            }
        }
    }

    /// Positions the input at `offset` (past the end just reads nothing).
    fn seek(&mut self, offset: u64) -> io::Result<()> {
        match self {
            Input::File(f) => f.seek(SeekFrom::Start(offset)).map(|_| ()),
            Input::Bytes { data, pos } => {
                *pos = usize::try_from(offset)
                    .unwrap_or(usize::MAX)
                    .min(data.len());
                Ok(())
            }
        }
    }
}

/// Where the record being returned lives.
enum RecordLoc {
    /// `chunk[start..end]`: a single uncompressed fragment.
    Chunk(usize, usize),
    /// The assembled multi-fragment record.
    Assembled,
    /// The first `len` bytes of the decompressor's output.
    Decompressed(usize),
}

/// Why the reader stopped for good.
enum Stopped {
    Corrupt(Corruption),
    Io(io::ErrorKind, String),
}

/// Reads a sequence of segments as one stream of whole, decompressed records.
pub struct RecordReader {
    source: Source,
    input: Option<Input>,
    /// Offset to start from in the first segment opened.
    start_offset: u64,
    /// Index of the open segment.
    open_segment: u32,

    /// Read buffer; always holds whole pages except at the end of a segment.
    chunk: Vec<u8>,
    chunk_len: usize,
    chunk_pos: usize,
    /// Segment offset of `chunk[0]` (page aligned).
    chunk_base: u64,
    at_eof: bool,
    /// Offset where end-of-segment padding began; only zeros may follow.
    padded_from: Option<u64>,

    /// A first fragment was read and its last one is still to come.
    in_record: bool,
    record_start: u64,
    record_flags: u8,
    assembled: Vec<u8>,
    decompressor: RecordDecompressor,
    max_record_size: usize,

    /// Range reading (see [`RecordReader::for_range`]): records starting at
    /// or after this offset belong to the next range.
    range_end: Option<u64>,
    /// Skipping the continuation fragments that open a range mid-record.
    skipping_continuation: bool,
    /// Continuation fragments skipped at the start of the range.
    skipped_fragments: u64,

    /// Position of the record last returned.
    last_segment: u32,
    last_offset: u64,
    stopped: Option<Stopped>,
}

impl RecordReader {
    /// Reads `segments` in the given order.
    pub fn new(segments: Vec<SegmentRef>) -> Self {
        Self::with_source(Source::Segments(segments.into_iter()), 0)
    }

    /// Reads `segments`, starting at byte `offset` of the first one (which
    /// must be a record boundary, e.g. from [`crate::WalWriter::position`]).
    pub fn with_start_offset(segments: Vec<SegmentRef>, offset: u64) -> Self {
        Self::with_source(Source::Segments(segments.into_iter()), offset)
    }

    /// Reads the records of `segment` that start in `start..end`, so that a
    /// segment split into consecutive ranges can be read by several threads
    /// and the results concatenated in range order give exactly the records
    /// (and the first corruption) of reading it whole.
    ///
    /// `start` must be page aligned (fragments never cross pages, so every
    /// page starts with a fragment header or padding). A range that starts
    /// inside a record skips its remaining fragments: they belong to the
    /// range the record started in, which reads past its `end` to finish it
    /// and also reports a continuation fragment with no record before it.
    ///
    /// One difference remains for the caller to resolve: if this range ends
    /// inside end-of-segment padding ([`Self::trailing_padding`]), anything
    /// but zeros in the next range is corruption at that padding's start,
    /// which only the caller, seeing both ranges, can tell.
    pub fn for_range(segment: SegmentRef, start: u64, end: u64) -> Self {
        let aligned = start - start % PAGE;
        let mut r = Self::with_source(Source::Segments(vec![segment].into_iter()), aligned);
        r.range_end = Some(end);
        r.skipping_continuation = aligned > 0;
        r
    }

    /// Where end-of-segment padding began, if the reader is inside it.
    pub fn trailing_padding(&self) -> Option<u64> {
        self.padded_from
    }

    /// Fragments of a record begun before the range that the range skipped.
    pub fn skipped_fragments(&self) -> u64 {
        self.skipped_fragments
    }

    /// Reads all segments of a WAL directory.
    pub fn open_dir(dir: &Path) -> Result<Self, WalError> {
        Ok(Self::new(list_segments(dir)?))
    }

    /// Reads `data` as the content of a single segment with index 0.
    pub fn from_bytes(data: Vec<u8>) -> Self {
        Self::with_source(Source::Bytes(Some(data)), 0)
    }

    /// Sets the largest record (after decompression) accepted; larger ones
    /// are reported as corruption.
    pub fn with_max_record_size(mut self, max: usize) -> Self {
        self.max_record_size = max;
        self
    }

    fn with_source(source: Source, start_offset: u64) -> Self {
        RecordReader {
            source,
            input: None,
            start_offset,
            open_segment: 0,
            chunk: Vec::new(),
            chunk_len: 0,
            chunk_pos: 0,
            chunk_base: 0,
            at_eof: false,
            padded_from: None,
            in_record: false,
            record_start: 0,
            record_flags: 0,
            assembled: Vec::new(),
            decompressor: RecordDecompressor::new(),
            max_record_size: DEFAULT_MAX_RECORD_SIZE,
            range_end: None,
            skipping_continuation: false,
            skipped_fragments: 0,
            last_segment: 0,
            last_offset: 0,
            stopped: None,
        }
    }

    /// Segment of the record last returned.
    pub fn segment(&self) -> u32 {
        self.last_segment
    }

    /// Offset in [`Self::segment`] where the record last returned starts.
    pub fn offset(&self) -> u64 {
        self.last_offset
    }

    /// The next record, `Ok(None)` at the clean end of the last segment.
    ///
    /// The slice is valid until the next call. After an error the reader is
    /// stopped and keeps returning the same error.
    pub fn next_record(&mut self) -> Result<Option<&[u8]>, WalError> {
        if let Some(stopped) = &self.stopped {
            return Err(match stopped {
                Stopped::Corrupt(c) => WalError::Corruption(c.clone()),
                Stopped::Io(kind, msg) => WalError::Io(io::Error::new(*kind, msg.clone())),
            });
        }
        let loc = match self.advance() {
            Ok(Some(loc)) => loc,
            Ok(None) => return Ok(None),
            Err(e) => {
                self.stopped = Some(match &e {
                    WalError::Corruption(c) => Stopped::Corrupt(c.clone()),
                    WalError::Io(io) => Stopped::Io(io.kind(), io.to_string()),
                    other => Stopped::Io(io::ErrorKind::Other, other.to_string()),
                });
                return Err(e);
            }
        };
        self.last_segment = self.open_segment;
        self.last_offset = self.record_start;
        Ok(Some(match loc {
            RecordLoc::Chunk(start, end) => self.chunk.get(start..end).unwrap_or_default(),
            RecordLoc::Assembled => &self.assembled,
            RecordLoc::Decompressed(len) => self.decompressor.output(len),
        }))
    }

    fn corrupt(&self, offset: u64, reason: impl Into<String>) -> WalError {
        WalError::Corruption(Corruption {
            segment: self.open_segment,
            offset,
            reason: reason.into(),
        })
    }

    /// Parses fragments until a whole record is available.
    fn advance(&mut self) -> Result<Option<RecordLoc>, WalError> {
        const HEADER: usize = FRAGMENT_HEADER_SIZE;
        loop {
            if self.input.is_none() && !self.open_next_segment()? {
                return Ok(None);
            }
            if self.chunk_pos >= self.chunk_len && (self.at_eof || self.fill()? == 0) {
                if self.in_record {
                    return Err(self.corrupt(self.record_start, "record torn at end of segment"));
                }
                self.input = None;
                continue;
            }

            let offset = self.chunk_base + self.chunk_pos as u64;
            let page_left = (PAGE - offset % PAGE) as usize;
            // Short of `page_left` only where the segment ends.
            let avail = (self.chunk_len - self.chunk_pos).min(page_left);
            let page = self
                .chunk
                .get(self.chunk_pos..self.chunk_pos + avail)
                .unwrap_or_default();

            let type_byte = page.first().copied().unwrap_or(0);
            let kind = FragmentKind::from_bits(type_byte);
            let continuation = matches!(kind, Some(FragmentKind::Middle | FragmentKind::Last))
                && type_byte & RESERVED_MASK == 0;
            if self.skipping_continuation {
                let len = page.get(1..3).map_or(usize::MAX, |b| {
                    usize::from(u16::from_be_bytes([b[0], b[1]]))
                });
                if continuation && page_left >= HEADER && HEADER + len <= avail {
                    // Checked by the range that owns the record.
                    self.chunk_pos += HEADER + len;
                    self.skipped_fragments += 1;
                    if self.range_end.is_some_and(|end| {
                        let next = self.chunk_base + self.chunk_pos as u64;
                        next >= end && next.is_multiple_of(PAGE)
                    }) {
                        return Ok(None);
                    }
                    continue;
                }
                self.skipping_continuation = false;
            }
            if let Some(end) = self.range_end {
                // The next range owns records starting from here on, and
                // its padding; a stray continuation is still ours to report.
                let stop = !self.in_record
                    && offset >= end
                    && (self.padded_from.is_some()
                        || (offset.is_multiple_of(PAGE) && type_byte == 0)
                        || matches!(kind, Some(FragmentKind::Full | FragmentKind::First))
                        || (type_byte == 0 && page.iter().all(|&b| b == 0)));
                if stop {
                    return Ok(None);
                }
            }

            if let Some(padded_from) = self.padded_from {
                if page.iter().any(|&b| b != 0) {
                    return Err(self.corrupt(padded_from, "data after end-of-segment padding"));
                }
                self.chunk_pos += avail;
                continue;
            }

            if type_byte == 0 {
                if self.in_record {
                    return Err(self.corrupt(self.record_start, "padding inside a record"));
                }
                if page.iter().any(|&b| b != 0) {
                    return Err(self.corrupt(offset, "non-zero byte in page padding"));
                }
                // Padding with room for another fragment ends the segment.
                if page_left >= HEADER {
                    self.padded_from = Some(offset);
                }
                self.chunk_pos += avail;
                continue;
            }

            // Corruption inside a record is reported at the record's start.
            let bad_at = if self.in_record {
                self.record_start
            } else {
                offset
            };
            if page_left < HEADER {
                return Err(self.corrupt(bad_at, "fragment header crosses a page boundary"));
            }
            let Some(header) = page.get(..HEADER) else {
                return Err(self.corrupt(bad_at, "segment ends inside a fragment header"));
            };
            let len = usize::from(u16::from_be_bytes([header[1], header[2]]));
            let crc = u32::from_be_bytes([header[3], header[4], header[5], header[6]]);
            if type_byte & RESERVED_MASK != 0 {
                return Err(self.corrupt(
                    bad_at,
                    format!("reserved bits set in fragment type {type_byte:#04x}"),
                ));
            }
            let flags = type_byte & (SNAPPY_FLAG | ZSTD_FLAG);
            if flags == SNAPPY_FLAG | ZSTD_FLAG {
                return Err(self.corrupt(bad_at, "fragment flagged both snappy and zstd"));
            }
            let Some(kind) = FragmentKind::from_bits(type_byte) else {
                return Err(self.corrupt(bad_at, format!("invalid fragment type {type_byte:#04x}")));
            };
            if HEADER + len > page_left {
                return Err(self.corrupt(
                    bad_at,
                    format!("fragment of {len} bytes crosses a page boundary"),
                ));
            }
            let Some(data) = page.get(HEADER..HEADER + len) else {
                return Err(self.corrupt(bad_at, "segment ends inside a fragment"));
            };
            let actual = crc32c::crc32c(data);
            if actual != crc {
                return Err(self.corrupt(
                    bad_at,
                    format!("fragment checksum {actual:#010x}, expected {crc:#010x}"),
                ));
            }
            let fills_page = HEADER + len == page_left;
            let data_start = self.chunk_pos + HEADER;
            self.chunk_pos = data_start + len;

            match kind {
                // A zero type byte was handled above; this one carries flags.
                FragmentKind::Padding => {
                    return Err(self.corrupt(
                        bad_at,
                        format!("padding type byte with flags {type_byte:#04x}"),
                    ));
                }
                FragmentKind::Full => {
                    if self.in_record {
                        return Err(self.corrupt(bad_at, "full fragment inside a record"));
                    }
                    self.record_start = offset;
                    return self
                        .finish_record(flags, Some((data_start, data_start + len)))
                        .map(Some);
                }
                FragmentKind::First => {
                    if self.in_record {
                        return Err(self.corrupt(bad_at, "first fragment inside a record"));
                    }
                    if !fills_page {
                        return Err(self.corrupt(offset, "first fragment does not fill its page"));
                    }
                    self.in_record = true;
                    self.record_start = offset;
                    self.record_flags = flags;
                    self.assembled.clear();
                    self.assembled.extend_from_slice(data);
                }
                FragmentKind::Middle | FragmentKind::Last => {
                    if !self.in_record {
                        return Err(self.corrupt(offset, "middle or last fragment without a first"));
                    }
                    if flags != self.record_flags {
                        return Err(
                            self.corrupt(bad_at, "compression flags differ between fragments")
                        );
                    }
                    if kind == FragmentKind::Middle && !fills_page {
                        return Err(self.corrupt(bad_at, "middle fragment does not fill its page"));
                    }
                    if self.assembled.len() + len > self.max_record_size {
                        return Err(self.corrupt(
                            bad_at,
                            format!("record exceeds the {} byte limit", self.max_record_size),
                        ));
                    }
                    self.assembled.extend_from_slice(data);
                    if kind == FragmentKind::Last {
                        self.in_record = false;
                        return self.finish_record(flags, None).map(Some);
                    }
                }
            }
        }
    }

    /// Decompresses the record if needed. `single` is the chunk range of a
    /// one-fragment record, `None` for an assembled one.
    fn finish_record(
        &mut self,
        flags: u8,
        single: Option<(usize, usize)>,
    ) -> Result<RecordLoc, WalError> {
        let compression = match flags {
            SNAPPY_FLAG => Compression::Snappy,
            ZSTD_FLAG => Compression::Zstd,
            _ => Compression::None,
        };
        let stored: &[u8] = match single {
            Some((start, end)) => self.chunk.get(start..end).unwrap_or_default(),
            None => &self.assembled,
        };
        if compression == Compression::None || stored.is_empty() {
            if stored.len() > self.max_record_size {
                return Err(self.corrupt(
                    self.record_start,
                    format!("record exceeds the {} byte limit", self.max_record_size),
                ));
            }
            return Ok(match single {
                Some((start, end)) => RecordLoc::Chunk(start, end),
                None => RecordLoc::Assembled,
            });
        }
        match self
            .decompressor
            .decompress(compression, stored, self.max_record_size)
        {
            Ok(len) => Ok(RecordLoc::Decompressed(len)),
            Err(reason) => Err(self.corrupt(self.record_start, reason)),
        }
    }

    /// Opens the next segment; false when there is none left.
    fn open_next_segment(&mut self) -> Result<bool, WalError> {
        let (input, index) = match &mut self.source {
            Source::Segments(segments) => {
                let Some(seg) = segments.next() else {
                    return Ok(false);
                };
                let file = File::open(&seg.path).map_err(|e| {
                    io::Error::new(e.kind(), format!("open {}: {e}", seg.path.display()))
                })?;
                (Input::File(file), seg.index)
            }
            Source::Bytes(data) => match data.take() {
                Some(data) => (Input::Bytes { data, pos: 0 }, 0),
                None => return Ok(false),
            },
        };
        let mut input = input;
        if self.chunk.is_empty() {
            self.chunk = vec![0; READ_CHUNK];
        }
        // Start at the page holding the requested offset, so chunks stay
        // page aligned, then skip into it.
        let start = std::mem::take(&mut self.start_offset);
        let aligned = start - start % PAGE;
        if aligned > 0 {
            input.seek(aligned)?;
        }
        self.input = Some(input);
        self.open_segment = index;
        self.chunk_base = aligned;
        self.chunk_len = 0;
        self.chunk_pos = 0;
        self.at_eof = false;
        self.padded_from = None;
        self.in_record = false;
        if start > aligned {
            self.fill()?;
            // Offsets past the end simply leave nothing to read.
            self.chunk_pos = ((start - aligned) as usize).min(self.chunk_len);
        }
        Ok(true)
    }

    /// Reads the next chunk of the open segment; returns the bytes read
    /// (0 at the end of the segment).
    fn fill(&mut self) -> Result<usize, WalError> {
        let Some(input) = self.input.as_mut() else {
            return Ok(0);
        };
        self.chunk_base += self.chunk_len as u64;
        self.chunk_len = 0;
        self.chunk_pos = 0;
        while self.chunk_len < self.chunk.len() {
            match input.read(&mut self.chunk[self.chunk_len..]) {
                Ok(0) => {
                    self.at_eof = true;
                    break;
                }
                Ok(n) => self.chunk_len += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(self.chunk_len)
    }
}
