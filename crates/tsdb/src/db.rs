//! Opening a data directory, and the work that keeps it in shape.
//!
//! A data directory has Prometheus' layout: `wal/` (segments and
//! checkpoints), `chunks_head/` (closed head chunks) and block directories
//! named by ULID. [`Db::open`] takes the directory lock, removes what an
//! interrupted block write or deletion left, opens the blocks, loads the head
//! chunks, replays the WAL (repairing a corrupt tail; samples older than the
//! newest block are in blocks already and skipped) and then opens a fresh
//! WAL segment for new writes, exactly as the server starts.
//!
//! [`Db::compact`] persists the head's oldest range as a block once the head
//! spans 1.5 block ranges, then truncates the head and the WAL, in
//! Prometheus' order (block renamed into place first), so a crash at any
//! point loses nothing and doubles nothing.

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use ferrite_block::meta::{write_meta, BlockMeta, BlockUlid};
use parking_lot::{Mutex, RwLock};

use tracing::{error, info, warn};

use crate::block::{Block, BlockError, PendingBlock, TMP_FOR_CREATION, TMP_FOR_DELETION};
use crate::compact::ooo::compact_ooo_head;
use crate::compact::planner::{server_block_ranges, server_retention_ms, PlanBlock, Planner};
use crate::compact::{compact_blocks, persist_head_range, write_head_ranges, CompactError};
use crate::error::{DbError, HeadError};
use crate::head::{Head, HeadAppender, HeadOptions};
use crate::querier::Querier;
use crate::replay::{replay, ReplayStats};
use crate::replay_wbl::check_wbl_kinds;
use crate::retention::{blocks_to_delete, head_size_on_disk, RetentionBlock, RetentionLimits};

/// Settings of a database.
#[derive(Clone, Debug, Default)]
pub struct DbOptions {
    pub head: HeadOptions,
    /// `--storage.tsdb.retention.time` in ms; 0 with no size limit means
    /// Prometheus' default of 15 days, 0 with a size limit means none.
    pub retention_ms: i64,
    /// `--storage.tsdb.retention.size` in bytes; 0 disables it.
    pub retention_bytes: i64,
    /// `--storage.tsdb.max-block-duration` in ms; 0 derives it from the
    /// retention (a tenth of it, at most 31 days), as Prometheus does.
    pub max_block_duration_ms: i64,
    /// Cap on the rate compactions write chunk data, bytes per second
    /// (`None`: unlimited), to keep compaction I/O from starving queries.
    pub compaction_write_bytes_per_sec: Option<u64>,
    /// Keep blocks beyond the time and size retention. For tools that open
    /// a data directory to read or compact it (`ferrite tsdb dump`,
    /// `digest`, `compact`): as promtool's, they must not delete data a
    /// server would keep under its own, possibly longer, retention. Blocks
    /// a compaction replaced are still removed.
    pub keep_expired_blocks: bool,
    /// `--storage.tsdb.no-lockfile`: neither create nor lock `lock`, so
    /// nothing stops a second process opening the directory.
    pub no_lockfile: bool,
}

/// An open data directory.
pub struct Db {
    dir: PathBuf,
    head: Head,
    /// Open blocks, sorted by min time.
    blocks: RwLock<Vec<Arc<Block>>>,
    /// Serialises compactions and block-list changes.
    compaction: Mutex<()>,
    /// Held (write) while a head range moves into a block: the block joins
    /// the list and the head drops the range in one step for queriers.
    consistency: RwLock<()>,
    replay: ReplayStats,
    write_limit: Option<u64>,
    /// Block ranges of leveled compaction (2 h, 6 h, 18 h, ...).
    ranges: Vec<i64>,
    retention: RetentionLimits,
    _lock: Option<File>,
    /// Blocks a compaction failed on because they hold chunks Ferrite
    /// cannot decode: left out of planning until restart, but not marked
    /// `compaction.failed` on disk (a later version can compact them).
    unsupported_in_compaction: Mutex<Vec<BlockUlid>>,
    /// What the compactions did, as Prometheus counts it.
    compaction_stats: CompactionStats,
}

