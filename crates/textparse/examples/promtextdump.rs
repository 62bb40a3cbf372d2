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
#[path = "dump_entries/mod.rs"]
mod dump_entries;

use ferrite_textparse::promtext::{TextEntry, TextParser};

use dump_entries::{next_text, write_head, write_help, write_read_labels, write_type, write_value};

fn dump(input: &[u8], out: &mut String) {
    let mut p = TextParser::new(input);
    let mut labels = Vec::new();
    while let Some(entry) = next_text(out, p.next_entry()) {
        match entry {
            TextEntry::Help { metric, text } => write_help(out, metric, &text),
            TextEntry::Type { metric, kind } => write_type(out, metric, kind.as_str()),
            TextEntry::Comment { text } => {
                out.push_str("COMMENT ");
                dump::escape_bytes_into(out, text);
            }
            TextEntry::Series(s) => {
                write_head(out, "SERIES", s.series);
                write_read_labels(out, p.labels(&mut labels), &mut labels);
                write_value(out, s.value, s.timestamp);
            }
        }
        out.push('\n');
    }
}

fn main() {
    dump_entries::each_input("promtextdump", dump);
}
