//! Which blocks to compact next: the decisions of Prometheus v3.9.1's
//! leveled compactor (`tsdb/compact.go`), the block ranges the server
//! derives from its flags (`cmd/prometheus/main.go`, `tsdb/db.go`), and when
//! the head is cut into a block. Pure functions over block metas; the only
//! I/O here is [`read_plan_blocks`], which lists a data directory the way
//! Prometheus' `Plan(dir)` does.
//!
//! # Block ranges
//!
//! The ranges are `min, min*3, min*9, …` (10 steps), cut before the first
//! one above the maximum block duration. The server picks that maximum as
//! `--storage.tsdb.max-block-duration` when given, else 31 days, or a tenth
//! of the time retention when that is smaller; and never below the minimum
//! block duration (default 2 h). With the default retention of 15 days the
//! ranges are 2 h, 6 h, 18 h. A retention under 60 h leaves only 2 h, so
//! blocks are then never merged by level, only for overlaps and tombstones.
//!
//! # The plan
//!
//! Blocks are taken in min-time order and the first rule that yields
//! something wins:
//!
//! 1. **Overlaps** (vertical compaction, always on in the server): the first
//!    run of blocks whose min time falls before the largest max time seen so
//!    far, together with the block just before the run. The newest block is
//!    included here — overlaps are merged right away.
//! 2. **Levels**: the newest block (largest min time) is set aside, so a
//!    fresh block from the head stays as it is for one block range (people
//!    back up new blocks). For each range after the first, in order, the
//!    remaining blocks are cut into groups: a group starts at a block and
//!    runs while blocks end inside the aligned window of that size holding
//!    the starting block's min time; a block that does not end inside its
//!    own window is skipped. A group of two or more is taken when it
//!    fills the window exactly (first min time to last max time, gaps
//!    allowed) or ends no later than the min time of the newest block still
//!    considered (so another block follows it), unless one of its blocks is
//!    marked `compaction.failed`.
//! 3. **Tombstones**: walking from the newest of the remaining blocks back,
//!    a block at least as long as the middle range is rewritten alone when
//!    more than 5 % of its series (`tombstones / (series + 1)`) carry
//!    tombstones; the first shorter block stops the walk, and is rewritten
//!    alone only if it has tombstones for at least as many series as it has.
//!
//! Prometheus' `Plan` ignores `compaction.deletable` and parents (retention
//! deletes those on the next reload), and checks `failed` only in rule 2.
//!
//! # Deviations
//!
//! Prometheus sorts with Go's unstable `slices.SortFunc`. For up to 12
//! blocks that is an insertion sort, hence stable, and we match it exactly
//! (ties keep the directory-name order). With more blocks and equal min
//! times the order among the tied blocks may differ; tied blocks with data
//! overlap, so the plan is then the same overlap group, possibly listed in
//! another order (degenerate blocks with `maxTime <= minTime` aside). A zero
//! range is an error here, where Go would divide by zero.
//!
//! All arithmetic on times wraps like Go's int64, so even absurd metas give
//! Prometheus' answer rather than a panic.

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};

use ferrite_block::meta::{read_meta, BlockMeta, BlockUlid, MetaError};

/// Prometheus' default minimum block duration and head chunk range: 2 h.
pub const DEFAULT_BLOCK_DURATION_MS: i64 = 2 * HOUR_MS;
/// The server's time retention when neither time nor size is set: 15 d.
pub const DEFAULT_RETENTION_MS: i64 = 15 * DAY_MS;
/// The largest block duration the server picks by itself: 31 d.
pub const MAX_BLOCK_DURATION_CAP_MS: i64 = 31 * DAY_MS;
/// A time retention that overflowed when parsed becomes 100 years (of 365 d).
pub const OVERFLOW_RETENTION_MS: i64 = 100 * 365 * DAY_MS;
/// How many ranges the server computes before cutting at the maximum.
pub const SERVER_RANGE_STEPS: usize = 10;
/// The factor between successive ranges.
pub const SERVER_RANGE_FACTOR: i64 = 3;

const HOUR_MS: i64 = 3600 * 1000;
const DAY_MS: i64 = 24 * HOUR_MS;

/// The fraction of series with tombstones above which a big block is
/// rewritten.
const TOMBSTONE_REWRITE_RATIO: f64 = 0.05;

/// Errors of planning.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("at least one block range must be given")]
    NoRanges,
    #[error("block range 0 at position {0}: ranges must not be zero")]
    ZeroRange(usize),
    #[error("listing block dirs in {path}: {source}")]
    ListDir {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("block {dir}: {source}")]
    Meta {
        dir: PathBuf,
        #[source]
        source: MetaError,
    },
}

/// `steps` ranges starting at `min_size`, each `step_size` times the one
/// before (Prometheus' `tsdb.ExponentialBlockRanges`; products wrap like
/// Go's int64).
pub fn exponential_block_ranges(min_size: i64, steps: usize, step_size: i64) -> Vec<i64> {
    std::iter::successors(Some(min_size), |r| Some(r.wrapping_mul(step_size)))
        .take(steps)
        .collect()
}

