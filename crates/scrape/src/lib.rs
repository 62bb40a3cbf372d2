//! Scraping, as Prometheus v3.16.0 does it, beside the server (which wires
//! it to the storage through [`storage::ScrapeStorage`]).
//!
//! - [`target`]: a discovered target's labels, with its job's settings
//!   (`__scheme__`, `__metrics_path__`, `__scrape_interval__`, `__param_*`,
//!   ...), relabeled by `relabel_configs`, checked and finished (meta
//!   labels dropped, `instance` defaulted) as Prometheus'
//!   `scrape.PopulateLabels` does.
//! - [`cache`]: a target's scrape cache (series line's hash → the
//!   storage's series handle, dropped lines, which series each scrape
//!   appended).
//! - [`append`]: one scraped body into the storage: labels, relabeling,
//!   limits, staleness.
//! - [`storage`]: what scraping needs of the storage.
//! - [`failure_log`]: `scrape_failure_log_file`, a JSON line per failed
//!   scrape.

#![deny(clippy::unwrap_used, missing_docs)]

pub mod append;
pub mod cache;
pub mod client;
pub mod discovery;
pub mod failure_log;
pub mod format;
pub mod http;
pub mod manager;
pub mod metadata;
pub mod metrics;
pub mod offset;
mod ordered;
pub mod pool;
pub mod report;
pub mod scrape_loop;
pub mod storage;
pub mod target;
pub mod url;

pub use target::{discovered_labels, populate_labels, TargetError};
