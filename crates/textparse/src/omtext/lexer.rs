//! The tokens of OpenMetrics text, cut where Prometheus' lexer cuts them.
//!
//! Prometheus reads OpenMetrics with a generated state machine. What a
//! scrape accepts depends on its details, so this lexer reproduces them,
//! from the grammar the machine is generated from and its observed
//! results:
//!
//! - the line state decides which tokens exist: a value or timestamp is a
//!   space and then any bytes but space, newline and NUL; ` # {` after a
//!   value or timestamp opens an exemplar; `# EOF` may be followed by one
//!   newline;
//! - a token ends at the first byte that cannot continue it, and a byte
//!   that cannot start or continue any token leaves the cursor on it (no
//!   backtracking: ` # x` after a value is not a timestamp `#`);
//! - NUL bytes are stepped over whenever the lexer moves inside a label
//!   value, a metadata text or a `# ` line's keyword, also right after
//!   their last byte (so NULs after a label value's closing quote or after
//!   a metadata line's newline belong to that token);
//! - at the end of the input the start of the last token is not moved
//!   (Prometheus' messages quote from it).

/// What a token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Token {
    Invalid,
    Eof,
    Linebreak,
    Help,
    Type,
    Unit,
    EofWord,
    Text,
    /// ` # {`: an exemplar follows.
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
            Token::Help => "HELP",
            Token::Type => "TYPE",
            Token::Unit => "UNIT",
            Token::EofWord => "EOFWORD",
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
    /// After `# `: `HELP `, `TYPE `, `UNIT ` or `EOF`.
    Comment,
    /// After a metadata keyword: the metric name.
    Meta1,
    /// After the metadata's name: a space and text to the newline.
    Meta2,
    /// Inside a series' `{}`.
    Labels,
    /// After `=` in a series' braces.
    LabelValue,
    /// After the series' name or labels.
    Value,
    /// After the value.
    Timestamp,
    /// Inside an exemplar's `{}`.
    Exemplar,
    /// After `=` or `}` in an exemplar.
    ExemplarValue,
    /// After the exemplar's value.
    ExemplarTimestamp,
}

/// The lexer; see the module documentation.
pub(super) struct Lexer<'a> {
    pub(super) buf: &'a [u8],
    /// The next byte to read.
    pub(super) i: usize,
    /// The start of the last token (not moved at the end of the input).
    pub(super) start: usize,
    state: State,
}

fn is_metric_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_' || c == b':'
}

fn is_metric_char(c: u8) -> bool {
    is_metric_start(c) || c.is_ascii_digit()
}

fn is_label_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_'
}

fn is_label_char(c: u8) -> bool {
    is_label_start(c) || c.is_ascii_digit()
}

/// A byte of a value or timestamp after its leading space.
fn is_value_char(c: u8) -> bool {
    !matches!(c, 0 | b'\n' | b' ')
}

impl<'a> Lexer<'a> {
    pub(super) fn new(buf: &'a [u8]) -> Self {
        Lexer {
            buf,
            i: 0,
            start: 0,
            state: State::Init,
        }
    }

