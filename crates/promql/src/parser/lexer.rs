//! The PromQL lexer: query text to tokens, with byte positions.
//!
//! Like Prometheus' lexer it has three modes: statements, the inside of a
//! selector's braces (where keywords are plain label names) and the inside
//! of a range's brackets (durations, numbers, arithmetic and the duration
//! keywords `step`, `range`, `min_of`, `max_of`). The whole query is lexed
//! up front in one pass, so lexing is linear in the text.

use super::ast::AggregateOp;
use super::ParseError;

/// Keywords of PromQL (matched case-insensitively).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keyword {
    /// An aggregation operator (`sum`, `topk`, ...).
    Aggregate(AggregateOp),
    And,
    Or,
    Unless,
    Atan2,
    Offset,
    Smoothed,
    Anchored,
    By,
    Without,
    On,
    Ignoring,
    GroupLeft,
    GroupRight,
    Fill,
    FillLeft,
    FillRight,
    Bool,
    Start,
    End,
    Step,
    Range,
    MaxOf,
    MinOf,
}

const KEYWORDS: &[(&str, Keyword)] = &[
    ("and", Keyword::And),
    ("or", Keyword::Or),
    ("unless", Keyword::Unless),
    ("atan2", Keyword::Atan2),
    ("offset", Keyword::Offset),
    ("smoothed", Keyword::Smoothed),
    ("anchored", Keyword::Anchored),
    ("by", Keyword::By),
    ("without", Keyword::Without),
    ("on", Keyword::On),
    ("ignoring", Keyword::Ignoring),
    ("group_left", Keyword::GroupLeft),
    ("group_right", Keyword::GroupRight),
    ("fill", Keyword::Fill),
    ("fill_left", Keyword::FillLeft),
    ("fill_right", Keyword::FillRight),
    ("bool", Keyword::Bool),
    ("start", Keyword::Start),
    ("end", Keyword::End),
    ("step", Keyword::Step),
    ("range", Keyword::Range),
    ("max_of", Keyword::MaxOf),
    ("min_of", Keyword::MinOf),
];

impl Keyword {
    /// The keyword a word spells, ignoring case (ASCII words only: a
    /// Unicode letter that lowercases to ASCII stays a name).
    pub fn of(word: &str) -> Option<Keyword> {
        if !word.is_ascii() {
            return None;
        }
        if let Some(op) = AggregateOp::from_name(&word.to_ascii_lowercase()) {
            return Some(Keyword::Aggregate(op));
        }
        KEYWORDS
            .iter()
            .find(|(s, _)| s.eq_ignore_ascii_case(word))
            .map(|&(_, k)| k)
    }

    /// The keyword as PromQL spells it.
    pub fn text(self) -> &'static str {
        if let Keyword::Aggregate(op) = self {
            return op.name();
        }
        KEYWORDS
            .iter()
            .find(|&&(_, k)| k == self)
            .map_or("", |&(s, _)| s)
    }

    /// Whether the keyword names an aggregation operator.
    pub fn is_aggregator(self) -> bool {
        matches!(self, Keyword::Aggregate(_))
    }

    /// Whether the keyword can also be a metric name (Prometheus'
    /// `metric_identifier`).
    pub fn can_be_metric_name(self) -> bool {
        use Keyword::*;
        !matches!(self, Atan2 | On | Ignoring | GroupLeft | GroupRight | Bool)
    }
}

/// What a token is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tok {
    /// A name without colons.
    Identifier,
    /// A name with a colon (`job:rate5m`).
    MetricIdentifier,
    Keyword(Keyword),
    Number,
    Duration,
    /// A quoted string, quotes included.
    Str,
    LeftParen,
    RightParen,
    LeftBrace,
    RightBrace,
    LeftBracket,
    RightBracket,
    Comma,
    Colon,
    At,
    /// `=` (in braces).
    Eql,
    /// `=~`
    EqlRegex,
    /// `!~`
    NeqRegex,
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Pow,
    Eqlc,
    Neq,
    Lss,
    Lte,
    Gtr,
    Gte,
    TrimUpper,
    TrimLower,
    Eof,
}

/// A token and where it is in the text (byte offsets).
#[derive(Clone, Copy, Debug)]
pub struct Token {
    pub tok: Tok,
    pub start: usize,
    pub end: usize,
}

