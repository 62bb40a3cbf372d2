//! The files of a Prometheus TSDB block other than the index.
//!
//! A block is a directory named after its ULID:
//!
//! ```text
//! <ULID>/
//!   meta.json        [meta]        what the block holds and where it came from
//!   index            (ferrite-index) series, labels, postings, chunk refs
//!   chunks/000001    [chunks]      chunk segment files, 512 MiB at most each
//!   chunks/000002
//!   tombstones       [tombstones]  deleted time ranges per series
//! ```
//!
//! Each module reads and writes one kind of file exactly as Prometheus
//! v3.9.1 does (byte-identical output, the same acceptance rules on input),
//! and documents its format next to the code. [`text`] holds the plain-text
//! spec and dump forms shared with the Go cross-check tool
//! (`interop/cmd/promblockfiles`).

pub mod chunks;
mod fsutil;
pub mod meta;
pub mod text;
pub mod tombstones;

pub use chunks::{ChunkReader, ChunkRef, ChunkWriter, ChunksError, RawChunk};
pub use meta::{BlockDesc, BlockMeta, BlockStats, BlockUlid, Compaction, MetaError};
pub use tombstones::{Interval, Intervals, Tombstones, TombstonesError};
