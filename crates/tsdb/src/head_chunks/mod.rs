//! Head chunks on disk: the `chunks_head/` directory of a data dir.
//!
//! The head writes every full ("cut") chunk here and from then on keeps only
//! a 64-bit reference to it, which keeps memory flat however many series
//! there are. After a restart the chunks are found again by scanning the
//! files, so each chunk carries its series ref and time range. The layout
//! is Prometheus v3.9.1's, byte for byte (see [`format`]), so either
//! program can open a directory the other wrote.
//!
//! Files are named `000001`, `000002`, ... with no gaps. A ref is
//! `seq << 32 | offset of the chunk in the file`. Writes go through an
//! in-memory buffer into the newest ("active") file; a chunk that would
//! push the file past `max_file_size` starts a new one. Like Prometheus,
//! a reopened mapper never appends to an old file: its first write starts
//! a file after the last one.
//!
//! Reads of flushed chunks are zero-copy slices of a shared read-only
//! mapping of the file. The active file is re-mapped when a flush grows it
//! past its mapping, and chunks still in the write buffer are served from
//! it (copied). Nothing per chunk is kept in memory.
//!
//! Damage handling differs from Prometheus on purpose: Prometheus deletes
//! the whole damaged file (and refuses to start on a gap in the numbering),
//! while we keep every chunk before the first damage, cut the file there,
//! and delete the later files, so the head can rebuild the rest from the
//! WAL. What is left is always a directory Prometheus accepts.
//!
//! Locking: `writer` (a mutex) serialises everything that changes files;
//! `state` (a read-write lock) holds what readers need — the mappings and
//! the write buffer — and is only changed by a holder of `writer`. Lock
//! order is `writer` then `state`; readers only take `state`, briefly.

mod disk;

/// Name of head chunks file `seq` (`000001`, ...).
pub fn chunk_file_name(seq: u32) -> String {
    disk::file_name(seq)
}
pub mod format;

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::io::Read;
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use memmap2::Mmap;
use parking_lot::{Mutex, RwLock};

pub use format::{
    scan_file_bytes, FileScan, FILE_HEADER_SIZE, FORMAT_VERSION, MAGIC, OOO_ENCODING_MASK,
};

use disk::io_err;

/// Prometheus' `MaxHeadChunkFileSize`.
pub const DEFAULT_MAX_FILE_SIZE: u64 = 128 * 1024 * 1024;
/// Prometheus' `DefaultWriteBufferSize`.
pub const DEFAULT_WRITE_BUFFER_SIZE: usize = 4 * 1024 * 1024;
/// New files are zero-extended to this size, as Prometheus does on Linux
/// (`HeadChunkFilePreallocationSize`), capped at the max file size.
pub const PREALLOCATE_SIZE: u64 = 128 * 1024;
/// Bytes of a chunk file a startup scan goes past before it releases
/// their pages from the process (a power of two, a multiple of pages).
const RELEASE_STEP: usize = 8 * 1024 * 1024;

/// Drops `len` bytes from `offset` of a chunk file's mapping from this
/// process' resident memory (they stay in the page cache).
fn release_range(map: &Mmap, offset: usize, len: usize) {
    let len = len.min(map.len().saturating_sub(offset));
    if len == 0 {
        return;
    }
    #[cfg(unix)]
    // SAFETY: a shared, read-only file mapping: MADV_DONTNEED only drops
    // this process' page-table entries; later reads see the same file
    // contents again. `offset` is page aligned (a multiple of
    // `RELEASE_STEP`, or 0) and the range is inside the map (clamped
    // above), as madvise requires.
    let _ = unsafe { map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, offset, len) };
    #[cfg(not(unix))]
    let _ = (map, offset, len);
}

/// Where a chunk lives: file sequence in the upper 32 bits, byte offset of
/// the chunk in that file in the lower 32.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ChunkDiskMapperRef(pub u64);

impl ChunkDiskMapperRef {
    pub fn new(seq: u32, offset: u32) -> Self {
        Self(u64::from(seq) << 32 | u64::from(offset))
    }

