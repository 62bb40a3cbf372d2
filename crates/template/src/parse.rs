//! The parser: Go `text/template/parse`'s grammar and error texts, building
//! the tree ([`Node`], [`Pipe`], [`Command`], [`Arg`]) that both
//! [`crate::check`] and execution use.
//!
//! A template text parses into a set of named trees: the text's own (under
//! the template's name) and one per `define` or `block`. Each node keeps the
//! byte offset Go reports in execution errors, and prints (`Display`) as
//! Go's `Node.String()` does, the `<...>` context of those errors.

use std::fmt;

use ferrite_model::goquote::quote as go_quote;

use crate::lex::{lex, Kind, Token};
use crate::literal::{go_float, go_int, go_unquote, unquote_char};

/// Prometheus' template functions and `text/template`'s built-ins: the
/// names a template may call.
pub(crate) const FUNCTIONS: &[&str] = &[
    // Prometheus' (template/template.go).
    "query",
    "first",
    "label",
    "value",
    "strvalue",
    "args",
    "reReplaceAll",
    "safeHtml",
    "match",
    "title",
    "toUpper",
    "toLower",
    "graphLink",
    "tableLink",
    "sortByLabel",
    "stripPort",
    "stripDomain",
    "humanize",
    "humanize1024",
    "humanizeDuration",
    "humanizePercentage",
    "humanizeTimestamp",
    "toTime",
    "toDuration",
    "now",
    "pathPrefix",
    "externalURL",
    "parseDuration",
    "urlQueryEscape",
    // text/template's.
    "and",
    "call",
    "html",
    "index",
    "slice",
    "js",
    "len",
    "not",
    "or",
    "print",
    "printf",
    "println",
    "urlquery",
    "eq",
    "ge",
    "gt",
    "le",
    "lt",
    "ne",
];

/// A node of a template's item list.
#[derive(Debug, Clone)]
pub(crate) enum Node {
    /// Literal text.
    Text(String),
    /// `{{pipeline}}`: its value is printed (unless it declares).
    Action { pos: usize, pipe: Pipe },
    /// `if`, `range` or `with`.
    Branch(Box<Branch>),
    /// `{{template "name" pipeline}}` (also what `block` leaves behind).
    Template {
        pos: usize,
        name: String,
        pipe: Option<Pipe>,
    },
    /// `{{break}}`.
    Break { pos: usize },
    /// `{{continue}}`.
    Continue { pos: usize },
}

/// Which control structure a [`Branch`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BranchKind {
    If,
    Range,
    With,
}

/// `{{if|range|with pipe}} list {{else}} else_list {{end}}`.
#[derive(Debug, Clone)]
pub(crate) struct Branch {
    pub(crate) kind: BranchKind,
    pub(crate) pos: usize,
    pub(crate) pipe: Pipe,
    pub(crate) list: Vec<Node>,
    pub(crate) else_list: Option<Vec<Node>>,
}

/// A pipeline: optional declarations, then commands separated by `|`.
#[derive(Debug, Clone)]
pub(crate) struct Pipe {
    pub(crate) pos: usize,
    /// `$x = ...` rather than `$x := ...`.
    pub(crate) is_assign: bool,
    /// Declared (or assigned) variables, `$` included.
    pub(crate) decl: Vec<String>,
    pub(crate) cmds: Vec<Command>,
}

/// One command: a function, field or value and its arguments.
#[derive(Debug, Clone)]
pub(crate) struct Command {
    pub(crate) pos: usize,
    pub(crate) args: Vec<Arg>,
}

/// A number literal's value as Go's `NumberNode` holds it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Number {
    pub(crate) text: String,
    /// Fits an `int64`.
    pub(crate) int: Option<i64>,
    /// Fits a `uint64` (but maybe not an `int64`).
    pub(crate) uint: Option<u64>,
    /// Its float value, when it has one.
    pub(crate) float: Option<f64>,
    /// A character constant (`'a'`).
    pub(crate) is_rune: bool,
    /// An imaginary or complex literal.
    pub(crate) is_complex: bool,
}

