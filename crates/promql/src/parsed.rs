//! Parsed queries: [`parse`] and the tree it returns, [`ParsedExpr`].
//!
//! A query's text is checked against the nesting limits (`nesting`) before
//! the parser (`parser`) sees it, and parsed on a stack sized for its depth
//! (`stack`). The tree's own recursive operations (dropping it, walking it)
//! are replaced by iterative ones here, so a parsed tree can be held,
//! cached, walked and freed on any thread, whatever its depth.

use std::ops::Deref;
use std::sync::{Arc, LazyLock};

use crate::parser::{self, Expr, NumberLiteral};

use crate::{nesting, stack, Error, Result};
use ferrite_model::cache::BoundedCache;

/// A parsed query: the parser's tree, with the nesting bound its text
/// was checked against. Dropping it takes constant stack.
#[derive(Debug)]
pub struct ParsedExpr {
    expr: Expr,
    depth: usize,
}

impl ParsedExpr {
    /// An upper bound on the depth of the tree (see `nesting`); work that
    /// recurses over the tree needs stack for this many levels.
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// The tree's nodes in pre-order, children in text order, walked
    /// without recursion.
    pub fn nodes(&self) -> Nodes<'_> {
        nodes_of(&self.expr)
    }
}

impl Deref for ParsedExpr {
    type Target = Expr;

    fn deref(&self) -> &Expr {
        &self.expr
    }
}

/// The query as PromQL text, in Prometheus' printed form; printed on a
/// stack sized for the tree's depth.
impl std::fmt::Display for ParsedExpr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text = stack::with_stack_for(self.depth, || self.expr.to_string());
        f.write_str(&text)
    }
}

impl Drop for ParsedExpr {
    fn drop(&mut self) {
        let leaf = Expr::NumberLiteral(NumberLiteral { val: 0.0, pos: 0 });
        dismantle(std::mem::replace(&mut self.expr, leaf));
    }
}

/// An expression's child expressions, in text order.
pub fn children(e: &Expr) -> impl DoubleEndedIterator<Item = &Expr> {
    let (first, second, rest): (Option<&Expr>, Option<&Expr>, &[Expr]) = match e {
        Expr::Aggregate(a) => (a.param.as_deref(), Some(&*a.expr), &[]),
        Expr::Unary(u) => (Some(&*u.expr), None, &[]),
        Expr::Binary(b) => (Some(&*b.lhs), Some(&*b.rhs), &[]),
        Expr::Paren(p) => (Some(&*p.expr), None, &[]),
        Expr::Subquery(s) => (Some(&*s.expr), None, &[]),
        Expr::Call(c) => (None, None, &c.args[..]),
        Expr::NumberLiteral(_)
        | Expr::StringLiteral(_)
        | Expr::VectorSelector(_)
        | Expr::MatrixSelector(_) => (None, None, &[]),
    };
    first.into_iter().chain(second).chain(rest.iter())
}

/// The nodes of a (sub)tree in pre-order, walked without recursion.
pub(crate) fn nodes_of(root: &Expr) -> Nodes<'_> {
    Nodes { stack: vec![root] }
}

/// Pre-order iterator over a tree's nodes (see [`ParsedExpr::nodes`]).
pub struct Nodes<'a> {
    stack: Vec<&'a Expr>,
}

impl<'a> Iterator for Nodes<'a> {
    type Item = &'a Expr;

    fn next(&mut self) -> Option<&'a Expr> {
        let e = self.stack.pop()?;
        self.stack.extend(children(e).rev());
        Some(e)
    }
}

/// Frees a tree node by node: each node's children are moved out of their
/// boxes onto a list before the node itself is dropped, so no drop
/// recurses.
fn dismantle(root: Expr) {
    let mut pending = vec![root];
    while let Some(e) = pending.pop() {
        match e {
            Expr::Aggregate(a) => {
                pending.push(*a.expr);
                if let Some(p) = a.param {
                    pending.push(*p);
                }
            }
            Expr::Unary(u) => pending.push(*u.expr),
            Expr::Binary(b) => {
                pending.push(*b.lhs);
                pending.push(*b.rhs);
            }
            Expr::Paren(p) => pending.push(*p.expr),
            Expr::Subquery(s) => pending.push(*s.expr),
            Expr::Call(c) => pending.extend(c.args),
            Expr::NumberLiteral(_)
            | Expr::StringLiteral(_)
            | Expr::VectorSelector(_)
            | Expr::MatrixSelector(_) => {}
        }
    }
}