    pub fn seq(self) -> u32 {
        (self.0 >> 32) as u32
    }

    pub fn offset(self) -> u32 {
        self.0 as u32
    }
}

impl fmt::Display for ChunkDiskMapperRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", disk::file_name(self.seq()), self.offset())
    }
}

/// A chunk found while scanning, without its data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MappedChunkMeta {
    pub series_ref: u64,
    pub mint: i64,
    pub maxt: i64,
    /// Chunk encoding without the out-of-order bit (1 XOR, 2 histogram,
    /// 3 float histogram; v3.16: 4 XOR2, 5 and 6 histogram and float
    /// histogram with start timestamps; any other byte a newer writer's).
    pub encoding: u8,
    pub is_ooo: bool,
    /// The big-endian u16 every encoding starts its data with; 0 if the
    /// data is shorter than two bytes.
    pub num_samples: u16,
    pub chunk_ref: ChunkDiskMapperRef,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeadChunksOptions {
    /// A chunk that would end past this offset starts a new file (a lone
    /// chunk bigger than this still gets a file of its own). At most 4 GiB,
    /// since chunk offsets are 32-bit.
    pub max_file_size: u64,
    /// Buffered bytes before a write goes to the file; 0 writes through.
    pub write_buffer_size: usize,
}

impl Default for HeadChunksOptions {
    fn default() -> Self {
        Self {
            max_file_size: DEFAULT_MAX_FILE_SIZE,
            write_buffer_size: DEFAULT_WRITE_BUFFER_SIZE,
        }
    }
}

/// Why bytes on disk are not a valid chunk or file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DamageKind {
    #[error("file is {len} bytes, shorter than the 8-byte header")]
    HeaderTooShort { len: u64 },
    #[error("bad magic number {0:#010x}")]
    BadMagic(u32),
    #[error("unsupported format version {0}")]
    BadVersion(u8),
    #[error("gap in file numbering: expected file {expected:06}")]
    SequenceGap { expected: u32 },
    #[error("chunk needs {needed} bytes, only {available} left")]
    Truncated { needed: u64, available: u64 },
    #[error("chunk data length is not a valid 32-bit uvarint")]
    BadLength,
    #[error("checksum mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    BadCrc { stored: u32, computed: u32 },
    #[error("unknown chunk encoding byte {0:#04x}")]
    BadEncoding(u8),
    #[error("chunk starts beyond the 4 GiB a ref can address")]
    OffsetOverflow,
}

/// The first damage found and what was dropped because of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damage {
    /// File holding the damage.
    pub seq: u32,
    /// Where in that file the damage starts (0: the header).
    pub offset: u64,
    pub kind: DamageKind,
    /// Files deleted, in ascending order (including `seq` when nothing
    /// valid was left in it).
    pub files_removed: Vec<u32>,
    /// Whether file `seq` was kept, cut at `offset`.
    pub file_truncated: bool,
}

