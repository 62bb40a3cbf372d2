//! Parsing what follows an expression: ranges (`[5m]`), subqueries
//! (`[5m:1m]`), `offset`, `@`, `anchored` and `smoothed`, and the duration
//! expressions ranges, steps and offsets may be written as.

use super::ast::*;
use super::lexer::{Keyword, Tok};
use super::parse::{binary_op, Node, Parser};
use super::ParseError;

type PResult<T> = Result<T, ParseError>;

/// The precedence unary signs bind with in duration expressions (`*`'s).
const UNARY_PRECEDENCE: u8 = 5;

impl Parser<'_> {
    /// `node[range]` or `node[range:step]`.
    pub(super) fn range_or_subquery(&mut self, node: Node) -> PResult<Node> {
        self.next();
        let range = self.positive_duration("subquery or range selector")?;
        let step = match self.peek().tok {
            Tok::RightBracket => {
                let close = self.next();
                return self.matrix(node, range, close.end);
            }
            Tok::Colon => {
                self.next();
                if self.peek().tok == Tok::RightBracket {
                    None
                } else {
                    Some(self.positive_duration("subquery selector")?)
                }
            }
            _ => return Err(self.unexpected("subquery or range", "\":\" or \"]\"")),
        };
        let close = self.expect(Tok::RightBracket, "subquery selector", "\"]\"")?;
        if node.ty != ValueType::Vector {
            self.type_err(
                node.start,
                format!(
                    "subquery is only allowed on instant vector, got {} instead",
                    value_type_name(node.ty)
                ),
            );
        }
        Ok(Node {
            expr: Expr::Subquery(SubqueryExpr {
                expr: Box::new(node.expr),
                range,
                step,
                offset: None,
                at: None,
                pos: node.start,
            }),
            ty: ValueType::Matrix,
            start: node.start,
            end: close.end,
        })
    }

    fn matrix(&mut self, node: Node, range: Duration, end: usize) -> PResult<Node> {
        let vs = match node.expr {
            Expr::VectorSelector(vs) => vs,
            _ => return Err(self.err_at(node.start, "ranges only allowed for vector selectors")),
        };
        if vs.offset.is_some() {
            return Err(self.err_at(node.start, "no offset modifiers allowed before range"));
        }
        if vs.at.is_some() {
            return Err(self.err_at(node.start, "no @ modifiers allowed before range"));
        }
        Ok(Node {
            expr: Expr::MatrixSelector(MatrixSelector { vs, range }),
            ty: ValueType::Matrix,
            start: node.start,
            end,
        })
    }

    fn err_at(&self, at: usize, msg: &str) -> ParseError {
        ParseError::new(self.query, at, msg)
    }

    /// A range or step: a duration expression that must be positive.
    fn positive_duration(&mut self, context: &str) -> PResult<Duration> {
        if matches!(self.peek().tok, Tok::RightBracket | Tok::Colon | Tok::Eof) {
            return Err(self.unexpected(context, "number, duration, step(), or range()"));
        }
        let start = self.peek().start;
        let e = self.duration_expr(0)?;
        let end = self.last_end();
        match e {
            DurationExpr::Number { secs, .. } if secs <= 0.0 => {
                Err(self.err_at(start, "duration must be greater than 0"))
            }
            DurationExpr::Number { secs, .. } => Ok(Duration::Fixed(secs_to_ms(secs))),
            e => Ok(Duration::Expr(Box::new(e), (start, end))),
        }
    }

    /// `offset d`: one signed literal, `step()`, `range()`, `min_of(..)`,
    /// `max_of(..)` or parenthesised expression (`x offset 1m + 1` adds
    /// to `x offset 1m`).
    pub(super) fn offset(&mut self, mut node: Node) -> PResult<Node> {
        let kw = self.next();
        let start = self.peek().start;
        let negate = match self.peek().tok {
            Tok::Add | Tok::Sub => self.next().tok == Tok::Sub,
            _ => false,
        };
        let atom = self.duration_atom("offset")?;
        let end = self.last_end();
        let d = match atom {
            DurationExpr::Number { secs, .. } => {
                let secs = if negate { -secs } else { secs };
                if secs.abs() > MAX_DURATION_SECS {
                    return Err(self.err_at(start, "duration out of range"));
                }
                Duration::Fixed(secs_to_ms(secs))
            }
            e if negate => Duration::Expr(Box::new(DurationExpr::Neg(Box::new(e))), (start, end)),
            e => Duration::Expr(Box::new(e), (start, end)),
        };
        let slot = match &mut node.expr {
            Expr::VectorSelector(vs) => &mut vs.offset,
            Expr::MatrixSelector(ms) => &mut ms.vs.offset,
            Expr::Subquery(sq) => &mut sq.offset,
            _ => return Err(self.err_at(node.start, "offset modifier must be preceded by an instant vector selector or range vector selector or a subquery")),
        };
        if slot.is_some() {
            return Err(self.err_at(kw.start, "offset may not be set multiple times"));
        }
        *slot = Some(d);
        node.end = end;
        Ok(node)
    }

    /// `@ t`, `@ start()`, `@ end()`.
    pub(super) fn at(&mut self, mut node: Node) -> PResult<Node> {
        let at_tok = self.next();
        let at = self.at_value()?;
        let slot = match &mut node.expr {
            Expr::VectorSelector(vs) => &mut vs.at,
            Expr::MatrixSelector(ms) => &mut ms.vs.at,
            Expr::Subquery(sq) => &mut sq.at,
            _ => return Err(self.err_at(node.start, "@ modifier must be preceded by an instant vector selector or range vector selector or a subquery")),
        };
        if slot.is_some() {
            return Err(self.err_at(at_tok.start, "@ <timestamp> may not be set multiple times"));
        }
        *slot = Some(at);
        node.end = self.last_end();
        Ok(node)
    }

    fn at_value(&mut self) -> PResult<AtModifier> {
        let t = self.peek();
        if let Tok::Keyword(k @ (Keyword::Start | Keyword::End)) = t.tok {
            self.next();
            self.expect(Tok::LeftParen, "@", "\"(\"")?;
            self.expect(Tok::RightParen, "@", "\")\"")?;
            return Ok(if k == Keyword::Start {
                AtModifier::Start
            } else {
                AtModifier::End
            });
        }
        let negate = match t.tok {
            Tok::Add | Tok::Sub => self.next().tok == Tok::Sub,
            _ => false,
        };
        let n = self.peek();
        if !matches!(n.tok, Tok::Number | Tok::Duration) {
            return Err(self.unexpected("@", "timestamp"));
        }
        self.next();
        let v = self.number_value(n)?;
        let secs = if negate { -v } else { v };
        let ms = (secs * 1000.0).round();
        if !ms.is_finite() || ms.abs() >= i64::MAX as f64 {
            return Err(self.err_at(
                t.start,
                &format!("timestamp out of bounds for @ modifier: {secs:.6}"),
            ));
        }
        Ok(AtModifier::At(ms as i64))
    }

    /// `anchored` or `smoothed` after a selector.
    pub(super) fn extended_range(&mut self, mut node: Node, k: Keyword) -> PResult<Node> {
        let name = k.text();
        let vs = match &mut node.expr {
            Expr::VectorSelector(vs) => vs,
            Expr::MatrixSelector(ms) => &mut ms.vs,
            Expr::Subquery(_) => {
                return Err(self.err_at(
                    node.start,
                    &format!("{name} modifier is not supported for subqueries"),
                ))
            }
            _ => return Err(self.err_at(node.start, &format!("{name} modifier not implemented"))),
        };
        if k == Keyword::Anchored {
            vs.anchored = true;
        } else {
            vs.smoothed = true;
        }
        if vs.anchored && vs.smoothed {
            return Err(self.err_at(
                node.start,
                "anchored and smoothed modifiers cannot be used together",
            ));
        }
        node.end = self.last_end();
        Ok(node)
    }

    /// A duration expression whose operators bind at least as tightly as
    /// `min_prec`.
    fn duration_expr(&mut self, min_prec: u8) -> PResult<DurationExpr> {
        let mut lhs = self.duration_unary()?;
        while let Some(op) = binary_op(self.peek().tok).filter(|op| op.is_duration_arithmetic()) {
            let prec = op.precedence();
            if prec < min_prec {
                break;
            }
            let op_tok = self.next();
            let next_min = if op.is_right_associative() {
                prec
            } else {
                prec + 1
            };
            let rhs = self.duration_expr(next_min)?;
            let zero = matches!(rhs, DurationExpr::Number { secs, .. } if secs == 0.0);
            match op {
                BinaryOp::Div if zero => return Err(self.err_at(op_tok.start, "division by zero")),
                BinaryOp::Mod if zero => return Err(self.err_at(op_tok.start, "modulo by zero")),
                _ => {}
            }
            lhs = DurationExpr::Binary {
                op,
                lhs: Box::new(lhs),
                rhs: Box::new(rhs),
            };
        }
        Ok(lhs)
    }

    fn duration_unary(&mut self) -> PResult<DurationExpr> {
        let t = self.peek();
        if !matches!(t.tok, Tok::Add | Tok::Sub) {
            return self.duration_atom("duration expression");
        }
        self.next();
        let operand = self.duration_expr(UNARY_PRECEDENCE + 1)?;
        if t.tok == Tok::Add {
            return Ok(operand);
        }
        Ok(match operand {
            DurationExpr::Number { secs, duration } => DurationExpr::Number {
                secs: -secs,
                duration,
            },
            e => DurationExpr::Neg(Box::new(e)),
        })
    }

    /// A literal, `step()`, `range()`, `min_of(a, b)`, `max_of(a, b)` or
    /// `(e)`.
    fn duration_atom(&mut self, context: &str) -> PResult<DurationExpr> {
        let t = self.peek();
        match t.tok {
            Tok::Number | Tok::Duration => {
                self.next();
                let secs = self.number_value(t)?;
                if secs.abs() > MAX_DURATION_SECS {
                    return Err(self.err_at(t.start, "duration out of range"));
                }
                Ok(DurationExpr::Number {
                    secs,
                    duration: t.tok == Tok::Duration,
                })
            }
            Tok::Keyword(k @ (Keyword::Step | Keyword::Range)) => {
                self.next();
                self.expect(Tok::LeftParen, context, "\"(\"")?;
                self.expect(Tok::RightParen, context, "\")\"")?;
                Ok(if k == Keyword::Step {
                    DurationExpr::Step
                } else {
                    DurationExpr::Range
                })
            }
            Tok::Keyword(k @ (Keyword::MinOf | Keyword::MaxOf)) => {
                self.next();
                self.expect(Tok::LeftParen, context, "\"(\"")?;
                let a = self.duration_expr(0)?;
                self.expect(Tok::Comma, context, "\",\"")?;
                let b = self.duration_expr(0)?;
                self.expect(Tok::RightParen, context, "\")\"")?;
                let (a, b) = (Box::new(a), Box::new(b));
                Ok(if k == Keyword::MinOf {
                    DurationExpr::MinOf(a, b)
                } else {
                    DurationExpr::MaxOf(a, b)
                })
            }
            Tok::LeftParen => {
                self.next();
                let inner = self.duration_expr(0)?;
                self.expect(Tok::RightParen, context, "\")\"")?;
                Ok(DurationExpr::Paren(Box::new(inner)))
            }
            _ => Err(self.unexpected(context, "number, duration, step(), or range()")),
        }
    }
}

/// Seconds to milliseconds as Prometheus gets them: rounded to
/// nanoseconds, then truncated to milliseconds.
fn secs_to_ms(secs: f64) -> i64 {
    ((secs * 1e9).round() / 1e6).trunc() as i64
}

/// Prometheus' own (undocumented) type names, used by the subquery error.
fn value_type_name(t: ValueType) -> &'static str {
    match t {
        ValueType::Scalar => "scalar",
        ValueType::Vector => "vector",
        ValueType::Matrix => "matrix",
        ValueType::String => "string",
    }
}
