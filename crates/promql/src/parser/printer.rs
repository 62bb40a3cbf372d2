//! Expressions written back as PromQL text, in the form Prometheus'
//! printer gives them (`sum by (job) (rate(x[5m]))`). Printing recurses
//! over the tree: callers with deep trees print on a stack sized for them.

use std::fmt::{self, Display, Formatter, Write};

use ferrite_model::{MatchType, Matcher};

use super::ast::*;
use ferrite_model::units::format_duration_ms as format_duration;

impl Display for Expr {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Aggregate(a) => write_aggregate(f, a),
            Expr::Unary(u) => write!(f, "-{}", u.expr),
            Expr::Binary(b) => write_binary(f, b),
            Expr::Paren(p) => write!(f, "({})", p.expr),
            Expr::Subquery(s) => write_subquery(f, s),
            Expr::NumberLiteral(n) => f.write_str(&format_number(n.val)),
            Expr::StringLiteral(s) => f.write_str(&s.go_quoted()),
            Expr::VectorSelector(vs) => write_selector(f, vs, None),
            Expr::MatrixSelector(ms) => write_selector(f, &ms.vs, Some(&ms.range)),
            Expr::Call(c) => {
                write!(f, "{}(", c.func.name)?;
                write_joined(f, &c.args)?;
                f.write_char(')')
            }
        }
    }
}

/// A number as Go's `FormatFloat(v, 'f', -1, 64)` writes it.
pub fn format_number(v: f64) -> String {
    if v.is_infinite() {
        return if v > 0.0 { "+Inf" } else { "-Inf" }.into();
    }
    if v.is_nan() {
        return "NaN".into();
    }
    format!("{v}")
}

fn write_joined<T: Display>(f: &mut Formatter<'_>, items: &[T]) -> fmt::Result {
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{item}")?;
    }
    Ok(())
}

/// Whether a label name can be written without quotes.
fn is_plain_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

fn write_label(f: &mut Formatter<'_>, name: &str) -> fmt::Result {
    if is_plain_name(name) {
        f.write_str(name)
    } else {
        f.write_str(&go_quote(name))
    }
}

fn write_labels(f: &mut Formatter<'_>, labels: &[String]) -> fmt::Result {
    f.write_char('(')?;
    for (i, l) in labels.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write_label(f, l)?;
    }
    f.write_char(')')
}

fn write_aggregate(f: &mut Formatter<'_>, a: &AggregateExpr) -> fmt::Result {
    f.write_str(a.op.name())?;
    match &a.modifier {
        Some(LabelModifier::Include(l)) => {
            f.write_str(" by ")?;
            write_labels(f, l)?;
            f.write_char(' ')?;
        }
        Some(LabelModifier::Exclude(l)) => {
            f.write_str(" without ")?;
            write_labels(f, l)?;
            f.write_char(' ')?;
        }
        None => {}
    }
    f.write_char('(')?;
    if let Some(p) = &a.param {
        write!(f, "{p}, ")?;
    }
    write!(f, "{})", a.expr)
}

fn write_binary(f: &mut Formatter<'_>, b: &BinaryExpr) -> fmt::Result {
    write!(f, "{} {}", b.lhs, b.op)?;
    if let Some(m) = &b.modifier {
        write_bin_modifier(f, m)?;
    }
    write!(f, " {}", b.rhs)
}

fn write_bin_modifier(f: &mut Formatter<'_>, m: &BinModifier) -> fmt::Result {
    if m.return_bool {
        f.write_str(" bool")?;
    }
    let group = match &m.card {
        VectorMatchCardinality::ManyToOne(l) => Some(("left", l)),
        VectorMatchCardinality::OneToMany(l) => Some(("right", l)),
        _ => None,
    };
    let (tag, labels) = match &m.matching {
        Some(LabelModifier::Include(l)) => ("on", &l[..]),
        Some(LabelModifier::Exclude(l)) => ("ignoring", &l[..]),
        None => ("ignoring", &[][..]),
    };
    if tag == "on" || !labels.is_empty() || group.is_some() {
        write!(f, " {tag} ")?;
        write_labels(f, labels)?;
    }
    if let Some((side, l)) = group {
        write!(f, " group_{side} ")?;
        write_labels(f, l)?;
    }
    Ok(())
}

