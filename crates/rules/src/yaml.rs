//! YAML as Prometheus reads rule files: go.yaml.in/yaml/v3, unlike the
//! configuration file's yaml.v2.
//!
//! Two things set rule files apart. Their errors name positions (`5:17:`)
//! of the nodes they complain about, so decoding needs every node's line
//! and column; and yaml.v3 decodes in its own way (YAML 1.2 scalars, all
//! type errors of a document gathered into one message, duplicate keys
//! refused, `<<` merges). So the document is first read into a tree of
//! [`Node`]s, as yaml.v3's parser builds its `yaml.Node`s, from the events
//! of serde-saphyr's YAML parser (`granit_parser`, which serde-saphyr
//! re-exports and drives for the configuration file); [`Decoder`] then
//! walks it with yaml.v3's rules for the few Go types a rule file decodes
//! into (structs, `[]T`, `map[string]string`, `string`, `int`, and
//! `model.Duration` through its `UnmarshalYAML`).
//!
//! Syntax errors keep yaml.v3's form (`yaml: line N: <reason>`), but the
//! reason and sometimes the line are the parser's own: libyaml's wording
//! is not reproduced.

use std::collections::HashMap;
use std::rc::Rc;

use ferrite_model::goquote::quote as go_quote;
use serde_saphyr::granit_parser::{
    Event, Options, Parser, ScalarStyle, ScanError, Span, StructureStyle, Tag,
};

/// A node's kind, as yaml.v3 has them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A scalar.
    Scalar,
    /// A sequence.
    Sequence,
    /// A mapping: `content` holds keys and values, alternating.
    Mapping,
    /// An alias (`*a`): `alias` is the node it names.
    Alias,
}

/// A YAML node, as yaml.v3's parser builds its `yaml.Node`.
#[derive(Debug)]
pub struct Node {
    /// What the node is.
    pub kind: Kind,
    /// Its short tag (`!!str`, `!!int`, `!!map`, ...): the explicit one, or
    /// the one yaml.v3 resolves (quoted and block scalars are `!!str`).
    pub tag: String,
    /// A scalar's text (after escapes), or an alias' anchor name.
    pub value: String,
    /// Whether the scalar is quoted or a block scalar without an explicit
    /// tag, or has an explicit `!!str` tag (yaml.v3's `indicatedString`).
    pub indicated_string: bool,
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
    /// Items of a sequence; keys and values of a mapping.
    pub content: Vec<Rc<Node>>,
    /// The node an alias names.
    pub alias: Option<Rc<Node>>,
}

impl Node {
    /// The node an alias stands for (itself otherwise).
    pub fn resolved(&self) -> &Node {
        let mut n = self;
        while let Some(a) = &n.alias {
            n = a;
        }
        n
    }

    /// Whether the node is a null (`~`, `null`, empty).
    pub fn is_null(&self) -> bool {
        self.resolved().tag == NULL_TAG
    }
}

const NULL_TAG: &str = "!!null";
const STR_TAG: &str = "!!str";
const MAP_TAG: &str = "!!map";
const SEQ_TAG: &str = "!!seq";
const MERGE_TAG: &str = "!!merge";

/// A document read as yaml.v3 reads the first one of a stream.
pub struct Document {
    /// Its root node; `None` for a stream with no document (empty, or only
    /// comments), which yaml.v3's decoder reports as `io.EOF`.
    pub root: Option<Rc<Node>>,
    /// Whether another document follows (Prometheus warns and ignores it).
    pub more_documents: bool,
}

/// Reads the first document of `source`. The error is yaml.v3's form of a
/// syntax error: `yaml: line N: <reason>`.
pub fn parse_document(source: &str) -> Result<Document, String> {
    let mut opts = Options::default();
    opts.emit_comments = false;
    let mut builder = Builder {
        source,
        parser: Parser::new_from_str_with_options(source, opts),
        anchors: HashMap::new(),
        last_end: 0,
        flow_depth: 0,
    };
    builder.document()
}

/// Builds [`Node`]s from the parser's events.
struct Builder<'s> {
    source: &'s str,
    parser: Parser<'s, serde_saphyr::granit_parser::StrInput<'s>>,
    /// Anchored nodes by the parser's anchor id.
    anchors: HashMap<usize, Rc<Node>>,
    /// Byte offset where the previous event ended (block scalars are found
    /// from there).
    last_end: usize,
    /// How many flow collections (`[...]`, `{...}`) are open.
    flow_depth: usize,
}