/// Compactions counted as Prometheus counts them (the counters behind
/// `prometheus_tsdb_compactions_triggered_total`, `_compactions_total` and
/// `_compactions_failed_total`).
#[derive(Debug, Default)]
pub struct CompactionStats {
    /// Runs of [`Db::compact`] (the server's loop: every minute, and when
    /// appends make the head compactable).
    pub triggered: AtomicU64,
    /// Blocks a compaction set out to write (from the head, from
    /// out-of-order samples, or merged from blocks), written or not.
    pub ran: AtomicU64,
    /// Runs of [`Db::compact`] that failed.
    pub failed: AtomicU64,
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> DbError + '_ {
    move |source| DbError::Io {
        path: path.to_owned(),
        source,
    }
}

/// Creates and locks `dir/lock`, which keeps a second process out.
fn lock_dir(dir: &Path) -> Result<File, DbError> {
    let lock_path = dir.join("lock");
    let lock = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(io_err(&lock_path))?;
    match lock.try_lock() {
        Ok(()) => Ok(lock),
        Err(std::fs::TryLockError::WouldBlock) => Err(DbError::Locked(dir.to_owned())),
        Err(std::fs::TryLockError::Error(e)) => Err(io_err(&lock_path)(e)),
    }
}

impl Db {
    /// Opens (creating if needed) the data directory `dir`.
    pub fn open(dir: &Path, opts: DbOptions) -> Result<Db, DbError> {
        fs::create_dir_all(dir).map_err(io_err(dir))?;
        let lock = if opts.no_lockfile {
            None
        } else {
            Some(lock_dir(dir)?)
        };
        // Before anything in the directory can change.
        let wbl_dir = dir.join("wbl");
        check_wbl_kinds(&wbl_dir)?;
        let ranges = server_block_ranges(
            opts.head.chunk_range,
            opts.max_block_duration_ms,
            opts.retention_ms,
            opts.retention_bytes,
        );
        // Zero limits delete nothing for age or size.
        let (duration_ms, max_bytes) = if opts.keep_expired_blocks {
            (0, 0)
        } else {
            (
                server_retention_ms(opts.retention_ms, opts.retention_bytes),
                opts.retention_bytes,
            )
        };
        let retention = RetentionLimits {
            duration_ms,
            max_bytes,
            head_bytes: 0,
        };
        let blocks = open_blocks(dir)?;
        let wal_dir = dir.join("wal");
        let head = Head::new(opts.head, &dir.join("chunks_head"))?;
        if let Some(maxt) = in_order_blocks_max_time(&blocks) {
            head.set_min_valid_time(maxt);
        }
        let replay = replay(&head, &wal_dir, &wbl_dir)?;
        crate::heap::release_free_memory();
        head.attach_wal(&wal_dir)?;
        // Prometheus keeps writing a WBL it found, window or not.
        if head.out_of_order_time_window() > 0 || wbl_dir.is_dir() {
            head.attach_wbl(&wbl_dir)?;
        }
        info!(
            series = head.num_series(),
            samples = replay.samples,
            out_of_order_samples = replay.wbl.samples,
            duration_ms = replay.duration.as_millis() as u64,
            "head loaded"
        );
        let db = Db {
            dir: dir.to_owned(),
            head,
            blocks: RwLock::new(blocks),
            compaction: Mutex::new(()),
            consistency: RwLock::new(()),
            replay,
            write_limit: opts.compaction_write_bytes_per_sec,
            ranges,
            retention,
            _lock: lock,
            unsupported_in_compaction: Mutex::new(Vec::new()),
            compaction_stats: CompactionStats::default(),
        };
        db.apply_retention()?;
        Ok(db)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn head(&self) -> &Head {
        &self.head
    }

    /// What the open replayed, skipped and repaired.
    pub fn replay_stats(&self) -> &ReplayStats {
        &self.replay
    }

    /// What the compactions did.
    pub fn compaction_stats(&self) -> &CompactionStats {
        &self.compaction_stats
    }

    pub fn appender(&self) -> HeadAppender<'_> {
        self.head.appender()
    }

