//! Rule files: read and validated as Prometheus' `rulefmt.ParseFile`
//! reads them, with its error texts and in its order.
//!
//! Prometheus decodes a rule file twice: once strictly into its rule
//! types (unknown fields refused), once leniently into a twin whose
//! `record`, `alert` and `expr` are YAML nodes, for the positions its
//! messages name (`5:17: group "g", rule 2, "x": ...`). Errors of either
//! pass are reported, so a type error or a bad duration comes twice, as
//! Prometheus reports it; the rules are validated only when both passes
//! decoded cleanly. [`parse`] does the same over one [`yaml::Node`] tree.
//!
//! Validation (`validate`): group names present and unique, label names
//! valid (and not `__name__`), each rule one of `record` or `alert` with
//! an `expr` that parses (Ferrite's PromQL parser, with the experimental
//! functions and aggregations refused as Prometheus refuses them without
//! `--enable-feature=promql-experimental-functions`), no alerting fields
//! on a recording rule, a recording rule's name without braces, annotation
//! names valid, and an alerting rule's label and annotation templates
//! parsing (see [`crate::template`]).
//!
//! Prometheus walks label and annotation maps in Go's random map order;
//! here they come sorted by name, one of the orders Prometheus may give.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use ferrite_model::goquote::quote as go_quote;
use ferrite_model::ValidationScheme;
use ferrite_promql::parser::{AggregateOp, Expr, ParseError};

use crate::yaml::{self, Decoded, Decoder, Fatal, Node};
use ferrite_template as template;

/// A rule file's groups (`rulefmt.RuleGroups`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RuleGroups {
    /// The groups, in file order.
    pub groups: Vec<RuleGroup>,
}

/// A group of rules evaluated together, in order (`rulefmt.RuleGroup`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RuleGroup {
    /// `name`: unique in its file.
    pub name: String,
    /// `interval` in milliseconds; 0 when absent (the global
    /// `evaluation_interval` applies).
    pub interval_ms: i64,
    /// `query_offset` in milliseconds; `None` when absent (the global
    /// `rule_query_offset` applies).
    pub query_offset_ms: Option<i64>,
    /// `limit`: the most series a rule may produce (0: no limit).
    pub limit: i64,
    /// `rules`.
    pub rules: Vec<Rule>,
    /// `labels`: added to every rule's (a rule's own win).
    pub labels: BTreeMap<String, String>,
}

/// A recording or alerting rule (`rulefmt.Rule`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Rule {
    /// `record`: the recorded series' name ("" for an alerting rule).
    pub record: String,
    /// `alert`: the alert's name ("" for a recording rule).
    pub alert: String,
    /// `expr`: the PromQL expression, as written.
    pub expr: String,
    /// `for` in milliseconds.
    pub for_ms: i64,
    /// `keep_firing_for` in milliseconds.
    pub keep_firing_for_ms: i64,
    /// `labels`.
    pub labels: BTreeMap<String, String>,
    /// `annotations`.
    pub annotations: BTreeMap<String, String>,
}

impl Rule {
    /// The alert's name, or the recorded series' name.
    pub fn name(&self) -> &str {
        if self.alert.is_empty() {
            &self.record
        } else {
            &self.alert
        }
    }
}

/// A node's position as Prometheus prints it (`0:0` for a field absent).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Pos {
    line: usize,
    column: usize,
}

