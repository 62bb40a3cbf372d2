//! Ferrite's side of the scrape target cross-check against Prometheus
//! (`interop/scrape_targets_test.go`, whose `cmd/promtargets` is
//! Prometheus' side; the output is described there): each file loaded and
//! every job's static targets through [`ferrite_scrape::populate_labels`].
//!
//! ```text
//! targetsdump FILE...
//! ```

#[path = "../../config/examples/dump/mod.rs"]
mod dump;

use std::fmt::Write as _;
use std::path::Path;

use ferrite_config::Config;
use ferrite_model::Labels;
use ferrite_scrape::populate_labels;

fn main() {
    dump::each_file("targetsdump", |f, out| {
        let Ok(cfg) = Config::load(Path::new(f)) else {
            out.push_str("config error\n");
            return;
        };
        for job in &cfg.scrape_configs {
            for group in &job.static_configs {
                for target in &group.targets {
                    let target = Labels::from_pairs(&[("__address__", target.as_str())]);
                    let _ = writeln!(
                        out,
                        "{}",
                        line(populate_labels(&target, &group.labels, job))
                    );
                }
            }
        }
    });
}

/// The line for one target.
fn line(result: Result<Option<Labels>, ferrite_scrape::TargetError>) -> String {
    match result {
        Err(e) => format!("error {e}"),
        Ok(None) => "dropped".to_string(),
        Ok(Some(ls)) => {
            let parts: Vec<String> = ls
                .iter()
                .map(|l| format!("{}={}", dump::escape(&l.name), dump::escape(&l.value)))
                .collect();
            format!("target {}", parts.join(","))
        }
    }
}
