//! Type checks of nodes as they are built, with Prometheus' messages.

use ferrite_model::Matcher;

use super::ast::*;
use super::functions::Function;
use super::parse::{Node, Parser, TypeError};
use super::ParseError;

impl Parser<'_> {
    pub(super) fn check_call(&mut self, func: &Function, args: &[Node], at: usize) {
        let (want, got) = (func.arg_types.len(), args.len());
        let name = func.name;
        if func.variadic == 0 {
            if want != got {
                self.type_err(
                    at,
                    format!("expected {want} argument(s) in call to {name:?}, got {got}"),
                );
            }
        } else {
            let least = want.saturating_sub(1);
            let most = least + func.variadic.max(0) as usize;
            if least > got {
                self.type_err(
                    at,
                    format!("expected at least {least} argument(s) in call to {name:?}, got {got}"),
                );
            } else if func.variadic > 0 && most < got {
                self.type_err(
                    at,
                    format!("expected at most {most} argument(s) in call to {name:?}, got {got}"),
                );
            }
        }
        if name == "info" && args.len() > 1 {
            self.check_info_selector(&args[1], at);
        }
        for (i, arg) in args.iter().enumerate() {
            let i = if i >= want {
                if func.variadic == 0 {
                    break;
                }
                want - 1
            } else {
                i
            };
            let t = func.arg_types[i];
            if arg.ty != t {
                self.type_err(
                    arg.start,
                    format!(
                        "expected type {} in call to function {name:?}, got {}",
                        t.documented(),
                        arg.ty.documented()
                    ),
                );
            }
        }
    }

    /// `info`'s second argument: label matchers only, which may all
    /// match the empty string.
    fn check_info_selector(&mut self, arg: &Node, at: usize) {
        if arg.ty != ValueType::Vector {
            self.type_err(
                at,
                format!(
                    "expected type instant vector in call to function \"info\", got {}",
                    arg.ty.documented()
                ),
            );
        }
        match &arg.expr {
            Expr::VectorSelector(vs) if vs.name.is_some() => self.type_err(
                arg.start,
                "expected label selectors only, got vector selector instead",
            ),
            Expr::VectorSelector(_) => self
                .type_errors
                .retain(|e| e.empty_selector_at != Some(arg.start)),
            _ => self.type_err(arg.start, "expected label selectors only"),
        }
    }

    pub(super) fn check_aggregation(&mut self, op: AggregateOp, expr: &Node, param: Option<&Node>) {
        self.expect_type(expr, ValueType::Vector, "aggregation expression");
        let want = match op {
            AggregateOp::CountValues => ValueType::String,
            op if op.takes_param() => ValueType::Scalar,
            _ => return,
        };
        if let Some(p) = param {
            self.expect_type(p, want, "aggregation parameter");
        }
    }

    fn expect_type(&mut self, node: &Node, want: ValueType, context: &str) {
        if node.ty != want {
            self.type_err(
                node.start,
                format!(
                    "expected type {} in {context}, got {}",
                    want.documented(),
                    node.ty.documented()
                ),
            );
        }
    }

    pub(super) fn check_selector(&mut self, name: Option<&str>, matchers: &[Matcher], at: usize) {
        if let Some(name) = name {
            if let Some(m) = matchers
                .iter()
                .find(|m| m.name == crate::storage::METRIC_NAME)
            {
                self.type_err(
                    at,
                    format!(
                        "metric name must not be set twice: {name:?} or {:?}",
                        m.value
                    ),
                );
            }
            return;
        }
        if matchers.iter().all(|m| m.matches("")) {
            self.type_errors.push(TypeError {
                error: ParseError::new(
                    self.query,
                    at,
                    "vector selector must contain at least one non-empty matcher",
                ),
                empty_selector_at: Some(at),
            });
        }
    }

    pub(super) fn check_binary(
        &mut self,
        op: BinaryOp,
        op_at: usize,
        m: &BinModifier,
        lhs: &Node,
        rhs: &Node,
    ) {
        let (lt, rt) = (lhs.ty, rhs.ty);
        let comparison = op.is_comparison();
        if m.return_bool && !comparison {
            self.type_err(
                op_at,
                "bool modifier can only be used on comparison operators",
            );
        }
        if comparison && !m.return_bool && lt == ValueType::Scalar && rt == ValueType::Scalar {
            self.type_err(op_at, "comparisons between scalars must use BOOL modifier");
        }
        self.check_group_labels(m, op_at);
        for side in [lhs, rhs] {
            if !matches!(side.ty, ValueType::Scalar | ValueType::Vector) {
                self.type_err(
                    side.start,
                    "binary expression must contain only scalar and instant vector types",
                );
            }
        }
        self.check_matching(op, m, lhs, rt);
    }

    /// Vector matching, and set operators, need two instant vectors.
    fn check_matching(&mut self, op: BinaryOp, m: &BinModifier, lhs: &Node, rt: ValueType) {
        let vectors = lhs.ty == ValueType::Vector && rt == ValueType::Vector;
        if !vectors {
            if m.matching.as_ref().is_some_and(|l| !l.labels().is_empty()) {
                self.type_err(
                    lhs.start,
                    "vector matching only allowed between instant vectors",
                );
            }
        } else if op.is_set() {
            if matches!(
                m.card,
                VectorMatchCardinality::OneToMany(_) | VectorMatchCardinality::ManyToOne(_)
            ) {
                self.type_err(
                    lhs.start,
                    format!("no grouping allowed for {:?} operation", op.text()),
                );
            }
            if m.card != VectorMatchCardinality::ManyToMany {
                self.type_err(lhs.start, "set operations must always be many-to-many");
            }
        }
        let scalar = lhs.ty == ValueType::Scalar || rt == ValueType::Scalar;
        if scalar && op.is_set() {
            self.type_err(
                lhs.start,
                format!(
                    "set operator {:?} not allowed in binary scalar expression",
                    op.text()
                ),
            );
        }
    }

    fn check_group_labels(&mut self, m: &BinModifier, op_at: usize) {
        let Some(LabelModifier::Include(on)) = &m.matching else {
            return;
        };
        let include = match &m.card {
            VectorMatchCardinality::ManyToOne(l) | VectorMatchCardinality::OneToMany(l) => l,
            _ => return,
        };
        if let Some(l) = on.iter().find(|l| include.contains(l)) {
            self.type_err(
                op_at,
                format!("label {l:?} must not occur in ON and GROUP clause at once"),
            );
        }
    }
}