fn syntax_error(e: &ScanError) -> String {
    format!("yaml: line {}: {}", e.marker().line(), e.kind())
}

impl<'s> Builder<'s> {
    fn next(&mut self) -> Result<Option<(Event<'s>, Span)>, String> {
        loop {
            match self.parser.next_event() {
                None => return Ok(None),
                Some(Err(e)) => return Err(syntax_error(&e)),
                Some(Ok((Event::Comment(..), _))) => continue,
                Some(Ok((ev, span))) => return Ok(Some((ev, span))),
            }
        }
    }

    fn document(&mut self) -> Result<Document, String> {
        // Stream start, then a document or the stream's end.
        loop {
            match self.next()? {
                None | Some((Event::StreamEnd, _)) => {
                    return Ok(Document {
                        root: None,
                        more_documents: false,
                    })
                }
                Some((Event::DocumentStart(..), span)) => {
                    self.last_end = span.end.byte_offset().unwrap_or(0);
                    break;
                }
                Some(_) => continue,
            }
        }
        let root = match self.next()? {
            Some((ev, span)) => self.node(ev, span)?,
            None => return Err("yaml: unexpected end of stream".into()),
        };
        // The document's end; then whether another one starts. An error
        // in a later document is Prometheus' warning only; one before
        // another document starts belongs to this one.
        let mut started = false;
        let more_documents = loop {
            match self.parser.next_event() {
                Some(Ok((Event::DocumentEnd, _))) | Some(Ok((Event::Comment(..), _))) => continue,
                Some(Ok((Event::StreamEnd, _))) | None => break started,
                Some(Ok((Event::DocumentStart(..), _))) => started = true,
                Some(Ok(_)) => break true,
                Some(Err(e)) if !started => return Err(syntax_error(&e)),
                Some(Err(_)) => break true,
            }
        };
        Ok(Document {
            root: Some(root),
            more_documents,
        })
    }

    /// The node an event starts, with everything it holds.
    fn node(&mut self, ev: Event<'s>, span: Span) -> Result<Rc<Node>, String> {
        let line = span.start.line();
        let column = span.start.col() + 1;
        let start = span.start.byte_offset().unwrap_or(self.last_end);
        let end = span.end.byte_offset().unwrap_or(start);
        match ev {
            Event::Scalar(text, style, anchor, tag) => {
                let (line, column) = match style {
                    // yaml.v3 places a block scalar at its `|` or `>`.
                    ScalarStyle::Literal | ScalarStyle::Folded => {
                        self.block_indicator(start).unwrap_or((line, column))
                    }
                    // An empty value after `:`: libyaml places it after
                    // the colon (in a block mapping) or at the next token
                    // (in a flow mapping).
                    ScalarStyle::Plain if start == end && self.source[start..].starts_with(':') => {
                        self.after_colon(start).unwrap_or((line, column))
                    }
                    _ => (line, column),
                };
                // An empty plain scalar (`key:`) is null with no text.
                let value = if style == ScalarStyle::Plain && start == end {
                    String::new()
                } else {
                    text.into_owned()
                };
                let quoted = !matches!(style, ScalarStyle::Plain);
                let explicit = tag.as_deref().map(short_tag);
                let (tag, indicated_string) = match explicit {
                    Some(t) if t != "!" => {
                        let s = t == STR_TAG;
                        (t, s)
                    }
                    _ if quoted => (STR_TAG.to_string(), true),
                    _ if value == "<<" => (MERGE_TAG.to_string(), false),
                    _ => (resolve(&value).tag().to_string(), false),
                };
                self.last_end = end;
                let node = Rc::new(Node {
                    kind: Kind::Scalar,
                    tag,
                    value,
                    indicated_string,
                    line,
                    column,
                    content: Vec::new(),
                    alias: None,
                });
                if anchor != 0 {
                    self.anchors.insert(anchor, node.clone());
                }
                Ok(node)
            }
            Event::Alias(id) => {
                self.last_end = end;
                let name = span
                    .slice(self.source)
                    .map(|s| s.trim_start_matches('*').to_string())
                    .unwrap_or_default();
                let Some(target) = self.anchors.get(&id).cloned() else {
                    return Err(format!("yaml: unknown anchor '{name}' referenced"));
                };
                Ok(Rc::new(Node {
                    kind: Kind::Alias,
                    tag: target.tag.clone(),
                    value: name,
                    indicated_string: false,
                    line,
                    column,
                    content: Vec::new(),
                    alias: Some(target),
                }))
            }
            Event::SequenceStart(style, anchor, tag) => {
                self.last_end = end;
                let flow = style == StructureStyle::Flow;
                self.flow_depth += usize::from(flow);
                let node = self.collection(Kind::Sequence, SEQ_TAG, anchor, tag, line, column);
                self.flow_depth -= usize::from(flow);
                node
            }
            Event::MappingStart(style, anchor, tag) => {
                self.last_end = end;
                let flow = style == StructureStyle::Flow;
                self.flow_depth += usize::from(flow);
                let node = self.collection(Kind::Mapping, MAP_TAG, anchor, tag, line, column);
                self.flow_depth -= usize::from(flow);
                node
            }
            other => Err(format!("yaml: unexpected event {other:?}")),
        }
    }

