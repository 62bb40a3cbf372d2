//! The PromQL parser: tokens to [`Expr`], by recursive descent with
//! precedence climbing for binary operators.
//!
//! Each token is looked at a constant number of times, so parsing is
//! linear in the query. The parser recurses once per nesting level of the
//! query; callers bound that depth first (`nesting`) and run it on a stack
//! sized for it (`stack`). Every node is type-checked as it is built (its
//! children's types are known then), with Prometheus' messages; a syntax
//! error anywhere wins over a type error, as in Prometheus, which checks
//! types only once the whole query has parsed.

use ferrite_model::{MatchType, Matcher};

use super::ast::*;
use super::functions::function;
use super::lexer::{lex, Keyword, Tok, Token};
use super::unquote::{unquote, unquote_literal};
use super::ParseError;

/// Parses a PromQL expression.
pub fn parse_expr(query: &str) -> Result<Expr, ParseError> {
    let tokens = lex(query)?;
    let mut p = Parser {
        query,
        tokens,
        i: 0,
        type_errors: Vec::new(),
    };
    if p.peek().tok == Tok::Eof {
        return Err(ParseError::new(query, 0, "no expression found in input"));
    }
    let node = p.expr(0)?;
    if p.peek().tok != Tok::Eof {
        return Err(p.unexpected("", ""));
    }
    match p.type_errors.into_iter().next() {
        Some(e) => Err(e.error),
        None => Ok(node.expr),
    }
}

/// An expression with its type and the bytes of the query it spans.
pub(super) struct Node {
    pub expr: Expr,
    pub ty: ValueType,
    pub start: usize,
    pub end: usize,
}

pub(super) struct Parser<'q> {
    pub query: &'q str,
    pub tokens: Vec<Token>,
    pub i: usize,
    /// Type errors in the order found; the first is reported if the
    /// query parses.
    pub type_errors: Vec<TypeError>,
}

/// A type error, and the selector it is about if it is that selector's
/// "at least one non-empty matcher" (which `info`'s second argument is
/// spared).
pub(super) struct TypeError {
    pub error: ParseError,
    pub empty_selector_at: Option<usize>,
}

type PResult<T> = Result<T, ParseError>;

/// The precedence unary minus and plus bind with (that of `*`).
const UNARY_PRECEDENCE: u8 = 5;

impl<'q> Parser<'q> {
    pub fn peek(&self) -> Token {
        self.tokens[self.i.min(self.tokens.len() - 1)]
    }

    fn peek_at(&self, n: usize) -> Token {
        self.tokens[(self.i + n).min(self.tokens.len() - 1)]
    }

    pub fn next(&mut self) -> Token {
        let t = self.peek();
        if t.tok != Tok::Eof {
            self.i += 1;
        }
        t
    }

    /// The end of the last token taken.
    pub(super) fn last_end(&self) -> usize {
        self.i.checked_sub(1).map_or(0, |j| self.tokens[j].end)
    }

