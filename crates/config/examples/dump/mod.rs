//! What Ferrite's cross-check examples (`configdump`, `relabeldump`,
//! `targetsdump`, `omdump`, `promtextdump`) share with their Prometheus sides
//! (`interop/internal/dumpfmt`): the escaping of label names and values,
//! and the one-dump-per-file command line. Included by path.

// Each example uses part of it.
#![allow(dead_code)]

use std::fmt::Write as _;

/// Appends `s` with bytes outside `!`..`~`, and `\ " = , { }`, as `\xHH`,
/// so a label prints on one line and splits unambiguously.
pub fn escape_into(out: &mut String, s: &str) {
    escape_bytes_into(out, s.as_bytes());
}

/// [`escape_into`] for bytes that need not be UTF-8.
pub fn escape_bytes_into(out: &mut String, s: &[u8]) {
    for &b in s {
        if (b'!'..=b'~').contains(&b) && !b"\\\"=,{}".contains(&b) {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
}

/// [`escape_into`] a new string.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    escape_into(&mut out, s);
    out
}

/// An example's main: for every file named on the command line, `== FILE`
/// and then what `dump` writes for it; usage (exit 2) without files.
pub fn each_file(name: &str, mut dump: impl FnMut(&str, &mut String)) {
    let files: Vec<String> = std::env::args().skip(1).collect();
    if files.is_empty() {
        eprintln!("usage: {name} FILE...");
        std::process::exit(2);
    }
    let mut out = String::new();
    for f in &files {
        let _ = writeln!(out, "== {f}");
        dump(f, &mut out);
    }
    print!("{out}");
}
