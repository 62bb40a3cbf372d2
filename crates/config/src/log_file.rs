//! A log file a configuration names (`global.query_log_file`,
//! `scrape_failure_log_file`): opened as Prometheus opens its JSON log
//! files (appending, created if missing), refused with Prometheus' words,
//! and written a whole line at a time.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// A log file taking whole lines.
#[derive(Debug)]
pub struct LogFile {
    file: Mutex<File>,
}

/// A log file that could not be opened (Prometheus' words).
#[derive(Debug, thiserror::Error)]
#[error(
    "can't create json log file: open {}: {}",
    path.display(),
    crate::go_os_reason(source)
)]
pub struct LogFileError {
    path: PathBuf,
    #[source]
    source: std::io::Error,
}

impl LogFile {
    /// Opens `path` for appending, creating it if missing.
    pub fn open(path: &Path) -> Result<Self, LogFileError> {
        let file = OpenOptions::new()
            .append(true)
            .create(true)
            .open(path)
            .map_err(|source| LogFileError {
                path: path.to_owned(),
                source,
            })?;
        Ok(LogFile {
            file: Mutex::new(file),
        })
    }

    /// Appends `line` (ending in a newline) in one write, so that lines
    /// written at once from several threads never mix.
    pub fn write_line(&self, line: &[u8]) -> std::io::Result<()> {
        self.file
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .write_all(line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_appended_and_a_missing_directory_is_refused() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("q.log");
        std::fs::write(&path, "before\n").expect("write");
        let log = LogFile::open(&path).expect("opens");
        log.write_line(b"one\n").expect("writes");
        log.write_line(b"two\n").expect("writes");
        assert_eq!(
            std::fs::read_to_string(&path).expect("read"),
            "before\none\ntwo\n"
        );
        let missing = dir.path().join("no/such/q.log");
        let err = LogFile::open(&missing).expect_err("no directory");
        assert_eq!(
            err.to_string(),
            format!(
                "can't create json log file: open {}: no such file or directory",
                missing.display()
            )
        );
    }
}
