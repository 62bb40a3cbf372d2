//! Chunk segment files of a block: `<block>/chunks/000001`, `000002`, ...
//!
//! # Format
//!
//! Every segment file starts with an 8-byte header, then chunks back to back
//! with no gaps and no trailing padding:
//!
//! ```text
//! header: magic u32 BE = 0x85BD40DD | version u8 = 1 | 3 padding bytes (zero)
//! chunk:  len uvarint | encoding u8 | data (len bytes) | crc32c u32 BE
//! ```
//!
//! `len` counts the data bytes only. The CRC-32 (Castagnoli) covers the
//! encoding byte and the data, not the length. Encodings are those of
//! `ferrite-chunkenc`: 1 XOR, 2 histogram, 3 float histogram.
//!
//! # References
//!
//! The index points at a chunk with a 64-bit reference: the segment's
//! position in the sorted directory listing (0 for the first file) in the
//! upper 32 bits, the byte offset of the chunk's length field in the lower
//! 32 bits. File `000001` is segment 0.
//!
//! # Cutting segments (the writer)
//!
//! Chunks are written in groups — one group per series in a compaction —
//! and the segment boundary is decided per group with an estimate that
//! counts every chunk as `5 + 1 + len + 4` bytes (the largest length
//! field). Walking a group's chunks and summing their estimates:
//!
//! - while the current segment already holds chunks, a chunk goes to a new
//!   segment once `bytes written so far + running sum` would pass the cap
//!   (this can move even the group's first chunk);
//! - in a fresh segment, the first chunk always stays, and a later one
//!   starts a new segment once `8 + running sum since that segment began`
//!   would pass the cap; every new segment restarts the sum with the chunk
//!   that opened it.
//!
//! So a segment is never empty, a chunk larger than the cap gets a segment
//! of its own, and segments usually end somewhat below the cap because of
//! the pessimistic length estimate. A new file takes the number after the
//! highest all-digit name in the directory. Nothing is preallocated; each
//! finished segment is fsynced, and so is the directory.
//!
//! # Reading
//!
//! The reader takes every entry of the directory whose name is a decimal
//! `u64` (digits only), in name order — the same list Prometheus takes, so
//! segment indexes agree. Each must be at least 8 bytes long with the right
//! magic and version (the padding is not checked); an empty directory is a
//! reader with no segments. A chunk read checks, in this order: the segment
//! index exists; `offset + 5` is within the segment (room for the longest
//! length field, as Prometheus requires, even for a shorter one); the
//! length varint ends within those 5 bytes; the whole chunk is within the
//! segment; the CRC (skippable with [`ChunkReader::chunk_unchecked`]); the
//! encoding is known. Offsets inside the header are not rejected as such
//! (Prometheus does not either); they fail on the CRC.

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use memmap2::Mmap;
use thiserror::Error;

use crate::fsutil;

/// First four bytes of every chunk segment file (big-endian).
pub const MAGIC_CHUNKS: u32 = 0x85BD_40DD;
/// The only segment format version.
pub const CHUNKS_FORMAT_V1: u8 = 1;
/// Magic, version and padding.
pub const SEGMENT_HEADER_SIZE: usize = 8;
/// Prometheus' cap on a segment file: 512 MiB.
pub const DEFAULT_SEGMENT_SIZE: u64 = 512 * 1024 * 1024;
/// The longest length field a reader accepts (a 32-bit uvarint).
pub const MAX_CHUNK_LEN_FIELD_SIZE: usize = 5;
const CRC_SIZE: usize = 4;
/// Room a chunk is assumed to take besides its data when cutting segments.
const CHUNK_OVERHEAD_ESTIMATE: u64 = (MAX_CHUNK_LEN_FIELD_SIZE + 1 + CRC_SIZE) as u64;
const WRITE_BUFFER_SIZE: usize = 1 << 20;

