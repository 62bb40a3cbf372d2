//! Series selectors (`up{job="a"}`, `{x=~"y"}`) as the API's `match[]` and
//! promtool's `--match` take them, parsed with the `promql-parser` crate
//! into Ferrite matchers.
//!
//! promtool uses Prometheus' `ParseMetricSelector`, which, unlike a PromQL
//! query, accepts a selector whose matchers all match the empty string:
//! promtool's own `dump` default is `{__name__=~'(?s:.*)'}`. The crate
//! rejects those, so such a selector is parsed again with a placeholder
//! matcher that is dropped afterwards.

use anyhow::{bail, Result};
use ferrite_model::{MatchType, Matcher};
use promql_parser::label::MatchOp;
use std::sync::Arc;

use ferrite_promql::ParsedExpr;
use promql_parser::parser::Expr;

const PLACEHOLDER: &str = "__ferrite_placeholder__";

/// A query or selector parsed by the engine's parser, whose panics (on some
/// number literals, found by the `http_params` fuzz target) are errors, so
/// a request cannot take the server's task down with it. Parsed queries
/// are kept across requests.
pub fn parse_promql(s: &str) -> std::result::Result<Arc<ParsedExpr>, String> {
    ferrite_promql::parse(s).map_err(|e| match e {
        ferrite_promql::Error::Parse(e) => e,
        other => other.to_string(),
    })
}

/// Parses one series selector into matchers (a metric name becomes a
/// `__name__` equality matcher).
pub fn parse_selector(s: &str) -> Result<Vec<Matcher>> {
    // A selector is one level deep (two with its braces). Anything deeper
    // is refused before the parser spends time on it: selectors are parsed
    // on the async runtime's threads.
    if ferrite_promql::nesting::scan(s).depth > 2 {
        return Err(not_a_selector(s));
    }
    let expr = match parse_promql(s) {
        Ok(e) => e,
        Err(e) if e.contains("at least one non-empty matcher") => match s.find('{') {
            Some(i) => {
                let patched = format!("{}{{{PLACEHOLDER}=\"1\",{}", &s[..i], &s[i + 1..]);
                parse_promql(&patched).map_err(|_| selector_err(s, &e))?
            }
            None => return Err(selector_err(s, &e)),
        },
        Err(e) => return Err(selector_err(s, &e)),
    };
    let Expr::VectorSelector(vs) = &**expr else {
        return Err(not_a_selector(s));
    };
    if vs.offset.is_some() || vs.at.is_some() {
        bail!("invalid series selector {s:?}: offset and @ modifiers are not allowed");
    }
    if !vs.matchers.or_matchers.is_empty() {
        bail!("invalid series selector {s:?}: `or` inside a selector is not supported");
    }
    let mut out = Vec::with_capacity(vs.matchers.matchers.len() + 1);
    if let Some(name) = &vs.name {
        out.push(Matcher::equal("__name__", name));
    }
    for m in &vs.matchers.matchers {
        if m.name == PLACEHOLDER {
            continue;
        }
        let kind = match m.op {
            MatchOp::Equal => MatchType::Equal,
            MatchOp::NotEqual => MatchType::NotEqual,
            MatchOp::Re(_) => MatchType::Regex,
            MatchOp::NotRe(_) => MatchType::NotRegex,
        };
        out.push(
            Matcher::new(kind, &m.name, &m.value)
                .map_err(|e| anyhow::anyhow!("invalid series selector {s:?}: {e}"))?,
        );
    }
    Ok(out)
}

fn not_a_selector(s: &str) -> anyhow::Error {
    anyhow::anyhow!("invalid series selector {s:?}: not a plain series selector")
}

fn selector_err(s: &str, e: &str) -> anyhow::Error {
    anyhow::anyhow!("invalid series selector {s:?}: {}", e.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn show(ms: &[Matcher]) -> Vec<String> {
        ms.iter().map(|m| m.to_string()).collect()
    }

    #[test]
    fn selectors() {
        assert_eq!(
            show(&parse_selector(r#"{job="a"}"#).unwrap()),
            [r#"job="a""#]
        );
        assert_eq!(
            show(&parse_selector(r#"up{x=~"y.*", z!="", w!~'q'}"#).unwrap()),
            [r#"__name__="up""#, r#"x=~"y.*""#, r#"z!="""#, r#"w!~"q""#]
        );
        assert_eq!(show(&parse_selector("up").unwrap()), [r#"__name__="up""#]);
        // promtool's dump default: every matcher matches "".
        let all = parse_selector("{__name__=~'(?s:.*)'}").unwrap();
        assert_eq!(show(&all), [r#"__name__=~"(?s:.*)""#]);
        assert!(all[0].matches(""));
        assert!(parse_selector(r#"{job=~".*"}"#).is_ok());
    }

    #[test]
    fn bad_selectors() {
        for s in [
            "",
            "up[5m]",
            "rate(up[5m])",
            "up offset 5m",
            r#"{job="a"} + 1"#,
            "{job=",
            r#"{x=~"("}"#,
            "x[2222222222222222222222222222222222222]",
        ] {
            assert!(parse_selector(s).is_err(), "{s:?} parsed");
        }
    }
}
