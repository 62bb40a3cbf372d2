//! Ferrite's storage engine.
//!
//! Where things are:
//! - [`db`]: opening a data directory (the entry point);
//! - [`head`]: the in-memory head block, its series and appender;
//! - [`head_chunks`]: `chunks_head/`, closed head chunks on disk;
//! - [`replay`]: rebuilding the head from `chunks_head/` and the WAL;
//!   [`replay_wbl`]: then its out-of-order samples from the WBL;
//! - [`querier`]: selecting series by label matchers;
//! - [`postings`]: the inverted index; [`symbols`]: interned label sets
//!   (label sets and matchers themselves are `ferrite-model`'s).
//!
//! The WAL itself is the `ferrite-wal` crate, the chunk encodings
//! `ferrite-chunkenc`. Nothing here knows about HTTP or PromQL.

pub mod backfill;
pub mod block;
pub mod compact;
mod counting_sort;
pub mod db;
pub mod error;
pub mod head;
pub mod head_chunks;
mod heap;
pub mod postings;
pub mod querier;
pub mod replay;
pub mod replay_wbl;
pub mod retention;
pub mod sample;
pub mod symbols;
mod varint;

pub use db::{CompactionStats, Db, DbOptions};
pub use error::{DbError, HeadError, QueryError};
pub use head::{AppendError, Head, HeadAppender, HeadOptions, LentHistogram};
pub use querier::{HeadQuerier, Querier, QuerySeries};
pub use replay::ReplayStats;