    pub fn text(&self, t: Token) -> &'q str {
        t.text(self.query)
    }

    /// Prometheus' "unexpected <token> in <context>, expected <what>".
    pub fn unexpected(&self, context: &str, expected: &str) -> ParseError {
        let t = self.peek();
        let mut msg = format!("unexpected {}", t.describe(self.query));
        if !context.is_empty() {
            msg.push_str(" in ");
            msg.push_str(context);
        }
        if !expected.is_empty() {
            msg.push_str(", expected ");
            msg.push_str(expected);
        }
        ParseError::new(self.query, t.start, msg)
    }

    pub fn expect(&mut self, tok: Tok, context: &str, expected: &str) -> PResult<Token> {
        if self.peek().tok == tok {
            Ok(self.next())
        } else {
            Err(self.unexpected(context, expected))
        }
    }

    /// Records a type error at `at`.
    pub fn type_err(&mut self, at: usize, msg: impl Into<String>) {
        self.type_errors.push(TypeError {
            error: ParseError::new(self.query, at, msg),
            empty_selector_at: None,
        });
    }

    /// An expression whose binary operators bind at least as tightly as
    /// `min_prec`.
    pub fn expr(&mut self, min_prec: u8) -> PResult<Node> {
        let mut lhs = self.unary()?;
        while let Some(op) = binary_op(self.peek().tok) {
            let prec = op.precedence();
            if prec < min_prec {
                break;
            }
            let op_at = self.next().start;
            let modifier = self.bin_modifier()?;
            let next_min = if op.is_right_associative() {
                prec
            } else {
                prec + 1
            };
            let rhs = self.expr(next_min)?;
            lhs = self.binary(op, op_at, modifier, lhs, rhs);
        }
        Ok(lhs)
    }

    /// `-x`, `+x` (binding as `*` does), or a postfix expression.
    fn unary(&mut self) -> PResult<Node> {
        let t = self.peek();
        if !matches!(t.tok, Tok::Add | Tok::Sub) {
            return self.postfix();
        }
        self.next();
        let operand = self.expr(UNARY_PRECEDENCE + 1)?;
        let negate = t.tok == Tok::Sub;
        Ok(self.unary_node(t.start, negate, operand))
    }

    fn unary_node(&mut self, start: usize, negate: bool, operand: Node) -> Node {
        let end = operand.end;
        if let Expr::NumberLiteral(n) = operand.expr {
            let val = if negate { -n.val } else { n.val };
            return Node {
                expr: Expr::NumberLiteral(NumberLiteral { val, pos: start }),
                ty: ValueType::Scalar,
                start,
                end,
            };
        }
        if !matches!(operand.ty, ValueType::Scalar | ValueType::Vector) {
            self.type_err(
                start,
                format!(
                    "unary expression only allowed on expressions of type scalar or instant vector, got {:?}",
                    operand.ty.documented()
                ),
            );
        }
        let ty = operand.ty;
        let expr = if negate {
            Expr::Unary(UnaryExpr {
                expr: Box::new(operand.expr),
                pos: start,
            })
        } else {
            operand.expr
        };
        Node {
            expr,
            ty,
            start,
            end,
        }
    }

    /// A primary expression followed by ranges, subqueries and modifiers.
    fn postfix(&mut self) -> PResult<Node> {
        let mut node = self.primary()?;
        loop {
            node = match self.peek().tok {
                Tok::LeftBracket => self.range_or_subquery(node)?,
                Tok::Keyword(Keyword::Offset) => self.offset(node)?,
                Tok::At => self.at(node)?,
                Tok::Keyword(k @ (Keyword::Anchored | Keyword::Smoothed)) => {
                    self.next();
                    self.extended_range(node, k)?
                }
                _ => return Ok(node),
            };
        }
    }

    fn primary(&mut self) -> PResult<Node> {
        let t = self.peek();
        match t.tok {
            Tok::Number | Tok::Duration => {
                self.next();
                let val = self.number_value(t)?;
                Ok(self.leaf(Expr::NumberLiteral(NumberLiteral { val, pos: t.start }), t))
            }
            Tok::Str => {
                self.next();
                let lit = self.text(t);
                let (val, invalid_utf8) =
                    unquote_literal(lit).ok_or_else(|| unquote_error(self.query, t, lit))?;
                Ok(self.leaf(
                    Expr::StringLiteral(StringLiteral {
                        val,
                        invalid_utf8,
                        pos: t.start,
                    }),
                    t,
                ))
            }
            Tok::LeftParen => self.paren(),
            Tok::LeftBrace => self.vector_selector(None, t.start),
            Tok::Identifier if self.peek_at(1).tok == Tok::LeftParen => self.call(),
            Tok::Identifier | Tok::MetricIdentifier => {
                self.next();
                self.vector_selector(Some(self.text(t).to_string()), t.start)
            }
            Tok::Keyword(k) => self.keyword_primary(k, t),
            _ => Err(self.unexpected("", "")),
        }
    }

    fn keyword_primary(&mut self, k: Keyword, t: Token) -> PResult<Node> {
        let next = self.peek_at(1).tok;
        if k.is_aggregator()
            && matches!(
                next,
                Tok::LeftParen | Tok::Keyword(Keyword::By | Keyword::Without)
            )
        {
            return self.aggregation();
        }
        let callable = matches!(
            k,
            Keyword::Start
                | Keyword::End
                | Keyword::Step
                | Keyword::Range
                | Keyword::MinOf
                | Keyword::MaxOf
        );
        if callable && next == Tok::LeftParen {
            return self.call();
        }
        if k.can_be_metric_name() {
            self.next();
            return self.vector_selector(Some(self.text(t).to_string()), t.start);
        }
        Err(self.unexpected("", ""))
    }

    fn leaf(&self, expr: Expr, t: Token) -> Node {
        let ty = match expr {
            Expr::StringLiteral(_) => ValueType::String,
            _ => ValueType::Scalar,
        };
        Node {
            expr,
            ty,
            start: t.start,
            end: t.end,
        }
    }

    /// A number literal's value; durations are seconds.
    pub fn number_value(&self, t: Token) -> PResult<f64> {
        let text = self.text(t);
        let parsed = if t.tok == Tok::Duration {
            ferrite_model::units::parse_duration_ms(text)
                .map(|ms| ms as f64 / 1000.0)
                .map_err(|e| e.to_string())
        } else {
            parse_number(text).ok_or_else(|| format!("error parsing number: {text:?}"))
        };
        parsed.map_err(|msg| ParseError::new(self.query, t.start, msg))
    }

    pub fn string_value(&self, t: Token) -> PResult<String> {
        let lit = self.text(t);
        unquote(lit).ok_or_else(|| unquote_error(self.query, t, lit))
    }

    fn paren(&mut self) -> PResult<Node> {
        let open = self.next();
        let inner = self.expr(0)?;
        let close = self.expect(Tok::RightParen, "paren expression", "\")\"")?;
        Ok(Node {
            ty: inner.ty,
            expr: Expr::Paren(ParenExpr {
                expr: Box::new(inner.expr),
                pos: open.start,
            }),
            start: open.start,
            end: close.end,
        })
    }

    /// A function call: `name(args...)`.
    fn call(&mut self) -> PResult<Node> {
        let name_tok = self.next();
        let name = self.text(name_tok);
        let Some(func) = function(name) else {
            return Err(ParseError::new(
                self.query,
                name_tok.start,
                format!("unknown function with name {name:?}"),
            ));
        };
        let args = self.call_args()?;
        let end = self.last_end();
        self.check_call(func, &args, name_tok.start);
        Ok(Node {
            expr: Expr::Call(Call {
                func,
                args: args.into_iter().map(|a| a.expr).collect(),
                pos: name_tok.start,
            }),
            ty: func.return_type,
            start: name_tok.start,
            end,
        })
    }

    /// `( expr, expr, ... )`.
    pub fn call_args(&mut self) -> PResult<Vec<Node>> {
        self.expect(Tok::LeftParen, "function call", "\"(\"")?;
        let mut args = Vec::new();
        if self.peek().tok == Tok::RightParen {
            self.next();
            return Ok(args);
        }
        loop {
            args.push(self.expr(0)?);
            match self.peek().tok {
                Tok::Comma => {
                    let comma = self.next();
                    if self.peek().tok == Tok::RightParen {
                        return Err(ParseError::new(
                            self.query,
                            comma.start,
                            "trailing commas not allowed in function call args",
                        ));
                    }
                }
                Tok::RightParen => {
                    self.next();
                    return Ok(args);
                }
                _ => return Err(self.unexpected("function call", "\",\" or \")\"")),
            }
        }
    }

    /// A selector's braces (if any) after its name.
    fn vector_selector(&mut self, name: Option<String>, start: usize) -> PResult<Node> {
        let mut matchers = Vec::new();
        if self.peek().tok == Tok::LeftBrace {
            self.next();
            matchers = self.label_matchers()?;
        }
        let end = self.last_end();
        self.check_selector(name.as_deref(), &matchers, start);
        if let Some(n) = &name {
            matchers.insert(0, Matcher::equal(crate::storage::METRIC_NAME, n));
        }
        Ok(Node {
            expr: Expr::VectorSelector(VectorSelector {
                name,
                matchers,
                offset: None,
                at: None,
                anchored: false,
                smoothed: false,
                pos: start,
            }),
            ty: ValueType::Vector,
            start,
            end,
        })
    }

    /// The matchers inside braces, the `{` already taken.
    fn label_matchers(&mut self) -> PResult<Vec<Matcher>> {
        let mut out = Vec::new();
        loop {
            if self.peek().tok == Tok::RightBrace {
                self.next();
                return Ok(out);
            }
            out.push(self.label_matcher()?);
            match self.peek().tok {
                Tok::Comma => {
                    self.next();
                }
                Tok::RightBrace => {}
                _ => return Err(self.unexpected("label matching", "\",\" or \"}\"")),
            }
        }
    }

    fn label_matcher(&mut self) -> PResult<Matcher> {
        let t = self.peek();
        let name = match t.tok {
            Tok::Identifier => self.text(t).to_string(),
            Tok::Str => self.string_value(t)?,
            _ => return Err(self.unexpected("label matching", "identifier or \"}\"")),
        };
        self.next();
        let kind = match self.peek().tok {
            Tok::Eql => MatchType::Equal,
            Tok::Neq => MatchType::NotEqual,
            Tok::EqlRegex => MatchType::Regex,
            Tok::NeqRegex => MatchType::NotRegex,
            _ if t.tok == Tok::Str => {
                return Ok(Matcher::equal(crate::storage::METRIC_NAME, &name));
            }
            _ => return Err(self.unexpected("label matching", "label matching operator")),
        };
        self.next();
        let v = self.expect(Tok::Str, "label matching", "string")?;
        let value = self.string_value(v)?;
        Matcher::new(kind, &name, &value)
            .map_err(|e| ParseError::new(self.query, v.start, e.to_string()))
    }

    /// `by (a, b)` / `(a, b)` of grouping and matching clauses.
    pub fn grouping_labels(&mut self) -> PResult<Vec<String>> {
        self.expect(Tok::LeftParen, "grouping opts", "\"(\"")?;
        let mut labels = Vec::new();
        loop {
            let t = self.peek();
            let label = match t.tok {
                Tok::RightParen => {
                    self.next();
                    return Ok(labels);
                }
                Tok::Identifier | Tok::MetricIdentifier | Tok::Keyword(_) => {
                    self.text(t).to_string()
                }
                Tok::Str => {
                    let v = self.string_value(t)?;
                    if v.is_empty() || v.contains('\u{fffd}') {
                        return Err(ParseError::new(
                            self.query,
                            t.start,
                            format!("invalid label name for grouping: {v:?}"),
                        ));
                    }
                    v
                }
                _ => return Err(self.unexpected("grouping opts", "label")),
            };
            self.next();
            labels.push(label);
            match self.peek().tok {
                Tok::Comma => {
                    self.next();
                }
                Tok::RightParen => {}
                _ => return Err(self.unexpected("grouping opts", "\",\" or \")\"")),
            }
        }
    }
}