impl Token {
    /// The token's text.
    pub fn text<'q>(&self, query: &'q str) -> &'q str {
        &query[self.start..self.end]
    }

    /// How Prometheus names the token in "unexpected ..." errors.
    pub fn describe(&self, query: &str) -> String {
        let text = self.text(query);
        match self.tok {
            Tok::Eof => "end of input".into(),
            Tok::Identifier => format!("identifier {text:?}"),
            Tok::MetricIdentifier => format!("metric identifier {text:?}"),
            Tok::Number => format!("number {text:?}"),
            Tok::Duration => format!("duration {text:?}"),
            Tok::Str => format!("string {text:?}"),
            Tok::Keyword(k) if k.is_aggregator() => format!("<aggr:{}>", k.text()),
            Tok::Keyword(Keyword::And | Keyword::Or | Keyword::Unless | Keyword::Atan2) => {
                format!("<op:{}>", text.to_lowercase())
            }
            Tok::Keyword(k) => format!("<{}>", k.text()),
            Tok::Add
            | Tok::Sub
            | Tok::Mul
            | Tok::Div
            | Tok::Mod
            | Tok::Pow
            | Tok::Eqlc
            | Tok::Neq
            | Tok::Lss
            | Tok::Lte
            | Tok::Gtr
            | Tok::Gte
            | Tok::TrimUpper
            | Tok::TrimLower
            | Tok::Eql
            | Tok::EqlRegex
            | Tok::NeqRegex => format!("<op:{text}>"),
            _ => format!("{text:?}"),
        }
    }
}

/// Which part of a query the lexer is in.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Statements,
    Braces,
    Brackets,
}

/// Lexes a whole query. Comments (`# ...` to the end of the line) and
/// spaces are dropped; the list ends with an [`Tok::Eof`] token.
pub fn lex(query: &str) -> Result<Vec<Token>, ParseError> {
    let mut l = Lexer {
        src: query.as_bytes(),
        query,
        pos: 0,
        mode: Mode::Statements,
        paren_depth: 0,
        tokens: Vec::new(),
    };
    l.run()?;
    Ok(l.tokens)
}

struct Lexer<'q> {
    src: &'q [u8],
    query: &'q str,
    pos: usize,
    mode: Mode,
    paren_depth: i64,
    tokens: Vec<Token>,
}

fn is_alpha(b: u8) -> bool {
    b == b'_' || b.is_ascii_alphabetic()
}

fn is_alnum(b: u8) -> bool {
    is_alpha(b) || b.is_ascii_digit()
}

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

