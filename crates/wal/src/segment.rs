//! On-disk layout of WAL segments, shared by the writer and the reader.
//!
//! A WAL directory holds segment files named by their index as eight
//! zero-padded decimal digits (`00000000`, `00000001`, ...). A segment has no
//! header: it is a sequence of 32 KiB pages, each filled with record
//! fragments. Every fragment starts with a 7-byte header:
//!
//! ```text
//! type <1 byte> | length <2 bytes, big endian> | CRC32-C of data <4 bytes, big endian> | data
//! ```
//!
//! The type byte packs, from high to low bits: 3 reserved bits, a zstd flag
//! (`0x10`), a snappy flag (`0x08`) and a 3-bit fragment kind (0 = rest of
//! page is padding, 1 = full record, 2 = first, 3 = middle, 4 = last
//! fragment). Fragments never cross a page boundary and records never cross
//! a segment boundary, so every segment can be read (or deleted) on its own.
//! Compression applies to the whole record before it is split into fragments.
//!
//! This mirrors `tsdb/docs/format/wal.md` and `tsdb/wlog/wlog.go` of
//! Prometheus v3.9.1.

use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use crate::error::{ParseCompressionError, WalError};

/// Size of a WAL page. Fragments never cross a page boundary.
pub const PAGE_SIZE: usize = 32 * 1024;

/// Prometheus' default maximum segment size (a single oversized record may
/// still make a segment larger).
pub const DEFAULT_SEGMENT_SIZE: usize = 128 * 1024 * 1024;

/// Size of a fragment header: type, length, CRC.
pub const FRAGMENT_HEADER_SIZE: usize = 7;

/// Largest data payload of one fragment (a fragment fills at most a page).
pub const MAX_FRAGMENT_DATA: usize = PAGE_SIZE - FRAGMENT_HEADER_SIZE;

/// Type byte flag: the record is snappy (raw block format) compressed.
pub(crate) const SNAPPY_FLAG: u8 = 0x08;
/// Type byte flag: the record is zstd compressed (standard zstd frames).
pub(crate) const ZSTD_FLAG: u8 = 0x10;
/// Type byte bits that carry the fragment kind.
pub(crate) const KIND_MASK: u8 = 0x07;
/// Type byte bits Prometheus leaves unallocated.
pub(crate) const RESERVED_MASK: u8 = 0xE0;

/// Fragment kinds stored in the low three bits of the type byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FragmentKind {
    /// The remainder of the page is zero padding.
    Padding = 0,
    /// A whole record in one fragment.
    Full = 1,
    First = 2,
    Middle = 3,
    Last = 4,
}

impl FragmentKind {
    pub(crate) fn from_bits(bits: u8) -> Option<Self> {
        match bits & KIND_MASK {
            0 => Some(Self::Padding),
            1 => Some(Self::Full),
            2 => Some(Self::First),
            3 => Some(Self::Middle),
            4 => Some(Self::Last),
            _ => None,
        }
    }
}

/// Record compression, as Prometheus' `--storage.tsdb.wal-compression-type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Compression {
    None,
    #[default]
    Snappy,
    Zstd,
}

impl Compression {
    /// The name Prometheus uses for this compression.
    pub fn as_str(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Snappy => "snappy",
            Compression::Zstd => "zstd",
        }
    }

    /// Type byte flag marking a record compressed this way.
    pub(crate) fn flag(self) -> u8 {
        match self {
            Compression::None => 0,
            Compression::Snappy => SNAPPY_FLAG,
            Compression::Zstd => ZSTD_FLAG,
        }
    }
}

impl fmt::Display for Compression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Compression {
    type Err = ParseCompressionError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        // Prometheus treats the empty string as "none".
        match s {
            "" | "none" => Ok(Compression::None),
            "snappy" => Ok(Compression::Snappy),
            "zstd" => Ok(Compression::Zstd),
            other => Err(ParseCompressionError(other.to_string())),
        }
    }
}