/// The time retention the server runs with, from the configured time and
/// size limits (0 = unset): 15 d when neither is set, 100 y when the time
/// overflowed (negative).
pub fn server_retention_ms(retention_ms: i64, max_bytes: i64) -> i64 {
    if retention_ms == 0 && max_bytes == 0 {
        DEFAULT_RETENTION_MS
    } else if retention_ms < 0 {
        OVERFLOW_RETENTION_MS
    } else {
        retention_ms
    }
}

/// The maximum block duration the server passes to the TSDB:
/// `--storage.tsdb.max-block-duration` when set (non-zero), else 31 d, or
/// a tenth of the (effective, see [`server_retention_ms`]) time retention
/// when that is smaller. A retention of 0 (size-only) keeps 31 d.
pub fn server_max_block_duration_ms(max_block_flag_ms: i64, retention_ms: i64) -> i64 {
    if max_block_flag_ms != 0 {
        return max_block_flag_ms;
    }
    // The server divides the nanosecond duration; for whole milliseconds
    // that truncates exactly like this.
    let tenth = retention_ms / 10;
    if retention_ms != 0 && tenth < MAX_BLOCK_DURATION_CAP_MS {
        tenth
    } else {
        MAX_BLOCK_DURATION_CAP_MS
    }
}

/// The compaction ranges the TSDB uses for a minimum and maximum block
/// duration (`tsdb.Open`): a minimum <= 0 means 2 h, the maximum is raised
/// to the minimum, and the 10 exponential ranges (factor 3) stop before the
/// first one above the maximum. The first range is the head chunk range.
pub fn block_ranges(min_block_ms: i64, max_block_ms: i64) -> Vec<i64> {
    let min = if min_block_ms <= 0 {
        DEFAULT_BLOCK_DURATION_MS
    } else {
        min_block_ms
    };
    let max = max_block_ms.max(min);
    exponential_block_ranges(min, SERVER_RANGE_STEPS, SERVER_RANGE_FACTOR)
        .into_iter()
        .take_while(|&r| r <= max)
        .collect()
}

/// The ranges of a Prometheus server started with these flags (each 0 when
/// not given): `--storage.tsdb.min-block-duration`,
/// `--storage.tsdb.max-block-duration`, the time retention and the size
/// retention in bytes.
pub fn server_block_ranges(
    min_block_ms: i64,
    max_block_flag_ms: i64,
    retention_ms: i64,
    max_bytes: i64,
) -> Vec<i64> {
    let retention = server_retention_ms(retention_ms, max_bytes);
    block_ranges(
        min_block_ms,
        server_max_block_duration_ms(max_block_flag_ms, retention),
    )
}

/// Whether the head holds enough to cut a block (`Head.compactable`): it has
/// samples (`head_min != i64::MAX`) and spans more than 1.5 chunk ranges
/// (`max - min > chunk_range / 2 * 3`, integer halving first), so half a
/// range stays appendable.
pub fn head_compactable(head_min: i64, head_max: i64, chunk_range: i64) -> bool {
    head_min != i64::MAX && head_max.wrapping_sub(head_min) > chunk_range / 2 * 3
}

/// The end of the `width`-aligned range holding `t` (Prometheus'
/// `rangeForTimestamp`). Division truncates toward zero, as in Go, so for
/// negative `t` this is the end of the range *after* the one holding `t`
/// (unless `t` is a multiple of `width`). Panics if `width` is 0 (as Go).
pub fn range_for_timestamp(t: i64, width: i64) -> i64 {
    t.wrapping_div(width)
        .wrapping_mul(width)
        .wrapping_add(width)
}

/// The `[mint, maxt)` of the next block cut from a compactable head whose
/// oldest sample is at `head_min` (`DB.Compact`): from `head_min` to the end
/// of its chunk range. Panics if `chunk_range` is 0.
pub fn head_block_range(head_min: i64, chunk_range: i64) -> (i64, i64) {
    (head_min, range_for_timestamp(head_min, chunk_range))
}

/// A block as the planner sees it: its directory and its meta.json.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanBlock {
    pub dir: PathBuf,
    pub meta: BlockMeta,
}

/// Which rule produced a plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanReason {
    /// Blocks with overlapping time ranges (vertical compaction).
    Overlapping,
    /// Blocks filling (or ending inside) an aligned window of this range.
    Leveled { range: i64 },
    /// One block rewritten to drop what its tombstones delete.
    Tombstones,
}

/// What to compact next, in the order Prometheus lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub dirs: Vec<PathBuf>,
    pub reason: PlanReason,
}

/// The leveled compactor's planning (Prometheus' `LeveledCompactor.Plan`).
#[derive(Debug, Clone)]
pub struct Planner {
    ranges: Vec<i64>,
    overlapping: bool,
}

