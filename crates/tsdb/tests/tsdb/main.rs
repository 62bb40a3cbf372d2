//! The storage engine's integration tests, one binary (sixteen test
//! binaries each linked the engine: one saves their disk and link time).

mod common;
mod compact_blocks;
mod compact_concurrent;
mod compact_head;
mod delete;
mod head;
mod head_chunks;
mod head_chunks_prometheus;
mod head_histograms;
mod head_model;
mod leveled;
mod out_of_order;
mod query_read;
mod replay_histograms;
mod replay_model;
mod replay_ranges;
mod unsupported;
