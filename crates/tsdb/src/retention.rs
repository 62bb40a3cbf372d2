//! Which blocks retention deletes: the decisions Prometheus v3.9.1 takes on
//! every block reload (`tsdb/db.go`: `reloadBlocks`, `deletableBlocks`,
//! `BeyondTimeRetention`, `BeyondSizeRetention`).
//!
//! # Rules
//!
//! The blocks considered are all blocks that open, parents of newer blocks
//! included (they still count). They are ordered newest first by max time.
//! A block is deleted when any of these holds:
//!
//! - **deletable**: its meta says `compaction.deletable` (a compaction
//!   produced nothing from it, e.g. all its data was deleted);
//! - **parent**: some block lists it in `compaction.parents` (it was
//!   compacted into that block, possibly before a crash stopped the
//!   deletion). This holds even when the child itself is deleted;
//! - **time**: retention is not 0 and its max time is at least the retention
//!   before the *newest block's* max time (`newest.maxt - b.maxt >=
//!   retention`) — retention is relative to the data, not to the clock, and
//!   never deletes the newest block. Everything after the first such block
//!   in the order goes too;
//! - **size**: the size limit is positive and the running sum — starting
//!   with the head's on-disk size (WAL, WBL and `chunks_head/`), then adding
//!   blocks newest first — goes strictly above the limit at this block or an
//!   earlier one. The newest block can go too (when the head alone is over).
//!
//! A block's size is what Prometheus measured when it opened it: the lengths
//! of `meta.json`, `index`, every numerically named file in `chunks/` and
//! `tombstones` (0 when absent). Sizes and limits are bytes, times
//! milliseconds; sums and differences wrap like Go's int64.
//!
//! Prometheus' server never passes a negative time retention (it caps at
//! 100 years), but the TSDB accepts one, and so do we: only 0 disables it.
//!
//! # Deviations
//!
//! Go's `slices.SortFunc` is not stable: for more than 12 blocks with equal
//! max times, which of the tied blocks comes first may differ from ours
//! (stable, ties in input order, i.e. directory-name order). That matters
//! only when a size cut falls inside such a tie, or for a negative time
//! retention. [`load_retention_blocks`] does not validate the index and
//! chunk files as opening a block would; a block Prometheus fails to open
//! is left out of retention there, but only when its files are missing here.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};

use ferrite_block::meta::{read_meta, BlockMeta, BlockUlid, META_FILENAME};

use crate::compact::planner::block_dirs;

/// Name of the block index file.
const INDEX_FILENAME: &str = "index";
/// Directory of a block's chunk segment files.
const CHUNKS_DIRNAME: &str = "chunks";
/// Name of the block tombstones file.
const TOMBSTONES_FILENAME: &str = "tombstones";
/// The head's directories counted by size retention.
const HEAD_DIRS: [&str; 3] = ["wal", "wbl", "chunks_head"];

/// A block as retention sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetentionBlock {
    pub meta: BlockMeta,
    /// Bytes on disk, see the module docs.
    pub size_bytes: i64,
}

/// The limits, as the TSDB options hold them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RetentionLimits {
    /// Time retention in milliseconds; 0 disables.
    pub duration_ms: i64,
    /// Size retention in bytes; 0 or less disables.
    pub max_bytes: i64,
    /// What the head adds to the size: the bytes of `wal/`, `wbl/` and
    /// `chunks_head/` (see [`head_size_on_disk`]).
    pub head_bytes: i64,
}

/// Why a block is deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeleteReason {
    /// Its meta has `compaction.deletable`.
    Deletable,
    /// It is a parent of this (newer, compacted) block.
    Parent { child: BlockUlid },
    /// Beyond the time retention.
    Time,
    /// Beyond the size retention.
    Size,
}

impl std::fmt::Display for DeleteReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeleteReason::Deletable => f.write_str("deletable"),
            DeleteReason::Parent { child } => write!(f, "parent-of:{child}"),
            DeleteReason::Time => f.write_str("time"),
            DeleteReason::Size => f.write_str("size"),
        }
    }
}

