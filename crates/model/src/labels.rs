//! Label sets: the identity of a series.
//!
//! A series is identified by its label set: name/value pairs sorted by name,
//! names unique, no empty values (Prometheus drops a label whose value is
//! empty, so `foo=""` and "no foo" are the same series). [`Labels`] is the
//! one owned form every crate uses: storage hands it out, PromQL computes
//! with it, remote write builds it. The head stores interned symbol ids
//! instead (`ferrite-tsdb`'s `symbols`).

use std::fmt;

use compact_str::CompactString;

/// A label name or value: up to 24 bytes inline (most are), longer ones on
/// the heap.
pub type Str = CompactString;

/// The metric name label.
pub const METRIC_NAME: &str = "__name__";

/// The metric type label of Prometheus' type-and-unit labels.
pub const METRIC_TYPE: &str = "__type__";

/// Whether a label is one of a series' metadata labels (`__name__`,
/// `__type__`, `__unit__`: what it measures, not which one it is).
pub fn is_metadata_label(name: &str) -> bool {
    name == METRIC_NAME || name == METRIC_TYPE || name == METRIC_UNIT
}

/// The metric unit label of Prometheus' type-and-unit labels.
pub const METRIC_UNIT: &str = "__unit__";

/// One label. Names and values up to 24 bytes (most of them) are held
/// inline, without an allocation of their own.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Label {
    /// The label's name.
    pub name: Str,
    /// The label's value, never empty inside a [`Labels`].
    pub value: Str,
}

impl Label {
    /// A label of `name` and `value`.
    pub fn new(name: impl Into<Str>, value: impl Into<Str>) -> Label {
        Label {
            name: name.into(),
            value: value.into(),
        }
    }
}

/// How metric and label names are validated (Prometheus'
/// `model.ValidationScheme`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ValidationScheme {
    /// Any non-empty valid UTF-8 (Prometheus v3's default, and what its
    /// remote write receiver always uses).
    #[default]
    Utf8,
    /// `[a-zA-Z_:][a-zA-Z0-9_:]*` metric names, `[a-zA-Z_][a-zA-Z0-9_]*` label names.
    Legacy,
}

impl ValidationScheme {
    /// Whether `n` is a valid metric name under this scheme.
    pub fn is_valid_metric_name(self, n: &[u8]) -> bool {
        match self {
            ValidationScheme::Utf8 => !n.is_empty() && std::str::from_utf8(n).is_ok(),
            ValidationScheme::Legacy => {
                !n.is_empty()
                    && n.iter().enumerate().all(|(i, &b)| {
                        b.is_ascii_alphabetic()
                            || b == b'_'
                            || b == b':'
                            || (i > 0 && b.is_ascii_digit())
                    })
            }
        }
    }

    /// Whether `n` is a valid label name under this scheme.
    pub fn is_valid_label_name(self, n: &[u8]) -> bool {
        match self {
            ValidationScheme::Utf8 => !n.is_empty() && std::str::from_utf8(n).is_ok(),
            ValidationScheme::Legacy => is_legacy_label_name(n),
        }
    }
}

/// Whether `n` is a legacy label name, `[a-zA-Z_][a-zA-Z0-9_]*` (names
/// that Prometheus prints unquoted).
pub fn is_legacy_label_name(n: &[u8]) -> bool {
    !n.is_empty()
        && n.iter()
            .enumerate()
            .all(|(i, &b)| b.is_ascii_alphabetic() || b == b'_' || (i > 0 && b.is_ascii_digit()))
}

/// A sorted label set.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Labels(Vec<Label>);

impl Labels {
    /// The empty label set.
    pub fn empty() -> Self {
        Labels(Vec::new())
    }

    /// Builds a label set from pairs: sorted by name, the last of duplicate
    /// names wins and empty values are dropped (an empty value means "no
    /// label").
    pub fn new<N: Into<Str>, V: Into<Str>>(pairs: impl IntoIterator<Item = (N, V)>) -> Self {
        let mut v: Vec<Label> = pairs
            .into_iter()
            .map(|(n, val)| Label {
                name: n.into(),
                value: val.into(),
            })
            .collect();
        // Stable: of equal names the later one stays last, then wins.
        v.sort_by(|a, b| a.name.cmp(&b.name));
        let mut out: Vec<Label> = Vec::with_capacity(v.len());
        for l in v {
            match out.last_mut() {
                Some(last) if last.name == l.name => *last = l,
                _ => out.push(l),
            }
        }
        out.retain(|l| !l.value.is_empty());
        Labels(out)
    }

    /// Builds a label set from pairs as received: sorted by name, empty
    /// values dropped, duplicate names **kept** so that
    /// [`Labels::validate`] can refuse them (ingestion must not pick one).
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

    /// Wraps labels already sorted by name (as storage keeps them), without
    /// re-sorting; empty values are dropped. Labels out of order are sorted
    /// (stably). Duplicate names are kept, as received, so that
    /// [`Labels::validate`] can refuse them.
    pub fn from_sorted(mut v: Vec<Label>) -> Self {
        if v.windows(2).any(|w| w[0].name > w[1].name) {
            v.sort_by(|a, b| a.name.cmp(&b.name));
        }
        v.retain(|l| !l.value.is_empty());
        Labels(v)
    }

    /// The labels, by value (no copy of the strings).
    pub fn into_vec(self) -> Vec<Label> {
        self.0
    }

