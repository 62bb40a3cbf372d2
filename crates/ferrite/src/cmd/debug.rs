//! Developer tools used by the interoperability suite.

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Subcommand;
use ferrite_chunkenc::XorChunk;

#[derive(Subcommand)]
pub enum DebugCommand {
    /// Encodes samples as XOR chunks and prints each chunk as hex.
    /// FILE: one `<t> <float64 bits as 16 hex digits>` per line, chunks
    /// separated by an empty line.
    XorEncode { file: PathBuf },
    /// Block index tools.
    #[command(subcommand)]
    Index(super::debug_index::IndexCommand),
    /// Block chunk segment, meta.json and tombstones tools.
    #[command(subcommand)]
    BlockFiles(super::debug_block::BlockFilesCommand),
    /// Compaction planning and retention (cross-checks with Prometheus).
    #[command(subcommand)]
    Plan(super::debug_plan::PlanCommand),
    /// Block benchmarks (`bench-compact`, `bench-open`), see scripts/bench-blocks.
    #[command(flatten)]
    Bench(super::debug_bench::BenchCommand),
}

pub fn run(c: DebugCommand) -> Result<()> {
    match c {
        DebugCommand::XorEncode { file } => xor_encode(&file),
        DebugCommand::Index(c) => super::debug_index::run(c),
        DebugCommand::BlockFiles(c) => super::debug_block::run(c),
        DebugCommand::Plan(c) => super::debug_plan::run(c),
        DebugCommand::Bench(c) => super::debug_bench::run(c),
    }
}

fn xor_encode(file: &std::path::Path) -> Result<()> {
    let text =
        std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let mut out = String::new();
    let mut chunk = XorChunk::new();
    let flush = |chunk: &mut XorChunk, out: &mut String| {
        if chunk.num_samples() > 0 {
            for b in chunk.bytes() {
                let _ = write!(out, "{b:02x}");
            }
            out.push('\n');
        }
        *chunk = XorChunk::new();
    };
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            flush(&mut chunk, &mut out);
            continue;
        }
        let mut parts = line.split_whitespace();
        let (Some(t), Some(v), None) = (parts.next(), parts.next(), parts.next()) else {
            bail!("line {}: want `<t> <hex bits>`", n + 1);
        };
        let t: i64 = t
            .parse()
            .with_context(|| format!("line {}: timestamp", n + 1))?;
        let bits =
            u64::from_str_radix(v, 16).with_context(|| format!("line {}: value bits", n + 1))?;
        chunk.append(t, f64::from_bits(bits));
    }
    flush(&mut chunk, &mut out);
    print!("{out}");
    Ok(())
}
