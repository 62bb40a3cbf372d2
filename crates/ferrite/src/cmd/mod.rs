//! Subcommands.

pub mod debug;
pub mod synth;
pub mod tsdb;