    /// A sequence or mapping: its nodes up to its end event. The anchor
    /// is registered once the node is whole (an alias inside its own
    /// anchor is then unknown, where yaml.v3 reports the loop).
    fn collection(
        &mut self,
        kind: Kind,
        default_tag: &str,
        anchor: usize,
        tag: Option<std::borrow::Cow<'s, Tag>>,
        line: usize,
        column: usize,
    ) -> Result<Rc<Node>, String> {
        let tag = match tag.as_deref().map(short_tag) {
            Some(t) if t != "!" => t,
            _ => default_tag.to_string(),
        };
        let mut content = Vec::new();
        loop {
            match self.next()? {
                Some((Event::SequenceEnd | Event::MappingEnd, span)) => {
                    self.last_end = span.end.byte_offset().unwrap_or(self.last_end);
                    break;
                }
                Some((ev, span)) => content.push(self.node(ev, span)?),
                None => return Err("yaml: unexpected end of stream".into()),
            }
        }
        let node = Rc::new(Node {
            kind,
            tag,
            value: String::new(),
            indicated_string: false,
            line,
            column,
            content,
            alias: None,
        });
        if anchor != 0 {
            self.anchors.insert(anchor, node.clone());
        }
        Ok(node)
    }

    /// Where libyaml places an empty value whose `:` is at byte `colon`:
    /// just after it in block context, at the next token in a flow one.
    fn after_colon(&self, colon: usize) -> Option<(usize, usize)> {
        let mut at = colon + 1;
        if self.flow_depth > 0 {
            let rest = self.source.get(at..)?;
            let skip = rest.len() - rest.trim_start_matches([' ', '\t', '\r', '\n']).len();
            at += skip;
        }
        let before = &self.source[..at];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        Some((line, before[line_start..].chars().count() + 1))
    }

    /// The line and column of the `|` or `>` opening the block scalar
    /// whose content starts at byte `start`: the first one after the
    /// previous event.
    fn block_indicator(&self, start: usize) -> Option<(usize, usize)> {
        let from = self.last_end.min(start);
        let rel = self.source.get(from..start)?.find(['|', '>'])?;
        let at = from + rel;
        let before = &self.source[..at];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let column = before[line_start..].chars().count() + 1;
        Some((line, column))
    }
}

/// A tag as yaml.v3 shortens it: `!!str` for the core schema's, the tag
/// as written otherwise.
fn short_tag(tag: &Tag) -> String {
    match tag.core_suffix() {
        Some(suffix) => format!("!!{suffix}"),
        None => tag.original(),
    }
}

/// A plain scalar's value as yaml.v3 resolves it (YAML 1.2's core schema,
/// with its own additions: `0777` octals, `_` in numbers, timestamps).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Resolved {
    /// `~`, `null`, empty.
    Null,
    /// `true`, `False`, ...
    Bool(bool),
    /// An integer that fits 64 signed bits.
    Int(i64),
    /// An integer that fits only 64 unsigned bits.
    Uint(u64),
    /// A float (`1.5`, `1e3`, `.inf`, `.nan`).
    Float(f64),
    /// A date or date and time (`2001-12-14`).
    Timestamp,
    /// `<<`.
    Merge,
    /// Anything else.
    Str,
}

