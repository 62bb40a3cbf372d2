//! Developer tools for block files: meta.json, chunk segments, tombstones.

use anyhow::Result;
use clap::Subcommand;

#[derive(Subcommand)]
pub enum BlockFilesCommand {
    /// Prints what a block's chunk segment files hold.
    DumpChunks { dir: std::path::PathBuf },
}

pub fn run(c: BlockFilesCommand) -> Result<()> {
    match c {
        BlockFilesCommand::DumpChunks { dir } => anyhow::bail!("not built yet: {}", dir.display()),
    }
}
