//! The remote write protobuf messages, declared by hand with `prost` derives.
//!
//! Field numbers and wire types follow Prometheus v3.9.1's
//! `prompb/types.proto`, `prompb/remote.proto` (1.0, package `prometheus`)
//! and `prompb/io/prometheus/write/v2/types.proto` (2.0, package
//! `io.prometheus.write.v2`). The `.proto` files are the wire format spec;
//! the declarations here are written from them, not generated, so no
//! `protoc` is needed.
//!
//! Deliberate choice: every proto `string` field is declared `bytes`. Both
//! have the same wire encoding, but prost refuses a whole message when a
//! `string` holds invalid UTF-8, while Prometheus' gogo-generated decoder
//! accepts any bytes and rejects only the affected series later (label
//! validation). Keeping bytes lets [`crate::decode`] reject exactly what
//! Prometheus rejects.
//!
//! Only the messages a receiver needs are declared: remote write's, and
//! remote read's request and responses ([`read`], `prompb/remote.proto`).

/// Remote write 1.0: package `prometheus`.
pub mod v1 {
    /// `prometheus.WriteRequest`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct WriteRequest {
        #[prost(message, repeated, tag = "1")]
        pub timeseries: Vec<TimeSeries>,
        // Field 2 is reserved.
        #[prost(message, repeated, tag = "3")]
        pub metadata: Vec<MetricMetadata>,
    }

    /// `prometheus.TimeSeries`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct TimeSeries {
        #[prost(message, repeated, tag = "1")]
        pub labels: Vec<Label>,
        #[prost(message, repeated, tag = "2")]
        pub samples: Vec<Sample>,
        #[prost(message, repeated, tag = "3")]
        pub exemplars: Vec<Exemplar>,
        #[prost(message, repeated, tag = "4")]
        pub histograms: Vec<Histogram>,
    }

    /// `prometheus.Label` (proto `string`s, kept as bytes).
    #[derive(Clone, PartialEq, Eq, prost::Message)]
    pub struct Label {
        #[prost(bytes = "vec", tag = "1")]
        pub name: Vec<u8>,
        #[prost(bytes = "vec", tag = "2")]
        pub value: Vec<u8>,
    }

    /// `prometheus.Sample`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Sample {
        #[prost(double, tag = "1")]
        pub value: f64,
        #[prost(int64, tag = "2")]
        pub timestamp: i64,
    }

    /// `prometheus.Exemplar`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Exemplar {
        #[prost(message, repeated, tag = "1")]
        pub labels: Vec<Label>,
        #[prost(double, tag = "2")]
        pub value: f64,
        #[prost(int64, tag = "3")]
        pub timestamp: i64,
    }

    /// `prometheus.MetricMetadata`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct MetricMetadata {
        #[prost(enumeration = "MetricType", tag = "1")]
        pub r#type: i32,
        #[prost(bytes = "vec", tag = "2")]
        pub metric_family_name: Vec<u8>,
        #[prost(bytes = "vec", tag = "4")]
        pub help: Vec<u8>,
        #[prost(bytes = "vec", tag = "5")]
        pub unit: Vec<u8>,
    }

    /// `prometheus.MetricMetadata.MetricType`.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
    #[repr(i32)]
    pub enum MetricType {
        Unknown = 0,
        Counter = 1,
        Gauge = 2,
        Histogram = 3,
        Gaugehistogram = 4,
        Summary = 5,
        Info = 6,
        Stateset = 7,
    }

    /// `prometheus.Histogram` (native histogram sample).
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Histogram {
        #[prost(oneof = "Count", tags = "1, 2")]
        pub count: Option<Count>,
        #[prost(double, tag = "3")]
        pub sum: f64,
        #[prost(sint32, tag = "4")]
        pub schema: i32,
        #[prost(double, tag = "5")]
        pub zero_threshold: f64,
        #[prost(oneof = "ZeroCount", tags = "6, 7")]
        pub zero_count: Option<ZeroCount>,
        #[prost(message, repeated, tag = "8")]
        pub negative_spans: Vec<BucketSpan>,
        #[prost(sint64, repeated, tag = "9")]
        pub negative_deltas: Vec<i64>,
        #[prost(double, repeated, tag = "10")]
        pub negative_counts: Vec<f64>,
        #[prost(message, repeated, tag = "11")]
        pub positive_spans: Vec<BucketSpan>,
        #[prost(sint64, repeated, tag = "12")]
        pub positive_deltas: Vec<i64>,
        #[prost(double, repeated, tag = "13")]
        pub positive_counts: Vec<f64>,
        #[prost(enumeration = "ResetHint", tag = "14")]
        pub reset_hint: i32,
        #[prost(int64, tag = "15")]
        pub timestamp: i64,
        #[prost(double, repeated, tag = "16")]
        pub custom_values: Vec<f64>,
    }

    /// `oneof count`.
    #[derive(Clone, Copy, PartialEq, prost::Oneof)]
    pub enum Count {
        #[prost(uint64, tag = "1")]
        CountInt(u64),
        #[prost(double, tag = "2")]
        CountFloat(f64),
    }

    /// `oneof zero_count`.
    #[derive(Clone, Copy, PartialEq, prost::Oneof)]
    pub enum ZeroCount {
        #[prost(uint64, tag = "6")]
        ZeroCountInt(u64),
        #[prost(double, tag = "7")]
        ZeroCountFloat(f64),
    }

    /// `prometheus.Histogram.ResetHint`.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
    #[repr(i32)]
    pub enum ResetHint {
        Unknown = 0,
        Yes = 1,
        No = 2,
        Gauge = 3,
    }

    /// `prometheus.BucketSpan`.
    #[derive(Clone, Copy, PartialEq, Eq, prost::Message)]
    pub struct BucketSpan {
        #[prost(sint32, tag = "1")]
        pub offset: i32,
        #[prost(uint32, tag = "2")]
        pub length: u32,
    }
}

