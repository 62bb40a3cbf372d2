//! Opening a data directory.
//!
//! A data directory has Prometheus' layout: `wal/` (segments and
//! checkpoints), `chunks_head/` (closed head chunks) and, later, block
//! directories. [`Db::open`] takes the directory lock, loads the head chunks,
//! replays the WAL (repairing a corrupt tail) and then opens a fresh WAL
//! segment for new writes, exactly as the server starts.

use std::fs::{self, File};
use std::path::{Path, PathBuf};

use tracing::{info, warn};

use crate::error::DbError;
use crate::head::{Head, HeadAppender, HeadOptions};
use crate::querier::HeadQuerier;
use crate::replay::{replay, ReplayStats};

/// Settings of a database.
#[derive(Clone, Debug, Default)]
pub struct DbOptions {
    pub head: HeadOptions,
}

/// An open data directory.
pub struct Db {
    dir: PathBuf,
    head: Head,
    replay: ReplayStats,
    _lock: File,
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> DbError + '_ {
    move |source| DbError::Io {
        path: path.to_owned(),
        source,
    }
}

impl Db {
    /// Opens (creating if needed) the data directory `dir`.
    pub fn open(dir: &Path, opts: DbOptions) -> Result<Db, DbError> {
        fs::create_dir_all(dir).map_err(io_err(dir))?;
        let lock_path = dir.join("lock");
        let lock = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(io_err(&lock_path))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => return Err(DbError::Locked(dir.to_owned())),
            Err(std::fs::TryLockError::Error(e)) => return Err(io_err(&lock_path)(e)),
        }
        let wbl = dir.join("wbl");
        if fs::read_dir(&wbl).is_ok_and(|mut d| d.next().is_some()) {
            warn!(dir = %wbl.display(), "out-of-order WAL (wbl/) is not replayed yet; its samples are not loaded");
        }
        let wal_dir = dir.join("wal");
        let head = Head::new(opts.head, &dir.join("chunks_head"))?;
        let replay = replay(&head, &wal_dir)?;
        head.attach_wal(&wal_dir)?;
        info!(
            series = head.num_series(),
            samples = replay.samples,
            duration_ms = replay.duration.as_millis() as u64,
            "head loaded"
        );
        Ok(Db {
            dir: dir.to_owned(),
            head,
            replay,
            _lock: lock,
        })
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

    pub fn appender(&self) -> HeadAppender<'_> {
        self.head.appender()
    }

    pub fn querier(&self, mint: i64, maxt: i64) -> HeadQuerier<'_> {
        self.head.querier(mint, maxt)
    }

    /// Flushes and closes the WAL and head chunks.
    pub fn close(self) -> Result<(), DbError> {
        self.head.close()?;
        Ok(())
    }
}