/// What [`ChunkDiskMapper::iterate_all_chunks`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScanReport {
    /// Files whose chunks were reported.
    pub files_scanned: usize,
    /// Chunks reported.
    pub chunks: u64,
    /// The first damage, if any (including a bad header found by `open`).
    pub damage: Option<Damage>,
    /// The callback of [`ChunkDiskMapper::try_iterate_all_chunks`] stopped
    /// the walk; nothing was repaired.
    pub stopped: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum HeadChunksError {
    #[error("head chunks: {op} {path}: {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("invalid head chunks options: {0}")]
    InvalidOptions(&'static str),
    #[error("head chunks: the chunk disk mapper is closed")]
    Closed,
    #[error("head chunks: series ref 0 is reserved (zeros mark the end of a file)")]
    ZeroSeriesRef,
    #[error("head chunks: cannot write chunk encoding byte {0:#04x}")]
    InvalidEncoding(u8),
    #[error("head chunks: chunk data of {0} bytes exceeds the 4 GiB limit")]
    ChunkTooLarge(usize),
    #[error("head chunks: file sequence numbers exhausted")]
    SequenceExhausted,
    #[error("head chunks: chunk ref {0}: no such file")]
    UnknownFile(ChunkDiskMapperRef),
    #[error("head chunks: chunk ref {chunk_ref}: {kind}")]
    BadRef {
        chunk_ref: ChunkDiskMapperRef,
        kind: DamageKind,
    },
}

/// A chunk's data bytes: a slice of a shared file mapping, or a copy for
/// chunks not yet flushed. Cheap to clone; keeps its mapping alive even if
/// the file is deleted meanwhile.
#[derive(Clone)]
pub struct ChunkBytes(ChunkBytesRepr);

#[derive(Clone)]
enum ChunkBytesRepr {
    Mapped {
        map: Arc<Mmap>,
        start: usize,
        end: usize,
    },
    Owned(Arc<[u8]>),
}

impl Deref for ChunkBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match &self.0 {
            // The range was checked against the mapping when it was made.
            ChunkBytesRepr::Mapped { map, start, end } => map.get(*start..*end).unwrap_or(&[]),
            ChunkBytesRepr::Owned(bytes) => bytes,
        }
    }
}

impl AsRef<[u8]> for ChunkBytes {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl fmt::Debug for ChunkBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChunkBytes")
            .field("len", &self.len())
            .finish()
    }
}

/// The file being appended to. Owned by the writer.
struct ActiveFile {
    seq: u32,
    path: PathBuf,
    file: fs::File,
    /// Offset after the last chunk written, buffered ones included.
    end: u64,
    /// Offset up to which the file holds the chunks.
    flushed: u64,
    /// Length of the file's current mapping.
    mapped_len: u64,
}

struct WriterState {
    active: Option<ActiveFile>,
    /// Start a new file before the next chunk (set by `truncate_before`).
    cut_before_next: bool,
    /// Highest sequence seen or created: a new file after every file was
    /// deleted continues from here rather than reusing old numbers.
    highest_seq: u32,
    /// Header damage repaired by `open`, reported by the next scan.
    open_damage: Option<Damage>,
}

struct MappedFile {
    path: PathBuf,
    map: Arc<Mmap>,
    /// Bytes readers may look at: the whole file for old files, the
    /// flushed part for the active one.
    readable_len: usize,
}

/// Chunks written but not yet flushed, all in the active file.
struct WriteBuffer {
    seq: Option<u32>,
    /// File offset of `bytes[0]`.
    start: u64,
    bytes: Vec<u8>,
}

struct ReadState {
    files: BTreeMap<u32, MappedFile>,
    buffer: WriteBuffer,
}

/// Writes head chunks to the `chunks_head/` files and reads them back.
/// `Send + Sync`; every method takes `&self`.
pub struct ChunkDiskMapper {
    dir: PathBuf,
    opts: HeadChunksOptions,
    writer: Mutex<WriterState>,
    state: RwLock<ReadState>,
    closed: AtomicBool,
}

// The head shares one mapper across appender and reader threads.
const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<ChunkDiskMapper>();
    assert_send_sync::<ChunkBytes>();
};

impl fmt::Debug for ChunkDiskMapper {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChunkDiskMapper")
            .field("dir", &self.dir)
            .field("opts", &self.opts)
            .field("files", &self.files())
            .finish()
    }
}

