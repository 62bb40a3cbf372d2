//! `convert_classic_histograms_to_nhcb` for the text formats (the
//! Prometheus text format and OpenMetrics), as Prometheus v3.16.0's
//! `NHCBParser` wraps their parsers: [`TextNhcb`] sits between the body's
//! parser and the append loop, collects each classic histogram's series
//! and hands out the native histogram with custom buckets they make
//! ([`ferrite_textparse::nhcb`]). The protobuf parser converts by itself
//! ([`ferrite_textparse::protobuf::ProtoOptions`]).
//!
//! What Prometheus does, and so this:
//! - a series is a classic histogram's when the last `# TYPE` line said
//!   `histogram` (not `gaugehistogram`) for its name less `_bucket`,
//!   `_sum` or `_count`; a `_bucket` one needs an `le` that parses as a
//!   float and is not NaN (else it is an ordinary series);
//! - consecutive such series of one name whose labels, `le` aside, are
//!   the same are one histogram; the next series that is not (another
//!   name or labels, or any series once the last `# TYPE` is not a
//!   histogram), any `# HELP`, `# TYPE`, `# UNIT` or comment line, and the
//!   end of the body, end it: the histogram is converted and handed out
//!   right there, before that entry. A histogram whose series are
//!   interleaved with others' is so converted in pieces, each a sample of
//!   the same series (the later ones duplicates);
//! - the converted series is the family's name with the histogram's
//!   labels, `le` dropped; its cache key is Prometheus' (`name{l="v",...}`),
//!   its timestamp the one of the last series line read when it is handed
//!   out (the one that ended it, or its own last one);
//! - the classic series are handed out too only with
//!   `always_scrape_classic_histograms`; else they are skipped as read, so
//!   that a histogram that cannot be converted (not cumulative, a `+Inf`
//!   bucket other than the count, ...) is lost silently, as in Prometheus;
//! - the converted histogram counts as one sample scraped, and goes through
//!   relabeling, `sample_limit` and `native_histogram_bucket_limit` as any
//!   native histogram (a custom-buckets one over the bucket limit is
//!   refused, not reduced).

use ferrite_model::gofloat::parse_go_float;
use ferrite_model::goquote::quote_into;
use ferrite_model::{Labels, ValidationScheme, METRIC_NAME};
use ferrite_textparse::nhcb::ClassicHistogram;
use ferrite_textparse::promtext::TextError;
use ferrite_textparse::protobuf::HistogramKind;
use ferrite_textparse::MetricType;

use super::{BodyEntry, BodyParser, HistogramBufs};
use crate::cache::LineKey;

/// The `le` label.
const BUCKET_LABEL: &str = "le";

/// Which of a classic histogram's series a name is, by its suffix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Suffix {
    Bucket,
    Sum,
    Count,
    None,
}

/// A series name split as Prometheus' `GetHistogramMetricBaseName` splits
/// it: `_bucket`, else `_sum`, else `_count` taken off.
fn split_suffix(name: &str) -> (Suffix, &str) {
    if let Some(base) = name.strip_suffix("_bucket") {
        (Suffix::Bucket, base)
    } else if let Some(base) = name.strip_suffix("_sum") {
        (Suffix::Sum, base)
    } else if let Some(base) = name.strip_suffix("_count") {
        (Suffix::Count, base)
    } else {
        (Suffix::None, name)
    }
}

/// The value of label `name` in `pairs`.
fn label<'p>(pairs: &'p [(String, String)], name: &str) -> Option<&'p str> {
    pairs
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

/// Whether a label takes part in telling histograms apart (all but the
/// name and `le`).
fn identifies(name: &str) -> bool {
    name != METRIC_NAME && name != BUCKET_LABEL
}

/// The last `# TYPE` line.
#[derive(Debug, Default)]
struct Family {
    name: Vec<u8>,
    is_histogram: bool,
}

/// The histogram being collected.
#[derive(Debug, Default)]
struct Collecting {
    /// Its series' name less the suffix.
    name: String,
    /// Its first series' labels but the name and `le`, sorted by name.
    labels: Vec<(String, String)>,
}