/// Remote write 2.0: package `io.prometheus.write.v2`.
pub mod v2 {
    /// `io.prometheus.write.v2.Request`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Request {
        // Fields 1 to 3 are reserved (1.0's WriteRequest fields).
        #[prost(bytes = "vec", repeated, tag = "4")]
        pub symbols: Vec<Vec<u8>>,
        #[prost(message, repeated, tag = "5")]
        pub timeseries: Vec<TimeSeries>,
    }

    /// `io.prometheus.write.v2.TimeSeries`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct TimeSeries {
        #[prost(uint32, repeated, tag = "1")]
        pub labels_refs: Vec<u32>,
        #[prost(message, repeated, tag = "2")]
        pub samples: Vec<Sample>,
        #[prost(message, repeated, tag = "3")]
        pub histograms: Vec<Histogram>,
        #[prost(message, repeated, tag = "4")]
        pub exemplars: Vec<Exemplar>,
        /// Never null in Go (`nullable = false`): absent means all zero.
        #[prost(message, optional, tag = "5")]
        pub metadata: Option<Metadata>,
        // Field 6 is reserved (the experimental created timestamp).
    }

    /// `io.prometheus.write.v2.Exemplar`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Exemplar {
        #[prost(uint32, repeated, tag = "1")]
        pub labels_refs: Vec<u32>,
        #[prost(double, tag = "2")]
        pub value: f64,
        #[prost(int64, tag = "3")]
        pub timestamp: i64,
    }

    /// `io.prometheus.write.v2.Sample`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Sample {
        #[prost(double, tag = "1")]
        pub value: f64,
        #[prost(int64, tag = "2")]
        pub timestamp: i64,
        /// 0 = not set (formerly "created timestamp").
        #[prost(int64, tag = "3")]
        pub start_timestamp: i64,
    }

    /// `io.prometheus.write.v2.Metadata`.
    #[derive(Clone, Copy, PartialEq, Eq, prost::Message)]
    pub struct Metadata {
        #[prost(enumeration = "MetricType", tag = "1")]
        pub r#type: i32,
        #[prost(uint32, tag = "3")]
        pub help_ref: u32,
        #[prost(uint32, tag = "4")]
        pub unit_ref: u32,
    }

    /// `io.prometheus.write.v2.Metadata.MetricType`.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
    #[repr(i32)]
    pub enum MetricType {
        Unspecified = 0,
        Counter = 1,
        Gauge = 2,
        Histogram = 3,
        Gaugehistogram = 4,
        Summary = 5,
        Info = 6,
        Stateset = 7,
    }

    /// `io.prometheus.write.v2.Histogram`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Histogram {
        #[prost(oneof = "Count", tags = "1, 2")]
        pub count: Option<Count>,
        #[prost(double, tag = "3")]
        pub sum: f64,
        #[prost(sint32, tag = "4")]
        pub schema: i32,
        #[prost(double, tag = "5")]
        pub zero_threshold: f64,
        #[prost(oneof = "ZeroCount", tags = "6, 7")]
        pub zero_count: Option<ZeroCount>,
        #[prost(message, repeated, tag = "8")]
        pub negative_spans: Vec<BucketSpan>,
        #[prost(sint64, repeated, tag = "9")]
        pub negative_deltas: Vec<i64>,
        #[prost(double, repeated, tag = "10")]
        pub negative_counts: Vec<f64>,
        #[prost(message, repeated, tag = "11")]
        pub positive_spans: Vec<BucketSpan>,
        #[prost(sint64, repeated, tag = "12")]
        pub positive_deltas: Vec<i64>,
        #[prost(double, repeated, tag = "13")]
        pub positive_counts: Vec<f64>,
        #[prost(enumeration = "ResetHint", tag = "14")]
        pub reset_hint: i32,
        #[prost(int64, tag = "15")]
        pub timestamp: i64,
        #[prost(double, repeated, tag = "16")]
        pub custom_values: Vec<f64>,
        #[prost(int64, tag = "17")]
        pub start_timestamp: i64,
    }

    /// `oneof count`.
    #[derive(Clone, Copy, PartialEq, prost::Oneof)]
    pub enum Count {
        #[prost(uint64, tag = "1")]
        CountInt(u64),
        #[prost(double, tag = "2")]
        CountFloat(f64),
    }

    /// `oneof zero_count`.
    #[derive(Clone, Copy, PartialEq, prost::Oneof)]
    pub enum ZeroCount {
        #[prost(uint64, tag = "6")]
        ZeroCountInt(u64),
        #[prost(double, tag = "7")]
        ZeroCountFloat(f64),
    }

    /// `io.prometheus.write.v2.Histogram.ResetHint`.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
    #[repr(i32)]
    pub enum ResetHint {
        Unspecified = 0,
        Yes = 1,
        No = 2,
        Gauge = 3,
    }

    /// `io.prometheus.write.v2.BucketSpan`.
    #[derive(Clone, Copy, PartialEq, Eq, prost::Message)]
    pub struct BucketSpan {
        #[prost(sint32, tag = "1")]
        pub offset: i32,
        #[prost(uint32, tag = "2")]
        pub length: u32,
    }
}