impl ChunkDiskMapper {
    /// Opens (creating it if needed) the chunks directory `dir` and maps
    /// its files. Files are checked for gaps in numbering and bad headers:
    /// from the first such file on, everything is deleted (reported by the
    /// next [`Self::iterate_all_chunks`]). A last file with an empty or
    /// zeroed header — a crash while cutting it — is deleted silently, as
    /// Prometheus does. Chunks are checked by `iterate_all_chunks`.
    pub fn open(dir: &Path, opts: HeadChunksOptions) -> Result<Self, HeadChunksError> {
        if opts.max_file_size <= FILE_HEADER_SIZE as u64 {
            return Err(HeadChunksError::InvalidOptions(
                "max_file_size must exceed the 8-byte file header",
            ));
        }
        if opts.max_file_size > 1 << 32 {
            return Err(HeadChunksError::InvalidOptions(
                "max_file_size must be at most 4 GiB",
            ));
        }
        fs::create_dir_all(dir).map_err(io_err("create dir", dir))?;
        let listed = disk::list_files(dir)?;
        let highest_seq = listed.last().map_or(0, |l| l.seq);

        let mut files = BTreeMap::new();
        let mut open_damage = None;
        for (i, entry) in listed.iter().enumerate() {
            let checked = match i.checked_sub(1).and_then(|p| listed.get(p)) {
                Some(prev) if Some(entry.seq) != prev.seq.checked_add(1) => {
                    Err(DamageKind::SequenceGap {
                        expected: prev.seq.wrapping_add(1),
                    })
                }
                _ => map_existing(&entry.path)?,
            };
            let kind = match checked {
                Ok(map) => {
                    let readable_len = map.len();
                    files.insert(
                        entry.seq,
                        MappedFile {
                            path: entry.path.clone(),
                            map,
                            readable_len,
                        },
                    );
                    continue;
                }
                Err(kind) => kind,
            };
            let doomed = &listed[i..];
            let header_only = !matches!(kind, DamageKind::SequenceGap { .. });
            if doomed.len() == 1 && header_only && is_unfinished_header(&entry.path)? {
                tracing::warn!(file = %entry.path.display(), "removing head chunks file left empty by a crash");
            } else {
                tracing::error!(
                    file = %entry.path.display(), error = %kind,
                    "head chunks file damaged; deleting it and all later files"
                );
                open_damage = Some(Damage {
                    seq: entry.seq,
                    offset: 0,
                    kind,
                    files_removed: doomed.iter().map(|l| l.seq).collect(),
                    file_truncated: false,
                });
            }
            // Newest first, so a failure part way leaves no gap.
            for l in doomed.iter().rev() {
                fs::remove_file(&l.path).map_err(io_err("remove", &l.path))?;
            }
            disk::sync_dir(dir)?;
            break;
        }

        Ok(Self {
            dir: dir.to_path_buf(),
            opts,
            writer: Mutex::new(WriterState {
                active: None,
                cut_before_next: false,
                highest_seq,
                open_damage,
            }),
            state: RwLock::new(ReadState {
                files,
                buffer: WriteBuffer {
                    seq: None,
                    start: 0,
                    bytes: Vec::new(),
                },
            }),
            closed: AtomicBool::new(false),
        })
    }

    /// The directory this mapper owns.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Scans every file in order, verifying each chunk, and reports the
    /// valid ones to `f`. At the first damage it logs an error naming file
    /// and offset, keeps the chunks before it (cutting the file there, or
    /// deleting it if none are left), deletes all later files and stops.
    /// Meant for startup, before chunk refs are handed out; writes after
    /// it go to a new file. `f` may call [`Self::chunk`] but not write.
    pub fn iterate_all_chunks(
        &self,
        f: &mut dyn FnMut(MappedChunkMeta),
    ) -> Result<ScanReport, HeadChunksError> {
        self.try_iterate_all_chunks(&mut |m| {
            f(m);
            true
        })
    }

