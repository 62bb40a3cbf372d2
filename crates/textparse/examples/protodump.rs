//! `protodump FILE...`: every entry Ferrite's protobuf scrape parser
//! (`ferrite_textparse::protobuf`) reads from each file (a delimited
//! `MetricFamily` body), in the text form `interop/cmd/promproto` prints
//! with Prometheus' own `textparse.NewProtobufParser`, after `== FILE`,
//! once per option set of the scrape loop:
//!
//! ```text
//! -- classic                  native histograms ignored
//! -- native                   native histograms scraped
//! -- native+classic           and always_scrape_classic_histograms
//! -- classic nhcb             the three again, with
//! -- native nhcb              convert_classic_histograms_to_nhcb
//! -- native+classic nhcb
//! HELP <metric> <text>
//! UNIT <metric> <unit>
//! TYPE <metric> <type>
//! SERIES <series> {<name>=<value>,...} <value bits, 16 hex digits> <timestamp ms or ->
//! HISTOGRAM <series> {<name>=<value>,...} <timestamp ms or -> <histogram record>
//! ERR <message>                          the first error; nothing follows it
//! ```
//!
//! `<series>` is the series' bytes (the scrape cache's key); labels are
//! sorted by name and then value; the histogram record is
//! `ferrite_model::histogram_record`'s (`H ...` or `F ...`). Names,
//! values, text and series have bytes outside `!`..`~`, and
//! `\ " = , { }`, written `\xHH`; a message has bytes outside ` `..`~`
//! and `\` written so. Exit status 2 for a usage or I/O error only.

#[path = "../../config/examples/dump/mod.rs"]
mod dump;
#[path = "dump_entries/mod.rs"]
mod dump_entries;

use std::fmt::Write as _;

use ferrite_model::histogram_record::{float_record, int_record};
use ferrite_model::{FloatHistogram, Histogram};
use ferrite_textparse::protobuf::{HistogramKind, ProtoEntry, ProtoOptions, ProtoParser};

use dump_entries::{
    write_head, write_help, write_label_set, write_timestamp, write_type, write_value,
};

/// The option sets, in the order both sides print them.
const MODES: [(&str, ProtoOptions); 6] = [
    (
        "classic",
        ProtoOptions {
            ignore_native_histograms: true,
            keep_classic_histograms: false,
            convert_classic_histograms_to_nhcb: false,
        },
    ),
    (
        "native",
        ProtoOptions {
            ignore_native_histograms: false,
            keep_classic_histograms: false,
            convert_classic_histograms_to_nhcb: false,
        },
    ),
    (
        "native+classic",
        ProtoOptions {
            ignore_native_histograms: false,
            keep_classic_histograms: true,
            convert_classic_histograms_to_nhcb: false,
        },
    ),
    (
        "classic nhcb",
        ProtoOptions {
            ignore_native_histograms: true,
            keep_classic_histograms: false,
            convert_classic_histograms_to_nhcb: true,
        },
    ),
    (
        "native nhcb",
        ProtoOptions {
            ignore_native_histograms: false,
            keep_classic_histograms: false,
            convert_classic_histograms_to_nhcb: true,
        },
    ),
    (
        "native+classic nhcb",
        ProtoOptions {
            ignore_native_histograms: false,
            keep_classic_histograms: true,
            convert_classic_histograms_to_nhcb: true,
        },
    ),
];

fn write_message(out: &mut String, msg: &[u8]) {
    for &b in msg {
        if (b' '..=b'~').contains(&b) && b != b'\\' {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
}

fn write_labels(out: &mut String, p: &ProtoParser<'_>, labels: &mut Vec<(String, String)>) {
    p.labels(labels);
    labels.sort();
    write_label_set(out, labels);
}

fn dump_mode(input: &[u8], opts: ProtoOptions, out: &mut String) {
    let mut p = ProtoParser::new(input, opts);
    let mut labels = Vec::new();
    let (mut h, mut fh) = (Histogram::default(), FloatHistogram::default());
    loop {
        let entry = match p.next_entry() {
            Ok(Some(e)) => e,
            Ok(None) => return,
            Err(e) => {
                out.push_str("ERR ");
                write_message(out, e.as_bytes());
                out.push('\n');
                return;
            }
        };
        match entry {
            ProtoEntry::Help { metric, text } => write_help(out, metric, text),
            ProtoEntry::Unit { metric, unit } => {
                write_head(out, "UNIT", metric);
                dump::escape_bytes_into(out, unit);
            }
            ProtoEntry::Type { metric, kind } => write_type(out, metric, kind.as_str()),
            ProtoEntry::Series { value, timestamp } => {
                write_head(out, "SERIES", p.series());
                write_labels(out, &p, &mut labels);
                write_value(out, value, timestamp);
            }
            ProtoEntry::Histogram { timestamp } => {
                write_head(out, "HISTOGRAM", p.series());
                write_labels(out, &p, &mut labels);
                out.push(' ');
                write_timestamp(out, timestamp);
                out.push(' ');
                out.push_str(&match p.histogram(&mut h, &mut fh) {
                    HistogramKind::Int => int_record(&h),
                    HistogramKind::Float => float_record(&fh),
                });
            }
        }
        out.push('\n');
    }
}

fn main() {
    dump_entries::each_input("protodump", |input, out| {
        for (name, opts) in MODES {
            let _ = writeln!(out, "-- {name}");
            dump_mode(input, opts, out);
        }
    });
}
