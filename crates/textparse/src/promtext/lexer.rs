//! The tokens of the Prometheus text format, cut where Prometheus' lexer
//! cuts them.
//!
//! Prometheus reads the format with a generated state machine whose quirks
//! decide what a scrape accepts: the state it is in decides which tokens
//! exist (a value is anything but `{`, space, tab, newline or NUL; a
//! timestamp is digits only), a quoted string may span lines, and NUL bytes
//! are stepped over inside label values, metadata text and comments. This
//! module reproduces those token boundaries from the format's grammar, so
//! that the parser above it accepts and rejects the same bytes and can
//! quote the same text in its errors.

/// What a token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Token {
    Invalid,
    Eof,
    Linebreak,
    Whitespace,
    Help,
    Type,
    Text,
    Comment,
    MetricName,
    QuotedString,
    BraceOpen,
    BraceClose,
    LabelName,
    LabelValue,
    Comma,
    Equal,
    Timestamp,
    Value,
}

impl Token {
    /// The name Prometheus' messages give the token.
    pub(super) fn name(self) -> &'static str {
        match self {
            Token::Invalid => "INVALID",
            Token::Eof => "EOF",
            Token::Linebreak => "LINEBREAK",
            Token::Whitespace => "WHITESPACE",
            Token::Help => "HELP",
            Token::Type => "TYPE",
            Token::Text => "TEXT",
            Token::Comment => "COMMENT",
            Token::MetricName => "MNAME",
            Token::QuotedString => "QSTRING",
            Token::BraceOpen => "BOPEN",
            Token::BraceClose => "BCLOSE",
            Token::LabelName => "LNAME",
            Token::LabelValue => "LVALUE",
            Token::Comma => "COMMA",
            Token::Equal => "EQUAL",
            Token::Timestamp => "TIMESTAMP",
            Token::Value => "VALUE",
        }
    }
}

/// Where in a line the lexer is: which tokens can come next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// The start of a line.
    Init,
    /// After `# ` and blanks: `HELP`, `TYPE`, or a comment.
    Comment,
    /// After `# HELP ` / `# TYPE `: the metric name.
    Meta1,
    /// After the metadata's metric name: the rest of the line.
    Meta2,
    /// Inside `{}`.
    Labels,
    /// After `=` in braces.
    LabelValue,
    /// After the series' name or labels.
    Value,
    /// After the value.
    Timestamp,
}

/// The lexer. A buffer that does not end with a newline is read as if it
/// had one more byte, a newline (as Prometheus appends one).
pub(super) struct Lexer<'a> {
    pub(super) buf: &'a [u8],
    /// The buffer's length with the virtual newline.
    len: usize,
    /// The next byte to read.
    pub(super) i: usize,
    /// The start of the last token.
    pub(super) start: usize,
    state: State,
}

/// Byte classes, as bits of [`CLASSES`] (a table lookup per byte is what
/// the scanning loops cost).
const BLANK: u8 = 1;
const METRIC_START: u8 = 2;
const METRIC_CHAR: u8 = 4;
const LABEL_START: u8 = 8;
const LABEL_CHAR: u8 = 16;
/// A byte of a value token: not NUL, newline, space, tab or `{`.
const VALUE_CHAR: u8 = 32;
/// A byte of a label value the one-pass path reads as it is: ASCII, not
/// `"`, `\\`, newline or NUL.
const PLAIN_LABEL_VALUE: u8 = 64;

static CLASSES: [u8; 256] = classes();

const fn classes() -> [u8; 256] {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        let c = i as u8;
        let alpha = c.is_ascii_alphabetic();
        let digit = c.is_ascii_digit();
        let mut bits = 0;
        if c == b' ' || c == b'\t' {
            bits |= BLANK;
        }
        if alpha || c == b'_' || c == b':' {
            bits |= METRIC_START | METRIC_CHAR;
        }
        if digit {
            bits |= METRIC_CHAR | LABEL_CHAR;
        }
        if alpha || c == b'_' {
            bits |= LABEL_START | LABEL_CHAR;
        }
        if !matches!(c, 0 | b'\n' | b' ' | b'\t' | b'{') {
            bits |= VALUE_CHAR;
        }
        if c < 0x80 && !matches!(c, 0 | b'\n' | b'"' | b'\\') {
            bits |= PLAIN_LABEL_VALUE;
        }
        t[i] = bits;
        i += 1;
    }
    t
}

#[inline(always)]
fn is(c: u8, class: u8) -> bool {
    CLASSES[c as usize] & class != 0
}

pub(super) fn is_blank(c: u8) -> bool {
    is(c, BLANK)
}

pub(super) fn is_metric_start(c: u8) -> bool {
    is(c, METRIC_START)
}

pub(super) fn is_metric_char(c: u8) -> bool {
    is(c, METRIC_CHAR)
}

