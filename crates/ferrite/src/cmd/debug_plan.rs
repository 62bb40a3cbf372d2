//! Developer tools for compaction planning and retention.
//!
//! They print the decisions of `ferrite_tsdb::compact::planner` and
//! `ferrite_tsdb::retention` for a data directory, so the interop suite can
//! diff them with what Prometheus itself decides (`interop/cmd/promplan`).
//! Nothing in DIR is changed.

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Subcommand;
use ferrite_tsdb::compact::planner::{read_plan_blocks, server_block_ranges, PlanReason, Planner};
use ferrite_tsdb::retention::{
    blocks_to_delete, head_size_on_disk, load_retention_blocks, RetentionLimits,
};

#[derive(Subcommand)]
pub enum PlanCommand {
    /// Prints the blocks the leveled compactor would compact next in DIR,
    /// one ULID (directory name) per line, in Prometheus' order; nothing
    /// when there is nothing to do. The deciding rule goes to stderr.
    Compact {
        dir: PathBuf,
        /// Block ranges in ms, comma separated (the first is the head's
        /// block range). Default: the server's with default flags (2h,6h,18h).
        #[arg(long, value_delimiter = ',')]
        ranges: Option<Vec<i64>>,
        /// Plan as with vertical compaction disabled (Prometheus' server
        /// always has it on).
        #[arg(long)]
        no_overlapping: bool,
    },
    /// Prints the blocks a reload of DIR would delete, newest first, as
    /// `<ULID> <reason>[,<reason>...]` (reasons: deletable, parent-of:<ULID>,
    /// time, size). The limits are the TSDB's options: 0 disables each.
    Retention {
        dir: PathBuf,
        /// Time retention in ms (relative to the newest block's max time).
        #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
        time_ms: i64,
        /// Size retention in bytes (blocks plus the head's files).
        #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
        size_bytes: i64,
        /// The head's share of the size; default: the bytes of DIR's
        /// wal/, wbl/ and chunks_head/.
        #[arg(long)]
        head_bytes: Option<i64>,
    },
}

pub fn run(c: PlanCommand) -> Result<()> {
    let out = match c {
        PlanCommand::Compact {
            dir,
            ranges,
            no_overlapping,
        } => compact(dir, ranges, no_overlapping)?,
        PlanCommand::Retention {
            dir,
            time_ms,
            size_bytes,
            head_bytes,
        } => retention(dir, time_ms, size_bytes, head_bytes)?,
    };
    print!("{out}");
    Ok(())
}

fn compact(dir: PathBuf, ranges: Option<Vec<i64>>, no_overlapping: bool) -> Result<String> {
    let ranges = ranges.unwrap_or_else(|| server_block_ranges(0, 0, 0, 0));
    let planner = Planner::new(ranges)?.with_overlapping_compaction(!no_overlapping);
    let blocks = read_plan_blocks(&dir).with_context(|| format!("planning {}", dir.display()))?;
    let plan = planner.plan_explained(&blocks);
    // The rule that chose the plan, for people and the interop suite's tally.
    match plan.as_ref().map(|p| p.reason) {
        None => eprintln!("reason: none"),
        Some(PlanReason::Overlapping) => eprintln!("reason: overlapping"),
        Some(PlanReason::Leveled { range }) => eprintln!("reason: leveled range={range}"),
        Some(PlanReason::Tombstones) => eprintln!("reason: tombstones"),
    }
    let mut out = String::new();
    for d in plan.map(|p| p.dirs).unwrap_or_default() {
        let Some(name) = d.file_name() else {
            bail!("block dir without a name: {}", d.display());
        };
        let _ = writeln!(out, "{}", name.to_string_lossy());
    }
    Ok(out)
}

fn retention(
    dir: PathBuf,
    time_ms: i64,
    size_bytes: i64,
    head_bytes: Option<i64>,
) -> Result<String> {
    let (blocks, skipped) = load_retention_blocks(&dir)
        .with_context(|| format!("listing blocks in {}", dir.display()))?;
    for s in skipped {
        eprintln!("skipping block {}: {}", s.dir.display(), s.reason);
    }
    let head_bytes = match head_bytes {
        Some(n) => n,
        None => head_size_on_disk(&dir)
            .with_context(|| format!("measuring the head in {}", dir.display()))?,
    };
    let limits = RetentionLimits {
        duration_ms: time_ms,
        max_bytes: size_bytes,
        head_bytes,
    };
    let mut out = String::new();
    for d in blocks_to_delete(&blocks, &limits) {
        let reasons: Vec<String> = d.reasons.iter().map(|r| r.to_string()).collect();
        let _ = writeln!(out, "{} {}", d.ulid, reasons.join(","));
    }
    Ok(out)
}
