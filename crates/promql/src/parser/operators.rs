//! Parsing aggregations and binary operators' modifiers, and building
//! binary expressions.

use super::ast::*;
use super::lexer::{Keyword, Tok};
use super::parse::{Node, Parser};
use super::ParseError;

type PResult<T> = Result<T, ParseError>;

impl Parser<'_> {
    /// `op [by|without (...)] (args) [by|without (...)]`.
    pub(super) fn aggregation(&mut self) -> PResult<Node> {
        let op_tok = self.next();
        let Tok::Keyword(k) = op_tok.tok else {
            return Err(self.unexpected("aggregation", ""));
        };
        let op =
            AggregateOp::from_name(k.text()).ok_or_else(|| self.unexpected("aggregation", ""))?;
        let mut modifier = self.aggregate_modifier()?;
        if self.peek().tok != Tok::LeftParen {
            return Err(self.unexpected("aggregation", ""));
        }
        let mut args = self.call_args()?;
        if modifier.is_none() {
            modifier = self.aggregate_modifier()?;
        }
        let end = self.last_end();
        let at = op_tok.start;
        let wanted = if op.takes_param() { 2 } else { 1 };
        if args.is_empty() {
            return Err(ParseError::new(
                self.query,
                at,
                "no arguments for aggregate expression provided",
            ));
        }
        if args.len() != wanted {
            return Err(ParseError::new(
                self.query,
                at,
                format!(
                    "wrong number of arguments for aggregate expression provided, expected {wanted}, got {}",
                    args.len()
                ),
            ));
        }
        let expr = args
            .pop()
            .ok_or_else(|| self.unexpected("aggregation", ""))?;
        let param = args.pop();
        self.check_aggregation(op, &expr, param.as_ref());
        Ok(Node {
            expr: Expr::Aggregate(AggregateExpr {
                op,
                expr: Box::new(expr.expr),
                param: param.map(|p| Box::new(p.expr)),
                modifier,
                pos: at,
            }),
            ty: ValueType::Vector,
            start: at,
            end,
        })
    }

    fn aggregate_modifier(&mut self) -> PResult<Option<LabelModifier>> {
        Ok(match self.peek().tok {
            Tok::Keyword(Keyword::By) => {
                self.next();
                Some(LabelModifier::Include(self.grouping_labels()?))
            }
            Tok::Keyword(Keyword::Without) => {
                self.next();
                Some(LabelModifier::Exclude(self.grouping_labels()?))
            }
            _ => None,
        })
    }

    /// `bool`, `on(...)`/`ignoring(...)`, `group_left(...)`/
    /// `group_right(...)` after a binary operator.
    pub(super) fn bin_modifier(&mut self) -> PResult<BinModifier> {
        let mut m = BinModifier {
            card: VectorMatchCardinality::OneToOne,
            matching: None,
            return_bool: false,
        };
        if self.peek().tok == Tok::Keyword(Keyword::Bool) {
            self.next();
            m.return_bool = true;
        }
        let on = match self.peek().tok {
            Tok::Keyword(Keyword::On) => true,
            Tok::Keyword(Keyword::Ignoring) => false,
            _ => return self.fill_modifiers(m),
        };
        self.next();
        let labels = self.grouping_labels()?;
        m.matching = Some(if on {
            LabelModifier::Include(labels)
        } else {
            LabelModifier::Exclude(labels)
        });
        let left = match self.peek().tok {
            Tok::Keyword(Keyword::GroupLeft) => true,
            Tok::Keyword(Keyword::GroupRight) => false,
            _ => return self.fill_modifiers(m),
        };
        self.next();
        let include = if self.peek().tok == Tok::LeftParen {
            self.grouping_labels()?
        } else {
            Vec::new()
        };
        m.card = if left {
            VectorMatchCardinality::ManyToOne(include)
        } else {
            VectorMatchCardinality::OneToMany(include)
        };
        self.fill_modifiers(m)
    }

    /// `fill(...)` and friends need Prometheus'
    /// `--enable-feature=promql-binop-fill-modifiers`, off by default.
    fn fill_modifiers(&mut self, m: BinModifier) -> PResult<BinModifier> {
        let t = self.peek();
        if matches!(
            t.tok,
            Tok::Keyword(Keyword::Fill | Keyword::FillLeft | Keyword::FillRight)
        ) {
            return Err(ParseError::new(
                self.query,
                t.start,
                "binop fill modifiers are experimental and not enabled",
            ));
        }
        Ok(m)
    }

    /// `lhs op rhs`, checked.
    pub(super) fn binary(
        &mut self,
        op: BinaryOp,
        op_at: usize,
        mut modifier: BinModifier,
        lhs: Node,
        rhs: Node,
    ) -> Node {
        let ty = if lhs.ty == ValueType::Scalar && rhs.ty == ValueType::Scalar {
            ValueType::Scalar
        } else {
            ValueType::Vector
        };
        if op.is_set() && modifier.card == VectorMatchCardinality::OneToOne {
            modifier.card = VectorMatchCardinality::ManyToMany;
        }
        self.check_binary(op, op_at, &modifier, &lhs, &rhs);
        let keep_matching = lhs.ty == ValueType::Vector && rhs.ty == ValueType::Vector;
        let modifier = if keep_matching || modifier.return_bool {
            Some(BinModifier {
                matching: if keep_matching {
                    modifier.matching
                } else {
                    None
                },
                card: if keep_matching {
                    modifier.card
                } else {
                    VectorMatchCardinality::OneToOne
                },
                return_bool: modifier.return_bool,
            })
        } else {
            None
        };
        Node {
            expr: Expr::Binary(BinaryExpr {
                op,
                lhs: Box::new(lhs.expr),
                rhs: Box::new(rhs.expr),
                modifier,
                pos: lhs.start,
            }),
            ty,
            start: lhs.start,
            end: rhs.end,
        }
    }
}