/// An operand of a command.
#[derive(Debug, Clone)]
pub(crate) enum Arg {
    Bool(usize, bool),
    Dot(usize),
    Nil(usize),
    Number(usize, Number),
    /// The quoted text and the value.
    String(usize, String, String),
    /// `.A.B`: the field names.
    Field(usize, Vec<String>),
    /// `$x.A.B`: the variable (with `$`) then field names.
    Variable(usize, Vec<String>),
    Identifier(usize, String),
    Pipe(Box<Pipe>),
    /// `(pipe).A.B` and other terms followed by fields.
    Chain(usize, Box<Arg>, Vec<String>),
}

impl Arg {
    pub(crate) fn pos(&self) -> usize {
        match self {
            Arg::Bool(p, _)
            | Arg::Dot(p)
            | Arg::Nil(p)
            | Arg::Number(p, _)
            | Arg::String(p, _, _)
            | Arg::Field(p, _)
            | Arg::Variable(p, _)
            | Arg::Identifier(p, _)
            | Arg::Chain(p, _, _) => *p,
            Arg::Pipe(p) => p.pos,
        }
    }
}

impl fmt::Display for Arg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Arg::Bool(_, b) => write!(f, "{b}"),
            Arg::Dot(_) => f.write_str("."),
            Arg::Nil(_) => f.write_str("nil"),
            Arg::Number(_, n) => f.write_str(&n.text),
            Arg::String(_, quoted, _) => f.write_str(quoted),
            Arg::Field(_, idents) => {
                for i in idents {
                    write!(f, ".{i}")?;
                }
                Ok(())
            }
            Arg::Variable(_, idents) => f.write_str(&idents.join(".")),
            Arg::Identifier(_, name) => f.write_str(name),
            Arg::Pipe(p) => write!(f, "{p}"),
            Arg::Chain(_, node, fields) => {
                if let Arg::Pipe(p) = node.as_ref() {
                    write!(f, "({p})")?;
                } else {
                    write!(f, "{node}")?;
                }
                for field in fields {
                    write!(f, ".{field}")?;
                }
                Ok(())
            }
        }
    }
}

impl fmt::Display for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, a) in self.args.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            if let Arg::Pipe(p) = a {
                write!(f, "({p})")?;
            } else {
                write!(f, "{a}")?;
            }
        }
        Ok(())
    }
}

impl fmt::Display for Pipe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        stacker::maybe_grow(RED_ZONE, STACK_SEGMENT, || self.write(f))
    }
}

impl Pipe {
    fn write(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.decl.is_empty() {
            f.write_str(&self.decl.join(", "))?;
            f.write_str(if self.is_assign { " = " } else { " := " })?;
        }
        for (i, c) in self.cmds.iter().enumerate() {
            if i > 0 {
                f.write_str(" | ")?;
            }
            write!(f, "{c}")?;
        }
        Ok(())
    }
}

/// Writes a list of nodes as Go's `ListNode.String()`.
pub(crate) fn write_list(f: &mut fmt::Formatter<'_>, list: &[Node]) -> fmt::Result {
    for n in list {
        write!(f, "{n}")?;
    }
    Ok(())
}

impl fmt::Display for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Node::Text(t) => f.write_str(t),
            Node::Action { pipe, .. } => write!(f, "{{{{{pipe}}}}}"),
            Node::Branch(b) => stacker::maybe_grow(RED_ZONE, STACK_SEGMENT, || {
                let name = match b.kind {
                    BranchKind::If => "if",
                    BranchKind::Range => "range",
                    BranchKind::With => "with",
                };
                write!(f, "{{{{{name} {}}}}}", b.pipe)?;
                write_list(f, &b.list)?;
                if let Some(e) = &b.else_list {
                    f.write_str("{{else}}")?;
                    write_list(f, e)?;
                }
                f.write_str("{{end}}")
            }),
            Node::Template { name, pipe, .. } => match pipe {
                None => write!(f, "{{{{template {}}}}}", go_quote(name)),
                Some(p) => write!(f, "{{{{template {} {p}}}}}", go_quote(name)),
            },
            Node::Break { .. } => f.write_str("{{break}}"),
            Node::Continue { .. } => f.write_str("{{continue}}"),
        }
    }
}

