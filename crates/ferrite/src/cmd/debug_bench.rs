//! `ferrite debug bench-*`: the Ferrite side of the block benchmarks
//! (`scripts/bench-blocks`, driven by `interop/cmd/blockbench`; the
//! Prometheus side is `interop/cmd/promcompact`). Each prints one
//! `key=value` line that the driver parses.
//!
//! Memory is measured in-process from `/proc/self/status`: `VmRSS` (resident
//! now) and `VmHWM` (the peak so far). Writing `5` to `/proc/self/clear_refs`
//! resets `VmHWM` to the current RSS, so the peak of one phase can be read
//! apart from the phases before it.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Subcommand;
use ferrite_model::Matcher;
use ferrite_tsdb::{Db, DbOptions};

// The variants name the subcommands (`bench-compact`, `bench-merge`, ...).
#[allow(clippy::enum_variant_names)]
#[derive(Subcommand)]
pub enum BenchCommand {
    /// Opens DIR as the server would, then persists the whole head into
    /// blocks (one per aligned block range, `Db::compact_head_fully`). Prints
    /// `open_s=.. compact_s=.. rss_open_mb=.. peak_open_mb=..
    /// peak_compact_mb=.. peak_mb=.. blocks=.. samples=..`: peak_compact_mb
    /// is the peak RSS during the compaction alone (VmHWM reset after the
    /// open), peak_mb the whole process' peak; samples is the sum of the new
    /// blocks' meta.json stats.
    BenchCompact { dir: PathBuf },
    /// Opens DIR (blocks only) and runs the leveled compaction a server with
    /// the default 15 d retention runs (block ranges 2 h, 6 h, 18 h) until
    /// the planner has nothing left (`Db::compact`, expired blocks kept).
    /// Prints `open_s=.. compact_s=.. rss_open_mb=.. peak_open_mb=..
    /// peak_compact_mb=.. peak_mb=.. blocks_before=.. blocks=.. samples=..`
    /// (blocks and samples after the compaction, over all blocks).
    BenchMerge { dir: PathBuf },
    /// Opens DIR as the server would (`Db::open`) and prints `open_s=..
    /// rss_open_mb=.. peak_open_mb=.. blocks=..`; with --name and --instance
    /// it then selects that one series over all time and reads all its
    /// samples --read-runs times, adding `read_s=<median> read_runs=<s,s,..>
    /// read_series=.. read_samples=..`.
    BenchOpen {
        dir: PathBuf,
        /// `__name__` of the series to read.
        #[arg(long)]
        name: Option<String>,
        /// `instance` of the series to read.
        #[arg(long)]
        instance: Option<String>,
        #[arg(long, default_value_t = 7)]
        read_runs: usize,
    },
}

pub fn run(c: BenchCommand) -> Result<()> {
    match c {
        BenchCommand::BenchCompact { dir } => bench_compact(&dir),
        BenchCommand::BenchMerge { dir } => bench_merge(&dir),
        BenchCommand::BenchOpen {
            dir,
            name,
            instance,
            read_runs,
        } => bench_open(&dir, name.as_deref(), instance.as_deref(), read_runs),
    }
}

/// A field of `/proc/self/status` in MB (the kernel reports kB).
fn status_mb(field: &str) -> Result<f64> {
    let s = std::fs::read_to_string("/proc/self/status").context("reading /proc/self/status")?;
    for line in s.lines() {
        if let Some(rest) = line.strip_prefix(field) {
            if let Some(v) = rest.strip_prefix(':') {
                let kb: f64 = v
                    .trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse()
                    .with_context(|| format!("parsing {field} in /proc/self/status"))?;
                return Ok(kb / 1024.0);
            }
        }
    }
    bail!("no {field} in /proc/self/status")
}

/// Resets the kernel's peak-RSS counter (VmHWM) to the current RSS.
fn reset_peak_rss() -> Result<()> {
    std::fs::write("/proc/self/clear_refs", "5").context("writing 5 to /proc/self/clear_refs")
}

fn open(dir: &Path) -> Result<(Db, f64)> {
    let start = Instant::now();
    let db = Db::open(dir, DbOptions::default())
        .with_context(|| format!("opening {}", dir.display()))?;
    Ok((db, start.elapsed().as_secs_f64()))
}