/// Parses a query. Its text must keep to the nesting limits (see
/// `nesting`); it is then parsed on a stack sized for its depth. Parsed
/// queries are kept (see `cache`), so a repeated query is parsed, and its
/// regexes compiled, once.
pub fn parse(query: &str) -> Result<Arc<ParsedExpr>> {
    static PARSED: LazyLock<BoundedCache<Arc<ParsedExpr>>> =
        LazyLock::new(|| BoundedCache::new(256, 4096));
    PARSED.get_or_try_insert(query, || {
        let depth = nesting::check(query)?.depth;
        stack::with_stack_for(depth, || {
            let expr = parser::parse_expr(query).map_err(Error::Syntax)?;
            Ok(Arc::new(ParsedExpr { expr, depth }))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The depth of a tree, measured without recursion.
    fn tree_depth(root: &Expr) -> usize {
        let mut deepest = 0;
        let mut pending = vec![(root, 1)];
        while let Some((e, d)) = pending.pop() {
            deepest = deepest.max(d);
            pending.extend(children(e).map(|c| (c, d + 1)));
        }
        deepest
    }

    /// Runs `f` on a thread with a small stack: what it does must not
    /// depend on the caller's stack.
    fn on_small_stack<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> R {
        std::thread::Builder::new()
            .stack_size(128 << 10)
            .spawn(f)
            .expect("spawning a test thread")
            .join()
            .expect("the test thread panicked")
    }

    #[test]
    fn deep_trees_parse_walk_and_drop_on_a_small_stack() {
        let n = nesting::MAX_NESTING_DEPTH - 1;
        let (count, depth) = on_small_stack(move || {
            let q = format!("{}x{}", "abs(".repeat(n), ")".repeat(n));
            let e = parse(&q).expect("parses");
            let count = e.nodes().count();
            let depth = tree_depth(&e);
            drop(e);
            (count, depth)
        });
        assert_eq!((count, depth), (n + 1, n + 1));
        let printed = on_small_stack(move || {
            let q = format!("{}x{}", "abs(".repeat(n), ")".repeat(n));
            parse(&q).expect("parses").to_string().len()
        });
        assert_eq!(printed, n * 5 + 1);
    }

    #[test]
    fn nodes_come_in_pre_order_and_text_order() {
        let e = parse("topk(3, a + -b) / on() c").expect("parses");
        let names: Vec<String> = e
            .nodes()
            .filter_map(|n| match n {
                Expr::VectorSelector(vs) => vs.name.clone(),
                Expr::NumberLiteral(n) => Some(n.val.to_string()),
                _ => None,
            })
            .collect();
        assert_eq!(names, ["3", "a", "b", "c"]);
    }

    #[test]
    fn too_deep_queries_are_refused_before_parsing() {
        let n = 100_000;
        let q = format!("{}x{}", "sum(".repeat(n), ")".repeat(n));
        let err = on_small_stack(move || parse(&q).map(drop)).unwrap_err();
        assert!(err.to_string().contains("query nesting too deep"), "{err}");
    }

    proptest::proptest! {
        /// The text's nesting bound is never below the parsed tree's depth.
        #[test]
        fn nesting_bound_covers_the_tree(q in deep_query(6)) {
            if let Ok(e) = parse(&q) {
                let d = tree_depth(&e);
                proptest::prop_assert!(e.depth() >= d, "{q}: bound {} < depth {d}", e.depth());
            }
        }
    }

    /// Random queries of every construct, nested up to `levels` deep.
    pub(crate) fn deep_query(levels: u32) -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just("x".to_string()),
            Just("y{a=\"(\"}".to_string()),
            Just("1".to_string()),
            Just("x offset 1m".to_string()),
            Just("x @ 10".to_string()),
        ];
        leaf.prop_recursive(levels, 64, 3, |inner| {
            prop_oneof![
                inner.clone().prop_map(|e| format!("sum({e})")),
                inner.clone().prop_map(|e| format!("sum by (a) ({e})")),
                inner.clone().prop_map(|e| format!("topk(2, {e})")),
                inner.clone().prop_map(|e| format!("abs({e})")),
                inner.clone().prop_map(|e| format!("({e})")),
                inner.clone().prop_map(|e| format!("-{e}")),
                inner
                    .clone()
                    .prop_map(|e| format!("max_over_time(({e})[1m:10s])")),
                inner
                    .clone()
                    .prop_map(|e| format!("max_over_time(({e})[1m:] offset 1m)")),
                inner.clone().prop_map(|e| format!("rate(({e})[5m:])")),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("{a} + {b}")),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("{a} * {b} - {a}")),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("{a} ^ {b}")),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("{a} > bool {b}")),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("{a} and on() {b}")),
                (inner.clone(), inner).prop_map(|(a, b)| format!(
                    "label_replace({a}, \"l\", \"v\", \"s\", \"r\") or {b}"
                )),
            ]
        })
    }
}
