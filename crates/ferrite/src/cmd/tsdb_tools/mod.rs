//! `ferrite tsdb list | analyze | dump`: promtool's block tools, with
//! promtool's output, so scripts and habits built on `promtool tsdb` work
//! on Ferrite's data directories (and Ferrite's on Prometheus').
//!
//! What they read, as promtool does:
//! - `list` and `analyze` read block directories only (never the head), and
//!   never write: no lock, no WAL replay. `list` shows every block directory
//!   whose `meta.json` reads, compacted-away parents included, sorted by min
//!   time; `analyze` picks the block whose ULID has the newest timestamp.
//! - `dump` reads blocks and the head through [`Db::querier`]. `Db::open` is
//!   the server's open: it takes the lock, may repair the WAL and starts a
//!   new segment. promtool opens read-only instead, and the tsdb crate has
//!   no read-only open yet, so `dump` opens a sandbox: a `tmp_dbro_sandbox*`
//!   directory inside DIR (where promtool puts its own) holding links to the
//!   blocks and a copy of `wal/`, removed afterwards. Nothing else in DIR is
//!   written, and a server running on DIR is not disturbed. The head comes
//!   from the WAL alone (`chunks_head/` only speeds a replay up), its
//!   out-of-order samples from a copy of `wbl/` (which holds them all); the
//!   copies cost a read and a write of the WAL and WBL. The sandbox is
//!   opened without retention, so blocks older than 15 days are dumped
//!   too, as promtool dumps them.
//!
//! Where lists tie, promtool's order is unspecified (Go's unstable sort of
//! map entries); Ferrite breaks ties by name, so its output is stable.

pub(crate) mod format;

use std::collections::{BTreeSet, HashMap};
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use ferrite_block::meta::BlockUlid;
use ferrite_model::Matcher;
use ferrite_tsdb::block::{Block, BlockError};
use ferrite_tsdb::{Db, QuerySeries};

use ferrite_chunkenc::Encoding;
use ferrite_model::gofloat::format_g;
use ferrite_model::units::format_base2_bytes;
use ferrite_server::selector::parse_selector;
use ferrite_tsdb::sample::{ChunkDecoder, SampleRef};
use format::{go_duration, go_utc_time, labels_string, tabwrite};

