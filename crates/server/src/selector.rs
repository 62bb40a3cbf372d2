//! Series selectors (`up{job="a"}`, `{x=~"y"}`) as the API's `match[]` and
//! promtool's `--match` take them, parsed with the engine's PromQL parser
//! into Ferrite matchers.
//!
//! promtool uses Prometheus' `ParseMetricSelector`, which, unlike a PromQL
//! query, accepts a selector whose matchers all match the empty string:
//! promtool's own `dump` default is `{__name__=~'(?s:.*)'}`. The parser
//! rejects those, so such a selector is parsed again with a placeholder
//! matcher that is dropped afterwards.

use anyhow::{bail, Result};
use ferrite_model::Matcher;
use std::sync::Arc;

use ferrite_promql::parser::Expr;
use ferrite_promql::ParsedExpr;

const PLACEHOLDER: &str = "__ferrite_placeholder__";

/// A query or selector parsed by the engine's parser, its error as the
/// text the API answers with. Parsed queries are kept across requests.
pub fn parse_promql(s: &str) -> std::result::Result<Arc<ParsedExpr>, String> {
    ferrite_promql::parse(s).map_err(|e| e.to_string())
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
    if vs.anchored || vs.smoothed {
        bail!("invalid series selector {s:?}: anchored and smoothed modifiers are not allowed");
    }
    let out: Vec<Matcher> = vs
        .matchers
        .iter()
        .filter(|m| m.name != PLACEHOLDER)
        .cloned()
        .collect();
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