fn unquote_error(query: &str, t: Token, lit: &str) -> ParseError {
    ParseError::new(
        query,
        t.start,
        format!("error unquoting string {lit:?}: invalid syntax"),
    )
}

/// The binary operator a token is, if any.
pub(super) fn binary_op(tok: Tok) -> Option<BinaryOp> {
    Some(match tok {
        Tok::Add => BinaryOp::Add,
        Tok::Sub => BinaryOp::Sub,
        Tok::Mul => BinaryOp::Mul,
        Tok::Div => BinaryOp::Div,
        Tok::Mod => BinaryOp::Mod,
        Tok::Pow => BinaryOp::Pow,
        Tok::Eqlc => BinaryOp::Eq,
        Tok::Neq => BinaryOp::Ne,
        Tok::Lss => BinaryOp::Lt,
        Tok::Lte => BinaryOp::Le,
        Tok::Gtr => BinaryOp::Gt,
        Tok::Gte => BinaryOp::Ge,
        Tok::TrimUpper => BinaryOp::TrimUpper,
        Tok::TrimLower => BinaryOp::TrimLower,
        Tok::Keyword(Keyword::Atan2) => BinaryOp::Atan2,
        Tok::Keyword(Keyword::And) => BinaryOp::And,
        Tok::Keyword(Keyword::Or) => BinaryOp::Or,
        Tok::Keyword(Keyword::Unless) => BinaryOp::Unless,
        _ => return None,
    })
}