/// A block to delete and every reason that applies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deletion {
    pub ulid: BlockUlid,
    pub reasons: Vec<DeleteReason>,
}

/// Orders blocks newest first (max time descending) as retention walks
/// them; stable, so ties keep their input order.
pub fn sort_newest_first(blocks: &mut [RetentionBlock]) {
    blocks.sort_by_key(|b| std::cmp::Reverse(b.meta.max_time));
}

/// Time retention over blocks sorted newest first: the position of the
/// first block to delete (it and all after it go), or `None`.
pub fn beyond_time_retention(sorted: &[RetentionBlock], duration_ms: i64) -> Option<usize> {
    let newest = sorted.first()?;
    if duration_ms == 0 {
        return None;
    }
    sorted
        .iter()
        .skip(1)
        .position(|b| newest.meta.max_time.wrapping_sub(b.meta.max_time) >= duration_ms)
        .map(|k| k + 1)
}

/// Size retention over blocks sorted newest first, counting `head_bytes`
/// first: the position of the first block to delete (it and all after it
/// go), or `None`.
pub fn beyond_size_retention(
    sorted: &[RetentionBlock],
    max_bytes: i64,
    head_bytes: i64,
) -> Option<usize> {
    if max_bytes <= 0 {
        return None;
    }
    let mut total = head_bytes;
    sorted.iter().position(|b| {
        total = total.wrapping_add(b.size_bytes);
        total > max_bytes
    })
}

/// Every block a reload deletes, with the reasons, in newest-first order
/// (ties in input order). Parents are reported only when present in
/// `blocks` (Prometheus also tries the others; they are gone already).
pub fn blocks_to_delete(blocks: &[RetentionBlock], limits: &RetentionLimits) -> Vec<Deletion> {
    let mut sorted = blocks.to_vec();
    sort_newest_first(&mut sorted);

    let mut reasons: Vec<Vec<DeleteReason>> = vec![Vec::new(); sorted.len()];
    for (r, b) in reasons.iter_mut().zip(&sorted) {
        if b.meta.compaction.deletable {
            r.push(DeleteReason::Deletable);
        }
    }
    if let Some(k) = beyond_time_retention(&sorted, limits.duration_ms) {
        reasons[k..]
            .iter_mut()
            .for_each(|r| r.push(DeleteReason::Time));
    }
    if let Some(k) = beyond_size_retention(&sorted, limits.max_bytes, limits.head_bytes) {
        reasons[k..]
            .iter_mut()
            .for_each(|r| r.push(DeleteReason::Size));
    }

    // Every position holding a ULID (duplicates are possible in theory).
    let mut by_ulid: HashMap<BlockUlid, Vec<usize>> = HashMap::new();
    for (k, b) in sorted.iter().enumerate() {
        by_ulid.entry(b.meta.ulid).or_default().push(k);
    }
    for child in &sorted {
        for parent in &child.meta.compaction.parents {
            for &k in by_ulid.get(&parent.ulid).into_iter().flatten() {
                let reason = DeleteReason::Parent {
                    child: child.meta.ulid,
                };
                if !reasons[k].contains(&reason) {
                    reasons[k].push(reason);
                }
            }
        }
    }

    sorted
        .iter()
        .zip(reasons)
        .filter(|(_, r)| !r.is_empty())
        .map(|(b, reasons)| Deletion {
            ulid: b.meta.ulid,
            reasons,
        })
        .collect()
}

