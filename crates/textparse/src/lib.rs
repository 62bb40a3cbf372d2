//! Parsers for text exposition formats (OpenMetrics, Prometheus text).
