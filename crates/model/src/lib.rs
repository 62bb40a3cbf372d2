//! Ferrite's shared vocabulary: the one definition of what every other
//! crate (storage, PromQL, remote read and write, the server, the text
//! parsers) talks about.
//!
//! - [`labels`]: label sets, the identity of a series;
//! - [`matcher`]: label matchers with Prometheus' semantics;
//! - [`sample`]: sample values and the staleness marker;
//! - [`histogram`]: native histograms, integer and float;
//! - [`histogram_ops`]: arithmetic on float histograms (what PromQL computes
//!   with): buckets with bounds, add/sub across schemas, counter resets;
//!   [`histogram_trim`]: trimming at a value (PromQL's `</` and `>/`);
//! - [`resolution`]: merging buckets into a lower schema, for integer and
//!   float histograms (what Prometheus does to schemas 9..=52);
//! - [`histogram_record`]: the one-line text form of histograms that the
//!   interop suite's generators and the golden tests share;
//! - [`gofloat`]: Go's float syntax and formatting, which Prometheus' text
//!   formats, JSON and tools are written in;
//! - [`units`]: Prometheus' durations and byte sizes;
//! - [`cache`]: a bounded cache for what is compiled from text.
//! - [`erased`]: a shared object held without naming its type, in two
//!   words (the scrape cache's handle on a storage's series).
//!
//! Nothing here does I/O or knows a file format.

#![deny(clippy::unwrap_used, missing_docs)]

pub mod cache;
pub mod erased;
pub mod gofloat;
pub mod goquote;
pub mod gotime;
pub mod histogram;
pub mod histogram_ops;
pub mod histogram_record;
pub mod histogram_trim;
pub mod labels;
pub mod matcher;
pub mod prefetch;
pub mod resolution;
pub mod sample;
pub mod selfmetrics;
pub mod spare;
pub mod units;

pub use histogram::{CounterResetHint, FloatHistogram, Histogram, HistogramError, Span};
pub use labels::{
    is_legacy_label_name, is_metadata_label, Label, Labels, LabelsError, Str, ValidationScheme,
    METRIC_NAME,
};
pub use matcher::{MatchType, Matcher, MatcherError};
pub use sample::{is_stale_nan, SampleValue, STALE_NAN, STALE_NAN_BITS};