/// Bytes of a block dir as Prometheus counts them when it opens the block.
/// Missing `index` or `chunks/` is an error (the block would not open);
/// a missing `tombstones` counts 0.
pub fn block_size_on_disk(block_dir: &Path) -> io::Result<i64> {
    let len = |p: PathBuf| std::fs::metadata(p).map(|m| m.len() as i64);
    let mut total = len(block_dir.join(META_FILENAME))?;
    total = total.wrapping_add(len(block_dir.join(INDEX_FILENAME))?);
    let tombstones = match len(block_dir.join(TOMBSTONES_FILENAME)) {
        Ok(n) => n,
        Err(e) if e.kind() == io::ErrorKind::NotFound => 0,
        Err(e) => return Err(e),
    };
    total = total.wrapping_add(tombstones);
    for entry in std::fs::read_dir(block_dir.join(CHUNKS_DIRNAME))? {
        let entry = entry?;
        let name = entry.file_name();
        // Segment files: names that parse as an unsigned decimal number.
        if name
            .to_str()
            .is_some_and(|s| s.parse::<u64>().is_ok() && !s.starts_with('+'))
        {
            total = total.wrapping_add(entry.metadata()?.len() as i64);
        }
    }
    Ok(total)
}

/// The head's contribution to size retention: the bytes of every file under
/// `wal/`, `wbl/` and `chunks_head/` (missing dirs count 0; symlinks count
/// their own length, not followed).
pub fn head_size_on_disk(data_dir: &Path) -> io::Result<i64> {
    let mut total = 0i64;
    for d in HEAD_DIRS {
        total = total.wrapping_add(tree_size(&data_dir.join(d))?);
    }
    Ok(total)
}

fn tree_size(path: &Path) -> io::Result<i64> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    if !meta.is_dir() {
        return Ok(meta.len() as i64);
    }
    let mut total = 0i64;
    for entry in std::fs::read_dir(path)? {
        total = total.wrapping_add(tree_size(&entry?.path())?);
    }
    Ok(total)
}

/// A block dir left out by [`load_retention_blocks`], and why.
#[derive(Debug)]
pub struct SkippedBlock {
    pub dir: PathBuf,
    pub reason: String,
}

