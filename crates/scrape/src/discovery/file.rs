//! File discovery (`file_sd_configs`): target groups listed in JSON or
//! YAML files, found by paths or globs, re-read when they change.
//!
//! Prometheus watches the files' directories with inotify and re-reads
//! everything every `refresh_interval`; its discovery manager then passes
//! changes on at most every five seconds. Here the files are checked every
//! [`POLL`] (a change of modification time or size, or a file appearing or
//! going away, re-reads it) and all are re-read every `refresh_interval`, so
//! a change takes effect within the same five seconds, without a watcher.
//!
//! As in Prometheus, each group gets `__meta_filepath` (the file's path);
//! a file that cannot be read or parsed keeps the groups it had (the error
//! is logged), and a file that goes away takes its groups with it.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

use ferrite_config::discovery::{read_target_groups, FileSdConfig};
use ferrite_config::TargetGroup;
use tracing::warn;

use crate::discovery::metrics::DiscoveryMetrics;

/// How often files are checked for changes.
pub const POLL: Duration = Duration::from_secs(5);

/// The label holding a group's file.
pub const FILEPATH_LABEL: &str = "__meta_filepath";

/// What a file looked like when last read.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp {
    modified: Option<SystemTime>,
    len: u64,
}

/// One job's file discovery: its configurations and the groups read.
#[derive(Debug)]
pub struct FileDiscovery {
    configs: Vec<FileSdConfig>,
    /// Groups by file, and the file's stamp when read.
    files: BTreeMap<PathBuf, (Stamp, Vec<TargetGroup>)>,
    /// When every file was last re-read.
    last_full: Option<Instant>,
}

impl FileDiscovery {
    /// Discovery for a job's `file_sd_configs`.
    pub fn new(configs: Vec<FileSdConfig>) -> Self {
        FileDiscovery {
            configs,
            files: BTreeMap::new(),
            last_full: None,
        }
    }

    /// The shortest `refresh_interval` of the configurations.
    fn refresh_interval(&self) -> Duration {
        let ms = self
            .configs
            .iter()
            .map(|c| c.refresh_interval_ms)
            .min()
            .unwrap_or(ferrite_config::discovery::FILE_SD_REFRESH_MS);
        Duration::from_millis(u64::try_from(ms).unwrap_or(0).max(1))
    }

    /// The files the paths and globs name now.
    fn list_files(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for c in &self.configs {
            for pattern in &c.files {
                match glob::glob(pattern) {
                    Ok(paths) => out.extend(paths.flatten()),
                    Err(e) => warn!(glob = %pattern, error = %e, "error expanding glob"),
                }
            }
        }
        out.sort();
        out.dedup();
        out
    }

    /// Checks the files, re-reading changed ones (all of them when the
    /// refresh interval has passed). True if the groups changed.
    pub fn refresh(&mut self) -> bool {
        let started = Instant::now();
        let full = self
            .last_full
            .is_none_or(|t| t.elapsed() >= self.refresh_interval());
        if full {
            self.last_full = Some(Instant::now());
        }
        let listed = self.list_files();
        let mut changed = false;
        let before = self.files.len();
        self.files.retain(|p, _| listed.contains(p));
        changed |= self.files.len() != before;
        // A scan as Prometheus counts one: every refresh interval, and
        // whenever a file changed (Prometheus' watch fires).
        let mut scanned = full || changed;
        for path in listed {
            let stamp = match std::fs::metadata(&path) {
                Ok(m) => Stamp {
                    modified: m.modified().ok(),
                    len: m.len(),
                },
                Err(e) => {
                    warn!(path = %path.display(), error = %e, "error reading file");
                    continue;
                }
            };
            if !full && self.files.get(&path).is_some_and(|(s, _)| *s == stamp) {
                continue;
            }
            scanned = true;
            let read = std::fs::read_to_string(&path)
                .map_err(|e| e.to_string())
                .and_then(|text| read_target_groups(&path, &text));
            match read {
                Ok(mut groups) => {
                    let shown = path.display().to_string();
                    let mtime = stamp
                        .modified
                        .and_then(|m| m.duration_since(std::time::UNIX_EPOCH).ok())
                        .map_or(0.0, |d| d.as_secs_f64());
                    DiscoveryMetrics::global().file_read(&shown, mtime);
                    for g in &mut groups {
                        g.labels.set(FILEPATH_LABEL, &shown);
                    }
                    let old = self.files.insert(path, (stamp, groups.clone()));
                    changed |= old.is_none_or(|(_, g)| g != groups);
                }
                Err(e) => {
                    DiscoveryMetrics::global().file_read_error();
                    warn!(path = %path.display(), error = %e, "error reading file");
                }
            }
        }
        if scanned {
            DiscoveryMetrics::global().file_scanned(started.elapsed().as_secs_f64());
        }
        changed
    }

    /// Every group read, file by file.
    pub fn groups(&self) -> Vec<TargetGroup> {
        self.files
            .values()
            .flat_map(|(_, groups)| groups.iter().cloned())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(dir: &std::path::Path, pattern: &str) -> FileSdConfig {
        FileSdConfig {
            files: vec![dir.join(pattern).display().to_string()],
            refresh_interval_ms: 300_000,
        }
    }

    #[test]
    fn files_are_read_changed_kept_on_error_and_dropped() {
        let dir = tempfile::tempdir().expect("tempdir");
        let a = dir.path().join("a.json");
        std::fs::write(&a, r#"[{"targets": ["x:1"], "labels": {"env": "p"}}]"#).expect("write");
        let mut d = FileDiscovery::new(vec![config(dir.path(), "*.json")]);
        assert!(d.refresh());
        let g = d.groups();
        assert_eq!(g.len(), 1);
        assert_eq!(g[0].targets, ["x:1"]);
        assert_eq!(g[0].labels.get(FILEPATH_LABEL), a.display().to_string());
        assert!(!d.refresh(), "nothing changed");

        // A broken file keeps what it had.
        std::fs::write(&a, "[{").expect("write");
        assert!(!d.refresh());
        assert_eq!(d.groups().len(), 1);

        // A new file and a changed one.
        std::fs::write(&a, r#"[{"targets": ["x:1", "x:2"]}]"#).expect("write");
        std::fs::write(dir.path().join("b.json"), r#"[{"targets": ["y:1"]}]"#).expect("write");
        assert!(d.refresh());
        let targets: Vec<String> = d.groups().into_iter().flat_map(|g| g.targets).collect();
        assert_eq!(targets, ["x:1", "x:2", "y:1"]);

        // A removed file takes its groups.
        std::fs::remove_file(&a).expect("remove");
        assert!(d.refresh());
        assert_eq!(d.groups().len(), 1);
    }
}
