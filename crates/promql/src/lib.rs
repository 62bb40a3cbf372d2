//! PromQL evaluation with Prometheus v3.16 semantics, over float and native
//! histogram samples.
//!
//! Where things are:
//! - [`storage`]: the [`Queryable`]/[`Querier`] traits the engine reads
//!   through, and [`MemStorage`], an in-memory implementation;
//! - [`parser`]: Ferrite's PromQL parser (lexer, syntax tree, type checks,
//!   printer); [`parsed`]: a parsed query, [`ParsedExpr`], cached, whose
//!   drop and walk never recurse; [`nesting`]: the limits a query's text is
//!   checked against first (depth of its tree, the parser's work);
//!   `stack`: the stack sized for a query's depth its recursion runs on;
//! - [`engine`]: evaluation of instant and range queries; [`functions`],
//!   [`aggregate`], [`binary`] hold the parts;
//! - [`promqltest`]: a runner for Prometheus' own `.test` files;
//! - parsed queries and compiled regexes are kept across queries in
//!   `ferrite_model::cache`'s bounded caches;
//! - `annotations`: warnings and infos in Prometheus' texts, with the
//!   positions in the query text they refer to (the tree's); `lexical`:
//!   the helpers that scan query text for `nesting`;
//! - [`stats`]: what a query cost (timings, samples read) in Prometheus'
//!   terms; [`tracker`]: what every query of a server goes through (the
//!   concurrency slots, the `prometheus_engine_*` metrics, the query log);
//! - `extended`: anchored and smoothed selectors; `stats_hints`: the
//!   counter-reset hints of histograms read for count and sum only.
//!
//! No request can exhaust a thread's stack: a query deeper than
//! [`nesting::MAX_NESTING_DEPTH`] is refused before parsing, and everything
//! that recurses over a tree (parsing, type checks, evaluation, printing)
//! runs on a stack sized for the tree's depth.
//!
//! Evaluation is step-vectorised: every expression is evaluated once for all
//! steps of a query, each selector selecting its series once over the span
//! its steps need. Samples are floats or native histograms
//! (`ferrite_model::FloatHistogram`; PromQL's histogram semantics in
//! `histfn`, the arithmetic in `ferrite_model::histogram_ops`).

pub mod aggregate;
mod annotations;
pub mod binary;
pub mod engine;
mod extended;
pub mod functions;
mod histfn;
mod lexical;
pub mod nesting;
pub mod parsed;
pub mod parser;
pub mod promqltest;
mod stack;
pub mod stats;
mod stats_hints;
pub mod storage;
pub mod tracker;
pub mod value;

pub use engine::{Engine, EngineOptions, QueryResult};
pub use parsed::{parse, ParsedExpr};
pub use stats::QueryStats;
pub use storage::{
    is_stale_nan, Labels, LazySeries, MatchType, Matcher, MemStorage, Querier, Queryable,
    SampleSource, SelectHints, Series, StorageError, STALE_NAN,
};
pub use tracker::{LoggedQuery, QueryLogger, QueryOrigin, QueryTracker};
pub use value::{Sample, SeriesResult, Value};

/// Errors of parsing and evaluating a query. Texts are Prometheus' where it
/// has one, since clients (and the conformance tests) compare them.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A query refused before parsing: nested deeper than the limit.
    #[error("{0}")]
    TooDeep(String),
    /// A query that does not parse or type-check.
    #[error(transparent)]
    Syntax(#[from] parser::ParseError),
    #[error("query timed out in {0}")]
    Timeout(&'static str),
    #[error("query processing would load too many samples into memory in {0}")]
    TooManySamples(&'static str),
    #[error("{0}")]
    Eval(String),
    #[error(transparent)]
    Storage(#[from] StorageError),
}

impl From<ferrite_model::MatcherError> for Error {
    fn from(e: ferrite_model::MatcherError) -> Self {
        Error::Storage(StorageError::InvalidRegex(e))
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

pub(crate) fn eval_err<T>(msg: impl Into<String>) -> Result<T> {
    Err(Error::Eval(msg.into()))
}
