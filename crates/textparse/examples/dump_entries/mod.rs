//! What the scrape parser cross-checks (`promtextdump`, `omtextdump`,
//! `protodump`) share: the entry lines' pieces, in the form their
//! Prometheus sides (`interop/internal/entrydump`) print. Included by path
//! next to `dump` (crates/config/examples/dump), which it builds on.

// Each example uses part of it.
#![allow(dead_code)]

use std::fmt::Write as _;

use ferrite_textparse::promtext::TextError;

use super::dump;

/// `<tag> <name> `: the start of a HELP, TYPE, UNIT, SERIES or HISTOGRAM
/// line, the name escaped.
pub fn write_head(out: &mut String, tag: &str, name: &[u8]) {
    out.push_str(tag);
    out.push(' ');
    dump::escape_bytes_into(out, name);
    out.push(' ');
}

/// A `HELP <metric> <text>` line's text, without the newline.
pub fn write_help(out: &mut String, metric: &[u8], text: &[u8]) {
    write_head(out, "HELP", metric);
    dump::escape_bytes_into(out, text);
}

/// A `TYPE <metric> <type>` line's text, without the newline.
pub fn write_type(out: &mut String, metric: &[u8], kind: &str) {
    write_head(out, "TYPE", metric);
    out.push_str(kind);
}

/// A timestamp in milliseconds, or `-`.
pub fn write_timestamp(out: &mut String, ts: Option<i64>) {
    match ts {
        Some(ts) => {
            let _ = write!(out, "{ts}");
        }
        None => out.push('-'),
    }
}

/// ` <value bits, 16 hex digits> <timestamp ms or ->`.
pub fn write_value(out: &mut String, value: f64, ts: Option<i64>) {
    let _ = write!(out, " {:016x} ", value.to_bits());
    write_timestamp(out, ts);
}

/// `{<name>=<value>,...}` in the order given, names and values escaped.
pub fn write_label_set<N: AsRef<[u8]>, V: AsRef<[u8]>>(out: &mut String, labels: &[(N, V)]) {
    out.push('{');
    for (i, (name, value)) in labels.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        dump::escape_bytes_into(out, name.as_ref());
        out.push('=');
        dump::escape_bytes_into(out, value.as_ref());
    }
    out.push('}');
}

/// A text parser's series labels as read into `labels` (`read`): sorted by
/// name and then value, or `!labels <message>` where they cannot be read.
pub fn write_read_labels(
    out: &mut String,
    read: Result<(), TextError>,
    labels: &mut [(String, String)],
) {
    match read {
        Ok(()) => {
            labels.sort();
            write_label_set(out, labels);
        }
        Err(e) => {
            out.push_str("!labels ");
            dump::escape_into(out, &e.0);
        }
    }
}

/// A text parser's `ERR <message>` line, newlines written `\n`.
pub fn write_text_err(out: &mut String, e: &TextError) {
    let _ = writeln!(out, "ERR {}", e.0.replace('\n', "\\n"));
}

/// A text parser's next entry (`next`): `None` at the end, and after an
/// error, which it writes as [`write_text_err`].
pub fn next_text<T>(out: &mut String, next: Result<Option<T>, TextError>) -> Option<T> {
    match next {
        Ok(e) => e,
        Err(e) => {
            write_text_err(out, &e);
            None
        }
    }
}

/// An example's main: for every file named on the command line, `== FILE`
/// and then what `dump` writes for its bytes; exit 2 where one cannot be
/// read.
pub fn each_input(name: &str, mut dump: impl FnMut(&[u8], &mut String)) {
    dump::each_file(name, |f, out| match std::fs::read(f) {
        Ok(input) => dump(&input, out),
        Err(e) => {
            eprintln!("{name}: {f}: {e}");
            std::process::exit(2);
        }
    });
}