pub(super) fn is_label_start(c: u8) -> bool {
    is(c, LABEL_START)
}

pub(super) fn is_label_char(c: u8) -> bool {
    is(c, LABEL_CHAR)
}

/// A byte of a value token.
pub(super) fn is_value_char(c: u8) -> bool {
    is(c, VALUE_CHAR)
}

/// A byte of a label value the one-pass path takes as it is.
pub(super) fn is_plain_label_value(c: u8) -> bool {
    is(c, PLAIN_LABEL_VALUE)
}

impl<'a> Lexer<'a> {
    pub(super) fn new(buf: &'a [u8]) -> Self {
        let len = if buf.last() == Some(&b'\n') {
            buf.len()
        } else {
            buf.len() + 1
        };
        Lexer {
            buf,
            len,
            i: 0,
            start: 0,
            state: State::Init,
        }
    }

    /// The text of the last token.
    pub(super) fn token_text(&self) -> &'a [u8] {
        self.text(self.start, self.i)
    }

    /// The buffer's bytes `from..to` (the virtual newline left out).
    pub(super) fn text(&self, from: usize, to: usize) -> &'a [u8] {
        let n = self.buf.len();
        &self.buf[from.min(n)..to.min(n)]
    }

    /// The bytes `from..to` as Prometheus' messages quote them: with the
    /// newline it appends, when the range reaches it.
    pub(super) fn quoted_text(&self, from: usize, to: usize) -> String {
        let to = to.min(self.len);
        let from = from.min(to);
        if to <= self.buf.len() {
            return ferrite_model::goquote::quote_bytes(&self.buf[from..to]);
        }
        let mut v = self.buf[from.min(self.buf.len())..].to_vec();
        v.push(b'\n');
        ferrite_model::goquote::quote_bytes(&v)
    }

    /// The length of the input with the newline Prometheus appends.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Whether the whole input has been read.
    pub(super) fn at_end(&self) -> bool {
        self.i >= self.len
    }

    /// The byte at `i`: 0 past the end.
    fn byte(&self, i: usize) -> u8 {
        match self.buf.get(i) {
            Some(&c) => c,
            None if i < self.len => b'\n',
            None => 0,
        }
    }

    /// The byte at the cursor (0 past the end).
    fn cur(&self) -> u8 {
        self.byte(self.i)
    }

    /// Steps to the next byte and returns it (0 past the end). Inside label
    /// values, metadata text and comments NUL bytes are stepped over.
    fn advance(&mut self) -> u8 {
        self.i += 1;
        if self.i >= self.len {
            self.i = self.len;
            return 0;
        }
        if matches!(
            self.state,
            State::LabelValue | State::Meta2 | State::Comment
        ) {
            while self.i < self.len && self.byte(self.i) == 0 {
                self.i += 1;
            }
        }
        self.cur()
    }

    /// Steps over bytes while `f` holds, from the byte after the cursor.
    fn advance_while(&mut self, f: impl Fn(u8) -> bool) -> u8 {
        loop {
            let c = self.advance();
            if !f(c) {
                return c;
            }
        }
    }

    /// Reads the next token.
    pub(super) fn next_token(&mut self) -> Token {
        if self.at_end() {
            return Token::Eof;
        }
        self.start = self.i;
        let c = self.cur();
        if self.state == State::Meta2 {
            return self.metadata_text(c);
        }
        if is_blank(c) {
            self.advance_while(is_blank);
            return Token::Whitespace;
        }
        match self.state {
            State::Init => self.line_start(c),
            State::Comment => self.comment_keyword(c),
            State::Meta1 => self.metadata_name(c),
            State::Meta2 => self.metadata_text(c),
            State::Labels => self.in_braces(c),
            State::LabelValue => self.label_value(c),
            State::Value => self.value(c),
            State::Timestamp => self.timestamp(c),
        }
    }

    fn line_start(&mut self, c: u8) -> Token {
        match c {
            0 => {
                self.advance();
                Token::Eof
            }
            b'\n' => {
                self.advance();
                Token::Linebreak
            }
            b'#' => {
                let next = self.advance();
                if is_blank(next) {
                    let after = self.advance_while(is_blank);
                    self.state = State::Comment;
                    self.comment_keyword(after)
                } else {
                    self.rest_of_comment()
                }
            }
            b'{' => {
                self.advance();
                self.state = State::Labels;
                Token::BraceOpen
            }
            c if is_metric_start(c) => {
                self.advance_while(is_metric_char);
                self.state = State::Value;
                Token::MetricName
            }
            _ => Token::Invalid,
        }
    }

    /// After `# `: `HELP` or `TYPE` and blanks, else a comment.
    fn comment_keyword(&mut self, c: u8) -> Token {
        let (word, token): (&[u8], Token) = match c {
            b'H' => (b"ELP", Token::Help),
            b'T' => (b"YPE", Token::Type),
            _ => return self.rest_of_comment(),
        };
        for &want in word {
            if self.advance() != want {
                return self.rest_of_comment();
            }
        }
        if !is_blank(self.advance()) {
            return self.rest_of_comment();
        }
        self.advance_while(is_blank);
        self.state = State::Meta1;
        token
    }

    /// A comment runs to the end of the line (NUL at its start ends the
    /// input, as in Prometheus).
    fn rest_of_comment(&mut self) -> Token {
        let mut c = self.cur();
        loop {
            match c {
                0 => return Token::Eof,
                b'\n' => {
                    self.state = State::Init;
                    return Token::Comment;
                }
                _ => c = self.advance(),
            }
        }
    }

    fn metadata_name(&mut self, c: u8) -> Token {
        if c == b'"' {
            if self.quoted() {
                self.state = State::Meta2;
                return Token::MetricName;
            }
            return Token::Invalid;
        }
        if is_metric_start(c) {
            self.advance_while(is_metric_char);
            self.state = State::Meta2;
            return Token::MetricName;
        }
        Token::Invalid
    }

    /// The rest of the line after the metadata's name, leading blanks
    /// included; possibly empty. Blanks with nothing after them are
    /// whitespace, and the (empty) text follows them.
    fn metadata_text(&mut self, c: u8) -> Token {
        let mut c = c;
        if is_blank(c) {
            c = self.advance_while(is_blank);
            if c == 0 || c == b'\n' {
                return Token::Whitespace;
            }
        }
        if c != 0 && c != b'\n' {
            // To the newline (the virtual one at the end, if need be):
            // what stepping byte by byte finds, as NUL bytes are stepped
            // over here.
            let rest = self.buf.get(self.i + 1..).unwrap_or(&[]);
            self.i += 1 + memchr::memchr(b'\n', rest).unwrap_or(rest.len());
        }
        self.state = State::Init;
        Token::Text
    }

    fn in_braces(&mut self, c: u8) -> Token {
        match c {
            b'"' => {
                if self.quoted() {
                    Token::QuotedString
                } else {
                    Token::Invalid
                }
            }
            b',' => {
                self.advance();
                Token::Comma
            }
            b'=' => {
                self.advance();
                self.state = State::LabelValue;
                Token::Equal
            }
            b'}' => {
                self.advance();
                self.state = State::Value;
                Token::BraceClose
            }
            c if is_label_start(c) => {
                self.advance_while(is_label_char);
                Token::LabelName
            }
            _ => Token::Invalid,
        }
    }

    fn label_value(&mut self, c: u8) -> Token {
        if c == b'"' && self.quoted() {
            self.state = State::Labels;
            return Token::LabelValue;
        }
        Token::Invalid
    }

    fn value(&mut self, c: u8) -> Token {
        if c == b'{' {
            self.advance();
            self.state = State::Labels;
            return Token::BraceOpen;
        }
        if is_value_char(c) {
            self.advance_while(is_value_char);
            self.state = State::Timestamp;
            return Token::Value;
        }
        Token::Invalid
    }

    fn timestamp(&mut self, c: u8) -> Token {
        if c == b'\n' {
            self.advance();
            self.state = State::Init;
            return Token::Linebreak;
        }
        if c.is_ascii_digit() {
            self.advance_while(|c| c.is_ascii_digit());
            return Token::Timestamp;
        }
        Token::Invalid
    }

    /// A quoted string from the `"` at the cursor: any bytes but NUL, with
    /// `\` escaping any byte but NUL and newline. False if it does not end.
    fn quoted(&mut self) -> bool {
        let mut c = self.advance();
        loop {
            match c {
                b'"' => {
                    self.advance();
                    return true;
                }
                b'\\' => {
                    let escaped = self.advance();
                    if escaped == 0 || escaped == b'\n' {
                        return false;
                    }
                    c = self.advance();
                }
                0 => return false,
                _ => c = self.advance(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_classes_are_the_grammar_s() {
        for c in 0..=255u8 {
            let metric_start = c.is_ascii_alphabetic() || c == b'_' || c == b':';
            let label_start = c.is_ascii_alphabetic() || c == b'_';
            assert_eq!(is_blank(c), c == b' ' || c == b'\t', "{c}");
            assert_eq!(is_metric_start(c), metric_start, "{c}");
            assert_eq!(is_metric_char(c), metric_start || c.is_ascii_digit(), "{c}");
            assert_eq!(is_label_start(c), label_start, "{c}");
            assert_eq!(is_label_char(c), label_start || c.is_ascii_digit(), "{c}");
            assert_eq!(
                is_value_char(c),
                !matches!(c, 0 | b'\n' | b' ' | b'\t' | b'{'),
                "{c}"
            );
            assert_eq!(
                is_plain_label_value(c),
                c.is_ascii() && !matches!(c, 0 | b'\n' | b'"' | b'\\'),
                "{c}"
            );
        }
    }
}
