//! Ferrite's PromQL syntax tree.
//!
//! Selectors hold `ferrite_model` matchers (a metric name is also its
//! `__name__` matcher, as in Prometheus). Durations written as expressions
//! (`[5m + step()]`, `offset -(1h / 2)`) are kept as [`DurationExpr`]s and
//! computed per query ([`Duration::resolve`]).

use std::fmt;

use ferrite_model::Matcher;

use super::functions::Function;

/// A PromQL expression.
#[derive(Clone, Debug)]
pub enum Expr {
    Aggregate(AggregateExpr),
    Unary(UnaryExpr),
    Binary(BinaryExpr),
    Paren(ParenExpr),
    Subquery(SubqueryExpr),
    NumberLiteral(NumberLiteral),
    StringLiteral(StringLiteral),
    VectorSelector(VectorSelector),
    MatrixSelector(MatrixSelector),
    Call(Call),
}

/// The type of an expression's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueType {
    Scalar,
    Vector,
    Matrix,
    String,
}

impl ValueType {
    /// The name Prometheus' errors use ("instant vector", ...).
    pub fn documented(self) -> &'static str {
        match self {
            ValueType::Scalar => "scalar",
            ValueType::Vector => "instant vector",
            ValueType::Matrix => "range vector",
            ValueType::String => "string",
        }
    }
}

impl Expr {
    /// Where the expression starts in the query (a byte offset), as
    /// Prometheus' positions count: a binary expression and a subquery at
    /// their first operand, a negative number at its sign.
    pub fn pos(&self) -> usize {
        match self {
            Expr::Aggregate(a) => a.pos,
            Expr::Unary(u) => u.pos,
            Expr::Binary(b) => b.pos,
            Expr::Paren(p) => p.pos,
            Expr::Subquery(s) => s.pos,
            Expr::NumberLiteral(n) => n.pos,
            Expr::StringLiteral(s) => s.pos,
            Expr::VectorSelector(vs) => vs.pos,
            Expr::MatrixSelector(ms) => ms.vs.pos,
            Expr::Call(c) => c.pos,
        }
    }

    /// The type of the expression's value.
    pub fn value_type(&self) -> ValueType {
        let mut e = self;
        loop {
            return match e {
                Expr::Paren(p) => {
                    e = &p.expr;
                    continue;
                }
                Expr::Unary(u) => {
                    e = &u.expr;
                    continue;
                }
                Expr::Aggregate(_) | Expr::VectorSelector(_) => ValueType::Vector,
                Expr::Binary(b) => binary_type(b),
                Expr::Subquery(_) | Expr::MatrixSelector(_) => ValueType::Matrix,
                Expr::NumberLiteral(_) => ValueType::Scalar,
                Expr::StringLiteral(_) => ValueType::String,
                Expr::Call(c) => c.func.return_type,
            };
        }
    }
}

/// A binary expression is a scalar only between two scalars. (Callers
/// that recurse over a tree run on a stack sized for its depth.)
fn binary_type(b: &BinaryExpr) -> ValueType {
    if b.lhs.value_type() == ValueType::Scalar && b.rhs.value_type() == ValueType::Scalar {
        ValueType::Scalar
    } else {
        ValueType::Vector
    }
}

/// Aggregation operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AggregateOp {
    Sum,
    Avg,
    Count,
    Min,
    Max,
    Group,
    Stddev,
    Stdvar,
    Topk,
    Bottomk,
    CountValues,
    Quantile,
    Limitk,
    LimitRatio,
}

impl AggregateOp {
    const ALL: [AggregateOp; 14] = [
        AggregateOp::Sum,
        AggregateOp::Avg,
        AggregateOp::Count,
        AggregateOp::Min,
        AggregateOp::Max,
        AggregateOp::Group,
        AggregateOp::Stddev,
        AggregateOp::Stdvar,
        AggregateOp::Topk,
        AggregateOp::Bottomk,
        AggregateOp::CountValues,
        AggregateOp::Quantile,
        AggregateOp::Limitk,
        AggregateOp::LimitRatio,
    ];

    /// The operator of a (lower-case) name.
    pub fn from_name(name: &str) -> Option<AggregateOp> {
        Self::ALL.into_iter().find(|op| op.name() == name)
    }