/// The converted histogram handed out last: what the append loop reads
/// of it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Converted {
    /// The scrape cache's key of its series.
    pub key: LineKey,
    /// Which of the [`HistogramBufs`] holds it.
    pub kind: HistogramKind,
    /// Its timestamp, if the series line it takes it from had one.
    pub timestamp: Option<i64>,
}

/// The conversion of one text-format body; see the module documentation.
pub(super) struct TextNhcb<'b> {
    /// `always_scrape_classic_histograms`: the classic series are handed
    /// out too.
    keep_classic: bool,
    family: Family,
    /// The histogram being collected, if any.
    collecting: Option<Collecting>,
    classic: ClassicHistogram,
    /// The timestamp of the last series line read.
    last_timestamp: Option<i64>,
    /// The entry that ended the histogram just handed out, held back to
    /// come next (`Some(None)`: the end of the body).
    held: Option<Option<BodyEntry<'b>>>,
    /// The labels of the last series line read (of the held one, when a
    /// series is held), sorted by name; empty if they did not read.
    pairs: Vec<(String, String)>,
    /// The converted series' key bytes (reused).
    key: Vec<u8>,
}

impl<'b> TextNhcb<'b> {
    /// The conversion of a body; `keep_classic`: the job's
    /// `always_scrape_classic_histograms`.
    pub fn new(keep_classic: bool) -> Self {
        TextNhcb {
            keep_classic,
            family: Family::default(),
            collecting: None,
            classic: ClassicHistogram::new(),
            last_timestamp: None,
            held: None,
            pairs: Vec::new(),
            key: Vec::new(),
        }
    }

