//! The exposition formats, parsed as Prometheus parses them: OpenMetrics
//! for backfill (below), and for scraping the Prometheus text format
//! (0.0.4, [`promtext`]), OpenMetrics (1.0.0 and 0.0.1, [`omtext`]) and
//! the protobuf format with native histograms ([`protobuf`]); [`nhcb`]
//! converts classic histograms to native ones with custom buckets.
//!
//! The scrape parsers stream entries without allocating per sample and
//! hand out each series' raw bytes for the scrape cache, reading labels
//! only when asked; their errors are Prometheus' messages. The backfill
//! parser below reads whole owned samples with line numbers. They share
//! unescaping, metric types, `le`/`quantile` rewriting and Go's float
//! syntax; [`omtext`]'s documentation says why OpenMetrics has two.
//!
//! # OpenMetrics, parsed as Prometheus v3.9.1 parses it for backfill
//!
//! `ferrite tsdb create-blocks-from openmetrics FILE OUTDIR` (promtool's
//! `tsdb create-blocks-from openmetrics`) must accept exactly the files
//! promtool accepts and read the same samples from them, so this crate
//! follows Prometheus' OpenMetrics parser (`model/textparse`, used by
//! `cmd/promtool/backfill.go`) rule by rule rather than the OpenMetrics
//! specification alone: where Prometheus is more lenient than the spec
//! (unknown escapes such as `\t` kept verbatim, families not checked for
//! consistency, any `_created` line a plain sample) so is this crate.
//!
//! * [`Parser`] streams [`Entry`]s (`# HELP`, `# TYPE`, `# UNIT`, samples)
//!   out of a byte buffer; the grammar is documented in the `parser` module.
//!   Labels come out sorted by name, `__name__` included; timestamps are
//!   milliseconds converted as Prometheus does (`int64(seconds * 1000)`);
//!   NaN has Prometheus' bit pattern.
//! * [`backfill`] adds promtool's rules: every sample needs a timestamp;
//!   empty label values are dropped; duplicate names and empty label sets
//!   are rejected.
//! * Every [`Error`] carries the 1-based line and a reason.
//!
//! ```
//! use ferrite_textparse::backfill;
//!
//! let text = b"# TYPE http_requests counter\n\
//!              http_requests_total{code=\"200\",path=\"/\"} 1027 1700000000\n# EOF\n";
//! let samples = backfill::samples(text)?;
//! assert_eq!(samples[0].timestamp, 1_700_000_000_000);
//! assert_eq!(samples[0].labels[0].name, "__name__");
//! let err = backfill::samples(b"up 1\n# EOF\n").unwrap_err();
//! assert_eq!(err.line, 1); // promtool: expected timestamp for series
//! # Ok::<(), ferrite_textparse::Error>(())
//! ```
//!
//! # Why not a crate from crates.io
//!
//! Checked (November 2026): `openmetrics-parser` 0.5.1 and
//! `prometheus-parse` 0.2.5, the two maintained Rust parsers.
//!
//! * `openmetrics-parser`: LGPL-3.0 (this project is Apache-2.0); takes a
//!   `&str`, so a file with one non-UTF-8 byte in a help text cannot even be
//!   handed to it, while Prometheus only requires label values and help to be
//!   UTF-8; parses the whole exposition into families (no streaming, label
//!   sets in a `HashMap`, so no order), and enforces family structure
//!   Prometheus does not (it rejects interleaved families and repeated label
//!   sets that promtool backfills); its number grammar rejects what Go
//!   accepts (`1E5`, `.5`, `Inf` without sign) and keeps timestamps as f64
//!   seconds, leaving the millisecond conversion open; errors are a string
//!   from pest with no line field; 36 `unwrap`/`expect`s in its parser.
//! * `prometheus-parse`: the Prometheus 0.0.4 text format, not OpenMetrics:
//!   regex per line, no `# EOF`, no exemplars, no quoted names, integer
//!   millisecond timestamps, `io::Result` errors without line numbers.
//!
//! Neither can be made to accept and reject exactly what Prometheus does, so
//! the parser is written here, from Prometheus' documented behaviour and
//! its observed results (no code taken from it), and cross-checked against
//! the real parser by `interop/textparse_test.go`.
//!
//! # Known differences from Prometheus v3.9.1
//!
//! Deliberate, each a Prometheus bug or an input Ferrite cannot store; all
//! are rejections of input Prometheus accepts, listed in the interop test:
//!
//! * names (metric or label) given as quoted strings must be UTF-8: Ferrite
//!   keeps labels as `String`s (Prometheus does not check them);
//! * `{foo} 1` (an unquoted word in braces with no `=`): Prometheus takes it
//!   as the metric name with its first and last character cut off (`o`), and
//!   panics for a one-letter word; here it is an error;
//! * NUL bytes are accepted only inside label values and metadata text.
//!   Prometheus' lexer also skips them right after the closing quote of a
//!   label value (and then cuts the value wrongly), at the start of the line
//!   after a `# HELP`/`# TYPE`/`# UNIT` line (taking them into that line's
//!   text), inside `# HELP`/`# TYPE`/`# UNIT`/`# EOF` keywords and after
//!   `# EOF`;
//! * metadata (`# HELP` etc.) names are unescaped here; Prometheus hands them
//!   out raw (backfill ignores metadata either way);
//! * timestamps beyond ±2^63 ms become `i64::MIN`, as Go on amd64 does;
//!   Go on arm64 would saturate instead.

pub mod backfill;
mod error;
pub mod nhcb;
pub mod omtext;
mod parser;
pub mod promtext;
pub mod protobuf;

pub use error::{Error, ErrorKind};
pub use parser::{Entry, Exemplar, Label, MetricType, Parser, Series, METRIC_NAME};
