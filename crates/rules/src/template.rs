//! The template check Prometheus runs on an alerting rule's labels and
//! annotations (`rulefmt`'s `testTemplateParsing`): each value, after
//! Prometheus' variable definitions (`$labels`, `$externalLabels`,
//! `$externalURL`, `$value`), must parse as a Go `text/template` with
//! Prometheus' template functions. [`check`] parses it as Go's
//! `text/template/parse` does and gives its error texts
//! (`template: __alert_X:1: function "bogus" not defined`).
//!
//! What is checked is what Go's parser checks: delimiters, comments and
//! trim markers, the lexer's tokens (strings, raw strings, characters,
//! numbers, fields, variables), pipelines, declarations, the control
//! structures (`if`, `else if`, `range`, `with`, `else with`, `break`,
//! `continue`, `define`, `block`, `template`, `end`), that functions
//! exist and variables are declared. Not reproduced: complex number
//! literals (`1+2i`) are accepted without Go's `fmt.Sscan` check, and
//! nothing is executed (Go's parser does not execute either).

use ferrite_model::goquote::quote as go_quote;

/// Prometheus' template functions and `text/template`'s built-ins: the
/// names a template may call.
const FUNCTIONS: &[&str] = &[
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

/// The definitions Prometheus puts before every label and annotation
/// template it checks.
const DEFINITIONS: &str = "{{$labels := .Labels}}{{$externalLabels := .ExternalLabels}}{{$externalURL := .ExternalURL}}{{$value := .Value}}";

/// Checks an alerting rule's label or annotation template as Prometheus
/// does; `name` is the template's name (`__alert_<alert name>`).
pub fn check(name: &str, text: &str) -> Result<(), String> {
    let source = format!("{DEFINITIONS}{text}");
    let tokens = lex(&source);
    let mut p = Parser {
        name,
        tokens,
        at: 0,
        furthest: 0,
        vars: vec!["$".to_string()],
        range_depth: 0,
        action_line: 0,
        depth: 0,
        defined: Vec::new(),
    };
    let root_empty = p.parse()?;
    p.add(name, root_empty)
}

// ---------------------------------------------------------------------
// Lexing.

/// A token's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Error,
    Bool,
    Char,
    CharConstant,
    Complex,
    Assign,
    Declare,
    Eof,
    Field,
    Identifier,
    LeftDelim,
    LeftParen,
    Number,
    Pipe,
    RawString,
    RightDelim,
    RightParen,
    Space,
    String,
    Text,
    Variable,
    // Keywords.
    Block,
    Break,
    Continue,
    Dot,
    Define,
    Else,
    End,
    If,
    Nil,
    Range,
    Template,
    With,
}

impl Kind {
    fn is_keyword(self) -> bool {
        matches!(
            self,
            Kind::Block
                | Kind::Break
                | Kind::Continue
                | Kind::Dot
                | Kind::Define
                | Kind::Else
                | Kind::End
                | Kind::If
                | Kind::Nil
                | Kind::Range
                | Kind::Template
                | Kind::With
        )
    }
}

fn keyword(word: &str) -> Option<Kind> {
    Some(match word {
        "." => Kind::Dot,
        "block" => Kind::Block,
        "break" => Kind::Break,
        "continue" => Kind::Continue,
        "define" => Kind::Define,
        "else" => Kind::Else,
        "end" => Kind::End,
        "if" => Kind::If,
        "range" => Kind::Range,
        "nil" => Kind::Nil,
        "template" => Kind::Template,
        "with" => Kind::With,
        _ => return None,
    })
}

/// A token: its kind, text (or error message) and line.
#[derive(Debug, Clone)]
struct Token {
    kind: Kind,
    text: String,
    line: usize,
}

impl std::fmt::Display for Token {
    /// How Go's parser names a token in its messages.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.kind {
            Kind::Eof => f.write_str("EOF"),
            Kind::Error => f.write_str(&self.text),
            k if k.is_keyword() => write!(f, "<{}>", self.text),
            _ if self.text.chars().count() > 10 => {
                let head: String = self.text.chars().take(10).collect();
                write!(f, "{}...", go_quote(&head))
            }
            _ => f.write_str(&go_quote(&self.text)),
        }
    }
}

const LEFT: &str = "{{";
const RIGHT: &str = "}}";

fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n')
}

fn is_alphanumeric(c: char) -> bool {
    c == '_' || c.is_alphabetic() || c.is_numeric()
}

/// `{{- ` (a trim marker after the left delimiter).
fn left_trim_marker(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 2 && b[0] == b'-' && is_space(char::from(b[1]))
}

/// ` -}}` (a trim marker before the right delimiter).
fn right_trim_marker(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 2 && is_space(char::from(b[0])) && b[1] == b'-'
}