fn bench_compact(dir: &Path) -> Result<()> {
    let (db, open_s) = open(dir)?;
    let rss_open = status_mb("VmRSS")?;
    let peak_open = status_mb("VmHWM")?;
    let had: std::collections::HashSet<_> = db.blocks().iter().map(|b| b.ulid()).collect();
    reset_peak_rss()?;
    let start = Instant::now();
    let written = db
        .compact_head_fully()
        .with_context(|| format!("compacting the head of {}", dir.display()))?;
    let compact_s = start.elapsed().as_secs_f64();
    let peak_compact = status_mb("VmHWM")?;
    let mut samples = 0u64;
    let mut blocks = 0usize;
    for b in db.blocks() {
        if !had.contains(&b.ulid()) {
            blocks += 1;
            samples += b.meta().stats.num_samples;
        }
    }
    if blocks != written.len() {
        bail!(
            "compaction reported {} blocks, the db lists {blocks} new ones",
            written.len()
        );
    }
    db.close()?;
    println!(
        "open_s={open_s:.3} compact_s={compact_s:.3} rss_open_mb={rss_open:.1} peak_open_mb={peak_open:.1} \
         peak_compact_mb={peak_compact:.1} peak_mb={:.1} blocks={blocks} samples={samples}",
        peak_open.max(peak_compact)
    );
    Ok(())
}

fn bench_merge(dir: &Path) -> Result<()> {
    let start = Instant::now();
    let opts = DbOptions {
        keep_expired_blocks: true,
        ..DbOptions::default()
    };
    let db = Db::open(dir, opts).with_context(|| format!("opening {}", dir.display()))?;
    let open_s = start.elapsed().as_secs_f64();
    let rss_open = status_mb("VmRSS")?;
    let peak_open = status_mb("VmHWM")?;
    let before = db.blocks().len();
    reset_peak_rss()?;
    let start = Instant::now();
    db.compact()
        .with_context(|| format!("compacting the blocks of {}", dir.display()))?;
    let compact_s = start.elapsed().as_secs_f64();
    let peak_compact = status_mb("VmHWM")?;
    let blocks = db.blocks();
    let samples: u64 = blocks.iter().map(|b| b.meta().stats.num_samples).sum();
    let after = blocks.len();
    drop(blocks);
    db.close()?;
    println!(
        "open_s={open_s:.3} compact_s={compact_s:.3} rss_open_mb={rss_open:.1} peak_open_mb={peak_open:.1} \
         peak_compact_mb={peak_compact:.1} peak_mb={:.1} blocks_before={before} blocks={after} samples={samples}",
        peak_open.max(peak_compact)
    );
    Ok(())
}

fn bench_open(
    dir: &Path,
    name: Option<&str>,
    instance: Option<&str>,
    read_runs: usize,
) -> Result<()> {
    let (db, open_s) = open(dir)?;
    let rss_open = status_mb("VmRSS")?;
    let peak_open = status_mb("VmHWM")?;
    let blocks = db.blocks().len();
    let mut line = format!(
        "open_s={open_s:.3} rss_open_mb={rss_open:.1} peak_open_mb={peak_open:.1} blocks={blocks}"
    );
    match (name, instance) {
        (None, None) => {}
        (Some(name), Some(instance)) => {
            if read_runs == 0 {
                bail!("--read-runs must be at least 1");
            }
            let matchers = [
                Matcher::equal("__name__", name),
                Matcher::equal("instance", instance),
            ];
            let mut times = Vec::with_capacity(read_runs);
            let (mut series, mut samples) = (0u64, 0u64);
            for _ in 0..read_runs {
                let start = Instant::now();
                let (mut n_series, mut n_samples, mut sum) = (0u64, 0u64, 0.0f64);
                let q = db.querier(i64::MIN, i64::MAX);
                for s in q.select(&matchers).context("selecting the series")? {
                    n_series += 1;
                    s.for_each_sample(|_, v| {
                        n_samples += 1;
                        sum += v;
                    })
                    .with_context(|| format!("reading {}", s.labels))?;
                }
                times.push(start.elapsed().as_secs_f64());
                std::hint::black_box(sum);
                (series, samples) = (n_series, n_samples);
            }
            let runs: Vec<String> = times.iter().map(|t| format!("{t:.6}")).collect();
            line.push_str(&format!(
                " read_s={:.6} read_runs={} read_series={series} read_samples={samples}",
                median(&times),
                runs.join(",")
            ));
        }
        _ => bail!("give both --name and --instance, or neither"),
    }
    db.close()?;
    println!("{line}");
    Ok(())
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}
