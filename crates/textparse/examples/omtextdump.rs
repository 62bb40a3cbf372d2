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
#[path = "dump_entries/mod.rs"]
mod dump_entries;

use ferrite_textparse::omtext::{OmEntry, OmParser};

use dump_entries::{
    next_text, write_head, write_help, write_label_set, write_read_labels, write_type, write_value,
};

fn dump(input: &[u8], out: &mut String) {
    let mut p = OmParser::new(input);
    let mut labels = Vec::new();
    while let Some(entry) = next_text(out, p.next_entry()) {
        match entry {
            OmEntry::Help { metric, text } => write_help(out, metric, &text),
            OmEntry::Type { metric, kind } => write_type(out, metric, kind.as_str()),
            OmEntry::Unit { metric, unit } => {
                write_head(out, "UNIT", metric);
                dump::escape_bytes_into(out, unit);
            }
            OmEntry::Series(s) => {
                write_head(out, "SERIES", s.series);
                write_read_labels(out, p.labels(&mut labels), &mut labels);
                write_value(out, s.value, s.timestamp);
                if let Some(mut e) = p.exemplar() {
                    e.labels.sort();
                    out.push_str("\nEXEMPLAR ");
                    write_label_set(out, &e.labels);
                    write_value(out, e.value, e.timestamp);
                }
            }
        }
        out.push('\n');
    }
}

fn main() {
    dump_entries::each_input("omtextdump", dump);
}
