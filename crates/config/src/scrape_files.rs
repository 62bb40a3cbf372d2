//! `scrape_config_files`: jobs kept in files of their own, read as
//! Prometheus' `Config.GetScrapeConfigs` reads them at start-up and at
//! every reload.
//!
//! Each pattern is expanded as Go's `filepath.Glob` does; each file must
//! hold only `scrape_configs:`; each job is validated against the main
//! file's `global:` and must have a job name not used before (in the main
//! file or an earlier file); its relative file names are made relative to
//! its own file's directory. An error names the file by its absolute
//! path, as Prometheus' `fileErr` does.

use std::path::Path;

use serde::Deserialize;

use crate::glob::glob;
use crate::relabel::go_quote;
use crate::scrape::{ScrapeConfig, ScrapeSection};
use crate::{go_open_error, Config};

/// A `scrape_config_files` file (`config.ScrapeConfigs`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScrapeConfigsFile {
    scrape_configs: Option<Vec<Option<ScrapeSection>>>,
}

impl Config {
    /// The main file's jobs followed by those of `scrape_config_files`,
    /// validated; the error is Prometheus' text.
    pub fn scrape_configs_with_files(&self) -> Result<Vec<ScrapeConfig>, String> {
        let mut jobs = self.scrape_configs.clone();
        jobs.extend(self.file_jobs()?);
        Ok(jobs)
    }

    /// This configuration with the jobs of `scrape_config_files` appended
    /// to `scrape_configs` (what the server runs).
    pub fn with_scrape_config_files(mut self) -> Result<Config, String> {
        let more = self.file_jobs()?;
        self.scrape_configs.extend(more);
        Ok(self)
    }

    /// The jobs of `scrape_config_files`, checked against the main file's.
    fn file_jobs(&self) -> Result<Vec<ScrapeConfig>, String> {
        let mut jobs = Vec::new();
        // Where each job name was first found.
        let mut found: Vec<(String, String)> = self
            .scrape_configs
            .iter()
            .map(|j| (j.job_name.clone(), "main config file".to_string()))
            .collect();
        for pattern in &self.scrape_config_files {
            let files = glob(pattern).map_err(|e| {
                format!(
                    "error retrieving scrape config files for {}: {e}",
                    go_quote(pattern)
                )
            })?;
            for file in files {
                let file_err = |e: String| format!("{}: {e}", go_quote(&absolute(&file)));
                let text = std::fs::read_to_string(&file)
                    .map_err(|e| file_err(go_open_error(&file, &e)))?;
                let parsed: ScrapeConfigsFile = crate::yaml::from_str(&text).map_err(file_err)?;
                let dir = match Path::new(&file).parent() {
                    Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
                    _ => Path::new(".").to_path_buf(),
                };
                for section in parsed.scrape_configs.unwrap_or_default() {
                    let section = section
                        .ok_or_else(|| file_err("empty or null scrape config section".into()))?;
                    let mut job = section.validate(&self.global).map_err(file_err)?;
                    if let Some((_, first)) = found.iter().find(|(name, _)| *name == job.job_name) {
                        return Err(file_err(format!(
                            "found multiple scrape configs with job name {}, first found in {first}",
                            go_quote(&job.job_name)
                        )));
                    }
                    found.push((job.job_name.clone(), go_quote(&absolute(&file))));
                    job.set_directory(&dir);
                    jobs.push(job);
                }
            }
        }
        Ok(jobs)
    }
}

/// Go's `filepath.Abs` (the path as given if the working directory is
/// unknown).
fn absolute(path: &str) -> String {
    if Path::new(path).is_absolute() {
        return crate::join_dir(Path::new("/"), path);
    }
    match std::env::current_dir() {
        Ok(cwd) => crate::join_dir(&cwd, path),
        Err(_) => path.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> String {
        let p = dir.join(name);
        std::fs::write(&p, text).expect("write");
        p.display().to_string()
    }

    #[test]
    fn jobs_of_files_are_appended_validated_and_unique() {
        let tmp = tempfile::tempdir().expect("tmp");
        let d = tmp.path();
        write(
            d,
            "a.yml",
            "scrape_configs:\n  - job_name: a\n    tls_config: {ca_file: ca.pem}\n    static_configs: [{targets: ['x:1']}]\n",
        );
        write(d, "b.yml", "scrape_configs:\n  - job_name: b\n");
        // The main file in a directory of its own: the pattern is
        // relative to it, the jobs' files to theirs.
        let sub = d.join("main");
        std::fs::create_dir(&sub).expect("mkdir");
        let cfg_text = "global: {scrape_interval: 7s}\nscrape_config_files: ['../*.yml']\nscrape_configs:\n  - job_name: main\n";
        let main = write(&sub, "prometheus.yml", cfg_text);
        let cfg = Config::load(Path::new(&main)).expect("loads");
        let jobs = cfg.scrape_configs_with_files().expect("jobs");
        let names: Vec<&str> = jobs.iter().map(|j| j.job_name.as_str()).collect();
        assert_eq!(names, ["main", "a", "b"]);
        assert_eq!(jobs[1].scrape_interval_ms, 7000);
        assert_eq!(
            jobs[1].http_client.tls_config.ca_file,
            d.join("ca.pem").display().to_string()
        );

        write(d, "c.yml", "scrape_configs:\n  - job_name: main\n");
        let err = cfg.scrape_configs_with_files().expect_err("duplicate");
        assert!(
            err.ends_with(": found multiple scrape configs with job name \"main\", first found in main config file"),
            "{err}"
        );
        write(d, "c.yml", "scrape_configs:\n  - job_name: a\n");
        let err = cfg.scrape_configs_with_files().expect_err("duplicate");
        assert!(err.contains("first found in \""), "{err}");
        write(
            d,
            "c.yml",
            "scrape_configs:\n  - job_name: c\n    bogus: 1\n",
        );
        let err = cfg.scrape_configs_with_files().expect_err("unknown field");
        assert!(
            err.contains("field bogus not found in type config.ScrapeConfig"),
            "{err}"
        );
        write(d, "c.yml", "global: {}\n");
        let err = cfg.scrape_configs_with_files().expect_err("not a job file");
        assert!(
            err.contains("field global not found in type config.ScrapeConfigs"),
            "{err}"
        );
    }
}