    /// The next entry for the append loop: the parser's, less the classic
    /// series it converts (unless kept), with each converted histogram as
    /// a [`BodyEntry::Converted`] (its histogram and labels in `out`).
    /// A parse error is returned as it is (the scrape fails).
    pub fn next_entry(
        &mut self,
        parser: &mut BodyParser<'b>,
        out: &mut HistogramBufs,
    ) -> Result<Option<BodyEntry<'b>>, TextError> {
        loop {
            if let Some(held) = self.held.take() {
                if let Some(BodyEntry::Series(s)) = &held {
                    if self.collect(s.value) && !self.keep_classic {
                        continue;
                    }
                }
                return Ok(held);
            }
            let Some(entry) = parser.next_entry()? else {
                return Ok(self.end_histogram(None, out));
            };
            if let BodyEntry::Series(s) = &entry {
                let value = s.value;
                self.last_timestamp = s.timestamp;
                self.read_labels(parser);
                if self.ends_histogram() {
                    if let Some(converted) = self.end_histogram(Some(entry), out) {
                        return Ok(Some(converted));
                    }
                    // Not converted: the series was held back for nothing.
                    continue;
                }
                if self.collect(value) && !self.keep_classic {
                    continue;
                }
                return Ok(Some(entry));
            }
            if let BodyEntry::Type(metric, kind) = &entry {
                self.family.name.clear();
                self.family.name.extend_from_slice(metric);
                self.family.is_histogram = *kind == MetricType::Histogram;
            }
            let converted = self.end_histogram(Some(entry), out);
            return Ok(converted.or_else(|| self.held.take().flatten()));
        }
    }

    /// Reads the parser's current series' labels into `pairs`, sorted by
    /// name (stably), when they matter: a histogram is being collected or
    /// the last `# TYPE` is a histogram (else nothing reads them). Labels
    /// that do not read leave `pairs` empty: the series is no histogram's,
    /// and the append loop reports the error.
    fn read_labels(&mut self, parser: &BodyParser<'b>) {
        self.pairs.clear();
        if self.collecting.is_none() && !self.family.is_histogram {
            return;
        }
        if parser.labels(&mut self.pairs).is_err() {
            self.pairs.clear();
        }
        self.pairs.sort_by(|a, b| a.0.cmp(&b.0));
    }

    /// Whether the last series read is not of the histogram being
    /// collected (Prometheus' `differentMetric`): the last `# TYPE` is not
    /// a histogram, or the name or the labels but `le` differ.
    fn ends_histogram(&self) -> bool {
        let Some(c) = &self.collecting else {
            return false;
        };
        if !self.family.is_histogram {
            return true;
        }
        let name = label(&self.pairs, METRIC_NAME).unwrap_or_default();
        if split_suffix(name).1 != c.name {
            return true;
        }
        let labels = self.pairs.iter().filter(|(n, _)| identifies(n));
        !labels.eq(c.labels.iter())
    }

    /// Collects the last series read (its labels in `pairs`) if it is a
    /// classic histogram's (Prometheus' `handleClassicHistogramSeries`),
    /// starting a histogram if none is being collected; whether it was.
    fn collect(&mut self, value: f64) -> bool {
        if !self.family.is_histogram {
            return false;
        }
        let name = label(&self.pairs, METRIC_NAME).unwrap_or_default();
        let (suffix, base) = split_suffix(name);
        if base.as_bytes() != self.family.name.as_slice() {
            return false;
        }
        // Errors stay in the collector: the conversion fails with them.
        let _ = match suffix {
            Suffix::None => return false,
            Suffix::Bucket => {
                let le = label(&self.pairs, BUCKET_LABEL)
                    .and_then(|le| parse_go_float(le.as_bytes()).ok())
                    .filter(|le| !le.is_nan());
                let Some(le) = le else {
                    return false;
                };
                self.start();
                self.classic.set_bucket_count(le, value)
            }
            Suffix::Count => {
                self.start();
                self.classic.set_count(value)
            }
            Suffix::Sum => {
                self.start();
                self.classic.set_sum(value)
            }
        };
        true
    }

    /// Starts collecting a histogram at the last series read, unless one
    /// is being collected.
    fn start(&mut self) {
        if self.collecting.is_some() {
            return;
        }
        let name = label(&self.pairs, METRIC_NAME).unwrap_or_default();
        let name = split_suffix(name).1.to_string();
        let labels = self
            .pairs
            .iter()
            .filter(|(n, _)| identifies(n))
            .cloned()
            .collect();
        self.collecting = Some(Collecting { name, labels });
    }

    /// Ends the histogram being collected, if any, before `next`
    /// (Prometheus' `processNHCB`) and holds `next` back to come after:
    /// the converted histogram, if there was one and it converted (else
    /// nothing of it).
    fn end_histogram(
        &mut self,
        next: Option<BodyEntry<'b>>,
        out: &mut HistogramBufs,
    ) -> Option<BodyEntry<'b>> {
        self.held = Some(next);
        let c = self.collecting.take()?;
        let kind = self.classic.convert(&mut out.int, &mut out.float).ok()?;
        out.converted_labels = converted_labels(&c);
        self.key.clear();
        write_key(&mut self.key, &c);
        Some(BodyEntry::Converted(Converted {
            key: LineKey::of(&self.key),
            kind,
            timestamp: self.last_timestamp,
        }))
    }
}

/// The converted series' labels: the histogram's, named after its family.
fn converted_labels(c: &Collecting) -> Labels {
    let name = [(METRIC_NAME, c.name.as_str())];
    let rest = c.labels.iter().map(|(n, v)| (n.as_str(), v.as_str()));
    let pairs: Vec<(&str, &str)> = name.into_iter().chain(rest).collect();
    Labels::from_pairs(&pairs)
}

/// Prometheus' bytes of a converted series (its scrape cache key): the
/// name, then, if there are other labels, `{name="value",...}` with names
/// quoted where not legacy names and values quoted as Go quotes them.
fn write_key(out: &mut Vec<u8>, c: &Collecting) {
    out.extend_from_slice(c.name.as_bytes());
    if c.labels.is_empty() {
        return;
    }
    let mut text = String::from("{");
    for (i, (name, value)) in c.labels.iter().enumerate() {
        if i > 0 {
            text.push(',');
        }
        if ValidationScheme::Legacy.is_valid_label_name(name.as_bytes()) {
            text.push_str(name);
        } else {
            quote_into(name, &mut text);
        }
        text.push('=');
        quote_into(value, &mut text);
    }
    text.push('}');
    out.extend_from_slice(text.as_bytes());
}
