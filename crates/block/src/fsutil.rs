//! Small file-system helpers shared by the writers.

use std::ffi::OsString;
use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Fsyncs a directory so that entries created or renamed in it survive a
/// crash.
pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    File::open(dir)?.sync_all()
}

/// The directory holding `path` (`.` for a bare file name).
pub(crate) fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// `path` with `.tmp` appended to its file name.
pub(crate) fn tmp_path(path: &Path) -> PathBuf {
    let mut name: OsString = path.file_name().map(OsString::from).unwrap_or_default();
    name.push(".tmp");
    path.with_file_name(name)
}

/// Replaces `path` with `bytes` atomically, as Prometheus replaces
/// `meta.json` and `tombstones`: write `<path>.tmp`, fsync it, rename it
/// over `path`, fsync the directory. A reader sees the old file or the new
/// one, never a mix; a crash leaves at most a stray `.tmp`, which is
/// removed on the next write.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let tmp = tmp_path(path);
    let result = (|| {
        let mut f = File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        fs::rename(&tmp, path)?;
        sync_dir(parent_dir(path))
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}
