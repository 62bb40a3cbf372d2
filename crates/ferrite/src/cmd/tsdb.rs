//! `ferrite tsdb ...`: tools for a data directory.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Subcommand;
use ferrite_model::gofloat::format_e_prec;
use ferrite_model::Labels;
use ferrite_tsdb::{Db, DbOptions};
use ferrite_wal::Compression;

use super::synth;

#[derive(Subcommand)]
pub enum TsdbCommand {
    /// Opens DIR as the server would (replay and repair included), reads every
    /// sample back, and prints `open_s=.. series=.. samples=.. sum=..` last.
    Digest {
        dir: PathBuf,
        /// Only open: print `open_s` and `series`.
        #[arg(long)]
        open_only: bool,
    },
    /// Opens DIR as the server would and prints what it holds per kind of
    /// sample (floats, histograms, float histograms), with sums and a hash
    /// of every sample, in the interop suite's census form.
    Census { dir: PathBuf },
    /// Persists the head of DIR into blocks (one per block range) and runs
    /// the compactions the server would, then exits, leaving a data
    /// directory Prometheus opens with the same data.
    Compact {
        dir: PathBuf,
        /// Cap on the rate compaction writes chunk data, in bytes per
        /// second (default: unlimited), to spare a disk that serves queries.
        #[arg(long)]
        write_rate: Option<u64>,
    },
    /// Lists the blocks of DIR (promtool's `tsdb list`).
    List {
        dir: PathBuf,
        /// Human-readable times and sizes.
        #[arg(short = 'r', long)]
        human_readable: bool,
    },
    /// Cardinality analysis of a block (promtool's `tsdb analyze`): the
    /// newest block unless BLOCK_ID is given.
    Analyze {
        dir: PathBuf,
        block_id: Option<String>,
        /// How many items to show in each list.
        #[arg(long, default_value_t = 20)]
        limit: usize,
        /// Also run the per-metric-name postings analysis.
        #[arg(long)]
        extended: bool,
        /// Analyze series selected by this matcher expression only.
        #[arg(long = "match", default_value = "")]
        matchers: String,
    },
    /// Dumps samples of DIR, blocks and head (promtool's `tsdb dump`).
    Dump {
        dir: PathBuf,
        /// Series selector; repeatable. Default: all series.
        #[arg(long = "match")]
        matchers: Vec<String>,
        #[arg(long, default_value_t = i64::MIN)]
        min_time: i64,
        #[arg(long, default_value_t = i64::MAX)]
        max_time: i64,
    },
    /// Creates blocks from a file of samples (promtool's
    /// `tsdb create-blocks-from`).
    #[command(subcommand)]
    CreateBlocksFrom(CreateBlocksFrom),
    /// Writes synthetic series through the head (the interop suite's data model).
    Synth {
        dir: PathBuf,
        #[arg(long)]
        series: u64,
        #[arg(long)]
        samples: u64,
        #[arg(long, default_value_t = 15_000)]
        interval_ms: i64,
        #[arg(long, default_value_t = 1_700_000_000_000)]
        start_ms: i64,
        #[arg(long, default_value = "snappy")]
        wal_compression: Compression,
        #[arg(long)]
        wal_segment_size: Option<usize>,
        /// The encoding of float chunks: `xor` or `xor2`.
        #[arg(long, default_value = "xor")]
        float_encoding: String,
    },
}

#[derive(Subcommand)]
pub enum CreateBlocksFrom {
    /// Backfills blocks from an OpenMetrics file: one block per block
    /// range; a bad line stops everything with its line number before any
    /// block is written.
    Openmetrics {
        input: PathBuf,
        #[arg(default_value = "data/")]
        output: PathBuf,
        /// Length of the block ranges (Prometheus duration, e.g. 2h, 1d).
        #[arg(long, default_value = "2h")]
        max_block_duration: String,
        /// No progress bar, no summary.
        #[arg(short, long)]
        quiet: bool,
    },
}

