//! Error type of the index crate.
//!
//! Reading splits failures into I/O, a file that is not an index at all
//! (magic, version), and corruption of one section, which names the section
//! and the byte offset so a damaged block can be reported precisely.
//! Writing adds the misuse errors Prometheus' writer reports (out-of-order
//! symbols or series, missing symbols, bad chunk ranges).

use std::io;

use thiserror::Error;

/// Everything that can go wrong reading or writing an index.
#[derive(Debug, Error)]
pub enum IndexError {
    #[error("index I/O error: {0}")]
    Io(#[from] io::Error),

    #[error("not an index file: {len} bytes is too short")]
    TooShort { len: usize },

    #[error("not an index file: bad magic number {0:#010x}")]
    BadMagic(u32),

    #[error("unsupported index format version {0} (Ferrite reads versions 2 and 3; version 1 was written only by Prometheus 2.0 to 2.7)")]
    UnsupportedVersion(u8),

    #[error("index {section}: CRC mismatch at offset {offset}: stored {stored:#010x}, computed {computed:#010x}")]
    Checksum {
        section: &'static str,
        offset: u64,
        stored: u32,
        computed: u32,
    },

    /// Bytes that cannot be what the format says they are: a length past
    /// the end of the file, a truncated varint, an impossible count.
    #[error("corrupt index {section} at offset {offset}: {reason}")]
    Corrupt {
        section: &'static str,
        offset: u64,
        reason: String,
    },

    #[error("unknown symbol reference {0}")]
    UnknownSymbol(u32),

    #[error("series reference {0} is out of range")]
    SeriesRefOutOfRange(u64),

    #[error("symbol {0:?} is not in the symbol table")]
    MissingSymbol(String),

    #[error("symbol {symbol:?} is out of order: symbols must be added sorted and unique (previous {previous:?})")]
    SymbolOutOfOrder { symbol: String, previous: String },

    #[error("out-of-order series added with label set {series}, last label set {previous}")]
    SeriesOutOfOrder { series: String, previous: String },

    #[error("invalid label set {series}: {reason}")]
    InvalidLabels { series: String, reason: String },

    #[error("invalid chunk metas: {0}")]
    InvalidChunks(String),

    #[error("index writer misuse: {0}")]
    Stage(&'static str),

    #[error("index would exceed the maximum size of 64 GiB")]
    TooLarge,

    #[error("invalid index spec line {line}: {reason}")]
    Spec { line: usize, reason: String },
}

impl IndexError {
    pub(crate) fn corrupt(section: &'static str, offset: usize, reason: impl Into<String>) -> Self {
        IndexError::Corrupt {
            section,
            offset: offset as u64,
            reason: reason.into(),
        }
    }
}

/// A label string as error messages show it: lossy UTF-8, long ones cut.
pub(crate) fn shown(b: &[u8]) -> String {
    const MAX: usize = 120;
    let s = String::from_utf8_lossy(&b[..b.len().min(MAX)]).into_owned();
    if b.len() > MAX {
        format!("{s}... ({} bytes)", b.len())
    } else {
        s
    }
}

/// Shorthand for results of this crate.
pub type Result<T, E = IndexError> = std::result::Result<T, E>;