impl Planner {
    /// A planner over these ranges (the first is the head's block range),
    /// with vertical compaction of overlapping blocks on, as in the server.
    pub fn new(ranges: Vec<i64>) -> Result<Planner, PlanError> {
        if ranges.is_empty() {
            return Err(PlanError::NoRanges);
        }
        if let Some(i) = ranges.iter().position(|&r| r == 0) {
            return Err(PlanError::ZeroRange(i));
        }
        Ok(Planner {
            ranges,
            overlapping: true,
        })
    }

    /// Turns vertical compaction on or off (Prometheus'
    /// `EnableOverlappingCompaction`; only downstream projects turn it off).
    pub fn with_overlapping_compaction(mut self, on: bool) -> Planner {
        self.overlapping = on;
        self
    }

    pub fn ranges(&self) -> &[i64] {
        &self.ranges
    }

    /// The dirs to compact next, or none.
    pub fn plan(&self, blocks: &[PlanBlock]) -> Vec<PathBuf> {
        self.plan_explained(blocks)
            .map(|p| p.dirs)
            .unwrap_or_default()
    }

    /// The dirs to compact next and the rule that chose them. `blocks` in
    /// directory-name order, as Prometheus lists them (it decides ties).
    pub fn plan_explained(&self, blocks: &[PlanBlock]) -> Option<Plan> {
        // Stable, like Go's insertion sort for small inputs (module docs).
        let mut order: Vec<usize> = (0..blocks.len()).collect();
        order.sort_by_key(|&i| blocks[i].meta.min_time);
        let sorted: Vec<&BlockMeta> = order.iter().map(|&i| &blocks[i].meta).collect();
        let dirs_of = |positions: std::ops::Range<usize>| -> Vec<PathBuf> {
            positions.map(|k| blocks[order[k]].dir.clone()).collect()
        };

        if sorted.is_empty() {
            return None;
        }
        if self.overlapping {
            if let Some(run) = first_overlap(&sorted) {
                return Some(Plan {
                    dirs: dirs_of(run),
                    reason: PlanReason::Overlapping,
                });
            }
        }
        // Leave out the newest block: it was probably just cut from the head.
        let older = &sorted[..sorted.len() - 1];
        if let Some((range, group)) = self.leveled_group(older) {
            return Some(Plan {
                dirs: dirs_of(group),
                reason: PlanReason::Leveled { range },
            });
        }
        self.tombstone_block(older).map(|k| Plan {
            dirs: dirs_of(k..k + 1),
            reason: PlanReason::Tombstones,
        })
    }

    /// Reads the block dirs of `data_dir` and plans over them (Prometheus'
    /// `Plan(dir)`: any unreadable meta.json fails the whole plan).
    pub fn plan_dir(&self, data_dir: &Path) -> Result<Vec<PathBuf>, PlanError> {
        Ok(self.plan(&read_plan_blocks(data_dir)?))
    }

    /// Rule 2: the first group, over the ranges after the first, of two or
    /// more blocks that fills its window or ends by the start of the newest
    /// block of `older`. Returns the range and the positions in `older`.
    fn leveled_group(&self, older: &[&BlockMeta]) -> Option<(i64, std::ops::Range<usize>)> {
        let newest = older.last()?;
        if self.ranges.len() < 2 {
            return None;
        }
        let horizon = newest.min_time;
        for &range in &self.ranges[1..] {
            for group in range_groups(older, range) {
                let members = &older[group.clone()];
                if members.len() < 2 || members.iter().any(|m| m.compaction.failed) {
                    continue;
                }
                let start = members[0].min_time;
                let end = members[members.len() - 1].max_time;
                if end.wrapping_sub(start) == range || end <= horizon {
                    return Some((range, group));
                }
            }
        }
        None
    }

    /// Rule 3: the position of the block to rewrite for its tombstones.
    fn tombstone_block(&self, older: &[&BlockMeta]) -> Option<usize> {
        let big = self.ranges[self.ranges.len() / 2];
        for (k, m) in older.iter().enumerate().rev() {
            let tombstones = m.stats.num_tombstones;
            if m.max_time.wrapping_sub(m.min_time) < big {
                // A small block is worth it only when (presumably) every
                // series is deleted; and nothing older is looked at.
                let all_deleted = tombstones > 0 && tombstones >= m.stats.num_series;
                return all_deleted.then_some(k);
            }
            let ratio = tombstones as f64 / m.stats.num_series.wrapping_add(1) as f64;
            if ratio > TOMBSTONE_REWRITE_RATIO {
                return Some(k);
            }
        }
        None
    }
}

/// Rule 1 on min-time-sorted metas: the positions of the first run of
/// overlapping blocks (with the block before the run), if any.
fn first_overlap(sorted: &[&BlockMeta]) -> Option<std::ops::Range<usize>> {
    let first = sorted.first()?;
    let mut reach = first.max_time;
    let mut start = None;
    let mut end = 0;
    for (k, m) in sorted.iter().enumerate().skip(1) {
        if m.min_time < reach {
            start.get_or_insert(k - 1);
            end = k + 1;
        } else if start.is_some() {
            break;
        }
        reach = reach.max(m.max_time);
    }
    start.map(|s| s..end)
}