impl Resolved {
    /// The short tag yaml.v3 gives such a value.
    pub fn tag(&self) -> &'static str {
        match self {
            Resolved::Null => NULL_TAG,
            Resolved::Bool(_) => "!!bool",
            Resolved::Int(_) | Resolved::Uint(_) => "!!int",
            Resolved::Float(_) => "!!float",
            Resolved::Timestamp => "!!timestamp",
            Resolved::Merge => MERGE_TAG,
            Resolved::Str => STR_TAG,
        }
    }
}

/// Resolves a plain scalar as yaml.v3's `resolve("", value)` does.
pub fn resolve(value: &str) -> Resolved {
    match value {
        "" | "~" | "null" | "Null" | "NULL" => return Resolved::Null,
        "true" | "True" | "TRUE" => return Resolved::Bool(true),
        "false" | "False" | "FALSE" => return Resolved::Bool(false),
        ".nan" | ".NaN" | ".NAN" => return Resolved::Float(f64::NAN),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            return Resolved::Float(f64::INFINITY)
        }
        "-.inf" | "-.Inf" | "-.INF" => return Resolved::Float(f64::NEG_INFINITY),
        "<<" => return Resolved::Merge,
        _ => {}
    }
    match value.as_bytes()[0] {
        b'.' => match go_parse_float(value) {
            Some(f) => Resolved::Float(f),
            None => Resolved::Str,
        },
        b'0'..=b'9' | b'+' | b'-' => {
            if is_timestamp(value) {
                return Resolved::Timestamp;
            }
            let plain = value.replace('_', "");
            if let Some(i) = go_parse_int(&plain) {
                return Resolved::Int(i);
            }
            if let Some(u) = go_parse_uint(&plain) {
                return Resolved::Uint(u);
            }
            if yaml_style_float(&plain) {
                if let Some(f) = go_parse_float(&plain) {
                    return Resolved::Float(f);
                }
            }
            Resolved::Str
        }
        _ => Resolved::Str,
    }
}

/// Go's `strconv.ParseInt(s, 0, 64)`: an optional sign, then `0x`, `0o`,
/// `0b` or a leading `0` (octal) or decimal digits.
fn go_parse_int(s: &str) -> Option<i64> {
    let (neg, digits) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let magnitude = go_parse_uint(digits)?;
    if neg {
        if magnitude <= 1u64 << 63 {
            Some((magnitude as i64).wrapping_neg())
        } else {
            None
        }
    } else {
        i64::try_from(magnitude).ok()
    }
}

/// Go's `strconv.ParseUint(s, 0, 64)` (no sign).
fn go_parse_uint(s: &str) -> Option<u64> {
    let lower = s.to_ascii_lowercase();
    let (radix, digits) = if let Some(d) = lower.strip_prefix("0x") {
        (16, d)
    } else if let Some(d) = lower.strip_prefix("0o") {
        (8, d)
    } else if let Some(d) = lower.strip_prefix("0b") {
        (2, d)
    } else if lower.len() > 1 && lower.starts_with('0') {
        (8, &lower[1..])
    } else {
        (10, lower.as_str())
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    u64::from_str_radix(digits, radix).ok()
}

/// Go's `strconv.ParseFloat(s, 64)` for the texts that reach it here:
/// decimal floats; out-of-range values are errors, as in Go.
fn go_parse_float(s: &str) -> Option<f64> {
    let body = s.trim_start_matches(['+', '-']);
    // Rust also reads `inf` and `nan`, which never get here with a
    // leading digit or dot, and hexadecimal floats it does not read.
    if body.is_empty() || !body.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
        return None;
    }
    let f: f64 = s.parse().ok()?;
    f.is_finite().then_some(f)
}

