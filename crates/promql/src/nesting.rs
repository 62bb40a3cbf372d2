//! How deep a query's expression tree can be, read from its text before it
//! is parsed, and the limits a query must keep to.
//!
//! The parser (`parser`) and the engine's walks over its tree recurse once
//! per level of the tree, so a query's depth decides how much stack they
//! need (see `stack`). The depth is bounded here, before the parser sees
//! the text, with a single linear pass that never recurses. (The parser's
//! own work is linear in the query's length.)
//!
//! [`scan`] returns an upper bound on the depth of the tree, counting one
//! level for each node on a path from the root to a leaf:
//! - every bracket group (`(`, `[`, `{`) counts one level around what it
//!   holds (a parenthesis, a call's or aggregation's argument list, a
//!   subquery's or range's brackets; braces and a `by (...)` list hold no
//!   expression, so this overcounts);
//! - every operator counts one level within its group: the arithmetic ones
//!   (`+ - * / % ^`, unary or binary) each, a comparison (`==`, `!=`,
//!   `<=`, ...) once, `and`, `or`, `unless` and `atan2`, and a subquery's or
//!   range's `[`, which wraps the expression before it. Operators are
//!   counted per comma-separated argument, the deepest argument counting.
//!
//! Inside one group, the nodes made by its operators and the nodes of its
//! deepest child group are at most all on one path, so the bound holds for
//! any text the parser accepts (a property test checks it against parsed
//! trees). Strings, comments and matchers add nothing.

use crate::lexical::{is_ident_start, skip_ident, skip_string, skip_ws};
use crate::{Error, Result};

/// The deepest expression tree a query may have: far beyond any real query
/// (dashboards' deepest are a few dozen levels), within what the parser
/// handles in well under a second. Deeper queries are refused with a
/// `bad_data` error naming this limit.
pub const MAX_NESTING_DEPTH: usize = 5_000;

/// What [`scan`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Nesting {
    /// An upper bound on the depth of the expression tree (a selector or a
    /// number alone is 1).
    pub depth: usize,
}

/// Scans `query` and refuses it if it is deeper than the limit allows.
pub fn check(query: &str) -> Result<Nesting> {
    let n = scan(query);
    if n.depth > MAX_NESTING_DEPTH {
        return Err(Error::TooDeep(format!(
            "query nesting too deep: up to {} levels of brackets, calls and operators, the limit is {MAX_NESTING_DEPTH}",
            n.depth
        )));
    }
    Ok(n)
}

/// Keywords that are binary operators.
const OPERATOR_WORDS: &[&str] = &["and", "or", "unless", "atan2"];

/// What a bracket group is, as far as the scan cares.
#[derive(Clone, Copy, PartialEq, Eq)]
enum GroupKind {
    /// The top level of the query.
    Root,
    /// Parentheses or square brackets.
    Plain,
    /// Matchers in braces: no expressions inside.
    Braces,
}

/// An open bracket group.
struct Group {
    kind: GroupKind,
    /// Operators in the current comma-separated segment.
    ops: usize,
    /// The most operators of a finished segment.
    max_ops: usize,
    /// The deepest closed child group.
    max_child: usize,
}

impl Group {
    fn new(kind: GroupKind) -> Self {
        Group {
            kind,
            ops: 0,
            max_ops: 0,
            max_child: 0,
        }
    }

    /// Levels this group adds around its deepest leaf.
    fn levels(&self) -> usize {
        let own = usize::from(self.kind != GroupKind::Root);
        own + self.ops.max(self.max_ops) + self.max_child
    }
}

/// The scan's state: the open groups, innermost last.
struct Scanner {
    groups: Vec<Group>,
}

impl Scanner {
    fn top(&mut self) -> &mut Group {
        // The root group is never popped.
        let last = self.groups.len() - 1;
        &mut self.groups[last]
    }

    fn operator(&mut self) {
        let top = self.top();
        if top.kind != GroupKind::Braces {
            top.ops += 1;
        }
    }

    fn open(&mut self, c: u8) {
        let kind = if c == b'{' {
            GroupKind::Braces
        } else {
            GroupKind::Plain
        };
        if c == b'[' {
            // A subquery or range wraps the expression before it.
            self.operator();
        }
        self.groups.push(Group::new(kind));
    }

    fn close(&mut self) {
        if self.groups.len() < 2 {
            return; // An unmatched closer: the parser reports it.
        }
        if let Some(group) = self.groups.pop() {
            let levels = group.levels();
            let parent = self.top();
            parent.max_child = parent.max_child.max(levels);
        }
    }