impl Display for Duration {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Duration::Fixed(ms) => f.write_str(&format_duration(*ms)),
            Duration::Expr(e, _) => write!(f, "{e}"),
        }
    }
}

impl Display for DurationExpr {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            DurationExpr::Number {
                secs,
                duration: true,
            } => {
                let ms = (secs * 1000.0).round() as i64;
                f.write_str(&format_duration(ms))
            }
            DurationExpr::Number { secs, .. } => f.write_str(&format_number(*secs)),
            DurationExpr::Step => f.write_str("step()"),
            DurationExpr::Range => f.write_str("range()"),
            DurationExpr::Neg(e) => write!(f, "-{e}"),
            DurationExpr::Paren(e) => write!(f, "({e})"),
            DurationExpr::Binary { op, lhs, rhs } => write!(f, "{lhs} {op} {rhs}"),
            DurationExpr::MinOf(a, b) => write!(f, "min_of({a}, {b})"),
            DurationExpr::MaxOf(a, b) => write!(f, "max_of({a}, {b})"),
        }
    }
}

fn write_at(f: &mut Formatter<'_>, at: &Option<AtModifier>) -> fmt::Result {
    match at {
        Some(AtModifier::At(ms)) => write!(f, " @ {:.3}", *ms as f64 / 1000.0),
        Some(AtModifier::Start) => f.write_str(" @ start()"),
        Some(AtModifier::End) => f.write_str(" @ end()"),
        None => Ok(()),
    }
}

fn write_offset(f: &mut Formatter<'_>, offset: &Option<Duration>) -> fmt::Result {
    match offset {
        None | Some(Duration::Fixed(0)) => Ok(()),
        Some(Duration::Expr(e, _)) if needs_parens_as_offset(e) => write!(f, " offset ({e})"),
        Some(d) => write!(f, " offset {d}"),
    }
}

/// An offset takes one operand; wider expressions print in parentheses.
fn needs_parens_as_offset(e: &DurationExpr) -> bool {
    match e {
        DurationExpr::Binary { .. } => true,
        DurationExpr::Neg(inner) => needs_parens_as_offset(inner),
        _ => false,
    }
}

fn write_selector(
    f: &mut Formatter<'_>,
    vs: &VectorSelector,
    range: Option<&Duration>,
) -> fmt::Result {
    let name = vs.name.as_deref().unwrap_or("");
    let mut shown: Vec<String> = vs
        .matchers
        .iter()
        .filter(|m| !is_name_matcher(m, name))
        .map(matcher_text)
        .collect();
    shown.sort();
    f.write_str(name)?;
    if !shown.is_empty() {
        write!(f, "{{{}}}", shown.join(","))?;
    }
    let extended = if vs.anchored {
        " anchored"
    } else if vs.smoothed {
        " smoothed"
    } else {
        ""
    };
    match range {
        Some(r) => write!(f, "[{r}]{extended}")?,
        None => {
            write_at(f, &vs.at)?;
            f.write_str(extended)?;
            return write_offset(f, &vs.offset);
        }
    }
    write_at(f, &vs.at)?;
    write_offset(f, &vs.offset)
}

fn is_name_matcher(m: &Matcher, name: &str) -> bool {
    !name.is_empty()
        && m.name == crate::storage::METRIC_NAME
        && m.kind == MatchType::Equal
        && m.value == name
}

fn matcher_text(m: &Matcher) -> String {
    let op = m.kind.operator();
    let value = go_quote(&m.value);
    if is_plain_name(&m.name) {
        format!("{}{op}{value}", m.name)
    } else {
        format!("{}{op}{value}", go_quote(&m.name))
    }
}

fn write_subquery(f: &mut Formatter<'_>, s: &SubqueryExpr) -> fmt::Result {
    write!(f, "{}[{}:", s.expr, s.range)?;
    if let Some(step) = &s.step {
        write!(f, "{step}")?;
    }
    f.write_char(']')?;
    write_at(f, &s.at)?;
    write_offset(f, &s.offset)
}

/// A string quoted as Go's `strconv.Quote` does (which PromQL reads back).
pub fn go_quote(s: &str) -> String {
    ferrite_model::goquote::quote(s)
}

