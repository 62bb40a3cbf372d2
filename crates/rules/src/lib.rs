//! Rule files, recording rules and alerting rules, as Prometheus v3.16.0
//! reads and evaluates them.
//!
//! A reader new to the crate can follow a rule file from the
//! configuration to the samples it writes:
//!
//! 1. **Finding the files** (`ferrite_config::glob`): `rule_files` in `prometheus.yml`
//!    are paths or patterns, made relative to the configuration file's
//!    directory by `ferrite-config`; each (re)load expands them as Go's
//!    `filepath.Glob` does.
//! 2. **Reading YAML** ([`yaml`]): Prometheus reads rule files with
//!    yaml.v3 (the configuration uses yaml.v2), and its messages name the
//!    line and column of the nodes they complain about. The file is read
//!    into a tree of positioned nodes from the events of serde-saphyr's
//!    parser, then decoded with yaml.v3's rules (YAML 1.2 scalars, type
//!    errors gathered, duplicate keys refused, `<<` merges).
//! 3. **Validating** ([`file`]): the groups and rules, decoded twice as
//!    Prometheus' `rulefmt.ParseFile` does, and every check it makes, in
//!    its order and words: names, durations, limits, labels, annotations,
//!    the expression (Ferrite's PromQL parser, experimental functions
//!    refused as Prometheus refuses them by default), and an alerting
//!    rule's templates (`ferrite-template`, Go's `text/template` parser).
//!    `ferrite check rules` prints what `promtool check rules` prints from
//!    this.
//! 4. **Running** ([`manager`]): the [`manager::RuleManager`] holds the
//!    server's groups, brings them in line with each configuration (an
//!    unchanged group keeps running, a changed one takes over its
//!    predecessor's series, a removed one has its series marked stale)
//!    and runs each group on its own task, at the slots Prometheus'
//!    `Group.EvalTimestamp` gives it.
//! 5. **Evaluating** ([`group`], [`rule`]): each rule of a group, in
//!    order, as an instant query at the slot's time minus the query
//!    offset, through Ferrite's PromQL engine over the storage's
//!    [`ferrite_promql::Queryable`]. A recording rule ([`recording`])
//!    names and relabels the result; an alerting rule ([`alerting`])
//!    turns each sample into an alert that goes pending, fires after
//!    `for`, is kept firing for `keep_firing_for` and resolved, its
//!    labels and annotations expanded as Go templates
//!    (`ferrite-template`), and writes `ALERTS` and `ALERTS_FOR_STATE`.
//!    The results are checked against the group's `limit` and appended
//!    with stale markers for the series that dropped out; due alerts go
//!    to an [`alerting::AlertNotifier`] (the server's notifier).
//! 6. **Restoring** ([`restore`]): after a start, each group's alerts get
//!    back the `activeAt` their `ALERTS_FOR_STATE` series kept, so that a
//!    restart does not reset `for`.
//! 7. **Storage** ([`storage`]): the two traits the server implements over
//!    its database (a queryable and an appender per evaluation), so that
//!    this crate knows nothing of the storage engine; [`metrics`] holds
//!    the `prometheus_rule_*` counters the server shows on `/metrics`.
//! 8. **Unit tests** ([`unittest`]): `ferrite test rules` runs promtool's
//!    rule unit-test files over an in-memory storage, with its verdicts.

#![deny(clippy::unwrap_used, missing_docs)]

pub mod alerting;
pub mod file;
/// Go's `filepath.Glob`, shared with the configuration's
/// `scrape_config_files`.
pub use ferrite_config::glob;
pub mod group;
pub mod manager;
pub mod metrics;
pub mod recording;
pub mod restore;
pub mod rule;
pub mod storage;
#[cfg(test)]
mod testing;
pub mod unittest;
pub mod yaml;
