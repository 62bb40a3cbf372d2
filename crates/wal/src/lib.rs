//! Prometheus-compatible write-ahead log.
//!
//! Ferrite's WAL is read and written in the exact on-disk format of
//! Prometheus v3.9.1 (`tsdb/wlog`), so a data directory can move between the
//! two. This crate has two layers:
//!
//! * the segment layer ([`WalWriter`], [`RecordReader`], [`repair`]) moves
//!   opaque byte records in and out of 32 KiB-paged, CRC-protected segment
//!   files, optionally snappy- or zstd-compressed;
//! * [`record`] encodes and decodes the records themselves (series, samples,
//!   ...) and [`checkpoint`] compacts old segments.
//!
//! See [`segment`] for the layout and [`reader`] for how damage is detected.

pub mod checkpoint;
mod codec;
pub mod error;
pub mod ranges;
pub mod reader;
pub mod record;
mod repair;
pub mod segment;
pub mod writer;

pub use error::{Corruption, ParseCompressionError, WalError};
pub use ranges::{split_segments, stitch, RangeEnd, SegmentRange};
pub use reader::{RecordReader, DEFAULT_MAX_RECORD_SIZE};
pub use repair::repair;
pub use segment::{
    list_segments, list_segments_in_range, segment_path, Compression, SegmentRef, WalOptions,
    DEFAULT_SEGMENT_SIZE, PAGE_SIZE,
};
pub use writer::{PreparedRecords, WalWriter};