/// Start of the `range`-aligned window holding `t`, rounding down (toward
/// minus infinity) for negative `t`, with Go's wrapping arithmetic.
fn window_start(t: i64, range: i64) -> i64 {
    let q = if t >= 0 {
        t.wrapping_div(range)
    } else {
        t.wrapping_sub(range).wrapping_add(1).wrapping_div(range)
    };
    q.wrapping_mul(range)
}

/// Prometheus' `splitByRange`: consecutive groups of min-time-sorted metas
/// that end inside the aligned `range` window of the group's first block.
/// A block reaching past its own window belongs to no group. Only max times
/// are checked against the window, as in Prometheus.
fn range_groups(sorted: &[&BlockMeta], range: i64) -> Vec<std::ops::Range<usize>> {
    let mut groups = Vec::new();
    let mut k = 0;
    while k < sorted.len() {
        let end = window_start(sorted[k].min_time, range).wrapping_add(range);
        let first = k;
        while k < sorted.len() && sorted[k].max_time <= end {
            k += 1;
        }
        if k == first {
            // Misaligned, or a block of a bigger range: skip it.
            k += 1;
        } else {
            groups.push(first..k);
        }
    }
    groups
}

/// The block directories of a data directory as Prometheus lists them:
/// directories (not symlinks) named by a valid ULID, in name order.
pub fn block_dirs(data_dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut names: Vec<OsString> = Vec::new();
    for entry in std::fs::read_dir(data_dir)? {
        let entry = entry?;
        if !entry.file_type()?.is_dir() {
            continue;
        }
        let name = entry.file_name();
        if name
            .to_str()
            .is_some_and(|s| s.parse::<BlockUlid>().is_ok())
        {
            names.push(name);
        }
    }
    names.sort();
    Ok(names.into_iter().map(|n| data_dir.join(n)).collect())
}