impl std::fmt::Display for Pos {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

/// The positions of a rule's `record`, `alert` and `expr` values
/// (`rulefmt.RuleNode`).
#[derive(Debug, Clone, Copy, Default)]
struct RulePositions {
    record: Pos,
    alert: Pos,
    expr: Pos,
}

/// How a rule file is read.
#[derive(Debug, Clone, Copy)]
pub struct ParseOptions {
    /// How label and metric names are validated (Prometheus' server and
    /// promtool use UTF-8, the default).
    pub scheme: ValidationScheme,
    /// Accept keys the rule format does not know (promtool's
    /// `--ignore-unknown-fields`; the server refuses them).
    pub ignore_unknown_fields: bool,
}

impl Default for ParseOptions {
    fn default() -> Self {
        ParseOptions {
            scheme: ValidationScheme::Utf8,
            ignore_unknown_fields: false,
        }
    }
}

/// Reads and validates a rule file's text as the server does. The errors
/// are Prometheus', without the file name [`parse_file`] puts before them.
pub fn parse(source: &str) -> Result<RuleGroups, Vec<String>> {
    parse_with(source, ParseOptions::default())
}

/// [`parse`] with options.
pub fn parse_with(source: &str, opts: ParseOptions) -> Result<RuleGroups, Vec<String>> {
    let scheme = opts.scheme;
    let doc = match yaml::parse_document(source) {
        Ok(doc) => doc,
        // Both passes stop at the same syntax error.
        Err(e) => return Err(vec![e.clone(), e]),
    };
    if doc.more_documents {
        tracing::warn!(
            "Multiple document yaml rules files are not supported, only the first document is processed"
        );
    }
    let mut errs = Vec::new();
    let groups = match &doc.root {
        None => Some(RuleGroups::default()),
        Some(root) => {
            let mut d = Decoder::new(!opts.ignore_unknown_fields);
            match decode_groups(&mut d, root) {
                Err(Fatal(e)) => {
                    errs.push(e);
                    None
                }
                Ok(_) if !d.terrors.is_empty() => {
                    errs.push(yaml::type_errors_message(&d.terrors));
                    None
                }
                Ok(g) => Some(g),
            }
        }
    };
    let positions = match &doc.root {
        None => Some(Vec::new()),
        Some(root) => {
            let mut d = Decoder::new(false);
            match decode_positions(&mut d, root) {
                Err(Fatal(e)) => {
                    errs.push(e);
                    None
                }
                Ok(_) if !d.terrors.is_empty() => {
                    errs.push(yaml::type_errors_message(&d.terrors));
                    None
                }
                Ok(p) => Some(p),
            }
        }
    };
    match (groups, positions) {
        (Some(groups), Some(positions)) if errs.is_empty() => {
            let errs = validate(&groups, &positions, scheme);
            if errs.is_empty() {
                Ok(groups)
            } else {
                Err(errs)
            }
        }
        _ => Err(errs),
    }
}

/// Reads and validates a rule file as the server does; each error starts
/// with the file name, as `rulefmt.ParseFile` words them.
pub fn parse_file(path: &Path) -> Result<RuleGroups, Vec<String>> {
    parse_file_with(path, ParseOptions::default())
}

/// [`parse_file`] with options.
pub fn parse_file_with(path: &Path, opts: ParseOptions) -> Result<RuleGroups, Vec<String>> {
    let name = path.display().to_string();
    let source = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) => return Err(vec![format!("{name}: {}", go_io_error(&name, &e))]),
    };
    let text = match String::from_utf8(source) {
        Ok(t) => t,
        Err(_) => {
            let e = "yaml: invalid leading UTF-8 octet".to_string();
            return Err(vec![format!("{name}: {e}"), format!("{name}: {e}")]);
        }
    };
    parse_with(&text, opts)
        .map_err(|errs| errs.into_iter().map(|e| format!("{name}: {e}")).collect())
}

/// Go's text for a failed `os.ReadFile`: `open <file>: <reason>` with the
/// reason as Go's syscall errors word it.
pub fn go_io_error(name: &str, e: &std::io::Error) -> String {
    ferrite_config::go_open_error(name, e)
}

/// The strict pass: `rulefmt.RuleGroups`.
fn decode_groups(d: &mut Decoder, root: &Node) -> Result<RuleGroups, Fatal> {
    let mut out = RuleGroups::default();
    d.decode_struct(root, "rulefmt.RuleGroups", &mut |d, key, v| {
        if key != "groups" {
            return Ok(false);
        }
        if let Some(groups) = d.decode_seq(v, "[]rulefmt.RuleGroup", &mut decode_group)? {
            out.groups = groups;
        }
        Ok(true)
    })?;
    Ok(out)
}

