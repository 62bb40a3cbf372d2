//! The scrape failure log (`scrape_failure_log_file`, global or per job):
//! every failed scrape of a job's targets as one JSON line, the line
//! Prometheus writes:
//!
//! ```text
//! {"time":"2027-01-15T08:00:00.04832181Z","level":"ERROR",
//!  "msg":"server returned HTTP status 500 Internal Server Error",
//!  "job_name":"node","target":"http://10.0.0.1:9100/metrics"}
//! ```
//!
//! `msg` is the scrape's error as `/api/v1/targets` shows it, `target` the
//! target's scrape URL. Prometheus' lines also carry `"source"` (its Go
//! file and line) after `level`; Ferrite's do not. As in Prometheus, only
//! a scrape that failed to fetch is logged: not one whose body failed to
//! append (a sample limit, a parse error), nor one failed by the job's
//! `target_limit`.
//!
//! Every configuration apply opens each distinct path the jobs name again
//! (appending, creating it if missing), one file shared by the jobs naming
//! it; a job with no path logs nothing. A path that cannot be opened fails
//! the apply before anything changed.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use ferrite_config::log_file::{LogFile, LogFileError};
use ferrite_config::Config;
use ferrite_model::goquote::slog_json_string_into;
use ferrite_model::gotime::format_rfc3339_nano;
use tracing::debug;

/// The line of a failed scrape at `now`, ending in a newline.
fn render(now: SystemTime, job: &str, target: &str, error: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(128 + job.len() + target.len() + error.len());
    out.extend_from_slice(b"{\"time\":\"");
    out.extend_from_slice(format_rfc3339_nano(now).as_bytes());
    out.extend_from_slice(b"\",\"level\":\"ERROR\",\"msg\":");
    slog_json_string_into(error, &mut out);
    out.extend_from_slice(b",\"job_name\":");
    slog_json_string_into(job, &mut out);
    out.extend_from_slice(b",\"target\":");
    slog_json_string_into(target, &mut out);
    out.extend_from_slice(b"}\n");
    out
}

/// The failure log files of one configuration, by the path the jobs name.
#[derive(Debug, Default)]
pub struct FailureLogs {
    by_path: HashMap<String, Arc<LogFile>>,
}

impl FailureLogs {
    /// Opens every distinct non-empty `scrape_failure_log_file` of `cfg`'s
    /// jobs; the first that cannot be opened is the error.
    pub fn open(cfg: &Config) -> Result<Self, LogFileError> {
        let mut by_path = HashMap::new();
        for job in &cfg.scrape_configs {
            let path = &job.scrape_failure_log_file;
            if path.is_empty() || by_path.contains_key(path) {
                continue;
            }
            let file = LogFile::open(Path::new(path))?;
            by_path.insert(path.clone(), Arc::new(file));
        }
        Ok(FailureLogs { by_path })
    }

    /// The file opened for `path` (none for `""`).
    pub fn get(&self, path: &str) -> Option<Arc<LogFile>> {
        self.by_path.get(path).cloned()
    }
}

/// A job's failure log as its loops see it: the file the last apply gave
/// the job (if any), changed in place so that running loops log to the
/// new one.
#[derive(Debug, Clone)]
pub struct JobFailureLog {
    job: Arc<str>,
    file: Arc<Mutex<Option<Arc<LogFile>>>>,
}

impl JobFailureLog {
    /// No file yet, for the job `job`.
    pub fn new(job: &str) -> Self {
        JobFailureLog {
            job: Arc::from(job),
            file: Arc::new(Mutex::new(None)),
        }
    }

    /// Makes the job's loops log to `file` (none: not at all).
    pub fn set(&self, file: Option<Arc<LogFile>>) {
        *self.file.lock().unwrap_or_else(|p| p.into_inner()) = file;
    }

    /// Logs a failed scrape of `target` (its scrape URL) with `error`, if
    /// the job has a file. A line that cannot be written is dropped, as
    /// Prometheus drops it.
    pub fn log(&self, target: &str, error: &str) {
        let file = self.file.lock().unwrap_or_else(|p| p.into_inner()).clone();
        if let Some(file) = file {
            let line = render(SystemTime::now(), &self.job, target, error);
            if let Err(e) = file.write_line(&line) {
                debug!(job = %self.job, error = %e, "writing the scrape failure log failed");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn a_line_has_prometheus_keys_in_its_order() {
        let now = UNIX_EPOCH + Duration::new(1_800_000_000, 48_321_810);
        let line = render(
            now,
            "node",
            "http://10.0.0.1:9100/metrics?a=%22b%22",
            "Get \"http://10.0.0.1:9100/metrics\": context deadline exceeded",
        );
        let text = String::from_utf8(line).expect("utf-8");
        assert_eq!(
            text,
            "{\"time\":\"2027-01-15T08:00:00.04832181Z\",\"level\":\"ERROR\",\
             \"msg\":\"Get \\\"http://10.0.0.1:9100/metrics\\\": context deadline exceeded\",\
             \"job_name\":\"node\",\"target\":\"http://10.0.0.1:9100/metrics?a=%22b%22\"}\n"
        );
    }

    #[test]
    fn one_file_per_path_and_none_for_an_empty_one() {
        let dir = tempfile::tempdir().expect("temp dir");
        let shared = dir.path().join("shared.log");
        let own = dir.path().join("own.log");
        let cfg = Config::parse(
            &format!(
                "global:\n  scrape_failure_log_file: {}\n\
                 scrape_configs:\n\
                 - job_name: a\n\
                 - job_name: b\n\
                 - job_name: c\n  scrape_failure_log_file: {}\n",
                shared.display(),
                own.display()
            ),
            "t.yml",
        )
        .expect("config");
        let logs = FailureLogs::open(&cfg).expect("opens");
        assert_eq!(logs.by_path.len(), 2);
        assert!(logs.get("").is_none());
        let a = logs.get(&cfg.scrape_configs[0].scrape_failure_log_file);
        let b = logs.get(&cfg.scrape_configs[1].scrape_failure_log_file);
        assert!(matches!((&a, &b), (Some(a), Some(b)) if Arc::ptr_eq(a, b)));
        assert!(own.exists() && shared.exists());
    }

    #[test]
    fn a_file_that_cannot_be_opened_is_prometheus_error() {
        let dir = tempfile::tempdir().expect("temp dir");
        let missing = dir.path().join("no/such/dir/f.log");
        let err = LogFile::open(&missing).expect_err("cannot open");
        assert_eq!(
            err.to_string(),
            format!(
                "can't create json log file: open {}: no such file or directory",
                missing.display()
            )
        );
        let err = LogFile::open(dir.path()).expect_err("a directory");
        assert!(err.to_string().ends_with(": is a directory"), "{err}");
    }

    #[test]
    fn lines_are_appended_to_what_the_file_holds() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("f.log");
        std::fs::write(&path, "before\n").expect("write");
        let log = JobFailureLog::new("j");
        log.log("http://x/metrics", "not logged: no file yet");
        log.set(Some(Arc::new(LogFile::open(&path).expect("opens"))));
        log.log("http://x/metrics", "boom");
        log.set(None);
        log.log("http://x/metrics", "not logged: no file any more");
        let text = std::fs::read_to_string(&path).expect("read");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        let v: serde_json::Value = serde_json::from_str(lines[1]).expect("JSON");
        assert_eq!(v["msg"], "boom");
        assert_eq!(v["job_name"], "j");
        assert_eq!(v["target"], "http://x/metrics");
    }
}