/// Go's `%#U`: `U+007B '{'` (without the character when it does not
/// print).
fn char_desc(c: char) -> String {
    if ferrite_model::goquote::is_print(c) {
        format!("U+{:04X} '{c}'", c as u32)
    } else {
        format!("U+{:04X}", c as u32)
    }
}

/// The lexer: the whole input in tokens, up to EOF or an error.
struct Lexer<'s> {
    input: &'s str,
    start: usize,
    pos: usize,
    paren_depth: i64,
    tokens: Vec<Token>,
}

fn lex(input: &str) -> Vec<Token> {
    let mut l = Lexer {
        input,
        start: 0,
        pos: 0,
        paren_depth: 0,
        tokens: Vec::new(),
    };
    l.run();
    l.tokens
}

impl Lexer<'_> {
    fn line_at(&self, at: usize) -> usize {
        1 + self.input[..at].matches('\n').count()
    }

    fn emit(&mut self, kind: Kind) {
        let text = self.input[self.start..self.pos].to_string();
        let line = self.line_at(self.start);
        self.tokens.push(Token { kind, text, line });
        self.start = self.pos;
    }

    /// Ends the scan with an error token (at the current item's start).
    fn error(&mut self, message: String) -> bool {
        let line = self.line_at(self.start);
        self.tokens.push(Token {
            kind: Kind::Error,
            text: message,
            line,
        });
        false
    }

    fn rest(&self) -> &str {
        &self.input[self.pos..]
    }

    fn next(&mut self) -> Option<char> {
        let c = self.rest().chars().next()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn backup(&mut self, c: Option<char>) {
        if let Some(c) = c {
            self.pos -= c.len_utf8();
        }
    }

    fn accept(&mut self, valid: &str) -> bool {
        match self.peek() {
            Some(c) if valid.contains(c) => {
                self.pos += c.len_utf8();
                true
            }
            _ => false,
        }
    }

    fn accept_run(&mut self, valid: &str) {
        while self.accept(valid) {}
    }

    /// Scans everything: text and actions alternate.
    fn run(&mut self) {
        loop {
            if !self.text() {
                return;
            }
            if !self.action() {
                return;
            }
        }
    }

    /// Text up to the next action (trailing spaces dropped before a
    /// `{{- `); `false` at the end of the input (EOF emitted).
    fn text(&mut self) -> bool {
        match self.rest().find(LEFT) {
            Some(x) => {
                self.pos += x;
                let delim_end = self.pos + LEFT.len();
                let mut trim = 0;
                if left_trim_marker(&self.input[delim_end..]) {
                    let t = &self.input[self.start..self.pos];
                    trim = t.len() - t.trim_end_matches(is_space).len();
                }
                self.pos -= trim;
                if self.pos > self.start {
                    self.emit(Kind::Text);
                }
                self.pos += trim;
                self.start = self.pos;
                true
            }
            None => {
                self.pos = self.input.len();
                if self.pos > self.start {
                    self.emit(Kind::Text);
                }
                self.emit(Kind::Eof);
                false
            }
        }
    }

    /// Whether a right delimiter (possibly trim-marked) is next.
    fn at_right_delim(&self) -> (bool, bool) {
        let rest = self.rest();
        if right_trim_marker(rest) && rest[2..].starts_with(RIGHT) {
            return (true, true);
        }
        (rest.starts_with(RIGHT), false)
    }

    /// An action (or a comment) from its left delimiter; `false` when an
    /// error ended the scan.
    fn action(&mut self) -> bool {
        self.pos += LEFT.len();
        let trim = left_trim_marker(self.rest());
        let after = if trim { 2 } else { 0 };
        if self.input[self.pos + after..].starts_with("/*") {
            self.pos += after;
            self.start = self.pos;
            return self.comment();
        }
        self.emit(Kind::LeftDelim);
        self.pos += after;
        self.start = self.pos;
        self.paren_depth = 0;
        loop {
            let (delim, _) = self.at_right_delim();
            if delim {
                if self.paren_depth == 0 {
                    self.right_delim();
                    return true;
                }
                return self.error("unclosed left paren".into());
            }
            if !self.inside_action() {
                return false;
            }
        }
    }

    fn comment(&mut self) -> bool {
        self.pos += 2;
        let Some(x) = self.rest().find("*/") else {
            return self.error("unclosed comment".into());
        };
        self.pos += x + 2;
        let (delim, trim) = self.at_right_delim();
        if !delim {
            return self.error("comment ends before closing delimiter".into());
        }
        if trim {
            self.pos += 2;
        }
        self.pos += RIGHT.len();
        if trim {
            let r = self.rest();
            self.pos += r.len() - r.trim_start_matches(is_space).len();
        }
        self.start = self.pos;
        true
    }

    fn right_delim(&mut self) {
        let (_, trim) = self.at_right_delim();
        if trim {
            self.pos += 2;
            self.start = self.pos;
        }
        self.pos += RIGHT.len();
        self.emit(Kind::RightDelim);
        if trim {
            let r = self.rest();
            self.pos += r.len() - r.trim_start_matches(is_space).len();
            self.start = self.pos;
        }
    }

    /// One token inside an action; `false` when an error ended the scan.
    fn inside_action(&mut self) -> bool {
        let Some(c) = self.next() else {
            return self.error("unclosed action".into());
        };
        match c {
            c if is_space(c) => {
                self.backup(Some(c));
                self.space();
            }
            '=' => self.emit(Kind::Assign),
            ':' => {
                if self.next() != Some('=') {
                    return self.error("expected :=".into());
                }
                self.emit(Kind::Declare);
            }
            '|' => self.emit(Kind::Pipe),
            '"' => return self.quote(),
            '`' => return self.raw_quote(),
            '$' => return self.variable(),
            '\'' => return self.char_constant(),
            '.' if !self.peek().is_some_and(|d| d.is_ascii_digit()) => {
                return self.field_or_variable(Kind::Field);
            }
            '.' | '+' | '-' | '0'..='9' => {
                self.backup(Some(c));
                return self.number();
            }
            c if is_alphanumeric(c) => {
                self.backup(Some(c));
                return self.identifier();
            }
            '(' => {
                self.paren_depth += 1;
                self.emit(Kind::LeftParen);
            }
            ')' => {
                self.paren_depth -= 1;
                if self.paren_depth < 0 {
                    return self.error("unexpected right paren".into());
                }
                self.emit(Kind::RightParen);
            }
            c if c.is_ascii() && !c.is_ascii_control() => self.emit(Kind::Char),
            c => {
                return self.error(format!(
                    "unrecognized character in action: {}",
                    char_desc(c)
                ))
            }
        }
        true
    }

    /// A run of spaces (not the one before a ` -}}`).
    fn space(&mut self) {
        let mut n = 0;
        while self.peek().is_some_and(is_space) {
            self.next();
            n += 1;
        }
        let before = &self.input[self.pos - 1..];
        if right_trim_marker(before) && before[2..].starts_with(RIGHT) {
            self.pos -= 1;
            if n == 1 {
                // On the trim-marked delimiter: nothing to emit.
                return;
            }
        }
        self.emit(Kind::Space);
    }

    /// Whether the next character may end an identifier.
    fn at_terminator(&self) -> bool {
        match self.peek() {
            None => true,
            Some(c) if is_space(c) => true,
            Some('.' | ',' | '|' | ':' | ')' | '(') => true,
            _ => self.rest().starts_with(RIGHT),
        }
    }

    fn identifier(&mut self) -> bool {
        while self.peek().is_some_and(is_alphanumeric) {
            self.next();
        }
        if !self.at_terminator() {
            let c = self.next();
            return self.error(format!("bad character {}", char_desc(c.unwrap_or('\0'))));
        }
        let word = &self.input[self.start..self.pos];
        let kind = match keyword(word) {
            Some(k) => k,
            None if word.starts_with('.') => Kind::Field,
            None if word == "true" || word == "false" => Kind::Bool,
            None => Kind::Identifier,
        };
        self.emit(kind);
        true
    }

    fn variable(&mut self) -> bool {
        if self.at_terminator() {
            self.emit(Kind::Variable);
            return true;
        }
        self.field_or_variable(Kind::Variable)
    }

    fn field_or_variable(&mut self, kind: Kind) -> bool {
        if self.at_terminator() {
            self.emit(if kind == Kind::Variable {
                Kind::Variable
            } else {
                Kind::Dot
            });
            return true;
        }
        while self.peek().is_some_and(is_alphanumeric) {
            self.next();
        }
        if !self.at_terminator() {
            let c = self.next();
            return self.error(format!("bad character {}", char_desc(c.unwrap_or('\0'))));
        }
        self.emit(kind);
        true
    }

    fn char_constant(&mut self) -> bool {
        loop {
            match self.next() {
                Some('\\') => match self.next() {
                    None | Some('\n') => {
                        return self.error("unterminated character constant".into())
                    }
                    Some(_) => {}
                },
                None | Some('\n') => return self.error("unterminated character constant".into()),
                Some('\'') => break,
                Some(_) => {}
            }
        }
        self.emit(Kind::CharConstant);
        true
    }

    fn number(&mut self) -> bool {
        if !self.scan_number() {
            let text = self.input[self.start..self.pos].to_string();
            return self.error(format!("bad number syntax: {}", go_quote(&text)));
        }
        if matches!(self.peek(), Some('+' | '-')) {
            if !self.scan_number() || !self.input[..self.pos].ends_with('i') {
                let text = self.input[self.start..self.pos].to_string();
                return self.error(format!("bad number syntax: {}", go_quote(&text)));
            }
            self.emit(Kind::Complex);
            return true;
        }
        self.emit(Kind::Number);
        true
    }

    /// Go's loose number scan (the parser checks the text).
    fn scan_number(&mut self) -> bool {
        self.accept("+-");
        let mut digits = "0123456789_";
        if self.accept("0") {
            if self.accept("xX") {
                digits = "0123456789abcdefABCDEF_";
            } else if self.accept("oO") {
                digits = "01234567_";
            } else if self.accept("bB") {
                digits = "01_";
            }
        }
        self.accept_run(digits);
        if self.accept(".") {
            self.accept_run(digits);
        }
        if digits.len() == 11 && self.accept("eE") {
            self.accept("+-");
            self.accept_run("0123456789_");
        }
        if digits.len() == 23 && self.accept("pP") {
            self.accept("+-");
            self.accept_run("0123456789_");
        }
        self.accept("i");
        if self.peek().is_some_and(is_alphanumeric) {
            self.next();
            return false;
        }
        true
    }

    fn quote(&mut self) -> bool {
        loop {
            match self.next() {
                Some('\\') => match self.next() {
                    None | Some('\n') => return self.error("unterminated quoted string".into()),
                    Some(_) => {}
                },
                None | Some('\n') => return self.error("unterminated quoted string".into()),
                Some('"') => break,
                Some(_) => {}
            }
        }
        self.emit(Kind::String);
        true
    }

    fn raw_quote(&mut self) -> bool {
        loop {
            match self.next() {
                None => return self.error("unterminated raw quoted string".into()),
                Some('`') => break,
                Some(_) => {}
            }
        }
        self.emit(Kind::RawString);
        true
    }
}

