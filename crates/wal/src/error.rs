//! Error types of the WAL crate.
//!
//! Corruption is kept apart from I/O failure on purpose: a corrupt WAL is an
//! expected condition after a crash and is answered with [`crate::repair`],
//! while an I/O error means the disk or the process is in trouble and must
//! not trigger data deletion.

use std::fmt;
use std::io;
use std::path::PathBuf;

use thiserror::Error;

/// Position and cause of the first bad record found while reading a WAL.
///
/// `offset` is the byte offset, inside segment `segment`, of the start of the
/// first record that could not be read: everything before it is intact and
/// [`crate::repair`] truncates the segment there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Corruption {
    pub segment: u32,
    pub offset: u64,
    pub reason: String,
}

impl fmt::Display for Corruption {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "WAL corruption in segment {:08} at offset {}: {}",
            self.segment, self.offset, self.reason
        )
    }
}

impl std::error::Error for Corruption {}

/// Everything that can go wrong in the WAL segment layer.
#[derive(Debug, Error)]
pub enum WalError {
    #[error("WAL I/O error: {0}")]
    Io(#[from] io::Error),

    #[error(transparent)]
    Corruption(#[from] Corruption),

    /// Prometheus refuses a WAL directory with holes in the segment sequence.
    #[error("WAL segments in {dir:?} are not sequential: {before:08} is followed by {after:08}")]
    NonSequentialSegments {
        dir: PathBuf,
        before: u32,
        after: u32,
    },

    #[error("invalid WAL segment size {0}: must be a non-zero multiple of the 32 KiB page size")]
    InvalidSegmentSize(usize),

    #[error("WAL segment index overflow after segment {0}")]
    SegmentIndexOverflow(u32),

    #[error("record of {0} bytes is too large to be compressed")]
    RecordTooLarge(usize),

    #[error("WAL compression failed: {0}")]
    Compression(String),

    /// A previous write failed and could not be rolled back, so the on-disk
    /// position of the writer is unknown; the WAL must be re-read and repaired.
    #[error("WAL writer is unusable after a failed write that could not be rolled back")]
    WriterPoisoned,

    #[error("cannot repair: segment {0:08} does not exist")]
    RepairSegmentMissing(u32),

    #[error(
        "cannot repair: offset {offset} is past the end of segment {segment:08} ({len} bytes)"
    )]
    RepairOffsetOutOfRange { segment: u32, offset: u64, len: u64 },
}

impl WalError {
    /// The corruption details, if this error is a corruption.
    pub fn as_corruption(&self) -> Option<&Corruption> {
        match self {
            WalError::Corruption(c) => Some(c),
            _ => None,
        }
    }
}

/// A compression name that is not one of `none`, `snappy`, `zstd`.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("unknown WAL compression {0:?}: expected none, snappy or zstd")]
pub struct ParseCompressionError(pub String);
