//! Relabeling rules (`relabel_configs`, `metric_relabel_configs`,
//! `alert_relabel_configs`, `write_relabel_configs`): read, validated and
//! applied as Prometheus v3.16.0's `model/relabel` does.
//!
//! ```yaml
//! - source_labels: [__meta_kubernetes_pod_name, __meta_kubernetes_pod_container_name]
//!   separator: ";"          # default ";"
//!   regex: "(.+);(.+)"      # default "(.*)", anchored at both ends
//!   target_label: instance  # may use $1, ${name} (replace)
//!   replacement: "$1:$2"    # default "$1"
//!   action: replace         # default replace
//! ```
//!
//! [`apply`] runs rules in order over a label set and returns the result,
//! or `None` when a rule drops it. The rules see the labels as Prometheus'
//! `labels.Builder` holds them while relabeling (the original labels, then
//! the ones rules set, in the order they set them), so `labelmap` rules that
//! map several labels to one name keep the same one as Prometheus.
//!
//! Regexes are Rust's `regex` crate, compiled as PromQL's are
//! ([`ferrite_model::matcher::compile_anchored`]); its syntax is RE2's, as
//! Go's is, but `\d`, `\w`, `\s` and `\b` are Unicode-aware where Go's are
//! ASCII-only, and a regex that fails to compile is refused with the
//! crate's reason rather than Go's. Replacement templates (`$1`, `${1}`,
//! `$name`, `$$`) expand with Go's rules: a name is as long as it can be
//! (`$1x` is group `1x`, not `1` then `x`), a missing group expands to
//! nothing, a `$` that starts no name is kept. `lowercase` and `uppercase`
//! map each character on its own, as Go's `strings.ToLower`/`ToUpper` do
//! (`ß` stays `ß`).

use std::fmt;

use md5::{Digest, Md5};
use regex::Regex;
use serde::de::{self, Deserializer};
use serde::Deserialize;

use ferrite_model::matcher::compile_anchored;
use ferrite_model::{Label, Labels, ValidationScheme};

pub(crate) use ferrite_model::goquote::quote as go_quote;

use crate::yaml::{present, GoString, LabelNameField};

/// Whether `template` (a `target_label` with `$` references, or a
/// `labelmap` replacement) may name a label under `names`: any non-empty
/// name for UTF-8; for legacy names, legacy name characters and `$name` or
/// `${name}` references, starting with a letter, `_` or a reference.
fn is_valid_template(names: ValidationScheme, template: &str) -> bool {
    match names {
        ValidationScheme::Utf8 => names.is_valid_label_name(template.as_bytes()),
        ValidationScheme::Legacy => is_legacy_template(template),
    }
}

/// What a rule does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RelabelAction {
    /// Sets `target_label` to `replacement` expanded, if `regex` matches.
    Replace,
    /// Drops the label set unless `regex` matches.
    Keep,
    /// Drops the label set if `regex` matches.
    Drop,
    /// Drops the label set unless `target_label` equals the source value.
    KeepEqual,
    /// Drops the label set if `target_label` equals the source value.
    DropEqual,
    /// Sets `target_label` to the source value's MD5 modulo `modulus`.
    HashMod,
    /// Copies labels whose names match `regex` to `replacement` expanded.
    LabelMap,
    /// Removes labels whose names match `regex`.
    LabelDrop,
    /// Removes labels whose names do not match `regex`.
    LabelKeep,
    /// Sets `target_label` to the source value in lower case.
    Lowercase,
    /// Sets `target_label` to the source value in upper case.
    Uppercase,
}

impl RelabelAction {
    const ALL: [RelabelAction; 11] = [
        RelabelAction::Replace,
        RelabelAction::Keep,
        RelabelAction::Drop,
        RelabelAction::KeepEqual,
        RelabelAction::DropEqual,
        RelabelAction::HashMod,
        RelabelAction::LabelMap,
        RelabelAction::LabelDrop,
        RelabelAction::LabelKeep,
        RelabelAction::Lowercase,
        RelabelAction::Uppercase,
    ];

