//! Ferrite's side of the scrape target cross-check against Prometheus
//! (`interop/scrape_targets_test.go`, whose `cmd/promtargets` is
//! Prometheus' side; the output is described there): each file loaded and
//! every job's static targets through [`ferrite_scrape::populate_labels`].
//!
//! ```text
//! targetsdump FILE...
//! ```

use std::fmt::Write as _;
use std::path::Path;

use ferrite_config::Config;
use ferrite_model::Labels;
use ferrite_scrape::populate_labels;

fn main() {
    let files: Vec<String> = std::env::args().skip(1).collect();
    if files.is_empty() {
        eprintln!("usage: targetsdump FILE...");
        std::process::exit(2);
    }
    let mut out = String::new();
    for f in &files {
        let _ = writeln!(out, "== {f}");
        let Ok(cfg) = Config::load(Path::new(f)) else {
            out.push_str("config error\n");
            continue;
        };
        for job in &cfg.scrape_configs {
            for group in &job.static_configs {
                for target in &group.targets {
                    let target = Labels::from_pairs(&[("__address__", target.as_str())]);
                    let line = match populate_labels(&target, &group.labels, job) {
                        Err(e) => format!("error {e}"),
                        Ok(None) => "dropped".to_string(),
                        Ok(Some(ls)) => {
                            let parts: Vec<String> = ls
                                .iter()
                                .map(|l| format!("{}={}", escape(&l.name), escape(&l.value)))
                                .collect();
                            format!("target {}", parts.join(","))
                        }
                    };
                    let _ = writeln!(out, "{line}");
                }
            }
        }
    }
    print!("{out}");
}

fn escape(s: &str) -> String {
    let mut out = String::new();
    for &b in s.as_bytes() {
        if !(b'!'..=b'~').contains(&b) || b"\\\"=,{}".contains(&b) {
            let _ = write!(out, "\\x{b:02x}");
        } else {
            out.push(char::from(b));
        }
    }
    out
}