/// Errors of the chunk segment writer and reader.
#[derive(Debug, Error)]
pub enum ChunksError {
    #[error("{op} {path:?}: {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        source: io::Error,
    },
    #[error("invalid segment header in segment {segment}: {len} bytes is too short")]
    SegmentTooShort { segment: usize, len: u64 },
    #[error("invalid magic number {magic:x} in segment {segment}")]
    BadMagic { segment: usize, magic: u32 },
    #[error("invalid chunk format version {version} in segment {segment}")]
    BadVersion { segment: usize, version: u8 },
    #[error("chunk {chunk_ref}: segment index out of range ({segments} segments)")]
    SegmentOutOfRange {
        chunk_ref: ChunkRef,
        segments: usize,
    },
    #[error("chunk {chunk_ref}: segment doesn't include enough bytes to read the chunk size data field - required:{required}, available:{available}")]
    LengthFieldOutOfRange {
        chunk_ref: ChunkRef,
        required: u64,
        available: u64,
    },
    #[error("chunk {chunk_ref}: reading chunk length failed")]
    BadLength { chunk_ref: ChunkRef },
    #[error("chunk {chunk_ref}: segment doesn't include enough bytes to read the chunk - required:{required}, available:{available}")]
    ChunkOutOfRange {
        chunk_ref: ChunkRef,
        required: u64,
        available: u64,
    },
    #[error("chunk {chunk_ref}: checksum mismatch expected:{expected:x}, actual:{actual:x}")]
    Checksum {
        chunk_ref: ChunkRef,
        expected: u32,
        actual: u32,
    },
    #[error("chunk {chunk_ref}: invalid chunk encoding {encoding}")]
    InvalidEncoding { chunk_ref: ChunkRef, encoding: u8 },
    #[error("cannot write a chunk with invalid encoding {0}")]
    WriteInvalidEncoding(u8),
    #[error("chunk at offset {0} does not fit a 32-bit chunk reference")]
    OffsetOverflow(u64),
    #[error("too many chunk segments for a 32-bit segment index")]
    TooManySegments,
    #[error("invalid chunk segment size {0}: must be positive")]
    InvalidSegmentSize(u64),
}

fn io_err<'a>(op: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> ChunksError + 'a {
    move |source| ChunksError::Io {
        op,
        path: path.to_path_buf(),
        source,
    }
}

/// Where a chunk lives: segment index (position in the listing, from 0) in
/// the upper 32 bits, byte offset in the lower 32.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct ChunkRef(pub u64);

impl ChunkRef {
    pub fn new(segment: u32, offset: u32) -> ChunkRef {
        ChunkRef((u64::from(segment) << 32) | u64::from(offset))
    }

    pub fn segment(self) -> u32 {
        (self.0 >> 32) as u32
    }

    pub fn offset(self) -> u32 {
        self.0 as u32
    }
}

impl std::fmt::Display for ChunkRef {
    /// `segment:offset`, the form used in dumps.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.segment(), self.offset())
    }
}

/// One chunk to write: its encoding byte and its encoded bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawChunk<'a> {
    pub encoding: u8,
    pub data: &'a [u8],
}

/// The 8-byte segment header.
pub fn segment_header() -> [u8; SEGMENT_HEADER_SIZE] {
    let mut h = [0u8; SEGMENT_HEADER_SIZE];
    h[..4].copy_from_slice(&MAGIC_CHUNKS.to_be_bytes());
    h[4] = CHUNKS_FORMAT_V1;
    h
}

fn put_uvarint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends one chunk in its on-disk form to `out`.
pub fn encode_chunk(out: &mut Vec<u8>, encoding: u8, data: &[u8]) {
    put_uvarint(out, data.len() as u64);
    let start = out.len();
    out.push(encoding);
    out.extend_from_slice(data);
    let crc = crc32c::crc32c(&out[start..]);
    out.extend_from_slice(&crc.to_be_bytes());
}