    /// The action's name in configuration files.
    pub fn name(self) -> &'static str {
        match self {
            RelabelAction::Replace => "replace",
            RelabelAction::Keep => "keep",
            RelabelAction::Drop => "drop",
            RelabelAction::KeepEqual => "keepequal",
            RelabelAction::DropEqual => "dropequal",
            RelabelAction::HashMod => "hashmod",
            RelabelAction::LabelMap => "labelmap",
            RelabelAction::LabelDrop => "labeldrop",
            RelabelAction::LabelKeep => "labelkeep",
            RelabelAction::Lowercase => "lowercase",
            RelabelAction::Uppercase => "uppercase",
        }
    }

    /// Sets `target_label` from the source value (and so needs one).
    fn writes_target(self) -> bool {
        matches!(
            self,
            RelabelAction::Replace
                | RelabelAction::HashMod
                | RelabelAction::Lowercase
                | RelabelAction::Uppercase
                | RelabelAction::KeepEqual
                | RelabelAction::DropEqual
        )
    }
}

impl fmt::Display for RelabelAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl<'de> Deserialize<'de> for RelabelAction {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let GoString(text) = GoString::deserialize(d)?;
        let lower = text.to_lowercase();
        RelabelAction::ALL
            .into_iter()
            .find(|a| a.name() == lower)
            .ok_or_else(|| de::Error::custom(format!("unknown relabel action {}", go_quote(&text))))
    }
}

/// A rule's regex: its text as written and the anchored compiled form.
#[derive(Clone)]
pub struct RelabelRegex {
    text: String,
    re: Regex,
    /// Not written in the file: the default `(.*)`. Prometheus tells the
    /// two apart (`keepequal` refuses a written one, even `(.*)`).
    default: bool,
}

impl RelabelRegex {
    /// Compiles `text`, anchored at both ends with `.` matching newlines.
    pub fn new(text: &str) -> Result<RelabelRegex, String> {
        let re = compile_anchored(text).map_err(|e| e.to_string())?;
        Ok(RelabelRegex {
            text: text.to_string(),
            re,
            default: false,
        })
    }

    fn default_regex() -> RelabelRegex {
        static DEFAULT: std::sync::LazyLock<Regex> = std::sync::LazyLock::new(|| {
            compile_anchored("(.*)").expect("the default relabel regex compiles")
        });
        RelabelRegex {
            text: "(.*)".to_string(),
            re: DEFAULT.clone(),
            default: true,
        }
    }

    /// The regex as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    fn is_match(&self, s: &str) -> bool {
        self.re.is_match(s)
    }
}

impl fmt::Debug for RelabelRegex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.text)
    }
}

impl PartialEq for RelabelRegex {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text && self.default == other.default
    }
}

/// One relabeling rule, defaults filled in.
#[derive(Debug, Clone, PartialEq)]
pub struct RelabelConfig {
    /// Labels whose values, joined by `separator`, make the source value.
    pub source_labels: Vec<String>,
    /// Put between the source labels' values (default `;`).
    pub separator: String,
    /// Matched against the source value (or label names, for `labelmap`,
    /// `labeldrop`, `labelkeep`).
    pub regex: RelabelRegex,
    /// For `hashmod`.
    pub modulus: u64,
    /// The label a rule writes or compares with.
    pub target_label: String,
    /// What `replace` and `labelmap` write, `$1`-style references expanded
    /// (default `$1`).
    pub replacement: String,
    /// `None` when the file gave `action:` no value (refused by
    /// [`RelabelConfig::validate`], as Prometheus refuses it).
    pub action: Option<RelabelAction>,
    /// `source_labels` was written with a list, even an empty one
    /// (`labeldrop` and `labelkeep` refuse that, as Prometheus does).
    source_labels_written: bool,
}

const DEFAULT_SEPARATOR: &str = ";";
const DEFAULT_REPLACEMENT: &str = "$1";

