//! Ferrite's side of the relabeling cross-check against Prometheus
//! (`interop/relabel_test.go`, whose `cmd/promrelabel` is Prometheus'
//! side; the case file format and the output are described there):
//!
//! ```text
//! relabeldump FILE...
//! ```

use std::collections::BTreeMap;
use std::fmt::Write as _;

use ferrite_config::relabel::{apply, NameValidation, RelabelConfig};
use ferrite_model::Labels;
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
    let files: Vec<String> = std::env::args().skip(1).collect();
    if files.is_empty() {
        eprintln!("usage: relabeldump FILE...");
        std::process::exit(2);
    }
    let mut out = String::new();
    for f in &files {
        let text = match std::fs::read_to_string(f) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("{f}: {e}");
                std::process::exit(1);
            }
        };
        let _ = writeln!(out, "== {f}\n{}", result(&text));
    }
    print!("{out}");
}

fn result(text: &str) -> String {
    let Ok(case) = serde_saphyr::from_str::<CaseFile>(text) else {
        return "unparsable".to_string();
    };
    let names = match case.scheme.as_deref() {
        Some("legacy") => NameValidation::Legacy,
        _ => NameValidation::Utf8,
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
                .map(|l| format!("{}={}", escape(&l.name), escape(&l.value)))
                .collect();
            format!("keep {}", parts.join(","))
        }
    }
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
