//! `omtextdump FILE...`: every entry Ferrite's OpenMetrics scrape parser
//! (`ferrite_textparse::omtext`) reads from each file, in the text form
//! `interop/cmd/promomtext` prints with Prometheus' own
//! `textparse.NewOpenMetricsParser`, one line each, after `== FILE`:
//!
//! ```text
//! HELP <metric> <text>                   text unescaped
//! TYPE <metric> <type>
//! UNIT <metric> <unit>
//! SERIES <series> {<name>=<value>,...} <value bits, 16 hex digits> <timestamp ms or ->
//! EXEMPLAR {<name>=<value>,...} <value bits> <timestamp ms or ->   the series' exemplar
//! ERR <message>                          the first error; nothing follows it
//! ```
//!
//! `<series>` is the series' raw bytes; the labels (and the exemplar's) are
//! sorted by name and then value. Where the labels cannot be read (a name
//! that is not UTF-8: Prometheus hands such a name out and rejects the
//! series later, when it validates it), `!labels <message>` replaces them.
//! Bytes outside `!`..`~`, and `\ " = , { }`, are written `\xHH`; a
//! message has its newlines written `\n`. Exit status 2 for a usage or I/O
//! error only.

#[path = "../../config/examples/dump/mod.rs"]
mod dump;

use std::fmt::Write as _;

use ferrite_textparse::omtext::{OmEntry, OmParser};

fn write_timestamp(out: &mut String, ts: Option<i64>) {
    match ts {
        Some(ts) => {
            let _ = write!(out, "{ts}");
        }
        None => out.push('-'),
    }
}

fn dump(input: &[u8], out: &mut String) {
    let mut p = OmParser::new(input);
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
            OmEntry::Help { metric, text } => {
                out.push_str("HELP ");
                dump::escape_bytes_into(out, metric);
                out.push(' ');
                dump::escape_bytes_into(out, &text);
            }
            OmEntry::Type { metric, kind } => {
                out.push_str("TYPE ");
                dump::escape_bytes_into(out, metric);
                out.push(' ');
                out.push_str(kind.as_str());
            }
            OmEntry::Unit { metric, unit } => {
                out.push_str("UNIT ");
                dump::escape_bytes_into(out, metric);
                out.push(' ');
                dump::escape_bytes_into(out, unit);
            }
            OmEntry::Series(s) => {
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
                write_timestamp(out, s.timestamp);
                if let Some(mut e) = p.exemplar() {
                    e.labels.sort();
                    out.push_str("\nEXEMPLAR {");
                    for (i, (name, value)) in e.labels.iter().enumerate() {
                        if i > 0 {
                            out.push(',');
                        }
                        dump::escape_bytes_into(out, name);
                        out.push('=');
                        dump::escape_bytes_into(out, value);
                    }
                    let _ = write!(out, "}} {:016x} ", e.value.to_bits());
                    write_timestamp(out, e.timestamp);
                }
            }
        }
        out.push('\n');
    }
}

fn main() {
    dump::each_file("omtextdump", |f, out| match std::fs::read(f) {
        Ok(input) => dump(&input, out),
        Err(e) => {
            eprintln!("omtextdump: {f}: {e}");
            std::process::exit(2);
        }
    });
}