impl Lexer<'_> {
    fn peek(&self) -> Option<u8> {
        self.src.get(self.pos).copied()
    }

    fn peek_at(&self, off: usize) -> Option<u8> {
        self.src.get(self.pos + off).copied()
    }

    fn emit(&mut self, tok: Tok, start: usize) {
        self.tokens.push(Token {
            tok,
            start,
            end: self.pos,
        });
    }

    fn err<T>(&self, at: usize, msg: impl Into<String>) -> Result<T, ParseError> {
        Err(ParseError::new(self.query, at, msg))
    }

    /// The character at `at`, for error messages (Go's `%q` of a rune).
    fn char_at(&self, at: usize) -> String {
        let c = self.query[at..].chars().next().unwrap_or('\u{fffd}');
        go_quote_rune(c)
    }

    fn run(&mut self) -> Result<(), ParseError> {
        loop {
            self.skip_space_and_comments();
            let start = self.pos;
            let Some(b) = self.peek() else {
                return self.finish();
            };
            match self.mode {
                Mode::Statements => self.statement_token(b, start)?,
                Mode::Braces => self.brace_token(b, start)?,
                Mode::Brackets => self.bracket_token(b, start)?,
            }
        }
    }

    fn finish(&mut self) -> Result<(), ParseError> {
        let at = self.pos;
        match self.mode {
            Mode::Braces => return self.err(at, "unexpected end of input inside braces"),
            Mode::Brackets => {
                return self.err(at, "unexpected end of input in duration expression")
            }
            Mode::Statements => {}
        }
        if self.paren_depth != 0 {
            return self.err(at, "unclosed left parenthesis");
        }
        self.emit(Tok::Eof, at);
        Ok(())
    }

    fn skip_space_and_comments(&mut self) {
        while let Some(b) = self.peek() {
            if is_space(b) {
                self.pos += 1;
            } else if b == b'#' && self.mode != Mode::Brackets {
                while self.peek().is_some_and(|b| b != b'\n' && b != b'\r') {
                    self.pos += 1;
                }
            } else {
                break;
            }
        }
    }

    /// Operators shared by statements and brackets; `false` if `b` is none.
    fn arithmetic(&mut self, b: u8, start: usize) -> bool {
        let tok = match b {
            b'+' => Tok::Add,
            b'-' => Tok::Sub,
            b'*' => Tok::Mul,
            b'/' => Tok::Div,
            b'%' => Tok::Mod,
            b'^' => Tok::Pow,
            b',' => Tok::Comma,
            _ => return false,
        };
        self.pos += 1;
        self.emit(tok, start);
        true
    }

    fn paren(&mut self, b: u8, start: usize) -> Result<bool, ParseError> {
        match b {
            b'(' => self.paren_depth += 1,
            b')' => {
                self.paren_depth -= 1;
                if self.paren_depth < 0 {
                    return self.err(start, "unexpected right parenthesis ')'");
                }
            }
            _ => return Ok(false),
        }
        self.pos += 1;
        let tok = if b == b'(' {
            Tok::LeftParen
        } else {
            Tok::RightParen
        };
        self.emit(tok, start);
        Ok(true)
    }

    fn statement_token(&mut self, b: u8, start: usize) -> Result<(), ParseError> {
        if self.arithmetic(b, start) || self.paren(b, start)? || self.comparison(b, start)? {
            return Ok(());
        }
        match b {
            b'0'..=b'9' => self.number_or_duration(start),
            b'.' if self.peek_at(1).is_some_and(|c| c.is_ascii_digit()) => {
                self.number_or_duration(start)
            }
            b'"' | b'\'' | b'`' => self.string(b, start),
            b if is_alpha(b) || b == b':' => {
                self.word(start);
                Ok(())
            }
            b'{' => {
                self.pos += 1;
                self.emit(Tok::LeftBrace, start);
                self.mode = Mode::Braces;
                Ok(())
            }
            b'[' => {
                self.pos += 1;
                self.emit(Tok::LeftBracket, start);
                self.mode = Mode::Brackets;
                Ok(())
            }
            b']' => self.err(start, "unexpected right bracket ']'"),
            b'}' => self.err(start, "unexpected right brace '}'"),
            b'@' => {
                self.pos += 1;
                self.emit(Tok::At, start);
                Ok(())
            }
            _ => self.err(
                start,
                format!("unexpected character: {}", self.char_at(start)),
            ),
        }
    }

    /// `==`, `!=`, `<`, `<=`, `</`, `>`, `>=`, `>/`.
    fn comparison(&mut self, b: u8, start: usize) -> Result<bool, ParseError> {
        let next = self.peek_at(1);
        let (tok, len) = match (b, next) {
            (b'=', Some(b'=')) => (Tok::Eqlc, 2),
            (b'=', Some(b'~')) => {
                return self.err(start, "unexpected character after '=': '~'");
            }
            (b'=', _) => (Tok::Eql, 1),
            (b'!', Some(b'=')) => (Tok::Neq, 2),
            (b'!', _) => {
                let c = self.char_at_or_eof(start + 1);
                return self.err(start, format!("unexpected character after '!': {c}"));
            }
            (b'<', Some(b'=')) => (Tok::Lte, 2),
            (b'<', Some(b'/')) => (Tok::TrimUpper, 2),
            (b'<', _) => (Tok::Lss, 1),
            (b'>', Some(b'=')) => (Tok::Gte, 2),
            (b'>', Some(b'/')) => (Tok::TrimLower, 2),
            (b'>', _) => (Tok::Gtr, 1),
            _ => return Ok(false),
        };
        self.pos += len;
        self.emit(tok, start);
        Ok(true)
    }

    fn char_at_or_eof(&self, at: usize) -> String {
        if at >= self.src.len() {
            "EOF".into()
        } else {
            self.char_at(at)
        }
    }

    /// An identifier, metric identifier or keyword (statements mode).
    fn word(&mut self, start: usize) {
        while self.peek().is_some_and(|c| is_alnum(c) || c == b':') {
            self.pos += 1;
        }
        let word = &self.query[start..self.pos];
        let tok = match Keyword::of(word) {
            Some(k @ (Keyword::Fill | Keyword::FillLeft | Keyword::FillRight)) => {
                if self.followed_by_paren() {
                    Tok::Keyword(k)
                } else {
                    Tok::Identifier
                }
            }
            Some(k) => Tok::Keyword(k),
            None if word.eq_ignore_ascii_case("inf") || word.eq_ignore_ascii_case("nan") => {
                Tok::Number
            }
            None if word.contains(':') => Tok::MetricIdentifier,
            None => Tok::Identifier,
        };
        self.emit(tok, start);
    }

    fn followed_by_paren(&self) -> bool {
        self.src[self.pos..]
            .iter()
            .find(|&&c| !is_space(c))
            .is_some_and(|&c| c == b'(')
    }

    fn brace_token(&mut self, b: u8, start: usize) -> Result<(), ParseError> {
        match b {
            b if is_alpha(b) => {
                while self.peek().is_some_and(is_alnum) {
                    self.pos += 1;
                }
                self.emit(Tok::Identifier, start);
                Ok(())
            }
            b'"' | b'\'' | b'`' => self.string(b, start),
            b',' => {
                self.pos += 1;
                self.emit(Tok::Comma, start);
                Ok(())
            }
            b'=' | b'!' => self.matcher_op(b, start),
            b'{' => self.err(start, "unexpected left brace '{'"),
            b'}' => {
                self.pos += 1;
                self.emit(Tok::RightBrace, start);
                self.mode = Mode::Statements;
                Ok(())
            }
            _ => self.err(
                start,
                format!(
                    "unexpected character inside braces: {}",
                    self.char_at(start)
                ),
            ),
        }
    }

    fn matcher_op(&mut self, b: u8, start: usize) -> Result<(), ParseError> {
        let (tok, len) = match (b, self.peek_at(1)) {
            (b'=', Some(b'~')) => (Tok::EqlRegex, 2),
            (b'=', _) => (Tok::Eql, 1),
            (b'!', Some(b'~')) => (Tok::NeqRegex, 2),
            (b'!', Some(b'=')) => (Tok::Neq, 2),
            _ => {
                let c = self.char_at_or_eof(start + 1);
                return self.err(
                    start,
                    format!("unexpected character after '!' inside braces: {c}"),
                );
            }
        };
        self.pos += len;
        self.emit(tok, start);
        Ok(())
    }

    fn bracket_token(&mut self, b: u8, start: usize) -> Result<(), ParseError> {
        if self.arithmetic(b, start) || self.paren(b, start)? {
            return Ok(());
        }
        match b {
            b']' => {
                self.pos += 1;
                self.emit(Tok::RightBracket, start);
                self.mode = Mode::Statements;
                Ok(())
            }
            b':' => {
                self.pos += 1;
                self.emit(Tok::Colon, start);
                Ok(())
            }
            b'0'..=b'9' => self.number_or_duration(start),
            b'.' if self.peek_at(1).is_some_and(|c| c.is_ascii_digit()) => {
                self.number_or_duration(start)
            }
            b if is_alpha(b) => self.duration_keyword(start),
            b'[' => self.err(start, "unexpected left bracket '['"),
            _ => self.err(
                start,
                format!(
                    "unexpected character in duration expression: {}",
                    self.char_at(start)
                ),
            ),
        }
    }

    fn duration_keyword(&mut self, start: usize) -> Result<(), ParseError> {
        while self.peek().is_some_and(is_alnum) {
            self.pos += 1;
        }
        match Keyword::of(&self.query[start..self.pos]) {
            Some(k @ (Keyword::Step | Keyword::Range | Keyword::MinOf | Keyword::MaxOf)) => {
                self.emit(Tok::Keyword(k), start);
                Ok(())
            }
            _ => self.err(
                start,
                format!(
                    "unexpected character: {}, expected ':'",
                    self.char_at(start)
                ),
            ),
        }
    }

    fn number_or_duration(&mut self, start: usize) -> Result<(), ParseError> {
        let number_ok = self.scan_number();
        if number_ok {
            self.emit(Tok::Number, start);
            return Ok(());
        }
        if self.scan_duration_rest() {
            self.emit(Tok::Duration, start);
            return Ok(());
        }
        self.err(
            start,
            format!(
                "bad number or duration syntax: {:?}",
                &self.query[start..self.pos.min(self.src.len())]
            ),
        )
    }

    fn accept(&mut self, set: &[u8]) -> bool {
        match self.peek() {
            Some(c) if set.contains(&c) => {
                self.pos += 1;
                true
            }
            _ => false,
        }
    }

    /// Scans a number (decimal, hex, with `_`, `.` and an exponent); true
    /// if it is one and is not followed by a letter or digit.
    fn scan_number(&mut self) -> bool {
        let start = self.pos;
        let mut digits: &[u8] = b"0123456789";
        if self.peek() == Some(b'0') && matches!(self.peek_at(1), Some(b'x' | b'X')) {
            self.pos += 2;
            self.accept(b"_");
            digits = b"0123456789abcdefABCDEF";
        }
        let hex = digits.len() > 10;
        self.accept(b".");
        self.accept(digits);
        let (mut dot, mut exp) = (false, false);
        while let Some(c) = self.peek() {
            if digits.contains(&c) {
                self.pos += 1;
            } else if c == b'.' {
                if dot || hex {
                    self.pos += 1;
                    return false;
                }
                dot = true;
                self.pos += 1;
                if self.accept(b"_.") {
                    return false;
                }
            } else if c == b'e' || c == b'E' {
                if exp {
                    self.pos += 1;
                    return false;
                }
                exp = true;
                self.pos += 1;
                self.accept(b"+-");
                if self.accept(b"._eE") || self.peek().is_none() {
                    return false;
                }
            } else if c == b'_' {
                self.pos += 1;
                if self.accept(b"._eE") || self.peek().is_none() {
                    return false;
                }
            } else {
                break;
            }
        }
        self.pos > start && !self.peek().is_some_and(is_alnum)
    }

    /// After a number that runs into a letter: the rest of a duration
    /// (`5m`, `1h30m`, `100ms`).
    fn scan_duration_rest(&mut self) -> bool {
        if !self.accept(b"smhdwy") {
            return false;
        }
        self.accept(b"s");
        while self.accept(b"0123456789") {
            while self.accept(b"0123456789") {}
            if !self.accept(b"smhdw") {
                return false;
            }
            self.accept(b"s");
        }
        !self.peek().is_some_and(is_alnum)
    }

    fn string(&mut self, quote: u8, start: usize) -> Result<(), ParseError> {
        self.pos += 1;
        loop {
            match self.peek() {
                None => {
                    let what = if quote == b'`' {
                        "unterminated raw string"
                    } else {
                        "unterminated quoted string"
                    };
                    return self.err(start, what);
                }
                Some(b'\n') if quote != b'`' => {
                    return self.err(start, "unterminated quoted string");
                }
                Some(b'\\') if quote != b'`' => self.pos += 2,
                Some(c) if c == quote => {
                    self.pos += 1;
                    break;
                }
                Some(_) => self.pos += 1,
            }
        }
        self.pos = self.pos.min(self.src.len());
        self.emit(Tok::Str, start);
        Ok(())
    }
}

