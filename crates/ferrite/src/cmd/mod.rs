//! Subcommands.

pub mod backfill;
pub mod census;
pub mod check;
pub mod debug;
pub mod debug_bench;
pub mod debug_block;
pub mod debug_index;
pub mod debug_plan;
pub mod promql_test;
pub mod server;
pub mod synth;
pub mod test_rules;
pub mod tsdb;
pub mod tsdb_tools;
