//! Ferrite's side of the relabeling cross-check against Prometheus
//! (`interop/relabel_test.go`, whose `cmd/promrelabel` is Prometheus'
//! side; the case file format and the output are described there):
//!
//! ```text
//! relabeldump FILE...
//! ```

mod dump;

use std::collections::BTreeMap;
use std::fmt::Write as _;

use ferrite_config::relabel::{apply, RelabelConfig};
use ferrite_model::Labels;
use ferrite_model::ValidationScheme;
use serde::Deserialize;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CaseFile {
    #[serde(default)]
    scheme: Option<String>,
    #[serde(default)]
    labels: BTreeMap<String, String>,
    #[serde(default)]
    configs: Vec<Option<RelabelConfig>>,
}

fn main() {
    dump::each_file("relabeldump", |f, out| match std::fs::read_to_string(f) {
        Ok(text) => {
            let _ = writeln!(out, "{}", result(&text));
        }
        Err(e) => {
            eprintln!("{f}: {e}");
            std::process::exit(1);
        }
    });
}

fn result(text: &str) -> String {
    let Ok(case) = serde_saphyr::from_str::<CaseFile>(text) else {
        return "unparsable".to_string();
    };
    let names = match case.scheme.as_deref() {
        Some("legacy") => ValidationScheme::Legacy,
        _ => ValidationScheme::Utf8,
    };
    let mut rules = Vec::new();
    for rule in case.configs {
        let Some(rule) = rule else {
            return "invalid null rule".to_string();
        };
        if let Err(e) = rule.validate(names) {
            return format!("invalid {e}");
        }
        rules.push(rule);
    }
    let labels = Labels::new(case.labels);
    match apply(&labels, &rules, names) {
        None => "drop".to_string(),
        Some(ls) => {
            let parts: Vec<String> = ls
                .iter()
                .map(|l| format!("{}={}", dump::escape(&l.name), dump::escape(&l.value)))
                .collect();
            format!("keep {}", parts.join(","))
        }
    }
}
