//! `omdump FILE...`: what promtool's OpenMetrics backfill would append from
//! each file, as Ferrite's parser reads it, in the deterministic text form
//! `interop/cmd/promtextparse` prints with Prometheus' own parser:
//!
//! ```text
//! ok <samples>
//! <timestamp ms> <value bits, 16 hex digits> {name=value,...}   (file order)
//! ```
//!
//! or `error line=<n> <reason>`. Label bytes outside `!`..`~`, and `\ " = , { }`,
//! are written `\xHH`. With several files each dump follows `== FILE`.
//! Exit status 2 for a usage or I/O error only.

#[path = "../../config/examples/dump/mod.rs"]
mod dump;

use std::fmt::Write as _;
use std::io::Write as _;

use ferrite_textparse::backfill;

fn dump(input: &[u8]) -> String {
    let mut out = String::new();
    match backfill::samples(input) {
        Ok(samples) => {
            let _ = writeln!(out, "ok {}", samples.len());
            for s in samples {
                let _ = write!(out, "{} {:016x} {{", s.timestamp, s.value.to_bits());
                for (i, l) in s.labels.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    dump::escape_into(&mut out, &l.name);
                    out.push('=');
                    dump::escape_into(&mut out, &l.value);
                }
                out.push_str("}\n");
            }
        }
        Err(e) => {
            let _ = writeln!(out, "error line={} {}", e.line, e.kind);
        }
    }
    out
}

fn main() {
    let files: Vec<String> = std::env::args().skip(1).collect();
    if files.is_empty() {
        eprintln!("usage: omdump FILE...");
        std::process::exit(2);
    }
    let mut stdout = std::io::stdout().lock();
    for f in &files {
        let input = match std::fs::read(f) {
            Ok(b) => b,
            Err(e) => {
                eprintln!("omdump: {f}: {e}");
                std::process::exit(2);
            }
        };
        if files.len() > 1 {
            let _ = writeln!(stdout, "== {f}");
        }
        let _ = stdout.write_all(dump(&input).as_bytes());
    }
}