impl Default for RelabelConfig {
    fn default() -> Self {
        RelabelConfig {
            source_labels: Vec::new(),
            separator: DEFAULT_SEPARATOR.to_string(),
            regex: RelabelRegex::default_regex(),
            modulus: 0,
            target_label: String::new(),
            replacement: DEFAULT_REPLACEMENT.to_string(),
            action: Some(RelabelAction::Replace),
            source_labels_written: false,
        }
    }
}

/// A rule's regex, compiled while decoding.
struct RegexField(RelabelRegex);

impl<'de> Deserialize<'de> for RegexField {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let GoString(text) = GoString::deserialize(d)?;
        RelabelRegex::new(&text)
            .map(RegexField)
            .map_err(de::Error::custom)
    }
}

/// A rule as written: each field absent (`None`), null (`Some(None)`, the
/// Go zero value, as yaml.v2 sets it) or given. Fields check themselves
/// while decoding, as Prometheus' do, so the first bad one in the file is
/// the one reported.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRelabel {
    #[serde(default, deserialize_with = "present")]
    source_labels: Option<Option<Vec<Option<LabelNameField>>>>,
    #[serde(default, deserialize_with = "present")]
    separator: Option<Option<GoString>>,
    #[serde(default, deserialize_with = "present")]
    regex: Option<Option<RegexField>>,
    #[serde(default, deserialize_with = "present")]
    modulus: Option<Option<u64>>,
    #[serde(default, deserialize_with = "present")]
    target_label: Option<Option<GoString>>,
    #[serde(default, deserialize_with = "present")]
    replacement: Option<Option<GoString>>,
    #[serde(default, deserialize_with = "present")]
    action: Option<Option<RelabelAction>>,
}

impl<'de> Deserialize<'de> for RelabelConfig {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = RawRelabel::deserialize(d)?;
        let mut c = RelabelConfig::default();
        let text = |v: Option<GoString>| v.map(|GoString(s)| s).unwrap_or_default();
        if let Some(labels) = raw.source_labels {
            c.source_labels_written = labels.is_some();
            // A null entry is Go's zero value, never checked.
            c.source_labels = labels
                .unwrap_or_default()
                .into_iter()
                .map(|name| name.map(|LabelNameField(n)| n).unwrap_or_default())
                .collect();
        }
        if let Some(v) = raw.separator {
            c.separator = text(v);
        }
        if let Some(v) = raw.regex {
            c.regex = match v {
                Some(RegexField(re)) => re,
                None => RelabelRegex::new("").map_err(de::Error::custom)?,
            };
        }
        if let Some(v) = raw.modulus {
            c.modulus = v.unwrap_or(0);
        }
        if let Some(v) = raw.target_label {
            c.target_label = text(v);
        }
        if let Some(v) = raw.replacement {
            c.replacement = text(v);
        }
        if let Some(v) = raw.action {
            c.action = v;
        }
        Ok(c)
    }
}