/// A rune quoted as Go's `%q` does (`'a'`, `'\n'`).
pub fn go_quote_rune(c: char) -> String {
    match c {
        '\'' => "'\\''".into(),
        '\\' => "'\\\\'".into(),
        '\n' => "'\\n'".into(),
        '\t' => "'\\t'".into(),
        '\r' => "'\\r'".into(),
        c if c.is_control() => format!("'\\x{:02x}'", c as u32),
        c => format!("'{c}'"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(q: &str) -> Vec<Tok> {
        lex(q).expect("lexes").into_iter().map(|t| t.tok).collect()
    }

    #[test]
    fn tokens_of_each_mode() {
        use Tok::*;
        assert_eq!(
            kinds(r#"sum by (a) (rate(x{a=~"b"}[5m:1m])) </ 2"#),
            [
                Keyword(super::Keyword::Aggregate(AggregateOp::Sum)),
                Keyword(super::Keyword::By),
                LeftParen,
                Identifier,
                RightParen,
                LeftParen,
                Identifier,
                LeftParen,
                Identifier,
                LeftBrace,
                Identifier,
                EqlRegex,
                Str,
                RightBrace,
                LeftBracket,
                Duration,
                Colon,
                Duration,
                RightBracket,
                RightParen,
                RightParen,
                TrimUpper,
                Number,
                Eof
            ]
        );
        assert_eq!(kinds("{by='x'}")[1], Identifier);
        assert_eq!(kinds("a:b # c")[..2], [MetricIdentifier, Eof]);
        assert_eq!(kinds("Inf")[0], Number);
    }

    #[test]
    fn errors() {
        for q in ["(a", "a)", "a{", "a[5m", "1x", "a{b!c}", "\"abc", "$"] {
            assert!(lex(q).is_err(), "{q}");
        }
    }
}