/// Every block dir of `data_dir` with its meta.json, in name order; the
/// first unreadable meta.json is an error (as in Prometheus' `Plan`).
pub fn read_plan_blocks(data_dir: &Path) -> Result<Vec<PlanBlock>, PlanError> {
    let dirs = block_dirs(data_dir).map_err(|source| PlanError::ListDir {
        path: data_dir.to_path_buf(),
        source,
    })?;
    dirs.into_iter()
        .map(|dir| match read_meta(&dir) {
            Ok(meta) => Ok(PlanBlock { dir, meta }),
            Err(source) => Err(PlanError::Meta { dir, source }),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrite_block::meta::{BlockStats, Compaction};
    use proptest::prelude::*;

    const H: i64 = HOUR_MS;

    /// A valid ULID from a number (decimal digits are base32 digits).
    fn ulid(n: u64) -> BlockUlid {
        format!("{n:026}").parse().unwrap()
    }

    fn meta(n: u64, min: i64, max: i64) -> BlockMeta {
        BlockMeta {
            ulid: ulid(n),
            min_time: min,
            max_time: max,
            compaction: Compaction {
                level: 1,
                ..Default::default()
            },
            version: 1,
            ..Default::default()
        }
    }

    /// Blocks named b0, b1, ... in the given order.
    fn blocks(spans: &[(i64, i64)]) -> Vec<PlanBlock> {
        spans
            .iter()
            .enumerate()
            .map(|(i, &(min, max))| PlanBlock {
                dir: PathBuf::from(format!("b{i}")),
                meta: meta(i as u64 + 1, min, max),
            })
            .collect()
    }

    fn names(dirs: &[PathBuf]) -> Vec<String> {
        dirs.iter().map(|d| d.display().to_string()).collect()
    }

    fn planner(ranges: &[i64]) -> Planner {
        Planner::new(ranges.to_vec()).unwrap()
    }

    fn plan_names(p: &Planner, b: &[PlanBlock]) -> Vec<String> {
        names(&p.plan(b))
    }

    #[test]
    fn exponential_ranges() {
        assert_eq!(
            exponential_block_ranges(2 * H, 4, 3),
            vec![2 * H, 6 * H, 18 * H, 54 * H]
        );
        assert_eq!(exponential_block_ranges(5, 0, 3), Vec::<i64>::new());
        assert_eq!(exponential_block_ranges(5, 3, 1), vec![5, 5, 5]);
        // Wraps like Go instead of panicking.
        let r = exponential_block_ranges(i64::MAX / 2, 3, 3);
        assert_eq!(r[1], (i64::MAX / 2).wrapping_mul(3));
    }

    #[test]
    fn server_ranges() {
        // Default: 15 d retention -> max 36 h -> 2h, 6h, 18h.
        assert_eq!(server_block_ranges(0, 0, 0, 0), vec![2 * H, 6 * H, 18 * H]);
        // Size-only retention keeps the 31 d cap: 2h .. 486h (20.25 d).
        assert_eq!(
            server_block_ranges(0, 0, 0, 1 << 30),
            vec![2 * H, 6 * H, 18 * H, 54 * H, 162 * H, 486 * H]
        );
        // A long retention is capped at 31 d.
        assert_eq!(server_max_block_duration_ms(0, 3650 * DAY_MS), 31 * DAY_MS);
        // retention/10 exactly on a range keeps it (drop only above).
        assert_eq!(
            server_block_ranges(0, 0, 180 * H, 0),
            vec![2 * H, 6 * H, 18 * H]
        );
        assert_eq!(
            server_block_ranges(0, 0, 180 * H - 1, 0),
            vec![2 * H, 6 * H]
        );
        // Small retention: max below min is raised to min -> one range.
        assert_eq!(server_block_ranges(0, 0, H, 0), vec![2 * H]);
        // The flag wins over retention, and is raised to the minimum.
        assert_eq!(
            server_block_ranges(0, 6 * H, 365 * DAY_MS, 0),
            vec![2 * H, 6 * H]
        );
        assert_eq!(server_block_ranges(0, 1, 0, 0), vec![2 * H]);
        // A custom minimum.
        assert_eq!(server_block_ranges(H, 9 * H, 0, 0), vec![H, 3 * H, 9 * H]);
        // Overflowed retention is 100 y: cap 31 d.
        assert_eq!(server_retention_ms(-1, 0), OVERFLOW_RETENTION_MS);
        assert_eq!(server_retention_ms(0, 5), 0);
        // All ten steps fit under a huge explicit maximum.
        assert_eq!(block_ranges(2 * H, i64::MAX).len(), 10);
    }

    #[test]
    fn head_helpers() {
        let r = 2 * H;
        assert!(!head_compactable(i64::MAX, i64::MIN, r));
        assert!(!head_compactable(0, 3 * H, r));
        assert!(head_compactable(0, 3 * H + 1, r));
        // Halving first: range 5 -> 2*3 = 6.
        assert!(!head_compactable(0, 6, 5));
        assert!(head_compactable(0, 7, 5));
        assert_eq!(head_block_range(0, r), (0, r));
        assert_eq!(head_block_range(r - 1, r), (r - 1, r));
        assert_eq!(head_block_range(r, r), (r, 2 * r));
        assert_eq!(
            head_block_range(1_700_000_123_456, r),
            (1_700_000_123_456, 1_700_006_400_000)
        );
        // Truncation toward zero for negative times, as in Go.
        assert_eq!(range_for_timestamp(-1, 10), 10);
        assert_eq!(range_for_timestamp(-10, 10), 0);
        assert_eq!(range_for_timestamp(-11, 10), 0);
    }

    #[test]
    fn planner_rejects_bad_ranges() {
        assert!(matches!(Planner::new(vec![]), Err(PlanError::NoRanges)));
        assert!(matches!(
            Planner::new(vec![10, 0]),
            Err(PlanError::ZeroRange(1))
        ));
    }

    #[test]
    fn window_starts() {
        assert_eq!(window_start(0, 10), 0);
        assert_eq!(window_start(9, 10), 0);
        assert_eq!(window_start(10, 10), 10);
        assert_eq!(window_start(-1, 10), -10);
        assert_eq!(window_start(-10, 10), -10);
        assert_eq!(window_start(-11, 10), -20);
    }

    #[test]
    fn split_by_range_example() {
        // The example of Prometheus' doc comment: [0-10, 10-20, 50-60, 90-100]
        // by 30 -> [0-10, 10-20], [50-60], [90-100].
        let b = blocks(&[(0, 10), (10, 20), (50, 60), (90, 100)]);
        let m: Vec<&BlockMeta> = b.iter().map(|b| &b.meta).collect();
        assert_eq!(range_groups(&m, 30), vec![0..2, 2..3, 3..4]);
        // A block crossing its window is dropped and starts nothing.
        let b = blocks(&[(0, 10), (25, 35), (40, 50)]);
        let m: Vec<&BlockMeta> = b.iter().map(|b| &b.meta).collect();
        assert_eq!(range_groups(&m, 30), vec![0..1, 2..3]);
        // Negative times align downwards.
        let b = blocks(&[(-30, -20), (-20, -10), (-10, 0), (0, 10)]);
        let m: Vec<&BlockMeta> = b.iter().map(|b| &b.meta).collect();
        assert_eq!(range_groups(&m, 30), vec![0..3, 3..4]);
    }

    // Cases after Prometheus' TestLeveledCompactor_plan (rules, not code).
    #[test]
    fn plan_basic_levels() {
        let p = planner(&[20, 60, 180, 540, 1620]);
        assert!(p.plan(&[]).is_empty());
        assert!(plan_names(&p, &blocks(&[(0, 20)])).is_empty());
        // Two blocks: the newest is left out, one remains.
        assert!(plan_names(&p, &blocks(&[(0, 20), (20, 40)])).is_empty());
        // Three: the newest is set aside; 0-20 and 20-40 neither fill 0-60
        // nor end by the start of the newest remaining block (20).
        assert!(plan_names(&p, &blocks(&[(0, 20), (20, 40), (40, 60)])).is_empty());
        // Four: the first three fill 0-60 exactly.
        assert_eq!(
            plan_names(&p, &blocks(&[(0, 20), (20, 40), (40, 60), (60, 80)])),
            ["b0", "b1", "b2"]
        );
        // Input order does not matter (sorted by min time).
        assert_eq!(
            plan_names(&p, &blocks(&[(60, 80), (40, 60), (20, 40), (0, 20)])),
            ["b3", "b2", "b1"]
        );
        // A gap: 0-20, 20-40 end by 60, the start of 60-80 (80-100 is set
        // aside).
        assert_eq!(
            plan_names(&p, &blocks(&[(0, 20), (20, 40), (60, 80), (80, 100)])),
            ["b0", "b1"]
        );
        assert!(plan_names(&p, &blocks(&[(0, 20), (20, 40), (60, 80)])).is_empty());
        // 20, 20, 20, 60 and a fresh 60.
        assert_eq!(
            plan_names(
                &p,
                &blocks(&[(0, 20), (20, 40), (40, 60), (60, 120), (120, 180)])
            ),
            ["b0", "b1", "b2"]
        );
        // 20, 60, 60 at the 180 level, behind a 240 and a fresh 20.
        assert_eq!(
            plan_names(
                &p,
                &blocks(&[(20, 40), (60, 120), (960, 980), (120, 180), (720, 960)])
            ),
            ["b0", "b1", "b3"]
        );
        assert!(plan_names(&p, &blocks(&[(0, 60), (60, 80), (80, 100)])).is_empty());
        // Nothing ends by the newest's start, and no window is full.
        assert!(plan_names(&p, &blocks(&[(0, 60), (60, 120), (120, 180)])).is_empty());
        // Gaps: a window counts as full by first min / last max.
        assert_eq!(
            plan_names(&p, &blocks(&[(0, 20), (40, 60), (60, 80)])),
            ["b0", "b1"]
        );
    }

    #[test]
    fn plan_skips_window_crossers_and_bigger_blocks() {
        let p = planner(&[20, 60, 180, 540, 1620]);
        // 0-180 crosses every 60 window and is alone in its 180 one;
        // 180-240 + 240-300 end by 360, the start of the newest remaining.
        let b = blocks(&[(0, 180), (180, 240), (240, 300), (360, 380), (380, 400)]);
        assert_eq!(plan_names(&p, &b), ["b1", "b2"]);
        let b = blocks(&[(0, 180), (180, 240), (240, 300), (300, 320)]);
        assert!(plan_names(&p, &b).is_empty());
        // A block crossing its window ends the group before it and starts
        // none itself.
        let b = blocks(&[(0, 20), (20, 40), (50, 70), (70, 80), (100, 110)]);
        assert_eq!(plan_names(&p, &b), ["b0", "b1"]);
    }

    #[test]
    fn plan_failed_blocks_are_not_leveled() {
        let p = planner(&[20, 60, 180]);
        let mut b = blocks(&[(0, 20), (20, 40), (40, 60), (60, 80)]);
        b[1].meta.compaction.failed = true;
        // 60-range group has the failed block; 180 group too.
        assert!(p.plan(&b).is_empty());
        // But a failed block is still merged when it overlaps.
        b.push(PlanBlock {
            dir: "b4".into(),
            meta: meta(9, 30, 35),
        });
        assert_eq!(plan_names(&p, &b), ["b1", "b4"]);
    }

    #[test]
    fn plan_overlaps() {
        let p = planner(&[20, 60, 180]);
        // The newest block overlapping is taken too.
        assert_eq!(plan_names(&p, &blocks(&[(0, 20), (10, 30)])), ["b0", "b1"]);
        // The run starts with the block before the first overlap, and
        // continues while blocks start before the largest end so far.
        let b = blocks(&[(0, 10), (10, 50), (20, 30), (40, 60), (60, 70), (65, 80)]);
        assert_eq!(plan_names(&p, &b), ["b1", "b2", "b3"]);
        // Touching blocks do not overlap.
        assert!(plan_names(&p, &blocks(&[(0, 10), (10, 20)])).is_empty());
        // Overlap off: leveled planning even over overlaps.
        let p2 = planner(&[20, 60, 180]).with_overlapping_compaction(false);
        let b = blocks(&[(0, 20), (10, 30), (40, 60), (60, 80)]);
        assert_eq!(plan_names(&p2, &b), ["b0", "b1", "b2"]);
        assert_eq!(plan_names(&p, &b), ["b0", "b1"]);
        assert_eq!(
            p.plan_explained(&b).unwrap().reason,
            PlanReason::Overlapping
        );
    }

    #[test]
    fn plan_single_range_only_overlaps_and_tombstones() {
        let p = planner(&[20]);
        let b = blocks(&[(0, 20), (20, 40), (40, 60), (60, 80)]);
        assert!(p.plan(&b).is_empty());
        let mut b = b;
        b[1].meta.stats = BlockStats {
            num_series: 10,
            num_tombstones: 1,
            ..Default::default()
        };
        // ranges[0] = 20 is the "big" threshold; 1/11 > 5%.
        assert_eq!(plan_names(&p, &b), ["b1"]);
        assert_eq!(p.plan_explained(&b).unwrap().reason, PlanReason::Tombstones);
    }

    #[test]
    fn plan_tombstones() {
        let p = planner(&[20, 60, 240, 720, 2160]);
        let stats = |series, tombstones| BlockStats {
            num_series: series,
            num_tombstones: tombstones,
            ..Default::default()
        };
        // Big blocks (>= ranges[2] = 240): > 5% of series+1.
        let mut b = blocks(&[(0, 720), (720, 1440), (1440, 1460)]);
        b[1].meta.stats = stats(19, 1); // 1/20 = 5%: not above
        assert!(p.plan(&b).is_empty());
        b[1].meta.stats = stats(18, 1); // 1/19 > 5%
        assert_eq!(plan_names(&p, &b), ["b1"]);
        // The newest qualifying block wins; the newest overall is excluded.
        b[0].meta.stats = stats(1, 1);
        assert_eq!(plan_names(&p, &b), ["b1"]);
        b[2].meta.stats = stats(1, 5);
        b[1].meta.stats = stats(100, 0);
        assert_eq!(plan_names(&p, &b), ["b0"]);
        // A small block stops the walk: b1 small without full deletion.
        let mut b = blocks(&[(0, 720), (720, 740), (760, 780)]);
        b[0].meta.stats = stats(10, 10);
        assert!(p.plan(&b).is_empty());
        // ... a small block with tombstones for all its series is taken.
        b[1].meta.stats = stats(3, 3);
        assert_eq!(plan_names(&p, &b), ["b1"]);
        b[1].meta.stats = stats(3, 2);
        assert!(p.plan(&b).is_empty());
        // Zero series and zero tombstones: not "all deleted".
        b[1].meta.stats = stats(0, 0);
        assert!(p.plan(&b).is_empty());
        // Failed does not matter for tombstones.
        let mut b = blocks(&[(0, 720), (720, 740)]);
        b[0].meta.stats = stats(10, 10);
        b[0].meta.compaction.failed = true;
        assert_eq!(plan_names(&p, &b), ["b0"]);
        // series = u64::MAX: series + 1 wraps to 0, ratio +inf, as in Go.
        b[0].meta.compaction.failed = false;
        b[0].meta.stats = stats(u64::MAX, 1);
        assert_eq!(plan_names(&p, &b), ["b0"]);
    }

    #[test]
    fn plan_ties_keep_input_order() {
        let p = planner(&[20, 60]);
        let b = blocks(&[(0, 20), (0, 20), (0, 10)]);
        assert_eq!(plan_names(&p, &b), ["b0", "b1", "b2"]);
        // Degenerate blocks: an empty block first sets a small reach.
        let b = blocks(&[(10, 10), (10, 20)]);
        assert!(p.plan(&b).is_empty());
        let b = blocks(&[(10, 20), (10, 10)]);
        assert_eq!(plan_names(&p, &b), ["b0", "b1"]);
    }

    #[test]
    fn reads_block_dirs_like_prometheus() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        let mk = |name: &str, min: i64, max: i64| {
            let dir = d.join(name);
            std::fs::create_dir(&dir).unwrap();
            let mut m = meta(0, min, max);
            m.ulid = name.to_uppercase().parse().unwrap();
            ferrite_block::meta::write_meta(&dir, &m).unwrap();
        };
        mk("01HQ3ZJ5A9Y1N1ZK0F3M6D7X2G", 60, 80);
        mk("01HQ3ZJ5A9Y1N1ZK0F3M6D7X2C", 40, 60);
        mk("01HQ3ZJ5A9Y1N1ZK0F3M6D7X2A", 0, 20);
        mk("01HQ3ZJ5A9Y1N1ZK0F3M6D7X2B", 20, 40);
        // Not block dirs: a file, bad names (I, L, O, U are not in the
        // alphabet; a first digit above 7 overflows), a tmp dir.
        std::fs::write(d.join("01HQ3ZJ5A9Y1N1ZK0F3M6D7X2D"), b"x").unwrap();
        for bad in [
            "01HQ3ZJ5A9Y1N1ZK0F3M6D7X2I",
            "01HQ3ZJ5A9Y1N1ZK0F3M6D7X2l",
            "81HQ3ZJ5A9Y1N1ZK0F3M6D7X2A",
        ] {
            std::fs::create_dir(d.join(bad)).unwrap();
        }
        std::fs::create_dir(d.join("wal")).unwrap();
        std::fs::create_dir(d.join("01HQ3ZJ5A9Y1N1ZK0F3M6D7X2E.tmp-for-creation")).unwrap();
        let got = planner(&[20, 60]).plan_dir(d).unwrap();
        let got: Vec<_> = got
            .iter()
            .map(|p| p.file_name().unwrap().to_owned())
            .collect();
        assert_eq!(
            got,
            [
                "01HQ3ZJ5A9Y1N1ZK0F3M6D7X2A",
                "01HQ3ZJ5A9Y1N1ZK0F3M6D7X2B",
                "01HQ3ZJ5A9Y1N1ZK0F3M6D7X2C"
            ]
        );
        // An unreadable meta.json fails the plan.
        std::fs::create_dir(d.join("01HQ3ZJ5A9Y1N1ZK0F3M6D7X2F")).unwrap();
        assert!(matches!(
            planner(&[20, 60]).plan_dir(d),
            Err(PlanError::Meta { .. })
        ));
    }

    fn arb_blocks() -> impl Strategy<Value = Vec<PlanBlock>> {
        // Aligned-ish spans in units of 10 so windows and overlaps happen.
        prop::collection::vec((0i64..40, 1i64..20, any::<bool>(), 0u64..4, 0u64..4), 0..14)
            .prop_map(|v| {
                v.into_iter()
                    .enumerate()
                    .map(|(i, (start, len, failed, series, tomb))| {
                        let mut m = meta(i as u64 + 1, start * 10, (start + len) * 10);
                        m.compaction.failed = failed && i % 3 == 0;
                        m.stats.num_series = series;
                        m.stats.num_tombstones = tomb;
                        PlanBlock {
                            dir: PathBuf::from(format!("b{i}")),
                            meta: m,
                        }
                    })
                    .collect()
            })
    }

    proptest! {
        #[test]
        fn plan_invariants(b in arb_blocks(), which in 0usize..3) {
            let ranges: &[i64] = match which { 0 => &[20], 1 => &[20, 60, 180], _ => &[10, 30, 90, 270] };
            let p = planner(ranges);
            let Some(plan) = p.plan_explained(&b) else { return Ok(()); };
            let by_dir = |d: &PathBuf| b.iter().find(|x| &x.dir == d).unwrap();
            let picked: Vec<&PlanBlock> = plan.dirs.iter().map(by_dir).collect();
            // No block twice; listed in min-time order.
            let mut seen = plan.dirs.clone();
            seen.sort();
            seen.dedup();
            prop_assert_eq!(seen.len(), plan.dirs.len());
            prop_assert!(picked.windows(2).all(|w| w[0].meta.min_time <= w[1].meta.min_time));
            let newest_min = b.iter().map(|x| x.meta.min_time).max().unwrap();
            let overlaps = |x: &PlanBlock| b.iter().any(|y| y.dir != x.dir
                && x.meta.min_time < y.meta.max_time && y.meta.min_time < x.meta.max_time);
            match plan.reason {
                PlanReason::Overlapping => {
                    prop_assert!(picked.len() >= 2);
                    prop_assert!(picked.iter().all(|x| overlaps(x)));
                }
                PlanReason::Leveled { range } => {
                    prop_assert!(picked.len() >= 2);
                    prop_assert!(ranges[1..].contains(&range));
                    prop_assert!(picked.iter().all(|x| !x.meta.compaction.failed));
                    // All in one aligned window of that range.
                    let w = window_start(picked[0].meta.min_time, range);
                    prop_assert!(picked.iter().all(|x| x.meta.max_time <= w + range));
                    // Never the newest block (it was set aside), and no
                    // overlaps exist at all in this branch.
                    prop_assert!(!b.iter().any(overlaps));
                    prop_assert!(picked.iter().all(|x| x.meta.min_time < newest_min));
                }
                PlanReason::Tombstones => {
                    prop_assert_eq!(picked.len(), 1);
                    prop_assert!(picked[0].meta.stats.num_tombstones > 0);
                    prop_assert!(picked[0].meta.min_time < newest_min);
                }
            }
        }

        #[test]
        fn plan_ignores_input_order_without_ties(mut b in arb_blocks(), seed in any::<u64>()) {
            // Distinct min times: the input order cannot matter.
            for (i, x) in b.iter_mut().enumerate() {
                x.meta.min_time = x.meta.min_time * 100 + i as i64;
                x.meta.max_time = x.meta.max_time * 100 + i as i64;
            }
            let p = planner(&[100, 300, 900]);
            let want = p.plan(&b);
            let mut shuffled = b.clone();
            let n = shuffled.len();
            if n > 1 {
                let mut s = seed;
                for i in (1..n).rev() {
                    s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    shuffled.swap(i, (s >> 33) as usize % (i + 1));
                }
            }
            prop_assert_eq!(p.plan(&shuffled), want);
        }
    }
}