impl RelabelConfig {
    /// Checks the rule as Prometheus' `Config.Validate` does, with its
    /// messages.
    pub fn validate(&self, names: ValidationScheme) -> Result<(), String> {
        let Some(action) = self.action else {
            return Err("relabel action cannot be empty".to_string());
        };
        let target = &self.target_label;
        let invalid_target = || {
            Err(format!(
                "{} is invalid 'target_label' for {action} action",
                go_quote(target)
            ))
        };
        if action == RelabelAction::HashMod && self.modulus == 0 {
            return Err("relabel configuration for hashmod requires non-zero modulus".to_string());
        }
        if action.writes_target() && target.is_empty() {
            return Err(format!(
                "relabel configuration for {action} action requires 'target_label' value"
            ));
        }
        let templated = target.contains('$');
        if action == RelabelAction::Replace
            && ((!templated && !names.is_valid_label_name(target.as_bytes()))
                || (templated && !is_valid_template(names, target)))
        {
            return invalid_target();
        }
        let compares_or_cases = matches!(
            action,
            RelabelAction::Lowercase
                | RelabelAction::Uppercase
                | RelabelAction::KeepEqual
                | RelabelAction::DropEqual
        );
        if compares_or_cases && !names.is_valid_label_name(target.as_bytes()) {
            return invalid_target();
        }
        if compares_or_cases && self.replacement != DEFAULT_REPLACEMENT {
            return Err(format!("'replacement' can not be set for {action} action"));
        }
        if action == RelabelAction::LabelMap && !is_valid_template(names, &self.replacement) {
            return Err(format!(
                "{} is invalid 'replacement' for {action} action",
                go_quote(&self.replacement)
            ));
        }
        if action == RelabelAction::HashMod && !names.is_valid_label_name(target.as_bytes()) {
            return invalid_target();
        }
        let other_fields_default = self.modulus == 0
            && self.separator == DEFAULT_SEPARATOR
            && self.replacement == DEFAULT_REPLACEMENT;
        if matches!(action, RelabelAction::KeepEqual | RelabelAction::DropEqual)
            && !(self.regex.default && other_fields_default)
        {
            return Err(format!(
                "{action} action requires only 'source_labels' and `target_label`, and no other fields"
            ));
        }
        if matches!(action, RelabelAction::LabelDrop | RelabelAction::LabelKeep)
            && !(!self.source_labels_written && target.is_empty() && other_fields_default)
        {
            return Err(format!(
                "{action} action requires only 'regex', and no other fields"
            ));
        }
        Ok(())
    }
}

/// Reads a YAML list of rules (as `relabel_configs:` holds them), with
/// Prometheus' defaults; the error is the reason Prometheus would give.
/// The rules still need [`RelabelConfig::validate`].
pub fn parse_rules(yaml: &str) -> Result<Vec<RelabelConfig>, String> {
    crate::yaml::from_str(yaml)
}

/// Runs `rules` in order over `labels`: the relabeled set, or `None` if a
/// rule dropped it. Rules are expected to be validated.
pub fn apply(labels: &Labels, rules: &[RelabelConfig], names: ValidationScheme) -> Option<Labels> {
    let mut b = LabelsBuilder::new(labels);
    for rule in rules {
        if !apply_rule(rule, &mut b, names) {
            return None;
        }
    }
    Some(b.labels())
}

/// [`apply`] step by step: the labels after each rule, `None` from the
/// rule that dropped them on (Prometheus' `/api/v1/targets/relabel_steps`).
pub fn apply_steps(
    labels: &Labels,
    rules: &[RelabelConfig],
    names: ValidationScheme,
) -> Vec<Option<Labels>> {
    let mut b = LabelsBuilder::new(labels);
    let mut keep = true;
    rules
        .iter()
        .map(|rule| {
            keep = keep && apply_rule(rule, &mut b, names);
            keep.then(|| b.labels())
        })
        .collect()
}

fn apply_rule(rule: &RelabelConfig, b: &mut LabelsBuilder<'_>, names: ValidationScheme) -> bool {
    let Some(action) = rule.action else {
        return true;
    };
    let mut value = String::new();
    for (i, name) in rule.source_labels.iter().enumerate() {
        if i > 0 {
            value.push_str(&rule.separator);
        }
        value.push_str(b.get(name));
    }
    let target = rule.target_label.as_str();
    match action {
        RelabelAction::Drop => return !rule.regex.is_match(&value),
        RelabelAction::Keep => return rule.regex.is_match(&value),
        RelabelAction::DropEqual => return b.get(target) != value,
        RelabelAction::KeepEqual => return b.get(target) == value,
        RelabelAction::Replace => replace(rule, b, &value, names),
        RelabelAction::Lowercase => b.set(target, &go_to_lower(&value)),
        RelabelAction::Uppercase => b.set(target, &go_to_upper(&value)),
        RelabelAction::HashMod => {
            let digest = Md5::digest(value.as_bytes());
            let mut tail = [0u8; 8];
            tail.copy_from_slice(&digest[8..]);
            let bucket = u64::from_be_bytes(tail) % rule.modulus.max(1);
            b.set(target, &bucket.to_string());
        }
        RelabelAction::LabelMap => {
            for label in b.snapshot() {
                if let Some(caps) = rule.regex.re.captures(&label.name) {
                    let name = expand(&rule.replacement, &rule.regex.re, &label.name, &caps);
                    b.set(&name, &label.value);
                }
            }
        }
        RelabelAction::LabelDrop | RelabelAction::LabelKeep => {
            let keep_matching = action == RelabelAction::LabelKeep;
            for label in b.snapshot() {
                if rule.regex.is_match(&label.name) != keep_matching {
                    b.del(&label.name);
                }
            }
        }
    }
    true
}