    /// [`Self::iterate_all_chunks`], except that `f` returning `false`
    /// stops the walk at once: no later chunk is reported, no later file
    /// is scanned and nothing is repaired (`ScanReport::stopped` is set).
    /// Replay uses it to refuse a chunk it cannot read before any file is
    /// changed.
    pub fn try_iterate_all_chunks(
        &self,
        f: &mut dyn FnMut(MappedChunkMeta) -> bool,
    ) -> Result<ScanReport, HeadChunksError> {
        let mut w = self.writer.lock();
        self.check_open()?;
        self.flush_locked(&mut w)?;
        let snapshot: Vec<(u32, Arc<Mmap>, usize)> = self
            .state
            .read()
            .files
            .iter()
            .map(|(&seq, m)| (seq, Arc::clone(&m.map), m.readable_len))
            .collect();

        let mut report = ScanReport::default();
        for (seq, map, readable_len) in snapshot {
            let bytes = map.get(..readable_len).unwrap_or(&map[..]);
            let mut stopped = false;
            // The scan touches every page: the pages behind it are released
            // from this process as it goes (they stay in the page cache), so
            // startup RSS never carries a whole chunk file, let alone the
            // whole chunks_head/ directory. Queries fault in what they read.
            let mut released = 0usize;
            let scan = scan_file_bytes(seq, bytes, &mut |m| {
                let at = m.chunk_ref.offset() as usize;
                if at >= released + RELEASE_STEP {
                    let upto = at & !(RELEASE_STEP - 1);
                    release_range(&map, released, upto - released);
                    released = upto;
                }
                if !stopped && !f(m) {
                    stopped = true;
                }
            });
            release_range(&map, 0, map.len());
            report.files_scanned += 1;
            report.chunks += scan.chunks;
            if stopped {
                report.stopped = true;
                return Ok(report);
            }
            if let Some(kind) = scan.damage {
                let damage = self.repair(&mut w, seq, scan.valid_end, kind, bytes)?;
                report.damage = Some(damage);
                break;
            }
        }

        if let Some(from_open) = w.open_damage.take() {
            match &mut report.damage {
                None => report.damage = Some(from_open),
                // The scan found earlier damage; keep one list of removals.
                Some(d) => {
                    d.files_removed.extend(from_open.files_removed);
                    d.files_removed.sort_unstable();
                    d.files_removed.dedup();
                }
            }
        }
        Ok(report)
    }

    /// Appends a chunk and returns its ref, readable at once through
    /// [`Self::chunk`]. `encoding` is the byte as stored: 1 XOR, 2
    /// histogram, 3 float histogram, OR'ed with [`OOO_ENCODING_MASK`] for an
    /// out-of-order chunk. Data reaches the file when the buffer fills, on
    /// [`Self::flush`], or when a new file is cut. On error nothing was
    /// written.
    pub fn write_chunk(
        &self,
        series_ref: u64,
        mint: i64,
        maxt: i64,
        encoding: u8,
        data: &[u8],
    ) -> Result<ChunkDiskMapperRef, HeadChunksError> {
        if series_ref == 0 {
            return Err(HeadChunksError::ZeroSeriesRef);
        }
        // Encodings that may be written (without the out-of-order bit);
        // reading reports chunks of every encoding byte.
        if ferrite_chunkenc::Encoding::valid(encoding & !OOO_ENCODING_MASK).is_none() {
            return Err(HeadChunksError::InvalidEncoding(encoding));
        }
        if u32::try_from(data.len()).is_err() {
            return Err(HeadChunksError::ChunkTooLarge(data.len()));
        }
        let size = format::chunk_disk_size(data.len());

        let mut w = self.writer.lock();
        self.check_open()?;
        let must_cut = match &w.active {
            None => true,
            // A file holding no chunk yet takes even an oversized one.
            Some(a) => {
                w.cut_before_next
                    || (a.end > FILE_HEADER_SIZE as u64 && a.end + size > self.opts.max_file_size)
            }
        };
        if must_cut {
            self.cut_locked(&mut w)?;
        } else {
            let buffered = w.active.as_ref().map_or(0, |a| a.end - a.flushed);
            if buffered > 0 && buffered + size > self.opts.write_buffer_size as u64 {
                self.flush_locked(&mut w)?;
            }
        }

        let Some(active) = w.active.as_mut() else {
            return Err(HeadChunksError::Closed);
        };
        // Cutting keeps every chunk that does not start a file below
        // `max_file_size` <= 4 GiB, so this only fails on a broken invariant.
        let offset =
            u32::try_from(active.end).map_err(|_| HeadChunksError::ChunkTooLarge(data.len()))?;
        let chunk_ref = ChunkDiskMapperRef::new(active.seq, offset);
        format::encode_chunk(
            &mut self.state.write().buffer.bytes,
            series_ref,
            mint,
            maxt,
            encoding,
            data,
        );
        active.end += size;
        Ok(chunk_ref)
    }

