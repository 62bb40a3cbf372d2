//! Error types of the storage engine.
//!
//! [`Unsupported`] is kept apart from corruption on purpose. Bytes that pass
//! their checksum but are of a kind Ferrite cannot decode (a record type or
//! chunk encoding newer than Prometheus v3.16's) were written by a newer or
//! more capable writer: treating them as damage would "repair" them away, and
//! skipping them would lose them when the WAL is next checkpointed. So they
//! stop the open (or the read) with this error, before anything on disk is
//! changed.

use ferrite_wal::record::RecordError;
use ferrite_wal::WalError;

use crate::head_chunks::HeadChunksError;

/// Chunk encoding names, as `chunkenc.Encoding.String()` in Prometheus
/// v3.16 (`tsdb/chunkenc/chunk.go` v0.316.0), without the out-of-order bit.
pub fn chunk_encoding_name(enc: u8) -> &'static str {
    match enc {
        0 => "none",
        1 => "XOR",
        2 => "histogram",
        3 => "floathistogram",
        4 => "XOR2",
        5 => "histogram with start timestamps (histogram_st)",
        6 => "floathistogram with start timestamps (floathistogram_st)",
        _ => "unknown",
    }
}

/// The kind of data [`Unsupported`] refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnsupportedKind {
    /// A WAL (or checkpoint) record of this type byte.
    WalRecord(u8),
    /// A `chunks_head/` chunk with this encoding byte as stored (the
    /// out-of-order bit 0x80 included).
    HeadChunk(u8),
    /// A block chunk with this encoding byte.
    BlockChunk(u8),
}

impl std::fmt::Display for UnsupportedKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use ferrite_wal::record::RecordType as T;
        match *self {
            UnsupportedKind::WalRecord(b) => {
                let what = match T::from_u8(b) {
                    T::HistogramSamples
                    | T::FloatHistogramSamples
                    | T::CustomBucketsHistogramSamples
                    | T::CustomBucketsFloatHistogramSamples => "native histogram samples",
                    T::HistogramSamplesV2 | T::FloatHistogramSamplesV2 => {
                        "native histogram samples with start timestamps"
                    }
                    T::SamplesV2 => "float samples with start timestamps",
                    _ => "a record type Ferrite does not know",
                };
                write!(f, "WAL record type {b} ({}: {what})", T::from_u8(b).name())
            }
            UnsupportedKind::HeadChunk(raw) => {
                let enc = raw & !crate::head_chunks::OOO_ENCODING_MASK;
                if raw & crate::head_chunks::OOO_ENCODING_MASK != 0 {
                    write!(
                        f,
                        "out-of-order head chunk encoding byte {raw:#04x} ({})",
                        chunk_encoding_name(enc)
                    )
                } else {
                    write!(
                        f,
                        "head chunk encoding {enc} ({})",
                        chunk_encoding_name(enc)
                    )
                }
            }
            UnsupportedKind::BlockChunk(enc) => {
                write!(
                    f,
                    "block chunk encoding {enc} ({})",
                    chunk_encoding_name(enc)
                )
            }
        }
    }
}

/// Data Ferrite cannot read yet: the open (or the read) stops instead of
/// dropping it or decoding it as something else. `file` is the WAL segment,
/// checkpoint segment, `chunks_head/` file or block chunk file; `series` the
/// series' labels or ref where known.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unsupported: {kind} in {}{}; Ferrite cannot read it yet and stopped rather than lose or misread it", file.display(), self.series_text())]
pub struct Unsupported {
    pub kind: UnsupportedKind,
    pub file: std::path::PathBuf,
    /// The series' labels, where known.
    pub series: Option<String>,
    /// The series' ref (WAL and head chunk ref, or block index ref).
    pub series_ref: Option<u64>,
}

impl Unsupported {
    fn series_text(&self) -> String {
        match (&self.series, self.series_ref) {
            (Some(l), Some(r)) => format!(", series {l} (ref {r})"),
            (Some(l), None) => format!(", series {l}"),
            (None, Some(r)) => format!(", series ref {r}"),
            (None, None) => String::new(),
        }
    }
}

/// Failure of a head operation (replay, commit, close).
#[derive(Debug, thiserror::Error)]
pub enum HeadError {
    #[error("WAL: {0}")]
    Wal(#[from] WalError),
    #[error("head chunks: {0}")]
    HeadChunks(#[from] HeadChunksError),
    #[error("WAL record: {0}")]
    Record(#[from] RecordError),
    #[error("WAL checkpoint {index:08} is corrupt: {detail}")]
    CorruptCheckpoint { index: u32, detail: String },
    #[error("replay: {0}")]
    Replay(String),
    #[error("WAL checkpoint: {0}")]
    Checkpoint(#[from] ferrite_wal::checkpoint::CheckpointError),
    #[error(transparent)]
    Unsupported(Box<Unsupported>),
    #[error("{0}")]
    Options(String),
}

impl From<Unsupported> for HeadError {
    fn from(u: Unsupported) -> Self {
        HeadError::Unsupported(Box::new(u))
    }
}

/// Failure while reading data for a query.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    #[error("reading head chunk: {0}")]
    HeadChunks(#[from] HeadChunksError),
    #[error("corrupt chunk of series {series}: {detail}")]
    CorruptChunk { series: String, detail: String },
    #[error("reading block: {0}")]
    Block(String),
    #[error(transparent)]
    Unsupported(Box<Unsupported>),
}

/// Failure to open or close a data directory.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("{path}: {source}")]
    Io {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("data directory {0} is locked by another process")]
    Locked(std::path::PathBuf),
    #[error(transparent)]
    Head(#[from] HeadError),
    #[error(transparent)]
    Block(Box<crate::block::BlockError>),
    #[error("compaction: {0}")]
    Compact(Box<crate::compact::CompactError>),
}