// Trees nest as deeply as the input: dropping them recurses on a grown
// stack.
impl Drop for Branch {
    fn drop(&mut self) {
        let list = std::mem::take(&mut self.list);
        let else_list = self.else_list.take();
        stacker::maybe_grow(RED_ZONE, STACK_SEGMENT, move || drop((list, else_list)));
    }
}

impl Drop for Pipe {
    fn drop(&mut self) {
        let cmds = std::mem::take(&mut self.cmds);
        stacker::maybe_grow(RED_ZONE, STACK_SEGMENT, move || drop(cmds));
    }
}

/// The parsed templates of one text: name, whether empty, and its items.
#[derive(Debug, Clone, Default)]
pub(crate) struct Templates {
    pub(crate) trees: Vec<(String, bool, Vec<Node>)>,
}

impl Templates {
    /// The tree named `name`.
    pub(crate) fn get(&self, name: &str) -> Option<&[Node]> {
        self.trees
            .iter()
            .find(|(n, _, _)| n == name)
            .map(|(_, _, l)| l.as_slice())
    }
}

/// Parses `text` as Go's `template.New(name).Parse(text)` does, with
/// Prometheus' functions defined; the error is Go's text
/// (`template: NAME:LINE: message`).
pub(crate) fn parse(name: &str, text: &str) -> Result<Templates, String> {
    let tokens = lex(text);
    let mut p = Parser {
        name,
        tokens,
        at: 0,
        furthest: 0,
        vars: vec!["$".to_string()],
        range_depth: 0,
        action_line: 0,
        depth: 0,
        defined: Templates::default(),
    };
    let (root_empty, root) = p.parse()?;
    p.add(name, root_empty, root)?;
    Ok(p.defined)
}

/// What `item_list` stopped at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    End,
    Else,
}

/// An item or the `{{end}}`/`{{else}}` that ends a list.
enum Item {
    Node(Node),
    Stop(Stop),
}

/// The deepest nesting of parenthesized pipelines Go accepts.
const MAX_STACK_DEPTH: usize = 10_000;

/// How much stack a recursion step may use before [`stacker`] moves the
/// rest onto a new segment.
pub(crate) const RED_ZONE: usize = 128 * 1024;
/// The size of each new stack segment.
pub(crate) const STACK_SEGMENT: usize = 4 * 1024 * 1024;

/// An error is the template's error text.
type PResult<T> = Result<T, String>;

struct Parser<'a> {
    name: &'a str,
    tokens: Vec<Token>,
    /// Index of the next token.
    at: usize,
    /// The furthest token read (Go names its line in errors).
    furthest: usize,
    vars: Vec<String>,
    range_depth: usize,
    action_line: usize,
    depth: usize,
    /// Templates defined (`define`, `block`).
    defined: Templates,
}