/// Writes the chunk segment files of a new block.
///
/// ```no_run
/// # use ferrite_block::{ChunkWriter, RawChunk};
/// let mut w = ChunkWriter::new("block/chunks".as_ref())?;
/// let mut refs = Vec::new();
/// w.write_chunks(&[RawChunk { encoding: 1, data: &[0, 0] }], &mut refs)?;
/// w.finish()?;
/// # Ok::<(), ferrite_block::ChunksError>(())
/// ```
pub struct ChunkWriter {
    dir: PathBuf,
    segment_size: u64,
    /// The open segment, if any.
    file: Option<(PathBuf, BufWriter<File>)>,
    /// Bytes in the open segment, header included (0 before the first).
    written: u64,
    /// Segments this writer has created; the open one is `segments - 1`.
    segments: u32,
    buf: Vec<u8>,
}

impl ChunkWriter {
    /// A writer into `dir` (created if missing) with the 512 MiB cap.
    pub fn new(dir: &Path) -> Result<ChunkWriter, ChunksError> {
        Self::with_segment_size(dir, DEFAULT_SEGMENT_SIZE)
    }

    /// A writer with another segment cap (for tests; Prometheus' default is
    /// [`DEFAULT_SEGMENT_SIZE`]).
    pub fn with_segment_size(dir: &Path, segment_size: u64) -> Result<ChunkWriter, ChunksError> {
        if segment_size == 0 || segment_size > i64::MAX as u64 {
            return Err(ChunksError::InvalidSegmentSize(segment_size));
        }
        fs::create_dir_all(dir).map_err(io_err("create dir", dir))?;
        Ok(ChunkWriter {
            dir: dir.to_path_buf(),
            segment_size,
            file: None,
            written: 0,
            segments: 0,
            buf: Vec::new(),
        })
    }