/// Bytes quoted as Go's `strconv.Quote` does: bytes that are not UTF-8
/// as `\xNN`.
pub fn go_quote_bytes(bytes: &[u8]) -> String {
    ferrite_model::goquote::quote_bytes(bytes)
}

#[cfg(test)]
mod tests {
    use super::super::parse_expr;
    use proptest::prelude::*;

    /// Parses and prints; the text must parse.
    fn round(q: &str) -> String {
        match parse_expr(q) {
            Ok(e) => e.to_string(),
            Err(err) => panic!("{q:?} does not parse: {err}"),
        }
    }

    #[test]
    fn prints_as_prometheus_does() {
        for (q, want) in [
            ("sum by(a,b)(rate(x[5m]))", "sum by (a, b) (rate(x[5m]))"),
            ("topk(3, x) without(a)", "topk without (a) (3, x)"),
            ("a + on(b) group_left(c) d", "a + on (b) group_left (c) d"),
            ("a > bool 1", "a > bool 1"),
            (
                "x{b=\"1\",a=~\"2\"} offset -5m @ 10",
                "x{a=~\"2\",b=\"1\"} @ 10.000 offset -5m",
            ),
            ("x[1h30m:1m] @ start()", "x[1h30m:1m] @ start()"),
            ("x[5m + step()] anchored", "x[5m + step()] anchored"),
            ("x offset (1m * 2)", "x offset (1m * 2)"),
            ("h </ 2", "h </ 2"),
            ("-(a)", "-(a)"),
            ("{\"a.b\"=\"c\"}", "{\"a.b\"=\"c\"}"),
            ("\"a\\nb\"", "\"a\\nb\""),
            ("2 ^ 3 ^ 2", "2 ^ 3 ^ 2"),
            ("Inf", "+Inf"),
        ] {
            assert_eq!(round(q), want, "{q}");
        }
    }

    /// Random queries of the constructs the printer writes.
    fn query() -> impl Strategy<Value = String> {
        let leaf = prop_oneof![
            Just("x".to_string()),
            Just("y{a=\"(\\\"\",b!~\"c|d\"}".to_string()),
            Just("1.5".to_string()),
            Just("-2".to_string()),
            Just("\"s\\t\"".to_string()),
            Just("x offset 1m".to_string()),
            Just("x @ 10".to_string()),
            Just("x smoothed".to_string()),
            Just("rate(x[5m] anchored)".to_string()),
            Just("rate(x[1m + step() * 2] offset -(1m))".to_string()),
            Just("x[5m:] @ end() offset min_of(1m, range())".to_string()),
        ];
        leaf.prop_recursive(4, 32, 2, |inner| {
            prop_oneof![
                inner.clone().prop_map(|e| format!("sum by (a) ({e})")),
                inner
                    .clone()
                    .prop_map(|e| format!("count_values(\"v\", {e})")),
                inner.clone().prop_map(|e| format!("abs({e})")),
                inner.clone().prop_map(|e| format!("({e})")),
                inner.clone().prop_map(|e| format!("-({e})")),
                inner.clone().prop_map(|e| format!("({e})[5m:1m]")),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("{a} + ignoring (c) {b}")),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("{a} ^ {b} * {a}")),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("{a} </ {b}")),
                (inner.clone(), inner).prop_map(|(a, b)| format!("{a} unless on () {b}")),
            ]
        })
    }

    proptest! {
        /// Arbitrary text of PromQL's characters: the parser answers
        /// without panicking, and what parses prints as text that parses
        /// to the same printed form (the `promql_parse` fuzz target's
        /// property).
        #[test]
        fn any_text_parses_or_fails_cleanly(q in r#"[a-z_:{}()\[\]"'`=~!<>/+*%^@,. 0-9\-#\n]{0,40}"#) {
            if let Ok(e) = parse_expr(&q) {
                let printed = e.to_string();
                let again = round(&printed);
                prop_assert_eq!(again, printed);
            }
        }

        /// Printing a parsed query gives text that parses to a tree
        /// printed the same way.
        #[test]
        fn printing_round_trips(q in query()) {
            if let Ok(e) = parse_expr(&q) {
                let printed = e.to_string();
                let again = round(&printed);
                prop_assert_eq!(again, printed);
            }
        }
    }
}