    /// The operator's name, lower case.
    pub fn name(self) -> &'static str {
        match self {
            AggregateOp::Sum => "sum",
            AggregateOp::Avg => "avg",
            AggregateOp::Count => "count",
            AggregateOp::Min => "min",
            AggregateOp::Max => "max",
            AggregateOp::Group => "group",
            AggregateOp::Stddev => "stddev",
            AggregateOp::Stdvar => "stdvar",
            AggregateOp::Topk => "topk",
            AggregateOp::Bottomk => "bottomk",
            AggregateOp::CountValues => "count_values",
            AggregateOp::Quantile => "quantile",
            AggregateOp::Limitk => "limitk",
            AggregateOp::LimitRatio => "limit_ratio",
        }
    }

    /// Whether the operator takes a parameter before its expression.
    pub fn takes_param(self) -> bool {
        matches!(
            self,
            AggregateOp::Topk
                | AggregateOp::Bottomk
                | AggregateOp::CountValues
                | AggregateOp::Quantile
                | AggregateOp::Limitk
                | AggregateOp::LimitRatio
        )
    }
}

impl fmt::Display for AggregateOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `by (...)` or `without (...)` (and `on`/`ignoring` in vector matching).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LabelModifier {
    /// `by` / `on`: these labels.
    Include(Vec<String>),
    /// `without` / `ignoring`: all but these labels.
    Exclude(Vec<String>),
}

impl LabelModifier {
    pub fn labels(&self) -> &[String] {
        match self {
            LabelModifier::Include(l) | LabelModifier::Exclude(l) => l,
        }
    }
}

/// `sum by (job) (x)`, `topk(3, x)`.
#[derive(Clone, Debug)]
pub struct AggregateExpr {
    pub op: AggregateOp,
    pub expr: Box<Expr>,
    pub param: Option<Box<Expr>>,
    pub modifier: Option<LabelModifier>,
    /// Where it starts in the query (a byte offset).
    pub pos: usize,
}

/// `-x`, `+x`.
#[derive(Clone, Debug)]
pub struct UnaryExpr {
    pub expr: Box<Expr>,
    /// Where it starts in the query (a byte offset).
    pub pos: usize,
}

/// Binary operators, by their PromQL spelling.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Pow,
    Atan2,
    Eq,
    Ne,
    Gt,
    Lt,
    Ge,
    Le,
    /// `</`: histograms with their buckets above a value removed.
    TrimUpper,
    /// `>/`: histograms with their buckets below a value removed.
    TrimLower,
    And,
    Or,
    Unless,
}

impl BinaryOp {
    /// The operator as PromQL spells it.
    pub fn text(self) -> &'static str {
        match self {
            BinaryOp::Add => "+",
            BinaryOp::Sub => "-",
            BinaryOp::Mul => "*",
            BinaryOp::Div => "/",
            BinaryOp::Mod => "%",
            BinaryOp::Pow => "^",
            BinaryOp::Atan2 => "atan2",
            BinaryOp::Eq => "==",
            BinaryOp::Ne => "!=",
            BinaryOp::Gt => ">",
            BinaryOp::Lt => "<",
            BinaryOp::Ge => ">=",
            BinaryOp::Le => "<=",
            BinaryOp::TrimUpper => "</",
            BinaryOp::TrimLower => ">/",
            BinaryOp::And => "and",
            BinaryOp::Or => "or",
            BinaryOp::Unless => "unless",
        }
    }

    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinaryOp::Eq | BinaryOp::Ne | BinaryOp::Gt | BinaryOp::Lt | BinaryOp::Ge | BinaryOp::Le
        )
    }

    pub fn is_set(self) -> bool {
        matches!(self, BinaryOp::And | BinaryOp::Or | BinaryOp::Unless)
    }

    pub fn is_trim(self) -> bool {
        matches!(self, BinaryOp::TrimUpper | BinaryOp::TrimLower)
    }

    /// Whether the result measures something else (the name must go).
    pub fn is_arithmetic(self) -> bool {
        !self.is_comparison() && !self.is_set() && !self.is_trim()
    }

    /// Binding strength: higher binds tighter.
    pub fn precedence(self) -> u8 {
        match self {
            BinaryOp::Or => 1,
            BinaryOp::And | BinaryOp::Unless => 2,
            BinaryOp::Eq
            | BinaryOp::Ne
            | BinaryOp::Gt
            | BinaryOp::Lt
            | BinaryOp::Ge
            | BinaryOp::Le
            | BinaryOp::TrimUpper
            | BinaryOp::TrimLower => 3,
            BinaryOp::Add | BinaryOp::Sub => 4,
            BinaryOp::Mul | BinaryOp::Div | BinaryOp::Mod | BinaryOp::Atan2 => 5,
            BinaryOp::Pow => 6,
        }
    }

    /// Whether durations can be combined with the operator.
    pub fn is_duration_arithmetic(self) -> bool {
        matches!(
            self,
            BinaryOp::Add
                | BinaryOp::Sub
                | BinaryOp::Mul
                | BinaryOp::Div
                | BinaryOp::Mod
                | BinaryOp::Pow
        )
    }

    /// `^` groups to the right, everything else to the left.
    pub fn is_right_associative(self) -> bool {
        self == BinaryOp::Pow
    }
}