    /// Writes one group of chunks (normally all chunks of one series) and
    /// appends the reference of each to `refs`, in order. Segments are cut
    /// as described in the module docs; the first call opens segment
    /// `000001` (or the next free number), even with no chunks.
    pub fn write_chunks(
        &mut self,
        chunks: &[RawChunk<'_>],
        refs: &mut Vec<ChunkRef>,
    ) -> Result<(), ChunksError> {
        if let Some(c) = chunks
            .iter()
            .find(|c| ferrite_chunkenc::Encoding::valid(c.encoding).is_none())
        {
            return Err(ChunksError::WriteInvalidEncoding(c.encoding));
        }
        if self.file.is_none() {
            self.cut()?;
        }
        // Whether the open segment already holds chunks: then the first
        // group is measured against what it holds, else against the header.
        let held = self.written;
        let mut continuing = held > SEGMENT_HEADER_SIZE as u64;
        let mut sum = 0u64;
        for (i, c) in chunks.iter().enumerate() {
            let estimate = CHUNK_OVERHEAD_ESTIMATE + c.data.len() as u64;
            sum = sum.saturating_add(estimate);
            let new_segment = if continuing {
                held.saturating_add(sum) > self.segment_size
            } else {
                i != 0 && sum + SEGMENT_HEADER_SIZE as u64 > self.segment_size
            };
            if new_segment {
                continuing = false;
                sum = estimate;
                self.cut()?;
            }
            refs.push(self.write_one(c)?);
        }
        Ok(())
    }

    /// Writes a single chunk as a group of one.
    pub fn write_chunk(&mut self, chunk: RawChunk<'_>) -> Result<ChunkRef, ChunksError> {
        let mut refs = Vec::with_capacity(1);
        self.write_chunks(&[chunk], &mut refs)?;
        Ok(refs[0])
    }

    fn write_one(&mut self, c: &RawChunk<'_>) -> Result<ChunkRef, ChunksError> {
        let offset =
            u32::try_from(self.written).map_err(|_| ChunksError::OffsetOverflow(self.written))?;
        let chunk_ref = ChunkRef::new(self.segments - 1, offset);
        self.buf.clear();
        encode_chunk(&mut self.buf, c.encoding, c.data);
        let Some((path, f)) = self.file.as_mut() else {
            unreachable!("write_chunks opens a segment first")
        };
        f.write_all(&self.buf).map_err(io_err("write", path))?;
        self.written += self.buf.len() as u64;
        Ok(chunk_ref)
    }

    /// Flushes and fsyncs the open segment, if any, and closes it.
    fn finish_segment(&mut self) -> Result<(), ChunksError> {
        if let Some((path, f)) = self.file.take() {
            let f = f.into_inner().map_err(|e| ChunksError::Io {
                op: "flush",
                path: path.clone(),
                source: e.into_error(),
            })?;
            f.sync_all().map_err(io_err("fsync", &path))?;
        }
        Ok(())
    }

    /// Closes the open segment and starts the next one.
    fn cut(&mut self) -> Result<(), ChunksError> {
        self.finish_segment()?;
        if self.segments == u32::MAX {
            return Err(ChunksError::TooManySegments);
        }
        let path = self.dir.join(next_segment_name(&self.dir)?);
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(io_err("create", &path))?;
        f.write_all(&segment_header())
            .map_err(io_err("write", &path))?;
        fsutil::sync_dir(&self.dir).map_err(io_err("fsync dir", &self.dir))?;
        self.file = Some((path, BufWriter::with_capacity(WRITE_BUFFER_SIZE, f)));
        self.written = SEGMENT_HEADER_SIZE as u64;
        self.segments += 1;
        Ok(())
    }

    /// Flushes and fsyncs everything written. Without it the last segment
    /// may be incomplete.
    pub fn finish(mut self) -> Result<(), ChunksError> {
        self.finish_segment()?;
        fsutil::sync_dir(&self.dir).map_err(io_err("fsync dir", &self.dir))
    }
}

/// Six-digit name after the highest all-digit name in `dir`.
fn next_segment_name(dir: &Path) -> Result<String, ChunksError> {
    let mut max = 0u64;
    for e in fs::read_dir(dir).map_err(io_err("read dir", dir))? {
        let e = e.map_err(io_err("read dir", dir))?;
        if let Some(n) = e.file_name().to_str().and_then(parse_segment_name) {
            max = max.max(n);
        }
    }
    let next = max.checked_add(1).ok_or(ChunksError::TooManySegments)?;
    Ok(format!("{next:06}"))
}

/// The number a segment file name stands for: ASCII digits only, fitting
/// a `u64` (what Go's `strconv.ParseUint(name, 10, 64)` accepts).
fn parse_segment_name(name: &str) -> Option<u64> {
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    name.parse().ok()
}

/// The segment files of `dir` in the order Prometheus indexes them.
pub fn segment_files(dir: &Path) -> Result<Vec<PathBuf>, ChunksError> {
    let mut names = Vec::new();
    for e in fs::read_dir(dir).map_err(io_err("read dir", dir))? {
        let e = e.map_err(io_err("read dir", dir))?;
        if let Some(name) = e.file_name().to_str() {
            if parse_segment_name(name).is_some() {
                names.push(name.to_string());
            }
        }
    }
    names.sort();
    Ok(names.into_iter().map(|n| dir.join(n)).collect())
}

enum Bytes {
    Mapped(Mmap),
    Owned(Vec<u8>),
}

impl Bytes {
    fn as_slice(&self) -> &[u8] {
        match self {
            Bytes::Mapped(m) => m,
            Bytes::Owned(v) => v,
        }
    }
}

struct Segment {
    name: String,
    bytes: Bytes,
}

/// Random access to the chunks of a block by reference, over memory maps of
/// all its segment files.
pub struct ChunkReader {
    segments: Vec<Segment>,
}

/// One chunk found by [`ChunkReader::iter`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FoundChunk<'a> {
    pub chunk_ref: ChunkRef,
    pub encoding: u8,
    pub data: &'a [u8],
}

impl ChunkReader {
    /// Maps every segment file of `dir` and checks the headers.
    pub fn open(dir: &Path) -> Result<ChunkReader, ChunksError> {
        let mut segments = Vec::new();
        for path in segment_files(dir)? {
            let f = File::open(&path).map_err(io_err("open", &path))?;
            let len = f.metadata().map_err(io_err("stat", &path))?.len();
            if len < SEGMENT_HEADER_SIZE as u64 {
                return Err(ChunksError::SegmentTooShort {
                    segment: segments.len(),
                    len,
                });
            }
            // SAFETY: segment files of a block are written once and never
            // modified afterwards; a file that shrank under us would be a
            // bug elsewhere (or foul play), as with every mmap reader.
            let map = unsafe { Mmap::map(&f) }.map_err(io_err("mmap", &path))?;
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default()
                .to_string();
            segments.push(Segment {
                name,
                bytes: Bytes::Mapped(map),
            });
        }
        Self::checked(segments)
    }