/// Options of a [`crate::WalWriter`].
#[derive(Clone, Debug)]
pub struct WalOptions {
    /// Target segment size; must be a non-zero multiple of [`PAGE_SIZE`].
    pub segment_size: usize,
    pub compression: Compression,
    /// fsync the segment after every [`crate::WalWriter::log`] call.
    pub fsync_on_flush: bool,
}

impl Default for WalOptions {
    fn default() -> Self {
        WalOptions {
            segment_size: DEFAULT_SEGMENT_SIZE,
            compression: Compression::default(),
            fsync_on_flush: false,
        }
    }
}

/// A segment file of a WAL directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentRef {
    pub index: u32,
    pub path: PathBuf,
}

/// Path of segment `index` in `dir`.
pub fn segment_path(dir: &Path, index: u32) -> PathBuf {
    dir.join(format!("{index:08}"))
}

/// Parses a segment file name as written by Prometheus (`%08d`): all digits,
/// at least eight of them, no superfluous leading zeros beyond the padding.
pub fn parse_segment_name(name: &str) -> Option<u32> {
    if name.len() < 8 || !name.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let index: u32 = name.parse().ok()?;
    // Reject e.g. "000000001": Prometheus would never write it, and accepting
    // it would make two names map to the same index.
    (name.len() == 8 || !name.starts_with('0')).then_some(index)
}

/// Segments of a WAL directory, sorted by index.
///
/// Names that are not segment names (checkpoints, `*.repair`, temp files)
/// are ignored. A missing directory is an empty WAL. Like Prometheus, a gap
/// in the index sequence is an error: it means data went missing.
pub fn list_segments(dir: &Path) -> Result<Vec<SegmentRef>, WalError> {
    list_segments_in_range(dir, 0, u32::MAX)
}

/// Segments of `dir` with index in `first..=last`, sorted; they must be
/// consecutive. Segments outside the range are ignored even if they have
/// gaps (e.g. old segments left below a checkpoint).
pub fn list_segments_in_range(
    dir: &Path,
    first: u32,
    last: u32,
) -> Result<Vec<SegmentRef>, WalError> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    let mut segments = Vec::new();
    for entry in entries {
        let entry = entry?;
        let Some(index) = entry.file_name().to_str().and_then(parse_segment_name) else {
            continue;
        };
        if index < first || index > last || entry.file_type()?.is_dir() {
            continue;
        }
        segments.push(SegmentRef {
            index,
            path: entry.path(),
        });
    }
    segments.sort_by_key(|s| s.index);
    for pair in segments.windows(2) {
        if pair[0].index.checked_add(1) != Some(pair[1].index) {
            return Err(WalError::NonSequentialSegments {
                dir: dir.to_path_buf(),
                before: pair[0].index,
                after: pair[1].index,
            });
        }
    }
    Ok(segments)
}

/// fsync a directory so that created, renamed or deleted entries are durable.
pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        fs::File::open(dir)?.sync_all()
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_names() {
        assert_eq!(parse_segment_name("00000000"), Some(0));
        assert_eq!(parse_segment_name("00000042"), Some(42));
        assert_eq!(parse_segment_name("123456789"), Some(123_456_789));
        assert_eq!(parse_segment_name("0000001"), None);
        assert_eq!(parse_segment_name("000000001"), None);
        assert_eq!(parse_segment_name("00000001.repair"), None);
        assert_eq!(parse_segment_name("checkpoint.00000001"), None);
        assert_eq!(parse_segment_name("+0000001"), None);
        assert_eq!(parse_segment_name("99999999999"), None);
        assert_eq!(segment_path(Path::new("wal"), 7), Path::new("wal/00000007"));
    }

    #[test]
    fn compression_names() {
        for c in [Compression::None, Compression::Snappy, Compression::Zstd] {
            assert_eq!(c.as_str().parse::<Compression>(), Ok(c));
        }
        assert_eq!("".parse::<Compression>(), Ok(Compression::None));
        assert!("lz4".parse::<Compression>().is_err());
        assert_eq!(Compression::default(), Compression::Snappy);
    }
}
