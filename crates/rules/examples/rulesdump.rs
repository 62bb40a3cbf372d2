//! Ferrite's side of the rule file cross-check against Prometheus
//! (`interop/rules_load_test.go`, whose `cmd/promrules` is Prometheus'
//! side; the output is described there): each file read with
//! [`ferrite_rules::file::parse_file`], its groups and rules printed, or
//! its errors one per line.
//!
//! ```text
//! rulesdump FILE...
//! ```

#[path = "../../config/examples/dump/mod.rs"]
mod dump;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use dump::escape;
use ferrite_rules::file::{parse_expr, parse_file};

fn main() {
    dump::each_file("rulesdump", |f, out| match parse_file(Path::new(f)) {
        Err(errs) => {
            for e in errs {
                let _ = writeln!(out, "error {}", escape(&e));
            }
        }
        Ok(rgs) => {
            out.push_str("ok\n");
            for g in &rgs.groups {
                let offset = g
                    .query_offset_ms
                    .map_or_else(|| "nil".to_string(), |ms| ms.to_string());
                let _ = writeln!(
                    out,
                    "group {} interval_ms={} query_offset_ms={offset} limit={} labels={}",
                    escape(&g.name),
                    g.interval_ms,
                    g.limit,
                    pairs(&g.labels)
                );
                for r in &g.rules {
                    let _ = writeln!(
                        out,
                        "rule record={} alert={} for_ms={} keep_firing_for_ms={} labels={} annotations={}",
                        escape(&r.record),
                        escape(&r.alert),
                        r.for_ms,
                        r.keep_firing_for_ms,
                        pairs(&r.labels),
                        pairs(&r.annotations)
                    );
                    let _ = writeln!(out, "expr {}", escape(&r.expr));
                    match parse_expr(&r.expr) {
                        Ok(e) => {
                            let _ = writeln!(out, "printed {}", escape(&e.to_string()));
                        }
                        Err(e) => {
                            let _ = writeln!(out, "printed error {}", escape(&e));
                        }
                    }
                }
            }
        }
    });
}

/// Sorted `name=value` pairs joined by commas.
fn pairs(m: &BTreeMap<String, String>) -> String {
    m.iter()
        .map(|(k, v)| format!("{}={}", escape(k), escape(v)))
        .collect::<Vec<_>>()
        .join(",")
}
