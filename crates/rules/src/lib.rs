//! Rule files and recording rules, as Prometheus v3.16.0 reads and
//! evaluates them.
//!
//! A reader new to the crate can follow a rule file from the
//! configuration to the samples it writes:
//!
//! 1. **Finding the files** ([`glob`]): `rule_files` in `prometheus.yml`
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
//!    rule's templates ([`template`], Go's `text/template` parser).
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
//!    [`ferrite_promql::Queryable`]; the result named after the rule,
//!    relabeled, checked against the group's `limit`, and appended with
//!    stale markers for the series that dropped out.
//! 6. **Storage** ([`storage`]): the two traits the server implements over
//!    its database (a queryable and an appender per evaluation), so that
//!    this crate knows nothing of the storage engine; [`metrics`] holds
//!    the `prometheus_rule_*` counters the server shows on `/metrics`.
//!
//! Alerting rules are read and validated (so `ferrite check rules`
//! accepts what promtool accepts), but not evaluated: the manager refuses
//! a rule file that holds one, naming the rule, rather than pretend the
//! alert works.

#![deny(clippy::unwrap_used, missing_docs)]

pub mod file;
pub mod glob;
pub mod group;
pub mod manager;
pub mod metrics;
pub mod rule;
pub mod storage;
pub mod template;
pub mod yaml;
