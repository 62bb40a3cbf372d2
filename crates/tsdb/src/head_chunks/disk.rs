//! File-system helpers for the chunks directory: naming, listing, creating
//! a new file atomically, positional writes and mapping.
//!
//! Files are only ever replaced by rename or removed by unlink, never
//! shrunk in place: a reader may still hold a slice of an old mapping, and
//! on Linux a mapping of an unlinked or renamed-over file stays valid,
//! whereas touching a page past the end of a truncated file raises SIGBUS.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use memmap2::Mmap;

use super::HeadChunksError;

/// Name Prometheus gives file `seq`: at least six digits, zero padded.
pub fn file_name(seq: u32) -> String {
    format!("{seq:06}")
}

pub fn io_err<'a>(
    op: &'static str,
    path: &'a Path,
) -> impl FnOnce(io::Error) -> HeadChunksError + 'a {
    move |source| HeadChunksError::Io {
        op,
        path: path.to_path_buf(),
        source,
    }
}

/// A chunks file found in the directory.
pub struct Listed {
    pub seq: u32,
    pub path: PathBuf,
}

/// Lists the chunk files of `dir` (all-digit names) in sequence order and
/// removes leftovers of an interrupted [`create_file`].
pub fn list_files(dir: &Path) -> Result<Vec<Listed>, HeadChunksError> {
    let mut found: Vec<Listed> = Vec::new();
    for entry in fs::read_dir(dir).map_err(io_err("read dir", dir))? {
        let entry = entry.map_err(io_err("read dir", dir))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let path = entry.path();
        if let Some(stem) = name.strip_suffix(".tmp") {
            if is_digits(stem) {
                tracing::warn!(file = %path.display(), "removing leftover temporary head chunks file");
                fs::remove_file(&path).map_err(io_err("remove", &path))?;
            }
            continue;
        }
        if !is_digits(name) {
            continue;
        }
        let Ok(seq) = name.parse::<u32>() else {
            tracing::warn!(file = %path.display(), "ignoring head chunks file: sequence number too large");
            continue;
        };
        found.push(Listed { seq, path });
    }
    found.sort_by(|a, b| (a.seq, a.path.as_os_str()).cmp(&(b.seq, b.path.as_os_str())));
    // Two names for one number ("1" and "000001"): keep the canonical one.
    found.dedup_by(|later, kept| {
        if later.seq != kept.seq {
            return false;
        }
        let canonical = file_name(kept.seq);
        if later.path.file_name().and_then(|n| n.to_str()) == Some(canonical.as_str()) {
            std::mem::swap(later, kept);
        }
        tracing::warn!(file = %later.path.display(), "ignoring duplicate head chunks file name");
        true
    });
    Ok(found)
}

fn is_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// Creates file `seq` holding `contents`, zero-extended to `min_len`
/// (Prometheus preallocates too), through a temporary file and a rename so
/// the final name never holds a partial header. Returns the file opened
/// for reading and writing.
pub fn create_file(
    dir: &Path,
    seq: u32,
    contents: &[u8],
    min_len: u64,
) -> Result<(PathBuf, File), HeadChunksError> {
    let path = dir.join(file_name(seq));
    let tmp = dir.join(format!("{}.tmp", file_name(seq)));
    let result = (|| {
        let mut f = File::create(&tmp).map_err(io_err("create", &tmp))?;
        io::Write::write_all(&mut f, contents).map_err(io_err("write", &tmp))?;
        if (contents.len() as u64) < min_len {
            f.set_len(min_len).map_err(io_err("preallocate", &tmp))?;
        }
        f.sync_all().map_err(io_err("fsync", &tmp))?;
        fs::rename(&tmp, &path).map_err(io_err("rename", &tmp))?;
        sync_dir(dir)
    })();
    if let Err(e) = result {
        // Best effort: a leftover is removed at the next open anyway.
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
        .map_err(io_err("open", &path))?;
    Ok((path, f))
}

/// Makes renames and removals in `dir` durable.
pub fn sync_dir(dir: &Path) -> Result<(), HeadChunksError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_err("fsync dir", dir))
}

/// Writes all of `buf` at `offset`. Positional, so a retry after a failed
/// or partial write puts the same bytes at the same place.
pub fn write_all_at(f: &File, buf: &[u8], offset: u64, path: &Path) -> Result<(), HeadChunksError> {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::write_all_at(f, buf, offset).map_err(io_err("write", path))
    }
    #[cfg(windows)]
    {
        let mut done = 0usize;
        while done < buf.len() {
            let n =
                std::os::windows::fs::FileExt::seek_write(f, &buf[done..], offset + done as u64)
                    .map_err(io_err("write", path))?;
            if n == 0 {
                return Err(io_err("write", path)(io::ErrorKind::WriteZero.into()));
            }
            done += n;
        }
        Ok(())
    }
}

/// Maps the whole of `f` read-only.
pub fn map_file(f: &File, path: &Path) -> Result<Arc<Mmap>, HeadChunksError> {
    // SAFETY: the mapping is read-only and we never shrink or rewrite bytes
    // of a chunks file that a reader may see (see the module docs); another
    // process modifying the file is outside what any mmap user can guard
    // against, and Prometheus makes the same assumption.
    let map = unsafe { Mmap::map(f) }.map_err(io_err("mmap", path))?;
    Ok(Arc::new(map))
}