/// yaml.v3's `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`.
fn yaml_style_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    if matches!(b.first(), Some(b'-' | b'+')) {
        i += 1;
    }
    let digits = |i: &mut usize| {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - start
    };
    if b.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    } else {
        if digits(&mut i) == 0 {
            return false;
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            digits(&mut i);
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'-' | b'+')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// Whether yaml.v3 reads a plain scalar as a timestamp: `YYYY-M-D`,
/// optionally followed by a time (`T`, `t` or a space, `H:M:S`, a
/// fraction, and after `T`/`t` a zone `Z` or `±hh:mm`).
fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 5 || !b[..4].iter().all(u8::is_ascii_digit) || b[4] != b'-' {
        return false;
    }
    let mut i = 5;
    let num = |i: &mut usize, max: usize| -> Option<u32> {
        let start = *i;
        while *i < b.len() && *i - start < max && b[*i].is_ascii_digit() {
            *i += 1;
        }
        (*i > start).then(|| s[start..*i].parse().ok()).flatten()
    };
    let year: u32 = s[..4].parse().unwrap_or(0);
    let Some(month) = num(&mut i, 2) else {
        return false;
    };
    if b.get(i) != Some(&b'-') {
        return false;
    }
    i += 1;
    let Some(day) = num(&mut i, 2) else {
        return false;
    };
    let leap = year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400));
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    if day == 0 || day > days {
        return false;
    }
    if i == b.len() {
        return true;
    }
    let zoned = match b[i] {
        b'T' | b't' => true,
        b' ' => false,
        _ => return false,
    };
    i += 1;
    let time_part = |i: &mut usize, max: u32| num(i, 2).is_some_and(|v| v <= max);
    if !time_part(&mut i, 23) || b.get(i) != Some(&b':') {
        return false;
    }
    i += 1;
    if !time_part(&mut i, 59) || b.get(i) != Some(&b':') {
        return false;
    }
    i += 1;
    if !time_part(&mut i, 59) {
        return false;
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == start {
            return false;
        }
    }
    if !zoned {
        return i == b.len();
    }
    match b.get(i) {
        Some(b'Z') => i + 1 == b.len(),
        Some(b'+' | b'-') => {
            let z = &b[i + 1..];
            z.len() == 5
                && z[0].is_ascii_digit()
                && z[1].is_ascii_digit()
                && z[2] == b':'
                && z[3].is_ascii_digit()
                && z[4].is_ascii_digit()
        }
        _ => false,
    }
}

/// 2^63, the float Go compares with `math.MaxInt64`.
const TWO_POW_63: f64 = 9_223_372_036_854_775_808.0;

/// How a struct's fields are decoded: called with each key and value;
/// `false` for a key the struct does not have.
pub type FieldDecoder<'a> = dyn FnMut(&mut Decoder, &str, &Rc<Node>) -> Result<bool, Fatal> + 'a;

/// Decoding stopped at an error that ends it at once (yaml.v3's `fail`):
/// a field's own `UnmarshalYAML` refusing its value, a bad merge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fatal(pub String);

/// What decoding one value gives: `Ok(None)` when nothing was set (a null,
/// or a type error, which is recorded in the decoder).
pub type Decoded<T> = Result<Option<T>, Fatal>;

/// yaml.v3's decoder for one decoding pass over a [`Node`] tree: type
/// errors gathered in document order, unknown fields refused when
/// `known_fields` is set (`Decoder.KnownFields(true)`), duplicate keys
/// refused, `<<` merges applied.
pub struct Decoder {
    /// The type errors so far, without the `yaml: unmarshal errors:`
    /// header (`line 3: cannot unmarshal ...`).
    pub terrors: Vec<String>,
    known_fields: bool,
    /// The keys a mapping being merged into already has (yaml.v3's
    /// `mergedFields`): those of a merged mapping are skipped.
    merged: Option<Vec<String>>,
}

/// yaml.v3's message for the type errors of a document.
pub fn type_errors_message(terrors: &[String]) -> String {
    format!("yaml: unmarshal errors:\n  {}", terrors.join("\n  "))
}

impl Decoder {
    /// A decoder; `known_fields` refuses keys a struct does not have.
    pub fn new(known_fields: bool) -> Self {
        Decoder {
            terrors: Vec::new(),
            known_fields,
            merged: None,
        }
    }

    /// Records yaml.v3's type error for `n` (resolved) into `go_type`.
    pub fn type_error(&mut self, n: &Node, go_type: &str) {
        let tag = n.tag.as_str();
        let value = if tag == SEQ_TAG || tag == MAP_TAG {
            String::new()
        } else if n.value.len() > 10 {
            let cut = String::from_utf8_lossy(&n.value.as_bytes()[..7]);
            format!(" `{cut}...`")
        } else {
            format!(" `{}`", n.value)
        };
        self.terrors.push(format!(
            "line {}: cannot unmarshal {tag}{value} into {go_type}",
            n.line
        ));
    }

