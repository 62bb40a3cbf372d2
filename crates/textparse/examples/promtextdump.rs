//! `promtextdump FILE...`: every entry Ferrite's Prometheus text format
//! (0.0.4) parser reads from each file, in the text form
//! `interop/cmd/prompromtext` prints with Prometheus' own
//! `textparse.NewPromParser`, one line each, after `== FILE`:
//!
//! ```text
//! HELP <metric> <text>                   text unescaped
//! TYPE <metric> <type>                   counter, gauge, histogram, summary or unknown
//! COMMENT <text>                         the whole `#` line
//! SERIES <series> {<name>=<value>,...} <value bits, 16 hex digits> <timestamp ms or ->
//! ERR <message>                          the first error; nothing follows it
//! ```
//!
//! `<series>` is the series' raw bytes; the labels are sorted by name and
//! then value. Where the labels cannot be read (a name that is not UTF-8:
//! Prometheus hands such a name out and rejects the series later, when it
//! validates it), `!labels <message>` replaces them. Bytes outside
//! `!`..`~`, and `\ " = , { }`, are written `\xHH`; a message has its
//! newlines written `\n`. Exit status 2 for a usage or I/O error only.

#[path = "../../config/examples/dump/mod.rs"]
mod dump;

use std::fmt::Write as _;

use ferrite_textparse::promtext::{TextEntry, TextParser};

fn dump(input: &[u8], out: &mut String) {
    let mut p = TextParser::new(input);
    let mut labels = Vec::new();
    loop {
        let entry = match p.next_entry() {
            Ok(Some(e)) => e,
            Ok(None) => return,
            Err(e) => {
                let _ = writeln!(out, "ERR {}", e.0.replace('\n', "\\n"));
                return;
            }
        };
        match entry {
            TextEntry::Help { metric, text } => {
                out.push_str("HELP ");
                dump::escape_bytes_into(out, metric);
                out.push(' ');
                dump::escape_bytes_into(out, &text);
            }
            TextEntry::Type { metric, kind } => {
                out.push_str("TYPE ");
                dump::escape_bytes_into(out, metric);
                out.push(' ');
                out.push_str(kind.as_str());
            }
            TextEntry::Comment { text } => {
                out.push_str("COMMENT ");
                dump::escape_bytes_into(out, text);
            }
            TextEntry::Series(s) => {
                out.push_str("SERIES ");
                dump::escape_bytes_into(out, s.series);
                out.push(' ');
                match p.labels(&mut labels) {
                    Ok(()) => {
                        labels.sort();
                        out.push('{');
                        for (i, (name, value)) in labels.iter().enumerate() {
                            if i > 0 {
                                out.push(',');
                            }
                            dump::escape_into(out, name);
                            out.push('=');
                            dump::escape_into(out, value);
                        }
                        out.push('}');
                    }
                    Err(e) => {
                        out.push_str("!labels ");
                        dump::escape_into(out, &e.0);
                    }
                }
                let _ = write!(out, " {:016x} ", s.value.to_bits());
                match s.timestamp {
                    Some(ts) => {
                        let _ = write!(out, "{ts}");
                    }
                    None => out.push('-'),
                }
            }
        }
        out.push('\n');
    }
}

fn main() {
    dump::each_file("promtextdump", |f, out| match std::fs::read(f) {
        Ok(input) => dump(&input, out),
        Err(e) => {
            eprintln!("promtextdump: {f}: {e}");
            std::process::exit(2);
        }
    });
}
