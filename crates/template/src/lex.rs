//! The lexer: Go `text/template/parse`'s tokens (text, delimiters, trim
//! markers, comments, and the words of an action), each with its byte
//! offset and line.

use ferrite_model::goquote::quote as go_quote;

/// A token's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
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
    pub(crate) fn is_keyword(self) -> bool {
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
pub(crate) struct Token {
    pub(crate) kind: Kind,
    pub(crate) text: String,
    pub(crate) line: usize,
    /// Byte offset of the token in the input.
    pub(crate) pos: usize,
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

pub(crate) fn lex(input: &str) -> Vec<Token> {
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
        let pos = self.start;
        self.tokens.push(Token {
            kind,
            text,
            line,
            pos,
        });
        self.start = self.pos;
    }

    /// Ends the scan with an error token (at the current item's start).
    fn error(&mut self, message: String) -> bool {
        let line = self.line_at(self.start);
        self.tokens.push(Token {
            kind: Kind::Error,
            text: message,
            line,
            pos: self.start,
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
            '.' if self.peek().is_some_and(|d| !d.is_ascii_digit()) => {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(input: &str) -> Vec<(Kind, String, usize)> {
        lex(input)
            .into_iter()
            .map(|t| (t.kind, t.text, t.pos))
            .collect()
    }

    #[test]
    fn tokens_and_positions() {
        let toks = kinds("a {{- .X | f 1 -}} b");
        assert_eq!(toks[0], (Kind::Text, "a".into(), 0));
        assert_eq!(toks[1], (Kind::LeftDelim, "{{".into(), 2));
        assert_eq!(toks[2], (Kind::Field, ".X".into(), 6));
        assert!(toks.iter().any(|t| t.0 == Kind::Pipe));
        assert_eq!(toks[toks.len() - 2], (Kind::Text, "b".into(), 19));
        assert_eq!(toks[toks.len() - 1].0, Kind::Eof);
    }

    #[test]
    fn a_point_at_the_end_is_a_number() {
        // Go only reads `.` as a field when a non-digit follows it.
        let toks = kinds("{{ .");
        assert_eq!(toks[toks.len() - 2].0, Kind::Number);
    }

    #[test]
    fn errors_end_the_scan() {
        let toks = kinds("{{ \"abc }}");
        let last = toks.last().expect("a token");
        assert_eq!(
            (last.0, last.1.as_str()),
            (Kind::Error, "unterminated quoted string")
        );
    }
}