    /// A querier over the blocks and the head for [mint, maxt] (inclusive).
    pub fn querier(&self, mint: i64, maxt: i64) -> Querier<'_> {
        Querier::new(&self.head, &self.blocks, &self.consistency, mint, maxt)
    }

    /// Holds off compactions, deletions and block-list changes while kept
    /// (a snapshot takes it to see one consistent set of blocks and head).
    pub fn compaction_guard(&self) -> parking_lot::MutexGuard<'_, ()> {
        self.compaction.lock()
    }

    /// The open blocks, sorted by min time.
    pub fn blocks(&self) -> Vec<Arc<Block>> {
        self.blocks.read().clone()
    }

    /// Whether the head spans more than 1.5 block ranges, so its oldest
    /// range can be persisted (Prometheus' `Head.compactable`).
    pub fn head_compactable(&self) -> bool {
        let (min, max) = (self.head.min_time(), self.head.max_time());
        let range = self.head.options().chunk_range;
        min <= max && max.saturating_sub(min) > range / 2 * 3
    }

    /// What the server's compaction loop does: persists the head's oldest
    /// ranges as blocks while the head is compactable (truncating the head
    /// after each and the WAL once, after the last), then merges blocks as
    /// the leveled planner says (overlaps first, then 2 h -> 6 h -> 18 h
    /// ..., and rewrites of blocks with many tombstones), then applies
    /// retention. Returns the blocks written.
    pub fn compact(&self) -> Result<Vec<BlockUlid>, DbError> {
        let stats = &self.compaction_stats;
        stats.triggered.fetch_add(1, Ordering::Relaxed);
        let compacted = self.compact_locked();
        if compacted.is_err() {
            stats.failed.fetch_add(1, Ordering::Relaxed);
        }
        compacted
    }

    /// [`Db::compact`] under the compaction lock.
    fn compact_locked(&self) -> Result<Vec<BlockUlid>, DbError> {
        let _guard = self.compaction.lock();
        let mut written = Vec::new();
        let mut persisted_until = None;
        while self.head_compactable() {
            let mint = self.head.min_time();
            let range = self.head.options().chunk_range;
            let maxt = mint.div_euclid(range) * range + range;
            written.extend(self.persist_head(mint, maxt)?);
            persisted_until = Some(maxt);
        }
        if let Some(maxt) = persisted_until {
            self.head.truncate_wal(maxt)?;
            // The truncated head's chunks and series were freed.
            crate::heap::release_free_memory();
            // As Prometheus: out-of-order data follows a head compaction.
            written.extend(self.compact_ooo_head()?);
        }
        written.extend(self.compact_blocks()?);
        self.apply_retention()?;
        Ok(written)
    }

    /// Runs the leveled planner until it has nothing to do.
    fn compact_blocks(&self) -> Result<Vec<BlockUlid>, DbError> {
        let planner = Planner::new(self.ranges.clone())
            .map_err(|e| DbError::Compact(Box::new(CompactError::Plan(e.to_string()))))?;
        let mut written = Vec::new();
        loop {
            let blocks = self.blocks();
            let skip = self.unsupported_in_compaction.lock().clone();
            let plan_blocks: Vec<PlanBlock> = blocks
                .iter()
                .map(|b| {
                    let mut meta = b.meta().clone();
                    if skip.contains(&b.ulid()) {
                        meta.compaction.failed = true;
                    }
                    PlanBlock {
                        dir: b.dir().to_owned(),
                        meta,
                    }
                })
                .collect();
            let plan = planner.plan(&plan_blocks);
            if plan.is_empty() {
                return Ok(written);
            }
            let chosen: Vec<Arc<Block>> = plan
                .iter()
                .filter_map(|d| blocks.iter().find(|b| b.dir() == d.as_path()).cloned())
                .collect();
            if chosen.len() != plan.len() {
                return Err(DbError::Compact(Box::new(CompactError::Plan(
                    "planned a block that is not open".into(),
                ))));
            }
            self.compaction_stats.ran.fetch_add(1, Ordering::Relaxed);
            let meta = match compact_blocks(
                &self.dir,
                &chosen,
                self.write_limit,
                self.head.chunk_opts.float_encoding,
            ) {
                Ok(meta) => meta,
                Err(e) => {
                    // As Prometheus: the planner leaves these blocks alone
                    // from now on, instead of failing on them every cycle.
                    // Not on disk for chunks Ferrite cannot read yet: those
                    // blocks stay exactly as they are (a later version
                    // compacts them); skipped in memory until restart, so
                    // the loop goes on to retention.
                    if matches!(
                        e,
                        CompactError::Block(BlockError::UnsupportedEncoding { .. })
                    ) {
                        warn!(error = %e, "blocks hold chunks Ferrite cannot decode; not compacting them until restart");
                        self.unsupported_in_compaction
                            .lock()
                            .extend(chosen.iter().map(|b| b.ulid()));
                    } else {
                        self.mark_compaction_failed(&chosen);
                    }
                    return Err(compact_err(e));
                }
            };
            let new_block = match &meta {
                Some(m) => {
                    Some(Block::open(&self.dir.join(m.ulid.to_string())).map_err(block_err)?)
                }
                None => None,
            };
            {
                let _g = self.consistency.write();
                let mut list = self.blocks.write();
                list.retain(|b| !chosen.iter().any(|c| c.ulid() == b.ulid()));
                if let Some(b) = new_block {
                    written.push(b.ulid());
                    list.push(Arc::new(b));
                }
                list.sort_by_key(|b| b.meta().min_time);
            }
            if let Some(m) = &meta {
                info!(ulid = %m.ulid, level = m.compaction.level, mint = m.min_time, maxt = m.max_time, parents = chosen.len(), "blocks compacted");
            }
            // The new block is in place: its parents can go (a crash before
            // this point leaves them to the next open, which deletes them).
            for b in chosen {
                let dir = b.dir().to_owned();
                drop(b);
                delete_block_dir(&dir)?;
            }
        }
    }

    /// Marks `compaction.failed` in the meta of blocks a compaction failed
    /// on, on disk and in the open list. Best effort: a block whose meta
    /// cannot be rewritten is logged and left as it was.
    fn mark_compaction_failed(&self, blocks: &[Arc<Block>]) {
        for b in blocks {
            let mut meta = b.meta().clone();
            meta.compaction.failed = true;
            let reopened = write_meta(b.dir(), &meta)
                .map_err(|e| e.to_string())
                .and_then(|_| Block::open(b.dir()).map_err(|e| e.to_string()));
            match reopened {
                Ok(marked) => {
                    warn!(ulid = %b.ulid(), "compaction failed on this block; it will not be compacted again");
                    let _g = self.consistency.write();
                    let mut list = self.blocks.write();
                    if let Some(slot) = list.iter_mut().find(|x| x.ulid() == b.ulid()) {
                        *slot = Arc::new(marked);
                    }
                }
                Err(e) => {
                    error!(ulid = %b.ulid(), error = %e, "marking a block's compaction as failed");
                }
            }
        }
    }

    /// Deletes the blocks retention (time or size) no longer keeps, and
    /// replaced or deletable ones, as Prometheus does on every reload.
    pub fn apply_retention(&self) -> Result<Vec<BlockUlid>, DbError> {
        let blocks = self.blocks();
        if blocks.is_empty() {
            return Ok(Vec::new());
        }
        let mut limits = self.retention;
        if limits.max_bytes > 0 {
            limits.head_bytes = head_size_on_disk(&self.dir).map_err(io_err(&self.dir))?;
        }
        let rblocks: Vec<RetentionBlock> = blocks
            .iter()
            .map(|b| RetentionBlock {
                meta: b.meta().clone(),
                size_bytes: b.size_bytes() as i64,
            })
            .collect();
        let doomed: Vec<BlockUlid> = blocks_to_delete(&rblocks, &limits)
            .into_iter()
            .map(|d| {
                info!(ulid = %d.ulid, reasons = ?d.reasons, "deleting block");
                d.ulid
            })
            .collect();
        if doomed.is_empty() {
            return Ok(doomed);
        }
        {
            let _g = self.consistency.write();
            self.blocks.write().retain(|b| !doomed.contains(&b.ulid()));
        }
        for b in blocks.into_iter().filter(|b| doomed.contains(&b.ulid())) {
            let dir = b.dir().to_owned();
            drop(b);
            delete_block_dir(&dir)?;
        }
        Ok(doomed)
    }

    /// Persists the whole head into blocks, one per block range (the newest
    /// ends right after the newest sample), truncating the head after each
    /// and the WAL once, after the last (no block compaction: `ferrite tsdb
    /// compact` runs [`Db::compact`] after). The ranges' blocks are written
    /// side by side, one per core ([`write_head_ranges`]), each into its
    /// temporary directory, then put in place and installed oldest first,
    /// so that a crash never leaves a newer block on disk without an
    /// older one; if one fails, the ranges after it are discarded and
    /// stay in the head.
    pub fn compact_head_fully(&self) -> Result<Vec<BlockUlid>, DbError> {
        let _guard = self.compaction.lock();
        let ranges = self.head_ranges();
        self.compaction_stats
            .ran
            .fetch_add(ranges.len() as u64, Ordering::Relaxed);
        let results = write_head_ranges(&self.head, &self.dir, &ranges, self.write_limit);
        let mut written = Vec::new();
        let mut persisted_until = None;
        let mut failure = None;
        for (&(mint, maxt), result) in ranges.iter().zip(results) {
            if failure.is_some() {
                // Written after a range that failed: dropped unpublished
                // (its directory removed), the head keeps the range.
                continue;
            }
            let published = result.map_err(compact_err).and_then(|pending| {
                pending
                    .map(PendingBlock::publish)
                    .transpose()
                    .map_err(block_err)
            });
            match published.and_then(|meta| self.install_head_block(meta, mint, maxt)) {
                Ok(ulid) => {
                    written.extend(ulid);
                    persisted_until = Some(maxt);
                }
                Err(e) => failure = Some(e),
            }
        }
        if let Some(maxt) = persisted_until {
            self.head.truncate_wal(maxt)?;
            crate::heap::release_free_memory();
        }
        if let Some(e) = failure {
            return Err(e);
        }
        written.extend(self.compact_ooo_head()?);
        Ok(written)
    }

    /// The ranges [`Db::compact_head_fully`] persists, oldest first: from
    /// the head's oldest sample to the end of its block range, then whole
    /// block ranges, the last one ending right after the newest sample
    /// (each range starts where truncating the head to the previous one
    /// would leave it, as persisting them one by one does).
    fn head_ranges(&self) -> Vec<(i64, i64)> {
        let (mut min, max) = (self.head.min_time(), self.head.max_time());
        let range = self.head.options().chunk_range;
        let mut ranges = Vec::new();
        while min <= max {
            let end = min.div_euclid(range) * range + range;
            let maxt = end.min(max.saturating_add(1));
            ranges.push((min, maxt));
            min = maxt;
            if maxt > max {
                break;
            }
        }
        ranges
    }

    /// Moves the head's out-of-order samples into blocks (one per block
    /// range they touch, possibly overlapping others; see
    /// [`crate::compact::ooo`]), then drops them from the head and the WBL.
    fn compact_ooo_head(&self) -> Result<Vec<BlockUlid>, DbError> {
        let Some(done) =
            compact_ooo_head(&self.head, &self.dir, self.write_limit).map_err(compact_err)?
        else {
            return Ok(Vec::new());
        };
        let blocks = done.blocks.len() as u64;
        self.compaction_stats
            .ran
            .fetch_add(blocks, Ordering::Relaxed);
        let mut opened = Vec::with_capacity(done.blocks.len());
        for m in &done.blocks {
            opened.push(Arc::new(
                Block::open(&self.dir.join(m.ulid.to_string())).map_err(block_err)?,
            ));
        }
        let written: Vec<BlockUlid> = opened.iter().map(|b| b.ulid()).collect();
        {
            // Blocks in and head chunks out in one step for queries.
            let _g = self.consistency.write();
            let mut blocks = self.blocks.write();
            blocks.extend(opened);
            blocks.sort_by_key(|b| b.meta().min_time);
            drop(blocks);
            done.truncate_head(&self.head);
        }
        self.head.truncate_unreferenced_chunk_files()?;
        for m in &done.blocks {
            info!(ulid = %m.ulid, mint = m.min_time, maxt = m.max_time, series = m.stats.num_series, samples = m.stats.num_samples, "out-of-order samples persisted as a block");
        }
        if let Some(seg) = done.wbl_segment {
            if let Some(w) = self.head.wbl.lock().as_mut() {
                w.truncate(seg).map_err(HeadError::from)?;
            }
        }
        Ok(written)
    }

    /// Deletes the samples of the series matching `matchers` in [mint, maxt]
    /// (inclusive) from blocks and head: tombstones, honoured by queries
    /// at once and applied for good by [`Db::clean_tombstones`] or the next
    /// compaction of the block. Returns the number of (block or head) series
    /// affected.
    pub fn delete(
        &self,
        matchers: &[ferrite_model::Matcher],
        mint: i64,
        maxt: i64,
    ) -> Result<usize, DbError> {
        let _guard = self.compaction.lock();
        let mut n = 0;
        let blocks = self.blocks();
        for (i, b) in blocks.iter().enumerate() {
            if !b.overlaps(mint, maxt) {
                continue;
            }
            let (reopened, k) = b.delete(matchers, mint, maxt).map_err(block_err)?;
            if k > 0 {
                self.blocks.write()[i] = Arc::new(reopened);
                n += k;
            }
        }
        let refs = self.head.querier(mint, maxt).postings(matchers);
        n += self.head.delete(&refs, mint, maxt)?;
        Ok(n)
    }

    /// Rewrites every block that has tombstones without the deleted samples
    /// (the rewritten block replaces it; a block left empty is dropped).
    pub fn clean_tombstones(&self) -> Result<usize, DbError> {
        let _guard = self.compaction.lock();
        let mut rewritten = 0;
        for b in self.blocks() {
            if b.tombstones().is_empty() {
                continue;
            }
            let meta = crate::compact::rewrite_block(
                &self.dir,
                &b,
                self.write_limit,
                self.head.chunk_opts.float_encoding,
            )
            .map_err(compact_err)?;
            let mut blocks = self.blocks.write();
            blocks.retain(|x| x.ulid() != b.ulid());
            if let Some(m) = meta {
                let nb = Block::open(&self.dir.join(m.ulid.to_string())).map_err(block_err)?;
                blocks.push(Arc::new(nb));
                blocks.sort_by_key(|x| x.meta().min_time);
            }
            drop(blocks);
            delete_block_dir(b.dir())?;
            rewritten += 1;
        }
        Ok(rewritten)
    }

    /// Writes [mint, maxt) of the head as a block, then truncates the head
    /// (the caller truncates the WAL: once for all the ranges it persists,
    /// so one checkpoint reads the old segments instead of one per range).
    fn persist_head(&self, mint: i64, maxt: i64) -> Result<Option<BlockUlid>, DbError> {
        self.compaction_stats.ran.fetch_add(1, Ordering::Relaxed);
        let meta = persist_head_range(&self.head, &self.dir, mint, maxt, self.write_limit)
            .map_err(compact_err)?;
        self.install_head_block(meta, mint, maxt)
    }

    /// Opens the block written from the head's [mint, maxt) (if it had
    /// samples there), adds it to the block list and truncates the head to
    /// `maxt`, in one step for queriers.
    fn install_head_block(
        &self,
        meta: Option<BlockMeta>,
        mint: i64,
        maxt: i64,
    ) -> Result<Option<BlockUlid>, DbError> {
        let block = match &meta {
            Some(m) => Some(Block::open(&self.dir.join(m.ulid.to_string())).map_err(block_err)?),
            None => None,
        };
        let ulid = {
            let _g = self.consistency.write();
            let ulid = block.map(|block| {
                let ulid = block.ulid();
                let mut blocks = self.blocks.write();
                blocks.push(Arc::new(block));
                blocks.sort_by_key(|b| b.meta().min_time);
                ulid
            });
            self.head.truncate_memory(maxt)?;
            ulid
        };
        if let Some(m) = &meta {
            info!(ulid = %m.ulid, mint, maxt, series = m.stats.num_series, samples = m.stats.num_samples, "head range persisted as a block");
        }
        Ok(ulid)
    }

    /// Flushes and closes the WAL and head chunks.
    pub fn close(self) -> Result<(), DbError> {
        self.head.close()?;
        Ok(())
    }
}