impl fmt::Display for BinaryOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text())
    }
}

/// Which side of a vector match may have several series per group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VectorMatchCardinality {
    OneToOne,
    /// `group_left(labels)`
    ManyToOne(Vec<String>),
    /// `group_right(labels)`
    OneToMany(Vec<String>),
    ManyToMany,
}

/// `bool`, `on`/`ignoring` and `group_left`/`group_right` of a binary
/// expression.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BinModifier {
    pub card: VectorMatchCardinality,
    pub matching: Option<LabelModifier>,
    pub return_bool: bool,
}

/// `a + on(x) b`.
#[derive(Clone, Debug)]
pub struct BinaryExpr {
    pub op: BinaryOp,
    pub lhs: Box<Expr>,
    pub rhs: Box<Expr>,
    pub modifier: Option<BinModifier>,
    /// Where the expression (its left operand) starts in the query, for
    /// annotations.
    pub pos: usize,
}

/// `(x)`.
#[derive(Clone, Debug)]
pub struct ParenExpr {
    pub expr: Box<Expr>,
    /// Where it starts in the query (a byte offset).
    pub pos: usize,
}

/// The `@` modifier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtModifier {
    Start,
    End,
    /// A time in milliseconds.
    At(i64),
}

/// `x[5m:1m]`.
#[derive(Clone, Debug)]
pub struct SubqueryExpr {
    pub expr: Box<Expr>,
    pub range: Duration,
    pub step: Option<Duration>,
    pub offset: Option<Duration>,
    pub at: Option<AtModifier>,
    /// Where it starts in the query (a byte offset).
    pub pos: usize,
}

/// A number.
#[derive(Clone, Debug)]
pub struct NumberLiteral {
    pub val: f64,
    /// Where it starts in the query (a byte offset).
    pub pos: usize,
}

/// A string.
#[derive(Clone, Debug)]
pub struct StringLiteral {
    /// The value; bytes that are not UTF-8 (`"\xff"`) are U+FFFD here.
    pub val: String,
    /// The decoded bytes, when they are not UTF-8 (as Prometheus, written
    /// in Go, keeps them).
    pub invalid_utf8: Option<Vec<u8>>,
    /// Where it starts in the query (a byte offset).
    pub pos: usize,
}

impl StringLiteral {
    /// The literal as Go would quote its bytes (`"a\xc5z"`).
    pub fn go_quoted(&self) -> String {
        match &self.invalid_utf8 {
            Some(bytes) => super::printer::go_quote_bytes(bytes),
            None => super::printer::go_quote(&self.val),
        }
    }

    /// Whether the value is a valid label name: not empty, UTF-8.
    pub fn is_valid_label_name(&self) -> bool {
        !self.val.is_empty() && self.invalid_utf8.is_none()
    }
}

/// `x{a="b"} offset 5m @ 10 anchored`.
#[derive(Clone, Debug)]
pub struct VectorSelector {
    /// The metric name written before the braces, if any.
    pub name: Option<String>,
    /// All matchers, the name's `__name__="..."` included.
    pub matchers: Vec<Matcher>,
    pub offset: Option<Duration>,
    pub at: Option<AtModifier>,
    /// `anchored`: windows take the last sample before their start and
    /// the sample at their end.
    pub anchored: bool,
    /// `smoothed`: windows interpolate at their edges.
    pub smoothed: bool,
    /// Where the selector starts in the query (a byte offset), for
    /// annotations.
    pub pos: usize,
}

/// `x[5m]`.
#[derive(Clone, Debug)]
pub struct MatrixSelector {
    pub vs: VectorSelector,
    pub range: Duration,
}