pub fn run(c: TsdbCommand) -> Result<()> {
    match c {
        TsdbCommand::Digest { dir, open_only } => digest(&dir, open_only),
        TsdbCommand::Census { dir } => super::census::census(&dir),
        TsdbCommand::Compact { dir, write_rate } => compact(&dir, write_rate),
        TsdbCommand::CreateBlocksFrom(CreateBlocksFrom::Openmetrics {
            input,
            output,
            max_block_duration,
            quiet,
        }) => {
            let d = ferrite_model::units::parse_duration_ms(&max_block_duration)?;
            let blocks =
                super::backfill::create_blocks_from_openmetrics(&input, &output, d, quiet)?;
            if !quiet {
                for b in blocks {
                    println!("{}", b.display());
                }
            }
            Ok(())
        }
        TsdbCommand::List {
            dir,
            human_readable,
        } => super::tsdb_tools::list(&dir, human_readable),
        TsdbCommand::Analyze {
            dir,
            block_id,
            limit,
            extended,
            matchers,
        } => super::tsdb_tools::analyze(&dir, block_id.as_deref(), limit, extended, &matchers),
        TsdbCommand::Dump {
            dir,
            matchers,
            min_time,
            max_time,
        } => super::tsdb_tools::dump(&dir, &matchers, min_time, max_time),
        TsdbCommand::Synth {
            dir,
            series,
            samples,
            interval_ms,
            start_ms,
            wal_compression,
            wal_segment_size,
            float_encoding,
        } => {
            let mut opts = tool_options();
            opts.head.float_chunk_encoding = match float_encoding.as_str() {
                "xor" => ferrite_chunkenc::Encoding::Xor,
                "xor2" => ferrite_chunkenc::Encoding::Xor2,
                other => anyhow::bail!("--float-encoding {other:?}: must be xor or xor2"),
            };
            if let Some(wal) = opts.head.wal.as_mut() {
                wal.compression = wal_compression;
                if let Some(s) = wal_segment_size {
                    wal.segment_size = s;
                }
            }
            write_synth(&dir, opts, series, samples, interval_ms, start_ms)
        }
    }
}

/// How the tools open a data directory: as the server does, except that
/// they never delete blocks for retention (a server on the directory may
/// keep them longer than the default 15 days).
pub fn tool_options() -> DbOptions {
    DbOptions {
        keep_expired_blocks: true,
        ..DbOptions::default()
    }
}

fn compact(dir: &Path, write_rate: Option<u64>) -> Result<()> {
    let opts = DbOptions {
        compaction_write_bytes_per_sec: write_rate,
        ..tool_options()
    };
    let db = Db::open(dir, opts).with_context(|| format!("opening {}", dir.display()))?;
    let mut written = db
        .compact_head_fully()
        .with_context(|| format!("persisting the head of {}", dir.display()))?;
    written.extend(
        db.compact()
            .with_context(|| format!("compacting the blocks of {}", dir.display()))?,
    );
    for ulid in &written {
        println!("{ulid}");
    }
    db.close()?;
    Ok(())
}

fn digest(dir: &Path, open_only: bool) -> Result<()> {
    let start = Instant::now();
    let db = Db::open(dir, tool_options()).with_context(|| format!("opening {}", dir.display()))?;
    let open_s = start.elapsed().as_secs_f64();
    let head = db.head();
    if open_only {
        println!("open_s={open_s:.3} series={}", head.num_series());
        db.close()?;
        return Ok(());
    }
    let q = db.querier(i64::MIN, i64::MAX);
    let mut series = 0u64;
    let mut samples = 0u64;
    let mut sum = 0.0f64;
    for s in q.select(&[]).context("selecting series")? {
        series += 1;
        s.for_each_sample(|_, v| {
            samples += 1;
            sum += v;
        })
        .with_context(|| format!("reading {}", s.labels))?;
    }
    db.close()?;
    println!(
        "open_s={open_s:.3} series={series} samples={samples} sum={}",
        format_e_prec(sum, 12)
    );
    Ok(())
}

fn write_synth(
    dir: &Path,
    opts: DbOptions,
    series: u64,
    samples: u64,
    interval_ms: i64,
    start_ms: i64,
) -> Result<()> {
    let db = Db::open(dir, opts).with_context(|| format!("opening {}", dir.display()))?;
    let mut refs: Vec<Option<u64>> = vec![None; series as usize];
    let mut app = db.appender();
    let mut n = 0;
    let mut sum = 0.0;
    for j in 0..samples {
        for i in 0..series {
            let t = synth::timestamp(i, j, start_ms, interval_ms);
            let v = synth::value(i, j);
            match refs[i as usize] {
                Some(r) => app.append_ref(r, t, v)?,
                None => {
                    let ls = Labels::from_pairs(&synth::labels(i));
                    refs[i as usize] = Some(app.append(&ls, t, v)?);
                }
            }
            sum += v;
            n += 1;
            if n % 1000 == 0 {
                app.commit()?;
                app = db.appender();
            }
        }
        app.commit()?;
        app = db.appender();
    }
    drop(app);
    db.close()?;
    println!(
        "series={series} samples={} sum={}",
        series * samples,
        format_e_prec(sum, 12)
    );
    Ok(())
}