/// Remote read (package `prometheus`): the request and both responses.
pub mod read {
    use super::v1::{Label, TimeSeries};

    /// `prometheus.ReadRequest`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ReadRequest {
        #[prost(message, repeated, tag = "1")]
        pub queries: Vec<Query>,
        #[prost(enumeration = "ResponseType", repeated, tag = "2")]
        pub accepted_response_types: Vec<i32>,
    }

    /// `prometheus.ReadRequest.ResponseType`.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
    #[repr(i32)]
    pub enum ResponseType {
        Samples = 0,
        StreamedXorChunks = 1,
    }

    /// `prometheus.Query` (its `hints`, field 4, are advisory: not declared).
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Query {
        #[prost(int64, tag = "1")]
        pub start_timestamp_ms: i64,
        #[prost(int64, tag = "2")]
        pub end_timestamp_ms: i64,
        #[prost(message, repeated, tag = "3")]
        pub matchers: Vec<LabelMatcher>,
    }

    /// `prometheus.LabelMatcher`.
    #[derive(Clone, PartialEq, Eq, prost::Message)]
    pub struct LabelMatcher {
        #[prost(enumeration = "MatchType", tag = "1")]
        pub r#type: i32,
        #[prost(bytes = "vec", tag = "2")]
        pub name: Vec<u8>,
        #[prost(bytes = "vec", tag = "3")]
        pub value: Vec<u8>,
    }

    /// `prometheus.LabelMatcher.Type`.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
    #[repr(i32)]
    pub enum MatchType {
        Eq = 0,
        Neq = 1,
        Re = 2,
        Nre = 3,
    }

    /// `prometheus.ReadResponse` (response type `SAMPLES`).
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ReadResponse {
        #[prost(message, repeated, tag = "1")]
        pub results: Vec<QueryResult>,
    }

    /// `prometheus.QueryResult`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct QueryResult {
        #[prost(message, repeated, tag = "1")]
        pub timeseries: Vec<TimeSeries>,
    }

    /// `prometheus.ChunkedReadResponse` (one frame of `STREAMED_XOR_CHUNKS`).
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ChunkedReadResponse {
        #[prost(message, repeated, tag = "1")]
        pub chunked_series: Vec<ChunkedSeries>,
        #[prost(int64, tag = "2")]
        pub query_index: i64,
    }

    /// `prometheus.ChunkedSeries`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ChunkedSeries {
        #[prost(message, repeated, tag = "1")]
        pub labels: Vec<Label>,
        #[prost(message, repeated, tag = "2")]
        pub chunks: Vec<Chunk>,
    }

    /// `prometheus.Chunk`: a TSDB chunk, [min, max] inclusive.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Chunk {
        #[prost(int64, tag = "1")]
        pub min_time_ms: i64,
        #[prost(int64, tag = "2")]
        pub max_time_ms: i64,
        #[prost(enumeration = "ChunkEncoding", tag = "3")]
        pub r#type: i32,
        #[prost(bytes = "vec", tag = "4")]
        pub data: Vec<u8>,
    }

    /// `prometheus.Chunk.Encoding`.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
    #[repr(i32)]
    pub enum ChunkEncoding {
        Unknown = 0,
        Xor = 1,
        Histogram = 2,
        FloatHistogram = 3,
        /// v3.16's XOR2 float chunks.
        Xor2 = 4,
        /// v3.16's histogram chunks with start timestamps.
        HistogramSt = 5,
        /// v3.16's float histogram chunks with start timestamps.
        FloatHistogramSt = 6,
    }
}
