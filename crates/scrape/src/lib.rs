//! Scraping, as Prometheus v3.16.0 does it, beside the server (which will
//! wire it to the storage): so far, the first step of the target pipeline.
//!
//! - [`target`]: a discovered target's labels, with its job's settings
//!   (`__scheme__`, `__metrics_path__`, `__scrape_interval__`, `__param_*`,
//!   ...), relabeled by `relabel_configs`, checked and finished (meta
//!   labels dropped, `instance` defaulted) as Prometheus'
//!   `scrape.PopulateLabels` does.
//!
//! Not built yet: service discovery beyond a job's `static_configs`, the
//! scrape loop, the exposition formats, staleness, the scrape APIs (issue
//! 12).

#![deny(clippy::unwrap_used, missing_docs)]

pub mod target;

pub use target::{discovered_labels, populate_labels, TargetError};
