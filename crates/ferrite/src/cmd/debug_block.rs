//! Developer tools for block files: meta.json, chunk segments, tombstones.
//!
//! The spec and dump forms are those of `ferrite_block::text`, shared with
//! the Go tool `interop/cmd/promblockfiles`, which does the same with
//! Prometheus' own code; the interop tests compare the two.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Subcommand;
use ferrite_block::{meta, text, tombstones};

#[derive(Subcommand)]
pub enum BlockFilesCommand {
    /// Prints what a block's chunk segment files hold.
    DumpChunks { dir: PathBuf },
    /// Writes chunk segment files into DIR from a spec; prints the refs.
    WriteChunks { spec: PathBuf, dir: PathBuf },
    /// Prints the intervals of a tombstones file.
    DumpTombstones { file: PathBuf },
    /// Writes a tombstones file from a spec.
    WriteTombstones { spec: PathBuf, file: PathBuf },
    /// Prints a meta.json file.
    DumpMeta { file: PathBuf },
    /// Writes a meta.json file from a spec.
    WriteMeta { spec: PathBuf, file: PathBuf },
}

fn read_spec(path: &PathBuf) -> Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("reading spec {}", path.display()))
}

pub fn run(c: BlockFilesCommand) -> Result<()> {
    let out = match c {
        BlockFilesCommand::DumpChunks { dir } => text::dump_chunks_dir(&dir)?,
        BlockFilesCommand::WriteChunks { spec, dir } => {
            let spec = text::parse_chunks_spec(&read_spec(&spec)?)?;
            text::write_chunks_spec(&spec, &dir)?
        }
        BlockFilesCommand::DumpTombstones { file } => {
            text::dump_tombstones(&tombstones::read_tombstones_file(&file)?)
        }
        BlockFilesCommand::WriteTombstones { spec, file } => {
            let t = text::parse_tombstones_spec(&read_spec(&spec)?)?;
            tombstones::write_tombstones_file(&file, &t)?;
            String::new()
        }
        BlockFilesCommand::DumpMeta { file } => text::dump_meta(&meta::read_meta_file(&file)?),
        BlockFilesCommand::WriteMeta { spec, file } => {
            let m = text::parse_meta_spec(&read_spec(&spec)?)?;
            meta::write_meta_file(&file, &m)?;
            String::new()
        }
    };
    print!("{out}");
    Ok(())
}
