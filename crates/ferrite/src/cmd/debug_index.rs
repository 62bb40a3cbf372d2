//! Developer tools for the block index (cross-checks with Prometheus).

use anyhow::Result;
use clap::Subcommand;

#[derive(Subcommand)]
pub enum IndexCommand {
    /// Prints what an index file holds.
    Dump { file: std::path::PathBuf },
}

pub fn run(c: IndexCommand) -> Result<()> {
    match c {
        IndexCommand::Dump { file } => anyhow::bail!("not built yet: {}", file.display()),
    }
}