    /// A reader over segments held in memory, in index order (for tests and
    /// fuzzing).
    pub fn from_bytes(segments: Vec<Vec<u8>>) -> Result<ChunkReader, ChunksError> {
        let segments = segments
            .into_iter()
            .enumerate()
            .map(|(i, b)| Segment {
                name: format!("{:06}", i + 1),
                bytes: Bytes::Owned(b),
            })
            .collect();
        Self::checked(segments)
    }

    fn checked(segments: Vec<Segment>) -> Result<ChunkReader, ChunksError> {
        for (i, s) in segments.iter().enumerate() {
            let b = s.bytes.as_slice();
            let Some(h) = b.get(..SEGMENT_HEADER_SIZE) else {
                return Err(ChunksError::SegmentTooShort {
                    segment: i,
                    len: b.len() as u64,
                });
            };
            let magic = u32::from_be_bytes([h[0], h[1], h[2], h[3]]);
            if magic != MAGIC_CHUNKS {
                return Err(ChunksError::BadMagic { segment: i, magic });
            }
            if h[4] != CHUNKS_FORMAT_V1 {
                return Err(ChunksError::BadVersion {
                    segment: i,
                    version: h[4],
                });
            }
        }
        Ok(ChunkReader { segments })
    }

    /// Number of segment files.
    pub fn segment_count(&self) -> usize {
        self.segments.len()
    }

    /// File name of segment `i` (e.g. `000001`).
    pub fn segment_name(&self, i: usize) -> Option<&str> {
        self.segments.get(i).map(|s| s.name.as_str())
    }

    /// Length in bytes of segment `i`.
    pub fn segment_len(&self, i: usize) -> Option<u64> {
        self.segments
            .get(i)
            .map(|s| s.bytes.as_slice().len() as u64)
    }

    /// Total bytes of all segments.
    pub fn size(&self) -> u64 {
        self.segments
            .iter()
            .map(|s| s.bytes.as_slice().len() as u64)
            .sum()
    }

    /// The chunk at `chunk_ref`: its encoding and data, after every check
    /// Prometheus makes, CRC included.
    pub fn chunk(&self, chunk_ref: ChunkRef) -> Result<(u8, &[u8]), ChunksError> {
        self.read(chunk_ref, true).map(|(e, d, _)| (e, d))
    }

    /// Like [`chunk`](Self::chunk) without the CRC check, for callers that
    /// trust the file (or check it once elsewhere). Bounds are still checked.
    pub fn chunk_unchecked(&self, chunk_ref: ChunkRef) -> Result<(u8, &[u8]), ChunksError> {
        self.read(chunk_ref, false).map(|(e, d, _)| (e, d))
    }