/// `rate(x[5m])`.
#[derive(Clone, Debug)]
pub struct Call {
    pub func: &'static Function,
    pub args: Vec<Expr>,
    /// Where it starts in the query (a byte offset).
    pub pos: usize,
}

/// A range, step or offset: a fixed time, or an expression computed per
/// query.
#[derive(Clone, Debug, PartialEq)]
pub enum Duration {
    /// Milliseconds.
    Fixed(i64),
    /// An expression (with the byte range it spans, for errors).
    Expr(Box<DurationExpr>, (usize, usize)),
}

/// A duration expression's value in seconds.
#[derive(Clone, Debug, PartialEq)]
pub enum DurationExpr {
    /// A number or a duration literal, in seconds; `duration` if it was
    /// written as one (`5m`).
    Number { secs: f64, duration: bool },
    /// `step()`: the query's step.
    Step,
    /// `range()`: the query's end minus its start.
    Range,
    /// `-e`
    Neg(Box<DurationExpr>),
    /// `(e)`
    Paren(Box<DurationExpr>),
    /// `+ - * / % ^` of two durations.
    Binary {
        op: BinaryOp,
        lhs: Box<DurationExpr>,
        rhs: Box<DurationExpr>,
    },
    /// `min_of(a, b)`
    MinOf(Box<DurationExpr>, Box<DurationExpr>),
    /// `max_of(a, b)`
    MaxOf(Box<DurationExpr>, Box<DurationExpr>),
}

/// What `step()` and `range()` are for one query.
#[derive(Clone, Copy, Debug, Default)]
pub struct DurationContext {
    pub step_ms: i64,
    pub range_ms: i64,
}

impl DurationExpr {
    /// The value in seconds.
    pub fn seconds(&self, ctx: &DurationContext) -> Result<f64, &'static str> {
        Ok(match self {
            DurationExpr::Number { secs, .. } => *secs,
            DurationExpr::Step => ctx.step_ms as f64 / 1000.0,
            DurationExpr::Range => ctx.range_ms as f64 / 1000.0,
            DurationExpr::Neg(e) => -e.seconds(ctx)?,
            DurationExpr::Paren(e) => e.seconds(ctx)?,
            DurationExpr::MinOf(a, b) => a.seconds(ctx)?.min(b.seconds(ctx)?),
            DurationExpr::MaxOf(a, b) => a.seconds(ctx)?.max(b.seconds(ctx)?),
            DurationExpr::Binary { op, lhs, rhs } => {
                let (l, r) = (lhs.seconds(ctx)?, rhs.seconds(ctx)?);
                match op {
                    BinaryOp::Add => l + r,
                    BinaryOp::Sub => l - r,
                    BinaryOp::Mul => l * r,
                    BinaryOp::Div if r == 0.0 => return Err("division by zero"),
                    BinaryOp::Div => l / r,
                    BinaryOp::Mod if r == 0.0 => return Err("modulo by zero"),
                    BinaryOp::Mod => l % r,
                    BinaryOp::Pow => l.powf(r),
                    _ => return Err("not an operator of durations"),
                }
            }
        })
    }
}

/// The largest duration, in seconds, that fits Prometheus' nanoseconds.
pub(crate) const MAX_DURATION_SECS: f64 = 9_223_372_036.854_775;

impl Duration {
    /// The duration in milliseconds for a query. Ranges and steps must be
    /// positive, offsets may be negative (`allow_negative`).
    pub fn resolve(&self, ctx: &DurationContext, allow_negative: bool) -> Result<i64, String> {
        let (e, (start, end)) = match self {
            Duration::Fixed(ms) => return Ok(*ms),
            Duration::Expr(e, span) => (e, *span),
        };
        let fail = |why: &str| format!("{start}:{end}: {why}");
        let secs = e.seconds(ctx).map_err(fail)?;
        if !secs.is_finite() {
            return Err(fail("duration is NaN or infinite"));
        }
        if secs <= 0.0 && !allow_negative {
            return Err(fail("duration must be greater than 0"));
        }
        if secs.abs() > MAX_DURATION_SECS {
            return Err(fail("duration is out of range"));
        }
        Ok((secs * 1000.0) as i64)
    }

    /// The fixed value, if the duration does not depend on the query.
    pub fn fixed_ms(&self) -> Option<i64> {
        match self {
            Duration::Fixed(ms) => Some(*ms),
            Duration::Expr(..) => None,
        }
    }
}