    /// The data bytes of the chunk at `r`, checksum verified. Works for
    /// every ref from [`Self::write_chunk`] (flushed or not) and from
    /// [`Self::iterate_all_chunks`] until its file is deleted; any other ref
    /// gives an error.
    pub fn chunk(&self, r: ChunkDiskMapperRef) -> Result<ChunkBytes, HeadChunksError> {
        self.check_open()?;
        let offset = r.offset() as usize;
        let bad_ref = |kind| HeadChunksError::BadRef { chunk_ref: r, kind };
        if offset < FILE_HEADER_SIZE {
            return Err(bad_ref(DamageKind::Truncated {
                needed: FILE_HEADER_SIZE as u64,
                available: offset as u64,
            }));
        }

        let state = self.state.read();
        if state.buffer.seq == Some(r.seq()) && offset as u64 >= state.buffer.start {
            let at = (offset as u64 - state.buffer.start) as usize;
            let bytes = &state.buffer.bytes;
            let parsed = format::parse_chunk(bytes, at).map_err(bad_ref)?;
            let data = bytes.get(parsed.data).unwrap_or(&[]);
            return Ok(ChunkBytes(ChunkBytesRepr::Owned(Arc::from(data))));
        }
        let Some(file) = state.files.get(&r.seq()) else {
            return Err(HeadChunksError::UnknownFile(r));
        };
        let map = Arc::clone(&file.map);
        let readable_len = file.readable_len;
        drop(state);

        let bytes = map.get(..readable_len).unwrap_or(&map[..]);
        let parsed = format::parse_chunk(bytes, offset).map_err(bad_ref)?;
        Ok(ChunkBytes(ChunkBytesRepr::Mapped {
            start: parsed.data.start,
            end: parsed.data.end,
            map,
        }))
    }

    /// Writes buffered chunks to the active file (no fsync).
    pub fn flush(&self) -> Result<(), HeadChunksError> {
        let mut w = self.writer.lock();
        self.check_open()?;
        self.flush_locked(&mut w)
    }

    /// Flushes and fsyncs the active file.
    pub fn sync(&self) -> Result<(), HeadChunksError> {
        let mut w = self.writer.lock();
        self.check_open()?;
        self.flush_locked(&mut w)?;
        sync_active(&w)
    }

    /// Flushes, fsyncs and releases everything. Later calls other than
    /// `close` and `files` fail with [`HeadChunksError::Closed`]; chunk
    /// bytes already handed out stay valid. On error the mapper stays open.
    pub fn close(&self) -> Result<(), HeadChunksError> {
        let mut w = self.writer.lock();
        if self.closed.load(Ordering::Acquire) {
            return Ok(());
        }
        self.flush_locked(&mut w)?;
        sync_active(&w)?;
        w.active = None;
        self.closed.store(true, Ordering::Release);
        let mut state = self.state.write();
        state.files.clear();
        state.buffer = WriteBuffer {
            seq: None,
            start: 0,
            bytes: Vec::new(),
        };
        Ok(())
    }

