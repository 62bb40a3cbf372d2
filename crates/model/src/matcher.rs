//! Label matchers with Prometheus' semantics.
//!
//! Regexes are fully anchored and `.` matches newlines (Prometheus compiles
//! `^(?s:value)$`), and a missing label matches as the empty string. The
//! same [`Matcher`] is built by the PromQL engine, the HTTP API's `match[]`
//! and remote read, and evaluated by storage.

use std::fmt;
use std::sync::LazyLock;

use regex::Regex;

use crate::cache::BoundedCache;
use crate::labels::Labels;

/// How a matcher compares a label value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MatchType {
    /// `=`
    Equal,
    /// `!=`
    NotEqual,
    /// `=~`
    Regex,
    /// `!~`
    NotRegex,
}

impl MatchType {
    /// The operator as PromQL writes it.
    pub fn operator(self) -> &'static str {
        match self {
            MatchType::Equal => "=",
            MatchType::NotEqual => "!=",
            MatchType::Regex => "=~",
            MatchType::NotRegex => "!~",
        }
    }
}

/// One label matcher.
#[derive(Clone, Debug)]
pub struct Matcher {
    /// How the value is compared.
    pub kind: MatchType,
    /// The label name.
    pub name: String,
    /// The value, or the regex's text for `=~`/`!~`.
    pub value: String,
    re: Option<Regex>,
}

/// A matcher's regex does not compile.
#[derive(Debug, Clone, thiserror::Error)]
#[error("invalid regular expression {pattern:?}: {source}")]
pub struct MatcherError {
    /// The regex as given.
    pub pattern: String,
    /// The regex crate's reason.
    #[source]
    pub source: regex::Error,
}

impl Matcher {
    /// A matcher; `=~`/`!~` compile their anchored regex (kept in a bounded
    /// cache: dashboards repeat them).
    pub fn new(kind: MatchType, name: &str, value: &str) -> Result<Self, MatcherError> {
        let re = match kind {
            MatchType::Regex | MatchType::NotRegex => Some(compile_anchored(value)?),
            MatchType::Equal | MatchType::NotEqual => None,
        };
        Ok(Matcher {
            kind,
            name: name.to_owned(),
            value: value.to_owned(),
            re,
        })
    }

    /// An `=` matcher (cannot fail).
    pub fn equal(name: &str, value: &str) -> Self {
        Matcher {
            kind: MatchType::Equal,
            name: name.to_owned(),
            value: value.to_owned(),
            re: None,
        }
    }

    /// Whether a label value (empty when the label is missing) matches.
    pub fn matches(&self, v: &str) -> bool {
        match self.kind {
            MatchType::Equal => v == self.value,
            MatchType::NotEqual => v != self.value,
            MatchType::Regex => self.re.as_ref().is_some_and(|r| r.is_match(v)),
            MatchType::NotRegex => !self.re.as_ref().is_some_and(|r| r.is_match(v)),
        }
    }

    /// Whether this matcher matches the label set.
    pub fn matches_labels(&self, ls: &Labels) -> bool {
        self.matches(ls.get(&self.name))
    }

    /// The compiled anchored regex of a `=~`/`!~` matcher.
    pub fn regex(&self) -> Option<&Regex> {
        self.re.as_ref()
    }
}

impl fmt::Display for Matcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}{:?}", self.name, self.kind.operator(), self.value)
    }
}

/// Compiles a PromQL regex: anchored at both ends, `.` matching `\n`.
/// Compiled regexes are kept in a bounded cache keyed by their text.
pub fn compile_anchored(pattern: &str) -> Result<Regex, MatcherError> {
    static COMPILED: LazyLock<BoundedCache<Regex>> = LazyLock::new(|| BoundedCache::new(512, 1024));
    COMPILED.get_or_try_insert(pattern, || {
        Regex::new(&format!("^(?s:{pattern})$")).map_err(|source| MatcherError {
            pattern: pattern.to_owned(),
            source,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(kind: MatchType, v: &str) -> Matcher {
        Matcher::new(kind, "job", v).expect("valid regex")
    }

    #[test]
    fn regex_is_fully_anchored() {
        let r = m(MatchType::Regex, "api");
        assert!(r.matches("api"));
        assert!(!r.matches("api-server"));
        assert!(!r.matches("my-api"));
        let r = m(MatchType::Regex, "a|b");
        assert!(r.matches("a") && r.matches("b") && !r.matches("ab"));
        let r = m(MatchType::NotRegex, "a.*");
        assert!(!r.matches("abc") && r.matches("") && r.matches("ba"));
        assert!(m(MatchType::Regex, ".*").matches("line1\nline2"));
    }

    #[test]
    fn missing_label_matches_empty() {
        let ls = Labels::from_pairs(&[("a", "1")]);
        assert!(Matcher::equal("b", "").matches_labels(&ls));
        let ne = |v| Matcher::new(MatchType::NotEqual, "b", v).expect("no regex");
        assert!(!ne("").matches_labels(&ls));
        assert!(ne("x").matches_labels(&ls));
    }

    #[test]
    fn bad_regex_is_an_error() {
        let e = Matcher::new(MatchType::Regex, "a", "(").expect_err("unclosed group");
        assert_eq!(e.pattern, "(");
    }

    #[test]
    fn display_as_promql() {
        assert_eq!(m(MatchType::NotRegex, "a\"b").to_string(), r#"job!~"a\"b""#);
    }
}