/// The newest end of the blocks holding in-order samples (Prometheus'
/// `inOrderBlocksMaxTime`): the head's in-order samples start there.
/// Blocks made only of out-of-order samples do not count, or the in-order
/// samples the head still holds for their range would be dropped.
fn in_order_blocks_max_time(blocks: &[Arc<Block>]) -> Option<i64> {
    blocks
        .iter()
        .filter(|b| b.meta().compaction.bounds_in_order_data())
        .map(|b| b.meta().max_time)
        .max()
}

fn block_err(e: BlockError) -> DbError {
    DbError::Block(Box::new(e))
}

fn compact_err(e: CompactError) -> DbError {
    DbError::Compact(Box::new(e))
}

/// Removes leftovers of interrupted block writes and deletions, deletes
/// blocks that a compaction replaced (named as parents by another block, or
/// marked deletable), and opens the rest, sorted by min time.
fn open_blocks(dir: &Path) -> Result<Vec<Arc<Block>>, DbError> {
    let mut dirs = Vec::new();
    for e in fs::read_dir(dir).map_err(io_err(dir))? {
        let e = e.map_err(io_err(dir))?;
        let name = e.file_name().to_string_lossy().into_owned();
        let path = e.path();
        if !path.is_dir() {
            continue;
        }
        if name.ends_with(TMP_FOR_CREATION) || name.ends_with(TMP_FOR_DELETION) {
            warn!(dir = %path.display(), "removing a block directory left by an interrupted write or deletion");
            fs::remove_dir_all(&path).map_err(io_err(&path))?;
            continue;
        }
        if name.parse::<BlockUlid>().is_ok() && path.join("meta.json").exists() {
            dirs.push(path);
        }
    }
    let mut blocks = Vec::new();
    for d in dirs {
        blocks.push(Block::open(&d).map_err(block_err)?);
    }
    let replaced: std::collections::HashSet<BlockUlid> = blocks
        .iter()
        .flat_map(|b| b.meta().compaction.parents.iter().map(|p| p.ulid))
        .collect();
    let mut kept = Vec::new();
    for b in blocks {
        if replaced.contains(&b.ulid()) || b.meta().compaction.deletable {
            let path = b.dir().to_owned();
            drop(b);
            delete_block_dir(&path)?;
            continue;
        }
        kept.push(Arc::new(b));
    }
    kept.sort_by_key(|b| b.meta().min_time);
    Ok(kept)
}

/// Deletes a block directory atomically: renamed out of the way first, so a
/// crash never leaves a half-deleted block under its ULID.
pub(crate) fn delete_block_dir(path: &Path) -> Result<(), DbError> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(TMP_FOR_DELETION);
    let tmp = PathBuf::from(tmp);
    fs::rename(path, &tmp).map_err(io_err(path))?;
    fs::remove_dir_all(&tmp).map_err(io_err(&tmp))?;
    Ok(())
}

impl Db {
    /// The head's cardinality lists for `/api/v1/status/tsdb` (Prometheus'
    /// `DB.Head().Stats("__name__", limit)`), each at most `limit` long.
    pub fn head_cardinality(&self, limit: usize) -> crate::head::CardinalityStats {
        self.head.cardinality_stats("__name__", limit)
    }
}