    /// Refuses a mapping with two equal keys (same kind and text), as
    /// yaml.v3 does before decoding it: `false` when it has some.
    fn unique_keys(&mut self, n: &Node) -> bool {
        let before = self.terrors.len();
        let keys: Vec<&Rc<Node>> = n.content.iter().step_by(2).collect();
        for (i, a) in keys.iter().enumerate() {
            for b in &keys[i + 1..] {
                if a.kind == b.kind && a.value == b.value {
                    self.terrors.push(format!(
                        "line {}: mapping key {} already defined at line {}",
                        b.line,
                        go_quote(&b.value),
                        a.line
                    ));
                }
            }
        }
        self.terrors.len() == before
    }

    /// A mapping key as a Go string: `None` for a null key (skipped) or
    /// one that is not a scalar (a type error).
    fn key(&mut self, n: &Node) -> Option<String> {
        let n = n.resolved();
        match n.kind {
            _ if n.tag == NULL_TAG => None,
            Kind::Scalar => Some(n.value.clone()),
            _ => {
                self.type_error(n, "string");
                None
            }
        }
    }

    /// Decodes a Go struct: `field` is called with each key and value in
    /// order (a key the struct lacks gets `false` back from `field` and is
    /// refused in the known-fields pass). The result says whether the
    /// struct was decoded (an element of a slice is kept only then).
    pub fn decode_struct(
        &mut self,
        n: &Node,
        go_type: &str,
        field: &mut FieldDecoder<'_>,
    ) -> Result<bool, Fatal> {
        let n = n.resolved();
        match n.kind {
            _ if n.tag == NULL_TAG => Ok(false),
            Kind::Mapping => {
                if !self.unique_keys(n) {
                    return Ok(false);
                }
                let mut merged = self.merged.take();
                let mut merge_node = None;
                for pair in n.content.chunks(2) {
                    let [k, v] = pair else { continue };
                    if is_merge(k) {
                        merge_node = Some(v.clone());
                        continue;
                    }
                    let Some(name) = self.key(k) else { continue };
                    if let Some(done) = merged.as_mut() {
                        if done.contains(&name) {
                            continue;
                        }
                        done.push(name.clone());
                    }
                    if !field(self, &name, v)? && self.known_fields {
                        self.terrors.push(format!(
                            "line {}: field {name} not found in type {go_type}",
                            k.line
                        ));
                    }
                }
                self.merged = merged;
                if let Some(m) = merge_node {
                    self.merge(n, &m, &mut |d, node| {
                        d.decode_struct(node, go_type, field).map(drop)
                    })?;
                }
                Ok(true)
            }
            _ => {
                self.type_error(n, go_type);
                Ok(false)
            }
        }
    }

    /// yaml.v3's `merge`: the keys `parent` has win; then `m`'s mapping
    /// (or each mapping of a sequence, earlier ones winning) fills in.
    fn merge(
        &mut self,
        parent: &Node,
        m: &Node,
        decode: &mut dyn FnMut(&mut Decoder, &Node) -> Result<(), Fatal>,
    ) -> Result<(), Fatal> {
        let saved = self.merged.clone();
        let keys = match &saved {
            Some(k) => k.clone(),
            None => parent
                .content
                .iter()
                .step_by(2)
                .map(|k| k.resolved())
                .filter(|k| k.kind == Kind::Scalar && k.tag == STR_TAG)
                .map(|k| k.value.clone())
                .collect(),
        };
        let want_map =
            || Fatal("yaml: map merge requires map or sequence of maps as the value".into());
        let mut run = |d: &mut Decoder, node: &Node| {
            d.merged = Some(keys.clone());
            decode(d, node)
        };
        match m.kind {
            Kind::Mapping => run(self, m)?,
            Kind::Alias if m.resolved().kind == Kind::Mapping => run(self, m)?,
            Kind::Sequence => {
                for item in &m.content {
                    if item.resolved().kind != Kind::Mapping {
                        return Err(want_map());
                    }
                }
                let mut done = keys.clone();
                for item in &m.content {
                    self.merged = Some(done.clone());
                    decode(self, item)?;
                    // What this mapping set is taken for the next ones.
                    if let Some(k) = self.merged.take() {
                        done = k;
                    }
                }
            }
            _ => return Err(want_map()),
        }
        self.merged = saved;
        Ok(())
    }

