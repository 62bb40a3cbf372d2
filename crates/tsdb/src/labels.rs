//! Label sets and label matchers.
//!
//! A series is identified by its label set: name/value pairs sorted by name,
//! names unique, no empty values (Prometheus drops a label whose value is
//! empty, so `foo=""` and "no foo" are the same series). [`Labels`] is the
//! owned form handed across the API; the head stores interned symbol ids
//! instead (see `symbols`).
//!
//! [`Matcher`] carries Prometheus' matcher semantics: regexes are fully
//! anchored, and a missing label matches as the empty string.

use std::fmt;

use compact_str::CompactString;
use regex::Regex;

/// The metric name label.
pub const METRIC_NAME: &str = "__name__";

/// One label. Names and values up to 24 bytes (most of them) are held
/// inline, without an allocation of their own.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Label {
    pub name: CompactString,
    pub value: CompactString,
}

/// A sorted label set.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Labels(Vec<Label>);

impl Labels {
    /// Builds a label set from pairs: sorted by name, empty values dropped.
    /// Duplicate names are kept (and rejected by [`Labels::validate`]).
    pub fn from_pairs<N: AsRef<str>, V: AsRef<str>>(pairs: &[(N, V)]) -> Self {
        let mut v: Vec<Label> = pairs
            .iter()
            .filter(|(_, val)| !val.as_ref().is_empty())
            .map(|(n, val)| Label {
                name: n.as_ref().into(),
                value: val.as_ref().into(),
            })
            .collect();
        v.sort();
        Labels(v)
    }

    /// The labels, by value (no copy of the strings).
    pub fn into_vec(self) -> Vec<Label> {
        self.0
    }

    /// Wraps labels already sorted by name without empty values.
    pub fn from_sorted(v: Vec<Label>) -> Self {
        debug_assert!(v.windows(2).all(|w| w[0].name <= w[1].name));
        Labels(v)
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .binary_search_by(|l| l.name.as_str().cmp(name))
            .ok()
            .map(|i| self.0[i].value.as_str())
    }

    pub fn iter(&self) -> impl Iterator<Item = &Label> {
        self.0.iter()
    }

    pub fn as_slice(&self) -> &[Label] {
        &self.0
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Checks the rules a series' labels must satisfy to be stored.
    pub fn validate(&self) -> Result<(), LabelsError> {
        if self.0.is_empty() {
            return Err(LabelsError::Empty);
        }
        for w in self.0.windows(2) {
            if w[0].name == w[1].name {
                return Err(LabelsError::DuplicateName(w[0].name.to_string()));
            }
        }
        if let Some(l) = self.0.iter().find(|l| l.name.is_empty()) {
            return Err(LabelsError::EmptyName(l.value.to_string()));
        }
        Ok(())
    }
}

impl fmt::Display for Labels {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("{")?;
        for (i, l) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{}={:?}", l.name, l.value)?;
        }
        f.write_str("}")
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum LabelsError {
    #[error("empty label set")]
    Empty,
    #[error("label name {0:?} is not unique")]
    DuplicateName(String),
    #[error("empty label name (value {0:?})")]
    EmptyName(String),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MatchType {
    Equal,
    NotEqual,
    Regex,
    NotRegex,
}

/// A label matcher with Prometheus semantics.
#[derive(Clone, Debug)]
pub struct Matcher {
    pub kind: MatchType,
    pub name: String,
    pub value: String,
    re: Option<Regex>,
}

#[derive(Debug, thiserror::Error)]
#[error("invalid regular expression {pattern:?}: {source}")]
pub struct MatcherError {
    pub pattern: String,
    #[source]
    pub source: regex::Error,
}

impl Matcher {
    pub fn new(kind: MatchType, name: &str, value: &str) -> Result<Self, MatcherError> {
        let re = match kind {
            MatchType::Regex | MatchType::NotRegex => {
                // Prometheus regexes are fully anchored; `(?s)` lets `.` match newlines as Go's RE2 does with the `s` flag Prometheus sets.
                let anchored = format!("^(?s:{value})$");
                Some(Regex::new(&anchored).map_err(|source| MatcherError {
                    pattern: value.to_owned(),
                    source,
                })?)
            }
            _ => None,
        };
        Ok(Matcher {
            kind,
            name: name.to_owned(),
            value: value.to_owned(),
            re,
        })
    }

    /// A `=~`/`!~` matcher whose regex the caller has already compiled as
    /// [`Matcher::new`] would: `^(?s:value)$`. The PromQL engine compiles
    /// (and keeps) its matchers' regexes; this spares a second compilation.
    pub fn with_regex(negated: bool, name: &str, value: &str, re: Regex) -> Self {
        Matcher {
            kind: if negated {
                MatchType::NotRegex
            } else {
                MatchType::Regex
            },
            name: name.to_owned(),
            value: value.to_owned(),
            re: Some(re),
        }
    }

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
        self.matches(ls.get(&self.name).unwrap_or(""))
    }
}

impl fmt::Display for Matcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = match self.kind {
            MatchType::Equal => "=",
            MatchType::NotEqual => "!=",
            MatchType::Regex => "=~",
            MatchType::NotRegex => "!~",
        };
        write!(f, "{}{}{:?}", self.name, op, self.value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_sorted_and_empty_values_dropped() {
        let ls = Labels::from_pairs(&[("b", "2"), ("a", "1"), ("c", "")]);
        assert_eq!(ls.len(), 2);
        assert_eq!(ls.get("a"), Some("1"));
        assert_eq!(ls.get("c"), None);
        assert_eq!(ls.to_string(), r#"{a="1", b="2"}"#);
    }

    #[test]
    fn validate_rejects_duplicates_and_empty() {
        assert_eq!(
            Labels::from_pairs::<&str, &str>(&[]).validate(),
            Err(LabelsError::Empty)
        );
        assert_eq!(
            Labels::from_pairs(&[("a", "1"), ("a", "2")]).validate(),
            Err(LabelsError::DuplicateName("a".into()))
        );
    }

    #[test]
    fn regex_is_fully_anchored() {
        let m = Matcher::new(MatchType::Regex, "job", "api").unwrap();
        assert!(m.matches("api"));
        assert!(!m.matches("api-server"));
        assert!(!m.matches("my-api"));
        let m = Matcher::new(MatchType::Regex, "job", "a|b").unwrap();
        assert!(m.matches("a") && m.matches("b") && !m.matches("ab"));
        let m = Matcher::new(MatchType::NotRegex, "job", "a.*").unwrap();
        assert!(!m.matches("abc") && m.matches("") && m.matches("ba"));
        let m = Matcher::new(MatchType::Regex, "x", ".*").unwrap();
        assert!(m.matches("line1\nline2"));
    }

    #[test]
    fn missing_label_matches_empty() {
        let ls = Labels::from_pairs(&[("a", "1")]);
        assert!(Matcher::equal("b", "").matches_labels(&ls));
        assert!(!Matcher::new(MatchType::NotEqual, "b", "")
            .unwrap()
            .matches_labels(&ls));
        assert!(Matcher::new(MatchType::NotEqual, "b", "x")
            .unwrap()
            .matches_labels(&ls));
    }

    #[test]
    fn bad_regex_is_an_error() {
        assert!(Matcher::new(MatchType::Regex, "a", "(").is_err());
    }
}