    fn comma(&mut self) {
        let top = self.top();
        top.max_ops = top.max_ops.max(top.ops);
        top.ops = 0;
    }

    fn word(&mut self, w: &str) {
        if OPERATOR_WORDS.iter().any(|k| w.eq_ignore_ascii_case(k)) {
            self.operator();
        }
    }

    fn finish(mut self) -> Nesting {
        while self.groups.len() > 1 {
            self.close();
        }
        Nesting {
            depth: 1 + self.top().levels(),
        }
    }
}

/// Scans the query text once (see the module's documentation).
pub fn scan(query: &str) -> Nesting {
    let b = query.as_bytes();
    let mut s = Scanner {
        groups: vec![Group::new(GroupKind::Root)],
    };
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match c {
            c if c.is_ascii_whitespace() || c == b'#' => {
                i = skip_ws(b, i);
                continue;
            }
            b'"' | b'\'' | b'`' => {
                i = skip_string(b, i);
                continue;
            }
            c if is_ident_start(c) => {
                let end = skip_ident(b, i);
                s.word(&query[i..end]);
                i = end;
                continue;
            }
            b'0'..=b'9' | b'.' => {
                while b
                    .get(i)
                    .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'.' || *c == b'_')
                {
                    i += 1;
                }
                continue;
            }
            b'(' | b'[' | b'{' => s.open(c),
            b')' | b']' | b'}' => s.close(),
            b',' => s.comma(),
            b'+' | b'-' | b'*' | b'/' | b'%' | b'^' => s.operator(),
            b'=' | b'!' | b'<' | b'>' => {
                // One comparison however many characters it has (`==`).
                while b
                    .get(i + 1)
                    .is_some_and(|c| matches!(c, b'=' | b'!' | b'<' | b'>'))
                {
                    i += 1;
                }
                s.operator();
            }
            _ => {}
        }
        i += 1;
    }
    s.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn depth(q: &str) -> usize {
        scan(q).depth
    }

    #[test]
    fn counts_brackets_operators_and_postfix_ranges() {
        assert_eq!(depth("up"), 1);
        assert_eq!(depth("1"), 1);
        assert_eq!(depth("sum(up)"), 2);
        assert_eq!(depth("sum by (job) (up)"), 2);
        assert_eq!(depth("sum(up) by (job)"), 2);
        assert_eq!(depth("up{job=~\"a|b\", x!=\"(((\"}"), 2);
        assert_eq!(depth("a + b"), 2);
        assert_eq!(depth("a + b * c - d"), 4);
        assert_eq!(depth("-a"), 2);
        assert_eq!(depth("a == bool b"), 2);
        assert_eq!(depth("a and b or c unless d"), 4);
        // The subquery's brackets wrap the call: subquery, call, selector.
        assert_eq!(depth("rate(x[5m])[1h:1m]"), 5);
        assert_eq!(depth("label_join(x, \"a\", \"-\", \"b\")"), 2);
        assert_eq!(depth("f(a + b, c)"), 3);
        assert_eq!(
            depth(&format!("{}x{}", "sum(".repeat(1000), ")".repeat(1000))),
            1001
        );
        assert_eq!(depth(&format!("x{}", " + x".repeat(1000))), 1001);
        // Comments and strings hold nothing.
        assert_eq!(depth("up # (((((\n"), 1);
        assert_eq!(depth("\"((((\\\"((\""), 1);
    }

    #[test]
    fn unbalanced_text_is_scanned_without_failing() {
        assert_eq!(depth("((("), 4);
        assert_eq!(depth(")))"), 1);
        assert_eq!(depth("sum(\"unterminated"), 2);
    }

    #[test]
    fn deep_aggregations_pass() {
        // `sum(` and `topk(5, ` as deep as the depth limit allows (and a
        // selector): the parser's work is linear.
        let n = MAX_NESTING_DEPTH - 1;
        for open in ["sum(", "topk by (a) (5, "] {
            let deep = format!("{}x{}", open.repeat(n), ")".repeat(n));
            assert!(check(&deep).is_ok(), "{open}: {:?}", scan(&deep));
        }
    }

    #[test]
    fn refuses_past_the_limits_naming_them() {
        let n = MAX_NESTING_DEPTH - 1;
        let deep = format!("{}x{}", "(".repeat(n), ")".repeat(n));
        assert_eq!(check(&deep).map(|n| n.depth).ok(), Some(MAX_NESTING_DEPTH));
        let deeper = format!("({deep})");
        let err = check(&deeper).unwrap_err().to_string();
        assert!(err.contains("the limit is 5000"), "{err}");
    }
}