    /// Decodes a Go slice (`[]T`): elements `elem` does not decode are
    /// left out, as yaml.v3 leaves them out.
    pub fn decode_seq<T>(
        &mut self,
        n: &Node,
        go_type: &str,
        elem: &mut dyn FnMut(&mut Decoder, &Rc<Node>) -> Decoded<T>,
    ) -> Decoded<Vec<T>> {
        let n = n.resolved();
        match n.kind {
            _ if n.tag == NULL_TAG => Ok(None),
            Kind::Sequence => {
                let mut out = Vec::new();
                for item in &n.content {
                    if let Some(v) = elem(self, item)? {
                        out.push(v);
                    }
                }
                Ok(Some(out))
            }
            _ => {
                self.type_error(n, go_type);
                Ok(None)
            }
        }
    }

    /// Decodes a Go `string`: a scalar's text as written.
    pub fn decode_string(&mut self, n: &Node) -> Decoded<String> {
        let n = n.resolved();
        match n.kind {
            _ if n.tag == NULL_TAG => Ok(None),
            Kind::Scalar => Ok(Some(n.value.clone())),
            _ => {
                self.type_error(n, "string");
                Ok(None)
            }
        }
    }

    /// Decodes a Go `int`: an integer, or a float cut to one (as yaml.v3
    /// does on amd64, where a float out of range becomes the smallest
    /// integer).
    pub fn decode_int(&mut self, n: &Node) -> Decoded<i64> {
        let n = n.resolved();
        if n.tag == NULL_TAG {
            return Ok(None);
        }
        if n.kind == Kind::Scalar && !n.indicated_string {
            match resolve(&n.value) {
                Resolved::Int(i) => return Ok(Some(i)),
                // Go's `resolved <= math.MaxInt64` (2^63 as a float).
                Resolved::Float(f) if f <= TWO_POW_63 => {
                    let i = if (-TWO_POW_63..TWO_POW_63).contains(&f) {
                        f as i64
                    } else {
                        i64::MIN
                    };
                    return Ok(Some(i));
                }
                _ => {}
            }
        }
        self.type_error(n, "int");
        Ok(None)
    }

    /// Decodes a `model.Duration`, whose `UnmarshalYAML` reads a string
    /// and parses it: a value that is not a duration stops decoding.
    pub fn decode_duration(&mut self, n: &Node) -> Decoded<i64> {
        let n = n.resolved();
        if n.tag == NULL_TAG {
            return Ok(None);
        }
        let Some(text) = self.decode_string(n)? else {
            return Ok(None);
        };
        ferrite_model::units::parse_duration_ms(&text)
            .map(Some)
            .map_err(|e| Fatal(e.to_string()))
    }

    /// Decodes a Go `map[string]string`: null keys are skipped, a null
    /// value is "" (unless merged over a value the map has).
    pub fn decode_string_map(
        &mut self,
        n: &Node,
    ) -> Decoded<std::collections::BTreeMap<String, String>> {
        let mut out = std::collections::BTreeMap::new();
        if self.string_map_into(n, &mut out)? {
            Ok(Some(out))
        } else {
            Ok(None)
        }
    }

    fn string_map_into(
        &mut self,
        n: &Node,
        out: &mut std::collections::BTreeMap<String, String>,
    ) -> Result<bool, Fatal> {
        let n = n.resolved();
        match n.kind {
            _ if n.tag == NULL_TAG => Ok(false),
            Kind::Mapping => {
                if !self.unique_keys(n) {
                    return Ok(false);
                }
                let mut merged = self.merged.take();
                let mut merge_node = None;
                for pair in n.content.chunks(2) {
                    let [k, v] = pair else { continue };
                    if is_merge(k) {
                        merge_node = Some(v.clone());
                        continue;
                    }
                    let Some(name) = self.key(k) else { continue };
                    if let Some(done) = merged.as_mut() {
                        if done.contains(&name) {
                            continue;
                        }
                        done.push(name.clone());
                    }
                    let is_null = v.is_null();
                    match self.decode_string(v)? {
                        Some(s) => {
                            out.insert(name, s);
                        }
                        None if is_null => {
                            out.entry(name).or_default();
                        }
                        None => {}
                    }
                }
                self.merged = merged;
                if let Some(m) = merge_node {
                    self.merge(n, &m, &mut |d, node| d.string_map_into(node, out).map(drop))?;
                }
                Ok(true)
            }
            _ => {
                self.type_error(n, "map[string]string");
                Ok(false)
            }
        }
    }
}

/// A `<<` key (plain, or tagged `!!merge`).
fn is_merge(n: &Node) -> bool {
    n.kind == Kind::Scalar && n.value == "<<" && n.tag == MERGE_TAG
}
