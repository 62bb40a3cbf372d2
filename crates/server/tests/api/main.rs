//! The server's integration tests, one binary (each test binary links the
//! whole server: one instead of ten saves most of a gigabyte and their
//! link time in a fresh build). `tests/hostile_requests.rs` stays a binary
//! of its own: it counts the process' allocations, which other tests
//! running beside it would add to.

mod admin;
mod histograms;
mod hostile_queries;
mod http_metrics;
mod read;
mod rules;
mod scrape;
mod scrape_http;
mod server;
mod status;
mod write_paths;