    /// Reads a chunk; also returns the offset just past it.
    fn read(&self, chunk_ref: ChunkRef, check_crc: bool) -> Result<(u8, &[u8], u64), ChunksError> {
        let seg = self.segments.get(chunk_ref.segment() as usize).ok_or(
            ChunksError::SegmentOutOfRange {
                chunk_ref,
                segments: self.segments.len(),
            },
        )?;
        let b = seg.bytes.as_slice();
        let available = b.len() as u64;
        let start = u64::from(chunk_ref.offset());
        let len_field_end = start + MAX_CHUNK_LEN_FIELD_SIZE as u64;
        if len_field_end > available {
            return Err(ChunksError::LengthFieldOutOfRange {
                chunk_ref,
                required: len_field_end,
                available,
            });
        }
        // In bounds: checked just above.
        let start = start as usize;
        let (data_len, n) = uvarint(&b[start..start + MAX_CHUNK_LEN_FIELD_SIZE])
            .ok_or(ChunksError::BadLength { chunk_ref })?;
        let enc_at = start as u64 + n as u64;
        let end = enc_at + 1 + data_len + CRC_SIZE as u64;
        if end > available {
            return Err(ChunksError::ChunkOutOfRange {
                chunk_ref,
                required: end,
                available,
            });
        }
        let (enc_at, end) = (enc_at as usize, end as usize);
        let body = &b[enc_at..end - CRC_SIZE];
        if check_crc {
            let sum = &b[end - CRC_SIZE..end];
            let expected = u32::from_be_bytes([sum[0], sum[1], sum[2], sum[3]]);
            let actual = crc32c::crc32c(body);
            if expected != actual {
                return Err(ChunksError::Checksum {
                    chunk_ref,
                    expected,
                    actual,
                });
            }
        }
        let encoding = body[0];
        // With the checksum verified, the encoding byte is what the writer
        // wrote: any value is returned, and the caller refuses those it
        // cannot decode as unsupported, never as damage. Unchecked, only
        // the encodings Prometheus v3.16 writes (`chunkenc.IsValidEncoding`
        // v0.316.0: 1 XOR, 2 histogram, 3 float histogram, 4 XOR2, 5 and 6
        // histogram and float histogram with start timestamps) pass.
        if !check_crc && !matches!(encoding, 1..=6) {
            return Err(ChunksError::InvalidEncoding {
                chunk_ref,
                encoding,
            });
        }
        Ok((encoding, &body[1..], end as u64))
    }

    /// Every chunk of every segment, in file order, CRCs checked. Within a
    /// segment the walk starts after the header and stops at its end or at
    /// the first chunk that cannot be read, which is yielded as the error;
    /// the walk then goes on with the next segment.
    pub fn iter(&self) -> ChunkIter<'_> {
        ChunkIter {
            reader: self,
            segment: 0,
            offset: SEGMENT_HEADER_SIZE as u64,
        }
    }
}

/// Iterator returned by [`ChunkReader::iter`].
pub struct ChunkIter<'a> {
    reader: &'a ChunkReader,
    segment: usize,
    offset: u64,
}

impl<'a> Iterator for ChunkIter<'a> {
    type Item = Result<FoundChunk<'a>, ChunksError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let len = self.reader.segment_len(self.segment)?;
            if self.offset >= len {
                self.segment += 1;
                self.offset = SEGMENT_HEADER_SIZE as u64;
                continue;
            }
            // Offsets past 4 GiB cannot be referenced: stop the segment.
            let Ok(off) = u32::try_from(self.offset) else {
                self.offset = len;
                continue;
            };
            let chunk_ref = ChunkRef::new(self.segment as u32, off);
            return Some(match self.reader.read(chunk_ref, true) {
                Ok((encoding, data, end)) => {
                    self.offset = end;
                    Ok(FoundChunk {
                        chunk_ref,
                        encoding,
                        data,
                    })
                }
                Err(e) => {
                    self.offset = len;
                    Err(e)
                }
            });
        }
    }
}

