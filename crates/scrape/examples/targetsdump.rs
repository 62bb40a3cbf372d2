//! Ferrite's side of the scrape target cross-check against Prometheus
//! (`interop/scrape_targets_test.go`, whose `cmd/promtargets` is
//! Prometheus' side; the output is described there): each file loaded and
//! every job's static targets through [`ferrite_scrape::populate_labels`].
//!
//! Each target line ends with its scrape URL and the hash that places it
//! in its interval. `targetsdump --fqdn` prints the host name the offset
//! seed uses instead.
//!
//! ```text
//! targetsdump FILE...
//! targetsdump --fqdn
//! ```

#[path = "../../config/examples/dump/mod.rs"]
mod dump;

use std::fmt::Write as _;
use std::path::Path;

use ferrite_config::{Config, ScrapeConfig};
use ferrite_model::Labels;
use ferrite_scrape::offset::target_hash;
use ferrite_scrape::populate_labels;
use ferrite_scrape::url::scrape_url;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() == 2 && args[1] == "--fqdn" {
        println!("{}", ferrite_scrape::offset::fqdn());
        return;
    }
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
                        line(populate_labels(&target, &group.labels, job), job)
                    );
                }
            }
        }
    });
}

/// The line for one target.
fn line(result: Result<Option<Labels>, ferrite_scrape::TargetError>, job: &ScrapeConfig) -> String {
    match result {
        Err(e) => format!("error {e}"),
        Ok(None) => "dropped".to_string(),
        Ok(Some(ls)) => {
            let parts: Vec<String> = ls
                .iter()
                .map(|l| format!("{}={}", dump::escape(&l.name), dump::escape(&l.value)))
                .collect();
            let url = scrape_url(&ls, &job.params);
            let hash = target_hash(&ls, &url);
            format!(
                "target {} url={} hash={hash:x}",
                parts.join(","),
                dump::escape(&url)
            )
        }
    }
}