impl Parser<'_> {
    fn token(&self, i: usize) -> Token {
        self.tokens
            .get(i)
            .or_else(|| self.tokens.last())
            .cloned()
            .unwrap_or(Token {
                kind: Kind::Eof,
                text: "EOF".into(),
                line: 1,
                pos: 0,
            })
    }

    fn next(&mut self) -> Token {
        let t = self.token(self.at);
        self.furthest = self.furthest.max(self.at);
        // The last token (EOF or an error) repeats.
        if self.at + 1 < self.tokens.len() {
            self.at += 1;
        }
        t
    }

    fn backup(&mut self) {
        self.at = self.at.saturating_sub(1);
    }

    fn peek(&mut self) -> Token {
        let t = self.next();
        self.backup_to(t);
        self.token(self.at)
    }

    /// Steps back over `t` (which was just read).
    fn backup_to(&mut self, t: Token) {
        if matches!(t.kind, Kind::Eof | Kind::Error) && self.at + 1 >= self.tokens.len() {
            // The last token repeats: nothing to step over.
            return;
        }
        self.backup();
    }

    fn next_non_space(&mut self) -> Token {
        loop {
            let t = self.next();
            if t.kind != Kind::Space {
                return t;
            }
        }
    }

    fn peek_non_space(&mut self) -> Token {
        let t = self.next_non_space();
        self.backup_to(t.clone());
        t
    }

    /// `template: NAME:LINE: message`, the line of the furthest token read.
    fn error<T>(&self, message: impl fmt::Display) -> PResult<T> {
        let line = self.token(self.furthest).line;
        Err(format!("template: {}:{line}: {message}", self.name))
    }

    fn unexpected<T>(&self, t: &Token, context: &str) -> PResult<T> {
        if t.kind == Kind::Error {
            let mut extra = String::new();
            if self.action_line != 0 && self.action_line != t.line {
                extra = format!(" in action started at {}:{}", self.name, self.action_line);
                if t.text.ends_with(" action") {
                    extra = extra[" in action".len()..].to_string();
                }
            }
            return self.error(format!("{t}{extra}"));
        }
        self.error(format!("unexpected {t} in {context}"))
    }

    fn expect(&mut self, kind: Kind, context: &str) -> PResult<Token> {
        let t = self.next_non_space();
        if t.kind != kind {
            return self.unexpected(&t, context);
        }
        Ok(t)
    }

    /// The top level: text, actions and definitions up to EOF; whether
    /// the tree is empty (only space and comments), and its items.
    fn parse(&mut self) -> PResult<(bool, Vec<Node>)> {
        let mut empty = true;
        let mut list = Vec::new();
        while self.peek().kind != Kind::Eof {
            if self.peek().kind == Kind::LeftDelim {
                let delim_at = self.at;
                self.next();
                if self.next_non_space().kind == Kind::Define {
                    self.definition()?;
                    continue;
                }
                self.at = delim_at;
            }
            match self.text_or_action()? {
                Item::Stop(Stop::End) => return self.error("unexpected {{end}}"),
                Item::Stop(Stop::Else) => return self.error("unexpected {{else}}"),
                Item::Node(n) => {
                    empty &= is_empty(&n);
                    list.push(n);
                }
            }
        }
        Ok((empty, list))
    }

    /// Records a template; a second non-empty one of a name is an error.
    fn add(&mut self, name: &str, empty: bool, list: Vec<Node>) -> PResult<()> {
        match self.defined.trees.iter_mut().find(|(n, _, _)| n == name) {
            Some((_, e, l)) if *e => {
                *e = empty;
                *l = list;
            }
            Some(_) if !empty => {
                return self.error(format!(
                    "template: multiple definition of template {}",
                    go_quote(name)
                ))
            }
            Some(_) => {}
            None => self.defined.trees.push((name.to_string(), empty, list)),
        }
        Ok(())
    }

    /// `{{define "name"}} ... {{end}}`, after `define`.
    fn definition(&mut self) -> PResult<()> {
        const CONTEXT: &str = "define clause";
        let t = self.next_non_space();
        if t.kind != Kind::String && t.kind != Kind::RawString {
            return self.unexpected(&t, CONTEXT);
        }
        let name = self.unquote(&t.text)?;
        self.expect(Kind::RightDelim, CONTEXT)?;
        let saved = std::mem::replace(&mut self.vars, vec!["$".to_string()]);
        let listed = self.item_list();
        self.vars = saved;
        let (empty, list, end) = listed?;
        if end != Stop::End {
            return self.error(format!("unexpected {} in {CONTEXT}", stop_name(end)));
        }
        self.add(&name, empty, list)
    }

    /// Items up to `{{end}}` or `{{else}}` (returned); whether the list
    /// is empty.
    fn item_list(&mut self) -> PResult<(bool, Vec<Node>, Stop)> {
        let mut empty = true;
        let mut list = Vec::new();
        while self.peek_non_space().kind != Kind::Eof {
            match self.text_or_action()? {
                Item::Stop(s) => return Ok((empty, list, s)),
                Item::Node(n) => {
                    empty &= is_empty(&n);
                    list.push(n);
                }
            }
        }
        self.error("unexpected EOF")
    }

    fn text_or_action(&mut self) -> PResult<Item> {
        let t = self.next_non_space();
        match t.kind {
            Kind::Text => Ok(Item::Node(Node::Text(t.text))),
            Kind::LeftDelim => {
                self.action_line = t.line;
                let n = stacker::maybe_grow(RED_ZONE, STACK_SEGMENT, || self.action());
                self.action_line = 0;
                n
            }
            _ => self.unexpected(&t, "input"),
        }
    }

    fn action(&mut self) -> PResult<Item> {
        let t = self.next_non_space();
        match t.kind {
            Kind::Block => return self.block_control(),
            Kind::Break => return self.loop_control(Kind::Break, t.pos),
            Kind::Continue => return self.loop_control(Kind::Continue, t.pos),
            Kind::Else => return self.else_control(),
            Kind::End => {
                self.expect(Kind::RightDelim, "end")?;
                return Ok(Item::Stop(Stop::End));
            }
            Kind::If => return self.control(BranchKind::If).map(Item::Node),
            Kind::Range => return self.control(BranchKind::Range).map(Item::Node),
            Kind::Template => return self.template_control(),
            Kind::With => return self.control(BranchKind::With).map(Item::Node),
            _ => {}
        }
        let pos = t.pos;
        self.backup_to(t);
        let pipe = self.pipeline("command", Kind::RightDelim)?;
        Ok(Item::Node(Node::Action { pos, pipe }))
    }

    fn loop_control(&mut self, kind: Kind, pos: usize) -> PResult<Item> {
        let name = if kind == Kind::Break {
            "{{break}}"
        } else {
            "{{continue}}"
        };
        let t = self.next_non_space();
        if t.kind != Kind::RightDelim {
            return self.unexpected(&t, name);
        }
        if self.range_depth == 0 {
            return self.error(format!("{name} outside {{{{range}}}}"));
        }
        Ok(Item::Node(if kind == Kind::Break {
            Node::Break { pos }
        } else {
            Node::Continue { pos }
        }))
    }

    fn else_control(&mut self) -> PResult<Item> {
        let peek = self.peek_non_space();
        if peek.kind == Kind::If || peek.kind == Kind::With {
            return Ok(Item::Stop(Stop::Else));
        }
        self.expect(Kind::RightDelim, "else")?;
        Ok(Item::Stop(Stop::Else))
    }

    /// `if`, `range`, `with`: pipeline, items, optional `else` (or
    /// `else if`/`else with`), `end`.
    fn control(&mut self, kind: BranchKind) -> PResult<Node> {
        let vars = self.vars.len();
        let result = self.control_body(kind);
        self.vars.truncate(vars);
        result
    }

    fn control_body(&mut self, kind: BranchKind) -> PResult<Node> {
        let context = match kind {
            BranchKind::If => "if",
            BranchKind::Range => "range",
            BranchKind::With => "with",
        };
        let pipe = self.pipeline(context, Kind::RightDelim)?;
        if kind == BranchKind::Range {
            self.range_depth += 1;
        }
        let listed = self.item_list();
        if kind == BranchKind::Range {
            self.range_depth -= 1;
        }
        let (_, list, next) = listed?;
        let mut else_list = None;
        if next == Stop::Else {
            let follows = self.peek().kind;
            if kind == BranchKind::If && follows == Kind::If {
                self.next();
                else_list = Some(vec![self.control(BranchKind::If)?]);
            } else if kind == BranchKind::With && follows == Kind::With {
                self.next();
                else_list = Some(vec![self.control(BranchKind::With)?]);
            } else {
                let (_, list, next) = self.item_list()?;
                if next != Stop::End {
                    return self.error(format!("expected end; found {}", stop_name(next)));
                }
                else_list = Some(list);
            }
        }
        Ok(Node::Branch(Box::new(Branch {
            kind,
            pos: pipe.pos,
            pipe,
            list,
            else_list,
        })))
    }

    fn block_control(&mut self) -> PResult<Item> {
        const CONTEXT: &str = "block clause";
        let t = self.next_non_space();
        let name = self.template_name(&t, CONTEXT)?;
        let pipe = self.pipeline(CONTEXT, Kind::RightDelim)?;
        let saved = std::mem::replace(&mut self.vars, vec!["$".to_string()]);
        let saved_range = std::mem::replace(&mut self.range_depth, 0);
        let listed = self.item_list();
        self.vars = saved;
        self.range_depth = saved_range;
        let (empty, list, end) = listed?;
        if end != Stop::End {
            return self.error(format!("unexpected {} in {CONTEXT}", stop_name(end)));
        }
        self.add(&name, empty, list)?;
        Ok(Item::Node(Node::Template {
            pos: t.pos,
            name,
            pipe: Some(pipe),
        }))
    }

    fn template_control(&mut self) -> PResult<Item> {
        const CONTEXT: &str = "template clause";
        let t = self.next_non_space();
        let name = self.template_name(&t, CONTEXT)?;
        let next = self.next_non_space();
        let mut pipe = None;
        if next.kind != Kind::RightDelim {
            self.backup_to(next);
            pipe = Some(self.pipeline(CONTEXT, Kind::RightDelim)?);
        }
        Ok(Item::Node(Node::Template {
            pos: t.pos,
            name,
            pipe,
        }))
    }

    fn template_name(&mut self, t: &Token, context: &str) -> PResult<String> {
        match t.kind {
            Kind::String | Kind::RawString => self.unquote(&t.text),
            _ => self.unexpected(t, context),
        }
    }

    /// A pipeline up to `end`: declarations, then commands.
    fn pipeline(&mut self, context: &str, end: Kind) -> PResult<Pipe> {
        let start = self.peek_non_space();
        let mut pipe = Pipe {
            pos: start.pos,
            is_assign: false,
            decl: Vec::new(),
            cmds: Vec::new(),
        };
        loop {
            let v = self.peek_non_space();
            if v.kind != Kind::Variable {
                break;
            }
            let v_at = self.at;
            self.next_non_space();
            let next = self.peek_non_space();
            match next.kind {
                Kind::Assign | Kind::Declare => {
                    pipe.is_assign = next.kind == Kind::Assign;
                    self.next_non_space();
                    self.vars.push(v.text.clone());
                    pipe.decl.push(v.text);
                    break;
                }
                Kind::Char if next.text == "," => {
                    self.next_non_space();
                    self.vars.push(v.text.clone());
                    pipe.decl.push(v.text);
                    if context == "range" && pipe.decl.len() < 2 {
                        match self.peek_non_space().kind {
                            Kind::Variable | Kind::RightDelim | Kind::RightParen => continue,
                            _ => return self.error("range can only initialize variables"),
                        }
                    }
                    return self.error(format!("too many declarations in {context}"));
                }
                _ => {
                    self.at = v_at;
                    break;
                }
            }
        }
        loop {
            let t = self.next_non_space();
            match t.kind {
                k if k == end => {
                    if pipe.cmds.is_empty() {
                        return self.error(format!("missing value for {context}"));
                    }
                    for (i, c) in pipe.cmds.iter().enumerate().skip(1) {
                        if matches!(
                            c.args.first(),
                            Some(
                                Arg::Bool(..)
                                    | Arg::Dot(_)
                                    | Arg::Nil(_)
                                    | Arg::Number(..)
                                    | Arg::String(..)
                            )
                        ) {
                            return self.error(format!(
                                "non executable command in pipeline stage {}",
                                i + 1
                            ));
                        }
                    }
                    return Ok(pipe);
                }
                Kind::Bool
                | Kind::CharConstant
                | Kind::Complex
                | Kind::Dot
                | Kind::Field
                | Kind::Identifier
                | Kind::Number
                | Kind::Nil
                | Kind::RawString
                | Kind::String
                | Kind::Variable
                | Kind::LeftParen => {
                    self.backup_to(t);
                    let c = self.command()?;
                    pipe.cmds.push(c);
                }
                _ => return self.unexpected(&t, context),
            }
        }
    }

    /// Operands up to `|` or the end of the pipeline.
    fn command(&mut self) -> PResult<Command> {
        let pos = self.peek_non_space().pos;
        let mut args = Vec::new();
        loop {
            self.peek_non_space();
            if let Some(op) = self.operand()? {
                args.push(op);
            }
            let t = self.next();
            match t.kind {
                Kind::Space => continue,
                Kind::RightDelim | Kind::RightParen => self.backup_to(t),
                Kind::Pipe => {}
                _ => return self.unexpected(&t, "operand"),
            }
            break;
        }
        if args.is_empty() {
            return self.error("empty command");
        }
        Ok(Command { pos, args })
    }

    /// A term and the fields after it.
    fn operand(&mut self) -> PResult<Option<Arg>> {
        let Some(term) = self.term()? else {
            return Ok(None);
        };
        if self.peek().kind != Kind::Field {
            return Ok(Some(term));
        }
        let pos = self.peek().pos;
        let mut fields = Vec::new();
        while self.peek().kind == Kind::Field {
            let t = self.next();
            fields.push(t.text[1..].to_string());
        }
        match term {
            Arg::Field(_, mut idents) => {
                idents.extend(fields);
                Ok(Some(Arg::Field(pos, idents)))
            }
            Arg::Variable(_, mut idents) => {
                idents.extend(fields);
                Ok(Some(Arg::Variable(pos, idents)))
            }
            Arg::Bool(..) | Arg::String(..) | Arg::Number(..) | Arg::Nil(_) | Arg::Dot(_) => self
                .error(format!(
                    "unexpected . after term {}",
                    go_quote(&term.to_string())
                )),
            t => Ok(Some(Arg::Chain(pos, Box::new(t), fields))),
        }
    }

    /// A term; `None` when the next token does not start one.
    fn term(&mut self) -> PResult<Option<Arg>> {
        let t = self.next_non_space();
        let term = match t.kind {
            Kind::Identifier => {
                if !FUNCTIONS.contains(&t.text.as_str()) {
                    return self.error(format!("function {} not defined", go_quote(&t.text)));
                }
                Arg::Identifier(t.pos, t.text)
            }
            Kind::Dot => Arg::Dot(t.pos),
            Kind::Nil => Arg::Nil(t.pos),
            Kind::Variable => {
                let idents: Vec<String> = t.text.split('.').map(str::to_string).collect();
                let name = idents.first().map(String::as_str).unwrap_or_default();
                if !self.vars.iter().any(|v| v == name) {
                    return self.error(format!("undefined variable {}", go_quote(name)));
                }
                Arg::Variable(t.pos, idents)
            }
            Kind::Field => Arg::Field(t.pos, t.text[1..].split('.').map(str::to_string).collect()),
            Kind::Bool => Arg::Bool(t.pos, t.text == "true"),
            Kind::CharConstant | Kind::Complex | Kind::Number => {
                Arg::Number(t.pos, self.number(&t)?)
            }
            Kind::LeftParen => {
                if self.depth >= MAX_STACK_DEPTH {
                    return self.error("max expression depth exceeded");
                }
                self.depth += 1;
                let r = stacker::maybe_grow(RED_ZONE, STACK_SEGMENT, || {
                    self.pipeline("parenthesized pipeline", Kind::RightParen)
                });
                self.depth -= 1;
                Arg::Pipe(Box::new(r?))
            }
            Kind::String | Kind::RawString => {
                let value = self.unquote(&t.text)?;
                Arg::String(t.pos, t.text, value)
            }
            _ => {
                self.backup_to(t);
                return Ok(None);
            }
        };
        Ok(Some(term))
    }

    /// Go's checks of a number literal, and its value.
    fn number(&self, t: &Token) -> PResult<Number> {
        let text = t.text.as_str();
        let mut n = Number {
            text: t.text.clone(),
            int: None,
            uint: None,
            float: None,
            is_rune: false,
            is_complex: false,
        };
        match t.kind {
            Kind::CharConstant => {
                let inner = &text[1..];
                match unquote_char(inner, '\'') {
                    Err(()) => return self.error("invalid syntax"),
                    Ok((_, tail)) if tail != "'" => {
                        return self.error(format!("malformed character constant: {text}"))
                    }
                    Ok((c, _)) => {
                        n.is_rune = true;
                        n.int = Some(i64::from(u32::from(c)));
                        n.uint = Some(u64::from(u32::from(c)));
                        n.float = Some(f64::from(u32::from(c)));
                    }
                }
            }
            Kind::Complex => n.is_complex = true,
            _ => {
                if let Some(imag) = text.strip_suffix('i') {
                    if go_float(imag).is_some() {
                        n.is_complex = true;
                        return Ok(n);
                    }
                }
                if let Some(v) = go_int(text) {
                    n.int = i64::try_from(v).ok();
                    n.uint = u64::try_from(v).ok();
                    n.float = Some(v as f64);
                    return Ok(n);
                }
                if go_float(text).is_some() {
                    if !text.contains(['.', 'e', 'E', 'p', 'P']) {
                        return self.error(format!("integer overflow: {}", go_quote(text)));
                    }
                    let f = ferrite_model::gofloat::parse_go_float(text.as_bytes()).unwrap_or(0.0);
                    n.float = Some(f);
                    if f.fract() == 0.0 && f.abs() < 9.2e18 {
                        n.int = Some(f as i64);
                    }
                    if f.fract() == 0.0 && (0.0..1.8e19).contains(&f) {
                        n.uint = Some(f as u64);
                    }
                    return Ok(n);
                }
                return self.error(format!("illegal number syntax: {}", go_quote(text)));
            }
        }
        Ok(n)
    }

    /// Go's `strconv.Unquote` of a string token; its error is
    /// `invalid syntax`.
    fn unquote(&self, text: &str) -> PResult<String> {
        match go_unquote(text) {
            Some(s) => Ok(s),
            None => self.error("invalid syntax"),
        }
    }
}