/// Decodes a uvarint the way Go's `binary.Uvarint` does on a short buffer:
/// `None` when it does not end within `b`.
fn uvarint(b: &[u8]) -> Option<(u64, usize)> {
    let mut x = 0u64;
    for (i, &byte) in b.iter().enumerate() {
        x |= u64::from(byte & 0x7f) << (7 * i);
        if byte < 0x80 {
            return Some((x, i + 1));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn xor_chunk(n: usize, seed: i64) -> Vec<u8> {
        let mut c = ferrite_chunkenc::XorChunk::new();
        for i in 0..n as i64 {
            c.append(1000 * i + seed, (i * seed) as f64 / 3.0);
        }
        c.bytes().to_vec()
    }

    #[test]
    fn write_read_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let chunks: Vec<Vec<u8>> = (0..50).map(|i| xor_chunk(1 + i * 3, i as i64)).collect();
        let mut w = ChunkWriter::with_segment_size(dir.path(), 1000).unwrap();
        let mut refs = Vec::new();
        for group in chunks.chunks(4) {
            let raw: Vec<RawChunk> = group
                .iter()
                .map(|d| RawChunk {
                    encoding: 1,
                    data: d,
                })
                .collect();
            w.write_chunks(&raw, &mut refs).unwrap();
        }
        w.finish().unwrap();
        assert_eq!(refs.len(), chunks.len());
        let r = ChunkReader::open(dir.path()).unwrap();
        assert!(r.segment_count() > 3);
        assert_eq!(r.segment_name(0), Some("000001"));
        for (rf, d) in refs.iter().zip(&chunks) {
            assert_eq!(r.chunk(*rf).unwrap(), (1, d.as_slice()));
        }
        let found: Vec<ChunkRef> = r.iter().map(|c| c.unwrap().chunk_ref).collect();
        assert_eq!(found, refs);
        // Each segment stays within the cap unless one chunk alone passes it.
        for i in 0..r.segment_count() {
            let len = r.segment_len(i).unwrap();
            let n = refs.iter().filter(|c| c.segment() as usize == i).count();
            assert!(
                len <= 1000 || n == 1,
                "segment {i}: {len} bytes, {n} chunks"
            );
        }
    }

    #[test]
    fn cutting_rules() {
        let dir = tempfile::tempdir().unwrap();
        // Cap 8 + 2 * (10 + 10): two 10-byte chunks fit a fresh segment.
        let mut w = ChunkWriter::with_segment_size(dir.path(), 48).unwrap();
        let d = [0u8; 10];
        let c = RawChunk {
            encoding: 1,
            data: &d,
        };
        let mut refs = Vec::new();
        w.write_chunks(&[c, c, c], &mut refs).unwrap();
        // Each chunk takes 1 + 1 + 10 + 4 = 16 bytes.
        assert_eq!(
            refs,
            vec![
                ChunkRef::new(0, 8),
                ChunkRef::new(0, 24),
                ChunkRef::new(1, 8)
            ]
        );
        // The open segment holds 24 bytes: 24 + 20 fits, 24 + 40 does not,
        // so the group's first chunk stays and its second moves on.
        refs.clear();
        w.write_chunks(&[c, c], &mut refs).unwrap();
        assert_eq!(refs, vec![ChunkRef::new(1, 24), ChunkRef::new(2, 8)]);
        // Now 24 bytes again; a group's first chunk moves when it alone
        // does not fit what is there.
        refs.clear();
        let big = [0u8; 30];
        w.write_chunks(
            &[RawChunk {
                encoding: 2,
                data: &big,
            }],
            &mut refs,
        )
        .unwrap();
        assert_eq!(refs, vec![ChunkRef::new(3, 8)]);
        w.finish().unwrap();
        let r = ChunkReader::open(dir.path()).unwrap();
        assert_eq!(r.segment_count(), 4);
        assert_eq!(r.chunk(ChunkRef::new(3, 8)).unwrap(), (2, &big[..]));
    }

    #[test]
    fn empty_group_opens_a_segment() {
        let dir = tempfile::tempdir().unwrap();
        let w = ChunkWriter::new(dir.path()).unwrap();
        w.finish().unwrap();
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
        let mut w = ChunkWriter::new(dir.path()).unwrap();
        w.write_chunks(&[], &mut Vec::new()).unwrap();
        w.finish().unwrap();
        assert_eq!(
            fs::read(dir.path().join("000001")).unwrap(),
            segment_header()
        );
        let r = ChunkReader::open(dir.path()).unwrap();
        assert_eq!(r.iter().count(), 0);
    }

    #[test]
    fn reader_errors() {
        let mut seg = segment_header().to_vec();
        encode_chunk(&mut seg, 1, &[0, 1, 2, 3]);
        let r = ChunkReader::from_bytes(vec![seg.clone()]).unwrap();
        assert!(r.chunk(ChunkRef::new(0, 8)).is_ok());
        assert!(matches!(
            r.chunk(ChunkRef::new(1, 8)),
            Err(ChunksError::SegmentOutOfRange { .. })
        ));
        // 8 + 1 + 1 + 4 + 4 = 18 bytes; offset 14 leaves 4 < 5.
        assert!(matches!(
            r.chunk(ChunkRef::new(0, 14)),
            Err(ChunksError::LengthFieldOutOfRange { .. })
        ));
        assert!(matches!(
            r.chunk(ChunkRef::new(0, 9)),
            Err(ChunksError::ChunkOutOfRange { .. }) | Err(ChunksError::Checksum { .. })
        ));
        let mut bad = seg.clone();
        bad[12] ^= 1;
        let r = ChunkReader::from_bytes(vec![bad]).unwrap();
        assert!(matches!(
            r.chunk(ChunkRef::new(0, 8)),
            Err(ChunksError::Checksum { .. })
        ));
        assert!(r.chunk_unchecked(ChunkRef::new(0, 8)).is_ok());
        let mut bad = seg.clone();
        bad[..5].copy_from_slice(&[0xff; 5]);
        assert!(matches!(
            ChunkReader::from_bytes(vec![bad]),
            Err(ChunksError::BadMagic { .. })
        ));
        let mut bad = seg.clone();
        bad[4] = 2;
        assert!(matches!(
            ChunkReader::from_bytes(vec![bad]),
            Err(ChunksError::BadVersion { .. })
        ));
        assert!(matches!(
            ChunkReader::from_bytes(vec![seg.clone(), seg[..7].to_vec()]),
            Err(ChunksError::SegmentTooShort { segment: 1, len: 7 })
        ));
        // Five continuation bytes: no length.
        let mut bad = segment_header().to_vec();
        bad.extend_from_slice(&[0x80; 5]);
        let r = ChunkReader::from_bytes(vec![bad]).unwrap();
        assert!(matches!(
            r.chunk(ChunkRef::new(0, 8)),
            Err(ChunksError::BadLength { .. })
        ));
        // Unknown encoding, valid CRC: what the writer wrote, returned for
        // the caller to refuse as unsupported. Without the CRC check it
        // cannot be told from damage.
        let mut bad = segment_header().to_vec();
        encode_chunk(&mut bad, 7, &[1]);
        let r = ChunkReader::from_bytes(vec![bad]).unwrap();
        assert_eq!(r.chunk(ChunkRef::new(0, 8)).unwrap(), (7, &[1u8][..]));
        assert!(matches!(
            r.chunk_unchecked(ChunkRef::new(0, 8)),
            Err(ChunksError::InvalidEncoding { encoding: 7, .. })
        ));
    }

    #[test]
    fn directory_listing_rules() {
        let dir = tempfile::tempdir().unwrap();
        let mut seg = segment_header().to_vec();
        encode_chunk(&mut seg, 1, &[9]);
        fs::write(dir.path().join("000002"), &seg).unwrap();
        fs::write(dir.path().join("000001"), segment_header()).unwrap();
        fs::write(dir.path().join("000003.tmp"), b"junk").unwrap();
        fs::write(dir.path().join("+1"), b"junk").unwrap();
        let r = ChunkReader::open(dir.path()).unwrap();
        assert_eq!(r.segment_count(), 2);
        assert_eq!(r.chunk(ChunkRef::new(1, 8)).unwrap(), (1, &[9u8][..]));
        // A new writer continues the numbering.
        let mut w = ChunkWriter::new(dir.path()).unwrap();
        let rf = w
            .write_chunk(RawChunk {
                encoding: 1,
                data: &[5],
            })
            .unwrap();
        w.finish().unwrap();
        assert_eq!(rf, ChunkRef::new(0, 8));
        assert!(dir.path().join("000003").exists());
        assert!(ChunkReader::open(&dir.path().join("missing")).is_err());
        fs::write(dir.path().join("000009"), b"").unwrap();
        assert!(matches!(
            ChunkReader::open(dir.path()),
            Err(ChunksError::SegmentTooShort { .. })
        ));
    }

    #[test]
    fn writer_rejects_invalid_encoding() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = ChunkWriter::new(dir.path()).unwrap();
        assert!(w
            .write_chunk(RawChunk {
                encoding: 0,
                data: &[]
            })
            .is_err());
    }
}
