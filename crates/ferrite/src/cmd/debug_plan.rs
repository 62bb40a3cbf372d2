//! Developer tools for compaction planning and retention.

use anyhow::Result;
use clap::Subcommand;

#[derive(Subcommand)]
pub enum PlanCommand {
    /// Prints the blocks the leveled compactor would compact next in DIR.
    Compact { dir: std::path::PathBuf },
}

pub fn run(c: PlanCommand) -> Result<()> {
    match c {
        PlanCommand::Compact { dir } => anyhow::bail!("not built yet: {}", dir.display()),
    }
}