/// The blocks of a data dir with their sizes, in directory-name order, as a
/// reload sees them: a block whose meta.json cannot be read, or whose index
/// or chunks are missing, is left out (and reported).
pub fn load_retention_blocks(
    data_dir: &Path,
) -> io::Result<(Vec<RetentionBlock>, Vec<SkippedBlock>)> {
    let mut blocks = Vec::new();
    let mut skipped = Vec::new();
    for dir in block_dirs(data_dir)? {
        let meta = match read_meta(&dir) {
            Ok(m) => m,
            Err(e) => {
                skipped.push(SkippedBlock {
                    dir,
                    reason: e.to_string(),
                });
                continue;
            }
        };
        match block_size_on_disk(&dir) {
            Ok(size_bytes) => blocks.push(RetentionBlock { meta, size_bytes }),
            Err(e) => skipped.push(SkippedBlock {
                dir,
                reason: e.to_string(),
            }),
        }
    }
    Ok((blocks, skipped))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrite_block::meta::BlockDesc;
    use proptest::prelude::*;

    fn ulid(n: u64) -> BlockUlid {
        format!("{n:026}").parse().unwrap()
    }

    fn block(n: u64, min: i64, max: i64, size: i64) -> RetentionBlock {
        RetentionBlock {
            meta: BlockMeta {
                ulid: ulid(n),
                min_time: min,
                max_time: max,
                version: 1,
                ..Default::default()
            },
            size_bytes: size,
        }
    }

    fn limits(duration_ms: i64, max_bytes: i64, head_bytes: i64) -> RetentionLimits {
        RetentionLimits {
            duration_ms,
            max_bytes,
            head_bytes,
        }
    }

    fn deleted(blocks: &[RetentionBlock], l: RetentionLimits) -> Vec<(u64, Vec<DeleteReason>)> {
        blocks_to_delete(blocks, &l)
            .into_iter()
            .map(|d| (d.ulid.to_string().parse().unwrap(), d.reasons))
            .collect()
    }

    use DeleteReason::*;

    #[test]
    fn time_retention_is_relative_to_newest_block() {
        // Newest max 100; retention 30: delete where 100 - maxt >= 30.
        let b = vec![
            block(1, 0, 40, 1),
            block(2, 40, 70, 1),
            block(3, 70, 71, 1),
            block(4, 71, 100, 1),
        ];
        assert_eq!(
            deleted(&b, limits(30, 0, 0)),
            vec![(2, vec![Time]), (1, vec![Time])]
        );
        // Exactly at the boundary is deleted (>=); one less is kept.
        assert_eq!(
            deleted(&b, limits(29, 0, 0)),
            vec![(3, vec![Time]), (2, vec![Time]), (1, vec![Time])]
        );
        assert_eq!(deleted(&b, limits(31, 0, 0)), vec![(1, vec![Time])]);
        // 0 disables; the newest block is never deleted by time.
        assert!(deleted(&b, limits(0, 0, 0)).is_empty());
        assert_eq!(deleted(&b[..1], limits(1, 0, 0)), vec![]);
        // Negative: everything but the newest.
        assert_eq!(deleted(&b, limits(-1, 0, 0)).len(), 3);
    }

    #[test]
    fn time_retention_cuts_at_first_match_in_maxt_order() {
        // Overlapping blocks: order is by max time only.
        let b = vec![
            block(1, 0, 100, 1),
            block(2, 50, 60, 1),
            block(3, 90, 95, 1),
        ];
        let mut s = b.clone();
        sort_newest_first(&mut s);
        assert_eq!(beyond_time_retention(&s, 40), Some(2));
        assert_eq!(beyond_time_retention(&s, 5), Some(1));
        assert_eq!(beyond_time_retention(&[], 5), None);
    }

    #[test]
    fn size_retention_counts_head_first_and_is_strict() {
        let b = vec![
            block(1, 0, 10, 100),
            block(2, 10, 20, 100),
            block(3, 20, 30, 100),
        ];
        // head 50 + 100 + 100 = 250 <= 250 keeps two; the third exceeds.
        assert_eq!(deleted(&b, limits(0, 250, 50)), vec![(1, vec![Size])]);
        assert_eq!(
            deleted(&b, limits(0, 249, 50)),
            vec![(2, vec![Size]), (1, vec![Size])]
        );
        // The head alone over the limit deletes every block, newest too.
        assert_eq!(deleted(&b, limits(0, 10, 11)).len(), 3);
        // 0 or negative disables.
        assert!(deleted(&b, limits(0, 0, 1 << 40)).is_empty());
        assert!(deleted(&b, limits(0, -1, 1 << 40)).is_empty());
    }

    #[test]
    fn deletable_parents_and_combined_reasons() {
        let mut b = vec![
            block(1, 0, 10, 10),
            block(2, 10, 20, 10),
            block(3, 0, 20, 20),
            block(4, 20, 30, 10),
        ];
        b[2].meta.compaction.parents = vec![
            BlockDesc {
                ulid: ulid(1),
                min_time: 0,
                max_time: 10,
            },
            BlockDesc {
                ulid: ulid(2),
                min_time: 10,
                max_time: 20,
            },
            // A parent already gone is not reported.
            BlockDesc {
                ulid: ulid(99),
                min_time: 0,
                max_time: 1,
            },
        ];
        b[3].meta.compaction.deletable = true;
        // Parents still count for size: 10 (b4) + 20 (b3) + 10 + 10 = 50.
        let got = deleted(&b, limits(10, 35, 0));
        // Sorted newest first: b4 (30), b2 (20), b3 (20, after b2: input
        // order), b1 (10). Time cuts at b2 (30 - 20 >= 10); size at b3
        // (10 + 10 + 20 > 35).
        assert_eq!(
            got,
            vec![
                (4, vec![Deletable]),
                (2, vec![Time, Parent { child: ulid(3) }]),
                (3, vec![Time, Size]),
                (1, vec![Time, Size, Parent { child: ulid(3) }]),
            ]
        );
        // The child being deleted does not save its parents.
        b[2].meta.compaction.deletable = true;
        let got = deleted(&b, limits(0, 0, 0));
        assert_eq!(got.len(), 4);
    }

    #[test]
    fn reason_strings() {
        assert_eq!(
            Parent { child: ulid(7) }.to_string(),
            format!("parent-of:{}", ulid(7))
        );
        assert_eq!(Size.to_string(), "size");
    }

    #[test]
    fn sizes_on_disk() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        let bd = d.join(ulid(1).to_string());
        std::fs::create_dir_all(bd.join("chunks")).unwrap();
        let m = block(1, 0, 10, 0).meta;
        let meta_len = ferrite_block::meta::write_meta(&bd, &m).unwrap() as i64;
        std::fs::write(bd.join("index"), vec![0u8; 1000]).unwrap();
        std::fs::write(bd.join("chunks/000001"), vec![0u8; 300]).unwrap();
        std::fs::write(bd.join("chunks/000002"), vec![0u8; 20]).unwrap();
        std::fs::write(bd.join("chunks/notes"), vec![0u8; 5000]).unwrap();
        assert_eq!(block_size_on_disk(&bd).unwrap(), meta_len + 1320);
        std::fs::write(bd.join("tombstones"), vec![0u8; 9]).unwrap();
        assert_eq!(block_size_on_disk(&bd).unwrap(), meta_len + 1329);

        std::fs::create_dir_all(d.join("wal/checkpoint.00000003")).unwrap();
        std::fs::write(d.join("wal/00000004"), vec![0u8; 70]).unwrap();
        std::fs::write(d.join("wal/checkpoint.00000003/00000000"), vec![0u8; 30]).unwrap();
        std::fs::create_dir_all(d.join("chunks_head")).unwrap();
        std::fs::write(d.join("chunks_head/000001"), vec![0u8; 8]).unwrap();
        std::fs::write(d.join("lock"), vec![0u8; 8]).unwrap();
        assert_eq!(head_size_on_disk(d).unwrap(), 108);

        // A second block without index is skipped; one without meta too.
        let bad = d.join(ulid(2).to_string());
        std::fs::create_dir_all(bad.join("chunks")).unwrap();
        ferrite_block::meta::write_meta(&bad, &block(2, 10, 20, 0).meta).unwrap();
        std::fs::create_dir_all(d.join(ulid(3).to_string())).unwrap();
        let (blocks, skipped) = load_retention_blocks(d).unwrap();
        assert_eq!(blocks.len(), 1);
        assert_eq!(blocks[0].size_bytes, meta_len + 1329);
        assert_eq!(skipped.len(), 2);
    }

    proptest! {
        #[test]
        fn retention_invariants(
            spans in prop::collection::vec((0i64..1000, 1i64..300, 1i64..500), 0..20),
            duration in 0i64..800,
            max_bytes in 0i64..3000,
            head in 0i64..500,
        ) {
            let blocks: Vec<RetentionBlock> = spans
                .iter()
                .enumerate()
                .map(|(i, &(min, len, size))| block(i as u64 + 1, min, min + len, size))
                .collect();
            let l = limits(duration, max_bytes, head);
            let dels = blocks_to_delete(&blocks, &l);
            let gone: std::collections::HashSet<BlockUlid> = dels.iter().map(|d| d.ulid).collect();
            let kept: Vec<&RetentionBlock> = blocks.iter().filter(|b| !gone.contains(&b.meta.ulid)).collect();
            // Kept blocks fit the size limit together with the head.
            if max_bytes > 0 && !kept.is_empty() {
                prop_assert!(head + kept.iter().map(|b| b.size_bytes).sum::<i64>() <= max_bytes);
            }
            // A deleted-by-time block is never the newest, and kept blocks are
            // all within the retention of the newest.
            if duration > 0 && !blocks.is_empty() {
                let newest = blocks.iter().map(|b| b.meta.max_time).max().unwrap();
                for b in &kept {
                    prop_assert!(newest - b.meta.max_time < duration);
                }
            }
            // Deletion is a suffix of the newest-first order (no parents or
            // deletable flags here): no kept block is older than a deleted one.
            let oldest_kept = kept.iter().map(|b| b.meta.max_time).min();
            for d in &dels {
                let b = blocks.iter().find(|b| b.meta.ulid == d.ulid).unwrap();
                if let Some(o) = oldest_kept {
                    prop_assert!(b.meta.max_time <= o);
                }
            }
        }
    }
}