    /// The value of `name`, "" when absent (PromQL's missing-label rule).
    pub fn get(&self, name: &str) -> &str {
        match self.position(name) {
            Ok(i) => &self.0[i].value,
            Err(_) => "",
        }
    }

    /// Whether a label `name` is present.
    pub fn has(&self, name: &str) -> bool {
        self.position(name).is_ok()
    }

    fn position(&self, name: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|l| l.name.as_str().cmp(name))
    }

    /// The labels in name order.
    pub fn iter(&self) -> std::slice::Iter<'_, Label> {
        self.0.iter()
    }

    /// The labels as a slice, in name order.
    pub fn as_slice(&self) -> &[Label] {
        &self.0
    }

    /// The number of labels.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are no labels.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Sets (or, for an empty value, removes) a label.
    pub fn set(&mut self, name: &str, value: &str) {
        match self.position(name) {
            Ok(i) if value.is_empty() => {
                self.0.remove(i);
            }
            Ok(i) => self.0[i].value = value.into(),
            Err(_) if value.is_empty() => {}
            Err(i) => self.0.insert(
                i,
                Label {
                    name: name.into(),
                    value: value.into(),
                },
            ),
        }
    }

    /// Removes a label if present.
    pub fn remove(&mut self, name: &str) {
        self.set(name, "");
    }

    /// Keeps only the labels named in `names`.
    pub fn keep(&mut self, names: &[String]) {
        self.0.retain(|l| names.iter().any(|k| *k == l.name));
    }

    /// Removes the metadata labels (`__name__`, `__type__`, `__unit__`), as
    /// Prometheus does when an operation changes what a series measures.
    pub fn drop_metric_name(&mut self) {
        self.0.retain(|l| !is_metadata_label(&l.name));
    }

    /// The metric name, "" when there is none.
    pub fn metric_name(&self) -> &str {
        self.get(METRIC_NAME)
    }

    /// Prometheus' `labels.Labels.Hash()` as its release builds compute it
    /// (the default `stringlabels` form): xxHash64 (seed 0) of every name
    /// and value, each preceded by its length (one byte below 255, else 255
    /// and three bytes little-endian).
    pub fn prometheus_hash(&self) -> u64 {
        let mut h = xxhash_rust::xxh64::Xxh64::new(0);
        let mut put = |s: &str| {
            let n = s.len();
            if n < 255 {
                h.update(&[n as u8]);
            } else {
                h.update(&[255, n as u8, (n >> 8) as u8, (n >> 16) as u8]);
            }
            h.update(s.as_bytes());
        };
        for l in &self.0 {
            put(&l.name);
            put(&l.value);
        }
        h.digest()
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

impl<'a> IntoIterator for &'a Labels {
    type Item = &'a Label;
    type IntoIter = std::slice::Iter<'a, Label>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl fmt::Display for Labels {
    /// Prometheus' `labels.Labels.String()`: `{a="1", b="2"}`.
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

impl fmt::Debug for Labels {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Why a label set cannot be stored.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum LabelsError {
    /// No labels at all.
    #[error("empty label set")]
    Empty,
    /// A name appears twice.
    #[error("label name {0:?} is not unique")]
    DuplicateName(String),
    /// A label has an empty name.
    #[error("empty label name (value {0:?})")]
    EmptyName(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorted_and_empty_values_dropped() {
        let ls = Labels::from_pairs(&[("b", "2"), ("a", "1"), ("c", "")]);
        assert_eq!(ls.len(), 2);
        assert_eq!(ls.get("a"), "1");
        assert_eq!(ls.get("c"), "");
        assert!(!ls.has("c"));
        assert_eq!(ls.to_string(), r#"{a="1", b="2"}"#);
    }

    #[test]
    fn new_keeps_the_last_duplicate() {
        let ls = Labels::new([("b", "1"), ("a", "x"), ("b", "2"), ("c", "3"), ("c", "")]);
        assert_eq!(ls.to_string(), r#"{a="x", b="2"}"#);
    }

    #[test]
    fn from_sorted_falls_back_to_sorting() {
        let l = |n: &str, v: &str| Label {
            name: n.into(),
            value: v.into(),
        };
        let ls = Labels::from_sorted(vec![l("b", "1"), l("a", "2")]);
        assert_eq!(ls.to_string(), r#"{a="2", b="1"}"#);
        let ls = Labels::from_sorted(vec![l("a", ""), l("b", "1")]);
        assert_eq!(ls.to_string(), r#"{b="1"}"#);
        // Duplicates are kept for validation to refuse.
        let ls = Labels::from_sorted(vec![l("b", "1"), l("a", "2"), l("b", "1")]);
        assert_eq!(ls.to_string(), r#"{a="2", b="1", b="1"}"#);
        assert!(ls.validate().is_err());
    }

    #[test]
    fn set_remove_keep() {
        let mut ls = Labels::from_pairs(&[("__name__", "up"), ("job", "a")]);
        ls.set("instance", "x");
        ls.set("job", "");
        assert_eq!(ls.to_string(), r#"{__name__="up", instance="x"}"#);
        ls.keep(&["instance".to_string()]);
        assert_eq!(ls.to_string(), r#"{instance="x"}"#);
        let mut ls = Labels::from_pairs(&[("__name__", "m"), ("__type__", "gauge"), ("a", "1")]);
        ls.drop_metric_name();
        assert_eq!(ls.to_string(), r#"{a="1"}"#);
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
        assert_eq!(
            Labels::from_pairs(&[("", "1")]).validate(),
            Err(LabelsError::EmptyName("1".into()))
        );
    }
}