fn decode_group(d: &mut Decoder, n: &std::rc::Rc<Node>) -> Decoded<RuleGroup> {
    let mut g = RuleGroup::default();
    let decoded = d.decode_struct(n, "rulefmt.RuleGroup", &mut |d, key, v| {
        match key {
            "name" => set(&mut g.name, d.decode_string(v)?),
            "interval" => set(&mut g.interval_ms, d.decode_duration(v)?),
            "query_offset" => {
                // A pointer: null leaves it nil.
                if v.is_null() {
                    g.query_offset_ms = None;
                } else if let Some(ms) = d.decode_duration(v)? {
                    g.query_offset_ms = Some(ms);
                }
            }
            "limit" => set(&mut g.limit, d.decode_int(v)?),
            "rules" => {
                if let Some(rules) = d.decode_seq(v, "[]rulefmt.Rule", &mut decode_rule)? {
                    g.rules = rules;
                } else if v.is_null() {
                    g.rules = Vec::new();
                }
            }
            "labels" => set(&mut g.labels, d.decode_string_map(v)?),
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    Ok(decoded.then_some(g))
}

fn decode_rule(d: &mut Decoder, n: &std::rc::Rc<Node>) -> Decoded<Rule> {
    let mut r = Rule::default();
    let decoded = d.decode_struct(n, "rulefmt.Rule", &mut |d, key, v| {
        match key {
            "record" => set(&mut r.record, d.decode_string(v)?),
            "alert" => set(&mut r.alert, d.decode_string(v)?),
            "expr" => set(&mut r.expr, d.decode_string(v)?),
            "for" => set(&mut r.for_ms, d.decode_duration(v)?),
            "keep_firing_for" => set(&mut r.keep_firing_for_ms, d.decode_duration(v)?),
            "labels" => set(&mut r.labels, d.decode_string_map(v)?),
            "annotations" => set(&mut r.annotations, d.decode_string_map(v)?),
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    Ok(decoded.then_some(r))
}

/// Sets a field when decoding gave a value (a null or a type error leaves
/// it as it was).
fn set<T>(field: &mut T, value: Option<T>) {
    if let Some(v) = value {
        *field = v;
    }
}

/// The lenient pass: `rulefmt.ruleGroups`, keeping the positions of each
/// rule's `record`, `alert` and `expr` (the group's own node is never
/// filled by yaml.v3, so groups are always at `0:0`).
fn decode_positions(d: &mut Decoder, root: &Node) -> Result<Vec<Vec<RulePositions>>, Fatal> {
    let mut out = Vec::new();
    d.decode_struct(root, "rulefmt.ruleGroups", &mut |d, key, v| {
        if key != "groups" {
            return Ok(false);
        }
        if let Some(groups) = d.decode_seq(v, "[]rulefmt.RuleGroupNode", &mut decode_group_node)? {
            out = groups;
        }
        Ok(true)
    })?;
    Ok(out)
}

fn decode_group_node(d: &mut Decoder, n: &std::rc::Rc<Node>) -> Decoded<Vec<RulePositions>> {
    let mut rules = Vec::new();
    let decoded = d.decode_struct(n, "rulefmt.RuleGroupNode", &mut |d, key, v| {
        match key {
            "name" => drop(d.decode_string(v)?),
            "interval" => drop(d.decode_duration(v)?),
            "query_offset" => drop(d.decode_duration(v)?),
            "limit" => drop(d.decode_int(v)?),
            "rules" => {
                if let Some(r) = d.decode_seq(v, "[]rulefmt.RuleNode", &mut decode_rule_node)? {
                    rules = r;
                }
            }
            "labels" => drop(d.decode_string_map(v)?),
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    Ok(decoded.then_some(rules))
}

fn decode_rule_node(d: &mut Decoder, n: &std::rc::Rc<Node>) -> Decoded<RulePositions> {
    let mut p = RulePositions::default();
    let pos = |n: &Node| Pos {
        line: n.line,
        column: n.column,
    };
    let decoded = d.decode_struct(n, "rulefmt.RuleNode", &mut |d, key, v| {
        match key {
            // `yaml.Node` fields: any node, kept as it is (an alias too).
            "record" => p.record = pos(v),
            "alert" => p.alert = pos(v),
            "expr" => p.expr = pos(v),
            "for" | "keep_firing_for" => drop(d.decode_duration(v)?),
            "labels" | "annotations" => drop(d.decode_string_map(v)?),
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    Ok(decoded.then_some(p))
}

/// `RuleGroups.Validate`: every error of every group, in Prometheus'
/// order.
fn validate(
    groups: &RuleGroups,
    positions: &[Vec<RulePositions>],
    scheme: ValidationScheme,
) -> Vec<String> {
    let mut errs = Vec::new();
    let mut seen = HashSet::new();
    for (j, g) in groups.groups.iter().enumerate() {
        if g.name.is_empty() {
            errs.push("0:0: Groupname must not be empty".to_string());
        }
        if seen.contains(&g.name) {
            errs.push(format!(
                "0:0: groupname: \"{}\" is repeated in the same file",
                g.name
            ));
        }
        for k in g.labels.keys() {
            if !scheme.is_valid_label_name(k.as_bytes()) || k == "__name__" {
                errs.push(format!("invalid label name: {k}"));
            }
        }
        seen.insert(g.name.clone());
        let rule_positions = positions.get(j).map(Vec::as_slice).unwrap_or_default();
        for (i, r) in g.rules.iter().enumerate() {
            let p = rule_positions.get(i).copied().unwrap_or_default();
            for e in validate_rule(r, &p, scheme) {
                errs.push(e.render(&g.name, i + 1, r.name()));
            }
        }
    }
    errs
}

/// One of a rule's errors (`rulefmt.WrappedError`): the message and the
/// positions it names.
struct RuleError {
    at: Option<Pos>,
    also: Option<Pos>,
    message: String,
}

impl RuleError {
    fn new(at: Option<Pos>, also: Option<Pos>, message: impl Into<String>) -> Self {
        RuleError {
            at,
            also,
            message: message.into(),
        }
    }

    /// `rulefmt.Error.Error()`.
    fn render(&self, group: &str, rule: usize, name: &str) -> String {
        let prefix = match (self.at, self.also) {
            (Some(a), Some(b)) => format!("{a}: {b}: "),
            (Some(a), None) => format!("{a}: "),
            _ => String::new(),
        };
        format!(
            "{prefix}group {}, rule {rule}, {}: {}",
            go_quote(group),
            go_quote(name),
            self.message
        )
    }
}

/// `Rule.Validate`.
fn validate_rule(r: &Rule, p: &RulePositions, scheme: ValidationScheme) -> Vec<RuleError> {
    let mut errs = Vec::new();
    let (record, alert, expr) = (Some(p.record), Some(p.alert), Some(p.expr));
    if !r.record.is_empty() && !r.alert.is_empty() {
        errs.push(RuleError::new(
            record,
            alert,
            "only one of 'record' and 'alert' must be set",
        ));
    }
    if r.record.is_empty() && r.alert.is_empty() {
        errs.push(RuleError::new(
            record,
            alert,
            "one of 'record' or 'alert' must be set",
        ));
    }
    if r.expr.is_empty() {
        errs.push(RuleError::new(
            expr,
            None,
            "field 'expr' must be set in rule",
        ));
    } else if let Err(e) = parse_expr(&r.expr) {
        errs.push(RuleError::new(
            expr,
            None,
            format!("could not parse expression: {e}"),
        ));
    }
    if !r.record.is_empty() {
        if !r.annotations.is_empty() {
            errs.push(RuleError::new(
                record,
                None,
                "invalid field 'annotations' in recording rule",
            ));
        }
        if r.for_ms != 0 {
            errs.push(RuleError::new(
                record,
                None,
                "invalid field 'for' in recording rule",
            ));
        }
        if r.keep_firing_for_ms != 0 {
            errs.push(RuleError::new(
                record,
                None,
                "invalid field 'keep_firing_for' in recording rule",
            ));
        }
        if !scheme.is_valid_metric_name(r.record.as_bytes()) {
            errs.push(RuleError::new(
                record,
                None,
                format!("invalid recording rule name: {}", r.record),
            ));
        }
        if r.record.contains(['{', '}']) {
            errs.push(RuleError::new(
                record,
                None,
                format!(
                    "braces present in the recording rule name; should it be in expr?: {}",
                    r.record
                ),
            ));
        }
    }
    for k in r.labels.keys() {
        if !scheme.is_valid_label_name(k.as_bytes()) || k == "__name__" {
            errs.push(RuleError::new(
                None,
                None,
                format!("invalid label name: {k}"),
            ));
        }
    }
    for k in r.annotations.keys() {
        if !scheme.is_valid_label_name(k.as_bytes()) {
            errs.push(RuleError::new(
                None,
                None,
                format!("invalid annotation name: {k}"),
            ));
        }
    }
    if !r.alert.is_empty() {
        let name = format!("__alert_{}", r.alert);
        for (k, v) in &r.labels {
            if let Err(e) = template::check(&name, v) {
                errs.push(RuleError::new(
                    None,
                    None,
                    format!("label {}: {e}", go_quote(k)),
                ));
            }
        }
        for (k, v) in &r.annotations {
            if let Err(e) = template::check(&name, v) {
                errs.push(RuleError::new(
                    None,
                    None,
                    format!("annotation {}: {e}", go_quote(k)),
                ));
            }
        }
    }
    errs
}

/// Parses a rule's expression as Prometheus' parser does with its default
/// options: Ferrite's parser, then the experimental functions and
/// aggregations refused (the first to be reduced, as Prometheus' parser
/// reports the first error it met).
pub fn parse_expr(expr: &str) -> Result<std::sync::Arc<ferrite_promql::ParsedExpr>, String> {
    let parsed = ferrite_promql::parse(expr).map_err(|e| e.to_string())?;
    if let Some(e) = experimental_use(expr, &parsed) {
        return Err(e.to_string());
    }
    Ok(parsed)
}

/// The first experimental function call or aggregation in reduction order
/// (children before parents, left to right), as Prometheus' error.
fn experimental_use(query: &str, root: &Expr) -> Option<ParseError> {
    // Post-order without recursion: (node, children visited).
    let mut stack: Vec<(&Expr, bool)> = vec![(root, false)];
    while let Some((e, visited)) = stack.pop() {
        if !visited {
            stack.push((e, true));
            let children = ferrite_promql::parsed::children(e);
            // Pushed in reverse, so the first child is visited first.
            let mut kids: Vec<&Expr> = children.collect();
            kids.reverse();
            stack.extend(kids.into_iter().map(|c| (c, false)));
            continue;
        }
        match e {
            Expr::Call(c) if c.func.experimental => {
                return Some(ParseError::new(
                    query,
                    c.pos,
                    format!("function {} is not enabled", go_quote(c.func.name)),
                ))
            }
            Expr::Aggregate(a) if matches!(a.op, AggregateOp::Limitk | AggregateOp::LimitRatio) => {
                return Some(ParseError::new(
                    query,
                    a.pos,
                    format!(
                        "{}() is experimental and must be enabled with --enable-feature=promql-experimental-functions",
                        a.op
                    ),
                ))
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errors(text: &str) -> Vec<String> {
        parse(text).expect_err(text)
    }

    #[test]
    fn reads_groups_and_rules() {
        let g = parse(
            "groups:\n  - name: g\n    interval: 30s\n    query_offset: 0s\n    limit: 10\n    labels: {team: a}\n    rules:\n      - record: job:up:sum\n        expr: sum by (job) (up)\n        labels: {x: ''}\n      - alert: Down\n        expr: up == 0\n        for: 5m\n        keep_firing_for: 1m\n        annotations: {summary: '{{ $labels.job }} is down'}\n",
        )
        .expect("valid");
        assert_eq!(g.groups.len(), 1);
        let grp = &g.groups[0];
        assert_eq!(
            (
                grp.name.as_str(),
                grp.interval_ms,
                grp.query_offset_ms,
                grp.limit
            ),
            ("g", 30_000, Some(0), 10)
        );
        assert_eq!(grp.labels.get("team").map(String::as_str), Some("a"));
        assert_eq!(grp.rules[0].record, "job:up:sum");
        assert_eq!(grp.rules[0].labels.get("x").map(String::as_str), Some(""));
        assert_eq!(grp.rules[1].name(), "Down");
        assert_eq!(
            (grp.rules[1].for_ms, grp.rules[1].keep_firing_for_ms),
            (300_000, 60_000)
        );
        // Nothing at all is no groups.
        for empty in ["", "# c\n", "---\n", "groups:\n", "groups: []\n"] {
            assert_eq!(parse(empty), Ok(RuleGroups::default()), "{empty:?}");
        }
    }

    #[test]
    fn errors_name_positions_as_prometheus_does() {
        assert_eq!(
            errors("groups:\n  - name: g\n    rules:\n      - expr: up\n      - record: a\n        alert: b\n        expr: ''\n"),
            [
                "0:0: 0:0: group \"g\", rule 1, \"\": one of 'record' or 'alert' must be set",
                "5:17: 6:16: group \"g\", rule 2, \"b\": only one of 'record' and 'alert' must be set",
                "7:15: group \"g\", rule 2, \"b\": field 'expr' must be set in rule",
            ]
        );
        assert_eq!(
            errors("groups:\n- name: g\n  rules:\n  - record: a\n    expr: |\n      sum(\n        up\n"),
            ["5:11: group \"g\", rule 1, \"a\": could not parse expression: 3:1: parse error: unclosed left parenthesis"]
        );
        assert_eq!(
            errors("groups:\n  - name: g\n    rules:\n      - record: 'a{b}'\n        expr: sort_by_label(up, \"a\")\n        for: 5m\n"),
            [
                "5:15: group \"g\", rule 1, \"a{b}\": could not parse expression: 1:1: parse error: function \"sort_by_label\" is not enabled",
                "4:17: group \"g\", rule 1, \"a{b}\": invalid field 'for' in recording rule",
                "4:17: group \"g\", rule 1, \"a{b}\": braces present in the recording rule name; should it be in expr?: a{b}",
            ]
        );
        assert_eq!(
            errors("groups:\n  - name: g\n    rules: []\n  - name: g\n    labels: {__name__: x}\n    rules: []\n"),
            [
                "0:0: groupname: \"g\" is repeated in the same file",
                "invalid label name: __name__",
            ]
        );
    }

    #[test]
    fn decoding_errors_come_from_both_passes() {
        // A type error and an unknown field in the strict pass, the type
        // error again in the lenient one.
        assert_eq!(
            errors("groups:\n  - name: g\n    limit: abc\n    foo: 1\n    rules: []\n"),
            [
                "yaml: unmarshal errors:\n  line 3: cannot unmarshal !!str `abc` into int\n  line 4: field foo not found in type rulefmt.RuleGroup",
                "yaml: unmarshal errors:\n  line 3: cannot unmarshal !!str `abc` into int",
            ]
        );
        // A bad duration stops both at once.
        assert_eq!(
            errors("groups:\n  - name: g\n    interval: 5\n    rules: []\n"),
            [
                "not a valid duration string: \"5\"",
                "not a valid duration string: \"5\""
            ]
        );
        assert_eq!(
            errors("foo\n"),
            [
                "yaml: unmarshal errors:\n  line 1: cannot unmarshal !!str `foo` into rulefmt.RuleGroups",
                "yaml: unmarshal errors:\n  line 1: cannot unmarshal !!str `foo` into rulefmt.ruleGroups",
            ]
        );
        assert_eq!(
            errors("groups:\n  - name: g\n    name: h\n"),
            ["yaml: unmarshal errors:\n  line 3: mapping key \"name\" already defined at line 2";
                2]
        );
        // Unknown fields pass with promtool's --ignore-unknown-fields.
        let opts = ParseOptions {
            ignore_unknown_fields: true,
            ..ParseOptions::default()
        };
        assert!(parse_with("groups:\n  - name: g\n    x: 1\n    rules: []\n", opts).is_ok());
    }

    #[test]
    fn yaml_v3_scalars_aliases_and_merges() {
        let g = parse(
            "groups:\n  - name: 1\n    limit: 0x10\n    labels: &l {a: b}\n    rules:\n      - &r {record: true, expr: up}\n      - *r\n      - <<: *r\n        labels:\n          <<: *l\n          c: ~\n  - null\n  - name: h\n    limit: 1.7\n    rules: [null]\n",
        )
        .expect("valid");
        assert_eq!(g.groups.len(), 2);
        assert_eq!((g.groups[0].name.as_str(), g.groups[0].limit), ("1", 16));
        assert_eq!(g.groups[0].rules.len(), 3);
        assert!(g.groups[0].rules.iter().all(|r| r.record == "true"));
        let labels: Vec<(&str, &str)> = g.groups[0].rules[2]
            .labels
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(labels, [("a", "b"), ("c", "")]);
        assert_eq!((g.groups[1].limit, g.groups[1].rules.len()), (1, 0));
    }
}
