//! The `io.prometheus.client` messages (`metrics.proto` of
//! prometheus/client_model), declared with prost derives, to write the
//! protobuf bodies of tests: this crate's and, included by path,
//! ferrite-scrape's. Every field is optional, so a test writes exactly the
//! fields it sets.

#![allow(dead_code, missing_docs)]

use prost::Message;

#[derive(Clone, PartialEq, prost::Message)]
pub struct LabelPair {
    #[prost(string, optional, tag = "1")]
    pub name: Option<String>,
    #[prost(string, optional, tag = "2")]
    pub value: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Gauge {
    #[prost(double, optional, tag = "1")]
    pub value: Option<f64>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Timestamp {
    #[prost(int64, optional, tag = "1")]
    pub seconds: Option<i64>,
    #[prost(int32, optional, tag = "2")]
    pub nanos: Option<i32>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Exemplar {
    #[prost(message, repeated, tag = "1")]
    pub label: Vec<LabelPair>,
    #[prost(double, optional, tag = "2")]
    pub value: Option<f64>,
    #[prost(message, optional, tag = "3")]
    pub timestamp: Option<Timestamp>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Counter {
    #[prost(double, optional, tag = "1")]
    pub value: Option<f64>,
    #[prost(message, optional, tag = "2")]
    pub exemplar: Option<Exemplar>,
    #[prost(message, optional, tag = "3")]
    pub start_timestamp: Option<Timestamp>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Quantile {
    #[prost(double, optional, tag = "1")]
    pub quantile: Option<f64>,
    #[prost(double, optional, tag = "2")]
    pub value: Option<f64>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Summary {
    #[prost(uint64, optional, tag = "1")]
    pub sample_count: Option<u64>,
    #[prost(double, optional, tag = "2")]
    pub sample_sum: Option<f64>,
    #[prost(message, repeated, tag = "3")]
    pub quantile: Vec<Quantile>,
    #[prost(message, optional, tag = "4")]
    pub start_timestamp: Option<Timestamp>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Untyped {
    #[prost(double, optional, tag = "1")]
    pub value: Option<f64>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Bucket {
    #[prost(uint64, optional, tag = "1")]
    pub cumulative_count: Option<u64>,
    #[prost(double, optional, tag = "4")]
    pub cumulative_count_float: Option<f64>,
    #[prost(double, optional, tag = "2")]
    pub upper_bound: Option<f64>,
    #[prost(message, optional, tag = "3")]
    pub exemplar: Option<Exemplar>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct BucketSpan {
    #[prost(sint32, optional, tag = "1")]
    pub offset: Option<i32>,
    #[prost(uint32, optional, tag = "2")]
    pub length: Option<u32>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Histogram {
    #[prost(uint64, optional, tag = "1")]
    pub sample_count: Option<u64>,
    #[prost(double, optional, tag = "4")]
    pub sample_count_float: Option<f64>,
    #[prost(double, optional, tag = "2")]
    pub sample_sum: Option<f64>,
    #[prost(message, repeated, tag = "3")]
    pub bucket: Vec<Bucket>,
    #[prost(message, optional, tag = "15")]
    pub start_timestamp: Option<Timestamp>,
    #[prost(sint32, optional, tag = "5")]
    pub schema: Option<i32>,
    #[prost(double, optional, tag = "6")]
    pub zero_threshold: Option<f64>,
    #[prost(uint64, optional, tag = "7")]
    pub zero_count: Option<u64>,
    #[prost(double, optional, tag = "8")]
    pub zero_count_float: Option<f64>,
    #[prost(message, repeated, tag = "9")]
    pub negative_span: Vec<BucketSpan>,
    #[prost(sint64, repeated, tag = "10")]
    pub negative_delta: Vec<i64>,
    #[prost(double, repeated, tag = "11")]
    pub negative_count: Vec<f64>,
    #[prost(message, repeated, tag = "12")]
    pub positive_span: Vec<BucketSpan>,
    #[prost(sint64, repeated, tag = "13")]
    pub positive_delta: Vec<i64>,
    #[prost(double, repeated, tag = "14")]
    pub positive_count: Vec<f64>,
    #[prost(message, repeated, tag = "16")]
    pub exemplars: Vec<Exemplar>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Metric {
    #[prost(message, repeated, tag = "1")]
    pub label: Vec<LabelPair>,
    #[prost(message, optional, tag = "2")]
    pub gauge: Option<Gauge>,
    #[prost(message, optional, tag = "3")]
    pub counter: Option<Counter>,
    #[prost(message, optional, tag = "4")]
    pub summary: Option<Summary>,
    #[prost(message, optional, tag = "5")]
    pub untyped: Option<Untyped>,
    #[prost(message, optional, tag = "7")]
    pub histogram: Option<Histogram>,
    #[prost(int64, optional, tag = "6")]
    pub timestamp_ms: Option<i64>,
}

/// `MetricType`'s values.
pub const COUNTER: i32 = 0;
pub const GAUGE: i32 = 1;
pub const SUMMARY: i32 = 2;
pub const UNTYPED: i32 = 3;
pub const HISTOGRAM: i32 = 4;
pub const GAUGE_HISTOGRAM: i32 = 5;

#[derive(Clone, PartialEq, prost::Message)]
pub struct MetricFamily {
    #[prost(string, optional, tag = "1")]
    pub name: Option<String>,
    #[prost(string, optional, tag = "2")]
    pub help: Option<String>,
    #[prost(int32, optional, tag = "3")]
    pub r#type: Option<i32>,
    #[prost(message, repeated, tag = "4")]
    pub metric: Vec<Metric>,
    #[prost(string, optional, tag = "5")]
    pub unit: Option<String>,
}

/// A scrape body: the families, each after its length.
pub fn delimited(families: &[MetricFamily]) -> Vec<u8> {
    let mut out = Vec::new();
    for f in families {
        f.encode_length_delimited(&mut out)
            .unwrap_or_else(|e| panic!("encoding: {e}"));
    }
    out
}

/// Labels from `(name, value)` pairs.
pub fn labels(pairs: &[(&str, &str)]) -> Vec<LabelPair> {
    pairs
        .iter()
        .map(|(n, v)| LabelPair {
            name: Some((*n).into()),
            value: Some((*v).into()),
        })
        .collect()
}

/// A span.
pub fn span(offset: i32, length: u32) -> BucketSpan {
    BucketSpan {
        offset: Some(offset),
        length: Some(length),
    }
}

/// A family of `type` named `name` with these metrics.
pub fn family(name: &str, r#type: i32, metric: Vec<Metric>) -> MetricFamily {
    MetricFamily {
        name: Some(name.into()),
        help: Some(format!("{name} help")),
        r#type: Some(r#type),
        metric,
        unit: None,
    }
}