/// A number as Prometheus reads one: an integer in Go's notation (`0x1f`,
/// `017`, `1_000`) or a float (`1e3`, `.5`, `Inf`, `NaN`).
pub fn parse_number(text: &str) -> Option<f64> {
    if let Some(i) = parse_go_int(text) {
        return Some(i as f64);
    }
    let lower = text.to_ascii_lowercase();
    match lower.trim_start_matches(['+', '-']) {
        "inf" | "infinity" => {
            return Some(if lower.starts_with('-') {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            })
        }
        "nan" => return Some(f64::NAN),
        _ => {}
    }
    if text.contains("__") || text.starts_with('_') || text.ends_with('_') {
        return None;
    }
    text.replace('_', "").parse::<f64>().ok()
}

/// Go's `strconv.ParseInt(s, 0, 64)`.
fn parse_go_int(text: &str) -> Option<i64> {
    let (radix, digits) = match text.as_bytes() {
        [b'0', b'x' | b'X', ..] => (16, &text[2..]),
        [b'0', b'o' | b'O', ..] => (8, &text[2..]),
        [b'0', b'b' | b'B', ..] => (2, &text[2..]),
        [b'0', _, ..] => (8, &text[1..]),
        _ => (10, text),
    };
    let digits = digits
        .strip_prefix('_')
        .filter(|_| radix != 10)
        .unwrap_or(digits);
    if digits.is_empty() || digits.contains("__") || digits.ends_with('_') {
        return None;
    }
    if radix == 10 && text.contains('_') && text.starts_with('_') {
        return None;
    }
    i64::from_str_radix(&digits.replace('_', ""), radix).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(q: &str) -> String {
        match parse_expr(q) {
            Ok(e) => panic!("{q:?} parsed as {e}"),
            Err(e) => e.to_string(),
        }
    }

    fn tree(q: &str) -> String {
        parse_expr(q)
            .map(|e| shape(&e))
            .unwrap_or_else(|e| e.to_string())
    }

    /// The tree with every operation in parentheses (and the query's own
    /// parentheses dropped).
    fn shape(e: &Expr) -> String {
        match e {
            Expr::Paren(p) => shape(&p.expr),
            Expr::Unary(u) => format!("(-{})", shape(&u.expr)),
            Expr::Binary(b) => format!("({} {} {})", shape(&b.lhs), b.op, shape(&b.rhs)),
            other => other.to_string(),
        }
    }

    #[test]
    fn precedence_and_associativity() {
        let same = |a: &str, b: &str| assert_eq!(tree(a), tree(b), "{a} vs {b}");
        same("a + b * c", "a + (b * c)");
        same("a - b - c", "(a - b) - c");
        same("2 ^ 3 ^ 2", "2 ^ (3 ^ 2)");
        same("-a ^ 2", "-(a ^ 2)");
        same("-a * 2", "(-a) * 2");
        same("a or b and c", "a or (b and c)");
        same("a > b + 1", "a > (b + 1)");
        same("h </ 2 + 1", "h </ (2 + 1)");
        same("x offset 1m + 1", "(x offset 1m) + 1");
        same("x offset -2 ^ 2", "(x offset -2) ^ 2");
        same("-1", "(-1)");
    }

    #[test]
    fn errors_have_prometheus_texts() {
        for (q, want) in [
            ("", "1:1: parse error: no expression found in input"),
            ("sum(", "1:5: parse error: unclosed left parenthesis"),
            ("foo{", "1:5: parse error: unexpected end of input inside braces"),
            ("rate(x)", "1:6: parse error: expected type range vector in call to function \"rate\", got instant vector"),
            ("nope(x)", "1:1: parse error: unknown function with name \"nope\""),
            ("{}", "1:1: parse error: vector selector must contain at least one non-empty matcher"),
            ("x{__name__=\"y\"}", "1:1: parse error: metric name must not be set twice: \"x\" or \"y\""),
            ("1 > 2", "1:3: parse error: comparisons between scalars must use BOOL modifier"),
            ("sum(x) offset 1m", "1:1: parse error: offset modifier must be preceded by an instant vector selector or range vector selector or a subquery"),
            ("x[0s]", "1:3: parse error: duration must be greater than 0"),
            ("(x)[5m]", "1:1: parse error: ranges only allowed for vector selectors"),
            ("x[5m] smoothed anchored", "1:1: parse error: anchored and smoothed modifiers cannot be used together"),
            ("x[5m:1m] anchored", "1:1: parse error: anchored modifier is not supported for subqueries"),
            ("topk(x)", "1:1: parse error: wrong number of arguments for aggregate expression provided, expected 2, got 1"),
            ("x + on(a) group_left(a) y", "1:3: parse error: label \"a\" must not occur in ON and GROUP clause at once"),
            ("rate(x[5m],)", "1:11: parse error: trailing commas not allowed in function call args"),
            ("x\n + $", "2:4: parse error: unexpected character: '$'"),
        ] {
            assert_eq!(err(q), want, "{q}");
        }
    }

    #[test]
    fn numbers_as_go_reads_them() {
        for (text, v) in [
            ("0x1f", 31.0),
            ("017", 15.0),
            ("1_000", 1000.0),
            ("1e3", 1000.0),
            (".5", 0.5),
        ] {
            assert_eq!(parse_number(text), Some(v), "{text}");
        }
        assert!(parse_number("NaN").is_some_and(f64::is_nan));
        assert_eq!(parse_number("1__0"), None);
    }

    #[test]
    fn keywords_can_be_metric_names() {
        for q in ["sum", "by", "offset", "step", "anchored", "start + end"] {
            assert!(parse_expr(q).is_ok(), "{q}: {}", tree(q));
        }
    }
}