/// `tsdb list`: the blocks of DIR as promtool's table.
pub fn list(dir: &Path, human_readable: bool) -> Result<()> {
    let blocks = open_blocks(dir)?;
    let mut rows: Vec<Vec<String>> = vec![[
        "BLOCK ULID",
        "MIN TIME",
        "MAX TIME",
        "DURATION",
        "NUM SAMPLES",
        "NUM CHUNKS",
        "NUM SERIES",
        "SIZE",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()];
    for b in &blocks {
        let m = b.meta();
        let time = |t: i64| {
            if human_readable {
                go_utc_time(t)
            } else {
                t.to_string()
            }
        };
        let size = block_size(b.dir())?;
        rows.push(vec![
            m.ulid.to_string(),
            time(m.min_time),
            time(m.max_time),
            go_duration(m.max_time.wrapping_sub(m.min_time).wrapping_mul(1_000_000)),
            m.stats.num_samples.to_string(),
            m.stats.num_chunks.to_string(),
            m.stats.num_series.to_string(),
            if human_readable {
                format_base2_bytes(size)
            } else {
                size.to_string()
            },
        ]);
    }
    print_out(&tabwrite(&rows, 13, 2))
}

/// Opens every block directory of `dir` (a directory named by a ULID), as
/// Prometheus' read-only open does: a block whose `meta.json` does not read
/// is skipped with a warning; one that does not open is an error unless a
/// loaded block names it as a compaction parent. Sorted by min time.
fn open_blocks(dir: &Path) -> Result<Vec<Block>> {
    let mut names = Vec::new();
    for e in fs::read_dir(dir).with_context(|| format!("opening the db dir {}", dir.display()))? {
        let e = e.with_context(|| format!("reading {}", dir.display()))?;
        let name = e.file_name().to_string_lossy().into_owned();
        // Like Go's DirEntry.IsDir, a symlink is not a block directory.
        if e.file_type().is_ok_and(|t| t.is_dir()) && name.parse::<BlockUlid>().is_ok() {
            names.push(name);
        }
    }
    names.sort();
    let mut blocks = Vec::new();
    let mut corrupted: Vec<(BlockUlid, BlockError)> = Vec::new();
    for name in names {
        let path = dir.join(&name);
        match Block::open(&path) {
            Ok(b) => blocks.push(b),
            Err(e @ BlockError::Meta { .. }) => {
                eprintln!("warning: skipping block {}: {e}", path.display());
            }
            Err(e) => corrupted.push((name.parse()?, e)),
        }
    }
    let parents: BTreeSet<BlockUlid> = blocks
        .iter()
        .flat_map(|b| b.meta().compaction.parents.iter().map(|p| p.ulid))
        .collect();
    corrupted.retain(|(u, _)| !parents.contains(u));
    if !corrupted.is_empty() {
        let msgs: Vec<String> = corrupted
            .iter()
            .map(|(u, e)| format!("corrupted block {u}: {e}"))
            .collect();
        bail!("{}", msgs.join("; "));
    }
    blocks.sort_by_key(|b| b.meta().min_time);
    Ok(blocks)
}

/// A block's size as Prometheus counts it: `meta.json`, `index`,
/// `tombstones` and the numbered chunk segment files, nothing else.
fn block_size(dir: &Path) -> Result<i64> {
    let len = |p: PathBuf| -> Result<u64> {
        match fs::metadata(&p) {
            Ok(m) => Ok(m.len()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(0),
            Err(e) => Err(e).with_context(|| format!("reading {}", p.display())),
        }
    };
    let mut total = len(dir.join("meta.json"))? + len(dir.join("index"))?;
    total += len(dir.join("tombstones"))?;
    let chunks = dir.join("chunks");
    for e in fs::read_dir(&chunks).with_context(|| format!("reading {}", chunks.display()))? {
        let e = e.with_context(|| format!("reading {}", chunks.display()))?;
        let name = e.file_name();
        let name = name.to_string_lossy();
        if !name.is_empty()
            && name.bytes().all(|b| b.is_ascii_digit())
            && name.parse::<u64>().is_ok()
        {
            total += len(e.path())?;
        }
    }
    Ok(i64::try_from(total).unwrap_or(i64::MAX))
}

/// The ID of the newest block as promtool picks it: the directory entry
/// named by the ULID with the latest timestamp (the first in name order on
/// a tie).
fn last_block_id(dir: &Path) -> Result<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .with_context(|| format!("opening the db dir {}", dir.display()))?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut best: Option<(u64, String)> = None;
    for name in names {
        let Ok(u) = name.parse::<BlockUlid>() else {
            continue;
        };
        let t = u.timestamp_ms();
        if t > best.as_ref().map_or(0, |b| b.0) {
            best = Some((t, name));
        }
    }
    match best {
        Some((_, name)) => Ok(name),
        None => bail!("no blocks found in {}", dir.display()),
    }
}

/// One line of promtool's ranked lists.
struct Ranked {
    key: String,
    value: u64,
}

/// Sorts by value, largest first (ties by key), and prints the first `limit`.
fn print_ranked(out: &mut String, title: &str, mut items: Vec<Ranked>, limit: usize) {
    use std::fmt::Write as _;
    out.push('\n');
    out.push_str(title);
    out.push('\n');
    items.sort_by(|a, b| b.value.cmp(&a.value).then_with(|| a.key.cmp(&b.key)));
    for r in items.iter().take(limit) {
        let _ = writeln!(out, "{} {}", r.value, r.key);
    }
}

/// `tsdb analyze`: promtool's churn and cardinality report of one block.
pub fn analyze(
    dir: &Path,
    block_id: Option<&str>,
    limit: usize,
    extended: bool,
    matchers: &str,
) -> Result<()> {
    use std::fmt::Write as _;
    let selectors = if matchers.is_empty() {
        None
    } else {
        Some(parse_selector(matchers)?)
    };
    let sel: &[Matcher] = selectors.as_deref().unwrap_or(&[]);
    let id = match block_id {
        Some(id) => id.to_owned(),
        None => last_block_id(dir)?,
    };
    let bdir = dir.join(&id);
    if !bdir.exists() {
        bail!("invalid block ID {id}");
    }
    let block = Block::open(&bdir).with_context(|| format!("opening block {}", bdir.display()))?;
    let meta = block.meta();
    let span = meta.max_time.wrapping_sub(meta.min_time);

    let mut out = String::new();
    let _ = writeln!(out, "Block ID: {}", meta.ulid);
    let _ = writeln!(
        out,
        "Duration: {}",
        go_duration(span.wrapping_mul(1_000_000))
    );
    let _ = writeln!(out, "Total Series: {}", meta.stats.num_series);
    if selectors.is_some() {
        let _ = writeln!(out, "Matcher: {matchers}");
    }
    let names = block.label_names(sel)?;
    let _ = writeln!(out, "Label names: {}", names.len());
    let refs = block.postings(sel)?;
    if selectors.is_some() {
        let _ = writeln!(out, "Matched series: {}", refs.len());
    }

    // One pass over the series: how much of the block's range each label
    // (pair) leaves uncovered, how often each pair occurs, and (with
    // matchers) each name's values among the matched series.
    let mut names_uncovered: HashMap<String, u64> = HashMap::new();
    let mut pairs_uncovered: HashMap<String, u64> = HashMap::new();
    let mut pairs_count: HashMap<String, u64> = HashMap::new();
    let mut values: HashMap<String, BTreeSet<String>> = HashMap::new();
    let mut entries = 0u64;
    let mut chunks = Vec::new();
    for &r in &refs {
        let ls = block.series(r, &mut chunks)?;
        let covered = match (chunks.first(), chunks.last()) {
            (Some(first), Some(last)) => last.max_time.wrapping_sub(first.min_time) as u64,
            _ => 0,
        };
        let uncovered = (span as u64).wrapping_sub(covered);
        for l in ls.iter() {
            let key = format!("{}={}", l.name, l.value);
            let n = names_uncovered.entry(l.name.to_string()).or_default();
            *n = n.wrapping_add(uncovered);
            let p = pairs_uncovered.entry(key.clone()).or_default();
            *p = p.wrapping_add(uncovered);
            *pairs_count.entry(key).or_default() += 1;
            if selectors.is_some() {
                values
                    .entry(l.name.to_string())
                    .or_default()
                    .insert(l.value.to_string());
            }
            entries += 1;
        }
    }
    let _ = writeln!(
        out,
        "Postings (unique label pairs): {}",
        pairs_uncovered.len()
    );
    let _ = writeln!(out, "Postings entries (total label pairs): {entries}");

    let churn = |m: HashMap<String, u64>| -> Vec<Ranked> {
        m.into_iter()
            .map(|(key, v)| Ranked {
                key,
                value: (v as f64 / span as f64) as u64,
            })
            .collect()
    };
    print_ranked(
        &mut out,
        "Label pairs most involved in churning:",
        churn(pairs_uncovered),
        limit,
    );
    print_ranked(
        &mut out,
        "Label names most involved in churning:",
        churn(names_uncovered),
        limit,
    );
    let common = pairs_count
        .into_iter()
        .map(|(key, value)| Ranked { key, value })
        .collect();
    print_ranked(&mut out, "Most common label pairs:", common, limit);

    // Each name's values: from the index, or among the matched series.
    let values_of = |name: &str| -> Result<Vec<String>> {
        if selectors.is_some() {
            Ok(values
                .get(name)
                .map(|s| s.iter().cloned().collect())
                .unwrap_or_default())
        } else {
            Ok(block.label_values(name, &[])?)
        }
    };
    let mut lengths = Vec::new();
    let mut cardinality = Vec::new();
    for n in &names {
        let vs = values_of(n)?;
        lengths.push(Ranked {
            key: n.clone(),
            value: vs.iter().map(|v| v.len() as u64).sum(),
        });
        cardinality.push(Ranked {
            key: n.clone(),
            value: vs.len() as u64,
        });
    }
    print_ranked(
        &mut out,
        "Label names with highest cumulative label value length:",
        lengths,
        limit,
    );
    print_ranked(&mut out, "Highest cardinality labels:", cardinality, limit);

    let mut metrics = Vec::new();
    for name in values_of("__name__")? {
        let series = block.postings(&[Matcher::equal("__name__", &name)])?;
        let count = if selectors.is_some() {
            series
                .iter()
                .filter(|r| refs.binary_search(r).is_ok())
                .count()
        } else {
            series.len()
        };
        metrics.push(Ranked {
            key: name,
            value: count as u64,
        });
    }
    print_ranked(
        &mut out,
        "Highest cardinality metric names:",
        metrics,
        limit,
    );

    if extended {
        compaction_analysis(&block, &refs, &mut out)?;
    }
    print_out(&out)
}

/// `analyze --extended`: promtool's compaction analysis, histograms of
/// samples and bytes per float chunk and of samples, bytes and buckets per
/// native histogram chunk.
fn compaction_analysis(block: &Block, refs: &[u64], out: &mut String) -> Result<()> {
    let stats = ChunkStats::of(block, refs)?;
    let ChunkStats {
        mut float_samples,
        mut float_bytes,
        mut histogram_samples,
        mut histogram_bytes,
        mut histogram_buckets,
        total,
    } = stats;
    out.push_str("\nCompaction analysis:\n\n");
    histogram(out, "samples per float chunk", &mut float_samples, total);
    histogram(out, "bytes per float chunk", &mut float_bytes, total);
    histogram(
        out,
        "samples per histogram chunk",
        &mut histogram_samples,
        total,
    );
    histogram(
        out,
        "bytes per histogram chunk",
        &mut histogram_bytes,
        total,
    );
    histogram(
        out,
        "buckets per histogram chunk",
        &mut histogram_buckets,
        total,
    );
    Ok(())
}

/// What promtool's compaction analysis gathers per chunk of the selected
/// series: float chunks (XOR, XOR2) by their samples and bytes, native
/// histogram chunks (integer and float, with or without start timestamps)
/// by their samples, bytes and buckets (the positive and negative buckets
/// of every sample, as decoded, added up). `total` counts every chunk,
/// those of other encodings too.
#[derive(Debug, Default, PartialEq)]
struct ChunkStats {
    float_samples: Vec<i64>,
    float_bytes: Vec<i64>,
    histogram_samples: Vec<i64>,
    histogram_bytes: Vec<i64>,
    histogram_buckets: Vec<i64>,
    total: i64,
}

impl ChunkStats {
    fn of(block: &Block, refs: &[u64]) -> Result<ChunkStats> {
        let mut stats = ChunkStats::default();
        let mut decoder = ChunkDecoder::new();
        let mut chunks = Vec::new();
        for &r in refs {
            let ls = block.series(r, &mut chunks)?;
            for c in &chunks {
                let (encoding, data) = block.chunk_of_any_encoding(c.chunk_ref)?;
                stats.total += 1;
                match Encoding::valid(encoding) {
                    Some(Encoding::Xor | Encoding::Xor2) => {
                        // Both start with their sample count (big-endian u16).
                        let n = match data {
                            [a, b, ..] => i64::from(u16::from_be_bytes([*a, *b])),
                            _ => 0,
                        };
                        stats.float_samples.push(n);
                        stats.float_bytes.push(data.len() as i64);
                    }
                    Some(
                        Encoding::Histogram
                        | Encoding::HistogramSt
                        | Encoding::FloatHistogram
                        | Encoding::FloatHistogramSt,
                    ) => {
                        let (samples, buckets) =
                            histogram_chunk_counts(&mut decoder, encoding, data)
                                .with_context(|| format!("series {}", labels_string(&ls)))?;
                        stats.histogram_samples.push(samples);
                        stats.histogram_bytes.push(data.len() as i64);
                        stats.histogram_buckets.push(buckets);
                    }
                    Some(Encoding::None) | None => {}
                }
            }
        }
        Ok(stats)
    }
}

/// The samples of a native histogram chunk and their positive and negative
/// buckets added up.
fn histogram_chunk_counts(
    decoder: &mut ChunkDecoder,
    encoding: u8,
    data: &[u8],
) -> Result<(i64, i64)> {
    let (mut samples, mut buckets) = (0i64, 0i64);
    decoder.for_each(encoding, data, |_, v| {
        samples += 1;
        buckets += match v {
            SampleRef::Histogram(h) => h.positive_buckets.len() + h.negative_buckets.len(),
            SampleRef::FloatHistogram(h) => h.positive_buckets.len() + h.negative_buckets.len(),
            SampleRef::Float(_) => 0,
        } as i64;
        true
    })?;
    Ok((samples, buckets))
}

/// promtool's text histogram: min/avg/max, then buckets of a power-of-ten
/// width, each with its count and a bar of one `#` per percent of `total`.
fn histogram(out: &mut String, what: &str, data: &mut [i64], total: i64) {
    use std::fmt::Write as _;
    let (Some(&lo), Some(&hi)) = (data.iter().min(), data.iter().max()) else {
        let _ = write!(out, "{what}: N/A\n\n");
        return;
    };
    data.sort_unstable();
    let spread = (hi - lo) / 10;
    let mut step = 10i64;
    while step < spread && step <= 10_000 {
        step *= 10;
    }
    let start = lo - lo % step;
    let end = hi - hi % step + step;
    let mut buckets = vec![0i64; ((end - start) / step + 1) as usize];
    for &c in data.iter() {
        buckets[((c - start) / step) as usize] += 1;
    }
    let max_count = buckets.iter().copied().max().unwrap_or(0);
    let sum: i64 = data.iter().sum();
    let avg = sum / data.len() as i64;
    let _ = writeln!(out, "{what} (min/avg/max): {lo}/{avg}/{hi}");
    let lw = end.to_string().len();
    let rw = (end + step).to_string().len();
    let cw = max_count.to_string().len();
    for (i, &count) in buckets.iter().enumerate() {
        let i = i as i64;
        let pct = if total > 0 { 100 * count / total } else { 0 };
        let _ = writeln!(
            out,
            "[{:>lw$}, {:>rw$}]: {count:>cw$} {}",
            i * step + start + 1,
            (i + 1) * step + start,
            "#".repeat(pct as usize)
        );
    }
    out.push('\n');
}

/// `tsdb dump`: every sample of the series matching any of `selectors` in
/// [min_time, max_time], blocks and head, one `{labels} value timestamp`
/// line each; series sorted by labels, samples by time.
pub fn dump(dir: &Path, selectors: &[String], min_time: i64, max_time: i64) -> Result<()> {
    let sets: Vec<Vec<Matcher>> = if selectors.is_empty() {
        vec![Vec::new()]
    } else {
        selectors
            .iter()
            .map(|s| parse_selector(s))
            .collect::<Result<_>>()?
    };
    let sandbox = Sandbox::open(dir)?;
    let result = dump_db(&sandbox.db, &sets, min_time, max_time);
    sandbox.close()?;
    match result {
        // A closed pipe (`| head`) is the reader's choice, not an error.
        Err(e) if is_broken_pipe(&e) => Ok(()),
        r => r,
    }
}

fn dump_db(db: &Db, sets: &[Vec<Matcher>], min_time: i64, max_time: i64) -> Result<()> {
    let q = db.querier(min_time, max_time);
    let mut series: Vec<QuerySeries> = Vec::new();
    for set in sets {
        series.extend(q.select(set).context("selecting series")?);
    }
    if sets.len() > 1 {
        // The union: each series once (the same series from another
        // selector has the same chunks).
        series.sort_by(|a, b| a.labels.cmp(&b.labels));
        series.dedup_by(|a, b| a.labels == b.labels);
    }
    let stdout = io::stdout();
    let mut w = io::BufWriter::with_capacity(1 << 16, stdout.lock());
    for s in &series {
        let ls = labels_string(&s.labels);
        let mut werr: Option<io::Error> = None;
        s.for_each_value(|t, v| {
            if werr.is_some() {
                return;
            }
            // promtool: `%g` floats, histograms as their `String()`.
            let res = match v {
                SampleRef::Float(v) => writeln!(w, "{ls} {} {t}", format_g(v)),
                SampleRef::Histogram(h) => writeln!(w, "{ls} {} {t}", h.go_string()),
                SampleRef::FloatHistogram(h) => writeln!(w, "{ls} {} {t}", h.go_string()),
            };
            if let Err(e) = res {
                werr = Some(e);
            }
        })
        .with_context(|| format!("reading {ls}"))?;
        if let Some(e) = werr {
            return Err(e).context("writing to stdout");
        }
    }
    w.flush().context("writing to stdout")?;
    Ok(())
}

/// A read-only view of a data directory through [`Db`]: the blocks linked
/// and the WAL copied into a sandbox directory inside DIR, so the open's
/// lock, WAL repair and new segment touch only the sandbox.
struct Sandbox {
    db: Db,
    dir: tempfile::TempDir,
}

impl Sandbox {
    fn open(dir: &Path) -> Result<Sandbox> {
        let md =
            fs::metadata(dir).with_context(|| format!("opening the db dir {}", dir.display()))?;
        if !md.is_dir() {
            bail!("opening the db dir {}: not a directory", dir.display());
        }
        let abs = fs::canonicalize(dir).with_context(|| format!("resolving {}", dir.display()))?;
        let sandbox = tempfile::Builder::new()
            .prefix("tmp_dbro_sandbox")
            .tempdir_in(&abs)
            .with_context(|| format!("setting up sandbox dir in {}", abs.display()))?;
        for e in fs::read_dir(&abs).with_context(|| format!("reading {}", abs.display()))? {
            let e = e.with_context(|| format!("reading {}", abs.display()))?;
            let name = e.file_name();
            let is_block = e.file_type().is_ok_and(|t| t.is_dir())
                && name.to_string_lossy().parse::<BlockUlid>().is_ok();
            if is_block {
                let link = sandbox.path().join(&name);
                symlink_dir(&e.path(), &link)
                    .with_context(|| format!("linking {} into the sandbox", e.path().display()))?;
            }
        }
        // Copied: the open writes to both (a new segment, a repair).
        for name in ["wal", "wbl"] {
            let src = abs.join(name);
            if src.is_dir() {
                copy_dir(&src, &sandbox.path().join(name))
                    .with_context(|| format!("copying {} into the sandbox", src.display()))?;
            }
        }
        let db = Db::open(sandbox.path(), super::tsdb::tool_options())
            .with_context(|| format!("opening {}", dir.display()))?;
        Ok(Sandbox { db, dir: sandbox })
    }

    fn close(self) -> Result<()> {
        let Sandbox { db, dir } = self;
        let closed = db.close().context("closing the sandbox db");
        // Removing the sandbox removes the links, never what they point at.
        let removed = dir.close().context("removing the sandbox dir");
        closed.and(removed)
    }
}

#[cfg(unix)]
fn symlink_dir(target: &Path, link: &Path) -> io::Result<()> {
    std::os::unix::fs::symlink(target, link)
}

#[cfg(windows)]
fn symlink_dir(target: &Path, link: &Path) -> io::Result<()> {
    std::os::windows::fs::symlink_dir(target, link)
}

/// Copies the regular files and directories under `src` into `dst`.
fn copy_dir(src: &Path, dst: &Path) -> io::Result<()> {
    fs::create_dir_all(dst)?;
    for e in fs::read_dir(src)? {
        let e = e?;
        let t = e.file_type()?;
        let to = dst.join(e.file_name());
        if t.is_dir() {
            copy_dir(&e.path(), &to)?;
        } else if t.is_file() {
            fs::copy(e.path(), &to)?;
        }
    }
    Ok(())
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<io::Error>()
            .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
    })
}

