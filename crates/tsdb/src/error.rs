//! Error types of the storage engine.

use ferrite_wal::record::RecordError;
use ferrite_wal::WalError;

use crate::head_chunks::HeadChunksError;

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
