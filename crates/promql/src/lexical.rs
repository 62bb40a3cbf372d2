//! Lexical helpers over PromQL query text (bytes): identifiers, white
//! space and comments, string literals. They never fail: malformed text is
//! the parser's to report; these only find where things are.

pub(crate) fn is_ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_' || c == b':'
}

fn is_ident_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b':'
}

pub(crate) fn skip_ident(b: &[u8], mut p: usize) -> usize {
    while b.get(p).is_some_and(|c| is_ident_char(*c)) {
        p += 1;
    }
    p
}

/// Skips whitespace and `#` comments.
pub(crate) fn skip_ws(b: &[u8], mut p: usize) -> usize {
    loop {
        match b.get(p) {
            Some(c) if c.is_ascii_whitespace() => p += 1,
            Some(b'#') => {
                while b.get(p).is_some_and(|c| *c != b'\n') {
                    p += 1;
                }
            }
            _ => return p,
        }
    }
}

/// The position after the string literal opening at `p`.
pub(crate) fn skip_string(b: &[u8], p: usize) -> usize {
    let q = b[p];
    let mut i = p + 1;
    while i < b.len() {
        if b[i] == b'\\' && q != b'`' {
            i += 2;
            continue;
        }
        if b[i] == q {
            return i + 1;
        }
        i += 1;
    }
    b.len()
}