fn is_empty(n: &Node) -> bool {
    match n {
        Node::Text(t) => t.trim().is_empty(),
        _ => false,
    }
}

/// How Go prints an `{{end}}` or `{{else}}` node in its messages.
fn stop_name(s: Stop) -> &'static str {
    match s {
        Stop::End => "{{end}}",
        Stop::Else => "{{else}}",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root(text: &str) -> Vec<Node> {
        let t = parse("t", text).expect("parses");
        t.get("t").expect("root").to_vec()
    }

    #[test]
    fn nodes_print_as_go_does() {
        let n = root(
            "{{ $x := .A.B | printf \"%d\" (len $) }}{{ if eq 1 2 }}a{{ else if 3 }}b{{ end }}",
        );
        assert_eq!(n[0].to_string(), "{{$x := .A.B | printf \"%d\" (len $)}}");
        assert_eq!(
            n[1].to_string(),
            "{{if eq 1 2}}a{{else}}{{if 3}}b{{end}}{{end}}"
        );
        let n = root(
            "{{ range $i, $v := (query \"up\").x }}{{ break }}{{ end }}{{ template \"t\" . }}",
        );
        assert_eq!(
            n[0].to_string(),
            "{{range $i, $v := (query \"up\").x}}{{break}}{{end}}"
        );
        assert_eq!(n[1].to_string(), "{{template \"t\" .}}");
    }

    #[test]
    fn positions_are_go_s() {
        let n = root("ab{{ $.job }}");
        let Node::Action { pos, pipe } = &n[1] else {
            panic!("an action")
        };
        assert_eq!(*pos, 5);
        // A variable with fields sits where its first field does.
        assert_eq!(pipe.cmds[0].args[0].pos(), 6);
    }

    #[test]
    fn defines_collect_templates() {
        let t = parse("m", "{{define \"a\"}}A{{end}}{{block \"b\" .}}B{{end}}x").expect("parses");
        let names: Vec<&str> = t.trees.iter().map(|(n, _, _)| n.as_str()).collect();
        assert_eq!(names, ["a", "b", "m"]);
        assert!(parse("m", "{{define \"a\"}}A{{end}}{{define \"a\"}}B{{end}}").is_err());
        assert!(parse("m", "{{define \"a\"}}{{end}}{{define \"a\"}}B{{end}}").is_ok());
    }
}