    /// The text of the last token.
    pub(super) fn token_text(&self) -> &'a [u8] {
        &self.buf[self.start..self.i]
    }

    /// Steps to the next byte and returns it; 0 at the end. Where NUL
    /// bytes are allowed (label values, metadata text, the keyword of a
    /// `# ` line) they are stepped over.
    fn next(&mut self) -> u8 {
        self.i += 1;
        let skip_nul = matches!(
            self.state,
            State::LabelValue | State::Meta2 | State::Comment
        );
        while let Some(&c) = self.buf.get(self.i) {
            if c != 0 || !skip_nul {
                return c;
            }
            self.i += 1;
        }
        0
    }

    /// Steps over bytes while `f` holds; returns the first byte after.
    fn next_while(&mut self, f: impl Fn(u8) -> bool) -> u8 {
        loop {
            let c = self.next();
            if !f(c) {
                return c;
            }
        }
    }

    /// Reads the next token.
    pub(super) fn next_token(&mut self) -> Token {
        let Some(&c) = self.buf.get(self.i) else {
            return Token::Eof;
        };
        self.start = self.i;
        match self.state {
            State::Init => self.line_start(c),
            State::Comment => self.keyword(c),
            State::Meta1 => self.metadata_name(c),
            State::Meta2 => self.metadata_text(c),
            State::Labels => self.in_braces(c),
            State::LabelValue => self.label_value(c),
            State::Value => self.value(c),
            State::Timestamp => self.timestamp(c),
            State::Exemplar => self.in_exemplar(c),
            State::ExemplarValue => self.exemplar_value(c),
            State::ExemplarTimestamp => self.exemplar_timestamp(c),
        }
    }

    fn line_start(&mut self, c: u8) -> Token {
        match c {
            b'#' => {
                if self.next() != b' ' {
                    return Token::Invalid;
                }
                // The byte after `# ` is read before the keyword state
                // starts (a NUL there is not stepped over).
                let c = self.next();
                self.state = State::Comment;
                self.keyword(c)
            }
            b'{' => {
                self.next();
                self.state = State::Labels;
                Token::BraceOpen
            }
            c if is_metric_start(c) => {
                self.next_while(is_metric_char);
                self.state = State::Value;
                Token::MetricName
            }
            _ => Token::Invalid,
        }
    }

    /// After `# `: `HELP `, `TYPE `, `UNIT ` or `EOF` and an optional
    /// newline.
    fn keyword(&mut self, c: u8) -> Token {
        let (rest, token): (&[u8], Token) = match c {
            b'H' => (b"ELP ", Token::Help),
            b'T' => (b"YPE ", Token::Type),
            b'U' => (b"NIT ", Token::Unit),
            b'E' => (b"OF", Token::EofWord),
            _ => return Token::Invalid,
        };
        for &want in rest {
            if self.next() != want {
                return Token::Invalid;
            }
        }
        let c = self.next();
        if token == Token::EofWord {
            if c == b'\n' {
                self.next();
            }
            self.state = State::Init;
        } else {
            self.state = State::Meta1;
        }
        token
    }

    fn metadata_name(&mut self, c: u8) -> Token {
        let ok = match c {
            b'"' => self.quoted(true),
            c if is_metric_start(c) => {
                self.next_while(is_metric_char);
                true
            }
            _ => false,
        };
        if !ok {
            return Token::Invalid;
        }
        self.state = State::Meta2;
        Token::MetricName
    }

    /// A space, then anything up to and with the newline.
    fn metadata_text(&mut self, c: u8) -> Token {
        if c != b' ' {
            return Token::Invalid;
        }
        match self.next_while(|c| c != 0 && c != b'\n') {
            b'\n' => {
                self.next();
                self.state = State::Init;
                Token::Text
            }
            _ => Token::Invalid,
        }
    }

    fn in_braces(&mut self, c: u8) -> Token {
        match c {
            b'"' => {
                if self.quoted(true) {
                    Token::QuotedString
                } else {
                    Token::Invalid
                }
            }
            b',' => {
                self.next();
                Token::Comma
            }
            b'=' => {
                self.next();
                self.state = State::LabelValue;
                Token::Equal
            }
            b'}' => {
                self.next();
                self.state = State::Value;
                Token::BraceClose
            }
            c if is_label_start(c) => {
                self.next_while(is_label_char);
                Token::LabelName
            }
            _ => Token::Invalid,
        }
    }

    fn label_value(&mut self, c: u8) -> Token {
        if c == b'"' && self.quoted(false) {
            self.state = State::Labels;
            return Token::LabelValue;
        }
        Token::Invalid
    }

    /// A space and a value token, from the space at the cursor.
    fn number(&mut self) -> bool {
        if !is_value_char(self.next()) {
            return false;
        }
        self.next_while(is_value_char);
        true
    }

    fn value(&mut self, c: u8) -> Token {
        match c {
            b' ' if self.number() => {
                self.state = State::Timestamp;
                Token::Value
            }
            b'{' => {
                self.next();
                self.state = State::Labels;
                Token::BraceOpen
            }
            _ => Token::Invalid,
        }
    }

    fn timestamp(&mut self, c: u8) -> Token {
        match c {
            b'\n' => {
                self.next();
                self.state = State::Init;
                Token::Linebreak
            }
            b' ' => match self.next() {
                b'#' => match self.next() {
                    b' ' => {
                        if self.next() != b'{' {
                            return Token::Invalid;
                        }
                        self.next();
                        self.state = State::Exemplar;
                        Token::Comment
                    }
                    c if is_value_char(c) => {
                        self.next_while(is_value_char);
                        Token::Timestamp
                    }
                    // ` #` alone is a timestamp.
                    _ => Token::Timestamp,
                },
                c if is_value_char(c) => {
                    self.next_while(is_value_char);
                    Token::Timestamp
                }
                _ => Token::Invalid,
            },
            _ => Token::Invalid,
        }
    }

    fn in_exemplar(&mut self, c: u8) -> Token {
        match c {
            b'"' => {
                if self.quoted(false) {
                    Token::QuotedString
                } else {
                    Token::Invalid
                }
            }
            b',' => {
                self.next();
                Token::Comma
            }
            b'=' => {
                self.next();
                self.state = State::ExemplarValue;
                Token::Equal
            }
            b'}' => {
                self.next();
                self.state = State::ExemplarValue;
                Token::BraceClose
            }
            c if is_label_start(c) => {
                self.next_while(is_label_char);
                Token::LabelName
            }
            _ => Token::Invalid,
        }
    }

    /// After an exemplar's `=` or `}`: a label value or the exemplar's
    /// value (either may come after either).
    fn exemplar_value(&mut self, c: u8) -> Token {
        match c {
            b' ' if self.number() => {
                self.state = State::ExemplarTimestamp;
                Token::Value
            }
            b'"' if self.quoted(false) => {
                self.state = State::Exemplar;
                Token::LabelValue
            }
            _ => Token::Invalid,
        }
    }

    fn exemplar_timestamp(&mut self, c: u8) -> Token {
        match c {
            b' ' if self.number() => Token::Timestamp,
            b'\n' => {
                self.next();
                self.state = State::Init;
                Token::Linebreak
            }
            _ => Token::Invalid,
        }
    }

    /// A quoted string from the `"` at the cursor: any bytes but NUL (and
    /// newline unless `newline`), `\` escaping any byte but NUL and
    /// newline. False if it does not end.
    fn quoted(&mut self, newline: bool) -> bool {
        loop {
            match self.next() {
                b'"' => {
                    self.next();
                    return true;
                }
                b'\\' => {
                    if matches!(self.next(), 0 | b'\n') {
                        return false;
                    }
                }
                0 => return false,
                b'\n' if !newline => return false,
                _ => {}
            }
        }
    }
}