// ---------------------------------------------------------------------
// Parsing.

/// What the parser needs to know of a node.
#[derive(Debug, Clone, PartialEq)]
enum Node {
    /// Text; `true` when only white space.
    Text(bool),
    Action,
    Control,
    Template,
    Break,
    Continue,
    End,
    Else,
}

/// An operand's kind, for Go's pipeline and chain rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operand {
    Bool,
    Dot,
    Nil,
    Number,
    String,
    Field,
    Variable,
    Identifier,
    Pipe,
    Chain,
}

/// An error is the template's error text.
type PResult<T> = Result<T, String>;

/// The deepest nesting of parenthesized pipelines Go accepts.
const MAX_STACK_DEPTH: usize = 10_000;

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
    /// Templates defined (`define`, `block`): name and whether empty.
    defined: Vec<(String, bool)>,
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
    fn error<T>(&self, message: impl std::fmt::Display) -> PResult<T> {
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
    /// the tree is empty (only space and comments).
    fn parse(&mut self) -> PResult<bool> {
        let mut empty = true;
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
                Node::End => return self.error("unexpected {{end}}"),
                Node::Else => return self.error("unexpected {{else}}"),
                n => empty &= is_empty(&n),
            }
        }
        Ok(empty)
    }

    /// Records a template; a second non-empty one of a name is an error.
    fn add(&mut self, name: &str, empty: bool) -> PResult<()> {
        match self.defined.iter_mut().find(|(n, _)| n == name) {
            Some((_, e)) if *e => *e = empty,
            Some(_) if !empty => {
                return self.error(format!(
                    "template: multiple definition of template {}",
                    go_quote(name)
                ))
            }
            Some(_) => {}
            None => self.defined.push((name.to_string(), empty)),
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
        let (empty, end) = self.item_list()?;
        self.vars = saved;
        if end != Node::End {
            return self.error(format!("unexpected {} in {CONTEXT}", node_name(&end)));
        }
        self.add(&name, empty)
    }

    /// Items up to `{{end}}` or `{{else}}` (returned); whether the list
    /// is empty.
    fn item_list(&mut self) -> PResult<(bool, Node)> {
        let mut empty = true;
        while self.peek_non_space().kind != Kind::Eof {
            let n = self.text_or_action()?;
            if matches!(n, Node::End | Node::Else) {
                return Ok((empty, n));
            }
            empty &= is_empty(&n);
        }
        self.error("unexpected EOF")
    }

    fn text_or_action(&mut self) -> PResult<Node> {
        let t = self.next_non_space();
        match t.kind {
            Kind::Text => Ok(Node::Text(t.text.trim().is_empty())),
            Kind::LeftDelim => {
                self.action_line = t.line;
                let n = self.action();
                self.action_line = 0;
                n
            }
            _ => self.unexpected(&t, "input"),
        }
    }

    fn action(&mut self) -> PResult<Node> {
        let t = self.next_non_space();
        match t.kind {
            Kind::Block => return self.block_control(),
            Kind::Break => return self.loop_control(Kind::Break),
            Kind::Continue => return self.loop_control(Kind::Continue),
            Kind::Else => return self.else_control(),
            Kind::End => {
                self.expect(Kind::RightDelim, "end")?;
                return Ok(Node::End);
            }
            Kind::If => return self.control("if"),
            Kind::Range => return self.control("range"),
            Kind::Template => return self.template_control(),
            Kind::With => return self.control("with"),
            _ => {}
        }
        self.backup_to(t);
        self.pipeline("command", Kind::RightDelim)?;
        Ok(Node::Action)
    }

    fn loop_control(&mut self, kind: Kind) -> PResult<Node> {
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
        Ok(if kind == Kind::Break {
            Node::Break
        } else {
            Node::Continue
        })
    }

    fn else_control(&mut self) -> PResult<Node> {
        let peek = self.peek_non_space();
        if peek.kind == Kind::If || peek.kind == Kind::With {
            return Ok(Node::Else);
        }
        self.expect(Kind::RightDelim, "else")?;
        Ok(Node::Else)
    }

    /// `if`, `range`, `with`: pipeline, items, optional `else` (or
    /// `else if`/`else with`), `end`.
    fn control(&mut self, context: &str) -> PResult<Node> {
        let vars = self.vars.len();
        let result = self.control_body(context);
        self.vars.truncate(vars);
        result
    }

    fn control_body(&mut self, context: &str) -> PResult<Node> {
        self.pipeline(context, Kind::RightDelim)?;
        if context == "range" {
            self.range_depth += 1;
        }
        let listed = self.item_list();
        if context == "range" {
            self.range_depth -= 1;
        }
        let (_, next) = listed?;
        if next == Node::Else {
            let follows = self.peek().kind;
            if context == "if" && follows == Kind::If {
                self.next();
                self.control("if")?;
            } else if context == "with" && follows == Kind::With {
                self.next();
                self.control("with")?;
            } else {
                let (_, next) = self.item_list()?;
                if next != Node::End {
                    return self.error(format!("expected end; found {}", node_name(&next)));
                }
            }
        }
        Ok(Node::Control)
    }

    fn block_control(&mut self) -> PResult<Node> {
        const CONTEXT: &str = "block clause";
        let t = self.next_non_space();
        let name = self.template_name(&t, CONTEXT)?;
        self.pipeline(CONTEXT, Kind::RightDelim)?;
        let saved = std::mem::replace(&mut self.vars, vec!["$".to_string()]);
        let saved_range = std::mem::replace(&mut self.range_depth, 0);
        let listed = self.item_list();
        self.vars = saved;
        self.range_depth = saved_range;
        let (empty, end) = listed?;
        if end != Node::End {
            return self.error(format!("unexpected {} in {CONTEXT}", node_name(&end)));
        }
        self.add(&name, empty)?;
        Ok(Node::Template)
    }

    fn template_control(&mut self) -> PResult<Node> {
        const CONTEXT: &str = "template clause";
        let t = self.next_non_space();
        self.template_name(&t, CONTEXT)?;
        let next = self.next_non_space();
        if next.kind != Kind::RightDelim {
            self.backup_to(next);
            self.pipeline(CONTEXT, Kind::RightDelim)?;
        }
        Ok(Node::Template)
    }

    fn template_name(&mut self, t: &Token, context: &str) -> PResult<String> {
        match t.kind {
            Kind::String | Kind::RawString => self.unquote(&t.text),
            _ => self.unexpected(t, context),
        }
    }

    /// A pipeline up to `end`: declarations, then commands.
    fn pipeline(&mut self, context: &str, end: Kind) -> PResult<()> {
        let mut decls = 0;
        loop {
            let v = self.peek_non_space();
            if v.kind != Kind::Variable {
                break;
            }
            let v_at = self.at;
            self.next_non_space();
            let after_at = self.at;
            let after = self.peek();
            let next = self.peek_non_space();
            match next.kind {
                Kind::Assign | Kind::Declare => {
                    self.next_non_space();
                    self.vars.push(v.text.clone());
                    break;
                }
                Kind::Char if next.text == "," => {
                    self.next_non_space();
                    self.vars.push(v.text.clone());
                    decls += 1;
                    if context == "range" && decls < 2 {
                        match self.peek_non_space().kind {
                            Kind::Variable | Kind::RightDelim | Kind::RightParen => continue,
                            _ => return self.error("range can only initialize variables"),
                        }
                    }
                    return self.error(format!("too many declarations in {context}"));
                }
                _ if after.kind == Kind::Space => {
                    self.at = v_at;
                    let _ = after_at;
                    break;
                }
                _ => {
                    self.at = v_at;
                    break;
                }
            }
        }
        let mut commands: Vec<Operand> = Vec::new();
        loop {
            let t = self.next_non_space();
            match t.kind {
                k if k == end => {
                    if commands.is_empty() {
                        return self.error(format!("missing value for {context}"));
                    }
                    for (i, first) in commands.iter().enumerate().skip(1) {
                        if matches!(
                            first,
                            Operand::Bool
                                | Operand::Dot
                                | Operand::Nil
                                | Operand::Number
                                | Operand::String
                        ) {
                            return self.error(format!(
                                "non executable command in pipeline stage {}",
                                i + 1
                            ));
                        }
                    }
                    return Ok(());
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
                    commands.push(self.command()?);
                }
                _ => return self.unexpected(&t, context),
            }
        }
    }

    /// Operands up to `|` or the end of the pipeline; the kind of the
    /// first.
    fn command(&mut self) -> PResult<Operand> {
        let mut first = None;
        loop {
            self.peek_non_space();
            if let Some(op) = self.operand()? {
                first.get_or_insert(op);
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
        match first {
            Some(op) => Ok(op),
            None => self.error("empty command"),
        }
    }

    /// A term and the fields after it.
    fn operand(&mut self) -> PResult<Option<Operand>> {
        let Some((op, text)) = self.term()? else {
            return Ok(None);
        };
        if self.peek().kind != Kind::Field {
            return Ok(Some(op));
        }
        while self.peek().kind == Kind::Field {
            self.next();
        }
        match op {
            Operand::Field => Ok(Some(Operand::Field)),
            Operand::Variable => Ok(Some(Operand::Variable)),
            Operand::Bool | Operand::String | Operand::Number | Operand::Nil | Operand::Dot => {
                self.error(format!("unexpected . after term {}", go_quote(&text)))
            }
            _ => Ok(Some(Operand::Chain)),
        }
    }

    /// A term, with its text as Go prints the node; `None` when the next
    /// token does not start one.
    fn term(&mut self) -> PResult<Option<(Operand, String)>> {
        let t = self.next_non_space();
        let term = match t.kind {
            Kind::Identifier => {
                if !FUNCTIONS.contains(&t.text.as_str()) {
                    return self.error(format!("function {} not defined", go_quote(&t.text)));
                }
                (Operand::Identifier, t.text)
            }
            Kind::Dot => (Operand::Dot, ".".into()),
            Kind::Nil => (Operand::Nil, "nil".into()),
            Kind::Variable => {
                let name = t.text.split('.').next().unwrap_or_default();
                if !self.vars.iter().any(|v| v == name) {
                    return self.error(format!("undefined variable {}", go_quote(name)));
                }
                (Operand::Variable, t.text)
            }
            Kind::Field => (Operand::Field, t.text),
            Kind::Bool => (Operand::Bool, t.text),
            Kind::CharConstant | Kind::Complex | Kind::Number => {
                self.number(&t)?;
                (Operand::Number, t.text)
            }
            Kind::LeftParen => {
                if self.depth >= MAX_STACK_DEPTH {
                    return self.error("max expression depth exceeded");
                }
                self.depth += 1;
                let r = self.pipeline("parenthesized pipeline", Kind::RightParen);
                self.depth -= 1;
                r?;
                (Operand::Pipe, String::new())
            }
            Kind::String | Kind::RawString => {
                self.unquote(&t.text)?;
                (Operand::String, t.text)
            }
            _ => {
                self.backup_to(t);
                return Ok(None);
            }
        };
        Ok(Some(term))
    }

    /// Go's checks of a number literal.
    fn number(&self, t: &Token) -> PResult<()> {
        let text = t.text.as_str();
        match t.kind {
            Kind::CharConstant => {
                let inner = &text[1..];
                match unquote_char(inner, '\'') {
                    Err(()) => return self.error("invalid syntax"),
                    Ok((_, tail)) if tail != "'" => {
                        return self.error(format!("malformed character constant: {text}"))
                    }
                    Ok(_) => {}
                }
            }
            Kind::Complex => {}
            _ => {
                if let Some(imag) = text.strip_suffix('i') {
                    if go_float(imag).is_some() {
                        return Ok(());
                    }
                }
                if go_int(text).is_some() {
                    return Ok(());
                }
                if go_float(text).is_some() {
                    if !text.contains(['.', 'e', 'E', 'p', 'P']) {
                        return self.error(format!("integer overflow: {}", go_quote(text)));
                    }
                    return Ok(());
                }
                return self.error(format!("illegal number syntax: {}", go_quote(text)));
            }
        }
        Ok(())
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
        Node::Text(blank) => *blank,
        _ => false,
    }
}

/// How Go prints an `{{end}}` or `{{else}}` node in its messages.
fn node_name(n: &Node) -> &'static str {
    match n {
        Node::End => "{{end}}",
        Node::Else => "{{else}}",
        _ => "node",
    }
}

/// Go's `strconv.ParseInt`/`ParseUint` with base 0 (prefixes, `_`).
fn go_int(s: &str) -> Option<i128> {
    let (neg, body) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let lower = body.to_ascii_lowercase();
    let (radix, digits, prefixed) = if let Some(d) = lower.strip_prefix("0x") {
        (16, d, true)
    } else if let Some(d) = lower.strip_prefix("0o") {
        (8, d, true)
    } else if let Some(d) = lower.strip_prefix("0b") {
        (2, d, true)
    } else if lower.len() > 1 && lower.starts_with('0') {
        (8, &lower[1..], true)
    } else {
        (10, lower.as_str(), false)
    };
    if !underscores_ok(digits, prefixed) {
        return None;
    }
    let clean: String = digits.chars().filter(|&c| c != '_').collect();
    if clean.is_empty() {
        return None;
    }
    let v = u64::from_str_radix(&clean, radix).ok()?;
    let v = i128::from(v);
    if neg {
        (v <= 1 << 63).then_some(-v)
    } else {
        Some(v)
    }
}

/// Go's rule for `_` in number literals: only between digits (or after
/// a base prefix).
fn underscores_ok(digits: &str, prefixed: bool) -> bool {
    if !digits.contains('_') {
        return true;
    }
    let b = digits.as_bytes();
    if b.last() == Some(&b'_') || (!prefixed && b.first() == Some(&b'_')) {
        return false;
    }
    !digits.contains("__")
}

/// Go's `strconv.ParseFloat(s, 64)` (decimal and hexadecimal forms,
/// `inf`/`nan`, `_` between digits); out of range is an error.
fn go_float(s: &str) -> Option<f64> {
    let body = s.trim_start_matches(['+', '-']);
    let lower = body.to_ascii_lowercase();
    if matches!(lower.as_str(), "inf" | "infinity" | "nan") {
        return Some(0.0);
    }
    if let Some(hex) = lower.strip_prefix("0x") {
        let (mantissa, exp) = hex.split_once('p')?;
        let exp: i32 = exp.replace('_', "").parse().ok()?;
        let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        let int = int.replace('_', "");
        let frac = frac.replace('_', "");
        if int.is_empty() && frac.is_empty() {
            return None;
        }
        let mut v = 0f64;
        for c in int.chars().chain(frac.chars()) {
            v = v * 16.0 + f64::from(c.to_digit(16)?);
        }
        let v = v * 2f64.powi(exp - 4 * frac.len() as i32);
        return v.is_finite().then_some(v);
    }
    if s.contains('_') {
        // Go allows `_` in decimal floats only with a base prefix.
        return None;
    }
    let f: f64 = s.parse().ok()?;
    if !f.is_finite() {
        return None;
    }
    // Rust also reads forms Go does not ("1." and ".5" Go reads too).
    Some(f)
}

/// Go's `strconv.UnquoteChar`: one character (or escape) of a literal
/// quoted by `quote`, and the rest.
fn unquote_char(s: &str, quote: char) -> Result<(char, &str), ()> {
    let mut chars = s.chars();
    let c = chars.next().ok_or(())?;
    if c == quote && (quote == '\'' || quote == '"') {
        return Err(());
    }
    if c != '\\' {
        return Ok((c, chars.as_str()));
    }
    let e = chars.next().ok_or(())?;
    let simple = match e {
        'a' => Some('\u{7}'),
        'b' => Some('\u{8}'),
        'f' => Some('\u{c}'),
        'n' => Some('\n'),
        'r' => Some('\r'),
        't' => Some('\t'),
        'v' => Some('\u{b}'),
        '\\' => Some('\\'),
        '\'' | '"' if e == quote => Some(e),
        _ => None,
    };
    if let Some(v) = simple {
        return Ok((v, chars.as_str()));
    }
    let rest = chars.as_str();
    let hex = |n: usize| -> Result<(char, &str), ()> {
        let digits = rest.get(..n).ok_or(())?;
        let v = u32::from_str_radix(digits, 16).map_err(|_| ())?;
        if !digits.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(());
        }
        Ok((char::from_u32(v).ok_or(())?, &rest[n..]))
    };
    match e {
        'x' => {
            let (c, r) = hex(2)?;
            Ok((c, r))
        }
        'u' => hex(4),
        'U' => hex(8),
        '0'..='7' => {
            let digits = s.get(1..4).ok_or(())?;
            if !digits.chars().all(|c| ('0'..='7').contains(&c)) {
                return Err(());
            }
            let v = u32::from_str_radix(digits, 8).map_err(|_| ())?;
            if v > 255 {
                return Err(());
            }
            Ok((char::from_u32(v).ok_or(())?, &s[4..]))
        }
        _ => Err(()),
    }
}

