//! The index file of a Prometheus TSDB block (format v2).
