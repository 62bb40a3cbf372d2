//! `ferrite tsdb create-blocks-from openmetrics FILE OUTDIR`: backfilling
//! blocks from an OpenMetrics file, as promtool does.
//!
//! The file is read twice, as promtool reads it: once to check every line
//! and find the time range (a bad line stops everything before anything is
//! written), then once per block range, appending that range's samples to a
//! [`BlockBuilder`]. Blocks are written into a staging directory inside
//! OUTDIR and moved into place only when all of them are done, so a failure
//! half way leaves OUTDIR as it was.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use ferrite_block::meta::BlockUlid;
use ferrite_model::Labels;
use ferrite_textparse::backfill::{time_range, to_sample};
use ferrite_textparse::{Entry, Parser};
use ferrite_tsdb::backfill::BlockBuilder;
use indicatif::{ProgressBar, ProgressStyle};

/// Creates blocks in `out_dir` from the OpenMetrics file `input`; returns
/// the new block directories.
pub fn create_blocks_from_openmetrics(
    input: &Path,
    out_dir: &Path,
    block_duration_ms: i64,
    quiet: bool,
) -> Result<Vec<PathBuf>> {
    if block_duration_ms <= 0 {
        bail!("block duration must be positive");
    }
    let data = fs::read(input).with_context(|| format!("reading {}", input.display()))?;
    let Some((mint, maxt)) = time_range(&data)
        .map_err(|e| anyhow::anyhow!("{}: line {}: {}", input.display(), e.line, e.kind))?
    else {
        if !quiet {
            eprintln!("no samples in {}", input.display());
        }
        return Ok(Vec::new());
    };
    fs::create_dir_all(out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
    let staging = out_dir.join(format!(".ferrite-backfill-{}", BlockUlid::generate()));
    let result = write_all(&data, input, &staging, mint, maxt, block_duration_ms, quiet);
    let moved = result.and_then(|blocks| {
        let mut out = Vec::new();
        for b in blocks {
            let name = b.file_name().context("block dir name")?.to_owned();
            let dest = out_dir.join(&name);
            fs::rename(&b, &dest).with_context(|| format!("moving block to {}", dest.display()))?;
            out.push(dest);
        }
        Ok(out)
    });
    let _ = fs::remove_dir_all(&staging);
    moved
}

fn write_all(
    data: &[u8],
    input: &Path,
    staging: &Path,
    mint: i64,
    maxt: i64,
    d: i64,
    quiet: bool,
) -> Result<Vec<PathBuf>> {
    fs::create_dir_all(staging).with_context(|| format!("creating {}", staging.display()))?;
    let first = mint.div_euclid(d) * d;
    let windows = ((maxt - first) / d + 1) as u64;
    let bar = if quiet {
        ProgressBar::hidden()
    } else {
        let b = ProgressBar::new(windows);
        b.set_style(
            ProgressStyle::with_template("{bar:40} {pos}/{len} block ranges {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        b
    };
    let mut blocks = Vec::new();
    let mut t = first;
    while t <= maxt {
        let upper = t.saturating_add(d);
        let mut builder = BlockBuilder::new();
        for entry in Parser::new(data) {
            let entry = entry
                .map_err(|e| anyhow::anyhow!("{}: line {}: {}", input.display(), e.line, e.kind))?;
            let Entry::Series(series) = entry else {
                continue;
            };
            let sample = to_sample(series)
                .map_err(|e| anyhow::anyhow!("{}: line {}: {}", input.display(), e.line, e.kind))?;
            if sample.timestamp < t || sample.timestamp >= upper {
                continue;
            }
            let labels = Labels::from_sorted(sample.labels);
            builder
                .add(&labels, sample.timestamp, sample.value)
                .map_err(|e| {
                    anyhow::anyhow!("{}: line {}: add sample: {e}", input.display(), sample.line)
                })?;
        }
        if let Some(meta) = builder.write(staging).context("writing block")? {
            blocks.push(staging.join(meta.ulid.to_string()));
            bar.set_message(format!(
                "{} samples in {}",
                meta.stats.num_samples, meta.ulid
            ));
        }
        bar.inc(1);
        t = upper;
    }
    bar.finish_and_clear();
    Ok(blocks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_lines_write_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("in.om");
        let out = tmp.path().join("out");
        fs::write(&file, "a 1 1000\nb{x=\"1\"} 2\n# EOF\n").unwrap();
        let err = create_blocks_from_openmetrics(&file, &out, 7_200_000, true).unwrap_err();
        assert!(format!("{err:#}").contains("line 2"), "{err:#}");
        assert!(!out.exists() || fs::read_dir(&out).unwrap().next().is_none());

        // An out-of-order sample is found in the second pass: still nothing.
        fs::write(&file, "a 1 1000\na 2 999\n# EOF\n").unwrap();
        let err = create_blocks_from_openmetrics(&file, &out, 7_200_000, true).unwrap_err();
        assert!(
            format!("{err:#}").contains("line 2: add sample: out of order"),
            "{err:#}"
        );
        assert!(!out.exists() || fs::read_dir(&out).unwrap().next().is_none());
    }

    #[test]
    fn one_block_per_range() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("in.om");
        let out = tmp.path().join("out");
        let mut text = String::from("# TYPE m gauge\n");
        for j in 0..600 {
            for i in 0..3 {
                text.push_str(&format!(
                    "m{{i=\"{i}\"}} {} {}\n",
                    i * 1000 + j,
                    1_700_000_000 + j * 30
                ));
            }
        }
        text.push_str("# EOF\n");
        fs::write(&file, text).unwrap();
        let blocks = create_blocks_from_openmetrics(&file, &out, 7_200_000, true).unwrap();
        // 5 hours of data from 22:13 UTC: ranges 22-24, 0-2, 2-4.
        assert_eq!(blocks.len(), 3);
        let mut samples = 0;
        for b in &blocks {
            let block = ferrite_tsdb::block::Block::open(b).unwrap();
            samples += block.meta().stats.num_samples;
            assert_eq!(block.meta().stats.num_series, 3);
        }
        assert_eq!(samples, 1800);
    }
}
