//! Developer tools for the block index (cross-checks with Prometheus).
//!
//! Both commands speak the text formats of `ferrite_index::text`, which
//! `interop/cmd/promindexgen` implements on top of Prometheus' own index
//! writer and reader, so the two sides can be diffed.

use std::io::Write;

use anyhow::{Context, Result};
use clap::Subcommand;
use ferrite_index::text::{dump, Spec};
use ferrite_index::IndexReader;

#[derive(Subcommand)]
pub enum IndexCommand {
    /// Prints what an index file holds, in the deterministic dump format.
    Dump { file: std::path::PathBuf },
    /// Writes an index file from a text spec (symbol / series / chunk lines).
    Write {
        spec: std::path::PathBuf,
        out: std::path::PathBuf,
    },
}

pub fn run(c: IndexCommand) -> Result<()> {
    match c {
        IndexCommand::Dump { file } => {
            let r = IndexReader::open(&file).with_context(|| format!("open {}", file.display()))?;
            let text = dump(&r).with_context(|| format!("read {}", file.display()))?;
            std::io::stdout().lock().write_all(text.as_bytes())?;
            Ok(())
        }
        IndexCommand::Write { spec, out } => {
            let text = std::fs::read_to_string(&spec)
                .with_context(|| format!("read {}", spec.display()))?;
            let spec = Spec::parse(&text)?;
            spec.write_index(&out)
                .with_context(|| format!("write {}", out.display()))?;
            Ok(())
        }
    }
}