fn replace(rule: &RelabelConfig, b: &mut LabelsBuilder<'_>, value: &str, names: ValidationScheme) {
    let Some(caps) = rule.regex.re.captures(value) else {
        return;
    };
    let target = expand(&rule.target_label, &rule.regex.re, value, &caps);
    if !names.is_valid_label_name(target.as_bytes()) {
        return;
    }
    let replaced = expand(&rule.replacement, &rule.regex.re, value, &caps);
    if replaced.is_empty() {
        b.del(&target);
    } else {
        b.set(&target, &replaced);
    }
}

/// A label set being relabeled, held as Prometheus' `labels.Builder`
/// holds it: the original labels, the labels set since in the order they
/// were first set, and the names deleted. Rules that walk the labels
/// (`labelmap`, `labeldrop`, `labelkeep`) see them in that order.
struct LabelsBuilder<'a> {
    base: &'a Labels,
    added: Vec<Label>,
    deleted: Vec<String>,
}

impl<'a> LabelsBuilder<'a> {
    fn new(base: &'a Labels) -> Self {
        LabelsBuilder {
            base,
            added: Vec::new(),
            deleted: Vec::new(),
        }
    }

    fn get(&self, name: &str) -> &str {
        if let Some(l) = self.added.iter().find(|l| l.name == name) {
            return &l.value;
        }
        if self.deleted.iter().any(|d| d == name) {
            return "";
        }
        self.base.get(name)
    }

    /// Sets a label; an empty value deletes it.
    fn set(&mut self, name: &str, value: &str) {
        if value.is_empty() {
            return self.del(name);
        }
        match self.added.iter_mut().find(|l| l.name == name) {
            Some(l) => l.value = value.into(),
            None => self.added.push(Label::new(name, value)),
        }
    }

    fn del(&mut self, name: &str) {
        self.added.retain(|l| l.name != name);
        self.deleted.push(name.to_string());
    }

    /// The labels as they are now, in walking order: original labels not
    /// deleted or set since, then the set ones.
    fn snapshot(&self) -> Vec<Label> {
        let shadowed = |name: &str| {
            self.deleted.iter().any(|d| d == name) || self.added.iter().any(|l| l.name == name)
        };
        self.base
            .iter()
            .filter(|l| !shadowed(&l.name))
            .chain(self.added.iter())
            .cloned()
            .collect()
    }

    fn labels(&self) -> Labels {
        Labels::new(self.snapshot().into_iter().map(|l| (l.name, l.value)))
    }
}

/// Expands a Go regexp template (`regexp.Regexp.ExpandString`): `$$` is
/// `$`; `$name` or `${name}` is the group of that number or name (empty if
/// it did not take part or does not exist); a `$` starting no name stays.
pub fn expand(template: &str, re: &Regex, haystack: &str, caps: &regex::Captures<'_>) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        rest = &rest[at + 1..];
        if let Some(after) = rest.strip_prefix('$') {
            out.push('$');
            rest = after;
            continue;
        }
        let Some((name, after)) = template_name(rest) else {
            out.push('$');
            continue;
        };
        rest = after;
        let group = match group_number(name) {
            Some(n) => caps.get(n),
            None => re
                .capture_names()
                .position(|n| n == Some(name))
                .and_then(|i| caps.get(i)),
        };
        if let Some(m) = group {
            out.push_str(&haystack[m.start()..m.end()]);
        }
    }
    out.push_str(rest);
    out
}