    /// Deletes the files numbered below `min_seq_to_keep`, oldest first,
    /// never the active one. As in Prometheus, if the active file holds
    /// chunks the next write starts a new file, so it can be deleted by a
    /// later call.
    pub fn truncate_before(&self, min_seq_to_keep: u32) -> Result<(), HeadChunksError> {
        let mut w = self.writer.lock();
        self.check_open()?;
        let active_seq = w.active.as_ref().map(|a| a.seq);
        let removed: Vec<(u32, PathBuf)> = {
            let mut state = self.state.write();
            let doomed: Vec<u32> = state
                .files
                .range(..min_seq_to_keep)
                .map(|(&seq, _)| seq)
                .filter(|&seq| Some(seq) != active_seq)
                .collect();
            doomed
                .into_iter()
                .filter_map(|seq| state.files.remove(&seq).map(|m| (seq, m.path)))
                .collect()
        };
        if w.active
            .as_ref()
            .is_some_and(|a| a.end > FILE_HEADER_SIZE as u64)
        {
            w.cut_before_next = true;
        }
        // Oldest first, so a failure part way leaves no gap.
        for (_, path) in &removed {
            fs::remove_file(path).map_err(io_err("remove", path))?;
        }
        Ok(())
    }

    /// Drops the pages of the chunk files from this process' resident
    /// memory (they stay in the page cache; reads fault them back in): for
    /// long sequential reads such as head compaction, which would otherwise
    /// leave every chunk file resident.
    pub fn release_pages(&self) {
        let state = self.state.read();
        for file in state.files.values() {
            release_range(&file.map, 0, file.map.len());
        }
    }

    /// Makes the next write start a new file.
    pub fn cut_new_file(&self) {
        self.writer.lock().cut_before_next = true;
    }

    /// Sequences of the existing files, ascending (the active one included).
    pub fn files(&self) -> Vec<u32> {
        self.state.read().files.keys().copied().collect()
    }

    fn check_open(&self) -> Result<(), HeadChunksError> {
        if self.closed.load(Ordering::Acquire) {
            return Err(HeadChunksError::Closed);
        }
        Ok(())
    }

    /// Writes the buffer to the active file and publishes the new length.
    fn flush_locked(&self, w: &mut WriterState) -> Result<(), HeadChunksError> {
        let Some(active) = w.active.as_mut() else {
            return Ok(());
        };
        if active.flushed == active.end {
            return Ok(());
        }
        disk::write_all_at(
            &active.file,
            &self.state.read().buffer.bytes,
            active.flushed,
            &active.path,
        )?;
        let new_map = if active.end > active.mapped_len {
            let map = disk::map_file(&active.file, &active.path)?;
            active.mapped_len = map.len() as u64;
            Some(map)
        } else {
            None
        };
        // Only a 32-bit target can miss here; readers then see the whole map.
        let readable_len = usize::try_from(active.end).unwrap_or(usize::MAX);

        let mut state = self.state.write();
        state.buffer.bytes.clear();
        state.buffer.start = active.end;
        if let Some(file) = state.files.get_mut(&active.seq) {
            if let Some(map) = new_map {
                file.map = map;
            }
            file.readable_len = readable_len;
        }
        active.flushed = active.end;
        Ok(())
    }

    /// Seals the active file (flush + fsync) and starts the next one.
    fn cut_locked(&self, w: &mut WriterState) -> Result<(), HeadChunksError> {
        self.flush_locked(w)?;
        sync_active(w)?;
        w.active = None;

        let seq = {
            let state = self.state.read();
            match state.files.keys().next_back() {
                Some(&last) => last.checked_add(1),
                None => w.highest_seq.checked_add(1),
            }
        }
        .ok_or(HeadChunksError::SequenceExhausted)?;
        let prealloc = PREALLOCATE_SIZE.min(self.opts.max_file_size);
        let (path, file) = disk::create_file(&self.dir, seq, &format::file_header(), prealloc)?;
        let map = disk::map_file(&file, &path)?;

        let mut state = self.state.write();
        state.files.insert(
            seq,
            MappedFile {
                path: path.clone(),
                map: Arc::clone(&map),
                readable_len: FILE_HEADER_SIZE,
            },
        );
        state.buffer.seq = Some(seq);
        state.buffer.start = FILE_HEADER_SIZE as u64;
        state.buffer.bytes.clear();
        w.active = Some(ActiveFile {
            seq,
            path,
            file,
            end: FILE_HEADER_SIZE as u64,
            flushed: FILE_HEADER_SIZE as u64,
            mapped_len: map.len() as u64,
        });
        w.highest_seq = w.highest_seq.max(seq);
        w.cut_before_next = false;
        Ok(())
    }