/// Go's `strconv.Unquote` for `"..."` and `` `...` `` strings.
fn go_unquote(text: &str) -> Option<String> {
    if let Some(raw) = text.strip_prefix('`').and_then(|t| t.strip_suffix('`')) {
        if raw.contains('`') {
            return None;
        }
        return Some(raw.replace('\r', ""));
    }
    let mut s = text.strip_prefix('"')?.strip_suffix('"')?;
    if s.contains('\n') {
        return None;
    }
    let mut out = String::new();
    while !s.is_empty() {
        let (c, rest) = unquote_char(s, '"').ok()?;
        out.push(c);
        s = rest;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        check("__alert_A", text).expect_err(text)
    }

    #[test]
    fn prometheus_templates_parse() {
        for ok in [
            "",
            "plain text",
            "{{ $labels.job }} is down",
            "value {{ $value }}",
            "{{ humanize $value }}",
            "{{ if gt $value 1.0 }}big{{ else if lt $value 0.5 }}small{{ else }}mid{{ end }}",
            "{{ range $k, $v := $labels }}{{ $k }}={{ $v }} {{ end }}",
            "{{- /* a comment */ -}}",
            "{{ with $labels.x }}{{ . }}{{ end }}",
            "{{ printf \"%.2f\" $value }}",
            "{{ $x := 1 }}{{ $x }}",
            "{{ range .Items }}{{ break }}{{ end }}",
            "{{ `raw` }}",
            "{{ 'a' }} {{ 0x1F }} {{ 1e3 }} {{ -2 }}",
            "{{ (query \"up\") | first | value }}",
            "{{ $externalURL }}{{ $externalLabels.env }}",
            "{{define \"x\"}}y{{end}}{{template \"x\"}}",
        ] {
            assert_eq!(check("__alert_A", ok), Ok(()), "{ok}");
        }
    }

    #[test]
    fn errors_as_go_words_them() {
        for (text, want) in [
            (
                "{{ .Foo }",
                "template: __alert_A:1: unexpected \"}\" in operand",
            ),
            (
                "{{ bogus }}",
                "template: __alert_A:1: function \"bogus\" not defined",
            ),
            (
                "{{ hu{manize $value }}",
                "template: __alert_A:1: bad character U+007B '{'",
            ),
            (
                "{{ $nope }}",
                "template: __alert_A:1: undefined variable \"$nope\"",
            ),
            ("{{ if true }}x", "template: __alert_A:1: unexpected EOF"),
            ("{{ end }}", "template: __alert_A:1: unexpected {{end}}"),
            ("{{ else }}", "template: __alert_A:1: unexpected {{else}}"),
            ("{{", "template: __alert_A:1: unclosed action"),
            (
                "{{ \"abc }}",
                "template: __alert_A:1: unterminated quoted string",
            ),
            (
                "{{ break }}",
                "template: __alert_A:1: {{break}} outside {{range}}",
            ),
            (
                "{{ 1 | 2 }}",
                "template: __alert_A:1: non executable command in pipeline stage 2",
            ),
            ("{{ }}", "template: __alert_A:1: missing value for command"),
            ("{{ (1 }}", "template: __alert_A:1: unclosed left paren"),
            ("{{ 1) }}", "template: __alert_A:1: unexpected right paren"),
            (
                "{{ 3x }}",
                "template: __alert_A:1: bad number syntax: \"3x\"",
            ),
            (
                "{{ \"a\".b }}",
                "template: __alert_A:1: unexpected . after term \"\\\"a\\\"\"",
            ),
            ("{{ \"\\q\" }}", "template: __alert_A:1: invalid syntax"),
            (
                "{{ 'ab' }}",
                "template: __alert_A:1: malformed character constant: 'ab'",
            ),
            (
                "a\n{{ if x }}",
                "template: __alert_A:2: function \"x\" not defined",
            ),
            (
                "{{ /* x */ }}",
                "template: __alert_A:1: unexpected \"/\" in command",
            ),
            (
                "{{/* x */ }}",
                "template: __alert_A:1: comment ends before closing delimiter",
            ),
            (
                "{{ $a, $b := 1 }}",
                "template: __alert_A:1: too many declarations in command",
            ),
        ] {
            assert_eq!(err(text), want, "{text}");
        }
    }
}