/// The name at the start of `s` (after a `$`): letters, digits and `_`,
/// as long as possible, or the same in braces. `None` if there is none
/// or the brace is not closed.
fn template_name(s: &str) -> Option<(&str, &str)> {
    let (braced, body) = match s.strip_prefix('{') {
        Some(b) => (true, b),
        None => (false, s),
    };
    let len = body
        .char_indices()
        .find(|&(_, c)| !(c.is_alphabetic() || c.is_numeric() || c == '_'))
        .map_or(body.len(), |(i, _)| i);
    if len == 0 {
        return None;
    }
    let (name, after) = body.split_at(len);
    if braced {
        return after.strip_prefix('}').map(|a| (name, a));
    }
    Some((name, after))
}

/// A group number: decimal digits, no leading zero, below 10^8 as Go
/// counts (a longer number is a name).
fn group_number(name: &str) -> Option<usize> {
    if name.len() > 1 && name.starts_with('0') {
        return None;
    }
    let mut n: usize = 0;
    for b in name.bytes() {
        if !b.is_ascii_digit() || n >= 100_000_000 {
            return None;
        }
        n = n * 10 + usize::from(b - b'0');
    }
    Some(n)
}

/// Prometheus' legacy target pattern
/// `^(?:(?:[a-zA-Z_]|\$(?:\{\w+\}|\w+))+\w*)+$`: legacy name characters
/// and `$name`/`${name}` references (`\w` being ASCII word characters),
/// not starting with a digit.
fn is_legacy_template(s: &str) -> bool {
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let bytes = s.as_bytes();
    let mut i = 0;
    let mut first = true;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'$' {
            let rest = &bytes[i + 1..];
            let len = if rest.first() == Some(&b'{') {
                let n = rest[1..].iter().take_while(|&&c| word(c)).count();
                if n == 0 || rest.get(n + 1) != Some(&b'}') {
                    return false;
                }
                n + 2
            } else {
                let n = rest.iter().take_while(|&&c| word(c)).count();
                if n == 0 {
                    return false;
                }
                n
            };
            i += 1 + len;
        } else if b.is_ascii_alphabetic() || b == b'_' || (!first && b.is_ascii_digit()) {
            i += 1;
        } else {
            return false;
        }
        first = false;
    }
    !bytes.is_empty()
}

/// Go's `strings.ToLower`: each character by its simple mapping.
fn go_to_lower(s: &str) -> String {
    if s.is_ascii() {
        return s.to_ascii_lowercase();
    }
    s.chars().map(simple_lower).collect()
}

/// Go's `strings.ToUpper`: each character by its simple mapping.
fn go_to_upper(s: &str) -> String {
    if s.is_ascii() {
        return s.to_ascii_uppercase();
    }
    s.chars().map(simple_upper).collect()
}

/// The one-character lower case of `c` (Unicode's simple mapping, which
/// Go uses): Rust's full mapping where it is one character.
fn simple_lower(c: char) -> char {
    if c == '\u{130}' {
        // İ: full mapping "i̇", simple "i".
        return 'i';
    }
    one_char(c.to_lowercase()).unwrap_or(c)
}

/// The one-character upper case of `c`: Rust's full mapping where it is
/// one character; the Greek letters with ypogegrammeni map to their title
/// case forms; other characters whose upper case is several (`ß`, `ŉ`, the
/// ligatures) have no simple mapping and stay.
fn simple_upper(c: char) -> char {
    let code = u32::from(c);
    let titled = match code {
        0x1F80..=0x1F87 | 0x1F90..=0x1F97 | 0x1FA0..=0x1FA7 => Some(code + 8),
        0x1FB3 => Some(0x1FBC),
        0x1FC3 => Some(0x1FCC),
        0x1FF3 => Some(0x1FFC),
        _ => None,
    };
    if let Some(t) = titled.and_then(char::from_u32) {
        return t;
    }
    one_char(c.to_uppercase()).unwrap_or(c)
}

fn one_char(mut chars: impl Iterator<Item = char>) -> Option<char> {
    let first = chars.next()?;
    chars.next().is_none().then_some(first)
}

#[cfg(test)]
mod tests;
