//! Sending alerts to Alertmanager, as Prometheus v3.16.0's `notifier`
//! package does.
//!
//! A reader's path through the crate, in the order an alert takes it:
//!
//! - [`alert`]: an [`Alert`] (labels, annotations, start, end, generator
//!   URL), and the relabeling every alert goes through first: the
//!   external labels (an alert's own label wins), then
//!   `alerting.alert_relabel_configs`;
//! - [`manager`]: the [`Notifier`] the server holds: configured from the
//!   file ([`Notifier::apply_config`], at start and on reload, queues kept
//!   where a set is unchanged), fed by [`Notifier::send`] (never blocks on
//!   the network), stopped by [`Notifier::stop`] (queues drained within a
//!   bound);
//! - [`alertmanager`]: one set of Alertmanagers per `alertmanagers` entry:
//!   static targets and file/DNS discovery (`ferrite_scrape::discovery`),
//!   relabeled (`relabel_configs`) into URLs; the set's own
//!   `alert_relabel_configs`; a send loop per URL;
//! - [`queue`]: each Alertmanager's bounded queue (the oldest alerts
//!   dropped when full, counted), taken in batches of
//!   `--alertmanager.notification-batch-size`;
//! - [`send`]: a batch as Alertmanager's API v2 body, byte for byte as
//!   Prometheus writes it, posted through the set's HTTP client
//!   (`ferrite_scrape::client`: TLS, authentication, proxies) within the
//!   set's timeout;
//! - [`metrics`]: `prometheus_notifications_*`, with Prometheus' names and
//!   labels, for `/metrics`.
//!
//! Not done, as in Prometheus: retries (a failed batch is dropped and
//! counted). Not done, unlike Prometheus: Alertmanager API v1 (refused by
//! the configuration as v3.16 refuses it), `sigv4` and the service
//! discoveries other than static, file, DNS and HTTP (refused by
//! [`check_supported`]).

#![deny(clippy::unwrap_used, missing_docs)]

pub mod alert;
pub mod alertmanager;
pub mod manager;
pub mod metrics;
pub mod queue;
pub mod send;

pub use alert::Alert;
pub use manager::{check_supported, Error, Notifier, Options};