/// Writes to stdout; a closed pipe ends the output quietly.
fn print_out(s: &str) -> Result<()> {
    let mut w = io::stdout().lock();
    match w.write_all(s.as_bytes()).and_then(|()| w.flush()) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        r => r.context("writing to stdout"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrite_model::Labels;

    /// `dump` reads every block, even those a server's default retention
    /// (15 days) would delete, and deletes none.
    #[test]
    fn sandbox_keeps_blocks_beyond_retention() {
        const DAY: i64 = 86_400_000;
        let tmp = tempfile::tempdir().unwrap();
        let db = Db::open(tmp.path(), crate::cmd::tsdb::tool_options()).unwrap();
        let l = Labels::from_pairs(&[("__name__", "m")]);
        for d in 0..20 {
            let mut app = db.appender();
            app.append(&l, d * DAY, d as f64).unwrap();
            app.commit().unwrap();
            db.compact_head_fully().unwrap();
        }
        let blocks = db.blocks().len();
        assert!(blocks >= 20, "{blocks} blocks");
        db.close().unwrap();

        let sandbox = Sandbox::open(tmp.path()).unwrap();
        assert_eq!(sandbox.db.blocks().len(), blocks);
        let q = sandbox.db.querier(i64::MIN, i64::MAX);
        let mut first = None;
        for s in q.select(&[]).unwrap() {
            s.for_each_sample(|t, _| {
                first.get_or_insert(t);
            })
            .unwrap();
        }
        assert_eq!(first, Some(0));
        sandbox.close().unwrap();
        let dirs = fs::read_dir(tmp.path())
            .unwrap()
            .filter(|e| e.as_ref().unwrap().file_name().len() == 26)
            .count();
        assert_eq!(dirs, blocks);
    }

    fn hist(data: &[i64], total: i64) -> String {
        let mut out = String::new();
        histogram(
            &mut out,
            "samples per float chunk",
            &mut data.to_vec(),
            total,
        );
        out
    }

    #[test]
    fn histograms() {
        assert_eq!(hist(&[], 0), "samples per float chunk: N/A\n\n");
        // Printed by promtool's displayHistogram for the same data.
        assert_eq!(
            hist(&[120, 120, 120, 40], 4),
            "samples per float chunk (min/avg/max): 40/100/120\n\
             [ 41,  50]: 1 #########################\n\
             [ 51,  60]: 0 \n\
             [ 61,  70]: 0 \n\
             [ 71,  80]: 0 \n\
             [ 81,  90]: 0 \n\
             [ 91, 100]: 0 \n\
             [101, 110]: 0 \n\
             [111, 120]: 0 \n\
             [121, 130]: 3 ###########################################################################\n\
             [131, 140]: 0 \n\
             \n"
        );
        assert_eq!(
            hist(&[5, 5, 5], 3),
            "samples per float chunk (min/avg/max): 5/5/5\n\
             [ 1, 10]: 3 ####################################################################################################\n\
             [11, 20]: 0 \n\
             \n"
        );
    }

    /// The extended analysis of a block holding floats, integer and float
    /// native histograms: every chunk counted by kind, histogram chunks by
    /// their samples, bytes and buckets.
    #[test]
    fn compaction_analysis_counts_histogram_chunks() {
        use ferrite_model::{Histogram, Span};
        let tmp = tempfile::tempdir().unwrap();
        let db = Db::open(tmp.path(), crate::cmd::tsdb::tool_options()).unwrap();
        let floats = Labels::from_pairs(&[("__name__", "f")]);
        let ints = Labels::from_pairs(&[("__name__", "h")]);
        let float_hists = Labels::from_pairs(&[("__name__", "fh")]);
        // Four buckets (three positive, one negative) a sample.
        let h = |i: u64| Histogram {
            schema: 1,
            zero_threshold: 0.001,
            count: 4 * i,
            sum: i as f64,
            positive_spans: vec![Span {
                offset: 0,
                length: 3,
            }],
            positive_buckets: vec![i as i64, 0, 0],
            negative_spans: vec![Span {
                offset: 2,
                length: 1,
            }],
            negative_buckets: vec![i as i64],
            ..Histogram::default()
        };
        for i in 0..150u64 {
            let t = i as i64 * 15_000;
            let mut app = db.appender();
            app.append(&floats, t, i as f64).unwrap();
            if i < 130 {
                app.append_histogram(&ints, t, h(i + 1)).unwrap();
            }
            if i < 50 {
                app.append_float_histogram(&float_hists, t, h(i + 1).to_float())
                    .unwrap();
            }
            app.commit().unwrap();
        }
        db.compact_head_fully().unwrap();
        let block = db.blocks().into_iter().next().unwrap();
        let refs = block.postings(&[]).unwrap();
        let stats = ChunkStats::of(&block, &refs).unwrap();
        assert_eq!(stats.float_samples.iter().sum::<i64>(), 150);
        assert_eq!(stats.histogram_samples.iter().sum::<i64>(), 130 + 50);
        assert_eq!(stats.histogram_buckets.iter().sum::<i64>(), 4 * 180);
        for (samples, buckets) in stats.histogram_samples.iter().zip(&stats.histogram_buckets) {
            assert_eq!(*buckets, 4 * samples);
        }
        assert_eq!(
            stats.total as usize,
            stats.float_samples.len() + stats.histogram_samples.len()
        );
        assert!(stats.histogram_bytes.iter().all(|&b| b > 0));

        let mut out = String::new();
        compaction_analysis(&block, &refs, &mut out).unwrap();
        assert!(!out.contains("N/A"), "{out}");
        let min_avg_max = |what: &str| {
            out.lines()
                .find_map(|l| l.strip_prefix(&format!("{what} (min/avg/max): ")))
                .map(str::to_string)
        };
        let (n, total) = (stats.histogram_samples.len() as i64, 180i64);
        let avg = total / n;
        assert!(
            min_avg_max("samples per histogram chunk")
                .is_some_and(|s| s.contains(&format!("/{avg}/"))),
            "{out}"
        );
        assert!(
            min_avg_max("buckets per histogram chunk").is_some(),
            "{out}"
        );
        db.close().unwrap();
    }

    #[test]
    fn ranked_ties_by_key() {
        let mut out = String::new();
        let items = vec![
            Ranked {
                key: "b".into(),
                value: 2,
            },
            Ranked {
                key: "c".into(),
                value: 5,
            },
            Ranked {
                key: "a".into(),
                value: 2,
            },
        ];
        print_ranked(&mut out, "T:", items, 2);
        assert_eq!(out, "\nT:\n5 c\n2 a\n");
    }
}
