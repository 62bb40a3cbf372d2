//! Ferrite's PromQL parser: [`parse_expr`] turns query text into an
//! [`Expr`], with Prometheus v3.16's grammar (trim operators `</` and `>/`,
//! `anchored` and `smoothed` selectors, duration expressions) and its error
//! texts.
//!
//! - `lexer`: text to tokens;
//! - `parse`: expressions (precedence climbing), selectors, calls;
//!   `operators`: aggregations and binary modifiers; `modifiers`: ranges,
//!   subqueries, `offset`, `@`, `anchored`/`smoothed` and duration
//!   expressions; `check`: the type checks;
//! - [`ast`]: the tree; `printer`: the tree as text (`Display`);
//! - [`functions`]: the functions and their signatures; `unquote`:
//!   string literals. Duration literals are `ferrite_model::units`'.

pub mod ast;
mod check;
pub mod functions;
mod lexer;
mod modifiers;
mod operators;
mod parse;
mod printer;
pub mod unquote;

pub use ast::*;
pub use functions::{function, Function};
pub use parse::parse_expr;
pub use printer::{format_number, go_quote};

/// A query that does not parse, with Prometheus' text:
/// `1:5: parse error: unexpected ...` (line and byte column).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{line}:{column}: parse error: {message}")]
pub struct ParseError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl ParseError {
    /// An error at byte `at` of `query`.
    pub fn new(query: &str, at: usize, message: impl Into<String>) -> Self {
        let at = at.min(query.len());
        let before = &query.as_bytes()[..at];
        let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
        let column = match before.iter().rposition(|&b| b == b'\n') {
            Some(nl) => at - nl,
            None => at + 1,
        };
        ParseError {
            line,
            column,
            message: message.into(),
        }
    }
}
