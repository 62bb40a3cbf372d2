//! Go's `text/template` as Prometheus uses it for alerting rules' labels
//! and annotations: parsing (with Go's error texts) and execution with
//! Prometheus' template functions, so that Ferrite expands a rule's
//! templates to the same text, or the same error, as Prometheus v3.16.
//!
//! A reader may take the modules in the order a template goes through
//! them:
//!
//! 1. `lex.rs` cuts the text into Go's tokens: text, delimiters
//!    (with trim markers and comments), and the words of an action.
//! 2. `parse.rs` builds the tree (actions, pipelines,
//!    commands, `if`/`range`/`with`, `define`/`block`/`template`) with
//!    Go's grammar and error texts; `literal.rs` reads
//!    number and string literals as `strconv` does. [`check`] is this
//!    parse alone, as Prometheus validates rule files.
//! 3. `value.rs` is what templates compute with: [`Value`]
//!    stands for the Go types Prometheus' templates see (`float64`,
//!    `map[string]string`, query results, histograms, times ...) and
//!    prints as Go's `fmt` does.
//! 4. `exec.rs` walks the tree as Go's executor does:
//!    variables, dot, pipelines, Go's typing of function arguments, and
//!    its error texts with their positions.
//! 5. The functions: `funcs.rs` holds `text/template`'s
//!    built-ins, `printf.rs` Go's `fmt` verbs, and
//!    `prometheus.rs` Prometheus' own (`query`,
//!    `humanize`, `reReplaceAll` ...).
//!
//! [`Expander`] ties these together as Prometheus' `template.Expander`.
//!
//! Bounds: `{{template}}` recursion stops at Go's depth of 100000 with
//! Go's error; the recursive steps of parsing and execution run on
//! [`stacker`]-grown stacks, so deep nesting never overflows the thread's
//! stack. Panics Go's template recovers from (a nil sample, a bad regular
//! expression in `reReplaceAll`) are errors here. The depth of 100000
//! costs about 180 MB of (heap-allocated) stack while it lasts.
//!
//! Known differences from Prometheus (checked by `interop/template_test.go`
//! against Prometheus itself, where they are not tested):
//!
//! * pointers print as fixed stand-ins where Go prints addresses (`%p`,
//!   `%d` of a pointer, elements of a printed query result);
//! * complex literals (`1i`) are an execution error;
//! * of the methods of Go values only `Unix`, `UnixMilli`, `UnixNano`,
//!   `String` (times), `Seconds`, `Minutes`, `Hours`, `Milliseconds`,
//!   `Nanoseconds`, `String` (durations) and a histogram's `Count`, `Sum`,
//!   `ZeroCount`, `ZeroThreshold`, `Schema` exist, none with arguments;
//! * regular expressions run on the `regex` crate made to read Go's syntax
//!   (ASCII `\d \w \s \b`, literal stray braces, no nested classes, Go's
//!   refusals of `a**`, counts over 1000, flags other than `imsU`); the
//!   errors a typo gives read as Go's, rarer ones in the crate's words;
//! * `title` segments words by a simplified rule (letters, digits, `_`, and
//!   a single `.` `:` or apostrophe join).

#![deny(clippy::unwrap_used, missing_docs)]

mod exec;
mod funcs;
mod lex;
mod literal;
mod parse;
mod printf;
mod prometheus;
mod value;

use std::sync::Arc;

pub use value::{AlertData, Sample as QuerySample, Value};

/// The definitions Prometheus puts before every label and annotation
/// template it checks and expands (`rules/alerting.go`).
pub const DEFINITIONS: &str = "{{$labels := .Labels}}{{$externalLabels := .ExternalLabels}}{{$externalURL := .ExternalURL}}{{$value := .Value}}";

/// Checks an alerting rule's label or annotation template as Prometheus
/// does (`rulefmt`'s `testTemplateParsing`); `name` is the template's name
/// (`__alert_<alert name>`). The text is checked after [`DEFINITIONS`];
/// the error is Go's (`template: __alert_X:1: function "bogus" not
/// defined`).
pub fn check(name: &str, text: &str) -> Result<(), String> {
    let source = format!("{DEFINITIONS}{text}");
    parse::parse(name, &source).map(|_| ())
}

/// Runs a PromQL query for the `query` template function.
pub trait QueryFunc {
    /// Evaluates `expr` as an instant query at `t_ms` (ms since epoch).
    fn query(&self, expr: &str, t_ms: i64) -> Result<Vec<ferrite_promql::Sample>, String>;
}

/// The data Prometheus gives an alert's templates (`AlertTemplateData`):
/// `.Labels`, `.ExternalLabels`, `.ExternalURL`, `.Value` (the float, or
/// the histogram when the sample is a histogram).
pub fn alert_template_data(
    labels: &ferrite_model::Labels,
    external_labels: &ferrite_model::Labels,
    external_url: &str,
    value: f64,
    histogram: Option<&ferrite_model::FloatHistogram>,
) -> Value {
    Value::Alert(Arc::new(AlertData {
        labels: value::labels_map(labels),
        external_labels: value::labels_map(external_labels),
        external_url: external_url.to_string(),
        value: match histogram {
            Some(h) => Value::Histogram(Arc::new(h.clone())),
            None => Value::Float(value),
        },
    }))
}

/// Prometheus' `template.Expander`: one template text, its data and the
/// functions' context.
pub struct Expander<'a> {
    name: &'a str,
    text: &'a str,
    data: Value,
    t_ms: i64,
    query: &'a dyn QueryFunc,
    external_url: &'a str,
}

impl<'a> Expander<'a> {
    /// Prometheus' NewTemplateExpander: name, text, data, the evaluation
    /// time (ms), the query function, the external URL.
    pub fn new(
        name: &'a str,
        text: &'a str,
        data: Value,
        t_ms: i64,
        query: &'a dyn QueryFunc,
        external_url: &'a str,
    ) -> Self {
        Expander {
            name,
            text,
            data,
            t_ms,
            query,
            external_url,
        }
    }

    /// Expander.Expand: the output, or the error text exactly as
    /// Prometheus' Expand returns it (`error parsing template __alert_X:
    /// template: __alert_X:1: ...` / `error executing template __alert_X:
    /// template: __alert_X:1:23: executing "__alert_X" at <...>: ...`).
    pub fn expand(&self) -> Result<String, String> {
        let templates = parse::parse(self.name, self.text)
            .map_err(|e| format!("error parsing template {}: {e}", self.name))?;
        let env = prometheus::Env {
            t_ms: self.t_ms,
            query: self.query,
            external_url: self.external_url,
        };
        let mut state = exec::State::new(&templates, self.name, self.text, &env, self.data.clone());
        state
            .run(&self.data)
            .map_err(|e| format!("error executing template {}: {e}", self.name))?;
        Ok(state.out)
    }
}

#[cfg(test)]
mod tests;
