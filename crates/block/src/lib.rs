//! The files of a Prometheus TSDB block other than the index.