    /// Keeps `bytes[..valid_end]` of file `seq`, deletes all later files.
    fn repair(
        &self,
        w: &mut WriterState,
        seq: u32,
        valid_end: u64,
        kind: DamageKind,
        bytes: &[u8],
    ) -> Result<Damage, HeadChunksError> {
        let path = self.dir.join(disk::file_name(seq));
        tracing::error!(
            file = %path.display(), offset = valid_end, error = %kind,
            "head chunks file damaged; keeping the chunks before the damage and deleting all later files"
        );
        // Never keep appending to a file that is about to change or vanish.
        if w.active.as_ref().is_some_and(|a| a.seq >= seq) {
            w.active = None;
            let mut state = self.state.write();
            state.buffer.seq = None;
            state.buffer.bytes.clear();
        }

        let keep_len = usize::try_from(valid_end)
            .ok()
            .filter(|&n| n > FILE_HEADER_SIZE && n <= bytes.len());
        let mut doomed: Vec<(u32, PathBuf)> = {
            let state = self.state.read();
            state
                .files
                .range(seq..)
                .filter(|(&s, _)| s > seq || keep_len.is_none())
                .map(|(&s, m)| (s, m.path.clone()))
                .collect()
        };
        // Newest first, so a failure part way leaves no gap.
        doomed.reverse();
        for (s, p) in &doomed {
            self.state.write().files.remove(s);
            fs::remove_file(p).map_err(io_err("remove", p))?;
        }
        if let Some(keep_len) = keep_len {
            // Rewrite rather than shrink in place: see the `disk` module.
            let (new_path, file) = disk::create_file(&self.dir, seq, &bytes[..keep_len], 0)?;
            let map = disk::map_file(&file, &new_path)?;
            self.state.write().files.insert(
                seq,
                MappedFile {
                    path: new_path,
                    map,
                    readable_len: keep_len,
                },
            );
        }
        disk::sync_dir(&self.dir)?;
        doomed.reverse();
        Ok(Damage {
            seq,
            offset: valid_end,
            kind,
            files_removed: doomed.into_iter().map(|(s, _)| s).collect(),
            file_truncated: keep_len.is_some(),
        })
    }
}

impl Drop for ChunkDiskMapper {
    fn drop(&mut self) {
        if let Err(e) = self.close() {
            tracing::error!(dir = %self.dir.display(), error = %e, "closing head chunks failed");
        }
    }
}

fn sync_active(w: &WriterState) -> Result<(), HeadChunksError> {
    match &w.active {
        Some(a) => a.file.sync_all().map_err(io_err("fsync", &a.path)),
        None => Ok(()),
    }
}

/// Maps an existing file and checks its header. I/O failures are errors;
/// a bad header is damage.
fn map_existing(path: &Path) -> Result<Result<Arc<Mmap>, DamageKind>, HeadChunksError> {
    let file = fs::File::open(path).map_err(io_err("open", path))?;
    let len = file.metadata().map_err(io_err("stat", path))?.len();
    if len < FILE_HEADER_SIZE as u64 {
        return Ok(Err(DamageKind::HeaderTooShort { len }));
    }
    let map = disk::map_file(&file, path)?;
    Ok(format::check_header(&map).map(|()| map))
}

/// Whether a file's header is missing or all zeros: what a crash between
/// creating a file and writing its header leaves behind.
fn is_unfinished_header(path: &Path) -> Result<bool, HeadChunksError> {
    let mut header = Vec::with_capacity(FILE_HEADER_SIZE);
    fs::File::open(path)
        .and_then(|f| f.take(FILE_HEADER_SIZE as u64).read_to_end(&mut header))
        .map_err(io_err("read", path))?;
    Ok(header.len() < FILE_HEADER_SIZE || header.iter().all(|&b| b == 0))
}
